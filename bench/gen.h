/*
 * gen.h - deterministic generator of realistic Go CPU profiles for the benchmarks.
 *
 * The stacks, symbols and pprof labels are real: the six Go CPU fixtures
 * tests/testdata/pprof/go/cpu-01..05.pb.gz and cpu-seed2-01.pb.gz (found through env
 * PS_TESTDATA, else the path compiled in), decoded with ps_pprof_decode. Each generated
 * profile starts from one of them (picked at random) and varies its values:
 *
 *   - every sample is dropped with probability 1/10;
 *   - every other sample's count is scaled by a random factor in [0, 2) and rounded, so its
 *     cpu value stays a whole number of periods (10,000,000 ns); a count that rounds to 0 drops
 *     the sample too (so every sample of a generated profile is nonzero);
 *   - time_nanos = the profile's timestamp, duration_nanos = 10 s;
 *
 * then is encoded with ps_pprof_encode at gzip level 1 (Go's gzip.BestSpeed). Profile i of
 * series s has timestamp PS_BENCH_GEN_T0_NS + i * 10 s and depends only on (seed, s, i): the
 * same profile comes out whatever the number of series or profiles asked for.
 *
 * Profiles come out in time order, series interleaved: (i=0: s=0..series-1), (i=1: ...), ...
 */
#ifndef PS_BENCH_GEN_H
#define PS_BENCH_GEN_H

#include <stddef.h>
#include <stdint.h>

/* 2026-11-29T00:00:00Z: 24 h of 10 s profiles (8,640 per series) end at 2026-11-30T00:00:00Z */
#define PS_BENCH_GEN_T0_NS (1795910400LL * 1000000000LL)
#define PS_BENCH_GEN_STEP_NS (10LL * 1000000000LL)
#define PS_BENCH_GEN_NBASES 6

/**
 * Generates profiles_per_series profiles for each of `series` series and calls cb for each (in
 * the order above). pprof_gz is valid only during the call; nsamples is its number of samples
 * (all nonzero). A nonzero return from cb stops the generation and is returned. Returns 0, or -1
 * if the fixtures cannot be read/decoded or encoding fails (message on stderr).
 */
int ps_bench_gen(uint32_t series, uint32_t profiles_per_series, uint64_t seed,
                 int (*cb)(void *ctx, uint32_t series, int64_t ts_ns, const uint8_t *pprof_gz, size_t len,
                           uint32_t nsamples),
                 void *ctx);

/** What ps_bench_gen_ex tells about each profile, for checks (e.g. stored totals). */
typedef struct ps_bench_gen_info {
    uint32_t series, index;  /* index: 0..profiles_per_series-1 */
    int64_t ts_ns;
    uint32_t base;           /* which fixture (0..5: cpu-01..05, cpu-seed2-01) */
    uint32_t nsamples;       /* samples in the profile (all nonzero) */
    uint32_t nstacks;        /* distinct (stack, pprof labels) among them */
    int64_t total[2];        /* per sample type: samples/count, cpu/nanoseconds */
    const uint8_t *pprof_gz; /* valid during the call */
    size_t len;
} ps_bench_gen_info_t;

int ps_bench_gen_ex(uint32_t series, uint32_t profiles_per_series, uint64_t seed,
                    int (*cb)(void *ctx, const ps_bench_gen_info_t *info), void *ctx);

/** Names of the fixtures used as bases, in base order. */
extern const char *const ps_bench_gen_base_files[PS_BENCH_GEN_NBASES];

#endif
