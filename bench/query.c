/*
 * query.c - bench_query: latency of the query API over a day of realistic CPU profiles.
 *
 * Starts profstore itself (--retention 0 --storage.compact-max-profiles 120
 * --storage.compact-window 0, and --storage.no-sync unless --sync: only the load phase writes)
 * and loads 24 h of 10 s Go CPU profiles (bench/gen.h) for --series series (default 100 x 8,640
 * = 864,000 profiles) over HTTP, then calls POST /api/v1/admin/compact. The data directory is
 * keyed by the parameters (/tmp/profstore-bench-query-<series>x<profiles>[-seed<N>]) and reused
 * by later runs when it holds a completed load (marker file "loaded", plus the generated totals
 * in "totals.bin"); --reload starts afresh. The load is the slow part: on a 2-CPU machine shared
 * by server and generator, about 1,300 profiles/s, so 100 series took 11 min (and ~500 MB of
 * disk); bench/run.sh therefore uses 80 series for its full run (QUERY_SERIES to change).
 *
 * Then times, each as the median of --runs runs after one (cold) run, the wall time of the HTTP
 * request including the transfer, on one keep-alive connection:
 *   - GET /api/v1/profiles/query, format=pprof: 1 h (360 profiles) of one series, next to
 *     `go tool pprof -proto f1 ... f360 > /dev/null` over the same 360 generated files (the ad-hoc
 *     workflow it replaces; PPROF_TMPDIR set): speedup;
 *   - the same for 24 h (8,640 profiles) of one series; also format=flamegraph and format=top;
 *   - GET /api/v1/query_range over 24 h for all series at a 60 s step: sum_over_time(x[59999ms]) of
 *     each type apart (label_replace(...) or label_replace(...): both at once is 2.42's "same labelset"), the profiles of each step's (t - 60 s, t] (a bare selector is Prometheus' newest value);
 *   - a 3 h merge over all series (pprof);
 *   - the 24 h one-series and 3 h all-series merges again over an inuse copy of the same profiles
 *     (the samples/count and cpu/nanoseconds values pushed as memory:inuse_objects/inuse_space, job
 *     bench-query-inuse; loaded once into the data directory when it lacks them), which a merge
 *     averages over time per series: the cost of the average next to the sum's on the same values
 *     (run with --profstore of an older build for "before");
 *   - Grafana's flame graph call, querier.v1.QuerierService/SelectMergeStacktraces over Connect
 *     (binary protobuf, max_nodes 16384) for the whole range of one series (target < 100 ms) and
 *     3 h of all series (target < 1 s), its flamegraph.total checked like the others; and
 *     SelectSeries over the whole range of all series at a 60 s step grouped by instance (the sum
 *     of its points checked), without and with EXEMPLAR_TYPE_INDIVIDUAL (target: within 2x).
 * Correctness, cheaply: the merged profile's cpu total (ps_pprof_decode, summed) and the JSON
 * totals must equal the sums of the generated totals (ps_bench_gen_ex): OK / MISMATCH.
 *
 * Nothing is asserted: targets are printed next to the figures.
 *
 * --rollups runs something else, in process: merges through rollups next to raw ones over a month
 * of profiles, and the rollups' price (see rollup_bench at the end of this file).
 */
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/varint.h"
#include "gen.h"
#include "ingest/ingest.h"
#include "proto/pprof.h"
#include "query/query.h"
#include "storage/store.h"
#include "util.h"

#define T0_S (PS_BENCH_GEN_T0_NS / 1000000000LL)
#define STEP_S (PS_BENCH_GEN_STEP_NS / 1000000000LL)
#define JOB "bench-query"

typedef struct opts {
    char profstore[4096];
    const char *data_dir, *compact_window, *threads, *go;
    uint32_t series, pps, conns, compact_max, runs, pprof_runs;
    uint64_t seed;
    int reload, sync, no_pprof_tool, no_inuse;
    int rollups;
    uint32_t rollup_days, rollup_step, price_days, rollup_min;
} opts_t;

/* the flags as the table parses them; parse() puts them into opts_t */
typedef struct flagv {
    const char *profstore, *data_dir, *compact_window, *threads, *go;
    uint64_t series, pps, seed, conns, compact_max, runs, pprof_runs;
    bool reload, sync, no_pprof_tool, no_inuse;
    bool rollups;
    uint64_t rollup_days, rollup_step, price_days, rollup_min;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)

/* clang-format off */
static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "100", .min = 1,
     .max = UINT32_MAX, .help = "series (default 100)"},
    {.name = "profiles-per-series", .type = PS_FLAG_UINT, .offset = FV(pps), .metavar = "N", .def = "8640",
     .min = 1, .max = UINT32_MAX, .help = "profiles per series, 10 s apart (default 8640 = 24 h)"},
    {.name = "seed", .type = PS_FLAG_UINT, .offset = FV(seed), .metavar = "N", .def = "1", .max = UINT64_MAX,
     .help = "generator seed (default 1)"},
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "base directory (default /tmp/profstore-bench-query-<series>x<profiles>[-seed<N>]);\n"
             "reused when it holds a completed load of the same parameters"},
    {.name = "reload", .type = PS_FLAG_BOOL, .offset = FV(reload),
     .help = "discard what the data directory holds and load again"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "16", .min = 1,
     .max = UINT32_MAX, .help = "concurrent pushes while loading (default 16)"},
    {.name = "compact-max", .type = PS_FLAG_UINT, .offset = FV(compact_max), .metavar = "N", .def = "120",
     .min = 1, .max = UINT32_MAX, .help = "profstore --storage.compact-max-profiles (default 120)"},
    {.name = "compact-window", .type = PS_FLAG_STRING, .offset = FV(compact_window), .metavar = "DUR", .def = "0",
     .help = "profstore --storage.compact-window (default 0 = off: the generated\n"
             "timestamps are in the past, so the 2h default would fold every head\n"
             "by age every 10 s, making small chunks)"},
    {.name = "threads", .type = PS_FLAG_STRING, .offset = FV(threads), .metavar = "N",
     .help = "profstore --threads"},
    {.name = "sync", .type = PS_FLAG_BOOL, .offset = FV(sync),
     .help = "do not pass --storage.no-sync (it is passed by default: it only\n"
             "speeds up the load phase)"},
    {.name = "runs", .type = PS_FLAG_UINT, .offset = FV(runs), .metavar = "N", .def = "5", .min = 1,
     .max = UINT32_MAX, .help = "timed runs per query, after one cold run (default 5)"},
    {.name = "pprof-runs", .type = PS_FLAG_UINT, .offset = FV(pprof_runs), .metavar = "N", .def = "3",
     .max = UINT32_MAX, .help = "timed runs of go tool pprof, after one checked run (default 3)"},
    {.name = "go", .type = PS_FLAG_STRING, .offset = FV(go), .metavar = "PATH", .def = "go",
     .help = "go binary (default: go in PATH)"},
    {.name = "no-pprof-tool", .type = PS_FLAG_BOOL, .offset = FV(no_pprof_tool),
     .help = "skip the go tool pprof comparison"},
    {.name = "no-inuse", .type = PS_FLAG_BOOL, .offset = FV(no_inuse),
     .help = "skip the inuse copy (its load and its merges)"},
    {.name = "rollups", .type = PS_FLAG_BOOL, .offset = FV(rollups),
     .help = "instead of the HTTP run: merges through rollups next to raw ones, in\n"
             "process, over --rollup-days of --series series (see rollup_bench)"},
    {.name = "rollup-days", .type = PS_FLAG_UINT, .offset = FV(rollup_days), .metavar = "N", .def = "30", .min = 2,
     .max = 3650, .help = "--rollups: days of profiles per series (default 30)"},
    {.name = "rollup-step", .type = PS_FLAG_UINT, .offset = FV(rollup_step), .metavar = "S", .def = "60", .min = 1,
     .max = 86400, .help = "--rollups: seconds between two profiles of a series (default 60)"},
    {.name = "price-days", .type = PS_FLAG_UINT, .offset = FV(price_days), .metavar = "N", .def = "1", .min = 0,
     .max = 3650, .help = "--rollups: days loaded twice (with and without rollups) for the price (default 1;\n"
             "0: no price, the merges only)"},
    {.name = "rollup-min-profiles", .type = PS_FLAG_UINT, .offset = FV(rollup_min), .metavar = "N", .def = "0",
     .max = UINT32_MAX, .help = "--rollups: the store's rollup_min_profiles for the merges' store (default\n"
             "0: the store's default; 1: a rollup for every window, as before it)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_query", "usage: bench_query [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

static void parse(int argc, char **argv, opts_t *o)
{
    flagv_t f = {0};
    ps_bench_flags(&flagset, argc, argv, &f);
    ps_bench_profstore_path(o->profstore, sizeof(o->profstore), f.profstore);
    o->data_dir = f.data_dir;
    o->compact_window = f.compact_window;
    o->threads = f.threads;
    o->go = f.go;
    o->series = (uint32_t)f.series;
    o->pps = (uint32_t)f.pps;
    o->conns = (uint32_t)f.conns;
    o->compact_max = (uint32_t)f.compact_max;
    o->runs = (uint32_t)f.runs;
    o->pprof_runs = (uint32_t)f.pprof_runs;
    o->seed = f.seed;
    o->reload = f.reload;
    o->sync = f.sync;
    o->no_pprof_tool = f.no_pprof_tool;
    o->no_inuse = f.no_inuse;
    o->rollups = f.rollups;
    o->rollup_days = (uint32_t)f.rollup_days;
    o->rollup_step = (uint32_t)f.rollup_step;
    o->price_days = (uint32_t)f.price_days;
    o->rollup_min = (uint32_t)f.rollup_min;
}

/* ---- the generated totals: [series * pps + index][0: samples/count, 1: cpu/nanoseconds] ---- */

static int64_t (*totals)[2];

static int64_t gen_sum(const opts_t *o, uint32_t s0, uint32_t s1, uint32_t i0, uint32_t n, int type)
{
    int64_t sum = 0;
    for (uint32_t s = s0; s < s1; s++)
        for (uint32_t i = i0; i < i0 + n && i < o->pps; i++)
            sum += totals[(size_t)s * o->pps + i][type];
    return sum;
}

/* ---- load ---- */

typedef struct load {
    const opts_t *o;
    ps_bench_pusher_t *pusher;
    const char *url;
    char (*label_enc)[160];
    uint64_t n, bytes, samples, want;
    double t0, next_report;
} load_t;

static int on_load(void *ctx, const ps_bench_gen_info_t *in)
{
    load_t *l = ctx;
    const opts_t *o = l->o;
    totals[(size_t)in->series * o->pps + in->index][0] = in->total[0];
    totals[(size_t)in->series * o->pps + in->index][1] = in->total[1];
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/profiles/write?labels=%s&time=%lld", l->url, l->label_enc[in->series],
             (long long)(in->ts_ns / 1000000000LL));
    ps_bench_pusher_post(l->pusher, (int64_t)in->series, url, in->pprof_gz, in->len);
    l->n++;
    l->bytes += in->len;
    l->samples += in->nsamples;
    double now = ps_bench_now();
    if (now >= l->next_report) {
        double el = now - l->t0, rate = (double)l->n / el;
        const ps_bench_push_stats_t *st = ps_bench_pusher_stats(l->pusher);
        printf("    %9llu / %llu profiles (%4.1f%%) in %6.0f s: %.0f profiles/s, ETA %.0f s%s\n",
               (unsigned long long)l->n, (unsigned long long)l->want, 100.0 * (double)l->n / (double)l->want, el, rate,
               (double)(l->want - l->n) / rate, st->failed ? " (PUSHES FAILING)" : "");
        fflush(stdout);
        l->next_report = now + 60;
    }
    return 0;
}

/* ---- the inuse copy: each generated profile with its sample and period types renamed ---- */

