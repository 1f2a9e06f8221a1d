/*
 * query.c - the query engine (see query.h).
 */
#include "query.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/hash.h"
#include "core/timeutil.h"

void ps_query_limits_default(ps_query_limits_t *l)
{
    l->max_series = 10000;
    l->max_points = 11000;
    l->lookback_ns = 5 * 60 * PS_NS_PER_S;
}

/* ---- sorted id vectors ---- */

typedef struct idvec {
    uint64_t *v;
    size_t n, cap;
} idvec_t;

static void idvec_push(idvec_t *a, uint64_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = ps_xrealloc(a->v, a->cap * sizeof(uint64_t));
    }
    a->v[a->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void idvec_sort_unique(idvec_t *a)
{
    if (a->n < 2)
        return;
    qsort(a->v, a->n, sizeof(uint64_t), cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
}

static void idvec_intersect(idvec_t *a, const idvec_t *b)
{
    size_t i = 0, j = 0, k = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j])
            i++;
        else if (a->v[i] > b->v[j])
            j++;
        else {
            a->v[k++] = a->v[i];
            i++;
            j++;
        }
    }
    a->n = k;
}

static int on_posting(void *ctx, uint64_t sid)
{
    idvec_push(ctx, sid);
    return 0;
}

typedef struct values_ctx {
    ps_reader_t *r;
    ps_matcher_t *m;
    idvec_t *out;
    ps_err_t *err;
} values_ctx_t;

static int on_value(void *ctx, const char *v, size_t vlen)
{
    values_ctx_t *c = ctx;
    if (ps_matcher_match(c->m, v, vlen))
        return ps_reader_postings(c->r, c->m->name, c->m->nlen, v, vlen, on_posting, c->out, c->err);
    return 0;
}

static bool labels_match(ps_selector_t *sel, const ps_labels_t *ls)
{
    for (uint32_t i = 0; i < sel->n; i++) {
        ps_matcher_t *m = &sel->m[i];
        const char *v = "";
        size_t vl = 0;
        for (uint32_t j = 0; j < ls->n; j++)
            if (ls->pairs[j].nlen == m->nlen && memcmp(ls->pairs[j].name, m->name, m->nlen) == 0) {
                v = ls->pairs[j].value;
                vl = ls->pairs[j].vlen;
                break;
            }
        if (!ps_matcher_match(m, v, vl))
            return false;
    }
    return true;
}

int ps_query_select(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                    ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err)
{
    idvec_t cand = {0}, list = {0};
    bool have = false;
    int ret = 0;
    memset(out, 0, sizeof(*out));
    for (uint32_t i = 0; i < sel->n; i++) {
        ps_matcher_t *m = &sel->m[i];
        if (m->matches_empty)
            continue;
        list.n = 0;
        if (m->op == PS_MATCH_EQ) {
            ret = ps_reader_postings(r, m->name, m->nlen, m->value, m->vlen, on_posting, &list, err);
        } else {
            values_ctx_t c = {r, m, &list, err};
            ret = ps_reader_label_values(r, m->name, m->nlen, on_value, &c, err);
            idvec_sort_unique(&list);
        }
        if (ret) {
            ps_err_prefix(err, "reading the label index");
            goto Exit;
        }
        if (!have) {
            cand.n = 0;
            for (size_t k = 0; k < list.n; k++)
                idvec_push(&cand, list.v[k]);
            have = true;
        } else {
            idvec_intersect(&cand, &list);
        }
        if (cand.n == 0)
            break;
    }
    if (!have) {
        ret = ps_err_set(err, PS_EINVAL, "vector selector must contain at least one non-empty matcher");
        goto Exit;
    }
    out->sids = ps_arena_alloc(arena, (cand.n + 1) * sizeof(uint64_t));
    out->labels = ps_arena_alloc(arena, (cand.n + 1) * sizeof(ps_labels_t));
    bool ranged = start != INT64_MIN || end != INT64_MAX;
    for (size_t k = 0; k < cand.n; k++) {
        ps_labels_t ls;
        int rc = ps_reader_series_labels(r, cand.v[k], arena, &ls, err);
        if (rc == PS_ENOTFOUND)
            continue; /* a postings entry without its series: not a series of this snapshot */
        if (rc) {
            ret = rc;
            goto Exit;
        }
        if (!labels_match(sel, &ls))
            continue;
        if (ranged && (rc = ps_reader_has_data(r, cand.v[k], start, end, err)) <= 0) {
            if (rc == 0)
                continue;
            ret = rc;
            goto Exit;
        }
        if (out->n == max_series) {
            ret = ps_err_set(err, PS_ELIMIT,
                             "the selector matches more than %u series (the limit, --query.max-series); narrow it",
                             max_series);
            goto Exit;
        }
        out->sids[out->n] = cand.v[k];
        out->labels[out->n] = ls;
        out->n++;
    }
Exit:
    free(cand.v);
    free(list.v);
    return ret;
}

