/*
 * api_prom.c - the Prometheus HTTP API (docs/protocols.md): query and query_range (PromQL, src/query/
 * promql_eval.h, over float series and profile totals), series, labels, label values, metadata. GET
 * and POST (form-encoded) alike.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/encode.h"
#include "core/fmt.h"
#include "core/hash.h"
#include "core/timeutil.h"
#include "http.h"
#include "proto/remote.h"
#include "internal.h"
#include "parser/promql.h"
#include "parser/selector.h"
#include "query/promql_eval.h"
#include "query/query.h"
#include "render/render.h"

#define ALL_START INT64_MIN
#define ALL_END INT64_MAX


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


/* [ts, "value"]: written in one piece (a range answer has up to 11,000 of these per series; the
 * formatted numbers need no escaping). */
static void json_point(ps_json_t *j, int64_t ms, double v)
{
    char b[96];
    b[0] = '[';
    ps_fmt_ts_ms(ms, b + 1, 40);
    size_t n = strlen(b);
    b[n++] = ',';
    b[n++] = '"';
    ps_fmt_float(v, b + n, 48);
    n += strlen(b + n);
    b[n++] = '"';
    b[n++] = ']';
    ps_json_raw(j, b, n);
}

/* "warnings" of an answer cut at limit, as Prometheus words it */
static void json_truncated(ps_json_t *j, bool truncated)
{
    if (!truncated)
        return;
    ps_json_key(j, "warnings");
    ps_json_arr(j);
    ps_json_cstr(j, "results truncated due to limit");
    ps_json_end(j);
}

static void send_json(ps_qctx_t *c)
{
    ps_answer_take(&c->t->ans, 200, "application/json", &c->out); /* no copy of the answer */
}

/* Prometheus 3's "warnings" or "infos" (Annotations.AsStrings(query, 10, 10)): each message with
 * the position of the expression it is about ("... (1:6)"), at most 10, then "N more warning
 * annotations omitted". */
static void json_annots(ps_json_t *j, const ps_pq_result_t *res, const char *query, size_t qlen, bool warn)
{
    uint32_t n = 0, skipped = 0;
    for (uint32_t i = 0; i < res->nannots; i++)
        n += res->annots[i].warn == warn;
    if (n == 0)
        return;
    ps_json_key(j, warn ? "warnings" : "infos");
    ps_json_arr(j);
    n = 0;
    char buf[640];
    for (uint32_t i = 0; i < res->nannots; i++) {
        const ps_pq_annot_t *a = &res->annots[i];
        if (a->warn != warn)
            continue;
        if (n == 10) {
            skipped++;
            continue;
        }
        ps_pq_annot_text(a, query, qlen, buf, sizeof(buf));
        ps_json_cstr(j, buf);
        n++;
    }
    if (warn)
        skipped += res->nannots_dropped; /* not told apart: counted as warnings */
    if (skipped > 0) {
        snprintf(buf, sizeof(buf), "%u more %s annotations omitted", skipped, warn ? "warning" : "info");
        ps_json_cstr(j, buf);
    }
    ps_json_end(j);
}

/* The evaluator's answer in Prometheus' shape (docs/protocols.md, "Prometheus HTTP API"), with
 * Prometheus 3's annotations. */
