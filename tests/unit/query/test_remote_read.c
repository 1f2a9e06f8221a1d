/*
 * test_remote_read.c - unit tests for src/query/remote_read.c: remote read over a temporary store of real Go CPU
 * profiles ($PS_TESTDATA/pprof, totals from its README). SAMPLES answers decoded and checked value
 * by value, all four matcher types, time ranges, several queries, STREAMED_XOR_CHUNKS frames with
 * their XOR chunks decoded sample by sample (120 samples a chunk, frames cut by size), the sample
 * limit of SAMPLES (streamed answers have none), bad matchers, and streamed answers made in pieces by
 * a cursor: byte for byte the whole answer (and the whole answer as it was before streaming).
 *
 * The store (T = 1,800,000,000 s), type CPU = process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta:
 *   {job="api",instance="a"}  cpu-01 @T+10, cpu-02 @T+20
 *   {job="api",instance="b"}  cpu-03 @T+15
 *   {job="batch"}             cpu-04 @T+30
 *   {job="many"}              cpu-01 @T+100+i s, i = 0..129
 *   up{job="float"}           a float series: 300 samples i * 0.5 @T+i*15 s (stored XOR chunks)
 *   {job="same_ms"}           cpu-01 @T+40.0001 s, cpu-02 @T+40.0005 s (the same millisecond)
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "../testutil.h"
#include "storefix.h"

#include "core/crc32c.h"
#include "core/timeutil.h"
#include "ingest/ingest.h"
#include "proto/remote_read.h"
#include "parser/selector_specs.h"
#include "query/query.h"
#include "query/remote_read.h"
#include "storage/xorchunk.h"

#define T0 1800000000LL
#define MS(s) ((int64_t)(s) * 1000)
#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
#define NMANY 130
#define NFLOAT 300

static char *dir;
static ps_store_t *store;

static void ingest_at(const char *rel, const char *labels, const char *when) { ps_test_ingest_at(store, rel, labels, when); }
static void ingest(const char *rel, const char *labels, int64_t ts_s) { ps_test_ingest(store, rel, labels, ts_s); }

static int setup(void **state)
{
    store = ps_test_store_open("/tmp/ps_test_read_XXXXXX", &dir);
    ps_test_ingest_cpu4(store, T0);
    for (int i = 0; i < NMANY; i++)
        ingest("go/cpu-01.pb.gz", "{job=\"many\"}", T0 + 100 + i);
    ingest_at("go/cpu-01.pb.gz", "{job=\"same_ms\"}", "2027-01-15T08:00:40.0001Z");
    ingest_at("go/cpu-02.pb.gz", "{job=\"same_ms\"}", "2027-01-15T08:00:40.0005Z");
    ps_label_pair_t lp[2] = {{"__name__", "up", 8, 2}, {"job", "float", 3, 5}};
    ps_labels_t ls = {2, lp, 0};
    ps_float_sample_t fs[NFLOAT];
    for (int i = 0; i < NFLOAT; i++)
        fs[i] = (ps_float_sample_t){MS(T0 + 15 * i), i * 0.5};
    ps_float_append_t fa = {.labels = &ls, .samples = fs, .nsamples = NFLOAT};
    ps_float_append_t *fas[1] = {&fa};
    ps_err_t err;
    if (ps_store_write(ps_test_writer(store), NULL, 0, fas, 1, NULL, 0, &err) != 0 || fa.status != 0 || fa.accepted != NFLOAT)
        fail_msg("float write: %s / %s", err.msg, fa.err.msg);
    return 0;
}

static int teardown(void **state)
{
    ps_test_store_close(store, dir);
    return 0;
}

/* ---- helpers -------------------------------------------------------------------------------- */

typedef struct q {
    int64_t start_s, end_s;
    const char *m[4][3]; /* type ("=", "!=", "=~", "!~"), name, value; type NULL ends */
} q_t;

