/*
 * test_writer.c - the writer thread (src/ingest/writer.c) on a store in a temporary directory:
 * group commit answers every request exactly once with its status, a failing profile fails
 * alone in its batch, stop drains the queue, a submit while stopping is refused with PS_EUNAVAIL
 * and one into a full queue (items, weight or bytes) with PS_EOVERLOAD; on a store that syncs, a
 * request is answered only once its commit is durable (its meta page synced too).
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "../testutil.h"

#include "core/hash.h"
#include "core/timeutil.h"
#include "ingest/ingest.h"
#include "storage/internal.h"


static uint8_t *body;
static size_t body_len;

static void load_body(void)
{
    if (body == NULL)
        body = ps_test_read_fixture("go/goroutine-01.pb.gz", &body_len);
}

typedef struct env {
    char *dir;
    ps_store_t *store;
} env_t;

static int setup(void **state)
{
    env_t *e = calloc(1, sizeof(*e));
    e->dir = ps_test_tmpdir("/tmp/ps-test-writer-XXXXXX");
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = e->dir;
    o.map_size = 1ull << 30;
    o.retention_ns = 0;
    o.nosync = true;
    ps_err_t err;
    if (ps_store_open(&o, &e->store, &err) != 0)
        fail_msg("open: %s", err.msg);
    load_body();
    *state = e;
    return 0;
}

static int teardown(void **state)
{
    env_t *e = *state;
    ps_store_close(e->store);
    ps_test_rm_rf(e->dir);
    free(e->dir);
    free(e);
    return 0;
}

/* one request: a goroutine profile for series {n="<n>"} at time t (seconds) */
typedef struct treq {
    ps_wreq_t w;
    ps_arena_t arena;
    atomic_int calls;
    ps_writer_t *writer;      /* for on_done_submit */
    struct treq *resubmit;    /* submitted from on_done (while the writer stops) */
    int resubmit_rc;
} treq_t;

static atomic_int done_total;
/* when set: on_done counts answers given before the commit was durable (storage/internal.h:
 * on the writer thread no commit runs during on_done, so last_txn is the newest; the batch being
 * answered is at most the one before it, and that one must be durable) */
static ps_store_t *check_durable;
static atomic_int early_answers;

/* ps_writer_opts_t.answers: whether the writer is between answers(true) and answers(false), how
 * often it opened, and the answers given outside (when counting) */
static atomic_bool answers_open, answers_counting;
static atomic_int answers_groups, answers_outside, answers_unpaired;

static void answers_hook(bool begin) /* on the writer thread: counts, asserted by the test */
{
    if (atomic_load(&answers_open) == begin)
        atomic_fetch_add(&answers_unpaired, 1); /* opened twice, or closed while not open */
    if (begin)
        atomic_fetch_add(&answers_groups, 1);
    atomic_store(&answers_open, begin);
}

static void on_done(ps_wreq_t *w)
{
    treq_t *r = w->ctx;
    if (atomic_load(&answers_counting) && !atomic_load(&answers_open))
        atomic_fetch_add(&answers_outside, 1);
    if (check_durable != NULL &&
        atomic_load(&check_durable->durable_txn) + 1 < atomic_load(&check_durable->last_txn))
        atomic_fetch_add(&early_answers, 1);
    atomic_fetch_add(&r->calls, 1);
    atomic_fetch_add(&done_total, 1);
}

static void on_done_submit(ps_wreq_t *w)
{
    treq_t *r = w->ctx;
    if (r->resubmit != NULL)
        r->resubmit_rc = ps_writer_submit(r->writer, &r->resubmit->w);
    on_done(w);
}

static treq_t *make_req(int n, int64_t t)
{
    treq_t *r = calloc(1, sizeof(*r));
    r->arena = (ps_arena_t)PS_ARENA_INIT;
    char labels[32], ts[32];
    snprintf(labels, sizeof(labels), "{n=\"%d\"}", n);
    snprintf(ts, sizeof(ts), "%lld", (long long)t);
    ps_ingest_params_t ip = {0};
    ip.labels = labels;
    ip.labels_len = strlen(labels);
    ip.time = ts;
    ip.time_len = strlen(ts);
    ip.delta = -1;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    if (ps_ingest_prepare(body, body_len, &ip, &lim, &r->arena, &r->w.app, &err) != 0)
        fail_msg("prepare: %s", err.msg);
    r->w.kind = PS_WREQ_APPEND;
    r->w.on_done = on_done;
    r->w.ctx = r;
    return r;
}

static void free_req(treq_t *r)
{
    ps_arena_dispose(&r->arena);
    free(r);
}

static void wait_done(int want)
{
    for (int i = 0; i < 1000 && atomic_load(&done_total) < want; i++)
        usleep(10000);
    assert_int_equal(atomic_load(&done_total), want);
}


/* ps_writer_start, failing the test if the store's writer cannot be opened */
static ps_writer_t *start_on(ps_store_t *store, const ps_writer_opts_t *o)
{
    ps_err_t err;
    ps_err_clear(&err);
    ps_writer_t *w = ps_writer_start(store, o, &err);
    if (w == NULL)
        fail_msg("writer start: %s", err.msg);
    return w;
}
static ps_writer_t *start_eager(env_t *e, int64_t commit_delay_ns, uint32_t max_queue, uint32_t eager_samples)
{
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    o.commit_delay_ns = commit_delay_ns;
    o.eager_samples = eager_samples;
    if (max_queue)
        o.max_queue = max_queue;
    atomic_store(&done_total, 0);
    return start_on(e->store, &o);
}

static ps_writer_t *start(env_t *e, int64_t commit_delay_ns, uint32_t max_queue)
{
    return start_eager(e, commit_delay_ns, max_queue, PS_WRITER_EAGER_SAMPLES);
}

static int count_one(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    (*(int *)ctx)++;
    return 0;
}

static int count_series(ps_store_t *s)
{
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    int n = 0;
    assert_int_equal(ps_reader_series_foreach(r, count_one, &n, NULL), 0);
    ps_reader_end(r);
    return n;
}

#define T0 1796022000

/* One request (n=100) through w and committed: the writer's next commit is a commit delay away,
 * so what is submitted next waits in the queue. Free it with free_req. */
static treq_t *warm_up(ps_writer_t *w)
{
    treq_t *warm = make_req(100, T0);
    assert_int_equal(ps_writer_submit(w, &warm->w), 0);
    wait_done(1);
    return warm;
}

