/*
 * compact.c - the compactor (head records -> chunks) and retention.
 *
 * A series' head is due once it holds compact_max_profiles profiles (ps_store_compact_due right
 * after the write that got it there; ps_store_compact also checks), or, with compact_window_ns
 * > 0, once it spans the window in data time (newest minus oldest head profile, see window_due)
 * or the series got no profile for a window of wall time (the idle rule: measured from its last
 * append in this process, else from when the store was opened), or always, when forced. A due
 * head is folded whole, into chunks of up to compact_max_profiles profiles. The chunk is written
 * and the head records deleted in one transaction, so a crash leaves either the head records or
 * the chunk, never both or neither. A chunk's key is (sid, max_ts): a range query seeks to the
 * first chunk whose max_ts >= start.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "chunk.h"
#include "internal.h"

#define COMPACT_SERIES_PER_TXN 256
#define COMPACT_TWIN_SLACK 7 /* consecutive series ids taken past the 256 (see twins below) */

typedef struct triple {
    uint64_t node;
    uint32_t idx;
    int64_t val;
} triple_t;

#define RADIX_BITS 11

/* t[0..m) in (node, idx) order into t or tmp (returned): a stable LSD
 * radix sort on node, RADIX_BITS a pass, as many passes as the largest node needs (two up to 4M
 * nodes). t comes in idx order (the profiles one after another), so stable by node is by
 * (node, idx). qsort was a fifth of the writer's time under a push load (bench/forward.py). */
static triple_t *sort_triples(triple_t *t, triple_t *tmp, size_t m)
{
    uint64_t bits = 0;
    for (size_t i = 0; i < m; i++)
        bits |= t[i].node;
    triple_t *src = t, *dst = tmp;
    for (unsigned shift = 0; shift < 64 && (bits >> shift) != 0; shift += RADIX_BITS) {
        size_t pos[1u << RADIX_BITS];
        memset(pos, 0, sizeof(pos));
        for (size_t i = 0; i < m; i++)
            pos[(src[i].node >> shift) & ((1u << RADIX_BITS) - 1)]++;
        size_t sum = 0;
        for (size_t d = 0; d < (1u << RADIX_BITS); d++) {
            size_t c = pos[d];
            pos[d] = sum;
            sum += c;
        }
        for (size_t i = 0; i < m; i++)
            dst[pos[(src[i].node >> shift) & ((1u << RADIX_BITS) - 1)]++] = src[i];
        triple_t *x = src;
        src = dst;
        dst = x;
    }
    return src;
}

/*
 * Twins: a chunk whose node section is, but for the value scale, that of a chunk written before in
 * the same compaction transaction (the cpu nanoseconds of a profile are its sample counts times the
 * period: both series get the same scaled values, and come due in the same write; the 256 series
 * a background transaction takes are followed by the next consecutive ids, so a cut does not fall
 * between the types of one profile) is stored once:
 * one of the two becomes a reference to the other (PS_CHUNK_ENC_REF, chunk.h), after
 * ps_chunk_refer compared them byte for byte. The one of the larger value scale stays whole (a CPU
 * profile's nanoseconds, the type Grafana and Pyroscope query: its reads need no second lookup),
 * unless a reference already points at the one stored before. twins maps ps_chunk_twin_key of
 * each chunk stored whole -> its series, TWIN_REFERRED set once a reference points at it. Both
 * chunks have the same key time, so retention drops them in the same pass.
 */
#define TWIN_REFERRED (1ull << 63)

/* 0: no twin; 1: out holds this chunk (v1) as a reference to its twin (*osid); 2: other holds the
 * twin's new value, a reference to this chunk, which is stored whole. */
