/*
 * test_labels.c - label sets in selector syntax: quote styles, Go escapes, errors with positions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "parser/labels.h"

static ps_labels_t parse_ok(ps_arena_t *a, const char *s)
{
    ps_labels_t ls;
    ps_err_t err;
    int rc = ps_parse_labelset(s, strlen(s), a, &ls, &err);
    if (rc)
        fail_msg("%s: %s", s, err.msg);
    return ls;
}

static void parse_err(const char *s, int code, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls;
    ps_err_t err;
    int rc = ps_parse_labelset(s, strlen(s), &a, &ls, &err);
    if (rc != code)
        fail_msg("%s: got %d want %d (%s)", s, rc, code, rc ? err.msg : "ok");
    if (strstr(err.msg, msg) == NULL)
        fail_msg("%s: message \"%s\" lacks \"%s\"", s, err.msg, msg);
    ps_arena_dispose(&a);
}

/* The exact message and the byte offset in err->pos (-1: none). */
static void parse_err_at(const char *s, const char *msg, int32_t pos)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls;
    ps_err_t err;
    int rc = ps_parse_labelset(s, strlen(s), &a, &ls, &err);
    if (rc != PS_EINVAL)
        fail_msg("%s: got %d want %d (%s)", s, rc, PS_EINVAL, rc ? err.msg : "ok");
    if (strcmp(err.msg, msg) != 0)
        fail_msg("%s:\n got  \"%s\"\n want \"%s\"", s, err.msg, msg);
    if (err.pos != pos)
        fail_msg("%s: pos %d want %d", s, (int)err.pos, (int)pos);
    ps_arena_dispose(&a);
}

static void test_labelsets(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = parse_ok(&a, "{job=\"api\",instance=\"a:6060\"}");
    assert_int_equal(ls.n, 2);
    assert_string_equal(ls.pairs[0].name, "instance");
    assert_string_equal(ls.pairs[0].value, "a:6060");
    ls = parse_ok(&a, "  { a = 'x' , b=`raw\\n`, c=\"\\t\\x41\\u00e9\\101\\\"\" , } ");
    assert_int_equal(ls.n, 3);
    assert_string_equal(ls.pairs[0].value, "x");
    assert_string_equal(ls.pairs[1].value, "raw\\n");
    assert_string_equal(ls.pairs[2].value, "\tA\xc3\xa9" "A\"");
    ls = parse_ok(&a, "job=\"x\"");
    assert_int_equal(ls.n, 1);
    ls = parse_ok(&a, "{}");
    assert_int_equal(ls.n, 0);
    ls = parse_ok(&a, "");
    assert_int_equal(ls.n, 0);
    ls = parse_ok(&a, "{a=\"\"}");
    assert_int_equal(ls.pairs[0].vlen, 0);
    ls = parse_ok(&a, "{a=`multi\nline`}");
    assert_string_equal(ls.pairs[0].value, "multi\nline");
    /* quoted UTF-8 names, as Prometheus 3 writes them */
    ls = parse_ok(&a, "{\"service.name\"=\"checkout\", 'k8s.pod' = \"p\", job=\"x\", \"caf\\u00e9\"=\"y\"}");
    assert_int_equal(ls.n, 4);
    assert_string_equal(ls.pairs[0].name, "caf\xc3\xa9");
    assert_string_equal(ls.pairs[1].name, "job");
    assert_string_equal(ls.pairs[2].name, "k8s.pod");
    assert_string_equal(ls.pairs[3].name, "service.name");
    assert_string_equal(ls.pairs[3].value, "checkout");
    ps_arena_dispose(&a);
    parse_err("{\"a\\x00b\"=\"x\"}", PS_EINVAL, "invalid label name \"a\": contains a NUL byte");
    parse_err("{\"\"=\"x\"}", PS_EINVAL, "invalid label name \"\": empty");
    parse_err("{\"a=\"x\"}", PS_EINVAL, "1:6: expected \"=\" after label name");
}

