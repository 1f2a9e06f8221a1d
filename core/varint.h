/*
 * varint.h - LEB128 varints, zigzag, big-endian fixed ints, and a bounds-checked decoder with a
 * sticky error (after Prometheus' Decbuf): once a read runs past the end or overflows, every later
 * read returns 0 and ps_dec_t.err stays set, so callers check once at the end.
 */
#ifndef PS_CORE_VARINT_H
#define PS_CORE_VARINT_H

#include <stdint.h>
#include <string.h>

#include "mem.h"

static inline uint64_t ps_zigzag(int64_t v) { return ((uint64_t)v << 1) ^ (uint64_t)(v >> 63); }
static inline int64_t ps_unzigzag(uint64_t v) { return (int64_t)(v >> 1) ^ -(int64_t)(v & 1); }

static inline void ps_put_uvarint(ps_buf_t *b, uint64_t v)
{
    uint8_t *p = ps_buf_reserve(b, 10);
    size_t n = 0;
    while (v >= 0x80) {
        p[n++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    p[n++] = (uint8_t)v;
    b->len += n;
}
static inline void ps_put_varint(ps_buf_t *b, int64_t v) { ps_put_uvarint(b, ps_zigzag(v)); }
/** Writes v's varint at p (room for 10 bytes) and returns the end: for a caller that reserved the
 *  room of several at once (ps_put_uvarint checks the room of each). */
static inline uint8_t *ps_enc_uvarint(uint8_t *p, uint64_t v)
{
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    return p;
}
static inline void ps_put_be64(ps_buf_t *b, uint64_t v)
{
    uint8_t *p = ps_buf_reserve(b, 8);
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
    b->len += 8;
}
static inline void ps_put_be32(ps_buf_t *b, uint32_t v)
{
    uint8_t *p = ps_buf_reserve(b, 4);
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (24 - 8 * i));
    b->len += 4;
}
static inline void ps_enc_be64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (56 - 8 * i));
}
static inline uint64_t ps_get_be64(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    uint64_t v; /* one load and a byte swap (GCC kept the loop below: ~50 instructions) */
    memcpy(&v, p, 8);
    return __builtin_bswap64(v);
#else
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v = (v << 8) | p[i];
    return v;
#endif
}
static inline uint32_t ps_get_be32(const uint8_t *p)
{
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | p[3];
}
/** Timestamps (signed ns) in keys: flip the sign bit so big-endian byte order is numeric order. */
static inline uint64_t ps_ts_key(int64_t ts) { return (uint64_t)ts ^ 0x8000000000000000ull; }
static inline int64_t ps_ts_unkey(uint64_t k) { return (int64_t)(k ^ 0x8000000000000000ull); }

typedef struct ps_dec {
    const uint8_t *p, *end;
    int err; /* sticky: nonzero once any read failed */
} ps_dec_t;

static inline void ps_dec_init(ps_dec_t *d, const void *p, size_t n)
{
    d->p = p;
    d->end = d->p + n;
    d->err = 0;
}
static inline size_t ps_dec_left(const ps_dec_t *d) { return (size_t)(d->end - d->p); }
static inline uint64_t ps_dec_uvarint(ps_dec_t *d)
{
    uint64_t v = 0;
    for (unsigned shift = 0; shift < 64; shift += 7) {
        if (d->err || d->p >= d->end) {
            d->err = 1;
            return 0;
        }
        uint8_t c = *d->p++;
        if (shift == 63 && c > 1) {
            d->err = 1;
            return 0;
        }
        v |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80)
            return v;
    }
    d->err = 1;
    return 0;
}
static inline int64_t ps_dec_varint(ps_dec_t *d) { return ps_unzigzag(ps_dec_uvarint(d)); }
static inline uint8_t ps_dec_u8(ps_dec_t *d)
{
    if (d->err || d->p >= d->end) {
        d->err = 1;
        return 0;
    }
    return *d->p++;
}
static inline uint64_t ps_dec_be64(ps_dec_t *d)
{
    if (d->err || ps_dec_left(d) < 8) {
        d->err = 1;
        return 0;
    }
    uint64_t v = ps_get_be64(d->p);
    d->p += 8;
    return v;
}
static inline uint32_t ps_dec_be32(ps_dec_t *d)
{
    if (d->err || ps_dec_left(d) < 4) {
        d->err = 1;
        return 0;
    }
    uint32_t v = ps_get_be32(d->p);
    d->p += 4;
    return v;
}
/** Returns a pointer to the next n bytes (borrowed from the input) or NULL (and sets err). */
static inline const uint8_t *ps_dec_bytes(ps_dec_t *d, size_t n)
{
    if (d->err || ps_dec_left(d) < n) {
        d->err = 1;
        return NULL;
    }
    const uint8_t *p = d->p;
    d->p += n;
    return p;
}

#endif
