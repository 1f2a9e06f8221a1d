/*
 * webconfig.c - the web configuration file (see webconfig.h).
 *
 * The format is Prometheus' exporter-toolkit web config as Prometheus 2.42 reads it (yaml.v2's
 * UnmarshalStrict: unknown and duplicate keys are errors), checked as exporter-toolkit checks it:
 *  - tls_server_config is on when any of cert_file, key_file, client_ca_file, client_auth_type is
 *    set; then cert_file and key_file are both required ("missing key_file"); a client_ca_file
 *    needs a client_auth_type other than NoClientCert; min_version/max_version are TLS10..TLS13
 *    (default TLS12 .. TLS13); cipher_suites are Go's names of the secure suites
 *    (tls.CipherSuites(), e.g. TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256) and, as in Go, apply to
 *    TLS 1.2 and below only (the TLS 1.3 names are accepted and change nothing); curve_preferences
 *    CurveP256, CurveP384, CurveP521, X25519.
 *    Stricter than exporter-toolkit: VerifyClientCertIfGiven and RequireAndVerifyClientCert
 *    need a client_ca_file (there is nothing to verify against otherwise).
 *  - http_server_config.headers: only Strict-Transport-Security, X-Content-Type-Options
 *    (nosniff), X-Frame-Options (deny, sameorigin), X-XSS-Protection, Content-Security-Policy;
 *    values without CR, LF or NUL.
 *  - basic_auth_users: user name -> bcrypt hash, checked for shape as Go's bcrypt.Cost does
 *    ($2a$, $2b$ or $2y$, a two-digit cost 04..31, 53 characters of bcrypt's base64: 60 in all).
 *  - bearer_tokens (profstore's extension, which promtool check web-config refuses as an
 *    unknown field): a list of {sha256: 64 hex digits, scopes: non-empty list of read, write,
 *    admin, name: optional}; the same digest twice is an error.
 * Errors: PS_EINVAL "FILE:LINE:COL: PATH: WHAT", the position of the offending node (of the key
 * for unknown and duplicate keys), as config.c (the shared pieces in yamlutil.c).
 */
#include "webconfig.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "config_int.h"
#include "core/encode.h"

#define WEBCONFIG_MAX_BYTES (1u << 20)

typedef ps_yaml_walk_t ctx_t;
#define push ps_yaml_push_key
#define push_idx ps_yaml_push_idx
#define pop ps_yaml_pop
#define fail ps_yaml_fail
#define node ps_yaml_node
#define sval ps_yaml_sval
#define slen ps_yaml_slen
#define is_null ps_yaml_is_null
#define kind ps_yaml_kind

static ps_webconfig_pos_t pos(const yaml_node_t *n)
{
    return (ps_webconfig_pos_t){(uint32_t)n->start_mark.line + 1, (uint32_t)n->start_mark.column + 1};
}

/* A string scalar without NUL; copied into the arena. */
static int get_str(ctx_t *c, const yaml_node_t *n, const char **out)
{
    if (n->type == YAML_SCALAR_NODE && is_null(n)) /* yaml.v2: null leaves a string field empty */
        return *out = "", 0;
    return ps_yaml_get_str(c, n, out);
}

static int get_file(ctx_t *c, const yaml_node_t *n, const char **out)
{
    const char *s;
    int rc = get_str(c, n, &s);
    if (rc != 0)
        return rc;
    *out = s[0] != '\0' ? ps_yaml_join_dir(c->a, c->dir, s) : s;
    return 0;
}

static int get_bool(ctx_t *c, const yaml_node_t *n, bool *out)
{
    if (ps_yaml_bool(n, out))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "expected true or false, got %s", kind(n));
    return fail(c, n, "expected true or false, got \"%.64s\"", sval(n));
}

/* Walks the pairs of mapping n: each key a string, not seen before; names (NULL-terminated, or
 * NULL for any key) the accepted ones. fn is called for each pair. */
