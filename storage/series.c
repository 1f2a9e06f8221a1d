/*
 * series.c - series (label set -> id), their records and postings.
 *
 * Series record (DB_SERIES value), by its first byte:
 *   profile series: enc u8 (=1) | last_ts i64 BE | head_min_ts i64 BE | last_chunk_max i64 BE |
 *                   head_count u32 BE | labels
 *   float series:   enc u8 (=2) | labels (what the writer needs is in the series' chunks)
 *   labels: ps_labels_encode (uvarint len, name, uvarint len, value, ...)
 *
 * Series indexed late (schema 13): a new series' record is written at once (appended by sid,
 * durable with its first data), its series_hash entry later. DB_INFO "seriesw" holds the watermark
 * W: every series up to W is in series_hash, none past it. The writer keeps those past W (pending)
 * in memory ({label hash, sid}), and writes their entries sorted, a transaction per slice of the
 * hash space, when they reach opts.series_pending_max and at each compaction (ps_series_index_now): a commit of new series
 * then writes their records, not a random series_hash leaf each. A reader's look-up by labels
 * scans the records past W of its snapshot.
 *
 * Postings late too (schema 14): a new series' postings entries are written by the same merge, sorted
 * by key through one cursor, before W passes it; a reader appends the postings of the records past
 * W of its snapshot (ps_pend_posts, built once a read snapshot) to DB_POSTINGS'.
 */
#include <stdlib.h>

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
    /* read and written through one cursor: one search of the tree (the record keeps its size) */
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_SERIES, "reading series record"))
        return ps_txn_error(txn, err);
    if (!ps_cur_find(&cur, kb, 8)) {
        ps_cur_close(&cur);
        return ps_txn_missing(txn, err, "reading series record");
    }
    ps_series_rec_t old;
    if (ps_series_rec_decode(cur.v.mv_data, cur.v.mv_size, &old) != 0 || old.kind != PS_SERIES_PROFILE) {
        ps_cur_close(&cur);
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    }
    /* copy the labels out before writing: they point into the map */
    ps_buf_t b = ps_wbuf_take(w, BUF_SERIES_REC);
    ps_series_rec_t r = {PS_SERIES_PROFILE, st->last_ts, st->head_min_ts, st->last_chunk_max, st->head_count,
                         old.labels, old.labels_len};
    ps_series_rec_encode(&r, &b);
    cur.what = "writing series record";
    bool ok = ps_cur_put_current(&cur, kb, 8, b.data, b.len);
    ps_cur_close(&cur);
    ps_wbuf_give(w, BUF_SERIES_REC, &b);
    return ok ? 0 : ps_txn_error(txn, err);
}

static uint64_t series_hash(const void *labels, size_t n)
{
    return ps_hash64(labels, n, 0x5e41e5);
}

void ps_series_hash_key(const ps_buf_t *enc, uint8_t hk[8])
{
    ps_enc_be64(hk, series_hash(enc->data, enc->len));
}

bool ps_series_rec_holds(const MDB_val *v, const ps_buf_t *enc)
{
    ps_series_rec_t r;
    return ps_series_rec_decode(v->mv_data, v->mv_size, &r) == 0 && r.labels_len == enc->len &&
           memcmp(r.labels, enc->data, enc->len) == 0;
}

bool ps_series_rec_is(ps_txn_t *txn, uint64_t sid, const ps_buf_t *enc)
{
    uint8_t ck[8];
    ps_enc_be64(ck, sid);
    MDB_val sv;
    return ps_txn_get(txn, DB_SERIES, ck, 8, &sv, "reading series record") && ps_series_rec_holds(&sv, enc);
}

int ps_series_w_read(ps_txn_t *txn, uint64_t *wm, ps_err_t *err)
{
    MDB_val v;
    *wm = UINT64_MAX;
    if (!ps_txn_get(txn, DB_INFO, "seriesw", 7, &v, "reading the series index watermark"))
        return ps_txn_error(txn, err);
    if (v.mv_size != 8)
        return ps_err_set(err, PS_ECORRUPT, "series index watermark record has %zu bytes", v.mv_size);
    *wm = ps_get_be64(v.mv_data);
    return 0;
}

int ps_series_w_write(ps_txn_t *txn, uint64_t wm, ps_err_t *err)
{
    uint8_t b[8];
    ps_enc_be64(b, wm);
    return ps_txn_put(txn, DB_INFO, "seriesw", 7, b, 8, 0, "writing the series index watermark") ? 0
                                                                                                 : ps_txn_error(txn, err);
}

