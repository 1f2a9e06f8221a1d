/*
 * txn.h - the one wrapper of LMDB's transactions and cursors (after knot-dns's knot_lmdb.h):
 * every mdb_* call of storage/ but the environment's opening (env.c) goes through it.
 *
 * A ps_txn_t remembers its first failure: the PS_E code (LMDB's error translated once, here) and
 * its message ("<what>: <LMDB's words>"). From then on every call on it does nothing and answers
 * false, so a sequence of calls is checked once, at its end: ps_txn_commit() aborts and reports
 * the first failure, and ps_txn_error() copies it into a caller's ps_err_t (a read transaction
 * then forgets it: one failed read does not fail the next). A record that is not
 * there is no failure: get, del and the cursor moves answer false and leave the error alone.
 *
 *     ps_txn_t t;
 *     if ((ret = ps_txn_begin(&t, s, PS_TXN_WRITE, err, "starting write transaction")) != 0)
 *         return ret;
 *     ps_txn_put(&t, DB_INFO, "next", 4, b.data, b.len, 0, "saving id counters");
 *     ps_txn_del(&t, DB_HEAD, kb, 16, NULL, 0, "deleting head records");
 *     return ps_txn_commit(&t, err, "committing");
 *
 * db arguments are indexes of the schema table (DB_INFO ... in internal.h), which this header does
 * not include: internal.h includes it.
 *
 * Lifetime: the bytes an MDB_val points at (from get, or a cursor's k and v) are LMDB's map and
 * valid only until the next write in that transaction and never past its end: copy them first.
 */
#ifndef PS_STORAGE_TXN_H
#define PS_STORAGE_TXN_H

#include <lmdb.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "core/err.h"
#include "store.h"

typedef struct ps_txn {
    MDB_txn *txn;  /* NULL: not begun, or ended */
    ps_store_t *s;
    int ret;       /* 0, or the first failure's PS_E code: later calls do nothing and answer false */
    bool read;     /* a read transaction: ps_txn_error reports a failure once, then reads go on */
    bool defer_sync; /* a write transaction whose commit leaves its meta page unsynced (ps_txn_commit) */
    ps_err_t err;  /* the first failure */
    void *aux;     /* what a reader derived from this snapshot (the float log's index), or NULL: */
    void (*aux_free)(void *aux); /* called with it when t ends */
    void *pend;    /* the postings of the series past W in this snapshot (series.c), or NULL: */
    void (*pend_free)(void *pend); /* called with it when t ends */
} ps_txn_t;

/* A cursor over one database of a transaction; k and v are the record it is on (lifetime as above). */
typedef struct ps_cur {
    ps_txn_t *t;
    MDB_cursor *c;
    const char *what; /* the message of a failed move: "<what>: <LMDB's words>" */
    MDB_val k, v;
} ps_cur_t;

enum { PS_TXN_READ = 1, PS_TXN_WRITE = 2 };

/** Translates an LMDB error (or errno) into a PS_E code with the message "<what>: <LMDB's words>"
 *  (MDB_MAP_FULL: the store reached --storage.max-size). The one translation of storage/. */
int ps_lmdb_err(ps_err_t *err, int rc, const char *what);

/** Begins a read (PS_TXN_READ) or write (PS_TXN_WRITE) transaction of s. A failure: its code,
 *  "<what>: <LMDB's words>" in err, t not begun (aborting it is a no-op). */
int ps_txn_begin(ps_txn_t *t, ps_store_t *s, int mode, ps_err_t *err, const char *what);
/** Begins a write transaction nested in parent (its changes are parent's only if committed). */
int ps_txn_begin_nested(ps_txn_t *t, ps_txn_t *parent, ps_err_t *err, const char *what);
/** Commits t, or aborts it if a call failed; either way t is ended. Returns 0, else the first
 *  failure (copied into err) or the commit's own: "<what>: <LMDB's words>", and as LMDB answers a
 *  short write (a full file system, e.g. tmpfs) with EIO, an EIO or ENOSPC on a full file system
 *  is PS_ENOSPACE "<what>: disk full: N bytes free on <mount point> (data directory D)" and gives
 *  up the disk reserve (ps_store_space_release). A write transaction that changed anything is
 *  durable when this returns 0 (its pages and its meta page synced), unless t->defer_sync: then
 *  its meta page waits for ps_store_sync (store.h: ps_store_writer_defer_sync). */
