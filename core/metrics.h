/*
 * metrics.h - the metrics registry: each metric family is one row (name, type, help, label
 * names), and one writer prints Prometheus' text exposition format (0.0.4) for all of them:
 *
 *   # HELP profstore_scrapes_total Scrapes finished, by job.
 *   # TYPE profstore_scrapes_total counter
 *   profstore_scrapes_total{job="node"} 12
 *
 * A room declares its families in a static table, keeps its values where it counts them (a
 * ps_counter_t, ps_gauge_t or ps_histogram_t, or a field it already has) and, when /metrics is
 * asked, writes each family's head once and then its samples. Label values are escaped here
 * (backslash, double quote, newline), never by the caller.
 */
#ifndef PS_CORE_METRICS_H
#define PS_CORE_METRICS_H

#include <stdatomic.h>
#include <stdint.h>

#include "core/mem.h"

typedef enum { PS_COUNTER, PS_GAUGE, PS_SUMMARY, PS_HISTOGRAM } ps_metric_kind_t;

/** One metric family. */
typedef struct ps_metric {
    const char *name;          /* profstore_scrapes_total */
    ps_metric_kind_t kind;
    const char *help;          /* one line */
    const char *const *labels; /* label names, NULL-terminated; NULL: none */
} ps_metric_t;

/** "# HELP name help\n# TYPE name type\n". */
void ps_metric_head(ps_buf_t *out, const ps_metric_t *m);

/** One sample: name+suffix (suffix may be NULL: "_sum", "_count"), then {label="value",...} with
 *  values[i] for m->labels[i] (values may be NULL when m has no labels), then the value. */
void ps_metric_u64(ps_buf_t *out, const ps_metric_t *m, const char *suffix, const char *const *values, uint64_t v);
/** The same with a float value printed with prec decimals ("%.3f"); an infinity or NaN is written
 *  as the format spells it: "+Inf", "-Inf", "NaN". */
void ps_metric_f(ps_buf_t *out, const ps_metric_t *m, const char *suffix, const char *const *values, double v,
                 int prec);

/** Head and the one sample of a family without labels. */
void ps_metric_write_u64(ps_buf_t *out, const ps_metric_t *m, uint64_t v);
/** The same with a float value (as ps_metric_f). */
void ps_metric_write_f(ps_buf_t *out, const ps_metric_t *m, double v, int prec);

/* ---- values a room keeps: relaxed atomics, no lock ---- */

typedef struct ps_counter {
    atomic_uint_fast64_t v;
} ps_counter_t;

static inline void ps_counter_add(ps_counter_t *c, uint64_t n) { atomic_fetch_add_explicit(&c->v, n, memory_order_relaxed); }
static inline uint64_t ps_counter_get(const ps_counter_t *c)
{
    return atomic_load_explicit(&((ps_counter_t *)c)->v, memory_order_relaxed);
}

typedef struct ps_gauge {
    atomic_int_fast64_t v;
} ps_gauge_t;

static inline void ps_gauge_set(ps_gauge_t *g, int64_t v) { atomic_store_explicit(&g->v, v, memory_order_relaxed); }
/** Adds d (may be negative) and returns the value after it. */
static inline int64_t ps_gauge_add(ps_gauge_t *g, int64_t d)
{
    return atomic_fetch_add_explicit(&g->v, d, memory_order_relaxed) + d;
}
static inline int64_t ps_gauge_get(const ps_gauge_t *g)
{
    return atomic_load_explicit(&((ps_gauge_t *)g)->v, memory_order_relaxed);
}

/** Bucket bounds of a duration histogram: upper bounds in ns, and as "le" writes them. */
typedef struct ps_histogram_buckets {
    uint32_t n;
    const int64_t *le_ns;
    const char *const *le; /* "0.005", ..., "10" */
} ps_histogram_buckets_t;

/** Prometheus' default buckets, 5 ms .. 10 s (DefBuckets). */
extern const ps_histogram_buckets_t ps_histogram_default_buckets;

#define PS_HISTOGRAM_MAX_BUCKETS 16

/** A duration histogram: counts per bucket (not cumulative; the last is past every bound), the
 *  sum in ns. Zero it, then observe. */
typedef struct ps_histogram {
    atomic_uint_fast64_t counts[PS_HISTOGRAM_MAX_BUCKETS + 1];
    atomic_uint_fast64_t sum_ns;
} ps_histogram_t;

/** Counts a duration of d ns (< 0 counts as 0). */
void ps_histogram_observe(ps_histogram_t *h, const ps_histogram_buckets_t *b, int64_t d);
/** Observations so far. */
uint64_t ps_histogram_count(const ps_histogram_t *h, const ps_histogram_buckets_t *b);
/** Writes h's samples (no head): cumulative _bucket lines with le, _sum in seconds (9 decimals,
 *  exact), _count; values as in ps_metric_u64 (the "le" label is added after them). */
void ps_metric_histogram(ps_buf_t *out, const ps_metric_t *m, const char *const *values, const ps_histogram_t *h,
                         const ps_histogram_buckets_t *b);

#endif