static int op_of(const char *t)
{
    return strcmp(t, "=") == 0 ? PS_READ_EQ : strcmp(t, "!=") == 0 ? PS_READ_NEQ : strcmp(t, "=~") == 0 ? PS_READ_RE : PS_READ_NRE;
}

static ps_read_request_t make_req(ps_arena_t *a, const q_t *qs, uint32_t n)
{
    ps_read_request_t req = {0};
    req.nqueries = n;
    req.queries = ps_arena_calloc(a, n, sizeof(ps_read_query_t));
    for (uint32_t i = 0; i < n; i++) {
        ps_read_query_t *d = &req.queries[i];
        d->start_ms = MS(qs[i].start_s);
        d->end_ms = MS(qs[i].end_s);
        d->hints.func = "";
        d->matchers = ps_arena_calloc(a, 4, sizeof(ps_read_matcher_t));
        for (uint32_t k = 0; k < 4 && qs[i].m[k][0] != NULL; k++) {
            ps_read_matcher_t *m = &d->matchers[d->nmatchers++];
            m->type = op_of(qs[i].m[k][0]);
            m->name = qs[i].m[k][1];
            m->nlen = (uint32_t)strlen(m->name);
            m->value = qs[i].m[k][2];
            m->vlen = (uint32_t)strlen(m->value);
        }
    }
    return req;
}

/* Runs req as SAMPLES and decodes the answer. */
static int run_samples(ps_arena_t *a, const q_t *qs, uint32_t n, const ps_read_opts_t *o, ps_read_result_t **res,
                       uint32_t *nres, ps_err_t *err)
{
    ps_read_request_t req = make_req(a, qs, n);
    ps_reader_t *r;
    ps_buf_t out = PS_BUF_INIT;
    assert_int_equal(ps_reader_begin(store, &r, err), 0);
    int rc = ps_query_read(r, &req, PS_READ_SAMPLES, o, &out, NULL, err);
    ps_reader_end(r);
    if (rc == 0)
        assert_int_equal(ps_read_response_decode(out.data, out.len, 64u << 20, a, res, nres, err), 0);
    ps_buf_dispose(&out);
    return rc;
}

static void expect_series(const ps_read_series_t *s, const char *job, const char *instance, uint32_t n)
{
    assert_string_equal(ps_labels_value(&s->labels, "__name__"), CPU);
    assert_string_equal(ps_labels_value(&s->labels, "job"), job);
    if (instance)
        assert_string_equal(ps_labels_value(&s->labels, "instance"), instance);
    else
        assert_null(ps_labels_value(&s->labels, "instance"));
    assert_int_equal(s->nsamples, n);
}

/* sample i of s is (t_ms, exactly v) */
static void expect_sample(const ps_read_series_t *s, uint32_t i, int64_t t_ms, double v)
{
    assert_int_equal(s->samples[i].t_ms, t_ms);
    assert_true(s->samples[i].v == v);
}

#define ALL_TIME (T0), (T0 + 1000)

/* ---- SAMPLES -------------------------------------------------------------------------------- */

static void test_samples_exact(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    q_t q[1] = {{ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}}};
    assert_int_equal(run_samples(&a, q, 1, NULL, &res, &nres, &err), 0);
    assert_int_equal(nres, 1);
    assert_int_equal(res[0].nseries, 2);
    const ps_read_series_t *s = res[0].series;
    expect_series(&s[0], "api", "a", 2);
    assert_int_equal(s[0].labels.n, 3); /* __name__, instance, job: sorted by name */
    assert_string_equal(s[0].labels.pairs[0].name, "__name__");
    assert_string_equal(s[0].labels.pairs[1].name, "instance");
    assert_string_equal(s[0].labels.pairs[2].name, "job");
    expect_sample(&s[0], 0, MS(T0 + 10), CPU01);
    expect_sample(&s[0], 1, MS(T0 + 20), CPU02);
    expect_series(&s[1], "api", "b", 1);
    expect_sample(&s[1], 0, MS(T0 + 15), CPU03);
    ps_arena_dispose(&a);
}

