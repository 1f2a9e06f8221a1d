/*
 * api_read.c - POST /api/v1/read: Prometheus remote read (docs/protocols.md). Decodes the snappy
 * ReadRequest (proto/remote_read.h), negotiates the response type as Prometheus does, has
 * src/query/remote_read.h answer it, and sends
 *   SAMPLES:             Content-Type: application/x-protobuf, Content-Encoding: snappy;
 *   STREAMED_XOR_CHUNKS: Content-Type: application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse,
 *                        in pieces of about 64 KiB made as the client takes them (an h2o generator: the
 *                        next piece is made when the last one is sent), chunked; an answer of one piece
 *                        goes with its Content-Length. An error after the first piece cuts the answer
 *                        off (the client sees it end short), as the status is already sent.
 * Errors are text/plain, as Prometheus' read handler answers them (its client prints the body):
 * 400 for a bad request or an exceeded limit ("exceeded sample limit (N)", as Prometheus answers;
 * too many series likewise), 413 for a body announcing more than 32 MiB, 503 over
 * --storage.remote.read-concurrent-limit, 500 for our own failures.
 *
 * The query budget (core/budget.h). A SAMPLES read (one answer) runs on the query pool (web/qpool.c)
 * like any query, as a task (task.h, run.c: read_samples), under its budget: queued, --query.timeout,
 * --query.max-regex-steps, canceled when the client goes away (profstore_queries_canceled_total).
 * A streamed read is made on the query pool too, in pieces (ps_run_piece, SCHED_IDLE like every
 * query): the first (decoding the
 * request from a copy of its body, the snapshot, the cursor, the first piece), then one per h2o
 * proceed for each next piece, which its loop sends; the loop only sends. Each task runs under the
 * read's own budget, kept from slice to slice: the
 * deadline of --query.timeout from the request's arrival,
 * --query.max-regex-steps for all its matchers together (the per-value limits of parser/matcher.c
 * as elsewhere), and a cancel flag set when the client goes away (the generator's stop, or the
 * request's dispose; a slice itself is not interrupted: the loop sees the client's end between
 * pieces, and a task that outlives its request frees the read when it ends). Without the pool
 * (--query.max-concurrency=0) the tasks run in place on the loop, as before. Past the deadline before the status is sent: 503 "query timed out in query
 * execution (the limit is 2m, --query.timeout)"; a spent regex budget: 400 naming the matcher (a
 * limit, as Prometheus answers its sample limit); after the first piece the answer is cut off, as
 * for any error then. Counted in profstore_remote_reads_timed_out_total and
 * profstore_remote_reads_canceled_total (a client gone before the last piece).
 */
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/time.h>

#include "core/budget.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "proto/remote_read.h"
#include "run.h"
#include "query/remote_read.h"

#define STREAMED_TYPE "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"

/* remote reads being answered (a slot of --storage.remote.read-concurrent-limit each), and what
 * stopped them: relaxed atomics, on the loops and the query threads */
static ps_gauge_t reads_inflight;
static ps_counter_t reads_timed_out, reads_canceled;

static const ps_metric_t m_inflight = {"profstore_remote_reads_inflight", PS_GAUGE,
                                       "Remote reads being answered (a streamed one until its last frame is sent or "
                                       "its client goes away); --storage.remote.read-concurrent-limit bounds it."},
                         m_timed_out = {"profstore_remote_reads_timed_out_total", PS_COUNTER,
                                        "Remote reads stopped by --query.timeout (503, or a streamed answer cut off)."},
                         m_canceled = {"profstore_remote_reads_canceled_total", PS_COUNTER,
                                       "Remote reads whose client went away before the last frame."};

void ps_api_read_metrics(ps_buf_t *b)
{
    ps_metric_write_u64(b, &m_inflight, (uint64_t)ps_gauge_get(&reads_inflight));
    ps_metric_write_u64(b, &m_timed_out, ps_counter_get(&reads_timed_out));
    ps_metric_write_u64(b, &m_canceled, ps_counter_get(&reads_canceled));
}

