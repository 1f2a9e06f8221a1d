/*
 * storewriter.h - the writer of each store a test opened (ps_store_writer_t): opened on the first
 * write, closed with the store by ps_test_close_store. Include after "../testutil.h".
 */
#ifndef PS_TEST_STOREWRITER_H
#define PS_TEST_STOREWRITER_H

#include "storage/store.h"

static struct {
    ps_store_t *s;
    ps_store_writer_t *w;
} ps_test_writers[16];

/** A store in dir (a 1 GiB map, no fsync) with the given retention (0: forever); fails the test if
 *  it cannot be opened. */
static inline ps_store_t *ps_test_open_store(const char *dir, int64_t retention)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    o.retention_ns = retention;
    o.nosync = true;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

/** The writer of s, opened the first time; fails the test if it cannot be opened. */
static inline ps_store_writer_t *ps_test_writer(ps_store_t *s)
{
    size_t free_at = 16;
    for (size_t i = 0; i < 16; i++) {
        if (ps_test_writers[i].s == s)
            return ps_test_writers[i].w;
        if (ps_test_writers[i].s == NULL && free_at == 16)
            free_at = i;
    }
    if (free_at == 16)
        fail_msg("more than 16 stores with writers open");
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_store_writer_open(s, &ps_test_writers[free_at].w, &err) != 0)
        fail_msg("writer open: %s", err.msg);
    ps_test_writers[free_at].s = s;
    return ps_test_writers[free_at].w;
}

/** Closes the writer of s (if one was opened), then s. */
static inline void ps_test_close_store(ps_store_t *s)
{
    for (size_t i = 0; s != NULL && i < 16; i++)
        if (ps_test_writers[i].s == s) {
            ps_store_writer_close(ps_test_writers[i].w);
            ps_test_writers[i].s = NULL;
            ps_test_writers[i].w = NULL;
        }
    ps_store_close(s);
}

/* storage/internal.h: the pending series' hash index and postings entries written (series.c) */
int ps_series_index_now(ps_store_writer_t *w, ps_err_t *err);

/** Every series of the store in dir (closed) in the series index and postings, as a store before
 *  schema 13 has them: the start of an older store made by this version. */
static inline void ps_test_store_index_all(const char *dir)
{
    ps_store_t *s = ps_test_open_store(dir, 0);
    ps_err_t err;
    if (ps_series_index_now(ps_test_writer(s), &err) != 0)
        fail_msg("series index: %s", err.msg);
    ps_test_close_store(s);
}

#ifdef MDB_VERSION_MAJOR
/** An older store again (for its upgrade at the next open): the databases dbs (NULL-terminated)
 *  dropped (they did not exist) and the schema version record set to version. The store must be
 *  closed. */
static inline void ps_test_store_downgrade(const char *dir, uint8_t version, const char *const *dbs)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    ps_test_store_index_all(dir);
    assert_int_equal(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 64);
    mdb_env_set_mapsize(env, 2ull << 30);
    assert_int_equal(mdb_env_open(env, dir, 0, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    for (; *dbs != NULL; dbs++) {
        assert_int_equal(mdb_dbi_open(txn, *dbs, 0, &dbi), 0);
        assert_int_equal(mdb_drop(txn, dbi, 1), 0);
    }
    assert_int_equal(mdb_dbi_open(txn, "info", 0, &dbi), 0);
    uint8_t v[4] = {0, 0, 0, version};
    MDB_val k = {6, "schema"}, d = {4, v}, wk = {7, "seriesw"};
    assert_int_equal(mdb_put(txn, dbi, &k, &d, 0), 0);
    if (version < 13) /* (the series index's watermark is new in 13) */
        assert_int_equal(mdb_del(txn, dbi, &wk, NULL), 0);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
}
#endif

#endif
