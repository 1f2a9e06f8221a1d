/*
 * test_unsym.c - the counts of frames without symbols (storage/unsym.c, schema 6): a hand-built
 * profile with locations without lines in mappings of two build ids (and ones that do not count:
 * a location with lines, a mapping without a build id, samples of zero value) appended; the
 * records read back exact; a duplicate counts nothing; a batch sums its profiles; retention drops
 * whole hours; a schema 5 directory (without unsym) upgraded in place.
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

#include "core/timeutil.h"
#include "storage/internal.h"
#include "storage/store.h"

#define H (3600ll * PS_NS_PER_S)

static char *tmpdir(void) { return ps_test_tmpdir("/tmp/ps-test-unsym-XXXXXX"); }

enum { S_EMPTY, S_CPU, S_NS, S_SAMPLES, S_COUNT, S_BA, S_BB, S_FA, S_FB, S_FC, S_MAIN, S_N };
static ps_str_t strs[S_N] = {
    {"", 0}, {"cpu", 3}, {"nanoseconds", 11}, {"samples", 7}, {"count", 5}, {"aaaa1111", 8}, {"BBBB2222", 8},
    {"/bin/a", 6}, {"/lib/b.so", 9}, {"/lib/c.so", 9}, {"main", 4},
};
static const char *names[2] = {"process_cpu:cpu:nanoseconds:cpu:nanoseconds", "process_cpu:samples:count:cpu:nanoseconds"};

/* mappings: 1 = aaaa1111 /bin/a, 2 = BBBB2222 /lib/b.so, 3 = /lib/c.so without a build id;
 * locations: 1, 2 in mapping 1 without lines; 3 in 2 without lines; 4 in 2 with a line; 5 in 3.
 * Samples (cpu, samples), leaf first: [1 2] 10/1; [3 1] 20/2; [4 5] 5/1; [3] 0/0; [2] 0/3. */
typedef struct built {
    ps_profile_t p;
    ps_mapping_t map[3];
    ps_location_t loc[5];
    ps_function_t fn[1];
    ps_line_t line[1];
    ps_sample_t smp[5];
    int64_t vals[10];
    uint32_t locs[8];
    ps_value_type_t types[2];
    ps_labels_t series[2];
    ps_label_pair_t pairs[2][2];
    uint32_t ti[2];
    uint64_t sids[2];
    uint32_t nsmp[2];
    ps_append_t app;
} built_t;

static void build(built_t *b, int64_t ts)
{
    memset(b, 0, sizeof(*b));
    b->map[0] = (ps_mapping_t){.memory_start = 0x1000, .memory_limit = 0x9000, .filename = S_FA, .build_id = S_BA};
    b->map[1] = (ps_mapping_t){.memory_start = 0x10000, .memory_limit = 0x19000, .filename = S_FB, .build_id = S_BB};
    b->map[2] = (ps_mapping_t){.memory_start = 0x20000, .memory_limit = 0x29000, .filename = S_FC};
    b->fn[0] = (ps_function_t){.name = S_MAIN};
    b->line[0] = (ps_line_t){.function = 1, .line = 3};
    b->loc[0] = (ps_location_t){.mapping = 1, .address = 0x1100};
    b->loc[1] = (ps_location_t){.mapping = 1, .address = 0x1200};
    b->loc[2] = (ps_location_t){.mapping = 2, .address = 0x10100};
    b->loc[3] = (ps_location_t){.mapping = 2, .address = 0x10200, .nlines = 1, .lines = b->line};
    b->loc[4] = (ps_location_t){.mapping = 3, .address = 0x20100};
    static const int64_t v[10] = {10, 1, 20, 2, 5, 1, 0, 0, 0, 3};
    memcpy(b->vals, v, sizeof(v));
    static const uint32_t l[8] = {1, 2, 3, 1, 4, 5, 3, 2};
    memcpy(b->locs, l, sizeof(l));
    const uint32_t nl[5] = {2, 2, 2, 1, 1}, off[5] = {0, 2, 4, 6, 7};
    for (int i = 0; i < 5; i++)
        b->smp[i] = (ps_sample_t){.nlocs = nl[i], .locs = &b->locs[off[i]], .values = &b->vals[2 * i]};
    b->types[0] = (ps_value_type_t){S_CPU, S_NS};
    b->types[1] = (ps_value_type_t){S_SAMPLES, S_COUNT};
    b->p = (ps_profile_t){.nstrings = S_N, .strings = strs, .ntypes = 2, .sample_types = b->types, .nsamples = 5,
                          .samples = b->smp, .nmappings = 3, .mappings = b->map, .nfunctions = 1, .functions = b->fn,
                          .nlocations = 5, .locations = b->loc, .period_type = {S_CPU, S_NS}, .period = 10000000,
                          .time_nanos = ts};
    for (int i = 0; i < 2; i++) {
        b->pairs[i][0] = (ps_label_pair_t){.name = "__name__", .nlen = 8, .value = names[i], .vlen = (uint32_t)strlen(names[i])};
        b->pairs[i][1] = (ps_label_pair_t){.name = "job", .nlen = 3, .value = "api", .vlen = 3};
        b->series[i] = (ps_labels_t){2, b->pairs[i]};
        b->ti[i] = (uint32_t)i;
    }
    b->app = (ps_append_t){.profile = &b->p, .nseries = 2, .series_labels = b->series, .type_index = b->ti, .ts = ts,
                           .duration = 10 * PS_NS_PER_S, .period = 10000000, .series_ids = b->sids,
                           .series_samples = b->nsmp};
}

