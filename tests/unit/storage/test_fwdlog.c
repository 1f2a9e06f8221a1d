/*
 * test_fwdlog.c - the forwarding log (storage/fwdlog.c): a profile's entry is logged in the
 * transaction that stores it and only then (not for a duplicate or a refused profile), float
 * entries hold exactly the samples stored (the mask the hook sees), sequence numbers are never
 * reused (across trims and reopen), cursors survive reopen, advancing trims what every cursor is
 * past and drops the cursors of endpoints no longer listed.
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

#include "core/labels.h"
#include "core/timeutil.h"
#include "proto/pprof.h"
#include "storage/store.h"

static ps_store_t *open_store_opts(const char *dir, bool log_only)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.log_only = log_only;
    o.map_size = 1ull << 28;
    o.nosync = true;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

static ps_store_t *open_store(const char *dir) { return open_store_opts(dir, false); }

typedef struct prof {
    ps_arena_t arena;
    uint8_t *bytes;
    ps_profile_t p;
    ps_labels_t ls;
    uint32_t ti;
    uint64_t sid;
    uint32_t nsamples;
    ps_append_t app;
} prof_t;

/* cpu-01 as one series {__name__="cpu:...", job="j"} at ts, with the entry "fwd". */
static void prepare(prof_t *x, int64_t ts, const char *fwd)
{
    memset(x, 0, sizeof(*x));
    size_t n = 0;
    x->bytes = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    if (ps_pprof_decode(x->bytes, n, &lim, &x->arena, &x->p, &err) != 0)
        fail_msg("decode: %s", err.msg);
    ps_labels_set(&x->ls, &x->arena, "__name__", 8, "cpu:samples:count:cpu:nanoseconds", 33);
    ps_labels_set(&x->ls, &x->arena, "job", 3, "j", 1);
    x->app.profile = &x->p;
    x->app.nseries = 1;
    x->app.series_labels = &x->ls;
    x->app.type_index = &x->ti;
    x->app.ts = ts;
    x->app.series_ids = &x->sid;
    x->app.series_samples = &x->nsamples;
    x->app.fwd = (const uint8_t *)fwd;
    x->app.fwd_len = strlen(fwd);
}

static void release(prof_t *x)
{
    ps_arena_dispose(&x->arena);
    free(x->bytes);
}

typedef struct got {
    size_t n;
    uint64_t seq[16];
    char data[16][64];
} got_t;

static int on_entry(void *ctx, const ps_forward_log_entry_t *e)
{
    got_t *g = ctx;
    assert_true(g->n < 16 && e->len < 64);
    assert_true(e->wall_ns > ps_time_now() - 60 * PS_NS_PER_S && e->wall_ns <= ps_time_now());
    g->seq[g->n] = e->seq;
    memcpy(g->data[g->n], e->data, e->len);
    g->data[g->n][e->len] = '\0';
    g->n++;
    return 0;
}

static got_t read_all(ps_store_t *s, uint64_t after, uint64_t *last)
{
    got_t g = {0};
    ps_err_t err;
    if (ps_store_forward_read(s, after, 16, 1 << 20, on_entry, &g, last, &err) != 0)
        fail_msg("read: %s", err.msg);
    return g;
}

/* The float hook: "t=v," for each stored sample. */
static void floats_entry(void *ctx, ps_float_append_t *const *items, size_t n, const ps_metric_meta_t *meta, size_t nm,
                         ps_buf_t *out)
{
    (*(int *)ctx)++;
    for (size_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < items[i]->nsamples; j++)
            if (items[i]->status == 0 && items[i]->stored[j])
                ps_buf_printf(out, "%lld=%g,", (long long)items[i]->samples[j].t, items[i]->samples[j].v);
}

static void write_floats(ps_store_t *s, const ps_float_sample_t *smp, uint32_t n)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = {0};
    ps_labels_set(&ls, &a, "__name__", 8, "up", 2);
    ps_float_append_t fa = {.labels = &ls, .samples = smp, .nsamples = n};
    ps_float_append_t *fp = &fa;
    ps_err_t err;
    if (ps_store_write(ps_test_writer(s), NULL, 0, &fp, 1, NULL, 0, &err) != 0)
        fail_msg("write: %s", err.msg);
    ps_arena_dispose(&a);
}

