/*
 * metrics.c - the one writer of Prometheus' text exposition format (see metrics.h).
 */
#include "core/metrics.h"

#include "core/fmt.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

static const char *type_name(ps_metric_kind_t t)
{
    switch (t) {
    case PS_COUNTER:
        return "counter";
    case PS_GAUGE:
        return "gauge";
    case PS_SUMMARY:
        return "summary";
    case PS_HISTOGRAM:
        return "histogram";
    }
    return "untyped";
}

void ps_metric_head(ps_buf_t *out, const ps_metric_t *m)
{
    ps_buf_printf(out, "# HELP %s %s\n# TYPE %s %s\n", m->name, m->help, m->name, type_name(m->kind));
}

/* name+suffix{labels[,le="..."]} and the space before the value */
static void series(ps_buf_t *out, const ps_metric_t *m, const char *suffix, const char *const *values, const char *le)
{
    ps_buf_printf(out, "%s%s", m->name, suffix ? suffix : "");
    size_t n = 0;
    for (const char *const *l = m->labels; l != NULL && *l != NULL; l++, n++) {
        ps_buf_printf(out, "%s%s=\"", n ? "," : "{", *l);
        ps_fmt_label_value_buf(out, values[n]);
        ps_buf_putc(out, '"');
    }
    if (le != NULL)
        ps_buf_printf(out, "%sle=\"%s\"", n++ ? "," : "{", le);
    if (n > 0)
        ps_buf_putc(out, '}');
    ps_buf_putc(out, ' ');
}

void ps_metric_u64(ps_buf_t *out, const ps_metric_t *m, const char *suffix, const char *const *values, uint64_t v)
{
    series(out, m, suffix, values, NULL);
    ps_buf_printf(out, "%llu\n", (unsigned long long)v);
}

void ps_metric_f(ps_buf_t *out, const ps_metric_t *m, const char *suffix, const char *const *values, double v, int prec)
{
    series(out, m, suffix, values, NULL);
    if (isnan(v))
        PS_BUF_LIT(out, "NaN\n");
    else if (isinf(v))
        ps_buf_printf(out, "%cInf\n", v > 0 ? '+' : '-');
    else
        ps_buf_printf(out, "%.*f\n", prec, v);
}

void ps_metric_write_u64(ps_buf_t *out, const ps_metric_t *m, uint64_t v)
{
    ps_metric_head(out, m);
    ps_metric_u64(out, m, NULL, NULL, v);
}

void ps_metric_write_f(ps_buf_t *out, const ps_metric_t *m, double v, int prec)
{
    ps_metric_head(out, m);
    ps_metric_f(out, m, NULL, NULL, v, prec);
}

static const int64_t def_le_ns[] = {5000000,   10000000,   25000000,   50000000,   100000000,  250000000,
                                    500000000, 1000000000, 2500000000, 5000000000, 10000000000};
static const char *const def_le[] = {"0.005", "0.01", "0.025", "0.05", "0.1", "0.25", "0.5", "1", "2.5", "5", "10"};
const ps_histogram_buckets_t ps_histogram_default_buckets = {11, def_le_ns, def_le};

void ps_histogram_observe(ps_histogram_t *h, const ps_histogram_buckets_t *b, int64_t d)
{
    if (d < 0)
        d = 0;
    uint32_t k = 0;
    while (k < b->n && d > b->le_ns[k])
        k++;
    atomic_fetch_add_explicit(&h->counts[k], 1, memory_order_relaxed);
    atomic_fetch_add_explicit(&h->sum_ns, (uint_fast64_t)d, memory_order_relaxed);
}

uint64_t ps_histogram_count(const ps_histogram_t *h, const ps_histogram_buckets_t *b)
{
    uint64_t n = 0;
    for (uint32_t k = 0; k <= b->n; k++)
        n += atomic_load_explicit(&((ps_histogram_t *)h)->counts[k], memory_order_relaxed);
    return n;
}

void ps_metric_histogram(ps_buf_t *out, const ps_metric_t *m, const char *const *values, const ps_histogram_t *h,
                         const ps_histogram_buckets_t *b)
{
    uint64_t cum = 0;
    for (uint32_t k = 0; k <= b->n; k++) {
        cum += atomic_load_explicit(&((ps_histogram_t *)h)->counts[k], memory_order_relaxed);
        series(out, m, "_bucket", values, k < b->n ? b->le[k] : "+Inf");
        ps_buf_printf(out, "%llu\n", (unsigned long long)cum);
    }
    uint64_t sum = atomic_load_explicit(&((ps_histogram_t *)h)->sum_ns, memory_order_relaxed);
    series(out, m, "_sum", values, NULL);
    ps_buf_printf(out, "%llu.%09llu\n", (unsigned long long)(sum / 1000000000), (unsigned long long)(sum % 1000000000));
    ps_metric_u64(out, m, "_count", values, cum);
}
