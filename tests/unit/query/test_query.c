/*
 * test_query.c - unit tests for src/query: a temporary store filled by ingesting the real Go
 * profiles ($PS_TESTDATA/pprof, totals from its README), then series selection (=, !=, =~, !~,
 * the empty-value rule, time ranges, max_series), profile merges over a range and at a time
 * (exact totals, pprof's merge rules, profile families with every sample type, the errors for
 * unknown types), label names and values by time, and PromQL over the store's profile totals
 * (src/query/promql_eval.h with ps_pq_store_source: selectors with lookback, sum, sum by, sum without,
 * count_over_time and sum_over_time, unary minus, numbers, range steps) with exact values.
 *
 * The store (T = 1,800,000,000 s):
 *   process_cpu (2 types: samples, cpu) {job="api",instance="a"}  cpu-01 @T+10, cpu-02 @T+20
 *                                       {job="api",instance="b"}  cpu-03 @T+15
 *                                       {job="batch"}             cpu-04 @T+30
 *   memory (4 types)                    {job="api",instance="a"}  heap-01 @T+30
 *                                       {job="avg",instance="x"}  heap-01 @T+5000, 5010, 5020
 *                                       {job="avg",instance="y"}  heap-01 @T+5010
 */
#include <math.h>
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

#include "core/timeutil.h"
#include "ingest/ingest.h"
#include "parser/selector.h"
#include "parser/promql.h"
#include "query/promql_eval.h"
#include "query/query.h"


#define T0 1800000000LL
#define S(x) ((int64_t)(x) * PS_NS_PER_S)
#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
#define CPU_SAMPLES "process_cpu:samples:count:cpu:nanoseconds:delta"

static char *dir;
static ps_store_t *store;


static void ingest_at(const char *rel, const char *labels, const char *when) { ps_test_ingest_at(store, rel, labels, when); }
static void ingest(const char *rel, const char *labels, int64_t ts_s) { ps_test_ingest(store, rel, labels, ts_s); }

static int setup(void **state)
{
    (void)state;
    store = ps_test_store_open("/tmp/ps_test_query_XXXXXX", &dir);
    ps_test_ingest_cpu4(store, T0);
    ingest("go/heap-01.pb.gz", "{job=\"api\",instance=\"a\"}", T0 + 30);
    for (int k = 0; k < 3; k++)
        ingest("go/heap-01.pb.gz", "{job=\"avg\",instance=\"x\"}", T0 + 5000 + 10 * k);
    ingest("go/heap-01.pb.gz", "{job=\"avg\",instance=\"y\"}", T0 + 5010);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_test_store_close(store, dir);
    return 0;
}

/* ---- helpers ---- */

typedef ps_test_rfx_t fx_t;
static void fx_begin(fx_t *f) { ps_test_rfx_begin(f, store); }
static void fx_end(fx_t *f) { ps_test_rfx_end(f); }

static ps_selector_t parse_sel(fx_t *f, const char *s)
{
    ps_selector_t sel;
    if (ps_selector_parse(s, strlen(s), &f->a, &sel, &f->err) != 0)
        fail_msg("%s: %s", s, f->err.msg);
    return sel;
}

/* Number of series s selects (in [lo, hi]); max_series 100. A negative return is the error code. */
static int count_sel(fx_t *f, const char *s, int64_t lo, int64_t hi, uint32_t max_series)
{
    ps_selector_t sel = parse_sel(f, s);
    ps_series_set_t set;
    int ret = ps_query_select(f->r, &sel, lo, hi, max_series, &f->a, &set, &f->err);
    ps_selector_dispose(&sel);
    return ret ? ret : (int)set.n;
}

static const char *label(const ps_labels_t *ls, const char *name)
{
    const ps_label_pair_t *p = ps_labels_get(ls, name);
    return p ? p->value : NULL;
}

/* ---- selection ---- */

static void test_select_matchers(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    const int64_t A = INT64_MIN, Z = INT64_MAX;
    assert_int_equal(count_sel(&f, CPU, A, Z, 100), 3);
    assert_int_equal(count_sel(&f, "{job=\"api\"}", A, Z, 100), 8); /* 2 x 2 cpu + 4 heap */
    assert_int_equal(count_sel(&f, CPU "{instance=\"a\"}", A, Z, 100), 1);
    /* != and !~ also select series without the label ("" is not "a") */
    assert_int_equal(count_sel(&f, CPU "{instance!=\"a\"}", A, Z, 100), 2);
    assert_int_equal(count_sel(&f, CPU "{instance=~\"a|b\"}", A, Z, 100), 2);
    assert_int_equal(count_sel(&f, CPU "{instance!~\"a|b\"}", A, Z, 100), 1);
    assert_int_equal(count_sel(&f, CPU "{instance=~\"a.+\"}", A, Z, 100), 0); /* anchored */
    /* the empty value: l="" selects series without l; =~".*" every series */
    assert_int_equal(count_sel(&f, CPU "{instance=\"\"}", A, Z, 100), 1);
    assert_int_equal(count_sel(&f, CPU "{instance=~\".*\"}", A, Z, 100), 3);
    assert_int_equal(count_sel(&f, CPU "{nosuch=\"\"}", A, Z, 100), 3);
    assert_int_equal(count_sel(&f, "{__name__=~\"process_cpu:.*\",job!=\"api\"}", A, Z, 100), 2);
    assert_int_equal(count_sel(&f, "{job=\"nope\"}", A, Z, 100), 0);
    /* a selector needs a matcher that does not match "" (the parser says so first; built by hand) */
    ps_matcher_t m = {.op = PS_MATCH_EQ, .name = "instance", .nlen = 8, .value = "", .vlen = 0, .matches_empty = true};
    ps_selector_t only_empty = {1, &m};
    ps_series_set_t set;
    assert_int_equal(ps_query_select(f.r, &only_empty, A, Z, 100, &f.a, &set, &f.err), PS_EINVAL);
    assert_string_equal(f.err.msg, "vector selector must contain at least one non-empty matcher");
    /* time ranges: only series with a profile in [lo, hi], both ends included */
    assert_int_equal(count_sel(&f, CPU, S(T0 + 25), S(T0 + 35), 100), 1);
    assert_int_equal(count_sel(&f, CPU, S(T0 + 15), S(T0 + 15), 100), 1);
    assert_int_equal(count_sel(&f, CPU, S(T0 + 10), S(T0 + 15), 100), 2);
    assert_int_equal(count_sel(&f, CPU, S(T0 + 31), Z, 100), 0);
    /* max_series: 3 series fit 3, not 2 */
    assert_int_equal(count_sel(&f, CPU, A, Z, 3), 3);
    assert_int_equal(count_sel(&f, CPU, A, Z, 2), PS_ELIMIT);
    assert_string_equal(f.err.msg, "the selector matches more than 2 series (the limit, the query series limit); narrow it");
    fx_end(&f);
}

