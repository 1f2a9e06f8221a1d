/*
 * ingest.c - bench_ingest: push throughput of POST /api/v1/profiles/write, and of the same
 * profiles through Pyroscope's push APIs (--connect, --pyroscope) next to it.
 *
 * Starts profstore itself (fsync on, --retention 0), then pushes the real Go profiles
 * (go/cpu-01..05.pb.gz and go/heap-01.pb.gz, bytes as Go produced them) over many series
 * (label sets job x instance) with increasing timestamps (10 s apart per series), keeping
 * --conns requests in flight on keep-alive connections (libcurl multi; one series' pushes in
 * order). Prints throughput, latency, the server's CPU time and peak RSS, its own CPU time, and
 * two in-process floors over the same bytes: zlib gunzip alone and gunzip + ps_pprof_decode. Then
 * a timed POST /api/v1/admin/compact, and the same again with --storage.no-sync.
 *
 * How to push: one run_phase for every mode, each phase into a fresh server.
 *   native       POST /api/v1/profiles/write?labels={job=…,instance=…}&time=<s>, the pprof as body.
 *   --connect    POST /push.v1.PusherService/Push, Connect binary proto as Grafana Alloy's
 *                pyroscope.write sends it: one series (__name__ process_cpu or memory,
 *                service_name = job, job, instance) with one raw sample, the pprof as raw_profile.
 *   --pyroscope  POST /ingest?name=<job>{instance=…}&from=<s>&until=<s+10>&spyName=gospy&
 *                sampleRate=100&…, multipart/form-data as pyroscope-go and @pyroscope/nodejs 0.4
 *                upload: the pprof as the part "profile" (filename profile.pprof).
 *   --rules N    the native push into a server with N recording rules in its --config
 *                (recording_rules:, all over the CPU profiles, some with a function filter):
 *                what evaluating rules as profiles are written costs.
 *   --unsymbolized  every phase pushes the fixtures as an eBPF profiler sends native frames: each
 *                location without its lines, in one of 8 mappings (copies of the profile's first,
 *                by address) with a build id of their own (re-encoded once at start): what
 *                counting frames without symbols (schema 6, storage/unsym.c) costs, against the
 *                same bytes pushed to a profstore that does not count.
 * Each flag's phase follows the native phase it is compared with (profiles/s, server CPU per
 * profile; target: within 10%). All flags together: native, Connect, /ingest, rules.
 *
 * Like for like: every mode pushes the same pprof bytes with the same time. A Connect push has no
 * time parameter (the profile's time_nanos is its timestamp), so the time must travel in the
 * pprof: push i's pprof is the fixture exactly as Go wrote it followed by a tiny second gzip member
 * holding only time_nanos (field 9) = its round's time (protobuf keeps the last value of a field,
 * gzip readers read every member). All three modes send these very bytes, and every mode stores
 * the profile at that time: Connect has only time_nanos, /ingest takes time_nanos over from (from
 * counts only when time_nanos is 0 or in 1970), and the native time= names the same second.
 * time= and from/until are sent anyway because their clients send them. (The other way, fixtures
 * re-encoded without time_nanos so that time= and from set the time, would push bytes Go does not
 * produce and leave Connect no way to carry a time.) Every mode builds each request into a scratch
 * buffer that the pusher copies, so the load generator does alike work. The floors run over the
 * fixtures followed by the first round's time member: the same bytes, up to the time's few bytes.
 *
 * Nothing is asserted: targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <libdeflate.h>
#include <zlib.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/varint.h"
#include "proto/gzip.h"
#include "proto/pprof.h"
#include "proto/pyroscope.h"
#include "util.h"

#define NFIX 6
static const char *const fix_files[NFIX] = {
    "pprof/go/cpu-01.pb.gz", "pprof/go/cpu-02.pb.gz", "pprof/go/cpu-03.pb.gz",
    "pprof/go/cpu-04.pb.gz", "pprof/go/cpu-05.pb.gz", "pprof/go/heap-01.pb.gz",
};
#define FIX_HEAP 5

typedef struct fixture {
    uint8_t *data;
    size_t len;
    size_t raw_len;     /* after gunzip */
    uint32_t nsamples;  /* pprof samples (rows, as in the file) */
    ps_buf_t timed;     /* data + the first round's time member: what the floors read */
} fixture_t;

/* ---- how to push ---- */

typedef enum push_mode { MODE_NATIVE, MODE_CONNECT, MODE_INGEST, MODE_RULES, NMODES } push_mode_t;

#define INGEST_BOUNDARY "bench-boundary-5f2c1b7a9e3d4c11"
static const char *const connect_headers[] = {"Content-Type: application/proto", "Connect-Protocol-Version: 1",
                                              NULL};
static const char *const ingest_headers[] = {"Content-Type: multipart/form-data; boundary=" INGEST_BOUNDARY, NULL};

typedef struct mode_info {
    const char *name;            /* in comparisons */
    const char *title;           /* appended to the phase's name */
    const char *tag;             /* appended to the phase's data directory */
    const char *wrapping;        /* what the request adds around the pprof */
    const char *const *headers;  /* NULL: the pusher's default (application/octet-stream) */
} mode_info_t;

static const mode_info_t modes[NMODES] = {
    [MODE_NATIVE] = {"native", "", "", "nothing", NULL},
    [MODE_CONNECT] = {"Connect", ", Connect push", "-connect", "the PushRequest", connect_headers},
    [MODE_INGEST] = {"/ingest", ", Pyroscope POST /ingest", "-ingest", "the multipart framing", ingest_headers},
    [MODE_RULES] = {"native + rules", ", native push with --rules recording rules", "-rules", "nothing", NULL},
};

typedef struct opts {
    char profstore[4096];
    const char *data_dir;
    int keep;
    uint64_t n;
    uint32_t conns, series, jobs, heap_every;
    const char *threads;
    long long t0;
    int do_sync, do_nosync, do_compact;
    int want[NMODES]; /* native always; --connect, --pyroscope, --rules */
    uint32_t rules;   /* --rules: recording rules of the MODE_RULES phase */
    int rules_all;    /* --rules-all: each of them matches every CPU profile */
    int unsymbolized; /* --unsymbolized: the fixtures' locations without lines, with build ids */
    int shapes;       /* --shapes: native fsync phases in the request shapes of real senders */
    uint64_t shape_n; /* --shape-profiles: profiles per shape */
} opts_t;

