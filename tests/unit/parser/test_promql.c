/*
 * test_promql.c - the PromQL parser: Prometheus 2.42's canonical forms and parse errors for some
 * 1,660 inputs (promql_cases.h, recorded from the real binary), the tree built (node kinds, types,
 * offsets, @, ranges, steps, matching labels and cardinality, grouping, positions), the function
 * table, the limits (input size, depth, nodes: no stack overflow on deep nesting), and that a
 * failed parse frees what it compiled.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parser/promql.h"

#include "promql_cases.h"

#define N(a) (sizeof(a) / sizeof((a)[0]))

/* Prometheus 2.42's language (the recorded cases are 2.42's: holt_winters) */
static const ps_pq_limits_t *lim242(void)
{
    static ps_pq_limits_t lim;
    ps_pq_limits_default(&lim);
    lim.compat = 2;
    return &lim;
}

static ps_pq_node_t *parse_ok(ps_arena_t *a, const char *s)
{
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    if (ps_pq_parse(s, strlen(s), lim242(), a, &e, &err) != 0)
        fail_msg("%s: %s", s, err.msg);
    assert_non_null(e);
    return e;
}

static char *str_of(const ps_pq_node_t *e, bool pretty)
{
    ps_buf_t b = {0};
    if (pretty)
        ps_pq_pretty(e, 0, &b);
    else
        ps_pq_format(e, &b);
    ps_buf_putc(&b, '\0');
    char *s = strdup((const char *)b.data);
    ps_buf_dispose(&b);
    return s;
}

/* The byte offset that "L:C: ..." names in s. */
static int32_t offset_of(const char *s, const char *msg)
{
    unsigned line = 0, col = 0;
    if (sscanf(msg, "%u:%u:", &line, &col) != 2)
        return -2;
    size_t i = 0;
    for (unsigned l = 1; l < line && s[i] != '\0'; i++)
        if (s[i] == '\n')
            l++;
    return (int32_t)(i + col - 1);
}

static void test_prometheus_formats(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(formats); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = parse_ok(&a, formats[i].in);
        char *pretty = str_of(e, true), *line = str_of(e, false);
        if (strcmp(pretty, formats[i].out) != 0)
            fail_msg("%s:\n got  %s\n want %s", formats[i].in, pretty, formats[i].out);
        if (strchr(formats[i].out, '\n') == NULL && strcmp(line, formats[i].out) != 0)
            fail_msg("String() of %s:\n got  %s\n want %s", formats[i].in, line, formats[i].out);
        /* the canonical forms read back to themselves */
        ps_pq_node_t *e2 = parse_ok(&a, pretty), *e3 = parse_ok(&a, line);
        char *pretty2 = str_of(e2, true), *line2 = str_of(e3, false);
        assert_string_equal(pretty2, pretty);
        assert_string_equal(line2, line);
        free(pretty);
        free(line);
        free(pretty2);
        free(line2);
        ps_pq_dispose(e);
        ps_pq_dispose(e2);
        ps_pq_dispose(e3);
        ps_arena_dispose(&a);
    }
}

static void test_prometheus_errors(void **state)
{
    (void)state;
    for (size_t i = 0; i < N(errors); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = (ps_pq_node_t *)(uintptr_t)1;
        ps_err_t err;
        const char *s = errors[i].in;
        int rc = ps_pq_parse(s, strlen(s), lim242(), &a, &e, &err);
        if (rc != PS_EINVAL)
            fail_msg("%s: got %d, want PS_EINVAL", s, rc);
        assert_null(e);
        if (strcmp(err.msg, errors[i].msg) != 0)
            fail_msg("%s:\n got  %s\n want %s", s, err.msg, errors[i].msg);
        assert_int_equal(err.pos, offset_of(s, errors[i].msg));
        ps_arena_dispose(&a);
    }
}

static void test_selectors(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = parse_ok(&a, "a{b=\"c\", d=~\"e.*\"}[5m] offset 1h @ 100");
    assert_int_equal(e->kind, PS_PQ_MATRIX);
    assert_int_equal(e->pos, 0);
    assert_int_equal(e->end, 38);
    assert_int_equal(e->expr->pos, 0);
    assert_int_equal(e->type, PS_PQ_VMATRIX);
    assert_int_equal(e->range_ms, 300000);
    ps_pq_node_t *v = e->expr;
    assert_int_equal(v->kind, PS_PQ_VECTOR);
    assert_int_equal(v->type, PS_PQ_VVECTOR);
    assert_string_equal(v->name, "a");
    assert_int_equal(v->sel.n, 3);
    assert_string_equal(v->sel.m[0].name, "__name__");
    assert_string_equal(v->sel.m[0].value, "a");
    assert_int_equal(v->sel.m[1].op, PS_MATCH_EQ);
    assert_string_equal(v->sel.m[1].name, "b");
    assert_string_equal(v->sel.m[1].value, "c");
    assert_int_equal(v->sel.m[2].op, PS_MATCH_RE);
    assert_true(ps_matcher_match(&v->sel.m[2], "exy", 3));
    assert_false(ps_matcher_match(&v->sel.m[2], "xe", 2));
    assert_int_equal(v->offset_ms, 3600000);
    assert_int_equal(v->at, PS_PQ_AT_TIME);
    assert_int_equal(v->at_ms, 100000);
    ps_pq_dispose(e);

    e = parse_ok(&a, "{__name__=~\"x.*\", job!=\"\"} offset -5m");
    assert_int_equal(e->kind, PS_PQ_VECTOR);
    assert_null(e->name);
    assert_int_equal(e->sel.n, 2);
    assert_int_equal(e->offset_ms, -300000);
    assert_int_equal(e->at, PS_PQ_AT_NONE);
    ps_pq_dispose(e);

    e = parse_ok(&a, "x @ 1.2345");
    assert_int_equal(e->at_ms, 1235); /* rounded, as timestamp.FromFloatSeconds */
    e = parse_ok(&a, "x @ -1.5");
    assert_int_equal(e->at_ms, -1500);
    e = parse_ok(&a, "x @ end()");
    assert_int_equal(e->at, PS_PQ_AT_END);
    e = parse_ok(&a, "x[1y2w3d4h5m6s7ms]");
    assert_int_equal(e->range_ms, ((365 + 14 + 3) * 86400 + 4 * 3600 + 5 * 60 + 6) * 1000LL + 7);
    e = parse_ok(&a, "rate(x[100000d])");
    assert_int_equal(e->args[0]->range_ms, 100000LL * 86400000);
    ps_arena_dispose(&a);
}

