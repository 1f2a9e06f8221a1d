/*
 * api_profiles.c - profile queries: the types stored, one merged profile for a selector at a time
 * or over a range, and the diff of two selections; as pprof, flame graph JSON, folded or top.
 */
#include <stdio.h>
#include <stdlib.h>

#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "parser/selector.h"
#include "proto/pprof.h"
#include "query/query.h"
#include "render/render.h"



typedef struct types_ctx {
    ps_buf_t *b;
    ps_arena_t *a;
    int first;
} types_ctx_t;


static int on_type(void *ctx, const char *v, size_t n)
{
    types_ctx_t *t = ctx;
    const char *parts[6];
    char *id = ps_arena_strndup(t->a, v, n);
    if (ps_profile_type_parts(id, t->a, parts) != 0)
        return 0; /* a float series from remote_write, not a profile type */
    ps_buf_printf(t->b, "%s{\"id\":", t->first ? "" : ",");
    t->first = 0;
    ps_buf_json_str(t->b, v, n);
    static const char *keys[] = {"name", "sample_type", "sample_unit", "period_type", "period_unit"};
    for (int i = 0; i < 5; i++) {
        ps_buf_printf(t->b, ",\"%s\":", keys[i]);
        ps_buf_json_str(t->b, parts[i], strlen(parts[i]));
    }
    ps_buf_printf(t->b, ",\"delta\":%s}", parts[5] ? "true" : "false");
    return 0;
}

int ps_api_profile_types(h2o_req_t *req)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0) {
        types_ctx_t t = {&c.out, &c.arena, 1};
        PS_BUF_LIT(&c.out, "{\"status\":\"success\",\"data\":[");
        ret = ps_reader_label_values(c.reader, "__name__", 8, on_type, &t, &c.err);
        PS_BUF_LIT(&c.out, "]}\n");
        if (ret == 0)
            ps_http_send(req, 200, "application/json", c.out.data, c.out.len);
    }
    return ps_qctx_finish(&c, ret);
}

/* One side of a query: selector plus time or range, with a parameter prefix ("" or "base_"). */
typedef struct side {
    ps_selector_t sel;
    bool parsed;
    bool ranged;
    int64_t at, start, end;
    ps_series_set_t set;
    const char *type;
    ps_nodemap_t acc;
    ps_sum_info_t info;
} side_t;

static const ps_param_t *pget(ps_qctx_t *c, const char *prefix, const char *name)
{
    char full[64];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    return ps_params_get(&c->params, full);
}

static int on_any(void *ctx, uint64_t sid)
{
    *(int *)ctx = 1;
    return 1;
}

