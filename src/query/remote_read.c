/*
 * remote_read.c - remote read (remote_read.h): selection per query, then the samples or chunks of each series
 * in label order, encoded by proto/remote_read.h. With a sample limit, the samples of a SAMPLES
 * query are counted first, so a read over the limit fails before anything is encoded. Memory of a
 * SAMPLES answer: one series' samples at a time plus the answer, which the limit bounds (about 18
 * bytes a sample).
 *
 * Streamed answers are made by a cursor that can stop after any chunk and go on later: it keeps
 * its place as (query, series in label order, time to resume from). A float series' walk over
 * its stored chunks resumes at the last sent chunk's max_t + 1 (chunks of a series do not
 * overlap: samples are appended in time order); a profile series' totals are made into XOR
 * chunks as they are read, and a walk stops only after a whole chunk, resuming at its last
 * sample's time + 1, so chunks are cut where a whole walk would cut them. Memory: the open
 * query's series set (at most max_series labels), one XOR chunk being built, the open series'
 * pending frame, and what the caller has not sent of out.
 */
#include "remote_read.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "parser/selector_specs.h"
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

static int on_samples(void *ctx, const ps_float_sample_t *s, size_t n)
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

static int cmp_series(const void *a, const void *b, void *ctx)
{
    const ps_labels_t *ls = ctx;
    return ps_labels_cmp(&ls[*(const uint32_t *)a], &ls[*(const uint32_t *)b]);
}

/* The range a query reads. Prometheus' TSDB trims to the hints' range when a query has hints
 * (Select(hints)); its clients send the query's own range there. Hints with neither end set
 * narrow nothing. */
static void query_range(const ps_read_query_t *q, int64_t *start, int64_t *end)
{
    *start = q->start_ms;
    *end = q->end_ms;
    if (q->hints.present && (q->hints.start_ms != 0 || q->hints.end_ms != 0)) {
        *start = q->hints.start_ms > *start ? q->hints.start_ms : *start;
        *end = q->hints.end_ms < *end ? q->hints.end_ms : *end;
    }
}

static int make_selector(const ps_read_query_t *q, int64_t qi, ps_arena_t *arena, ps_selector_t *sel, ps_err_t *err)
{
    ps_matcher_spec_t *specs = ps_arena_alloc(arena, (q->nmatchers ? q->nmatchers : 1) * sizeof(*specs));
    for (uint32_t j = 0; j < q->nmatchers; j++)
        specs[j] = (ps_matcher_spec_t){(ps_match_op_t)q->matchers[j].type, q->matchers[j].name, q->matchers[j].nlen,
                                       q->matchers[j].value, q->matchers[j].vlen};
    int rc = ps_selector_from_specs(specs, q->nmatchers, arena, sel, err);
    if (rc != 0)
        ps_err_prefix(err, "queries[%lld]", (long long)qi);
    return rc;
}

/* The series of sel with data in [start, end], and their order by labels in *order (malloc'd). */
static int select_sorted(ps_reader_t *r, ps_selector_t *sel, int64_t qi, int64_t start, int64_t end,
                         uint32_t max_series, ps_arena_t *arena, ps_series_set_t *set, uint32_t **order,
                         ps_err_t *err)
{
    int rc = ps_query_select(r, sel, ms_lo(start), ms_hi(end), max_series, arena, set, err);
    if (rc != 0) {
        if (rc == PS_EINVAL)
            ps_err_prefix(err, "queries[%lld]", (long long)qi);
        return rc;
    }
    *order = ps_xmalloc((set->n ? set->n : 1) * sizeof(**order));
    for (uint32_t i = 0; i < set->n; i++)
        (*order)[i] = i;
    qsort_r(*order, set->n, sizeof(**order), cmp_series, set->labels);
    return 0;
}

typedef struct count_ctx {
    uint64_t total, limit;
} count_ctx_t;

static int on_count_samples(void *ctx, const ps_float_sample_t *s, size_t n)
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
        if ((rc = ps_budget_check(err)) == 0)
            rc = ps_reader_samples(r, set->sids[i], start, end, on_count_samples, &c, err);
    *total = c.total;
    return rc;
}

