/*
 * floats_append.c - float series, the append path: the writer's cache of open chunks
 * (ps_float_state_t), appending samples, cutting a full head into fchunks, packing the plain chunks
 * at a series' end before a chunk is closed, writing heads once per transaction (the flush),
 * and metric metadata. The records are described in floats.c and docs/FORMAT.md.
 */
#include <math.h>
#include <stdlib.h>

#include "floats.h"

/* A sample this transaction logs (ps_float_state_t.log_first), the next of its series' (LOG_NONE: none) */
struct ps_flog_pend {
    int64_t t;
    uint64_t v;
    uint32_t next;
};
#define LOG_NONE UINT32_MAX

void ps_float_state_clear(ps_wcache_t *wc)
{
    wc->nflog_pend = 0;
    for (size_t i = 0; i < wc->nfloat_states; i++) {
        ps_buf_dispose(&wc->float_states[i]->chunk);
        free(wc->float_states[i]);
    }
    wc->nfloat_states = 0;
    wc->nfloat_dirty = 0;
    wc->float_state_bytes = 0;
    ps_hmap_clear(&wc->float_state_index);
    ps_hmap_clear(&wc->float_label_index);
}

static ps_float_state_t *float_state_find(ps_store_writer_t *w, uint64_t sid)
{
    uint8_t kb[8];
    uint64_t i;
    ps_enc_be64(kb, sid);
    return ps_hmap_get(&w->wc->float_state_index, kb, 8, &i) ? w->wc->float_states[i] : NULL;
}

static ps_float_state_t *float_state_add(ps_store_writer_t *w, uint64_t sid)
{
    if (w->wc->nfloat_states == w->wc->capfloat_states) {
        w->wc->capfloat_states = w->wc->capfloat_states ? w->wc->capfloat_states * 2 : 1024;
        w->wc->float_states = ps_xrealloc(w->wc->float_states, w->wc->capfloat_states * sizeof(*w->wc->float_states));
    }
    ps_float_state_t *f = ps_xcalloc(1, sizeof(*f));
    f->sid = sid;
    f->log_first = f->log_last = LOG_NONE;
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    ps_hmap_put(&w->wc->float_state_index, kb, 8, w->wc->nfloat_states);
    w->wc->float_states[w->wc->nfloat_states++] = f;
    w->wc->float_state_bytes += sizeof(*f) + 64 + 8 * 3;
    return f;
}

