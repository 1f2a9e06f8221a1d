/*
 * test_matcher_limits.c - ps_matcher_eval (parser/matcher.c) under PCRE2's limits and a query's
 * budget (core/budget.h): a value past the match limit is PS_ELIMIT naming the matcher and the
 * value's length, for =~ and !~ alike (never "no match"); runs are charged in stages (1,000, then
 * 32,000, then 1,000,000 steps) to the regex budget, whose end is an error too; the deadline and
 * the cancel flag stop a match; an invalid UTF-8 value is not matched (=~ false, !~ true). ps_matcher_match (the bool
 * form) keeps counting a limit as no match.
 */
#include <setjmp.h>
#include <stdlib.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/budget.h"
#include "parser/regex.h"
#include "parser/selector.h"

typedef struct fx {
    ps_arena_t a;
    ps_selector_t sel;
    ps_err_t err;
    char bomb[400], fine[32], mid[40];
} fx_t;

/* m[0] __name__="m", m[1] job=~"a.*", m[2] job!~"(a|aa)+$", m[3] job=~"(a|aa)+$" */
static int setup(void **state)
{
    fx_t *f = calloc(1, sizeof(*f));
    f->a = (ps_arena_t)PS_ARENA_INIT;
    const char *q = "m{job=~\"a.*\", job!~\"(a|aa)+$\", job=~\"(a|aa)+$\"}";
    assert_int_equal(ps_selector_parse(q, strlen(q), &f->a, &f->sel, &f->err), 0);
    memset(f->bomb, 'a', 300);
    strcpy(f->bomb + 300, "b0001"); /* Fibonacci(300) ways to split the a's: past any limit */
    strcpy(f->fine, "abc");
    memset(f->mid, 'a', 27);
    strcpy(f->mid + 27, "b"); /* some 832,000 steps: decided in the last stage */
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fx_t *f = *state;
    ps_budget_set(NULL);
    ps_selector_dispose(&f->sel);
    ps_arena_dispose(&f->a);
    free(f);
    return 0;
}

static void test_limit_is_an_error(void **state)
{
    fx_t *f = *state;
    size_t n = strlen(f->bomb);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->bomb, n, &f->err), PS_ELIMIT);
    assert_string_equal(f->err.msg, "regex matcher job!~\"(a|aa)+$\": PCRE2 match limit hit on a value of 305 bytes");
    assert_int_equal(ps_matcher_eval(&f->sel.m[3], f->bomb, n, &f->err), PS_ELIMIT);
    assert_string_equal(f->err.msg, "regex matcher job=~\"(a|aa)+$\": PCRE2 match limit hit on a value of 305 bytes");
    /* the bool form (compile-time tests only) still says "no match" both ways */
    assert_false(ps_matcher_match(&f->sel.m[2], f->bomb, n));
    assert_false(ps_matcher_match(&f->sel.m[3], f->bomb, n));
    /* ordinary values */
    assert_int_equal(ps_matcher_eval(&f->sel.m[0], "m", 1, &f->err), 1);
    assert_int_equal(ps_matcher_eval(&f->sel.m[0], "x", 1, &f->err), 0);
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->bomb, n, &f->err), 1);
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], "xa", 2, &f->err), 0);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], "aaa", 3, &f->err), 0);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->fine, 3, &f->err), 1);
    assert_int_equal(ps_matcher_eval(&f->sel.m[3], "aaa", 3, &f->err), 1);
    /* a value that needs the last stage is decided, not refused */
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->mid, strlen(f->mid), &f->err), 1);
    /* invalid UTF-8 matches nothing */
    assert_int_equal(ps_matcher_eval(&f->sel.m[3], "a\xff", 2, &f->err), 0);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], "a\xff", 2, &f->err), 1);
}

static void test_budget_stages(void **state)
{
    fx_t *f = *state;
    ps_budget_t b;
    ps_budget_init(&b, 0, 0, 3500, NULL);
    ps_budget_set(&b);
    /* each value decided in the first stage is charged 1,000 steps */
    for (int i = 0; i < 3; i++)
        assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->fine, 3, &f->err), 1);
    assert_int_equal(b.regex, 3000);
    /* =, != cost nothing */
    assert_int_equal(ps_matcher_eval(&f->sel.m[0], "m", 1, &f->err), 1);
    assert_int_equal(b.regex, 3000);
    /* 500 left: enough for this one */
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->fine, 3, &f->err), 1);
    assert_int_equal(b.regex, 3500);
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->fine, 3, &f->err), PS_ELIMIT);
    assert_string_equal(f->err.msg, "regex matcher job=~\"a.*\": the query's regex budget is spent "
                                    "(the query regex step limit) on a value of 3 bytes");
    /* a value that needs more than the budget has left */
    ps_budget_init(&b, 0, 0, 100000, NULL);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->mid, strlen(f->mid), &f->err), PS_ELIMIT);
    assert_string_equal(f->err.msg, "regex matcher job!~\"(a|aa)+$\": the query's regex budget is spent "
                                    "(the query regex step limit) on a value of 28 bytes");
    assert_int_equal(b.regex, 100000); /* 1,000 + 32,000 + the 67,000 left */
    /* the stages of a bomb: 1,000 + 32,000 + 1,000,000 */
    ps_budget_init(&b, 0, 0, 10000000, NULL);
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->bomb, strlen(f->bomb), &f->err), PS_ELIMIT);
    assert_int_equal(b.regex, 1033000);
    ps_budget_set(NULL);
}

static void test_deadline_and_cancel(void **state)
{
    fx_t *f = *state;
    ps_budget_t b;
    atomic_int cancel = 0;
    ps_budget_init(&b, 1000000000, 0, 0, &cancel);
    ps_budget_set(&b);
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->fine, 3, &f->err), 1);
    atomic_store(&cancel, 1);
    assert_int_equal(ps_matcher_eval(&f->sel.m[1], f->fine, 3, &f->err), PS_ECANCELED);
    atomic_store(&cancel, 0);
    b.deadline = 1;
    assert_int_equal(ps_matcher_eval(&f->sel.m[2], f->fine, 3, &f->err), PS_ETIMEOUT);
    assert_string_equal(f->err.msg, "query timed out in query execution (the limit is 1s, the query timeout)");
    ps_budget_set(NULL);
}

static void test_regex_limit_api(void **state)
{
    ps_regex_t *re;
    ps_err_t err;
    assert_int_equal(ps_regex_compile("(a|aa)+$", 8, 0, &re, &err), 0);
    ps_regex_match_t *md = ps_regex_match_new(1);
    char v[40];
    memset(v, 'a', 20);
    strcpy(v + 20, "b");
    int rc = ps_regex_match_limit(re, v, 21, md, 1000);
    assert_true(rc < 0);
    assert_string_equal(ps_regex_limit_hit(rc), "match limit");
    assert_int_equal(ps_regex_match_limit(re, v, 21, md, 0), 0); /* 0: PS_REGEX_MATCH_LIMIT */
    assert_int_equal(ps_regex_match(re, v, 21, md), 0);
    assert_null(ps_regex_limit_hit(0));
    ps_regex_match_free(md);
    ps_regex_free(re);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_limit_is_an_error, setup, teardown),
        cmocka_unit_test_setup_teardown(test_budget_stages, setup, teardown),
        cmocka_unit_test_setup_teardown(test_deadline_and_cancel, setup, teardown),
        cmocka_unit_test(test_regex_limit_api),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
