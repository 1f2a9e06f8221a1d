/*
 * test_querier.c - unit tests for src/query/querier.c, Pyroscope's querier semantics: profile
 * types in a range (Grafana's health check range 1000..4000 ms has none), label_selector parsing
 * with the profile type added (`{}` taken, errors with the field and position), series, label
 * names and values of profile series, SelectSeries (steps right-closed, the first one
 * [start - step, start], SUM and AVERAGE, group_by, the top-N limit, the point limit) and the
 * merge with exact totals from $PS_TESTDATA/pprof's README.
 *
 * The store (T = 1,800,000,000 s), as in test_query.c:
 *   process_cpu (2 types) {job="api",instance="a"} cpu-01 @T+10, cpu-02 @T+20
 *                         {job="api",instance="b"} cpu-03 @T+15
 *                         {job="batch"}            cpu-04 @T+30
 *   memory (4 types)      {job="api",instance="a"} heap-01 @T+30
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../testutil.h"
#include "storefix.h"

#include "core/encode.h"
#include "core/timeutil.h"
#include "query/querier.h"
#include "query/query.h"

#define T0 1800000000LL
#define MS(s) ((int64_t)(s) * 1000)
#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"

static char *dir;
static ps_store_t *store;

static int setup(void **state)
{
    (void)state;
    store = ps_test_store_open("/tmp/ps_test_querier_XXXXXX", &dir);
    ps_test_ingest_cpu4(store, T0);
    ps_test_ingest(store, "go/heap-01.pb.gz", "{job=\"api\",instance=\"a\"}", T0 + 30);
    /* a float series (remote_write) named like a profile type id: no profile type */
    ps_label_pair_t lp[2] = {{"__name__", "a:b:c:d:e", 8, 9}, {"job", "api", 3, 3}};
    ps_labels_t ls = {2, lp, 0};
    ps_float_sample_t fs[1] = {{MS(T0 + 15), 1.5}};
    ps_float_append_t fa = {.labels = &ls, .samples = fs, .nsamples = 1};
    ps_float_append_t *fas[1] = {&fa};
    ps_err_t err;
    if (ps_store_write(ps_test_writer(store), NULL, 0, fas, 1, NULL, 0, &err) != 0 || fa.status != 0 || fa.accepted != 1)
        fail_msg("float series: %s", err.msg);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_test_store_close(store, dir);
    return 0;
}

typedef ps_test_rfx_t fx_t;
static void fx_begin(fx_t *f) { ps_test_rfx_begin(f, store); }
static void fx_end(fx_t *f) { ps_test_rfx_end(f); }

static void range_ns(fx_t *f, int64_t s_ms, int64_t e_ms, int64_t *lo, int64_t *hi)
{
    if (ps_querier_range(s_ms, e_ms, lo, hi, &f->err) != 0)
        fail_msg("range: %s", f->err.msg);
}