static void append_n(ps_store_t *s, const int64_t *ts, size_t n)
{
    built_t *b = calloc(n, sizeof(built_t));
    ps_append_t *items[8];
    for (size_t i = 0; i < n; i++) {
        build(&b[i], ts[i]);
        items[i] = &b[i].app;
    }
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, n, &err), 0);
    for (size_t i = 0; i < n; i++)
        if (b[i].app.status != 0)
            fail_msg("append: %s", b[i].app.err.msg);
    free(b);
}

static void append(ps_store_t *s, int64_t ts)
{
    append_n(s, &ts, 1);
}

/* one record, its strings copied */
typedef struct got {
    uint32_t hour;
    char bid[16], files[2][16], types[2][64];
    uint32_t nfiles, ntypes;
    uint64_t profiles, samples;
    int64_t first, last, totals[2];
} got_t;

typedef struct gots {
    int n;
    got_t g[8];
} gots_t;

static int on_rec(void *ctx, const ps_store_unsym_t *u)
{
    gots_t *gs = ctx;
    assert_true(gs->n < 8);
    got_t *g = &gs->g[gs->n++];
    memset(g, 0, sizeof(*g));
    g->hour = u->hour;
    snprintf(g->bid, sizeof(g->bid), "%.*s", (int)u->build_id.len, u->build_id.ptr);
    assert_true(u->nfiles <= 2 && u->ntypes <= 2);
    g->nfiles = u->nfiles;
    for (uint32_t i = 0; i < u->nfiles; i++)
        snprintf(g->files[i], 16, "%.*s", (int)u->files[i].len, u->files[i].ptr);
    g->ntypes = u->ntypes;
    for (uint32_t i = 0; i < u->ntypes; i++) {
        snprintf(g->types[i], 64, "%.*s", (int)u->types[i].len, u->types[i].ptr);
        g->totals[i] = u->totals[i];
    }
    g->profiles = u->profiles;
    g->samples = u->samples;
    g->first = u->first_ts;
    g->last = u->last_ts;
    return 0;
}

static gots_t read_all(ps_store_t *s, bool clamp)
{
    ps_reader_t *r;
    ps_err_t err;
    gots_t gs = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    if (!clamp)
        ps_reader_unclamp(r);
    assert_int_equal(ps_reader_unsym(r, INT64_MIN, INT64_MAX, on_rec, &gs, &err), 0);
    ps_reader_end(r);
    return gs;
}

