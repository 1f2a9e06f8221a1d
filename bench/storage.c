/*
 * storage.c - bench_storage: bytes on disk for a day of realistic CPU profiles.
 *
 * Generates (bench/gen.h) 24 h of 10 s Go CPU profiles for 10 series (8,640 each) from the real
 * stacks, pushes them all over HTTP to a profstore it starts itself (--retention 0
 * --storage.compact-max-profiles 120), calls POST /api/v1/admin/compact, and prints bytes on
 * disk against the gzipped pprof input. Checks the stored per-profile totals
 * (/api/v1/debug/series) against the generated ones. Can also just write the generated
 * profiles to a directory (--write-dir, --gen-only).
 *
 * Beside the bytes: the 24 h merge of one series (GET /api/v1/profiles/query, format=pprof, cpu
 * type of host-00; median of --merge-runs after a first call), and the anchor of grouped
 * compression (as Conprof stored profiles): the raw (gunzipped) pprof of the first
 * --anchor-profiles profiles of series 0, concatenated in groups of 100 and of 1,000 consecutive
 * profiles, each group through zstd at levels 3 and 19, in bytes per profile.
 *
 * Nothing is asserted: targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <zstd.h>

#include "core/mem.h"
#include "gen.h"
#include "proto/gzip.h"
#include "util.h"

typedef struct opts {
    char profstore[4096];
    const char *data_dir, *write_dir, *compact_window, *threads;
    int keep, gen_only, nosync, verify;
    uint32_t series, pps, conns, compact_max, anchor, merge_runs;
    uint64_t seed;
} opts_t;

typedef struct run {
    const opts_t *o;
    ps_bench_pusher_t *pusher;
    const char *url;
    char (*label_enc)[128];
    uint64_t profiles, bytes, samples, stacks;
    int64_t (*totals)[2]; /* [series * pps + index] */
    uint64_t base_count[PS_BENCH_GEN_NBASES];
    size_t min_len, max_len;
    int write_failed;
    ps_buf_t raw;        /* the anchor: raw pprof of series 0's first o->anchor profiles, one after another */
    size_t *raw_end;     /* [i]: where profile i ends in raw */
    uint32_t nraw;
} run_t;

/* the flags as the table parses them; parse() puts them into opts_t */
typedef struct flagv {
    const char *profstore, *data_dir, *write_dir, *compact_window, *threads;
    bool keep, gen_only, nosync, no_verify;
    uint64_t series, pps, seed, conns, compact_max, anchor, merge_runs;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)

