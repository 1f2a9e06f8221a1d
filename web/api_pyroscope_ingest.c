/*
 * api_pyroscope_ingest.c - POST /ingest, Pyroscope's legacy ingest (its SDKs: pyroscope-go,
 * @pyroscope/nodejs, ...): parameters and body checked by a task (on the decode pool, or in place on
 * the loop; src/ingest/pyroscope.c),
 * the profile handed to the writer thread, answered once durable.
 *
 * Statuses as Pyroscope answers: 200 stored; 400 bad metadata (the query parameters); 413 a body
 * over --max-body-size or a limit; 415 a format profstore does not take; 422 any other ingest
 * error (a body that cannot be read, a store that refuses the profile) but 400 for a time past
 * --storage.future-grace (as Pyroscope's "profile too new"); 429 the writer queue is
 * full; 503 shutting down; 507 the disk is full.
 */
#include "core/timeutil.h"
#include "task.h"
#include "internal.h"
#include "ingest/ingest.h"

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

static void param(const ps_params_t *ps, const char *name, const char **v, size_t *n)
{
    const ps_param_t *x = ps_params_get(ps, name);
    *v = x ? x->value : NULL;
    *n = x ? x->vlen : 0;
}

int ps_api_pyroscope_ingest(ps_task_t *t)
{
    ps_server_t *s = t->srv;
    ps_err_t err;
    ps_params_t params;
    ps_pyro_params_t in = {0};
    ps_pyro_meta_t meta;
    int status = 400;
    ps_ingest_job_t *p = ps_ingest_job_new(t, "pyroscope ingest rejected", ingest_status);
    if (p == NULL)
        return 0;
    if (ps_task_params(t, false, &params, &err) != 0)
        goto Fail;
    param(&params, "name", &in.name, &in.name_len);
    param(&params, "from", &in.from, &in.from_len);
    param(&params, "until", &in.until, &in.until_len);
    param(&params, "sampleRate", &in.sample_rate, &in.sample_rate_len);
    param(&params, "spyName", &in.spy_name, &in.spy_name_len);
    param(&params, "units", &in.units, &in.units_len);
    param(&params, "aggregationType", &in.aggregation, &in.aggregation_len);
    param(&params, "format", &in.format, &in.format_len);
    in.content_type = ps_task_header(t, "content-type", &in.content_type_len);
    if (ps_pyro_meta_parse(&in, ps_time_now(), p->arena, &meta, &err) != 0) {
        status = ps_err_http_status(err.code);
        goto Fail;
    }
    p->body_len = t->body_len;
    if (ps_pyro_prepare(t->body, t->body_len, &meta, &s->opts.limits, p->arena,
                        &p->w.app, &err) != 0) {
        status = ingest_status(err.code);
        goto Fail;
    }
    /* a profile too far in the future is bad metadata (from/until, or the pprof's time): 400, as
     * Pyroscope's "profile too new"; the store would refuse it too (422) */
    int64_t now = ps_time_now(), grace = ps_store_future_grace(s->store);
    if (grace > 0 && p->w.app.ts > now + grace) {
        ps_store_future_error(p->w.app.ts, now, grace, &err);
        goto Fail;
    }
    ps_ingest_job_submit(p);
    return 0;
Fail:
    ps_ingest_job_fail(p, status, err.msg);
    return 0;
}