int ps_query_single_type(const ps_series_set_t *s, const char **type, ps_err_t *err)
{
    *type = NULL;
    const char *types[8];
    uint32_t nt = 0;
    bool more = false;
    for (uint32_t i = 0; i < s->n; i++) {
        const ps_label_pair_t *nm = ps_labels_get(&s->labels[i], "__name__");
        const char *t = nm ? nm->value : "";
        bool seen = false;
        for (uint32_t k = 0; k < nt; k++)
            seen |= strcmp(types[k], t) == 0;
        if (!seen) {
            if (nt < 8)
                types[nt++] = t;
            else
                more = true;
        }
    }
    if (nt > 1) {
        char list[1024] = "";
        size_t off = 0;
        for (uint32_t k = 0; k < nt && off < sizeof(list); k++)
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", k ? ", " : "", types[k]);
        return ps_err_set(err, PS_EINVAL,
                          "the selector matches series of %s%u profile types (%s%s); merging different types is "
                          "meaningless: add __name__ or a profile type to the selector",
                          more ? "more than " : "", nt, list, more ? ", ..." : "");
    }
    *type = nt ? types[0] : NULL;
    return 0;
}

/* ---- node map ---- */

void ps_nodemap_init(ps_nodemap_t *m)
{
    m->cap = 1024;
    m->count = 0;
    m->keys = ps_xcalloc(m->cap, sizeof(uint64_t));
    m->vals = ps_xcalloc(m->cap, sizeof(int64_t));
}

void ps_nodemap_dispose(ps_nodemap_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}

static inline size_t slot_of(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static void nodemap_grow(ps_nodemap_t *m)
{
    uint64_t *ok = m->keys;
    int64_t *ov = m->vals;
    size_t ocap = m->cap;
    m->cap *= 2;
    m->keys = ps_xcalloc(m->cap, sizeof(uint64_t));
    m->vals = ps_xcalloc(m->cap, sizeof(int64_t));
    for (size_t i = 0; i < ocap; i++) {
        if (ok[i] == 0)
            continue;
        size_t j = slot_of(ok[i], m->cap - 1);
        while (m->keys[j] != 0)
            j = (j + 1) & (m->cap - 1);
        m->keys[j] = ok[i];
        m->vals[j] = ov[i];
    }
    free(ok);
    free(ov);
}

void ps_nodemap_add(ps_nodemap_t *m, uint64_t node, int64_t v)
{
    if (node == 0)
        return;
    if ((m->count + 1) * 2 > m->cap)
        nodemap_grow(m);
    size_t mask = m->cap - 1, j = slot_of(node, mask);
    while (m->keys[j] != 0 && m->keys[j] != node)
        j = (j + 1) & mask;
    if (m->keys[j] == 0) {
        m->keys[j] = node;
        m->vals[j] = 0;
        m->count++;
    }
    m->vals[j] = (int64_t)((uint64_t)m->vals[j] + (uint64_t)v);
}

int64_t ps_nodemap_get(const ps_nodemap_t *m, uint64_t node)
{
    if (node == 0 || m->cap == 0)
        return 0;
    size_t mask = m->cap - 1, j = slot_of(node, mask);
    while (m->keys[j] != 0) {
        if (m->keys[j] == node)
            return m->vals[j];
        j = (j + 1) & mask;
    }
    return 0;
}

static void on_node_add(void *ctx, uint64_t node, int64_t v)
{
    ps_nodemap_add(ctx, node, v);
}

int ps_query_merge_range(ps_reader_t *r, const ps_series_set_t *s, int64_t start, int64_t end, ps_nodemap_t *acc,
                         ps_sum_info_t *info, ps_err_t *err)
{
    for (uint32_t i = 0; i < s->n; i++) {
        int ret = ps_reader_sum(r, s->sids[i], start, end, on_node_add, acc, info, err);
        if (ret)
            return ret;
    }
    return 0;
}

int ps_query_merge_at(ps_reader_t *r, const ps_series_set_t *s, int64_t at, int64_t lookback, ps_nodemap_t *acc,
                      ps_sum_info_t *info, ps_err_t *err)
{
    for (uint32_t i = 0; i < s->n; i++) {
        int64_t ts;
        int ret = ps_reader_latest(r, s->sids[i], at - lookback + 1, at, &ts, err);
        if (ret == PS_ENOTFOUND)
            continue;
        if (ret)
            return ret;
        if ((ret = ps_reader_sum(r, s->sids[i], ts, ts, on_node_add, acc, info, err)) != 0)
            return ret;
    }
    return 0;
}

int ps_profile_type_parts(const char *id, ps_arena_t *a, const char *parts[6])
{
    int k = 0;
    size_t n = strlen(id), start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || id[i] == ':') {
            if (k == 6)
                return PS_EINVAL;
            parts[k++] = ps_arena_strndup(a, id + start, i - start);
            start = i + 1;
        }
    }
    if (k < 5 || (k == 6 && strcmp(parts[5], "delta") != 0))
        return PS_EINVAL;
    if (k == 5)
        parts[5] = NULL;
    return 0;
}

