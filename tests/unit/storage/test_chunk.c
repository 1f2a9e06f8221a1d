/*
 * test_chunk.c - the chunk codec: round trips on random and edge data, sum_range against a naive
 * sum, header/meta decoding, encoder rejections, truncation and byte flips, sizes; packed chunks
 * (PS_CHUNK_ENC_ZSTD): the same answers as V1, V1 kept where packing does not pay, damaged frames
 * with their messages; references (PS_CHUNK_ENC_REF): exact against their twin, fallback at write
 * time, missing or damaged twins with their messages. Speed is
 * measured by bench/chunk.c (benchmarks print figures; unit tests do not time).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/varint.h"
#include "storage/chunk.h"

#include "../testutil.h"

/* ---- helpers ---------------------------------------------------------------------------- */

static uint64_t rnd_below(uint64_t n) { return n ? ps_test_rnd() % n : 0; }

typedef enum { VAL_SMALL, VAL_CPU, VAL_WIDE, VAL_EXTREME, VAL_CONST, VAL_LINEAR, VAL_MIX } val_mode_t;
typedef enum { TS_REGULAR, TS_JITTER, TS_IRREGULAR, TS_EXTREME } ts_mode_t;

static int64_t rnd_value(val_mode_t m, int64_t base, uint32_t i)
{
    int64_t v;
    switch (m) {
    case VAL_SMALL: v = (int64_t)rnd_below(100) - 50; break;
    case VAL_CPU: v = (int64_t)(1 + rnd_below(40)) * 10000000; break;
    case VAL_WIDE: v = (int64_t)ps_test_rnd(); break;
    case VAL_EXTREME: {
        static const int64_t ex[] = {INT64_MIN, INT64_MAX, INT64_MIN + 1, INT64_MAX - 1, -1, 1, 2, -2};
        v = ex[rnd_below(8)];
        break;
    }
    case VAL_CONST: v = base; break;
    case VAL_LINEAR: v = base + (int64_t)i * 7; break;
    default: return rnd_value((val_mode_t)rnd_below(VAL_MIX), base, i);
    }
    return v == 0 ? 3 : v;
}

/** Fills d (arrays from arena) with a random chunk. density in [0, 1]. */
static void gen_chunk(ps_arena_t *a, ps_chunk_data_t *d, uint32_t n, uint32_t nnodes, double density, val_mode_t vm,
                      ts_mode_t tm)
{
    memset(d, 0, sizeof(*d));
    d->n = n;
    d->ts = ps_arena_alloc(a, n * sizeof(int64_t));
    d->durations = ps_arena_alloc(a, n * sizeof(int64_t));
    d->periods = ps_arena_alloc(a, n * sizeof(int64_t));
    d->totals = ps_arena_calloc(a, n, sizeof(int64_t));
    int64_t t = (int64_t)1700000000 * 1000000000;
    if (tm == TS_EXTREME)
        t = INT64_MIN + (int64_t)rnd_below(1000);
    else if (tm == TS_IRREGULAR)
        t = -(int64_t)rnd_below(1ull << 40);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0) {
            uint64_t gap;
            switch (tm) {
            case TS_REGULAR: gap = 10000000000ull; break;
            case TS_JITTER: gap = 10000000000ull + rnd_below(20000000) - 10000000; break;
            case TS_IRREGULAR: gap = 1 + (rnd_below(4) == 0 ? rnd_below(1ull << 50) : rnd_below(100)); break;
            default: {
                /* huge gaps but the last must stay <= INT64_MAX */
                uint64_t room = (uint64_t)INT64_MAX - (uint64_t)t;
                uint64_t left = n - i;
                gap = 1 + rnd_below(room / left);
                break;
            }
            }
            t = (int64_t)((uint64_t)t + gap);
        }
        d->ts[i] = t;
        d->durations[i] = rnd_below(8) == 0 ? (int64_t)rnd_below(3) * 1000000000 : 10000000000;
        d->periods[i] = rnd_below(16) == 0 ? -(int64_t)rnd_below(5) : 10000000;
    }
    d->nnodes = nnodes;
    d->node_ids = ps_arena_alloc(a, nnodes * sizeof(uint64_t));
    d->off = ps_arena_alloc(a, (nnodes + 1) * sizeof(uint32_t));
    size_t cap = 16;
    d->idx = malloc(cap * sizeof(uint32_t));
    d->val = malloc(cap * sizeof(int64_t));
    uint64_t id = rnd_below(1000);
    uint32_t nnz = 0;
    for (uint32_t j = 0; j < nnodes; j++) {
        id += 1 + (rnd_below(4) == 0 ? rnd_below(1ull << 40) : rnd_below(10));
        if (j == nnodes - 1 && rnd_below(8) == 0)
            id = UINT64_MAX;
        d->node_ids[j] = id;
        d->off[j] = nnz;
        int64_t base = rnd_value(rnd_below(2) ? VAL_CPU : VAL_WIDE, 0, 0);
        uint32_t start = rnd_below(4) == 0 ? (uint32_t)rnd_below(n) : 0;
        for (uint32_t i = start; i < n; i++) {
            int present = (double)(ps_test_rnd() >> 11) / (double)(1ull << 53) < density;
            if (!present && !(i == n - 1 && nnz == d->off[j]))
                continue; /* every node gets at least one value */
            if (nnz == cap) {
                cap *= 2;
                d->idx = realloc(d->idx, cap * sizeof(uint32_t));
                d->val = realloc(d->val, cap * sizeof(int64_t));
            }
            d->idx[nnz] = i;
            d->val[nnz] = rnd_value(vm, base, i);
            d->totals[i] = (int64_t)((uint64_t)d->totals[i] + (uint64_t)d->val[nnz]);
            nnz++;
        }
    }
    d->off[nnodes] = nnz;
    /* move idx/val into the arena */
    uint32_t *idx = ps_arena_alloc(a, nnz * sizeof(uint32_t) + 1);
    int64_t *val = ps_arena_alloc(a, nnz * sizeof(int64_t) + 1);
    memcpy(idx, d->idx, nnz * sizeof(uint32_t));
    memcpy(val, d->val, nnz * sizeof(int64_t));
    free(d->idx);
    free(d->val);
    d->idx = idx;
    d->val = val;
}

static void assert_meta_equal(const ps_chunk_data_t *a, const ps_chunk_data_t *b)
{
    assert_int_equal(a->n, b->n);
    assert_memory_equal(a->ts, b->ts, a->n * sizeof(int64_t));
    assert_memory_equal(a->durations, b->durations, a->n * sizeof(int64_t));
    assert_memory_equal(a->periods, b->periods, a->n * sizeof(int64_t));
    assert_memory_equal(a->totals, b->totals, a->n * sizeof(int64_t));
}

