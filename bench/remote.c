/*
 * remote.c - bench_remote: in-process cost of ps_remote_write_decode (snappy + protobuf +
 * validation into an arena) on the four remote-write bodies Prometheus 2.42 sent (testdata
 * prometheus/) and on a generated request like a Prometheus shard's: 2,000 node_exporter-like
 * series (node_cpu_seconds_total by cpu and mode, node_network_* by device, filesystem and disk
 * series; 5-7 labels each) with one sample each, encoded as 1.0 and as 2.0. Prints samples/s and
 * MB/s (of the snappy body and of the uncompressed protobuf), wall and CPU time per decode.
 *
 *   bench_remote [--rounds N]   (default 2000 decodes per body)
 *
 * Nothing is asserted but that every body decodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <snappy-c.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "rwgen.h"
#include "util.h"

/* 2,000 node_exporter-like series (rwgen.h's first mix, PS_BENCH_RW_CPU), one sample each, at
 * t = 1796021924802 + i ms. The labels are copied into a, so g can go. */
static void generate(ps_arena_t *a, ps_remote_write_t *w, uint32_t nseries)
{
    ps_bench_rwgen_t g;
    ps_bench_rwgen_init(&g, nseries, nseries, 0, PS_BENCH_RW_CPU);
    memset(w, 0, sizeof(*w));
    w->version = 1;
    w->series = ps_arena_calloc(a, nseries, sizeof(*w->series));
    w->nseries = nseries;
    for (uint32_t i = 0; i < nseries; i++) {
        ps_remote_series_t *s = &w->series[i];
        const ps_labels_t *gl = &g.all[i].labels;
        ps_label_pair_t *p = ps_arena_alloc(a, gl->n * sizeof(*p));
        for (uint32_t k = 0; k < gl->n; k++) {
            p[k].name = ps_arena_strndup(a, gl->pairs[k].name, gl->pairs[k].nlen);
            p[k].value = ps_arena_strndup(a, gl->pairs[k].value, gl->pairs[k].vlen);
            p[k].nlen = gl->pairs[k].nlen;
            p[k].vlen = gl->pairs[k].vlen;
        }
        s->labels = (ps_labels_t){gl->n, p, 0};
        s->samples = ps_arena_alloc(a, sizeof(*s->samples));
        s->samples[0].t_ms = 1796021924802LL + i;
        s->samples[0].v = (double)(i * 7919 % 100000) * 1.25;
        s->nsamples = 1;
        s->meta = -1;
        w->nsamples++;
    }
    ps_bench_rwgen_dispose(&g);
}

static int bench_body(const char *name, const uint8_t *body, size_t n, int version, uint64_t rounds)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    size_t ulen = 0;
    ps_err_clear(&err);
    if (ps_remote_write_decode(body, n, version, NULL, &a, &w, &err) != 0) {
        fprintf(stderr, "bench_remote: %s: %s\n", name, err.msg);
        ps_arena_dispose(&a);
        return 1;
    }
    snappy_uncompressed_length((const char *)body, n, &ulen);
    uint64_t nsamples = w.nsamples;
    double w0 = ps_bench_now(), c0 = ps_bench_self_cpu();
    for (uint64_t i = 0; i < rounds; i++) {
        ps_arena_reset(&a);
        ps_remote_write_decode(body, n, version, NULL, &a, &w, &err);
    }
    double dw = (ps_bench_now() - w0) / (double)rounds, dc = (ps_bench_self_cpu() - c0) / (double)rounds;
    printf("%-28s %4d %8zu %8zu %7llu %10.1f %10.1f %12.0f %8.1f %8.1f\n", name, version, n, ulen,
           (unsigned long long)nsamples, dw * 1e6, dc * 1e6, (double)nsamples / dc, (double)n / dc / 1e6,
           (double)ulen / dc / 1e6);
    ps_arena_dispose(&a);
    return 0;
}

typedef struct {
    uint64_t rounds;
} opts_t;

static const ps_flag_t flags[] = {
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, rounds), .metavar = "N", .def = "2000",
     .max = UINT64_MAX, .help = "decodes per body (default 2000)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_remote", "usage: bench_remote [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    uint64_t rounds = o.rounds;
    if (rounds == 0)
        rounds = 1;
    static const char *const files[] = {"remote-write-01.bin", "remote-write-02.bin", "remote-write-03.bin",
                                        "remote-write-metadata-01.bin"};
    printf("%-28s %4s %8s %8s %7s %10s %10s %12s %8s %8s\n", "body", "ver", "snappy", "raw", "samples", "wall us",
           "CPU us", "samples/s", "MB/s z", "MB/s raw");
    int status = 0;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char path[4096];
        uint8_t *data;
        size_t n;
        snprintf(path, sizeof(path), "%s/prometheus/%s", ps_bench_testdata(), files[f]);
        if (ps_bench_read_file(path, &data, &n) != 0) {
            fprintf(stderr, "bench_remote: cannot read %s\n", path);
            status = 1;
            continue;
        }
        status |= bench_body(files[f], data, n, 1, rounds);
        free(data);
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_remote_write_t w;
    generate(&a, &w, 2000);
    for (int version = 1; version <= 2; version++) {
        ps_buf_t body = PS_BUF_INIT;
        ps_err_t err;
        if (ps_remote_write_encode(&w, version, &body, &err) != 0) {
            fprintf(stderr, "bench_remote: encode: %s\n", err.msg);
            return 1;
        }
        status |= bench_body("generated 2000 node series", body.data, body.len, version, rounds / 10 ? rounds / 10 : 1);
        ps_buf_dispose(&body);
    }
    ps_arena_dispose(&a);
    return status;
}
