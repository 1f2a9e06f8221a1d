/*
 * querier.c - the querier.v1 codec (querier.h): protobuf-c structs of
 * proto/pyroscope_querier.proto (and types.v1, google.v1) to and from our own types, through
 * pbjson.h's two codecs. Example (binary), Grafana's health check ProfileTypes(1000, 4000):
 *
 *   08 e8 07            1 start 1000
 *   10 a0 1f            2 end 4000
 *
 * and an answer with one type:
 *
 *   0a <n>              1 profile_types
 *     0a <n> "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"   1 ID
 *     12 0b "process_cpu"                                          2 name
 *     22 03 "cpu"  2a 0b "nanoseconds"  32 03 "cpu"  3a 0b "nanoseconds"   4-7
 */
#include "querier.h"

#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "core/timeutil.h"
#include "core/varint.h"
#include "pbjson.h"
#include "pyroscope_google.pb-c.h"
#include "pyroscope_querier.pb-c.h"
#include "pyroscope_types.pb-c.h"

/* The start and end (ms) of every querier request, where JSON gives a string that is not a number:
 * ps_parse_time's forms ("now-1h", RFC3339), as ms. */
static int time_ms(const char *field, const char *s, size_t n, int64_t *out, ps_err_t *err)
{
    int64_t ns;
    if (strcmp(field, "start") != 0 && strcmp(field, "end") != 0)
        return 1;
    int ret = ps_parse_time(s, n, ps_time_now(), &ns, err);
    if (ret == 0)
        *out = ns / 1000000 - (ns % 1000000 < 0); /* floor */
    return ret;
}

static int decode(int codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d, ps_arena_t *arena,
                  size_t budget, ProtobufCMessage **out, ps_err_t *err)
{
    int ret = ps_pb_decode_ex(codec == PS_QR_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n, d, arena, budget, time_ms, out,
                              err);
    if (ret != 0)
        ps_err_prefix(err, "%s", d->name);
    return ret;
}

/* protobuf-c's char ** of the arena, read-only from here */
static const char **strs(char **v, size_t n)
{
    (void)n;
    return (const char **)v;
}

static void *alloc_ptrs(ps_arena_t *arena, size_t n)
{
    return ps_arena_alloc(arena, (n + 1) * sizeof(void *));
}

/* a stack_trace_selector that asks for something (set: its oneof case is the field) */
static bool asks_stack_traces(bool set, const Types__V1__StackTraceSelector *s)
{
    return set && s != NULL && (s->n_call_site > 0 || s->go_pgo != NULL);
}

/* ---- requests ---- */

int ps_qr_decode_profile_types(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_labels_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    int ret = decode(codec, data, n, &querier__v1__profile_types_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__ProfileTypesRequest *q = (const void *)m;
        r->start = q->start;
        r->end = q->end;
    }
    return ret;
}

/* the fields the labels requests share */
static void labels_req(ps_qr_labels_req_t *r, char **matchers, size_t nmatchers, int64_t start, int64_t end)
{
    r->nmatchers = (uint32_t)nmatchers;
    r->matchers = strs(matchers, nmatchers);
    r->start = start;
    r->end = end;
}

int ps_qr_decode_label_names(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                             ps_qr_labels_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    int ret = decode(codec, data, n, &types__v1__label_names_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Types__V1__LabelNamesRequest *q = (const void *)m;
        labels_req(r, q->matchers, q->n_matchers, q->start, q->end);
    }
    return ret;
}

int ps_qr_decode_label_values(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                              ps_qr_labels_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    int ret = decode(codec, data, n, &types__v1__label_values_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Types__V1__LabelValuesRequest *q = (const void *)m;
        labels_req(r, q->matchers, q->n_matchers, q->start, q->end);
        r->name = q->name;
    }
    return ret;
}

int ps_qr_decode_series(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                        ps_qr_labels_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    int ret = decode(codec, data, n, &querier__v1__series_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__SeriesRequest *q = (const void *)m;
        labels_req(r, q->matchers, q->n_matchers, q->start, q->end);
        r->nlabel_names = (uint32_t)q->n_label_names;
        r->label_names = strs(q->label_names, q->n_label_names);
    }
    return ret;
}

/* The fields SelectMergeStacktraces and SelectMergeProfile share (r's defaults set before). */
typedef struct merge_fields {
    const char *type_id, *label_selector;
    int64_t start, end;
    bool has_max_nodes;
    int64_t max_nodes;
    bool has_sts;
    const Types__V1__StackTraceSelector *sts;
    size_t nprofile_ids;
    char **profile_ids;
    ps_arena_t *arena;
} merge_fields_t;

static void merge_set(ps_qr_merge_req_t *r, const merge_fields_t *f)
{
    r->type_id = f->type_id;
    r->label_selector = f->label_selector;
    r->start = f->start;
    r->end = f->end;
    r->has_max_nodes = f->has_max_nodes;
    r->max_nodes = f->has_max_nodes ? f->max_nodes : 0;
    r->has_stack_trace_selector = asks_stack_traces(f->has_sts, f->sts);
    if (r->has_stack_trace_selector) {
        r->has_go_pgo = f->sts->go_pgo != NULL;
        r->ncall_site = (uint32_t)f->sts->n_call_site;
        r->call_site = ps_arena_alloc(f->arena, (f->sts->n_call_site + 1) * sizeof(char *));
        for (size_t i = 0; i < f->sts->n_call_site; i++)
            r->call_site[i] = f->sts->call_site[i] && f->sts->call_site[i]->name ? f->sts->call_site[i]->name : "";
    }
    r->nprofile_ids = (uint32_t)f->nprofile_ids;
    r->profile_ids = strs(f->profile_ids, f->nprofile_ids);
}

