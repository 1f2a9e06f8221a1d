/*
 * floats_read.c - float series, the read path: metric metadata, samples and chunks of a range
 * (closed chunks, packed and dense ones, then the head), the newest sample.
 */
#include <math.h>
#include <stdlib.h>

#include "floats.h"

static int meta_decode(const MDB_val *k, const MDB_val *v, ps_metric_meta_t *m)
{
    ps_dec_t d;
    ps_dec_init(&d, v->mv_data, v->mv_size);
    if (ps_dec_u8(&d) != PS_META_REC_V1)
        return PS_ECORRUPT;
    m->type = ps_dec_u8(&d);
    uint64_t hl = ps_dec_uvarint(&d);
    if (d.err || hl > ps_dec_left(&d))
        return PS_ECORRUPT;
    m->family = k->mv_data;
    m->family_len = k->mv_size;
    m->help = (const char *)ps_dec_bytes(&d, hl);
    m->help_len = hl;
    m->unit = (const char *)d.p;
    m->unit_len = ps_dec_left(&d);
    return 0;
}

int ps_reader_metadata(ps_reader_t *r, const char *metric, size_t mlen,
                       int (*cb)(void *ctx, const ps_metric_meta_t *m), void *ctx, ps_err_t *err)
{
    ps_metric_meta_t m;
    if (metric != NULL) {
        if (mlen == 0 || mlen > PS_META_FAMILY_MAX)
            return 0;
        MDB_val k = ps_mval(metric, mlen), v;
        if (!ps_txn_get(&r->txn, DB_META, metric, mlen, &v, "reading metadata"))
            return ps_txn_error(&r->txn, err);
        if (meta_decode(&k, &v, &m) != 0)
            return ps_err_set(err, PS_ECORRUPT, "metadata of %.*s: damaged record", (int)mlen, metric);
        return cb(ctx, &m);
    }
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, &r->txn, DB_META, "reading metadata"))
        return ps_txn_error(&r->txn, err);
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        MDB_val k = cur.k, v = cur.v;
        if (meta_decode(&k, &v, &m) != 0) {
            ret = ps_err_set(err, PS_ECORRUPT, "metadata of %.*s: damaged record", (int)k.mv_size,
                             (const char *)k.mv_data);
            break;
        }
        if ((ret = cb(ctx, &m)) != 0)
            break;
    }
    ps_cur_close(&cur);
    if (ret == 0)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}


/* ---- reading ---- */

typedef struct float_walk {
    ps_reader_t *r;
    uint64_t sid;
    int64_t mint, maxt;
    ps_err_t *err;
    /* one of: */
    int (*on_samples)(void *ctx, const ps_float_sample_t *s, size_t n);
    int (*on_chunk)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n);
    void *ctx;
    bool past;              /* a chunk starting after maxt was met: the walk is over */
    ps_buf_t xor;           /* on_chunk: a dense chunk transcoded (float_walk_run disposes of it) */
    ps_float_sample_t buf[128];
} float_walk_t;

/* ps_float_damaged() "packed chunks: a chunk holds first..last, not min_t..max_t" when a packed entry's
 * chunk is not within the bounds the entry gives (check), else 0 */
static int float_walk_bounds(float_walk_t *w, bool check, int64_t first, int64_t last, int64_t min_t, int64_t max_t,
                             const char *what)
{
    if (!check || (first == min_t && last == max_t))
        return 0;
    ps_err_t why;
    ps_err_set(&why, PS_ECORRUPT, "packed chunks: a chunk holds %lld..%lld, not %lld..%lld", (long long)first,
               (long long)last, (long long)min_t, (long long)max_t);
    return ps_float_damaged(w->err, w->sid, what, &why);
}

/* Visits one XOR chunk; check: its first and last sample must be [min_t, max_t]. 0 to go on (or
 * w->past set: stop), else what a callback returned or an error. */
