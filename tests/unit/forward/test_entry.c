/*
 * test_entry.c - forwarding log entries (src/forward/entry.c): a profile's labels (__name__ the
 * profile name, service_name = job, else unknown_service), the body sent as received when its time
 * and duration are the stored ones and encoded again (time_nanos = the stored time) otherwise;
 * a client's profile id travels in a kind 3 entry; float entries hold exactly the stored samples,
 * bit for bit; damaged bytes are PS_ECORRUPT.
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

#include "core/labels.h"
#include "forward/forward.h"
#include "proto/pprof.h"

typedef struct prof {
    ps_arena_t arena;
    uint8_t *bytes;
    size_t n;
    ps_profile_t p;
    ps_labels_t ls[2];
    uint32_t ti[2];
    ps_append_t app;
} prof_t;

static void prepare(prof_t *x, const char *job)
{
    memset(x, 0, sizeof(*x));
    x->bytes = ps_test_read_fixture("go/cpu-01.pb.gz", &x->n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    if (ps_pprof_decode(x->bytes, x->n, &lim, &x->arena, &x->p, &err) != 0)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(x->p.ntypes, 2); /* samples/count, cpu/nanoseconds */
    const char *names[] = {"process_cpu:samples:count:cpu:nanoseconds:delta",
                           "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"};
    for (int i = 0; i < 2; i++) {
        ps_labels_set(&x->ls[i], &x->arena, "__name__", 8, names[i], strlen(names[i]));
        if (job != NULL)
            ps_labels_set(&x->ls[i], &x->arena, "job", 3, job, strlen(job));
        ps_labels_set(&x->ls[i], &x->arena, "zone", 4, "eu", 2);
        x->ti[i] = (uint32_t)i;
    }
    x->app.profile = &x->p;
    x->app.nseries = 2;
    x->app.series_labels = x->ls;
    x->app.type_index = x->ti;
    x->app.ts = x->p.time_nanos;
    x->app.duration = x->p.duration_nanos;
    x->app.raw = x->bytes;
    x->app.raw_len = x->n;
}

static char *labels_text(const ps_labels_t *ls)
{
    static char out[512];
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(ls, &b);
    snprintf(out, sizeof(out), "%.*s", (int)b.len, (const char *)b.data);
    ps_buf_dispose(&b);
    return out;
}

static void test_profile_entry(void **state)
{
    prof_t x;
    prepare(&x, "api");
    ps_buf_t e = PS_BUF_INIT;
    ps_forward_profile_entry(&x.app, &e);
    ps_arena_t a = PS_ARENA_INIT;
    int kind;
    ps_forward_series_t *s;
    size_t n;
    ps_err_t err;
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_int_equal(kind, 1);
    assert_int_equal(n, 1);
    /* a delta series (":delta"): Pyroscope's __delta__="false" */
    assert_string_equal(labels_text(&s[0].labels),
                        "{__delta__=\"false\", __name__=\"process_cpu\", job=\"api\", service_name=\"api\", zone=\"eu\"}");
    /* its own time and duration: the body as received */
    assert_int_equal(s[0].pprof_len, x.n);
    assert_memory_equal(s[0].pprof, x.bytes, x.n);

    /* another time (a time= parameter): encoded again with time_nanos = the stored time */
    x.app.ts = x.p.time_nanos + 5000;
    ps_buf_reset(&e);
    ps_forward_profile_entry(&x.app, &e);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_true(s[0].pprof_len != x.n || memcmp(s[0].pprof, x.bytes, x.n) != 0);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_profile_t back;
    assert_int_equal(ps_pprof_decode(s[0].pprof, s[0].pprof_len, &lim, &a, &back, &err), 0);
    assert_int_equal(back.time_nanos, x.p.time_nanos + 5000);
    assert_int_equal(back.duration_nanos, x.p.duration_nanos);
    assert_int_equal(back.nsamples, x.p.nsamples);
    assert_int_equal(back.ntypes, x.p.ntypes);
    for (uint32_t i = 0; i < back.nsamples; i++)
        for (uint32_t t = 0; t < back.ntypes; t++)
            assert_int_equal(back.samples[i].values[t], x.p.samples[i].values[t]);

    /* one type stored (keep_sample_type): only it is sent, re-encoded */
    x.app.ts = x.p.time_nanos;
    x.app.nseries = 1;
    x.ti[0] = 1;
    ps_buf_reset(&e);
    ps_forward_profile_entry(&x.app, &e);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_int_equal(ps_pprof_decode(s[0].pprof, s[0].pprof_len, &lim, &a, &back, &err), 0);
    assert_int_equal(back.ntypes, 1);
    ps_str_t ty = ps_profile_str(&back, back.sample_types[0].type);
    assert_int_equal(ty.len, 3);
    assert_memory_equal(ty.ptr, "cpu", 3);
    assert_int_equal(back.nsamples, x.p.nsamples);
    for (uint32_t i = 0; i < back.nsamples; i++)
        assert_int_equal(back.samples[i].values[0], x.p.samples[i].values[1]);

    /* not a delta (a cumulative profile stored as it came): no __delta__ */
    const char *plain = "process_cpu:cpu:nanoseconds:cpu:nanoseconds";
    ps_labels_set(&x.ls[0], &x.arena, "__name__", 8, plain, strlen(plain));
    ps_buf_reset(&e);
    ps_forward_profile_entry(&x.app, &e);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_string_equal(labels_text(&s[0].labels), "{__name__=\"process_cpu\", job=\"api\", service_name=\"api\", zone=\"eu\"}");

    /* no job: Pyroscope's unknown_service; no series: no entry */
    prof_t y;
    prepare(&y, NULL);
    ps_buf_reset(&e);
    ps_forward_profile_entry(&y.app, &e);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_string_equal(labels_text(&s[0].labels),
                        "{__delta__=\"false\", __name__=\"process_cpu\", service_name=\"unknown_service\", zone=\"eu\"}");
    y.app.nseries = 0;
    ps_buf_reset(&e);
    ps_forward_profile_entry(&y.app, &e);
    assert_int_equal(e.len, 0);

    ps_buf_dispose(&e);
    ps_arena_dispose(&a);
    ps_arena_dispose(&x.arena);
    ps_arena_dispose(&y.arena);
    free(x.bytes);
    free(y.bytes);
}

