/*
 * task.h - a request's work as a task (the shape of nginx's ngx_thread_task_t: a context and a
 * handler; completion is an event on the loop; the task never touches the request):
 *
 *   parse(req) -> task    on the loop (http.c, ps_http_task): what a route may read of the request —
 *                         path, parameters (query string and form body, decoded), headers, body —
 *                         copied into the task's arena, and whether the client takes gzip;
 *   run(task) -> answer   on a pool thread (qpool.c) or in place on the loop: the route's handler
 *                         fills task->ans (status, content type, headers, body), never an h2o type;
 *   send(req, answer)     on the loop (http.c, ps_http_send_answer), when the request still lives.
 *
 * A run that hands work to another thread (the writer) holds the task (ps_task_hold) until that
 * thread releases it (ps_task_release); task->finish then runs on the loop and fills the answer.
 * The error shape of a route's API (Prometheus JSON, Connect JSON, plain text) is the route
 * table's choice (routes.c), kept in task->fail for the answers the runner makes itself (queue
 * full, timed out in the queue, shutting down).
 */
#ifndef PS_WEB_TASK_H
#define PS_WEB_TASK_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>

#include "core/err.h"
#include "core/mem.h"
#include "server.h"

typedef struct ps_param {
    const char *name, *value;
    size_t nlen, vlen;
} ps_param_t;

typedef struct ps_params {
    size_t n;
    ps_param_t *items;
} ps_params_t;

/** First value of name, or NULL. */
const ps_param_t *ps_params_get(const ps_params_t *p, const char *name);
/** A time parameter in ns (ps_parse_time's forms: RFC3339, unix s or ms, now-5m relative to now);
 *  dflt when absent or empty. Errors: invalid parameter "<name>": cannot parse "..." ... */
int ps_param_time(const ps_params_t *p, const char *name, int64_t now, int64_t dflt, int64_t *out, ps_err_t *err);
/** A duration parameter (Prometheus duration or float seconds) in ns; dflt when absent. */
int ps_param_duration(const ps_params_t *p, const char *name, int64_t dflt, int64_t *out, ps_err_t *err);

/** The Retry-After (seconds) of every 429 and 503 answer that does not set its own. */
#define PS_HTTP_RETRY_AFTER "1"
/** Text answers of at least this many bytes are gzipped for a client that accepts it. */
#define PS_GZIP_MIN_BYTES 1024
#define PS_GZIP_LEVEL 6 /* zlib's default, as Go's gzip writer in Prometheus' answers */

typedef struct ps_header {
    const char *name, *value; /* NUL-terminated; a request's names in lower case, an answer's as sent */
    size_t nlen, vlen;
} ps_header_t;

#define PS_ANSWER_MAX_HEADERS 12 /* a route sets at most 7 (a profile query's error) */

/** An answer, as a task's run leaves it for the loop to send. */
typedef struct ps_answer {
    int status; /* 0: not answered yet */
    const char *content_type;
    ps_header_t headers[PS_ANSWER_MAX_HEADERS]; /* in the order they go out, Content-Type last */
    uint32_t nheaders;
    ps_buf_t body;
    ps_arena_t *arena; /* the header strings */
    bool gzip_ok;      /* the client accepts gzip */
} ps_answer_t;

/** An empty answer whose strings go to arena. */
void ps_answer_init(ps_answer_t *a, ps_arena_t *arena, bool gzip_ok);
void ps_answer_dispose(ps_answer_t *a);
/** Adds a response header (copied) before the answer is set. */
void ps_answer_header(ps_answer_t *a, const char *name, const char *value, size_t vlen);
/** The value of response header name (lower case) already added, or NULL. */
const char *ps_answer_get_header(const ps_answer_t *a, const char *name);
/** Sets the answer: status, content type and body (copied). A 429 or 503 gets Retry-After; a text
 *  answer of PS_GZIP_MIN_BYTES and more gets Vary: Accept-Encoding and is gzipped when the client
 *  accepts it (unless a Content-Encoding or Vary header was added: the handler chose). A second
 *  answer is ignored: the first stands. */
void ps_answer_set(ps_answer_t *a, int status, const char *content_type, const void *body, size_t len);
/** ps_answer_set of body's bytes, taking body's buffer: it is left empty (the answer's body when sent as
 *  it is, else freed), so the caller has nothing to free. */
void ps_answer_take(ps_answer_t *a, int status, const char *content_type, ps_buf_t *body);
/** An API's error shape: answers a with the error code (a PS_E* of core/err.h) and msg. */
typedef void (*ps_fail_fn)(ps_answer_t *a, int code, const char *msg);
/** Prometheus' error JSON {"status":"error","errorType":...,"error":msg}, the status from code
 *  (timeout and canceled have their own errorType). The routes' default shape. */
