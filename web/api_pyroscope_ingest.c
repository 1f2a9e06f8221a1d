/*
 * api_pyroscope_ingest.c - POST /ingest, Pyroscope's legacy ingest (its SDKs: pyroscope-go,
 * @pyroscope/nodejs, ...): parameters and body checked on this loop thread (src/ingest/pyroscope.c),
 * the profile handed to the writer thread, answered once durable.
 *
 * Statuses as Pyroscope answers: 200 stored; 400 bad metadata (the query parameters); 413 a body
 * over --max-body-size or a limit; 415 a format profstore does not take; 422 any other ingest
 * error (a body that cannot be read, a store that refuses the profile); 429 the writer queue is
 * full; 503 shutting down; 507 the disk is full.
 */
#include <stdlib.h>

#include "core/log.h"
#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "ingest/ingest.h"

typedef struct pending {
    ps_async_t async;
    ps_wreq_t w;
    ps_arena_t *arena; /* from the loop's pool */
    void *loop;
    ps_server_t *srv;
    size_t body_len;
} pending_t;

/* The status of an ingest (body or store) error. */
static int ingest_status(int code)
{
    switch (code) {
    case PS_EINVAL:
    case PS_ECONFLICT:
    case PS_EOUTOFORDER:
        return 422;
    case PS_EUNAVAIL:
        return 429;
    default:
        return ps_err_http_status(code);
    }
}

static void on_complete(ps_async_t *a, h2o_req_t *req)
{
    pending_t *p = (pending_t *)a;
    ps_append_t *app = &p->w.app;
    bool ok = p->w.status == 0 && app->status == 0;
    if (ok) {
        atomic_fetch_add(&p->srv->ingest_profiles, 1);
        atomic_fetch_add(&p->srv->ingest_bytes, p->body_len);
        atomic_fetch_add(&p->srv->ingest_samples, app->profile->nsamples);
    } else {
        ps_log_debug("pyroscope ingest rejected", "err=%s", ps_log_q(p->w.status ? p->w.err.msg : app->err.msg));
    }
    if (req != NULL) {
        if (p->w.status != 0) {
            ps_http_error_status(req, p->w.status == PS_EUNAVAIL && atomic_load(&p->srv->stopping) ? 503
                                      : ingest_status(p->w.status), p->w.err.msg);
        } else if (app->status != 0) {
            ps_http_error_status(req, ingest_status(app->status), app->err.msg);
        } else {
            ps_buf_t b = PS_BUF_INIT;
            ps_ingest_result_json(app, &b);
            ps_http_send(req, 200, "application/json", b.data, b.len);
            ps_buf_dispose(&b);
        }
    }
    ps_loop_arena_put(p->loop, p->arena);
    free(p);
}

static void param(const ps_params_t *ps, const char *name, const char **v, size_t *n)
{
    const ps_param_t *x = ps_params_get(ps, name);
    *v = x ? x->value : NULL;
    *n = x ? x->vlen : 0;
}

int ps_api_pyroscope_ingest(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_err_t err;
    ps_params_t params;
    ps_pyro_params_t in = {0};
    ps_pyro_meta_t meta;
    int status = 400;
    if (atomic_load(&s->stopping)) {
        ps_http_error(req, PS_EUNAVAIL, "server is shutting down");
        return 0;
    }
    pending_t *p = ps_xcalloc(1, sizeof(*p));
    p->srv = s;
    p->arena = ps_loop_arena_get(req);
    p->loop = ps_loop_of(req->conn->ctx);
    if (ps_http_params(req, false, p->arena, &params, &err) != 0)
        goto Fail;
    param(&params, "name", &in.name, &in.name_len);
    param(&params, "from", &in.from, &in.from_len);
    param(&params, "until", &in.until, &in.until_len);
    param(&params, "sampleRate", &in.sample_rate, &in.sample_rate_len);
    param(&params, "spyName", &in.spy_name, &in.spy_name_len);
    param(&params, "units", &in.units, &in.units_len);
    param(&params, "aggregationType", &in.aggregation, &in.aggregation_len);
    param(&params, "format", &in.format, &in.format_len);
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (ct >= 0) {
        in.content_type = req->headers.entries[ct].value.base;
        in.content_type_len = req->headers.entries[ct].value.len;
    }
    if (ps_pyro_meta_parse(&in, ps_time_now(), p->arena, &meta, &err) != 0) {
        status = ps_err_http_status(err.code);
        goto Fail;
    }
    p->body_len = req->entity.len;
    if (ps_pyro_prepare(req->entity.base, req->entity.base ? req->entity.len : 0, &meta, &s->opts.limits, p->arena,
                        &p->w.app, &err) != 0) {
        status = ingest_status(err.code);
        goto Fail;
    }
    p->w.kind = PS_WREQ_APPEND;
    if (ps_async_submit_write(&p->async, &p->w, req, on_complete) != 0) {
        err = p->w.err;
        status = atomic_load(&s->stopping) ? 503 : ingest_status(err.code);
        goto Fail;
    }
    return 0;
Fail:
    ps_http_error_status(req, status, err.msg);
    ps_loop_arena_put(p->loop, p->arena);
    free(p);
    return 0;
}
