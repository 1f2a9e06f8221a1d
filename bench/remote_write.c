/*
 * remote_write.c - bench_remote_write: POST /api/v1/write throughput of profstore against
 * Prometheus 3 and Prometheus 2.42 started with --web.enable-remote-write-receiver, on the same
 * bytes (Prometheus 3: --prometheus3, default the peers cache's 3.16.0 that
 * scripts/install-prometheus3.sh builds; left out when absent).
 *
 * The generator of rwgen.h (shared with bench_promql) makes realistic remote-write 1.0 requests:
 * --series node_exporter-like series (node_cpu_seconds_total by cpu and mode, node_network_*
 * counters by device, memory and filesystem gauges, ...; 3-6 labels plus replica) scraped every
 * 15 s for --rounds rounds, --per-request samples a request (one sample per series, as a
 * Prometheus shard sends them). The series are split into shards by request position; a shard's
 * requests are sent in order (as Prometheus' queue manager does), --conns requests in flight.
 * --values node (the default): a 4-CPU host's node_exporter mix, one scrape in 20 a few ms off
 * the interval; --values cpu: the generator this bench had first (64% CPU seconds, exact
 * timestamps), for comparison. The same request bytes go to profstore, then to Prometheus. Prints
 * samples/s, server CPU per sample and peak RSS for both, and profstore's bytes per sample on
 * disk after compaction (XOR chunk bytes, the float databases' pages, the whole data.mdb, and
 * where the pages go), beside Prometheus'
 * TSDB for the same samples as promtool compacts them into blocks (chunks, index).
 *
 *   bench_remote_write [--series 10000] [--rounds 120] [--per-request 2000] [--conns 4]
 *                      [--prometheus /usr/bin/prometheus | --no-prometheus]
 *                      [--prometheus3 BIN | --no-prometheus3] [--profstore PATH] [--keep]
 *                      [--values node | cpu] [--shapes]
 *
 * Also printed: the disk's fsync time (a request into an idle profstore waits for two), the
 * page cache each server's writes dirtied (/proc/PID/io write_bytes), and profstore's writer
 * transactions (how many requests each commit carried). --shapes then runs the request shapes
 * of real senders (see run_shapes), each against the same Prometheus versions.
 *
 * Nothing is asserted: the targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "rwgen.h"
#include "storage/store.h"
#include "util.h"

typedef struct opts {
    char profstore[4096];
    const char *prometheus, *prometheus3;
    uint32_t series, rounds, per_request, conns;
    int keep;
    ps_bench_rw_values_t values; /* --values node (default) | cpu: rwgen.h */
} opts_t;

typedef struct body {
    uint8_t *data;
    size_t len;
    uint32_t shard;
} body_t;

static body_t *bodies;
static size_t nbodies;
static uint64_t total_samples, total_bytes;

/* ---- the requests: rwgen.h's generator, every body kept ---- */

/* name{l="v",...} of ls, for OpenMetrics text (label values here need no escaping) */
static char *om_series(const ps_labels_t *ls)
{
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t j = 0; j < ls->n; j++)
        if (ls->pairs[j].nlen == 8 && memcmp(ls->pairs[j].name, "__name__", 8) == 0)
            ps_buf_append(&b, ls->pairs[j].value, ls->pairs[j].vlen);
    ps_buf_putc(&b, '{');
    bool first = true;
    for (uint32_t j = 0; j < ls->n; j++) {
        if (ls->pairs[j].nlen == 8 && memcmp(ls->pairs[j].name, "__name__", 8) == 0)
            continue;
        if (!first)
            ps_buf_putc(&b, ',');
        first = false;
        ps_buf_append(&b, ls->pairs[j].name, ls->pairs[j].nlen);
        ps_buf_append(&b, "=\"", 2);
        ps_buf_append(&b, ls->pairs[j].value, ls->pairs[j].vlen);
        ps_buf_putc(&b, '"');
    }
    ps_buf_append(&b, "}", 2); /* with its NUL */
    return (char *)b.data;
}

static int keep_body(void *ctx, const uint8_t *body, size_t len, uint32_t shard)
{
    (void)ctx;
    uint8_t *copy = ps_xmalloc(len);
    memcpy(copy, body, len);
    bodies[nbodies++] = (body_t){copy, len, shard};
    total_bytes += len;
    return 0;
}

