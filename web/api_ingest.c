/*
 * api_ingest.c - POST /api/v1/profiles/write: decode on this loop thread, hand the profile to the
 * writer thread, answer once it is durable.
 */
#include <stdlib.h>

#include "core/log.h"
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

static void on_complete(ps_async_t *a, h2o_req_t *req)
{
    pending_t *p = (pending_t *)a;
    ps_append_t *app = &p->w.app;
    bool ok = p->w.status == 0 && app->status == 0;
    if (ok) { /* counted before the answer, so a client reading /metrics after its 200 sees it */
        atomic_fetch_add(&p->srv->ingest_profiles, 1);
        atomic_fetch_add(&p->srv->ingest_bytes, p->body_len);
        atomic_fetch_add(&p->srv->ingest_samples, app->profile->nsamples);
    } else {
        ps_log_debug("push rejected", "err=%s", ps_log_q(p->w.status ? p->w.err.msg : app->err.msg));
    }
    if (req != NULL) {
        if (p->w.status != 0) {
            ps_http_error(req, p->w.status, p->w.err.msg);
        } else if (app->status != 0) {
            ps_http_error(req, app->status, app->err.msg);
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

int ps_api_profiles_write(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_err_t err;
    ps_params_t params;
    ps_ingest_params_t ip = {0};
    ip.delta = -1;
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
    const ps_param_t *v;
    if ((v = ps_params_get(&params, "name")) != NULL && v->vlen > 0) {
        ip.name = v->value;
        ip.name_len = v->vlen;
    }
    if ((v = ps_params_get(&params, "labels")) != NULL) {
        ip.labels = v->value;
        ip.labels_len = v->vlen;
    }
    if ((v = ps_params_get(&params, "time")) != NULL && v->vlen > 0) {
        ip.time = v->value;
        ip.time_len = v->vlen;
    }
    if ((v = ps_params_get(&params, "delta")) != NULL) {
        if (strcmp(v->value, "true") == 0 || strcmp(v->value, "1") == 0)
            ip.delta = 1;
        else if (strcmp(v->value, "false") == 0 || strcmp(v->value, "0") == 0)
            ip.delta = 0;
        else {
            ps_err_set(&err, PS_EINVAL, "delta: expected true or false, got \"%.32s\"", v->value);
            goto Fail;
        }
    }
    if (req->entity.base == NULL || req->entity.len == 0) {
        ps_err_set(&err, PS_EINVAL, "empty body: expected a pprof profile (gzipped or not)");
        goto Fail;
    }
    ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    if (ct >= 0) {
        ip.content_type = req->headers.entries[ct].value.base;
        ip.content_type_len = req->headers.entries[ct].value.len;
    }
    p->body_len = req->entity.len;
    if (ps_ingest_prepare(req->entity.base, req->entity.len, &ip, &s->opts.limits, p->arena, &p->w.app, &err) != 0)
        goto Fail;
    p->w.kind = PS_WREQ_APPEND;
    if (ps_async_submit_write(&p->async, &p->w, req, on_complete) != 0) {
        err = p->w.err;
        goto Fail;
    }
    return 0;
Fail:
    ps_http_error(req, err.code, err.msg);
    ps_loop_arena_put(p->loop, p->arena);
    free(p);
    return 0;
}
