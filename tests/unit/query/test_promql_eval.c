/*
 * test_promql_eval.c - unit tests for the PromQL evaluator (src/query/promql_eval.h) over an in-memory
 * sample source:
 *  - promql_cases.test (the format of Prometheus' promql/testdata files; its expected answers are
 *    Prometheus 2.42's, from promql_oracle.py): every case as an instant query, compared to the
 *    bit, and again as a one-step range query;
 *  - range queries: steps, series sorted by labels, a scalar over a range, staleness across steps,
 *    a range function's series kept apart when only __name__ told them apart, and @ over steps;
 *  - answer shapes: a range selector and a string in an instant query, and their refusal in a
 *    range query;
 *  - limits: 11,000 points, max samples (loaded and answered), the timeout, topk(1e9, ...);
 *  - subqueries: as an answer, the default step, over a range;
 *  - every function of 2.42's table evaluates, and of Prometheus 3's that profstore has; an unknown
 *    one is refused by name before any data is read;
 *  - Go's FormatFloat 'f' as count_values writes it.
 * Everything here runs with Prometheus 2.42's semantics (opts_242, --promql.compat=2).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include <cmocka.h>

#include "../testutil.h"

#include "core/timeutil.h"
#include "parser/promql.h"
#include "query/promql_eval.h"
#include "memsrc.h"

#ifndef PS_SOURCE_DIR
#define PS_SOURCE_DIR "."
#endif

/* ---- an in-memory source ---- */

typedef struct mem_src {
    mem_series_t *v;
    uint32_t n, cap;
    ps_arena_t a;
    uint32_t selects; /* calls of select */
} mem_src_t;

static int mem_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                      ps_pq_series_t **out, uint32_t *nout, ps_err_t *err)
{
    mem_src_t *m = ctx;
    m->selects++;
    return memsrc_select(m->v, m->n, sel, mint, maxt, arena, budget, out, nout, err);
}

static void mem_clear(mem_src_t *m)
{
    for (uint32_t i = 0; i < m->n; i++)
        free(m->v[i].s);
    free(m->v);
    ps_arena_dispose(&m->a);
    memset(m, 0, sizeof(*m));
}

static mem_series_t *mem_add(mem_src_t *m, const char *desc)
{
    ps_selector_t sel;
    ps_err_t err;
    if (ps_selector_parse(desc, strlen(desc), &m->a, &sel, &err) != 0)
        fail_msg("series %s: %s", desc, err.msg);
    ps_labels_t ls = {0, ps_arena_alloc(&m->a, (sel.n + 1) * sizeof(ps_label_pair_t)), 0};
    for (uint32_t i = 0; i < sel.n; i++)
        ls.pairs[ls.n++] = (ps_label_pair_t){sel.m[i].name, sel.m[i].value, (uint32_t)sel.m[i].nlen,
                                             (uint32_t)sel.m[i].vlen};
    ps_selector_dispose(&sel);
    if (ps_labels_normalize(&ls, &err) != 0)
        fail_msg("series %s: %s", desc, err.msg);
    if (m->n == m->cap) {
        m->cap = m->cap ? m->cap * 2 : 16;
        m->v = realloc(m->v, m->cap * sizeof(mem_series_t));
    }
    mem_series_t *s = &m->v[m->n++];
    *s = (mem_series_t){ls, NULL, NULL, 0, 0};
    return s;
}

static void mem_push(mem_series_t *s, int64_t t, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->s = realloc(s->s, s->cap * sizeof(ps_float_sample_t));
    }
    s->s[s->n++] = (ps_float_sample_t){t, v};
}

static double stale_nan(void)
{
    uint64_t b = 0x7ff0000000000002ull;
    double v;
    memcpy(&v, &b, 8);
    return v;
}

static double parse_num(const char *s, size_t n)
{
    char b[64];
    snprintf(b, sizeof(b), "%.*s", (int)n, s);
    if (strcmp(b, "stale") == 0)
        return stale_nan();
    char *end;
    double v = strtod(b, &end);
    if (*end)
        fail_msg("bad number %s", b);
    return v;
}

