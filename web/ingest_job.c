/*
 * ingest_job.c - the hand-off of a task's write to the writer thread (ps_task_write), and of one
 * prepared profile, shared by the single-profile ingest handlers (api_ingest.c,
 * api_pyroscope_ingest.c): counted and answered once durable, or answered with the handler's
 * status for the error.
 */
#include <stdlib.h>

#include "core/log.h"
#include "core/metrics.h"
#include "internal.h"
#include "task.h"

/* pushed profiles stored, of every push API: relaxed atomics, bumped on the loops */
static ps_counter_t ingest_profiles, ingest_bytes, ingest_samples;

static const ps_metric_t m_profiles = {"profstore_ingest_profiles_total", PS_COUNTER, "Profiles pushed and stored."},
                         m_bytes = {"profstore_ingest_bytes_total", PS_COUNTER,
                                    "Bytes of pushed profiles stored (as received)."},
                         m_samples = {"profstore_ingest_samples_total", PS_COUNTER, "pprof samples in stored profiles."};

void ps_ingest_count(uint64_t profiles, uint64_t samples, uint64_t bytes)
{
    ps_counter_add(&ingest_profiles, profiles);
    ps_counter_add(&ingest_samples, samples);
    ps_counter_add(&ingest_bytes, bytes);
}

void ps_ingest_metrics(ps_buf_t *out)
{
    ps_metric_write_u64(out, &m_profiles, ps_counter_get(&ingest_profiles));
    ps_metric_write_u64(out, &m_bytes, ps_counter_get(&ingest_bytes));
    ps_metric_write_u64(out, &m_samples, ps_counter_get(&ingest_samples));
}

static void on_task_write_done(ps_wreq_t *w)
{
    ps_task_release(w->ctx); /* the last release: back to the request's loop */
}

int ps_task_write(ps_task_t *t, ps_wreq_t *w, void (*finish)(ps_task_t *t), void *arg)
{
    w->on_done = on_task_write_done;
    w->ctx = t;
    t->finish = finish;
    t->finish_arg = arg;
    ps_task_hold(t);
    if (ps_writer_submit(t->srv->writer, w) != 0) {
        t->finish = NULL;
        t->finish_arg = NULL;
        ps_task_release(t); /* not the last: the run holds t */
        return -1;
    }
    return 0;
}

ps_ingest_job_t *ps_ingest_job_new(ps_task_t *t, const char *what, ps_ingest_status_fn status)
{
    ps_server_t *s = t->srv;
    if (atomic_load(&s->stopping)) {
        ps_task_error(t, PS_EUNAVAIL, "server is shutting down");
        return NULL;
    }
    ps_ingest_job_t *j = ps_arena_calloc(t->arena, 1, sizeof(*j));
    j->t = t;
    j->srv = s;
    j->arena = t->arena;
    j->what = what;
    j->status = status;
    return j;
}

void ps_ingest_job_fail(ps_ingest_job_t *j, int status, const char *msg)
{
    ps_task_error_status(j->t, status, msg);
}

/* the status of a writer error: "unavailable" while the server stops is 503 for every handler */
static int writer_status(const ps_ingest_job_t *j, int code)
{
    return code == PS_EUNAVAIL && atomic_load(&j->srv->stopping) ? 503 : j->status(code);
}

/* on the loop, the writer done */
static void on_finish(ps_task_t *t)
{
    ps_ingest_job_t *j = t->finish_arg;
    ps_append_t *app = &j->w.app;
    bool ok = j->w.status == 0 && app->status == 0;
    if (ok) { /* counted before the answer, so a client reading /metrics after its 200 sees it */
        ps_ingest_count(1, app->profile->nsamples, j->body_len);
    } else {
        ps_log_debug(j->what, "err=%s", ps_log_q(j->w.status ? j->w.err.msg : app->err.msg));
    }
    if (j->w.status != 0) {
        ps_task_error_status(t, writer_status(j, j->w.status), j->w.err.msg);
    } else if (app->status != 0) {
        ps_task_error_status(t, j->status(app->status), app->err.msg);
    } else {
        ps_buf_t b = PS_BUF_INIT;
        ps_ingest_result_json(app, &b);
        ps_task_send(t, 200, "application/json", b.data, b.len);
        ps_buf_dispose(&b);
    }
}

void ps_ingest_job_submit(ps_ingest_job_t *j)
{
    j->w.kind = PS_WREQ_APPEND;
    j->w.bytes = j->arena->used_total; /* the body's copy included: held until answered, the queue's bound */
    if (ps_task_write(j->t, &j->w, on_finish, j) != 0) {
        ps_err_t err = j->w.err;
        ps_ingest_job_fail(j, writer_status(j, err.code), err.msg);
    }
}