static void test_errors(void **state)
{
    parse_err("{job=\"api\"", PS_EINVAL, "1:11: expected \"}\"");
    parse_err("{job=~\"api\"}", PS_EINVAL, "1:5: expected \"=\"");
    parse_err("{job!=\"api\"}", PS_EINVAL, "1:5: expected \"=\"");
    parse_err("{9job=\"api\"}", PS_EINVAL, "1:2: expected label name");
    parse_err("{job=api}", PS_EINVAL, "1:6: expected a string");
    parse_err("{job=\"api}", PS_EINVAL, "unterminated quoted string");
    parse_err("{job=\"a\\qb\"}", PS_EINVAL, "1:8: unknown escape sequence \\q");
    parse_err("{job=\"\\xZZ\"}", PS_EINVAL, "invalid hex digit");
    parse_err("{job=\"\\ud800\"}", PS_EINVAL, "invalid Unicode code point");
    parse_err("{job=\"a\" x=\"b\"}", PS_EINVAL, "1:10: expected \",\" or \"}\"");
    parse_err("{job=\"a\",job=\"b\"}", PS_EINVAL, "duplicate label name \"job\"");
    parse_err("{job=\"a\"} trailing", PS_EINVAL, "after the label set");
    parse_err("{a=\"\xff\"}", PS_EINVAL, "not valid UTF-8");
    char many[4096] = "{";
    for (int i = 0; i < 65; i++)
        snprintf(many + strlen(many), sizeof(many) - strlen(many), "l%d=\"v\",", i);
    strcat(many, "}");
    parse_err(many, PS_EINVAL, "too many labels");
}

/* The push's labels take only "=": the message names the operator it got, whole. */
static void test_operator_named(void **state)
{
    parse_err_at("{job=~\"api\"}", "1:5: expected \"=\" after label name (label sets take only =), got \"=~\"", 4);
    parse_err_at("{job!=\"api\"}", "1:5: expected \"=\" after label name (label sets take only =), got \"!=\"", 4);
    parse_err_at("{job !~ \"api\"}", "1:6: expected \"=\" after label name (label sets take only =), got \"!~\"", 5);
    parse_err_at("{job!\"api\"}", "1:5: expected \"=\" after label name (label sets take only =), got \"!\"", 4);
    /* a character is shown whole, a byte that is none (or a control) escaped */
    parse_err_at("{j\xc3\xb6" "b=\"x\"}", "1:3: expected \"=\" after label name (label sets take only =), got \"\xc3\xb6\"",
                 2);
    parse_err_at("{\xff=\"x\"}", "1:2: expected label name, got \"\\xff\"", 1);
    parse_err_at("{a=\"x\"\x01}", "1:7: expected \",\" or \"}\", got \"\\x01\"", 6);
}

/* Positions are in err->pos, also for errors inside a string value, and with err NULL nothing
 * breaks (the position used to be read back out of the message of an err that was not there). */
static void test_positions(void **state)
{
    parse_err_at("{job=api}", "1:6: expected a string, got another character", 5);
    parse_err_at("{job=\"a\\qb\"}", "1:8: unknown escape sequence \\q", 7);
    parse_err_at("  {x=\"1\", job=\"\\xZZ\"}", "1:16: invalid hex digit in escape sequence", 15);
    parse_err_at("{job=\"api}", "1:11: unterminated quoted string", 10);
    parse_err_at("{job=\"a\"} x", "1:11: unexpected \"x\" after the label set", 10);
    parse_err_at("{job=\"a\",job=\"b\"}", "duplicate label name \"job\"", -1);

    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls;
    const char *bad[] = {"{job=\"a\\qb\"}", "{job=\"api}", "{job=api}", "{job=~\"a\"}", "{a=\"\"\"}"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
        assert_int_equal(ps_parse_labelset(bad[i], strlen(bad[i]), &a, &ls, NULL), PS_EINVAL);
    ps_arena_dispose(&a);
}

/* An empty input is not read at all (the first byte was read before checking n; ASan sees it). */
static void test_string_empty_input(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    char *buf = malloc(1), *out = NULL;
    size_t end = 0, outlen = 0;
    ps_err_t err;
    buf[0] = '"';
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized" /* the end of buf: nothing there to read */
    assert_int_equal(ps_parse_string(buf + 1, 0, &end, &a, &out, &outlen, &err), PS_EINVAL);
#pragma GCC diagnostic pop
    assert_string_equal(err.msg, "expected a string, got end of input");
    assert_int_equal(err.pos, 0);
    assert_int_equal(ps_parse_string(buf, 1, &end, &a, &out, &outlen, &err), PS_EINVAL);
    assert_string_equal(err.msg, "unterminated quoted string");
    assert_int_equal(err.pos, 1);
    free(buf);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labelsets),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_operator_named),
        cmocka_unit_test(test_positions),
        cmocka_unit_test(test_string_empty_input),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
