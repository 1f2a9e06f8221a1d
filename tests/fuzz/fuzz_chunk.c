/*
 * fuzz_chunk.c - libFuzzer target for the chunk decoder (storage/chunk.c).
 *
 * Arbitrary bytes go through ps_chunk_header, ps_chunk_decode_meta, ps_chunk_decode and
 * ps_chunk_sum_range; none may crash, and they must agree. A chunk that decodes must satisfy the
 * ps_chunk_data_t invariants, re-encode, decode again to the same data, re-encode to the same
 * bytes (the encoder is deterministic), pack (PS_CHUNK_ENC_ZSTD) and decode again to the same
 * data, and its sum_range must equal a naive sum. Packed inputs (encoding 8: a zstd frame after
 * the meta) go through the same checks: a damaged frame, wrong sizes, a dictionary id, trailing
 * bytes must give PS_ECORRUPT. The seeds include packed chunks.
 * References (encoding 9): an input that decodes is also the twin of the references made from it
 * (ps_chunk_refer from its own V1 bytes, and from those of its values times a factor), which must
 * decode through it to exactly those values; and every input is also read as a pair
 * <u16 BE length L> <reference, L bytes> <its twin, the rest>, which may decode or fail with
 * PS_ECORRUPT only, the _ref decoders agreeing. The seeds include such pairs.
 *
 * Build (clang):
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
 *     -I . tests/fuzz/fuzz_chunk.c storage/chunk.c core/[a-z]*.c -lzstd -lm -lpthread -o fuzz_chunk
 *   ./fuzz_chunk -max_len=4096 corpus/
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"
#include "storage/chunk.h"

#include "fuzzutil.h"

static void check_valid(const ps_chunk_data_t *d)
{
    CHECK(d->n >= 1 && d->n <= PS_CHUNK_MAX_PROFILES);
    for (uint32_t i = 1; i < d->n; i++)
        CHECK(d->ts[i] > d->ts[i - 1]);
    CHECK(d->off != NULL && d->off[0] == 0);
    for (uint32_t j = 0; j < d->nnodes; j++) {
        CHECK(j == 0 || d->node_ids[j] > d->node_ids[j - 1]);
        CHECK(d->off[j + 1] > d->off[j]);
        for (uint32_t k = d->off[j]; k < d->off[j + 1]; k++) {
            CHECK(d->idx[k] < d->n);
            CHECK(k == d->off[j] || d->idx[k] > d->idx[k - 1]);
            CHECK(d->val[k] != 0);
        }
    }
}

static int same_meta(const ps_chunk_data_t *a, const ps_chunk_data_t *b)
{
    size_t s = a->n * sizeof(int64_t);
    return a->n == b->n && !memcmp(a->ts, b->ts, s) && !memcmp(a->durations, b->durations, s) &&
           !memcmp(a->periods, b->periods, s) && !memcmp(a->totals, b->totals, s);
}

static int same(const ps_chunk_data_t *a, const ps_chunk_data_t *b)
{
    if (!same_meta(a, b) || a->nnodes != b->nnodes)
        return 0;
    uint32_t nnz = a->off[a->nnodes];
    return !memcmp(a->node_ids, b->node_ids, a->nnodes * sizeof(uint64_t)) &&
           !memcmp(a->off, b->off, (a->nnodes + 1) * sizeof(uint32_t)) &&
           !memcmp(a->idx, b->idx, nnz * sizeof(uint32_t)) && !memcmp(a->val, b->val, nnz * sizeof(int64_t));
}

typedef struct sums {
    const ps_chunk_data_t *d; /* NULL: only check the order */
    uint32_t from, to, j;
    uint64_t last_id;
    int any;
} sums_t;

/* Node j's values at profile indexes [from, to), summed exactly (ps_chunk_sum_range's rule: exact,
 * then clamped to int64, never wrapped). */
static __int128 exact_sum(const ps_chunk_data_t *d, uint32_t j, uint32_t from, uint32_t to)
{
    __int128 want = 0;
    for (uint32_t k = d->off[j]; k < d->off[j + 1]; k++)
        if (d->idx[k] >= from && d->idx[k] < to)
            want += d->val[k];
    return want;
}

