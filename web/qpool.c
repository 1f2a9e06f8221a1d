/*
 * qpool.c - the query worker pool (see qpool.h): queries run on --query.max-concurrency threads
 * of their own, never on the event loops that decode pushes and answer /-/healthy.
 *
 * A route of class PS_ROUTE_POOL (routes.c, connect.c) is dispatched through ps_qpool_run. On the
 * loop thread the request is copied into a job: method, paths, query string, headers and body go
 * into the job's arena, so the job reads nothing of the real request afterwards. The job is tied
 * to the real request twice: by a ps_async_t (its answer comes back to the request's loop, or is
 * dropped when the request died meanwhile) and by a link in the request's pool whose dispose sets
 * the job's cancel flag (the client went away: HTTP/1 connection closed, HTTP/2 RST_STREAM).
 *
 * A worker takes the oldest job, builds a clone h2o_req_t of it (its own h2o_mem_pool_t, a fake
 * conn whose ctx is the worker's own ps_loop_t: ps_http_server and ps_loop_arena_get work as on
 * a loop) and runs the route's handler on the clone, unchanged, under a query budget
 * (core/budget.h: the job's deadline, cancel flag, --query.max-samples, --query.max-regex-steps).
 * ps_http_send sees the clone (ps_qpool_capture) and keeps the answer — status, headers, body,
 * gzipped there already — in the job instead of sending it; then the job goes back to its loop,
 * which sends the captured answer if the request is still alive.
 *
 * Queueing: at most --query.max-concurrency queries run; the others wait, oldest first, up to
 * PS_QPOOL_MAX_QUEUE; beyond that a query is refused at once with 503 (in the error shape of its
 * API: Prometheus' JSON, Connect's unavailable, Pyroscope's HTTP API's Connect JSON).
 * The deadline (--query.timeout) counts from the request's arrival, queue included: a job whose
 * deadline passed in the queue is answered 503 "query timed out in query queue" (Prometheus'
 * words) without running; one whose client went away is dropped without running.
 *
 * The decode pool (--ingest.decode-threads) is a second pool of the same kind for the writes
 * (PS_ROUTE_DECODE: profile pushes, /ingest, Connect push, remote write): their gunzip, snappy,
 * protobuf decoding and ingest build run on its threads (nice PS_DECODE_NICE, below the loops and
 * the writer; no query budget or deadline), so the loops only parse HTTP and /-/healthy is answered at once under a push flood.
 * Its queue is bounded by the bytes of the bodies waiting (--ingest.decode-queue-max-bytes, at
 * least one always admitted); past it a write is refused at once: 429 with Retry-After (remote
 * write 503, as the write queue's refusals). A handler on a decode thread hands its work to the
 * writer as on a loop (ps_async_submit_write, ps_async_init): on a clone ps_async_init does not tie
 * to the clone but defers (ps_qpool_defer): the completion goes to the real request's loop, and
 * the job — holding the body's copy the decoded profile may point into — lives until both the
 * handler returned (the job's own completion: it ties itself to the real request again) and the
 * writer is done (the handler's completion), in either order; then the handler's callback runs
 * on the loop with the real request (NULL when it went away), as it would without the pool: a 200
 * still comes only after the group commit.
 */
#include "qpool.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>

#include "connect.h"
#include "core/budget.h"
#include "core/log.h"
#include "core/thread.h"
#include "core/timeutil.h"
#include "http.h"
#include "internal.h"

typedef struct qjob qjob_t;

typedef struct cancel_link {
    qjob_t *j;
} cancel_link_t;

/* An HTTP/1 connection whose end we watch while its query runs (loop thread only). */
typedef struct watch {
    struct watch *next;
    h2o_socket_t *sock;
    qjob_t *j;
} watch_t;

typedef struct hdr {
    const h2o_token_t *token; /* or NULL: name */
    h2o_iovec_t name, value;
} hdr_t;