static void json_result(ps_qctx_t *c, const ps_pq_result_t *res, const char *query, size_t qlen)
{
    static const char *types[] = {[PS_PQ_VSCALAR] = "scalar", [PS_PQ_VVECTOR] = "vector",
                                  [PS_PQ_VMATRIX] = "matrix", [PS_PQ_VSTRING] = "string"};
    ps_json_t j;
    ps_json_envelope(&j, &c->out);
    ps_json_obj(&j);
    ps_json_key(&j, "resultType");
    ps_json_cstr(&j, types[res->type]);
    ps_json_key(&j, "result");
    if (res->type == PS_PQ_VSCALAR) {
        json_point(&j, res->t, res->scalar);
    } else if (res->type == PS_PQ_VSTRING) {
        char ts[40];
        ps_fmt_ts_ms(res->t, ts, sizeof(ts));
        ps_json_arr(&j);
        ps_json_raw(&j, ts, strlen(ts));
        ps_json_cstr(&j, res->str);
        ps_json_end(&j);
    } else {
        ps_json_arr(&j);
        for (uint32_t i = 0; i < res->n; i++) {
            const ps_qseries_t *s = &res->series[i];
            ps_json_obj(&j);
            ps_json_key(&j, "metric");
            ps_labels_json(&s->labels, &j);
            if (res->type == PS_PQ_VVECTOR) {
                ps_json_key(&j, "value");
                json_point(&j, s->points[0].t, s->points[0].v);
            } else {
                ps_json_key(&j, "values");
                ps_json_arr(&j);
                for (uint32_t k = 0; k < s->n; k++)
                    json_point(&j, s->points[k].t, s->points[k].v);
                ps_json_end(&j);
            }
            ps_json_end(&j);
        }
        ps_json_end(&j);
    }
    ps_json_end(&j);
    json_annots(&j, res, query, qlen, true);
    json_annots(&j, res, query, qlen, false);
    ps_json_envelope_close(&j);
}

/* The PromQL language the server speaks (--promql.compat, --enable-feature). */
static void pq_limits(const ps_qctx_t *c, ps_pq_limits_t *lim)
{
    ps_pq_limits_default(lim);
    lim->compat = c->srv->opts.promql_compat == 2 ? 2 : 3;
    lim->experimental = c->srv->opts.promql_experimental;
}

static int do_query(ps_qctx_t *c, bool instant)
{
    int ret;
    const ps_param_t *q = ps_params_get(&c->params, "query");
    if (q == NULL)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"query\": missing");
    ps_pq_opts_t o;
    ps_pq_opts_default(&o);
    if (c->srv->opts.query_timeout > 0)
        o.timeout = c->srv->opts.query_timeout / 1000000;
    if (c->srv->opts.query_max_samples > 0)
        o.max_samples = c->srv->opts.query_max_samples;
    o.max_memory = c->srv->opts.query_max_memory;
    o.compat = c->srv->opts.promql_compat == 2 ? 2 : 3;
    int64_t start, end = 0, step = 0, now = ps_time_now(), lookback = o.lookback * 1000000, timeout = 0;
    if ((ret = ps_param_duration(&c->params, "timeout", 0, &timeout, &c->err)) != 0)
        return ret;
    if (timeout > 0 && (o.timeout == 0 || timeout / 1000000 < o.timeout))
        o.timeout = timeout / 1000000 > 0 ? timeout / 1000000 : 1;
    if (instant) {
        if ((ret = ps_param_time(&c->params, "time", now, now, &start, &c->err)) != 0 ||
            (ret = ps_param_duration(&c->params, "lookback_delta", lookback, &lookback, &c->err)) != 0)
            return ret;
        end = start;
    } else {
        const char *need[] = {"start", "end", "step"};
        for (int i = 0; i < 3; i++)
            if (ps_params_get(&c->params, need[i]) == NULL)
                return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": missing", need[i]);
        if ((ret = ps_param_time(&c->params, "start", now, 0, &start, &c->err)) != 0 ||
            (ret = ps_param_time(&c->params, "end", now, 0, &end, &c->err)) != 0 ||
            (ret = ps_param_duration(&c->params, "step", 0, &step, &c->err)) != 0)
            return ret;
        if (end < start)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"end\": end timestamp must not be before start time");
        if (step <= 0)
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"step\": zero or negative query resolution step widths are not "
                              "accepted. Try a positive integer");
        if (((uint64_t)end - (uint64_t)start) / (uint64_t)step > 11000) /* end >= start: fits a uint64 */
            return ps_err_set(&c->err, PS_EINVAL,
                              "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                              "resolution (?step=XX)");
        step = ps_ns_to_ms_floor(step) > 0 ? ps_ns_to_ms_floor(step) : 1;
    }
    o.start = ps_ns_to_ms_floor(start);
    o.end = ps_ns_to_ms_floor(end);
    o.step = step;
    if (lookback > 0)
        o.lookback = ps_ns_to_ms_floor(lookback);
    ps_pq_node_t *e = NULL;
    ps_pq_limits_t lim;
    pq_limits(c, &lim);
    if ((ret = ps_pq_parse(q->value, q->vlen, &lim, &c->arena, &e, &c->err)) != 0)
        return ps_err_prefix(&c->err, "invalid parameter \"query\"");
    if ((ret = ps_pq_check_durations(e, &o, &c->err)) != 0) {
        ps_pq_dispose(e);
        return ps_err_prefix(&c->err, "invalid parameter \"query\"");
    }
    ps_pq_source_t src;
    ps_pq_store_src_t sctx;
    ps_pq_store_source(&src, &sctx, c->reader, c->srv->opts.max_series);
    ps_pq_result_t res;
    ret = ps_pq_eval(e, &src, &o, &c->arena, &res, &c->err);
    ps_pq_dispose(e);
    if (ret == PS_EUNSUPPORTED) /* a query we do not evaluate is bad data to the client (400) */
        ret = c->err.code = PS_EINVAL;
    if (ret)
        return ret;
    json_result(c, &res, q->value, q->vlen);
    send_json(c);
    return 0;
}

