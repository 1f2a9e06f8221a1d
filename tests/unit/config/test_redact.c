/*
 * test_redact.c - the one redaction rule (src/config/redact.c): credential-like names, URL
 * passwords as Go's url.URL.Redacted() shows them, query parameters, URLs inside values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "config/config.h"

static void check_url(const char *in, const char *want)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_redact_url(in, strlen(in), &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, want);
    ps_buf_dispose(&b);
}

static void check_value(const char *name, const char *in, const char *want)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_redact_value(name, strlen(name), in, strlen(in), &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, want);
    ps_buf_dispose(&b);
}

static void test_secret_names(void **state)
{
    (void)state;
    static const char *const yes[] = {"token", "__param_token", "api_key", "API-KEY", "key", "access_token",
                                      "auth.token", "password", "db_passwd", "client_secret", "credentials",
                                      "authorization", "x_apikey", "session_key", "pwd"};
    static const char *const no[] = {"shard_key", "sort_key", "keys", "tokenizer", "region", "__address__",
                                     "seconds", "monkey", "", "__param_"};
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++)
        assert_true(ps_secret_name(yes[i], strlen(yes[i])));
    for (size_t i = 0; i < sizeof(no) / sizeof(no[0]); i++)
        assert_false(ps_secret_name(no[i], strlen(no[i])));
}

static void test_urls(void **state)
{
    (void)state;
    /* Go: (&url.URL{Scheme: "http", User: url.UserPassword("alice", "s3cret"), Host: "sd:8080"}).Redacted() */
    check_url("http://alice:s3cret@sd:8080/t", "http://alice:xxxxx@sd:8080/t");
    check_url("https://alice@sd/t", "https://alice@sd/t"); /* no password: as is */
    check_url("http://a:b:c@h/", "http://a:xxxxx@h/");       /* the password runs to the last '@' */
    check_url("http://u:p@x@h:1/p@q", "http://u:xxxxx@h:1/p@q");
    check_url("http://h/p?token=abc&x=1&api_key=k#frag", "http://h/p?token=<secret>&x=1&api_key=<secret>#frag");
    check_url("http://u:p@h/?access_token=q", "http://u:xxxxx@h/?access_token=<secret>");
    check_url("http://h:9/debug/pprof/profile?seconds=10", "http://h:9/debug/pprof/profile?seconds=10");
    check_url("no url here: a:b@c", "no url here: a:b@c");
    check_url("", "");
    check_url("two: http://a:1@h and https://b:2@g/?pwd=3 end", "two: http://a:xxxxx@h and https://b:xxxxx@g/?pwd=<secret> end");
    check_url("http://", "http://");
    check_url("x://u:p@", "x://u:xxxxx@");
    /* shown twice, the same (a label made from __meta_url is shown again) */
    check_url("http://u:xxxxx@h/?access_token=<secret>&x=1", "http://u:xxxxx@h/?access_token=<secret>&x=1");
}

static void test_values(void **state)
{
    (void)state;
    check_value("api_key", "k1", "<secret>");
    check_value("shard_key", "s1", "s1");
    check_value("__meta_url", "http://u:pw@sd/x?token=t", "http://u:xxxxx@sd/x?token=<secret>");
    check_value("__address__", "user:pw@127.0.0.1:9", "user:xxxxx@127.0.0.1:9");
    check_value("__address__", "127.0.0.1:9", "127.0.0.1:9");
    check_value("__address__", "user@h", "user@h");
    check_value("__scheme__", "javascript:alert(1)//", "javascript:alert(1)//");
    check_value("__profile_path__", "/debug/pprof/heap?token=t&gc=1", "/debug/pprof/heap?token=<secret>&gc=1");
    check_value("__profile_path__", "@evil/x", "@evil/x");
    check_value("team", "a:b@c", "a:b@c"); /* not a URL, not an address: as is */
}

static void test_config_shown(void **state)
{
    (void)state;
    static const char yaml[] = "global:\n  external_labels: {password: e1, region: eu}\n"
                               "forward:\n  - url: http://fu:fp@f:1\n"
                               "scrape_configs:\n  - job_name: j\n    params: {token: [p1], seconds: ['5']}\n"
                               "    static_configs: [{targets: ['h:1'], labels: {api_key: l1, shard_key: s1}}]\n"
                               "    http_sd_configs: [{url: 'https://su:sp@sd/x?token=q1'}]\n";
    ps_config_t *c = NULL;
    ps_err_t err;
    assert_int_equal(ps_config_parse(yaml, sizeof(yaml) - 1, "r.yml", &c, &err), 0);
    assert_string_equal(c->forward[0].name, "http://fu:xxxxx@f:1");
    assert_string_equal(c->forward[0].url, "http://fu:fp@f:1");
    assert_string_equal(c->forward[0].url_shown, "http://fu:xxxxx@f:1");
    assert_string_equal(c->scrape[0].http_sd[0].url_shown, "https://su:xxxxx@sd/x?token=<secret>");
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(c, &y);
    ps_buf_putc(&y, 0);
    const char *t = (const char *)y.data;
    assert_non_null(strstr(t, "  external_labels:\n    password: <secret>\n    region: eu\n"));
    assert_non_null(strstr(t, "- name: http://fu:xxxxx@f:1\n  url: http://fu:xxxxx@f:1\n"));
    assert_non_null(strstr(t, "    token:\n    - <secret>\n"));
    assert_non_null(strstr(t, "      api_key: <secret>\n      shard_key: s1\n"));
    assert_non_null(strstr(t, "  - url: https://su:xxxxx@sd/x?token=<secret>\n"));
    assert_null(strstr(t, "fp"));
    assert_null(strstr(t, "sp@"));
    assert_null(strstr(t, "e1"));
    assert_null(strstr(t, "p1"));
    assert_null(strstr(t, "l1"));
    assert_null(strstr(t, "q1"));
    ps_buf_dispose(&y);
    ps_config_free(c);
}

static void test_target_problem(void **state)
{
    (void)state;
    static const char *const ok[] = {"h", "h:1", "127.0.0.1:65535", "[::1]:9", "[fe80::1%eth0]", "a-b.c_d"};
    static const char *const bad[] = {"", "h/x", "h?x", "h#x", "u@h", "u:p@h:1", "h:1 ", "http://h", "h:0",
                                      "h:65536", "h:x", "a:b:c", "[::1", "h\\x", "javascript:alert(1)//"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        assert_null(ps_config_target_problem(ok[i], strlen(ok[i])));
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_non_null(ps_config_target_problem(bad[i], strlen(bad[i])));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_secret_names),
        cmocka_unit_test(test_urls),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_config_shown),
        cmocka_unit_test(test_target_problem),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
