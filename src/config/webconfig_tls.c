/*
 * webconfig_tls.c - the TLS server context of a web configuration file (tls_server_config): the one
 * the main port (web/access.c) and the gRPC listener (src/grpc) both serve with, each adding its
 * own ALPN. OpenSSL's errors are named with the file position of the setting that failed.
 */
#include "webconfig.h"

#include <stdio.h>
#include <string.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

const char *ps_ssl_reason(char *buf, size_t size)
{
    unsigned long e, last = 0;
    while ((e = ERR_get_error()) != 0)
        last = e;
    if (last == 0)
        snprintf(buf, size, "unknown error");
    else
        ERR_error_string_n(last, buf, size);
    return buf;
}

static int at_err(ps_err_t *err, const ps_webconfig_t *wc, ps_webconfig_pos_t at, const char *what, const char *file)
{
    char r[256];
    ps_ssl_reason(r, sizeof(r));
    return ps_err_set(err, PS_EINVAL, "%s:%u:%u: tls_server_config.%s: cannot load %s: %s", wc->path, at.line, at.col,
                      what, file, r);
}

static int verify_any(int ok, X509_STORE_CTX *ctx)
{
    (void)ok;
    (void)ctx;
    return 1; /* RequireAnyClientCert, RequestClientCert: a certificate, not verified */
}

struct ssl_ctx_st *ps_webconfig_ssl_ctx(const ps_webconfig_t *wc, const char *session_id, ps_err_t *err)
{
    const ps_webconfig_tls_t *t = &wc->tls;
    char r[256];
    ERR_clear_error();
    SSL_CTX *ctx = SSL_CTX_new(TLS_server_method());
    if (ctx == NULL) {
        ps_err_set(err, PS_EINTERNAL, "%s: cannot make a TLS context: %s", wc->path, ps_ssl_reason(r, sizeof(r)));
        return NULL;
    }
    SSL_CTX_set_options(ctx, SSL_OP_NO_COMPRESSION | SSL_OP_NO_RENEGOTIATION |
                                 (t->prefer_server_ciphers ? SSL_OP_CIPHER_SERVER_PREFERENCE : 0));
    SSL_CTX_set_min_proto_version(ctx, t->min_version);
    SSL_CTX_set_max_proto_version(ctx, t->max_version);
    SSL_CTX_set_session_id_context(ctx, (const unsigned char *)session_id, (unsigned)strlen(session_id));
    if (SSL_CTX_use_certificate_chain_file(ctx, t->cert_file) != 1) {
        at_err(err, wc, t->cert_at, "cert_file", t->cert_file);
        goto Fail;
    }
    if (SSL_CTX_use_PrivateKey_file(ctx, t->key_file, SSL_FILETYPE_PEM) != 1) {
        at_err(err, wc, t->key_at, "key_file", t->key_file);
        goto Fail;
    }
    if (SSL_CTX_check_private_key(ctx) != 1) {
        ps_err_set(err, PS_EINVAL, "%s:%u:%u: tls_server_config.key_file: the key does not match cert_file: %s",
                   wc->path, t->key_at.line, t->key_at.col, ps_ssl_reason(r, sizeof(r)));
        goto Fail;
    }
    if (t->ciphers != NULL && SSL_CTX_set_cipher_list(ctx, t->ciphers) != 1) {
        ps_err_set(err, PS_EINVAL, "%s: tls_server_config.cipher_suites: %s", wc->path, ps_ssl_reason(r, sizeof(r)));
        goto Fail;
    }
    if (t->curves != NULL && SSL_CTX_set1_groups_list(ctx, t->curves) != 1) {
        ps_err_set(err, PS_EINVAL, "%s: tls_server_config.curve_preferences: %s", wc->path,
                   ps_ssl_reason(r, sizeof(r)));
        goto Fail;
    }
    if (t->client_ca_file != NULL && t->client_ca_file[0]) {
        STACK_OF(X509_NAME) *names = SSL_load_client_CA_file(t->client_ca_file);
        if (names == NULL || SSL_CTX_load_verify_locations(ctx, t->client_ca_file, NULL) != 1) {
            if (names != NULL)
                sk_X509_NAME_pop_free(names, X509_NAME_free);
            at_err(err, wc, t->ca_at, "client_ca_file", t->client_ca_file);
            goto Fail;
        }
        SSL_CTX_set_client_CA_list(ctx, names);
    }
    switch (t->client_auth) {
    case PS_CLIENT_AUTH_NONE: SSL_CTX_set_verify(ctx, SSL_VERIFY_NONE, NULL); break;
    case PS_CLIENT_AUTH_REQUEST: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, verify_any); break;
    case PS_CLIENT_AUTH_REQUIRE_ANY:
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, verify_any);
        break;
    case PS_CLIENT_AUTH_VERIFY_IF_GIVEN: SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL); break;
    case PS_CLIENT_AUTH_REQUIRE_AND_VERIFY:
        SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, NULL);
        break;
    }
    return ctx;
Fail:
    SSL_CTX_free(ctx);
    return NULL;
}
