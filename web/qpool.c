/*
 * qpool.c - the worker pools (see qpool.h): queries run on --query.max-concurrency threads of
 * their own, never on the event loops that decode pushes and answer /-/healthy.
 *
 * A job is a route's task (task.h: its request parsed on the loop, its answer left in the task)
 * or a plain piece of work; run.c makes them and takes them back. The pool never sees a request.
 *
 * Queueing: at most --query.max-concurrency queries run; the others wait, oldest first, up to
 * PS_QPOOL_MAX_QUEUE; beyond that a query is refused at once (503, in the error shape of its API,
 * which run.c takes from the route). The deadline (--query.timeout) counts from the request's
 * arrival, queue included: a task whose deadline passed in the queue is answered 503 "query timed
 * out in query queue" (Prometheus' words) without running; one whose client went away is dropped
 * without running. A query runs under a query budget (core/budget.h: the job's deadline, cancel
 * flag, --query.max-samples, --query.max-regex-steps); --query.cpus of the threads compute at
 * once (core/thread.h CPU slots), the others wait their turn.
 *
 * The decode pool (--ingest.decode-threads) is a second pool of the same kind for the writes
 * (PS_ROUTE_DECODE: profile pushes, /ingest, Connect push, remote write): their gunzip, snappy,
 * protobuf decoding and ingest build run on its threads (nice PS_DECODE_NICE, below the loops and
 * the writer; no query budget or deadline), so the loops only parse HTTP and /-/healthy is
 * answered at once under a push flood. Its queue is bounded by the bytes of the bodies waiting
 * (--ingest.decode-queue-max-bytes, at least one always admitted); past it a write is refused at
 * once (PS_EOVERLOAD: 429 with Retry-After; remote write 503, as the write queue's refusals). A
 * task that hands its write to the writer holds itself (ps_task_hold) until the writer is done: a
 * 200 still comes only after the group commit.
 */
#include "qpool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "core/budget.h"
#include "core/metrics.h"
#include "core/thread.h"
#include "core/timeutil.h"

struct ps_qpool {
    ps_server_t *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ps_qjob_t *head, *tail;
    uint32_t queued, running, nthreads;
    bool stop;
    pthread_t *threads;
    ps_qjob_t **cur; /* the job each worker runs (under mu), for ps_qpool_stop */
    ps_counter_t total, canceled, timed_out, rejected;
    bool decode;                    /* the decode pool: normal priority, no budget, bounded by bytes */
    size_t max_bytes, queued_bytes; /* the decode pool's bound, the bodies waiting (under mu) */
    struct qhelp *help;             /* ps_qpool_par's helpers waiting (under mu): taken before the jobs */
    ps_cpu_slots_t *slots;          /* the query pool: --query.cpus of its threads compute at once */
};

/* A helper lent to a job's ps_par_for: no request, no answer. */
typedef struct qhelp {
    struct qhelp *next;
    void (*fn)(void *arg);
    void *arg;
} qhelp_t;

static _Thread_local ps_qpool_t *this_pool; /* the pool of this thread, NULL off the pools */

bool ps_qpool_is_decode(const ps_qpool_t *p)
{
    return p != NULL && p->decode;
}

/* Runs j on this thread of p. */
static void run_job(ps_qpool_t *p, ps_qjob_t *j)
{
    if (j->task == NULL) { /* a piece: no budget, the piece's own */
        j->fn(j->arg);
        return;
    }
    ps_task_t *t = j->task;
    if (atomic_load(&j->cancel)) {
        /* the client went away while the job waited (or the pool stops): nothing to do */
    } else if (p->decode) {
        j->run(t);
    } else if (j->deadline != 0 && ps_time_mono() > j->deadline) {
        char d[32], msg[128];
        ps_format_duration(p->srv->opts.query_timeout, d, sizeof(d));
        snprintf(msg, sizeof(msg), "query timed out in query queue (the limit is %s, --query.timeout)", d);
        ps_task_fail(t, PS_ETIMEOUT, msg);
    } else {
        ps_budget_t b;
        ps_budget_init(&b, 0, p->srv->opts.query_max_samples, p->srv->opts.query_max_regex_steps, &j->cancel);
        b.deadline = j->deadline;
        b.timeout = p->srv->opts.query_timeout;
        ps_budget_set(&b);
        j->run(t);
        ps_budget_set(NULL);
    }
    int status = t->ans.status;
    if (atomic_load(&j->shutdown))
        ; /* not the client's doing */
    else if (atomic_load(&j->cancel))
        ps_counter_add(&p->canceled, 1);
    else if ((status == 503 || status == 504) && j->deadline != 0 && ps_time_mono() > j->deadline)
        ps_counter_add(&p->timed_out, 1);
}

