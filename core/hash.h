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

/** Hash of n bytes (stable across runs and versions: it is used in on-disk keys). */
uint64_t ps_hash64(const void *p, size_t n, uint64_t seed);

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
        if (s->hash == h && s->klen == klen && (klen == 0 || memcmp(s->key, key, klen) == 0))
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
