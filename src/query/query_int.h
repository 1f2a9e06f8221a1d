/*
 * query_int.h - query.c's small pieces shared inside src/query/ (querier.c, pyroscope.c);
 * not public API.
 */
#ifndef PS_QUERY_INT_H
#define PS_QUERY_INT_H

#include "core/hash.h"
#include "query.h"

/** Whether ls satisfies every matcher of sel (a missing label is ""). */
bool ps_query_labels_match(ps_selector_t *sel, const ps_labels_t *ls);

/** Appends (sid, *ls) to s, growing its arrays in arena; *cap is the arrays' room (0 at first). */
void ps_series_set_push(ps_series_set_t *s, uint32_t *cap, ps_arena_t *arena, uint64_t sid, const ps_labels_t *ls);

#endif
