/*
 * delta.h - cumulative profiles into deltas (delta.c), internal to src/scrape/.
 *
 * Go's allocs/heap alloc_objects and alloc_space, block and mutex contentions and delay count since
 * the process started. A target keeps a baseline (ps_delta_state_t) of its last scrape: per stack
 * (the locations' content plus the sample labels, hashed to 16 bytes) and per sample type the
 * summed value. ps_delta_apply subtracts it and makes the new scrape the baseline.
 *
 * Per sample type the modes are: not cumulative -> PS_INGEST_ASIS; cumulative without a usable
 * baseline (first scrape, or the sample types changed) -> PS_INGEST_SKIP; otherwise
 * PS_INGEST_DELTA. A cumulative type whose total or any stack's value went down means the process
 * restarted: that scrape's values of the type are kept as they are (still PS_INGEST_DELTA: they
 * are what happened since the new process started), never negative, never doubled.
 */
#ifndef PS_SCRAPE_DELTA_H
#define PS_SCRAPE_DELTA_H

#include <stdbool.h>
#include <stdint.h>

#include "core/hash.h"
#include "core/mem.h"
#include "core/profile.h"

/** A target's baseline. Zero-initialise; ps_delta_dispose frees it. */
typedef struct ps_delta_state {
    ps_hmap_t index;  /* stack key (16 bytes) -> row */
    int64_t *values;  /* rows x ntypes */
    uint32_t ntypes;
    int64_t *totals;  /* ntypes */
    bool valid;       /* a scrape has set it */
} ps_delta_state_t;

/** Frees the baseline; it is zero (no baseline) afterwards. */
void ps_delta_dispose(ps_delta_state_t *st);

/** True for the sample types that count since process start (alloc_objects, alloc_space,
 *  contentions, delay). */
bool ps_delta_is_cumulative(ps_str_t type);

/**
 * Sets modes[0..p->ntypes) (see above) and returns p with the cumulative types as deltas against
 * st: p itself when it has no cumulative type (st is then untouched), else a copy of its samples
 * from arena (strings, stacks and symbols stay p's). Repeated stacks of one scrape: the delta goes
 * to the first sample, the others get 0. p becomes the new baseline.
 */
ps_profile_t *ps_delta_apply(ps_delta_state_t *st, const ps_profile_t *p, uint8_t *modes, ps_arena_t *arena);

#endif
