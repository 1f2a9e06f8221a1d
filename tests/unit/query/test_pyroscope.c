/*
 * test_pyroscope.c - unit tests for src/query/pyroscope.c: Pyroscope's timeline step rule
 * (calculator.go's table, boundaries included), the timeline of profiles at known times (which
 * step each falls into, sum and avg, the steps dropped at until), the profile type of a query
 * resolved (verbatim, Pyroscope's 5-part id to the stored :delta one, errors), the legacy
 * <app>.<type> form, the shared pyroscope_spy label, and the label lists of profile series (a
 * float series named like a profile type id is not one).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include "core/timeutil.h"
#include "query/query.h"
#include "storefix.h"

#define T0 1796022000ll
#define CPU "process_cpu:cpu:nanoseconds:cpu:nanoseconds"

static void test_step(void **state)
{
    (void)state;
    static const struct {
        int64_t range_ms, step_s;
    } cases[] = {
        {0, 15},
        {3600000, 15},             /* 2.4 s: the 15 s minimum */
        {22499999, 15},            /* 14.999999 s */
        {22500000, 15},            /* 15 s: rounds to 15 s (<= 17.5 s) */
        {26250000, 15},            /* 17.5 s exactly */
        {26250002, 20},            /* just over 17.5 s */
        {43200000, 30},            /* 12h: 28.8 s */
        {67500000, 30},            /* 45 s exactly */
        {86400000, 60},            /* 24h: 57.6 s */
        {7 * 86400000ll, 300},     /* 403.2 s */
        {30 * 86400000ll, 1800},   /* 1728 s */
        {366 * 86400000ll, 21600}, /* 21081.6 s */
        {100 * 365 * 86400000ll, 2592000},
        {1000 * 365 * 86400000ll, 31536000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        int64_t got = ps_pyro_timeline_step(T0 * 1000, T0 * 1000 + cases[i].range_ms);
        if (got != cases[i].step_s)
            fail_msg("range %lld ms: step %lld, want %lld", (long long)cases[i].range_ms, (long long)got,
                     (long long)cases[i].step_s);
    }
    assert_int_equal(ps_pyro_timeline_step(T0 * 1000, T0 * 1000 - 5), 15); /* an empty range */
    assert_int_equal(ps_pyro_timeline_step(INT64_MIN / 2, INT64_MAX / 2), 31536000);
    assert_int_equal(ps_pyro_timeline_step(INT64_MIN, INT64_MAX), 31536000);
}

typedef struct fix {
    char *dir;
    ps_store_t *store;
    ps_reader_t *r;
    ps_arena_t a;
    ps_err_t err;
} fix_t;

