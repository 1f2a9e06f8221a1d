/*
 * main.c - profstore: start-up, signals, clean shutdown (the flags: src/config/flags.c).
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/flags.h"
#include "config/webconfig.h"
#include "forward/forward.h"
#include "grpc/grpc.h"
#include "scrape/scrape.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "proto/gzip.h"
#include "storage/store.h"
#include "web/server.h"
#include "ingest/ingest.h"
#include "rules/rules.h"
#include "debuginfo/debuginfo.h"
#include "symbols/symbols.h"

/* /metrics: the gRPC listener's and the symbolizer's families after the main port's */
typedef struct extra_metrics {
    ps_grpc_t *grpc;
    ps_symbols_t *symbols;
} extra_metrics_t;

/* the status page's question to the symbolizer: a debug file for this build id now, and where
 * (web/server.h's numbers: 1 --symbols.dir, 2 uploaded, 3 debuginfod)? */
typedef struct symbols_where {
    ps_symbols_t *symbols;
    bool with_dir; /* --symbols.dir is the symbolizer's first directory, the uploads its next */
} symbols_where_t;

static int symbols_has(void *ctx, const char *build_id)
{
    const symbols_where_t *w = ctx;
    int from = ps_symbols_has(w->symbols, build_id);
    if (from == PS_SYMBOLS_DEBUGINFOD)
        return 3;
    if (from <= 0)
        return 0;
    return w->with_dir && from == 1 ? 1 : 2;
}

static void extra_metrics(void *ctx, ps_buf_t *b)
{
    extra_metrics_t *e = ctx;
    if (e->grpc != NULL)
        ps_grpc_metrics(e->grpc, b);
    ps_symbols_metrics(e->symbols, b);
}

static void die_usage(const char *msg)
{
    fprintf(stderr, "profstore: %s\nRun profstore --help for the flags.\n", msg);
    exit(2);
}

/* Parses the flags (src/config/flags.c) into f; --help, --version and --help-markdown exit here. */
static void parse_flags(int argc, char **argv, ps_flags_t *f)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_profstore_flags_init(f);
    int rc = ps_profstore_flags_parse(f, argc, argv, &err);
    if (rc < 0)
        die_usage(err.msg);
    if (rc == 0)
        return;
    ps_buf_t out = PS_BUF_INIT;
    if (rc == PS_FLAGS_HELP)
        ps_flags_help(&ps_profstore_flagset, &out);
    else if (rc == PS_FLAGS_MARKDOWN)
        ps_flags_markdown(&ps_profstore_flagset, &out);
    else
        ps_buf_printf(&out, "profstore version 0.1.0\n");
    fwrite(out.data, 1, out.len, stdout);
    ps_buf_dispose(&out);
    exit(0);
}

/* /api/v1/status/flags: every flag with its effective value, as Prometheus lists its own */
static void status_flags(const ps_flags_t *f, ps_server_t *srv)
{
    static ps_flag_value_t v[128];
    static ps_server_flag_t fl[128];
    uint32_t n = ps_flags_values(&ps_profstore_flagset, f, v, 128);
    for (uint32_t i = 0; i < n; i++)
        fl[i] = (ps_server_flag_t){.name = v[i].name, .value = v[i].value};
    srv->flags = fl;
    srv->nflags = n;
}

/* what /api/v1/status/config shows after a load: the configuration as YAML, "" without one */
static void status_config(ps_server_t *srv, const ps_config_t *cfg, int64_t when)
{
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(cfg, &y);
    ps_server_config_loaded(srv, true, y.len ? (const char *)y.data : "", y.len, when);
    ps_buf_dispose(&y);
}

/* The configuration side of the process: the file, the scraper it drives, and the one rule for
 * (re)loading it, used by SIGHUP and POST /-/reload alike. */
typedef struct wiring {
    pthread_mutex_t mu;      /* one reload at a time */
    const char *config_path; /* NULL without --config */
    const char *web_config_path; /* NULL without --web.config.file */
    ps_server_t *srv;
    ps_grpc_t *grpc;         /* NULL without --grpc.listen-address */
    ps_scraper_opts_t scrape_opts;
} wiring_t;