static void assert_chunk_equal(const ps_chunk_data_t *a, const ps_chunk_data_t *b)
{
    assert_meta_equal(a, b);
    assert_int_equal(a->nnodes, b->nnodes);
    if (a->nnodes == 0)
        return;
    assert_memory_equal(a->node_ids, b->node_ids, a->nnodes * sizeof(uint64_t));
    assert_memory_equal(a->off, b->off, (a->nnodes + 1) * sizeof(uint32_t));
    uint32_t nnz = a->off[a->nnodes];
    if (nnz) {
        assert_memory_equal(a->idx, b->idx, nnz * sizeof(uint32_t));
        assert_memory_equal(a->val, b->val, nnz * sizeof(int64_t));
    }
}

/** A decoded chunk must satisfy the invariants of ps_chunk_data_t. */
static void assert_chunk_valid(const ps_chunk_data_t *d)
{
    assert_true(d->n >= 1 && d->n <= PS_CHUNK_MAX_PROFILES);
    for (uint32_t i = 1; i < d->n; i++)
        assert_true(d->ts[i] > d->ts[i - 1]);
    if (d->nnodes == 0)
        return;
    assert_int_equal(d->off[0], 0);
    for (uint32_t j = 0; j < d->nnodes; j++) {
        if (j)
            assert_true(d->node_ids[j] > d->node_ids[j - 1]);
        assert_true(d->off[j + 1] > d->off[j]);
        for (uint32_t k = d->off[j]; k < d->off[j + 1]; k++) {
            assert_true(d->idx[k] < d->n);
            if (k > d->off[j])
                assert_true(d->idx[k] > d->idx[k - 1]);
            assert_true(d->val[k] != 0);
        }
    }
}

/** Encodes d, decodes it back, checks equality; returns the encoded size. */
static size_t roundtrip(const ps_chunk_data_t *d, ps_buf_t *buf)
{
    ps_err_t err;
    ps_buf_reset(buf);
    int r = ps_chunk_encode(d, buf, &err);
    if (r != 0)
        fail_msg("encode: %s", err.msg);
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t got;
    r = ps_chunk_decode(buf->data, buf->len, &a, &got, &err);
    if (r != 0)
        fail_msg("decode: %s", err.msg);
    assert_chunk_equal(d, &got);

    ps_chunk_data_t meta;
    assert_int_equal(ps_chunk_decode_meta(buf->data, buf->len, &a, &meta, &err), 0);
    assert_meta_equal(d, &meta);
    assert_int_equal(meta.nnodes, 0);
    assert_null(meta.node_ids);

    ps_chunk_header_t h;
    assert_int_equal(ps_chunk_header(buf->data, buf->len, &h), 0);
    assert_int_equal(h.encoding, PS_CHUNK_ENC_V1);
    assert_int_equal(h.n, d->n);
    assert_true(h.min_ts == d->ts[0] && h.max_ts == d->ts[d->n - 1]);
    ps_arena_dispose(&a);
    return buf->len;
}

/* ---- sum_range -------------------------------------------------------------------------- */

typedef struct sums {
    uint32_t n;
    uint64_t ids[1 << 16];
    int64_t sums[1 << 16];
    int sorted;
} sums_t;

static void on_node(void *ctx, uint64_t id, int64_t sum)
{
    sums_t *s = ctx;
    assert_true(s->n < (1 << 16));
    if (s->n > 0 && id <= s->ids[s->n - 1])
        s->sorted = 0;
    s->ids[s->n] = id;
    s->sums[s->n++] = sum;
}

static void naive_sums(const ps_chunk_data_t *d, uint32_t from, uint32_t to, sums_t *s)
{
    s->n = 0;
    for (uint32_t j = 0; j < d->nnodes; j++) {
        __int128 sum = 0; /* exact, then clamped to int64 (saturated, never wrapped) */
        for (uint32_t k = d->off[j]; k < d->off[j + 1]; k++)
            if (d->idx[k] >= from && d->idx[k] < to)
                sum += d->val[k];
        if (sum != 0) {
            s->ids[s->n] = d->node_ids[j];
            s->sums[s->n++] = sum > INT64_MAX ? INT64_MAX : sum < INT64_MIN ? INT64_MIN : (int64_t)sum;
        }
    }
}

static void check_sum_range(const ps_chunk_data_t *d, const ps_buf_t *buf, uint32_t from, uint32_t to)
{
    static sums_t want, got;
    ps_err_t err;
    naive_sums(d, from, to, &want);
    got.n = 0;
    got.sorted = 1;
    int r = ps_chunk_sum_range(buf->data, buf->len, from, to, on_node, &got, &err);
    if (r != 0)
        fail_msg("sum_range: %s", err.msg);
    assert_true(got.sorted);
    assert_int_equal(got.n, want.n);
    assert_memory_equal(got.ids, want.ids, want.n * sizeof(uint64_t));
    assert_memory_equal(got.sums, want.sums, want.n * sizeof(int64_t));
}

/* ---- tests ------------------------------------------------------------------------------ */

static void test_roundtrip_random(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    for (int it = 0; it < 400; it++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_chunk_data_t d;
        uint32_t n = 1 + (uint32_t)rnd_below(it % 10 == 0 ? 2000 : 130);
        uint32_t nnodes = (uint32_t)rnd_below(it % 7 == 0 ? 500 : 60);
        double density = (double)rnd_below(101) / 100.0;
        gen_chunk(&a, &d, n, nnodes, density, (val_mode_t)rnd_below(VAL_MIX + 1), (ts_mode_t)rnd_below(4));
        roundtrip(&d, &buf);
        for (int k = 0; k < 5; k++) {
            uint32_t from = (uint32_t)rnd_below(n + 1), to = (uint32_t)rnd_below(n + 2);
            check_sum_range(&d, &buf, from, to);
        }
        check_sum_range(&d, &buf, 0, n);
        check_sum_range(&d, &buf, 0, UINT32_MAX);
        ps_arena_dispose(&a);
    }
    ps_buf_dispose(&buf);
}

static void test_n1_and_max(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    /* n = 1, with and without nodes */
    gen_chunk(&a, &d, 1, 0, 0.5, VAL_SMALL, TS_REGULAR);
    roundtrip(&d, &buf);
    ps_chunk_data_t got;
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, NULL), 0);
    assert_true(got.nnodes == 0 && got.off != NULL && got.off[0] == 0); /* off[nnodes] is always valid */
    gen_chunk(&a, &d, 1, 20, 0.5, VAL_EXTREME, TS_EXTREME);
    roundtrip(&d, &buf);
    check_sum_range(&d, &buf, 0, 1);
    /* n = 65535 */
    gen_chunk(&a, &d, PS_CHUNK_MAX_PROFILES, 40, 0.3, VAL_MIX, TS_JITTER);
    roundtrip(&d, &buf);
    check_sum_range(&d, &buf, 0, PS_CHUNK_MAX_PROFILES);
    check_sum_range(&d, &buf, 1000, 60000);
    gen_chunk(&a, &d, PS_CHUNK_MAX_PROFILES, 10, 1.0, VAL_CONST, TS_REGULAR);
    roundtrip(&d, &buf);
    size_t nb = buf.len - 23 - ps_get_be32(buf.data + 19);
    assert_true(nb < 10 * 22); /* 10 constant columns: id gap <= 6, length, first <= 3, literal <= 10, to-end */
    gen_chunk(&a, &d, PS_CHUNK_MAX_PROFILES, 3, 0.5, VAL_EXTREME, TS_EXTREME);
    roundtrip(&d, &buf);
    check_sum_range(&d, &buf, 12345, 54321);
    /* n > max is refused */
    d.n = PS_CHUNK_MAX_PROFILES + 1;
    ps_err_t err;
    assert_int_equal(ps_chunk_encode(&d, &buf, &err), PS_ETOOBIG);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