typedef struct result {
    char name[96];
    const char *phase;           /* "fsync (default)" or "--storage.no-sync" */
    int ok;
    double sys_busy, sys_iowait; /* machine-wide CPU seconds during the pushes */
    uint32_t nthreads;           /* server threads, tid order: main, writer, HTTP loops */
    double thread_cpu[PS_BENCH_MAX_THREADS];
    char thread_name[PS_BENCH_MAX_THREADS][16];
    int writer;                  /* the writer's index (by name), -1: none */
    bool cpu_exact;              /* server_cpu: the sum of its threads' schedstat times, not stat's ticks */
    double server_user, server_sys;
    double wall, server_cpu, self_cpu, p50, p90, p99, max, compact_wall, compact_cpu;
    uint64_t pushed_ok, failed, bytes, pprof_bytes, samples, ncpu, nheap, hwm_kb, hwm_after_compact_kb;
    double batches, stored, file_bytes, used_bytes, chunks, compact_chunks;
    double rec_samples, rec_evals; /* profstore_recording_rule_samples_total, _evaluations_total */
    char first_error[512];
    char died[4400];
    char log[4200];     /* set if the server died during the pushes */
} result_t;

/* one label set: its parts, and how the native push and /ingest name it (percent-encoded) */
typedef struct series {
    char job[32], inst[32];
    char labels_enc[256]; /* labels={job="…",instance="…"} */
    char app_enc[256];    /* name=<job>{instance=…} */
} series_t;

static fixture_t fx[NFIX];
static series_t *series;
/* round r's time member: tmem.data[tmem_off[r] .. tmem_off[r + 1]) */
static ps_buf_t tmem;
static size_t *tmem_off;

/* the flags as the table parses them; parse() puts them into opts_t */
typedef struct flagv {
    const char *profstore, *data_dir, *threads, *phase;
    bool keep, no_compact, connect, pyroscope, rules_all, unsymbolized, shapes;
    uint64_t n, conns, series, jobs, heap_every, t0, rules, shape_n;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)
static const char *const phases[] = {"sync", "nosync", NULL};

