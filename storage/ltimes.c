/*
 * ltimes.c - the label index's times (schema 10; docs/FORMAT.md "Label times"): per label name and
 * per name=value, the first and last time of data of its series, kept by the writer at most once
 * per series and time granule, so that the label APIs with a range decide most values without a
 * look at their series.
 *
 * Record (DB_LTIMES value): enc u8 (=1) | first i64 BE | last i64 BE, key "name" or "name 0x00 value"
 * (the postings' key). first and last are times (ns) of data written to a series of that name or
 * value (a float sample's t ms as t * 10^6); no data of those series lies before first, nor past
 * the end of last's granule. Only retention deletes data (before its cutoff, DB_INFO "ltcut" the
 * largest), so first or last at or past that cutoff is still stored.
 *
 * DB_PTIMES (schema 15) holds the same records of profile series only (Pyroscope's label APIs list
 * the labels of profile series: a float series sharing a pair must not decide it), read the same way,
 * and the same again per profile type (the series' __name__) under the type's prefix 0x00 hash(type)
 * (8 BE): key prefix 0x00 hash, value 0x01 type (0x02: two types share the hash, whose records then
 * cannot tell them apart), and prefix name [0x00 value] -> times.
 */
#include <stdlib.h>

#include "chunk.h"
#include "core/hash.h"
#include "floats.h"

#define LT_REC_V1 1
#define LT_REC_LEN 17

const int64_t ps_ltimes_granule = 5ll * 60 * 1000000000; /* ns: 5 minutes */

static int64_t granule_of(int64_t ts)
{
    return floor_div(ts, ps_ltimes_granule);
}

bool ps_ltimes_same_granule(int64_t a, int64_t b)
{
    return granule_of(a) == granule_of(b);
}

/* the last ns of last's granule (saturating) */
static int64_t granule_end(int64_t last)
{
    int64_t g = granule_of(last);
    if (g >= INT64_MAX / ps_ltimes_granule)
        return INT64_MAX;
    return (g + 1) * ps_ltimes_granule - 1;
}

static void rec_encode(uint8_t b[LT_REC_LEN], int64_t first, int64_t last)
{
    b[0] = LT_REC_V1;
    ps_enc_be64(b + 1, (uint64_t)first);
    ps_enc_be64(b + 9, (uint64_t)last);
}

void ps_ltimes_rec_encode(int64_t first, int64_t last, ps_buf_t *out)
{
    uint8_t b[LT_REC_LEN];
    rec_encode(b, first, last);
    ps_buf_append(out, b, sizeof(b));
}

bool ps_ltimes_rec_decode(const MDB_val *v, int64_t *first, int64_t *last)
{
    const uint8_t *b = v->mv_data;
    if (v->mv_size != LT_REC_LEN || b[0] != LT_REC_V1)
        return false;
    *first = (int64_t)ps_get_be64(b + 1);
    *last = (int64_t)ps_get_be64(b + 9);
    return *first <= *last;
}

static int damaged(ps_err_t *err, const MDB_val *k)
{
    const char *p = k->mv_data;
    const char *z = memchr(p, 0, k->mv_size);
    if (z == NULL)
        return ps_err_set(err, PS_ECORRUPT, "label times of %.*s: damaged record", (int)k->mv_size, p);
    return ps_err_set(err, PS_ECORRUPT, "label times of %.*s=%.*s: damaged record", (int)(z - p), p,
                      (int)(k->mv_size - (size_t)(z - p) - 1), z + 1);
}

void ps_lt_memo_clear(ps_lt_memo_t *m)
{
    if (!m->on)
        return;
    for (int i = 0; i < 3; i++)
        ps_hmap_dispose(&m->map[i]);
    free(m->times);
    memset(m, 0, sizeof(*m));
}

/* memo's index of key (n bytes) in its map i (hash h), or UINT64_MAX; the maps made if need be */
static uint64_t memo_get(ps_lt_memo_t *m, int i, const void *key, size_t n, uint64_t h)
{
    if (!m->on) {
        for (int j = 0; j < 3; j++)
            ps_hmap_init(&m->map[j]);
        m->on = true;
    }
    uint64_t x;
    return ps_hmap_get_h(&m->map[i], h, key, n, &x) ? x : UINT64_MAX;
}