typedef int (*pair_fn)(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg);
static int each_pair(ctx_t *c, const yaml_node_t *n, const char *what, const char *const *names, pair_fn fn,
                     void *arg)
{
    if (is_null(n))
        return 0;
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, "expected %s (a mapping), got %s", what, kind(n));
    for (const yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node(c, pr->key), *v = node(c, pr->value);
        if (k == NULL || v == NULL)
            return fail(c, n, "broken mapping");
        if (k->type != YAML_SCALAR_NODE || is_null(k))
            return fail(c, k, "keys of %s must be strings, got %s", what, kind(k));
        if (memchr(sval(k), '\0', slen(k)) != NULL)
            return fail(c, k, "a key contains a NUL character");
        for (const yaml_node_pair_t *q = n->data.mapping.pairs.start; q < pr; q++) {
            yaml_node_t *qk = node(c, q->key);
            if (qk->type == YAML_SCALAR_NODE && slen(qk) == slen(k) && memcmp(sval(qk), sval(k), slen(k)) == 0)
                return fail(c, k, "duplicate key \"%.64s\" (first at line %zu, column %zu)", sval(k),
                            qk->start_mark.line + 1, qk->start_mark.column + 1);
        }
        if (names != NULL) {
            const char *const *p = names;
            while (*p != NULL && strcmp(*p, sval(k)) != 0)
                p++;
            if (*p == NULL) {
                char list[300];
                size_t len = 0;
                list[0] = '\0';
                for (p = names; *p != NULL && len < sizeof(list); p++) {
                    int w = snprintf(list + len, sizeof(list) - len, "%s%s", len ? ", " : "", *p);
                    if (w > 0)
                        len += (size_t)w;
                }
                return fail(c, k, "unknown field \"%.64s\" in %s (valid fields: %s)", sval(k), what, list);
            }
        }
        size_t old = push(c, sval(k));
        int rc = fn(c, sval(k), k, v, arg);
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    return 0;
}

/* ---- tls_server_config ---- */

static const struct {
    const char *go, *ossl; /* ossl NULL: a TLS 1.3 suite, not configurable (as in Go) */
} ciphers[] = {
    {"TLS_RSA_WITH_AES_128_CBC_SHA", "AES128-SHA"},
    {"TLS_RSA_WITH_AES_256_CBC_SHA", "AES256-SHA"},
    {"TLS_RSA_WITH_AES_128_GCM_SHA256", "AES128-GCM-SHA256"},
    {"TLS_RSA_WITH_AES_256_GCM_SHA384", "AES256-GCM-SHA384"},
    {"TLS_AES_128_GCM_SHA256", NULL},
    {"TLS_AES_256_GCM_SHA384", NULL},
    {"TLS_CHACHA20_POLY1305_SHA256", NULL},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA", "ECDHE-ECDSA-AES128-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA", "ECDHE-ECDSA-AES256-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA", "ECDHE-RSA-AES128-SHA"},
    {"TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA", "ECDHE-RSA-AES256-SHA"},
    {"TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256", "ECDHE-ECDSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384", "ECDHE-ECDSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256", "ECDHE-RSA-AES128-GCM-SHA256"},
    {"TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384", "ECDHE-RSA-AES256-GCM-SHA384"},
    {"TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-RSA-CHACHA20-POLY1305"},
    {"TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256", "ECDHE-ECDSA-CHACHA20-POLY1305"},
};

static const struct {
    const char *go, *ossl;
} curves[] = {{"CurveP256", "P-256"}, {"CurveP384", "P-384"}, {"CurveP521", "P-521"}, {"X25519", "X25519"}};

static const struct {
    const char *name;
    ps_client_auth_t v;
} client_auths[] = {{"", PS_CLIENT_AUTH_NONE},
                    {"NoClientCert", PS_CLIENT_AUTH_NONE},
                    {"RequestClientCert", PS_CLIENT_AUTH_REQUEST},
                    {"RequireAnyClientCert", PS_CLIENT_AUTH_REQUIRE_ANY},
                    {"RequireClientCert", PS_CLIENT_AUTH_REQUIRE_ANY},
                    {"VerifyClientCertIfGiven", PS_CLIENT_AUTH_VERIFY_IF_GIVEN},
                    {"RequireAndVerifyClientCert", PS_CLIENT_AUTH_REQUIRE_AND_VERIFY}};

typedef struct tls_state {
    ps_webconfig_tls_t *t;
    const yaml_node_t *map, *ca_node, *auth_node, *min_node;
    bool client_auth_set;
} tls_state_t;

