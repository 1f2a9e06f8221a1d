/*
 * api_pyroscope_query.c - Pyroscope's HTTP query API, as its UI, older Grafana plugins and scripts
 * use it (grafana/pyroscope pkg/querier/http.go): GET /pyroscope/render (a flamebearer profile with
 * its timeline), /pyroscope/render-diff (a "double" flamebearer), /pyroscope/label-values and
 * /pyroscope/labels (JSON arrays of strings). Errors are Pyroscope's (connect) error JSON
 * {"code":"invalid_argument","message":"..."} with the status of the error.
 *
 * The merge is /api/v1/profiles/query's (ps_query_profile_select + ps_query_profile_build +
 * ps_flamegraph_build); src/query/pyroscope.c resolves the profile type and builds the timeline;
 * src/render/flamebearer.c writes the JSON. Parameters: docs/api.md "Pyroscope HTTP query API".
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/timeutil.h"
#include "connect.h"
#include "http.h"
#include "internal.h"
#include "parser/selector.h"
#include "query/querier.h"
#include "query/query.h"
#include "render/render.h"

#define MAX_RANGE_NS (366ll * 86400 * PS_NS_PER_S)

/* Pyroscope's error answer: connect's error JSON and code (ps_connect_code_of), with profstore's
 * status of the error (ps_err_http_status: so more series than --query.max-series is 422
 * resource_exhausted, as /api/v1/profiles/query answers it, where connect-go would say 429). */
void ps_api_pyroscope_fail(ps_answer_t *a, int code, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_connect_error_json(ps_connect_code_of(code), msg, &b);
    ps_buf_putc(&b, '\n');
    ps_answer_set(a, ps_err_http_status(code), "application/json", b.data, b.len);
    ps_buf_dispose(&b);
}

/* Answers c's error (if ret != 0) in Pyroscope's shape and releases c. */
static int finish(ps_qctx_t *c, int ret)
{
    if (ret != 0)
        ps_api_pyroscope_fail(&c->t->ans, c->err.code ? c->err.code : ret, c->err.msg[0] ? c->err.msg : ps_strerror(ret));
    return ps_qctx_finish(c, 0);
}

static const char *pstr(ps_qctx_t *c, const char *name)
{
    const ps_param_t *p = ps_params_get(&c->params, name);
    return p && p->vlen ? p->value : NULL;
}

/* A Pyroscope time parameter (attime rules); dflt when absent or empty. */
static int param_attime(ps_qctx_t *c, const char *name, int64_t now, int64_t dflt, int64_t *out)
{
    const ps_param_t *p = ps_params_get(&c->params, name);
    if (p == NULL || p->vlen == 0) {
        *out = dflt;
        return 0;
    }
    if (ps_attime_parse(p->value, p->vlen, now, out, &c->err) != 0)
        return ps_err_prefix(&c->err, "invalid parameter \"%s\"", name);
    return 0;
}

/* from/until (names fn, un) with Pyroscope's forms, now-1h and now when absent; a range inside
 * (1970, 2262) of at most 366 days with until after from. In ms, as Pyroscope queries. */
static int param_range(ps_qctx_t *c, const char *fn, const char *un, int64_t now, int64_t *from_ms, int64_t *until_ms)
{
    int64_t from, until;
    char a[48], b[48];
    int ret = param_attime(c, fn, now, now - 3600 * PS_NS_PER_S, &from);
    if (ret == 0)
        ret = param_attime(c, un, now, now, &until);
    if (ret)
        return ret;
    ps_format_time_go(from, a, sizeof(a));
    ps_format_time_go(until, b, sizeof(b));
    if (from <= 0)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": %s is not after the Unix epoch", fn, a);
    if (until <= from)
        return ps_err_set(&c->err, PS_EINVAL, "invalid time range: \"%s\" (%s) must be after \"%s\" (%s)", un, b, fn, a);
    if (until - from > MAX_RANGE_NS) {
        char d[32];
        ps_format_duration(until - from, d, sizeof(d));
        return ps_err_set(&c->err, PS_EINVAL, "invalid time range: %s to %s is %s long, more than the 366d allowed", a,
                          b, d);
    }
    *from_ms = from / 1000000;
    *until_ms = until / 1000000;
    return 0;
}

