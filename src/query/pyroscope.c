/*
 * pyroscope.c - what Pyroscope's HTTP query API needs beyond the profile selections of query.c:
 * its query's profile type id resolved to a stored one, its timeline (step rule of
 * pkg/querier/timeline/calculator.go, steps as pkg/querier rangeSeries + timeline.New fill
 * them), and label names and values of profile series (querier.c's series and lists, with
 * __name__'s values in Pyroscope's 5-part form).
 */
#include <stdlib.h>
#include <string.h>

#include "querier.h"
#include "query_int.h"

/* ---- the profile type of a query ---- */

static int not_a_type(const char *param, const char *v, ps_err_t *err)
{
    const char *dot = strrchr(v, '.');
    if (strchr(v, ':') == NULL && dot != NULL && dot != v)
        return ps_err_set(err, PS_EINVAL,
                          "invalid parameter \"%s\": \"%.128s\" is the legacy <app>.<type> form, which is not "
                          "supported: give a profile type id and select the app by its label, e.g. "
                          "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"%.*s\"}",
                          param, v, (int)(dot - v > 64 ? 64 : dot - v), v);
    return ps_err_set(err, PS_EINVAL,
                      "invalid parameter \"%s\": \"%.128s\" is not a profile type id: expected "
                      "<name>:<sample-type>:<sample-unit>:<period-type>:<period-unit>[:delta], e.g. "
                      "process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                      param, v);
}

int ps_query_pyro_legacy(const char *q, size_t n, const char *param, ps_err_t *err)
{
    const char *brace = memchr(q, '{', n);
    size_t k = brace ? (size_t)(brace - q) : n;
    if (k == 0 || k > 200 || memchr(q, ':', k) != NULL || memchr(q, '.', k) == NULL)
        return 0;
    char name[201];
    memcpy(name, q, k);
    name[k] = 0;
    return not_a_type(param, name, err);
}

int ps_query_pyro_type(ps_reader_t *r, ps_selector_t *sel, const char *param, ps_arena_t *arena, const char **type,
                       ps_err_t *err)
{
    ps_matcher_t *m = NULL;
    for (uint32_t i = 0; i < sel->n; i++) {
        if (strcmp(sel->m[i].name, "__name__") != 0)
            continue;
        if (m != NULL)
            return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": more than one profile-type selection", param);
        m = &sel->m[i];
    }
    if (m == NULL)
        return ps_err_set(err, PS_EINVAL,
                          "invalid parameter \"%s\": the query must contain a profile-type selection, e.g. "
                          "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"app\"}",
                          param);
    if (m->op != PS_MATCH_EQ)
        return ps_err_set(err, PS_EINVAL,
                          "invalid parameter \"%s\": the profile type must be selected with \"=\" (its id before the "
                          "braces), not a negation or a regex",
                          param);
    const char *parts[6];
    if (ps_profile_type_parts(m->value, arena, parts) != 0)
        return not_a_type(param, m->value, err);
    int ret = ps_query_any_posting(r, "__name__", 8, m->value, m->vlen, err);
    if (ret < 0)
        return ret;
    if (ret == 0 && parts[5] == NULL) {
        char *d = ps_arena_alloc(arena, m->vlen + 7);
        memcpy(d, m->value, m->vlen);
        memcpy(d + m->vlen, ":delta", 7);
        if ((ret = ps_query_any_posting(r, "__name__", 8, d, m->vlen + 6, err)) < 0)
            return ret;
        if (ret) {
            m->value = d;
            m->vlen += 6;
        }
    }
    *type = m->value;
    return 0;
}

/* ---- timeline ---- */

/* Grafana's intervalv2 roundInterval, as Pyroscope's calculator.go has it: the first
 * {limit, step} with interval <= limit (ms), else 30 d under 6 w, else 1 y. */