/* key (at index x, UINT64_MAX: not in the memo) holds first and last now */
static void memo_set(ps_lt_memo_t *m, int i, const void *key, size_t n, uint64_t h, uint64_t x, int64_t first,
                     int64_t last)
{
    if (x == UINT64_MAX) {
        if (m->n >= PS_LT_MEMO_MAX) {
            ps_lt_memo_clear(m);
            memo_get(m, i, key, n, h);
        }
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 256;
            m->times = ps_xrealloc(m->times, m->cap * sizeof(*m->times));
        }
        x = m->n++;
        ps_hmap_put_h(&m->map[i], h, key, n, x);
    }
    m->times[x][0] = first;
    m->times[x][1] = last;
}

/* key's record takes ts: created, first lowered, or last moved to ts in a later granule (then 1;
 * 0: it had ts already). memo (or NULL): records seen lately; one that holds ts already is not read. */
static int note_key(ps_txn_t *txn, int db, const void *key, size_t n, int64_t ts, ps_lt_memo_t *memo, ps_err_t *err)
{
    int mi = db == DB_PTIMES;
    uint64_t h = 0, x = UINT64_MAX;
    if (memo != NULL) {
        h = ps_hash64(key, n, 0);
        x = memo_get(memo, mi, key, n, h);
        if (x != UINT64_MAX && ts >= memo->times[x][0] && granule_of(ts) <= granule_of(memo->times[x][1]))
            return 0;
    }
    MDB_val v;
    int64_t first = ts, last = ts;
    int ret = 1;
    if (ps_txn_get(txn, db, key, n, &v, "reading label times")) {
        MDB_val k = ps_mval(key, n);
        int64_t f, l;
        if (!ps_ltimes_rec_decode(&v, &f, &l))
            return damaged(err, &k);
        first = ts < f ? ts : f;
        last = granule_of(ts) > granule_of(l) ? ts : l;
        if (first == f && last == l)
            ret = 0;
    } else if (txn->ret) {
        return ps_txn_error(txn, err);
    }
    if (ret != 0) {
        uint8_t b[LT_REC_LEN];
        rec_encode(b, first, last);
        if (!ps_txn_put(txn, db, key, n, b, sizeof(b), 0, "writing label times"))
            return ps_txn_error(txn, err);
    }
    if (memo != NULL)
        memo_set(memo, mi, key, n, h, x, first, last);
    return ret;
}

/* pfx (plen bytes: none, or a profile type's) then the pair's postings key, into key */
static void pfx_key(ps_buf_t *key, const uint8_t *pfx, size_t plen, const ps_label_pair_t *p)
{
    ps_buf_reset(key);
    ps_buf_append(key, pfx, plen);
    ps_buf_append(key, p->name, p->nlen);
    ps_buf_putc(key, 0);
    ps_buf_append(key, p->value, p->vlen);
}

static int note_in(ps_txn_t *txn, int db, const uint8_t *pfx, size_t plen, const ps_labels_t *ls, int64_t ts,
                   ps_buf_t *key, ps_lt_memo_t *memo, ps_err_t *err)
{
    int ret = 0;
    for (uint32_t i = 0; i < ls->n && ret >= 0; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        pfx_key(key, pfx, plen, p);
        /* the name's times hold its values': a value that had ts already leaves its name's as they are */
        if ((ret = note_key(txn, db, key->data, key->len, ts, memo, err)) > 0)
            ret = note_key(txn, db, key->data, plen + p->nlen, ts, memo, err);
    }
    return ret < 0 ? ret : 0;
}

#define PT_TYPE_ONE 1    /* the type record: this byte, then the one type of its hash */
#define PT_TYPE_SHARED 2 /* two types share the hash */
#define PT_PFX_LEN 9

/* the key prefix of profile type t's times: 0x00 hash(t) (8 BE) */
static void type_prefix(const char *t, size_t tn, uint8_t p[PT_PFX_LEN])
{
    p[0] = 0;
    ps_enc_be64(p + 1, ps_hash64(t, tn, 0));
}

