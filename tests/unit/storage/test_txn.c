/*
 * test_txn.c - the transaction wrapper (storage/txn.h): gets, puts, deletes and cursor moves on a
 * real store; a record that is not there is no failure; the first failure is sticky in a write
 * transaction (later calls do nothing, the commit aborts and reports it with its message) and
 * reported once by a read transaction, which then reads on. A commit is durable when it returns,
 * unless deferred (defer_sync): then once the next commit or ps_store_sync has synced it.
 */
#include <errno.h>
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

#include "storage/internal.h"

typedef struct fixture {
    char *dir;
    ps_store_t *s;
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof(*f));
    f->dir = ps_test_tmpdir("/tmp/ps-test-txn-XXXXXX");
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = f->dir;
    o.map_size = 1ull << 26;
    o.nosync = true;
    ps_err_t err;
    if (ps_store_open(&o, &f->s, &err) != 0)
        fail_msg("open: %s", err.msg);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    ps_test_close_store(f->s);
    ps_test_rm_rf(f->dir);
    free(f->dir);
    free(f);
    return 0;
}

static void put_names(ps_store_t *s, const char *const *names, size_t n)
{
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    for (size_t i = 0; i < n; i++) {
        uint8_t v[8];
        ps_enc_be64(v, i + 1);
        assert_true(ps_txn_put(&t, DB_FWDCURSOR, names[i], strlen(names[i]), v, 8, 0, "writing"));
    }
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0);
}

/* The key the cursor is on, as a string (the test's keys are short). */
static const char *key_of(const ps_cur_t *c)
{
    static char b[64];
    snprintf(b, sizeof(b), "%.*s", (int)c->k.mv_size, (const char *)c->k.mv_data);
    return b;
}

static void test_get_put_del_and_absent(void **state)
{
    fixture_t *f = *state;
    static const char *const names[] = {"b", "d", "f"};
    put_names(f->s, names, 3);
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    MDB_val v;
    assert_true(ps_txn_get(&t, DB_FWDCURSOR, "d", 1, &v, "reading"));
    assert_int_equal(v.mv_size, 8);
    assert_int_equal(ps_get_be64(v.mv_data), 2);
    /* not there: false, and no failure */
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "c", 1, &v, "reading"));
    assert_false(ps_txn_del(&t, DB_FWDCURSOR, "c", 1, NULL, 0, "deleting"));
    assert_int_equal(t.ret, 0);
    assert_true(ps_txn_del(&t, DB_FWDCURSOR, "b", 1, NULL, 0, "deleting"));
    /* a record that must be there: the message names what and LMDB's words */
    assert_int_equal(ps_txn_missing(&t, &err, "deleting a cursor"), PS_ESTORAGE);
    char want[256];
    snprintf(want, sizeof(want), "deleting a cursor: %s", mdb_strerror(MDB_NOTFOUND));
    assert_string_equal(err.msg, want);
    assert_int_equal(t.ret, 0); /* (that was the caller's failure, not the transaction's) */
    /* put_append: in key order an append, out of it a plain put */
    assert_true(ps_txn_put_append(&t, DB_FWDCURSOR, "g", 1, "1", 1, "writing"));
    assert_true(ps_txn_put_append(&t, DB_FWDCURSOR, "a", 1, "2", 1, "writing"));
    uint8_t *r = ps_txn_reserve(&t, DB_FWDCURSOR, "e", 1, 3, 0, "writing");
    assert_non_null(r);
    memcpy(r, "xyz", 3);
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0);
    assert_null(t.txn);

    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    ps_cur_t c;
    assert_true(ps_cur_open(&c, &t, DB_FWDCURSOR, "reading"));
    char seen[16] = "";
    for (bool on = ps_cur_first(&c); on; on = ps_cur_next(&c))
        strcat(seen, key_of(&c));
    assert_string_equal(seen, "adefg");
    assert_true(ps_txn_get(&t, DB_FWDCURSOR, "e", 1, &v, "reading"));
    assert_int_equal(v.mv_size, 3);
    assert_memory_equal(v.mv_data, "xyz", 3);
    ps_cur_close(&c);
    ps_cur_close(&c); /* a no-op */
    ps_txn_abort(&t);
    ps_txn_abort(&t); /* a no-op */
}

