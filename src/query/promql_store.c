/*
 * promql_store.c - the store as a PromQL sample source (promql.h): ps_query_select's series and
 * their ps_reader_samples (float samples, or a profile series' totals at its profile times).
 */
#include "promql.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fmt.h"

typedef struct load_ctx {
    ps_fsample_t *s;
    uint32_t n, cap;
    uint64_t *budget;
    uint64_t limit;
    ps_err_t *err;
} load_ctx_t;

static int on_samples(void *ctx, const ps_fsample_t *s, size_t n)
{
    load_ctx_t *l = ctx;
    if (n > *l->budget)
        return ps_err_set(l->err, PS_ELIMIT,
                          "query processing would load too many samples into memory in query execution (the limit is "
                          "%llu samples, --query.max-samples)",
                          (unsigned long long)l->limit);
    *l->budget -= n;
    if (l->n + n > l->cap) {
        while (l->n + n > l->cap)
            l->cap = l->cap ? l->cap * 2 : 256;
        l->s = ps_xrealloc(l->s, l->cap * sizeof(ps_fsample_t));
    }
    memcpy(l->s + l->n, s, n * sizeof(ps_fsample_t));
    l->n += (uint32_t)n;
    return 0;
}

static int64_t ms_to_ns(int64_t ms, bool up)
{
    if (ms <= INT64_MIN / 1000000)
        return INT64_MIN;
    if (ms >= INT64_MAX / 1000000)
        return INT64_MAX;
    return ms * 1000000 + (up ? 999999 : 0);
}

static int store_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                        ps_pq_series_t **out, uint32_t *nout, ps_err_t *err)
{
    ps_pq_store_src_t *st = ctx;
    ps_series_set_t set;
    *out = NULL;
    *nout = 0;
    int ret = ps_query_select(st->r, sel, ms_to_ns(mint, false), ms_to_ns(maxt, true), st->max_series, arena, &set, err);
    if (ret)
        return ret;
    ps_pq_series_t *v = ps_arena_alloc(arena, (set.n + 1) * sizeof(ps_pq_series_t));
    uint32_t n = 0;
    load_ctx_t l = {NULL, 0, 0, budget, 0, err};
    l.limit = *budget;
    for (uint32_t i = 0; i < set.n; i++) {
        l.n = 0;
        if ((ret = ps_reader_samples(st->r, set.sids[i], mint, maxt, on_samples, &l, err)) != 0)
            break;
        if (l.n == 0)
            continue;
        /* one sample per millisecond, as a Prometheus series has: of two profiles in the same ms
         * the first total stands (as remote_read answers them) */
        uint32_t k = 1;
        for (uint32_t j = 1; j < l.n; j++)
            if (l.s[j].t != l.s[k - 1].t)
                l.s[k++] = l.s[j];
        ps_fsample_t *s = ps_arena_alloc(arena, k * sizeof(ps_fsample_t));
        memcpy(s, l.s, k * sizeof(ps_fsample_t));
        v[n++] = (ps_pq_series_t){set.labels[i], k, s};
    }
    free(l.s);
    if (ret)
        return ret;
    *out = v;
    *nout = n;
    return 0;
}

void ps_pq_store_source(ps_pq_source_t *src, ps_pq_store_src_t *ctx, ps_reader_t *r, uint32_t max_series)
{
    ctx->r = r;
    ctx->max_series = max_series;
    src->select = store_select;
    src->ctx = ctx;
}

/* ---- Go's FormatFloat(v, 'f', -1, 64) ---- */

void ps_pq_format_f(double v, char *buf, size_t size)
{
    if (isnan(v) || isinf(v) || v == 0) {
        ps_fmt_float(v, buf, size);
        return;
    }
    /* the shortest digits that read back as v, then written without an exponent */
    char g[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(g, sizeof(g), "%.*e", prec - 1, v);
        if (strtod(g, NULL) == v)
            break;
    }
    char digits[24];
    size_t nd = 0;
    const char *p = g;
    bool neg = *p == '-';
    if (neg)
        p++;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    int exp = atoi(p + 1); /* value = 0.d1d2... * 10^(exp+1) */
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    ps_buf_t b = PS_BUF_INIT;
    if (neg)
        ps_buf_putc(&b, '-');
    int point = exp + 1; /* digits before the decimal point */
    if (point <= 0) {
        PS_BUF_LIT(&b, "0.");
        for (int i = 0; i < -point; i++)
            ps_buf_putc(&b, '0');
        ps_buf_append(&b, digits, nd);
    } else {
        for (int i = 0; i < point; i++)
            ps_buf_putc(&b, i < (int)nd ? (uint8_t)digits[i] : '0');
        if ((int)nd > point) {
            ps_buf_putc(&b, '.');
            ps_buf_append(&b, digits + point, nd - (size_t)point);
        }
    }
    snprintf(buf, size, "%.*s", (int)b.len, (const char *)b.data);
    ps_buf_dispose(&b);
}