int ps_txn_commit(ps_txn_t *t, ps_err_t *err, const char *what);
/** Ends t without writing anything (a no-op on a transaction not begun or ended). */
void ps_txn_abort(ps_txn_t *t);
/** Copies t's first failure into err (if not NULL) and returns its code (0 if none). A read
 *  transaction forgets it then: nothing a later read relies on has changed (a write transaction
 *  keeps it to the end, as LMDB does not let a failed one go on). */
int ps_txn_error(ps_txn_t *t, ps_err_t *err);
/** After a get or del answered false for a record that must be there: t's failure if it failed,
 *  else PS_ESTORAGE "<what>: MDB_NOTFOUND: ..." in err. */
int ps_txn_missing(ps_txn_t *t, ps_err_t *err, const char *what);
/** Records rc (an LMDB error, or 0: nothing) as t's failure if it is the first; returns t->ret. */
int ps_txn_fail(ps_txn_t *t, int rc, const char *what);
/** LMDB's id of the transaction (a write transaction's is the store's next version). */
uint64_t ps_txn_id(const ps_txn_t *t);

/** The value of key k in database db into *v: true, or false if there is none (or t failed). */
bool ps_txn_get(ps_txn_t *t, int db, const void *k, size_t kn, MDB_val *v, const char *what);
/** Puts k -> v into db with LMDB's flags (0, MDB_APPEND, MDB_NOOVERWRITE...): false if it failed. */
bool ps_txn_put(ps_txn_t *t, int db, const void *k, size_t kn, const void *v, size_t vn, unsigned flags,
                const char *what);
/** ps_txn_put as an append (MDB_APPEND) when k is past db's last key, else a plain put: then LMDB
 *  starts a new page where an insert would split the full last page in two halves, so records
 *  written in key order fill their pages. */
bool ps_txn_put_append(ps_txn_t *t, int db, const void *k, size_t kn, const void *v, size_t vn, const char *what);
/** Makes room for a value of vn bytes at k (MDB_RESERVE, with flags) and returns where to write it
 *  (before the next call on t), or NULL if it failed. */
void *ps_txn_reserve(ps_txn_t *t, int db, const void *k, size_t kn, size_t vn, unsigned flags, const char *what);
/** Deletes k from db (of a DUPSORT database only the duplicate dup[0..dn) if dup is not NULL):
 *  true if it was there, false if not (or t failed). */
bool ps_txn_del(ps_txn_t *t, int db, const void *k, size_t kn, const void *dup, size_t dn, const char *what);
/** Forgets t->aux (frees it): after a change to what it was derived from. */
void ps_txn_aux_drop(ps_txn_t *t);
/** Forgets t->pend (frees it): after a change to the series records past W. */
void ps_txn_pend_drop(ps_txn_t *t);
/** Empties database db (mdb_drop, its pages freed): false if it failed. */
bool ps_txn_empty(ps_txn_t *t, int db, const char *what);
/** Statistics of database db (db < 0: LMDB's free-page database): false if it failed. */
bool ps_txn_stat(ps_txn_t *t, int db, MDB_stat *st);
/** Pages on LMDB's free list in t's snapshot (retention and compaction freed them; they are reused
 *  before the file grows); 0 if they cannot be read. */
uint64_t ps_txn_free_pages(ps_txn_t *t);
/** Calls fn with each record of LMDB's free list in t's snapshot (an IDL: n page numbers, each a
 *  size_t in pages[i * sizeof(size_t)], unaligned). False when a record is shorter than its count
 *  says (a damaged file), when fn answers false, or when the list cannot be read. */
