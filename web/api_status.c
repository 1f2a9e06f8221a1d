/*
 * api_status.c - health, readiness, build info, status (config, flags, runtime info), self-metrics,
 * admin actions, targets, reload.
 */
#include <dirent.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connguard.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "proto/gzip.h"
#include "http.h"
#include "internal.h"
#include "qpool.h"
#include "forward/forward.h"
#include "scrape/scrape.h"
#include "ingest/ingest.h"

int ps_api_healthy(h2o_req_t *req)
{
    static const char body[] = "Profstore is Healthy.\n";
    ps_http_send(req, 200, "text/plain; charset=utf-8", body, sizeof(body) - 1);
    return 0;
}

int ps_api_ready(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    if (atomic_load(&s->stopping)) {
        static const char body[] = "Service Unavailable: shutting down.\n";
        ps_http_send(req, 503, "text/plain; charset=utf-8", body, sizeof(body) - 1);
    } else {
        static const char body[] = "Profstore is Ready.\n";
        ps_http_send(req, 200, "text/plain; charset=utf-8", body, sizeof(body) - 1);
    }
    return 0;
}

/* Prometheus' shape (web/api/v1 PrometheusVersion) and nothing more. No "features": Grafana's
 * Prometheus data source takes non-empty features for Mimir and then expects Mimir's ruler
 * configuration API (pkg/promlib/heuristics.go; the alerting UI reads features.ruler_config_api),
 * which profstore does not have; without them it treats us as the Prometheus we emulate. */
int ps_api_buildinfo(h2o_req_t *req)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_obj(&j);
    static const char *const fields[][2] = {{"version", PS_VERSION},       {"revision", PS_REVISION},
                                            {"branch", PS_BRANCH},         {"buildUser", PS_BUILD_USER},
                                            {"buildDate", PS_BUILD_DATE}, {"goVersion", PS_COMPILER}};
    for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
        ps_json_key(&j, fields[i][0]);
        ps_json_cstr(&j, fields[i][1]);
    }
    ps_json_end(&j);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

/* ---- /api/v1/status/{config,flags,runtimeinfo}: what Prometheus 2.42 answers, with our values ---- */

typedef struct ps_server_status {
    char *yaml; /* the configuration as last loaded ("" without --config) */
    size_t len;
    bool ok;             /* the last load (or reload) succeeded */
    int64_t loaded_at;   /* ns: the last successful load */
} status_t;

static pthread_mutex_t status_mu = PTHREAD_MUTEX_INITIALIZER;

void ps_server_config_loaded(ps_server_t *s, bool ok, const char *yaml, size_t len, int64_t when_ns)
{
    pthread_mutex_lock(&status_mu);
    if (s->status == NULL)
        s->status = ps_xcalloc(1, sizeof(status_t));
    status_t *st = s->status;
    st->ok = ok;
    if (ok) {
        free(st->yaml);
        st->yaml = ps_xmalloc(len + 1);
        memcpy(st->yaml, yaml, len);
        st->yaml[len] = 0;
        st->len = len;
        st->loaded_at = when_ns;
    }
    pthread_mutex_unlock(&status_mu);
}

