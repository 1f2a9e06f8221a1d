/*
 * test_auth.c - credential checking (src/auth/auth.c): basic auth against bcrypt hashes and its
 * cache of verified (and refused) credentials, bearer tokens and their scopes, malformed headers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <crypt.h>
#include <time.h>

#include "auth/auth.h"

/* SHA-256("tok-read"), SHA-256("tok-admin") */
#define DIGEST_READ "a2f0a437be4fd6ceaaa59fac18e495e88345b0aa6fb8ccbddd05a8d88e7a3e56"

static char hash[128];

static ps_webconfig_t *config(const char *text)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_webconfig_t *c = NULL;
    int rc = ps_webconfig_parse(text, strlen(text), "web.yml", NULL, &c, &err);
    if (rc != 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    return c;
}

static ps_auth_verdict_t check(ps_auth_t *a, const char *hdr, unsigned *scopes)
{
    return ps_auth_check(a, hdr, hdr ? strlen(hdr) : 0, scopes);
}

static void test_basic_and_cache(void **state)
{
    struct crypt_data d;
    memset(&d, 0, sizeof(d));
    const char *setting = crypt_gensalt_rn("$2b$", 4, NULL, 0, d.setting, sizeof(d.setting));
    assert_non_null(setting);
    snprintf(hash, sizeof(hash), "%s", crypt_r("wonderland", setting, &d));
    char text[300];
    snprintf(text, sizeof(text), "basic_auth_users:\n  alice: '%s'\n", hash);
    ps_webconfig_t *wc = config(text);
    ps_auth_t *a = ps_auth_new(wc);
    ps_webconfig_free(wc); /* the checker keeps its own copy */
    assert_string_equal(ps_auth_challenge(a), "Basic");
    unsigned sc = 0;
    uint64_t bc, hits;
    /* alice:wonderland = YWxpY2U6d29uZGVybGFuZA==; the quick check cannot tell before a bcrypt */
    const char *right = "Basic YWxpY2U6d29uZGVybGFuZA==";
    assert_int_equal(ps_auth_check_quick(a, right, strlen(right), &sc), PS_AUTH_PENDING);
    assert_int_equal(sc, 0);
    assert_int_equal(ps_auth_check_quick(a, "Basic !!!!", 10, &sc), PS_AUTH_MALFORMED); /* no bcrypt needed */
    assert_int_equal(ps_auth_check_quick(a, NULL, 0, &sc), PS_AUTH_MISSING);
    ps_auth_stats(a, &bc, &hits);
    assert_int_equal(bc, 0);
    assert_int_equal(check(a, "Basic YWxpY2U6d29uZGVybGFuZA==", &sc), PS_AUTH_OK);
    assert_int_equal(ps_auth_check_quick(a, right, strlen(right), &sc), PS_AUTH_OK); /* cached now */
    assert_int_equal(sc, PS_SCOPE_ALL);
    ps_auth_stats(a, &bc, &hits);
    assert_int_equal(bc, 1);
    assert_int_equal(hits, 1);
    for (int i = 0; i < 5; i++)
        assert_int_equal(check(a, "basic   YWxpY2U6d29uZGVybGFuZA== ", &sc), PS_AUTH_OK); /* any case, spaces */
    ps_auth_stats(a, &bc, &hits);
    assert_int_equal(bc, 1); /* cached */
    assert_int_equal(hits, 6);
    /* alice:wrong = YWxpY2U6d3Jvbmc= : bcrypt once, then the refusal is cached too */
    assert_int_equal(check(a, "Basic YWxpY2U6d3Jvbmc=", &sc), PS_AUTH_INVALID);
    assert_int_equal(check(a, "Basic YWxpY2U6d3Jvbmc=", &sc), PS_AUTH_INVALID);
    ps_auth_stats(a, &bc, &hits);
    assert_int_equal(bc, 2);
    assert_int_equal(hits, 7);
    /* bob:wonderland: an unknown user costs a bcrypt (of a fixed hash) too */
    assert_int_equal(check(a, "Basic Ym9iOndvbmRlcmxhbmQ=", &sc), PS_AUTH_INVALID);
    ps_auth_stats(a, &bc, &hits);
    assert_int_equal(bc, 3);
    assert_int_equal(sc, 0);
    /* malformed: bad base64, no colon, nothing after the scheme; other schemes; none */
    assert_int_equal(check(a, "Basic !!!!", &sc), PS_AUTH_MALFORMED);
    assert_int_equal(check(a, "Basic YWxpY2U=", &sc), PS_AUTH_MALFORMED); /* "alice" */
    assert_int_equal(check(a, "Basic YWxpY2U6d29uZGVybGFuZA", &sc), PS_AUTH_MALFORMED); /* no padding */
    assert_int_equal(check(a, "Basic", &sc), PS_AUTH_MALFORMED);
    assert_int_equal(check(a, "Bearer tok-read", &sc), PS_AUTH_UNSUPPORTED); /* no tokens configured */
    assert_int_equal(check(a, "Digest a=b", &sc), PS_AUTH_UNSUPPORTED);
    assert_int_equal(check(a, NULL, &sc), PS_AUTH_MISSING);
    assert_int_equal(check(a, "", &sc), PS_AUTH_MISSING);
    /* a password with a NUL byte never matches: alice:wonderland\0x */
    assert_int_equal(check(a, "Basic YWxpY2U6d29uZGVybGFuZAB4", &sc), PS_AUTH_INVALID);
    ps_auth_free(a);
}

