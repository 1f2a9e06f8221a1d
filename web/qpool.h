/*
 * qpool.h - the query worker pool: routes of class PS_ROUTE_POOL run on threads of their own
 * (--query.max-concurrency of them, the rest queued), under a query budget (core/budget.h), and
 * stop when their client goes away or --query.timeout passes. qpool.c tells how.
 */
#ifndef PS_WEB_QPOOL_H
#define PS_WEB_QPOOL_H

#include <h2o.h>
#include <stdbool.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/thread.h"
#include "http.h"
#include "server.h"

/** Queries that may wait for a thread; more are refused with 503 at once. */
#define PS_QPOOL_MAX_QUEUE 1024

/** The query threads run SCHED_IDLE (else at this nice value; the others keep SCHED_OTHER, nice 0):
 *  the scheduler gives a runnable HTTP or writer thread the CPU before them. */
#define PS_QPOOL_NICE 19
/** The nice value of the decode threads (--ingest.decode-threads): below the loops and the writer. */
#define PS_DECODE_NICE 5

typedef struct ps_qpool ps_qpool_t;

/** Starts nthreads query threads for s (s->qpool is the caller's to set). NULL on failure. */
ps_qpool_t *ps_qpool_start(ps_server_t *s, uint32_t nthreads, ps_err_t *err);
/** Default bound of the decode pool's queue (bytes of bodies waiting). */
#define PS_DPOOL_DEFAULT_BYTES (32u << 20)
/** Starts the decode pool (qpool.c tells): nthreads threads for PS_ROUTE_DECODE writes, at most
 *  max_bytes of bodies waiting (0: PS_DPOOL_DEFAULT_BYTES); s->dpool is the caller's to set. */
ps_qpool_t *ps_qpool_start_decode(ps_server_t *s, uint32_t nthreads, size_t max_bytes, ps_err_t *err);
/** For ps_async_init: when req is the clone a pool thread runs, defers a (its completion goes to
 *  the real request's loop, and cb gets the real request) and returns true. */
bool ps_qpool_defer(ps_async_t *a, h2o_req_t *req, ps_async_cb cb);
/** For ps_async_cancel: undoes ps_qpool_defer of a (returns true), false if a was not deferred. */
bool ps_qpool_undefer(ps_async_t *a);
/** Threads of a pool one job may use at once (ps_qpool_par), itself included. */
#define PS_QPOOL_PAR_MAX 8
/** For a job running on a thread of p: fills par so that ps_par_for lends it p's idle threads
 *  (helpers queue before the jobs waiting; a helper that starts after the work is done returns at
 *  once). False (par untouched: run alone) when p is NULL, has one thread, or this is not a pool
 *  thread. */
bool ps_qpool_par(ps_qpool_t *p, ps_par_t *par);
/** Cancels what is queued or running and joins the threads; their answers go to the loops, which
 *  must still run. NULL is a no-op. */
void ps_qpool_stop(ps_qpool_t *p);
/** Runs fn(req) on the query pool when cls has PS_ROUTE_POOL, on the decode pool when it has
 *  PS_ROUTE_DECODE (when that pool runs), else at once. Returns 0
 *  (as a handler). Call on the request's loop thread. */
int ps_qpool_run(h2o_req_t *req, unsigned cls, int (*fn)(h2o_req_t *req));
/** A piece of a request's work off the loop: fn(arg) on a thread of p (at its priority, without a
 *  clone or a budget: fn installs its own), then done(arg, req) on req's loop, req NULL when the
 *  request died meanwhile (then done frees what arg holds; fn may still have been running when
 *  it died, so nothing fn touches may live in req's pool). Tasks queue with the jobs, oldest first.
 *  False (nothing queued) when p is NULL or stopping, or req is a clone: run it in place. Call on
 *  req's loop thread. */
bool ps_qpool_task(ps_qpool_t *p, h2o_req_t *req, void (*fn)(void *arg), void (*done)(void *arg, h2o_req_t *req),
                   void *arg);
/** For ps_http_send: when req is the clone a query thread runs, keeps the answer (req->res and
 *  body) for the loop to send and returns true; false for a real request. */
bool ps_qpool_capture(h2o_req_t *req, const void *body, size_t len);
/** Whether req is the clone of a query thread. */
bool ps_qpool_is_clone(h2o_req_t *req);
/** The pool's gauges and counters, in the text exposition format (for /metrics). */
void ps_qpool_metrics(ps_qpool_t *p, ps_buf_t *b);

#endif
