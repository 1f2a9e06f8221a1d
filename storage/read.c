/*
 * read.c - read snapshots: series and label index lookups, profiles of a series over a time
 * range (chunks then head), and materialising stack nodes back into a full profile; a series'
 * kind, and the samples of any series (ps_reader_samples: a float series' from floats_read.c, a
 * profile series' as the totals of its profiles).
 */
#include <stdlib.h>

#include "core/sat.h"
#include "core/timeutil.h"

#include "chunk.h"
#include "floats.h"

int ps_reader_begin(ps_store_t *s, ps_reader_t **out, ps_err_t *err)
{
    ps_reader_t *r = ps_xcalloc(1, sizeof(*r));
    r->store = s;
    r->min_ts = r->min_ms = INT64_MIN;
    if (s->opts.retention_ns > 0) {
        r->min_ts = ps_time_now() - s->opts.retention_ns;
        r->min_ms = r->min_ts >= 0 ? (r->min_ts + 999999) / 1000000 : -((-r->min_ts) / 1000000); /* ceil(/1e6) */
    }
    int ret = ps_txn_begin(&r->txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret) {
        free(r);
        return ret;
    }
    *out = r;
    return 0;
}

void ps_reader_unclamp(ps_reader_t *r)
{
    r->min_ts = r->min_ms = INT64_MIN;
}

void ps_reader_end(ps_reader_t *r)
{
    if (r == NULL)
        return;
    if (r->hd_open) {
        ps_cur_close(&r->hd_chunks);
        ps_cur_close(&r->hd_head);
    }
    ps_txn_abort(&r->txn);
    free(r);
}

int ps_reader_series_foreach(ps_reader_t *r, int (*cb)(void *ctx, uint64_t sid, const ps_labels_t *ls), void *ctx,
                             ps_err_t *err)
{
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, &r->txn, DB_SERIES, "reading series"))
        return ps_txn_error(&r->txn, err);
    ps_arena_t a = PS_ARENA_INIT;
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        ps_series_rec_t rec;
        ps_labels_t ls;
        ps_arena_reset(&a);
        if (k.mv_size != 8 || ps_series_rec_decode(v.mv_data, v.mv_size, &rec) != 0 ||
            ps_labels_decode(rec.labels, rec.labels_len, &a, &ls) != 0) {
            ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record",
                             k.mv_size == 8 ? (unsigned long long)ps_get_be64(k.mv_data) : 0ull);
            break;
        }
        if ((ret = cb(ctx, ps_get_be64(k.mv_data), &ls)) != 0)
            break;
    }
    ps_cur_close(&cur);
    ps_arena_dispose(&a);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

int ps_reader_series_labels(ps_reader_t *r, uint64_t sid, ps_arena_t *arena, ps_labels_t *out, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val v;
    if (!ps_txn_get(&r->txn, DB_SERIES, kb, 8, &v, "reading series record"))
        return r->txn.ret ? ps_txn_error(&r->txn, err) : PS_ENOTFOUND;
    ps_series_rec_t rec;
    if (ps_series_rec_decode(v.mv_data, v.mv_size, &rec) != 0 || ps_labels_decode(rec.labels, rec.labels_len, arena, out) != 0)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    return 0;
}

/* The series of the labels encoded as enc among those past the series index's watermark (series.c:
 * their hash entries are written later): 0 with *sid, PS_ENOTFOUND, or an error. */
static int pending_lookup(ps_reader_t *r, const ps_buf_t *enc, uint64_t *sid, ps_err_t *err)
{
    uint64_t wm;
    int ret = ps_series_w_read(&r->txn, &wm, err);
    if (ret != 0 || wm == UINT64_MAX)
        return ret != 0 ? ret : PS_ENOTFOUND;
    ps_cur_t cur;
    if (!ps_cur_open(&cur, &r->txn, DB_SERIES, "reading series"))
        return ps_txn_error(&r->txn, err);
    uint8_t kb[8];
    ps_enc_be64(kb, wm + 1);
    ret = PS_ENOTFOUND;
    for (bool on = ps_cur_seek(&cur, kb, 8); on; on = ps_cur_next(&cur)) {
        if (cur.k.mv_size == 8 && ps_series_rec_holds(&cur.v, enc)) {
            *sid = ps_get_be64(cur.k.mv_data);
            ret = 0;
            break;
        }
    }
    ps_cur_close(&cur);
    return ret != 0 && r->txn.ret ? ps_txn_error(&r->txn, err) : ret;
}

