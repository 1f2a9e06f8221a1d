/*
 * test_otlp.c - unit tests for src/ingest/otlp.c on requests built as our structs (proto/otlp.h):
 * one append per service (sample attribute > resource attribute > unknown_service:<exe>), CPU
 * samples to nanoseconds, labels sanitised, the build id onto the mapping, mapping flags,
 * span/trace labels, the dictionary's index checks and the refusals of one profile with their
 * exact messages; and the codec's round trip of the response.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest/ingest.h"

/* strings: 0 "", 1 samples, 2 count, 3 cpu, 4 nanoseconds, 5 main, 6 work, 7 /lib/libc.so,
 * 8 process.executable.build_id.gnu, 9 service.name, 10 worker, 11 thread.name, 12 t1, 13 abcd */
static const char *strings[] = {"",      "samples", "count",        "cpu",
                                "nanoseconds", "main", "work", "/lib/libc.so",
                                "process.executable.build_id.gnu", "service.name", "worker", "thread.name",
                                "t1",    "abcd"};

typedef struct req {
    ps_otlp_request_t r;
    ps_otlp_mapping_t maps[2];
    int32_t map_attrs[1];
    ps_otlp_location_t locs[4];
    ps_otlp_line_t lines[2];
    ps_otlp_function_t fns[3];
    ps_otlp_attr_t attrs[4];
    ps_otlp_stack_t stacks[3];
    int32_t st1[2], st2[3];
    ps_otlp_link_t links[2];
    uint8_t trace[16], span[8];
    ps_otlp_sample_t samples[3];
    int32_t s2_attrs[1], s3_attrs[2];
    int64_t v1[1], v2[1], v3[2];
    ps_otlp_profile_t prof;
    ps_otlp_scope_t scope;
    ps_otlp_resource_t res;
    ps_otlp_kv_t res_attrs[3];
} req_t;

static void build(req_t *q)
{
    memset(q, 0, sizeof(*q));
    ps_otlp_request_t *r = &q->r;
    r->has_dictionary = true;
    r->strings = strings;
    r->nstrings = sizeof(strings) / sizeof(strings[0]);
    q->map_attrs[0] = 1;
    q->maps[1] = (ps_otlp_mapping_t){0x1000, 0x9000, 0x100, 7, q->map_attrs, 1};
    r->mappings = q->maps;
    r->nmappings = 2;
    q->attrs[1] = (ps_otlp_attr_t){8, {PS_OTLP_STRINDEX, NULL, 0, 13}};
    q->attrs[2] = (ps_otlp_attr_t){9, {PS_OTLP_STR, "worker", 6, 0}};
    q->attrs[3] = (ps_otlp_attr_t){11, {PS_OTLP_STR, "t1", 2, 0}};
    r->attrs = q->attrs;
    r->nattrs = 4;
    q->fns[1] = (ps_otlp_function_t){5, 0, 0, 0};
    q->fns[2] = (ps_otlp_function_t){6, 0, 0, 0};
    r->functions = q->fns;
    r->nfunctions = 3;
    q->lines[0] = (ps_otlp_line_t){1, 10, 0};
    q->lines[1] = (ps_otlp_line_t){2, 20, 0};
    q->locs[1] = (ps_otlp_location_t){0, 0, &q->lines[0], 1}; /* main */
    q->locs[2] = (ps_otlp_location_t){0, 0, &q->lines[1], 1}; /* work */
    q->locs[3] = (ps_otlp_location_t){1, 0x1234, NULL, 0};    /* libc+0x1234 */
    r->locations = q->locs;
    r->nlocations = 4;
    q->st1[0] = 2, q->st1[1] = 1;                  /* work, main */
    q->st2[0] = 3, q->st2[1] = 2, q->st2[2] = 1;   /* libc, work, main */
    q->stacks[1] = (ps_otlp_stack_t){q->st1, 2};
    q->stacks[2] = (ps_otlp_stack_t){q->st2, 3};
    r->stacks = q->stacks;
    r->nstacks = 3;
    for (int i = 0; i < 16; i++)
        q->trace[i] = (uint8_t)(i + 1);
    for (int i = 0; i < 8; i++)
        q->span[i] = (uint8_t)(0xa0 + i);
    q->links[1] = (ps_otlp_link_t){q->trace, q->span, 16, 8};
    r->links = q->links;
    r->nlinks = 2;
    q->v1[0] = 3, q->v2[0] = 2, q->v3[0] = 5;
    q->s2_attrs[0] = 3;
    q->s3_attrs[0] = 2, q->s3_attrs[1] = 3;
    q->samples[0] = (ps_otlp_sample_t){1, 0, NULL, 0, q->v1, 1, 0};
    q->samples[1] = (ps_otlp_sample_t){2, 1, q->s2_attrs, 1, q->v2, 1, 0};
    q->samples[2] = (ps_otlp_sample_t){1, 0, q->s3_attrs, 2, q->v3, 1, 0};
    q->prof = (ps_otlp_profile_t){true, true, 1, 2, 3, 4, 1000, 5000000000ull, 0, q->samples, 3, NULL, 0};
    q->res_attrs[0] = (ps_otlp_kv_t){"service.name", 12, 0, {PS_OTLP_STR, "api", 3, 0}};
    q->res_attrs[1] = (ps_otlp_kv_t){"k8s.pod.name", 12, 0, {PS_OTLP_STR, "p-1", 3, 0}};
    q->res_attrs[2] = (ps_otlp_kv_t){"9lives", 6, 0, {PS_OTLP_INT, NULL, 0, 9}};
    q->scope = (ps_otlp_scope_t){NULL, 0, &q->prof, 1};
    q->res = (ps_otlp_resource_t){q->res_attrs, 3, &q->scope, 1};
    r->resources = &q->res;
    r->nresources = 1;
}

