/*
 * query.h - the query engine: series selection by matchers, merging profiles over time and
 * series, diffs. PromQL (float series and per-profile totals) is promql_eval.h.
 *
 * Semantics (docs/api.md's Query section says the same for users):
 *  - selection: postings intersections for matchers that need a value, label-value scans for
 *    regexes; a matcher that matches "" also accepts series without the label;
 *  - merges: over every profile of every selected series in [start, end] (or, at a time t, each
 *    series' newest profile in (t - lookback, t]), one profile type, or every sample type of a
 *    profile family (ps_query_profile_select); a range merge sums or averages over time by the
 *    type's aggregation (ps_query_type_agg), series are always summed;
 *  - label names and values: of the series with data in [start, end] when a range is given.
 *
 * HTTP handlers (web/) only parse parameters, call these and render the answer.
 */
#ifndef PS_QUERY_H
#define PS_QUERY_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "core/profile.h"
#include "parser/regex.h"
#include "parser/selector.h"
#include "storage/store.h"

typedef struct ps_series_set {
    uint32_t n;
    uint64_t *sids;
    ps_labels_t *labels;
} ps_series_set_t;

/** Series matching sel (every matcher), optionally only those with data in [start, end]
 *  (pass INT64_MIN, INT64_MAX for all). More than max_series → PS_ETOOBIG with a message. */
int ps_query_select(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                    ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err);

/** Whether two profile type ids are the same measure: the same name, sample type, sample unit
 *  and delta flag; only the period type and unit may differ (one profile scraped with period
 *  space:bytes, one pushed without: ingest lets the sample type stand in). */
bool ps_profile_type_same_measure(const char *a, const char *b);

/** All selected series must be of one measure (ps_profile_type_same_measure: one profile type,
 *  or several that differ only in their period type, merged as one); *type gets the type standing
 *  for them: the first, ascending, with a period type of its own (not the sample type standing
 *  in), else the first. Otherwise a PS_EINVAL listing the types found and two that differ. An
 *  empty set gives *type = NULL and 0. */
int ps_query_single_type(const ps_series_set_t *s, const char **type, ps_err_t *err);

/** Series of every selector (union by id, in selector order), with data in [start, end];
 *  more than max_series in all → PS_ELIMIT. */
int ps_query_select_union(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start, int64_t end,
                          uint32_t max_series, ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err);

/** A list of strings (label names or values), ascending, without duplicates. */
typedef struct ps_strlist {
    uint32_t n;
    const char **v;
} ps_strlist_t;

/**
 * Label names (name == NULL) or the values of label name, of the series that match any of sels
 * (nsels > 0) or of every series (nsels == 0), each restricted to series with data in
 * [start, end] (INT64_MIN, INT64_MAX: no restriction, answered from the label index).
 */
int ps_query_labels(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start,
                    int64_t end, uint32_t max_series, ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err);
/** ps_query_labels with a range and no selector: past this many looks at series (more than 4 for
 *  each string listed) it walks every series instead of the label index (16,384; tests set it). */
extern uint64_t ps_query_labels_walk_after;
/*
 * ps_query_labels' answer over every series without a selector, without a copy: the label names
 * (name NULL) or the values of name (with data in [start, end] unless that is everything)
 * straight from the label index, each to cb (its bytes valid until the reader ends) in the
 * answer's order. PS_EOUTOFORDER (err untouched, cb may have been called) when the index gives a
 * string out of that order (or with a NUL): then only ps_query_labels answers; or when a range
 * needs the walk over every series (*walk_all): then ps_query_labels_walk answers. cb's nonzero
 * return ends the walk and is returned.
 */
int ps_query_labels_each(ps_reader_t *r, const char *name, int64_t start, int64_t end,
                         int (*cb)(void *ctx, const char *s, size_t n), void *ctx, bool *walk_all, ps_err_t *err);
/* ps_query_labels without a selector over a range by the walk over every series (each looked at
 * when it would add a name or a value) */
