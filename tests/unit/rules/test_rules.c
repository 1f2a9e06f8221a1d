/*
 * test_rules.c - recording rules (src/rules): Pyroscope's validation messages, one a line; the
 * contributions of real profiles (totals, a function filter, group_by, external labels, a rule
 * that matches nothing); the recorder's counter appends written by ps_store_write in the
 * profiles' transaction (sums per group, same-ms contributions merged, a late member 1 ms after
 * the newest, a refused profile contributing nothing); the stored rules' generations; the
 * provisioned rules and the set in force.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include "../storewriter.h"

#include "ingest/ingest.h"
#include "rules/rules.h"

#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"

static ps_rr_rule_t rule(const char *id, const char *name, const char **m, size_t nm, const char **g, size_t ng)
{
    ps_rr_rule_t r = {0};
    r.id = id;
    r.metric_name = name;
    r.matchers = m;
    r.nmatchers = nm;
    r.group_by = g;
    r.ngroup_by = ng;
    r.function_name = "";
    return r;
}

static const char *invalid(ps_rr_rule_t r, bool upsert)
{
    static ps_err_t err;
    ps_arena_t a = PS_ARENA_INIT;
    int rc = ps_rules_validate(&r, upsert, &a, &err);
    ps_arena_dispose(&a);
    return rc == 0 ? "" : err.msg;
}

static void test_validate(void **state)
{
    (void)state;
    const char *ok[] = {"{__profile_type__=\"cpu\"}"};
    const char *dot[] = {"service.name"}, *num[] = {"123invalid"}, *good[] = {"valid_label", "another_valid"};
    assert_string_equal(invalid(rule("test", "profiles_recorded_test", ok, 1, good, 2), false), "");
    assert_string_equal(invalid(rule("test", "profiles_recorded_test", ok, 1, dot, 1), false),
                        "group_by label \"service.name\" must match ^[a-zA-Z_][a-zA-Z0-9_]*$");
    assert_string_equal(invalid(rule("test", "profiles_recorded_test", ok, 1, num, 1), false),
                        "group_by label \"123invalid\" must match ^[a-zA-Z_][a-zA-Z0-9_]*$");
    assert_string_equal(invalid(rule("test", "profiles_recorded-test", ok, 1, NULL, 0), false),
                        "metric_name \"profiles_recorded-test\" is invalid: invalid metric name: profiles_recorded-test");
    assert_string_equal(invalid(rule("test", "123_invalid", ok, 1, NULL, 0), false),
                        "metric_name \"123_invalid\" is invalid: invalid metric name: 123_invalid");
    assert_string_equal(invalid(rule("test", "cpu", ok, 1, NULL, 0), false),
                        "metric_name \"cpu\" is invalid: metric name must start with profiles_recorded_");
    ps_rr_rule_t r = rule("test", "profiles_recorded_test", ok, 1, NULL, 0);
    ps_rr_label_t ext[] = {{"service-name", "v"}, {"ok", "\xff"}};
    r.ext = ext;
    r.next = 2;
    assert_string_equal(invalid(r, false), "external_labels name \"service-name\" must match ^[a-zA-Z_][a-zA-Z0-9_]*$\n"
                                           "external_labels value \"\\xff\" must be a valid utf-8 string");
    const char *two[] = {"{__profile_type__=\"a\", service_name=\"x\"}", "{__profile_type__=\"b\"}"};
    assert_string_equal(invalid(rule("test", "profiles_recorded_x", two, 2, NULL, 0), false),
                        "matchers must contain a \"__profile_type__\" matcher");
    const char *re[] = {"{__profile_type__!=\"a\"}"};
    assert_string_equal(invalid(rule("test", "profiles_recorded_x", re, 1, NULL, 0), false),
                        "matcher \"__profile_type__\" must have type \"=\"");
    const char *bad[] = {"{a=~\"(\"}", "{}"};
    assert_string_equal(invalid(rule("x1", "profiles_recorded_x", bad, 2, NULL, 0), false),
                        "id \"x1\" must match ^[a-zA-Z]+$\n"
                        "matcher \"{a=~\\\"(\\\"}\" is invalid: 1:2: parse error: error parsing regexp: missing "
                        "closing ): `^(?:()$`\n"
                        "matchers must contain a \"__profile_type__\" matcher");
    /* upsert: a new id of 10 letters with generation 1, the name trimmed */
    r = rule("", "  profiles_recorded_t \n", ok, 1, NULL, 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    assert_int_equal(ps_rules_validate(&r, true, &a, &err), 0);
    assert_int_equal(strlen(r.id), 10);
    assert_int_equal(r.generation, 1);
    assert_string_equal(r.metric_name, "profiles_recorded_t");
    assert_string_equal(ps_rules_profile_type(&r, &a), "cpu");
    ps_arena_dispose(&a);
}

