/*
 * run.c - a route's task from the loop and back (see run.h).
 *
 * On the loop, ps_run_task parses the request into a task (ps_http_task: path, parameters,
 * headers and body in the task's arena, so the task reads nothing of the request afterwards)
 * and wraps it in a job, tied to the request twice: by a ps_async_t (the job comes back to the
 * request's loop, where the answer is sent, or dropped when the request died meanwhile) and by a
 * link in the request's pool whose dispose sets the job's cancel flag (the client went away:
 * HTTP/1 connection closed, HTTP/2 RST_STREAM). The pool (qpool.c) runs the task; the task holds
 * itself while another thread (the writer) works for it (ps_task_hold); the last release sends the
 * job back to the loop, where task->finish (if any) makes the answer and ps_http_send_answer sends
 * it. Without the pool the task runs in place, the same way.
 *
 * The answers the runner makes itself are in the error shape of the route's API (task->fail, the
 * route table's): the queue is full (503; the decode pool's bytes: PS_EOVERLOAD, 429), the server
 * is shutting down (503), the task ended without an answer (500).
 */
#include "run.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

#include "core/timeutil.h"
#include "http.h"
#include "internal.h"

typedef struct rjob rjob_t;

typedef struct cancel_link {
    rjob_t *j;
} cancel_link_t;

/* An HTTP/1 connection read while its request is handled (loop thread only; in its job). */
typedef struct watch {
    struct watch *next, **prev; /* *prev == this while listed */
    h2o_socket_t *sock;
    rjob_t *j;
} watch_t;

struct rjob {
    ps_async_t async; /* first */
    ps_qjob_t q;
    ps_task_t *task;
    void *loop;
    bool decode;
    ps_writer_t *decoding; /* a write counted by ps_writer_decoding until it submits or its run ends */
    ps_task_run_fn run;    /* the route's run (decoding: run_decoding calls it) */
    cancel_link_t *link;
    watch_t *watch;   /* &w while listed (loop thread only) */
    watch_t w;
    bool client_gone; /* the watch saw the connection's end (loop thread only) */
    /* a piece (ps_run_piece): done(arg, req) on the request's loop */
    void (*piece_done)(void *arg, h2o_req_t *req);
};

static _Thread_local watch_t *watches; /* of this loop thread */

/* ---- the client's end (loop thread) ----
 *
 * HTTP/2: a stream reset (or the connection's end) disposes the request, and with it the link
 * that sets the cancel flag. HTTP/1: h2o stops reading a connection while its request is being
 * processed, so a client that closes is not seen until the answer is written. While the query
 * runs we read the connection ourselves (h2o_socket_read_start with our callback): its end (EOF or
 * an error, a half-close included) cancels the query; bytes of a pipelined next request stay in
 * the socket's input buffer for h2o (up to 64 KiB, then we stop reading). Before the answer is
 * sent, reading is stopped again and h2o resumes it as always after a response; after a
 * connection's end the answer closes it (not persistent), so requests pipelined behind the
 * canceled one are never run.
 *
 * A write (the decode pool) is read the same way, but its connection's end cancels nothing (a
 * write runs to its end; its client's end is seen when it is answered, as before): reading on
 * keeps the socket's read interest in epoll, where h2o's stop and restart around every request
 * cost an EPOLL_CTL_DEL and an EPOLL_CTL_ADD (stopped and started again within one turn of the
 * loop, h2o changes nothing in epoll). */

#define WATCH_MAX_INPUT 65536

static void unwatch(rjob_t *j)
{
    watch_t *w = j->watch;
    if (w == NULL)
        return;
    *w->prev = w->next;
    if (w->next != NULL)
        w->next->prev = w->prev;
    j->watch = NULL;
}

static void on_client_read(h2o_socket_t *sock, const char *err)
{
    watch_t *w = watches;
    while (w != NULL && w->sock != sock)
        w = w->next;
    if (w == NULL) { /* not ours any more: leave the socket alone */
        h2o_socket_read_stop(sock);
        return;
    }
    if (err != NULL) {
        if (!w->j->decode) {
            atomic_store(&w->j->q.cancel, 1);
            w->j->client_gone = true;
        }
        h2o_socket_read_stop(sock);
    } else if (sock->input->size > WATCH_MAX_INPUT) {
        h2o_socket_read_stop(sock);
    }
}