/* ---- the postings of the series past W (ps_pend_posts_t) ---- */

/* one holder of p lets it go (the last frees it) */
static void pend_posts_free(void *p)
{
    ps_pend_posts_t *pp = p;
    if (pp == NULL || atomic_fetch_sub(&pp->refs, 1) != 1)
        return;
    free(pp->e);
    ps_buf_dispose(&pp->keys);
    free(pp);
}

void ps_pend_posts_unshare(ps_store_t *s)
{
    pthread_mutex_lock(&s->pend_mu);
    ps_pend_posts_t *p = s->pend_shared;
    s->pend_shared = NULL;
    s->pend_txn = 0;
    pthread_mutex_unlock(&s->pend_mu);
    pend_posts_free(p);
}

/* the store's pending postings of read snapshot id, held (NULL: none) */
static ps_pend_posts_t *pend_shared_get(ps_store_t *s, uint64_t id)
{
    pthread_mutex_lock(&s->pend_mu);
    ps_pend_posts_t *p = s->pend_shared != NULL && s->pend_txn == id ? s->pend_shared : NULL;
    if (p != NULL)
        atomic_fetch_add(&p->refs, 1);
    pthread_mutex_unlock(&s->pend_mu);
    return p;
}

/* p (of read snapshot id) shared, unless the store holds a newer snapshot's */
static void pend_shared_put(ps_store_t *s, ps_pend_posts_t *p, uint64_t id)
{
    ps_pend_posts_t *old = NULL;
    pthread_mutex_lock(&s->pend_mu);
    if (s->pend_shared == NULL || s->pend_txn < id) {
        old = s->pend_shared;
        atomic_fetch_add(&p->refs, 1);
        s->pend_shared = p;
        s->pend_txn = id;
    }
    pthread_mutex_unlock(&s->pend_mu);
    pend_posts_free(old);
}

static int pend_cmp(const ps_pend_post_t *x, const ps_pend_post_t *y, const uint8_t *keys)
{
    if (x->pfx != y->pfx)
        return x->pfx < y->pfx ? -1 : 1;
    uint32_t xl = x->len & ~PS_PEND_DEAD, yl = y->len & ~PS_PEND_DEAD;
    if (xl > 8 && yl > 8) {
        int c = memcmp(keys + x->off + 8, keys + y->off + 8, (xl < yl ? xl : yl) - 8);
        if (c != 0)
            return c;
    }
    if (xl != yl)
        return xl < yl ? -1 : 1;
    return (x->sid > y->sid) - (x->sid < y->sid);
}

static int pend_qcmp(const void *a, const void *b, void *keys)
{
    return pend_cmp(a, b, keys);
}

static uint64_t key_pfx(const void *key, size_t n)
{
    uint8_t b[8] = {0};
    memcpy(b, key, n < 8 ? n : 8);
    return ps_get_be64(b);
}

/* cb on each series record past wm in txn, in sid order; a damaged one ends the walk: PS_ECORRUPT */
static int records_past(ps_txn_t *txn, uint64_t wm, int (*cb)(void *ctx, uint64_t sid, const ps_series_rec_t *r),
                        void *ctx, ps_err_t *err)
{
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_SERIES, "reading pending series"))
        return ps_txn_error(txn, err);
    uint8_t kb[8];
    ps_enc_be64(kb, wm + 1);
    int ret = 0;
    for (bool on = ps_cur_seek(&cur, kb, 8); on && ret == 0; on = ret == 0 && ps_cur_next(&cur)) {
        ps_series_rec_t r;
        uint64_t sid = cur.k.mv_size == 8 ? ps_get_be64(cur.k.mv_data) : 0;
        if (cur.k.mv_size != 8 || ps_series_rec_decode(cur.v.mv_data, cur.v.mv_size, &r) != 0 || (ret = cb(ctx, sid, &r)) > 0)
            ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    }
    ps_cur_close(&cur);
    return ret ? ret : ps_txn_error(txn, err);
}

typedef struct posts_build {
    ps_pend_posts_t *p;
    size_t cap;
    ps_arena_t a;
} posts_build_t;