struct qjob {
    ps_async_t async; /* first */
    qjob_t *next;
    int (*fn)(h2o_req_t *req);
    ps_server_t *srv;
    int shape; /* the API's error shape: SHAPE_* */
    atomic_int cancel;
    int64_t deadline; /* ps_time_mono; 0: none */
    cancel_link_t *link;
    watch_t *watch;   /* loop thread only */
    bool client_gone; /* the watch saw the connection's end (loop thread only) */
    atomic_bool shutdown; /* canceled by ps_qpool_stop: answered 503 */
    ps_arena_t arena; /* the request's copy and the captured answer */
    /* the request, copied */
    h2o_iovec_t method, path, path_normalized, authority, entity;
    size_t query_at;
    hdr_t *req_headers;
    size_t nreq_headers;
    struct timeval begin_at, processed_at;
    /* the clone the handler runs on (worker thread only) */
    h2o_req_t req;
    h2o_conn_t conn;
    /* the answer */
    bool answered;
    int status;
    const char *reason;
    size_t content_length;
    hdr_t *res_headers;
    size_t nres_headers;
    h2o_iovec_t body;
    /* the decode pool */
    bool decode;  /* a job of the decode pool */
    size_t bytes; /* the body: counted in queued_bytes while the job waits */
    ps_async_t *def_a; /* the handler's completion, deferred (ps_qpool_defer; worker sets, before the hand-off) */
    ps_async_cb def_cb;
    bool deferred;
    bool run_done, write_done; /* loop thread only: the job's own completion came, the handler's came */
    ps_async_t tie; /* the real request again, from the job's completion until the handler's */
    /* a task (ps_qpool_task): fn(arg) on a worker, then done(arg, req) on the request's loop */
    void (*task)(void *arg);
    void (*task_done)(void *arg, h2o_req_t *req);
    void *task_arg;
};

struct ps_qpool {
    ps_server_t *srv;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    qjob_t *head, *tail;
    uint32_t queued, running, nthreads;
    bool stop;
    pthread_t *threads;
    ps_loop_t *wloops; /* one fake loop per worker: srv and an arena pool */
    qjob_t **cur;      /* the job each worker runs (under mu), for ps_qpool_stop */
    atomic_uint_fast64_t total, canceled, timed_out, rejected;
    bool decode;          /* the decode pool: normal priority, no budget, bounded by bytes */
    size_t max_bytes, queued_bytes; /* the decode pool's bound, the bodies waiting (under mu) */
    struct qhelp *help;   /* ps_qpool_par's helpers waiting (under mu): taken before the jobs */
    ps_cpu_slots_t *slots; /* the query pool: --query.cpus of its threads compute at once */
};

/* A helper lent to a job's ps_par_for: no request, no answer. */
typedef struct qhelp {
    struct qhelp *next;
    void (*fn)(void *arg);
    void *arg;
} qhelp_t;

_Thread_local ps_loop_t *ps_worker_loop;

/* error shapes: Prometheus' JSON, Connect's (its code's status), Pyroscope's HTTP API (Connect's
 * JSON with profstore's status, as api_pyroscope_query.c answers), remote read's plain text */
enum { SHAPE_PROM, SHAPE_CONNECT, SHAPE_PYRO, SHAPE_TEXT };

static _Thread_local qjob_t *cur_job;
static _Thread_local watch_t *watches; /* of this loop thread */

/* ---- the request's copy (loop thread) ---- */

static h2o_iovec_t dup_iov(ps_arena_t *a, h2o_iovec_t v)
{
    if (v.base == NULL)
        return h2o_iovec_init(NULL, 0);
    char *p = ps_arena_alloc(a, v.len + 1);
    memcpy(p, v.base, v.len);
    p[v.len] = '\0';
    return h2o_iovec_init(p, v.len);
}

static void copy_headers(ps_arena_t *a, const h2o_headers_t *h, hdr_t **out, size_t *n)
{
    *out = ps_arena_alloc(a, (h->size + 1) * sizeof(hdr_t));
    *n = h->size;
    for (size_t i = 0; i < h->size; i++) {
        const h2o_header_t *e = &h->entries[i];
        hdr_t *d = &(*out)[i];
        d->token = h2o_iovec_is_token(e->name) ? (const h2o_token_t *)e->name : NULL;
        d->name = d->token != NULL ? h2o_iovec_init(NULL, 0) : dup_iov(a, *e->name);
        d->value = dup_iov(a, e->value);
    }
}

