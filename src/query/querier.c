/*
 * querier.c - Pyroscope's querier semantics over the query engine (see querier.h).
 */
#include "querier.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "core/hash.h"
#include "core/sat.h"
#include "query_int.h"

#define NS_PER_MS 1000000
#define MS_MAX (INT64_MAX / NS_PER_MS - 1)

int ps_querier_range(int64_t start_ms, int64_t end_ms, int64_t *start_ns, int64_t *end_ns, ps_err_t *err)
{
    if (start_ms == 0 && end_ms == 0) {
        *start_ns = INT64_MIN;
        *end_ns = INT64_MAX;
        return 0;
    }
    if (start_ms > end_ms)
        return ps_err_set(err, PS_EINVAL, "start (%lld ms) is after end (%lld ms)", (long long)start_ms,
                          (long long)end_ms);
    if (start_ms < -MS_MAX || end_ms > MS_MAX)
        return ps_err_set(err, PS_EINVAL, "%s (%lld ms) is out of range (ms since 1970 within +-%lld)",
                          start_ms < -MS_MAX ? "start" : "end", (long long)(start_ms < -MS_MAX ? start_ms : end_ms),
                          (long long)MS_MAX);
    *start_ns = start_ms * NS_PER_MS;
    *end_ns = end_ms * NS_PER_MS + (NS_PER_MS - 1);
    return 0;
}

int ps_querier_selector(const char *type_id, const char *label_selector, const char *field, ps_arena_t *arena,
                        ps_selector_t *out, ps_err_t *err)
{
    const char *s = label_selector && label_selector[0] ? label_selector : "{}";
    memset(out, 0, sizeof(*out));
    if (type_id != NULL) {
        const char *parts[6];
        if (ps_profile_type_parts(type_id, arena, parts) != 0)
            return ps_err_set(err, PS_EINVAL,
                              "profile_typeID: \"%.200s\" is not a profile type id "
                              "(name:sample_type:sample_unit:period_type:period_unit[:delta]; ProfileTypes lists them)",
                              type_id);
    }
    ps_selector_t sel;
    int ret = ps_selector_parse_labels(s, strlen(s), arena, &sel, err);
    if (ret != 0)
        return ps_err_prefix(err, "%s", field);
    for (uint32_t i = 0; i < sel.n; i++)
        if (strcmp(sel.m[i].name, "__profile_type__") == 0) { /* Pyroscope's name of the type label */
            sel.m[i].name = "__name__";
            sel.m[i].nlen = 8;
        }
    if (type_id == NULL) {
        *out = sel;
        return 0;
    }
    out->n = sel.n + 1;
    out->m = ps_arena_alloc(arena, out->n * sizeof(ps_matcher_t));
    out->m[0] = (ps_matcher_t){.op = PS_MATCH_EQ, .name = "__name__", .nlen = 8, .value = type_id,
                               .vlen = strlen(type_id)};
    if (sel.n)
        memcpy(out->m + 1, sel.m, sel.n * sizeof(ps_matcher_t));
    return 0;
}

/* ---- profile types ---- */

typedef struct types_ctx {
    ps_reader_t *r;
    int64_t start, end;
    ps_arena_t *arena;
    const char **v;
    uint32_t n, cap;
    ps_err_t *err;
} types_ctx_t;

typedef struct has_ctx {
    ps_reader_t *r;
    int64_t start, end;
    ps_err_t *err;
} has_ctx_t;


/* 1 (stop) at the first profile series with data in the range (the rule of ps_querier_series) */
static int on_type_series(void *ctx, uint64_t sid)
{
    has_ctx_t *h = ctx;
    return ps_query_profile_series_has(h->r, sid, h->start, h->end, h->err);
}

static int on_type_name(void *ctx, const char *v, size_t n)
{
    types_ctx_t *t = ctx;
    const char *parts[6];
    char *id = ps_arena_strndup(t->arena, v, n);
    if (ps_profile_type_parts(id, t->arena, parts) != 0)
        return 0; /* a float series' name */
    has_ctx_t h = {t->r, t->start, t->end, t->err}; /* a float series may have a name of that shape too */
    int rc = ps_reader_postings(t->r, "__name__", 8, v, n, on_type_series, &h, t->err);
    if (rc <= 0)
        return rc;
    if (t->n == t->cap) {
        t->cap = t->cap ? t->cap * 2 : 16;
        const char **nv = ps_arena_alloc(t->arena, t->cap * sizeof(char *));
        if (t->n)
            memcpy(nv, t->v, t->n * sizeof(char *));
        t->v = nv;
    }
    t->v[t->n++] = id;
    return 0;
}

int ps_querier_profile_types(ps_reader_t *r, int64_t start_ns, int64_t end_ns, ps_arena_t *arena, ps_strlist_t *out,
                             ps_err_t *err)
{
    types_ctx_t t = {r, start_ns, end_ns, arena, NULL, 0, 0, err};
    int ret = ps_reader_label_values(r, "__name__", 8, on_type_name, &t, err);
    out->n = ret == 0 ? t.n : 0;
    out->v = t.v;
    return ret;
}

/* ---- series, label names and values ---- */

typedef struct set_builder {
    ps_series_set_t *out;
    uint32_t cap, max;
    ps_arena_t *arena;
    ps_strset_t *names; /* or, not NULL: each series' label names (name NULL) or values of name go here, */
    const char *name;   /* none kept, no limit (the label calls: memory by distinct strings, not series) */
} set_builder_t;

static int set_push(set_builder_t *b, uint64_t sid, const ps_labels_t *ls, ps_err_t *err)
{
    if (b->names != NULL) {
        ps_strset_labels(b->names, b->name, ls);
        return 0;
    }
    if (b->out->n == b->max)
        return ps_err_set(err, PS_ELIMIT, "the matchers select more than %u series (the limit, %s); narrow them",
                          b->max, ps_setting_name(PS_SETTING_QUERY_MAX_SERIES));
    ps_series_set_push(b->out, &b->cap, b->arena, sid, ls);
    return 0;
}

int ps_query_profile_series_has(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err)
{
    ps_series_kind_t kind;
    int rc = ps_reader_series_kind(r, sid, &kind, err);
    if (rc == PS_ENOTFOUND)
        return 0;
    if (rc)
        return rc;
    if (kind != PS_SERIES_PROFILE)
        return 0;
    if (start == INT64_MIN && end == INT64_MAX)
        return 1;
    return ps_reader_has_data(r, sid, start, end, err);
}

/* ---- GetProfileStats ---- */

typedef struct stats_ctx {
    ps_reader_t *r;
    ps_arena_t *arena;
    ps_querier_stats_t *st;
    ps_err_t *err;
} stats_ctx_t;

/* the first profile (chunks come before head records, each oldest first): its time, then stop */
static int on_first(void *ctx, const ps_stored_profile_t *p)
{
    *(int64_t *)ctx = p->ts;
    return 1;
}

static int on_stats_series(void *ctx, uint64_t sid)
{
    stats_ctx_t *s = ctx;
    int64_t oldest = 0, newest = 0;
    int rc = ps_query_profile_series_has(s->r, sid, INT64_MIN, INT64_MAX, s->err);
    if (rc <= 0)
        return rc;
    rc = ps_reader_profiles(s->r, sid, INT64_MIN, INT64_MAX, true, on_first, &oldest, s->err);
    if (rc == 0)
        return 0; /* no profile */
    if (rc != 1)
        return rc;
    rc = ps_reader_latest(s->r, sid, INT64_MIN, INT64_MAX, &newest, s->err);
    if (rc)
        return rc;
    if (!s->st->ingested || oldest < s->st->oldest_ns)
        s->st->oldest_ns = oldest;
    if (!s->st->ingested || newest > s->st->newest_ns)
        s->st->newest_ns = newest;
    s->st->ingested = true;
    return 0;
}

static int on_stats_name(void *ctx, const char *v, size_t n)
{
    stats_ctx_t *s = ctx;
    const char *parts[6];
    char *id = ps_arena_strndup(s->arena, v, n);
    if (ps_profile_type_parts(id, s->arena, parts) != 0)
        return 0; /* a float series' name */
    return ps_reader_postings(s->r, "__name__", 8, v, n, on_stats_series, s, s->err);
}

int ps_querier_profile_stats(ps_reader_t *r, ps_arena_t *arena, ps_querier_stats_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    stats_ctx_t s = {r, arena, out, err};
    return ps_reader_label_values(r, "__name__", 8, on_stats_name, &s, err);
}

