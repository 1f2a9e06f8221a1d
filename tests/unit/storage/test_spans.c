/*
 * test_spans.c - the span index and client profile ids (storage/spans.c, schema 5): a hand-built
 * profile whose samples carry span_id, profile_id and trace_id labels (valid, invalid, none)
 * appended, looked up by span over ranges; the stored profile without the span labels and its span
 * parts beside it; the span parts codec on damaged records; profile ids both ways; retention drops
 * them all; a schema 4 directory (without the new databases) upgraded in place.
 */
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include "../storewriter.h"

#include "core/encode.h"
#include "core/timeutil.h"
#include "storage/internal.h"
#include "storage/store.h"

#define H (3600ll * PS_NS_PER_S)
#define SPAN_A 0x00000000000000aaull
#define SPAN_B 0x0123456789abcdefull
#define SPAN_C 0xfedcba9876543210ull

static char *tmpdir(void) { return ps_test_tmpdir("/tmp/ps-test-spans-XXXXXX"); }

/* strings of the profile */
enum { S_EMPTY, S_CPU, S_NS, S_SAMPLES, S_COUNT, S_SPAN, S_PID, S_A, S_B, S_C, S_BAD, S_MAIN, S_F, S_ZERO, S_TRACE, S_T1, S_T2,
       S_N };
static ps_str_t strs[S_N] = {
    {"", 0}, {"cpu", 3}, {"nanoseconds", 11}, {"samples", 7}, {"count", 5}, {"span_id", 7}, {"profile_id", 10},
    {"00000000000000aa", 16}, {"0123456789ABCDEF", 16}, {"fedcba9876543210", 16}, {"00000000000000ag", 16},
    {"main", 4}, {"f", 1}, {"0000000000000000", 16}, {"trace_id", 8}, {"4bf92f3577b34da6a3ce929d0e0e4736", 32},
    {"t-1", 3},
};
#define T1 "4bf92f3577b34da6a3ce929d0e0e4736"

/* Samples (cpu, samples): main [A, trace T1] 10/1; f<main [B upper case, trace "t-1"] 20/2; main
 * [none] 5/1; f [profile_id C] 7/1; main [span_id "…ag", not hex] 3/1; f [span_id all zero] 4/1;
 * f<main [A, B: the first wins, B stays a label] 0/6. */
typedef struct built {
    ps_profile_t p;
    ps_sample_t smp[7];
    ps_label_t lab[10];
    int64_t vals[14];
    uint32_t locs[12];
    ps_function_t fn[2];
    ps_location_t loc[2];
    ps_line_t line[2];
    ps_value_type_t types[2];
    ps_labels_t series[2];
    ps_label_pair_t pairs[2][2];
    uint32_t ti[2];
    uint64_t sids[2];
    uint32_t nsmp[2];
    ps_append_t app;
} built_t;