static void test_every_request_answered_once(void **state)
{
    env_t *e = *state;
    enum { N = 40 };
    ps_writer_t *w = start(e, 20 * 1000000, 0);
    treq_t *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = make_req(i, T0);
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
    }
    wait_done(N);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&r[i]->calls), 1);
        assert_int_equal(r[i]->w.status, 0);
        assert_int_equal(r[i]->w.app.status, 0);
        assert_int_equal(r[i]->w.app.duplicate, 0);
        assert_true(r[i]->w.app.series_ids[0] > 0);
        free_req(r[i]);
    }
    assert_int_equal(st.appended, N);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.queued, 0);
    assert_true(st.batches >= 1 && st.batches < N); /* grouped: 40 profiles in 20 ms windows */
    assert_int_equal(count_series(e->store), N);
}

static void test_failing_profile_fails_alone(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 0, 0);
    treq_t *first = make_req(1, T0 + 10);
    assert_int_equal(ps_writer_submit(w, &first->w), 0);
    wait_done(1);
    ps_writer_stop(w);
    assert_int_equal(first->w.app.status, 0);

    /* a long commit delay after a commit: the three wait and go into one transaction */
    w = start(e, 300 * 1000000, 0);
    treq_t *warm = make_req(9, T0);
    assert_int_equal(ps_writer_submit(w, &warm->w), 0);
    wait_done(1);
    ps_writer_stats_t st0, st1;
    ps_writer_stats(w, &st0);
    treq_t *a = make_req(2, T0 + 5), *late = make_req(1, T0 + 5) /* older than T0+10: out of order */,
           *c = make_req(3, T0 + 5);
    assert_int_equal(ps_writer_submit(w, &a->w), 0);
    assert_int_equal(ps_writer_submit(w, &late->w), 0);
    assert_int_equal(ps_writer_submit(w, &c->w), 0);
    wait_done(4);
    ps_writer_stats(w, &st1);
    ps_writer_stop(w);
    assert_int_equal(st1.batches - st0.batches, 1);
    assert_int_equal(st1.appended - st0.appended, 2);
    assert_int_equal(st1.failed - st0.failed, 1);
    assert_int_equal(a->w.app.status, 0);
    assert_int_equal(c->w.app.status, 0);
    assert_int_equal(late->w.app.status, PS_EOUTOFORDER);
    assert_non_null(strstr(late->w.app.err.msg, "out of order"));
    assert_int_equal(atomic_load(&late->calls), 1);
    assert_int_equal(count_series(e->store), 4); /* n=1, 2, 3, 9 */
    free_req(first);
    free_req(warm);
    free_req(a);
    free_req(late);
    free_req(c);
}

static void test_stop_drains_the_queue(void **state)
{
    env_t *e = *state;
    enum { N = 10 };
    ps_writer_t *w = start(e, 5 * PS_NS_PER_S, 0);
    treq_t *warm = warm_up(w);
    /* the next commit is 5 s away: these wait in the queue until stop */
    treq_t *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = make_req(i, T0);
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
    }
    usleep(50000);
    assert_int_equal(atomic_load(&done_total), 1);
    int64_t t0 = ps_time_mono();
    ps_writer_stop(w);
    assert_true(ps_time_mono() - t0 < 2 * PS_NS_PER_S); /* stop does not wait out the delay */
    assert_int_equal(atomic_load(&done_total), N + 1);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&r[i]->calls), 1);
        assert_int_equal(r[i]->w.status, 0);
        assert_int_equal(r[i]->w.app.status, 0);
        free_req(r[i]);
    }
    assert_int_equal(count_series(e->store), N + 1);
    free_req(warm);
}

static void test_submit_while_stopping_unavailable(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 5 * PS_NS_PER_S, 0);
    treq_t *warm = make_req(1, T0);
    assert_int_equal(ps_writer_submit(w, &warm->w), 0);
    wait_done(1);
    /* queued until stop; its on_done (during the drain) submits another request */
    treq_t *r = make_req(2, T0), *again = make_req(3, T0);
    r->w.on_done = on_done_submit;
    r->writer = w;
    r->resubmit = again;
    r->resubmit_rc = 1;
    assert_int_equal(ps_writer_submit(w, &r->w), 0);
    ps_writer_stop(w);
    assert_int_equal(atomic_load(&r->calls), 1);
    assert_int_equal(r->resubmit_rc, PS_EUNAVAIL);
    assert_string_equal(again->w.err.msg, "server is shutting down");
    assert_int_equal(atomic_load(&again->calls), 0); /* refused: never answered by the writer */
    assert_int_equal(count_series(e->store), 2);
    free_req(warm);
    free_req(r);
    free_req(again);
}

static void test_full_queue_refuses(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 5 * PS_NS_PER_S, 3);
    treq_t *warm = warm_up(w);
    treq_t *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = make_req(i, T0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.queued, 3);
    assert_int_equal(ps_writer_submit(w, &r[3]->w), PS_EOVERLOAD);
    assert_string_equal(r[3]->w.err.msg, "write queue is full (3 requests, 0 MiB waiting for the writer; limits "
                                         "the write queue item limit=3, the write queue byte limit=256 MiB): "
                                         "retry later");
    ps_writer_stats(w, &st);
    assert_int_equal(st.refused_queue_full, 1);
    ps_writer_stop(w);
    for (int i = 0; i < 3; i++)
        assert_int_equal(atomic_load(&r[i]->calls), 1);
    assert_int_equal(atomic_load(&r[3]->calls), 0);
    assert_int_equal(count_series(e->store), 4); /* n=100, 0, 1, 2 */
    for (int i = 0; i < 4; i++)
        free_req(r[i]);
    free_req(warm);
}