static int find_twin(ps_txn_t *txn, ps_hmap_t *twins, uint64_t key, uint64_t sid, int64_t max_ts, const ps_buf_t *v1,
                     ps_buf_t *out, ps_buf_t *other, uint64_t *osid, ps_err_t *err)
{
    uint64_t val, mine, theirs;
    uint8_t hk[8], kb[16];
    MDB_val v;
    ps_enc_be64(hk, key);
    if (key == 0 || !ps_hmap_get(twins, hk, 8, &val) || (val & ~TWIN_REFERRED) == sid)
        return 0;
    *osid = val & ~TWIN_REFERRED;
    ps_key_sid_ts(kb, *osid, max_ts);
    if (!ps_txn_get(txn, DB_CHUNKS, kb, 16, &v, "reading a twin chunk"))
        return txn->ret ? ps_txn_error(txn, err) : 0;
    if (!(val & TWIN_REFERRED) && ps_chunk_value_scale(v1->data, v1->len, &mine, NULL) == 0 &&
        ps_chunk_value_scale(v.mv_data, v.mv_size, &theirs, NULL) == 0 && mine > theirs) {
        int r = ps_chunk_refer(v.mv_data, v.mv_size, v1->data, v1->len, sid, other, err);
        return r == 1 ? 2 : r;
    }
    int r = ps_chunk_refer(v1->data, v1->len, v.mv_data, v.mv_size, *osid, out, err);
    if (r == 1)
        ps_hmap_put(twins, hk, 8, val | TWIN_REFERRED);
    return r;
}

/* Writes one chunk from n decoded head profiles. */
static int write_chunk(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, ps_stored_profile_t *ps, int64_t *ts, uint32_t n,
                       ps_hmap_t *twins, ps_arena_t *a, ps_err_t *err)
{
    ps_chunk_data_t d = {0};
    d.n = n;
    d.ts = ts;
    d.durations = ps_arena_alloc(a, n * sizeof(int64_t));
    d.periods = ps_arena_alloc(a, n * sizeof(int64_t));
    d.totals = ps_arena_alloc(a, n * sizeof(int64_t));
    size_t total = 0;
    for (uint32_t i = 0; i < n; i++) {
        d.durations[i] = ps[i].duration;
        d.periods[i] = ps[i].period;
        d.totals[i] = ps[i].total;
        total += ps[i].n;
    }
    triple_t *tbuf = ps_xmalloc(2 * (total + 1) * sizeof(triple_t));
    size_t m = 0;
    for (uint32_t i = 0; i < n; i++)
        for (uint32_t j = 0; j < ps[i].n; j++)
            tbuf[m++] = (triple_t){ps[i].nodes[j], i, ps[i].values[j]};
    triple_t *t = sort_triples(tbuf, tbuf + total + 1, m);
    d.node_ids = ps_arena_alloc(a, (m + 1) * sizeof(uint64_t));
    d.off = ps_arena_alloc(a, (m + 2) * sizeof(uint32_t));
    d.idx = ps_arena_alloc(a, (m + 1) * sizeof(uint32_t));
    d.val = ps_arena_alloc(a, (m + 1) * sizeof(int64_t));
    uint32_t nn = 0;
    for (size_t i = 0; i < m; i++) {
        if (i == 0 || t[i].node != t[i - 1].node) {
            d.node_ids[nn] = t[i].node;
            d.off[nn] = (uint32_t)i;
            nn++;
        }
        d.idx[i] = t[i].idx;
        d.val[i] = t[i].val;
    }
    d.off[nn] = (uint32_t)m;
    d.nnodes = nn;
    free(tbuf);
    ps_buf_t v1 = PS_BUF_INIT, out = PS_BUF_INIT, other = PS_BUF_INIT;
    uint64_t key = 0, osid = 0, mark = 0;
    int ret = ps_chunk_encode(&d, &v1, err), found = 0;
    if (ret == 0 && twins != NULL) {
        key = ps_chunk_twin_key(v1.data, v1.len);
        if ((found = find_twin(txn, twins, key, sid, ts[n - 1], &v1, &out, &other, &osid, err)) < 0)
            ret = found;
        if (found == 2)
            mark = TWIN_REFERRED;
    }
    if (ret == 0 && found != 1) /* closed chunks are stored packed: the node section through zstd (chunk.h) */
        ret = ps_chunk_pack(v1.data, v1.len, PS_CHUNK_ZSTD_LEVEL, &out, err);
    uint8_t kb[16];
    ps_key_sid_ts(kb, sid, ts[n - 1]);
    if (ret == 0 && !ps_txn_put(txn, DB_CHUNKS, kb, 16, out.data, out.len, 0, "writing chunk"))
        ret = ps_txn_error(txn, err);
    /* the twin becomes a reference: deleted first, as LMDB would keep a smaller value written over a
     * large one in the large one's overflow pages */
    ps_key_sid_ts(kb, osid, ts[n - 1]);
    if (ret == 0 && found == 2 && !ps_txn_del(txn, DB_CHUNKS, kb, 16, NULL, 0, "replacing a chunk by a reference"))
        ret = ps_txn_missing(txn, err, "replacing a chunk by a reference");
    if (ret == 0 && found == 2 && !ps_txn_put(txn, DB_CHUNKS, kb, 16, other.data, other.len, 0, "writing chunk"))
        ret = ps_txn_error(txn, err);
    if (ret == 0 && key != 0 && found != 1) { /* stored whole: a twin for the chunks after it */
        uint8_t hk[8];
        ps_enc_be64(hk, key);
        ps_hmap_put(twins, hk, 8, sid | mark);
    }
    ps_buf_dispose(&v1);
    ps_buf_dispose(&out);
    ps_buf_dispose(&other);
    return ret;
}