int ps_reader_series_lookup(ps_reader_t *r, const ps_labels_t *ls, uint64_t *sid, ps_err_t *err)
{
    ps_buf_t enc = PS_BUF_INIT;
    ps_labels_encode(ls, &enc);
    uint8_t hk[8];
    ps_series_hash_key(&enc, hk);
    ps_cur_t cur;
    int ret = PS_ENOTFOUND;
    if (!ps_cur_open(&cur, &r->txn, DB_SERIES_HASH, "reading series index")) {
        ps_buf_dispose(&enc);
        return ps_txn_error(&r->txn, err);
    }
    for (bool on = ps_cur_find(&cur, hk, 8); on; on = ps_cur_next_dup(&cur)) {
        uint64_t cand = ps_get_be64(cur.v.mv_data);
        if (ps_series_rec_is(&r->txn, cand, &enc)) {
            *sid = cand;
            ret = 0;
            break;
        }
    }
    ps_cur_close(&cur);
    if (ret != 0 && r->txn.ret == 0)
        ret = pending_lookup(r, &enc, sid, err);
    ps_buf_dispose(&enc);
    if (ret != 0 && r->txn.ret)
        return ps_txn_error(&r->txn, err);
    return ret;
}

/* A cursor on the postings of name=value (key: its key, to dispose with postings_close); false
 * with the transaction's error when it cannot be opened. */
static bool postings_open(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                          ps_buf_t *key, ps_cur_t *cur)
{
    ps_buf_append(key, name, nlen);
    ps_buf_putc(key, 0);
    ps_buf_append(key, value, vlen);
    if (ps_cur_open(cur, &r->txn, DB_POSTINGS, "reading postings"))
        return true;
    ps_buf_dispose(key);
    return false;
}

