/*
 * qpool.h - the worker pools: threads that run jobs off the event loops (the query pool,
 * --query.max-concurrency threads; the decode pool, --ingest.decode-threads). A pool only queues
 * jobs, runs them on its threads and hands each back (j->ran); what a job is for a request
 * (a route's task, task.h) and how its answer reaches the loop is run.c's. qpool.c tells how.
 */
#ifndef PS_WEB_QPOOL_H
#define PS_WEB_QPOOL_H

#include <stdatomic.h>
#include <stdbool.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/thread.h"
#include "server.h"
#include "task.h"

/** Queries that may wait for a thread; more are refused with 503 at once. */
#define PS_QPOOL_MAX_QUEUE 1024

/** The query threads run SCHED_IDLE (else at this nice value; the others keep SCHED_OTHER, nice 0):
 *  the scheduler gives a runnable HTTP or writer thread the CPU before them. */
#define PS_QPOOL_NICE 19
/** The nice value of the decode threads (--ingest.decode-threads): below the loops and the writer. */
#define PS_DECODE_NICE 5

typedef struct ps_qpool ps_qpool_t;

/** A job: a route's task (run(task) under the query budget on the query pool), or a plain piece
 *  of work (fn(arg), no budget: its own). Filled by the caller, which owns it. */
typedef struct ps_qjob ps_qjob_t;
struct ps_qjob {
    ps_qjob_t *next;
    ps_task_t *task;
    ps_task_run_fn run;
    void (*fn)(void *arg);
    void *arg;
    /** On the pool thread, once run or fn returned (or the job was dropped: canceled before it
     *  ran, or the pool stopped): hands the job back; the pool does not touch it afterwards. */
    void (*ran)(ps_qjob_t *j);
    size_t bytes;        /* the decode pool: the body's bytes (its queue is bounded by them) */
    int64_t deadline;    /* ps_time_mono; 0: none. Passed in the queue: 503 without running */
    atomic_int cancel;   /* the client went away: dropped, or stopped at the budget's next check */
    atomic_int shutdown; /* canceled by ps_qpool_stop */
};

/** Starts nthreads query threads for s (s->qpool is the caller's to set). NULL on failure. */
ps_qpool_t *ps_qpool_start(ps_server_t *s, uint32_t nthreads, ps_err_t *err);
/** Default bound of the decode pool's queue (bytes of bodies waiting). */
#define PS_DPOOL_DEFAULT_BYTES (32u << 20)
/** Starts the decode pool (qpool.c tells): nthreads threads for PS_ROUTE_DECODE writes, at most
 *  max_bytes of bodies waiting (0: PS_DPOOL_DEFAULT_BYTES); s->dpool is the caller's to set. */
ps_qpool_t *ps_qpool_start_decode(ps_server_t *s, uint32_t nthreads, size_t max_bytes, ps_err_t *err);
/** Whether p is a decode pool. */
bool ps_qpool_is_decode(const ps_qpool_t *p);
/** Queues j (oldest first). 0; or, nothing queued, PS_EUNAVAIL when p stops or (the query pool)
 *  its queue is full, PS_EOVERLOAD when the decode pool's bytes are (msg says which, in words for
 *  the client). A piece (a part of a request already admitted) is never refused for a full queue
 *  and not counted in profstore_queries_total. Any thread. */
int ps_qpool_submit(ps_qpool_t *p, ps_qjob_t *j, bool piece, char *msg, size_t size);
/** Threads of a pool one job may use at once (ps_qpool_par), itself included. */
#define PS_QPOOL_PAR_MAX 8
/** For a job running on a thread of p: fills par so that ps_par_for lends it p's idle threads
 *  (helpers queue before the jobs waiting; a helper that starts after the work is done returns at
 *  once). False (par untouched: run alone) when p is NULL, has one thread, or this is not a pool
 *  thread. */
bool ps_qpool_par(ps_qpool_t *p, ps_par_t *par);
/** Cancels what is queued or running and joins the threads; every job is handed back (j->ran).
 *  NULL is a no-op. */
void ps_qpool_stop(ps_qpool_t *p);
/** The pool's gauges and counters, in the text exposition format (for /metrics). */
void ps_qpool_metrics(ps_qpool_t *p, ps_buf_t *b);

#endif
