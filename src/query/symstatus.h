/*
 * symstatus.h - which build ids hold frames stored without symbols, with how many samples: the
 * store's counts (storage/store.h "frames stored without symbols") summed over the hours of a time
 * range, per build id (lowercase when hex, so "ABCD" and "abcd" are one), each with whether a
 * usable debug file is known for it now (the symbolizer's answer, through a callback: this room
 * does not know the symbolizer). Bounded by the distinct build ids of the range.
 */
#ifndef PS_QUERY_SYMSTATUS_H
#define PS_QUERY_SYMSTATUS_H

#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "storage/store.h"

#define PS_SYMSTATUS_LIMIT_MAX 10000
#define PS_SYMSTATUS_LIMIT_DEFAULT 100

/** Whether symbols are known for a build id (lowercase hex when it is hex) now: a source > 0
 *  (src/symbols' PS_SYMBOLS_FROM_*), or 0. Must be thread-safe. */
typedef int (*ps_symstatus_has_fn)(void *ctx, const char *build_id);

/** Which build ids a listing holds. */
typedef enum ps_symstatus_state {
    PS_SYMSTATUS_MISSING = 0, /* no usable debug file known now */
    PS_SYMSTATUS_AVAILABLE,   /* a debug file is known now (the frames show symbols when read) */
    PS_SYMSTATUS_ALL,
} ps_symstatus_state_t;

typedef struct ps_symstatus_entry {
    const char *build_id;
    uint32_t nfiles;
    const char *files[PS_UNSYM_FILES_MAX]; /* the mappings' file names, the first met */
    uint64_t profiles, samples;
    int64_t first_ts, last_ts;             /* ns */
    uint32_t ntypes;
    const char *types[PS_UNSYM_TYPES_MAX]; /* profile type ids, by total descending */
    int64_t totals[PS_UNSYM_TYPES_MAX];
    int source;                            /* the has callback's answer: 0 missing */
} ps_symstatus_entry_t;

typedef struct ps_symstatus {
    uint64_t missing_build_ids, missing_samples;     /* over the range, before the limit */
    uint64_t available_build_ids, available_samples;
    uint32_t n;                                      /* entries listed (at most the limit) */
    ps_symstatus_entry_t *entries;                   /* samples descending, then build id */
} ps_symstatus_t;

/** The build ids with frames without symbols in the profiles of [start, end] (ns) in r's snapshot,
 *  those of the given state, the limit (1 .. PS_SYMSTATUS_LIMIT_MAX) with the most samples, into
 *  out (from arena). has NULL: every build id is missing. */
int ps_query_symstatus(ps_reader_t *r, int64_t start, int64_t end, ps_symstatus_state_t state, uint32_t limit,
                       ps_symstatus_has_fn has, void *has_ctx, ps_arena_t *arena, ps_symstatus_t *out, ps_err_t *err);

#endif