/* max-nodes, then maxNodes, as Pyroscope reads them: a value > 0 sets the limit (so a nonzero
 * maxNodes wins); absent or 0 leaves Pyroscope's default, 8192. */
static int param_max_nodes(ps_qctx_t *c, int64_t *out)
{
    const char *names[] = {"max-nodes", "maxNodes"};
    *out = PS_QUERIER_MAX_NODES_DEFAULT;
    for (int i = 0; i < 2; i++) {
        const char *v = pstr(c, names[i]);
        if (v == NULL)
            continue;
        char *end;
        errno = 0;
        long long n = strtoll(v, &end, 10);
        if (*end || end == v || n < 0 || errno == ERANGE)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": \"%.32s\" is not a non-negative integer",
                              names[i], v);
        if (n > PS_QUERIER_MAX_NODES_MAX)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": %lld is over the limit of %d nodes",
                              names[i], n, PS_QUERIER_MAX_NODES_MAX);
        if (n > 0)
            *out = n;
    }
    return 0;
}

/* format: json (the default) is the only one served. */
static int param_format(ps_qctx_t *c)
{
    const char *f = pstr(c, "format");
    if (f && strcmp(f, "json") != 0)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"format\": \"%.32s\" is not supported (json)", f);
    return 0;
}

/* One side of a render: its query, parsed and resolved, and its range. */
typedef struct side {
    ps_selector_t sel;
    bool parsed;
    const char *type;
    int64_t from_ms, until_ms;
    ps_profile_sel_t ps;
    ps_series_set_t set;
} side_t;

static int side_load(ps_qctx_t *c, side_t *s, const char *qn, const char *fn, const char *un, int64_t now,
                     ps_agg_t agg)
{
    const ps_param_t *p = ps_params_get(&c->params, qn);
    int ret;
    if (p == NULL || p->vlen == 0)
        return ps_err_set(&c->err, PS_EINVAL,
                          "invalid parameter \"%s\": missing (a profile type id and a selector, e.g. "
                          "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"app\"})",
                          qn);
    if ((ret = ps_query_pyro_legacy(p->value, p->vlen, qn, &c->err)) != 0)
        return ret;
    if ((ret = ps_selector_parse(p->value, p->vlen, &c->arena, &s->sel, &c->err)) != 0)
        return ps_err_prefix(&c->err, "invalid parameter \"%s\"", qn);
    s->parsed = true;
    if ((ret = ps_query_pyro_type(c->reader, &s->sel, qn, &c->arena, &s->type, &c->err)) != 0)
        return ret;
    if ((ret = param_range(c, fn, un, now, &s->from_ms, &s->until_ms)) != 0)
        return ret;
    ps_profile_query_t q = {.sel = &s->sel, .param = qn, .ranged = true, .start = s->from_ms * 1000000,
                            .end = s->until_ms * 1000000, .max_series = c->srv->opts.max_series, .agg = agg};
    if ((ret = ps_query_profile_select(c->reader, &q, &c->arena, &s->ps, &c->err)) != 0)
        return ret;
    return ps_query_select(c->reader, &s->sel, q.start, q.end, q.max_series, &c->arena, &s->set, &c->err);
}

static void side_dispose(side_t *s)
{
    if (s->parsed)
        ps_selector_dispose(&s->sel);
    ps_profile_sel_dispose(&s->ps);
}

/* The metadata of side s's profile type (its sample type and unit). */
static void side_meta(ps_qctx_t *c, const side_t *s, ps_fb_meta_t *m)
{
    const char *parts[6];
    if (ps_profile_type_parts(s->type, &c->arena, parts) != 0)
        parts[1] = parts[2] = "";
    ps_flamebearer_meta(parts[1], parts[2], ps_query_common_label(&s->set, "pyroscope_spy"), m);
}