static void test_matcher_types_and_ranges(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    q_t q[6] = {
        {ALL_TIME, {{"=", "__name__", CPU}, {"!=", "job", "api"}, {"!=", "job", "many"}, {"!=", "job", "same_ms"}}},
        {ALL_TIME, {{"=", "__name__", CPU}, {"=~", "instance", "a|b"}}},
        {ALL_TIME, {{"=~", "__name__", "process_cpu:cpu:.*"}, {"!~", "instance", "a"}, {"!~", "job", "many|same_ms"}}},
        {T0 + 12, T0 + 20, {{"=", "__name__", CPU}, {"=", "job", "api"}}}, /* both ends inclusive */
        {T0 + 21, T0 + 29, {{"=", "__name__", CPU}}},                        /* nothing in range */
        {T0 + 30, T0 + 10, {{"=", "__name__", CPU}}},                        /* start > end */
    };
    assert_int_equal(run_samples(&a, q, 6, NULL, &res, &nres, &err), 0);
    assert_int_equal(nres, 6);
    /* != */
    assert_int_equal(res[0].nseries, 1);
    expect_series(&res[0].series[0], "batch", NULL, 1);
    expect_sample(&res[0].series[0], 0, MS(T0 + 30), CPU04);
    /* =~ */
    assert_int_equal(res[1].nseries, 2);
    expect_series(&res[1].series[0], "api", "a", 2);
    expect_series(&res[1].series[1], "api", "b", 1);
    /* =~ on the name, !~ matching a series without the label */
    assert_int_equal(res[2].nseries, 2);
    expect_series(&res[2].series[0], "api", "b", 1);
    expect_series(&res[2].series[1], "batch", NULL, 1);
    /* range */
    assert_int_equal(res[3].nseries, 2);
    expect_series(&res[3].series[0], "api", "a", 1);
    expect_sample(&res[3].series[0], 0, MS(T0 + 20), CPU02);
    expect_series(&res[3].series[1], "api", "b", 1);
    assert_int_equal(res[4].nseries, 0);
    assert_int_equal(res[5].nseries, 0);
    ps_arena_dispose(&a);
}

static void test_sample_limit(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    ps_read_opts_t o;
    ps_read_opts_default(&o);
    assert_int_equal(o.sample_limit, 50000000);
    assert_int_equal(o.max_frame_bytes, 1048576);
    q_t q[2] = {{ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}},
                {ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "batch"}}}};
    o.sample_limit = 3; /* per query: 3 and 1 */
    assert_int_equal(run_samples(&a, q, 2, &o, &res, &nres, &err), 0);
    o.sample_limit = 2;
    assert_int_equal(run_samples(&a, q, 2, &o, &res, &nres, &err), PS_ELIMIT);
    assert_string_equal(err.msg, "exceeded sample limit (2)");
    /* over everything: stops at the limit */
    q_t all[1] = {{ALL_TIME, {{"=~", "__name__", ".+"}}}};
    o.sample_limit = 100;
    assert_int_equal(run_samples(&a, all, 1, &o, &res, &nres, &err), PS_ELIMIT);
    assert_string_equal(err.msg, "exceeded sample limit (100)");
    o.sample_limit = 0; /* no limit: 2 types x (4 + 130) profiles, and the float series */
    assert_int_equal(run_samples(&a, all, 1, &o, &res, &nres, &err), 0);
    uint32_t total = 0;
    for (uint32_t i = 0; i < res[0].nseries; i++)
        total += res[0].series[i].nsamples;
    assert_int_equal(res[0].nseries, 11);
    /* floats every 15 s in [T0, T0 + 1000]; same_ms: one sample of two per type */
    assert_int_equal(total, 2 * (4 + NMANY) + 1000 / 15 + 1 + 2);
    /* the series limit */
    o.max_series = 10;
    assert_int_equal(run_samples(&a, all, 1, &o, &res, &nres, &err), PS_ELIMIT);
    ps_arena_dispose(&a);
}

