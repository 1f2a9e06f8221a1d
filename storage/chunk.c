/*
 * chunk.c - the chunk encoding PS_CHUNK_ENC_V1: a run of 1..65535 profiles of one series,
 * stored column by column, its packed form PS_CHUNK_ENC_ZSTD and references PS_CHUNK_ENC_REF (at
 * the end). This comment is the specification; docs/FORMAT.md repeats it.
 *
 * CHUNK
 * ┌───────────────────┬───────────────────────────┬───────────────────────────┐
 * │ header <23 bytes> │ meta <meta_len bytes>     │ nodes <to the end>        │
 * └───────────────────┴───────────────────────────┴───────────────────────────┘
 * The header is fixed-size, so ps_chunk_header() is O(1); meta_len lets ps_chunk_decode_meta()
 * (timestamps, durations, periods, totals) and ps_chunk_sum_range() (nodes only) skip what they
 * do not need. A chunk is exactly this long: no trailing bytes.
 *
 * HEADER (all big-endian, signed values two's complement)
 * ┌───────────────┬────────────┬─────────────────┬─────────────────┬─────────────────────┐
 * │ encoding <u8> │ n <u16 BE> │ min_ts <i64 BE> │ max_ts <i64 BE> │ meta_len <u32 BE>   │
 * └───────────────┴────────────┴─────────────────┴─────────────────┴─────────────────────┘
 *   encoding  1 = PS_CHUNK_ENC_V1. Encoding ids are fixed forever; a new layout gets a new id.
 *   n         number of profiles, 1..65535.
 *   min_ts    timestamp (ns since the epoch) of profile 0; max_ts that of profile n-1.
 *             min_ts < max_ts, or min_ts == max_ts when n == 1.
 *   meta_len  byte length of the meta section (>= 6).
 *
 * META
 * ┌──────────────────┬─────────────────┬───────────────┬────────────────────────┐
 * │ timestamps <ops> │ durations <rle> │ periods <rle> │ totals_scale <uvarint> │
 * ├──────────────────┴─────────────────┴───────────────┴────────────────────────┤
 * │ totals <column>                                                             │
 * └─────────────────────────────────────────────────────────────────────────────┘
 *   timestamps  profiles 1..n-1 as delta of delta: the stream tracks the interval I (starting
 *               at 0) and the timestamp t (starting at min_ts); every profile gets t += I, after
 *               the op has set I. Strictly increasing, no int64 overflow, the last one == max_ts.
 *               Empty when n == 1. Ops (uvarints, told apart by their low bits):
 *                 xxxxxxx0   literal: I += unzigzag(v >> 1); one profile
 *                 00000001   long literal: I += unzigzag(next uvarint); one profile (|dod| >= 2^62)
 *                 xxxxxx01   k = v >> 2 >= 1 profiles at the same interval (runs of dod == 0)
 *                 00000011   the same interval up to profile n-1
 *               Regular 10 s scrapes cost 7 bytes per chunk: a literal 10 s and 0x03.
 *   durations   duration of each profile (ns): runs of <value zigzag varint> <run length uvarint
 *               >= 1>, run lengths summing to n.
 *   periods     the pprof period of each profile, runs as for durations.
 *   totals_scale, totals
 *               the sum of each profile's values, as a column (below) over profiles 0..n-1 whose
 *               values are totals / totals_scale; profiles with total 0 are absent from it, and a
 *               column length of 0 means every total is 0. totals_scale (1..2^63-1) is the gcd of
 *               the nonzero totals.
 *
 * NODES
 * ┌──────────────────┬───────────────┬─────────────────┬───────────────────────┐
 * │ nnodes <uvarint> │ nnz <uvarint> │ scale <uvarint> │ ids <nnodes uvarints> │
 * ├──────────────────┴┬─────┬────────┴─────────────────┴───────────────────────┤
 * │ column 0 <column> │ ... │ column nnodes-1 <column>                         │
 * └───────────────────┴─────┴──────────────────────────────────────────────────┘
 *   nnodes  number of nodes (stack tree node ids) with a value in some profile of the chunk.
 *   nnz     number of (node, profile) values, nnodes <= nnz <= nnodes * n; the decoder sizes
 *           its arrays from it, after checking it against nnodes and n, and nnodes against the
 *           bytes left (a node takes >= 4 bytes).
 *   scale   1..2^63-1: every value is stored divided by it, the gcd of all values (CPU time
 *           sampled at 100 Hz: 10,000,000 ns, so values shrink to small sample counts).
 *   ids     ascending node ids: the first as is, then the gaps (>= 1) to the previous one.
 *   column j  the values of node ids[j], in the column format below.
 *
 * COLUMN (a node's values, or the totals)
 * ┌───────────────┬────────────────────────┬──────────────────────────────┐
 * │ len <uvarint> │ first <uvarint>        │ ops <len - size(first) bytes>│
 * └───────────────┴────────────────────────┴──────────────────────────────┘
 *   len     byte length of first + ops, so a reader can skip the column (sum_range stops
 *           decoding a column at the end of its range and jumps to the next).
 *   first   profile index of the column's first value (< n): a node that appears late starts
 *           there.
 *   ops     the values at profile indexes first, first+1, ... up to the column's last value.
 *           The stream tracks the current profile index p (starting at first), the previous
 *           value V (starting at 0: the first literal is the value itself) and the last literal
 *           delta D (starting at 0). Deltas and values wrap modulo 2^64 (unsigned arithmetic),
 *           and a stored value is V * scale, which must be nonzero and fit in int64.
 *             xxxxxxx0  literal: D = unzigzag(v >> 1); V += D; value V at p++
 *             00000001  long literal: D = unzigzag(next uvarint); V += D; value V at p++
 *             xxxxx001  k = v >> 3 >= 1 values: k times { V += D; value V at p++ }   (equal deltas)
 *             xxxxx101  k = v >> 3 >= 1 values: k times { value V at p++ }          (equal values)
 *             00000101  value V at p++ until p == n                                (constant tail)
 *             00000011  V += D; value V at p++, until p == n                       (linear tail)
 *             xxxxxx11  k = v >> 2 >= 1 absent profiles (zero run): p += k; a value must follow
 *           A column has at least one value, ends with a value (never a zero run), has no two
 *           zero runs in a row, and never runs past profile n-1. One-byte ops hold literals
 *           -32..31, runs up to 15 (equal values/deltas) or 31 (zero runs).
 *   A node present in 1 profile of 120 costs 4 bytes (id gap, len, first, literal) and a
 *   constant one 5 bytes (id gap, len, first, literal, 0x05), given a small scaled value.
 *
 * EXAMPLE: 3 profiles at 10 s intervals from 2023-11-14T22:13:20Z, 10 s long, period 10 ms;
 * node 1 = 30 ms in every profile, node 5 = 10 ms in profile 1 only, node 6 = 20 ms, absent,
 * 40 ms. Totals 50, 40, 70 ms. 71 bytes:
 *
 *   01                        encoding 1
 *   00 03                     n = 3
 *   17 97 9c fe 36 2a 00 00   min_ts = 1700000000000000000
 *   17 97 9d 02 de 41 c8 00   max_ts = 1700000020000000000
 *   00 00 00 1b               meta_len = 27
 *   -- meta --
 *   80 a0 be 81 95 01         timestamps: literal, zigzag(10e9) << 1 = 4e10: I = 10 s, profile 1
 *   03                        same interval to the end: profile 2
 *   80 90 df c0 4a 03         durations: zigzag(10e9), run of 3
 *   80 da c4 09 03            periods: zigzag(10e6), run of 3
 *   80 ad e2 04               totals_scale = 10,000,000
 *   04 00                     totals column: len 4, first index 0
 *   14 02 0c                  literals +5, -1, +3: totals 5, 4, 7 (x scale)
 *   -- nodes --
 *   03 06                     nnodes = 3, nnz = 6
 *   80 ad e2 04               scale = 10,000,000
 *   01 04 01                  ids 1, 1+4 = 5, 5+1 = 6
 *   03 00 0c 05               node 1: len 3, first 0, literal +3 (30 ms), same value to the end
 *   02 01 04                  node 5: len 2, first 1, literal +1 (10 ms)
 *   04 00 08 07 03            node 6: len 4, first 0, literal +2 (20 ms), zero run of 1,
 *                             last delta (+2) to the end: 4 (40 ms) at profile 2
 *
 * Decoding validates every byte (ps_dec_t bounds, counts against n and the bytes left, profile
 * indexes, ascending ids and timestamps, no zero values, no overflow after scaling) and fails
 * with PS_ECORRUPT and a message naming the field. ps_chunk_sum_range() validates the header and
 * the node bytes it reads, but neither the meta section nor the ops past the end of the range:
 * run ps_chunk_decode() on chunks from outside. Sums are exact, then clamped to int64 (never wrapped).
 *
 * PACKED (PS_CHUNK_ENC_ZSTD = 8, schema 7): the compactor stores closed chunks packed
 * ┌──────────────────────────────────────┬───────────────────────┬──────────────────────────────┐
 * │ header <23 bytes>, encoding 8        │ meta <meta_len bytes> │ zstd frame <to the end>      │
 * └──────────────────────────────────────┴───────────────────────┴──────────────────────────────┘
 *   The header and meta are a V1 chunk's, byte for byte but the encoding (so ps_chunk_header()
 *   and ps_chunk_decode_meta() read them in place, without decompressing); the node section is
 *   one zstd frame (RFC 8878) of the V1 node section: its content size stated in the frame
 *   header, its content checksum on, no dictionary. The V1 node section it holds is at most
 *   PS_CHUNK_MAX_NODE_BYTES (64 MiB) and at most PS_CHUNK_MAX_EXPANSION (1024) times the frame's
 *   bytes; the frame ends the chunk. A reader checks all of that before it allocates, then
 *   decompresses and reads the node section as V1's. ps_chunk_pack() keeps the V1 chunk when
 *   packing would not make it smaller (a few profiles) or would break a limit: both encodings
 *   live side by side in `chunks`. Encoding ids 2..7 are the float chunks' (docs/FORMAT.md) and
 *   are not used here.
 *   Why zstd over the node section alone: the ops are already delta/run coded, so what is left
 *   is entropy (small literals, repeated id gaps and column shapes across nodes); a dictionary
 *   trained per series on its first 12 chunks saved about 3% more on bench_storage's profiles,
 *   not worth a dictionary's storage and lookup.
 *
 * REFERENCE (PS_CHUNK_ENC_REF = 9, schema 9): a chunk whose node section is a twin's
 * ┌───────────────────────────────┬───────────────────────┬──────────────┬─────────────────┬────────────────┐
 * │ header <23 bytes>, encoding 9 │ meta <meta_len bytes> │ sid <u64 BE> │ scale <uvarint> │ check <u64 BE> │
 * └───────────────────────────────┴───────────────────────┴──────────────┴─────────────────┴────────────────┘
 *   A series whose values are another's times a constant (a CPU profile's cpu/nanoseconds are its
 *   samples/count times the period: the same values once divided by their gcd, the scale) stores
 *   its chunk as a reference to the other's. The header and meta are its own V1 chunk's, byte for
 *   byte but the encoding (its own timestamps, durations, periods and totals). Its node section is
 *   that of its twin, the chunk of series sid stored under the same max_ts (encoding 1 or 8, never
 *   9; the same n, min_ts and max_ts), with scale (1..2^63-1) in place of the twin's value scale.
 *   check is ps_hash64 (core/hash.h) of the twin's header bytes 1..18 (n, min_ts, max_ts; seed
 *   0x706b7265663900), then, seeded with that, of its node section's nnodes and nnz, then, seeded
 *   with that, of its ids and columns: the node section but the scale, the plain one of a packed
 *   twin. The reference ends the chunk.
 *   Exact by construction: the compactor (ps_chunk_refer()) refers only when the twin's node
 *   section equals the chunk's own node section byte for byte but the scale, so a reference
 *   decodes to the values of the V1 chunk it stands for; otherwise (values not an exact multiple,
 *   a stack present in one type only) the chunk is packed as before. Twins are looked for among
 *   the chunks the same compaction transaction wrote before (both series of a profile come due in
 *   the same write, and a background transaction that takes 256 series takes up to 7 consecutive
 *   ids more, so that the types of one profile are not cut apart); of two, the one of the larger
 *   value scale stays whole (a CPU profile's
 *   nanoseconds, the type queried by default, read without a second lookup) unless a reference
 *   points at the other already. A chunk and its twin share their key time, so retention, which
 *   drops chunks by key time, drops both in the same pass. A reference whose twin is missing,
 *   damaged, of other profiles or not the one it was made from (check) fails with PS_ECORRUPT
 *   naming the twin's series and time, as a damaged chunk does; the _ref decoders take the twin's
 *   bytes. Why a reference, not zstd with the twin as dictionary: both depend on the twin alike,
 *   but a reference is exact by a byte comparison, costs ~40 bytes a chunk (the dictionary left
 *   ~65 bytes a profile) and nothing to read the twin, and its own reads one lookup more.
 */
