/*
 * fwdlog.c - the forwarding log (store.h; docs/FORMAT.md "Forwarding log"): what src/forward sends
 * to other servers, written in the same transaction as the data it forwards, so an acknowledged
 * write is also queued for forwarding and a crash loses neither. Keys are sequence numbers in
 * big-endian order, so new entries are appended (MDB_APPEND) and trimming deletes from the front.
 * The next sequence number lives in DB_INFO "fwdnext", not in the last key: the log may be empty
 * after a trim, and numbers must never be reused (a cursor past them would skip new entries).
 */
#include <stdatomic.h>
#include <string.h>

#include "internal.h"

#define TRIM_MAX 100000 /* entries deleted by one ps_store_forward_advance: keeps its transaction short */

void ps_store_set_forward(ps_store_t *s, ps_store_forward_floats_fn fn, void *ctx)
{
    atomic_store(&s->fwd_ctx, ctx);
    atomic_store(&s->fwd_floats, fn);
}

int ps_forward_log_load_next(ps_txn_t *txn, uint64_t *next, ps_err_t *err)
{
    MDB_val v;
    if (!ps_txn_get(txn, DB_INFO, "fwdnext", 7, &v, "reading the forwarding log's next number")) {
        if (txn->ret)
            return ps_txn_error(txn, err);
        *next = 1;
        return 0;
    }
    if (v.mv_size != 8)
        return ps_err_set(err, PS_ECORRUPT, "info \"fwdnext\": %zu bytes, not 8", v.mv_size);
    *next = ps_get_be64(v.mv_data);
    return 0;
}

int ps_forward_log_put(ps_store_writer_t *w, ps_txn_t *txn, int64_t wall, const void *data, size_t len, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, w->fwd_next);
    uint8_t *v = ps_txn_reserve(txn, DB_FWDLOG, kb, 8, 8 + len, MDB_APPEND, "writing the forwarding log");
    if (v == NULL)
        return ps_txn_error(txn, err);
    ps_enc_be64(v, (uint64_t)wall);
    memcpy(v + 8, data, len);
    w->fwd_next++;
    uint8_t nb[8];
    ps_enc_be64(nb, w->fwd_next);
    ps_txn_put(txn, DB_INFO, "fwdnext", 7, nb, 8, 0, "writing the forwarding log's next number");
    return ps_txn_error(txn, err);
}