static int setup(void **state)
{
    fix_t *f = calloc(1, sizeof(*f));
    f->store = ps_test_store_open("/tmp/ps_test_pyroscope_XXXXXX", &f->dir);
    ps_test_ingest(f->store, "go/cpu-01.pb.gz", "{job=\"r\",pyroscope_spy=\"gospy\"}", T0);
    ps_test_ingest(f->store, "go/cpu-02.pb.gz", "{job=\"r\",pyroscope_spy=\"gospy\"}", T0 + 15);
    ps_test_ingest(f->store, "go/cpu-03.pb.gz", "{job=\"r\",pyroscope_spy=\"gospy\"}", T0 + 16);
    ps_test_ingest(f->store, "go/cpu-04.pb.gz", "{job=\"s\",pyroscope_spy=\"gospy\"}", T0 + 30);
    ps_test_ingest(f->store, "go/cpu-05.pb.gz", "{job=\"s\",pyroscope_spy=\"other\"}", T0 + 45);
    ps_test_ingest(f->store, "go/heap-01.pb.gz", "{job=\"h\"}", T0 + 20);
    /* a float series (remote_write) whose name has the shape of a profile type id: never listed */
    ps_label_pair_t lp[3] = {{"__name__", "a:b:c:d:e", 8, 9}, {"instance", "float", 8, 5}, {"job", "r", 3, 1}};
    ps_labels_t ls = {3, lp, 0};
    ps_float_sample_t fs[1] = {{(T0 + 20) * 1000, 1.5}};
    ps_float_append_t fa = {.labels = &ls, .samples = fs, .nsamples = 1};
    ps_float_append_t *fas[1] = {&fa};
    if (ps_store_write(ps_test_writer(f->store), NULL, 0, fas, 1, NULL, 0, &f->err) != 0 || fa.status != 0 || fa.accepted != 1)
        fail_msg("float series: %s", f->err.msg);
    assert_int_equal(ps_reader_begin(f->store, &f->r, &f->err), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fix_t *f = *state;
    ps_reader_end(f->r);
    ps_arena_dispose(&f->a);
    ps_test_store_close(f->store, f->dir);
    free(f);
    return 0;
}

/* The series of sel (a Pyroscope query), its type resolved. */
static void select_sel(fix_t *f, const char *q, ps_selector_t *sel, ps_series_set_t *set)
{
    const char *type;
    assert_int_equal(ps_selector_parse(q, strlen(q), &f->a, sel, &f->err), 0);
    if (ps_query_pyro_type(f->r, sel, "query", &f->a, &type, &f->err) != 0)
        fail_msg("%s: %s", q, f->err.msg);
    assert_int_equal(ps_query_select(f->r, sel, INT64_MIN, INT64_MAX, 1000, &f->a, set, &f->err), 0);
}

static void test_timeline(void **state)
{
    fix_t *f = *state;
    ps_selector_t sel;
    ps_series_set_t set;
    select_sel(f, CPU "{}", &sel, &set);
    assert_int_equal(set.n, 3);
    ps_pyro_timeline_t tl;
    /* 60 s: 4 steps of 15 s: T0 | (T0, T0+15] | (T0+15, T0+30] | (T0+30, T0+45] */
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, T0 * 1000, (T0 + 60) * 1000, false, &f->a, &tl, &f->err), 0);
    assert_int_equal(tl.start_s, T0);
    assert_int_equal(tl.step_s, 15);
    assert_int_equal(tl.n, 4);
    uint64_t want[] = {2980000000ull, 2930000000ull, 2890000000ull + 2890000000ull, 2860000000ull};
    assert_memory_equal(tl.samples, want, 4 * sizeof(uint64_t));
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, T0 * 1000, (T0 + 45) * 1000, false, &f->a, &tl, &f->err), 0);
    assert_int_equal(tl.n, 3); /* T0+45 is in the step ending at until: left out */
    assert_memory_equal(tl.samples, want, 3 * sizeof(uint64_t));
    /* avg: each series' mean of its profiles in the step, the series summed (step 2 holds one
     * profile of job r and one of job s: two series, so both count whole) */
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, T0 * 1000, (T0 + 60) * 1000, true, &f->a, &tl, &f->err), 0);
    uint64_t avg[] = {2980000000ull, 2930000000ull, 2890000000ull + 2890000000ull, 2860000000ull};
    assert_memory_equal(tl.samples, avg, 4 * sizeof(uint64_t));
    /* two profiles of one series in one step: their mean. Job r alone over 19 h from T0 - 60 s:
     * 60 s steps, cpu-01 (T0) in step 1, cpu-02 (T0 + 15) and cpu-03 (T0 + 16) in step 2 */
    ps_series_set_t r1 = {0};
    for (uint32_t i = 0; i < set.n; i++)
        if (strcmp(ps_labels_value(&set.labels[i], "job"), "r") == 0)
            r1 = (ps_series_set_t){1, &set.sids[i], &set.labels[i]};
    assert_int_equal(r1.n, 1);
    int64_t from = (T0 - 60) * 1000, until = from + 19 * 3600 * 1000LL;
    assert_int_equal(ps_query_pyro_timeline(f->r, &r1, from, until, true, &f->a, &tl, &f->err), 0);
    assert_int_equal(tl.step_s, 60);
    uint64_t avg_r[] = {0, 2980000000ull, (2930000000ull + 2890000000ull) / 2, 0};
    assert_memory_equal(tl.samples, avg_r, 4 * sizeof(uint64_t));
    assert_int_equal(ps_query_pyro_timeline(f->r, &r1, from, until, false, &f->a, &tl, &f->err), 0);
    assert_int_equal(tl.samples[2], 2930000000ull + 2890000000ull);
    /* from in the middle of a second: steps counted from it, in ms */
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, T0 * 1000 + 500, (T0 + 60) * 1000 + 500, false, &f->a, &tl,
                                            &f->err),
                     0);
    assert_int_equal(tl.start_s, T0);
    assert_int_equal(tl.n, 4);
    /* T0 (before from) is out of the range: step 1 holds T0+15 alone */
    uint64_t want_mid[] = {0, 2930000000ull, 2890000000ull + 2890000000ull, 2860000000ull};
    assert_memory_equal(tl.samples, want_mid, 4 * sizeof(uint64_t));
    /* a range no caller should give: refused, not allocated */
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, INT64_MIN, INT64_MAX, false, &f->a, &tl, &f->err), PS_ETOOBIG);
    assert_string_equal(f->err.msg, "a timeline of 584942417 steps is too long");
    /* an empty range */
    assert_int_equal(ps_query_pyro_timeline(f->r, &set, T0 * 1000, T0 * 1000, false, &f->a, &tl, &f->err), 0);
    assert_int_equal(tl.n, 0);
    ps_selector_dispose(&sel);
}

