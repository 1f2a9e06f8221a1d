/*
 * spans.c - the span index and client profile ids (schema 5; docs/FORMAT.md "Span index" and
 * "Profile ids"):
 *
 *   spans  hour(4 BE) span(8) sid(8 BE) ts(8, sign flipped) -> empty: profile (sid, ts) holds
 *          samples of span, hour = ts_key(ts) / 3600 s (so a range of h hours is h + 1 seeks a span)
 *   uuids  hour(4 BE) uuid(16) sid(8 BE) ts(8, sign flipped) -> empty: the profiles a client id names
 *   spanparts sid(8 BE) ts(8, sign flipped) -> 01, the profile's span parts: per span its trace id
 *          and (node, value) pairs against the profile's own stack nodes
 *
 * Written by the append that stores the profile (write.c), dropped by retention (whole hours of
 * spans and uuids; the span parts of dropped profiles one by one).
 */
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "internal.h"

#define HOUR_NS (3600ll * 1000000000ll)

uint32_t ps_hour_of(int64_t ts)
{
    return (uint32_t)(ps_ts_key(ts) / (uint64_t)HOUR_NS);
}

bool ps_span_parse(const char *s, size_t n, uint64_t *span)
{
    if (n != 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < 16; i++) {
        int h = ps_hex_digit((unsigned char)s[i]);
        if (h < 0)
            return false;
        v = v << 4 | (uint64_t)h;
    }
    *span = v;
    return v != 0;
}

void ps_span_key(uint8_t k[28], uint64_t span, uint64_t sid, int64_t ts)
{
    uint32_t h = ps_hour_of(ts);
    k[0] = (uint8_t)(h >> 24);
    k[1] = (uint8_t)(h >> 16);
    k[2] = (uint8_t)(h >> 8);
    k[3] = (uint8_t)h;
    ps_enc_be64(k + 4, span);
    ps_enc_be64(k + 12, sid);
    ps_enc_be64(k + 20, ps_ts_key(ts));
}

int ps_span_put(ps_txn_t *txn, uint64_t span, uint64_t sid, int64_t ts, ps_err_t *err)
{
    uint8_t k[28];
    ps_span_key(k, span, sid, ts);
    if (!ps_txn_put(txn, DB_SPANS, k, 28, "", 0, 0, "writing the span index"))
        return ps_txn_error(txn, err);
    return 0;
}

int ps_reader_span_parts(ps_reader_t *r, uint64_t sid, int64_t ts, ps_arena_t *arena, ps_span_part_t **parts,
                         size_t *n, ps_err_t *err)
{
    uint8_t k[16];
    MDB_val v;
    *parts = NULL;
    *n = 0;
    ps_key_sid_ts(k, sid, ts);
    if (!ps_txn_get(&r->txn, DB_SPANPARTS, k, 16, &v, "reading span parts"))
        return r->txn.ret ? ps_txn_error(&r->txn, err) : 0;
    int ret = ps_span_parts_decode(v.mv_data, v.mv_size, arena, parts, n, err);
    if (ret)
        ps_err_prefix(err, "series %llu at %lld ns: ", (unsigned long long)sid, (long long)ts);
    return ret;
}

static void put_hour(uint8_t *k, uint32_t h)
{
    k[0] = (uint8_t)(h >> 24);
    k[1] = (uint8_t)(h >> 16);
    k[2] = (uint8_t)(h >> 8);
    k[3] = (uint8_t)h;
}

int ps_uuid_put(ps_txn_t *txn, const uint8_t uuid[16], uint64_t sid, int64_t ts, ps_err_t *err)
{
    uint8_t k[36];
    put_hour(k, ps_hour_of(ts));
    memcpy(k + 4, uuid, 16);
    ps_key_sid_ts(k + 20, sid, ts);
    if (!ps_txn_put(txn, DB_UUIDS, k, 36, "", 0, 0, "writing a profile id"))
        return ps_txn_error(txn, err);
    return 0;
}

int ps_drop_hours(ps_txn_t *txn, int db, uint32_t h, const char *what, ps_err_t *err)
{
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, db, what))
        return ps_txn_error(txn, err);
    bool on = ps_cur_first(&cur);
    while (on && cur.k.mv_size >= 4 && ps_get_be32(cur.k.mv_data) < h) {
        if (!ps_cur_del(&cur))
            break;
        on = ps_cur_next(&cur);
    }
    ps_cur_close(&cur);
    return txn->ret ? ps_txn_error(txn, err) : 0;
}

/* spanparts: per series, the records older than the cutoff (one seek per series after them) */
static int retain_parts(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_SPANPARTS, "applying retention to span parts"))
        return ps_txn_error(txn, err);
    bool on = ps_cur_first(&cur);
    while (on) {
        uint64_t sid = cur.k.mv_size == 16 ? ps_get_be64(cur.k.mv_data) : 0;
        if (cur.k.mv_size == 16 && ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8)) < cutoff) {
            if (!ps_cur_del(&cur))
                break;
            on = ps_cur_next(&cur);
            continue;
        }
        if (cur.k.mv_size != 16) {
            on = ps_cur_next(&cur);
            continue;
        }
        uint8_t kb[16];
        ps_key_sid_ts(kb, sid + 1, INT64_MIN);
        on = sid == UINT64_MAX ? false : ps_cur_seek(&cur, kb, 16);
    }
    ps_cur_close(&cur);
    return txn->ret ? ps_txn_error(txn, err) : 0;
}