int ps_api_status_config(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_obj(&j);
    ps_json_key(&j, "yaml");
    pthread_mutex_lock(&status_mu);
    if (s->status != NULL)
        ps_json_str(&j, s->status->yaml, s->status->len);
    else
        ps_json_cstr(&j, "");
    pthread_mutex_unlock(&status_mu);
    ps_json_end(&j);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

int ps_api_status_flags(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_obj(&j);
    for (uint32_t i = 0; i < s->nflags; i++) {
        ps_json_key(&j, s->flags[i].name);
        ps_json_cstr(&j, s->flags[i].value);
    }
    ps_json_end(&j);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

/* GET /api/v1/status/forward: every forwarding endpoint's counters, cursor, pending entries, lag
 * and last error (src/forward), in Prometheus' envelope */
int ps_api_status_forward(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_buf_t b = PS_BUF_INIT, arr = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    if (s->forward != NULL)
        ps_forward_status_json(s->forward, &arr);
    else
        PS_BUF_LIT(&arr, "[]");
    ps_json_raw(&j, (const char *)arr.data, arr.len);
    ps_buf_dispose(&arr);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

/* threads of this process (Prometheus' goroutineCount is its count of concurrent activities) */
static long thread_count(void)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[128];
    long n = 0;
    if (f == NULL)
        return 0;
    while (fgets(line, sizeof(line), f))
        if (sscanf(line, "Threads: %ld", &n) == 1)
            break;
    fclose(f);
    return n;
}

int ps_api_status_runtimeinfo(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    char t[64], cwd[4096];
    bool ok = true;
    int64_t loaded = s->start_time;
    pthread_mutex_lock(&status_mu);
    if (s->status != NULL) {
        ok = s->status->ok;
        loaded = s->status->loaded_at;
    }
    pthread_mutex_unlock(&status_mu);
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_obj(&j);
    ps_json_key(&j, "startTime");
    ps_format_time_go(s->start_time, t, sizeof(t));
    ps_json_cstr(&j, t);
    ps_json_key(&j, "CWD");
    ps_json_cstr(&j, getcwd(cwd, sizeof(cwd)) ? cwd : "");
    ps_json_key(&j, "reloadConfigSuccess");
    ps_json_bool(&j, ok);
    ps_json_key(&j, "lastConfigTime"); /* whole seconds, as Prometheus (from a gauge of seconds) */
    ps_format_time(loaded - loaded % PS_NS_PER_S, t, sizeof(t));
    ps_json_cstr(&j, t);
    ps_json_key(&j, "corruptionCount"); /* placeholder: LMDB has no WAL to repair */
    ps_json_int(&j, 0);
    ps_json_key(&j, "goroutineCount");
    ps_json_int(&j, thread_count());
    ps_json_key(&j, "GOMAXPROCS");
    ps_json_uint(&j, s->opts.threads);
    ps_json_key(&j, "GOGC"); /* placeholders: no Go runtime */
    ps_json_cstr(&j, "");
    ps_json_key(&j, "GODEBUG");
    ps_json_cstr(&j, "");
    ps_json_key(&j, "storageRetention");
    ps_format_duration(s->opts.retention_ns, t, sizeof(t));
    ps_json_cstr(&j, t);
    ps_json_end(&j);
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}

/* ---- /metrics: each room writes its own families (web/http.c, connguard.c, api_read.c, ingest_job.c,
 * api_write.c, qpool.c, forward/, scrape/); the writer's, the store's and the process's are here ---- */

static const char *const by_reason[] = {"reason", NULL};
static const ps_metric_t m_batches = {"profstore_writer_batches_total", PS_COUNTER, "Write transactions committed."},
                         m_txn = {"profstore_writer_transaction_duration_seconds", PS_HISTOGRAM,
                                  "Write transactions by duration: building, commit and the fsync of their pages."},
                         m_appends_failed = {"profstore_writer_appends_failed_total", PS_COUNTER,
                                             "Profiles the writer refused."},
                         m_decode_waits = {"profstore_writer_decode_waits_total", PS_COUNTER,
                                           "Write transactions that waited (at most 2 ms) for writes still being "
                                           "decoded, to take them too."},
                         m_duplicates = {"profstore_writer_duplicates_total", PS_COUNTER,
                                         "Identical re-pushes acknowledged without writing."},
                         m_compactor_chunks = {"profstore_compactor_chunks_total", PS_COUNTER,
                                               "Chunks written by the compactor."},
                         m_retention_dropped = {"profstore_retention_series_dropped_total", PS_COUNTER,
                                                "Series removed by retention."},
                         m_writer_queue = {"profstore_writer_queue_length", PS_GAUGE, "Profiles waiting for the writer."},
                         m_queue_items = {"profstore_write_queue_items", PS_GAUGE,
                                          "Write requests waiting for the writer (--storage.write-queue-max-items)."},
                         m_queue_bytes = {"profstore_write_queue_bytes", PS_GAUGE,
                                          "Bytes held by the write requests waiting for the writer "
                                          "(--storage.write-queue-max-bytes)."},
                         m_disk_full = {"profstore_storage_disk_full", PS_GAUGE,
                                        "1 while writes fail for want of space (the disk, or --storage.max-size): "
                                        "answered 507."},
                         m_refused = {"profstore_writes_refused_total", PS_COUNTER,
                                      "Write requests refused for want of capacity: a full write queue (429, 503 to "
                                      "remote write), the decompression budget (503), a full disk (507).",
                                      by_reason};

static const ps_metric_t m_series = {"profstore_storage_series", PS_GAUGE, "Series stored."},
                         m_head_records = {"profstore_storage_head_records", PS_GAUGE,
                                           "Profiles in head records (not yet compacted)."},
                         m_chunks = {"profstore_storage_chunks", PS_GAUGE, "Chunks stored."},
                         m_nodes = {"profstore_storage_stack_nodes", PS_GAUGE, "Nodes of the shared stack tree."},
                         m_float_heads = {"profstore_storage_float_heads", PS_GAUGE, "Float series with an open chunk."},
                         m_float_chunks = {"profstore_storage_float_chunks", PS_GAUGE,
                                           "Closed float (XOR) chunks stored."},
                         m_metadata = {"profstore_storage_metric_metadata", PS_GAUGE,
                                       "Metric families with stored metadata."},
                         m_file_bytes = {"profstore_storage_file_bytes", PS_GAUGE, "Size on disk of the LMDB data file."},
                         m_used_bytes = {"profstore_storage_used_bytes", PS_GAUGE, "Bytes of LMDB pages in use."};

static const ps_metric_t m_start_time = {"profstore_start_time_seconds", PS_GAUGE, "Start time of the process."};

/* the process collector of Prometheus' client_golang: its names and help */
static const ps_metric_t m_cpu = {"process_cpu_seconds_total", PS_COUNTER,
                                  "Total user and system CPU time spent in seconds."},
                         m_rss = {"process_resident_memory_bytes", PS_GAUGE, "Resident memory size in bytes."},
                         m_vsize = {"process_virtual_memory_bytes", PS_GAUGE, "Virtual memory size in bytes."},
                         m_proc_start = {"process_start_time_seconds", PS_GAUGE,
                                         "Start time of the process since unix epoch in seconds."},
                         m_open_fds = {"process_open_fds", PS_GAUGE, "Number of open file descriptors."},
                         m_max_fds = {"process_max_fds", PS_GAUGE, "Maximum number of open file descriptors."};

/* The writer's figures; its transaction histogram has its own bounds (ps_writer_txn_le). */
static void writer_metrics(ps_buf_t *b, const ps_writer_stats_t *ws)
{
    ps_metric_write_u64(b, &m_batches, ws->batches);
    /* only written here, never observed: the bounds in ns are the writer's own */
    static const ps_histogram_buckets_t txn_buckets = {PS_WRITER_TXN_BUCKETS, NULL, ps_writer_txn_le};
    ps_histogram_t h;
    for (unsigned k = 0; k <= PS_WRITER_TXN_BUCKETS; k++)
        atomic_init(&h.counts[k], ws->txn_buckets[k]);
    atomic_init(&h.sum_ns, ws->txn_sum_ns);
    ps_metric_head(b, &m_txn);
    ps_metric_histogram(b, &m_txn, NULL, &h, &txn_buckets);
    ps_metric_write_u64(b, &m_decode_waits, ws->decode_waits);
    ps_metric_write_u64(b, &m_appends_failed, ws->failed);
    ps_metric_write_u64(b, &m_duplicates, ws->duplicates);
    ps_metric_write_u64(b, &m_compactor_chunks, ws->chunks);
    ps_metric_write_u64(b, &m_retention_dropped, ws->series_dropped);
    ps_metric_write_u64(b, &m_writer_queue, ws->queued);
    ps_metric_write_u64(b, &m_queue_items, ws->queued);
    ps_metric_write_u64(b, &m_queue_bytes, ws->queued_bytes);
    ps_metric_write_u64(b, &m_disk_full, ws->disk_full);
    ps_metric_head(b, &m_refused);
    ps_metric_u64(b, &m_refused, NULL, (const char *const[]){"queue_full"}, ws->refused_queue_full);
    ps_metric_u64(b, &m_refused, NULL, (const char *const[]){"inflate_budget"}, ps_inflate_budget_refused());
    ps_metric_u64(b, &m_refused, NULL, (const char *const[]){"disk_full"}, ws->refused_disk_full);
}

static void store_metrics(ps_buf_t *b, const ps_store_stats_t *st)
{
    ps_metric_write_u64(b, &m_series, st->series);
    ps_metric_write_u64(b, &m_head_records, st->head_records);
    ps_metric_write_u64(b, &m_chunks, st->chunks);
    ps_metric_write_u64(b, &m_nodes, st->nodes);
    ps_metric_write_u64(b, &m_float_heads, st->float_heads);
    ps_metric_write_u64(b, &m_float_chunks, st->float_chunks);
    ps_metric_write_u64(b, &m_metadata, st->metadata);
    ps_metric_write_u64(b, &m_file_bytes, st->file_bytes);
    ps_metric_write_u64(b, &m_used_bytes, st->used_bytes);
}

/* The process collector, from /proc: CPU time, memory, file descriptors (not counting the one
 * that lists them), start time. Nothing is written for what cannot be read. */
static void process_metrics(ps_buf_t *b)
{
    double ticks = (double)sysconf(_SC_CLK_TCK);
    long page = sysconf(_SC_PAGESIZE);
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    size_t n = f ? fread(buf, 1, sizeof(buf) - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    char *rp = strrchr(buf, ')'); /* the command name may contain spaces and parentheses */
    unsigned long long utime, stime, start, vsize;
    long long rss;
    /* fields 3.. after ")": state ppid pgrp session tty tpgid flags minflt cminflt majflt cmajflt
     * utime(14) stime cutime cstime priority nice threads itrealvalue starttime(22) vsize rss */
    if (rp && sscanf(rp + 1, " %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu %*d %*d %*d %*d %*d %*d %llu %llu %lld",
                     &utime, &stime, &start, &vsize, &rss) == 5) {
        ps_metric_write_f(b, &m_cpu, (double)(utime + stime) / ticks, 2);
        ps_metric_write_u64(b, &m_rss, rss > 0 ? (uint64_t)rss * (uint64_t)page : 0);
        ps_metric_write_u64(b, &m_vsize, vsize);
        unsigned long long btime = 0;
        char line[256];
        bool have_btime = false;
        if ((f = fopen("/proc/stat", "r")) != NULL) {
            while (!have_btime && fgets(line, sizeof(line), f))
                have_btime = sscanf(line, "btime %llu", &btime) == 1;
            fclose(f);
        }
        if (have_btime)
            ps_metric_write_f(b, &m_proc_start, (double)btime + (double)start / ticks, 2);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        uint64_t fds = 0;
        struct dirent *e;
        int self = dirfd(d);
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' && atoi(e->d_name) != self)
                fds++;
        closedir(d);
        ps_metric_write_u64(b, &m_open_fds, fds);
    }
    if ((f = fopen("/proc/self/limits", "r")) != NULL) {
        char line[256], soft[32];
        while (fgets(line, sizeof(line), f))
            if (strncmp(line, "Max open files", 14) == 0 && sscanf(line + 14, "%31s", soft) == 1) {
                if (strcmp(soft, "unlimited") == 0)
                    ps_metric_write_f(b, &m_max_fds, INFINITY, 0);
                else
                    ps_metric_write_u64(b, &m_max_fds, strtoull(soft, NULL, 10));
                break;
            }
        fclose(f);
    }
}

int ps_api_metrics(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_buf_t b = PS_BUF_INIT;
    ps_writer_stats_t ws;
    ps_store_stats_t st;
    ps_err_t err;
    ps_writer_stats(s->writer, &ws);
    int have_st = ps_store_stats(s->store, &st, &err) == 0;
    ps_http_stats_write(s->http_stats, &b);
    ps_conns_metrics(s, &b);
    if (s->forward != NULL)
        ps_forward_metrics(s->forward, &b);
    ps_http_errors_write(s->http_stats, &b);
    ps_api_read_metrics(&b);
    ps_ingest_metrics(&b);
    ps_api_write_metrics(&b);
    ps_api_rules_metrics(s, &b);
    ps_api_debuginfo_metrics(s, &b);
    ps_qpool_metrics(s->qpool, &b);
    ps_qpool_metrics(s->dpool, &b);
    writer_metrics(&b, &ws);
    if (have_st)
        store_metrics(&b, &st);
    ps_scraper_metrics(s->scraper, &b);
    if (s->extra_metrics != NULL)
        s->extra_metrics(s->extra_metrics_ctx, &b);
    ps_metric_write_u64(&b, &m_start_time, (uint64_t)(s->start_time / PS_NS_PER_S));
    process_metrics(&b);
    ps_http_send(req, 200, "text/plain; version=0.0.4; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
    return 0;
}

/* ---- admin: compaction and retention on demand (run by the writer thread) ---- */

typedef struct admin {
    ps_async_t async;
    ps_wreq_t w;
} admin_t;

static void on_admin_complete(ps_async_t *a, h2o_req_t *req)
{
    admin_t *ad = (admin_t *)a;
    if (req != NULL) {
        if (ad->w.status != 0) {
            ps_http_error(req, ad->w.status, ad->w.err.msg);
        } else {
            ps_buf_t b = PS_BUF_INIT;
            ps_json_t j;
            ps_json_envelope(&j, &b);
            ps_json_obj(&j);
            ps_json_key(&j, ad->w.kind == PS_WREQ_COMPACT ? "chunks" : "series_dropped");
            ps_json_uint(&j, ad->w.count);
            ps_json_end(&j);
            ps_http_send_envelope(req, 200, &j, &b);
        }
    }
    free(ad);
}

static int admin(h2o_req_t *req, ps_wreq_kind_t kind)
{
    admin_t *ad = ps_xcalloc(1, sizeof(*ad));
    ad->w.kind = kind;
    if (ps_async_submit_write(&ad->async, &ad->w, req, on_admin_complete) != 0) {
        ps_http_error(req, PS_EUNAVAIL, ad->w.err.msg);
        free(ad);
    }
    return 0;
}

int ps_api_admin_compact(h2o_req_t *req) { return admin(req, PS_WREQ_COMPACT); }
int ps_api_admin_retention(h2o_req_t *req) { return admin(req, PS_WREQ_RETAIN); }

int ps_api_targets(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_arena_t a = PS_ARENA_INIT;
    ps_params_t params;
    ps_err_t err;
    if (ps_http_params(req, false, &a, &params, &err) != 0) {
        ps_http_error(req, err.code, err.msg);
        ps_arena_dispose(&a);
        return 0;
    }
    const ps_param_t *st = ps_params_get(&params, "state");
    if (st && st->vlen && strcmp(st->value, "active") && strcmp(st->value, "dropped") && strcmp(st->value, "any")) {
        ps_http_error(req, PS_EINVAL, "invalid parameter \"state\": use active, dropped or any");
        ps_arena_dispose(&a);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    /* credential-like params and labels are shown as <secret> unless an admin asks (access.c) */
    ps_scraper_targets_json(s->scraper, st ? st->value : NULL, !ps_web_is_admin(req), &b);
    ps_http_send(req, 200, "application/json", b.data, b.len);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    return 0;
}

int ps_api_reload(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    if (s->reload == NULL) {
        ps_http_error(req, PS_EINVAL, "no configuration file: start profstore with --config to reload one");
        return 0;
    }
    ps_err_t err;
    if (s->reload(s->reload_ctx, &err) != 0) { /* the running configuration stays */
        ps_http_error(req, err.code ? err.code : PS_EINVAL, err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_envelope(&j, &b);
    ps_json_cstr(&j, "configuration reloaded");
    ps_http_send_envelope(req, 200, &j, &b);
    return 0;
}
