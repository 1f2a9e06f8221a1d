/*
 * api_querier.c - querier.v1.QuerierService over Connect (connect.h), the methods Grafana's
 * Pyroscope data source calls: ProfileTypes, LabelNames, LabelValues, Series,
 * SelectMergeStacktraces, SelectMergeProfile, SelectSeries, Diff, GetProfileStats. Each handler only translates:
 * decode the request (proto/querier.h), call src/query/querier.h (the merges are query.h's, the
 * flame graph render.h's, so an answer equals /api/v1/profiles/query's), encode the answer.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "connect.h"
#include "core/timeutil.h"
#include "internal.h"
#include "proto/pprof.h"
#include "proto/querier.h"
#include "query/querier.h"
#include "query/query.h"
#include "render/render.h"

/* A call being answered: its read snapshot, error and answer. */
typedef struct qcall {
    ps_connect_call_t *c;
    ps_arena_t *a;
    ps_reader_t *r;
    ps_err_t err;
    ps_buf_t out;
    uint32_t max_series;
    ps_connect_code_t code; /* the answer's code when not err's (0: err's) */
} qcall_t;

/* The decoding budget: a repeated string of 2 bytes on the wire (matchers, group_by) takes a
 * pointer and an allocation as structs (~12x): 32x the body, at most --max-inflated-size, plus
 * 1 MiB (Push's rule with a larger factor: querier requests are all strings, no profile bytes). */
static size_t budget_of(const ps_connect_call_t *c)
{
    size_t cap = c->srv->opts.limits.max_inflated ? c->srv->opts.limits.max_inflated : ((size_t)64 << 20);
    return (c->body_len < cap / 32 ? c->body_len * 32 : cap) + ((size_t)1 << 20);
}

static int begin(qcall_t *q, ps_connect_call_t *c)
{
    memset(q, 0, sizeof(*q));
    q->c = c;
    q->a = c->arena;
    q->max_series = c->srv->opts.max_series;
    ps_err_clear(&q->err);
    return ps_reader_begin(c->srv->store, &q->r, &q->err);
}

static int finish(qcall_t *q, int ret)
{
    if (q->r)
        ps_reader_end(q->r);
    if (ret == 0)
        ps_connect_reply_take(q->c, &q->out);
    else
        ps_connect_error(q->c, q->code != 0 ? q->code : ps_connect_code_of(q->err.code ? q->err.code : ret),
                         q->err.msg[0] ? q->err.msg : ps_strerror(ret));
    ps_buf_dispose(&q->out);
    return 0;
}

/* Lists a request may hold: each entry costs work per series, so they are bounded (a series has
 * at most 63 labels besides __name__). */
#define MAX_MATCHERS 256
#define MAX_NAMES 64

/* the matchers of a labels request as selectors (none: every profile series) */
static int matchers(qcall_t *q, const ps_qr_labels_req_t *lr, ps_selector_t **sels)
{
    if (lr->nmatchers > MAX_MATCHERS)
        return ps_err_set(&q->err, PS_EINVAL, "matchers: %u selectors, more than %d", lr->nmatchers, MAX_MATCHERS);
    if (lr->nlabel_names > MAX_NAMES)
        return ps_err_set(&q->err, PS_EINVAL, "label_names: %u names, more than %d", lr->nlabel_names, MAX_NAMES);
    *sels = ps_arena_calloc(q->a, lr->nmatchers + 1, sizeof(ps_selector_t));
    for (uint32_t i = 0; i < lr->nmatchers; i++) {
        char field[32];
        snprintf(field, sizeof(field), "matchers[%u]", i);
        int ret = ps_querier_selector(NULL, lr->matchers[i], field, q->a, &(*sels)[i], &q->err);
        if (ret)
            return ret;
    }
    return 0;
}

static void dispose_sels(ps_selector_t *sels, uint32_t n)
{
    for (uint32_t i = 0; sels && i < n; i++)
        ps_selector_dispose(&sels[i]);
}