static int postings_close(ps_reader_t *r, ps_cur_t *cur, ps_buf_t *key, int ret, ps_err_t *err)
{
    ps_cur_close(cur);
    ps_buf_dispose(key);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

/* The pending postings of txn (ps_pend_posts: the series past W, their postings written later) and
 * the entries [*lo, *hi) of the key name 0x00 value among them. */
static int pend_of(ps_reader_t *r, const ps_buf_t *key, const ps_pend_posts_t **pp, size_t *lo, size_t *hi,
                   ps_err_t *err)
{
    int ret = ps_pend_posts(&r->txn, pp, err);
    if (ret == 0)
        ps_pend_range(*pp, key->data, key->len, lo, hi);
    return ret;
}

/* cb on the live pending entries [*lo, hi) up to sid below (not on one equal to it: read from
 * DB_POSTINGS already); *lo moves past them */
static int pend_emit(const ps_pend_posts_t *pp, size_t *lo, size_t hi, uint64_t below, int (*cb)(void *ctx, uint64_t sid),
                     void *ctx)
{
    int ret = 0;
    for (; *lo < hi && pp->e[*lo].sid <= below && ret == 0; ++*lo)
        if (!ps_pend_dead(pp, *lo) && pp->e[*lo].sid != below)
            ret = cb(ctx, pp->e[*lo].sid);
    return ret;
}

int ps_reader_postings(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                       int (*cb)(void *ctx, uint64_t sid), void *ctx, ps_err_t *err)
{
    ps_buf_t key = PS_BUF_INIT;
    ps_cur_t cur;
    const ps_pend_posts_t *pp = NULL;
    size_t lo = 0, hi = 0;
    if (!postings_open(r, name, nlen, value, vlen, &key, &cur))
        return ps_txn_error(&r->txn, err);
    int ret = pend_of(r, &key, &pp, &lo, &hi, err);
    for (bool on = ret == 0 && ps_cur_find(&cur, key.data, key.len); on && ret == 0;
         on = ret == 0 && ps_cur_next_dup(&cur)) {
        MDB_val d = cur.v;
        if (d.mv_size != 8) {
            ret = ps_err_set(err, PS_ECORRUPT, "postings of %.*s: entry of %zu bytes", (int)nlen, name, d.mv_size);
            break;
        }
        /* (the pending sids are past W, past every sid of DB_POSTINGS but those a merge wrote) */
        uint64_t sid = ps_get_be64(d.mv_data);
        if ((ret = pend_emit(pp, &lo, hi, sid, cb, ctx)) == 0)
            ret = cb(ctx, sid);
    }
    if (ret == 0 && r->txn.ret == 0)
        ret = pend_emit(pp, &lo, hi, UINT64_MAX, cb, ctx);
    return postings_close(r, &cur, &key, ret, err);
}

int ps_reader_postings_count(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                             size_t *count, ps_err_t *err)
{
    ps_buf_t key = PS_BUF_INIT;
    ps_cur_t cur;
    const ps_pend_posts_t *pp = NULL;
    size_t lo = 0, hi = 0;
    *count = 0;
    if (!postings_open(r, name, nlen, value, vlen, &key, &cur))
        return ps_txn_error(&r->txn, err);
    int ret = pend_of(r, &key, &pp, &lo, &hi, err);
    bool any = ret == 0 && ps_cur_find(&cur, key.data, key.len);
    if (any) {
        size_t n = 0;
        int rc = mdb_cursor_count(cur.c, &n);
        if (rc != 0)
            ret = ps_lmdb_err(err, rc, "counting postings");
        *count = (size_t)n;
    }
    /* the pending ones, but those in DB_POSTINGS already (then its last sid is past W) */
    bool past_w = false;
    if (ret == 0 && any && lo < hi) {
        MDB_val k = ps_mval(key.data, key.len), d;
        int rc = mdb_cursor_get(cur.c, &k, &d, MDB_LAST_DUP);
        if (rc != 0)
            ret = ps_lmdb_err(err, rc, "counting postings");
        else
            past_w = d.mv_size == 8 && ps_get_be64(d.mv_data) > pp->w;
    }
    for (size_t i = lo; i < hi && ret == 0; i++) {
        if (ps_pend_dead(pp, i))
            continue;
        if (past_w) {
            uint8_t b[8];
            ps_enc_be64(b, pp->e[i].sid);
            MDB_val k = ps_mval(key.data, key.len), d = ps_mval(b, 8);
            int rc = mdb_cursor_get(cur.c, &k, &d, MDB_GET_BOTH);
            if (rc == 0)
                continue;
            if (rc != MDB_NOTFOUND) {
                ret = ps_lmdb_err(err, rc, "counting postings");
                break;
            }
        }
        ++*count;
    }
    return postings_close(r, &cur, &key, ret, err);
}

int ps_reader_postings_filter(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                              uint64_t *ids, size_t *n, ps_err_t *err)
{
    ps_buf_t key = PS_BUF_INIT;
    ps_cur_t cur;
    const ps_pend_posts_t *pp = NULL;
    size_t lo = 0, hi = 0;
    if (!postings_open(r, name, nlen, value, vlen, &key, &cur))
        return ps_txn_error(&r->txn, err);
    int ret = pend_of(r, &key, &pp, &lo, &hi, err);
    size_t k = 0;
    for (size_t i = 0; i < *n && ret == 0; i++) {
        uint8_t d[8];
        ps_enc_be64(d, ids[i]);
        MDB_val kv = ps_mval(key.data, key.len), dv = ps_mval(d, 8);
        int rc = mdb_cursor_get(cur.c, &kv, &dv, MDB_GET_BOTH);
        size_t at = rc == MDB_NOTFOUND && lo < hi ? ps_pend_lower(pp, key.data, key.len, ids[i]) : hi;
        if (rc == 0 || (at < hi && pp->e[at].sid == ids[i] && !ps_pend_dead(pp, at)))
            ids[k++] = ids[i];
        else if (rc != MDB_NOTFOUND)
            ret = ps_lmdb_err(err, rc, "reading postings");
    }
    if (ret == 0)
        *n = k;
    return postings_close(r, &cur, &key, ret, err);
}

int ps_reader_label_values(ps_reader_t *r, const char *name, size_t nlen,
                           int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err)
{
    return ps_reader_label_values_where(r, name, nlen, NULL, cb, ctx, err);
}

/* The next pending key from entry *i on that starts with prefix and has a live series: true with
 * [*i, *end) its entries; false when there is none. */
static bool pend_next_key(const ps_pend_posts_t *pp, size_t *i, size_t *end, const void *prefix, size_t plen)
{
    for (; *i < pp->n; *i = *end) {
        size_t len;
        const char *k = ps_pend_key(pp, *i, &len);
        if (len < plen || memcmp(k, prefix, plen) != 0)
            return false;
        *end = ps_pend_key_end(pp, *i);
        if (ps_pend_any(pp, *i, *end, 0))
            return true;
    }
    return false;
}

static int cmp_bytes(const void *a, size_t an, const void *b, size_t bn)
{
    int c = memcmp(a, b, an < bn ? an : bn);
    return c != 0 ? c : (an > bn) - (an < bn);
}

int ps_reader_label_values_where(ps_reader_t *r, const char *name, size_t nlen, int (*pred)(void *ctx, uint64_t sid),
                                 int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err)
{
    ps_buf_t key = PS_BUF_INIT;
    ps_buf_append(&key, name, nlen);
    ps_buf_putc(&key, 0);
    ps_cur_t cur;
    const ps_pend_posts_t *pp;
    int ret = ps_pend_posts(&r->txn, &pp, err);
    if (ret != 0 || !ps_cur_open(&cur, &r->txn, DB_POSTINGS, "reading label values")) {
        ps_buf_dispose(&key);
        return ret ? ret : ps_txn_error(&r->txn, err);
    }
    /* the values of DB_POSTINGS and of the pending postings, merged in key order */
    size_t pi = ps_pend_seek(pp, key.data, key.len), pe = pi;
    bool pon = pend_next_key(pp, &pi, &pe, key.data, key.len);
    bool on = ps_cur_seek(&cur, key.data, key.len) && ps_cur_key_starts(&cur, key.data, nlen + 1);
    /* none of this name pending (most listings): the index's keys alone, the walk as tight as before */
    while (!pon && pred == NULL && on && ret == 0 && r->txn.ret == 0) {
        ret = cb(ctx, (const char *)cur.k.mv_data + nlen + 1, cur.k.mv_size - nlen - 1);
        on = ps_cur_next_nodup(&cur) && ps_cur_key_starts(&cur, key.data, nlen + 1);
    }
    while ((on || pon) && ret == 0) {
        size_t plen = 0;
        const char *pk = pon ? ps_pend_key(pp, pi, &plen) : NULL;
        int c = !on ? 1 : !pon ? -1 : cmp_bytes(cur.k.mv_data, cur.k.mv_size, pk, plen);
        /* the value's series in turn, up to the first that pred takes (every value without pred) */
        int yes = pred == NULL;
        while (c <= 0 && yes == 0) {
            if (cur.v.mv_size != 8) {
                ret = ps_err_set(err, PS_ECORRUPT, "postings of %.*s: entry of %zu bytes", (int)nlen, name,
                                 cur.v.mv_size);
                break;
            }
            yes = pred(ctx, ps_get_be64(cur.v.mv_data));
            if (yes == 0 && !ps_cur_next_dup(&cur))
                break;
        }
        for (size_t i = pi; c >= 0 && i < pe && yes == 0 && ret == 0; i++)
            if (!ps_pend_dead(pp, i))
                yes = pred(ctx, pp->e[i].sid);
        if (ret == 0 && yes < 0)
            ret = yes;
        if (ret == 0 && yes > 0)
            ret = c <= 0 ? cb(ctx, (const char *)cur.k.mv_data + nlen + 1, cur.k.mv_size - nlen - 1)
                         : cb(ctx, pk + nlen + 1, plen - nlen - 1);
        if (ret != 0 || r->txn.ret)
            break;
        if (c <= 0)
            on = ps_cur_next_nodup(&cur) && ps_cur_key_starts(&cur, key.data, nlen + 1);
        if (c >= 0) {
            pi = pe;
            pon = pend_next_key(pp, &pi, &pe, key.data, key.len);
        }
    }
    ps_cur_close(&cur);
    ps_buf_dispose(&key);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

/* the length of key's name (up to its 0x00) */
static size_t name_len(const void *key, size_t n)
{
    const char *z = memchr(key, 0, n);
    return z ? (size_t)(z - (const char *)key) : n;
}

int ps_reader_label_names(ps_reader_t *r, int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx, ps_err_t *err)
{
    ps_cur_t cur;
    const ps_pend_posts_t *pp;
    int ret = ps_pend_posts(&r->txn, &pp, err);
    if (ret != 0 || !ps_cur_open(&cur, &r->txn, DB_POSTINGS, "reading label names"))
        return ret ? ret : ps_txn_error(&r->txn, err);
    ps_buf_t next = PS_BUF_INIT;
    /* the names of DB_POSTINGS and of the pending postings (those with a live series), merged */
    size_t pi = 0, pe = 0;
    bool pon = pend_next_key(pp, &pi, &pe, "", 0);
    bool on = ps_cur_first(&cur);
    while (on || pon) {
        size_t plen = 0, nl = on ? name_len(cur.k.mv_data, cur.k.mv_size) : 0;
        const char *pk = pon ? ps_pend_key(pp, pi, &plen) : NULL;
        size_t pnl = pon ? name_len(pk, plen) : 0;
        int c = !on ? 1 : !pon ? -1 : cmp_bytes(cur.k.mv_data, nl, pk, pnl);
        if ((ret = c <= 0 ? cb(ctx, cur.k.mv_data, nl) : cb(ctx, pk, pnl)) != 0)
            break;
        /* jump past every value of this name: name 0x01 sorts after name 0x00 anything */
        ps_buf_reset(&next);
        ps_buf_append(&next, c <= 0 ? cur.k.mv_data : (const void *)pk, c <= 0 ? nl : pnl);
        ps_buf_putc(&next, 1);
        if (c <= 0)
            on = ps_cur_seek(&cur, next.data, next.len);
        if (c >= 0) {
            pi = ps_pend_seek(pp, next.data, next.len);
            pon = pend_next_key(pp, &pi, &pe, "", 0);
        }
    }
    ps_cur_close(&cur);
    ps_buf_dispose(&next);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

/* Emits the profiles of a decoded chunk within [start, end]. */
static int emit_chunk(const void *p, size_t n, const MDB_val *ref, int64_t start, int64_t end, bool meta_only,
                      int (*cb)(void *ctx, const ps_stored_profile_t *p), void *ctx, ps_arena_t *a, ps_err_t *err)
{
    ps_chunk_data_t d;
    int ret = meta_only ? ps_chunk_decode_meta(p, n, a, &d, err)
                        : ps_chunk_decode_ref(p, n, ref->mv_data, ref->mv_size, a, &d, err);
    if (ret)
        return ret;
    uint32_t *cnt = NULL, *pos = NULL;
    uint64_t *tn = NULL;
    int64_t *tv = NULL;
    if (!meta_only) {
        /* transpose the per-node columns into per-profile rows */
        cnt = ps_arena_calloc(a, d.n + 1, sizeof(uint32_t));
        uint32_t m = d.off[d.nnodes];
        for (uint32_t i = 0; i < m; i++)
            cnt[d.idx[i] + 1]++;
        for (uint32_t i = 0; i < d.n; i++)
            cnt[i + 1] += cnt[i];
        pos = ps_arena_alloc(a, (d.n + 1) * sizeof(uint32_t));
        memcpy(pos, cnt, (d.n + 1) * sizeof(uint32_t));
        tn = ps_arena_alloc(a, (m + 1) * sizeof(uint64_t));
        tv = ps_arena_alloc(a, (m + 1) * sizeof(int64_t));
        for (uint32_t j = 0; j < d.nnodes; j++)
            for (uint32_t i = d.off[j]; i < d.off[j + 1]; i++) {
                uint32_t at = pos[d.idx[i]]++;
                tn[at] = d.node_ids[j];
                tv[at] = d.val[i];
            }
    }
    for (uint32_t i = 0; i < d.n; i++) {
        if (d.ts[i] < start || d.ts[i] > end)
            continue;
        ps_stored_profile_t sp = {d.ts[i], d.durations[i], d.periods[i], d.totals[i], 0, NULL, NULL};
        if (!meta_only) {
            sp.n = cnt[i + 1] - cnt[i];
            sp.nodes = tn + cnt[i];
            sp.values = tv + cnt[i];
        }
        if ((ret = cb(ctx, &sp)) != 0)
            return ret;
    }
    return 0;
}

static void info_add(ps_sum_info_t *info, int64_t ts, int64_t duration, int64_t period, int64_t total)
{
    if (info == NULL)
        return;
    if (info->profiles == 0 || ts < info->min_ts)
        info->min_ts = ts;
    if (info->profiles == 0 || ts > info->max_ts)
        info->max_ts = ts;
    info->profiles++;
    info->duration = ps_sat_add(info->duration, duration);
    if (period > info->period)
        info->period = period;
    info->total = ps_sat_add(info->total, total);
}

/*
 * Visits what series sid holds in [start, end], oldest first: the chunks that may overlap it (keyed
 * by max_ts, so one seek finds the first; the walk stops at the first whose min_ts is past end),
 * then the head records inside it. A visitor returns 0 to go on, anything else to stop with it.
 * Every chunk header is checked before a visitor sees it.
 */
/* The one message for a chunk whose header does not decode; k is its key. */
static int chunk_damaged(ps_err_t *err, uint64_t sid, const MDB_val *k)
{
    return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged chunk header (chunk up to %lld)",
                      (unsigned long long)sid, (long long)ps_ts_unkey(ps_get_be64((const uint8_t *)k->mv_data + 8)));
}

typedef struct walk {
    ps_txn_t *txn;
    int64_t min_ts; /* the retention clamp (INT64_MIN: none) */
    uint64_t sid;
    int64_t start, end;
    ps_arena_t arena; /* reset before each visit */
    ps_err_t *err;
    int (*on_chunk)(struct walk *w, const void *p, size_t n);
    int (*on_head)(struct walk *w, int64_t ts, const void *p, size_t n);
    void *ctx;
    MDB_val ref; /* the chunk the visited one refers to (PS_CHUNK_ENC_REF), else {0, NULL} */
} walk_t;

int ps_chunk_ref_lookup(ps_txn_t *txn, const void *p, size_t n, MDB_val *ref, ps_err_t *err)
{
    uint64_t sid;
    *ref = (MDB_val){0, NULL};
    int r = ps_chunk_ref_sid(p, n, &sid, err);
    if (r <= 0)
        return r;
    ps_chunk_header_t h;
    ps_chunk_header(p, n, &h); /* ps_chunk_ref_sid read it */
    uint8_t kb[16];
    ps_key_sid_ts(kb, sid, h.max_ts);
    if (!ps_txn_get(txn, DB_CHUNKS, kb, 16, ref, "reading the chunk a chunk refers to")) {
        *ref = (MDB_val){0, NULL}; /* missing: the decoder names it */
        if (txn->ret)
            return ps_txn_error(txn, err);
    }
    return 0;
}

static int walk_db(walk_t *w, int db)
{
    ps_txn_t *txn = w->txn;
    ps_cur_t cur;
    uint8_t kb[16];
    int ret = 0;
    if (!ps_cur_open(&cur, txn, db, "reading series data"))
        return ps_txn_error(txn, w->err);
    ps_key_sid_ts(kb, w->sid, w->start);
    bool on = ps_cur_seek(&cur, kb, 16);
    while (on && ret == 0 && ps_cur_in_series(&cur, w->sid)) {
        MDB_val k = cur.k, v = cur.v;
        ps_arena_reset(&w->arena);
        if (db == DB_CHUNKS) {
            ps_chunk_header_t h;
            if (ps_chunk_header(v.mv_data, v.mv_size, &h) != 0) {
                ret = chunk_damaged(w->err, w->sid, &k);
                break;
            }
            if (h.min_ts > w->end)
                break;
            if ((ret = ps_chunk_ref_lookup(txn, v.mv_data, v.mv_size, &w->ref, w->err)) == 0)
                ret = w->on_chunk(w, v.mv_data, v.mv_size);
            if (ret == PS_ECORRUPT)
                ps_err_prefix(w->err, "series %llu: damaged chunk (chunk up to %lld)", (unsigned long long)w->sid,
                              (long long)ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8)));
        } else {
            int64_t ts = ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8));
            if (ts > w->end)
                break;
            ret = w->on_head(w, ts, v.mv_data, v.mv_size);
        }
        if (ret == 0)
            on = ps_cur_next(&cur);
    }
    ps_cur_close(&cur);
    if (ret == 0)
        ret = ps_txn_error(txn, w->err);
    return ret;
}