int ps_query_labels_walk(ps_reader_t *r, const char *name, int64_t start, int64_t end, ps_arena_t *arena,
                         ps_strlist_t *out, ps_err_t *err);

/* A node -> value accumulator (open addressing; key 0 marks a free slot). Node 0, the root (samples
 * with an empty stack: Go's threadcreate profile has 8 such of 9), is kept under PS_NODEMAP_ROOT;
 * ps_nodemap_add and ps_nodemap_get take it as 0. */
#define PS_NODEMAP_ROOT UINT64_MAX
typedef struct ps_nodemap {
    uint64_t *keys;
    int64_t *vals;
    size_t cap, count;
} ps_nodemap_t;
void ps_nodemap_init(ps_nodemap_t *m);
void ps_nodemap_dispose(ps_nodemap_t *m);
void ps_nodemap_add(ps_nodemap_t *m, uint64_t node, int64_t v);
int64_t ps_nodemap_get(const ps_nodemap_t *m, uint64_t node);

/* ---- aggregation over time, and a diff's normalisation ---- */

/** How a range merge combines the profiles of one series (see ps_query_type_agg). */
typedef enum ps_agg { PS_AGG_AUTO = 0, PS_AGG_SUM = 1, PS_AGG_AVG = 2 } ps_agg_t;

/**
 * The aggregation over time of a profile type, the one rule every merge uses (the profiles API,
 * the querier's merges and Diff, /pyroscope/render(-diff), the UI, pprof downloads):
 *  - PS_AGG_AVG for types whose values are a state at one instant: a sample type that starts
 *    with "inuse" (Go's and Node's inuse_space/inuse_objects), or a sample type or profile name
 *    goroutine, goroutines or threadcreate (Go's goroutine and threadcreate profiles): a range
 *    merge is, per series, the mean of its profiles node by node (rounded half away from zero),
 *    and the series' means are summed. 90 snapshots of 6 MiB in use are 6 MiB, not 540 MiB.
 *  - PS_AGG_SUM for everything else: counts of events (cpu, samples, wall, alloc_*, contentions,
 *    delay, block, mutex, lock_*), every :delta type (a delta counts what happened in its
 *    interval), and a type not named above. An unknown pushed type sums because that is what
 *    Pyroscope does with a type it has no rule for, because what agents push are windows of
 *    samples (events in the push interval), and because summing is what profstore answered before
 *    (aggregation=avg says otherwise per query).
 * Pyroscope (v0 storage, pkg/convert/pprof's sample type table and pull-mode config) averages
 * exactly inuse_objects, inuse_space and goroutine(s); it divides by the profiles of all series
 * together, where profstore averages each series and sums the series, so that N pods show N
 * times one pod's memory.
 */
ps_agg_t ps_query_type_agg(const char *type_id);

/** "sum", "avg" ("auto" for PS_AGG_AUTO). */
const char *ps_agg_name(ps_agg_t a);

/** The aggregation parameter v (NULL or "": PS_AGG_AUTO): "sum" or "avg", else PS_EINVAL naming
 *  param: invalid parameter "aggregation": "median" is neither "sum" nor "avg". */
int ps_agg_parse(const char *v, const char *param, ps_agg_t *out, ps_err_t *err);

/** A diff's normalisation (see ps_query_diff_normalize). */
typedef enum ps_norm { PS_NORM_AUTO = 0, PS_NORM_NONE = 1, PS_NORM_RATE = 2 } ps_norm_t;

/** "none", "rate" ("auto" for PS_NORM_AUTO). */
const char *ps_norm_name(ps_norm_t n);

/** The normalize parameter v (NULL or "": PS_NORM_AUTO): "rate" or "none", else PS_EINVAL naming
 *  param. */
int ps_norm_parse(const char *v, const char *param, ps_norm_t *out, ps_err_t *err);

