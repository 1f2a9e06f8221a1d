/*
 * float_dense.c - the dense float chunk (float_dense.h). This comment is the specification; docs/FORMAT.md
 * repeats it.
 *
 * Why: Prometheus' XOR chunk spends 1-2 bytes a sample on what node_exporter sends, values that
 * are integers (bytes, packets, pages) or decimals with two or three digits (CPU seconds = ticks
 * / 100, milliseconds * 0.001): XOR'd float bits of such values still differ in many mantissa
 * bits. As integers m (v = m / 10^e) their deltas, or deltas of deltas, are small (VictoriaMetrics'
 * decimal conversion; the code is our own). Values that are not such decimals of one chunk-wide
 * e keep XOR'd bits, bit for bit.
 *
 * CHUNK (varints as in core/varint.h: LEB128, signed ones zigzagged)
 *   n       <uvarint> 1..65535 samples
 *   t0      <varint>  t[0] - tbase (tbase: 0 on its own, the entry's min_t in packed chunks)
 *   mode    <u8>      bits 0-1 kind: 0 XOR, 1 v = m / 10^e, 2 v = m * 10^-e (the float64
 *                     nearest 10^-e, e >= 1); bit 2 dod: decimal codes are deltas of deltas (else
 *                     deltas); bits 3-7 e (0..18; 0 unless a decimal kind)
 *   v0      kind 0: <8 bytes> the float64 bits, big endian; else m[0] <varint>, |m| <= 2^53
 *   if n >= 2: td1 <uvarint> t[1] - t[0] (>= 1), or the grid's step (below); vs <u8> the value
 *              shift s; vw1 vw2 <u8 u8>; with dod, c1 <uvarint>: the first value code
 *   if n >= 3: tw1 tw2 <u8 u8>; bit 7 of tw1 (grid) set: the timestamps are offsets from a grid
 *   then a bit stream (most significant bit of a byte first): the n - 2 timestamp codes
 *   (widths tw1 tw2: zigzag(dod), dod = (t[i] - t[i-1]) - (t[i-1] - t[i-2]), i >= 2; with
 *   grid, n - 1 codes zigzag(t[i] - (t[0] + i * step)), i >= 1, step = the span / (n - 1),
 *   rounded, in td1's place), then the value codes (widths vw1 vw2: n - 1 of them, with dod n - 2
 *   after c1), then zero bits to the byte's end. Nothing follows.
 *
 *   A code c with widths w1 <= w2 <= 64 is: nothing if w2 == 0 (c = 0); w2 bits if w1 == w2;
 *   else 0 <w1 bits> or 1 <w2 bits> (only when c needs more than w1 bits). The writer takes w2
 *   as the widest code's bit length and the w1 that makes the stream shortest.
 *   Value codes, i >= 1, kind 0: c = (bits[i] XOR bits[i-1]) >> s (s: the fewest trailing zero
 *   bits of any of them; s + vw2 <= 64). Decimal kinds: d[i] = m[i] - m[i-1], s the fewest
 *   trailing zero bits of any d (a chunk of pages moves by multiples of 4096: s = 12), c =
 *   zigzag(d[i] >> s), or with dod c = zigzag((d[i] - d[i-1]) >> s) (d[0] = 0). The writer
 *   takes the shortest of XOR and the smallest e of kind 1 (else of kind 2), deltas or dods; for a
 *   decimal kind every value must come back with the same bits (so -0.0, NaN, ±Inf are XOR).
 *
 * Reading validates everything and fails with PS_ECORRUPT ("fdense: <what> at byte B") on:
 * a truncated or overlong varint, n out of range, a mode or width out of range (or a grid with
 * tw2 = 0, which the writer writes as dods of 0; a shift of nothing but zero codes), timestamps that
 * do not increase or leave ±9223372036854 ms, an m outside ±2^53, a wide code that fits the narrow
 * width, nonzero end bits or bytes after the stream.
 */
#include "float_dense.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/varint.h"
#include "xorchunk.h"

#define M_MAX (1ll << 53)
#define E_MAX 18

static const double p10[E_MAX + 1] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8, 1e9,
                                      1e10, 1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18};
