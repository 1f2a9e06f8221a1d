/*
 * series.c - series (label set -> id), their records and postings.
 *
 * Series record (DB_SERIES value), by its first byte:
 *   profile series: enc u8 (=1) | last_ts i64 BE | head_min_ts i64 BE | last_chunk_max i64 BE |
 *                   head_count u32 BE | labels
 *   float series:   enc u8 (=2) | labels (what the writer needs is in the series' chunks)
 *   labels: ps_labels_encode (uvarint len, name, uvarint len, value, ...)
 */
#include "internal.h"

#define REC_FIXED (1 + 8 + 8 + 8 + 4)

void ps_series_rec_encode(const ps_series_rec_t *r, ps_buf_t *out)
{
    if (r->kind == PS_SERIES_FLOAT) {
        ps_buf_putc(out, PS_SERIES_REC_FLOAT);
        ps_buf_append(out, r->labels, r->labels_len);
        return;
    }
    ps_buf_putc(out, PS_SERIES_REC_V1);
    ps_put_be64(out, (uint64_t)r->last_ts);
    ps_put_be64(out, (uint64_t)r->head_min_ts);
    ps_put_be64(out, (uint64_t)r->last_chunk_max);
    ps_put_be32(out, r->head_count);
    ps_buf_append(out, r->labels, r->labels_len);
}

int ps_series_rec_decode(const void *p, size_t n, ps_series_rec_t *r)
{
    const uint8_t *b = p;
    if (n >= 1 && b[0] == PS_SERIES_REC_FLOAT) {
        r->kind = PS_SERIES_FLOAT;
        r->last_ts = r->head_min_ts = r->last_chunk_max = INT64_MIN;
        r->head_count = 0;
        r->labels = b + 1;
        r->labels_len = n - 1;
        return 0;
    }
    if (n < REC_FIXED || b[0] != PS_SERIES_REC_V1)
        return PS_ECORRUPT;
    r->kind = PS_SERIES_PROFILE;
    r->last_ts = (int64_t)ps_get_be64(b + 1);
    r->head_min_ts = (int64_t)ps_get_be64(b + 9);
    r->last_chunk_max = (int64_t)ps_get_be64(b + 17);
    r->head_count = ps_get_be32(b + 25);
    r->labels = b + REC_FIXED;
    r->labels_len = n - REC_FIXED;
    return 0;
}

static ps_series_state_t *state_add(ps_store_writer_t *w, uint64_t sid)
{
    /* states are allocated one by one so pointers stay valid while more are added */
    if (w->wc->nstates == w->wc->capstates) {
        w->wc->capstates = w->wc->capstates ? w->wc->capstates * 2 : 1024;
        w->wc->states = ps_xrealloc(w->wc->states, w->wc->capstates * sizeof(*w->wc->states));
    }
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    ps_series_state_t *st = ps_xcalloc(1, sizeof(*st));
    w->wc->states[w->wc->nstates++] = st;
    ps_hmap_put(&w->wc->state_index, kb, 8, (uint64_t)(uintptr_t)st);
    return st;
}

ps_series_state_t *ps_series_state(ps_store_writer_t *w, uint64_t sid)
{
    uint8_t kb[8];
    uint64_t i;
    ps_enc_be64(kb, sid);
    if (ps_hmap_get(&w->wc->state_index, kb, 8, &i))
        return (ps_series_state_t *)(uintptr_t)i;
    return NULL;
}

/* Loads the state of an existing series from its record into the cache. */
static int load_state(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, ps_series_state_t **out, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val v;
    if (!ps_txn_get(txn, DB_SERIES, kb, 8, &v, "reading series record"))
        return ps_txn_missing(txn, err, "reading series record");
    ps_series_rec_t r;
    if (ps_series_rec_decode(v.mv_data, v.mv_size, &r) != 0)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    ps_series_state_t *st = state_add(w, sid);
    st->kind = r.kind;
    st->last_ts = r.last_ts;
    st->head_min_ts = r.head_min_ts;
    st->head_count = r.head_count;
    st->last_chunk_max = r.last_chunk_max;
    *out = st;
    return 0;
}