int ps_query_profile(ps_reader_t *r, const char *type_id, const ps_nodemap_t *a, const ps_nodemap_t *b, int mode,
                     const ps_sum_info_t *info, ps_arena_t *arena, ps_profile_t *out, ps_err_t *err)
{
    const char *parts[6];
    if (type_id == NULL || ps_profile_type_parts(type_id, arena, parts) != 0)
        return ps_err_set(err, PS_EINVAL, "\"%s\" is not a profile type id (name:type:unit:period_type:period_unit)",
                          type_id ? type_id : "");
    uint32_t nv = mode == PS_PROFILE_PAIR ? 2 : 1;
    size_t cap = a->count + (b ? b->count : 0) + 1, n = 0;
    uint64_t *nodes = ps_xmalloc(cap * sizeof(uint64_t));
    int64_t *vals = ps_xmalloc(cap * nv * sizeof(int64_t));
    for (size_t i = 0; i < a->cap; i++) {
        if (a->keys[i] == 0)
            continue;
        uint64_t node = a->keys[i];
        int64_t va = a->vals[i], vb = b ? ps_nodemap_get(b, node) : 0;
        if (mode == PS_PROFILE_ONE) {
            if (va == 0)
                continue;
            vals[n] = va;
        } else if (mode == PS_PROFILE_SUB) {
            if (vb - va == 0)
                continue;
            vals[n] = vb - va;
        } else {
            if (va == 0 && vb == 0)
                continue;
            vals[2 * n] = va;
            vals[2 * n + 1] = vb;
        }
        nodes[n++] = node;
    }
    if (b != NULL && mode != PS_PROFILE_ONE) {
        for (size_t i = 0; i < b->cap; i++) {
            if (b->keys[i] == 0 || b->vals[i] == 0 || ps_nodemap_get(a, b->keys[i]) != 0)
                continue;
            if (mode == PS_PROFILE_SUB) {
                vals[n] = b->vals[i];
            } else {
                vals[2 * n] = 0;
                vals[2 * n + 1] = b->vals[i];
            }
            nodes[n++] = b->keys[i];
        }
    }
    const char *st[4] = {parts[1], parts[2], parts[1], parts[2]}, *pt[2] = {parts[3], parts[4]};
    int ret = ps_reader_materialize(r, nodes, vals, n, nv, st, pt, arena, out, err);
    if (ret == 0 && info != NULL) {
        out->time_nanos = info->profiles ? info->min_ts : 0;
        out->duration_nanos = info->duration;
        out->period = info->period;
    }
    free(nodes);
    free(vals);
    return ret;
}