/* the type record of prefix p made to hold t (or to say the hash is shared) if it does not */
static int type_record(ps_txn_t *txn, const uint8_t p[PT_PFX_LEN], const char *t, size_t tn, ps_err_t *err)
{
    MDB_val v;
    uint8_t enc = PT_TYPE_ONE;
    if (ps_txn_get(txn, DB_PTIMES, p, PT_PFX_LEN, &v, "reading label times")) {
        const uint8_t *b = v.mv_data;
        if (v.mv_size >= 1 && b[0] == PT_TYPE_SHARED)
            return 0;
        if (v.mv_size == tn + 1 && b[0] == PT_TYPE_ONE && memcmp(b + 1, t, tn) == 0)
            return 0;
        if (v.mv_size < 2 || b[0] != PT_TYPE_ONE)
            return ps_err_set(err, PS_ECORRUPT, "label times of type %.*s: damaged type record", (int)tn, t);
        enc = PT_TYPE_SHARED; /* another type of the same hash */
    } else if (txn->ret) {
        return ps_txn_error(txn, err);
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_putc(&b, (char)enc);
    if (enc == PT_TYPE_ONE)
        ps_buf_append(&b, t, tn);
    bool ok = ps_txn_put(txn, DB_PTIMES, p, PT_PFX_LEN, b.data, b.len, 0, "writing label times");
    ps_buf_dispose(&b);
    return ok ? 0 : ps_txn_error(txn, err);
}

/* the type record of prefix p holds t (or says the hash is shared). memo (or NULL): the records
 * seen lately, under prefix and type (a type record does not change once it holds t) */
static int note_type(ps_txn_t *txn, const uint8_t p[PT_PFX_LEN], const char *t, size_t tn, ps_lt_memo_t *memo,
                     ps_err_t *err)
{
    uint8_t mk[PT_PFX_LEN + 128];
    if (memo == NULL || tn > sizeof(mk) - PT_PFX_LEN)
        return type_record(txn, p, t, tn, err);
    memcpy(mk, p, PT_PFX_LEN);
    memcpy(mk + PT_PFX_LEN, t, tn);
    uint64_t h = ps_hash64(mk, PT_PFX_LEN + tn, 0);
    if (memo_get(memo, 2, mk, PT_PFX_LEN + tn, h) != UINT64_MAX)
        return 0;
    int ret = type_record(txn, p, t, tn, err);
    if (ret == 0)
        memo_set(memo, 2, mk, PT_PFX_LEN + tn, h, UINT64_MAX, 0, 0);
    return ret;
}

int ps_ltimes_note(ps_txn_t *txn, const ps_labels_t *ls, int64_t ts, ps_buf_t *key, ps_lt_memo_t *memo, ps_err_t *err)
{
    return note_in(txn, DB_LTIMES, NULL, 0, ls, ts, key, memo, err);
}

int ps_ptimes_note(ps_txn_t *txn, const ps_labels_t *ls, int64_t ts, ps_buf_t *key, ps_lt_memo_t *memo, ps_err_t *err)
{
    int ret = note_in(txn, DB_PTIMES, NULL, 0, ls, ts, key, memo, err);
    const ps_label_pair_t *t = ps_labels_get(ls, "__name__");
    if (ret || t == NULL)
        return ret;
    uint8_t p[PT_PFX_LEN];
    type_prefix(t->value, t->vlen, p);
    if ((ret = note_type(txn, p, t->value, t->vlen, memo, err)) == 0)
        ret = note_in(txn, DB_PTIMES, p, PT_PFX_LEN, ls, ts, key, memo, err);
    return ret;
}

/* The record of pfx then key (a postings key, its name nlen bytes) goes when no series has that
 * pair any more, pfx then its name's with its last value's. */
static int forget_in(ps_txn_t *txn, int db, const uint8_t *pfx, size_t plen, const void *key, size_t n, size_t nlen,
                     uint64_t sid, ps_err_t *err)
{
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_POSTINGS, "deleting label times"))
        return ps_txn_error(txn, err);
    bool left = ps_cur_find(&cur, key, n);
    ps_cur_close(&cur);
    if (left || txn->ret)
        return ps_txn_error(txn, err);
    /* or a series past W (its postings not written yet) other than sid (the one deleted) */
    const ps_pend_posts_t *pp;
    size_t lo, hi;
    int ret = ps_pend_posts(txn, &pp, err);
    if (ret)
        return ret;
    ps_pend_range(pp, key, n, &lo, &hi);
    if (ps_pend_any(pp, lo, hi, sid))
        return 0;
    ps_buf_t k = PS_BUF_INIT;
    ps_buf_append(&k, pfx, plen);
    ps_buf_append(&k, key, n);
    ps_txn_del(txn, db, k.data, k.len, NULL, 0, "deleting label times"); /* (none: it never had data) */
    /* the name's record goes with its last value's */
    size_t m = plen + nlen;
    bool more = false;
    if (ps_cur_open(&cur, txn, db, "deleting label times")) {
        more = ps_cur_seek(&cur, k.data, m + 1) && cur.k.mv_size > m && memcmp(cur.k.mv_data, k.data, m + 1) == 0;
        ps_cur_close(&cur);
        if (!more && txn->ret == 0)
            ps_txn_del(txn, db, k.data, m, NULL, 0, "deleting label times");
    }
    ps_buf_dispose(&k);
    return ps_txn_error(txn, err);
}