/** Builds a chunk from a dense matrix m[node][profile] (0 = absent). */
static void from_dense(ps_arena_t *a, ps_chunk_data_t *d, uint32_t n, uint32_t nnodes, const int64_t *m,
                       const int64_t *ts)
{
    memset(d, 0, sizeof(*d));
    d->n = n;
    d->ts = ps_arena_alloc(a, n * 8);
    d->durations = ps_arena_alloc(a, n * 8);
    d->periods = ps_arena_alloc(a, n * 8);
    d->totals = ps_arena_calloc(a, n, 8);
    for (uint32_t i = 0; i < n; i++) {
        d->ts[i] = ts ? ts[i] : (int64_t)1700000000000000000 + (int64_t)i * 10000000000;
        d->durations[i] = 10000000000;
        d->periods[i] = 10000000;
    }
    d->nnodes = 0;
    d->node_ids = ps_arena_alloc(a, (nnodes + 1) * 8);
    d->off = ps_arena_alloc(a, (nnodes + 1) * 4);
    d->idx = ps_arena_alloc(a, (size_t)n * nnodes * 4 + 4);
    d->val = ps_arena_alloc(a, (size_t)n * nnodes * 8 + 8);
    uint32_t nnz = 0;
    for (uint32_t j = 0; j < nnodes; j++) {
        uint32_t start = nnz;
        for (uint32_t i = 0; i < n; i++) {
            int64_t v = m[(size_t)j * n + i];
            if (v != 0) {
                d->idx[nnz] = i;
                d->val[nnz++] = v;
                d->totals[i] = (int64_t)((uint64_t)d->totals[i] + (uint64_t)v);
            }
        }
        if (nnz > start) {
            d->node_ids[d->nnodes] = 100 + 3 * j;
            d->off[d->nnodes++] = start;
        }
    }
    d->off[d->nnodes] = nnz;
}

static void test_edge_columns(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    enum { N = 120 };
    static int64_t m[8 * N];
    memset(m, 0, sizeof(m));
    m[0 * N + N - 1] = 5;                        /* only in the last profile */
    m[1 * N + 0] = -7;                           /* only in the first */
    for (int i = 0; i < N; i++) m[2 * N + i] = 42;               /* constant */
    for (int i = 0; i < N; i++) m[3 * N + i] = 1000 + 3 * i;     /* linear: one repeat run */
    for (int i = 0; i < N; i += 2) m[4 * N + i] = 9;             /* alternating */
    for (int i = 60; i < 70; i++) m[5 * N + i] = INT64_MIN;      /* late, short, extreme */
    for (int i = 0; i < N; i++) m[6 * N + i] = (i & 1) ? INT64_MAX : INT64_MIN; /* wrapping deltas */
    m[7 * N + 59] = 1;
    m[7 * N + 61] = INT64_MAX;
    from_dense(&a, &d, N, 8, m, NULL);
    roundtrip(&d, &buf);
    for (uint32_t from = 0; from <= N; from += 7)
        for (uint32_t to = from; to <= N + 1; to += 11)
            check_sum_range(&d, &buf, from, to);
    check_sum_range(&d, &buf, N - 1, N);
    check_sum_range(&d, &buf, 0, 1);

    /* timestamps at both ends of int64 */
    int64_t ts[3] = {INT64_MIN, 0, INT64_MAX};
    int64_t m3[3 * 3] = {1, 0, 0, 0, 0, INT64_MAX, INT64_MIN, INT64_MIN, INT64_MIN};
    from_dense(&a, &d, 3, 3, m3, ts);
    roundtrip(&d, &buf);
    check_sum_range(&d, &buf, 0, 3);

    /* only INT64_MIN values (scale 2^62) */
    int64_t m4[2] = {INT64_MIN, INT64_MIN};
    from_dense(&a, &d, 2, 1, m4, NULL);
    roundtrip(&d, &buf);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

static size_t node_bytes(const ps_buf_t *b) { return b->len - 23 - ps_get_be32(b->data + 19); }

/** Column sizes of the cases the format is designed for (node section bytes only). */
static void test_column_costs(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    enum { N = 120 };
    static int64_t m[2 * N];
    /* base: one constant node; then add a node present once, or a second constant node */
    memset(m, 0, sizeof(m));
    for (int i = 0; i < N; i++) m[i] = 30000000;
    from_dense(&a, &d, N, 1, m, NULL);
    roundtrip(&d, &buf);
    size_t base = node_bytes(&buf);
    print_message("meta section for 120 regular profiles: %u bytes\n", ps_get_be32(buf.data + 19));
    m[N + 77] = 20000000; /* present in 1 profile of 120 */
    from_dense(&a, &d, N, 2, m, NULL);
    roundtrip(&d, &buf);
    size_t once = node_bytes(&buf) - base;
    for (int i = 0; i < N; i++) m[N + i] = 50000000;
    from_dense(&a, &d, N, 2, m, NULL);
    roundtrip(&d, &buf);
    size_t constant = node_bytes(&buf) - base;
    print_message("node cost incl. id gap and column length: present once %zu bytes, constant %zu bytes\n", once,
                  constant);
    assert_true(once <= 4);     /* id gap, length, first index, literal (scaled to 1 byte) */
    /* id gap, length, first index, literal, repeat to the end (+1: nnz 120 -> 240 takes 2 bytes) */
    assert_true(constant <= 6);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

static void test_encode_rejects(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    ps_err_t err;
    gen_chunk(&a, &d, 10, 4, 1.0, VAL_SMALL, TS_REGULAR);
    ps_buf_putc(&buf, 0xaa); /* encode appends: a refused chunk appends nothing */
#define REJECT(want)                                                                                                   \
    do {                                                                                                               \
        assert_int_equal(ps_chunk_encode(&d, &buf, &err), want);                                                       \
        assert_int_equal(err.code, want);                                                                              \
        assert_int_equal(buf.len, 1);                                                                                  \
    } while (0)
    int64_t t = d.ts[5];
    d.ts[5] = d.ts[4];
    REJECT(PS_EINVAL);
    assert_non_null(strstr(err.msg, "timestamp 5"));
    d.ts[5] = t;
    uint64_t id = d.node_ids[2];
    d.node_ids[2] = d.node_ids[1];
    REJECT(PS_EINVAL);
    d.node_ids[2] = id;
    int64_t v = d.val[3];
    d.val[3] = 0;
    REJECT(PS_EINVAL);
    d.val[3] = v;
    uint32_t i = d.idx[3];
    d.idx[3] = d.idx[2];
    REJECT(PS_EINVAL);
    d.idx[3] = 10;
    REJECT(PS_EINVAL);
    d.idx[3] = i;
    uint32_t o = d.off[2];
    d.off[2] = d.off[1];
    REJECT(PS_EINVAL);
    d.off[2] = o;
    d.n = 0;
    REJECT(PS_EINVAL);
    d.n = 10;
    assert_int_equal(ps_chunk_encode(&d, &buf, &err), 0);
    /* appended after the existing byte, and decodable from there */
    ps_chunk_data_t got;
    assert_int_equal(ps_chunk_decode(buf.data + 1, buf.len - 1, &a, &got, &err), 0);
    assert_chunk_equal(&d, &got);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

static void test_header_meta(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d, meta;
    ps_err_t err;
    gen_chunk(&a, &d, 50, 100, 0.5, VAL_CPU, TS_JITTER);
    roundtrip(&d, &buf);
    ps_chunk_header_t h;
    /* the header and meta never look at node bytes: they decode with the node section cut off */
    uint32_t meta_len = ps_get_be32(buf.data + 19);
    assert_int_equal(ps_chunk_header(buf.data, 23 + meta_len, &h), 0);
    assert_int_equal(h.n, 50);
    assert_int_equal(ps_chunk_header(buf.data, 23, &h), PS_ECORRUPT); /* meta_len runs past the end */
    assert_int_equal(ps_chunk_decode_meta(buf.data, 23 + meta_len, &a, &meta, &err), 0);
    assert_meta_equal(&d, &meta);
    assert_int_not_equal(ps_chunk_decode(buf.data, 23 + meta_len, &a, &meta, &err), 0);
    assert_int_equal(meta.n, 0); /* out is zeroed on failure */
    /* header failures */
    assert_int_equal(ps_chunk_header(buf.data, 22, &h), PS_ECORRUPT);
    buf.data[0] = 3;
    assert_int_equal(ps_chunk_header(buf.data, buf.len, &h), PS_ECORRUPT);
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &meta, &err), PS_ECORRUPT);
    assert_string_equal(err.msg, "chunk: unknown encoding 3");
    /* encoding 8 (packed) with a plain node section: the header and meta read, the nodes do not */
    buf.data[0] = PS_CHUNK_ENC_ZSTD;
    assert_int_equal(ps_chunk_header(buf.data, buf.len, &h), 0);
    assert_int_equal(ps_chunk_decode_meta(buf.data, buf.len, &a, &meta, &err), 0);
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &meta, &err), PS_ECORRUPT);
    char want[96];
    snprintf(want, sizeof(want), "chunk: packed node section: not a zstd frame (%zu bytes)", buf.len - 23 - meta_len);
    assert_string_equal(err.msg, want);
    buf.data[0] = 1;
    buf.data[1] = buf.data[2] = 0; /* n = 0 */
    assert_int_equal(ps_chunk_header(buf.data, buf.len, &h), PS_ECORRUPT);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

