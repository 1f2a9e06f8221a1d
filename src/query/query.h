/*
 * query.h - the query engine: series selection by matchers, merging profiles over time and
 * series, diffs, and per-profile totals as Prometheus-style series.
 *
 * Semantics (docs/API.md says the same for users):
 *  - selection: postings intersections for matchers that need a value, label-value scans for
 *    regexes; a matcher that matches "" also accepts series without the label;
 *  - range queries: at step t the value is the sum of the totals of the profiles with timestamp
 *    in (t - step, t]; steps without profiles are absent;
 *  - instant queries: the total of each series' newest profile in (t - lookback, t];
 *  - merges: node values summed over every profile of every selected series in [start, end]
 *    (or, at a time t, each series' newest profile in (t - lookback, t]).
 */
#ifndef PS_QUERY_H
#define PS_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "core/profile.h"
#include "parser/selector.h"
#include "storage/store.h"

typedef struct ps_query_limits {
    uint32_t max_series;   /* series one selector may select (default 10,000) */
    uint32_t max_points;   /* points per series in a range query (11,000 like Prometheus) */
    int64_t lookback_ns;   /* instant lookback (default 5 m) */
} ps_query_limits_t;

void ps_query_limits_default(ps_query_limits_t *l);

typedef struct ps_series_set {
    uint32_t n;
    uint64_t *sids;
    ps_labels_t *labels;
} ps_series_set_t;

/** Series matching sel (every matcher), optionally only those with data in [start, end]
 *  (pass INT64_MIN, INT64_MAX for all). More than max_series → PS_ETOOBIG with a message. */
int ps_query_select(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                    ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err);

/** All selected series must share one profile type (__name__); *type gets it. Otherwise a
 *  PS_EINVAL listing the types found. An empty set gives *type = NULL and 0. */
int ps_query_single_type(const ps_series_set_t *s, const char **type, ps_err_t *err);

/* A node -> value accumulator (open addressing; node ids are never 0). */
typedef struct ps_nodemap {
    uint64_t *keys;
    int64_t *vals;
    size_t cap, count;
} ps_nodemap_t;
void ps_nodemap_init(ps_nodemap_t *m);
void ps_nodemap_dispose(ps_nodemap_t *m);
void ps_nodemap_add(ps_nodemap_t *m, uint64_t node, int64_t v);
int64_t ps_nodemap_get(const ps_nodemap_t *m, uint64_t node);

/** Adds every profile of the series in [start, end] into acc. */
int ps_query_merge_range(ps_reader_t *r, const ps_series_set_t *s, int64_t start, int64_t end, ps_nodemap_t *acc,
                         ps_sum_info_t *info, ps_err_t *err);
/** Adds each series' newest profile in (at - lookback, at] into acc. */
int ps_query_merge_at(ps_reader_t *r, const ps_series_set_t *s, int64_t at, int64_t lookback, ps_nodemap_t *acc,
                      ps_sum_info_t *info, ps_err_t *err);

/** Splits a profile type id name:sample_type:sample_unit:period_type:period_unit[:delta] into parts
 *  (copies from arena; parts[5] is "delta" or NULL). PS_EINVAL if it is not one. */
int ps_profile_type_parts(const char *id, ps_arena_t *a, const char *parts[6]);

enum { PS_PROFILE_ONE = 0, PS_PROFILE_SUB = 1, PS_PROFILE_PAIR = 2 };
/**
 * Materialises accumulated nodes as a profile of type type_id (name:st:su:pt:pu[:delta]).
 * ONE: values of a; SUB: b - a (one value, negative allowed); PAIR: two values [a, b].
 * time/duration/period come from info (pprof's merge rules: earliest time, summed durations,
 * largest period).
 */
int ps_query_profile(ps_reader_t *r, const char *type_id, const ps_nodemap_t *a, const ps_nodemap_t *b, int mode,
                     const ps_sum_info_t *info, ps_arena_t *arena, ps_profile_t *out, ps_err_t *err);

/* Expression results. */
typedef struct ps_point {
    int64_t t; /* ms */
    double v;
} ps_point_t;

typedef struct ps_qseries {
    ps_labels_t labels;
    uint32_t n;
    ps_point_t *points;
} ps_qseries_t;

enum { PS_RES_MATRIX, PS_RES_VECTOR, PS_RES_SCALAR };

typedef struct ps_qresult {
    int type;
    uint32_t n;
    ps_qseries_t *series;
    double scalar;
    int64_t t; /* ms, for scalars */
} ps_qresult_t;

/**
 * Evaluates e. Range (instant == false): points at start, start+step, ... <= end (times in ns).
 * Instant: at start. Result series are sorted by labels.
 */
int ps_query_eval(ps_reader_t *r, ps_expr_t *e, int64_t start, int64_t end, int64_t step, bool instant,
                  const ps_query_limits_t *lim, ps_arena_t *arena, ps_qresult_t *out, ps_err_t *err);

#endif