/* om: when not NULL, every sample also goes there as OpenMetrics text (for promtool) */
static int generate(const opts_t *o, int64_t t0, FILE *om)
{
    ps_bench_rwgen_t g;
    ps_bench_rwgen_init(&g, o->series, o->per_request, t0, o->values);
    char **names = ps_xcalloc(o->series, sizeof(char *));
    for (uint32_t i = 0; i < o->series && om; i++)
        names[i] = om_series(&g.all[i].labels);
    bodies = ps_xcalloc((size_t)g.per_round * o->rounds, sizeof(*bodies));
    int rc = 0;
    for (uint32_t r = 0; r < o->rounds && rc == 0; r++) {
        rc = ps_bench_rwgen_round(&g, keep_body, NULL);
        for (uint32_t i = 0; i < o->series && om; i++) {
            const ps_remote_sample_t *sm = g.all[i].samples;
            fprintf(om, "%s %.17g %lld.%03lld\n", names[i], sm->v, (long long)(sm->t_ms / 1000),
                    (long long)(sm->t_ms % 1000));
        }
        total_samples += o->series;
    }
    if (om)
        fputs("# EOF\n", om);
    for (uint32_t i = 0; i < o->series; i++)
        free(names[i]);
    free(names);
    ps_bench_rwgen_dispose(&g);
    return rc;
}

/* ---- one receiver ---- */

typedef struct result {
    const char *name;
    int ok;
    double wall, cpu, hwm_mib, p50, p99;
    uint64_t ok_requests, failed;
    uint64_t write_bytes; /* /proc/PID/io write_bytes during the run: the page cache its writes dirtied */
    char first_error[512];
    double writer_cpu, decode_cpu, http_cpu; /* profstore's threads by name (writer, decode-*, http-*); -1: none */
} result_t;

/* CPU seconds between p0 and p1 of the threads whose name starts with prefix, -1 when there is none */
static double threads_cpu(const ps_bench_proc_t *p0, const ps_bench_proc_t *p1, const char *prefix)
{
    double sum = -1;
    for (uint32_t t = 0; t < p1->nthreads; t++) {
        if (strncmp(p1->thread_name[t], prefix, strlen(prefix)) != 0)
            continue;
        double before = 0;
        for (uint32_t k = 0; k < p0->nthreads; k++)
            if (p0->tid[k] == p1->tid[t])
                before = p0->thread_cpu[k];
        sum = (sum < 0 ? 0 : sum) + p1->thread_cpu[t] - before;
    }
    return sum;
}

/* write_bytes of /proc/PID/io (0 if unreadable) */
static uint64_t io_write_bytes(pid_t pid)
{
    char path[64], line[256];
    snprintf(path, sizeof(path), "/proc/%d/io", (int)pid);
    FILE *f = fopen(path, "r");
    unsigned long long v = 0;
    while (f != NULL && fgets(line, sizeof(line), f) != NULL)
        if (sscanf(line, "write_bytes: %llu", &v) == 1)
            break;
    if (f)
        fclose(f);
    return v;
}

/* profstore's writer metrics: its transactions (commits, each with its fsync) and their mean
 * duration, over the run (a and b: /metrics before and after) */
static void writer_figures(const ps_buf_t *a, const ps_buf_t *b, uint64_t requests)
{
    static const char *const names[] = {"profstore_writer_batches_total",
                                        "profstore_writer_transaction_duration_seconds_sum",
                                        "profstore_writer_transaction_duration_seconds_count"};
    double d[3];
    for (int i = 0; i < 3; i++)
        d[i] = ps_bench_metric((const char *)b->data, b->len, names[i]) -
               ps_bench_metric((const char *)a->data, a->len, names[i]);
    if (d[2] <= 0)
        return;
    printf("  writer                 %.0f transactions (%.2f requests each), %.2f ms each on average "
           "(commit and fsync included)\n", d[2], (double)requests / d[2], d[1] / d[2] * 1e3);
}

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
    uint64_t io0 = io_write_bytes(srv->pid);
    double w0 = ps_bench_now();
    for (size_t i = 0; i < nbodies; i++)
        ps_bench_pusher_post(p, bodies[i].shard, url, bodies[i].data, bodies[i].len);
    ps_bench_pusher_drain(p);
    r->wall = ps_bench_now() - w0;
    ps_bench_proc_read(srv->pid, &pr1);
    r->write_bytes = io_write_bytes(srv->pid) - io0;
    r->cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
    r->hwm_mib = (double)pr1.vm_hwm_kb / 1024;
    r->writer_cpu = threads_cpu(&pr0, &pr1, "writer");
    r->decode_cpu = threads_cpu(&pr0, &pr1, "decode-");
    r->http_cpu = threads_cpu(&pr0, &pr1, "http-");
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
    if (r->writer_cpu >= 0)
        printf("  by thread              writer %.2f us/sample (%.0f%% of one CPU), decode threads %.2f, http "
               "threads %.2f\n",
               r->writer_cpu / (double)total_samples * 1e6, r->writer_cpu / r->wall * 100,
               r->decode_cpu / (double)total_samples * 1e6, r->http_cpu / (double)total_samples * 1e6);
    printf("  latency                p50 %.2f ms, p99 %.2f ms\n", r->p50 * 1e3, r->p99 * 1e3);
    printf("  server peak RSS        %.1f MiB\n", r->hwm_mib);
    printf("  page cache dirtied     %.1f MB = %.1f bytes/sample (/proc/PID/io write_bytes: whole pages, or whole "
           "large folios on newer kernels, not the bytes written)\n",
           (double)r->write_bytes / 1e6, (double)r->write_bytes / (double)total_samples);
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

