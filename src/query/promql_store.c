/*
 * promql_store.c - the store as a PromQL sample source (promql_eval.h): ps_query_select's series and
 * their ps_reader_samples (float samples, or a profile series' totals at its profile times).
 */
#include "promql_eval.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fmt.h"

typedef struct load_ctx {
    ps_float_sample_t *s;
    uint32_t n, cap;
    uint64_t *budget;
    uint64_t limit;
    ps_err_t *err;
} load_ctx_t;

static int on_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    load_ctx_t *l = ctx;
    if (n > *l->budget)
        return ps_err_set(l->err, PS_ELIMIT,
                          "query processing would load too many samples into memory in query execution (the limit is "
                          "%llu samples, %s)",
                          (unsigned long long)l->limit, ps_setting_name(PS_SETTING_QUERY_MAX_SAMPLES));
    *l->budget -= n;
    if (l->n + n > l->cap) {
        while (l->n + n > l->cap)
            l->cap = l->cap ? l->cap * 2 : 256;
        l->s = ps_xrealloc(l->s, l->cap * sizeof(ps_float_sample_t));
    }
    memcpy(l->s + l->n, s, n * sizeof(ps_float_sample_t));
    l->n += (uint32_t)n;
    return 0;
}

static int store_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                        ps_pq_series_t **out, uint32_t *nout, ps_err_t *err)
{
    ps_pq_store_src_t *st = ctx;
    ps_series_set_t set;
    *out = NULL;
    *nout = 0;
    /* every matching series, unranged: its samples are read next and a series without any in
     * [mint, maxt] left out there (a ranged selection would find each first sample twice, in
     * ps_reader_has_data and then here); --query.max-series counts the series kept */
    int ret = ps_query_select(st->r, sel, INT64_MIN, INT64_MAX, UINT32_MAX, arena, &set, err);
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
        if (n == st->max_series) {
            ret = ps_err_set(err, PS_ELIMIT, "the selector matches more than %u series (the limit, %s); narrow it",
                             st->max_series, ps_setting_name(PS_SETTING_QUERY_MAX_SERIES));
            break;
        }
        /* one sample per millisecond, as a Prometheus series has: of two profiles in the same ms
         * the first total stands (as remote_read answers them) */
        uint32_t k = 1;
        for (uint32_t j = 1; j < l.n; j++)
            if (l.s[j].t != l.s[k - 1].t)
                l.s[k++] = l.s[j];
        ps_float_sample_t *s = ps_arena_alloc(arena, k * sizeof(ps_float_sample_t));
        memcpy(s, l.s, k * sizeof(ps_float_sample_t));
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