static void test_cursor_moves(void **state)
{
    fixture_t *f = *state;
    static const char *const names[] = {"b", "d", "f"};
    put_names(f->s, names, 3);
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    ps_cur_t c;
    assert_true(ps_cur_open(&c, &t, DB_FWDCURSOR, "reading"));
    assert_true(ps_cur_seek(&c, "c", 1));
    assert_string_equal(key_of(&c), "d");
    assert_true(ps_cur_seek(&c, "d", 1));
    assert_string_equal(key_of(&c), "d");
    assert_false(ps_cur_seek(&c, "g", 1));
    assert_false(ps_cur_find(&c, "c", 1));
    assert_true(ps_cur_find(&c, "f", 1));
    assert_string_equal(key_of(&c), "f");
    /* the last record before a key: within, past the end, before the first */
    assert_true(ps_cur_seek_before(&c, "d", 1));
    assert_string_equal(key_of(&c), "b");
    assert_true(ps_cur_seek_before(&c, "e", 1));
    assert_string_equal(key_of(&c), "d");
    assert_true(ps_cur_seek_before(&c, "z", 1));
    assert_string_equal(key_of(&c), "f");
    assert_false(ps_cur_seek_before(&c, "a", 1));
    assert_true(ps_cur_last(&c));
    assert_string_equal(key_of(&c), "f");
    assert_true(ps_cur_prev(&c));
    assert_string_equal(key_of(&c), "d");
    assert_int_equal(t.ret, 0);
    ps_cur_close(&c);
    ps_txn_abort(&t);
}

static void test_dup_moves_and_cursor_delete(void **state)
{
    fixture_t *f = *state;
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    static const char *const keys[] = {"job\0a", "job\0b", "zone\0x"};
    for (int k = 0; k < 3; k++)
        for (uint64_t id = 1; id <= 3; id++) {
            uint8_t v[8];
            ps_enc_be64(v, id * 10 + (uint64_t)k);
            assert_true(ps_txn_put(&t, DB_POSTINGS, keys[k], strlen(keys[k]) + 2, v, 8, 0, "writing postings"));
        }
    ps_cur_t c;
    assert_true(ps_cur_open(&c, &t, DB_POSTINGS, "reading postings"));
    uint64_t sum = 0;
    for (bool on = ps_cur_find(&c, keys[1], 5); on; on = ps_cur_next_dup(&c))
        sum += ps_get_be64(c.v.mv_data);
    assert_int_equal(sum, 11 + 21 + 31);
    int nkeys = 0;
    for (bool on = ps_cur_first(&c); on; on = ps_cur_next_nodup(&c))
        nkeys++;
    assert_int_equal(nkeys, 3);
    /* delete every duplicate of job=b through the cursor: the next move goes on after each */
    int deleted = 0;
    for (bool on = ps_cur_find(&c, keys[1], 5); on && c.k.mv_size == 5 && memcmp(c.k.mv_data, keys[1], 5) == 0;
         on = ps_cur_next(&c)) {
        assert_true(ps_cur_del(&c));
        deleted++;
    }
    assert_int_equal(deleted, 3);
    ps_cur_close(&c);
    uint8_t one[8];
    ps_enc_be64(one, 10);
    assert_true(ps_txn_del(&t, DB_POSTINGS, keys[0], 5, one, 8, "deleting postings")); /* one duplicate */
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0);
    MDB_stat st;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    assert_true(ps_txn_stat(&t, DB_POSTINGS, &st));
    assert_int_equal(st.ms_entries, 5);
    ps_txn_abort(&t);
}

static void test_write_failure_is_sticky(void **state)
{
    fixture_t *f = *state;
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    assert_true(ps_txn_put(&t, DB_FWDCURSOR, "before", 6, "1", 1, 0, "writing before"));
    /* LMDB refuses an empty key: the first failure */
    assert_false(ps_txn_put(&t, DB_FWDCURSOR, "", 0, "1", 1, 0, "writing an empty key"));
    assert_int_equal(t.ret, PS_ESTORAGE);
    char want[256];
    snprintf(want, sizeof(want), "writing an empty key: %s", mdb_strerror(MDB_BAD_VALSIZE));
    assert_string_equal(t.err.msg, want);
    /* from now on every call does nothing and answers false; the first failure stays */
    MDB_val v;
    assert_false(ps_txn_put(&t, DB_FWDCURSOR, "after", 5, "1", 1, 0, "writing after"));
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "before", 6, &v, "reading"));
    assert_false(ps_txn_del(&t, DB_FWDCURSOR, "before", 6, NULL, 0, "deleting"));
    assert_null(ps_txn_reserve(&t, DB_FWDCURSOR, "r", 1, 4, 0, "reserving"));
    ps_cur_t c;
    assert_false(ps_cur_open(&c, &t, DB_FWDCURSOR, "reading"));
    assert_false(ps_cur_first(&c));
    ps_cur_close(&c);
    assert_int_equal(ps_txn_fail(&t, EIO, "another"), PS_ESTORAGE);
    assert_string_equal(t.err.msg, want);
    ps_err_t e2;
    assert_int_equal(ps_txn_error(&t, &e2), PS_ESTORAGE); /* a write transaction keeps it */
    assert_int_equal(t.ret, PS_ESTORAGE);
    /* the commit aborts and reports the first failure */
    ps_err_clear(&err);
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), PS_ESTORAGE);
    assert_string_equal(err.msg, want);
    assert_null(t.txn);
    /* nothing of it is stored */
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "before", 6, &v, "reading"));
    assert_int_equal(t.ret, 0);
    ps_txn_abort(&t);
}