typedef struct all_ctx {
    ps_reader_t *r;
    int64_t start, end;
    ps_selector_t *sels;
    uint32_t nsels;
    set_builder_t *b;
    ps_err_t *err;
} all_ctx_t;

static int on_any_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    all_ctx_t *c = ctx;
    int rc = ps_budget_check(c->err); /* a walk over every series */
    if (rc)
        return rc;
    int match = c->nsels == 0;
    for (uint32_t s = 0; s < c->nsels && match == 0; s++)
        match = ps_query_labels_match(&c->sels[s], ls, c->err);
    if (match <= 0)
        return match;
    rc = ps_query_profile_series_has(c->r, sid, c->start, c->end, c->err);
    if (rc <= 0)
        return rc;
    if (c->b->names != NULL) /* copies what it keeps */
        return set_push(c->b, sid, ls, c->err);
    ps_labels_t copy = *ls; /* ls is valid only during the call */
    copy.pairs = ps_arena_alloc(c->b->arena, (ls->n + 1) * sizeof(ps_label_pair_t));
    for (uint32_t k = 0; k < ls->n; k++) {
        copy.pairs[k] = ls->pairs[k];
        copy.pairs[k].name = ps_arena_strndup(c->b->arena, ls->pairs[k].name, ls->pairs[k].nlen);
        copy.pairs[k].value = ps_arena_strndup(c->b->arena, ls->pairs[k].value, ls->pairs[k].vlen);
    }
    return set_push(c->b, sid, &copy, c->err);
}

/* Every profile series in the range that matches one of sels (a walk over all series: for
 * selectors whose matchers all match "", which the label index cannot narrow). */
static int series_walk(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start, int64_t end,
                       set_builder_t *b, ps_err_t *err)
{
    all_ctx_t c = {r, start, end, sels, nsels, b, err};
    return ps_reader_series_foreach(r, on_any_series, &c, err);
}

/* The profile series in the range that match one of sels, into b */
static int select_into(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start_ns, int64_t end_ns,
                       ps_arena_t *arena, set_builder_t *b, ps_err_t *err)
{
    bool walk = nsels == 0;
    for (uint32_t i = 0; i < nsels; i++) {
        bool non_empty = false;
        for (uint32_t k = 0; k < sels[i].n; k++)
            non_empty |= !sels[i].m[k].matches_empty;
        walk |= !non_empty;
    }
    if (walk)
        return series_walk(r, sels, nsels, start_ns, end_ns, b, err);
    ps_series_set_t u;
    int ret = ps_query_select_union(r, sels, nsels, INT64_MIN, INT64_MAX, UINT32_MAX, arena, &u, err);
    for (uint32_t i = 0; i < u.n && ret == 0; i++) {
        int rc = ps_query_profile_series_has(r, u.sids[i], start_ns, end_ns, err);
        if (rc < 0)
            ret = rc;
        else if (rc)
            ret = set_push(b, u.sids[i], &u.labels[i], err);
    }
    return ret;
}

int ps_querier_series(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start_ns, int64_t end_ns,
                      uint32_t max_series, ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    set_builder_t b = {out, 0, max_series, arena, NULL, NULL};
    return select_into(r, sels, nsels, start_ns, end_ns, arena, &b, err);
}

void ps_querier_labels(const ps_series_set_t *s, const char *name, ps_arena_t *arena, ps_strlist_t *out)
{
    if (name != NULL && strcmp(name, "__profile_type__") == 0)
        name = "__name__"; /* Pyroscope's label of the type id */
    ps_strset_t l = {.arena = arena};
    ps_hmap_init(&l.seen);
    for (uint32_t i = 0; i < s->n; i++)
        ps_strset_labels(&l, name, &s->labels[i]);
    ps_strset_finish(&l, out);
}

/* The profile type sels select alone: one selector of one matcher, __name__="t" (NULL: not so) */
static const char *type_only(const ps_selector_t *sels, uint32_t nsels)
{
    if (nsels != 1 || sels[0].n != 1)
        return NULL;
    const ps_matcher_t *m = &sels[0].m[0];
    return m->op == PS_MATCH_EQ && m->nlen == 8 && memcmp(m->name, "__name__", 8) == 0 ? m->value : NULL;
}

/* A label call's scope: *name as stored (Pyroscope's __profile_type__ is __name__); true for every
 * profile series (no selector, or {}), else *type the profile type sels select alone (NULL: a
 * selection of series) */
static bool label_scope(const char **name, const ps_selector_t *sels, uint32_t nsels, const char **type)
{
    if (*name != NULL && strcmp(*name, "__profile_type__") == 0)
        *name = "__name__";
    bool every = nsels == 0;
    for (uint32_t i = 0; i < nsels; i++)
        every |= sels[i].n == 0;
    *type = every ? NULL : type_only(sels, nsels);
    return every;
}

int ps_querier_label_list(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start_ns,
                          int64_t end_ns, ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    const char *type;
    if (label_scope(&name, sels, nsels, &type))
        return ps_query_profile_labels(r, name, start_ns, end_ns, arena, out, err);
    int ret;
    if (type != NULL) { /* the type's own times (unless another type shares their key: then its series) */
        ps_err_t why;
        ps_err_clear(&why);
        if ((ret = ps_query_type_labels(r, type, name, start_ns, end_ns, arena, out, &why)) != PS_EUNSUPPORTED) {
            if (ret && err)
                *err = why;
            return ret;
        }
    }
    /* a selection: its series' names or values, as many series as it has (no --query.max-series:
     * nothing of a series is kept but its strings not seen before) */
    ps_strset_t l = {.arena = arena};
    ps_hmap_init(&l.seen);
    set_builder_t b = {NULL, 0, 0, arena, &l, name};
    ret = select_into(r, sels, nsels, start_ns, end_ns, arena, &b, err);
    ps_strset_finish(&l, out);
    if (ret != 0)
        *out = (ps_strlist_t){0};
    return ret;
}

int ps_querier_label_each(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start_ns,
                          int64_t end_ns, int (*cb)(void *ctx, const char *s, size_t n), void *ctx, ps_err_t *err)
{
    const char *type;
    if (!label_scope(&name, sels, nsels, &type) && type == NULL)
        return PS_EOUTOFORDER; /* a selection */
    ps_err_t why;
    ps_err_clear(&why);
    int ret = ps_query_profile_labels_each(r, type, name, start_ns, end_ns, cb, ctx, &why);
    if (ret == PS_EUNSUPPORTED)
        return PS_EOUTOFORDER; /* (a type hash shared) */
    if (ret && ret != PS_EOUTOFORDER && err)
        *err = why;
    return ret;
}

static bool wanted(const char *name, const char *const *names, uint32_t nnames)
{
    bool keep = nnames == 0;
    for (uint32_t j = 0; j < nnames && !keep; j++)
        keep = strcmp(name, names[j]) == 0;
    return keep;
}

/* ls kept to names (in ls's order, which is sorted) into arena, with Pyroscope's label
 * __profile_type__ (the profile type id, our __name__) right after __name__ when wanted */
static ps_labels_t project(const ps_labels_t *ls, const char *const *names, uint32_t nnames, ps_arena_t *arena)
{
    ps_labels_t o = {0};
    bool type = wanted("__profile_type__", names, nnames);
    o.pairs = ps_arena_alloc(arena, (ls->n + 2) * sizeof(ps_label_pair_t));
    for (uint32_t k = 0; k < ls->n; k++) {
        const ps_label_pair_t *p = &ls->pairs[k];
        if (strcmp(p->name, "__profile_type__") == 0)
            continue; /* ours (a pushed label of that name cannot be told from it) */
        if (wanted(p->name, names, nnames))
            o.pairs[o.n++] = *p;
        if (type && strcmp(p->name, "__name__") == 0) {
            o.pairs[o.n] = *p;
            o.pairs[o.n].name = "__profile_type__";
            o.pairs[o.n++].nlen = 16;
        }
    }
    return o;
}

static int cmp_labels(const void *a, const void *b)
{
    return ps_labels_cmp(a, b);
}

/* the encoded labels as a hash key */
static void labels_key(const ps_labels_t *ls, ps_buf_t *b)
{
    b->len = 0;
    ps_labels_encode(ls, b);
}

/* The group of a series' labels kept to group_by (none: one group for all): its index in index,
 * and *fresh with its labels in *labels when it is new (the caller numbers it next). */
