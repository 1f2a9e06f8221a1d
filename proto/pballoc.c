/*
 * pballoc.c - protobuf-c's allocator on an arena, with a budget (see pballoc.h).
 */
#include "pballoc.h"

#include <string.h>

static void *pb_alloc(void *data, size_t n)
{
    ps_pb_arena_t *a = data;
    if (n > a->budget) { /* budget <= SIZE_MAX / 2: the rounding below cannot overflow */
        a->over = true;
        return NULL;
    }
    n = n == 0 ? 8 : (n + 7) & ~(size_t)7; /* protobuf-c structs need no more than 8-byte alignment */
    if (n > a->budget - a->used) {
        a->over = true;
        return NULL;
    }
    a->used += n;
    if (n > 512)
        return ps_arena_alloc(a->arena, n);
    if (a->left < n) {
        a->cur = ps_arena_alloc(a->arena, a->chunk);
        a->left = a->chunk;
        if (a->chunk < (64u << 10))
            a->chunk *= 2;
    }
    void *p = a->cur;
    a->cur += n;
    a->left -= n;
    return p;
}

static void pb_free(void *data, void *p)
{
    (void)data;
    (void)p; /* freed with the arena */
}

void ps_pb_arena_init(ps_pb_arena_t *a, ps_arena_t *arena, size_t budget)
{
    memset(a, 0, sizeof(*a));
    a->base.alloc = pb_alloc;
    a->base.free = pb_free;
    a->base.allocator_data = a;
    a->arena = arena;
    a->chunk = 4096;
    a->budget = budget;
}