static void test_profile_types(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    int64_t lo, hi;
    ps_strlist_t l;
    range_ns(&f, 0, 0, &lo, &hi); /* all time */
    assert_int_equal(ps_querier_profile_types(f.r, lo, hi, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 6);
    assert_string_equal(l.v[0], "memory:alloc_objects:count:space:bytes");
    assert_string_equal(l.v[3], "memory:inuse_space:bytes:space:bytes");
    assert_string_equal(l.v[4], CPU);
    assert_string_equal(l.v[5], "process_cpu:samples:count:cpu:nanoseconds:delta");
    range_ns(&f, MS(T0 + 10), MS(T0 + 20), &lo, &hi);
    assert_int_equal(ps_querier_profile_types(f.r, lo, hi, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], CPU);
    range_ns(&f, 1000, 4000, &lo, &hi); /* Grafana's health check */
    assert_int_equal(ps_querier_profile_types(f.r, lo, hi, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 0);
    /* a range ends at the end of its last ms; start > end is refused */
    range_ns(&f, MS(T0 + 30), MS(T0 + 30), &lo, &hi);
    assert_int_equal(lo, MS(T0 + 30) * 1000000);
    assert_int_equal(hi, MS(T0 + 30) * 1000000 + 999999);
    assert_int_equal(ps_querier_range(5, 4, &lo, &hi, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "start (5 ms) is after end (4 ms)");
    assert_int_equal(ps_querier_range(0, INT64_MAX, &lo, &hi, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "end (9223372036854775807 ms) is out of range (ms since 1970 within +-9223372036853)");
    fx_end(&f);
}

static void test_selector(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_selector_t sel;
    assert_int_equal(ps_querier_selector(CPU, "{}", "label_selector", &f.a, &sel, &f.err), 0);
    assert_int_equal(sel.n, 1);
    assert_string_equal(sel.m[0].name, "__name__");
    assert_string_equal(sel.m[0].value, CPU);
    assert_int_equal(ps_querier_selector(CPU, "", "label_selector", &f.a, &sel, &f.err), 0);
    assert_int_equal(sel.n, 1);
    assert_int_equal(ps_querier_selector(CPU, "{job=~\".*\", instance=\"a\"}", "label_selector", &f.a, &sel, &f.err), 0);
    assert_int_equal(sel.n, 3);
    assert_string_equal(sel.m[2].name, "instance");
    ps_selector_dispose(&sel);
    /* Grafana's label editor: {__profile_type__="<id>", ...} */
    assert_int_equal(ps_querier_selector(NULL, "{__profile_type__=\"" CPU "\", job=\"api\"}", "matchers[0]", &f.a, &sel,
                                         &f.err), 0);
    assert_int_equal(sel.n, 2);
    assert_string_equal(sel.m[0].name, "__name__");
    assert_string_equal(sel.m[0].value, CPU);
    assert_int_equal(ps_querier_selector(CPU, "{job=\"api\"", "label_selector", &f.a, &sel, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "label_selector: 1:11: parse error: unexpected end of input inside braces");
    assert_int_equal(f.err.pos, 10);
    assert_int_equal(ps_querier_selector("cpu", "{}", "label_selector", &f.a, &sel, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg,
                        "profile_typeID: \"cpu\" is not a profile type id "
                        "(name:sample_type:sample_unit:period_type:period_unit[:delta]; ProfileTypes lists them)");
    fx_end(&f);
}

static void test_series_and_labels(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    int64_t lo, hi;
    ps_selector_t sel[2];
    ps_series_set_t set;
    ps_strlist_t l;
    range_ns(&f, 0, 0, &lo, &hi);
    assert_int_equal(ps_querier_selector(NULL, "{}", "matchers[0]", &f.a, &sel[0], &f.err), 0);
    assert_int_equal(ps_querier_series(f.r, sel, 1, lo, hi, 100, &f.a, &set, &f.err), 0);
    assert_int_equal(set.n, 10); /* 3 x 2 cpu + 4 heap */
    ps_querier_labels(&set, NULL, &f.a, &l);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0], "__name__");
    assert_string_equal(l.v[1], "instance");
    assert_string_equal(l.v[2], "job");
    assert_int_equal(ps_querier_series(f.r, sel, 1, lo, hi, 9, &f.a, &set, &f.err), PS_ELIMIT);
    /* matchers that all match "" walk every series */
    assert_int_equal(ps_querier_selector(NULL, "{instance=\"\"}", "matchers[0]", &f.a, &sel[0], &f.err), 0);
    assert_int_equal(ps_querier_series(f.r, sel, 1, lo, hi, 100, &f.a, &set, &f.err), 0);
    assert_int_equal(set.n, 2); /* batch's cpu */
    /* in a range, a union */
    range_ns(&f, MS(T0 + 12), MS(T0 + 30), &lo, &hi);
    assert_int_equal(ps_querier_selector(NULL, "{job=\"batch\"}", "matchers[0]", &f.a, &sel[0], &f.err), 0);
    assert_int_equal(ps_querier_selector(CPU, "{instance=~\"a|b\"}", "matchers[1]", &f.a, &sel[1], &f.err), 0);
    assert_int_equal(ps_querier_series(f.r, sel, 2, lo, hi, 100, &f.a, &set, &f.err), 0);
    assert_int_equal(set.n, 4); /* batch's 2, a's and b's cpu */
    ps_querier_labels(&set, "instance", &f.a, &l);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "a");
    assert_string_equal(l.v[1], "b");
    ps_labels_t *sets;
    uint32_t n;
    const char *names[] = {"job"};
    ps_querier_label_sets(&set, names, 1, &f.a, &sets, &n);
    assert_int_equal(n, 2);
    assert_string_equal(ps_labels_value(&sets[0], "job"), "api");
    assert_int_equal(sets[0].n, 1);
    assert_string_equal(ps_labels_value(&sets[1], "job"), "batch");
    ps_querier_label_sets(&set, NULL, 0, &f.a, &sets, &n);
    assert_int_equal(n, 4);
    assert_string_equal(ps_labels_value(&sets[0], "__name__"), CPU);
    assert_string_equal(ps_labels_value(&sets[0], "instance"), "a");
    ps_selector_dispose(&sel[1]);
    fx_end(&f);
}

static void join(const ps_strlist_t *l, char *out, size_t cap)
{
    size_t k = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < l->n && k < cap; i++)
        k += (size_t)snprintf(out + k, cap - k, "%s,", l->v[i]);
}

/* LabelNames/LabelValues (ps_querier_label_list, from the label index's profile times where it
 * can) answer what the selected series' labels answer, the float series sharing job="api" never
 * listed; the label calls take no series limit */
static void test_label_list(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    static const char *const sels[] = {NULL, "{}", "{__profile_type__=\"" CPU "\"}",
                                       "{__profile_type__=\"memory:inuse_space:bytes:space:bytes\"}",
                                       "{__profile_type__=\"a:b:c:d:e\"}", "{job=\"api\"}", "{instance=\"\"}"};
    static const char *const names[] = {NULL, "job", "instance", "__name__", "__profile_type__", "absent"};
    static const int64_t ranges[][2] = {{0, 0}, {MS(T0 + 10), MS(T0 + 10)}, {MS(T0 + 12), MS(T0 + 30)},
                                        {MS(T0 + 31), MS(T0 + 40)}, {MS(T0 + 15), MS(T0 + 15)},
                                        {MS(T0 - 3600), MS(T0 + 3600)}};
    int listed = 0;
    for (size_t i = 0; i < sizeof(sels) / sizeof(sels[0]); i++) {
        ps_selector_t sel;
        if (sels[i])
            assert_int_equal(ps_querier_selector(NULL, sels[i], "matchers[0]", &f.a, &sel, &f.err), 0);
        uint32_t nsel = sels[i] ? 1 : 0;
        for (size_t k = 0; k < sizeof(ranges) / sizeof(ranges[0]); k++) {
            int64_t lo, hi;
            range_ns(&f, ranges[k][0], ranges[k][1], &lo, &hi);
            for (size_t j = 0; j < sizeof(names) / sizeof(names[0]); j++) {
                ps_series_set_t set;
                ps_strlist_t want, got;
                assert_int_equal(ps_querier_series(f.r, &sel, nsel, lo, hi, 100, &f.a, &set, &f.err), 0);
                ps_querier_labels(&set, names[j], &f.a, &want);
                if (ps_querier_label_list(f.r, names[j], &sel, nsel, lo, hi, &f.a, &got, &f.err) != 0)
                    fail_msg("%s %s [%zu]: %s", sels[i] ? sels[i] : "none", names[j] ? names[j] : "names", k, f.err.msg);
                char a[512], b[512];
                join(&want, a, sizeof(a));
                join(&got, b, sizeof(b));
                if (strcmp(a, b) != 0)
                    fail_msg("%s %s [%zu]: want %s, got %s", sels[i] ? sels[i] : "none", names[j] ? names[j] : "names",
                             k, a, b);
                assert_null(strstr(b, "a:b:c:d:e"));
                listed += want.n > 0;
            }
        }
    }
    assert_int_equal(listed, 127); /* of the 252 lists, those not empty */
    fx_end(&f);
}

/* SelectSeries of CPU over [start, end] (s), step in s, grouped by g (NULL: none) */
static int range(fx_t *f, int64_t start, int64_t end, int64_t step, const char *g, bool avg, int64_t limit,
                 ps_qseries_t **out, uint32_t *n)
{
    ps_selector_t sel;
    if (ps_querier_selector(CPU, "{}", "label_selector", &f->a, &sel, &f->err) != 0)
        fail_msg("%s", f->err.msg);
    const char *gb[1] = {g};
    ps_querier_range_q_t q = {.sel = &sel, .start = MS(start), .end = MS(end), .step = MS(step), .group_by = gb,
                              .ngroup_by = g ? 1 : 0, .average = avg, .has_limit = limit >= 0, .limit = limit,
                              .max_series = 100};
    return ps_querier_select_series(f->r, &q, &f->a, out, n, NULL, &f->err);
}

static void assert_point(const ps_qseries_t *s, uint32_t i, int64_t t_s, double v)
{
    assert_true(i < s->n);
    assert_int_equal(s->points[i].t, MS(t_s));
    assert_true(s->points[i].v == v);
}

static void test_select_series(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_qseries_t *s;
    uint32_t n;
    /* steps T, T+10, ..., T+40: (t - 10 s, t]; no group_by: one series without labels */
    assert_int_equal(range(&f, T0, T0 + 40, 10, NULL, false, -1, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].labels.n, 0);
    assert_int_equal(s[0].n, 3);
    assert_point(&s[0], 0, T0 + 10, CPU01);
    assert_point(&s[0], 1, T0 + 20, CPU03 + CPU02);
    assert_point(&s[0], 2, T0 + 30, CPU04);
    /* the first step is [start - step, start]; profiles after the last step are left out */
    assert_int_equal(range(&f, T0 + 20, T0 + 29, 10, NULL, false, -1, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].n, 1);
    assert_point(&s[0], 0, T0 + 20, CPU01 + CPU03 + CPU02);
    /* group_by job, SUM and AVERAGE */
    assert_int_equal(range(&f, T0, T0 + 40, 10, "job", false, -1, &s, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ps_labels_value(&s[0].labels, "job"), "api");
    assert_int_equal(s[0].labels.n, 1);
    assert_int_equal(s[0].n, 2);
    assert_point(&s[0], 0, T0 + 10, CPU01);
    assert_point(&s[0], 1, T0 + 20, CPU03 + CPU02);
    assert_string_equal(ps_labels_value(&s[1].labels, "job"), "batch");
    assert_point(&s[1], 0, T0 + 30, CPU04);
    assert_int_equal(range(&f, T0, T0 + 40, 10, "job", true, -1, &s, &n), 0);
    assert_point(&s[0], 1, T0 + 20, (CPU03 + CPU02) / 2);
    /* group_by instance: batch has none (labels {}), sorted first */
    assert_int_equal(range(&f, T0, T0 + 40, 10, "instance", false, -1, &s, &n), 0);
    assert_int_equal(n, 3);
    assert_int_equal(s[0].labels.n, 0);
    assert_string_equal(ps_labels_value(&s[1].labels, "instance"), "a");
    assert_string_equal(ps_labels_value(&s[2].labels, "instance"), "b");
    /* limit: by the sum of the points, ties by labels; 0 keeps all */
    assert_int_equal(range(&f, T0, T0 + 40, 10, "instance", false, 0, &s, &n), 0);
    assert_int_equal(n, 3);
    assert_string_equal(ps_labels_value(&s[0].labels, "instance"), "a"); /* 5.91e9 */
    assert_int_equal(s[1].labels.n, 0);                                  /* 2.89e9, {} < {instance="b"} */
    assert_string_equal(ps_labels_value(&s[2].labels, "instance"), "b");
    assert_int_equal(range(&f, T0, T0 + 40, 10, "instance", false, 1, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ps_labels_value(&s[0].labels, "instance"), "a");
    assert_int_equal(s[0].n, 2);
    /* nothing in range: no series */
    assert_int_equal(range(&f, T0 + 100, T0 + 200, 10, NULL, false, -1, &s, &n), 0);
    assert_int_equal(n, 0);
    /* errors */
    assert_int_equal(range(&f, T0, T0 + 40, 0, NULL, false, -1, &s, &n), PS_EINVAL);
    assert_string_equal(f.err.msg, "step must be positive (seconds; got 0 ms)");
    assert_int_equal(range(&f, T0 + 1, T0, 10, NULL, false, -1, &s, &n), PS_EINVAL);
    assert_string_equal(f.err.msg, "start (1800000001000 ms) is after end (1800000000000 ms)");
    assert_int_equal(range(&f, 0, T0, 1, NULL, false, -1, &s, &n), PS_ELIMIT);
    assert_string_equal(f.err.msg,
                        "the range has 1800000001 steps of 1000 ms, more than 4000000 points: use a larger step or a "
                        "shorter range");
    fx_end(&f);
}

static void test_merge(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_selector_t sel;
    ps_profile_sel_t ps;
    int64_t lo, hi;
    assert_int_equal(ps_querier_selector(CPU, "{job=\"api\"}", "label_selector", &f.a, &sel, &f.err), 0);
    range_ns(&f, MS(T0), MS(T0 + 60), &lo, &hi);
    assert_int_equal(ps_querier_merge(f.r, &sel, lo, hi, 100, &f.a, &ps, &f.err), 0);
    assert_int_equal(ps.ntypes, 1);
    assert_string_equal(ps.types[0], CPU);
    assert_int_equal(ps.nseries, 2);
    assert_int_equal(ps.totals[0], (int64_t)(CPU01 + CPU02 + CPU03));
    ps_profile_sel_dispose(&ps);
    /* a range of one ms holds the profile at that ms */
    range_ns(&f, MS(T0 + 15), MS(T0 + 15), &lo, &hi);
    assert_int_equal(ps_querier_merge(f.r, &sel, lo, hi, 100, &f.a, &ps, &f.err), 0);
    assert_int_equal(ps.totals[0], (int64_t)CPU03);
    ps_profile_sel_dispose(&ps);
    int64_t mn;
    assert_int_equal(ps_querier_max_nodes(false, 0, &mn, &f.err), 0);
    assert_int_equal(mn, 8192);
    assert_int_equal(ps_querier_max_nodes(true, 0, &mn, &f.err), 0);
    assert_int_equal(mn, 8192);
    assert_int_equal(ps_querier_max_nodes(true, 16384, &mn, &f.err), 0);
    assert_int_equal(mn, 16384);
    assert_int_equal(ps_querier_max_nodes(true, 1LL << 62, &mn, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "max_nodes 4611686018427387904 is out of range (1 to 1048576; 0 or absent: 8192)");
    assert_int_equal(ps_querier_max_nodes(true, -1, &mn, &f.err), PS_EINVAL);
    fx_end(&f);
}


/* ps_querier_call_site on a hand-made profile. Strings: 1 "main", 2 "a", 3 "b", 4 "c",
 * 5 "/usr/lib/libx.so", 6 "sysname"; functions 1 main, 2 a, 3 b, 4 c, 5 (no name, system name
 * "sysname"), 6 (no names); locations 1 main, 2 a, 3 {c inlined in b} (lines[0] = c),
 * 4 no lines in libx.so at 0x1010 (mapping start 0x1000, offset 0x200: "libx.so+0x210"),
 * 5 function 5, 6 function 6 at 0x77, 7 b. Samples (leaf first, value):
 *   s0 [2 1]       main > a                10
 *   s1 [3 2 1]     main > a > b > c        20
 *   s2 [4 3 2 1]   main > a > b > c > libx 40
 *   s3 [7 1]       main > b                80
 *   s4 [5 6 1]     main > 0x77 > sysname   160
 *   s5 [2 2 1]     main > a > a            320 */
static uint32_t cs_nl, cs_nf, cs_nm; /* the locations, functions and mappings left */

static int64_t cs_sum(const ps_profile_t *p)
{
    int64_t t = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        t += p->samples[i].values[0];
    return t;
}

static int64_t cs_total(const char *const *names, uint32_t n)
{
    static ps_str_t strs[] = {{"", 0}, {"main", 4}, {"a", 1}, {"b", 1}, {"c", 1}, {"/usr/lib/libx.so", 16},
                              {"sysname", 7}};
    ps_function_t fns[] = {{1, 0, 0, 0}, {2, 0, 0, 0}, {3, 0, 0, 0}, {4, 0, 0, 0}, {0, 6, 0, 0}, {0, 0, 0, 0}};
    ps_line_t l1 = {1, 0, 0}, l2 = {2, 0, 0}, l3[2] = {{4, 0, 0}, {3, 0, 0}}, l5 = {5, 0, 0}, l6 = {6, 0, 0},
              l7 = {3, 0, 0};
    ps_mapping_t maps[] = {{0x1000, 0x2000, 0x200, 5, 0, 0}};
    ps_location_t locs[] = {{0, 0x10, 0, 1, &l1}, {0, 0x20, 0, 1, &l2}, {0, 0x30, 0, 2, l3}, {1, 0x1010, 0, 0, NULL},
                            {0, 0x50, 0, 1, &l5}, {0, 0x77, 0, 1, &l6},   {0, 0x70, 0, 1, &l7}};
    uint32_t st0[] = {2, 1}, st1[] = {3, 2, 1}, st2[] = {4, 3, 2, 1}, st3[] = {7, 1}, st4[] = {5, 6, 1},
             st5[] = {2, 2, 1};
    int64_t v[] = {10, 20, 40, 80, 160, 320};
    ps_sample_t smp[] = {{2, st0, &v[0], 0, NULL}, {3, st1, &v[1], 0, NULL}, {4, st2, &v[2], 0, NULL},
                         {2, st3, &v[3], 0, NULL}, {3, st4, &v[4], 0, NULL}, {3, st5, &v[5], 0, NULL}};
    ps_profile_t p = {.nstrings = 7, .strings = strs, .ntypes = 1, .nsamples = 6, .samples = smp, .nmappings = 1,
                      .mappings = maps, .nfunctions = 6, .functions = fns, .nlocations = 7, .locations = locs};
    ps_arena_t a = PS_ARENA_INIT;
    ps_querier_call_site(&p, names, n, &a);
    for (uint32_t i = 1; i < p.nsamples; i++) /* kept in order (the values grow) */
        assert_true(p.samples[i].values > p.samples[i - 1].values);
    int64_t t = cs_sum(&p);
    cs_nl = p.nlocations, cs_nf = p.nfunctions, cs_nm = p.nmappings;
    /* the pruned, renumbered profile names the same frames: filtering it again keeps all */
    ps_querier_call_site(&p, names, n, &a);
    assert_int_equal(cs_sum(&p), t);
    assert_int_equal(p.nlocations, cs_nl);
    ps_arena_dispose(&a);
    return t;
}

static void test_call_site(void **state)
{
    (void)state;
#define CS(...) cs_total((const char *const[]){__VA_ARGS__}, sizeof((const char *const[]){__VA_ARGS__}) / sizeof(char *))
    assert_int_equal(cs_total(NULL, 0), 630);                   /* no call site: everything */
    assert_true(cs_nl == 7 && cs_nf == 6 && cs_nm == 1);
    assert_int_equal(CS("main"), 630);
    assert_int_equal(CS("main", "a"), 10 + 20 + 40 + 320);
    assert_int_equal(CS("main", "a", "b"), 20 + 40);           /* ends inside an inlined location */
    assert_int_equal(CS("main", "a", "b", "c"), 20 + 40);
    assert_int_equal(CS("main", "a", "b", "c", "libx.so+0x210"), 40);
    assert_true(cs_nl == 4 && cs_nf == 4 && cs_nm == 1);
    assert_int_equal(CS("main", "a", "b", "c", "0x1010"), 0); /* a mapped location is named by its file */
    assert_int_equal(CS("main", "a", "c"), 0);                 /* b is a frame of its own */
    assert_int_equal(CS("main", "b"), 80);
    assert_true(cs_nl == 2 && cs_nf == 2 && cs_nm == 0); /* what s3 refers to, nothing else */
    assert_int_equal(CS("main", "0x77", "sysname"), 160);      /* unnamed function; system name */
    assert_int_equal(CS("main", "a", "a"), 320);               /* a name twice */
    assert_int_equal(CS("a"), 0);                              /* a prefix from the root only */
    assert_int_equal(CS("main", "nosuch"), 0);                 /* unknown: empty, as Pyroscope */
    assert_true(cs_nl == 0 && cs_nf == 0 && cs_nm == 0);
    assert_int_equal(CS(""), 0);
    assert_int_equal(CS("mai"), 0);
    assert_int_equal(CS("main", "a", "b", "c", "libx.so+0x210", "a"), 0); /* deeper than the stack */
    /* 1,000 frames: nothing, quickly */
    const char **deep = malloc(1000 * sizeof(char *));
    for (int i = 0; i < 1000; i++)
        deep[i] = i % 2 ? "a" : "main";
    assert_int_equal(cs_total(deep, 1000), 0);
    free(deep);
#undef CS
}

static void test_heatmap_buckets(void **state)
{
    (void)state;
    int64_t y[PS_QUERIER_HEATMAP_BUCKETS];
    /* 0..100: 20 buckets of 5 */
    ps_querier_heatmap_ybuckets(0, 100, y);
    for (int i = 0; i < PS_QUERIER_HEATMAP_BUCKETS; i++)
        assert_int_equal(y[i], 5 * i);
    assert_int_equal(ps_querier_heatmap_ybucket(0, y), 0);
    assert_int_equal(ps_querier_heatmap_ybucket(4, y), 0);
    assert_int_equal(ps_querier_heatmap_ybucket(5, y), 1);
    assert_int_equal(ps_querier_heatmap_ybucket(99, y), 19);
    assert_int_equal(ps_querier_heatmap_ybucket(100, y), 19); /* the largest: the last bucket */
    assert_int_equal(ps_querier_heatmap_ybucket(1000, y), 19);
    assert_int_equal(ps_querier_heatmap_ybucket(-1, y), -1);
    /* 10..17: width 0.35, truncated: starts 10,10,10,11,11,11,12,12,12,13,13,13,14,14,14,15,15,15,16,16 */
    ps_querier_heatmap_ybuckets(10, 17, y);
    int64_t want[PS_QUERIER_HEATMAP_BUCKETS] = {10, 10, 10, 11, 11, 11, 12, 12, 12, 13,
                                                13, 13, 14, 14, 14, 15, 15, 15, 16, 16};
    for (int i = 0; i < PS_QUERIER_HEATMAP_BUCKETS; i++)
        assert_int_equal(y[i], want[i]);
    assert_int_equal(ps_querier_heatmap_ybucket(10, y), 2); /* buckets 0 and 1 are [10, 10) */
    assert_int_equal(ps_querier_heatmap_ybucket(16, y), 19);
    assert_int_equal(ps_querier_heatmap_ybucket(17, y), 19);
    /* one value v: [v, v + 1), every bucket starts at v, the last holds it */
    ps_querier_heatmap_ybuckets(7, 7, y);
    assert_int_equal(y[0], 7);
    assert_int_equal(y[19], 7);
    assert_int_equal(ps_querier_heatmap_ybucket(7, y), 19);
    /* the ends of int64: no overflow, every value in a bucket */
    ps_querier_heatmap_ybuckets(INT64_MIN, INT64_MAX, y);
    assert_true(y[0] == INT64_MIN);
    assert_true(y[10] > -1000000000000000LL && y[10] < 1000000000000000LL);
    assert_int_equal(ps_querier_heatmap_ybucket(INT64_MIN, y), 0);
    assert_int_equal(ps_querier_heatmap_ybucket(INT64_MAX, y), 19);
    ps_querier_heatmap_ybuckets(INT64_MAX, INT64_MAX, y);
    assert_int_equal(ps_querier_heatmap_ybucket(INT64_MAX, y), 19);
    /* slots: (start + (k-1) step, start + k step], all at or before start in slot 0 */
    assert_int_equal(ps_querier_heatmap_slot(1000, 1000, 10), 0);
    assert_int_equal(ps_querier_heatmap_slot(990, 1000, 10), 0);
    assert_int_equal(ps_querier_heatmap_slot(1001, 1000, 10), 1);
    assert_int_equal(ps_querier_heatmap_slot(1010, 1000, 10), 1);
    assert_int_equal(ps_querier_heatmap_slot(1011, 1000, 10), 2);
}

static int heatmap(fx_t *f, int64_t start, int64_t end, int64_t step, const char *g, bool ex, int64_t limit,
                   ps_qr_heatmap_series_t **out, uint32_t *n)
{
    ps_selector_t sel;
    if (ps_querier_selector(CPU, "{}", "label_selector", &f->a, &sel, &f->err) != 0)
        fail_msg("%s", f->err.msg);
    const char *gb[1] = {g};
    ps_querier_heatmap_q_t q = {.sel = &sel, .start = MS(start), .end = MS(end), .step = MS(step), .group_by = gb,
                                .ngroup_by = g ? 1 : 0, .exemplars = ex, .limit = limit, .max_series = 100};
    return ps_querier_select_heatmap(f->r, &q, &f->a, out, n, &f->err);
}

static void assert_uuid(uint64_t sid, int64_t ts)
{
    uint8_t u[16], v[16];
    char t[PS_PROFILE_ID_LEN + 1];
    uint64_t s2;
    int64_t t2;
    assert_true(ps_profile_uuid_make(sid, ts, u));
    assert_true(ps_profile_uuid_split(u, &s2, &t2));
    assert_true(s2 == sid);
    assert_true(t2 == ts);
    ps_profile_uuid_text(u, t);
    assert_int_equal(strlen(t), 36);
    assert_int_equal(t[14], '8');                   /* version 8 */
    assert_true(strchr("89ab", t[19]) != NULL);     /* RFC 9562's variant */
    assert_int_equal(ps_uuid_scan(t, 36, v), 0);
    assert_memory_equal(u, v, 16);
}

/* ids: the layout (docs/api.md "Profile ids"), the text forms read, ids of stored profiles */
/* an exemplar's profile id as text (SelectSeries' carry it as its bytes) */
static const char *ex_id(ps_arena_t *a, const ps_qr_exemplar_t *e)
{
    assert_true(e->has_uuid);
    char *t = ps_arena_alloc(a, PS_PROFILE_ID_LEN + 1);
    ps_profile_uuid_text(e->uuid, t);
    return t;
}

static void test_profile_ids(void **state)
{
    (void)state;
    uint8_t u[16], v[16];
    char t[PS_PROFILE_ID_LEN + 1];
    /* series 2 at 2026-11-30T07:00:07Z (the integration tests' cpu-01) */
    assert_true(ps_profile_uuid_make(2, 1796022007000000000LL, u));
    ps_profile_uuid_text(u, t);
    assert_string_equal(t, "18ecc07f-e804-8e60-8000-000000000002");
    assert_true(ps_profile_uuid_make(PS_PROFILE_ID_MAX_SID, -1, u));
    ps_profile_uuid_text(u, t);
    assert_string_equal(t, "ffffffff-ffff-8fff-bfff-ffffffffffff");
    assert_true(ps_profile_uuid_make(0, 0, u));
    ps_profile_uuid_text(u, t);
    assert_string_equal(t, "00000000-0000-8000-8000-000000000000");
    assert_false(ps_profile_uuid_make(PS_PROFILE_ID_MAX_SID + 1, 0, u));
    assert_uuid(0, INT64_MIN);
    assert_uuid(PS_PROFILE_ID_MAX_SID, INT64_MAX);
    assert_uuid(123456789, 1796022007123456789LL);
    assert_uuid(1ULL << 56, -1796022007123456789LL);
    /* the forms Go's uuid.Parse reads */
    assert_int_equal(ps_uuid_scan("18ecc07f-e804-8e60-8000-000000000002", 36, u), 0);
    const char *same[] = {"18ECC07F-E804-8E60-8000-000000000002", "{18ecc07f-e804-8e60-8000-000000000002}",
                          "urn:uuid:18ecc07f-e804-8e60-8000-000000000002", "URN:UUID:18ecc07f-e804-8e60-8000-000000000002",
                          "18ecc07fe8048e608000000000000002"};
    for (size_t i = 0; i < sizeof(same) / sizeof(same[0]); i++) {
        assert_int_equal(ps_uuid_scan(same[i], strlen(same[i]), v), 0);
        assert_memory_equal(u, v, 16);
    }
    const char *bad[] = {"", "18ecc07f-e804-8e60-8000-00000000000", "18ecc07f-e804-8e60-8000-0000000000023",
                         "18ecc07fe-804-8e60-8000-000000000002", "18ecc07f-e804-8e60-8000-00000000000g",
                         "{18ecc07f-e804-8e60-8000-000000000002]", "18ecc07fe8048e60800000000000000",
                         "urn:uuix:18ecc07f-e804-8e60-8000-000000000002"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(ps_uuid_scan(bad[i], strlen(bad[i]), v), -1);
    /* a UUIDv4 is not a derived id */
    uint64_t sid;
    int64_t ts;
    assert_int_equal(ps_uuid_scan("7c9e6679-7425-40de-944b-e07fc1f90ae7", 36, v), 0);
    assert_false(ps_profile_uuid_split(v, &sid, &ts));

    /* against the store: every profile's id reads back as it; others are refused naming them */
    fx_t f;
    fx_begin(&f);
    ps_selector_t sel;
    if (ps_querier_selector(CPU, "{}", "label_selector", &f.a, &sel, &f.err) != 0)
        fail_msg("%s", f.err.msg);
    ps_series_set_t set;
    ps_profile_entry_t *e;
    uint32_t n, k;
    assert_int_equal(ps_query_profile_list(f.r, &sel, MS(T0) * 1000000, MS(T0 + 30) * 1000000, 100, 10, &f.a, &set, &e,
                                           &n, &f.err), 0);
    assert_int_equal(n, 4); /* by time: cpu-01 @10, cpu-03 @15, cpu-02 @20, cpu-04 @30 */
    int64_t want_t[4] = {10, 15, 20, 30}, want_v[4] = {CPU01, CPU03, CPU02, CPU04};
    for (uint32_t i = 0; i < n; i++) {
        ps_profile_ref_t ref;
        assert_int_equal(e[i].ref.ts, (T0 + want_t[i]) * 1000000000LL);
        assert_int_equal(e[i].total, want_v[i]);
        assert_int_equal(ps_query_profile_id(f.r, e[i].ref.sid, e[i].ref.ts, t), 36);
        assert_int_equal(ps_query_profile_id_parse(f.r, t, 36, "id", &ref, 1, &k, &f.err), 0);
        assert_int_equal(k, 1);
        assert_true(ref.sid == e[i].ref.sid && ref.ts == e[i].ref.ts);
    }
    assert_int_equal(ps_query_profile_list(f.r, &sel, MS(T0) * 1000000, MS(T0 + 30) * 1000000, 100, 3, &f.a, &set, &e,
                                           &n, &f.err), PS_ELIMIT);
    ps_profile_ref_t ref;
    assert_int_equal(ps_query_profile_id_parse(f.r, "7c9e6679-7425-40de-944b-e07fc1f90ae7", 36, "id", &ref, 1, &k, &f.err),
                     PS_EINVAL);
    assert_string_equal(f.err.msg, "id: unknown profile id \"7c9e6679-7425-40de-944b-e07fc1f90ae7\" (no stored profile has it)");
    /* ours in shape: series 1 at 0 ns, no profile */
    assert_int_equal(ps_query_profile_id_parse(f.r, "00000000-0000-8000-8000-000000000001", 36, "id", &ref, 1, &k, &f.err),
                     PS_EINVAL);
    assert_string_equal(f.err.msg, "id: unknown profile id \"00000000-0000-8000-8000-000000000001\" (no stored profile has it)");
    assert_int_equal(ps_query_profile_id_parse(f.r, "zz", 2, "profile_id_selector[2]", &ref, 1, &k, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "profile_id_selector[2]: \"zz\" is not a profile id (a UUID, "
                                   "xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as exemplars give them)");

    /* SelectSeries' exemplars: step T+20 sums cpu-03 and cpu-02; cpu-02 is the larger */
    const char *gb[1] = {"job"};
    ps_querier_range_q_t q = {.sel = &sel, .start = MS(T0), .end = MS(T0 + 40), .step = MS(10), .group_by = gb,
                              .ngroup_by = 1, .has_limit = false, .max_series = 100, .exemplars = true};
    ps_qseries_t *s;
    ps_qr_exemplar_t **ex;
    assert_int_equal(ps_querier_select_series(f.r, &q, &f.a, &s, &n, &ex, &f.err), 0);
    assert_int_equal(n, 2);
    assert_int_equal(s[0].n, 2);
    assert_true(ex[0][0].t == MS(T0 + 10) && ex[0][0].value == CPU01);
    assert_true(ex[0][1].t == MS(T0 + 20) && ex[0][1].value == CPU02);
    assert_true(s[0].points[1].v == CPU02 + CPU03);
    assert_int_equal(ex[0][1].labels.n, 1); /* without __name__ and job */
    assert_string_equal(ps_labels_value(&ex[0][1].labels, "instance"), "a");
    assert_true(ex[1][0].t == MS(T0 + 30) && ex[1][0].value == CPU04);
    assert_int_equal(ex[1][0].labels.n, 0);
    {
        ps_profile_ref_t ref;
        assert_int_equal(ps_query_profile_id_parse(f.r, ex_id(&f.a, &ex[0][1]), 36, "id", &ref, 1, &k, &f.err), 0);
        assert_true(ref.ts == (T0 + 20) * 1000000000LL);
    }
    /* merge by ids: cpu-01 and cpu-04 of the listed, within the range; listed twice counts once */
    const char *ids[4] = {ex_id(&f.a, &ex[0][0]), ex_id(&f.a, &ex[1][0]), ex_id(&f.a, &ex[0][0]),
                          ex_id(&f.a, &ex[0][1])};
    ps_profile_ref_t *refs;
    uint32_t nrefs;
    assert_int_equal(ps_querier_profile_ids(f.r, ids, 4, "profile_id_selector", &f.a, &refs, &nrefs, &f.err), 0);
    assert_int_equal(nrefs, 3);
    int64_t lo, hi;
    range_ns(&f, MS(T0), MS(T0 + 30), &lo, &hi);
    ps_profile_sel_t ps;
    assert_int_equal(ps_querier_merge_ids(f.r, &sel, lo, hi, 100, refs, nrefs, &f.a, &ps, &f.err), 0);
    assert_int_equal(ps.totals[0], CPU01 + CPU04 + CPU02);
    ps_profile_sel_dispose(&ps);
    range_ns(&f, MS(T0 + 11), MS(T0 + 30), &lo, &hi); /* cpu-01 is before the range */
    assert_int_equal(ps_querier_merge_ids(f.r, &sel, lo, hi, 100, refs, nrefs, &f.a, &ps, &f.err), 0);
    assert_int_equal(ps.totals[0], CPU04 + CPU02);
    ps_profile_sel_dispose(&ps);
    ps_selector_dispose(&sel);
    fx_end(&f);
}

static void assert_slot(const ps_qr_heatmap_slot_t *s, int64_t t_s, int b1, int b2)
{
    assert_int_equal(s->t, MS(t_s));
    assert_int_equal(s->nbuckets, PS_QUERIER_HEATMAP_BUCKETS);
    for (int i = 0; i < PS_QUERIER_HEATMAP_BUCKETS; i++)
        assert_int_equal(s->counts[i], (i == b1) + (i == b2));
}

static void test_select_heatmap(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_qr_heatmap_series_t *s;
    uint32_t n;
    /* totals 2890000000 (cpu-03 @15, cpu-04 @30) .. 2980000000 (cpu-01 @10): buckets of 4500000;
     * cpu-02 (2930000000 @20) in bucket 8 */
    assert_int_equal(heatmap(&f, T0 + 10, T0 + 30, 10, NULL, false, 0, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_int_equal(s[0].labels.n, 0);
    assert_int_equal(s[0].nslots, 3);
    assert_slot(&s[0].slots[0], T0 + 10, 19, -1);
    assert_slot(&s[0].slots[1], T0 + 20, 0, 8);
    assert_slot(&s[0].slots[2], T0 + 30, 0, -1);
    assert_true(s[0].slots[0].y_min[1] == 2894500000.0);
    assert_int_equal(s[0].slots[1].nexemplars, 0);
    /* group_by job, exemplars: api's slot T+20 has cpu-03 (bucket 0) then cpu-02 (bucket 8) */
    assert_int_equal(heatmap(&f, T0 + 10, T0 + 30, 10, "job", true, 0, &s, &n), 0);
    assert_int_equal(n, 2);
    assert_string_equal(ps_labels_value(&s[0].labels, "job"), "api");
    assert_string_equal(ps_labels_value(&s[1].labels, "job"), "batch");
    assert_int_equal(s[0].nslots, 2);
    assert_int_equal(s[0].slots[1].nexemplars, 2);
    assert_int_equal(s[0].slots[1].exemplars[0].t, MS(T0 + 15));
    assert_int_equal(s[0].slots[1].exemplars[0].value, CPU03);
    assert_int_equal(s[0].slots[1].exemplars[0].labels.n, 1); /* instance only */
    assert_string_equal(ps_labels_value(&s[0].slots[1].exemplars[0].labels, "instance"), "b");
    {
        /* its id names cpu-03's profile */
        const char *id = s[0].slots[1].exemplars[0].profile_id;
        ps_profile_ref_t ref;
        uint32_t k;
        assert_int_equal(strlen(id), PS_PROFILE_ID_LEN);
        assert_int_equal(ps_query_profile_id_parse(f.r, id, strlen(id), "id", &ref, 1, &k, &f.err), 0);
        assert_int_equal(k, 1);
        assert_int_equal(ref.ts, (T0 + 15) * 1000000000LL);
    }
    assert_int_equal(s[0].slots[1].exemplars[1].value, CPU02);
    /* limit 1: api (3 counts) before batch (1) */
    assert_int_equal(heatmap(&f, T0 + 10, T0 + 30, 10, "job", false, 1, &s, &n), 0);
    assert_int_equal(n, 1);
    assert_string_equal(ps_labels_value(&s[0].labels, "job"), "api");
    /* nothing in range */
    assert_int_equal(heatmap(&f, T0 + 100, T0 + 200, 10, NULL, false, 0, &s, &n), 0);
    assert_int_equal(n, 0);
    /* errors */
    assert_int_equal(heatmap(&f, T0, T0 + 40, 0, NULL, false, 0, &s, &n), PS_EINVAL);
    assert_string_equal(f.err.msg, "step must be at least 1 ms (got 0 ms)");
    assert_int_equal(heatmap(&f, T0, T0, 10, NULL, false, 0, &s, &n), PS_EINVAL);
    assert_string_equal(f.err.msg, "start (1800000000000 ms) must be before end (1800000000000 ms)");
    assert_int_equal(heatmap(&f, T0, T0 + 11000, 1, NULL, false, 0, &s, &n), PS_EINVAL);
    assert_string_equal(f.err.msg, "the heatmap would have 11001 time slots of 1000 ms x 20 buckets = 220020 buckets, "
                                   "more than 11000 slots (220000 buckets): use a larger step or a shorter range");
    assert_int_equal(heatmap(&f, T0, T0 + 10999, 1, NULL, false, 0, &s, &n), 0);
    fx_end(&f);
}

static void test_analyze(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_selector_t sel;
    ps_qr_query_scope_t sc;
    uint64_t bytes, nseries;
    int64_t lo, hi;
    assert_int_equal(ps_querier_selector(NULL, CPU "{job=\"api\"}", "query", &f.a, &sel, &f.err), 0);
    range_ns(&f, MS(T0), MS(T0 + 60), &lo, &hi);
    assert_int_equal(ps_querier_analyze(f.r, &sel, lo, hi, 100, &f.a, &sc, &bytes, &nseries, &f.err), 0);
    assert_string_equal(sc.component_type, "profstore");
    assert_int_equal(sc.component_count, 1);
    assert_int_equal(sc.series_count, 2);
    assert_int_equal(nseries, 2);
    assert_int_equal(sc.profile_count, 3);
    assert_int_equal(sc.block_count, 0);
    assert_true(bytes == sc.profile_bytes && bytes > 0);
    range_ns(&f, MS(T0 + 15), MS(T0 + 15), &lo, &hi);
    uint64_t all = bytes;
    assert_int_equal(ps_querier_analyze(f.r, &sel, lo, hi, 100, &f.a, &sc, &bytes, &nseries, &f.err), 0);
    assert_int_equal(sc.series_count, 1);
    assert_int_equal(sc.profile_count, 1);
    assert_true(bytes > 0 && bytes < all);
    fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_types),
        cmocka_unit_test(test_selector),
        cmocka_unit_test(test_series_and_labels),
        cmocka_unit_test(test_label_list),
        cmocka_unit_test(test_select_series),
        cmocka_unit_test(test_merge),
        cmocka_unit_test(test_call_site),
        cmocka_unit_test(test_heatmap_buckets),
        cmocka_unit_test(test_select_heatmap),
        cmocka_unit_test(test_profile_ids),
        cmocka_unit_test(test_analyze),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
