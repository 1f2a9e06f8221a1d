/*
 * test_selector.c - the selector language: selectors with profile type ids, quote styles and
 * escapes, anchored PCRE2 regexes, empty-value semantics, sum / sum by, number arithmetic with
 * PromQL precedence, exact error messages (Prometheus' forms and our "not supported"), limits,
 * and a regex that would backtrack for ever.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "parser/selector.h"

#define NS "profstore answers selectors, sum/sum by and number arithmetic"

static ps_expr_t *expr_ok(ps_arena_t *a, const char *s)
{
    ps_expr_t *e = NULL;
    ps_err_t err;
    if (ps_expr_parse(s, strlen(s), a, &e, &err) != 0)
        fail_msg("%s: %s", s, err.msg);
    assert_non_null(e);
    return e;
}

static void expr_err(const char *s, int code, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = (ps_expr_t *)(uintptr_t)1;
    ps_err_t err;
    int rc = ps_expr_parse(s, strlen(s), &a, &e, &err);
    if (rc != code)
        fail_msg("%s: got %d want %d (%s)", s, rc, code, rc ? err.msg : "ok");
    assert_null(e);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s:\n got  \"%s\"\n want \"%s\"", s, err.msg, msg);
    ps_arena_dispose(&a);
}

static double eval(const char *s)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, s);
    if (!ps_expr_is_scalar(e))
        fail_msg("%s: not scalar", s);
    double v = ps_expr_eval_scalar(e);
    ps_expr_dispose(e);
    ps_arena_dispose(&a);
    return v;
}

static bool match(ps_matcher_t *m, const char *v) { return ps_matcher_match(m, v, strlen(v)); }

static void test_profile_type_selector(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    const char *q = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job=\"api\",instance=~\"10\\\\..*\"}";
    ps_expr_t *e = expr_ok(&a, q);
    assert_int_equal(e->kind, PS_EXPR_SELECTOR);
    assert_false(ps_expr_is_scalar(e));
    assert_int_equal(e->pos, 0);
    ps_selector_t *s = &e->sel;
    assert_int_equal(s->n, 3);
    assert_int_equal(s->m[0].op, PS_MATCH_EQ);
    assert_string_equal(s->m[0].name, "__name__");
    assert_int_equal(s->m[0].nlen, 8);
    assert_string_equal(s->m[0].value, "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
    assert_false(s->m[0].matches_empty);
    assert_int_equal(s->m[1].op, PS_MATCH_EQ);
    assert_string_equal(s->m[1].name, "job");
    assert_string_equal(s->m[1].value, "api");
    assert_int_equal(s->m[1].vlen, 3);
    assert_int_equal(s->m[2].op, PS_MATCH_RE);
    assert_string_equal(s->m[2].name, "instance");
    assert_string_equal(s->m[2].value, "10\\..*");
    assert_non_null(s->m[2].re);
    assert_non_null(s->m[2].md);
    assert_false(s->m[2].matches_empty);
    assert_true(match(&s->m[2], "10.0.0.1:6060"));
    assert_true(match(&s->m[2], "10."));
    assert_false(match(&s->m[2], "100.0.0.1"));
    assert_false(match(&s->m[2], "110.0.0.1"));
    assert_true(match(&s->m[0], "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"));
    assert_false(match(&s->m[0], "process_cpu"));
    ps_expr_dispose(e);

    /* the same through ps_selector_parse */
    ps_selector_t sel;
    ps_err_t err;
    assert_int_equal(ps_selector_parse(q, strlen(q), &a, &sel, &err), 0);
    assert_int_equal(sel.n, 3);
    assert_string_equal(sel.m[2].name, "instance");
    ps_selector_dispose(&sel);

    /* no name: {__name__=~...} is just a matcher, in source order */
    const char *q2 = "{__name__=~\"memory:.*\",job!=\"batch\"}";
    assert_int_equal(ps_selector_parse(q2, strlen(q2), &a, &sel, &err), 0);
    assert_int_equal(sel.n, 2);
    assert_int_equal(sel.m[0].op, PS_MATCH_RE);
    assert_string_equal(sel.m[0].name, "__name__");
    assert_false(sel.m[0].matches_empty);
    assert_true(match(&sel.m[0], "memory:alloc_space:bytes:space:bytes"));
    assert_false(match(&sel.m[0], "process_cpu:cpu"));
    assert_int_equal(sel.m[1].op, PS_MATCH_NEQ);
    assert_string_equal(sel.m[1].value, "batch");
    assert_true(sel.m[1].matches_empty);
    assert_true(match(&sel.m[1], "api"));
    assert_false(match(&sel.m[1], "batch"));
    ps_selector_dispose(&sel);

    /* ps_selector_parse takes selectors only */
    assert_int_equal(ps_selector_parse("sum(x)", 6, &a, &sel, &err), PS_EINVAL);
    assert_string_equal(err.msg, "1:1: parse error: expected a series selector, got an aggregation");
    assert_int_equal(sel.n, 0);
    assert_int_equal(ps_selector_parse("1+1", 3, &a, &sel, &err), PS_EINVAL);
    assert_int_equal(ps_selector_parse("x{a=~\"(\"}", 9, &a, &sel, &err), PS_EINVAL);
    ps_selector_dispose(&sel); /* safe after a failure */

    /* same name twice: both kept (ANDed); trailing comma; x{} is the name alone; keywords as names */
    e = expr_ok(&a, "x{a=~\"a.*\", a!=\"ab\", }");
    assert_int_equal(e->sel.n, 3);
    assert_string_equal(e->sel.m[1].name, "a");
    assert_string_equal(e->sel.m[2].name, "a");
    ps_expr_dispose(e);
    e = expr_ok(&a, "x{}");
    assert_int_equal(e->sel.n, 1);
    ps_expr_dispose(e);
    e = expr_ok(&a, "  up  ");
    assert_int_equal(e->sel.n, 1);
    assert_string_equal(e->sel.m[0].value, "up");
    assert_int_equal(e->pos, 2);
    ps_expr_dispose(e);
    static const char *const words[] = {"sum", "by", "without", "offset", "and", "or", "unless", "avg", "count",
                                        "topk", ":", "a:b", "inf_x", "nano", "Sum"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        e = expr_ok(&a, words[i]);
        assert_int_equal(e->kind, PS_EXPR_SELECTOR);
        assert_string_equal(e->sel.m[0].value, words[i]);
        ps_expr_dispose(e);
    }
    e = expr_ok(&a, "sum{job=\"a\"}");
    assert_int_equal(e->kind, PS_EXPR_SELECTOR);
    assert_int_equal(e->sel.n, 2);
    ps_expr_dispose(e);

    /* label names inside braces are not keywords */
    e = expr_ok(&a, "x{sum=\"1\", by=\"2\", offset=\"3\", bool=\"4\", Inf=\"5\"}");
    assert_int_equal(e->sel.n, 6);
    assert_string_equal(e->sel.m[4].name, "bool");
    assert_string_equal(e->sel.m[5].name, "Inf");
    ps_expr_dispose(e);

    /* quoted names (Prometheus 3): a bare string is the metric name */
    e = expr_ok(&a, "{\"my.metric\", \"service.name\"=\"api\"}");
    assert_int_equal(e->sel.n, 2);
    assert_string_equal(e->sel.m[0].name, "__name__");
    assert_string_equal(e->sel.m[0].value, "my.metric");
    assert_string_equal(e->sel.m[1].name, "service.name");
    assert_string_equal(e->sel.m[1].value, "api");
    ps_expr_dispose(e);

    /* whitespace and comments */
    e = expr_ok(&a, "# profile\nx{ # job\n\tjob = \"a\" ,\r\n} # end");
    assert_int_equal(e->sel.n, 2);
    assert_string_equal(e->sel.m[1].value, "a");
    ps_expr_dispose(e);
    ps_arena_dispose(&a);
}