static void test_subqueries(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = parse_ok(&a, "max_over_time(rate(x[5m])[1h:5m] @ start() offset 10m)");
    assert_int_equal(e->kind, PS_PQ_CALL);
    assert_int_equal(e->func->id, PS_FN_MAX_OVER_TIME);
    assert_int_equal(e->type, PS_PQ_VVECTOR);
    assert_int_equal(e->nargs, 1);
    ps_pq_node_t *s = e->args[0];
    assert_int_equal(s->kind, PS_PQ_SUBQUERY);
    assert_int_equal(s->type, PS_PQ_VMATRIX);
    assert_int_equal(s->range_ms, 3600000);
    assert_int_equal(s->step_ms, 300000);
    assert_int_equal(s->at, PS_PQ_AT_START);
    assert_int_equal(s->offset_ms, 600000);
    assert_int_equal(s->pos, 14);
    assert_int_equal(s->expr->kind, PS_PQ_CALL);
    assert_int_equal(s->expr->func->id, PS_FN_RATE);
    assert_int_equal(s->expr->args[0]->kind, PS_PQ_MATRIX);
    assert_int_equal(s->expr->args[0]->expr->offset_ms, 0);
    ps_pq_dispose(e);

    e = parse_ok(&a, "x[1h:]");
    assert_int_equal(e->kind, PS_PQ_SUBQUERY);
    assert_int_equal(e->step_ms, 0);
    assert_int_equal(e->expr->kind, PS_PQ_VECTOR);
    ps_pq_dispose(e);
    ps_arena_dispose(&a);
}

