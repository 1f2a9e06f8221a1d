/*
 * fuzz_perf.c - libFuzzer target for the `perf script` parser (parser/perfscript.c): any input is
 * the text. A failure must be PS_EINVAL or PS_ETOOBIG with a message starting "line N: " (or the
 * one for no events); a success a profile within the limits, one distinct stack per sample, the
 * values adding up to the events, which are at most the header lines. Built by build.sh, run by
 * run.sh (seeds: the real capture of tests/testdata/perf and a few hand-written shapes).
 */
#include <stdint.h>
#include <string.h>

#include "parser/stacks.h"

#define PS_FUZZ_NAME "fuzz_perf"
#include "fuzzutil.h"

static const ps_stacks_limits_t lim = {.max_samples = 20000, .max_functions = 20000, .max_stack_depth = 128,
                                       .max_string_len = 4096, .max_frames = 1u << 20, .max_json_memory = 1u << 20};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err = {0};
    (void)ps_perf_detect(data, size);
    int rc = ps_perf_parse(data, size, &lim, &a, &p, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        CHECK(strncmp(err.msg, "line ", 5) == 0 || strncmp(err.msg, "no events", 9) == 0, "message %s", err.msg);
        ps_arena_dispose(&a);
        return 0;
    }
    uint64_t lines = 1, events = 0;
    for (size_t i = 0; i < size; i++)
        lines += data[i] == '\n';
    CHECK(p.ntypes == 1 && p.nsamples >= 1 && p.nsamples <= lim.max_samples, "%u samples", p.nsamples);
    for (uint32_t i = 0; i < p.nsamples; i++) {
        const ps_sample_t *s = &p.samples[i];
        CHECK(s->nlocs >= 1 && s->nlocs <= lim.max_stack_depth, "depth %u", s->nlocs);
        CHECK(s->values[0] >= 1, "value %lld", (long long)s->values[0]);
        events += (uint64_t)s->values[0];
        for (uint32_t k = 0; k < s->nlocs; k++)
            CHECK(s->locs[k] >= 1 && s->locs[k] <= p.nlocations, "location %u", s->locs[k]);
        for (uint32_t j = 0; j < i; j++) /* distinct stacks (few samples in a fuzz input) */
            CHECK(p.samples[j].nlocs != s->nlocs || memcmp(p.samples[j].locs, s->locs, s->nlocs * sizeof(uint32_t)) != 0,
                  "samples %u and %u have one stack", j, i);
    }
    CHECK(events <= lines, "%llu events in %llu lines", (unsigned long long)events, (unsigned long long)lines);
    ps_arena_dispose(&a);
    return 0;
}