int ps_ltimes_forget(ps_txn_t *txn, const void *key, size_t n, size_t nlen, uint64_t sid, ps_err_t *err)
{
    return forget_in(txn, DB_LTIMES, NULL, 0, key, n, nlen, sid, err);
}

int ps_ptimes_forget(ps_txn_t *txn, const ps_label_pair_t *type, const void *key, size_t n, size_t nlen, uint64_t sid,
                     ps_err_t *err)
{
    int ret = forget_in(txn, DB_PTIMES, NULL, 0, key, n, nlen, sid, err);
    if (ret || type == NULL)
        return ret;
    uint8_t p[PT_PFX_LEN];
    type_prefix(type->value, type->vlen, p);
    return forget_in(txn, DB_PTIMES, p, PT_PFX_LEN, key, n, nlen, sid, err);
}

int ps_ltimes_cut(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    MDB_val v;
    if (ps_txn_get(txn, DB_INFO, "ltcut", 5, &v, "reading the retention cutoff")) {
        if (v.mv_size != 8)
            return ps_err_set(err, PS_ECORRUPT, "retention cutoff record has %zu bytes", v.mv_size);
        if ((int64_t)ps_get_be64(v.mv_data) >= cutoff)
            return 0;
    } else if (txn->ret) {
        return ps_txn_error(txn, err);
    }
    uint8_t b[8];
    ps_enc_be64(b, (uint64_t)cutoff);
    return ps_txn_put(txn, DB_INFO, "ltcut", 5, b, 8, 0, "writing the retention cutoff") ? 0 : ps_txn_error(txn, err);
}

/* ---- the upgrade: the times of every series' data ---- */

/* the first and last time of sid's data (ns); false when it has none */
static int series_span(ps_store_t *s, ps_txn_t *txn, uint64_t sid, bool is_float, int64_t *first, int64_t *last,
                       bool *any, ps_err_t *err)
{
    *any = false;
    uint8_t kb[16];
    ps_cur_t cur;
    int ret = 0;
    static const int pdbs[] = {DB_CHUNKS, DB_HEAD};
    for (int i = 0; i < 2 && ret == 0; i++) {
        int db = is_float ? DB_FCHUNKS : pdbs[i];
        if (is_float && i == 1)
            break;
        if (!ps_cur_open(&cur, txn, db, "reading series data"))
            return ps_txn_error(txn, err);
        ps_key_sid_ts(kb, sid, INT64_MIN);
        if (ps_cur_seek(&cur, kb, 16) && ps_cur_in_series(&cur, sid)) {
            int64_t lo = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8));
            if (db == DB_CHUNKS) {
                ps_chunk_header_t h;
                if (ps_chunk_header(cur.v.mv_data, cur.v.mv_size, &h) != 0)
                    ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged chunk header", (unsigned long long)sid);
                lo = h.min_ts;
            } else if (db == DB_FCHUNKS) {
                int64_t cmin, cmax;
                ps_float_sample_t l;
                ps_err_t why;
                ps_err_clear(&why);
                if (ps_float_chunk_bounds(cur.v.mv_data, cur.v.mv_size, &cmin, &cmax, &l, &why) != 0)
                    ret = ps_float_damaged(err, sid, "chunk", &why);
                lo = cmin * 1000000;
            }
            ps_key_sid_ts(kb, sid + 1, INT64_MIN);
            int64_t hi = lo;
            if (ps_cur_seek_before(&cur, kb, 16) && ps_cur_in_series(&cur, sid))
                hi = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8)); /* max_ts; fchunks: max_t * 10^6 */
            if (!*any || lo < *first)
                *first = lo;
            if (!*any || hi > *last)
                *last = hi;
            *any = true;
        }
        ps_cur_close(&cur);
        if (ret == 0)
            ret = ps_txn_error(txn, err);
    }
    if (ret == 0 && is_float) {
        ps_buf_t head = PS_BUF_INIT;
        size_t plen;
        uint64_t ptxn;
        int64_t min_t, max_t;
        int rc = ps_float_head_read(s, txn, sid, &head, &plen, &ptxn, &min_t, &max_t, err);
        ps_buf_dispose(&head);
        if (rc == 0) {
            if (!*any || min_t * 1000000 < *first)
                *first = min_t * 1000000;
            if (!*any || max_t * 1000000 > *last)
                *last = max_t * 1000000;
            *any = true;
        } else if (rc != PS_ENOTFOUND) {
            ret = rc;
        }
    }
    return ret;
}