static void float_state_empty_head(ps_float_state_t *f)
{
    ps_buf_reset(&f->chunk);
    ps_buf_putc(&f->chunk, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_init(&f->app, &f->chunk);
}


/* Before the closed chunk [min_t, max_t] of len bytes (its encoding byte not counted) goes into
 * fchunks: packs the plain chunks of series sid at the end of fchunks (those after its newest
 * packed record) into one packed record when the new chunk would not fit beside them in
 * PS_FLOAT_PACK_MAX_BYTES, or would make them span PS_FLOAT_PACK_MAX_SPAN_MS (or a tenth of the retention)
 * or more. Damaged chunks are left as they are (reads report them). */
static bool pack_due(size_t n, size_t bytes, size_t eb, int64_t oldest, int64_t max_t, int64_t max_span)
{
    return n >= 2 && (bytes + eb > PS_FLOAT_PACK_MAX_BYTES || max_t - oldest >= max_span);
}

/* f (may be NULL): the writer's state of the series, whose run counts spare the walk over the
 * series' chunks until they are due to be packed. */
int ps_float_pack_before(ps_store_writer_t *w, ps_txn_t *txn, ps_float_state_t *f, uint64_t sid, int64_t min_t, int64_t max_t,
                         size_t len, ps_err_t *err)
{
    int64_t max_span = PS_FLOAT_PACK_MAX_SPAN_MS;
    if (w->s->opts.retention_ns > 0 && w->s->opts.retention_ns / 10000000 < max_span)
        max_span = w->s->opts.retention_ns / 10000000;
    if (f != NULL && f->run_known) {
        size_t eb = ps_float_pack_entry_bytes(f->run_n > 0 ? (uint64_t)(min_t - f->run_max_t) : 0, min_t, max_t, len);
        if (!pack_due(f->run_n, f->run_bytes, eb, f->run_oldest, max_t, max_span)) {
            if (f->run_n++ == 0)
                f->run_oldest = min_t;
            f->run_bytes += eb;
            f->run_max_t = max_t;
            return 0;
        }
    }
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_FCHUNKS, "reading float chunks"))
        return ps_txn_error(txn, err);
    uint8_t kb[16];
    ps_key_sid_ts(kb, sid + 1, INT64_MIN);
    bool on = ps_cur_seek_before(&cur, kb, 16);
    /* the run, newest first: bytes bounds the packed value (t0 as 10 bytes, the oldest entry's
     * dmin as 1: it is 0 if no older one joins) */
    static const size_t cap = PS_FLOAT_PACK_MAX_BYTES / 16; /* an entry takes more */
    uint8_t (*keys)[16] = NULL;
    ps_float_pack_entry_t *run = NULL;
    size_t n = 0, bytes = 1 + 10;
    int64_t oldest = 0;
    while (on && ps_cur_in_series(&cur, sid) && n < cap) {
        MDB_val k = cur.k, v = cur.v;
        /* bounds without decoding: t0 after the sample count, max_t from the key (checked below) */
        const uint8_t *b = v.mv_data;
        if (v.mv_size < 4 || (b[0] != PS_FLOAT_CHUNK_ENC_XOR && b[0] != PS_FLOAT_CHUNK_ENC_DENSE))
            break;
        ps_dec_t d; /* a dense chunk: t0 after its uvarint count */
        ps_dec_init(&d, b + 1, v.mv_size - 1);
        if (b[0] == PS_FLOAT_CHUNK_ENC_XOR)
            d.p += 2;
        else
            (void)ps_dec_uvarint(&d);
        int64_t cmin = ps_dec_varint(&d), cmax = floor_div(ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8)), 1000000);
        if (d.err || cmin < -T_MS_MAX || cmin > cmax || (n > 0 && cmax >= run[n - 1].min_t))
            break;
        size_t eb = ps_float_pack_entry_bytes(0, cmin, cmax, v.mv_size - 1);
        if (n > 0) /* the next newer entry's dmin, now known */
            eb += ps_uvarint_len((uint64_t)(run[n - 1].min_t - cmax)) - 1;
        if (bytes + eb > PS_FLOAT_PACK_MAX_BYTES)
            break;
        if (n == 0) {
            keys = ps_xmalloc(cap * sizeof(*keys));
            run = ps_xmalloc(cap * sizeof(*run));
        }
        memcpy(keys[n], k.mv_data, 16);
        run[n] = (ps_float_pack_entry_t){cmin, cmax, b, v.mv_size}; /* with the encoding byte, until packed */
        n++;
        bytes += eb;
        oldest = cmin;
        on = ps_cur_prev(&cur);
    }
    ps_cur_close(&cur);
    ret = ps_txn_error(txn, err);
    size_t eb = ps_float_pack_entry_bytes(n > 0 ? (uint64_t)(min_t - run[0].max_t) : 0, min_t, max_t, len);
    bool pack = ret == 0 && pack_due(n, bytes, eb, oldest, max_t, max_span);
    /* the value is built before any write moves what run[] points at: dense chunks of each
     * chunk's samples (whole chunks whose bounds are right only), oldest first */
    ps_buf_t dense = PS_BUF_INIT, pv = PS_BUF_INIT;
    size_t *off = pack ? ps_xmalloc((n + 1) * sizeof(*off)) : NULL;
    for (size_t i = 0; i < n / 2 && pack; i++) {
        ps_float_pack_entry_t t = run[i];
        run[i] = run[n - 1 - i];
        run[n - 1 - i] = t;
        uint8_t kt[16];
        memcpy(kt, keys[i], 16);
        memcpy(keys[i], keys[n - 1 - i], 16);
        memcpy(keys[n - 1 - i], kt, 16);
    }
    for (size_t i = 0; i < n && pack; i++) {
        off[i] = dense.len;
        pack = ps_float_closed_dense(run[i].chunk, run[i].len, run[i].min_t, run[i].max_t, &dense);
    }
    if (pack) {
        off[n] = dense.len;
        for (size_t i = 0; i < n; i++) {
            run[i].chunk = dense.data + off[i];
            run[i].len = off[i + 1] - off[i];
        }
        ps_float_pack_encode(PS_FLOAT_CHUNK_ENC_DPACKED, run, n, &pv);
        /* keys[n - 1]: the newest chunk's, which the packed value takes */
        for (size_t i = 0; i + 1 < n && ret == 0; i++)
            if (!ps_txn_del(txn, DB_FCHUNKS, keys[i], 16, NULL, 0, "packing float chunks"))
                ret = ps_txn_missing(txn, err, "packing float chunks");
        if (ret == 0 && !ps_txn_put(txn, DB_FCHUNKS, keys[n - 1], 16, pv.data, pv.len, 0, "packing float chunks"))
            ret = ps_txn_error(txn, err);
    }
    ps_buf_dispose(&pv);
    ps_buf_dispose(&dense);
    free(off);
    if (f != NULL && ret == 0) { /* the new chunk starts the run, or joins it */
        f->run_known = true;
        if (pack || n == 0) {
            f->run_n = 1;
            f->run_bytes = 1 + 10 + ps_float_pack_entry_bytes(0, min_t, max_t, len);
            f->run_oldest = min_t;
        } else {
            f->run_n = (uint32_t)n + 1;
            f->run_bytes = bytes + eb;
            f->run_oldest = oldest;
        }
        f->run_max_t = max_t;
    }
    free(keys);
    free(run);
    return ret;
}