/* the records of aaaa1111 and BBBB2222 for k profiles from first to last */
static void check_pair(const gots_t *gs, int at, uint64_t k, int64_t first, int64_t last)
{
    const got_t *a = &gs->g[at], *b = &gs->g[at + 1];
    assert_string_equal(a->bid, "aaaa1111");
    assert_int_equal(a->profiles, k);
    assert_int_equal(a->samples, 3 * k); /* [1 2] once, [3 1], [2]: 0 cpu but 3 samples */
    assert_true(a->first == first && a->last == last);
    assert_int_equal(a->nfiles, 1);
    assert_string_equal(a->files[0], "/bin/a");
    assert_int_equal(a->ntypes, 2);
    assert_string_equal(a->types[0], names[0]);
    assert_string_equal(a->types[1], names[1]);
    assert_int_equal(a->totals[0], 30 * (int64_t)k);
    assert_int_equal(a->totals[1], 6 * (int64_t)k);
    assert_string_equal(b->bid, "BBBB2222");
    assert_int_equal(b->profiles, k);
    assert_int_equal(b->samples, k); /* [3 1] only: [4 5] has lines / no build id, [3] is 0/0 */
    assert_int_equal(b->nfiles, 1);
    assert_string_equal(b->files[0], "/lib/b.so");
    assert_int_equal(b->ntypes, 2);
    assert_int_equal(b->totals[0], 20 * (int64_t)k);
    assert_int_equal(b->totals[1], 2 * (int64_t)k);
    assert_int_equal(a->hour, b->hour);
}

static void test_counts(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    int64_t t0 = 1796022000ll * PS_NS_PER_S; /* 07:00:00Z */
    append(s, t0);
    gots_t gs = read_all(s, true);
    assert_int_equal(gs.n, 2);
    check_pair(&gs, 0, 1, t0, t0);
    /* the same profile again: a duplicate, nothing counted */
    append(s, t0);
    gs = read_all(s, true);
    check_pair(&gs, 0, 1, t0, t0);
    /* one batch of three profiles: summed into the same records */
    int64_t ts[3] = {t0 + 10 * PS_NS_PER_S, t0 + 20 * PS_NS_PER_S, t0 + 30 * PS_NS_PER_S};
    append_n(s, ts, 3);
    gs = read_all(s, true);
    assert_int_equal(gs.n, 2);
    check_pair(&gs, 0, 4, t0, ts[2]);
    /* the next hour: records of their own; a range of one hour reads its records only */
    append(s, t0 + H);
    gs = read_all(s, true);
    assert_int_equal(gs.n, 4);
    check_pair(&gs, 2, 1, t0 + H, t0 + H);
    assert_int_equal(gs.g[2].hour, gs.g[0].hour + 1);
    ps_reader_t *r;
    ps_err_t err;
    gots_t one = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_unsym(r, t0 + H + 1, t0 + H + 2, on_rec, &one, &err), 0);
    ps_reader_end(r);
    assert_int_equal(one.n, 2);
    check_pair(&one, 0, 1, t0 + H, t0 + H);
    /* the counts are stored: the same after a reopen */
    ps_test_close_store(s);
    s = ps_test_open_store(dir, 0);
    gs = read_all(s, true);
    assert_int_equal(gs.n, 4);
    check_pair(&gs, 0, 4, t0, ts[2]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_retention(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 3 * H);
    int64_t now = ps_time_now();
    append(s, now - 150 * 60 * PS_NS_PER_S); /* an hour before the hour of now - 1h, whatever the minute */
    append(s, now);
    assert_int_equal(read_all(s, false).n, 4);
    ps_test_close_store(s);
    /* an hour of retention: the reader clamps the older hour away; retention deletes it */
    s = ps_test_open_store(dir, H);
    gots_t gs = read_all(s, true);
    assert_int_equal(gs.n, 2);
    check_pair(&gs, 0, 1, now, now);
    assert_int_equal(read_all(s, false).n, 4);
    ps_err_t err;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now, NULL, &err), 0);
    gs = read_all(s, false);
    assert_int_equal(gs.n, 2);
    check_pair(&gs, 0, 1, now, now);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* A schema 5 directory: the version record says 5 and the database unsym does not exist. */
static void make_schema5(const char *dir)
{
    static const char *const dbs[] = {"unsym", NULL};
    ps_test_store_downgrade(dir, 5, dbs);
}