/* the times of every series (DB_LTIMES) or of every profile series (DB_PTIMES, and by type) into db */
static int build_in(ps_store_t *s, ps_txn_t *txn, int db, ps_err_t *err)
{
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_SERIES, "building the label times"))
        return ps_txn_error(txn, err);
    ps_arena_t a = PS_ARENA_INIT;
    ps_buf_t key = PS_BUF_INIT, labels = PS_BUF_INIT;
    for (bool on = ps_cur_first(&cur); on && ret == 0; on = ps_cur_next(&cur)) {
        ps_series_rec_t rec;
        ps_labels_t ls;
        uint64_t sid = cur.k.mv_size == 8 ? ps_get_be64(cur.k.mv_data) : 0;
        ps_arena_reset(&a);
        ps_buf_reset(&labels);
        if (cur.k.mv_size != 8 || ps_series_rec_decode(cur.v.mv_data, cur.v.mv_size, &rec) != 0) {
            ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
            break;
        }
        if (db == DB_PTIMES && rec.kind != PS_SERIES_PROFILE)
            continue;
        ps_buf_append(&labels, rec.labels, rec.labels_len); /* (the puts below may move the map's pages) */
        if (ps_labels_decode(labels.data, labels.len, &a, &ls) != 0) {
            ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
            break;
        }
        int64_t first = 0, last = 0;
        bool any;
        if ((ret = series_span(s, txn, sid, rec.kind == PS_SERIES_FLOAT, &first, &last, &any, err)) != 0 || !any)
            continue;
        int (*note)(ps_txn_t *, const ps_labels_t *, int64_t, ps_buf_t *, ps_lt_memo_t *, ps_err_t *) =
            db == DB_PTIMES ? ps_ptimes_note : ps_ltimes_note;
        if ((ret = note(txn, &ls, first, &key, NULL, err)) == 0)
            ret = note(txn, &ls, last, &key, NULL, err);
    }
    ps_cur_close(&cur);
    ps_arena_dispose(&a);
    ps_buf_dispose(&key);
    ps_buf_dispose(&labels);
    if (ret == 0)
        ret = ps_txn_error(txn, err);
    if (ret)
        ps_err_prefix(err, db == DB_PTIMES ? "building the profile series' label times" : "building the label times");
    return ret;
}

int ps_ltimes_build(ps_store_t *s, ps_txn_t *txn, ps_err_t *err)
{
    return build_in(s, txn, DB_LTIMES, err);
}

int ps_ptimes_build(ps_store_t *s, ps_txn_t *txn, ps_err_t *err)
{
    return build_in(s, txn, DB_PTIMES, err);
}

/* ---- reading ---- */

enum { LT_NO = 0, LT_YES = 1, LT_LOOK = 2 };

typedef struct lt_range {
    int64_t start, end; /* clamped to the reader's retention */
    int64_t cut;        /* data before it may be gone (retention); INT64_MIN: none */
} lt_range_t;