static int64_t round_interval_ms(int64_t ns)
{
    static const int64_t table[][2] = {
        {10, 1},
        {15, 10},
        {35, 20},
        {75, 50},
        {150, 100},
        {350, 200},
        {750, 500},
        {1500, 1000},
        {3500, 2000},
        {7500, 5000},
        {12500, 10000},
        {17500, 15000},
        {25000, 20000},
        {45000, 30000},
        {90000, 60000},
        {210000, 120000},
        {450000, 300000},
        {750000, 600000},
        {1050000, 900000},
        {1500000, 1200000},
        {2700000, 1800000},
        {5400000, 3600000},
        {9000000, 7200000},
        {16200000, 10800000},
        {32400000, 21600000},
        {86400000, 43200000},
        {172800000, 86400000},
        {604800000, 86400000},
        {1814400000, 604800000},
    };
    for (size_t i = 0; i < sizeof(table) / sizeof(table[0]); i++)
        if (ns <= table[i][0] * 1000000)
            return table[i][1];
    return ns < 3628800000ll * 1000000 ? 2592000000ll : 31536000000ll;
}

int64_t ps_pyro_timeline_step(int64_t from_ms, int64_t until_ms)
{
    /* (until - from) in ns / 1500 (resolution), in integers without overflow: d ms * 2000 / 3 */
    uint64_t span = until_ms > from_ms ? (uint64_t)until_ms - (uint64_t)from_ms : 0; /* no overflow */
    int64_t d = span > 1000000000000000ull ? 1000000000000000ll : (int64_t)span; /* 31,700 y: a 1 y step long before */
    int64_t ns = d / 3 * 2000 + d % 3 * 2000 / 3;
    if (ns < 15 * 1000000000ll)
        return 15;
    return round_interval_ms(ns) / 1000;
}

typedef struct tl_ctx {
    int64_t from_ms, step_ms;
    uint32_t n;
    double *sum;
    uint64_t *count;
} tl_ctx_t;

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    tl_ctx_t *c = ctx;
    int64_t t = p->ts / 1000000, d = t - c->from_ms;
    if (d < 0)
        return 0;
    int64_t k = (d + c->step_ms - 1) / c->step_ms;
    if (k < (int64_t)c->n) {
        c->sum[k] += (double)p->total;
        c->count[k]++;
    }
    return 0;
}

/* ms to ns, saturating at the ends of int64 */
static int64_t ms_to_ns(int64_t ms)
{
    return ms > INT64_MAX / 1000000 ? INT64_MAX : ms < INT64_MIN / 1000000 ? INT64_MIN : ms * 1000000;
}

int ps_query_pyro_timeline(ps_reader_t *r, const ps_series_set_t *s, int64_t from_ms, int64_t until_ms, bool avg,
                           ps_arena_t *arena, ps_pyro_timeline_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    out->start_s = from_ms / 1000;
    out->step_s = ps_pyro_timeline_step(from_ms, until_ms);
    if (until_ms > from_ms) {
        uint64_t n = ((uint64_t)(until_ms / 1000) - (uint64_t)(from_ms / 1000)) / (uint64_t)out->step_s;
        if (n > (1u << 20))
            return ps_err_set(err, PS_ETOOBIG, "a timeline of %llu steps is too long", (unsigned long long)n);
        out->n = (uint32_t)n;
    }
    out->samples = ps_arena_calloc(arena, out->n ? out->n : 1, sizeof(uint64_t));
    if (out->n == 0)
        return 0;
    tl_ctx_t c = {from_ms, out->step_s * 1000, out->n, ps_arena_calloc(arena, out->n, sizeof(double)),
                  ps_arena_calloc(arena, out->n, sizeof(uint64_t))};
    double *means = avg ? ps_arena_calloc(arena, out->n, sizeof(double)) : NULL;
    for (uint32_t i = 0; i < s->n; i++) {
        int ret = ps_reader_profiles(r, s->sids[i], ms_to_ns(from_ms), ms_to_ns(until_ms), true, on_profile, &c, err);
        if (ret)
            return ret;
        if (avg) /* each series' mean of the step, the series summed: the merge's rule (ps_query_type_agg) */
            for (uint32_t k = 0; k < out->n; k++)
                if (c.count[k]) {
                    means[k] += c.sum[k] / (double)c.count[k];
                    c.sum[k] = 0;
                    c.count[k] = 0;
                }
    }
    for (uint32_t k = 0; k < out->n; k++) {
        double v = avg ? means[k] : c.sum[k];
        out->samples[k] = v > 0 ? (uint64_t)v : 0;
    }
    return 0;
}

typedef struct gkey {
    const char *key;
    uint32_t i; /* the series' index in the set */
} gkey_t;