/* a record's postings into b->p: 0, or 1 for damaged labels */
static int posts_add(void *ctx, uint64_t sid, const ps_series_rec_t *r)
{
    posts_build_t *b = ctx;
    ps_pend_posts_t *p = b->p;
    ps_labels_t ls;
    ps_arena_reset(&b->a);
    if (ps_labels_decode(r->labels, r->labels_len, &b->a, &ls) != 0)
        return 1;
    for (uint32_t i = 0; i < ls.n; i++) {
        if (p->n == b->cap) {
            b->cap = b->cap ? b->cap * 2 : 1024;
            p->e = ps_xrealloc(p->e, b->cap * sizeof(*p->e));
        }
        const ps_label_pair_t *lp = &ls.pairs[i];
        uint32_t off = (uint32_t)p->keys.len;
        ps_buf_append(&p->keys, lp->name, lp->nlen);
        ps_buf_putc(&p->keys, 0);
        ps_buf_append(&p->keys, lp->value, lp->vlen);
        ps_pend_post_t *e = &p->e[p->n++];
        e->off = off;
        e->len = (uint32_t)(p->keys.len - off);
        e->pfx = key_pfx(p->keys.data + off, e->len);
        e->sid = sid;
    }
    return 0;
}

/* The postings of the records past W in txn into p (n == 0 when none). */
static int pend_posts_build(ps_txn_t *txn, ps_pend_posts_t *p, ps_err_t *err)
{
    int ret = ps_series_w_read(txn, &p->w, err);
    if (ret != 0 || p->w == UINT64_MAX)
        return ret;
    posts_build_t b = {p, 0, PS_ARENA_INIT};
    ret = records_past(txn, p->w, posts_add, &b, err);
    ps_arena_dispose(&b.a);
    if (ret == 0 && p->n > 1)
        qsort_r(p->e, p->n, sizeof(*p->e), pend_qcmp, p->keys.data);
    return ret;
}

int ps_pend_posts(ps_txn_t *txn, const ps_pend_posts_t **out, ps_err_t *err)
{
    if (txn->pend == NULL) {
        /* a read snapshot's are shared (a write transaction's change: its own) */
        uint64_t id = txn->read ? (uint64_t)mdb_txn_id(txn->txn) : 0;
        ps_pend_posts_t *p = txn->read ? pend_shared_get(txn->s, id) : NULL;
        if (p == NULL) {
            p = ps_xcalloc(1, sizeof(*p));
            atomic_init(&p->refs, 1);
            int ret = pend_posts_build(txn, p, err);
            if (ret) {
                pend_posts_free(p);
                return ret;
            }
            if (txn->read)
                pend_shared_put(txn->s, p, id);
        }
        txn->pend = p;
        txn->pend_free = pend_posts_free;
    }
    *out = txn->pend;
    return 0;
}