/* A read transaction with a cursor over the log (log_close ends what was begun). */
static int log_open(ps_store_t *s, ps_txn_t *txn, ps_cur_t *cur, ps_err_t *err)
{
    cur->c = NULL;
    int ret = ps_txn_begin(txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    return ps_cur_open(cur, txn, DB_FWDLOG, "reading the forwarding log") ? 0 : ps_txn_error(txn, err);
}

static void log_close(ps_txn_t *txn, ps_cur_t *cur)
{
    ps_cur_close(cur);
    ps_txn_abort(txn);
}

/* An entry's key is its 8-byte sequence number, its value an 8-byte time and the payload. */
static int log_entry_check(const MDB_val *k, const MDB_val *v, ps_err_t *err)
{
    if (k->mv_size != 8 || v->mv_size < 8)
        return ps_err_set(err, PS_ECORRUPT, "forwarding log: an entry of %zu bytes under a key of %zu", v->mv_size,
                          k->mv_size);
    return 0;
}

int ps_store_forward_read(ps_store_t *s, uint64_t after, size_t max_n, size_t max_bytes,
                          int (*cb)(void *ctx, const ps_forward_log_entry_t *e), void *ctx, uint64_t *last,
                          ps_err_t *err)
{
    ps_txn_t txn = {0};
    ps_cur_t cur;
    int ret = log_open(s, &txn, &cur, err);
    if (ret != 0)
        goto Done;
    if (last != NULL) {
        MDB_val v;
        bool found = ps_txn_get(&txn, DB_INFO, "fwdnext", 7, &v, "reading the forwarding log's next number");
        *last = found && v.mv_size == 8 ? ps_get_be64(v.mv_data) - 1 : 0;
        ps_txn_error(&txn, NULL); /* a failed read: 0, as for no number */
    }
    uint8_t kb[8];
    ps_enc_be64(kb, after + 1);
    size_t n = 0, bytes = 0;
    for (bool on = ps_cur_seek(&cur, kb, 8); on && n < max_n; on = ps_cur_next(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        if ((ret = log_entry_check(&k, &v, err)) != 0)
            goto Done;
        if (n > 0 && bytes + v.mv_size - 8 > max_bytes)
            break;
        ps_forward_log_entry_t e = {ps_get_be64(k.mv_data), (int64_t)ps_get_be64(v.mv_data),
                                    (const uint8_t *)v.mv_data + 8, v.mv_size - 8};
        n++;
        bytes += e.len;
        if ((ret = cb(ctx, &e)) != 0)
            goto Done;
    }
    ret = ps_txn_error(&txn, err);
Done:
    log_close(&txn, &cur);
    return ret;
}

int ps_store_forward_bound(ps_store_t *s, uint64_t after, uint64_t max_bytes, uint64_t *cut, ps_err_t *err)
{
    ps_txn_t txn = {0};
    ps_cur_t cur;
    *cut = after;
    int ret = log_open(s, &txn, &cur, err);
    if (ret != 0)
        goto Done;
    uint64_t bytes = 0;
    for (bool on = ps_cur_last(&cur); on; on = ps_cur_prev(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        if ((ret = log_entry_check(&k, &v, err)) != 0)
            goto Done;
        uint64_t seq = ps_get_be64(k.mv_data);
        if (seq <= after)
            break;
        bytes += v.mv_size - 8;
        if (bytes > max_bytes) {
            *cut = seq;
            break;
        }
    }
    ret = ps_txn_error(&txn, err);
Done:
    log_close(&txn, &cur);
    return ret;
}

int ps_store_forward_cursor(ps_store_t *s, const char *name, uint64_t *seq, ps_err_t *err)
{
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    MDB_val v;
    if (!ps_txn_get(&txn, DB_FWDCURSOR, name, strlen(name), &v, "reading a forwarding cursor"))
        ret = txn.ret ? ps_txn_error(&txn, err) : PS_ENOTFOUND;
    else if (v.mv_size != 8)
        ret = ps_err_set(err, PS_ECORRUPT, "forwarding cursor \"%s\": %zu bytes, not 8", name, v.mv_size);
    else
        *seq = ps_get_be64(v.mv_data);
    ps_txn_abort(&txn);
    return ret;
}

static bool listed(const MDB_val *k, const char *const *names, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strlen(names[i]) == k->mv_size && memcmp(names[i], k->mv_data, k->mv_size) == 0)
            return true;
    return false;
}

int ps_store_forward_advance(ps_store_writer_t *w, const char *const *names, const uint64_t *seqs, size_t n, uint64_t *trimmed,
                             ps_err_t *err)
{
    ps_txn_t txn;
    ps_cur_t cur;
    uint64_t ndel = 0;
    int ret = ps_txn_begin(&txn, w->s, PS_TXN_WRITE, err, "starting write transaction");
    if (ret != 0)
        return ret;
    uint64_t upto = w->fwd_next - 1; /* every entry, when no endpoint is left */
    for (size_t i = 0; i < n; i++) {
        uint8_t vb[8];
        ps_enc_be64(vb, seqs[i]);
        ps_txn_put(&txn, DB_FWDCURSOR, names[i], strlen(names[i]), vb, 8, 0, "writing a forwarding cursor");
        if (seqs[i] < upto)
            upto = seqs[i];
    }
    /* cursors of endpoints no longer configured */
    if (ps_cur_open(&cur, &txn, DB_FWDCURSOR, "deleting a forwarding cursor")) {
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur))
            if (!listed(&cur.k, names, n) && !ps_cur_del(&cur))
                break;
        ps_cur_close(&cur);
    }
    /* the entries every endpoint has, from the front */
    if (ps_cur_open(&cur, &txn, DB_FWDLOG, "trimming the forwarding log")) {
        for (bool on = ps_cur_first(&cur); on && ndel < TRIM_MAX; on = ps_cur_next(&cur)) { /* after a delete: the next one */
            if (cur.k.mv_size != 8 || ps_get_be64(cur.k.mv_data) > upto)
                break;
            if (!ps_cur_del(&cur))
                break;
            ndel++;
        }
        ps_cur_close(&cur);
    }
    if ((ret = ps_txn_commit(&txn, err, "committing the forwarding cursors")) != 0)
        return ret;
    if (trimmed != NULL)
        *trimmed = ndel;
    return 0;
}