/* The queue is bounded by the bytes its requests hold too; an empty queue takes one of any size. */
static void test_queue_by_bytes(void **state)
{
    env_t *e = *state;
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    o.commit_delay_ns = 5 * PS_NS_PER_S;
    o.max_queue_bytes = 1000;
    atomic_store(&done_total, 0);
    ps_writer_t *w = start_on(e->store, &o);
    treq_t *warm = warm_up(w);
    treq_t *r[4];
    for (int i = 0; i < 4; i++)
        r[i] = make_req(i, T0);
    r[0]->w.bytes = 5000; /* alone in the queue: taken */
    r[1]->w.bytes = 1;    /* behind it: over the bound */
    assert_int_equal(ps_writer_submit(w, &r[0]->w), 0);
    assert_int_equal(ps_writer_submit(w, &r[1]->w), PS_EOVERLOAD);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.queued, 1);
    assert_int_equal(st.queued_bytes, 5000);
    assert_int_equal(st.refused_queue_full, 1);
    ps_writer_stop(w);
    w = start_on(e->store, &o);
    r[2]->w.bytes = 600;
    r[3]->w.bytes = 400; /* 600 + 400 = 1000: fits exactly */
    assert_int_equal(ps_writer_submit(w, &r[2]->w), 0);
    assert_int_equal(ps_writer_submit(w, &r[3]->w), 0);
    ps_writer_stop(w);
    assert_int_equal(atomic_load(&r[0]->calls), 1);
    assert_int_equal(atomic_load(&r[1]->calls), 0);
    assert_int_equal(atomic_load(&r[3]->calls), 1);
    assert_int_equal(count_series(e->store), 4); /* n=100, 0, 2, 3 */
    free_req(warm);
    for (int i = 0; i < 4; i++)
        free_req(r[i]);
}

static void test_admin_requests(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 0, 0);
    treq_t *a = make_req(1, T0);
    assert_int_equal(ps_writer_submit(w, &a->w), 0);
    wait_done(1);
    treq_t *c = calloc(1, sizeof(*c));
    c->w.kind = PS_WREQ_COMPACT;
    c->w.on_done = on_done;
    c->w.ctx = c;
    c->w.status = 1;
    assert_int_equal(ps_writer_submit(w, &c->w), 0);
    wait_done(2);
    ps_writer_stop(w);
    assert_int_equal(c->w.status, 0);
    assert_int_equal(c->w.count, 1); /* one series, its head folded into one chunk */
    assert_int_equal(atomic_load(&c->calls), 1);
    free_req(a);
    free(c);
}

/* ---- float samples (PS_WREQ_SAMPLES, src/ingest/remote.c) ---- */

/* A remote-write request for series {__name__="m", n="<n>"}: nsamples samples 1 s apart from t0 (ms). */
static treq_t *make_samples(int n, int64_t t0, uint32_t nsamples)
{
    treq_t *r = calloc(1, sizeof(*r));
    r->arena = (ps_arena_t)PS_ARENA_INIT;
    ps_remote_write_t *w = ps_arena_calloc(&r->arena, 1, sizeof(*w));
    w->version = 1;
    w->nseries = 1;
    w->series = ps_arena_calloc(&r->arena, 1, sizeof(*w->series));
    char v[16];
    snprintf(v, sizeof(v), "%d", n);
    ps_labels_set(&w->series[0].labels, &r->arena, "__name__", 8, "m", 1);
    ps_labels_set(&w->series[0].labels, &r->arena, "n", 1, v, strlen(v));
    w->series[0].samples = ps_arena_alloc(&r->arena, nsamples * sizeof(ps_remote_sample_t));
    for (uint32_t i = 0; i < nsamples; i++)
        w->series[0].samples[i] = (ps_remote_sample_t){t0 + 1000ll * i, (double)i};
    w->series[0].nsamples = nsamples;
    w->series[0].meta = -1;
    w->nsamples = nsamples;
    ps_ingest_remote_prepare(w, &r->arena, &r->w);
    r->w.on_done = on_done;
    r->w.ctx = r;
    return r;
}

static int count_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    (void)s;
    *(size_t *)ctx += n;
    return 0;
}

/* Samples and profiles in one batch; the outcome of a request in Mimir's words. */
static void test_samples_with_profiles(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 50 * 1000000, 0);
    treq_t *warm = warm_up(w);
    treq_t *p = make_req(1, T0 + 1), *a = make_samples(1, T0 * 1000ll, 10), *b = make_samples(2, T0 * 1000ll, 5);
    assert_int_equal(ps_writer_submit(w, &a->w), 0);
    assert_int_equal(ps_writer_submit(w, &p->w), 0);
    assert_int_equal(ps_writer_submit(w, &b->w), 0);
    wait_done(4);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 2); /* the warm-up, then the three together */
    assert_int_equal(st.samples_written, 15);
    assert_int_equal(st.samples_rejected, 0);
    assert_int_equal(p->w.app.status, 0);
    ps_remote_result_t res;
    ps_buf_t msg = PS_BUF_INIT;
    assert_int_equal(ps_ingest_remote_result(&a->w, &res, &msg), 0);
    assert_int_equal(res.written, 10);
    assert_int_equal(msg.len, 0);
    /* again, overlapping: 4 older than the newest (out of order, though equal to what is stored),
     * the newest again (an identical duplicate), with another value, one new, one older */
    treq_t *c = make_samples(1, T0 * 1000ll + 5000, 7);
    c->w.floats[0]->samples = ps_arena_alloc(&c->arena, 8 * sizeof(ps_float_sample_t));
    ps_float_sample_t *smp = (ps_float_sample_t *)c->w.floats[0]->samples;
    for (int i = 0; i < 5; i++)
        smp[i] = (ps_float_sample_t){T0 * 1000ll + 5000 + 1000 * i, 5.0 + i};
    smp[5] = (ps_float_sample_t){T0 * 1000ll + 9000, 42};  /* the newest's timestamp, another value */
    smp[6] = (ps_float_sample_t){T0 * 1000ll + 10000, 10}; /* new */
    smp[7] = (ps_float_sample_t){T0 * 1000ll + 3000, 3};   /* out of order */
    c->w.floats[0]->nsamples = 8;
    assert_int_equal(ps_writer_submit(w, &c->w), 0);
    wait_done(5);
    ps_writer_stop(w);
    ps_buf_reset(&msg);
    assert_int_equal(ps_ingest_remote_result(&c->w, &res, &msg), PS_EINVAL);
    assert_int_equal(res.written, 1);
    assert_int_equal(res.duplicates, 1);
    assert_int_equal(res.dup_conflicts, 1);
    assert_int_equal(res.out_of_order, 5);
    ps_buf_putc(&msg, 0);
    /* 1796022009000 ms = 2026-11-30T07:00:09Z */
    assert_string_equal((char *)msg.data,
                        "6 of 8 samples rejected (5 out of order sample, 1 duplicate sample for timestamp, 0 out of "
                        "bounds); the 2 others are stored. First rejected: series {__name__=\"m\", n=\"1\"}: 5 out "
                        "of order sample(s) (older than the series' newest sample), the first at 1796022005000 "
                        "(2026-11-30T07:00:05Z); 1 duplicate sample(s) for timestamp (another value is stored there), "
                        "the first at 1796022009000 (2026-11-30T07:00:09Z)");
    ps_buf_dispose(&msg);
    free_req(warm);
    free_req(p);
    free_req(a);
    free_req(b);
    free_req(c);
}