static int get_version(ctx_t *c, const yaml_node_t *v, int *out)
{
    static const char *const names[] = {"TLS10", "TLS11", "TLS12", "TLS13"};
    const char *s;
    int rc = get_str(c, v, &s);
    if (rc != 0)
        return rc;
    for (int i = 0; i < 4; i++)
        if (strcmp(s, names[i]) == 0)
            return *out = 0x301 + i, 0;
    return fail(c, v, "unknown TLS version: %.64s (use TLS10, TLS11, TLS12 or TLS13)", s);
}

/* A list of names from table (go -> ossl), joined into an OpenSSL list with ':' (NULL if none). */
static int get_name_list(ctx_t *c, const yaml_node_t *v, const char *what, const char *const *go,
                         const char *const *ossl, size_t n, const char **out)
{
    *out = NULL;
    if (is_null(v))
        return 0;
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(c, v, "expected a list of %s, got %s", what, kind(v));
    ps_buf_t b = PS_BUF_INIT;
    size_t i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
        yaml_node_t *e = node(c, *it);
        size_t old = push_idx(c, i);
        const char *s;
        int rc = e == NULL ? fail(c, v, "broken list") : get_str(c, e, &s);
        size_t k = 0;
        while (rc == 0 && k < n && strcmp(go[k * 2], s) != 0)
            k++;
        if (rc == 0 && k == n)
            rc = fail(c, e, "unknown %s: %.64s", what, s);
        if (rc != 0) {
            ps_buf_dispose(&b);
            return rc;
        }
        if (ossl[k * 2] != NULL) {
            if (b.len)
                ps_buf_append(&b, ":", 1);
            ps_buf_append(&b, ossl[k * 2], strlen(ossl[k * 2]));
        }
        pop(c, old);
    }
    if (b.len)
        *out = ps_arena_strndup(c->a, (const char *)b.data, b.len);
    ps_buf_dispose(&b);
    return 0;
}

static int tls_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    tls_state_t *st = arg;
    ps_webconfig_tls_t *t = st->t;
    if (strcmp(key, "cert_file") == 0)
        return t->cert_at = pos(v), get_file(c, v, &t->cert_file);
    if (strcmp(key, "key_file") == 0)
        return t->key_at = pos(v), get_file(c, v, &t->key_file);
    if (strcmp(key, "client_ca_file") == 0)
        return st->ca_node = v, t->ca_at = pos(v), get_file(c, v, &t->client_ca_file);
    if (strcmp(key, "client_auth_type") == 0) {
        const char *s;
        int rc = get_str(c, v, &s);
        if (rc != 0)
            return rc;
        st->auth_node = v;
        for (size_t i = 0; i < sizeof(client_auths) / sizeof(client_auths[0]); i++)
            if (strcmp(s, client_auths[i].name) == 0) {
                t->client_auth = client_auths[i].v;
                st->client_auth_set = s[0] != '\0';
                return 0;
            }
        return fail(c, v, "invalid ClientAuth: %.64s (use NoClientCert, RequestClientCert, RequireAnyClientCert, "
                          "VerifyClientCertIfGiven or RequireAndVerifyClientCert)", s);
    }
    if (strcmp(key, "min_version") == 0)
        return st->min_node = v, get_version(c, v, &t->min_version);
    if (strcmp(key, "max_version") == 0)
        return get_version(c, v, &t->max_version);
    if (strcmp(key, "prefer_server_cipher_suites") == 0)
        return get_bool(c, v, &t->prefer_server_ciphers);
    if (strcmp(key, "cipher_suites") == 0 || strcmp(key, "curve_preferences") == 0) {
        bool cs = key[1] == 'i';
        const char *go[2 * (sizeof(ciphers) / sizeof(ciphers[0]))];
        size_t n = cs ? sizeof(ciphers) / sizeof(ciphers[0]) : sizeof(curves) / sizeof(curves[0]);
        for (size_t i = 0; i < n; i++) {
            go[2 * i] = cs ? ciphers[i].go : curves[i].go;
            go[2 * i + 1] = cs ? ciphers[i].ossl : curves[i].ossl;
        }
        return get_name_list(c, v, cs ? "cipher" : "curve", go, go + 1, n, cs ? &t->ciphers : &t->curves);
    }
    return fail(c, k, "unhandled field");
}

