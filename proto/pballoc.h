/*
 * pballoc.h - (private to proto/) protobuf-c's allocator on an arena, with a budget: unpacking
 * untrusted bytes can ask for far more memory than the input holds (repeated empty messages), so
 * every allocation counts against budget bytes, and past it unpack fails with over set. Small
 * allocations come from chunks of the arena (8-byte aligned); free is a no-op (the arena frees).
 */
#ifndef PS_PROTO_PBALLOC_H
#define PS_PROTO_PBALLOC_H

#include <protobuf-c/protobuf-c.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"

typedef struct ps_pb_arena {
    ProtobufCAllocator base; /* pass &base to the unpack functions */
    ps_arena_t *arena;
    uint8_t *cur;            /* current chunk for small allocations */
    size_t left;
    size_t chunk;            /* next chunk size */
    size_t used, budget;     /* budget <= SIZE_MAX / 2 */
    bool over;               /* the budget was exceeded */
} ps_pb_arena_t;

void ps_pb_arena_init(ps_pb_arena_t *a, ps_arena_t *arena, size_t budget);

#endif