static void test_strings(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, "x{a=\"d\\\"q\\n\\t\\\\\", b='s\\'q\"', c=`raw\\n\"'\nline`, "
                               "d=\"\\x41\\101\\u00e9\\U0001F600\\a\\b\\f\\r\\v\", e=\"\", f='', g=``, h=\"é\"}");
    ps_selector_t *s = &e->sel;
    assert_int_equal(s->n, 9);
    assert_string_equal(s->m[1].value, "d\"q\n\t\\");
    assert_string_equal(s->m[2].value, "s'q\"");
    assert_string_equal(s->m[3].value, "raw\\n\"'\nline");
    assert_string_equal(s->m[4].value, "AA\xc3\xa9\xf0\x9f\x98\x80\a\b\f\r\v");
    for (int i = 5; i <= 7; i++) {
        assert_int_equal(s->m[i].vlen, 0);
        assert_string_equal(s->m[i].value, "");
        assert_true(s->m[i].matches_empty);
    }
    assert_string_equal(s->m[8].value, "é");
    ps_expr_dispose(e);

    /* a NUL byte (escaped, or raw in a backtick string) is part of the value */
    e = expr_ok(&a, "x{a=\"a\\x00b\"}");
    assert_int_equal(e->sel.m[1].vlen, 3);
    assert_true(ps_matcher_match(&e->sel.m[1], "a\0b", 3));
    assert_false(ps_matcher_match(&e->sel.m[1], "a", 1));
    ps_expr_dispose(e);
    ps_arena_dispose(&a);

    expr_err("{job=\"api}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    expr_err("{job='api}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    expr_err("{job=`api}", PS_EINVAL, "1:6: parse error: unterminated raw string");
    expr_err("{job=\"a\nb\"}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    expr_err("{job=\"a\\qb\"}", PS_EINVAL, "1:8: parse error: unknown escape sequence \\q");
    expr_err("{job='a\\\"b'}", PS_EINVAL, "1:8: parse error: unknown escape sequence \\\"");
    expr_err("{job=\"\\xZZ\"}", PS_EINVAL, "1:7: parse error: invalid hex digit in escape sequence");
    expr_err("{job=\"\\ud800\"}", PS_EINVAL, "1:7: parse error: escape sequence is an invalid Unicode code point");
    expr_err("{job=\"\xff\"}", PS_EINVAL, "1:6: parse error: invalid UTF-8 rune");
    expr_err("\"str\"", PS_EINVAL, "1:1: string literals are not supported: " NS);
}

static void test_regex(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, "x{job=~\"ap\", b=~\"a.c\", c=~\"a$\", d=~\"(?i)API\", e=~\"a|ab\", f=~`\\d+`, "
                               "g=~\"é.\", h!~\"ap.*\"}");
    ps_matcher_t *m = e->sel.m;
    /* fully anchored */
    assert_true(match(&m[1], "ap"));
    assert_false(match(&m[1], "api"));
    assert_false(match(&m[1], "xap"));
    /* . matches a newline */
    assert_true(match(&m[2], "a\nc"));
    assert_true(match(&m[2], "abc"));
    /* $ is the very end, not before a final newline */
    assert_true(match(&m[3], "a"));
    assert_false(match(&m[3], "a\n"));
    assert_true(match(&m[4], "api"));
    /* alternation is inside the anchors */
    assert_true(match(&m[5], "ab"));
    assert_true(match(&m[5], "a"));
    assert_false(match(&m[5], "abc"));
    assert_true(match(&m[6], "0123"));
    assert_false(match(&m[6], "12a"));
    /* UTF-8: . is one character */
    assert_true(match(&m[7], "éé"));
    assert_false(match(&m[7], "é\xc3"));
    /* !~ */
    assert_int_equal(m[8].op, PS_MATCH_NRE);
    assert_false(match(&m[8], "api"));
    assert_true(match(&m[8], "web"));
    assert_true(m[8].matches_empty);
    ps_expr_dispose(e);
    ps_arena_dispose(&a);

    expr_err("{job=~\"(\"}", PS_EINVAL,
             "1:2: parse error: error parsing regexp \"(\": missing closing parenthesis at offset 1");
    /* the regex cannot break out of the anchoring group */
    expr_err("x{job=~\"a)|(b\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp \"a)|(b\": unmatched closing parenthesis at offset 1");
    expr_err("x{job=~\"(a)\\\\1\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp \"(a)\\\\1\": reference to non-existent subpattern at offset 4");
    expr_err("x{job=~\"\\\\C\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp \"\\\\C\": using \\C is disabled by the application at offset 2");
}

static void test_matches_empty(void **state)
{
    static const struct {
        const char *q;
        bool empty;
    } cases[] = {
        {"x{a=\"\"}", true},   {"x{a=\"v\"}", false},  {"x{a!=\"v\"}", true},   {"x{a!=\"\"}", false},
        {"x{a=~\".*\"}", true}, {"x{a=~\".+\"}", false}, {"x{a=~\"v|\"}", true}, {"x{a=~\"v\"}", false},
        {"x{a!~\".+\"}", true}, {"x{a!~\".*\"}", false}, {"x{a!~\"v\"}", true}, {"x{a=~\"(?:)\"}", true},
    };
    ps_arena_t a = PS_ARENA_INIT;
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_expr_t *e = expr_ok(&a, cases[i].q);
        ps_matcher_t *m = &e->sel.m[1];
        if (m->matches_empty != cases[i].empty)
            fail_msg("%s: matches_empty %d", cases[i].q, m->matches_empty);
        assert_int_equal(ps_matcher_match(m, "", 0), cases[i].empty);
        assert_int_equal(ps_matcher_match(m, NULL, 0), cases[i].empty);
        ps_expr_dispose(e);
    }
    /* a selector of matchers that all match "" is refused, as Prometheus does */
    const char *ok[] = {"{a=\"v\"}", "{a=\"\", b=\"v\"}", "{a=~\".+\"}", "{a!=\"\"}", "{a!~\".*\"}"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
        ps_expr_dispose(expr_ok(&a, ok[i]));
    ps_arena_dispose(&a);
    const char *bad[] = {"{}", "{job=~\".*\"}", "{a=\"\"}", "{a!=\"v\"}", "{a!~\"v\"}", "{a=\"\",b=~\"x|\"}", "{ }"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        expr_err(bad[i], PS_EINVAL, "1:1: parse error: vector selector must contain at least one non-empty matcher");
    expr_err("sum({})", PS_EINVAL, "1:5: parse error: vector selector must contain at least one non-empty matcher");
}

static void test_sum(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, "sum(x)");
    assert_int_equal(e->kind, PS_EXPR_SUM);
    assert_false(e->grouped);
    assert_int_equal(e->ngroup, 0);
    assert_int_equal(e->lhs->kind, PS_EXPR_SELECTOR);
    assert_string_equal(e->lhs->sel.m[0].value, "x");
    assert_false(ps_expr_is_scalar(e));
    ps_expr_dispose(e);

    e = expr_ok(&a, "sum by (job, instance) (x{a=~\"b.*\"})");
    assert_int_equal(e->kind, PS_EXPR_SUM);
    assert_true(e->grouped);
    assert_false(e->without);
    assert_int_equal(e->ngroup, 2);
    assert_string_equal(e->group[0], "job");
    assert_string_equal(e->group[1], "instance");
    assert_int_equal(e->lhs->sel.n, 2);
    ps_expr_dispose(e);

    e = expr_ok(&a, "sum(x) by (job)");
    assert_true(e->grouped);
    assert_false(e->without);
    assert_int_equal(e->ngroup, 1);
    assert_string_equal(e->group[0], "job");
    ps_expr_dispose(e);

    e = expr_ok(&a, "sum without (a)(x)");
    assert_true(e->grouped);
    assert_true(e->without);
    assert_int_equal(e->ngroup, 1);
    assert_string_equal(e->group[0], "a");
    ps_expr_dispose(e);

    e = expr_ok(&a, "SUM BY () (x)");
    assert_true(e->grouped);
    assert_int_equal(e->ngroup, 0);
    ps_expr_dispose(e);

    e = expr_ok(&a, "sum by (sum, by, on, bool, \"service.name\",) (sum(x))");
    assert_int_equal(e->ngroup, 5);
    assert_string_equal(e->group[0], "sum");
    assert_string_equal(e->group[3], "bool");
    assert_string_equal(e->group[4], "service.name");
    assert_int_equal(e->lhs->kind, PS_EXPR_SUM);
    ps_expr_dispose(e);

    e = expr_ok(&a, "(sum((x)))");
    assert_int_equal(e->kind, PS_EXPR_SUM);
    assert_int_equal(e->lhs->kind, PS_EXPR_SELECTOR);
    ps_expr_dispose(e);

    e = expr_ok(&a, "sum(process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{service_name=\"api\"}) by (pod)");
    assert_int_equal(e->lhs->sel.n, 2);
    ps_expr_dispose(e);
    ps_arena_dispose(&a);

    expr_err("sum(1)", PS_EINVAL, "1:5: parse error: expected type instant vector in aggregation expression, got scalar");
    expr_err("sum()", PS_EINVAL, "1:1: parse error: no arguments for aggregate expression provided");
    expr_err("sum(x, y)", PS_EINVAL,
             "1:1: parse error: wrong number of arguments for aggregate expression provided, expected 1, got 2");
    expr_err("sum(x,)", PS_EINVAL, "1:6: parse error: trailing commas not allowed in function call args");
    expr_err("sum by job (x)", PS_EINVAL,
             "1:8: parse error: unexpected identifier \"job\" in grouping opts, expected \"(\"");
    expr_err("sum by (a b) (x)", PS_EINVAL,
             "1:11: parse error: unexpected identifier \"b\" in grouping opts, expected \",\" or \")\"");
    expr_err("sum by (a:b) (x)", PS_EINVAL,
             "1:9: parse error: unexpected metric identifier \"a:b\" in grouping opts, expected label");
    expr_err("sum by (,) (x)", PS_EINVAL, "1:9: parse error: unexpected \",\" in grouping opts, expected label");
    expr_err("sum by (a) x", PS_EINVAL,
             "1:12: parse error: unexpected identifier \"x\" in aggregation, expected \"(\"");
    expr_err("sum by (a) (x) by (b)", PS_EINVAL, "1:16: parse error: unexpected <by>");
    expr_err("sum(x", PS_EINVAL, "1:6: parse error: unclosed left parenthesis");
    expr_err("sum by (a", PS_EINVAL, "1:10: parse error: unclosed left parenthesis");
}

static void test_scalars(void **state)
{
    assert_true(eval("1+1") == 2);
    assert_true(eval("2^3^2") == 512);
    assert_true(eval("(2^3)^2") == 64);
    assert_true(eval("-1 - -2") == 1);
    assert_true(eval("(1+2)*3") == 9);
    assert_true(eval("1+2*3") == 7);
    assert_true(eval("10-4-3") == 3);
    assert_true(eval("2*3%4") == 2);
    assert_true(eval("12/2/3") == 2);
    assert_true(eval("-2^2") == -4);
    assert_true(eval("2^-1") == 0.5);
    assert_true(eval("-1*2") == -2);
    assert_true(eval("+1 + -2 * 1") == -1);
    assert_true(eval("1 + 2/(3*1)") == 1 + 2.0 / 3.0);
    assert_true(eval("5 % 3") == 2);
    assert_true(eval("-5 % 3") == -2);
    assert_true(eval("5.5 % 2") == 1.5);
    assert_true(eval("- - 3") == 3);
    double v = eval("1/0");
    assert_true(isinf(v) && v > 0);
    v = eval("-1/0");
    assert_true(isinf(v) && v < 0);
    assert_true(isnan(eval("0/0")));
    assert_true(isnan(eval("NaN")));
    assert_true(isnan(eval("nan + 1")));
    assert_true(isnan(eval("5 % 0")));
    v = eval("Inf");
    assert_true(isinf(v) && v > 0);
    v = eval("-iNF");
    assert_true(isinf(v) && v < 0);
    /* numbers as PromQL lexes them */
    assert_true(eval("0x1f") == 31);
    assert_true(eval("0X1F") == 31);
    assert_true(eval("1e3") == 1000);
    assert_true(eval("1E-3") == 0.001);
    assert_true(eval(".5") == 0.5);
    assert_true(eval("5.") == 5);
    assert_true(eval("123.4567") == 123.4567);
    assert_true(eval("+5.5e-3") == 0.0055);
    assert_true(eval("0755") == 493);
    assert_true(eval("-0755") == -493);
    assert_true(eval("089") == 89);
    assert_true(eval("100000000000000000000") == 1e20);
    assert_true(eval("(((1)))") == 1);
    assert_true(eval("# c\n 1 # one\n + 2") == 3);

    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, "2^3^2");
    assert_int_equal(e->kind, PS_EXPR_BINARY);
    assert_int_equal(e->op, '^');
    assert_int_equal(e->lhs->kind, PS_EXPR_NUMBER);
    assert_int_equal(e->rhs->kind, PS_EXPR_BINARY);
    ps_expr_dispose(e);
    e = expr_ok(&a, "-1");
    assert_int_equal(e->kind, PS_EXPR_NEG);
    assert_true(ps_expr_is_scalar(e));
    ps_expr_dispose(e);
    /* unary minus applies to series too (+ is dropped) */
    e = expr_ok(&a, "-x{a=~\"b.*\"}");
    assert_int_equal(e->kind, PS_EXPR_NEG);
    assert_int_equal(e->pos, 0);
    assert_int_equal(e->lhs->kind, PS_EXPR_SELECTOR);
    assert_false(ps_expr_is_scalar(e));
    ps_expr_dispose(e);
    e = expr_ok(&a, "sum(-(+x))");
    assert_int_equal(e->kind, PS_EXPR_SUM);
    assert_int_equal(e->lhs->kind, PS_EXPR_NEG);
    assert_int_equal(e->lhs->lhs->kind, PS_EXPR_SELECTOR);
    ps_expr_dispose(e);
    ps_arena_dispose(&a);
    assert_false(ps_expr_is_scalar(NULL));
    ps_expr_dispose(NULL);
    ps_selector_dispose(NULL);

    expr_err("1 +", PS_EINVAL, "1:4: parse error: unexpected end of input");
    expr_err("*1", PS_EINVAL, "1:1: parse error: unexpected <op:*>");
    expr_err("1 2", PS_EINVAL, "1:3: parse error: unexpected number \"2\"");
    expr_err("(1", PS_EINVAL, "1:3: parse error: unclosed left parenthesis");
    expr_err("1)", PS_EINVAL, "1:3: parse error: unexpected right parenthesis ')'");
    expr_err("", PS_EINVAL, "1:1: parse error: no expression found in input");
    expr_err("  # only a comment\n", PS_EINVAL, "1:1: parse error: no expression found in input");
    expr_err(".", PS_EINVAL, "1:1: parse error: unexpected character: '.'");
    /* Prometheus 2.42's lexer: no underscores in numbers; what follows a number is a new token */
    expr_err("1_000", PS_EINVAL, "1:1: parse error: bad number or duration syntax: \"1\"");
    expr_err("0x_1f", PS_EINVAL, "1:1: parse error: bad number or duration syntax: \"0x\"");
    expr_err("2.5.", PS_EINVAL, "1:4: parse error: unexpected character: '.'");
    expr_err("0deadbeef", PS_EINVAL, "1:1: parse error: bad number or duration syntax: \"0de\"");
    expr_err("1e", PS_EINVAL, "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"1e\": invalid syntax");
    expr_err("0x8000000000000000", PS_EINVAL,
             "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"0x8000000000000000\": invalid syntax");
    expr_err("1e999", PS_EINVAL,
             "1:1: parse error: error parsing number: strconv.ParseFloat: parsing \"1e999\": value out of range");
    expr_err("5m", PS_EINVAL, "1:1: parse error: unexpected duration \"5m\"");
    expr_err("1 + bool 2", PS_EINVAL, "1:5: the bool modifier is not supported: " NS);
}