size_t ps_pend_lower(const ps_pend_posts_t *p, const void *key, size_t klen, uint64_t sid)
{
    ps_pend_post_t k = {key_pfx(key, klen), 0, (uint32_t)klen, sid};
    size_t lo = 0, hi = p->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const ps_pend_post_t *e = &p->e[mid];
        /* pend_cmp with the key's bytes where they are */
        int c;
        if (e->pfx != k.pfx) {
            c = e->pfx < k.pfx ? -1 : 1;
        } else {
            size_t el = e->len & ~PS_PEND_DEAD;
            size_t m = el < klen ? el : klen;
            c = m > 8 ? memcmp(p->keys.data + e->off + 8, (const uint8_t *)key + 8, m - 8) : 0;
            if (c == 0 && el != klen)
                c = el < klen ? -1 : 1;
            if (c == 0)
                c = (e->sid > sid) - (e->sid < sid);
        }
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

size_t ps_pend_seek(const ps_pend_posts_t *p, const void *key, size_t klen)
{
    return p->n ? ps_pend_lower(p, key, klen, 0) : 0;
}

size_t ps_pend_key_end(const ps_pend_posts_t *p, size_t i)
{
    size_t len, l2;
    const char *k = ps_pend_key(p, i, &len);
    size_t j = i + 1;
    while (j < p->n) {
        const char *k2 = ps_pend_key(p, j, &l2);
        if (p->e[j].pfx != p->e[i].pfx || l2 != len || memcmp(k, k2, len) != 0)
            break;
        j++;
    }
    return j;
}

void ps_pend_range(const ps_pend_posts_t *p, const void *key, size_t klen, size_t *lo, size_t *hi)
{
    *lo = *hi = ps_pend_seek(p, key, klen);
    if (*lo < p->n) {
        size_t len;
        const char *k = ps_pend_key(p, *lo, &len);
        if (len == klen && memcmp(k, key, klen) == 0)
            *hi = ps_pend_key_end(p, *lo);
    }
}

bool ps_pend_any(const ps_pend_posts_t *p, size_t lo, size_t hi, uint64_t but)
{
    for (size_t i = lo; i < hi; i++)
        if (!ps_pend_dead(p, i) && p->e[i].sid != but)
            return true;
    return false;
}

/* Series sid (labels ls) deleted in txn: its entries in txn's pending postings, if any, are dead. */
static int pend_posts_kill(ps_txn_t *txn, uint64_t sid, const ps_labels_t *ls, ps_err_t *err)
{
    uint64_t wm;
    int ret = 0;
    if (txn->pend == NULL && ((ret = ps_series_w_read(txn, &wm, err)) != 0 || wm == UINT64_MAX || sid <= wm))
        return ret; /* built later, from records without sid's, or sid has its postings in DB_POSTINGS */
    const ps_pend_posts_t *cp;
    if ((ret = ps_pend_posts(txn, &cp, err)) != 0)
        return ret;
    ps_pend_posts_t *p = txn->pend;
    ps_buf_t key = PS_BUF_INIT;
    for (uint32_t i = 0; i < ls->n; i++) {
        ps_posting_key(&key, &ls->pairs[i]);
        size_t at = ps_pend_lower(p, key.data, key.len, sid);
        if (at < p->n && p->e[at].sid == sid && (p->e[at].len & ~PS_PEND_DEAD) == key.len &&
            memcmp(p->keys.data + p->e[at].off, key.data, key.len) == 0)
            p->e[at].len |= PS_PEND_DEAD;
    }
    ps_buf_dispose(&key);
    return 0;
}

/* ---- the pending set (ps_pending_t) ---- */

/* a slot's key: the series hash, 0 (the empty slot's) kept as 1 */
static uint64_t pend_key(uint64_t h)
{
    return h ? h : 1;
}

static size_t pend_home(const ps_pending_t *m, uint64_t h)
{
    return (size_t)((h * 0x9e3779b97f4a7c15ull) >> 17) & (m->cap - 1);
}

static void pend_clear(ps_pending_t *m)
{
    free(m->slots); /* its size follows the most series pending at once: give it back */
    memset(m, 0, sizeof(*m));
}

static void pend_add(ps_pending_t *m, uint64_t h, uint64_t sid)
{
    if (m->cap == 0 || (m->count + 1) * 4 > m->cap * 3) {
        ps_pending_t g = {ps_xcalloc(m->cap ? m->cap * 2 : 1024, 2 * sizeof(uint64_t)), m->cap ? m->cap * 2 : 1024, 0};
        for (size_t i = 0; i < m->cap; i++)
            if (m->slots[2 * i] != 0)
                pend_add(&g, m->slots[2 * i], m->slots[2 * i + 1]);
        free(m->slots);
        *m = g;
    }
    size_t i = pend_home(m, h);
    while (m->slots[2 * i] != 0)
        i = (i + 1) & (m->cap - 1);
    m->slots[2 * i] = h;
    m->slots[2 * i + 1] = sid;
    m->count++;
}

/* the pending series whose record holds the labels enc (series hash h): true with *sid */
static bool pend_find(const ps_pending_t *m, ps_txn_t *txn, const ps_buf_t *enc, uint64_t h, uint64_t *sid)
{
    if (m->count == 0)
        return false;
    h = pend_key(h);
    for (size_t i = pend_home(m, h); m->slots[2 * i] != 0; i = (i + 1) & (m->cap - 1))
        if (m->slots[2 * i] == h && ps_series_rec_is(txn, m->slots[2 * i + 1], enc)) {
            *sid = m->slots[2 * i + 1];
            return true;
        }
    return false;
}

typedef struct hash_sid {
    uint64_t h, sid;
} hash_sid_t;

typedef struct hash_sids {
    hash_sid_t *e;
    size_t n, cap;
} hash_sids_t;

static int hash_sid_add(void *ctx, uint64_t sid, const ps_series_rec_t *r)
{
    hash_sids_t *hs = ctx;
    if (hs->n == hs->cap) {
        hs->cap = hs->cap ? hs->cap * 2 : 1024;
        hs->e = ps_xrealloc(hs->e, hs->cap * sizeof(*hs->e));
    }
    hs->e[hs->n++] = (hash_sid_t){series_hash(r->labels, r->labels_len), sid};
    return 0;
}

/* The series records past W in txn, as {series hash, sid} in sid order (*out malloc'd, *n of them):
 * the pending series, but for those deleted since (gone with their records) */
static int pending_records(const ps_store_writer_t *w, ps_txn_t *txn, hash_sid_t **out, size_t *n, ps_err_t *err)
{
    hash_sids_t hs = {NULL, 0, 0};
    int ret = records_past(txn, w->series_w, hash_sid_add, &hs, err);
    *out = hs.e;
    *n = hs.n;
    return ret;
}

int ps_series_pending_load(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    pend_clear(&w->series_pending);
    w->series_w_merged = false;
    int ret = ps_series_w_read(txn, &w->series_w, err);
    if (ret)
        return ret;
    if (w->series_w >= w->next.series) /* no record (a store before schema 13): all indexed */
        w->series_w = w->next.series - 1;
    hash_sid_t *e;
    size_t n;
    ret = pending_records(w, txn, &e, &n, err);
    for (size_t i = 0; i < n && ret == 0; i++)
        pend_add(&w->series_pending, pend_key(e[i].h), e[i].sid);
    free(e);
    return ret;
}

static int cmp_hash_sid(const void *a, const void *b)
{
    const hash_sid_t *x = a, *y = b;
    if (x->h != y->h)
        return x->h < y->h ? -1 : 1;
    return (x->sid > y->sid) - (x->sid < y->sid);
}

static uint32_t pending_max(const ps_store_writer_t *w)
{
    return w->s->opts.series_pending_max ? w->s->opts.series_pending_max : PS_SERIES_PENDING_MAX;
}

/* The slice of the hash space (of nslices, at most 256) that hash h falls in. */
static uint32_t slice_of(uint64_t h, uint32_t nslices)
{
    return (uint32_t)((h >> 56) * nslices / 256);
}

/* The series_hash entries e[0..n) (sorted by key: each leaf of the index written once, however
 * many of them land in it), in txn. An entry there already (a merge cut short between its
 * transactions) is left as it is. */
static int index_slice(ps_txn_t *txn, const hash_sid_t *e, size_t n, ps_err_t *err)
{
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        uint8_t hk[8], ib[8];
        ps_enc_be64(hk, e[i].h);
        ps_enc_be64(ib, e[i].sid);
        MDB_val key = ps_mval(hk, 8), val = ps_mval(ib, 8);
        int rc = mdb_put(txn->txn, txn->s->dbi[DB_SERIES_HASH], &key, &val, MDB_NODUPDATA);
        if (rc != 0 && rc != MDB_KEYEXIST && ps_txn_fail(txn, rc, "writing series index") != 0)
            ret = ps_txn_error(txn, err);
    }
    return ret;
}

