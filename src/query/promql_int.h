/*
 * promql_int.h - what promql_eval.c (the engine: plan, steps, selectors, operators, aggregations,
 * the evaluation of a call's arguments), promql_func.c (the functions) and promql_util.c (helpers
 * of both) share. Not an API: see promql_eval.h.
 *
 * The order of the files: promql_eval.c calls promql_func.c, both call promql_util.c, and neither
 * lower file calls back up. The engine evaluates a call's arguments (and the windows of a range
 * vector argument) itself, as Prometheus' engine.go does, and hands the values to the function.
 */
#ifndef PS_QUERY_PROMQL_INT_H
#define PS_QUERY_PROMQL_INT_H

#include <math.h>
#include <string.h>

#include "core/mem.h"
#include "core/hash.h"
#include "core/labels.h"
#include "parser/regex.h"
#include "promql_eval.h"

/* An element of an instant vector at one step. */
typedef struct pq_elem {
    ps_labels_t ls;
    double v;
    int64_t t;    /* the sample's time for a selector's elements, else the evaluation time */
    uint32_t src; /* 1 + the input series of a range function's result (kept apart at the root), else 0 */
} pq_elem_t;

typedef struct pq_vec {
    pq_elem_t *e;
    uint32_t n;
} pq_vec_t;

/* The value of a node at one step. */
typedef struct pq_val {
    ps_pq_vtype_t type; /* VSCALAR, VVECTOR or VSTRING */
    double s;
    pq_vec_t v;
    const char *str;
} pq_val_t;

/* A selector's series, loaded once for every step. */
typedef struct pq_sel {
    ps_pq_series_t *series; /* sorted by labels */
    ps_labels_t *noname;    /* each series' labels without __name__ */
    uint32_t *hint;         /* each series' index where its last window started (steps go forward) */
    uint32_t n;
    int64_t offset;
    bool has_at;
    int64_t at;
    int64_t range;          /* a range selector's [range], else 0 */
} pq_sel_t;

/* A subquery's points of one inner series (label index li into pq_node_t.sq_labels): every
 * time evaluated so far at which the series had a value, in malloc'd memory charged to the query. */
typedef struct pq_sq_col {
    ps_float_sample_t *s;
    uint32_t n, cap;
    bool unsorted;          /* a time before the last was added (a window behind the others) */
} pq_sq_col_t;

/* Times a subquery evaluated its inner expression at: the multiples k * step with lo <= k <= hi. */
typedef struct pq_sq_span {
    int64_t lo, hi;
} pq_sq_span_t;

/* A subquery's series in one window: slices of its columns (valid until the subquery is
 * evaluated again), the array in the scratch arena. */
typedef struct pq_sq_series {
    uint32_t li;
    uint32_t n;
    const ps_float_sample_t *s;
} pq_sq_series_t;

typedef struct pq_sq_window {
    pq_sq_series_t *s;
    uint32_t n;
} pq_sq_window_t;

/* A node of the tree as the engine runs it. */
typedef struct pq_node pq_node_t;
struct pq_node {
    const ps_pq_node_t *n;
    pq_node_t *a, *b;       /* UNARY/PAREN/AGG/MATRIX: a; BINARY: a, b; AGG param: b */
    pq_node_t **args;       /* CALL */
    uint32_t nargs;
    int matrix_arg;         /* CALL: the range vector argument, or -1 */
    pq_sel_t sel;           /* VECTOR, MATRIX */
    const char **names;     /* BINARY matching labels, AGG grouping: sorted */
    uint32_t nnames;
    ps_regex_t *re;         /* label_replace */
    ps_regex_match_t *md;
    ps_hmap_t m1, m2, m3;   /* per-step maps of the node's own work; a subquery's labels */
    int64_t sq_step;        /* SUBQUERY: its step (ms) */
    pq_sq_span_t *sq_spans; /* SUBQUERY: the times evaluated, sorted, disjoint and not adjacent */
    uint32_t sq_nspans, sq_capspans;
    pq_sq_col_t *sq_cols;   /* SUBQUERY: the points of each inner series (one per label index) */
    ps_labels_t *sq_labels; /* SUBQUERY: the inner series' labels (m3: labels -> index) */
    uint32_t sq_nlabels, sq_caplabels;
    ps_arena_t sq_scratch;  /* SUBQUERY: the scratch arena of one evaluation of the inner expression */
    int8_t sq_empty;        /* SUBQUERY: 1 the inner expression has no value at any time, -1 may have, 0 not known */
    int8_t invariant;       /* CALL: 1 step invariant (engine.go's preprocessExprHelper), -1 not, 0 not known yet */
    uint8_t *uniq_seen;     /* range CALL over a selector: its input series already in m3 (one byte each) */
    int64_t sq_start;       /* SUBQUERY directly under the query: the first time Prometheus evaluates its
                               inner expression at (pq_subquery_start), or INT64_MIN while not known */
    pq_node_t *next_all;    /* every node, for dispose */
};

