/*
 * test_rollup.c - merges through rollups (storage/rollup.c) equal the raw merge node for node: real
 * Go profiles (cpu, heap, goroutine: sum and average types, several sample types per profile)
 * ingested over three days at irregular times under two label sets, compacted in small chunks
 * that straddle the hours, then random ranges merged by ps_query_merge_range with and without
 * rollups (ps_reader_rollups), SUM and AVG alike; the same after retention cut the data in the
 * middle, after a write into a rolled-up window was refused, with damaged rollup records (read
 * from the level below), and with windows left without a rollup for holding fewer profiles than
 * the store's rollup_min_profiles (a low one, where hours with and without alternate; the
 * default, where sparse hours have none and their days have, and dense hours have one). The rollup decoder is run on mutated records (never a crash, a
 * precise error or a record within its window).
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

#include "query/query.h"
#include "storage/internal.h"

#define HOUR_NS (3600ll * 1000000000ll)
#define DAY_NS (24 * HOUR_NS)
#define T0_S 1795996800ll /* 2026-11-30T00:00:00Z, a day's start */

static uint64_t rng = 0x2545F4914F6CDD1Dull;
static uint64_t next_rand(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static const char *const fixtures[] = {"go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/heap-01.pb.gz",
                                       "go/cpu-03.pb.gz", "go/goroutine-01.pb.gz", "go/cpu-04.pb.gz",
                                       "go/heap-gc-01.pb.gz", "go/cpu-05.pb.gz"};
#define NFIX (sizeof(fixtures) / sizeof(fixtures[0]))

typedef struct ingested {
    int64_t first_s, last_s;
    uint32_t n;
} ingested_t;

static ps_store_t *open_small_chunks_ex(const char *dir, int64_t retention, uint32_t min_profiles, bool no_rollups)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.nosync = true;
    o.map_size = 1ull << 30;
    o.retention_ns = retention;
    o.rollup_min_profiles = min_profiles; /* 0: PS_ROLLUP_MIN_PROFILES */
    o.compact_max_profiles = 7; /* chunks of 7 profiles: many straddle an hour */
    o.no_rollups = no_rollups;
    o.rollup_backfill_steps = 64; /* the backfill in parts */
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

static ps_store_t *open_small_chunks(const char *dir, int64_t retention, uint32_t min_profiles)
{
    return open_small_chunks_ex(dir, retention, min_profiles, false);
}

static void compact(ps_store_t *s)
{
    uint32_t nc = 0;
    ps_err_t err;
    if (ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nc, &err) != 0)
        fail_msg("compact: %s", err.msg);
}

/* profiles every 1..25 minutes (with dense, every 10..50 s in every third hour) over days days
 * from T0_S, fixtures in turn, under two label sets; compacted every 9 profiles; the seconds of
 * the first and last one in *in */
static void fill_ex(ps_store_t *s, int days, bool dense, ingested_t *in)
{
    int64_t t = T0_S + 17;
    memset(in, 0, sizeof(*in));
    in->first_s = t;
    while (t < T0_S + days * 86400ll) {
        const char *f = fixtures[in->n % NFIX];
        ps_test_ingest(s, f, "{job=\"a\"}", t);
        if (in->n % 3 != 1)
            ps_test_ingest(s, f, "{job=\"b\"}", t);
        in->last_s = t;
        in->n++;
        if (in->n % 9 == 0)
            compact(s);
        if (dense && (t - T0_S) / 3600 % 3 == 0)
            t += 10 + (int64_t)(next_rand() % 41);
        else
            t += 60 + (int64_t)(next_rand() % (25 * 60));
    }
    compact(s);
}

static void fill(ps_store_t *s, int days, ingested_t *in)
{
    fill_ex(s, days, false, in);
}

typedef struct group {
    const char *name;
    uint64_t sids[8];
    ps_labels_t labels[8];
    uint32_t n;
} group_t;

typedef struct groups {
    group_t g[32];
    uint32_t n;
    ps_arena_t *a;
} groups_t;

static int on_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    groups_t *gs = ctx;
    const ps_label_pair_t *nm = ps_labels_get(ls, "__name__");
    assert_non_null(nm);
    group_t *g = NULL;
    for (uint32_t i = 0; i < gs->n; i++)
        if (strcmp(gs->g[i].name, nm->value) == 0)
            g = &gs->g[i];
    if (g == NULL) {
        assert_true(gs->n < 32);
        g = &gs->g[gs->n++];
        g->name = ps_arena_strndup(gs->a, nm->value, nm->vlen);
    }
    assert_true(g->n < 8);
    g->sids[g->n] = sid;
    g->labels[g->n] = *ls;
    g->n++;
    return 0;
}