static int parse_tls(ctx_t *c, const yaml_node_t *n, ps_webconfig_tls_t *t)
{
    static const char *const names[] = {"cert_file", "key_file", "client_auth_type", "client_ca_file",
                                        "cipher_suites", "curve_preferences", "min_version", "max_version",
                                        "prefer_server_cipher_suites", NULL};
    tls_state_t st = {.t = t, .map = n};
    int rc = each_pair(c, n, "tls_server_config", names, tls_pair, &st);
    if (rc != 0)
        return rc;
    bool has_cert = t->cert_file != NULL && t->cert_file[0], has_key = t->key_file != NULL && t->key_file[0];
    bool has_ca = t->client_ca_file != NULL && t->client_ca_file[0];
    t->enabled = has_cert || has_key || has_ca || st.client_auth_set;
    if (!t->enabled)
        return 0;
    if (!has_cert)
        return fail(c, n, "missing cert_file");
    if (!has_key)
        return fail(c, n, "missing key_file");
    if (has_ca && t->client_auth == PS_CLIENT_AUTH_NONE)
        return fail(c, st.ca_node, "client CA's have been configured without a Client Auth Policy (client_auth_type)");
    if (!has_ca && (t->client_auth == PS_CLIENT_AUTH_VERIFY_IF_GIVEN || t->client_auth == PS_CLIENT_AUTH_REQUIRE_AND_VERIFY))
        return fail(c, st.auth_node, "client_auth_type %s needs a client_ca_file to verify client certificates against",
                    t->client_auth == PS_CLIENT_AUTH_VERIFY_IF_GIVEN ? "VerifyClientCertIfGiven" : "RequireAndVerifyClientCert");
    if (t->min_version > t->max_version)
        return fail(c, st.min_node ? st.min_node : n, "min_version is above max_version");
    return 0;
}

/* ---- http_server_config ---- */

static int header_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    static const char *const allowed[] = {"Strict-Transport-Security", "X-Content-Type-Options", "X-Frame-Options",
                                          "X-XSS-Protection", "Content-Security-Policy"};
    ps_webconfig_t *wc = arg;
    size_t i = 0;
    while (i < 5 && strcmp(key, allowed[i]) != 0)
        i++;
    if (i == 5)
        return fail(c, k, "HTTP header \"%.64s\" can not be configured", key);
    const char *s;
    int rc = get_str(c, v, &s);
    if (rc != 0)
        return rc;
    if (strpbrk(s, "\r\n") != NULL)
        return fail(c, v, "a header value may not contain a line break");
    if (i == 1 && strcmp(s, "nosniff") != 0)
        return fail(c, v, "invalid value for X-Content-Type-Options. Expected one of: [\"nosniff\"], but got: \"%.64s\"", s);
    if (i == 2 && strcmp(s, "deny") != 0 && strcmp(s, "sameorigin") != 0)
        return fail(c, v, "invalid value for X-Frame-Options. Expected one of: [\"deny\" \"sameorigin\"], but got: \"%.64s\"", s);
    char *lower = ps_arena_strndup(c->a, key, strlen(key)); /* HTTP/2 wants lower-case names */
    for (char *p = lower; *p; p++)
        if (*p >= 'A' && *p <= 'Z')
            *p = (char)(*p - 'A' + 'a');
    wc->headers[wc->nheaders++] = (ps_webconfig_header_t){lower, s};
    return 0;
}

static int http_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    ps_webconfig_t *wc = arg;
    if (strcmp(key, "http2") == 0)
        return get_bool(c, v, &wc->http2);
    if (v->type == YAML_MAPPING_NODE) {
        size_t n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
        wc->headers = ps_arena_alloc(c->a, (n + 1) * sizeof(*wc->headers));
    }
    return each_pair(c, v, "headers", NULL, header_pair, wc);
}

/* ---- basic_auth_users ---- */

