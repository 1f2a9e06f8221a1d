/*
 * fuzz_adhoc.c - libFuzzer target for the ad hoc profile upload decoder (src/ingest/adhoc.c): format
 * detection (gzip, raw pprof, flamebearer JSON, perf script, folded stacks) and the folded parser of
 * pyroscope.c (the JSON and perf parsers have their own targets, fuzz_fbjson and fuzz_perf),
 * then what Get and Diff do with a decoded file: the flame graph of each sample type
 * (src/render), the pair of the profile with itself. The input is the uploaded file; its first
 * 64 bytes are also tried as a name (ps_adhoc_name) and an id (ps_adhoc_id_valid).
 *
 * Every failure must be PS_EINVAL or PS_ETOOBIG with a message naming the format ("gzip: ...",
 * "pprof: ...", "flamebearer JSON: ...", "perf script: ...", "folded stacks: ...") or what was wrong; a
 * success must give a profile whose flame graph total is the sum of its values (text formats), and a self-diff whose two sides are equal. Built by build.sh, run by
 * run.sh (seeds: the pprof fixtures, raw and gzipped, folded texts, a flamebearer document, the perf capture).
 */
#include <stdint.h>
#include <string.h>

#include "ingest/ingest.h"
#include "render/render.h"

#define PS_FUZZ_NAME "fuzz_adhoc"
#include "fuzzutil.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_inflated = 1u << 20;
    lim.max_samples = 100000;
    ps_profile_t p;
    ps_adhoc_format_t fmt;
    ps_err_t err = {0};
    int rc = ps_adhoc_decode(data, size, &lim, &a, &p, &fmt, NULL, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        CHECK(strncmp(err.msg, "pprof: ", 7) == 0 || strncmp(err.msg, "folded stacks: ", 15) == 0 ||
                  strncmp(err.msg, "flamebearer JSON: ", 18) == 0 || strncmp(err.msg, "perf script: ", 13) == 0 ||
                  strncmp(err.msg, "gzip: ", 6) == 0 || strcmp(err.msg, "the profile is empty") == 0,
              "an error that does not say the format: %s", err.msg);
    } else {
        CHECK(p.ntypes >= 1, "a profile without sample types");
        CHECK(fmt == PS_ADHOC_PPROF || p.ntypes == 1, "folded stacks of %u types", p.ntypes);
        const char **types = ps_adhoc_types(&p, &a);
        for (uint32_t vi = 0; vi < p.ntypes; vi++) {
            CHECK(types[vi] != NULL, "type %u has no name", vi);
            CHECK(ps_adhoc_type_index(&p, types[vi]) <= (int)vi, "type %s found after its index", types[vi]);
            int64_t sum = 0;
            for (uint32_t i = 0; i < p.nsamples; i++)
                sum = (int64_t)((uint64_t)sum + (uint64_t)p.samples[i].values[vi]);
            ps_flamegraph_t fg;
            if (ps_flamegraph_build(&p, vi, 0, 0, &a, &fg, &err) == 0 && fmt != PS_ADHOC_PPROF)
                CHECK(fg.total == sum, "flame graph total %lld, values sum %lld", (long long)fg.total, (long long)sum);
        }
        ps_profile_t pair;
        ps_adhoc_pair(&p, 0, &p, 0, &a, &pair);
        ps_flamegraph_t d;
        if (ps_flamegraph_build(&pair, 0, 1, 64, &a, &d, &err) == 0)
            CHECK(d.left_ticks == d.right_ticks, "self-diff of %lld and %lld", (long long)d.left_ticks,
                  (long long)d.right_ticks);
        int64_t lt;
        ps_adhoc_pair_sub(&pair, &lt);
        for (uint32_t i = 0; i < pair.nsamples / 2; i++)
            CHECK(pair.samples[i].values[0] == -pair.samples[i + pair.nsamples / 2].values[0], "sub of sample %u", i);
    }
    /* names and ids */
    size_t n = size < 64 ? size : 64;
    const char *name;
    if (ps_adhoc_name((const char *)data, n, &a, &name, &err) == 0) {
        const char *id = ps_adhoc_id(1733374800000, name, &a);
        CHECK(ps_adhoc_id_valid(id), "id %s of name %s is not valid", id, name);
        CHECK(strlen(id) == 27 + strlen(name), "id %s", id);
    }
    char *s = ps_arena_strndup(&a, (const char *)data, n);
    if (ps_adhoc_id_valid(s))
        for (size_t i = 0; s[i]; i++)
            CHECK(s[i] != '/' && s[i] != ' ', "id %s", s);
    ps_arena_dispose(&a);
    return 0;
}