/* every profile series grouped by profile type */
static void series_groups(ps_reader_t *r, ps_arena_t *a, groups_t *gs)
{
    memset(gs, 0, sizeof(*gs));
    gs->a = a;
    ps_err_t err;
    assert_int_equal(ps_reader_series_foreach(r, on_series, gs, &err), 0);
}

/* one merge of set over [start, end] with and without rollups: the same nodes, values and info */
static void check_merge(ps_reader_t *ra, ps_reader_t *rb, const ps_series_set_t *set, int64_t start, int64_t end,
                        ps_agg_t agg, const char *what)
{
    ps_nodemap_t ma, mb;
    ps_nodemap_init(&ma);
    ps_nodemap_init(&mb);
    ps_sum_info_t ia = {0}, ib = {0};
    ps_err_t err;
    int rc = ps_query_merge_range(ra, set, start, end, agg, &ma, &ia, &err);
    if (rc != 0)
        fail_msg("%s: rollups: %s", what, err.msg);
    if (ps_query_merge_range(rb, set, start, end, agg, &mb, &ib, &err) != 0)
        fail_msg("%s: raw: %s", what, err.msg);
    if (ma.count != mb.count || memcmp(&ia, &ib, sizeof(ia)) != 0)
        fail_msg("%s [%lld, %lld] agg %d: %zu nodes, %llu profiles, total %lld; raw %zu nodes, %llu profiles, total %lld",
                 what, (long long)start, (long long)end, (int)agg, (size_t)ma.count,
                 (unsigned long long)ia.profiles, (long long)ia.total, (size_t)mb.count,
                 (unsigned long long)ib.profiles, (long long)ib.total);
    for (size_t i = 0; i < mb.cap; i++)
        if (mb.keys[i] != 0 && ps_nodemap_get(&ma, mb.keys[i]) != mb.vals[i])
            fail_msg("%s [%lld, %lld] agg %d: node %llu: %lld with rollups, %lld raw", what, (long long)start,
                     (long long)end, (int)agg, (unsigned long long)mb.keys[i],
                     (long long)ps_nodemap_get(&ma, mb.keys[i]), (long long)mb.vals[i]);
    ps_nodemap_dispose(&ma);
    ps_nodemap_dispose(&mb);
}

/* n random ranges (and the whole span, and whole days) inside [lo, hi] (ns) over every group,
 * each series alone and the group together, in its own aggregation and in the other */
static void check_ranges(ps_store_t *s, int64_t lo, int64_t hi, int n, bool unclamp, const char *what)
{
    ps_reader_t *ra, *rb;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &ra, &err), 0);
    assert_int_equal(ps_reader_begin(s, &rb, &err), 0);
    if (unclamp) {
        ps_reader_unclamp(ra);
        ps_reader_unclamp(rb);
    }
    ps_reader_rollups(rb, false);
    ps_arena_t a = PS_ARENA_INIT;
    groups_t gs;
    series_groups(ra, &a, &gs);
    assert_true(gs.n >= 6);
    for (int k = 0; k < n + 3; k++) {
        int64_t start, end;
        if (k == 0) {
            start = lo;
            end = hi;
        } else if (k == 1) { /* whole days exactly */
            start = T0_S * 1000000000ll;
            end = start + 2 * DAY_NS - 1;
        } else if (k == 2) { /* whole hours exactly */
            start = T0_S * 1000000000ll + 5 * HOUR_NS;
            end = start + 30 * HOUR_NS - 1;
        } else {
            uint64_t span = (uint64_t)(hi - lo);
            start = lo + (int64_t)(next_rand() % span);
            end = start + (int64_t)(next_rand() % (span / (1 + next_rand() % 4)));
        }
        for (uint32_t g = 0; g < gs.n; g++) {
            ps_series_set_t all = {gs.g[g].n, gs.g[g].sids, gs.g[g].labels};
            ps_agg_t own = ps_query_type_agg(gs.g[g].name);
            check_merge(ra, rb, &all, start, end, own, what);
            check_merge(ra, rb, &all, start, end, own == PS_AGG_AVG ? PS_AGG_SUM : PS_AGG_AVG, what);
            ps_series_set_t one = {1, gs.g[g].sids, gs.g[g].labels};
            check_merge(ra, rb, &one, start, end, own, what);
        }
    }
    ps_arena_dispose(&a);
    ps_reader_end(ra);
    ps_reader_end(rb);
}

