/*
 * spans.c - the span index and client profile ids (schema 5; docs/FORMAT.md "Span index" and
 * "Profile ids"):
 *
 *   spans  hour(4 BE) span(8) sid(8 BE) ts(8, sign flipped) -> empty: profile (sid, ts) holds
 *          samples of span, hour = ts_key(ts) / 3600 s (so a range of h hours is h + 1 seeks a span)
 *   uuids  uuid(16) -> dup sid(8 BE) ts(8, sign flipped): the profiles a client id names
 *   puuid  sid(8 BE) ts(8, sign flipped) -> uuid(16)
 *
 * Written by the append that stores the profile (write.c), dropped by retention (whole hours of
 * spans; the ids of dropped profiles one by one).
 */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

#define HOUR_NS (3600ll * 1000000000ll)

static uint32_t hour_of(int64_t ts)
{
    return (uint32_t)(ps_ts_key(ts) / (uint64_t)HOUR_NS);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

bool ps_span_parse(const char *s, size_t n, uint64_t *span)
{
    if (n != 16)
        return false;
    uint64_t v = 0;
    for (size_t i = 0; i < 16; i++) {
        int h = hexval(s[i]);
        if (h < 0)
            return false;
        v = v << 4 | (uint64_t)h;
    }
    *span = v;
    return v != 0;
}

bool ps_uuid_parse(const char *s, size_t n, uint8_t out[16])
{
    /* canonical 8-4-4-4-12, or 32 hex digits */
    if (n != 36 && n != 32)
        return false;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (n == 36 && (i == 8 || i == 13 || i == 18 || i == 23)) {
            if (s[i] != '-')
                return false;
            continue;
        }
        int hi = hexval(s[i]), lo = i + 1 < n ? hexval(s[i + 1]) : -1;
        if (hi < 0 || lo < 0)
            return false;
        out[k++] = (uint8_t)(hi << 4 | lo);
        i++;
    }
    return k == 16;
}

void ps_span_key(uint8_t k[28], uint64_t span, uint64_t sid, int64_t ts)
{
    uint32_t h = hour_of(ts);
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

int ps_uuid_put(ps_txn_t *txn, const uint8_t uuid[16], uint64_t sid, int64_t ts, ps_err_t *err)
{
    uint8_t st[16];
    ps_key_sid_ts(st, sid, ts);
    if (!ps_txn_put(txn, DB_PUUID, st, 16, uuid, 16, 0, "writing a profile id") ||
        !ps_txn_put(txn, DB_UUIDS, uuid, 16, st, 16, 0, "writing a profile id"))
        return ps_txn_error(txn, err);
    return 0;
}

int ps_ids_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    /* spans: every hour that ended before the cutoff, from the front */
    uint32_t h = hour_of(cutoff);
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_SPANS, "applying retention to the span index"))
        return ps_txn_error(txn, err);
    bool on = ps_cur_first(&cur);
    while (on && cur.k.mv_size >= 4 && ps_get_be32(cur.k.mv_data) < h) {
        if (!ps_cur_del(&cur))
            break;
        on = ps_cur_next(&cur);
    }
    ps_cur_close(&cur);
    if (txn->ret)
        return ps_txn_error(txn, err);
    /* profile ids: per series, the keys older than the cutoff (collected, then deleted) */
    uint8_t *keys = NULL;
    size_t nkeys = 0, kcap = 0;
    if (!ps_cur_open(&cur, txn, DB_PUUID, "applying retention to profile ids"))
        return ps_txn_error(txn, err);
    on = ps_cur_first(&cur);
    while (on) {
        if (cur.k.mv_size != 16 || cur.v.mv_size != 16) {
            on = ps_cur_next(&cur);
            continue;
        }
        uint64_t sid = ps_get_be64(cur.k.mv_data);
        int64_t ts = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.k.mv_data + 8));
        if (ts < cutoff) {
            if (nkeys == kcap) {
                kcap = kcap ? kcap * 2 : 256;
                keys = ps_xrealloc(keys, kcap * 32);
            }
            memcpy(keys + 32 * nkeys, cur.k.mv_data, 16);
            memcpy(keys + 32 * nkeys + 16, cur.v.mv_data, 16);
            nkeys++;
            on = ps_cur_next(&cur);
            continue;
        }
        uint8_t kb[16];
        ps_key_sid_ts(kb, sid + 1, INT64_MIN);
        on = sid == UINT64_MAX ? false : ps_cur_seek(&cur, kb, 16);
    }
    ps_cur_close(&cur);
    int ret = txn->ret ? ps_txn_error(txn, err) : 0;
    for (size_t i = 0; i < nkeys && ret == 0; i++) {
        const uint8_t *k = keys + 32 * i;
        if (!ps_txn_del(txn, DB_PUUID, k, 16, NULL, 0, "applying retention to profile ids") ||
            !ps_txn_del(txn, DB_UUIDS, k + 16, 16, k, 16, "applying retention to profile ids"))
            ret = ps_txn_missing(txn, err, "applying retention to profile ids");
    }
    free(keys);
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
    uint32_t h = hour_of(start), h1 = hour_of(end);
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