/* Compacts the whole head of one series into chunks of at most compact_max_profiles. */
static int compact_series(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, uint32_t *nchunks, ps_hmap_t *twins,
                          ps_err_t *err)
{
    uint32_t max = w->s->opts.compact_max_profiles;
    if (max == 0 || max > PS_CHUNK_MAX_PROFILES)
        max = PS_CHUNK_MAX_PROFILES;
    ps_arena_t a = PS_ARENA_INIT;
    ps_stored_profile_t *ps = ps_xmalloc(max * sizeof(*ps));
    int64_t *ts = ps_xmalloc(max * sizeof(int64_t));
    int64_t last_max = INT64_MIN, first_ts = INT64_MIN;
    int ret = 0;
    ps_cur_t cur;
    uint8_t kb[16];
    if (!ps_cur_open(&cur, txn, DB_HEAD, "reading head")) {
        ret = ps_txn_error(txn, err);
        goto Exit;
    }
    for (;;) {
        uint32_t n = 0;
        ps_key_sid_ts(kb, sid, INT64_MIN);
        bool on = ps_cur_seek(&cur, kb, 16);
        while (on && n < max && ps_cur_in_series(&cur, sid)) {
            ts[n] = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8));
            if (ps_head_decode(cur.v.mv_data, cur.v.mv_size, &a, &ps[n]) != 0) {
                ret = ps_err_set(err, PS_ECORRUPT, "series %llu: damaged head record at %lld",
                                 (unsigned long long)sid, (long long)ts[n]);
                goto Exit;
            }
            n++;
            on = ps_cur_next(&cur);
        }
        if (txn->ret) {
            ret = ps_txn_error(txn, err);
            goto Exit;
        }
        if (n == 0)
            break;
        if (first_ts == INT64_MIN)
            first_ts = ts[0];
        if ((ret = write_chunk(w, txn, sid, ps, ts, n, twins, &a, err)) != 0)
            goto Exit;
        (*nchunks)++;
        last_max = ts[n - 1];
        /* delete the n head records just folded */
        for (uint32_t i = 0; i < n; i++) {
            uint8_t dk[16];
            ps_key_sid_ts(dk, sid, ts[i]);
            if (!ps_txn_del(txn, DB_HEAD, dk, 16, NULL, 0, "deleting head records")) {
                ret = ps_txn_missing(txn, err, "deleting head records");
                goto Exit;
            }
        }
        ps_arena_reset(&a);
        if (n < max)
            break;
    }
    {
        /* head is empty now (also when retention had removed its records) */
        ps_series_state_t st = {.kind = PS_SERIES_PROFILE};
        uint8_t ib[8];
        ps_enc_be64(ib, sid);
        MDB_val v;
        ps_series_rec_t r;
        if (!ps_txn_get(txn, DB_SERIES, ib, 8, &v, "reading series record") ||
            ps_series_rec_decode(v.mv_data, v.mv_size, &r)) {
            ret = ps_err_set(err, PS_ECORRUPT, "series %llu: record missing or damaged", (unsigned long long)sid);
            goto Exit;
        }
        st.last_ts = r.last_ts;
        st.head_count = 0;
        st.head_min_ts = INT64_MIN;
        st.last_chunk_max = last_max != INT64_MIN ? last_max : r.last_chunk_max;
        if ((ret = ps_series_put_state(w, txn, sid, &st, err)) != 0)
            goto Exit;
        /* the windows this compaction may have closed: from the newest profile compacted before */
        if (last_max != INT64_MIN && !w->s->opts.no_rollups &&
            (ret = ps_rollup_update(txn, sid, r.last_chunk_max != INT64_MIN ? r.last_chunk_max : first_ts, r.last_ts,
                                    err)) != 0)
            goto Exit;
        ps_series_state_t *cached = ps_series_state(w, sid);
        if (cached)
            *cached = st;
    }
