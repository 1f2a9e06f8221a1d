/*
 * test_selector.c - the selector language (ps_selector_parse, Prometheus' ParseMetricSelector):
 * selectors with profile type ids, quote styles and escapes, anchored PCRE2 regexes, empty-value
 * semantics, exact error messages (what Prometheus 2.42 answers for the same match[], asked of the
 * real binary, regex errors included), limits, and a regex that would backtrack for ever.
 * PromQL's own parser is tested by test_promql.c.
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

static ps_selector_t sel_ok(ps_arena_t *a, const char *s)
{
    ps_selector_t sel;
    ps_err_t err;
    if (ps_selector_parse(s, strlen(s), a, &sel, &err) != 0)
        fail_msg("%s: %s", s, err.msg);
    return sel;
}

static void sel_err(const char *s, int code, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t sel;
    ps_err_t err;
    int rc = ps_selector_parse(s, strlen(s), &a, &sel, &err);
    if (rc != code)
        fail_msg("%s: got %d want %d (%s)", s, rc, code, rc ? err.msg : "ok");
    assert_int_equal(sel.n, 0);
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s:\n got  \"%s\"\n want \"%s\"", s, err.msg, msg);
    ps_arena_dispose(&a);
}

static bool match(ps_matcher_t *m, const char *v) { return ps_matcher_match(m, v, strlen(v)); }

static void test_profile_type_selector(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    const char *q = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta{job=\"api\",instance=~\"10\\\\..*\"}";
    ps_selector_t e = sel_ok(&a, q);
    ps_selector_t *s = &e;
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
    ps_selector_dispose(&e);

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
    assert_string_equal(err.msg, "1:4: parse error: unexpected \"(\"");
    assert_int_equal(sel.n, 0);
    assert_int_equal(ps_selector_parse("1+1", 3, &a, &sel, &err), PS_EINVAL);
    assert_int_equal(ps_selector_parse("x{a=~\"(\"}", 9, &a, &sel, &err), PS_EINVAL);
    ps_selector_dispose(&sel); /* safe after a failure */

    /* same name twice: both kept (ANDed); trailing comma; x{} is the name alone; keywords as names */
    e = sel_ok(&a, "x{a=~\"a.*\", a!=\"ab\", }");
    assert_int_equal(e.n, 3);
    assert_string_equal(e.m[1].name, "a");
    assert_string_equal(e.m[2].name, "a");
    ps_selector_dispose(&e);
    e = sel_ok(&a, "x{}");
    assert_int_equal(e.n, 1);
    ps_selector_dispose(&e);
    e = sel_ok(&a, "  up  ");
    assert_int_equal(e.n, 1);
    assert_string_equal(e.m[0].value, "up");
    ps_selector_dispose(&e);
    static const char *const words[] = {"sum", "by", "without", "offset", "and", "or", "unless", "avg", "count",
                                        "topk", ":", "a:b", "inf_x", "nano", "Sum"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
        e = sel_ok(&a, words[i]);
        assert_string_equal(e.m[0].value, words[i]);
        ps_selector_dispose(&e);
    }
    e = sel_ok(&a, "sum{job=\"a\"}");
    assert_int_equal(e.n, 2);
    ps_selector_dispose(&e);

    /* label names inside braces are not keywords */
    e = sel_ok(&a, "x{sum=\"1\", by=\"2\", offset=\"3\", bool=\"4\", Inf=\"5\"}");
    assert_int_equal(e.n, 6);
    assert_string_equal(e.m[4].name, "bool");
    assert_string_equal(e.m[5].name, "Inf");
    ps_selector_dispose(&e);

    /* quoted names, Prometheus 3's (2.42 took none): a name alone is the metric name */
    e = sel_ok(&a, "{\"my.metric\", \"service.name\"=\"x\"}");
    assert_int_equal(e.n, 2);
    assert_string_equal(e.m[0].name, "__name__");
    assert_string_equal(e.m[0].value, "my.metric");
    assert_string_equal(e.m[1].name, "service.name");
    ps_selector_dispose(&e);

    /* whitespace and comments */
    e = sel_ok(&a, "# profile\nx{ # job\n\tjob = \"a\" ,\r\n} # end");
    assert_int_equal(e.n, 2);
    assert_string_equal(e.m[1].value, "a");
    ps_selector_dispose(&e);
    ps_arena_dispose(&a);
}