static int rename_str(ps_profile_t *p, uint32_t idx, const char *from, const char *to)
{
    ps_str_t s = ps_profile_str(p, idx);
    if (idx >= p->nstrings || s.len != strlen(from) || memcmp(s.ptr, from, s.len) != 0)
        return 0;
    p->strings[idx] = (ps_str_t){to, (uint32_t)strlen(to)};
    return 1;
}

static int on_load_inuse(void *ctx, const ps_bench_gen_info_t *in)
{
    load_t *l = ctx;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_buf_t out = PS_BUF_INIT;
    if (ps_pprof_decode(in->pprof_gz, in->len, NULL, &a, &p, &err) != 0) {
        fprintf(stderr, "bench_query: inuse copy: %s\n", err.msg);
        ps_arena_dispose(&a);
        return -1;
    }
    /* samples/count -> inuse_objects/count, cpu/nanoseconds (and the period type) -> inuse_space/bytes */
    for (uint32_t k = 0; k < p.ntypes; k++) {
        rename_str(&p, p.sample_types[k].type, "samples", "inuse_objects");
        rename_str(&p, p.sample_types[k].type, "cpu", "inuse_space");
        rename_str(&p, p.sample_types[k].unit, "nanoseconds", "bytes");
    }
    rename_str(&p, p.period_type.type, "cpu", "inuse_space");
    rename_str(&p, p.period_type.unit, "nanoseconds", "bytes");
    if (ps_pprof_encode(&p, 1, &out, &err) != 0) {
        fprintf(stderr, "bench_query: inuse copy: %s\n", err.msg);
        ps_arena_dispose(&a);
        return -1;
    }
    char url[512];
    snprintf(url, sizeof(url), "%s/api/v1/profiles/write?name=memory&labels=%s&time=%lld", l->url,
             l->label_enc[in->series], (long long)(in->ts_ns / 1000000000LL));
    ps_bench_pusher_post(l->pusher, (int64_t)in->series, url, out.data, out.len);
    l->n++;
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
    return 0;
}

/* The sum over series s0..s1-1 of each series' mean cpu total over profiles i0..i0+n-1 (what an
 * average merge's total is, up to the rounding of each node's mean). */
static double gen_mean_sum(const opts_t *o, uint32_t s0, uint32_t s1, uint32_t i0, uint32_t n)
{
    double sum = 0;
    for (uint32_t s = s0; s < s1; s++)
        sum += (double)gen_sum(o, s, s + 1, i0, n, 1) / (double)n;
    return sum;
}

/* ---- plain HTTP on one keep-alive connection, timed ---- */

static CURL *qh;
/* the body of the next requests (a binary Connect message), or NULL for GET */
static const ps_buf_t *q_post;

static size_t to_buf(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ps_buf_append(ud, ptr, size * nmemb);
    return size * nmemb;
}

/* GET url into out (reset first); *wall: seconds around curl_easy_perform; *ttfb: time to the
 * first response byte (curl's STARTTRANSFER). Returns the HTTP status or -1. */