#include "storage/chunk.h"

#include <limits.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zstd.h>

#include "core/hash.h"
#include "core/sat.h"
#include "core/varint.h"

#define HDR_SIZE 23 /* encoding 1 + n 2 + min_ts 8 + max_ts 8 + meta_len 4 */

/* Ops: a uvarint v whose low bits say what it is (see the tables above). */
enum {
    OP_LIT = 0,  /* xxxxxxx0: literal, zigzag payload v >> 1 */
    OP_DRUN = 1, /* xxxxx001: k = v >> 3 repeats of the last delta; k = 0: OP_LONG */
    OP_VRUN = 5, /* xxxxx101: k = v >> 3 repeats of the last value; k = 0: OP_VEND */
    OP_ZERO = 3, /* xxxxxx11: k = v >> 2 absent profiles; k = 0: OP_DEND */
};
#define OP_LONG 0x01 /* long literal: a uvarint zigzag delta follows */
#define OP_VEND 0x05 /* last value repeated to the end of the chunk */
#define OP_DEND 0x03 /* last delta repeated to the end of the chunk */
#define TS_RUN 1     /* timestamps: xxxxxx01: k = v >> 2 intervals equal to the last; k = 0: OP_LONG */
#define TS_END 0x03  /* timestamps: the last interval repeated to the end */

#define CORRUPT(...) ps_err_set(err, PS_ECORRUPT, "chunk: " __VA_ARGS__)
#define INVALID(...) ps_err_set(err, PS_EINVAL, "chunk: " __VA_ARGS__)

static int ref_nodes(const uint8_t *p, size_t len, const ps_chunk_header_t *h, uint32_t meta_len,
                     const uint8_t *ref, size_t refn, ps_arena_t *a, uint8_t **heap, ps_dec_t *nodes, int64_t *scale,
                     ps_err_t *err);

/* ---- writing ---------------------------------------------------------------------------- */

static inline uint8_t *put_uv(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}