static uint64_t group_of(ps_hmap_t *index, ps_buf_t *key, const ps_labels_t *series, const char *const *group_by,
                         uint32_t ngroup_by, uint32_t next, ps_arena_t *arena, ps_labels_t *labels, bool *fresh)
{
    ps_labels_t p = {0}; /* no group_by: one series */
    if (ngroup_by > 0)
        p = project(series, group_by, ngroup_by, arena);
    labels_key(&p, key);
    uint64_t gi;
    *fresh = !ps_hmap_get(index, key->data, key->len, &gi);
    if (*fresh) {
        gi = next;
        *labels = p;
    }
    return gi;
}

void ps_querier_label_sets(const ps_series_set_t *s, const char *const *names, uint32_t nnames, ps_arena_t *arena,
                           ps_labels_t **out, uint32_t *n)
{
    ps_hmap_t seen;
    ps_hmap_init(&seen);
    ps_buf_t key = PS_BUF_INIT;
    ps_labels_t *v = ps_arena_alloc(arena, (s->n + 1) * sizeof(ps_labels_t));
    uint32_t k = 0;
    for (uint32_t i = 0; i < s->n; i++) {
        ps_labels_t p = project(&s->labels[i], names, nnames, arena);
        uint64_t dummy;
        labels_key(&p, &key);
        if (ps_hmap_get(&seen, key.data, key.len, &dummy))
            continue;
        ps_hmap_put(&seen, key.data, key.len, 1);
        v[k++] = p;
    }
    ps_buf_dispose(&key);
    ps_hmap_dispose(&seen);
    if (k > 1)
        qsort(v, k, sizeof(ps_labels_t), cmp_labels);
    *out = v;
    *n = k;
}

/* ---- SelectSeries ---- */

typedef struct group {
    ps_labels_t labels;
    double *sum;
    uint32_t *count;
    double total; /* the sum of its points, for the top-N */
    /* with exemplars, per step: the best profile so far (series UINT32_MAX: none) */
    struct best {
        int64_t v, ts;
        uint32_t series;
    } *ex;
    uint32_t *steps, np; /* the steps with a point, in order (make_points) */
} group_t;

typedef struct range_ctx {
    const ps_querier_range_q_t *q;
    uint64_t nsteps;
    group_t *g;
    uint32_t series; /* index in the series set (in id order) */
    ps_err_t *err;
    /* the step of the last profile, k, and its ms (lo, hi]: a series' profiles come in time order,
     * six or so a step, so most find their step without a division */
    uint64_t k;
    int64_t lo, hi;
} range_ctx_t;

/* one profile at ts (ns) of value v: its step's sum, count and, with exemplars, exemplar */
static int range_add(range_ctx_t *c, int64_t ts, int64_t v)
{
    const ps_querier_range_q_t *q = c->q;
    int64_t t = ts / NS_PER_MS - (ts % NS_PER_MS < 0); /* floor, as ps_reader_samples */
    uint64_t k = c->k;
    if (!(t > c->lo && t <= c->hi)) {
        k = t <= q->start ? 0 : (uint64_t)((t - q->start) + q->step - 1) / (uint64_t)q->step;
        if (k >= c->nsteps)
            return 0;
        c->k = k;
        c->lo = k == 0 ? INT64_MIN : q->start + (int64_t)(k - 1) * q->step;
        c->hi = q->start + (int64_t)k * q->step;
    }
    group_t *g = c->g;
    g->sum[k] += (double)v;
    g->count[k]++;
    struct best *b = g->ex != NULL ? &g->ex[k] : NULL;
    if (b != NULL && (b->series == UINT32_MAX || v > b->v ||
                      (v == b->v && (ts < b->ts || (ts == b->ts && c->series < b->series))))) {
        b->v = v;
        b->ts = ts;
        b->series = c->series;
    }
    return 0;
}

static int on_range_profile(void *ctx, const ps_stored_profile_t *p)
{
    return range_add(ctx, p->ts, p->total);
}

static int on_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    range_ctx_t *c = ctx;
    const ps_querier_range_q_t *q = c->q;
    for (size_t i = 0; i < n; i++) {
        int64_t t = s[i].t;
        uint64_t k = t <= q->start ? 0 : (uint64_t)((t - q->start) + q->step - 1) / (uint64_t)q->step;
        if (k >= c->nsteps)
            continue; /* after the last step */
        c->g->sum[k] += s[i].v;
        c->g->count[k]++;
    }
    return 0;
}

static int cmp_group_labels(const void *a, const void *b)
{
    return ps_labels_cmp(&(*(const group_t *const *)a)->labels, &(*(const group_t *const *)b)->labels);
}

static int cmp_group_total(const void *a, const void *b)
{
    const group_t *x = *(const group_t *const *)a, *y = *(const group_t *const *)b;
    if (x->total != y->total)
        return x->total > y->total ? -1 : 1;
    return ps_labels_cmp(&x->labels, &y->labels);
}

/* ls without __name__ and the group_by names */
static ps_labels_t exemplar_labels(const ps_labels_t *ls, const char *const *by, uint32_t nby, ps_arena_t *arena);

/* SelectSeries' answer as a source (ps_qr_series_src_t): the groups kept, in answer order, each
 * with the steps of its points; a point's exemplar is made when it is asked for */
typedef struct series_src {
    ps_reader_t *r;
    const ps_querier_range_q_t *q;
    ps_series_set_t set;
    group_t **order;
    ps_labels_t *exl;   /* per series of set: its exemplars' labels (one array each, shared) */
    uint8_t *exl_made;
    ps_arena_t *arena;
} series_src_t;

static const ps_labels_t *src_labels(void *ctx, uint32_t i)
{
    return &((series_src_t *)ctx)->order[i]->labels;
}

static uint32_t src_npoints(void *ctx, uint32_t i)
{
    return ((series_src_t *)ctx)->order[i]->np;
}

static void src_point(void *ctx, uint32_t i, uint32_t k, ps_qr_point_t *p, ps_qr_exemplar_t *ex)
{
    series_src_t *c = ctx;
    const ps_querier_range_q_t *q = c->q;
    const group_t *g = c->order[i];
    uint32_t st = g->steps[k];
    p->t = q->start + (int64_t)st * q->step;
    p->v = q->average ? g->sum[st] / g->count[st] : g->sum[st];
    p->exemplar = NULL;
    if (g->ex == NULL)
        return;
    const struct best *b = &g->ex[st];
    uint32_t si = b->series;
    if (!c->exl_made[si]) { /* a series' exemplar labels once: its exemplars share them */
        c->exl[si] = exemplar_labels(&c->set.labels[si], q->group_by, q->ngroup_by, c->arena);
        c->exl_made[si] = 1;
    }
    ex->t = b->ts / NS_PER_MS - (b->ts % NS_PER_MS < 0);
    ex->profile_id = NULL; /* its id as bytes: the answer writes their text */
    ex->value = b->v;
    ex->labels = c->exl[si];
    ex->has_uuid = ps_query_profile_uuid(c->r, c->set.sids[si], b->ts, ex->uuid);
    p->exemplar = ex;
}

/* The groups with points (each one's steps and total), ordered and cut as the query says, as a
 * source into *out. */
static void make_points(ps_reader_t *r, const ps_querier_range_q_t *q, group_t *groups, uint32_t ng,
                        uint64_t nsteps, const ps_series_set_t *set, ps_arena_t *arena, ps_qr_series_src_t *out)
{
    uint32_t kept = 0;
    group_t **order = ps_arena_alloc(arena, (ng + 1) * sizeof(group_t *));
    for (uint32_t g = 0; g < ng; g++) {
        group_t *gr = &groups[g];
        uint64_t np = 0;
        for (uint64_t k = 0; k < nsteps; k++)
            np += gr->count[k] > 0;
        if (np == 0)
            continue;
        gr->steps = ps_arena_alloc(arena, np * sizeof(uint32_t));
        for (uint64_t k = 0; k < nsteps; k++) {
            if (gr->count[k] == 0)
                continue;
            gr->steps[gr->np++] = (uint32_t)k;
            gr->total += q->average ? gr->sum[k] / gr->count[k] : gr->sum[k];
        }
        order[kept++] = gr;
    }
    qsort(order, kept, sizeof(group_t *), q->has_limit ? cmp_group_total : cmp_group_labels);
    uint32_t n = kept;
    if (q->has_limit && q->limit > 0 && (uint64_t)q->limit < n)
        n = (uint32_t)q->limit;
    series_src_t *c = ps_arena_calloc(arena, 1, sizeof(*c));
    *c = (series_src_t){r, q, *set, order, NULL, NULL, arena};
    c->exl = ps_arena_calloc(arena, set->n + 1, sizeof(ps_labels_t));
    c->exl_made = ps_arena_calloc(arena, set->n + 1, 1);
    *out = (ps_qr_series_src_t){n, c, src_labels, src_npoints, src_point};
}

