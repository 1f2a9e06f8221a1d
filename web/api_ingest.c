/*
 * api_ingest.c - POST /api/v1/profiles/write: decode (a task: on the decode pool, or in place on
 * the loop), hand the profile to the writer thread, answer once it is durable.
 */
#include <string.h>

#include "task.h"
#include "internal.h"
#include "ingest/ingest.h"

int ps_api_profiles_write(ps_task_t *t)
{
    ps_server_t *s = t->srv;
    ps_err_t err;
    ps_params_t params;
    ps_ingest_params_t ip = {0};
    ip.delta = -1;
    ps_ingest_job_t *p = ps_ingest_job_new(t, "push rejected", ps_err_http_status);
    if (p == NULL)
        return 0;
    if (ps_task_params(t, false, &params, &err) != 0)
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
    if (t->body == NULL || t->body_len == 0) {
        ps_err_set(&err, PS_EINVAL, "empty body: expected a pprof profile (gzipped or not)");
        goto Fail;
    }
    ip.content_type = ps_task_header(t, "content-type", &ip.content_type_len);
    p->body_len = t->body_len;
    if (ps_ingest_prepare(t->body, t->body_len, &ip, &s->opts.limits, p->arena, &p->w.app, &err) != 0)
        goto Fail;
    ps_ingest_job_submit(p);
    return 0;
Fail:
    ps_ingest_job_fail(p, ps_err_http_status(err.code), err.msg);
    return 0;
}
