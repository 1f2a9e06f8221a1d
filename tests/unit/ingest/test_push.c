/*
 * test_push.c - unit tests for src/ingest/push.c: a Pyroscope push becomes the same appends as the
 * native push of the same bytes (type ids, labels, timestamps), appends sorted by time, dotted
 * names rewritten, __-names and empty values dropped, and each label rule's exact message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"

#include "ingest/ingest.h"

typedef struct fx {
    uint8_t *data;
    size_t len;
} fx_t;

static fx_t load(const char *rel)
{
    fx_t f;
    f.data = ps_test_read_fixture(rel, &f.len);
    assert_non_null(f.data);
    return f;
}

#define L(n, v) {(n), (v), sizeof(n) - 1, sizeof(v) - 1}

static int prepare1(ps_pyro_label_t *ls, size_t nls, const fx_t *raws, size_t nraws, ps_arena_t *a, ps_append_t ***apps,
                    size_t *n, ps_err_t *err)
{
    ps_pyro_sample_t *smp = ps_arena_calloc(a, nraws + 1, sizeof(*smp));
    for (size_t i = 0; i < nraws; i++) {
        smp[i].raw = raws[i].data;
        smp[i].len = raws[i].len;
        smp[i].id = "";
    }
    ps_pyro_series_t s = {ls, nls, smp, nraws};
    ps_pyro_push_t req = {&s, 1};
    ps_err_clear(err);
    return ps_ingest_push_prepare(&req, NULL, NULL, a, apps, n, err);
}

static void test_same_as_native(void **state)
{
    (void)state;
    fx_t cpu = load("go/cpu-01.pb.gz");
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_label_t ls[] = {L("service_name", "app"), L("__name__", "process_cpu"), L("k8s.pod.name", "p-1"),
                            L("__session_id__", "42"), L("empty", "")};
    ps_append_t **apps;
    size_t n;
    assert_int_equal(prepare1(ls, 5, &cpu, 1, &a, &apps, &n, &err), 0);
    assert_int_equal(n, 1);

    ps_append_t native;
    ps_ingest_params_t ip = {0};
    ip.name = "process_cpu";
    ip.name_len = 11;
    ip.labels = "{service_name=\"app\",k8s_pod_name=\"p-1\"}";
    ip.labels_len = strlen(ip.labels);
    ip.delta = -1;
    assert_int_equal(ps_ingest_prepare(cpu.data, cpu.len, &ip, NULL, &a, &native, &err), 0);
    assert_int_equal(apps[0]->nseries, 2);
    assert_int_equal(apps[0]->nseries, native.nseries);
    assert_int_equal(apps[0]->ts, 1796022364647593488LL);
    assert_int_equal(apps[0]->ts, native.ts);
    for (uint32_t i = 0; i < native.nseries; i++) {
        assert_int_equal(ps_labels_cmp(&apps[0]->series_labels[i], &native.series_labels[i]), 0);
        assert_int_equal(apps[0]->type_index[i], native.type_index[i]);
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(&apps[0]->series_labels[1], &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "{__name__=\"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\", "
                                        "k8s_pod_name=\"p-1\", service_name=\"app\"}");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    free(cpu.data);
}

/* RawSample.ID: a UUID (either form) is the append's client profile id; "" or anything else: none */
static void test_profile_id(void **state)
{
    (void)state;
    fx_t cpu = load("go/cpu-01.pb.gz");
    const char *ids[] = {"7c9e6679-7425-40de-944b-e07fc1f90ae7", "7C9E6679742540DE944BE07FC1F90AE7", "",
                         "7c9e6679-7425-40de-944b-e07fc1f90ae", "not a uuid"};
    for (int k = 0; k < 5; k++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_err_t err;
        ps_pyro_label_t ls[] = {L("service_name", "app"), L("__name__", "process_cpu")};
        ps_pyro_sample_t smp = {cpu.data, cpu.len, ids[k]};
        ps_pyro_series_t s = {ls, 2, &smp, 1};
        ps_pyro_push_t req = {&s, 1};
        ps_append_t **apps;
        size_t n;
        assert_int_equal(ps_ingest_push_prepare(&req, NULL, NULL, &a, &apps, &n, &err), 0);
        assert_int_equal(n, 1);
        if (k < 2) {
            static const uint8_t want[16] = {0x7c, 0x9e, 0x66, 0x79, 0x74, 0x25, 0x40, 0xde,
                                             0x94, 0x4b, 0xe0, 0x7f, 0xc1, 0xf9, 0x0a, 0xe7};
            assert_non_null(apps[0]->uuid);
            assert_memory_equal(apps[0]->uuid, want, 16);
        } else {
            assert_null(apps[0]->uuid);
        }
        ps_arena_dispose(&a);
    }
    free(cpu.data);
}

/* __delta__="false" (Pyroscope's "already a delta"): the counting types get ":delta", as the
 * scraper names its deltas; the gauges (inuse_*) stay as they are; any other value: the native rule. */