/** Messages name the field that is wrong. */
static void test_corrupt_messages(void **state)
{
    static sums_t s;
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d, got;
    ps_err_t err;
    enum { N = 120 };
    static int64_t m[2 * N];
    memset(m, 0, sizeof(m));
    m[5] = 1;
    m[N + 100] = 2;
    from_dense(&a, &d, N, 2, m, NULL);
    roundtrip(&d, &buf);
    /* node section: nnodes nnz scale | id id | len first op | len first op */
    size_t at = 23 + ps_get_be32(buf.data + 19);
    const uint8_t want[] = {2, 2, 1, 100, 3, 2, 5, 4, 2, 100, 8};
    assert_int_equal(buf.len - at, sizeof(want));
    assert_memory_equal(buf.data + at, want, sizeof(want));
    buf.data[at + 9] = 120; /* node 1 first index = n */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "node 1: first index 120 >= n=120"));
    buf.data[at + 9] = 119;
    buf.data[at + 10] = 2 << 3 | 1; /* a delta run of 2 from 119 */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    print_message("%s\n", err.msg);
    assert_non_null(strstr(err.msg, "node 1: column runs past n=120"));
    buf.data[at + 10] = 0; /* a zero literal */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "zero value"));
    buf.data[at + 10] = 8;
    ps_buf_putc(&buf, 0); /* a trailing byte */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "trailing"));
    assert_int_equal(ps_chunk_sum_range(buf.data, buf.len, 0, N, on_node, &s, &err), PS_ECORRUPT);
    buf.len--;
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), 0);
    buf.data[at] = 0x7f; /* nnodes */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "nnodes"));
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

/** Every proper prefix fails cleanly (decode, sum_range; meta once the meta section is cut). */
static void test_truncation(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    static sums_t s;
    for (int it = 0; it < 12; it++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_chunk_data_t d, got;
        ps_err_t err;
        gen_chunk(&a, &d, 1 + (uint32_t)rnd_below(40), (uint32_t)rnd_below(30), 0.4, (val_mode_t)(it % (VAL_MIX + 1)),
                  (ts_mode_t)(it % 4));
        roundtrip(&d, &buf);
        uint32_t meta_end = 23 + ps_get_be32(buf.data + 19);
        for (size_t len = 0; len < buf.len; len++) {
            /* a copy of exactly len bytes, so ASan catches any read past it */
            uint8_t *p = malloc(len ? len : 1);
            memcpy(p, buf.data, len);
            assert_int_equal(ps_chunk_decode(p, len, &a, &got, &err), PS_ECORRUPT);
            assert_int_equal(got.n, 0);
            s.n = 0;
            assert_int_equal(ps_chunk_sum_range(p, len, 0, 1000, on_node, &s, &err), PS_ECORRUPT);
            int r = ps_chunk_decode_meta(p, len, &a, &got, &err);
            assert_int_equal(r, len < meta_end ? PS_ECORRUPT : 0);
            free(p);
        }
        ps_arena_dispose(&a);
    }
    ps_buf_dispose(&buf);
}