static long qget(const char *url, ps_buf_t *out, double *wall, double *ttfb)
{
    if (qh == NULL) {
        qh = curl_easy_init();
        curl_easy_setopt(qh, CURLOPT_WRITEFUNCTION, to_buf);
        curl_easy_setopt(qh, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(qh, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(qh, CURLOPT_TIMEOUT, 3600L);
        curl_easy_setopt(qh, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
    }
    ps_buf_reset(out);
    curl_easy_setopt(qh, CURLOPT_URL, url);
    struct curl_slist *hdrs = NULL;
    if (q_post) {
        hdrs = curl_slist_append(hdrs, "Content-Type: application/proto");
        hdrs = curl_slist_append(hdrs, "Connect-Protocol-Version: 1");
        curl_easy_setopt(qh, CURLOPT_POSTFIELDS, (const char *)q_post->data);
        curl_easy_setopt(qh, CURLOPT_POSTFIELDSIZE, (long)q_post->len);
    } else {
        curl_easy_setopt(qh, CURLOPT_HTTPGET, 1L);
    }
    curl_easy_setopt(qh, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(qh, CURLOPT_WRITEDATA, out);
    double t0 = ps_bench_now();
    CURLcode rc = curl_easy_perform(qh);
    *wall = ps_bench_now() - t0;
    curl_easy_setopt(qh, CURLOPT_HTTPHEADER, NULL);
    curl_slist_free_all(hdrs);
    long code = -1;
    curl_off_t st = 0;
    if (rc == CURLE_OK) {
        curl_easy_getinfo(qh, CURLINFO_RESPONSE_CODE, &code);
        curl_easy_getinfo(qh, CURLINFO_STARTTRANSFER_TIME_T, &st);
    }
    *ttfb = (double)st / 1e6;
    return code;
}

typedef struct meas {
    long code;
    double cold, med, min, max, ttfb, cpu; /* cpu: server CPU per request (mean; /proc, 10 ms ticks) */
    size_t bytes;
    ps_buf_t body;                        /* of the last run */
} meas_t;

static double median(double *v, size_t n) { return ps_bench_quantile(v, n, 0.5); }

static void measure(pid_t pid, const char *url, uint32_t runs, meas_t *m)
{
    double *w = ps_xcalloc(runs, sizeof(double)), *t = ps_xcalloc(runs, sizeof(double)),
           *c = ps_xcalloc(runs, sizeof(double));
    double ttfb;
    m->code = qget(url, &m->body, &m->cold, &ttfb);
    if (m->code != 200) {
        free(w);
        free(t);
        free(c);
        return;
    }
    for (uint32_t i = 0; i < runs; i++) {
        ps_bench_proc_t p0, p1;
        ps_bench_proc_read(pid, &p0);
        long code = qget(url, &m->body, &w[i], &t[i]);
        ps_bench_proc_read(pid, &p1);
        c[i] = (p1.cpu_user + p1.cpu_sys) - (p0.cpu_user + p0.cpu_sys);
        if (code != 200) {
            m->code = code;
            break;
        }
    }
    m->bytes = m->body.len;
    m->med = median(w, runs);
    m->min = w[0];
    m->max = w[runs - 1];
    m->ttfb = median(t, runs);
    m->cpu = 0;
    for (uint32_t i = 0; i < runs; i++)
        m->cpu += c[i] / runs;
    free(w);
    free(t);
    free(c);
}

static const char *fmt_time(double s, char *buf, size_t n)
{
    if (s < 1e-3)
        snprintf(buf, n, "%.0f us", s * 1e6);
    else if (s < 1)
        snprintf(buf, n, "%.1f ms", s * 1e3);
    else
        snprintf(buf, n, "%.2f s", s);
    return buf;
}

static const char *fmt_bytes(size_t b, char *buf, size_t n)
{
    if (b < 10000)
        snprintf(buf, n, "%zu B", b);
    else if (b < 10000000)
        snprintf(buf, n, "%.1f KB", (double)b / 1e3);
    else
        snprintf(buf, n, "%.1f MB", (double)b / 1e6);
    return buf;
}

static const char *mark(int good) { return good ? "met" : "NOT met"; }

/* One line: name, median (min..max, cold), bytes, TTFB, server CPU; target if > 0. Returns 1 if
 * the request worked. */
static int print_meas(const char *name, const meas_t *m, double target, uint64_t nprofiles)
{
    char a[32], b[32], c[32], d[32], e[32], f[32], g[32];
    if (m->code != 200) {
        printf("  %-52s HTTP %ld: %.*s\n", name, m->code, (int)(m->body.len > 400 ? 400 : m->body.len),
               m->body.data ? (const char *)m->body.data : "");
        return 0;
    }
    printf("  %-52s median %s (min %s, max %s; cold first run %s); %s; first byte after %s; server CPU %s",
           name, fmt_time(m->med, a, sizeof(a)), fmt_time(m->min, b, sizeof(b)), fmt_time(m->max, c, sizeof(c)),
           fmt_time(m->cold, d, sizeof(d)), fmt_bytes(m->bytes, e, sizeof(e)), fmt_time(m->ttfb, f, sizeof(f)),
           fmt_time(m->cpu, g, sizeof(g)));
    if (nprofiles)
        printf("; %.2f us/profile (%.0f profiles/s)", m->med / (double)nprofiles * 1e6, (double)nprofiles / m->med);
    if (target > 0)
        printf("   (target < %s: %s)", fmt_time(target, b, sizeof(b)), mark(m->med < target));
    printf("\n");
    return 1;
}

/* ---- checks ---- */

/* Sum of the values of sample type `type` ("cpu") of a (gzipped) pprof profile. */
static int pprof_total(const void *data, size_t len, const char *type, int64_t *total, uint32_t *nsamples,
                       char *why, size_t whyn)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_inflated = (size_t)1 << 30;
    lim.max_samples = 100000000;
    lim.max_locations = 100000000;
    lim.max_functions = 100000000;
    lim.max_strings = 100000000;
    if (ps_pprof_decode(data, len, &lim, &a, &p, &err) != 0) {
        snprintf(why, whyn, "ps_pprof_decode: %s", err.msg);
        ps_arena_dispose(&a);
        return -1;
    }
    int k = -1;
    for (uint32_t i = 0; i < p.ntypes; i++) {
        ps_str_t s = ps_profile_str(&p, p.sample_types[i].type);
        if (s.len == strlen(type) && memcmp(s.ptr, type, s.len) == 0)
            k = (int)i;
    }
    if (k < 0) {
        snprintf(why, whyn, "no sample type \"%s\" among %u", type, p.ntypes);
        ps_arena_dispose(&a);
        return -1;
    }
    int64_t sum = 0;
    for (uint32_t i = 0; i < p.nsamples; i++)
        sum += p.samples[i].values[k];
    *total = sum;
    *nsamples = p.nsamples;
    ps_arena_dispose(&a);
    return 0;
}

static void print_check(const char *what, int64_t got, int64_t want, const char *extra)
{
    printf("    check: %-44s %s: %lld (server) vs %lld (generated)%s%s\n", what, got == want ? "OK" : "MISMATCH",
           (long long)got, (long long)want, got == want ? "" : " <<<", extra ? extra : "");
}

/* An average merge's inuse_space total against the generated per-series means (each node's mean
 * is rounded, so within 0.01 %); an old build that sums says so. */
/* The total of sample type st in an answer's merged profile (and its samples); false, said, when
 * the answer failed or cannot be read. */
static bool merged_total(const char *what, const meas_t *m, const char *st, int64_t *got, uint32_t *ns)
{
    if (m->code != 200)
        return false;
    char why[600];
    if (pprof_total(m->body.data, m->body.len, st, got, ns, why, sizeof(why)) != 0) {
        printf("    check: %-44s MISMATCH: cannot read the merged profile: %s\n", what, why);
        return false;
    }
    return true;
}

static void check_inuse(const char *what, const meas_t *m, double mean, int64_t sum)
{
    int64_t got;
    uint32_t ns;
    if (!merged_total(what, m, "inuse_space", &got, &ns))
        return;
    double rel = mean > 0 ? fabs((double)got - mean) / mean : 0;
    printf("    check: %-44s %s: %lld (server) vs %.0f (generated per-series means; sum %lld)%s\n", what,
           rel < 1e-4 ? "OK (average)" : got == sum ? "SUMMED (a build before the average)" : "MISMATCH", (long long)got,
           mean, (long long)sum, rel < 1e-4 || got == sum ? "" : " <<<");
}

static void check_pprof(const char *what, const meas_t *m, int64_t want)
{
    int64_t got;
    uint32_t ns;
    if (!merged_total(what, m, "cpu", &got, &ns))
        return;
    char extra[64];
    snprintf(extra, sizeof(extra), "; %u samples in the merged profile", ns);
    print_check(what, got, want, extra);
}

/* "total" of a JSON body (flamegraph, top). */
static void check_json_total(const char *what, const meas_t *m, int64_t want)
{
    if (m->code != 200)
        return;
    json_error_t je;
    json_t *root = json_loadb((const char *)m->body.data, m->body.len, 0, &je);
    json_t *t = root ? json_object_get(root, "total") : NULL;
    if (t == NULL || !json_is_integer(t)) {
        printf("    check: %-44s MISMATCH: no integer \"total\" in the response%s%s\n", what, root ? "" : ": ",
               root ? "" : je.text);
    } else {
        print_check(what, json_integer_value(t), want, NULL);
    }
    json_decref(root);
}

/* Sums the query_range matrix by profile type; counts series and points. */
static void check_matrix(const char *what, const meas_t *m, const char *cpu_type, const char *samples_type,
                         int64_t want_cpu, int64_t want_samples, uint32_t want_series_cpu,
                         uint32_t want_series_samples)
{
    if (m->code != 200)
        return;
    json_error_t je;
    json_t *root = json_loadb((const char *)m->body.data, m->body.len, 0, &je);
    if (root == NULL) {
        printf("    check: %-44s MISMATCH: cannot parse the response: %s\n", what, je.text);
        return;
    }
    json_t *res = json_object_get(json_object_get(root, "data"), "result"), *s;
    size_t i;
    uint64_t npoints = 0, nseries = 0, ncpu = 0, nsamples = 0, other = 0;
    long double sum_cpu = 0, sum_samples = 0, sum_other = 0;
    json_array_foreach(res, i, s)
    {
        nseries++;
        const char *name = json_string_value(json_object_get(json_object_get(s, "metric"), "__name__"));
        int kind = name == NULL ? 2 : strcmp(name, cpu_type) == 0 ? 1 : strcmp(name, samples_type) == 0 ? 0 : 2;
        if (kind == 1)
            ncpu++;
        else if (kind == 0)
            nsamples++;
        else
            other++;
        json_t *pt;
        size_t k;
        json_array_foreach(json_object_get(s, "values"), k, pt)
        {
            npoints++;
            const char *v = json_string_value(json_array_get(pt, 1));
            double x = v ? strtod(v, NULL) : 0;
            if (kind == 1)
                sum_cpu += x;
            else if (kind == 0)
                sum_samples += x;
            else
                sum_other += x;
        }
    }
    printf("    result: %llu series (%llu cpu, %llu samples, %llu other), %llu points\n",
           (unsigned long long)nseries, (unsigned long long)ncpu, (unsigned long long)nsamples,
           (unsigned long long)other, (unsigned long long)npoints);
    char w[128];
    if (want_series_cpu) {
        snprintf(w, sizeof(w), "%s, cpu", what);
        print_check(w, (int64_t)llroundl(sum_cpu), want_cpu, ncpu == want_series_cpu ? NULL : " (series count differs)");
    }
    if (want_series_samples) {
        snprintf(w, sizeof(w), "%s, samples", what);
        print_check(w, (int64_t)llroundl(sum_samples), want_samples,
                    nsamples == want_series_samples ? NULL : " (series count differs)");
    }
    if (!want_series_cpu && !want_series_samples) {
        /* an aggregate without __name__: compare with the cpu sum */
        print_check(what, (int64_t)llroundl(sum_other), want_cpu, NULL);
    }
    json_decref(root);
}

/* ---- go tool pprof ---- */

typedef struct pfiles {
    const opts_t *o;
    const char *dir;
    uint32_t from, n;
    char **paths;
    uint32_t written;
    int64_t total[2];
    int failed;
} pfiles_t;

static int on_pfile(void *ctx, const ps_bench_gen_info_t *in)
{
    pfiles_t *f = ctx;
    if (in->index < f->from)
        return 0;
    char path[4096];
    snprintf(path, sizeof(path), "%s/cpu-%04u.pb.gz", f->dir, in->index - f->from);
    FILE *fp = fopen(path, "wb");
    if (fp == NULL || fwrite(in->pprof_gz, 1, in->len, fp) != in->len) {
        fprintf(stderr, "bench_query: cannot write %s: %s\n", path, strerror(errno));
        f->failed = 1;
        if (fp)
            fclose(fp);
        return 1;
    }
    if (fclose(fp) != 0) {
        f->failed = 1;
        return 1;
    }
    f->paths[f->written++] = ps_xstrndup(path, strlen(path));
    f->total[0] += in->total[0];
    f->total[1] += in->total[1];
    return 0;
}

/* Runs `go tool pprof -proto files... > out` with PPROF_TMPDIR=dir; returns wall seconds or -1. */
static double run_pprof(const opts_t *o, const pfiles_t *f, const char *out, const char *errlog)
{
    const char **argv = ps_xcalloc(f->written + 5, sizeof(char *));
    int na = 0;
    argv[na++] = o->go;
    argv[na++] = "tool";
    argv[na++] = "pprof";
    argv[na++] = "-proto";
    for (uint32_t i = 0; i < f->written; i++)
        argv[na++] = f->paths[i];
    argv[na] = NULL;
    fflush(stdout);
    double t0 = ps_bench_now();
    pid_t pid = fork();
    if (pid == 0) {
        int fo = open(out, O_WRONLY | O_CREAT | O_TRUNC, 0644), fe = open(errlog, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fo < 0 || fe < 0)
            _exit(126);
        dup2(fo, 1);
        dup2(fe, 2);
        setenv("PPROF_TMPDIR", f->dir, 1);
        execvp(o->go, (char *const *)argv);
        _exit(127);
    }
    int st = 0;
    if (pid < 0 || waitpid(pid, &st, 0) != pid)
        st = -1;
    double wall = ps_bench_now() - t0;
    free(argv);
    if (st != 0) {
        char why[128];
        ps_bench_describe_status(st, why, sizeof(why));
        printf("  go tool pprof: %s; its stderr:\n", why);
        ps_bench_print_log_tail(errlog, 5, "    | ");
        return -1;
    }
    return wall;
}

/* ---- misc ---- */

static int get_metrics(const char *url, ps_buf_t *b)
{
    char u[128];
    snprintf(u, sizeof(u), "%s/metrics", url);
    ps_buf_reset(b);
    return ps_bench_http("GET", u, NULL, 0, b) == 200 ? 0 : -1;
}
#define METRIC(b, name) ps_bench_metric((const char *)(b).data, (b).len, name)

static void hhmm(uint32_t index, char *buf, size_t n)
{
    int64_t s = (int64_t)index * STEP_S;
    snprintf(buf, n, "%02lld:%02lld", (long long)(s / 3600), (long long)(s / 60 % 60));
}

static const char *hours(uint32_t nprof, char *buf, size_t n)
{
    double h = (double)nprof * STEP_S / 3600.0;
    snprintf(buf, n, h == floor(h) ? "%.0f h" : "%.2f h", h);
    return buf;
}

/* The marker of a completed load: the parameters and the load's figures. */
typedef struct marker {
    uint32_t series, pps;
    unsigned long long seed, profiles, bytes;
    double load_s, compact_s, server_cpu;
    char when[64];
} marker_t;

static int marker_read(const char *path, marker_t *m)
{
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return -1;
    memset(m, 0, sizeof(*m));
    int n = fscanf(f, "series=%u pps=%u seed=%llu profiles=%llu bytes=%llu load_s=%lf compact_s=%lf server_cpu=%lf "
                      "when=%63s",
                   &m->series, &m->pps, &m->seed, &m->profiles, &m->bytes, &m->load_s, &m->compact_s, &m->server_cpu,
                   m->when);
    fclose(f);
    return n == 9 ? 0 : -1;
}

static int marker_write(const char *path, const marker_t *m)
{
    FILE *f = fopen(path, "w");
    if (f == NULL)
        return -1;
    fprintf(f, "series=%u pps=%u seed=%llu profiles=%llu bytes=%llu load_s=%.3f compact_s=%.3f server_cpu=%.3f when=%s\n",
            m->series, m->pps, m->seed, m->profiles, m->bytes, m->load_s, m->compact_s, m->server_cpu, m->when);
    return fclose(f);
}

static int totals_io(const char *path, const opts_t *o, int write)
{
    size_t n = (size_t)o->series * o->pps;
    FILE *f = fopen(path, write ? "wb" : "rb");
    if (f == NULL)
        return -1;
    size_t k = write ? fwrite(totals, sizeof(*totals), n, f) : fread(totals, sizeof(*totals), n, f);
    int extra = !write && fgetc(f) != EOF;
    if (fclose(f) != 0 || k != n || extra)
        return -1;
    return 0;
}

/* /api/v1/profiles/types: the ids with sample type cpu/nanoseconds and samples/count. */
static int find_types(const char *url, char *cpu, char *samples, size_t n)
{
    char u[256];
    snprintf(u, sizeof(u), "%s/api/v1/profiles/types", url);
    ps_buf_t b = PS_BUF_INIT;
    cpu[0] = samples[0] = 0;
    if (ps_bench_http("GET", u, NULL, 0, &b) != 200) {
        ps_buf_dispose(&b);
        return -1;
    }
    json_error_t je;
    json_t *root = json_loadb((const char *)b.data, b.len, 0, &je), *t;
    size_t i;
    json_array_foreach(json_object_get(root, "data"), i, t)
    {
        const char *id = json_string_value(json_object_get(t, "id"));
        const char *st = json_string_value(json_object_get(t, "sample_type"));
        const char *su = json_string_value(json_object_get(t, "sample_unit"));
        if (id == NULL || st == NULL || su == NULL)
            continue;
        if (!strcmp(st, "cpu") && !strcmp(su, "nanoseconds"))
            snprintf(cpu, n, "%s", id);
        else if (!strcmp(st, "samples") && !strcmp(su, "count"))
            snprintf(samples, n, "%s", id);
    }
    json_decref(root);
    ps_buf_dispose(&b);
    return cpu[0] && samples[0] ? 0 : -1;
}

/* Number of series /api/v1/series returns for sel. */
static long count_series(const char *url, const char *sel)
{
    char enc[512], u[1024];
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(u, sizeof(u), "%s/api/v1/series?match[]=%s", url, enc);
    ps_buf_t b = PS_BUF_INIT;
    long n = -1;
    if (ps_bench_http("GET", u, NULL, 0, &b) == 200) {
        json_error_t je;
        json_t *root = json_loadb((const char *)b.data, b.len, 0, &je);
        if (root != NULL)
            n = (long)json_array_size(json_object_get(root, "data"));
        json_decref(root);
    }
    ps_buf_dispose(&b);
    return n;
}

static void profile_url(char *out, size_t n, const char *base, const char *sel, uint32_t from, uint32_t count,
                        const char *format)
{
    char enc[512];
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(out, n, "%s/api/v1/profiles/query?query=%s&start=%lld&end=%lld&format=%s", base, enc,
             (long long)(T0_S + (int64_t)from * STEP_S), (long long)(T0_S + (int64_t)(from + count - 1) * STEP_S),
             format);
}

static void range_url(char *out, size_t n, const char *base, const char *q, uint32_t pps)
{
    char enc[1536];
    ps_bench_urlencode(q, enc, sizeof(enc));
    /* end: the first step at or after the last profile (the queries are sum_over_time(x[59999ms]):
     * t_k holds the profiles in (t_k - 60 s, t_k]) */
    int64_t last = (int64_t)(pps - 1) * STEP_S, end = (last + 59) / 60 * 60;
    snprintf(out, n, "%s/api/v1/query_range?query=%s&start=%lld&end=%lld&step=60s", base, enc, (long long)T0_S,
             (long long)(T0_S + end));
}

/* ---- Connect: querier.v1.QuerierService/SelectMergeStacktraces, binary, as Grafana sends it ---- */

static void pb_str(ps_buf_t *b, uint32_t field, const char *s)
{
    ps_put_uvarint(b, (uint64_t)field << 3 | 2);
    ps_put_uvarint(b, strlen(s));
    ps_buf_append(b, s, strlen(s));
}

/* SelectMergeStacktracesRequest{profile_typeID, label_selector, start, end (ms), max_nodes 16384} */
static void merge_request(ps_buf_t *b, const char *type, const char *sel, uint32_t from, uint32_t count)
{
    ps_buf_reset(b);
    pb_str(b, 1, type);
    pb_str(b, 2, sel);
    ps_put_uvarint(b, 3 << 3);
    ps_put_uvarint(b, (uint64_t)(T0_S + (int64_t)from * STEP_S) * 1000);
    ps_put_uvarint(b, 4 << 3);
    ps_put_uvarint(b, (uint64_t)(T0_S + (int64_t)(from + count - 1) * STEP_S) * 1000);
    ps_put_uvarint(b, 5 << 3);
    ps_put_uvarint(b, 16384);
}

/* core/varint.h's reader over [*p, e): 0, or -1 if truncated or too long */
static int rd_varint(const uint8_t **p, const uint8_t *e, uint64_t *v)
{
    ps_dec_t d;
    ps_dec_init(&d, *p, (size_t)(e - *p));
    *v = ps_dec_uvarint(&d);
    *p = d.p;
    return d.err ? -1 : 0;
}

/* The field's varint (first occurrence) or bytes of a message; -1 if absent or malformed. */
static int pb_field(const uint8_t *p, const uint8_t *e, uint32_t field, uint64_t *v, const uint8_t **sub,
                    size_t *subn)
{
    while (p < e) {
        uint64_t tag, x;
        if (rd_varint(&p, e, &tag))
            return -1;
        uint32_t wt = (uint32_t)(tag & 7);
        if (wt == 0) {
            if (rd_varint(&p, e, &x))
                return -1;
            if ((tag >> 3) == field) {
                *v = x;
                return 0;
            }
        } else if (wt == 2) {
            if (rd_varint(&p, e, &x) || x > (uint64_t)(e - p))
                return -1;
            if ((tag >> 3) == field) {
                *sub = p;
                *subn = (size_t)x;
                return 0;
            }
            p += x;
        } else if (wt == 1 || wt == 5) {
            p += wt == 1 ? 8 : 4;
        } else {
            return -1;
        }
    }
    return -1;
}

/* SelectSeriesRequest{profile_typeID, label_selector, start, end (ms), group_by [by], step s,
 * exemplar_type (0: absent; 2: INDIVIDUAL)} */
static void series_request(ps_buf_t *b, const char *type, const char *sel, uint32_t pps, const char *by, double step,
                           int exemplar_type)
{
    int64_t last = (int64_t)(pps - 1) * STEP_S, end = (last + 59) / 60 * 60;
    ps_buf_reset(b);
    pb_str(b, 1, type);
    pb_str(b, 2, sel);
    ps_put_uvarint(b, 3 << 3);
    ps_put_uvarint(b, (uint64_t)T0_S * 1000);
    ps_put_uvarint(b, 4 << 3);
    ps_put_uvarint(b, (uint64_t)(T0_S + end) * 1000);
    pb_str(b, 5, by);
    ps_put_uvarint(b, 6 << 3 | 1);
    ps_buf_append(b, &step, 8); /* little-endian double, as x86-64 holds it */
    if (exemplar_type) {
        ps_put_uvarint(b, 10 << 3);
        ps_put_uvarint(b, (uint64_t)exemplar_type);
    }
}

/* The sum of every point of a SelectSeriesResponse against want; also counts series and points. */
static void check_connect_series(const char *what, const meas_t *m, int64_t want)
{
    if (m->code != 200)
        return;
    const uint8_t *p = m->body.data, *e = p + m->body.len;
    double sum = 0;
    uint64_t nseries = 0, npoints = 0, nex = 0;
    while (p < e) { /* SelectSeriesResponse: 1 series */
        uint64_t tag, len;
        if (rd_varint(&p, e, &tag) || tag != (1 << 3 | 2) || rd_varint(&p, e, &len) || len > (uint64_t)(e - p))
            break;
        const uint8_t *s = p, *se = p + len;
        p = se;
        nseries++;
        while (s < se) { /* Series: 1 labels, 2 points */
            uint64_t t2, l2;
            if (rd_varint(&s, se, &t2) || (t2 & 7) != 2 || rd_varint(&s, se, &l2) || l2 > (uint64_t)(se - s))
                break;
            if (t2 >> 3 == 2 && l2 >= 9 && s[0] == (1 << 3 | 1)) { /* Point: 1 value (double), 4 exemplars */
                double v;
                memcpy(&v, s + 1, 8);
                sum += v;
                npoints++;
                const uint8_t *x = s, *xe = s + l2;
                while (x < xe) {
                    uint64_t t3, v3;
                    if (rd_varint(&x, xe, &t3))
                        break;
                    if ((t3 & 7) == 1) {
                        x += 8;
                        continue;
                    }
                    if (rd_varint(&x, xe, &v3))
                        break;
                    if ((t3 & 7) == 2) {
                        if (v3 > (uint64_t)(xe - x))
                            break;
                        nex += t3 >> 3 == 4;
                        x += v3;
                    }
                }
            }
            s += l2;
        }
    }
    char extra[128];
    snprintf(extra, sizeof(extra), "; %llu series, %llu points, %llu exemplars", (unsigned long long)nseries,
             (unsigned long long)npoints, (unsigned long long)nex);
    print_check(what, (int64_t)sum, want, extra);
}

/* SelectHeatmapRequest{profile_typeID, label_selector, start, end (ms), step s, group_by [by],
 * query_type INDIVIDUAL}: the range of series_request */
static void heatmap_request(ps_buf_t *b, const char *type, const char *sel, uint32_t pps, const char *by, double step)
{
    int64_t last = (int64_t)(pps - 1) * STEP_S, end = (last + 59) / 60 * 60;
    ps_buf_reset(b);
    pb_str(b, 1, type);
    pb_str(b, 2, sel);
    ps_put_uvarint(b, 3 << 3);
    ps_put_uvarint(b, (uint64_t)T0_S * 1000);
    ps_put_uvarint(b, 4 << 3);
    ps_put_uvarint(b, (uint64_t)(T0_S + end) * 1000);
    ps_put_uvarint(b, 5 << 3 | 1);
    ps_buf_append(b, &step, 8);
    pb_str(b, 6, by);
    ps_put_uvarint(b, 7 << 3);
    ps_put_uvarint(b, 1);
}

/* The sum of every count of a SelectHeatmapResponse (series 1 > slots 2 > counts 3, packed)
 * against want (the profiles); also counts series and slots. */
static void check_connect_heatmap(const char *what, const meas_t *m, int64_t want)
{
    if (m->code != 200)
        return;
    const uint8_t *p = m->body.data, *e = p + m->body.len;
    uint64_t sum = 0, nseries = 0, nslots = 0;
    while (p < e) {
        uint64_t tag, len;
        if (rd_varint(&p, e, &tag) || tag != (1 << 3 | 2) || rd_varint(&p, e, &len) || len > (uint64_t)(e - p))
            break;
        const uint8_t *s = p, *se = p + len;
        p = se;
        nseries++;
        while (s < se) {
            uint64_t t2, l2;
            if (rd_varint(&s, se, &t2) || (t2 & 7) != 2 || rd_varint(&s, se, &l2) || l2 > (uint64_t)(se - s))
                break;
            const uint8_t *q = s, *qe = s + l2;
            s = qe;
            if (t2 >> 3 != 2)
                continue;
            nslots++;
            while (q < qe) { /* HeatmapSlot: 1 timestamp (varint), 2 y_min, 3 counts, 4 exemplars */
                uint64_t t3, l3;
                if (rd_varint(&q, qe, &t3))
                    break;
                if ((t3 & 7) == 0) {
                    uint64_t skip;
                    if (rd_varint(&q, qe, &skip))
                        break;
                    continue;
                }
                if ((t3 & 7) != 2 || rd_varint(&q, qe, &l3) || l3 > (uint64_t)(qe - q))
                    break;
                const uint8_t *c = q, *ce = q + l3;
                q = ce;
                uint64_t v;
                while (t3 >> 3 == 3 && c < ce && rd_varint(&c, ce, &v) == 0)
                    sum += v;
            }
        }
    }
    char extra[96];
    snprintf(extra, sizeof(extra), "; %llu series, %llu slots", (unsigned long long)nseries,
             (unsigned long long)nslots);
    print_check(what, (int64_t)sum, want, extra);
}

/* The flame graph's total (SelectMergeStacktracesResponse.flamegraph.total) against want. */
static void check_connect_total(const char *what, const meas_t *m, int64_t want)
{
    const uint8_t *fg = NULL;
    size_t fgn = 0;
    uint64_t total = 0;
    if (m->code != 200)
        return;
    if (pb_field(m->body.data, m->body.data + m->body.len, 1, NULL, &fg, &fgn) != 0 ||
        pb_field(fg, fg + fgn, 3, &total, NULL, NULL) != 0) {
        printf("    check: %-44s MISMATCH: no flamegraph.total in the answer\n", what);
        return;
    }
    print_check(what, (int64_t)total, want, "");
}

static int rollup_bench(const opts_t *o);

int main(int argc, char **argv)
{
    opts_t o = {0};
    parse(argc, argv, &o);
    ps_bench_malloc_tune();
    if (o.rollups)
        return rollup_bench(&o);
    curl_global_init(CURL_GLOBAL_DEFAULT);

    char dir[4096], data[4200], log[4200], mpath[4200], tpath[4200];
    if (o.data_dir != NULL)
        snprintf(dir, sizeof(dir), "%s", o.data_dir);
    else if (o.seed == 1)
        snprintf(dir, sizeof(dir), "/tmp/profstore-bench-query-%ux%u", o.series, o.pps);
    else
        snprintf(dir, sizeof(dir), "/tmp/profstore-bench-query-%ux%u-seed%llu", o.series, o.pps,
                 (unsigned long long)o.seed);
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(log, sizeof(log), "%s/profstore.log", dir);
    snprintf(mpath, sizeof(mpath), "%s/loaded", dir);
    snprintf(tpath, sizeof(tpath), "%s/totals.bin", dir);

    uint64_t nprof = (uint64_t)o.series * o.pps;
    char hb[32];
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_query: %u series x %u profiles (%s of 10 s Go CPU profiles from 2026-11-29T00:00:00Z) = %llu "
           "profiles, seed %llu; %ld CPUs\n",
           o.series, o.pps, hours(o.pps, hb, sizeof(hb)), (unsigned long long)nprof, (unsigned long long)o.seed, ncpu);
    ps_bench_print_loadavg();

    totals = ps_xcalloc(nprof, sizeof(*totals));
    marker_t mk;
    int reuse = 0;
    if (!o.reload && marker_read(mpath, &mk) == 0 && mk.series == o.series && mk.pps == o.pps && mk.seed == o.seed &&
        totals_io(tpath, &o, 0) == 0)
        reuse = 1;
    if (!reuse) {
        ps_bench_rmrf(dir);
        if (ps_bench_mkdirs(dir) != 0) {
            fprintf(stderr, "bench_query: cannot create %s: %s\n", dir, strerror(errno));
            return 1;
        }
    }

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
    if (!o.sync)
        args[na++] = "--storage.no-sync";
    if (o.threads != NULL) {
        args[na++] = "--threads";
        args[na++] = o.threads;
    }
    args[na] = NULL;
    ps_bench_server_t srv = {0};
    double st0 = ps_bench_now();
    if (ps_bench_server_start(&srv, o.profstore, data, log, args) != 0)
        return 1;
    double start_s = ps_bench_now() - st0;
    printf("  server %s --retention 0 --storage.compact-max-profiles %u --storage.compact-window %s%s%s%s; data in %s "
           "(ready in %.2f s)\n",
           o.profstore, o.compact_max, o.compact_window, o.sync ? "" : " --storage.no-sync",
           o.threads ? " --threads " : "", o.threads ? o.threads : "", data, start_s);
    if (!o.sync)
        printf("  --storage.no-sync: no fsync at commit, only to make the load phase faster (queries do not write; the "
               "on-disk layout is the same)\n");
    fflush(stdout);

    char (*label_enc)[160] = ps_xcalloc(o.series, sizeof(*label_enc));
    for (uint32_t s = 0; s < o.series; s++) {
        char ls[100];
        snprintf(ls, sizeof(ls), "{job=\"" JOB "\",instance=\"host-%03u\"}", s);
        ps_bench_urlencode(ls, label_enc[s], sizeof(label_enc[s]));
    }

    if (reuse) {
        printf("  data                   REUSED: %s already holds this load (%llu profiles, %.1f MB gzipped pprof, loaded "
               "%s in %.0f s = %.0f profiles/s incl. generation, server CPU %.0f s; compact %.2f s); --reload to load "
               "again\n",
               dir, mk.profiles, (double)mk.bytes / 1e6, mk.when, mk.load_s, (double)mk.profiles / mk.load_s,
               mk.server_cpu, mk.compact_s);
    } else {
        printf("  data                   LOADING into %s (%llu profiles; progress every minute)\n", dir,
               (unsigned long long)nprof);
        fflush(stdout);
        load_t l = {.o = &o, .url = srv.url, .label_enc = label_enc, .want = nprof};
        l.pusher = ps_bench_pusher_new(o.conns, 1);
        ps_bench_proc_t p0, p1;
        ps_bench_proc_read(srv.pid, &p0);
        double c0 = ps_bench_self_cpu();
        l.t0 = ps_bench_now();
        l.next_report = l.t0 + 60;
        int rc = ps_bench_gen_ex(o.series, o.pps, o.seed, on_load, &l);
        ps_bench_pusher_drain(l.pusher);
        double wall = ps_bench_now() - l.t0, self = ps_bench_self_cpu() - c0;
        ps_bench_proc_read(srv.pid, &p1);
        double scpu = (p1.cpu_user + p1.cpu_sys) - (p0.cpu_user + p0.cpu_sys);
        const ps_bench_push_stats_t *st = ps_bench_pusher_stats(l.pusher);
        uint64_t ok = st->ok, failed = st->failed;
        double *lat = ps_xmalloc((st->nlat + 1) * sizeof(double));
        memcpy(lat, st->lat, st->nlat * sizeof(double));
        double p50 = ps_bench_quantile(lat, st->nlat, 0.5), p99 = ps_bench_quantile(lat, st->nlat, 0.99);
        free(lat);
        printf("  load                   %llu profiles (%.1f MB gzipped pprof, %.1f samples/profile) pushed in %.1f s = "
               "%.1f min: %.0f profiles/s incl. generation; %llu ok, %llu failed; push latency p50 %.1f ms, p99 %.1f ms; "
               "server CPU %.0f s (%.0f us/profile), bench CPU (generation + HTTP) %.0f s (%.0f us/profile)\n",
               (unsigned long long)l.n, (double)l.bytes / 1e6, (double)l.samples / (double)(l.n ? l.n : 1), wall,
               wall / 60, (double)l.n / wall, (unsigned long long)ok, (unsigned long long)failed, p50 * 1e3, p99 * 1e3,
               scpu, scpu / (double)l.n * 1e6, self, self / (double)l.n * 1e6);
        if (failed)
            printf("  first error            %s\n", st->first_error);
        ps_bench_pusher_free(l.pusher);
        int died;
        if (!ps_bench_server_alive(&srv, &died)) {
            char why[128];
            ps_bench_describe_status(died, why, sizeof(why));
            printf("\n  PROFSTORE DIED during the load: %s (log: %s); its last log lines:\n", why, log);
            ps_bench_print_log_tail(log, 3, "    | ");
            return 1;
        }
        if (rc != 0) {
            fprintf(stderr, "bench_query: generation failed\n");
            ps_bench_server_stop(&srv);
            return 1;
        }
        if (wall > 600)
            printf("  NOTE                   the load took more than 10 minutes on this machine (%ld CPUs, shared with "
                   "the load generator): use fewer --series for routine full runs\n",
                   ncpu);
        char u[256];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
        ps_buf_t body = PS_BUF_INIT;
        double t0 = ps_bench_now();
        long code = ps_bench_http("POST", u, "", 0, &body);
        double ct = ps_bench_now() - t0;
        printf("  POST /admin/compact    HTTP %ld in %.2f s: %.*s", code, ct, (int)body.len, (const char *)body.data);
        if (body.len == 0 || body.data[body.len - 1] != '\n')
            printf("\n");
        ps_buf_dispose(&body);
        if (failed == 0 && code == 200) {
            marker_t m = {.series = o.series, .pps = o.pps, .seed = o.seed, .profiles = l.n, .bytes = l.bytes,
                          .load_s = wall, .compact_s = ct, .server_cpu = scpu};
            time_t now = time(NULL);
            strftime(m.when, sizeof(m.when), "%Y-%m-%dT%H:%M:%SZ", gmtime(&now));
            if (totals_io(tpath, &o, 1) != 0 || marker_write(mpath, &m) != 0)
                printf("  (cannot write %s or %s: the next run will load again)\n", tpath, mpath);
        } else {
            printf("  (load incomplete: not marking %s as reusable)\n", dir);
        }
    }

    /* the inuse copy, loaded once into the data directory (the series of job bench-query-inuse) */
    char (*inuse_enc)[160] = ps_xcalloc(o.series, sizeof(*inuse_enc));
    for (uint32_t s = 0; s < o.series; s++) {
        char ls[100];
        snprintf(ls, sizeof(ls), "{job=\"" JOB "-inuse\",instance=\"host-%03u\"}", s);
        ps_bench_urlencode(ls, inuse_enc[s], sizeof(inuse_enc[s]));
    }
    long ninuse = o.no_inuse ? 0 : count_series(srv.url, "{job=\"" JOB "-inuse\"}");
    if (!o.no_inuse && ninuse != (long)(2 * o.series)) {
        printf("  inuse copy             LOADING (%llu profiles as memory:inuse_objects/inuse_space, job " JOB
               "-inuse)\n",
               (unsigned long long)nprof);
        fflush(stdout);
        load_t l = {.o = &o, .url = srv.url, .label_enc = inuse_enc, .want = nprof};
        l.pusher = ps_bench_pusher_new(o.conns, 1);
        double t0 = ps_bench_now();
        int rc = ps_bench_gen_ex(o.series, o.pps, o.seed, on_load_inuse, &l);
        ps_bench_pusher_drain(l.pusher);
        const ps_bench_push_stats_t *st = ps_bench_pusher_stats(l.pusher);
        printf("  inuse copy             %llu profiles in %.1f s; %llu ok, %llu failed%s%s\n", (unsigned long long)l.n,
               ps_bench_now() - t0, (unsigned long long)st->ok, (unsigned long long)st->failed,
               st->failed ? ": " : "", st->failed ? st->first_error : "");
        ps_bench_pusher_free(l.pusher);
        char u[256];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
        ps_buf_t body = PS_BUF_INIT;
        ps_bench_http("POST", u, "", 0, &body);
        ps_buf_dispose(&body);
        if (rc != 0) {
            ps_bench_server_stop(&srv);
            return 1;
        }
    }
    free(inuse_enc);

    ps_buf_t mb = PS_BUF_INIT;
    if (get_metrics(srv.url, &mb) == 0)
        printf("  store                  %.0f series, %.0f chunks, %.0f head records, %.0f stack-tree nodes; data.mdb "
               "%.1f MB, %.1f MB of pages in use\n",
               METRIC(mb, "profstore_storage_series"), METRIC(mb, "profstore_storage_chunks"),
               METRIC(mb, "profstore_storage_head_records"), METRIC(mb, "profstore_storage_stack_nodes"),
               METRIC(mb, "profstore_storage_file_bytes") / 1e6, METRIC(mb, "profstore_storage_used_bytes") / 1e6);
    char cpu_type[256], samples_type[256];
    if (find_types(srv.url, cpu_type, samples_type, sizeof(cpu_type)) != 0) {
        printf("  cannot find the cpu/nanoseconds and samples/count profile types in /api/v1/profiles/types\n");
        ps_bench_server_stop(&srv);
        return 1;
    }
    char all_sel[128], one_sel[512], cpu_sel[512];
    snprintf(all_sel, sizeof(all_sel), "{job=\"" JOB "\"}");
    snprintf(one_sel, sizeof(one_sel), "{__name__=\"%s\",instance=\"host-000\"}", cpu_type);
    snprintf(cpu_sel, sizeof(cpu_sel), "{__name__=\"%s\"}", cpu_type);
    long nser = count_series(srv.url, all_sel);
    printf("  series                 %ld match %s (expected %u: %u instances x 2 sample types); profile types %s, %s\n",
           nser, all_sel, 2 * o.series, o.series, cpu_type, samples_type);
    if (reuse && nser != (long)(2 * o.series)) {
        printf("  the reused data directory does not hold the expected series: run again with --reload\n");
        ps_bench_server_stop(&srv);
        return 1;
    }

    /* the windows: 1 h and 3 h around the middle of the range, and the whole range */
    uint32_t n1 = o.pps < 360 ? o.pps : 360, a1 = o.pps / 2 >= 180 ? o.pps / 2 - 180 : 0;
    if (a1 + n1 > o.pps)
        a1 = o.pps - n1;
    uint32_t n3 = o.pps < 1080 ? o.pps : 1080, a3 = o.pps / 2 >= 540 ? o.pps / 2 - 540 : 0;
    if (a3 + n3 > o.pps)
        a3 = o.pps - n3;
    char w1a[16], w1b[16], w3a[16], w3b[16], h1[16], h24[16], h3[16];
    hhmm(a1, w1a, sizeof(w1a));
    hhmm(a1 + n1, w1b, sizeof(w1b));
    hhmm(a3, w3a, sizeof(w3a));
    hhmm(a3 + n3, w3b, sizeof(w3b));
    hours(n1, h1, sizeof(h1));
    hours(o.pps, h24, sizeof(h24));
    hours(n3, h3, sizeof(h3));

    /* warm the server RSS reading now that everything is loaded */
    ps_bench_proc_t pr;
    ps_bench_proc_read(srv.pid, &pr);
    printf("  server                 RSS %.0f MiB (peak %.0f MiB) before the queries\n", (double)pr.vm_rss_kb / 1024,
           (double)pr.vm_hwm_kb / 1024);

    printf("\nqueries: median of %u runs after one cold run; wall time of the HTTP request including the transfer, one "
           "keep-alive connection; server CPU per request: mean over the runs, from /proc (10 ms ticks)\n",
           o.runs);
    fflush(stdout);

    char url[2048], name[256];
    meas_t m1 = {0}, m24 = {0}, mfg = {0}, mtop = {0}, mr = {0}, mrc = {0}, mrs = {0}, m3 = {0}, mc24 = {0}, mc3 = {0}, mcs = {0}, mcx = {0}, mch = {0};

    /* 1. 1 h of one series, pprof */
    profile_url(url, sizeof(url), srv.url, one_sel, a1, n1, "pprof");
    snprintf(name, sizeof(name), "merge %s one series, pprof (%u profiles)", h1, n1);
    measure(srv.pid, url, o.runs, &m1);
    printf("  window: %s .. %s of instance host-000 (%s)\n", w1a, w1b, one_sel);
    print_meas(name, &m1, 0, n1);
    check_pprof("cpu total of the merged profile", &m1, gen_sum(&o, 0, 1, a1, n1, 1));
    fflush(stdout);

    double pprof_med = -1;
    if (!o.no_pprof_tool) {
        char pdir[] = "/tmp/profstore-bench-query-pprof-XXXXXX";
        if (mkdtemp(pdir) == NULL) {
            perror("mkdtemp");
        } else {
            pfiles_t pf = {.o = &o, .dir = pdir, .from = a1, .n = n1};
            pf.paths = ps_xcalloc(n1, sizeof(char *));
            double g0 = ps_bench_now();
            ps_bench_gen_ex(1, a1 + n1, o.seed, on_pfile, &pf);
            double gt = ps_bench_now() - g0;
            if (!pf.failed && pf.written == n1) {
                uint64_t fbytes = 0;
                for (uint32_t i = 0; i < pf.written; i++) {
                    uint64_t du, sz;
                    ps_bench_file_usage(pf.paths[i], &du, &sz);
                    fbytes += sz;
                }
                printf("  go tool pprof -proto over the same %u generated files (%.1f MB, written in %.1f s to %s; "
                       "PPROF_TMPDIR set there); %s\n",
                       pf.written, (double)fbytes / 1e6, gt, pdir, pf.total[1] == gen_sum(&o, 0, 1, a1, n1, 1)
                           ? "their totals match the loaded ones"
                           : "THEIR TOTALS DIFFER FROM THE LOADED ONES");
                char outp[4200], errp[4200];
                snprintf(outp, sizeof(outp), "%s/merged.pb.gz", pdir);
                snprintf(errp, sizeof(errp), "%s/pprof.stderr", pdir);
                double first = run_pprof(&o, &pf, outp, errp);
                if (first >= 0) {
                    uint8_t *d;
                    size_t dl;
                    int64_t got;
                    uint32_t ns;
                    char why[600];
                    if (ps_bench_read_file(outp, &d, &dl) == 0 &&
                        pprof_total(d, dl, "cpu", &got, &ns, why, sizeof(why)) == 0) {
                        char extra[96];
                        snprintf(extra, sizeof(extra), "; %u samples, %zu B", ns, dl);
                        print_check("cpu total of go tool pprof's merge", got, pf.total[1], extra);
                        free(d);
                    } else {
                        printf("    check: cannot read go tool pprof's output %s\n", outp);
                    }
                    double *w = ps_xcalloc(o.pprof_runs + 1, sizeof(double));
                    uint32_t k = 0;
                    for (; k < o.pprof_runs; k++)
                        if ((w[k] = run_pprof(&o, &pf, "/dev/null", errp)) < 0)
                            break;
                    if (k == o.pprof_runs && k > 0) {
                        pprof_med = median(w, k);
                        char a[32], b[32], c[32], e[32];
                        printf("  %-52s median %s (min %s, max %s; first, checked run %s), %u runs\n",
                               "go tool pprof -proto f1..fN > /dev/null", fmt_time(pprof_med, a, sizeof(a)),
                               fmt_time(w[0], b, sizeof(b)), fmt_time(w[k - 1], c, sizeof(c)),
                               fmt_time(first, e, sizeof(e)), k);
                        if (m1.code == 200)
                            printf("  %-52s %.0fx faster than go tool pprof   (target >= 50x: %s)\n",
                                   "speedup of the 1 h merge", pprof_med / m1.med, mark(pprof_med / m1.med >= 50));
                    }
                    free(w);
                }
            } else {
                printf("  go tool pprof comparison skipped: could not write the %u files\n", n1);
            }
            for (uint32_t i = 0; i < pf.written; i++)
                free(pf.paths[i]);
            free(pf.paths);
            ps_bench_rmrf(pdir);
        }
        fflush(stdout);
    }

    /* 2. the whole range of one series: pprof, flamegraph, top */
    int64_t want24 = gen_sum(&o, 0, 1, 0, o.pps, 1);
    profile_url(url, sizeof(url), srv.url, one_sel, 0, o.pps, "pprof");
    snprintf(name, sizeof(name), "merge %s one series, pprof (%u profiles)", h24, o.pps);
    measure(srv.pid, url, o.runs, &m24);
    print_meas(name, &m24, 0.300, o.pps);
    check_pprof("cpu total of the merged profile", &m24, want24);
    fflush(stdout);

    profile_url(url, sizeof(url), srv.url, one_sel, 0, o.pps, "flamegraph");
    snprintf(name, sizeof(name), "merge %s one series, flamegraph", h24);
    measure(srv.pid, url, o.runs, &mfg);
    print_meas(name, &mfg, 0, o.pps);
    check_json_total("flamegraph \"total\"", &mfg, want24);
    fflush(stdout);

    profile_url(url, sizeof(url), srv.url, one_sel, 0, o.pps, "top");
    snprintf(name, sizeof(name), "merge %s one series, top", h24);
    measure(srv.pid, url, o.runs, &mtop);
    print_meas(name, &mtop, 0, o.pps);
    check_json_total("top \"total\"", &mtop, want24);
    fflush(stdout);

    /* 3. query_range over the whole range, all series, 60 s step */
    int64_t all_cpu = gen_sum(&o, 0, o.series, 0, o.pps, 1), all_samples = gen_sum(&o, 0, o.series, 0, o.pps, 0);
    /* a range function over both types at once is 2.42's "vector cannot contain metrics with the same
     * labelset" (it drops __name__): each type's series apart, told apart by a label */
    char allq[1200], cpuq[560];
    snprintf(allq, sizeof(allq),
             "label_replace(sum_over_time({__name__=\"%s\"}[59999ms]), \"type\", \"cpu\", \"\", \"\") or "
             "label_replace(sum_over_time({__name__=\"%s\"}[59999ms]), \"type\", \"samples\", \"\", \"\")",
             cpu_type, samples_type);
    snprintf(cpuq, sizeof(cpuq), "sum_over_time(%s[59999ms])", cpu_sel);
    range_url(url, sizeof(url), srv.url, allq, o.pps);
    snprintf(name, sizeof(name), "query_range %s, 60 s step, %.150s", h24, allq);
    printf("  (query_range: %u steps; %s matches all %u series: %u instances x 2 sample types)\n",
           (uint32_t)(((int64_t)(o.pps - 1) * STEP_S + 59) / 60 + 1), all_sel, 2 * o.series, o.series);
    measure(srv.pid, url, o.runs, &mr);
    print_meas(name, &mr, 0.050, 0);
    /* sum_over_time drops __name__: the points of both types together, as "other" */
    check_matrix("sum of all points", &mr, cpu_type, samples_type, all_cpu + all_samples, 0, 0, 0);
    fflush(stdout);

    range_url(url, sizeof(url), srv.url, cpuq, o.pps);
    snprintf(name, sizeof(name), "query_range %s, 60 s step, cpu type only", h24);
    measure(srv.pid, url, o.runs, &mrc);
    print_meas(name, &mrc, 0.050, 0);
    check_matrix("sum of all points", &mrc, cpu_type, samples_type, all_cpu, 0, 0, 0);
    fflush(stdout);

    char sumq[580];
    snprintf(sumq, sizeof(sumq), "sum(%s)", cpuq);
    range_url(url, sizeof(url), srv.url, sumq, o.pps);
    snprintf(name, sizeof(name), "query_range %s, 60 s step, sum(cpu type)", h24);
    measure(srv.pid, url, o.runs, &mrs);
    print_meas(name, &mrs, 0.050, 0);
    check_matrix("sum of all points", &mrs, cpu_type, samples_type, all_cpu, all_samples, 0, 0);
    fflush(stdout);

    /* 4. 3 h over all series */
    profile_url(url, sizeof(url), srv.url, cpu_sel, a3, n3, "pprof");
    snprintf(name, sizeof(name), "merge %s all %u series, pprof (%llu profiles)", h3, o.series,
             (unsigned long long)n3 * o.series);
    printf("  window: %s .. %s, %s\n", w3a, w3b, cpu_sel);
    measure(srv.pid, url, o.runs, &m3);
    print_meas(name, &m3, 2.0, (uint64_t)n3 * o.series);
    check_pprof("cpu total of the merged profile", &m3, gen_sum(&o, 0, o.series, a3, n3, 1));
    fflush(stdout);

    /* 4b. the same merges over the inuse copy: averaged over time per series */
    meas_t mi24 = {0}, mi3 = {0};
    char inuse_one[256], inuse_all[256];
    snprintf(inuse_one, sizeof(inuse_one), "memory:inuse_space:bytes:inuse_space:bytes{job=\"" JOB
                                           "-inuse\",instance=\"host-000\"}");
    snprintf(inuse_all, sizeof(inuse_all), "memory:inuse_space:bytes:inuse_space:bytes{job=\"" JOB "-inuse\"}");
    if (o.no_inuse)
        goto connect;
    profile_url(url, sizeof(url), srv.url, inuse_one, 0, o.pps, "pprof");
    snprintf(name, sizeof(name), "merge %s one series, pprof, inuse (avg)", h24);
    measure(srv.pid, url, o.runs, &mi24);
    print_meas(name, &mi24, 0.300, o.pps);
    check_inuse("inuse_space total of the merged profile", &mi24, gen_mean_sum(&o, 0, 1, 0, o.pps), want24);
    profile_url(url, sizeof(url), srv.url, inuse_all, a3, n3, "pprof");
    snprintf(name, sizeof(name), "merge %s all %u series, pprof, inuse (avg)", h3, o.series);
    measure(srv.pid, url, o.runs, &mi3);
    print_meas(name, &mi3, 2.0, (uint64_t)n3 * o.series);
    check_inuse("inuse_space total of the merged profile", &mi3, gen_mean_sum(&o, 0, o.series, a3, n3),
                gen_sum(&o, 0, o.series, a3, n3, 1));
    fflush(stdout);

connect:;
    /* 5. Grafana's flame graph call: SelectMergeStacktraces over Connect (binary, max_nodes 16384) */
    ps_buf_t creq = PS_BUF_INIT;
    char cone[256], call_sel[64];
    snprintf(cone, sizeof(cone), "{instance=\"host-000\"}");
    snprintf(call_sel, sizeof(call_sel), "{}");
    snprintf(url, sizeof(url), "%s/querier.v1.QuerierService/SelectMergeStacktraces", srv.url);
    merge_request(&creq, cpu_type, cone, 0, o.pps);
    q_post = &creq;
    snprintf(name, sizeof(name), "Connect SelectMergeStacktraces %s one series", h24);
    measure(srv.pid, url, o.runs, &mc24);
    print_meas(name, &mc24, 0.100, o.pps);
    check_connect_total("flamegraph.total", &mc24, want24);
    fflush(stdout);
    merge_request(&creq, cpu_type, call_sel, a3, n3);
    snprintf(name, sizeof(name), "Connect SelectMergeStacktraces %s all %u series", h3, o.series);
    measure(srv.pid, url, o.runs, &mc3);
    print_meas(name, &mc3, 1.0, (uint64_t)n3 * o.series);
    check_connect_total("flamegraph.total", &mc3, gen_sum(&o, 0, o.series, a3, n3, 1));
    /* Grafana's time series: SelectSeries 24 h of all series, 60 s step, group_by instance */
    snprintf(url, sizeof(url), "%s/querier.v1.QuerierService/SelectSeries", srv.url);
    series_request(&creq, cpu_type, call_sel, o.pps, "instance", 60, 0);
    snprintf(name, sizeof(name), "Connect SelectSeries %s all %u series, 60 s, by instance", h24, o.series);
    measure(srv.pid, url, o.runs, &mcs);
    print_meas(name, &mcs, 0, 0);
    check_connect_series("sum of all points", &mcs, all_cpu);
    /* the same with EXEMPLAR_TYPE_INDIVIDUAL: each point's profile, its id and labels */
    series_request(&creq, cpu_type, call_sel, o.pps, "instance", 60, 2);
    snprintf(name, sizeof(name), "Connect SelectSeries %s all %u series, 60 s, by instance, exemplars", h24, o.series);
    measure(srv.pid, url, o.runs, &mcx);
    print_meas(name, &mcx, 0, 0);
    check_connect_series("sum of all points", &mcx, all_cpu);
    /* Grafana's heatmap: SelectHeatmap of the same, every profile counted once */
    snprintf(url, sizeof(url), "%s/querier.v1.QuerierService/SelectHeatmap", srv.url);
    heatmap_request(&creq, cpu_type, call_sel, o.pps, "instance", 60);
    snprintf(name, sizeof(name), "Connect SelectHeatmap %s all %u series, 60 s, by instance", h24, o.series);
    measure(srv.pid, url, o.runs, &mch);
    print_meas(name, &mch, 0, 0);
    check_connect_heatmap("sum of all counts (profiles)", &mch, (int64_t)o.pps * o.series);
    q_post = NULL;
    ps_buf_dispose(&creq);
    fflush(stdout);

    ps_bench_proc_read(srv.pid, &pr);
    printf("  server                 RSS %.0f MiB (peak %.0f MiB) after the queries\n", (double)pr.vm_rss_kb / 1024,
           (double)pr.vm_hwm_kb / 1024);

    /* summary */
    char a[32];
    printf("\nsummary (%u series x %u profiles%s):\n", o.series, o.pps, reuse ? ", reused data" : "");
    if (pprof_med > 0 && m1.code == 200)
        printf("  1 h one-series merge vs go tool pprof   %.0fx (%s vs %s)   target >= 50x: %s\n", pprof_med / m1.med,
               fmt_time(m1.med, a, sizeof(a)), fmt_time(pprof_med, hb, sizeof(hb)), mark(pprof_med / m1.med >= 50));
    if (m24.code == 200)
        printf("  %s one-series merge (pprof)          %s   target < 300 ms: %s\n", h24, fmt_time(m24.med, a, sizeof(a)),
               mark(m24.med < 0.3));
    /* the target speaks of the benchmark's series: one profile type (cpu) per generated series;
     * {job=...} also returns each series' samples/count twin, twice the points */
    if (mrc.code == 200)
        printf("  query_range %s all %u series (cpu), 60 s %s   target < 50 ms: %s\n", h24, o.series,
               fmt_time(mrc.med, a, sizeof(a)), mark(mrc.med < 0.05));
    if (mr.code == 200)
        printf("  query_range %s both sample types, 60 s %s   (%u series, twice the points)\n", h24,
               fmt_time(mr.med, a, sizeof(a)), 2 * o.series);
    if (m3.code == 200)
        printf("  %s merge over all series (pprof)      %s   target < 2 s: %s\n", h3, fmt_time(m3.med, a, sizeof(a)),
               mark(m3.med < 2));
    if (m24.code == 200 && mi24.code == 200)
        printf("  %s one-series merge, cpu (sum) vs inuse (avg)   %s vs %s\n", h24, fmt_time(m24.med, a, sizeof(a)),
               fmt_time(mi24.med, hb, sizeof(hb)));
    if (m3.code == 200 && mi3.code == 200)
        printf("  %s all-series merge, cpu (sum) vs inuse (avg)   %s vs %s\n", h3, fmt_time(m3.med, a, sizeof(a)),
               fmt_time(mi3.med, hb, sizeof(hb)));

    if (mc24.code == 200)
        printf("  Connect SelectMergeStacktraces %s one series %s   target < 100 ms: %s\n", h24,
               fmt_time(mc24.med, a, sizeof(a)), mark(mc24.med < 0.1));
    if (mc3.code == 200)
        printf("  Connect SelectMergeStacktraces %s all %u series %s   target < 1 s: %s\n", h3, o.series,
               fmt_time(mc3.med, a, sizeof(a)), mark(mc3.med < 1));
    if (mcs.code == 200)
        printf("  Connect SelectSeries %s all %u series, 60 s, by instance %s\n", h24, o.series,
               fmt_time(mcs.med, a, sizeof(a)));
    if (mcs.code == 200 && mcx.code == 200)
        printf("  Connect SelectSeries with exemplars vs without   %s vs %s (%.2fx)   target within 2x: %s\n",
               fmt_time(mcx.med, a, sizeof(a)), fmt_time(mcs.med, hb, sizeof(hb)), mcx.med / mcs.med,
               mark(mcx.med <= 2 * mcs.med));

    int rc = ps_bench_server_stop(&srv);
    if (rc != 0) {
        char why[128];
        ps_bench_describe_status(rc, why, sizeof(why));
        printf("  (profstore shutdown: %s; log: %s)\n", why, log);
    }
    printf("  data kept in %s for the next run (--reload to load again; rm -rf it to free the space)\n", dir);
    meas_t *all[] = {&m1, &m24, &mfg, &mtop, &mr, &mrc, &mrs, &m3, &mc24, &mc3, &mcs, &mcx, &mch};
    for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++)
        ps_buf_dispose(&all[i]->body);
    ps_buf_dispose(&mb);
    if (qh)
        curl_easy_cleanup(qh);
    free(totals);
    free(label_enc);
    curl_global_cleanup();
    return 0;
}

/* ---- --rollups: merges through rollups next to raw ones (storage/rollup.c) ----
 *
 * In process, on the storage and query API (an HTTP load of a month of profiles would take hours):
 * a pool of 600 generated profiles (ps_bench_gen, decoded once by ps_ingest_prepare) is appended
 * through ps_store_write_batch to --series series {job="bench-rollup",instance="i<N>"}, one every
 * --rollup-step seconds over --rollup-days days, in batches of 1,000 with ps_store_compact_due
 * after each (the server's order; compact-max-profiles --compact-max), then a forced compaction.
 * The data directory (/tmp/profstore-bench-rollup-<series>x<days>d-<step>s-min<N>) is kept and reused.
 * Price: --price-days of the same load into three fresh stores: without rollups (the store option
 * no_rollups), with a rollup for every window (rollup_min_profiles 1) and with the default rule
 * (windows of fewer than PS_ROLLUP_MIN_PROFILES profiles get none): the writer's CPU per profile
 * (writes and compaction) and the bytes of each. The merges' store is loaded with
 * --rollup-min-profiles (its directory's name ends in -min<N>, N the value in force).
 * Merges: ps_query_merge_range of the cpu type (sum) and, on the same values, aggregation avg,
 * over 1 series 24 h / 7 d / 30 d and all series 7 d / 30 d, ending 17 min before the newest
 * profile (so no range starts or ends on a window's edge); each the median of --runs runs of a
 * reader with rollups and one without, alternated (A B A B), the two answers compared node by
 * node (OK / MISMATCH).
 */

typedef struct rpool {
    ps_arena_t arena;
    ps_append_t app[600];
    uint32_t n;
} rpool_t;

static int on_pool(void *ctx, const ps_bench_gen_info_t *in)
{
    rpool_t *p = ctx;
    ps_ingest_params_t ip = {.labels = "{job=\"bench-rollup\"}", .labels_len = 20, .delta = -1};
    ps_err_t err;
    if (ps_ingest_prepare(in->pprof_gz, in->len, &ip, NULL, &p->arena, &p->app[p->n], &err) != 0) {
        fprintf(stderr, "bench_query: pool: %s\n", err.msg);
        return -1;
    }
    if (p->app[p->n].nseries != 2) {
        fprintf(stderr, "bench_query: pool: %u series in a profile, want 2\n", p->app[p->n].nseries);
        return -1;
    }
    p->n++;
    return 0;
}

/* the two series label sets (one per sample type) of series s, from the pool's */
static ps_labels_t *series_labels(const rpool_t *p, uint32_t s, ps_arena_t *a)
{
    ps_labels_t *out = ps_arena_calloc(a, 2, sizeof(ps_labels_t));
    for (uint32_t k = 0; k < 2; k++) {
        const ps_labels_t *src = &p->app[0].series_labels[k];
        ps_label_pair_t *pairs = ps_arena_calloc(a, src->n + 1, sizeof(ps_label_pair_t));
        memcpy(pairs, src->pairs, src->n * sizeof(ps_label_pair_t));
        char v[32];
        int vn = snprintf(v, sizeof(v), "i%u", s);
        pairs[src->n] = (ps_label_pair_t){"instance", ps_arena_strndup(a, v, (size_t)vn), 8, (uint32_t)vn};
        out[k] = (ps_labels_t){src->n + 1, pairs, 0};
        ps_err_t err;
        if (ps_labels_normalize(&out[k], &err) != 0) {
            fprintf(stderr, "bench_query: labels: %s\n", err.msg);
            exit(2);
        }
    }
    return out;
}

typedef struct rload {
    double write_cpu, compact_cpu, wall;
    uint64_t profiles;
} rload_t;

/* days of profiles of nseries series from T0 into a new store in dir */
static int rollup_load(const char *dir, const rpool_t *pool, uint32_t nseries, uint32_t days, uint32_t step,
                       uint32_t compact_max, bool no_rollups, uint32_t min_profiles, rload_t *out)
{
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = dir;
    so.retention_ns = 0;
    so.compact_max_profiles = compact_max;
    so.compact_window_ns = 0;
    so.nosync = true;
    so.no_rollups = no_rollups;
    so.rollup_min_profiles = min_profiles;
    ps_store_t *s;
    ps_store_writer_t *w;
    ps_err_t err;
    if (ps_store_open(&so, &s, &err) != 0 || ps_store_writer_open(s, &w, &err) != 0) {
        fprintf(stderr, "bench_query: %s: %s\n", dir, err.msg);
        return -1;
    }
    ps_arena_t la = PS_ARENA_INIT;
    ps_labels_t **labels = ps_arena_calloc(&la, nseries, sizeof(*labels));
    for (uint32_t i = 0; i < nseries; i++)
        labels[i] = series_labels(pool, i, &la);
    enum { BATCH = 1000 };
    ps_append_t *apps = ps_xcalloc(BATCH, sizeof(ps_append_t));
    ps_append_t *items[BATCH];
    uint64_t sids[BATCH][2];
    uint32_t smp[BATCH][2];
    uint64_t per = (uint64_t)days * 86400 / step, total = per * nseries, done = 0;
    memset(out, 0, sizeof(*out));
    double w0 = ps_bench_now();
    int ret = 0;
    while (done < total && ret == 0) {
        size_t n = 0;
        for (; n < BATCH && done < total; n++, done++) {
            uint64_t i = done / nseries;
            uint32_t sr = (uint32_t)(done % nseries);
            apps[n] = pool->app[(i * 7 + sr * 13) % pool->n];
            apps[n].series_labels = labels[sr];
            apps[n].ts = PS_BENCH_GEN_T0_NS + (int64_t)i * step * 1000000000LL;
            apps[n].series_ids = sids[n];
            apps[n].series_samples = smp[n];
            items[n] = &apps[n];
        }
        double c0 = ps_bench_self_cpu();
        if ((ret = ps_store_write_batch(w, items, n, &err)) != 0)
            break;
        double c1 = ps_bench_self_cpu();
        uint32_t nc;
        ret = ps_store_compact_due(w, &nc, &err);
        out->write_cpu += c1 - c0;
        out->compact_cpu += ps_bench_self_cpu() - c1;
        for (size_t k = 0; k < n && ret == 0; k++)
            if (apps[k].status != 0) {
                fprintf(stderr, "bench_query: append: %s\n", apps[k].err.msg);
                ret = -1;
            }
    }
    if (ret == 0) {
        double c0 = ps_bench_self_cpu();
        uint32_t nc;
        ret = ps_store_compact(w, true, 0, &nc, &err);
        out->compact_cpu += ps_bench_self_cpu() - c0;
    }
    if (ret != 0)
        fprintf(stderr, "bench_query: load: %s\n", err.msg);
    out->wall = ps_bench_now() - w0;
    out->profiles = done;
    free(apps);
    ps_arena_dispose(&la);
    ps_store_writer_close(w);
    ps_store_close(s);
    return ret;
}

static ps_store_t *open_ro(const char *dir)
{
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = dir;
    so.retention_ns = 0;
    so.nosync = true;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&so, &s, &err) != 0) {
        fprintf(stderr, "bench_query: %s: %s\n", dir, err.msg);
        exit(2);
    }
    return s;
}