bool ps_txn_free_lists(ps_txn_t *t, bool (*fn)(void *ctx, const uint8_t *pages, size_t n), void *ctx);

/** Opens a cursor over db (db < 0: LMDB's free-page database); what names a failed move. False if
 *  it failed (then closing c is a no-op). */
bool ps_cur_open(ps_cur_t *c, ps_txn_t *t, int db, const char *what);
/** Closes c (a no-op if it is not open). */
void ps_cur_close(ps_cur_t *c);
/* The moves: true when c is on a record (c->k, c->v), false at the end or if t failed. Inline: a
 * walk of a label's 10^6 values makes 10^6 moves. */
static inline bool ps_cur_move(ps_cur_t *c, MDB_cursor_op op)
{
    if (c->t->ret != 0 || c->c == NULL)
        return false;
    int rc = mdb_cursor_get(c->c, &c->k, &c->v, op);
    if (rc == MDB_NOTFOUND)
        return false;
    return rc == 0 || ps_txn_fail(c->t, rc, c->what) == 0;
}
static inline bool ps_cur_first(ps_cur_t *c) { return ps_cur_move(c, MDB_FIRST); }
static inline bool ps_cur_last(ps_cur_t *c) { return ps_cur_move(c, MDB_LAST); }
static inline bool ps_cur_next(ps_cur_t *c) { return ps_cur_move(c, MDB_NEXT); }
static inline bool ps_cur_prev(ps_cur_t *c) { return ps_cur_move(c, MDB_PREV); }
/** The next value of the same key (DUPSORT). */
static inline bool ps_cur_next_dup(ps_cur_t *c) { return ps_cur_move(c, MDB_NEXT_DUP); }
/** The first value of the next key (DUPSORT). */
static inline bool ps_cur_next_nodup(ps_cur_t *c) { return ps_cur_move(c, MDB_NEXT_NODUP); }
/** The first record whose key is >= k (MDB_SET_RANGE). */
bool ps_cur_seek(ps_cur_t *c, const void *k, size_t kn);
/** The first value of key k exactly (MDB_SET_KEY). */
bool ps_cur_find(ps_cur_t *c, const void *k, size_t kn);
/** The last record whose key is < k. */
bool ps_cur_seek_before(ps_cur_t *c, const void *k, size_t kn);
/** Whether the key c is on begins with the n bytes at p: 8 bytes at a time, without a call (the
 *  walks of a name's values test each key, 10^6 of them for a label with a value per series). */
static inline bool ps_cur_key_starts(const ps_cur_t *c, const void *p, size_t n)
{
    if (c->k.mv_size < n)
        return false;
    if (n < 8)
        return memcmp(c->k.mv_data, p, n) == 0;
    const unsigned char *a = c->k.mv_data, *b = p;
    uint64_t x, y;
    for (size_t i = 0; i + 8 < n; i += 8) {
        memcpy(&x, a + i, 8);
        memcpy(&y, b + i, 8);
        if (x != y)
            return false;
    }
    memcpy(&x, a + n - 8, 8); /* the last 8, overlapping the word before */
    memcpy(&y, b + n - 8, 8);
    return x == y;
}
/** Deletes the record c is on; the next ps_cur_next moves to the one after it. */
bool ps_cur_del(ps_cur_t *c);
/** Writes k = v (as ps_txn_put with no flags) through c, which is left on it: puts in key order
 * search only the leaf page c is on when the key is there (LMDB's cursor shortcut), not the tree. */
bool ps_cur_put(ps_cur_t *c, const void *k, size_t kn, const void *v, size_t vn);
/** Replaces the value of the record c is on (a move found it; k is its key, needed when v's size
 *  differs) without searching for k (MDB_CURRENT); c stays on it. */
bool ps_cur_put_current(ps_cur_t *c, const void *k, size_t kn, const void *v, size_t vn);

#endif
