/*
 * fuzz_pqeval.c - libFuzzer target for the PromQL parser and evaluator together (parser/promql.c,
 * src/query/promql_eval.c, promql_func.c): what /api/v1/query and /api/v1/query_range run.
 *
 * Arbitrary bytes are parsed (the small limits of fuzz_promql); a query that parses is evaluated
 * over a small in-memory sample source (series named a, b, c and h_bucket with the same label sets
 * under several names, stale markers, NaN, +-Inf, huge values, a counter reset) twice: as an
 * instant query at 5m and as a range query from 0 to 15m at 30 s steps, with the query limits on
 * (20,000 samples, a 2 s timeout, 11,000 points, 64 MiB of memory). It may not crash, leak or take long; an error
 * must be one of the evaluator's codes with a message; an answer must have the shape the API
 * writes (a range query a matrix whose points lie on the steps, in order).
 *
 * Built by tests/fuzz/build.sh (the sources of fuzz_promql plus the two evaluator files) and run by
 * tests/fuzz/run.sh with the seeds of fuzz_promql and the committed corpus
 * (tests/fuzz/corpus/fuzz_pqeval/, with regress-* files of fixed findings):
 *   tests/fuzz/run.sh 60 fuzz_pqeval
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "parser/promql.h"
#include "query/promql_eval.h"

#define PS_FUZZ_NAME "fuzz_pqeval"
#include "fuzzutil.h"

static const ps_pq_limits_t limits = {4096, 48, 400};

typedef struct mem_series {
    const char *labels[8]; /* name, value, ..., NULL */
    ps_labels_t ls;
    ps_float_sample_t s[64];
    uint32_t n;
} mem_series_t;

static mem_series_t data[] = {
    {{"__name__", "a", "job", "x", "i", "1", NULL}},
    {{"__name__", "a", "job", "x", "i", "2", NULL}},
    {{"__name__", "b", "job", "x", "i", "1", NULL}},
    {{"__name__", "b", "job", "y", "i", "1", NULL}},
    {{"__name__", "c", NULL}},
    {{"__name__", "h_bucket", "job", "x", "le", "0.5", NULL}},
    {{"__name__", "h_bucket", "job", "x", "le", "1", NULL}},
    {{"__name__", "h_bucket", "job", "x", "le", "+Inf", NULL}},
    {{"job", "x", "i", "1", NULL}}, /* no name */
};
#define NDATA (sizeof(data) / sizeof(data[0]))
static ps_arena_t data_arena = PS_ARENA_INIT;

static void init_data(void)
{
    static const double odd[] = {NAN, INFINITY, -INFINITY, 0, -0.0, 1e308, -1e308, 5e-324};
    uint64_t stale_bits = 0x7ff0000000000002ull;
    double stale;
    memcpy(&stale, &stale_bits, sizeof(stale));
    for (uint32_t k = 0; k < NDATA; k++) {
        mem_series_t *m = &data[k];
        for (uint32_t i = 0; m->labels[i] != NULL; i += 2)
            ps_labels_set(&m->ls, &data_arena, m->labels[i], strlen(m->labels[i]), m->labels[i + 1],
                          strlen(m->labels[i + 1]));
        for (uint32_t i = 0; i < 40; i++) {
            int64_t t = (int64_t)i * 30000 - 60000 + (int64_t)k * 1000; /* from before 0, a second apart */
            double v;
            switch (k % 4) {
            case 0: v = i * 1.5 + k; break;                     /* a counter */
            case 1: v = odd[i % 8]; break;                      /* the odd values */
            case 2: v = (i % 13) * 10.0; break;                 /* a counter with resets */
            default: v = i % 3 == 0 ? 1 : i % 3 == 1 ? 2 : 1; break;
            }
            if (k == 0 && i == 20)
                v = stale;
            if (k == 3 && i >= 10 && i < 15)
                continue; /* a gap */
            m->s[m->n++] = (ps_float_sample_t){t, v};
        }
    }
}

static int mem_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                      ps_pq_series_t **out, uint32_t *n, ps_err_t *err)
{
    (void)ctx;
    (void)mint;
    (void)maxt;
    ps_pq_series_t *v = ps_arena_alloc(arena, (NDATA + 1) * sizeof(ps_pq_series_t));
    uint32_t k = 0;
    for (uint32_t i = 0; i < NDATA; i++) {
        bool ok = true;
        for (uint32_t j = 0; j < sel->n && ok; j++) {
            const char *val = ps_labels_value(&data[i].ls, sel->m[j].name);
            ok = ps_matcher_match(&sel->m[j], val ? val : "", val ? strlen(val) : 0);
        }
        if (!ok)
            continue;
        if (*budget < data[i].n)
            return ps_err_set(err, PS_ELIMIT, "query processing would load too many samples into memory");
        *budget -= data[i].n;
        v[k++] = (ps_pq_series_t){data[i].ls, data[i].n, data[i].s};
    }
    *out = v;
    *n = k;
    return 0;
}

static void check_answer(int rc, const ps_err_t *err, const ps_pq_result_t *r, const ps_pq_opts_t *o)
{
    if (rc != 0) {
        CHECK(rc == PS_EINVAL || rc == PS_ELIMIT || rc == PS_ETIMEOUT || rc == PS_EUNSUPPORTED, "rc %d", rc);
        CHECK(err->msg[0] != '\0' && memchr(err->msg, '\0', sizeof(err->msg)) != NULL, "error %d without a message",
              rc);
        return;
    }
    if (o->step > 0) {
        CHECK(r->type == PS_PQ_VMATRIX, "range query answered type %d", (int)r->type);
        for (uint32_t i = 0; i < r->n; i++) {
            const ps_qseries_t *s = &r->series[i];
            CHECK(s->n > 0, "series %u without points", i);
            for (uint32_t j = 0; j < s->n; j++) {
                int64_t t = s->points[j].t;
                CHECK(t >= o->start && t <= o->end && (t - o->start) % o->step == 0, "point at %lld", (long long)t);
                CHECK(j == 0 || t > s->points[j - 1].t, "points out of order at %lld", (long long)t);
            }
        }
    } else {
        CHECK(r->type == PS_PQ_VSCALAR || r->type == PS_PQ_VSTRING || r->type == PS_PQ_VVECTOR ||
              r->type == PS_PQ_VMATRIX, "type %d", (int)r->type);
        if (r->type == PS_PQ_VSTRING)
            CHECK(r->str != NULL, "string answer without a string");
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *bytes, size_t size)
{
    static bool ready;
    if (!ready) {
        init_data();
        ready = true;
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    if (ps_pq_parse((const char *)bytes, size, &limits, &a, &e, &err) != 0) {
        ps_arena_dispose(&a);
        return 0;
    }
    ps_pq_source_t src = {mem_select, NULL};
    for (int pass = 0; pass < 2; pass++) {
        ps_pq_opts_t o;
        ps_pq_opts_default(&o);
        o.max_samples = 20000;
        o.timeout = 2000;
        o.max_memory = 64u << 20;
        if (pass == 0) {
            o.start = o.end = 300000;
            o.step = 0;
        } else {
            o.start = 0;
            o.end = 900000;
            o.step = 30000;
        }
        ps_arena_t ra = PS_ARENA_INIT;
        ps_pq_result_t r;
        memset(&r, 0, sizeof(r));
        memset(&err, 0, sizeof(err));
        int rc = ps_pq_eval(e, &src, &o, &ra, &r, &err);
        check_answer(rc, &err, &r, &o);
        ps_arena_dispose(&ra);
    }
    ps_pq_dispose(e);
    ps_arena_dispose(&a);
    return 0;
}