static int range_init(ps_reader_t *r, int64_t start, int64_t end, lt_range_t *q, ps_err_t *err)
{
    /* (everything, start and end at the ends of int64: not clamped; the profile series' label APIs
     * list a value of any profile series then, as their look does) */
    q->start = start < r->min_ts && !(start == INT64_MIN && end == INT64_MAX) ? r->min_ts : start;
    q->end = end;
    q->cut = INT64_MIN;
    MDB_val v;
    if (ps_txn_get(&r->txn, DB_INFO, "ltcut", 5, &v, "reading the retention cutoff")) {
        if (v.mv_size != 8)
            return ps_err_set(err, PS_ECORRUPT, "retention cutoff record has %zu bytes", v.mv_size);
        q->cut = (int64_t)ps_get_be64(v.mv_data);
    }
    return ps_txn_error(&r->txn, err);
}

/* What a record says of [q->start, q->end]: no data there, data there (first or last, still stored,
 * inside it), or a look at the series needed. */
static int decide(const lt_range_t *q, int64_t first, int64_t last)
{
    if (q->start > q->end || q->end < first || q->start > granule_end(last))
        return LT_NO;
    if ((first >= q->cut && first >= q->start && first <= q->end) || (last >= q->cut && last >= q->start && last <= q->end))
        return LT_YES;
    return LT_LOOK;
}

typedef struct lt_walk {
    ps_reader_t *r;
    int db; /* DB_LTIMES or DB_PTIMES */
    const uint8_t *pfx; /* the keys' prefix (a profile type's in DB_PTIMES), plen bytes */
    size_t plen;
    lt_range_t q;
    int (*pred)(void *ctx, uint64_t sid);
    void *ctx;
    ps_cur_t post; /* on DB_POSTINGS, opened at the first look */
    bool post_open;
    ps_err_t *err;
} lt_walk_t;

/* the value at key (a postings key): pred on its series in turn up to the first it takes; 1, 0 or < 0 */
static int look(lt_walk_t *w, const MDB_val *key, size_t nlen)
{
    if (!w->post_open) {
        if (!ps_cur_open(&w->post, &w->r->txn, DB_POSTINGS, "reading postings"))
            return ps_txn_error(&w->r->txn, w->err);
        w->post_open = true;
    }
    int yes = 0;
    for (bool on = ps_cur_find(&w->post, key->mv_data, key->mv_size); on && yes == 0; on = ps_cur_next_dup(&w->post)) {
        if (w->post.v.mv_size != 8)
            return ps_err_set(w->err, PS_ECORRUPT, "postings of %.*s: entry of %zu bytes", (int)nlen,
                              (const char *)key->mv_data, w->post.v.mv_size);
        yes = w->pred(w->ctx, ps_get_be64(w->post.v.mv_data));
    }
    if (yes == 0 && w->r->txn.ret)
        return ps_txn_error(&w->r->txn, w->err);
    /* then the series past W (postings not written yet) */
    const ps_pend_posts_t *pp;
    size_t lo, hi;
    if (yes == 0 && (yes = ps_pend_posts(&w->r->txn, &pp, w->err)) == 0) {
        ps_pend_range(pp, key->mv_data, key->mv_size, &lo, &hi);
        for (size_t i = lo; i < hi && yes == 0; i++)
            if (!ps_pend_dead(pp, i))
                yes = w->pred(w->ctx, pp->e[i].sid);
    }
    return yes;
}

/* The values of name (cur on the ltimes database) with data in the range, to cb (NULL: the first
 * ends the walk with 1). */
static int walk_values(lt_walk_t *w, ps_cur_t *cur, const char *name, size_t nlen,
                       int (*cb)(void *ctx, const char *v, size_t vlen))
{
    ps_buf_t key = PS_BUF_INIT;
    ps_buf_append(&key, w->pfx, w->plen);
    ps_buf_append(&key, name, nlen);
    ps_buf_putc(&key, 0);
    int ret = 0;
    for (bool on = ps_cur_seek(cur, key.data, key.len);
         on && ps_cur_key_starts(cur, key.data, key.len); on = ps_cur_next(cur)) {
        MDB_val k = ps_mval((const char *)cur->k.mv_data + w->plen, cur->k.mv_size - w->plen); /* the postings key */
        int64_t first, last;
        if (!ps_ltimes_rec_decode(&cur->v, &first, &last)) {
            ret = damaged(w->err, &k);
            break;
        }
        int d = decide(&w->q, first, last);
        if (d == LT_LOOK && (d = look(w, &k, nlen)) < 0) {
            ret = d;
            break;
        }
        if (d == LT_NO)
            continue;
        if (cb == NULL) {
            ret = 1;
            break;
        }
        if ((ret = cb(w->ctx, (const char *)k.mv_data + nlen + 1, k.mv_size - nlen - 1)) != 0)
            break;
    }
    ps_buf_dispose(&key);
    if (ret == 0)
        ret = ps_txn_error(&w->r->txn, w->err);
    return ret;
}

