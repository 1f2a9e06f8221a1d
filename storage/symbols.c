/*
 * symbols.c - content-addressed symbols (strings, mappings, functions, locations, sample label
 * sets) and the stack tree, with the writer's in-memory caches in front of LMDB.
 *
 * A symbol is stored once: DB_SYM maps kind+id to its content, DB_SYM_HASH maps kind+hash of the
 * content to the ids having that hash (collisions resolved by comparing content). Ids are dense
 * per kind, starting at 1; id 0 of SYM_STRING is the empty string and is never stored.
 */
#include <stdlib.h>

#include "internal.h"

void ps_sym_caches_clear(ps_store_t *s)
{
    ps_hmap_clear(&s->sym_cache);
    ps_hmap_clear(&s->tree_cache);
    ps_hmap_clear(&s->stack_cache);
    ps_hmap_clear(&s->series_cache);
    ps_hmap_clear(&s->state_index);
    for (size_t i = 0; i < s->nstates; i++)
        free(s->states[i]);
    s->nstates = 0;
    ps_fstate_clear(s);
}

int ps_sym_get(MDB_txn *txn, ps_store_t *s, int kind, uint64_t id, MDB_val *out)
{
    uint8_t kb[9];
    kb[0] = (uint8_t)kind;
    ps_enc_be64(kb + 1, id);
    MDB_val k = ps_mval(kb, 9);
    return mdb_get(txn, s->dbi[DB_SYM], &k, out);
}

int ps_sym_intern(ps_store_t *s, MDB_txn *txn, int kind, const void *content, size_t n, uint64_t *id, ps_err_t *err)
{
    if (kind == SYM_STRING && n == 0) {
        *id = 0;
        return 0;
    }
    /* cache key: kind byte + content */
    ps_buf_t *ck = &s->sym_key;
    ps_buf_reset(ck);
    ps_buf_putc(ck, (uint8_t)kind);
    ps_buf_append(ck, content, n);
    uint64_t v;
    if (ps_hmap_get(&s->sym_cache, ck->data, ck->len, &v)) {
        *id = v;
        return 0;
    }
    uint64_t h = ps_hash64(content, n, (uint64_t)kind);
    uint8_t hk[9];
    hk[0] = (uint8_t)kind;
    ps_enc_be64(hk + 1, h);
    MDB_val k = ps_mval(hk, 9), d;
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi[DB_SYM_HASH], &cur);
    if (rc)
        return ps_lmdb_err(err, rc, "opening symbol index");
    rc = mdb_cursor_get(cur, &k, &d, MDB_SET_KEY);
    while (rc == 0) {
        uint64_t cand = ps_get_be64(d.mv_data);
        MDB_val c;
        if (ps_sym_get(txn, s, kind, cand, &c) == 0 && c.mv_size == n && memcmp(c.mv_data, content, n) == 0) {
            mdb_cursor_close(cur);
            ps_hmap_put(&s->sym_cache, ck->data, ck->len, cand);
            *id = cand;
            return 0;
        }
        rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT_DUP);
    }
    mdb_cursor_close(cur);
    if (rc != MDB_NOTFOUND)
        return ps_lmdb_err(err, rc, "reading symbol index");
    /* new symbol */
    uint64_t nid = s->next.sym[kind]++;
    uint8_t ib[9], idv[8];
    ib[0] = (uint8_t)kind;
    ps_enc_be64(ib + 1, nid);
    ps_enc_be64(idv, nid);
    MDB_val sk = ps_mval(ib, 9), sv = ps_mval(content, n);
    if ((rc = mdb_put(txn, s->dbi[DB_SYM], &sk, &sv, 0)) != 0)
        return ps_lmdb_err(err, rc, "writing symbol");
    k = ps_mval(hk, 9);
    d = ps_mval(idv, 8);
    if ((rc = mdb_put(txn, s->dbi[DB_SYM_HASH], &k, &d, 0)) != 0)
        return ps_lmdb_err(err, rc, "writing symbol index");
    ps_hmap_put(&s->sym_cache, ck->data, ck->len, nid);
    *id = nid;
    return 0;
}

int ps_tree_child(ps_store_t *s, MDB_txn *txn, uint64_t parent, uint64_t item, uint64_t *node, ps_err_t *err)
{
    uint8_t kb[16];
    ps_enc_be64(kb, parent);
    ps_enc_be64(kb + 8, item);
    uint64_t v;
    if (ps_hmap_get(&s->tree_cache, kb, 16, &v)) {
        *node = v;
        return 0;
    }
    MDB_val k = ps_mval(kb, 16), d;
    int rc = mdb_get(txn, s->dbi[DB_TREE], &k, &d);
    if (rc == 0) {
        if (d.mv_size != 8)
            return ps_err_set(err, PS_ECORRUPT, "stack tree entry has %zu bytes", d.mv_size);
        *node = ps_get_be64(d.mv_data);
        ps_hmap_put(&s->tree_cache, kb, 16, *node);
        return 0;
    }
    if (rc != MDB_NOTFOUND)
        return ps_lmdb_err(err, rc, "reading stack tree");
    uint64_t nid = s->next.node++;
    uint8_t nb[8];
    ps_enc_be64(nb, nid);
    d = ps_mval(nb, 8);
    if ((rc = mdb_put(txn, s->dbi[DB_TREE], &k, &d, 0)) != 0)
        return ps_lmdb_err(err, rc, "writing stack tree");
    MDB_val nk = ps_mval(nb, 8), nv = ps_mval(kb, 16);
    if ((rc = mdb_put(txn, s->dbi[DB_NODES], &nk, &nv, MDB_APPEND)) != 0)
        return ps_lmdb_err(err, rc, "writing stack node");
    ps_hmap_put(&s->tree_cache, kb, 16, nid);
    *node = nid;
    return 0;
}