static void send_error(h2o_req_t *req, int status, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_printf(&b, "%s\n", msg);
    ps_http_send(req, status, "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
}

static int status_of(int code)
{
    switch (code) {
    case PS_EINVAL: return 400;
    case PS_ETOOBIG: return 413;
    case PS_ELIMIT: return 400; /* Prometheus: "exceeded sample limit" is a 400; series too */
    case PS_EUNAVAIL: return 503;
    default: return ps_err_http_status(code);
    }
}

/* Bytes asked of the cursor per h2o_send: a piece is at most this plus one frame. */
#define PIECE_BYTES (64 * 1024)

/* One read. A streamed answer keeps its read snapshot and its slot of
 * --storage.remote.read-concurrent-limit from the first piece to the last (or until the client
 * goes away). Its pieces are made on the query pool (ps_run_piece), one at a time, and sent
 * on the request's loop; so the context is the heap's, not the request pool's: a request that
 * dies while a task runs leaves it to the task's completion (busy), which frees it. */
typedef struct read_ctx read_ctx_t;
typedef struct read_link {
    read_ctx_t *c;
} read_link_t;
struct read_ctx {
    h2o_generator_t super;
    ps_server_t *s;
    read_link_t *link;      /* in the request's pool; NULL once the request died */
    bool busy;              /* a task of it is queued or running (loop thread only) */
    h2o_iovec_t entity;     /* the request's body, copied (the first task decodes it) */
    /* what the task found, for its completion */
    int status;
    ps_read_type_t type;
    bool done, failed;
    ps_err_t err;
    ps_arena_t arena;       /* the decoded request */
    ps_read_request_t rr;
    ps_reader_t *r;
    ps_read_cursor_t *cur;  /* streamed: borrows r and rr */
    ps_buf_t out;           /* the answer, or the piece being sent */
    bool slot;              /* holds a read slot */
    bool streaming;         /* the status is sent, pieces follow */
    bool finished;          /* the last piece was made (or the answer cut off) */
    uint64_t bytes;         /* streamed so far */
    bool own_budget;        /* pieces: budget is installed for each slice; a SAMPLES task: the pool's */
    ps_budget_t budget;
    atomic_int cancel;      /* the client went away */
};

/* Runs the next slice of c's work under its budget: the previous budget (none on a loop) back after. */
#define WITH_BUDGET(c, stmt)                                                                                            \
    do {                                                                                                               \
        ps_budget_t *prev_ = (c)->own_budget ? ps_budget_set(&(c)->budget) : NULL;                                     \
        stmt;                                                                                                          \
        if ((c)->own_budget)                                                                                           \
            ps_budget_set(prev_);                                                                                      \
    } while (0)

/* The budget of a read: --query.timeout from the request's first byte (as the query pool counts
 * it), the regex steps, the cancel flag. */
static void budget_init(read_ctx_t *c, h2o_req_t *req)
{
    const ps_server_opts_t *o = &c->s->opts;
    atomic_init(&c->cancel, 0);
    c->own_budget = true;
    ps_budget_init(&c->budget, 0, 0, o->query_max_regex_steps, &c->cancel);
    if (o->query_timeout > 0) {
        struct timeval now, t0 = req->timestamps.request_begin_at;
        if (h2o_timeval_is_null(&t0))
            t0 = req->processed_at.at;
        gettimeofday(&now, NULL);
        int64_t waited = h2o_timeval_is_null(&t0) ? 0
                         : ((int64_t)now.tv_sec - t0.tv_sec) * PS_NS_PER_S + ((int64_t)now.tv_usec - t0.tv_usec) * 1000;
        c->budget.timeout = o->query_timeout;
        c->budget.deadline = ps_time_mono() + o->query_timeout - (waited > 0 ? waited : 0);
    }
}

/* Counts what stopped a read: its deadline (a client gone is counted by client_gone). */
static void count_error(read_ctx_t *c, int code)
{
    if (code == PS_ETIMEOUT)
        ps_counter_add(&reads_timed_out, 1);
}

static void log_done(const read_ctx_t *c, ps_read_type_t type, const ps_read_stats_t *st, size_t bytes)
{
    ps_log_debug("remote read", "queries=%u type=%s series=%llu samples=%llu chunks=%llu frames=%llu bytes=%zu",
                 c->rr.nqueries, type == PS_READ_SAMPLES ? "samples" : "streamed", (unsigned long long)st->series,
                 (unsigned long long)st->samples, (unsigned long long)st->chunks, (unsigned long long)st->frames,
                 bytes);
}

/* Ends the snapshot and gives the slot back (again: nothing). Before the last piece goes out: a
 * client's next read may arrive on another thread before the send returns. */
static void release(read_ctx_t *c)
{
    ps_read_cursor_free(c->cur);
    c->cur = NULL;
    if (c->r != NULL)
        ps_reader_end(c->r);
    c->r = NULL;
    if (c->slot)
        ps_gauge_add(&reads_inflight, -1);
    c->slot = false;
}

/* The client went away (generator stop, or the request disposed first): counted once, when the
 * answer was still streaming. */
static void client_gone(read_ctx_t *c)
{
    atomic_store(&c->cancel, 1);
    if (c->streaming && !c->finished)
        ps_counter_add(&reads_canceled, 1);
    c->finished = true;
}

static void ctx_free(read_ctx_t *c)
{
    release(c);
    ps_buf_dispose(&c->out);
    ps_arena_dispose(&c->arena);
    free(c->entity.base);
    free(c);
}

/* the request's pool goes: the request is done or its client went away */
static void on_link_dispose(void *p)
{
    read_link_t *l = p;
    read_ctx_t *c = l->c;
    if (c == NULL)
        return;
    c->link = NULL;
    client_gone(c);
    if (!c->busy)
        ctx_free(c); /* else the task's completion does */
}

/* The next piece of a streamed answer into c->out: 0, or an error (logged) after which the
 * answer must be cut off. */
static int next_piece(read_ctx_t *c, bool *done, ps_err_t *err)
{
    ps_buf_reset(&c->out);
    int rc;
    WITH_BUDGET(c, rc = ps_read_cursor_next(c->cur, &c->out, PIECE_BYTES, done, err));
    c->bytes += c->out.len;
    if (rc != 0 || *done)
        c->finished = true;
    if (rc == 0 && *done)
        log_done(c, PS_READ_STREAMED_XOR_CHUNKS, ps_read_cursor_stats(c->cur), c->bytes);
    return rc;
}

/* Sends the piece next_piece made (loop thread). */
static void send_piece(read_ctx_t *c, h2o_req_t *req)
{
    if (c->failed) {
        /* the status line is gone: all a client can be told is that the answer ends short */
        count_error(c, c->err.code);
        ps_log_error("remote read failed mid-answer, cut off", "bytes=%llu err=%s", (unsigned long long)c->bytes,
                     ps_log_q(c->err.msg[0] ? c->err.msg : ps_strerror(c->err.code)));
        release(c);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_ERROR);
        return;
    }
    if (c->done)
        release(c);
    h2o_iovec_t v = h2o_iovec_init(c->out.data, c->out.len);
    h2o_send(req, &v, c->out.len ? 1 : 0, c->done ? H2O_SEND_STATE_FINAL : H2O_SEND_STATE_IN_PROGRESS);
}

