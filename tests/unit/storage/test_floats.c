/*
 * test_floats.c - float series in the store (storage/floats.c): write and read back bit for bit,
 * Prometheus' out-of-order and duplicate rules with exact counts, the cut at 120 samples and at the
 * compaction window, durability across reopen, compaction and retention with exact chunk counts,
 * the series kind, damaged chunks, metadata, open chunks split into a tail and a prefix, the
 * upgrades of schema 1, 2 and 3 directories (closed chunks dense from 4, streaming the same XOR
 * chunks), and the captured
 * Prometheus 2.42 remote-write bodies replayed (decode, store, read back, compare with their .json).
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
#include <jansson.h>

#include "../testutil.h"
#include "../storewriter.h"

#include "core/labels.h"
#include "core/timeutil.h"
#include "proto/remote.h"
#include "storage/internal.h"
#include "storage/store.h"
#include "storage/float_log.h"
#include "storage/xorchunk.h"

#define STALE PS_XOR_STALE_NAN
#define MIN_MS (60 * 1000ll)
#define HOUR_MS (3600 * 1000ll)

static char *tmpdir(void) { return ps_test_tmpdir("/tmp/ps-floats-XXXXXX"); }

/* opts.float_log_pages of the stores open_opts opens: the tests of the head records the writer
 * writes at each flush set -1 (no float log) */
static int32_t log_pages;

static ps_store_t *open_opts(const char *dir, int64_t retention_ns, int64_t window_ns)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.float_log_pages = log_pages;
    o.map_size = 1ull << 30;
    o.retention_ns = retention_ns;
    o.compact_window_ns = window_ns;
    o.nosync = true;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

static ps_store_t *open_store(const char *dir) { return open_opts(dir, 0, 0); }

/* {__name__=name, job=job} */
static ps_labels_t mk_labels(ps_arena_t *a, const char *name, const char *job)
{
    ps_labels_t ls = {0};
    ps_labels_set(&ls, a, "__name__", 8, name, strlen(name));
    if (job)
        ps_labels_set(&ls, a, "job", 3, job, strlen(job));
    return ls;
}

static double bits_float(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static uint64_t float_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* One series, samples given: writes in one call; returns the call's result. */
static int write_f(ps_store_t *s, const ps_labels_t *ls, const ps_float_sample_t *smp, uint32_t n,
                   ps_float_append_t *out)
{
    memset(out, 0, sizeof(*out));
    out->labels = ls;
    out->samples = smp;
    out->nsamples = n;
    ps_float_append_t *items[1] = {out};
    ps_err_t err;
    int rc = ps_store_write(ps_test_writer(s), NULL, 0, items, 1, NULL, 0, &err);
    if (rc != 0)
        fail_msg("write: %s", err.msg);
    return out->status;
}

typedef struct collect {
    ps_float_sample_t *s;
    size_t n, cap;
    int calls;
} collect_t;

static int on_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    collect_t *c = ctx;
    if (c->n + n > c->cap) {
        c->cap = (c->n + n) * 2;
        c->s = realloc(c->s, c->cap * sizeof(*c->s));
    }
    memcpy(c->s + c->n, s, n * sizeof(*s));
    c->n += n;
    c->calls++;
    return 0;
}

static bool get_rec(ps_store_t *s, int db, uint64_t sid, ps_buf_t *out);

static void read_all(ps_store_t *s, uint64_t sid, int64_t mint, int64_t maxt, collect_t *c, int want_rc)
{
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    memset(c, 0, sizeof(*c));
    int rc = ps_reader_samples(r, sid, mint, maxt, on_samples, c, &err);
    if (rc != want_rc)
        fail_msg("ps_reader_samples: %d (%s), want %d", rc, rc ? err.msg : "", want_rc);
    ps_reader_end(r);
}

typedef struct chunks {
    int n;
    int64_t min_t[128], max_t[128];
    uint32_t count[128];
} chunks_t;

typedef struct records {
    int n, packed;
    size_t bytes[64];
    uint8_t enc[64], key[64][16];
} records_t;

/* The fchunks records of series sid, oldest first. */
static void get_records(ps_store_t *s, uint64_t sid, records_t *rs)
{
    memset(rs, 0, sizeof(*rs));
    MDB_txn *txn;
    MDB_cursor *cur;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_cursor_open(txn, s->dbi[DB_FCHUNKS], &cur), 0);
    MDB_val k, v;
    int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    for (; rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        if (ps_get_be64(k.mv_data) != sid)
            continue;
        assert_true(rs->n < 64);
        rs->bytes[rs->n] = v.mv_size;
        rs->enc[rs->n] = ((const uint8_t *)v.mv_data)[0];
        memcpy(rs->key[rs->n], k.mv_data, 16);
        rs->packed += rs->enc[rs->n] == PS_FLOAT_CHUNK_ENC_PACKED || rs->enc[rs->n] == PS_FLOAT_CHUNK_ENC_DPACKED;
        rs->n++;
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
}

static int on_chunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    chunks_t *c = ctx;
    assert_true(c->n < 128);
    assert_int_equal(ps_xor_validate(chunk, n, NULL), 0);
    c->min_t[c->n] = min_t;
    c->max_t[c->n] = max_t;
    c->count[c->n] = ps_xor_count(chunk, n);
    c->n++;
    return 0;
}

static void get_stats(ps_store_t *s, ps_store_stats_t *st)
{
    ps_err_t err;
    assert_int_equal(ps_store_stats(s, st, &err), 0);
}

/* 300 samples 15 s apart, values with stale markers, NaN payloads, -0.0 and infinities among
 * them: read back bit for bit; chunks cut at 120. */
static void test_roundtrip_and_cut(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "http_requests_total", "api");
    int64_t t0 = 1700000000000ll;
    ps_float_sample_t in[300];
    for (int i = 0; i < 300; i++) {
        in[i].t = t0 + 15000ll * i;
        in[i].v = i * 1.5;
    }
    in[7].v = bits_float(STALE);
    in[8].v = bits_float(0x7ff8000000000001ull);
    in[9].v = -0.0;
    in[10].v = 1.0 / 0.0;
    in[11].v = -1.0 / 0.0;
    /* in batches of 10 samples: the head is continued from the cache */
    uint64_t sid = 0;
    for (int b = 0; b < 30; b++) {
        ps_float_append_t fa;
        assert_int_equal(write_f(s, &ls, in + 10 * b, 10, &fa), 0);
        assert_int_equal(fa.accepted, 10);
        assert_int_equal(fa.out_of_order + fa.dup_conflicts + fa.duplicates + fa.out_of_bounds, 0);
        if (b == 0)
            sid = fa.sid;
        assert_int_equal(fa.sid, sid);
    }
    collect_t c;
    read_all(s, sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 300);
    for (int i = 0; i < 300; i++) {
        assert_int_equal(c.s[i].t, in[i].t);
        assert_int_equal(float_bits(c.s[i].v), float_bits(in[i].v));
    }
    free(c.s);
    /* a range: [t100, t250] */
    read_all(s, sid, in[100].t, in[250].t, &c, 0);
    assert_int_equal(c.n, 151);
    assert_int_equal(c.s[0].t, in[100].t);
    assert_int_equal(c.s[150].t, in[250].t);
    free(c.s);
    /* between two samples: nothing */
    read_all(s, sid, in[5].t + 1, in[6].t - 1, &c, 0);
    assert_int_equal(c.n, 0);
    free(c.s);

    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.series, 1);
    assert_int_equal(st.float_chunks, 2);
    assert_int_equal(st.float_heads, 1);

    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_series_kind_t kind = 0;
    assert_int_equal(ps_reader_series_kind(r, sid, &kind, &err), 0);
    assert_int_equal(kind, PS_SERIES_FLOAT);
    chunks_t ch = {0};
    assert_int_equal(ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_chunk, &ch, &err), 0);
    assert_int_equal(ch.n, 3);
    assert_int_equal(ch.count[0], 120);
    assert_int_equal(ch.count[1], 120);
    assert_int_equal(ch.count[2], 60);
    assert_int_equal(ch.min_t[0], in[0].t);
    assert_int_equal(ch.max_t[0], in[119].t);
    assert_int_equal(ch.min_t[1], in[120].t);
    assert_int_equal(ch.max_t[1], in[239].t);
    assert_int_equal(ch.min_t[2], in[240].t);
    assert_int_equal(ch.max_t[2], in[299].t);
    /* only the chunks overlapping the range */
    memset(&ch, 0, sizeof(ch));
    assert_int_equal(ps_reader_xor_chunks(r, sid, in[130].t, in[200].t, on_chunk, &ch, &err), 0);
    assert_int_equal(ch.n, 1);
    assert_int_equal(ch.min_t[0], in[120].t);
    memset(&ch, 0, sizeof(ch));
    assert_int_equal(ps_reader_xor_chunks(r, sid, in[119].t, in[240].t, on_chunk, &ch, &err), 0);
    assert_int_equal(ch.n, 3);
    /* has_data / latest in ns */
    assert_int_equal(ps_reader_has_data(r, sid, in[0].t * 1000000, in[0].t * 1000000, &err), 1);
    assert_int_equal(ps_reader_has_data(r, sid, in[0].t * 1000000 + 1, in[1].t * 1000000 - 1, &err), 0);
    assert_int_equal(ps_reader_has_data(r, sid, in[299].t * 1000000 + 1, INT64_MAX, &err), 0);
    int64_t ts = 0;
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, INT64_MAX, &ts, &err), 0);
    assert_int_equal(ts, in[299].t * 1000000);
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, in[150].t * 1000000 + 999, &ts, &err), 0);
    assert_int_equal(ts, in[150].t * 1000000);
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, in[120].t * 1000000 - 1, &ts, &err), 0);
    assert_int_equal(ts, in[119].t * 1000000);
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, in[0].t * 1000000 - 1, &ts, &err), PS_ENOTFOUND);
    /* the profile views of a float series are empty, not errors */
    ps_sum_info_t info = {0};
    assert_int_equal(ps_reader_sum(r, sid, INT64_MIN, INT64_MAX, NULL, NULL, &info, &err), 0);
    assert_int_equal(info.profiles, 0);
    ps_reader_end(r);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Prometheus' TSDB appender rules: older than the newest -> out of order; the newest's timestamp
 * with other value bits -> duplicate sample; the same bits -> accepted silently. */
static void test_order_and_duplicates(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "up", "api");
    ps_float_sample_t first[3] = {{1000, 1}, {2000, 2}, {3000, bits_float(STALE)}};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &ls, first, 3, &fa), 0);
    assert_int_equal(fa.accepted, 3);
    ps_float_sample_t next[8] = {
        {3000, bits_float(STALE)},         /* identical stale marker: duplicate, silent */
        {3000, bits_float(0x7ff8000000000001)}, /* other NaN bits: conflict */
        {2000, 2},                         /* older: out of order, even if equal to what is stored */
        {2500, 9},                         /* out of order */
        {4000, 4},                         /* fine */
        {4000, 5},                         /* conflict with the sample just accepted */
        {3999, 5},                         /* out of order */
        {5000, -0.0},                      /* fine */
    };
    assert_int_equal(write_f(s, &ls, next, 8, &fa), 0);
    assert_int_equal(fa.accepted, 2);
    assert_int_equal(fa.duplicates, 1);
    assert_int_equal(fa.dup_conflicts, 2);
    assert_int_equal(fa.first_dup_conflict, 3000);
    assert_int_equal(fa.out_of_order, 3);
    assert_int_equal(fa.first_out_of_order, 2000);
    assert_int_equal(fa.out_of_bounds, 0);
    /* -0.0 after 5000's -0.0 is a duplicate, +0.0 is not (bits differ) */
    ps_float_sample_t z[2] = {{5000, -0.0}, {5000, 0.0}};
    assert_int_equal(write_f(s, &ls, z, 2, &fa), 0);
    assert_int_equal(fa.duplicates, 1);
    assert_int_equal(fa.dup_conflicts, 1);
    collect_t c;
    read_all(s, fa.sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 5);
    int64_t want_t[5] = {1000, 2000, 3000, 4000, 5000};
    uint64_t want_v[5] = {float_bits(1), float_bits(2), STALE, float_bits(4), float_bits(-0.0)};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(c.s[i].t, want_t[i]);
        assert_int_equal(float_bits(c.s[i].v), want_v[i]);
    }
    free(c.s);
    /* the same rules after the writer caches were dropped and after the head was closed: the
     * newest sample then comes from the chunk */
    ps_err_t err;
    uint32_t nchunks = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err), 0);
    assert_int_equal(nchunks, 1);
    ps_float_sample_t again[3] = {{5000, -0.0}, {4500, 1}, {6000, 6}};
    assert_int_equal(write_f(s, &ls, again, 3, &fa), 0);
    assert_int_equal(fa.duplicates, 1);
    assert_int_equal(fa.out_of_order, 1);
    assert_int_equal(fa.first_out_of_order, 4500);
    assert_int_equal(fa.accepted, 1);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Samples older than the retention period are out of bounds; a series whose samples all are is
 * not created. */