static void watch(rjob_t *j, h2o_req_t *req)
{
    if (req->version >= 0x200 || req->conn->callbacks == NULL || req->conn->callbacks->get_socket == NULL)
        return;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || h2o_socket_is_reading(sock))
        return; /* h2o reads it and sees its end itself */
    watch_t *w = &j->w;
    w->sock = sock;
    w->j = j;
    w->next = watches;
    w->prev = &watches;
    if (watches != NULL)
        watches->prev = &w->next;
    watches = w;
    j->watch = w;
    h2o_socket_read_start(sock, on_client_read);
}

static void stop_watching(rjob_t *j)
{
    if (j->watch != NULL) {
        h2o_socket_t *sock = j->watch->sock;
        unwatch(j);
        if (h2o_socket_is_reading(sock))
            h2o_socket_read_stop(sock);
    }
}

static void on_cancel_dispose(void *p)
{
    cancel_link_t *l = p;
    if (l->j != NULL) {
        atomic_store(&l->j->q.cancel, 1);
        unwatch(l->j); /* the connection goes: its socket is not to be touched again */
    }
}

/* ---- completion (loop thread) ---- */

static void job_free(rjob_t *j)
{
    unwatch(j); /* listed in j */
    if (j->task != NULL)
        ps_http_task_free(j->task, j->loop);
    free(j);
}

/* The task is done (its run and every hand-off): its answer to req, NULL when the request died. */
static void deliver(rjob_t *j, h2o_req_t *req)
{
    ps_task_t *t = j->task;
    if (req != NULL && j->link != NULL) {
        j->link->j = NULL;
        stop_watching(j);
        if (j->client_gone)
            req->http1_is_persistent = 0; /* close after this answer: pipelined requests behind it die too */
    }
    /* the run's own answer, counted even when its client went away (a 499 of a canceled query) */
    bool ran = t->finish == NULL && !atomic_load(&j->q.shutdown) && t->ans.status != 0;
    if (t->finish != NULL) { /* handed to the writer: its answer is finish's */
        t->finish(t);
    } else if (atomic_load(&j->q.shutdown)) {
        ps_buf_dispose(&t->ans.body);
        ps_answer_init(&t->ans, t->arena, t->ans.gzip_ok);
        ps_task_fail(t, PS_EUNAVAIL, j->decode ? "profstore is shutting down: the write was not decoded"
                                               : "profstore is shutting down: the query was stopped");
    } else if (t->ans.status == 0 && req != NULL) {
        ps_task_fail(t, PS_EINTERNAL, "the query ended without an answer");
    }
    if (req != NULL)
        ps_http_send_answer(req, &t->ans);
    else if (ran)
        ps_http_account_task(t, t->ans.status);
    job_free(j);
}

static void on_done(ps_async_t *a, h2o_req_t *req)
{
    rjob_t *j = (rjob_t *)a;
    if (j->piece_done != NULL) {
        j->piece_done(j->q.arg, req);
        free(j);
        return;
    }
    deliver(j, req);
}

/* the task's last hold went (any thread): back to the loop */
static void on_released(ps_task_t *t)
{
    rjob_t *j = t->runner;
    ps_async_complete(&j->async);
}

/* on the pool thread, once the run returned (or the job was dropped) */
static void on_ran(ps_qjob_t *q)
{
    rjob_t *j = (rjob_t *)((char *)q - offsetof(rjob_t, q));
    if (j->decoding != NULL) /* dropped before it ran: the writer need not wait for it */
        ps_writer_decoding(j->decoding, -1);
    if (j->task != NULL)
        ps_task_release(j->task); /* the run's own hold */
    else
        ps_async_complete(&j->async);
}

/* a counted write's run, on the decode thread: its first ps_writer_submit ends its count (in the
 * same step that queues it, so the writer never waits for the write it already has), else the end
 * of the run (nothing submitted: it failed) */
static int run_decoding(ps_task_t *t)
{
    rjob_t *j = t->runner;
    ps_writer_decode_begin(j->decoding);
    j->decoding = NULL;
    int rc = j->run(t);
    ps_writer_decode_end();
    return rc;
}

/* ---- hand-off (loop thread) ---- */

