/*
 * internal.h - what the web/ files share: the per-thread loop context and the route table.
 */
#ifndef PS_WEB_INTERNAL_H
#define PS_WEB_INTERNAL_H

#include <h2o.h>
#include <pthread.h>

#include "http.h"
#include "ingest/ingest.h"
#include "server.h"
#include "task.h"

typedef struct ps_loop {
    h2o_context_t ctx; /* first: h2o hands us &ctx */
    h2o_accept_ctx_t accept_ctx;
    h2o_multithread_queue_t *queue;
    h2o_multithread_receiver_t receiver;
    h2o_socket_t *listener;
    int fd;
    h2o_socket_t *otlp_listener; /* --otlp.http.listen-address, or NULL */
    int otlp_fd;                 /* its socket, or -1 */
    pthread_t thread;
    ps_server_t *srv;
    struct lconns *conns; /* this loop's connections (web/connguard.c) */
    volatile int exit;
    /* arenas kept warm for the next request: a fresh arena costs page faults (~0.5 ms a profile) */
    ps_arena_t *free_arenas[64];
    int nfree;
    struct ps_websec *websec; /* access.c: the web configuration this loop applies (a reference), or NULL */
} ps_loop_t;

static inline ps_loop_t *ps_loop_of(h2o_context_t *ctx)
{
    return (ps_loop_t *)ctx;
}

void ps_async_on_messages(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages);
/**
 * Hands w to the server's writer thread, tied to req by a (ps_async_init with cb): cb runs on
 * the request's loop once the writer is done with w. Sets w->on_done and w->ctx (= a; a is the
 * first member of the caller's struct, so cb casts it back). 0, or -1 when the writer refused w
 * (w->err says why; a is untied again, cb never runs).
 */
int ps_async_submit_write(ps_async_t *a, ps_wreq_t *w, h2o_req_t *req, ps_async_cb cb);

/* ingest_job.c */
/** Hands w to the writer for t (a task's run, any thread): t is held until the writer is done with
 *  w, then finish(t) runs on the request's loop (t->finish_arg = arg) and makes the answer. 0, or
 *  -1 when the writer refused w (w->err says why; t is not held). */
int ps_task_write(ps_task_t *t, ps_wreq_t *w, void (*finish)(ps_task_t *t), void *arg);
/* one prepared profile handed to the writer (api_ingest.c, api_pyroscope_ingest.c) */
/** The HTTP status a handler answers for an error code. */
typedef int (*ps_ingest_status_fn)(int code);
typedef struct ps_ingest_job {
    ps_wreq_t w;       /* the caller prepares w.app */
    ps_task_t *t;
    ps_arena_t *arena; /* the task's */
    ps_server_t *srv;
    size_t body_len;            /* counted in profstore_ingest_bytes_total once stored */
    const char *what;           /* the debug log event of a rejected profile */
    ps_ingest_status_fn status; /* the status of an error (the writer's "unavailable" while stopping: 503) */
} ps_ingest_job_t;
/** A job for t, or NULL when the server is shutting down (503 answered). */
ps_ingest_job_t *ps_ingest_job_new(ps_task_t *t, const char *what, ps_ingest_status_fn status);
/** Hands j (w.app prepared) to the writer: answered 200 with the ingest result once durable, else
 *  the error with j->status. */
void ps_ingest_job_submit(ps_ingest_job_t *j);
/** Answers status and msg (a request refused before the hand-off). */
void ps_ingest_job_fail(ps_ingest_job_t *j, int status, const char *msg);
/** Counts pushed profiles stored: profiles, their pprof samples, the bytes received (any thread). */
void ps_ingest_count(uint64_t profiles, uint64_t samples, uint64_t bytes);
/** profstore_ingest_{profiles,bytes,samples}_total, in the text exposition format. */
void ps_ingest_metrics(ps_buf_t *out);

/* routes.c */
/** What a route (routes.c) or a Connect method (connect.c) is: the one scope a caller needs for it
 *  when authentication is on (OPEN: none, ever), and POOL when its work runs on the query worker
 *  pool rather than on the event loop. */
enum {
    PS_ROUTE_OPEN = 0,
    PS_ROUTE_READ = 1u << 0,
    PS_ROUTE_WRITE = 1u << 1,
    PS_ROUTE_ADMIN = 1u << 2,
    PS_ROUTE_SCOPES = PS_ROUTE_READ | PS_ROUTE_WRITE | PS_ROUTE_ADMIN,
    PS_ROUTE_POOL = 1u << 4,
    PS_ROUTE_DECODE = 1u << 5, /* a write whose body is decoded on the decode pool (--ingest.decode-threads) */
    PS_ROUTE_NO_WRITER = 1u << 6, /* a DECODE write kept outside the store's writer (debug files): the
                                     writer does not wait for it (run.c) */
    PS_ROUTE_SMALL_HERE = 1u << 7, /* a DECODE write whose body has at most PS_RUN_HERE_MAX bytes is
                                      decoded on its loop, not handed to the decode pool (run.c) */
};
int ps_routes_dispatch(h2o_handler_t *self, h2o_req_t *req);
/** The handler a path is counted under in /metrics: 0 .. ps_routes_nhandlers() - 1 (the last
 *  one is "other": paths no route serves). */
