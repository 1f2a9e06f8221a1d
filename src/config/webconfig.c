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

/* The web configuration's mappings as tables (config_int.h): as yaml.v2 decodes it, a null
 * mapping is empty and a null value is the field's zero ("" for strings) */
#define MAP(what_, rows) {.what = (what_), .fields = (rows), .n = sizeof(rows) / sizeof((rows)[0]), .nulls = true}
#define ANY(what_, fn) {.what = (what_), .any = (fn), .nulls = true}
#define WHOLE(k, f) {.key = (k), .type = PS_YF_FN, .fn = (f)}

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
    const yaml_node_t *auth_node;
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

static int client_auth_type(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    tls_state_t *st = ctx;
    const char *s;
    int rc = get_str(c, v, &s);
    if (rc != 0)
        return rc;
    for (size_t i = 0; i < sizeof(client_auths) / sizeof(client_auths[0]); i++)
        if (strcmp(s, client_auths[i].name) == 0) {
            *(ps_client_auth_t *)dst = client_auths[i].v;
            st->client_auth_set = s[0] != '\0';
            return 0;
        }
    return fail(c, v, "invalid ClientAuth: %.64s (use NoClientCert, RequestClientCert, RequireAnyClientCert, "
                      "VerifyClientCertIfGiven or RequireAndVerifyClientCert)", s);
}

static int tls_version(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)ctx;
    return get_version(c, v, dst);
}

static int cipher_suites(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    const char *go[2 * (sizeof(ciphers) / sizeof(ciphers[0]))];
    size_t n = sizeof(ciphers) / sizeof(ciphers[0]);
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        go[2 * i] = ciphers[i].go;
        go[2 * i + 1] = ciphers[i].ossl;
    }
    return get_name_list(c, v, "cipher", go, go + 1, n, dst);
}

static int curve_preferences(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    const char *go[2 * (sizeof(curves) / sizeof(curves[0]))];
    size_t n = sizeof(curves) / sizeof(curves[0]);
    (void)ctx;
    for (size_t i = 0; i < n; i++) {
        go[2 * i] = curves[i].go;
        go[2 * i + 1] = curves[i].ossl;
    }
    return get_name_list(c, v, "curve", go, go + 1, n, dst);
}

static int parse_tls(ctx_t *c, const yaml_node_t *n, void *dst, void *ctx)
{
#define T(k, ty, field, ...) {.key = (k), .type = (ty), .offset = offsetof(ps_webconfig_tls_t, field), __VA_ARGS__}
    static const ps_yaml_field_t rows[] = {
        T("cert_file", PS_YF_FILE, cert_file, .flags = PS_YF_EMPTY_OK),
        T("key_file", PS_YF_FILE, key_file, .flags = PS_YF_EMPTY_OK),
        T("client_auth_type", PS_YF_FN, client_auth, .fn = client_auth_type),
        T("client_ca_file", PS_YF_FILE, client_ca_file, .flags = PS_YF_EMPTY_OK),
        T("cipher_suites", PS_YF_FN, ciphers, .fn = cipher_suites),
        T("curve_preferences", PS_YF_FN, curves, .fn = curve_preferences),
        T("min_version", PS_YF_FN, min_version, .fn = tls_version),
        T("max_version", PS_YF_FN, max_version, .fn = tls_version),
        T("prefer_server_cipher_suites", PS_YF_BOOL, prefer_server_ciphers),
    };
#undef T
    static const ps_yaml_map_t m = MAP("tls_server_config", rows);
    ps_webconfig_tls_t *t = dst;
    tls_state_t st = {0};
    ps_yaml_seen_t seen;
    (void)ctx;
    int rc = ps_yaml_map_walk(c, n, &m, t, &st, &seen);
    if (rc != 0)
        return rc;
    const yaml_node_t *cert = ps_yaml_seen_at(&m, &seen, "cert_file", false),
                      *key = ps_yaml_seen_at(&m, &seen, "key_file", false),
                      *ca = ps_yaml_seen_at(&m, &seen, "client_ca_file", false),
                      *min = ps_yaml_seen_at(&m, &seen, "min_version", false);
    if (cert != NULL)
        t->cert_at = pos(cert);
    if (key != NULL)
        t->key_at = pos(key);
    if (ca != NULL)
        t->ca_at = pos(ca);
    st.auth_node = ps_yaml_seen_at(&m, &seen, "client_auth_type", false);
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
        return fail(c, ca, "client CA's have been configured without a Client Auth Policy (client_auth_type)");
    if (!has_ca && (t->client_auth == PS_CLIENT_AUTH_VERIFY_IF_GIVEN || t->client_auth == PS_CLIENT_AUTH_REQUIRE_AND_VERIFY))
        return fail(c, st.auth_node, "client_auth_type %s needs a client_ca_file to verify client certificates against",
                    t->client_auth == PS_CLIENT_AUTH_VERIFY_IF_GIVEN ? "VerifyClientCertIfGiven" : "RequireAndVerifyClientCert");
    if (t->min_version > t->max_version)
        return fail(c, min ? min : n, "min_version is above max_version");
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

static int http_headers(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    static const ps_yaml_map_t m = ANY("headers", header_pair);
    ps_webconfig_t *wc = dst;
    (void)ctx;
    if (v->type == YAML_MAPPING_NODE) {
        size_t n = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
        wc->headers = ps_arena_alloc(c->a, (n + 1) * sizeof(*wc->headers));
    }
    return ps_yaml_map_walk(c, v, &m, NULL, wc, NULL);
}

static int parse_http(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "http2", .type = PS_YF_BOOL, .offset = offsetof(ps_webconfig_t, http2)},
        WHOLE("headers", http_headers),
    };
    static const ps_yaml_map_t m = MAP("http_server_config", rows);
    (void)ctx;
    return ps_yaml_map_walk(c, v, &m, dst, NULL, NULL);
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