static void test_binary(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = parse_ok(&a, "a / on(b, c) group_left(d) e");
    assert_int_equal(e->kind, PS_PQ_BINARY);
    assert_int_equal(e->binop, PS_PQ_DIV);
    assert_non_null(e->matching);
    assert_true(e->matching->on);
    assert_int_equal(e->matching->card, PS_PQ_MANY_TO_ONE);
    assert_int_equal(e->matching->nlabels, 2);
    assert_string_equal(e->matching->labels[0], "b");
    assert_string_equal(e->matching->labels[1], "c");
    assert_int_equal(e->matching->ninclude, 1);
    assert_string_equal(e->matching->include[0], "d");
    assert_false(e->return_bool);

    e = parse_ok(&a, "a + ignoring(x) group_right e");
    assert_false(e->matching->on);
    assert_int_equal(e->matching->card, PS_PQ_ONE_TO_MANY);
    assert_int_equal(e->matching->nlabels, 1);
    assert_int_equal(e->matching->ninclude, 0);

    e = parse_ok(&a, "a unless b");
    assert_int_equal(e->binop, PS_PQ_UNLESS);
    assert_int_equal(e->matching->card, PS_PQ_MANY_TO_MANY);
    assert_false(e->matching->on);
    assert_int_equal(e->matching->nlabels, 0);

    e = parse_ok(&a, "a * b");
    assert_int_equal(e->matching->card, PS_PQ_ONE_TO_ONE);

    e = parse_ok(&a, "1 + a");
    assert_null(e->matching); /* only between two vectors */
    assert_int_equal(e->type, PS_PQ_VVECTOR);
    e = parse_ok(&a, "1 + 2");
    assert_null(e->matching);
    assert_int_equal(e->type, PS_PQ_VSCALAR);
    e = parse_ok(&a, "a > bool 1");
    assert_true(e->return_bool);
    assert_int_equal(e->binop, PS_PQ_GTR);

    /* precedence and associativity */
    e = parse_ok(&a, "2 ^ 3 ^ 2");
    assert_int_equal(e->lhs->kind, PS_PQ_NUMBER);
    assert_int_equal(e->rhs->kind, PS_PQ_BINARY);
    e = parse_ok(&a, "a - b - c");
    assert_int_equal(e->lhs->kind, PS_PQ_BINARY);
    assert_int_equal(e->rhs->kind, PS_PQ_VECTOR);
    e = parse_ok(&a, "a or b and c == d + e * f ^ g");
    assert_int_equal(e->binop, PS_PQ_OR);
    assert_int_equal(e->rhs->binop, PS_PQ_AND);
    assert_int_equal(e->rhs->rhs->binop, PS_PQ_EQLC);
    assert_int_equal(e->rhs->rhs->rhs->binop, PS_PQ_ADD);
    assert_int_equal(e->rhs->rhs->rhs->rhs->binop, PS_PQ_MUL);
    assert_int_equal(e->rhs->rhs->rhs->rhs->rhs->binop, PS_PQ_POW);
    e = parse_ok(&a, "-a ^ 2");
    assert_int_equal(e->kind, PS_PQ_UNARY);
    assert_true(e->unary_neg);
    assert_int_equal(e->expr->kind, PS_PQ_BINARY);
    e = parse_ok(&a, "-a * 2");
    assert_int_equal(e->kind, PS_PQ_BINARY);
    assert_int_equal(e->lhs->kind, PS_PQ_UNARY);
    e = parse_ok(&a, "+a");
    assert_int_equal(e->kind, PS_PQ_UNARY);
    assert_false(e->unary_neg);
    e = parse_ok(&a, " -1");
    assert_int_equal(e->kind, PS_PQ_NUMBER); /* folded, starting at the sign */
    assert_true(e->num == -1);
    assert_int_equal(e->pos, 1);
    e = parse_ok(&a, "foo + rate(bar[5m])");
    assert_int_equal(e->rhs->pos, 6);
    assert_int_equal(e->rhs->args[0]->pos, 11);
    assert_int_equal(e->lhs->end, 3);
    assert_int_equal(e->rhs->args[0]->end, 18);
    assert_int_equal(e->rhs->end, 19);
    assert_int_equal(e->end, 19);
    e = parse_ok(&a, "sum by (a) (x{y=\"z\"}) ");
    assert_int_equal(e->end, 21);
    assert_int_equal(e->expr->pos, 12);
    assert_int_equal(e->expr->end, 20);
    e = parse_ok(&a, "sum(x) without (a)");
    assert_int_equal(e->end, 18);
    e = parse_ok(&a, "-(1)");
    assert_int_equal(e->pos, 0);
    assert_int_equal(e->end, 4);
    e = parse_ok(&a, "(a)");
    assert_int_equal(e->kind, PS_PQ_PAREN);
    assert_int_equal(e->type, PS_PQ_VVECTOR);
    ps_arena_dispose(&a);
}

static void test_aggregations(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = parse_ok(&a, "topk by (x) (5, a)");
    assert_int_equal(e->kind, PS_PQ_AGG);
    assert_int_equal(e->aggop, PS_PQ_TOPK);
    assert_int_equal(e->param->kind, PS_PQ_NUMBER);
    assert_true(e->param->num == 5);
    assert_true(e->grouped);
    assert_false(e->without);
    assert_int_equal(e->ngroup, 1);
    assert_string_equal(e->group[0], "x");
    assert_string_equal(e->expr->name, "a");

    e = parse_ok(&a, "count_values(\"v\", x) without (a, b)");
    assert_int_equal(e->aggop, PS_PQ_COUNT_VALUES);
    assert_int_equal(e->param->kind, PS_PQ_STRING);
    assert_string_equal(e->param->str, "v");
    assert_int_equal(e->param->slen, 1);
    assert_true(e->without);
    assert_int_equal(e->ngroup, 2);

    e = parse_ok(&a, "sum(x)");
    assert_false(e->grouped);
    assert_null(e->param);
    e = parse_ok(&a, "sum by () (x)");
    assert_true(e->grouped);
    assert_int_equal(e->ngroup, 0);
    e = parse_ok(&a, "quantile(0.9, x)");
    assert_int_equal(e->aggop, PS_PQ_QUANTILE);
    assert_true(e->param->num == 0.9);
    ps_arena_dispose(&a);
}

static void test_literals(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    static const struct {
        const char *in;
        double v;
    } nums[] = {{"0x1F", 31}, {"0755", 493}, {"08", 8}, {"1e3", 1000}, {".5", 0.5}, {"5.", 5}, {"-0755", -493},
                {"+5.5e-3", 0.0055}};
    for (size_t i = 0; i < N(nums); i++) {
        ps_pq_node_t *e = parse_ok(&a, nums[i].in);
        assert_int_equal(e->kind, PS_PQ_NUMBER);
        assert_int_equal(e->type, PS_PQ_VSCALAR);
        if (e->num != nums[i].v)
            fail_msg("%s: %g", nums[i].in, e->num);
    }
    assert_true(isinf(parse_ok(&a, "Inf")->num));
    assert_true(isnan(parse_ok(&a, "nan")->num));
    ps_pq_node_t *e = parse_ok(&a, "`a\\b`");
    assert_int_equal(e->kind, PS_PQ_STRING);
    assert_int_equal(e->type, PS_PQ_VSTRING);
    assert_string_equal(e->str, "a\\b");
    e = parse_ok(&a, "\"\\u00e9\\n\"");
    assert_string_equal(e->str, "\xc3\xa9\n");
    assert_int_equal(e->slen, 3);
    ps_arena_dispose(&a);
}