static void test_out_of_bounds(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_opts(dir, 3600ll * PS_NS_PER_S, 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "old", NULL);
    int64_t now = ps_time_now() / 1000000;
    ps_float_sample_t old[2] = {{now - 2 * HOUR_MS, 1}, {now - 2 * HOUR_MS + 1000, 1}};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &ls, old, 2, &fa), 0);
    assert_int_equal(fa.out_of_bounds, 2);
    assert_int_equal(fa.first_out_of_bounds, now - 2 * HOUR_MS);
    assert_int_equal(fa.accepted, 0);
    assert_int_equal(fa.sid, 0);
    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.series, 0);
    ps_float_sample_t mixed[3] = {{now - 2 * HOUR_MS, 1}, {now - 1000, 2}, {INT64_MAX, 3}};
    assert_int_equal(write_f(s, &ls, mixed, 3, &fa), 0);
    assert_int_equal(fa.out_of_bounds, 2);
    assert_int_equal(fa.accepted, 1);
    get_stats(s, &st);
    assert_int_equal(st.series, 1);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* What was committed is there after reopening; appending continues the stored head. */
static void test_reopen(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "g", "x");
    ps_float_sample_t in[250];
    for (int i = 0; i < 250; i++)
        in[i] = (ps_float_sample_t){1000ll * i, (double)(i * i) / 7};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &ls, in, 130, &fa), 0);
    uint64_t sid = fa.sid;
    ps_test_close_store(s);
    s = open_store(dir);
    assert_int_equal(write_f(s, &ls, in + 129, 121, &fa), 0);
    assert_int_equal(fa.duplicates, 1);
    assert_int_equal(fa.accepted, 120);
    assert_int_equal(fa.sid, sid);
    ps_test_close_store(s);
    s = open_store(dir);
    collect_t c;
    read_all(s, sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 250);
    for (int i = 0; i < 250; i++) {
        assert_int_equal(c.s[i].t, in[i].t);
        assert_int_equal(float_bits(c.s[i].v), float_bits(in[i].v));
    }
    free(c.s);
    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.float_chunks, 2);
    assert_int_equal(st.float_heads, 1);
    /* the chunks are those an uninterrupted writer makes: 120, 120, 10 */
    ps_reader_t *r;
    ps_err_t err;
    chunks_t ch = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_chunk, &ch, &err), 0);
    ps_reader_end(r);
    assert_int_equal(ch.n, 3);
    assert_int_equal(ch.count[0], 120);
    assert_int_equal(ch.count[1], 120);
    assert_int_equal(ch.count[2], 10);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The head is cut when it would span the compaction window; idle heads are closed by the
 * compactor; retention drops whole chunks, then heads, then the series left empty. */
static void test_window_compaction_retention(void **state)
{
    (void)state;
    char *dir = tmpdir();
    int64_t day = 24 * 3600ll * PS_NS_PER_S;
    ps_store_t *s = open_opts(dir, day, 3600ll * PS_NS_PER_S);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "w", NULL), ls2 = mk_labels(&a, "w2", NULL);
    int64_t base = (ps_time_now() / 1000000 - 10 * HOUR_MS) / HOUR_MS * HOUR_MS;
    ps_float_sample_t in[40];
    for (int i = 0; i < 40; i++)
        in[i] = (ps_float_sample_t){base + 15 * MIN_MS * i, i};
    ps_float_append_t fa, fb;
    assert_int_equal(write_f(s, &ls, in, 40, &fa), 0);
    assert_int_equal(write_f(s, &ls2, in + 39, 1, &fb), 0);
    ps_store_stats_t st;
    get_stats(s, &st);
    /* 4 samples each (the 5th would span 1 h): chunks 0..8 closed, 9 the head. A packed record
     * spans less than a tenth of the retention (2.4 h): chunks 0+1, 2+3, 4+5, 6+7 are packed as
     * chunks 2, 4, 6, 8 are closed (those would make them span 2 h 45 min); 8 stays alone */
    assert_int_equal(st.float_chunks, 5);
    assert_int_equal(st.float_heads, 2);
    ps_err_t err;
    uint32_t n = 99;
    /* not idle yet */
    assert_int_equal(ps_store_compact(ps_test_writer(s), false, ps_time_now(), &n, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(ps_store_compact(ps_test_writer(s), false, ps_time_now() + 3600ll * PS_NS_PER_S, &n, &err), 0);
    assert_int_equal(n, 2);
    get_stats(s, &st);
    assert_int_equal(st.float_chunks, 7); /* 9 beside 8 (spanning 1 h 45 min), and w2's */
    assert_int_equal(st.float_heads, 0);
    /* new samples start a new head */
    ps_float_sample_t more = {base + 10 * HOUR_MS, 40};
    assert_int_equal(write_f(s, &ls, &more, 1, &fa), 0);
    assert_int_equal(fa.accepted, 1);
    /* retention: cutoff 5 h + 1 min after base drops the records of chunks 0..3 (their newest
     * at 1 h 45, 3 h 45), not 4+5 (5 h 45): a packed record goes when all of it is past */
    uint32_t dropped = 99;
    assert_int_equal(ps_store_retain(ps_test_writer(s), (base + 5 * HOUR_MS + MIN_MS) * 1000000 + day, &dropped, &err), 0);
    assert_int_equal(dropped, 0);
    get_stats(s, &st);
    assert_int_equal(st.float_chunks, 5);
    assert_int_equal(st.float_heads, 1);
    collect_t c;
    read_all(s, fa.sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 25);
    assert_int_equal(c.s[0].t, base + 4 * HOUR_MS);
    for (size_t i = 0; i < 24; i++)
        assert_true(c.s[i].t == base + 15 * MIN_MS * (int64_t)(16 + i) && c.s[i].v == (double)(16 + i));
    assert_int_equal(c.s[24].t, base + 10 * HOUR_MS);
    free(c.s);
    /* past w2's only sample and w's chunks, not w's head */
    assert_int_equal(ps_store_retain(ps_test_writer(s), (base + 10 * HOUR_MS) * 1000000 + day, &dropped, &err), 0);
    assert_int_equal(dropped, 1);
    get_stats(s, &st);
    assert_int_equal(st.series, 1);
    assert_int_equal(st.float_chunks, 0);
    assert_int_equal(st.float_heads, 1);
    assert_int_equal(ps_store_retain(ps_test_writer(s), (base + 10 * HOUR_MS + 1) * 1000000 + day, &dropped, &err), 0);
    assert_int_equal(dropped, 1);
    get_stats(s, &st);
    assert_int_equal(st.series, 0);
    assert_int_equal(st.float_heads, 0);
    /* the series can be written again (a new id) */
    ps_float_sample_t late = {base + 11 * HOUR_MS, 1};
    assert_int_equal(write_f(s, &ls, &late, 1, &fb), 0);
    assert_int_equal(fb.accepted, 1);
    assert_true(fb.sid > fa.sid);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* A series keeps the kind it was created with. */
static void test_kind_conflict(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t pl = mk_labels(&a, "process_cpu:cpu:nanoseconds:cpu:nanoseconds", "api");
    ps_labels_t fl = mk_labels(&a, "up", "api");
    ps_str_t strs[1] = {{"", 0}};
    ps_profile_t prof = {0};
    prof.nstrings = 1;
    prof.strings = strs;
    uint32_t ti = 0;
    uint64_t ids[1];
    uint32_t nsmp[1];
    ps_append_t app = {0};
    app.profile = &prof;
    app.nseries = 1;
    app.series_labels = &pl;
    app.type_index = &ti;
    app.ts = 1700000000000000000ll;
    app.series_ids = ids;
    app.series_samples = nsmp;
    ps_float_sample_t smp = {1700000000000ll, 1};
    ps_float_append_t fa;
    memset(&fa, 0, sizeof(fa));
    fa.labels = &fl;
    fa.samples = &smp;
    fa.nsamples = 1;
    ps_append_t *items[1] = {&app};
    ps_float_append_t *fitems[1] = {&fa};
    ps_err_t err;
    /* both in one transaction */
    assert_int_equal(ps_store_write(ps_test_writer(s), items, 1, fitems, 1, NULL, 0, &err), 0);
    assert_int_equal(app.status, 0);
    assert_int_equal(fa.status, 0);
    assert_int_equal(fa.accepted, 1);
    /* floats to the profile series */
    ps_float_append_t fb;
    smp.t++;
    assert_int_equal(write_f(s, &pl, &smp, 1, &fb), PS_ECONFLICT);
    assert_string_equal(fb.err.msg,
                        "series {__name__=\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\", job=\"api\"} holds "
                        "profiles, not float samples");
    assert_int_equal(fb.accepted, 0);
    /* a profile to the float series */
    app.series_labels = &fl;
    app.ts += 1000000000;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 1, &err), 0);
    assert_int_equal(app.status, PS_ECONFLICT);
    assert_string_equal(app.err.msg, "series {__name__=\"up\", job=\"api\"} holds float samples (remote_write), not profiles");
    /* the samples view of the profile series: its totals */
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_series_kind_t kind;
    assert_int_equal(ps_reader_series_kind(r, ids[0], &kind, &err), 0);
    assert_int_equal(kind, PS_SERIES_PROFILE);
    collect_t c = {0};
    assert_int_equal(ps_reader_samples(r, ids[0], INT64_MIN, INT64_MAX, on_samples, &c, &err), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.s[0].t, 1700000000000ll);
    assert_true(c.s[0].v == 0.0);
    free(c.s);
    chunks_t ch = {0};
    assert_int_equal(ps_reader_xor_chunks(r, ids[0], INT64_MIN, INT64_MAX, on_chunk, &ch, &err), 0);
    assert_int_equal(ch.n, 0);
    ps_reader_end(r);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Overwrites the stored value under key in db with bytes (a damaged chunk or head). */
static void poke(ps_store_t *s, int db, const void *key, size_t klen, const void *bytes, size_t n)
{
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &txn), 0);
    MDB_val k = {klen, (void *)key}, v = {n, (void *)bytes};
    assert_int_equal(mdb_put(txn, s->dbi[db], &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
}

static void test_corrupt(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "c", NULL);
    ps_float_sample_t in[130];
    for (int i = 0; i < 130; i++)
        in[i] = (ps_float_sample_t){1000ll * (i + 1), i};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &ls, in, 130, &fa), 0);
    uint64_t sid = fa.sid;
    /* the closed chunk, with its last byte cut off */
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    uint8_t kb[16];
    ps_key_sid_ts(kb, sid, 120000ll * 1000000);
    MDB_val k = {16, kb}, v;
    assert_int_equal(mdb_get(txn, s->dbi[DB_FCHUNKS], &k, &v), 0);
    ps_buf_t good = PS_BUF_INIT;
    ps_buf_append(&good, v.mv_data, v.mv_size);
    mdb_txn_abort(txn);
    assert_int_equal(good.data[0], PS_FLOAT_CHUNK_ENC_DENSE); /* 120 samples, 1 s apart, 0..119: 14 bytes */
    assert_int_equal(good.len, 14);
    /* every single-bit flip: an error or other samples, never a crash or a read outside */
    ps_buf_t flip = PS_BUF_INIT;
    int failed = 0, changed = 0;
    for (size_t byte = 1; byte < good.len; byte++) {
        for (int bit = 0; bit < 8; bit++) {
            ps_buf_reset(&flip);
            ps_buf_append(&flip, good.data, good.len);
            flip.data[byte] ^= (uint8_t)(1u << bit);
            poke(s, DB_FCHUNKS, kb, 16, flip.data, flip.len);
            ps_reader_t *fr;
            ps_err_t ferr;
            collect_t fc = {0};
            assert_int_equal(ps_reader_begin(s, &fr, &ferr), 0);
            int rc = ps_reader_samples(fr, sid, INT64_MIN, INT64_MAX, on_samples, &fc, &ferr);
            ps_reader_end(fr);
            if (rc == PS_ECORRUPT)
                failed++;
            else if (rc == 0)
                changed++;
            else
                fail_msg("byte %zu bit %d: %d", byte, bit, rc);
            free(fc.s);
        }
    }
    assert_int_equal(failed + changed, (int)(good.len - 1) * 8);
    assert_true(failed > 0);
    ps_buf_dispose(&flip);
    poke(s, DB_FCHUNKS, kb, 16, good.data, good.len - 1);
    collect_t c;
    read_all(s, sid, INT64_MIN, INT64_MAX, &c, PS_ECORRUPT);
    free(c.s);
    ps_reader_t *r;
    ps_err_t err;
    chunks_t ch = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_chunk, &ch, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "series 1: damaged float chunk: fdense: "));
    assert_int_equal(ch.n, 0);
    assert_int_equal(ps_reader_has_data(r, sid, INT64_MIN, INT64_MAX, &err), PS_ECORRUPT);
    ps_reader_end(r);
    /* the same samples as a XOR chunk (schema 3), its last byte cut off */
    ps_buf_t xc = PS_BUF_INIT;
    ps_buf_putc(&xc, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_t xa;
    ps_xor_app_init(&xa, &xc);
    for (int i = 0; i < 120; i++)
        assert_int_equal(ps_xor_app_append(&xa, in[i].t, in[i].v, NULL), 0);
    poke(s, DB_FCHUNKS, kb, 16, xc.data, xc.len);
    read_all(s, sid, INT64_MIN, 120000, &c, 0);
    assert_int_equal(c.n, 120);
    free(c.s);
    poke(s, DB_FCHUNKS, kb, 16, xc.data, xc.len - 1);
    memset(&ch, 0, sizeof(ch));
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_chunk, &ch, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "series 1: damaged float chunk: xorchunk: "));
    ps_reader_end(r);
    ps_buf_dispose(&xc);
    /* a wrong encoding byte */
    good.data[0] = 1;
    poke(s, DB_FCHUNKS, kb, 16, good.data, good.len);
    read_all(s, sid, INT64_MIN, INT64_MAX, &c, PS_ECORRUPT);
    free(c.s);
    /* a damaged head fails its series alone when written to, and reads fail */
    uint8_t hk[8];
    ps_enc_be64(hk, sid);
    uint8_t bad[4] = {PS_FLOAT_CHUNK_ENC_XOR, 0, 5, 0};
    poke(s, DB_FHEAD, hk, 8, bad, sizeof(bad));
    ps_sym_caches_clear(ps_test_writer(s));
    ps_float_sample_t one = {500000, 1};
    ps_labels_t ok = mk_labels(&a, "fine", NULL);
    ps_float_append_t f1, f2;
    memset(&f1, 0, sizeof(f1));
    memset(&f2, 0, sizeof(f2));
    f1.labels = &ls, f1.samples = &one, f1.nsamples = 1;
    f2.labels = &ok, f2.samples = &one, f2.nsamples = 1;
    ps_float_append_t *items[2] = {&f1, &f2};
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, items, 2, NULL, 0, &err), 0);
    assert_int_equal(f1.status, PS_ECORRUPT);
    assert_non_null(strstr(f1.err.msg, "series 1: damaged float head: "));
    assert_int_equal(f2.status, 0);
    assert_int_equal(f2.accepted, 1);
    /* the padded head (schema 11) it wrote: one sample whole (p = 0, txn 0, 14 bytes) in 32 */
    ps_buf_t ph = PS_BUF_INIT;
    uint8_t fk[8];
    ps_enc_be64(fk, f2.sid);
    assert_true(get_rec(s, DB_FHEAD, f2.sid, &ph));
    assert_int_equal(ph.len, 32);
    assert_int_equal(ph.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_equal(ph.data[1], 0);
    assert_int_equal(ph.data[2], 0);
    read_all(s, f2.sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.s[0].t, 500000);
    free(c.s);
    /* a nonzero padding byte, a length past the record: damaged */
    static const char *const want_pad[2] = {"damaged float head: padded: byte 12 of the padding is not zero",
                                            "damaged float head: padded: length 28, but 27 bytes follow"};
    for (int k = 0; k < 2; k++) {
        ps_buf_t d = PS_BUF_INIT;
        ps_buf_append(&d, ph.data, ph.len);
        if (k == 0)
            d.data[d.len - 1] = 1;
        else
            d.data[4] = 28;
        poke(s, DB_FHEAD, fk, 8, d.data, d.len);
        ps_reader_t *r2;
        collect_t c2 = {0};
        assert_int_equal(ps_reader_begin(s, &r2, &err), 0);
        assert_int_equal(ps_reader_samples(r2, f2.sid, INT64_MIN, INT64_MAX, on_samples, &c2, &err), PS_ECORRUPT);
        if (strstr(err.msg, want_pad[k]) == NULL)
            fail_msg("%s", err.msg);
        ps_reader_end(r2);
        free(c2.s);
        ps_buf_dispose(&d);
    }
    ps_buf_dispose(&ph);
    ps_buf_dispose(&good);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

typedef struct metas {
    int n;
    char names[16][64];
    int types[16];
    char help[16][128];
    char unit[16][16];
} metas_t;

/* Packing: closed chunks of a series are packed into one record when the next would not fit in
 * PS_FLOAT_PACK_MAX_BYTES beside them (series p: counters, ~220-byte dense chunks) or make them span a
 * day (series k: a constant, 17-byte dense chunks). Reads see the same chunks and samples; reopening and
 * compaction continue; a damaged directory is reported. */
static void test_packed(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t lp = mk_labels(&a, "p", NULL), lk = mk_labels(&a, "k", NULL);
    enum { N = 6000 };
    int64_t t0 = 1700000000000ll;
    ps_float_sample_t *p = calloc(N, sizeof(*p)), *k = calloc(N, sizeof(*k));
    uint64_t x = 88172645463325252ull;
    double v = 1e6;
    for (int i = 0; i < N; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        v += (double)(x % 5000);
        p[i] = (ps_float_sample_t){t0 + 15000ll * i, v};
        k[i] = (ps_float_sample_t){t0 + 15000ll * i, 42};
    }
    ps_float_append_t fp, fk;
    for (int b = 0; b < N / 100; b++) {
        if (b == 30) { /* halfway: reopen (the states are loaded from the store) */
            ps_test_close_store(s);
            s = open_store(dir);
        }
        assert_int_equal(write_f(s, &lp, p + 100 * b, 100, &fp), 0);
        assert_int_equal(fp.accepted, 100);
        assert_int_equal(write_f(s, &lk, k + 100 * b, 100, &fk), 0);
        assert_int_equal(fk.accepted, 100);
    }
    records_t rp, rk;
    get_records(s, fp.sid, &rp);
    get_records(s, fk.sid, &rk);
    /* k: chunks 0..47 packed when 48 was closed (0..48 would span 24 h 29 min 45 s), 48 alone */
    assert_int_equal(rk.n, 2);
    assert_int_equal(rk.enc[0], PS_FLOAT_CHUNK_ENC_DPACKED);
    assert_int_equal(rk.enc[1], PS_FLOAT_CHUNK_ENC_DENSE);
    assert_int_equal(ps_ts_unkey(ps_get_be64(rk.key[0] + 8)), (t0 + 15000ll * (48 * 120 - 1)) * 1000000);
    assert_int_equal(rk.bytes[0], 822); /* 48 dense chunks of 17 bytes with their bounds */
    assert_int_equal(rk.bytes[1], 17);
    /* p: 49 dense chunks of 213-226 bytes (as XOR chunks 333-352), 17 to a record of at most
     * 4080 bytes (3830, 3843: their bounds, a t0 of one byte each, an 18th does not fit), chunks
     * 34..48 not packed yet */
    static const size_t pbytes[17] = {3830, 3843, 225, 214, 225, 224, 224, 224, 225,
                                      223,  226,  224, 226, 225, 224, 223, 227};
    assert_int_equal(rp.n, 17);
    assert_int_equal(rp.packed, 2);
    for (int i = 0; i < rp.n; i++) {
        assert_int_equal(rp.enc[i], i < 2 ? PS_FLOAT_CHUNK_ENC_DPACKED : PS_FLOAT_CHUNK_ENC_DENSE);
        assert_int_equal(rp.bytes[i], pbytes[i]);
    }
    /* the same chunks and samples as unpacked */
    ps_reader_t *r;
    ps_err_t err;
    const ps_float_sample_t *want[2] = {p, k};
    uint64_t sids[2] = {fp.sid, fk.sid};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    for (int j = 0; j < 2; j++) {
        chunks_t ch = {0};
        assert_int_equal(ps_reader_xor_chunks(r, sids[j], INT64_MIN, INT64_MAX, on_chunk, &ch, &err), 0);
        assert_int_equal(ch.n, 50);
        for (int i = 0; i < 50; i++) {
            assert_int_equal(ch.count[i], 120);
            assert_int_equal(ch.min_t[i], want[j][120 * i].t);
            assert_int_equal(ch.max_t[i], want[j][120 * i + 119].t);
        }
        /* a range inside one packed record: only its chunks 13..15 */
        memset(&ch, 0, sizeof(ch));
        assert_int_equal(ps_reader_xor_chunks(r, sids[j], want[j][1600].t, want[j][1900].t, on_chunk, &ch, &err), 0);
        assert_int_equal(ch.n, 3);
        assert_int_equal(ch.min_t[0], want[j][1560].t);
        int64_t ts = 0;
        assert_int_equal(ps_reader_latest(r, sids[j], INT64_MIN, want[j][4000].t * 1000000 + 5, &ts, &err), 0);
        assert_int_equal(ts, want[j][4000].t * 1000000);
    }
    ps_reader_end(r);
    for (int j = 0; j < 2; j++) {
        collect_t c;
        read_all(s, sids[j], INT64_MIN, INT64_MAX, &c, 0);
        assert_int_equal(c.n, N);
        for (int i = 0; i < N; i++)
            assert_true(c.s[i].t == want[j][i].t && float_bits(c.s[i].v) == float_bits(want[j][i].v));
        free(c.s);
        read_all(s, sids[j], want[j][1599].t + 1, want[j][1901].t - 1, &c, 0);
        assert_int_equal(c.n, 301);
        assert_int_equal(c.s[0].t, want[j][1600].t);
        assert_int_equal(c.s[300].t, want[j][1900].t);
        free(c.s);
    }
    /* compaction closes the heads (p's chunk 49 beside 48: no packing) */
    uint32_t n = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), &n, &err), 0);
    assert_int_equal(n, 2);
    get_records(s, fp.sid, &rp);
    assert_int_equal(rp.n, 18);
    /* a directory that does not match its chunk */
    MDB_txn *txn;
    MDB_val key = {16, rk.key[0]}, val;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_get(txn, s->dbi[DB_FCHUNKS], &key, &val), 0);
    uint8_t *bad = malloc(val.mv_size);
    memcpy(bad, val.mv_data, val.mv_size);
    size_t blen = val.mv_size;
    mdb_txn_abort(txn);
    ps_dec_t d;
    ps_dec_init(&d, bad + 1, blen - 1);
    (void)ps_dec_varint(&d); /* t0 */
    (void)ps_dec_uvarint(&d); /* dmin of entry 0 */
    size_t at = (size_t)(d.p - bad);
    bad[at] ^= 1; /* its span */
    poke(s, DB_FCHUNKS, rk.key[0], 16, bad, blen);
    collect_t c;
    read_all(s, fk.sid, INT64_MIN, INT64_MAX, &c, PS_ECORRUPT);
    free(c.s);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    chunks_t ch = {0};
    assert_int_equal(ps_reader_xor_chunks(r, fk.sid, INT64_MIN, INT64_MAX, on_chunk, &ch, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "packed chunks"));
    ps_reader_end(r);
    /* truncated */
    poke(s, DB_FCHUNKS, rk.key[0], 16, bad, blen - 1);
    read_all(s, fk.sid, INT64_MIN, INT64_MAX, &c, PS_ECORRUPT);
    free(c.s);
    free(bad);
    free(p);
    free(k);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static int on_meta(void *ctx, const ps_metric_meta_t *m)
{
    metas_t *c = ctx;
    assert_true(c->n < 16);
    snprintf(c->names[c->n], 64, "%.*s", (int)m->family_len, m->family);
    c->types[c->n] = m->type;
    snprintf(c->help[c->n], 128, "%.*s", (int)m->help_len, m->help);
    snprintf(c->unit[c->n], 16, "%.*s", (int)m->unit_len, m->unit);
    c->n++;
    return 0;
}