static const char *label(const ps_labels_t *ls, const char *name)
{
    const ps_label_pair_t *p = ps_labels_get(ls, name);
    return p != NULL ? p->value : NULL;
}

static void test_services_and_samples(void **state)
{
    (void)state;
    req_t q;
    build(&q);
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_otlp_result_t res;
    ps_err_t err;
    assert_int_equal(ps_ingest_otlp_prepare(&q.r, &lim, &a, &res, &err), 0);
    assert_int_equal(res.rejected, 0);
    assert_int_equal(res.napps, 2);
    const ps_append_t *api = NULL, *worker = NULL;
    for (size_t i = 0; i < 2; i++) {
        const ps_append_t *app = res.apps[i].app;
        assert_int_equal(app->nseries, 1);
        const char *svc = label(&app->series_labels[0], "service_name");
        if (strcmp(svc, "api") == 0)
            api = app;
        else if (strcmp(svc, "worker") == 0)
            worker = app;
    }
    assert_non_null(api);
    assert_non_null(worker);
    assert_string_equal(label(&api->series_labels[0], "__name__"), "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
    assert_string_equal(label(&api->series_labels[0], "k8s_pod_name"), "p-1");
    assert_string_equal(label(&api->series_labels[0], "_9lives"), "9");
    assert_int_equal(api->series_labels[0].n, 4);
    assert_int_equal(api->ts, 5000000000);
    const ps_profile_t *p = api->profile;
    assert_int_equal(p->nsamples, 2);
    assert_int_equal(p->samples[0].values[0], 3000); /* times the period */
    assert_int_equal(p->samples[1].values[0], 2000);
    assert_int_equal(p->samples[1].nlocs, 3);
    const ps_location_t *l = &p->locations[p->samples[1].locs[0] - 1];
    assert_int_equal(l->address, 0x1234);
    assert_int_equal(l->nlines, 0);
    const ps_mapping_t *m = &p->mappings[l->mapping - 1];
    assert_int_equal(m->memory_start, 0x1000);
    assert_int_equal(m->file_offset, 0x100);
    assert_int_equal(m->flags, 0);
    assert_memory_equal(ps_profile_str(p, m->filename).ptr, "/lib/libc.so", 12);
    assert_memory_equal(ps_profile_str(p, m->build_id).ptr, "abcd", 4);
    /* sample 2's labels: thread.name, span_id, trace_id */
    assert_int_equal(p->samples[1].nlabels, 3);
    assert_memory_equal(ps_profile_str(p, p->samples[1].labels[1].key).ptr, "span_id", 7);
    assert_memory_equal(ps_profile_str(p, p->samples[1].labels[1].str).ptr, "a0a1a2a3a4a5a6a7", 16);
    assert_memory_equal(ps_profile_str(p, p->samples[1].labels[2].str).ptr, "0102030405060708090a0b0c0d0e0f10", 32);
    /* worker: its one sample, service.name not a pprof label */
    assert_int_equal(worker->profile->nsamples, 1);
    assert_int_equal(worker->profile->samples[0].values[0], 5000);
    assert_int_equal(worker->profile->samples[0].nlabels, 1);
    ps_arena_dispose(&a);
}

static void expect_reject(req_t *q, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_otlp_result_t res;
    ps_err_t err;
    assert_int_equal(ps_ingest_otlp_prepare(&q->r, &lim, &a, &res, &err), 0);
    assert_int_equal(res.rejected, 1);
    assert_int_equal(res.napps, 0);
    assert_string_equal(res.msg, msg);
    ps_arena_dispose(&a);
}

static void expect_fail(req_t *q, int code, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_otlp_result_t res;
    ps_err_t err;
    assert_int_equal(ps_ingest_otlp_prepare(&q->r, &lim, &a, &res, &err), code);
    assert_string_equal(err.msg, msg);
    ps_arena_dispose(&a);
}

static void test_refusals(void **state)
{
    (void)state;
    req_t q;
    build(&q);
    q.samples[2].nvalues = 2;
    expect_reject(&q, "resource_profiles[0].scope_profiles[0].profiles[0]: samples[2].values: 2 values, expected 1 "
                      "(the profile has one sample type)");
    build(&q);
    q.samples[1].stack = 3;
    expect_reject(&q, "resource_profiles[0].scope_profiles[0].profiles[0]: samples[1].stack_index: 3 out of range "
                      "(stack_table has 3 entries)");
    build(&q);
    q.samples[0].link = -1;
    expect_reject(&q, "resource_profiles[0].scope_profiles[0].profiles[0]: samples[0].link_index: -1 out of range "
                      "(link_table has 2 entries)");
    build(&q);
    q.prof.has_sample_type = false;
    expect_reject(&q, "resource_profiles[0].scope_profiles[0].profiles[0]: sample_type is missing");
    build(&q);
    q.st2[1] = 4;
    expect_fail(&q, PS_EINVAL,
                "dictionary.stack_table[2].location_indices[1]: 4 out of range (location_table has 4 entries)");
    build(&q);
    q.locs[3].mapping = 2;
    expect_fail(&q, PS_EINVAL, "dictionary.location_table[3].mapping_index: 2 out of range (mapping_table has 2 entries)");
    build(&q);
    q.lines[1].function = 3;
    expect_fail(&q, PS_EINVAL,
                "dictionary.location_table[2].lines[0].function_index: 3 out of range (function_table has 3 entries)");
    build(&q);
    q.r.has_dictionary = false;
    expect_fail(&q, PS_EINVAL, "dictionary: missing (the request holds 1 profiles)");
}

static void test_fallback_service_and_offcpu(void **state)
{
    (void)state;
    req_t q;
    build(&q);
    q.res_attrs[0] = (ps_otlp_kv_t){"process.executable.name", 23, 0, {PS_OTLP_STR, "/bin/x", 6, 0}};
    q.samples[2].nattrs = 0;
    /* off_cpu:nanoseconds without a period: values summed */
    strings[1] = "off_cpu";
    q.prof.type = 1, q.prof.unit = 4, q.prof.has_period_type = false, q.prof.period = 0;
    q.samples[2].nvalues = 2;
    q.v3[1] = 7;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_otlp_result_t res;
    ps_err_t err;
    int rc = ps_ingest_otlp_prepare(&q.r, &lim, &a, &res, &err);
    strings[1] = "samples";
    assert_int_equal(rc, 0);
    assert_int_equal(res.napps, 1);
    const ps_append_t *app = res.apps[0].app;
    assert_string_equal(label(&app->series_labels[0], "service_name"), "unknown_service:/bin/x");
    assert_string_equal(label(&app->series_labels[0], "__name__"), "off_cpu:off_cpu:nanoseconds:off_cpu:nanoseconds");
    assert_int_equal(app->profile->nsamples, 3);
    assert_int_equal(app->profile->samples[2].values[0], 12);
    ps_arena_dispose(&a);
}

static void test_response_codec(void **state)
{
    (void)state;
    ps_buf_t b = PS_BUF_INIT;
    ps_otlp_response(PS_OTLP_JSON, 0, NULL, &b);
    assert_int_equal(b.len, 2);
    assert_memory_equal(b.data, "{}", 2);
    ps_buf_reset(&b);
    ps_otlp_response(PS_OTLP_JSON, 2, "x: y", &b);
    const char *want = "{\"partialSuccess\":{\"rejectedProfiles\":\"2\",\"errorMessage\":\"x: y\"}}";
    assert_int_equal(b.len, strlen(want));
    assert_memory_equal(b.data, want, b.len);
    ps_buf_reset(&b);
    ps_otlp_response(PS_OTLP_PROTO, 0, NULL, &b);
    assert_int_equal(b.len, 0);
    ps_otlp_status(PS_OTLP_PROTO, 3, "bad", &b);
    const uint8_t st[] = {0x08, 0x03, 0x12, 0x03, 'b', 'a', 'd'};
    assert_int_equal(b.len, sizeof(st));
    assert_memory_equal(b.data, st, sizeof(st));
    ps_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_services_and_samples),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_fallback_service_and_offcpu),
        cmocka_unit_test(test_response_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