static void test_profiles_logged_with_their_data(void **state)
{
    char *dir = ps_test_tmpdir("/tmp/ps-fwdlog-XXXXXX");
    ps_store_t *s = open_store(dir);
    int64_t t0 = ps_time_now() - 60 * PS_NS_PER_S;
    prof_t a, b, dup, old, c;
    prepare(&a, t0, "A");
    prepare(&b, t0 + 10, "B");
    ps_append_t *items[] = {&a.app, &b.app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 2, &err), 0);
    /* an identical retry of b (a duplicate), one older than b (out of order), and a new one */
    prepare(&dup, t0 + 10, "DUP");
    prepare(&old, t0 + 5, "OLD");
    prepare(&c, t0 + 20, "C");
    ps_append_t *more[] = {&dup.app, &old.app, &c.app};
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), more, 3, &err), 0);
    assert_true(dup.app.duplicate);
    assert_int_equal(old.app.status, PS_EOUTOFORDER);
    assert_int_equal(c.app.status, 0);
    uint64_t last = 99;
    got_t g = read_all(s, 0, &last);
    assert_int_equal(last, 3);
    assert_int_equal(g.n, 3);
    assert_int_equal(g.seq[0], 1);
    assert_int_equal(g.seq[2], 3);
    assert_string_equal(g.data[0], "A");
    assert_string_equal(g.data[1], "B");
    assert_string_equal(g.data[2], "C");
    /* after, max_n and max_bytes */
    g = read_all(s, 2, NULL);
    assert_int_equal(g.n, 1);
    assert_string_equal(g.data[0], "C");
    got_t one = {0};
    assert_int_equal(ps_store_forward_read(s, 0, 16, 1, on_entry, &one, NULL, &err), 0);
    assert_int_equal(one.n, 1); /* the first always, however big */
    /* a profile without an entry is not logged */
    prof_t d;
    prepare(&d, t0 + 30, "");
    ps_append_t *it = &d.app;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    assert_int_equal(d.app.status, 0);
    g = read_all(s, 0, &last);
    assert_int_equal(g.n, 3);
    assert_int_equal(last, 3);
    release(&a), release(&b), release(&dup), release(&old), release(&c), release(&d);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_floats_only_stored_samples(void **state)
{
    char *dir = ps_test_tmpdir("/tmp/ps-fwdlog-XXXXXX");
    ps_store_t *s = open_store(dir);
    int64_t ms = ps_time_now() / 1000000 - 60000;
    ps_float_sample_t s1[] = {{ms, 1}, {ms + 10, 2}};
    write_floats(s, s1, 2); /* forwarding off: nothing logged */
    uint64_t last = 99;
    got_t g = read_all(s, 0, &last);
    assert_int_equal(g.n, 0);
    assert_int_equal(last, 0);
    int calls = 0;
    ps_store_set_forward(s, floats_entry, &calls);
    /* out of order, an identical duplicate, a conflicting duplicate, then one new sample */
    ps_float_sample_t s2[] = {{ms - 5, 9}, {ms + 10, 2}, {ms + 10, 3}, {ms + 20, 4}};
    write_floats(s, s2, 4);
    ps_float_sample_t s3[] = {{ms - 7, 9}}; /* nothing stored: no entry */
    write_floats(s, s3, 1);
    assert_int_equal(calls, 2);
    g = read_all(s, 0, &last);
    assert_int_equal(g.n, 1);
    assert_int_equal(last, 1);
    char want[64];
    snprintf(want, sizeof(want), "%lld=4,", (long long)(ms + 20));
    assert_string_equal(g.data[0], want);
    ps_store_set_forward(s, NULL, NULL);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_cursors_trim_and_reopen(void **state)
{
    char *dir = ps_test_tmpdir("/tmp/ps-fwdlog-XXXXXX");
    ps_store_t *s = open_store(dir);
    int64_t t0 = ps_time_now() - 60 * PS_NS_PER_S;
    prof_t p[4];
    const char *names[] = {"e1", "e2", "e3", "e4"};
    for (int i = 0; i < 3; i++) {
        prepare(&p[i], t0 + i, names[i]);
        ps_append_t *it = &p[i].app;
        ps_err_t err;
        assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    }
    ps_err_t err;
    uint64_t seq = 0, trimmed = 99;
    assert_int_equal(ps_store_forward_cursor(s, "a", &seq, &err), PS_ENOTFOUND);
    const char *eps[] = {"a", "b"};
    uint64_t seqs[] = {2, 1};
    assert_int_equal(ps_store_forward_advance(ps_test_writer(s), eps, seqs, 2, &trimmed, &err), 0);
    assert_int_equal(trimmed, 1); /* entry 1: both are past it */
    ps_test_close_store(s);
    s = open_store(dir);
    assert_int_equal(ps_store_forward_cursor(s, "a", &seq, &err), 0);
    assert_int_equal(seq, 2);
    assert_int_equal(ps_store_forward_cursor(s, "b", &seq, &err), 0);
    assert_int_equal(seq, 1);
    uint64_t last = 0;
    got_t g = read_all(s, 0, &last);
    assert_int_equal(g.n, 2);
    assert_int_equal(g.seq[0], 2);
    assert_string_equal(g.data[0], "e2");
    assert_int_equal(last, 3);
    /* b is no longer configured: its cursor goes, and everything a is past */
    const char *only[] = {"a"};
    uint64_t s3[] = {3};
    assert_int_equal(ps_store_forward_advance(ps_test_writer(s), only, s3, 1, &trimmed, &err), 0);
    assert_int_equal(trimmed, 2);
    assert_int_equal(ps_store_forward_cursor(s, "b", &seq, &err), PS_ENOTFOUND);
    g = read_all(s, 0, &last);
    assert_int_equal(g.n, 0);
    assert_int_equal(last, 3);
    /* numbers go on after an empty log and a reopen */
    ps_test_close_store(s);
    s = open_store(dir);
    prepare(&p[3], t0 + 3, "e4");
    ps_append_t *it = &p[3].app;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    g = read_all(s, 3, &last);
    assert_int_equal(g.n, 1);
    assert_int_equal(g.seq[0], 4);
    assert_string_equal(g.data[0], "e4");
    /* no endpoint at all: everything goes */
    assert_int_equal(ps_store_forward_advance(ps_test_writer(s), NULL, NULL, 0, &trimmed, &err), 0);
    assert_int_equal(trimmed, 1);
    assert_int_equal(ps_store_forward_cursor(s, "a", &seq, &err), PS_ENOTFOUND);
    for (int i = 0; i < 4; i++)
        release(&p[i]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* --agent: only the log entries are written; every profile and sample is taken */
static void test_log_only(void **state)
{
    char *dir = ps_test_tmpdir("/tmp/ps-fwdlog-XXXXXX");
    ps_store_t *s = open_store_opts(dir, true);
    int calls = 0;
    ps_store_set_forward(s, floats_entry, &calls);
    int64_t t0 = ps_time_now() - 60 * PS_NS_PER_S;
    prof_t a, same;
    prepare(&a, t0, "A");
    prepare(&same, t0, "A2"); /* the same time again: no check here, the receiver has its rules */
    ps_append_t *items[] = {&a.app, &same.app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 2, &err), 0);
    assert_int_equal(a.app.status, 0);
    assert_int_equal(same.app.status, 0);
    assert_false(same.app.duplicate);
    int64_t ms = ps_time_now() / 1000000 - 60000;
    ps_float_sample_t smp[] = {{ms + 10, 1}, {ms, 2}}; /* out of order: taken too */
    write_floats(s, smp, 2);
    got_t g = read_all(s, 0, NULL);
    assert_int_equal(g.n, 3);
    assert_string_equal(g.data[0], "A");
    assert_string_equal(g.data[1], "A2");
    char want[64];
    snprintf(want, sizeof(want), "%lld=1,%lld=2,", (long long)(ms + 10), (long long)ms);
    assert_string_equal(g.data[2], want);
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 0);
    assert_int_equal(st.head_records, 0);
    assert_int_equal(st.float_heads, 0);
    release(&a), release(&same);
    ps_store_set_forward(s, NULL, NULL);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profiles_logged_with_their_data),
        cmocka_unit_test(test_floats_only_stored_samples),
        cmocka_unit_test(test_cursors_trim_and_reopen),
        cmocka_unit_test(test_log_only),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
