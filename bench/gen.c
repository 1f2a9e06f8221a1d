/*
 * gen.c - see gen.h.
 */
#include "gen.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/pprof.h"
#include "util.h"

const char *const ps_bench_gen_base_files[PS_BENCH_GEN_NBASES] = {
    "pprof/go/cpu-01.pb.gz", "pprof/go/cpu-02.pb.gz", "pprof/go/cpu-03.pb.gz",
    "pprof/go/cpu-04.pb.gz", "pprof/go/cpu-05.pb.gz", "pprof/go/cpu-seed2-01.pb.gz",
};

typedef struct base {
    ps_profile_t p;
    uint32_t *group;   /* per sample: index of its distinct (stack, labels) */
    uint32_t ngroups;
    uint32_t count_type; /* index of the samples/count value */
} base_t;

static ps_arena_t g_arena = PS_ARENA_INIT;
static base_t g_bases[PS_BENCH_GEN_NBASES];
static int g_loaded; /* 0 no, 1 yes, -1 failed */
static pthread_mutex_t g_mu = PTHREAD_MUTEX_INITIALIZER;

static int same_key(const ps_sample_t *a, const ps_sample_t *b)
{
    if (a->nlocs != b->nlocs || a->nlabels != b->nlabels)
        return 0;
    if (memcmp(a->locs, b->locs, a->nlocs * sizeof(uint32_t)) != 0)
        return 0;
    for (uint32_t k = 0; k < a->nlabels; k++)
        if (a->labels[k].key != b->labels[k].key || a->labels[k].str != b->labels[k].str ||
            a->labels[k].num != b->labels[k].num || a->labels[k].num_unit != b->labels[k].num_unit)
            return 0;
    return 1;
}

static int load_bases(void)
{
    pthread_mutex_lock(&g_mu);
    if (g_loaded != 0) {
        pthread_mutex_unlock(&g_mu);
        return g_loaded > 0 ? 0 : -1;
    }
    g_loaded = -1;
    for (int b = 0; b < PS_BENCH_GEN_NBASES; b++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", ps_bench_testdata(), ps_bench_gen_base_files[b]);
        uint8_t *data;
        size_t n;
        if (ps_bench_read_file(path, &data, &n) != 0) {
            fprintf(stderr, "gen: cannot read %s (set PS_TESTDATA to the tests/testdata directory)\n", path);
            goto Exit;
        }
        ps_err_t err;
        ps_err_clear(&err);
        base_t *bs = &g_bases[b];
        int rc = ps_pprof_decode(data, n, NULL, &g_arena, &bs->p, &err);
        free(data);
        if (rc != 0) {
            fprintf(stderr, "gen: %s: %s\n", path, err.msg);
            goto Exit;
        }
        if (bs->p.ntypes != 2) {
            fprintf(stderr, "gen: %s: expected 2 sample types (samples/count, cpu/nanoseconds), got %u\n", path,
                    bs->p.ntypes);
            goto Exit;
        }
        bs->count_type = 0;
        for (uint32_t t = 0; t < bs->p.ntypes; t++) {
            ps_str_t u = ps_profile_str(&bs->p, bs->p.sample_types[t].unit);
            if (u.len == 5 && memcmp(u.ptr, "count", 5) == 0)
                bs->count_type = t;
        }
        /* distinct (stack, labels): quadratic, but a few hundred samples, once */
        bs->group = ps_arena_calloc(&g_arena, bs->p.nsamples + 1, sizeof(uint32_t));
        bs->ngroups = 0;
        for (uint32_t i = 0; i < bs->p.nsamples; i++) {
            uint32_t g = bs->ngroups;
            for (uint32_t j = 0; j < i; j++)
                if (same_key(&bs->p.samples[i], &bs->p.samples[j])) {
                    g = bs->group[j];
                    break;
                }
            if (g == bs->ngroups)
                bs->ngroups++;
            bs->group[i] = g;
        }
    }
    g_loaded = 1;
Exit:
    pthread_mutex_unlock(&g_mu);
    return g_loaded > 0 ? 0 : -1;
}

