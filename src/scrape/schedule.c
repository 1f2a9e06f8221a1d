/*
 * schedule.c - the scrape schedule: a binary min-heap by (due, seq) and the tick arithmetic
 * (see schedule.h).
 */
#include "schedule.h"

#include <stdlib.h>

#include "core/mem.h"
#include "core/timeutil.h"

void ps_sched_dispose(ps_sched_t *h)
{
    free(h->items);
    h->items = NULL;
    h->n = h->cap = 0;
    h->seq = 0;
}

void ps_sched_clear(ps_sched_t *h)
{
    h->n = 0;
}

static bool less(const ps_sched_item_t *a, const ps_sched_item_t *b)
{
    return a->due < b->due || (a->due == b->due && a->seq < b->seq);
}

static void swap(ps_sched_t *h, uint32_t a, uint32_t b)
{
    ps_sched_item_t x = h->items[a];
    h->items[a] = h->items[b];
    h->items[b] = x;
}

void ps_sched_push(ps_sched_t *h, uint32_t idx, int64_t due)
{
    if (h->n == h->cap) {
        h->cap = h->cap ? h->cap * 2 : 64;
        h->items = ps_xrealloc(h->items, h->cap * sizeof(ps_sched_item_t));
    }
    uint32_t i = h->n++;
    h->items[i] = (ps_sched_item_t){due, h->seq++, idx};
    while (i > 0 && less(&h->items[i], &h->items[(i - 1) / 2])) {
        swap(h, i, (i - 1) / 2);
        i = (i - 1) / 2;
    }
}

bool ps_sched_peek(const ps_sched_t *h, int64_t *due, uint32_t *idx)
{
    if (h->n == 0)
        return false;
    if (due)
        *due = h->items[0].due;
    if (idx)
        *idx = h->items[0].idx;
    return true;
}

uint32_t ps_sched_pop(ps_sched_t *h)
{
    uint32_t top = h->items[0].idx;
    h->items[0] = h->items[--h->n];
    for (uint32_t i = 0;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && less(&h->items[l], &h->items[m]))
            m = l;
        if (r < h->n && less(&h->items[r], &h->items[m]))
            m = r;
        if (m == i)
            break;
        swap(h, i, m);
        i = m;
    }
    return top;
}

int64_t ps_sched_first(uint64_t id, int64_t interval, int64_t now)
{
    int64_t iv = interval > 0 ? interval : PS_NS_PER_S;
    return now + (int64_t)(id % (uint64_t)iv);
}

int64_t ps_sched_next(int64_t due, int64_t interval, int64_t now)
{
    int64_t iv = interval > 0 ? interval : PS_NS_PER_S;
    int64_t k = due > now ? 1 : (now - due) / iv + 1;
    return due + k * iv;
}