static void test_common_label(void **state)
{
    fix_t *f = *state;
    ps_selector_t sel;
    ps_series_set_t set;
    select_sel(f, CPU "{job=\"r\"}", &sel, &set);
    assert_string_equal(ps_query_common_label(&set, "pyroscope_spy"), "gospy");
    assert_string_equal(ps_query_common_label(&set, "job"), "r");
    assert_null(ps_query_common_label(&set, "nope"));
    ps_selector_dispose(&sel);
    select_sel(f, CPU "{job=\"s\"}", &sel, &set);
    assert_int_equal(set.n, 2);
    assert_null(ps_query_common_label(&set, "pyroscope_spy"));
    ps_selector_dispose(&sel);
}

static void test_groups(void **state)
{
    fix_t *f = *state;
    ps_selector_t sel;
    ps_series_set_t set;
    select_sel(f, CPU "{}", &sel, &set);
    ps_pyro_group_t *g;
    uint32_t n;
    assert_int_equal(ps_query_pyro_groups(f->r, &set, "job", T0 * 1000, (T0 + 60) * 1000, false, &f->a, &g, &n, &f->err),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].key, "r");
    assert_string_equal(g[1].key, "s");
    uint64_t r[] = {2980000000ull, 2930000000ull, 2890000000ull, 0}, s2[] = {0, 0, 2890000000ull, 2860000000ull};
    assert_int_equal(g[0].tl.n, 4);
    assert_memory_equal(g[0].tl.samples, r, sizeof(r));
    assert_memory_equal(g[1].tl.samples, s2, sizeof(s2));
    /* by the spy: cpu-04 and cpu-05 (job "s") have different ones */
    assert_int_equal(ps_query_pyro_groups(f->r, &set, "pyroscope_spy", T0 * 1000, (T0 + 60) * 1000, false, &f->a, &g,
                                          &n, &f->err),
                     0);
    assert_int_equal(n, 2);
    assert_string_equal(g[0].key, "gospy");
    assert_string_equal(g[1].key, "other");
    /* by a label no series has: one group "*" */
    assert_int_equal(ps_query_pyro_groups(f->r, &set, "nope", T0 * 1000, (T0 + 60) * 1000, false, &f->a, &g, &n, &f->err),
                     0);
    assert_int_equal(n, 1);
    assert_string_equal(g[0].key, "*");
    uint64_t all[] = {2980000000ull, 2930000000ull, 2 * 2890000000ull, 2860000000ull};
    assert_memory_equal(g[0].tl.samples, all, sizeof(all));
    ps_series_set_t none = {0};
    assert_int_equal(ps_query_pyro_groups(f->r, &none, "job", T0 * 1000, (T0 + 60) * 1000, false, &f->a, &g, &n, &f->err),
                     0);
    assert_int_equal(n, 0);
    ps_selector_dispose(&sel);
}