static void test_read_failure_reported_once(void **state)
{
    fixture_t *f = *state;
    static const char *const names[] = {"b"};
    put_names(f->s, names, 1);
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    /* a write in a read transaction fails (EACCES) */
    assert_false(ps_txn_put(&t, DB_FWDCURSOR, "x", 1, "1", 1, 0, "writing in a read transaction"));
    MDB_val v;
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "b", 1, &v, "reading")); /* stuck until reported */
    assert_int_equal(ps_txn_error(&t, &err), PS_ESTORAGE);
    char want[256];
    snprintf(want, sizeof(want), "writing in a read transaction: %s", mdb_strerror(EACCES));
    assert_string_equal(err.msg, want);
    /* reported: the reads go on */
    assert_int_equal(t.ret, 0);
    assert_int_equal(ps_txn_error(&t, &err), 0);
    assert_true(ps_txn_get(&t, DB_FWDCURSOR, "b", 1, &v, "reading"));
    ps_txn_abort(&t);
}

/* one write transaction putting key k (defer: its meta page left to a later sync) */
static void put_one(ps_store_t *s, const char *k, bool defer)
{
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    assert_true(ps_txn_put(&t, DB_FWDCURSOR, k, strlen(k), "v", 1, 0, "writing"));
    t.defer_sync = defer;
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0);
}

static void test_deferred_sync(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-test-txn-sync-XXXXXX");
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 26;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    put_one(s, "a", false); /* synced before it returns */
    uint64_t x = atomic_load(&s->last_txn);
    assert_true(x > 0);
    assert_int_equal(atomic_load(&s->durable_txn), x);
    put_one(s, "b", true); /* its pages synced, its meta page not */
    assert_int_equal(atomic_load(&s->last_txn), x + 1);
    assert_int_equal(atomic_load(&s->durable_txn), x);
    put_one(s, "c", true); /* its page sync made x + 1's meta page durable */
    assert_int_equal(atomic_load(&s->last_txn), x + 2);
    assert_int_equal(atomic_load(&s->durable_txn), x + 1);
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    t.defer_sync = true;
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0); /* nothing written: nothing to sync */
    assert_int_equal(atomic_load(&s->last_txn), x + 2);
    assert_int_equal(ps_store_sync(s, x + 1, &err), 0); /* durable already */
    assert_int_equal(atomic_load(&s->durable_txn), x + 1);
    assert_int_equal(ps_store_sync(s, x + 2, &err), 0);
    assert_int_equal(atomic_load(&s->durable_txn), x + 2);
    put_one(s, "d", true);
    put_one(s, "e", false); /* a synced commit: every one before it too */
    assert_int_equal(atomic_load(&s->durable_txn), x + 4);
    ps_test_close_store(s);
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("reopen: %s", err.msg);
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "starting read transaction"), 0);
    MDB_val v;
    static const char *const keys[] = {"a", "b", "c", "d", "e"};
    for (int i = 0; i < 5; i++)
        assert_true(ps_txn_get(&t, DB_FWDCURSOR, keys[i], 1, &v, "reading"));
    ps_txn_abort(&t);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_nested_abort_keeps_parent(void **state)
{
    fixture_t *f = *state;
    ps_txn_t t, child;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_WRITE, &err, "starting write transaction"), 0);
    assert_true(ps_txn_put(&t, DB_FWDCURSOR, "p", 1, "1", 1, 0, "writing"));
    assert_int_equal(ps_txn_begin_nested(&child, &t, &err, "starting nested transaction"), 0);
    MDB_val v;
    assert_true(ps_txn_get(&child, DB_FWDCURSOR, "p", 1, &v, "reading"));
    assert_true(ps_txn_put(&child, DB_FWDCURSOR, "c", 1, "1", 1, 0, "writing"));
    assert_false(ps_txn_put(&child, DB_FWDCURSOR, "", 0, "1", 1, 0, "writing")); /* the child fails */
    ps_txn_abort(&child);
    assert_int_equal(t.ret, 0);
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "c", 1, &v, "reading"));
    assert_int_equal(ps_txn_commit(&t, &err, "committing"), 0);
    assert_int_equal(ps_txn_begin(&t, f->s, PS_TXN_READ, &err, "starting read transaction"), 0);
    assert_true(ps_txn_get(&t, DB_FWDCURSOR, "p", 1, &v, "reading"));
    assert_false(ps_txn_get(&t, DB_FWDCURSOR, "c", 1, &v, "reading"));
    ps_txn_abort(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_get_put_del_and_absent, setup, teardown),
        cmocka_unit_test_setup_teardown(test_cursor_moves, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dup_moves_and_cursor_delete, setup, teardown),
        cmocka_unit_test_setup_teardown(test_write_failure_is_sticky, setup, teardown),
        cmocka_unit_test_setup_teardown(test_read_failure_reported_once, setup, teardown),
        cmocka_unit_test_setup_teardown(test_nested_abort_keeps_parent, setup, teardown),
        cmocka_unit_test(test_deferred_sync),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