/* Float samples logged (the series had a head record) wait for a checkpoint, which the writer makes
 * once idle for a second: the log is empty then, the samples all there. */
static void test_samples_idle_checkpoint(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start(e, 0, 0);
    treq_t *a = make_samples(1, T0 * 1000ll, 3), *b = make_samples(1, T0 * 1000ll + 3000, 4);
    assert_int_equal(ps_writer_submit(w, &a->w), 0); /* the head written */
    wait_done(1);
    assert_int_equal(ps_writer_submit(w, &b->w), 0); /* logged */
    wait_done(2);
    ps_store_stats_t st;
    ps_err_t err;
    assert_int_equal(ps_store_stats(e->store, &st, &err), 0);
    assert_int_equal(st.float_log_records, 1);
    assert_int_equal(st.float_heads, 1);
    for (int i = 0; i < 300 && st.float_log_records > 0; i++) {
        usleep(10000);
        assert_int_equal(ps_store_stats(e->store, &st, &err), 0);
    }
    assert_int_equal(st.float_log_records, 0);
    ps_writer_stop(w);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(e->store, &r, &err), 0);
    size_t n = 0;
    assert_int_equal(ps_reader_samples(r, a->w.floats[0]->sid, INT64_MIN, INT64_MAX, count_samples, &n, &err), 0);
    ps_reader_end(r);
    assert_int_equal(n, 7);
    free_req(a);
    free_req(b);
}

/* Samples requests queue by weight: past max_queue units the next one is refused (503). */
static void test_samples_queue_by_weight(void **state)
{
    env_t *e = *state;
    ps_writer_t *w = start_eager(e, 5 * PS_NS_PER_S, 10, 0); /* 0: the delay holds them queued */
    treq_t *warm = warm_up(w);
    /* weight 1 + 4096/1024 = 5 each: two fill 10 units, the third is refused */
    treq_t *r[3];
    for (int i = 0; i < 3; i++)
        r[i] = make_samples(i, T0 * 1000ll, 4 * PS_WRITER_SAMPLES_PER_UNIT);
    assert_int_equal(ps_writer_submit(w, &r[0]->w), 0);
    assert_int_equal(ps_writer_submit(w, &r[1]->w), 0);
    assert_int_equal(ps_writer_submit(w, &r[2]->w), PS_EOVERLOAD);
    assert_non_null(strstr(r[2]->w.err.msg, "write queue is full (2 requests"));
    ps_writer_stop(w);
    assert_int_equal(atomic_load(&r[0]->calls), 1);
    assert_int_equal(atomic_load(&r[1]->calls), 1);
    assert_int_equal(atomic_load(&r[2]->calls), 0);
    assert_int_equal(r[0]->w.floats[0]->accepted, 4 * PS_WRITER_SAMPLES_PER_UNIT);
    for (int i = 0; i < 3; i++)
        free_req(r[i]);
    free_req(warm);
}

/* A samples request weighs 1 + samples / PS_WRITER_SAMPLES_PER_UNIT against max_batch. */
static void test_samples_batch_weight(void **state)
{
    env_t *e = *state;
    for (int big = 0; big < 2; big++) {
        ps_writer_opts_t o;
        ps_writer_opts_default(&o);
        o.commit_delay_ns = 200 * 1000000ll;
        o.max_batch = 4;
        atomic_store(&done_total, 0);
        ps_writer_t *w = start_on(e->store, &o);
        treq_t *warm = make_req(200 + big, T0 + 100 + big);
        assert_int_equal(ps_writer_submit(w, &warm->w), 0);
        wait_done(1);
        uint32_t n = big ? 3 * PS_WRITER_SAMPLES_PER_UNIT : 10; /* weight 4, or 1 */
        treq_t *r[3];
        for (int i = 0; i < 3; i++) {
            r[i] = make_samples(10 * big + i, T0 * 1000ll, n);
            assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
            usleep(20000); /* the writer is awake: only the group-commit delay keeps them together */
        }
        wait_done(4);
        ps_writer_stats_t st;
        ps_writer_stats(w, &st);
        ps_writer_stop(w);
        assert_int_equal(st.batches, big ? 4 : 2);
        assert_int_equal(st.samples_written, 3 * n);
        for (int i = 0; i < 3; i++)
            free_req(r[i]);
        free_req(warm);
    }
}

/* Samples requests holding eager_samples samples between them are committed without waiting for
 * the group-commit interval; smaller ones wait (and share a commit), as profiles do. */
static void test_samples_eager_commit(void **state)
{
    env_t *e = *state;
    /* without the threshold, three requests 20 ms apart share one commit after the 300 ms delay;
     * with it, each request of 2,000 samples commits at once: under a delay of 60 s each answer
     * (and the first one's) comes within wait_done's 10 s only when nothing waited for the delay */
    for (int eager = 0; eager < 2; eager++) {
        ps_writer_t *w = start_eager(e, eager ? 60 * PS_NS_PER_S : 300 * 1000000ll, 0, eager ? 2000 : 0);
        treq_t *warm = eager ? make_samples(300 + eager, T0 * 1000ll, 2000) : make_req(300 + eager, T0 + 200 + eager);
        assert_int_equal(ps_writer_submit(w, &warm->w), 0);
        wait_done(1);
        treq_t *r[3];
        for (int i = 0; i < 3; i++) {
            r[i] = make_samples(20 + 10 * eager + i, T0 * 1000ll, 2000);
            assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
            if (eager)
                wait_done(2 + i);
            else
                usleep(20000); /* the writer is awake: only the group-commit delay keeps them together */
        }
        wait_done(4);
        ps_writer_stats_t st;
        ps_writer_stats(w, &st);
        ps_writer_stop(w);
        assert_int_equal(st.batches, eager ? 4 : 2); /* each its own commit, or all three in one */
        assert_int_equal(st.samples_written, (eager ? 4 : 3) * 2000);
        for (int i = 0; i < 3; i++)
            free_req(r[i]);
        free_req(warm);
    }
}

/* ---- group commit without a fixed wait (leader/follower) ---- */

/* A gate: the writer's committed hook holds the writer thread after its first batch until
 * gate_open, so that what is submitted meanwhile arrives "while a commit runs". */
static atomic_int gate_open, gate_reached;