static int prepare(const char *rel, const char *labels, const char *time, ps_arena_t *a, ps_append_t *app)
{
    size_t n;
    uint8_t *b = ps_test_read_fixture(rel, &n);
    uint8_t *copy = ps_arena_alloc(a, n);
    memcpy(copy, b, n);
    free(b);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_ingest_params_t ip = {0};
    ps_test_setstr(&ip.labels, &ip.labels_len, labels);
    ps_test_setstr(&ip.time, &ip.time_len, time);
    ip.delta = -1;
    ps_err_t err;
    int rc = ps_ingest_prepare(copy, n, &ip, &lim, a, app, &err);
    if (rc != 0)
        fail_msg("%s: %s", rel, err.msg);
    return rc;
}

static ps_store_t *open_store(const char *dir)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 27;
    o.nosync = true;
    o.retention_ns = 0;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

/* "labels@t=v;" for each sample of each append */
static void dump(ps_float_append_t **f, size_t n, ps_buf_t *b)
{
    for (size_t i = 0; i < n; i++) {
        ps_labels_format(f[i]->labels, b);
        for (uint32_t j = 0; j < f[i]->nsamples; j++)
            ps_buf_printf(b, "@%lld=%.0f;", (long long)f[i]->samples[j].t, f[i]->samples[j].v);
        ps_buf_putc(b, '\n');
    }
}

/* the recorder's appends of the last write, kept for the test */
static ps_float_append_t **last_out;
static size_t last_n;
static void record(void *ctx, ps_append_t *const *items, size_t n, ps_float_append_t ***out, size_t *nout)
{
    ps_rules_record(ctx, items, n, out, nout);
    last_out = *out;
    last_n = *nout;
}

