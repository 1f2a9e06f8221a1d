/*
 * api_profiles.c - profile queries: the types stored, one merged profile for a selector at a time
 * or over a range, and the diff of two selections; as pprof, flame graph JSON, folded or top.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "core/json.h"
#include "core/sat.h"
#include "core/timeutil.h"
#include "task.h"
#include "internal.h"
#include "parser/selector.h"
#include "proto/pprof.h"
#include "query/query.h"
#include "render/render.h"



typedef struct types_ctx {
    ps_json_t *j;
    ps_arena_t *a;
} types_ctx_t;

static int on_type(void *ctx, const char *v, size_t n)
{
    types_ctx_t *t = ctx;
    const char *parts[6];
    char *id = ps_arena_strndup(t->a, v, n);
    if (ps_profile_type_parts(id, t->a, parts) != 0)
        return 0; /* a float series from remote_write, not a profile type */
    static const char *keys[] = {"name", "sample_type", "sample_unit", "period_type", "period_unit"};
    ps_json_obj(t->j);
    ps_json_key(t->j, "id");
    ps_json_str(t->j, v, n);
    for (int i = 0; i < 5; i++) {
        ps_json_key(t->j, keys[i]);
        ps_json_cstr(t->j, parts[i]);
    }
    ps_json_key(t->j, "delta");
    ps_json_bool(t->j, parts[5] != NULL);
    ps_json_key(t->j, "aggregation");
    ps_json_cstr(t->j, ps_agg_name(ps_query_type_agg(id)));
    ps_json_end(t->j);
    return 0;
}

int ps_api_profile_types(ps_task_t *task)
{
    ps_qctx_t c;
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0) {
        ps_json_t j;
        types_ctx_t t = {&j, &c.arena};
        ps_json_envelope(&j, &c.out);
        ps_json_arr(&j);
        ret = ps_reader_label_values(c.reader, "__name__", 8, on_type, &t, &c.err);
        ps_json_end(&j);
        ps_json_envelope_close(&j);
        if (ret == 0)
            ps_task_send(task, 200, "application/json", c.out.data, c.out.len);
    }
    return ps_qctx_finish(&c, ret);
}

/* One side of a query: selector plus time or range, with a parameter prefix ("" or "base_"). */
typedef struct side {
    ps_selector_t sel;
    bool parsed;
    ps_profile_sel_t ps;
} side_t;

static const ps_param_t *pget(ps_qctx_t *c, const char *prefix, const char *name)
{
    char full[64];
    snprintf(full, sizeof(full), "%s%s", prefix, name);
    return ps_params_get(&c->params, full);
}

/* Parameters of one side into q (the selector into s->sel). */
static int side_params(ps_qctx_t *c, side_t *s, const char *qname, const char *prefix, int64_t lookback,
                       bool all_types, ps_profile_query_t *q)
{
    int ret;
    char full[64];
    const ps_param_t *p = ps_params_get(&c->params, qname);
    if (p == NULL || p->vlen == 0)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": missing (a selector)", qname);
    if ((ret = ps_selector_parse(p->value, p->vlen, &c->arena, &s->sel, &c->err)) != 0)
        return ps_err_prefix(&c->err, "invalid parameter \"%s\"", qname);
    s->parsed = true;
    *q = (ps_profile_query_t){.sel = &s->sel, .param = qname, .lookback = lookback, .all_types = all_types,
                              .max_series = c->srv->opts.max_series};
    const ps_param_t *t = pget(c, prefix, "time"), *st = pget(c, prefix, "start"), *en = pget(c, prefix, "end");
    if (t && (st || en))
        return ps_err_set(&c->err, PS_EINVAL, "give either %stime or %sstart and %send, not both", prefix, prefix, prefix);
    if ((st != NULL) != (en != NULL))
        return ps_err_set(&c->err, PS_EINVAL, "%sstart and %send go together", prefix, prefix);
    int64_t now = ps_time_now();
    if (st) {
        q->ranged = true;
        snprintf(full, sizeof(full), "%sstart", prefix);
        if ((ret = ps_param_time(&c->params, full, now, 0, &q->start, &c->err)) != 0)
            return ret;
        snprintf(full, sizeof(full), "%send", prefix);
        if ((ret = ps_param_time(&c->params, full, now, 0, &q->end, &c->err)) != 0)
            return ret;
        if (q->end < q->start)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": end timestamp must not be before start time",
                              full);
        return 0;
    }
    if (t == NULL || t->vlen == 0) { /* no time at all: every profile of the last lookback, [now - lookback, now] */
        q->ranged = true;
        q->start = lookback > 0 ? now - lookback : now; /* now >= 0: no overflow */
        q->end = now;
        return 0;
    }
    snprintf(full, sizeof(full), "%stime", prefix);
    return ps_param_time(&c->params, full, now, now, &q->at, &c->err);
}