int ps_api_query(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    if (ret == 0)
        ret = do_query(&c, true);
    return ps_qctx_finish(&c, ret);
}

int ps_api_query_range(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    if (ret == 0)
        ret = do_query(&c, false);
    return ps_qctx_finish(&c, ret);
}

/* The match[] selectors (parsed into the arena; *n = 0 when there is none). */
static int match_params(ps_qctx_t *c, ps_selector_t **sels, uint32_t *n)
{
    *n = 0;
    *sels = ps_arena_alloc(&c->arena, (c->params.n + 1) * sizeof(ps_selector_t));
    for (size_t i = 0; i < c->params.n; i++) {
        const ps_param_t *p = &c->params.items[i];
        if (!(p->nlen == 7 && memcmp(p->name, "match[]", 7) == 0))
            continue;
        if (ps_selector_parse(p->value, p->vlen, &c->arena, &(*sels)[*n], &c->err) != 0)
            return ps_err_prefix(&c->err, "invalid parameter \"match[]\"");
        (*n)++;
    }
    return 0;
}

static void match_dispose(ps_selector_t *sels, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++)
        ps_selector_dispose(&sels[i]);
}

static int range_params(ps_qctx_t *c, int64_t *start, int64_t *end)
{
    int ret;
    int64_t now = ps_time_now();
    if ((ret = ps_param_time(&c->params, "start", now, ALL_START, start, &c->err)) != 0 ||
        (ret = ps_param_time(&c->params, "end", now, ALL_END, end, &c->err)) != 0)
        return ret;
    if (*end < *start)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"end\": end timestamp must not be before start time");
    return 0;
}


static int cmp_labels_qsort(const void *a, const void *b)
{
    return ps_labels_cmp(a, b);
}

int ps_api_series(ps_task_t *t)
{
    ps_qctx_t c;
    int64_t start, end;
    uint64_t limit;
    ps_selector_t *sels = NULL;
    uint32_t nsels = 0;
    ps_series_set_t s;
    int ret = ps_qctx_begin(&c, t);
    if (ret == 0)
        ret = range_params(&c, &start, &end);
    if (ret == 0)
        ret = param_limit(&c.params, &limit, &c.err);
    if (ret == 0)
        ret = match_params(&c, &sels, &nsels);
    if (ret == 0 && nsels == 0)
        ret = ps_err_set(&c.err, PS_EINVAL, "no match[] parameter provided");
    if (ret == 0)
        ret = ps_query_select_union(c.reader, sels, nsels, start, end, c.srv->opts.max_series, &c.arena, &s, &c.err);
    if (ret == 0) {
        if (s.n > 1)
            qsort(s.labels, s.n, sizeof(ps_labels_t), cmp_labels_qsort);
        uint32_t n = limit && limit < s.n ? (uint32_t)limit : s.n;
        ps_json_t j;
        ps_json_envelope(&j, &c.out);
        ps_json_arr(&j);
        for (uint32_t i = 0; i < n; i++)
            ps_labels_json(&s.labels[i], &j);
        ps_json_end(&j);
        json_truncated(&j, n < s.n);
        ps_json_envelope_close(&j);
        send_json(&c);
    }
    match_dispose(sels, nsels);
    return ps_qctx_finish(&c, ret);
}