/* aggregation=sum|avg: the merge's and the timeline's (absent: the profile type's own,
 * ps_query_type_agg); normalize (render-diff) = rate|none, absent: none (Pyroscope's absolute
 * values). */
static int param_aggregation(ps_qctx_t *c, ps_agg_t *agg, ps_norm_t *norm)
{
    int ret = ps_agg_parse(pstr(c, "aggregation"), "aggregation", agg, &c->err);
    if (ret == 0 && norm) {
        ret = ps_norm_parse(pstr(c, "normalize"), "normalize", norm, &c->err);
        if (*norm == PS_NORM_AUTO)
            *norm = PS_NORM_NONE;
    }
    return ret;
}

/* A render's request begun: the query context and the parameters both renders share. */
static int render_begin(ps_qctx_t *c, ps_task_t *t, int64_t *max_nodes)
{
    int ret = ps_qctx_begin(c, t);
    if (ret == 0)
        ret = param_format(c);
    if (ret == 0)
        ret = param_max_nodes(c, max_nodes);
    return ret;
}

int ps_api_pyroscope_render(ps_task_t *task)
{
    ps_qctx_t c;
    side_t s = {0};
    int64_t max_nodes = 0;
    bool avg = false;
    ps_agg_t agg = PS_AGG_AUTO;
    ps_profile_t p;
    ps_flamegraph_t fg;
    ps_pyro_timeline_t tl;
    int ret = render_begin(&c, task, &max_nodes);
    if (ret == 0)
        ret = param_aggregation(&c, &agg, NULL);
    if (ret == 0)
        ret = side_load(&c, &s, "query", "from", "until", ps_time_now(), agg);
    if (ret == 0)
        avg = s.ps.aggs[0] == PS_AGG_AVG; /* the timeline aggregates as the merge did */
    if (ret == 0)
        ret = ps_query_profile_build(c.reader, &s.ps, NULL, PS_PROFILE_ONE, &c.arena, &p, &c.err);
    if (ret == 0)
        ret = ps_flamegraph_build(&p, 0, 0, max_nodes, &c.arena, &fg, &c.err);
    if (ret == 0)
        ret = ps_query_pyro_timeline(c.reader, &s.set, s.from_ms, s.until_ms, avg, &c.arena, &tl, &c.err);
    ps_pyro_group_t *groups = NULL;
    uint32_t ngroups = 0;
    const char *by = pstr(&c, "groupBy"); /* Pyroscope groups by the first groupBy only */
    if (ret == 0 && by)
        ret = ps_query_pyro_groups(c.reader, &s.set, by, s.from_ms, s.until_ms, avg, &c.arena, &groups, &ngroups,
                                   &c.err);
    if (ret == 0) {
        ps_fb_meta_t m;
        side_meta(&c, &s, &m);
        m.aggregation = ps_agg_name(s.ps.aggs[0]);
        ps_fb_timeline_t t = {tl.start_s, tl.step_s, tl.n, tl.samples};
        ps_fb_group_t *g = by ? ps_arena_alloc(&c.arena, (ngroups ? ngroups : 1) * sizeof(*g)) : NULL;
        for (uint32_t i = 0; i < ngroups; i++)
            g[i] = (ps_fb_group_t){groups[i].key, {groups[i].tl.start_s, groups[i].tl.step_s, groups[i].tl.n,
                                                   groups[i].tl.samples}};
        ps_flamebearer_json(&fg, &m, &t, g, ngroups, &c.out);
        ps_task_send(c.t, 200, "application/json", c.out.data, c.out.len);
    }
    side_dispose(&s);
    return finish(&c, ret);
}