static int float_state_load(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, ps_float_state_t **out, ps_err_t *err)
{
    uint8_t kb[16];
    ps_err_t why;
    ps_err_clear(&why);
    ps_buf_t head = PS_BUF_INIT;
    size_t plen = 0;
    uint64_t ptxn = 0;
    int64_t min_t = 0, max_t = 0;
    int rc = ps_float_head_read(w->s, txn, sid, &head, &plen, &ptxn, &min_t, &max_t, err);
    if (rc != 0 && rc != PS_ENOTFOUND) {
        ps_buf_dispose(&head);
        return rc;
    }
    if (rc == 0) {
        ps_float_state_t *f = float_state_add(w, sid);
        ps_buf_dispose(&f->chunk);
        f->chunk = head;
        f->prefix_len = plen;
        f->prefix_txn = ptxn;
        if (ps_xor_app_resume(&f->app, &f->chunk, 1, &why) != 0) {
            f->broken = true; /* (validated above: not expected) appends to it fail from now on */
            return ps_float_damaged(err, sid, "head", &why);
        }
        f->head_min_t = min_t;
        f->stored = true;
        f->last_t = f->app.t;
        f->last_v = f->app.v;
        f->has_last = true;
        w->wc->float_state_bytes += f->chunk.cap;
        *out = f;
        return 0;
    }
    /* no head: the newest closed chunk, the last key of this series in fchunks */
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_FCHUNKS, "reading float chunks"))
        return ps_txn_error(txn, err);
    ps_key_sid_ts(kb, sid + 1, INT64_MIN);
    int ret = 0;
    ps_float_sample_t last = {0, 0};
    bool has = false;
    if (ps_cur_seek_before(&cur, kb, 16) && ps_cur_in_series(&cur, sid)) {
        int64_t cmin, cmax;
        if (ps_float_chunk_bounds(cur.v.mv_data, cur.v.mv_size, &cmin, &cmax, &last, &why) != 0)
            ret = ps_float_damaged(err, sid, "chunk", &why);
        has = true;
    } else {
        ret = ps_txn_error(txn, err);
    }
    ps_cur_close(&cur);
    if (ret)
        return ret;
    ps_float_state_t *f = float_state_add(w, sid);
    float_state_empty_head(f);
    f->has_last = has;
    f->last_t = last.t;
    f->last_v = float_bits(last.v);
    *out = f;
    return 0;
}

static void mark_dirty(ps_store_writer_t *w, ps_float_state_t *f)
{
    if (f->dirty)
        return;
    if (w->wc->nfloat_dirty == w->wc->capfloat_dirty) {
        w->wc->capfloat_dirty = w->wc->capfloat_dirty ? w->wc->capfloat_dirty * 2 : 1024;
        w->wc->float_dirty = ps_xrealloc(w->wc->float_dirty, w->wc->capfloat_dirty * sizeof(*w->wc->float_dirty));
    }
    w->wc->float_dirty[w->wc->nfloat_dirty++] = f;
    f->dirty = true;
}

/* Moves the head of f (nonempty) into fchunks; f's head is empty afterwards. */
static int cut_head(ps_store_writer_t *w, ps_txn_t *txn, ps_float_state_t *f, ps_err_t *err)
{
    ps_buf_t cv = PS_BUF_INIT;
    ps_float_closed_value(f->chunk.data, f->chunk.len, &cv);
    int ret = ps_float_pack_before(w, txn, f, f->sid, f->head_min_t, f->app.t, cv.len - 1, err);
    if (ret) {
        ps_buf_dispose(&cv);
        return ret;
    }
    uint8_t kb[16];
    ps_key_sid_ts(kb, f->sid, t_key(f->app.t));
    /* chunks closed of the newest series come in key order: appended, they fill their pages */
    bool ok = ps_txn_put_append(txn, DB_FCHUNKS, kb, 16, cv.data, cv.len, "writing float chunk");
    ps_buf_dispose(&cv);
    if (!ok)
        return ps_txn_error(txn, err);
    if (f->prefix_len > 0) { /* the flush rewrites the head record (f is dirty) */
        if ((ret = ps_float_prefix_del(w->s, txn, f->prefix_txn, f->sid, err)) != 0)
            return ret;
        f->prefix_len = 0;
    }
    size_t before = f->chunk.cap;
    float_state_empty_head(f);
    w->wc->float_state_bytes += f->chunk.cap - before;
    f->rewrite = true; /* its samples of this transaction are in the head the flush writes */
    mark_dirty(w, f); /* the flush deletes the head record if nothing follows */
    return 0;
}