static void merge_req(const Querier__V1__SelectMergeStacktracesRequest *q, ps_qr_merge_req_t *r, ps_arena_t *arena)
{
    memset(r, 0, sizeof(*r));
    r->type_id = "";
    r->label_selector = "";
    r->format = PS_QR_FORMAT_FLAMEGRAPH;
    if (q == NULL)
        return;
    merge_set(r, &(merge_fields_t){
                     q->profile_typeid, q->label_selector, q->start, q->end,
                     q->_max_nodes_case == QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST___MAX_NODES_MAX_NODES,
                     q->max_nodes,
                     q->_stack_trace_selector_case ==
                         QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST___STACK_TRACE_SELECTOR_STACK_TRACE_SELECTOR,
                     q->stack_trace_selector, q->n_profile_id_selector, q->profile_id_selector, arena});
    r->format = q->format == 0 ? PS_QR_FORMAT_FLAMEGRAPH : (int)q->format;
    r->nspan_ids = (uint32_t)q->n_span_selector;
    r->span_ids = strs(q->span_selector, q->n_span_selector);
    r->ntrace_ids = (uint32_t)q->n_trace_id_selector;
    r->async = q->_async_case == QUERIER__V1__SELECT_MERGE_STACKTRACES_REQUEST___ASYNC_ASYNC && q->async != NULL &&
               q->async->type != QUERIER__V1__ASYNC_QUERY_TYPE__ASYNC_QUERY_TYPE_DISABLED;
}

int ps_qr_decode_merge_span(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                            ps_qr_merge_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    merge_req(NULL, r, arena);
    int ret = decode(codec, data, n, &querier__v1__select_merge_span_profile_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__SelectMergeSpanProfileRequest *q = (const void *)m;
        merge_set(r, &(merge_fields_t){
                         q->profile_typeid, q->label_selector, q->start, q->end,
                         q->_max_nodes_case == QUERIER__V1__SELECT_MERGE_SPAN_PROFILE_REQUEST___MAX_NODES_MAX_NODES,
                         q->max_nodes, false, NULL, 0, NULL, arena});
        r->format = q->format == 0 ? PS_QR_FORMAT_FLAMEGRAPH : (int)q->format;
        r->nspan_ids = (uint32_t)q->n_span_selector;
        r->span_ids = strs(q->span_selector, q->n_span_selector);
    }
    return ret;
}

int ps_qr_decode_merge_stacktraces(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                                   ps_qr_merge_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    int ret = decode(codec, data, n, &querier__v1__select_merge_stacktraces_request__descriptor, arena, budget, &m, err);
    merge_req(ret == 0 ? (const void *)m : NULL, r, arena);
    return ret;
}

int ps_qr_decode_merge_profile(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_merge_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    merge_req(NULL, r, arena);
    int ret = decode(codec, data, n, &querier__v1__select_merge_profile_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__SelectMergeProfileRequest *q = (const void *)m;
        merge_set(r, &(merge_fields_t){
                         q->profile_typeid, q->label_selector, q->start, q->end,
                         q->_max_nodes_case == QUERIER__V1__SELECT_MERGE_PROFILE_REQUEST___MAX_NODES_MAX_NODES,
                         q->max_nodes,
                         q->_stack_trace_selector_case ==
                             QUERIER__V1__SELECT_MERGE_PROFILE_REQUEST___STACK_TRACE_SELECTOR_STACK_TRACE_SELECTOR,
                         q->stack_trace_selector, q->n_profile_id_selector, q->profile_id_selector, arena});
        r->format = PS_QR_FORMAT_PPROF;
        r->ntrace_ids = (uint32_t)q->n_trace_id_selector;
    }
    return ret;
}

int ps_qr_decode_diff(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_qr_merge_req_t *left,
                      ps_qr_merge_req_t *right, ps_err_t *err)
{
    ProtobufCMessage *m;
    int ret = decode(codec, data, n, &querier__v1__diff_request__descriptor, arena, budget, &m, err);
    const Querier__V1__DiffRequest *q = ret == 0 ? (const void *)m : NULL;
    merge_req(q ? q->left : NULL, left, arena);
    merge_req(q ? q->right : NULL, right, arena);
    return ret;
}

int ps_qr_decode_select_series(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_series_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    r->type_id = r->label_selector = "";
    int ret = decode(codec, data, n, &querier__v1__select_series_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__SelectSeriesRequest *q = (const void *)m;
        r->type_id = q->profile_typeid;
        r->label_selector = q->label_selector;
        r->start = q->start;
        r->end = q->end;
        r->ngroup_by = (uint32_t)q->n_group_by;
        r->group_by = strs(q->group_by, q->n_group_by);
        r->step = q->step;
        if (q->_aggregation_case == QUERIER__V1__SELECT_SERIES_REQUEST___AGGREGATION_AGGREGATION)
            r->aggregation = (int)q->aggregation;
        r->average = r->aggregation == TYPES__V1__TIME_SERIES_AGGREGATION_TYPE__TIME_SERIES_AGGREGATION_TYPE_AVERAGE;
        r->has_limit = q->_limit_case == QUERIER__V1__SELECT_SERIES_REQUEST___LIMIT_LIMIT;
        r->limit = r->has_limit ? q->limit : 0;
        r->has_stack_trace_selector = asks_stack_traces(
            q->_stack_trace_selector_case == QUERIER__V1__SELECT_SERIES_REQUEST___STACK_TRACE_SELECTOR_STACK_TRACE_SELECTOR,
            q->stack_trace_selector);
        if (r->has_stack_trace_selector) {
            const Types__V1__StackTraceSelector *st = q->stack_trace_selector;
            r->has_go_pgo = st->go_pgo != NULL;
            r->ncall_site = (uint32_t)st->n_call_site;
            r->call_site = ps_arena_alloc(arena, (st->n_call_site + 1) * sizeof(char *));
            for (size_t i = 0; i < st->n_call_site; i++)
                r->call_site[i] = st->call_site[i] && st->call_site[i]->name ? st->call_site[i]->name : "";
        }
        r->exemplar_type = (int)q->exemplar_type;
    }
    return ret;
}