static void test_metadata(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    char big[PS_META_FAMILY_MAX + 1];
    memset(big, 'a', sizeof(big));
    ps_metric_meta_t m[4] = {
        {"b_total", 7, 1, "B things.", 9, "", 0},
        {"a_bytes", 7, 2, "", 0, "bytes", 5},
        {big, sizeof(big), 1, "too long a name: skipped", 24, "", 0},
        {"b_total", 7, 1, "B things, better.", 17, "", 0},
    };
    ps_err_t err;
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, NULL, 0, m, 4, &err), 0);
    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.metadata, 2);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    metas_t c = {0};
    assert_int_equal(ps_reader_metadata(r, NULL, 0, on_meta, &c, &err), 0);
    assert_int_equal(c.n, 2);
    assert_string_equal(c.names[0], "a_bytes");
    assert_int_equal(c.types[0], 2);
    assert_string_equal(c.help[0], "");
    assert_string_equal(c.unit[0], "bytes");
    assert_string_equal(c.names[1], "b_total");
    assert_string_equal(c.help[1], "B things, better.");
    memset(&c, 0, sizeof(c));
    assert_int_equal(ps_reader_metadata(r, "b_total", 7, on_meta, &c, &err), 0);
    assert_int_equal(c.n, 1);
    assert_int_equal(c.types[0], 1);
    memset(&c, 0, sizeof(c));
    assert_int_equal(ps_reader_metadata(r, "b_tota", 6, on_meta, &c, &err), 0);
    assert_int_equal(c.n, 0);
    ps_reader_end(r);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The schema version s's info record holds is PS_SCHEMA_VERSION (5). */
static void expect_schema_current(ps_store_t *s)
{
    MDB_txn *txn;
    MDB_val k = {6, "schema"}, v;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_get(txn, s->dbi[DB_INFO], &k, &v), 0);
    assert_int_equal(v.mv_size, 4);
    assert_int_equal(ps_get_be32(v.mv_data), PS_SCHEMA_VERSION);
    mdb_txn_abort(txn);
}