static int token_sha256(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_webconfig_token_t *t = dst;
    const char *s;
    (void)ctx;
    int rc = get_str(c, v, &s);
    if (rc != 0)
        return rc;
    if (strlen(s) != 64)
        return fail(c, v, "expected the 64 hex digits of the token's SHA-256 (printf %%s TOKEN | sha256sum), got %zu "
                          "characters", strlen(s));
    size_t bad;
    if (ps_hex_decode(s, 64, t->sha256, &bad) != 0)
        return fail(c, v, "not a hex digit at offset %zu", bad);
    return 0;
}

static int token_scopes(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_webconfig_token_t *t = dst;
    (void)ctx;
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
        if (t->scopes & bit)
            return fail(c, e, "scope \"%s\" given twice", s);
        t->scopes |= bit;
        pop(c, old);
    }
    if (t->scopes == 0)
        return fail(c, v, "a token needs at least one scope (read, write, admin)");
    return 0;
}

static int parse_tokens(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "sha256", .type = PS_YF_FN, .fn = token_sha256,
         .required = "missing sha256 (the hex SHA-256 digest of the token)"},
        {.key = "scopes", .type = PS_YF_FN, .fn = token_scopes,
         .required = "missing scopes (a list of read, write, admin)"},
        {.key = "name", .type = PS_YF_STR, .offset = offsetof(ps_webconfig_token_t, name)},
    };
    static const ps_yaml_map_t m = {.what = "a bearer token", .fields = rows, .n = 3, .nulls = true};
    ps_webconfig_t *wc = dst;
    (void)ctx;
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
        int rc = ps_yaml_map_walk(c, e, &m, t, NULL, NULL);
        if (rc != 0)
            return rc;
        for (uint32_t j = 0; j < wc->ntokens; j++)
            if (memcmp(wc->tokens[j].sha256, t->sha256, 32) == 0)
                return fail(c, e, "the same token digest as bearer_tokens[%u]", j);
        wc->ntokens++;
        pop(c, old);
    }
    return 0;
}

/* ---- the root ---- */

static int parse_users(ctx_t *c, const yaml_node_t *v, void *dst, void *ctx)
{
    static const ps_yaml_map_t m = ANY("basic_auth_users", user_pair);
    ps_webconfig_t *wc = dst;
    (void)ctx;
    if (v->type == YAML_MAPPING_NODE)
        wc->users = ps_arena_alloc(c->a, ((size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start) + 1) *
                                             sizeof(*wc->users));
    return ps_yaml_map_walk(c, v, &m, NULL, wc, NULL);
}

int ps_webconfig_parse(const char *yaml, size_t n, const char *name, const char *dir, ps_webconfig_t **out,
                       ps_err_t *err)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "tls_server_config", .type = PS_YF_FN, .offset = offsetof(ps_webconfig_t, tls), .fn = parse_tls},
        WHOLE("http_server_config", parse_http),
        WHOLE("basic_auth_users", parse_users),
        WHOLE("bearer_tokens", parse_tokens),
    };
    static const ps_yaml_map_t m = MAP("the web configuration", rows);
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
    rc = root == NULL ? 0 : ps_yaml_map_walk(&c, root, &m, wc, NULL, NULL);
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