static void test_eval_and_record(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-rules-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_rules_t *rs = ps_rules_new();
    ps_err_t err;
    const char *m1[] = {"{ service_name=\"api\" }", "{__profile_type__=\"" CPU "\"}"};
    const char *g1[] = {"instance"};
    const char *m2[] = {"{__profile_type__=\"" CPU "\"}"};
    const char *m3[] = {"{__profile_type__=\"memory:alloc_space:bytes:space:bytes\"}"};
    ps_rr_rule_t v[3] = {rule("api", "profiles_recorded_api", m1, 2, g1, 1),
                         rule("kernel", "profiles_recorded_kernel", m2, 1, NULL, 0),
                         rule("none", "profiles_recorded_none", m3, 1, NULL, 0)};
    v[1].has_function = true;
    v[1].function_name = "main.kernelCompress";
    ps_rr_label_t ext[] = {{"team", "x"}, {"__name__", "ignored"}};
    v[1].ext = ext;
    v[1].next = 2;
    assert_int_equal(ps_rules_set_provisioned(rs, v, 3, &err), 0);
    ps_store_set_recorder(s, record, rs);
    /* one write: two members of instance="a" at the same second, one of "b" */
    struct {
        const char *rel, *labels, *time;
    } in[] = {{"go/cpu-01.pb.gz", "{service_name=\"api\",instance=\"a\"}", "1000"},
              {"go/cpu-02.pb.gz", "{service_name=\"api\",instance=\"z\",zone=\"1\"}", "1000"},
              {"go/cpu-03.pb.gz", "{service_name=\"api\",instance=\"b\"}", "1001"}};
    ps_arena_t a = PS_ARENA_INIT;
    ps_append_t apps[3];
    ps_append_t *pv[3];
    ps_buf_t rec[3] = {PS_BUF_INIT, PS_BUF_INIT, PS_BUF_INIT};
    for (int i = 0; i < 3; i++) {
        prepare(in[i].rel, in[i].labels, in[i].time, &a, &apps[i]);
        ps_rules_eval(rs, &apps[i], &rec[i]);
        /* again: the series is met a second time (the evaluation's cache), the same contributions */
        ps_buf_t again = PS_BUF_INIT;
        ps_rules_eval(rs, &apps[i], &again);
        assert_int_equal(again.len, rec[i].len);
        assert_memory_equal(again.data, rec[i].data, rec[i].len);
        ps_buf_dispose(&again);
        apps[i].rec = rec[i].data;
        apps[i].rec_len = rec[i].len;
        pv[i] = &apps[i];
    }
    assert_int_equal(ps_store_write(ps_test_writer(s), pv, 3, NULL, 0, NULL, 0, &err), 0);
    ps_buf_t b = PS_BUF_INIT;
    dump(last_out, last_n, &b);
    ps_buf_putc(&b, 0);
    /* cpu-01 2980000000 (kernel 1140000000), cpu-02 2930000000 (1060000000), cpu-03 2890000000 */
    assert_string_equal((char *)b.data,
                        "{__name__=\"profiles_recorded_api\", instance=\"a\", pyroscope_rule_id=\"api\"}@1000000=2980000000;\n"
                        "{__name__=\"profiles_recorded_kernel\", pyroscope_rule_id=\"kernel\", team=\"x\"}"
                        "@1000000=2200000000;@1001000=3220000000;\n"
                        "{__name__=\"profiles_recorded_api\", instance=\"z\", pyroscope_rule_id=\"api\"}@1000000=2930000000;\n"
                        "{__name__=\"profiles_recorded_api\", instance=\"b\", pyroscope_rule_id=\"api\"}@1001000=2890000000;\n");
    ps_buf_dispose(&b);
    for (int i = 0; i < 3; i++)
        ps_buf_dispose(&rec[i]);
    ps_arena_dispose(&a);
    ps_rules_free(rs);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* a rule grouping by a label of 10,001 values: the last group's contribution is dropped, counted */
static void test_series_bound(void **state)
{
    (void)state;
    ps_rules_t *rs = ps_rules_new();
    ps_err_t err;
    const char *m[] = {"{__profile_type__=\"" CPU "\"}"};
    const char *g[] = {"instance"};
    ps_rr_rule_t r = rule("all", "profiles_recorded_all", m, 1, g, 1);
    assert_int_equal(ps_rules_set_provisioned(rs, &r, 1, &err), 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_append_t app;
    prepare("go/cpu-01.pb.gz", "{service_name=\"api\"}", "1000", &a, &app);
    ps_labels_t *orig = (ps_labels_t *)app.series_labels, *ls = ps_arena_alloc(&a, app.nseries * sizeof(*ls));
    app.series_labels = ls;
    uint32_t with = 0;
    for (int i = 0; i <= PS_RULE_SERIES_MAX; i++) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        for (uint32_t j = 0; j < app.nseries; j++) {
            ls[j] = ps_labels_borrow(&orig[j]);
            ps_labels_set(&ls[j], &a, "instance", 8, v, strlen(v));
        }
        ps_buf_t b = PS_BUF_INIT;
        ps_rules_eval(rs, &app, &b);
        with += b.len > 0;
        ps_buf_dispose(&b);
    }
    /* the first and the last series again (each met before): the first still contributes, the
     * last is still dropped, and counted again */
    for (int i = 0; i <= PS_RULE_SERIES_MAX; i += PS_RULE_SERIES_MAX) {
        char v[16];
        snprintf(v, sizeof(v), "%d", i);
        for (uint32_t j = 0; j < app.nseries; j++) {
            ls[j] = ps_labels_borrow(&orig[j]);
            ps_labels_set(&ls[j], &a, "instance", 8, v, strlen(v));
        }
        ps_buf_t b = PS_BUF_INIT;
        ps_rules_eval(rs, &app, &b);
        assert_int_equal(b.len > 0, i == 0);
        ps_buf_dispose(&b);
    }
    ps_rules_stats_t st;
    ps_rules_stats(rs, &st);
    assert_int_equal(with, PS_RULE_SERIES_MAX);
    assert_int_equal(st.series_dropped, 2);
    assert_int_equal(st.evaluations, PS_RULE_SERIES_MAX + 3);
    assert_int_equal(st.rules, 1);
    assert_int_equal(st.provisioned, 1);
    ps_arena_dispose(&a);
    ps_rules_free(rs);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_validate),
        cmocka_unit_test(test_eval_and_record),
        cmocka_unit_test(test_series_bound),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
