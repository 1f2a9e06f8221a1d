/*
 * api_prom.c - the Prometheus HTTP API over profile totals (APIS.md §3): query, query_range,
 * series, labels, label values, metadata. GET and POST (form-encoded) alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/fmt.h"
#include "core/hash.h"
#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "parser/selector.h"
#include "query/query.h"

#define ALL_START INT64_MIN
#define ALL_END INT64_MAX


/* time parameter (ns); absent → dflt. */
int ps_param_time(const ps_params_t *p, const char *name, int64_t dflt, int64_t *out, ps_err_t *err)
{
    const ps_param_t *v = ps_params_get(p, name);
    if (v == NULL || v->vlen == 0) {
        *out = dflt;
        return 0;
    }
    if (ps_parse_time(v->value, v->vlen, out, err) != 0)
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": cannot parse \"%.64s\" to a valid timestamp",
                          name, v->value);
    return 0;
}

int ps_param_duration(const ps_params_t *p, const char *name, int64_t dflt, int64_t *out, ps_err_t *err)
{
    const ps_param_t *v = ps_params_get(p, name);
    if (v == NULL || v->vlen == 0) {
        *out = dflt;
        return 0;
    }
    if (ps_parse_duration(v->value, v->vlen, 1, out, err) != 0)
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": cannot parse \"%.64s\" to a valid duration",
                          name, v->value);
    return 0;
}

static int param_limit(const ps_params_t *p, uint64_t *out, ps_err_t *err)
{
    const ps_param_t *v = ps_params_get(p, "limit");
    *out = 0;
    if (v == NULL || v->vlen == 0)
        return 0;
    char *end;
    long long x = strtoll(v->value, &end, 10);
    if (*end || x < 0)
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"limit\": cannot parse \"%.32s\" to a non-negative integer",
                          v->value);
    *out = (uint64_t)x;
    return 0;
}


static void json_point(ps_buf_t *b, int64_t ms, double v)
{
    char ts[40], val[48];
    ps_fmt_ts_ms(ms, ts, sizeof(ts));
    ps_fmt_float(v, val, sizeof(val));
    size_t tl = strlen(ts), vl = strlen(val);
    char *p = (char *)ps_buf_reserve(b, tl + vl + 5);
    *p++ = '[';
    memcpy(p, ts, tl);
    p += tl;
    *p++ = ',';
    *p++ = '"';
    memcpy(p, val, vl);
    p += vl;
    *p++ = '"';
    *p++ = ']';
    b->len += tl + vl + 5;
}

static void send_json(ps_qctx_t *c)
{
    ps_http_send(c->req, 200, "application/json", c->out.data, c->out.len);
}

static int do_query(ps_qctx_t *c, bool instant)
{
    int ret;
    const ps_param_t *q = ps_params_get(&c->params, "query");
    if (q == NULL)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"query\": missing");
    ps_query_limits_t lim;
    ps_query_limits_default(&lim);
    lim.max_series = c->srv->opts.max_series;
    int64_t start, end = 0, step = 0, now = ps_time_now();
    if (instant) {
        if ((ret = ps_param_time(&c->params, "time", now, &start, &c->err)) != 0 ||
            (ret = ps_param_duration(&c->params, "lookback_delta", lim.lookback_ns, &lim.lookback_ns, &c->err)) != 0)
            return ret;
    } else {
        const char *need[] = {"start", "end", "step"};
        for (int i = 0; i < 3; i++)
            if (ps_params_get(&c->params, need[i]) == NULL)
                return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": missing", need[i]);
        if ((ret = ps_param_time(&c->params, "start", 0, &start, &c->err)) != 0 ||
            (ret = ps_param_time(&c->params, "end", 0, &end, &c->err)) != 0 ||
            (ret = ps_param_duration(&c->params, "step", 0, &step, &c->err)) != 0)
            return ret;
        if (end < start)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"end\": end timestamp must not be before start time");
        if (step <= 0)
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"step\": zero or negative query resolution step widths are not "
                              "accepted. Try a positive integer");
    }
    ps_expr_t *e = NULL;
    if ((ret = ps_expr_parse(q->value, q->vlen, &c->arena, &e, &c->err)) != 0)
        return ret;
    ps_qresult_t res;
    ret = ps_query_eval(c->reader, e, start, end, step, instant, &lim, &c->arena, &res, &c->err);
    if (ret) {
        ps_expr_dispose(e);
        return ret;
    }
    ps_buf_t *b = &c->out;
    static const char *types[] = {"matrix", "vector", "scalar"};
    ps_buf_printf(b, "{\"status\":\"success\",\"data\":{\"resultType\":\"%s\",\"result\":", types[res.type]);
    if (res.type == PS_RES_SCALAR) {
        json_point(b, res.t, res.scalar);
    } else {
        ps_buf_putc(b, '[');
        for (uint32_t i = 0; i < res.n; i++) {
            ps_qseries_t *s = &res.series[i];
            ps_buf_append(b, i ? ",{\"metric\":" : "{\"metric\":", i ? 11 : 10);
            ps_labels_json(&s->labels, b);
            if (res.type == PS_RES_VECTOR) {
                PS_BUF_LIT(b, ",\"value\":");
                json_point(b, s->points[0].t, s->points[0].v);
            } else {
                PS_BUF_LIT(b, ",\"values\":[");
                for (uint32_t k = 0; k < s->n; k++) {
                    if (k)
                        ps_buf_putc(b, ',');
                    json_point(b, s->points[k].t, s->points[k].v);
                }
                ps_buf_putc(b, ']');
            }
            ps_buf_putc(b, '}');
        }
        ps_buf_putc(b, ']');
    }
    PS_BUF_LIT(b, "}}\n");
    ps_expr_dispose(e);
    send_json(c);
    return 0;
}

