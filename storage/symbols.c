/*
 * symbols.c - content-addressed symbols (strings, mappings, functions, locations, sample label
 * sets) and the stack tree, with the writer's in-memory caches (writer.c) in front of LMDB.
 *
 * A symbol is stored once: DB_SYM maps kind+id to its content, DB_SYM_HASH maps kind+hash of the
 * content to the ids having that hash (collisions resolved by comparing content). Ids are dense
 * per kind, starting at 1; id 0 of SYM_STRING is the empty string and is never stored.
 */
#include <stdlib.h>

#include "internal.h"

bool ps_sym_get(ps_txn_t *txn, int kind, uint64_t id, MDB_val *out)
{
    uint8_t kb[9];
    kb[0] = (uint8_t)kind;
    ps_enc_be64(kb + 1, id);
    return ps_txn_get(txn, DB_SYM, kb, 9, out, "reading symbol");
}

int ps_sym_intern(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t *id, ps_err_t *err)
{
    return ps_sym_intern_h(w, txn, kind, content, n, ps_hash64(content, n, (uint64_t)kind), id, err);
}

int ps_sym_intern_h(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t h,
                    uint64_t *id, ps_err_t *err)
{
    if (kind == SYM_STRING && n == 0) {
        *id = 0;
        return 0;
    }
    /* the kind's cache, keyed by the content; its hash there is the index's, h */
    ps_hmap_t *cache = &w->wc->sym_cache[kind];
    uint64_t v;
    if (ps_hmap_get_h(cache, h, content, n, &v)) {
        *id = v;
        return 0;
    }
    int ret = ps_sym_store(w, txn, kind, content, n, h, id, err);
    if (ret == 0)
        ps_hmap_put_h(cache, h, content, n, *id);
    return ret;
}

int ps_sym_store(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t h,
                 uint64_t *id, ps_err_t *err)
{
    uint8_t hk[9];
    hk[0] = (uint8_t)kind;
    ps_enc_be64(hk + 1, h);
    ps_cur_t cur;
    ps_cur_open(&cur, txn, DB_SYM_HASH, "reading symbol index");
    for (bool on = ps_cur_find(&cur, hk, 9); on; on = ps_cur_next_dup(&cur)) {
        uint64_t cand = ps_get_be64(cur.v.mv_data);
        MDB_val c;
        if (ps_sym_get(txn, kind, cand, &c) && c.mv_size == n && memcmp(c.mv_data, content, n) == 0) {
            ps_cur_close(&cur);
            *id = cand;
            return 0;
        }
    }
    ps_cur_close(&cur);
    if (txn->ret)
        return ps_txn_error(txn, err);
    /* new symbol */
    uint64_t nid = w->next.sym[kind]++;
    uint8_t ib[9], idv[8];
    ib[0] = (uint8_t)kind;
    ps_enc_be64(ib + 1, nid);
    ps_enc_be64(idv, nid);
    if (!ps_txn_put(txn, DB_SYM, ib, 9, content, n, 0, "writing symbol") ||
        !ps_txn_put(txn, DB_SYM_HASH, hk, 9, idv, 8, 0, "writing symbol index"))
        return ps_txn_error(txn, err);
    *id = nid;
    return 0;
}

int ps_tree_child(ps_store_writer_t *w, ps_txn_t *txn, uint64_t parent, uint64_t item, uint64_t *node, ps_err_t *err)
{
    uint8_t kb[16];
    ps_enc_be64(kb, parent);
    ps_enc_be64(kb + 8, item);
    uint64_t v;
    if (ps_hmap_get(&w->wc->tree_cache, kb, 16, &v)) {
        *node = v;
        return 0;
    }
    MDB_val d;
    if (ps_txn_get(txn, DB_TREE, kb, 16, &d, "reading stack tree")) {
        if (d.mv_size != 8)
            return ps_err_set(err, PS_ECORRUPT, "stack tree entry has %zu bytes", d.mv_size);
        *node = ps_get_be64(d.mv_data);
        ps_hmap_put(&w->wc->tree_cache, kb, 16, *node);
        return 0;
    }
    if (txn->ret)
        return ps_txn_error(txn, err);
    uint64_t nid = w->next.node++;
    uint8_t nb[8];
    ps_enc_be64(nb, nid);
    if (!ps_txn_put(txn, DB_TREE, kb, 16, nb, 8, 0, "writing stack tree") ||
        !ps_txn_put(txn, DB_NODES, nb, 8, kb, 16, MDB_APPEND, "writing stack node"))
        return ps_txn_error(txn, err);
    ps_hmap_put(&w->wc->tree_cache, kb, 16, nid);
    *node = nid;
    return 0;
}
