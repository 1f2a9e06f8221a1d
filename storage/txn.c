/*
 * txn.c - the transaction wrapper (txn.h): LMDB's transactions and cursors with a sticky first
 * failure, and the one translation of LMDB's errors into PS_E codes and messages.
 */
#include <errno.h>
#include <string.h>
#include <sys/statvfs.h>

#include "internal.h"

int ps_lmdb_err(ps_err_t *err, int rc, const char *what)
{
    int code = PS_ESTORAGE;
    if (rc == MDB_MAP_FULL || rc == ENOSPC)
        code = PS_ENOSPACE;
    else if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
        code = PS_ECORRUPT;
    else if (rc == MDB_VERSION_MISMATCH)
        code = PS_EVERSION;
    else if (rc == ENOMEM)
        code = PS_ENOMEM;
    if (rc == MDB_MAP_FULL)
        return ps_err_set(err, code, "%s: the store reached its maximum size (%s)", what,
                          ps_setting_name(PS_SETTING_STORE_MAX_SIZE));
    return ps_err_set(err, code, "%s: %s", what, mdb_strerror(rc));
}

/* Below this much free space a commit's EIO is taken for a full disk: LMDB's short write. */
#define DISK_FULL_SLACK (4u << 20)

/* ps_lmdb_err for a failed commit (ps_txn_commit) */
static int commit_err(ps_store_t *s, ps_err_t *err, int rc, const char *what)
{
    struct statvfs vfs;
    if ((rc == EIO || rc == ENOSPC) && statvfs(s->dir, &vfs) == 0) {
        uint64_t avail = (uint64_t)vfs.f_bavail * vfs.f_frsize;
        if (rc == ENOSPC || avail < DISK_FULL_SLACK + (s->reserve_held ? 0 : s->opts.disk_reserve)) {
            char mp[4096];
            ps_store_mount_point(s->dir, mp, sizeof(mp));
            ps_store_space_release(s); /* for retention and compaction, which free space */
            return ps_err_set(err, PS_ENOSPACE, "%s: disk full: %llu bytes free on %s (data directory %s)", what,
                              (unsigned long long)avail, mp, s->dir);
        }
    }
    return ps_lmdb_err(err, rc, what);
}

static void txn_init(ps_txn_t *t, ps_store_t *s, bool read)
{
    t->txn = NULL;
    t->s = s;
    t->ret = 0;
    t->read = read;
    t->defer_sync = false;
    t->aux = NULL;
    t->aux_free = NULL;
    t->pend = NULL;
    t->pend_free = NULL;
    ps_err_clear(&t->err);
}

void ps_txn_aux_drop(ps_txn_t *t)
{
    if (t->aux != NULL && t->aux_free != NULL)
        t->aux_free(t->aux);
    t->aux = NULL;
}

void ps_txn_pend_drop(ps_txn_t *t)
{
    if (t->pend != NULL && t->pend_free != NULL)
        t->pend_free(t->pend);
    t->pend = NULL;
}


int ps_txn_begin(ps_txn_t *t, ps_store_t *s, int mode, ps_err_t *err, const char *what)
{
    txn_init(t, s, mode == PS_TXN_READ);
    int rc = mdb_txn_begin(s->env, NULL, mode == PS_TXN_READ ? MDB_RDONLY : 0, &t->txn);
    if (rc) {
        t->txn = NULL;
        return ps_lmdb_err(err, rc, what);
    }
    return 0;
}

int ps_txn_begin_nested(ps_txn_t *t, ps_txn_t *parent, ps_err_t *err, const char *what)
{
    txn_init(t, parent->s, false);
    int rc = mdb_txn_begin(parent->s->env, parent->txn, 0, &t->txn);
    if (rc) {
        t->txn = NULL;
        return ps_lmdb_err(err, rc, what);
    }
    return 0;
}

int ps_txn_commit(ps_txn_t *t, ps_err_t *err, const char *what)
{
    if (t->ret != 0) {
        ps_txn_abort(t);
        return ps_txn_error(t, err);
    }
    ps_txn_aux_drop(t);
    ps_txn_pend_drop(t);
    size_t id = t->read ? 0 : mdb_txn_id(t->txn);
    int rc = mdb_txn_commit(t->txn);
    t->txn = NULL;
    if (rc)
        return commit_err(t->s, err, rc, what);
    MDB_envinfo ei;
    if (t->read || mdb_env_info(t->s->env, &ei) != 0 || ei.me_last_txnid != id)
        return 0; /* nothing was written */
    /* the commit wrote its pages and synced them (fdatasync), then wrote its meta page without a
     * sync (MDB_NOMETASYNC, env.c): that sync also made every earlier transaction's meta page
     * durable. Now the meta page of this one, unless the caller syncs later (ps_store_sync) */
    ps_store_durable_advance(t->s, (uint64_t)id - 1);
    atomic_store(&t->s->last_txn, (uint64_t)id);
    if (t->defer_sync)
        return 0;
    return ps_store_sync(t->s, (uint64_t)id, err);
}

