/*
 * query_int.h - query.c's small pieces shared inside src/query/ (querier.c, pyroscope.c);
 * not public API.
 */
#ifndef PS_QUERY_INT_H
#define PS_QUERY_INT_H

#include "core/hash.h"
#include "query.h"

/** 1 if ls satisfies every matcher of sel (a missing label is ""), 0 if not, or a negative code
 *  with err (a regex limit or budget, the query's deadline: ps_matcher_eval). */
/* Whether sid is a profile series with data in [start, end] (ns): 1, 0 (no such series, a float
 * series, nothing there), or an error (querier.c). */
int ps_query_profile_series_has(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err);
/** The label names (name NULL) or the values of name of the profile series with data in [start,
 *  end] (INT64_MIN, INT64_MAX: of every profile series), sorted: ps_querier_labels of the series
 *  ps_querier_series selects without a selector, from the label index's profile times without a
 *  series limit (query.c). */
int ps_query_profile_labels(ps_reader_t *r, const char *name, int64_t start, int64_t end, ps_arena_t *arena,
                            ps_strlist_t *out, ps_err_t *err);
/** The same of the profile series of one type (__name__ = type); PS_EUNSUPPORTED when the times
 *  cannot tell it from another type (then select its series). */
int ps_query_type_labels(ps_reader_t *r, const char *type, const char *name, int64_t start, int64_t end,
                         ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err);
/** ps_query_profile_labels (type NULL) or ps_query_type_labels streamed as
 *  ps_query_labels_each streams them: each string to cb in the answer's order; PS_EOUTOFORDER
 *  (cb may have been called) when the index gives one out of order or the range needs the walk
 *  over every series: then the list functions answer. */
int ps_query_profile_labels_each(ps_reader_t *r, const char *type, const char *name, int64_t start, int64_t end,
                                 int (*cb)(void *ctx, const char *s, size_t n), void *ctx, ps_err_t *err);

int ps_query_labels_match(ps_selector_t *sel, const ps_labels_t *ls, ps_err_t *err);

/** Appends (sid, *ls) to s, growing its arrays in arena; *cap is the arrays' room (0 at first). */
void ps_series_set_push(ps_series_set_t *s, uint32_t *cap, ps_arena_t *arena, uint64_t sid, const ps_labels_t *ls);

/** 1 if some series has label name=value, 0 if none, or an error. */
int ps_query_any_posting(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                         ps_err_t *err);

/** A de-duplicated list of strings being built (copies in arena); zero it but for arena, then
 *  ps_hmap_init(&seen); ps_strset_finish sorts it into an ps_strlist_t and disposes seen. */
typedef struct ps_strset {
    ps_hmap_t seen;
    const char **v;
    uint32_t n, cap;
    ps_arena_t *arena;
} ps_strset_t;

/** Adds s unless there already (a label name/value callback: always 0). */
int ps_strset_add(void *ctx, const char *s, size_t n);
/** Adds ls's label names (name == NULL) or its value of label name, if it has one. */
void ps_strset_labels(ps_strset_t *l, const char *name, const ps_labels_t *ls);
/** Sorts l into out (ascending) and disposes l's index. */
void ps_strset_finish(ps_strset_t *l, ps_strlist_t *out);

#endif
