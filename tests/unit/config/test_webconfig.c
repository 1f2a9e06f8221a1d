/*
 * test_webconfig.c - the web configuration file (src/config/webconfig.c): every field with its
 * value, the defaults, relative file names, and errors with their FILE:LINE:COL: PATH: prefix.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config/webconfig.h"

#define HASH "$2y$10$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi"
#define DIGEST "a2f0a437be4fd6ceaaa59fac18e495e88345b0aa6fb8ccbddd05a8d88e7a3e56"

static ps_webconfig_t *parse_ok(const char *text)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_webconfig_t *c = NULL;
    int rc = ps_webconfig_parse(text, strlen(text), "web.yml", "/etc/ps", &c, &err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(rc, 0);
    return c;
}

static void parse_err(const char *text, const char *want)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_webconfig_t *c = NULL;
    assert_int_equal(ps_webconfig_parse(text, strlen(text), "web.yml", NULL, &c, &err), PS_EINVAL);
    assert_null(c);
    if (strncmp(err.msg, want, strlen(want)) != 0)
        fail_msg("got \"%s\", want a message starting \"%s\"", err.msg, want);
}

static void test_defaults(void **state)
{
    ps_webconfig_t *c = parse_ok("");
    assert_false(c->tls.enabled);
    assert_true(c->http2);
    assert_int_equal(c->tls.min_version, 0x303);
    assert_int_equal(c->tls.max_version, 0x304);
    assert_false(ps_webconfig_has_auth(c));
    ps_webconfig_free(c);
    c = parse_ok("tls_server_config:\nhttp_server_config: ~\nbasic_auth_users: {}\n");
    assert_false(c->tls.enabled);
    assert_int_equal(c->nusers, 0);
    ps_webconfig_free(c);
}

static void test_every_field(void **state)
{
    ps_webconfig_t *c = parse_ok("tls_server_config:\n"
                                 "  cert_file: srv.crt\n"
                                 "  key_file: /abs/srv.key\n"
                                 "  client_auth_type: RequireAndVerifyClientCert\n"
                                 "  client_ca_file: ca.crt\n"
                                 "  min_version: TLS11\n"
                                 "  max_version: TLS12\n"
                                 "  cipher_suites: [TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256, TLS_AES_128_GCM_SHA256,\n"
                                 "                  TLS_RSA_WITH_AES_256_CBC_SHA]\n"
                                 "  curve_preferences: [X25519, CurveP256]\n"
                                 "  prefer_server_cipher_suites: false\n"
                                 "http_server_config:\n"
                                 "  http2: false\n"
                                 "  headers:\n"
                                 "    X-Frame-Options: sameorigin\n"
                                 "    Strict-Transport-Security: max-age=31536000\n"
                                 "basic_auth_users:\n"
                                 "  alice: " HASH "\n"
                                 "  bob: '" HASH "'\n"
                                 "bearer_tokens:\n"
                                 "  - sha256: " DIGEST "\n"
                                 "    scopes: [read, admin]\n"
                                 "    name: grafana\n");
    assert_true(c->tls.enabled);
    assert_string_equal(c->tls.cert_file, "/etc/ps/srv.crt");
    assert_string_equal(c->tls.key_file, "/abs/srv.key");
    assert_string_equal(c->tls.client_ca_file, "/etc/ps/ca.crt");
    assert_int_equal(c->tls.cert_at.line, 2);
    assert_int_equal(c->tls.cert_at.col, 14);
    assert_int_equal(c->tls.client_auth, PS_CLIENT_AUTH_REQUIRE_AND_VERIFY);
    assert_int_equal(c->tls.min_version, 0x302);
    assert_int_equal(c->tls.max_version, 0x303);
    assert_string_equal(c->tls.ciphers, "ECDHE-RSA-AES128-GCM-SHA256:AES256-SHA"); /* TLS 1.3's: not configurable */
    assert_string_equal(c->tls.curves, "X25519:P-256");
    assert_false(c->tls.prefer_server_ciphers);
    assert_false(c->http2);
    assert_int_equal(c->nheaders, 2);
    assert_string_equal(c->headers[0].name, "x-frame-options");
    assert_string_equal(c->headers[0].value, "sameorigin");
    assert_string_equal(c->headers[1].name, "strict-transport-security");
    assert_int_equal(c->nusers, 2);
    assert_string_equal(c->users[1].name, "bob");
    assert_string_equal(c->users[1].hash, HASH);
    assert_int_equal(c->ntokens, 1);
    assert_int_equal(c->tokens[0].scopes, PS_SCOPE_READ | PS_SCOPE_ADMIN);
    assert_int_equal(c->tokens[0].sha256[0], 0xa2);
    assert_int_equal(c->tokens[0].sha256[31], 0x56);
    assert_string_equal(c->tokens[0].name, "grafana");
    assert_true(ps_webconfig_has_auth(c));
    ps_webconfig_free(c);
}