/* One SAMPLES query's QueryResult, into resp. */
static int read_query(ps_reader_t *r, const ps_read_query_t *q, int64_t qi, const ps_read_opts_t *o,
                      ps_read_resp_t *resp, ps_read_stats_t *stats, ps_err_t *err)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_selector_t sel = {0};
    ps_series_set_t set = {0};
    samples_ctx_t sc = {NULL, 0, 0, 0, o->sample_limit};
    uint32_t *order = NULL;
    int64_t start, end;
    int rc = 0;

    ps_read_resp_begin_result(resp);
    query_range(q, &start, &end);
    /* func "series" (promtool query series, /api/v1/series through a remote_read Prometheus):
     * Prometheus loads no chunks and answers each series with no samples */
    bool labels_only = q->hints.present && strcmp(q->hints.func, "series") == 0;
    if (start > end)
        goto Done;
    if ((rc = make_selector(q, qi, &arena, &sel, err)) != 0 ||
        (rc = select_sorted(r, &sel, qi, start, end, o->max_series, &arena, &set, &order, err)) != 0)
        goto Exit;
    if (labels_only) {
        for (uint32_t k = 0; k < set.n; k++)
            ps_read_resp_add_series(resp, &set.labels[order[k]], NULL, 0);
        stats->series += set.n;
        goto Done;
    }
    if (o->sample_limit != 0) {
        /* count first, in the same snapshot: a read over the limit fails before anything is
         * encoded, so it costs one series' samples of memory, not the limit's worth of answer
         * (about 18 bytes a sample) */
        uint64_t total;
        if ((rc = count_samples(r, &set, start, end, o->sample_limit, &total, err)) != 0)
            goto Limit;
        ps_read_resp_reserve(resp, total * 20);
        sc.limit = 0;
    }
    for (uint32_t k = 0; k < set.n; k++) {
        uint32_t i = order[k];
        sc.n = 0;
        if ((rc = ps_budget_check(err)) != 0)
            goto Exit;
        if ((rc = ps_reader_samples(r, set.sids[i], start, end, on_samples, &sc, err)) != 0)
            goto Limit;
        if (sc.n == 0)
            continue;
        stats->series++;
        stats->samples += sc.n;
        ps_read_resp_add_series(resp, &set.labels[i], sc.v, sc.n);
    }
    goto Done;
Limit:
    if (rc == PS_ELIMIT)
        ps_err_set(err, PS_ELIMIT, "exceeded sample limit (%llu)", (unsigned long long)o->sample_limit);
    goto Exit;
Done:
    ps_read_resp_end_result(resp);
Exit:
    free(order);
    free(sc.v);
    ps_selector_dispose(&sel);
    ps_arena_dispose(&arena);
    return rc;
}

/* ---- the streamed cursor -------------------------------------------------------------------- */

#define PAUSE 1 /* a walk's callback stopping it: out holds what was wanted */

struct ps_read_cursor {
    ps_reader_t *r;               /* borrowed */
    const ps_read_request_t *req; /* borrowed */
    ps_read_opts_t o;
    ps_read_stream_t st;          /* its out is the caller's buffer of the current call */
    ps_arena_t sel_arena;         /* the selectors' */
    ps_selector_t *sels;          /* one per query, built at once */
    ps_read_stats_t stats;
    size_t want;                  /* of the current call */
    bool done;
    /* the open query */
    uint32_t qi;
    bool q_open;
    int64_t start, end;
    ps_arena_t arena;             /* its series set */
    ps_series_set_t set;
    uint32_t *order, k;           /* series order[k] is the next (or open) one */
    /* the open series */
    bool s_open;
    ps_series_kind_t kind;
    int64_t resume;               /* the next walk's start */
    uint64_t s_chunks;            /* chunks of the series sent so far */
    /* a profile series' totals: the XOR chunk being built */
    ps_buf_t xbuf;
    ps_xor_app_t app;
    int64_t app_min_t;
    bool any;                     /* a sample kept: last_t is set */
    int64_t last_t;
    ps_err_t *err;                /* of the current call */
};

