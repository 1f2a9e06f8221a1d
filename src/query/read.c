/*
 * read.c - remote read (read.h): selection per query, then the samples or chunks of each series
 * in label order, encoded by proto/remote_read.h. With a sample limit, the samples of a SAMPLES
 * query are counted first, so a read over the limit fails before anything is encoded; streamed
 * answers count as they go (float series by their chunk headers). Memory: one series' samples at
 * a time plus the answer, which the limit bounds (about 18 bytes a sample in SAMPLES, 1-2 in
 * chunks).
 */
#include "read.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "parser/matchers.h"
#include "query.h"
#include "storage/xorchunk.h"

void ps_read_opts_default(ps_read_opts_t *o)
{
    o->sample_limit = 50000000;
    o->max_frame_bytes = 1048576;
    o->max_series = 10000;
}

/* ms -> the ns bounds of profile timestamps whose ms floor is in [start_ms, end_ms] */
static int64_t ms_lo(int64_t ms) { return ms <= INT64_MIN / 1000000 ? INT64_MIN : ms * 1000000; }
static int64_t ms_hi(int64_t ms) { return ms >= INT64_MAX / 1000000 - 1 ? INT64_MAX : ms * 1000000 + 999999; }

typedef struct samples_ctx {
    ps_remote_sample_t *v;
    size_t n, cap;
    uint64_t total, limit; /* samples of this query so far; the limit (0: none) */
} samples_ctx_t;

static int on_samples(void *ctx, const ps_fsample_t *s, size_t n)
{
    samples_ctx_t *c = ctx;
    c->total += n;
    if (c->limit != 0 && c->total > c->limit)
        return PS_ELIMIT;
    if (c->n + n > c->cap) {
        size_t cap = c->cap ? c->cap : 256;
        while (cap < c->n + n)
            cap *= 2;
        c->v = ps_xrealloc(c->v, cap * sizeof(*c->v));
        c->cap = cap;
    }
    for (size_t k = 0; k < n; k++) {
        /* two profiles of a series in the same millisecond: a series holds one sample per
         * timestamp (Prometheus' rule, and an XOR chunk's), so the first one's total stands */
        if (c->n > 0 && c->v[c->n - 1].t_ms == s[k].t)
            continue;
        c->v[c->n].t_ms = s[k].t;
        c->v[c->n].v = s[k].v;
        c->n++;
    }
    return 0;
}

typedef struct chunks_ctx {
    ps_read_stream_t *st;
    uint64_t total, limit, nchunks;
} chunks_ctx_t;

static int on_chunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    chunks_ctx_t *c = ctx;
    c->total += ps_xor_count(chunk, n);
    if (c->limit != 0 && c->total > c->limit)
        return PS_ELIMIT;
    ps_read_stream_chunk(c->st, min_t, max_t, chunk, n);
    c->nchunks++;
    return 0;
}

static int cmp_series(const void *a, const void *b, void *ctx)
{
    const ps_labels_t *ls = ctx;
    return ps_labels_cmp(&ls[*(const uint32_t *)a], &ls[*(const uint32_t *)b]);
}

/* Profile totals as XOR chunks of PS_XOR_SAMPLES_PER_CHUNK samples, into the stream. */
static int stream_totals(ps_read_stream_t *st, const ps_remote_sample_t *v, size_t n, uint64_t *nchunks,
                         ps_err_t *err)
{
    ps_buf_t buf = PS_BUF_INIT;
    ps_xor_app_t app;
    int rc = 0;
    for (size_t i = 0; i < n; i += PS_XOR_SAMPLES_PER_CHUNK) {
        size_t end = i + PS_XOR_SAMPLES_PER_CHUNK < n ? i + PS_XOR_SAMPLES_PER_CHUNK : n;
        ps_buf_reset(&buf);
        ps_xor_app_init(&app, &buf);
        for (size_t k = i; k < end; k++) /* times strictly increase: on_samples made them so */
            if ((rc = ps_xor_app_append(&app, v[k].t_ms, v[k].v, err)) != 0)
                goto Exit;
        size_t len;
        const uint8_t *bytes = ps_xor_app_bytes(&app, &len);
        ps_read_stream_chunk(st, v[i].t_ms, app.t, bytes, len);
        (*nchunks)++;
    }
Exit:
    ps_buf_dispose(&buf);
    return rc;
}