int ps_api_query(h2o_req_t *req)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0)
        ret = do_query(&c, true);
    return ps_qctx_finish(&c, ret);
}

int ps_api_query_range(h2o_req_t *req)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0)
        ret = do_query(&c, false);
    return ps_qctx_finish(&c, ret);
}

/* Series of every match[] selector (union, by id), with data in [start, end]. */
static int select_matches(ps_qctx_t *c, int64_t start, int64_t end, ps_series_set_t *out, bool *any)
{
    memset(out, 0, sizeof(*out));
    *any = false;
    uint32_t cap = 0;
    for (size_t i = 0; i < c->params.n; i++) {
        const ps_param_t *p = &c->params.items[i];
        if (!(p->nlen == 7 && memcmp(p->name, "match[]", 7) == 0))
            continue;
        *any = true;
        ps_selector_t sel;
        int ret = ps_selector_parse(p->value, p->vlen, &c->arena, &sel, &c->err);
        if (ret)
            return ps_err_prefix(&c->err, "invalid parameter \"match[]\"");
        ps_series_set_t s;
        ret = ps_query_select(c->reader, &sel, start, end, c->srv->opts.max_series, &c->arena, &s, &c->err);
        ps_selector_dispose(&sel);
        if (ret)
            return ret;
        for (uint32_t k = 0; k < s.n; k++) {
            bool dup = false;
            for (uint32_t j = 0; j < out->n && !dup; j++)
                dup = out->sids[j] == s.sids[k];
            if (dup)
                continue;
            if (out->n == cap) {
                cap = cap ? cap * 2 : 64;
                uint64_t *ns = ps_arena_alloc(&c->arena, cap * sizeof(uint64_t));
                ps_labels_t *nl = ps_arena_alloc(&c->arena, cap * sizeof(ps_labels_t));
                if (out->n) {
                    memcpy(ns, out->sids, out->n * sizeof(uint64_t));
                    memcpy(nl, out->labels, out->n * sizeof(ps_labels_t));
                }
                out->sids = ns;
                out->labels = nl;
            }
            out->sids[out->n] = s.sids[k];
            out->labels[out->n] = s.labels[k];
            out->n++;
            if (out->n > c->srv->opts.max_series)
                return ps_err_set(&c->err, PS_ELIMIT, "the match[] selectors match more than %u series (the limit)",
                                  c->srv->opts.max_series);
        }
    }
    return 0;
}

static int range_params(ps_qctx_t *c, int64_t *start, int64_t *end)
{
    int ret;
    if ((ret = ps_param_time(&c->params, "start", ALL_START, start, &c->err)) != 0 ||
        (ret = ps_param_time(&c->params, "end", ALL_END, end, &c->err)) != 0)
        return ret;
    if (*end < *start)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"end\": end timestamp must not be before start time");
    return 0;
}


static int cmp_labels_qsort(const void *a, const void *b)
{
    return ps_labels_cmp(a, b);
}