int ps_series_put_state(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, const ps_series_state_t *st, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val v;
    if (!ps_txn_get(txn, DB_SERIES, kb, 8, &v, "reading series record"))
        return ps_txn_missing(txn, err, "reading series record");
    ps_series_rec_t old;
    if (ps_series_rec_decode(v.mv_data, v.mv_size, &old) != 0 || old.kind != PS_SERIES_PROFILE)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    /* copy the labels out before writing: v points into the map */
    ps_buf_t b = PS_BUF_INIT;
    ps_series_rec_t r = {PS_SERIES_PROFILE, st->last_ts, st->head_min_ts, st->last_chunk_max, st->head_count,
                         old.labels, old.labels_len};
    ps_series_rec_encode(&r, &b);
    bool ok = ps_txn_put(txn, DB_SERIES, kb, 8, b.data, b.len, 0, "writing series record");
    ps_buf_dispose(&b);
    return ok ? 0 : ps_txn_error(txn, err);
}

void ps_series_hash_key(const ps_buf_t *enc, uint8_t hk[8])
{
    ps_enc_be64(hk, ps_hash64(enc->data, enc->len, 0x5e41e5));
}

void ps_posting_key(ps_buf_t *b, const ps_label_pair_t *p)
{
    ps_buf_reset(b);
    ps_buf_append(b, p->name, p->nlen);
    ps_buf_putc(b, 0);
    ps_buf_append(b, p->value, p->vlen);
}

/* A new series of labels ls (encoded: enc, its hash key hk): record, hash index, postings. */
static int create_series(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, const ps_buf_t *enc,
                         const uint8_t hk[8], ps_series_kind_t kind, uint64_t *sid, ps_series_state_t **st,
                         ps_err_t *err)
{
    uint64_t nid = w->next.series++;
    uint8_t ib[8];
    ps_enc_be64(ib, nid);
    ps_buf_t rec = PS_BUF_INIT, pk = PS_BUF_INIT;
    ps_series_rec_t r = {(uint8_t)kind, INT64_MIN, INT64_MIN, INT64_MIN, 0, enc->data, enc->len};
    ps_series_rec_encode(&r, &rec);
    ps_txn_put(txn, DB_SERIES, ib, 8, rec.data, rec.len, MDB_APPEND, "writing series record");
    ps_buf_dispose(&rec);
    ps_txn_put(txn, DB_SERIES_HASH, hk, 8, ib, 8, 0, "writing series index");
    for (uint32_t i = 0; i < ls->n; i++) {
        ps_posting_key(&pk, &ls->pairs[i]);
        ps_txn_put(txn, DB_POSTINGS, pk.data, pk.len, ib, 8, 0, "writing postings");
    }
    ps_buf_dispose(&pk);
    if (txn->ret)
        return ps_txn_error(txn, err);
    ps_hmap_put(&w->wc->series_cache, enc->data, enc->len, nid);
    ps_series_state_t *ns = state_add(w, nid);
    ns->kind = (uint8_t)kind;
    ns->last_ts = INT64_MIN;
    ns->head_min_ts = INT64_MIN;
    ns->last_chunk_max = INT64_MIN;
    *sid = nid;
    *st = ns;
    return 0;
}

/* The series of ls from the series cache: 1 (found), 0 (not in the cache) or an error. */
static int cached_series(ps_store_writer_t *w, ps_txn_t *txn, const ps_buf_t *enc, uint64_t *sid,
                         ps_series_state_t **st, ps_err_t *err)
{
    uint64_t v;
    if (!ps_hmap_get(&w->wc->series_cache, enc->data, enc->len, &v))
        return 0;
    *sid = v;
    *st = ps_series_state(w, v);
    if (*st == NULL) {
        int ret = load_state(w, txn, v, st, err);
        if (ret)
            return ret;
    }
    return 1;
}