static void build(built_t *b, int64_t ts, const uint8_t *uuid)
{
    memset(b, 0, sizeof(*b));
    b->fn[0] = (ps_function_t){.name = S_MAIN};
    b->fn[1] = (ps_function_t){.name = S_F};
    b->line[0] = (ps_line_t){.function = 1, .line = 1};
    b->line[1] = (ps_line_t){.function = 2, .line = 2};
    b->loc[0] = (ps_location_t){.address = 0x10, .nlines = 1, .lines = &b->line[0]};
    b->loc[1] = (ps_location_t){.address = 0x20, .nlines = 1, .lines = &b->line[1]};
    static const int64_t v[14] = {10, 1, 20, 2, 5, 1, 7, 1, 3, 1, 4, 1, 0, 6};
    memcpy(b->vals, v, sizeof(v));
    b->lab[0] = (ps_label_t){.key = S_SPAN, .str = S_A};
    b->lab[1] = (ps_label_t){.key = S_TRACE, .str = S_T1};
    b->lab[2] = (ps_label_t){.key = S_TRACE, .str = S_T2};
    b->lab[3] = (ps_label_t){.key = S_SPAN, .str = S_B};
    b->lab[4] = (ps_label_t){.key = S_PID, .str = S_C};
    b->lab[5] = (ps_label_t){.key = S_SPAN, .str = S_BAD};
    b->lab[6] = (ps_label_t){.key = S_SPAN, .str = S_ZERO};
    b->lab[7] = (ps_label_t){.key = S_SPAN, .str = S_A};
    b->lab[8] = (ps_label_t){.key = S_SPAN, .str = S_B};
    /* stacks, leaf first: main | f main | main | f | main | f | f main */
    static const uint32_t l[10] = {1, 2, 1, 1, 2, 1, 2, 2, 1, 0};
    memcpy(b->locs, l, sizeof(l));
    const uint32_t nl[7] = {1, 2, 1, 1, 1, 1, 2}, off[7] = {0, 1, 3, 4, 5, 6, 7};
    const uint32_t nlab[7] = {2, 2, 0, 1, 1, 1, 2}, loff[7] = {0, 2, 4, 4, 5, 6, 7};
    for (int i = 0; i < 7; i++)
        b->smp[i] = (ps_sample_t){.nlocs = nl[i], .locs = &b->locs[off[i]], .values = &b->vals[2 * i],
                                  .nlabels = nlab[i], .labels = nlab[i] ? &b->lab[loff[i]] : NULL};
    b->types[0] = (ps_value_type_t){S_CPU, S_NS};
    b->types[1] = (ps_value_type_t){S_SAMPLES, S_COUNT};
    b->p = (ps_profile_t){.nstrings = S_N, .strings = strs, .ntypes = 2, .sample_types = b->types, .nsamples = 7,
                          .samples = b->smp, .nfunctions = 2, .functions = b->fn, .nlocations = 2,
                          .locations = b->loc, .period_type = {S_CPU, S_NS}, .period = 10000000, .time_nanos = ts};
    static const char *names[2] = {"process_cpu:cpu:nanoseconds:cpu:nanoseconds",
                                   "process_cpu:samples:count:cpu:nanoseconds"};
    for (int i = 0; i < 2; i++) {
        b->pairs[i][0] = (ps_label_pair_t){.name = "__name__", .nlen = 8, .value = names[i], .vlen = (uint32_t)strlen(names[i])};
        b->pairs[i][1] = (ps_label_pair_t){.name = "job", .nlen = 3, .value = "api", .vlen = 3};
        b->series[i] = (ps_labels_t){2, b->pairs[i]};
        b->ti[i] = (uint32_t)i;
    }
    b->app = (ps_append_t){.profile = &b->p, .nseries = 2, .series_labels = b->series, .type_index = b->ti, .ts = ts,
                           .duration = 10 * PS_NS_PER_S, .period = 10000000, .series_ids = b->sids,
                           .series_samples = b->nsmp, .uuid = uuid};
}

static void append(ps_store_t *s, built_t *b, int64_t ts, const uint8_t *uuid)
{
    build(b, ts, uuid);
    ps_append_t *items[1] = {&b->app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 1, &err), 0);
    if (b->app.status != 0)
        fail_msg("append: %s", b->app.err.msg);
}

typedef struct hits {
    int n;
    uint64_t sid[16];
    int64_t ts[16];
} hits_t;

static int on_hit(void *ctx, uint64_t sid, int64_t ts)
{
    hits_t *h = ctx;
    if (h->n < 16) {
        h->sid[h->n] = sid;
        h->ts[h->n] = ts;
    }
    h->n++;
    return 0;
}

static hits_t lookup(ps_store_t *s, uint64_t span, int64_t start, int64_t end)
{
    ps_reader_t *r;
    ps_err_t err;
    hits_t h = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_reader_unclamp(r);
    assert_int_equal(ps_reader_span_profiles(r, span, start, end, on_hit, &h, &err), 0);
    ps_reader_end(r);
    return h;
}

static void test_span_parse(void **state)
{
    uint64_t v = 0;
    assert_true(ps_span_parse("0123456789abcdef", 16, &v));
    assert_true(v == SPAN_B);
    assert_true(ps_span_parse("0123456789ABCDEF", 16, &v));
    assert_true(v == SPAN_B);
    assert_false(ps_span_parse("0123456789abcde", 15, &v));
    assert_false(ps_span_parse("0123456789abcdef0", 17, &v));
    assert_false(ps_span_parse("0123456789abcdeg", 16, &v));
    assert_false(ps_span_parse("0000000000000000", 16, &v));
    uint8_t u[16], w[16];
    assert_true(ps_uuid_scan("7c9e6679-7425-40de-944b-e07fc1f90ae7", 36, u) == 0);
    assert_true(ps_uuid_scan("7C9E6679742540DE944BE07FC1F90AE7", 32, w) == 0);
    assert_memory_equal(u, w, 16);
    assert_int_equal(u[0], 0x7c);
    assert_int_equal(u[15], 0xe7);
    assert_false(ps_uuid_scan("7c9e6679+7425-40de-944b-e07fc1f90ae7", 36, u) == 0);
    assert_false(ps_uuid_scan("7c9e6679-7425-40de-944b-e07fc1f90ae", 35, u) == 0);
    assert_false(ps_uuid_scan("", 0, u) == 0);
}