/* The values of a load line, the grammar of Prometheus' series descriptions. */
static void mem_values(mem_series_t *s, const char *vals, int64_t interval)
{
    int64_t t = 0;
    const char *p = vals;
    while (*p) {
        while (*p == ' ' || *p == '\t')
            p++;
        if (!*p)
            break;
        const char *e = p;
        while (*e && *e != ' ' && *e != '\t')
            e++;
        /* a token: _ | _xN | v | vxN | v+dxN | v-dxN */
        const char *x = NULL;
        for (const char *q = p; q < e; q++)
            if (*q == 'x')
                x = q;
        long times = -1;
        if (x && x > p && x + 1 < e && strspn(x + 1, "0123456789") >= (size_t)(e - x - 1))
            times = strtol(x + 1, NULL, 10);
        else
            x = e;
        if (x - p == 1 && *p == '_') {
            long k = times < 0 ? 1 : times;
            t += k * interval;
        } else {
            /* base[+-]delta */
            const char *op = NULL;
            for (const char *q = p + 1; q < x; q++)
                if ((*q == '+' || *q == '-') && q[-1] != 'e' && q[-1] != 'E')
                    op = q;
            if (op == NULL || times < 0) {
                double v = parse_num(p, (size_t)(x - p));
                long k = times < 0 ? 0 : times;
                for (long i = 0; i <= k; i++) {
                    mem_push(s, t, v);
                    t += interval;
                }
            } else {
                double v = parse_num(p, (size_t)(op - p)), d = parse_num(op, (size_t)(x - op));
                mem_push(s, t, v);
                t += interval;
                for (long i = 1; i <= times; i++) {
                    v += d;
                    mem_push(s, t, v);
                    t += interval;
                }
            }
        }
        p = e;
    }
}

static int64_t dur_ms(const char *s, size_t n)
{
    int64_t ns;
    ps_err_t err;
    if (ps_parse_duration(s, n, 1, &ns, &err) != 0)
        fail_msg("bad duration %.*s", (int)n, s);
    return ns / 1000000;
}

static ps_pq_source_t source_of(mem_src_t *m)
{
    ps_pq_source_t s = {mem_select, m};
    return s;
}

/* ---- evaluation helpers ---- */

/* The engine's options with Prometheus 2.42's semantics (--promql.compat=2): the expected answers
 * here are 2.42's (promql_oracle.py). Prometheus 3's are checked by test_promqltest.c. */
static int compat = 2; /* Prometheus 3's only where a test says so */

static void opts_242(ps_pq_opts_t *o)
{
    ps_pq_opts_default(o);
    o->compat = compat;
}

typedef struct fx {
    mem_src_t m;
    ps_arena_t a;
    ps_err_t err;
    ps_pq_node_t *e;
} fx_t;

static int run(fx_t *f, const char *q, const ps_pq_opts_t *o, ps_pq_result_t *r)
{
    ps_arena_reset(&f->a);
    ps_err_clear(&f->err);
    ps_pq_node_t *e = NULL;
    ps_pq_limits_t lim;
    ps_pq_limits_default(&lim);
    lim.compat = compat; /* 2.42's language: holt_winters */
    lim.experimental = true;
    if (ps_pq_parse(q, strlen(q), &lim, &f->a, &e, &f->err) != 0)
        fail_msg("parse %s: %s", q, f->err.msg);
    ps_pq_source_t src = source_of(&f->m);
    int ret = ps_pq_eval(e, &src, o, &f->a, r, &f->err);
    ps_pq_dispose(e);
    return ret;
}

static int instant(fx_t *f, const char *q, int64_t t, ps_pq_result_t *r)
{
    ps_pq_opts_t o;
    opts_242(&o);
    o.start = o.end = t;
    return run(f, q, &o, r);
}

static int range(fx_t *f, const char *q, int64_t start, int64_t end, int64_t step, ps_pq_result_t *r)
{
    ps_pq_opts_t o;
    opts_242(&o);
    o.start = start;
    o.end = end;
    o.step = step;
    return run(f, q, &o, r);
}

static char *fmt_labels(const ps_labels_t *ls)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(ls, &b);
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

static bool approx(double a, double b)
{
    if (isnan(a) || isnan(b) || isinf(a) || isinf(b) || a == 0 || b == 0)
        return isnan(a) ? isnan(b) : a == b;
    return fabs(a - b) <= 1e-15 * fmax(fabs(a), fabs(b));
}

static bool same(double a, double b)
{
    if (isnan(a) || isnan(b))
        return isnan(a) && isnan(b);
    return memcmp(&a, &b, sizeof(double)) == 0;
}

/* ---- the case file ---- */

typedef struct exp_line {
    char *labels;
    double v;
} exp_line_t;

static int cmp_exp(const void *a, const void *b)
{
    return strcmp(((const exp_line_t *)a)->labels, ((const exp_line_t *)b)->labels);
}

