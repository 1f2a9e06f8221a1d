/*
 * pprof.c - bench_pprof: in-process cost of ps_pprof_decode (gunzip + wire scan + the direct
 * decoder into an arena), of ps_pprof_decode_reference (the same with protobuf-c unpack +
 * conversion, the decoder before) on the same bytes, and of ps_pprof_encode (gzip level 1, as the
 * query API answers) on the real Go and Node fixtures, CPU time per call (the steadier figure on
 * a busy machine). "gz" columns decode the fixture as it is (gzipped); "raw" ones its gunzipped
 * bytes, i.e. everything after gunzip; "x" is reference raw / direct raw.
 * (Moved out of the proto unit test, which ran it in every unit and ASan run.)
 *
 *   bench_pprof [--rounds N]   (default 2000 decodes of each kind and 200 encodes per file)
 *
 * Nothing is asserted but that every fixture decodes with both decoders.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/gzip.h"
#include "proto/pprof.h"
#include "pprof_reference.h"
#include "util.h"

static const char *const files[] = {
    "go/cpu-01.pb.gz",  "go/cpu-seed2-01.pb.gz", "go/heap-01.pb.gz",  "go/allocs-01.pb.gz",
    "go/block-01.pb.gz", "go/mutex-01.pb.gz",    "go/goroutine-01.pb.gz", "node/cpu-01.pb.gz",
    "node/wall-01.pb.gz", "node/heap-01.pb.gz",
};

typedef struct {
    uint64_t rounds;
} opts_t;

static const ps_flag_t flags[] = {
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, rounds), .metavar = "N", .def = "2000",
     .max = UINT64_MAX, .help = "decodes of each kind per fixture (default 2000; encodes: a tenth)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_pprof", "usage: bench_pprof [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    uint64_t rounds = o.rounds;
    if (rounds == 0)
        rounds = 1;
    uint64_t erounds = rounds / 10 ? rounds / 10 : 1;
    printf("%-22s %7s %7s %11s %11s %11s %11s %6s %11s\n", "fixture", "bytes", "samples", "direct gz", "ref gz",
           "direct raw", "ref raw", "x", "encode");
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
        ps_arena_t a = PS_ARENA_INIT, ra = PS_ARENA_INIT;
        ps_profile_t p;
        ps_err_t err;
        const uint8_t *raw = data;
        size_t rawn = n;
        ps_err_clear(&err);
        if (ps_is_gzip(data, n) && ps_gunzip(data, n, SIZE_MAX, &ra, &raw, &rawn, &err) != 0) {
            fprintf(stderr, "bench_pprof: %s: %s\n", files[f], err.msg);
            status = 1;
            goto Next;
        }
        if (ps_pprof_decode(data, n, NULL, &a, &p, &err) != 0 ||
            ps_pprof_decode_reference(data, n, NULL, &a, &p, &err) != 0) {
            fprintf(stderr, "bench_pprof: %s: %s\n", files[f], err.msg);
            status = 1;
            goto Next;
        }
        /* us of CPU per decode: [0] direct gz, [1] reference gz, [2] direct raw, [3] reference raw */
        double us[4];
        for (int k = 0; k < 4; k++) {
            const uint8_t *in = k < 2 ? data : raw;
            size_t inn = k < 2 ? n : rawn;
            double c0 = ps_bench_self_cpu();
            for (uint64_t i = 0; i < rounds; i++) {
                ps_arena_reset(&a);
                if (k & 1)
                    ps_pprof_decode_reference(in, inn, NULL, &a, &p, &err);
                else
                    ps_pprof_decode(in, inn, NULL, &a, &p, &err);
            }
            us[k] = (ps_bench_self_cpu() - c0) / (double)rounds * 1e6;
        }
        ps_buf_t out = PS_BUF_INIT;
        double c0 = ps_bench_self_cpu();
        for (uint64_t i = 0; i < erounds; i++) {
            ps_buf_reset(&out);
            ps_pprof_encode(&p, 1, &out, &err);
        }
        double ec = (ps_bench_self_cpu() - c0) / (double)erounds * 1e6;
        printf("%-22s %7zu %7u %8.1f us %8.1f us %8.1f us %8.1f us %5.1fx %8.1f us\n", files[f], n, p.nsamples, us[0],
               us[1], us[2], us[3], us[2] > 0 ? us[3] / us[2] : 0.0, ec);
        ps_buf_dispose(&out);
    Next:
        ps_arena_dispose(&a);
        ps_arena_dispose(&ra);
        free(data);
    }
    return status;
}
