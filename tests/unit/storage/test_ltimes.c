/*
 * test_ltimes.c - the label index's times (storage/ltimes.c): the label values and names a range
 * gets through them equal those of the looks at every series (ps_reader_has_data over each
 * value's postings) on random ranges over a random store of profile and float series, with
 * compacted chunks, retention (data and whole series deleted) and the upgrade that builds them;
 * the same of the profile series' times (schema 15, ps_reader_profile_label_*_in) against the looks
 * at each value's profile series (float series share pairs with them).
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

#include "core/hash.h"
#include "core/timeutil.h"
#include "storage/internal.h"
#include "storage/store.h"

#define DAY_NS (24ll * 3600 * PS_NS_PER_S)
#define RETENTION (1000 * DAY_NS)
#define NSERIES 60

static uint64_t rng_state;
static uint64_t rnd(uint64_t n)
{
    uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull); /* splitmix64 */
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (z ^ (z >> 31)) % n;
}

static ps_store_t *open_store(const char *dir)
{
    return ps_test_open_store(dir, RETENTION);
}

typedef struct series {
    bool is_float;
    ps_labels_t ls;
    int64_t t[8]; /* ns, ascending (a float's: whole ms) */
    int n, done;
} series_t;

/* t0 + up to 2 days, sorted; floats at whole ms */
static void random_times(series_t *se, int64_t t0)
{
    se->n = 1 + (int)rnd(8);
    int64_t span = rnd(3) == 0 ? 20 * 60 * PS_NS_PER_S : 2 * DAY_NS; /* some series within a few granules */
    int64_t at = t0 + (int64_t)rnd((uint64_t)(2 * DAY_NS));
    for (int i = 0; i < se->n; i++) {
        int64_t t = at + (int64_t)rnd((uint64_t)span);
        if (se->is_float)
            t -= t % 1000000;
        se->t[i] = t;
    }
    for (int i = 1; i < se->n; i++)
        for (int j = i; j > 0 && se->t[j - 1] > se->t[j]; j--) {
            int64_t x = se->t[j];
            se->t[j] = se->t[j - 1];
            se->t[j - 1] = x;
        }
    int k = 1; /* distinct */
    for (int i = 1; i < se->n; i++)
        if (se->t[i] != se->t[k - 1])
            se->t[k++] = se->t[i];
    se->n = k;
}

static const char *const ptypes[] = {"goroutine:goroutine:count:goroutine:count",
                                     "process_cpu:cpu:nanoseconds:cpu:nanoseconds"};

static void make_series(series_t *all, ps_arena_t *a, int64_t t0)
{
    static const char *jobs[] = {"api", "db", "web", "cache", "batch"};
    static const char *zones[] = {"eu", "us", "ap"};
    for (int i = 0; i < NSERIES; i++) {
        series_t *se = &all[i];
        memset(se, 0, sizeof(*se));
        se->is_float = rnd(3) == 0;
        char v[32];
        const char *name = se->is_float ? (rnd(2) ? "up" : "node_load1") : ptypes[rnd(2)];
        ps_labels_set(&se->ls, a, "__name__", 8, name, strlen(name));
        const char *job = jobs[rnd(5)];
        ps_labels_set(&se->ls, a, "job", 3, job, strlen(job));
        snprintf(v, sizeof(v), "host-%d", i % 40); /* a float and a profile series may share one */
        ps_labels_set(&se->ls, a, "instance", 8, v, strlen(v));
        snprintf(v, sizeof(v), "%d", i / 40); /* (series i and i + 40 apart) */
        ps_labels_set(&se->ls, a, "slot", 4, v, strlen(v));
        if (rnd(3) == 0) {
            const char *z = zones[rnd(3)];
            ps_labels_set(&se->ls, a, "zone", 4, z, strlen(z));
        }
        if (i % 7 == 0) { /* a name and a value of a few series */
            snprintf(v, sizeof(v), "r%d", i);
            ps_labels_set(&se->ls, a, "rare", 4, v, strlen(v));
        }
        random_times(se, t0);
    }
}