static void test_errors(void **state)
{
    parse_err("foo: 1\n", "web.yml:1:1: unknown field \"foo\" in the web configuration (valid fields: "
                          "tls_server_config, http_server_config, basic_auth_users, bearer_tokens)");
    parse_err("basic_auth_users:\n  a: " HASH "\n  a: " HASH "\n",
              "web.yml:3:3: basic_auth_users: duplicate key \"a\" (first at line 2, column 3)");
    parse_err("basic_auth_users:\n  a: $2y$03$QOauhQNbBCuQDKes6eFzPeMqBSjb7Mr5DUmpZ/VcEd00UAV/LDeSi\n",
              "web.yml:2:6: basic_auth_users.a: not a bcrypt hash");
    parse_err("basic_auth_users:\n  a:b: " HASH "\n", "web.yml:2:3: basic_auth_users.a:b: a user name may not contain ':'");
    parse_err("basic_auth_users: [a]\n", "web.yml:1:19: basic_auth_users: expected basic_auth_users (a mapping), got a list");
    parse_err("tls_server_config:\n  key_file: k\n", "web.yml:2:3: tls_server_config: missing cert_file");
    parse_err("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_ca_file: ca\n",
              "web.yml:4:19: tls_server_config: client CA's have been configured without a Client Auth Policy");
    parse_err("tls_server_config:\n  cert_file: c\n  key_file: k\n  client_auth_type: RequireAndVerifyClientCert\n",
              "web.yml:4:21: tls_server_config: client_auth_type RequireAndVerifyClientCert needs a client_ca_file");
    parse_err("tls_server_config:\n  client_auth_type: Always\n", "web.yml:2:21: tls_server_config.client_auth_type: invalid ClientAuth: Always");
    parse_err("tls_server_config:\n  min_version: TLS14\n", "web.yml:2:16: tls_server_config.min_version: unknown TLS version: TLS14");
    parse_err("tls_server_config:\n  cert_file: c\n  key_file: k\n  min_version: TLS13\n  max_version: TLS12\n",
              "web.yml:4:16: tls_server_config: min_version is above max_version");
    parse_err("tls_server_config:\n  cipher_suites: [TLS_RSA_WITH_RC4_128_SHA]\n",
              "web.yml:2:19: tls_server_config.cipher_suites[0]: unknown cipher: TLS_RSA_WITH_RC4_128_SHA");
    parse_err("tls_server_config:\n  curve_preferences: [P-256]\n",
              "web.yml:2:23: tls_server_config.curve_preferences[0]: unknown curve: P-256");
    parse_err("tls_server_config:\n  prefer_server_cipher_suites: maybe\n",
              "web.yml:2:32: tls_server_config.prefer_server_cipher_suites: expected true or false, got \"maybe\"");
    parse_err("http_server_config:\n  headers:\n    X-Frame-Options: allow\n",
              "web.yml:3:22: http_server_config.headers.X-Frame-Options: invalid value for X-Frame-Options");
    parse_err("http_server_config:\n  headers:\n    Content-Security-Policy: \"a\\r\\nSet-Cookie: x\"\n",
              "web.yml:3:30: http_server_config.headers.Content-Security-Policy: a header value may not contain a line break");
    parse_err("bearer_tokens:\n  - scopes: [read]\n", "web.yml:2:5: bearer_tokens[0]: missing sha256");
    parse_err("bearer_tokens:\n  - sha256: " DIGEST "\n", "web.yml:2:5: bearer_tokens[0]: missing scopes");
    parse_err("bearer_tokens:\n  - sha256: " DIGEST "\n    scopes: []\n",
              "web.yml:3:13: bearer_tokens[0].scopes: a token needs at least one scope");
    parse_err("bearer_tokens:\n  - sha256: " DIGEST "\n    scopes: [read, read]\n",
              "web.yml:3:20: bearer_tokens[0].scopes[1]: scope \"read\" given twice");
    parse_err("bearer_tokens:\n  - sha256: " DIGEST "\n    scopes: [read]\n  - sha256: " DIGEST "\n    scopes: [write]\n",
              "web.yml:4:5: bearer_tokens[1]: the same token digest as bearer_tokens[0]");
    parse_err("bearer_tokens:\n  - sha256: zz" DIGEST "\n    scopes: [read]\n", "web.yml:2:13: bearer_tokens[0].sha256: expected the 64 hex digits");
    parse_err("bearer_tokens:\n  - token: x\n", "web.yml:2:5: bearer_tokens[0]: unknown field \"token\" in a bearer token");
    parse_err("a: [\n", "web.yml:2:1: invalid YAML");
    parse_err("{}\n---\n{}\n", "web.yml:2:1: a second YAML document is not supported");
    parse_err("- 1\n", "web.yml:1:1: expected the web configuration (a mapping), got a list");
}

static void test_load(void **state)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_webconfig_t *c = NULL;
    assert_int_equal(ps_webconfig_load("/nonexistent/web.yml", &c, &err), PS_EINVAL);
    assert_string_equal(err.msg, "/nonexistent/web.yml: No such file or directory");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_field),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_load),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