static int side_load(ps_qctx_t *c, side_t *s, const char *qname, const char *prefix, int64_t lookback, bool all_types,
                     ps_agg_t agg)
{
    ps_profile_query_t q;
    int ret = side_params(c, s, qname, prefix, lookback, all_types, &q);
    q.agg = agg;
    q.span_labels = true; /* one profile: its samples with their span labels */
    if (ret == 0)
        ret = ps_query_profile_select(c->reader, &q, &c->arena, &s->ps, &c->err);
    return ret;
}

/* aggregation=sum|avg (absent: each type's own) and, for a diff, normalize=rate|none. */
static int param_agg(ps_qctx_t *c, ps_agg_t *agg, ps_norm_t *norm)
{
    const ps_param_t *a = ps_params_get(&c->params, "aggregation");
    int ret = ps_agg_parse(a ? a->value : NULL, "aggregation", agg, &c->err);
    if (ret == 0 && norm) {
        const ps_param_t *n = ps_params_get(&c->params, "normalize");
        ret = ps_norm_parse(n ? n->value : NULL, "normalize", norm, &c->err);
    }
    return ret;
}

/* The aggregation a selection's answer reports: its types' one, or "mixed" (pprof's comments then
 * say which type is which). */
static const char *sel_agg_name(const ps_profile_sel_t *s)
{
    for (uint32_t k = 1; k < s->ntypes; k++)
        if (s->aggs[k] != s->aggs[0])
            return "mixed";
    return ps_agg_name(s->ntypes ? s->aggs[0] : PS_AGG_SUM);
}

static void side_dispose(side_t *s)
{
    if (s->parsed)
        ps_selector_dispose(&s->sel);
    ps_profile_sel_dispose(&s->ps);
}

/* sample_types=all: every sample type of the profile family. */
static int param_sample_types(ps_qctx_t *c, bool *all)
{
    const ps_param_t *p = ps_params_get(&c->params, "sample_types");
    *all = false;
    if (p == NULL || p->vlen == 0 || strcmp(p->value, "one") == 0)
        return 0;
    if (strcmp(p->value, "all") == 0) {
        *all = true;
        return 0;
    }
    return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"sample_types\": \"%.32s\" is neither \"all\" nor \"one\"",
                      p->value);
}

enum { F_PPROF, F_FLAMEGRAPH, F_FOLDED, F_TOP, F_LIST };

/* What is asked of the merged profile besides its format: pprof's filters (focus, ignore, hide,
 * show, show_from), for format=list the functions to list (list=<regexp>), and for format=flamegraph
 * of one selection top=<limit>: the top table of the same merge inside the answer (its "top"), what
 * format=top&limit=<limit> answers, so that the UI's panel merges once for both. */
typedef struct filt {
    ps_focus_t focus;
    ps_regex_t *list;
    int64_t top; /* -1: no "top" */
} filt_t;