/* clang-format off */
static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "where the data directories go (default: a new /tmp/profstore-bench-XXXXXX,\n"
             "removed at the end unless --keep)"},
    {.name = "keep", .type = PS_FLAG_BOOL, .offset = FV(keep), .help = "keep the data directories"},
    {.name = "profiles", .short_name = 'n', .type = PS_FLAG_UINT, .offset = FV(n), .metavar = "N", .def = "20000",
     .min = 1, .max = UINT64_MAX, .help = "profiles to push per phase (default 20000)"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "64", .min = 1,
     .max = UINT32_MAX, .help = "concurrent requests / keep-alive connections (default 64)"},
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "200", .min = 1,
     .max = UINT32_MAX, .help = "label sets {job, instance} (default 200)"},
    {.name = "jobs", .type = PS_FLAG_UINT, .offset = FV(jobs), .metavar = "N", .def = "10", .min = 1,
     .max = UINT32_MAX, .help = "distinct jobs among them, at most --series (default 10)"},
    {.name = "heap-every", .type = PS_FLAG_UINT, .offset = FV(heap_every), .metavar = "K", .def = "6",
     .max = UINT32_MAX, .help = "1 push in K is go/heap-01 (default 6; 0 = CPU profiles only)"},
    {.name = "threads", .type = PS_FLAG_STRING, .offset = FV(threads), .metavar = "N",
     .help = "profstore --threads (default: its own default, the number of CPUs)"},
    {.name = "t0", .type = PS_FLAG_UINT, .offset = FV(t0), .metavar = "UNIXSECONDS", .max = INT64_MAX,
     .help = "time of the first round (default: now - rounds*10 s - 60 s)"},
    {.name = "phase", .type = PS_FLAG_ENUM, .offset = FV(phase), .metavar = "sync|nosync", .choices = phases,
     .help = "run only this phase (default: both)"},
    {.name = "no-compact", .type = PS_FLAG_BOOL, .offset = FV(no_compact),
     .help = "skip the timed POST /api/v1/admin/compact after each phase"},
    {.name = "connect", .type = PS_FLAG_BOOL, .offset = FV(connect),
     .help = "also push the same profiles through /push.v1.PusherService/Push (Connect,\n"
             "binary proto, as Alloy sends them) after each phase, and compare"},
    {.name = "pyroscope", .type = PS_FLAG_BOOL, .offset = FV(pyroscope),
     .help = "also push the same profiles through Pyroscope's POST /ingest (multipart, as\n"
             "pyroscope-go and @pyroscope/nodejs 0.4 upload) after each phase, and compare"},
    {.name = "rules", .type = PS_FLAG_UINT, .offset = FV(rules), .metavar = "N", .def = "0", .max = 100,
     .help = "also push natively into a server with N recording rules (recording_rules: in its --config), "
             "rule i for service i % jobs, and compare with the native phase (target: within 10%)"},
    {.name = "rules-all", .type = PS_FLAG_BOOL, .offset = FV(rules_all),
     .help = "--rules: every rule matches every CPU profile (the worst case)"},
    {.name = "unsymbolized", .type = PS_FLAG_BOOL, .offset = FV(unsymbolized),
     .help = "push the fixtures with every location's lines taken out, in 8 mappings with\n"
             "build ids (native frames as an eBPF profiler sends them)"},
    {.name = "shapes", .type = PS_FLAG_BOOL, .offset = FV(shapes),
     .help = "also push natively (fsync) in the request shapes of real senders: 1 series on 1\n"
             "connection, 4 on 4, 10 on 4, 10 on 10 (one series' pushes in order), a fresh server each"},
    {.name = "shape-profiles", .type = PS_FLAG_UINT, .offset = FV(shape_n), .metavar = "N", .def = "2000", .min = 1,
     .max = UINT64_MAX, .help = "--shapes: profiles per shape (default 2000)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_ingest", "usage: bench_ingest [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

static void parse(int argc, char **argv, opts_t *o)
{
    flagv_t f = {.t0 = UINT64_MAX}; /* UINT64_MAX: no --t0 */
    ps_bench_flags(&flagset, argc, argv, &f);
    if (f.jobs > f.series)
        ps_bench_flags_fail(&flagset, "--jobs: %llu is more than --series (%llu)", (unsigned long long)f.jobs,
                            (unsigned long long)f.series);
    ps_bench_profstore_path(o->profstore, sizeof(o->profstore), f.profstore);
    o->data_dir = f.data_dir;
    o->keep = f.keep;
    o->n = f.n;
    o->conns = (uint32_t)f.conns;
    o->series = (uint32_t)f.series;
    o->jobs = (uint32_t)f.jobs;
    o->heap_every = (uint32_t)f.heap_every;
    o->threads = f.threads;
    o->t0 = f.t0 == UINT64_MAX ? -1 : (long long)f.t0;
    o->do_sync = f.phase == NULL || !strcmp(f.phase, "sync");
    o->do_nosync = f.phase == NULL || !strcmp(f.phase, "nosync");
    o->do_compact = !f.no_compact;
    o->want[MODE_NATIVE] = 1;
    o->want[MODE_CONNECT] = f.connect;
    o->want[MODE_INGEST] = f.pyroscope;
    o->want[MODE_RULES] = f.rules > 0;
    o->rules = (uint32_t)f.rules;
    o->rules_all = f.rules_all;
    o->unsymbolized = f.unsymbolized;
    o->shapes = f.shapes;
    o->shape_n = f.shape_n;
}

/* push i: label set i % series, round i / series; 1 in heap_every rounds of a set is heap */
static inline int fix_of(const opts_t *o, uint64_t i)
{
    uint64_t set = i % o->series, round = i / o->series;
    if (o->heap_every > 0 && (round + set) % o->heap_every == o->heap_every - 1)
        return FIX_HEAP;
    return (int)((round + set) % 5);
}

/* --unsymbolized: p's locations without lines, each in one of 8 mappings (copies of its first
 * mapping, by address) with build ids of their own; strings and mappings added from a. */
#define UNSYM_MAPPINGS 8
static void unsymbolize(ps_profile_t *p, int fix, ps_arena_t *a)
{
    ps_str_t *strs = ps_arena_alloc(a, (p->nstrings + 2 * UNSYM_MAPPINGS) * sizeof(ps_str_t));
    memcpy(strs, p->strings, p->nstrings * sizeof(ps_str_t));
    ps_mapping_t *maps = ps_arena_calloc(a, UNSYM_MAPPINGS, sizeof(ps_mapping_t));
    for (uint32_t m = 0; m < UNSYM_MAPPINGS; m++) {
        char *bid = ps_arena_alloc(a, 41), *file = ps_arena_alloc(a, 32);
        snprintf(bid, 41, "%08x%032x", 0xb1d00000u + (uint32_t)fix * 16 + m, m);
        snprintf(file, 32, "/usr/lib/libnative%u.so", m);
        strs[p->nstrings + 2 * m] = (ps_str_t){bid, 40};
        strs[p->nstrings + 2 * m + 1] = (ps_str_t){file, (uint32_t)strlen(file)};
        if (p->nmappings > 0)
            maps[m] = p->mappings[0];
        maps[m].build_id = p->nstrings + 2 * m;
        maps[m].filename = p->nstrings + 2 * m + 1;
        maps[m].flags = 0;
    }
    for (uint32_t i = 0; i < p->nlocations; i++) {
        ps_location_t *l = &p->locations[i];
        l->nlines = 0;
        l->lines = NULL;
        l->mapping = 1 + (uint32_t)((l->address >> 4) % UNSYM_MAPPINGS);
    }
    p->strings = strs;
    p->nstrings += 2 * UNSYM_MAPPINGS;
    p->mappings = maps;
    p->nmappings = UNSYM_MAPPINGS;
    p->nfunctions = 0; /* nothing refers to them any more */
}

static int load_fixtures(const opts_t *o)
{
    ps_arena_t a = PS_ARENA_INIT;
    for (int f = 0; f < NFIX; f++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", ps_bench_testdata(), fix_files[f]);
        if (ps_bench_read_file(path, &fx[f].data, &fx[f].len) != 0) {
            fprintf(stderr, "bench_ingest: cannot read %s: %s (set PS_TESTDATA)\n", path, strerror(errno));
            return -1;
        }
        ps_profile_t p;
        ps_err_t err;
        ps_err_clear(&err);
        if (ps_pprof_decode(fx[f].data, fx[f].len, NULL, &a, &p, &err) != 0) {
            fprintf(stderr, "bench_ingest: %s: %s\n", path, err.msg);
            return -1;
        }
        fx[f].nsamples = p.nsamples;
        if (o->unsymbolized) {
            ps_buf_t enc = PS_BUF_INIT;
            unsymbolize(&p, f, &a);
            if (ps_pprof_encode(&p, 6, &enc, &err) != 0) {
                fprintf(stderr, "bench_ingest: %s without symbols: %s\n", path, err.msg);
                return -1;
            }
            free(fx[f].data);
            fx[f].data = ps_xmalloc(enc.len);
            memcpy(fx[f].data, enc.data, enc.len);
            fx[f].len = enc.len;
            ps_buf_dispose(&enc);
        }
        const uint8_t *raw;
        size_t rawn;
        if (ps_gunzip(fx[f].data, fx[f].len, 1u << 30, &a, &raw, &rawn, &err) == 0)
            fx[f].raw_len = rawn;
        ps_arena_reset(&a);
    }
    ps_arena_dispose(&a);
    return 0;
}

/* The label sets: job bench-job-NN, instance 10.0.NN.K:6060. */
static void make_series(const opts_t *o)
{
    uint32_t per_job = (o->series + o->jobs - 1) / o->jobs;
    series = ps_xcalloc(o->series, sizeof(*series));
    for (uint32_t s = 0; s < o->series; s++) {
        series_t *x = &series[s];
        char v[200];
        snprintf(x->job, sizeof(x->job), "bench-job-%02u", s / per_job);
        snprintf(x->inst, sizeof(x->inst), "10.0.%u.%u:6060", s / per_job, s % per_job + 1);
        snprintf(v, sizeof(v), "{job=\"%s\",instance=\"%s\"}", x->job, x->inst);
        ps_bench_urlencode(v, x->labels_enc, sizeof(x->labels_enc));
        snprintf(v, sizeof(v), "%s{instance=%s}", x->job, x->inst);
        ps_bench_urlencode(v, x->app_enc, sizeof(x->app_enc));
    }
}

/* Appends a gzip member holding only Profile.time_nanos (field 9, varint) = ns. */
static void time_member(int64_t ns, ps_buf_t *out)
{
    ps_buf_t pb = PS_BUF_INIT;
    ps_buf_putc(&pb, 9 << 3);
    ps_put_uvarint(&pb, (uint64_t)ns);
    ps_gzip(pb.data, pb.len, 1, out, NULL);
    ps_buf_dispose(&pb);
}

/* Each round's time member (t0 + 10 s per round), and the floors' bytes (round 0's member). */
static void make_time_members(uint64_t rounds, long long t0)
{
    tmem_off = ps_xmalloc((rounds + 1) * sizeof(*tmem_off));
    for (uint64_t r = 0; r < rounds; r++) {
        tmem_off[r] = tmem.len;
        time_member((t0 + (long long)r * 10) * 1000000000LL, &tmem);
    }
    tmem_off[rounds] = tmem.len;
    for (int f = 0; f < NFIX; f++) {
        ps_buf_append(&fx[f].timed, fx[f].data, fx[f].len);
        ps_buf_append(&fx[f].timed, tmem.data, tmem_off[1]);
    }
}

/* ---- in-process floors over the same byte sequence ---- */

typedef struct floor_res {
    double wall, cpu;
} floor_res_t;

/* Inflates every gzip member of in[0..n) into out[0..cap); the bytes out, or 0 on an error. */
static size_t gunzip_members(z_stream *zs, const uint8_t *in, size_t n, uint8_t *out, size_t cap)
{
    zs->next_in = (Bytef *)in;
    zs->avail_in = (uInt)n;
    zs->next_out = out;
    zs->avail_out = (uInt)cap;
    while (zs->avail_in > 0) {
        inflateReset(zs);
        int rc = inflate(zs, Z_FINISH);
        if (rc != Z_STREAM_END) {
            fprintf(stderr, "bench_ingest: gunzip floor: inflate returned %d\n", rc);
            return 0;
        }
    }
    return cap - zs->avail_out;
}

static floor_res_t floor_gunzip(const opts_t *o)
{
    size_t cap = 0;
    for (int f = 0; f < NFIX; f++)
        if (fx[f].raw_len > cap)
            cap = fx[f].raw_len;
    cap += 4096;
    uint8_t *out = ps_xmalloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    inflateInit2(&zs, 16 + MAX_WBITS);
    double c0 = ps_bench_self_cpu(), t0 = ps_bench_now();
    uint64_t total = 0;
    for (uint64_t i = 0; i < o->n; i++) {
        const ps_buf_t *x = &fx[fix_of(o, i)].timed;
        size_t got = gunzip_members(&zs, x->data, x->len, out, cap);
        if (got == 0) {
            total = 0;
            break;
        }
        total += got;
    }
    floor_res_t r = {ps_bench_now() - t0, ps_bench_self_cpu() - c0};
    inflateEnd(&zs);
    free(out);
    if (total == 0)
        r.wall = r.cpu = 0;
    return r;
}

/* The same bytes inflated by libdeflate (what ps_gunzip uses), member by member into one buffer. */
static floor_res_t floor_libdeflate(const opts_t *o)
{
    size_t cap = 0;
    for (int f = 0; f < NFIX; f++)
        if (fx[f].raw_len > cap)
            cap = fx[f].raw_len;
    cap += 4096;
    uint8_t *out = ps_xmalloc(cap);
    struct libdeflate_decompressor *d = libdeflate_alloc_decompressor();
    double c0 = ps_bench_self_cpu(), t0 = ps_bench_now();
    int ok = d != NULL;
    for (uint64_t i = 0; i < o->n && ok; i++) {
        const ps_buf_t *x = &fx[fix_of(o, i)].timed;
        size_t pos = 0, len = 0;
        while (pos < x->len && ok) {
            size_t used = 0, got = 0;
            ok = libdeflate_gzip_decompress_ex(d, x->data + pos, x->len - pos, out + len, cap - len, &used, &got) ==
                 LIBDEFLATE_SUCCESS;
            pos += used;
            len += got;
        }
    }
    floor_res_t r = {ps_bench_now() - t0, ps_bench_self_cpu() - c0};
    libdeflate_free_decompressor(d);
    free(out);
    if (!ok) {
        fprintf(stderr, "bench_ingest: libdeflate floor: a fixture did not inflate\n");
        r.wall = r.cpu = 0;
    }
    return r;
}

static floor_res_t floor_decode(const opts_t *o)
{
    ps_arena_t a = PS_ARENA_INIT;
    double c0 = ps_bench_self_cpu(), t0 = ps_bench_now();
    for (uint64_t i = 0; i < o->n; i++) {
        const ps_buf_t *x = &fx[fix_of(o, i)].timed;
        ps_profile_t p;
        ps_err_t err;
        if (ps_pprof_decode(x->data, x->len, NULL, &a, &p, &err) != 0) {
            fprintf(stderr, "bench_ingest: decode floor: %s\n", err.msg);
            break;
        }
        ps_arena_reset(&a);
    }
    floor_res_t r = {ps_bench_now() - t0, ps_bench_self_cpu() - c0};
    ps_arena_dispose(&a);
    return r;
}

/* ---- one push: the same pprof bytes, wrapped as the mode sends them ---- */

/* The Connect PushRequest for one raw profile of series s (fixture f) into body (replacing it). */
static void connect_body(const series_t *s, int f, const ps_buf_t *pprof, ps_buf_t *body)
{
    const char *name = f == FIX_HEAP ? "memory" : "process_cpu";
    ps_pyro_label_t labels[] = {{"__name__", name, 8, strlen(name)},
                                {"service_name", s->job, 12, strlen(s->job)},
                                {"job", s->job, 3, strlen(s->job)},
                                {"instance", s->inst, 8, strlen(s->inst)}};
    ps_pyro_sample_t smp = {pprof->data, pprof->len, ""};
    ps_pyro_series_t ser = {labels, 4, &smp, 1};
    ps_pyro_push_t req = {&ser, 1};
    ps_buf_reset(body);
    ps_pyro_push_encode(PS_PYRO_PROTO, &req, body);
}

/* The /ingest multipart body around one pprof into body (replacing it). */
static void ingest_body(const ps_buf_t *pprof, ps_buf_t *body)
{
    ps_buf_reset(body);
    PS_BUF_LIT(body, "--" INGEST_BOUNDARY "\r\nContent-Disposition: form-data; name=\"profile\"; "
                     "filename=\"profile.pprof\"\r\nContent-Type: application/octet-stream\r\n\r\n");
    ps_buf_append(body, pprof->data, pprof->len);
    PS_BUF_LIT(body, "\r\n--" INGEST_BOUNDARY "--\r\n");
}

/* Push i in mode: its pprof (fixture + its round's time member) into pprof, the URL into url, and
 * the request body (pprof itself, or body) as the result. */
static const ps_buf_t *push_request(const opts_t *o, push_mode_t mode, uint64_t i, const char *base_url,
                                    long long t0, ps_buf_t *pprof, ps_buf_t *body, char *url, size_t urln)
{
    const series_t *s = &series[i % o->series];
    uint64_t round = i / o->series;
    long long ts = t0 + (long long)round * 10;
    int f = fix_of(o, i);
    ps_buf_reset(pprof);
    ps_buf_append(pprof, fx[f].data, fx[f].len);
    ps_buf_append(pprof, tmem.data + tmem_off[round], tmem_off[round + 1] - tmem_off[round]);
    switch (mode) {
    case MODE_CONNECT:
        snprintf(url, urln, "%s/push.v1.PusherService/Push", base_url);
        connect_body(s, f, pprof, body);
        return body;
    case MODE_INGEST:
        snprintf(url, urln, "%s/ingest?name=%s&from=%lld&until=%lld&spyName=gospy&sampleRate=100&"
                 "units=samples&aggregationType=sum", base_url, s->app_enc, ts, ts + 10);
        ingest_body(pprof, body);
        return body;
    default:
        snprintf(url, urln, "%s/api/v1/profiles/write?labels=%s&time=%lld", base_url, s->labels_enc, ts);
        return pprof;
    }
}

/* ---- one phase: start a server, push, measure, compact, stop ---- */

static int get_metrics(const char *url, ps_buf_t *b)
{
    char u[128];
    snprintf(u, sizeof(u), "%s/metrics", url);
    ps_buf_reset(b);
    return ps_bench_http("GET", u, NULL, 0, b) == 200 ? 0 : -1;
}
#define METRIC(b, name) ps_bench_metric((const char *)(b).data, (b).len, name)

/* The --rules configuration file: o->rules rules over the CPU profiles the pushes store, as a
 * Drilldown user makes them: rule i for the service (job) i % jobs, grouped by instance (even i)
 * or not at all; one in 5 filters by a function of the fixtures. --rules-all: every rule matches
 * every CPU profile (no job matcher; grouped by instance or job), the worst case. */
static int write_rules_config(const opts_t *o, const char *path)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "recording_rules:\n");
    for (uint32_t i = 0; i < o->rules; i++) {
        fprintf(f, "  - metric_name: profiles_recorded_bench_%u\n", i);
        fprintf(f, "    matchers: ['{__profile_type__=\"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\"}'");
        if (!o->rules_all)
            fprintf(f, ", '{job=\"%s\"}'", series[(i % o->jobs) * (o->series / o->jobs)].job);
        fprintf(f, "]\n    group_by: [%s]\n", i % 2 ? (o->rules_all ? "job" : "") : "instance");
        if (i % 5 == 4)
            fprintf(f, "    function_name: main.kernelCompress\n");
    }
    return fclose(f);
}

