/*
 * fuzz_fbjson.c - libFuzzer target for the flamebearer JSON parser (parser/flamebearer.c): any
 * input is a document. A failure must be PS_EINVAL or PS_ETOOBIG with a message; a success a
 * profile within the limits whose flame graph (src/render), written as flamebearer JSON again and
 * read back, is the same flame graph (what an upload of an export gives). Built by build.sh, run by
 * run.sh (seeds: flamebearer documents as profstore's render writes them, a cut one with "other").
 */
#include <stdint.h>
#include <string.h>

#include "parser/stacks.h"
#include "render/render.h"

#define PS_FUZZ_NAME "fuzz_fbjson"
#include "fuzzutil.h"

static const ps_stacks_limits_t lim = {.max_samples = 20000, .max_functions = 20000, .max_stack_depth = 128,
                                       .max_string_len = 4096, .max_frames = 1u << 20, .max_json_memory = 16u << 20};

static void check_profile(const ps_profile_t *p)
{
    CHECK(p->ntypes == 1, "%u types", p->ntypes);
    CHECK(p->nsamples <= lim.max_samples && p->nfunctions <= lim.max_functions, "limits");
    for (uint32_t i = 0; i < p->nsamples; i++) {
        CHECK(p->samples[i].nlocs >= 1 && p->samples[i].nlocs <= lim.max_stack_depth, "depth %u", p->samples[i].nlocs);
        CHECK(p->samples[i].values[0] > 0, "sample %u of value %lld", i, (long long)p->samples[i].values[0]);
        for (uint32_t k = 0; k < p->samples[i].nlocs; k++)
            CHECK(p->samples[i].locs[k] >= 1 && p->samples[i].locs[k] <= p->nlocations, "location %u",
                  p->samples[i].locs[k]);
    }
}

static bool same_fg(const ps_flamegraph_t *a, const ps_flamegraph_t *b)
{
    if (a->nnames != b->nnames || a->nlevels != b->nlevels || a->total != b->total || a->max_self != b->max_self)
        return false;
    for (uint32_t i = 0; i < a->nnames; i++)
        if (strcmp(a->names[i], b->names[i]) != 0)
            return false;
    for (uint32_t l = 0; l < a->nlevels; l++)
        if (a->levels[l].n != b->levels[l].n ||
            memcmp(a->levels[l].values, b->levels[l].values, a->levels[l].n * sizeof(int64_t)) != 0)
            return false;
    return true;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_fbjson_meta_t m;
    ps_err_t err = {0};
    int rc = ps_fbjson_parse(data, size, &lim, &a, &p, &m, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        ps_arena_dispose(&a);
        return 0;
    }
    check_profile(&p);
    ps_flamegraph_t fg, fg2;
    if (ps_flamegraph_build(&p, 0, 0, 0, &a, &fg, &err) == 0) {
        int64_t sum = 0;
        for (uint32_t i = 0; i < p.nsamples; i++)
            sum += p.samples[i].values[0];
        CHECK(fg.total == sum, "flame graph total %lld, values %lld", (long long)fg.total, (long long)sum);
        ps_fb_meta_t fm;
        ps_flamebearer_meta("t", "u", NULL, &fm);
        ps_buf_t out = PS_BUF_INIT;
        ps_flamebearer_json(&fg, &fm, NULL, NULL, 0, &out);
        ps_profile_t q;
        ps_fbjson_meta_t m2;
        rc = ps_fbjson_parse(out.data, out.len, &lim, &a, &q, &m2, &err);
        CHECK(rc == 0 || rc == PS_ETOOBIG, "its own export refused: %s", err.msg);
        if (rc == 0 && ps_flamegraph_build(&q, 0, 0, 0, &a, &fg2, &err) == 0)
            CHECK(same_fg(&fg, &fg2), "the flame graph of its export differs (%u/%u names, %u/%u levels)", fg.nnames,
                  fg2.nnames, fg.nlevels, fg2.nlevels);
        ps_buf_dispose(&out);
    }
    ps_arena_dispose(&a);
    return 0;
}