/* the profile series of a labels request */
static int labels_series(qcall_t *q, const ps_qr_labels_req_t *lr, ps_series_set_t *set)
{
    ps_selector_t *sels = NULL;
    int64_t lo, hi;
    int ret = ps_querier_range(lr->start, lr->end, &lo, &hi, &q->err);
    if (ret == 0)
        ret = matchers(q, lr, &sels);
    if (ret == 0)
        ret = ps_querier_series(q->r, sels, lr->nmatchers, lo, hi, q->max_series, q->a, set, &q->err);
    dispose_sels(sels, lr->nmatchers);
    return ret;
}

int ps_connect_querier_profile_types(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_labels_req_t lr;
    ps_strlist_t types;
    int64_t lo, hi;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_profile_types(c->codec, c->body, c->body_len, q.a, budget_of(c), &lr, &q.err);
    if (ret == 0)
        ret = ps_querier_range(lr.start, lr.end, &lo, &hi, &q.err);
    if (ret == 0)
        ret = ps_querier_profile_types(q.r, lo, hi, q.a, &types, &q.err);
    if (ret == 0)
        ps_qr_encode_profile_types(c->codec, types.v, types.n, q.a, &q.out);
    return finish(&q, ret);
}

typedef int (*labels_decode_fn)(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                                ps_qr_labels_req_t *r, ps_err_t *err);

/* A labels request decoded (need_name: its name must be given). */
static int labels_request(qcall_t *q, labels_decode_fn decode, bool need_name, ps_qr_labels_req_t *lr)
{
    ps_connect_call_t *c = q->c;
    int ret = decode(c->codec, c->body, c->body_len, q->a, budget_of(c), lr, &q->err);
    if (ret == 0 && need_name && (lr->name == NULL || lr->name[0] == '\0'))
        ret = ps_err_set(&q->err, PS_EINVAL, "name: missing (the label whose values to list)");
    return ret;
}

/* A labels call up to its series: the request decoded and its profile series selected. */
static int labels_call(qcall_t *q, labels_decode_fn decode, bool need_name, ps_qr_labels_req_t *lr,
                       ps_series_set_t *set)
{
    int ret = labels_request(q, decode, need_name, lr);
    if (ret == 0)
        ret = labels_series(q, lr, set);
    return ret;
}

static int on_name(void *ctx, const char *s, size_t n)
{
    ps_qr_names_add(ctx, s, n);
    return 0;
}

/* LabelNames (need_name false) and LabelValues: the request decoded (LabelValues' name must be
 * given), its label names or values listed (ps_querier_label_list) */
static int label_list_call(ps_connect_call_t *c, labels_decode_fn decode, bool need_name)
{
    qcall_t q;
    ps_qr_labels_req_t lr = {0};
    ps_selector_t *sels = NULL;
    ps_strlist_t l;
    int64_t lo, hi;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = labels_request(&q, decode, need_name, &lr);
    if (ret == 0)
        ret = ps_querier_range(lr.start, lr.end, &lo, &hi, &q.err);
    if (ret == 0)
        ret = matchers(&q, &lr, &sels);
    const char *name = need_name ? lr.name : NULL;
    ps_qr_names_enc_t e;
    ps_qr_names_begin(&e, c->codec, &q.out);
    if (ret == 0 && (ret = ps_querier_label_each(q.r, name, sels, lr.nmatchers, lo, hi, on_name, &e, &q.err)) == 0)
        ps_qr_names_end(&e); /* streamed from the index */
    if (ret == PS_EOUTOFORDER) {
        q.out.len = 0;
        ret = ps_querier_label_list(q.r, name, sels, lr.nmatchers, lo, hi, q.a, &l, &q.err);
        if (ret == 0)
            ps_qr_encode_names(c->codec, l.v, l.n, q.a, &q.out);
    }
    dispose_sels(sels, lr.nmatchers);
    return finish(&q, ret);
}

int ps_connect_querier_label_names(ps_connect_call_t *c)
{
    return label_list_call(c, ps_qr_decode_label_names, false);
}

int ps_connect_querier_label_values(ps_connect_call_t *c)
{
    return label_list_call(c, ps_qr_decode_label_values, true);
}