/* clang-format off */
static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "profstore data directory (default: a new /tmp/profstore-storage-XXXXXX,\n"
             "removed at the end unless --keep)"},
    {.name = "keep", .type = PS_FLAG_BOOL, .offset = FV(keep), .help = "keep the data directory"},
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "10", .min = 1,
     .max = UINT32_MAX, .help = "series (default 10)"},
    {.name = "profiles-per-series", .type = PS_FLAG_UINT, .offset = FV(pps), .metavar = "N", .def = "8640",
     .min = 1, .max = UINT32_MAX, .help = "profiles per series, 10 s apart (default 8640 = 24 h)"},
    {.name = "seed", .type = PS_FLAG_UINT, .offset = FV(seed), .metavar = "N", .def = "1", .max = UINT64_MAX,
     .help = "generator seed (default 1)"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "16", .min = 1,
     .max = UINT32_MAX, .help = "concurrent pushes (default 16)"},
    {.name = "compact-max", .type = PS_FLAG_UINT, .offset = FV(compact_max), .metavar = "N", .def = "120",
     .min = 1, .max = UINT32_MAX, .help = "profstore --storage.compact-max-profiles (default 120)"},
    {.name = "compact-window", .type = PS_FLAG_STRING, .offset = FV(compact_window), .metavar = "DUR", .def = "0",
     .help = "profstore --storage.compact-window (default 0 = off: the generated\n"
             "timestamps are in the past, so the 2h default would fold every head\n"
             "by age every 10 s, making small chunks)"},
    {.name = "threads", .type = PS_FLAG_STRING, .offset = FV(threads), .metavar = "N",
     .help = "profstore --threads"},
    {.name = "no-sync", .type = PS_FLAG_BOOL, .offset = FV(nosync),
     .help = "profstore --storage.no-sync (faster; same layout)"},
    {.name = "anchor-profiles", .type = PS_FLAG_UINT, .offset = FV(anchor), .metavar = "N", .def = "2000",
     .max = 100000, .help = "profiles of series 0 in the grouped-zstd anchor (default 2000: 2 groups of 1,000;\n"
                            "0: no anchor)"},
    {.name = "merge-runs", .type = PS_FLAG_UINT, .offset = FV(merge_runs), .metavar = "N", .def = "9", .min = 1,
     .max = 1000, .help = "timed runs of the 24 h merge (default 9, the median printed)"},
    {.name = "write-dir", .type = PS_FLAG_STRING, .offset = FV(write_dir), .metavar = "DIR",
     .help = "also write every generated profile to DIR/series-SS/TS_NS.pb.gz"},
    {.name = "gen-only", .type = PS_FLAG_BOOL, .offset = FV(gen_only),
     .help = "only generate (and write, with --write-dir); no server"},
    {.name = "no-verify", .type = PS_FLAG_BOOL, .offset = FV(no_verify),
     .help = "skip comparing stored totals with the generated ones"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_storage", "usage: bench_storage [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

static void parse(int argc, char **argv, opts_t *o)
{
    flagv_t f = {0};
    ps_bench_flags(&flagset, argc, argv, &f);
    ps_bench_profstore_path(o->profstore, sizeof(o->profstore), f.profstore);
    o->data_dir = f.data_dir;
    o->write_dir = f.write_dir;
    o->compact_window = f.compact_window;
    o->threads = f.threads;
    o->keep = f.keep;
    o->gen_only = f.gen_only;
    o->nosync = f.nosync;
    o->verify = !f.no_verify;
    o->series = (uint32_t)f.series;
    o->pps = (uint32_t)f.pps;
    o->conns = (uint32_t)f.conns;
    o->compact_max = (uint32_t)f.compact_max;
    o->seed = f.seed;
    o->anchor = (uint32_t)f.anchor;
    o->merge_runs = (uint32_t)f.merge_runs;
}

static int on_profile(void *ctx, const ps_bench_gen_info_t *in)
{
    run_t *r = ctx;
    const opts_t *o = r->o;
    r->profiles++;
    r->bytes += in->len;
    r->samples += in->nsamples;
    r->stacks += in->nstacks;
    r->base_count[in->base]++;
    if (r->min_len == 0 || in->len < r->min_len)
        r->min_len = in->len;
    if (in->len > r->max_len)
        r->max_len = in->len;
    r->totals[(size_t)in->series * o->pps + in->index][0] = in->total[0];
    r->totals[(size_t)in->series * o->pps + in->index][1] = in->total[1];
    if (in->series == 0 && in->index < o->anchor) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_err_t err;
        const uint8_t *raw;
        size_t rawn;
        if (ps_gunzip(in->pprof_gz, in->len, 1u << 30, &a, &raw, &rawn, &err) == 0) {
            ps_buf_append(&r->raw, raw, rawn);
            r->raw_end[r->nraw++] = r->raw.len;
        }
        ps_arena_dispose(&a);
    }
    if (o->write_dir != NULL && !r->write_failed) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/series-%02u", o->write_dir, in->series);
        if (in->index == 0 && ps_bench_mkdirs(path) != 0) {
            fprintf(stderr, "bench_storage: cannot create %s: %s\n", path, strerror(errno));
            r->write_failed = 1;
        }
        snprintf(path, sizeof(path), "%s/series-%02u/%lld.pb.gz", o->write_dir, in->series, (long long)in->ts_ns);
        FILE *f = fopen(path, "wb");
        if (f == NULL || fwrite(in->pprof_gz, 1, in->len, f) != in->len) {
            fprintf(stderr, "bench_storage: cannot write %s: %s\n", path, strerror(errno));
            r->write_failed = 1;
        }
        if (f != NULL && fclose(f) != 0)
            r->write_failed = 1;
    }
    if (r->pusher != NULL) {
        char url[512];
        snprintf(url, sizeof(url), "%s/api/v1/profiles/write?labels=%s&time=%lld", r->url, r->label_enc[in->series],
                 (long long)(in->ts_ns / 1000000000LL));
        ps_bench_pusher_post(r->pusher, (int64_t)in->series, url, in->pprof_gz, in->len);
    }
    return 0;
}

