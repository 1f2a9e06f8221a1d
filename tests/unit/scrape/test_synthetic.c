/*
 * test_synthetic.c - the per-scrape series (src/scrape/synthetic.c): names, labels (the target's
 * plus profile, copied), values, the scrape's time, stale markers.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "scrape/synthetic.h"

static uint64_t bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

/* the labels as {a="b", ...} */
static const char *fmt(const ps_labels_t *ls, ps_buf_t *b)
{
    b->len = 0;
    ps_labels_format(ls, b);
    ps_buf_append(b, "", 1);
    return (const char *)b->data;
}

static void target(ps_arena_t *a, ps_labels_t *ls, char *inst)
{
    *ls = (ps_labels_t){0, NULL, 0};
    ps_labels_set(ls, a, "job", 3, "app", 3);
    ps_labels_set(ls, a, "team", 4, "core", 4);
    ps_labels_set(ls, a, "instance", 8, inst, strlen(inst));
}

static void test_report(void **state)
{
    (void)state;
    ps_arena_t ta = PS_ARENA_INIT, a = PS_ARENA_INIT;
    ps_labels_t t;
    char inst[] = "10.0.0.1:6060";
    target(&ta, &t, inst);
    ps_float_append_t out[PS_SYNTHETIC_SERIES];
    ps_scrape_report_t r = {1796021924802, true, 0.25, 272, 200};
    ps_synthetic_build(&t, "process_cpu", &r, 0, &a, out);
    ps_arena_dispose(&ta); /* the target may go away before the writer runs: nothing points into it */
    memset(inst, 'x', sizeof(inst) - 1);
    static const char *const want[] = {
        "{__name__=\"up\", instance=\"10.0.0.1:6060\", job=\"app\", profile=\"process_cpu\", team=\"core\"}",
        "{__name__=\"scrape_duration_seconds\", instance=\"10.0.0.1:6060\", job=\"app\", profile=\"process_cpu\", "
        "team=\"core\"}",
        "{__name__=\"scrape_samples_scraped\", instance=\"10.0.0.1:6060\", job=\"app\", profile=\"process_cpu\", "
        "team=\"core\"}",
        "{__name__=\"scrape_samples_post_metric_relabeling\", instance=\"10.0.0.1:6060\", job=\"app\", "
        "profile=\"process_cpu\", team=\"core\"}",
    };
    const double vals[] = {1, 0.25, 272, 200};
    ps_buf_t b = PS_BUF_INIT;
    for (int i = 0; i < PS_SYNTHETIC_SERIES; i++) {
        assert_string_equal(fmt(out[i].labels, &b), want[i]);
        ps_labels_t copy = *out[i].labels;
        ps_err_t err;
        assert_int_equal(ps_labels_normalize(&copy, &err), 0); /* valid and sorted as the store wants */
        assert_int_equal(out[i].nsamples, 1);
        assert_int_equal(out[i].samples[0].t, 1796021924802);
        assert_true(out[i].samples[0].v == vals[i]);
        assert_int_equal(out[i].status, 0);
        assert_int_equal(out[i].accepted, 0);
    }
    /* a failed scrape: up 0 */
    r = (ps_scrape_report_t){1796021925802, false, 0.001, 0, 0};
    ps_arena_t ta2 = PS_ARENA_INIT;
    char inst2[] = "10.0.0.2:6060";
    target(&ta2, &t, inst2);
    ps_synthetic_build(&t, "memory", &r, 0, &a, out);
    assert_true(out[0].samples[0].v == 0.0 && bits(out[0].samples[0].v) == 0);
    assert_string_equal(fmt(out[0].labels, &b),
                        "{__name__=\"up\", instance=\"10.0.0.2:6060\", job=\"app\", profile=\"memory\", team=\"core\"}");
    ps_arena_dispose(&ta2);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void test_stale_and_profile_label(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t t = {0, NULL, 0};
    ps_labels_set(&t, &a, "profile", 7, "mine", 4); /* a target label named profile is overwritten */
    ps_labels_set(&t, &a, "instance", 8, "h:1", 3);
    ps_float_append_t out[PS_SYNTHETIC_SERIES];
    ps_synthetic_build(&t, "goroutine", NULL, 1796021930000, &a, out);
    ps_buf_t b = PS_BUF_INIT;
    assert_string_equal(fmt(out[0].labels, &b), "{__name__=\"up\", instance=\"h:1\", profile=\"goroutine\"}");
    for (int i = 0; i < PS_SYNTHETIC_SERIES; i++) {
        assert_int_equal(out[i].samples[0].t, 1796021930000);
        assert_int_equal(bits(out[i].samples[0].v), PS_STALE_NAN_BITS);
    }
    assert_string_equal(ps_labels_value(&t, "profile"), "mine"); /* the target's own set is left alone */
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_report),
        cmocka_unit_test(test_stale_and_profile_label),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