typedef struct pq_ctx {
    const ps_pq_source_t *src;
    const ps_pq_opts_t *o;
    ps_arena_t *arena;      /* the answer's, and the loaded series' */
    ps_arena_t scratch;     /* one step's values */
    ps_err_t *err;
    uint64_t budget;        /* samples that may still be loaded or answered */
    int64_t deadline;       /* ps_time_mono() ns; 0 = none */
    uint32_t ticks;
    ps_buf_t kb;            /* the key being looked up (labels, signatures) */
    pq_node_t *all;
    uint32_t sq_depth;      /* > 0 while a subquery's inner expression is evaluated */
    pq_node_t *sq_cur;      /* then the innermost such subquery */
    uint64_t mem;           /* bytes of malloc'd memory held (subquery columns, a range query's series) */
    uint64_t mem_scratch;   /* bytes held by the scratch arenas of the evaluations waiting for a subquery's inner one */
    size_t arena_base;      /* arena->used_total when the evaluation began */
    int64_t open;           /* 1: windows are left-open, (t - range, t] (Prometheus 3); 0: [t - range, t] (2.x) */
    ps_pq_annot_t *annots;  /* the answer's annotations so far (Prometheus 3 only) */
    uint32_t nannots, nannots_dropped;
    struct {                /* histogram_quantile's buckets forced monotonic, merged over the query as */
        uint32_t count;     /* annotations.go's histogramQuantileForcedMonotonicityErr: how many times, */
        uint32_t pos;       /* where first, at which steps, the lowest and highest bucket fixed and the */
        int64_t min_ts, max_ts; /* largest decrease; given as one info at the end */
        double min_bucket, max_bucket, max_diff;
    } mono;
} pq_ctx_t;

/** Adds an annotation (warn or info; fmt after "PromQL warning: " / "PromQL info: ") about the
 *  expression at pos, once per message; nothing with 2.42's semantics. */
void pq_annotate(pq_ctx_t *c, bool warn, uint32_t pos, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/** The monotonicity info of the histogram_quantile calls of the query, if any fixed buckets. */
void pq_mono_annotate(pq_ctx_t *c);
/** Go's fmt %v (%g) of a float64: "1e+19", "123456.7", "NaN", "+Inf". buf >= 40 bytes. */
void pq_go_fmt_v(double v, char *b, size_t size);
/** Go's %q of s into buf (at most size bytes, cut). */
void pq_go_quote(const char *s, char *buf, size_t size);

/** Prometheus 3's warning for a quantile outside [0, 1] or NaN (the parameter at pos). */
static inline void pq_check_quantile(pq_ctx_t *c, double q, uint32_t pos)
{
    if (isnan(q) || q < 0 || q > 1) {
        char b[48];
        pq_go_fmt_v(q, b, sizeof(b));
        pq_annotate(c, true, pos, "quantile value should be between 0 and 1, got %s", b);
    }
}


#define PQ_STALE_BITS 0x7ff0000000000002ull

/* A label name a query may make (label_replace, label_join, count_values): Prometheus 3 takes any
 * non-empty UTF-8 (model.UTF8Validation), 2.42 the classic [a-zA-Z_][a-zA-Z0-9_]*. */
static inline bool pq_label_name_ok(const pq_ctx_t *c, const char *s)
{
    size_t n = strlen(s);
    return c->open ? n > 0 && ps_utf8_valid(s, n) : ps_label_name_valid(s, n);
}

/* Prometheus 3's kahansum.Inc: Neumaier's compensated sum, the compensation dropped once the sum
 * is infinite. Returns the new sum; *c is the compensation. */
static inline double pq_kahan_inc(double inc, double sum, double *c)
{
    double t = sum + inc;
    if (isinf(t))
        *c = 0;
    else if (fabs(sum) >= fabs(inc))
        *c += (sum - t) + inc;
    else
        *c += (inc - t) + sum;
    return t;
}

/* ---- small helpers, inline (the engine calls them per element) ---- */

/* Go's math.Max / math.Min: NaN wins, and +0 > -0. */
static inline double pq_go_max(double a, double b)
{
    if (isinf(a) && a > 0)
        return a;
    if (isinf(b) && b > 0)
        return b;
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == 0 && a == b)
        return signbit(a) ? b : a;
    return a > b ? a : b;
}

static inline double pq_go_min(double a, double b)
{
    if (isinf(a) && a < 0)
        return a;
    if (isinf(b) && b < 0)
        return b;
    if (isnan(a) || isnan(b))
        return NAN;
    if (a == 0 && a == b)
        return signbit(a) ? a : b;
    return a < b ? a : b;
}

/** A vector for cap elements (and one more) in the step's scratch arena. */
static inline pq_vec_t pq_vec_new(pq_ctx_t *c, uint32_t cap)
{
    pq_vec_t v = {ps_arena_alloc(&c->scratch, (cap + 1) * sizeof(pq_elem_t)), 0};
    return v;
}

/** A label pair, and a whole label set (b reset first), as the bytes of a map key. */
static inline void pq_key_pair(ps_buf_t *b, const ps_label_pair_t *p)
{
    ps_buf_append(b, p->name, p->nlen);
    ps_buf_putc(b, 0xff);
    ps_buf_append(b, p->value, p->vlen);
    ps_buf_putc(b, 0xff);
}