static int float_walk_chunk(float_walk_t *w, const uint8_t *b, size_t len, bool check, int64_t min_t, int64_t max_t,
                            const char *what)
{
    ps_err_t why;
    if (w->on_chunk) {
        int64_t cmin = 0, cmax = 0;
        if (ps_float_xor_bounds(b, len, &cmin, &cmax, NULL, &why) != 0)
            return ps_float_damaged(w->err, w->sid, what, &why);
        if (float_walk_bounds(w, check, cmin, cmax, min_t, max_t, what) != 0)
            return PS_ECORRUPT;
        if (cmin > w->maxt) {
            w->past = true;
            return 0;
        }
        if (cmax < w->mint)
            return 0;
        return w->on_chunk(w->ctx, cmin, cmax, b, len);
    }
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, b, len);
    size_t n = 0, k = 0;
    int64_t first = 0, last = 0;
    int ret = 0;
    while (ps_xor_iter_next(&it)) {
        if (k++ == 0) {
            first = it.t;
            if (it.t > w->maxt)
                w->past = true; /* the rest is still validated */
        }
        last = it.t;
        if (w->past || it.t < w->mint || it.t > w->maxt)
            continue;
        w->buf[n].t = it.t;
        w->buf[n].v = it.v;
        if (++n == sizeof(w->buf) / sizeof(w->buf[0])) {
            if ((ret = w->on_samples(w->ctx, w->buf, n)) != 0)
                return ret;
            n = 0;
        }
    }
    if (ps_xor_iter_err(&it, &why) != 0)
        return ps_float_damaged(w->err, w->sid, what, &why);
    if (k == 0) {
        ps_err_set(&why, PS_ECORRUPT, "xorchunk: no samples");
        return ps_float_damaged(w->err, w->sid, what, &why);
    }
    if (float_walk_bounds(w, check, first, last, min_t, max_t, what) != 0)
        return PS_ECORRUPT;
    return n > 0 ? w->on_samples(w->ctx, w->buf, n) : 0;
}

/* Visits one dense chunk written with tbase, as float_walk_chunk: its samples, or for on_chunk the XOR
 * chunk it transcodes to (the bytes of the XOR chunk it was made from). */
static int float_walk_dense(float_walk_t *w, const uint8_t *b, size_t len, int64_t tbase, bool check, int64_t min_t,
                            int64_t max_t, const char *what)
{
    ps_err_t why;
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    if (ps_float_dense_decode(b, len, tbase, &t, &v, &k, &why) != 0)
        return ps_float_damaged(w->err, w->sid, what, &why);
    int ret = float_walk_bounds(w, check, t[0], t[k - 1], min_t, max_t, what);
    if (ret == 0 && t[0] > w->maxt) {
        w->past = true;
    } else if (ret == 0 && t[k - 1] >= w->mint && w->on_chunk) {
        ps_buf_reset(&w->xor);
        ps_xor_app_t a;
        ps_xor_app_init(&a, &w->xor);
        for (uint32_t i = 0; i < k && ret == 0; i++)
            if (ps_xor_app_append(&a, t[i], bits_float(v[i]), &why) != 0)
                ret = ps_float_damaged(w->err, w->sid, what, &why);
        if (ret == 0)
            ret = w->on_chunk(w->ctx, t[0], t[k - 1], w->xor.data, w->xor.len);
    } else if (ret == 0 && t[k - 1] >= w->mint) {
        size_t n = 0;
        for (uint32_t i = 0; i < k && ret == 0; i++) {
            if (t[i] < w->mint)
                continue;
            if (t[i] > w->maxt) {
                w->past = true;
                break;
            }
            w->buf[n].t = t[i];
            w->buf[n].v = bits_float(v[i]);
            if (++n == sizeof(w->buf) / sizeof(w->buf[0])) {
                ret = w->on_samples(w->ctx, w->buf, n);
                n = 0;
            }
        }
        if (ret == 0 && n > 0)
            ret = w->on_samples(w->ctx, w->buf, n);
    }
    free(t);
    free(v);
    return ret;
}

