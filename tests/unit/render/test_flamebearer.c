/*
 * test_flamebearer.c - unit tests for src/render/flamebearer.c: the exact JSON of a hand-built flame
 * graph (single and diff, with and without timeline, names that need escaping, zero ticks left
 * out as Go's omitempty does), Pyroscope's metadata rules for every sample type it names, and the
 * real Go CPU profile $PS_TESTDATA/pprof/go/cpu-01.pb.gz: the flamebearer's names, levels, numTicks
 * and maxSelf are ps_flamegraph_json's names, levels, total and max_self, numTicks the pprof total.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include <jansson.h>

#include "proto/pprof.h"
#include "render/render.h"

static void assert_json(const ps_flamegraph_t *fg, const ps_fb_meta_t *m, const ps_fb_timeline_t *tl,
                        const char *want)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_flamebearer_json(fg, m, tl, NULL, 0, &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((const char *)b.data, want);
    ps_buf_dispose(&b);
}

static void test_single(void **state)
{
    (void)state;
    const char *names[] = {"total", "main", "x\"y"};
    int64_t l0[] = {0, 10, 0, 0}, l1[] = {0, 10, 4, 1}, l2[] = {0, 6, 6, 2};
    ps_fg_level_t levels[] = {{4, l0}, {4, l1}, {4, l2}};
    ps_flamegraph_t fg = {.nnames = 3, .names = names, .nlevels = 3, .levels = levels, .total = 10, .max_self = 6};
    ps_fb_meta_t m;
    ps_flamebearer_meta("cpu", "nanoseconds", "gospy", &m);
    uint64_t samples[] = {3, 0, 7};
    ps_fb_timeline_t tl = {1796022000, 15, 3, samples};
    assert_json(&fg, &m, &tl,
                "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"x\\\"y\"],\"levels\":[[0,10,0,0],"
                "[0,10,4,1],[0,6,6,2]],\"numTicks\":10,\"maxSelf\":6},\"metadata\":{\"format\":\"single\","
                "\"spyName\":\"gospy\",\"sampleRate\":1000000000,\"units\":\"samples\",\"name\":\"cpu\"},"
                "\"timeline\":{\"startTime\":1796022000,\"samples\":[3,0,7],\"durationDelta\":15,\"watermarks\":null},"
                "\"groups\":null,\"heatmap\":null}\n");
    /* no timeline; an empty one */
    ps_flamebearer_meta("inuse_space", "bytes", NULL, &m);
    assert_json(&fg, &m, NULL,
                "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"x\\\"y\"],\"levels\":[[0,10,0,0],"
                "[0,10,4,1],[0,6,6,2]],\"numTicks\":10,\"maxSelf\":6},\"metadata\":{\"format\":\"single\","
                "\"spyName\":\"\",\"sampleRate\":100,\"units\":\"bytes\",\"name\":\"inuse_space\"},"
                "\"timeline\":null,\"groups\":null,\"heatmap\":null}\n");
    ps_fb_timeline_t empty = {100, 3600, 0, NULL};
    ps_flamegraph_t none = {.nnames = 1, .names = names, .nlevels = 1, .levels = levels};
    int64_t z[] = {0, 0, 0, 0};
    ps_fg_level_t zl = {4, z};
    none.levels = &zl;
    assert_json(&none, &m, &empty,
                "{\"version\":1,\"flamebearer\":{\"names\":[\"total\"],\"levels\":[[0,0,0,0]],\"numTicks\":0,"
                "\"maxSelf\":0},\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":100,\"units\":"
                "\"bytes\",\"name\":\"inuse_space\"},\"timeline\":{\"startTime\":100,\"samples\":[],\"durationDelta\":"
                "3600,\"watermarks\":null},\"groups\":null,\"heatmap\":null}\n");
}

static void test_groups(void **state)
{
    (void)state;
    const char *names[] = {"total"};
    int64_t l0[] = {0, 3, 3, 0};
    ps_fg_level_t levels[] = {{4, l0}};
    ps_flamegraph_t fg = {.nnames = 1, .names = names, .nlevels = 1, .levels = levels, .total = 3, .max_self = 3};
    ps_fb_meta_t m;
    ps_flamebearer_meta("wall", "nanoseconds", NULL, &m);
    uint64_t a[] = {1, 0}, b[] = {0, 2}, all[] = {1, 2};
    ps_fb_timeline_t tl = {60, 15, 2, all};
    ps_fb_group_t g[] = {{"*", {60, 15, 2, a}}, {"eu\"1", {60, 15, 2, b}}};
    const char *head = "{\"version\":1,\"flamebearer\":{\"names\":[\"total\"],\"levels\":[[0,3,3,0]],\"numTicks\":3,"
                       "\"maxSelf\":3},\"metadata\":{\"format\":\"single\",\"spyName\":\"\",\"sampleRate\":100,"
                       "\"units\":\"nanoseconds\",\"name\":\"wall\"},\"timeline\":{\"startTime\":60,\"samples\":[1,2],"
                       "\"durationDelta\":15,\"watermarks\":null},\"groups\":";
    char want[1024];
    snprintf(want, sizeof(want),
             "%s{\"*\":{\"startTime\":60,\"samples\":[1,0],\"durationDelta\":15,\"watermarks\":null},\"eu\\\"1\":"
             "{\"startTime\":60,\"samples\":[0,2],\"durationDelta\":15,\"watermarks\":null}},\"heatmap\":null}\n",
             head);
    ps_buf_t buf = PS_BUF_INIT;
    ps_flamebearer_json(&fg, &m, &tl, g, 2, &buf);
    ps_buf_putc(&buf, 0);
    assert_string_equal((const char *)buf.data, want);
    /* groupBy of an empty selection: an empty object */
    ps_buf_reset(&buf);
    ps_flamebearer_json(&fg, &m, &tl, g, 0, &buf);
    ps_buf_putc(&buf, 0);
    snprintf(want, sizeof(want), "%s{},\"heatmap\":null}\n", head);
    assert_string_equal((const char *)buf.data, want);
    ps_buf_dispose(&buf);
}