static inline void pq_key_all(ps_buf_t *b, const ps_labels_t *ls)
{
    ps_buf_reset(b);
    for (uint32_t i = 0; i < ls->n; i++)
        pq_key_pair(b, &ls->pairs[i]);
}

/* ---- promql_util.c ---- */

/** ls without __name__ (borrowed when it has none or it comes first), in arena a / the scratch arena. */
ps_labels_t pq_drop_name_in(ps_arena_t *a, const ps_labels_t *ls);
ps_labels_t pq_drop_name(pq_ctx_t *c, const ps_labels_t *ls);
/** rangeEval's check of a step's vector (node p's m2): "vector cannot contain metrics with the
 *  same labelset" (PS_ELIMIT). */
int pq_check_unique(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *v);
/** Matrix.ContainsSameLabelset over the whole evaluation of node p (its m3: labels -> id):
 *  Prometheus checks the result matrix of a range function or of a unary minus, so the results
 *  of two input series (id: which one) with the same labels fail even at different steps. */
int pq_check_unique_range(pq_ctx_t *c, pq_node_t *p, const ps_labels_t *ls, uint64_t id);
/** Prometheus' quantile() over vals (sorted in place, NaN first); exact_rank: 3.x's value at a whole rank. */
double pq_quantile(double q, double *vals, uint32_t n, bool exact_rank);

/* ---- promql_eval.c ---- */

int pq_eval(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out);
int pq_tick(pq_ctx_t *c);
/** PS_ELIMIT naming --query.max-memory once what the query holds (its arenas, subquery columns,
 *  answer) is over the limit, else 0. Called at every 256th tick and after each big allocation. */
int pq_mem_check(pq_ctx_t *c);
/** The start of the evaluation of subquery p's inner expression when p is not inside another
 *  subquery: Prometheus evaluates it once over the query, from the query's start less its offset
 *  (@ made an offset from the start) and range, up to a multiple of its step. */
int64_t pq_subquery_start(pq_ctx_t *c, pq_node_t *p);
/** Samples of series s in [mint, maxt] without stale markers: in the series itself when there
 *  are none, else copied into the scratch arena. hint (or NULL): where the series' previous
 *  window started, updated; a later window then starts from there instead of a binary search. */
uint32_t pq_window(pq_ctx_t *c, const ps_pq_series_t *s, int64_t mint, int64_t maxt, uint32_t *hint,
                   const ps_float_sample_t **out);
/** A subquery node's series over [mint, maxt]: the inner expression at each multiple of its step
 *  there (each time evaluated once per query; not at all when it can have no value). The slices
 *  in w stay valid until the next call for p. */
int pq_subquery_window(pq_ctx_t *c, pq_node_t *p, int64_t mint, int64_t maxt, pq_sq_window_t *w);

/* ---- promql_func.c ---- */

/** Checks that a call can be evaluated (PS_EUNSUPPORTED naming the function if not) and
 *  prepares it (label_replace's regex). */
int pq_call_plan(pq_ctx_t *c, pq_node_t *p);
/** A call without a range vector argument at ts: a[0..3] are its arguments' values, evaluated by
 *  the engine (a string argument's is left zero: the function reads it from the tree). */
int pq_call_eval(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *a, pq_val_t *out);
/** Range function fn over one series' window p[0..n) of [rstart, rend] (the range range_ms),
 *  evaluated at ts_fn with the scalar arguments sargs. false: no output for this series. */
bool pq_range_fn(pq_ctx_t *c, ps_pq_fn_t fn, const ps_float_sample_t *p, uint32_t n, int64_t ts_fn, int64_t rstart,
                 int64_t rend, int64_t range_ms, const double *sargs, double *res);
/** Prometheus 3.16's anchored (smoothed false) or smoothed range function fn (rate, increase, delta;
 *  resets and changes when anchored) over one series' window p[0..n) of (rstart - lookback, rend]
 *  (smoothed: up to rend + lookback); rstart, rend and range_ms as pq_range_fn's. false: no output. */
bool pq_extended_fn(ps_pq_fn_t fn, bool smoothed, const ps_float_sample_t *p, uint32_t n, int64_t rstart,
                    int64_t rend, int64_t range_ms, double *res);
/** extendFloats: an anchored or smoothed range selector's samples p[0..n) (n > 0, the window of
 *  pq_extended_fn) as its answer: those inside (mint, maxt) framed by the values picked or
 *  interpolated at mint and maxt, into out (room for n + 2); the count, 0 when none is after mint. */
uint32_t pq_extend_window(const ps_float_sample_t *p, uint32_t n, int64_t mint, int64_t maxt, bool smoothed,
                          ps_float_sample_t *out);
/** interpolate: the value at t on the line from a to b (counter: a counter reset from a to b
 *  counts from 0). */
double pq_interpolate(ps_float_sample_t a, ps_float_sample_t b, int64_t t, bool counter);
/** createLabelsForAbsentFunction: the equality matchers of a selector argument, but none of a
 *  name that another matcher of the selector also names (absent and absent_over_time). */
ps_labels_t pq_absent_labels(pq_ctx_t *c, const ps_pq_node_t *arg);

#endif