static bool paused(const ps_read_cursor_t *c) { return c->st.out->len >= c->want; }

static void add_chunk(ps_read_cursor_t *c, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    ps_read_stream_chunk(&c->st, min_t, max_t, chunk, n);
    c->s_chunks++;
    c->stats.chunks++;
}

static int on_stored_chunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    ps_read_cursor_t *c = ctx;
    add_chunk(c, min_t, max_t, chunk, n);
    if (max_t == INT64_MAX) { /* nothing can follow */
        c->resume = INT64_MAX;
        return 0;
    }
    c->resume = max_t + 1;
    return paused(c) ? PAUSE : 0;
}

/* Sends the profile-totals chunk being built (if it has samples) and starts the next. */
static void cut_totals(ps_read_cursor_t *c)
{
    if (c->app.n == 0)
        return;
    size_t len;
    const uint8_t *bytes = ps_xor_app_bytes(&c->app, &len);
    add_chunk(c, c->app_min_t, c->app.t, bytes, len);
    ps_buf_reset(&c->xbuf);
    ps_xor_app_init(&c->app, &c->xbuf);
}

static int on_totals(void *ctx, const ps_float_sample_t *s, size_t n)
{
    ps_read_cursor_t *c = ctx;
    for (size_t k = 0; k < n; k++) {
        /* two profiles of a series in the same millisecond: a series holds one sample per
         * timestamp (Prometheus' rule, and an XOR chunk's), so the first one's total stands */
        if (c->any && s[k].t == c->last_t)
            continue;
        if (c->app.n == 0)
            c->app_min_t = s[k].t;
        int rc = ps_xor_app_append(&c->app, s[k].t, s[k].v, c->err);
        if (rc != 0)
            return rc;
        c->any = true;
        c->last_t = s[k].t;
        c->stats.samples++;
        if (c->app.n == PS_XOR_SAMPLES_PER_CHUNK) {
            cut_totals(c);
            if (c->last_t == INT64_MAX) {
                c->resume = INT64_MAX;
                return 0;
            }
            c->resume = c->last_t + 1; /* any later profile of that millisecond is skipped anyway */
            if (paused(c))
                return PAUSE;
        }
    }
    return 0;
}

static void close_query(ps_read_cursor_t *c)
{
    free(c->order);
    c->order = NULL;
    ps_arena_dispose(&c->arena);
    c->arena = (ps_arena_t)PS_ARENA_INIT;
    c->set = (ps_series_set_t){0};
    c->q_open = false;
}

int ps_read_cursor_new(ps_reader_t *r, const ps_read_request_t *req, const ps_read_opts_t *o,
                       ps_read_cursor_t **out, ps_err_t *err)
{
    ps_read_cursor_t *c = ps_xcalloc(1, sizeof(*c));
    c->r = r;
    c->req = req;
    if (o != NULL)
        c->o = *o;
    else
        ps_read_opts_default(&c->o);
    ps_read_stream_init(&c->st, NULL, c->o.max_frame_bytes);
    ps_xor_app_init(&c->app, &c->xbuf);
    c->sels = ps_xcalloc(req->nqueries ? req->nqueries : 1, sizeof(*c->sels));
    *out = c;
    for (uint32_t i = 0; i < req->nqueries; i++) {
        int rc = make_selector(&req->queries[i], i, &c->sel_arena, &c->sels[i], err);
        if (rc != 0) {
            ps_read_cursor_free(c);
            *out = NULL;
            return rc;
        }
    }
    return 0;
}