static int walk_series(walk_t *w)
{
    int ret = 0;
    if (w->start < w->min_ts)
        w->start = w->min_ts;
    if (w->start <= w->end && (ret = walk_db(w, DB_CHUNKS)) == 0)
        ret = walk_db(w, DB_HEAD);
    ps_arena_dispose(&w->arena);
    return ret;
}

static int head_damaged(walk_t *w, int64_t ts)
{
    return ps_err_set(w->err, PS_ECORRUPT, "series %llu: damaged head record at %lld", (unsigned long long)w->sid,
                      (long long)ts);
}

typedef struct profiles_ctx {
    bool meta_only;
    int (*cb)(void *ctx, const ps_stored_profile_t *p);
    void *ctx;
} profiles_ctx_t;

static int profiles_chunk(walk_t *w, const void *p, size_t n)
{
    profiles_ctx_t *c = w->ctx;
    return emit_chunk(p, n, &w->ref, w->start, w->end, c->meta_only, c->cb, c->ctx, &w->arena, w->err);
}

static int profiles_head(walk_t *w, int64_t ts, const void *p, size_t n)
{
    profiles_ctx_t *c = w->ctx;
    ps_stored_profile_t sp;
    if (ps_head_decode(p, n, c->meta_only ? NULL : &w->arena, &sp) != 0)
        return head_damaged(w, ts);
    sp.ts = ts;
    if (c->meta_only)
        sp.n = 0;
    return c->cb(c->ctx, &sp);
}