static int start_server(const opts_t *o, const char *dir, const char *log, int nosync, push_mode_t mode,
                        ps_bench_server_t *srv)
{
    const char *args[10];
    int na = 0;
    static char cfg[4200];
    if (mode == MODE_RULES) {
        snprintf(cfg, sizeof(cfg), "%s.rules.yml", dir);
        if (write_rules_config(o, cfg) != 0) {
            fprintf(stderr, "bench_ingest: cannot write %s: %s\n", cfg, strerror(errno));
            return -1;
        }
        args[na++] = "--config";
        args[na++] = cfg;
    }
    args[na++] = "--retention";
    args[na++] = "0";
    if (nosync)
        args[na++] = "--storage.no-sync";
    if (o->threads != NULL) {
        args[na++] = "--threads";
        args[na++] = o->threads;
    }
    args[na] = NULL;
    ps_bench_rmrf(dir);
    return ps_bench_server_start(srv, o->profstore, dir, log, args);
}

/* Pushes all o->n profiles in mode and fills in r's push figures (times, CPU, latencies). */
static void push_all(const opts_t *o, push_mode_t mode, long long t0, ps_bench_server_t *srv, result_t *r)
{
    ps_bench_pusher_t *p = ps_bench_pusher_new(o->conns, 1);
    if (modes[mode].headers != NULL)
        ps_bench_pusher_headers(p, modes[mode].headers);
    ps_buf_t pprof = PS_BUF_INIT, body = PS_BUF_INIT;
    char url[1024];
    ps_bench_proc_t pr0, pr1;
    ps_bench_sys_t sy0, sy1;
    ps_bench_proc_read(srv->pid, &pr0);
    ps_bench_sys_read(&sy0);
    double self0 = ps_bench_self_cpu(), w0 = ps_bench_now();
    for (uint64_t i = 0; i < o->n; i++) {
        const ps_buf_t *b = push_request(o, mode, i, srv->url, t0, &pprof, &body, url, sizeof(url));
        ps_bench_pusher_post(p, (int64_t)(i % o->series), url, b->data, b->len);
        r->bytes += b->len;
        r->pprof_bytes += pprof.len;
        int f = fix_of(o, i);
        r->samples += fx[f].nsamples;
        if (f == FIX_HEAP)
            r->nheap++;
        else
            r->ncpu++;
    }
    ps_bench_pusher_drain(p);
    r->wall = ps_bench_now() - w0;
    r->self_cpu = ps_bench_self_cpu() - self0;
    ps_buf_dispose(&pprof);
    ps_buf_dispose(&body);
    ps_bench_sys_read(&sy1);
    r->sys_busy = sy1.busy - sy0.busy;
    r->sys_iowait = sy1.iowait - sy0.iowait;
    ps_bench_proc_read(srv->pid, &pr1);
    r->server_cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
    r->server_user = pr1.cpu_user - pr0.cpu_user;
    r->server_sys = pr1.cpu_sys - pr0.cpu_sys;
    r->hwm_kb = pr1.vm_hwm_kb;
    r->nthreads = pr1.nthreads;
    r->writer = -1;
    for (uint32_t t = 0; t < pr1.nthreads; t++) {
        r->thread_cpu[t] = pr1.thread_cpu[t];
        memcpy(r->thread_name[t], pr1.thread_name[t], sizeof(r->thread_name[t]));
        if (strcmp(r->thread_name[t], "writer") == 0)
            r->writer = (int)t;
        for (uint32_t k = 0; k < pr0.nthreads; k++)
            if (pr0.tid[k] == pr1.tid[t])
                r->thread_cpu[t] -= pr0.thread_cpu[k];
    }
    /* the server's CPU as its threads' exact times (its threads live through the phase), when schedstat
     * gave them all: /proc/PID/stat's 10 ms ticks make ~2.5 us a profile a tick at -n 4000 */
    if (pr0.thread_exact == pr0.nthreads && pr1.thread_exact == pr1.nthreads && pr1.nthreads > 0) {
        r->server_cpu = 0;
        for (uint32_t t = 0; t < pr1.nthreads; t++)
            r->server_cpu += r->thread_cpu[t];
        r->cpu_exact = true;
    }

    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(p);
    r->pushed_ok = st->ok;
    r->failed = st->failed;
    snprintf(r->first_error, sizeof(r->first_error), "%s", st->first_error);
    double *lat = ps_xmalloc((st->nlat + 1) * sizeof(double));
    memcpy(lat, st->lat, st->nlat * sizeof(double));
    r->p50 = ps_bench_quantile(lat, st->nlat, 0.50);
    r->p90 = ps_bench_quantile(lat, st->nlat, 0.90);
    r->p99 = ps_bench_quantile(lat, st->nlat, 0.99);
    r->max = st->nlat ? lat[st->nlat - 1] : 0;
    free(lat);
    ps_bench_pusher_free(p);
}