static uint64_t db_pages(MDB_txn *txn, const char *name, uint64_t *entries)
{
    MDB_dbi dbi;
    MDB_stat ms;
    if (mdb_dbi_open(txn, name, 0, &dbi) != 0 || mdb_stat(txn, dbi, &ms) != 0)
        return 0;
    if (entries)
        *entries = ms.ms_entries;
    return ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
}

/* Where data.mdb's pages go: the float chunks, the open heads, the label index, the free list. */
static void lmdb_breakdown(const char *dir, double n, uint64_t chunk_bytes)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_envinfo ei;
    MDB_stat es;
    if (mdb_env_create(&env) != 0)
        return;
    mdb_env_set_maxdbs(env, 64);
    if (mdb_env_open(env, dir, MDB_RDONLY, 0644) != 0 || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) != 0) {
        mdb_env_close(env);
        return;
    }
    mdb_env_info(env, &ei);
    mdb_env_stat(env, &es);
    double ps = es.ms_psize;
    uint64_t nchunks = 0, nheads = 0, fc = db_pages(txn, "fchunks", &nchunks), fh = db_pages(txn, "fhead", &nheads) + db_pages(txn, "fprefix", NULL);
    uint64_t idx = db_pages(txn, "series", NULL) + db_pages(txn, "series_hash", NULL) + db_pages(txn, "postings", NULL);
    uint64_t freepg = 0, freedb = 0;
    MDB_stat fs;
    if (mdb_stat(txn, 0, &fs) == 0) { /* FREE_DBI: txnid -> the pages it freed, a count first */
        freedb = fs.ms_branch_pages + fs.ms_leaf_pages + fs.ms_overflow_pages;
        MDB_cursor *cur;
        MDB_val k, v;
        if (mdb_cursor_open(txn, 0, &cur) == 0) {
            while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
                freepg += *(size_t *)v.mv_data;
            mdb_cursor_close(cur);
        }
    }
    /* the stored values of fchunks (the encoding byte and packed entries' bounds included), by
     * encoding: 02 XOR, 03 packed XOR, 06 dense, 07 packed dense (docs/FORMAT.md) */
    uint64_t stored = 0, byenc[8] = {0};
    MDB_dbi fdbi;
    MDB_cursor *fcur;
    if (mdb_dbi_open(txn, "fchunks", 0, &fdbi) == 0 && mdb_cursor_open(txn, fdbi, &fcur) == 0) {
        MDB_val k, v;
        while (mdb_cursor_get(fcur, &k, &v, MDB_NEXT) == 0) {
            stored += v.mv_size;
            if (v.mv_size > 0 && ((const uint8_t *)v.mv_data)[0] < 8)
                byenc[((const uint8_t *)v.mv_data)[0]]++;
        }
        mdb_cursor_close(fcur);
    }
    printf("  stored chunk bytes     %.1f MB = %.3f bytes/sample   (target <= 1.5; fchunks values: %llu dense, %llu packed "
           "dense, %llu XOR, %llu packed XOR)\n",
           (double)stored / 1e6, (double)stored / n, (unsigned long long)byenc[6], (unsigned long long)byenc[7],
           (unsigned long long)byenc[2], (unsigned long long)byenc[3]);
    chunk_bytes = stored;
    uint64_t last = ei.me_last_pgno + 1;
    printf("  where the pages go     fchunks %llu pages (%.3f B/sample; %llu records, chunk bytes fill %.0f%%), "
           "fhead + fprefix %llu (%.3f), label index %llu (%.3f: series, series_hash, postings), free list %llu + %llu free "
           "(%.3f), %llu pages in the file\n",
           (unsigned long long)fc, fc * ps / n, (unsigned long long)nchunks,
           fc ? 100.0 * (double)chunk_bytes / (fc * ps) : 0.0, (unsigned long long)fh, fh * ps / n,
           (unsigned long long)idx, idx * ps / n, (unsigned long long)freedb, (unsigned long long)freepg,
           (freedb + freepg) * ps / n, (unsigned long long)last);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