/* A schema 1 directory (profiles only) is upgraded in place at open: version 3, data intact. */
static void test_upgrade_v1(void **state)
{
    (void)state;
    char *dir = tmpdir();
    /* a version 1 directory, by hand: what version 1 wrote at open, one series record in its
     * format (profile series, no head) and its id counters */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi info, series;
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 16), 0);
    assert_int_equal(mdb_env_open(env, dir, MDB_NOTLS, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "info", MDB_CREATE, &info), 0);
    static const char *const v1dbs[] = {"sym", "sym_hash", "tree", "nodes", "series", "series_hash", "postings",
                                        "head", "chunks"};
    for (int i = 0; i < 9; i++) {
        MDB_dbi d;
        unsigned fl = (i == 1 || i == 5 || i == 6) ? MDB_DUPSORT | MDB_DUPFIXED : 0;
        assert_int_equal(mdb_dbi_open(txn, v1dbs[i], MDB_CREATE | fl, &d), 0);
    }
    assert_int_equal(mdb_dbi_open(txn, "series", 0, &series), 0);
    uint8_t ver[4] = {0, 0, 0, 1};
    MDB_val k = {6, "schema"}, v = {4, ver};
    assert_int_equal(mdb_put(txn, info, &k, &v, 0), 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "memory:inuse_space:bytes:space:bytes", "api");
    ps_buf_t rec = PS_BUF_INIT, enc = PS_BUF_INIT;
    ps_labels_encode(&ls, &enc);
    ps_buf_putc(&rec, 1);
    ps_put_be64(&rec, (uint64_t)INT64_MIN);
    ps_put_be64(&rec, (uint64_t)INT64_MIN);
    ps_put_be64(&rec, (uint64_t)INT64_MIN);
    ps_put_be32(&rec, 0);
    ps_buf_append(&rec, enc.data, enc.len);
    uint8_t sk[8];
    ps_enc_be64(sk, 1);
    k = (MDB_val){8, sk};
    v = (MDB_val){rec.len, rec.data};
    assert_int_equal(mdb_put(txn, series, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    ps_store_t *s = open_store(dir);
    assert_int_equal(s->upgraded_from, 1);
    expect_schema_current(s);
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_series_kind_t kind;
    assert_int_equal(ps_reader_series_kind(r, 1, &kind, &err), 0);
    assert_int_equal(kind, PS_SERIES_PROFILE);
    ps_labels_t back;
    assert_int_equal(ps_reader_series_labels(r, 1, &a, &back, &err), 0);
    assert_int_equal(ps_labels_cmp(&back, &ls), 0);
    ps_reader_end(r);
    ps_test_close_store(s);
    /* opened again: nothing more to upgrade */
    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 0);
    ps_test_close_store(s);
    ps_buf_dispose(&rec);
    ps_buf_dispose(&enc);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The value of sid's record in db (fhead, fprefix) into out; false if there is none. */
static bool get_rec(ps_store_t *s, int db, uint64_t sid, ps_buf_t *out)
{
    MDB_txn *txn;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val k = {8, kb}, v;
    int rc = mdb_get(txn, s->dbi[db], &k, &v);
    assert_true(rc == 0 || rc == MDB_NOTFOUND);
    ps_buf_reset(out);
    if (rc == 0)
        ps_buf_append(out, v.mv_data, v.mv_size);
    mdb_txn_abort(txn);
    return rc == 0;
}

/* The fprefix records of series sid (keys: txn id, sid): how many; the last one's transaction and
 * value into *txn and out. */
static int get_prefix(ps_store_t *s, uint64_t sid, uint64_t *txn, ps_buf_t *out)
{
    MDB_txn *t;
    MDB_cursor *cur;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t), 0);
    assert_int_equal(mdb_cursor_open(t, s->dbi[DB_FPREFIX], &cur), 0);
    MDB_val k, v;
    int n = 0;
    ps_buf_reset(out);
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        assert_int_equal(k.mv_size, 16);
        if (ps_get_be64((const uint8_t *)k.mv_data + 8) != sid)
            continue;
        n++;
        *txn = ps_get_be64(k.mv_data);
        ps_buf_reset(out);
        ps_buf_append(out, v.mv_data, v.mv_size);
    }
    mdb_cursor_close(cur);
    mdb_txn_abort(t);
    return n;
}

/* the id of the last committed write transaction */
static uint64_t last_txn(ps_store_t *s)
{
    MDB_envinfo ei;
    assert_int_equal(mdb_env_info(s->env, &ei), 0);
    return ei.me_last_txnid;
}

/* What the writer stores of an open chunk c (02 then the chunk) after a flush, by the rule of
 * FORMAT.md: *plen the prefix length it keeps and *ptxn the transaction that wrote it, flush the
 * store's flushes before this one. */
static void expect_head(ps_store_t *s, uint64_t sid, const ps_buf_t *c, size_t *plen, uint64_t *ptxn, size_t *size,
                        uint64_t flush, int *prefixes)
{
    const uint8_t *b = c->data + 1;
    size_t n = c->len - 1;
    ps_buf_t want = PS_BUF_INIT, got = PS_BUF_INIT;
    uint64_t txn = 0;
    if (*plen == 0 && n < PS_FLOAT_HEAD_SPLIT_MIN) {
        ps_float_head_encode_padded(b, n, 0, 0, size, &want); /* padded (schema 11): 0a, p = 0, txn 0 */
        assert_true(get_rec(s, DB_FHEAD, sid, &got));
        assert_int_equal(got.len, want.len);
        assert_int_equal(got.len % PS_FLOAT_HEAD_PAD_STEP, 0);
        assert_memory_equal(got.data, want.data, want.len);
        assert_int_equal(get_prefix(s, sid, &txn, &got), 0);
    } else {
        bool turn = ((sid >> 6) + flush) % PS_FLOAT_HEAD_TURNS == 0;
        if (*plen == 0 || n - *plen > PS_FLOAT_HEAD_TAIL_MAX || (turn && n - 1 > *plen)) {
            *plen = n - 1;
            *ptxn = last_txn(s);
            (*prefixes)++;
        }
        ps_float_prefix_encode(b, *plen, &want);
        assert_int_equal(get_prefix(s, sid, &txn, &got), 1); /* the old one deleted */
        assert_int_equal(txn, *ptxn);
        assert_int_equal(got.len, want.len);
        assert_memory_equal(got.data, want.data, want.len);
        ps_buf_reset(&want);
        ps_float_head_encode_padded(b, n, *plen, *ptxn, size, &want);
        assert_true(get_rec(s, DB_FHEAD, sid, &got));
        assert_int_equal(got.len, want.len);
        assert_int_equal(got.len % PS_FLOAT_HEAD_PAD_STEP, 0);
        assert_memory_equal(got.data, want.data, want.len);
    }
    ps_buf_dispose(&want);
    ps_buf_dispose(&got);
}

static void expect_samples(ps_store_t *s, uint64_t sid, const ps_float_sample_t *in, int n)
{
    collect_t c;
    read_all(s, sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, n);
    for (int i = 0; i < n; i++) {
        assert_int_equal(c.s[i].t, in[i].t);
        assert_int_equal(float_bits(c.s[i].v), float_bits(in[i].v));
    }
    free(c.s);
}

/* values that take many bits: the open chunk passes PS_FLOAT_HEAD_SPLIT_MIN after a few samples */
static double rough(int i) { return (double)((uint32_t)(i + 1) * 2654435761u % 1000003u) / 7.0; }

/* An open chunk written one sample per transaction: whole below 32 bytes, then a tail after a
 * prefix rewritten by the rule of FORMAT.md (checked record by record against a chunk built
 * alongside), across a reopen; read back bit for bit; the cut, the compactor and retention delete
 * the prefix with the head; a prefix of the wrong size or none is a damaged head. */
static void test_head_split(void **state)
{
    log_pages = -1; /* the heads as each flush writes them */
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_opts(dir, 24 * HOUR_MS * 1000000, 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "split", NULL);
    int64_t t0 = ps_time_now() / 1000000 - HOUR_MS;
    ps_float_sample_t in[200];
    for (int i = 0; i < 200; i++)
        in[i] = (ps_float_sample_t){t0 + 15000ll * i, rough(i)};
    ps_buf_t chunk = PS_BUF_INIT;
    ps_buf_putc(&chunk, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_t app;
    ps_xor_app_init(&app, &chunk);
    size_t plen = 0, hsize = 0;
    uint64_t ptxn = 0, txn = 0;
    int prefixes = 0, whole = 0;
    ps_float_append_t fa;
    uint64_t sid = 0;
    for (int i = 0; i < 120; i++) {
        if (i == 90) { /* reopened: the flush count starts again, the head is read back whole */
            ps_test_close_store(s);
            s = open_opts(dir, 24 * HOUR_MS * 1000000, 0);
            hsize = 0; /* the writer sizes the padded record anew */
        }
        assert_int_equal(write_f(s, &ls, &in[i], 1, &fa), 0);
        assert_int_equal(fa.accepted, 1);
        sid = fa.sid;
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
        whole += plen == 0 && chunk.len - 1 < PS_FLOAT_HEAD_SPLIT_MIN;
        expect_head(s, sid, &chunk, &plen, &ptxn, &hsize, ps_test_writer(s)->float_flushes - 1, &prefixes);
    }
    /* 2 samples are stored whole (16 bytes for the first, ~8 for the next); the prefix is written
     * at the 3rd (32 bytes or more), then in the turns of series 1 (sid / 64 = 0): flushes 16,
     * 32, 48, 64, 80, and 0, 16 after the reopen (the tail never grows by 128 bytes between two
     * turns here: ~7.6 bytes a sample) */
    assert_int_equal(whole, 2);
    assert_int_equal(prefixes, 8);
    assert_int_equal(chunk.len - 1, 913);
    expect_samples(s, sid, in, 120);
    /* the 121st sample cuts the chunk: the head is one sample, whole; the prefix is gone */
    assert_int_equal(write_f(s, &ls, &in[120], 1, &fa), 0);
    ps_buf_t rec = PS_BUF_INIT;
    assert_true(get_rec(s, DB_FHEAD, sid, &rec));
    assert_int_equal(rec.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_equal(rec.data[1], 0); /* p = 0: whole */
    assert_int_equal(rec.len, hsize); /* the record kept its size: overwritten in place */
    assert_int_equal(get_prefix(s, sid, &txn, &rec), 0);
    /* 79 more in one transaction: split at once, read back; the compactor closes it */
    assert_int_equal(write_f(s, &ls, &in[121], 79, &fa), 0);
    assert_int_equal(fa.accepted, 79);
    assert_true(get_rec(s, DB_FHEAD, sid, &rec));
    assert_int_equal(rec.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_not_equal(rec.data[1], 0); /* a tail */
    assert_int_equal(get_prefix(s, sid, &txn, &rec), 1);
    assert_int_equal(txn, last_txn(s));
    expect_samples(s, sid, in, 200);
    ps_err_t err;
    uint32_t nchunks = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err), 0);
    assert_int_equal(nchunks, 1);
    assert_false(get_rec(s, DB_FHEAD, sid, &rec));
    assert_int_equal(get_prefix(s, sid, &txn, &rec), 0);
    expect_samples(s, sid, in, 200);

    /* a second series with a split head: damaged prefixes, then retention */
    ps_labels_t l2 = mk_labels(&a, "split", "two");
    ps_buf_t chunk2 = PS_BUF_INIT;
    ps_buf_putc(&chunk2, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_init(&app, &chunk2);
    for (int i = 0; i < 100; i++)
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
    ps_buf_t part = PS_BUF_INIT;
    assert_int_equal(write_f(s, &l2, in, 60, &fa), 0);
    uint64_t sid2 = fa.sid;
    size_t plen2 = 0, hsize2 = 0;
    uint64_t ptxn2 = 0;
    int prefixes2 = 0;
    ps_buf_reset(&part); /* the chunk of its first 60 samples */
    ps_buf_putc(&part, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_init(&app, &part);
    for (int i = 0; i < 60; i++)
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
    expect_head(s, sid2, &part, &plen2, &ptxn2, &hsize2, ps_test_writer(s)->float_flushes - 1, &prefixes2);
    /* 40 more in a transaction not its turn: the tail would pass 128 bytes, the prefix moves */
    assert_int_equal(write_f(s, &l2, &in[60], 40, &fa), 0);
    assert_int_not_equal(((sid2 >> 6) + ps_test_writer(s)->float_flushes - 1) % PS_FLOAT_HEAD_TURNS, 0);
    expect_head(s, sid2, &chunk2, &plen2, &ptxn2, &hsize2, ps_test_writer(s)->float_flushes - 1, &prefixes2);
    assert_int_equal(prefixes2, 2);
    assert_int_equal(plen2, chunk2.len - 2);
    ps_buf_dispose(&part);
    ps_buf_dispose(&chunk2);
    ps_buf_t pre = PS_BUF_INIT;
    assert_int_equal(get_prefix(s, sid2, &txn, &pre), 1);
    assert_int_equal(txn, ptxn2);
    uint8_t kb[16];
    ps_enc_be64(kb, ptxn2);
    ps_enc_be64(kb + 8, sid2);
    poke(s, DB_FPREFIX, kb, 16, pre.data, pre.len - 1);
    ps_sym_caches_clear(ps_test_writer(s));
    char want[160];
    snprintf(want, sizeof(want),
             "series %llu: damaged float head: tail after %zu bytes, but a prefix of encoding 5 holding %zu, not %zu",
             (unsigned long long)sid2, pre.len + 1, pre.len - 2, pre.len - 1);
    ps_reader_t *r;
    collect_t c = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_samples(r, sid2, INT64_MIN, INT64_MAX, on_samples, &c, &err), PS_ECORRUPT);
    ps_reader_end(r);
    assert_string_equal(err.msg, want);
    free(c.s);
    assert_int_equal(write_f(s, &l2, &in[100], 1, &fa), PS_ECORRUPT);
    assert_string_equal(fa.err.msg, want);
    MDB_txn *wt;
    assert_int_equal(mdb_txn_begin(s->env, NULL, 0, &wt), 0);
    MDB_val k = {16, kb};
    assert_int_equal(mdb_del(wt, s->dbi[DB_FPREFIX], &k, NULL), 0);
    assert_int_equal(mdb_txn_commit(wt), 0);
    ps_sym_caches_clear(ps_test_writer(s));
    snprintf(want, sizeof(want),
             "series %llu: damaged float head: tail after %zu bytes, but no prefix of transaction %llu",
             (unsigned long long)sid2, pre.len + 1, (unsigned long long)ptxn2);
    c = (collect_t){0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_samples(r, sid2, INT64_MIN, INT64_MAX, on_samples, &c, &err), PS_ECORRUPT);
    ps_reader_end(r);
    assert_string_equal(err.msg, want);
    free(c.s);
    poke(s, DB_FPREFIX, kb, 16, pre.data, pre.len);
    ps_sym_caches_clear(ps_test_writer(s));
    expect_samples(s, sid2, in, 100);
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), ps_time_now() + 48 * HOUR_MS * 1000000, &dropped, &err), 0);
    assert_false(get_rec(s, DB_FHEAD, sid2, &rec));
    assert_int_equal(get_prefix(s, sid2, &txn, &rec), 0);

    ps_buf_dispose(&pre);
    ps_buf_dispose(&rec);
    ps_buf_dispose(&chunk);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
    log_pages = 0;
}

