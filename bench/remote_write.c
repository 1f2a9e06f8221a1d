/*
 * remote_write.c - bench_remote_write: POST /api/v1/write throughput of profstore against a
 * Prometheus 2.42 started with --web.enable-remote-write-receiver, on the same bytes.
 *
 * One generator makes realistic remote-write 1.0 requests: --series node_exporter-like series
 * (node_cpu_seconds_total by cpu and mode, node_network_* counters by device, filesystem gauges;
 * 5-7 labels plus replica) scraped every 15 s for --rounds rounds, --per-request samples a
 * request (one sample per series, as a Prometheus shard sends them). The series are split into
 * shards by request position; a shard's requests are sent in order (as Prometheus' queue manager
 * does), --conns requests in flight. Values as next_value() describes (a mostly idle host;
 * timestamps aligned to the interval as Prometheus >= 2.35 writes them). The same
 * request bytes go to profstore, then to Prometheus. Prints samples/s, server CPU per sample and
 * peak RSS for both, and profstore's bytes per sample on disk after compaction (XOR chunk bytes,
 * the float databases' pages, the whole data.mdb).
 *
 *   bench_remote_write [--series 10000] [--rounds 120] [--per-request 2000] [--conns 4]
 *                      [--prometheus /usr/bin/prometheus | --no-prometheus] [--profstore PATH] [--keep]
 *
 * Nothing is asserted: the targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "storage/store.h"
#include "util.h"

typedef struct opts {
    char profstore[4096];
    const char *prometheus;
    uint32_t series, rounds, per_request, conns;
    int keep;
} opts_t;

typedef struct body {
    uint8_t *data;
    size_t len;
    uint32_t shard;
} body_t;

static body_t *bodies;
static size_t nbodies;
static uint64_t total_samples, total_bytes;

/* ---- the generator ---- */

static void set_labels(ps_arena_t *a, ps_remote_series_t *s, uint32_t i)
{
    static const char *const modes[] = {"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"};
    static const char *const net[] = {"node_network_receive_bytes_total", "node_network_receive_packets_total",
                                      "node_network_transmit_bytes_total", "node_network_transmit_packets_total"};
    ps_label_pair_t *p = ps_arena_alloc(a, 8 * sizeof(*p));
    char inst[32], v1[32], v2[32];
    uint32_t host = i / 200, k = i % 200, n = 0;
    snprintf(inst, sizeof(inst), "10.0.%u.%u:9100", host / 256, host % 256);
#define PAIR(nm, val)                                                                                      \
    do {                                                                                                   \
        p[n].name = ps_arena_strndup(a, nm, strlen(nm));                                                   \
        p[n].value = ps_arena_strndup(a, val, strlen(val));                                                \
        p[n].nlen = (uint32_t)strlen(nm);                                                                  \
        p[n].vlen = (uint32_t)strlen(val);                                                                 \
        n++;                                                                                               \
    } while (0)
    if (k < 128) { /* 16 cpus x 8 modes */
        snprintf(v1, sizeof(v1), "%u", k / 8);
        PAIR("__name__", "node_cpu_seconds_total");
        PAIR("cpu", v1);
        PAIR("mode", modes[k % 8]);
    } else if (k < 176) { /* 12 devices x 4 */
        snprintf(v1, sizeof(v1), "eth%u", (k - 128) / 4);
        PAIR("__name__", net[(k - 128) % 4]);
        PAIR("device", v1);
    } else { /* filesystems */
        snprintf(v1, sizeof(v1), "/dev/nvme0n1p%u", k - 176);
        snprintf(v2, sizeof(v2), "/srv/data%u", k - 176);
        PAIR("__name__", "node_filesystem_avail_bytes");
        PAIR("device", v1);
        PAIR("fstype", "ext4");
        PAIR("mountpoint", v2);
    }
    PAIR("instance", inst);
    PAIR("job", "node");
    PAIR("replica", "bench");
#undef PAIR
    ps_labels_t ls = {n, p, 0};
    ps_labels_normalize(&ls, NULL);
    s->labels = ls;
}

/* The value of series i at round r, from its previous value. Like node_exporter on a mostly idle
 * host: idle CPU seconds grow by about the interval, user and system by a little, the rarely used
 * modes (iowait, irq, nice, softirq, steal) mostly not at all; byte counters by random amounts,
 * packet counters by small ones; free bytes drift by pages now and then. */