static int param_filters(ps_qctx_t *c, int fmt, bool diff, filt_t *f)
{
    int ret;
    const ps_param_t *t = ps_params_get(&c->params, "top");
    f->top = -1;
    if (t != NULL && t->vlen > 0) {
        char *end;
        errno = 0;
        long long v = strtoll(t->value, &end, 10);
        if (*end || v < 0 || v > UINT32_MAX || errno == ERANGE)
            return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"top\": \"%.32s\" is not a non-negative integer",
                              t->value);
        if (fmt != F_FLAMEGRAPH || diff)
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"top\": goes with format=flamegraph of one selection only (the top "
                              "table's rows inside the flame graph answer; a diff asks format=top itself)");
        f->top = v;
    }
    for (int k = 0; k < PS_FOCUS_N; k++) {
        const ps_param_t *v = ps_params_get(&c->params, ps_focus_names[k]);
        if (v != NULL && (ret = ps_focus_set(&f->focus, k, v->value, v->vlen, &c->err)) != 0)
            return ret;
    }
    const ps_param_t *l = ps_params_get(&c->params, "list");
    if (fmt != F_LIST)
        return l != NULL && l->vlen
                   ? ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"list\": goes with format=list only")
                   : 0;
    if (l == NULL || l->vlen == 0)
        return ps_err_set(&c->err, PS_EINVAL,
                          "invalid parameter \"list\": missing (format=list lists the functions whose name this "
                          "regexp matches, as go tool pprof -list)");
    ps_focus_t one = {0};
    if ((ret = ps_focus_set(&one, 0, l->value, l->vlen, &c->err)) != 0) {
        /* the message names "focus": say "list" */
        const char *rest = strstr(c->err.msg, ": error parsing");
        char msg[sizeof(c->err.msg)];
        snprintf(msg, sizeof(msg), "invalid parameter \"list\"%s", rest ? rest : "");
        return ps_err_set(&c->err, PS_EINVAL, "%s", msg);
    }
    f->list = one.re[0];
    return 0;
}

static void filt_dispose(filt_t *f)
{
    ps_focus_dispose(&f->focus);
    ps_regex_free(f->list);
}

/* format=list: {"total":N,"functions":[{"name","file","flat","cum","lines":[{"line","flat","cum"}]}]} */
static int respond_list(ps_qctx_t *c, const ps_profile_t *p, const filt_t *f, int64_t whole)
{
    ps_list_t l;
    ps_json_t j;
    int ret = ps_query_list(p, 0, f->list, &c->arena, &l, &c->err);
    if (ret != 0)
        return ret;
    ps_json_init(&j, &c->out);
    ps_json_obj(&j);
    ps_json_key(&j, "total");
    ps_json_int(&j, whole >= 0 ? whole : l.total);
    ps_json_key(&j, "functions");
    ps_json_arr(&j);
    for (uint32_t i = 0; i < l.n; i++) {
        const ps_list_fn_t *e = &l.fns[i];
        ps_json_obj(&j);
        ps_json_key(&j, "name");
        ps_json_str(&j, e->name.ptr, e->name.len);
        ps_json_key(&j, "file");
        ps_json_str(&j, e->file.ptr, e->file.len);
        ps_json_key(&j, "flat");
        ps_json_int(&j, e->flat);
        ps_json_key(&j, "cum");
        ps_json_int(&j, e->cum);
        ps_json_key(&j, "lines");
        ps_json_arr(&j);
        for (uint32_t k = 0; k < e->nlines; k++) {
            ps_json_obj(&j);
            ps_json_key(&j, "line");
            ps_json_int(&j, e->lines[k].line);
            ps_json_key(&j, "flat");
            ps_json_int(&j, e->lines[k].flat);
            ps_json_key(&j, "cum");
            ps_json_int(&j, e->lines[k].cum);
            ps_json_end(&j);
        }
        ps_json_end(&j);
        ps_json_end(&j);
    }
    ps_json_end(&j);
    ps_json_end(&j);
    ps_task_send(c->t, 200, "application/json", c->out.data, c->out.len);
    return 0;
}

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
        else if (strcmp(f->value, "list") == 0)
            *fmt = F_LIST;
        else
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"format\": unknown format \"%.32s\" (pprof, flamegraph, folded, top, list)",
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