/** Random byte flips: fail cleanly, or decode to a valid chunk that round trips. */
static void test_byte_flips(void **state)
{
    ps_buf_t buf = PS_BUF_INIT, buf2 = PS_BUF_INIT;
    static sums_t s;
    unsigned ok = 0, bad = 0;
    for (int it = 0; it < 60; it++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_chunk_data_t d, got, again;
        ps_err_t err;
        gen_chunk(&a, &d, 1 + (uint32_t)rnd_below(60), (uint32_t)rnd_below(40), (double)rnd_below(100) / 100,
                  (val_mode_t)(it % (VAL_MIX + 1)), (ts_mode_t)(it % 4));
        roundtrip(&d, &buf);
        uint8_t *p = malloc(buf.len);
        for (int f = 0; f < 300; f++) {
            memcpy(p, buf.data, buf.len);
            int nflips = 1 + (int)rnd_below(3);
            for (int k = 0; k < nflips; k++) {
                size_t at = rnd_below(buf.len);
                if (rnd_below(2))
                    p[at] ^= (uint8_t)(1u << rnd_below(8));
                else
                    p[at] = (uint8_t)ps_test_rnd();
            }
            ps_arena_t fa = PS_ARENA_INIT;
            int r = ps_chunk_decode(p, buf.len, &fa, &got, &err);
            if (r != 0) {
                assert_int_equal(r, PS_ECORRUPT);
                assert_int_equal(err.code, PS_ECORRUPT);
                assert_true(strncmp(err.msg, "chunk: ", 7) == 0);
                assert_int_equal(got.n, 0);
            }
            s.n = 0;
            s.sorted = 1;
            int rs = ps_chunk_sum_range(p, buf.len, (uint32_t)rnd_below(70), (uint32_t)rnd_below(70), on_node, &s, &err);
            assert_true(rs == 0 || rs == PS_ECORRUPT);
            if (r == 0) {
                ok++;
                assert_chunk_valid(&got);
                assert_int_equal(rs, 0); /* sum_range checks a subset of what decode checks */
                assert_true(s.sorted);
                ps_buf_reset(&buf2);
                assert_int_equal(ps_chunk_encode(&got, &buf2, &err), 0);
                assert_int_equal(ps_chunk_decode(buf2.data, buf2.len, &fa, &again, &err), 0);
                assert_chunk_equal(&got, &again);
            } else {
                bad++;
            }
            ps_chunk_data_t meta;
            ps_chunk_decode_meta(p, buf.len, &fa, &meta, &err);
            ps_arena_dispose(&fa);
        }
        free(p);
        ps_arena_dispose(&a);
    }
    print_message("byte flips: %u decoded to valid chunks, %u rejected\n", ok, bad);
    ps_buf_dispose(&buf);
    ps_buf_dispose(&buf2);
}

/** The realistic CPU case: size per (node, value) pair against 9 bytes raw. */
static void test_size_realistic(void **state)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    gen_chunk(&a, &d, 120, 600, 0.3, VAL_CPU, TS_REGULAR);
    size_t sz = roundtrip(&d, &buf);
    uint32_t nnz = d.off[d.nnodes];
    double per = (double)sz / nnz;
    print_message("120 profiles x 600 nodes, 30%% present, CPU ns values: %u pairs, %zu bytes, %.2f bytes/pair "
                  "(raw 9 bytes/pair: %.1fx smaller)\n",
                  nnz, sz, per, 9.0 / per);
    assert_true(per < 3.0);
    /* same data with values not sharing a factor (scale 1) */
    d.val[0] += 1;
    d.totals[d.idx[0]] += 1;
    sz = roundtrip(&d, &buf);
    print_message("  same with one value off the 10 ms grid (no common scale): %.2f bytes/pair\n", (double)sz / nnz);
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

/* ---- packed chunks ---------------------------------------------------------------------- */

/** Packs the V1 chunk in v1 into packed; checks that every reader answers as for v1. Returns 1 if
 *  it packed (encoding 2, fewer bytes), 0 if it kept v1 byte for byte. */
static int pack_check(const ps_chunk_data_t *d, const ps_buf_t *v1, ps_buf_t *packed)
{
    ps_err_t err;
    ps_buf_reset(packed);
    assert_int_equal(ps_chunk_pack(v1->data, v1->len, PS_CHUNK_ZSTD_LEVEL, packed, &err), 0);
    ps_chunk_header_t h;
    assert_int_equal(ps_chunk_header(packed->data, packed->len, &h), 0);
    if (h.encoding == PS_CHUNK_ENC_V1) {
        assert_int_equal(packed->len, v1->len);
        assert_memory_equal(packed->data, v1->data, v1->len);
        return 0;
    }
    assert_int_equal(h.encoding, PS_CHUNK_ENC_ZSTD);
    assert_true(packed->len < v1->len);
    assert_memory_equal(packed->data + 1, v1->data + 1, 22); /* the header but its encoding byte */
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t got, meta;
    if (ps_chunk_decode(packed->data, packed->len, &a, &got, &err) != 0)
        fail_msg("decode packed: %s", err.msg);
    assert_chunk_equal(d, &got);
    assert_int_equal(ps_chunk_decode_meta(packed->data, packed->len, &a, &meta, &err), 0);
    assert_meta_equal(d, &meta);
    ps_arena_dispose(&a);
    ps_buf_t *pb = packed;
    check_sum_range(d, pb, 0, d->n);
    check_sum_range(d, pb, d->n / 3, d->n - d->n / 4);
    check_sum_range(d, pb, d->n - 1, d->n + 5);
    return 1;
}

static void test_packed_roundtrip(void **state)
{
    ps_buf_t v1 = PS_BUF_INIT, packed = PS_BUF_INIT;
    int npacked = 0;
    for (int it = 0; it < 300; it++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_chunk_data_t d;
        uint32_t n = 1 + (uint32_t)rnd_below(it % 10 == 0 ? 2000 : 130);
        gen_chunk(&a, &d, n, 1 + (uint32_t)rnd_below(300), (double)rnd_below(101) / 100, (val_mode_t)(it % 7),
                  (ts_mode_t)(it % 4));
        roundtrip(&d, &v1);
        npacked += pack_check(&d, &v1, &packed);
        ps_arena_dispose(&a);
    }
    print_message("packed %d of 300 random chunks (the others kept V1: packing did not pay)\n", npacked);
    assert_true(npacked > 0 && npacked < 300);
    /* one profile, one node: a zstd frame costs more than the node section, V1 stays */
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d;
    gen_chunk(&a, &d, 1, 1, 1.0, VAL_SMALL, TS_REGULAR);
    roundtrip(&d, &v1);
    assert_int_equal(pack_check(&d, &v1, &packed), 0);
    /* realistic: 120 CPU profiles */
    gen_chunk(&a, &d, 120, 600, 0.3, VAL_CPU, TS_REGULAR);
    roundtrip(&d, &v1);
    assert_int_equal(pack_check(&d, &v1, &packed), 1);
    print_message("120 profiles x 600 nodes, 30%% present, CPU ns values: V1 %zu bytes, packed %zu\n", v1.len,
                  packed.len);
    /* not a V1 chunk */
    ps_err_t err;
    size_t before = packed.len;
    assert_int_equal(ps_chunk_pack(packed.data, packed.len, 3, &packed, &err), PS_EINVAL);
    assert_int_equal(packed.len, before);
    ps_arena_dispose(&a);
    ps_buf_dispose(&v1);
    ps_buf_dispose(&packed);
}

/* ---- references (PS_CHUNK_ENC_REF) ------------------------------------------------------ */

