#include "hash.h"

#include <stdlib.h>
#include <string.h>

/* two slots a cache line (ps_xcalloc_lines): a look-up's prefetch of its slot loads all of it */
_Static_assert(sizeof(ps_hmap_slot_t) == 32, "a hash map slot is half a cache line");

void ps_hmap_init(ps_hmap_t *m)
{
    m->cap = 64;
    m->count = 0;
    m->slots = ps_xcalloc_lines(m->cap, sizeof(*m->slots));
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
    m->slots = ps_xcalloc_lines(m->cap, sizeof(*m->slots));
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
