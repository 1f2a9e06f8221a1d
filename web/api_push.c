/*
 * api_push.c - POST /push.v1.PusherService/Push (Connect, what Grafana Alloy's pyroscope.write
 * sends): decode the PushRequest (proto/pyroscope.h), build the appends (ingest/push.c), hand
 * each one to the writer thread, answer the empty PushResponse once every one is durable.
 *
 * Validation is all or nothing (nothing is written when any series or sample is bad). Storage is
 * per profile, as in Pyroscope: when one append fails in the store (out of order, conflict, disk
 * full) the answer is that failure's Connect code, and the profiles stored meanwhile stay; a
 * retry of the same request stores the rest, the stored ones being identical duplicates.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "connect.h"
#include "core/log.h"
#include "ingest/ingest.h"
#include "internal.h"
#include "proto/pyroscope.h"
#include "qpool.h"

typedef struct pending {
    ps_connect_call_t *c;
    ps_wreq_t *w;          /* n of them */
    size_t n;
    atomic_size_t left;    /* appends not done yet */
    size_t body_len;
} pending_t;

/* The decoding budget: protobuf-c copies raw profiles once (1x), and a label of ~12 bytes on the
 * wire takes ~70 as structs (6x): 8x the body, at most --max-inflated-size, plus 1 MiB. */
static size_t decode_budget(size_t n, const ps_server_t *s)
{
    size_t cap = s->opts.limits.max_inflated ? s->opts.limits.max_inflated : (64u << 20);
    return (n < cap / 8 ? n * 8 : cap) + (1u << 20);
}

/* the empty PushResponse in the call's codec */
static void reply_ok(ps_connect_call_t *c)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_pyro_push_response(c->codec, &b);
    ps_connect_reply_take(c, &b);
}

/* on the loop, the writer done with every append */
static void on_finish(ps_task_t *t)
{
    pending_t *p = t->finish_arg;
    ps_connect_call_t *c = p->c;
    const ps_err_t *bad = NULL;
    int bad_code = 0;
    for (size_t i = 0; i < p->n; i++) {
        ps_wreq_t *w = &p->w[i];
        if (w->status == 0 && w->app.status == 0) {
            ps_ingest_count(1, w->app.profile->nsamples, 0);
        } else if (bad == NULL) {
            bad = w->status != 0 ? &w->err : &w->app.err;
            bad_code = w->status != 0 ? w->status : w->app.status;
        }
    }
    if (bad == NULL)
        ps_ingest_count(0, 0, p->body_len);
    if (bad != NULL) {
        ps_log_debug("connect push rejected", "err=%s", ps_log_q(bad->msg));
        ps_connect_error(c, ps_connect_code_of(bad_code), bad->msg);
        return;
    }
    reply_ok(c);
}

static void on_write_done(ps_wreq_t *w)
{
    pending_t *p = w->ctx;
    if (atomic_fetch_sub(&p->left, 1) == 1)
        ps_task_release(p->c->t); /* the last release: back to the request's loop */
}

int ps_connect_push(ps_connect_call_t *c)
{
    ps_server_t *s = c->srv;
    ps_err_t err;
    if (atomic_load(&s->stopping)) {
        ps_connect_error(c, PS_CONNECT_UNAVAILABLE, "server is shutting down");
        return 0;
    }
    ps_pyro_push_t req;
    if (ps_pyro_push_decode(c->codec, c->body, c->body_len, c->arena, decode_budget(c->body_len, s), &req, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    ps_append_t **apps;
    size_t napps;
    ps_par_t par; /* a request's profiles decode on every idle decode thread */
    bool lent = ps_qpool_par(s->dpool, &par);
    if (ps_ingest_push_prepare(&req, &s->opts.limits, lent ? &par : NULL, c->arena, &apps, &napps, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    if (napps == 0) { /* nothing to store: answered at once */
        reply_ok(c);
        return 0;
    }
    pending_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    p->c = c;
    p->n = napps;
    p->body_len = c->body_len;
    p->w = ps_arena_calloc(c->arena, napps, sizeof(*p->w));
    atomic_init(&p->left, napps);
    c->t->finish = on_finish;
    c->t->finish_arg = p;
    ps_task_hold(c->t); /* until the writer is done with every append */
    for (size_t i = 0; i < napps; i++) {
        ps_wreq_t *w = &p->w[i];
        w->kind = PS_WREQ_APPEND;
        w->app = *apps[i];
        w->on_done = on_write_done;
        w->ctx = p;
        if (i == 0) /* the request's arena and body, held until answered: the queue's bound */
            w->bytes = c->arena->used_total; /* the body's copy included */
        if (ps_writer_submit(s->writer, w) != 0) { /* queue full or stopping: this one and the rest fail */
            for (size_t k = i; k < napps; k++) {
                p->w[k].status = w->err.code;
                if (k != i)
                    p->w[k].err = w->err;
            }
            if (atomic_fetch_sub(&p->left, napps - i) == napps - i)
                ps_task_release(c->t);
            break;
        }
    }
    return 0;
}
