/*
 * api_status.c - health, readiness, build info, status (config, flags, runtime info), self-metrics,
 * admin actions, targets, reload.
 */
#include <dirent.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "connguard.h"
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

/* The process collector of Prometheus' client_golang, from /proc: CPU time, memory, file
 * descriptors (not counting the one that lists them), start time. Nothing is written for what
 * cannot be read. */
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
        ps_buf_printf(b, "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
                         "# TYPE process_cpu_seconds_total counter\nprocess_cpu_seconds_total %.2f\n",
                      (double)(utime + stime) / ticks);
        ps_buf_printf(b, "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
                         "# TYPE process_resident_memory_bytes gauge\nprocess_resident_memory_bytes %lld\n",
                      rss * page);
        ps_buf_printf(b, "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
                         "# TYPE process_virtual_memory_bytes gauge\nprocess_virtual_memory_bytes %llu\n", vsize);
        unsigned long long btime = 0;
        char line[256];
        bool have_btime = false;
        if ((f = fopen("/proc/stat", "r")) != NULL) {
            while (!have_btime && fgets(line, sizeof(line), f))
                have_btime = sscanf(line, "btime %llu", &btime) == 1;
            fclose(f);
        }
        if (have_btime)
            ps_buf_printf(b, "# HELP process_start_time_seconds Start time of the process since unix epoch in seconds.\n"
                             "# TYPE process_start_time_seconds gauge\nprocess_start_time_seconds %.2f\n",
                          (double)btime + (double)start / ticks);
    }
    DIR *d = opendir("/proc/self/fd");
    if (d != NULL) {
        long fds = 0;
        struct dirent *e;
        int self = dirfd(d);
        while ((e = readdir(d)) != NULL)
            if (e->d_name[0] != '.' && atoi(e->d_name) != self)
                fds++;
        closedir(d);
        ps_buf_printf(b, "# HELP process_open_fds Number of open file descriptors.\n"
                         "# TYPE process_open_fds gauge\nprocess_open_fds %ld\n", fds);
    }
    if ((f = fopen("/proc/self/limits", "r")) != NULL) {
        char line[256], soft[32];
        while (fgets(line, sizeof(line), f))
            if (strncmp(line, "Max open files", 14) == 0 && sscanf(line + 14, "%31s", soft) == 1) {
                ps_buf_printf(b, "# HELP process_max_fds Maximum number of open file descriptors.\n"
                                 "# TYPE process_max_fds gauge\nprocess_max_fds %s\n",
                              strcmp(soft, "unlimited") == 0 ? "+Inf" : soft);
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
#define COUNTER(name, help, v)                                                                                          \
    ps_buf_printf(&b, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)(v))
#define GAUGE(name, help, v)                                                                                            \
    ps_buf_printf(&b, "# HELP %s %s\n# TYPE %s gauge\n%s %llu\n", name, help, name, name, (unsigned long long)(v))
    ps_http_stats_write(s->http_stats, &b);
    ps_conns_metrics(s, &b);
    if (s->forward != NULL)
        ps_forward_metrics(s->forward, &b);
    uint64_t e4, e5;
    ps_http_stats_errors(s->http_stats, &e4, &e5);
    ps_buf_printf(&b, "# HELP profstore_http_errors_total HTTP error responses by class.\n"
                      "# TYPE profstore_http_errors_total counter\n"
                      "profstore_http_errors_total{class=\"4xx\"} %llu\nprofstore_http_errors_total{class=\"5xx\"} %llu\n",
                  (unsigned long long)e4, (unsigned long long)e5);
    GAUGE("profstore_remote_reads_inflight", "Remote reads being answered (a streamed one until its last frame is "
          "sent or its client goes away); --storage.remote.read-concurrent-limit bounds it.",
          atomic_load(&s->reads_inflight));
    COUNTER("profstore_remote_reads_timed_out_total", "Remote reads stopped by --query.timeout (503, or a streamed "
            "answer cut off).", atomic_load(&s->reads_timed_out));
    COUNTER("profstore_remote_reads_canceled_total", "Remote reads whose client went away before the last frame.",
            atomic_load(&s->reads_canceled));
    COUNTER("profstore_ingest_profiles_total", "Profiles pushed and stored.", atomic_load(&s->ingest_profiles));
    COUNTER("profstore_ingest_bytes_total", "Bytes of pushed profiles stored (as received).", atomic_load(&s->ingest_bytes));
    COUNTER("profstore_ingest_samples_total", "pprof samples in stored profiles.", atomic_load(&s->ingest_samples));
    ps_api_write_metrics(s, &b);
    ps_qpool_metrics(s->qpool, &b);
    ps_qpool_metrics(s->dpool, &b);
    COUNTER("profstore_writer_batches_total", "Write transactions committed.", ws.batches);
    ps_buf_printf(&b, "# HELP profstore_writer_transaction_duration_seconds Write transactions by duration: "
                      "building, commit and fsync.\n# TYPE profstore_writer_transaction_duration_seconds histogram\n");
    {
        uint64_t cum = 0;
        for (unsigned k = 0; k <= PS_WRITER_TXN_BUCKETS; k++) {
            cum += ws.txn_buckets[k];
            ps_buf_printf(&b, "profstore_writer_transaction_duration_seconds_bucket{le=\"%s\"} %llu\n",
                          k < PS_WRITER_TXN_BUCKETS ? ps_writer_txn_le[k] : "+Inf", (unsigned long long)cum);
        }
        ps_buf_printf(&b, "profstore_writer_transaction_duration_seconds_sum %llu.%09llu\n",
                      (unsigned long long)(ws.txn_sum_ns / 1000000000u), (unsigned long long)(ws.txn_sum_ns % 1000000000u));
        ps_buf_printf(&b, "profstore_writer_transaction_duration_seconds_count %llu\n", (unsigned long long)cum);
    }
    COUNTER("profstore_writer_appends_failed_total", "Profiles the writer refused.", ws.failed);
    COUNTER("profstore_writer_duplicates_total", "Identical re-pushes acknowledged without writing.", ws.duplicates);
    COUNTER("profstore_compactor_chunks_total", "Chunks written by the compactor.", ws.chunks);
    COUNTER("profstore_retention_series_dropped_total", "Series removed by retention.", ws.series_dropped);
    GAUGE("profstore_writer_queue_length", "Profiles waiting for the writer.", ws.queued);
    GAUGE("profstore_write_queue_items", "Write requests waiting for the writer (--storage.write-queue-max-items).",
          ws.queued);
    GAUGE("profstore_write_queue_bytes", "Bytes held by the write requests waiting for the writer "
          "(--storage.write-queue-max-bytes).", ws.queued_bytes);
    GAUGE("profstore_storage_disk_full", "1 while writes fail for want of space (the disk, or --storage.max-size): "
          "answered 507.", ws.disk_full);
    ps_buf_printf(&b, "# HELP profstore_writes_refused_total Write requests refused for want of capacity: a full write "
                      "queue (429, 503 to remote write), the decompression budget (503), a full disk (507).\n"
                      "# TYPE profstore_writes_refused_total counter\n"
                      "profstore_writes_refused_total{reason=\"queue_full\"} %llu\n"
                      "profstore_writes_refused_total{reason=\"inflate_budget\"} %llu\n"
                      "profstore_writes_refused_total{reason=\"disk_full\"} %llu\n",
                  (unsigned long long)ws.refused_queue_full, (unsigned long long)ps_inflate_budget_refused(),
                  (unsigned long long)ws.refused_disk_full);
    if (have_st) {
        GAUGE("profstore_storage_series", "Series stored.", st.series);
        GAUGE("profstore_storage_head_records", "Profiles in head records (not yet compacted).", st.head_records);
        GAUGE("profstore_storage_chunks", "Chunks stored.", st.chunks);
        GAUGE("profstore_storage_stack_nodes", "Nodes of the shared stack tree.", st.nodes);
        GAUGE("profstore_storage_float_heads", "Float series with an open chunk.", st.float_heads);
        GAUGE("profstore_storage_float_chunks", "Closed float (XOR) chunks stored.", st.float_chunks);
        GAUGE("profstore_storage_metric_metadata", "Metric families with stored metadata.", st.metadata);
        GAUGE("profstore_storage_file_bytes", "Size on disk of the LMDB data file.", st.file_bytes);
        GAUGE("profstore_storage_used_bytes", "Bytes of LMDB pages in use.", st.used_bytes);
    }
    ps_scraper_metrics(s->scraper, &b);
    ps_buf_printf(&b, "# HELP profstore_start_time_seconds Start time of the process.\n"
                      "# TYPE profstore_start_time_seconds gauge\nprofstore_start_time_seconds %lld\n",
                  (long long)(s->start_time / PS_NS_PER_S));
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