/* A version 2 directory (no fprefix; whole open chunks in fhead, short and long) is upgraded in
 * place: version 3, the samples read back, appends continue (the long head is split at once). */
/* dir's LMDB environment opened by hand, a write transaction in it and its databases info, fhead
 * and fprefix: what an older version wrote is made this way */
static MDB_txn *raw_begin(const char *dir, MDB_env **env, MDB_dbi *info, MDB_dbi *fhead, MDB_dbi *fprefix)
{
    MDB_txn *txn;
    ps_test_store_index_all(dir);
    assert_int_equal(mdb_env_create(env), 0);
    assert_int_equal(mdb_env_set_maxdbs(*env, 32), 0);
    assert_int_equal(mdb_env_open(*env, dir, MDB_NOTLS, 0644), 0);
    assert_int_equal(mdb_txn_begin(*env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "info", 0, info), 0);
    assert_int_equal(mdb_dbi_open(txn, "fhead", 0, fhead), 0);
    assert_int_equal(mdb_dbi_open(txn, "fprefix", 0, fprefix), 0);
    return txn;
}

static void xor_of(const ps_float_sample_t *in, int from, int n, ps_buf_t *out);

/* A schema 9 directory: a split head (an 04 tail after its fprefix record) reads as it is and
 * takes appends, written padded (0a) from then on; the upgrade writes version 11. */
static void test_upgrade_v9(void **state)
{
    log_pages = -1; /* the heads as each flush writes them */
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t lt = mk_labels(&a, "t", NULL);
    ps_float_sample_t in[41];
    for (int i = 0; i < 41; i++)
        in[i] = (ps_float_sample_t){2000000ll + 10000ll * i, rough(i)};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &lt, in, 1, &fa), 0); /* the series (its head replaced below) */
    uint64_t st = fa.sid;
    ps_test_close_store(s);
    /* by hand, what version 9 wrote: the open chunk of 40 samples split at 30, its prefix written
     * by transaction 7 */
    ps_buf_t chunk = PS_BUF_INIT, rec = PS_BUF_INIT;
    xor_of(in, 0, 40, &chunk);
    assert_true(chunk.len > 30);
    MDB_env *env;
    MDB_dbi info, fhead, fprefix;
    MDB_txn *txn = raw_begin(dir, &env, &info, &fhead, &fprefix);
    uint8_t ver[4] = {0, 0, 0, 9}, kb[8], pk[16];
    MDB_val k = {6, "schema"}, v = {4, ver};
    assert_int_equal(mdb_put(txn, info, &k, &v, 0), 0);
    ps_enc_be64(pk, 7);
    ps_enc_be64(pk + 8, st);
    ps_float_prefix_encode(chunk.data, 30, &rec);
    k = (MDB_val){16, pk};
    v = (MDB_val){rec.len, rec.data};
    assert_int_equal(mdb_put(txn, fprefix, &k, &v, 0), 0);
    ps_buf_reset(&rec);
    ps_float_head_encode_tail(chunk.data, chunk.len, 30, 7, &rec);
    ps_enc_be64(kb, st);
    k = (MDB_val){8, kb};
    v = (MDB_val){rec.len, rec.data};
    assert_int_equal(mdb_put(txn, fhead, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 9);
    expect_schema_current(s);
    expect_samples(s, st, in, 40);
    assert_int_equal(write_f(s, &lt, &in[40], 1, &fa), 0);
    assert_int_equal(fa.accepted, 1);
    expect_samples(s, st, in, 41);
    assert_true(get_rec(s, DB_FHEAD, st, &rec));
    assert_int_equal(rec.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_not_equal(rec.data[1], 0); /* a tail */
    assert_int_equal(rec.len % PS_FLOAT_HEAD_PAD_STEP, 0);
    uint64_t ptxn = 0; /* the first flush is series st's turn (st / 64 + 0 flushes): a new prefix */
    assert_int_equal(get_prefix(s, st, &ptxn, &rec), 1);
    assert_int_equal(ptxn, last_txn(s));
    ps_test_close_store(s);
    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 0);
    expect_samples(s, st, in, 41);
    ps_buf_dispose(&rec);
    ps_buf_dispose(&chunk);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
    log_pages = 0;
}

static void test_upgrade_v2(void **state)
{
    log_pages = -1; /* the heads as each flush writes them */
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t lu = mk_labels(&a, "u", NULL), lw = mk_labels(&a, "w", NULL);
    ps_float_sample_t in[140];
    for (int i = 0; i < 140; i++)
        in[i] = (ps_float_sample_t){1000000ll + 15000ll * i, rough(i)};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &lu, in, 3, &fa), 0);
    uint64_t su = fa.sid;
    assert_int_equal(write_f(s, &lw, in, 3, &fa), 0);
    uint64_t sw = fa.sid;
    ps_test_close_store(s);
    /* by hand, what version 2 wrote: schema 2, no fprefix, open chunks whole: u's of 3 samples,
     * w's of 50 */
    ps_buf_t chunk = PS_BUF_INIT, small = PS_BUF_INIT;
    ps_buf_putc(&chunk, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_t app;
    ps_xor_app_init(&app, &chunk);
    for (int i = 0; i < 50; i++) {
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
        if (i == 2)
            ps_buf_append(&small, chunk.data, chunk.len);
    }
    assert_true(chunk.len > PS_FLOAT_HEAD_SPLIT_MIN);
    MDB_env *env;
    MDB_dbi info, fhead, fprefix;
    MDB_txn *txn = raw_begin(dir, &env, &info, &fhead, &fprefix);
    assert_int_equal(mdb_drop(txn, fprefix, 1), 0);
    uint8_t ver[4] = {0, 0, 0, 2}, kb[8];
    MDB_val k = {6, "schema"}, v = {4, ver};
    assert_int_equal(mdb_put(txn, info, &k, &v, 0), 0);
    ps_enc_be64(kb, sw);
    k = (MDB_val){8, kb};
    v = (MDB_val){chunk.len, chunk.data};
    assert_int_equal(mdb_put(txn, fhead, &k, &v, 0), 0);
    ps_enc_be64(kb, su);
    v = (MDB_val){small.len, small.data};
    assert_int_equal(mdb_put(txn, fhead, &k, &v, 0), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 2);
    expect_schema_current(s);
    expect_samples(s, su, in, 3);
    expect_samples(s, sw, in, 50);
    ps_buf_t rec = PS_BUF_INIT;
    uint64_t ptxn = 0;
    assert_int_equal(get_prefix(s, sw, &ptxn, &rec), 0);
    assert_int_equal(write_f(s, &lw, &in[50], 1, &fa), 0);
    assert_int_equal(get_prefix(s, sw, &ptxn, &rec), 1);
    assert_int_equal(ptxn, last_txn(s));
    assert_int_equal(write_f(s, &lu, &in[3], 1, &fa), 0);
    assert_true(get_rec(s, DB_FHEAD, sw, &rec)); /* the old heads continued, written padded */
    assert_int_equal(rec.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_not_equal(rec.data[1], 0); /* a tail */
    assert_true(get_rec(s, DB_FHEAD, su, &rec)); /* 4 samples: 32 bytes or more */
    assert_int_equal(rec.data[0], PS_FLOAT_HEAD_ENC_PADDED);
    assert_int_not_equal(rec.data[1], 0);
    ps_test_close_store(s);
    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 0);
    expect_samples(s, sw, in, 51);
    expect_samples(s, su, in, 4);
    ps_buf_dispose(&rec);
    ps_buf_dispose(&chunk);
    ps_buf_dispose(&small);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
    log_pages = 0;
}

typedef struct xchunks {
    int n;
    ps_buf_t b[64];
} xchunks_t;

static int on_xchunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    xchunks_t *c = ctx;
    (void)min_t, (void)max_t;
    assert_true(c->n < 64);
    ps_buf_append(&c->b[c->n++], chunk, n);
    return 0;
}

/* The XOR chunk (no encoding byte) ps_xor_app makes of in[from, from + n) into out. */
static void xor_of(const ps_float_sample_t *in, int from, int n, ps_buf_t *out)
{
    ps_buf_reset(out);
    ps_xor_app_t app;
    ps_xor_app_init(&app, out);
    for (int i = from; i < from + n; i++)
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
}

/* ps_reader_xor_chunks of sid sends the XOR chunks of in[0, n), 120 samples each (the last, the
 * head, fewer), byte for byte: what schema 3 stored and sent. */
static void expect_xor_chunks(ps_store_t *s, uint64_t sid, const ps_float_sample_t *in, int n)
{
    int nchunks = (n + 119) / 120;
    xchunks_t *c = calloc(1, sizeof(*c));
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_xchunk, c, &err), 0);
    ps_reader_end(r);
    assert_int_equal(c->n, nchunks);
    ps_buf_t want = PS_BUF_INIT;
    for (int i = 0; i < c->n; i++) {
        xor_of(in, 120 * i, n - 120 * i < 120 ? n - 120 * i : 120, &want);
        assert_int_equal(c->b[i].len, want.len);
        assert_memory_equal(c->b[i].data, want.data, want.len);
        ps_buf_dispose(&c->b[i]);
    }
    ps_buf_dispose(&want);
    free(c);
}

/* A version 3 directory (closed chunks as XOR: plain 02 and packed 03) is upgraded in place:
 * version 4, the samples and the streamed XOR chunks as they were; the next chunks closed are
 * dense (06), and packing takes plain 02 and 06 chunks alike into a packed dense record (07), the
 * samples and XOR chunks still the same. A series written by this version alone stores dense
 * chunks that stream the same XOR bytes. */