int ps_qr_decode_profile_stats(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err)
{
    ProtobufCMessage *m;
    return decode(codec, data, n, &types__v1__get_profile_stats_request__descriptor, arena, budget, &m, err);
}

int ps_qr_decode_heatmap(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                         ps_qr_heatmap_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    r->type_id = r->label_selector = "";
    int ret = decode(codec, data, n, &querier__v1__select_heatmap_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__SelectHeatmapRequest *q = (const void *)m;
        r->type_id = q->profile_typeid;
        r->label_selector = q->label_selector;
        r->start = q->start;
        r->end = q->end;
        r->step = q->step;
        r->ngroup_by = (uint32_t)q->n_group_by;
        r->group_by = strs(q->group_by, q->n_group_by);
        r->query_type = (int)q->query_type;
        r->exemplar_type = (int)q->exemplar_type;
        r->has_limit = q->_limit_case == QUERIER__V1__SELECT_HEATMAP_REQUEST___LIMIT_LIMIT;
        r->limit = r->has_limit ? q->limit : 0;
    }
    return ret;
}

int ps_qr_decode_analyze(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                         ps_qr_analyze_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    r->query = "";
    int ret = decode(codec, data, n, &querier__v1__analyze_query_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Querier__V1__AnalyzeQueryRequest *q = (const void *)m;
        r->start = q->start;
        r->end = q->end;
        r->query = q->query;
    }
    return ret;
}

/* ---- answers ---- */

void ps_qr_encode_profile_stats(int codec, bool ingested, int64_t oldest_ms, int64_t newest_ms, ps_buf_t *out)
{
    Types__V1__GetProfileStatsResponse res = TYPES__V1__GET_PROFILE_STATS_RESPONSE__INIT;
    res.data_ingested = ingested;
    res.oldest_profile_time = oldest_ms;
    res.newest_profile_time = newest_ms;
    ps_pb_encode_api(codec, &res.base, out);
}

/* the parts of a profile type id, split at ':' (5 or 6 parts); 0 or -1 */
static int type_parts(const char *id, ps_arena_t *arena, char *parts[6])
{
    int k = 0;
    size_t n = strlen(id), start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || id[i] == ':') {
            if (k == 6)
                return -1;
            parts[k++] = ps_arena_strndup(arena, id + start, i - start);
            start = i + 1;
        }
    }
    return k >= 5 ? 0 : -1;
}