static void send_strlist(ps_qctx_t *c, const ps_strlist_t *l, uint64_t limit)
{
    uint32_t n = limit && limit < l->n ? (uint32_t)limit : l->n;
    ps_json_t j;
    ps_json_envelope(&j, &c->out);
    ps_json_arr(&j);
    for (uint32_t i = 0; i < n; i++)
        ps_json_cstr(&j, l->v[i]);
    ps_json_end(&j);
    json_truncated(&j, n < l->n);
    ps_json_envelope_close(&j);
    send_json(c);
}

/* the label index's strings as JSON, up to limit (0: all); past it, truncated */
typedef struct index_json {
    ps_json_t *j;
    uint64_t limit, n;
    bool truncated;
} index_json_t;

static int on_index_str(void *ctx, const char *s, size_t n)
{
    index_json_t *x = ctx;
    if (x->limit && x->n == x->limit) {
        x->truncated = true;
        return 1;
    }
    x->n++;
    ps_json_str(x->j, s, n);
    return 0;
}

/* Every series, with or without a range: the JSON written from the index as it is walked (a
 * million values: no list, no copies). PS_EOUTOFORDER (nothing sent) when the index is not in the
 * answer's order, or a range needs the walk over every series. */
static int labels_from_index(ps_qctx_t *c, const char *name, int64_t start, int64_t end, uint64_t limit,
                             bool *walk_all)
{
    ps_json_t j;
    ps_json_envelope(&j, &c->out);
    ps_json_arr(&j);
    index_json_t x = {&j, limit, 0, false};
    int ret = ps_query_labels_each(c->reader, name, start, end, on_index_str, &x, walk_all, &c->err);
    if (ret == 1)
        ret = 0;
    if (ret != 0) {
        ps_buf_reset(&c->out);
        return ret;
    }
    ps_json_end(&j);
    json_truncated(&j, x.truncated);
    ps_json_envelope_close(&j);
    send_json(c);
    return 0;
}

/* labels (name == NULL) or label values: the query room answers, we send. */
static int labels_answer(ps_qctx_t *c, const char *name)
{
    int64_t start, end;
    uint64_t limit;
    ps_selector_t *sels = NULL;
    uint32_t nsels = 0;
    ps_strlist_t l;
    int ret = range_params(c, &start, &end);
    if (ret == 0)
        ret = param_limit(&c->params, &limit, &c->err);
    if (ret == 0)
        ret = match_params(c, &sels, &nsels);
    bool done = false, walk_all = false;
    if (ret == 0 && nsels == 0) {
        ret = labels_from_index(c, name, start, end, limit, &walk_all);
        done = ret == 0;
        if (ret == PS_EOUTOFORDER)
            ret = 0;
    }
    if (ret == 0 && !done)
        ret = walk_all ? ps_query_labels_walk(c->reader, name, start, end, &c->arena, &l, &c->err)
                       : ps_query_labels(c->reader, name, sels, nsels, start, end, c->srv->opts.max_series, &c->arena,
                                         &l, &c->err);
    if (ret == 0 && !done)
        send_strlist(c, &l, limit);
    match_dispose(sels, nsels);
    return ret;
}