/* After the pushes: what the server says it stored, the timed compaction, the storage size. */
static void after_pushes(const opts_t *o, ps_bench_server_t *srv, result_t *r)
{
    ps_buf_t m = PS_BUF_INIT;
    if (get_metrics(srv->url, &m) == 0) {
        r->batches = METRIC(m, "profstore_writer_batches_total");
        r->stored = METRIC(m, "profstore_ingest_profiles_total");
        r->chunks = METRIC(m, "profstore_storage_chunks");
    }
    if (o->do_compact) {
        char u[128];
        ps_bench_proc_t pr0, pr1;
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv->url);
        ps_bench_proc_read(srv->pid, &pr0);
        double c0 = ps_bench_now();
        ps_buf_t body = PS_BUF_INIT;
        long code = ps_bench_http("POST", u, "", 0, &body);
        r->compact_wall = ps_bench_now() - c0;
        ps_bench_proc_read(srv->pid, &pr1);
        r->compact_cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
        r->hwm_after_compact_kb = pr1.vm_hwm_kb;
        if (code != 200)
            fprintf(stderr, "bench_ingest: compact: HTTP %ld: %.*s\n", code, (int)body.len, (const char *)body.data);
        ps_buf_dispose(&body);
        if (get_metrics(srv->url, &m) == 0)
            r->compact_chunks = METRIC(m, "profstore_storage_chunks") - r->chunks;
    }
    if (get_metrics(srv->url, &m) == 0) {
        r->file_bytes = METRIC(m, "profstore_storage_file_bytes");
        r->used_bytes = METRIC(m, "profstore_storage_used_bytes");
        r->rec_samples = METRIC(m, "profstore_recording_rule_samples_total");
        r->rec_evals = METRIC(m, "profstore_recording_rule_evaluations_total");
    }
    ps_buf_dispose(&m);
}

