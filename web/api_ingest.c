/*
 * api_ingest.c - POST /api/v1/profiles/write: decode on this loop thread, hand the profile to the
 * writer thread, answer once it is durable.
 */
#include <string.h>

#include "http.h"
#include "internal.h"
#include "ingest/ingest.h"

int ps_api_profiles_write(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_err_t err;
    ps_params_t params;
    ps_ingest_params_t ip = {0};
    ip.delta = -1;
    ps_ingest_job_t *p = ps_ingest_job_new(req, "push rejected", ps_err_http_status);
    if (p == NULL)
        return 0;
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
    ps_ingest_job_submit(p, req);
    return 0;
Fail:
    ps_ingest_job_fail(p, req, ps_err_http_status(err.code), err.msg);
    return 0;
}