void ps_qr_encode_profile_types(int codec, const char *const *ids, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__ProfileTypesResponse res = QUERIER__V1__PROFILE_TYPES_RESPONSE__INIT;
    Types__V1__ProfileType **v = alloc_ptrs(arena, n);
    Types__V1__ProfileType *pt = ps_arena_alloc(arena, (n + 1) * sizeof(*pt));
    for (uint32_t i = 0; i < n; i++) {
        char *parts[6];
        if (type_parts(ids[i], arena, parts) != 0)
            continue;
        Types__V1__ProfileType *t = &pt[res.n_profile_types];
        *t = (Types__V1__ProfileType)TYPES__V1__PROFILE_TYPE__INIT;
        t->id = (char *)ids[i];
        t->name = parts[0];
        t->sample_type = parts[1];
        t->sample_unit = parts[2];
        t->period_type = parts[3];
        t->period_unit = parts[4];
        v[res.n_profile_types++] = t;
    }
    res.profile_types = v;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_qr_encode_names(int codec, const char *const *names, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    (void)arena;
    Types__V1__LabelNamesResponse res = TYPES__V1__LABEL_NAMES_RESPONSE__INIT;
    res.n_names = n;
    res.names = (char **)names;
    ps_pb_encode_api(codec, &res.base, out);
}

/* JSON {"names":[...]} ({} without names), binary field 1 (wire type 2) once per name, as
 * ps_pb_encode writes LabelNamesResponse */
void ps_qr_names_begin(ps_qr_names_enc_t *e, int codec, ps_buf_t *out)
{
    e->codec = codec;
    e->out = out;
    e->n = 0;
}

void ps_qr_names_add(ps_qr_names_enc_t *e, const char *s, size_t n)
{
    if (e->codec == PS_QR_JSON) {
        if (e->n == 0) {
            ps_json_init(&e->j, e->out);
            ps_json_obj(&e->j);
            ps_json_key(&e->j, "names");
            ps_json_arr(&e->j);
        }
        ps_json_str(&e->j, s, n);
    } else {
        ps_buf_putc(e->out, 0x0a);
        ps_put_uvarint(e->out, n);
        ps_buf_append(e->out, s, n);
    }
    e->n++;
}

void ps_qr_names_end(ps_qr_names_enc_t *e)
{
    if (e->codec != PS_QR_JSON)
        return;
    if (e->n == 0) {
        ps_json_init(&e->j, e->out);
        ps_json_obj(&e->j);
    } else {
        ps_json_end(&e->j);
    }
    ps_json_end(&e->j);
}

static Types__V1__LabelPair **label_pairs(const ps_labels_t *ls, ps_arena_t *arena)
{
    Types__V1__LabelPair **v = alloc_ptrs(arena, ls->n);
    Types__V1__LabelPair *p = ps_arena_alloc(arena, (ls->n + 1) * sizeof(*p));
    for (uint32_t k = 0; k < ls->n; k++) {
        p[k] = (Types__V1__LabelPair)TYPES__V1__LABEL_PAIR__INIT;
        p[k].name = (char *)ls->pairs[k].name;
        p[k].value = (char *)ls->pairs[k].value;
        v[k] = &p[k];
    }
    return v;
}

void ps_qr_encode_series(int codec, const ps_labels_t *sets, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__SeriesResponse res = QUERIER__V1__SERIES_RESPONSE__INIT;
    Types__V1__Labels **v = alloc_ptrs(arena, n);
    Types__V1__Labels *l = ps_arena_alloc(arena, (n + 1) * sizeof(*l));
    for (uint32_t i = 0; i < n; i++) {
        l[i] = (Types__V1__Labels)TYPES__V1__LABELS__INIT;
        l[i].n_labels = sets[i].n;
        l[i].labels = label_pairs(&sets[i], arena);
        v[i] = &l[i];
    }
    res.n_labels_set = n;
    res.labels_set = v;
    ps_pb_encode_api(codec, &res.base, out);
}

static Querier__V1__Level **levels(const ps_qr_flamegraph_t *fg, ps_arena_t *arena)
{
    Querier__V1__Level **v = alloc_ptrs(arena, fg->nlevels);
    Querier__V1__Level *l = ps_arena_alloc(arena, (fg->nlevels + 1) * sizeof(*l));
    for (uint32_t i = 0; i < fg->nlevels; i++) {
        l[i] = (Querier__V1__Level)QUERIER__V1__LEVEL__INIT;
        l[i].n_values = fg->level_n[i];
        l[i].values = fg->levels[i];
        v[i] = &l[i];
    }
    return v;
}

/* the fields FlameGraph and FlameGraphDiff share, set in g (either struct) */
#define SET_GRAPH(g, fg, arena)                                                                                        \
    do {                                                                                                               \
        (g).n_names = (fg)->nnames;                                                                                    \
        (g).names = (char **)(fg)->names;                                                                              \
        (g).n_levels = (fg)->nlevels;                                                                                  \
        (g).levels = levels((fg), (arena));                                                                            \
        (g).total = (fg)->total;                                                                                       \
        (g).max_self = (fg)->max_self;                                                                                 \
    } while (0)

void ps_qr_encode_flamegraph(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__FlameGraph g = QUERIER__V1__FLAME_GRAPH__INIT;
    SET_GRAPH(g, fg, arena);
    Querier__V1__SelectMergeStacktracesResponse res = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
    res.flamegraph = &g;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_qr_encode_diff(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__FlameGraphDiff g = QUERIER__V1__FLAME_GRAPH_DIFF__INIT;
    SET_GRAPH(g, fg, arena);
    g.leftticks = fg->left_ticks;
    g.rightticks = fg->right_ticks;
    Querier__V1__DiffResponse res = QUERIER__V1__DIFF_RESPONSE__INIT;
    res.flamegraph = &g;
    ps_pb_encode_api(codec, &res.base, out);
}

/* ---- TREE: Pyroscope's tree bytes (pkg/model/tree.go, FunctionNameTree.MarshalTruncate) ----
 *
 * Pre-order from a virtual root (name "", self 0), each node's children pushed on a stack in name
 * order (bytewise) and so written last first; per node:
 *
 *   uvarint len(name) | name | uvarint self | uvarint number of children
 *
 * Made from the flame graph (already cut to max_nodes, with its "other" nodes): its root "total"
 * is the virtual root. Two siblings of the same name (a function called "other" beside the cut
 * ones) are written as one when one of them has no children (Pyroscope's insert merges them). */

typedef struct tnode {
    const char *name;
    int64_t self;
    uint32_t level, first, n; /* children: level + 1, [first, first + n) */
} tnode_t;

typedef struct kid {
    const char *name;
    uint32_t i;
} kid_t;

static int cmp_kid(const void *a, const void *b)
{
    return strcmp(((const kid_t *)a)->name, ((const kid_t *)b)->name);
}

/* The nodes of each level with their children ranges, from the delta-encoded levels. */
static int tree_nodes(const ps_qr_flamegraph_t *fg, ps_arena_t *arena, tnode_t **lv, uint32_t *cnt, ps_err_t *err)
{
    for (uint32_t l = 0; l < fg->nlevels; l++) {
        uint32_t n = fg->level_n[l] / 4;
        cnt[l] = n;
        lv[l] = ps_arena_calloc(arena, n + 1, sizeof(tnode_t));
        const int64_t *v = fg->levels[l];
        for (uint32_t i = 0; i < n; i++) {
            if (v[4 * i + 3] < 0 || (uint64_t)v[4 * i + 3] >= fg->nnames)
                return ps_err_set(err, PS_EINTERNAL, "flame graph level %u node %u: name index out of range", l, i);
            lv[l][i] = (tnode_t){fg->names[v[4 * i + 3]], v[4 * i + 2], l, 0, 0};
        }
    }
    /* children: a parent's are the next level's nodes whose start is within it, in order */
    for (uint32_t l = 0; l + 1 < fg->nlevels; l++) {
        const int64_t *pv = fg->levels[l], *cv = fg->levels[l + 1];
        int64_t px = 0, cx = 0, pend = 0;
        uint32_t c = 0;
        for (uint32_t i = 0; i < cnt[l]; i++) {
            px = pend + pv[4 * i];
            pend = px + pv[4 * i + 1];
            lv[l][i].first = c;
            while (c < cnt[l + 1]) {
                int64_t x = cx + cv[4 * c];
                if (x >= pend)
                    break;
                cx = x + cv[4 * c + 1];
                c++;
            }
            lv[l][i].n = c - lv[l][i].first;
        }
    }
    return 0;
}

int ps_qr_encode_tree(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err)
{
    ps_buf_t tree = PS_BUF_INIT;
    int ret = 0;
    if (fg->nlevels > 0 && fg->total > 0) {
        tnode_t **lv = ps_arena_calloc(arena, fg->nlevels, sizeof(tnode_t *));
        uint32_t *cnt = ps_arena_calloc(arena, fg->nlevels, sizeof(uint32_t)), total = 0;
        if ((ret = tree_nodes(fg, arena, lv, cnt, err)) != 0)
            return ret;
        for (uint32_t l = 0; l < fg->nlevels; l++)
            total += cnt[l];
        /* the stack of (level, index) still to write */
        uint32_t *stack = ps_xmalloc(((size_t)total + 1) * 2 * sizeof(uint32_t)), sp = 0;
        kid_t *kids = ps_xmalloc(((size_t)total + 1) * sizeof(kid_t));
        stack[sp++] = 0;
        stack[sp++] = 0;
        while (sp > 0) {
            uint32_t i = stack[--sp], l = stack[--sp];
            const tnode_t *t = &lv[l][i];
            const char *name = l == 0 ? "" : t->name;
            int64_t self = t->self;
            uint32_t nk = 0;
            if (l + 1 < fg->nlevels) {
                tnode_t *c = lv[l + 1];
                for (uint32_t k = 0; k < t->n; k++)
                    kids[nk++] = (kid_t){c[t->first + k].name, t->first + k};
                qsort(kids, nk, sizeof(kid_t), cmp_kid);
                /* same-name siblings: a leaf folds into its namesake */
                uint32_t m = 0;
                for (uint32_t k = 0; k < nk; k++) {
                    uint32_t a = m > 0 ? kids[m - 1].i : 0, b = kids[k].i;
                    if (m > 0 && strcmp(c[a].name, c[b].name) == 0 && (c[a].n == 0 || c[b].n == 0)) {
                        uint32_t keep = c[b].n ? b : a, drop = keep == b ? a : b;
                        c[keep].self += c[drop].self;
                        kids[m - 1].i = keep;
                        continue;
                    }
                    kids[m++] = kids[k];
                }
                nk = m;
            }
            ps_put_uvarint(&tree, strlen(name));
            ps_buf_append(&tree, name, strlen(name));
            ps_put_uvarint(&tree, self < 0 ? 0 : (uint64_t)self);
            ps_put_uvarint(&tree, nk);
            for (uint32_t k = 0; k < nk; k++) {
                stack[sp++] = l + 1;
                stack[sp++] = kids[k].i;
            }
        }
        free(stack);
        free(kids);
    }
    Querier__V1__SelectMergeStacktracesResponse res = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
    res.tree.data = tree.data;
    res.tree.len = tree.len;
    ps_pb_encode_api(codec, &res.base, out);
    ps_buf_dispose(&tree);
    return 0;
}

/* our own pprof bytes as a google.v1.Profile message (no budget: they are ours) */
static int google_profile(const void *pprof, size_t n, ps_arena_t *arena, Google__V1__Profile **p, ps_err_t *err)
{
    ProtobufCMessage *m;
    int ret = ps_pb_decode(PS_PB_BINARY, pprof, n, &google__v1__profile__descriptor, arena, (size_t)1 << 40, &m, err);
    *p = ret == 0 ? (Google__V1__Profile *)m : NULL;
    return ret;
}

int ps_qr_encode_merge_pprof(int codec, const void *pprof, size_t n, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err)
{
    Google__V1__Profile *p;
    int ret = google_profile(pprof, n, arena, &p, err);
    if (ret != 0)
        return ret;
    Querier__V1__PprofProfile pp = QUERIER__V1__PPROF_PROFILE__INIT;
    pp.profile = p;
    Querier__V1__SelectMergeStacktracesResponse res = QUERIER__V1__SELECT_MERGE_STACKTRACES_RESPONSE__INIT;
    res.pprof = &pp;
    ps_pb_encode_api(codec, &res.base, out);
    return 0;
}

int ps_qr_encode_profile(int codec, const void *pprof, size_t n, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err)
{
    if (codec != PS_QR_JSON) {
        ps_buf_append(out, pprof, n); /* google.v1.Profile is perftools.profiles.Profile on the wire */
        return 0;
    }
    Google__V1__Profile *p;
    int ret = google_profile(pprof, n, arena, &p, err);
    if (ret == 0)
        ps_pb_encode_api(codec, &p->base, out);
    return ret;
}

/* The label messages of the last exemplar labels made: exemplars of one series share its labels
 * (the same pairs), and so their messages (read only while encoding). */
typedef struct label_cache {
    const ps_label_pair_t *src;
    Types__V1__LabelPair **msgs;
} label_cache_t;

/* n exemplars as types.v1.Exemplar messages */
static Types__V1__Exemplar **exemplars(const ps_qr_exemplar_t *in, uint32_t n, label_cache_t *lc, ps_arena_t *arena)
{
    Types__V1__Exemplar **ev = alloc_ptrs(arena, n);
    Types__V1__Exemplar *ex = ps_arena_alloc(arena, ((size_t)n + 1) * sizeof(*ex));
    for (uint32_t e = 0; e < n; e++) {
        ex[e] = (Types__V1__Exemplar)TYPES__V1__EXEMPLAR__INIT;
        ex[e].timestamp = in[e].t;
        if (in[e].has_uuid) {
            char *id = ps_arena_alloc(arena, 37);
            ps_uuid_text(in[e].uuid, id);
            id[36] = '\0';
            ex[e].profile_id = id;
        } else {
            ex[e].profile_id = (char *)(in[e].profile_id ? in[e].profile_id : "");
        }
        ex[e].value = in[e].value;
        ex[e].n_labels = in[e].labels.n;
        if (lc->src == NULL || lc->src != in[e].labels.pairs) {
            lc->src = in[e].labels.pairs;
            lc->msgs = label_pairs(&in[e].labels, arena);
        }
        ex[e].labels = lc->msgs;
        ev[e] = &ex[e];
    }
    return ev;
}

/* ---- SelectSeriesResponse in binary, written directly: an answer with exemplars holds ~150,000
 * nested messages, which protobuf-c's structs (and its sizing of each level again for every
 * ancestor) would cost more than reading the profiles. The bytes are protobuf-c's: proto3 fields at
 * their zero value (a double equal to 0, "", 0) are left out, fields in number order. */

static size_t uv_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* a length-delimited field of len bytes (tag < 16: one byte) */
static size_t ld_len(size_t len)
{
    return 1 + uv_len(len) + len;
}

/* the writers below write into room reserved before (the answer's exact size) */
static inline uint8_t *w_uv(uint8_t *w, uint64_t v)
{
    while (v >= 0x80) {
        *w++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *w++ = (uint8_t)v;
    return w;
}

static inline uint8_t *w_ld(uint8_t *w, unsigned field, const void *data, size_t len)
{
    *w++ = (uint8_t)(field << 3 | 2);
    w = w_uv(w, len);
    memcpy(w, data, len);
    return w + len;
}

static size_t pair_len(const ps_label_pair_t *p)
{
    return (p->nlen ? ld_len(p->nlen) : 0) + (p->vlen ? ld_len(p->vlen) : 0);
}

static size_t labels_len(const ps_labels_t *ls)
{
    size_t n = 0;
    for (uint32_t k = 0; k < ls->n; k++)
        n += ld_len(pair_len(&ls->pairs[k]));
    return n;
}

static uint8_t *w_labels(uint8_t *w, unsigned field, const ps_labels_t *ls)
{
    for (uint32_t k = 0; k < ls->n; k++) {
        const ps_label_pair_t *p = &ls->pairs[k];
        *w++ = (uint8_t)(field << 3 | 2);
        w = w_uv(w, pair_len(p));
        if (p->nlen)
            w = w_ld(w, 1, p->name, p->nlen);
        if (p->vlen)
            w = w_ld(w, 2, p->value, p->vlen);
    }
    return w;
}

/* The exemplars' labels (Exemplar field 5) encoded once per label set: the exemplars of a series
 * share its set (the same pairs), so the answer copies their bytes. Direct-mapped by the pairs'
 * address; a set pushed out is encoded again when met again. */
typedef struct lab_slot {
    const ps_label_pair_t *src;
    uint32_t n;
    uint32_t len;
    size_t off;
} lab_slot_t;

typedef struct lab_cache {
    lab_slot_t slot[256];
    lab_slot_t *last; /* the last one asked for (the next exemplar's, mostly) */
    ps_buf_t bytes;
} lab_cache_t;

static const lab_slot_t *lab_get(lab_cache_t *c, const ps_labels_t *ls)
{
    if (c->last != NULL && c->last->src == ls->pairs && c->last->n == ls->n)
        return c->last;
    uintptr_t k = (uintptr_t)ls->pairs;
    lab_slot_t *s = c->last = &c->slot[(k >> 4 ^ k >> 12) & 255];
    if (s->src != ls->pairs || s->n != ls->n) {
        size_t len = labels_len(ls);
        uint8_t *w = ps_buf_reserve(&c->bytes, len + 1);
        w_labels(w, 5, ls);
        *s = (lab_slot_t){ls->pairs, ls->n, (uint32_t)len, c->bytes.len};
        c->bytes.len += len;
    }
    return s;
}

/* an exemplar's id: its length (a UUID: 36), *text its characters unless it is a UUID */
static size_t exemplar_id(const ps_qr_exemplar_t *e, const char **text)
{
    *text = e->profile_id;
    if (e->has_uuid)
        return 36;
    return e->profile_id ? strnlen(e->profile_id, UINT32_MAX) : 0;
}

/* an exemplar's length, its labels' being lab and its id's id */
static size_t exemplar_len(const ps_qr_exemplar_t *e, size_t id, size_t lab)
{
    return (e->t ? 1 + uv_len((uint64_t)e->t) : 0) + (id ? ld_len(id) : 0) +
           (e->value ? 1 + uv_len((uint64_t)e->value) : 0) + lab;
}

static size_t point_len(const ps_qr_point_t *p, size_t ex)
{
    return (p->v != 0 ? 9 : 0) + (p->t ? 1 + uv_len((uint64_t)p->t) : 0) + (p->exemplar ? ld_len(ex) : 0);
}

static void select_series_binary(const ps_qr_series_src_t *src, ps_arena_t *arena, ps_buf_t *out)
{
    uint32_t n = src->n;
    /* the lengths: each series', then the answer's */
    size_t total = 0, *slen = ps_arena_alloc(arena, ((size_t)n + 1) * sizeof(size_t));
    lab_cache_t *lc = ps_arena_calloc(arena, 1, sizeof(*lc));
    ps_qr_point_t pt;
    ps_qr_exemplar_t ex;
    for (uint32_t i = 0; i < n; i++) {
        size_t sl = labels_len(src->labels(src->ctx, i));
        uint32_t np = src->npoints(src->ctx, i);
        for (uint32_t k = 0; k < np; k++) {
            src->point(src->ctx, i, k, &pt, &ex);
            const ps_qr_exemplar_t *e = pt.exemplar;
            size_t el = 0;
            if (e) {
                const char *text;
                el = exemplar_len(e, exemplar_id(e, &text), lab_get(lc, &e->labels)->len);
            }
            sl += ld_len(point_len(&pt, el));
        }
        slen[i] = sl;
        total += ld_len(sl);
    }
    uint8_t *w0 = ps_buf_reserve(out, total + 1), *w = w0;
    for (uint32_t i = 0; i < n; i++) {
        *w++ = 1 << 3 | 2;
        w = w_uv(w, slen[i]);
        w = w_labels(w, 1, src->labels(src->ctx, i));
        uint32_t np = src->npoints(src->ctx, i);
        for (uint32_t k = 0; k < np; k++) {
            src->point(src->ctx, i, k, &pt, &ex);
            const ps_qr_point_t *p = &pt;
            const ps_qr_exemplar_t *e = p->exemplar;
            const lab_slot_t *lab = NULL;
            const char *text = NULL;
            size_t el = 0, id = 0;
            if (e) {
                id = exemplar_id(e, &text);
                lab = lab_get(lc, &e->labels);
                el = exemplar_len(e, id, lab->len);
            }
            *w++ = 2 << 3 | 2;
            w = w_uv(w, point_len(p, el));
            if (p->v != 0) { /* protobuf-c leaves out 0.0 and -0.0 */
                uint64_t bits;
                memcpy(&bits, &p->v, 8);
                *w++ = 1 << 3 | 1;
                for (int j = 0; j < 8; j++)
                    *w++ = (uint8_t)(bits >> (8 * j)); /* little-endian, as the wire has it */
            }
            if (p->t) {
                *w++ = 2 << 3;
                w = w_uv(w, (uint64_t)p->t);
            }
            if (e) {
                *w++ = 4 << 3 | 2;
                w = w_uv(w, el);
                if (e->t) {
                    *w++ = 1 << 3;
                    w = w_uv(w, (uint64_t)e->t);
                }
                if (e->has_uuid) {
                    *w++ = 2 << 3 | 2;
                    *w++ = 36;
                    ps_uuid_text(e->uuid, (char *)w);
                    w += 36;
                } else if (id) {
                    w = w_ld(w, 2, text, id);
                }
                if (e->value) {
                    *w++ = 4 << 3;
                    w = w_uv(w, (uint64_t)e->value);
                }
                if (lab->len > 0) {
                    memcpy(w, lc->bytes.data + lab->off, lab->len);
                    w += lab->len;
                }
            }
        }
    }
    out->len += (size_t)(w - w0);
    ps_buf_dispose(&lc->bytes);
}

/* the source of an array of series (ps_qr_encode_select_series) */
static const ps_labels_t *arr_labels(void *ctx, uint32_t i)
{
    return &((const ps_qr_series_t *)ctx)[i].labels;
}

static uint32_t arr_npoints(void *ctx, uint32_t i)
{
    return ((const ps_qr_series_t *)ctx)[i].n;
}

static void arr_point(void *ctx, uint32_t i, uint32_t k, ps_qr_point_t *p, ps_qr_exemplar_t *ex)
{
    (void)ex;
    *p = ((const ps_qr_series_t *)ctx)[i].points[k];
}

static void select_series_json(int codec, const ps_qr_series_t *s, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__SelectSeriesResponse res = QUERIER__V1__SELECT_SERIES_RESPONSE__INIT;
    label_cache_t lc = {0};
    Types__V1__Series **v = alloc_ptrs(arena, n);
    Types__V1__Series *ser = ps_arena_alloc(arena, (n + 1) * sizeof(*ser));
    for (uint32_t i = 0; i < n; i++) {
        ser[i] = (Types__V1__Series)TYPES__V1__SERIES__INIT;
        ser[i].n_labels = s[i].labels.n;
        ser[i].labels = label_pairs(&s[i].labels, arena);
        Types__V1__Point **pv = alloc_ptrs(arena, s[i].n);
        Types__V1__Point *pt = ps_arena_alloc(arena, ((size_t)s[i].n + 1) * sizeof(*pt));
        for (uint32_t k = 0; k < s[i].n; k++) {
            pt[k] = (Types__V1__Point)TYPES__V1__POINT__INIT;
            pt[k].value = s[i].points[k].v;
            pt[k].timestamp = s[i].points[k].t;
            if (s[i].points[k].exemplar) {
                pt[k].n_exemplars = 1;
                pt[k].exemplars = exemplars(s[i].points[k].exemplar, 1, &lc, arena);
            }
            pv[k] = &pt[k];
        }
        ser[i].n_points = s[i].n;
        ser[i].points = pv;
        v[i] = &ser[i];
    }
    res.n_series = n;
    res.series = v;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_qr_encode_select_series(int codec, const ps_qr_series_t *s, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    if (codec != PS_QR_JSON) {
        ps_qr_series_src_t src = {n, (void *)s, arr_labels, arr_npoints, arr_point};
        select_series_binary(&src, arena, out);
        return;
    }
    select_series_json(codec, s, n, arena, out);
}

void ps_qr_encode_select_series_src(int codec, const ps_qr_series_src_t *src, ps_arena_t *arena, ps_buf_t *out)
{
    if (codec != PS_QR_JSON) {
        select_series_binary(src, arena, out);
        return;
    }
    /* JSON through protobuf-c's structs: the points made into arrays first */
    ps_qr_series_t *s = ps_arena_alloc(arena, ((size_t)src->n + 1) * sizeof(*s));
    for (uint32_t i = 0; i < src->n; i++) {
        uint32_t np = src->npoints(src->ctx, i);
        ps_qr_point_t *pt = ps_arena_alloc(arena, ((size_t)np + 1) * sizeof(*pt));
        ps_qr_exemplar_t *ex = ps_arena_alloc(arena, ((size_t)np + 1) * sizeof(*ex));
        for (uint32_t k = 0; k < np; k++)
            src->point(src->ctx, i, k, &pt[k], &ex[k]);
        s[i] = (ps_qr_series_t){*src->labels(src->ctx, i), np, pt};
    }
    select_series_json(codec, s, src->n, arena, out);
}

void ps_qr_encode_heatmap(int codec, const ps_qr_heatmap_series_t *s, uint32_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__SelectHeatmapResponse res = QUERIER__V1__SELECT_HEATMAP_RESPONSE__INIT;
    label_cache_t lc = {0};
    Types__V1__HeatmapSeries **v = alloc_ptrs(arena, n);
    Types__V1__HeatmapSeries *ser = ps_arena_alloc(arena, (n + 1) * sizeof(*ser));
    for (uint32_t i = 0; i < n; i++) {
        ser[i] = (Types__V1__HeatmapSeries)TYPES__V1__HEATMAP_SERIES__INIT;
        ser[i].n_labels = s[i].labels.n;
        ser[i].labels = label_pairs(&s[i].labels, arena);
        Types__V1__HeatmapSlot **sv = alloc_ptrs(arena, s[i].nslots);
        Types__V1__HeatmapSlot *sl = ps_arena_alloc(arena, ((size_t)s[i].nslots + 1) * sizeof(*sl));
        for (uint32_t k = 0; k < s[i].nslots; k++) {
            const ps_qr_heatmap_slot_t *in = &s[i].slots[k];
            sl[k] = (Types__V1__HeatmapSlot)TYPES__V1__HEATMAP_SLOT__INIT;
            sl[k].timestamp = in->t;
            sl[k].n_y_min = sl[k].n_counts = in->nbuckets;
            sl[k].y_min = (double *)in->y_min;
            sl[k].counts = (int32_t *)in->counts;
            sl[k].n_exemplars = in->nexemplars;
            sl[k].exemplars = exemplars(in->exemplars, in->nexemplars, &lc, arena);
            sv[k] = &sl[k];
        }
        ser[i].n_slots = s[i].nslots;
        ser[i].slots = sv;
        v[i] = &ser[i];
    }
    res.n_series = n;
    res.series = v;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_qr_encode_analyze(int codec, const ps_qr_query_scope_t *scopes, uint32_t n, uint64_t total_bytes,
                          uint64_t total_series, ps_arena_t *arena, ps_buf_t *out)
{
    Querier__V1__AnalyzeQueryResponse res = QUERIER__V1__ANALYZE_QUERY_RESPONSE__INIT;
    Querier__V1__QueryScope **v = alloc_ptrs(arena, n);
    Querier__V1__QueryScope *qs = ps_arena_alloc(arena, (n + 1) * sizeof(*qs));
    for (uint32_t i = 0; i < n; i++) {
        qs[i] = (Querier__V1__QueryScope)QUERIER__V1__QUERY_SCOPE__INIT;
        qs[i].component_type = (char *)scopes[i].component_type;
        qs[i].component_count = scopes[i].component_count;
        qs[i].block_count = scopes[i].block_count;
        qs[i].series_count = scopes[i].series_count;
        qs[i].profile_count = scopes[i].profile_count;
        qs[i].sample_count = scopes[i].sample_count;
        qs[i].index_bytes = scopes[i].index_bytes;
        qs[i].profile_bytes = scopes[i].profile_bytes;
        qs[i].symbol_bytes = scopes[i].symbol_bytes;
        v[i] = &qs[i];
    }
    Querier__V1__QueryImpact imp = QUERIER__V1__QUERY_IMPACT__INIT;
    imp.total_bytes_in_time_range = total_bytes;
    imp.total_queried_series = total_series;
    res.n_query_scopes = n;
    res.query_scopes = v;
    res.query_impact = &imp;
    ps_pb_encode_api(codec, &res.base, out);
}