static const char *format_names[] = {"pprof", "flamegraph", "folded", "top", "list"};

static int respond(ps_qctx_t *c, ps_profile_t *p, int fmt, int64_t max_nodes, uint32_t limit, bool diff,
                   int64_t base_total, const ps_render_note_t *note, const filt_t *filt)
{
    int ret = 0;
    if (ps_focus_any(&filt->focus)) {
        /* pprof's percentages (and -list's Total) stay those of the whole profile */
        if (!diff && p->ntypes > 0) {
            base_total = 0;
            for (uint32_t i = 0; i < p->nsamples; i++)
                base_total = ps_sat_add(base_total, p->samples[i].values[0] < 0 ? -p->samples[i].values[0]
                                                                                : p->samples[i].values[0]);
        }
        if ((ret = ps_focus_apply(&filt->focus, p, &c->arena, &c->err)) != 0)
            return ret;
    }
    ps_task_add_header(c->t, "x-profstore-aggregation", note->aggregation, strlen(note->aggregation));
    if (note->normalize) {
        ps_task_add_header(c->t, "x-profstore-normalize", note->normalize, strlen(note->normalize));
        ps_query_profile_comment(p, &c->arena,
                                 "profstore: normalize=%s: base profiled %.3f s, compare profiled %.3f s%s",
                                 note->normalize, note->base_seconds, note->compare_seconds,
                                 strcmp(note->normalize, "rate") == 0
                                     ? " (the base's summed values scaled to the compare side's profiled time)"
                                     : "");
    }
    if (fmt != F_PPROF && p->ntypes > (diff && fmt == F_FLAMEGRAPH ? 2u : 1u))
        return ps_err_set(&c->err, PS_EINVAL,
                          "format=%s shows one sample type and this profile has %u: ask for format=pprof, or for one "
                          "profile type",
                          format_names[fmt], p->ntypes);
    if (fmt == F_LIST) {
        return respond_list(c, p, filt, base_total);
    } else if (fmt == F_PPROF) {
        if ((ret = ps_pprof_encode(p, 1, &c->out, &c->err)) != 0)
            return ret;
        static const char cd[] = "attachment; filename=\"profile.pb.gz\"";
        ps_task_add_header(c->t, "content-disposition", cd, sizeof(cd) - 1);
        ps_task_send(c->t, 200, "application/octet-stream", c->out.data, c->out.len);
    } else if (fmt == F_FLAMEGRAPH) {
        ps_flamegraph_t fg;
        if ((ret = ps_flamegraph_build(p, 0, diff ? 1 : 0, max_nodes, &c->arena, &fg, &c->err)) != 0)
            return ret;
        ps_flamegraph_json_note(&fg, note, &c->out);
        if (filt->top >= 0) { /* the object's last '}' becomes ,"top":{...}} */
            c->out.len--;
            ps_buf_append(&c->out, ",\"top\":", 7);
            ps_render_top_note(p, 0, (uint32_t)filt->top, ps_focus_any(&filt->focus) ? base_total : 0, note, &c->out);
            if ((ret = ps_budget_check_now(&c->err)) != 0)
                return ret;
            ps_buf_putc(&c->out, '}');
        }
        ps_task_send(c->t, 200, "application/json", c->out.data, c->out.len);
    } else if (fmt == F_FOLDED) {
        ps_render_folded(p, 0, &c->out);
        if ((ret = ps_budget_check_now(&c->err)) != 0) /* stopped there: not an empty answer */
            return ret;
        ps_task_send(c->t, 200, "text/plain; charset=utf-8", c->out.data, c->out.len);
    } else {
        ps_render_top_note(p, 0, limit, diff || ps_focus_any(&filt->focus) ? base_total : 0, note, &c->out);
        if ((ret = ps_budget_check_now(&c->err)) != 0)
            return ret;
        ps_task_send(c->t, 200, "application/json", c->out.data, c->out.len);
    }
    return 0;
}