static inline unsigned uv_len(uint64_t v)
{
    unsigned n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/** A literal (wrapping) delta: xxxxxxx0 if its zigzag fits in 63 bits, else 0x01 + uvarint. <= 11 bytes. */
static inline uint8_t *put_lit(uint8_t *p, uint64_t delta)
{
    uint64_t zz = ps_zigzag((int64_t)delta);
    if (zz >> 63) {
        *p++ = OP_LONG;
        return put_uv(p, zz);
    }
    return put_uv(p, zz << 1 | OP_LIT);
}

/* Values are stored divided by a scale g, the gcd of their magnitudes (CPU nanoseconds sampled at
 * 100 Hz are all multiples of 10^7). The encoder divides exactly: shift out the power of two, then
 * multiply by the inverse of the odd part modulo 2^64 -- no division instruction per value. */
typedef struct scale {
    uint64_t g, inv, lim; /* lim: UINT64_MAX / odd part, for the divisibility test */
    unsigned t;           /* trailing zero bits of g */
} scale_t;

static void scale_set(scale_t *s, uint64_t g)
{
    s->g = g;
    s->t = (unsigned)__builtin_ctzll(g);
    uint64_t odd = g >> s->t, x = odd; /* Newton: each step doubles the correct low bits (3 -> 96) */
    for (int i = 0; i < 5; i++)
        x *= 2 - odd * x;
    s->inv = x;
    s->lim = UINT64_MAX / odd;
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b != 0) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/** Folds a nonzero value into the running gcd (s->g == 0: none yet). */
static inline void scale_add(scale_t *s, int64_t v)
{
    uint64_t a = v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
    if (s->g == 1)
        return;
    if (s->g == 0) {
        scale_set(s, a);
        return;
    }
    uint64_t low = s->t == 0 ? 0 : (a & (UINT64_MAX >> (64 - s->t)));
    if (low != 0 || (a >> s->t) * s->inv > s->lim)
        scale_set(s, gcd64(s->g, a));
}

static void scale_finish(scale_t *s)
{
    uint64_t g = s->g;
    if (g == 0)
        g = 1; /* no values */
    else if (g > INT64_MAX)
        g >>= 1; /* only INT64_MIN values: 2^63 does not fit the decoder's int64 scale */
    scale_set(s, g);
}

static inline uint64_t scale_div(const scale_t *s, int64_t v)
{
    if (s->g == 1)
        return (uint64_t)v;
    uint64_t u = (uint64_t)v >> s->t;
    if (v < 0 && s->t != 0)
        u |= ~(UINT64_MAX >> s->t); /* sign-extend */
    return u * s->inv;
}

static void put_rle(ps_buf_t *out, const int64_t *v, uint32_t n)
{
    for (uint32_t i = 0; i < n;) {
        uint32_t j = i + 1;
        while (j < n && v[j] == v[i])
            j++;
        ps_put_varint(out, v[i]);
        ps_put_uvarint(out, j - i);
        i = j;
    }
}

static void put_timestamps(ps_buf_t *out, const int64_t *ts, uint32_t n)
{
    uint8_t *base = ps_buf_reserve(out, (size_t)n * 11), *p = base;
    uint64_t last = 0, run = 0;
    for (uint32_t i = 1; i < n; i++) {
        uint64_t delta = (uint64_t)ts[i] - (uint64_t)ts[i - 1];
        if (delta == last) {
            run++;
            continue;
        }
        if (run != 0) {
            p = put_uv(p, run << 2 | TS_RUN);
            run = 0;
        }
        p = put_lit(p, delta - last); /* delta of delta */
        last = delta;
    }
    if (run != 0)
        *p++ = TS_END;
    out->len += (size_t)(p - base);
}

/**
 * Appends <length uvarint> <first index uvarint> <ops> for a column of m values: sparse
 * (profile indexes idx[], values val[], all nonzero, m >= 1) or, with idx NULL, dense (val[0..m),
 * zeros are absent profiles; all zeros give just the length 0).
 */
static void put_column(ps_buf_t *out, const uint32_t *idx, const int64_t *val, uint32_t m, uint32_t n,
                       const scale_t *g)
{
    /* worst case per value: a pending run (3), a zero run (3) and a long literal (11) */
    uint8_t *base = ps_buf_reserve(out, 6 + (size_t)m * 17), *p = base + 1;
    uint32_t i = 0;
    if (idx == NULL) {
        while (i < m && val[i] == 0)
            i++;
        if (i == m) {
            *base = 0;
            out->len++;
            return;
        }
    }
    uint32_t pos = idx ? idx[0] : i;
    p = put_uv(p, pos);
    uint64_t prev = 0, last = 0, run = 0;
    unsigned run_op = OP_VRUN;
    for (; i < m; i++) {
        if (idx == NULL && val[i] == 0)
            continue;
        uint32_t at = idx ? idx[i] : i;
        uint64_t s = scale_div(g, val[i]), delta = s - prev;
        unsigned op = delta == 0 ? OP_VRUN : delta == last ? OP_DRUN : OP_LIT;
        if (run != 0 && (at != pos || op != run_op)) {
            p = put_uv(p, run << 3 | run_op);
            run = 0;
        }
        if (at != pos)
            p = put_uv(p, (uint64_t)(at - pos) << 2 | OP_ZERO);
        if (op == OP_LIT) {
            p = put_lit(p, delta);
            last = delta;
        } else {
            run_op = op;
            run++;
        }
        prev = s;
        pos = at + 1;
    }
    if (run != 0 && pos == n)
        *p++ = run_op == OP_VRUN ? OP_VEND : OP_DEND;
    else if (run != 0)
        p = put_uv(p, run << 3 | run_op);
    size_t len = (size_t)(p - (base + 1));
    unsigned lb = uv_len(len);
    if (lb > 1)
        memmove(base + lb, base + 1, len);
    put_uv(base, len);
    out->len += lb + len;
}

static int validate(const ps_chunk_data_t *d, scale_t *vs, scale_t *ts, ps_err_t *err)
{
    if (d->n == 0)
        return INVALID("no profiles");
    if (d->n > PS_CHUNK_MAX_PROFILES)
        return ps_err_set(err, PS_ETOOBIG, "chunk: %u profiles, more than %u", d->n, PS_CHUNK_MAX_PROFILES);
    ts->g = 0;
    for (uint32_t i = 0; i < d->n; i++) {
        if (i > 0 && d->ts[i] <= d->ts[i - 1])
            return INVALID("timestamp %u (%lld) not after timestamp %u (%lld)", i, (long long)d->ts[i], i - 1,
                           (long long)d->ts[i - 1]);
        if (d->totals[i] != 0)
            scale_add(ts, d->totals[i]);
    }
    scale_finish(ts);
    vs->g = 0;
    if (d->nnodes > 0 && d->off[0] != 0)
        return INVALID("off[0] = %u, not 0", d->off[0]);
    for (uint32_t j = 0; j < d->nnodes; j++) {
        if (j > 0 && d->node_ids[j] <= d->node_ids[j - 1])
            return INVALID("node ids not ascending at node %u (id %llu after %llu)", j,
                           (unsigned long long)d->node_ids[j], (unsigned long long)d->node_ids[j - 1]);
        uint32_t a = d->off[j], b = d->off[j + 1];
        if (b <= a)
            return INVALID("node %u (id %llu) has no values (off %u..%u)", j, (unsigned long long)d->node_ids[j], a, b);
        for (uint32_t k = a; k < b; k++) {
            if (d->idx[k] >= d->n || (k > a && d->idx[k] <= d->idx[k - 1]))
                return INVALID("node %u (id %llu): profile index %u out of order or >= n=%u", j,
                               (unsigned long long)d->node_ids[j], d->idx[k], d->n);
            if (d->val[k] == 0)
                return INVALID("node %u (id %llu): zero value at profile %u", j, (unsigned long long)d->node_ids[j],
                               d->idx[k]);
            scale_add(vs, d->val[k]);
        }
    }
    scale_finish(vs);
    return 0;
}

int ps_chunk_encode(const ps_chunk_data_t *d, ps_buf_t *out, ps_err_t *err)
{
    scale_t vs, ts;
    int r = validate(d, &vs, &ts, err);
    if (r != 0)
        return r;
    uint32_t n = d->n;

    /* header */
    uint8_t *h = ps_buf_reserve(out, HDR_SIZE);
    h[0] = PS_CHUNK_ENC_V1;
    h[1] = (uint8_t)(n >> 8);
    h[2] = (uint8_t)n;
    ps_enc_be64(h + 3, (uint64_t)d->ts[0]);
    ps_enc_be64(h + 11, (uint64_t)d->ts[n - 1]);
    size_t meta_at = out->len + 19;
    out->len += HDR_SIZE;

    /* meta */
    size_t meta_start = out->len;
    put_timestamps(out, d->ts, n);
    put_rle(out, d->durations, n);
    put_rle(out, d->periods, n);
    ps_put_uvarint(out, ts.g);
    put_column(out, NULL, d->totals, n, n, &ts);
    uint32_t meta_len = (uint32_t)(out->len - meta_start);
    for (int i = 0; i < 4; i++)
        out->data[meta_at + i] = (uint8_t)(meta_len >> (24 - 8 * i));

    /* nodes */
    ps_put_uvarint(out, d->nnodes);
    ps_put_uvarint(out, d->nnodes ? d->off[d->nnodes] : 0);
    ps_put_uvarint(out, vs.g);
    uint8_t *base = ps_buf_reserve(out, (size_t)d->nnodes * 10), *p = base;
    for (uint32_t j = 0; j < d->nnodes; j++)
        p = put_uv(p, d->node_ids[j] - (j ? d->node_ids[j - 1] : 0));
    out->len += (size_t)(p - base);
    for (uint32_t j = 0; j < d->nnodes; j++) {
        uint32_t a = d->off[j];
        put_column(out, d->idx + a, d->val + a, d->off[j + 1] - a, n, &vs);
    }
    return 0;
}

/* ---- reading ---------------------------------------------------------------------------- */

static int read_header(const uint8_t *p, size_t len, ps_chunk_header_t *h, uint32_t *meta_len, ps_err_t *err)
{
    if (len < HDR_SIZE)
        return CORRUPT("%zu bytes, shorter than the %d-byte header", len, HDR_SIZE);
    if (p[0] != PS_CHUNK_ENC_V1 && p[0] != PS_CHUNK_ENC_ZSTD && p[0] != PS_CHUNK_ENC_REF)
        return CORRUPT("unknown encoding %u", p[0]);
    h->encoding = p[0];
    h->n = (uint32_t)p[1] << 8 | p[2];
    h->min_ts = (int64_t)ps_get_be64(p + 3);
    h->max_ts = (int64_t)ps_get_be64(p + 11);
    *meta_len = ps_get_be32(p + 19);
    if (h->n == 0)
        return CORRUPT("n = 0 profiles");
    if (h->n == 1 ? h->min_ts != h->max_ts : h->min_ts >= h->max_ts)
        return CORRUPT("min_ts %lld, max_ts %lld inconsistent with n=%u", (long long)h->min_ts,
                       (long long)h->max_ts, h->n);
    if (*meta_len > len - HDR_SIZE)
        return CORRUPT("meta_len %u runs past the end (%zu bytes left)", *meta_len, len - HDR_SIZE);
    if (*meta_len < 6) /* durations 2, periods 2, totals scale 1, totals length 1 */
        return CORRUPT("meta_len %u too short", *meta_len);
    return 0;
}

int ps_chunk_header(const void *p, size_t n, ps_chunk_header_t *h)
{
    uint32_t meta_len;
    return read_header(p, n, h, &meta_len, NULL);
}

/* ---- packed chunks (PS_CHUNK_ENC_ZSTD) -------------------------------------------------- */

/* One decompression context per thread (queries decode on several), freed when the thread ends. */
static pthread_key_t dctx_key;
static pthread_once_t dctx_once = PTHREAD_ONCE_INIT;

static void dctx_free(void *c) { ZSTD_freeDCtx(c); }
static void dctx_key_init(void) { pthread_key_create(&dctx_key, dctx_free); }

static ZSTD_DCtx *thread_dctx(void)
{
    pthread_once(&dctx_once, dctx_key_init);
    ZSTD_DCtx *c = pthread_getspecific(dctx_key);
    if (c == NULL) {
        c = ZSTD_createDCtx();
        if (c == NULL)
            abort(); /* out of memory, as ps_xmalloc */
        pthread_setspecific(dctx_key, c);
    }
    return c;
}

int ps_chunk_pack(const void *v1, size_t n, int level, ps_buf_t *out, ps_err_t *err)
{
    const uint8_t *p = v1;
    ps_chunk_header_t h;
    uint32_t meta_len;
    if (read_header(p, n, &h, &meta_len, NULL) != 0 || p[0] != PS_CHUNK_ENC_V1)
        return INVALID("pack: not a V1 chunk (%zu bytes)", n);
    size_t at = HDR_SIZE + (size_t)meta_len, raw = n - at;
    if (raw == 0 || raw > PS_CHUNK_MAX_NODE_BYTES)
        goto Keep;
    size_t start = out->len, cap = ZSTD_compressBound(raw);
    uint8_t *o = ps_buf_reserve(out, at + cap);
    ZSTD_CCtx *c = ZSTD_createCCtx();
    if (c == NULL)
        abort();
    size_t zn = ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_compressionLevel, level)) ||
                        ZSTD_isError(ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1))
                    ? (size_t)-1
                    : ZSTD_compress2(c, o + at, cap, p + at, raw);
    ZSTD_freeCCtx(c);
    if (ZSTD_isError(zn) || zn >= raw || raw > zn * (size_t)PS_CHUNK_MAX_EXPANSION) {
        out->len = start;
        goto Keep;
    }
    memcpy(o, p, at);
    o[0] = PS_CHUNK_ENC_ZSTD;
    out->len += at + zn;
    return 0;
