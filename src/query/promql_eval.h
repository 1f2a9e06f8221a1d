/*
 * promql_eval.h - the PromQL evaluator: Prometheus' engine over a syntax tree of parser/promql.h,
 * with Prometheus 3's semantics (ps_pq_opts_t.compat 3, the default) or 2.42's (compat 2).
 *
 * Semantics are Prometheus' (promql/engine.go, functions.go, quantile.go), step by step and with
 * the same float operations in the same order, so that the numbers are Prometheus' to the bit:
 *  - instant selector at T: each series' newest sample with T - lookback < t <= T (2.42:
 *    T - lookback <= t); a stale marker there means no value; offset moves T back, @ fixes it;
 *  - range selector [r] at T: every sample with T - r < t <= T (left-open, as Prometheus 3; 2.42:
 *    both ends), stale markers left out; a subquery [r:s] at T runs at the multiples of s in
 *    (T - r, T] (2.42: [T - r, T]);
 *  - a range query evaluates at start, start + step, ... <= end; its series are sorted by labels
 *    and series without any point are left out. An instant query keeps Prometheus' order;
 *  - a call that is not step invariant over a range argument with @ runs at each step ts with the
 *    argument's window moved by ts - start (2.42's setOffsetForAtModifier);
 *  - a range function's or a unary minus' results with the same labels from two input series
 *    fail the query wherever they fall in the range (2.42 checks the result matrix).
 *
 * Evaluated: number, string, instant and range selectors (offset, @), unary -, every binary
 * operator (scalar/vector, on/ignoring, group_left/group_right, bool, and/or/unless), the
 * aggregations sum avg min max count group stddev stdvar topk bottomk quantile count_values (by,
 * without), and the functions rate irate increase delta idelta resets changes deriv predict_linear
 * *_over_time (avg min max sum count last quantile stddev stdvar present) abs ceil floor round sqrt
 * sgn clamp clamp_min clamp_max time vector scalar timestamp sort sort_desc label_replace
 * label_join histogram_quantile (classic le buckets), absent absent_over_time holt_winters (3's
 * double_exponential_smoothing), the date
 * functions, pi deg rad, histogram_count/sum/fraction (empty: no native histograms), exp ln log2
 * log10 and the trigonometric functions (the C library's, within an ulp of Go's), and subqueries
 * (expr[range:step], the inner expression at the multiples of step, each time evaluated once):
 * every function of 2.42. One it did not know would be PS_EUNSUPPORTED with a message naming it,
 * checked before any data is read.
 *
 * Errors: PS_EINVAL for what Prometheus calls bad_data (the query cannot be run at all),
 * PS_ELIMIT for execution errors and exceeded limits (Prometheus' 422: "many-to-many matching not
 * allowed", too many samples, the timeout; and ours: more memory than max_memory).
 *
 * Costs: every sample loaded, every point a subquery's inner expression gives and every point of
 * the answer counts against max_samples (a subquery's points are held for the whole query, as
 * Prometheus holds them while it evaluates the call over them); a time at which the inner
 * expression gives nothing costs no memory, and when it can give nothing at any time (a selector
 * without series, and what is built on it alone) it is not evaluated at all.
 */
#ifndef PS_QUERY_PROMQL_EVAL_H
#define PS_QUERY_PROMQL_EVAL_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "parser/promql.h"
#include "query/query.h"
#include "storage/store.h"

/* ---- where samples come from ---- */

/** One selected series: its labels and its samples, oldest first (stale markers included). */
typedef struct ps_pq_series {
    ps_labels_t labels;
    uint32_t n;
    const ps_float_sample_t *s;
} ps_pq_series_t;

/**
 * A sample source: select(ctx, sel, mint, maxt, ...) gives the series matching every matcher of
 * sel that have samples with mint <= t <= maxt (ms), with those samples (more around them do no
 * harm), in any order, everything allocated from arena. *budget is how many samples may still be
 * loaded: the source subtracts what it loads and fails with PS_ELIMIT once it would go below 0.
 */