int ps_profiles_raw(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end, bool meta_only,
                    int (*cb)(void *ctx, const ps_stored_profile_t *p), void *ctx, ps_err_t *err)
{
    profiles_ctx_t c = {meta_only, cb, ctx};
    walk_t w = {txn, min_ts, sid, start, end, PS_ARENA_INIT, err, profiles_chunk, profiles_head, &c, {0, NULL}};
    return walk_series(&w);
}

int ps_reader_profiles(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, bool meta_only,
                       int (*cb)(void *ctx, const ps_stored_profile_t *p), void *ctx, ps_err_t *err)
{
    return ps_profiles_raw(&r->txn, r->min_ts, sid, start, end, meta_only, cb, ctx, err);
}

typedef struct sum_ctx {
    void (*on_node)(void *ctx, uint64_t node, int64_t value);
    void *ctx;
    ps_sum_info_t *info;
} sum_ctx_t;

static int sum_chunk(walk_t *w, const void *p, size_t n)
{
    sum_ctx_t *c = w->ctx;
    ps_chunk_data_t d;
    int ret = ps_chunk_decode_meta(p, n, &w->arena, &d, w->err);
    if (ret)
        return ret;
    uint32_t from = 0, to = d.n;
    while (from < d.n && d.ts[from] < w->start)
        from++;
    while (to > from && d.ts[to - 1] > w->end)
        to--;
    if (from == to)
        return 0;
    for (uint32_t i = from; i < to; i++)
        info_add(c->info, d.ts[i], d.durations[i], d.periods[i], d.totals[i]);
    if (c->on_node == NULL)
        return 0;
    return ps_chunk_sum_range_ref(p, n, w->ref.mv_data, w->ref.mv_size, from, to, c->on_node, c->ctx, w->err);
}