/* The postings entries p->e[from, to) (sorted by key, then sid: each leaf written once), in txn
 * through one cursor; one there already (a merge cut short, a store of schema 13) is left. */
static int postings_slice(ps_txn_t *txn, const ps_pend_posts_t *p, size_t from, size_t to, ps_err_t *err)
{
    MDB_cursor *c;
    int rc = mdb_cursor_open(txn->txn, txn->s->dbi[DB_POSTINGS], &c);
    if (rc != 0) {
        ps_txn_fail(txn, rc, "writing postings");
        return ps_txn_error(txn, err);
    }
    for (size_t i = from; i < to && rc == 0; i++) {
        size_t len;
        const char *k = ps_pend_key(p, i, &len);
        uint8_t ib[8];
        ps_enc_be64(ib, p->e[i].sid);
        MDB_val key = ps_mval(k, len), val = ps_mval(ib, 8);
        rc = mdb_cursor_put(c, &key, &val, MDB_NODUPDATA);
        if (rc == MDB_KEYEXIST)
            rc = 0;
    }
    mdb_cursor_close(c);
    if (rc != 0)
        ps_txn_fail(txn, rc, "writing postings");
    return ps_txn_error(txn, err);
}

static void pending_done(ps_store_writer_t *w, bool committed)
{
    if (!w->series_w_merged)
        return;
    w->series_w_merged = false;
    if (!committed) /* the pending set is as it was: a merge does not touch it before its commit */
        return;
    w->series_w = w->series_w_new;
    pend_clear(&w->series_pending);
    ps_pend_posts_unshare(w->s); /* no later snapshot has them */
}

