/*
 * memsrc.h - the in-memory float series the PromQL tests evaluate over: a series is a label set and
 * its samples in time order, and memsrc_select answers the engine's select call over an array of
 * them as the store's source does (the samples in [mint, maxt] of every matching series, counted
 * against the sample budget). Include after "../testutil.h".
 */
#ifndef PS_TEST_MEMSRC_H
#define PS_TEST_MEMSRC_H

#include "query/promql_eval.h"

typedef struct mem_series {
    ps_labels_t labels;
    char *key; /* the owner's key of the label set, or NULL */
    ps_float_sample_t *s;
    uint32_t n, cap;
} mem_series_t;

/** Whether every matcher of sel matches ls (a missing label is the empty value). */
static inline bool memsrc_matches(const ps_selector_t *sel, const ps_labels_t *ls)
{
    for (uint32_t i = 0; i < sel->n; i++) {
        const char *v = ps_labels_value(ls, sel->m[i].name);
        if (!ps_matcher_match(&sel->m[i], v ? v : "", v ? strlen(v) : 0))
            return false;
    }
    return true;
}

/** The engine's select over the n series of v. */
static inline int memsrc_select(mem_series_t *v, uint32_t n, ps_selector_t *sel, int64_t mint, int64_t maxt,
                                ps_arena_t *arena, uint64_t *budget, ps_pq_series_t **out, uint32_t *nout,
                                ps_err_t *err)
{
    ps_pq_series_t *o = ps_arena_alloc(arena, (n + 1) * sizeof(*o));
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        mem_series_t *s = &v[i];
        if (!memsrc_matches(sel, &s->labels))
            continue;
        uint32_t lo = 0, hi;
        while (lo < s->n && s->s[lo].t < mint)
            lo++;
        hi = lo;
        while (hi < s->n && s->s[hi].t <= maxt)
            hi++;
        if (hi == lo)
            continue;
        if (hi - lo > *budget)
            return ps_err_set(err, PS_ELIMIT, "query processing would load too many samples into memory in query "
                                              "execution");
        *budget -= hi - lo;
        o[k++] = (ps_pq_series_t){s->labels, hi - lo, s->s + lo};
    }
    *out = o;
    *nout = k;
    return 0;
}

#endif
