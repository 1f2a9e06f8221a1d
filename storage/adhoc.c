/*
 * adhoc.c - the ad hoc profiles (store.h; docs/FORMAT.md "Ad hoc profiles"): files uploaded by
 * hand to be shared, in the database "adhoc", created at any open when missing (it holds nothing
 * the other databases need: no schema version of its own). Keys are the ids (a 26-character ULID,
 * '-', the sanitised name), so byte order is upload order and the oldest is the first key.
 * Values: encoding 0x01, uploaded_ms (8 BE, sign flipped), the file's bytes as uploaded.
 *
 *   key   "01M92BW73SCST6GMMMKYGWX9W1-a"
 *   value 01  80 00 01 a2 44 be 1c 79  61 3b 62 20 31 0a   uploaded 1796449639545 ms, the folded text "a;b 1\n"
 */
#include <string.h>

#include "internal.h"

#define ENC 0x01
#define HDR 9

static uint32_t max_profiles(const ps_store_t *s)
{
    return s->opts.adhoc_max_profiles ? s->opts.adhoc_max_profiles : PS_ADHOC_MAX_PROFILES;
}

static uint64_t max_bytes(const ps_store_t *s)
{
    return s->opts.adhoc_max_bytes ? s->opts.adhoc_max_bytes : PS_ADHOC_MAX_BYTES;
}

static int check_value(const MDB_val *k, const MDB_val *v, ps_err_t *err)
{
    if (v->mv_size < HDR || ((const uint8_t *)v->mv_data)[0] != ENC)
        return ps_err_set(err, PS_ECORRUPT, "ad hoc profile %.*s: a record of %zu bytes%s", (int)(k->mv_size > 64 ? 64 : k->mv_size),
                          (const char *)k->mv_data, v->mv_size, v->mv_size < HDR ? " (less than 9)" : ", not of encoding 01");
    return 0;
}

static int64_t uploaded_of(const MDB_val *v)
{
    return (int64_t)(ps_get_be64((const uint8_t *)v->mv_data + 1) ^ (1ull << 63));
}

int ps_store_adhoc_get(ps_store_t *s, const char *id, size_t idlen, ps_arena_t *arena, ps_store_adhoc_t *out,
                       ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    if (idlen == 0 || idlen > PS_ADHOC_ID_MAX || (s->absent & (1u << DB_ADHOC)))
        return ps_err_set(err, PS_ENOTFOUND, "profile %.*s not found", (int)(idlen > 300 ? 300 : idlen), id);
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    MDB_val v;
    if (ps_txn_get(&txn, DB_ADHOC, id, idlen, &v, "reading an ad hoc profile")) {
        MDB_val k = ps_mval(id, idlen);
        if ((ret = check_value(&k, &v, err)) == 0) {
            out->id = ps_arena_strndup(arena, id, idlen);
            out->idlen = idlen;
            out->uploaded_ms = uploaded_of(&v);
            out->len = v.mv_size - HDR;
            uint8_t *d = ps_arena_alloc(arena, out->len + 1);
            memcpy(d, (const uint8_t *)v.mv_data + HDR, out->len);
            d[out->len] = 0;
            out->data = d;
        }
    } else if (txn.ret) {
        ret = ps_txn_error(&txn, err);
    } else {
        ret = ps_err_set(err, PS_ENOTFOUND, "profile %.*s not found", (int)idlen, id);
    }
    ps_txn_abort(&txn);
    return ret;
}

int ps_store_adhoc_list(ps_store_t *s, int (*cb)(void *ctx, const ps_store_adhoc_t *a), void *ctx, ps_err_t *err)
{
    if (s->absent & (1u << DB_ADHOC))
        return 0;
    ps_txn_t txn;
    ps_cur_t cur;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    if (ps_cur_open(&cur, &txn, DB_ADHOC, "listing the ad hoc profiles")) {
        for (bool on = ps_cur_first(&cur); on && ret == 0; on = ps_cur_next(&cur)) {
            if ((ret = check_value(&cur.k, &cur.v, err)) != 0)
                break;
            ps_store_adhoc_t a = {.id = cur.k.mv_data, .idlen = cur.k.mv_size, .uploaded_ms = uploaded_of(&cur.v),
                                  .len = cur.v.mv_size - HDR};
            ret = cb(ctx, &a);
        }
        ps_cur_close(&cur);
    }
    if (ret == 0 && txn.ret)
        ret = ps_txn_error(&txn, err);
    ps_txn_abort(&txn);
    return ret;
}

int ps_store_adhoc_put(ps_store_writer_t *w, const ps_store_adhoc_t *a, uint32_t *dropped, ps_err_t *err)
{
    ps_store_t *s = w->s;
    uint32_t ndropped = 0, maxn = max_profiles(s);
    uint64_t maxb = max_bytes(s);
    if (dropped)
        *dropped = 0;
    if (a->idlen == 0 || a->idlen > PS_ADHOC_ID_MAX || memchr(a->id, 0, a->idlen) != NULL)
        return ps_err_set(err, PS_EINVAL, "id: %zu bytes (1 to %d, no NUL)", a->idlen, PS_ADHOC_ID_MAX);
    if (a->len > maxb)
        return ps_err_set(err, PS_ETOOBIG, "the profile is %zu bytes, more than the %llu all ad hoc profiles may "
                          "hold (--adhoc.max-bytes)", a->len, (unsigned long long)maxb);
    ps_txn_t txn;
    ps_cur_t cur;
    int ret = ps_txn_begin(&txn, s, PS_TXN_WRITE, err, "starting write transaction");
    if (ret != 0)
        return ret;
    MDB_val v;
    if (ps_txn_get(&txn, DB_ADHOC, a->id, a->idlen, &v, "reading an ad hoc profile")) {
        ps_txn_abort(&txn);
        return ps_err_set(err, PS_ECONFLICT, "ad hoc profile %.*s exists already", (int)a->idlen, a->id);
    }
    /* what is stored, then the oldest dropped until this one fits */
    uint64_t n = 0, bytes = 0;
    if (ps_cur_open(&cur, &txn, DB_ADHOC, "counting the ad hoc profiles")) {
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
            n++;
            bytes += cur.v.mv_size >= HDR ? cur.v.mv_size - HDR : 0;
        }
        for (bool on = ps_cur_first(&cur); on && (n + 1 > maxn || bytes + a->len > maxb);) {
            bytes -= cur.v.mv_size >= HDR ? cur.v.mv_size - HDR : 0;
            n--;
            ndropped++;
            if (!ps_cur_del(&cur))
                break;
            on = ps_cur_first(&cur);
        }
        ps_cur_close(&cur);
    }
    uint8_t *p = ps_txn_reserve(&txn, DB_ADHOC, a->id, a->idlen, HDR + a->len, MDB_NOOVERWRITE, "writing an ad hoc profile");
    if (p != NULL) {
        p[0] = ENC;
        ps_enc_be64(p + 1, (uint64_t)a->uploaded_ms ^ (1ull << 63));
        if (a->len)
            memcpy(p + HDR, a->data, a->len);
    }
    if (txn.ret) {
        ret = ps_txn_error(&txn, err);
        ps_txn_abort(&txn);
        return ret;
    }
    if ((ret = ps_txn_commit(&txn, err, "committing an ad hoc profile")) == 0 && dropped)
        *dropped = ndropped;
    return ret;
}
