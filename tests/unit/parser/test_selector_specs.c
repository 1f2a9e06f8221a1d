/*
 * test_selector_specs.c - selectors built from (type, name, value) triples (parser/selector_specs.c): the four
 * types match as the parsed ones do (anchoring, '.' matching "\n", empty-value semantics), the
 * strings are copied, and a bad regex or type is an error naming the matcher.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "parser/selector_specs.h"

#define SPEC(op, n, v) {op, n, sizeof(n) - 1, v, sizeof(v) - 1}

static void test_build_and_match(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t sel;
    ps_err_t err;
    char name[] = "job", value[] = "api";
    ps_matcher_spec_t specs[5] = {
        {PS_MATCH_EQ, name, 3, value, 3},
        SPEC(PS_MATCH_NEQ, "env", "prod"),
        SPEC(PS_MATCH_RE, "instance", "a.c|x"),
        SPEC(PS_MATCH_NRE, "zone", "eu-.*"),
        SPEC(PS_MATCH_EQ, "absent", ""),
    };
    assert_int_equal(ps_selector_from_specs(specs, 5, &a, &sel, &err), 0);
    name[0] = 'X', value[0] = 'X'; /* copied */
    assert_int_equal(sel.n, 5);
    assert_string_equal(sel.m[0].name, "job");
    assert_true(ps_matcher_match(&sel.m[0], "api", 3));
    assert_false(ps_matcher_match(&sel.m[0], "apix", 4));
    assert_false(sel.m[0].matches_empty);
    assert_true(sel.m[1].matches_empty);
    assert_false(ps_matcher_match(&sel.m[1], "prod", 4));
    assert_true(ps_matcher_match(&sel.m[2], "abc", 3));
    assert_true(ps_matcher_match(&sel.m[2], "a\nc", 3)); /* (?s) */
    assert_false(ps_matcher_match(&sel.m[2], "xabc", 4)); /* anchored */
    assert_false(sel.m[2].matches_empty);
    assert_false(ps_matcher_match(&sel.m[3], "eu-west", 7));
    assert_true(ps_matcher_match(&sel.m[3], "us-east", 7));
    assert_true(sel.m[3].matches_empty);
    assert_true(sel.m[4].matches_empty);
    ps_selector_dispose(&sel);
    ps_arena_dispose(&a);
}

static void test_errors(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t sel;
    ps_err_t err;
    ps_matcher_spec_t bad[2] = {SPEC(PS_MATCH_RE, "a", "x.*"), SPEC(PS_MATCH_RE, "b", "(")};
    assert_int_equal(ps_selector_from_specs(bad, 2, &a, &sel, &err), PS_EINVAL);
    assert_string_equal(err.msg, "matchers[1]: error parsing regexp \"(\": missing closing parenthesis at offset 1");
    assert_int_equal(sel.n, 0);
    ps_matcher_spec_t op[1] = {{(ps_match_op_t)9, "a", 1, "b", 1}};
    assert_int_equal(ps_selector_from_specs(op, 1, &a, &sel, &err), PS_EINVAL);
    assert_string_equal(err.msg, "matchers[0]: unknown matcher type 9");
    assert_int_equal(ps_selector_from_specs(NULL, 1001, &a, &sel, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "1001 matchers (the limit is 1000)");
    assert_int_equal(ps_selector_from_specs(NULL, 0, &a, &sel, &err), 0);
    assert_int_equal(sel.n, 0);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_build_and_match),
        cmocka_unit_test(test_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
