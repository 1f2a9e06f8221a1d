/*
 * xorchunk.c - the float chunk encoding: Prometheus' XOR chunk (tsdb/chunkenc/xor.go, Gorilla),
 * byte for byte. This comment is the specification; docs/FORMAT.md repeats it.
 *
 * CHUNK
 * ┌────────────┬──────────────────────────────────────────────────────────────┐
 * │ n <u16 BE> │ samples <a bit stream, most significant bit of a byte first> │
 * └────────────┴──────────────────────────────────────────────────────────────┘
 *   n        number of samples, 0..65535 (a stored chunk has at least 1).
 *   sample 0 t0 <varint, zigzag> v0 <64 bits: the float64's bits as they are>
 *   sample 1 t1 - t0 <uvarint, > 0> value
 *   sample i >= 2: dod = (t[i] - t[i-1]) - (t[i-1] - t[i-2]), the delta of delta, then value:
 *              0                        dod == 0
 *              10   <14 bits>           -8191 <= dod <= 8192
 *              110  <17 bits>           -65535 <= dod <= 65536
 *              1110 <20 bits>           -524287 <= dod <= 524288
 *              1111 <64 bits>           any other dod
 *            k bits are dod in two's complement, cut to k bits; a pattern above 2^(k-1) is
 *            negative (subtract 2^k), 2^(k-1) itself is +2^(k-1).
 *   value    x = bits(v[i]) XOR bits(v[i-1]); lz, tz its leading, trailing zero bits, lz capped
 *            at 31. The window (L, T) is that of the last value written with a header:
 *              0                                         x == 0: the same value
 *              10  <64-L-T bits: x >> T>                 lz >= L and tz >= T: the window reused
 *              11  <5 bits: lz> <6 bits: m> <m bits: x >> tz>   a new window L = lz, T = tz,
 *                                                        m = 64 - lz - tz (64 written as 0)
 *            The first nonzero x always gets a header. A reader starts with L = T = 0 (a reuse
 *            there reads 64 bits, as Prometheus' iterator does) and fails when lz + m > 64.
 *   t        milliseconds since the epoch; strictly increasing (no int64 overflow).
 *   end      zero bits up to the byte's end; and one more zero byte when the stream ends on a
 *            byte boundary after a field of 8, 16, ..., 64 bits (the v0 bits, m or 64-L-T bits
 *            that are a multiple of 8): Prometheus' bstream.writeByte leaves that byte, so a
 *            1-sample chunk is 2 + varint + 8 + 1 bytes. Nothing else follows.
 *
 * A writer cuts chunks at 120 samples (PS_XOR_SAMPLES_PER_CHUNK), as Prometheus does.
 *
 * EXAMPLE: the 3 samples of gotarget_kernel_iterations_total in
 * testdata/prometheus/remote-read-response-01.json, 1 s apart. 24 bytes:
 *
 *   00 03                     n = 3
 *   84 cf fd b3 c5 68         t0 = 1796021924802 ms: varint of zigzag 3592043849604
 *   40 f3 c4 50 00 00 00 00   v0 = 80965.0
 *   e8 07                     t1 - t0 = 1000 ms
 *   e6 4e dd c8 a9 ec         46 bits and 2 zero bits to the end of the byte:
 *                               11 10011 001001 110110111  v1 = 81394.0: x = 0x00001b7000000000,
 *                                                          new window lz 19, m 9, tz 36
 *                               0                          t2: dod 0 (t2 - t1 = 1000 ms)
 *                               11 10010 001010 1001111011 v2 = 81801.0: x = 0x000027b000000000,
 *                                                          lz 18 < 19: new window lz 18, m 10
 *                               00                         end
 *
 * Reading validates every bit and fails with PS_ECORRUPT and the byte offset on: a stream
 * shorter than n samples, a varint that overflows or ends in a 00 byte, lz + m > 64, timestamps
 * that do not increase, n that does not match where the bytes end, nonzero end bits; and on what
 * Prometheus' writer never writes, though its reader accepts it: a dod in a wider bucket than it
 * needs, a zero x written as bits, a header whose window is not x's (lowest significant bit 0,
 * highest 0 below lz 31) or where the last window fits. (In the unit tests every single-bit flip
 * of a chunk fails or changes its samples.) Every chunk Prometheus' writer makes passes, also one
 * continued by Prometheus' Appender() (a reuse before any header: L = T = 0). There is no
 * checksum: a count too large by k passes when the zero end bits read as k samples (2 bits each:
 * dod 0, the same value), as in the example with n = 4.
 */
#include "storage/xorchunk.h"

#include <stdbool.h>
#include <string.h>

#include "core/varint.h"