int ps_ids_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    int ret = retain_parts(txn, cutoff, err);
    if (ret == 0)
        ret = ps_drop_hours(txn, DB_SPANS, ps_hour_of(cutoff), "applying retention to the span index", err);
    if (ret == 0)
        ret = ps_drop_hours(txn, DB_UUIDS, ps_hour_of(cutoff), "applying retention to profile ids", err);
    return ret;
}

int ps_reader_span_profiles(ps_reader_t *r, uint64_t span, int64_t start, int64_t end,
                            int (*cb)(void *ctx, uint64_t sid, int64_t ts), void *ctx, ps_err_t *err)
{
    if (start < r->min_ts)
        start = r->min_ts;
    if (start > end || span == 0)
        return 0;
    ps_cur_t cur;
    if (!ps_cur_open(&cur, &r->txn, DB_SPANS, "reading the span index"))
        return ps_txn_error(&r->txn, err);
    int ret = 0;
    /* one seek per hour that holds any record: a seek landing in a later hour jumps there */
    uint32_t h = ps_hour_of(start), h1 = ps_hour_of(end);
    while (ret == 0 && h <= h1) {
        uint8_t k[12];
        k[0] = (uint8_t)(h >> 24);
        k[1] = (uint8_t)(h >> 16);
        k[2] = (uint8_t)(h >> 8);
        k[3] = (uint8_t)h;
        ps_enc_be64(k + 4, span);
        bool on = ps_cur_seek(&cur, k, 12);
        if (!on || cur.k.mv_size < 4)
            break;
        uint32_t kh = ps_get_be32(cur.k.mv_data);
        if (kh > h) {
            h = kh;
            continue;
        }
        for (; on && ret == 0; on = ps_cur_next(&cur)) {
            if (cur.k.mv_size != 28 || memcmp(cur.k.mv_data, k, 12) != 0)
                break;
            const uint8_t *p = cur.k.mv_data;
            int64_t ts = ps_ts_unkey(ps_get_be64(p + 20));
            if (ts >= start && ts <= end)
                ret = cb(ctx, ps_get_be64(p + 12), ts);
        }
        if (h == UINT32_MAX)
            break;
        h++;
    }
    ps_cur_close(&cur);
    if (ret == 0 && r->txn.ret)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}

/* ps_store_profile_by_uuid in transaction t (not ended here) */
static int by_uuid(ps_txn_t *tp, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max, ps_err_t *err)
{
    int ret = 0;
    ps_cur_t cur;
    size_t n = 0;
    if (!ps_cur_open(&cur, tp, DB_UUIDS, "reading profile ids"))
        return ps_txn_error(tp, err);
    /* one seek per hour that holds any id (a seek landing in a later hour jumps there), plus one */
    bool on = ps_cur_first(&cur);
    uint32_t h = on && cur.k.mv_size >= 4 ? ps_get_be32(cur.k.mv_data) : 0;
    while (on) {
        uint8_t k[20];
        put_hour(k, h);
        memcpy(k + 4, uuid, 16);
        if (!(on = ps_cur_seek(&cur, k, 20)) || cur.k.mv_size < 4)
            break;
        uint32_t kh = ps_get_be32(cur.k.mv_data);
        if (kh > h) {
            h = kh;
            continue;
        }
        for (; on; on = ps_cur_next(&cur)) {
            if (cur.k.mv_size < 20 || memcmp(cur.k.mv_data, k, 20) != 0)
                break;
            if (cur.k.mv_size != 36) {
                ret = ps_err_set(err, PS_ECORRUPT, "a profile id's entry has %zu bytes", cur.k.mv_size);
                break;
            }
            if (n < max) {
                const uint8_t *p = cur.k.mv_data;
                sid[n] = ps_get_be64(p + 20);
                ts[n] = ps_ts_unkey(ps_get_be64(p + 28));
            }
            n++;
        }
        if (ret || h == UINT32_MAX)
            break;
        h++;
    }
    ps_cur_close(&cur);
    if (ret == 0 && tp->ret)
        ret = ps_txn_error(tp, err);
    return ret ? ret : (int)(n > INT32_MAX ? INT32_MAX : n);
}

int ps_store_profile_by_uuid(ps_store_t *s, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max,
                             ps_err_t *err)
{
    ps_txn_t t;
    int ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret)
        return ret;
    ret = by_uuid(&t, uuid, sid, ts, max, err);
    ps_txn_abort(&t);
    return ret;
}

int ps_reader_profiles_by_uuid(ps_reader_t *r, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max,
                               ps_err_t *err)
{
    return by_uuid(&r->txn, uuid, sid, ts, max, err);
}