/* Notes sample (t, v) of f for the flush to log. */
static void log_note(ps_wcache_t *wc, ps_float_state_t *f, int64_t t, uint64_t v)
{
    if (wc->nflog_pend == wc->capflog_pend) {
        wc->capflog_pend = wc->capflog_pend ? wc->capflog_pend * 2 : 1024;
        wc->flog_pend = ps_xrealloc(wc->flog_pend, wc->capflog_pend * sizeof(*wc->flog_pend));
    }
    uint32_t i = (uint32_t)wc->nflog_pend++;
    wc->flog_pend[i] = (struct ps_flog_pend){t, v, LOG_NONE};
    if (f->log_first == LOG_NONE)
        f->log_first = i;
    else
        wc->flog_pend[f->log_last].next = i;
    f->log_last = i;
}

static void count_reject(uint32_t *n, int64_t *first, int64_t t)
{
    if ((*n)++ == 0)
        *first = t;
}

/* The state of fa's series, found the long way (its sid by its labels, then the cached state or
 * the stored head), created if create and it does not exist; entered in float_label_index. *out
 * NULL when fa alone fails (fa->status, or its samples counted as rejected). newest: ms. */
static int series_state(ps_store_writer_t *w, ps_txn_t *txn, ps_float_append_t *fa, bool create, int64_t newest,
                        ps_float_state_t **out, ps_err_t *err)
{
    *out = NULL;
    uint64_t sid;
    ps_series_state_t *st;
    int ret = ps_series_get_or_create(w, txn, fa->labels, create, PS_SERIES_FLOAT, &sid, &st, err);
    if (ret == PS_ENOTFOUND) {
        for (uint32_t i = 0; i < fa->nsamples; i++)
            if (fa->samples[i].t > newest && fa->samples[i].t <= T_MS_MAX)
                count_reject(&fa->too_new, &fa->first_too_new, fa->samples[i].t);
            else
                count_reject(&fa->out_of_bounds, &fa->first_out_of_bounds, fa->samples[i].t);
        return 0;
    }
    if (ret)
        return ret;
    if (st->kind != PS_SERIES_FLOAT) {
        ps_buf_t b = PS_BUF_INIT;
        ps_labels_format(fa->labels, &b);
        ps_buf_putc(&b, 0);
        fa->status = ps_err_set(&fa->err, PS_ECONFLICT, "series %s holds profiles, not float samples",
                                (char *)b.data);
        ps_buf_dispose(&b);
        return 0;
    }
    fa->sid = sid;
    ps_float_state_t *f = float_state_find(w, sid);
    if (f != NULL && f->broken) {
        fa->status = ps_err_set(&fa->err, PS_ECORRUPT, "series %llu: damaged float head", (unsigned long long)sid);
        return 0;
    }
    if (f == NULL && (ret = float_state_load(w, txn, sid, &f, &fa->err)) != 0) {
        if (ret != PS_ECORRUPT)
            return ps_err_set(err, ret, "%s", fa->err.msg);
        fa->status = ret; /* this series alone */
        return 0;
    }
    uint64_t fi;
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    if (ps_hmap_get(&w->wc->float_state_index, kb, 8, &fi)) {
        ps_hmap_put_h(&w->wc->float_label_index, w->wc->float_key_hash, w->wc->float_key.data, w->wc->float_key.len, fi);
        w->wc->float_state_bytes += w->wc->float_key.len + 32;
    }
    *out = f;
    return 0;
}