static int cmp_gkey(const void *a, const void *b)
{
    const gkey_t *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->i > y->i) - (x->i < y->i);
}

int ps_query_pyro_groups(ps_reader_t *r, const ps_series_set_t *s, const char *by, int64_t from_ms, int64_t until_ms,
                         bool avg, ps_arena_t *arena, ps_pyro_group_t **out, uint32_t *n, ps_err_t *err)
{
    gkey_t *k = ps_arena_alloc(arena, (s->n ? s->n : 1) * sizeof(gkey_t));
    for (uint32_t i = 0; i < s->n; i++) {
        const char *v = ps_labels_value(&s->labels[i], by);
        k[i] = (gkey_t){v && v[0] ? v : "*", i};
    }
    qsort(k, s->n, sizeof(gkey_t), cmp_gkey);
    uint32_t ng = 0;
    for (uint32_t i = 0; i < s->n; i++)
        ng += i == 0 || strcmp(k[i - 1].key, k[i].key) != 0;
    if (ng > PS_PYRO_MAX_GROUPS)
        return ps_err_set(err, PS_ELIMIT,
                          "invalid parameter \"groupBy\": \"%.64s\" makes %u groups, more than the %d allowed; narrow "
                          "the query",
                          by, ng, PS_PYRO_MAX_GROUPS);
    *out = ps_arena_alloc(arena, (s->n ? s->n : 1) * sizeof(ps_pyro_group_t));
    *n = 0;
    ps_series_set_t g = {0, ps_arena_alloc(arena, (s->n ? s->n : 1) * sizeof(uint64_t)),
                         ps_arena_alloc(arena, (s->n ? s->n : 1) * sizeof(ps_labels_t))};
    for (uint32_t i = 0; i < s->n;) {
        uint32_t j = i;
        g.n = 0;
        for (; j < s->n && strcmp(k[j].key, k[i].key) == 0; j++) {
            g.sids[g.n] = s->sids[k[j].i];
            g.labels[g.n++] = s->labels[k[j].i];
        }
        ps_pyro_group_t *grp = &(*out)[(*n)++];
        grp->key = k[i].key;
        int ret = ps_query_pyro_timeline(r, &g, from_ms, until_ms, avg, arena, &grp->tl, err);
        if (ret)
            return ret;
        i = j;
    }
    return 0;
}

const char *ps_query_common_label(const ps_series_set_t *s, const char *name)
{
    const char *v = NULL;
    for (uint32_t i = 0; i < s->n; i++) {
        const char *x = ps_labels_value(&s->labels[i], name);
        if (x == NULL || x[0] == '\0' || (v != NULL && strcmp(v, x) != 0))
            return NULL;
        v = x;
    }
    return v;
}

/* ---- label names and values: the querier's (querier.h) ---- */

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* Profile type ids in Pyroscope's form: valid ids only, :delta dropped, sorted, unique. */
static void pyroscope_ids(ps_strlist_t *l, ps_arena_t *arena)
{
    uint32_t k = 0;
    for (uint32_t i = 0; i < l->n; i++) {
        const char *parts[6];
        if (ps_profile_type_parts(l->v[i], arena, parts) != 0)
            continue;
        size_t n = strlen(l->v[i]);
        l->v[k++] = parts[5] ? ps_arena_strndup(arena, l->v[i], n - 6) : l->v[i];
    }
    if (k > 1)
        qsort(l->v, k, sizeof(char *), cmp_cstr);
    uint32_t u = 0;
    for (uint32_t i = 0; i < k; i++)
        if (u == 0 || strcmp(l->v[u - 1], l->v[i]) != 0)
            l->v[u++] = l->v[i];
    l->n = u;
}

int ps_query_pyro_labels(ps_reader_t *r, const char *name, ps_selector_t *sel, int64_t start, int64_t end,
                         ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    /* Grafana's LabelNames/LabelValues rule: profile series (by their kind) with data in the range;
     * as many as the store holds, no series limit (without sel the label index's profile times) */
    int ret = ps_querier_label_list(r, name, sel, sel ? 1 : 0, start, end, arena, out, err);
    if (ret)
        return ret;
    if (name != NULL && strcmp(name, "__name__") == 0)
        pyroscope_ids(out, arena);
    return 0;
}