/* The language of Prometheus 3 (the default), of 3 with experimental functions, and of 2.42. */
static void test_function_versions(void **state)
{
    (void)state;
    static const struct {
        const char *q;
        int compat;
        bool experimental;
        const char *err; /* NULL: parses */
    } cases[] = {
        {"holt_winters(x[5m], 0.5, 0.5)", 3, false, "1:1: parse error: unknown function with name \"holt_winters\""},
        {"holt_winters(x[5m], 0.5, 0.5)", 3, true, "1:1: parse error: unknown function with name \"holt_winters\""},
        {"holt_winters(x[5m], 0.5, 0.5)", 2, false, NULL},
        {"double_exponential_smoothing(x[5m], 0.5, 0.5)", 3, false,
         "1:1: parse error: function \"double_exponential_smoothing\" is not enabled"},
        {"double_exponential_smoothing(x[5m], 0.5, 0.5)", 3, true, NULL},
        {"double_exponential_smoothing(x[5m], 0.5, 0.5)", 2, true,
         "1:1: parse error: unknown function with name \"double_exponential_smoothing\""},
        {"rate(x[5m])", 2, false, NULL},
        {"rate(x[5m])", 3, false, NULL},
    };
    for (size_t i = 0; i < N(cases); i++) {
        ps_pq_limits_t lim;
        ps_pq_limits_default(&lim);
        assert_int_equal(lim.compat, 3);
        assert_false(lim.experimental);
        lim.compat = cases[i].compat;
        lim.experimental = cases[i].experimental;
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = NULL;
        ps_err_t err;
        ps_err_clear(&err);
        int rc = ps_pq_parse(cases[i].q, strlen(cases[i].q), &lim, &a, &e, &err);
        if (cases[i].err == NULL) {
            assert_int_equal(rc, 0);
            ps_pq_dispose(e);
        } else {
            assert_int_equal(rc, PS_EINVAL);
            assert_string_equal(err.msg, cases[i].err);
        }
        ps_arena_dispose(&a);
    }
}

/* Prometheus 3's quoted (UTF-8) names: in matchers, as a metric name alone in braces, in grouping
 * lists; printed quoted when they are not legacy names (printer.go). 2.42's language has none. */
/* Parses in with Prometheus 3's language (the default limits) and checks that it prints as out
 * (String()); the tree, to dispose. */
static ps_pq_node_t *parse3_printed(ps_arena_t *a, const char *in, const char *out)
{
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_pq_parse(in, strlen(in), NULL, a, &e, &err) != 0)
        fail_msg("%s: %s", in, err.msg);
    char *got = str_of(e, false);
    if (strcmp(got, out) != 0)
        fail_msg("%s: printed %s, want %s", in, got, out);
    free(got);
    return e;
}

/* in does not parse with Prometheus 3's language: msg */
static void parse3_fails(const char *in, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_pq_parse(in, strlen(in), NULL, &a, &e, &err) != PS_EINVAL)
        fail_msg("%s: parsed", in);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s: %s, want %s", in, err.msg, msg);
    ps_arena_dispose(&a);
}

static void test_quoted_names(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"{\"service.name\"=\"x\"}", "{\"service.name\"=\"x\"}"},
        {"{\"my.metric\"}", "{__name__=\"my.metric\"}"},
        {"{\"my.metric\", \"a-b\"=~\"v.*\", job!=\"x\",}", "{\"a-b\"=~\"v.*\",__name__=\"my.metric\",job!=\"x\"}"},
        {"x{\"job\"=\"a\"}", "x{job=\"a\"}"},
        {"sum by (\"a.b\", job) (x)", "sum by (\"a.b\", job) (x)"},
        {"x / on (\"host.name\") group_left (\"k8s.pod\") y", "x / on (\"host.name\") group_left (\"k8s.pod\") y"},
        {"rate({\"http.requests\", \"ü\"=\"1\"}[5m])", "rate({\"ü\"=\"1\",__name__=\"http.requests\"}[5m])"},
    };
    for (size_t i = 0; i < N(cases); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_err_t err;
        ps_pq_node_t *e = parse3_printed(&a, cases[i].in, cases[i].out);
        ps_pq_dispose(e);
        /* 2.42 refuses them */
        assert_int_equal(ps_pq_parse(cases[i].in, strlen(cases[i].in), lim242(), &a, &e, &err), PS_EINVAL);
        ps_arena_dispose(&a);
    }
    /* a quoted metric name is a name: set twice is an error */
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    assert_int_equal(ps_pq_parse("x{\"y\"}", 6, NULL, &a, &e, &err), PS_EINVAL);
    assert_string_equal(err.msg, "1:1: parse error: metric name must not be set twice: \"x\" or \"y\"");
    assert_int_equal(ps_pq_parse("{\"\"=\"x\"}", 8, NULL, &a, &e, &err), PS_EINVAL);
    assert_int_equal(ps_pq_parse("{\"a\\x00b\"=\"x\"}", 14, NULL, &a, &e, &err), PS_EINVAL);
    assert_string_equal(err.msg, "1:2: parse error: label name must not contain a NUL byte");
    /* a metric name with a NUL prints (and parses back) whole (found by fuzz_promql) */
    assert_int_equal(ps_pq_parse("{\"\\x00*\"}", 9, NULL, &a, &e, &err), 0);
    char *got = str_of(e, false);
    assert_string_equal(got, "{__name__=\"\\x00*\"}");
    free(got);
    ps_pq_dispose(e);
    ps_arena_dispose(&a);
}