int ps_api_series(h2o_req_t *req)
{
    ps_qctx_t c;
    int64_t start, end;
    uint64_t limit;
    bool any;
    ps_series_set_t s;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0)
        ret = range_params(&c, &start, &end);
    if (ret == 0)
        ret = param_limit(&c.params, &limit, &c.err);
    if (ret == 0)
        ret = select_matches(&c, start, end, &s, &any);
    if (ret == 0 && !any)
        ret = ps_err_set(&c.err, PS_EINVAL, "no match[] parameter provided");
    if (ret == 0) {
        if (s.n > 1)
            qsort(s.labels, s.n, sizeof(ps_labels_t), cmp_labels_qsort);
        uint32_t n = limit && limit < s.n ? (uint32_t)limit : s.n;
        PS_BUF_LIT(&c.out, "{\"status\":\"success\",\"data\":[");
        for (uint32_t i = 0; i < n; i++) {
            if (i)
                ps_buf_putc(&c.out, ',');
            ps_labels_json(&s.labels[i], &c.out);
        }
        ps_buf_putc(&c.out, ']');
        if (n < s.n)
            PS_BUF_LIT(&c.out, ",\"warnings\":[\"results truncated due to limit\"]");
        PS_BUF_LIT(&c.out, "}\n");
        send_json(&c);
    }
    return ps_qctx_finish(&c, ret);
}

/* A sorted, de-duplicated list of strings. */
typedef struct strlist {
    ps_hmap_t seen;
    const char **v;
    uint32_t n, cap;
    ps_arena_t *arena;
} strlist_t;

static int strlist_add(void *ctx, const char *s, size_t n)
{
    strlist_t *l = ctx;
    uint64_t dummy;
    if (ps_hmap_get(&l->seen, s, n, &dummy))
        return 0;
    ps_hmap_put(&l->seen, s, n, 1);
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        const char **nv = ps_arena_alloc(l->arena, l->cap * sizeof(char *));
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(char *));
        l->v = nv;
    }
    l->v[l->n++] = ps_arena_strndup(l->arena, s, n);
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static void send_strlist(ps_qctx_t *c, strlist_t *l, uint64_t limit)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(char *), cmp_str);
    uint32_t n = limit && limit < l->n ? (uint32_t)limit : l->n;
    PS_BUF_LIT(&c->out, "{\"status\":\"success\",\"data\":[");
    for (uint32_t i = 0; i < n; i++) {
        if (i)
            ps_buf_putc(&c->out, ',');
        ps_buf_json_str(&c->out, l->v[i], strlen(l->v[i]));
    }
    ps_buf_putc(&c->out, ']');
    if (n < l->n)
        PS_BUF_LIT(&c->out, ",\"warnings\":[\"results truncated due to limit\"]");
    PS_BUF_LIT(&c->out, "}\n");
    send_json(c);
}

int ps_api_labels(h2o_req_t *req)
{
    ps_qctx_t c;
    int64_t start, end;
    uint64_t limit;
    bool any;
    ps_series_set_t s;
    strlist_t l = {.arena = NULL};
    int ret = ps_qctx_begin(&c, req);
    l.arena = &c.arena;
    ps_hmap_init(&l.seen);
    if (ret == 0)
        ret = range_params(&c, &start, &end);
    if (ret == 0)
        ret = param_limit(&c.params, &limit, &c.err);
    if (ret == 0)
        ret = select_matches(&c, start, end, &s, &any);
    if (ret == 0) {
        if (any) {
            for (uint32_t i = 0; i < s.n; i++)
                for (uint32_t k = 0; k < s.labels[i].n; k++)
                    strlist_add(&l, s.labels[i].pairs[k].name, s.labels[i].pairs[k].nlen);
        } else {
            ret = ps_reader_label_names(c.reader, strlist_add, &l, &c.err);
        }
    }
    if (ret == 0)
        send_strlist(&c, &l, limit);
    ps_hmap_dispose(&l.seen);
    return ps_qctx_finish(&c, ret);
}