/* ---- writing ---- */

/* Appends the n (1..64) low bits of u, most significant first, as Prometheus' bstream.writeBits:
 * a call of a multiple of 8 bits goes through writeByte, which leaves an empty byte after the
 * stream when it ends on a byte boundary. */
static void put_bits(ps_xor_app_t *a, uint64_t u, unsigned n)
{
    ps_buf_t *b = a->buf;
    bool whole = n % 8 == 0;
    ps_buf_reserve(b, 10); /* 64 bits over 9 new bytes, and the empty one */
    uint8_t *p = b->data;
    size_t len = b->len;
    unsigned fr = a->free_bits;
    if (n < 64)
        u &= (1ull << n) - 1;
    if (fr == 0) {
        p[len++] = 0;
        fr = 8;
    }
    if (n <= fr) { /* all into the last byte */
        p[len - 1] |= (uint8_t)(u << (fr - n));
        fr -= n;
    } else { /* its fr free bits, whole bytes, the rest at the top of a new byte */
        n -= fr;
        p[len - 1] |= (uint8_t)(u >> n);
        while (n >= 8) {
            n -= 8;
            p[len++] = (uint8_t)(u >> n);
        }
        fr = 0;
        if (n > 0) {
            p[len++] = (uint8_t)(u << (8 - n));
            fr = 8 - n;
        }
    }
    if (whole && fr == 0) {
        p[len++] = 0;
        fr = 8;
    }
    b->len = len;
    a->free_bits = (uint8_t)fr;
}

static void put_uvarint_bits(ps_xor_app_t *a, uint64_t v)
{
    while (v >= 0x80) {
        put_bits(a, (v & 0x7f) | 0x80, 8);
        v >>= 7;
    }
    put_bits(a, v, 8);
}

static void put_value(ps_xor_app_t *a, uint64_t vb)
{
    uint64_t x = vb ^ a->v;
    if (x == 0) {
        put_bits(a, 0, 1);
        return;
    }
    unsigned lz = (unsigned)__builtin_clzll(x), tz = (unsigned)__builtin_ctzll(x);
    if (lz > 31)
        lz = 31;
    if (a->leading != 0xff && lz >= a->leading && tz >= a->trailing) {
        put_bits(a, 2, 2);
        put_bits(a, x >> a->trailing, 64 - a->leading - a->trailing);
        return;
    }
    unsigned m = 64 - lz - tz;
    a->leading = (uint8_t)lz;
    a->trailing = (uint8_t)tz;
    put_bits(a, 3u << 11 | lz << 6 | (m & 63), 13);
    put_bits(a, x >> tz, m);
}

/* dod fits in k bits as Prometheus' bitRange has it: -(2^(k-1) - 1) .. 2^(k-1). */
static bool fits(int64_t dod, unsigned k)
{
    int64_t h = (int64_t)1 << (k - 1);
    return dod >= -(h - 1) && dod <= h;
}

void ps_xor_app_init(ps_xor_app_t *a, ps_buf_t *buf)
{
    memset(a, 0, sizeof(*a));
    a->buf = buf;
    a->start = buf->len;
    a->leading = 0xff;
    ps_buf_putc(buf, 0);
    ps_buf_putc(buf, 0);
}

int ps_xor_app_append(ps_xor_app_t *a, int64_t t, double v, ps_err_t *err)
{
    if (a->n >= PS_XOR_MAX_SAMPLES)
        return ps_err_set(err, PS_ETOOBIG, "xorchunk: the chunk is full (%d samples)", PS_XOR_MAX_SAMPLES);
    if (a->n > 0 && t <= a->t)
        return ps_err_set(err, PS_EOUTOFORDER, "xorchunk: timestamp %lld ms is not after %lld ms", (long long)t,
                          (long long)a->t);
    uint64_t vb, tdelta = 0;
    memcpy(&vb, &v, sizeof(vb));
    if (a->n == 0) {
        put_uvarint_bits(a, ps_zigzag(t));
        put_bits(a, vb, 64);
    } else if (a->n == 1) {
        tdelta = (uint64_t)t - (uint64_t)a->t;
        put_uvarint_bits(a, tdelta);
        put_value(a, vb);
    } else {
        tdelta = (uint64_t)t - (uint64_t)a->t;
        int64_t dod = (int64_t)(tdelta - a->tdelta);
        if (dod == 0) {
            put_bits(a, 0, 1);
        } else if (fits(dod, 14)) {
            put_bits(a, 2, 2);
            put_bits(a, (uint64_t)dod, 14);
        } else if (fits(dod, 17)) {
            put_bits(a, 6, 3);
            put_bits(a, (uint64_t)dod, 17);
        } else if (fits(dod, 20)) {
            put_bits(a, 14, 4);
            put_bits(a, (uint64_t)dod, 20);
        } else {
            put_bits(a, 15, 4);
            put_bits(a, (uint64_t)dod, 64);
        }
        put_value(a, vb);
    }
    a->n++;
    a->t = t;
    a->v = vb;
    a->tdelta = tdelta;
    a->buf->data[a->start] = (uint8_t)(a->n >> 8);
    a->buf->data[a->start + 1] = (uint8_t)a->n;
    return 0;
}