/* Prometheus 3's duration expressions: what they print as (String(), as Prometheus 3.16's
 * /api/v1/format_query answers them), what the evaluator computes of them, and the parse errors
 * (checked against Prometheus 3.16.0); Prometheus 2.42 refuses them. */
static void test_duration_expressions(void **state)
{
    (void)state;
#define NONE INT64_MIN
    static const struct {
        const char *in, *out;
        int64_t step, range, ms; /* the query's step and range, and the duration computed (NONE: none) */
    } cases[] = {
        {"foo[1h/2]", "foo[1h / 2]", 0, 0, 1800000},
        {"foo[26m+4m]", "foo[26m + 4m]", 0, 0, 1800000},
        {"foo[-5m+35m]", "foo[-5m + 35m]", 0, 0, 1800000},
        {"foo[2m*(10+5)]", "foo[2m * (10 + 5)]", 0, 0, 1800000},
        {"foo[1h30m % 1h]", "foo[1h30m % 1h]", 0, 0, 1800000},
        {"foo[1800]", "foo[30m]", 0, 0, NONE},
        {"foo[(5m)]", "foo[(5m)]", 0, 0, 300000},
        {"foo[step()]", "foo[step()]", 15000, 3600000, 15000},
        {"foo[STep()*2]", "foo[step() * 2]", 15000, 3600000, 30000},
        {"foo[range()]", "foo[range()]", 15000, 3600000, 3600000},
        {"foo[min_of(step()+1,1h)]", "foo[min_of(step() + 1, 1h)]", 5000, 10000, 6000},
        {"foo[max_of(min_of(step(), 1h), 1ms)]", "foo[max_of(min_of(step(), 1h), 1ms)]", 5000, 0, 5000},
        {"foo[1.5]", "foo[1s500ms]", 0, 0, NONE},
        {"foo[2^3]", "foo[2 ^ 3]", 0, 0, 8000},
        {"foo[-2^2+5]", "foo[-2 ^ 2 + 5]", 0, 0, 1000},
        {"foo offset 50", "foo offset 50s", 0, 0, NONE},
        {"foo offset -1m", "foo offset -1m", 0, 0, NONE},
        {"foo offset (100 + 2)", "foo offset (100 + 2)", 0, 0, 102000},
        {"foo offset step()", "foo offset step()", 5000, 10000, 5000},
        {"foo offset -step()", "foo offset -step()", 5000, 10000, -5000},
        {"foo offset -(min_of(step(), 2s)-5)", "foo offset -(min_of(step(), 2s) - 5)", 5000, 10000, 3000},
        {"sum_over_time(foo[29s+1s:5s+5s] offset (1m/2))", "sum_over_time(foo[29s + 1s:5s + 5s] offset (1m / 2))", 0,
         0, 30000},
        {"predict_linear(foo[5m], 1h)", "predict_linear(foo[5m], 1h)", 0, 0, NONE},
        {"foo @ 100s", "foo @ 100.000", 0, 0, NONE},
        {"-1h + 30m", "-1h + 30m", 0, 0, NONE},
    };
    for (size_t i = 0; i < N(cases); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_err_t err;
        ps_pq_node_t *e = parse3_printed(&a, cases[i].in, cases[i].out);
        /* the duration expression: under the call's argument, the matrix or the selector */
        const ps_pq_node_t *n = e->kind == PS_PQ_CALL ? e->args[0] : e;
        const ps_pq_node_t *d = n->range_expr ? n->range_expr : n->offset_expr ? n->offset_expr
                              : n->expr && n->expr->offset_expr ? n->expr->offset_expr : NULL;
        if (cases[i].ms == NONE) {
            if (d != NULL)
                fail_msg("%s: a duration expression", cases[i].in);
        } else {
            if (d == NULL)
                fail_msg("%s: no duration expression", cases[i].in);
            int64_t ms = 0;
            if (ps_pq_duration_ms(d, cases[i].step, cases[i].range, true, &ms, &err) != 0)
                fail_msg("%s: %s", cases[i].in, err.msg);
            if (ms != cases[i].ms)
                fail_msg("%s: %lld ms, want %lld", cases[i].in, (long long)ms, (long long)cases[i].ms);
        }
        ps_pq_dispose(e);
        /* 2.42 refuses them all but a duration literal in brackets or after offset */
        if (strcmp(cases[i].in, "foo offset -1m") != 0)
            assert_int_equal(ps_pq_parse(cases[i].in, strlen(cases[i].in), lim242(), &a, &e, &err), PS_EINVAL);
        ps_arena_dispose(&a);
    }
    static const struct {
        const char *in, *msg;
    } errors[] = {
        {"foo[0]", "1:5: parse error: duration must be greater than 0"},
        {"foo[-1m]", "1:5: parse error: duration must be greater than 0"},
        {"foo[1h/0]", "1:7: parse error: division by zero"},
        {"foo[1h%0]", "1:7: parse error: modulo by zero"},
        {"foo[5m x]", "1:8: parse error: unexpected character: 'x', expected ':'"},
        {"foo[x]", "1:5: parse error: unexpected character in duration expression: 'x'"},
        {"foo[stepx()]", "1:5: parse error: unexpected character in duration expression: 's'"},
        {"foo offset bar", "1:12: parse error: unexpected identifier \"bar\" in offset, expected number, duration, step(), "
                           "or range()"},
        {"foo[10000000000]", "1:5: parse error: duration out of range"},
        {"foo offset inf", "1:12: parse error: duration out of range"},
        {"foo offset -Inf", "1:12: parse error: duration out of range"},
        {"foo offset NaN", "1:12: parse error: duration out of range"},
        {"foo[inf]", "1:5: parse error: unexpected character in duration expression: 'i'"},
        {"foo[1m:NaN]", "1:8: parse error: unexpected character: 'N', expected ':'"},
    };
    for (size_t i = 0; i < N(errors); i++)
        parse3_fails(errors[i].in, errors[i].msg);
    /* computed ranges that are not durations: Prometheus' words and byte range */
    static const struct {
        const char *in, *msg;
        int64_t step;
    } evals[] = {
        {"foo[step()]", "4:10: duration must be greater than 0", 0},
        {"foo[1h - range()]", "4:16: duration must be greater than 0", 3600000},
        {"foo[1h / (step() - 1)]", "4:20: division by zero", 1000},
        {"foo[(step() - 1) % (step() - 1)]", "5:30: modulo by zero", 1000},
        {"foo[10 ^ 400]", "4:12: duration is NaN or infinite", 0},
        {"foo[10 ^ 10]", "4:11: duration is out of range", 0},
    };
    for (size_t i = 0; i < N(evals); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = NULL;
        ps_err_t err;
        ps_err_clear(&err);
        if (ps_pq_parse(evals[i].in, strlen(evals[i].in), NULL, &a, &e, &err) != 0)
            fail_msg("%s: %s", evals[i].in, err.msg);
        int64_t ms;
        assert_int_equal(ps_pq_duration_ms(e->range_expr, evals[i].step, 3600000, false, &ms, &err), PS_EINVAL);
        if (strcmp(err.msg, evals[i].msg) != 0)
            fail_msg("%s: %s, want %s", evals[i].in, err.msg, evals[i].msg);
        ps_pq_dispose(e);
        ps_arena_dispose(&a);
    }
}