/* Writes every series' data in time order, a batch at a time, compacting now and then. */
static void write_all(ps_store_t *s, series_t *all)
{
    ps_str_t strs[1] = {{"", 0}};
    ps_profile_t prof = {0};
    prof.nstrings = 1;
    prof.strings = strs;
    uint32_t ti = 0;
    ps_err_t err;
    int batches = 0;
    for (;;) {
        ps_append_t apps[NSERIES], *items[NSERIES];
        ps_float_append_t fas[NSERIES], *fitems[NSERIES];
        ps_float_sample_t smp[NSERIES];
        uint64_t ids[NSERIES];
        uint32_t nsmp[NSERIES];
        size_t n = 0, nf = 0;
        for (int i = 0; i < NSERIES; i++) {
            series_t *se = &all[i];
            if (se->done == se->n || rnd(2))
                continue;
            int64_t t = se->t[se->done++];
            if (se->is_float) {
                memset(&fas[nf], 0, sizeof(fas[nf]));
                smp[nf] = (ps_float_sample_t){t / 1000000, (double)i};
                fas[nf].labels = &se->ls;
                fas[nf].samples = &smp[nf];
                fas[nf].nsamples = 1;
                fitems[nf] = &fas[nf];
                nf++;
            } else {
                memset(&apps[n], 0, sizeof(apps[n]));
                apps[n].profile = &prof;
                apps[n].nseries = 1;
                apps[n].series_labels = &se->ls;
                apps[n].type_index = &ti;
                apps[n].ts = t;
                apps[n].series_ids = &ids[n];
                apps[n].series_samples = &nsmp[n];
                items[n] = &apps[n];
                n++;
            }
        }
        bool left = false;
        for (int i = 0; i < NSERIES; i++)
            left |= all[i].done < all[i].n;
        if (n + nf == 0 && !left)
            break;
        if (n + nf == 0)
            continue;
        if (ps_store_write(ps_test_writer(s), items, n, fitems, nf, NULL, 0, &err) != 0)
            fail_msg("write: %s", err.msg);
        for (size_t i = 0; i < n; i++)
            if (apps[i].status != 0)
                fail_msg("profile at %lld: %s", (long long)apps[i].ts, apps[i].err.msg);
        for (size_t i = 0; i < nf; i++)
            assert_int_equal(fas[i].accepted, 1);
        if (++batches % 3 == 0) {
            uint32_t nchunks;
            if (ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err) != 0)
                fail_msg("compact: %s", err.msg);
        }
    }
}

/* ---- the two answers, as strings "v1,v2,..." ---- */

typedef struct answer {
    ps_reader_t *r;
    int64_t start, end;
    ps_buf_t out;
    uint64_t looks;
    ps_err_t *err;
    bool profile;     /* profile series only */
    const char *type; /* of this type only (its __name__) */
} answer_t;

static int pred(void *ctx, uint64_t sid)
{
    answer_t *c = ctx;
    c->looks++;
    if (c->profile) {
        ps_series_kind_t kind;
        int rc = ps_reader_series_kind(c->r, sid, &kind, c->err);
        if (rc)
            return rc == PS_ENOTFOUND ? 0 : rc;
        if (kind != PS_SERIES_PROFILE)
            return 0;
    }
    if (c->type) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_labels_t ls;
        int rc = ps_reader_series_labels(c->r, sid, &a, &ls, c->err);
        const char *t = rc == 0 ? ps_labels_value(&ls, "__name__") : NULL;
        bool same = t != NULL && strcmp(t, c->type) == 0;
        ps_arena_dispose(&a);
        if (rc || !same)
            return rc == PS_ENOTFOUND ? 0 : rc;
    }
    return ps_reader_has_data(c->r, sid, c->start, c->end, c->err);
}

static int add(void *ctx, const char *v, size_t n)
{
    answer_t *c = ctx;
    ps_buf_append(&c->out, v, n);
    ps_buf_putc(&c->out, ',');
    return 0;
}

static int found(void *ctx, const char *v, size_t n)
{
    (void)v, (void)n, (void)ctx;
    return 1;
}

static int name_exact(void *ctx, const char *n, size_t nlen)
{
    answer_t *c = ctx;
    int rc = ps_reader_label_values_where(c->r, n, nlen, pred, found, c, c->err);
    if (rc < 0)
        return rc;
    return rc == 1 ? add(c, n, nlen) : 0;
}