static bool bcrypt_shaped(const char *h)
{
    if (strlen(h) != 60 || h[0] != '$' || h[1] != '2' || (h[2] != 'a' && h[2] != 'b' && h[2] != 'y') || h[3] != '$' ||
        h[4] < '0' || h[4] > '3' || h[5] < '0' || h[5] > '9' || h[6] != '$')
        return false;
    int cost = (h[4] - '0') * 10 + (h[5] - '0');
    if (cost < 4 || cost > 31)
        return false;
    for (int i = 7; i < 60; i++)
        if (!(h[i] == '.' || h[i] == '/' || (h[i] >= 'A' && h[i] <= 'Z') || (h[i] >= 'a' && h[i] <= 'z') ||
              (h[i] >= '0' && h[i] <= '9')))
            return false;
    return true;
}

static int user_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    ps_webconfig_t *wc = arg;
    const char *h;
    if (strchr(key, ':') != NULL)
        return fail(c, k, "a user name may not contain ':' (basic auth splits user and password at the first one)");
    int rc = get_str(c, v, &h);
    if (rc != 0)
        return rc;
    if (!bcrypt_shaped(h))
        return fail(c, v, "not a bcrypt hash (expected $2a$, $2b$ or $2y$, a cost 04..31 and 53 characters, "
                          "as htpasswd -nBC 10 USER prints)");
    wc->users[wc->nusers++] = (ps_webconfig_user_t){ps_arena_strndup(c->a, key, strlen(key)), h};
    return 0;
}

/* ---- bearer_tokens ---- */

typedef struct token_state {
    ps_webconfig_token_t *t;
    bool has_digest, has_scopes;
} token_state_t;

static int token_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    token_state_t *st = arg;
    if (strcmp(key, "name") == 0)
        return get_str(c, v, &st->t->name);
    if (strcmp(key, "sha256") == 0) {
        const char *s;
        int rc = get_str(c, v, &s);
        if (rc != 0)
            return rc;
        if (strlen(s) != 64)
            return fail(c, v, "expected the 64 hex digits of the token's SHA-256 (printf %%s TOKEN | sha256sum), got %zu "
                              "characters", strlen(s));
        size_t bad;
        if (ps_hex_decode(s, 64, st->t->sha256, &bad) != 0)
            return fail(c, v, "not a hex digit at offset %zu", bad);
        st->has_digest = true;
        return 0;
    }
    /* scopes */
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(c, v, "expected a list of scopes (read, write, admin), got %s", kind(v));
    size_t i = 0;
    for (yaml_node_item_t *it = v->data.sequence.items.start; it < v->data.sequence.items.top; it++, i++) {
        yaml_node_t *e = node(c, *it);
        const char *s;
        size_t old = push_idx(c, i);
        int rc = e == NULL ? fail(c, v, "broken list") : get_str(c, e, &s);
        if (rc != 0)
            return rc;
        unsigned bit = strcmp(s, "read") == 0 ? PS_SCOPE_READ : strcmp(s, "write") == 0 ? PS_SCOPE_WRITE
                       : strcmp(s, "admin") == 0 ? PS_SCOPE_ADMIN : 0;
        if (bit == 0)
            return fail(c, e, "unknown scope \"%.64s\" (use read, write or admin)", s);
        if (st->t->scopes & bit)
            return fail(c, e, "scope \"%s\" given twice", s);
        st->t->scopes |= bit;
        pop(c, old);
    }
    if (st->t->scopes == 0)
        return fail(c, v, "a token needs at least one scope (read, write, admin)");
    st->has_scopes = true;
    return 0;
}

