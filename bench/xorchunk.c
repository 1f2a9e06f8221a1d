/*
 * xorchunk.c - bench_xorchunk: size and speed of the float chunk codec (storage/xorchunk.h) on
 * node_exporter-like series.
 *
 * --series series (default 500) of each kind below, scraped every 15 s with a timestamp jitter of
 * up to --jitter-ms ms (repeatable; default 0 and 5: Prometheus stamps a scrape with its start, a
 * few ms off the schedule, unless told to align timestamps), cut into chunks of --samples samples
 * (default 120, PS_XOR_SAMPLES_PER_CHUNK). A jittered timestamp costs 16 bits instead of 1.
 * Prints, per kind and over all, bytes per sample (the 2-byte header included) and the mean
 * encode and decode time per sample over --reps runs (default 5). Gorilla's paper reports 1.37
 * bytes per sample over Facebook's series (second timestamps); Prometheus quotes 1.3 or so.
 *
 * Kinds: counters (cpu seconds in 1/100 s, bytes with random increments, a rarely moving
 * error counter), gauges (memory in pages, load average to 2 decimals, a temperature in 1/8 °C,
 * a random float), and constants (up, a boot time).
 *
 * Nothing is asserted: these are figures to compare between changes.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "storage/xorchunk.h"
#include "util.h"

enum { K_CPU, K_BYTES, K_ERRORS, K_MEM, K_LOAD, K_TEMP, K_RANDOM, K_UP, K_BOOT, NKINDS };

static const char *kind_name[NKINDS] = {
    "counter node_cpu_seconds_total (1/100 s)",  "counter node_network_receive_bytes_total",
    "counter node_network_receive_errs_total",   "gauge   node_memory_MemAvailable_bytes",
    "gauge   node_load1 (2 decimals)",           "gauge   node_hwmon_temp_celsius (1/8 C)",
    "gauge   random doubles",                    "const   up",
    "const   node_boot_time_seconds",
};

/* n values of one series of kind k */
static void gen_values(int k, double *v, uint32_t n)
{
    double x = 0;
    switch (k) {
    case K_CPU: x = (double)(ps_bench_rnd() % 10000000) / 100.0; break;
    case K_BYTES: x = (double)(ps_bench_rnd() % 1000000000000ull); break;
    case K_ERRORS: x = (double)(ps_bench_rnd() % 10); break;
    case K_MEM: x = 4096.0 * (double)(1000000 + ps_bench_rnd() % 1000000); break;
    case K_LOAD: x = 0.5 + ps_bench_rnd_unit() * 4; break;
    case K_TEMP: x = 40 + (double)(ps_bench_rnd() % 80) / 8.0; break;
    case K_BOOT: x = 1795000000.0 + (double)(ps_bench_rnd() % 1000000); break;
    default: break;
    }
    for (uint32_t i = 0; i < n; i++) {
        switch (k) {
        case K_CPU: /* 15 s of a mostly idle CPU: an idle-mode counter grows ~14.9 s +- noise */
            x = round((x + 14.5 + ps_bench_rnd_unit()) * 100.0) / 100.0;
            v[i] = x;
            break;
        case K_BYTES:
            x += (double)(ps_bench_rnd() % 2000000);
            v[i] = x;
            break;
        case K_ERRORS:
            x += ps_bench_rnd() % 200 == 0 ? 1 : 0;
            v[i] = x;
            break;
        case K_MEM:
            if (ps_bench_rnd() % 4 == 0)
                x += 4096.0 * ((double)(ps_bench_rnd() % 2001) - 1000);
            v[i] = x;
            break;
        case K_LOAD: /* exponentially damped, printed with 2 decimals */
            x = x * 0.78 + 0.22 * ps_bench_rnd_unit() * 4;
            v[i] = round(x * 100.0) / 100.0;
            break;
        case K_TEMP:
            if (ps_bench_rnd() % 3 == 0)
                x += ((double)(ps_bench_rnd() % 3) - 1) / 8.0;
            v[i] = x;
            break;
        case K_RANDOM: v[i] = ps_bench_rnd_unit() * 1000.0; break;
        case K_UP: v[i] = 1.0; break;
        default: v[i] = x; break;
        }
    }
}

typedef struct {
    uint64_t series, samples, reps;
    uint32_t jitters[16], njit;
} opts_t;

static int add_jitter(const ps_flag_t *fl, const char *val, void *dst, ps_err_t *err)
{
    opts_t *o = dst;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(val, &end, 10);
    if (errno || *end || end == val || val[0] == '-' || v > 7000)
        return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a number in range (0 .. 7000)", fl->name, val);
    if (o->njit == 16)
        return ps_err_set(err, PS_EINVAL, "--%s: at most 16", fl->name);
    o->jitters[o->njit++] = (uint32_t)v;
    return 0;
}