static const char *const names[] = {"__name__", "instance", "job", "rare", "slot", "zone", "absent"};

/* every name's values and the names over [start, end]: through the times (indexed) or not; of
 * every series, or of profile series only (profile 1: their own times), or of profile type
 * ptypes[profile - 2] (its times) */
static void answers(ps_reader_t *r, int64_t start, int64_t end, bool indexed, int profile, ps_buf_t *out,
                    uint64_t *looks)
{
    ps_err_t err;
    const char *t = profile >= 2 ? ptypes[profile - 2] : NULL;
    answer_t c = {r, start, end, PS_BUF_INIT, 0, &err, profile > 0, t};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
        const char *n = names[i];
        int rc = !indexed    ? ps_reader_label_values_where(r, n, strlen(n), pred, add, &c, &err)
                 : t         ? ps_reader_type_label_values_in(r, t, n, strlen(n), start, end, pred, add, &c, &err)
                 : profile   ? ps_reader_profile_label_values_in(r, n, strlen(n), start, end, pred, add, &c, &err)
                             : ps_reader_label_values_in(r, n, strlen(n), start, end, pred, add, &c, &err);
        if (rc != 0)
            fail_msg("values of %s: %s", names[i], err.msg);
        ps_buf_putc(&c.out, '|');
    }
    int rc = !indexed  ? ps_reader_label_names(r, name_exact, &c, &err)
             : t       ? ps_reader_type_label_names_in(r, t, start, end, pred, add, &c, &err)
             : profile ? ps_reader_profile_label_names_in(r, start, end, pred, add, &c, &err)
                       : ps_reader_label_names_in(r, start, end, pred, add, &c, &err);
    if (rc != 0)
        fail_msg("names: %s", err.msg);
    ps_buf_putc(&c.out, 0);
    *out = c.out;
    *looks += c.looks;
}

/* A random range: around the data, of any length, often starting or ending at a stored time. */
static void random_range(const series_t *all, int64_t t0, int64_t *start, int64_t *end)
{
    const series_t *se = &all[rnd(NSERIES)];
    int64_t at = rnd(2) ? se->t[rnd((uint64_t)se->n)] : t0 - DAY_NS + (int64_t)rnd((uint64_t)(4 * DAY_NS));
    static const int64_t lens[] = {0, PS_NS_PER_S, 60 * PS_NS_PER_S, 300 * PS_NS_PER_S, 3600 * PS_NS_PER_S, DAY_NS};
    int64_t len = lens[rnd(6)];
    len = len ? (int64_t)rnd((uint64_t)len) : 0;
    switch (rnd(4)) {
    case 0: *start = at, *end = at + len; break;
    case 1: *start = at - len, *end = at; break;
    case 2: *start = at - len, *end = at + len; break;
    default: *start = rnd(2) ? INT64_MIN : at, *end = rnd(2) ? INT64_MAX : at + len; break;
    }
}

/* ranges answered both ways, equal; returns the looks the indexed way saved (exact - indexed) */
static int64_t compare(ps_store_t *s, const series_t *all, int64_t t0, int nranges, const char *what)
{
    ps_reader_t *r;
    ps_err_t err;
    if (ps_reader_begin(s, &r, &err) != 0)
        fail_msg("reader: %s", err.msg);
    uint64_t exact_looks = 0, indexed_looks = 0;
    for (int k = 0; k < nranges; k++) {
        int64_t start, end;
        random_range(all, t0, &start, &end);
        for (int profile = 0; profile < 4; profile++) { /* all, profile series, of each type */
            ps_buf_t a, b;
            answers(r, start, end, false, profile, &a, &exact_looks);
            answers(r, start, end, true, profile, &b, &indexed_looks);
            if (strcmp((char *)a.data, (char *)b.data) != 0)
                fail_msg("%s%s%s, range %d [%lld, %lld]:\n  looks   %s\n  indexed %s", what,
                         profile ? " (profile series)" : "", profile >= 2 ? ptypes[profile - 2] : "", k,
                         (long long)start, (long long)end, (char *)a.data, (char *)b.data);
            ps_buf_dispose(&a);
            ps_buf_dispose(&b);
        }
    }
    ps_reader_end(r);
    return (int64_t)exact_looks - (int64_t)indexed_looks;
}