/* ---- reading ---- */

static void fail(ps_xor_iter_t *it, const char *why)
{
    if (it->err)
        return;
    it->err = PS_ECORRUPT;
    it->why = why;
    it->at = 2 + it->pos / 8;
}

/* The 8 bytes at p[off..], zeros past len. */
static uint64_t load64(const uint8_t *p, size_t len, size_t off)
{
    if (off + 8 <= len)
        return ps_get_be64(p + off);
    uint64_t w = 0;
    for (size_t i = 0; i < 8; i++)
        w = w << 8 | (off + i < len ? p[off + i] : 0);
    return w;
}

/* The next n (1..64) bits, or 0 and the error when fewer are left. */
static inline uint64_t get_bits(ps_xor_iter_t *it, unsigned n)
{
    size_t plen = it->len - 2, pos = it->pos;
    if (it->err || plen * 8 - pos < n) {
        fail(it, "the bits end before the last sample");
        return 0;
    }
    const uint8_t *p = it->p + 2;
    size_t byte = pos / 8;
    unsigned sh = pos % 8;
    uint64_t w;
    if (byte + 9 <= plen) { /* the common case: 9 bytes there (p[] >> 8 is 0 when sh is 0) */
        w = ps_get_be64(p + byte) << sh | (uint64_t)(p[byte + 8] >> (8 - sh));
    } else {
        w = load64(p, plen, byte);
        if (sh != 0)
            w = w << sh | (byte + 8 < plen ? (uint64_t)(p[byte + 8] >> (8 - sh)) : 0);
    }
    it->pos = pos + n;
    return n == 64 ? w : w >> (64 - n);
}

static uint64_t get_uvarint(ps_xor_iter_t *it)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        uint64_t c = get_bits(it, 8);
        if (it->err)
            return 0;
        if (shift == 63 && c > 1)
            break;
        v |= (c & 0x7f) << shift;
        if (c == 0 && shift > 0)
            break; /* Go's PutVarint writes no 0x00 after a continuation byte */
        if (c < 0x80)
            return v;
    }
    if (!it->err)
        fail(it, "a varint overflows 64 bits or ends in a zero byte");
    return 0;
}

/* A value. What Prometheus' writer cannot have written fails: a header whose window is not x's
 * (lowest significant bit 0, or highest 0 below the cap of 31), a header where the last window
 * fits, a zero x written as bits. */
static void get_value(ps_xor_iter_t *it)
{
    size_t at = it->pos;
    if (get_bits(it, 1) == 0) {
        it->last_bits = 1;
        return;
    }
    bool header = get_bits(it, 1) == 1;
    unsigned lz = 0, m = 0;
    if (header) {
        lz = (unsigned)get_bits(it, 5);
        m = (unsigned)get_bits(it, 6);
        if (m == 0)
            m = 64;
        if (it->err)
            return;
        if (lz + m > 64) {
            fail(it, "a value's leading and significant bits exceed 64");
            return;
        }
        if (it->window && lz >= it->leading && 64 - lz - m >= it->trailing) {
            it->pos = at;
            fail(it, "a value header where the last window fits");
            return;
        }
        it->leading = (uint8_t)lz;
        it->trailing = (uint8_t)(64 - lz - m);
        it->window = 1;
    }
    m = 64u - it->leading - it->trailing;
    uint64_t x = get_bits(it, m);
    if (it->err)
        return;
    if (x == 0 || (header && ((x & 1) == 0 || (lz < 31 && (x >> (m - 1)) == 0)))) {
        it->pos = at;
        fail(it, x == 0 ? "a value's XOR is 0 but written as bits" : "a value header's window is not the XOR's");
        return;
    }
    it->vbits ^= x << it->trailing;
    it->last_bits = (uint8_t)m;
}

/* t += tdelta, which must make it larger (no overflow). */
static void advance_t(ps_xor_iter_t *it)
{
    int64_t t = (int64_t)((uint64_t)it->t + it->tdelta);
    if (t <= it->t) {
        fail(it, "a timestamp is not after the previous one");
        return;
    }
    it->t = t;
}