typedef struct node_ctx {
    int64_t want_total;
    uint64_t node_of_value[32]; /* value -> the node that holds it (values are distinct) */
    int n;
} node_ctx_t;

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    node_ctx_t *c = ctx;
    c->n++;
    assert_int_equal(p->total, c->want_total);
    for (uint32_t i = 0; i < p->n; i++) {
        assert_true(p->values[i] > 0 && p->values[i] < 32);
        c->node_of_value[p->values[i]] = p->nodes[i];
    }
    return 0;
}

static void check_part(const ps_span_part_t *p, uint64_t span, uint64_t node, int64_t value, const char *trace,
                       uint8_t flags)
{
    assert_true(p->span == span);
    assert_true(p->node == node);
    assert_int_equal(p->value, value);
    assert_int_equal(p->flags, flags);
    assert_int_equal(p->trace_len, trace ? strlen(trace) : 0);
    if (trace)
        assert_memory_equal(p->trace, trace, strlen(trace));
}

static void test_append_lookup_ids(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    int64_t t0 = 1796022364000000000ll; /* 2026-11-30T... */
    const uint8_t u1[16] = {0x7c, 0x9e, 0x66, 0x79, 0x74, 0x25, 0x40, 0xde, 0x94, 0x4b, 0xe0, 0x7f, 0xc1, 0xf9, 0x0a, 0xe7};
    const uint8_t u2[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16};
    built_t b;
    append(s, &b, t0, u1);
    uint64_t cpu = b.sids[0], smp = b.sids[1];
    assert_true(cpu != smp);
    append(s, &b, t0 + 2 * H, NULL);
    /* an identical retry with another id is a duplicate: nothing written, no id */
    append(s, &b, t0 + 2 * H, u2);
    assert_true(b.app.duplicate);

    /* span A: samples 0 (both types) and 6 (samples only) */
    hits_t h = lookup(s, SPAN_A, t0, t0);
    assert_int_equal(h.n, 2);
    assert_true(h.sid[0] == cpu && h.ts[0] == t0);
    assert_true(h.sid[1] == smp && h.ts[1] == t0);
    h = lookup(s, SPAN_A, t0 - H, t0 + 3 * H);
    assert_int_equal(h.n, 4);
    assert_true(h.sid[2] == cpu && h.ts[2] == t0 + 2 * H);
    h = lookup(s, SPAN_A, t0 + 1, t0 + 2 * H - 1);
    assert_int_equal(h.n, 0);
    h = lookup(s, SPAN_A, t0 + 2 * H, INT64_MAX);
    assert_int_equal(h.n, 2);
    /* span B: sample 1 only (sample 6's first label is A); C from the legacy profile_id label */
    h = lookup(s, SPAN_B, t0, t0);
    assert_int_equal(h.n, 2);
    h = lookup(s, SPAN_C, t0, t0);
    assert_int_equal(h.n, 2);
    /* not indexed: "…ag" (not hex), all zero, a span never written */
    h = lookup(s, 0xaaull << 8, INT64_MIN, INT64_MAX);
    assert_int_equal(h.n, 0);
    h = lookup(s, 0, INT64_MIN, INT64_MAX);
    assert_int_equal(h.n, 0);
    h = lookup(s, 0x1111111111111111ull, INT64_MIN, INT64_MAX);
    assert_int_equal(h.n, 0);

    /* the stored profile: no span labels (main 10 + 5, f<main 20, f 7, and the two with labels
     * that are no span: 3 and 4); its span parts beside it */
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    node_ctx_t c = {.want_total = 49};
    assert_int_equal(ps_reader_profiles(r, cpu, t0, t0, false, on_profile, &c, &err), 0);
    assert_int_equal(c.n, 1);
    uint64_t n_main = c.node_of_value[15], n_fmain = c.node_of_value[20], n_f = c.node_of_value[7];
    assert_true(n_main != 0 && n_fmain != 0 && n_f != 0 && c.node_of_value[3] != 0 && c.node_of_value[4] != 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_span_part_t *parts;
    size_t np;
    assert_int_equal(ps_reader_span_parts(r, cpu, t0, &a, &parts, &np, &err), 0);
    assert_int_equal(np, 3);
    check_part(&parts[0], SPAN_A, n_main, 10, T1, 0);
    check_part(&parts[1], SPAN_B, n_fmain, 20, "t-1", PS_SPAN_F_UPPER);
    check_part(&parts[2], SPAN_C, n_f, 7, NULL, PS_SPAN_F_PROFILE_ID);
    /* samples: sample 6 (span A, its second span label B kept in its stack) is there too */
    assert_int_equal(ps_reader_span_parts(r, smp, t0, &a, &parts, &np, &err), 0);
    assert_int_equal(np, 4);
    /* two groups of span A (without a trace id first, then with T1): each written as it was */
    assert_true(parts[0].span == SPAN_A && parts[0].value == 6 && parts[0].node != n_fmain && parts[0].trace_len == 0);
    check_part(&parts[1], SPAN_A, n_main, 1, T1, 0);
    check_part(&parts[2], SPAN_B, n_fmain, 2, "t-1", PS_SPAN_F_UPPER);
    check_part(&parts[3], SPAN_C, n_f, 1, NULL, PS_SPAN_F_PROFILE_ID);
    /* none: a profile without spans, a time without a profile */
    assert_int_equal(ps_reader_span_parts(r, cpu, t0 + 1, &a, &parts, &np, &err), 0);
    assert_int_equal(np, 0);
    ps_reader_end(r);
    ps_arena_dispose(&a);

    /* profile ids */
    uint64_t sids[4];
    int64_t tss[4];
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 4, &err), 2);
    assert_true(sids[0] == cpu && tss[0] == t0 && sids[1] == smp && tss[1] == t0);
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 1, &err), 2); /* counts past max */
    assert_int_equal(ps_store_profile_by_uuid(s, u2, sids, tss, 4, &err), 0);
    /* an id given again five hours later: both found, by hour (the seeks jump the empty hours) */
    append(s, &b, t0 + 5 * H, u1);
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 4, &err), 4);
    assert_true(sids[0] == cpu && tss[0] == t0 && sids[1] == smp && tss[1] == t0);
    assert_true(sids[2] == cpu && tss[2] == t0 + 5 * H && sids[3] == smp && tss[3] == t0 + 5 * H);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_retention(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 3 * H);
    int64_t now = ps_time_now();
    const uint8_t u1[16] = {0xaa}, u2[16] = {0xbb};
    built_t b;
    append(s, &b, now - 5 * H / 2, u1);
    uint64_t cpu = b.sids[0];
    append(s, &b, now, u2);
    assert_int_equal(lookup(s, SPAN_A, INT64_MIN, INT64_MAX).n, 4);
    ps_err_t err;
    /* two hours later: cutoff now - 1 h; the old profile is 1.5 h before it, in an hour that ended */
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now + 2 * H, &dropped, &err), 0);
    hits_t h = lookup(s, SPAN_A, INT64_MIN, INT64_MAX);
    assert_int_equal(h.n, 2);
    assert_true(h.ts[0] == now && h.ts[1] == now);
    uint64_t sids[4];
    int64_t tss[4];
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 4, &err), 0);
    ps_reader_t *r;
    ps_arena_t a = PS_ARENA_INIT;
    ps_span_part_t *parts;
    size_t np;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_reader_unclamp(r);
    assert_int_equal(ps_reader_span_parts(r, cpu, now - 5 * H / 2, &a, &parts, &np, &err), 0);
    assert_int_equal(np, 0);
    assert_int_equal(ps_reader_span_parts(r, cpu, now, &a, &parts, &np, &err), 0);
    assert_int_equal(np, 3);
    ps_reader_end(r);
    ps_arena_dispose(&a);
    assert_int_equal(ps_store_profile_by_uuid(s, u2, sids, tss, 4, &err), 2);
    assert_true(sids[0] == cpu && tss[0] == now);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* A schema 4 directory: the version record says 4 and the databases of schema 5 do not exist. */