Keep:
    memcpy(ps_buf_reserve(out, n), p, n);
    out->len += n;
    return 0;
}

/*
 * The node sections merges decompressed last: a direct-mapped table of CACHE_SLOTS entries, each
 * a copy of a frame and of what it decompressed to, under one mutex. A frame's slot comes from
 * its last 4 bytes (its content checksum) and its length; a hit is a frame equal byte for byte to
 * the cached one, so a damaged or different chunk is never served another's content. A new frame
 * takes its slot's place. At most CACHE_SLOTS * (frame + node section) bytes: ~12 MiB of 120
 * profile CPU chunks (45 KB each), 72 of them a 24 h series at 10 s. Repeated merges (a
 * dashboard's refresh) copy instead of decompressing: ~3 us instead of ~35 us a chunk.
 */
#define CACHE_SLOTS 256
#define CACHE_MAX_ENTRY (1u << 20) /* frames + node sections larger than this are not cached */

typedef struct cache_entry {
    uint8_t *z, *raw; /* one allocation: the frame, then the node section */
    size_t zlen, rawlen;
} cache_entry_t;

static pthread_mutex_t cache_mu = PTHREAD_MUTEX_INITIALIZER;
static cache_entry_t cache[CACHE_SLOTS];
static uint64_t cache_hits, cache_misses;

static cache_entry_t *cache_slot(const uint8_t *z, size_t zlen)
{
    uint32_t tail = (uint32_t)z[zlen - 4] | (uint32_t)z[zlen - 3] << 8 | (uint32_t)z[zlen - 2] << 16 |
                    (uint32_t)z[zlen - 1] << 24;
    return &cache[((tail ^ (uint32_t)zlen * 0x9e3779b1u) >> 8) % CACHE_SLOTS];
}

/** Copies the cached node section of frame z into buf (cap bytes) and returns 1, or returns 0. */
static int cache_get(const uint8_t *z, size_t zlen, uint8_t *buf, size_t cap)
{
    int hit = 0;
    pthread_mutex_lock(&cache_mu);
    cache_entry_t *e = cache_slot(z, zlen);
    if (e->z != NULL && e->zlen == zlen && e->rawlen == cap && memcmp(e->z, z, zlen) == 0) {
        memcpy(buf, e->raw, cap);
        hit = 1;
    }
    hit ? cache_hits++ : cache_misses++;
    pthread_mutex_unlock(&cache_mu);
    return hit;
}

static void cache_put(const uint8_t *z, size_t zlen, const uint8_t *raw, size_t rawlen)
{
    if (zlen + rawlen > CACHE_MAX_ENTRY)
        return;
    uint8_t *m = ps_xmalloc(zlen + rawlen);
    memcpy(m, z, zlen);
    memcpy(m + zlen, raw, rawlen);
    pthread_mutex_lock(&cache_mu);
    cache_entry_t *e = cache_slot(z, zlen);
    uint8_t *old = e->z;
    *e = (cache_entry_t){m, m + zlen, zlen, rawlen};
    pthread_mutex_unlock(&cache_mu);
    free(old);
}