int ps_series_create_absent(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, ps_series_kind_t kind,
                            uint64_t *sid, ps_series_state_t **st, ps_err_t *err)
{
    ps_buf_t enc = PS_BUF_INIT;
    ps_labels_encode(ls, &enc);
    int ret = cached_series(w, txn, &enc, sid, st, err);
    if (ret == 0) {
        uint8_t hk[8];
        ps_series_hash_key(&enc, hk);
        ret = create_series(w, txn, ls, &enc, hk, kind, sid, st, err);
    }
    ps_buf_dispose(&enc);
    return ret < 0 ? ret : 0;
}

int ps_series_get_or_create(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, bool create, ps_series_kind_t kind,
                            uint64_t *sid, ps_series_state_t **st, ps_err_t *err)
{
    ps_buf_t enc = PS_BUF_INIT;
    ps_labels_encode(ls, &enc);
    int ret = cached_series(w, txn, &enc, sid, st, err);
    if (ret != 0) {
        ret = ret < 0 ? ret : 0;
        goto Exit;
    }
    uint8_t hk[8];
    ps_series_hash_key(&enc, hk);
    ps_cur_t cur;
    ps_cur_open(&cur, txn, DB_SERIES_HASH, "reading series index");
    for (bool on = ps_cur_find(&cur, hk, 8); on; on = ps_cur_next_dup(&cur)) {
        uint64_t cand = ps_get_be64(cur.v.mv_data);
        uint8_t ck[8];
        ps_enc_be64(ck, cand);
        MDB_val sv;
        ps_series_rec_t r;
        if (ps_txn_get(txn, DB_SERIES, ck, 8, &sv, "reading series record") &&
            ps_series_rec_decode(sv.mv_data, sv.mv_size, &r) == 0 && r.labels_len == enc.len &&
            memcmp(r.labels, enc.data, enc.len) == 0) {
            ps_cur_close(&cur);
            ps_hmap_put(&w->wc->series_cache, enc.data, enc.len, cand);
            *sid = cand;
            *st = ps_series_state(w, cand);
            if (*st == NULL)
                ret = load_state(w, txn, cand, st, err);
            goto Exit;
        }
    }
    ps_cur_close(&cur);
    if (txn->ret) {
        ret = ps_txn_error(txn, err);
        goto Exit;
    }
    if (!create) {
        ret = PS_ENOTFOUND;
        goto Exit;
    }
    ret = create_series(w, txn, ls, &enc, hk, kind, sid, st, err);
Exit:
    ps_buf_dispose(&enc);
    return ret;
}

int ps_series_delete(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, ps_err_t *err)
{
    uint8_t ib[8];
    ps_enc_be64(ib, sid);
    MDB_val v;
    if (!ps_txn_get(txn, DB_SERIES, ib, 8, &v, "reading series record"))
        return ps_txn_error(txn, err);
    ps_series_rec_t r;
    if (ps_series_rec_decode(v.mv_data, v.mv_size, &r) != 0)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls;
    ps_buf_t enc = PS_BUF_INIT, pk = PS_BUF_INIT;
    int ret = 0;
    ps_buf_append(&enc, r.labels, r.labels_len);
    if (ps_labels_decode(enc.data, enc.len, &a, &ls) != 0) {
        ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged labels", (unsigned long long)sid);
        goto Exit;
    }
    for (uint32_t i = 0; i < ls.n && ret == 0; i++) {
        ps_posting_key(&pk, &ls.pairs[i]);
        ps_txn_del(txn, DB_POSTINGS, pk.data, pk.len, ib, 8, "deleting postings");
        ret = ps_ltimes_forget(txn, pk.data, pk.len, ls.pairs[i].nlen, err);
    }
    if (ret)
        goto Exit;
    uint8_t hk[8];
    ps_series_hash_key(&enc, hk);
    ps_txn_del(txn, DB_SERIES_HASH, hk, 8, ib, 8, "deleting series index");
    if (!ps_txn_del(txn, DB_SERIES, ib, 8, NULL, 0, "deleting series"))
        ret = ps_txn_missing(txn, err, "deleting series");
Exit:
    ps_arena_dispose(&a);
    ps_buf_dispose(&enc);
    ps_buf_dispose(&pk);
    return ret;
}