/* ---- SelectSeries under a call site ---- */

enum { CS_OUT = 1, CS_IN = 2 }; /* a stack node's verdict, in the query's node map */

typedef struct cs_series {
    ps_reader_t *r;
    const ps_querier_range_q_t *q;
    range_ctx_t *rc;
    ps_hmap_t *verdict; /* node (8 bytes) -> CS_OUT / CS_IN */
    ps_err_t *err;
} cs_series_t;

/* Decides the nodes of p not decided yet: materialised together (sample i has value i + 1), the call
 * site filter keeps the samples under it. */
static int cs_decide(cs_series_t *c, const ps_stored_profile_t *p)
{
    static const char *const types[] = {"v", "v"};
    uint64_t *nodes = ps_xcalloc((size_t)p->n + 1, sizeof(uint64_t));
    int64_t *ids = ps_xcalloc((size_t)p->n + 1, sizeof(int64_t));
    size_t n = 0;
    uint64_t v;
    for (uint32_t i = 0; i < p->n; i++)
        if (!ps_hmap_get(c->verdict, &p->nodes[i], 8, &v)) {
            nodes[n] = p->nodes[i];
            ids[n] = (int64_t)n + 1;
            n++;
        }
    int ret = 0;
    if (n > 0) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t prof;
        ret = ps_reader_materialize(c->r, nodes, ids, n, 1, types, types, &a, &prof, c->err);
        if (ret == 0) {
            for (size_t i = 0; i < n; i++)
                ps_hmap_put(c->verdict, &nodes[i], 8, CS_OUT);
            ps_querier_call_site(&prof, c->q->call_site, c->q->ncall_site, &a);
            for (uint32_t k = 0; k < prof.nsamples; k++) {
                int64_t id = prof.samples[k].values[0];
                if (id >= 1 && (size_t)id <= n)
                    ps_hmap_put(c->verdict, &nodes[id - 1], 8, CS_IN);
            }
        }
        ps_arena_dispose(&a);
    }
    free(nodes);
    free(ids);
    return ret;
}

static int cs_on_profile(void *ctx, const ps_stored_profile_t *p)
{
    cs_series_t *c = ctx;
    int ret = cs_decide(c, p);
    if (ret)
        return ret;
    int64_t sum = 0;
    uint64_t v;
    for (uint32_t i = 0; i < p->n; i++)
        if (ps_hmap_get(c->verdict, &p->nodes[i], 8, &v) && v == CS_IN)
            sum = ps_sat_add(sum, p->values[i]);
    return range_add(c->rc, p->ts, sum);
}

/* the answer as a source (into out: none, n 0, on an error); with_ex: exemplars */
static int select_series(ps_reader_t *r, const ps_querier_range_q_t *q, bool with_ex, ps_arena_t *arena,
                         ps_qr_series_src_t *out, ps_err_t *err)
{
    *out = (ps_qr_series_src_t){0, NULL, src_labels, src_npoints, src_point};
    if (q->step <= 0)
        return ps_err_set(err, PS_EINVAL, "step must be positive (seconds; got %lld ms)", (long long)q->step);
    if (q->start > q->end)
        return ps_err_set(err, PS_EINVAL, "start (%lld ms) is after end (%lld ms)", (long long)q->start,
                          (long long)q->end);
    if (q->start < -MS_MAX + q->step || q->end > MS_MAX)
        return ps_err_set(err, PS_EINVAL, "start or end is out of range (ms since 1970 within +-%lld)",
                          (long long)MS_MAX);
    uint64_t nsteps = (uint64_t)(q->end - q->start) / (uint64_t)q->step + 1;
    if (nsteps > PS_QUERIER_MAX_POINTS)
        return ps_err_set(err, PS_ELIMIT,
                          "the range has %llu steps of %lld ms, more than %u points: use a larger step or a shorter range",
                          (unsigned long long)nsteps, (long long)q->step, PS_QUERIER_MAX_POINTS);
    int64_t lo_ms = q->start - q->step, lo_ns, hi_ns;
    int ret = ps_querier_range(lo_ms, q->end, &lo_ns, &hi_ns, err);
    if (ret)
        return ret;
    ps_series_set_t set;
    if ((ret = ps_querier_series(r, q->sel, 1, lo_ns, hi_ns, q->max_series, arena, &set, err)) != 0)
        return ret;
    ps_hmap_t index, verdict;
    ps_hmap_init(&index);
    ps_hmap_init(&verdict);
    ps_buf_t key = PS_BUF_INIT;
    group_t *groups = ps_arena_calloc(arena, set.n + 1, sizeof(group_t));
    uint32_t ng = 0;
    for (uint32_t i = 0; i < set.n && ret == 0; i++) {
        ps_labels_t p;
        bool fresh;
        uint64_t gi = group_of(&index, &key, &set.labels[i], q->group_by, q->ngroup_by, ng, arena, &p, &fresh);
        if (fresh) {
            if ((uint64_t)(ng + 1) * nsteps > PS_QUERIER_MAX_POINTS) {
                ret = ps_err_set(err, PS_ELIMIT,
                                 "the answer would have more than %u points (%u series x %llu steps so far): group by "
                                 "fewer labels, narrow the selector or use a larger step",
                                 PS_QUERIER_MAX_POINTS, ng + 1, (unsigned long long)nsteps);
                break;
            }
            ng++;
            ps_hmap_put(&index, key.data, key.len, gi);
            groups[gi].labels = p;
            groups[gi].sum = ps_arena_calloc(arena, nsteps, sizeof(double));
            groups[gi].count = ps_arena_calloc(arena, nsteps, sizeof(uint32_t));
            if (with_ex) {
                groups[gi].ex = ps_arena_alloc(arena, nsteps * sizeof(struct best));
                for (uint64_t k = 0; k < nsteps; k++)
                    groups[gi].ex[k] = (struct best){0, 0, UINT32_MAX};
            }
        }
        range_ctx_t c = {q, nsteps, &groups[gi], i, err, 0, INT64_MIN, INT64_MIN};
        if (q->ncall_site > 0) { /* each profile's samples under the call site */
            cs_series_t cs = {r, q, &c, &verdict, err};
            ret = ps_reader_profiles(r, set.sids[i], lo_ns, hi_ns, false, cs_on_profile, &cs, err);
        } else if (with_ex) { /* the profiles themselves: their ns times name them */
            ret = ps_reader_profiles(r, set.sids[i], lo_ns, hi_ns, true, on_range_profile, &c, err);
        } else {
            ret = ps_reader_samples(r, set.sids[i], lo_ms, q->end, on_samples, &c, err);
        }
    }
    ps_buf_dispose(&key);
    ps_hmap_dispose(&index);
    ps_hmap_dispose(&verdict);
    if (ret == 0)
        make_points(r, q, groups, ng, nsteps, &set, arena, out);
    return ret;
}

int ps_querier_select_series_src(ps_reader_t *r, const ps_querier_range_q_t *q, ps_arena_t *arena,
                                 ps_qr_series_src_t *out, ps_err_t *err)
{
    return select_series(r, q, q->exemplars, arena, out, err);
}

int ps_querier_select_series(ps_reader_t *r, const ps_querier_range_q_t *q, ps_arena_t *arena, ps_qseries_t **out,
                             uint32_t *nout, ps_qr_exemplar_t ***ex, ps_err_t *err)
{
    *out = NULL;
    *nout = 0;
    if (ex)
        *ex = NULL;
    ps_qr_series_src_t src;
    int ret = select_series(r, q, q->exemplars && ex != NULL, arena, &src, err);
    if (ret)
        return ret;
    ps_qseries_t *s = ps_arena_calloc(arena, src.n + 1, sizeof(*s));
    ps_qr_exemplar_t **e = ex ? ps_arena_calloc(arena, src.n + 1, sizeof(*e)) : NULL;
    for (uint32_t i = 0; i < src.n; i++) {
        uint32_t np = src.npoints(src.ctx, i);
        s[i].labels = *src.labels(src.ctx, i);
        s[i].points = ps_arena_alloc(arena, ((size_t)np + 1) * sizeof(ps_point_t));
        if (e)
            e[i] = ps_arena_alloc(arena, ((size_t)np + 1) * sizeof(ps_qr_exemplar_t));
        for (uint32_t k = 0; k < np; k++) {
            ps_qr_point_t p;
            ps_qr_exemplar_t x;
            src.point(src.ctx, i, k, &p, &x);
            s[i].points[k] = (ps_point_t){p.t, p.v};
            if (e && p.exemplar)
                e[i][k] = x;
        }
        s[i].n = np;
    }
    *out = s;
    *nout = src.n;
    if (ex)
        *ex = e;
    return 0;
}

