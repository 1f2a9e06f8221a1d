/*
 * recording.c - the settings.v1 RecordingRulesService codec (recording.h): protobuf-c structs of
 * proto/pyroscope_recording.proto to and from our own types, through pbjson.h's two codecs.
 * Example (binary), Upsert {metric_name "profiles_recorded_cpu", matchers ["{__profile_type__=\"x\"}"]}:
 *
 *   12 15 "profiles_recorded_cpu"  1a 16 "{__profile_type__=\"x\"}"
 */
#include "recording.h"

#include <string.h>

#include "pbjson.h"
#include "pyroscope_recording.pb-c.h"
#include "querier.h"

int ps_rr_decode_id(int codec, bool del, const void *data, size_t n, ps_arena_t *arena, size_t budget, const char **id,
                    ps_err_t *err)
{
    ProtobufCMessage *m;
    *id = "";
    int ret = ps_pb_decode_api(codec, data, n,
                     del ? &settings__v1__delete_recording_rule_request__descriptor
                         : &settings__v1__get_recording_rule_request__descriptor,
                     arena, budget, &m, err);
    if (ret == 0)
        *id = del ? ((const Settings__V1__DeleteRecordingRuleRequest *)m)->id
                  : ((const Settings__V1__GetRecordingRuleRequest *)m)->id;
    return ret;
}

int ps_rr_decode_list(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err)
{
    ProtobufCMessage *m;
    return ps_pb_decode_api(codec, data, n, &settings__v1__list_recording_rules_request__descriptor, arena, budget, &m, err);
}

static void labels_in(Types__V1__LabelPair **v, size_t n, ps_arena_t *arena, ps_rr_rule_t *r)
{
    r->next = n;
    r->ext = n ? ps_arena_alloc(arena, n * sizeof(*r->ext)) : NULL;
    for (size_t i = 0; i < n; i++)
        r->ext[i] = (ps_rr_label_t){v[i]->name, v[i]->value};
}

static void filter_in(const Settings__V1__StacktraceFilter *f, ps_rr_rule_t *r)
{
    r->has_function = f != NULL && f->function_name != NULL;
    r->function_name = r->has_function ? f->function_name->function_name : "";
}

int ps_rr_decode_upsert(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_rr_rule_t *r,
                        ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    int ret = ps_pb_decode_api(codec, data, n, &settings__v1__upsert_recording_rule_request__descriptor, arena, budget, &m, err);
    if (ret != 0)
        return ret;
    const Settings__V1__UpsertRecordingRuleRequest *q = (const void *)m;
    r->id = q->id;
    r->metric_name = q->metric_name;
    r->matchers = (const char **)q->matchers;
    r->nmatchers = q->n_matchers;
    r->group_by = (const char **)q->group_by;
    r->ngroup_by = q->n_group_by;
    labels_in(q->external_labels, q->n_external_labels, arena, r);
    r->generation = q->generation;
    filter_in(q->stacktrace_filter, r);
    return 0;
}

/* the protobuf-c parts of one rule, from arena */
typedef struct rule_parts {
    Settings__V1__StacktraceFilter filter;
    Settings__V1__StacktraceFilterFunctionName fn;
    Types__V1__LabelPair **lp;
} rule_parts_t;

static Types__V1__LabelPair **labels_out(const ps_rr_rule_t *r, ps_arena_t *arena)
{
    Types__V1__LabelPair **pv = ps_arena_alloc(arena, (r->next + 1) * sizeof(*pv));
    Types__V1__LabelPair *lv = ps_arena_alloc(arena, (r->next + 1) * sizeof(*lv));
    for (size_t i = 0; i < r->next; i++) {
        lv[i] = (Types__V1__LabelPair)TYPES__V1__LABEL_PAIR__INIT;
        lv[i].name = (char *)r->ext[i].name;
        lv[i].value = (char *)r->ext[i].value;
        pv[i] = &lv[i];
    }
    return pv;
}

static Settings__V1__StacktraceFilter *filter_out(const ps_rr_rule_t *r, ps_arena_t *arena)
{
    if (!r->has_function)
        return NULL;
    rule_parts_t *p = ps_arena_alloc(arena, sizeof(*p));
    p->filter = (Settings__V1__StacktraceFilter)SETTINGS__V1__STACKTRACE_FILTER__INIT;
    p->fn = (Settings__V1__StacktraceFilterFunctionName)SETTINGS__V1__STACKTRACE_FILTER_FUNCTION_NAME__INIT;
    p->fn.function_name = (char *)r->function_name;
    p->filter.function_name = &p->fn;
    return &p->filter;
}

