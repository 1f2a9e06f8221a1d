/*
 * series.c - bench_series: many distinct series. Pushes one small real profile (default
 * go/goroutine-01.pb.gz: one sample type, so one series per label set) to each of --series label
 * sets {job, instance}, --rounds times (round-major: every series once, then again, 10 s later),
 * through POST /api/v1/profiles/write with fsync on, into a fresh profstore. Prints, after each
 * round, profiles/s and the server's anonymous memory (RssAnon of /proc/PID/status: the heap;
 * LMDB's mapped file pages are RssFile, the kernel's) per live series (profstore_storage_series).
 * Then times the label APIs and selectors over them (/api/v1/labels, /api/v1/label/NAME/values,
 * /api/v1/series, and profile merges of a selector that matches one series and of one that
 * matches a job's share), each 3 times (first and fastest).
 *
 * First, a baseline phase into another fresh server: --baseline-profiles pushes of the same profile
 * over --baseline-series label sets (default 200, bench_ingest's default), so the profiles/s of the
 * many-series run is compared with the same pushes over few series in the same run.
 *
 * Label sets: job bench-job-NNN (series s is in job s % --jobs), instance 10.A.B.C:6060 from s.
 * Nothing is asserted: targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/mem.h"
#include "util.h"

typedef struct opts {
    char profstore[4096];
    const char *data_dir, *fixture, *threads;
    int keep, reuse;
    uint64_t series, rounds, jobs, conns, base_series, base_n;
} opts_t;

typedef struct flagv {
    const char *profstore, *data_dir, *fixture, *threads;
    bool keep, reuse;
    uint64_t series, rounds, jobs, conns, base_series, base_n;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)
/* clang-format off */
static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "where the data directories go (default: a new /tmp/profstore-bench-XXXXXX,\n"
             "removed at the end unless --keep)"},
    {.name = "keep", .type = PS_FLAG_BOOL, .offset = FV(keep), .help = "keep the data directories"},
    {.name = "reuse", .type = PS_FLAG_BOOL, .offset = FV(reuse),
     .help = "no pushes: time the queries over --data-dir's kept store of the same --series and --rounds"},
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "100000", .min = 1,
     .max = 100000000, .help = "distinct label sets (default 100000)"},
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = FV(rounds), .metavar = "R", .def = "1", .min = 1,
     .max = 1000, .help = "profiles per label set, 10 s apart (default 1)"},
    {.name = "jobs", .type = PS_FLAG_UINT, .offset = FV(jobs), .metavar = "N", .def = "100", .min = 1,
     .max = 1000000, .help = "distinct jobs (default 100): the many-series selector matches series/jobs"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "64", .min = 1,
     .max = 4096, .help = "concurrent requests / keep-alive connections (default 64)"},
    {.name = "fixture", .type = PS_FLAG_STRING, .offset = FV(fixture), .metavar = "FILE",
     .help = "the profile pushed, under tests/testdata (default pprof/go/goroutine-01.pb.gz)"},
    {.name = "baseline-series", .type = PS_FLAG_UINT, .offset = FV(base_series), .metavar = "N", .def = "200",
     .max = 100000000, .help = "label sets of the baseline phase (default 200; 0: no baseline)"},
    {.name = "baseline-profiles", .type = PS_FLAG_UINT, .offset = FV(base_n), .metavar = "N", .def = "20000",
     .min = 1, .max = UINT32_MAX, .help = "pushes of the baseline phase (default 20000)"},
    {.name = "threads", .type = PS_FLAG_STRING, .offset = FV(threads), .metavar = "N",
     .help = "profstore --threads (default: its own default)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_series", "usage: bench_series [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

static uint8_t *fix;
static size_t fixlen;

static void parse(int argc, char **argv, opts_t *o)
{
    flagv_t f = {0};
    ps_bench_flags(&flagset, argc, argv, &f);
    ps_bench_profstore_path(o->profstore, sizeof(o->profstore), f.profstore);
    o->data_dir = f.data_dir;
    o->fixture = f.fixture != NULL ? f.fixture : "pprof/go/goroutine-01.pb.gz";
    o->threads = f.threads;
    o->keep = f.keep;
    o->reuse = f.reuse;
    if (o->reuse && o->data_dir == NULL) {
        fprintf(stderr, "bench_series: --reuse needs --data-dir\n");
        exit(2);
    }
    o->series = f.series;
    o->rounds = f.rounds;
    o->jobs = f.jobs;
    o->conns = f.conns;
    o->base_series = f.base_series;
    o->base_n = f.base_n;
}

/* Series s's labels: job and instance. */
static void labels_of(uint64_t s, uint64_t jobs, char *job, size_t jn, char *inst, size_t in)
{
    snprintf(job, jn, "bench-job-%03llu", (unsigned long long)(s % jobs));
    snprintf(inst, in, "10.%u.%u.%u:6060", (unsigned)((s >> 16) & 255), (unsigned)((s >> 8) & 255),
             (unsigned)(s & 255));
}

/* RssAnon and RssFile of pid in kB (0 when missing). */
static void rss_of(pid_t pid, uint64_t *anon_kb, uint64_t *file_kb)
{
    char path[64], line[256];
    *anon_kb = *file_kb = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f) != NULL) {
        if (strncmp(line, "RssAnon:", 8) == 0)
            *anon_kb = strtoull(line + 8, NULL, 10);
        else if (strncmp(line, "RssFile:", 8) == 0)
            *file_kb = strtoull(line + 8, NULL, 10);
    }
    fclose(f);
}