static size_t count_calls;
static void count_node(void *ctx, uint64_t node, int64_t v)
{
    (void)ctx;
    (void)node;
    (void)v;
    count_calls++;
}

/* the closed hours and days (all but the last) of a series holding at least min profiles: those
 * with a rollup */
typedef struct windows {
    uint32_t min;
    int64_t last_h, last_d;
    uint64_t in_h, in_d; /* profiles in the hour and day last_h, last_d */
    uint64_t hours, days;
} windows_t;

static int on_window(void *ctx, const ps_stored_profile_t *p)
{
    windows_t *w = ctx;
    int64_t h = p->ts / HOUR_NS, d = p->ts / DAY_NS;
    if (h != w->last_h) {
        w->hours += w->last_h != INT64_MIN && w->in_h >= w->min;
        w->in_h = 0;
    }
    if (d != w->last_d) {
        w->days += w->last_d != INT64_MIN && w->in_d >= w->min;
        w->in_d = 0;
    }
    w->in_h++;
    w->in_d++;
    w->last_h = h;
    w->last_d = d;
    return 0;
}

/* the rollups s should hold with rollup_min_profiles min, hours and days counted apart */
static void want_rollups(ps_store_t *s, uint32_t min, uint64_t *hours, uint64_t *days)
{
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_arena_t a = PS_ARENA_INIT;
    groups_t gs;
    series_groups(r, &a, &gs);
    *hours = *days = 0;
    for (uint32_t g = 0; g < gs.n; g++)
        for (uint32_t i = 0; i < gs.g[g].n; i++) {
            windows_t w = {min, INT64_MIN, INT64_MIN, 0, 0, 0, 0};
            assert_int_equal(ps_reader_profiles(r, gs.g[g].sids[i], INT64_MIN, INT64_MAX, true, on_window, &w, &err), 0);
            *hours += w.hours;
            *days += w.days;
        }
    ps_arena_dispose(&a);
    ps_reader_end(r);
}

/* the rollups s holds, per level */
static void count_rollups(ps_store_t *s, uint64_t *hours, uint64_t *days)
{
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    ps_cur_t cur;
    assert_true(ps_cur_open(&cur, &t, DB_ROLLUPS, "reading"));
    *hours = *days = 0;
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        uint8_t level = ((const uint8_t *)cur.k.mv_data)[8];
        assert_true(level <= 1);
        *(level == 0 ? hours : days) += 1;
    }
    ps_cur_close(&cur);
    ps_txn_abort(&t);
}

static void on_damage(void *ctx, const char *msg)
{
    char *msgs = ctx;
    size_t n = strlen(msgs);
    snprintf(msgs + n, 1024 - n, "%s\n", msg);
}