/* The result as lines ({labels} value), a scalar as {} value; false for other shapes. */
static uint32_t result_lines(const ps_pq_result_t *r, exp_line_t *out, uint32_t cap, bool last_point)
{
    if (r->type == PS_PQ_VSCALAR) {
        out[0] = (exp_line_t){strdup("{}"), r->scalar};
        return 1;
    }
    uint32_t n = 0;
    for (uint32_t i = 0; i < r->n && n < cap; i++)
        if (r->series[i].n > 0)
            out[n++] = (exp_line_t){fmt_labels(&r->series[i].labels),
                                    r->series[i].points[last_point ? r->series[i].n - 1 : 0].v};
    return n;
}

static int check_case(fx_t *f, int lineno, const char *kind, int64_t t, const char *expr, exp_line_t *exp,
                      uint32_t nexp, const char *want_err)
{
    ps_pq_result_t r;
    int ret = instant(f, expr, t, &r);
    if (strcmp(kind, "eval_fail") == 0) {
        if (ret == 0 || (want_err && !strstr(f->err.msg, want_err))) {
            print_error("line %d: %s: want an error with \"%s\", got %d \"%s\"\n", lineno, expr,
                        want_err ? want_err : "", ret, f->err.msg);
            return 1;
        }
        return 0;
    }
    if (ret != 0) {
        print_error("line %d: %s: %s\n", lineno, expr, f->err.msg);
        return 1;
    }
    exp_line_t got[256];
    int bad = 0;
    for (int pass = 0; pass < 2 && !bad; pass++) {
        uint32_t ng = result_lines(&r, got, 256, pass == 1);
        if (pass == 0 && r.type == PS_PQ_VVECTOR)
            for (uint32_t i = 0; i < r.n; i++)
                if (r.series[i].points[0].t != t)
                    bad = 1;
        exp_line_t *e2 = malloc((nexp + 1) * sizeof(exp_line_t));
        memcpy(e2, exp, nexp * sizeof(exp_line_t));
        if (strcmp(kind, "eval_ordered") != 0 || pass == 1) {
            qsort(got, ng, sizeof(exp_line_t), cmp_exp);
            qsort(e2, nexp, sizeof(exp_line_t), cmp_exp);
        }
        if (ng != nexp)
            bad = 1;
        for (uint32_t i = 0; i < ng && i < nexp && !bad; i++)
            if (strcmp(got[i].labels, e2[i].labels) != 0 ||
                !(strcmp(kind, "eval_approx") == 0 ? approx(got[i].v, e2[i].v) : same(got[i].v, e2[i].v)))
                bad = 1;
        if (bad) {
            print_error("line %d: %s at %lld (%s):\n", lineno, expr, (long long)t, pass ? "range" : "instant");
            for (uint32_t i = 0; i < nexp; i++)
                print_error("   want %s %.17g\n", e2[i].labels, e2[i].v);
            for (uint32_t i = 0; i < ng; i++)
                print_error("   got  %s %.17g\n", got[i].labels, got[i].v);
        }
        free(e2);
        for (uint32_t i = 0; i < ng; i++)
            free(got[i].labels);
        if (pass == 0 && !bad) {
            /* the same as a range query of one step */
            if ((ret = range(f, expr, t, t, 60000, &r)) != 0) {
                print_error("line %d: %s (range): %s\n", lineno, expr, f->err.msg);
                return 1;
            }
        }
    }
    return bad;
}

