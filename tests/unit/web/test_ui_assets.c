/*
 * test_ui_assets.c - unit tests for web/ui_assets.c: Accept-Encoding (gzip or not, q-values,
 * "*"), If-None-Match (lists, W/, "*", the gzipped representation's "-gz" tag), and the lookup in
 * the embedded table that scripts/embed-ui.py generates (sorted, every file found by its own
 * path, index.html there byte for byte with its gzip and ETag).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "../testutil.h"
#include "web/ui_assets.h"

static bool gz(const char *v)
{
    return ps_ui_accepts_gzip(v, strlen(v));
}

static void test_accept_encoding(void **state)
{
    (void)state;
    assert_true(gz("gzip"));
    assert_true(gz("GZIP"));
    assert_true(gz("x-gzip"));
    assert_true(gz("gzip, deflate, br, zstd"));
    assert_true(gz("br;q=1.0, gzip;q=0.8, *;q=0.1"));
    assert_true(gz("  gzip ; q=0.001 "));
    assert_true(gz("*"));
    assert_true(gz("deflate, *;q=0.5"));
    assert_false(gz(""));
    assert_false(gz("identity"));
    assert_false(gz("br, deflate"));
    assert_false(gz("gzip;q=0"));
    assert_false(gz("gzip;q=0.000"));
    assert_false(gz("gzip;q=0, *"));
    assert_false(gz("*;q=0"));
    assert_false(gz("gzipx"));
    assert_false(gz("xgzip, gzi"));
    /* the first explicit acceptance wins over a later refusal of the same coding */
    assert_true(gz("gzip, gzip;q=0"));
}

static bool inm(const char *v, const char *etag)
{
    return ps_ui_etag_matches(v, strlen(v), etag);
}

static void test_if_none_match(void **state)
{
    (void)state;
    const char *e = "\"0123456789abcdef0123\"";
    char g[64];
    ps_ui_etag_gz(e, g, sizeof(g));
    assert_string_equal(g, "\"0123456789abcdef0123-gz\"");
    assert_true(inm(e, e));
    assert_true(inm(g, e));
    assert_true(inm("W/\"0123456789abcdef0123\"", e));
    assert_true(inm("\"a\", \"b\",\"0123456789abcdef0123\"", e));
    assert_true(inm("*", e));
    assert_true(inm(" * ", e));
    assert_false(inm("", e));
    assert_false(inm("\"0123456789abcdef012\"", e));
    assert_false(inm("0123456789abcdef0123", e)); /* unquoted */
    assert_false(inm("\"0123456789abcdef0123-gz-gz\"", e));
    assert_false(inm("\"a\", \"b\"", e));
    assert_false(inm("w/\"0123456789abcdef0123\"", e)); /* W/ is case-sensitive */
}

static void test_table(void **state)
{
    (void)state;
    assert_true(ps_ui_nassets >= 3);
    for (size_t i = 0; i < ps_ui_nassets; i++) {
        const ps_ui_asset_t *a = &ps_ui_assets[i];
        if (i > 0)
            assert_true(strcmp(ps_ui_assets[i - 1].path, a->path) < 0);
        assert_ptr_equal(ps_ui_find(a->path, strlen(a->path)), a);
        assert_int_equal(strlen(a->etag), 22);
        if (a->gz != NULL) {
            assert_true(a->gz_len < a->len);
            uLongf n = (uLongf)a->len;
            unsigned char *out = malloc(a->len + 1);
            z_stream zs = {.next_in = (Bytef *)a->gz, .avail_in = (uInt)a->gz_len, .next_out = out,
                           .avail_out = (uInt)a->len + 1};
            assert_int_equal(inflateInit2(&zs, 16 + MAX_WBITS), Z_OK);
            assert_int_equal(inflate(&zs, Z_FINISH), Z_STREAM_END);
            n = zs.total_out;
            inflateEnd(&zs);
            assert_int_equal(n, a->len);
            assert_memory_equal(out, a->data, a->len);
            free(out);
        }
    }
    assert_non_null(ps_ui_find("/ui/vendor/uPlot.esm.js", 23));
    assert_non_null(ps_ui_find("/ui/vendor/uPlot.min.css", 24));
    assert_null(ps_ui_find("/ui/index.htm", 13));
    assert_null(ps_ui_find("/ui/index.html2", 15));
    assert_null(ps_ui_find("/ui/", 4));
    assert_null(ps_ui_find("", 0));
    assert_null(ps_ui_find("/ui/package.json", 16));
    /* a prefix of the path given, not NUL-terminated */
    assert_non_null(ps_ui_find("/ui/index.html?x", 14));

    size_t n;
    uint8_t *want = ps_test_read_path(PS_SOURCE_DIR "/web/ui/index.html", &n);
    const ps_ui_asset_t *a = ps_ui_find("/ui/index.html", 14);
    assert_non_null(a);
    assert_string_equal(a->content_type, "text/html; charset=utf-8");
    assert_int_equal(a->len, n);
    assert_memory_equal(a->data, want, n);
    free(want);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_accept_encoding),
        cmocka_unit_test(test_if_none_match),
        cmocka_unit_test(test_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