/** Adds every profile of the series in [start, end] into acc: summed (PS_AGG_SUM), or each
 *  series' profiles averaged node by node and the means summed (PS_AGG_AVG; one division per node
 *  of each series at the end of its merge). */
int ps_query_merge_range(ps_reader_t *r, const ps_series_set_t *s, int64_t start, int64_t end, ps_agg_t agg,
                         ps_nodemap_t *acc, ps_sum_info_t *info, ps_err_t *err);
/** Adds each series' newest profile in (at - lookback, at] into acc. */
int ps_query_merge_at(ps_reader_t *r, const ps_series_set_t *s, int64_t at, int64_t lookback, ps_nodemap_t *acc,
                      ps_sum_info_t *info, ps_err_t *err);

/** Splits a profile type id name:sample_type:sample_unit:period_type:period_unit[:delta] into parts
 *  (copies from arena; parts[5] is "delta" or NULL). PS_EINVAL if it is not one. */
int ps_profile_type_parts(const char *id, ps_arena_t *a, const char *parts[6]);

/* ---- profile ids (profile_id.c; docs/api.md "Profile ids") ---- */

/** A stored profile: its series and its time (ns); the two never change and are never reused. */
typedef struct ps_profile_ref {
    uint64_t sid;
    int64_t ts;
} ps_profile_ref_t;

/** A profile id as text: a UUID, 36 characters. */
#define PS_PROFILE_ID_LEN 36
/** The largest series id a derived id holds (58 bits; a store never numbers that many series). */
#define PS_PROFILE_ID_MAX_SID ((UINT64_C(1) << 58) - 1)

/** The derived id of the profile of series sid at ts as UUID bytes (version 8, RFC 9562 variant;
 *  layout in profile_id.c and docs/api.md); false when sid > PS_PROFILE_ID_MAX_SID. */
bool ps_profile_uuid_make(uint64_t sid, int64_t ts, uint8_t u[16]);
/** The series and time of a derived id; false when u is not one (not version 8 with the variant). */
bool ps_profile_uuid_split(const uint8_t u[16], uint64_t *sid, int64_t *ts);
/** u as lowercase UUID text (36 characters and a NUL). */
void ps_profile_uuid_text(const uint8_t u[16], char out[PS_PROFILE_ID_LEN + 1]);

/** The id of the profile of series sid at ts (ns), as answers give it: its UUID text into out
 *  (returns 36), or "" (returns 0) when it has none. The one place an id is made. */
int ps_query_profile_id(ps_reader_t *r, uint64_t sid, int64_t ts, char out[PS_PROFILE_ID_LEN + 1]);
/** The same id as its 16 bytes (the text is their UUID text): false when it has none. */
bool ps_query_profile_uuid(ps_reader_t *r, uint64_t sid, int64_t ts, uint8_t u[16]);
/** The stored profiles with the id s[0..n) (at most max into out, *n of them; a derived id names
 *  one). Not UUID text: PS_EINVAL "<field>: \"...\" is not a profile id ..."; a UUID no stored
 *  profile has (or max 0): PS_EINVAL "<field>: unknown profile id \"...\"". The one place an id is read. */
int ps_query_profile_id_parse(ps_reader_t *r, const char *s, size_t n, const char *field, ps_profile_ref_t *out,
                              uint32_t max, uint32_t *nout, ps_err_t *err);

/** A stored profile as ps_query_profile_list lists it: its series (index in the set), time, total. */
typedef struct ps_profile_entry {
    ps_profile_ref_t ref;
    int64_t total;
    uint32_t series;
} ps_profile_entry_t;
/** The profiles of the profile series sel selects with start <= ts <= end (ns), by time then
 *  series id (the series into *set, the entries in the arena); more than max is PS_ELIMIT. */
int ps_query_profile_list(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                          uint32_t max, ps_arena_t *arena, ps_series_set_t *set, ps_profile_entry_t **out,
                          uint32_t *n, ps_err_t *err);

/* ---- profile selections: what the profile API (and any other profile API) answers ---- */