static const double n10[E_MAX + 1] = {1e0,   1e-1,  1e-2,  1e-3,  1e-4,  1e-5,  1e-6,  1e-7,  1e-8, 1e-9,
                                      1e-10, 1e-11, 1e-12, 1e-13, 1e-14, 1e-15, 1e-16, 1e-17, 1e-18};

enum { KIND_XOR = 0, KIND_DIV = 1, KIND_MUL = 2 };

static inline uint64_t zz(int64_t x) { return ((uint64_t)x << 1) ^ (uint64_t)(x >> 63); }
static inline int64_t unzz(uint64_t u) { return (int64_t)(u >> 1) ^ -(int64_t)(u & 1); }
static size_t uvarint_len(uint64_t v)
{
    size_t k = 1;
    for (; v >= 0x80; v >>= 7)
        k++;
    return k;
}

static inline unsigned bitlen(uint64_t c) { return c ? 64u - (unsigned)__builtin_clzll(c) : 0u; }

static inline double from_bits(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static inline uint64_t to_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

/* the value of decimal m in kind k with exponent e */
static inline double dec_value(int kind, int64_t m, unsigned e)
{
    return kind == KIND_DIV ? (double)m / p10[e] : (double)m * n10[e];
}

/* ---- bits ---- */

typedef struct bw {
    ps_buf_t *b;
    uint64_t acc; /* the pending bits, the last nacc of it */
    unsigned nacc;
} bw_t;

/* nbits <= 32 of v; the caller reserved room (bw_room) */
static inline void bw_put32(bw_t *w, uint64_t v, unsigned nbits)
{
    w->acc = (w->acc << nbits) | (v & ((1ull << nbits) - 1)); /* nacc < 8: 40 bits at most */
    w->nacc += nbits;
    uint8_t *p = w->b->data + w->b->len;
    while (w->nacc >= 8) {
        w->nacc -= 8;
        *p++ = (uint8_t)(w->acc >> w->nacc);
    }
    w->b->len = (size_t)(p - w->b->data);
}

static inline void bw_put(bw_t *w, uint64_t v, unsigned nbits)
{
    if (nbits > 32) {
        bw_put32(w, v >> 32, nbits - 32);
        nbits = 32;
    }
    bw_put32(w, v, nbits);
}

/* room for nbits more bits */
static void bw_room(bw_t *w, uint64_t nbits) { ps_buf_reserve(w->b, (size_t)(nbits / 8 + 2)); }

static void bw_end(bw_t *w)
{
    if (w->nacc > 0)
        w->b->data[w->b->len++] = (uint8_t)(w->acc << (8 - w->nacc)); /* within bw_room */
    w->nacc = 0;
}

typedef struct br {
    const uint8_t *p;
    size_t nbits, pos;
    int err;
} br_t;

static uint64_t br_get(br_t *r, unsigned nbits)
{
    if (nbits == 0)
        return 0;
    if (r->err || nbits > r->nbits - r->pos) {
        r->err = 1;
        return 0;
    }
    size_t byte = r->pos >> 3;
    unsigned off = (unsigned)(r->pos & 7);
    if (nbits + off <= 64 && byte + 8 <= r->nbits / 8) { /* one big-endian load */
        uint64_t w;
        memcpy(&w, r->p + byte, 8);
        w = __builtin_bswap64(w);
        r->pos += nbits;
        return (w << off) >> (64 - nbits);
    }
    uint64_t v = 0;
    while (nbits > 0) {
        unsigned off = (unsigned)(r->pos & 7), avail = 8 - off, k = nbits < avail ? nbits : avail;
        uint8_t byte = r->p[r->pos >> 3];
        v = (v << k) | ((uint64_t)(byte >> (avail - k)) & ((1u << k) - 1));
        r->pos += k;
        nbits -= k;
    }
    return v;
}

/* ---- the two-width code ---- */

typedef struct widths {
    uint8_t w1, w2;
} widths_t;

/* The widths that code c[0..k) in the fewest bits, and that number. */
static uint64_t best_widths(const uint64_t *c, size_t k, widths_t *w)
{
    uint32_t hist[65] = {0};
    unsigned w2 = 0;
    for (size_t i = 0; i < k; i++) {
        unsigned b = bitlen(c[i]);
        hist[b]++;
        if (b > w2)
            w2 = b;
    }
    uint64_t best = (uint64_t)k * w2; /* w1 == w2: no flag */
    unsigned bw1 = w2;
    uint64_t fit = 0; /* codes of at most w1 bits */
    for (unsigned w1 = 0; w1 < w2; w1++) {
        fit += hist[w1];
        uint64_t cost = k + fit * w1 + (k - fit) * w2;
        if (cost < best) {
            best = cost;
            bw1 = w1;
        }
    }
    w->w1 = (uint8_t)bw1;
    w->w2 = (uint8_t)w2;
    return best;
}

static inline void put_code(bw_t *b, widths_t w, uint64_t c)
{
    if (w.w2 == 0)
        return;
    if (w.w1 == w.w2) {
        bw_put(b, c, w.w2);
    } else if (bitlen(c) <= w.w1) {
        bw_put(b, 0, 1);
        bw_put(b, c, w.w1);
    } else {
        bw_put(b, 1, 1);
        bw_put(b, c, w.w2);
    }
}

static uint64_t get_code(br_t *r, widths_t w)
{
    if (w.w2 == 0)
        return 0;
    if (w.w1 == w.w2)
        return br_get(r, w.w2);
    if (br_get(r, 1) == 0)
        return br_get(r, w.w1);
    uint64_t c = br_get(r, w.w2);
    if (bitlen(c) <= w.w1)
        r->err = 2; /* not what the writer writes */
    return c;
}

/* ---- encoding ---- */

/* m[0..n) of the values in kind k with exponent e, if every one comes back with its bits */
static bool to_decimal(const uint64_t *bits, uint32_t n, int kind, unsigned e, int64_t *m)
{
    for (uint32_t i = 0; i < n; i++) {
        double v = from_bits(bits[i]), x = v * p10[e];
        if (!(x > -(double)M_MAX && x < (double)M_MAX)) /* also NaN */
            return false;
        int64_t mi = (int64_t)(x < 0 ? x - 0.5 : x + 0.5);
        if (to_bits(dec_value(kind, mi, e)) != bits[i])
            return false;
        m[i] = mi;
    }
    return true;
}

typedef struct vplan {
    int kind;
    bool dod;
    unsigned e, shift;
    widths_t w;
    uint64_t cost; /* bits of the codes plus header bytes' worth */
} vplan_t;

static unsigned ctz_or(const uint64_t *x, size_t k)
{
    uint64_t o = 0;
    for (size_t i = 0; i < k; i++)
        o |= x[i];
    return o ? (unsigned)__builtin_ctzll(o) : 0;
}

/* the value codes of decimals m[0..n) as plan p says (c: n - 1 of them) */
static void dec_codes(const int64_t *m, uint32_t n, bool dod, unsigned shift, uint64_t *c)
{
    int64_t prev = 0;
    for (uint32_t i = 1; i < n; i++) {
        int64_t d = (m[i] - m[i - 1]) >> shift; /* exact: a multiple of 2^shift */
        c[i - 1] = zz(dod ? d - prev : d);
        prev = d;
    }
}

/* the best plan of decimals m (kind, e set in *p), codes into c; tmp: n scratch */
static void dec_plan(const int64_t *m, uint32_t n, vplan_t *p, uint64_t *c, uint64_t *tmp)
{
    for (uint32_t i = 1; i < n; i++)
        tmp[i - 1] = (uint64_t)(m[i] - m[i - 1]);
    p->shift = ctz_or(tmp, n - 1);
    size_t v0 = uvarint_len(zz(m[0])) - 1;
    widths_t wd, wo;
    dec_codes(m, n, false, p->shift, tmp);
    uint64_t cd = best_widths(tmp, n - 1, &wd);
    dec_codes(m, n, true, p->shift, c); /* c[0], d[1]'s code, goes into the header */
    uint64_t co = best_widths(c + 1, n - 2, &wo) + 8 * uvarint_len(c[0]);
    p->dod = co < cd;
    p->w = p->dod ? wo : wd;
    p->cost = (p->dod ? co : cd) + 8 * (v0 + 1);
    if (!p->dod)
        memcpy(c, tmp, (n - 1) * sizeof(*c));
}

void ps_float_dense_encode(const int64_t *t, const uint64_t *bits, uint32_t n, int64_t tbase, ps_buf_t *out)
{
    ps_put_uvarint(out, n);
    ps_put_varint(out, t[0] - tbase);
    uint64_t *best = ps_xmalloc((size_t)n * sizeof(uint64_t) * 4 + 8);
    uint64_t *c = best + n, *tmp = c + n, *gcodes = tmp + n;
    int64_t *m = ps_xmalloc((size_t)n * sizeof(int64_t) + 8), *bm = ps_xmalloc((size_t)n * sizeof(int64_t) + 8);

    /* values: XOR first, then the smallest e of kind 1, or of kind 2 if kind 1 has none (a
     * decimal of kind 1 is rarely also one of kind 2 with a smaller e: not worth a pass) */
    vplan_t bp = {.kind = KIND_XOR};
    if (n >= 2) {
        for (uint32_t i = 1; i < n; i++)
            best[i - 1] = bits[i] ^ bits[i - 1];
        bp.shift = ctz_or(best, n - 1);
        for (uint32_t i = 0; i + 1 < n; i++)
            best[i] >>= bp.shift;
        bp.cost = best_widths(best, n - 1, &bp.w) + 8 * 8;
    }
    bool found = false;
    for (int kind = KIND_DIV; kind <= KIND_MUL && n >= 2 && !found; kind++) {
        for (unsigned e = kind == KIND_MUL ? 1 : 0; e <= E_MAX; e++) {
            if (!to_decimal(bits, n, kind, e, m))
                continue;
            vplan_t p = {.kind = kind, .e = e};
            found = true;
            dec_plan(m, n, &p, c, tmp);
            if (p.cost < bp.cost) {
                bp = p;
                memcpy(best, c, (n - 1) * sizeof(*c));
                memcpy(bm, m, n * sizeof(*m));
            }
            break;
        }
    }
    ps_buf_putc(out, (uint8_t)(bp.kind | (bp.dod ? 4 : 0) | bp.e << 3));
    if (bp.kind == KIND_XOR) {
        uint8_t b8[8];
        for (int i = 0; i < 8; i++)
            b8[i] = (uint8_t)(bits[0] >> (56 - 8 * i));
        ps_buf_append(out, b8, 8);
    } else {
        ps_put_varint(out, bm[0]);
    }
    /* timestamps: deltas of deltas, or offsets from the grid t0 + i * step (a jittered scrape
     * then costs one code, not two) */
    widths_t tw = {0, 0};
    bool grid = false;
    uint64_t tfield = n >= 2 ? (uint64_t)(t[1] - t[0]) : 0;
    if (n >= 3) {
        for (uint32_t i = 2; i < n; i++)
            tmp[i - 2] = zz((t[i] - t[i - 1]) - (t[i - 1] - t[i - 2]));
        uint64_t cdod = best_widths(tmp, n - 2, &tw);
        int64_t span = t[n - 1] - t[0], step = (span + (int64_t)(n - 1) / 2) / (int64_t)(n - 1);
        for (uint32_t i = 1; i < n; i++)
            gcodes[i - 1] = zz(t[i] - (t[0] + (int64_t)i * step));
        widths_t gw;
        uint64_t cgrid = best_widths(gcodes, n - 1, &gw) + 8 * uvarint_len((uint64_t)step);
        if (cgrid < cdod + 8 * uvarint_len(tfield)) {
            grid = true;
            tw = gw;
            tfield = (uint64_t)step;
            memcpy(tmp, gcodes, (n - 1) * sizeof(*tmp));
        }
    }
    if (n >= 2) {
        ps_put_uvarint(out, tfield);
        ps_buf_putc(out, (uint8_t)bp.shift);
        ps_buf_putc(out, bp.w.w1);
        ps_buf_putc(out, bp.w.w2);
        if (bp.dod)
            ps_put_uvarint(out, best[0]);
    }
    if (n >= 3) {
        ps_buf_putc(out, (uint8_t)(tw.w1 | (grid ? 0x80 : 0)));
        ps_buf_putc(out, tw.w2);
    }
    bw_t w = {out, 0, 0};
    bw_room(&w, (uint64_t)n * 2 * 65);
    for (uint32_t i = grid ? 1 : 2; i < n; i++)
        put_code(&w, tw, tmp[i - (grid ? 1 : 2)]);
    for (uint32_t i = bp.dod ? 2 : 1; i < n; i++)
        put_code(&w, bp.w, best[i - 1]);
    bw_end(&w);
    free(best);
    free(m);
    free(bm);
}

/* ---- decoding ---- */

static int fail(ps_err_t *err, const char *what, size_t at)
{
    return ps_err_set(err, PS_ECORRUPT, "fdense: %s at byte %zu", what, at);
}

int ps_float_dense_decode(const void *p, size_t len, int64_t tbase, int64_t **tout, uint64_t **bout, uint32_t *nout,
                          ps_err_t *err)
{
    *tout = NULL;
    *bout = NULL;
    *nout = 0;
    const uint8_t *b = p;
    ps_dec_t d;
    ps_dec_init(&d, b, len);
    uint64_t n = ps_dec_uvarint(&d);
    if (d.err || n < 1 || n > PS_FLOAT_DENSE_MAX_SAMPLES)
        return fail(err, "bad sample count", 0);
    int64_t t0 = ps_dec_varint(&d);
    if (d.err)
        return fail(err, "bad t0", (size_t)(d.p - b));
    if (tbase < -PS_FLOAT_DENSE_T_MAX || tbase > PS_FLOAT_DENSE_T_MAX || t0 < -2 * PS_FLOAT_DENSE_T_MAX ||
        t0 > 2 * PS_FLOAT_DENSE_T_MAX || tbase + t0 < -PS_FLOAT_DENSE_T_MAX || tbase + t0 > PS_FLOAT_DENSE_T_MAX)
        return fail(err, "t0 out of range", (size_t)(d.p - b));
    t0 += tbase;
    if (ps_dec_left(&d) < 1)
        return fail(err, "truncated", len);
    uint8_t mode = *ps_dec_bytes(&d, 1);
    int kind = mode & 3;
    bool dod = mode & 4;
    unsigned e = mode >> 3;
    if (kind > KIND_MUL || e > E_MAX || (kind == KIND_XOR && (dod || e)) || (kind == KIND_MUL && e == 0))
        return fail(err, "bad mode", (size_t)(d.p - b) - 1);
    uint64_t v0 = 0;
    int64_t m = 0;
    if (kind == KIND_XOR) {
        if (ps_dec_left(&d) < 8)
            return fail(err, "truncated", len);
        const uint8_t *q = ps_dec_bytes(&d, 8);
        for (int i = 0; i < 8; i++)
            v0 = v0 << 8 | q[i];
    } else {
        m = ps_dec_varint(&d);
        if (d.err || m < -M_MAX || m > M_MAX)
            return fail(err, "bad first value", (size_t)(d.p - b));
        v0 = to_bits(dec_value(kind, m, e));
    }
    uint64_t td1 = 0, c1 = 0; /* c1: with dod, the code of d[1] */
    unsigned shift = 0;
    widths_t vw = {0, 0}, tw = {0, 0};
    bool grid = false;
    if (n >= 2) {
        td1 = ps_dec_uvarint(&d);
        if (d.err || td1 < 1 || td1 > (uint64_t)(PS_FLOAT_DENSE_T_MAX - t0))
            return fail(err, "bad second timestamp", (size_t)(d.p - b));
        if (ps_dec_left(&d) < 3)
            return fail(err, "truncated", len);
        const uint8_t *q = ps_dec_bytes(&d, 3);
        shift = q[0];
        vw = (widths_t){q[1], q[2]};
        if (shift > 63 || vw.w2 > 64 || vw.w1 > vw.w2 || (kind == KIND_XOR && shift + vw.w2 > 64))
            return fail(err, "bad value widths", (size_t)(q - b));
        if (dod) {
            c1 = ps_dec_uvarint(&d);
            if (d.err)
                return fail(err, "bad first delta", (size_t)(d.p - b));
        }
        if (shift != 0 && vw.w2 == 0 && c1 == 0) /* the writer shifts nonzero codes only */
            return fail(err, "bad value widths", (size_t)(q - b));
    }
    if (n >= 3) {
        if (ps_dec_left(&d) < 2)
            return fail(err, "truncated", len);
        const uint8_t *q = ps_dec_bytes(&d, 2);
        grid = q[0] & 0x80;
        tw = (widths_t){q[0] & 0x7f, q[1]};
        if (tw.w2 > 64 || tw.w1 > tw.w2 || (grid && tw.w2 == 0)) /* a grid of no offsets is a dod of 0 */
            return fail(err, "bad timestamp widths", (size_t)(q - b));
    }
    size_t start = (size_t)(d.p - b);
    br_t r = {d.p, ps_dec_left(&d) * 8, 0, 0};
    int64_t *t = ps_xmalloc(n * sizeof(*t));
    uint64_t *v = ps_xmalloc(n * sizeof(*v));
    const char *why = NULL;
    t[0] = t0;
    v[0] = v0;
    if (n >= 2 && !grid)
        t[1] = t0 + (int64_t)td1;
    int64_t delta = (int64_t)td1;
    for (uint64_t i = grid ? 1 : 2; i < n && !why; i++) {
        int64_t dd = unzz(get_code(&r, tw)), at;
        if (r.err)
            break;
        if (grid) { /* t0 + i * step + offset, each step checked */
            if (__builtin_mul_overflow((int64_t)i, delta, &at) || __builtin_add_overflow(at, t0, &at) ||
                __builtin_add_overflow(at, dd, &at) || at <= t[i - 1] || at > PS_FLOAT_DENSE_T_MAX)
                why = "timestamps do not increase or out of range";
            t[i] = at;
            continue;
        }
        /* delta and t stay within ±2 * PS_FLOAT_DENSE_T_MAX: no overflow */
        if (dd < -2 * PS_FLOAT_DENSE_T_MAX || dd > 2 * PS_FLOAT_DENSE_T_MAX || delta + dd < 1 ||
            delta + dd > PS_FLOAT_DENSE_T_MAX - t[i - 1]) {
            why = "timestamps do not increase or out of range";
            break;
        }
        delta += dd;
        t[i] = t[i - 1] + delta;
    }
    int64_t dprev = 0;
    for (uint64_t i = 1; i < n && !why && !r.err; i++) {
        uint64_t c = dod && i == 1 ? c1 : get_code(&r, vw);
        if (r.err)
            break;
        if (kind == KIND_XOR) {
            v[i] = v[i - 1] ^ (c << shift);
            continue;
        }
        int64_t x = unzz(c);
        if (x < -(M_MAX << 2 >> shift) || x > (M_MAX << 2 >> shift)) {
            why = "value out of range";
            break;
        }
        x = (int64_t)((uint64_t)x << shift); /* |x| <= 2^55: no wrap */
        int64_t di = dod ? dprev + x : x;
        if (di < -2 * M_MAX || di > 2 * M_MAX || m + di < -M_MAX || m + di > M_MAX) {
            why = "value out of range";
            break;
        }
        dprev = di;
        m += di;
        v[i] = to_bits(dec_value(kind, m, e));
    }
    if (!why && r.err)
        why = r.err == 2 ? "a wide code that fits the narrow width" : "truncated";
    if (!why && (r.nbits - r.pos >= 8 || (r.pos < r.nbits && br_get(&r, (unsigned)(r.nbits - r.pos)) != 0)))
        why = "bytes or nonzero bits after the samples";
    if (why) {
        free(t);
        free(v);
        return fail(err, why, start + r.pos / 8);
    }
    *tout = t;
    *bout = v;
    *nout = (uint32_t)n;
    return 0;
}

int ps_float_dense_to_xor(const void *p, size_t len, int64_t tbase, ps_buf_t *out, ps_err_t *err)
{
    int64_t *t;
    uint64_t *v;
    uint32_t n;
    int ret = ps_float_dense_decode(p, len, tbase, &t, &v, &n, err);
    if (ret)
        return ret;
    size_t at = out->len;
    ps_xor_app_t a;
    ps_xor_app_init(&a, out);
    ps_err_t why;
    for (uint32_t i = 0; i < n && ret == 0; i++)
        ret = ps_xor_app_append(&a, t[i], from_bits(v[i]), &why);
    free(t);
    free(v);
    if (ret) {
        out->len = at;
        return ps_err_set(err, PS_ECORRUPT, "fdense: not a XOR chunk: %s", why.msg);
    }
    return 0;
}
