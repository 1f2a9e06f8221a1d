/*
 * floatcodec.c - bench_floatcodec: bytes per sample of the closed float chunk codecs on the
 * series of bench_remote_write's generator (bench/rwgen.c), without a server: Prometheus' XOR
 * chunk (storage/xorchunk.h, what schema 3 stores) and the dense chunk (storage/float_dense.h, schema
 * 4's closed chunks), plus either deflated (zlib level 6) for comparison.
 *
 *   bench_floatcodec [--series N (1000)] [--rounds R (120)] [--samples S (120)] [--values node|cpu]
 *
 * R rounds of N series, cut into chunks of S samples (the last one shorter). Prints, per group
 * of the node mix (rwgen.h) and over all, the chunk bytes per sample of each codec (encoding
 * bytes and packed entry bounds not counted), and checks every dense chunk: it decodes to the
 * same bits and transcodes to the same XOR chunk bytes (exit 1 if not). Also the encode,
 * decode and transcode time per sample.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "core/mem.h"
#include "rwgen.h"
#include "storage/float_dense.h"
#include "storage/xorchunk.h"
#include "util.h"

static int on_request(void *ctx, const uint8_t *body, size_t len, uint32_t shard)
{
    (void)ctx, (void)body, (void)len, (void)shard;
    return 0;
}

enum { G_CPU, G_NET, G_CONST, G_MEM, G_COUNTERS, G_RANDOM, G_ALL, NG };
static const char *gname[NG] = {"cpu seconds (0-31)",       "network counters (32-79)", "constant gauges (80-119)",
                                "memory/fs gauges (120-159)", "disk/vmstat/netstat (160-189)",
                                "collector durations (190-199)", "all"};

static int group_of(uint32_t i, ps_bench_rw_values_t values)
{
    uint32_t k = i % 200;
    if (values == PS_BENCH_RW_CPU)
        return k < 128 ? G_CPU : k < 176 ? G_NET : G_MEM;
    return k < 32 ? G_CPU : k < 80 ? G_NET : k < 120 ? G_CONST : k < 160 ? G_MEM : k < 190 ? G_COUNTERS : G_RANDOM;
}

static size_t deflated(const uint8_t *p, size_t n)
{
    uLongf cap = compressBound(n);
    uint8_t *o = ps_xmalloc(cap);
    compress2(o, &cap, p, n, 6);
    free(o);
    return cap;
}

typedef struct {
    uint64_t series, rounds, samples;
    const char *values;
} opts_t;

static const char *const value_mixes[] = {"node", "cpu", NULL};

static const ps_flag_t flags[] = {
    {.name = "series", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, series), .metavar = "N", .def = "1000",
     .min = 1, .max = UINT32_MAX, .help = "series (default 1000)"},
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, rounds), .metavar = "R", .def = "120",
     .min = 1, .max = UINT32_MAX, .help = "scrapes of every series (default 120)"},
    {.name = "samples", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, samples), .metavar = "S", .def = "120",
     .min = 1, .max = PS_XOR_MAX_SAMPLES, .help = "samples per chunk (default 120; at most 65535)"},
    {.name = "values", .type = PS_FLAG_ENUM, .offset = offsetof(opts_t, values), .metavar = "node|cpu",
     .def = "node", .choices = value_mixes, .help = "the generator's value mix (default node)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_floatcodec", "usage: bench_floatcodec [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    uint32_t series = (uint32_t)o.series, rounds = (uint32_t)o.rounds, per = (uint32_t)o.samples;
    ps_bench_rw_values_t values = (ps_bench_rw_values_t)ps_bench_rw_values_parse(o.values);
    int64_t *t = ps_xmalloc((size_t)series * rounds * sizeof(*t));
    uint64_t *v = ps_xmalloc((size_t)series * rounds * sizeof(*v));
    ps_bench_rwgen_t g;
    ps_bench_rwgen_init(&g, series, 1000, 1796000000000ll, values);
    for (uint32_t r = 0; r < rounds; r++) {
        ps_bench_rwgen_round(&g, on_request, NULL);
        for (uint32_t i = 0; i < series; i++) {
            t[(size_t)i * rounds + r] = g.smp[i].t_ms;
            memcpy(&v[(size_t)i * rounds + r], &g.smp[i].v, 8);
        }
    }
    ps_bench_rwgen_dispose(&g);

    uint64_t xb[NG] = {0}, db[NG] = {0}, xz[NG] = {0}, dz[NG] = {0}, ns[NG] = {0};
    double enc = 0, dec = 0, trans = 0;
    ps_buf_t x = PS_BUF_INIT, d = PS_BUF_INIT, back = PS_BUF_INIT;
    int bad = 0;
    for (uint32_t i = 0; i < series; i++) {
        int gi = group_of(i, values);
        for (uint32_t from = 0; from < rounds; from += per) {
            uint32_t n = rounds - from < per ? rounds - from : per;
            const int64_t *ct = t + (size_t)i * rounds + from;
            const uint64_t *cv = v + (size_t)i * rounds + from;
            ps_buf_reset(&x);
            ps_xor_app_t a;
            ps_xor_app_init(&a, &x);
            for (uint32_t j = 0; j < n; j++) {
                double f;
                memcpy(&f, &cv[j], 8);
                ps_xor_app_append(&a, ct[j], f, NULL);
            }
            ps_buf_reset(&d);
            double t0 = ps_bench_now();
            ps_float_dense_encode(ct, cv, n, 0, &d);
            double t1 = ps_bench_now();
            int64_t *dt;
            uint64_t *dv;
            uint32_t dn;
            ps_err_t err;
            if (ps_float_dense_decode(d.data, d.len, 0, &dt, &dv, &dn, &err) != 0 || dn != n ||
                memcmp(dt, ct, n * 8) != 0 || memcmp(dv, cv, n * 8) != 0) {
                fprintf(stderr, "series %u chunk at %u: dense round trip failed\n", i, from);
                bad = 1;
            }
            double t2 = ps_bench_now();
            if (dn)
                free(dt), free(dv);
            ps_buf_reset(&back);
            double t3 = ps_bench_now();
            if (ps_float_dense_to_xor(d.data, d.len, 0, &back, &err) != 0 || back.len != x.len ||
                memcmp(back.data, x.data, x.len) != 0) {
                fprintf(stderr, "series %u chunk at %u: transcoding differs\n", i, from);
                bad = 1;
            }
            double t4 = ps_bench_now();
            enc += t1 - t0, dec += t2 - t1, trans += t4 - t3;
            size_t sz[4] = {x.len, d.len, deflated(x.data, x.len), deflated(d.data, d.len)};
            for (int k = 0; k < 2; k++) {
                int gg = k ? G_ALL : gi;
                xb[gg] += sz[0], db[gg] += sz[1], xz[gg] += sz[2], dz[gg] += sz[3], ns[gg] += n;
            }
        }
    }
    printf("bench_floatcodec: %u series (%s), %u rounds, chunks of %u samples\n", series,
           ps_bench_rw_values_name(values), rounds, per);
    printf("%-32s %10s %8s %8s %10s %10s\n", "group", "samples", "xor", "dense", "xor+zlib", "dense+zlib");
    for (int k = 0; k < NG; k++) {
        if (ns[k] == 0)
            continue;
        double n = (double)ns[k];
        printf("%-32s %10llu %8.3f %8.3f %10.3f %10.3f\n", gname[k], (unsigned long long)ns[k], xb[k] / n,
               db[k] / n, xz[k] / n, dz[k] / n);
    }
    double n = (double)ns[G_ALL];
    printf("dense encode %.1f ns/sample, decode %.1f ns/sample, transcode to xor %.1f ns/sample\n", enc / n * 1e9,
           dec / n * 1e9, trans / n * 1e9);
    ps_buf_dispose(&x);
    ps_buf_dispose(&d);
    ps_buf_dispose(&back);
    free(t);
    free(v);
    return bad;
}