static void test_cases(void **state)
{
    (void)state;
    size_t len;
    uint8_t *text = ps_test_read_path(PS_SOURCE_DIR "/tests/unit/query/promql_cases.test", &len);
    fx_t f;
    memset(&f, 0, sizeof(f));
    char *save = NULL, *line;
    int lineno = 0, failures = 0, cases = 0;
    enum { NONE, LOAD, EVAL } mode = NONE;
    int64_t interval = 0, t = 0;
    char kind[16] = "", *expr = NULL, *want_err = NULL;
    exp_line_t exp[256];
    uint32_t nexp = 0;
    int eval_line = 0;
    char *lines = (char *)text;
    for (line = strtok_r(lines, "\n", &save);; line = strtok_r(NULL, "\n", &save)) {
        lineno++;
        bool indented = line && (line[0] == ' ' || line[0] == '\t');
        char *s = line;
        while (s && (*s == ' ' || *s == '\t'))
            s++;
        if (line && (*s == '#' || *s == 0))
            continue;
        if (mode == EVAL && (line == NULL || !indented)) {
            cases++;
            failures += check_case(&f, eval_line, kind, t, expr, exp, nexp, want_err);
            for (uint32_t i = 0; i < nexp; i++)
                free(exp[i].labels);
            nexp = 0;
            free(expr);
            free(want_err);
            expr = want_err = NULL;
            mode = NONE;
        }
        if (line == NULL)
            break;
        if (indented && mode == LOAD) {
            /* labels then values */
            char *sp = s;
            int depth = 0;
            char q = 0;
            for (; *sp; sp++) {
                if (q) {
                    if (*sp == '\\')
                        sp++;
                    else if (*sp == q)
                        q = 0;
                } else if (*sp == '"' || *sp == '\'') {
                    q = *sp;
                } else if (*sp == '{') {
                    depth++;
                } else if (*sp == '}') {
                    depth--;
                } else if ((*sp == ' ' || *sp == '\t') && depth == 0) {
                    break;
                }
            }
            char *desc = strndup(s, (size_t)(sp - s));
            mem_values(mem_add(&f.m, desc), sp, interval);
            free(desc);
        } else if (indented && mode == EVAL) {
            if (strncmp(s, "error: ", 7) == 0) {
                want_err = strdup(s + 7);
                continue;
            }
            char *sp = strrchr(s, ' ');
            assert_non_null(sp);
            exp[nexp++] = (exp_line_t){strndup(s, (size_t)(sp - s)), parse_num(sp + 1, strlen(sp + 1))};
        } else if (strncmp(s, "load ", 5) == 0) {
            interval = dur_ms(s + 5, strlen(s + 5));
            mode = LOAD;
        } else if (strcmp(s, "clear") == 0) {
            mem_clear(&f.m);
            mode = NONE;
        } else if (strncmp(s, "eval", 4) == 0) {
            char *sp = strchr(s, ' ');
            snprintf(kind, sizeof(kind), "%.*s", (int)(sp - s), s);
            char *at = strstr(s, " at ") + 4, *te = strchr(at, ' ');
            t = dur_ms(at, (size_t)(te - at));
            expr = strdup(te + 1);
            eval_line = lineno;
            mode = EVAL;
        } else {
            fail_msg("line %d: %s", lineno, s);
        }
    }
    free(text);
    mem_clear(&f.m);
    ps_arena_dispose(&f.a);
    print_message("%d cases, %d failed\n", cases, failures);
    assert_int_equal(cases, 322); /* every case of promql_cases.test ran */
    assert_int_equal(failures, 0);
}

/* ---- range queries ---- */

static void fx_begin(fx_t *f)
{
    memset(f, 0, sizeof(*f));
}

static void fx_end(fx_t *f)
{
    mem_clear(&f->m);
    ps_arena_dispose(&f->a);
}

static void load(fx_t *f, const char *desc, int64_t interval, const char *vals)
{
    mem_values(mem_add(&f->m, desc), vals, interval);
}

static const ps_qseries_t *series_of(const ps_pq_result_t *r, const char *labels)
{
    for (uint32_t i = 0; i < r->n; i++) {
        char *s = fmt_labels(&r->series[i].labels);
        bool eq = strcmp(s, labels) == 0;
        free(s);
        if (eq)
            return &r->series[i];
    }
    fail_msg("no series %s", labels);
    return NULL;
}

