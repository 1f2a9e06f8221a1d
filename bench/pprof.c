/*
 * pprof.c - bench_pprof: in-process cost of ps_pprof_decode (gunzip + protobuf + validation into
 * an arena) and ps_pprof_encode (gzip level 1, as the query API answers) on the real Go and Node
 * fixtures, per call, wall and CPU time (CPU time is the steadier figure on a busy machine).
 * (Moved out of the proto unit test, which ran it in every unit and ASan run.)
 *
 *   bench_pprof [--rounds N]   (default 2000 decodes and 200 encodes per file)
 *
 * Nothing is asserted but that every fixture decodes.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/pprof.h"
#include "util.h"

static const char *const files[] = {
    "go/cpu-01.pb.gz",  "go/cpu-seed2-01.pb.gz", "go/heap-01.pb.gz",  "go/allocs-01.pb.gz",
    "go/block-01.pb.gz", "go/mutex-01.pb.gz",    "go/goroutine-01.pb.gz", "node/cpu-01.pb.gz",
    "node/wall-01.pb.gz", "node/heap-01.pb.gz",
};

int main(int argc, char **argv)
{
    uint64_t rounds = 2000;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--rounds") == 0 && i + 1 < argc) {
            rounds = ps_bench_num_arg("bench_pprof", "--rounds", argv[++i]);
        } else {
            fprintf(stderr, "usage: bench_pprof [--rounds N]\n");
            return 2;
        }
    }
    if (rounds == 0)
        rounds = 1;
    uint64_t erounds = rounds / 10 ? rounds / 10 : 1;
    printf("%-24s %9s %8s %12s %12s %12s %12s\n", "fixture", "bytes", "samples", "decode wall", "decode CPU",
           "encode wall", "encode CPU");
    int status = 0;
    for (size_t f = 0; f < sizeof(files) / sizeof(files[0]); f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/pprof/%s", ps_bench_testdata(), files[f]);
        uint8_t *data;
        size_t n;
        if (ps_bench_read_file(path, &data, &n) != 0) {
            fprintf(stderr, "bench_pprof: cannot read %s\n", path);
            status = 1;
            continue;
        }
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        ps_err_t err;
        ps_err_clear(&err);
        if (ps_pprof_decode(data, n, NULL, &a, &p, &err) != 0) {
            fprintf(stderr, "bench_pprof: %s: %s\n", files[f], err.msg);
            status = 1;
            ps_arena_dispose(&a);
            free(data);
            continue;
        }
        double w0 = ps_bench_now(), c0 = ps_bench_self_cpu();
        for (uint64_t i = 0; i < rounds; i++) {
            ps_arena_reset(&a);
            ps_pprof_decode(data, n, NULL, &a, &p, &err);
        }
        double dw = (ps_bench_now() - w0) / (double)rounds, dc = (ps_bench_self_cpu() - c0) / (double)rounds;
        ps_buf_t out = PS_BUF_INIT;
        w0 = ps_bench_now();
        c0 = ps_bench_self_cpu();
        for (uint64_t i = 0; i < erounds; i++) {
            ps_buf_reset(&out);
            ps_pprof_encode(&p, 1, &out, &err);
        }
        double ew = (ps_bench_now() - w0) / (double)erounds, ec = (ps_bench_self_cpu() - c0) / (double)erounds;
        printf("%-24s %9zu %8u %9.1f us %9.1f us %9.1f us %9.1f us\n", files[f], n, p.nsamples, dw * 1e6, dc * 1e6,
               ew * 1e6, ec * 1e6);
        ps_buf_dispose(&out);
        ps_arena_dispose(&a);
        free(data);
    }
    return status;
}
