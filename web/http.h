/*
 * http.h - the loop's side of a request: parameters from the query string and form bodies, a
 * route's parse into a task and the sending of its answer (task.h), JSON and error responses in
 * Prometheus' envelope for the handlers that run on the loop, async completions.
 */
#ifndef PS_WEB_HTTP_H
#define PS_WEB_HTTP_H

#include <h2o.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"
#include "server.h"
#include "task.h"

/** Parses the query string, and a form-encoded body for POST, into params (strings from arena,
 *  percent-decoded and NUL-terminated). PS_EINVAL on a bad %-escape. */
int ps_http_params(h2o_req_t *req, bool with_body, ps_arena_t *arena, ps_params_t *out, ps_err_t *err);

/** A route's parse on the loop (task.h): a task of req's path, parameters, headers and body, its
 *  arena from the loop's pool; fail is the error shape of the route's API (NULL: Prometheus'). */
ps_task_t *ps_http_task(h2o_req_t *req, ps_fail_fn fail);
/** Frees t (its arena back to the pool of loop, the loop it was parsed on). Loop thread. */
void ps_http_task_free(ps_task_t *t, void *loop);
/** Counts t's answer with status in the request stats, as ps_http_send_answer does, for a task
 *  whose request died before its answer could be sent. */
void ps_http_account_task(const ps_task_t *t, int status);
/** Sends an answer (task.h) as it is: counted in the request stats, its headers, its body. A large
 *  body is sent from its own buffer, which the request takes (a's body is left empty). */
void ps_http_send_answer(h2o_req_t *req, ps_answer_t *a);

/** Sends body with status and content type (copied). A 429 or 503 gets Retry-After. */
void ps_http_send(h2o_req_t *req, int status, const char *content_type, const void *body, size_t len);
/** Closes the envelope j writes into b (ps_json_envelope), sends b as application/json with status,
 *  and disposes b. */
void ps_http_send_envelope(h2o_req_t *req, int status, ps_json_t *j, ps_buf_t *b);
/** Starts an answer of unknown length (chunked) whose body gen sends with h2o_send, from its proceed
 *  callback on this request's loop thread. Counted in the request stats now, with the time to its
 *  first byte. */
void ps_http_start(h2o_req_t *req, int status, const char *content_type, h2o_generator_t *gen);
/** Prometheus-style error JSON: {"status":"error","errorType":...,"error":msg}; status from code. */
void ps_http_error(h2o_req_t *req, int code, const char *msg);
/** Same with an explicit HTTP status. */
/** The value of request header name (lower case), the first of that name; {NULL, 0} when absent. */
h2o_iovec_t ps_http_header(h2o_req_t *req, const char *name);
void ps_http_error_status(h2o_req_t *req, int status, const char *msg);
/** The message of a 413 for a body over --max-body-size (max bytes), into buf: its length len when
 *  known (total), else len as the bytes that arrived so far (a chunked body, still arriving). */
void ps_http_body_limit_msg(char *buf, size_t n, size_t len, bool total, size_t max);

/** The server of a request. */
ps_server_t *ps_http_server(h2o_req_t *req);

/** An arena from the request's loop pool (call on the loop thread). */
ps_arena_t *ps_loop_arena_get(h2o_req_t *req);
/** Gives an arena back to the pool of loop (the loop of a request: ps_async_t.loop). */
void ps_loop_arena_put(void *loop, ps_arena_t *a);

/* Asynchronous completion: work done on another thread, answered on the request's loop. */
typedef struct ps_async ps_async_t;
typedef void (*ps_async_cb)(ps_async_t *a, h2o_req_t *req); /* req is NULL if the client went away */
struct ps_async {
    h2o_multithread_message_t msg;
    h2o_req_t *req;
    void *link;
    void *loop;
    ps_async_cb on_complete;
    ps_async_t *batch_next; /* the others of its loop sent with it (ps_server_answers) */
};
/** Ties a to req: if the request dies first, a->req becomes NULL. Call on the loop thread. */
void ps_async_init(ps_async_t *a, h2o_req_t *req, ps_async_cb cb);
/** Unties a from its request again, for work that was never handed to another thread (the
 *  request is answered at once instead). Call on the loop thread, before freeing a. */
void ps_async_cancel(ps_async_t *a);
/** From any thread: schedules a->on_complete on the request's loop (between ps_server_answers'
 *  begin and end on this thread: at the end, with the others of its loop). */
void ps_async_complete(ps_async_t *a);

#endif