static void make_schema4(const char *dir)
{
    static const char *const dbs[] = {"spans", "uuids", "spanparts", NULL};
    ps_test_store_downgrade(dir, 4, dbs);
}

static void test_upgrade_from_4(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    int64_t t0 = 1796022364000000000ll;
    const uint8_t u1[16] = {0x11};
    built_t b;
    append(s, &b, t0, u1);
    uint64_t cpu = b.sids[0];
    ps_test_close_store(s);
    make_schema4(dir);
    /* a read-only open refuses it (no database spans) */
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    o.read_only = true;
    ps_err_t err;
    assert_int_equal(ps_store_open(&o, &s, &err), PS_EVERSION);
    assert_non_null(strstr(err.msg, "no database spans"));
    s = ps_test_open_store(dir, 0);
    assert_int_equal(s->upgraded_from, 4);
    /* the profile stored before is read as it was, but not indexed; new ones are */
    node_ctx_t c = {.want_total = 49};
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_profiles(r, cpu, t0, t0, false, on_profile, &c, &err), 0);
    assert_int_equal(c.n, 1);
    ps_reader_end(r);
    assert_int_equal(lookup(s, SPAN_A, INT64_MIN, INT64_MAX).n, 0);
    uint64_t sids[4];
    int64_t tss[4];
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 4, &err), 0);
    append(s, &b, t0 + 10 * PS_NS_PER_S, u1);
    assert_int_equal(lookup(s, SPAN_A, INT64_MIN, INT64_MAX).n, 2);
    assert_int_equal(ps_store_profile_by_uuid(s, u1, sids, tss, 4, &err), 2);
    assert_true(sids[0] == cpu && tss[0] == t0 + 10 * PS_NS_PER_S);
    ps_test_close_store(s);
    /* and it stays version 5 */
    s = ps_test_open_store(dir, 0);
    assert_int_equal(s->upgraded_from, 0);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The span parts codec: a round trip, then every truncation and some damage refused. */