/** c with every value and total times f, into arrays of arena a (the twin's "cpu nanoseconds"). */
static void times(ps_arena_t *a, const ps_chunk_data_t *c, int64_t f, ps_chunk_data_t *out)
{
    *out = *c;
    uint32_t nnz = c->off[c->nnodes];
    out->val = ps_arena_alloc(a, (nnz + 1) * sizeof(int64_t));
    out->totals = ps_arena_alloc(a, c->n * sizeof(int64_t));
    for (uint32_t k = 0; k < nnz; k++)
        out->val[k] = c->val[k] * f;
    for (uint32_t i = 0; i < c->n; i++)
        out->totals[i] = c->totals[i] * f;
}

/** The reference ref to twin answers as the V1 chunk of d, through every reader. */
static void ref_check(const ps_chunk_data_t *d, const ps_buf_t *ref, const ps_buf_t *twin)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t got, meta;
    ps_err_t err;
    if (ps_chunk_decode_ref(ref->data, ref->len, twin->data, twin->len, &a, &got, &err) != 0)
        fail_msg("decode reference: %s", err.msg);
    assert_chunk_equal(d, &got);
    assert_int_equal(ps_chunk_decode_meta(ref->data, ref->len, &a, &meta, &err), 0);
    assert_meta_equal(d, &meta);
    static sums_t want, s;
    uint32_t ranges[][2] = {{0, d->n}, {d->n / 3, d->n - d->n / 4}, {d->n - 1, d->n + 5}};
    for (size_t i = 0; i < 3; i++) {
        naive_sums(d, ranges[i][0], ranges[i][1], &want);
        s.n = 0;
        s.sorted = 1;
        if (ps_chunk_sum_range_ref(ref->data, ref->len, twin->data, twin->len, ranges[i][0], ranges[i][1], on_node, &s,
                                   &err) != 0)
            fail_msg("sum_range reference: %s", err.msg);
        assert_true(s.sorted);
        assert_int_equal(s.n, want.n);
        assert_memory_equal(s.ids, want.ids, want.n * sizeof(uint64_t));
        assert_memory_equal(s.sums, want.sums, want.n * sizeof(int64_t));
    }
    ps_arena_dispose(&a);
}

/*
 * A chunk whose values are its twin's times a constant is stored as a reference (header, meta,
 * twin's series, scale, check) that decodes to its own values exactly, from a packed or a V1 twin
 * and in both directions; a value off by one, other timestamps or other profiles fall back (0,
 * nothing written).
 */
static void test_ref_twins(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t cnt, ns, off;
    ps_buf_t v1c = PS_BUF_INIT, v1n = PS_BUF_INIT, pc = PS_BUF_INIT, pn = PS_BUF_INIT, ref = PS_BUF_INIT,
             tmp = PS_BUF_INIT;
    ps_err_t err;
    for (int it = 0; it < 40; it++) {
        uint32_t n = it == 0 ? 120 : 1 + (uint32_t)rnd_below(200);
        uint32_t nnodes = it == 0 ? 600 : 1 + (uint32_t)rnd_below(300);
        gen_chunk(&a, &cnt, n, nnodes, it == 0 ? 0.3 : (double)rnd_below(101) / 100, VAL_SMALL, (ts_mode_t)(it % 3));
        times(&a, &cnt, 10000000, &ns); /* cpu nanoseconds at 100 Hz */
        roundtrip(&cnt, &v1c);
        roundtrip(&ns, &v1n);
        pack_check(&cnt, &v1c, &pc);
        pack_check(&ns, &v1n, &pn);
        uint64_t key = ps_chunk_twin_key(v1n.data, v1n.len);
        assert_true(key != 0);
        assert_int_equal(ps_chunk_twin_key(v1c.data, v1c.len), key);
        if (pc.data[0] == PS_CHUNK_ENC_ZSTD)
            assert_int_equal(ps_chunk_twin_key(pc.data, pc.len), 0); /* V1 only */
        /* ns refers to the packed count chunk, and to the V1 one */
        ps_buf_reset(&ref);
        int r = ps_chunk_refer(v1n.data, v1n.len, pc.data, pc.len, 42, &ref, &err);
        if (r == 0) { /* only where the reference is smaller than V1: tiny chunks */
            assert_int_equal(ref.len, 0);
            assert_true(v1n.len <= 23 + ps_get_be32(v1n.data + 19) + 8 + 10 + 8);
            continue;
        }
        assert_int_equal(r, 1);
        ps_chunk_header_t h;
        assert_int_equal(ps_chunk_header(ref.data, ref.len, &h), 0);
        assert_int_equal(h.encoding, PS_CHUNK_ENC_REF);
        assert_memory_equal(ref.data + 1, v1n.data + 1, 22 + ps_get_be32(v1n.data + 19)); /* header and meta */
        size_t tail = ref.len - 23 - ps_get_be32(v1n.data + 19); /* sid, scale (10^7 x the counts' gcd), check */
        assert_true(tail >= 8 + 4 + 8 && tail <= 8 + 6 + 8);
        assert_true(ref.len < v1n.len);
        uint64_t sid = 0;
        assert_int_equal(ps_chunk_ref_sid(ref.data, ref.len, &sid, &err), 1);
        assert_int_equal(sid, 42);
        assert_int_equal(ps_chunk_ref_sid(pc.data, pc.len, &sid, &err), 0);
        ref_check(&ns, &ref, &pc);
        ref_check(&ns, &ref, &v1c);
        /* the other way: the count chunk refers to the packed nanoseconds */
        ps_buf_reset(&tmp);
        if (ps_chunk_refer(v1c.data, v1c.len, pn.data, pn.len, 7, &tmp, &err) == 1)
            ref_check(&cnt, &tmp, &pn);
        /* no twin: a precise error, from every reader */
        ps_chunk_data_t got;
        char want[160];
        snprintf(want, sizeof(want), "chunk: the chunk of series 42 up to %lld it refers to is missing",
                 (long long)ns.ts[n - 1]);
        assert_int_equal(ps_chunk_decode(ref.data, ref.len, &a, &got, &err), PS_ECORRUPT);
        assert_string_equal(err.msg, want);
        sums_t *s = calloc(1, sizeof(sums_t));
        assert_int_equal(ps_chunk_sum_range(ref.data, ref.len, 0, n, on_node, s, &err), PS_ECORRUPT);
        assert_string_equal(err.msg, want);
        /* a twin of other values, the same profiles: the check fails */
        off = cnt;
        off.val = ps_arena_alloc(&a, (cnt.off[cnt.nnodes] + 1) * sizeof(int64_t));
        memcpy(off.val, cnt.val, cnt.off[cnt.nnodes] * sizeof(int64_t));
        off.val[cnt.off[cnt.nnodes] - 1] += off.val[cnt.off[cnt.nnodes] - 1] == -1 ? 2 : 1;
        roundtrip(&off, &tmp);
        snprintf(want, sizeof(want),
                 "the chunk of series 42 up to %lld it refers to: chunk: its node section does not match the "
                 "reference's check",
                 (long long)ns.ts[n - 1]);
        assert_int_equal(ps_chunk_decode_ref(ref.data, ref.len, tmp.data, tmp.len, &a, &got, &err), PS_ECORRUPT);
        assert_string_equal(err.msg, want);
        assert_int_equal(ps_chunk_sum_range_ref(ref.data, ref.len, tmp.data, tmp.len, 0, n, on_node, s, &err),
                         PS_ECORRUPT);
        assert_string_equal(err.msg, want);
        /* ... and at write time: no reference, nothing written */
        ps_buf_t none = PS_BUF_INIT;
        assert_int_equal(ps_chunk_refer(v1n.data, v1n.len, tmp.data, tmp.len, 42, &none, &err), 0);
        assert_int_equal(none.len, 0);
        /* a reference as the twin: refused */
        assert_int_equal(ps_chunk_decode_ref(ref.data, ref.len, ref.data, ref.len, &a, &got, &err), PS_ECORRUPT);
        assert_int_equal(ps_chunk_refer(v1n.data, v1n.len, ref.data, ref.len, 42, &none, &err), 0);
        /* a twin of other profiles (one more, other times): refused */
        if (n > 1) {
            ps_chunk_data_t other;
            gen_chunk(&a, &other, n + 1, 3, 0.5, VAL_SMALL, TS_REGULAR);
            roundtrip(&other, &tmp);
            assert_int_equal(ps_chunk_decode_ref(ref.data, ref.len, tmp.data, tmp.len, &a, &got, &err), PS_ECORRUPT);
            assert_non_null(strstr(err.msg, "not this chunk's"));
            assert_int_equal(ps_chunk_refer(v1n.data, v1n.len, tmp.data, tmp.len, 42, &none, &err), 0);
        }
        /* not a V1 chunk to refer from */
        /* a packed chunk refers as its V1 form does, to the same bytes */
        assert_int_equal(ps_chunk_refer(pn.data, pn.len, pc.data, pc.len, 42, &none, &err), ref.len < pn.len);
        if (ref.len < pn.len)
            assert_memory_equal(none.data, ref.data, ref.len);
        ps_buf_reset(&none);
        /* the value scales (the compactor keeps the larger whole); a reference has none of its own */
        uint64_t gc = 0, gn = 0;
        assert_int_equal(ps_chunk_value_scale(pc.data, pc.len, &gc, &err), 0);
        assert_int_equal(ps_chunk_value_scale(v1n.data, v1n.len, &gn, &err), 0);
        assert_int_equal(gn, gc * 10000000);
        assert_int_equal(ps_chunk_value_scale(ref.data, ref.len, &gn, &err), PS_ECORRUPT);
        /* a reference does not refer */
        assert_int_equal(ps_chunk_refer(ref.data, ref.len, pc.data, pc.len, 42, &none, &err), PS_EINVAL);
        assert_int_equal(none.len, 0);
        ps_buf_dispose(&none);
        free(s);
    }
    ps_arena_dispose(&a);
    ps_buf_dispose(&v1c);
    ps_buf_dispose(&v1n);
    ps_buf_dispose(&pc);
    ps_buf_dispose(&pn);
    ps_buf_dispose(&ref);
    ps_buf_dispose(&tmp);
}