void ps_chunk_cache_stats(uint64_t *hits, uint64_t *misses)
{
    pthread_mutex_lock(&cache_mu);
    *hits = cache_hits;
    *misses = cache_misses;
    pthread_mutex_unlock(&cache_mu);
}

void ps_chunk_cache_clear(void)
{
    pthread_mutex_lock(&cache_mu);
    for (int i = 0; i < CACHE_SLOTS; i++) {
        free(cache[i].z);
        cache[i] = (cache_entry_t){0};
    }
    cache_hits = cache_misses = 0;
    pthread_mutex_unlock(&cache_mu);
}

/**
 * Decompresses the node section [src, src + len) of a packed chunk into arena memory (a) or, with
 * a NULL, into *heap (malloc'd, the caller frees it), and points *nodes at it. Checks the frame
 * before allocating: its content size is stated, within the limits of chunk.h, one frame exactly,
 * no dictionary; zstd's own checksum covers the content. Served from the cache above when the
 * same frame was decompressed before.
 */
static int unpack_nodes(const uint8_t *src, size_t len, ps_arena_t *a, uint8_t **heap, ps_dec_t *nodes, ps_err_t *err)
{
    unsigned long long raw = ZSTD_getFrameContentSize(src, len);
    if (raw == ZSTD_CONTENTSIZE_ERROR)
        return CORRUPT("packed node section: not a zstd frame (%zu bytes)", len);
    if (raw == ZSTD_CONTENTSIZE_UNKNOWN)
        return CORRUPT("packed node section: zstd frame without its content size");
    if (raw == 0 || raw > PS_CHUNK_MAX_NODE_BYTES || raw > (unsigned long long)len * PS_CHUNK_MAX_EXPANSION)
        return CORRUPT("packed node section: %llu bytes from %zu compressed, beyond the limits (%u bytes, %ux)", raw,
                       len, PS_CHUNK_MAX_NODE_BYTES, PS_CHUNK_MAX_EXPANSION);
    unsigned dict = ZSTD_getDictID_fromFrame(src, len);
    if (dict != 0)
        return CORRUPT("packed node section: zstd frame wants dictionary %u; packed chunks use none", dict);
    size_t fn = ZSTD_findFrameCompressedSize(src, len);
    if (ZSTD_isError(fn))
        return CORRUPT("packed node section: zstd frame truncated or damaged: %s", ZSTD_getErrorName(fn));
    if (fn != len)
        return CORRUPT("packed node section: %zu trailing bytes after the zstd frame", len - fn);
    uint8_t *buf = a != NULL ? ps_arena_alloc(a, (size_t)raw) : (*heap = ps_xmalloc((size_t)raw));
    if (!cache_get(src, len, buf, (size_t)raw)) {
        size_t got = ZSTD_decompressDCtx(thread_dctx(), buf, (size_t)raw, src, len);
        if (ZSTD_isError(got))
            return CORRUPT("packed node section: zstd: %s", ZSTD_getErrorName(got));
        if (got != raw)
            return CORRUPT("packed node section: %zu bytes, the frame says %llu", got, raw);
        cache_put(src, len, buf, (size_t)raw);
    }
    ps_dec_init(nodes, buf, (size_t)raw);
    return 0;
}

static int get_timestamps(ps_dec_t *d, const ps_chunk_header_t *h, int64_t *ts, ps_err_t *err)
{
    uint32_t n = h->n;
    ts[0] = h->min_ts;
    uint64_t last = 0, cur = (uint64_t)h->min_ts;
    for (uint32_t i = 1; i < n;) {
        uint64_t v = ps_dec_uvarint(d), k = 1;
        if ((v & 1) == OP_LIT) {
            last += (uint64_t)ps_unzigzag(v >> 1);
        } else if (v == OP_LONG) {
            last += (uint64_t)ps_dec_varint(d);
        } else if ((v & 3) == TS_RUN) {
            k = v >> 2;
        } else if (v == TS_END) {
            k = n - i;
        } else {
            return CORRUPT("timestamps: bad op 0x%llx at profile %u", (unsigned long long)v, i);
        }
        if (d->err)
            return CORRUPT("timestamps truncated at profile %u of n=%u", i, n);
        if (k > n - i)
            return CORRUPT("timestamps: run of %llu at profile %u runs past n=%u", (unsigned long long)k, i, n);
        /* interval >= 1 and cur + k * interval <= INT64_MAX, in unsigned arithmetic */
        if (last == 0 || last > ((uint64_t)INT64_MAX - cur) / k)
            return CORRUPT("timestamps not increasing or overflowing at profile %u", i);
        for (uint64_t e = i + k; i < e; i++) {
            cur += last;
            ts[i] = (int64_t)cur;
        }
    }
    if (ts[n - 1] != h->max_ts)
        return CORRUPT("last timestamp %lld != max_ts %lld", (long long)ts[n - 1], (long long)h->max_ts);
    return 0;
}

static int get_rle(ps_dec_t *d, int64_t *v, uint32_t n, const char *what, ps_err_t *err)
{
    for (uint32_t i = 0; i < n;) {
        int64_t x = ps_dec_varint(d);
        uint64_t k = ps_dec_uvarint(d);
        if (d->err)
            return CORRUPT("%s truncated at profile %u of n=%u", what, i, n);
        if (k == 0 || k > n - i)
            return CORRUPT("%s: run length %llu at profile %u (n=%u)", what, (unsigned long long)k, i, n);
        for (uint64_t e = i + k; i < e; i++)
            v[i] = x;
    }
    return 0;
}

static int get_scale(ps_dec_t *d, const char *what, int64_t *g, ps_err_t *err)
{
    uint64_t v = ps_dec_uvarint(d);
    if (d->err)
        return CORRUPT("%s scale truncated", what);
    if (v == 0 || v > INT64_MAX)
        return CORRUPT("%s scale %llu out of range", what, (unsigned long long)v);
    *g = (int64_t)v;
    return 0;
}

/** Reads a column length; returns the column's end or NULL (err set). Node columns take >= 2 bytes. */
static const uint8_t *get_column_end(ps_dec_t *d, uint32_t j, uint64_t min, ps_err_t *err)
{
    uint64_t len = ps_dec_uvarint(d);
    if (d->err) {
        CORRUPT("node %u: column length truncated", j);
        return NULL;
    }
    if (len < min || len > ps_dec_left(d)) {
        CORRUPT("node %u: column length %llu out of range (%zu bytes left)", j, (unsigned long long)len,
                ps_dec_left(d));
        return NULL;
    }
    return d->p + len;
}