static void test_upgrade_v3(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t la = mk_labels(&a, "a", NULL), lb = mk_labels(&a, "b", NULL), lc = mk_labels(&a, "c", NULL);
    enum { P = 1200, N = 1561 };
    ps_float_sample_t *in = calloc(N, sizeof(*in));
    int64_t ticks = 12345678; /* about 750 bytes a XOR chunk, 130 dense */
    for (int i = 0; i < N; i++) { /* CPU seconds: ticks / 100 */
        ticks += 1400 + (i * 7919) % 100;
        in[i] = (ps_float_sample_t){1700000000000ll + 15000ll * i, (double)ticks / 100};
    }
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &la, in, 1, &fa), 0);
    uint64_t sa = fa.sid;
    assert_int_equal(write_f(s, &lb, in, 1, &fa), 0);
    uint64_t sb = fa.sid;
    ps_test_close_store(s);
    /* by hand, what version 3 wrote of 10 chunks (about 750 bytes each): a: 0..4 packed (03),
     * 5..9 plain (02); b: 0..4 and 5..8 packed, 9 plain; no heads */
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi info, fhead, fchunks;
    ps_test_store_index_all(dir);
    assert_int_equal(mdb_env_create(&env), 0);
    assert_int_equal(mdb_env_set_maxdbs(env, 32), 0);
    assert_int_equal(mdb_env_open(env, dir, MDB_NOTLS, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, "info", 0, &info), 0);
    assert_int_equal(mdb_dbi_open(txn, "fhead", 0, &fhead), 0);
    assert_int_equal(mdb_dbi_open(txn, "fchunks", 0, &fchunks), 0);
    assert_int_equal(mdb_drop(txn, fhead, 0), 0);
    uint8_t ver[4] = {0, 0, 0, 3}, kb[16];
    MDB_val k = {6, "schema"}, v = {4, ver};
    assert_int_equal(mdb_put(txn, info, &k, &v, 0), 0);
    ps_buf_t x[10], val = PS_BUF_INIT;
    ps_float_pack_entry_t pe[10];
    for (int c = 0; c < 10; c++) {
        x[c] = (ps_buf_t)PS_BUF_INIT;
        ps_buf_putc(&x[c], PS_FLOAT_CHUNK_ENC_XOR);
        ps_xor_app_t app;
        ps_xor_app_init(&app, &x[c]);
        for (int i = 120 * c; i < 120 * c + 120; i++)
            assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
        pe[c] = (ps_float_pack_entry_t){in[120 * c].t, in[120 * c + 119].t, x[c].data + 1, x[c].len - 1};
    }
    /* (sid, first chunk, last chunk) of each record */
    const int recs[5][3] = {{0, 0, 4}, {0, 5, 5}, {1, 0, 4}, {1, 5, 8}, {1, 9, 9}};
    for (int r = 0; r < 5; r++) {
        int from = recs[r][1], to = recs[r][2];
        for (int c = from; c <= (r == 1 ? 9 : to); c++) {
            ps_buf_reset(&val);
            if (from == to || r == 1)
                ps_buf_append(&val, x[c].data, x[c].len);
            else
                ps_float_pack_encode(PS_FLOAT_CHUNK_ENC_PACKED, pe + from, (size_t)(to - from + 1), &val);
            int last = from == to || r == 1 ? c : to;
            ps_key_sid_ts(kb, recs[r][0] ? sb : sa, in[120 * last + 119].t * 1000000);
            k = (MDB_val){16, kb};
            v = (MDB_val){val.len, val.data};
            assert_int_equal(mdb_put(txn, fchunks, &k, &v, 0), 0);
            if (from != to && r != 1)
                break;
        }
    }
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);

    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 3);
    expect_schema_current(s);
    records_t ra, rb;
    get_records(s, sa, &ra);
    get_records(s, sb, &rb);
    static const uint8_t ea[6] = {3, 2, 2, 2, 2, 2}, eb[3] = {3, 3, 2};
    assert_int_equal(ra.n, 6);
    assert_memory_equal(ra.enc, ea, 6);
    assert_int_equal(rb.n, 3);
    assert_memory_equal(rb.enc, eb, 3);
    for (int j = 0; j < 2; j++) {
        expect_samples(s, j ? sb : sa, in, P);
        expect_xor_chunks(s, j ? sb : sa, in, P);
    }
    /* appends continue after the newest chunk: 3 chunks closed and 1 sample in the head. a: the
     * third doesn't fit beside its 5 plain XOR chunks and 2 dense ones: those 7 are packed
     * dense; b: 9 plain, then 3 dense chunks */
    assert_int_equal(write_f(s, &la, in + P, N - P, &fa), 0);
    assert_int_equal(fa.accepted, N - P);
    assert_int_equal(write_f(s, &lb, in + P, N - P, &fa), 0);
    assert_int_equal(fa.accepted, N - P);
    assert_int_equal(write_f(s, &lc, in, N, &fa), 0);
    uint64_t sc = fa.sid;
    get_records(s, sa, &ra);
    get_records(s, sb, &rb);
    static const uint8_t ea2[3] = {3, 7, 6}, eb2[6] = {3, 3, 2, 6, 6, 6};
    static const size_t ba2[3] = {3951, 923, 131}, bb2[6] = {3951, 3028, 747, 131, 131, 131};
    assert_int_equal(ra.n, 3);
    assert_int_equal(rb.n, 6);
    assert_memory_equal(ra.enc, ea2, 3);
    assert_memory_equal(rb.enc, eb2, 6);
    for (int i = 0; i < 3; i++) /* 7 chunks packed dense in 923 bytes: 5 of them were 743-774 */
        assert_int_equal(ra.bytes[i], ba2[i]);
    for (int i = 0; i < 6; i++)
        assert_int_equal(rb.bytes[i], bb2[i]);
    for (int j = 0; j < 3; j++) {
        uint64_t sid = j == 0 ? sa : j == 1 ? sb : sc;
        expect_samples(s, sid, in, N);
        expect_xor_chunks(s, sid, in, N); /* 13 closed chunks and the head's sample */
    }
    ps_test_close_store(s);
    s = open_store(dir);
    assert_int_equal(s->upgraded_from, 0);
    expect_samples(s, sa, in, N);
    expect_xor_chunks(s, sb, in, N);
    ps_test_close_store(s);
    for (int c = 0; c < 10; c++)
        ps_buf_dispose(&x[c]);
    ps_buf_dispose(&val);
    free(in);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Chunks closed in key order are appended: 300 series of equal chunks compacted at once fill
 * their leaf pages with as many nodes as fit (an insert would split the last page in halves). */
static void test_append_fill(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    enum { NS = 300 };
    ps_float_sample_t in[10];
    for (int i = 0; i < 10; i++)
        in[i] = (ps_float_sample_t){1000000ll + 15000ll * i, 100.0 + i};
    ps_labels_t ls[NS];
    ps_float_append_t fa[NS], *items[NS];
    for (int j = 0; j < NS; j++) {
        char job[16];
        snprintf(job, sizeof(job), "%d", j);
        ls[j] = mk_labels(&a, "fill", job);
        memset(&fa[j], 0, sizeof(fa[j]));
        fa[j].labels = &ls[j], fa[j].samples = in, fa[j].nsamples = 10;
        items[j] = &fa[j];
    }
    ps_err_t err;
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, items, NS, NULL, 0, &err), 0);
    uint32_t nchunks = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err), 0);
    assert_int_equal(nchunks, NS);
    /* every value: 02 and the same chunk */
    ps_buf_t chunk = PS_BUF_INIT;
    ps_buf_putc(&chunk, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_t app;
    ps_xor_app_init(&app, &chunk);
    for (int i = 0; i < 10; i++)
        assert_int_equal(ps_xor_app_append(&app, in[i].t, in[i].v, NULL), 0);
    /* an LMDB leaf node: 8-byte header, 16-byte key, the value, rounded up to even; a 2-byte
     * pointer; 4096 - 16 bytes of a page for them */
    size_t node = (8 + 16 + chunk.len + 1) / 2 * 2 + 2, per_page = 4080 / node;
    MDB_txn *txn;
    MDB_stat st;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_stat(txn, s->dbi[DB_FCHUNKS], &st), 0);
    mdb_txn_abort(txn);
    assert_int_equal(st.ms_entries, NS);
    assert_int_equal(st.ms_leaf_pages, (NS + per_page - 1) / per_page);
    ps_buf_dispose(&chunk);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The flush writes a batch's heads through one fhead cursor, stepping to the next head when it
 * is a few records on and overwriting it there without a search: batches of every shape over 600
 * series (all of them, every 3rd, every 20th, a run, a scattered third) for 250 rounds, heads
 * growing, split into tails, cut at 120 samples, closed by a compaction and opened again between
 * others, new series at the end; every series reads back its samples bit for bit, and its head
 * record has the key of its series. */
static void test_flush_neighbours(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    enum { NS = 600, ROUNDS = 250 };
    ps_labels_t *ls = calloc(NS, sizeof(*ls));
    ps_float_append_t *fa = calloc(NS, sizeof(*fa)), **items = calloc(NS, sizeof(*items));
    ps_float_sample_t *in = calloc(NS, sizeof(*in));
    ps_float_sample_t *want = calloc((size_t)NS * ROUNDS, sizeof(*want));
    uint32_t *nwant = calloc(NS, sizeof(*nwant));
    uint64_t *sid = calloc(NS, sizeof(*sid));
    for (int j = 0; j < NS; j++) {
        char job[16];
        snprintf(job, sizeof(job), "n%d", j);
        ls[j] = mk_labels(&a, "neighbours", job);
    }
    int64_t t0 = ps_time_now() / 1000000 - 2 * HOUR_MS;
    uint64_t rnd = 88172645463325252ull;
    ps_err_t err;
    for (int r = 0; r < ROUNDS; r++) {
        int n = 0;
        for (int j = 0; j < NS; j++) {
            bool pick;
            rnd ^= rnd << 13, rnd ^= rnd >> 7, rnd ^= rnd << 17;
            switch (r % 5) {
            case 0: pick = true; break;
            case 1: pick = j % 3 == r % 3; break;
            case 2: pick = j % 20 == r % 20; break;
            case 3: pick = j >= (r * 37) % NS && j < (r * 37) % NS + 100; break;
            default: pick = rnd % 3 == 0; break;
            }
            if (j >= NS - 50 && r < 100)
                pick = false; /* created at round 100: their heads come after the others' */
            if (!pick)
                continue;
            /* values that need many bits: the heads grow past their padding and split */
            double v = (double)((uint64_t)j * 7919u + (uint64_t)r * r * 31u) / 7.0;
            in[j] = (ps_float_sample_t){t0 + 15000ll * r, v};
            want[(size_t)j * ROUNDS + nwant[j]++] = in[j];
            memset(&fa[j], 0, sizeof(fa[j]));
            fa[j].labels = &ls[j], fa[j].samples = &in[j], fa[j].nsamples = 1;
            items[n++] = &fa[j];
        }
        assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, items, (size_t)n, NULL, 0, &err), 0);
        for (int i = 0; i < n; i++) {
            assert_int_equal(items[i]->status, 0);
            assert_int_equal(items[i]->accepted, 1);
            sid[items[i] - fa] = items[i]->sid;
        }
        if (r == 150) { /* every head closed: the next rounds open them again between others */
            uint32_t nchunks = 0;
            assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err), 0);
            assert_true(nchunks > 0);
        }
    }
    for (int j = 0; j < NS; j++) {
        collect_t c;
        read_all(s, sid[j], INT64_MIN, INT64_MAX, &c, 0);
        assert_int_equal(c.n, nwant[j]);
        for (uint32_t i = 0; i < c.n; i++) {
            assert_int_equal(c.s[i].t, want[(size_t)j * ROUNDS + i].t);
            assert_int_equal(float_bits(c.s[i].v), float_bits(want[(size_t)j * ROUNDS + i].v));
        }
        free(c.s);
    }
    /* one head a series written since round 150, each under its own key */
    MDB_txn *txn;
    MDB_cursor *cur;
    MDB_val k, v;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn), 0);
    assert_int_equal(mdb_cursor_open(txn, s->dbi[DB_FHEAD], &cur), 0);
    int heads = 0;
    for (int rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST); rc == 0; rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT)) {
        assert_int_equal(k.mv_size, 8);
        assert_int_equal(sid[heads], ps_get_be64(k.mv_data));
        assert_int_equal(((const uint8_t *)v.mv_data)[0], PS_FLOAT_HEAD_ENC_PADDED);
        heads++;
    }
    assert_int_equal(heads, NS);
    mdb_cursor_close(cur);
    mdb_txn_abort(txn);
    free(ls), free(fa), free(items), free(in), free(want), free(nwant), free(sid);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* ---- the captured Prometheus 2.42 bodies ---- */

static json_t *load_json(const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/prometheus/%s", ps_test_testdata(), name);
    json_error_t je;
    json_t *j = json_load_file(path, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", path, je.text);
    return j;
}

static const char *const metric_types[] = {"UNKNOWN", "COUNTER", "GAUGE", "HISTOGRAM", "GAUGEHISTOGRAM",
                                           "SUMMARY", "INFO", "STATESET"};

static void test_prometheus_bodies(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    const char *bodies[4] = {"remote-write-01", "remote-write-02", "remote-write-03", "remote-write-metadata-01"};
    ps_remote_limits_t lim;
    ps_remote_limits_default(&lim);
    size_t total_series = 0;
    for (int b = 0; b < 4; b++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/prometheus/%s.bin", ps_test_testdata(), bodies[b]);
        size_t n;
        uint8_t *body = ps_test_read_path(path, &n);
        ps_arena_t a = PS_ARENA_INIT;
        ps_remote_write_t w;
        ps_err_t err;
        if (ps_remote_write_decode(body, n, 1, &lim, &a, &w, &err) != 0)
            fail_msg("%s: %s", bodies[b], err.msg);
        ps_float_append_t *fa = calloc(w.nseries + 1, sizeof(*fa));
        ps_float_append_t **items = calloc(w.nseries + 1, sizeof(*items));
        ps_float_sample_t *smp = calloc(w.nsamples + 1, sizeof(*smp));
        ps_metric_meta_t *meta = calloc(w.nmetadata + 1, sizeof(*meta));
        size_t k = 0;
        for (uint32_t i = 0; i < w.nseries; i++) {
            fa[i].labels = &w.series[i].labels;
            fa[i].samples = smp + k;
            fa[i].nsamples = w.series[i].nsamples;
            for (uint32_t j = 0; j < w.series[i].nsamples; j++)
                smp[k++] = (ps_float_sample_t){w.series[i].samples[j].t_ms, w.series[i].samples[j].v};
            items[i] = &fa[i];
        }
        for (uint32_t i = 0; i < w.nmetadata; i++)
            meta[i] = (ps_metric_meta_t){w.metadata[i].family, w.metadata[i].family_len, (int)w.metadata[i].type,
                                         w.metadata[i].help, w.metadata[i].help_len, w.metadata[i].unit,
                                         w.metadata[i].unit_len};
        assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, items, w.nseries, meta, w.nmetadata, &err), 0);
        for (uint32_t i = 0; i < w.nseries; i++) {
            assert_int_equal(fa[i].status, 0);
            assert_int_equal(fa[i].accepted, w.series[i].nsamples);
        }
        total_series += w.nseries;
        free(fa);
        free(items);
        free(smp);
        free(meta);
        free(body);
        ps_arena_dispose(&a);
    }
    assert_int_equal(total_series, 54);

    /* read back, series by series, against the .json of each body */
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    size_t compared = 0;
    for (int b = 0; b < 3; b++) {
        char name[64];
        snprintf(name, sizeof(name), "%s.json", bodies[b]);
        json_t *j = load_json(name), *ts = json_object_get(j, "timeseries");
        assert_int_equal(json_array_size(ts), 18);
        for (size_t i = 0; i < json_array_size(ts); i++) {
            json_t *e = json_array_get(ts, i), *labels = json_object_get(e, "labels");
            ps_arena_t a = PS_ARENA_INIT;
            ps_labels_t ls = {0};
            const char *key;
            json_t *val;
            json_object_foreach(labels, key, val)
                ps_labels_set(&ls, &a, key, strlen(key), json_string_value(val), strlen(json_string_value(val)));
            uint64_t sid;
            assert_int_equal(ps_reader_series_lookup(r, &ls, &sid, &err), 0);
            json_t *samples = json_object_get(e, "samples");
            assert_int_equal(json_array_size(samples), 1);
            json_t *sm = json_array_get(samples, 0);
            int64_t t = json_integer_value(json_object_get(sm, "timestamp_ms"));
            collect_t c = {0};
            assert_int_equal(ps_reader_samples(r, sid, t, t, on_samples, &c, &err), 0);
            assert_int_equal(c.n, 1);
            assert_int_equal(c.s[0].t, t);
            assert_true(c.s[0].v == json_number_value(json_object_get(sm, "value")));
            free(c.s);
            /* and the whole series has the 3 scrapes */
            memset(&c, 0, sizeof(c));
            assert_int_equal(ps_reader_samples(r, sid, INT64_MIN, INT64_MAX, on_samples, &c, &err), 0);
            assert_int_equal(c.n, 3);
            assert_int_equal(c.s[1].t - c.s[0].t, 1000);
            free(c.s);
            ps_arena_dispose(&a);
            compared++;
        }
        json_decref(j);
    }
    assert_int_equal(compared, 54);
    /* the metadata request */
    json_t *j = load_json("remote-write-metadata-01.json"), *md = json_object_get(j, "metadata");
    assert_int_equal(json_array_size(md), 8);
    for (size_t i = 0; i < json_array_size(md); i++) {
        json_t *e = json_array_get(md, i);
        const char *fam = json_string_value(json_object_get(e, "metric_family_name"));
        metas_t c = {0};
        assert_int_equal(ps_reader_metadata(r, fam, strlen(fam), on_meta, &c, &err), 0);
        assert_int_equal(c.n, 1);
        assert_string_equal(metric_types[c.types[0]], json_string_value(json_object_get(e, "type")));
        assert_string_equal(c.help[0], json_string_value(json_object_get(e, "help")));
        assert_string_equal(c.unit[0], "");
    }
    json_decref(j);
    ps_reader_end(r);
    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.series, 18);
    assert_int_equal(st.float_heads, 18);
    assert_int_equal(st.metadata, 8);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* A failed transaction stores nothing and leaves the writer's caches consistent: a map too small
 * for the writes fails with PS_ENOSPACE; what was committed before reads back. */