static Settings__V1__RecordingRule *rule_out(const ps_rr_rule_t *r, ps_arena_t *arena)
{
    Settings__V1__RecordingRule *o = ps_arena_alloc(arena, sizeof(*o));
    *o = (Settings__V1__RecordingRule)SETTINGS__V1__RECORDING_RULE__INIT;
    o->id = (char *)r->id;
    o->metric_name = (char *)r->metric_name;
    o->profile_type = (char *)(r->profile_type ? r->profile_type : "");
    o->n_matchers = r->nmatchers;
    o->matchers = (char **)r->matchers;
    o->n_group_by = r->ngroup_by;
    o->group_by = (char **)r->group_by;
    o->n_external_labels = r->next;
    o->external_labels = labels_out(r, arena);
    o->generation = r->generation;
    o->stacktrace_filter = filter_out(r, arena);
    o->provisioned = r->provisioned;
    return o;
}

void ps_rr_encode_rule(int codec, bool get, const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out)
{
    if (get) {
        Settings__V1__GetRecordingRuleResponse res = SETTINGS__V1__GET_RECORDING_RULE_RESPONSE__INIT;
        res.rule = rule_out(r, arena);
        ps_pb_encode_api(codec, &res.base, out);
    } else {
        Settings__V1__UpsertRecordingRuleResponse res = SETTINGS__V1__UPSERT_RECORDING_RULE_RESPONSE__INIT;
        res.rule = rule_out(r, arena);
        ps_pb_encode_api(codec, &res.base, out);
    }
}

void ps_rr_encode_list(int codec, const ps_rr_rule_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Settings__V1__ListRecordingRulesResponse res = SETTINGS__V1__LIST_RECORDING_RULES_RESPONSE__INIT;
    Settings__V1__RecordingRule **pv = ps_arena_alloc(arena, (n + 1) * sizeof(*pv));
    for (size_t i = 0; i < n; i++)
        pv[i] = rule_out(&v[i], arena);
    res.n_rules = n;
    res.rules = pv;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_rr_encode_delete(int codec, ps_buf_t *out)
{
    Settings__V1__DeleteRecordingRuleResponse res = SETTINGS__V1__DELETE_RECORDING_RULE_RESPONSE__INIT;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_rr_store_encode(const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out)
{
    Settings__V1__RecordingRuleStore s = SETTINGS__V1__RECORDING_RULE_STORE__INIT;
    s.id = (char *)r->id;
    s.metric_name = (char *)r->metric_name;
    s.n_matchers = r->nmatchers;
    s.matchers = (char **)r->matchers;
    s.n_group_by = r->ngroup_by;
    s.group_by = (char **)r->group_by;
    s.n_external_labels = r->next;
    s.external_labels = labels_out(r, arena);
    s.generation = r->generation;
    s.stacktrace_filter = filter_out(r, arena);
    ps_pb_encode(PS_PB_BINARY, &s.base, out);
}

int ps_rr_store_decode(const void *data, size_t n, ps_arena_t *arena, ps_rr_rule_t *r, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(r, 0, sizeof(*r));
    /* a budget for any value that fits a record: many empty strings cost more than their bytes */
    size_t budget = n * 64 + ((size_t)64 << 10);
    if (ps_pb_decode(PS_PB_BINARY, data, n, &settings__v1__recording_rule_store__descriptor, arena, budget, &m, err) != 0) {
        char why[sizeof(err->msg)];
        memcpy(why, err->msg, sizeof(why));
        return ps_err_set(err, PS_ECORRUPT, "stored recording rule: %s", why);
    }
    const Settings__V1__RecordingRuleStore *s = (const void *)m;
    r->id = s->id;
    r->metric_name = s->metric_name;
    r->matchers = (const char **)s->matchers;
    r->nmatchers = s->n_matchers;
    r->group_by = (const char **)s->group_by;
    r->ngroup_by = s->n_group_by;
    labels_in(s->external_labels, s->n_external_labels, arena, r);
    r->generation = s->generation;
    filter_in(s->stacktrace_filter, r);
    return 0;
}