int ps_api_labels(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    if (ret == 0)
        ret = labels_answer(&c, NULL);
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
            int v = ps_hex_digit((unsigned char)h);
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

int ps_api_label_values(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    /* /api/v1/label/<name>/values */
    const char *nb = t->path + strlen("/api/v1/label/");
    size_t nl = t->path_len - strlen("/api/v1/label/") - strlen("/values");
    const char *name = NULL;
    size_t namelen = 0;
    if (ret == 0 && (unescape_name(nb, nl, &c.arena, &name, &namelen) != 0 || !ps_label_name_utf8_valid(name, namelen)))
        ret = ps_err_set(&c.err, PS_EINVAL, "invalid label name: \"%.*s\"", (int)(nl > 128 ? 128 : nl), nb);
    if (ret == 0)
        ret = labels_answer(&c, name);
    return ps_qctx_finish(&c, ret);
}

/* ---- /api/v1/metadata: the metadata remote_write stored, and one gauge per profile type ---- */

typedef struct meta_ctx {
    ps_json_t *j;
    ps_arena_t *arena;
    const char *only;
    uint64_t limit, count;
    bool per_metric_zero;              /* limit_per_metric=0: metrics listed with no entries */
    ps_metric_meta_t *stored;          /* sorted by family, copied */
    size_t nstored, capstored, next;   /* next: merge position */
} meta_ctx_t;

static int on_stored_meta(void *ctx, const ps_metric_meta_t *m)
{
    meta_ctx_t *c = ctx;
    if (c->nstored == c->capstored) {
        size_t cap = c->capstored ? c->capstored * 2 : 64;
        ps_metric_meta_t *n = ps_arena_alloc(c->arena, cap * sizeof(*n));
        if (c->nstored)
            memcpy(n, c->stored, c->nstored * sizeof(*n));
        c->stored = n;
        c->capstored = cap;
    }
    ps_metric_meta_t *d = &c->stored[c->nstored++];
    *d = *m;
    d->family = ps_arena_strndup(c->arena, m->family, m->family_len);
    d->help = ps_arena_strndup(c->arena, m->help, m->help_len);
    d->unit = ps_arena_strndup(c->arena, m->unit, m->unit_len);
    return 0;
}

static int cmp_name(const char *a, size_t an, const char *b, size_t bn)
{
    int r = memcmp(a, b, an < bn ? an : bn);
    return r ? r : (an > bn) - (an < bn);
}

/* name:sample_type:sample_unit:period_type:period_unit[:delta] */
static bool is_profile_type(const char *v, size_t n)
{
    size_t colons = 0;
    for (size_t i = 0; i < n; i++)
        colons += v[i] == ':';
    return colons == 4 || (colons == 5 && n > 6 && memcmp(v + n - 6, ":delta", 6) == 0);
}

static void meta_entry(meta_ctx_t *m, const char *name, size_t n, const char *type, const char *help, size_t hl,
                       const char *unit, size_t ul)
{
    m->count++;
    ps_json_keyn(m->j, name, n);
    ps_json_arr(m->j);
    if (!m->per_metric_zero) {
        ps_json_obj(m->j);
        ps_json_key(m->j, "type");
        ps_json_cstr(m->j, type);
        ps_json_key(m->j, "help");
        ps_json_str(m->j, help, hl);
        ps_json_key(m->j, "unit");
        ps_json_str(m->j, unit, ul);
        ps_json_end(m->j);
    }
    ps_json_end(m->j);
}

static bool meta_full(const meta_ctx_t *m)
{
    return m->limit && m->count >= m->limit;
}

static void emit_stored_until(meta_ctx_t *m, const char *v, size_t n)
{
    while (m->next < m->nstored && !meta_full(m)) {
        const ps_metric_meta_t *e = &m->stored[m->next];
        if (v != NULL && cmp_name(e->family, e->family_len, v, n) >= 0)
            break;
        const char *type = ps_metric_type_name(e->type);
        meta_entry(m, e->family, e->family_len, type ? type : "unknown", e->help, e->help_len, e->unit, e->unit_len);
        m->next++;
    }
}

static int on_meta(void *ctx, const char *v, size_t n)
{
    meta_ctx_t *m = ctx;
    if (m->only && (strlen(m->only) != n || memcmp(m->only, v, n) != 0))
        return 0;
    emit_stored_until(m, v, n);
    if (m->next < m->nstored && cmp_name(m->stored[m->next].family, m->stored[m->next].family_len, v, n) == 0)
        return 0; /* stored metadata wins; emitted on the next call */
    if (meta_full(m) || !is_profile_type(v, n))
        return 0;
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
    char help[600];
    int hl = snprintf(help, sizeof(help), "Sum of the sample values of each profile of type %.*s.", (int)n, v);
    meta_entry(m, v, n, "gauge", help, (size_t)hl < sizeof(help) ? (size_t)hl : sizeof(help) - 1, unit, ul);
    return 0;
}

int ps_api_metadata(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    ps_json_t j;
    meta_ctx_t m = {0};
    m.j = &j;
    m.arena = &c.arena;
    if (ret == 0)
        ret = param_limit(&c.params, &m.limit, &c.err);
    const ps_param_t *lpm = ps_params_get(&c.params, "limit_per_metric");
    if (ret == 0 && lpm && lpm->vlen) {
        /* one entry per metric is stored (last write wins): only 0 changes the answer */
        char *end;
        long long x = strtoll(lpm->value, &end, 10);
        if (*end)
            ret = ps_err_set(&c.err, PS_EINVAL,
                             "invalid parameter \"limit_per_metric\": cannot parse \"%.32s\" to an integer", lpm->value);
        m.per_metric_zero = x == 0;
    }
    const ps_param_t *metric = ps_params_get(&c.params, "metric");
    if (metric && metric->vlen)
        m.only = metric->value;
    if (ret == 0)
        ret = ps_reader_metadata(c.reader, m.only, m.only ? strlen(m.only) : 0, on_stored_meta, &m, &c.err);
    if (ret == 0) {
        ps_json_envelope(&j, &c.out);
        ps_json_obj(&j);
        ret = ps_reader_label_values(c.reader, "__name__", 8, on_meta, &m, &c.err);
        emit_stored_until(&m, NULL, 0);
        ps_json_end(&j);
        ps_json_envelope_close(&j);
        if (ret == 0)
            send_json(&c);
    }
    return ps_qctx_finish(&c, ret);
}

/* ---- what Grafana's Prometheus data source asks for that profstore has none of ----------------- */

/* GET|POST /api/v1/query_exemplars: the query and range are checked as Prometheus does, and the
 * answer is Prometheus' for a store without exemplars: an empty list. */
int ps_api_query_exemplars(ps_task_t *t)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, t);
    const ps_param_t *q = ret == 0 ? ps_params_get(&c.params, "query") : NULL;
    if (ret == 0 && (q == NULL || q->vlen == 0))
        ret = ps_err_set(&c.err, PS_EINVAL, "invalid parameter \"query\": the query is empty");
    int64_t start, end;
    if (ret == 0)
        ret = range_params(&c, &start, &end);
    ps_pq_node_t *e = NULL;
    ps_pq_limits_t lim;
    pq_limits(&c, &lim);
    /* Prometheus answers a parse error here without the "invalid parameter" prefix */
    if (ret == 0 && (ret = ps_pq_parse(q->value, q->vlen, &lim, &c.arena, &e, &c.err)) == 0) {
        ps_pq_dispose(e);
        ps_json_t j;
        ps_json_envelope(&j, &c.out);
        ps_json_arr(&j);
        ps_json_end(&j);
        ps_json_envelope_close(&j);
        send_json(&c);
    }
    return ps_qctx_finish(&c, ret);
}

/* GET /api/v1/rules and /api/v1/alerts: profstore evaluates no rules (Prometheus' empty shapes). */
static int empty_list(h2o_req_t *req, const char *key)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_obj(&j);
    ps_json_key(&j, key);
    ps_json_arr(&j);
    ps_json_end(&j);
    ps_json_end(&j);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

int ps_api_rules(h2o_req_t *req)
{
    return empty_list(req, "groups");
}

int ps_api_alerts(h2o_req_t *req)
{
    return empty_list(req, "alerts");
}