/** One side of a profile query. */
typedef struct ps_profile_query {
    ps_selector_t *sel;
    const char *param;    /* names the selector in messages: invalid parameter "<param>": ... */
    bool ranged;
    int64_t start, end;   /* ranged: every profile in [start, end] */
    int64_t at, lookback; /* otherwise: each series' newest profile in (at - lookback, at] */
    bool all_types;       /* every sample type of the profile family (see ps_query_profile_select) */
    uint32_t max_series;
    ps_agg_t agg;         /* PS_AGG_AUTO (0): each type's own (ps_query_type_agg) */
    bool span_labels;     /* when the selection is one stored profile: ps_query_profile_build gives its
                           * samples their span_id and trace_id labels back (its span parts) */
    const ps_profile_ref_t *only; /* nonly > 0 (ranged, one type): of the selected series' profiles in
                                     [start, end], just these (sorted by sid then ts, each once), summed */
    uint32_t nonly;
} ps_profile_query_t;

/** Merged node values of a selection, one accumulator per sample type. */
typedef struct ps_profile_sel {
    uint32_t ntypes;      /* >= 1 after success */
    const char **types;   /* profile type ids, one per sample type, ascending (from the arena) */
    ps_nodemap_t *accs;   /* accs[k]: node -> merged value of types[k] */
    ps_agg_t *aggs;       /* aggs[k]: how types[k] was merged over time (PS_AGG_SUM or PS_AGG_AVG) */
    int64_t window;       /* ns: end - start of a range, the lookback of an instant query */
    int64_t *totals;      /* totals[k]: sum of |value| over accs[k] */
    ps_sum_info_t info;   /* time, duration, period of the merged profiles (pprof's merge rules) */
    uint32_t nseries;     /* series merged, over all types */
    const uint64_t *one_sids; /* span_labels and one stored profile per type, all at one_ts: their
                               * series, one per type (else NULL) */
    int64_t one_ts;
} ps_profile_sel_t;

/**
 * Selects series and merges their profiles. The selected series must share one profile type, or
 * be of one measure (ps_query_single_type: `{__name__=~"id1|id2"}` over ids that differ only in
 * their period type merges them as one), else PS_EINVAL listing the types. A __name__="T" matcher with a profile type T never stored
 * is PS_ENOTFOUND; a name that is not a profile type id is PS_EINVAL. Nothing selected is an empty
 * selection of the type the selector names (or unknown:unknown:unknown:unknown:unknown).
 *
 * Profile families: with all_types, or when the selector's __name__ is a bare profile name
 * (`memory{job="api"}`, no colon), the selection holds every stored sample type of that name
 * (all_types with a full type id: those with its period type and delta flag too), each with the
 * series that match the rest of the selector; types without a selected series are left out unless
 * none has one. Two types with the same sample type (one of them :delta) or different period types
 * are PS_EINVAL. info is that of the type that merged most profiles (every type of a pprof that
 * was stored has the same ones). max_series applies to the series of all types together.
 * out is valid until ps_profile_sel_dispose and the arena's end.
 */
int ps_query_profile_select(ps_reader_t *r, const ps_profile_query_t *q, ps_arena_t *arena, ps_profile_sel_t *out,
                            ps_err_t *err);
void ps_profile_sel_dispose(ps_profile_sel_t *s);
/** The selection of one stored profile (its series' type, aggregation and labels into *labels when
 *  not NULL; window 0), as ps_query_profile_build takes it (its samples with their span labels). */
int ps_query_profile_ref(ps_reader_t *r, const ps_profile_ref_t *ref, ps_arena_t *arena, ps_profile_sel_t *out,
                         ps_labels_t *labels, ps_err_t *err);

/**
 * One stored profile at ts (series sids[k] for value k of nv) with its span labels back: its span
 * parts (storage, "span parts") become rows of their own, each (span as written, node) a row with
 * the span's values, taken from the node's row; rows left all zero go. *nodes and *vals (malloc'd,
 * nv values a row) are replaced; *lab (malloc'd, NULL when the profile has no span parts) gets each
 * row's span part or NULL. Then materialize the rows (ps_reader_materialize: sample i is row i) and
 * call ps_query_span_labels.
 */