/* a profile with the client's id (RawSample.ID): kind 3 on disk, read back as kind 1 with the id;
 * without one, kind 1 as before; cut inside the id: damaged */
static void test_profile_entry_id(void **state)
{
    (void)state;
    prof_t x;
    prepare(&x, "api");
    static const uint8_t id[16] = {0x4f, 0x1c, 0x3e, 0x27, 0x9b, 0x55, 0x4a, 0x61, 0x8e, 0x02, 0x77, 0x31, 0xd0, 0xaa, 0x10, 0x05};
    x.app.uuid = id;
    ps_buf_t e = PS_BUF_INIT;
    ps_forward_profile_entry(&x.app, &e);
    assert_int_equal(e.data[0], 3);
    assert_memory_equal(e.data + 1, id, 16);
    ps_arena_t a = PS_ARENA_INIT;
    int kind;
    ps_forward_series_t *s;
    size_t n;
    ps_err_t err;
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_int_equal(kind, 1);
    assert_true(s[0].has_uuid);
    assert_memory_equal(s[0].uuid, id, 16);
    assert_int_equal(s[0].pprof_len, x.n);
    assert_memory_equal(s[0].pprof, x.bytes, x.n);
    assert_int_equal(ps_forward_entry_decode(e.data, 12, &a, &kind, &s, &n, NULL, NULL, &err), PS_ECORRUPT);
    assert_string_equal(err.msg, "forwarding log entry: damaged profile id");
    x.app.uuid = NULL;
    ps_buf_reset(&e);
    ps_forward_profile_entry(&x.app, &e);
    assert_int_equal(e.data[0], 1);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_false(s[0].has_uuid);
    ps_buf_dispose(&e);
    ps_arena_dispose(&a);
    ps_arena_dispose(&x.arena);
    free(x.bytes);
}

