/*
 * querier.h - what Grafana Pyroscope's querier.v1.QuerierService asks of the store, in
 * Pyroscope's semantics, over the one query implementation of query.h (docs/api.md "Pyroscope querier
 * API" says the same for users):
 *
 *  - times are ms since the epoch, both ends inclusive (a profile at 12:00:00.000999 is in a
 *    range ending at 12:00:00.000); start = end = 0 means "all time" (ProfileTypes, labels);
 *  - only profile series take part (float series from remote_write are Prometheus' side);
 *  - a query is a profile type id (our id verbatim, as ProfileTypes gives it: the __name__ of
 *    its series; unlike Pyroscope's HTTP API, ps_query_pyro_type, a 5-part id is not resolved to
 *    a stored <id>:delta) and a label selector in profstore's selector language, where `{}` and
 *    matchers that all match "" are allowed (the type selects); a matcher on __profile_type__
 *    (the label Pyroscope keeps the type in, which Grafana's label editor sends) is one on
 *    __name__;
 *  - SelectSeries: see ps_querier_select_series.
 */
#ifndef PS_QUERY_QUERIER_H
#define PS_QUERY_QUERIER_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "parser/selector.h"
#include "proto/querier.h"
#include "query/query.h"
#include "storage/store.h"

/** Points a SelectSeries answer may hold before anything is summed (groups x steps). */
#define PS_QUERIER_MAX_POINTS 4000000u
/** The largest max_nodes of a flame graph (Pyroscope's -querier.max-flamegraph-nodes-max). */
#define PS_QUERIER_MAX_NODES_MAX 1048576
/** max_nodes when absent or 0 (Pyroscope's -querier.max-flamegraph-nodes-default). */
#define PS_QUERIER_MAX_NODES_DEFAULT 8192

/** [start, end] in ms as the ns range of the store (ps_querier_* and the merges use it);
 *  start > end is PS_EINVAL ("start (…) is after end (…)"); 0, 0 is everything. */
int ps_querier_range(int64_t start_ms, int64_t end_ms, int64_t *start_ns, int64_t *end_ns, ps_err_t *err);

/**
 * The selector of a query: label_selector (empty: `{}`) parsed with ps_selector_parse_labels,
 * with __name__ = type_id added first when type_id is not NULL, and matchers on __profile_type__
 * made matchers on __name__. A parse error is PS_EINVAL with
 * its message prefixed by the field ("label_selector: 1:7: parse error: ...", err->pos kept); a
 * type_id that is not a profile type id (name:sample_type:sample_unit:period_type:period_unit
 * [:delta]) is PS_EINVAL naming it. Dispose with ps_selector_dispose.
 */
int ps_querier_selector(const char *type_id, const char *label_selector, const char *field, ps_arena_t *arena,
                        ps_selector_t *out, ps_err_t *err);

/** The profile types with a profile in [start_ns, end_ns], ascending: the __name__ values of
 *  the profile series (by kind, as ps_querier_series keeps them) with data in the range. */
int ps_querier_profile_types(ps_reader_t *r, int64_t start_ns, int64_t end_ns, ps_arena_t *arena, ps_strlist_t *out,
                             ps_err_t *err);

/** What GetProfileStats answers: whether any profile series holds a profile, and the oldest
 *  and newest profile timestamps (ns) among them (0 when not ingested). */
typedef struct ps_querier_stats {
    bool ingested;
    int64_t oldest_ns, newest_ns;
} ps_querier_stats_t;
/** The stats over every profile series of the store (one seek to its oldest profile and one to
 *  its newest per series). */
int ps_querier_profile_stats(ps_reader_t *r, ps_arena_t *arena, ps_querier_stats_t *out, ps_err_t *err);

/** Profile series matching any of sels (nsels 0, or a selector without matchers: every
 *  profile series) with a profile in [start_ns, end_ns], in id order; more than max_series is
 *  PS_ELIMIT. */
int ps_querier_series(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start_ns, int64_t end_ns,
                      uint32_t max_series, ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err);

/** Label names (name == NULL) or the values of label name of a series set, ascending, once
 *  (__profile_type__'s values are __name__'s, the type ids). */
void ps_querier_labels(const ps_series_set_t *s, const char *name, ps_arena_t *arena, ps_strlist_t *out);