int ps_series_index_now(ps_store_writer_t *w, ps_err_t *err)
{
    if (w->series_pending.count == 0 && w->next.series - 1 <= w->series_w)
        return 0;
    /* the pending records read once, their series_hash entries sorted by key and written in slices
     * of the hash space, then their postings entries sorted by key in pieces, a transaction each
     * of series_pending_max / 2 entries (32,768: some 200 to 400 leaves), so that one
     * transaction's dirty pages stay few (LMDB keeps the malloc'd pages of its largest transaction
     * for the next ones: a slice of 131,072 entries left some 10 MiB). The last transaction also
     * raises W. Nothing else writes between them: the writer thread runs them one after another. */
    hash_sid_t *e = NULL;
    size_t n = 0;
    ps_pend_posts_t *pp = NULL;
    uint32_t nslices = 1;
    size_t per = (pending_max(w) + 1) / 2;
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, w->s, PS_TXN_READ, err, "reading pending series");
    if (ret == 0) {
        MDB_stat st;
        if (ps_txn_stat(&txn, DB_SERIES_HASH, &st)) {
            uint64_t want = 1 + st.ms_entries / per;
            nslices = want < 256 ? (uint32_t)want : 256;
        }
        const ps_pend_posts_t *cp;
        if ((ret = pending_records(w, &txn, &e, &n, err)) == 0 && (ret = ps_pend_posts(&txn, &cp, err)) == 0) {
            pp = txn.pend; /* held past the transaction: its keys are copies */
            atomic_fetch_add(&pp->refs, 1);
        }
        ps_txn_abort(&txn);
    }
    if (ret == 0 && n > 1)
        qsort(e, n, sizeof(*e), cmp_hash_sid);
    size_t npieces = pp ? (pp->n + per - 1) / per : 0;
    /* step k < nslices: hash slice k, e[i, j) (slice_of grows with the key); then the postings'
     * pieces; an empty step is skipped but for the last */
    size_t nsteps = nslices + npieces;
    for (size_t k = 0, i = 0, j = 0; k < nsteps && ret == 0; k++, i = j) {
        bool last = k == nsteps - 1;
        size_t from = 0, to = 0;
        if (k < nslices) {
            for (j = i; j < n && slice_of(e[j].h, nslices) == k; j++)
                ;
            if (j == i && !last)
                continue;
        } else {
            from = (k - nslices) * per;
            to = from + per < pp->n ? from + per : pp->n;
        }
        if ((ret = ps_txn_begin(&txn, w->s, PS_TXN_WRITE, err, "starting series index transaction")) != 0)
            break;
        txn.defer_sync = w->defer_sync; /* the writer's own writes' durability (W goes with the entries) */
        ret = k < nslices ? index_slice(&txn, e + i, j - i, err) : postings_slice(&txn, pp, from, to, err);
        if (ret == 0 && last && (ret = ps_series_w_write(&txn, w->next.series - 1, err)) == 0) {
            w->series_w_new = w->next.series - 1;
            w->series_w_merged = true;
        }
        if (ret == 0)
            ret = ps_txn_commit(&txn, err, "committing series index");
        ps_txn_abort(&txn);
    }
    free(e);
    if (pp)
        pend_posts_free(pp);
    pending_done(w, ret == 0);
    return ret;
}

bool ps_series_pending_full(const ps_store_writer_t *w)
{
    return w->series_pending.count >= pending_max(w);
}

void ps_posting_key(ps_buf_t *b, const ps_label_pair_t *p)
{
    ps_buf_reset(b);
    ps_buf_append(b, p->name, p->nlen);
    ps_buf_putc(b, 0);
    ps_buf_append(b, p->value, p->vlen);
}

/* A new series of labels ls (encoded: enc, series hash h): its record; pending for the hash index
 * and the postings. */