static void test_bad_matchers(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    q_t q[2] = {{ALL_TIME, {{"=", "__name__", CPU}}}, {ALL_TIME, {{"=", "__name__", CPU}, {"=~", "job", "(a"}}}};
    assert_int_equal(run_samples(&a, q, 2, NULL, &res, &nres, &err), PS_EINVAL);
    assert_string_equal(err.msg, "queries[1]: matchers[1]: error parsing regexp \"(a\": missing closing parenthesis at "
                                 "offset 2");
    q_t e[1] = {{ALL_TIME, {{"=", "job", ""}, {"=~", "instance", ".*"}}}};
    assert_int_equal(run_samples(&a, e, 1, NULL, &res, &nres, &err), PS_EINVAL);
    assert_string_equal(err.msg, "queries[0]: vector selector must contain at least one non-empty matcher");
    ps_arena_dispose(&a);
}

static void test_hints(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    ps_reader_t *r;
    ps_buf_t out = PS_BUF_INIT;
    q_t q[3] = {{ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}},
                {ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}},
                {ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}}};
    ps_read_request_t req = make_req(&a, q, 3);
    /* 0: func "series": the series, no samples (as Prometheus loads no chunks for it) */
    req.queries[0].hints = (ps_read_hints_t){true, 0, MS(T0), MS(T0 + 1000), 0, "series", 0, NULL, false};
    /* 1: the hints' range trims the query's */
    req.queries[1].hints = (ps_read_hints_t){true, 0, MS(T0 + 12), MS(T0 + 20), 0, "rate", 0, NULL, false};
    /* 2: hints without a range narrow nothing */
    req.queries[2].hints = (ps_read_hints_t){true, 5000, 0, 0, 0, "", 0, NULL, false};
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    assert_int_equal(ps_query_read(r, &req, PS_READ_SAMPLES, NULL, &out, NULL, &err), 0);
    ps_reader_end(r);
    assert_int_equal(ps_read_response_decode(out.data, out.len, 1u << 20, &a, &res, &nres, &err), 0);
    assert_int_equal(nres, 3);
    assert_int_equal(res[0].nseries, 2);
    expect_series(&res[0].series[0], "api", "a", 0);
    expect_series(&res[0].series[1], "api", "b", 0);
    assert_int_equal(res[1].nseries, 2);
    expect_series(&res[1].series[0], "api", "a", 1);
    assert_int_equal(res[1].series[0].samples[0].t_ms, MS(T0 + 20));
    expect_series(&res[1].series[1], "api", "b", 1);
    assert_int_equal(res[2].nseries, 2);
    expect_series(&res[2].series[0], "api", "a", 2);
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

/* ---- STREAMED_XOR_CHUNKS -------------------------------------------------------------------- */

typedef struct frames {
    uint32_t n;
    ps_read_frame_t f[64];
} frames_t;

static int run_streamed(ps_arena_t *a, const q_t *qs, uint32_t n, const ps_read_opts_t *o, frames_t *fr,
                        ps_err_t *err)
{
    ps_read_request_t req = make_req(a, qs, n);
    ps_reader_t *r;
    ps_buf_t out = PS_BUF_INIT;
    ps_read_stats_t st;
    assert_int_equal(ps_reader_begin(store, &r, err), 0);
    int rc = ps_query_read(r, &req, PS_READ_STREAMED_XOR_CHUNKS, o, &out, &st, err);
    ps_reader_end(r);
    fr->n = 0;
    if (rc == 0) {
        size_t off = 0;
        while (off < out.len) {
            size_t used;
            assert_true(fr->n < 64);
            assert_int_equal(ps_read_frame_decode(out.data + off, out.len - off, &used, a, &fr->f[fr->n], err), 0);
            assert_int_equal(fr->f[fr->n].nseries, 1);
            off += used;
            fr->n++;
        }
        assert_int_equal(st.frames, fr->n);
    }
    ps_buf_dispose(&out);
    return rc;
}