static void test_groups_limit(void **state)
{
    (void)state;
    char *dir;
    ps_store_t *store = ps_test_store_open("/tmp/ps_test_pyroscope_XXXXXX", &dir);
    char labels[64];
    for (int i = 0; i <= PS_PYRO_MAX_GROUPS; i++) {
        snprintf(labels, sizeof(labels), "{job=\"g\",instance=\"i%03d\"}", i);
        ps_test_ingest(store, "go/threadcreate-01.pb.gz", labels, T0);
    }
    ps_reader_t *r;
    ps_err_t err;
    ps_arena_t a = PS_ARENA_INIT;
    assert_int_equal(ps_reader_begin(store, &r, &err), 0);
    ps_selector_t sel;
    ps_series_set_t set;
    assert_int_equal(ps_selector_parse("{job=\"g\"}", 9, &a, &sel, &err), 0);
    assert_int_equal(ps_query_select(r, &sel, INT64_MIN, INT64_MAX, 10000, &a, &set, &err), 0);
    assert_int_equal(set.n, PS_PYRO_MAX_GROUPS + 1);
    ps_pyro_group_t *g;
    uint32_t n;
    assert_int_equal(ps_query_pyro_groups(r, &set, "instance", T0 * 1000, (T0 + 60) * 1000, false, &a, &g, &n, &err),
                     PS_ELIMIT);
    assert_string_equal(err.msg, "invalid parameter \"groupBy\": \"instance\" makes 513 groups, more than the 512 "
                                 "allowed; narrow the query");
    /* 512 groups are fine */
    set.n--;
    assert_int_equal(ps_query_pyro_groups(r, &set, "instance", T0 * 1000, (T0 + 60) * 1000, false, &a, &g, &n, &err), 0);
    assert_int_equal(n, PS_PYRO_MAX_GROUPS);
    assert_string_equal(g[511].key, "i511");
    assert_int_equal(g[511].tl.samples[0], 9); /* threadcreate-01: 9 threads, at T0: step 0 */
    ps_selector_dispose(&sel);
    ps_reader_end(r);
    ps_arena_dispose(&a);
    ps_test_store_close(store, dir);
}

static void resolve(fix_t *f, const char *q, int want_ret, const char *want)
{
    ps_selector_t sel;
    const char *type = NULL;
    ps_err_clear(&f->err);
    assert_int_equal(ps_selector_parse(q, strlen(q), &f->a, &sel, &f->err), 0);
    int ret = ps_query_pyro_type(f->r, &sel, "query", &f->a, &type, &f->err);
    if (ret != want_ret)
        fail_msg("%s: %d (%s), want %d", q, ret, f->err.msg, want_ret);
    assert_string_equal(ret == 0 ? type : f->err.msg, want);
    ps_selector_dispose(&sel);
}