/* Prometheus 3.16's anchored and smoothed modifiers: each input's canonical form and each error as
 * Prometheus 3.16's promtool (`promtool promql format --experimental`) prints them. */
static void test_extended_modifiers(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
        bool anchored, smoothed; /* on the selector (a range's vector selector) */
    } cases[] = {
        {"a anchored", "a anchored", true, false},
        {"a[5m] anchored", "a[5m] anchored", true, false},
        {"a{b=\"c\"}[5m] anchored @ start() offset 1m", "a{b=\"c\"}[5m] anchored @ start() offset 1m", true, false},
        {"a @ 100 smoothed offset 1m", "a @ 100.000 smoothed offset 1m", false, true},
        {"a offset 1m smoothed", "a smoothed offset 1m", false, true},
        {"a smoothed @ 100", "a @ 100.000 smoothed", false, true},
        {"a smoothed[5m]", "a[5m] smoothed", false, true},
        {"a smoothed[5m] offset 1m", "a[5m] smoothed offset 1m", false, true},
        {"a ANCHORED", "a anchored", true, false},
        {"a[5m] anchored anchored", "a[5m] anchored", true, false},
        {"a[5m] offset 1m anchored", "a[5m] anchored offset 1m", true, false},
        {"x anchored @ end()", "x @ end() anchored", true, false},
        {"a[5m] @ 100 smoothed", "a[5m] smoothed @ 100.000", false, true},
        {"a[5m] smoothed offset -1m", "a[5m] smoothed offset -1m", false, true},
        {"a[1h/2] smoothed", "a[1h / 2] smoothed", false, true},
        {"foo[5m] anchored offset step()", "foo[5m] anchored offset step()", true, false},
        {"anchored anchored", "anchored anchored", true, false},
        {"rate(a[5m] anchored)", "rate(a[5m] anchored)", true, false},
        {"sum(a smoothed)", "sum(a smoothed)", false, true},
        {"-a anchored", "-a anchored", true, false},
        {"a + b anchored", "a + b anchored", true, false},
        {"a ^ b smoothed", "a ^ b smoothed", false, true},
        {"a and b anchored", "a and b anchored", true, false},
        {"a * on(b) group_left anchored", "a * on (b) group_left () anchored", false, false}, /* a name there */
        {"sum by (anchored) (anchored{anchored=\"x\"})", "sum by (anchored) (anchored{anchored=\"x\"})", false, false},
    };
    for (size_t i = 0; i < N(cases); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = NULL;
        ps_err_t err;
        ps_err_clear(&err);
        if (ps_pq_parse(cases[i].in, strlen(cases[i].in), NULL, &a, &e, &err) != 0)
            fail_msg("%s: %s", cases[i].in, err.msg);
        char *got = str_of(e, false);
        if (strcmp(got, cases[i].out) != 0)
            fail_msg("%s: printed %s, want %s", cases[i].in, got, cases[i].out);
        free(got);
        /* the selector that carries it: the rightmost operand, under a call, aggregation or sign */
        const ps_pq_node_t *n = e;
        while (n->kind != PS_PQ_VECTOR) {
            if (n->kind == PS_PQ_BINARY)
                n = n->rhs;
            else if (n->kind == PS_PQ_CALL)
                n = n->args[0];
            else
                n = n->expr;
        }
        if (n->anchored != cases[i].anchored || n->smoothed != cases[i].smoothed)
            fail_msg("%s: anchored %d smoothed %d", cases[i].in, n->anchored, n->smoothed);
        ps_pq_dispose(e);
        /* 2.42 has no such modifiers: the words are names there, and nothing may follow an operand */
        if (cases[i].anchored || cases[i].smoothed)
            assert_int_equal(ps_pq_parse(cases[i].in, strlen(cases[i].in), lim242(), &a, &e, &err), PS_EINVAL);
        ps_arena_dispose(&a);
    }
    static const struct {
        const char *in, *msg;
    } errors[] = {
        {"a anchored smoothed", "1:1: parse error: anchored and smoothed modifiers cannot be used together"},
        {"a[5m] smoothed anchored", "1:1: parse error: anchored and smoothed modifiers cannot be used together"},
        {"a anchored @ 10 smoothed", "1:1: parse error: anchored and smoothed modifiers cannot be used together"},
        {"sum(a) anchored", "1:1: parse error: anchored modifier not implemented"},
        {"(a) smoothed", "1:1: parse error: smoothed modifier not implemented"},
        {"rate(a[5m]) anchored", "1:1: parse error: anchored modifier not implemented"},
        {"\"x\" anchored", "1:1: parse error: anchored modifier not implemented"},
        {"1 anchored", "1:1: parse error: anchored modifier not implemented"},
        {"-1 anchored", "1:2: parse error: anchored modifier not implemented"},
        {"- sum(a) anchored", "1:3: parse error: anchored modifier not implemented"},
        {"a[5m:1m] anchored", "1:1: parse error: anchored modifier is not supported for subqueries"},
        {"a[5m:] smoothed", "1:1: parse error: smoothed modifier is not supported for subqueries"},
        {"1[5m] anchored", "1:2: parse error: ranges only allowed for vector selectors"},
        {"a[5m] anchored [1m]", "1:16: parse error: ranges only allowed for vector selectors"},
        {"a smoothed @ 100[5m]", "1:17: parse error: no @ modifiers allowed before range"},
        {"a anchored offset 1m[5m]", "1:21: parse error: no offset modifiers allowed before range"},
        {"a offset 5m anchored offset 1m", "1:1: parse error: offset may not be set multiple times"},
        {"a anchored x", "1:12: parse error: unexpected identifier \"x\""},
        {"-a[5m] anchored", "1:1: parse error: unary expression only allowed on expressions of type scalar or instant "
                            "vector, got \"range vector\""},
    };
    for (size_t i = 0; i < N(errors); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e = NULL;
        ps_err_t err;
        ps_err_clear(&err);
        if (ps_pq_parse(errors[i].in, strlen(errors[i].in), NULL, &a, &e, &err) != PS_EINVAL)
            fail_msg("%s: parsed", errors[i].in);
        if (strcmp(err.msg, errors[i].msg) != 0)
            fail_msg("%s: %s, want %s", errors[i].in, err.msg, errors[i].msg);
        ps_arena_dispose(&a);
    }
}