static void committed_gate(void *ctx)
{
    (void)ctx;
    if (atomic_exchange(&gate_reached, 1))
        return;
    while (!atomic_load(&gate_open))
        usleep(1000);
}

static void gate_wait_reached(void)
{
    for (int i = 0; i < 1000 && !atomic_load(&gate_reached); i++)
        usleep(1000);
    assert_int_equal(atomic_load(&gate_reached), 1);
}

/* on_done_seen: each answer's place among the answers, and the series the store held (committed)
 * when it came: an answer only ever follows the commit of its request. */
static atomic_int answer_seq;
static ps_store_t *seen_store;
typedef struct seen {
    int place;
    int series;
} seen_t;
static seen_t seen[512];

static void on_done_seen(ps_wreq_t *w)
{
    treq_t *r = w->ctx;
    int k = r->resubmit_rc; /* the request's index */
    seen[k].place = atomic_fetch_add(&answer_seq, 1);
    seen[k].series = count_series(seen_store);
    on_done(w);
}

/* Default options (no commit delay): a write into an idle writer commits at once; those submitted
 * while a commit runs all share the next one; answers come in submission order, each after the
 * commit that holds its write. */
static void test_group_commit_leader_follower(void **state)
{
    env_t *e = *state;
    enum { N = 30 };
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    assert_int_equal(o.commit_delay_ns, 0);
    atomic_store(&done_total, 0);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_reached, 0);
    atomic_store(&answer_seq, 0);
    seen_store = e->store;
    o.committed = committed_gate;
    ps_writer_t *w = start_on(e->store, &o);
    treq_t *first = make_req(100, T0);
    assert_int_equal(ps_writer_submit(w, &first->w), 0);
    gate_wait_reached(); /* committed at once, with nothing else to wait for */
    assert_int_equal(count_series(e->store), 1);
    treq_t *r[N];
    for (int i = 0; i < N; i++) { /* arrive while the writer is busy with the first */
        r[i] = make_req(i, T0);
        r[i]->resubmit_rc = i;
        r[i]->w.on_done = on_done_seen;
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
    }
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.queued, N);
    assert_int_equal(st.batches, 1);
    atomic_store(&gate_open, 1);
    wait_done(N + 1);
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    assert_int_equal(st.batches, 2); /* the first alone, then all N in one commit */
    assert_int_equal(st.appended, N + 1);
    for (int i = 0; i < N; i++) {
        assert_int_equal(atomic_load(&r[i]->calls), 1);
        assert_int_equal(r[i]->w.app.status, 0);
        assert_int_equal(seen[i].place, i);        /* in submission order */
        assert_int_equal(seen[i].series, N + 1);   /* the whole batch committed before any answer */
        free_req(r[i]);
    }
    assert_int_equal(atomic_load(&first->calls), 1);
    free_req(first);
}

/* A queue of scrapes alone waits for their commit_delay_ns (nobody waits on them); a push that
 * arrives meanwhile ends the wait, and both commit together at once. */
static void test_group_commit_push_ends_scrape_wait(void **state)
{
    env_t *e = *state;
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    atomic_store(&done_total, 0);
    ps_writer_t *w = start_on(e->store, &o);
    treq_t *warm = warm_up(w);
    treq_t *scrape = make_req(1, T0), *push = make_req(2, T0);
    scrape->w.commit_delay_ns = 10 * PS_NS_PER_S;
    assert_int_equal(ps_writer_submit(w, &scrape->w), 0);
    usleep(100000);
    assert_int_equal(atomic_load(&done_total), 1); /* the scrape waits */
    int64_t t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &push->w), 0);
    wait_done(3);
    assert_true(ps_time_mono() - t0 < 5 * PS_NS_PER_S); /* not the scrape's 10 s */
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    assert_int_equal(st.batches, 2); /* the warm-up, then the scrape and the push together */
    assert_int_equal(st.appended, 3);
    free_req(warm);
    free_req(scrape);
    free_req(push);
}

/* Many submitting threads, each waiting for its answer before its next write (as HTTP clients
 * do): every request answered once with its status, every profile stored, commits shared. */
enum { MW_THREADS = 8, MW_EACH = 25 };
typedef struct mw_arg {
    ps_writer_t *w;
    int id;
    int bad;
} mw_arg_t;

static void *mw_thread(void *p)
{
    mw_arg_t *a = p;
    for (int k = 0; k < MW_EACH; k++) {
        treq_t *r = make_req(a->id * 1000 + k, T0 + k);
        int before = atomic_load(&r->calls);
        if (ps_writer_submit(a->w, &r->w) != 0)
            a->bad++;
        for (int i = 0; i < 10000 && atomic_load(&r->calls) == before; i++)
            usleep(500);
        if (atomic_load(&r->calls) != 1 || r->w.app.status != 0)
            a->bad++;
        free_req(r);
    }
    return NULL;
}

static void test_group_commit_many_writers(void **state)
{
    env_t *e = *state;
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    atomic_store(&done_total, 0);
    ps_writer_t *w = start_on(e->store, &o);
    pthread_t th[MW_THREADS];
    mw_arg_t args[MW_THREADS];
    for (int i = 0; i < MW_THREADS; i++) {
        args[i] = (mw_arg_t){w, i, 0};
        pthread_create(&th[i], NULL, mw_thread, &args[i]);
    }
    for (int i = 0; i < MW_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].bad, 0);
    }
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    assert_int_equal(atomic_load(&done_total), MW_THREADS * MW_EACH);
    assert_int_equal(st.appended, MW_THREADS * MW_EACH);
    assert_int_equal(st.failed, 0);
    assert_int_equal(st.queued, 0);
    assert_true(st.batches >= 1 && st.batches <= MW_THREADS * MW_EACH);
    assert_int_equal(count_series(e->store), MW_THREADS * MW_EACH);
}

/* A store in a new directory (*dir) that syncs its commits. */
static ps_store_t *open_syncing(char **dir)
{
    *dir = ps_test_tmpdir("/tmp/ps-test-writer-XXXXXX");
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = *dir;
    so.map_size = 1ull << 30;
    so.retention_ns = 0;
    ps_store_t *store;
    ps_err_t err;
    if (ps_store_open(&so, &store, &err) != 0)
        fail_msg("open: %s", err.msg);
    return store;
}

/* With fsync on: many writers, every answer after its commit is durable; once all are answered
 * (the writer idle), the last commit is durable too: a batch nobody follows is synced alone. */
