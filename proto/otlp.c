/*
 * otlp.c - ExportProfilesServiceRequest (proto/otlp_profiles_service.proto) in, our own structs out
 * (otlp.h); ExportProfilesServiceResponse and google.rpc.Status out. Both codecs go through
 * pbjson.c (binary: a wire scan with field paths, then protobuf-c's unpack on the budgeted arena;
 * JSON: jansson with the OTLP hex rule for ids), so nesting (AnyValue arrays and lists inside each
 * other) is bounded at 32 levels there, and every allocation counts against the budget.
 *
 * The copy is shallow where it can be: repeated int32/int64 fields and strings point into the
 * decoded message (same arena); messages become our structs, one array per table.
 */
#include "otlp.h"

#include <string.h>

#include "otlp_profiles_service.pb-c.h"
#include "otlp_status.pb-c.h"
#include "pbjson.h"

typedef Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceRequest req_pb;
typedef Opentelemetry__Proto__Profiles__V1development__ProfilesDictionary dict_pb;
typedef Opentelemetry__Proto__Profiles__V1development__Profile profile_pb;
typedef Opentelemetry__Proto__Common__V1__AnyValue any_pb;
typedef Opentelemetry__Proto__Common__V1__KeyValue kv_pb;

static void *alloc_n(ps_arena_t *arena, size_t n, size_t size)
{
    return ps_arena_calloc(arena, n + 1, size);
}

/* AnyValue -> our value: strings, integers and string indexes; an array of one value is that value */
static void any_value(const any_pb *a, ps_otlp_value_t *v)
{
    memset(v, 0, sizeof(*v));
    if (a == NULL)
        return;
    switch (a->value_case) {
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE:
        v->kind = PS_OTLP_STR;
        v->s = a->string_value;
        v->len = strlen(a->string_value);
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_INT_VALUE:
        v->kind = PS_OTLP_INT;
        v->i = a->int_value;
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_STRING_VALUE_STRINDEX:
        v->kind = PS_OTLP_STRINDEX;
        v->i = a->string_value_strindex;
        break;
    case OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE:
        if (a->array_value != NULL && a->array_value->n_values == 1 &&
            a->array_value->values[0]->value_case != OPENTELEMETRY__PROTO__COMMON__V1__ANY_VALUE__VALUE_ARRAY_VALUE)
            any_value(a->array_value->values[0], v);
        break;
    default:
        break;
    }
}

static ps_otlp_kv_t *kvs(kv_pb *const *in, size_t n, ps_arena_t *arena)
{
    ps_otlp_kv_t *out = alloc_n(arena, n, sizeof(*out));
    for (size_t i = 0; i < n; i++) {
        out[i].key = in[i]->key;
        out[i].klen = strlen(in[i]->key);
        out[i].key_strindex = in[i]->key_strindex;
        any_value(in[i]->value, &out[i].v);
    }
    return out;
}

static void dictionary(const dict_pb *d, ps_arena_t *arena, ps_otlp_request_t *out)
{
    out->has_dictionary = true;
    out->nmappings = d->n_mapping_table;
    out->mappings = alloc_n(arena, d->n_mapping_table, sizeof(*out->mappings));
    for (size_t i = 0; i < d->n_mapping_table; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Mapping *m = d->mapping_table[i];
        out->mappings[i] = (ps_otlp_mapping_t){m->memory_start, m->memory_limit, m->file_offset, m->filename_strindex,
                                               m->attribute_indices, m->n_attribute_indices};
    }
    out->nlocations = d->n_location_table;
    out->locations = alloc_n(arena, d->n_location_table, sizeof(*out->locations));
    for (size_t i = 0; i < d->n_location_table; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Location *l = d->location_table[i];
        ps_otlp_location_t *o = &out->locations[i];
        o->mapping = l->mapping_index;
        o->address = l->address;
        o->nlines = l->n_lines;
        o->lines = alloc_n(arena, l->n_lines, sizeof(*o->lines));
        for (size_t k = 0; k < l->n_lines; k++)
            o->lines[k] = (ps_otlp_line_t){l->lines[k]->function_index, l->lines[k]->line, l->lines[k]->column};
    }
    out->nfunctions = d->n_function_table;
    out->functions = alloc_n(arena, d->n_function_table, sizeof(*out->functions));
    for (size_t i = 0; i < d->n_function_table; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Function *f = d->function_table[i];
        out->functions[i] =
            (ps_otlp_function_t){f->name_strindex, f->system_name_strindex, f->filename_strindex, f->start_line};
    }
    out->nlinks = d->n_link_table;
    out->links = alloc_n(arena, d->n_link_table, sizeof(*out->links));
    for (size_t i = 0; i < d->n_link_table; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Link *l = d->link_table[i];
        out->links[i] = (ps_otlp_link_t){l->trace_id.data, l->span_id.data, l->trace_id.len, l->span_id.len};
    }
    out->nstrings = d->n_string_table;
    out->strings = (const char *const *)d->string_table;
    out->nattrs = d->n_attribute_table;
    out->attrs = alloc_n(arena, d->n_attribute_table, sizeof(*out->attrs));
    for (size_t i = 0; i < d->n_attribute_table; i++) {
        out->attrs[i].key = d->attribute_table[i]->key_strindex;
        any_value(d->attribute_table[i]->value, &out->attrs[i].v);
    }
    out->nstacks = d->n_stack_table;
    out->stacks = alloc_n(arena, d->n_stack_table, sizeof(*out->stacks));
    for (size_t i = 0; i < d->n_stack_table; i++)
        out->stacks[i] = (ps_otlp_stack_t){d->stack_table[i]->location_indices, d->stack_table[i]->n_location_indices};
}