static size_t to_buf(char *p, size_t sz, size_t nm, void *ud)
{
    ps_buf_append(ud, p, sz * nm);
    return sz * nm;
}

static double metric(const ps_bench_server_t *srv, const char *name)
{
    char u[128];
    ps_buf_t b = PS_BUF_INIT;
    snprintf(u, sizeof(u), "%s/metrics", srv->url);
    double v = ps_bench_http("GET", u, NULL, 0, &b) == 200 ? ps_bench_metric((const char *)b.data, b.len, name) : -1;
    ps_buf_dispose(&b);
    return v;
}

/* The first push's time of the store in base: written with it, read back by --reuse. */
static int t0_file(const char *base, long long *t0, bool write)
{
    char p[4200];
    snprintf(p, sizeof(p), "%s/t0", base);
    FILE *f = fopen(p, write ? "w" : "r");
    if (f == NULL)
        return -1;
    int ok = write ? fprintf(f, "%lld\n", *t0) > 0 : fscanf(f, "%lld", t0) == 1;
    return fclose(f) == 0 && ok ? 0 : -1;
}

static int start(const opts_t *o, const char *base, const char *name, ps_bench_server_t *srv)
{
    char dir[4200], log[4300];
    snprintf(dir, sizeof(dir), "%s/%s", base, name);
    snprintf(log, sizeof(log), "%s/profstore-%s.log", base, name);
    const char *args[8];
    int na = 0;
    args[na++] = "--retention";
    args[na++] = "0";
    if (o->threads != NULL) {
        args[na++] = "--threads";
        args[na++] = o->threads;
    }
    args[na] = NULL;
    if (!o->reuse)
        ps_bench_rmrf(dir);
    return ps_bench_server_start(srv, o->profstore, dir, log, args);
}

typedef struct push_res {
    double wall, server_cpu;
    uint64_t ok, failed;
    char first_error[512];
} push_res_t;