/* on a query thread: the next piece */
static void task_next(void *arg)
{
    read_ctx_t *c = arg;
    ps_err_clear(&c->err);
    c->done = false;
    c->failed = next_piece(c, &c->done, &c->err) != 0;
}

/* back on the loop */
static void on_next_done(void *arg, h2o_req_t *req)
{
    read_ctx_t *c = arg;
    c->busy = false;
    if (req == NULL || c->link == NULL) {
        ctx_free(c);
        return;
    }
    if (atomic_load(&c->cancel)) { /* stopped (on_stop) meanwhile: the request's end frees c */
        release(c);
        return;
    }
    send_piece(c, req);
}

static void on_proceed(h2o_generator_t *gen, h2o_req_t *req)
{
    read_ctx_t *c = (read_ctx_t *)gen;
    c->busy = true;
    if (ps_run_piece(c->s->qpool, req, task_next, on_next_done, c))
        return;
    c->busy = false; /* no pool (--query.max-concurrency=0) or stopping: here */
    task_next(c);
    send_piece(c, req);
}

/* The client went away before the end: free the snapshot and the slot now (unless a task holds
 * them: then its completion), not at the pool's end. */
static void on_stop(h2o_generator_t *gen, h2o_req_t *req)
{
    read_ctx_t *c = (read_ctx_t *)gen;
    ps_log_debug("remote read stopped by the client", "bytes=%llu", (unsigned long long)c->bytes);
    client_gone(c);
    if (!c->busy)
        release(c);
}

/* 400 for a body not snappy (v: its Content-Encoding, base NULL when none), with the message in
 * err; else 0 */
