/*
 * storefix.h - the temporary store the query tests fill: opened in a new folder (no fsync),
 * profiles of $PS_TESTDATA/pprof ingested under given labels at a given time, and removed whole
 * at the end. Include after "../testutil.h".
 */
#ifndef PS_TEST_STOREFIX_H
#define PS_TEST_STOREFIX_H

#include "ingest/ingest.h"
#include "storage/store.h"
#include "../storewriter.h"

/** A store in a new folder made from tmpl (*dir, malloc'ed); fails the test if it cannot. */
static inline ps_store_t *ps_test_store_open(const char *tmpl, char **dir)
{
    *dir = ps_test_tmpdir(tmpl);
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = *dir;
    o.nosync = true;
    ps_store_t *store = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_store_open(&o, &store, &err) != 0)
        fail_msg("open: %s", err.msg);
    return store;
}

/** Closes the store and removes its folder (and frees dir). */
static inline void ps_test_store_close(ps_store_t *store, char *dir)
{
    ps_test_close_store(store);
    ps_test_rm_rf(dir);
    free(dir);
}

/** Ingests pprof/<rel> under labels ("{job=\"api\"}") at when (as /ingest's time= takes it). */
static inline void ps_test_ingest_at(ps_store_t *store, const char *rel, const char *labels, const char *when)
{
    size_t len;
    uint8_t *b = ps_test_read_fixture(rel, &len);
    ps_ingest_params_t ip = {.labels = labels, .labels_len = strlen(labels), .time = when, .time_len = strlen(when),
                             .delta = -1};
    ps_arena_t a = PS_ARENA_INIT;
    ps_append_t app;
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_ingest_prepare(b, (size_t)len, &ip, NULL, &a, &app, &err) != 0)
        fail_msg("%s: %s", rel, err.msg);
    app.series_ids = ps_arena_calloc(&a, app.nseries, sizeof(uint64_t));
    app.series_samples = ps_arena_calloc(&a, app.nseries, sizeof(uint32_t));
    ps_append_t *items[1] = {&app};
    if (ps_store_write_batch(ps_test_writer(store), items, 1, &err) != 0 || app.status != 0)
        fail_msg("%s: %s / %s", rel, err.msg, app.err.msg);
    ps_arena_dispose(&a);
    free(b);
}

/** ps_test_ingest_at at ts_s seconds since the epoch. */
static inline void ps_test_ingest(ps_store_t *store, const char *rel, const char *labels, int64_t ts_s)
{
    char when[32];
    snprintf(when, sizeof(when), "%lld", (long long)ts_s);
    ps_test_ingest_at(store, rel, labels, when);
}

/** The four Go CPU profiles of the query tests' store (their headers draw it): cpu-01 @t0+10 and
 *  cpu-02 @t0+20 under {job="api",instance="a"}, cpu-03 @t0+15 {job="api",instance="b"}, cpu-04
 *  @t0+30 {job="batch"}. */
static inline void ps_test_ingest_cpu4(ps_store_t *store, int64_t t0)
{
    ps_test_ingest(store, "go/cpu-01.pb.gz", "{job=\"api\",instance=\"a\"}", t0 + 10);
    ps_test_ingest(store, "go/cpu-02.pb.gz", "{job=\"api\",instance=\"a\"}", t0 + 20);
    ps_test_ingest(store, "go/cpu-03.pb.gz", "{job=\"api\",instance=\"b\"}", t0 + 15);
    ps_test_ingest(store, "go/cpu-04.pb.gz", "{job=\"batch\"}", t0 + 30);
}

/* the cpu totals of cpu-01 .. cpu-04 in nanoseconds ($PS_TESTDATA/pprof's README) */
#define CPU01 2980000000LL
#define CPU02 2930000000LL
#define CPU03 2890000000LL
#define CPU04 2890000000LL

/** A test's read snapshot of a store, its arena and error. */
typedef struct ps_test_rfx {
    ps_reader_t *r;
    ps_arena_t a;
    ps_err_t err;
} ps_test_rfx_t;

static inline void ps_test_rfx_begin(ps_test_rfx_t *f, ps_store_t *store)
{
    memset(f, 0, sizeof(*f));
    ps_err_clear(&f->err);
    if (ps_reader_begin(store, &f->r, &f->err) != 0)
        fail_msg("reader: %s", f->err.msg);
}

static inline void ps_test_rfx_end(ps_test_rfx_t *f)
{
    ps_reader_end(f->r);
    ps_arena_dispose(&f->a);
}

#endif
