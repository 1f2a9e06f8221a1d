/*
 * test_metrics.c - the text exposition writer (core/metrics.c): heads, labels escaped, float
 * precision, infinities and NaN, histograms (cumulative buckets, exact sum) as Prometheus' text
 * format 0.0.4 has them; the gauge and counter values.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/metrics.h"

static void expect(ps_buf_t *b, const char *want)
{
    ps_buf_putc(b, 0);
    assert_string_equal((const char *)b->data, want);
    ps_buf_reset(b);
}

static void test_head_and_samples(void **state)
{
    (void)state;
    static const char *const labels[] = {"job", "le_not", NULL};
    static const ps_metric_t m = {"x_total", PS_COUNTER, "Things, by job.", labels};
    static const ps_metric_t g = {"y", PS_GAUGE, "A gauge."};
    ps_buf_t b = PS_BUF_INIT;
    ps_metric_head(&b, &m);
    expect(&b, "# HELP x_total Things, by job.\n# TYPE x_total counter\n");
    ps_metric_u64(&b, &m, NULL, (const char *const[]){"a\"b\\c\nd", ""}, 18446744073709551615ull);
    expect(&b, "x_total{job=\"a\\\"b\\\\c\\nd\",le_not=\"\"} 18446744073709551615\n");
    ps_metric_f(&b, &m, "_sum", (const char *const[]){"j", "k"}, 2.3125, 3);
    expect(&b, "x_total_sum{job=\"j\",le_not=\"k\"} 2.312\n");
    ps_metric_write_u64(&b, &g, 7);
    expect(&b, "# HELP y A gauge.\n# TYPE y gauge\ny 7\n");
    ps_buf_dispose(&b);
}

static void test_histogram(void **state)
{
    (void)state;
    static const int64_t le_ns[] = {1000000, 1000000000};
    static const char *const le[] = {"0.001", "1"};
    static const ps_histogram_buckets_t bk = {2, le_ns, le};
    static const char *const labels[] = {"handler", NULL};
    static const ps_metric_t m = {"d_seconds", PS_HISTOGRAM, "Durations.", labels};
    ps_histogram_t h;
    memset(&h, 0, sizeof(h));
    assert_int_equal(ps_histogram_count(&h, &bk), 0);
    ps_histogram_observe(&h, &bk, 1000000);    /* on the bound: le="0.001" */
    ps_histogram_observe(&h, &bk, 1000001);    /* le="1" */
    ps_histogram_observe(&h, &bk, 2500000000); /* +Inf */
    ps_histogram_observe(&h, &bk, -5);         /* as 0 */
    assert_int_equal(ps_histogram_count(&h, &bk), 4);
    ps_buf_t b = PS_BUF_INIT;
    ps_metric_head(&b, &m);
    ps_metric_histogram(&b, &m, (const char *const[]){"/x"}, &h, &bk);
    expect(&b, "# HELP d_seconds Durations.\n# TYPE d_seconds histogram\n"
               "d_seconds_bucket{handler=\"/x\",le=\"0.001\"} 2\n"
               "d_seconds_bucket{handler=\"/x\",le=\"1\"} 3\n"
               "d_seconds_bucket{handler=\"/x\",le=\"+Inf\"} 4\n"
               "d_seconds_sum{handler=\"/x\"} 2.502000001\n"
               "d_seconds_count{handler=\"/x\"} 4\n");
    static const ps_metric_t plain = {"p_seconds", PS_HISTOGRAM, "No labels."};
    ps_metric_histogram(&b, &plain, NULL, &h, &bk);
    expect(&b, "p_seconds_bucket{le=\"0.001\"} 2\np_seconds_bucket{le=\"1\"} 3\np_seconds_bucket{le=\"+Inf\"} 4\n"
               "p_seconds_sum 2.502000001\np_seconds_count 4\n");
    assert_int_equal(ps_histogram_default_buckets.n, 11);
    assert_string_equal(ps_histogram_default_buckets.le[10], "10");
    ps_buf_dispose(&b);
}

static void test_float_specials_and_gauge(void **state)
{
    (void)state;
    static const ps_metric_t m = {"f", PS_GAUGE, "A float."};
    ps_buf_t b = PS_BUF_INIT;
    ps_metric_write_f(&b, &m, 1.005, 2);
    expect(&b, "# HELP f A float.\n# TYPE f gauge\nf 1.00\n");
    ps_metric_f(&b, &m, NULL, NULL, INFINITY, 2);
    expect(&b, "f +Inf\n");
    ps_metric_f(&b, &m, NULL, NULL, -INFINITY, 2);
    expect(&b, "f -Inf\n");
    ps_metric_f(&b, &m, NULL, NULL, NAN, 2);
    expect(&b, "f NaN\n");
    ps_buf_dispose(&b);
    ps_gauge_t g = {0};
    assert_int_equal(ps_gauge_add(&g, 3), 3);
    assert_int_equal(ps_gauge_add(&g, -1), 2);
    assert_int_equal(ps_gauge_get(&g), 2);
    ps_counter_t c = {0};
    ps_counter_add(&c, 5);
    assert_int_equal(ps_counter_get(&c), 5);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_head_and_samples),
        cmocka_unit_test(test_histogram),
        cmocka_unit_test(test_float_specials_and_gauge),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