static void test_functions(void **state)
{
    (void)state;
    static const char *const names[] = {
        "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
        "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "days_in_month",
        "day_of_month", "day_of_week", "day_of_year", "deg", "delta", "deriv", "exp", "floor", "histogram_count",
        "histogram_sum", "histogram_fraction", "histogram_quantile", "holt_winters", "hour", "idelta", "increase",
        "irate", "label_replace", "label_join", "last_over_time", "ln", "log10", "log2", "max_over_time",
        "min_over_time", "minute", "month", "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad",
        "rate", "resets", "round", "scalar", "sgn", "sin", "sinh", "sort", "sort_desc", "sqrt", "stddev_over_time",
        "stdvar_over_time", "sum_over_time", "tan", "tanh", "time", "timestamp", "vector", "year",
        "first_over_time", "histogram_avg", "histogram_stddev", "histogram_stdvar", "mad_over_time",
        "ts_of_first_over_time", "ts_of_last_over_time", "ts_of_max_over_time", "ts_of_min_over_time",
        "sort_by_label", "sort_by_label_desc", "start", "end", "range", "step",
    };
    bool seen[PS_FN_COUNT_] = {0};
    assert_int_equal(N(names), PS_FN_COUNT_);
    for (size_t i = 0; i < N(names); i++) {
        const ps_pq_func_t *f = ps_pq_func_lookup(names[i], strlen(names[i]));
        assert_non_null(f);
        assert_string_equal(f->name, names[i]);
        assert_false(seen[f->id]);
        seen[f->id] = true;
    }
    const ps_pq_func_t *f = ps_pq_func_lookup("label_replace", 13);
    assert_int_equal(f->nargs, 5);
    assert_int_equal(f->args[4], PS_PQ_VSTRING);
    f = ps_pq_func_lookup("label_join", 10);
    assert_int_equal(f->variadic, -1);
    assert_int_equal(f->nargs, 4);
    f = ps_pq_func_lookup("round", 5);
    assert_int_equal(f->variadic, 1);
    f = ps_pq_func_lookup("scalar", 6);
    assert_int_equal(f->ret, PS_PQ_VSCALAR);
    f = ps_pq_func_lookup("rate", 4);
    assert_int_equal(f->id, PS_FN_RATE);
    assert_int_equal(f->args[0], PS_PQ_VMATRIX);
    assert_null(ps_pq_func_lookup("limitk", 6));
    assert_null(ps_pq_func_lookup("rat", 3));
    /* 3 renamed holt_winters double_exponential_smoothing, an experimental function */
    f = ps_pq_func_lookup("double_exponential_smoothing", 28);
    assert_int_equal(f->id, PS_FN_HOLT_WINTERS);
    assert_int_equal(f->avail, PS_PQ_IN_3 | PS_PQ_EXPERIMENTAL);
    assert_int_equal(ps_pq_func_lookup("holt_winters", 12)->avail, PS_PQ_IN_2);
    assert_int_equal(ps_pq_func_lookup("rate", 4)->avail, PS_PQ_IN_2 | PS_PQ_IN_3);
    assert_string_equal(ps_pq_binop_name(PS_PQ_ATAN2), "atan2");
    assert_string_equal(ps_pq_aggop_name(PS_PQ_COUNT_VALUES), "count_values");
    assert_string_equal(ps_pq_vtype_name(PS_PQ_VMATRIX), "range vector");
}

