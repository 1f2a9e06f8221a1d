/*
 * ingest_job.c - the hand-off of one prepared profile to the writer thread, shared by the
 * single-profile ingest handlers (api_ingest.c, api_pyroscope_ingest.c): counted and answered
 * on the request's loop once durable, or answered with the handler's status for the error.
 */
#include <stdlib.h>

#include "core/log.h"
#include "http.h"
#include "internal.h"

ps_ingest_job_t *ps_ingest_job_new(h2o_req_t *req, const char *what, ps_ingest_status_fn status)
{
    ps_server_t *s = ps_http_server(req);
    if (atomic_load(&s->stopping)) {
        ps_http_error(req, PS_EUNAVAIL, "server is shutting down");
        return NULL;
    }
    ps_ingest_job_t *j = ps_xcalloc(1, sizeof(*j));
    j->srv = s;
    j->arena = ps_loop_arena_get(req);
    j->loop = ps_loop_of(req->conn->ctx);
    j->what = what;
    j->status = status;
    return j;
}

void ps_ingest_job_fail(ps_ingest_job_t *j, h2o_req_t *req, int status, const char *msg)
{
    ps_http_error_status(req, status, msg);
    ps_loop_arena_put(j->loop, j->arena);
    free(j);
}

/* the status of a writer error: "unavailable" while the server stops is 503 for every handler */
static int writer_status(const ps_ingest_job_t *j, int code)
{
    return code == PS_EUNAVAIL && atomic_load(&j->srv->stopping) ? 503 : j->status(code);
}

static void on_complete(ps_async_t *a, h2o_req_t *req)
{
    ps_ingest_job_t *j = (ps_ingest_job_t *)a;
    ps_append_t *app = &j->w.app;
    bool ok = j->w.status == 0 && app->status == 0;
    if (ok) { /* counted before the answer, so a client reading /metrics after its 200 sees it */
        atomic_fetch_add(&j->srv->ingest_profiles, 1);
        atomic_fetch_add(&j->srv->ingest_bytes, j->body_len);
        atomic_fetch_add(&j->srv->ingest_samples, app->profile->nsamples);
    } else {
        ps_log_debug(j->what, "err=%s", ps_log_q(j->w.status ? j->w.err.msg : app->err.msg));
    }
    if (req != NULL) {
        if (j->w.status != 0) {
            ps_http_error_status(req, writer_status(j, j->w.status), j->w.err.msg);
        } else if (app->status != 0) {
            ps_http_error_status(req, j->status(app->status), app->err.msg);
        } else {
            ps_buf_t b = PS_BUF_INIT;
            ps_ingest_result_json(app, &b);
            ps_http_send(req, 200, "application/json", b.data, b.len);
            ps_buf_dispose(&b);
        }
    }
    ps_loop_arena_put(j->loop, j->arena);
    free(j);
}

void ps_ingest_job_submit(ps_ingest_job_t *j, h2o_req_t *req)
{
    j->w.kind = PS_WREQ_APPEND;
    j->w.bytes = j->arena->used_total + req->entity.len; /* held until answered: the queue's bound */
    if (ps_async_submit_write(&j->async, &j->w, req, on_complete) != 0) {
        ps_err_t err = j->w.err;
        ps_ingest_job_fail(j, req, writer_status(j, err.code), err.msg);
    }
}
