/*
 * samples.c - the samples view of a series (store.h): float samples, or a profile series'
 * totals at its profile times. Float series are not stored yet: every series is a profile series
 * here until the float storage lands.
 */
#include "internal.h"

int ps_reader_series_kind(ps_reader_t *r, uint64_t sid, ps_series_kind_t *kind, ps_err_t *err)
{
    uint8_t k[8];
    ps_enc_be64(k, sid);
    MDB_val key = ps_mval(k, 8), val;
    int rc = mdb_get(r->txn, r->store->dbi[DB_SERIES], &key, &val);
    if (rc == MDB_NOTFOUND)
        return PS_ENOTFOUND;
    if (rc != 0)
        return ps_lmdb_err(err, rc, "series");
    *kind = PS_SERIES_PROFILE;
    return 0;
}

typedef struct totals_ctx {
    int (*cb)(void *ctx, const ps_fsample_t *s, size_t n);
    void *ctx;
} totals_ctx_t;

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    totals_ctx_t *c = ctx;
    ps_fsample_t s = {floor_div(p->ts, 1000000), (double)p->total};
    return c->cb(c->ctx, &s, 1);
}

int ps_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                      int (*cb)(void *ctx, const ps_fsample_t *s, size_t n), void *ctx, ps_err_t *err)
{
    if (mint > maxt)
        return 0;
    /* ms -> ns bounds, saturating: profile ts in [mint*1e6, maxt*1e6 + 999999] has floor(ts/1e6) in range */
    int64_t lo = mint <= INT64_MIN / 1000000 ? INT64_MIN : mint * 1000000;
    int64_t hi = maxt >= INT64_MAX / 1000000 ? INT64_MAX : maxt * 1000000 + 999999;
    totals_ctx_t c = {cb, ctx};
    return ps_reader_profiles(r, sid, lo, hi, true, on_profile, &c, err);
}

int ps_reader_xor_chunks(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                         int (*cb)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n),
                         void *ctx, ps_err_t *err)
{
    (void)r, (void)sid, (void)mint, (void)maxt, (void)cb, (void)ctx, (void)err;
    return 0;
}