/* The clone of j's request on this (worker) thread. */
static void clone_init(qjob_t *j, ps_loop_t *wl)
{
    h2o_req_t *r = &j->req;
    memset(r, 0, sizeof(*r));
    memset(&j->conn, 0, sizeof(j->conn));
    j->conn.ctx = &wl->ctx;
    r->conn = &j->conn;
    h2o_mem_init_pool(&r->pool);
    r->method = j->method;
    r->path = j->path;
    r->path_normalized = j->path_normalized;
    r->authority = j->authority;
    r->query_at = j->query_at;
    r->entity = j->entity;
    r->timestamps.request_begin_at = j->begin_at;
    r->processed_at.at = j->processed_at;
    r->res.content_length = SIZE_MAX;
    for (size_t i = 0; i < j->nreq_headers; i++) {
        hdr_t *h = &j->req_headers[i];
        if (h->token != NULL)
            h2o_add_header(&r->pool, &r->headers, h->token, NULL, h->value.base, h->value.len);
        else
            h2o_add_header_by_str(&r->pool, &r->headers, h->name.base, h->name.len, 0, NULL, h->value.base,
                                  h->value.len);
    }
}

bool ps_qpool_capture(h2o_req_t *req, const void *body, size_t len)
{
    qjob_t *j = cur_job;
    if (j == NULL || req != &j->req)
        return false;
    if (j->answered)
        return true; /* a second answer: h2o would abort; the first one stands */
    j->answered = true;
    j->status = req->res.status;
    j->reason = req->res.reason;
    j->content_length = req->res.content_length;
    copy_headers(&j->arena, &req->res.headers, &j->res_headers, &j->nres_headers);
    j->body = dup_iov(&j->arena, h2o_iovec_init(body, len));
    return true;
}

bool ps_qpool_is_clone(h2o_req_t *req)
{
    return cur_job != NULL && req == &cur_job->req;
}

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
 * canceled one are never run. */

#define WATCH_MAX_INPUT 65536

static void unwatch(qjob_t *j)
{
    watch_t *w = j->watch;
    if (w == NULL)
        return;
    for (watch_t **pp = &watches; *pp != NULL; pp = &(*pp)->next)
        if (*pp == w) {
            *pp = w->next;
            break;
        }
    j->watch = NULL;
    free(w);
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
        atomic_store(&w->j->cancel, 1);
        w->j->client_gone = true;
        h2o_socket_read_stop(sock);
    } else if (sock->input->size > WATCH_MAX_INPUT) {
        h2o_socket_read_stop(sock);
    }
}

static void watch(qjob_t *j, h2o_req_t *req)
{
    if (req->version >= 0x200 || req->conn->callbacks == NULL || req->conn->callbacks->get_socket == NULL)
        return;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock == NULL || h2o_socket_is_reading(sock))
        return; /* h2o reads it and sees its end itself */
    watch_t *w = ps_xcalloc(1, sizeof(*w));
    w->sock = sock;
    w->j = j;
    w->next = watches;
    watches = w;
    j->watch = w;
    h2o_socket_read_start(sock, on_client_read);
}

static void stop_watching(qjob_t *j)
{
    if (j->watch != NULL) {
        h2o_socket_t *sock = j->watch->sock;
        unwatch(j);
        if (h2o_socket_is_reading(sock))
            h2o_socket_read_stop(sock);
    }
}

/* ---- answers (loop thread) ---- */

static void on_cancel_dispose(void *p)
{
    cancel_link_t *l = p;
    if (l->j != NULL) {
        atomic_store(&l->j->cancel, 1);
        unwatch(l->j); /* the connection goes: its socket is not to be touched again */
    }
}

static void job_free(qjob_t *j)
{
    ps_arena_dispose(&j->arena);
    free(j);
}

static int shape_of(h2o_req_t *req)
{
    h2o_iovec_t p = req->path_normalized;
    if (ps_connect_is_path(p))
        return SHAPE_CONNECT;
    if (p.len >= 11 && memcmp(p.base, "/pyroscope/", 11) == 0)
        return SHAPE_PYRO;
    if (h2o_memis(p.base, p.len, H2O_STRLIT("/api/v1/read")))
        return SHAPE_TEXT;
    return SHAPE_PROM;
}

