/*
 * test_budget.c - unit tests for core/budget.c: no budget never refuses; the cancel flag is
 * seen at every check; the deadline at every PS_BUDGET_CLOCK_EVERY-th check (or at once with
 * ps_budget_check_now), with Prometheus' words and the phase; samples and regex steps are taken
 * up to their limits exactly; budgets are per thread.
 */
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/budget.h"

static void test_no_budget(void **state)
{
    ps_err_t err;
    ps_budget_set(NULL);
    assert_null(ps_budget_get());
    assert_int_equal(ps_budget_check(&err), 0);
    assert_int_equal(ps_budget_check_now(&err), 0);
    assert_int_equal(ps_budget_samples(UINT64_MAX, &err), 0);
    assert_true(ps_budget_regex(UINT64_MAX));
    assert_int_equal(ps_budget_regex_left(), UINT64_MAX);
}

static void test_cancel(void **state)
{
    ps_budget_t b;
    ps_err_t err;
    atomic_int cancel = 0;
    ps_budget_init(&b, 0, 0, 0, &cancel);
    assert_null(ps_budget_set(&b));
    assert_ptr_equal(ps_budget_get(), &b);
    assert_int_equal(ps_budget_check(&err), 0);
    atomic_store(&cancel, 1);
    assert_int_equal(ps_budget_check(&err), PS_ECANCELED);
    assert_string_equal(err.msg, "query canceled: the client went away");
    assert_int_equal(ps_budget_samples(1, &err), PS_ECANCELED);
    assert_ptr_equal(ps_budget_set(NULL), &b);
}

static void test_deadline(void **state)
{
    ps_budget_t b;
    ps_err_t err;
    ps_budget_init(&b, 1000000000, 0, 0, NULL);
    ps_budget_set(&b);
    assert_int_equal(ps_budget_check_now(&err), 0);
    b.deadline = 1; /* long past */
    b.phase = "query preparation";
    b.ticks = 0;
    for (int i = 1; i < PS_BUDGET_CLOCK_EVERY; i++)
        assert_int_equal(ps_budget_check(&err), 0); /* the clock is read every 64th check */
    assert_int_equal(ps_budget_check(&err), PS_ETIMEOUT);
    assert_string_equal(err.msg, "query timed out in query preparation (the limit is 1s, the query timeout)");
    assert_int_equal(ps_budget_check_now(&err), PS_ETIMEOUT);
    assert_int_equal(ps_err_http_status(PS_ETIMEOUT), 503);
    assert_int_equal(ps_err_http_status(PS_ECANCELED), 499);
    ps_budget_set(NULL);
}

static void test_samples_and_regex(void **state)
{
    ps_budget_t b;
    ps_err_t err;
    ps_budget_init(&b, 0, 100, 5000, NULL);
    ps_budget_set(&b);
    assert_int_equal(ps_budget_samples(60, &err), 0);
    assert_int_equal(ps_budget_samples(40, &err), 0); /* exactly the limit */
    assert_int_equal(ps_budget_samples(1, &err), PS_ELIMIT);
    assert_string_equal(err.msg, "query processing would load too many samples into memory in query execution "
                                 "(the limit is 100 samples, the query sample limit)");
    assert_int_equal(ps_budget_regex_left(), 5000);
    assert_true(ps_budget_regex(4000));
    assert_int_equal(ps_budget_regex_left(), 1000);
    assert_true(ps_budget_regex(1000));
    assert_int_equal(ps_budget_regex_left(), 0);
    assert_false(ps_budget_regex(1));
    assert_int_equal(ps_budget_regex_left(), 0);
    ps_budget_set(NULL);
}

static void *other_thread(void *arg)
{
    return ps_budget_get() == NULL ? arg : NULL;
}

static void test_per_thread(void **state)
{
    ps_budget_t b;
    ps_budget_init(&b, 0, 1, 1, NULL);
    ps_budget_set(&b);
    pthread_t t;
    void *ret = NULL;
    assert_int_equal(pthread_create(&t, NULL, other_thread, &b), 0);
    pthread_join(t, &ret);
    assert_ptr_equal(ret, &b); /* the other thread has none */
    ps_budget_set(NULL);
}

/* The lower floors name a limit's setting neutrally until main.c gives its flags (core/err.h);
 * a NULL entry keeps the name it had. Last: the names are process-wide. */
static void test_setting_names(void **state)
{
    ps_budget_t b;
    ps_err_t err;
    assert_string_equal(ps_setting_name(PS_SETTING_QUERY_MAX_SAMPLES), "the query sample limit");
    assert_string_equal(ps_setting_name(PS_SETTING_STORE_CHECK), "a store check");
    assert_string_equal(ps_setting_name(PS_SETTING_COUNT), "");
    const char *names[PS_SETTING_COUNT] = {[PS_SETTING_QUERY_MAX_SAMPLES] = "--query.max-samples",
                                           [PS_SETTING_QUERY_TIMEOUT] = "--query.timeout"};
    ps_setting_names_set(names);
    assert_string_equal(ps_setting_name(PS_SETTING_QUERY_MAX_SAMPLES), "--query.max-samples");
    assert_string_equal(ps_setting_name(PS_SETTING_STORE_CHECK), "a store check");
    ps_budget_init(&b, 1000000000, 10, 0, NULL);
    ps_budget_set(&b);
    assert_int_equal(ps_budget_samples(11, &err), PS_ELIMIT);
    assert_string_equal(err.msg, "query processing would load too many samples into memory in query execution "
                                 "(the limit is 10 samples, --query.max-samples)");
    b.deadline = 1;
    assert_int_equal(ps_budget_check_now(&err), PS_ETIMEOUT);
    assert_string_equal(err.msg, "query timed out in query execution (the limit is 1s, --query.timeout)");
    ps_budget_set(NULL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_budget),         cmocka_unit_test(test_cancel),
        cmocka_unit_test(test_deadline),          cmocka_unit_test(test_samples_and_regex),
        cmocka_unit_test(test_per_thread),        cmocka_unit_test(test_setting_names),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
