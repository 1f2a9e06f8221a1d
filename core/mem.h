/*
 * mem.h - allocation that aborts on out-of-memory (as h2o does), growable byte buffers, arenas.
 */
#ifndef PS_CORE_MEM_H
#define PS_CORE_MEM_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/** malloc/calloc/realloc that abort the process on failure; never return NULL. */
void *ps_xmalloc(size_t n);
void *ps_xcalloc(size_t n, size_t size);
/** ps_xcalloc aligned to a cache line (64 bytes): an array of 32-byte entries then has none
 *  across two lines (calloc gives 16-byte alignment: every other one was). */
void *ps_xcalloc_lines(size_t n, size_t size);
void *ps_xrealloc(void *p, size_t n);
char *ps_xstrndup(const char *s, size_t n);

/** A growable byte buffer. Zero-initialise (PS_BUF_INIT) before use; ps_buf_dispose frees it. */
typedef struct ps_buf {
    uint8_t *data;
    size_t len;
    size_t cap;
} ps_buf_t;
#define PS_BUF_INIT {NULL, 0, 0}

/** ps_buf_reserve when the room is not there: grows the buffer. */
uint8_t *ps_buf_grow(ps_buf_t *b, size_t n);
/** Makes room for n more bytes; returns a pointer to data + len. */
static inline uint8_t *ps_buf_reserve(ps_buf_t *b, size_t n)
{
    if (b->cap - b->len < n)
        return ps_buf_grow(b, n);
    return b->data + b->len;
}
static inline void ps_buf_append(ps_buf_t *b, const void *p, size_t n)
{
    if (n == 0)
        return;
    memcpy(ps_buf_reserve(b, n), p, n);
    b->len += n;
}
void ps_buf_dispose(ps_buf_t *b);
static inline void ps_buf_reset(ps_buf_t *b) { b->len = 0; }
static inline void ps_buf_putc(ps_buf_t *b, uint8_t c)
{
    if (b->len == b->cap)
        ps_buf_reserve(b, 1);
    b->data[b->len++] = c;
}
/** Appends a string literal (its length computed at compile time). */
#define PS_BUF_LIT(b, lit) ps_buf_append((b), (lit), sizeof(lit) - 1)
void ps_buf_printf(ps_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/** Appends code point cp (<= 0x10FFFF, not a surrogate: callers check) encoded as UTF-8. */
void ps_buf_put_utf8(ps_buf_t *b, uint32_t cp);
/** Appends s as a JSON string literal (with quotes), escaping as RFC 8259 requires. */
void ps_buf_json_str(ps_buf_t *b, const char *s, size_t n);

/**
 * A bump allocator: everything allocated from it is freed at once by ps_arena_dispose/reset.
 * Blocks grow geometrically; a large request gets a block of its own.
 */
typedef struct ps_arena_block ps_arena_block_t;
typedef struct ps_arena {
    ps_arena_block_t *head;
    size_t used_total; /* bytes handed out, for limits */
} ps_arena_t;
#define PS_ARENA_INIT {NULL, 0}

void *ps_arena_alloc(ps_arena_t *a, size_t n);     /* 16-byte aligned, uninitialised */
void *ps_arena_calloc(ps_arena_t *a, size_t n, size_t size);
char *ps_arena_strndup(ps_arena_t *a, const char *s, size_t n); /* NUL-terminated copy */
void ps_arena_reset(ps_arena_t *a);  /* keeps the first block */
/* A buffer that grows in place and may then become part of an arena (gunzip's output: growing
 * it by arena allocations would hold every smaller copy too). From 1 MiB they are mmap'd, so
 * growing them is mremap (no copy) and freeing one gives its memory back at once; smaller ones
 * are malloc'd (mapping calls cost every CPU a TLB shootdown). */
void *ps_arena_big_alloc(size_t n);
void *ps_arena_big_realloc(void *p, size_t n);
void ps_arena_big_free(void *p);
/** Hands p (from ps_arena_big_alloc) to a: freed with the arena's other blocks. */
void ps_arena_big_adopt(ps_arena_t *a, void *p, size_t used);
void ps_arena_dispose(ps_arena_t *a);
/** Moves every block of src into dst (what src handed out now lives as long as dst); src is left
 *  empty. For work done in a thread's own arena on behalf of dst's owner. */
void ps_arena_absorb(ps_arena_t *dst, ps_arena_t *src);

#endif