static void run_phase(const opts_t *o, const char *base_dir, int nosync, push_mode_t mode, long long t0,
                      result_t *r)
{
    memset(r, 0, sizeof(*r));
    r->phase = nosync ? "--storage.no-sync" : "fsync (default)";
    snprintf(r->name, sizeof(r->name), "%s%s", r->phase, modes[mode].title);
    char dir[4160], log[4200];
    snprintf(dir, sizeof(dir), "%s/%s%s", base_dir, nosync ? "nosync" : "sync", modes[mode].tag);
    snprintf(log, sizeof(log), "%s/profstore-%s%s.log", base_dir, nosync ? "nosync" : "sync", modes[mode].tag);
    ps_bench_server_t srv;
    if (start_server(o, dir, log, nosync, mode, &srv) != 0)
        return;
    push_all(o, mode, t0, &srv, r);
    r->ok = 1;
    int died;
    if (!ps_bench_server_alive(&srv, &died)) {
        char why[128];
        ps_bench_describe_status(died, why, sizeof(why));
        snprintf(r->died, sizeof(r->died), "%s (log: %s)", why, log);
        snprintf(r->log, sizeof(r->log), "%s", log);
        return;
    }
    after_pushes(o, &srv, r);
    int rc = ps_bench_server_stop(&srv);
    if (rc != 0) {
        char why[128];
        ps_bench_describe_status(rc, why, sizeof(why));
        printf("  (profstore shutdown: %s; log: %s)\n", why, log);
    }
}

static const char *mark(int good) { return good ? "met" : "NOT met"; }