int ps_connect_querier_series(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_labels_req_t lr;
    ps_series_set_t set;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = labels_call(&q, ps_qr_decode_series, false, &lr, &set);
    if (ret == 0) {
        ps_labels_t *sets;
        uint32_t n;
        ps_querier_label_sets(&set, lr.label_names, lr.nlabel_names, q.a, &sets, &n);
        ps_qr_encode_series(c->codec, sets, n, q.a, &q.out);
    }
    return finish(&q, ret);
}

/* GetProfileStats (types.v1.GetProfileStatsRequest, no fields): whether any profile is stored and
 * the oldest and newest profile times (ms) over the whole store, all tenants' profile series alike.
 * Nothing stored: false, INT64_MAX, INT64_MIN, as Pyroscope answers for no blocks. */
int ps_connect_querier_profile_stats(ps_connect_call_t *c)
{
    qcall_t q;
    ps_querier_stats_t st;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_profile_stats(c->codec, c->body, c->body_len, q.a, budget_of(c), &q.err);
    if (ret == 0)
        ret = ps_querier_profile_stats(q.r, q.a, &st, &q.err);
    if (ret == 0)
        ps_qr_encode_profile_stats(c->codec, st.ingested, st.ingested ? ps_ns_to_ms_floor(st.oldest_ns) : INT64_MAX,
                                   st.ingested ? ps_ns_to_ms_floor(st.newest_ns) : INT64_MIN, &q.out);
    return finish(&q, ret);
}

/* ---- merges ---- */

static const char *format_name(int f)
{
    static const char *names[] = {"PROFILE_FORMAT_UNSPECIFIED", "PROFILE_FORMAT_FLAMEGRAPH", "PROFILE_FORMAT_TREE",
                                  "PROFILE_FORMAT_DOT", "PROFILE_FORMAT_PPROF"};
    return f >= 0 && f <= 4 ? names[f] : "an unknown format";
}

/* What profstore does not do of a merge request: refused, naming it. */
static int merge_check(qcall_t *q, const ps_qr_merge_req_t *m, const char *side)
{
    if (m->type_id == NULL || m->type_id[0] == '\0')
        return ps_err_set(&q->err, PS_EINVAL, "%sprofile_typeID: missing (a profile type id, as ProfileTypes lists them)",
                          side);
    if (m->format != PS_QR_FORMAT_FLAMEGRAPH && m->format != PS_QR_FORMAT_PPROF && m->format != PS_QR_FORMAT_TREE)
        return ps_err_set(&q->err, PS_EINVAL,
                          "%sformat: %s (%d) is not supported: ask for PROFILE_FORMAT_FLAMEGRAPH (the default), "
                          "PROFILE_FORMAT_TREE or PROFILE_FORMAT_PPROF",
                          side, format_name(m->format), m->format);
    if (m->has_go_pgo)
        return ps_err_set(&q->err, PS_EINVAL, "%sstack_trace_selector.go_pgo is not supported by profstore", side);
    if (m->ncall_site > 0 && side[0])
        return ps_err_set(&q->err, PS_EINVAL, "%sstack_trace_selector.call_site is not supported in a Diff", side);
    if (m->nspan_ids > 0 && side[0])
        return ps_err_set(&q->err, PS_EINVAL, "%sspan_selector is not supported in a Diff (%u span ids)", side,
                          m->nspan_ids);
    if (m->ntrace_ids > 0)
        return ps_err_set(&q->err, PS_EINVAL, "%strace_id_selector is not supported by profstore (%u trace ids)", side,
                          m->ntrace_ids);
    if (m->async && !side[0]) /* Pyroscope reads it in SelectMergeStacktraces only, not in a Diff side */
        return ps_err_set(&q->err, PS_EINVAL,
                          "async is not supported by profstore (no asynchronous queries: leave it out or "
                          "send ASYNC_QUERY_TYPE_DISABLED)");
    return 0;
}

/* One side: the selection of m (sel is the caller's, disposed by it); with span ids (span_selector,
 * SelectMergeSpanProfile), of the samples of those spans only. */
