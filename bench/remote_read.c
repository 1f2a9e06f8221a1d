/*
 * remote_read.c - bench_remote_read: POST /api/v1/read of 1 h of 1,000 float series (240 samples
 * each, 15 s apart: node_exporter-like counters and gauges) against profstore and, in the same run
 * and with the same request bytes, against a Prometheus 2.42 (--web.enable-remote-write-receiver)
 * that received the same remote-write bodies. For SAMPLES and STREAMED_XOR_CHUNKS answers: the
 * median and p90 latency over the rounds, the answer's bytes, and each server's CPU per read.
 *
 *   bench_remote_read [--profstore PATH] [--prometheus BIN] [--series N] [--rounds N]
 *
 * Nothing is asserted but that both servers answer 200 with the same number of bytes in SAMPLES
 * mode (the same series and samples; Prometheus' STREAMED chunks are its head chunks, ours the
 * stored ones, so those sizes differ slightly).
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>

#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "proto/remote_read.h"
#include "util.h"

#define SAMPLES_PER_SERIES 240
#define STEP_MS 15000

/* what to stop and remove when the benchmark ends, also on a failure */
static ps_bench_server_t *g_ps;
static pid_t g_prom = -1;
static const char *g_dir;

static void cleanup(void)
{
    if (g_ps != NULL)
        ps_bench_server_stop(g_ps);
    g_ps = NULL;
    if (g_prom > 0) {
        kill(g_prom, SIGTERM);
        waitpid(g_prom, NULL, 0);
    }
    g_prom = -1;
    if (g_dir != NULL)
        ps_bench_rmrf(g_dir);
    g_dir = NULL;
}

static void fail(void)
{
    cleanup();
    exit(1);
}

static int free_port(void)
{
    char url[64];
    for (int p = 20000 + (int)(getpid() % 20000);; p++) {
        snprintf(url, sizeof(url), "http://127.0.0.1:%d/", p);
        if (ps_bench_http("GET", url, NULL, 0, NULL) < 0)
            return p;
    }
}

/* One remote-write 1.0 body holding series [from, to) with all their samples. */
static void write_body(uint32_t from, uint32_t to, int64_t t0, ps_buf_t *out)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_remote_write_t w = {0};
    ps_err_t err;
    w.version = 1;
    w.nseries = to - from;
    w.series = ps_arena_calloc(&a, w.nseries, sizeof(*w.series));
    for (uint32_t i = from; i < to; i++) {
        ps_remote_series_t *s = &w.series[i - from];
        char inst[32], cpu[16];
        snprintf(inst, sizeof(inst), "10.0.%u.%u:9100", i / 100 / 256, i / 100 % 256);
        snprintf(cpu, sizeof(cpu), "%u", i % 100);
        const char *name = i % 2 ? "bench_cpu_seconds_total" : "bench_memory_bytes";
        ps_label_pair_t *p = ps_arena_alloc(&a, 4 * sizeof(*p));
        const char *kv[4][2] = {{"__name__", name}, {"cpu", cpu}, {"instance", inst}, {"job", "node"}};
        for (int k = 0; k < 4; k++)
            p[k] = (ps_label_pair_t){ps_arena_strndup(&a, kv[k][0], strlen(kv[k][0])),
                                     ps_arena_strndup(&a, kv[k][1], strlen(kv[k][1])), (uint32_t)strlen(kv[k][0]),
                                     (uint32_t)strlen(kv[k][1])};
        s->labels = (ps_labels_t){4, p, 0};
        s->nsamples = SAMPLES_PER_SERIES;
        s->samples = ps_arena_alloc(&a, SAMPLES_PER_SERIES * sizeof(*s->samples));
        double v = (double)(ps_bench_rnd() % 1000);
        for (uint32_t k = 0; k < SAMPLES_PER_SERIES; k++) {
            v = i % 2 ? v + (double)(ps_bench_rnd() % 1500) / 100.0 : (double)(1u << 30) + (double)(ps_bench_rnd() % 4096) * 4096;
            s->samples[k] = (ps_remote_sample_t){t0 + (int64_t)k * STEP_MS + (int64_t)(ps_bench_rnd() % 3), v};
        }
        s->meta = -1;
    }
    ps_buf_reset(out);
    if (ps_remote_write_encode(&w, 1, out, &err) != 0) {
        fprintf(stderr, "bench_remote_read: encode: %s\n", err.msg);
        fail();
    }
    ps_arena_dispose(&a);
}

typedef struct peer {
    const char *name;
    pid_t pid;
    char url[64];
    CURL *h; /* one keep-alive connection per server */
} peer_t;