typedef struct count_ctx {
    uint64_t total, limit;
} count_ctx_t;

static int on_count_samples(void *ctx, const ps_fsample_t *s, size_t n)
{
    count_ctx_t *c = ctx;
    c->total += n;
    return c->total > c->limit ? PS_ELIMIT : 0;
}

/* The samples a SAMPLES answer to q will hold, stopping with PS_ELIMIT once over limit. */
static int count_samples(ps_reader_t *r, const ps_series_set_t *set, int64_t start, int64_t end, uint64_t limit,
                         uint64_t *total, ps_err_t *err)
{
    count_ctx_t c = {0, limit};
    int rc = 0;
    for (uint32_t i = 0; i < set->n && rc == 0; i++)
        rc = ps_reader_samples(r, set->sids[i], start, end, on_count_samples, &c, err);
    *total = c.total;
    return rc;
}

static int read_query(ps_reader_t *r, const ps_read_query_t *q, int64_t qi, ps_read_type_t type,
                      const ps_read_opts_t *o, ps_read_resp_t *resp, ps_read_stream_t *st, ps_read_stats_t *stats,
                      ps_err_t *err)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_selector_t sel = {0};
    ps_series_set_t set = {0};
    samples_ctx_t sc = {NULL, 0, 0, 0, o->sample_limit};
    uint32_t *order = NULL;
    int rc = 0;

    if (type == PS_READ_SAMPLES)
        ps_read_resp_begin_result(resp);
    /* Prometheus' TSDB trims to the hints' range when a query has hints (Select(hints)); its
     * clients send the query's own range there. Hints with neither end set narrow nothing. */
    int64_t start = q->start_ms, end = q->end_ms;
    if (q->hints.present && (q->hints.start_ms != 0 || q->hints.end_ms != 0)) {
        start = q->hints.start_ms > start ? q->hints.start_ms : start;
        end = q->hints.end_ms < end ? q->hints.end_ms : end;
    }
    /* func "series" (promtool query series, /api/v1/series through a remote_read Prometheus):
     * Prometheus loads no chunks and answers each series with no samples */
    bool labels_only = type == PS_READ_SAMPLES && q->hints.present && strcmp(q->hints.func, "series") == 0;
    if (start > end)
        goto Done;
    ps_matcher_spec_t *specs = ps_arena_alloc(&arena, (q->nmatchers ? q->nmatchers : 1) * sizeof(*specs));
    for (uint32_t j = 0; j < q->nmatchers; j++)
        specs[j] = (ps_matcher_spec_t){(ps_match_op_t)q->matchers[j].type, q->matchers[j].name, q->matchers[j].nlen,
                                       q->matchers[j].value, q->matchers[j].vlen};
    if ((rc = ps_selector_from_specs(specs, q->nmatchers, &arena, &sel, err)) != 0) {
        ps_err_prefix(err, "queries[%lld]", (long long)qi);
        goto Exit;
    }
    if ((rc = ps_query_select(r, &sel, ms_lo(start), ms_hi(end), o->max_series, &arena, &set, err)) != 0) {
        if (rc == PS_EINVAL)
            ps_err_prefix(err, "queries[%lld]", (long long)qi);
        goto Exit;
    }
    order = ps_xmalloc((set.n ? set.n : 1) * sizeof(*order));
    for (uint32_t i = 0; i < set.n; i++)
        order[i] = i;
    qsort_r(order, set.n, sizeof(*order), cmp_series, set.labels);
    if (labels_only) {
        for (uint32_t k = 0; k < set.n; k++)
            ps_read_resp_add_series(resp, &set.labels[order[k]], NULL, 0);
        stats->series += set.n;
        goto Done;
    }
    if (type == PS_READ_SAMPLES && o->sample_limit != 0) {
        /* count first, in the same snapshot: a read over the limit fails before anything is
         * encoded, so it costs one series' samples of memory, not the limit's worth of answer
         * (about 18 bytes a sample). Streamed answers take 1-2 bytes a sample: their limit is
         * checked as they are made. */
        uint64_t total;
        if ((rc = count_samples(r, &set, start, end, o->sample_limit, &total, err)) != 0)
            goto Limit;
        ps_read_resp_reserve(resp, total * 20);
        sc.limit = 0;
    }
    chunks_ctx_t cc = {st, 0, sc.limit, 0};
    for (uint32_t k = 0; k < set.n; k++) {
        uint32_t i = order[k];
        ps_series_kind_t kind = PS_SERIES_PROFILE;
        if (type == PS_READ_STREAMED_XOR_CHUNKS) {
            if ((rc = ps_reader_series_kind(r, set.sids[i], &kind, err)) == PS_ENOTFOUND) {
                rc = 0;
                continue;
            }
            if (rc != 0)
                goto Exit;
        }
        if (kind == PS_SERIES_FLOAT) { /* streamed: the stored chunks */
            uint64_t before = cc.nchunks;
            ps_read_stream_series(st, qi, &set.labels[i]);
            cc.total = sc.total;
            rc = ps_reader_xor_chunks(r, set.sids[i], start, end, on_chunk, &cc, err);
            sc.total = cc.total;
            if (rc != 0)
                goto Limit;
            stats->series += cc.nchunks > before;
            stats->chunks += cc.nchunks - before;
            continue;
        }
        sc.n = 0;
        if ((rc = ps_reader_samples(r, set.sids[i], start, end, on_samples, &sc, err)) != 0)
            goto Limit;
        if (sc.n == 0)
            continue;
        stats->series++;
        stats->samples += sc.n;
        if (type == PS_READ_SAMPLES) {
            ps_read_resp_add_series(resp, &set.labels[i], sc.v, sc.n);
        } else {
            ps_read_stream_series(st, qi, &set.labels[i]);
            if ((rc = stream_totals(st, sc.v, sc.n, &stats->chunks, err)) != 0)
                goto Exit;
        }
    }
    if (type == PS_READ_STREAMED_XOR_CHUNKS)
        ps_read_stream_flush(st);
    goto Done;