/* st_size of a file (0 if missing) */
static uint64_t file_size(const char *path)
{
    uint64_t blocks, size;
    ps_bench_file_usage(path, &blocks, &size);
    return size;
}

/* Prometheus' TSDB for the same samples after a compaction: promtool tsdb create-blocks-from
 * openmetrics writes them as blocks (what the head becomes once it is compacted); the bytes of
 * the blocks' chunks/ and index. (The receiver above keeps everything in its WAL and head: a head
 * is compacted only once it spans 3 h.) */
static void prometheus_blocks(const char *promtool, const char *om, const char *out, double n, uint64_t our_chunks)
{
    char cmd[13000];
    snprintf(cmd, sizeof(cmd), "%s tsdb create-blocks-from openmetrics %s %s >/dev/null 2>&1", promtool, om, out);
    double w0 = ps_bench_now();
    int rc = system(cmd);
    double w = ps_bench_now() - w0;
    if (rc != 0) {
        printf("  (promtool failed: %d)\n", rc);
        return;
    }
    uint64_t chunks = 0, index = 0, blocks = 0;
    DIR *d = opendir(out);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[12000];
        snprintf(p, sizeof(p), "%s/%s/index", out, e->d_name);
        index += file_size(p);
        blocks++;
        snprintf(p, sizeof(p), "%s/%s/chunks", out, e->d_name);
        DIR *cd = opendir(p);
        struct dirent *ce;
        while (cd != NULL && (ce = readdir(cd)) != NULL) {
            if (ce->d_name[0] == '.')
                continue;
            char q[12300];
            snprintf(q, sizeof(q), "%s/%s", p, ce->d_name);
            chunks += file_size(q);
        }
        if (cd)
            closedir(cd);
    }
    if (d)
        closedir(d);
    printf("\n== Prometheus 2.42 TSDB, the same samples compacted (promtool tsdb create-blocks-from openmetrics, "
           "%.1f s) ==\n", w);
    printf("  %llu block(s): chunks %.1f MB = %.3f bytes/sample (ours %.3f), index %.1f MB = %.3f, "
           "chunks + index %.3f bytes/sample\n",
           (unsigned long long)blocks, (double)chunks / 1e6, (double)chunks / n, (double)our_chunks / n,
           (double)index / 1e6, (double)index / n, (double)(chunks + index) / n);
}

/* After the server stopped: the XOR chunk bytes, from the store itself. */
static uint64_t disk_chunk_bytes;

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
        printf("  XOR chunk bytes        %.1f MB = %.3f bytes/sample   (as remote_read streams them; Gorilla 1.37, "
               "Prometheus docs 1-2)\n",
               (double)c.chunk_bytes / 1e6, (double)c.chunk_bytes / n);
        printf("  LMDB pages in use      %.1f MB = %.3f bytes/sample (chunks, series, postings, free pages)\n",
               (double)st.used_bytes / 1e6, (double)st.used_bytes / n);
        printf("  data.mdb on disk       %.1f MB = %.3f bytes/sample\n", (double)st.file_bytes / 1e6,
               (double)st.file_bytes / n);
    }
    ps_store_close(s);
    disk_chunk_bytes = c.chunk_bytes;
    lmdb_breakdown(dir, (double)c.samples, c.chunk_bytes);
}

/* The disk's sync time in dir: 4 KiB written and fdatasync'ed, the mean of n (ms; -1 on failure).
 * profstore answers a write once durable: a request into an idle writer waits for two syncs
 * (the commit's pages, then its meta page), and Prometheus answers before any. */