static void test_delta_false(void **state)
{
    (void)state;
    fx_t heap = load("go/heap-01.pb.gz");
    const char *value[] = {"false", "true"};
    const char *want[2][4] = {{"memory:alloc_objects:count:space:bytes:delta", "memory:alloc_space:bytes:space:bytes:delta",
                               "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"},
                              {"memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",
                               "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"}};
    for (int k = 0; k < 2; k++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_err_t err;
        ps_pyro_label_t ls[] = {L("service_name", "app"), L("__name__", "memory"), {"__delta__", value[k], 9, strlen(value[k])}};
        ps_append_t **apps;
        size_t n;
        assert_int_equal(prepare1(ls, 3, &heap, 1, &a, &apps, &n, &err), 0);
        assert_int_equal(n, 1);
        assert_int_equal(apps[0]->nseries, 4);
        for (uint32_t i = 0; i < 4; i++) {
            assert_string_equal(ps_labels_value(&apps[0]->series_labels[i], "__name__"), want[k][i]);
            assert_null(ps_labels_value(&apps[0]->series_labels[i], "__delta__"));
        }
        ps_arena_dispose(&a);
    }
    /* a profile that is a delta by name keeps every type a delta */
    fx_t cpu = load("go/cpu-01.pb.gz");
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_label_t ls[] = {L("service_name", "app"), L("__name__", "process_cpu"), L("__delta__", "false")};
    ps_append_t **apps;
    size_t n;
    assert_int_equal(prepare1(ls, 3, &cpu, 1, &a, &apps, &n, &err), 0);
    assert_string_equal(ps_labels_value(&apps[0]->series_labels[0], "__name__"), "process_cpu:samples:count:cpu:nanoseconds:delta");
    assert_string_equal(ps_labels_value(&apps[0]->series_labels[1], "__name__"), "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
    ps_arena_dispose(&a);
    free(cpu.data);
    free(heap.data);
}

static void test_sorted_by_time(void **state)
{
    (void)state;
    fx_t raws[3] = {load("go/cpu-03.pb.gz"), load("go/cpu-01.pb.gz"), load("go/cpu-02.pb.gz")};
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_label_t ls[] = {L("__name__", "process_cpu"), L("service_name", "app")};
    ps_append_t **apps;
    size_t n;
    assert_int_equal(prepare1(ls, 2, raws, 3, &a, &apps, &n, &err), 0);
    assert_int_equal(n, 3);
    assert_true(apps[0]->ts < apps[1]->ts && apps[1]->ts < apps[2]->ts);
    assert_int_equal(apps[0]->ts, 1796022364647593488LL); /* cpu-01 */
    ps_arena_dispose(&a);
    for (int i = 0; i < 3; i++)
        free(raws[i].data);
}

static void expect(ps_pyro_label_t *ls, size_t nls, const char *msg)
{
    fx_t cpu = load("go/cpu-01.pb.gz");
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_append_t **apps;
    size_t n;
    assert_int_equal(prepare1(ls, nls, &cpu, 1, &a, &apps, &n, &err), PS_EINVAL);
    assert_string_equal(err.msg, msg);
    ps_arena_dispose(&a);
    free(cpu.data);
}

static void test_label_errors(void **state)
{
    (void)state;
    expect(NULL, 0, "series[0]: error at least one label pair is required per profile");
    ps_pyro_label_t a[] = {L("service_name", "app")};
    expect(a, 1, "series[0]: invalid labels '{service_name=\"app\"}' with error: invalid metric name");
    ps_pyro_label_t b[] = {L("__name__", "process_cpu")};
    expect(b, 1, "series[0]: error service_name label is required");
    ps_pyro_label_t c[] = {L("__name__", "process_cpu"), L("service_name", "app"), L("a.b", "1"), L("a_b", "2")};
    expect(c, 4,
           "series[0]: profile with labels '{__name__=\"process_cpu\", a.b=\"1\", a_b=\"2\", service_name=\"app\"}' "
           "has duplicate label name: 'a_b'");
    ps_pyro_label_t d[] = {L("__name__", "process_cpu"), L("service_name", "app"), L("x-y", "1")};
    expect(d, 3, "series[0]: invalid labels '{__name__=\"process_cpu\", service_name=\"app\", x-y=\"1\"}' with error: "
                 "invalid label name 'x-y'");
    ps_pyro_label_t e[] = {L("__name__", "memory"), L("service_name", "app")};
    fx_t cpu = load("go/cpu-01.pb.gz");
    ps_arena_t ar = PS_ARENA_INIT;
    ps_err_t err, nerr;
    ps_append_t **apps;
    size_t n;
    assert_int_equal(prepare1(e, 2, &cpu, 1, &ar, &apps, &n, &err), PS_EINVAL);
    ps_ingest_params_t ip = {0};
    ip.name = "memory";
    ip.name_len = 6;
    ip.delta = -1;
    ps_append_t native;
    assert_int_equal(ps_ingest_prepare(cpu.data, cpu.len, &ip, NULL, &ar, &native, &nerr), PS_EINVAL);
    char want[600];
    snprintf(want, sizeof(want), "series[0].samples[0]: %s", nerr.msg);
    assert_string_equal(err.msg, want);
    ps_arena_dispose(&ar);
    free(cpu.data);
}

/* A request decoded by helpers (ps_par_for) gives what the caller alone gives: the same appends
 * in the same order, and for a bad request the same first error (by series, then sample). */
static int prepare_many(ps_pyro_series_t *ss, size_t nss, const ps_par_t *par, ps_arena_t *a, ps_append_t ***apps,
                        size_t *n, ps_err_t *err)
{
    ps_pyro_push_t req = {ss, nss};
    ps_err_clear(err);
    return ps_ingest_push_prepare(&req, NULL, par, a, apps, n, err);
}

static void test_parallel_same_answer(void **state)
{
    (void)state;
    const char *names[5] = {"go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/cpu-03.pb.gz", "go/cpu-04.pb.gz",
                            "go/cpu-05.pb.gz"};
    fx_t raws[5];
    for (int i = 0; i < 5; i++)
        raws[i] = load(names[i]);
    static const uint8_t junk[] = "not a profile at all";
    ps_pyro_label_t l0[] = {L("__name__", "process_cpu"), L("service_name", "a")};
    ps_pyro_label_t l1[] = {L("__name__", "process_cpu"), L("service_name", "b")};
    ps_pyro_label_t l2[] = {L("__name__", "process_cpu"), L("service_name", "c")};
    ps_pyro_label_t bad[] = {L("service_name", "d")};
    enum { NS = 12 };
    ps_pyro_sample_t smp[3][NS];
    for (int s = 0; s < 3; s++)
        for (int j = 0; j < NS; j++)
            smp[s][j] = (ps_pyro_sample_t){.raw = raws[(s + j) % 5].data, .len = raws[(s + j) % 5].len, .id = ""};
    ps_pyro_series_t ss[3] = {{l0, 2, smp[0], NS}, {l1, 2, smp[1], NS}, {l2, 2, smp[2], NS}};
    ps_par_t par = {ps_test_spawn, NULL, 4};
    for (int round = 0; round < 6; round++) {
        /* round 0-1: good; 2-3: series 1 sample 7 and series 2 sample 2 are junk; 4-5: also series 1's
         * labels are bad (the label error comes first); 5: series 2's labels only */
        if (round == 2) {
            smp[1][7] = (ps_pyro_sample_t){.raw = junk, .len = sizeof(junk) - 1, .id = ""};
            smp[2][2] = smp[1][7];
        }
        if (round == 4)
            ss[1].labels = bad, ss[1].nlabels = 1;
        if (round == 5) {
            ss[1].labels = l1, ss[1].nlabels = 2;
            smp[1][7] = smp[1][6];
            smp[2][2] = smp[2][1];
            ss[2].labels = bad, ss[2].nlabels = 1;
        }
        ps_arena_t a = PS_ARENA_INIT, b = PS_ARENA_INIT;
        ps_err_t ea, eb;
        ps_append_t **pa = NULL, **pb = NULL;
        size_t na = 0, nb = 0;
        int ra = prepare_many(ss, 3, NULL, &a, &pa, &na, &ea);
        int rb = prepare_many(ss, 3, &par, &b, &pb, &nb, &eb);
        assert_int_equal(ra, rb);
        assert_string_equal(ea.msg, eb.msg);
        if (round < 2) {
            assert_int_equal(ra, 0);
            assert_int_equal(na, 3 * NS);
            assert_int_equal(nb, na);
            for (size_t i = 0; i < na; i++) {
                assert_int_equal(pa[i]->ts, pb[i]->ts);
                assert_int_equal(pa[i]->nseries, pb[i]->nseries);
                assert_int_equal(pa[i]->profile->nsamples, pb[i]->profile->nsamples);
                assert_int_equal(ps_labels_cmp(&pa[i]->series_labels[0], &pb[i]->series_labels[0]), 0);
                assert_ptr_equal(pa[i]->raw, pb[i]->raw);
            }
        } else {
            assert_int_equal(ra, PS_EINVAL);
            const char *want = round < 4 ? "series[1].samples[7]: " : round == 4 ? "series[1]: " : "series[2]: ";
            assert_memory_equal(ea.msg, want, strlen(want));
        }
        ps_arena_dispose(&a);
        ps_arena_dispose(&b);
    }
    ps_test_spawn_wait();
    for (int i = 0; i < 5; i++)
        free(raws[i].data);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_same_as_native),
        cmocka_unit_test(test_delta_false),
        cmocka_unit_test(test_profile_id),
        cmocka_unit_test(test_sorted_by_time),
        cmocka_unit_test(test_label_errors),
        cmocka_unit_test(test_parallel_same_answer),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
