/*
 * pyroscope.c - push.v1.PushRequest to and from ps_pyro_push_t (see pyroscope.h), through the
 * generic codecs of pbjson.c. The decoded protobuf-c message lives in the caller's arena; our
 * structs point into it (strings and raw profiles are not copied again).
 *
 * Wire example (93 bytes; test_pbjson.c's test_push_request), one series with two labels and one
 * sample of 3 raw bytes:
 *
 *   0a 5b                          1 series, 91 bytes
 *     0a 17                          1 labels, 23 bytes
 *       0a 08 5f 5f 6e ... 5f 5f       1 name "__name__"
 *       12 0b 70 72 6f ... 75          2 value "process_cpu"
 *     0a 13 0a 0c "service_name" 12 03 "app"
 *     12 2b                          2 samples, 43 bytes
 *       0a 03 00 01 02                 1 raw_profile (a pprof, gzipped or not: 1f 8b ...)
 *       12 24 "7c9e6679-7425-40de-944b-e07fc1f90ae7"   2 ID
 *
 * The same as protojson: {"series":[{"labels":[{"name":"__name__","value":"process_cpu"},
 * {"name":"service_name","value":"app"}],"samples":[{"rawProfile":"AAEC","ID":"7c9e..."}]}]}
 */
#include "pyroscope.h"

#include <string.h>

#include "pbjson.h"
#include "pyroscope_push.pb-c.h"

typedef Push__V1__PushRequest pb_push_t;
typedef Push__V1__RawProfileSeries pb_series_t;
typedef Push__V1__RawSample pb_sample_t;
typedef Types__V1__LabelPair pb_label_t;

static int convert(const pb_push_t *m, ps_arena_t *arena, ps_pyro_push_t *out)
{
    out->nseries = m->n_series;
    out->series = m->n_series ? ps_arena_calloc(arena, m->n_series, sizeof(*out->series)) : NULL;
    for (size_t i = 0; i < m->n_series; i++) {
        const pb_series_t *s = m->series[i];
        ps_pyro_series_t *o = &out->series[i];
        o->nlabels = s->n_labels;
        o->labels = s->n_labels ? ps_arena_calloc(arena, s->n_labels, sizeof(*o->labels)) : NULL;
        for (size_t k = 0; k < s->n_labels; k++) {
            const pb_label_t *l = s->labels[k];
            o->labels[k].name = l->name;
            o->labels[k].nlen = strlen(l->name);
            o->labels[k].value = l->value;
            o->labels[k].vlen = strlen(l->value);
        }
        o->nsamples = s->n_samples;
        o->samples = s->n_samples ? ps_arena_calloc(arena, s->n_samples, sizeof(*o->samples)) : NULL;
        for (size_t k = 0; k < s->n_samples; k++) {
            o->samples[k].raw = s->samples[k]->raw_profile.data;
            o->samples[k].len = s->samples[k]->raw_profile.len;
            o->samples[k].id = s->samples[k]->id;
        }
    }
    return 0;
}

int ps_pyro_push_decode(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_pyro_push_t *out,
                        ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(out, 0, sizeof(*out));
    int rc = ps_pb_decode(codec == PS_PYRO_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n,
                          &push__v1__push_request__descriptor, arena, budget, &m, err);
    if (rc != 0)
        return rc;
    return convert((const pb_push_t *)m, arena, out);
}

void ps_pyro_push_encode(int codec, const ps_pyro_push_t *in, ps_buf_t *out)
{
    ps_arena_t a = PS_ARENA_INIT;
    pb_push_t m = PUSH__V1__PUSH_REQUEST__INIT;
    m.n_series = in->nseries;
    m.series = ps_arena_calloc(&a, in->nseries + 1, sizeof(*m.series));
    for (size_t i = 0; i < in->nseries; i++) {
        const ps_pyro_series_t *s = &in->series[i];
        pb_series_t *ps = ps_arena_calloc(&a, 1, sizeof(*ps));
        push__v1__raw_profile_series__init(ps);
        ps->n_labels = s->nlabels;
        ps->labels = ps_arena_calloc(&a, s->nlabels + 1, sizeof(*ps->labels));
        for (size_t k = 0; k < s->nlabels; k++) {
            pb_label_t *l = ps_arena_calloc(&a, 1, sizeof(*l));
            types__v1__label_pair__init(l);
            l->name = (char *)s->labels[k].name;
            l->value = (char *)s->labels[k].value;
            ps->labels[k] = l;
        }
        ps->n_samples = s->nsamples;
        ps->samples = ps_arena_calloc(&a, s->nsamples + 1, sizeof(*ps->samples));
        for (size_t k = 0; k < s->nsamples; k++) {
            pb_sample_t *x = ps_arena_calloc(&a, 1, sizeof(*x));
            push__v1__raw_sample__init(x);
            x->raw_profile.data = (uint8_t *)s->samples[k].raw;
            x->raw_profile.len = s->samples[k].len;
            if (s->samples[k].id != NULL)
                x->id = (char *)s->samples[k].id;
            ps->samples[k] = x;
        }
        m.series[i] = ps;
    }
    ps_pb_encode(codec == PS_PYRO_JSON ? PS_PB_JSON : PS_PB_BINARY, &m.base, out);
    ps_arena_dispose(&a);
}

void ps_pyro_push_response(int codec, ps_buf_t *out)
{
    Push__V1__PushResponse m = PUSH__V1__PUSH_RESPONSE__INIT;
    ps_pb_encode(codec == PS_PYRO_JSON ? PS_PB_JSON : PS_PB_BINARY, &m.base, out);
}
