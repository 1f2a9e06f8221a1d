/*
 * tsdb.c - the counts of tsdb.h: label names, then each name's values, then each pair's postings
 * (the number of series with it), all from one read snapshot; the top lists kept in bounded
 * min-heaps (O(pairs * log limit), memory of `limit` entries each); then one walk over the series
 * for their kinds and the profiles' time range (each series' first and newest profile).
 */
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "tsdb.h"

typedef struct heap {
    uint32_t n, cap;
    ps_tsdb_stat_t *a;
} heap_t;

/* a ranks below b: smaller value, or the same value and a later name */
static bool below(const ps_tsdb_stat_t *a, const ps_tsdb_stat_t *b)
{
    if (a->value != b->value)
        return a->value < b->value;
    return strcmp(a->name, b->name) > 0;
}

/* as below(a, {name, value}), name of nlen bytes not NUL-terminated */
static bool below_offer(const ps_tsdb_stat_t *a, const char *name, size_t nlen, uint64_t value)
{
    if (a->value != value)
        return a->value < value;
    size_t alen = strlen(a->name);
    int c = memcmp(a->name, name, alen < nlen ? alen : nlen);
    return c > 0 || (c == 0 && alen > nlen);
}

static void heap_init(heap_t *h, uint32_t cap, ps_arena_t *arena)
{
    h->n = 0;
    h->cap = cap;
    h->a = ps_arena_alloc(arena, cap * sizeof(ps_tsdb_stat_t));
}

static void sift_down(heap_t *h, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < h->n && below(&h->a[l], &h->a[m]))
            m = l;
        if (r < h->n && below(&h->a[r], &h->a[m]))
            m = r;
        if (m == i)
            return;
        ps_tsdb_stat_t t = h->a[i];
        h->a[i] = h->a[m];
        h->a[m] = t;
        i = m;
    }
}

/* offers (name, value); name is copied into arena only when kept */
static void heap_offer(heap_t *h, const char *name, size_t nlen, uint64_t value, ps_arena_t *arena)
{
    ps_tsdb_stat_t s = {.name = NULL, .value = value};
    if (h->n == h->cap) {
        if (!below_offer(&h->a[0], name, nlen, value)) /* most offers stop here: nothing copied */
            return;
        s.name = ps_arena_strndup(arena, name, nlen);
        h->a[0] = s;
        sift_down(h, 0);
        return;
    }
    s.name = ps_arena_strndup(arena, name, nlen);
    uint32_t i = h->n++;
    h->a[i] = s;
    while (i > 0) {
        uint32_t p = (i - 1) / 2;
        if (!below(&h->a[i], &h->a[p]))
            break;
        ps_tsdb_stat_t t = h->a[i];
        h->a[i] = h->a[p];
        h->a[p] = t;
        i = p;
    }
}

static int cmp_rank(const void *x, const void *y)
{
    const ps_tsdb_stat_t *a = x, *b = y;
    return below(a, b) ? 1 : below(b, a) ? -1 : 0;
}

static ps_tsdb_top_t heap_sorted(heap_t *h)
{
    qsort(h->a, h->n, sizeof(ps_tsdb_stat_t), cmp_rank);
    return (ps_tsdb_top_t){.n = h->n, .items = h->a};
}

typedef struct strs {
    size_t n, cap;
    char **s;
    size_t *len;
} strs_t;

static int on_str(void *ctx, const char *v, size_t n)
{
    strs_t *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? 2 * l->cap : 64;
        l->s = ps_xrealloc(l->s, l->cap * sizeof(char *));
        l->len = ps_xrealloc(l->len, l->cap * sizeof(size_t));
    }
    l->s[l->n] = ps_xmalloc(n + 1);
    memcpy(l->s[l->n], v, n);
    l->s[l->n][n] = 0;
    l->len[l->n++] = n;
    return 0;
}

static void strs_dispose(strs_t *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->s[i]);
    free(l->s);
    free(l->len);
    memset(l, 0, sizeof(*l));
}

static int on_posting(void *ctx, uint64_t sid)
{
    (*(uint64_t *)ctx)++;
    return 0;
}

typedef struct ctx {
    ps_reader_t *r;
    ps_tsdb_stats_t *out;
    ps_err_t *err;
} ctx_t;