static void test_errors(void **state)
{
    /* selectors */
    expr_err("x{a=\"b\"", PS_EINVAL, "1:8: parse error: unexpected end of input inside braces");
    expr_err("foo{", PS_EINVAL, "1:5: parse error: unexpected end of input inside braces");
    expr_err("foo}", PS_EINVAL, "1:4: parse error: unexpected character: '}'");
    expr_err("x{\n a=\"b\"\n", PS_EINVAL, "3:1: parse error: unexpected end of input inside braces");
    expr_err("x{job=}", PS_EINVAL, "1:7: parse error: unexpected \"}\" in label matching, expected string");
    expr_err("some_metric{a=b}", PS_EINVAL,
             "1:15: parse error: unexpected identifier \"b\" in label matching, expected string");
    expr_err("x{job}", PS_EINVAL,
             "1:6: parse error: unexpected \"}\" in label matching, expected label matching operator");
    expr_err("x{job==\"a\"}", PS_EINVAL,
             "1:7: parse error: unexpected \"=\" in label matching, expected string");
    expr_err("x{,}", PS_EINVAL, "1:3: parse error: unexpected \",\" in label matching, expected identifier or \"}\"");
    expr_err("{job=\"api\" instance=\"x\"}", PS_EINVAL,
             "1:12: parse error: unexpected identifier \"instance\" in label matching, expected \",\" or \"}\"");
    expr_err("{a=\"aaaaaaaaaaaaaaaaa\" b}", PS_EINVAL,
             "1:24: parse error: unexpected identifier \"b\" in label matching, expected \",\" or \"}\"");
    expr_err("x{a=\"b\" \"aaaaaaaaaaaaaaaa\"}", PS_EINVAL,
             "1:9: parse error: unexpected string \"\\\"aaaaaaaaa\"... in label matching, expected \",\" or \"}\"");
    /* bad label names */
    expr_err("{a:b=\"c\"}", PS_EINVAL, "1:3: parse error: unexpected character inside braces: ':'");
    expr_err("{9job=\"x\"}", PS_EINVAL, "1:2: parse error: unexpected character inside braces: '9'");
    expr_err("{job.name=\"x\"}", PS_EINVAL, "1:5: parse error: unexpected character inside braces: '.'");
    expr_err("{é=\"x\"}", PS_EINVAL, "1:2: parse error: unexpected character inside braces: 'é'");
    expr_err("{a=\"x\"!b}", PS_EINVAL, "1:7: parse error: unexpected character after '!' inside braces: 'b'");
    expr_err("{a={}", PS_EINVAL, "1:4: parse error: unexpected left brace '{'");
    expr_err("{\"\"=\"x\"}", PS_EINVAL, "1:2: parse error: label name must not be empty");
    expr_err("x{__name__=\"y\"}", PS_EINVAL, "1:1: parse error: metric name must not be set twice: \"x\" or \"y\"");
    expr_err("x =~ 1", PS_EINVAL, "1:3: parse error: unexpected character after '=': '~'");
    expr_err("x\x01", PS_EINVAL, "1:2: parse error: unexpected character: '\\x01'");
    /* keywords that are not metric names */
    expr_err("bool", PS_EINVAL, "1:1: parse error: unexpected <bool>");
    expr_err("on{a=\"b\"}", PS_EINVAL, "1:1: parse error: unexpected <on>");
    expr_err("group_left", PS_EINVAL, "1:1: parse error: unexpected <group_left>");
    expr_err("x y", PS_EINVAL, "1:3: parse error: unexpected identifier \"y\"");
    expr_err("x{a=\"b\"} y:z", PS_EINVAL, "1:10: parse error: unexpected metric identifier \"y:z\"");
    expr_err("]", PS_EINVAL, "1:1: parse error: unexpected right bracket ']'");

    /* the rest of PromQL */
    expr_err("rate(x[5m])", PS_EINVAL, "1:1: rate() is not supported: " NS);
    expr_err("sum(rate(x[5m]))", PS_EINVAL, "1:5: rate() is not supported: " NS);
    expr_err("histogram_quantile(0.9, x)", PS_EINVAL, "1:1: histogram_quantile() is not supported: " NS);
    expr_err("foo(x)", PS_EINVAL, "1:1: parse error: unknown function with name \"foo\"");
    expr_err("x[5m]", PS_EINVAL, "1:2: range selectors and subqueries ([...]) are not supported: " NS);
    expr_err("sum(x)[5m:1m]", PS_EINVAL, "1:7: range selectors and subqueries ([...]) are not supported: " NS);
    expr_err("x offset 5m", PS_EINVAL, "1:3: the offset modifier is not supported: " NS);
    expr_err("x @ 100", PS_EINVAL, "1:3: the @ modifier is not supported: " NS);
    expr_err("avg(x)", PS_EINVAL, "1:1: avg() is not supported: " NS);
    expr_err("max by (a) (x)", PS_EINVAL, "1:1: max() is not supported: " NS);
    expr_err("topk(3, x)", PS_EINVAL, "1:1: topk() is not supported: " NS);
    expr_err("COUNT(x)", PS_EINVAL, "1:1: count() is not supported: " NS);
    expr_err("x > 1", PS_EINVAL, "1:3: comparison operator \">\" is not supported: " NS);
    expr_err("1 == bool 1", PS_EINVAL, "1:3: comparison operator \"==\" is not supported: " NS);
    expr_err("x != y", PS_EINVAL, "1:3: comparison operator \"!=\" is not supported: " NS);
    expr_err("(x <= 1)", PS_EINVAL, "1:4: comparison operator \"<=\" is not supported: " NS);
    expr_err("x and y", PS_EINVAL, "1:3: set operator \"and\" is not supported: " NS);
    expr_err("x OR y", PS_EINVAL, "1:3: set operator \"or\" is not supported: " NS);
    expr_err("x unless y", PS_EINVAL, "1:3: set operator \"unless\" is not supported: " NS);
    expr_err("1 atan2 2", PS_EINVAL, "1:3: operator \"atan2\" is not supported: " NS);
    expr_err("x + 1", PS_EINVAL, "1:3: arithmetic on series is not supported: " NS);
    expr_err("1 * sum(x)", PS_EINVAL, "1:3: arithmetic on series is not supported: " NS);
    expr_err("-x + 1", PS_EINVAL, "1:4: arithmetic on series is not supported: " NS);
    expr_err("2 * -x", PS_EINVAL, "1:3: arithmetic on series is not supported: " NS);
    expr_err("x + on(a) y", PS_EINVAL, "1:3: arithmetic on series is not supported: " NS);
    expr_err("1 + ignoring(a) 2", PS_EINVAL, "1:5: vector matching (ignoring) is not supported: " NS);
    expr_err("x - 'a'", PS_EINVAL, "1:3: arithmetic on series is not supported: " NS);
}