/* A writer with default options on a store that syncs (open_syncing), its answers checked
 * against the store's durability (check_durable), none counted yet */
static ps_writer_t *start_durable(ps_store_t **store, char **dir)
{
    *store = open_syncing(dir);
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    atomic_store(&done_total, 0);
    atomic_store(&early_answers, 0);
    check_durable = *store;
    return start_on(*store, &o);
}

static void test_answers_when_durable(void **state)
{
    (void)state;
    char *dir;
    ps_store_t *store;
    ps_writer_t *w = start_durable(&store, &dir);
    treq_t *one = make_req(9999, T0); /* alone: synced by the writer */
    assert_int_equal(ps_writer_submit(w, &one->w), 0);
    wait_done(1);
    assert_int_equal(atomic_load(&store->durable_txn), atomic_load(&store->last_txn));
    pthread_t th[MW_THREADS];
    mw_arg_t args[MW_THREADS];
    for (int i = 0; i < MW_THREADS; i++) {
        args[i] = (mw_arg_t){w, i, 0};
        pthread_create(&th[i], NULL, mw_thread, &args[i]);
    }
    for (int i = 0; i < MW_THREADS; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(args[i].bad, 0);
    }
    assert_int_equal(atomic_load(&done_total), 1 + MW_THREADS * MW_EACH);
    assert_int_equal(atomic_load(&early_answers), 0);
    assert_int_equal(atomic_load(&store->durable_txn), atomic_load(&store->last_txn));
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    check_durable = NULL;
    assert_int_equal(st.appended, 1 + MW_THREADS * MW_EACH);
    assert_int_equal(st.failed, 0);
    assert_int_equal(count_series(store), 1 + MW_THREADS * MW_EACH);
    ps_store_close(store);
    ps_test_rm_rf(dir);
    free(dir);
    free_req(one);
}

/* on_done_alone: answers given on the writer thread, and answers given before the store's last
 * commit was durable (its meta page synced) */
static atomic_int answered_by_writer, answered_not_durable;

static void on_done_alone(ps_wreq_t *w)
{
    char name[16] = "";
    pthread_getname_np(pthread_self(), name, sizeof(name));
    if (strcmp(name, "writer") == 0)
        atomic_fetch_add(&answered_by_writer, 1);
    if (atomic_load(&check_durable->durable_txn) < atomic_load(&check_durable->last_txn))
        atomic_fetch_add(&answered_not_durable, 1);
    on_done(w);
}

/* A request alone (nothing else queued or being decoded, the syncer idle) is synced and answered
 * by the writer itself, without a hand-off to the syncer, and only once its commit is durable:
 * answered before the sync, or by the syncer, the test fails. */
static void test_alone_answered_by_writer(void **state)
{
    (void)state;
    char *dir;
    ps_store_t *store;
    atomic_store(&answered_by_writer, 0);
    atomic_store(&answered_not_durable, 0);
    ps_writer_t *w = start_durable(&store, &dir);
    enum { N = 5 };
    treq_t *r[N];
    for (int i = 0; i < N; i++) {
        r[i] = make_req(40 + i, T0);
        r[i]->w.on_done = on_done_alone;
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
        wait_done(i + 1);
        assert_int_equal(r[i]->w.app.status, 0);
    }
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    check_durable = NULL;
    assert_int_equal(atomic_load(&answered_by_writer), N);
    assert_int_equal(atomic_load(&answered_not_durable), 0);
    assert_int_equal(st.batches, N);
    assert_int_equal(st.sync_rounds, N);
    assert_int_equal(count_series(store), N);
    ps_store_close(store);
    ps_test_rm_rf(dir);
    free(dir);
    for (int i = 0; i < N; i++)
        free_req(r[i]);
}

/* With fsync on, a batch is answered once durable by the syncer, not after the writer's next
 * batch: held after its first commit (the committed hook), the writer has its first request
 * answered meanwhile, durable. */
static void test_answered_while_writer_holds(void **state)
{
    (void)state;
    char *dir;
    ps_store_t *store = open_syncing(&dir);
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    o.committed = committed_gate;
    atomic_store(&done_total, 0);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_reached, 0);
    ps_writer_t *w = start_on(store, &o);
    treq_t *first = make_req(1, T0), *second = make_req(2, T0);
    assert_int_equal(ps_writer_submit(w, &first->w), 0);
    gate_wait_reached();
    assert_int_equal(ps_writer_submit(w, &second->w), 0); /* queued behind the held writer */
    wait_done(1);
    assert_int_equal(atomic_load(&first->calls), 1);
    assert_int_equal(atomic_load(&second->calls), 0);
    assert_int_equal(first->w.app.status, 0);
    assert_int_equal(atomic_load(&store->durable_txn), atomic_load(&store->last_txn));
    atomic_store(&gate_open, 1);
    wait_done(2);
    ps_writer_stop(w);
    assert_int_equal(second->w.app.status, 0);
    assert_int_equal(atomic_load(&store->durable_txn), atomic_load(&store->last_txn));
    assert_int_equal(count_series(store), 2);
    ps_store_close(store);
    ps_test_rm_rf(dir);
    free(dir);
    free_req(first);
    free_req(second);
}

/* A write being decoded (ps_writer_decoding) is waited for: the request queued before it waits
 * until it is submitted, and one commit takes both; a request into an idle writer with nothing
 * decoding commits at once, as does one whose own decode was the count (ps_writer_decode_begin),
 * and the wait is bounded by decode_wait_ns. */
