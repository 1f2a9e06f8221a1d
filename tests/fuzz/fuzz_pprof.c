/*
 * fuzz_pprof.c - libFuzzer target for the pprof codec (proto/pprof.c).
 *
 * Decodes the input with the default limits (max_inflated lowered to 8 MiB to keep runs fast).
 * A failure must be a clean PS_EINVAL/PS_ETOOBIG with a message. Differential: the reference
 * decoder (ps_pprof_decode_reference, tests/support/: protobuf-c unpack + conversion) decodes the same bytes and
 * must give the same code, the same message and the same profile field by field -- unless
 * protobuf-c ran out of its allocation budget, which the direct decoder does not have. A success
 * is re-encoded (raw or gzipped, chosen by the input) and decoded again, which must succeed and
 * give back the same profile. Gunzip too is differential: ps_gunzip (libdeflate) and ps_gunzip_temp
 * (into the thread's buffer) must answer as ps_gunzip_zlib (zlib's streaming inflate) does, code,
 * message and bytes. Built and run by build.sh / run.sh in this folder.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/gzip.h"
#include "proto/pprof.h"
#include "pprof_reference.h"

#define PS_FUZZ_NAME "fuzz_pprof"
#include "fuzzutil.h"

static int str_eq(ps_str_t a, ps_str_t b) { return a.len == b.len && memcmp(a.ptr, b.ptr, a.len) == 0; }

static void check_equal(const ps_profile_t *a, const ps_profile_t *b)
{
    CHECK(a->nstrings == b->nstrings, "nstrings %u vs %u", a->nstrings, b->nstrings);
    for (uint32_t i = 0; i < a->nstrings; i++)
        CHECK(str_eq(a->strings[i], b->strings[i]) && a->strings[i].ptr[a->strings[i].len] == '\0' &&
                  b->strings[i].ptr[b->strings[i].len] == '\0',
              "string %u", i);
    CHECK(a->ntypes == b->ntypes, "ntypes");
    for (uint32_t i = 0; i < a->ntypes; i++)
        CHECK(a->sample_types[i].type == b->sample_types[i].type && a->sample_types[i].unit == b->sample_types[i].unit,
              "sample_type %u", i);
    CHECK(a->nmappings == b->nmappings, "nmappings");
    for (uint32_t i = 0; i < a->nmappings; i++) {
        const ps_mapping_t *x = &a->mappings[i], *y = &b->mappings[i];
        CHECK(x->memory_start == y->memory_start && x->memory_limit == y->memory_limit &&
                  x->file_offset == y->file_offset && x->filename == y->filename && x->build_id == y->build_id &&
                  x->flags == y->flags,
              "mapping %u", i);
    }
    CHECK(a->nfunctions == b->nfunctions, "nfunctions");
    for (uint32_t i = 0; i < a->nfunctions; i++) {
        const ps_function_t *x = &a->functions[i], *y = &b->functions[i];
        CHECK(x->name == y->name && x->system_name == y->system_name && x->filename == y->filename &&
                  x->start_line == y->start_line,
              "function %u", i);
    }
    CHECK(a->nlocations == b->nlocations, "nlocations");
    for (uint32_t i = 0; i < a->nlocations; i++) {
        const ps_location_t *x = &a->locations[i], *y = &b->locations[i];
        CHECK(x->mapping == y->mapping && x->address == y->address && x->is_folded == y->is_folded &&
                  x->nlines == y->nlines,
              "location %u", i);
        for (uint32_t k = 0; k < x->nlines; k++)
            CHECK(x->lines[k].function == y->lines[k].function && x->lines[k].line == y->lines[k].line &&
                      x->lines[k].column == y->lines[k].column,
                  "location %u line %u", i, k);
    }
    CHECK(a->nsamples == b->nsamples, "nsamples");
    for (uint32_t i = 0; i < a->nsamples; i++) {
        const ps_sample_t *x = &a->samples[i], *y = &b->samples[i];
        CHECK(x->nlocs == y->nlocs && x->nlabels == y->nlabels, "sample %u", i);
        for (uint32_t k = 0; k < x->nlocs; k++)
            CHECK(x->locs[k] == y->locs[k] && x->locs[k] >= 1 && x->locs[k] <= a->nlocations, "sample %u loc %u", i,
                  k);
        for (uint32_t k = 0; k < a->ntypes; k++)
            CHECK(x->values[k] == y->values[k], "sample %u value %u", i, k);
        for (uint32_t k = 0; k < x->nlabels; k++) {
            const ps_label_t *l = &x->labels[k], *m = &y->labels[k];
            CHECK(l->key == m->key && l->str == m->str && l->num == m->num && l->num_unit == m->num_unit,
                  "sample %u label %u", i, k);
        }
    }
    CHECK(a->period_type.type == b->period_type.type && a->period_type.unit == b->period_type.unit, "period_type");
    CHECK(a->period == b->period && a->time_nanos == b->time_nanos && a->duration_nanos == b->duration_nanos,
          "scalars");
    CHECK(a->default_sample_type == b->default_sample_type && a->drop_frames == b->drop_frames &&
              a->keep_frames == b->keep_frames && a->doc_url == b->doc_url,
          "string scalars");
    CHECK(a->ncomments == b->ncomments, "ncomments");
    for (uint32_t i = 0; i < a->ncomments; i++)
        CHECK(a->comments[i] == b->comments[i], "comment %u", i);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_pprof_limits_t lim;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_buf_t enc = PS_BUF_INIT;
    ps_profile_t p, q, r;
    ps_err_t err, rerr;

    ps_pprof_limits_default(&lim);
    lim.max_inflated = 8u << 20;
    ps_err_clear(&err);
    ps_err_clear(&rerr);
    {
        const uint8_t *g1 = NULL, *g2 = NULL;
        size_t n1 = 0, n2 = 0;
        int r1 = ps_gunzip(data, size, lim.max_inflated, &arena, &g1, &n1, &err);
        int r2 = ps_gunzip_zlib(data, size, lim.max_inflated, &arena, &g2, &n2, &rerr);
        CHECK(r1 == r2 && strcmp(err.msg, rerr.msg) == 0, "ps_gunzip %d \"%s\", zlib %d \"%s\"", r1, err.msg, r2,
              rerr.msg);
        CHECK(n1 == n2 && (n1 == 0 || memcmp(g1, g2, n1) == 0), "gunzip output %zu vs %zu bytes", n1, n2);
        const uint8_t *g3 = NULL; /* into the thread's buffer (ps_pprof_decode's): the same answer */
        size_t n3 = 0;
        ps_err_t terr;
        ps_err_clear(&terr);
        int r3 = ps_gunzip_temp(data, size, lim.max_inflated, &arena, &g3, &n3, &terr);
        CHECK(r3 == r2 && strcmp(terr.msg, rerr.msg) == 0, "ps_gunzip_temp %d \"%s\", zlib %d \"%s\"", r3, terr.msg,
              r2, rerr.msg);
        CHECK(n3 == n2 && (n3 == 0 || memcmp(g3, g2, n3) == 0), "gunzip_temp output %zu vs %zu bytes", n3, n2);
        ps_gunzip_temp_done();
        ps_arena_reset(&arena);
        ps_err_clear(&err);
        ps_err_clear(&rerr);
    }
    int rc = ps_pprof_decode(data, size, &lim, &arena, &p, &err);
    int rr = ps_pprof_decode_reference(data, size, &lim, &arena, &r, &rerr);
    if (!(rr == PS_ETOOBIG && strstr(rerr.msg, "decoding the profile needs more than") != NULL)) {
        CHECK(rc == rr && strcmp(err.msg, rerr.msg) == 0, "direct decoder %d \"%s\", reference %d \"%s\"", rc,
              err.msg, rr, rerr.msg);
        if (rc == 0)
            check_equal(&p, &r);
    }
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        goto Exit;
    }
    /* every index in range */
    for (uint32_t i = 0; i < p.nlocations; i++) {
        CHECK(p.locations[i].mapping <= p.nmappings, "location %u mapping", i);
        for (uint32_t k = 0; k < p.locations[i].nlines; k++)
            CHECK(p.locations[i].lines[k].function <= p.nfunctions, "location %u line %u function", i, k);
    }
    CHECK(p.ntypes >= 1 && p.nstrings >= 1 && p.strings[0].len == 0, "basic invariants");

    int level = size > 0 && (data[size - 1] & 1) ? 1 : -1;
    rc = ps_pprof_encode(&p, level, &enc, &err);
    CHECK(rc == 0, "encode failed: %s", err.msg);
    lim.max_inflated = SIZE_MAX / 4; /* the re-encoding may be a bit larger (1-element fields packed) */
    rc = ps_pprof_decode(enc.data, enc.len, &lim, &arena, &q, &err);
    CHECK(rc == 0, "decoding the re-encoded profile failed: %s", err.msg);
    check_equal(&p, &q);
Exit:
    ps_buf_dispose(&enc);
    ps_arena_dispose(&arena);
    return 0;
}