/* ---- expression evaluation ---- */

typedef struct vec {
    uint32_t n, cap;
    ps_qseries_t *s;
} vecres_t;

typedef struct evalctx {
    ps_reader_t *r;
    int64_t start, end, step;
    bool instant;
    uint32_t npoints;
    const ps_query_limits_t *lim;
    ps_arena_t *arena;
    ps_err_t *err;
} evalctx_t;

typedef struct bucket_ctx {
    evalctx_t *e;
    double *vals;
    uint8_t *has;
} bucket_ctx_t;

static int on_bucket(void *ctx, const ps_stored_profile_t *p)
{
    bucket_ctx_t *b = ctx;
    evalctx_t *e = b->e;
    /* t_k = start + k*step holds profiles in (t_k - step, t_k]: k = ceil((ts - start) / step) */
    int64_t d = p->ts - e->start;
    int64_t k = d <= 0 ? -((-d) / e->step) : (d + e->step - 1) / e->step;
    if (k < 0 || k >= (int64_t)e->npoints)
        return 0;
    b->vals[k] += (double)p->total;
    b->has[k] = 1;
    return 0;
}

static void push_series(evalctx_t *e, vecres_t *out, const ps_labels_t *ls, const double *vals, const uint8_t *has)
{
    uint32_t np = 0;
    for (uint32_t k = 0; k < e->npoints; k++)
        np += has[k];
    if (np == 0)
        return;
    if (out->n == out->cap) {
        uint32_t nc = out->cap ? out->cap * 2 : 16;
        ps_qseries_t *ns = ps_arena_alloc(e->arena, nc * sizeof(*ns));
        if (out->n)
            memcpy(ns, out->s, out->n * sizeof(*ns));
        out->s = ns;
        out->cap = nc;
    }
    ps_qseries_t *q = &out->s[out->n++];
    q->labels = *ls;
    q->n = np;
    q->points = ps_arena_alloc(e->arena, np * sizeof(ps_point_t));
    uint32_t j = 0;
    for (uint32_t k = 0; k < e->npoints; k++)
        if (has[k])
            q->points[j++] = (ps_point_t){(e->start + (int64_t)k * e->step) / 1000000, vals[k]};
}

static int eval_selector(evalctx_t *e, ps_selector_t *sel, vecres_t *out)
{
    ps_series_set_t set;
    int64_t lo = e->instant ? e->start - e->lim->lookback_ns + 1 : e->start - e->step + 1;
    int ret = ps_query_select(e->r, sel, lo, e->end, e->lim->max_series, e->arena, &set, e->err);
    if (ret)
        return ret;
    double *vals = ps_xmalloc(e->npoints * sizeof(double));
    uint8_t *has = ps_xmalloc(e->npoints);
    for (uint32_t i = 0; i < set.n && ret == 0; i++) {
        memset(vals, 0, e->npoints * sizeof(double));
        memset(has, 0, e->npoints);
        if (e->instant) {
            int64_t ts;
            int rc = ps_reader_latest(e->r, set.sids[i], lo, e->end, &ts, e->err);
            if (rc == 0) {
                ps_sum_info_t info = {0};
                ret = ps_reader_sum(e->r, set.sids[i], ts, ts, NULL, NULL, &info, e->err);
                vals[0] = (double)info.total;
                has[0] = 1;
            } else if (rc != PS_ENOTFOUND) {
                ret = rc;
            }
        } else {
            bucket_ctx_t b = {e, vals, has};
            ret = ps_reader_profiles(e->r, set.sids[i], lo, e->end, true, on_bucket, &b, e->err);
        }
        if (ret == 0)
            push_series(e, out, &set.labels[i], vals, has);
    }
    free(vals);
    free(has);
    return ret;
}