static void test_enospace(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 20;
    o.retention_ns = 0;
    o.nosync = true;
    ps_store_t *s = NULL;
    ps_err_t err;
    assert_int_equal(ps_store_open(&o, &s, &err), 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = mk_labels(&a, "kept", NULL);
    ps_float_sample_t one = {1000, 1};
    ps_float_append_t fa;
    assert_int_equal(write_f(s, &ls, &one, 1, &fa), 0);
    /* 20000 series in one transaction do not fit in 1 MiB */
    enum { N = 20000 };
    ps_float_append_t *many = calloc(N, sizeof(*many));
    ps_float_append_t **items = calloc(N, sizeof(*items));
    ps_labels_t *lss = calloc(N, sizeof(*lss));
    ps_float_sample_t two[2] = {{2000, 2}, {3000, 3}};
    for (int i = 0; i < N; i++) {
        char job[32];
        snprintf(job, sizeof(job), "job-%d", i);
        lss[i] = mk_labels(&a, "many", job);
        many[i].labels = &lss[i];
        many[i].samples = two;
        many[i].nsamples = 2;
        items[i] = &many[i];
    }
    items[0]->labels = &ls; /* also the series written before */
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, items, N, NULL, 0, &err), PS_ENOSPACE);
    assert_int_equal(many[0].status, PS_ENOSPACE);
    assert_int_equal(many[0].accepted, 0);
    assert_int_equal(many[N - 1].status, PS_ENOSPACE);
    ps_store_stats_t st;
    get_stats(s, &st);
    assert_int_equal(st.series, 1);
    collect_t c;
    read_all(s, fa.sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 1);
    free(c.s);
    /* the series written before continues where the committed data ends */
    ps_float_sample_t again[2] = {{2000, 2}, {3000, 3}};
    assert_int_equal(write_f(s, &ls, again, 2, &fa), 0);
    assert_int_equal(fa.accepted, 2);
    read_all(s, fa.sid, INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 3);
    free(c.s);
    free(many);
    free(items);
    free(lss);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* ---- the float sample log (flog, schema 12) ---- */

#define LOG_NS 3

/* One sample to each of the n series ls[] (values from rough) at t in one write transaction */
static void write_round(ps_store_t *s, const ps_labels_t *ls, int n, int64_t t, uint64_t *sids)
{
    ps_float_append_t fa[LOG_NS], *items[LOG_NS];
    ps_float_sample_t smp[LOG_NS];
    for (int i = 0; i < n; i++) {
        smp[i] = (ps_float_sample_t){t, rough((int)(t / 1000 % 1000003) + 13 * i)};
        memset(&fa[i], 0, sizeof(fa[i]));
        fa[i].labels = &ls[i];
        fa[i].samples = &smp[i];
        fa[i].nsamples = 1;
        items[i] = &fa[i];
    }
    ps_err_t err;
    if (ps_store_write(ps_test_writer(s), NULL, 0, items, (size_t)n, NULL, 0, &err) != 0)
        fail_msg("write: %s", err.msg);
    for (int i = 0; i < n; i++) {
        assert_int_equal(fa[i].status, 0);
        assert_int_equal(fa[i].accepted, 1);
        sids[i] = fa[i].sid;
    }
}

typedef struct xbytes {
    ps_buf_t b; /* min_t, max_t, len, the chunk: each chunk's */
    int n;
} xbytes_t;

static int on_xor(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    xbytes_t *x = ctx;
    int64_t h[3] = {min_t, max_t, (int64_t)n};
    ps_buf_append(&x->b, h, sizeof(h));
    ps_buf_append(&x->b, chunk, n);
    x->n++;
    return 0;
}

/* The XOR chunks remote_read streams of series sid (with their bounds), into x */
static int stored_xor(ps_store_t *s, uint64_t sid, xbytes_t *x, ps_err_t *err)
{
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, err), 0);
    x->n = 0;
    x->b = (ps_buf_t)PS_BUF_INIT;
    int rc = ps_reader_xor_chunks(r, sid, INT64_MIN, INT64_MAX, on_xor, x, err);
    ps_reader_end(r);
    return rc;
}

/* Series sid reads the same in both stores: its chunks, bounds and XOR bytes; *nchunks of them */
static void expect_same(ps_store_t *a, ps_store_t *b, uint64_t sid, int nchunks)
{
    xbytes_t x, y;
    ps_err_t err;
    if (stored_xor(a, sid, &x, &err) != 0)
        fail_msg("read: %s", err.msg);
    assert_int_equal(stored_xor(b, sid, &y, &err), 0);
    assert_int_equal(x.n, nchunks);
    assert_int_equal(x.n, y.n);
    assert_int_equal(x.b.len, y.b.len);
    assert_memory_equal(x.b.data, y.b.data, x.b.len);
    ps_buf_dispose(&x.b);
    ps_buf_dispose(&y.b);
}

/* Records in database db */
static size_t db_entries(ps_store_t *s, int db)
{
    MDB_txn *t;
    MDB_stat st;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t), 0);
    assert_int_equal(mdb_stat(t, s->dbi[db], &st), 0);
    mdb_txn_abort(t);
    return st.ms_entries;
}

/* The samples of the stored fhead record of sid (not counting the log) */
static uint32_t stored_head_count(ps_store_t *s, uint64_t sid)
{
    ps_buf_t rec = PS_BUF_INIT;
    if (!get_rec(s, DB_FHEAD, sid, &rec))
        return 0;
    uint32_t n = 0;
    if (rec.data[0] == PS_FLOAT_HEAD_ENC_PADDED) /* 0a p txn len(2) then the header */
        for (size_t i = 1, k = 0; i < rec.len; i++)
            if (rec.data[i] < 0x80 && ++k == 2) {
                n = ps_xor_count(rec.data + i + 3, 2);
                break;
            }
    ps_buf_dispose(&rec);
    return n;
}

/* Two stores written alike: a with the float log (bound pages), b without; series name{job=a|b|c} */
typedef struct log_pair {
    char *da, *db;
    ps_store_t *a, *b;
    ps_arena_t ar;
    ps_labels_t ls[LOG_NS];
} log_pair_t;

/* every one of the pair's LOG_NS series reads the same from both stores, in nchunks chunks */
static void expect_all_same(ps_store_t *a, ps_store_t *b, const uint64_t *sa, int nchunks)
{
    for (int i = 0; i < LOG_NS; i++)
        expect_same(a, b, sa[i], nchunks);
}

static void log_pair_open(log_pair_t *p, int32_t pages, const char *name, int64_t retention_ns)
{
    p->da = tmpdir();
    p->db = tmpdir();
    log_pages = pages;
    p->a = open_opts(p->da, retention_ns, 0);
    log_pages = -1;
    p->b = open_opts(p->db, retention_ns, 0);
    log_pages = pages;
    p->ar = (ps_arena_t)PS_ARENA_INIT;
    const char *jobs[LOG_NS] = {"a", "b", "c"};
    for (int i = 0; i < LOG_NS; i++)
        p->ls[i] = mk_labels(&p->ar, name, jobs[i]);
}

static void log_pair_close(log_pair_t *p)
{
    log_pages = 0;
    ps_arena_dispose(&p->ar);
    ps_test_close_store(p->a);
    ps_test_close_store(p->b);
    ps_test_rm_rf(p->da);
    ps_test_rm_rf(p->db);
    free(p->da);
    free(p->db);
}

/* The same round into both stores of p (a with the log, b without): their sids in sa and sb. */
static void write_both(log_pair_t *p, const ps_labels_t *ls, int n, int64_t t, uint64_t *sa, uint64_t *sb)
{
    write_round(p->a, ls, n, t, sa);
    write_round(p->b, ls, n, t, sb);
}

/* Samples only in the log read back exactly as a store without the log holds them (samples,
 * bounds, XOR bytes), through a cut while samples are logged, a reopen without a checkpoint (a
 * crash after acknowledged commits: the writer continues from what the log gives), and a forced
 * compaction, which closes the heads with their logged samples. */
static void test_log_reads(void **state)
{
    (void)state;
    log_pair_t p;
    log_pair_open(&p, 1000, "lg", 0);
    ps_store_t *a = p.a, *b = p.b;
    const ps_labels_t *ls = p.ls;
    uint64_t sa[LOG_NS], sb[LOG_NS];
    int64_t t0 = 1700000000000ll;
    /* the first write writes the heads; the next 9 are logged, one flog record each */
    for (int i = 0; i < 10; i++) {
        write_both(&p, ls, LOG_NS, t0 + 1000 * i, sa, sb);
    }
    assert_int_equal(db_entries(a, DB_FLOG), 9);
    assert_int_equal(db_entries(b, DB_FLOG), 0);
    assert_int_equal(stored_head_count(a, sa[1]), 1);
    assert_int_equal(stored_head_count(b, sb[1]), 10);
    expect_all_same(a, b, sa, 1);
    collect_t c;
    read_all(a, sa[2], t0 + 4000, t0 + 6000, &c, 0);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.s[0].t, t0 + 4000);
    assert_int_equal(float_bits(c.s[2].v), float_bits(rough((int)((t0 + 6000) / 1000 % 1000003) + 13 * 2)));
    free(c.s);
    /* a crash after acknowledged commits: reopened, nothing checkpointed; then 115 more rounds
     * (the 121st sample cuts: the cut rewrites the head, the entries before it stay, superseded) */
    ps_test_close_store(a);
    a = p.a = open_store(p.da);
    assert_int_equal(db_entries(a, DB_FLOG), 9);
    expect_all_same(a, b, sa, 1);
    for (int i = 10; i < 125; i++) {
        write_both(&p, ls, LOG_NS, t0 + 1000 * i, sa, sb);
    }
    assert_int_equal(db_entries(a, DB_FLOG), 9 + 110 + 4); /* the cut's round wrote no record */
    assert_int_equal(stored_head_count(a, sa[0]), 1);      /* written by the cut */
    expect_all_same(a, b, sa, 2);
    /* a record of a far series (no head: inert) makes the index merge the records, not count them */
    ps_flog_ent_t far = {1000000000ull, t0, 0};
    ps_buf_t fr = PS_BUF_INIT;
    ps_flog_encode(&far, 1, &fr);
    uint8_t fk[8];
    ps_enc_be64(fk, last_txn(a) + 1000);
    poke(a, DB_FLOG, fk, 8, fr.data, fr.len);
    ps_buf_dispose(&fr);
    expect_all_same(a, b, sa, 2);
    /* the compactor closes the heads with their logged samples */
    ps_err_t err;
    uint32_t na = 0, nb = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(a), true, ps_time_now(), &na, &err), 0);
    assert_int_equal(ps_store_compact(ps_test_writer(b), true, ps_time_now(), &nb, &err), 0);
    assert_int_equal(na, 3);
    assert_int_equal(nb, 3);
    assert_int_equal(db_entries(a, DB_FHEAD), 0);
    expect_all_same(a, b, sa, 2);
    /* appending after it: a new head (written, not logged); the log's old entries are inert */
    write_both(&p, ls, LOG_NS, t0 + 1000 * 200, sa, sb);
    assert_int_equal(stored_head_count(a, sa[0]), 1);
    expect_all_same(a, b, sa, 3);
    log_pair_close(&p);
}

