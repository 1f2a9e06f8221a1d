/*
 * settings.c - the settings table (store.h; docs/FORMAT.md "Settings"): small named string values
 * (what Grafana's settings.v1.SettingsService keeps, e.g. the flame graph's function-name
 * filters), each with the time it was last modified. They are records of DB_INFO with keys
 * "setting:" + name and values modified_ms(8 BE, sign flipped) + the value's bytes: a new record
 * kind in an existing database, so no schema change (a profstore without this file ignores them).
 */
#include <string.h>

#include "internal.h"

#define PREFIX "setting:"
#define PREFIX_LEN 8

static size_t key_of(const char *name, size_t nlen, char *k)
{
    memcpy(k, PREFIX, PREFIX_LEN);
    memcpy(k + PREFIX_LEN, name, nlen);
    return PREFIX_LEN + nlen;
}

static int check_name(const char *name, size_t nlen, ps_err_t *err)
{
    if (nlen == 0)
        return ps_err_set(err, PS_EINVAL, "name: missing (the setting's name)");
    if (nlen > PS_SETTING_NAME_MAX)
        return ps_err_set(err, PS_EINVAL, "name: %zu bytes, more than %d", nlen, PS_SETTING_NAME_MAX);
    if (memchr(name, '\0', nlen) != NULL)
        return ps_err_set(err, PS_EINVAL, "name: holds a NUL byte");
    return 0;
}

int ps_store_settings(ps_store_t *s, int (*cb)(void *ctx, const ps_store_setting_t *st), void *ctx, ps_err_t *err)
{
    ps_txn_t txn;
    ps_cur_t cur;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    if (ps_cur_open(&cur, &txn, DB_INFO, "reading the settings")) {
        for (bool on = ps_cur_seek(&cur, PREFIX, PREFIX_LEN); on && ret == 0; on = ps_cur_next(&cur)) {
            if (cur.k.mv_size < PREFIX_LEN || memcmp(cur.k.mv_data, PREFIX, PREFIX_LEN) != 0)
                break;
            if (cur.v.mv_size < 8) {
                ret = ps_err_set(err, PS_ECORRUPT, "setting record of %zu bytes (less than 8)", cur.v.mv_size);
                break;
            }
            ps_store_setting_t st = {.name = (const char *)cur.k.mv_data + PREFIX_LEN,
                               .nlen = cur.k.mv_size - PREFIX_LEN,
                               .value = (const char *)cur.v.mv_data + 8,
                               .vlen = cur.v.mv_size - 8,
                               .modified_ms = (int64_t)(ps_get_be64(cur.v.mv_data) ^ (1ull << 63))};
            ret = cb(ctx, &st);
        }
        ps_cur_close(&cur);
    }
    if (ret == 0 && txn.ret)
        ret = ps_txn_error(&txn, err);
    ps_txn_abort(&txn);
    return ret;
}

int ps_store_setting_put(ps_store_writer_t *w, const ps_store_setting_t *st, bool del, ps_err_t *err)
{
    char k[PREFIX_LEN + PS_SETTING_NAME_MAX];
    int ret = check_name(st->name, st->nlen, err);
    if (ret == 0 && !del && st->vlen > PS_SETTING_VALUE_MAX)
        ret = ps_err_set(err, PS_EINVAL, "value: %zu bytes, more than %d", st->vlen, PS_SETTING_VALUE_MAX);
    if (ret != 0)
        return ret;
    size_t kn = key_of(st->name, st->nlen, k);
    ps_txn_t txn;
    if ((ret = ps_txn_begin(&txn, w->s, PS_TXN_WRITE, err, "starting write transaction")) != 0)
        return ret;
    MDB_val v;
    if (ps_txn_get(&txn, DB_INFO, k, kn, &v, "reading a setting")) {
        int64_t old = v.mv_size >= 8 ? (int64_t)(ps_get_be64(v.mv_data) ^ (1ull << 63)) : INT64_MIN;
        if (old > st->modified_ms) {
            ps_txn_abort(&txn);
            return ps_err_set(err, PS_ECONFLICT,
                              "failed to %s %.*s: a newer update is already written (modified at %lld ms, this one %lld)",
                              del ? "delete" : "update", (int)st->nlen, st->name, (long long)old,
                              (long long)st->modified_ms);
        }
        if (del)
            ps_txn_del(&txn, DB_INFO, k, kn, NULL, 0, "deleting a setting");
    }
    if (!del && txn.ret == 0) {
        uint8_t *p = ps_txn_reserve(&txn, DB_INFO, k, kn, 8 + st->vlen, 0, "writing a setting");
        if (p != NULL) {
            ps_enc_be64(p, (uint64_t)st->modified_ms ^ (1ull << 63));
            if (st->vlen)
                memcpy(p + 8, st->value, st->vlen);
        }
    }
    if (txn.ret) {
        ret = ps_txn_error(&txn, err);
        ps_txn_abort(&txn);
        return ret;
    }
    return ps_txn_commit(&txn, err, "committing a setting");
}