static void test_limits(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e;
    ps_err_t err;
    size_t cap = 70 * 1024;
    char *buf = malloc(cap);

    /* input size */
    memset(buf, ' ', 64 * 1024);
    buf[0] = 'x';
    assert_int_equal(ps_expr_parse(buf, 64 * 1024, &a, &e, &err), 0);
    ps_expr_dispose(e);
    assert_int_equal(ps_expr_parse(buf, 64 * 1024 + 1, &a, &e, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "query is too long: 65537 bytes (the limit is 65536)");

    /* matchers: the name counts */
    for (int n = 63; n <= 64; n++) {
        size_t o = (size_t)snprintf(buf, cap, "x{");
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(buf + o, cap - o, "l%d=~\"v.*\",", i);
        snprintf(buf + o, cap - o, "}");
        int rc = ps_expr_parse(buf, strlen(buf), &a, &e, &err);
        if (n == 63) {
            assert_int_equal(rc, 0);
            assert_int_equal(e->sel.n, 64);
            ps_expr_dispose(e);
        } else {
            assert_int_equal(rc, PS_ETOOBIG);
            assert_string_equal(err.msg, "1:686: too many matchers in one selector (the limit is 64)");
        }
    }

    /* nesting: parentheses */
    for (int n = 63; n <= 64; n++) {
        size_t o = 0;
        for (int i = 0; i < n; i++)
            buf[o++] = '(';
        buf[o++] = '1';
        for (int i = 0; i < n; i++)
            buf[o++] = ')';
        int rc = ps_expr_parse(buf, o, &a, &e, &err);
        if (n == 63) {
            assert_int_equal(rc, 0);
            assert_true(ps_expr_eval_scalar(e) == 1);
        } else {
            assert_int_equal(rc, PS_ETOOBIG);
            assert_string_equal(err.msg, "1:65: expression is too deeply nested (the limit is 64 levels)");
        }
    }
    /* nesting: the depth of the tree (a flat chain of 64 numbers is 64 deep) */
    for (int n = 64; n <= 65; n++) {
        size_t o = 0;
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(buf + o, cap - o, "%s1", i ? "+" : "");
        int rc = ps_expr_parse(buf, o, &a, &e, &err);
        if (n == 64) {
            assert_int_equal(rc, 0);
            assert_true(ps_expr_eval_scalar(e) == 64);
        } else {
            assert_int_equal(rc, PS_ETOOBIG);
            assert_string_equal(err.msg, "1:1: expression is too deeply nested (the limit is 64 levels)");
        }
    }
    /* deep unary signs and powers, and a very deep input, fail cleanly */
    memset(buf, '-', 60000);
    buf[60000] = '1';
    assert_int_equal(ps_expr_parse(buf, 60001, &a, &e, &err), PS_ETOOBIG);
    memset(buf, '(', 60000);
    assert_int_equal(ps_expr_parse(buf, 60000, &a, &e, &err), PS_ETOOBIG);
    for (size_t i = 0; i < 30000; i++)
        memcpy(buf + 2 * i, "2^", 2);
    buf[60000] = '2';
    assert_int_equal(ps_expr_parse(buf, 60001, &a, &e, &err), PS_ETOOBIG);

    /* selectors per expression: only extra sum() arguments can hold more than one */
    {
        size_t o = (size_t)snprintf(buf, cap, "sum(");
        for (int i = 0; i < 1001; i++)
            o += (size_t)snprintf(buf + o, cap - o, "%sx{a=~\"b\"}", i ? "," : "");
        o += (size_t)snprintf(buf + o, cap - o, ")");
        assert_int_equal(ps_expr_parse(buf, o, &a, &e, &err), PS_ETOOBIG);
        assert_string_equal(err.msg, "1:10005: too many selectors in one expression (the limit is 1000)");
    }
    free(buf);
    ps_arena_dispose(&a);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* err->pos is the byte offset of the column the message names; on line 2 too. */
static void test_error_positions(void **state)
{
    static const struct {
        const char *q, *msg;
        int32_t pos;
    } cases[] = {
        {"{job=\"a\\qb\"}", "1:8: parse error: unknown escape sequence \\q", 7},
        {"x{a=\"1\",\n  job=\"\\xZZ\"}", "2:8: parse error: invalid hex digit in escape sequence", 16},
        {"x{a=~\"(\"}", "1:3: parse error: error parsing regexp \"(\": missing closing parenthesis at offset 1", 2},
        {"1 +\n 2 ]", "2:4: parse error: unexpected right bracket ']'", 7},
        {"rate(x)", "1:1: rate() is not supported: " NS, 0},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_expr_t *e = NULL;
        ps_err_t err;
        assert_int_equal(ps_expr_parse(cases[i].q, strlen(cases[i].q), &a, &e, &err), PS_EINVAL);
        if (strcmp(err.msg, cases[i].msg) != 0 || err.pos != cases[i].pos)
            fail_msg("%s:\n got  %d \"%s\"\n want %d \"%s\"", cases[i].q, (int)err.pos, err.msg, (int)cases[i].pos,
                     cases[i].msg);
        ps_arena_dispose(&a);
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = NULL;
    ps_err_t err;
    char big[70000];
    memset(big, 'x', sizeof(big));
    assert_int_equal(ps_expr_parse(big, sizeof(big), &a, &e, &err), PS_ETOOBIG);
    assert_int_equal(err.pos, -1); /* the whole input: no position */
    ps_arena_dispose(&a);
}

static void test_catastrophic_regex(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = expr_ok(&a, "x{a=~\"(a+)+$\", b!~\"(a+)+$\", c=~\"(a|aa)+\", d=~\"(.*a){12}\"}");
    char s[4096];
    memset(s, 'a', sizeof(s) - 2);
    s[sizeof(s) - 2] = '!';
    s[sizeof(s) - 1] = '\0';
    double t0 = now_s();
    assert_false(match(&e->sel.m[1], s)); /* no match (the limit is hit) */
    assert_false(match(&e->sel.m[2], s)); /* an error is no match for !~ too */
    assert_false(match(&e->sel.m[3], s));
    assert_false(match(&e->sel.m[4], s));
    double dt = now_s() - t0;
    if (dt > 5.0)
        fail_msg("catastrophic regexes took %.2f s", dt);
    /* and the matchers still work afterwards */
    assert_true(match(&e->sel.m[1], "aaaa"));
    assert_true(match(&e->sel.m[3], "aaaa"));
    ps_expr_dispose(e);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_type_selector),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_regex),
        cmocka_unit_test(test_matches_empty),
        cmocka_unit_test(test_sum),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_positions),
        cmocka_unit_test(test_catastrophic_regex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