int ps_querier_merge(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                     ps_arena_t *arena, ps_profile_sel_t *out, ps_err_t *err)
{
    ps_profile_query_t q = {.sel = sel, .param = "profile_typeID", .ranged = true, .start = start_ns, .end = end_ns,
                            .max_series = max_series};
    return ps_query_profile_select(r, &q, arena, out, err);
}

/* ---- span merges (SelectMergeSpanProfile, span_selector) ---- */

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

int ps_querier_spans(const char *const *ids, uint32_t n, const char *field, ps_arena_t *arena, uint64_t **out,
                     uint32_t *nout, ps_err_t *err)
{
    if (n > PS_QUERIER_MAX_SPANS)
        return ps_err_set(err, PS_EINVAL, "%s: %u span ids, at most %u may be selected in one request", field, n,
                          PS_QUERIER_MAX_SPANS);
    uint64_t *v = ps_arena_alloc(arena, ((size_t)n + 1) * sizeof(uint64_t));
    for (uint32_t i = 0; i < n; i++) {
        const char *s = ids[i] ? ids[i] : "";
        size_t len = strlen(s);
        if (!ps_span_parse(s, len, &v[i]))
            return ps_err_set(err, PS_EINVAL, "%s[%u]: \"%.*s%s\" is not a span id (16 hex digits, not all zero)", field,
                              i, len > 64 ? 64 : (int)len, s, len > 64 ? "..." : "");
    }
    if (n > 1)
        qsort(v, n, sizeof(uint64_t), cmp_u64);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        if (m == 0 || v[m - 1] != v[i])
            v[m++] = v[i];
    *out = v;
    *nout = m;
    return 0;
}

/* (sid, ts) of a profile holding a selected span */
typedef struct span_hit {
    uint64_t sid;
    int64_t ts;
} span_hit_t;

typedef struct span_ctx {
    const uint64_t *sids; /* the selected series, ascending */
    uint32_t nsids;
    span_hit_t *hits;
    size_t n, cap;
    ps_err_t *err;
} span_ctx_t;

static int on_span_hit(void *ctx, uint64_t sid, int64_t ts)
{
    span_ctx_t *c = ctx;
    if (bsearch(&sid, c->sids, c->nsids, sizeof(uint64_t), cmp_u64) == NULL)
        return 0;
    if (c->n == PS_QUERIER_SPAN_MAX_PROFILES)
        return ps_err_set(c->err, PS_ELIMIT, "the spans selected are in more than %u profiles (series x time)",
                          PS_QUERIER_SPAN_MAX_PROFILES);
    if (c->n == c->cap) {
        c->cap = c->cap ? 2 * c->cap : 64;
        c->hits = ps_xrealloc(c->hits, c->cap * sizeof(span_hit_t));
    }
    c->hits[c->n++] = (span_hit_t){sid, ts};
    return 0;
}