static size_t to_buf(char *p, size_t size, size_t n, void *ctx)
{
    ps_buf_append(ctx, p, size * n);
    return size * n;
}

/* POSTs a snappy protobuf body with the remote-write or remote-read headers Prometheus sends. */
static long post_proto(peer_t *p, const char *path, const ps_buf_t *body, int write, ps_buf_t *out)
{
    char url[128];
    snprintf(url, sizeof(url), "%s%s", p->url, path);
    if (p->h == NULL)
        p->h = curl_easy_init();
    struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    hdr = curl_slist_append(hdr, "Content-Encoding: snappy");
    hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
    hdr = curl_slist_append(hdr, write ? "X-Prometheus-Remote-Write-Version: 0.1.0"
                                       : "X-Prometheus-Remote-Read-Version: 0.1.0");
    curl_easy_setopt(p->h, CURLOPT_URL, url);
    curl_easy_setopt(p->h, CURLOPT_WRITEFUNCTION, to_buf);
    ps_buf_t sink = PS_BUF_INIT;
    curl_easy_setopt(p->h, CURLOPT_WRITEDATA, out ? out : &sink);
    curl_easy_setopt(p->h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(p->h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(p->h, CURLOPT_POST, 1L);
    curl_easy_setopt(p->h, CURLOPT_POSTFIELDS, body->data);
    curl_easy_setopt(p->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    long code = -1;
    if (curl_easy_perform(p->h) == CURLE_OK)
        curl_easy_getinfo(p->h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    ps_buf_dispose(&sink);
    return code;
}

static pid_t start_prometheus(const char *bin, const char *dir, int port)
{
    char cfg[1200], tsdb[1200], listen[64], flag_cfg[1300], flag_tsdb[1300], logp[1200];
    snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", dir);
    snprintf(tsdb, sizeof(tsdb), "%s/tsdb", dir);
    snprintf(logp, sizeof(logp), "%s/prometheus.log", dir);
    FILE *f = fopen(cfg, "w");
    if (f == NULL)
        return -1;
    fputs("global:\n  scrape_interval: 1m\nscrape_configs: []\n", f);
    fclose(f);
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", port);
    snprintf(flag_cfg, sizeof(flag_cfg), "--config.file=%s", cfg);
    snprintf(flag_tsdb, sizeof(flag_tsdb), "--storage.tsdb.path=%s", tsdb);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *l = freopen(logp, "w", stdout);
        (void)l;
        dup2(1, 2);
        execl(bin, bin, flag_cfg, flag_tsdb, listen, "--web.enable-remote-write-receiver", (char *)NULL);
        _exit(127);
    }
    char url[96];
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/-/ready", port);
    for (int i = 0; i < 300; i++) {
        if (ps_bench_http("GET", url, NULL, 0, NULL) == 200)
            return pid;
        usleep(100000);
    }
    fprintf(stderr, "bench_remote_read: prometheus not ready (log %s)\n", logp);
    kill(pid, SIGKILL);
    return -1;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void bench_reads(peer_t *p, const char *mode, const ps_buf_t *req, uint32_t rounds, size_t *bytes)
{
    double *lat = calloc(rounds, sizeof(double));
    ps_buf_t out = PS_BUF_INIT;
    ps_bench_proc_t b0, b1;
    ps_bench_proc_read(p->pid, &b0);
    for (uint32_t i = 0; i < rounds; i++) {
        ps_buf_reset(&out);
        double t = ps_bench_now();
        long st = post_proto(p, "/api/v1/read", req, 0, &out);
        lat[i] = ps_bench_now() - t;
        if (st != 200) {
            fprintf(stderr, "bench_remote_read: %s %s: status %ld: %.200s\n", p->name, mode, st, (char *)out.data);
            fail();
        }
    }
    ps_bench_proc_read(p->pid, &b1);
    qsort(lat, rounds, sizeof(double), cmp_d);
    double cpu = (b1.cpu_user + b1.cpu_sys - b0.cpu_user - b0.cpu_sys) / rounds;
    printf("  %-10s %-8s median %7.2f ms  p90 %7.2f ms  server CPU %7.2f ms/read  answer %9zu bytes\n", p->name,
           mode, lat[rounds / 2] * 1e3, lat[rounds * 9 / 10] * 1e3, cpu * 1e3, out.len);
    *bytes = out.len;
    ps_buf_dispose(&out);
    free(lat);
}

typedef struct {
    const char *profstore, *prometheus;
    uint64_t series, rounds;
} opts_t;

static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(offsetof(opts_t, profstore)),
    {.name = "prometheus", .type = PS_FLAG_STRING, .offset = offsetof(opts_t, prometheus), .metavar = "BIN",
     .def = "/usr/bin/prometheus", .help = "Prometheus 2.42 binary (default /usr/bin/prometheus)"},
    {.name = "series", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, series), .metavar = "N", .def = "1000",
     .min = 1, .max = UINT32_MAX, .help = "float series read (default 1000)"},
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = offsetof(opts_t, rounds), .metavar = "N", .def = "30",
     .min = 1, .max = UINT32_MAX, .help = "timed reads of each kind (default 30)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
static const ps_flagset_t flagset = {"bench_remote_read", "usage: bench_remote_read [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    char profstore[1024], dir[] = "/tmp/profstore-bench-rread-XXXXXX";
    opts_t o = {0};
    ps_bench_flags(&flagset, argc, argv, &o);
    const char *prom_bin = o.prometheus;
    uint32_t nseries = (uint32_t)o.series, rounds = (uint32_t)o.rounds;
    ps_bench_profstore_path(profstore, sizeof(profstore), o.profstore);
    if (mkdtemp(dir) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    char pdata[1100], plog[1100], promdir[1100];
    snprintf(pdata, sizeof(pdata), "%s/profstore", dir);
    snprintf(plog, sizeof(plog), "%s/profstore.log", dir);
    snprintf(promdir, sizeof(promdir), "%s/prometheus", dir);
    ps_bench_mkdirs(promdir);
    g_dir = dir;
    ps_bench_server_t ps;
    const char *args[] = {"--retention", "0", "--threads", "2", NULL};
    if (ps_bench_server_start(&ps, profstore, pdata, plog, args) != 0)
        fail();
    g_ps = &ps;
    int pport = free_port();
    pid_t ppid = access(prom_bin, X_OK) == 0 ? start_prometheus(prom_bin, promdir, pport) : -1;
    g_prom = ppid;
    peer_t peers[2] = {{"profstore", ps.pid, "", NULL}, {"prometheus", ppid, "", NULL}};
    snprintf(peers[0].url, sizeof(peers[0].url), "%s", ps.url);
    snprintf(peers[1].url, sizeof(peers[1].url), "http://127.0.0.1:%d", pport);
    uint32_t npeers = ppid > 0 ? 2 : 1;
    if (ppid <= 0)
        printf("(no Prometheus at %s: profstore only)\n", prom_bin);

    int64_t t0 = ((int64_t)time(NULL) - 3600) * 1000;
    ps_buf_t body = PS_BUF_INIT;
    for (uint32_t from = 0; from < nseries; from += 8) { /* 8 series x 240 = 1,920 samples a request */
        uint32_t to = from + 8 < nseries ? from + 8 : nseries;
        write_body(from, to, t0, &body);
        for (uint32_t k = 0; k < npeers; k++) {
            long st = post_proto(&peers[k], "/api/v1/write", &body, 1, NULL);
            if (st / 100 != 2) {
                fprintf(stderr, "bench_remote_read: %s: write status %ld\n", peers[k].name, st);
                fail();
            }
        }
    }
    printf("%u series x %u samples (1 h, 15 s apart) written to %s\n", nseries, SAMPLES_PER_SERIES,
           npeers == 2 ? "profstore and Prometheus" : "profstore");

    ps_read_matcher_t m = {PS_READ_RE, "__name__", "bench_.*", 8, 8};
    ps_read_query_t q = {t0, t0 + 3600 * 1000, 1, &m, {0}};
    q.hints.func = "";
    int streamed = PS_READ_STREAMED_XOR_CHUNKS, samples = PS_READ_SAMPLES;
    ps_read_request_t rs = {1, &q, 1, &samples}, rx = {1, &q, 1, &streamed};
    ps_buf_t reqs = PS_BUF_INIT, reqx = PS_BUF_INIT;
    ps_read_request_encode(&rs, &reqs);
    ps_read_request_encode(&rx, &reqx);
    size_t bytes[2][2] = {{0}};
    for (uint32_t k = 0; k < npeers; k++) {
        bench_reads(&peers[k], "SAMPLES", &reqs, rounds, &bytes[k][0]);
        bench_reads(&peers[k], "STREAMED", &reqx, rounds, &bytes[k][1]);
    }
    if (npeers == 2 && bytes[0][0] != bytes[1][0])
        printf("  note: SAMPLES answers differ in size (%zu vs %zu bytes)\n", bytes[0][0], bytes[1][0]);
    for (uint32_t k = 0; k < npeers; k++)
        curl_easy_cleanup(peers[k].h);
    cleanup();
    ps_buf_dispose(&body);
    ps_buf_dispose(&reqs);
    ps_buf_dispose(&reqx);
    return 0;
}