Exit:
    ps_cur_close(&cur);
    free(ps);
    free(ts);
    ps_arena_dispose(&a);
    return ret;
}

/*
 * Due by time: the head spans the window in data time (newest - oldest profile), or nothing was
 * appended to the series for a window of wall-clock time (an idle series is flushed). Measuring
 * the oldest record against the wall clock instead would cut backfilled (old) data into tiny
 * chunks at every check.
 */
static bool window_due(ps_store_writer_t *w, uint64_t sid, const ps_series_rec_t *r, int64_t now_ns)
{
    int64_t win = w->s->opts.compact_window_ns;
    if (win <= 0)
        return false;
    if (r->last_ts - r->head_min_ts >= win)
        return true;
    int64_t last;
    if (!ps_walls_get(&w->append_wall, sid, &last))
        last = w->opened_wall;
    return now_ns - last >= win;
}

static int compact_profiles(ps_store_writer_t *w, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err)
{
    for (;;) {
        ps_txn_t t, *txn = &t;
        int ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting compaction transaction");
        if (ret)
            return ret;
        uint64_t due[COMPACT_SERIES_PER_TXN + COMPACT_TWIN_SLACK];
        size_t ndue = 0;
        bool more = false;
        ps_cur_t cur;
        if (!ps_cur_open(&cur, txn, DB_SERIES, "reading series")) {
            ps_txn_abort(txn);
            return ps_txn_error(txn, err);
        }
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
            MDB_val k = cur.k, v = cur.v;
            ps_series_rec_t r;
            if (k.mv_size == 8 && ps_series_rec_decode(v.mv_data, v.mv_size, &r) == 0 && r.head_count > 0 &&
                (force || r.head_count >= w->s->opts.compact_max_profiles || window_due(w, ps_get_be64(k.mv_data), &r, now_ns))) {
                uint64_t sid = ps_get_be64(k.mv_data);
                /* full; but the series right after the last (the types of one profile get
                 * consecutive ids, so this may be its twin) still come along */
                if (ndue >= COMPACT_SERIES_PER_TXN &&
                    (ndue == COMPACT_SERIES_PER_TXN + COMPACT_TWIN_SLACK || sid != due[ndue - 1] + 1)) {
                    more = true;
                    break;
                }
                due[ndue++] = sid;
            }
        }
        ps_cur_close(&cur);
        ps_hmap_t twins;
        ps_hmap_init(&twins);
        for (size_t i = 0; i < ndue && ret == 0; i++)
            ret = compact_series(w, txn, due[i], nchunks, &twins, err);
        ps_hmap_dispose(&twins);
        if (ret) {
            ps_txn_abort(txn);
            ps_sym_caches_clear(w);
            return ret;
        }
        if (ndue == 0) {
            ps_txn_abort(txn);
            return 0;
        }
        if ((ret = ps_txn_commit(txn, err, "committing compaction")) != 0) {
            ps_sym_caches_clear(w);
            return ret;
        }
        if (!more)
            return 0;
    }
}

