/*
 * test_ingest.c - preparing a push (src/ingest/ingest.c): the name inferred for every fixture in
 * tests/testdata/pprof, the rule for names that contradict the sample types, the body checks
 * (multipart, text), time parameter forms, labels, the series built per sample type with exact
 * __name__ values, delta modes, the result JSON.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include <jansson.h>

#include "core/timeutil.h"
#include "ingest/ingest.h"



static void decode(const char *rel, ps_arena_t *a, ps_profile_t *p)
{
    size_t n;
    uint8_t *b = ps_test_read_fixture(rel, &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    memset(p, 0, sizeof(*p));
    if (ps_pprof_decode(b, n, &lim, a, p, &err) != 0)
        fail_msg("%s: %s", rel, err.msg);
    free(b);
}

/* Runs ps_ingest_prepare on a fixture; returns its code, app and err filled. */
static int prepare(const char *rel, const ps_ingest_params_t *ip, ps_arena_t *a, ps_append_t *app, ps_err_t *err)
{
    size_t n;
    uint8_t *b = ps_test_read_fixture(rel, &n);
    uint8_t *copy = ps_arena_alloc(a, n); /* the app may refer to the body */
    memcpy(copy, b, n);
    free(b);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_clear(err);
    return ps_ingest_prepare(copy, n, ip, &lim, a, app, err);
}

static ps_ingest_params_t params(const char *name, const char *labels, const char *time, int delta)
{
    ps_ingest_params_t ip = {0};
    ps_test_setstr(&ip.name, &ip.name_len, name);
    ps_test_setstr(&ip.labels, &ip.labels_len, labels);
    ps_test_setstr(&ip.time, &ip.time_len, time);
    ip.delta = delta;
    return ip;
}

static const char *series_name(const ps_append_t *app, uint32_t i)
{
    const ps_label_pair_t *nm = ps_labels_get(&app->series_labels[i], "__name__");
    assert_non_null(nm);
    assert_int_equal(strlen(nm->value), nm->vlen);
    return nm->value;
}

/* ---- every fixture: inferred name and the series built, in sample type order ---- */

#define CPU_GO "process_cpu:samples:count:cpu:nanoseconds:delta", "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
#define HEAP_GO                                                                                                        \
    "memory:alloc_objects:count:space:bytes", "memory:alloc_space:bytes:space:bytes",                                  \
        "memory:inuse_objects:count:space:bytes", "memory:inuse_space:bytes:space:bytes"

static const struct fixture {
    const char *file;
    const char *inferred; /* NULL: cannot be inferred (block, mutex) */
    const char *name;     /* name= to push it with (block, mutex) */
    const char *types[5];
    int64_t time_nanos;
} fixtures[] = {
    {"go/cpu-01.pb.gz", "process_cpu", NULL, {CPU_GO}, 1796022364647593488},
    {"go/cpu-01.pb", "process_cpu", NULL, {CPU_GO}, 1796022364647593488},
    {"go/cpu-02.pb.gz", "process_cpu", NULL, {CPU_GO}, 0},
    {"go/cpu-03.pb.gz", "process_cpu", NULL, {CPU_GO}, 0},
    {"go/cpu-04.pb.gz", "process_cpu", NULL, {CPU_GO}, 0},
    {"go/cpu-05.pb.gz", "process_cpu", NULL, {CPU_GO}, 0},
    {"go/cpu-seed2-01.pb.gz", "process_cpu", NULL, {CPU_GO}, 0},
    {"go/heap-01.pb.gz", "memory", NULL, {HEAP_GO}, 0},
    {"go/heap-gc-01.pb.gz", "memory", NULL, {HEAP_GO}, 0},
    {"go/allocs-01.pb.gz", "memory", NULL, {HEAP_GO}, 0},
    {"go/goroutine-01.pb.gz", "goroutine", NULL, {"goroutine:goroutine:count:goroutine:count"}, 0},
    {"go/block-01.pb.gz", NULL, "block",
     {"block:contentions:count:contentions:count", "block:delay:nanoseconds:contentions:count"}, 0},
    {"go/mutex-01.pb.gz", NULL, "mutex",
     {"mutex:contentions:count:contentions:count", "mutex:delay:nanoseconds:contentions:count"}, 0},
    {"go/threadcreate-01.pb.gz", "threadcreate", NULL, {"threadcreate:threadcreate:count:threadcreate:count"}, 0},
    {"node/cpu-01.pb.gz", "process_cpu", NULL,
     {"process_cpu:sample:count:wall:nanoseconds:delta", "process_cpu:wall:nanoseconds:wall:nanoseconds:delta",
      "process_cpu:cpu:nanoseconds:wall:nanoseconds:delta"}, 0},
    {"node/wall-01.pb.gz", "wall", NULL,
     {"wall:sample:count:wall:nanoseconds:delta", "wall:wall:nanoseconds:wall:nanoseconds:delta"}, 0},
    {"node/heap-01.pb.gz", "memory", NULL,
     {"memory:inuse_objects:count:inuse_space:bytes", "memory:inuse_space:bytes:inuse_space:bytes"}, 0},
};
#define NFIXTURES (sizeof(fixtures) / sizeof(fixtures[0]))