static void test_ltimes_random(void **state)
{
    (void)state;
    for (uint64_t seed = 1; seed <= 6; seed++) {
        rng_state = seed;
        char *dir = ps_test_tmpdir("/tmp/ps-test-ltimes-XXXXXX");
        ps_store_t *s = open_store(dir);
        ps_arena_t a = PS_ARENA_INIT;
        int64_t t0 = ps_time_now() - 10 * DAY_NS;
        series_t all[NSERIES];
        make_series(all, &a, t0);
        write_all(s, all);
        int64_t saved = compare(s, all, t0, 150, "written");
        /* the index decides most: far fewer looks at series */
        assert_true(saved > 0);
        /* retention: data (and series) older than t0 + 1 day deleted; then the upgrade builds the
         * times again from what is left */
        uint32_t dropped = 0;
        ps_err_t err;
        if (ps_store_retain(ps_test_writer(s), t0 + DAY_NS + RETENTION, &dropped, &err) != 0)
            fail_msg("retain: %s", err.msg);
        compare(s, all, t0, 150, "after retention");
        ps_test_close_store(s);
        static const char *const dbs[] = {"ltimes", "ptimes", NULL};
        ps_test_store_downgrade(dir, 9, dbs); /* schema 9 again: the open upgrades it */
        s = open_store(dir);
        compare(s, all, t0, 150, "upgraded");
        ps_test_close_store(s);
        static const char *const pdbs[] = {"ptimes", NULL};
        ps_test_store_downgrade(dir, 13, pdbs); /* schema 13: the profile series' times built */
        s = open_store(dir);
        compare(s, all, t0, 150, "upgraded from 13");
        ps_test_close_store(s);
        ps_arena_dispose(&a);
        ps_test_rm_rf(dir);
        free(dir);
    }
}

/* A value whose series were all deleted goes from the times, its name with its last value. */
static void test_ltimes_forgotten(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-ltimes-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t old = {0}, keep = {0};
    ps_labels_set(&old, &a, "__name__", 8, "up", 2);
    ps_labels_set(&old, &a, "gone", 4, "x", 1);
    ps_labels_set(&keep, &a, "__name__", 8, "up", 2);
    int64_t t0 = ps_time_now() - 10 * DAY_NS;
    ps_float_sample_t s1 = {t0 / 1000000, 1}, s2 = {(t0 + 2 * DAY_NS) / 1000000, 2};
    ps_float_append_t f1 = {0}, f2 = {0};
    f1.labels = &old, f1.samples = &s1, f1.nsamples = 1;
    f2.labels = &keep, f2.samples = &s2, f2.nsamples = 1;
    ps_float_append_t *fi[2] = {&f1, &f2};
    ps_err_t err;
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, fi, 2, NULL, 0, &err), 0);
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), t0 + DAY_NS + RETENTION, &dropped, &err), 0);
    assert_int_equal(dropped, 1);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    MDB_val v;
    assert_false(ps_txn_get(&r->txn, DB_LTIMES, "gone\0x", 6, &v, "test"));
    assert_false(ps_txn_get(&r->txn, DB_LTIMES, "gone", 4, &v, "test"));
    /* __name__=up keeps its record, its first the deleted sample's, and the cutoff in ltcut */
    assert_true(ps_txn_get(&r->txn, DB_LTIMES, "__name__\0up", 11, &v, "test"));
    assert_int_equal(v.mv_size, 17);
    assert_int_equal((int64_t)ps_get_be64((uint8_t *)v.mv_data + 1), s1.t * 1000000);
    assert_int_equal((int64_t)ps_get_be64((uint8_t *)v.mv_data + 9), s2.t * 1000000);
    assert_true(ps_txn_get(&r->txn, DB_INFO, "ltcut", 5, &v, "test"));
    assert_int_equal((int64_t)ps_get_be64(v.mv_data), t0 + DAY_NS);
    ps_reader_end(r);
    /* the same sample again (a new series): its records again, though the writer's memo of the
     * label times (dropped by the retention) had them */
    ps_float_append_t f3 = {0};
    f3.labels = &old, f3.samples = &s1, f3.nsamples = 1;
    ps_float_append_t *fi3 = &f3;
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, &fi3, 1, NULL, 0, &err), 0);
    assert_int_equal(f3.accepted, 1);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_true(ps_txn_get(&r->txn, DB_LTIMES, "gone\0x", 6, &v, "test"));
    assert_int_equal((int64_t)ps_get_be64((uint8_t *)v.mv_data + 1), s1.t * 1000000);
    assert_int_equal((int64_t)ps_get_be64((uint8_t *)v.mv_data + 9), s1.t * 1000000);
    assert_true(ps_txn_get(&r->txn, DB_LTIMES, "gone", 4, &v, "test"));
    ps_reader_end(r);
    ps_test_close_store(s);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