static int64_t clamp(__int128 v)
{
    return v > INT64_MAX ? INT64_MAX : v < INT64_MIN ? INT64_MIN : (int64_t)v;
}

/** Checks each reported sum against the next node with a nonzero naive sum. */
static void on_node(void *ctx, uint64_t id, int64_t sum)
{
    sums_t *s = ctx;
    CHECK(sum != 0);
    CHECK(!s->any || id > s->last_id);
    s->any = 1;
    s->last_id = id;
    if (s->d == NULL)
        return;
    const ps_chunk_data_t *d = s->d;
    for (;; s->j++) {
        CHECK(s->j < d->nnodes);
        __int128 want = exact_sum(d, s->j, s->from, s->to);
        if (want != 0) {
            CHECK(d->node_ids[s->j] == id && clamp(want) == sum);
            s->j++;
            return;
        }
    }
}

/* d's values and totals times f into arena arrays (out), or 0 when one would overflow. */
static int times(ps_arena_t *a, const ps_chunk_data_t *d, int64_t f, ps_chunk_data_t *out)
{
    *out = *d;
    uint32_t nnz = d->off[d->nnodes];
    out->val = ps_arena_alloc(a, (nnz + 1) * sizeof(int64_t));
    out->totals = ps_arena_alloc(a, d->n * sizeof(int64_t));
    for (uint32_t k = 0; k < nnz; k++)
        if (__builtin_mul_overflow(d->val[k], f, &out->val[k]))
            return 0;
    for (uint32_t i = 0; i < d->n; i++)
        if (__builtin_mul_overflow(d->totals[i], f, &out->totals[i]))
            return 0;
    return 1;
}

/* The V1 chunk of want refers to twin (a chunk that decodes): when ps_chunk_refer makes the
 * reference, every reader gets want back from it. */
static void refer_check(ps_arena_t *a, const ps_chunk_data_t *want, const uint8_t *twin, size_t tlen)
{
    ps_buf_t v1 = PS_BUF_INIT, ref = PS_BUF_INIT;
    ps_err_t err;
    ps_chunk_data_t got;
    uint64_t sid = 0;
    CHECK(ps_chunk_encode(want, &v1, &err) == 0);
    int r = ps_chunk_refer(v1.data, v1.len, twin, tlen, 77, &ref, &err);
    CHECK(r == 0 || r == 1);
    if (r == 1) {
        CHECK(ref.len < v1.len && ref.data[0] == PS_CHUNK_ENC_REF);
        CHECK(ps_chunk_ref_sid(ref.data, ref.len, &sid, &err) == 1 && sid == 77);
        CHECK(ps_chunk_decode_ref(ref.data, ref.len, twin, tlen, a, &got, &err) == 0);
        CHECK(same(want, &got));
        CHECK(ps_chunk_decode(ref.data, ref.len, a, &got, &err) == PS_ECORRUPT); /* no twin */
        sums_t s = {want, 0, want->n, 0, 0, 0};
        CHECK(ps_chunk_sum_range_ref(ref.data, ref.len, twin, tlen, 0, want->n, on_node, &s, &err) == 0);
        for (; s.j < want->nnodes; s.j++)
            CHECK(exact_sum(want, s.j, 0, want->n) == 0);
    } else {
        CHECK(ref.len == 0);
    }
    ps_buf_dispose(&v1);
    ps_buf_dispose(&ref);
}

