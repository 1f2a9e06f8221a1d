#include "mem.h"

#include <malloc.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

static void oom(size_t n)
{
    fprintf(stderr, "profstore: out of memory allocating %zu bytes\n", n);
    abort();
}

void *ps_xmalloc(size_t n)
{
    void *p = malloc(n == 0 ? 1 : n);
    if (p == NULL)
        oom(n);
    return p;
}

void *ps_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n == 0 ? 1 : n, size == 0 ? 1 : size);
    if (p == NULL)
        oom(n * size);
    return p;
}

void *ps_xcalloc_lines(size_t n, size_t size)
{
    n = n == 0 ? 1 : n;
    size = size == 0 ? 1 : size;
    if (n > (SIZE_MAX - 63) / size) /* calloc's own check, which ps_xcalloc relies on */
        oom(SIZE_MAX);
    size_t bytes = (n * size + 63) & ~(size_t)63; /* aligned_alloc: a multiple of the alignment */
    void *p = aligned_alloc(64, bytes);
    if (p == NULL)
        oom(bytes);
    memset(p, 0, bytes);
    return p;
}

void *ps_xrealloc(void *p, size_t n)
{
    p = realloc(p, n == 0 ? 1 : n);
    if (p == NULL)
        oom(n);
    return p;
}

char *ps_xstrndup(const char *s, size_t n)
{
    char *d = ps_xmalloc(n + 1);
    memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* From 4 MiB a buffer's memory is advised to the kernel as huge pages (MADV_HUGEPAGE: transparent
 * huge pages in their "madvise" mode, the usual default, take it): the 19 MB answer of 10^6 label
 * values faults ~10 pages of 2 MiB instead of 4,800 of 4 KiB, and is unmapped at once (its walk
 * and JSON: 55 -> 42 ms of CPU). The advice covers the whole allocation, page-rounded: at this size
 * glibc gives it a mapping of its own, which an advice cut short would split in two, and a split
 * mapping is copied by the next realloc instead of moved (mremap). Past 4 MiB a buffer grows to
 * 32 MiB at once: each move by realloc splits its huge pages again (the kernel moves them whole
 * only to an address aligned as before), and untouched pages of the mapping cost no memory. */
#define BUF_HUGE_MIN ((size_t)4 << 20)
#define BUF_HUGE_STEP ((size_t)32 << 20)

static void buf_advise_huge(void *p)
{
#ifdef MADV_HUGEPAGE
    static size_t page;
    if (page == 0)
        page = (size_t)sysconf(_SC_PAGESIZE);
    uintptr_t a = (uintptr_t)p & ~(uintptr_t)(page - 1);
    uintptr_t e = ((uintptr_t)p + malloc_usable_size(p) + page - 1) & ~(uintptr_t)(page - 1);
    (void)madvise((void *)a, e - a, MADV_HUGEPAGE); /* a hint: refused (EINVAL without THP), nothing changes */
#else
    (void)p;
#endif
}

uint8_t *ps_buf_grow(ps_buf_t *b, size_t n)
{
    if (b->cap - b->len < n) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap - b->len < n)
            cap *= 2;
        if (cap >= BUF_HUGE_MIN && b->cap < BUF_HUGE_MIN && cap < BUF_HUGE_STEP)
            cap = BUF_HUGE_STEP;
        b->data = ps_xrealloc(b->data, cap);
        b->cap = cap;
        if (cap >= BUF_HUGE_MIN)
            buf_advise_huge(b->data);
    }
    return b->data + b->len;
}

void ps_buf_dispose(ps_buf_t *b)
{
    free(b->data);
    b->data = NULL;
    b->len = b->cap = 0;
}