static void on_damage(void *ctx, const char *msg);

/* one empty profile of series ls at ts */
static void write_profile(ps_store_t *s, ps_labels_t *ls, int64_t ts)
{
    ps_str_t strs[1] = {{"", 0}};
    ps_profile_t prof = {0};
    prof.nstrings = 1;
    prof.strings = strs;
    uint32_t ti = 0, nsmp;
    uint64_t id;
    ps_append_t app = {0};
    app.profile = &prof, app.nseries = 1, app.series_labels = ls, app.type_index = &ti, app.ts = ts;
    app.series_ids = &id, app.series_samples = &nsmp;
    ps_append_t *items[1] = {&app};
    ps_err_t err;
    assert_int_equal(ps_store_write(ps_test_writer(s), items, 1, NULL, 0, NULL, 0, &err), 0);
    assert_int_equal(app.status, 0);
}

/* one float sample of series ls at t ns (its ms) */
static void write_sample(ps_store_t *s, ps_labels_t *ls, int64_t t)
{
    ps_float_sample_t smp = {t / 1000000, 1};
    ps_float_append_t fa = {0};
    fa.labels = ls, fa.samples = &smp, fa.nsamples = 1;
    ps_float_append_t *fi[1] = {&fa};
    ps_err_t err;
    assert_int_equal(ps_store_write(ps_test_writer(s), NULL, 0, fi, 1, NULL, 0, &err), 0);
}

static void type_key(const char *t, const char *pair, size_t n, ps_buf_t *k)
{
    uint8_t p[9] = {0};
    ps_enc_be64(p + 1, ps_hash64(t, strlen(t), 0));
    ps_buf_reset(k);
    ps_buf_append(k, p, 9);
    ps_buf_append(k, pair, n);
}

/* The profile series' times by type: each type's own values; a type record two types share makes
 * the reads say so (PS_EUNSUPPORTED: the querier selects the series then), --storage.check takes it;
 * retention deletes a deleted series' pairs from both parts. */