static int merge_side(qcall_t *q, const ps_qr_merge_req_t *m, const char *side, ps_selector_t *sel,
                      ps_profile_sel_t *ps)
{
    char field[40];
    int64_t lo, hi;
    uint64_t *spans = NULL;
    uint32_t nspans = 0;
    snprintf(field, sizeof(field), "%slabel_selector", side);
    ps_profile_ref_t *refs = NULL;
    uint32_t nrefs = 0;
    int ret = merge_check(q, m, side);
    if (ret == 0 && m->nspan_ids > 0)
        ret = ps_querier_spans(m->span_ids, m->nspan_ids, "span_selector", q->a, &spans, &nspans, &q->err);
    if (ret == 0)
        ret = ps_querier_selector(m->type_id, m->label_selector, field, q->a, sel, &q->err);
    if (ret == 0 && (ret = ps_querier_range(m->start, m->end, &lo, &hi, &q->err)) != 0)
        ps_err_prefix(&q->err, "%.16s", side[0] ? side : "range");
    if (ret == 0 && m->nprofile_ids > 0 && nspans > 0)
        ret = ps_err_set(&q->err, PS_EINVAL, "%sprofile_id_selector and span_selector cannot be combined", side);
    if (ret == 0 && m->nprofile_ids > 0) {
        snprintf(field, sizeof(field), "%sprofile_id_selector", side);
        ret = ps_querier_profile_ids(q->r, m->profile_ids, m->nprofile_ids, field, q->a, &refs, &nrefs, &q->err);
    }
    if (ret == 0 && nspans > 0)
        ret = ps_querier_merge_spans(q->r, sel, lo, hi, spans, nspans, q->max_series, q->a, ps, &q->err);
    else if (ret == 0 && nrefs > 0)
        ret = ps_querier_merge_ids(q->r, sel, lo, hi, q->max_series, refs, nrefs, q->a, ps, &q->err);
    else if (ret == 0)
        ret = ps_querier_merge(q->r, sel, lo, hi, q->max_series, q->a, ps, &q->err);
    return ret;
}

/* The aggregation over time of a merge (ps_query_type_agg: the querier has no field for it), in a
 * header; a pprof answer also has it in its comments. */
static void agg_header(qcall_t *q, const ps_profile_sel_t *ps)
{
    const char *a = ps_agg_name(ps->ntypes ? ps->aggs[0] : PS_AGG_SUM);
    ps_task_add_header(q->c->t, "x-profstore-aggregation", a, strlen(a));
}

/* render's flame graph as the codec's */
static void fg_of(qcall_t *q, const ps_flamegraph_t *fg, ps_qr_flamegraph_t *out)
{
    uint32_t *ln = ps_arena_alloc(q->a, (fg->nlevels + 1) * sizeof(uint32_t));
    int64_t **lv = ps_arena_alloc(q->a, (fg->nlevels + 1) * sizeof(int64_t *));
    for (uint32_t i = 0; i < fg->nlevels; i++) {
        ln[i] = fg->levels[i].n;
        lv[i] = fg->levels[i].values;
    }
    *out = (ps_qr_flamegraph_t){.nnames = fg->nnames, .names = fg->names, .nlevels = fg->nlevels, .level_n = ln,
                                .levels = (int64_t *const *)lv, .total = fg->total, .max_self = fg->max_self,
                                .left_ticks = fg->left_ticks, .right_ticks = fg->right_ticks};
}

typedef int (*merge_decode_fn)(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_merge_req_t *r, ps_err_t *err);

/* A one-sided merge up to its profile: the request decoded, max_nodes checked, the selection
 * made (sel, ps: the caller's, disposed by it) and merged into p. */