static int cmp_hit(const void *a, const void *b)
{
    const span_hit_t *x = a, *y = b;
    if (x->sid != y->sid)
        return x->sid < y->sid ? -1 : 1;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

int ps_querier_merge_spans(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, const uint64_t *spans,
                           uint32_t nspans, uint32_t max_series, ps_arena_t *arena, ps_profile_sel_t *out, ps_err_t *err)
{
    ps_series_set_t set;
    const char *type = NULL;
    int ret = ps_query_select(r, sel, start_ns, end_ns, max_series, arena, &set, err);
    if (ret == 0)
        ret = ps_query_single_type(&set, &type, err);
    if (ret)
        return ret;
    if (set.n == 0) /* nothing selected: the plain merge's answer (an unknown type is said as there) */
        return ps_querier_merge(r, sel, start_ns, end_ns, max_series, arena, out, err);
    memset(out, 0, sizeof(*out));
    out->ntypes = 1;
    out->types = ps_arena_calloc(arena, 1, sizeof(char *));
    out->totals = ps_arena_calloc(arena, 1, sizeof(int64_t));
    out->aggs = ps_arena_calloc(arena, 1, sizeof(ps_agg_t));
    out->accs = ps_xcalloc(1, sizeof(ps_nodemap_t));
    ps_nodemap_init(&out->accs[0]);
    out->types[0] = type;
    out->aggs[0] = PS_AGG_SUM; /* Pyroscope sums a span profile's samples, whatever the type */
    out->window = ps_sat_sub(end_ns, start_ns);
    uint64_t *sids = ps_arena_alloc(arena, ((size_t)set.n + 1) * sizeof(uint64_t));
    memcpy(sids, set.sids, set.n * sizeof(uint64_t));
    qsort(sids, set.n, sizeof(uint64_t), cmp_u64);
    span_ctx_t c = {.sids = sids, .nsids = set.n, .err = err};
    for (uint32_t i = 0; i < nspans && ret == 0; i++)
        ret = ps_reader_span_profiles(r, spans[i], start_ns, end_ns, on_span_hit, &c, err);
    if (ret == 0 && c.n > 1)
        qsort(c.hits, c.n, sizeof(span_hit_t), cmp_hit);
    /* each profile's span parts (never its head record or chunk): the selected spans' pairs */
    uint64_t last_sid = 0;
    ps_arena_t pa = PS_ARENA_INIT;
    ps_sum_info_t *in = &out->info;
    for (size_t i = 0; i < c.n && ret == 0; i++) {
        if (i > 0 && c.hits[i].sid == c.hits[i - 1].sid && c.hits[i].ts == c.hits[i - 1].ts)
            continue;
        if ((i & 255) == 255 && (ret = ps_budget_check_now(err)) != 0)
            break;
        ps_span_part_t *parts;
        size_t np;
        ps_arena_reset(&pa);
        if ((ret = ps_reader_span_parts(r, c.hits[i].sid, c.hits[i].ts, &pa, &parts, &np, err)) != 0)
            break;
        bool any = false;
        for (size_t k = 0; k < np; k++)
            if (bsearch(&parts[k].span, spans, nspans, sizeof(uint64_t), cmp_u64) != NULL) {
                ps_nodemap_add(&out->accs[0], parts[k].node, parts[k].value);
                any = true;
            }
        if (!any)
            continue;
        int64_t ts = c.hits[i].ts;
        if (in->profiles == 0 || ts < in->min_ts)
            in->min_ts = ts;
        if (in->profiles == 0 || ts > in->max_ts)
            in->max_ts = ts;
        in->profiles++;
        if (c.hits[i].sid != last_sid) {
            out->nseries++;
            last_sid = c.hits[i].sid;
        }
    }
    ps_arena_dispose(&pa);
    free(c.hits);
    if (ret == 0) {
        const ps_nodemap_t *m = &out->accs[0];
        uint64_t t = 0;
        for (size_t k = 0; k < m->cap; k++)
            if (m->keys[k] != 0)
                t = ps_sat_addu(t, m->vals[k] < 0 ? 0 - (uint64_t)m->vals[k] : (uint64_t)m->vals[k]);
        out->totals[0] = t > INT64_MAX ? INT64_MAX : (int64_t)t;
    }
    return ret;
}

void ps_querier_strip_span_labels(ps_profile_t *p)
{
    for (uint32_t i = 0; i < p->nsamples; i++) {
        ps_sample_t *smp = &p->samples[i];
        uint32_t m = 0;
        for (uint32_t j = 0; j < smp->nlabels; j++) {
            ps_str_t k = ps_profile_str(p, smp->labels[j].key);
            if ((k.len == 7 && memcmp(k.ptr, "span_id", 7) == 0) || (k.len == 10 && memcmp(k.ptr, "profile_id", 10) == 0))
                continue;
            smp->labels[m++] = smp->labels[j];
        }
        smp->nlabels = m;
    }
}

/* ---- profile ids (profile_id_selector) ---- */

static int cmp_ref(const void *a, const void *b)
{
    const ps_profile_ref_t *x = a, *y = b;
    if (x->sid != y->sid)
        return x->sid < y->sid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

int ps_querier_profile_ids(ps_reader_t *r, const char *const *ids, uint32_t n, const char *field, ps_arena_t *arena,
                           ps_profile_ref_t **out, uint32_t *nout, ps_err_t *err)
{
    *out = NULL;
    *nout = 0;
    if (n > PS_QUERIER_MAX_PROFILE_IDS)
        return ps_err_set(err, PS_EINVAL, "%s: %u profile ids, more than %u", field, n, PS_QUERIER_MAX_PROFILE_IDS);
    enum { PER_ID = 16 }; /* the profiles one id may name (a client's id given to several series) */
    ps_profile_ref_t *refs = ps_arena_alloc(arena, ((size_t)n * PER_ID + 1) * sizeof(*refs));
    uint32_t k = 0;
    for (uint32_t i = 0; i < n; i++) {
        char f[96];
        uint32_t got;
        snprintf(f, sizeof(f), "%s[%u]", field, i);
        const char *id = ids[i] ? ids[i] : "";
        int ret = ps_query_profile_id_parse(r, id, strlen(id), f, refs + k, PER_ID, &got, err);
        if (ret)
            return ret;
        k += got;
    }
    if (k > 1)
        qsort(refs, k, sizeof(*refs), cmp_ref);
    uint32_t u = 0;
    for (uint32_t i = 0; i < k; i++)
        if (u == 0 || cmp_ref(&refs[u - 1], &refs[i]) != 0)
            refs[u++] = refs[i];
    *out = refs;
    *nout = u;
    return 0;
}

int ps_querier_merge_ids(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                         const ps_profile_ref_t *refs, uint32_t nrefs, ps_arena_t *arena, ps_profile_sel_t *out,
                         ps_err_t *err)
{
    ps_profile_query_t q = {.sel = sel, .param = "profile_typeID", .ranged = true, .start = start_ns, .end = end_ns,
                            .max_series = max_series, .only = refs, .nonly = nrefs};
    return ps_query_profile_select(r, &q, arena, out, err);
}

int ps_querier_max_nodes(bool has, int64_t v, int64_t *out, ps_err_t *err)
{
    if (!has || v == 0) {
        *out = PS_QUERIER_MAX_NODES_DEFAULT;
        return 0;
    }
    if (v < 0 || v > PS_QUERIER_MAX_NODES_MAX)
        return ps_err_set(err, PS_EINVAL, "max_nodes %lld is out of range (1 to %d; 0 or absent: %d)", (long long)v,
                          PS_QUERIER_MAX_NODES_MAX, PS_QUERIER_MAX_NODES_DEFAULT);
    *out = v;
    return 0;
}

/* ---- stack_trace_selector.call_site ---- */

#define CS_NONE UINT32_MAX

typedef struct cs_name {
    const char *s;
    size_t len;
    uint32_t id; /* equal names share one id */
} cs_name_t;

static int cs_cmp_bytes(const char *a, size_t alen, const char *b, size_t blen)
{
    int c = memcmp(a, b, alen < blen ? alen : blen);
    return c ? c : (alen > blen) - (alen < blen);
}

static int cs_cmp(const void *a, const void *b)
{
    const cs_name_t *x = a, *y = b;
    return cs_cmp_bytes(x->s, x->len, y->s, y->len);
}

/* the id of the call site name equal to s, or CS_NONE */
static uint32_t cs_find(const cs_name_t *sorted, uint32_t n, const char *s, size_t len)
{
    uint32_t lo = 0, hi = n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        int c = cs_cmp_bytes(s, len, sorted[mid].s, sorted[mid].len);
        if (c == 0)
            return sorted[mid].id;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return CS_NONE;
}

/* the frame name of a location without lines (core/profile.h, as the flame graph names it) is want */
static bool cs_bare_is(const ps_profile_t *p, const ps_location_t *loc, const char *want)
{
    char b[256];
    size_t wl = strlen(want), n = ps_profile_bare_name(p, loc, b, sizeof(b));
    if (n < sizeof(b))
        return n == wl && memcmp(want, b, n) == 0;
    char *big = ps_xmalloc(n + 1);
    ps_profile_bare_name(p, loc, big, n + 1);
    bool same = n == wl && memcmp(want, big, n) == 0;
    free(big);
    return same;
}

/* Leaves out the locations, functions and mappings no sample refers to any more (renumbered in
 * order; the samples' and locations' arrays are copied, not changed: they may be shared). */
static void cs_prune(ps_profile_t *p, ps_arena_t *arena)
{
    uint32_t *lmap = ps_arena_calloc(arena, (size_t)p->nlocations + 1, sizeof(uint32_t));
    uint32_t *fmap = ps_arena_calloc(arena, (size_t)p->nfunctions + 1, sizeof(uint32_t));
    uint32_t *mmap = ps_arena_calloc(arena, (size_t)p->nmappings + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < p->nsamples; i++)
        for (uint32_t k = 0; k < p->samples[i].nlocs; k++)
            if (p->samples[i].locs[k] <= p->nlocations)
                lmap[p->samples[i].locs[k]] = 1;
    uint32_t nl = 0, nf = 0, nm = 0;
    for (uint32_t l = 1; l <= p->nlocations; l++) {
        if (!lmap[l])
            continue;
        lmap[l] = ++nl;
        const ps_location_t *loc = &p->locations[l - 1];
        if (loc->mapping >= 1 && loc->mapping <= p->nmappings)
            mmap[loc->mapping] = 1;
        for (uint32_t j = 0; j < loc->nlines; j++)
            if (loc->lines[j].function >= 1 && loc->lines[j].function <= p->nfunctions)
                fmap[loc->lines[j].function] = 1;
    }
    ps_function_t *fns = ps_arena_alloc(arena, ((size_t)p->nfunctions + 1) * sizeof(ps_function_t));
    for (uint32_t f = 1; f <= p->nfunctions; f++)
        if (fmap[f]) {
            fns[nf] = p->functions[f - 1];
            fmap[f] = ++nf;
        }
    ps_mapping_t *maps = ps_arena_alloc(arena, ((size_t)p->nmappings + 1) * sizeof(ps_mapping_t));
    for (uint32_t m = 1; m <= p->nmappings; m++)
        if (mmap[m]) {
            maps[nm] = p->mappings[m - 1];
            mmap[m] = ++nm;
        }
    ps_location_t *locs = ps_arena_alloc(arena, ((size_t)nl + 1) * sizeof(ps_location_t));
    for (uint32_t l = 1; l <= p->nlocations; l++) {
        if (!lmap[l])
            continue;
        ps_location_t *loc = &locs[lmap[l] - 1];
        *loc = p->locations[l - 1];
        loc->mapping = loc->mapping <= p->nmappings ? mmap[loc->mapping] : 0;
        if (loc->nlines > 0) {
            ps_line_t *lines = ps_arena_alloc(arena, (size_t)loc->nlines * sizeof(ps_line_t));
            for (uint32_t j = 0; j < loc->nlines; j++) {
                lines[j] = loc->lines[j];
                lines[j].function = lines[j].function <= p->nfunctions ? fmap[lines[j].function] : 0;
            }
            loc->lines = lines;
        }
    }
    for (uint32_t i = 0; i < p->nsamples; i++) {
        ps_sample_t *s = &p->samples[i];
        uint32_t *nlocs = ps_arena_alloc(arena, ((size_t)s->nlocs + 1) * sizeof(uint32_t));
        for (uint32_t k = 0; k < s->nlocs; k++)
            nlocs[k] = s->locs[k] <= p->nlocations ? lmap[s->locs[k]] : 0;
        s->locs = nlocs;
    }
    p->locations = locs;
    p->nlocations = nl;
    p->functions = fns;
    p->nfunctions = nf;
    p->mappings = maps;
    p->nmappings = nm;
}

void ps_querier_call_site(ps_profile_t *p, const char *const *names, uint32_t n, ps_arena_t *arena)
{
    if (n == 0)
        return;
    /* call site names sorted, equal ones one id; want[d]: the id at depth d */
    cs_name_t *sorted = ps_arena_alloc(arena, (size_t)n * sizeof(cs_name_t));
    uint32_t *want = ps_arena_alloc(arena, (size_t)n * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        sorted[i] = (cs_name_t){names[i] ? names[i] : "", names[i] ? strlen(names[i]) : 0, i};
    qsort(sorted, n, sizeof(cs_name_t), cs_cmp);
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0 && cs_cmp(&sorted[i - 1], &sorted[i]) == 0)
            sorted[i].id = sorted[i - 1].id;
        else
            sorted[i].id = i;
    }
    /* sorted[].id is an index into sorted: want[d] from the original order */
    for (uint32_t i = 0; i < n; i++)
        want[i] = cs_find(sorted, n, names[i] ? names[i] : "", names[i] ? strlen(names[i]) : 0);
    /* fid[f]: the call site id of function f's frame name (CS_NONE: none; ADDR: unnamed) */
    const uint32_t ADDR = CS_NONE - 1;
    uint32_t *fid = ps_arena_alloc(arena, ((size_t)p->nfunctions + 1) * sizeof(uint32_t));
    fid[0] = ADDR;
    for (uint32_t f = 1; f <= p->nfunctions; f++) {
        ps_str_t s = ps_profile_str(p, p->functions[f - 1].name);
        if (s.len == 0)
            s = ps_profile_str(p, p->functions[f - 1].system_name);
        fid[f] = s.len ? cs_find(sorted, n, s.ptr, s.len) : ADDR;
    }

    uint32_t kept = 0;
    for (uint32_t si = 0; si < p->nsamples; si++) {
        const ps_sample_t *s = &p->samples[si];
        uint32_t d = 0;
        bool ok = true;
        for (uint32_t i = s->nlocs; i-- > 0 && ok && d < n;) {
            uint32_t li = s->locs[i];
            if (li == 0 || li > p->nlocations) {
                ok = false;
                break;
            }
            const ps_location_t *loc = &p->locations[li - 1];
            if (loc->nlines == 0) {
                ok = cs_bare_is(p, loc, names[d] ? names[d] : "");
                d++;
                continue;
            }
            for (uint32_t j = loc->nlines; j-- > 0 && d < n;) {
                uint32_t fn = loc->lines[j].function;
                uint32_t id = fn <= p->nfunctions ? fid[fn] : ADDR;
                if (id == ADDR) {
                    char b[24];
                    ps_profile_addr_name(loc->address, b, sizeof(b));
                    ok = strcmp(names[d] ? names[d] : "", b) == 0;
                } else {
                    ok = id == want[d];
                }
                if (!ok)
                    break;
                d++;
            }
        }
        if (ok && d == n)
            p->samples[kept++] = *s;
    }
    p->nsamples = kept;
    cs_prune(p, arena);
}

/* ---- SelectHeatmap ---- */

/* where bucket i of [vmin, vmax] starts (i = B: where the last ends), as Pyroscope computes it
 * (vmin + int64(i * float64(vmax - vmin) / B)), without overflow at the ends of int64 */
static int64_t ybound(int64_t vmin, int64_t vmax, int i)
{
    if (vmax <= vmin)
        vmax = vmin == INT64_MAX ? vmin : vmin + 1;
    if (i >= PS_QUERIER_HEATMAP_BUCKETS)
        return vmax;
    double off = (double)i * (((double)vmax - (double)vmin) / PS_QUERIER_HEATMAP_BUCKETS); /* < 2^64 */
    __int128 r = (__int128)vmin + (__int128)off;
    return r > vmax ? vmax : (int64_t)r;
}

void ps_querier_heatmap_ybuckets(int64_t vmin, int64_t vmax, int64_t ymin[PS_QUERIER_HEATMAP_BUCKETS])
{
    for (int i = 0; i < PS_QUERIER_HEATMAP_BUCKETS; i++)
        ymin[i] = ybound(vmin, vmax, i);
}

int ps_querier_heatmap_ybucket(int64_t v, const int64_t ymin[PS_QUERIER_HEATMAP_BUCKETS])
{
    /* bucket i is [ymin[i], ymin[i + 1]); the last one takes everything from its bound up */
    for (int i = 0; i + 1 < PS_QUERIER_HEATMAP_BUCKETS; i++)
        if (v >= ymin[i] && v < ymin[i + 1])
            return i;
    return v >= ymin[PS_QUERIER_HEATMAP_BUCKETS - 1] ? PS_QUERIER_HEATMAP_BUCKETS - 1 : -1;
}

uint64_t ps_querier_heatmap_slot(int64_t t, int64_t start, int64_t step)
{
    return t <= start ? 0 : ((uint64_t)(t - start) + (uint64_t)step - 1) / (uint64_t)step;
}

typedef struct hm_point {
    uint32_t group, series; /* series: index in the series set */
    uint32_t slot;
    int32_t y;
    int64_t t, v;           /* ms, total */
    int64_t ts;             /* ns: with the series, the profile's id */
} hm_point_t;

typedef struct hm_ctx {
    hm_point_t *p;
    size_t n, cap;
    uint32_t group, series;
    ps_err_t *err;
} hm_ctx_t;

static int on_heatmap_profile(void *ctx, const ps_stored_profile_t *p)
{
    hm_ctx_t *c = ctx;
    int rc = ps_budget_check(c->err); /* --query.timeout, a client gone */
    if (rc)
        return rc;
    if (c->n == PS_QUERIER_HEATMAP_MAX_PROFILES)
        return ps_err_set(c->err, PS_ELIMIT,
                          "the heatmap would bucket more than %u profiles: narrow the selector or the range",
                          PS_QUERIER_HEATMAP_MAX_PROFILES);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 256;
        c->p = ps_xrealloc(c->p, c->cap * sizeof(hm_point_t));
    }
    int64_t t = p->ts / NS_PER_MS - (p->ts % NS_PER_MS < 0); /* floor */
    c->p[c->n++] = (hm_point_t){.group = c->group, .series = c->series, .t = t, .v = p->total, .ts = p->ts};
    return 0;
}