typedef struct rsel {
    uint64_t sids[4096];
    uint32_t n;
} rsel_t;

static int on_rsid(void *ctx, uint64_t sid)
{
    rsel_t *r = ctx;
    if (r->n < 4096)
        r->sids[r->n++] = sid;
    return 0;
}

/* one merge: wall seconds; the answer's node count and sum of values into *nodes, *sum */
static double rmerge(ps_store_t *s, bool use, const rsel_t *set, uint32_t nset, int64_t start, int64_t end,
                     ps_agg_t agg, ps_nodemap_t *keep)
{
    double t0 = ps_bench_now();
    ps_reader_t *r;
    ps_err_t err;
    if (ps_reader_begin(s, &r, &err) != 0) {
        fprintf(stderr, "bench_query: reader: %s\n", err.msg);
        exit(2);
    }
    ps_reader_rollups(r, use);
    ps_series_set_t ss = {nset, (uint64_t *)set->sids, NULL};
    ps_nodemap_t m;
    ps_nodemap_init(&m);
    ps_sum_info_t info = {0};
    if (ps_query_merge_range(r, &ss, start, end, agg, &m, &info, &err) != 0) {
        fprintf(stderr, "bench_query: merge: %s\n", err.msg);
        exit(2);
    }
    ps_reader_end(r);
    double dt = ps_bench_now() - t0;
    if (keep) {
        ps_nodemap_dispose(keep);
        *keep = m;
    } else {
        ps_nodemap_dispose(&m);
    }
    return dt;
}