static int parse_tokens(ctx_t *c, const yaml_node_t *v, ps_webconfig_t *wc)
{
    static const char *const names[] = {"sha256", "scopes", "name", NULL};
    if (is_null(v))
        return 0;
    if (v->type != YAML_SEQUENCE_NODE)
        return fail(c, v, "expected a list of tokens, got %s", kind(v));
    size_t n = (size_t)(v->data.sequence.items.top - v->data.sequence.items.start);
    wc->tokens = ps_arena_alloc(c->a, (n + 1) * sizeof(*wc->tokens));
    for (size_t i = 0; i < n; i++) {
        yaml_node_t *e = node(c, v->data.sequence.items.start[i]);
        size_t old = push_idx(c, i);
        if (e == NULL || e->type != YAML_MAPPING_NODE)
            return fail(c, e ? e : v, "expected a token (a mapping with sha256 and scopes), got %s", e ? kind(e) : "nothing");
        ps_webconfig_token_t *t = &wc->tokens[wc->ntokens];
        memset(t, 0, sizeof(*t));
        t->name = "";
        token_state_t st = {.t = t};
        int rc = each_pair(c, e, "a bearer token", names, token_pair, &st);
        if (rc != 0)
            return rc;
        if (!st.has_digest)
            return fail(c, e, "missing sha256 (the hex SHA-256 digest of the token)");
        if (!st.has_scopes)
            return fail(c, e, "missing scopes (a list of read, write, admin)");
        for (uint32_t j = 0; j < wc->ntokens; j++)
            if (memcmp(wc->tokens[j].sha256, t->sha256, 32) == 0)
                return fail(c, e, "the same token digest as bearer_tokens[%u]", j);
        wc->ntokens++;
        pop(c, old);
    }
    return 0;
}

/* ---- the root ---- */

static int root_pair(ctx_t *c, const char *key, const yaml_node_t *k, const yaml_node_t *v, void *arg)
{
    static const char *const http_names[] = {"http2", "headers", NULL};
    ps_webconfig_t *wc = arg;
    if (strcmp(key, "tls_server_config") == 0)
        return parse_tls(c, v, &wc->tls);
    if (strcmp(key, "http_server_config") == 0)
        return each_pair(c, v, "http_server_config", http_names, http_pair, wc);
    if (strcmp(key, "basic_auth_users") == 0) {
        if (v->type == YAML_MAPPING_NODE)
            wc->users = ps_arena_alloc(c->a, ((size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start) + 1) *
                                                 sizeof(*wc->users));
        return each_pair(c, v, "basic_auth_users", NULL, user_pair, wc);
    }
    return parse_tokens(c, v, wc);
}

int ps_webconfig_parse(const char *yaml, size_t n, const char *name, const char *dir, ps_webconfig_t **out,
                       ps_err_t *err)
{
    static const char *const names[] = {"tls_server_config", "http_server_config", "basic_auth_users",
                                        "bearer_tokens", NULL};
    *out = NULL;
    name = name ? name : "<web config>";
    if (yaml == NULL)
        yaml = "", n = 0;
    yaml_parser_t p;
    yaml_document_t doc;
    int rc = ps_yaml_load_first(&p, &doc, yaml, n, name, err);
    if (rc != 0)
        return rc;
    ps_webconfig_t *wc = ps_xcalloc(1, sizeof(*wc));
    wc->arena = (ps_arena_t)PS_ARENA_INIT;
    wc->http2 = true;
    wc->tls.min_version = 0x303;
    wc->tls.max_version = 0x304;
    wc->tls.prefer_server_ciphers = true;
    ctx_t c = {.doc = &doc, .name = name, .dir = dir, .a = &wc->arena, .err = err};
    yaml_node_t *root = yaml_document_get_root_node(&doc);
    rc = root == NULL ? 0 : each_pair(&c, root, "the web configuration", names, root_pair, wc);
    yaml_document_delete(&doc);
    if (rc == 0)
        rc = ps_yaml_no_second(&p, yaml, n, name, err);
    yaml_parser_delete(&p);
    if (rc != 0) {
        ps_webconfig_free(wc);
        return rc;
    }
    wc->path = ps_arena_strndup(&wc->arena, name, strlen(name));
    *out = wc;
    return 0;
}

int ps_webconfig_load(const char *path, ps_webconfig_t **out, ps_err_t *err)
{
    *out = NULL;
    ps_buf_t b = PS_BUF_INIT;
    char *dir;
    int rc = ps_yaml_read_file(path, WEBCONFIG_MAX_BYTES, &b, &dir, err);
    if (rc == 0)
        rc = ps_webconfig_parse(b.len ? (const char *)b.data : "", b.len, path, dir, out, err);
    free(dir);
    ps_buf_dispose(&b);
    return rc;
}

void ps_webconfig_free(ps_webconfig_t *c)
{
    if (c == NULL)
        return;
    ps_arena_dispose(&c->arena);
    free(c);
}