/* Visits one stored value (a closed chunk, packed chunks, or the head), validating what it
 * reads: of packed chunks, the bounds of all and the chunks of the range. 0 to go on (or w->past
 * set: stop), else what a callback returned or an error. */
static int float_walk_one(float_walk_t *w, const MDB_val *v, const char *what)
{
    const uint8_t *b = v->mv_data;
    if (v->mv_size >= 1 && b[0] == PS_FLOAT_CHUNK_ENC_XOR)
        return float_walk_chunk(w, b + 1, v->mv_size - 1, false, 0, 0, what);
    bool head = strcmp(what, "head") == 0;
    if (v->mv_size >= 1 && b[0] == PS_FLOAT_CHUNK_ENC_DENSE && !head)
        return float_walk_dense(w, b + 1, v->mv_size - 1, 0, false, 0, 0, what);
    if (v->mv_size < 1 || (b[0] != PS_FLOAT_CHUNK_ENC_PACKED && b[0] != PS_FLOAT_CHUNK_ENC_DPACKED) || head)
        return ps_float_damaged(w->err, w->sid, what, NULL);
    bool dense = b[0] == PS_FLOAT_CHUNK_ENC_DPACKED;
    ps_float_unpack_t u;
    ps_float_pack_entry_t e;
    ps_err_t why;
    int r, ret = 0;
    ps_float_unpack_init(&u, b + 1, v->mv_size - 1);
    while ((r = ps_float_unpack_next(&u, &e, &why)) == 1) {
        if (w->past || e.max_t < w->mint)
            continue; /* the bounds of the rest are still validated */
        if (e.min_t > w->maxt) {
            w->past = true;
            continue;
        }
        if ((ret = dense ? float_walk_dense(w, e.chunk, e.len, e.min_t, true, e.min_t, e.max_t, what)
                         : float_walk_chunk(w, e.chunk, e.len, true, e.min_t, e.max_t, what)) != 0)
            return ret;
    }
    return r < 0 ? ps_float_damaged(w->err, w->sid, what, &why) : 0;
}

static int float_walk_run_(float_walk_t *w);

/* Closed chunks from the first whose max_t >= mint, then the head (newer than every chunk). */
static int float_walk_run(float_walk_t *w)
{
    int ret = float_walk_run_(w);
    ps_buf_dispose(&w->xor);
    return ret;
}

static int float_walk_run_(float_walk_t *w)
{
    if (w->mint < w->r->min_ms)
        w->mint = w->r->min_ms; /* the retention clamp (internal.h) */
    if (w->mint > w->maxt)
        return 0;
    ps_txn_t *txn = &w->r->txn;
    ps_cur_t cur;
    uint8_t kb[16];
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_FCHUNKS, "reading float chunks"))
        return ps_txn_error(txn, w->err);
    int64_t from = w->mint <= -T_MS_MAX ? INT64_MIN : w->mint > T_MS_MAX ? INT64_MAX : t_key(w->mint);
    ps_key_sid_ts(kb, w->sid, from);
    for (bool on = ps_cur_seek(&cur, kb, 16); on && ps_cur_in_series(&cur, w->sid);
         on = ps_cur_next(&cur))
        if ((ret = float_walk_one(w, &cur.v, "chunk")) != 0 || w->past)
            break;
    ps_cur_close(&cur);
    if (ret != 0 || w->past)
        return ret;
    if ((ret = ps_txn_error(txn, w->err)) != 0)
        return ret;
    ps_buf_t head = PS_BUF_INIT;
    size_t plen;
    uint64_t ptxn;
    ret = ps_float_head_read(w->r->store, txn, w->sid, &head, &plen, &ptxn, NULL, NULL, w->err);
    if (ret == PS_ENOTFOUND) {
        ret = 0; /* no head */
    } else if (ret == 0) {
        MDB_val v = ps_mval(head.data, head.len);
        ret = float_walk_one(w, &v, "head");
    }
    ps_buf_dispose(&head);
    return ret;
}