#define METRIC(b, name) ps_bench_metric((const char *)(b).data, (b).len, name)

static int get_metrics(const char *url, ps_buf_t *b)
{
    char u[128];
    snprintf(u, sizeof(u), "%s/metrics", url);
    ps_buf_reset(b);
    return ps_bench_http("GET", u, NULL, 0, b) == 200 ? 0 : -1;
}

/* Compares the totals in /api/v1/debug/series with the generated ones. */
static void verify(run_t *r, const char *url)
{
    const opts_t *o = r->o;
    char u[128];
    snprintf(u, sizeof(u), "%s/api/v1/debug/series", url);
    ps_buf_t b = PS_BUF_INIT;
    double t0 = ps_bench_now();
    long code = ps_bench_http("GET", u, NULL, 0, &b);
    double dt = ps_bench_now() - t0;
    if (code != 200) {
        printf("  verify                 GET /api/v1/debug/series: HTTP %ld\n", code);
        ps_buf_dispose(&b);
        return;
    }
    json_error_t je;
    json_t *root = json_loadb((const char *)b.data, b.len, 0, &je);
    if (root == NULL) {
        printf("  verify                 cannot parse /api/v1/debug/series: %s\n", je.text);
        ps_buf_dispose(&b);
        return;
    }
    uint64_t nseries = 0, nprof = 0, match = 0, mismatch = 0, unknown = 0;
    char first[256] = "";
    json_t *data = json_object_get(root, "data"), *s;
    size_t i;
    json_array_foreach(data, i, s)
    {
        json_t *labels = json_object_get(s, "labels");
        const char *inst = json_string_value(json_object_get(labels, "instance"));
        const char *name = json_string_value(json_object_get(labels, "__name__"));
        unsigned si;
        int type = -1;
        if (name != NULL && strstr(name, ":samples:count:") != NULL)
            type = 0;
        else if (name != NULL && strstr(name, ":cpu:nanoseconds:") != NULL)
            type = 1;
        if (inst == NULL || sscanf(inst, "host-%u", &si) != 1 || si >= o->series || type < 0) {
            unknown++;
            continue;
        }
        nseries++;
        json_t *p;
        size_t j;
        json_array_foreach(json_object_get(s, "profiles"), j, p)
        {
            nprof++;
            int64_t ts = json_integer_value(json_object_get(p, "ts"));
            int64_t total = json_integer_value(json_object_get(p, "total"));
            int64_t k = (ts - PS_BENCH_GEN_T0_NS) / PS_BENCH_GEN_STEP_NS;
            if (k < 0 || k >= o->pps || (ts - PS_BENCH_GEN_T0_NS) % PS_BENCH_GEN_STEP_NS != 0) {
                unknown++;
                continue;
            }
            int64_t want = r->totals[(size_t)si * o->pps + (size_t)k][type];
            if (total == want) {
                match++;
            } else {
                if (mismatch == 0)
                    snprintf(first, sizeof(first), "instance host-%02u type %d ts %lld: stored %lld, pushed %lld", si,
                             type, (long long)ts, (long long)total, (long long)want);
                mismatch++;
            }
        }
    }
    printf("  verify                 %llu series, %llu stored profile totals: %llu match the generated ones, %llu "
           "differ, %llu unexpected (expected %llu) [debug/series: %.1f MB in %.2f s]\n",
           (unsigned long long)nseries, (unsigned long long)nprof, (unsigned long long)match,
           (unsigned long long)mismatch, (unsigned long long)unknown, (unsigned long long)r->profiles * 2,
           (double)b.len / 1e6, dt);
    if (mismatch)
        printf("  first difference       %s\n", first);
    json_decref(root);
    ps_buf_dispose(&b);
}