/* Pushes rounds [r0, r1) over nseries label sets: push i of a round is series i. */
static void push(const opts_t *o, const ps_bench_server_t *srv, uint64_t nseries, uint64_t r0, uint64_t r1,
                 uint64_t limit, long long t0, push_res_t *res)
{
    ps_bench_pusher_t *p = ps_bench_pusher_new((uint32_t)o->conns, 0);
    ps_bench_proc_t pr0, pr1;
    ps_bench_proc_read(srv->pid, &pr0);
    double w0 = ps_bench_now();
    char job[32], inst[32], ls[128], enc[400], url[600];
    uint64_t n = 0;
    for (uint64_t r = r0; r < r1 && n < limit; r++)
        for (uint64_t s = 0; s < nseries && n < limit; s++, n++) {
            labels_of(s, o->jobs, job, sizeof(job), inst, sizeof(inst));
            snprintf(ls, sizeof(ls), "{job=\"%s\",instance=\"%s\"}", job, inst);
            ps_bench_urlencode(ls, enc, sizeof(enc));
            snprintf(url, sizeof(url), "%s/api/v1/profiles/write?labels=%s&time=%lld", srv->url, enc,
                     t0 + (long long)r * 10);
            ps_bench_pusher_post(p, (int64_t)s, url, fix, fixlen);
        }
    ps_bench_pusher_drain(p);
    res->wall = ps_bench_now() - w0;
    ps_bench_proc_read(srv->pid, &pr1);
    res->server_cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(p);
    res->ok = st->ok;
    res->failed = st->failed;
    snprintf(res->first_error, sizeof(res->first_error), "%s", st->first_error);
    ps_bench_pusher_free(p);
}

/* One request: its HTTP status, the answer in out. A body is POSTed as Connect JSON. */
static long request(const char *url, const char *body, ps_buf_t *out)
{
    if (body == NULL)
        return ps_bench_http("GET", url, NULL, 0, out);
    CURL *h = curl_easy_init();
    if (h == NULL)
        return -1;
    struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    hdr = curl_slist_append(hdr, "Content-Type: application/json");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 3600L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, body);
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return code;
}

/* GET path (already encoded), or POST body to it, 3 times: the first and the fastest time, the
 * answer's size. */
static void timed(const ps_bench_server_t *srv, const char *what, const char *path, const char *body)
{
    char url[2048];
    snprintf(url, sizeof(url), "%s%s", srv->url, path);
    double first = 0, best = 0;
    long code = 0;
    size_t bytes = 0;
    for (int i = 0; i < 3; i++) {
        ps_buf_t b = PS_BUF_INIT;
        double t = ps_bench_now();
        code = request(url, body, &b);
        t = ps_bench_now() - t;
        bytes = b.len;
        if (i == 0)
            first = best = t;
        else if (t < best)
            best = t;
        if (code != 200 && i == 0)
            printf("    (HTTP %ld: %.*s)\n", code, (int)(b.len < 200 ? b.len : 200), (const char *)b.data);
        ps_buf_dispose(&b);
    }
    printf("  %-52s %8.1f ms first, %8.1f ms best   %s%10zu B   (target < 100 ms: %s)\n", what, first * 1e3,
           best * 1e3, code == 200 ? "" : "NOT 200 ", bytes, best < 0.1 ? "met" : "NOT met");
    fflush(stdout);
}

static void timed_get(const ps_bench_server_t *srv, const char *what, const char *path)
{
    timed(srv, what, path, NULL);
}

/* The first value of the JSON string array in "data" (label values): into out. */
static void first_value(const ps_bench_server_t *srv, const char *path, char *out, size_t n)
{
    char url[512];
    ps_buf_t b = PS_BUF_INIT;
    out[0] = 0;
    snprintf(url, sizeof(url), "%s%s", srv->url, path);
    if (ps_bench_http("GET", url, NULL, 0, &b) == 200) {
        ps_buf_putc(&b, 0);
        const char *d = strstr((const char *)b.data, "\"data\":[\"");
        if (d != NULL) {
            d += 9;
            const char *e = strchr(d, '"');
            if (e != NULL && (size_t)(e - d) < n) {
                memcpy(out, d, (size_t)(e - d));
                out[e - d] = 0;
            }
        }
    }
    ps_buf_dispose(&b);
}