static void profile(const profile_pb *p, ps_arena_t *arena, ps_otlp_profile_t *o)
{
    if (p->sample_type != NULL) {
        o->has_sample_type = true;
        o->type = p->sample_type->type_strindex;
        o->unit = p->sample_type->unit_strindex;
    }
    if (p->period_type != NULL) {
        o->has_period_type = true;
        o->ptype = p->period_type->type_strindex;
        o->punit = p->period_type->unit_strindex;
    }
    o->period = p->period;
    o->time_unix_nano = p->time_unix_nano;
    o->duration_nano = p->duration_nano;
    o->attrs = p->attribute_indices;
    o->nattrs = p->n_attribute_indices;
    o->nsamples = p->n_samples;
    o->samples = alloc_n(arena, p->n_samples, sizeof(*o->samples));
    for (size_t i = 0; i < p->n_samples; i++) {
        const Opentelemetry__Proto__Profiles__V1development__Sample *s = p->samples[i];
        o->samples[i] = (ps_otlp_sample_t){s->stack_index, s->link_index,         s->attribute_indices,
                                           s->n_attribute_indices, s->values, s->n_values,
                                           s->n_timestamps_unix_nano};
    }
}

int ps_otlp_decode(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_otlp_request_t *out,
                   ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    ProtobufCMessage *m;
    int rc = ps_pb_decode_otlp(codec == PS_OTLP_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n,
                               &opentelemetry__proto__collector__profiles__v1development__export_profiles_service_request__descriptor,
                               arena, budget, &m, err);
    if (rc != 0)
        return rc;
    const req_pb *r = (const req_pb *)m;
    if (r->dictionary != NULL)
        dictionary(r->dictionary, arena, out);
    out->nresources = r->n_resource_profiles;
    out->resources = alloc_n(arena, r->n_resource_profiles, sizeof(*out->resources));
    for (size_t i = 0; i < r->n_resource_profiles; i++) {
        const Opentelemetry__Proto__Profiles__V1development__ResourceProfiles *rp = r->resource_profiles[i];
        ps_otlp_resource_t *ro = &out->resources[i];
        if (rp->resource != NULL) {
            ro->nattrs = rp->resource->n_attributes;
            ro->attrs = kvs(rp->resource->attributes, rp->resource->n_attributes, arena);
        }
        ro->nscopes = rp->n_scope_profiles;
        ro->scopes = alloc_n(arena, rp->n_scope_profiles, sizeof(*ro->scopes));
        for (size_t k = 0; k < rp->n_scope_profiles; k++) {
            const Opentelemetry__Proto__Profiles__V1development__ScopeProfiles *sp = rp->scope_profiles[k];
            ps_otlp_scope_t *so = &ro->scopes[k];
            if (sp->scope != NULL) {
                so->nattrs = sp->scope->n_attributes;
                so->attrs = kvs(sp->scope->attributes, sp->scope->n_attributes, arena);
            }
            so->nprofiles = sp->n_profiles;
            so->profiles = alloc_n(arena, sp->n_profiles, sizeof(*so->profiles));
            for (size_t p = 0; p < sp->n_profiles; p++)
                profile(sp->profiles[p], arena, &so->profiles[p]);
        }
    }
    return 0;
}

void ps_otlp_response(int codec, int64_t rejected, const char *msg, ps_buf_t *out)
{
    Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesServiceResponse r =
        OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_SERVICE_RESPONSE__INIT;
    Opentelemetry__Proto__Collector__Profiles__V1development__ExportProfilesPartialSuccess ps =
        OPENTELEMETRY__PROTO__COLLECTOR__PROFILES__V1DEVELOPMENT__EXPORT_PROFILES_PARTIAL_SUCCESS__INIT;
    if (rejected != 0 || msg != NULL) {
        ps.rejected_profiles = rejected;
        ps.error_message = (char *)(msg != NULL ? msg : "");
        r.partial_success = &ps;
    }
    ps_pb_encode(codec == PS_OTLP_JSON ? PS_PB_JSON : PS_PB_BINARY, &r.base, out);
}

void ps_otlp_status(int codec, int32_t grpc_code, const char *msg, ps_buf_t *out)
{
    Google__Rpc__Status s = GOOGLE__RPC__STATUS__INIT;
    s.code = grpc_code;
    s.message = (char *)(msg != NULL ? msg : "");
    ps_pb_encode(codec == PS_OTLP_JSON ? PS_PB_JSON : PS_PB_BINARY, &s.base, out);
}