/** LabelNames (name NULL) and LabelValues: ps_querier_labels of the series ps_querier_series
 *  selects, the same answer, without a series limit. Without a selector, or with one of sels
 *  without matchers, or with {__name__="t"} alone (a profile type), it comes from the label
 *  index's times of profile series (ps_reader_profile_label_*_in, ps_reader_type_label_*_in);
 *  other selectors select their series, each one's strings kept only when new (memory by the
 *  answer, not by the series). */
int ps_querier_label_list(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start_ns,
                          int64_t end_ns, ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err);
/** The same answer streamed from the index, each string to cb in order, where the index answers
 *  it: PS_EOUTOFORDER (cb may have been called: its output is void) where ps_querier_label_list
 *  must answer (a selection, or the index out of order or given up for the walk over series). */
int ps_querier_label_each(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start_ns,
                          int64_t end_ns, int (*cb)(void *ctx, const char *s, size_t n), void *ctx, ps_err_t *err);

/** The label sets of s, each with Pyroscope's __profile_type__ (= its __name__, the type id)
 *  after __name__, kept to names (nnames 0: all labels), sorted, duplicates once (Series with
 *  label_names). */
void ps_querier_label_sets(const ps_series_set_t *s, const char *const *names, uint32_t nnames, ps_arena_t *arena,
                           ps_labels_t **out, uint32_t *n);

/** A SelectSeries query. */
typedef struct ps_querier_range_q {
    ps_selector_t *sel;          /* with its profile type (ps_querier_selector) */
    int64_t start, end, step;    /* ms; step > 0 */
    const char *const *group_by; /* label names */
    uint32_t ngroup_by;
    bool average;                /* TIME_SERIES_AGGREGATION_TYPE_AVERAGE; else SUM */
    bool has_limit;
    int64_t limit;               /* with has_limit: the top limit series by sum (0: all, by sum) */
    uint32_t max_series;
    const char *const *call_site; /* stack_trace_selector.call_site: function names, root first */
    uint32_t ncall_site;          /* 0: every sample counts */
    bool exemplars;              /* EXEMPLAR_TYPE_INDIVIDUAL: each point's exemplar (ps_querier_select_series) */
} ps_querier_range_q_t;


/**
 * Pyroscope's SelectSeries (querier.go rangeSeries, model.TopSeries): the steps are t = start,
 * start + step, ... <= end; a profile at time p (ms) counts in the first step t with p <= t, so step
 * t holds the profiles in (t - step, t] and the first one those in [start - step, start]; profiles
 * after the last step are left out. Series are grouped by their group_by labels (the labels of a
 * point's series are those, the ones it has; no group_by: one series without labels). A step's
 * point is the sum (SUM) or the mean (AVERAGE) of the profile totals of the group in it; steps
 * without a profile have no point. Series are sorted by labels; with has_limit, by the sum of their
 * points, largest first (ties by labels), and kept to the first limit when limit > 0: the others
 * are left out. More than PS_QUERIER_MAX_POINTS groups x steps is PS_ELIMIT.
 * With a call site (ncall_site > 0), a profile's value is the sum of its samples whose stack starts
 * with the call site (ps_querier_call_site's rule; Pyroscope's CallSiteValues Total, which its
 * querier's SelectSeries plots): profiles are read node by node and each stack node is decided
 * once per query; a profile with no such sample counts as a point of value 0.
 *
 * With q->exemplars and ex not NULL, (*ex)[i][k] is the exemplar of point k of series i
 * (Pyroscope's DefaultMaxExemplarsPerPoint, 1, and selectTopNExemplars): of the profiles the point
 * sums (or averages), the one with the largest total; of equals the earliest, then the one of the
 * series with the smallest id. t is the profile's time (ms, not the step's), profile_id its id
 * (ps_query_profile_id), value its total, labels those of its series without __name__ and the
 * group_by labels (one array per series, shared by its exemplars).
 */
int ps_querier_select_series(ps_reader_t *r, const ps_querier_range_q_t *q, ps_arena_t *arena, ps_qseries_t **out,
                             uint32_t *n, ps_qr_exemplar_t ***ex, ps_err_t *err);
/** The same answer (with q->exemplars, each point's exemplar) as a source of points read from the
 *  query's own arrays, valid while arena, r and q are: what the Connect answer is encoded from
 *  (ps_qr_encode_select_series_src), with no struct made per point. */
int ps_querier_select_series_src(ps_reader_t *r, const ps_querier_range_q_t *q, ps_arena_t *arena,
                                 ps_qr_series_src_t *out, ps_err_t *err);