static void test_upgrade_from_5(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    int64_t t0 = 1796022000ll * PS_NS_PER_S;
    append(s, t0);
    ps_test_close_store(s);
    make_schema5(dir);
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    o.read_only = true;
    ps_err_t err;
    assert_int_equal(ps_store_open(&o, &s, &err), PS_EVERSION);
    assert_non_null(strstr(err.msg, "no database unsym"));
    s = ps_test_open_store(dir, 0);
    assert_int_equal(s->upgraded_from, 5);
    /* the profile stored before is not counted; the next one is */
    assert_int_equal(read_all(s, true).n, 0);
    append(s, t0 + 10 * PS_NS_PER_S);
    gots_t gs = read_all(s, true);
    assert_int_equal(gs.n, 2);
    check_pair(&gs, 0, 1, t0 + 10 * PS_NS_PER_S, t0 + 10 * PS_NS_PER_S);
    ps_test_close_store(s);
    s = ps_test_open_store(dir, 0);
    assert_int_equal(s->upgraded_from, 0);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* 70 build ids in one profile (past the 8 looked up in a line, past the 64 of the bit masks): a
 * sample whose frames are one location of each (and the first twice), another of the first 3. */
static int on_count(void *ctx, const ps_store_unsym_t *u)
{
    uint64_t *c = ctx;
    assert_int_equal(u->build_id.len, 6);
    int id = (u->build_id.ptr[4] - '0') * 10 + (u->build_id.ptr[5] - '0'); /* "bid-NN" */
    assert_true(id >= 0 && id < 70);
    assert_int_equal(u->samples, id < 3 ? 2 : 1);
    assert_int_equal(u->profiles, 1);
    assert_int_equal(u->ntypes, 1);
    assert_int_equal(u->totals[0], id < 3 ? 12 : 5);
    c[0]++;
    return 0;
}

static void test_many_build_ids(void **state)
{
    (void)state;
    enum { N = 70 };
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    ps_str_t st[2 + N];
    char names[N][8];
    st[0] = (ps_str_t){"", 0};
    st[1] = (ps_str_t){"cpu", 3};
    ps_mapping_t maps[N];
    ps_location_t locs[N];
    uint32_t stack[N + 1], small[3] = {1, 2, 3};
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "bid-%02d", i);
        st[2 + i] = (ps_str_t){names[i], 6};
        maps[i] = (ps_mapping_t){.memory_start = 0x1000, .memory_limit = 0x2000, .build_id = 2 + i};
        locs[i] = (ps_location_t){.mapping = (uint32_t)i + 1, .address = 0x1000 + (uint64_t)i};
        stack[i] = (uint32_t)i + 1;
    }
    stack[N] = 1;
    int64_t v5 = 5, v7 = 7;
    ps_sample_t smp[2] = {{.nlocs = N + 1, .locs = stack, .values = &v5}, {.nlocs = 3, .locs = small, .values = &v7}};
    ps_value_type_t ty = {1, 0};
    ps_profile_t p = {.nstrings = 2 + N, .strings = st, .ntypes = 1, .sample_types = &ty, .nsamples = 2, .samples = smp,
                      .nmappings = N, .mappings = maps, .nlocations = N, .locations = locs};
    ps_label_pair_t pair = {.name = "__name__", .nlen = 8, .value = "x:cpu:count:cpu:count", .vlen = 21};
    ps_labels_t ls = {1, &pair};
    uint32_t ti = 0, nsmp;
    uint64_t sid;
    ps_append_t app = {.profile = &p, .nseries = 1, .series_labels = &ls, .type_index = &ti,
                       .ts = 1796022000ll * PS_NS_PER_S, .series_ids = &sid, .series_samples = &nsmp};
    ps_append_t *items[1] = {&app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 1, &err), 0);
    assert_int_equal(app.status, 0);
    ps_reader_t *r;
    uint64_t c = 0;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_unsym(r, INT64_MIN, INT64_MAX, on_count, &c, &err), 0);
    ps_reader_end(r);
    assert_int_equal(c, N);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* 40 build ids (bit masks) and 40 distinct sets of them (the mask table grows past 32 entries and
 * 64 slots): sample i has a frame of build id i and one of i + 1 (mod 40), value 1 + i. */
static int on_ring(void *ctx, const ps_store_unsym_t *u)
{
    uint64_t *c = ctx;
    assert_int_equal(u->build_id.len, 6);
    int id = (u->build_id.ptr[4] - '0') * 10 + (u->build_id.ptr[5] - '0');
    assert_true(id >= 0 && id < 40);
    assert_int_equal(u->samples, 2);
    assert_int_equal(u->totals[0], (1 + id) + (1 + (id + 39) % 40)); /* its sample and the one before */
    c[0]++;
    return 0;
}