static void test_parts_codec(void **state)
{
    ps_span_part_t in[4] = {
        {.span = SPAN_A, .node = 5, .value = 10, .trace = T1, .trace_len = 32},
        {.span = SPAN_A, .node = 300, .value = -2, .trace = T1, .trace_len = 32},
        {.span = SPAN_B, .node = 7, .value = 1, .trace = "t-1", .trace_len = 3, .flags = PS_SPAN_F_UPPER},
        {.span = SPAN_C, .node = 9, .value = 4, .flags = PS_SPAN_F_PROFILE_ID},
    };
    ps_buf_t b = PS_BUF_INIT;
    ps_span_parts_encode(in, 4, &b);
    /* 01, 3 spans; A: 8 + flags 04 + 16 + 2 pairs (05 14, ac02 03); B: 8 + 0a 03 "t-1" 01 07 02; C: 8 + 01 01 09 08 */
    assert_int_equal(b.len, 2 + (8 + 1 + 16 + 1 + 2 + 3) + (8 + 1 + 1 + 3 + 1 + 2) + (8 + 1 + 1 + 2));
    ps_arena_t a = PS_ARENA_INIT;
    ps_span_part_t *out;
    size_t n;
    ps_err_t err;
    assert_int_equal(ps_span_parts_decode(b.data, b.len, &a, &out, &n, &err), 0);
    assert_int_equal(n, 4);
    for (int i = 0; i < 4; i++)
        check_part(&out[i], in[i].span, in[i].node, in[i].value, in[i].trace_len ? in[i].trace : NULL, in[i].flags);
    for (size_t k = 0; k < b.len; k++)
        assert_int_equal(ps_span_parts_decode(b.data, k, &a, &out, &n, &err), PS_ECORRUPT);
    uint8_t *d = (uint8_t *)b.data;
    d[0] = 2; /* an unknown encoding */
    assert_int_equal(ps_span_parts_decode(b.data, b.len, &a, &out, &n, &err), PS_ECORRUPT);
    d[0] = 1;
    d[10] = 0x40; /* an unknown flag */
    assert_int_equal(ps_span_parts_decode(b.data, b.len, &a, &out, &n, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "span 0 at byte 2"));
    d[10] = 0x04;
    d[2] = 0xff; /* the first span after the second: not ascending */
    assert_int_equal(ps_span_parts_decode(b.data, b.len, &a, &out, &n, &err), PS_ECORRUPT);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_span_parse),
        cmocka_unit_test(test_append_lookup_ids),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_parts_codec),
        cmocka_unit_test(test_upgrade_from_4),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