/** The y buckets of a heatmap (Pyroscope's DefaultYAxisBuckets). */
#define PS_QUERIER_HEATMAP_BUCKETS 20
/** The time slots a heatmap may have (x PS_QUERIER_HEATMAP_BUCKETS buckets each): more is PS_EINVAL. */
#define PS_QUERIER_HEATMAP_MAX_SLOTS 11000u
/** The profiles a heatmap may bucket (32 bytes each while it is made): more is PS_ELIMIT. */
#define PS_QUERIER_HEATMAP_MAX_PROFILES 1000000u

/** A SelectHeatmap query (HEATMAP_QUERY_TYPE_INDIVIDUAL). */
typedef struct ps_querier_heatmap_q {
    ps_selector_t *sel;          /* with its profile type (ps_querier_selector) */
    int64_t start, end, step;    /* ms; start < end, step > 0 */
    const char *const *group_by;
    uint32_t ngroup_by;
    bool exemplars;              /* one exemplar per non-empty bucket */
    int64_t limit;               /* > 0: the top limit series by the sum of their counts */
    uint32_t max_series;
} ps_querier_heatmap_q_t;

/** The lower bounds of the y buckets for values in [vmin, vmax] (Pyroscope's createYAxisBuckets):
 *  vmax <= vmin is taken as vmin + 1; bucket i starts at vmin + (int64)(i * (vmax - vmin) / B) and
 *  ends where i + 1 starts (the last at vmax). */
void ps_querier_heatmap_ybuckets(int64_t vmin, int64_t vmax, int64_t ymin[PS_QUERIER_HEATMAP_BUCKETS]);
/** The bucket of v (Pyroscope's findValueBucket): the first i with ymin[i] <= v < end of i; v at or
 *  past the last bucket's start is in the last; -1 below the first. */
int ps_querier_heatmap_ybucket(int64_t v, const int64_t ymin[PS_QUERIER_HEATMAP_BUCKETS]);
/** The time slot of a profile at t ms: 0 (the slot ending at start) for t <= start, else k with t in
 *  (start + (k-1) step, start + k step]. */
uint64_t ps_querier_heatmap_slot(int64_t t, int64_t start, int64_t step);

/**
 * Pyroscope's SelectHeatmap of individual profiles (pkg/model/heatmap): each profile with a time in
 * [start - step, end] ms (inclusive) counts once, by its total, in the slot of its time
 * (ps_querier_heatmap_slot; slot k's timestamp is start + k step) and the y bucket of its total,
 * the buckets spanning the smallest total to the largest (at least 0) of all series. Series are
 * grouped by their group_by labels (the series' labels; none: one series without labels), in label
 * order, or with limit > 0 the top limit by the sum of their counts (ties by labels). Only slots with
 * a profile are answered; each carries all the buckets' y_min and counts. With exemplars, each
 * non-empty bucket gets one: its largest profile (the earliest of equals), its labels those of its
 * series without __name__ and the group_by labels, its profile_id ps_query_profile_id's.
 * More than PS_QUERIER_HEATMAP_MAX_SLOTS slots is PS_EINVAL, more than
 * PS_QUERIER_HEATMAP_MAX_PROFILES profiles PS_ELIMIT.
 */
int ps_querier_select_heatmap(ps_reader_t *r, const ps_querier_heatmap_q_t *q, ps_arena_t *arena,
                              ps_qr_heatmap_series_t **out, uint32_t *n, ps_err_t *err);

/**
 * AnalyzeQuery: what a query of sel over [start_ns, end_ns] would read, from the index and the
 * chunk headers (no profile decoded), as one querier.v1.QueryScope "profstore": block_count the
 * compacted chunks overlapping the range, series_count the profile series selected with a profile
 * in it (ps_querier_series), profile_count the profiles of those chunks plus the head records in the
 * range, profile_bytes their stored bytes; sample_count, index_bytes and symbol_bytes 0 (not known
 * without decoding). *total_bytes is profile_bytes, *nseries series_count.
 */
int ps_querier_analyze(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                       ps_arena_t *arena, ps_qr_query_scope_t *scope, uint64_t *total_bytes, uint64_t *nseries,
                       ps_err_t *err);

/** A merge (SelectMergeStacktraces, SelectMergeProfile, a side of Diff) over [start_ns, end_ns]:
 *  ps_query_profile_select with the selector (its one type). */
int ps_querier_merge(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                     ps_arena_t *arena, ps_profile_sel_t *out, ps_err_t *err);

/** The profile ids a profile_id_selector may list: more is PS_EINVAL. */
#define PS_QUERIER_MAX_PROFILE_IDS 1000