/* A checkpoint by the bound: with a bound of 1 page, a write that would make the log hold 2
 * writes every logged series' head and empties the log; a write after it logs again. */
static void test_log_checkpoint(void **state)
{
    (void)state;
    log_pair_t p;
    log_pair_open(&p, 1, "cp", 0);
    ps_store_t *a = p.a, *b = p.b;
    const ps_labels_t *ls = p.ls;
    uint64_t sa[LOG_NS], sb[LOG_NS];
    int64_t t0 = 1700000000000ll;
    write_both(&p, ls, LOG_NS, t0, sa, sb); /* heads written */
    write_both(&p, ls, 2, t0 + 1000, sa, sb); /* logged: the log's first page */
    assert_int_equal(db_entries(a, DB_FLOG), 1);
    assert_int_equal(stored_head_count(a, sa[0]), 1);
    write_both(&p, ls + 2, 1, t0 + 2000, sa + 2, sb + 2); /* a checkpoint: all three heads written */
    assert_int_equal(db_entries(a, DB_FLOG), 0);
    assert_int_equal(stored_head_count(a, sa[0]), 2);
    assert_int_equal(stored_head_count(a, sa[1]), 2);
    assert_int_equal(stored_head_count(a, sa[2]), 2);
    expect_all_same(a, b, sa, 1);
    write_both(&p, ls, LOG_NS, t0 + 3000, sa, sb); /* logged again */
    assert_int_equal(db_entries(a, DB_FLOG), 1);
    assert_int_equal(stored_head_count(a, sa[0]), 2);
    expect_all_same(a, b, sa, 1);
    /* the idle writer's checkpoint: the heads written, the log empty */
    ps_err_t err;
    assert_true(ps_store_float_log_pending(ps_test_writer(a)));
    assert_int_equal(ps_store_float_checkpoint(ps_test_writer(a), &err), 0);
    assert_false(ps_store_float_log_pending(ps_test_writer(a)));
    assert_int_equal(db_entries(a, DB_FLOG), 0);
    assert_int_equal(stored_head_count(a, sa[0]), 3);
    assert_int_equal(stored_head_count(a, sa[2]), 3);
    expect_all_same(a, b, sa, 1);
    log_pair_close(&p);
}

/* Retention with samples in the log: a head whose stored samples are past the cutoff but whose
 * logged ones are not stays whole; one past it with its logged samples goes, as without the log. */
static void test_log_retention(void **state)
{
    (void)state;
    log_pair_t p;
    log_pair_open(&p, 1000, "rt", 2 * HOUR_MS * 1000000);
    uint64_t sa[LOG_NS], sb[LOG_NS];
    int64_t now = ps_time_now() / 1000000, t0 = now - 110 * MIN_MS;
    write_both(&p, p.ls, LOG_NS, t0, sa, sb); /* heads written */
    write_both(&p, p.ls, LOG_NS, t0 + MIN_MS, sa, sb); /* logged */
    write_both(&p, p.ls, 2, now - 10 * MIN_MS, sa, sb); /* logged: series a and b only */
    assert_int_equal(db_entries(p.a, DB_FLOG), 2);
    assert_int_equal(stored_head_count(p.a, sa[0]), 1);
    /* an hour later: the cutoff is 70 minutes past t0 */
    ps_err_t err;
    uint32_t da = 0, db = 0;
    int64_t later = (now + HOUR_MS) * 1000000;
    assert_int_equal(ps_store_retain(ps_test_writer(p.a), later, &da, &err), 0);
    assert_int_equal(ps_store_retain(ps_test_writer(p.b), later, &db, &err), 0);
    assert_int_equal(da, 1); /* series c */
    assert_int_equal(db, 1);
    assert_int_equal(db_entries(p.a, DB_FHEAD), 2);
    for (int i = 0; i < 2; i++)
        expect_same(p.a, p.b, sa[i], 1);
    collect_t c;
    read_all(p.a, sa[1], INT64_MIN, INT64_MAX, &c, 0);
    assert_int_equal(c.n, 3);
    assert_int_equal(c.s[2].t, now - 10 * MIN_MS);
    free(c.s);
    log_pair_close(&p);
}

typedef struct log_damage {
    int n;
    char last[512];
} log_damage_t;

static void on_log_damage(void *ctx, const char *msg)
{
    log_damage_t *d = ctx;
    d->n++;
    snprintf(d->last, sizeof(d->last), "%s", msg);
}

/* A damaged flog record: the series it may hold fail with the record and what is wrong, the
 * others read on; a series past its last read on too. */
static void test_log_damaged(void **state)
{
    (void)state;
    char *dir = tmpdir();
    log_pages = 1000;
    ps_store_t *s = open_store(dir);
    ps_arena_t ar = PS_ARENA_INIT;
    ps_labels_t ls[LOG_NS] = {mk_labels(&ar, "dm", "a"), mk_labels(&ar, "dm", "b"), mk_labels(&ar, "dm", "c")};
    uint64_t sid[LOG_NS];
    int64_t t0 = 1700000000000ll;
    write_round(s, ls, LOG_NS, t0, sid);
    write_round(s, ls, 2, t0 + 1000, sid); /* logged: series a and b */
    /* its record, truncated in series b's value */
    uint8_t kb[8];
    ps_enc_be64(kb, last_txn(s));
    ps_buf_t rec = PS_BUF_INIT;
    MDB_txn *t;
    MDB_val k = {8, kb}, v;
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t), 0);
    assert_int_equal(mdb_get(t, s->dbi[DB_FLOG], &k, &v), 0);
    ps_buf_append(&rec, v.mv_data, v.mv_size);
    mdb_txn_abort(t);
    /* 01 last | a: dsid 1 t0 8 bytes | b: dsid 1 t0(6 bytes) 8 bytes */
    assert_int_equal(rec.len, 1 + 1 + 2 * (1 + 1 + 6 + 8));
    poke(s, DB_FLOG, kb, 8, rec.data, rec.len - 3);
    collect_t c;
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    memset(&c, 0, sizeof(c));
    assert_int_equal(ps_reader_samples(r, sid[1], INT64_MIN, INT64_MAX, on_samples, &c, &err), PS_ECORRUPT);
    char want[200];
    snprintf(want, sizeof(want), "series %llu: damaged float log record %llu: float log: truncated value at byte 18",
             (unsigned long long)sid[1], (unsigned long long)last_txn(s) - 1);
    assert_string_equal(err.msg, want);
    ps_reader_end(r);
    free(c.s);
    read_all(s, sid[0], INT64_MIN, INT64_MAX, &c, 0); /* before the damage */
    assert_int_equal(c.n, 2);
    free(c.s);
    read_all(s, sid[2], INT64_MIN, INT64_MAX, &c, 0); /* past the record's last series */
    assert_int_equal(c.n, 1);
    free(c.s);
    /* the check reports the record, and series b's read */
    ps_check_stats_t st;
    log_damage_t ld = {0};
    assert_int_equal(ps_store_check(s, on_log_damage, &ld, &st, NULL, &err), 0);
    assert_int_equal(st.damaged, 2);
    assert_int_equal(ld.n, 2);
    snprintf(want, sizeof(want), "flog: record %llu (series %llu to %llu): float log: truncated value at byte 18",
             (unsigned long long)last_txn(s) - 1, (unsigned long long)sid[1], (unsigned long long)sid[1]);
    assert_string_equal(ld.last, want);
    /* a damaged encoding byte: every series the record may hold */
    rec.data[0] = 9;
    poke(s, DB_FLOG, kb, 8, rec.data, rec.len);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_samples(r, sid[2], INT64_MIN, INT64_MAX, on_samples, &c, &err), PS_ECORRUPT);
    snprintf(want, sizeof(want), "series %llu: damaged float log record %llu: float log: encoding byte 9, not 1 at byte 0",
             (unsigned long long)sid[2], (unsigned long long)last_txn(s) - 2);
    assert_string_equal(err.msg, want);
    ps_reader_end(r);
    /* a checkpoint writes the heads it can and leaves the damaged record */
    write_round(s, ls, 1, t0 + 2000, sid); /* logged (series a's state is cached) */
    assert_int_equal(db_entries(s, DB_FLOG), 2);
    assert_int_equal(ps_store_float_checkpoint(ps_test_writer(s), &err), 0);
    assert_int_equal(db_entries(s, DB_FLOG), 1);
    assert_int_equal(stored_head_count(s, sid[0]), 3);
    ps_buf_dispose(&rec);
    log_pages = 0;
    ps_arena_dispose(&ar);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The page of DB_INFO holding the id counters ("next"), and the record's bytes in *v */
static size_t next_page(ps_store_t *s, ps_buf_t *v)
{
    MDB_envinfo ei;
    MDB_stat es;
    MDB_txn *t;
    MDB_val k = {4, "next"}, val;
    assert_int_equal(mdb_env_info(s->env, &ei), 0);
    assert_int_equal(mdb_env_stat(s->env, &es), 0);
    assert_int_equal(mdb_txn_begin(s->env, NULL, MDB_RDONLY, &t), 0);
    assert_int_equal(mdb_get(t, s->dbi[DB_INFO], &k, &val), 0);
    ps_buf_reset(v);
    ps_buf_append(v, val.mv_data, val.mv_size);
    size_t page = (size_t)((const char *)val.mv_data - (const char *)ei.me_mapaddr) / es.ms_psize;
    mdb_txn_abort(t);
    return page;
}

/* A commit that gives no new id (samples of known series) leaves the id counters' record, and
 * so its page, as it was: no DB_INFO page rewritten and synced (3 pages a one-sample commit, not
 * 4); a commit that gives one (a new series) writes them, and a reopened store goes on from them. */
static void test_next_written_when_changed(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t l1 = mk_labels(&a, "nx", "a"), l2 = mk_labels(&a, "nx", "b");
    ps_float_sample_t smp = {1700000000000ll, 1.0};
    ps_float_append_t out;
    ps_buf_t v0 = PS_BUF_INIT, v1 = PS_BUF_INIT;
    assert_int_equal(write_f(s, &l1, &smp, 1, &out), 0);
    uint64_t sid1 = out.sid;
    size_t p0 = next_page(s, &v0);
    uint64_t txn0 = last_txn(s);
    for (int i = 1; i <= 3; i++) { /* logged samples of a known series: nothing new */
        smp.t += 15000;
        assert_int_equal(write_f(s, &l1, &smp, 1, &out), 0);
        assert_int_equal(out.accepted, 1);
    }
    assert_int_equal(last_txn(s), txn0 + 3);
    assert_int_equal(next_page(s, &v1), p0);
    assert_int_equal(v1.len, v0.len);
    assert_memory_equal(v1.data, v0.data, v0.len);
    smp.t += 15000; /* a new series: a new id, saved */
    assert_int_equal(write_f(s, &l2, &smp, 1, &out), 0);
    uint64_t sid2 = out.sid;
    assert_int_equal(sid2, sid1 + 1);
    assert_true(next_page(s, &v1) != p0);
    assert_int_equal(v1.len, v0.len);
    assert_int_equal(ps_get_be64(v1.data + v1.len - 8), ps_get_be64(v0.data + v0.len - 8) + 1);
    ps_test_close_store(s);
    s = open_store(dir);
    ps_labels_t l3 = mk_labels(&a, "nx", "c");
    smp.t += 15000;
    assert_int_equal(write_f(s, &l3, &smp, 1, &out), 0);
    assert_int_equal(out.sid, sid2 + 1);
    ps_buf_dispose(&v0);
    ps_buf_dispose(&v1);
    ps_arena_dispose(&a);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_and_cut),
        cmocka_unit_test(test_next_written_when_changed),
        cmocka_unit_test(test_order_and_duplicates),
        cmocka_unit_test(test_out_of_bounds),
        cmocka_unit_test(test_reopen),
        cmocka_unit_test(test_window_compaction_retention),
        cmocka_unit_test(test_packed),
        cmocka_unit_test(test_kind_conflict),
        cmocka_unit_test(test_corrupt),
        cmocka_unit_test(test_metadata),
        cmocka_unit_test(test_upgrade_v1),
        cmocka_unit_test(test_head_split),
        cmocka_unit_test(test_upgrade_v2),
        cmocka_unit_test(test_upgrade_v9),
        cmocka_unit_test(test_upgrade_v3),
        cmocka_unit_test(test_append_fill),
        cmocka_unit_test(test_flush_neighbours),
        cmocka_unit_test(test_prometheus_bodies),
        cmocka_unit_test(test_enospace),
        cmocka_unit_test(test_log_reads),
        cmocka_unit_test(test_log_checkpoint),
        cmocka_unit_test(test_log_retention),
        cmocka_unit_test(test_log_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