static void test_range(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"2\"}", 60000, "1 2 3 stale _ 6 7");
    load(&f, "m{a=\"1\"}", 60000, "_ _ 10 20");
    load(&f, "other{a=\"1\"}", 60000, "0+1x6");
    ps_pq_result_t r;
    /* steps of 1m from 0: m{a="2"} at 0, 1m, 2m; absent at 3m (stale) and 4m; 6 at 5m, 7 at 6m */
    assert_int_equal(range(&f, "m", 0, 360000, 60000, &r), 0);
    assert_int_equal(r.type, PS_PQ_VMATRIX);
    assert_int_equal(r.n, 2);
    char *l0 = fmt_labels(&r.series[0].labels), *l1 = fmt_labels(&r.series[1].labels);
    assert_string_equal(l0, "{__name__=\"m\", a=\"1\"}"); /* sorted by labels */
    assert_string_equal(l1, "{__name__=\"m\", a=\"2\"}");
    free(l0);
    free(l1);
    const ps_qseries_t *s2 = &r.series[1];
    assert_int_equal(s2->n, 5);
    int64_t want_t[] = {0, 60000, 120000, 300000, 360000};
    double want_v[] = {1, 2, 3, 6, 7};
    for (int i = 0; i < 5; i++) {
        assert_int_equal(s2->points[i].t, want_t[i]);
        assert_true(s2->points[i].v == want_v[i]);
    }
    /* a{1}: 10 at 2m, 20 at 3m, still 20 (lookback 5m) until 8m */
    assert_int_equal(r.series[0].n, 5);
    assert_int_equal(r.series[0].points[4].t, 360000);
    assert_true(r.series[0].points[4].v == 20);
    /* steps not aligned to the samples: 30 s, 90 s, ... */
    assert_int_equal(range(&f, "m{a=\"2\"}", 30000, 150000, 60000, &r), 0);
    assert_int_equal(r.series[0].n, 3);
    assert_int_equal(r.series[0].points[0].t, 30000);
    assert_true(r.series[0].points[0].v == 1);
    assert_true(r.series[0].points[2].v == 3);
    /* a scalar over a range: one series without labels, a point at every step */
    assert_int_equal(range(&f, "time() * 2", 0, 120000, 60000, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].labels.n, 0);
    assert_int_equal(r.series[0].n, 3);
    assert_true(r.series[0].points[2].v == 240);
    /* @ over steps: the same value at every step */
    assert_int_equal(range(&f, "other @ 120", 0, 180000, 60000, &r), 0);
    assert_int_equal(r.series[0].n, 4);
    for (int i = 0; i < 4; i++)
        assert_true(r.series[0].points[i].v == 2);
    /* rate's series the same once __name__ is dropped: Prometheus 2.42 fails the whole range
     * (its check of the result matrix), also when the two have points at different steps */
    assert_int_equal(range(&f, "rate({a=\"1\"}[5m])", 240000, 240000, 60000, &r), PS_ELIMIT);
    assert_string_equal(f.err.msg, "vector cannot contain metrics with the same labelset");
    assert_int_equal(range(&f, "rate({a=\"1\", __name__=~\"m|other\"}[1m])", 60000, 240000, 60000, &r), PS_ELIMIT);
    /* ... and so does an operator on them, as rangeEval does */
    assert_int_equal(range(&f, "rate({a=\"1\"}[5m]) * 2", 240000, 240000, 60000, &r), PS_ELIMIT);
    assert_string_equal(f.err.msg, "vector cannot contain metrics with the same labelset");
    /* sum by over a range: each step its own groups */
    assert_int_equal(range(&f, "sum by (a) (m)", 0, 180000, 60000, &r), 0);
    assert_int_equal(r.n, 2);
    const ps_qseries_t *g2 = series_of(&r, "{a=\"2\"}");
    assert_int_equal(g2->n, 3);
    const ps_qseries_t *g1 = series_of(&r, "{a=\"1\"}");
    assert_int_equal(g1->n, 2);
    assert_true(g1->points[1].v == 20);
    fx_end(&f);
}

static void test_shapes(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"1\"}", 15000, "1 2 stale 4 5");
    ps_pq_result_t r;
    /* a range selector in an instant query: its samples, stale markers left out, [t - r, t] */
    assert_int_equal(instant(&f, "m[45s]", 60000, &r), 0);
    assert_int_equal(r.type, PS_PQ_VMATRIX);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 3); /* [15 s, 60 s]: 2, 4, 5 */
    assert_int_equal(r.series[0].points[0].t, 15000);
    assert_true(r.series[0].points[0].v == 2);
    assert_int_equal(r.series[0].points[1].t, 45000);
    assert_int_equal(instant(&f, "m[44s]", 60000, &r), 0);
    assert_int_equal(r.series[0].n, 2);
    assert_int_equal(r.series[0].points[0].t, 45000);
    assert_int_equal(instant(&f, "(m[1m])", 60000, &r), 0);
    assert_int_equal(r.series[0].n, 4);
    assert_int_equal(range(&f, "m[1m]", 0, 60000, 15000, &r), PS_EINVAL);
    assert_string_equal(f.err.msg,
                        "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector");
    /* strings */
    assert_int_equal(instant(&f, "\"hello\"", 60000, &r), 0);
    assert_int_equal(r.type, PS_PQ_VSTRING);
    assert_string_equal(r.str, "hello");
    assert_int_equal(r.t, 60000);
    assert_int_equal(range(&f, "\"hello\"", 0, 60000, 15000, &r), PS_EINVAL);
    /* scalars */
    assert_int_equal(instant(&f, "scalar(m) + 0.5", 60000, &r), 0);
    assert_int_equal(r.type, PS_PQ_VSCALAR);
    assert_true(r.scalar == 5.5);
    assert_int_equal(instant(&f, "scalar(m)", 30000, &r), 0);
    assert_true(isnan(r.scalar)); /* stale at 30 s: no element */
    fx_end(&f);
}