static void queries(const opts_t *o, const ps_bench_server_t *srv, long long t0)
{
    char type[256], job[32], inst[32], sel[512], enc[1200], path[1600];
    first_value(srv, "/api/v1/label/__name__/values", type, sizeof(type));
    labels_of(0, o->jobs, job, sizeof(job), inst, sizeof(inst));
    uint64_t per_job = (o->series + o->jobs - 1) / o->jobs;
    printf("\n== label APIs and selectors over %llu label sets (profile type %s) ==\n",
           (unsigned long long)o->series, type);
    timed_get(srv, "/api/v1/labels", "/api/v1/labels");
    timed_get(srv, "/api/v1/label/__name__/values", "/api/v1/label/__name__/values");
    timed_get(srv, "/api/v1/label/job/values", "/api/v1/label/job/values");
    char what[128];
    snprintf(what, sizeof(what), "/api/v1/label/instance/values (%llu)", (unsigned long long)o->series);
    timed_get(srv, what, "/api/v1/label/instance/values");

    snprintf(sel, sizeof(sel), "{job=\"%s\",instance=\"%s\"}", job, inst);
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/series?match[]=%s", enc);
    timed_get(srv, "/api/v1/series {job,instance} (1 series)", path);
    snprintf(sel, sizeof(sel), "{job=\"%s\"}", job);
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/series?match[]=%s", enc);
    snprintf(what, sizeof(what), "/api/v1/series {job} (%llu series)", (unsigned long long)per_job);
    timed_get(srv, what, path);
    snprintf(path, sizeof(path), "/api/v1/label/instance/values?match[]=%s", enc);
    snprintf(what, sizeof(what), "label/instance/values?match[]={job} (%llu)", (unsigned long long)per_job);
    timed_get(srv, what, path);

    long long end = t0 + (long long)o->rounds * 10 + 10;
    /* as Grafana asks: with the dashboard's range (the data's, here) */
    char rng[96];
    snprintf(rng, sizeof(rng), "start=%lld&end=%lld", t0 - 10, end);
    snprintf(path, sizeof(path), "/api/v1/labels?%s", rng);
    timed_get(srv, "/api/v1/labels, start/end", path);
    snprintf(path, sizeof(path), "/api/v1/label/job/values?%s", rng);
    timed_get(srv, "/api/v1/label/job/values, start/end", path);
    snprintf(path, sizeof(path), "/api/v1/label/instance/values?%s", rng);
    snprintf(what, sizeof(what), "label/instance/values, start/end (%llu)", (unsigned long long)o->series);
    timed_get(srv, what, path);
    snprintf(path, sizeof(path), "/api/v1/series?match[]=%s&%s", enc, rng);
    snprintf(what, sizeof(what), "/api/v1/series {job}, start/end (%llu series)", (unsigned long long)per_job);
    timed_get(srv, what, path);
    /* a range before the data: every value without data in it */
    snprintf(rng, sizeof(rng), "start=%lld&end=%lld", t0 - 7200, t0 - 3600);
    snprintf(path, sizeof(path), "/api/v1/labels?%s", rng);
    timed_get(srv, "/api/v1/labels, a range without data", path);
    snprintf(path, sizeof(path), "/api/v1/label/job/values?%s", rng);
    timed_get(srv, "/api/v1/label/job/values, a range without data", path);
    snprintf(path, sizeof(path), "/api/v1/label/instance/values?%s", rng);
    timed_get(srv, "label/instance/values, a range without data", path);
    char body[512];
    snprintf(body, sizeof(body), "{\"start\":%lld,\"end\":%lld}", (t0 - 10) * 1000, end * 1000);
    timed(srv, "Pyroscope LabelNames, start/end", "/querier.v1.QuerierService/LabelNames", body);
    snprintf(body, sizeof(body), "{\"name\":\"job\",\"start\":%lld,\"end\":%lld}", (t0 - 10) * 1000,
             end * 1000);
    timed(srv, "Pyroscope LabelValues job, start/end", "/querier.v1.QuerierService/LabelValues", body);
    /* as Grafana's label editor asks: with {} and with the profile type, and one job's */
    snprintf(body, sizeof(body), "{\"matchers\":[\"{}\"],\"start\":%lld,\"end\":%lld}", (t0 - 10) * 1000, end * 1000);
    timed(srv, "Pyroscope LabelNames {}, start/end", "/querier.v1.QuerierService/LabelNames", body);
    snprintf(body, sizeof(body), "{\"name\":\"instance\",\"matchers\":[\"{}\"],\"start\":%lld,\"end\":%lld}",
             (t0 - 10) * 1000, end * 1000);
    timed(srv, "Pyroscope LabelValues instance {}, start/end", "/querier.v1.QuerierService/LabelValues", body);
    snprintf(body, sizeof(body),
             "{\"name\":\"job\",\"matchers\":[\"{__profile_type__=\\\"%s\\\"}\"],\"start\":%lld,\"end\":%lld}",
             type, (t0 - 10) * 1000, end * 1000);
    timed(srv, "Pyroscope LabelValues job {__profile_type__}, start/end", "/querier.v1.QuerierService/LabelValues",
          body);
    snprintf(body, sizeof(body), "{\"name\":\"instance\",\"matchers\":[\"{job=\\\"%s\\\"}\"],\"start\":%lld,\"end\":%lld}",
             job, (t0 - 10) * 1000, end * 1000);
    snprintf(what, sizeof(what), "Pyroscope LabelValues instance {job}, start/end (%llu)", (unsigned long long)per_job);
    timed(srv, what, "/querier.v1.QuerierService/LabelValues", body);
    snprintf(body, sizeof(body), "{\"matchers\":[\"{job=\\\"%s\\\"}\"],\"start\":%lld,\"end\":%lld}", job,
             (t0 - 10) * 1000, end * 1000);
    snprintf(what, sizeof(what), "Pyroscope Series {job}, start/end (%llu)", (unsigned long long)per_job);
    timed(srv, what, "/querier.v1.QuerierService/Series", body);

    snprintf(sel, sizeof(sel), "%s{job=\"%s\",instance=\"%s\"}", type, job, inst);
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/profiles/query?query=%s&start=%lld&end=%lld", enc, t0 - 10, end);
    timed_get(srv, "profiles/query merge, 1 series", path);
    snprintf(sel, sizeof(sel), "%s{job=\"%s\"}", type, job);
    ps_bench_urlencode(sel, enc, sizeof(enc));
    snprintf(path, sizeof(path), "/api/v1/profiles/query?query=%s&start=%lld&end=%lld", enc, t0 - 10, end);
    snprintf(what, sizeof(what), "profiles/query merge, %llu series", (unsigned long long)per_job);
    timed_get(srv, what, path);
}