static int merge_call(qcall_t *q, merge_decode_fn decode, ps_qr_merge_req_t *m, int64_t *max_nodes,
                      ps_selector_t *sel, ps_profile_sel_t *ps, ps_profile_t *p)
{
    ps_connect_call_t *c = q->c;
    int ret = decode(c->codec, c->body, c->body_len, q->a, budget_of(c), m, &q->err);
    if (ret == 0)
        ret = ps_querier_max_nodes(m->has_max_nodes, m->max_nodes, max_nodes, &q->err);
    if (ret == 0)
        ret = merge_side(q, m, "", sel, ps);
    if (ret == 0)
        ret = ps_query_profile_build(q->r, ps, NULL, PS_PROFILE_ONE, q->a, p, &q->err);
    if (ret == 0)
        ps_querier_call_site(p, m->call_site, m->ncall_site, q->a);
    if (ret == 0 && m->nspan_ids > 0)
        ps_querier_strip_span_labels(p);
    if (ret == 0)
        agg_header(q, ps);
    return ret;
}

typedef int (*pprof_encode_fn)(int codec, const void *pprof, size_t n, ps_arena_t *arena, ps_buf_t *out,
                               ps_err_t *err);

/* p as pprof bytes, the answer encode makes of them */
static int pprof_answer(qcall_t *q, const ps_profile_t *p, pprof_encode_fn encode)
{
    ps_buf_t raw = PS_BUF_INIT;
    int ret = ps_pprof_encode(p, -1, &raw, &q->err);
    if (ret == 0)
        ret = encode(q->c->codec, raw.data, raw.len, q->a, &q->out, &q->err);
    ps_buf_dispose(&raw);
    return ret;
}

/* A merge answered as a flame graph, or as Pyroscope's tree bytes with PROFILE_FORMAT_TREE */
static int flame_answer(qcall_t *q, ps_profile_t *p, int format, int64_t max_nodes)
{
    ps_flamegraph_t fg;
    ps_qr_flamegraph_t qfg;
    int ret = ps_flamegraph_build(p, 0, 0, max_nodes, q->a, &fg, &q->err);
    if (ret)
        return ret;
    fg_of(q, &fg, &qfg);
    if (format == PS_QR_FORMAT_TREE)
        return ps_qr_encode_tree(q->c->codec, &qfg, q->a, &q->out, &q->err);
    ps_qr_encode_flamegraph(q->c->codec, &qfg, q->a, &q->out);
    return 0;
}

/* SelectMergeStacktraces and SelectMergeSpanProfile: the merge of the request decode reads, as a
 * flame graph, a tree or (SelectMergeStacktraces only) a pprof */
static int merge_stacktraces(ps_connect_call_t *c, merge_decode_fn decode)
{
    qcall_t q;
    ps_qr_merge_req_t m;
    ps_selector_t sel = {0};
    ps_profile_sel_t ps = {0};
    ps_profile_t p;
    int64_t max_nodes = 0;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = merge_call(&q, decode, &m, &max_nodes, &sel, &ps, &p);
    if (ret == 0 && m.format == PS_QR_FORMAT_PPROF) {
        ret = pprof_answer(&q, &p, ps_qr_encode_merge_pprof);
    } else if (ret == 0) {
        ret = flame_answer(&q, &p, m.format, max_nodes);
    }
    ps_selector_dispose(&sel);
    ps_profile_sel_dispose(&ps);
    return finish(&q, ret);
}

int ps_connect_querier_select_merge_stacktraces(ps_connect_call_t *c)
{
    return merge_stacktraces(c, ps_qr_decode_merge_stacktraces);
}

/* SelectMergeSpanProfile's request and what it needs beyond SelectMergeStacktraces': at least one
 * span, and no pprof (its answer has no such field) */
static int decode_merge_span(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                             ps_qr_merge_req_t *m, ps_err_t *err)
{
    int ret = ps_qr_decode_merge_span(codec, data, n, arena, budget, m, err);
    if (ret == 0 && m->format == PS_QR_FORMAT_PPROF)
        ret = ps_err_set(err, PS_EINVAL, "format: PROFILE_FORMAT_PPROF is not an answer of SelectMergeSpanProfile: "
                                         "ask SelectMergeStacktraces with span_selector for a pprof");
    if (ret == 0 && m->nspan_ids == 0)
        ret = ps_err_set(err, PS_EINVAL, "span_selector: missing (at least one span id, 16 hex digits)");
    return ret;
}