/* splitmix64: a small, good, seedable generator */
static inline uint64_t splitmix(uint64_t *s)
{
    uint64_t z = (*s += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

static inline double unit(uint64_t *s) { return (double)(splitmix(s) >> 11) * (1.0 / 9007199254740992.0); }

int ps_bench_gen_ex(uint32_t series, uint32_t profiles_per_series, uint64_t seed,
                    int (*cb)(void *ctx, const ps_bench_gen_info_t *info), void *ctx)
{
    if (load_bases() != 0)
        return -1;
    uint32_t maxs = 0;
    for (int b = 0; b < PS_BENCH_GEN_NBASES; b++)
        if (g_bases[b].p.nsamples > maxs)
            maxs = g_bases[b].p.nsamples;
    ps_sample_t *samples = ps_xcalloc(maxs + 1, sizeof(ps_sample_t));
    int64_t *values = ps_xcalloc((size_t)(maxs + 1) * 2, sizeof(int64_t));
    uint8_t *seen = ps_xcalloc(maxs + 1, 1);
    ps_buf_t out = PS_BUF_INIT;
    int ret = 0;

    for (uint32_t i = 0; i < profiles_per_series && ret == 0; i++) {
        for (uint32_t s = 0; s < series && ret == 0; s++) {
            /* the profile depends only on (seed, s, i) */
            uint64_t st = seed * 0xD1B54A32D192ED03ull ^ ((uint64_t)s << 32 | i);
            splitmix(&st);
            uint32_t b = (uint32_t)(splitmix(&st) % PS_BENCH_GEN_NBASES);
            const base_t *bs = &g_bases[b];
            const ps_profile_t *bp = &bs->p;
            ps_profile_t p = *bp;
            ps_bench_gen_info_t info = {.series = s, .index = i, .base = b};
            uint32_t n = 0, ct = bs->count_type;
            memset(seen, 0, bs->ngroups);
            for (uint32_t k = 0; k < bp->nsamples; k++) {
                const ps_sample_t *src = &bp->samples[k];
                double drop = unit(&st), f = 2.0 * unit(&st);
                int64_t c0 = src->values[ct];
                if (drop < 0.1 || c0 <= 0)
                    continue;
                int64_t c = (int64_t)((double)c0 * f + 0.5);
                if (c == 0)
                    continue;
                ps_sample_t *d = &samples[n];
                *d = *src;
                d->values = &values[(size_t)n * 2];
                for (uint32_t t = 0; t < 2; t++) {
                    d->values[t] = src->values[t] / c0 * c; /* cpu = count * period, exactly */
                    info.total[t] += d->values[t];
                }
                if (!seen[bs->group[k]]) {
                    seen[bs->group[k]] = 1;
                    info.nstacks++;
                }
                n++;
            }
            p.nsamples = n;
            p.samples = samples;
            info.ts_ns = PS_BENCH_GEN_T0_NS + (int64_t)i * PS_BENCH_GEN_STEP_NS;
            p.time_nanos = info.ts_ns;
            p.duration_nanos = PS_BENCH_GEN_STEP_NS;
            ps_buf_reset(&out);
            ps_err_t err;
            ps_err_clear(&err);
            if (ps_pprof_encode(&p, 1, &out, &err) != 0) {
                fprintf(stderr, "gen: encoding profile %u of series %u: %s\n", i, s, err.msg);
                ret = -1;
                break;
            }
            info.nsamples = n;
            info.pprof_gz = out.data;
            info.len = out.len;
            ret = cb(ctx, &info);
        }
    }
    ps_buf_dispose(&out);
    free(samples);
    free(values);
    free(seen);
    return ret;
}

typedef struct plain_ctx {
    int (*cb)(void *ctx, uint32_t series, int64_t ts_ns, const uint8_t *pprof_gz, size_t len, uint32_t nsamples);
    void *ctx;
} plain_ctx_t;

static int plain_cb(void *ctx, const ps_bench_gen_info_t *in)
{
    plain_ctx_t *c = ctx;
    return c->cb(c->ctx, in->series, in->ts_ns, in->pprof_gz, in->len, in->nsamples);
}

int ps_bench_gen(uint32_t series, uint32_t profiles_per_series, uint64_t seed,
                 int (*cb)(void *ctx, uint32_t series, int64_t ts_ns, const uint8_t *pprof_gz, size_t len,
                           uint32_t nsamples),
                 void *ctx)
{
    plain_ctx_t c = {cb, ctx};
    return ps_bench_gen_ex(series, profiles_per_series, seed, plain_cb, &c);
}