static int side_load(ps_qctx_t *c, side_t *s, const char *qname, const char *prefix, int64_t lookback)
{
    int ret;
    char full[64];
    ps_nodemap_init(&s->acc);
    const ps_param_t *q = ps_params_get(&c->params, qname);
    if (q == NULL || q->vlen == 0)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": missing (a selector)", qname);
    if ((ret = ps_selector_parse(q->value, q->vlen, &c->arena, &s->sel, &c->err)) != 0)
        return ps_err_prefix(&c->err, "invalid parameter \"%s\"", qname);
    s->parsed = true;
    const ps_param_t *t = pget(c, prefix, "time"), *st = pget(c, prefix, "start"), *en = pget(c, prefix, "end");
    if (t && (st || en))
        return ps_err_set(&c->err, PS_EINVAL, "give either %stime or %sstart and %send, not both", prefix, prefix, prefix);
    if ((st != NULL) != (en != NULL))
        return ps_err_set(&c->err, PS_EINVAL, "%sstart and %send go together", prefix, prefix);
    int64_t lo, hi;
    if (st) {
        s->ranged = true;
        snprintf(full, sizeof(full), "%sstart", prefix);
        if ((ret = ps_param_time(&c->params, full, 0, &s->start, &c->err)) != 0)
            return ret;
        snprintf(full, sizeof(full), "%send", prefix);
        if ((ret = ps_param_time(&c->params, full, 0, &s->end, &c->err)) != 0)
            return ret;
        if (s->end < s->start)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": end timestamp must not be before start time",
                              full);
        lo = s->start;
        hi = s->end;
    } else {
        snprintf(full, sizeof(full), "%stime", prefix);
        if ((ret = ps_param_time(&c->params, full, ps_time_now(), &s->at, &c->err)) != 0)
            return ret;
        lo = s->at - lookback + 1;
        hi = s->at;
    }
    if ((ret = ps_query_select(c->reader, &s->sel, lo, hi, c->srv->opts.max_series, &c->arena, &s->set, &c->err)) != 0)
        return ret;
    if ((ret = ps_query_single_type(&s->set, &s->type, &c->err)) != 0)
        return ret;
    if (s->set.n == 0 && s->sel.n > 0 && s->sel.m[0].op == PS_MATCH_EQ && strcmp(s->sel.m[0].name, "__name__") == 0) {
        /* nothing matched: a profile type never stored is a mistake worth saying */
        const char *parts[6];
        if (ps_profile_type_parts(s->sel.m[0].value, &c->arena, parts) != 0)
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"%s\": \"%s\" is not a profile type "
                              "(name:sample_type:sample_unit:period_type:period_unit[:delta]; GET /api/v1/profiles/types "
                              "lists them)",
                              qname, s->sel.m[0].value);
        int found = 0;
        ret = ps_reader_postings(c->reader, "__name__", 8, s->sel.m[0].value, s->sel.m[0].vlen, on_any, &found,
                                 &c->err);
        if (ret < 0)
            return ret;
        if (!found)
            return ps_err_set(&c->err, PS_ENOTFOUND,
                              "invalid parameter \"%s\": unknown profile type \"%s\" (GET /api/v1/profiles/types lists "
                              "the stored ones)",
                              qname, s->sel.m[0].value);
    }
    if (s->ranged)
        return ps_query_merge_range(c->reader, &s->set, s->start, s->end, &s->acc, &s->info, &c->err);
    return ps_query_merge_at(c->reader, &s->set, s->at, lookback, &s->acc, &s->info, &c->err);
}

static void side_dispose(side_t *s)
{
    if (s->parsed)
        ps_selector_dispose(&s->sel);
    ps_nodemap_dispose(&s->acc);
}

enum { F_PPROF, F_FLAMEGRAPH, F_FOLDED, F_TOP };

static int parse_format(ps_qctx_t *c, int *fmt, int64_t *max_nodes, uint32_t *limit)
{
    const ps_param_t *f = ps_params_get(&c->params, "format");
    *fmt = F_PPROF;
    if (f && f->vlen) {
        if (strcmp(f->value, "pprof") == 0)
            *fmt = F_PPROF;
        else if (strcmp(f->value, "flamegraph") == 0)
            *fmt = F_FLAMEGRAPH;
        else if (strcmp(f->value, "folded") == 0)
            *fmt = F_FOLDED;
        else if (strcmp(f->value, "top") == 0)
            *fmt = F_TOP;
        else
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"format\": unknown format \"%.32s\" (pprof, flamegraph, folded, top)",
                              f->value);
    }
    const ps_param_t *m = ps_params_get(&c->params, "max_nodes");
    *max_nodes = 0;
    if (m && m->vlen) {
        char *end;
        long long v = strtoll(m->value, &end, 10);
        if (*end || v < 0)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"max_nodes\": \"%.32s\" is not a non-negative integer",
                              m->value);
        *max_nodes = v;
    }
    const ps_param_t *l = ps_params_get(&c->params, "limit");
    *limit = 0;
    if (l && l->vlen) {
        char *end;
        long long v = strtoll(l->value, &end, 10);
        if (*end || v < 0 || v > UINT32_MAX)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"limit\": \"%.32s\" is not a non-negative integer",
                              l->value);
        *limit = (uint32_t)v;
    }
    return 0;
}