static void test_many_sets(void **state)
{
    (void)state;
    enum { N = 40 };
    char *dir = tmpdir();
    ps_store_t *s = ps_test_open_store(dir, 0);
    ps_str_t st[2 + N];
    char names[N][8];
    st[0] = (ps_str_t){"", 0};
    st[1] = (ps_str_t){"cpu", 3};
    ps_mapping_t maps[N];
    ps_location_t locs[N];
    uint32_t stacks[N][2];
    int64_t vals[N];
    ps_sample_t smp[N];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof(names[i]), "bid-%02d", i);
        st[2 + i] = (ps_str_t){names[i], 6};
        maps[i] = (ps_mapping_t){.memory_start = 0x1000, .memory_limit = 0x2000, .build_id = 2 + i};
        locs[i] = (ps_location_t){.mapping = (uint32_t)i + 1, .address = 0x1000 + (uint64_t)i};
        stacks[i][0] = (uint32_t)i + 1;
        stacks[i][1] = (uint32_t)(i + 1) % N + 1;
        vals[i] = 1 + i;
        smp[i] = (ps_sample_t){.nlocs = 2, .locs = stacks[i], .values = &vals[i]};
    }
    ps_value_type_t ty = {1, 0};
    ps_profile_t p = {.nstrings = 2 + N, .strings = st, .ntypes = 1, .sample_types = &ty, .nsamples = N, .samples = smp,
                      .nmappings = N, .mappings = maps, .nlocations = N, .locations = locs};
    ps_label_pair_t pair = {.name = "__name__", .nlen = 8, .value = "x:cpu:count:cpu:count", .vlen = 21};
    ps_labels_t ls = {1, &pair};
    uint32_t ti = 0, nsmp;
    uint64_t sid;
    ps_append_t app = {.profile = &p, .nseries = 1, .series_labels = &ls, .type_index = &ti,
                       .ts = 1796022000ll * PS_NS_PER_S, .series_ids = &sid, .series_samples = &nsmp};
    ps_append_t *items[1] = {&app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 1, &err), 0);
    assert_int_equal(app.status, 0);
    ps_reader_t *r;
    uint64_t c = 0;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_unsym(r, INT64_MIN, INT64_MAX, on_ring, &c, &err), 0);
    ps_reader_end(r);
    assert_int_equal(c, N);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* The record codec: a round trip; every truncation, trailing bytes and bad counts refused. */
static void test_codec(void **state)
{
    (void)state;
    ps_unsym_rec_t r = {.profiles = 3, .samples = 7, .first_ts = -5, .last_ts = 1796022000ll * PS_NS_PER_S,
                        .nfiles = 2, .files = {4, 0}, .ntypes = 1, .types = {9}, .totals = {-12}};
    ps_buf_t b = PS_BUF_INIT;
    ps_unsym_rec_encode(&r, &b);
    ps_unsym_rec_t back;
    ps_err_t err;
    assert_int_equal(ps_unsym_rec_decode(b.data, b.len, &back, &err), 0);
    assert_memory_equal(&back, &r, sizeof(r));
    for (size_t n = 0; n < b.len; n++)
        assert_int_equal(ps_unsym_rec_decode(b.data, n, &back, &err), PS_ECORRUPT);
    ps_buf_putc(&b, 0);
    assert_int_equal(ps_unsym_rec_decode(b.data, b.len, &back, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "1 bytes after its end"));
    static const uint8_t many_files[] = {1, 1, 1, 0, 0, 9};
    assert_int_equal(ps_unsym_rec_decode(many_files, sizeof(many_files), &back, &err), PS_ECORRUPT);
    assert_non_null(strstr(err.msg, "9 file names"));
    static const uint8_t enc2[] = {2, 1, 1, 0, 0, 0, 0};
    assert_int_equal(ps_unsym_rec_decode(enc2, sizeof(enc2), &back, &err), PS_ECORRUPT);
    static const uint8_t zero[] = {1, 0, 1, 0, 0, 0, 0};
    assert_int_equal(ps_unsym_rec_decode(zero, sizeof(zero), &back, &err), PS_ECORRUPT);
    ps_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_counts),
        cmocka_unit_test(test_retention),
        cmocka_unit_test(test_upgrade_from_5),
        cmocka_unit_test(test_many_build_ids),
        cmocka_unit_test(test_many_sets),
        cmocka_unit_test(test_codec),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
