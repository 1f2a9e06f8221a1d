/*
 * recrules.c - stored recording rules (store.h; docs/FORMAT.md "Recording rules") and the
 * recorder hook. A rule is a record of DB_INFO with key "rrule:" + id and value generation(8 BE,
 * sign flipped) + the rule's bytes (src/rules' encoding, opaque here): a new record kind in an
 * existing database, so no schema change (a profstore without this file ignores them). The
 * generation is the optimistic-concurrency counter of Pyroscope's settings store: 1 when created,
 * + 1 with each accepted upsert, which must name the generation it saw.
 */
#include <string.h>

#include "internal.h"

#define PREFIX "rrule:"
#define PREFIX_LEN 6

void ps_store_set_recorder(ps_store_t *s, ps_store_record_fn fn, void *ctx)
{
    s->record = fn;
    s->record_ctx = ctx;
}

static int64_t gen_of(const MDB_val *v)
{
    return (int64_t)(ps_get_be64(v->mv_data) ^ (1ull << 63));
}

int ps_store_rules(ps_store_t *s, int (*cb)(void *ctx, const ps_store_rule_t *r), void *ctx, ps_err_t *err)
{
    ps_txn_t txn;
    ps_cur_t cur;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret != 0)
        return ret;
    if (ps_cur_open(&cur, &txn, DB_INFO, "reading the recording rules")) {
        for (bool on = ps_cur_seek(&cur, PREFIX, PREFIX_LEN); on && ret == 0; on = ps_cur_next(&cur)) {
            if (cur.k.mv_size < PREFIX_LEN || memcmp(cur.k.mv_data, PREFIX, PREFIX_LEN) != 0)
                break;
            if (cur.v.mv_size < 8) {
                ret = ps_err_set(err, PS_ECORRUPT, "recording rule record of %zu bytes (less than 8)", cur.v.mv_size);
                break;
            }
            ps_store_rule_t r = {.id = (const char *)cur.k.mv_data + PREFIX_LEN,
                                 .idlen = cur.k.mv_size - PREFIX_LEN,
                                 .value = (const uint8_t *)cur.v.mv_data + 8,
                                 .vlen = cur.v.mv_size - 8,
                                 .generation = gen_of(&cur.v)};
            ret = cb(ctx, &r);
        }
        ps_cur_close(&cur);
    }
    if (ret == 0 && txn.ret)
        ret = ps_txn_error(&txn, err);
    ps_txn_abort(&txn);
    return ret;
}

/* how many rules are stored (for the limit) */
static uint32_t count_rules(ps_txn_t *txn)
{
    ps_cur_t cur;
    uint32_t n = 0;
    if (ps_cur_open(&cur, txn, DB_INFO, "counting the recording rules")) {
        for (bool on = ps_cur_seek(&cur, PREFIX, PREFIX_LEN); on; on = ps_cur_next(&cur)) {
            if (cur.k.mv_size < PREFIX_LEN || memcmp(cur.k.mv_data, PREFIX, PREFIX_LEN) != 0)
                break;
            n++;
        }
        ps_cur_close(&cur);
    }
    return n;
}

int ps_store_rule_put(ps_store_writer_t *w, const ps_store_rule_t *r, bool del, uint32_t max, int64_t *gen,
                      ps_err_t *err)
{
    char k[PREFIX_LEN + PS_RULE_ID_MAX];
    if (r->idlen == 0 || r->idlen > PS_RULE_ID_MAX || memchr(r->id, '\0', r->idlen) != NULL)
        return ps_err_set(err, PS_EINVAL, "id: %zu bytes (1 to %d, no NUL)", r->idlen, PS_RULE_ID_MAX);
    if (!del && r->vlen > PS_RULE_VALUE_MAX)
        return ps_err_set(err, PS_EINVAL, "rule: %zu bytes, more than %d", r->vlen, PS_RULE_VALUE_MAX);
    memcpy(k, PREFIX, PREFIX_LEN);
    memcpy(k + PREFIX_LEN, r->id, r->idlen);
    size_t kn = PREFIX_LEN + r->idlen;
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, w->s, PS_TXN_WRITE, err, "starting write transaction");
    if (ret != 0)
        return ret;
    MDB_val v;
    int64_t next = 1;
    if (ps_txn_get(&txn, DB_INFO, k, kn, &v, "reading a recording rule")) {
        int64_t stored = v.mv_size >= 8 ? gen_of(&v) : 0;
        if (del) {
            ps_txn_del(&txn, DB_INFO, k, kn, NULL, 0, "deleting a recording rule");
        } else if (r->generation != stored) {
            ps_txn_abort(&txn);
            return ps_err_set(err, PS_ECONFLICT,
                              "conflicting update, please try again: observed_generation=%lld, store_generation=%lld",
                              (long long)r->generation, (long long)stored);
        }
        next = stored + 1;
    } else if (txn.ret == 0) {
        if (del) {
            ps_txn_abort(&txn);
            return ps_err_set(err, PS_ENOTFOUND, "no rule with ID='%.*s' found", (int)r->idlen, r->id);
        }
        if (max > 0 && count_rules(&txn) >= max) {
            ps_txn_abort(&txn);
            return ps_err_set(err, PS_ELIMIT, "%u recording rules are stored already, the most there may be", max);
        }
    }
    if (!del && txn.ret == 0) {
        uint8_t *p = ps_txn_reserve(&txn, DB_INFO, k, kn, 8 + r->vlen, 0, "writing a recording rule");
        if (p != NULL) {
            ps_enc_be64(p, (uint64_t)next ^ (1ull << 63));
            if (r->vlen)
                memcpy(p + 8, r->value, r->vlen);
        }
    }
    if (txn.ret) {
        ret = ps_txn_error(&txn, err);
        ps_txn_abort(&txn);
        return ret;
    }
    if (gen != NULL)
        *gen = del ? 0 : next;
    return ps_txn_commit(&txn, err, "committing a recording rule");
}