static ps_labels_t group_labels(evalctx_t *e, const ps_expr_t *x, const ps_labels_t *in)
{
    ps_labels_t g = {0, ps_arena_alloc(e->arena, (in->n + 1) * sizeof(ps_label_pair_t))};
    if (!x->grouped)
        return g; /* sum(): everything in one group, no labels */
    for (uint32_t i = 0; i < in->n; i++) {
        bool listed = false;
        for (uint32_t k = 0; k < x->ngroup; k++)
            listed |= strcmp(in->pairs[i].name, x->group[k]) == 0;
        bool is_name = strcmp(in->pairs[i].name, "__name__") == 0;
        if (x->without ? (!listed && !is_name) : listed)
            g.pairs[g.n++] = in->pairs[i];
    }
    return g;
}

static bool labels_equal(const ps_labels_t *a, const ps_labels_t *b)
{
    if (a->n != b->n)
        return false;
    for (uint32_t i = 0; i < a->n; i++)
        if (a->pairs[i].nlen != b->pairs[i].nlen || a->pairs[i].vlen != b->pairs[i].vlen ||
            memcmp(a->pairs[i].name, b->pairs[i].name, a->pairs[i].nlen) != 0 ||
            memcmp(a->pairs[i].value, b->pairs[i].value, a->pairs[i].vlen) != 0)
            return false;
    return true;
}

static int eval(evalctx_t *e, ps_expr_t *x, vecres_t *out, bool *is_scalar, double *scalar);

static int eval_sum(evalctx_t *e, ps_expr_t *x, vecres_t *out)
{
    vecres_t in = {0};
    bool sc = false;
    double sv;
    int ret = eval(e, x->lhs, &in, &sc, &sv);
    if (ret)
        return ret;
    if (sc)
        return ps_err_set(e->err, PS_EINVAL, "1:%u: sum() needs series, got a scalar", x->pos + 1);
    /* groups: linear search is fine for the few groups dashboards ask for; hash for many */
    ps_hmap_t idx;
    ps_hmap_init(&idx);
    uint32_t ng = 0;
    ps_labels_t *gl = ps_arena_alloc(e->arena, (in.n + 1) * sizeof(ps_labels_t));
    double **gv = ps_arena_alloc(e->arena, (in.n + 1) * sizeof(double *));
    uint8_t **gh = ps_arena_alloc(e->arena, (in.n + 1) * sizeof(uint8_t *));
    ps_buf_t key = PS_BUF_INIT;
    for (uint32_t i = 0; i < in.n; i++) {
        ps_labels_t g = group_labels(e, x, &in.s[i].labels);
        ps_buf_reset(&key);
        ps_labels_encode(&g, &key);
        uint64_t gi;
        if (!ps_hmap_get(&idx, key.data, key.len, &gi)) {
            gi = ng++;
            ps_hmap_put(&idx, key.data, key.len, gi);
            gl[gi] = g;
            gv[gi] = ps_arena_calloc(e->arena, e->npoints, sizeof(double));
            gh[gi] = ps_arena_calloc(e->arena, e->npoints, 1);
        }
        for (uint32_t k = 0; k < in.s[i].n; k++) {
            int64_t t = in.s[i].points[k].t * 1000000;
            int64_t sl = e->instant ? 0 : (t - e->start + e->step / 2) / e->step;
            uint32_t slot = sl < 0 ? UINT32_MAX : (uint32_t)sl;
            if (slot < e->npoints) {
                gv[gi][slot] += in.s[i].points[k].v;
                gh[gi][slot] = 1;
            }
        }
    }
    (void)labels_equal;
    for (uint32_t g = 0; g < ng; g++)
        push_series(e, out, &gl[g], gv[g], gh[g]);
    ps_buf_dispose(&key);
    ps_hmap_dispose(&idx);
    return 0;
}

static double binop(char op, double a, double b)
{
    switch (op) {
    case '+': return a + b;
    case '-': return a - b;
    case '*': return a * b;
    case '/': return a / b;
    case '%': return fmod(a, b);
    case '^': return pow(a, b);
    }
    return NAN;
}

