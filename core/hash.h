/*
 * hash.h - a 64-bit non-cryptographic hash and an open-addressing hash map keyed by bytes.
 *
 * ps_hmap_t maps byte strings to uint64 values. Keys are copied into the map's own arena;
 * pointers returned by ps_hmap_key() stay valid until ps_hmap_clear/dispose.
 */
#ifndef PS_CORE_HASH_H
#define PS_CORE_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mem.h"

/* ps_hash64: a 64-bit multiply-mix hash over 8-byte words (in the spirit of wyhash/murmur
 * finalisers). Its output is part of the on-disk format (metadata and series hash keys): never
 * change it. */
static inline uint64_t ps_hash_mix_(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t ps_hash_rd64_(const uint8_t *p)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* one load (GCC left the loop below a byte at a time: a fifth of the writer's time) */
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
#else
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) /* little-endian, independent of host order */
        v = (v << 8) | p[i];
    return v;
#endif
}

/** Hash of n bytes (stable across runs and versions: it is used in on-disk keys). Inline: the
 *  writer hashes ~1,200 symbols, label lists and stack keys a pushed profile, most of them short
 *  (callgrind). */
static inline uint64_t ps_hash64(const void *data, size_t n, uint64_t seed)
{
    const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
    const uint8_t *p = data;
    uint64_t h = seed ^ ps_hash_mix_(seed ^ k0, (uint64_t)n ^ k1);
    while (n >= 16) {
        h = ps_hash_mix_(ps_hash_rd64_(p) ^ k1, ps_hash_rd64_(p + 8) ^ h);
        p += 16;
        n -= 16;
    }
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        a = ps_hash_rd64_(p);
        p += 8;
        n -= 8;
    }
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    /* the last n < 8 bytes as one little-endian word, read with at most two loads (the same value
     * as the loop below; a byte at a time was a third of the hash of a short symbol) */
    if (n >= 4) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + n - 4, 4);
        b = (uint64_t)lo | (((uint64_t)hi >> (8 * (8 - n))) << 32);
    } else if (n > 0) {
        b = (uint64_t)p[0] | (uint64_t)p[n / 2] << (8 * (n / 2)) | (uint64_t)p[n - 1] << (8 * (n - 1));
    }
#else
    for (size_t i = 0; i < n; i++)
        b |= (uint64_t)p[i] << (8 * i);
#endif
    h = ps_hash_mix_(a ^ k2 ^ h, b ^ k0);
    return ps_hash_mix_(h ^ k1, h ^ k2);
}


typedef struct ps_hmap_slot {
    uint64_t hash;
    const uint8_t *key; /* NULL = empty */
    uint32_t klen;
    uint64_t value;
} ps_hmap_slot_t;

typedef struct ps_hmap {
    ps_hmap_slot_t *slots;
    size_t cap;   /* power of two */
    size_t count;
    ps_arena_t keys;
} ps_hmap_t;

void ps_hmap_init(ps_hmap_t *m);
void ps_hmap_dispose(ps_hmap_t *m);
void ps_hmap_clear(ps_hmap_t *m);
/** Looks key up; returns true and sets *value when present. */
bool ps_hmap_get(const ps_hmap_t *m, const void *key, size_t klen, uint64_t *value);
/** Inserts or overwrites. */
void ps_hmap_put(ps_hmap_t *m, const void *key, size_t klen, uint64_t value);
/** ps_hmap_get and ps_hmap_put of a key whose hash the caller has already: h, ps_hash64(key, klen, 0)
 *  or another hash of the key's bytes, the same one for every get and put on that map. */
static inline bool ps_hmap_get_h(const ps_hmap_t *m, uint64_t h, const void *key, size_t klen, uint64_t *value);
void ps_hmap_put_h(ps_hmap_t *m, uint64_t h, const void *key, size_t klen, uint64_t value);
static inline uint32_t ps_hmap_rd32_(const uint8_t *p)
{
    uint32_t v;
    memcpy(&v, p, 4);
    return v;
}
/* Whether the n bytes at a and b are equal: up to 16 bytes with two loads each (overlapping
 * words, no call), longer ones by memcmp. Most symbol keys (functions, locations) are short. */
static inline __attribute__((always_inline)) bool ps_hmap_key_eq_(const uint8_t *a, const uint8_t *b, size_t n)
{
    if (n >= 8 && n <= 16)
        return ((ps_hash_rd64_(a) ^ ps_hash_rd64_(b)) | (ps_hash_rd64_(a + n - 8) ^ ps_hash_rd64_(b + n - 8))) == 0;
    if (n >= 4 && n < 8)
        return ((ps_hmap_rd32_(a) ^ ps_hmap_rd32_(b)) | (ps_hmap_rd32_(a + n - 4) ^ ps_hmap_rd32_(b + n - 4))) == 0;
    if (n < 4) {
        for (size_t i = 0; i < n; i++)
            if (a[i] != b[i])
                return false;
        return true;
    }
    return memcmp(a, b, n) == 0;
}
/** The slot of key (hash h), or the empty slot where it would go. Inline, as ps_hmap_get_h: a
 *  look-up that hits its first slot is a few instructions, a call's prologue and epilogue were a
 *  third of them (callgrind, the writer's symbol look-ups). */
static inline __attribute__((always_inline)) ps_hmap_slot_t *ps_hmap_find(const ps_hmap_t *m, uint64_t h,
                                                                          const void *key, size_t klen)
{
    size_t mask = m->cap - 1, i = h & mask;
    for (;;) {
        ps_hmap_slot_t *s = &m->slots[i];
        if (s->key == NULL)
            return s;
        if (s->hash == h && s->klen == klen && ps_hmap_key_eq_(s->key, key, klen))
            return s;
        i = (i + 1) & mask;
    }
}
static inline bool ps_hmap_get_h(const ps_hmap_t *m, uint64_t h, const void *key, size_t klen, uint64_t *value)
{
    const ps_hmap_slot_t *s = ps_hmap_find(m, h, key, klen);
    if (s->key == NULL)
        return false;
    *value = s->value;
    return true;
}
/** Starts loading the slot where a look-up of hash h begins: a caller with many keys to look up
 *  hashes and prefetches them all first, so the cache misses overlap instead of following each
 *  other (a look-up's time was mostly that first miss). */
static inline void ps_hmap_prefetch(const ps_hmap_t *m, uint64_t h)
{
    __builtin_prefetch(&m->slots[h & (m->cap - 1)]);
}
/** The step after ps_hmap_prefetch, a few keys later: reads the slot where a look-up of h begins
 *  (loaded by then) and starts loading its key; returns its value when the slot holds a key of
 *  hash h (most likely the one looked for), else UINT64_MAX. */
static inline uint64_t ps_hmap_prefetch_key(const ps_hmap_t *m, uint64_t h)
{
    const ps_hmap_slot_t *s = &m->slots[h & (m->cap - 1)];
    if (s->key == NULL || s->hash != h)
        return UINT64_MAX;
    __builtin_prefetch(s->key);
    if (s->klen > 64)
        __builtin_prefetch(s->key + 64);
    return s->value;
}
/** Approximate heap bytes used. */
size_t ps_hmap_bytes(const ps_hmap_t *m);

#endif