uint32_t ps_routes_handler(h2o_iovec_t path);
uint32_t ps_routes_nhandlers(void);
/** The PS_ROUTE_* class of handler i (as ps_routes_handler numbers them). */
unsigned ps_routes_class(uint32_t handler);
/** The route pattern of handler i ("/api/v1/query_range", "/api/v1/label/:name/values", "other"). */
const char *ps_routes_handler_name(uint32_t i);

/* access.c: the web configuration (--web.config.file) in force */
/** The loop's reference to the current web configuration, and its TLS context on the accept ctx
 *  (loop_main, on the loop's thread). */
void ps_tls_loop_init(ps_loop_t *l);
/** Marks the loops started: later configurations are handed to them by message, post(s, cb)
 *  (ps_server_start gives ps_server_post_loops). */
void ps_tls_started(ps_server_t *s, void (*post)(ps_server_t *s, ps_async_cb cb));
/** The check every request passes before its route (ps_routes_dispatch): adds the configured
 *  response headers, then for a route of class cls (PS_ROUTE_*) checks the credentials (401),
 *  their scope (403) and whether admin routes are enabled (503, /-/reload: 403). 0 to go on, -1
 *  when it answered the request, 1 when a bcrypt computation must tell: it runs on the credential
 *  thread (PS_AUTHQ_MAX at a time, then 503), and route(req) is called on the loop once the
 *  credentials pass (never if the client went away). */
int ps_web_authorize(h2o_req_t *req, unsigned cls, int (*route)(h2o_req_t *req));
/** Credential checks (queued or running) at most on the credential thread: a bcrypt costs ~0.1 s,
 *  so one more waits at most ~1.6 s; beyond it, 503 with Retry-After. */
#define PS_AUTHQ_MAX 16
/** Stops the credential thread: what it has not checked is answered 503 (the loops must still
 *  run). Idempotent (ps_server_stop). */
void ps_web_auth_stop(void);
/** Whether req carries credentials with the admin scope (false without authentication). */
bool ps_web_is_admin(h2o_req_t *req);
/** Runs cb (with a fresh ps_async_t whose loop is set; cb frees it) on every loop's thread (server.c). */
void ps_server_post_loops(ps_server_t *s, ps_async_cb cb);

/* http.c: request accounting */
/** Stats of n handlers: handler_of(path) numbers a request's, name(i) names handler i. */
struct ps_http_stats *ps_http_stats_new(uint32_t n, uint32_t (*handler_of)(h2o_iovec_t path),
                                        const char *(*name)(uint32_t i));
/** Writes profstore_http_requests_total{handler,code} and
 *  profstore_http_request_duration_seconds{handler} in the text exposition format. */
void ps_http_stats_write(const struct ps_http_stats *st, ps_buf_t *out);
/** Writes profstore_http_errors_total{class}: the answers with a 4xx and with a 5xx status, over
 *  every handler. */
void ps_http_errors_write(const struct ps_http_stats *st, ps_buf_t *out);

/* api_*.c handlers: return 0 (a response was or will be sent). Those taking a task run off the
 * loop, or in place (run.c); their route's cls and error shape are in routes.c's table. */
int ps_api_healthy(h2o_req_t *req);
int ps_api_ready(h2o_req_t *req);
int ps_api_buildinfo(h2o_req_t *req);
int ps_api_status_config(h2o_req_t *req);
int ps_api_status_flags(h2o_req_t *req);
int ps_api_status_forward(h2o_req_t *req);
int ps_api_status_runtimeinfo(h2o_req_t *req);
int ps_api_status_tsdb(ps_task_t *t); /* api_status_tsdb.c */
int ps_api_status_symbols(ps_task_t *t); /* api_status_symbols.c */
int ps_api_metrics(h2o_req_t *req);
int ps_api_profiles_write(ps_task_t *t);
int ps_api_pyroscope_ingest(ps_task_t *t); /* api_pyroscope_ingest.c: POST /ingest */
int ps_api_remote_write(ps_task_t *t);
/* api_otlp.c: POST /v1development/profiles (OTLP/HTTP); its error shape: a google.rpc.Status */
int ps_api_otlp_profiles(ps_task_t *t);
void ps_api_otlp_fail(ps_answer_t *a, int code, const char *msg);
/** Whether path is the OTLP/HTTP route (its refusals before the route, access.c's 401, 403 and
 *  503, answer with ps_api_otlp_refuse). */