/* Prometheus' escaping of odd label names in the path: U__ then _ doubled, _<hex>_ for others. */
static int unescape_name(const char *s, size_t n, ps_arena_t *a, const char **out, size_t *outlen)
{
    if (n < 3 || memcmp(s, "U__", 3) != 0) {
        *out = ps_arena_strndup(a, s, n);
        *outlen = n;
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    for (size_t i = 3; i < n; i++) {
        if (s[i] != '_') {
            ps_buf_putc(&b, (uint8_t)s[i]);
            continue;
        }
        if (i + 1 < n && s[i + 1] == '_') {
            ps_buf_putc(&b, '_');
            i++;
            continue;
        }
        size_t j = i + 1;
        uint32_t cp = 0;
        while (j < n && s[j] != '_' && j - i <= 8) {
            char h = s[j];
            int v = h >= '0' && h <= '9' ? h - '0' : h >= 'a' && h <= 'f' ? h - 'a' + 10 : h >= 'A' && h <= 'F' ? h - 'A' + 10 : -1;
            if (v < 0) {
                ps_buf_dispose(&b);
                return -1;
            }
            cp = cp * 16 + (uint32_t)v;
            j++;
        }
        if (j >= n || j == i + 1 || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) {
            ps_buf_dispose(&b);
            return -1;
        }
        ps_buf_put_utf8(&b, cp);
        i = j;
    }
    *out = ps_arena_strndup(a, b.len ? (const char *)b.data : "", b.len);
    *outlen = b.len;
    ps_buf_dispose(&b);
    return 0;
}

int ps_api_label_values(h2o_req_t *req)
{
    ps_qctx_t c;
    int64_t start, end;
    uint64_t limit;
    bool any;
    ps_series_set_t s;
    strlist_t l = {.arena = NULL};
    int ret = ps_qctx_begin(&c, req);
    l.arena = &c.arena;
    ps_hmap_init(&l.seen);
    /* /api/v1/label/<name>/values */
    h2o_iovec_t p = req->path_normalized;
    const char *nb = p.base + strlen("/api/v1/label/");
    size_t nl = p.len - strlen("/api/v1/label/") - strlen("/values");
    const char *name = NULL;
    size_t namelen = 0;
    if (ret == 0 && (unescape_name(nb, nl, &c.arena, &name, &namelen) != 0 || !ps_label_name_valid(name, namelen)))
        ret = ps_err_set(&c.err, PS_EINVAL, "invalid label name: \"%.*s\"", (int)(nl > 128 ? 128 : nl), nb);
    if (ret == 0)
        ret = range_params(&c, &start, &end);
    if (ret == 0)
        ret = param_limit(&c.params, &limit, &c.err);
    if (ret == 0)
        ret = select_matches(&c, start, end, &s, &any);
    if (ret == 0) {
        if (any) {
            for (uint32_t i = 0; i < s.n; i++) {
                const ps_label_pair_t *v = ps_labels_get(&s.labels[i], name);
                if (v)
                    strlist_add(&l, v->value, v->vlen);
            }
        } else {
            ret = ps_reader_label_values(c.reader, name, namelen, strlist_add, &l, &c.err);
        }
    }
    if (ret == 0)
        send_strlist(&c, &l, limit);
    ps_hmap_dispose(&l.seen);
    return ps_qctx_finish(&c, ret);
}

typedef struct meta_ctx {
    ps_qctx_t *c;
    int first;
    const char *only;
    uint64_t limit, count;
} meta_ctx_t;

static int on_meta(void *ctx, const char *v, size_t n)
{
    meta_ctx_t *m = ctx;
    if (m->only && (strlen(m->only) != n || memcmp(m->only, v, n) != 0))
        return 0;
    if (m->limit && m->count >= m->limit)
        return 0;
    m->count++;
    const char *unit = "";
    size_t ul = 0;
    /* name:sample_type:sample_unit:... → the sample unit */
    const char *c1 = memchr(v, ':', n);
    const char *c2 = c1 ? memchr(c1 + 1, ':', n - (size_t)(c1 + 1 - v)) : NULL;
    const char *c3 = c2 ? memchr(c2 + 1, ':', n - (size_t)(c2 + 1 - v)) : NULL;
    if (c2 && c3) {
        unit = c2 + 1;
        ul = (size_t)(c3 - c2 - 1);
    }
    ps_buf_t *b = &m->c->out;
    if (!m->first)
        ps_buf_putc(b, ',');
    m->first = 0;
    ps_buf_json_str(b, v, n);
    PS_BUF_LIT(b, ":[{\"type\":\"gauge\",\"help\":");
    char help[600];
    int hl = snprintf(help, sizeof(help), "Sum of the sample values of each profile of type %.*s.", (int)n, v);
    ps_buf_json_str(b, help, (size_t)hl);
    PS_BUF_LIT(b, ",\"unit\":");
    ps_buf_json_str(b, unit, ul);
    PS_BUF_LIT(b, "}]");
    return 0;
}

int ps_api_metadata(h2o_req_t *req)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, req);
    meta_ctx_t m = {&c, 1, NULL, 0, 0};
    if (ret == 0)
        ret = param_limit(&c.params, &m.limit, &c.err);
    const ps_param_t *metric = ps_params_get(&c.params, "metric");
    if (metric && metric->vlen)
        m.only = metric->value;
    if (ret == 0) {
        PS_BUF_LIT(&c.out, "{\"status\":\"success\",\"data\":{");
        ret = ps_reader_label_values(c.reader, "__name__", 8, on_meta, &m, &c.err);
        PS_BUF_LIT(&c.out, "}}\n");
        if (ret == 0)
            send_json(&c);
    }
    return ps_qctx_finish(&c, ret);
}