static void print_phase(const opts_t *o, const result_t *r, floor_res_t gz, floor_res_t ld, floor_res_t dec)
{
    double n = (double)o->n;
    printf("\n== phase: %s ==\n", r->name);
    if (!r->ok) {
        printf("  (server did not start; see above)\n");
        return;
    }
    printf("  pushed                 %llu ok, %llu failed (%llu CPU, %llu heap profiles)\n",
           (unsigned long long)r->pushed_ok, (unsigned long long)r->failed, (unsigned long long)r->ncpu,
           (unsigned long long)r->nheap);
    if (r->failed)
        printf("  first error            %s\n", r->first_error);
    if (r->died[0]) {
        printf("  PROFSTORE DIED during the pushes: %s; its last log lines:\n", r->died);
        ps_bench_print_log_tail(r->log, 3, "    | ");
        return;
    }
    printf("  server says stored     %.0f profiles in %.0f write transactions (%.1f profiles/commit)\n", r->stored,
           r->batches, r->batches > 0 ? r->stored / r->batches : 0);
    printf("  wall time              %.3f s\n", r->wall);
    printf("  profiles/s             %.0f   (target >= 2,000 CPU profiles/s: %s; CPU profiles alone %.0f/s)\n",
           n / r->wall, mark(n / r->wall >= 2000), (double)r->ncpu / r->wall);
    printf("  input MB/s (gzipped)   %.2f   (%.1f MB total, %.0f B/profile)\n", (double)r->bytes / r->wall / 1e6,
           (double)r->bytes / 1e6, (double)r->bytes / n);
    printf("  pprof samples/s        %.0f   (%llu samples)\n", (double)r->samples / r->wall,
           (unsigned long long)r->samples);
    printf("  latency                p50 %.2f ms, p90 %.2f ms, p99 %.2f ms, max %.2f ms (%u in flight)\n",
           r->p50 * 1e3, r->p90 * 1e3, r->p99 * 1e3, r->max * 1e3, o->conns);
    printf("  server CPU             %.3f s = %.1f us/profile (%.0f%% of one CPU; %s)\n", r->server_cpu,
           r->server_cpu / n * 1e6, r->server_cpu / r->wall * 100,
           r->cpu_exact ? "its threads' times on a CPU, schedstat" : "/proc/PID/stat, 10 ms ticks");
    printf("  server CPU by thread   (user %.3f s, system %.3f s)", r->server_user, r->server_sys);
    uint32_t idle = 0;
    for (uint32_t t = 0, k = 0; t < r->nthreads; t++) {
        if (r->thread_cpu[t] < 0.0005) {
            idle++;
            continue;
        }
        printf("%s %s %.3f s", k++ ? "," : "", r->thread_name[t], r->thread_cpu[t]);
    }
    printf("; %u more threads idle\n", idle);
    double wcpu = r->writer >= 0 ? r->thread_cpu[r->writer] : 0;
    if (r->writer >= 0)
        printf("  writer thread          %.1f us/profile: alone it could not commit more than %.0f profiles/s\n",
               wcpu / n * 1e6, wcpu > 0 ? n / wcpu : 0);
    {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        double cap = (double)ncpu / (r->server_cpu / n);
        if (wcpu > 0 && n / wcpu < cap)
            cap = n / wcpu;
        printf("  CPU-bound estimate     %.0f profiles/s if the server had all %ld CPUs to itself (CPU per profile "
               "as measured, writer thread as the serial limit; not a measurement)\n",
               cap, ncpu);
    }
    printf("  server peak RSS        %.1f MiB (VmHWM after the pushes)\n", (double)r->hwm_kb / 1024);
    printf("  load generator CPU     %.3f s = %.1f us/profile (%.0f%% of one CPU)\n", r->self_cpu,
           r->self_cpu / n * 1e6, r->self_cpu / r->wall * 100);
    {
        long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
        double other = r->sys_busy - r->server_cpu - r->self_cpu;
        printf("  machine CPU            %.2f of %ld CPUs busy on average (server %.2f, load generator %.2f, "
               "other processes %.2f), iowait %.2f\n",
               r->sys_busy / r->wall, ncpu, r->server_cpu / r->wall, r->self_cpu / r->wall,
               (other > 0 ? other : 0) / r->wall, r->sys_iowait / r->wall);
    }
    if (gz.wall > 0) {
        printf("  gunzip floor (zlib)    %.3f s = %.1f us/profile, in-process, one thread, same bytes\n", gz.wall,
               gz.wall / n * 1e6);
        printf("  ingest / gunzip        wall %.1fx, server CPU %.1fx   (target <= 10x: wall %s, CPU %s)\n",
               r->wall / gz.wall, r->server_cpu / gz.cpu, mark(r->wall / gz.wall <= 10),
               mark(r->server_cpu / gz.cpu <= 10));
    }
    if (ld.wall > 0)
        printf("  gunzip floor (libdeflate) %.3f s = %.1f us/profile, in-process, one thread, same bytes\n", ld.wall,
               ld.wall / n * 1e6);
    if (dec.wall > 0)
        printf("  gunzip+decode floor    %.3f s = %.1f us/profile (ps_pprof_decode: libdeflate + decode); server CPU / "
               "this = %.1fx\n",
               dec.wall, dec.wall / n * 1e6, r->server_cpu / dec.cpu);
    printf("  server CPU per profile %.1f us   (target <= 200 us: %s)\n", r->server_cpu / n * 1e6,
           mark(r->server_cpu / n * 1e6 <= 200));
    if (o->do_compact)
        printf("  POST /admin/compact    %.3f s wall, %.3f s server CPU (%.1f us/profile pushed), %.0f chunks "
               "(%.0f written during the pushes), peak RSS now %.1f MiB\n",
               r->compact_wall, r->compact_cpu, r->compact_cpu / n * 1e6, r->compact_chunks, r->chunks,
               (double)r->hwm_after_compact_kb / 1024);
    printf("  storage                data.mdb %.1f MB, %.1f MB of pages in use (%.0f B/profile)\n",
           r->file_bytes / 1e6, r->used_bytes / 1e6, r->used_bytes / n);
}

/* A --connect or --pyroscope phase next to the native phase of the same profiles. */
static void print_compare(const opts_t *o, const result_t *nat, const result_t *alt, push_mode_t mode)
{
    if (!nat->ok || !alt->ok || nat->died[0] || alt->died[0] || nat->wall <= 0 || alt->wall <= 0)
        return;
    const char *an = modes[mode].name;
    double n = (double)o->n, pn = n / nat->wall, pa = n / alt->wall;
    double cn = nat->server_cpu / n * 1e6, ca = alt->server_cpu / n * 1e6;
    printf("\n== %s push vs native push (%s) ==\n", an, nat->phase);
    printf("  profiles/s             native %.0f, %s %.0f: %.1f%% of native   (target >= 90%%: %s)\n", pn, an, pa,
           pa / pn * 100, mark(pa >= 0.9 * pn));
    printf("  server CPU/profile     native %.1f us, %s %.1f us: %+.1f%%   (target <= +10%%: %s)\n", cn, an, ca,
           (ca / cn - 1) * 100, mark(ca <= 1.1 * cn));
    printf("  stored                 native %.0f, %s %.0f profiles\n", nat->stored, an, alt->stored);
    if (mode == MODE_RULES)
        printf("  recording rules        %u rules: %.0f profile series matched, %.0f recorded samples stored\n",
               o->rules, alt->rec_evals, alt->rec_samples);
    printf("  bytes/profile          native %.0f B, %s %.0f B (the same %.0f B of pprof; %s adds the rest)\n",
           (double)nat->bytes / n, an, (double)alt->bytes / n, (double)alt->pprof_bytes / n, modes[mode].wrapping);
}