void ps_store_durable_advance(ps_store_t *s, uint64_t id)
{
    uint64_t cur = atomic_load(&s->durable_txn);
    while (cur < id && !atomic_compare_exchange_weak(&s->durable_txn, &cur, id))
        ;
}

int ps_store_sync(ps_store_t *s, uint64_t id, ps_err_t *err)
{
    if (s->opts.nosync || atomic_load(&s->durable_txn) >= id)
        return 0;
    uint64_t last = atomic_load(&s->last_txn); /* committed before the sync starts: covered by it */
    int rc = mdb_env_sync(s->env, 1);
    if (rc != 0) /* not commit_err: this may run beside the writer (store.h) */
        return ps_lmdb_err(err, rc, "syncing the committed transaction");
    ps_store_durable_advance(s, last);
    return 0;
}

void ps_txn_abort(ps_txn_t *t)
{
    ps_txn_aux_drop(t);
    ps_txn_pend_drop(t);
    if (t->txn != NULL)
        mdb_txn_abort(t->txn);
    t->txn = NULL;
}

int ps_txn_error(ps_txn_t *t, ps_err_t *err)
{
    int ret = t->ret;
    if (ret != 0 && err != NULL)
        *err = t->err;
    if (t->read) {
        t->ret = 0;
        ps_err_clear(&t->err);
    }
    return ret;
}

int ps_txn_missing(ps_txn_t *t, ps_err_t *err, const char *what)
{
    return t->ret != 0 ? ps_txn_error(t, err) : ps_lmdb_err(err, MDB_NOTFOUND, what);
}

int ps_txn_fail(ps_txn_t *t, int rc, const char *what)
{
    if (rc != 0 && t->ret == 0)
        t->ret = ps_lmdb_err(&t->err, rc, what);
    return t->ret;
}

uint64_t ps_txn_id(const ps_txn_t *t)
{
    return mdb_txn_id(t->txn);
}

static MDB_dbi dbi_of(const ps_txn_t *t, int db)
{
    return db < 0 ? 0 /* FREE_DBI */ : t->s->dbi[db];
}

bool ps_txn_get(ps_txn_t *t, int db, const void *k, size_t kn, MDB_val *v, const char *what)
{
    if (t->ret != 0)
        return false;
    MDB_val key = ps_mval(k, kn);
    int rc = mdb_get(t->txn, dbi_of(t, db), &key, v);
    if (rc == MDB_NOTFOUND)
        return false;
    return ps_txn_fail(t, rc, what) == 0;
}

bool ps_txn_put(ps_txn_t *t, int db, const void *k, size_t kn, const void *v, size_t vn, unsigned flags,
                const char *what)
{
    if (t->ret != 0)
        return false;
    MDB_val key = ps_mval(k, kn), val = ps_mval(v, vn);
    return ps_txn_fail(t, mdb_put(t->txn, dbi_of(t, db), &key, &val, flags), what) == 0;
}

bool ps_txn_put_append(ps_txn_t *t, int db, const void *k, size_t kn, const void *v, size_t vn, const char *what)
{
    if (t->ret != 0)
        return false;
    MDB_val key = ps_mval(k, kn), val = ps_mval(v, vn);
    int rc = mdb_put(t->txn, dbi_of(t, db), &key, &val, MDB_APPEND);
    if (rc == MDB_KEYEXIST)
        rc = mdb_put(t->txn, dbi_of(t, db), &key, &val, 0);
    return ps_txn_fail(t, rc, what) == 0;
}

void *ps_txn_reserve(ps_txn_t *t, int db, const void *k, size_t kn, size_t vn, unsigned flags, const char *what)
{
    if (t->ret != 0)
        return NULL;
    MDB_val key = ps_mval(k, kn), val = {vn, NULL};
    if (ps_txn_fail(t, mdb_put(t->txn, dbi_of(t, db), &key, &val, flags | MDB_RESERVE), what) != 0)
        return NULL;
    return val.mv_data;
}