static int cmp_hm_point(const void *a, const void *b)
{
    const hm_point_t *x = a, *y = b;
    if (x->group != y->group)
        return x->group < y->group ? -1 : 1;
    if (x->slot != y->slot)
        return x->slot < y->slot ? -1 : 1;
    if (x->y != y->y)
        return x->y < y->y ? -1 : 1;
    if (x->v != y->v)
        return x->v > y->v ? -1 : 1; /* the largest first: the bucket's exemplar */
    if (x->ts != y->ts)
        return x->ts < y->ts ? -1 : 1;
    return x->series < y->series ? -1 : x->series > y->series;
}

typedef struct hm_group {
    ps_labels_t labels;
    uint32_t rank;      /* its place in label order */
    int64_t sum;        /* of its counts */
    ps_qr_heatmap_series_t out;
} hm_group_t;

static int cmp_hm_group_labels(const void *a, const void *b)
{
    return ps_labels_cmp(&(*(hm_group_t *const *)a)->labels, &(*(hm_group_t *const *)b)->labels);
}

static int cmp_hm_group_sum(const void *a, const void *b)
{
    const hm_group_t *x = *(hm_group_t *const *)a, *y = *(hm_group_t *const *)b;
    if (x->sum != y->sum)
        return x->sum > y->sum ? -1 : 1;
    return x->rank < y->rank ? -1 : x->rank > y->rank;
}

/* ls without __name__ and the group_by names */
static ps_labels_t exemplar_labels(const ps_labels_t *ls, const char *const *by, uint32_t nby, ps_arena_t *arena)
{
    ps_labels_t o = {0};
    o.pairs = ps_arena_alloc(arena, (ls->n + 1) * sizeof(ps_label_pair_t));
    for (uint32_t k = 0; k < ls->n; k++) {
        bool drop = strcmp(ls->pairs[k].name, "__name__") == 0;
        for (uint32_t j = 0; j < nby && !drop; j++)
            drop = strcmp(ls->pairs[k].name, by[j]) == 0;
        if (!drop)
            o.pairs[o.n++] = ls->pairs[k];
    }
    return o;
}