static void test_type(void **state)
{
    fix_t *f = *state;
    resolve(f, CPU "{}", 0, CPU ":delta");
    resolve(f, CPU ":delta{}", 0, CPU ":delta");
    resolve(f, "memory:inuse_space:bytes:space:bytes{}", 0, "memory:inuse_space:bytes:space:bytes");
    resolve(f, "a:b:c:d:e{}", 0, "a:b:c:d:e"); /* never stored: kept, the selection says so */
    resolve(f, "{job=\"r\"}", PS_EINVAL,
            "invalid parameter \"query\": the query must contain a profile-type selection, e.g. "
            "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"app\"}");
    resolve(f, "{__name__!=\"x\",job=\"r\"}", PS_EINVAL,
            "invalid parameter \"query\": the profile type must be selected with \"=\" (its id before the braces), "
            "not a negation or a regex");
    resolve(f, "process_cpu{}", PS_EINVAL,
            "invalid parameter \"query\": \"process_cpu\" is not a profile type id: expected "
            "<name>:<sample-type>:<sample-unit>:<period-type>:<period-unit>[:delta], e.g. "
            "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
    resolve(f, "a:b:c:d:e:cumulative{}", PS_EINVAL,
            "invalid parameter \"query\": \"a:b:c:d:e:cumulative\" is not a profile type id: expected "
            "<name>:<sample-type>:<sample-unit>:<period-type>:<period-unit>[:delta], e.g. "
            "process_cpu:cpu:nanoseconds:cpu:nanoseconds");
    /* the legacy form, before parsing (a dot is no selector syntax) */
    ps_err_clear(&f->err);
    assert_int_equal(ps_query_pyro_legacy("myapp.cpu{env=\"x\"}", 19, "leftQuery", &f->err), PS_EINVAL);
    assert_string_equal(f->err.msg,
                        "invalid parameter \"leftQuery\": \"myapp.cpu\" is the legacy <app>.<type> form, which is not "
                        "supported: give a profile type id and select the app by its label, e.g. "
                        "process_cpu:cpu:nanoseconds:cpu:nanoseconds{service_name=\"myapp\"}");
    assert_int_equal(ps_query_pyro_legacy(CPU "{a=\"x.y\"}", strlen(CPU) + 9, "query", &f->err), 0);
    assert_int_equal(ps_query_pyro_legacy("{a=\"x.y\"}", 9, "query", &f->err), 0);
    assert_int_equal(ps_query_pyro_legacy(".cpu", 4, "query", &f->err), PS_EINVAL);
}

static void assert_list(const ps_strlist_t *l, const char *const *want, uint32_t n)
{
    if (l->n != n)
        fail_msg("%u values, want %u (first: %s)", l->n, n, l->n ? l->v[0] : "-");
    for (uint32_t i = 0; i < n; i++)
        assert_string_equal(l->v[i], want[i]);
}

static void test_labels(void **state)
{
    fix_t *f = *state;
    ps_strlist_t l;
    assert_int_equal(ps_query_pyro_labels(f->r, "__name__", NULL, INT64_MIN, INT64_MAX, &f->a, &l, &f->err), 0);
    const char *names[] = {"memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
                           "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes", CPU,
                           "process_cpu:samples:count:cpu:nanoseconds"};
    assert_list(&l, names, 6);
    assert_int_equal(ps_query_pyro_labels(f->r, NULL, NULL, INT64_MIN, INT64_MAX, &f->a, &l, &f->err), 0);
    const char *labels[] = {"__name__", "job", "pyroscope_spy"};
    assert_list(&l, labels, 3);
    /* in a range: T0+30 .. T0+45 has job="s" only */
    assert_int_equal(ps_query_pyro_labels(f->r, "job", NULL, (T0 + 30) * PS_NS_PER_S, (T0 + 45) * PS_NS_PER_S,
                                          &f->a, &l, &f->err),
                     0);
    const char *s[] = {"s"};
    assert_list(&l, s, 1);
    /* a selector without a profile type */
    ps_selector_t sel;
    assert_int_equal(ps_selector_parse("{pyroscope_spy=\"gospy\"}", 23, &f->a, &sel, &f->err), 0);
    assert_int_equal(ps_query_pyro_labels(f->r, "job", &sel, INT64_MIN, INT64_MAX, &f->a, &l, &f->err), 0);
    const char *rs[] = {"r", "s"};
    assert_list(&l, rs, 2);
    ps_selector_dispose(&sel);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_step),
        cmocka_unit_test_setup_teardown(test_timeline, setup, teardown),
        cmocka_unit_test_setup_teardown(test_common_label, setup, teardown),
        cmocka_unit_test_setup_teardown(test_groups, setup, teardown),
        cmocka_unit_test(test_groups_limit),
        cmocka_unit_test_setup_teardown(test_type, setup, teardown),
        cmocka_unit_test_setup_teardown(test_labels, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