static const char CONTENTION_MSG[] = "cannot infer the profile name: Go block and mutex profiles have the same sample "
                                     "types (contentions/count, delay/nanoseconds); pass name=block or name=mutex";

static void test_infer_name_every_fixture(void **state)
{
    for (size_t i = 0; i < NFIXTURES; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        decode(fixtures[i].file, &a, &p);
        const char *name = NULL;
        ps_err_t err;
        ps_err_clear(&err);
        int rc = ps_ingest_infer_name(&p, &name, &err);
        if (fixtures[i].inferred != NULL) {
            if (rc != 0)
                fail_msg("%s: %s", fixtures[i].file, err.msg);
            assert_string_equal(name, fixtures[i].inferred);
        } else {
            assert_int_equal(rc, PS_EINVAL);
            assert_string_equal(err.msg, CONTENTION_MSG);
        }
        ps_arena_dispose(&a);
    }
}

static void test_series_per_sample_type_every_fixture(void **state)
{
    for (size_t i = 0; i < NFIXTURES; i++) {
        const struct fixture *f = &fixtures[i];
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(f->name, "{job=\"api\",instance=\"a:6060\"}", NULL, -1);
        if (prepare(f->file, &ip, &a, &app, &err) != 0)
            fail_msg("%s: %s", f->file, err.msg);
        uint32_t want = 0;
        while (want < 5 && f->types[want])
            want++;
        assert_int_equal(app.nseries, want);
        assert_int_equal(app.profile->ntypes, want);
        for (uint32_t s = 0; s < app.nseries; s++) {
            assert_string_equal(series_name(&app, s), f->types[s]);
            assert_int_equal(app.type_index[s], s);
            /* normalised: sorted by name, __name__ first */
            const ps_labels_t *ls = &app.series_labels[s];
            assert_int_equal(ls->n, 3);
            assert_string_equal(ls->pairs[0].name, "__name__");
            assert_string_equal(ls->pairs[1].name, "instance");
            assert_string_equal(ls->pairs[1].value, "a:6060");
            assert_string_equal(ls->pairs[2].name, "job");
            assert_string_equal(ls->pairs[2].value, "api");
        }
        /* no time=: the profile's own time */
        assert_int_equal(app.ts, app.profile->time_nanos);
        if (f->time_nanos)
            assert_int_equal(app.ts, f->time_nanos);
        assert_int_equal(app.duration, app.profile->duration_nanos);
        assert_int_equal(app.period, app.profile->period);
        ps_arena_dispose(&a);
    }
}

static void test_block_mutex_without_name_refused(void **state)
{
    const char *files[] = {"go/block-01.pb.gz", "go/mutex-01.pb.gz"};
    for (int i = 0; i < 2; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(NULL, NULL, NULL, -1);
        assert_int_equal(prepare(files[i], &ip, &a, &app, &err), PS_EINVAL);
        assert_string_equal(err.msg, CONTENTION_MSG);
        assert_int_equal(app.nseries, 0);
        ps_arena_dispose(&a);
    }
}