typedef struct worker_arg {
    ps_qpool_t *p;
    uint32_t i;
} worker_arg_t;

static void *worker_main(void *arg)
{
    worker_arg_t *wa = arg;
    ps_qpool_t *p = wa->p;
    uint32_t wa_i = wa->i;
    free(wa);
    this_pool = p;
    ps_thread_name("%s-%u", p->decode ? "decode" : "query", (unsigned)wa_i);
    if (p->decode) {
        /* a little below the loops and the writer: under a push flood on a busy host every decode
         * thread always has work, and at equal weight the loops (which need little CPU: parse,
         * refuse with 429, answer /-/healthy) waited behind them for a CPU, runnable but using ~8%
         * of one each: bench/overload.py at 10x on 2 shared cores, nice 0, three runs: /-/healthy
         * max 403-1025 ms, /api/v1/labels median 28-57 ms; nice 5, two runs: /-/healthy max
         * 145-270 ms, labels median 2.7-7.6 ms, the same share of the capacity stored. Nice
         * PS_DECODE_NICE lets a loop take the CPU when it has work; decoding gets what is left,
         * which on an idle host is all of it. */
        (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PS_DECODE_NICE);
        goto Run;
    }
    /* below the event loops and the writer: SCHED_IDLE (the smallest CFS weight, and a CPU running
     * only such threads counts as idle for a thread that wakes: a push or /-/healthy gets a CPU at
     * once), and nice 19 should SCHED_IDLE be refused (Linux's nice applies per thread). Queries
     * share the CPU the other threads leave; on a host busy with other processes they get little.
     * bench/query_isolation.py: push p99 under 20 merges 0.75x idle (SCHED_BATCH + nice 19: 3.6x). */
    struct sched_param sp = {0};
    (void)pthread_setschedparam(pthread_self(), SCHED_IDLE, &sp);
    (void)setpriority(PRIO_PROCESS, (id_t)syscall(SYS_gettid), PS_QPOOL_NICE);
Run:
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (p->head == NULL && p->help == NULL && !p->stop)
            pthread_cond_wait(&p->cv, &p->mu);
        if (p->help != NULL) { /* a running job's own work, before the next job: it is answered sooner */
            qhelp_t *h = p->help;
            p->help = h->next;
            pthread_mutex_unlock(&p->mu);
            h->fn(h->arg);
            free(h);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        if (p->head == NULL)
            break;
        ps_qjob_t *j = p->head;
        p->head = j->next;
        if (p->head == NULL)
            p->tail = NULL;
        p->queued--;
        p->queued_bytes -= j->bytes;
        p->running++;
        p->cur[wa_i] = j;
        if (p->stop) {
            atomic_store(&j->shutdown, 1);
            atomic_store(&j->cancel, 1);
        }
        pthread_mutex_unlock(&p->mu);
        ps_cpu_slot_take(p->slots); /* the query pool: wait for a turn to compute */
        run_job(p, j);
        ps_cpu_slot_give();
        pthread_mutex_lock(&p->mu);
        p->cur[wa_i] = NULL;
        p->running--;
        pthread_mutex_unlock(&p->mu);
        j->ran(j); /* the loop may free j at once: ps_qpool_stop must not see it */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}


static ps_qpool_t *pool_start(ps_server_t *s, uint32_t nthreads, bool decode, size_t max_bytes, ps_err_t *err)
{
    ps_qpool_t *p = ps_xcalloc(1, sizeof(*p));
    p->srv = s;
    p->decode = decode;
    p->max_bytes = max_bytes;
    p->nthreads = nthreads ? nthreads : 1;
    if (!decode && s->opts.query_cpus > 0 && s->opts.query_cpus < p->nthreads)
        p->slots = ps_cpu_slots_new(s->opts.query_cpus);
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->threads = ps_xcalloc(p->nthreads, sizeof(pthread_t));
    p->cur = ps_xcalloc(p->nthreads, sizeof(ps_qjob_t *));
    for (uint32_t i = 0; i < p->nthreads; i++) {
        worker_arg_t *wa = ps_xmalloc(sizeof(*wa));
        *wa = (worker_arg_t){p, i};
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            ps_err_set(err, PS_EINTERNAL, "cannot start %s thread: %s", decode ? "decode" : "query", strerror(errno));
            free(wa);
            p->nthreads = i;
            ps_qpool_stop(p);
            return NULL;
        }
    }
    return p;
}