static int eval(evalctx_t *e, ps_expr_t *x, vecres_t *out, bool *is_scalar, double *scalar)
{
    *is_scalar = false;
    switch (x->kind) {
    case PS_EXPR_NUMBER:
        *is_scalar = true;
        *scalar = x->num;
        return 0;
    case PS_EXPR_SELECTOR:
        return eval_selector(e, &x->sel, out);
    case PS_EXPR_SUM:
        return eval_sum(e, x, out);
    case PS_EXPR_NEG: {
        int ret = eval(e, x->lhs, out, is_scalar, scalar);
        if (ret)
            return ret;
        if (*is_scalar) {
            *scalar = -*scalar;
            return 0;
        }
        for (uint32_t i = 0; i < out->n; i++) {
            for (uint32_t k = 0; k < out->s[i].n; k++)
                out->s[i].points[k].v = -out->s[i].points[k].v;
            ps_labels_t *ls = &out->s[i].labels; /* like PromQL, arithmetic drops the metric name */
            ps_labels_t nl = {0, ps_arena_alloc(e->arena, (ls->n + 1) * sizeof(ps_label_pair_t))};
            for (uint32_t j = 0; j < ls->n; j++)
                if (strcmp(ls->pairs[j].name, "__name__") != 0)
                    nl.pairs[nl.n++] = ls->pairs[j];
            *ls = nl;
        }
        return 0;
    }
    case PS_EXPR_BINARY: {
        vecres_t l = {0}, r = {0};
        bool ls = false, rs = false;
        double lv = 0, rv = 0;
        int ret = eval(e, x->lhs, &l, &ls, &lv);
        if (ret == 0)
            ret = eval(e, x->rhs, &r, &rs, &rv);
        if (ret)
            return ret;
        if (!ls || !rs)
            return ps_err_set(e->err, PS_EINVAL,
                              "1:%u: binary operator \"%c\" between series is not supported: profstore answers "
                              "selectors, sum/sum by and number arithmetic",
                              x->pos + 1, x->op);
        *is_scalar = true;
        *scalar = binop(x->op, lv, rv);
        return 0;
    }
    }
    return ps_err_set(e->err, PS_EINVAL, "unsupported expression");
}

static int cmp_series(const void *a, const void *b)
{
    return ps_labels_cmp(&((const ps_qseries_t *)a)->labels, &((const ps_qseries_t *)b)->labels);
}

int ps_query_eval(ps_reader_t *r, ps_expr_t *x, int64_t start, int64_t end, int64_t step, bool instant,
                  const ps_query_limits_t *lim, ps_arena_t *arena, ps_qresult_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    evalctx_t e = {r, start, instant ? start : end, instant ? 1 : step, instant, 1, lim, arena, err};
    if (!instant) {
        if (step <= 0)
            return ps_err_set(err, PS_EINVAL,
                              "zero or negative query resolution step widths are not accepted. Try a positive integer");
        if (end < start)
            return ps_err_set(err, PS_EINVAL, "end timestamp must not be before start time");
        uint64_t np = (uint64_t)(end - start) / (uint64_t)step + 1;
        if (np > lim->max_points)
            return ps_err_set(err, PS_EINVAL,
                              "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                              "resolution (?step=XX)");
        e.npoints = (uint32_t)np;
    }
    vecres_t v = {0};
    bool sc = false;
    double sv = 0;
    int ret = eval(&e, x, &v, &sc, &sv);
    if (ret)
        return ret;
    if (sc) {
        if (instant) {
            out->type = PS_RES_SCALAR;
            out->scalar = sv;
            out->t = start / 1000000;
            return 0;
        }
        /* a scalar over a range: one series without labels, a point at every step */
        out->type = PS_RES_MATRIX;
        out->n = 1;
        out->series = ps_arena_calloc(arena, 1, sizeof(ps_qseries_t));
        out->series[0].n = e.npoints;
        out->series[0].points = ps_arena_alloc(arena, e.npoints * sizeof(ps_point_t));
        for (uint32_t k = 0; k < e.npoints; k++)
            out->series[0].points[k] = (ps_point_t){(start + (int64_t)k * step) / 1000000, sv};
        return 0;
    }
    if (v.n > 1)
        qsort(v.s, v.n, sizeof(ps_qseries_t), cmp_series);
    out->type = instant ? PS_RES_VECTOR : PS_RES_MATRIX;
    out->n = v.n;
    out->series = v.s;
    return 0;
}