static double fsync_ms(const char *dir, int n)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/fsync.probe", dir);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return -1;
    uint8_t page[4096];
    memset(page, 0x5a, sizeof(page));
    double w0 = ps_bench_now();
    int ok = 1;
    for (int i = 0; i < n && ok; i++)
        ok = pwrite(fd, page, sizeof(page), (off_t)(i % 16) * 4096) == (ssize_t)sizeof(page) && fdatasync(fd) == 0;
    double ms = (ps_bench_now() - w0) / n * 1e3;
    close(fd);
    unlink(path);
    return ok ? ms : -1;
}

/* A Prometheus (bin) as a remote-write receiver in base/sub, sent every body: r filled. */
static void run_receiver(const opts_t *o, const char *bin, const char *base, const char *sub, result_t *r)
{
    char cfg[4200], pdir[4200], plog[4200], cfgarg[4300], darg[4300];
    snprintf(cfg, sizeof(cfg), "%s/%s.yml", base, sub);
    snprintf(pdir, sizeof(pdir), "%s/%s", base, sub);
    snprintf(plog, sizeof(plog), "%s/%s.log", base, sub);
    FILE *f = fopen(cfg, "w");
    if (f != NULL) {
        fputs("global:\n  scrape_interval: 15s\nscrape_configs: []\n", f);
        fclose(f);
    }
    snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
    snprintf(darg, sizeof(darg), "--storage.tsdb.path=%s", pdir);
    const char *args[] = {bin, cfgarg, darg, "--web.listen-address=127.0.0.1:{port}", "--web.enable-remote-write-receiver",
                          NULL};
    ps_bench_server_t prom;
    if (ps_bench_exec_start(&prom, args, plog, "/-/ready") == 0) {
        send_all(o, &prom, "/api/v1/write", r);
        print_result(r);
        ps_bench_server_stop(&prom);
    } else {
        print_result(r);
    }
}

/* the flags as the table parses them; main puts them into opts_t */
typedef struct flagv {
    const char *profstore, *prometheus, *prometheus3, *values;
    uint64_t series, rounds, per_request, conns;
    bool no_prometheus, no_prometheus3, keep, shapes;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)
static const char *const value_mixes[] = {"node", "cpu", NULL};

