/*
 * test_labels.c - label sets in selector syntax: quote styles, Go escapes, errors with positions.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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
    ps_arena_dispose(&a);
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_labelsets),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