Limit:
    if (rc == PS_ELIMIT)
        ps_err_set(err, PS_ELIMIT, "exceeded sample limit (%llu)", (unsigned long long)o->sample_limit);
    goto Exit;
Done:
    if (type == PS_READ_SAMPLES)
        ps_read_resp_end_result(resp);
Exit:
    free(order);
    free(sc.v);
    ps_selector_dispose(&sel);
    ps_arena_dispose(&arena);
    return rc;
}

int ps_query_read(ps_reader_t *r, const ps_read_request_t *req, ps_read_type_t type, const ps_read_opts_t *o,
                  ps_buf_t *out, ps_read_stats_t *stats, ps_err_t *err)
{
    ps_read_opts_t def;
    ps_read_stats_t st_local;
    ps_read_resp_t resp;
    ps_read_stream_t st;
    int rc = 0;

    if (o == NULL) {
        ps_read_opts_default(&def);
        o = &def;
    }
    if (stats == NULL)
        stats = &st_local;
    memset(stats, 0, sizeof(*stats));
    ps_read_resp_init(&resp);
    ps_read_stream_init(&st, out, o->max_frame_bytes);
    for (uint32_t i = 0; i < req->nqueries; i++)
        if ((rc = read_query(r, &req->queries[i], i, type, o, &resp, &st, stats, err)) != 0)
            goto Exit;
    if (type == PS_READ_SAMPLES)
        rc = ps_read_resp_finish(&resp, out, err);
    stats->frames = st.nframes;
Exit:
    ps_read_stream_dispose(&st);
    ps_read_resp_dispose(&resp);
    return rc;
}