static int sum_head(walk_t *w, int64_t ts, const void *p, size_t n)
{
    sum_ctx_t *c = w->ctx;
    ps_stored_profile_t sp;
    if (ps_head_decode(p, n, c->on_node ? &w->arena : NULL, &sp) != 0)
        return head_damaged(w, ts);
    info_add(c->info, ts, sp.duration, sp.period, sp.total);
    if (c->on_node)
        for (uint32_t i = 0; i < sp.n; i++)
            c->on_node(c->ctx, sp.nodes[i], sp.values[i]);
    return 0;
}

int ps_sum_raw(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end,
               void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info, ps_err_t *err)
{
    sum_ctx_t c = {on_node, ctx, info};
    walk_t w = {txn, min_ts, sid, start, end, PS_ARENA_INIT, err, sum_chunk, sum_head, &c, {0, NULL}};
    return walk_series(&w);
}

int ps_reader_sum(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end,
                  void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info,
                  ps_err_t *err)
{
    if (r->no_rollups || (r->store->absent & (1u << DB_ROLLUPS)))
        return ps_sum_raw(&r->txn, r->min_ts, sid, start, end, on_node, ctx, info, err);
    return ps_rollup_sum(&r->txn, r->min_ts, sid, start, end, on_node, ctx, info, err);
}