static void test_rollup_merges_equal_raw(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-rollup-XXXXXX");
    ps_store_t *s = open_small_chunks(dir, 0, 3);
    rng = 0x2545F4914F6CDD1Dull;
    ingested_t in;
    fill(s, 3, &in);
    ps_store_stats_t st;
    ps_err_t err;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    /* a rollup for each closed hour and day (all but a series' last) holding at least 3 profiles
     * of a series: some hours (a profile every 1 to 25 minutes) have one, some do not */
    {
        uint64_t hours, days, closed_hours, closed_days, have_hours, have_days;
        want_rollups(s, 3, &hours, &days);
        want_rollups(s, 1, &closed_hours, &closed_days);
        count_rollups(s, &have_hours, &have_days);
        assert_int_equal(have_hours, hours);
        assert_int_equal(have_days, days);
        assert_int_equal(days, closed_days);
        assert_true(hours > 0 && hours < closed_hours);
        assert_int_equal(st.rollups, hours + days);
    }
    /* rollups in use: a whole-span merge of one series reads fewer values */
    {
        ps_reader_t *r;
        assert_int_equal(ps_reader_begin(s, &r, &err), 0);
        ps_sum_info_t ia = {0}, ib = {0};
        count_calls = 0;
        assert_int_equal(ps_reader_sum(r, 1, INT64_MIN, INT64_MAX, count_node, NULL, &ia, &err), 0);
        size_t with = count_calls;
        ps_reader_rollups(r, false);
        count_calls = 0;
        assert_int_equal(ps_reader_sum(r, 1, INT64_MIN, INT64_MAX, count_node, NULL, &ib, &err), 0);
        /* 199 profiles: 28,820 node sums from their chunks; 13,282 through the rollups (13,350 when
         * every hour had one: a run of hours without is summed from its chunks, node by node
         * across their profiles, not hour by hour) */
        assert_int_equal(ia.profiles, 199);
        assert_int_equal(count_calls, 28820);
        assert_int_equal(with, 13282);
        assert_memory_equal(&ia, &ib, sizeof(ia));
        ps_reader_end(r);
    }
    int64_t lo = in.first_s * 1000000000ll - HOUR_NS, hi = in.last_s * 1000000000ll + HOUR_NS;
    check_ranges(s, lo, hi, 60, false, "3 days");

    /* a write into a rolled-up window is refused (out of order): the rollups stay right */
    {
        size_t len;
        uint8_t *b = ps_test_read_fixture("go/cpu-01.pb.gz", &len);
        char when[32];
        snprintf(when, sizeof(when), "%lld", (long long)(T0_S + 3600 + 7));
        ps_ingest_params_t ip = {.labels = "{job=\"a\"}", .labels_len = 9, .time = when, .time_len = strlen(when),
                                 .delta = -1};
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        assert_int_equal(ps_ingest_prepare(b, len, &ip, NULL, &a, &app, &err), 0);
        app.series_ids = ps_arena_calloc(&a, app.nseries, sizeof(uint64_t));
        app.series_samples = ps_arena_calloc(&a, app.nseries, sizeof(uint32_t));
        ps_append_t *items[1] = {&app};
        assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 1, &err), 0);
        assert_int_equal(app.status, PS_EOUTOFORDER);
        ps_arena_dispose(&a);
        free(b);
    }

    /* damaged records: each read from the level below */
    {
        ps_txn_t t;
        assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "damaging"), 0);
        ps_cur_t cur;
        assert_true(ps_cur_open(&cur, &t, DB_ROLLUPS, "damaging"));
        uint8_t keys[6][17];
        int nk = 0;
        int i = 0;
        for (bool on = ps_cur_first(&cur); on && nk < 6; on = ps_cur_next(&cur), i++)
            if (i % 7 == 3)
                memcpy(keys[nk++], cur.k.mv_data, 17);
        ps_cur_close(&cur);
        assert_int_equal(nk, 6);
        static const uint8_t junk[][6] = {{1}, {2, 1, 2, 3}, {1, 0, 0, 0, 0, 0}, {1, 1, 0xff}, {0}, {1, 1, 1, 0, 0, 0}};
        for (int k = 0; k < nk; k++)
            assert_true(ps_txn_put(&t, DB_ROLLUPS, keys[k], 17, junk[k], k + 1, 0, "damaging"));
        assert_int_equal(ps_txn_commit(&t, &err, "damaging"), 0);
    }
    check_ranges(s, lo, hi, 20, false, "damaged");
    /* and the check reports each of them */
    {
        ps_check_stats_t cs;
        char msgs[1024] = "";
        assert_int_equal(ps_store_check(s, on_damage, msgs, &cs, NULL, &err), 0);
        assert_int_equal(cs.damaged, 6);
        assert_non_null(strstr(msgs, "rollup from "));
        assert_non_null(strstr(msgs, "rollup: unknown encoding 2"));
    }

    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* retention cuts the data in the middle of a day: the rollups of the windows it reached go, those
 * after stay; merges of what is left (unclamped readers) are the same either way */
