/*
 * test_tsdb.c - unit tests for src/query/tsdb.c (/api/v1/status/tsdb's counts): a store where
 * job=j<n> has n+1 instances (x0..x<n>) of the Go CPU profile (2 series each), so every list has
 * ties and distinct counts; the top lists are exact at every limit from 1 to all (value
 * descending, then name ascending), label pairs and value bytes add up, the time range is the
 * oldest and newest push; an empty store and a bad limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "../testutil.h"
#include "storefix.h"
#include "query/tsdb.h"

#define JOBS 10
#define T0 1796022000LL
static const char *CPU = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta";
static const char *SAMPLES = "process_cpu:samples:count:cpu:nanoseconds:delta";

static ps_store_t *store;
static char *dir;

static int setup(void **state)
{
    (void)state;
    store = ps_test_store_open("/tmp/ps-test-tsdb-XXXXXX", &dir);
    int64_t t = T0;
    for (int n = 0; n < JOBS; n++)
        for (int m = 0; m <= n; m++) {
            char labels[64];
            snprintf(labels, sizeof(labels), "{job=\"j%d\",instance=\"x%d\"}", n, m);
            ps_test_ingest(store, "go/cpu-01.pb.gz", labels, t++);
        }
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    ps_test_store_close(store, dir);
    return 0;
}

static void assert_top(const ps_tsdb_top_t *t, uint32_t n, const char *const *names, const uint64_t *values)
{
    assert_int_equal(t->n, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_string_equal(t->items[i].name, names[i]);
        assert_int_equal(t->items[i].value, values[i]);
    }
}

static void stats(uint32_t limit, ps_arena_t *a, ps_tsdb_stats_t *out)
{
    ps_reader_t *r;
    ps_err_t err;
    ps_err_clear(&err);
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    assert_int_equal(ps_query_tsdb_stats(r, limit, a, out, &err), 0);
    ps_reader_end(r);
}

static void test_all(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_tsdb_stats_t s;
    stats(PS_TSDB_LIMIT_MAX, &a, &s);
    uint64_t pushes = JOBS * (JOBS + 1) / 2;
    assert_int_equal(s.series, 2 * pushes);
    assert_int_equal(s.profile_series, 2 * pushes);
    assert_int_equal(s.float_series, 0);
    assert_int_equal(s.label_pairs, 2 + JOBS + JOBS);
    assert_int_equal(s.min_ts, T0 * 1000000000LL);
    assert_int_equal(s.max_ts, (T0 + (int64_t)pushes - 1) * 1000000000LL);
    const char *mn[] = {CPU, SAMPLES};
    uint64_t mv[] = {pushes, pushes};
    assert_top(&s.by_metric_name, 2, mn, mv);
    const char *ln[] = {"instance", "job", "__name__"};
    uint64_t lv[] = {JOBS, JOBS, 2};
    assert_top(&s.values_by_label, 3, ln, lv);
    const char *bn[] = {"__name__", "instance", "job"};
    uint64_t bv[] = {strlen(CPU) + strlen(SAMPLES), 2 * JOBS, 2 * JOBS};
    assert_top(&s.bytes_by_label, 3, bn, bv);
    /* pairs: the two types (every series), instance=x<m> (JOBS - m jobs x 2), job=j<n> ((n+1) x 2) */
    const ps_tsdb_top_t *p = &s.series_by_pair;
    assert_int_equal(p->n, 2 + 2 * JOBS);
    char want[22][80];
    uint64_t wv[22];
    int k = 0;
    snprintf(want[k], 80, "__name__=%s", CPU), wv[k++] = pushes;
    snprintf(want[k], 80, "__name__=%s", SAMPLES), wv[k++] = pushes;
    for (int c = JOBS; c >= 1; c--) { /* count 2c: instance=x<JOBS-c>, then job=j<c-1> */
        snprintf(want[k], 80, "instance=x%d", JOBS - c), wv[k++] = 2 * (uint64_t)c;
        snprintf(want[k], 80, "job=j%d", c - 1), wv[k++] = 2 * (uint64_t)c;
    }
    for (int i = 0; i < k; i++) {
        assert_string_equal(p->items[i].name, want[i]);
        assert_int_equal(p->items[i].value, wv[i]);
    }
    /* every limit gives the first `limit` of the full list */
    for (uint32_t limit = 1; limit <= 23; limit++) {
        ps_arena_t b = PS_ARENA_INIT;
        ps_tsdb_stats_t t;
        stats(limit, &b, &t);
        uint32_t n = limit < (uint32_t)k ? limit : (uint32_t)k;
        assert_int_equal(t.series_by_pair.n, n);
        for (uint32_t i = 0; i < n; i++) {
            assert_string_equal(t.series_by_pair.items[i].name, want[i]);
            assert_int_equal(t.series_by_pair.items[i].value, wv[i]);
        }
        assert_int_equal(t.values_by_label.n, limit < 3 ? limit : 3);
        assert_string_equal(t.values_by_label.items[0].name, "instance");
        assert_int_equal(t.label_pairs, 22);
        ps_arena_dispose(&b);
    }
    ps_arena_dispose(&a);
}

static void test_empty_and_bad_limit(void **state)
{
    (void)state;
    char *d2;
    ps_store_t *empty = ps_test_store_open("/tmp/ps-test-tsdb-empty-XXXXXX", &d2);
    ps_reader_t *r;
    ps_err_t err;
    ps_err_clear(&err);
    ps_arena_t a = PS_ARENA_INIT;
    ps_tsdb_stats_t s;
    assert_int_equal(ps_reader_begin(empty, &r, &err), 0);
    assert_int_equal(ps_query_tsdb_stats(r, 10, &a, &s, &err), 0);
    assert_int_equal(s.series, 0);
    assert_int_equal(s.label_pairs, 0);
    assert_int_equal(s.min_ts, 0);
    assert_int_equal(s.max_ts, 0);
    assert_int_equal(s.series_by_pair.n, 0);
    assert_int_equal(ps_query_tsdb_stats(r, 0, &a, &s, &err), PS_EINVAL);
    assert_string_equal(err.msg, "limit: must be 1 to 10000, got 0");
    assert_int_equal(ps_query_tsdb_stats(r, PS_TSDB_LIMIT_MAX + 1, &a, &s, &err), PS_EINVAL);
    ps_reader_end(r);
    ps_arena_dispose(&a);
    ps_test_store_close(empty, d2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_all),
        cmocka_unit_test(test_empty_and_bad_limit),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
