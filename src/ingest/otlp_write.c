/*
 * otlp_write.c - an OTLP profiles export from any transport: decode and convert (otlp.c), hand
 * every append to the writer thread, answer once all are durable or refused (ingest.h,
 * ps_ingest_otlp). A store refusal of one append (out of order, conflict) refuses its OTLP
 * profile in partial_success; a failure of the writer itself (queue full, shutting down, disk
 * full) is the request's error, which the transport maps to its retryable status.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>

#include "ingest.h"

/* ---- the whole export, for any transport ---------------------------------------------------------- */

struct ps_otlp_export {
    ps_otlp_result_t res;
    int codec;
    ps_wreq_t *w; /* res.napps of them */
    atomic_size_t left;
    ps_otlp_done_fn done;
    void *ctx;
};

/* the answer of a request whose appends are all done (or that had none) */
static void finish(ps_otlp_export_t *x)
{
    int code = 0;
    const char *msg = NULL;
    for (size_t i = 0; i < x->res.napps; i++) {
        ps_wreq_t *w = &x->w[i];
        if (w->status != 0) { /* the writer's failure (queue full, stopping, disk full): the request's */
            if (code == 0) {
                code = w->status;
                msg = w->err.msg;
            }
        } else if (w->app.status != 0) {
            ps_ingest_otlp_refused(&x->res, i, &w->app.err);
        }
    }
    ps_buf_t resp = PS_BUF_INIT; /* not in x: done may free x's arena (the request answered) */
    if (code == 0)
        ps_otlp_response(x->codec, x->res.rejected, x->res.rejected ? x->res.msg : NULL, &resp);
    x->done(x->ctx, code, resp.data, resp.len, msg, &x->res);
    ps_buf_dispose(&resp);
}

static void on_write_done(ps_wreq_t *w)
{
    ps_otlp_export_t *x = w->ctx;
    if (atomic_fetch_sub(&x->left, 1) == 1)
        finish(x);
}

void ps_ingest_otlp(ps_writer_t *writer, int codec, const void *body, size_t n, size_t budget,
                    const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_otlp_done_fn done, void *ctx)
{
    ps_otlp_export_t *x = ps_arena_calloc(arena, 1, sizeof(*x));
    ps_err_t err;
    ps_err_clear(&err);
    x->codec = codec;
    x->done = done;
    x->ctx = ctx;
    if (ps_ingest_otlp_decode(codec, body, n, budget, lim, arena, &x->res, &err) != 0) {
        done(ctx, err.code, NULL, 0, err.msg, &x->res);
        return;
    }
    size_t napps = x->res.napps;
    if (napps == 0) {
        finish(x);
        return;
    }
    x->w = ps_arena_calloc(arena, napps, sizeof(*x->w));
    atomic_init(&x->left, napps);
    for (size_t i = 0; i < napps; i++) {
        ps_wreq_t *w = &x->w[i];
        w->kind = PS_WREQ_APPEND;
        w->app = *x->res.apps[i].app;
        w->on_done = on_write_done;
        w->ctx = x;
        if (i == 0) /* the request's arena, held until answered: the queue's bound */
            w->bytes = arena->used_total;
        if (ps_writer_submit(writer, w) != 0) { /* queue full or stopping: this one and the rest fail */
            for (size_t k = i; k < napps; k++) {
                x->w[k].status = w->err.code;
                if (k != i)
                    x->w[k].err = w->err;
            }
            if (atomic_fetch_sub(&x->left, napps - i) == napps - i)
                finish(x);
            return;
        }
    }
}

/* ---- a transport that waits (the gRPC listener's worker threads) ---- */

typedef struct otlp_wait {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool done;
    int code;
    ps_buf_t *resp;
    ps_err_t *err;
} otlp_wait_t;

static void on_waited(void *ctx, int code, const uint8_t *resp, size_t n, const char *msg, const ps_otlp_result_t *res)
{
    (void)res;
    otlp_wait_t *w = ctx;
    pthread_mutex_lock(&w->mu);
    w->code = code;
    if (code == 0)
        ps_buf_append(w->resp, resp, n);
    else
        ps_err_set(w->err, code, "%s", msg != NULL ? msg : "");
    w->done = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
}

int ps_ingest_otlp_wait(ps_writer_t *writer, int codec, const void *body, size_t n, const ps_pprof_limits_t *lim,
                        ps_buf_t *resp, ps_err_t *err)
{
    ps_arena_t a = PS_ARENA_INIT;
    otlp_wait_t w = {.resp = resp, .err = err};
    pthread_mutex_init(&w.mu, NULL);
    pthread_cond_init(&w.cv, NULL);
    ps_ingest_otlp(writer, codec, body, n, ps_ingest_otlp_budget(n, lim->max_inflated), lim, &a, on_waited, &w);
    pthread_mutex_lock(&w.mu);
    while (!w.done)
        pthread_cond_wait(&w.cv, &w.mu);
    pthread_mutex_unlock(&w.mu);
    pthread_cond_destroy(&w.cv);
    pthread_mutex_destroy(&w.mu);
    ps_arena_dispose(&a);
    return w.code;
}