static int create_series(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, const ps_buf_t *enc, uint64_t h,
                         ps_series_kind_t kind, uint64_t *sid, ps_series_state_t **st,
                         ps_err_t *err)
{
    uint64_t nid = w->next.series++;
    uint8_t ib[8];
    ps_enc_be64(ib, nid);
    ps_buf_t rec = ps_wbuf_take(w, BUF_SERIES_REC);
    ps_series_rec_t r = {(uint8_t)kind, INT64_MIN, INT64_MIN, INT64_MIN, 0, enc->data, enc->len};
    ps_series_rec_encode(&r, &rec);
    ps_txn_put(txn, DB_SERIES, ib, 8, rec.data, rec.len, MDB_APPEND, "writing series record");
    ps_wbuf_give(w, BUF_SERIES_REC, &rec);
    ps_txn_pend_drop(txn); /* a record past W more: its postings are the merge's */
    if (txn->ret)
        return ps_txn_error(txn, err);
    ps_hmap_put(&w->wc->series_cache, enc->data, enc->len, nid);
    pend_add(&w->series_pending, pend_key(h), nid); /* its series_hash entry: later */
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
    ps_buf_t enc = ps_wbuf_take(w, BUF_SERIES_ENC);
    ps_labels_encode(ls, &enc);
    int ret = cached_series(w, txn, &enc, sid, st, err);
    if (ret == 0)
        ret = create_series(w, txn, ls, &enc, series_hash(enc.data, enc.len), kind, sid, st, err);
    ps_wbuf_give(w, BUF_SERIES_ENC, &enc);
    return ret < 0 ? ret : 0;
}

int ps_series_get_or_create(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, bool create, ps_series_kind_t kind,
                            uint64_t *sid, ps_series_state_t **st, ps_err_t *err)
{
    ps_buf_t enc = ps_wbuf_take(w, BUF_SERIES_ENC);
    ps_labels_encode(ls, &enc);
    int ret = cached_series(w, txn, &enc, sid, st, err);
    if (ret != 0) {
        ret = ret < 0 ? ret : 0;
        goto Exit;
    }
    /* a series past the watermark: in the pending set (an entry of a transaction undone since, or
     * of a series deleted since, names a record without these labels) */
    uint64_t cand, h = series_hash(enc.data, enc.len);
    if (pend_find(&w->series_pending, txn, &enc, h, &cand))
        goto Found;
    if (txn->ret) {
        ret = ps_txn_error(txn, err);
        goto Exit;
    }
    uint8_t hk[8];
    ps_enc_be64(hk, h);
    ps_cur_t cur;
    ps_cur_open(&cur, txn, DB_SERIES_HASH, "reading series index");
    for (bool on = ps_cur_find(&cur, hk, 8); on; on = ps_cur_next_dup(&cur)) {
        cand = ps_get_be64(cur.v.mv_data);
        if (ps_series_rec_is(txn, cand, &enc)) {
            ps_cur_close(&cur);
            goto Found;
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
    ret = create_series(w, txn, ls, &enc, h, kind, sid, st, err);
    goto Exit;
Found:
    ps_hmap_put(&w->wc->series_cache, enc.data, enc.len, cand);
    *sid = cand;
    *st = ps_series_state(w, cand);
    if (*st == NULL)
        ret = load_state(w, txn, cand, st, err);
Exit:
    ps_wbuf_give(w, BUF_SERIES_ENC, &enc);
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
    /* (a series past W has its postings in txn's pending postings: none in DB_POSTINGS, unless a
     * merge cut short or a store of schema 13 wrote them) */
    ret = pend_posts_kill(txn, sid, &ls, err);
    for (uint32_t i = 0; i < ls.n && ret == 0; i++) {
        ps_posting_key(&pk, &ls.pairs[i]);
        ps_txn_del(txn, DB_POSTINGS, pk.data, pk.len, ib, 8, "deleting postings");
        ret = ps_ltimes_forget(txn, pk.data, pk.len, ls.pairs[i].nlen, sid, err);
        if (ret == 0 && r.kind == PS_SERIES_PROFILE)
            ret = ps_ptimes_forget(txn, ps_labels_get(&ls, "__name__"), pk.data, pk.len, ls.pairs[i].nlen, sid, err);
    }
    if (ret)
        goto Exit;
    uint8_t hk[8];
    ps_series_hash_key(&enc, hk);
    /* (a series past the watermark has none: the pending set's entry then names no record) */
    ps_txn_del(txn, DB_SERIES_HASH, hk, 8, ib, 8, "deleting series index");
    if (!ps_txn_del(txn, DB_SERIES, ib, 8, NULL, 0, "deleting series"))
        ret = ps_txn_missing(txn, err, "deleting series");
Exit:
    ps_arena_dispose(&a);
    ps_buf_dispose(&enc);
    ps_buf_dispose(&pk);
    return ret;
}