static void test_rollup_retention(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-rollup-XXXXXX");
    int64_t retention = 20ll * DAY_NS;
    ps_store_t *s = open_small_chunks(dir, retention, 3);
    rng = 0x9E3779B97F4A7C15ull;
    ingested_t in;
    fill(s, 3, &in);
    ps_err_t err;
    ps_store_stats_t before, after;
    assert_int_equal(ps_store_stats(s, &before, &err), 0);
    int64_t cutoff = T0_S * 1000000000ll + DAY_NS + 7 * HOUR_NS + 1234;
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), cutoff + retention, &dropped, &err), 0);
    assert_int_equal(ps_store_stats(s, &after, &err), 0);
    assert_true(after.rollups < before.rollups && after.rollups > 0);
    /* no rollup starts before the cutoff */
    {
        ps_txn_t t;
        assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
        ps_cur_t cur;
        assert_true(ps_cur_open(&cur, &t, DB_ROLLUPS, "reading"));
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur))
            assert_true(ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 9)) >= cutoff);
        ps_cur_close(&cur);
        ps_txn_abort(&t);
    }
    check_ranges(s, in.first_s * 1000000000ll - HOUR_NS, in.last_s * 1000000000ll + HOUR_NS, 40, true,
                 "after retention");
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* the default rule (PS_ROLLUP_MIN_PROFILES): every third hour dense (a profile every 10 to 50 s)
 * with a rollup when it holds enough profiles of the series, the sparse hours without, their days
 * with; merges through them equal the raw ones */
static void test_rollup_min_profiles(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-rollup-XXXXXX");
    ps_store_t *s = open_small_chunks(dir, 0, 0);
    rng = 0x853C49E6748FEA9Bull;
    ingested_t in;
    fill_ex(s, 2, true, &in);
    uint64_t hours, days, closed_hours, closed_days, have_hours, have_days;
    want_rollups(s, PS_ROLLUP_MIN_PROFILES, &hours, &days);
    want_rollups(s, 1, &closed_hours, &closed_days);
    count_rollups(s, &have_hours, &have_days);
    assert_int_equal(have_hours, hours);
    assert_int_equal(have_days, days);
    assert_int_equal(days, closed_days);
    assert_true(hours > 0 && hours < closed_hours);
    check_ranges(s, in.first_s * 1000000000ll - HOUR_NS, in.last_s * 1000000000ll + HOUR_NS, 40, false,
                 "default rule");
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* every rollup record of s, keys and values, in key order, into b */
static void dump_rollups(ps_store_t *s, ps_buf_t *b)
{
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    ps_cur_t cur;
    assert_true(ps_cur_open(&cur, &t, DB_ROLLUPS, "reading"));
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        uint8_t n[4] = {(uint8_t)cur.v.mv_size, (uint8_t)(cur.v.mv_size >> 8), (uint8_t)(cur.v.mv_size >> 16), 0};
        ps_buf_append(b, cur.k.mv_data, cur.k.mv_size);
        ps_buf_append(b, n, 4);
        ps_buf_append(b, cur.v.mv_data, cur.v.mv_size);
    }
    ps_cur_close(&cur);
    ps_txn_abort(&t);
}

/* the backfill's cursor (DB_INFO "rollfill"): its length, 0 when absent */
static size_t backfill_state(ps_store_t *s)
{
    ps_txn_t t;
    ps_err_t err;
    MDB_val v = {0, NULL};
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    bool found = ps_txn_get(&t, DB_INFO, "rollfill", 8, &v, "reading");
    ps_txn_abort(&t);
    return found ? v.mv_size : 0;
}

/* windows compacted without rollups (as before schema 8, here under the option no_rollups) get
 * theirs from the backfill, a bounded part at each compaction: afterwards the store holds the
 * very records a store that made them at compaction holds, and merges through them equal raw */