int ps_store_compact(ps_store_writer_t *w, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err)
{
    uint32_t dummy = 0;
    if (nchunks == NULL)
        nchunks = &dummy;
    *nchunks = 0;
    /* the new series' hash index entries first (series.c): written sorted, a leaf once */
    int ret = ps_series_index_now(w, err);
    if (ret == 0)
        ret = compact_profiles(w, force, now_ns, nchunks, err);
    if (ret == 0)
        ret = ps_float_compact(w, force, now_ns, nchunks, err);
    /* The append times of series idle for the window: the idle rule reads a missing one as
     * opened_wall, no later than theirs, so it answers "due" for them as it does now (without a
     * window nothing reads them). What stays is one entry per series written within the window. */
    int64_t win = w->s->opts.compact_window_ns;
    if (ret == 0 && win <= 0)
        ps_walls_expire(&w->append_wall, INT64_MIN, INT64_MAX);
    else if (ret == 0 && now_ns - win >= w->opened_wall)
        ps_walls_expire(&w->append_wall, w->opened_wall, now_ns - win);
    bool more;
    return ret ? ret : ps_rollup_backfill(w, now_ns, &more, err);
}

int ps_store_compact_due(ps_store_writer_t *w, uint32_t *nchunks, ps_err_t *err)
{
    uint32_t dummy = 0;
    if (nchunks == NULL)
        nchunks = &dummy;
    *nchunks = 0;
    if (w->wc->ndue == 0)
        return 0;
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, w->s, PS_TXN_WRITE, err, "starting compaction transaction");
    if (ret)
        return ret;
    ps_hmap_t twins;
    ps_hmap_init(&twins);
    for (size_t i = 0; i < w->wc->ndue && ret == 0; i++)
        ret = compact_series(w, &txn, w->wc->due[i], nchunks, &twins, err);
    ps_hmap_dispose(&twins);
    w->wc->ndue = 0;
    if (ret) {
        ps_txn_abort(&txn);
        ps_sym_caches_clear(w);
        return ret;
    }
    if ((ret = ps_txn_commit(&txn, err, "committing compaction")) != 0)
        ps_sym_caches_clear(w);
    return ret;
}

/* True if the series still has a chunk or a head record. */
static int series_has_data(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid)
{
    uint8_t hk[8];
    ps_enc_be64(hk, sid);
    MDB_val fv;
    if (ps_txn_get(txn, DB_FHEAD, hk, 8, &fv, "reading float head") || txn->ret)
        return 1; /* (after a failure: kept, and the commit reports it) */
    static const int dbs[] = {DB_HEAD, DB_CHUNKS, DB_FCHUNKS};
    for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
        ps_cur_t cur;
        if (!ps_cur_open(&cur, txn, dbs[i], "reading series data"))
            return 1;
        uint8_t kb[16];
        ps_key_sid_ts(kb, sid, INT64_MIN);
        int has = ps_cur_seek(&cur, kb, 16) && ps_cur_in_series(&cur, sid);
        ps_cur_close(&cur);
        if (has || txn->ret)
            return 1;
    }
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}