/*
 * Many series of one type: the candidates start from the shortest equality list, and a list much
 * longer than the candidates is applied by look-ups; the same series, in the same (id) order, as
 * intersecting every list. 100 goroutine series {job="many",instance="iNN",half="a"|"b"}.
 */
static int add_str(void *ctx, const char *s, size_t n)
{
    ps_buf_append(ctx, s, n);
    ps_buf_putc(ctx, ',');
    return 0;
}

static void test_select_short_list_first(void **state)
{
    (void)state;
    char *mdir;
    ps_store_t *many = ps_test_store_open("/tmp/ps_test_query_many_XXXXXX", &mdir);
    for (int i = 0; i < 100; i++) {
        char ls[96];
        snprintf(ls, sizeof(ls), "{job=\"many\",instance=\"i%02d\",half=\"%s\"}", i, i % 2 ? "b" : "a");
        ps_test_ingest(many, "go/goroutine-01.pb.gz", ls, T0 + i);
    }
    fx_t f;
    ps_test_rfx_begin(&f, many);
    const int64_t A = INT64_MIN, Z = INT64_MAX;
#define GR "goroutine:goroutine:count:goroutine:count"
    assert_int_equal(count_sel(&f, GR, A, Z, 1000), 100);
    assert_int_equal(count_sel(&f, GR "{instance=\"i07\"}", A, Z, 1000), 1);           /* 1 id, then 100 by look-up */
    assert_int_equal(count_sel(&f, "{instance=\"i07\",job=\"many\"}", A, Z, 1000), 1);
    assert_int_equal(count_sel(&f, GR "{instance=\"i07\",job=\"other\"}", A, Z, 1000), 0);
    assert_int_equal(count_sel(&f, GR "{instance=\"i07\",half=\"a\"}", A, Z, 1000), 0); /* i07 is odd */
    assert_int_equal(count_sel(&f, GR "{half=\"b\",job=\"many\"}", A, Z, 1000), 50); /* lists read and intersected */
    assert_int_equal(count_sel(&f, GR "{nosuch=\"x\",half=\"b\"}", A, Z, 1000), 0);
    /* a regex first: its candidates (10), then job's 100 ids by look-up */
    ps_selector_t sel = parse_sel(&f, "{instance=~\"i0.\",job=\"many\",half=\"b\"}");
    ps_series_set_t set;
    assert_int_equal(ps_query_select(f.r, &sel, A, Z, 1000, &f.a, &set, &f.err), 0);
    assert_int_equal(set.n, 5);
    for (uint32_t k = 0; k < set.n; k++) {
        char want[16];
        snprintf(want, sizeof(want), "i%02u", 2 * k + 1);
        assert_string_equal(label(&set.labels[k], "instance"), want);
        assert_true(k == 0 || set.sids[k] > set.sids[k - 1]);
    }
    ps_selector_dispose(&sel);
    assert_int_equal(count_sel(&f, "{instance=~\"i0.\",job=\"nope\"}", A, Z, 1000), 0);
    /* label names and values straight from the index: distinct, in strcmp's order */
    ps_strlist_t l;
    assert_int_equal(ps_query_labels(f.r, "instance", NULL, 0, A, Z, 1000, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 100);
    for (uint32_t k = 0; k < l.n; k++) {
        char want[16];
        snprintf(want, sizeof(want), "i%02u", k);
        assert_string_equal(l.v[k], want);
    }
    assert_int_equal(ps_query_labels(f.r, NULL, NULL, 0, A, Z, 1000, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 4);
    assert_string_equal(l.v[0], "__name__");
    assert_string_equal(l.v[1], "half");
    assert_string_equal(l.v[2], "instance");
    assert_string_equal(l.v[3], "job");
    assert_int_equal(ps_query_labels(f.r, "half", NULL, 0, A, Z, 1000, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "a");
    assert_string_equal(l.v[1], "b");
    /* with a range (series iNN has its profile at T0 + NN): from the label index, each value's
     * series up to the first with data; and past ps_query_labels_walk_after looks (0 here), from
     * the walk over every series: the same answers */
    for (int walk = 0; walk < 2; walk++) {
        uint64_t keep = ps_query_labels_walk_after;
        if (walk)
            ps_query_labels_walk_after = 0;
        assert_int_equal(ps_query_labels(f.r, "instance", NULL, 0, S(T0 + 10), S(T0 + 19), 1000, &f.a, &l, &f.err),
                         0);
        assert_int_equal(l.n, 10);
        for (uint32_t k = 0; k < l.n; k++) {
            char want[16];
            snprintf(want, sizeof(want), "i%02u", 10 + k);
            assert_string_equal(l.v[k], want);
        }
        assert_int_equal(ps_query_labels(f.r, "half", NULL, 0, S(T0 + 13), S(T0 + 13), 1000, &f.a, &l, &f.err), 0);
        assert_int_equal(l.n, 1);
        assert_string_equal(l.v[0], "b");
        assert_int_equal(ps_query_labels(f.r, NULL, NULL, 0, S(T0 + 99), S(T0 + 200), 1000, &f.a, &l, &f.err), 0);
        assert_int_equal(l.n, 4);
        assert_string_equal(l.v[0], "__name__");
        assert_string_equal(l.v[3], "job");
        assert_int_equal(ps_query_labels(f.r, NULL, NULL, 0, S(T0 + 100), S(T0 + 200), 1000, &f.a, &l, &f.err), 0);
        assert_int_equal(l.n, 0);
        assert_int_equal(ps_query_labels(f.r, "job", NULL, 0, S(T0 - 5), S(T0 - 1), 1000, &f.a, &l, &f.err), 0);
        assert_int_equal(l.n, 0);
        ps_query_labels_walk_after = keep;
    }
    /* the same straight from the index (ps_query_labels_each, what the HTTP API streams); a range
     * that needs looks at series (looks: some value's times, first .. the end of last's 5-minute
     * granule, hold it but neither time is inside it: all of T0 .. T0 + 99 is one granule, and
     * only each series' first profile was noted) past ps_query_labels_walk_after:
     * PS_EOUTOFORDER, then ps_query_labels answers */
    static const struct {
        const char *name;
        int64_t start, end;
        const char *want;
        bool looks;
    } each[] = {
        {"instance", S(T0 + 10), S(T0 + 12), "i10,i11,i12,", true}, /* i00..i09: T0 + k, k < 10 */
        {"half", S(T0 + 13), S(T0 + 13), "b,", true},
        {"half", S(T0), S(T0), "a,", false},                        /* a's first, i00's */
        {NULL, S(T0 + 99), S(T0 + 200), "__name__,half,instance,job,", true},
        {NULL, S(T0 + 100), S(T0 + 200), "", true},
        {"job", S(T0 - 5), S(T0 - 1), "", false},                    /* before job=many's first */
        {"job", A, Z, "many,", false},
        {"instance", S(T0 + 400), S(T0 + 500), "", false},           /* past the granule */
    };
    for (size_t i = 0; i < sizeof(each) / sizeof(each[0]); i++) {
        ps_buf_t got = PS_BUF_INIT;
        bool walk = true;
        assert_int_equal(ps_query_labels_each(f.r, each[i].name, each[i].start, each[i].end, add_str, &got, &walk, &f.err), 0);
        assert_false(walk);
        ps_buf_putc(&got, 0);
        assert_string_equal((char *)got.data, each[i].want);
        uint64_t keep = ps_query_labels_walk_after;
        ps_query_labels_walk_after = 0;
        ps_buf_reset(&got);
        int rc = ps_query_labels_each(f.r, each[i].name, each[i].start, each[i].end, add_str, &got, &walk, &f.err);
        ps_query_labels_walk_after = keep;
        assert_int_equal(rc, each[i].looks ? PS_EOUTOFORDER : 0);
        assert_int_equal(walk, each[i].looks);
        if (walk) { /* the walk over every series answers the same */
            ps_strlist_t wl;
            assert_int_equal(ps_query_labels_walk(f.r, each[i].name, each[i].start, each[i].end, &f.a, &wl, &f.err), 0);
            ps_buf_reset(&got);
            for (uint32_t k = 0; k < wl.n; k++)
                add_str(&got, wl.v[k], strlen(wl.v[k]));
            ps_buf_putc(&got, 0);
            assert_string_equal((char *)got.data, each[i].want);
        }
        ps_buf_dispose(&got);
    }
#undef GR
    ps_test_rfx_end(&f);
    ps_test_store_close(many, mdir);
}

static int cmp_strp(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The index's values as streamed (ps_query_labels_each) when they are longer than a word: the
 * order and NUL tests of each value 8 bytes at a time (values equal over 8 and more bytes, one the
 * prefix of the next, bytes past 0x7f), the end of a name's keys tested a word at a time
 * (service_instance's keys stop before service_instances'). A wrong test answers PS_EOUTOFORDER. */
static void test_labels_each_long_values(void **state)
{
    (void)state;
    static const char *vals[] = {"10.0.0.1:6060", "10.0.0.10:6060", "10.0.0.100:6060", "10.0.0.1",
                                 "10.0.0.1:606", "10.0.0.2:6060", "abcdefgh", "abcdefghi", "abcdefgh\xc3\xa9",
                                 "abcdefgh\x7f", "x", "a-value-of-twenty-four-b", "a-value-of-twenty-four-a"};
    enum { NV = sizeof(vals) / sizeof(vals[0]) };
    char *mdir;
    ps_store_t *st = ps_test_store_open("/tmp/ps_test_query_long_XXXXXX", &mdir);
    for (int i = 0; i < NV; i++) {
        char ls[160];
        snprintf(ls, sizeof(ls), "{job=\"long\",service_instance=\"%s\"}", vals[i]);
        ps_test_ingest(st, "go/goroutine-01.pb.gz", ls, T0 + i);
    }
    ps_test_ingest(st, "go/goroutine-01.pb.gz", "{job=\"long\",service_instances=\"10.0.0.3:6060\"}", T0 + 50);
    const char *sorted[NV];
    memcpy(sorted, vals, sizeof(sorted));
    qsort(sorted, NV, sizeof(sorted[0]), cmp_strp);
    ps_buf_t want = PS_BUF_INIT;
    for (int i = 0; i < NV; i++)
        add_str(&want, sorted[i], strlen(sorted[i]));
    ps_buf_putc(&want, 0);
    assert_string_equal(sorted[0], "10.0.0.1"); /* strcmp's order: the prefix first, 0x7f before 0xc3 */
    assert_string_equal(sorted[NV - 3], "abcdefgh\x7f");
    fx_t f;
    ps_test_rfx_begin(&f, st);
    const int64_t ranges[][2] = {{INT64_MIN, INT64_MAX}, {S(T0), S(T0 + NV - 1)}};
    for (int r = 0; r < 2; r++) {
        ps_buf_t got = PS_BUF_INIT;
        bool walk = true;
        assert_int_equal(ps_query_labels_each(f.r, "service_instance", ranges[r][0], ranges[r][1], add_str, &got, &walk,
                                              &f.err),
                         0);
        assert_false(walk);
        ps_buf_putc(&got, 0);
        assert_string_equal((char *)got.data, (char *)want.data);
        ps_buf_reset(&got);
        assert_int_equal(ps_query_labels_each(f.r, NULL, ranges[r][0], ranges[r][1], add_str, &got, &walk, &f.err), 0);
        ps_buf_putc(&got, 0);
        /* service_instances' one profile (T0 + 50) is past the range */
        assert_string_equal((char *)got.data, r == 0 ? "__name__,job,service_instance,service_instances,"
                                                     : "__name__,job,service_instance,");
        ps_buf_dispose(&got);
    }
    ps_buf_dispose(&want);
    ps_test_rfx_end(&f);
    ps_test_store_close(st, mdir);
}

static void test_select_union_and_labels(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_selector_t sels[2] = {parse_sel(&f, CPU "{instance=\"a\"}"), parse_sel(&f, "{job=~\"api|batch\",instance!=\"b\"}")};
    ps_series_set_t set;
    /* a's cpu series is in both: once */
    assert_int_equal(ps_query_select_union(f.r, sels, 2, INT64_MIN, INT64_MAX, 100, &f.a, &set, &f.err), 0);
    assert_int_equal(set.n, 8); /* a: 2 cpu + 4 heap, batch: 2 cpu */
    assert_int_equal(ps_query_select_union(f.r, sels, 2, INT64_MIN, INT64_MAX, 7, &f.a, &set, &f.err), PS_ELIMIT);

    ps_strlist_t l;
    assert_int_equal(ps_query_labels(f.r, NULL, NULL, 0, INT64_MIN, INT64_MAX, 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 3);
    assert_string_equal(l.v[0], "__name__");
    assert_string_equal(l.v[1], "instance");
    assert_string_equal(l.v[2], "job");
    /* by time without selectors: [T+25, T+60] has batch (no instance) and a's heap */
    assert_int_equal(ps_query_labels(f.r, "instance", NULL, 0, S(T0 + 25), S(T0 + 60), 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0], "a");
    assert_int_equal(ps_query_labels(f.r, "instance", NULL, 0, S(T0 + 31), S(T0 + 60), 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 0);
    assert_int_equal(ps_query_labels(f.r, NULL, NULL, 0, S(T0 + 30), S(T0 + 30), 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 3);
    assert_int_equal(ps_query_labels(f.r, "job", NULL, 0, S(T0), S(T0 + 20), 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 1);
    assert_string_equal(l.v[0], "api");
    /* with selectors and a range */
    assert_int_equal(ps_query_labels(f.r, "job", &sels[1], 1, S(T0 + 30), S(T0 + 30), 100, &f.a, &l, &f.err), 0);
    assert_int_equal(l.n, 2);
    assert_string_equal(l.v[0], "api"); /* a's heap */
    assert_string_equal(l.v[1], "batch");
    ps_selector_dispose(&sels[0]);
    ps_selector_dispose(&sels[1]);
    fx_end(&f);
}

/* ---- merges ---- */

static int64_t profile_total(const ps_profile_t *p, uint32_t vi)
{
    int64_t t = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        t += p->samples[i].values[vi];
    return t;
}

/* Selects and builds; returns the error code. */
static int query(fx_t *f, const char *s, bool ranged, int64_t lo, int64_t hi, bool all, ps_profile_sel_t *ps,
                 ps_profile_t *p)
{
    ps_selector_t sel = parse_sel(f, s);
    ps_profile_query_t q = {.sel = &sel, .param = "query", .ranged = ranged, .start = lo, .end = hi, .at = hi,
                            .lookback = hi - lo, .all_types = all, .max_series = 100};
    int ret = ps_query_profile_select(f->r, &q, &f->a, ps, &f->err);
    if (ret == 0)
        ret = ps_query_profile_build(f->r, ps, NULL, PS_PROFILE_ONE, &f->a, p, &f->err);
    ps_selector_dispose(&sel);
    return ret;
}

static void test_merge_range_and_at(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_profile_sel_t ps;
    ps_profile_t p;
    /* range: every profile in [lo, hi] */
    assert_int_equal(query(&f, CPU "{job=\"api\"}", true, S(T0), S(T0 + 60), false, &ps, &p), 0);
    assert_int_equal(ps.ntypes, 1);
    assert_string_equal(ps.types[0], CPU);
    assert_int_equal(ps.nseries, 2);
    assert_int_equal(ps.info.profiles, 3);
    assert_int_equal(ps.totals[0], CPU01 + CPU02 + CPU03);
    assert_int_equal(profile_total(&p, 0), CPU01 + CPU02 + CPU03);
    assert_int_equal(p.ntypes, 1);
    assert_int_equal(p.time_nanos, S(T0 + 10)); /* the earliest */
    assert_int_equal(p.period, 10000000);
    ps_profile_sel_dispose(&ps);
    /* bounds included */
    assert_int_equal(query(&f, CPU, true, S(T0 + 15), S(T0 + 20), false, &ps, &p), 0);
    assert_int_equal(profile_total(&p, 0), CPU02 + CPU03);
    ps_profile_sel_dispose(&ps);
    /* at a time: each series' newest profile in (at - lookback, at] */
    assert_int_equal(query(&f, CPU, false, S(T0 + 60) - S(300), S(T0 + 60), false, &ps, &p), 0);
    assert_int_equal(ps.info.profiles, 3);
    assert_int_equal(profile_total(&p, 0), CPU02 + CPU03 + CPU04);
    ps_profile_sel_dispose(&ps);
    assert_int_equal(query(&f, CPU, false, S(T0 + 10), S(T0 + 14), false, &ps, &p), 0); /* (T+10, T+14]: none */
    assert_int_equal(ps.info.profiles, 0);
    assert_int_equal(p.nsamples, 0);
    assert_string_equal(ps.types[0], CPU);
    ps_profile_sel_dispose(&ps);
    assert_int_equal(query(&f, CPU, false, S(T0 + 9), S(T0 + 14), false, &ps, &p), 0); /* (T+9, T+14]: cpu-01 */
    assert_int_equal(profile_total(&p, 0), CPU01);
    ps_profile_sel_dispose(&ps);
    /* the samples type of the same pushes: README sample counts 298 + 293 */
    assert_int_equal(query(&f, CPU_SAMPLES "{instance=\"a\"}", true, S(T0), S(T0 + 60), false, &ps, &p), 0);
    assert_int_equal(profile_total(&p, 0), 298 + 293);
    ps_profile_sel_dispose(&ps);

    /* diff: compare - base, negative values kept */
    ps_profile_sel_t base, cmp;
    ps_profile_t d;
    assert_int_equal(query(&f, CPU "{instance=\"a\"}", true, S(T0 + 10), S(T0 + 10), false, &base, &p), 0);
    assert_int_equal(query(&f, CPU "{instance=\"a\"}", true, S(T0 + 20), S(T0 + 20), false, &cmp, &p), 0);
    assert_int_equal(base.totals[0], CPU01);
    assert_int_equal(ps_query_profile_build(f.r, &base, &cmp, PS_PROFILE_SUB, &f.a, &d, &f.err), 0);
    assert_int_equal(profile_total(&d, 0), CPU02 - CPU01);
    assert_int_equal(ps_query_profile_build(f.r, &base, &cmp, PS_PROFILE_PAIR, &f.a, &d, &f.err), 0);
    assert_int_equal(d.ntypes, 2);
    assert_int_equal(profile_total(&d, 0), CPU01);
    assert_int_equal(profile_total(&d, 1), CPU02);
    ps_profile_sel_dispose(&base);
    ps_profile_sel_dispose(&cmp);
    fx_end(&f);
}

static void test_merge_errors(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_profile_sel_t ps;
    ps_profile_t p;
    assert_int_equal(query(&f, "{job=\"api\"}", true, S(T0), S(T0 + 60), false, &ps, &p), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "the selector matches series of 6 profile types ("));
    ps_profile_sel_dispose(&ps);
    assert_int_equal(query(&f, "process_cpu:cycles:count:cpu:nanoseconds:delta", true, S(T0), S(T0 + 60), false, &ps,
                           &p),
                     PS_ENOTFOUND);
    assert_string_equal(f.err.msg, "invalid parameter \"query\": unknown profile type "
                                   "\"process_cpu:cycles:count:cpu:nanoseconds:delta\" (GET /api/v1/profiles/types "
                                   "lists the stored ones)");
    ps_profile_sel_dispose(&ps);
    assert_int_equal(query(&f, "up", true, S(T0), S(T0 + 60), false, &ps, &p), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "invalid parameter \"query\": \"up\" is not a profile type"));
    ps_profile_sel_dispose(&ps);
    assert_int_equal(query(&f, "a:b", true, S(T0), S(T0 + 60), false, &ps, &p), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "\"a:b\" is not a profile type"));
    ps_profile_sel_dispose(&ps);
    /* a selector without a profile type that matches nothing: an empty profile of unknown type */
    assert_int_equal(query(&f, "{job=\"nope\"}", true, S(T0), S(T0 + 60), false, &ps, &p), 0);
    assert_string_equal(ps.types[0], "unknown:unknown:unknown:unknown:unknown");
    assert_int_equal(p.nsamples, 0);
    ps_profile_sel_dispose(&ps);
    fx_end(&f);
}

/* one measure: name, sample type, unit and delta flag agree; the period may differ */
static void test_same_measure(void **state)
{
    (void)state;
    assert_true(ps_profile_type_same_measure("memory:inuse_space:bytes:space:bytes",
                                             "memory:inuse_space:bytes:inuse_space:bytes"));
    assert_true(ps_profile_type_same_measure(CPU, "process_cpu:cpu:nanoseconds:wall:nanoseconds:delta"));
    assert_false(ps_profile_type_same_measure(CPU, "process_cpu:cpu:nanoseconds:cpu:nanoseconds"));
    assert_false(ps_profile_type_same_measure(CPU, CPU_SAMPLES));
    assert_false(ps_profile_type_same_measure("memory:inuse_space:bytes:space:bytes",
                                              "memory:inuse_space:count:space:bytes"));
    assert_false(ps_profile_type_same_measure("block:delay:nanoseconds:contentions:count:delta",
                                              "mutex:delay:nanoseconds:contentions:count:delta"));
    assert_false(ps_profile_type_same_measure("a:b", "a:b"));
    /* a period type named delta is not the delta flag */
    assert_false(ps_profile_type_same_measure("x:y:z:delta:delta", "x:y:z:u:v:delta"));
    assert_true(ps_profile_type_same_measure("x:y:z:delta:delta", "x:y:z:u:v"));

    static const char *heap[] = {"memory:inuse_space:bytes:inuse_space:bytes", "memory:inuse_space:bytes:space:bytes",
                                 "memory:inuse_space:bytes:inuse_space:bytes"};
    ps_label_pair_t pairs[4];
    ps_labels_t ls[4];
    for (int i = 0; i < 4; i++) {
        const char *v = i < 3 ? heap[i] : "memory:alloc_space:bytes:space:bytes";
        pairs[i] = (ps_label_pair_t){.name = "__name__", .value = v, .nlen = 8, .vlen = (uint32_t)strlen(v)};
        ls[i] = (ps_labels_t){.n = 1, .pairs = &pairs[i]};
    }
    uint64_t sids[4] = {1, 2, 3, 4};
    ps_series_set_t set = {3, sids, ls};
    ps_err_t err = {0};
    const char *type;
    /* merged: the type with a period type of its own stands for them */
    assert_int_equal(ps_query_single_type(&set, &type, &err), 0);
    assert_string_equal(type, "memory:inuse_space:bytes:space:bytes");
    set.n = 1;
    assert_int_equal(ps_query_single_type(&set, &type, &err), 0);
    assert_string_equal(type, "memory:inuse_space:bytes:inuse_space:bytes");
    set.n = 4;
    assert_int_equal(ps_query_single_type(&set, &type, &err), PS_EINVAL);
    assert_string_equal(err.msg, "the selector matches series of 3 profile types (memory:inuse_space:bytes:inuse_space:"
                                 "bytes, memory:inuse_space:bytes:space:bytes, memory:alloc_space:bytes:space:bytes); "
                                 "merging different types is meaningless (memory:inuse_space:bytes:inuse_space:bytes "
                                 "and memory:alloc_space:bytes:space:bytes are not the same measure: name, sample "
                                 "type, unit and delta must agree): add __name__ or a profile type to the selector");
}

static void test_merge_family(void **state)
{
    (void)state;
    static const char *heap_types[4] = {
        "memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
        "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"};
    static const int64_t heap_totals[4] = {29635699, 12417316511LL, 6721, 1048832};
    static const struct {
        const char *sel;
        bool all;
    } cases[] = {
        {"memory{job=\"api\"}", false},
        {"memory:inuse_space:bytes:space:bytes", true},
        {"{instance=\"a\",__name__=~\"memory:.*\"}", true},
    };
    fx_t f;
    fx_begin(&f);
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        ps_profile_sel_t ps;
        ps_profile_t p;
        assert_int_equal(query(&f, cases[c].sel, true, S(T0), S(T0 + 60), cases[c].all, &ps, &p), 0);
        assert_int_equal(ps.ntypes, 4);
        assert_int_equal(ps.nseries, 4);
        assert_int_equal(p.ntypes, 4);
        for (uint32_t k = 0; k < 4; k++) {
            assert_string_equal(ps.types[k], heap_types[k]);
            assert_int_equal(ps.totals[k], heap_totals[k]);
            assert_int_equal(profile_total(&p, k), heap_totals[k]);
        }
        assert_int_equal(ps.info.profiles, 1); /* one profile, not one per type */
        assert_int_equal(p.time_nanos, S(T0 + 30));
        assert_int_equal(p.period, 524288);
        ps_profile_sel_dispose(&ps);
    }
    /* the family of a CPU type: both types of the profile */
    ps_profile_sel_t ps;
    ps_profile_t p;
    assert_int_equal(query(&f, CPU "{instance=\"a\"}", true, S(T0), S(T0 + 60), true, &ps, &p), 0);
    assert_int_equal(ps.ntypes, 2);
    assert_string_equal(ps.types[0], CPU);
    assert_string_equal(ps.types[1], CPU_SAMPLES);
    assert_int_equal(profile_total(&p, 0), CPU01 + CPU02);
    assert_int_equal(profile_total(&p, 1), 298 + 293);
    assert_int_equal(ps.info.profiles, 2);
    assert_int_equal(p.duration_nanos, ps.info.duration);
    ps_profile_sel_dispose(&ps);
    /* sample_types=all across two profile names */
    assert_int_equal(query(&f, "{job=\"api\"}", true, S(T0), S(T0 + 60), true, &ps, &p), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "sample_types=all merges the sample types of one profile name"));
    ps_profile_sel_dispose(&ps);
    /* max_series counts every type: 4 heap series */
    ps_selector_t sel = parse_sel(&f, "memory");
    ps_profile_query_t q = {.sel = &sel, .param = "query", .ranged = true, .start = S(T0), .end = S(T0 + 60),
                            .max_series = 3};
    assert_int_equal(ps_query_profile_select(f.r, &q, &f.a, &ps, &f.err), PS_ELIMIT);
    ps_profile_sel_dispose(&ps);
    ps_selector_dispose(&sel);
    fx_end(&f);
}

/* ---- PromQL over the store (src/query/promql_eval.h with ps_pq_store_source) ---- */

static int compat = 3; /* the engine's ps_pq_opts_t.compat for eval() */

static int eval(fx_t *f, const char *expr, int64_t start, int64_t end, int64_t step, bool instant, ps_pq_result_t *res)
{
    ps_pq_node_t *e = NULL;
    if (ps_pq_parse(expr, strlen(expr), NULL, &f->a, &e, &f->err) != 0)
        fail_msg("%s: %s", expr, f->err.msg);
    ps_pq_opts_t o;
    ps_pq_opts_default(&o);
    o.compat = compat;
    o.start = start / 1000000;
    o.end = (instant ? start : end) / 1000000;
    o.step = instant ? 0 : step / 1000000;
    ps_pq_source_t src;
    ps_pq_store_src_t sctx;
    ps_pq_store_source(&src, &sctx, f->r, 10000);
    int ret = ps_pq_eval(e, &src, &o, &f->a, res, &f->err);
    ps_pq_dispose(e);
    return ret;
}

static void test_eval_instant(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_pq_result_t r;
    const int64_t t = S(T0 + 60);
    assert_int_equal(eval(&f, CPU, t, 0, 0, true, &r), 0);
    assert_int_equal(r.type, PS_PQ_VVECTOR);
    assert_int_equal(r.n, 3); /* sorted by labels: a, b, batch (no instance; job sorts after instance) */
    assert_string_equal(label(&r.series[0].labels, "instance"), "a");
    assert_true(r.series[0].points[0].v == (double)CPU02); /* the newest profile in [t - 5m, t] */
    assert_int_equal(r.series[0].points[0].t, (T0 + 60) * 1000);
    assert_string_equal(label(&r.series[1].labels, "instance"), "b");
    assert_true(r.series[1].points[0].v == (double)CPU03);
    assert_string_equal(label(&r.series[2].labels, "job"), "batch");
    assert_true(r.series[2].points[0].v == (double)CPU04);

    assert_int_equal(eval(&f, "sum(" CPU ")", t, 0, 0, true, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].labels.n, 0);
    assert_true(r.series[0].points[0].v == (double)(CPU02 + CPU03 + CPU04));

    static const char *by_job[] = {"sum by (job) (" CPU ")", "sum(" CPU ") by (job)",
                                   "sum without (instance) (" CPU ")"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(eval(&f, by_job[i], t, 0, 0, true, &r), 0);
        assert_int_equal(r.n, 2);
        assert_int_equal(r.series[0].labels.n, 1); /* job only: without drops __name__ too */
        assert_string_equal(label(&r.series[0].labels, "job"), "api");
        assert_true(r.series[0].points[0].v == (double)(CPU02 + CPU03));
        assert_string_equal(label(&r.series[1].labels, "job"), "batch");
        assert_true(r.series[1].points[0].v == (double)CPU04);
    }
    /* profile totals as float series: how many profiles in the last minute, and their sum */
    assert_int_equal(eval(&f, "count_over_time(" CPU "[1m])", t, 0, 0, true, &r), 0);
    assert_int_equal(r.n, 3);
    assert_true(r.series[0].points[0].v == 2);
    assert_null(label(&r.series[0].labels, "__name__"));
    assert_int_equal(eval(&f, "sum(sum_over_time(" CPU "{job=\"api\"}[1m]))", t, 0, 0, true, &r), 0);
    assert_true(r.series[0].points[0].v == (double)(CPU01 + CPU02 + CPU03));
    /* all types of the family: process_cpu has two, so sum by (__name__) gives two series */
    assert_int_equal(eval(&f, "sum by (__name__) ({__name__=~\"process_cpu:.*\"})", t, 0, 0, true, &r), 0);
    assert_int_equal(r.n, 2);

    /* unary minus: values negated, the metric name dropped */
    assert_int_equal(eval(&f, "-" CPU "{instance=\"a\"}", t, 0, 0, true, &r), 0);
    assert_int_equal(r.n, 1);
    assert_true(r.series[0].points[0].v == -(double)CPU02);
    assert_null(label(&r.series[0].labels, "__name__"));
    assert_string_equal(label(&r.series[0].labels, "instance"), "a");
    /* lookback: (t - 5m, t] (Prometheus 3) */
    assert_int_equal(eval(&f, CPU, S(T0 + 20 + 299), 0, 0, true, &r), 0);
    assert_int_equal(r.n, 2); /* a's T+20 is 299 s before: in; b's T+15 out; batch's T+30 in */
    assert_int_equal(eval(&f, CPU, S(T0 + 20 + 300), 0, 0, true, &r), 0);
    assert_int_equal(r.n, 1); /* a's T+20 exactly 300 s before: out */
    assert_string_equal(label(&r.series[0].labels, "job"), "batch");
    /* ... and [t - 5m, t], both ends, with 2.x's semantics (--promql.compat=2) */
    compat = 2;
    assert_int_equal(eval(&f, CPU, S(T0 + 20 + 300), 0, 0, true, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(eval(&f, CPU, S(T0 + 20 + 301), 0, 0, true, &r), 0);
    assert_int_equal(r.n, 1);
    compat = 3;

    /* numbers */
    static const struct {
        const char *e;
        double v;
    } nums[] = {{"1+2*3", 7}, {"2^10", 1024}, {"7 % 4", 3}, {"-(1-3)", 2}, {"(1+1)/4", 0.5}};
    for (size_t i = 0; i < sizeof(nums) / sizeof(nums[0]); i++) {
        assert_int_equal(eval(&f, nums[i].e, t, 0, 0, true, &r), 0);
        assert_int_equal(r.type, PS_PQ_VSCALAR);
        assert_true(r.scalar == nums[i].v);
        assert_int_equal(r.t, (T0 + 60) * 1000);
    }
    fx_end(&f);
}

static void test_eval_range(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_pq_result_t r;
    /* a selector at each step: the newest profile in [t - 5m, t]; none at T, CPU02 still at T+30 */
    assert_int_equal(eval(&f, CPU "{instance=\"a\"}", S(T0), S(T0 + 30), S(10), false, &r), 0);
    assert_int_equal(r.type, PS_PQ_VMATRIX);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 3);
    assert_int_equal(r.series[0].points[0].t, (T0 + 10) * 1000);
    assert_true(r.series[0].points[0].v == (double)CPU01);
    assert_int_equal(r.series[0].points[1].t, (T0 + 20) * 1000);
    assert_true(r.series[0].points[1].v == (double)CPU02);
    assert_int_equal(r.series[0].points[2].t, (T0 + 30) * 1000);
    assert_true(r.series[0].points[2].v == (double)CPU02);
    /* issue 3's step sums are sum_over_time: (t - 10s, t] holds each profile once (Prometheus 3) */
    assert_int_equal(eval(&f, "sum_over_time(" CPU "{instance=\"a\"}[10s])", S(T0), S(T0 + 30), S(10), false, &r), 0);
    assert_int_equal(r.series[0].n, 2);
    assert_true(r.series[0].points[0].v == (double)CPU01);
    assert_true(r.series[0].points[1].v == (double)CPU02);
    /* with 2.x's semantics [t - 10s, t] holds a boundary profile twice */
    compat = 2;
    assert_int_equal(eval(&f, "sum_over_time(" CPU "{instance=\"a\"}[10s])", S(T0), S(T0 + 30), S(10), false, &r), 0);
    assert_int_equal(r.series[0].n, 3);
    assert_true(r.series[0].points[0].v == (double)CPU01);
    assert_true(r.series[0].points[1].v == (double)(CPU01 + CPU02));
    assert_true(r.series[0].points[2].v == (double)CPU02);
    compat = 3;
    /* ... and [t - 9.999s, t] only the step's own */
    assert_int_equal(eval(&f, "sum_over_time(" CPU "{instance=\"a\"}[9999ms])", S(T0), S(T0 + 30), S(10), false, &r),
                     0);
    assert_int_equal(r.series[0].n, 2);
    assert_true(r.series[0].points[1].v == (double)CPU02);
    /* sum over series per step */
    assert_int_equal(eval(&f, "sum(" CPU ")", S(T0 + 10), S(T0 + 30), S(10), false, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 3);
    assert_true(r.series[0].points[0].v == (double)CPU01);
    assert_true(r.series[0].points[1].v == (double)(CPU02 + CPU03));
    assert_true(r.series[0].points[2].v == (double)(CPU02 + CPU03 + CPU04));
    assert_int_equal(eval(&f, "sum by (job) (" CPU ")", S(T0 + 10), S(T0 + 30), S(10), false, &r), 0);
    assert_int_equal(r.n, 2); /* sorted by labels */
    assert_int_equal(r.series[0].n, 3); /* api from T+10 */
    assert_true(r.series[0].points[1].v == (double)(CPU02 + CPU03));
    assert_int_equal(r.series[1].n, 1); /* batch at T+30 */
    assert_int_equal(r.series[1].points[0].t, (T0 + 30) * 1000);
    /* a number over a range: a label-less series with a point at every step */
    assert_int_equal(eval(&f, "1+1", S(T0), S(T0 + 20), S(10), false, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 3);
    assert_int_equal(r.series[0].points[2].t, (T0 + 20) * 1000);
    assert_true(r.series[0].points[2].v == 2);
    /* limits: (end - start) / step at most 11,000 */
    assert_int_equal(eval(&f, CPU, S(T0), S(T0) + S(11001), S(1), false, &r), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "exceeded maximum resolution of 11,000 points"));
    assert_int_equal(eval(&f, CPU, S(T0), S(T0) + S(11000), S(1), false, &r), 0);
    assert_int_equal(eval(&f, CPU, S(T0 + 10), S(T0), S(1), false, &r), PS_EINVAL);
    fx_end(&f);
}

/* Two profiles in the same millisecond: a Prometheus series has one sample per ms; the first
 * profile's total stands (as remote_read answers them). Last: it adds a series to the store. */
static void test_eval_same_millisecond(void **state)
{
    (void)state;
    /* T0 + 100 s plus 400 and 700 us (RFC 3339 keeps the nanoseconds; unix seconds round to ms) */
    ingest_at("go/cpu-01.pb.gz", "{job=\"dup\"}", "2027-01-15T08:01:40.0004Z");
    ingest_at("go/cpu-02.pb.gz", "{job=\"dup\"}", "2027-01-15T08:01:40.0007Z");
    fx_t f;
    fx_begin(&f);
    ps_pq_result_t r;
    assert_int_equal(eval(&f, CPU "{job=\"dup\"}", S(T0 + 101), 0, 0, true, &r), 0);
    assert_int_equal(r.n, 1);
    if (r.series[0].points[0].v != (double)CPU01)
        fail_msg("got %.17g, want %lld (cpu-02: %lld)", r.series[0].points[0].v, (long long)CPU01, (long long)CPU02);
    assert_int_equal(eval(&f, "count_over_time(" CPU "{job=\"dup\"}[1m])", S(T0 + 101), 0, 0, true, &r), 0);
    assert_true(r.series[0].points[0].v == 1);
    fx_end(&f);
}

/* ---- aggregation over time ---- */

static void test_type_agg(void **state)
{
    (void)state;
    static const struct {
        const char *id;
        ps_agg_t want;
    } cases[] = {
        {"memory:inuse_space:bytes:space:bytes", PS_AGG_AVG},
        {"memory:inuse_objects:count:space:bytes", PS_AGG_AVG},
        {"memory:inuse_space:bytes:inuse_space:bytes", PS_AGG_AVG},
        {"goroutine:goroutine:count:goroutine:count", PS_AGG_AVG},
        {"goroutines:goroutine:count:goroutine:count", PS_AGG_AVG},
        {"threadcreate:threadcreate:count:threadcreate:count", PS_AGG_AVG},
        {"goroutine:count:count:goroutine:count", PS_AGG_AVG}, /* by its profile name */
        {"memory:inuse_space:bytes:space:bytes:delta", PS_AGG_SUM}, /* a delta counts its interval */
        {"memory:alloc_space:bytes:space:bytes", PS_AGG_SUM},
        {"memory:alloc_space:bytes:space:bytes:delta", PS_AGG_SUM},
        {CPU, PS_AGG_SUM},
        {CPU_SAMPLES, PS_AGG_SUM},
        {"wall:wall:nanoseconds:wall:nanoseconds:delta", PS_AGG_SUM},
        {"mutex:contentions:count:contentions:count:delta", PS_AGG_SUM},
        {"block:delay:nanoseconds:contentions:count", PS_AGG_SUM},
        {"custom:widgets:count:widgets:count", PS_AGG_SUM}, /* unknown: sums */
        {"memory:in:bytes:space:bytes", PS_AGG_SUM},
        {"nocolons", PS_AGG_SUM},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
        if (ps_query_type_agg(cases[i].id) != cases[i].want)
            fail_msg("%s: %s", cases[i].id, ps_agg_name(ps_query_type_agg(cases[i].id)));
    ps_agg_t a;
    ps_norm_t n;
    ps_err_t err = {0};
    assert_int_equal(ps_agg_parse(NULL, "aggregation", &a, &err), 0);
    assert_int_equal(a, PS_AGG_AUTO);
    assert_int_equal(ps_agg_parse("avg", "aggregation", &a, &err), 0);
    assert_int_equal(a, PS_AGG_AVG);
    assert_int_equal(ps_agg_parse("median", "aggregation", &a, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid parameter \"aggregation\": \"median\" is neither \"sum\" nor \"avg\" (the "
                                 "aggregation over time; absent: the profile type's own)");
    assert_int_equal(ps_norm_parse("", "normalize", &n, &err), 0);
    assert_int_equal(n, PS_NORM_AUTO);
    assert_int_equal(ps_norm_parse("rate", "normalize", &n, &err), 0);
    assert_int_equal(n, PS_NORM_RATE);
    assert_int_equal(ps_norm_parse("Rate", "normalize", &n, &err), PS_EINVAL);
}

#define INUSE "memory:inuse_space:bytes:space:bytes"
#define HEAP01_INUSE 1048832LL

static int query_agg(fx_t *f, const char *s, int64_t lo, int64_t hi, ps_agg_t agg, ps_profile_sel_t *ps,
                     ps_profile_t *p)
{
    ps_selector_t sel = parse_sel(f, s);
    ps_profile_query_t q = {.sel = &sel, .param = "query", .ranged = true, .start = lo, .end = hi, .max_series = 100,
                            .agg = agg};
    int ret = ps_query_profile_select(f->r, &q, &f->a, ps, &f->err);
    if (ret == 0)
        ret = ps_query_profile_build(f->r, ps, NULL, PS_PROFILE_ONE, &f->a, p, &f->err);
    ps_selector_dispose(&sel);
    return ret;
}

static void test_merge_avg(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_profile_sel_t ps;
    ps_profile_t p;
    const int64_t lo = S(T0 + 4000), hi = S(T0 + 6000);
    /* one series, three equal snapshots: the mean is one of them */
    assert_int_equal(query_agg(&f, INUSE "{instance=\"x\"}", lo, hi, PS_AGG_AUTO, &ps, &p), 0);
    assert_int_equal(ps.aggs[0], PS_AGG_AVG);
    assert_int_equal(ps.info.profiles, 3);
    assert_int_equal(ps.totals[0], HEAP01_INUSE);
    assert_int_equal(profile_total(&p, 0), HEAP01_INUSE);
    assert_int_equal(p.ncomments, 1);
    ps_str_t c = ps_profile_str(&p, p.comments[0]);
    assert_true(c.len > 40 && memcmp(c.ptr, "profstore: inuse_space: aggregation=avg: ", 41) == 0);
    ps_profile_sel_dispose(&ps);
    /* two series: their means summed */
    assert_int_equal(query_agg(&f, INUSE "{job=\"avg\"}", lo, hi, PS_AGG_AUTO, &ps, &p), 0);
    assert_int_equal(ps.nseries, 2);
    assert_int_equal(ps.totals[0], 2 * HEAP01_INUSE);
    ps_profile_sel_dispose(&ps);
    /* asked to sum: four profiles */
    assert_int_equal(query_agg(&f, INUSE "{job=\"avg\"}", lo, hi, PS_AGG_SUM, &ps, &p), 0);
    assert_int_equal(ps.aggs[0], PS_AGG_SUM);
    assert_int_equal(ps.totals[0], 4 * HEAP01_INUSE);
    ps_profile_sel_dispose(&ps);
    /* a family: inuse types average, alloc types sum, each its own */
    ps_selector_t sel = parse_sel(&f, "memory{instance=\"x\"}");
    ps_profile_query_t q = {.sel = &sel, .param = "query", .ranged = true, .start = lo, .end = hi, .max_series = 100};
    assert_int_equal(ps_query_profile_select(f.r, &q, &f.a, &ps, &f.err), 0);
    assert_int_equal(ps.ntypes, 4);
    for (uint32_t k = 0; k < 4; k++)
        assert_int_equal(ps.aggs[k], strstr(ps.types[k], ":inuse_") ? PS_AGG_AVG : PS_AGG_SUM);
    assert_int_equal(ps_query_profile_build(f.r, &ps, NULL, PS_PROFILE_ONE, &f.a, &p, &f.err), 0);
    assert_int_equal(p.ncomments, 4);
    ps_profile_sel_dispose(&ps);
    ps_selector_dispose(&sel);
    /* the cpu type averages when asked: cpu-01 and cpu-02 of instance a, node by node */
    assert_int_equal(query_agg(&f, CPU "{instance=\"a\"}", S(T0), S(T0 + 60), PS_AGG_AVG, &ps, &p), 0);
    int64_t t = ps.totals[0];
    assert_true(llabs(t - (CPU01 + CPU02) / 2) <= 10000000LL * 100); /* each node's mean rounds */
    ps_profile_sel_dispose(&ps);
    fx_end(&f);
}

static void test_diff_normalize(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    ps_profile_sel_t base, cmp;
    ps_profile_t p;
    ps_diff_norm_t dn;
    /* base: a's two cpu profiles over [T, T+60]; compare: b's one over [T, T+30] */
    assert_int_equal(query_agg(&f, CPU "{instance=\"a\"}", S(T0), S(T0 + 60), PS_AGG_AUTO, &base, &p), 0);
    assert_int_equal(query_agg(&f, CPU "{instance=\"b\"}", S(T0), S(T0 + 30), PS_AGG_AUTO, &cmp, &p), 0);
    int64_t bd = base.info.duration, cd = cmp.info.duration, before = base.totals[0];
    assert_true(bd > 0 && cd > 0);
    ps_query_diff_normalize(&base, &cmp, PS_NORM_NONE, &dn);
    assert_int_equal(dn.used, PS_NORM_NONE);
    assert_int_equal(base.totals[0], before);
    ps_query_diff_normalize(&base, &cmp, PS_NORM_AUTO, &dn); /* windows of 60 and 30 s: rates */
    assert_int_equal(dn.used, PS_NORM_RATE);
    assert_true(dn.base_s == (double)bd / 1e9 && dn.compare_s == (double)cd / 1e9);
    double want = (double)before * (double)cd / (double)bd;
    assert_true(fabs((double)base.totals[0] - want) <= 1000); /* each node rounds */
    ps_profile_sel_dispose(&base);
    ps_profile_sel_dispose(&cmp);
    /* averages are never scaled: the answer says none */
    assert_int_equal(query_agg(&f, INUSE "{instance=\"x\"}", S(T0 + 4000), S(T0 + 6000), PS_AGG_AUTO, &base, &p), 0);
    assert_int_equal(query_agg(&f, INUSE "{instance=\"x\"}", S(T0 + 5005), S(T0 + 5015), PS_AGG_AUTO, &cmp, &p), 0);
    ps_query_diff_normalize(&base, &cmp, PS_NORM_RATE, &dn);
    assert_int_equal(dn.used, PS_NORM_NONE);
    assert_int_equal(base.totals[0], HEAP01_INUSE);
    ps_profile_sel_dispose(&base);
    ps_profile_sel_dispose(&cmp);
    fx_end(&f);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_select_matchers),
        cmocka_unit_test(test_select_short_list_first),
        cmocka_unit_test(test_labels_each_long_values),
        cmocka_unit_test(test_select_union_and_labels),
        cmocka_unit_test(test_merge_range_and_at),
        cmocka_unit_test(test_merge_errors),
        cmocka_unit_test(test_same_measure),
        cmocka_unit_test(test_merge_family),
        cmocka_unit_test(test_type_agg),
        cmocka_unit_test(test_merge_avg),
        cmocka_unit_test(test_diff_normalize),
        cmocka_unit_test(test_eval_instant),
        cmocka_unit_test(test_eval_range),
        cmocka_unit_test(test_eval_same_millisecond),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