static int on_first(void *c, const ps_stored_profile_t *p)
{
    *(int64_t *)c = p->ts;
    return 1;
}

static int on_series(void *c_, uint64_t sid, const ps_labels_t *ls)
{
    ctx_t *c = c_;
    ps_series_kind_t kind;
    int ret = ps_budget_check(c->err); /* a walk over every series: the query's deadline, its client */
    if (ret == 0)
        ret = ps_reader_series_kind(c->r, sid, &kind, c->err);
    if (ret != 0)
        return ret == PS_ENOTFOUND ? 0 : ret;
    if (kind == PS_SERIES_FLOAT) {
        c->out->float_series++;
        return 0;
    }
    c->out->profile_series++;
    int64_t first = 0, last = 0;
    ret = ps_reader_profiles(c->r, sid, INT64_MIN, INT64_MAX, true, on_first, &first, c->err);
    if (ret < 0)
        return ret;
    if (ret == 0) /* no profile */
        return 0;
    ret = ps_reader_latest(c->r, sid, INT64_MIN, INT64_MAX, &last, c->err);
    if (ret != 0)
        return ret == PS_ENOTFOUND ? 0 : ret;
    bool none = c->out->min_ts == 0 && c->out->max_ts == 0;
    if (none || first < c->out->min_ts)
        c->out->min_ts = first;
    if (none || last > c->out->max_ts)
        c->out->max_ts = last;
    return 0;
}

static int count_labels(ps_reader_t *r, uint32_t limit, ps_arena_t *arena, ps_tsdb_stats_t *out, ps_err_t *err)
{
    heap_t names, values, bytes, pairs;
    heap_init(&names, limit, arena);
    heap_init(&values, limit, arena);
    heap_init(&bytes, limit, arena);
    heap_init(&pairs, limit, arena);
    strs_t ln = {0}, lv = {0};
    char *pair = NULL;
    int ret = ps_reader_label_names(r, on_str, &ln, err);
    for (size_t i = 0; ret == 0 && i < ln.n; i++) {
        strs_dispose(&lv);
        ret = ps_reader_label_values(r, ln.s[i], ln.len[i], on_str, &lv, err);
        uint64_t size = 0;
        bool metric = strcmp(ln.s[i], "__name__") == 0;
        for (size_t k = 0; ret == 0 && k < lv.n; k++) {
            uint64_t count = 0;
            ret = ps_reader_postings(r, ln.s[i], ln.len[i], lv.s[k], lv.len[k], on_posting, &count, err);
            size += lv.len[k];
            out->label_pairs++;
            if (metric)
                heap_offer(&names, lv.s[k], lv.len[k], count, arena);
            size_t plen = ln.len[i] + 1 + lv.len[k];
            pair = ps_xrealloc(pair, plen + 1);
            memcpy(pair, ln.s[i], ln.len[i]);
            pair[ln.len[i]] = '=';
            memcpy(pair + ln.len[i] + 1, lv.s[k], lv.len[k]);
            heap_offer(&pairs, pair, plen, count, arena);
        }
        heap_offer(&values, ln.s[i], ln.len[i], lv.n, arena);
        heap_offer(&bytes, ln.s[i], ln.len[i], size, arena);
    }
    free(pair);
    strs_dispose(&ln);
    strs_dispose(&lv);
    out->by_metric_name = heap_sorted(&names);
    out->values_by_label = heap_sorted(&values);
    out->bytes_by_label = heap_sorted(&bytes);
    out->series_by_pair = heap_sorted(&pairs);
    return ret;
}

int ps_query_tsdb_stats(ps_reader_t *r, uint32_t limit, ps_arena_t *arena, ps_tsdb_stats_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    if (limit < 1 || limit > PS_TSDB_LIMIT_MAX)
        return ps_err_set(err, PS_EINVAL, "limit: must be 1 to %d, got %u", PS_TSDB_LIMIT_MAX, limit);
    int ret = count_labels(r, limit, arena, out, err);
    if (ret != 0)
        return ret;
    ctx_t c = {r, out, err};
    ret = ps_reader_series_foreach(r, on_series, &c, err);
    out->series = out->profile_series + out->float_series;
    return ret;
}