static int append_series(ps_store_writer_t *w, ps_txn_t *txn, ps_float_append_t *fa, int64_t now, ps_err_t *err)
{
    int64_t oldest = INT64_MIN; /* ms: samples before it are out of bounds (retention) */
    if (w->s->opts.retention_ns > 0)
        oldest = -floor_div(-(now - w->s->opts.retention_ns), 1000000);
    int64_t newest = w->s->opts.future_grace_ns > 0 ? (now + w->s->opts.future_grace_ns) / 1000000 : INT64_MAX; /* ms */
    int64_t window_ms = w->s->opts.compact_window_ns > 0 ? w->s->opts.compact_window_ns / 1000000 : 0;
    uint32_t per_chunk = w->s->opts.compact_max_profiles; /* the same count rule as profile heads */
    if (per_chunk == 0 || per_chunk > PS_XOR_SAMPLES_PER_CHUNK)
        per_chunk = PS_XOR_SAMPLES_PER_CHUNK;

    /* a series nothing can be stored in is not created */
    bool any = false;
    for (uint32_t i = 0; i < fa->nsamples && !any; i++)
        any = fa->samples[i].t >= oldest && fa->samples[i].t <= T_MS_MAX && fa->samples[i].t >= -T_MS_MAX &&
              fa->samples[i].t <= newest;
    /* a series whose state is cached: found by its labels alone (a series is deleted only with
     * every cache dropped, so the state is that of these labels) */
    ps_buf_t *key = &w->wc->float_key;
    ps_buf_reset(key);
    uint64_t fi, h;
    if (fa->key != NULL) {
        ps_buf_append(key, fa->key, fa->klen);
        h = fa->key_hash;
    } else {
        ps_labels_encode(fa->labels, key);
        h = ps_hash64(key->data, key->len, 0);
    }
    w->wc->float_key_hash = h;
    ps_float_state_t *f = NULL;
    if (ps_hmap_get_h(&w->wc->float_label_index, h, key->data, key->len, &fi))
        f = w->wc->float_states[fi];
    int ret;
    if (f == NULL && (ret = series_state(w, txn, fa, any, newest, &f, err)) != 0)
        return ret;
    if (f == NULL)
        return 0; /* fa says why */
    fa->sid = f->sid;
    if (f->broken) {
        fa->status = ps_err_set(&fa->err, PS_ECORRUPT, "series %llu: damaged float head", (unsigned long long)f->sid);
        return 0;
    }
    for (uint32_t i = 0; i < fa->nsamples; i++) {
        int64_t t = fa->samples[i].t;
        uint64_t bits = float_bits(fa->samples[i].v);
        if (t < oldest || t > T_MS_MAX || t < -T_MS_MAX) {
            count_reject(&fa->out_of_bounds, &fa->first_out_of_bounds, t);
            continue;
        }
        if (t > newest) {
            count_reject(&fa->too_new, &fa->first_too_new, t);
            continue;
        }
        if (fa->counter) { /* an increment: onto the newest value, never before the newest sample */
            double base = f->has_last ? bits_float(f->last_v) : 0;
            if (base != base)
                base = 0;
            if (f->has_last && t <= f->last_t)
                t = f->last_t + 1;
            ps_float_sample_t *out = (ps_float_sample_t *)&fa->samples[i];
            out->t = t;
            out->v = base + fa->samples[i].v;
            bits = float_bits(out->v);
        }
        if (f->has_last && t < f->last_t) {
            count_reject(&fa->out_of_order, &fa->first_out_of_order, t);
            continue;
        }
        if (f->has_last && t == f->last_t) {
            if (bits == f->last_v)
                fa->duplicates++;
            else
                count_reject(&fa->dup_conflicts, &fa->first_dup_conflict, t);
            continue;
        }
        if (f->app.n > 0 && (f->app.n >= per_chunk || (window_ms > 0 && t - f->head_min_t >= window_ms)))
            if ((ret = cut_head(w, txn, f, err)) != 0)
                return ret;
        size_t before = f->chunk.cap;
        ps_err_t aerr;
        if ((ret = ps_xor_app_append(&f->app, t, bits_float(bits), &aerr)) != 0)
            return ps_err_set(err, PS_EINTERNAL, "series %llu: %s", (unsigned long long)f->sid, aerr.msg);
        w->wc->float_state_bytes += f->chunk.cap - before;
        /* the label times: at the series' first sample and its first of each granule */
        if ((!f->has_last || !ps_ltimes_same_granule(f->last_t * 1000000, t * 1000000)) &&
            (ret = ps_ltimes_note(txn, fa->labels, t * 1000000, &w->ltimes_key, &w->lt_memo, err)) != 0)
            return ret;
        if (f->app.n == 1)
            f->head_min_t = t;
        f->last_t = t;
        f->last_v = bits;
        f->has_last = true;
        fa->accepted++;
        if (fa->stored != NULL)
            ((uint8_t *)fa->stored)[i] = 1;
        if (f->stored && !f->rewrite && w->s->opts.float_log_pages >= 0)
            log_note(w->wc, f, t, bits);
        mark_dirty(w, f);
    }
    return 0;
}

/* Prefetch distances (items ahead) of the look-ups by a caller's key: the slot, then its key and state */
#define AHEAD_SLOT 6
#define AHEAD_KEY 3