/* The slots of group g from its points p[0..n) (sorted by slot, y, value). */
static void heatmap_slots(ps_reader_t *r, const ps_querier_heatmap_q_t *q, const ps_series_set_t *set,
                          const hm_point_t *p, size_t n, const double *ymin, ps_arena_t *arena, hm_group_t *g)
{
    uint32_t nslots = 0;
    for (size_t i = 0; i < n; i++)
        nslots += i == 0 || p[i].slot != p[i - 1].slot;
    ps_qr_heatmap_slot_t *slots = ps_arena_calloc(arena, nslots + 1, sizeof(*slots));
    uint32_t s = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && p[j].slot == p[i].slot)
            j++;
        ps_qr_heatmap_slot_t *sl = &slots[s++];
        int32_t *counts = ps_arena_calloc(arena, PS_QUERIER_HEATMAP_BUCKETS, sizeof(int32_t));
        ps_qr_exemplar_t *ex = q->exemplars ? ps_arena_calloc(arena, PS_QUERIER_HEATMAP_BUCKETS, sizeof(*ex)) : NULL;
        for (size_t k = i; k < j; k++) {
            if (p[k].y < 0)
                continue; /* below the first bucket: none is, vmin being the smallest */
            if (ex && (k == i || p[k].y != p[k - 1].y)) {
                char *id = ps_arena_alloc(arena, PS_PROFILE_ID_LEN + 1);
                ps_query_profile_id(r, set->sids[p[k].series], p[k].ts, id);
                ex[sl->nexemplars++] = (ps_qr_exemplar_t){
                    .t = p[k].t, .profile_id = id, .value = p[k].v,
                    .labels = exemplar_labels(&set->labels[p[k].series], q->group_by, q->ngroup_by, arena)};
            }
            counts[p[k].y]++;
            g->sum++;
        }
        sl->t = q->start + (int64_t)p[i].slot * q->step;
        sl->nbuckets = PS_QUERIER_HEATMAP_BUCKETS;
        sl->y_min = ymin;
        sl->counts = counts;
        sl->exemplars = ex;
        i = j;
    }
    g->out = (ps_qr_heatmap_series_t){g->labels, nslots, slots};
}

int ps_querier_select_heatmap(ps_reader_t *r, const ps_querier_heatmap_q_t *q, ps_arena_t *arena,
                              ps_qr_heatmap_series_t **out, uint32_t *nout, ps_err_t *err)
{
    *out = NULL;
    *nout = 0;
    if (q->step <= 0)
        return ps_err_set(err, PS_EINVAL, "step must be at least 1 ms (got %lld ms)", (long long)q->step);
    if (q->start >= q->end)
        return ps_err_set(err, PS_EINVAL, "start (%lld ms) must be before end (%lld ms)", (long long)q->start,
                          (long long)q->end);
    if (q->start < -MS_MAX + q->step || q->end > MS_MAX)
        return ps_err_set(err, PS_EINVAL, "start or end is out of range (ms since 1970 within +-%lld)",
                          (long long)MS_MAX);
    uint64_t nslots = ps_querier_heatmap_slot(q->end, q->start, q->step) + 1;
    if (nslots > PS_QUERIER_HEATMAP_MAX_SLOTS)
        return ps_err_set(err, PS_EINVAL,
                          "the heatmap would have %llu time slots of %lld ms x %d buckets = %llu buckets, more than "
                          "%u slots (%u buckets): use a larger step or a shorter range",
                          (unsigned long long)nslots, (long long)q->step, PS_QUERIER_HEATMAP_BUCKETS,
                          (unsigned long long)nslots * PS_QUERIER_HEATMAP_BUCKETS, PS_QUERIER_HEATMAP_MAX_SLOTS,
                          PS_QUERIER_HEATMAP_MAX_SLOTS * PS_QUERIER_HEATMAP_BUCKETS);
    int64_t lo_ns, hi_ns;
    int ret = ps_querier_range(q->start - q->step, q->end, &lo_ns, &hi_ns, err);
    if (ret)
        return ret;
    ps_series_set_t set;
    if ((ret = ps_querier_series(r, q->sel, 1, lo_ns, hi_ns, q->max_series, arena, &set, err)) != 0)
        return ret;
    /* the points, by group */
    ps_hmap_t index;
    ps_hmap_init(&index);
    ps_buf_t key = PS_BUF_INIT;
    hm_group_t *groups = ps_arena_calloc(arena, set.n + 1, sizeof(hm_group_t));
    uint32_t ng = 0;
    hm_ctx_t c = {.err = err};
    for (uint32_t i = 0; i < set.n && ret == 0; i++) {
        ps_labels_t p;
        bool fresh;
        uint64_t gi = group_of(&index, &key, &set.labels[i], q->group_by, q->ngroup_by, ng, arena, &p, &fresh);
        if (fresh) {
            ng++;
            ps_hmap_put(&index, key.data, key.len, gi);
            groups[gi].labels = p;
        }
        c.group = (uint32_t)gi;
        c.series = i;
        ret = ps_reader_profiles(r, set.sids[i], lo_ns, hi_ns, true, on_heatmap_profile, &c, err);
    }
    ps_buf_dispose(&key);
    ps_hmap_dispose(&index);
    if (ret != 0 || c.n == 0) {
        free(c.p);
        return ret;
    }
    /* the y buckets over every series' totals; Pyroscope's largest starts at 0 */
    int64_t vmin = INT64_MAX, vmax = 0;
    for (size_t i = 0; i < c.n; i++) {
        vmin = c.p[i].v < vmin ? c.p[i].v : vmin;
        vmax = c.p[i].v > vmax ? c.p[i].v : vmax;
    }
    int64_t yb[PS_QUERIER_HEATMAP_BUCKETS];
    ps_querier_heatmap_ybuckets(vmin, vmax, yb);
    double *ymin = ps_arena_alloc(arena, sizeof(double) * PS_QUERIER_HEATMAP_BUCKETS);
    for (int i = 0; i < PS_QUERIER_HEATMAP_BUCKETS; i++)
        ymin[i] = (double)yb[i];
    for (size_t i = 0; i < c.n; i++) {
        c.p[i].slot = (uint32_t)ps_querier_heatmap_slot(c.p[i].t, q->start, q->step);
        c.p[i].y = ps_querier_heatmap_ybucket(c.p[i].v, yb);
    }
    qsort(c.p, c.n, sizeof(hm_point_t), cmp_hm_point);
    for (size_t i = 0; i < c.n;) {
        size_t j = i;
        while (j < c.n && c.p[j].group == c.p[i].group)
            j++;
        heatmap_slots(r, q, &set, c.p + i, j - i, ymin, arena, &groups[c.p[i].group]);
        i = j;
    }
    free(c.p);
    hm_group_t **order = ps_arena_alloc(arena, (ng + 1) * sizeof(hm_group_t *));
    uint32_t k = 0;
    for (uint32_t g = 0; g < ng; g++)
        if (groups[g].out.nslots)
            order[k++] = &groups[g];
    qsort(order, k, sizeof(hm_group_t *), cmp_hm_group_labels);
    if (q->limit > 0) {
        for (uint32_t i = 0; i < k; i++)
            order[i]->rank = i;
        qsort(order, k, sizeof(hm_group_t *), cmp_hm_group_sum);
        if ((uint64_t)q->limit < k)
            k = (uint32_t)q->limit;
    }
    ps_qr_heatmap_series_t *res = ps_arena_calloc(arena, k + 1, sizeof(*res));
    for (uint32_t i = 0; i < k; i++)
        res[i] = order[i]->out;
    *out = res;
    *nout = k;
    return 0;
}

/* ---- AnalyzeQuery ---- */

int ps_querier_analyze(ps_reader_t *r, ps_selector_t *sel, int64_t start_ns, int64_t end_ns, uint32_t max_series,
                       ps_arena_t *arena, ps_qr_query_scope_t *scope, uint64_t *total_bytes, uint64_t *nseries,
                       ps_err_t *err)
{
    memset(scope, 0, sizeof(*scope));
    scope->component_type = "profstore";
    scope->component_count = 1;
    *total_bytes = *nseries = 0;
    ps_series_set_t set;
    int ret = ps_querier_series(r, sel, 1, start_ns, end_ns, max_series, arena, &set, err);
    ps_footprint_t f = {0};
    for (uint32_t i = 0; i < set.n && ret == 0; i++)
        ret = ps_reader_footprint(r, set.sids[i], start_ns, end_ns, &f, err);
    if (ret)
        return ret;
    scope->block_count = f.chunks;
    scope->series_count = set.n;
    scope->profile_count = f.chunk_profiles + f.head_profiles;
    scope->profile_bytes = f.chunk_bytes + f.head_bytes;
    *total_bytes = scope->profile_bytes;
    *nseries = set.n;
    return 0;
}