/**
 * A profile_id_selector's ids (field names them in messages: "profile_id_selector[3]: ...") as the
 * stored profiles they name (ps_query_profile_id_parse), sorted by series then time, each once
 * (an id listed twice counts once, as in Pyroscope's set of ids). More than
 * PS_QUERIER_MAX_PROFILE_IDS, an id that is not UUID text or an unknown id: PS_EINVAL naming it.
 */
int ps_querier_profile_ids(ps_reader_t *r, const char *const *ids, uint32_t n, const char *field, ps_arena_t *arena,
                           ps_profile_ref_t **out, uint32_t *nout, ps_err_t *err);

/** ps_querier_merge of just the profiles refs[0..nrefs) (ps_querier_profile_ids) among those it
 *  selects (Pyroscope applies the selector and the range too: a listed profile of another series
 *  or time is left out), summed. */
int ps_querier_merge_ids(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                         const ps_profile_ref_t *refs, uint32_t nrefs, ps_arena_t *arena, ps_profile_sel_t *out,
                         ps_err_t *err);

/**
 * Pyroscope's stack_trace_selector.call_site on a merged profile p (in place): keeps the samples
 * whose stack starts, root first, with exactly the frames names[0..n-1] (the whole stack is kept,
 * the call site's frames included), drops the others. Frames are those of the flame graph: a
 * location's lines, outermost first (inlined functions are frames), named by their function's name
 * (its system name when the name is empty, else the location's address "0x…"); a location without
 * lines is one frame named "<mapping file base name>+0x<file offset>" or "0x<address>". A name no
 * function of p has leaves no sample (Pyroscope's empty answer), as does a call site deeper than
 * every stack. Locations, functions and mappings no kept sample refers to are left out (renumbered;
 * strings stay). n == 0 keeps everything. Names are compared as function name ids, not strings:
 * O(functions log n + frames compared); the memory is p's functions + n ids, from arena.
 */
void ps_querier_call_site(ps_profile_t *p, const char *const *names, uint32_t n, ps_arena_t *arena);

/** The most span ids one request may select (SelectMergeSpanProfile, span_selector): more is PS_EINVAL. */
#define PS_QUERIER_MAX_SPANS 10000u
/** The profiles a span merge may read (each a (series, time) holding a selected span): more is PS_ELIMIT. */
#define PS_QUERIER_SPAN_MAX_PROFILES 1000000u

/** The span ids of a request's field (ids[0..n-1], NUL-terminated strings) parsed (ps_span_parse),
 *  sorted, each once, into *out (from arena). PS_EINVAL naming the field and the first value that is
 *  not 16 hex digits (or is all zero): "span_selector[2]: \"xyz\" is not a span id (...)", or
 *  more than PS_QUERIER_MAX_SPANS of them. */
int ps_querier_spans(const char *const *ids, uint32_t n, const char *field, ps_arena_t *arena, uint64_t **out,
                     uint32_t *nout, ps_err_t *err);

/**
 * A span merge (SelectMergeSpanProfile, span_selector) over [start_ns, end_ns]: of the series sel
 * selects (one profile type, as ps_querier_merge), the samples whose span (storage's span index,
 * store.h) is one of spans[0..nspans-1] (sorted, unique), summed over the profiles in the range
 * (Pyroscope sums span profiles; aggs[0] is PS_AGG_SUM for every type). The profiles are found
 * through the span index, one seek per span and hour of the range, and only their span parts are
 * read (never a head record or chunk): the cost is that of the profiles holding the spans, not of
 * the range. Profiles stored before schema 5 are not indexed (docs/FORMAT.md). info counts the
 * profiles that held a selected sample and their times (durations and periods are not read: 0).
 * Nothing selected: ps_querier_merge's answer.
 */
int ps_querier_merge_spans(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, const uint64_t *spans,
                           uint32_t nspans, uint32_t max_series, ps_arena_t *arena, ps_profile_sel_t *out, ps_err_t *err);

/** Drops the span_id and profile_id sample labels of p (in place): a span merge's answer, as
 *  Pyroscope's, whose samples keep their span ids apart from their labels. */
void ps_querier_strip_span_labels(ps_profile_t *p);

/** max_nodes of a request (has: it was sent) as the render's max_nodes: absent or 0 ->
 *  PS_QUERIER_MAX_NODES_DEFAULT; negative or over PS_QUERIER_MAX_NODES_MAX is PS_EINVAL. */
int ps_querier_max_nodes(bool has, int64_t v, int64_t *out, ps_err_t *err);

#endif