ps_qpool_t *ps_qpool_start(ps_server_t *s, uint32_t nthreads, ps_err_t *err)
{
    return pool_start(s, nthreads, false, 0, err);
}

ps_qpool_t *ps_qpool_start_decode(ps_server_t *s, uint32_t nthreads, size_t max_bytes, ps_err_t *err)
{
    return pool_start(s, nthreads, true, max_bytes ? max_bytes : PS_DPOOL_DEFAULT_BYTES, err);
}

static bool help_spawn(void *pool, void (*fn)(void *arg), void *arg)
{
    ps_qpool_t *p = pool;
    pthread_mutex_lock(&p->mu);
    if (p->stop) { /* the threads may be gone: the caller does the work */
        pthread_mutex_unlock(&p->mu);
        return false;
    }
    qhelp_t *h = ps_xmalloc(sizeof(*h));
    *h = (qhelp_t){p->help, fn, arg};
    p->help = h;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    return true;
}

bool ps_qpool_par(ps_qpool_t *p, ps_par_t *par)
{
    if (p == NULL || p->nthreads < 2 || this_pool != p)
        return false;
    *par = (ps_par_t){help_spawn, p, p->nthreads < PS_QPOOL_PAR_MAX ? p->nthreads : PS_QPOOL_PAR_MAX};
    return true;
}

void ps_qpool_stop(ps_qpool_t *p)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    p->stop = true;
    /* what runs or waits stops at its next check; each is answered 503 by its loop */
    for (ps_qjob_t *j = p->head; j != NULL; j = j->next) {
        atomic_store(&j->shutdown, 1);
        atomic_store(&j->cancel, 1);
    }
    for (uint32_t i = 0; i < p->nthreads; i++)
        if (p->cur[i] != NULL) {
            atomic_store(&p->cur[i]->shutdown, 1);
            atomic_store(&p->cur[i]->cancel, 1);
        }
    pthread_cond_broadcast(&p->cv);
    pthread_mutex_unlock(&p->mu);
    for (uint32_t i = 0; i < p->nthreads; i++)
        pthread_join(p->threads[i], NULL);
    free(p->threads);
    free(p->cur);
    p->threads = NULL;
    p->cur = NULL;
    /* p stays: the loops may still look at its counters and refuse queries until the process exits */
}

int ps_qpool_submit(ps_qpool_t *p, ps_qjob_t *j, bool piece, char *msg, size_t size)
{
    pthread_mutex_lock(&p->mu);
    bool full = piece ? false
                : p->decode ? p->queued > 0 && p->queued_bytes + j->bytes > p->max_bytes
                            : p->queued >= PS_QPOOL_MAX_QUEUE;
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        snprintf(msg, size, "profstore is shutting down");
        return PS_EUNAVAIL;
    }
    if (full) {
        size_t qb = p->queued_bytes;
        uint32_t qn = p->queued;
        pthread_mutex_unlock(&p->mu);
        ps_counter_add(&p->rejected, 1);
        if (p->decode) {
            snprintf(msg, size,
                     "overloaded: %u writes (%zu bytes) wait to be decoded (--ingest.decode-queue-max-bytes=%zu); "
                     "retry later", qn, qb, p->max_bytes);
            return PS_EOVERLOAD;
        }
        snprintf(msg, size, "too many queries waiting (%u running, %u queued: --query.max-concurrency); retry later",
                 p->nthreads, PS_QPOOL_MAX_QUEUE);
        return PS_EUNAVAIL;
    }
    p->queued++;
    p->queued_bytes += j->bytes;
    j->next = NULL;
    if (p->tail != NULL)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    if (!piece)
        ps_counter_add(&p->total, 1);
    return 0;
}

