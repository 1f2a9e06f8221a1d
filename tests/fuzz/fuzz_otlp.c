/*
 * fuzz_otlp.c - libFuzzer target for OTLP profiles: the codec (proto/otlp.c over proto/pbjson.c,
 * binary or OTLP JSON) and the converter (src/ingest/otlp.c) as POST /v1development/profiles
 * calls them, with a decoding budget and the default pprof limits.
 *
 * The first input byte picks the codec (bit 0: JSON); the rest is the body. A failure must be a
 * clean PS_EINVAL or PS_ETOOBIG with a message. A success must give appends whose profiles refer
 * only to what they hold (every string, mapping, function and location index in range, one value
 * per sample, a stack as long as its location list), every refusal counted with a message.
 * Seeds: tests/fuzz/corpus/fuzz_otlp/ (requests written by the integration tests' protoc classes).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/labels.h"
#include "ingest/ingest.h"

#define PS_FUZZ_NAME "fuzz_otlp"
#include "fuzzutil.h"

static void check_profile(const ps_profile_t *p)
{
    CHECK(p->nstrings >= 1 && p->strings[0].len == 0, "strings[0] is not empty");
    CHECK(p->ntypes == 1, "%u sample types", p->ntypes);
    for (uint32_t i = 0; i < p->ntypes; i++)
        CHECK(p->sample_types[i].type < p->nstrings && p->sample_types[i].unit < p->nstrings, "sample type %u", i);
    for (uint32_t i = 0; i < p->nmappings; i++)
        CHECK(p->mappings[i].filename < p->nstrings && p->mappings[i].build_id < p->nstrings, "mapping %u", i);
    for (uint32_t i = 0; i < p->nfunctions; i++) {
        const ps_function_t *f = &p->functions[i];
        CHECK(f->name < p->nstrings && f->system_name < p->nstrings && f->filename < p->nstrings, "function %u", i);
    }
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *l = &p->locations[i];
        CHECK(l->mapping <= p->nmappings, "location %u mapping %u of %u", i, l->mapping, p->nmappings);
        for (uint32_t k = 0; k < l->nlines; k++)
            CHECK(l->lines[k].function <= p->nfunctions, "location %u line %u", i, k);
    }
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *s = &p->samples[i];
        for (uint32_t k = 0; k < s->nlocs; k++)
            CHECK(s->locs[k] >= 1 && s->locs[k] <= p->nlocations, "sample %u loc %u", i, k);
        for (uint32_t k = 0; k < s->nlabels; k++)
            CHECK(s->labels[k].key >= 1 && s->labels[k].key < p->nstrings && s->labels[k].str < p->nstrings,
                  "sample %u label %u", i, k);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int codec = (data[0] & 1) ? PS_OTLP_JSON : PS_OTLP_PROTO;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_err_clear(&err);
    ps_otlp_result_t res;
    int rc = ps_ingest_otlp_decode(codec, data + 1, size - 1, (size - 1) * 32 + 65536, &lim, &a, &res, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
    } else {
        CHECK(res.rejected >= 0 && (size_t)res.rejected <= res.nprofiles, "rejected %lld of %zu",
              (long long)res.rejected, res.nprofiles);
        CHECK((res.rejected == 0) == (res.msg[0] == '\0'), "rejected %lld, message \"%s\"", (long long)res.rejected,
              res.msg);
        for (size_t i = 0; i < res.napps; i++) {
            const ps_append_t *app = res.apps[i].app;
            CHECK(app->nseries == 1, "append %zu: %u series", i, app->nseries);
            CHECK(res.apps[i].src < res.nprofiles, "append %zu from profile %u", i, res.apps[i].src);
            CHECK(i == 0 || res.apps[i - 1].app->ts <= app->ts, "appends not in time order at %zu", i);
            check_profile(app->profile);
        }
    }
    ps_arena_dispose(&a);
    return 0;
}