static void test_diff(void **state)
{
    (void)state;
    const char *names[] = {"total", "f"};
    int64_t l0[] = {0, 5, 0, 0, 7, 0, 0}, l1[] = {0, 5, 5, 0, 7, 7, 1};
    ps_fg_level_t levels[] = {{7, l0}, {7, l1}};
    ps_flamegraph_t fg = {.nnames = 2, .names = names, .nlevels = 2, .levels = levels, .total = 12, .max_self = 7,
                          .diff = 1, .left_ticks = 5, .right_ticks = 7};
    ps_fb_meta_t m;
    ps_flamebearer_meta("alloc_objects", "count", "", &m);
    const char *head = "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"f\"],\"levels\":[[0,5,0,0,7,0,0],"
                       "[0,5,5,0,7,7,1]],\"numTicks\":12,\"maxSelf\":7},\"metadata\":{\"format\":\"double\","
                       "\"spyName\":\"\",\"sampleRate\":100,\"units\":\"objects\",\"name\":\"alloc_objects\"},"
                       "\"timeline\":null,\"groups\":null,\"heatmap\":null";
    char want[1024];
    snprintf(want, sizeof(want), "%s,\"leftTicks\":5,\"rightTicks\":7}\n", head);
    assert_json(&fg, &m, NULL, want);
    /* Go's omitempty: a zero side is left out */
    fg.left_ticks = 0;
    snprintf(want, sizeof(want), "%s,\"rightTicks\":7}\n", head);
    assert_json(&fg, &m, NULL, want);
    fg.right_ticks = 0;
    snprintf(want, sizeof(want), "%s}\n", head);
    assert_json(&fg, &m, NULL, want);
}

static void test_meta_rules(void **state)
{
    (void)state;
    static const struct {
        const char *type, *unit, *units;
        uint32_t rate;
    } cases[] = {
        {"cpu", "nanoseconds", "samples", 1000000000u},
        {"samples", "count", "objects", 100},
        {"inuse_objects", "count", "objects", 100},
        {"alloc_objects", "count", "objects", 100},
        {"goroutine", "count", "objects", 100},
        {"inuse_space", "bytes", "bytes", 100},
        {"alloc_space", "bytes", "bytes", 100},
        {"wall", "nanoseconds", "nanoseconds", 100},
        {"contentions", "count", "count", 100},
        {"delay", "nanoseconds", "nanoseconds", 100},
        {"goroutines", "count", "count", 100}, /* not Pyroscope's "goroutine": the unit as it is */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_fb_meta_t m;
        ps_flamebearer_meta(cases[i].type, cases[i].unit, "nodespy", &m);
        assert_string_equal(m.units, cases[i].units);
        assert_int_equal(m.sample_rate, cases[i].rate);
        assert_string_equal(m.name, cases[i].type);
        assert_string_equal(m.spy_name, "nodespy");
    }
}

static void test_go_cpu(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err = {0};
    assert_int_equal(ps_pprof_decode(raw, n, &lim, &a, &p, &err), 0);
    assert_int_equal(p.ntypes, 2);
    ps_flamegraph_t fg;
    assert_int_equal(ps_flamegraph_build(&p, 1, 0, 0, &a, &fg, &err), 0);
    ps_buf_t own = PS_BUF_INIT, fb = PS_BUF_INIT;
    ps_flamegraph_json(&fg, &own);
    ps_fb_meta_t m;
    ps_flamebearer_meta("cpu", "nanoseconds", NULL, &m);
    ps_flamebearer_json(&fg, &m, NULL, NULL, 0, &fb);
    json_error_t je;
    json_t *jo = json_loadb((const char *)own.data, own.len, 0, &je), *jf = json_loadb((const char *)fb.data, fb.len, 0, &je);
    assert_non_null(jo);
    assert_non_null(jf);
    json_t *f = json_object_get(jf, "flamebearer");
    assert_true(json_equal(json_object_get(f, "names"), json_object_get(jo, "names")));
    assert_true(json_equal(json_object_get(f, "levels"), json_object_get(jo, "levels")));
    assert_int_equal(json_integer_value(json_object_get(f, "numTicks")), 2980000000ll); /* go tool pprof -top */
    assert_int_equal(json_integer_value(json_object_get(f, "maxSelf")), json_integer_value(json_object_get(jo, "max_self")));
    assert_string_equal(json_string_value(json_object_get(json_object_get(jf, "metadata"), "units")), "samples");
    json_decref(jo);
    json_decref(jf);
    ps_buf_dispose(&own);
    ps_buf_dispose(&fb);
    ps_arena_dispose(&a);
    free(raw);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_single),
        cmocka_unit_test(test_groups),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_meta_rules),
        cmocka_unit_test(test_go_cpu),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