int ps_query_span_rows(ps_reader_t *r, const uint64_t *sids, uint32_t nv, int64_t ts, uint64_t **nodes, int64_t **vals,
                       size_t *n, const ps_span_part_t ***lab, ps_arena_t *arena, ps_err_t *err);
/** Gives each sample i with lab[i] its span_id (or profile_id, as pushed) and trace_id labels. */
void ps_query_span_labels(ps_profile_t *p, const ps_span_part_t **lab, ps_arena_t *arena);

enum { PS_PROFILE_ONE = 0, PS_PROFILE_SUB = 1, PS_PROFILE_PAIR = 2 };
/**
 * Materialises a selection as a profile. ONE: values of a, one per type; SUB: b - a per type
 * (negative allowed; a diff); PAIR: two values [a, b] (one type only: a flame graph diff).
 * For SUB and PAIR both sides must have the same types (one type each: of one measure), unless
 * one side selected nothing: then
 * the other's types are used. time/duration/period come from b's info if b merged any profile,
 * else from a's. Each sample type gets a pprof comment with its aggregation over time
 * ("profstore: inuse_space: aggregation=avg: ...", `go tool pprof -comments` prints them).
 */
int ps_query_profile_build(ps_reader_t *r, const ps_profile_sel_t *a, const ps_profile_sel_t *b, int mode,
                           ps_arena_t *arena, ps_profile_t *out, ps_err_t *err);

/** What a diff compared: normalize used (PS_NORM_NONE or PS_NORM_RATE) and the profiled seconds of
 *  each side. */
typedef struct ps_diff_norm {
    ps_norm_t used;
    double base_s, compare_s;
} ps_diff_norm_t;

/**
 * Makes the two sides of a diff one measure. A side's profiled time is the sum of the durations of
 * the profiles it merged (pprof's duration_nanos; every series counts: two pods profiled for 5
 * minutes are 10 minutes), or its window's length when none of them has a duration.
 *  - PS_NORM_RATE: the base's values of each PS_AGG_SUM type are scaled by compare_s / base_s
 *    (rounded): both sides are then the compare side's profiled time of their rate (value per
 *    second of profiled time), so 5 and 3.4 minutes of the same workload show no change, and a
 *    value divided by compare_s is that rate per second. PS_AGG_AVG types are left as they are:
 *    a mean of snapshots does not depend on the window's length. If no type of the selection sums,
 *    or a side has no profiled time, nothing is scaled and used is PS_NORM_NONE.
 *  - PS_NORM_NONE: absolute values, as merged.
 *  - PS_NORM_AUTO: PS_NORM_RATE when the windows' lengths differ, else PS_NORM_NONE.
 * base's totals are computed again. Call it before ps_query_profile_build.
 */
void ps_query_diff_normalize(ps_profile_sel_t *base, const ps_profile_sel_t *cmp, ps_norm_t ask, ps_diff_norm_t *out);

/** Appends a comment (pprof's Profile.comment, which `go tool pprof -comments` prints) to p, in
 *  arena. */
