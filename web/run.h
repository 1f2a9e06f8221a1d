/*
 * run.h - a route's task from the loop and back (task.h): parse the request into a task, run it
 * on a pool (qpool.h) or in place, send its answer on the request's loop. run.c tells how the
 * request is watched meanwhile.
 */
#ifndef PS_WEB_RUN_H
#define PS_WEB_RUN_H

#include <h2o.h>
#include <stdbool.h>

#include "qpool.h"
#include "task.h"

/** The largest body of a PS_ROUTE_SMALL_HERE write decoded on its loop (a remote-write request of
 *  ~10 samples has ~1.4 KB; decoded, at most ~21 times that) */
#define PS_RUN_HERE_MAX 2048

/** Runs route run for req: its task (ps_http_task, with the error shape fail) on the query pool
 *  when cls has PS_ROUTE_POOL, on the decode pool when it has PS_ROUTE_DECODE (when that pool
 *  runs; with PS_ROUTE_SMALL_HERE only a body over PS_RUN_HERE_MAX bytes), else in place; the
 *  answer is sent on req's loop (none when the client went away). Returns 0 (as a handler). Call
 *  on req's loop thread. */
int ps_run_task(h2o_req_t *req, unsigned cls, ps_task_run_fn run, ps_fail_fn fail);
/** A piece of a request's work off the loop: fn(arg) on a thread of p (at its priority, without a
 *  budget: fn installs its own), then done(arg, req) on req's loop, req NULL when the request died
 *  meanwhile (then done frees what arg holds; fn may still have been running when it died, so
 *  nothing fn touches may live in req's pool). Pieces queue with the tasks, oldest first. False
 *  (nothing queued) when p is NULL or stopping: run it in place. Call on req's loop thread. */
bool ps_run_piece(ps_qpool_t *p, h2o_req_t *req, void (*fn)(void *arg), void (*done)(void *arg, h2o_req_t *req),
                  void *arg);

#endif