#define TOTALS UINT32_MAX /* the column number of the totals column, for messages */
#define COLUMN_CORRUPT(fmt, ...)                                                                                       \
    (j == TOTALS ? CORRUPT("totals: " fmt, ##__VA_ARGS__) : CORRUPT("node %u: " fmt, j, ##__VA_ARGS__))

enum { W_SPARSE, W_DENSE, W_SUM };

/**
 * Walks the column [p, end) (first index and ops) of node j, or of the totals if j == TOTALS.
 *   W_SPARSE: appends the values to idx/val[*count .. cap) and validates the whole column;
 *   W_DENSE:  stores them at val[profile index] (the caller zeroed val);
 *   W_SUM:    adds the values at profile indexes [from, to) to *sum (exact, then clamped to int64), stops at `to`.
 * Always inlined with a constant mode, so each caller gets its own loop.
 */
static inline __attribute__((always_inline)) int walk_column(const uint8_t *p, const uint8_t *end, uint32_t n,
                                                             int64_t g, uint32_t j, int mode, uint32_t *idx,
                                                             int64_t *val, uint32_t *count, uint32_t cap,
                                                             uint32_t from, uint32_t to, int64_t *sum, ps_err_t *err)
{
    ps_dec_t d;
    ps_dec_init(&d, p, (size_t)(end - p));
    uint64_t first = ps_dec_uvarint(&d);
    if (d.err)
        return COLUMN_CORRUPT("first index truncated");
    if (first >= n)
        return COLUMN_CORRUPT("first index %llu >= n=%u", (unsigned long long)first, n);
    uint32_t pos = (uint32_t)first, c = mode == W_SPARSE ? *count : 0, seen = 0;
    uint64_t prev = 0, last = 0;
    __int128 acc = 0; /* W_SUM: exact (at most 65535 values of 64 bits), clamped to int64 at the end */
    int zero = 0; /* the last op was a zero run */
    while (d.p < d.end) {
        if (mode == W_SUM && pos >= to)
            break;
        uint64_t v = *d.p < 0x80 ? *d.p++ : ps_dec_uvarint(&d), k = 1, step; /* most ops take one byte */
        if ((v & 1) == OP_LIT) {
            step = last = (uint64_t)ps_unzigzag(v >> 1);
        } else if ((v & 3) == OP_ZERO && v != OP_DEND) {
            if (zero)
                return COLUMN_CORRUPT("two zero runs in a row at profile %u", pos);
            k = v >> 2;
            if (k >= n - pos) /* a value must follow */
                return COLUMN_CORRUPT("column runs past n=%u (zero run of %llu at profile %u)", n,
                                      (unsigned long long)k, pos);
            pos += (uint32_t)k;
            zero = 1;
            continue;
        } else if (v == OP_LONG) {
            step = last = (uint64_t)ps_dec_varint(&d);
        } else {
            k = v >> 3; /* OP_DRUN, OP_VRUN; k == 0: OP_VEND, OP_DEND */
            step = (v & 7) == OP_DRUN || v == OP_DEND ? last : 0;
            if (k == 0)
                k = n - pos;
            if (k == 0)
                return COLUMN_CORRUPT("column runs past n=%u (run to the end at profile %u)", n, pos);
        }
        if (d.err)
            return COLUMN_CORRUPT("op truncated at profile %u", pos);
        zero = 0;
        if (k > n - pos)
            return COLUMN_CORRUPT("column runs past n=%u (run of %llu at profile %u)", n, (unsigned long long)k, pos);
        if (mode == W_SPARSE && k > cap - c)
            return COLUMN_CORRUPT("more values than nnz=%u", cap);
        uint32_t e = pos + (uint32_t)k;
        seen += (uint32_t)k;
        if (step == 0) { /* k copies of one value: check it once */
            int64_t x;
            if (prev == 0)
                return COLUMN_CORRUPT("zero value at profile %u", pos);
            if (__builtin_mul_overflow((int64_t)prev, g, &x))
                return COLUMN_CORRUPT("value at profile %u overflows int64 after scaling by %lld", pos, (long long)g);
            if (mode == W_SPARSE) {
                for (; pos < e; pos++) {
                    idx[c] = pos;
                    val[c++] = x;
                }
            } else if (mode == W_DENSE) {
                for (; pos < e; pos++)
                    val[pos] = x;
            } else {
                uint32_t a = pos > from ? pos : from, b = e < to ? e : to;
                if (a < b)
                    acc += (__int128)x * (b - a);
                pos = e;
            }
            continue;
        }
        for (; pos < e; pos++) {
            prev += step;
            int64_t x;
            if (prev == 0)
                return COLUMN_CORRUPT("zero value at profile %u", pos);
            if (__builtin_mul_overflow((int64_t)prev, g, &x))
                return COLUMN_CORRUPT("value at profile %u overflows int64 after scaling by %lld", pos, (long long)g);
            if (mode == W_SPARSE) {
                idx[c] = pos;
                val[c++] = x;
            } else if (mode == W_DENSE) {
                val[pos] = x;
            } else if (pos >= from && pos < to) {
                acc += x;
            }
        }
    }
    if (d.p == d.end) { /* walked to the end: check how it ends */
        if (seen == 0)
            return COLUMN_CORRUPT("column has no values");
        if (zero)
            return COLUMN_CORRUPT("column ends in a zero run");
    }
    if (mode == W_SPARSE)
        *count = c;
    if (mode == W_SUM)
        *sum = ps_sat_add(*sum, acc > INT64_MAX ? INT64_MAX : acc < INT64_MIN ? INT64_MIN : (int64_t)acc);
    return 0;
}

/** Decodes header and meta into out (arrays from arena); leaves *nodes over the node section. */
static int get_meta(const uint8_t *p, size_t len, ps_arena_t *arena, ps_chunk_data_t *out, ps_dec_t *nodes,
                    ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    ps_chunk_header_t h;
    uint32_t meta_len;
    int r = read_header(p, len, &h, &meta_len, err);
    if (r != 0)
        return r;
    uint32_t n = h.n;
    int64_t *a = ps_arena_alloc(arena, (size_t)n * 4 * sizeof(int64_t));
    int64_t *ts = a, *dur = a + n, *per = a + 2 * (size_t)n, *tot = a + 3 * (size_t)n, g;
    ps_dec_t d;
    ps_dec_init(&d, p + HDR_SIZE, meta_len);
    if ((r = get_timestamps(&d, &h, ts, err)) != 0 || (r = get_rle(&d, dur, n, "durations", err)) != 0 ||
        (r = get_rle(&d, per, n, "periods", err)) != 0 || (r = get_scale(&d, "totals", &g, err)) != 0)
        return r;
    uint64_t tlen = ps_dec_uvarint(&d);
    if (d.err || tlen > ps_dec_left(&d))
        return CORRUPT("totals: column length %llu out of range", (unsigned long long)tlen);
    memset(tot, 0, (size_t)n * sizeof(int64_t));
    if (tlen != 0 &&
        (r = walk_column(d.p, d.p + tlen, n, g, TOTALS, W_DENSE, NULL, tot, NULL, 0, 0, n, NULL, err)) != 0)
        return r;
    d.p += tlen;
    if (d.p != d.end)
        return CORRUPT("meta: %zu trailing bytes", ps_dec_left(&d));
    out->n = n;
    out->ts = ts;
    out->durations = dur;
    out->periods = per;
    out->totals = tot;
    ps_dec_init(nodes, p + HDR_SIZE + meta_len, len - HDR_SIZE - meta_len);
    return 0;
}

int ps_chunk_decode_meta(const void *p, size_t n, ps_arena_t *arena, ps_chunk_data_t *out, ps_err_t *err)
{
    ps_dec_t nodes;
    int r = get_meta(p, n, arena, out, &nodes, err);
    if (r != 0)
        memset(out, 0, sizeof(*out));
    return r;
}

typedef struct nodes_hdr {
    uint64_t nnodes, nnz;
    int64_t scale;
} nodes_hdr_t;

static int get_nodes_hdr(ps_dec_t *d, uint32_t n, nodes_hdr_t *nh, ps_err_t *err)
{
    nh->nnodes = ps_dec_uvarint(d);
    nh->nnz = ps_dec_uvarint(d);
    if (d->err)
        return CORRUPT("node section header truncated");
    int r = get_scale(d, "value", &nh->scale, err);
    if (r != 0)
        return r;
    /* every node takes >= 4 bytes: id, column length, first index, one op */
    if (nh->nnodes > ps_dec_left(d) / 4)
        return CORRUPT("nnodes=%llu more than %zu bytes can hold", (unsigned long long)nh->nnodes, ps_dec_left(d));
    if (nh->nnz < nh->nnodes || nh->nnz > UINT32_MAX || (nh->nnz > 0 && (nh->nnz - 1) / n >= nh->nnodes))
        return CORRUPT("nnz=%llu inconsistent with nnodes=%llu and n=%u", (unsigned long long)nh->nnz,
                       (unsigned long long)nh->nnodes, n);
    return 0;
}

/** Reads node id j (0-based) given the previous id in *id. */
static inline int get_id(ps_dec_t *d, uint32_t j, uint64_t *id, ps_err_t *err)
{
    uint64_t gap = ps_dec_uvarint(d);
    if (d->err)
        return CORRUPT("node ids truncated at node %u", j);
    if (j > 0 && (gap == 0 || gap > UINT64_MAX - *id))
        return CORRUPT("node %u: id gap %llu not ascending or overflowing", j, (unsigned long long)gap);
    *id = j > 0 ? *id + gap : gap;
    return 0;
}

int ps_chunk_decode(const void *p, size_t len, ps_arena_t *arena, ps_chunk_data_t *out, ps_err_t *err)
{
    return ps_chunk_decode_ref(p, len, NULL, 0, arena, out, err);
}

int ps_chunk_decode_ref(const void *p, size_t len, const void *ref, size_t refn, ps_arena_t *arena,
                        ps_chunk_data_t *out, ps_err_t *err)
{
    ps_dec_t d;
    nodes_hdr_t nh;
    int64_t scale = 0; /* a reference's own value scale */
    int r = get_meta(p, len, arena, out, &d, err);
    if (r == 0 && *(const uint8_t *)p == PS_CHUNK_ENC_ZSTD)
        r = unpack_nodes(d.p, ps_dec_left(&d), arena, NULL, &d, err);
    if (r == 0 && *(const uint8_t *)p == PS_CHUNK_ENC_REF) {
        ps_chunk_header_t h;
        uint32_t meta_len;
        read_header(p, len, &h, &meta_len, NULL); /* get_meta read it */
        r = ref_nodes(p, len, &h, meta_len, ref, refn, arena, NULL, &d, &scale, err);
    }
    if (r != 0 || (r = get_nodes_hdr(&d, out->n, &nh, err)) != 0)
        goto Exit;
    if (scale != 0)
        nh.scale = scale;
    uint32_t nnodes = (uint32_t)nh.nnodes, nnz = (uint32_t)nh.nnz, count = 0;
    uint64_t *ids = ps_arena_alloc(arena, (size_t)nnodes * sizeof(uint64_t));
    uint32_t *off = ps_arena_alloc(arena, ((size_t)nnodes + 1) * sizeof(uint32_t));
    uint32_t *idx = ps_arena_alloc(arena, (size_t)nnz * sizeof(uint32_t));
    int64_t *val = ps_arena_alloc(arena, (size_t)nnz * sizeof(int64_t));
    uint64_t id = 0;
    for (uint32_t j = 0; j < nnodes; j++) {
        if ((r = get_id(&d, j, &id, err)) != 0)
            goto Exit;
        ids[j] = id;
    }
    off[0] = 0;
    for (uint32_t j = 0; j < nnodes; j++) {
        const uint8_t *end = get_column_end(&d, j, 2, err);
        if (end == NULL) {
            r = PS_ECORRUPT;
            goto Exit;
        }
        if ((r = walk_column(d.p, end, out->n, nh.scale, j, W_SPARSE, idx, val, &count, nnz, 0, 0, NULL, err)) != 0)
            goto Exit;
        off[j + 1] = count;
        d.p = end;
    }
    if (count != nnz) {
        r = CORRUPT("%u values, header says nnz=%u", count, nnz);
        goto Exit;
    }
    if (d.p != d.end) {
        r = CORRUPT("%zu trailing bytes after the node columns", ps_dec_left(&d));
        goto Exit;
    }
    out->nnodes = nnodes;
    out->node_ids = ids;
    out->off = off;
    out->idx = idx;
    out->val = val;
Exit:
    if (r != 0)
        memset(out, 0, sizeof(*out));
    return r;
}

/** ps_chunk_sum_range over the (plain) node section dp of a chunk with header hp. */
static int sum_nodes(const ps_dec_t *dp, const ps_chunk_header_t *hp, int64_t scale, uint32_t from, uint32_t to,
                     void (*on_node)(void *ctx, uint64_t node_id, int64_t sum), void *ctx, ps_err_t *err)
{
    ps_dec_t d = *dp, ids;
    const ps_chunk_header_t h = *hp;
    nodes_hdr_t nh;
    int r;
    if ((r = get_nodes_hdr(&d, h.n, &nh, err)) != 0)
        return r;
    if (scale != 0)
        nh.scale = scale;
    if (to > h.n)
        to = h.n;
    /* two cursors: ids over the id list, d over the columns that follow it */
    ids = d;
    for (uint64_t j = 0; j < nh.nnodes; j++) {
        while (d.p < d.end && *d.p >= 0x80)
            d.p++;
        if (d.p++ >= d.end)
            return CORRUPT("node ids truncated at node %llu", (unsigned long long)j);
    }
    uint64_t id = 0;
    for (uint32_t j = 0; j < (uint32_t)nh.nnodes; j++) {
        if ((r = get_id(&ids, j, &id, err)) != 0)
            return r;
        const uint8_t *end = get_column_end(&d, j, 2, err);
        if (end == NULL)
            return PS_ECORRUPT;
        int64_t sum = 0;
        if (from < to &&
            (r = walk_column(d.p, end, h.n, nh.scale, j, W_SUM, NULL, NULL, NULL, 0, from, to, &sum, err)) != 0)
            return r;
        if (sum != 0)
            on_node(ctx, id, sum);
        d.p = end;
    }
    if (d.p != d.end)
        return CORRUPT("%zu trailing bytes after the node columns", ps_dec_left(&d));
    return 0;
}

int ps_chunk_sum_range(const void *p, size_t len, uint32_t from, uint32_t to,
                       void (*on_node)(void *ctx, uint64_t node_id, int64_t sum), void *ctx, ps_err_t *err)
{
    return ps_chunk_sum_range_ref(p, len, NULL, 0, from, to, on_node, ctx, err);
}

int ps_chunk_sum_range_ref(const void *p, size_t len, const void *ref, size_t refn, uint32_t from, uint32_t to,
                           void (*on_node)(void *ctx, uint64_t node_id, int64_t sum), void *ctx, ps_err_t *err)
{
    ps_chunk_header_t h;
    uint32_t meta_len;
    int r = read_header(p, len, &h, &meta_len, err);
    if (r != 0)
        return r;
    ps_dec_t d;
    uint8_t *heap = NULL;
    int64_t scale = 0;
    ps_dec_init(&d, (const uint8_t *)p + HDR_SIZE + meta_len, len - HDR_SIZE - meta_len);
    if (h.encoding == PS_CHUNK_ENC_ZSTD && (r = unpack_nodes(d.p, ps_dec_left(&d), NULL, &heap, &d, err)) != 0)
        goto Exit;
    if (h.encoding == PS_CHUNK_ENC_REF &&
        (r = ref_nodes(p, len, &h, meta_len, ref, refn, NULL, &heap, &d, &scale, err)) != 0)
        goto Exit;
    r = sum_nodes(&d, &h, scale, from, to, on_node, ctx, err);
Exit:
    free(heap);
    return r;
}

/* ---- references (PS_CHUNK_ENC_REF) ------------------------------------------------------ */

/* Splits the plain node section [p, p + len): nnodes and nnz (the *pre bytes at p), the value
 * scale, and the ids and columns from *rest on. */
static int split_nodes(const uint8_t *p, size_t len, size_t *pre, uint64_t *scale, const uint8_t **rest, ps_err_t *err)
{
    ps_dec_t d;
    ps_dec_init(&d, p, len);
    ps_dec_uvarint(&d);
    ps_dec_uvarint(&d);
    *pre = (size_t)(d.p - p);
    *scale = ps_dec_uvarint(&d);
    if (d.err)
        return CORRUPT("node section header truncated");
    *rest = d.p;
    return 0;
}

/* The check of a node section: its n, min_ts and max_ts (header bytes 1..18), then its bytes but
 * the value scale. */
static uint64_t nodes_check(const uint8_t *hdr, const uint8_t *pre, size_t pre_len, const uint8_t *rest,
                            size_t rest_len)
{
    uint64_t h = ps_hash64(hdr + 1, 18, 0x706b7265663900ull);
    h = ps_hash64(pre, pre_len, h);
    return ps_hash64(rest, rest_len, h);
}

/*
 * The node section of the reference p (header h): *nodes over the plain node section of ref, the
 * chunk it names (unpacked into a, or with a NULL into *heap), and *scale its own value scale.
 * Checks that ref is a V1 or packed chunk of the same profiles whose node section is the one the
 * reference was made from (its check).
 */
static int ref_nodes(const uint8_t *p, size_t len, const ps_chunk_header_t *h, uint32_t meta_len,
                     const uint8_t *ref, size_t refn, ps_arena_t *a, uint8_t **heap, ps_dec_t *nodes, int64_t *scale,
                     ps_err_t *err)
{
    ps_dec_t t;
    ps_dec_init(&t, p + HDR_SIZE + meta_len, len - HDR_SIZE - meta_len);
    uint64_t sid = ps_dec_be64(&t), g = ps_dec_uvarint(&t), check = ps_dec_be64(&t);
    if (t.err)
        return CORRUPT("reference truncated (%zu bytes after the meta)", len - HDR_SIZE - meta_len);
    if (t.p != t.end)
        return CORRUPT("reference: %zu trailing bytes", ps_dec_left(&t));
    if (g == 0 || g > INT64_MAX)
        return CORRUPT("reference: value scale %llu out of range", (unsigned long long)g);
    if (ref == NULL)
        return CORRUPT("the chunk of series %llu up to %lld it refers to is missing", (unsigned long long)sid,
                       (long long)h->max_ts);
    ps_chunk_header_t rh;
    uint32_t rml;
    int r = read_header(ref, refn, &rh, &rml, err);
    if (r == 0 && rh.encoding == PS_CHUNK_ENC_REF)
        r = CORRUPT("a reference itself");
    if (r == 0 && (rh.n != h->n || rh.min_ts != h->min_ts || rh.max_ts != h->max_ts))
        r = CORRUPT("%u profiles %lld..%lld, not this chunk's %u", rh.n, (long long)rh.min_ts, (long long)rh.max_ts,
                    h->n);
    ps_dec_t d;
    if (r == 0) {
        ps_dec_init(&d, ref + HDR_SIZE + rml, refn - HDR_SIZE - rml);
        if (rh.encoding == PS_CHUNK_ENC_ZSTD)
            r = unpack_nodes(d.p, ps_dec_left(&d), a, heap, &d, err);
    }
    size_t pre;
    uint64_t rg;
    const uint8_t *rest;
    if (r == 0 && (r = split_nodes(d.p, ps_dec_left(&d), &pre, &rg, &rest, err)) == 0 &&
        nodes_check(p, d.p, pre, rest, (size_t)(d.end - rest)) != check)
        r = CORRUPT("its node section does not match the reference's check");
    if (r != 0) {
        ps_err_prefix(err, "the chunk of series %llu up to %lld it refers to", (unsigned long long)sid,
                      (long long)h->max_ts);
        return PS_ECORRUPT;
    }
    *nodes = d;
    *scale = (int64_t)g;
    return 0;
}

int ps_chunk_ref_sid(const void *p, size_t n, uint64_t *sid, ps_err_t *err)
{
    ps_chunk_header_t h;
    uint32_t meta_len;
    int r = read_header(p, n, &h, &meta_len, err);
    if (r != 0)
        return r;
    if (h.encoding != PS_CHUNK_ENC_REF)
        return 0;
    if (n - HDR_SIZE - meta_len < 8)
        return CORRUPT("reference truncated (%zu bytes after the meta)", n - HDR_SIZE - meta_len);
    *sid = ps_get_be64((const uint8_t *)p + HDR_SIZE + meta_len);
    return 1;
}

uint64_t ps_chunk_twin_key(const void *v1, size_t n)
{
    const uint8_t *p = v1;
    ps_chunk_header_t h;
    uint32_t meta_len;
    size_t pre;
    uint64_t g;
    const uint8_t *rest, *at = p + HDR_SIZE;
    if (read_header(p, n, &h, &meta_len, NULL) != 0 || h.encoding != PS_CHUNK_ENC_V1)
        return 0;
    at += meta_len;
    if (split_nodes(at, n - HDR_SIZE - meta_len, &pre, &g, &rest, NULL) != 0)
        return 0;
    return nodes_check(p, at, pre, rest, (size_t)(p + n - rest)) | 1;
}

/* The plain node section of the V1 or packed chunk p (header already read: h, meta_len) into *d
 * (unpacked onto *heap); PS_ECORRUPT for a reference or a bad frame. */
static int plain_nodes(const uint8_t *p, size_t n, const ps_chunk_header_t *h, uint32_t meta_len, uint8_t **heap,
                       ps_dec_t *d, ps_err_t *err)
{
    ps_dec_init(d, p + HDR_SIZE + meta_len, n - HDR_SIZE - meta_len);
    if (h->encoding == PS_CHUNK_ENC_REF)
        return CORRUPT("a reference has no node section of its own");
    if (h->encoding == PS_CHUNK_ENC_ZSTD)
        return unpack_nodes(d->p, ps_dec_left(d), NULL, heap, d, err);
    return 0;
}

int ps_chunk_value_scale(const void *p, size_t n, uint64_t *scale, ps_err_t *err)
{
    ps_chunk_header_t h;
    uint32_t meta_len;
    uint8_t *heap = NULL;
    ps_dec_t d;
    size_t pre;
    const uint8_t *rest;
    int r = read_header(p, n, &h, &meta_len, err);
    if (r == 0)
        r = plain_nodes(p, n, &h, meta_len, &heap, &d, err);
    if (r == 0)
        r = split_nodes(d.p, ps_dec_left(&d), &pre, scale, &rest, err);
    free(heap);
    return r;
}

int ps_chunk_refer(const void *self, size_t n, const void *twin, size_t tn, uint64_t twin_sid, ps_buf_t *out,
                   ps_err_t *err)
{
    const uint8_t *p = self, *tp = twin;
    ps_chunk_header_t h, th;
    uint32_t meta_len, tml;
    if (read_header(p, n, &h, &meta_len, NULL) != 0 || h.encoding == PS_CHUNK_ENC_REF)
        return INVALID("refer: not a V1 or packed chunk (%zu bytes)", n);
    if (read_header(tp, tn, &th, &tml, NULL) != 0 || th.encoding == PS_CHUNK_ENC_REF || th.n != h.n ||
        th.min_ts != h.min_ts || th.max_ts != h.max_ts)
        return 0;
    ps_dec_t d, td;
    uint8_t *heap = NULL, *theap = NULL;
    const uint8_t *rest, *trest;
    size_t pre, tpre;
    uint64_t g, tg;
    int same = 0;
    if (plain_nodes(p, n, &h, meta_len, &heap, &d, NULL) != 0 ||
        split_nodes(d.p, ps_dec_left(&d), &pre, &g, &rest, NULL) != 0 || g == 0 || g > INT64_MAX)
        goto Exit;
    /* the reference: header and meta, sid 8, scale, check 8; only where it is smaller */
    size_t refbytes = HDR_SIZE + meta_len + 8 + uv_len(g) + 8, len = (size_t)(d.end - rest);
    if (refbytes >= n)
        goto Exit;
    if (plain_nodes(tp, tn, &th, tml, &theap, &td, NULL) != 0 ||
        split_nodes(td.p, ps_dec_left(&td), &tpre, &tg, &trest, NULL) != 0)
        goto Exit;
    /* exact: the same bytes but the scale, so the reference decodes to self's values */
    same = tpre == pre && (size_t)(td.end - trest) == len && memcmp(td.p, d.p, pre) == 0 &&
           memcmp(trest, rest, len) == 0;
    if (same) {
        uint8_t *o = ps_buf_reserve(out, refbytes);
        memcpy(o, p, HDR_SIZE + meta_len);
        o[0] = PS_CHUNK_ENC_REF;
        uint8_t *q = o + HDR_SIZE + meta_len;
        ps_enc_be64(q, twin_sid);
        q = put_uv(q + 8, g);
        ps_enc_be64(q, nodes_check(p, d.p, pre, rest, len));
        out->len += refbytes;
    }
Exit:
    free(heap);
    free(theap);
    return same;
}