static void test_strings(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t e = sel_ok(&a, "x{a=\"d\\\"q\\n\\t\\\\\", b='s\\'q\"', c=`raw\\n\"'\nline`, "
                               "d=\"\\x41\\101\\u00e9\\U0001F600\\a\\b\\f\\r\\v\", e=\"\", f='', g=``, h=\"é\"}");
    ps_selector_t *s = &e;
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
    ps_selector_dispose(&e);

    /* a NUL byte (escaped, or raw in a backtick string) is part of the value */
    e = sel_ok(&a, "x{a=\"a\\x00b\"}");
    assert_int_equal(e.m[1].vlen, 3);
    assert_true(ps_matcher_match(&e.m[1], "a\0b", 3));
    assert_false(ps_matcher_match(&e.m[1], "a", 1));
    ps_selector_dispose(&e);
    ps_arena_dispose(&a);

    sel_err("{job=\"api}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    sel_err("{job='api}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    sel_err("{job=`api}", PS_EINVAL, "1:6: parse error: unterminated raw string");
    sel_err("{job=\"a\nb\"}", PS_EINVAL, "1:6: parse error: unterminated quoted string");
    sel_err("{job=\"a\\qb\"}", PS_EINVAL, "1:6: parse error: unknown escape sequence U+0071 'q'");
    sel_err("{job='a\\\"b'}", PS_EINVAL, "1:6: parse error: unknown escape sequence U+0022 '\"'");
    sel_err("{job=\"\\xZZ\"}", PS_EINVAL, "1:6: parse error: illegal character U+005A 'Z' in escape sequence");
    sel_err("{job=\"\\ud800\"}", PS_EINVAL, "1:6: parse error: escape sequence is an invalid Unicode code point");
    sel_err("{job=\"\xff\"}", PS_EINVAL, "1:6: parse error: invalid UTF-8 rune");
    sel_err("\"str\"", PS_EINVAL, "1:1: parse error: unexpected string \"\\\"str\\\"\"");
}

static void test_regex(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t e = sel_ok(&a, "x{job=~\"ap\", b=~\"a.c\", c=~\"a$\", d=~\"(?i)API\", e=~\"a|ab\", f=~`\\d+`, "
                               "g=~\"é.\", h!~\"ap.*\"}");
    ps_matcher_t *m = e.m;
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
    ps_selector_dispose(&e);
    ps_arena_dispose(&a);

    sel_err("{job=~\"(\"}", PS_EINVAL,
             "1:2: parse error: error parsing regexp: missing closing ): `^(?:()$`");
    /* the regex cannot break out of the anchoring group */
    sel_err("x{job=~\"a)|(b\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp: unexpected ): `a)|(b`");
    sel_err("x{job=~\"(a)\\\\1\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp: invalid escape sequence: `\\1`");
    sel_err("x{job=~\"\\\\C\"}", PS_EINVAL,
             "1:3: parse error: error parsing regexp: invalid escape sequence: `\\C`");
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
        ps_selector_t e = sel_ok(&a, cases[i].q);
        ps_matcher_t *m = &e.m[1];
        if (m->matches_empty != cases[i].empty)
            fail_msg("%s: matches_empty %d", cases[i].q, m->matches_empty);
        assert_int_equal(ps_matcher_match(m, "", 0), cases[i].empty);
        assert_int_equal(ps_matcher_match(m, NULL, 0), cases[i].empty);
        ps_selector_dispose(&e);
    }
    /* a selector of matchers that all match "" is refused, as Prometheus does */
    const char *ok[] = {"{a=\"v\"}", "{a=\"\", b=\"v\"}", "{a=~\".+\"}", "{a!=\"\"}", "{a!~\".*\"}"};
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++)
    {
        ps_selector_t e = sel_ok(&a, ok[i]);
        ps_selector_dispose(&e);
    }
    ps_arena_dispose(&a);
    const char *bad[] = {"{}", "{job=~\".*\"}", "{a=\"\"}", "{a!=\"v\"}", "{a!~\"v\"}", "{a=\"\",b=~\"x|\"}", "{ }"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        sel_err(bad[i], PS_EINVAL, "1:1: parse error: vector selector must contain at least one non-empty matcher");
}

static void test_errors(void **state)
{
    /* selectors */
    sel_err("x{a=\"b\"", PS_EINVAL, "1:8: parse error: unexpected end of input inside braces");
    sel_err("foo{", PS_EINVAL, "1:5: parse error: unexpected end of input inside braces");
    sel_err("foo}", PS_EINVAL, "1:4: parse error: unexpected character: '}'");
    sel_err("x{\n a=\"b\"\n", PS_EINVAL, "3:1: parse error: unexpected end of input inside braces");
    sel_err("x{job=}", PS_EINVAL, "1:7: parse error: unexpected \"}\" in label matching, expected string");
    sel_err("some_metric{a=b}", PS_EINVAL,
             "1:15: parse error: unexpected identifier \"b\" in label matching, expected string");
    sel_err("x{job}", PS_EINVAL,
             "1:6: parse error: unexpected \"}\" in label matching, expected label matching operator");
    sel_err("x{job==\"a\"}", PS_EINVAL,
             "1:7: parse error: unexpected \"=\" in label matching, expected string");
    sel_err("x{,}", PS_EINVAL, "1:3: parse error: unexpected \",\" in label matching, expected identifier or \"}\"");
    sel_err("{job=\"api\" instance=\"x\"}", PS_EINVAL,
             "1:12: parse error: unexpected identifier \"instance\" in label matching, expected \",\" or \"}\"");
    sel_err("{a=\"aaaaaaaaaaaaaaaaa\" b}", PS_EINVAL,
             "1:24: parse error: unexpected identifier \"b\" in label matching, expected \",\" or \"}\"");
    sel_err("x{a=\"b\" \"aaaaaaaaaaaaaaaa\"}", PS_EINVAL,
             "1:9: parse error: unexpected string \"\\\"aaaaaaaaa\"... in label matching, expected \",\" or \"}\"");
    /* bad label names */
    sel_err("{a:b=\"c\"}", PS_EINVAL, "1:3: parse error: unexpected character inside braces: ':'");
    sel_err("{9job=\"x\"}", PS_EINVAL, "1:2: parse error: unexpected character inside braces: '9'");
    sel_err("{job.name=\"x\"}", PS_EINVAL, "1:5: parse error: unexpected character inside braces: '.'");
    sel_err("{é=\"x\"}", PS_EINVAL, "1:2: parse error: unexpected character inside braces: 'é'");
    sel_err("{a=\"x\"!b}", PS_EINVAL, "1:7: parse error: unexpected character after '!' inside braces: 'b'");
    sel_err("{a={}", PS_EINVAL, "1:4: parse error: unexpected left brace '{'");
    sel_err("{\"\"=\"x\"}", PS_EINVAL, "1:2: parse error: label name must not be empty");
    {
        /* two names are two matchers, ANDed, as in 2.42 */
        ps_arena_t a = PS_ARENA_INIT;
        ps_selector_t e = sel_ok(&a, "x{__name__=\"y\"}");
        assert_int_equal(e.n, 2);
        ps_selector_dispose(&e);
        ps_arena_dispose(&a);
    }
    sel_err("x =~ 1", PS_EINVAL, "1:3: parse error: unexpected character after '=': '~'");
    sel_err("x\x01", PS_EINVAL, "1:2: parse error: unexpected character: '\\x01'");
    /* keywords that are not metric names */
    sel_err("bool", PS_EINVAL, "1:1: parse error: unexpected <bool>");
    sel_err("on{a=\"b\"}", PS_EINVAL, "1:1: parse error: unexpected <on>");
    sel_err("group_left", PS_EINVAL, "1:1: parse error: unexpected <group_left>");
    sel_err("x y", PS_EINVAL, "1:3: parse error: unexpected identifier \"y\"");
    sel_err("x{a=\"b\"} y:z", PS_EINVAL, "1:10: parse error: unexpected metric identifier \"y:z\"");
    sel_err("]", PS_EINVAL, "1:1: parse error: unexpected right bracket ']'");

    /* anything around a selector: Prometheus' ParseMetricSelector stops at the first token that
     * cannot follow (or start) one */
    sel_err("sum(x)", PS_EINVAL, "1:4: parse error: unexpected \"(\"");
    sel_err("1+1", PS_EINVAL, "1:1: parse error: unexpected number \"1\"");
    sel_err("", PS_EINVAL, "1:1: parse error: unexpected end of input");
    sel_err("x[5m]", PS_EINVAL, "1:2: parse error: unexpected \"[\"");
    sel_err("x offset 5m", PS_EINVAL, "1:3: parse error: unexpected <offset>");
    sel_err("(x)", PS_EINVAL, "1:1: parse error: unexpected \"(\"");
    sel_err("x > 1", PS_EINVAL, "1:3: parse error: unexpected <op:>>");
}

static void test_limits(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t e;
    ps_err_t err;
    size_t cap = 70 * 1024;
    char *buf = malloc(cap);

    /* input size */
    memset(buf, ' ', 64 * 1024);
    buf[0] = 'x';
    assert_int_equal(ps_selector_parse(buf, 64 * 1024, &a, &e, &err), 0);
    ps_selector_dispose(&e);
    assert_int_equal(ps_selector_parse(buf, 64 * 1024 + 1, &a, &e, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "query is too long: 65537 bytes (the limit is 65536)");

    /* matchers: the name counts */
    for (int n = 63; n <= 64; n++) {
        size_t o = (size_t)snprintf(buf, cap, "x{");
        for (int i = 0; i < n; i++)
            o += (size_t)snprintf(buf + o, cap - o, "l%d=~\"v.*\",", i);
        snprintf(buf + o, cap - o, "}");
        int rc = ps_selector_parse(buf, strlen(buf), &a, &e, &err);
        if (n == 63) {
            assert_int_equal(rc, 0);
            assert_int_equal(e.n, 64);
            ps_selector_dispose(&e);
        } else {
            assert_int_equal(rc, PS_ETOOBIG);
            assert_string_equal(err.msg, "1:686: too many matchers in one selector (the limit is 64)");
        }
    }
    /* a very deep input fails cleanly */
    memset(buf, '(', 60000);
    assert_int_equal(ps_selector_parse(buf, 60000, &a, &e, &err), PS_EINVAL);
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
        {"{job=\"a\\qb\"}", "1:6: parse error: unknown escape sequence U+0071 'q'", 5},
        {"x{a=\"1\",\n  job=\"\\xZZ\"}", "2:7: parse error: illegal character U+005A 'Z' in escape sequence", 15},
        {"x{a=~\"(\"}", "1:3: parse error: error parsing regexp: missing closing ): `^(?:()$`", 2},
        {"x\n ]", "2:2: parse error: unexpected right bracket ']'", 3},
        {"x{a=\"b\"}\n offset 1m", "2:2: parse error: unexpected <offset>", 10},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_selector_t e;
        ps_err_t err;
        assert_int_equal(ps_selector_parse(cases[i].q, strlen(cases[i].q), &a, &e, &err), PS_EINVAL);
        if (strcmp(err.msg, cases[i].msg) != 0 || err.pos != cases[i].pos)
            fail_msg("%s:\n got  %d \"%s\"\n want %d \"%s\"", cases[i].q, (int)err.pos, err.msg, (int)cases[i].pos,
                     cases[i].msg);
        ps_arena_dispose(&a);
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t e;
    ps_err_t err;
    char big[70000];
    memset(big, 'x', sizeof(big));
    assert_int_equal(ps_selector_parse(big, sizeof(big), &a, &e, &err), PS_ETOOBIG);
    assert_int_equal(err.pos, -1); /* the whole input: no position */
    ps_arena_dispose(&a);
}

static void test_catastrophic_regex(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t e = sel_ok(&a, "x{a=~\"(a+)+$\", b!~\"(a+)+$\", c=~\"(a|aa)+\", d=~\"(.*a){12}\"}");
    char s[4096];
    memset(s, 'a', sizeof(s) - 2);
    s[sizeof(s) - 2] = '!';
    s[sizeof(s) - 1] = '\0';
    double t0 = now_s();
    assert_false(match(&e.m[1], s)); /* no match (the limit is hit) */
    assert_false(match(&e.m[2], s)); /* an error is no match for !~ too */
    assert_false(match(&e.m[3], s));
    assert_false(match(&e.m[4], s));
    double dt = now_s() - t0;
    if (dt > 5.0)
        fail_msg("catastrophic regexes took %.2f s", dt);
    /* and the matchers still work afterwards */
    assert_true(match(&e.m[1], "aaaa"));
    assert_true(match(&e.m[3], "aaaa"));
    ps_selector_dispose(&e);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_type_selector),
        cmocka_unit_test(test_strings),
        cmocka_unit_test(test_regex),
        cmocka_unit_test(test_matches_empty),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_error_positions),
        cmocka_unit_test(test_catastrophic_regex),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
