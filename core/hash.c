#include "hash.h"

#include <stdlib.h>
#include <string.h>

/* A 64-bit multiply-mix hash over 8-byte words (in the spirit of wyhash/murmur finalisers).
 * Its output is part of the on-disk format (metadata and series hash keys): never change it. */
static inline uint64_t mix(uint64_t a, uint64_t b)
{
    __uint128_t r = (__uint128_t)a * b;
    return (uint64_t)r ^ (uint64_t)(r >> 64);
}

static inline uint64_t rd64(const uint8_t *p)
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

uint64_t ps_hash64(const void *data, size_t n, uint64_t seed)
{
    const uint64_t k0 = 0xa0761d6478bd642full, k1 = 0xe7037ed1a0b428dbull, k2 = 0x8ebc6af09c88c6e3ull;
    const uint8_t *p = data;
    uint64_t h = seed ^ mix(seed ^ k0, (uint64_t)n ^ k1);
    while (n >= 16) {
        h = mix(rd64(p) ^ k1, rd64(p + 8) ^ h);
        p += 16;
        n -= 16;
    }
    uint64_t a = 0, b = 0;
    if (n >= 8) {
        a = rd64(p);
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
    h = mix(a ^ k2 ^ h, b ^ k0);
    return mix(h ^ k1, h ^ k2);
}

void ps_hmap_init(ps_hmap_t *m)
{
    m->cap = 64;
    m->count = 0;
    m->slots = ps_xcalloc(m->cap, sizeof(*m->slots));
    m->keys = (ps_arena_t)PS_ARENA_INIT;
}

void ps_hmap_dispose(ps_hmap_t *m)
{
    free(m->slots);
    m->slots = NULL;
    m->cap = m->count = 0;
    ps_arena_dispose(&m->keys);
}

void ps_hmap_clear(ps_hmap_t *m)
{
    ps_hmap_dispose(m);
    ps_hmap_init(m);
}

bool ps_hmap_get(const ps_hmap_t *m, const void *key, size_t klen, uint64_t *value)
{
    return ps_hmap_get_h(m, ps_hash64(key, klen, 0), key, klen, value);
}


static void grow(ps_hmap_t *m)
{
    ps_hmap_slot_t *old = m->slots;
    size_t ocap = m->cap;
    m->cap *= 2;
    m->slots = ps_xcalloc(m->cap, sizeof(*m->slots));
    for (size_t i = 0; i < ocap; i++) {
        if (old[i].key == NULL)
            continue;
        size_t mask = m->cap - 1, j = old[i].hash & mask;
        while (m->slots[j].key != NULL)
            j = (j + 1) & mask;
        m->slots[j] = old[i];
    }
    free(old);
}

void ps_hmap_put(ps_hmap_t *m, const void *key, size_t klen, uint64_t value)
{
    ps_hmap_put_h(m, ps_hash64(key, klen, 0), key, klen, value);
}

void ps_hmap_put_h(ps_hmap_t *m, uint64_t h, const void *key, size_t klen, uint64_t value)
{
    if ((m->count + 1) * 4 > m->cap * 3)
        grow(m);
    ps_hmap_slot_t *s = ps_hmap_find(m, h, key, klen);
    if (s->key == NULL) {
        uint8_t *k = ps_arena_alloc(&m->keys, klen ? klen : 1);
        if (klen)
            memcpy(k, key, klen);
        s->key = k;
        s->klen = (uint32_t)klen;
        s->hash = h;
        m->count++;
    }
    s->value = value;
}

size_t ps_hmap_bytes(const ps_hmap_t *m)
{
    return m->cap * sizeof(ps_hmap_slot_t) + m->keys.used_total;
}