/*
 * Answers c's error (if ret != 0) and releases c. A request for pprof (format absent or pprof)
 * gets it as net/http/pprof answers one: text/plain, the message and a newline, and
 * X-Go-Pprof: 1, the two things `go tool pprof` wants before it prints the body after the status
 * ("server response: 400 Bad Request - <message>"; without them it prints only the status). A
 * client whose Accept names application/json (the UI) gets Prometheus' error JSON, as every other
 * format does.
 */
static int finish(ps_qctx_t *c, int ret)
{
    const ps_param_t *f = ret != 0 ? ps_params_get(&c->params, "format") : NULL;
    if (ret == 0 || (f != NULL && f->vlen > 0 && strcmp(f->value, "pprof") != 0))
        return ps_qctx_finish(c, ret);
    size_t acc_len;
    const char *acc = ps_task_header(c->t, "accept", &acc_len);
    if (acc != NULL && memmem(acc, acc_len, "application/json", 16) != NULL)
        return ps_qctx_finish(c, ret);
    int code = c->err.code ? c->err.code : ret;
    const char *msg = c->err.msg[0] ? c->err.msg : ps_strerror(code);
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_append(&b, msg, strlen(msg));
    ps_buf_putc(&b, '\n');
    ps_task_add_header(c->t, "x-go-pprof", "1", 1);
    ps_task_send(c->t, ps_err_http_status(code), "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
    return ps_qctx_finish(c, 0);
}

/* total_min / total_max: a non-negative integer bound of a profile's total (absent: none) */
static int param_total(ps_qctx_t *c, const char *name, int64_t dflt, int64_t *out)
{
    const ps_param_t *p = ps_params_get(&c->params, name);
    *out = dflt;
    if (p == NULL || p->vlen == 0)
        return 0;
    char *end;
    errno = 0;
    long long v = strtoll(p->value, &end, 10);
    if (*end || v < 0 || errno == ERANGE)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"%s\": \"%.32s\" is not a non-negative integer",
                          name, p->value);
    *out = v;
    return 0;
}

/* The profiles most a total filter looks at: those of /api/v1/profiles/ids. */
#define IDS_MAX 10000

static int cmp_ref(const void *a, const void *b)
{
    const ps_profile_ref_t *x = a, *y = b;
    if (x->sid != y->sid)
        return x->sid < y->sid ? -1 : 1;
    return x->ts < y->ts ? -1 : x->ts > y->ts;
}

/*
 * The query side of /api/v1/profiles/query, with total_min / total_max (the UI heatmap's cell: the
 * profiles of the range whose total is in [total_min, total_max], each one summed): the range's
 * profiles as /api/v1/profiles/ids lists them (at most IDS_MAX), those in the bounds merged by ref.
 */