int ps_store_retain(ps_store_writer_t *w, int64_t now_ns, uint32_t *ndropped, ps_err_t *err)
{
    uint32_t dummy;
    if (ndropped == NULL)
        ndropped = &dummy;
    *ndropped = 0;
    if (w->s->opts.retention_ns <= 0)
        return 0;
    int64_t cutoff = now_ns - w->s->opts.retention_ns;
    ps_txn_t t = {0}, *txn = &t;
    int ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting retention transaction");
    if (ret)
        return ret;
    uint64_t *touched = NULL;
    size_t ntouched = 0, cap = 0;
    /* keys (sid, ts) in ns: profile heads and chunks by their time, float chunks by max_t * 1e6 */
    static const int dbs[] = {DB_HEAD, DB_CHUNKS, DB_FCHUNKS};
    for (size_t di = 0; di < sizeof(dbs) / sizeof(dbs[0]); di++) {
        int db = dbs[di];
        /* collect the keys first, then delete: no cursor juggling across deletes */
        uint8_t *keys = NULL;
        size_t nkeys = 0, kcap = 0;
        ps_cur_t cur;
        if (!ps_cur_open(&cur, txn, db, "applying retention")) {
            ret = ps_txn_error(txn, err);
            goto Exit;
        }
        bool on = ps_cur_first(&cur);
        while (on) {
            MDB_val k = cur.k;
            if (k.mv_size != 16) {
                on = ps_cur_next(&cur);
                continue;
            }
            uint64_t sid = ps_get_be64(k.mv_data);
            int64_t ts = ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8));
            if (ts < cutoff) {
                if (nkeys == kcap) {
                    kcap = kcap ? kcap * 2 : 256;
                    keys = ps_xrealloc(keys, kcap * 16);
                }
                memcpy(keys + 16 * nkeys++, k.mv_data, 16);
                if (ntouched == 0 || touched[ntouched - 1] != sid) {
                    if (ntouched == cap) {
                        cap = cap ? cap * 2 : 64;
                        touched = ps_xrealloc(touched, cap * sizeof(uint64_t));
                    }
                    touched[ntouched++] = sid;
                }
                on = ps_cur_next(&cur);
                continue;
            }
            /* skip the rest of this series: its later keys are newer */
            uint8_t kb[16];
            ps_key_sid_ts(kb, sid + 1, INT64_MIN);
            on = ps_cur_seek(&cur, kb, 16);
        }
        ps_cur_close(&cur);
        if (txn->ret)
            ret = ps_txn_error(txn, err);
        for (size_t i = 0; i < nkeys && ret == 0; i++)
            if (!ps_txn_del(txn, db, keys + 16 * i, 16, NULL, 0, "applying retention"))
                ret = ps_txn_missing(txn, err, "applying retention");
        free(keys);
        if (ret)
            goto Exit;
    }
    if ((ret = ps_ids_retain(txn, cutoff, err)) != 0)
        goto Exit;
    if ((ret = ps_unsym_retain(txn, cutoff, err)) != 0)
        goto Exit;
    if ((ret = ps_rollup_retain(txn, cutoff, err)) != 0)
        goto Exit;
    if ((ret = ps_float_retain(w, txn, cutoff, &touched, &ntouched, &cap, err)) != 0)
        goto Exit;
    /* data before cutoff is gone: the label times' first or last before it prove nothing now */
    if (ntouched > 0 && (ret = ps_ltimes_cut(txn, cutoff, err)) != 0)
        goto Exit;
    /* a series with both expired head records and chunks was touched in both passes */
    if (ntouched > 1) /* touched is NULL when nothing expired: qsort may not be given NULL */
        qsort(touched, ntouched, sizeof(uint64_t), cmp_u64);
    size_t ndrop = 0; /* the dropped ones are moved to the front of touched */
    for (size_t i = 0; i < ntouched; i++) {
        if (i > 0 && touched[i] == touched[i - 1])
            continue;
        if (!series_has_data(w, txn, touched[i])) {
            if ((ret = ps_series_delete(w, txn, touched[i], err)) != 0)
                goto Exit;
            touched[ndrop++] = touched[i];
        }
    }
    if ((ret = ps_txn_commit(txn, err, "committing retention")) != 0)
        goto Exit;
    *ndropped = (uint32_t)ndrop;
    if (ndrop > 0)
        ps_walls_drop(&w->append_wall, touched, ndrop); /* the deleted series' (ids are never reused) */
Exit:
    ps_txn_abort(txn);
    free(touched);
    if (ntouched > 0 || ret)
        ps_sym_caches_clear(w); /* series states changed under the caches */
    return ret;
}