static void test_subqueries(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"1\"}", 15000, "0+1x40"); /* 0 .. 40 every 15 s: 0 .. 600 s */
    ps_pq_result_t r;
    /* a subquery as the answer of an instant query: its points, at the multiples of its step */
    assert_int_equal(instant(&f, "m[2m:45s]", 600000, &r), 0);
    assert_int_equal(r.type, PS_PQ_VMATRIX);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 3); /* [480 s, 600 s]: 495, 540, 585 */
    assert_int_equal(r.series[0].points[0].t, 495000);
    assert_true(r.series[0].points[0].v == 33);
    assert_int_equal(r.series[0].points[2].t, 585000);
    assert_true(r.series[0].points[2].v == 39);
    /* the default step: the options' (Prometheus' evaluation_interval, 1 m) */
    ps_pq_opts_t o;
    opts_242(&o);
    assert_int_equal(o.subquery_step, 60000);
    assert_int_equal(instant(&f, "count_over_time(m[5m:])", 600000, &r), 0);
    assert_true(r.series[0].points[0].v == 6); /* 300, 360, ..., 600 */
    o.start = o.end = 600000;
    o.subquery_step = 30000;
    assert_int_equal(run(&f, "count_over_time(m[5m:])", &o, &r), 0);
    assert_true(r.series[0].points[0].v == 11);
    /* over a range: each step's window of the same inner points */
    assert_int_equal(range(&f, "max_over_time(m[1m:30s])", 300000, 600000, 15000, &r), 0);
    assert_int_equal(r.series[0].n, 21);
    for (uint32_t i = 0; i < 21; i++) {
        int64_t t = 300000 + (int64_t)i * 15000, last = t / 30000 * 30000; /* newest inner point <= t */
        assert_true(r.series[0].points[i].v == (double)(last / 15000));
    }
    /* a range query of a subquery is refused as of a range selector */
    assert_int_equal(range(&f, "m[1m:30s]", 300000, 600000, 15000, &r), PS_EINVAL);
    fx_end(&f);
}

/* What a subquery costs: memory for its points only, nothing for a time without one, no
 * evaluation at all of an inner expression that cannot give one; its points count against
 * max_samples and max_memory (issue 21, item 3). */
static void test_subquery_costs(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"1\"}", 15000, "0+1x40"); /* 0 .. 40 every 15 s: 0 .. 600 s */
    ps_pq_result_t r;
    ps_pq_opts_t o;
    /* 86,400,000 inner times of a selector without series: not evaluated (a 50 ms deadline holds) */
    const char *empty[] = {"max_over_time(nope[1d:1ms])", "count_over_time(sum(nope)[1d:1ms])",
                           "count_over_time((nope + 1)[1d:1ms])", "count_over_time((m and nope)[1d:1ms])",
                           "count_over_time(count_values(\"v\", -nope)[1d:1ms])",
                           "max_over_time(rate(nope[5m])[1d:1ms])", "count_over_time(abs(nope)[1d:1ms])",
                           "max_over_time(max_over_time(nope[1d:1ms])[1d:1ms])"};
    for (size_t i = 0; i < sizeof(empty) / sizeof(empty[0]); i++) {
        opts_242(&o);
        o.start = o.end = 600000;
        o.timeout = 50;
        assert_int_equal(run(&f, empty[i], &o, &r), 0);
        assert_int_equal(r.type, PS_PQ_VVECTOR);
        assert_int_equal(r.n, 0);
    }
    /* what can give a point is evaluated: 61 times in [540 s, 600 s] */
    const char *some[] = {"count_over_time((nope or vector(1))[1m:1s])", "count_over_time(absent(nope)[1m:1s])",
                          "count_over_time((vector(1) unless nope)[1m:1s])", "count_over_time(vector(1)[1m:1s])",
                          "count_over_time(absent_over_time(nope[1m])[1m:1s])"};
    for (size_t i = 0; i < sizeof(some) / sizeof(some[0]); i++) {
        assert_int_equal(instant(&f, some[i], 600000, &r), 0);
        assert_int_equal(r.n, 1);
        assert_true(r.series[0].points[0].v == 61);
    }
    /* an inner expression that happens to give nothing is evaluated at every time: the deadline */
    opts_242(&o);
    o.start = o.end = 600000;
    o.timeout = 50;
    assert_int_equal(run(&f, "max_over_time((m > 1e9)[1d:1ms])", &o, &r), PS_ETIMEOUT);
    /* windows apart (a 30 s subquery every 60 s): the times between them are never evaluated, and
     * each window has its 31 points */
    assert_int_equal(range(&f, "count_over_time(m[30s:1s])", 300000, 600000, 60000, &r), 0);
    assert_int_equal(r.n, 1);
    assert_int_equal(r.series[0].n, 6);
    for (uint32_t i = 0; i < 6; i++)
        assert_true(r.series[0].points[i].v == 31);
    /* overlapping windows at uneven steps give what one window each gives */
    assert_int_equal(range(&f, "sum_over_time(m[95s:5s])", 300000, 600000, 35000, &r), 0);
    for (uint32_t i = 0; i < r.series[0].n; i++) {
        ps_pq_result_t one;
        int64_t t = r.series[0].points[i].t;
        assert_int_equal(instant(&f, "sum_over_time(m[95s:5s])", t, &one), 0);
        assert_true(one.series[0].points[0].v == r.series[0].points[i].v);
    }
    /* points at each of 86,400,000 ms: max_memory stops them, and so does max_samples */
    opts_242(&o);
    o.start = o.end = 86400000;
    o.lookback = 100000000;
    o.max_memory = 16u << 20;
    assert_int_equal(run(&f, "max_over_time(m[1d:1ms])", &o, &r), PS_ELIMIT);
    assert_string_equal(f.err.msg, "query processing would use too much memory in query execution (the limit is "
                                   "16 MiB, the query memory limit)");
    assert_int_equal(run(&f, "m[1d:1ms]", &o, &r), PS_ELIMIT);
    assert_non_null(strstr(f.err.msg, "the query memory limit"));
    o.max_memory = 0;
    o.max_samples = 100000;
    assert_int_equal(run(&f, "max_over_time(m[1d:1ms])", &o, &r), PS_ELIMIT);
    assert_string_equal(f.err.msg, "query processing would load too many samples into memory in query execution "
                                   "(the limit is 100000 samples, the query sample limit)");
    /* within both: the answer (a point at every ms of [t - 50 s, t]) */
    o.max_memory = 16u << 20;
    o.max_samples = 1000000;
    assert_int_equal(run(&f, "count_over_time(m[50s:1ms])", &o, &r), 0);
    assert_true(r.series[0].points[0].v == 50001);
    fx_end(&f);
}