/* w over [start, end] and cur on the ltimes database */
static int walk_open(lt_walk_t *w, ps_cur_t *cur, int64_t start, int64_t end)
{
    int ret = range_init(w->r, start, end, &w->q, w->err);
    if (ret == 0 && !ps_cur_open(cur, &w->r->txn, w->db, "reading label times"))
        ret = ps_txn_error(&w->r->txn, w->err);
    return ret;
}

static void walk_close(lt_walk_t *w, ps_cur_t *cur)
{
    ps_cur_close(cur);
    if (w->post_open)
        ps_cur_close(&w->post);
}

static int values_in(ps_reader_t *r, int db, const uint8_t *pfx, size_t plen, const char *name, size_t nlen,
                     int64_t start, int64_t end, int (*pred)(void *ctx, uint64_t sid),
                     int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err)
{
    lt_walk_t w = {.r = r, .db = db, .pfx = pfx, .plen = plen, .pred = pred, .ctx = ctx, .err = err};
    ps_cur_t cur;
    int ret = walk_open(&w, &cur, start, end);
    if (ret)
        return ret;
    /* the name's record first: no data of any of its values in the range ends it at once */
    MDB_val v;
    int64_t first, last;
    int d = LT_LOOK;
    ps_buf_t nk = PS_BUF_INIT;
    ps_buf_append(&nk, pfx, plen);
    ps_buf_append(&nk, name, nlen);
    bool got = ps_txn_get(&r->txn, db, nk.data, nk.len, &v, "reading label times");
    ps_buf_dispose(&nk);
    if (got) {
        MDB_val k = ps_mval(name, nlen);
        if (!ps_ltimes_rec_decode(&v, &first, &last))
            ret = damaged(err, &k);
        else
            d = decide(&w.q, first, last);
    } else {
        ret = ps_txn_error(&r->txn, err);
    }
    if (ret == 0 && d != LT_NO)
        ret = walk_values(&w, &cur, name, nlen, cb);
    walk_close(&w, &cur);
    return ret;
}

int ps_reader_label_values_in(ps_reader_t *r, const char *name, size_t nlen, int64_t start, int64_t end,
                              int (*pred)(void *ctx, uint64_t sid), int (*cb)(void *ctx, const char *v, size_t vlen),
                              void *ctx, ps_err_t *err)
{
    return values_in(r, DB_LTIMES, NULL, 0, name, nlen, start, end, pred, cb, ctx, err);
}

int ps_reader_profile_label_values_in(ps_reader_t *r, const char *name, size_t nlen, int64_t start, int64_t end,
                                      int (*pred)(void *ctx, uint64_t sid),
                                      int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err)
{
    return values_in(r, DB_PTIMES, NULL, 0, name, nlen, start, end, pred, cb, ctx, err);
}