static const ps_metric_t m_decode_threads = {"profstore_ingest_decode_threads", PS_GAUGE,
                                             "Threads that decode writes (--ingest.decode-threads)."},
                         m_decode_inflight = {"profstore_ingest_decode_inflight", PS_GAUGE, "Writes being decoded."},
                         m_decode_queue = {"profstore_ingest_decode_queue_length", PS_GAUGE,
                                           "Writes waiting for a decode thread."},
                         m_decode_queue_bytes = {"profstore_ingest_decode_queue_bytes", PS_GAUGE,
                                                 "Body bytes of the writes waiting for a decode thread."},
                         m_decode_rejected = {"profstore_ingest_decode_rejected_total", PS_COUNTER,
                                              "Writes refused (429/503) because the decode queue was full."},
                         m_computing = {"profstore_query_computing", PS_GAUGE,
                                        "Queries computing now (at most --query.cpus; the others of "
                                        "profstore_query_inflight wait their turn)."},
                         m_waiting = {"profstore_query_waiting_for_cpu", PS_GAUGE,
                                      "Running queries waiting for their turn to compute."},
                         m_concurrency = {"profstore_query_concurrency_max", PS_GAUGE,
                                          "Queries that run at once on the query pool (--query.max-concurrency)."},
                         m_inflight = {"profstore_query_inflight", PS_GAUGE, "Queries running on the query pool."},
                         m_queue = {"profstore_query_queue_length", PS_GAUGE, "Queries waiting for a query thread."},
                         m_queries = {"profstore_queries_total", PS_COUNTER, "Queries handed to the query pool."},
                         m_canceled = {"profstore_queries_canceled_total", PS_COUNTER,
                                       "Queries stopped or dropped because their client went away."},
                         m_timed_out = {"profstore_queries_timed_out_total", PS_COUNTER,
                                        "Queries answered 503 after --query.timeout."},
                         m_rejected = {"profstore_queries_rejected_total", PS_COUNTER,
                                       "Queries refused because the queue was full."};

void ps_qpool_metrics(ps_qpool_t *p, ps_buf_t *b)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    uint32_t queued = p->queued, running = p->running;
    size_t queued_bytes = p->queued_bytes;
    pthread_mutex_unlock(&p->mu);
    if (p->decode) {
        ps_metric_write_u64(b, &m_decode_threads, p->nthreads);
        ps_metric_write_u64(b, &m_decode_inflight, running);
        ps_metric_write_u64(b, &m_decode_queue, queued);
        ps_metric_write_u64(b, &m_decode_queue_bytes, queued_bytes);
        ps_metric_write_u64(b, &m_decode_rejected, ps_counter_get(&p->rejected));
        return;
    }
    unsigned computing, waiting;
    ps_cpu_slots_stats(p->slots, &computing, &waiting);
    ps_metric_write_u64(b, &m_computing, p->slots != NULL ? computing : running);
    ps_metric_write_u64(b, &m_waiting, waiting);
    ps_metric_write_u64(b, &m_concurrency, p->nthreads);
    ps_metric_write_u64(b, &m_inflight, running);
    ps_metric_write_u64(b, &m_queue, queued);
    ps_metric_write_u64(b, &m_queries, ps_counter_get(&p->total));
    ps_metric_write_u64(b, &m_canceled, ps_counter_get(&p->canceled));
    ps_metric_write_u64(b, &m_timed_out, ps_counter_get(&p->timed_out));
    ps_metric_write_u64(b, &m_rejected, ps_counter_get(&p->rejected));
}