void ps_query_profile_comment(ps_profile_t *p, ps_arena_t *arena, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* ---- focus, ignore, hide, show, show_from: go tool pprof's filters (focus.c) ---- */

enum { PS_FOCUS_FOCUS, PS_FOCUS_IGNORE, PS_FOCUS_HIDE, PS_FOCUS_SHOW, PS_FOCUS_SHOW_FROM, PS_FOCUS_N };
/** The parameter (and pprof flag) names: "focus", "ignore", "hide", "show", "show_from". */
extern const char *const ps_focus_names[PS_FOCUS_N];

/** The filters of a query; zero it, ps_focus_set each given one, ps_focus_dispose at the end. */
typedef struct ps_focus {
    ps_regex_t *re[PS_FOCUS_N]; /* NULL: not given */
} ps_focus_t;

/** Compiles v[0..n) as filter which (Go's RE2 syntax, unanchored as pprof's regexp.MatchString; an
 *  empty v is no filter). A bad regexp is PS_EINVAL: invalid parameter "focus": error parsing
 *  regexp "(a": missing closing ): `(a` (Go's words where RE2 refuses it). */
int ps_focus_set(ps_focus_t *f, int which, const char *v, size_t n, ps_err_t *err);
bool ps_focus_any(const ps_focus_t *f);
void ps_focus_dispose(ps_focus_t *f);

/**
 * Applies f to p as `go tool pprof -focus -ignore -hide -show -show_from` does (pprof's
 * FilterSamplesByName, then ShowFrom; focus.c restates the rules): samples are dropped, stacks and
 * locations' lines shortened, in place (new arrays from arena; symbols are left as they are). On
 * the merged profile, so totals, flame graphs, top tables and the pprof download agree with
 * pprof's. Bounded: one regex run per distinct string per filter (PCRE2's limits: PS_ELIMIT), the
 * query's deadline checked as samples are walked.
 */
int ps_focus_apply(const ps_focus_t *f, ps_profile_t *p, ps_arena_t *arena, ps_err_t *err);

/* ---- the line view: go tool pprof -list (list.c) ---- */

typedef struct ps_list_line {
    int64_t line, flat, cum;
} ps_list_line_t;

/** One function in one file: its lines with a value, ascending. */
typedef struct ps_list_fn {
    ps_str_t name, file;   /* file "": the profile has no file for it (pprof: "No source information") */
    int64_t flat, cum;     /* sums over its lines, as pprof's "(flat, cum)" header */
    uint32_t nlines;
    ps_list_line_t *lines;
} ps_list_fn_t;

typedef struct ps_list {
    int64_t total;         /* sum of |values[vi]| over the samples (pprof's "Total:") */
    uint32_t n;
    ps_list_fn_t *fns;     /* by name, then file */
    ps_list_line_t *lines; /* backing store of fns' lines */
} ps_list_t;

/**
 * The per-line flat and cum of values[vi] for each function whose name re matches (compile it with
 * PS_REGEX_SEARCH: pprof's -list regexp), as `go tool pprof -list` counts them (list.c states the
 * rules); lines with no value are left out. Into out, from arena. Bounded: one regex run per
 * function, the deadline checked as samples are walked.
 */
int ps_query_list(const ps_profile_t *p, uint32_t vi, const ps_regex_t *re, ps_arena_t *arena, ps_list_t *out,
                  ps_err_t *err);

/* Series of points: PromQL answers (src/query/promql_eval.h). */
typedef struct ps_point {
    int64_t t; /* ms */
    double v;
} ps_point_t;

typedef struct ps_qseries {
    ps_labels_t labels;
    uint32_t n;
    ps_point_t *points;
} ps_qseries_t;

/* ---- Pyroscope's HTTP query API (/pyroscope/render, /render-diff, /labels, /label-values) ---- */

/**
 * Resolves the profile type of a Pyroscope query (`<profile type id>{selector}`), the selector's
 * __name__="..." matcher, to the id to select, and rewrites that matcher to it:
 *  - a stored id is taken verbatim (profstore's name:type:unit:ptype:punit[:delta]);
 *  - Pyroscope's 5-part id when only <id>:delta is stored selects <id>:delta (Pyroscope's ids have
 *    no delta flag; profstore keeps cumulative and delta series apart);
 *  - an id never stored is kept (the selection then says "unknown profile type").
 * Errors (PS_EINVAL, messages naming param): no __name__ (Pyroscope: "must contain a profile-type
 * selection"), a __name__ matcher that is not "=", more than one, a name that is not 5 or 6
 * colon-separated parts ending in :delta when 6; a name without colons (the legacy app-name form
 * `myapp.cpu{}`) says it is not supported and how to select the app by its label.
 * *type gets the id selected (from arena).
 */
int ps_query_pyro_type(ps_reader_t *r, ps_selector_t *sel, const char *param, ps_arena_t *arena, const char **type,
                       ps_err_t *err);

/** PS_EINVAL with not_a_type's message when the query q (not parsed yet) starts with the legacy
 *  <app>.<type> form (`myapp.cpu{...}`: a dot before the braces and no colon), else 0. */
int ps_query_pyro_legacy(const char *q, size_t n, const char *param, ps_err_t *err);

/** Pyroscope's timeline step for a query range (timeline.CalcPointInterval): the range / 1500
 *  rounded as Grafana's intervalv2 rounds it, at least 15 s. In seconds (>= 15). */
int64_t ps_pyro_timeline_step(int64_t from_ms, int64_t until_ms);

/** A timeline: samples[k] = the profiles of step k, the step ending at from + k * step. */
typedef struct ps_pyro_timeline {
    int64_t start_s, step_s; /* from_ms / 1000; ps_pyro_timeline_step */
    uint32_t n;              /* (until_ms / 1000 - from_ms / 1000) / step_s */
    uint64_t *samples;
} ps_pyro_timeline_t;

/**
 * The timeline of the series s over [from_ms, until_ms], as Pyroscope's SelectSeries + timeline.New
 * build it: a profile at t ms (its ns time / 1e6) belongs to step k = ceil((t - from) / step), so
 * step k holds (from + (k-1)*step, from + k*step] and step 0 just t = from; steps k >= n are left
 * out (Pyroscope drops points at or after until). samples[k] = the sum of the profiles' totals
 * (sum of values), or with avg each series' mean of its profiles in the step, summed over the
 * series (truncated; the merge's rule, ps_query_type_agg), 0 for a step without profiles. Totals
 * come from the chunk totals column (no stack is read).
 */
int ps_query_pyro_timeline(ps_reader_t *r, const ps_series_set_t *s, int64_t from_ms, int64_t until_ms, bool avg,
                           ps_arena_t *arena, ps_pyro_timeline_t *out, ps_err_t *err);

/** One timeline per value of a label (groupBy): key is the value, "*" for series without it. */
typedef struct ps_pyro_group {
    const char *key;
    ps_pyro_timeline_t tl;
} ps_pyro_group_t;

#define PS_PYRO_MAX_GROUPS 512
/** The timelines of s's series grouped by label by (as ps_query_pyro_timeline each), keys
 *  ascending (bytewise, as Go's encoding/json orders a map). *n = 0 for an empty s. More than
 *  PS_PYRO_MAX_GROUPS groups is PS_ELIMIT (memory: within 366 days a timeline has at most 2,625 steps). */
int ps_query_pyro_groups(ps_reader_t *r, const ps_series_set_t *s, const char *by, int64_t from_ms, int64_t until_ms,
                         bool avg, ps_arena_t *arena, ps_pyro_group_t **out, uint32_t *n, ps_err_t *err);

/** The value of label name shared by every series of s, or NULL (none, or they differ). */
const char *ps_query_common_label(const ps_series_set_t *s, const char *name);

/**
 * Label names (name == NULL) or the values of name, of the profile series matching sel (NULL: every
 * profile series, without a series limit; float series from remote_write are never listed) with
 * data in [start, end] (INT64_MIN, INT64_MAX: any): ps_querier_series and ps_querier_labels, the
 * querier's LabelNames/LabelValues (no series limit). The values of __name__ are profile type ids in Pyroscope's 5-part
 * form (a :delta suffix dropped, duplicates merged), what Pyroscope's /label-values?label=__name__
 * lists. Ascending, without duplicates.
 */
int ps_query_pyro_labels(ps_reader_t *r, const char *name, ps_selector_t *sel, int64_t start, int64_t end,
                         ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err);

#endif