bool ps_txn_del(ps_txn_t *t, int db, const void *k, size_t kn, const void *dup, size_t dn, const char *what)
{
    if (t->ret != 0)
        return false;
    MDB_val key = ps_mval(k, kn), val = ps_mval(dup, dn);
    int rc = mdb_del(t->txn, dbi_of(t, db), &key, dup != NULL ? &val : NULL);
    if (rc == MDB_NOTFOUND)
        return false;
    return ps_txn_fail(t, rc, what) == 0;
}

bool ps_txn_empty(ps_txn_t *t, int db, const char *what)
{
    return t->ret == 0 && ps_txn_fail(t, mdb_drop(t->txn, dbi_of(t, db), 0), what) == 0;
}

bool ps_txn_stat(ps_txn_t *t, int db, MDB_stat *st)
{
    return t->ret == 0 && mdb_stat(t->txn, dbi_of(t, db), st) == 0;
}

bool ps_txn_free_lists(ps_txn_t *t, bool (*fn)(void *ctx, const uint8_t *pages, size_t n), void *ctx)
{
    ps_cur_t c;
    if (!ps_cur_open(&c, t, -1, "reading the free list"))
        return false;
    bool ok = true;
    for (bool on = ps_cur_first(&c); on && ok; on = ps_cur_next(&c)) {
        /* an IDL: its count, then that many page numbers */
        size_t cnt;
        if (c.v.mv_size < sizeof(size_t))
            ok = false;
        else
            memcpy(&cnt, c.v.mv_data, sizeof(cnt));
        if (ok && cnt > c.v.mv_size / sizeof(size_t) - 1)
            ok = false;
        if (ok)
            ok = fn(ctx, (const uint8_t *)c.v.mv_data + sizeof(size_t), cnt);
    }
    ps_cur_close(&c);
    return ok;
}

static bool count_pages(void *ctx, const uint8_t *pages, size_t n)
{
    (void)pages;
    *(uint64_t *)ctx += n;
    return true;
}

uint64_t ps_txn_free_pages(ps_txn_t *t)
{
    uint64_t n = 0;
    ps_txn_free_lists(t, count_pages, &n);
    return n;
}

bool ps_cur_open(ps_cur_t *c, ps_txn_t *t, int db, const char *what)
{
    c->t = t;
    c->c = NULL;
    c->what = what;
    c->k = c->v = ps_mval(NULL, 0);
    if (t->ret != 0)
        return false;
    int rc = mdb_cursor_open(t->txn, dbi_of(t, db), &c->c);
    if (rc)
        c->c = NULL;
    return ps_txn_fail(t, rc, what) == 0;
}

void ps_cur_close(ps_cur_t *c)
{
    if (c->c != NULL)
        mdb_cursor_close(c->c);
    c->c = NULL;
}

bool ps_cur_seek(ps_cur_t *c, const void *k, size_t kn)
{
    c->k = ps_mval(k, kn);
    return ps_cur_move(c, MDB_SET_RANGE);
}

bool ps_cur_find(ps_cur_t *c, const void *k, size_t kn)
{
    c->k = ps_mval(k, kn);
    return ps_cur_move(c, MDB_SET_KEY);
}

bool ps_cur_seek_before(ps_cur_t *c, const void *k, size_t kn)
{
    if (ps_cur_seek(c, k, kn))
        return ps_cur_prev(c);
    return c->t->ret == 0 && ps_cur_last(c);
}

bool ps_cur_put(ps_cur_t *c, const void *k, size_t kn, const void *v, size_t vn)
{
    if (c->t->ret != 0 || c->c == NULL)
        return false;
    MDB_val key = ps_mval(k, kn), val = ps_mval(v, vn);
    return ps_txn_fail(c->t, mdb_cursor_put(c->c, &key, &val, 0), c->what) == 0;
}

bool ps_cur_put_current(ps_cur_t *c, const void *k, size_t kn, const void *v, size_t vn)
{
    if (c->t->ret != 0 || c->c == NULL)
        return false;
    MDB_val key = ps_mval(k, kn), val = ps_mval(v, vn);
    return ps_txn_fail(c->t, mdb_cursor_put(c->c, &key, &val, MDB_CURRENT), c->what) == 0;
}

bool ps_cur_del(ps_cur_t *c)
{
    if (c->t->ret != 0 || c->c == NULL)
        return false;
    return ps_txn_fail(c->t, mdb_cursor_del(c->c, 0), c->what) == 0;
}