static void expect_too_big(const char *s, size_t n, const ps_pq_limits_t *lim, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = (ps_pq_node_t *)(uintptr_t)1;
    ps_err_t err;
    int rc = ps_pq_parse(s, n, lim, &a, &e, &err);
    if (rc != PS_ETOOBIG)
        fail_msg("got %d (%s), want PS_ETOOBIG", rc, rc ? err.msg : "ok");
    assert_null(e);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("got  %s\nwant %s", err.msg, msg);
    ps_arena_dispose(&a);
}

static void test_limits(void **state)
{
    (void)state;
    ps_pq_limits_t lim;
    size_t n = 60000;
    char *s = malloc(n * 2 + 2);

    ps_pq_limits_default(&lim);
    assert_int_equal(lim.max_input, 65536);
    assert_int_equal(lim.max_depth, 128);
    assert_int_equal(lim.max_nodes, 10000);

    /* deep nesting: an error, and no stack overflow */
    memset(s, '(', n);
    s[n] = 'a';
    memset(s + n + 1, ')', n);
    expect_too_big(s, n * 2 + 1, &(ps_pq_limits_t){1u << 20, 128, 10000},
                   "1:129: expression is too deeply nested (the limit is 128 levels)");
    for (size_t i = 0; i < n; i++)
        s[i] = i % 2 ? ' ' : '-';
    s[n] = '1';
    expect_too_big(s, n + 1, &(ps_pq_limits_t){1u << 20, 128, 10000},
                   "1:257: expression is too deeply nested (the limit is 128 levels)");
    /* a long chain is a deep tree too */
    size_t k = 0;
    for (int i = 0; i < 200; i++)
        k += (size_t)sprintf(s + k, "%sa", i ? "+" : "");
    expect_too_big(s, k, NULL, "1:1: expression is too deeply nested (the limit is 128 levels)");
    /* nodes */
    expect_too_big("abs(a) + abs(b) + abs(c)", 24, &(ps_pq_limits_t){1024, 128, 5},
                   "1:17: expression has too many nodes (the limit is 5)");
    /* input */
    memset(s, 'a', 65537);
    expect_too_big(s, 65537, NULL, "query is too long: 65537 bytes (the limit is 65536)");
    free(s);

    /* inside the limits */
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e;
    ps_err_t err;
    const char *deep = "((((((((((((((((((((((((((((((((((((((((a))))))))))))))))))))))))))))))))))))))))";
    assert_int_equal(ps_pq_parse(deep, strlen(deep), NULL, &a, &e, &err), 0);
    ps_arena_dispose(&a);
}

/* A failed parse frees the regexes it compiled (the ASan build checks). */
static void test_cleanup(void **state)
{
    (void)state;
    static const char *const bad[] = {
        "x{a=~\"b.*\"} + rate(y{c=~\"d\"})",
        "sum(x{a=~\"b\"}) by (c) offset 5m",
        "x{a=~\"b\"} and on(c) group_left y{d=~\"e\"}",
        "f(x{a=~\"b\"})",
        "x{a=~\"b\"}[5m] + y{c=~\"(\"}",
    };
    for (size_t i = 0; i < N(bad); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e;
        ps_err_t err;
        assert_int_equal(ps_pq_parse(bad[i], strlen(bad[i]), NULL, &a, &e, &err), PS_EINVAL);
        ps_arena_dispose(&a);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_prometheus_formats),
        cmocka_unit_test(test_duration_expressions),
        cmocka_unit_test(test_extended_modifiers),
        cmocka_unit_test(test_prometheus_errors),
        cmocka_unit_test(test_selectors),
        cmocka_unit_test(test_subqueries),
        cmocka_unit_test(test_binary),
        cmocka_unit_test(test_aggregations),
        cmocka_unit_test(test_literals),
        cmocka_unit_test(test_functions),
        cmocka_unit_test(test_function_versions),
        cmocka_unit_test(test_quoted_names),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_cleanup),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