int ps_read_cursor_next(ps_read_cursor_t *c, ps_buf_t *out, size_t want, bool *done, ps_err_t *err)
{
    int rc = 0;
    c->st.out = out;
    c->want = want;
    c->err = err;
    while (!c->done && !paused(c)) {
        if (!c->q_open) {
            if (c->qi == c->req->nqueries) {
                c->done = true;
                break;
            }
            const ps_read_query_t *q = &c->req->queries[c->qi];
            query_range(q, &c->start, &c->end);
            c->k = 0;
            c->q_open = true;
            if (c->start <= c->end &&
                (rc = select_sorted(c->r, &c->sels[c->qi], c->qi, c->start, c->end, c->o.max_series, &c->arena,
                                    &c->set, &c->order, err)) != 0)
                goto Exit;
        }
        if (c->k == c->set.n) { /* the query is answered */
            ps_read_stream_flush(&c->st);
            close_query(c);
            c->qi++;
            continue;
        }
        uint32_t i = c->order[c->k];
        if (!c->s_open) {
            if ((rc = ps_budget_check(err)) != 0) /* per series: the deadline, the client */
                goto Exit;
            if ((rc = ps_reader_series_kind(c->r, c->set.sids[i], &c->kind, err)) == PS_ENOTFOUND) {
                rc = 0; /* no kind in this snapshot: skipped, as a series without data */
                c->k++;
                continue;
            }
            if (rc != 0)
                goto Exit;
            ps_read_stream_series(&c->st, c->qi, &c->set.labels[i]);
            c->s_open = true;
            c->resume = c->start;
            c->s_chunks = 0;
            c->any = false;
            ps_buf_reset(&c->xbuf);
            ps_xor_app_init(&c->app, &c->xbuf);
        }
        if (c->resume > c->end) {
            rc = 0;
        } else if (c->kind == PS_SERIES_FLOAT) { /* the stored chunks as they are */
            rc = ps_reader_xor_chunks(c->r, c->set.sids[i], c->resume, c->end, on_stored_chunk, c, err);
        } else { /* profile totals made into chunks of PS_XOR_SAMPLES_PER_CHUNK samples */
            rc = ps_reader_samples(c->r, c->set.sids[i], c->resume, c->end, on_totals, c, err);
        }
        if (rc == PAUSE) {
            rc = 0;
            if (c->resume <= c->end)
                continue; /* the loop's test stops here: out holds what was wanted */
        } else if (rc != 0) {
            goto Exit;
        }
        if (c->kind != PS_SERIES_FLOAT)
            cut_totals(c);
        c->stats.series += c->s_chunks > 0;
        c->s_open = false;
        c->k++;
    }
Exit:
    c->stats.frames = c->st.nframes;
    *done = c->done;
    c->st.out = NULL;
    c->err = NULL;
    return rc;
}

const ps_read_stats_t *ps_read_cursor_stats(const ps_read_cursor_t *c)
{
    return &c->stats;
}

void ps_read_cursor_free(ps_read_cursor_t *c)
{
    if (c == NULL)
        return;
    for (uint32_t i = 0; i < c->req->nqueries; i++)
        ps_selector_dispose(&c->sels[i]);
    free(c->sels);
    ps_arena_dispose(&c->sel_arena);
    close_query(c);
    ps_buf_dispose(&c->xbuf);
    ps_read_stream_dispose(&c->st);
    free(c);
}

int ps_query_read(ps_reader_t *r, const ps_read_request_t *req, ps_read_type_t type, const ps_read_opts_t *o,
                  ps_buf_t *out, ps_read_stats_t *stats, ps_err_t *err)
{
    ps_read_opts_t def;
    ps_read_stats_t st_local;
    int rc = 0;

    if (o == NULL) {
        ps_read_opts_default(&def);
        o = &def;
    }
    if (stats == NULL)
        stats = &st_local;
    memset(stats, 0, sizeof(*stats));
    if (type == PS_READ_STREAMED_XOR_CHUNKS) {
        ps_read_cursor_t *c;
        bool done;
        if ((rc = ps_read_cursor_new(r, req, o, &c, err)) != 0)
            return rc;
        rc = ps_read_cursor_next(c, out, SIZE_MAX, &done, err);
        *stats = c->stats;
        ps_read_cursor_free(c);
        return rc;
    }
    ps_read_resp_t resp;
    ps_read_resp_init(&resp);
    for (uint32_t i = 0; i < req->nqueries; i++)
        if ((rc = read_query(r, &req->queries[i], i, o, &resp, stats, err)) != 0)
            goto Exit;
    rc = ps_read_resp_finish(&resp, out, err);
Exit:
    ps_read_resp_dispose(&resp);
    return rc;
}