void ps_reader_rollups(ps_reader_t *r, bool use)
{
    r->no_rollups = !use;
}

/* 0 and *is_float, or an error; a missing series reads as a profile series (with no data) */
static int is_float(ps_reader_t *r, uint64_t sid, bool *yes, ps_err_t *err)
{
    ps_series_kind_t kind;
    int rc = ps_reader_series_kind(r, sid, &kind, err);
    *yes = rc == 0 && kind == PS_SERIES_FLOAT;
    return rc == PS_ENOTFOUND ? 0 : rc;
}

int ps_reader_latest(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, int64_t *ts, ps_err_t *err)
{
    if (start < r->min_ts)
        start = r->min_ts;
    if (start > end)
        return PS_ENOTFOUND;
    bool fl;
    int fr = is_float(r, sid, &fl, err);
    if (fr || fl)
        return fr ? fr : ps_float_reader_latest(r, sid, start, end, ts, err);
    /* the head holds the newest profiles: look there first, backwards from end */
    ps_txn_t *txn = &r->txn;
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_HEAD, "reading head"))
        return ps_txn_error(txn, err);
    uint8_t kb[16];
    if (end == INT64_MAX)
        ps_key_sid_ts(kb, sid + 1, INT64_MIN);
    else
        ps_key_sid_ts(kb, sid, end + 1);
    int ret = PS_ENOTFOUND;
    if (ps_cur_seek_before(&cur, kb, 16) && ps_cur_in_series(&cur, sid)) {
        int64_t t = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8));
        if (t >= start && t <= end) {
            *ts = t;
            ret = 0;
        }
    } else if (txn->ret) {
        ret = ps_txn_error(txn, err);
    }
    ps_cur_close(&cur);
    if (ret != PS_ENOTFOUND)
        return ret;
    /* else the newest chunk profile <= end: chunks with max_ts >= start, scanning forward; a
     * damaged chunk is an error, as in ps_reader_profiles */
    ps_arena_t a = PS_ARENA_INIT;
    if (!ps_cur_open(&cur, txn, DB_CHUNKS, "reading chunks")) {
        ps_arena_dispose(&a);
        return ps_txn_error(txn, err);
    }
    ps_key_sid_ts(kb, sid, start);
    for (bool on = ps_cur_seek(&cur, kb, 16); on && ps_cur_in_series(&cur, sid);
         on = ps_cur_next(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        ps_chunk_header_t h;
        if (ps_chunk_header(v.mv_data, v.mv_size, &h) != 0) {
            ret = chunk_damaged(err, sid, &k);
            break;
        }
        if (h.min_ts > end)
            break;
        ps_chunk_data_t d;
        ps_arena_reset(&a);
        int dr = ps_chunk_decode_meta(v.mv_data, v.mv_size, &a, &d, err);
        if (dr != 0) {
            ret = dr;
            break;
        }
        for (uint32_t i = 0; i < d.n; i++)
            if (d.ts[i] >= start && d.ts[i] <= end) {
                *ts = d.ts[i];
                ret = 0;
            }
    }
    ps_cur_close(&cur);
    ps_arena_dispose(&a);
    if ((ret == 0 || ret == PS_ENOTFOUND) && txn->ret)
        ret = ps_txn_error(txn, err);
    return ret;
}

int ps_reader_has_data(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err)
{
    if (start < r->min_ts)
        start = r->min_ts;
    if (start > end)
        return 0;
    /* A profile series' chunks and head first: a float series has none (a series holds one kind:
     * the writer refuses the other), so its record is read only when neither has the id.
     * A chunk whose max_ts >= start and min_ts <= end may still have no profile inside a gap,
     * but that is close enough for label listings; heads are exact. */
    ps_txn_t *txn = &r->txn;
    if (!r->hd_open) {
        r->hd_open = true;
        if (!ps_cur_open(&r->hd_chunks, txn, DB_CHUNKS, "reading chunks") ||
            !ps_cur_open(&r->hd_head, txn, DB_HEAD, "reading head"))
            return ps_txn_error(txn, err);
    }
    if (txn->ret)
        return ps_txn_error(txn, err);
    uint8_t kb[16];
    int has = 0;
    bool profiles = false;
    ps_cur_t *cur = &r->hd_chunks;
    ps_key_sid_ts(kb, sid, start);
    if (ps_cur_seek(cur, kb, 16) && ps_cur_in_series(cur, sid)) {
        ps_chunk_header_t h;
        profiles = true;
        if (ps_chunk_header(cur->v.mv_data, cur->v.mv_size, &h) != 0)
            has = chunk_damaged(err, sid, &cur->k);
        else
            has = h.min_ts <= end;
    } else {
        has = ps_txn_error(txn, err);
    }
    if (has != 0)
        return has;
    cur = &r->hd_head;
    if (ps_cur_seek(cur, kb, 16) && ps_cur_in_series(cur, sid)) {
        profiles = true;
        has = ps_ts_unkey(ps_get_be64((const uint8_t *)cur->k.mv_data + 8)) <= end;
    } else {
        has = ps_txn_error(txn, err);
    }
    if (has != 0 || profiles)
        return has;
    bool fl;
    int fr = is_float(r, sid, &fl, err);
    return fr || !fl ? fr : ps_float_reader_has_data(r, sid, start, end, err);
}