bool ps_api_otlp_is_path(h2o_iovec_t path);
/** Answers req with status and a google.rpc.Status of msg in the request's encoding. */
void ps_api_otlp_refuse(h2o_req_t *req, int status, const char *msg);
/** Remote write's error shape: plain text, 503 for a full queue (api_write.c). */
void ps_api_remote_write_fail(ps_answer_t *a, int code, const char *msg);
/** The remote_write counters, in the text exposition format (for /metrics). */
void ps_api_write_metrics(ps_buf_t *b);
/** The recording rules' figures (api_recording.c). */
void ps_api_rules_metrics(ps_server_t *s, ps_buf_t *b);
/** profstore_remote_reads_{inflight,timed_out_total,canceled_total} likewise (api_read.c). */
void ps_api_read_metrics(ps_buf_t *b);
int ps_api_admin_compact(h2o_req_t *req);
int ps_api_admin_retention(h2o_req_t *req);
int ps_api_debug_series(ps_task_t *t);
int ps_api_targets(h2o_req_t *req);
int ps_api_reload(h2o_req_t *req);
int ps_api_read(h2o_req_t *req);
int ps_api_query(ps_task_t *t);
int ps_api_query_range(ps_task_t *t);
int ps_api_format_query(h2o_req_t *req); /* api_format.c */
int ps_api_series(ps_task_t *t);
int ps_api_labels(ps_task_t *t);
int ps_api_label_values(ps_task_t *t);
int ps_api_metadata(ps_task_t *t);
int ps_api_query_exemplars(ps_task_t *t);
int ps_api_rules(h2o_req_t *req);
int ps_api_alerts(h2o_req_t *req);
int ps_api_profile_types(ps_task_t *t);
int ps_api_profile_query(ps_task_t *t);
int ps_api_profile_diff(ps_task_t *t);
int ps_api_profile_adhoc(ps_task_t *t); /* /api/v1/profiles/adhoc (api_profiles.c) */
/* api_adhoc.c: the ad hoc profile id (checked, looked up, decoded; *fmt and *meta, optional:
 * what it was read as, a flamebearer JSON's metadata); and the pair profile of a diff of two with
 * their common types */
int ps_adhoc_load(ps_server_t *srv, const char *id, ps_arena_t *arena, ps_store_adhoc_t *st, ps_profile_t *p,
                  ps_adhoc_format_t *fmt, ps_fbjson_meta_t *meta, ps_err_t *err);
int ps_adhoc_diff_pair(ps_server_t *srv, const char *left_id, const char *right_id, const char *type, ps_arena_t *a,
                       ps_profile_t *pair, const char ***common, size_t *ncommon, ps_err_t *err);
/* api_debuginfo.c: POST /debuginfo.v1alpha1.DebuginfoService/Upload/{gnu_build_id} (plain text answers) */
bool ps_api_debuginfo_is_upload(h2o_iovec_t path);
/** profstore_debuginfo_{bytes,files,uploads_pending} (for /metrics). */
void ps_api_debuginfo_metrics(ps_server_t *s, ps_buf_t *b);
int ps_api_debuginfo_upload(ps_task_t *t);
int ps_api_profile_by_id(ps_task_t *t);
int ps_api_profile_ids(ps_task_t *t);
int ps_api_debug_profile(ps_task_t *t);
/* api_pyroscope_query.c: Pyroscope's HTTP query API; its error shape: Connect's JSON with
 * profstore's status */
void ps_api_pyroscope_fail(ps_answer_t *a, int code, const char *msg);
int ps_api_pyroscope_render(ps_task_t *t);
int ps_api_pyroscope_render_diff(ps_task_t *t);
int ps_api_pyroscope_label_values(ps_task_t *t);
int ps_api_pyroscope_labels(ps_task_t *t);
/* api_ui.c: the web UI */
int ps_api_ui_page(h2o_req_t *req); /* /, /graph, /compare, /targets, /status: index.html */
int ps_api_ui_file(h2o_req_t *req); /* /ui/<path> */
int ps_api_ui_favicon(h2o_req_t *req); /* /favicon.ico: /ui/favicon.svg */
bool ps_ui_is_path(h2o_iovec_t path); /* starts with /ui/ */

#define PS_VERSION "0.1.0"
#include "ps_revision.h" /* generated at every build: PS_REVISION, PS_BRANCH, PS_BUILD_USER, PS_BUILD_DATE */
#define PS_COMPILER "none (C11, " __VERSION__ ")"

#endif