void ps_answer_prom_error(ps_answer_t *a, int code, const char *msg);
/** The same with an explicit HTTP status. */
void ps_answer_prom_error_status(ps_answer_t *a, int status, const char *msg);
/** errorType for an HTTP status (bad_data, execution, internal, unavailable, not_found, ...). */
const char *ps_http_error_type(int status);
/** Plain text "msg\n" with ps_err_http_status(code) (remote read's errors). */
void ps_answer_text_error(ps_answer_t *a, int code, const char *msg);
/** Whether a content type is text (or Connect's binary) that ps_answer_set gzips. */
bool ps_answer_compressible(const char *content_type);
/** The one representation rule of both senders (ps_answer_set, http.c's ps_http_send): a text
 *  answer of PS_GZIP_MIN_BYTES and more that the handler did not negotiate itself (negotiated: it
 *  set Content-Encoding or Vary) says Vary: Accept-Encoding (*vary), and, when the client accepts
 *  gzip (gzip_ok) and it is not a 304 or 204, is gzipped into gz. True when gz holds the body to
 *  send (Content-Encoding: gzip): only when that is smaller. */
bool ps_answer_gzip(int status, const char *content_type, const void *body, size_t len, bool negotiated,
                    bool gzip_ok, bool *vary, ps_buf_t *gz);

typedef struct ps_task ps_task_t;
/** A route's work off the loop: fills t->ans (or holds t and has t->finish fill it). Returns 0. */
typedef int (*ps_task_run_fn)(ps_task_t *t);

struct ps_task {
    ps_server_t *srv;
    ps_arena_t *arena; /* the request's parts and what the run allocates; freed with the task */
    ps_fail_fn fail;   /* the error shape of the route's API (the route table's) */
    /* the request, as parsed on the loop (read-only to run) */
    const char *path; /* normalized, without the query string, NUL-terminated */
    size_t path_len;
    const char *method;
    struct timeval begin; /* the request's arrival (its first byte) */
    ps_params_t query;  /* the query string's parameters */
    ps_params_t params; /* those and a form-encoded body's */
    int query_ret, params_ret; /* != 0: parsing them failed with query_err, params_err */
    ps_err_t query_err, params_err;
    ps_header_t *headers; /* the request's headers, names in lower case */
    size_t nheaders;
    const char *body; /* NULL: no body */
    size_t body_len;
    /* the answer */
    ps_answer_t ans;
    /* hand-offs (ps_task_hold): finish(t) on the loop once released, before the answer is sent;
     * it runs also when the client went away */
    atomic_int holds;
    void (*finish)(ps_task_t *t);
    void *finish_arg;
    void (*on_released)(ps_task_t *t); /* the runner's: the last ps_task_release (any thread) */
    void *runner;                      /* the runner's */
};

/** The query string's parameters (with_body: and a form body's), parsed on the loop; the parse's
 *  error (PS_EINVAL on a bad %-escape) as ps_http_params gave it. */
int ps_task_params(ps_task_t *t, bool with_body, ps_params_t *out, ps_err_t *err);
/** The value of request header name (lower case), the first of that name; NULL when absent. */
const char *ps_task_header(const ps_task_t *t, const char *name, size_t *len);
/** ps_answer_set, ps_answer_header and errors on t's answer. */
void ps_task_send(ps_task_t *t, int status, const char *content_type, const void *body, size_t len);
void ps_task_add_header(ps_task_t *t, const char *name, const char *value, size_t vlen);
/** Prometheus-style error JSON; status from code (timeout and canceled have their errorType). */
void ps_task_error(ps_task_t *t, int code, const char *msg);
/** Same with an explicit HTTP status. */
void ps_task_error_status(ps_task_t *t, int status, const char *msg);
/** An error in the shape of t's API (t->fail). */
void ps_task_fail(ps_task_t *t, int code, const char *msg);
/** Keeps t's answer waiting for another thread's work; that thread calls ps_task_release. */
void ps_task_hold(ps_task_t *t);
/** From any thread: the last release hands t back to the loop (t->finish, then the answer). */
void ps_task_release(ps_task_t *t);

/** The context of a read request: its task, the parameters, an arena, a read snapshot, an error,
 *  a body. */
typedef struct ps_qctx {
    ps_task_t *t;
    ps_server_t *srv;
    ps_arena_t arena;
    ps_params_t params;
    ps_reader_t *reader;
    ps_err_t err;
    ps_buf_t out;
} ps_qctx_t;

/** Takes the parameters (query string and form body) and opens a read snapshot. */
int ps_qctx_begin(ps_qctx_t *c, ps_task_t *t);
/** Answers the error (Prometheus' JSON) if ret != 0, then releases everything. Returns 0. */
int ps_qctx_finish(ps_qctx_t *c, int ret);

#endif