static int side_load_query(ps_qctx_t *c, side_t *s, int64_t lookback, bool all_types, ps_agg_t agg)
{
    ps_profile_query_t q;
    int64_t tmin, tmax;
    int ret = side_params(c, s, "query", "", lookback, all_types, &q);
    q.agg = agg;
    q.span_labels = true;
    if (ret == 0)
        ret = param_total(c, "total_min", -1, &tmin);
    if (ret == 0)
        ret = param_total(c, "total_max", -1, &tmax);
    if (ret == 0 && (tmin >= 0 || tmax >= 0)) {
        ps_series_set_t set;
        ps_profile_entry_t *e = NULL;
        uint32_t n = 0, k = 0;
        if (!q.ranged)
            return ps_err_set(&c->err, PS_EINVAL, "total_min and total_max need start and end (a range), not time");
        if (all_types)
            return ps_err_set(&c->err, PS_EINVAL, "total_min and total_max select profiles of one sample type: not with "
                                                  "sample_types=all");
        ret = ps_query_profile_list(c->reader, &s->sel, q.start, q.end, c->srv->opts.max_series, IDS_MAX, &c->arena, &set,
                                    &e, &n, &c->err);
        if (ret)
            return ret;
        ps_profile_ref_t *refs = ps_arena_alloc(&c->arena, ((size_t)n + 1) * sizeof(*refs));
        for (uint32_t i = 0; i < n; i++)
            if ((tmin < 0 || e[i].total >= tmin) && (tmax < 0 || e[i].total <= tmax))
                refs[k++] = e[i].ref;
        if (k > 1)
            qsort(refs, k, sizeof(*refs), cmp_ref);
        if (k == 0) /* none in the bounds: a ref no series has (ids stop at 2^58), so nothing is merged */
            refs[k++] = (ps_profile_ref_t){.sid = UINT64_MAX, .ts = 0};
        q.only = refs;
        q.nonly = k;
    }
    if (ret == 0)
        ret = ps_query_profile_select(c->reader, &q, &c->arena, &s->ps, &c->err);
    return ret;
}

int ps_api_profile_query(ps_task_t *task)
{
    ps_qctx_t c;
    side_t s = {0};
    int fmt;
    int64_t max_nodes, lookback;
    uint32_t limit;
    bool all;
    ps_agg_t agg;
    ps_profile_t p;
    filt_t filt = {0};
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    if (ret == 0)
        ret = param_filters(&c, fmt, false, &filt);
    if (ret == 0)
        ret = param_sample_types(&c, &all);
    if (ret == 0)
        ret = param_agg(&c, &agg, NULL);
    if (ret == 0)
        ret = ps_param_duration(&c.params, "lookback", 5 * 60 * PS_NS_PER_S, &lookback, &c.err);
    if (ret == 0)
        ret = side_load_query(&c, &s, lookback, all, agg);
    if (ret == 0)
        ret = ps_query_profile_build(c.reader, &s.ps, NULL, PS_PROFILE_ONE, &c.arena, &p, &c.err);
    if (ret == 0) {
        ps_render_note_t note = {.aggregation = sel_agg_name(&s.ps)};
        ret = respond(&c, &p, fmt, max_nodes, limit, false, -1, &note, &filt);
    }
    side_dispose(&s);
    filt_dispose(&filt);
    return finish(&c, ret);
}

int ps_api_profile_diff(ps_task_t *task)
{
    ps_qctx_t c;
    side_t base = {0}, cmp = {0};
    int fmt;
    int64_t max_nodes, lookback;
    uint32_t limit;
    bool all;
    ps_agg_t agg;
    ps_norm_t norm;
    ps_diff_norm_t dn;
    ps_profile_t p;
    filt_t filt = {0};
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    if (ret == 0)
        ret = param_filters(&c, fmt, true, &filt);
    if (ret == 0)
        ret = param_sample_types(&c, &all);
    if (ret == 0)
        ret = param_agg(&c, &agg, &norm);
    if (ret == 0)
        ret = ps_param_duration(&c.params, "lookback", 5 * 60 * PS_NS_PER_S, &lookback, &c.err);
    if (ret == 0)
        ret = side_load(&c, &base, "base", "base_", lookback, all, agg);
    if (ret == 0)
        ret = side_load(&c, &cmp, "compare", "compare_", lookback, all, agg);
    if (ret == 0) {
        ps_query_diff_normalize(&base.ps, &cmp.ps, norm, &dn);
        ret = ps_query_profile_build(c.reader, &base.ps, &cmp.ps, fmt == F_FLAMEGRAPH ? PS_PROFILE_PAIR : PS_PROFILE_SUB,
                                     &c.arena, &p, &c.err);
    }
    if (ret == 0) {
        ps_render_note_t note = {sel_agg_name(cmp.ps.nseries || !base.ps.nseries ? &cmp.ps : &base.ps),
                                 ps_norm_name(dn.used), dn.base_s, dn.compare_s};
        ret = respond(&c, &p, fmt, max_nodes, limit, true, base.ps.totals[0], &note, &filt);
    }
    side_dispose(&base);
    side_dispose(&cmp);
    filt_dispose(&filt);
    return finish(&c, ret);
}