/*
 * Damage to a reference or to its twin: every byte flipped and every length cut, one at a time,
 * never crashes; each reader either fails with PS_ECORRUPT or answers the original values (a flip
 * in the twin's own meta, which a reference does not read).
 */
static void test_ref_damaged(void **state)
{
    ps_arena_t a = PS_ARENA_INIT, da = PS_ARENA_INIT;
    ps_chunk_data_t cnt, ns, got;
    ps_buf_t v1c = PS_BUF_INIT, v1n = PS_BUF_INIT, pc = PS_BUF_INIT, ref = PS_BUF_INIT;
    ps_err_t err;
    gen_chunk(&a, &cnt, 30, 40, 0.5, VAL_SMALL, TS_REGULAR);
    times(&a, &cnt, 10000000, &ns);
    roundtrip(&cnt, &v1c);
    roundtrip(&ns, &v1n);
    assert_int_equal(pack_check(&cnt, &v1c, &pc), 1);
    assert_int_equal(ps_chunk_refer(v1n.data, v1n.len, pc.data, pc.len, 3, &ref, &err), 1);
    sums_t *s = calloc(1, sizeof(sums_t));
    for (int which = 0; which < 2; which++) {
        ps_buf_t *b = which == 0 ? &ref : &pc;
        for (size_t i = 0; i < b->len; i++) {
            for (int flip = 0; flip < 2; flip++) {
                uint8_t old = b->data[i];
                b->data[i] ^= flip ? 0xff : 0x01;
                ps_arena_reset(&da);
                int r = ps_chunk_decode_ref(ref.data, ref.len, pc.data, pc.len, &da, &got, &err);
                assert_true(r == 0 || r == PS_ECORRUPT);
                if (r == 0 && which == 1)
                    assert_chunk_equal(&ns, &got);
                s->n = 0;
                int rs = ps_chunk_sum_range_ref(ref.data, ref.len, pc.data, pc.len, 0, ns.n, on_node, s, &err);
                assert_true(rs == 0 || rs == PS_ECORRUPT);
                b->data[i] = old;
            }
        }
        for (size_t cut = 0; cut < b->len; cut++) {
            ps_arena_reset(&da);
            size_t rl = which == 0 ? cut : ref.len, tl = which == 1 ? cut : pc.len;
            assert_int_equal(ps_chunk_decode_ref(ref.data, rl, pc.data, tl, &da, &got, &err), PS_ECORRUPT);
            s->n = 0;
            assert_int_equal(ps_chunk_sum_range_ref(ref.data, rl, pc.data, tl, 0, ns.n, on_node, s, &err), PS_ECORRUPT);
        }
    }
    ps_arena_reset(&da);
    assert_int_equal(ps_chunk_decode_ref(ref.data, ref.len, pc.data, pc.len, &da, &got, &err), 0);
    assert_chunk_equal(&ns, &got);
    free(s);
    ps_arena_dispose(&a);
    ps_arena_dispose(&da);
    ps_buf_dispose(&v1c);
    ps_buf_dispose(&v1n);
    ps_buf_dispose(&pc);
    ps_buf_dispose(&ref);
}

/** The packed chunk of d (which must pack) in out; *at gets where its zstd frame starts. */
static void packed_of(ps_arena_t *a, ps_chunk_data_t *d, ps_buf_t *out, size_t *at)
{
    ps_buf_t v1 = PS_BUF_INIT;
    gen_chunk(a, d, 30, 40, 0.5, VAL_CPU, TS_REGULAR);
    roundtrip(d, &v1);
    assert_int_equal(pack_check(d, &v1, out), 1);
    *at = 23 + ps_get_be32(out->data + 19);
    ps_buf_dispose(&v1);
}

