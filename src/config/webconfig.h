/*
 * webconfig.h - the web configuration file (--web.config.file): Prometheus' exporter-toolkit format
 * (as Prometheus 2.42 reads it) plus profstore's bearer tokens. Errors name file:line:column.
 *
 *   tls_server_config:  cert_file, key_file, client_auth_type, client_ca_file, min_version,
 *                       max_version, cipher_suites, curve_preferences, prefer_server_cipher_suites
 *   http_server_config: http2 (default true), headers (the five exporter-toolkit allows)
 *   basic_auth_users:   user: bcrypt hash ($2a$/$2b$/$2y$, cost 4..31)
 *   bearer_tokens:      (profstore) - sha256: <64 hex digits of SHA-256(token)>
 *                                     scopes: [read, write, admin]      name: <optional note>
 */
#ifndef PS_CONFIG_WEBCONFIG_H
#define PS_CONFIG_WEBCONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** What a credential may do; a route needs one of them (web/internal.h's PS_ROUTE_* bits). */
enum { PS_SCOPE_READ = 1u << 0, PS_SCOPE_WRITE = 1u << 1, PS_SCOPE_ADMIN = 1u << 2,
       PS_SCOPE_ALL = PS_SCOPE_READ | PS_SCOPE_WRITE | PS_SCOPE_ADMIN };

typedef enum {
    PS_CLIENT_AUTH_NONE,              /* NoClientCert (default) */
    PS_CLIENT_AUTH_REQUEST,           /* RequestClientCert: asked for, not verified */
    PS_CLIENT_AUTH_REQUIRE_ANY,       /* RequireAnyClientCert (also RequireClientCert) */
    PS_CLIENT_AUTH_VERIFY_IF_GIVEN,   /* VerifyClientCertIfGiven */
    PS_CLIENT_AUTH_REQUIRE_AND_VERIFY /* RequireAndVerifyClientCert */
} ps_client_auth_t;

/** Where a value stood in the file (1-based), for messages about it found later (a cert file
 *  that does not load). */
typedef struct ps_webconfig_pos {
    uint32_t line, col;
} ps_webconfig_pos_t;

typedef struct ps_webconfig_tls {
    bool enabled;                     /* any of cert_file, key_file, client_ca_file, client_auth_type */
    const char *cert_file, *key_file, *client_ca_file; /* joined to the file's directory */
    ps_webconfig_pos_t cert_at, key_at, ca_at;
    ps_client_auth_t client_auth;
    int min_version, max_version;     /* TLS1_VERSION .. TLS1_3_VERSION (0x301 .. 0x304); default 1.2 .. 1.3 */
    const char *ciphers;              /* OpenSSL cipher list of the TLS <= 1.2 suites given, or NULL */
    const char *curves;               /* OpenSSL groups list ("P-256:X25519"), or NULL */
    bool prefer_server_ciphers;       /* default true */
} ps_webconfig_tls_t;

typedef struct ps_webconfig_user {
    const char *name, *hash;          /* hash: a bcrypt hash, checked for shape */
} ps_webconfig_user_t;

typedef struct ps_webconfig_token {
    uint8_t sha256[32];
    unsigned scopes;                  /* PS_SCOPE_* */
    const char *name;                 /* "" when not given */
} ps_webconfig_token_t;

typedef struct ps_webconfig_header {
    const char *name, *value; /* name in lower case */
} ps_webconfig_header_t;

typedef struct ps_webconfig {
    ps_arena_t arena;                 /* everything below lives in it */
    const char *path;
    ps_webconfig_tls_t tls;
    bool http2;                       /* default true (ALPN offers h2) */
    uint32_t nheaders, nusers, ntokens;
    ps_webconfig_header_t *headers;
    ps_webconfig_user_t *users;
    ps_webconfig_token_t *tokens;
} ps_webconfig_t;

/** Parses a web configuration (name: for messages; dir: relative file names are joined to it, NULL
 *  keeps them). 0 with *out (ps_webconfig_free it), or PS_EINVAL "NAME:LINE:COL: PATH: WHAT". */
int ps_webconfig_parse(const char *yaml, size_t n, const char *name, const char *dir, ps_webconfig_t **out,
                       ps_err_t *err);
/** Reads and parses the file at path (relative names resolve against its directory). */
int ps_webconfig_load(const char *path, ps_webconfig_t **out, ps_err_t *err);

/** The TLS server context of wc's tls_server_config (wc->tls.enabled): certificate and key,
 *  versions, ciphers, curves, client certificates as client_auth_type says; session_id names the
 *  listener's session cache. The caller adds its ALPN and frees it (SSL_CTX_free). NULL and err
 *  ("FILE:LINE:COL: tls_server_config.cert_file: cannot load ...") if a setting does not load. */
struct ssl_ctx_st *ps_webconfig_ssl_ctx(const ps_webconfig_t *wc, const char *session_id, ps_err_t *err);
/** OpenSSL's error queue as text (its last entry) into buf, the queue cleared; buf. */
const char *ps_ssl_reason(char *buf, size_t size);
void ps_webconfig_free(ps_webconfig_t *c);
/** Whether requests need credentials: any basic_auth_users or bearer_tokens. */
static inline bool ps_webconfig_has_auth(const ps_webconfig_t *c)
{
    return c != NULL && (c->nusers > 0 || c->ntokens > 0);
}

#endif