static void test_tokens(void **state)
{
    ps_webconfig_t *wc = config("bearer_tokens:\n"
                                "  - sha256: " DIGEST_READ "\n    scopes: [read]\n"
                                "  - sha256: 0000000000000000000000000000000000000000000000000000000000000000\n"
                                "    scopes: [write]\n");
    ps_auth_t *a = ps_auth_new(wc);
    ps_webconfig_free(wc);
    assert_string_equal(ps_auth_challenge(a), "Bearer");
    unsigned sc = 0;
    assert_int_equal(check(a, "Bearer tok-read", &sc), PS_AUTH_OK);
    assert_int_equal(sc, PS_SCOPE_READ);
    assert_int_equal(check(a, "BEARER tok-read", &sc), PS_AUTH_OK);
    assert_int_equal(check(a, "Bearer tok-rea", &sc), PS_AUTH_INVALID);
    assert_int_equal(sc, 0);
    assert_int_equal(check(a, "Basic YWxpY2U6d29uZGVybGFuZA==", &sc), PS_AUTH_UNSUPPORTED);
    ps_auth_free(a);
    /* no users and no tokens: no checker, everything allowed */
    wc = config("http_server_config:\n  http2: true\n");
    assert_null(ps_auth_new(wc));
    assert_int_equal(check(NULL, NULL, &sc), PS_AUTH_OK);
    assert_int_equal(sc, PS_SCOPE_ALL);
    ps_webconfig_free(wc);
    ps_auth_free(NULL);
}

static void bcrypt_of(const char *pass, int cost, char *out, size_t size)
{
    struct crypt_data d;
    memset(&d, 0, sizeof(d));
    const char *setting = crypt_gensalt_rn("$2b$", (unsigned long)cost, NULL, 0, d.setting, sizeof(d.setting));
    assert_non_null(setting);
    snprintf(out, size, "%s", crypt_r(pass, setting, &d));
}

/* the CPU time of this thread (where the check hashes), which other load on the machine does not
 * lengthen as it does the wall time */
static double seconds_of_check(ps_auth_t *a, const char *hdr)
{
    struct timespec t0, t1;
    unsigned sc = 0;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    assert_int_equal(check(a, hdr, &sc), PS_AUTH_INVALID);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    return (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
}

/* An unknown user pays the users' bcrypt cost: a fixed cost 10 beside a user at cost 12 answered
 * the unknown user in a quarter of the time, telling which users exist. */
static void test_unknown_user_pays_the_users_cost(void **state)
{
    (void)state;
    char h4[128], h12[128], text[400];
    bcrypt_of("wonderland", 4, h4, sizeof(h4));
    bcrypt_of("wonderland", 12, h12, sizeof(h12));
    snprintf(text, sizeof(text), "basic_auth_users:\n  alice: '%s'\n  carol: '%s'\n", h4, h12);
    ps_webconfig_t *wc = config(text);
    ps_auth_t *a = ps_auth_new(wc);
    ps_webconfig_free(wc);
    assert_int_equal(ps_auth_unknown_user_cost(a), 12);
    /* carol:wrong vs bob:wrong (bob unknown): the same work within a factor of 2 (was 4x apart);
     * the least of 3 each */
    double known = 1e9, unknown = 1e9;
    for (int i = 0; i < 3; i++) {
        double k = seconds_of_check(a, "Basic Y2Fyb2w6d3Jvbmc="), u = seconds_of_check(a, "Basic Ym9iOndyb25n");
        known = k < known ? k : known;
        unknown = u < unknown ? u : unknown;
    }
    assert_true(unknown > known / 2 && unknown < known * 2);
    ps_auth_free(a);
    /* users below cost 10 keep the fixed hash's 10; no users: no checker */
    snprintf(text, sizeof(text), "basic_auth_users:\n  alice: '%s'\n", h4);
    wc = config(text);
    a = ps_auth_new(wc);
    ps_webconfig_free(wc);
    assert_int_equal(ps_auth_unknown_user_cost(a), 10);
    ps_auth_free(a);
    assert_int_equal(ps_auth_unknown_user_cost(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_basic_and_cache),
        cmocka_unit_test(test_tokens),
        cmocka_unit_test(test_unknown_user_pays_the_users_cost),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