/** Damaged packed chunks: a precise PS_ECORRUPT from every reader, never a crash. */
static void test_packed_damaged(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d, got;
    ps_buf_t buf = PS_BUF_INIT, bad = PS_BUF_INIT;
    ps_err_t err;
    size_t at;
    static sums_t s;
    packed_of(&a, &d, &buf, &at);
#define EXPECT_CORRUPT(p, len, want)                                                                                   \
    do {                                                                                                               \
        assert_int_equal(ps_chunk_decode(p, len, &a, &got, &err), PS_ECORRUPT);                                      \
        assert_string_equal(err.msg, want);                                                                            \
        assert_int_equal(got.n, 0);                                                                                    \
        s.n = 0;                                                                                                       \
        assert_int_equal(ps_chunk_sum_range(p, len, 0, d.n, on_node, &s, &err), PS_ECORRUPT);                        \
        assert_string_equal(err.msg, want);                                                                            \
    } while (0)
    /* a byte after the frame */
    ps_buf_reset(&bad);
    ps_buf_append(&bad, buf.data, buf.len);
    ps_buf_putc(&bad, 0);
    EXPECT_CORRUPT(bad.data, bad.len, "chunk: packed node section: 1 trailing bytes after the zstd frame");
    /* the frame asks for a dictionary: Dictionary_ID_flag 1 in the frame header descriptor (after
     * the 4-byte magic number) and a one-byte id after the window descriptor, if any */
    ps_buf_reset(&bad);
    ps_buf_append(&bad, buf.data, buf.len);
    uint8_t *fhd = bad.data + at + 4;
    assert_int_equal(*fhd & 3, 0);
    size_t id_at = at + 5 + ((*fhd & 0x20) ? 0 : 1);
    *fhd |= 1;
    ps_buf_reserve(&bad, 1);
    memmove(bad.data + id_at + 1, bad.data + id_at, bad.len - id_at);
    bad.data[id_at] = 42;
    bad.len++;
    EXPECT_CORRUPT(bad.data, bad.len, "chunk: packed node section: zstd frame wants dictionary 42; packed chunks use none");
    /* the last byte of the checksum changed */
    ps_buf_reset(&bad);
    ps_buf_append(&bad, buf.data, buf.len);
    bad.data[bad.len - 1] ^= 0x5a;
    EXPECT_CORRUPT(bad.data, bad.len, "chunk: packed node section: zstd: Restored data doesn't match checksum");
    /* cut short */
    EXPECT_CORRUPT(buf.data, buf.len - 1,
                   "chunk: packed node section: zstd frame truncated or damaged: Src size is incorrect");
    EXPECT_CORRUPT(buf.data, at + 3, "chunk: packed node section: not a zstd frame (3 bytes)");
    EXPECT_CORRUPT(buf.data, at, "chunk: packed node section: not a zstd frame (0 bytes)");
    /* every truncation and every byte flip: PS_ECORRUPT naming the chunk, or (a flip in the header
     * or meta that leaves a valid chunk, or in frame bits zstd does not read) a valid chunk; never a
     * crash (ASan build). Node values never change unseen: zstd's checksum covers them. */
    int flips_ok = 0;
    for (size_t len = 0; len < buf.len; len++) {
        assert_int_equal(ps_chunk_decode(buf.data, len, &a, &got, &err), PS_ECORRUPT);
        assert_memory_equal(err.msg, "chunk: ", 7);
    }
    for (size_t i = 0; i < buf.len; i++) {
        for (int bit = 0; bit < 8; bit += 3) {
            buf.data[i] ^= (uint8_t)(1u << bit);
            int r = ps_chunk_decode(buf.data, buf.len, &a, &got, &err);
            if (r == 0) {
                flips_ok++;
                if (i >= at) /* in the frame: the same node section as before */
                    assert_chunk_equal(&d, &got);
            } else {
                assert_int_equal(r, PS_ECORRUPT);
                assert_memory_equal(err.msg, "chunk: ", 7);
            }
            s.n = 0;
            r = ps_chunk_sum_range(buf.data, buf.len, 0, d.n, on_node, &s, &err);
            assert_true(r == 0 || r == PS_ECORRUPT);
            buf.data[i] ^= (uint8_t)(1u << bit);
        }
    }
    print_message("packed chunk of %zu bytes: %d byte flips decoded (in header/meta), the others refused\n", buf.len,
                  flips_ok);
#undef EXPECT_CORRUPT
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
    ps_buf_dispose(&bad);
}

/** The cache of decompressed node sections: a repeated read is a hit with the same answer; a
 *  frame that differs anywhere, even in the same slot, is not served the cached content. */
static void test_packed_cache(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_chunk_data_t d, got;
    ps_buf_t buf = PS_BUF_INIT;
    ps_err_t err;
    size_t at;
    uint64_t hits, misses;
    static sums_t s;
    packed_of(&a, &d, &buf, &at); /* decodes it (pack_check): cached */
    ps_chunk_cache_clear();
    ps_chunk_cache_stats(&hits, &misses);
    assert_true(hits == 0 && misses == 0);
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), 0);
    assert_chunk_equal(&d, &got);
    check_sum_range(&d, &buf, 0, d.n);
    check_sum_range(&d, &buf, 3, 17);
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), 0);
    assert_chunk_equal(&d, &got);
    ps_chunk_cache_stats(&hits, &misses);
    assert_int_equal(misses, 1);
    assert_int_equal(hits, 3);
    /* a byte in the middle of the frame changed, its checksum bytes and length (the slot) kept */
    buf.data[at + (buf.len - at) / 2] ^= 0x21;
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), PS_ECORRUPT);
    assert_memory_equal(err.msg, "chunk: packed node section: ", 28);
    s.n = 0;
    assert_int_equal(ps_chunk_sum_range(buf.data, buf.len, 0, d.n, on_node, &s, &err), PS_ECORRUPT);
    ps_chunk_cache_stats(&hits, &misses);
    assert_int_equal(misses, 3);
    assert_int_equal(hits, 3);
    buf.data[at + (buf.len - at) / 2] ^= 0x21; /* back: still cached */
    assert_int_equal(ps_chunk_decode(buf.data, buf.len, &a, &got, &err), 0);
    assert_chunk_equal(&d, &got);
    ps_chunk_cache_stats(&hits, &misses);
    assert_int_equal(hits, 4);
    ps_chunk_cache_clear();
    ps_arena_dispose(&a);
    ps_buf_dispose(&buf);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_random), cmocka_unit_test(test_n1_and_max),
        cmocka_unit_test(test_edge_columns),     cmocka_unit_test(test_column_costs),
        cmocka_unit_test(test_encode_rejects),   cmocka_unit_test(test_header_meta),
        cmocka_unit_test(test_corrupt_messages), cmocka_unit_test(test_truncation),
        cmocka_unit_test(test_byte_flips),       cmocka_unit_test(test_size_realistic),
        cmocka_unit_test(test_packed_roundtrip), cmocka_unit_test(test_packed_damaged),
        cmocka_unit_test(test_packed_cache),     cmocka_unit_test(test_ref_twins),
        cmocka_unit_test(test_ref_damaged),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