/* The input as a pair <u16 BE L> <reference> <twin>: decodes, or PS_ECORRUPT from every reader. */
static void pair_check(ps_arena_t *a, const uint8_t *data, size_t size)
{
    if (size < 2)
        return;
    size_t l = (size_t)data[0] << 8 | data[1];
    if (l > size - 2)
        return;
    const uint8_t *ref = data + 2, *twin = ref + l;
    size_t tlen = size - 2 - l;
    ps_err_t err;
    ps_chunk_data_t d;
    int r = ps_chunk_decode_ref(ref, l, twin, tlen, a, &d, &err);
    CHECK(r == 0 || (r == PS_ECORRUPT && err.code == PS_ECORRUPT && strncmp(err.msg, "chunk: ", 7) == 0) ||
          (r == PS_ECORRUPT && strncmp(err.msg, "the chunk of series ", 20) == 0));
    if (r == 0) {
        check_valid(&d);
        sums_t s = {&d, 0, d.n, 0, 0, 0};
        CHECK(ps_chunk_sum_range_ref(ref, l, twin, tlen, 0, d.n, on_node, &s, &err) == 0);
        for (; s.j < d.nnodes; s.j++)
            CHECK(exact_sum(&d, s.j, 0, d.n) == 0);
    } else {
        sums_t s = {NULL, 0, 70000, 0, 0, 0};
        int rs = ps_chunk_sum_range_ref(ref, l, twin, tlen, 0, 70000, on_node, &s, &err);
        CHECK(rs == 0 || rs == PS_ECORRUPT);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_chunk_header_t h;
    ps_chunk_data_t d, m, d2;
    ps_buf_t b1 = PS_BUF_INIT, b2 = PS_BUF_INIT;

    int rh = ps_chunk_header(data, size, &h);
    int rm = ps_chunk_decode_meta(data, size, &a, &m, &err);
    int r = ps_chunk_decode(data, size, &a, &d, &err);
    CHECK(rh == 0 || rh == PS_ECORRUPT);
    CHECK(rm == 0 || (rm == PS_ECORRUPT && err.code == PS_ECORRUPT));
    CHECK(rm != 0 || rh == 0); /* meta implies header */
    uint32_t from = size > 1 ? data[size - 1] : 0, to = size > 2 ? from + data[size - 2] * 4u : 70000;

    if (r == 0) {
        CHECK(rm == 0 && same_meta(&d, &m) && m.nnodes == 0);
        CHECK(h.n == d.n && h.min_ts == d.ts[0] && h.max_ts == d.ts[d.n - 1]);
        check_valid(&d);
        CHECK(ps_chunk_encode(&d, &b1, &err) == 0);
        CHECK(ps_chunk_decode(b1.data, b1.len, &a, &d2, &err) == 0);
        CHECK(same(&d, &d2));
        CHECK(ps_chunk_encode(&d2, &b2, &err) == 0);
        CHECK(b1.len == b2.len && memcmp(b1.data, b2.data, b1.len) == 0);
        ps_buf_reset(&b2); /* packed, it decodes to the same data */
        CHECK(ps_chunk_pack(b1.data, b1.len, 1, &b2, &err) == 0);
        CHECK(b2.len <= b1.len && (b2.data[0] == PS_CHUNK_ENC_ZSTD) == (b2.len < b1.len));
        CHECK(ps_chunk_decode(b2.data, b2.len, &a, &d2, &err) == 0);
        CHECK(same(&d, &d2));
        sums_t s = {&d, from, to < d.n ? to : d.n, 0, 0, 0};
        CHECK(ps_chunk_sum_range(data, size, from, to, on_node, &s, &err) == 0);
        for (; s.j < d.nnodes; s.j++) /* no nonzero sum left unreported */
            CHECK(exact_sum(&d, s.j, s.from, s.to) == 0);
        if (h.encoding != PS_CHUNK_ENC_REF) { /* the input as a twin: of its own values, and times f */
            refer_check(&a, &d, data, size);
            ps_chunk_data_t f;
            if (times(&a, &d, 1 + (int64_t)(size % 1000), &f))
                refer_check(&a, &f, data, size);
        }
    } else {
        CHECK(r == PS_ECORRUPT && err.code == PS_ECORRUPT && strncmp(err.msg, "chunk: ", 7) == 0);
        CHECK(d.n == 0 && d.ts == NULL && d.nnodes == 0);
        sums_t s = {NULL, from, to, 0, 0, 0};
        int rs = ps_chunk_sum_range(data, size, from, to, on_node, &s, &err);
        CHECK(rs == 0 || rs == PS_ECORRUPT);
    }
    pair_check(&a, data, size);
    ps_buf_dispose(&b1);
    ps_buf_dispose(&b2);
    ps_arena_dispose(&a);
    return 0;
}

/* With PS_FUZZ_CHUNK_SEEDS=DIR in the environment, writes a few valid chunks there as a seed
 * corpus (tests/fuzz/run.sh uses it): random shapes from the encoder itself. */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("PS_FUZZ_CHUNK_SEEDS");
    if (dir == NULL)
        return 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int s = 0; s < 24; s++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_chunk_data_t d = {0};
        ps_fuzz_lcg(&x);
        d.n = 1 + (uint32_t)(x >> 58);                 /* 1..64 profiles */
        uint32_t nn = 1 + (uint32_t)((x >> 40) % 20);    /* 1..20 nodes */
        d.ts = ps_arena_alloc(&a, d.n * 8);
        d.durations = ps_arena_alloc(&a, d.n * 8);
        d.periods = ps_arena_alloc(&a, d.n * 8);
        d.totals = ps_arena_calloc(&a, d.n, 8);
        for (uint32_t i = 0; i < d.n; i++) {
            d.ts[i] = 1700000000000000000ll + (int64_t)i * (s % 3 ? 10000000000ll : 9999999999ll + (i % 5));
            d.durations[i] = 10000000000ll;
            d.periods[i] = 10000000;
        }
        d.node_ids = ps_arena_alloc(&a, nn * 8);
        d.off = ps_arena_alloc(&a, (nn + 1) * 4);
        d.idx = ps_arena_alloc(&a, nn * d.n * 4);
        d.val = ps_arena_alloc(&a, nn * d.n * 8);
        uint32_t k = 0;
        for (uint32_t j = 0; j < nn; j++) {
            d.node_ids[j] = 1 + j * 3 + (uint64_t)s;
            d.off[j] = k;
            for (uint32_t i = 0; i < d.n; i++) {
                ps_fuzz_lcg(&x);
                if (i + 1 < d.n && (x >> 61) < (uint64_t)(s % 4)) /* some absent; last always present */
                    continue;
                d.idx[k] = i;
                d.val[k] = (int64_t)(1 + (x >> 60)) * (s % 2 ? 10000000 : 1);
                d.totals[i] += d.val[k];
                k++;
            }
        }
        d.off[nn] = k;
        d.nnodes = nn;
        ps_buf_t b = PS_BUF_INIT;
        ps_err_t err;
        ps_buf_t p = PS_BUF_INIT;
        if (ps_chunk_encode(&d, &b, &err) == 0) {
            ps_fuzz_write_seed(dir, "chunk", s, b.data, b.len);
            if (ps_chunk_pack(b.data, b.len, 3, &p, &err) == 0 && p.data[0] == PS_CHUNK_ENC_ZSTD)
                ps_fuzz_write_seed(dir, "packed", s, p.data, p.len);
            /* a pair: the reference of d's values times 7 to d's chunk (packed or V1), then it */
            ps_chunk_data_t f;
            ps_buf_t v7 = PS_BUF_INIT, ref = PS_BUF_INIT, pair = PS_BUF_INIT;
            const ps_buf_t *twin = p.len ? &p : &b;
            if (times(&a, &d, 7, &f) && ps_chunk_encode(&f, &v7, &err) == 0 &&
                ps_chunk_refer(v7.data, v7.len, twin->data, twin->len, 5, &ref, &err) == 1) {
                uint8_t l[2] = {(uint8_t)(ref.len >> 8), (uint8_t)ref.len};
                ps_buf_append(&pair, l, 2);
                ps_buf_append(&pair, ref.data, ref.len);
                ps_buf_append(&pair, twin->data, twin->len);
                ps_fuzz_write_seed(dir, "ref", s, pair.data, pair.len);
            }
            ps_buf_dispose(&v7);
            ps_buf_dispose(&ref);
            ps_buf_dispose(&pair);
        }
        ps_buf_dispose(&b);
        ps_buf_dispose(&p);
        ps_arena_dispose(&a);
    }
    return 0;
}