/* The recording rules of cfg's recording_rules: made the provisioned rules of rs. */
static int provision_rules(ps_rules_t *rs, const ps_config_t *cfg, ps_err_t *err)
{
    ps_arena_t a = PS_ARENA_INIT;
    uint32_t n = cfg != NULL ? cfg->nrecording : 0;
    ps_rr_rule_t *v = ps_arena_calloc(&a, n + 1, sizeof(*v));
    for (uint32_t i = 0; i < n; i++) {
        const ps_recording_rule_config_t *c = &cfg->recording[i];
        ps_rr_rule_t *r = &v[i];
        r->id = c->id;
        r->metric_name = c->metric_name;
        r->matchers = c->matchers;
        r->nmatchers = c->nmatchers;
        r->group_by = c->group_by;
        r->ngroup_by = c->ngroup_by;
        r->next = c->external_labels.n;
        r->ext = ps_arena_calloc(&a, r->next + 1, sizeof(*r->ext));
        for (size_t j = 0; j < r->next; j++)
            r->ext[j] = (ps_rr_label_t){c->external_labels.pairs[j].name, c->external_labels.pairs[j].value};
        r->has_function = c->function_name != NULL;
        r->function_name = c->function_name ? c->function_name : "";
    }
    int rc = ps_rules_set_provisioned(rs, v, n, err);
    if (rc != 0 && cfg != NULL)
        ps_err_prefix(err, "%s", cfg->path ? cfg->path : "config");
    ps_arena_dispose(&a);
    return rc;
}

/* OTLP profiles over gRPC (ProfilesService/Export): the worker thread waits for ingest's answer */
static ps_grpc_status_t otlp_grpc_export(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n,
                                         ps_buf_t *resp, char *msg, size_t msgsize)
{
    (void)call;
    ps_server_t *srv = ctx;
    ps_err_t err;
    ps_err_clear(&err);
    int code = ps_ingest_otlp_wait(srv->writer, PS_OTLP_PROTO, req, n, &srv->opts.limits, resp, &err);
    if (code == 0)
        return PS_GRPC_OK;
    snprintf(msg, msgsize, "%s", err.msg);
    return ps_grpc_status_of(code);
}

/* ps_writer_opts_t.rec_entry */
static void rules_eval(void *ctx, const ps_append_t *app, ps_buf_t *out)
{
    ps_rules_eval(ctx, app, out);
}

/* Applies cfg (taken): starts the scraper on the first configuration, reloads it afterwards. */
static void apply_config(wiring_t *w, ps_config_t *cfg)
{
    ps_forward_apply(w->srv->forward, cfg); /* keeps its own reference */
    if (w->srv->scraper == NULL)
        w->srv->scraper = ps_scraper_start(cfg, w->srv->writer, &w->scrape_opts);
    else
        ps_scraper_reload(w->srv->scraper, cfg);
}

/* Re-reads --web.config.file: a file that does not load keeps the one in force. */
static int reload_web_config(wiring_t *w, ps_err_t *err)
{
    ps_webconfig_t *wc = NULL;
    int rc = ps_webconfig_load(w->web_config_path, &wc, err);
    if (rc == 0 && w->grpc != NULL && (rc = ps_grpc_web_config(w->grpc, wc, err)) != 0) /* reads wc */
        ps_webconfig_free(wc);
    if (rc == 0 && (rc = ps_server_web_config(w->srv, wc, err)) == 0)
        ps_log_info("web configuration reloaded", "file=%s", ps_log_q(w->web_config_path));
    else
        ps_log_error("web configuration reload failed; keeping the running one", "err=%s", ps_log_q(err->msg));
    return rc;
}