/* SelectMergeSpanProfile: SelectMergeStacktraces' merge of the samples of span_selector's spans */
int ps_connect_querier_select_merge_span_profile(ps_connect_call_t *c)
{
    return merge_stacktraces(c, decode_merge_span);
}

int ps_connect_querier_select_merge_profile(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_merge_req_t m;
    ps_selector_t sel = {0};
    ps_profile_sel_t ps = {0};
    ps_profile_t p;
    int64_t max_nodes;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = merge_call(&q, ps_qr_decode_merge_profile, &m, &max_nodes, &sel, &ps, &p);
    if (ret == 0)
        ret = pprof_answer(&q, &p, ps_qr_encode_profile);
    ps_selector_dispose(&sel);
    ps_profile_sel_dispose(&ps);
    return finish(&q, ret);
}

int ps_connect_querier_diff(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_merge_req_t l, r;
    ps_selector_t lsel = {0}, rsel = {0};
    ps_profile_sel_t lps = {0}, rps = {0};
    ps_profile_t p;
    int64_t max_nodes = 0;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_diff(c->codec, c->body, c->body_len, q.a, budget_of(c), &l, &r, &q.err);
    if (ret == 0 && (l.format == PS_QR_FORMAT_PPROF || r.format == PS_QR_FORMAT_PPROF || l.format == PS_QR_FORMAT_TREE ||
                     r.format == PS_QR_FORMAT_TREE))
        ret = ps_err_set(&q.err, PS_EINVAL, "%sformat: a Diff answers a flame graph (PROFILE_FORMAT_FLAMEGRAPH)",
                         l.format == PS_QR_FORMAT_PPROF || l.format == PS_QR_FORMAT_TREE ? "left." : "right.");
    if (ret == 0)
        ret = ps_querier_max_nodes(l.has_max_nodes || r.has_max_nodes, l.has_max_nodes ? l.max_nodes : r.max_nodes,
                                   &max_nodes, &q.err);
    if (ret == 0)
        ret = merge_side(&q, &l, "left.", &lsel, &lps);
    if (ret == 0)
        ret = merge_side(&q, &r, "right.", &rsel, &rps);
    if (ret == 0)
        ret = ps_query_profile_build(q.r, &lps, &rps, PS_PROFILE_PAIR, q.a, &p, &q.err);
    if (ret == 0)
        agg_header(&q, &rps);
    if (ret == 0) {
        ps_flamegraph_t fg;
        ps_qr_flamegraph_t qfg;
        ret = ps_flamegraph_build(&p, 0, 1, max_nodes, q.a, &fg, &q.err);
        if (ret == 0) {
            fg_of(&q, &fg, &qfg);
            ps_qr_encode_diff(c->codec, &qfg, q.a, &q.out);
        }
    }
    ps_selector_dispose(&lsel);
    ps_selector_dispose(&rsel);
    ps_profile_sel_dispose(&lps);
    ps_profile_sel_dispose(&rps);
    return finish(&q, ret);
}

/* ---- SelectSeries ---- */