/*
 * GET /api/v1/profiles/adhoc?id=<id>[&compare=<id>][&type=<sample type>]&format=...: an ad hoc
 * profile (adhocprofiles.v1, api_adhoc.c) in the formats of /api/v1/profiles/query (pprof: every
 * sample type; the others: type's, absent the first), or with compare the diff compare - id as
 * /api/v1/profiles/diff answers it (aggregation "sum", normalize "none"). What the UI's shared
 * view and `go tool pprof` read.
 */
int ps_api_profile_adhoc(ps_task_t *task)
{
    ps_qctx_t c;
    int fmt;
    int64_t max_nodes;
    uint32_t limit;
    ps_profile_t p, one;
    ps_store_adhoc_t st;
    filt_t filt = {0};
    int ret = ps_qctx_begin(&c, task);
    const ps_param_t *id = NULL, *cmp = NULL, *type = NULL;
    if (ret == 0) {
        id = ps_params_get(&c.params, "id");
        cmp = ps_params_get(&c.params, "compare");
        type = ps_params_get(&c.params, "type");
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    }
    if (ret == 0)
        ret = param_filters(&c, fmt, cmp != NULL && cmp->vlen > 0, &filt);
    const char *tname = type && type->vlen ? type->value : NULL;
    if (ret == 0 && (id == NULL || id->vlen == 0))
        ret = ps_err_set(&c.err, PS_EINVAL, "invalid parameter \"id\": missing (an ad hoc profile's id)");
    if (ret == 0 && cmp != NULL && cmp->vlen > 0) {
        const char **common;
        size_t nc;
        int64_t base_total = -1;
        ret = ps_adhoc_diff_pair(c.srv, id->value, cmp->value, tname, &c.arena, &p, &common, &nc, &c.err);
        if (ret == 0 && fmt != F_FLAMEGRAPH)
            ps_adhoc_pair_sub(&p, &base_total);
        if (ret == 0) {
            ps_render_note_t note = {.aggregation = "sum", .normalize = "none"};
            ret = respond(&c, &p, fmt, max_nodes, limit, true, base_total, &note, &filt);
        }
    } else if (ret == 0) {
        ret = ps_adhoc_load(c.srv, id->value, &c.arena, &st, &p, NULL, NULL, &c.err);
        int vi = ret == 0 ? ps_adhoc_type_index(&p, tname) : 0;
        if (ret == 0 && vi < 0)
            ret = ps_err_set(&c.err, PS_EINVAL, "invalid parameter \"type\": profile %s has no sample type \"%.64s\"",
                             id->value, tname);
        if (ret == 0) {
            if (fmt != F_PPROF)
                ps_adhoc_select(&p, (uint32_t)vi, &c.arena, &one);
            ps_render_note_t note = {.aggregation = "sum"};
            ret = respond(&c, fmt == F_PPROF ? &p : &one, fmt, max_nodes, limit, false, -1, &note, &filt);
        }
    }
    filt_dispose(&filt);
    return finish(&c, ret);
}