int ps_float_write(ps_store_writer_t *w, ps_txn_t *txn, ps_float_append_t **items, size_t n, int64_t now, ps_err_t *err)
{
    ps_wcache_t *wc = w->wc;
    for (size_t i = 0; i < n; i++) {
        /* the series cache's misses overlap: a request's series are looked up one after another */
        if (i + AHEAD_SLOT < n && items[i + AHEAD_SLOT]->key != NULL)
            ps_hmap_prefetch(&wc->float_label_index, items[i + AHEAD_SLOT]->key_hash);
        if (i + AHEAD_KEY < n && items[i + AHEAD_KEY]->key != NULL) {
            uint64_t fi = ps_hmap_prefetch_key(&wc->float_label_index, items[i + AHEAD_KEY]->key_hash);
            if (fi < wc->nfloat_states)
                __builtin_prefetch(wc->float_states[fi]);
        }
        ps_float_append_t *fa = items[i];
        fa->status = 0;
        ps_err_clear(&fa->err);
        fa->sid = 0;
        fa->accepted = fa->duplicates = fa->out_of_order = fa->dup_conflicts = fa->out_of_bounds = fa->too_new = 0;
        fa->first_out_of_order = fa->first_dup_conflict = fa->first_out_of_bounds = fa->first_too_new = 0;
        int ret = append_series(w, txn, fa, now, err);
        if (ret)
            return ret;
    }
    return 0;
}

/* The flush's fhead cursor steps forward to the next dirty head, instead of a put that searches,
 * when its sid is at most this many past the last one's (the records between are at most as many:
 * a key is a sid). A request's series are often neighbours (created together); a step costs a
 * sixth of a search. */
#define HEAD_STEPS 8

/* Writes head value v of series key kb through cur: on the record with key kb already (*on: a move
 * found it), in place without a search; else by a put that searches, which leaves cur on it. */
static void head_write(ps_cur_t *cur, bool *on, const uint8_t kb[8], const ps_buf_t *v)
{
    if (*on)
        ps_cur_put_current(cur, kb, 8, v->data, v->len);
    else
        ps_cur_put(cur, kb, 8, v->data, v->len);
    *on = true;
}

/* Writes the open chunk of f (nonempty): whole while it has fewer than PS_FLOAT_HEAD_SPLIT_MIN bytes,
 * else as a tail, after rewriting fprefix when there is none yet, when the tail would outgrow
 * PS_FLOAT_HEAD_TAIL_MAX, or in the series' turn. tmp: scratch. */
static int head_put(ps_store_writer_t *w, ps_txn_t *txn, ps_cur_t *cur, bool *on, ps_float_state_t *f, ps_buf_t *tmp,
                    ps_err_t *err)
{
    const uint8_t *c = f->chunk.data + 1;
    size_t n = f->chunk.len - 1;
    uint8_t kb[8];
    ps_enc_be64(kb, f->sid);
    if (f->prefix_len == 0 && n < PS_FLOAT_HEAD_SPLIT_MIN) {
        ps_buf_reset(tmp);
        ps_float_head_encode_padded(c, n, 0, 0, &f->head_size, tmp);
        head_write(cur, on, kb, tmp);
        return ps_txn_error(txn, err);
    }
    bool turn = ((f->sid >> 6) + w->float_flushes) % PS_FLOAT_HEAD_TURNS == 0;
    if (f->prefix_len == 0 || n - f->prefix_len > PS_FLOAT_HEAD_TAIL_MAX || (turn && n - 1 > f->prefix_len)) {
        int ret;
        if (f->prefix_len > 0 && (ret = ps_float_prefix_del(w->s, txn, f->prefix_txn, f->sid, err)) != 0)
            return ret;
        uint64_t id = ps_txn_id(txn);
        uint8_t pk[16];
        ps_float_prefix_key(pk, id, f->sid);
        ps_buf_reset(tmp);
        ps_float_prefix_encode(c, n - 1, tmp);
        /* a flush's new prefixes come in key order: appended, they fill their pages */
        if (!ps_txn_put_append(txn, DB_FPREFIX, pk, 16, tmp->data, tmp->len, "writing float head prefix"))
            return ps_txn_error(txn, err);
        f->prefix_len = n - 1;
        f->prefix_txn = id;
    }
    ps_buf_reset(tmp);
    ps_float_head_encode_padded(c, n, f->prefix_len, f->prefix_txn, &f->head_size, tmp);
    head_write(cur, on, kb, tmp);
    return ps_txn_error(txn, err);
}

static int by_sid(const void *a, const void *b)
{
    uint64_t x = (*(ps_float_state_t *const *)a)->sid, y = (*(ps_float_state_t *const *)b)->sid;
    return x < y ? -1 : x > y;
}

/* The checkpoint's first half: every series with samples in the float log joins the dirty
 * heads (its state loaded if not cached), so that the flush writes all their heads. Series whose
 * head record is gone (closed, deleted: their samples are in fchunks) or damaged are left out. */