static bool same_map(const ps_nodemap_t *a, const ps_nodemap_t *b)
{
    if (a->count != b->count)
        return false;
    for (size_t i = 0; i < b->cap; i++)
        if (b->keys[i] != 0 && ps_nodemap_get(a, b->keys[i]) != b->vals[i])
            return false;
    return true;
}

typedef struct rtotals {
    uint64_t n;
    double sum;
} rtotals_t;

static int on_rtotals(void *ctx, const ps_float_sample_t *smp, size_t n)
{
    rtotals_t *t = ctx;
    for (size_t i = 0; i < n; i++)
        t->sum += smp[i].v;
    t->n += n;
    return 0;
}

static int rollup_bench(const opts_t *o)
{
    uint32_t ns = o->series, days = o->rollup_days, step = o->rollup_step;
    char dir[4096], mpath[4200];
    snprintf(dir, sizeof(dir), "/tmp/profstore-bench-rollup-%ux%ud-%us-min%u", ns, days, step,
             o->rollup_min ? o->rollup_min : PS_ROLLUP_MIN_PROFILES);
    snprintf(mpath, sizeof(mpath), "%s/loaded", dir);
    rpool_t *pool = ps_xcalloc(1, sizeof(*pool));
    if (ps_bench_gen_ex(1, 600, o->seed, on_pool, pool) != 0)
        return 2;
    char cmd[8400];
    printf("bench_query --rollups: %u series x %u days of Go CPU profiles, one every %u s (%llu profiles), "
           "compact-max-profiles %u, merges' store rollup_min_profiles %u\n",
           ns, days, step, (unsigned long long)ns * days * 86400 / step, o->compact_max,
           o->rollup_min ? o->rollup_min : PS_ROLLUP_MIN_PROFILES);
    /* the price: the same price-days load without rollups, with one per window and with the
     * default rule, alternated twice */
    if (o->price_days > 0) {
        enum { NCONF = 3 };
        static const char *const conf_name[NCONF] = {"without rollups", "every window", "default rule"};
        double wc[NCONF] = {0}, cc[NCONF] = {0};
        uint64_t bytes[NCONF] = {0}, rbytes[NCONF] = {0}, nroll[NCONF] = {0}, profiles = 0;
        for (int rep = 0; rep < 2; rep++)
            for (int k = NCONF - 1; k >= 0; k--) {
                char pdir[4200];
                snprintf(pdir, sizeof(pdir), "/tmp/profstore-bench-rollup-price-%d", k);
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", pdir);
                if (system(cmd) != 0)
                    return 2;
                rload_t l;
                if (rollup_load(pdir, pool, ns, o->price_days, step, o->compact_max, k == 0, k == 1 ? 1 : 0, &l) != 0)
                    return 2;
                wc[k] += l.write_cpu / 2;
                cc[k] += l.compact_cpu / 2;
                profiles = l.profiles;
                ps_store_t *s = open_ro(pdir);
                ps_store_stats_t st;
                ps_err_t err;
                if (ps_store_stats(s, &st, &err) != 0)
                    return 2;
                bytes[k] = st.used_bytes;
                rbytes[k] = st.rollup_bytes;
                nroll[k] = st.rollups;
                ps_store_close(s);
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", pdir);
                if (system(cmd) != 0)
                    return 2;
            }
        printf("price (%u day(s), %llu profiles, writer CPU, mean of 2 loads each; default rule: a window of\n"
               "fewer than %u profiles gets no rollup):\n",
               o->price_days, (unsigned long long)profiles, PS_ROLLUP_MIN_PROFILES);
        for (int k = 0; k < NCONF; k++) {
            printf("  %-16s write %6.1f us/profile  compaction %6.1f us/profile  store %9.1f MiB (%.0f B/profile)\n",
                   conf_name[k], wc[k] / profiles * 1e6, cc[k] / profiles * 1e6, bytes[k] / 1048576.0,
                   (double)bytes[k] / profiles);
            if (k > 0)
                printf("  %-16s rollups: %llu records, %.1f MiB of pages (%.0f B/profile, %.1f%% of the store)\n", "",
                       (unsigned long long)nroll[k], rbytes[k] / 1048576.0, (double)rbytes[k] / profiles,
                       bytes[k] ? 100.0 * (double)rbytes[k] / (double)bytes[k] : 0.0);
        }
    }
    struct stat sb;
    if (o->reload || stat(mpath, &sb) != 0) {
        snprintf(cmd, sizeof(cmd), "rm -rf '%s' && mkdir -p '%s'", dir, dir);
        if (system(cmd) != 0)
            return 2;
        rload_t l;
        if (rollup_load(dir, pool, ns, days, step, o->compact_max, false, o->rollup_min, &l) != 0)
            return 2;
        printf("loaded %llu profiles in %.0f s (writer CPU: write %.1f us, compaction %.1f us per profile)\n",
               (unsigned long long)l.profiles, l.wall, l.write_cpu / l.profiles * 1e6, l.compact_cpu / l.profiles * 1e6);
        FILE *f = fopen(mpath, "w");
        if (f)
            fclose(f);
    } else {
        printf("reusing %s\n", dir);
    }
    ps_store_t *s = open_ro(dir);
    ps_store_stats_t st;
    ps_err_t err;
    if (ps_store_stats(s, &st, &err) == 0)
        printf("store: %.1f MiB in use, rollups %llu records %.1f MiB\n", st.used_bytes / 1048576.0,
               (unsigned long long)st.rollups, st.rollup_bytes / 1048576.0);
    ps_reader_t *r;
    if (ps_reader_begin(s, &r, &err) != 0)
        return 2;
    char cpu[256] = "";
    rsel_t *all = ps_xcalloc(1, sizeof(*all));
    {
        /* the cpu type's series: the pool's second label set's __name__ */
        const ps_label_pair_t *nm = ps_labels_get(&pool->app[0].series_labels[1], "__name__");
        snprintf(cpu, sizeof(cpu), "%.*s", (int)nm->vlen, nm->value);
        if (ps_reader_postings(r, "__name__", 8, cpu, strlen(cpu), on_rsid, all, &err) != 0)
            return 2;
    }
    ps_reader_end(r);
    int64_t newest = PS_BENCH_GEN_T0_NS + ((int64_t)days * 86400 / step - 1) * step * 1000000000LL;
    int64_t end = newest - 17 * 60 * 1000000000LL;
    static const struct {
        const char *name;
        int64_t range_h;
        bool all;
        double target;
    } cases[] = {{"1 series 24 h", 24, false, 0.005}, {"1 series 7 d", 168, false, 0},
                 {"1 series 30 d", 720, false, 0},    {"all series 7 d", 168, true, 0.3},
                 {"all series 30 d", 720, true, 1.0}};
    printf("merges of %s (%u series), ending 17 min before the newest profile; median of %u runs each,\n"
           "with and without rollups alternated\n",
           cpu, all->n, o->runs);
    printf("  %-18s %-4s %12s %12s %8s  %s\n", "range", "agg", "raw", "rollups", "speedup", "same answer / target");
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (cases[c].range_h > (int64_t)days * 24)
            continue;
        for (int ag = 0; ag < 2; ag++) {
            ps_agg_t agg = ag == 0 ? PS_AGG_SUM : PS_AGG_AVG;
            int64_t start = end - cases[c].range_h * 3600 * 1000000000LL + 1;
            uint32_t nset = cases[c].all ? all->n : 1;
            double *t[2];
            t[0] = ps_xcalloc(o->runs, sizeof(double));
            t[1] = ps_xcalloc(o->runs, sizeof(double));
            ps_nodemap_t m[2];
            ps_nodemap_init(&m[0]);
            ps_nodemap_init(&m[1]);
            rmerge(s, true, all, nset, start, end, agg, &m[1]); /* cold */
            rmerge(s, false, all, nset, start, end, agg, &m[0]);
            for (uint32_t k = 0; k < o->runs; k++)
                for (int use = 1; use >= 0; use--)
                    t[use][k] = rmerge(s, use, all, nset, start, end, agg, NULL);
            double raw = median(t[0], o->runs), rol = median(t[1], o->runs);
            char b0[32], b1[32], tg[64] = "";
            if (cases[c].target > 0 && agg == PS_AGG_SUM)
                snprintf(tg, sizeof(tg), ", target < %s: %s", fmt_time(cases[c].target, b0, sizeof(b0)),
                         mark(rol < cases[c].target));
            printf("  %-18s %-4s %12s %12s %7.1fx  %s%s\n", cases[c].name, ps_agg_name(agg), fmt_time(raw, b0, sizeof(b0)),
                   fmt_time(rol, b1, sizeof(b1)), raw / rol, same_map(&m[0], &m[1]) ? "OK" : "MISMATCH", tg);
            fflush(stdout);
            ps_nodemap_dispose(&m[0]);
            ps_nodemap_dispose(&m[1]);
            free(t[0]);
            free(t[1]);
        }
    }
    /* what PromQL reads of a profile series (its totals, one sample per profile: src/query/
     * promql_store.c), next to the merges: each series' totals over the same ranges, and their sum
     * (sum_over_time of the range) */
    printf("profile totals as PromQL reads them (ps_reader_samples of each series: chunk meta, no nodes),\n"
           "median of %u runs:\n", o->runs);
    for (size_t c = 3; c < sizeof(cases) / sizeof(cases[0]); c++) {
        if (cases[c].range_h > (int64_t)days * 24)
            continue;
        int64_t start = end - cases[c].range_h * 3600 * 1000000000LL + 1;
        double *t = ps_xcalloc(o->runs, sizeof(double));
        rtotals_t tot = {0, 0};
        for (uint32_t k = 0; k < o->runs; k++) {
            double t0 = ps_bench_now();
            if (ps_reader_begin(s, &r, &err) != 0)
                return 2;
            tot = (rtotals_t){0, 0};
            for (uint32_t i = 0; i < all->n; i++)
                if (ps_reader_samples(r, all->sids[i], start / 1000000, end / 1000000, on_rtotals, &tot, &err) != 0) {
                    fprintf(stderr, "bench_query: samples: %s\n", err.msg);
                    return 2;
                }
            ps_reader_end(r);
            t[k] = ps_bench_now() - t0;
        }
        char b0[32];
        printf("  %-18s %12s  (%llu samples, sum %.6g)\n", cases[c].name, fmt_time(median(t, o->runs), b0, sizeof(b0)),
               (unsigned long long)tot.n, tot.sum);
        free(t);
    }
    ps_store_close(s);
    free(all);
    ps_arena_dispose(&pool->arena);
    free(pool);
    return 0;
}