/* GET /api/v1/profile?id=<profile id>: one stored profile, in the formats of profiles/query. */
int ps_api_profile_by_id(ps_task_t *task)
{
    ps_qctx_t c;
    int fmt;
    int64_t max_nodes;
    uint32_t limit, n = 0;
    ps_profile_ref_t ref;
    ps_profile_sel_t ps = {0};
    ps_profile_t p;
    filt_t filt = {0};
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = parse_format(&c, &fmt, &max_nodes, &limit);
    if (ret == 0)
        ret = param_filters(&c, fmt, false, &filt);
    if (ret == 0) {
        const ps_param_t *id = ps_params_get(&c.params, "id");
        if (id == NULL || id->vlen == 0)
            ret = ps_err_set(&c.err, PS_EINVAL,
                             "invalid parameter \"id\": missing (a profile id, as /api/v1/profiles/ids and the "
                             "querier's exemplars give them)");
        else
            ret = ps_query_profile_id_parse(c.reader, id->value, id->vlen, "invalid parameter \"id\"", &ref, 1, &n,
                                            &c.err);
    }
    if (ret == 0)
        ret = ps_query_profile_ref(c.reader, &ref, &c.arena, &ps, NULL, &c.err);
    if (ret == 0)
        ret = ps_query_profile_build(c.reader, &ps, NULL, PS_PROFILE_ONE, &c.arena, &p, &c.err);
    if (ret == 0) {
        char idt[PS_PROFILE_ID_LEN + 1];
        ps_query_profile_id(c.reader, ref.sid, ref.ts, idt);
        ps_task_add_header(c.t, "x-profstore-profile-id", idt, strlen(idt));
        ps_render_note_t note = {.aggregation = sel_agg_name(&ps)};
        ret = respond(&c, &p, fmt, max_nodes, limit, false, -1, &note, &filt);
    }
    ps_profile_sel_dispose(&ps);
    filt_dispose(&filt);
    return finish(&c, ret);
}


/* GET /api/v1/profiles/ids?query=<selector>&start=&end=: the stored profiles of the selected
 * series in [start, end], oldest first: [{id, time (unix s, 9 decimals), total, labels}]. */
int ps_api_profile_ids(ps_task_t *task)
{
    ps_qctx_t c;
    side_t s = {0};
    ps_profile_query_t q;
    ps_series_set_t set;
    ps_profile_entry_t *e = NULL;
    uint32_t n = 0;
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = side_params(&c, &s, "query", "", 5 * 60 * PS_NS_PER_S, false, &q);
    if (ret == 0 && !q.ranged)
        ret = ps_err_set(&c.err, PS_EINVAL, "give start and end (the range whose profiles to list), not time");
    if (ret == 0)
        ret = ps_query_profile_list(c.reader, &s.sel, q.start, q.end, c.srv->opts.max_series, IDS_MAX, &c.arena, &set,
                                    &e, &n, &c.err);
    if (ret == 0) {
        ps_json_t j;
        ps_json_envelope(&j, &c.out);
        ps_json_arr(&j);
        for (uint32_t i = 0; i < n; i++) {
            char id[PS_PROFILE_ID_LEN + 1], t[48];
            ps_query_profile_id(c.reader, e[i].ref.sid, e[i].ref.ts, id);
            int64_t ts = e[i].ref.ts, sec = ts / PS_NS_PER_S - (ts % PS_NS_PER_S < 0);
            snprintf(t, sizeof(t), "%lld.%09lld", (long long)sec, (long long)(ts - sec * PS_NS_PER_S));
            ps_json_obj(&j);
            ps_json_key(&j, "id");
            ps_json_cstr(&j, id);
            ps_json_key(&j, "time");
            ps_json_raw(&j, t, strlen(t));
            ps_json_key(&j, "total");
            ps_json_int(&j, e[i].total);
            ps_json_key(&j, "labels");
            ps_json_obj(&j);
            const ps_labels_t *ls = &set.labels[e[i].series];
            for (uint32_t k = 0; k < ls->n; k++) {
                ps_json_keyn(&j, ls->pairs[k].name, ls->pairs[k].nlen);
                ps_json_str(&j, ls->pairs[k].value, ls->pairs[k].vlen);
            }
            ps_json_end(&j);
            ps_json_end(&j);
        }
        ps_json_end(&j);
        ps_json_envelope_close(&j);
        ps_task_send(c.t, 200, "application/json", c.out.data, c.out.len);
    }
    side_dispose(&s);
    return ps_qctx_finish(&c, ret);
}