/* An error in the shape of the request's API, on a loop or a clone. */
static void answer_error(h2o_req_t *req, int shape, int code, const char *msg)
{
    if (shape == SHAPE_CONNECT) {
        ps_connect_error_req(req, ps_connect_code_of(code), msg);
    } else if (shape == SHAPE_PYRO) {
        ps_buf_t b = PS_BUF_INIT;
        ps_connect_error_json(ps_connect_code_of(code), msg, &b);
        ps_buf_putc(&b, '\n');
        ps_http_send(req, ps_err_http_status(code), "application/json", b.data, b.len);
        ps_buf_dispose(&b);
    } else if (shape == SHAPE_TEXT) {
        ps_buf_t b = PS_BUF_INIT;
        ps_buf_printf(&b, "%s\n", msg);
        ps_http_send(req, ps_err_http_status(code), "text/plain; charset=utf-8", b.data, b.len);
        ps_buf_dispose(&b);
    } else {
        ps_http_error(req, code, msg);
    }
}

/* Both completions of a deferred job came (loop thread): the handler's callback, with the real
 * request if it is still alive. */
static void deliver(qjob_t *j, h2o_req_t *req)
{
    j->def_cb(j->def_a, req);
    job_free(j);
}

/* The handler's completion of a deferred job (the writer is done), on the real request's loop. */
static void on_deferred_done(ps_async_t *a, h2o_req_t *unused)
{
    (void)unused;
    qjob_t *j = a->link;
    j->write_done = true;
    if (!j->run_done)
        return; /* the job's own completion delivers */
    h2o_req_t *req = j->tie.req;
    if (j->tie.link != NULL)
        ps_async_cancel(&j->tie);
    deliver(j, req);
}

bool ps_qpool_defer(ps_async_t *a, h2o_req_t *req, ps_async_cb cb)
{
    qjob_t *j = cur_job;
    if (j == NULL || req != &j->req || j->deferred)
        return false;
    a->req = NULL; /* ps_async_on_messages leaves a->link alone */
    a->link = j;
    a->loop = j->async.loop;
    a->on_complete = on_deferred_done;
    j->def_a = a;
    j->def_cb = cb;
    j->deferred = true;
    return true;
}

bool ps_qpool_undefer(ps_async_t *a)
{
    qjob_t *j = cur_job;
    if (j == NULL || !j->deferred || j->def_a != a)
        return false;
    j->deferred = false;
    j->def_a = NULL;
    a->link = NULL;
    return true;
}

static void on_done(ps_async_t *a, h2o_req_t *req)
{
    qjob_t *j = (qjob_t *)a;
    if (j->task != NULL) {
        j->task_done(j->task_arg, req);
        free(j);
        return;
    }
    if (req != NULL) {
        j->link->j = NULL;
        stop_watching(j);
        if (j->client_gone)
            req->http1_is_persistent = 0; /* close after this answer: pipelined requests behind it die too */
    }
    if (j->deferred) { /* handed to the writer: answered by the handler's callback */
        if (j->write_done) {
            deliver(j, req);
            return;
        }
        j->run_done = true;
        if (req != NULL)
            ps_async_init(&j->tie, req, NULL); /* never completed: only tells whether req lives */
        else
            j->tie.req = NULL, j->tie.link = NULL;
        return;
    }
    if (req != NULL) {
        if (atomic_load(&j->shutdown)) {
            answer_error(req, j->shape, PS_EUNAVAIL,
                         j->decode ? "profstore is shutting down: the write was not decoded"
                                   : "profstore is shutting down: the query was stopped");
        } else if (!j->answered) {
            answer_error(req, j->shape, PS_EINTERNAL, "the query ended without an answer");
        } else {
            req->res.status = j->status;
            req->res.reason = j->reason;
            req->res.content_length = j->content_length;
            for (size_t i = 0; i < j->nres_headers; i++) {
                hdr_t *h = &j->res_headers[i];
                if (h->token != NULL)
                    h2o_add_header(&req->pool, &req->res.headers, h->token, NULL, h->value.base, h->value.len);
                else
                    h2o_add_header_by_str(&req->pool, &req->res.headers, h->name.base, h->name.len, 1, NULL,
                                          h->value.base, h->value.len);
            }
            h2o_send_inline(req, j->body.base, j->body.len);
        }
    }
    job_free(j);
}

/* ---- workers ---- */