/* ---- names that contradict the sample types ---- */

static void test_contradicting_name_refused(void **state)
{
    static const struct {
        const char *file, *name, *msg;
    } cases[] = {
        {"go/goroutine-01.pb.gz", "cpu",
         "name \"cpu\" contradicts the profile's sample types (goroutine/count): this is a \"goroutine\" profile; "
         "send name=goroutine or leave name out"},
        {"go/cpu-01.pb.gz", "memory",
         "name \"memory\" contradicts the profile's sample types (samples/count, cpu/nanoseconds): this is a "
         "\"process_cpu\" profile; send name=process_cpu or leave name out"},
        {"go/heap-01.pb.gz", "goroutines",
         "name \"goroutines\" contradicts the profile's sample types (alloc_objects/count, alloc_space/bytes, "
         "inuse_objects/count, inuse_space/bytes): this is a \"memory\" profile; send name=memory or leave name out"},
        {"go/threadcreate-01.pb.gz", "allocs",
         "name \"allocs\" contradicts the profile's sample types (threadcreate/count): this is a \"threadcreate\" "
         "profile; send name=threadcreate or leave name out"},
        {"go/goroutine-01.pb.gz", "threadcreate",
         "name \"threadcreate\" contradicts the profile's sample types (goroutine/count): this is a \"goroutine\" "
         "profile; send name=goroutine or leave name out"},
        {"node/wall-01.pb.gz", "cpu",
         "name \"cpu\" contradicts the profile's sample types (sample/count, wall/nanoseconds): this is a \"wall\" "
         "profile; send name=wall or leave name out"},
        {"go/cpu-01.pb.gz", "mutex",
         "name \"mutex\" contradicts the profile's sample types (samples/count, cpu/nanoseconds): this is a "
         "\"process_cpu\" profile; send name=process_cpu or leave name out"},
        {"go/block-01.pb.gz", "heap",
         "name \"heap\" contradicts the profile's sample types (contentions/count, delay/nanoseconds): this is a "
         "\"block\" or \"mutex\" profile; send name=block or name=mutex"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(cases[i].name, NULL, NULL, -1);
        assert_int_equal(prepare(cases[i].file, &ip, &a, &app, &err), PS_EINVAL);
        assert_string_equal(err.msg, cases[i].msg);
        assert_int_equal(app.nseries, 0);
        ps_arena_dispose(&a);
    }
}

static void test_fitting_or_free_names_accepted(void **state)
{
    static const struct {
        const char *file, *name, *first;
    } cases[] = {
        {"go/cpu-01.pb.gz", "cpu", "cpu:samples:count:cpu:nanoseconds"},
        {"go/cpu-01.pb.gz", "process_cpu", "process_cpu:samples:count:cpu:nanoseconds:delta"},
        {"go/heap-01.pb.gz", "heap", "heap:alloc_objects:count:space:bytes"},
        {"go/allocs-01.pb.gz", "allocs", "allocs:alloc_objects:count:space:bytes"},
        {"node/heap-01.pb.gz", "memory", "memory:inuse_objects:count:inuse_space:bytes"},
        {"go/goroutine-01.pb.gz", "goroutines", "goroutines:goroutine:count:goroutine:count"},
        {"node/cpu-01.pb.gz", "wall", "wall:sample:count:wall:nanoseconds:delta"}, /* it has a wall type */
        {"go/mutex-01.pb.gz", "block", "block:contentions:count:contentions:count"}, /* cannot be told apart */
        {"go/block-01.pb.gz", "mutex", "mutex:contentions:count:contentions:count"},
        {"go/goroutine-01.pb.gz", "myapp_cpu", "myapp_cpu:goroutine:count:goroutine:count"}, /* not well known */
        {"go/cpu-01.pb.gz", "CPU", "CPU:samples:count:cpu:nanoseconds"},                      /* names are exact */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(cases[i].name, NULL, NULL, -1);
        if (prepare(cases[i].file, &ip, &a, &app, &err) != 0)
            fail_msg("%s name=%s: %s", cases[i].file, cases[i].name, err.msg);
        assert_string_equal(series_name(&app, 0), cases[i].first);
        ps_arena_dispose(&a);
    }
}

static void test_unknown_sample_types(void **state)
{
    /* a goroutine profile with its sample type renamed: not recognised, so any name fits */
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode("go/goroutine-01.pb.gz", &a, &p);
    ps_str_t *t = &p.strings[p.sample_types[0].type];
    t->ptr = "requests";
    t->len = 8;
    /* the period type is the same string: it is renamed too */
    ps_err_t err;
    const char *name = NULL;
    assert_int_equal(ps_ingest_infer_name(&p, &name, &err), PS_EINVAL);
    assert_string_equal(err.msg, "cannot infer the profile name from sample types [requests]; pass name=");
    assert_int_equal(ps_ingest_check_name(&p, "cpu", 3, &err), 0);
    assert_int_equal(ps_ingest_check_name(&p, "goroutine", 9, &err), 0);
    assert_int_equal(ps_ingest_check_name(&p, "block", 5, &err), 0);
    assert_int_equal(ps_ingest_check_name(&p, "x", 1, &err), 0);
    ps_arena_dispose(&a);
}

/* ---- body checks ---- */

static const char MULTIPART_MSG[] = "body is multipart/form-data: this endpoint takes a raw pprof body (gzipped or "
                                    "not); send Pyroscope SDK uploads to /ingest";

static void test_check_body(void **state)
{
    ps_err_t err;
    static const char mp[] = "------formdata-undici-0123\r\nContent-Disposition: form-data; name=\"profile\"\r\n";
    assert_int_equal(ps_ingest_check_body(mp, sizeof(mp) - 1, NULL, 0, &err), PS_EINVAL);
    assert_string_equal(err.msg, MULTIPART_MSG);
    static const char ct[] = "Multipart/Form-Data; boundary=x";
    static const uint8_t gz[] = {0x1f, 0x8b, 8, 0};
    assert_int_equal(ps_ingest_check_body(gz, sizeof(gz), ct, sizeof(ct) - 1, &err), PS_EINVAL);
    assert_string_equal(err.msg, MULTIPART_MSG);
    assert_int_equal(ps_ingest_check_body(gz, sizeof(gz), "application/octet-stream", 24, &err), 0);

    static const char folded[] = "main;work;compress 120\nmain;sort 30\n";
    assert_int_equal(ps_ingest_check_body(folded, sizeof(folded) - 1, NULL, 0, &err), PS_EINVAL);
    assert_string_equal(err.msg, "body looks like text (\"main;work;compress 1\"...): expected a pprof profile "
                                 "(gzipped or not)");
    static const char q[] = "a\"b\\c\td\r\n";
    assert_int_equal(ps_ingest_check_body(q, sizeof(q) - 1, NULL, 0, &err), PS_EINVAL);
    assert_string_equal(err.msg, "body looks like text (\"a\\\"b\\\\c\\td\\r\\n\"): expected a pprof profile "
                                 "(gzipped or not)");
    /* invalid UTF-8 or a control byte: not text, left to the decoder */
    static const uint8_t bin1[] = {'a', 'b', 0xff, 'c'}, bin2[] = {'a', 'b', 0x01};
    assert_int_equal(ps_ingest_check_body(bin1, sizeof(bin1), NULL, 0, &err), 0);
    assert_int_equal(ps_ingest_check_body(bin2, sizeof(bin2), NULL, 0, &err), 0);
    assert_int_equal(ps_ingest_check_body("", 0, NULL, 0, &err), 0);
    /* text only within the first 64 bytes decides */
    char long_text[100];
    memset(long_text, 'x', sizeof(long_text));
    long_text[64] = 0x01;
    assert_int_equal(ps_ingest_check_body(long_text, sizeof(long_text), NULL, 0, &err), PS_EINVAL);
    /* every fixture, raw or gzipped, passes */
    for (size_t i = 0; i < NFIXTURES; i++) {
        size_t n;
        uint8_t *b = ps_test_read_fixture(fixtures[i].file, &n);
        assert_int_equal(ps_ingest_check_body(b, n, "application/octet-stream", 24, &err), 0);
        free(b);
    }
}

/* ---- time, labels, delta ---- */

static void test_time_forms(void **state)
{
    static const struct {
        const char *time;
        int64_t want;
    } cases[] = {
        {"1796022000", 1796022000000000000},
        {"1796022000.5", 1796022000500000000},
        {"2026-11-30T07:00:00Z", 1796022000000000000},
        {"2026-11-30T07:00:00.123456789Z", 1796022000123456789},
        {"2026-11-30T09:00:00+02:00", 1796022000000000000},
        {"2026-11-30T06:30:00.25-00:30", 1796022000250000000},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(NULL, NULL, cases[i].time, -1);
        if (prepare("go/cpu-01.pb.gz", &ip, &a, &app, &err) != 0)
            fail_msg("time=%s: %s", cases[i].time, err.msg);
        assert_int_equal(app.ts, cases[i].want);
        ps_arena_dispose(&a);
    }
    const char *bad[] = {"yesterday", "2026-13-01T00:00:00Z", "2026-11-30T06:00:00"};
    for (size_t i = 0; i < 3; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(NULL, NULL, bad[i], -1);
        assert_int_equal(prepare("go/cpu-01.pb.gz", &ip, &a, &app, &err), PS_EINVAL);
        assert_true(strncmp(err.msg, "time: ", 6) == 0);
        ps_arena_dispose(&a);
    }
}

static void test_time_now_without_profile_time(void **state)
{
    /* the goroutine fixture re-encoded without time_nanos: no time= gives the clock's now */
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode("go/goroutine-01.pb.gz", &a, &p);
    p.time_nanos = 0;
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    assert_int_equal(ps_pprof_encode(&p, -1, &b, &err), 0);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_append_t app;
    ps_ingest_params_t ip = params(NULL, NULL, NULL, -1);
    int64_t before = ps_time_now();
    assert_int_equal(ps_ingest_prepare(b.data, b.len, &ip, &lim, &a, &app, &err), 0);
    int64_t after = ps_time_now();
    assert_true(app.ts >= before && app.ts <= after);
    /* with time=, that time */
    ip = params(NULL, NULL, "1796022000", -1);
    assert_int_equal(ps_ingest_prepare(b.data, b.len, &ip, &lim, &a, &app, &err), 0);
    assert_int_equal(app.ts, 1796022000000000000);
    /* ps_ingest_build takes the caller's timestamp as is */
    ps_labels_t base = {0, NULL};
    assert_int_equal(ps_ingest_build(&p, "goroutine", 9, &base, 42, NULL, false, &a, &app, &err), 0);
    assert_int_equal(app.ts, 42);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void test_labels(void **state)
{
    static const struct {
        const char *labels, *msg_prefix;
    } bad[] = {
        {"{job=\"a\"", "labels: "},
        {"{__meta=\"x\"}", "labels: label names starting with \"__\" are reserved (__meta)"},
        {"{__name__=\"x\"}", "labels: label names starting with \"__\" are reserved (__name__); use the name parameter"},
        {"{a=\"1\",a=\"2\"}", "labels: "},
        {"{job=~\"a\"}", "labels: "},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(NULL, bad[i].labels, NULL, -1);
        assert_int_equal(prepare("go/goroutine-01.pb.gz", &ip, &a, &app, &err), PS_EINVAL);
        if (strncmp(err.msg, bad[i].msg_prefix, strlen(bad[i].msg_prefix)) != 0)
            fail_msg("labels %s: %s", bad[i].labels, err.msg);
        ps_arena_dispose(&a);
    }
    /* 63 labels are accepted (64 with __name__), 64 are not */
    for (int n = 63; n <= 64; n++) {
        char labels[2048];
        size_t off = 0;
        labels[off++] = '{';
        for (int i = 0; i < n; i++)
            off += (size_t)snprintf(labels + off, sizeof(labels) - off, "%sl%02d=\"v\"", i ? "," : "", i);
        labels[off++] = '}';
        labels[off] = 0;
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(NULL, labels, NULL, -1);
        int rc = prepare("go/goroutine-01.pb.gz", &ip, &a, &app, &err);
        if (n == 63) {
            assert_int_equal(rc, 0);
            assert_int_equal(app.series_labels[0].n, 64);
        } else {
            assert_int_equal(rc, PS_EINVAL);
            assert_string_equal(err.msg, "labels: 64 labels given, at most 63 are allowed (__name__ is added to them)");
        }
        ps_arena_dispose(&a);
    }
    /* other quotes, braces optional, escapes */
    ps_arena_t a = PS_ARENA_INIT;
    ps_append_t app;
    ps_err_t err;
    ps_ingest_params_t ip = params(NULL, "b='x\\'y', a=`raw\\n`", NULL, -1);
    assert_int_equal(prepare("go/goroutine-01.pb.gz", &ip, &a, &app, &err), 0);
    const ps_labels_t *ls = &app.series_labels[0];
    assert_int_equal(ls->n, 3);
    assert_string_equal(ls->pairs[1].name, "a");
    assert_string_equal(ls->pairs[1].value, "raw\\n");
    assert_string_equal(ls->pairs[2].name, "b");
    assert_string_equal(ls->pairs[2].value, "x'y");
    ps_arena_dispose(&a);
}

static void test_bad_name(void **state)
{
    const char *bad[] = {"1cpu", "my-cpu", "a b"};
    for (int i = 0; i < 3; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(bad[i], NULL, NULL, -1);
        assert_int_equal(prepare("go/cpu-01.pb.gz", &ip, &a, &app, &err), PS_EINVAL);
        char want[200];
        snprintf(want, sizeof(want), "name: invalid profile name \"%s\": must match [a-zA-Z_][a-zA-Z0-9_]*, at most 64 bytes",
                 bad[i]);
        assert_string_equal(err.msg, want);
        ps_arena_dispose(&a);
    }
}

static void test_delta_modes(void **state)
{
    static const struct {
        const char *file, *name;
        int delta;
        const char *first;
    } cases[] = {
        {"go/cpu-01.pb.gz", NULL, -1, "process_cpu:samples:count:cpu:nanoseconds:delta"},
        {"go/cpu-01.pb.gz", NULL, 0, "process_cpu:samples:count:cpu:nanoseconds"},
        {"go/cpu-01.pb.gz", "myapp", -1, "myapp:samples:count:cpu:nanoseconds"},
        {"go/cpu-01.pb.gz", "myapp", 1, "myapp:samples:count:cpu:nanoseconds:delta"},
        {"node/wall-01.pb.gz", NULL, -1, "wall:sample:count:wall:nanoseconds:delta"},
        {"node/wall-01.pb.gz", NULL, 0, "wall:sample:count:wall:nanoseconds"},
        {"go/heap-01.pb.gz", NULL, -1, "memory:alloc_objects:count:space:bytes"},
        {"go/heap-01.pb.gz", NULL, 1, "memory:alloc_objects:count:space:bytes:delta"},
        {"go/goroutine-01.pb.gz", NULL, 0, "goroutine:goroutine:count:goroutine:count"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_append_t app;
        ps_err_t err;
        ps_ingest_params_t ip = params(cases[i].name, NULL, NULL, cases[i].delta);
        if (prepare(cases[i].file, &ip, &a, &app, &err) != 0)
            fail_msg("%s: %s", cases[i].file, err.msg);
        assert_string_equal(series_name(&app, 0), cases[i].first);
        ps_arena_dispose(&a);
    }
    /* per-type modes (the scraper's): skip, as is, delta */
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode("go/heap-01.pb.gz", &a, &p);
    ps_labels_t base = {0, NULL};
    uint8_t modes[4] = {PS_INGEST_DELTA, PS_INGEST_SKIP, PS_INGEST_ASIS, PS_INGEST_SKIP};
    ps_append_t app;
    ps_err_t err;
    assert_int_equal(ps_ingest_build(&p, "memory", 6, &base, 1, modes, false, &a, &app, &err), 0);
    assert_int_equal(app.nseries, 2);
    assert_string_equal(series_name(&app, 0), "memory:alloc_objects:count:space:bytes:delta");
    assert_string_equal(series_name(&app, 1), "memory:inuse_objects:count:space:bytes");
    assert_int_equal(app.type_index[0], 0);
    assert_int_equal(app.type_index[1], 2);
    ps_arena_dispose(&a);
}

static void test_type_id_parts_sanitised(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode("go/goroutine-01.pb.gz", &a, &p);
    ps_str_t *t = &p.strings[p.sample_types[0].unit];
    t->ptr = "µs/op-x";
    t->len = (uint32_t)strlen("µs/op-x");
    ps_labels_t base = {0, NULL};
    ps_append_t app;
    ps_err_t err;
    assert_int_equal(ps_ingest_build(&p, "g", 1, &base, 1, NULL, false, &a, &app, &err), 0);
    /* every byte outside [a-zA-Z0-9_] becomes '_' (µ is two bytes); the period unit is the same string */
    assert_string_equal(series_name(&app, 0), "g:goroutine:__s_op_x:goroutine:__s_op_x");
    ps_arena_dispose(&a);
}

static void test_result_json(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_append_t app;
    ps_err_t err;
    ps_ingest_params_t ip = params(NULL, "{job=\"j\"}", "1796022000", -1);
    assert_int_equal(prepare("go/cpu-01.pb.gz", &ip, &a, &app, &err), 0);
    app.series_ids[0] = 7;
    app.series_ids[1] = 8;
    app.series_samples[0] = 200;
    app.series_samples[1] = 201;
    ps_buf_t b = PS_BUF_INIT;
    ps_ingest_result_json(&app, &b);
    json_error_t je;
    json_t *js = json_loadb((const char *)b.data, b.len, 0, &je);
    assert_non_null(js);
    json_t *d = json_object_get(js, "data");
    assert_string_equal(json_string_value(json_object_get(js, "status")), "success");
    assert_string_equal(json_string_value(json_object_get(d, "timestamp")), "2026-11-30T07:00:00Z");
    assert_int_equal(json_integer_value(json_object_get(d, "timestamp_ns")), 1796022000000000000);
    assert_int_equal(json_integer_value(json_object_get(d, "samples")), 272);
    assert_true(json_is_false(json_object_get(d, "duplicate")));
    json_t *s = json_object_get(d, "series");
    assert_int_equal(json_array_size(s), 2);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 1), "id")), 8);
    assert_int_equal(json_integer_value(json_object_get(json_array_get(s, 1), "stacks")), 201);
    assert_string_equal(json_string_value(json_object_get(json_array_get(s, 1), "profile_type")),
                        "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta");
    json_t *l = json_object_get(json_array_get(s, 0), "labels");
    assert_int_equal(json_object_size(l), 2);
    assert_string_equal(json_string_value(json_object_get(l, "job")), "j");
    json_decref(js);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infer_name_every_fixture),
        cmocka_unit_test(test_series_per_sample_type_every_fixture),
        cmocka_unit_test(test_block_mutex_without_name_refused),
        cmocka_unit_test(test_contradicting_name_refused),
        cmocka_unit_test(test_fitting_or_free_names_accepted),
        cmocka_unit_test(test_unknown_sample_types),
        cmocka_unit_test(test_check_body),
        cmocka_unit_test(test_time_forms),
        cmocka_unit_test(test_time_now_without_profile_time),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_bad_name),
        cmocka_unit_test(test_delta_modes),
        cmocka_unit_test(test_type_id_parts_sanitised),
        cmocka_unit_test(test_result_json),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