static void test_rollup_backfill(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-rollup-XXXXXX"), *dir2 = ps_test_tmpdir("/tmp/ps-test-rollup-XXXXXX");
    ps_store_t *s = open_small_chunks_ex(dir, 0, 3, true);
    rng = 0x2545F4914F6CDD1Dull;
    ingested_t in;
    fill_ex(s, 2, true, &in);
    uint64_t hours, days;
    count_rollups(s, &hours, &days);
    assert_int_equal(hours + days, 0);
    assert_int_equal(backfill_state(s), 0); /* made without rollups: nothing done, nothing to do */
    ps_test_close_store(s);
    /* the same profiles with rollups from the start: a new store has none to backfill */
    ps_store_t *s2 = open_small_chunks(dir2, 0, 3);
    rng = 0x2545F4914F6CDD1Dull;
    fill_ex(s2, 2, true, &in);
    assert_int_equal(backfill_state(s2), 1);
    ps_buf_t want = PS_BUF_INIT, got = PS_BUF_INIT;
    dump_rollups(s2, &want);
    count_rollups(s2, &hours, &days);
    assert_true(hours > 0 && days > 0);

    s = open_small_chunks(dir, 0, 3);
    int calls = 0;
    while (backfill_state(s) != 1) {
        assert_true(++calls < 100);
        compact(s);
        if (calls == 1) { /* a part: 64 steps of 4 hours at most */
            uint64_t h1, d1;
            count_rollups(s, &h1, &d1);
            assert_true(h1 > 0 && h1 < hours);
            assert_int_equal(backfill_state(s), 16);
        }
    }
    assert_true(calls >= 3);
    dump_rollups(s, &got);
    assert_int_equal(got.len, want.len);
    assert_memory_equal(got.data, want.data, want.len);
    check_ranges(s, in.first_s * 1000000000ll - HOUR_NS, in.last_s * 1000000000ll + HOUR_NS, 30, false,
                 "backfilled");
    /* done: another compaction changes nothing */
    compact(s);
    ps_buf_reset(&got);
    dump_rollups(s, &got);
    assert_int_equal(got.len, want.len);
    ps_buf_dispose(&want);
    ps_buf_dispose(&got);
    ps_test_close_store(s);
    ps_test_close_store(s2);
    ps_test_rm_rf(dir);
    ps_test_rm_rf(dir2);
    free(dir);
    free(dir2);
}

/* the decoder on every truncation and on random byte changes of real records: a precise error, or
 * a record inside its window with ascending nodes and positive values */
static void test_rollup_decode_damage(void **state)
{
    (void)state;
    uint64_t nodes[] = {0, 1, 7, 300, 1ull << 40};
    int64_t values[] = {10000000, 20000000, 30000000, INT64_MAX / 2, 1};
    ps_rollup_t r = {3, 5 * HOUR_NS + 10, 5 * HOUR_NS + 99, 30000000000ll, 123, 10000000ll, 5, nodes, values};
    ps_buf_t b = PS_BUF_INIT;
    ps_rollup_encode(&r, &b);
    ps_arena_t a = PS_ARENA_INIT;
    ps_rollup_t d;
    ps_err_t err;
    assert_int_equal(ps_rollup_decode(b.data, b.len, 5 * HOUR_NS, HOUR_NS, &a, &d, &err), 0);
    assert_int_equal(d.n, 5);
    assert_memory_equal(d.nodes, nodes, sizeof(nodes));
    assert_memory_equal(d.values, values, sizeof(values));
    assert_int_equal(d.profiles, 3);
    assert_int_equal(d.max_ts, 5 * HOUR_NS + 99);
    /* another window: refused, naming it */
    assert_int_equal(ps_rollup_decode(b.data, b.len, 6 * HOUR_NS, HOUR_NS, &a, &d, &err), PS_ECORRUPT);
    assert_string_equal(err.msg, "rollup: profiles from 18000000000010 to +89 ns outside the window [21600000000000, "
                                 "25199999999999]");
    for (size_t cut = 0; cut < b.len; cut++)
        assert_int_equal(ps_rollup_decode(b.data, cut, 5 * HOUR_NS, HOUR_NS, &a, &d, &err), PS_ECORRUPT);
    uint8_t *m = malloc(b.len);
    for (int k = 0; k < 20000; k++) {
        memcpy(m, b.data, b.len);
        for (int j = 0; j < 1 + (int)(next_rand() % 3); j++)
            m[next_rand() % b.len] = (uint8_t)next_rand();
        ps_arena_reset(&a);
        if (ps_rollup_decode(m, b.len, 5 * HOUR_NS, HOUR_NS, &a, &d, &err) != 0) {
            assert_int_equal(err.code, PS_ECORRUPT);
            continue;
        }
        assert_true(d.profiles >= 1 && d.min_ts >= 5 * HOUR_NS && d.max_ts < 6 * HOUR_NS && d.min_ts <= d.max_ts);
        for (uint32_t i = 0; i < d.n; i++)
            assert_true(d.values[i] >= 1 && (i == 0 || d.nodes[i] > d.nodes[i - 1]));
    }
    free(m);
    ps_arena_dispose(&a);
    ps_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rollup_decode_damage),
        cmocka_unit_test(test_rollup_merges_equal_raw),
        cmocka_unit_test(test_rollup_retention),
        cmocka_unit_test(test_rollup_min_profiles),
        cmocka_unit_test(test_rollup_backfill),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