static int series_query(qcall_t *q, const ps_qr_series_req_t *sr, ps_selector_t *sel, ps_querier_range_q_t *rq)
{
    if (sr->type_id == NULL || sr->type_id[0] == '\0')
        return ps_err_set(&q->err, PS_EINVAL, "profile_typeID: missing (a profile type id, as ProfileTypes lists them)");
    /* Pyroscope: time.Duration(step * 1e9).Milliseconds() */
    if (!(sr->step > 0) || !isfinite(sr->step) || sr->step * 1e9 >= 9.2e18)
        return ps_err_set(&q->err, PS_EINVAL, "step: %g is not a positive number of seconds", sr->step);
    int64_t step_ms = (int64_t)(sr->step * 1e9) / 1000000;
    if (step_ms <= 0)
        return ps_err_set(&q->err, PS_EINVAL, "step: %g s is less than a millisecond", sr->step);
    if (sr->aggregation != 0 && sr->aggregation != 1)
        return ps_err_set(&q->err, PS_EINVAL,
                          "aggregation: %d is not a TimeSeriesAggregationType (0 SUM, 1 AVERAGE)", sr->aggregation);
    if (sr->has_limit && sr->limit < 0)
        return ps_err_set(&q->err, PS_EINVAL, "limit: %lld is negative", (long long)sr->limit);
    /* stack_trace_selector: the call site selects (go_pgo shapes merged profiles only: Pyroscope's
     * series read the call site alone, ignoring it) */
    if (sr->exemplar_type == PS_QR_EXEMPLAR_SPAN) { /* Pyroscope's answer (querybackend validateExemplarType) */
        q->code = PS_CONNECT_UNIMPLEMENTED;
        return ps_err_set(&q->err, PS_EUNSUPPORTED,
                          "exemplar_type: EXEMPLAR_TYPE_SPAN: exemplar type span is not implemented (ask for "
                          "EXEMPLAR_TYPE_INDIVIDUAL)");
    }
    if (sr->exemplar_type < 0 || sr->exemplar_type > PS_QR_EXEMPLAR_SPAN)
        return ps_err_set(&q->err, PS_EINVAL, "exemplar_type: %d is not an ExemplarType (0 to 3)", sr->exemplar_type);
    if (sr->ngroup_by > MAX_NAMES)
        return ps_err_set(&q->err, PS_EINVAL, "group_by: %u names, more than %d", sr->ngroup_by, MAX_NAMES);
    int ret = ps_querier_selector(sr->type_id, sr->label_selector, "label_selector", q->a, sel, &q->err);
    if (ret)
        return ret;
    *rq = (ps_querier_range_q_t){.sel = sel, .start = sr->start, .end = sr->end, .step = step_ms,
                                 .group_by = sr->group_by, .ngroup_by = sr->ngroup_by, .average = sr->average,
                                 .has_limit = sr->has_limit, .limit = sr->limit, .max_series = q->max_series,
                                 .call_site = sr->call_site, .ncall_site = sr->ncall_site,
                                 .exemplars = sr->exemplar_type == PS_QR_EXEMPLAR_INDIVIDUAL};
    return 0;
}

int ps_connect_querier_select_series(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_series_req_t sr;
    ps_selector_t sel = {0};
    ps_querier_range_q_t rq;
    ps_qr_series_src_t src;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_select_series(c->codec, c->body, c->body_len, q.a, budget_of(c), &sr, &q.err);
    if (ret == 0)
        ret = series_query(&q, &sr, &sel, &rq);
    if (ret == 0)
        ret = ps_querier_select_series_src(q.r, &rq, q.a, &src, &q.err);
    if (ret == 0)
        ps_qr_encode_select_series_src(c->codec, &src, q.a, &q.out);
    ps_selector_dispose(&sel);
    return finish(&q, ret);
}