static void test_waits_for_decoding(void **state)
{
    env_t *e = *state;
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    o.decode_wait_ns = 10 * PS_NS_PER_S; /* any wait would show */
    atomic_store(&done_total, 0);
    ps_writer_t *w = start_on(e->store, &o);
    /* idle, nothing decoding: at once */
    treq_t *a = make_req(1, T0);
    int64_t t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &a->w), 0);
    wait_done(1);
    assert_true(ps_time_mono() - t0 < 5 * PS_NS_PER_S);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 1);
    assert_int_equal(st.decode_waits, 0);
    /* one decoding: b waits for it, then c and b share a commit */
    treq_t *b = make_req(2, T0), *c = make_req(3, T0);
    ps_writer_decoding(w, +1);
    assert_int_equal(ps_writer_submit(w, &b->w), 0);
    usleep(100000);
    assert_int_equal(atomic_load(&done_total), 1);
    assert_int_equal(ps_writer_submit(w, &c->w), 0);
    ps_writer_decoding(w, -1);
    wait_done(3);
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 2);
    assert_int_equal(st.decode_waits, 1);
    assert_int_equal(a->calls, 1);
    assert_int_equal(b->calls, 1);
    assert_int_equal(c->calls, 1);
    /* this thread's own decode (ps_writer_decode_begin): its submit ends the count, at once */
    treq_t *e1 = make_req(5, T0);
    ps_writer_decoding(w, +1);
    ps_writer_decode_begin(w);
    t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &e1->w), 0);
    wait_done(4);
    assert_true(ps_time_mono() - t0 < 5 * PS_NS_PER_S);
    ps_writer_decode_end(); /* counted no more: nothing */
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 3);
    assert_int_equal(st.decode_waits, 1);
    /* the writer waiting for two decodes: the submit that ends the last of them (its own decode's
     * count) wakes it at once, and one commit takes both */
    treq_t *f = make_req(6, T0), *g = make_req(7, T0);
    ps_writer_decoding(w, +1);
    ps_writer_decoding(w, +1);
    t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &f->w), 0);
    usleep(100000);
    ps_writer_decoding(w, -1); /* one left */
    usleep(100000);
    assert_int_equal(atomic_load(&done_total), 4);
    ps_writer_decode_begin(w);
    assert_int_equal(ps_writer_submit(w, &g->w), 0);
    wait_done(6);
    assert_true(ps_time_mono() - t0 < 5 * PS_NS_PER_S);
    ps_writer_decode_end();
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 4);
    assert_int_equal(st.decode_waits, 2);
    ps_writer_stop(w);
    /* a batch filled while a decode goes on: the submit that fills it wakes the writer */
    o.max_batch = 2;
    atomic_store(&done_total, 0);
    w = start_on(e->store, &o);
    treq_t *h = make_req(8, T0), *i = make_req(9, T0);
    ps_writer_decoding(w, +1);
    t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &h->w), 0);
    usleep(100000);
    assert_int_equal(atomic_load(&done_total), 0);
    assert_int_equal(ps_writer_submit(w, &i->w), 0);
    wait_done(2);
    assert_true(ps_time_mono() - t0 < 5 * PS_NS_PER_S);
    ps_writer_decoding(w, -1);
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 1);
    assert_int_equal(st.decode_waits, 1);
    ps_writer_stop(w);
    o.max_batch = 0; /* the default */
    /* a decode that does not end: the batch commits after decode_wait_ns */
    o.decode_wait_ns = 200 * 1000000;
    atomic_store(&done_total, 0);
    w = start_on(e->store, &o);
    treq_t *d = make_req(4, T0);
    ps_writer_decoding(w, +1);
    t0 = ps_time_mono();
    assert_int_equal(ps_writer_submit(w, &d->w), 0);
    wait_done(1);
    assert_true(ps_time_mono() - t0 >= 200 * 1000000);
    ps_writer_decoding(w, -1);
    ps_writer_stop(w);
    assert_int_equal(count_series(e->store), 9);
    free_req(e1);
    free_req(f);
    free_req(g);
    free_req(h);
    free_req(i);
    free_req(a);
    free_req(b);
    free_req(c);
    free_req(d);
}

/* The answers of committed batches are given between answers(true) and answers(false) (the web
 * server's completions then go to each loop at once): each group opened once and closed, one a
 * syncer round (a round may answer several batches: the test failed when a loaded machine made
 * the syncer take two). */
static void test_answers_hook(void **state)
{
    env_t *e = *state;
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    o.answers = answers_hook;
    atomic_store(&done_total, 0);
    atomic_store(&answers_groups, 0);
    atomic_store(&answers_outside, 0);
    atomic_store(&answers_unpaired, 0);
    atomic_store(&answers_counting, true);
    ps_writer_t *w = start_on(e->store, &o);
    treq_t *r[3];
    for (int i = 0; i < 3; i++) {
        r[i] = make_req(20 + i, T0);
        assert_int_equal(ps_writer_submit(w, &r[i]->w), 0);
    }
    wait_done(3);
    ps_writer_shutdown(w); /* the syncer's rounds all ended */
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    ps_writer_stop(w);
    atomic_store(&answers_counting, false);
    assert_int_equal(atomic_load(&answers_outside), 0);
    assert_int_equal(atomic_load(&answers_unpaired), 0);
    /* one group a syncer round, which answers the batches it took at once (one or more) */
    assert_int_equal(atomic_load(&answers_groups), (int)st.sync_rounds);
    assert_true(st.sync_rounds >= 1 && st.sync_rounds <= st.batches);
    assert_false(atomic_load(&answers_open));
    for (int i = 0; i < 3; i++) {
        assert_int_equal(r[i]->calls, 1);
        free_req(r[i]);
    }
}

/* A commit that fails fails every write of its group, each answered once with the error and
 * nothing of it stored; the group after it commits. */