int ps_api_pyroscope_render_diff(ps_task_t *task)
{
    ps_qctx_t c;
    side_t l = {0}, r = {0};
    int64_t max_nodes = 0, now = ps_time_now();
    ps_agg_t agg = PS_AGG_AUTO;
    ps_norm_t norm = PS_NORM_NONE;
    ps_diff_norm_t dn = {PS_NORM_NONE, 0, 0};
    ps_profile_t p;
    ps_flamegraph_t fg;
    int ret = render_begin(&c, task, &max_nodes);
    if (ret == 0)
        ret = param_aggregation(&c, &agg, &norm);
    if (ret == 0)
        ret = side_load(&c, &l, "leftQuery", "leftFrom", "leftUntil", now, agg);
    if (ret == 0)
        ret = side_load(&c, &r, "rightQuery", "rightFrom", "rightUntil", now, agg);
    if (ret == 0 && strcmp(l.type, r.type) != 0)
        ret = ps_err_set(&c.err, PS_EINVAL, "profile types must match: leftQuery selects %s, rightQuery %s", l.type,
                         r.type);
    if (ret == 0) {
        ps_query_diff_normalize(&l.ps, &r.ps, norm, &dn);
        ret = ps_query_profile_build(c.reader, &l.ps, &r.ps, PS_PROFILE_PAIR, &c.arena, &p, &c.err);
    }
    if (ret == 0)
        ret = ps_flamegraph_build(&p, 0, 1, max_nodes, &c.arena, &fg, &c.err);
    if (ret == 0) {
        ps_fb_meta_t m;
        side_meta(&c, &l, &m);
        m.aggregation = ps_agg_name(r.ps.aggs[0]);
        m.normalize = ps_norm_name(dn.used);
        ps_flamebearer_json(&fg, &m, NULL, NULL, 0, &c.out);
        ps_task_send(c.t, 200, "application/json", c.out.data, c.out.len);
    }
    side_dispose(&l);
    side_dispose(&r);
    return finish(&c, ret);
}

/* label names (label == NULL) or values, restricted by the optional query, from and until. */
static int labels(ps_task_t *t, bool values)
{
    ps_qctx_t c;
    ps_selector_t sel;
    bool parsed = false;
    ps_strlist_t l;
    const char *label = NULL, *type;
    int64_t start = INT64_MIN, end = INT64_MAX;
    int ret = ps_qctx_begin(&c, t);
    if (ret == 0 && values && (label = pstr(&c, "label")) == NULL)
        ret = ps_err_set(&c.err, PS_EINVAL, "invalid parameter \"label\": missing: the label parameter is required");
    const ps_param_t *q = ret == 0 ? ps_params_get(&c.params, "query") : NULL;
    if (q && q->vlen && (ret = ps_query_pyro_legacy(q->value, q->vlen, "query", &c.err)) == 0) {
        if ((ret = ps_selector_parse(q->value, q->vlen, &c.arena, &sel, &c.err)) != 0)
            ret = ps_err_prefix(&c.err, "invalid parameter \"query\"");
        parsed = ret == 0;
        for (uint32_t i = 0; ret == 0 && i < sel.n; i++)
            if (strcmp(sel.m[i].name, "__name__") == 0) {
                ret = ps_query_pyro_type(c.reader, &sel, "query", &c.arena, &type, &c.err);
                break;
            }
    }
    if (ret == 0 && (pstr(&c, "from") || pstr(&c, "until"))) {
        int64_t f, u;
        if ((ret = param_range(&c, "from", "until", ps_time_now(), &f, &u)) == 0) {
            start = f * 1000000;
            end = u * 1000000;
        }
    }
    if (ret == 0)
        ret = ps_query_pyro_labels(c.reader, label, parsed ? &sel : NULL, start, end, &c.arena, &l, &c.err);
    if (ret == 0) {
        ps_json_t j;
        ps_json_init(&j, &c.out);
        ps_json_arr(&j);
        for (uint32_t i = 0; i < l.n; i++)
            ps_json_cstr(&j, l.v[i]);
        ps_json_end(&j);
        ps_buf_putc(&c.out, '\n');
        ps_task_send(c.t, 200, "application/json", c.out.data, c.out.len);
    }
    if (parsed)
        ps_selector_dispose(&sel);
    return finish(&c, ret);
}

int ps_api_pyroscope_label_values(ps_task_t *t)
{
    return labels(t, true);
}

int ps_api_pyroscope_labels(ps_task_t *t)
{
    return labels(t, false);
}