static void print_rss(const char *when, const ps_bench_server_t *srv, uint64_t anon0_kb, double nseries)
{
    uint64_t anon, file;
    rss_of(srv->pid, &anon, &file);
    double grown = ((double)anon - (double)anon0_kb) * 1024;
    printf("  RssAnon %-26s %8.1f MiB (+%.1f MiB since ready: %.0f B per live series of %.0f; target <= 200 B), "
           "RssFile %.1f MiB\n",
           when, (double)anon / 1024, grown / 1048576, nseries > 0 ? grown / nseries : 0, nseries,
           (double)file / 1024);
    fflush(stdout);
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    parse(argc, argv, &o);
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", ps_bench_testdata(), o.fixture);
    if (ps_bench_read_file(path, &fix, &fixlen) != 0) {
        fprintf(stderr, "bench_series: cannot read %s: %s\n", path, strerror(errno));
        return 1;
    }
    char base[4096];
    int made = 0;
    if (o.data_dir != NULL) {
        snprintf(base, sizeof(base), "%s", o.data_dir);
        if (ps_bench_mkdirs(base) != 0) {
            fprintf(stderr, "bench_series: cannot create %s: %s\n", base, strerror(errno));
            return 1;
        }
    } else {
        snprintf(base, sizeof(base), "/tmp/profstore-bench-XXXXXX");
        if (mkdtemp(base) == NULL) {
            perror("mkdtemp");
            return 1;
        }
        made = 1;
    }
    long long t0 = (long long)time(NULL) - (long long)o.rounds * 10 - 3600;
    printf("bench_series: %llu label sets x %llu rounds of %s (%zu B), %llu jobs, %llu connections, fsync on\n",
           (unsigned long long)o.series, (unsigned long long)o.rounds, o.fixture, fixlen,
           (unsigned long long)o.jobs, (unsigned long long)o.conns);
    printf("  server %s, threads %s; data in %s\n", o.profstore, o.threads ? o.threads : "default", base);
    ps_bench_print_loadavg();
    fflush(stdout);

    if (o.reuse ? t0_file(base, &t0, false) != 0 : t0_file(base, &t0, true) != 0) {
        fprintf(stderr, "bench_series: %s/t0: %s\n", base, strerror(errno));
        return 1;
    }
    ps_bench_server_t srv;
    double base_rate = 0;
    if (o.base_series > 0 && !o.reuse) {
        if (start(&o, base, "baseline", &srv) != 0)
            return 1;
        push_res_t r;
        uint64_t rounds = (o.base_n + o.base_series - 1) / o.base_series;
        push(&o, &srv, o.base_series, 0, rounds, o.base_n, t0, &r);
        base_rate = (double)o.base_n / r.wall;
        printf("\n== baseline: %llu pushes over %llu label sets ==\n  %.0f profiles/s, %.1f us server CPU per "
               "profile, %llu ok, %llu failed%s%s\n",
               (unsigned long long)o.base_n, (unsigned long long)o.base_series, base_rate,
               r.server_cpu / (double)o.base_n * 1e6, (unsigned long long)r.ok, (unsigned long long)r.failed,
               r.failed ? "; first error: " : "", r.first_error);
        uint64_t anon, file;
        rss_of(srv.pid, &anon, &file);
        printf("  RssAnon after the pushes %.1f MiB (what pushing costs with few series), RssFile %.1f MiB\n",
               (double)anon / 1024, (double)file / 1024);
        ps_bench_server_stop(&srv);
    }

    if (start(&o, base, "series", &srv) != 0)
        return 1;
    uint64_t anon0, file0;
    rss_of(srv.pid, &anon0, &file0);
    printf("\n== %llu label sets ==\n  RssAnon at ready %.1f MiB, RssFile %.1f MiB\n", (unsigned long long)o.series,
           (double)anon0 / 1024, (double)file0 / 1024);
    for (uint64_t r = 0; r < o.rounds && !o.reuse; r++) {
        push_res_t pr;
        push(&o, &srv, o.series, r, r + 1, UINT64_MAX, t0, &pr);
        double rate = (double)o.series / pr.wall;
        double nser = metric(&srv, "profstore_storage_series");
        printf("  round %llu: %.0f profiles/s (%.1f%% of the baseline; target >= 70%%: %s), %.1f us server CPU "
               "per profile, %llu ok, %llu failed%s%s\n",
               (unsigned long long)r + 1, rate, base_rate > 0 ? rate / base_rate * 100 : 0,
               base_rate > 0 ? (rate >= 0.7 * base_rate ? "met" : "NOT met") : "no baseline",
               pr.server_cpu / (double)o.series * 1e6, (unsigned long long)pr.ok, (unsigned long long)pr.failed,
               pr.failed ? "; first error: " : "", pr.first_error);
        char when[64];
        snprintf(when, sizeof(when), "after round %llu", (unsigned long long)r + 1);
        print_rss(when, &srv, anon0, nser);
    }
    queries(&o, &srv, t0);
    print_rss("after the queries", &srv, anon0, metric(&srv, "profstore_storage_series"));
    int rc = ps_bench_server_stop(&srv);
    if (rc != 0) {
        char why[128];
        ps_bench_describe_status(rc, why, sizeof(why));
        printf("  (profstore shutdown: %s)\n", why);
    }
    if (made && !o.keep)
        ps_bench_rmrf(base);
    else
        printf("\n  data kept in %s\n", base);
    curl_global_cleanup();
    return 0;
}