/* Grouped zstd over the anchor's raw profiles: groups of `group` consecutive profiles (a last
 * partial group left out), each compressed whole at `level`; bytes per profile, or -1. */
static double grouped_zstd(const run_t *r, uint32_t group, int level, uint32_t *ngroups)
{
    uint64_t bytes = 0;
    *ngroups = 0;
    for (uint32_t g = 0; (g + 1) * group <= r->nraw; g++) {
        size_t from = g == 0 ? 0 : r->raw_end[g * group - 1], to = r->raw_end[(g + 1) * group - 1];
        size_t cap = ZSTD_compressBound(to - from);
        void *out = ps_xmalloc(cap);
        size_t z = ZSTD_compress(out, cap, r->raw.data + from, to - from, level);
        free(out);
        if (ZSTD_isError(z))
            return -1;
        bytes += z;
        (*ngroups)++;
    }
    return *ngroups ? (double)bytes / ((double)*ngroups * group) : -1;
}

static void print_anchor(const run_t *r, double stored_per_profile)
{
    if (r->nraw == 0)
        return;
    printf("  anchor: grouped raw pprof      series 0's first %u profiles, raw (gunzipped) avg %.0f B/profile\n",
           r->nraw, (double)r->raw.len / r->nraw);
    static const uint32_t groups[] = {100, 1000};
    static const int levels[] = {3, 19};
    for (int gi = 0; gi < 2; gi++)
        for (int li = 0; li < 2; li++) {
            uint32_t ng;
            double t0 = ps_bench_now();
            double per = grouped_zstd(r, groups[gi], levels[li], &ng);
            double dt = ps_bench_now() - t0;
            if (per < 0) {
                printf("  zstd-%-2d of %4u grouped        (not enough profiles: --anchor-profiles)\n", levels[li],
                       groups[gi]);
                continue;
            }
            printf("  zstd-%-2d of %4u grouped        %.0f B/profile (%u groups, %.1f s)   profstore %s: %.2fx\n",
                   levels[li], groups[gi], per, ng, dt, stored_per_profile <= per ? "smaller" : "LARGER",
                   per / stored_per_profile);
        }
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* The 24 h (--profiles-per-series) merge of series 0's cpu type: first call, then o->merge_runs
 * timed; prints the median. */
static void time_merge(const opts_t *o, const char *url)
{
    char sel[256], enc[512], u[1024];
    snprintf(sel, sizeof(sel),
             "{__name__=~\"process_cpu:cpu:nanoseconds:.*\",job=\"bench-storage\",instance=\"host-00\"}");
    ps_bench_urlencode(sel, enc, sizeof(enc));
    long long t0 = PS_BENCH_GEN_T0_NS / 1000000000LL,
              t1 = t0 + (long long)(o->pps - 1) * (PS_BENCH_GEN_STEP_NS / 1000000000LL);
    snprintf(u, sizeof(u), "%s/api/v1/profiles/query?query=%s&start=%lld&end=%lld&format=pprof", url, enc, t0, t1);
    ps_buf_t b = PS_BUF_INIT;
    double c0 = ps_bench_now();
    long code = ps_bench_http("GET", u, NULL, 0, &b);
    double cold = ps_bench_now() - c0;
    if (code != 200) {
        printf("  merge one series %u profiles  HTTP %ld: %.*s\n", o->pps, code, (int)(b.len < 200 ? b.len : 200),
               (const char *)b.data);
        ps_buf_dispose(&b);
        return;
    }
    double *w = ps_xcalloc(o->merge_runs, sizeof(double));
    for (uint32_t i = 0; i < o->merge_runs; i++) {
        ps_buf_reset(&b);
        double s0 = ps_bench_now();
        code = ps_bench_http("GET", u, NULL, 0, &b);
        w[i] = ps_bench_now() - s0;
    }
    qsort(w, o->merge_runs, sizeof(double), cmp_double);
    printf("  merge one series, %u profiles %.2f ms median of %u (min %.2f, max %.2f; first %.2f ms), pprof %zu B\n",
           o->pps, w[o->merge_runs / 2] * 1e3, o->merge_runs, w[0] * 1e3, w[o->merge_runs - 1] * 1e3, cold * 1e3,
           b.len);
    free(w);
    ps_buf_dispose(&b);
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    parse(argc, argv, &o);
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);

    run_t r = {.o = &o};
    r.totals = ps_xcalloc((size_t)o.series * o.pps, sizeof(*r.totals));
    r.label_enc = ps_xcalloc(o.series, sizeof(*r.label_enc));
    r.raw_end = ps_xcalloc((size_t)o.anchor + 1, sizeof(*r.raw_end));
    for (uint32_t s = 0; s < o.series; s++) {
        char ls[100];
        snprintf(ls, sizeof(ls), "{job=\"bench-storage\",instance=\"host-%02u\"}", s);
        ps_bench_urlencode(ls, r.label_enc[s], sizeof(r.label_enc[s]));
    }
    if (o.write_dir != NULL && ps_bench_mkdirs(o.write_dir) != 0) {
        fprintf(stderr, "bench_storage: cannot create %s: %s\n", o.write_dir, strerror(errno));
        return 1;
    }

    printf("bench_storage: %u series x %u profiles (10 s apart, from 2026-11-29T00:00:00Z), seed %llu\n", o.series,
           o.pps, (unsigned long long)o.seed);

    char dir[4096] = "", log[4200] = "";
    int made = 0;
    ps_bench_server_t srv = {0};
    if (!o.gen_only) {
        if (o.data_dir != NULL) {
            snprintf(dir, sizeof(dir), "%s", o.data_dir);
        } else {
            snprintf(dir, sizeof(dir), "/tmp/profstore-storage-XXXXXX");
            if (mkdtemp(dir) == NULL) {
                perror("mkdtemp");
                return 1;
            }
            made = 1;
        }
        char data[4200];
        snprintf(data, sizeof(data), "%s/data", dir);
        snprintf(log, sizeof(log), "%s/profstore.log", dir);
        ps_bench_mkdirs(dir);
        char cmax[32];
        snprintf(cmax, sizeof(cmax), "%u", o.compact_max);
        const char *args[12];
        int na = 0;
        args[na++] = "--retention";
        args[na++] = "0";
        args[na++] = "--storage.compact-max-profiles";
        args[na++] = cmax;
        args[na++] = "--storage.compact-window";
        args[na++] = o.compact_window;
        if (o.nosync)
            args[na++] = "--storage.no-sync";
        if (o.threads != NULL) {
            args[na++] = "--threads";
            args[na++] = o.threads;
        }
        args[na] = NULL;
        if (ps_bench_server_start(&srv, o.profstore, data, log, args) != 0)
            return 1;
        printf("  server %s --retention 0 --storage.compact-max-profiles %u --storage.compact-window %s%s; data in %s\n",
               o.profstore, o.compact_max, o.compact_window, o.nosync ? " --storage.no-sync" : "", data);
        r.pusher = ps_bench_pusher_new(o.conns, 1);
        r.url = srv.url;
    }
    fflush(stdout);

    double w0 = ps_bench_now(), c0 = ps_bench_self_cpu();
    ps_bench_proc_t pr0 = {0}, pr1 = {0};
    if (srv.pid > 0)
        ps_bench_proc_read(srv.pid, &pr0);
    int rc = ps_bench_gen_ex(o.series, o.pps, o.seed, on_profile, &r);
    if (r.pusher != NULL)
        ps_bench_pusher_drain(r.pusher);
    double wall = ps_bench_now() - w0, self_cpu = ps_bench_self_cpu() - c0;
    if (rc != 0) {
        fprintf(stderr, "bench_storage: generation failed\n");
        if (srv.pid > 0)
            ps_bench_server_stop(&srv);
        return 1;
    }
    double n = (double)r.profiles;
    printf("  generated              %llu profiles, %.1f MB gzipped (avg %.0f B, min %zu, max %zu), %llu samples "
           "(avg %.1f/profile, %.1f distinct stacks+labels/profile); bases",
           (unsigned long long)r.profiles, (double)r.bytes / 1e6, (double)r.bytes / n, r.min_len, r.max_len,
           (unsigned long long)r.samples, (double)r.samples / n, (double)r.stacks / n);
    for (int b = 0; b < PS_BENCH_GEN_NBASES; b++)
        printf(" %s:%llu", strrchr(ps_bench_gen_base_files[b], '/') + 1, (unsigned long long)r.base_count[b]);
    printf("\n");
    if (o.write_dir != NULL)
        printf("  written to             %s/series-NN/<ts_ns>.pb.gz%s\n", o.write_dir,
               r.write_failed ? " (FAILED, see above)" : "");

    if (o.gen_only) {
        printf("  generation             %.2f s wall, %.2f s CPU (%.0f us/profile)\n", wall, self_cpu,
               self_cpu / n * 1e6);
        return 0;
    }

    ps_bench_proc_read(srv.pid, &pr1);
    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(r.pusher);
    double *lat = ps_xmalloc((st->nlat + 1) * sizeof(double));
    memcpy(lat, st->lat, st->nlat * sizeof(double));
    double p50 = ps_bench_quantile(lat, st->nlat, 0.5), p99 = ps_bench_quantile(lat, st->nlat, 0.99);
    free(lat);
    printf("  pushed                 %llu ok, %llu failed in %.1f s (%.0f profiles/s incl. generation; p50 %.1f ms, "
           "p99 %.1f ms); server CPU %.1f s, bench CPU (generation + HTTP) %.1f s\n",
           (unsigned long long)st->ok, (unsigned long long)st->failed, wall, n / wall, p50 * 1e3, p99 * 1e3,
           (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys), self_cpu);
    if (st->failed)
        printf("  first error            %s\n", st->first_error);
    uint64_t pushed_ok = st->ok;
    ps_bench_pusher_free(r.pusher);
    r.pusher = NULL;
    int died;
    if (!ps_bench_server_alive(&srv, &died)) {
        char why[128];
        ps_bench_describe_status(died, why, sizeof(why));
        printf("\n  PROFSTORE DIED during the pushes: %s, after %llu acknowledged pushes (log: %s; data kept in %s)\n",
               why, (unsigned long long)pushed_ok, log, dir);
        printf("  its last log lines:\n");
        ps_bench_print_log_tail(log, 3, "    | ");
        return 1;
    }

    ps_buf_t m = PS_BUF_INIT;
    double chunks0 = -1, heads0 = -1, used0 = -1;
    if (get_metrics(srv.url, &m) == 0) {
        chunks0 = METRIC(m, "profstore_storage_chunks");
        heads0 = METRIC(m, "profstore_storage_head_records");
        used0 = METRIC(m, "profstore_storage_used_bytes");
    }
    char u[128];
    snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
    ps_buf_t body = PS_BUF_INIT;
    ps_bench_proc_read(srv.pid, &pr0);
    double t0 = ps_bench_now();
    long code = ps_bench_http("POST", u, "", 0, &body);
    double ct = ps_bench_now() - t0;
    ps_bench_proc_read(srv.pid, &pr1);
    printf("  POST /admin/compact    HTTP %ld in %.2f s (server CPU %.2f s): %.*s", code, ct,
           (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys), (int)body.len, (const char *)body.data);
    if (body.len == 0 || body.data[body.len - 1] != '\n')
        printf("\n");
    ps_buf_dispose(&body);

    double used = -1, file = -1, chunks = -1, heads = -1, nodes = -1, series = -1;
    if (get_metrics(srv.url, &m) == 0) {
        used = METRIC(m, "profstore_storage_used_bytes");
        file = METRIC(m, "profstore_storage_file_bytes");
        chunks = METRIC(m, "profstore_storage_chunks");
        heads = METRIC(m, "profstore_storage_head_records");
        nodes = METRIC(m, "profstore_storage_stack_nodes");
        series = METRIC(m, "profstore_storage_series");
    }
    ps_buf_dispose(&m);
    char mdb[4300];
    snprintf(mdb, sizeof(mdb), "%s/data/data.mdb", dir);
    uint64_t du = 0, size = 0;
    ps_bench_file_usage(mdb, &du, &size);

    printf("  store                  %.0f series, %.0f chunks (%.0f before the compact call), %.0f head records "
           "(%.0f before), %.0f stack-tree nodes; pages in use %.1f MB before the compact call\n",
           series, chunks, chunks0, heads, heads0, nodes, used0 / 1e6);
    printf("\n  profiles pushed                 %llu\n", (unsigned long long)pushed_ok);
    printf("  gzipped pprof input             %.1f MB (avg %.0f B/profile)\n", (double)r.bytes / 1e6,
           (double)r.bytes / n);
    printf("  on disk: du data.mdb            %.1f MB (st_blocks*512; st_size %.1f MB, metric file_bytes %.1f MB)\n",
           (double)du / 1e6, (double)size / 1e6, file / 1e6);
    printf("  on disk: LMDB pages in use      %.1f MB (profstore_storage_used_bytes)\n", used / 1e6);
    printf("  per profile                     %.0f B (du), %.0f B (used) vs %.0f B gzipped pprof\n", (double)du / n,
           used / n, (double)r.bytes / n);
    printf("  disk / gzipped input            du 1/%.1f (%.3f), used 1/%.1f (%.3f)   (target <= 1/10: du %s, used %s)\n",
           (double)r.bytes / (double)du, (double)du / (double)r.bytes, (double)r.bytes / used, used / (double)r.bytes,
           (double)du * 10 <= (double)r.bytes ? "met" : "NOT met", used * 10 <= (double)r.bytes ? "met" : "NOT met");
    printf("  per (stack, value) pair         %.2f B (du), %.2f B (used); pairs = %llu nonzero pprof samples; the store "
           "keeps 2 values per sample (samples/count and cpu/nanoseconds series): %.2f B per stored value (used), "
           "%.2f B per distinct stack+labels and type\n",
           (double)du / (double)r.samples, used / (double)r.samples, (unsigned long long)r.samples,
           used / (2.0 * (double)r.samples), used / (2.0 * (double)r.stacks));

    print_anchor(&r, used / n);
    time_merge(&o, srv.url);
    if (o.verify)
        verify(&r, srv.url);

    int st_exit = ps_bench_server_stop(&srv);
    if (st_exit != 0) {
        char why[128];
        ps_bench_describe_status(st_exit, why, sizeof(why));
        printf("  profstore shutdown     %s (log: %s)\n", why, log);
    }
    ps_bench_file_usage(mdb, &du, &size);
    printf("  after shutdown: du data.mdb     %.1f MB\n", (double)du / 1e6);
    if (made && !o.keep)
        ps_bench_rmrf(dir);
    else
        printf("  data kept in %s\n", dir);
    free(r.totals);
    free(r.label_enc);
    free(r.raw_end);
    ps_buf_dispose(&r.raw);
    curl_global_cleanup();
    return 0;
}