static int heatmap_query(qcall_t *q, const ps_qr_heatmap_req_t *hr, ps_selector_t *sel, ps_querier_heatmap_q_t *hq)
{
    if (hr->type_id == NULL || hr->type_id[0] == '\0')
        return ps_err_set(&q->err, PS_EINVAL, "profile_typeID: missing (a profile type id, as ProfileTypes lists them)");
    /* Pyroscope: step >= 1 ms, then time.Duration(step * 1e9).Milliseconds() */
    if (!(hr->step >= 0.001) || !isfinite(hr->step) || hr->step * 1e9 >= 9.2e18)
        return ps_err_set(&q->err, PS_EINVAL, "step: must be at least 0.001 seconds (1 ms), got %g", hr->step);
    int64_t step_ms = (int64_t)(hr->step * 1e9) / 1000000;
    if (step_ms <= 0)
        step_ms = 1; /* 0.001 in binary is a hair under 1e6 ns */
    if (hr->has_limit && hr->limit < 0)
        return ps_err_set(&q->err, PS_EINVAL, "limit: %lld is negative", (long long)hr->limit);
    if (hr->start >= hr->end)
        return ps_err_set(&q->err, PS_EINVAL, "start (%lld ms) must be before end (%lld ms)", (long long)hr->start,
                          (long long)hr->end);
    if (hr->query_type == 0)
        return ps_err_set(&q->err, PS_EINVAL,
                          "query_type: missing (HEATMAP_QUERY_TYPE_INDIVIDUAL; HEATMAP_QUERY_TYPE_SPAN is not supported)");
    if (hr->query_type == PS_QR_HEATMAP_SPAN)
        return ps_err_set(&q->err, PS_EUNSUPPORTED,
                          "query_type: HEATMAP_QUERY_TYPE_SPAN is not supported by profstore (span profiles: "
                          "SelectMergeSpanProfile)");
    if (hr->query_type != PS_QR_HEATMAP_INDIVIDUAL)
        return ps_err_set(&q->err, PS_EINVAL, "query_type: %d is not a HeatmapQueryType (1 INDIVIDUAL, 2 SPAN)",
                          hr->query_type);
    if (hr->exemplar_type == PS_QR_EXEMPLAR_SPAN)
        return ps_err_set(&q->err, PS_EINVAL,
                          "exemplar_type: EXEMPLAR_TYPE_SPAN needs query_type HEATMAP_QUERY_TYPE_SPAN");
    if (hr->exemplar_type < 0 || hr->exemplar_type > PS_QR_EXEMPLAR_SPAN)
        return ps_err_set(&q->err, PS_EINVAL, "exemplar_type: %d is not an ExemplarType (0 to 3)", hr->exemplar_type);
    if (hr->ngroup_by > MAX_NAMES)
        return ps_err_set(&q->err, PS_EINVAL, "group_by: %u names, more than %d", hr->ngroup_by, MAX_NAMES);
    int ret = ps_querier_selector(hr->type_id, hr->label_selector, "label_selector", q->a, sel, &q->err);
    if (ret)
        return ret;
    *hq = (ps_querier_heatmap_q_t){.sel = sel, .start = hr->start, .end = hr->end, .step = step_ms,
                                   .group_by = hr->group_by, .ngroup_by = hr->ngroup_by,
                                   .exemplars = hr->exemplar_type == PS_QR_EXEMPLAR_INDIVIDUAL,
                                   .limit = hr->limit, .max_series = q->max_series};
    return 0;
}

int ps_connect_querier_select_heatmap(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_heatmap_req_t hr;
    ps_selector_t sel = {0};
    ps_querier_heatmap_q_t hq;
    ps_qr_heatmap_series_t *s;
    uint32_t n;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_heatmap(c->codec, c->body, c->body_len, q.a, budget_of(c), &hr, &q.err);
    if (ret == 0)
        ret = heatmap_query(&q, &hr, &sel, &hq);
    if (ret == 0)
        ret = ps_querier_select_heatmap(q.r, &hq, q.a, &s, &n, &q.err);
    if (ret == 0)
        ps_qr_encode_heatmap(c->codec, s, n, q.a, &q.out);
    ps_selector_dispose(&sel);
    return finish(&q, ret);
}

int ps_connect_querier_analyze_query(ps_connect_call_t *c)
{
    qcall_t q;
    ps_qr_analyze_req_t ar;
    ps_selector_t sel = {0};
    ps_qr_query_scope_t scope;
    uint64_t bytes = 0, nseries = 0;
    int64_t start_ns, end_ns;
    int ret = begin(&q, c);
    if (ret == 0)
        ret = ps_qr_decode_analyze(c->codec, c->body, c->body_len, q.a, budget_of(c), &ar, &q.err);
    if (ret == 0 && (ret = ps_querier_range(ar.start, ar.end, &start_ns, &end_ns, &q.err)) != 0)
        ps_err_prefix(&q.err, "range");
    if (ret == 0)
        ret = ps_querier_selector(NULL, ar.query, "query", q.a, &sel, &q.err);
    if (ret == 0)
        ret = ps_querier_analyze(q.r, &sel, start_ns, end_ns, q.max_series, q.a, &scope, &bytes, &nseries, &q.err);
    if (ret == 0)
        ps_qr_encode_analyze(c->codec, &scope, 1, bytes, nseries, q.a, &q.out);
    ps_selector_dispose(&sel);
    return finish(&q, ret);
}