/* clang-format off */
static const ps_flag_t flags[] = {
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "10000", .min = 1,
     .max = UINT32_MAX, .help = "node_exporter-like series (default 10000)"},
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = FV(rounds), .metavar = "N", .def = "120", .min = 1,
     .max = UINT32_MAX, .help = "scrapes of every series, 15 s apart (default 120: one full chunk)"},
    {.name = "per-request", .type = PS_FLAG_UINT, .offset = FV(per_request), .metavar = "N", .def = "2000",
     .min = 1, .max = UINT32_MAX, .help = "samples per request (default 2000)"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "4", .min = 1,
     .max = UINT32_MAX, .help = "requests in flight (default 4)"},
    {.name = "prometheus", .type = PS_FLAG_STRING, .offset = FV(prometheus), .metavar = "PATH",
     .def = "/usr/bin/prometheus", .help = "Prometheus 2.42 binary (default /usr/bin/prometheus)"},
    {.name = "no-prometheus", .type = PS_FLAG_BOOL, .offset = FV(no_prometheus), .help = "without Prometheus 2.42"},
    {.name = "prometheus3", .type = PS_FLAG_STRING, .offset = FV(prometheus3), .metavar = "BIN",
     .help = "Prometheus 3 binary (default the peers cache's,\n~/.cache/profstore-peers/prometheus-3.16.0/bin/prometheus)"},
    {.name = "no-prometheus3", .type = PS_FLAG_BOOL, .offset = FV(no_prometheus3), .help = "without Prometheus 3"},
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "keep", .type = PS_FLAG_BOOL, .offset = FV(keep), .help = "keep the data directories"},
    {.name = "values", .type = PS_FLAG_ENUM, .offset = FV(values), .metavar = "node|cpu", .def = "node",
     .choices = value_mixes,
     .help = "node: a 4-CPU host's node_exporter mix; cpu: the first generator's\n"
             "mix (default node)"},
    {.name = "shapes", .type = PS_FLAG_BOOL, .offset = FV(shapes),
     .help = "then the request shapes of real senders, each a run of its own: Prometheus 2.42's\n"
             "default max_samples_per_send (500; 2.44 and 3.x send 2000, this run's default) over\n"
             "--series; 1, 4 and 10 series of one sender (one request a scrape, one in flight)\n"
             "for 2000 rounds; 4 senders of 1 and of 10 series each (4 in flight) for 1000"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_remote_write", "usage: bench_remote_write [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

/* --shapes: this program again for each request shape of a real sender (same binaries, same
 * value mix). Prometheus' queue manager sends a shard's samples in requests of up to
 * max_samples_per_send (500 in 2.42; 2,000 from 2.44 on and in 3.x, this program's default),
 * one request in flight per shard, and adds shards (min 1, max 200 in 2.42, 50 in 3.x) when it
 * falls behind. The shapes: 500 a request over o's series; a small target set (1, 4, 10 series)
 * whose every scrape is one request of its one shard; and 4 such senders at once (4 series of 1
 * sender each, 40 of 10), one request of each in flight. */
static void run_shapes(const char *self, const opts_t *o, const char *values)
{
    static const struct {
        uint32_t series, per_request, rounds, conns;
    } shapes[] = {{0, 500, 0, 0},     {1, 1, 2000, 1},   {4, 4, 2000, 1},
                  {10, 10, 2000, 1}, {4, 1, 1000, 4},   {40, 10, 1000, 4}};
    for (size_t k = 0; k < sizeof(shapes) / sizeof(shapes[0]); k++) {
        uint32_t series = shapes[k].series ? shapes[k].series : o->series;
        uint32_t rounds = shapes[k].rounds ? shapes[k].rounds : o->rounds;
        uint32_t conns = shapes[k].conns ? shapes[k].conns : o->conns;
        char cmd[16384];
        int n = snprintf(cmd, sizeof(cmd), "'%s' --series %u --per-request %u --rounds %u --conns %u --values %s "
                         "--profstore '%s'", self, series, shapes[k].per_request, rounds, conns, values,
                         o->profstore);
        if (o->prometheus != NULL)
            n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " --prometheus '%s'", o->prometheus);
        else
            n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " --no-prometheus");
        if (o->prometheus3 != NULL)
            n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " --prometheus3 '%s'", o->prometheus3);
        else
            n += snprintf(cmd + n, sizeof(cmd) - (size_t)n, " --no-prometheus3");
        printf("\n== shape: %u series, %u samples a request, %u in flight, %u rounds ==\n", series,
               shapes[k].per_request, conns, rounds);
        fflush(stdout);
        if (system(cmd) != 0)
            printf("  (the run failed: %s)\n", cmd);
        fflush(stdout);
    }
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    flagv_t f = {0};
    ps_bench_flags(&flagset, argc, argv, &f);
    ps_bench_profstore_path(o.profstore, sizeof(o.profstore), f.profstore);
    o.prometheus = f.no_prometheus ? NULL : f.prometheus;
    char p3[4200];
    ps_bench_prometheus3_default(p3, sizeof(p3));
    o.prometheus3 = f.no_prometheus3 ? NULL : f.prometheus3 != NULL ? f.prometheus3 : p3;
    o.series = (uint32_t)f.series;
    o.rounds = (uint32_t)f.rounds;
    o.per_request = (uint32_t)f.per_request;
    o.conns = (uint32_t)f.conns;
    o.keep = f.keep;
    o.values = (ps_bench_rw_values_t)ps_bench_rw_values_parse(f.values);
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* the newest round 1 minute ago; Prometheus' head takes anything for an empty TSDB */
    int64_t t0 = ((int64_t)time(NULL) - 60 - (int64_t)o.rounds * 15) * 1000;
    char base[] = "/tmp/profstore-bench-rw-XXXXXX";
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    const char *promtool = "/usr/bin/promtool";
    char om_path[4200];
    snprintf(om_path, sizeof(om_path), "%s/samples.om", base);
    FILE *om = o.prometheus != NULL && access(promtool, X_OK) == 0 ? fopen(om_path, "w") : NULL;
    if (generate(&o, t0, om) != 0)
        return 1;
    if (om)
        fclose(om);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_remote_write: --values %s: %u series x %u rounds (15 s apart) = %llu samples in %zu requests of <= %u samples "
           "(%.1f MB of snappy bodies, %.1f bytes/sample on the wire), %u in flight; %ld CPUs shared by the "
           "servers and this generator; data in %s\n",
           ps_bench_rw_values_name(o.values), o.series, o.rounds, (unsigned long long)total_samples, nbodies,
           o.per_request, (double)total_bytes / 1e6,
           (double)total_bytes / (double)total_samples, o.conns, ncpu, base);
    double fs = fsync_ms(base, 100);
    printf("fsync on this disk: %.2f ms (pwrite 4 KiB + fdatasync, the mean of 100); profstore answers once a "
           "write is durable, two syncs after a request into an idle writer: one request in flight is bounded by "
           "about %.0f requests/s; Prometheus answers before any sync\n", fs, fs > 0 ? 1e3 / (2 * fs) : 0.0);
    fflush(stdout);

    result_t rp = {"profstore", 0}, rq = {"Prometheus 2.42 --web.enable-remote-write-receiver", 0},
             r3 = {"Prometheus 3 --web.enable-remote-write-receiver", 0};
    char dir[4200], log[4200];
    snprintf(dir, sizeof(dir), "%s/profstore", base);
    snprintf(log, sizeof(log), "%s/profstore.log", base);
    static const char *const pargs[] = {"--retention", "0", NULL};
    ps_bench_server_t srv;
    if (ps_bench_server_start(&srv, o.profstore, dir, log, pargs) == 0) {
        char mu[128];
        snprintf(mu, sizeof(mu), "%s/metrics", srv.url);
        ps_buf_t m0 = PS_BUF_INIT, m1 = PS_BUF_INIT;
        ps_bench_http("GET", mu, NULL, 0, &m0);
        send_all(&o, &srv, "/api/v1/write", &rp);
        ps_bench_http("GET", mu, NULL, 0, &m1);
        char u[128];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
        ps_bench_proc_t c0, c1;
        ps_bench_proc_read(srv.pid, &c0);
        double w0 = ps_bench_now();
        long code = ps_bench_http("POST", u, "", 0, NULL);
        double cw = ps_bench_now() - w0;
        ps_bench_proc_read(srv.pid, &c1);
        print_result(&rp);
        writer_figures(&m0, &m1, rp.ok_requests);
        ps_buf_dispose(&m0);
        ps_buf_dispose(&m1);
        printf("  POST /admin/compact    HTTP %ld, %.3f s wall, %.3f s server CPU\n", code, cw,
               (c1.cpu_user + c1.cpu_sys) - (c0.cpu_user + c0.cpu_sys));
        ps_bench_server_stop(&srv);
        disk_figures(dir);
    } else {
        print_result(&rp);
    }
    fflush(stdout);

    if (o.prometheus3 != NULL && access(o.prometheus3, X_OK) == 0)
        run_receiver(&o, o.prometheus3, base, "prometheus3", &r3);
    else
        printf("\n(Prometheus 3 not run: %s)\n", o.prometheus3 ? "not built (scripts/install-prometheus3.sh)" : "--no-prometheus3");
    fflush(stdout);
    if (o.prometheus != NULL && access(o.prometheus, X_OK) == 0) {
        run_receiver(&o, o.prometheus, base, "prometheus", &rq);
        if (om) {
            char blocks[4200];
            snprintf(blocks, sizeof(blocks), "%s/promtool-blocks", base);
            prometheus_blocks(promtool, om_path, blocks, (double)total_samples, disk_chunk_bytes);
            unlink(om_path);
        }
    } else {
        printf("\n(Prometheus not run: %s)\n", o.prometheus ? "not executable" : "--no-prometheus");
    }
    const result_t *peers[] = {&r3, &rq};
    for (int k = 0; k < 2; k++) {
        const result_t *r = peers[k];
        if (!rp.ok || !r->ok)
            continue;
        printf("\n== profstore / %s ==\n", k == 0 ? "Prometheus 3" : "Prometheus 2.42");
        printf("  samples/s              %.0f vs %.0f: %.2fx   (target >= 1.5x: %s)\n", total_samples / rp.wall,
               total_samples / r->wall, r->wall / rp.wall, r->wall / rp.wall >= 1.5 ? "met" : "NOT met");
        printf("  server CPU per sample  %.2f us vs %.2f us: %.2fx\n", rp.cpu / total_samples * 1e6,
               r->cpu / total_samples * 1e6, rp.cpu / r->cpu);
    }
    if (!o.keep)
        ps_bench_rmrf(base);
    else
        printf("\n  data kept in %s\n", base);
    for (size_t i = 0; i < nbodies; i++)
        free(bodies[i].data);
    free(bodies);
    if (f.shapes)
        run_shapes(argv[0], &o, ps_bench_rw_values_name(o.values));
    curl_global_cleanup();
    return 0;
}
