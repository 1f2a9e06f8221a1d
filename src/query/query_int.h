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

#endif