static int check_encoding(h2o_iovec_t v, ps_err_t *err)
{
    if (v.base != NULL && !h2o_lcstris(v.base, v.len, H2O_STRLIT("snappy"))) {
        ps_err_set(err, PS_EINVAL, "Content-Encoding \"%.*s\" is not supported: a remote-read body is snappy "
                   "(block format)", (int)(v.len > 32 ? 32 : v.len), v.base);
        return 400;
    }
    return 0;
}

/* The answer to one read (any thread; nothing of its request but body): 0 with the body
 * (SAMPLES: whole; streamed: its first piece, *done if that is all) in c->out and its type in
 * *type, or an HTTP status with the message in err. */
static int answer(read_ctx_t *c, h2o_iovec_t body, ps_read_type_t *type, bool *done, ps_err_t *err)
{
    ps_read_stats_t st;
    int rc;
    ps_read_limits_t lim;
    ps_read_limits_default(&lim);
    if ((rc = ps_read_request_decode(body.base, body.len, &lim, &c->arena, &c->rr, err)) != 0 ||
        (rc = ps_read_negotiate(&c->rr, type, err)) != 0 || (rc = ps_reader_begin(c->s->store, &c->r, err)) != 0)
        return status_of(err->code ? err->code : rc);
    if (*type == PS_READ_SAMPLES) {
        WITH_BUDGET(c, rc = ps_query_read(c->r, &c->rr, *type, &c->s->opts.read, &c->out, &st, err));
        if (rc == 0)
            log_done(c, *type, &st, c->out.len);
    } else if ((rc = ps_read_cursor_new(c->r, &c->rr, &c->s->opts.read, &c->cur, err)) == 0) {
        rc = next_piece(c, done, err); /* the first piece before the status: an error is still a 4xx */
    }
    return rc != 0 ? status_of(err->code ? err->code : rc) : 0;
}

/* Whether req is a well-formed read answered as SAMPLES: such a read goes to the query pool, whole
 * (the rest, streamed answers and bad requests, are answered here). Decodes the request once more
 * than needed: a few microseconds against the read. */
static bool wants_samples(h2o_req_t *req)
{
    ssize_t ce = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, -1);
    if (ce >= 0 && !h2o_lcstris(req->headers.entries[ce].value.base, req->headers.entries[ce].value.len,
                                H2O_STRLIT("snappy")))
        return false;
    ps_arena_t a = PS_ARENA_INIT;
    ps_read_request_t rr;
    ps_read_limits_t lim;
    ps_read_type_t type;
    ps_err_t err;
    ps_err_clear(&err);
    ps_read_limits_default(&lim);
    bool yes = ps_read_request_decode(req->entity.base, req->entity.len, &lim, &a, &rr, &err) == 0 &&
               ps_read_negotiate(&rr, &type, &err) == 0 && type == PS_READ_SAMPLES;
    ps_arena_dispose(&a);
    return yes;
}

/* on a query thread: the read's first piece (decoding it, its snapshot, its cursor) */
static void task_first(void *arg)
{
    read_ctx_t *c = arg;
    c->done = true;
    c->status = answer(c, c->entity, &c->type, &c->done, &c->err);
}

/* Answers what answer() found (loop thread). */
static void respond(read_ctx_t *c, h2o_req_t *req)
{
    int status = c->status;
    ps_err_t *err = &c->err;
    if (status != 0 || c->done)
        release(c);
    if (status != 0)
        count_error(c, err->code);
    if (status >= 500 && status != 503)
        ps_log_error("remote read failed", "err=%s", ps_log_q(err->msg));
    if (status != 0) {
        send_error(req, status, err->msg[0] ? err->msg : ps_strerror(err->code));
    } else if (c->type == PS_READ_SAMPLES) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL, H2O_STRLIT("snappy"));
        ps_http_send(req, 200, "application/x-protobuf", c->out.data, c->out.len);
    } else if (c->done) { /* the whole answer in one piece: sent with its length */
        ps_http_send(req, 200, STREAMED_TYPE, c->out.data, c->out.len);
    } else {
        c->super.proceed = on_proceed;
        c->super.stop = on_stop;
        c->streaming = true;
        ps_http_start(req, 200, STREAMED_TYPE, &c->super);
        h2o_iovec_t v = h2o_iovec_init(c->out.data, c->out.len);
        h2o_send(req, &v, 1, H2O_SEND_STATE_IN_PROGRESS);
    }
}