static void run_job(ps_qpool_t *p, ps_loop_t *wl, qjob_t *j)
{
    if (j->task != NULL) { /* no clone, no budget: the task's own */
        j->task(j->task_arg);
        return;
    }
    cur_job = j;
    clone_init(j, wl);
    if (atomic_load(&j->cancel)) {
        /* the client went away while the query waited: nothing to do */
    } else if (p->decode) {
        j->fn(&j->req);
    } else if (j->deadline != 0 && ps_time_mono() > j->deadline) {
        char d[32], msg[128];
        ps_format_duration(p->srv->opts.query_timeout, d, sizeof(d));
        snprintf(msg, sizeof(msg), "query timed out in query queue (the limit is %s, --query.timeout)", d);
        answer_error(&j->req, j->shape, PS_ETIMEOUT, msg);
    } else {
        ps_budget_t b;
        ps_budget_init(&b, 0, p->srv->opts.query_max_samples, p->srv->opts.query_max_regex_steps, &j->cancel);
        b.deadline = j->deadline;
        b.timeout = p->srv->opts.query_timeout;
        ps_budget_set(&b);
        j->fn(&j->req);
        ps_budget_set(NULL);
    }
    if (atomic_load(&j->shutdown))
        ; /* not the client's doing */
    else if (atomic_load(&j->cancel))
        atomic_fetch_add(&p->canceled, 1);
    else if (j->answered && (j->status == 503 || j->status == 504) && j->deadline != 0 && ps_time_mono() > j->deadline)
        atomic_fetch_add(&p->timed_out, 1);
    h2o_mem_clear_pool(&j->req.pool);
    cur_job = NULL; /* the worker sends the completion once p->cur no longer names j */
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
    ps_loop_t *wl = &p->wloops[wa_i];
    free(wa);
    ps_worker_loop = wl;
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
        qjob_t *j = p->head;
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
        run_job(p, wl, j);
        ps_cpu_slot_give();
        pthread_mutex_lock(&p->mu);
        p->cur[wa_i] = NULL;
        p->running--;
        pthread_mutex_unlock(&p->mu);
        ps_async_complete(&j->async); /* the loop may free j at once: ps_qpool_stop must not see it */
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    for (int i = 0; i < wl->nfree; i++) {
        ps_arena_dispose(wl->free_arenas[i]);
        free(wl->free_arenas[i]);
    }
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
    p->wloops = ps_xcalloc(p->nthreads, sizeof(ps_loop_t));
    p->cur = ps_xcalloc(p->nthreads, sizeof(qjob_t *));
    for (uint32_t i = 0; i < p->nthreads; i++) {
        p->wloops[i].srv = s;
        p->wloops[i].worker = true;
        pthread_mutex_init(&p->wloops[i].ret_mu, NULL);
        worker_arg_t *wa = ps_xmalloc(sizeof(*wa));
        *wa = (worker_arg_t){p, i};
        if (pthread_create(&p->threads[i], NULL, worker_main, wa) != 0) {
            ps_err_set(err, PS_EINTERNAL, "cannot start %s thread: %s", decode ? "decode" : "query", strerror(errno));
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
    if (p == NULL || p->nthreads < 2 || ps_worker_loop < p->wloops || ps_worker_loop >= p->wloops + p->nthreads)
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
    for (qjob_t *j = p->head; j != NULL; j = j->next) {
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
    /* p->wloops stay: a deferred job's callback may still give an arena back to one (it frees it) */
    /* p stays: the loops may still look at its counters and refuse queries until the process exits */
}

/* j at the queue's end, a thread woken for it (p->mu held) */
static void append_locked(ps_qpool_t *p, qjob_t *j)
{
    if (p->tail != NULL)
        p->tail->next = j;
    else
        p->head = j;
    p->tail = j;
    pthread_cond_signal(&p->cv);
}

int ps_qpool_run(h2o_req_t *req, unsigned cls, int (*fn)(h2o_req_t *req))
{
    ps_server_t *s = ps_http_server(req);
    ps_qpool_t *p = cls & PS_ROUTE_DECODE ? s->dpool : cls & PS_ROUTE_POOL ? s->qpool : NULL;
    if (p == NULL || ps_qpool_is_clone(req))
        return fn(req);
    int shape = shape_of(req);
    size_t bytes = req->entity.base != NULL ? req->entity.len : 0;
    pthread_mutex_lock(&p->mu);
    bool full = p->decode ? p->queued > 0 && p->queued_bytes + bytes > p->max_bytes : p->queued >= PS_QPOOL_MAX_QUEUE;
    bool stopping = p->stop;
    size_t qb = p->queued_bytes;
    uint32_t qn = p->queued;
    if (!full && !stopping) {
        p->queued_bytes += bytes; /* reserved now: the next request sees it */
        p->queued++;
    }
    pthread_mutex_unlock(&p->mu);
    if (full || stopping) {
        char msg[200];
        if (stopping) {
            snprintf(msg, sizeof(msg), "profstore is shutting down");
        } else if (p->decode) {
            atomic_fetch_add(&p->rejected, 1);
            snprintf(msg, sizeof(msg),
                     "overloaded: %u writes (%zu bytes) wait to be decoded (--ingest.decode-queue-max-bytes=%zu); "
                     "retry later", qn, qb, p->max_bytes);
            if (h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/api/v1/write"))) {
                /* as api_write.c answers a full write queue: 503 (Prometheus retries a 5xx, not a 429), text */
                size_t n = strlen(msg);
                msg[n] = '\n';
                ps_http_send(req, 503, "text/plain; charset=utf-8", msg, n + 1);
            } else
                answer_error(req, shape, PS_EOVERLOAD, msg);
            return 0;
        } else {
            atomic_fetch_add(&p->rejected, 1);
            snprintf(msg, sizeof(msg),
                     "too many queries waiting (%u running, %u queued: --query.max-concurrency); retry later",
                     p->nthreads, PS_QPOOL_MAX_QUEUE);
        }
        answer_error(req, shape, PS_EUNAVAIL, msg);
        return 0;
    }
    qjob_t *j = ps_xcalloc(1, sizeof(*j));
    j->arena = (ps_arena_t)PS_ARENA_INIT;
    j->fn = fn;
    j->srv = s;
    j->shape = shape;
    atomic_init(&j->cancel, 0);
    j->method = dup_iov(&j->arena, req->method);
    j->path = dup_iov(&j->arena, req->path);
    j->path_normalized = dup_iov(&j->arena, req->path_normalized);
    j->authority = dup_iov(&j->arena, req->authority);
    j->entity = dup_iov(&j->arena, req->entity);
    j->query_at = req->query_at;
    j->begin_at = req->timestamps.request_begin_at;
    j->processed_at = req->processed_at.at;
    copy_headers(&j->arena, &req->headers, &j->req_headers, &j->nreq_headers);
    j->bytes = bytes;
    j->decode = p->decode;
    if (!p->decode && s->opts.query_timeout > 0) {
        /* from the request's arrival (its first byte), as the client counts it */
        struct timeval now, *t0 = h2o_timeval_is_null(&j->begin_at) ? &j->processed_at : &j->begin_at;
        gettimeofday(&now, NULL);
        int64_t waited = ((int64_t)now.tv_sec - t0->tv_sec) * PS_NS_PER_S + ((int64_t)now.tv_usec - t0->tv_usec) * 1000;
        if (waited < 0 || h2o_timeval_is_null(t0))
            waited = 0;
        j->deadline = ps_time_mono() + s->opts.query_timeout - waited;
    }
    ps_async_init(&j->async, req, on_done);
    j->link = h2o_mem_alloc_shared(&req->pool, sizeof(*j->link), on_cancel_dispose);
    j->link->j = j;
    if (!p->decode) /* a write runs to its end: its client's end is seen when it is answered */
        watch(j, req);
    atomic_fetch_add(&p->total, 1);
    pthread_mutex_lock(&p->mu);
    if (p->stop) { /* stopped since the check above: the threads may be gone, answered 503 by on_done */
        p->queued--;
        p->queued_bytes -= bytes;
        pthread_mutex_unlock(&p->mu);
        atomic_store(&j->shutdown, 1);
        ps_async_complete(&j->async);
        return 0;
    }
    append_locked(p, j);
    pthread_mutex_unlock(&p->mu);
    return 0;
}

bool ps_qpool_task(ps_qpool_t *p, h2o_req_t *req, void (*fn)(void *arg), void (*done)(void *arg, h2o_req_t *req),
                   void *arg)
{
    if (p == NULL || ps_qpool_is_clone(req))
        return false;
    qjob_t *j = ps_xcalloc(1, sizeof(*j));
    j->task = fn;
    j->task_done = done;
    j->task_arg = arg;
    atomic_init(&j->cancel, 0);
    pthread_mutex_lock(&p->mu);
    if (p->stop) {
        pthread_mutex_unlock(&p->mu);
        free(j);
        return false;
    }
    ps_async_init(&j->async, req, on_done);
    p->queued++;
    append_locked(p, j);
    pthread_mutex_unlock(&p->mu);
    return true;
}

void ps_qpool_metrics(ps_qpool_t *p, ps_buf_t *b)
{
    if (p == NULL)
        return;
    pthread_mutex_lock(&p->mu);
    uint32_t queued = p->queued, running = p->running;
    size_t queued_bytes = p->queued_bytes;
    pthread_mutex_unlock(&p->mu);
    if (p->decode) {
        ps_buf_printf(b,
                      "# HELP profstore_ingest_decode_threads Threads that decode writes (--ingest.decode-threads).\n"
                      "# TYPE profstore_ingest_decode_threads gauge\nprofstore_ingest_decode_threads %u\n"
                      "# HELP profstore_ingest_decode_inflight Writes being decoded.\n"
                      "# TYPE profstore_ingest_decode_inflight gauge\nprofstore_ingest_decode_inflight %u\n"
                      "# HELP profstore_ingest_decode_queue_length Writes waiting for a decode thread.\n"
                      "# TYPE profstore_ingest_decode_queue_length gauge\nprofstore_ingest_decode_queue_length %u\n"
                      "# HELP profstore_ingest_decode_queue_bytes Body bytes of the writes waiting for a decode "
                      "thread.\n# TYPE profstore_ingest_decode_queue_bytes gauge\nprofstore_ingest_decode_queue_bytes %zu\n"
                      "# HELP profstore_ingest_decode_rejected_total Writes refused (429/503) because the decode "
                      "queue was full.\n# TYPE profstore_ingest_decode_rejected_total counter\n"
                      "profstore_ingest_decode_rejected_total %llu\n",
                      p->nthreads, running, queued, queued_bytes, (unsigned long long)atomic_load(&p->rejected));
        return;
    }
    unsigned computing, waiting;
    ps_cpu_slots_stats(p->slots, &computing, &waiting);
    ps_buf_printf(b,
                  "# HELP profstore_query_computing Queries computing now (at most --query.cpus; the others "
                  "of profstore_query_inflight wait their turn).\n# TYPE profstore_query_computing gauge\n"
                  "profstore_query_computing %u\n"
                  "# HELP profstore_query_waiting_for_cpu Running queries waiting for their turn to compute.\n"
                  "# TYPE profstore_query_waiting_for_cpu gauge\nprofstore_query_waiting_for_cpu %u\n",
                  p->slots != NULL ? computing : running, waiting);
    ps_buf_printf(b,
                  "# HELP profstore_query_concurrency_max Queries that run at once on the query pool "
                  "(--query.max-concurrency).\n# TYPE profstore_query_concurrency_max gauge\n"
                  "profstore_query_concurrency_max %u\n"
                  "# HELP profstore_query_inflight Queries running on the query pool.\n"
                  "# TYPE profstore_query_inflight gauge\nprofstore_query_inflight %u\n"
                  "# HELP profstore_query_queue_length Queries waiting for a query thread.\n"
                  "# TYPE profstore_query_queue_length gauge\nprofstore_query_queue_length %u\n",
                  p->nthreads, running, queued);
    ps_buf_printf(b,
                  "# HELP profstore_queries_total Queries handed to the query pool.\n"
                  "# TYPE profstore_queries_total counter\nprofstore_queries_total %llu\n"
                  "# HELP profstore_queries_canceled_total Queries stopped or dropped because their client went "
                  "away.\n# TYPE profstore_queries_canceled_total counter\nprofstore_queries_canceled_total %llu\n"
                  "# HELP profstore_queries_timed_out_total Queries answered 503 after --query.timeout.\n"
                  "# TYPE profstore_queries_timed_out_total counter\nprofstore_queries_timed_out_total %llu\n"
                  "# HELP profstore_queries_rejected_total Queries refused because the queue was full.\n"
                  "# TYPE profstore_queries_rejected_total counter\nprofstore_queries_rejected_total %llu\n",
                  (unsigned long long)atomic_load(&p->total), (unsigned long long)atomic_load(&p->canceled),
                  (unsigned long long)atomic_load(&p->timed_out), (unsigned long long)atomic_load(&p->rejected));
}