static double next_value(uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    if (k < 128) { /* CPU seconds, in 10 ms ticks */
        uint32_t mode = k % 8; /* idle, iowait, irq, nice, softirq, steal, system, user */
        if (r == 0)
            return (double)(ps_bench_rnd() % 10000000) / 100;
        double ticks;
        if (mode == 0)
            ticks = 1400 + (double)(ps_bench_rnd() % 100);
        else if (mode >= 6)
            ticks = (double)(ps_bench_rnd() % 60);
        else
            ticks = ps_bench_rnd() % 5 == 0 ? (double)(ps_bench_rnd() % 3) : 0;
        return prev + ticks / 100;
    }
    if (k < 176) { /* network: bytes, packets */
        bool bytes = (k - 128) % 2 == 0;
        if (r == 0)
            return (double)(ps_bench_rnd() % 1000000000);
        return prev + (double)(bytes ? ps_bench_rnd() % 200000 : ps_bench_rnd() % 150);
    }
    if (r == 0) /* free bytes, multiples of 4096 */
        return (double)((ps_bench_rnd() % 100000000) * 4096);
    return ps_bench_rnd() % 4 == 0 ? prev + (double)((int64_t)(ps_bench_rnd() % 64) - 32) * 4096 : prev;
}

static int generate(const opts_t *o, int64_t t0)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_remote_series_t *all = ps_arena_calloc(&a, o->series, sizeof(*all));
    double *val = ps_xcalloc(o->series, sizeof(double));
    for (uint32_t i = 0; i < o->series; i++)
        set_labels(&a, &all[i], i);
    uint32_t per_round = (o->series + o->per_request - 1) / o->per_request;
    nbodies = (size_t)per_round * o->rounds;
    bodies = ps_xcalloc(nbodies, sizeof(*bodies));
    ps_remote_sample_t *smp = ps_xcalloc(o->series, sizeof(*smp));
    size_t b = 0;
    for (uint32_t r = 0; r < o->rounds; r++) {
        for (uint32_t i = 0; i < o->series; i++) {
            val[i] = next_value(i, r, val[i]);
            /* each target scraped at its own offset in the interval; Prometheus (since 2.35) aligns a
             * scrape's timestamp to the interval when it is within 2 ms of it, so no jitter */
            int64_t t = t0 + (int64_t)r * 15000 + (int64_t)(i / 200 % 15000);
            smp[i] = (ps_remote_sample_t){t, val[i]};
            all[i].samples = &smp[i];
            all[i].nsamples = 1;
            all[i].meta = -1;
        }
        for (uint32_t q = 0; q < per_round; q++) {
            uint32_t from = q * o->per_request, to = from + o->per_request;
            if (to > o->series)
                to = o->series;
            ps_remote_write_t w = {0};
            w.version = 1;
            w.series = all + from;
            w.nseries = to - from;
            w.nsamples = to - from;
            ps_buf_t out = PS_BUF_INIT;
            ps_err_t err;
            if (ps_remote_write_encode(&w, 1, &out, &err) != 0) {
                fprintf(stderr, "bench_remote_write: encode: %s\n", err.msg);
                return -1;
            }
            bodies[b].data = out.data;
            bodies[b].len = out.len;
            bodies[b].shard = q;
            b++;
            total_samples += to - from;
            total_bytes += out.len;
        }
    }
    free(smp);
    free(val);
    ps_arena_dispose(&a);
    return 0;
}

/* ---- one receiver ---- */

typedef struct result {
    const char *name;
    int ok;
    double wall, cpu, hwm_mib, p50, p99;
    uint64_t ok_requests, failed;
    char first_error[512];
} result_t;

static void send_all(const opts_t *o, ps_bench_server_t *srv, const char *path, result_t *r)
{
    static const char *const hdrs[] = {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                                       "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: bench_remote_write",
                                       NULL};
    ps_bench_pusher_t *p = ps_bench_pusher_new(o->conns, 0);
    ps_bench_pusher_headers(p, hdrs);
    char url[256];
    snprintf(url, sizeof(url), "%s%s", srv->url, path);
    ps_bench_proc_t pr0, pr1;
    ps_bench_proc_read(srv->pid, &pr0);
    double w0 = ps_bench_now();
    for (size_t i = 0; i < nbodies; i++)
        ps_bench_pusher_post(p, bodies[i].shard, url, bodies[i].data, bodies[i].len);
    ps_bench_pusher_drain(p);
    r->wall = ps_bench_now() - w0;
    ps_bench_proc_read(srv->pid, &pr1);
    r->cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
    r->hwm_mib = (double)pr1.vm_hwm_kb / 1024;
    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(p);
    r->ok_requests = st->ok;
    r->failed = st->failed;
    snprintf(r->first_error, sizeof(r->first_error), "%s", st->first_error);
    double *lat = ps_xmalloc((st->nlat + 1) * sizeof(double));
    memcpy(lat, st->lat, st->nlat * sizeof(double));
    r->p50 = ps_bench_quantile(lat, st->nlat, 0.5);
    r->p99 = ps_bench_quantile(lat, st->nlat, 0.99);
    free(lat);
    ps_bench_pusher_free(p);
    r->ok = 1;
}