static int checkpoint_mark(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    ps_flog_index_t *x;
    int ret = ps_flog_index(txn, &x, err);
    size_t n = ret == 0 ? ps_flog_index_count(x) : 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        uint64_t sid = ps_flog_index_at(x, i)->sid;
        if (i > 0 && ps_flog_index_at(x, i - 1)->sid == sid)
            continue;
        ps_float_state_t *f = float_state_find(w, sid);
        if (f == NULL) {
            uint8_t kb[8];
            MDB_val v;
            ps_enc_be64(kb, sid);
            if (!ps_txn_get(txn, DB_FHEAD, kb, 8, &v, "reading float head")) {
                ret = ps_txn_error(txn, err);
                continue;
            }
            ps_err_t why;
            if ((ret = float_state_load(w, txn, sid, &f, &why)) == PS_ECORRUPT) {
                ret = 0; /* reads report it */
                continue;
            }
            if (ret != 0) {
                *err = why;
                break;
            }
        }
        if (!f->broken)
            mark_dirty(w, f);
    }
    return ret;
}

/* The checkpoint's second half, after the flush wrote every head: the log emptied (but for its
 * damaged records, which reads go on reporting). */
static int checkpoint_empty(ps_txn_t *txn, ps_err_t *err)
{
    ps_flog_index_t *x;
    int ret = ps_flog_index(txn, &x, err);
    if (ret != 0)
        return ret;
    if (ps_flog_index_ndamaged(x) == 0) {
        ps_txn_empty(txn, DB_FLOG, "emptying the float log");
    } else {
        ps_cur_t cur;
        if (ps_cur_open(&cur, txn, DB_FLOG, "emptying the float log")) {
            for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur))
                if (cur.k.mv_size != 8 || !ps_flog_index_damaged(x, ps_get_be64(cur.k.mv_data)))
                    ps_cur_del(&cur); /* (the next move goes to the record after it) */
            ps_cur_close(&cur);
        }
    }
    ps_txn_aux_drop(txn);
    return ps_txn_error(txn, err);
}

/* Whether this flush is a checkpoint: the log with what it would add holds PS_FLOG_MAX_PAGES. */
static int checkpoint_due(ps_store_writer_t *w, ps_txn_t *txn, bool *due, ps_err_t *err)
{
    *due = false;
    if (w->wc->nflog_pend == 0)
        return 0;
    MDB_stat st;
    if (!ps_txn_stat(txn, DB_FLOG, &st))
        return ps_txn_error(txn, err);
    uint64_t pages = st.ms_branch_pages + st.ms_leaf_pages + st.ms_overflow_pages;
    uint64_t max = w->s->opts.float_log_pages > 0 ? (uint64_t)w->s->opts.float_log_pages : PS_FLOG_MAX_PAGES;
    *due = pages + (w->wc->nflog_pend * 12 + 4095) / 4096 > max;
    return 0;
}

/* The flush: force, a checkpoint whatever the log holds */
static int float_flush(ps_store_writer_t *w, ps_txn_t *txn, bool force, ps_err_t *err)
{
    bool all = force;
    int ret = force ? 0 : checkpoint_due(w, txn, &all, err);
    if (ret == 0 && all)
        ret = checkpoint_mark(w, txn, err);
    ps_buf_t tmp = PS_BUF_INIT, ents = PS_BUF_INIT;
    /* in sid order: the new prefixes of this transaction are appends, (txn id, sid) increasing */
    for (size_t i = 1; i < w->wc->nfloat_dirty; i++) {
        if (w->wc->float_dirty[i - 1]->sid > w->wc->float_dirty[i]->sid) {
            qsort(w->wc->float_dirty, w->wc->nfloat_dirty, sizeof(*w->wc->float_dirty), by_sid);
            break;
        }
    }
    /* one cursor for all: the heads are written in key order. on: cur is on the record of the
     * head it wrote last, whose key is below the next head's */
    ps_cur_t cur;
    bool on = false;
    uint64_t last = 0; /* the sid of the head cur wrote last (when on) */
    if (ret == 0 && w->wc->nfloat_dirty > 0 && !ps_cur_open(&cur, txn, DB_FHEAD, "writing float head"))
        ret = ps_txn_error(txn, err);
    bool opened = ret == 0 && w->wc->nfloat_dirty > 0;
    for (size_t i = 0; i < w->wc->nfloat_dirty && ret == 0; i++) {
        ps_float_state_t *f = w->wc->float_dirty[i];
        f->dirty = false;
        uint8_t kb[8];
        ps_enc_be64(kb, f->sid);
        bool logged = !all && f->stored && !f->rewrite && f->app.n > 0 && w->s->opts.float_log_pages >= 0;
        for (uint32_t j = f->log_first; logged && j != LOG_NONE; j = w->wc->flog_pend[j].next) {
            ps_flog_ent_t *e = (ps_flog_ent_t *)ps_buf_reserve(&ents, sizeof(*e));
            *e = (ps_flog_ent_t){f->sid, w->wc->flog_pend[j].t, w->wc->flog_pend[j].v};
            ents.len += sizeof(*e);
        }
        f->rewrite = false;
        f->log_first = f->log_last = LOG_NONE;
        if (logged)
            continue; /* its head record is behind: reads add the logged samples */
        if (f->app.n > 0) {
            /* the next records first: a few steps cost less than the put's search */
            bool at = false;
            uint64_t steps = on && f->sid - last <= HEAD_STEPS ? f->sid - last : 0;
            for (uint64_t s = 0; s < steps && on && !at; s++) {
                int c = (on = ps_cur_next(&cur)) && cur.k.mv_size == 8 ? memcmp(cur.k.mv_data, kb, 8) : 1;
                at = c == 0;
                if (c > 0)
                    break; /* past it (a new head) or at the end: the put searches */
            }
            on = at;
            ret = head_put(w, txn, &cur, &on, f, &tmp, err);
            f->stored = true;
            last = f->sid;
            continue;
        }
        on = false;
        if (ps_cur_find(&cur, kb, 8)) /* (the cut deleted its prefix) */
            ps_cur_del(&cur);
        f->head_size = 0;
        f->stored = false;
        ret = ps_txn_error(txn, err);
    }
    if (opened)
        ps_cur_close(&cur);
    if (ret == 0 && all)
        ret = checkpoint_empty(txn, err);
    if (ret == 0 && ents.len > 0) {
        /* the samples of the series whose heads stay behind, in one record keyed by this
         * transaction: appended (the ids increase), in the transaction that acknowledges them */
        ps_buf_reset(&tmp);
        ps_flog_encode((const ps_flog_ent_t *)ents.data, ents.len / sizeof(ps_flog_ent_t), &tmp);
        uint8_t kb[8];
        ps_enc_be64(kb, ps_txn_id(txn));
        ps_txn_aux_drop(txn);
        if (!ps_txn_put_append(txn, DB_FLOG, kb, 8, tmp.data, tmp.len, "writing the float log"))
            ret = ps_txn_error(txn, err);
        w->flog_pending = true;
    }
    if (ret == 0 && all)
        w->flog_pending = false;
    ps_buf_dispose(&tmp);
    ps_buf_dispose(&ents);
    w->wc->nfloat_dirty = 0;
    w->wc->nflog_pend = 0;
    w->float_flushes++;
    return ret;
}

