/*
 * server.h - the HTTP server: libh2o event loops, one per thread, each with its own listening
 * socket (SO_REUSEPORT) and a message queue on which the writer thread hands back finished
 * writes. The only user of h2o.
 */
#ifndef PS_WEB_SERVER_H
#define PS_WEB_SERVER_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "proto/pprof.h"
#include "query/remote_read.h"
#include "storage/store.h"

/* The rooms the handlers call; main.c creates them and hands them over (their APIs are in
 * ingest/ingest.h and scrape/scrape.h, which only the handlers' .c files include). */
struct ps_writer;
struct ps_scraper;
struct ps_forward; /* forward/forward.h */
struct ps_webconfig; /* config/webconfig.h */

/** What main.c does for POST /-/reload, the same as for SIGHUP: reads the configuration file
 *  again and applies it, or keeps the running one and returns the error. Called on an HTTP
 *  thread: it must be thread-safe. */
typedef int (*ps_server_reload_fn)(void *ctx, ps_err_t *err);

typedef struct ps_server_opts {
    const char *listen;      /* host:port */
    const char *otlp_http_listen; /* host:port of a second listener (OTLP/HTTP's 4318); NULL or "": none */
    uint32_t threads;        /* event loop threads */
    size_t max_body;         /* request body limit (bytes) */
    size_t max_upload;       /* the body limit of a debug file upload (--debuginfo.max-file-bytes); h2o reads
                              * up to the larger of the two, routes.c answers 413 past max_body elsewhere */
    uint32_t max_series;     /* series one selector may select */
    int64_t query_timeout;   /* ns a query may take, from its arrival, queue included (0: none) */
    uint64_t query_max_samples; /* samples a query may load (PromQL: 0 = 50,000,000; merges: 0 = none) */
    uint64_t query_max_memory;  /* bytes a PromQL query may hold (0: no limit) */
    int promql_compat;          /* the Prometheus whose PromQL semantics to follow: 3 or 2 (ps_pq_opts_t.compat) */
    bool promql_experimental;   /* Prometheus 3's experimental PromQL functions (ps_pq_limits_t.experimental) */
    uint64_t query_max_regex_steps; /* PCRE2 steps charged to one query's regex matchers (0: none) */
    uint32_t query_max_concurrency; /* query pool threads (0: no pool, queries run on the loops) */
    uint32_t query_cpus;            /* of them, computing at once (core/thread.h CPU slots; 0: no limit) */
    uint32_t decode_threads;  /* decode pool threads (0: no pool, pushes are decoded on the loops) */
    size_t decode_queue_bytes; /* bodies waiting for a decode thread, at most (0: 32 MiB); past it 429/503 */
    ps_pprof_limits_t limits;
    ps_read_opts_t read;     /* remote read: sample limit, frame size, series per query */
    uint32_t read_concurrency; /* remote reads at once (0 = no limit); more get 503 */
    int64_t retention_ns;    /* --retention, for /api/v1/status/runtimeinfo */
    size_t max_remote_uncompressed; /* remote_write: largest uncompressed body (0 = proto/remote.h's default) */
    bool enable_admin_api;   /* --web.enable-admin-api: the admin and debug APIs (else 503) */
    bool enable_lifecycle;   /* --web.enable-lifecycle: POST /-/reload (else 403) */
    /* connections (web/connguard.c); a timeout or rate of 0 is none */
    uint32_t max_connections;     /* --web.max-connections (0 = no bound) */
    int64_t read_header_timeout;  /* ns from a request's first byte to its header's end */
    int64_t body_idle_timeout;    /* ns a request body may go without a byte */
    uint64_t body_min_rate;       /* bytes/s a request body must average after that grace */
    int64_t idle_timeout;         /* ns a kept-alive connection may wait for its next request */
    bool enable_h2c;              /* HTTP/2 over cleartext (prior knowledge, Upgrade: h2c) */
    bool agent;                   /* --agent: routes that read the store answer 400 (routes.c) */
    uint32_t http2_max_resets;    /* streams a client may reset per connection per 10 s (0 = no cap) */
} ps_server_opts_t;

/** One command-line flag as /api/v1/status/flags shows it: its name without "--" and its effective
 *  value as a string (the default when not given). */