static int respond(ps_qctx_t *c, const ps_profile_t *p, int fmt, int64_t max_nodes, uint32_t limit, bool diff)
{
    int ret = 0;
    if (fmt == F_PPROF) {
        if ((ret = ps_pprof_encode(p, 1, &c->out, &c->err)) != 0)
            return ret;
        h2o_add_header(&c->req->pool, &c->req->res.headers, H2O_TOKEN_CONTENT_DISPOSITION, NULL,
                       H2O_STRLIT("attachment; filename=\"profile.pb.gz\""));
        ps_http_send(c->req, 200, "application/octet-stream", c->out.data, c->out.len);
    } else if (fmt == F_FLAMEGRAPH) {
        ps_flamegraph_t fg;
        if ((ret = ps_flamegraph_build(p, 0, diff ? 1 : 0, max_nodes, &c->arena, &fg, &c->err)) != 0)
            return ret;
        ps_flamegraph_json(&fg, &c->out);
        ps_http_send(c->req, 200, "application/json", c->out.data, c->out.len);
    } else if (fmt == F_FOLDED) {
        ps_render_folded(p, 0, &c->out);
        ps_http_send(c->req, 200, "text/plain; charset=utf-8", c->out.data, c->out.len);
    } else {
        ps_render_top(p, 0, limit, &c->out);
        ps_http_send(c->req, 200, "application/json", c->out.data, c->out.len);
    }
    return 0;
}

int ps_api_profile_query(h2o_req_t *req)
{
    ps_qctx_t c;
    side_t s = {0};
    int fmt;
    int64_t max_nodes, lookback;
    uint32_t limit;
    ps_profile_t p;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0)
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    if (ret == 0)
        ret = ps_param_duration(&c.params, "lookback", 5 * 60 * PS_NS_PER_S, &lookback, &c.err);
    if (ret == 0)
        ret = side_load(&c, &s, "query", "", lookback);
    if (ret == 0) {
        const char *type = s.type;
        if (type == NULL) /* nothing matched: an empty profile of the selector's own type, if it names one */
            type = s.sel.n && strcmp(s.sel.m[0].name, "__name__") == 0 && s.sel.m[0].op == PS_MATCH_EQ
                       ? s.sel.m[0].value
                       : "unknown:unknown:unknown:unknown:unknown";
        ret = ps_query_profile(c.reader, type, &s.acc, NULL, PS_PROFILE_ONE, &s.info, &c.arena, &p, &c.err);
        if (ret == PS_EINVAL && s.type == NULL)
            ret = ps_query_profile(c.reader, "unknown:unknown:unknown:unknown:unknown", &s.acc, NULL, PS_PROFILE_ONE,
                                   &s.info, &c.arena, &p, &c.err);
    }
    if (ret == 0)
        ret = respond(&c, &p, fmt, max_nodes, limit, false);
    side_dispose(&s);
    return ps_qctx_finish(&c, ret);
}

int ps_api_profile_diff(h2o_req_t *req)
{
    ps_qctx_t c;
    side_t base = {0}, cmp = {0};
    int fmt;
    int64_t max_nodes, lookback;
    uint32_t limit;
    ps_profile_t p;
    int ret = ps_qctx_begin(&c, req);
    if (ret == 0)
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    if (ret == 0)
        ret = ps_param_duration(&c.params, "lookback", 5 * 60 * PS_NS_PER_S, &lookback, &c.err);
    if (ret == 0)
        ret = side_load(&c, &base, "base", "base_", lookback);
    if (ret == 0)
        ret = side_load(&c, &cmp, "compare", "compare_", lookback);
    if (ret == 0 && base.type && cmp.type && strcmp(base.type, cmp.type) != 0)
        ret = ps_err_set(&c.err, PS_EINVAL, "base and compare select different profile types (%s and %s)", base.type,
                         cmp.type);
    if (ret == 0) {
        const char *type = base.type ? base.type : cmp.type ? cmp.type : "unknown:unknown:unknown:unknown:unknown";
        ps_sum_info_t info = cmp.info.profiles ? cmp.info : base.info;
        int mode = fmt == F_FLAMEGRAPH ? PS_PROFILE_PAIR : PS_PROFILE_SUB;
        ret = ps_query_profile(c.reader, type, &base.acc, &cmp.acc, mode, &info, &c.arena, &p, &c.err);
    }
    if (ret == 0)
        ret = respond(&c, &p, fmt, max_nodes, limit, true);
    side_dispose(&base);
    side_dispose(&cmp);
    return ps_qctx_finish(&c, ret);
}