/* The string content of id equals s. */
static bool str_is(ps_txn_t *txn, uint64_t id, const char *s, size_t n)
{
    MDB_val v;
    return id != 0 && ps_sym_get(txn, SYM_STRING, id, &v) && v.mv_size == n && memcmp(v.mv_data, s, n) == 0;
}

int ps_reader_node_span(ps_reader_t *r, uint64_t node, uint64_t *span, ps_err_t *err)
{
    *span = 0;
    uint64_t lsid = 0;
    for (uint32_t depth = 0; node != 0; depth++) {
        uint8_t k[8];
        MDB_val mv;
        ps_enc_be64(k, node);
        if (!ps_txn_get(&r->txn, DB_NODES, k, 8, &mv, "reading stack node") || mv.mv_size != 16 || depth > (1u << 20)) {
            ps_txn_error(&r->txn, NULL);
            return ps_err_set(err, PS_ECORRUPT, "stack node %llu is missing or damaged", (unsigned long long)node);
        }
        uint64_t parent = ps_get_be64(mv.mv_data), item = ps_get_be64((const uint8_t *)mv.mv_data + 8);
        if (parent == 0 && (item & PS_ITEM_LABELSET))
            lsid = item & ~PS_ITEM_LABELSET;
        node = parent;
    }
    if (lsid == 0)
        return 0;
    MDB_val v;
    if (!ps_sym_get(&r->txn, SYM_LABELSET, lsid, &v)) {
        ps_txn_error(&r->txn, NULL);
        return ps_err_set(err, PS_ECORRUPT, "label set %llu is missing", (unsigned long long)lsid);
    }
    ps_dec_t d;
    ps_dec_init(&d, v.mv_data, v.mv_size);
    uint64_t nl = ps_dec_uvarint(&d);
    for (uint64_t j = 0; j < nl && !d.err; j++) {
        uint64_t key = ps_dec_uvarint(&d), str = ps_dec_uvarint(&d);
        ps_dec_varint(&d);
        ps_dec_uvarint(&d);
        if (d.err || !(str_is(&r->txn, key, "span_id", 7) || str_is(&r->txn, key, "profile_id", 10)))
            continue;
        MDB_val sv;
        if (str != 0 && ps_sym_get(&r->txn, SYM_STRING, str, &sv) && ps_span_parse(sv.mv_data, sv.mv_size, span))
            return 0;
    }
    if (d.err)
        return ps_err_set(err, PS_ECORRUPT, "label set %llu is damaged", (unsigned long long)lsid);
    return 0;
}

int ps_store_profile_uuid(ps_store_t *s, uint64_t sid, int64_t ts, uint8_t out[16], ps_err_t *err)
{
    ps_txn_t t;
    int ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret)
        return ret;
    uint8_t k[16];
    MDB_val v;
    ps_key_sid_ts(k, sid, ts);
    if (ps_txn_get(&t, DB_PUUID, k, 16, &v, "reading a profile id")) {
        if (v.mv_size != 16)
            ret = ps_err_set(err, PS_ECORRUPT, "profile id of series %llu at %lld ns is damaged",
                             (unsigned long long)sid, (long long)ts);
        else {
            memcpy(out, v.mv_data, 16);
            ret = 1;
        }
    } else if (t.ret) {
        ret = ps_txn_error(&t, err);
    }
    ps_txn_abort(&t);
    return ret;
}

int ps_store_profile_by_uuid(ps_store_t *s, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max,
                             ps_err_t *err)
{
    ps_txn_t t;
    int ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret)
        return ret;
    ps_cur_t cur;
    size_t n = 0;
    if (!ps_cur_open(&cur, &t, DB_UUIDS, "reading profile ids")) {
        ret = ps_txn_error(&t, err);
        ps_txn_abort(&t);
        return ret;
    }
    for (bool on = ps_cur_find(&cur, uuid, 16); on; on = ps_cur_next_dup(&cur)) {
        if (cur.v.mv_size != 16) {
            ret = ps_err_set(err, PS_ECORRUPT, "a profile id's entry has %zu bytes", cur.v.mv_size);
            break;
        }
        if (n < max) {
            sid[n] = ps_get_be64(cur.v.mv_data);
            ts[n] = ps_ts_unkey(ps_get_be64((const uint8_t *)cur.v.mv_data + 8));
        }
        n++;
    }
    ps_cur_close(&cur);
    if (ret == 0 && t.ret)
        ret = ps_txn_error(&t, err);
    ps_txn_abort(&t);
    return ret ? ret : (int)(n > INT32_MAX ? INT32_MAX : n);
}