static void test_floats_entry(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t l1 = {0}, l2 = {0};
    ps_labels_set(&l1, &a, "__name__", 8, "up", 2);
    ps_labels_set(&l2, &a, "__name__", 8, "x", 1);
    uint64_t stale = 0x7ff0000000000002ull;
    double sv;
    memcpy(&sv, &stale, 8);
    ps_float_sample_t s1[] = {{-5, 1.5}, {10, sv}, {20, 3}}, s2[] = {{7, 9}};
    uint8_t m1[] = {0, 1, 1}, m2[] = {0};
    ps_float_append_t f1 = {.labels = &l1, .samples = s1, .nsamples = 3, .accepted = 2, .stored = m1};
    ps_float_append_t f2 = {.labels = &l2, .samples = s2, .nsamples = 1, .accepted = 0, .stored = m2};
    ps_float_append_t *items[] = {&f1, &f2};
    ps_buf_t e = PS_BUF_INIT;
    ps_forward_floats_entry(items, 2, NULL, 0, &e);
    int kind;
    ps_forward_series_t *s;
    size_t n;
    ps_err_t err;
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), 0);
    assert_int_equal(kind, 2);
    assert_int_equal(n, 1); /* x stored nothing */
    assert_string_equal(labels_text(&s[0].labels), "{__name__=\"up\"}");
    assert_int_equal(s[0].nsamples, 2);
    assert_int_equal(s[0].samples[0].t, 10);
    uint64_t bits;
    memcpy(&bits, &s[0].samples[0].v, 8);
    assert_int_equal(bits, stale);
    assert_int_equal(s[0].samples[1].t, 20);
    assert_true(s[0].samples[1].v == 3.0);
    /* damaged: cut short, an unknown kind, trailing bytes */
    assert_int_equal(ps_forward_entry_decode(e.data, e.len - 3, &a, &kind, &s, &n, NULL, NULL, &err), PS_ECORRUPT);
    ps_buf_putc(&e, 0);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, NULL, NULL, &err), PS_ECORRUPT);
    uint8_t bad[] = {9, 1, 2};
    assert_int_equal(ps_forward_entry_decode(bad, sizeof(bad), &a, &kind, &s, &n, NULL, NULL, &err), PS_ECORRUPT);
    /* nothing stored at all: no entry */
    m1[1] = m1[2] = 0;
    f1.accepted = 0;
    ps_buf_reset(&e);
    ps_forward_floats_entry(items, 2, NULL, 0, &e);
    assert_int_equal(e.len, 0);

    /* with metadata: the bytes of entry.c's example */
    ps_labels_t l3 = {0};
    ps_labels_set(&l3, &a, "__name__", 8, "fb", 2);
    ps_labels_set(&l3, &a, "i", 1, "0", 1);
    ps_float_sample_t s3[] = {{1000, 1.0}};
    uint8_t m3[] = {1};
    ps_float_append_t f3 = {.labels = &l3, .samples = s3, .nsamples = 1, .accepted = 1, .stored = m3};
    ps_float_append_t *items3[] = {&f3};
    ps_metric_meta_t md[] = {{"fb", 2, 1, "h", 1, "", 0}};
    ps_buf_reset(&e);
    ps_forward_floats_entry(items3, 1, md, 1, &e);
    static const uint8_t want[] = {0x02, 0x01, 0x10, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', 0x02, 'f', 'b',
                                   0x01, 'i', 0x01, '0', 0x01, 0, 0, 0, 0, 0, 0, 0x03, 0xe8,
                                   0x3f, 0xf0, 0, 0, 0, 0, 0, 0, 0x01, 0x01, 0x02, 'f', 'b', 0x01, 'h', 0x00};
    assert_int_equal(e.len, sizeof(want));
    assert_memory_equal(e.data, want, sizeof(want));
    ps_metric_meta_t *gm;
    size_t ngm;
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, &gm, &ngm, &err), 0);
    assert_int_equal(n, 1);
    assert_int_equal(ngm, 1);
    assert_int_equal(gm[0].type, 1);
    assert_int_equal(gm[0].family_len, 2);
    assert_memory_equal(gm[0].family, "fb", 2);
    assert_int_equal(gm[0].help_len, 1);
    assert_memory_equal(gm[0].help, "h", 1);
    assert_int_equal(gm[0].unit_len, 0);
    /* metadata only (Prometheus sends them on their own every minute): an entry of no series */
    m3[0] = 0;
    f3.accepted = 0;
    ps_buf_reset(&e);
    ps_forward_floats_entry(items3, 1, md, 1, &e);
    assert_int_equal(ps_forward_entry_decode(e.data, e.len, &a, &kind, &s, &n, &gm, &ngm, &err), 0);
    assert_int_equal(n, 0);
    assert_int_equal(ngm, 1);
    ps_buf_dispose(&e);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_entry),
        cmocka_unit_test(test_profile_entry_id),
        cmocka_unit_test(test_floats_entry),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
