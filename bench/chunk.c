/*
 * chunk.c - bench_chunk: speed of the chunk codec (storage/chunk.h) on CPU-like chunks.
 *
 * Builds chunks of --profiles profiles (default 120, the compactor's default) over --nodes stack
 * nodes (default 3000), each node present in a profile with the probability of each --density
 * (default 0.3 and 1.0), values multiples of 10 ms as a 100 Hz CPU profile has them, profiles
 * 10 s apart. Prints, per density, the values and bytes of the chunk and the mean time of
 * ps_chunk_encode, ps_chunk_decode, ps_chunk_decode_meta and ps_chunk_sum_range over the middle
 * half of the profiles, each over --reps runs (default 50).
 *
 * Nothing is asserted: these are figures to compare between changes (they used to be printed by
 * a unit test, which ran in every unit and ASan run).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "storage/chunk.h"
#include "util.h"

/* A chunk like the compactor writes for a CPU profile series: arrays from arena. */
static void gen_chunk(ps_arena_t *a, ps_chunk_data_t *d, uint32_t n, uint32_t nnodes, double density)
{
    memset(d, 0, sizeof(*d));
    d->n = n;
    d->ts = ps_arena_alloc(a, n * sizeof(int64_t));
    d->durations = ps_arena_alloc(a, n * sizeof(int64_t));
    d->periods = ps_arena_alloc(a, n * sizeof(int64_t));
    d->totals = ps_arena_calloc(a, n, sizeof(int64_t));
    for (uint32_t i = 0; i < n; i++) {
        d->ts[i] = 1700000000ll * 1000000000 + (int64_t)i * 10000000000ll;
        d->durations[i] = 10000000000ll;
        d->periods[i] = 10000000;
    }
    size_t cap = (size_t)n * nnodes + 1;
    d->nnodes = nnodes;
    d->node_ids = ps_arena_alloc(a, nnodes * sizeof(uint64_t));
    d->off = ps_arena_alloc(a, (nnodes + 1) * sizeof(uint32_t));
    d->idx = ps_arena_alloc(a, cap * sizeof(uint32_t));
    d->val = ps_arena_alloc(a, cap * sizeof(int64_t));
    uint64_t id = 1 + ps_bench_rnd() % 1000;
    uint32_t nnz = 0;
    for (uint32_t j = 0; j < nnodes; j++) {
        id += 1 + ps_bench_rnd() % 10;
        d->node_ids[j] = id;
        d->off[j] = nnz;
        for (uint32_t i = 0; i < n; i++) {
            if (ps_bench_rnd_unit() >= density && !(i == n - 1 && nnz == d->off[j]))
                continue; /* every node has at least one value */
            d->idx[nnz] = i;
            d->val[nnz] = (int64_t)(1 + ps_bench_rnd() % 40) * 10000000;
            d->totals[i] += d->val[nnz];
            nnz++;
        }
    }
    d->off[nnodes] = nnz;
}

static void sink(void *ctx, uint64_t id, int64_t sum) { *(uint64_t *)ctx += id ^ (uint64_t)sum; }

typedef struct {
    uint64_t profiles, nodes, reps;
    double densities[16];
    int ndens;
} opts_t;

static int add_density(const ps_flag_t *fl, const char *val, void *dst, ps_err_t *err)
{
    opts_t *o = dst;
    char *end;
    double d = strtod(val, &end);
    if (*end || end == val || !(d > 0 && d <= 1))
        return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a number in (0, 1]", fl->name, val);
    if (o->ndens == 16)
        return ps_err_set(err, PS_EINVAL, "--%s: at most 16", fl->name);
    o->densities[o->ndens++] = d;
    return 0;
}

static const ps_flag_t flags[] = {
    {.name = "profiles", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, profiles), .metavar = "N", .def = "120",
     .min = 1, .max = PS_CHUNK_MAX_PROFILES, .help = "profiles per chunk (default 120; at most 65535)"},
    {.name = "nodes", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, nodes), .metavar = "N", .def = "3000",
     .min = 1, .max = UINT32_MAX, .help = "stack nodes (default 3000)"},
    {.name = "reps", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, reps), .metavar = "N", .def = "50", .min = 1,
     .max = UINT32_MAX, .help = "runs of each operation (default 50)"},
    {.name = "density", .type = PS_FLAG_FUNC, .metavar = "D", .set = add_density,
     .help = "share of profiles each node is present in, 0 < D <= 1; repeatable\n(default 0.3 and 1.0)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_chunk", "usage: bench_chunk [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    uint32_t n = (uint32_t)o.profiles, nnodes = (uint32_t)o.nodes, reps = (uint32_t)o.reps;
    double *densities = o.densities;
    int ndens = o.ndens;
    if (ndens == 0) {
        densities[ndens++] = 0.3;
        densities[ndens++] = 1.0;
    }
    ps_buf_t buf = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT, da = PS_ARENA_INIT;
    ps_err_t err;
    int status = 0;
    printf("chunk codec, %u profiles x %u nodes, CPU values (multiples of 10 ms), %u runs each:\n", n, nnodes, reps);
    for (int k = 0; k < ndens && status == 0; k++) {
        ps_arena_reset(&a);
        ps_chunk_data_t d, got;
        gen_chunk(&a, &d, n, nnodes, densities[k]);
        double t0 = ps_bench_now();
        for (uint32_t i = 0; i < reps && status == 0; i++) {
            ps_buf_reset(&buf);
            if (ps_chunk_encode(&d, &buf, &err) != 0)
                status = 1;
        }
        double t1 = ps_bench_now();
        for (uint32_t i = 0; i < reps && status == 0; i++) {
            ps_arena_reset(&da);
            if (ps_chunk_decode(buf.data, buf.len, &da, &got, &err) != 0)
                status = 1;
        }
        double t2 = ps_bench_now();
        for (uint32_t i = 0; i < reps && status == 0; i++) {
            ps_arena_reset(&da);
            if (ps_chunk_decode_meta(buf.data, buf.len, &da, &got, &err) != 0)
                status = 1;
        }
        double t3 = ps_bench_now();
        uint64_t x = 0;
        for (uint32_t i = 0; i < reps && status == 0; i++)
            if (ps_chunk_sum_range(buf.data, buf.len, n / 4, n - n / 4, sink, &x, &err) != 0)
                status = 1;
        double t4 = ps_bench_now();
        if (status) {
            fprintf(stderr, "bench_chunk: %s\n", err.msg);
            break;
        }
        uint32_t nnz = d.off[d.nnodes];
        printf("  density %.2f: %u values, %zu bytes (%.2f bytes/value); encode %.3f ms, decode %.3f ms, "
               "decode_meta %.4f ms, sum_range(%u..%u) %.3f ms\n",
               densities[k], nnz, buf.len, (double)buf.len / nnz, (t1 - t0) * 1e3 / reps, (t2 - t1) * 1e3 / reps,
               (t3 - t2) * 1e3 / reps, n / 4, n - n / 4, (t4 - t3) * 1e3 / reps);
    }
    ps_arena_dispose(&a);
    ps_arena_dispose(&da);
    ps_buf_dispose(&buf);
    return status;
}