int ps_reader_footprint(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_footprint_t *f, ps_err_t *err)
{
    if (start < r->min_ts)
        start = r->min_ts;
    if (start > end)
        return 0;
    bool fl;
    int fr = is_float(r, sid, &fl, err);
    if (fr || fl)
        return fr;
    ps_txn_t *txn = &r->txn;
    ps_cur_t cur;
    uint8_t kb[16];
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_CHUNKS, "reading chunks"))
        return ps_txn_error(txn, err);
    ps_key_sid_ts(kb, sid, start); /* a chunk's key is its newest profile */
    for (bool on = ps_cur_seek(&cur, kb, 16); on && ps_cur_in_series(&cur, sid);
         on = ps_cur_next(&cur)) {
        ps_chunk_header_t h;
        if (ps_chunk_header(cur.v.mv_data, cur.v.mv_size, &h) != 0) {
            ret = chunk_damaged(err, sid, &cur.k);
            break;
        }
        if (h.min_ts > end)
            break;
        f->chunks++;
        f->chunk_profiles += h.n;
        f->chunk_bytes += cur.v.mv_size;
    }
    ps_cur_close(&cur);
    if (ret == 0 && txn->ret)
        ret = ps_txn_error(txn, err);
    if (ret)
        return ret;
    if (!ps_cur_open(&cur, txn, DB_HEAD, "reading head"))
        return ps_txn_error(txn, err);
    for (bool on = ps_cur_seek(&cur, kb, 16); on && ps_cur_in_series(&cur, sid);
         on = ps_cur_next(&cur)) {
        if (ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8)) > end)
            break;
        f->head_profiles++;
        f->head_bytes += cur.v.mv_size;
    }
    ps_cur_close(&cur);
    return txn->ret ? ps_txn_error(txn, err) : 0;
}

int ps_reader_series_kind(ps_reader_t *r, uint64_t sid, ps_series_kind_t *kind, ps_err_t *err)
{
    uint8_t k[8];
    ps_enc_be64(k, sid);
    MDB_val val;
    if (!ps_txn_get(&r->txn, DB_SERIES, k, 8, &val, "series"))
        return r->txn.ret ? ps_txn_error(&r->txn, err) : PS_ENOTFOUND;
    ps_series_rec_t rec;
    if (ps_series_rec_decode(val.mv_data, val.mv_size, &rec) != 0)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    *kind = rec.kind;
    return 0;
}

typedef struct totals_ctx {
    int (*cb)(void *ctx, const ps_float_sample_t *s, size_t n);
    void *ctx;
} totals_ctx_t;

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    totals_ctx_t *c = ctx;
    ps_float_sample_t s = {floor_div(p->ts, 1000000), (double)p->total};
    return c->cb(c->ctx, &s, 1);
}

int ps_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                      int (*cb)(void *ctx, const ps_float_sample_t *s, size_t n), void *ctx, ps_err_t *err)
{
    if (mint > maxt)
        return 0;
    ps_series_kind_t kind;
    int ret = ps_reader_series_kind(r, sid, &kind, err);
    if (ret == PS_ENOTFOUND)
        return 0;
    if (ret)
        return ret;
    if (kind == PS_SERIES_FLOAT)
        return ps_float_reader_samples(r, sid, mint, maxt, cb, ctx, err);
    /* ms -> ns bounds, saturating: profile ts in [mint*1e6, maxt*1e6 + 999999] has floor(ts/1e6) in range */
    int64_t lo = mint <= -T_MS_MAX ? INT64_MIN : mint >= T_MS_MAX ? INT64_MAX : mint * 1000000;
    int64_t hi = maxt >= T_MS_MAX ? INT64_MAX : maxt <= -T_MS_MAX ? INT64_MIN : maxt * 1000000 + 999999;
    totals_ctx_t c = {cb, ctx};
    return ps_reader_profiles(r, sid, lo, hi, true, on_profile, &c, err);
}