int ps_float_write_flush(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    return float_flush(w, txn, false, err);
}

int ps_store_float_checkpoint(ps_store_writer_t *w, ps_err_t *err)
{
    ps_txn_t t;
    int ret = ps_txn_begin(&t, w->s, PS_TXN_WRITE, err, "starting a float log checkpoint");
    if (ret)
        return ret;
    MDB_stat st;
    if (!ps_txn_stat(&t, DB_FLOG, &st)) {
        ret = ps_txn_error(&t, err);
    } else if (st.ms_entries == 0) {
        ps_txn_abort(&t);
        w->flog_pending = false;
        return 0;
    }
    if (ret == 0 && (ret = float_flush(w, &t, true, err)) == 0) /* (it marks the logged series' heads) */
        ret = ps_txn_commit(&t, err, "committing a float log checkpoint");
    else
        ps_txn_abort(&t);
    if (ret)
        ps_sym_caches_clear(w); /* the states mirrored the transaction */
    return ret;
}

bool ps_store_float_log_pending(const ps_store_writer_t *w)
{
    return w->flog_pending;
}

/* ---- metadata ---- */

/* value: enc u8 (=1) | type u8 | help_len uvarint | help | unit (to the end) */
void ps_meta_rec_encode(const ps_metric_meta_t *m, ps_buf_t *out)
{
    ps_buf_putc(out, PS_META_REC_V1);
    ps_buf_putc(out, (uint8_t)m->type);
    ps_put_uvarint(out, m->help_len);
    ps_buf_append(out, m->help, m->help_len);
    ps_buf_append(out, m->unit, m->unit_len);
}

int ps_meta_write(ps_store_writer_t *w, ps_txn_t *txn, const ps_metric_meta_t *m, size_t n, ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        if (m[i].family_len == 0 || m[i].family_len > PS_META_FAMILY_MAX || m[i].type < 0 || m[i].type > 255)
            continue;
        ps_buf_reset(&b);
        ps_meta_rec_encode(&m[i], &b);
        MDB_val v;
        if (ps_txn_get(txn, DB_META, m[i].family, m[i].family_len, &v, "reading metadata") && v.mv_size == b.len &&
            memcmp(v.mv_data, b.data, b.len) == 0)
            continue; /* Prometheus resends all metadata every minute: no page written for it */
        ps_txn_put(txn, DB_META, m[i].family, m[i].family_len, b.data, b.len, 0, "writing metadata");
        ret = ps_txn_error(txn, err);
    }
    ps_buf_dispose(&b);
    return ret;
}