static void print_fsync_share(const opts_t *o, const result_t *rs, const result_t *rn)
{
    if (!rs->ok || !rn->ok || rs->died[0] || rn->died[0])
        return;
    printf("\n== fsync's share ==\n");
    printf("  wall time              %.3f s with fsync, %.3f s without: fsync costs %.0f%% of the ingest time\n",
           rs->wall, rn->wall, (1 - rn->wall / rs->wall) * 100);
    printf("  profiles/s             %.0f -> %.0f; p50 %.2f -> %.2f ms; p99 %.2f -> %.2f ms\n", o->n / rs->wall,
           o->n / rn->wall, rs->p50 * 1e3, rn->p50 * 1e3, rs->p99 * 1e3, rn->p99 * 1e3);
    printf("  profiles per commit    %.1f with fsync, %.1f without\n",
           rs->batches > 0 ? rs->stored / rs->batches : 0, rn->batches > 0 ? rn->stored / rn->batches : 0);
}

static void print_header(const opts_t *o, uint64_t rounds, long long t0, const char *base)
{
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_ingest: %llu profiles per phase over %u series (%u jobs), %u connections, %u rounds of 10 s "
           "from t0=%lld; push modes: native%s%s\n",
           (unsigned long long)o->n, o->series, o->jobs, o->conns, (unsigned)rounds, t0,
           o->want[MODE_CONNECT] ? ", Connect" : "", o->want[MODE_INGEST] ? ", /ingest" : "");
    if (o->want[MODE_RULES])
        printf("  --rules: the native push again into a server with %u recording rules%s\n", o->rules,
               o->rules_all ? ", each matching every CPU profile (--rules-all)" : ", rule i for service i % jobs");
    printf("  server %s, threads %s; %ld CPUs shared by server and load generator; data in %s\n", o->profstore,
           o->threads ? o->threads : "default", ncpu, base);
    ps_bench_print_loadavg();
    printf("  fixtures (%s):", ps_bench_testdata());
    for (int i = 0; i < NFIX; i++)
        printf(" %s %zu B gz/%zu B raw/%u samples;", strrchr(fix_files[i], '/') + 1, fx[i].len, fx[i].raw_len,
               fx[i].nsamples);
    printf(" each pushed with a %zu B time member\n", tmem_off[1]);
    fflush(stdout);
}

/* The base directory: --data-dir (created), else a new temporary one (*made = 1). */
static int make_base_dir(const opts_t *o, char *base, size_t n, int *made)
{
    *made = 0;
    if (o->data_dir != NULL) {
        snprintf(base, n, "%s", o->data_dir);
        if (ps_bench_mkdirs(base) != 0) {
            fprintf(stderr, "bench_ingest: cannot create %s: %s\n", base, strerror(errno));
            return -1;
        }
        return 0;
    }
    snprintf(base, n, "/tmp/profstore-bench-XXXXXX");
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return -1;
    }
    *made = 1;
    return 0;
}

/* --shapes: the request shapes real senders use ({series, connections}: an SDK or Alloy per
 * process pushes each series' profile in turn), each a native fsync phase into a fresh server. */
static const uint32_t shape_series[] = {1, 4, 10, 10}, shape_conns[] = {1, 4, 4, 10};
#define NSHAPES (sizeof(shape_series) / sizeof(shape_series[0]))

static void run_shapes(const opts_t *o, const char *base, long long t0)
{
    printf("\n== request shapes of real senders: native push, fsync, %llu profiles each ==\n",
           (unsigned long long)o->shape_n);
    printf("  %-22s %10s %9s %9s %9s %15s %16s\n", "series x connections", "profiles/s", "p50 ms", "p99 ms",
           "prof/commit", "server us/prof", "machine busy");
    for (size_t k = 0; k < NSHAPES; k++) {
        opts_t so = *o;
        so.series = shape_series[k];
        so.jobs = o->jobs < so.series ? o->jobs : so.series;
        so.conns = shape_conns[k];
        so.n = o->shape_n;
        so.do_compact = 0;
        free(series);
        make_series(&so);
        result_t r;
        run_phase(&so, base, 0, MODE_NATIVE, t0, &r);
        char name[64];
        snprintf(name, sizeof(name), "%u x %u", so.series, so.conns);
        if (!r.ok || r.died[0] || r.wall <= 0) {
            printf("  %-22s (failed%s%s)\n", name, r.died[0] ? ": " : "", r.died);
            continue;
        }
        double n = (double)so.n;
        printf("  %-22s %10.0f %9.2f %9.2f %9.1f %15.1f %12.2f CPUs\n", name, n / r.wall, r.p50 * 1e3, r.p99 * 1e3,
               r.batches > 0 ? r.stored / r.batches : 0, r.server_cpu / n * 1e6, r.sys_busy / r.wall);
        fflush(stdout);
    }
    free(series);
    make_series(o);
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    parse(argc, argv, &o);
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    if (load_fixtures(&o) != 0)
        return 1;
    make_series(&o);
    uint64_t rounds = (o.n + o.series - 1) / o.series, tm_rounds = rounds;
    if (o.shapes && o.shape_n > tm_rounds) /* a shape of one series: a round per profile */
        tm_rounds = o.shape_n;
    long long t0 = o.t0 >= 0 ? o.t0 : (long long)time(NULL) - (long long)tm_rounds * 10 - 60;
    make_time_members(tm_rounds, t0);

    char base[4096];
    int made;
    if (make_base_dir(&o, base, sizeof(base), &made) != 0)
        return 1;
    print_header(&o, rounds, t0, base);

    floor_res_t gz = floor_gunzip(&o), ld = floor_libdeflate(&o), dec = floor_decode(&o);

    result_t res[2][NMODES]; /* [nosync][mode] */
    memset(res, 0, sizeof(res));
    int died = 0;
    for (int nosync = 0; nosync < 2; nosync++) {
        if (!(nosync ? o.do_nosync : o.do_sync))
            continue;
        for (int m = 0; m < NMODES; m++) {
            if (!o.want[m])
                continue;
            result_t *r = &res[nosync][m];
            run_phase(&o, base, nosync, (push_mode_t)m, t0, r);
            print_phase(&o, r, gz, ld, dec);
            if (m != MODE_NATIVE)
                print_compare(&o, &res[nosync][MODE_NATIVE], r, (push_mode_t)m);
            died |= r->died[0] != 0;
            fflush(stdout);
        }
    }
    print_fsync_share(&o, &res[0][MODE_NATIVE], &res[1][MODE_NATIVE]);
    if (o.shapes)
        run_shapes(&o, base, t0);
    if (made && !o.keep && !died)
        ps_bench_rmrf(base);
    else
        printf("\n  data kept in %s\n", base);
    curl_global_cleanup();
    return 0;
}