/* After the last sample: zero bits to the byte's end, and the empty byte writeByte leaves. */
static void check_end(ps_xor_iter_t *it)
{
    size_t plen = it->len - 2, used = (it->pos + 7) / 8;
    if (it->pos % 8 == 0 && it->last_bits % 8 == 0) {
        used++;
        if (it->any_end && plen + 1 == used)
            return; /* Prometheus 3's writer leaves no empty byte */
    }
    if (plen < used) {
        fail(it, "the chunk ends before its last byte");
        return;
    }
    if (plen > used) {
        it->pos = used * 8;
        fail(it, "bytes after the last sample (sample count too small?)");
        return;
    }
    unsigned rest = (unsigned)(used * 8 - it->pos);
    if (rest > 0 && get_bits(it, rest) != 0) {
        it->pos -= rest;
        fail(it, "nonzero bits after the last sample");
        return;
    }
    it->pos -= rest; /* pos stays where the samples end: resume appends there */
}

void ps_xor_iter_init(ps_xor_iter_t *it, const void *p, size_t len)
{
    memset(it, 0, sizeof(*it));
    it->p = p;
    it->len = len;
    if (len < 2) {
        it->err = PS_ECORRUPT;
        it->why = "shorter than the 2-byte sample count";
        return;
    }
    it->n = ps_xor_count(p, len);
    if (it->n == 0 && len != 2)
        fail(it, "bytes after the sample count 0");
}

void ps_xor_iter_init_foreign(ps_xor_iter_t *it, const void *p, size_t len)
{
    ps_xor_iter_init(it, p, len);
    it->any_end = true;
}

int ps_xor_iter_next(ps_xor_iter_t *it)
{
    if (it->err || it->i >= it->n)
        return 0;
    if (it->i == 0) {
        it->t = ps_unzigzag(get_uvarint(it));
        it->vbits = get_bits(it, 64);
        it->last_bits = 64;
    } else {
        if (it->i == 1) {
            it->tdelta = get_uvarint(it);
        } else {
            unsigned k = 0;
            if (get_bits(it, 1) == 1) {
                if (get_bits(it, 1) == 0)
                    k = 14;
                else if (get_bits(it, 1) == 0)
                    k = 17;
                else
                    k = get_bits(it, 1) == 0 ? 20 : 64;
            }
            if (k != 0) {
                size_t at = it->pos;
                uint64_t d = get_bits(it, k);
                if (k < 64 && d > (1ull << (k - 1)))
                    d -= 1ull << k;
                int64_t dod = (int64_t)d;
                if (!it->err && (dod == 0 || (k > 14 && fits(dod, k == 17 ? 14 : k == 20 ? 17 : 20)))) {
                    it->pos = at;
                    fail(it, "a delta of delta in a wider bucket than it needs");
                }
                it->tdelta += d;
            }
        }
        if (!it->err)
            advance_t(it);
        get_value(it);
    }
    if (it->err)
        return 0;
    if (++it->i == it->n) {
        check_end(it);
        if (it->err)
            return 0;
    }
    memcpy(&it->v, &it->vbits, sizeof(it->v));
    return 1;
}

int ps_xor_iter_err(const ps_xor_iter_t *it, ps_err_t *err)
{
    if (!it->err)
        return 0;
    return ps_err_set_at(err, PS_ECORRUPT, it->at, "xorchunk: %s at byte %zu (after %u of %u samples)", it->why, it->at,
                         it->i, it->n);
}

int ps_xor_validate(const void *p, size_t len, ps_err_t *err)
{
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, p, len);
    while (ps_xor_iter_next(&it))
        ;
    if (it.err)
        return ps_xor_iter_err(&it, err);
    if (it.n == 0)
        return ps_err_set(err, PS_ECORRUPT, "xorchunk: no samples");
    return 0;
}

int ps_xor_app_resume(ps_xor_app_t *a, ps_buf_t *buf, size_t start, ps_err_t *err)
{
    if (start > buf->len)
        return ps_err_set(err, PS_EINVAL, "xorchunk: resume at %zu past the buffer's end %zu", start, buf->len);
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, buf->data + start, buf->len - start);
    while (ps_xor_iter_next(&it))
        ;
    if (it.err)
        return ps_xor_iter_err(&it, err);
    memset(a, 0, sizeof(*a));
    a->buf = buf;
    a->start = start;
    a->n = it.n;
    a->free_bits = (uint8_t)((buf->len - start - 2) * 8 - it.pos);
    /* no header read yet: the appender that never stopped has none either */
    a->leading = it.window ? it.leading : 0xff;
    a->trailing = it.trailing;
    a->t = it.t;
    a->tdelta = it.tdelta;
    a->v = it.vbits;
    return 0;
}