typedef struct ps_pq_source {
    int (*select)(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                  ps_pq_series_t **out, uint32_t *n, ps_err_t *err);
    void *ctx;
} ps_pq_source_t;

/** The store as a source: float series and profile totals (ps_reader_samples) of the series
 *  ps_query_select finds; more than max_series series for one selector is PS_ELIMIT. */
typedef struct ps_pq_store_src {
    ps_reader_t *r;
    uint32_t max_series;
} ps_pq_store_src_t;
void ps_pq_store_source(ps_pq_source_t *src, ps_pq_store_src_t *ctx, ps_reader_t *r, uint32_t max_series);

/* ---- evaluation ---- */

typedef struct ps_pq_opts {
    int64_t start, end;   /* ms; an instant query has start == end */
    int64_t step;         /* ms, > 0 for a range query; 0 for an instant query */
    int64_t lookback;     /* ms (default 5 m) */
    uint64_t max_samples; /* samples loaded plus points in the answer (--query.max-samples, 50,000,000) */
    uint32_t max_points;  /* (end - start) / step of a range query at most this (11,000, as Prometheus) */
    int64_t timeout;      /* ms of evaluation (2 min); 0 = none */
    int64_t subquery_step; /* ms: a subquery's step when it gives none (Prometheus' evaluation_interval, 1 m) */
    uint64_t max_memory;  /* bytes the evaluation may hold: loaded series, subquery points, scratch, the
                             answer (--query.max-memory); 0 = no limit */
    int compat;           /* the Prometheus whose semantics to follow: 3 (the default), or 2 for 2.42's
                             (--promql.compat=2; see the head of this file) */
} ps_pq_opts_t;

void ps_pq_opts_default(ps_pq_opts_t *o);

/** An annotation of an answer (Prometheus 3's warnings and infos, util/annotations): msg is
 *  "PromQL warning: ..." or "PromQL info: ...", pos the byte offset in the query of the expression
 *  it is about. Given with compat 3 only. */
typedef struct ps_pq_annot {
    bool warn;
    const char *msg;
    uint32_t pos;
} ps_pq_annot_t;

/** An annotation as Prometheus prints it (annoErr.Error()): its message and the line:column of
 *  its position in the query of qlen bytes, "... (1:6)"; cut to fit buf. */
void ps_pq_annot_text(const ps_pq_annot_t *a, const char *query, size_t qlen, char *buf, size_t size);

/** An answer: resultType VSCALAR or VSTRING (t, scalar or str), VVECTOR (one point per series),
 *  VMATRIX (a range query's series, or a range selector's samples in an instant query); and its
 *  annotations, each message once (at most PS_PQ_MAX_ANNOTS, then nannots_dropped counts the others). */
#define PS_PQ_MAX_ANNOTS 64
typedef struct ps_pq_result {
    ps_pq_vtype_t type;
    uint32_t n;
    ps_qseries_t *series;
    double scalar;
    const char *str;
    int64_t t;            /* ms */
    uint32_t nannots, nannots_dropped;
    ps_pq_annot_t *annots;
} ps_pq_result_t;

/** Computes every duration expression of e (Prometheus 3's "x[step() * 2]", "offset (1h / 2)") for
 *  the query o, as Prometheus' PreprocessExpr does before it evaluates anything: PS_EINVAL with
 *  Prometheus' words when one is not a duration ("20:26: duration must be greater than 0"), which
 *  the API answers as a bad "query" parameter. ps_pq_eval computes them again, the same. */
int ps_pq_check_durations(const ps_pq_node_t *e, const ps_pq_opts_t *o, ps_err_t *err);

/** Evaluates e over src; everything in out is allocated from arena. */
int ps_pq_eval(const ps_pq_node_t *e, const ps_pq_source_t *src, const ps_pq_opts_t *o, ps_arena_t *arena,
               ps_pq_result_t *out, ps_err_t *err);

/** Go's strconv.FormatFloat(v, 'f', -1, 64) ("NaN", "+Inf", "-Inf"): count_values' label values.
 *  buf >= 352 bytes. */
void ps_pq_format_f(double v, char *buf, size_t size);

#endif