static int reload_config(void *ctx, ps_err_t *err)
{
    wiring_t *w = ctx;
    ps_config_t *cfg = NULL;
    pthread_mutex_lock(&w->mu);
    int wrc = 0, rc = 0;
    ps_err_t werr;
    ps_err_clear(&werr);
    if (w->web_config_path != NULL)
        wrc = reload_web_config(w, &werr);
    if (w->config_path == NULL) {
        if (wrc != 0)
            *err = werr;
        pthread_mutex_unlock(&w->mu);
        return wrc;
    }
    rc = ps_config_load(w->config_path, &cfg, err);
    if (rc == 0 && (rc = provision_rules(w->srv->rules, cfg, err)) != 0) {
        ps_config_free(cfg);
        cfg = NULL;
    }
    if (rc == 0) {
        status_config(w->srv, cfg, ps_time_now());
        apply_config(w, cfg);
        ps_log_info("configuration reloaded", "file=%s", ps_log_q(w->config_path));
    } else {
        ps_log_error("configuration reload failed; keeping the running configuration", "err=%s", ps_log_q(err->msg));
        ps_server_config_loaded(w->srv, false, NULL, 0, ps_time_now());
    }
    pthread_mutex_unlock(&w->mu);
    if (rc == 0 && wrc != 0) {
        *err = werr;
        return wrc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    ps_flags_t f;
    ps_store_opts_t so;
    ps_writer_opts_t wo;
    ps_store_opts_default(&so);
    ps_writer_opts_default(&wo);
    wo.answers = ps_server_answers;
    parse_flags(argc, argv, &f);

    ps_log_level = ps_log_parse_level(f.log_level); /* one of the table's choices */

    ps_err_t err;
    ps_err_clear(&err);
    ps_config_t *cfg = NULL;
    if (f.config != NULL && ps_config_load(f.config, &cfg, &err) != 0) {
        fprintf(stderr, "profstore: %s\n", err.msg);
        return 2;
    }
    ps_webconfig_t *wc = NULL;
    if (f.web_config != NULL && ps_webconfig_load(f.web_config, &wc, &err) != 0) {
        fprintf(stderr, "profstore: %s\n", err.msg);
        return 2;
    }

    /* the flags that set the limits the lower floors' messages name (core/err.h) */
    static const char *const setting_flags[PS_SETTING_COUNT] = {
        [PS_SETTING_QUERY_TIMEOUT] = "--query.timeout",
        [PS_SETTING_QUERY_MAX_SAMPLES] = "--query.max-samples",
        [PS_SETTING_QUERY_MAX_SERIES] = "--query.max-series",
        [PS_SETTING_QUERY_MAX_MEMORY] = "--query.max-memory",
        [PS_SETTING_QUERY_MAX_REGEX_STEPS] = "--query.max-regex-steps",
        [PS_SETTING_INFLATE_BUDGET] = "--max-inflated-total",
        [PS_SETTING_FUTURE_GRACE] = "--storage.future-grace",
        [PS_SETTING_STORE_MAX_SIZE] = "--storage.max-size",
        [PS_SETTING_DISK_RESERVE] = "--storage.disk-reserve",
        [PS_SETTING_WRITE_QUEUE_MAX_ITEMS] = "--storage.write-queue-max-items",
        [PS_SETTING_WRITE_QUEUE_MAX_BYTES] = "--storage.write-queue-max-bytes",
        [PS_SETTING_SCRAPE_MAX_TARGETS] = "--scrape.max-targets",
        [PS_SETTING_STORE_CHECK] = "--storage.check",
        [PS_SETTING_DEBUGINFO_MAX_FILE] = "--debuginfo.max-file-bytes",
        [PS_SETTING_DEBUGINFO_MAX_BYTES] = "--debuginfo.max-bytes",
    };
    ps_setting_names_set(setting_flags);

    /* every thread inherits this mask; the main thread takes signals with sigwait */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    so.dir = f.data_dir;
    so.map_size = f.max_size;
    so.retention_ns = f.retention;
    so.compact_max_profiles = (uint32_t)f.compact_max;
    so.compact_window_ns = f.compact_window;
    so.nosync = f.nosync;
    so.future_grace_ns = f.future_grace;
    so.disk_reserve = f.disk_reserve;
    so.adhoc_max_profiles = (uint32_t)f.adhoc_max_profiles;
    so.adhoc_max_bytes = f.adhoc_max_bytes;
    so.log_only = f.agent;
    wo.max_queue_bytes = f.queue_bytes;
    wo.max_queue = (uint32_t)f.queue_items;
    ps_inflate_budget_set(f.max_inflated_total);
    wo.compact_interval_ns = f.compact_interval > 0 ? f.compact_interval : PS_NS_PER_S;
    wo.retention_interval_ns = f.retention_interval > 0 ? f.retention_interval : PS_NS_PER_S;
    wo.commit_delay_ns = f.commit_delay;

    if (f.check)
        return ps_store_check_dir(&so, stdout);
    /* native frames symbolized when read: from --symbols.dir, then the uploaded debug files
     * (<data-dir>/debuginfo, opened below), then --debuginfod.url; made before any thread starts:
     * libdebuginfod's settings are the environment variables it sets */
    bool dbgd = f.debuginfod_urls != NULL && *f.debuginfod_urls;
    char dbgd_cache[4096], di_dir[4096];
    snprintf(dbgd_cache, sizeof(dbgd_cache), "%s", f.debuginfod_cache && *f.debuginfod_cache ? f.debuginfod_cache : "");
    if (!dbgd_cache[0])
        snprintf(dbgd_cache, sizeof(dbgd_cache), "%s/debuginfod", f.data_dir);
    snprintf(di_dir, sizeof(di_dir), "%s/debuginfo", f.data_dir);
    const char *sym_dirs[2];
    size_t nsym = 0;
    if (f.symbols_dir && *f.symbols_dir)
        sym_dirs[nsym++] = f.symbols_dir;
    sym_dirs[nsym++] = di_dir;
    ps_symbols_t *symbols = ps_symbols_new(sym_dirs, nsym);
    if (dbgd) {
        ps_symbols_debuginfod_t dopt = {.urls = f.debuginfod_urls, .cache_dir = dbgd_cache,
                                        .timeout_ns = f.debuginfod_timeout};
        if (ps_symbols_set_debuginfod(symbols, &dopt, &err) != 0) {
            fprintf(stderr, "profstore: %s: %s\n", err.code == PS_ESTORAGE ? "--debuginfod.cache-dir" : "--debuginfod.url",
                    err.msg);
            ps_symbols_free(symbols);
            return 2;
        }
    }
    ps_store_t *store = NULL;
    if (ps_store_open(&so, &store, &err) != 0) {
        ps_log_error("cannot open storage", "dir=%s err=%s", ps_log_q(f.data_dir), ps_log_q(err.msg));
        return 1;
    }
    if (ps_store_disk_reserve(store) < f.disk_reserve)
        ps_log_info("disk reserve sized to the disk", "reserve=%llu configured=%llu (1/16 of the file system at most)",
                    (unsigned long long)ps_store_disk_reserve(store), (unsigned long long)f.disk_reserve);
    if (ps_store_space_check(store, &err) != 0) /* reads go on; writes are 507 until space returns */
        ps_log_warn("writes are refused from the start", "err=%s", ps_log_q(err.msg));
    ps_err_clear(&err);
    ps_server_t srv = {0};
    srv.opts.listen = f.listen;
    srv.opts.otlp_http_listen = f.otlp_http_listen;
    srv.opts.threads = (uint32_t)f.threads;
    srv.opts.max_body = f.max_body;
    srv.opts.max_upload = (size_t)f.debuginfo_max_file;
    srv.opts.max_series = (uint32_t)f.max_series;
    ps_read_opts_default(&srv.opts.read);
    srv.opts.read.sample_limit = f.read_sample_limit;
    srv.opts.read.max_frame_bytes = (size_t)f.read_max_frame;
    srv.opts.read.max_series = (uint32_t)f.max_series;
    srv.opts.read_concurrency = (uint32_t)f.read_concurrent_limit;
    srv.opts.query_timeout = f.query_timeout;
    srv.opts.query_max_samples = f.query_max_samples;
    srv.opts.query_max_memory = f.query_max_memory;
    srv.opts.promql_compat = strcmp(f.promql_compat, "2") == 0 ? 2 : 3;
    srv.opts.promql_experimental = f.enable_feature != NULL && strcmp(f.enable_feature, "promql-experimental-functions") == 0;
    srv.opts.query_max_concurrency = (uint32_t)f.query_max_concurrency;
    srv.opts.query_max_regex_steps = f.query_max_regex_steps;
    srv.opts.decode_threads = (uint32_t)f.decode_threads;
    srv.opts.query_cpus = (uint32_t)f.query_cpus;
    srv.opts.decode_queue_bytes = (size_t)f.decode_queue_bytes;
    ps_pprof_limits_default(&srv.opts.limits);
    srv.opts.limits.max_inflated = f.max_inflated;
    srv.opts.retention_ns = f.retention;
    srv.opts.enable_admin_api = f.admin_api;
    srv.opts.enable_lifecycle = f.lifecycle;
    srv.opts.max_connections = (uint32_t)f.max_conns;
    srv.opts.read_header_timeout = f.header_timeout;
    srv.opts.body_idle_timeout = f.body_idle_timeout;
    srv.opts.body_min_rate = f.body_min_rate;
    srv.opts.idle_timeout = f.idle_timeout;
    srv.opts.enable_h2c = f.h2c;
    srv.opts.agent = f.agent;
    if (f.agent && (cfg == NULL || cfg->nforward == 0))
        ps_log_warn("agent mode without forward: endpoints in the config: what is received is not kept", NULL);
    srv.opts.http2_max_resets = (uint32_t)f.h2_max_resets;
    srv.store = store;
    status_flags(&f, &srv);
    if (ps_server_bind(&srv, &err) != 0) {
        ps_log_error("cannot start HTTP server", "err=%s", ps_log_q(err.msg));
        ps_store_close(store);
        return 1;
    }
    /* the gRPC listener (grpc/grpc.h): its port, its methods, the same TLS and credentials */
    ps_grpc_t *grpc = NULL;
    if (f.grpc_listen != NULL && f.grpc_listen[0]) {
        ps_grpc_opts_t go = {.listen = f.grpc_listen,
                             .max_message = (size_t)f.grpc_max_msg,
                             .max_streams = (uint32_t)f.grpc_max_streams,
                             .max_connections = (uint32_t)f.grpc_max_conns,
                             .idle_timeout = f.grpc_idle_timeout};
        if ((grpc = ps_grpc_new(&go, &err)) == NULL) {
            ps_log_error("cannot start the gRPC listener", "err=%s", ps_log_q(err.msg));
            ps_store_close(store);
            return 1;
        }
        /* OTLP profiles over gRPC: the OTLP/HTTP route's export, its answer waited for */
        ps_grpc_method_t otlp = {.path = "/opentelemetry.proto.collector.profiles.v1development.ProfilesService/Export",
                                 .scope = PS_SCOPE_WRITE,
                                 .fn = otlp_grpc_export,
                                 .ctx = &srv};
        if (ps_grpc_register(grpc, &otlp, &err) != 0 || (wc != NULL && ps_grpc_web_config(grpc, wc, &err) != 0)) {
            fprintf(stderr, "profstore: %s\n", err.msg);
            ps_store_close(store);
            return 2;
        }
    }
    if (wc != NULL && ps_server_web_config(&srv, wc, &err) != 0) { /* its certificates do not load */
        fprintf(stderr, "profstore: %s\n", err.msg);
        ps_store_close(store);
        return 2;
    }
    status_config(&srv, cfg, srv.start_time); /* loaded at start; before apply_config takes cfg */
    srv.forward = ps_forward_new(store);
    ps_forward_writer_hooks(srv.forward, &wo);
    /* recording rules: the configuration's, then the stored ones; evaluated as profiles are written */
    srv.rules = ps_rules_new();
    if (provision_rules(srv.rules, cfg, &err) != 0) {
        fprintf(stderr, "profstore: %s\n", err.msg);
        ps_store_close(store);
        return 2;
    }
    if (ps_rules_reload(srv.rules, store, &err) != 0)
        ps_log_error("cannot read the stored recording rules", "err=%s", ps_log_q(err.msg));
    if (!f.agent) {
        ps_store_set_recorder(store, ps_rules_record, srv.rules);
        wo.rec_entry = rules_eval;
        wo.rec_ctx = srv.rules;
    }
    wo.max_rules = PS_RULES_MAX;
    /* the uploaded debug files (debuginfo.v1alpha1), under the data directory */
    ps_debuginfo_opts_t dio = {.max_file_bytes = f.debuginfo_max_file, .max_bytes = f.debuginfo_max_bytes,
                               .nosync = f.nosync};
    if (ps_debuginfo_open(di_dir, &dio, &srv.debuginfo, &err) != 0) {
        ps_log_error("cannot open the debug info store", "err=%s", ps_log_q(err.msg));
        ps_store_close(store);
        return 1;
    }
    ps_store_set_symbolizer(store, ps_symbols_profile, symbols);
    static extra_metrics_t em;
    em = (extra_metrics_t){.grpc = grpc, .symbols = symbols};
    srv.extra_metrics = extra_metrics;
    srv.extra_metrics_ctx = &em;
    static symbols_where_t where;
    where = (symbols_where_t){.symbols = symbols, .with_dir = f.symbols_dir && *f.symbols_dir};
    srv.symbols_has = symbols_has;
    srv.symbols_has_ctx = &where;
    if ((srv.writer = ps_writer_start(store, &wo, &err)) == NULL) {
        ps_log_error("cannot start the writer", "err=%s", ps_log_q(err.msg));
        ps_store_close(store);
        return 1;
    }
    ps_forward_attach(srv.forward, srv.writer);
    /* a scraped body may be twice a pushed one, and at least 64 MiB (Go heap profiles of big
     * processes) */
    wiring_t wiring = {.config_path = f.config, .web_config_path = f.web_config, .srv = &srv, .grpc = grpc};
    pthread_mutex_init(&wiring.mu, NULL);
    wiring.scrape_opts.max_targets = (uint32_t)f.scrape_max_targets;
    wiring.scrape_opts.max_body = f.max_body * 2 > (64u << 20) ? f.max_body * 2 : (64u << 20);
    wiring.scrape_opts.limits = srv.opts.limits;
    if (f.config != NULL || f.web_config != NULL) {
        srv.reload = reload_config;
        srv.reload_ctx = &wiring;
    }
    if (cfg != NULL)
        apply_config(&wiring, cfg);
    if (ps_server_start(&srv, &err) != 0) {
        ps_log_error("cannot start HTTP server", "err=%s", ps_log_q(err.msg));
        return 1;
    }
    if (ps_server_otlp_port(&srv) > 0)
        ps_log_info("serving OTLP/HTTP too", "listen=%s port=%d", ps_log_q(f.otlp_http_listen), ps_server_otlp_port(&srv));
    if (grpc != NULL) {
        if (ps_grpc_start(grpc, &err) != 0) {
            ps_log_error("cannot start the gRPC listener", "err=%s", ps_log_q(err.msg));
            return 1;
        }
        ps_log_info("gRPC listener ready", "listen=%s port=%d", ps_log_q(f.grpc_listen), ps_grpc_port(grpc));
    }
    char ret_s[32];
    ps_format_duration(f.retention, ret_s, sizeof(ret_s));
    ps_log_info("profstore is ready", "listen=%s port=%d data_dir=%s retention=%s threads=%llu", ps_log_q(f.listen),
                ps_server_port(&srv), ps_log_q(f.data_dir), ps_log_q(f.retention ? ret_s : "forever"),
                (unsigned long long)f.threads);

    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            if (f.config == NULL && f.web_config == NULL)
                ps_log_warn("SIGHUP ignored: no --config or --web.config.file to reload", NULL);
            else
                (void)reload_config(&wiring, &err);
            continue;
        }
        ps_log_info("shutting down", "signal=%s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        break;
    }
    ps_server_begin_shutdown(&srv);  /* new writes get 503; listeners close */
    ps_grpc_begin_shutdown(grpc);    /* GOAWAY; new calls get UNAVAILABLE, running ones go on */
    ps_scraper_stop(srv.scraper);    /* no new scrapes; those handed to the writer still finish */
    ps_forward_shutdown(srv.forward); /* senders stop; their cursors go through the writer */
    ps_writer_shutdown(srv.writer);  /* queued writes finish; their answers are queued to the loops */
    ps_server_stop(&srv);            /* each loop sends those answers, drains, and ends */
    ps_grpc_stop(grpc);              /* the running calls' answers are sent; then it ends */
    ps_writer_stop(srv.writer);      /* no loop can submit any more: free it */
    ps_forward_free(srv.forward);
    ps_rules_free(srv.rules);
    ps_store_close(store);
    ps_symbols_free(symbols);
    ps_debuginfo_free(srv.debuginfo);
    ps_log_info("stopped", NULL);
    return 0;
}