static void print_result(const result_t *r)
{
    printf("\n== %s ==\n", r->name);
    if (!r->ok) {
        printf("  (did not run; see above)\n");
        return;
    }
    printf("  requests               %llu ok, %llu failed\n", (unsigned long long)r->ok_requests,
           (unsigned long long)r->failed);
    if (r->failed)
        printf("  first error            %s\n", r->first_error);
    printf("  wall time              %.3f s\n", r->wall);
    printf("  samples/s              %.0f\n", (double)total_samples / r->wall);
    printf("  server CPU             %.3f s = %.2f us/sample (%.0f%% of one CPU)\n", r->cpu,
           r->cpu / (double)total_samples * 1e6, r->cpu / r->wall * 100);
    printf("  latency                p50 %.2f ms, p99 %.2f ms\n", r->p50 * 1e3, r->p99 * 1e3);
    printf("  server peak RSS        %.1f MiB\n", r->hwm_mib);
}

typedef struct bytes_ctx {
    ps_reader_t *r;
    uint64_t chunk_bytes, chunks, samples;
} bytes_ctx_t;

static int on_chunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    bytes_ctx_t *c = ctx;
    (void)min_t, (void)max_t;
    c->chunk_bytes += n;
    c->chunks++;
    c->samples += (uint32_t)chunk[0] << 8 | chunk[1];
    return 0;
}

static int on_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    bytes_ctx_t *c = ctx;
    (void)ls;
    return ps_reader_xor_chunks(c->r, sid, INT64_MIN, INT64_MAX, on_chunk, c, NULL);
}

/* After the server stopped: the XOR chunk bytes, from the store itself. */
static void disk_figures(const char *dir)
{
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = dir;
    so.retention_ns = 0;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&so, &s, &err) != 0) {
        printf("  (cannot open %s: %s)\n", dir, err.msg);
        return;
    }
    ps_store_stats_t st;
    ps_reader_t *r;
    bytes_ctx_t c = {0};
    if (ps_store_stats(s, &st, &err) == 0 && ps_reader_begin(s, &r, &err) == 0) {
        c.r = r;
        ps_reader_series_foreach(r, on_series, &c, &err);
        ps_reader_end(r);
        double n = (double)c.samples;
        printf("  on disk after compaction: %llu samples in %llu XOR chunks (%llu series, %llu open heads)\n",
               (unsigned long long)c.samples, (unsigned long long)c.chunks, (unsigned long long)st.series,
               (unsigned long long)st.float_heads);
        printf("  XOR chunk bytes        %.1f MB = %.3f bytes/sample   (target <= 1.5; Gorilla 1.37, Prometheus docs 1-2)\n",
               (double)c.chunk_bytes / 1e6, (double)c.chunk_bytes / n);
        printf("  LMDB pages in use      %.1f MB = %.3f bytes/sample (chunks, series, postings, free pages)\n",
               (double)st.used_bytes / 1e6, (double)st.used_bytes / n);
        printf("  data.mdb on disk       %.1f MB = %.3f bytes/sample\n", (double)st.file_bytes / 1e6,
               (double)st.file_bytes / n);
    }
    ps_store_close(s);
}

