/*
 * floats_compact.c - float series, compaction and retention: closing the heads of idle series
 * into fchunks, deleting heads past the retention.
 */
#include <stdlib.h>

#include "floats.h"

/* ---- compaction and retention ---- */

#define FCOMPACT_PER_TXN 1024

/* Closes the heads due: all when force, else those of series idle (no append in this process)
 * for compact_window_ns of wall time, measured as for profile heads. */
int ps_float_compact(ps_store_writer_t *w, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err)
{
    int64_t win = w->s->opts.compact_window_ns;
    if (!force && win <= 0)
        return 0;
    uint8_t from[8] = {0};
    for (;;) {
        ps_txn_t t, *txn = &t;
        int ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting compaction transaction");
        if (ret)
            return ret;
        ps_cur_t cur;
        if (!ps_cur_open(&cur, txn, DB_FHEAD, "reading float heads")) {
            ps_txn_abort(txn);
            return ps_txn_error(txn, err);
        }
        uint64_t due[FCOMPACT_PER_TXN];
        size_t ndue = 0;
        bool more = false;
        for (bool on = ps_cur_seek(&cur, from, 8); on; on = ps_cur_next(&cur)) {
            MDB_val k = cur.k;
            if (k.mv_size == 8) {
                uint64_t sid = ps_get_be64(k.mv_data);
                int64_t last;
                if (!ps_walls_get(&w->append_wall, sid, &last))
                    last = w->opened_wall;
                if (force || now_ns - last >= win) {
                    if (ndue == FCOMPACT_PER_TXN) {
                        more = true;
                        ps_enc_be64(from, sid);
                        break;
                    }
                    due[ndue++] = sid;
                }
            }
        }
        ps_cur_close(&cur);
        if (txn->ret) {
            ps_txn_abort(txn);
            return ps_txn_error(txn, err);
        }
        for (size_t i = 0; i < ndue && ret == 0; i++) {
            uint8_t kb[16];
            int64_t min_t, max_t;
            size_t plen = 0;
            uint64_t ptxn = 0;
            ps_buf_t copy = PS_BUF_INIT; /* the chunk, assembled (not pointing into the map) */
            if ((ret = ps_float_head_read(w->s, txn, due[i], &copy, &plen, &ptxn, &min_t, &max_t, err)) != 0) {
                if (ret == PS_ENOTFOUND)
                    ret = ps_err_set(err, PS_EINTERNAL, "series %llu: float head vanished", (unsigned long long)due[i]);
                ps_buf_dispose(&copy);
                break;
            }
            ps_buf_t closed = PS_BUF_INIT;
            ps_float_closed_value(copy.data, copy.len, &closed);
            ps_buf_dispose(&copy);
            if ((ret = ps_float_pack_before(w, txn, NULL, due[i], min_t, max_t, closed.len - 1, err)) != 0) {
                ps_buf_dispose(&closed);
                break;
            }
            ps_key_sid_ts(kb, due[i], t_key(max_t));
            /* the compactor closes chunks in key order: appended, they fill their pages */
            bool ok = ps_txn_put_append(txn, DB_FCHUNKS, kb, 16, closed.data, closed.len, "writing float chunk");
            ps_buf_dispose(&closed);
            if (!ok) {
                ret = ps_txn_error(txn, err);
                break;
            }
            ps_enc_be64(kb, due[i]);
            if (!ps_txn_del(txn, DB_FHEAD, kb, 8, NULL, 0, "deleting float head"))
                ret = ps_txn_missing(txn, err, "deleting float head");
            else if (plen > 0)
                ret = ps_float_prefix_del(w->s, txn, ptxn, due[i], err);
        }
        if (ret == 0 && ndue > 0)
            ret = ps_txn_commit(txn, err, "committing compaction");
        else
            ps_txn_abort(txn);
        if (ndue > 0 || ret)
            ps_float_state_clear(w->wc); /* the cached heads are gone (or not: reload either way) */
        if (ret)
            return ret;
        *nchunks += (uint32_t)ndue;
        if (!more)
            return 0;
    }
}

static void touch(uint64_t **touched, size_t *n, size_t *cap, uint64_t sid)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *touched = ps_xrealloc(*touched, *cap * sizeof(uint64_t));
    }
    (*touched)[(*n)++] = sid;
}

/* Deletes the float heads whose newest sample is older than cutoff (ns) and adds their series
 * to touched. (Closed float chunks are dropped with the profile chunks, by key.) */
int ps_float_retain(ps_store_writer_t *w, ps_txn_t *txn, int64_t cutoff_ns, uint64_t **touched, size_t *ntouched, size_t *cap,
                    ps_err_t *err)
{
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_FHEAD, "applying retention to float heads"))
        return ps_txn_error(txn, err);
    uint64_t *del = NULL, *dtxn = NULL; /* the series, and the transactions of their prefixes */
    size_t ndel = 0, capdel = 0, ntxn = 0, captxn = 0;
    ps_buf_t head = PS_BUF_INIT;
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        int64_t min_t, max_t;
        size_t plen;
        uint64_t ptxn;
        if (k.mv_size == 8) {
            uint64_t sid = ps_get_be64(k.mv_data);
            ps_buf_reset(&head);
            if ((ret = ps_float_head_value(w->s, txn, sid, &v, &head, &plen, &ptxn, &min_t, &max_t, err)) != 0)
                break;
            if (max_t < floor_div(cutoff_ns, 1000000) || (max_t == floor_div(cutoff_ns, 1000000) &&
                                                           t_key(max_t) < cutoff_ns)) {
                touch(&del, &ndel, &capdel, sid);
                touch(&dtxn, &ntxn, &captxn, plen > 0 ? ptxn : 0);
            }
        }
    }
    ps_cur_close(&cur);
    ps_buf_dispose(&head);
    if (ret == 0)
        ret = ps_txn_error(txn, err);
    for (size_t i = 0; i < ndel && ret == 0; i++) {
        uint8_t kb[8];
        ps_enc_be64(kb, del[i]);
        if (!ps_txn_del(txn, DB_FHEAD, kb, 8, NULL, 0, "applying retention to float heads"))
            ret = ps_txn_missing(txn, err, "applying retention to float heads");
        else if (dtxn[i] == 0 || (ret = ps_float_prefix_del(w->s, txn, dtxn[i], del[i], err)) == 0)
            touch(touched, ntouched, cap, del[i]);
    }
    free(dtxn);
    free(del);
    return ret;
}