static int names_in(ps_reader_t *r, int db, const uint8_t *pfx, size_t plen, int64_t start, int64_t end,
                    int (*pred)(void *ctx, uint64_t sid), int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx,
                    ps_err_t *err)
{
    lt_walk_t w = {.r = r, .db = db, .pfx = pfx, .plen = plen, .pred = pred, .ctx = ctx, .err = err};
    ps_cur_t cur;
    int ret = walk_open(&w, &cur, start, end);
    if (ret)
        return ret;
    ps_buf_t name = PS_BUF_INIT;
    /* DB_PTIMES: the types' keys (0x00 first) before the names */
    bool on = plen ? ps_cur_seek(&cur, pfx, plen) : db == DB_PTIMES ? ps_cur_seek(&cur, "\x01", 1) : ps_cur_first(&cur);
    if (on && plen && cur.k.mv_size == plen && memcmp(cur.k.mv_data, pfx, plen) == 0)
        on = ps_cur_next(&cur); /* the type's record */
    while (on && ret == 0 && (plen == 0 || ps_cur_key_starts(&cur, pfx, plen))) {
        /* a name's record (its key holds no 0x00) comes before its values' */
        MDB_val k = ps_mval((const char *)cur.k.mv_data + plen, cur.k.mv_size - plen);
        int64_t first, last;
        if (k.mv_size == 0 || memchr(k.mv_data, 0, k.mv_size) != NULL || !ps_ltimes_rec_decode(&cur.v, &first, &last)) {
            ret = damaged(err, &k);
            break;
        }
        ps_buf_reset(&name);
        ps_buf_append(&name, pfx, plen);
        ps_buf_append(&name, k.mv_data, k.mv_size);
        int d = decide(&w.q, first, last);
        if (d == LT_LOOK && (d = walk_values(&w, &cur, (const char *)name.data + plen, name.len - plen, NULL)) < 0) {
            ret = d;
            break;
        }
        /* (the key's bytes in the map: valid, as the index's strings are, for the reader's life) */
        if (d != LT_NO && (ret = cb(ctx, (const char *)k.mv_data, k.mv_size)) != 0)
            break;
        /* on past every value of this name: name 0x01 sorts after name 0x00 anything */
        ps_buf_putc(&name, 1);
        on = ps_cur_seek(&cur, name.data, name.len);
    }
    ps_buf_dispose(&name);
    walk_close(&w, &cur);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

int ps_reader_label_names_in(ps_reader_t *r, int64_t start, int64_t end, int (*pred)(void *ctx, uint64_t sid),
                             int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx, ps_err_t *err)
{
    return names_in(r, DB_LTIMES, NULL, 0, start, end, pred, cb, ctx, err);
}

int ps_reader_profile_label_names_in(ps_reader_t *r, int64_t start, int64_t end, int (*pred)(void *ctx, uint64_t sid),
                                     int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx, ps_err_t *err)
{
    return names_in(r, DB_PTIMES, NULL, 0, start, end, pred, cb, ctx, err);
}

/* type's prefix when its times are its own (0), PS_ENOTFOUND when none were noted, PS_EUNSUPPORTED
 * when another type shares its hash */
static int type_times(ps_reader_t *r, const char *type, size_t tn, uint8_t p[PT_PFX_LEN], ps_err_t *err)
{
    type_prefix(type, tn, p);
    MDB_val v;
    if (!ps_txn_get(&r->txn, DB_PTIMES, p, PT_PFX_LEN, &v, "reading label times"))
        return r->txn.ret ? ps_txn_error(&r->txn, err) : PS_ENOTFOUND;
    const uint8_t *b = v.mv_data;
    if (v.mv_size >= 1 && b[0] == PT_TYPE_SHARED)
        return ps_err_set(err, PS_EUNSUPPORTED, "label times of type %.*s: its hash is another type's", (int)tn, type);
    if (v.mv_size < 2 || b[0] != PT_TYPE_ONE)
        return ps_err_set(err, PS_ECORRUPT, "label times of type %.*s: damaged type record", (int)tn, type);
    return v.mv_size == tn + 1 && memcmp(b + 1, type, tn) == 0 ? 0 : PS_ENOTFOUND;
}

int ps_reader_type_label_values_in(ps_reader_t *r, const char *type, const char *name, size_t nlen, int64_t start,
                                   int64_t end, int (*pred)(void *ctx, uint64_t sid),
                                   int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err)
{
    uint8_t p[PT_PFX_LEN];
    int ret = type_times(r, type, strlen(type), p, err);
    if (ret == 0)
        ret = values_in(r, DB_PTIMES, p, PT_PFX_LEN, name, nlen, start, end, pred, cb, ctx, err);
    return ret == PS_ENOTFOUND ? 0 : ret;
}

int ps_reader_type_label_names_in(ps_reader_t *r, const char *type, int64_t start, int64_t end,
                                  int (*pred)(void *ctx, uint64_t sid), int (*cb)(void *ctx, const char *n, size_t nlen),
                                  void *ctx, ps_err_t *err)
{
    uint8_t p[PT_PFX_LEN];
    int ret = type_times(r, type, strlen(type), p, err);
    if (ret == 0)
        ret = names_in(r, DB_PTIMES, p, PT_PFX_LEN, start, end, pred, cb, ctx, err);
    return ret == PS_ENOTFOUND ? 0 : ret;
}