static void usage(void)
{
    fputs("usage: bench_remote_write [--series N] [--rounds N] [--per-request N] [--conns N]\n"
          "                          [--prometheus PATH | --no-prometheus] [--profstore PATH] [--keep]\n",
          stderr);
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_default_profstore(o.profstore, sizeof(o.profstore));
    o.prometheus = "/usr/bin/prometheus";
    o.series = 10000;
    o.rounds = 120; /* one full chunk (120 samples) per series */
    o.per_request = 2000;
    o.conns = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--series") && v)
            o.series = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--rounds") && v)
            o.rounds = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--per-request") && v)
            o.per_request = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--conns") && v)
            o.conns = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--prometheus") && v)
            o.prometheus = argv[++i];
        else if (!strcmp(a, "--no-prometheus"))
            o.prometheus = NULL;
        else if (!strcmp(a, "--profstore") && v)
            snprintf(o.profstore, sizeof(o.profstore), "%s", argv[++i]);
        else if (!strcmp(a, "--keep"))
            o.keep = 1;
        else {
            usage();
            return 2;
        }
    }
    if (o.series == 0 || o.rounds == 0 || o.per_request == 0 || o.conns == 0) {
        usage();
        return 2;
    }
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* the newest round 1 minute ago; Prometheus' head takes anything for an empty TSDB */
    int64_t t0 = ((int64_t)time(NULL) - 60 - (int64_t)o.rounds * 15) * 1000;
    if (generate(&o, t0) != 0)
        return 1;
    char base[] = "/tmp/profstore-bench-rw-XXXXXX";
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_remote_write: %u series x %u rounds (15 s apart) = %llu samples in %zu requests of <= %u samples "
           "(%.1f MB of snappy bodies, %.1f bytes/sample on the wire), %u in flight; %ld CPUs shared by the "
           "servers and this generator; data in %s\n",
           o.series, o.rounds, (unsigned long long)total_samples, nbodies, o.per_request, (double)total_bytes / 1e6,
           (double)total_bytes / (double)total_samples, o.conns, ncpu, base);
    fflush(stdout);

    result_t rp = {"profstore", 0}, rq = {"Prometheus 2.42 --web.enable-remote-write-receiver", 0};
    char dir[4200], log[4200];
    snprintf(dir, sizeof(dir), "%s/profstore", base);
    snprintf(log, sizeof(log), "%s/profstore.log", base);
    static const char *const pargs[] = {"--retention", "0", NULL};
    ps_bench_server_t srv;
    if (ps_bench_server_start(&srv, o.profstore, dir, log, pargs) == 0) {
        send_all(&o, &srv, "/api/v1/write", &rp);
        char u[128];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
        ps_bench_proc_t c0, c1;
        ps_bench_proc_read(srv.pid, &c0);
        double w0 = ps_bench_now();
        long code = ps_bench_http("POST", u, "", 0, NULL);
        double cw = ps_bench_now() - w0;
        ps_bench_proc_read(srv.pid, &c1);
        print_result(&rp);
        printf("  POST /admin/compact    HTTP %ld, %.3f s wall, %.3f s server CPU\n", code, cw,
               (c1.cpu_user + c1.cpu_sys) - (c0.cpu_user + c0.cpu_sys));
        ps_bench_server_stop(&srv);
        disk_figures(dir);
    } else {
        print_result(&rp);
    }
    fflush(stdout);

    if (o.prometheus != NULL && access(o.prometheus, X_OK) == 0) {
        char cfg[4200], pdir[4200], plog[4200], cfgarg[4300], darg[4300];
        snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", base);
        snprintf(pdir, sizeof(pdir), "%s/prometheus", base);
        snprintf(plog, sizeof(plog), "%s/prometheus.log", base);
        FILE *f = fopen(cfg, "w");
        if (f != NULL) {
            fputs("global:\n  scrape_interval: 15s\nscrape_configs: []\n", f);
            fclose(f);
        }
        snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
        snprintf(darg, sizeof(darg), "--storage.tsdb.path=%s", pdir);
        const char *args[] = {o.prometheus, cfgarg, darg, "--web.listen-address=127.0.0.1:{port}",
                              "--web.enable-remote-write-receiver", NULL};
        ps_bench_server_t prom;
        if (ps_bench_exec_start(&prom, args, plog, "/-/ready") == 0) {
            send_all(&o, &prom, "/api/v1/write", &rq);
            print_result(&rq);
            ps_bench_server_stop(&prom);
        } else {
            print_result(&rq);
        }
    } else {
        printf("\n(Prometheus not run: %s)\n", o.prometheus ? "not executable" : "--no-prometheus");
    }
    if (rp.ok && rq.ok) {
        printf("\n== profstore / Prometheus ==\n");
        printf("  samples/s              %.0f vs %.0f: %.2fx   (target >= 1x: %s)\n", total_samples / rp.wall,
               total_samples / rq.wall, rq.wall / rp.wall, rq.wall / rp.wall >= 1 ? "met" : "NOT met");
        printf("  server CPU per sample  %.2f us vs %.2f us: %.2fx\n", rp.cpu / total_samples * 1e6,
               rq.cpu / total_samples * 1e6, rp.cpu / rq.cpu);
    }
    if (!o.keep)
        ps_bench_rmrf(base);
    else
        printf("\n  data kept in %s\n", base);
    for (size_t i = 0; i < nbodies; i++)
        free(bodies[i].data);
    free(bodies);
    curl_global_cleanup();
    return 0;
}