static void test_ptimes_types(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-ltimes-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t l1 = {0}, l2 = {0}, lf = {0};
    const char *t1 = ptypes[0], *t2 = ptypes[1];
    ps_labels_set(&l1, &a, "__name__", 8, t1, strlen(t1));
    ps_labels_set(&l1, &a, "job", 3, "api", 3);
    ps_labels_set(&l2, &a, "__name__", 8, t2, strlen(t2));
    ps_labels_set(&l2, &a, "job", 3, "db", 2);
    ps_labels_set(&lf, &a, "__name__", 8, "up", 2);
    ps_labels_set(&lf, &a, "job", 3, "web", 3);
    int64_t t0 = ps_time_now() - 10 * DAY_NS;
    write_profile(s, &l1, t0);
    write_profile(s, &l2, t0 + 1);
    write_sample(s, &lf, t0);
    ps_err_t err;
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    answer_t c = {r, t0 - PS_NS_PER_S, t0 + 1, PS_BUF_INIT, 0, &err, true, NULL}; /* (the float at t0's ms) */
    assert_int_equal(ps_reader_label_values_in(r, "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    assert_int_equal(ps_reader_profile_label_values_in(r, "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    assert_int_equal(ps_reader_type_label_values_in(r, t1, "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    assert_int_equal(ps_reader_type_label_values_in(r, t2, "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    assert_int_equal(ps_reader_type_label_values_in(r, "x:y:z:w:v", "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    assert_int_equal(ps_reader_type_label_names_in(r, t2, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), 0);
    ps_buf_putc(&c.out, 0);
    assert_string_equal((char *)c.out.data, "api,db,web,api,db,api,db,__name__,job,");
    ps_reader_end(r);
    /* t1's type record as if another type had its hash */
    ps_buf_t k = PS_BUF_INIT;
    type_key(t1, "", 0, &k);
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "test"), 0);
    assert_true(ps_txn_put(&t, DB_PTIMES, k.data, k.len, "\x02", 1, 0, "test"));
    assert_int_equal(ps_txn_commit(&t, &err, "test"), 0);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    c.r = r;
    assert_int_equal(ps_reader_type_label_values_in(r, t1, "job", 3, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err),
                     PS_EUNSUPPORTED);
    assert_int_equal(ps_reader_type_label_names_in(r, t1, t0 - PS_NS_PER_S, t0 + 1, pred, add, &c, &err), PS_EUNSUPPORTED);
    ps_reader_end(r);
    ps_check_stats_t st;
    char msg[256] = "";
    assert_int_equal(ps_store_check(s, on_damage, msg, &st, NULL, &err), 0);
    assert_int_equal(st.damaged, 0);
    /* retention: every series deleted, their pairs' records with them (the type records stay) */
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), t0 + DAY_NS + RETENTION, &dropped, &err), 0);
    assert_int_equal(dropped, 3);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    MDB_val v;
    assert_false(ps_txn_get(&r->txn, DB_PTIMES, "job\0api", 7, &v, "test"));
    assert_false(ps_txn_get(&r->txn, DB_PTIMES, "job", 3, &v, "test"));
    type_key(t2, "job\0db", 6, &k);
    assert_false(ps_txn_get(&r->txn, DB_PTIMES, k.data, k.len, &v, "test"));
    type_key(t2, "job", 3, &k);
    assert_false(ps_txn_get(&r->txn, DB_PTIMES, k.data, k.len, &v, "test"));
    type_key(t2, "", 0, &k);
    assert_true(ps_txn_get(&r->txn, DB_PTIMES, k.data, k.len, &v, "test"));
    ps_reader_end(r);
    ps_buf_dispose(&k);
    ps_buf_dispose(&c.out);
    ps_test_close_store(s);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

static void on_damage(void *ctx, const char *msg)
{
    snprintf(ctx, 256, "%s", msg);
}

/* A damaged record: the ranged label APIs answer an error naming it, --storage.check reports it. */
static void test_ltimes_damaged(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-ltimes-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = {0};
    ps_labels_set(&ls, &a, "__name__", 8, "up", 2);
    ps_labels_set(&ls, &a, "job", 3, "api", 3);
    int64_t t0 = ps_time_now() - DAY_NS;
    write_sample(s, &ls, t0);
    ps_err_t err;
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "test"), 0);
    assert_true(ps_txn_put(&t, DB_LTIMES, "job\0api", 7, "\x01\x00", 2, 0, "test"));
    assert_int_equal(ps_txn_commit(&t, &err, "test"), 0);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    answer_t c = {r, t0 - DAY_NS, t0, PS_BUF_INIT, 0, &err, false, NULL};
    assert_int_equal(ps_reader_label_values_in(r, "job", 3, t0 - DAY_NS, t0, pred, add, &c, &err), PS_ECORRUPT);
    assert_string_equal(err.msg, "label times of job=api: damaged record");
    ps_reader_end(r);
    ps_check_stats_t st;
    char msg[256] = "";
    assert_int_equal(ps_store_check(s, on_damage, msg, &st, NULL, &err), 0);
    assert_int_equal(st.damaged, 1);
    assert_string_equal(msg, "label times of job=api: damaged record");
    ps_buf_dispose(&c.out);
    ps_test_close_store(s);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_ltimes_random),
        cmocka_unit_test(test_ltimes_forgotten),
        cmocka_unit_test(test_ltimes_damaged),
        cmocka_unit_test(test_ptimes_types),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
