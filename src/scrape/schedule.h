/*
 * schedule.h - when each target is scraped (schedule.c), internal to src/scrape/.
 *
 * Targets wait in a binary min-heap of (due time, target index); equal due times come out in the
 * order they went in. A new target's first tick is spread over its interval by its hash (the same
 * target always gets the same offset, targets of one job do not all start at once); after that its
 * ticks are whole intervals apart, and ticks that passed while it could not run are skipped.
 */
#ifndef PS_SCRAPE_SCHEDULE_H
#define PS_SCRAPE_SCHEDULE_H

#include <stdbool.h>
#include <stdint.h>

typedef struct ps_sched_item {
    int64_t due;   /* mono ns */
    uint64_t seq;  /* push order: ties pop first in, first out */
    uint32_t idx;  /* the caller's target index */
} ps_sched_item_t;

/** The heap. Zero-initialise; ps_sched_dispose frees it. */
typedef struct ps_sched {
    ps_sched_item_t *items;
    uint32_t n, cap;
    uint64_t seq;
} ps_sched_t;

void ps_sched_dispose(ps_sched_t *h);
/** Empties the heap (keeps its memory). */
void ps_sched_clear(ps_sched_t *h);
/** Adds target idx, due at due. */
void ps_sched_push(ps_sched_t *h, uint32_t idx, int64_t due);
/** The earliest entry: true and *due, *idx (either may be NULL) set, or false when empty. */
bool ps_sched_peek(const ps_sched_t *h, int64_t *due, uint32_t *idx);
/** Removes the earliest entry and returns its index; the heap must not be empty. */
uint32_t ps_sched_pop(ps_sched_t *h);

/** The first tick of a target with hash id: now + id mod interval, in [now, now + interval).
 *  interval <= 0 counts as 1 s. */
int64_t ps_sched_first(uint64_t id, int64_t interval, int64_t now);
/** The tick after due on its grid (due + k * interval, k >= 1) that is later than now. */
int64_t ps_sched_next(int64_t due, int64_t interval, int64_t now);

#endif