static int64_t deadline_of(h2o_req_t *req, int64_t timeout)
{
    /* from the request's arrival (its first byte), as the client counts it */
    struct timeval now, *t0 = h2o_timeval_is_null(&req->timestamps.request_begin_at) ? &req->processed_at.at
                                                                                       : &req->timestamps.request_begin_at;
    gettimeofday(&now, NULL);
    int64_t waited = ((int64_t)now.tv_sec - t0->tv_sec) * PS_NS_PER_S + ((int64_t)now.tv_usec - t0->tv_usec) * 1000;
    if (waited < 0 || h2o_timeval_is_null(t0))
        waited = 0;
    return ps_time_mono() + timeout - waited;
}

int ps_run_task(h2o_req_t *req, unsigned cls, ps_task_run_fn run, ps_fail_fn fail)
{
    ps_server_t *s = ps_http_server(req);
    ps_qpool_t *p = cls & PS_ROUTE_DECODE ? s->dpool : cls & PS_ROUTE_POOL ? s->qpool : NULL;
    rjob_t *j = ps_xcalloc(1, sizeof(*j));
    j->loop = ps_loop_of(req->conn->ctx);
    j->task = ps_http_task(req, fail);
    ps_task_t *t = j->task;
    t->runner = j;
    t->on_released = on_released;
    atomic_init(&t->holds, 1); /* the run's */
    j->q.task = t;
    j->q.run = run;
    j->q.ran = on_ran;
    atomic_init(&j->q.cancel, 0);
    atomic_init(&j->q.shutdown, 0);
    ps_async_init(&j->async, req, on_done);
    /* a small write (a remote-write request of a few samples: snappy expands a body at most ~21
     * times) is decoded here: its decode costs less than the hand-off to a decode thread and that
     * thread's to the writer, which a lone request waits for (one thread wake-up each) */
    bool here = p == NULL || ((cls & PS_ROUTE_SMALL_HERE) && req->entity.len <= PS_RUN_HERE_MAX);
    if (here) { /* in place */
        j->decode = p != NULL;
        run(t);
        if (atomic_fetch_sub(&t->holds, 1) == 1) { /* nothing handed off: answered now */
            ps_async_cancel(&j->async);
            deliver(j, req);
        } else if (p != NULL) { /* with the writer: its client's end seen, read on, as a pool write's */
            j->link = h2o_mem_alloc_shared(&req->pool, sizeof(*j->link), on_cancel_dispose);
            j->link->j = j;
            watch(j, req);
        }
        return 0;
    }
    j->decode = ps_qpool_is_decode(p);
    j->q.bytes = req->entity.base != NULL ? req->entity.len : 0;
    if (!j->decode && s->opts.query_timeout > 0)
        j->q.deadline = deadline_of(req, s->opts.query_timeout);
    /* a write to decode: the writer waits for it rather than commit without it (not for one that
     * writes nothing through the writer) */
    j->decoding = j->decode && !(cls & PS_ROUTE_NO_WRITER) ? s->writer : NULL;
    ps_writer_decoding(j->decoding, +1);
    j->run = run;
    if (j->decoding != NULL)
        j->q.run = run_decoding;
    char msg[200];
    int rc = ps_qpool_submit(p, &j->q, false, msg, sizeof(msg));
    if (rc != 0) {
        ps_writer_decoding(j->decoding, -1);
        ps_async_cancel(&j->async);
        ps_task_fail(t, rc, msg);
        ps_http_send_answer(req, &t->ans);
        job_free(j);
        return 0;
    }
    j->link = h2o_mem_alloc_shared(&req->pool, sizeof(*j->link), on_cancel_dispose);
    j->link->j = j;
    watch(j, req);
    return 0;
}

bool ps_run_piece(ps_qpool_t *p, h2o_req_t *req, void (*fn)(void *arg), void (*done)(void *arg, h2o_req_t *req),
                  void *arg)
{
    if (p == NULL)
        return false;
    rjob_t *j = ps_xcalloc(1, sizeof(*j));
    j->q.fn = fn;
    j->q.arg = arg;
    j->q.ran = on_ran;
    j->piece_done = done;
    atomic_init(&j->q.cancel, 0);
    atomic_init(&j->q.shutdown, 0);
    ps_async_init(&j->async, req, on_done);
    char msg[200];
    if (ps_qpool_submit(p, &j->q, true, msg, sizeof(msg)) != 0) {
        ps_async_cancel(&j->async);
        free(j);
        return false;
    }
    return true;
}