typedef struct ps_server_flag {
    const char *name, *value;
} ps_server_flag_t;

typedef struct ps_server {
    ps_server_opts_t opts;
    ps_store_t *store;
    struct ps_writer *writer;
    struct ps_scraper *_Atomic scraper; /* NULL until a configuration is loaded */
    struct ps_forward *forward;  /* the forwarder (its endpoints come with the configuration) */
    struct ps_rules *rules;      /* the recording rules in force (src/rules) */
    struct ps_debuginfo *debuginfo; /* the uploaded debug files (src/debuginfo) */
    ps_server_reload_fn reload;  /* NULL without --config */
    void *reload_ctx;
    int64_t start_time;
    atomic_int stopping;
    struct ps_http_stats *http_stats; /* answers per handler and code, durations (web/http.c) */
    const ps_server_flag_t *flags; /* every flag of ours, sorted by name (main.c) */
    struct ps_qpool *qpool; /* the query worker pool (web/qpool.c); NULL: queries run on the loops */
    struct ps_qpool *dpool; /* the decode pool (web/qpool.c) for PS_ROUTE_DECODE writes; NULL: on the loops */
    uint32_t nflags;
    struct ps_server_status *status; /* the configuration as loaded, for the status endpoints (api_status.c) */
    struct ps_websec *websec;        /* web/access.c: the web configuration in force, NULL without one */
    bool websec_started, websec_tls; /* web/access.c */
    struct ps_conns *conns;          /* connection counts and limits (web/connguard.c) */
    /* more /metrics families from another room (main.c: the gRPC listener's), or NULL; thread-safe */
    void (*extra_metrics)(void *ctx, ps_buf_t *b);
    void *extra_metrics_ctx;
    /* whether a debug file of a build id is known now, and where: 1 --symbols.dir, 2 uploaded, 3
     * fetched from debuginfod, 0 none (main.c, from the symbolizer's ps_symbols_has), or NULL
     * without a symbolizer; thread-safe (GET /api/v1/status/symbols) */
    int (*symbols_has)(void *ctx, const char *build_id);
    void *symbols_has_ctx;
    void *impl;
} ps_server_t;

/** Binds the listening sockets (so a port conflict is reported before anything else starts). */
int ps_server_bind(ps_server_t *s, ps_err_t *err);
/** Starts the event loop threads. */
int ps_server_start(ps_server_t *s, ps_err_t *err);
/** The port of --otlp.http.listen-address once bound (0: none). */
int ps_server_otlp_port(ps_server_t *s);
/** Refuses new writes (503), closes the listeners. */
void ps_server_begin_shutdown(ps_server_t *s);
/** Stops the loops (after the writer has finished and its answers were handed over) and joins them. */
void ps_server_stop(ps_server_t *s);
/** Puts a web configuration (--web.config.file; config/webconfig.h) in force, taking wc: TLS on the
 *  listeners, basic auth and bearer tokens, response headers. Before ps_server_start, or later
 *  (SIGHUP, /-/reload): the loops switch to it for the connections and requests that follow.
 *  PS_EINVAL when a certificate or key does not load (file:line:col of its key) or a reload would
 *  turn TLS on or off; the configuration in force stays. Thread-safe. */
int ps_server_web_config(ps_server_t *s, struct ps_webconfig *wc, ps_err_t *err);

/** For ps_writer_opts_t.answers: between begin (true) and end (false) on one thread, the
 *  requests' completions (ps_async_complete) wait, and at the end go to each loop at once, one
 *  wake-up a loop. */
void ps_server_answers(bool begin);

/** The port actually bound (useful with port 0). */
int ps_server_port(ps_server_t *s);
/** Records a configuration load (at start, after ps_server_bind, or on reload): ok with the
 *  configuration's YAML (see ps_config_yaml; "" without --config) replaces what
 *  /api/v1/status/config shows and sets the last successful load time to when_ns; !ok (yaml
 *  unused) keeps both and only makes reloadConfigSuccess false. Thread-safe; the state lives as
 *  long as the process, like the loops. */
void ps_server_config_loaded(ps_server_t *s, bool ok, const char *yaml, size_t len, int64_t when_ns);

#endif