static void on_first_done(void *arg, h2o_req_t *req)
{
    read_ctx_t *c = arg;
    c->busy = false;
    if (req == NULL || c->link == NULL) {
        ctx_free(c);
        return;
    }
    respond(c, req);
}

/* A slot of --storage.remote.read-concurrent-limit for c: 0, or 503 with the message in c->err. */
static int take_slot(read_ctx_t *c)
{
    ps_server_t *s = c->s;
    c->slot = true;
    int64_t inflight = ps_gauge_add(&reads_inflight, 1);
    if (s->opts.read_concurrency != 0 && inflight > s->opts.read_concurrency) {
        ps_err_set(&c->err, PS_EUNAVAIL, "too many concurrent remote reads (the limit is %u, "
                   "--storage.remote.read-concurrent-limit); retry later", s->opts.read_concurrency);
        return 503;
    }
    return 0;
}

/* The run of a SAMPLES read's task, on the query pool under its budget: the whole answer. */
static int read_samples(ps_task_t *t)
{
    read_ctx_t c;
    memset(&c, 0, sizeof(c));
    c.s = t->srv;
    atomic_init(&c.cancel, 0);
    c.own_budget = false; /* the pool's */
    ps_err_clear(&c.err);
    c.type = PS_READ_SAMPLES;
    c.done = true;
    size_t cel;
    const char *ce = ps_task_header(t, "content-encoding", &cel);
    if ((c.status = take_slot(&c)) == 0 && (c.status = check_encoding(h2o_iovec_init(ce, cel), &c.err)) == 0)
        c.status = answer(&c, h2o_iovec_init(t->body, t->body_len), &c.type, &c.done, &c.err);
    release(&c);
    if (c.status != 0) {
        count_error(&c, c.err.code);
        if (c.status >= 500 && c.status != 503)
            ps_log_error("remote read failed", "err=%s", ps_log_q(c.err.msg));
        const char *msg = c.err.msg[0] ? c.err.msg : ps_strerror(c.err.code);
        ps_buf_t b = PS_BUF_INIT;
        ps_buf_printf(&b, "%s\n", msg);
        ps_task_send(t, c.status, "text/plain; charset=utf-8", b.data, b.len);
        ps_buf_dispose(&b);
    } else {
        ps_task_add_header(t, "content-encoding", "snappy", 6);
        ps_task_send(t, 200, c.type == PS_READ_SAMPLES ? "application/x-protobuf" : STREAMED_TYPE, c.out.data,
                     c.out.len);
    }
    ps_buf_dispose(&c.out);
    ps_arena_dispose(&c.arena);
    return 0;
}

int ps_api_read(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    /* to the pool unless over the read limit already (then the 503 at once, below); the task
     * takes its slot on the query thread */
    if (s->qpool != NULL &&
        (s->opts.read_concurrency == 0 || ps_gauge_get(&reads_inflight) < s->opts.read_concurrency) &&
        wants_samples(req))
        return ps_run_task(req, PS_ROUTE_POOL, read_samples, ps_answer_text_error);
    read_ctx_t *c = ps_xcalloc(1, sizeof(*c));
    c->s = s;
    c->out = (ps_buf_t)PS_BUF_INIT;
    c->link = h2o_mem_alloc_shared(&req->pool, sizeof(*c->link), on_link_dispose);
    c->link->c = c;
    budget_init(c, req);
    ps_err_clear(&c->err);
    c->type = PS_READ_SAMPLES;
    c->done = true;
    if ((c->status = take_slot(c)) == 0 && (c->status = check_encoding(ps_http_header(req, "content-encoding"), &c->err)) == 0) {
        /* a streamed read (or a bad one): decoded and begun on the query pool too, the body copied
         * first (the request may die while the piece runs); in place without the pool */
        if (s->qpool != NULL) {
            c->entity.len = req->entity.len;
            c->entity.base = ps_xmalloc(req->entity.len + 1);
            if (req->entity.len != 0)
                memcpy(c->entity.base, req->entity.base, req->entity.len);
            c->busy = true;
            if (ps_run_piece(s->qpool, req, task_first, on_first_done, c))
                return 0;
            c->busy = false;
        }
        c->status = answer(c, req->entity, &c->type, &c->done, &c->err);
    }
    respond(c, req);
    return 0;
}