void ps_buf_printf(ps_buf_t *b, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    if (n <= 0)
        return;
    ps_buf_reserve(b, (size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf((char *)b->data + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void ps_buf_put_utf8(ps_buf_t *b, uint32_t cp)
{
    if (cp < 0x80) {
        ps_buf_putc(b, (uint8_t)cp);
    } else if (cp < 0x800) {
        ps_buf_putc(b, (uint8_t)(0xc0 | (cp >> 6)));
        ps_buf_putc(b, (uint8_t)(0x80 | (cp & 0x3f)));
    } else if (cp < 0x10000) {
        ps_buf_putc(b, (uint8_t)(0xe0 | (cp >> 12)));
        ps_buf_putc(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
        ps_buf_putc(b, (uint8_t)(0x80 | (cp & 0x3f)));
    } else {
        ps_buf_putc(b, (uint8_t)(0xf0 | (cp >> 18)));
        ps_buf_putc(b, (uint8_t)(0x80 | ((cp >> 12) & 0x3f)));
        ps_buf_putc(b, (uint8_t)(0x80 | ((cp >> 6) & 0x3f)));
        ps_buf_putc(b, (uint8_t)(0x80 | (cp & 0x3f)));
    }
}

/* Whether none of the 8 bytes of x needs a JSON escape (< 0x20, '"' or '\\'): the tests of "a byte
 * < 0x20" and "a zero byte" (of x ^ the quote, x ^ the backslash) a word at a time, exact as tests
 * of any byte (Bit Twiddling Hacks' hasless and haszero; bytes >= 0x80 never count). */
static inline bool json_plain8(uint64_t x)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    uint64_t q = x ^ (ones * '"'), bs = x ^ (ones * '\\');
    /* ~q and ~bs have ~x's high bits: '"' and '\\' are below 0x80 */
    return (((x - ones * 0x20) | (q - ones) | (bs - ones)) & ~x & high) == 0;
}

void ps_buf_json_str(ps_buf_t *b, const char *s, size_t n)
{
    static const char hex[] = "0123456789abcdef";
    static const uint8_t plain[256] = { /* 1: written as it is (all but controls, " and \\) */
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
        1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
        1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1,
    };
    /* the common case, nothing to escape: the bytes tested and copied 8 at a time into the room of
     * the whole string (a million label values are 19 MB of these) */
    uint8_t *d = ps_buf_reserve(b, n + 2);
    d[0] = '"';
    size_t k = 0;
    uint64_t x;
    for (; k + 8 <= n; k += 8) {
        memcpy(&x, s + k, 8);
        if (!json_plain8(x))
            break;
        memcpy(d + 1 + k, &x, 8);
    }
    if (k < n && n >= 8 && k + 8 > n) { /* the last bytes: the word that ends the string, overlapping */
        memcpy(&x, s + n - 8, 8);
        if (json_plain8(x)) {
            memcpy(d + 1 + n - 8, &x, 8);
            k = n;
        }
    }
    while (k < n && plain[(unsigned char)s[k]]) {
        d[1 + k] = (uint8_t)s[k];
        k++;
    }
    if (k == n) {
        d[1 + n] = '"';
        b->len += n + 2;
        return;
    }
    b->len += k + 1;
    for (size_t i = k; i < n; i++) {
        size_t run = i; /* the bytes after an escape that stay as they are, appended at once */
        while (run < n && plain[(unsigned char)s[run]])
            run++;
        if (run > i) {
            ps_buf_append(b, s + i, run - i);
            if (run == n)
                break;
            i = run;
        }
        unsigned char c = (unsigned char)s[i];
        switch (c) {
        case '"': ps_buf_append(b, "\\\"", 2); break;
        case '\\': ps_buf_append(b, "\\\\", 2); break;
        case '\n': ps_buf_append(b, "\\n", 2); break;
        case '\r': ps_buf_append(b, "\\r", 2); break;
        case '\t': ps_buf_append(b, "\\t", 2); break;
        default:
            if (c < 0x20) {
                char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
                ps_buf_append(b, e, 6);
            } else {
                ps_buf_putc(b, c);
            }
        }
    }
    ps_buf_putc(b, '"');
}

struct ps_arena_block {
    ps_arena_block_t *next;
    size_t size, used;
    size_t mapped; /* ps_arena_big_*: the bytes mmap'd for it (munmap, not free); else 0 */
    _Alignas(16) unsigned char data[];
};

static void block_free(ps_arena_block_t *b)
{
    if (b->mapped)
        munmap(b, b->mapped);
    else
        free(b);
}

void *ps_arena_alloc(ps_arena_t *a, size_t n)
{
    n = (n + 15) & ~(size_t)15;
    ps_arena_block_t *b = a->head;
    if (b == NULL || b->size - b->used < n) {
        size_t size = b ? b->size * 2 : 4096;
        if (size > (1u << 20))
            size = 1u << 20;
        if (size < n)
            size = n;
        ps_arena_block_t *nb = ps_xmalloc(sizeof(*nb) + size);
        nb->size = size;
        nb->used = 0;
        nb->mapped = 0;
        if (b != NULL && n > b->size / 2 && b->size - b->used > 256) {
            /* big request: put the block behind the head so the head keeps serving small ones */
            nb->next = b->next;
            b->next = nb;
        } else {
            nb->next = b;
            a->head = nb;
        }
        b = nb;
    }
    void *p = b->data + b->used;
    b->used += n;
    a->used_total += n;
    return p;
}

void *ps_arena_calloc(ps_arena_t *a, size_t n, size_t size)
{
    if (size != 0 && n > SIZE_MAX / size)
        oom(SIZE_MAX);
    void *p = ps_arena_alloc(a, n * size);
    memset(p, 0, n * size);
    return p;
}

char *ps_arena_strndup(ps_arena_t *a, const char *s, size_t n)
{
    char *d = ps_arena_alloc(a, n + 1);
    if (n)
        memcpy(d, s, n);
    d[n] = '\0';
    return d;
}

/* Big buffers are mmap'd themselves (not left to malloc, whose dynamic mmap threshold would put
 * them on the heap, grow them by copying and keep their pages): growing is mremap, freeing munmap.
 * Below BIG_MAP_MIN they come from malloc: every mmap, mremap and munmap in a process with several
 * threads costs a TLB shootdown on every other CPU (an IPI each; under perf, 7% of the server's
 * CPU went to mremap when a profile's gunzip buffer was mapped and grown page by page). */
#define BIG_MAP_MIN ((size_t)1 << 20)

static size_t mapped_size(size_t n)
{
    static size_t page;
    if (page == 0) {
        long ps = sysconf(_SC_PAGESIZE);
        page = ps > 0 ? (size_t)ps : 4096;
    }
    size_t total = sizeof(ps_arena_block_t) + n;
    if (total < n)
        oom(n);
    return (total + page - 1) / page * page;
}

static ps_arena_block_t *big_map(size_t n)
{
    size_t len = mapped_size(n);
    ps_arena_block_t *b = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (b == MAP_FAILED)
        oom(len);
    b->mapped = len;
    return b;
}

void *ps_arena_big_alloc(size_t n)
{
    ps_arena_block_t *b;
    if (n >= BIG_MAP_MIN) {
        b = big_map(n);
    } else {
        b = ps_xmalloc(sizeof(*b) + n);
        b->mapped = 0;
    }
    b->next = NULL;
    b->size = n;
    b->used = 0;
    return b->data;
}

static ps_arena_block_t *block_of(void *p)
{
    return (ps_arena_block_t *)((unsigned char *)p - offsetof(ps_arena_block_t, data));
}

void *ps_arena_big_realloc(void *p, size_t n)
{
    ps_arena_block_t *b = block_of(p);
    if (b->mapped) {
        size_t len = mapped_size(n);
        if (len != b->mapped) {
            b = mremap(b, b->mapped, len, MREMAP_MAYMOVE);
            if (b == MAP_FAILED)
                oom(len);
            b->mapped = len;
        }
    } else if (n >= BIG_MAP_MIN) { /* outgrows malloc: copied once into its own mapping */
        ps_arena_block_t *nb = big_map(n);
        memcpy(nb->data, b->data, b->size < n ? b->size : n);
        nb->next = b->next;
        nb->used = b->used;
        free(b);
        b = nb;
    } else {
        if (sizeof(*b) + n < n)
            oom(n);
        b = ps_xrealloc(b, sizeof(*b) + n);
    }
    b->size = n;
    return b->data;
}

void ps_arena_big_free(void *p)
{
    if (p != NULL)
        block_free(block_of(p));
}

void ps_arena_big_adopt(ps_arena_t *a, void *p, size_t used)
{
    ps_arena_block_t *b = block_of(p);
    b->used = b->size; /* nothing more is handed out of it */
    a->used_total += used;
    if (a->head == NULL) { /* a reset would keep it: give the arena a small head of its own */
        ps_arena_alloc(a, 16);
        a->used_total -= 16;
    }
    b->next = a->head->next;
    a->head->next = b;
}

void ps_arena_reset(ps_arena_t *a)
{
    ps_arena_block_t *b = a->head;
    if (b == NULL)
        return;
    /* keep the last (oldest, smallest) block only if it is the only one; else keep the biggest head */
    ps_arena_block_t *keep = b;
    b = b->next;
    while (b != NULL) {
        ps_arena_block_t *n = b->next;
        block_free(b);
        b = n;
    }
    keep->next = NULL;
    keep->used = 0;
    a->head = keep;
    a->used_total = 0;
}

void ps_arena_dispose(ps_arena_t *a)
{
    ps_arena_block_t *b = a->head;
    while (b != NULL) {
        ps_arena_block_t *n = b->next;
        block_free(b);
        b = n;
    }
    a->head = NULL;
    a->used_total = 0;
}

void ps_arena_absorb(ps_arena_t *dst, ps_arena_t *src)
{
    ps_arena_block_t *first = src->head;
    if (first == NULL)
        return;
    ps_arena_block_t *last = first;
    while (last->next != NULL)
        last = last->next;
    if (dst->head == NULL) {
        dst->head = first;
    } else { /* behind dst's head, which goes on serving dst */
        last->next = dst->head->next;
        dst->head->next = first;
    }
    dst->used_total += src->used_total;
    src->head = NULL;
    src->used_total = 0;
}