static void test_limits(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"1\"}", 1000, "0+1x9999");
    load(&f, "m{a=\"2\"}", 1000, "0+1x9999");
    ps_pq_result_t r;
    ps_pq_opts_t o;
    opts_242(&o);
    assert_int_equal(o.lookback, 300000);
    assert_int_equal(o.max_samples, 50000000);
    assert_int_equal(o.max_points, 11000);
    assert_int_equal(o.timeout, 120000);
    /* 11,000 points per series */
    assert_int_equal(range(&f, "m", 0, 11000, 1, &r), 0); /* (end - start) / step <= 11,000: 11,001 points */
    assert_int_equal(r.series[0].n, 11001);
    assert_int_equal(range(&f, "m", 0, 11001, 1, &r), PS_EINVAL);
    assert_non_null(strstr(f.err.msg, "exceeded maximum resolution of 11,000 points per timeseries"));
    assert_int_equal(range(&f, "m", 0, 10, 0, &r), PS_EINVAL);
    assert_int_equal(range(&f, "m", 10, 0, 1, &r), PS_EINVAL);
    /* samples loaded: 20,000 */
    o.start = o.end = 9999000;
    o.max_samples = 19999;
    o.lookback = 1000000000;
    assert_int_equal(run(&f, "m", &o, &r), PS_ELIMIT);
    assert_non_null(strstr(f.err.msg, "query processing would load too many samples into memory"));
    o.max_samples = 20001; /* loaded, then two answered: one too many */
    assert_int_equal(run(&f, "m", &o, &r), PS_ELIMIT);
    o.max_samples = 20002;
    assert_int_equal(run(&f, "m", &o, &r), 0);
    assert_int_equal(r.n, 2);
    /* a bomb of a range and a huge k: bounded by the data */
    assert_int_equal(instant(&f, "rate(m[100000d])", 9999000, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(instant(&f, "topk(1e9, m)", 9999000, &r), 0);
    assert_int_equal(r.n, 2);
    assert_int_equal(instant(&f, "topk(1e300, m)", 9999000, &r), PS_ELIMIT);
    assert_string_equal(f.err.msg, "Scalar value 1e+300 overflows int64");
    assert_int_equal(instant(&f, "topk(-1, m)", 9999000, &r), 0);
    assert_int_equal(r.n, 0);
    /* the timeout: 11,000 steps of a rate over everything stop at the deadline */
    opts_242(&o);
    o.start = 0;
    o.end = 10999000;
    o.step = 1000;
    o.timeout = 1;
    assert_int_equal(run(&f, "sum(rate(m[100000d])) + sum(changes(m[100000d]))", &o, &r), PS_ETIMEOUT);
    assert_non_null(strstr(f.err.msg, "query timed out in query execution"));
    fx_end(&f);
}

/* Every function of Prometheus 2.42's table is evaluated; a function the evaluator did not know
 * (a newer parser's) would be refused by name before any data is read. */
static void test_unsupported(void **state)
{
    (void)state;
    fx_t f;
    fx_begin(&f);
    load(&f, "m{a=\"1\"}", 1000, "1 2 3");
    ps_pq_result_t r;
    for (int id = 0; id < PS_FN_COUNT_; id++) {
        /* each function by its own name, with arguments of its declared types; Prometheus 3's
         * (from first_over_time on) in its language, with the experimental ones */
        compat = id >= PS_FN_FIRST_OVER_TIME ? 3 : 2;
        const char *names[] = {"abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh",
                               "avg_over_time", "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh",
                               "count_over_time", "days_in_month", "day_of_month", "day_of_week", "day_of_year", "deg",
                               "delta", "deriv", "exp", "floor", "histogram_count", "histogram_sum",
                               "histogram_fraction", "histogram_quantile", "holt_winters", "hour", "idelta",
                               "increase", "irate", "label_replace", "label_join", "last_over_time", "ln", "log10",
                               "log2", "max_over_time", "min_over_time", "minute", "month", "pi", "predict_linear",
                               "present_over_time", "quantile_over_time", "rad", "rate", "resets", "round", "scalar",
                               "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt", "stddev_over_time",
                               "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector",
                               "year", "first_over_time", "histogram_avg", "histogram_stddev", "histogram_stdvar",
                               "mad_over_time", "ts_of_first_over_time", "ts_of_last_over_time",
                               "ts_of_max_over_time", "ts_of_min_over_time", "sort_by_label",
                               "sort_by_label_desc", "start", "end", "range", "step"};
        const ps_pq_func_t *fn = ps_pq_func_lookup(names[id], strlen(names[id]));
        assert_non_null(fn);
        assert_int_equal(fn->id, id);
        char q[256];
        size_t o = (size_t)snprintf(q, sizeof(q), "%s(", fn->name);
        for (uint32_t k = 0; k < fn->nargs; k++) {
            const char *arg = fn->args[k] == PS_PQ_VSCALAR   ? "0.5"
                              : fn->args[k] == PS_PQ_VMATRIX ? "m[1m]"
                              : fn->args[k] == PS_PQ_VSTRING ? (k == 1 ? "\"dst\"" : "\"a\"")
                                                             : "m";
            o += (size_t)snprintf(q + o, sizeof(q) - o, "%s%s", k ? ", " : "", arg);
        }
        snprintf(q + o, sizeof(q) - o, ")");
        int rc = instant(&f, q, 2000, &r);
        if (rc != 0)
            fail_msg("%s: %d %s", q, rc, f.err.msg);
    }
    compat = 2;
    /* a function the evaluator does not know: refused, named, before any data is read */
    ps_pq_node_t *e = NULL;
    ps_arena_reset(&f.a);
    assert_int_equal(ps_pq_parse("abs(m)", 6, NULL, &f.a, &e, &f.err), 0);
    ps_pq_func_t future = *e->func;
    future.name = "future_fn";
    future.id = PS_FN_COUNT_;
    e->func = &future;
    ps_pq_source_t src = source_of(&f.m);
    ps_pq_opts_t o;
    opts_242(&o);
    o.start = o.end = 2000;
    f.m.selects = 0;
    assert_int_equal(ps_pq_eval(e, &src, &o, &f.a, &r, &f.err), PS_EUNSUPPORTED);
    assert_string_equal(f.err.msg, "the function future_fn() (at 1:1) is not supported by profstore's PromQL "
                                   "evaluator; Prometheus reading profstore through remote_read evaluates all of PromQL");
    assert_int_equal(f.m.selects, 0);
    ps_pq_dispose(e);
    fx_end(&f);
}

static void test_format_f(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *s;
    } cases[] = {
        {1, "1"}, {0.1, "0.1"}, {1e21, "1000000000000000000000"}, {1.5e-7, "0.00000015"}, {-2.5, "-2.5"},
        {123456789.125, "123456789.125"}, {NAN, "NaN"}, {INFINITY, "+Inf"}, {-INFINITY, "-Inf"}, {0, "0"},
    };
    char b[400];
    ps_pq_format_f(1e100, b, sizeof(b));
    assert_int_equal(strlen(b), 101); /* Go pads the shortest digits with zeros: 1 and 100 of them */
    assert_int_equal(strspn(b + 1, "0"), 100);
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_pq_format_f(cases[i].v, b, sizeof(b));
        assert_string_equal(b, cases[i].s);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cases),
        cmocka_unit_test(test_range),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_subqueries),
        cmocka_unit_test(test_subquery_costs),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_unsupported),
        cmocka_unit_test(test_format_f),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