int ps_float_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                            int (*cb)(void *ctx, const ps_float_sample_t *s, size_t n), void *ctx, ps_err_t *err)
{
    float_walk_t *w = ps_xcalloc(1, sizeof(*w));
    w->r = r, w->sid = sid, w->mint = mint, w->maxt = maxt, w->err = err, w->on_samples = cb, w->ctx = ctx;
    int ret = float_walk_run(w);
    free(w);
    return ret;
}

int ps_reader_xor_chunks(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                         int (*cb)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n),
                         void *ctx, ps_err_t *err)
{
    float_walk_t w = {.r = r, .sid = sid, .mint = mint, .maxt = maxt, .err = err, .on_chunk = cb, .ctx = ctx};
    return float_walk_run(&w); /* a profile series has neither fchunks nor an fhead */
}

typedef struct last_ctx {
    int64_t t;
    bool found;
} last_ctx_t;

static int on_last(void *ctx, const ps_float_sample_t *s, size_t n)
{
    last_ctx_t *c = ctx;
    c->t = s[n - 1].t;
    c->found = true;
    return 0;
}

#define STOP_FOUND 1

static int on_any(void *ctx, const ps_float_sample_t *s, size_t n)
{
    (void)s, (void)n;
    *(bool *)ctx = true;
    return STOP_FOUND;
}

/* The newest sample in [start, end] (ns): the head if it has one there, else the newest chunk
 * that does (the chunks after the first one with max_t >= maxt all start past maxt). */
int ps_float_reader_latest(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, int64_t *ts, ps_err_t *err)
{
    int64_t mint, maxt;
    ns_to_ms(start, end, &mint, &maxt);
    if (mint > maxt)
        return PS_ENOTFOUND;
    float_walk_t *w = ps_xcalloc(1, sizeof(*w));
    last_ctx_t c = {0, false};
    w->r = r, w->sid = sid, w->err = err, w->on_samples = on_last, w->ctx = &c;
    /* narrow the walk to the chunk holding maxt's neighbourhood: from the newest chunk whose
     * max_t < maxt (its max_t is a sample <= maxt) onwards */
    ps_cur_t cur;
    uint8_t kb[16];
    int ret = 0;
    if (!ps_cur_open(&cur, &r->txn, DB_FCHUNKS, "reading float chunks")) {
        free(w);
        return ps_txn_error(&r->txn, err);
    }
    int64_t at = maxt > T_MS_MAX ? INT64_MAX : maxt < -T_MS_MAX ? INT64_MIN : t_key(maxt);
    ps_key_sid_ts(kb, sid, at);
    int64_t from = mint;
    if (ps_cur_seek_before(&cur, kb, 16) && ps_cur_in_series(&cur, sid)) {
        int64_t prev_max = floor_div(ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8)), 1000000);
        if (prev_max > from)
            from = prev_max;
    } else {
        ret = ps_txn_error(&r->txn, err);
    }
    ps_cur_close(&cur);
    if (ret == 0) {
        w->mint = from;
        w->maxt = maxt;
        ret = float_walk_run(w);
    }
    free(w);
    if (ret)
        return ret;
    if (!c.found)
        return PS_ENOTFOUND;
    *ts = c.t * 1000000;
    return 0;
}

int ps_float_reader_has_data(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err)
{
    int64_t mint, maxt;
    ns_to_ms(start, end, &mint, &maxt);
    if (mint > maxt)
        return 0;
    bool any = false;
    float_walk_t *w = ps_xcalloc(1, sizeof(*w));
    w->r = r, w->sid = sid, w->mint = mint, w->maxt = maxt, w->err = err, w->on_samples = on_any, w->ctx = &any;
    int ret = float_walk_run(w);
    free(w);
    if (ret != 0 && !(ret == STOP_FOUND && any))
        return ret;
    return any ? 1 : 0;
}