static void test_group_commit_failing(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-writer-XXXXXX");
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = dir;
    so.map_size = 1ull << 20; /* 1 MiB: the wide samples request below does not fit */
    so.retention_ns = 0;
    so.nosync = true;
    ps_store_t *store;
    ps_err_t err;
    if (ps_store_open(&so, &store, &err) != 0)
        fail_msg("open: %s", err.msg);
    ps_writer_opts_t o;
    ps_writer_opts_default(&o);
    atomic_store(&done_total, 0);
    atomic_store(&gate_open, 0);
    atomic_store(&gate_reached, 0);
    o.committed = committed_gate;
    ps_writer_t *w = start_on(store, &o);
    treq_t *first = make_req(100, T0);
    assert_int_equal(ps_writer_submit(w, &first->w), 0);
    gate_wait_reached();
    /* one group: two profiles and 20,000 float series between them */
    enum { WIDE = 20000 };
    treq_t *p1 = make_req(1, T0), *wide = calloc(1, sizeof(*wide)), *p2 = make_req(2, T0);
    wide->arena = (ps_arena_t)PS_ARENA_INIT;
    ps_remote_write_t *rw = ps_arena_calloc(&wide->arena, 1, sizeof(*rw));
    rw->version = 1;
    rw->nseries = WIDE;
    rw->series = ps_arena_calloc(&wide->arena, WIDE, sizeof(*rw->series));
    for (int i = 0; i < WIDE; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        ps_labels_set(&rw->series[i].labels, &wide->arena, "__name__", 8, "wide", 4);
        ps_labels_set(&rw->series[i].labels, &wide->arena, "i", 1, v, strlen(v));
        rw->series[i].samples = ps_arena_alloc(&wide->arena, sizeof(ps_remote_sample_t));
        rw->series[i].samples[0] = (ps_remote_sample_t){T0 * 1000ll, 1};
        rw->series[i].nsamples = 1;
        rw->series[i].meta = -1;
    }
    rw->nsamples = WIDE;
    ps_ingest_remote_prepare(rw, &wide->arena, &wide->w);
    wide->w.on_done = on_done;
    wide->w.ctx = wide;
    assert_int_equal(ps_writer_submit(w, &p1->w), 0);
    assert_int_equal(ps_writer_submit(w, &wide->w), 0);
    assert_int_equal(ps_writer_submit(w, &p2->w), 0);
    atomic_store(&gate_open, 1);
    wait_done(4);
    ps_writer_stats_t st;
    ps_writer_stats(w, &st);
    assert_int_equal(st.batches, 2);
    assert_int_equal(st.refused_disk_full, 3);
    assert_int_equal(p1->w.app.status, PS_ENOSPACE);
    assert_int_equal(p2->w.app.status, PS_ENOSPACE);
    assert_int_equal(wide->w.status, PS_ENOSPACE);
    assert_non_null(strstr(p1->w.app.err.msg, "the store reached its maximum size"));
    assert_int_equal(atomic_load(&p1->calls), 1);
    assert_int_equal(atomic_load(&p2->calls), 1);
    assert_int_equal(atomic_load(&wide->calls), 1);
    assert_int_equal(count_series(store), 1); /* only the first */
    /* the next group commits */
    treq_t *after = make_req(3, T0);
    assert_int_equal(ps_writer_submit(w, &after->w), 0);
    wait_done(5);
    ps_writer_stop(w);
    assert_int_equal(after->w.app.status, 0);
    assert_int_equal(count_series(store), 2);
    ps_store_close(store);
    ps_test_rm_rf(dir);
    free(dir);
    free_req(first);
    free_req(p1);
    free_req(p2);
    free_req(wide);
    free_req(after);
}

/* ps_ingest_remote_prepare gives each series with samples its key and hash, made on the decode
 * thread, as the writer would make them (ps_labels_encode, ps_hash64), and its samples in order. */
static void test_remote_prepare_keys(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    memset(ps_arena_alloc(&a, 60000), 0xff, 60000); /* the arena's memory reused: not zero */
    ps_arena_reset(&a);
    ps_remote_write_t w = {.version = 1, .nseries = 3};
    w.series = ps_arena_calloc(&a, 3, sizeof(*w.series));
    static const char *const names[] = {"up", "empty", "node_cpu_seconds_total"};
    for (int i = 0; i < 3; i++) {
        ps_labels_set(&w.series[i].labels, &a, "__name__", 8, names[i], strlen(names[i]));
        ps_labels_set(&w.series[i].labels, &a, "job", 3, "node", 4);
        w.series[i].nsamples = i == 1 ? 0 : (uint32_t)i + 1;
        w.series[i].samples = ps_arena_alloc(&a, 4 * sizeof(ps_remote_sample_t));
        for (uint32_t k = 0; k < w.series[i].nsamples; k++)
            w.series[i].samples[k] = (ps_remote_sample_t){1000 * (int64_t)k + i, 0.5 * k};
        w.series[i].meta = -1;
    }
    ps_wreq_t r;
    memset(&r, 0, sizeof(r));
    ps_ingest_remote_prepare(&w, &a, &r);
    assert_int_equal(r.nfloats, 2); /* the series without samples is left out */
    for (size_t k = 0; k < 2; k++) {
        const ps_float_append_t *fa = r.floats[k];
        const ps_remote_series_t *rs = &w.series[k == 0 ? 0 : 2];
        assert_ptr_equal(fa->labels, &rs->labels);
        /* what the writer reads before writing it: zero */
        assert_false(fa->counter);
        assert_null(fa->stored);
        assert_int_equal(fa->status, 0);
        assert_int_equal(fa->err.code, 0);
        assert_string_equal(fa->err.msg, "");
        assert_int_equal(fa->sid, 0);
        assert_int_equal(fa->accepted + fa->duplicates + fa->out_of_order + fa->dup_conflicts + fa->out_of_bounds +
                             fa->too_new,
                         0);
        assert_int_equal(fa->first_too_new, 0);
        ps_buf_t key = PS_BUF_INIT;
        ps_labels_encode(&rs->labels, &key);
        assert_int_equal(fa->klen, key.len);
        assert_memory_equal(fa->key, key.data, key.len);
        assert_true(fa->key_hash == ps_hash64(key.data, key.len, 0));
        assert_int_equal(fa->nsamples, rs->nsamples);
        for (uint32_t j = 0; j < fa->nsamples; j++) {
            assert_int_equal(fa->samples[j].t, rs->samples[j].t_ms);
            assert_true(fa->samples[j].v == rs->samples[j].v);
        }
        ps_buf_dispose(&key);
    }
    assert_int_equal(r.floats[1]->klen, 1 + 8 + 1 + 22 + 1 + 3 + 1 + 4);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_every_request_answered_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_failing_profile_fails_alone, setup, teardown),
        cmocka_unit_test_setup_teardown(test_stop_drains_the_queue, setup, teardown),
        cmocka_unit_test_setup_teardown(test_submit_while_stopping_unavailable, setup, teardown),
        cmocka_unit_test_setup_teardown(test_full_queue_refuses, setup, teardown),
        cmocka_unit_test_setup_teardown(test_queue_by_bytes, setup, teardown),
        cmocka_unit_test_setup_teardown(test_admin_requests, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_with_profiles, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_batch_weight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_idle_checkpoint, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_queue_by_weight, setup, teardown),
        cmocka_unit_test_setup_teardown(test_samples_eager_commit, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_leader_follower, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_push_ends_scrape_wait, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_many_writers, setup, teardown),
        cmocka_unit_test_setup_teardown(test_group_commit_failing, setup, teardown),
        cmocka_unit_test(test_answers_when_durable),
        cmocka_unit_test(test_answered_while_writer_holds),
        cmocka_unit_test(test_alone_answered_by_writer),
        cmocka_unit_test_setup_teardown(test_waits_for_decoding, setup, teardown),
        cmocka_unit_test_setup_teardown(test_answers_hook, setup, teardown),
        cmocka_unit_test(test_remote_prepare_keys),
    };
    int rc = cmocka_run_group_tests(tests, NULL, NULL);
    free(body);
    return rc;
}