static const ps_flag_t flags[] = {
    {.name = "series", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, series), .metavar = "N", .def = "500",
     .min = 1, .max = UINT32_MAX, .help = "series of each kind (default 500)"},
    {.name = "samples", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, samples), .metavar = "N", .def = "120",
     .min = 1, .max = PS_XOR_MAX_SAMPLES, .help = "samples per chunk (default 120; at most 65535)"},
    {.name = "jitter-ms", .type = PS_FLAG_FUNC, .metavar = "N", .set = add_jitter,
     .help = "timestamps up to N ms off the 15 s schedule (at most 7000);\nrepeatable (default 0 and 5)"},
    {.name = "reps", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, reps), .metavar = "N", .def = "5", .min = 1,
     .max = UINT32_MAX, .help = "runs of encoding and decoding (default 5)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_xorchunk", "usage: bench_xorchunk [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

static int run(uint32_t nser, uint32_t n, uint32_t jitter, uint32_t reps);

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    uint32_t nser = (uint32_t)o.series, n = (uint32_t)o.samples, *jitters = o.jitters, njit = o.njit,
             reps = (uint32_t)o.reps;
    if (njit == 0) {
        jitters[njit++] = 0;
        jitters[njit++] = 5;
    }
    for (uint32_t j = 0; j < njit; j++)
        if (run(nser, n, jitters[j], reps) != 0)
            return 1;
    printf("(Gorilla's paper: 1.37 bytes/sample)\n");
    return 0;
}

static int run(uint32_t nser, uint32_t n, uint32_t jitter, uint32_t reps)
{
    size_t total = (size_t)nser * n;
    int64_t *ts = ps_xmalloc(total * sizeof(int64_t));
    double *vals = ps_xmalloc(total * sizeof(double));
    size_t *off = ps_xmalloc((nser + 1) * sizeof(size_t));
    ps_buf_t buf = PS_BUF_INIT;
    ps_err_t err;
    double all_bytes = 0, all_enc = 0, all_dec = 0;
    uint64_t sink = 0;
    printf("float chunk codec: %u series per kind, chunks of %u samples, 15 s scrapes +- %u ms, %u runs:\n", nser, n,
           jitter, reps);
    printf("  %-42s %11s %12s %12s\n", "kind", "bytes/sample", "encode ns/s", "decode ns/s");
    for (int k = 0; k < NKINDS; k++) {
        for (uint32_t s = 0; s < nser; s++) {
            int64_t t0 = 1796021924802 + (int64_t)(ps_bench_rnd() % 15000);
            for (uint32_t i = 0; i < n; i++)
                ts[(size_t)s * n + i] = t0 + 15000 * (int64_t)i + (jitter ? (int64_t)(ps_bench_rnd() % (2 * jitter + 1)) - jitter : 0);
            gen_values(k, vals + (size_t)s * n, n);
        }
        double e0 = ps_bench_now();
        for (uint32_t r = 0; r < reps; r++) {
            ps_buf_reset(&buf);
            for (uint32_t s = 0; s < nser; s++) {
                off[s] = buf.len;
                ps_xor_app_t a;
                ps_xor_app_init(&a, &buf);
                for (uint32_t i = 0; i < n; i++)
                    if (ps_xor_app_append(&a, ts[(size_t)s * n + i], vals[(size_t)s * n + i], &err) != 0) {
                        fprintf(stderr, "bench_xorchunk: %s\n", err.msg);
                        return 1;
                    }
            }
            off[nser] = buf.len;
        }
        double e1 = ps_bench_now();
        for (uint32_t r = 0; r < reps; r++) {
            for (uint32_t s = 0; s < nser; s++) {
                ps_xor_iter_t it;
                ps_xor_iter_init(&it, buf.data + off[s], off[s + 1] - off[s]);
                while (ps_xor_iter_next(&it))
                    sink += (uint64_t)it.t ^ (uint64_t)it.v;
                if (ps_xor_iter_err(&it, &err) != 0 || it.i != n) {
                    fprintf(stderr, "bench_xorchunk: series %u: %s\n", s, err.msg);
                    return 1;
                }
            }
        }
        double e2 = ps_bench_now();
        double enc = (e1 - e0) * 1e9 / ((double)reps * total), dec = (e2 - e1) * 1e9 / ((double)reps * total);
        printf("  %-42s %11.3f %12.1f %12.1f\n", kind_name[k], (double)buf.len / total, enc, dec);
        all_bytes += (double)buf.len;
        all_enc += enc;
        all_dec += dec;
    }
    printf("  %-42s %11.3f %12.1f %12.1f\n", "all kinds, equally many series", all_bytes / ((double)total * NKINDS),
           all_enc / NKINDS, all_dec / NKINDS);
    if (sink == 42)
        printf(" ");
    free(ts);
    free(vals);
    free(off);
    ps_buf_dispose(&buf);
    return 0;
}