/* Decodes chunk c, checking its min/max times, into t[], v[]; returns the sample count. */
static uint32_t xor_samples(const ps_read_chunk_t *c, int64_t *t, double *v)
{
    ps_xor_iter_t it;
    uint32_t n = 0;
    assert_int_equal(c->type, PS_READ_CHUNK_XOR);
    ps_xor_iter_init(&it, c->data, c->len);
    while (ps_xor_iter_next(&it)) {
        t[n] = it.t;
        v[n] = it.v;
        n++;
    }
    assert_int_equal(ps_xor_iter_err(&it, NULL), 0);
    assert_true(n > 0);
    assert_int_equal(c->min_t, t[0]);
    assert_int_equal(c->max_t, t[n - 1]);
    return n;
}

static void test_streamed(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    frames_t *fr = calloc(1, sizeof(*fr));
    int64_t t[200];
    double v[200];
    q_t q[2] = {{ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "api"}}},
                {ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "many"}}}};
    assert_int_equal(run_streamed(&a, q, 2, NULL, fr, &err), 0);
    assert_int_equal(fr->n, 3); /* one frame per series: a, b, many (2 chunks, 1 MiB is plenty) */
    assert_int_equal(fr->f[0].query_index, 0);
    assert_string_equal(ps_labels_value(&fr->f[0].series[0].labels, "instance"), "a");
    assert_int_equal(fr->f[0].series[0].nchunks, 1);
    assert_int_equal(xor_samples(&fr->f[0].series[0].chunks[0], t, v), 2);
    assert_int_equal(t[0], MS(T0 + 10));
    assert_true(v[0] == CPU01);
    assert_int_equal(t[1], MS(T0 + 20));
    assert_true(v[1] == CPU02);
    assert_string_equal(ps_labels_value(&fr->f[1].series[0].labels, "instance"), "b");
    assert_int_equal(xor_samples(&fr->f[1].series[0].chunks[0], t, v), 1);
    assert_true(v[0] == CPU03);
    assert_int_equal(fr->f[2].query_index, 1);
    assert_string_equal(ps_labels_value(&fr->f[2].series[0].labels, "job"), "many");
    assert_int_equal(fr->f[2].series[0].nchunks, 2);
    assert_int_equal(xor_samples(&fr->f[2].series[0].chunks[0], t, v), 120);
    assert_int_equal(t[0], MS(T0 + 100));
    assert_int_equal(t[119], MS(T0 + 219));
    assert_true(v[119] == CPU01);
    assert_int_equal(xor_samples(&fr->f[2].series[0].chunks[1], t, v), NMANY - 120);
    assert_int_equal(t[0], MS(T0 + 220));
    assert_int_equal(t[NMANY - 121], MS(T0 + 100 + NMANY - 1));

    /* small frames: one chunk each (the budget is gone after the first) */
    ps_read_opts_t o;
    ps_read_opts_default(&o);
    o.max_frame_bytes = 100;
    assert_int_equal(run_streamed(&a, &q[1], 1, &o, fr, &err), 0);
    assert_int_equal(fr->n, 2);
    assert_int_equal(fr->f[0].series[0].nchunks, 1);
    assert_int_equal(fr->f[1].series[0].nchunks, 1);
    assert_int_equal(xor_samples(&fr->f[1].series[0].chunks[0], t, v), NMANY - 120);

    /* a range inside the series: only its samples (made on the fly, so cut to the range) */
    q_t part[1] = {{T0 + 150, T0 + 160, {{"=", "__name__", CPU}, {"=", "job", "many"}}}};
    assert_int_equal(run_streamed(&a, part, 1, NULL, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(xor_samples(&fr->f[0].series[0].chunks[0], t, v), 11);
    assert_int_equal(t[0], MS(T0 + 150));

    /* no sample limit in streamed mode (Prometheus has none there): all 130 samples */
    o.max_frame_bytes = 1048576;
    o.sample_limit = 1;
    assert_int_equal(run_streamed(&a, &q[1], 1, &o, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(fr->f[0].series[0].nchunks, 2);
    assert_int_equal(xor_samples(&fr->f[0].series[0].chunks[1], t, v), NMANY - 120);
    free(fr);
    ps_arena_dispose(&a);
}


/* ---- float series: stored chunks as they are ------------------------------------------------ */

typedef struct stored {
    uint32_t n;
    ps_buf_t bytes[16];
    int64_t min_t[16], max_t[16];
} stored_t;

static int on_stored(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    stored_t *s = ctx;
    assert_true(s->n < 16);
    s->bytes[s->n] = (ps_buf_t)PS_BUF_INIT;
    ps_buf_append(&s->bytes[s->n], chunk, n);
    s->min_t[s->n] = min_t;
    s->max_t[s->n] = max_t;
    s->n++;
    return 0;
}

static void test_float_series(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    frames_t *fr = calloc(1, sizeof(*fr));
    int64_t t[200];
    double v[200];

    /* SAMPLES: exactly the samples in the range */
    q_t q[1] = {{T0 + 150, T0 + 300, {{"=", "__name__", "up"}, {"=~", "job", "fl.*"}}}};
    assert_int_equal(run_samples(&a, q, 1, NULL, &res, &nres, &err), 0);
    assert_int_equal(res[0].nseries, 1);
    assert_int_equal(res[0].series[0].nsamples, 11);
    for (uint32_t k = 0; k < 11; k++) {
        expect_sample(&res[0].series[0], k, MS(T0 + 150 + 15 * k), (10 + k) * 0.5);
    }

    /* streamed: the stored chunks overlapping the range, byte for byte, whole */
    stored_t st = {0};
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    assert_int_equal(ps_reader_series_kind(r, 0, &(ps_series_kind_t){0}, &err), PS_ENOTFOUND);
    ps_series_set_t set;
    ps_matcher_spec_t spec = {PS_MATCH_EQ, "job", 3, "float", 5};
    ps_selector_t sel;
    assert_int_equal(ps_selector_from_specs(&spec, 1, &a, &sel, &err), 0);
    assert_int_equal(ps_query_select(r, &sel, INT64_MIN, INT64_MAX, 10, &a, &set, &err), 0);
    assert_int_equal(set.n, 1);
    assert_int_equal(ps_reader_xor_chunks(r, set.sids[0], MS(T0), MS(T0 + 15 * NFLOAT), on_stored, &st, &err), 0);
    ps_selector_dispose(&sel);
    ps_reader_end(r);
    assert_int_equal(st.n, 3); /* 300 samples: chunks of 120, 120 and 60 */
    q_t all[1] = {{T0, T0 + 15 * NFLOAT, {{"=", "__name__", "up"}}}};
    assert_int_equal(run_streamed(&a, all, 1, NULL, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(fr->f[0].series[0].nchunks, st.n);
    uint32_t total = 0;
    for (uint32_t k = 0; k < st.n; k++) {
        const ps_read_chunk_t *c = &fr->f[0].series[0].chunks[k];
        assert_int_equal(c->len, st.bytes[k].len);
        assert_memory_equal(c->data, st.bytes[k].data, c->len);
        assert_int_equal(c->min_t, st.min_t[k]);
        assert_int_equal(c->max_t, st.max_t[k]);
        uint32_t n = xor_samples(c, t, v);
        assert_int_equal(t[0], MS(T0) + 15000 * (int64_t)total);
        total += n;
    }
    assert_int_equal(total, NFLOAT);
    /* a range inside the first chunk gets that whole chunk */
    q_t inner[1] = {{T0 + 15, T0 + 30, {{"=", "__name__", "up"}}}};
    assert_int_equal(run_streamed(&a, inner, 1, NULL, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(fr->f[0].series[0].nchunks, 1);
    assert_int_equal(fr->f[0].series[0].chunks[0].len, st.bytes[0].len);
    assert_memory_equal(fr->f[0].series[0].chunks[0].data, st.bytes[0].data, st.bytes[0].len);
    /* no sample limit in streamed mode: every stored chunk */
    ps_read_opts_t o;
    ps_read_opts_default(&o);
    o.sample_limit = 1;
    assert_int_equal(run_streamed(&a, all, 1, &o, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(fr->f[0].series[0].nchunks, st.n);
    for (uint32_t k = 0; k < st.n; k++)
        ps_buf_dispose(&st.bytes[k]);
    free(fr);
    ps_arena_dispose(&a);
}

static void test_same_millisecond(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_result_t *res;
    uint32_t nres;
    frames_t *fr = calloc(1, sizeof(*fr));
    int64_t t[4];
    double v[4];
    q_t q[1] = {{ALL_TIME, {{"=", "__name__", CPU}, {"=", "job", "same_ms"}}}};
    assert_int_equal(run_samples(&a, q, 1, NULL, &res, &nres, &err), 0);
    assert_int_equal(res[0].nseries, 1);
    assert_int_equal(res[0].series[0].nsamples, 1);
    expect_sample(&res[0].series[0], 0, MS(T0 + 40), CPU01);
    assert_int_equal(run_streamed(&a, q, 1, NULL, fr, &err), 0);
    assert_int_equal(fr->n, 1);
    assert_int_equal(xor_samples(&fr->f[0].series[0].chunks[0], t, v), 1);
    assert_int_equal(t[0], MS(T0 + 40));
    assert_true(v[0] == CPU01);
    free(fr);
    ps_arena_dispose(&a);
}

/* ---- streamed answers: the same bytes, made in pieces --------------------------------------- */

/* Every series of the store in three queries (profiles with 1, 2 and 130 samples, the float series
 * with its stored chunks, the same-millisecond pair), frames cut at max_frame. */
static const q_t every[3] = {
    {T0, T0 + 15 * NFLOAT, {{"=~", "__name__", ".+"}}},
    {T0 + 150, T0 + 160, {{"=", "__name__", CPU}, {"=", "job", "many"}}},
    {T0, T0 + 15 * NFLOAT, {{"=", "__name__", "up"}}},
};

/* The whole streamed answer to every[], as ps_query_read makes it. */
static void whole_answer(ps_arena_t *a, size_t max_frame, ps_buf_t *out)
{
    ps_read_request_t req = make_req(a, every, 3);
    ps_read_opts_t o;
    ps_read_opts_default(&o);
    o.max_frame_bytes = max_frame;
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    assert_int_equal(ps_query_read(r, &req, PS_READ_STREAMED_XOR_CHUNKS, &o, out, NULL, &err), 0);
    ps_reader_end(r);
}

static void test_streamed_golden(void **state)
{
    /* length and CRC32C of the answers as the whole-answer code (before streaming) made them */
    static const struct { size_t max_frame, len; uint32_t crc; } want[] = {
        {1048576, 2585, 0x3f8a5c54}, {100, 2909, 0x06718742}, {300, 2665, 0x19ba245f},
    };
    ps_arena_t a = PS_ARENA_INIT;
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
        ps_buf_t out = PS_BUF_INIT;
        whole_answer(&a, want[i].max_frame, &out);
        assert_int_equal(out.len, want[i].len);
        assert_int_equal(ps_crc32c(0, out.data, out.len), want[i].crc);
        ps_buf_dispose(&out);
    }
    ps_arena_dispose(&a);
}

/* A cursor asked for `want` bytes at a time: the pieces put together are the whole answer, each
 * piece holds at least want bytes (but the last) and at most want plus one frame. */
static void test_cursor_pieces(void **state)
{
    static const size_t frames[] = {1048576, 100, 300};
    static const size_t wants[] = {1, 7, 64, 500, 4096, SIZE_MAX};
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    for (size_t f = 0; f < 3; f++) {
        ps_buf_t whole = PS_BUF_INIT;
        whole_answer(&a, frames[f], &whole);
        ps_read_request_t req = make_req(&a, every, 3);
        ps_read_opts_t o;
        ps_read_opts_default(&o);
        o.max_frame_bytes = frames[f];
        for (size_t w = 0; w < sizeof(wants) / sizeof(wants[0]); w++) {
            ps_reader_t *r;
            ps_read_cursor_t *c;
            ps_buf_t all = PS_BUF_INIT, piece = PS_BUF_INIT;
            bool done = false;
            uint32_t calls = 0;
            assert_int_equal(ps_reader_begin(store, &r, &err), 0);
            assert_int_equal(ps_read_cursor_new(r, &req, &o, &c, &err), 0);
            while (!done) {
                ps_buf_reset(&piece);
                assert_int_equal(ps_read_cursor_next(c, &piece, wants[w], &done, &err), 0);
                if (!done)
                    assert_true(piece.len >= wants[w]);
                /* a frame: its chunks' budget (max_frame less the labels) plus one chunk of at most
                 * 120 samples (under 2 KiB here) plus framing */
                if (wants[w] != SIZE_MAX)
                    assert_true(piece.len < wants[w] + frames[f] + 2048);
                ps_buf_append(&all, piece.data, piece.len);
                calls++;
            }
            ps_buf_reset(&piece); /* done stays done */
            assert_int_equal(ps_read_cursor_next(c, &piece, 1, &done, &err), 0);
            assert_true(done);
            assert_int_equal(piece.len, 0);
            ps_read_stats_t stats = *ps_read_cursor_stats(c);
            const ps_read_stats_t *st = &stats;
            /* query 0: 5 profile series of two types each (cpu and samples) and up; then "many" and up */
            assert_int_equal(st->series, 13);
            assert_int_equal(st->samples, 2 * (1 + 2 + 1 + NMANY + 1) + 11); /* totals (float chunks: none) */
            ps_read_cursor_free(c);
            ps_reader_end(r);
            assert_int_equal(all.len, whole.len);
            assert_memory_equal(all.data, whole.data, whole.len);
            if (wants[w] == 1)
                assert_int_equal(calls, st->frames + 1); /* a pause after every frame, the last call empty */
            if (wants[w] == SIZE_MAX)
                assert_int_equal(calls, 1);
            ps_buf_dispose(&all);
            ps_buf_dispose(&piece);
        }
        ps_buf_dispose(&whole);
    }
    /* a bad matcher in a later query fails before anything is made */
    q_t bad[2] = {{ALL_TIME, {{"=", "job", "api"}}}, {ALL_TIME, {{"=~", "job", "("}}}};
    ps_read_request_t req = make_req(&a, bad, 2);
    ps_reader_t *r;
    ps_read_cursor_t *c = (ps_read_cursor_t *)&a;
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    assert_int_equal(ps_read_cursor_new(r, &req, NULL, &c, &err), PS_EINVAL);
    assert_null(c);
    assert_non_null(strstr(err.msg, "queries[1]"));
    ps_reader_end(r);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_samples_exact),
        cmocka_unit_test(test_matcher_types_and_ranges),
        cmocka_unit_test(test_sample_limit),
        cmocka_unit_test(test_bad_matchers),
        cmocka_unit_test(test_hints),
        cmocka_unit_test(test_streamed),
        cmocka_unit_test(test_float_series),
        cmocka_unit_test(test_same_millisecond),
        cmocka_unit_test(test_streamed_golden),
        cmocka_unit_test(test_cursor_pieces),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
