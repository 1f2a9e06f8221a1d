/*
 * rollup.c - rollups: per profile series, the profiles of each closed window of an hour (level 0)
 * and of a day (level 1), merged node by node into one record, so that a merge over a month reads
 * 30 day records instead of hundreds of thousands of profiles (docs/FORMAT.md "Rollups").
 *
 * Exactness. A merge (ps_reader_sum) adds up on_node values and ps_sum_info_t fields; a rollup holds
 * the same sums of its window, so reading it gives the same totals node by node. Saturating adds of
 * values that are all >= 0 do not depend on their grouping (each is min(true sum, INT64_MAX)); a
 * window with a negative value, duration or total gets no rollup (its merges read it raw). Nodes:
 * stored values are nonzero, so with positive values a node is in a merge exactly when a profile
 * of the range holds it, the same with or without rollups.
 *
 * Staleness. A window is rolled up at compaction once it is closed: the series holds a profile at
 * or after the window's end, and writes to a series never go back before its newest profile
 * (write.c refuses them as out of order), so the window's profiles can no longer change. The
 * only other change is retention, which drops whole chunks older than its cutoff and, in the same
 * transaction, the rollups of windows that start before it. A window without a valid rollup (not
 * closed yet, compacted before schema 8, a negative value, a damaged record, or fewer profiles than
 * opts.rollup_min_profiles) is read from the next level down, and below the hour from the profiles
 * themselves.
 *
 * Price. A record holds every distinct stack of its window, so it costs about as many bytes as one
 * profile per ~5 distinct ones; with few profiles in a window it costs as much as they do and saves
 * little (a chunk sums its profiles column by column): a window with fewer than
 * opts.rollup_min_profiles profiles (PS_ROLLUP_MIN_PROFILES) gets none.
 *
 * Key: sid u64 BE | level u8 | window start ns (u64 BE, sign flipped); the record: rolluprec.c.
 */
#include <stdlib.h>
#include <string.h>

#include "core/sat.h"
#include "core/timeutil.h"

#include "chunk.h"
#include "internal.h"

const int64_t ps_rollup_window[PS_ROLLUP_LEVELS] = {3600ll * 1000000000ll, 86400ll * 1000000000ll};

/* windows are only looked for inside +-2^62 ns (year 2116): their bounds never overflow */
#define ROLLUP_LIMIT ((int64_t)1 << 62)

static void rollup_key(uint8_t k[17], uint64_t sid, int level, int64_t ws)
{
    ps_enc_be64(k, sid);
    k[8] = (uint8_t)level;
    ps_enc_be64(k + 9, ps_ts_key(ws));
}

/* ---- merging through rollups ---- */

typedef struct rsum {
    ps_txn_t *txn;
    int64_t min_ts;
    uint64_t sid;
    void (*on_node)(void *ctx, uint64_t node, int64_t value);
    void *ctx;
    ps_sum_info_t *info;
    ps_err_t *err;
    ps_arena_t arena;
    bool build;  /* making a rollup: the raw profiles decoded whole, each value checked */
    bool exact;  /* build: nothing negative met */
    /* the raw range not read yet (pend_a > pend_b: none): the level walk meets its raw pieces in
     * time order, and adjacent ones are read as one, so a chunk across two of them (or across an
     * hour without a rollup and the next) is decoded once */
    int64_t pend_a, pend_b;
} rsum_t;

static void info_add_rollup(ps_sum_info_t *info, const ps_rollup_t *r)
{
    if (info == NULL)
        return;
    if (info->profiles == 0 || r->min_ts < info->min_ts)
        info->min_ts = r->min_ts;
    if (info->profiles == 0 || r->max_ts > info->max_ts)
        info->max_ts = r->max_ts;
    info->profiles += r->profiles;
    info->duration = ps_sat_add(info->duration, r->duration);
    if (r->period > info->period)
        info->period = r->period;
    info->total = ps_sat_add(info->total, r->total);
}

/* build: one raw profile, checked and added */
static int build_profile(void *ctx, const ps_stored_profile_t *p)
{
    rsum_t *c = ctx;
    if (p->duration < 0 || p->total < 0)
        c->exact = false;
    ps_sum_info_t *info = c->info;
    if (info->profiles == 0 || p->ts < info->min_ts)
        info->min_ts = p->ts;
    if (info->profiles == 0 || p->ts > info->max_ts)
        info->max_ts = p->ts;
    info->profiles++;
    info->duration = ps_sat_add(info->duration, p->duration);
    if (p->period > info->period)
        info->period = p->period;
    info->total = ps_sat_add(info->total, p->total);
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->values[i] <= 0)
            c->exact = false;
        c->on_node(c->ctx, p->nodes[i], p->values[i]);
    }
    return c->exact ? 0 : 1; /* stop: this window gets no rollup */
}

static int raw_read(rsum_t *c, int64_t a, int64_t b)
{
    if (c->build) {
        int ret = ps_profiles_raw(c->txn, INT64_MIN, c->sid, a, b, false, build_profile, c, c->err);
        return ret == 1 ? 0 : ret;
    }
    return ps_sum_raw(c->txn, c->min_ts, c->sid, a, b, c->on_node, c->ctx, c->info, c->err);
}

/* reads the pending raw range */
static int raw_flush(rsum_t *c)
{
    if (c->pend_a > c->pend_b)
        return 0;
    int64_t a = c->pend_a, b = c->pend_b;
    c->pend_a = 0;
    c->pend_b = -1;
    return raw_read(c, a, b);
}

/* [a, b] raw: joined to the pending range when it follows it, else read after it */
static int raw(rsum_t *c, int64_t a, int64_t b)
{
    if (c->pend_a <= c->pend_b && c->pend_b < INT64_MAX && a == c->pend_b + 1) {
        c->pend_b = b;
        return 0;
    }
    int ret = raw_flush(c);
    if (ret == 0) {
        c->pend_a = a;
        c->pend_b = b;
    }
    return ret;
}

/* [a, b] (a <= b): whole windows of this level from their rollups, the rest a level down */
static int sum_level(rsum_t *c, int level, int64_t a, int64_t b)
{
    if (level < 0)
        return raw(c, a, b);
    int64_t len = ps_rollup_window[level];
    int64_t ca = a < -ROLLUP_LIMIT ? -ROLLUP_LIMIT : a, cb = b > ROLLUP_LIMIT ? ROLLUP_LIMIT : b;
    /* the first window starting at or after ca, the end of the last one ending at or before cb */
    int64_t ws0 = ca / len * len;
    if (ws0 < ca)
        ws0 += len;
    int64_t we = (cb + 1) / len * len;
    if (we > cb + 1)
        we -= len;
    if (ws0 >= we)
        return sum_level(c, level - 1, a, b);
    int ret = 0;
    if (a < ws0 && (ret = sum_level(c, level - 1, a, ws0 - 1)) != 0)
        return ret;
    ps_cur_t cur;
    if (!ps_cur_open(&cur, c->txn, DB_ROLLUPS, "reading rollups"))
        return ps_txn_error(c->txn, c->err);
    uint8_t kb[17];
    rollup_key(kb, c->sid, level, ws0);
    int64_t t = ws0; /* what is summed up to */
    for (bool on = ps_cur_seek(&cur, kb, 17); on && ret == 0 && !(c->build && !c->exact); on = ps_cur_next(&cur)) {
        const uint8_t *k = cur.k.mv_data;
        if (cur.k.mv_size != 17 || ps_get_be64(k) != c->sid || k[8] != level)
            break;
        int64_t ws = ps_ts_unkey(ps_get_be64(k + 9));
        if (ws >= we)
            break;
        if (ws % len != 0 || ws < t)
            continue; /* not a window's start: damaged, read below */
        ps_rollup_t r;
        ps_arena_reset(&c->arena);
        ps_err_t derr;
        if (ps_rollup_decode(cur.v.mv_data, cur.v.mv_size, ws, len, &c->arena, &r, &derr) != 0)
            continue; /* damaged: its window is read a level down */
        if (ws > t && (ret = sum_level(c, level - 1, t, ws - 1)) != 0)
            break;
        /* the raw profiles before this window first: a merge meets its nodes in time order */
        if ((ret = raw_flush(c)) != 0)
            break;
        info_add_rollup(c->info, &r);
        if (c->on_node)
            for (uint32_t i = 0; i < r.n; i++)
                c->on_node(c->ctx, r.nodes[i], r.values[i]);
        t = ws + len;
    }
    if (ret == 0 && c->txn->ret)
        ret = ps_txn_error(c->txn, c->err);
    ps_cur_close(&cur);
    if (ret == 0 && t < we && !(c->build && !c->exact))
        ret = sum_level(c, level - 1, t, we - 1);
    if (ret == 0 && we <= b && !(c->build && !c->exact))
        ret = sum_level(c, level - 1, we, b);
    return ret;
}

int ps_rollup_sum(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end,
                  void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info, ps_err_t *err)
{
    if (start < min_ts)
        start = min_ts;
    if (start > end)
        return 0;
    rsum_t c = {txn, min_ts, sid, on_node, ctx, info, err, PS_ARENA_INIT, false, true, 0, -1};
    int ret = sum_level(&c, PS_ROLLUP_LEVELS - 1, start, end);
    if (ret == 0)
        ret = raw_flush(&c);
    ps_arena_dispose(&c.arena);
    return ret;
}

/* ---- making rollups ---- */

/* node -> value, open addressing (key UINT64_MAX: empty; node ids never get there) */
typedef struct acc {
    uint64_t *keys;
    int64_t *vals;
    size_t cap, count;
} acc_t;

static size_t acc_slot(uint64_t k, size_t mask)
{
    return (size_t)((k * 0x9e3779b97f4a7c15ull) >> 17) & mask;
}

static void acc_put(acc_t *m, uint64_t k, int64_t v)
{
    if ((m->count + 1) * 2 > m->cap) {
        size_t ncap = m->cap ? m->cap * 2 : 1024;
        uint64_t *nk = ps_xmalloc(ncap * sizeof(uint64_t));
        int64_t *nv = ps_xmalloc(ncap * sizeof(int64_t));
        memset(nk, 0xff, ncap * sizeof(uint64_t));
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != UINT64_MAX) {
                size_t j = acc_slot(m->keys[i], ncap - 1);
                while (nk[j] != UINT64_MAX)
                    j = (j + 1) & (ncap - 1);
                nk[j] = m->keys[i];
                nv[j] = m->vals[i];
            }
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    size_t mask = m->cap - 1, j = acc_slot(k, mask);
    while (m->keys[j] != UINT64_MAX && m->keys[j] != k)
        j = (j + 1) & mask;
    if (m->keys[j] == UINT64_MAX) {
        m->keys[j] = k;
        m->vals[j] = 0;
        m->count++;
    }
    m->vals[j] = ps_sat_add(m->vals[j], v);
}

static void acc_clear(acc_t *m)
{
    if (m->count)
        memset(m->keys, 0xff, m->cap * sizeof(uint64_t));
    m->count = 0;
}

static void on_acc(void *ctx, uint64_t node, int64_t v)
{
    acc_put(ctx, node, v);
}

static int cmp_pair(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* m and info as a record into out (nodes ascending) */
static void encode_acc(const acc_t *m, const ps_sum_info_t *info, ps_buf_t *out)
{
    uint64_t *pairs = ps_xmalloc((m->count + 1) * 2 * sizeof(uint64_t));
    size_t n = 0;
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != UINT64_MAX) {
            pairs[2 * n] = m->keys[i];
            pairs[2 * n + 1] = (uint64_t)m->vals[i];
            n++;
        }
    qsort(pairs, n, 2 * sizeof(uint64_t), cmp_pair);
    ps_rollup_t r = {info->profiles, info->min_ts, info->max_ts, info->duration, info->total, info->period, (uint32_t)n,
                     ps_xmalloc((n + 1) * sizeof(uint64_t)), ps_xmalloc((n + 1) * sizeof(int64_t))};
    for (size_t i = 0; i < n; i++) {
        r.nodes[i] = pairs[2 * i];
        r.values[i] = (int64_t)pairs[2 * i + 1];
    }
    free(pairs);
    ps_buf_reset(out);
    ps_rollup_encode(&r, out);
    free(r.nodes);
    free(r.values);
}

static bool rollup_exists(ps_txn_t *txn, uint64_t sid, int level, int64_t ws)
{
    uint8_t kb[17];
    MDB_val v;
    rollup_key(kb, sid, level, ws);
    return ps_txn_get(txn, DB_ROLLUPS, kb, 17, &v, "reading rollup");
}

static int put_rollup(ps_txn_t *txn, uint64_t sid, int level, int64_t ws, const ps_buf_t *rec, ps_err_t *err)
{
    uint8_t kb[17];
    rollup_key(kb, sid, level, ws);
    if (!ps_txn_put(txn, DB_ROLLUPS, kb, 17, rec->data, rec->len, 0, "writing rollup"))
        return ps_txn_error(txn, err);
    return 0;
}

static uint32_t min_profiles(const ps_txn_t *txn)
{
    uint32_t m = txn->s->opts.rollup_min_profiles;
    return m ? m : PS_ROLLUP_MIN_PROFILES;
}

/* a day's rollup, made from its hours' rollups (and the profiles of an hour without one) and
 * stored, unless it has fewer profiles than min_profiles or something negative */
static int build_day(ps_txn_t *txn, uint64_t sid, int64_t ws, acc_t *m, ps_buf_t *out, ps_err_t *err)
{
    int64_t len = ps_rollup_window[1];
    ps_sum_info_t info = {0};
    acc_clear(m);
    rsum_t c = {txn, INT64_MIN, sid, on_acc, m, &info, err, PS_ARENA_INIT, true, true, 0, -1};
    int ret = sum_level(&c, 0, ws, ws + len - 1);
    if (ret == 0 && c.exact)
        ret = raw_flush(&c);
    ps_arena_dispose(&c.arena);
    if (ret || !c.exact || info.profiles == 0 || info.profiles < min_profiles(txn) || info.duration < 0 ||
        info.total < 0)
        return ret;
    encode_acc(m, &info, out);
    return put_rollup(txn, sid, 1, ws, out, err);
}

/* the hours of a run of profiles, summed in one walk: each hour's record is made when the walk
 * leaves it (kept in recs, stored after the walk) */
typedef struct hours {
    acc_t m;
    ps_sum_info_t info;
    bool exact;
    uint32_t min; /* profiles an hour needs for a rollup */
    int64_t ws;   /* the hour being summed; INT64_MIN: none */
    int64_t *wss; /* the hours made, their records */
    ps_buf_t *recs;
    size_t n, cap;
} hours_t;

static void hours_flush(hours_t *h)
{
    if (h->ws != INT64_MIN && h->exact && h->info.profiles > 0 && h->info.profiles >= h->min &&
        h->info.duration >= 0 && h->info.total >= 0) {
        if (h->n == h->cap) {
            h->cap = h->cap ? h->cap * 2 : 16;
            h->wss = ps_xrealloc(h->wss, h->cap * sizeof(int64_t));
            h->recs = ps_xrealloc(h->recs, h->cap * sizeof(ps_buf_t));
        }
        h->wss[h->n] = h->ws;
        h->recs[h->n] = (ps_buf_t)PS_BUF_INIT;
        encode_acc(&h->m, &h->info, &h->recs[h->n]);
        h->n++;
    }
    acc_clear(&h->m);
    memset(&h->info, 0, sizeof(h->info));
    h->exact = true;
    h->ws = INT64_MIN;
}

/* the start of the hour ts falls in (rounded down for negative times too) */
static int64_t hour_start(int64_t ts)
{
    int64_t len = ps_rollup_window[0], ws = ts / len * len;
    return ws > ts ? ws - len : ws;
}

static int hours_profile(void *ctx, const ps_stored_profile_t *p)
{
    hours_t *h = ctx;
    int64_t ws = hour_start(p->ts);
    if (ws != h->ws) {
        hours_flush(h);
        h->ws = ws;
    }
    if (!h->exact)
        return 0;
    if (p->duration < 0 || p->total < 0)
        h->exact = false;
    ps_sum_info_t *info = &h->info;
    if (info->profiles == 0)
        info->min_ts = p->ts;
    info->max_ts = p->ts; /* oldest first */
    info->profiles++;
    info->duration = ps_sat_add(info->duration, p->duration);
    if (p->period > info->period)
        info->period = p->period;
    info->total = ps_sat_add(info->total, p->total);
    for (uint32_t i = 0; i < p->n; i++) {
        if (p->values[i] <= 0)
            h->exact = false;
        acc_put(&h->m, p->nodes[i], p->values[i]);
    }
    return 0;
}

/* the first and the last hour holding at least min profiles (a walk of the chunks' timestamps) */
typedef struct dense {
    uint32_t min, in;   /* in: profiles in hour ws */
    int64_t ws;         /* INT64_MIN: none yet */
    int64_t first, last; /* INT64_MIN: none */
} dense_t;

static void dense_close(dense_t *d)
{
    if (d->ws != INT64_MIN && d->in >= d->min) {
        if (d->first == INT64_MIN)
            d->first = d->ws;
        d->last = d->ws;
    }
}

static int dense_profile(void *ctx, const ps_stored_profile_t *p)
{
    dense_t *d = ctx;
    int64_t ws = hour_start(p->ts);
    if (ws != d->ws) {
        dense_close(d);
        d->ws = ws;
        d->in = 0;
    }
    d->in++;
    return 0;
}

int ps_rollup_update(ps_txn_t *txn, uint64_t sid, int64_t from, int64_t last_ts, ps_err_t *err)
{
    if (from > last_ts || from < -ROLLUP_LIMIT || last_ts > ROLLUP_LIMIT)
        return 0;
    int ret = 0;
    /* hours: the closed ones from the first without a rollup, in one walk of their profiles */
    {
        int64_t len = ps_rollup_window[0];
        int64_t ws = from / len * len, wend = last_ts / len * len; /* closed: [ws, wend) */
        if (ws > from)
            ws -= len;
        if (wend > last_ts)
            wend -= len;
        while (ws < wend && rollup_exists(txn, sid, 0, ws))
            ws += len;
        if (txn->ret)
            return ps_txn_error(txn, err);
        /* sparse series: only the hours with enough profiles are summed (found from the
         * timestamps alone, which costs a fraction of decoding the values) */
        if (ws < wend && min_profiles(txn) > 1) {
            dense_t d = {min_profiles(txn), 0, INT64_MIN, INT64_MIN, INT64_MIN};
            if ((ret = ps_profiles_raw(txn, INT64_MIN, sid, ws, wend - 1, true, dense_profile, &d, err)) != 0)
                return ret;
            dense_close(&d);
            if (d.first == INT64_MIN) {
                ws = wend;
            } else {
                ws = d.first;
                wend = d.last + len;
            }
        }
        if (ws < wend) {
            hours_t h = {.exact = true, .min = min_profiles(txn), .ws = INT64_MIN};
            ret = ps_profiles_raw(txn, INT64_MIN, sid, ws, wend - 1, false, hours_profile, &h, err);
            if (ret == 0)
                hours_flush(&h);
            for (size_t i = 0; i < h.n; i++) {
                if (ret == 0 && !rollup_exists(txn, sid, 0, h.wss[i]))
                    ret = txn->ret ? ps_txn_error(txn, err) : put_rollup(txn, sid, 0, h.wss[i], &h.recs[i], err);
                ps_buf_dispose(&h.recs[i]);
            }
            free(h.wss);
            free(h.recs);
            free(h.m.keys);
            free(h.m.vals);
        }
    }
    /* days, from their hours */
    acc_t m = {0};
    ps_buf_t out = PS_BUF_INIT;
    int64_t len = ps_rollup_window[1];
    int64_t ws = from / len * len;
    if (ws > from)
        ws -= len;
    for (; ret == 0 && ws + len <= last_ts; ws += len) {
        if (rollup_exists(txn, sid, 1, ws))
            continue;
        ret = txn->ret ? ps_txn_error(txn, err) : build_day(txn, sid, ws, &m, &out, err);
    }
    free(m.keys);
    free(m.vals);
    ps_buf_dispose(&out);
    return ret;
}

int ps_rollup_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    uint8_t *keys = NULL;
    size_t nkeys = 0, kcap = 0;
    ps_cur_t cur;
    int ret = 0;
    if (!ps_cur_open(&cur, txn, DB_ROLLUPS, "applying retention to rollups"))
        return ps_txn_error(txn, err);
    bool on = ps_cur_first(&cur);
    while (on) {
        const uint8_t *k = cur.k.mv_data;
        if (cur.k.mv_size != 17) { /* not a rollup key (damage): left to the check */
            on = ps_cur_next(&cur);
            continue;
        }
        if (ps_ts_unkey(ps_get_be64(k + 9)) < cutoff) {
            if (nkeys == kcap) {
                kcap = kcap ? kcap * 2 : 256;
                keys = ps_xrealloc(keys, kcap * 17);
            }
            memcpy(keys + 17 * nkeys++, k, 17);
            on = ps_cur_next(&cur);
            continue;
        }
        /* the rest of this (series, level) is newer: on to the next level */
        uint64_t sid = ps_get_be64(k);
        uint8_t kb[17];
        if (k[8] == 0xff)
            rollup_key(kb, sid + 1, 0, INT64_MIN);
        else
            rollup_key(kb, sid, k[8] + 1, INT64_MIN);
        if (k[8] == 0xff && sid == UINT64_MAX)
            break;
        on = ps_cur_seek(&cur, kb, 17);
    }
    ps_cur_close(&cur);
    if (txn->ret)
        ret = ps_txn_error(txn, err);
    for (size_t i = 0; i < nkeys && ret == 0; i++)
        if (!ps_txn_del(txn, DB_ROLLUPS, keys + 17 * i, 17, NULL, 0, "applying retention to rollups"))
            ret = ps_txn_missing(txn, err, "applying retention to rollups");
    free(keys);
    return ret;
}

/* ---- backfill: the windows compacted before rollups existed ----
 *
 * Compaction makes the rollups of the windows it closes, from the newest profile it had compacted
 * before; the windows a store had compacted before schema 8 (or under the option no_rollups) got
 * none. The backfill walks every profile series' chunks, oldest first, a step of BACKFILL_STEP_NS
 * at a time, and makes the missing rollups of the windows each step closes (ps_rollup_update:
 * what exists is kept), up to the series' newest compacted profile (the windows after it are
 * compaction's). Its cursor is DB_INFO "rollfill": absent, not started (any store before it);
 * sid (u64 BE) and the next step's start (a ts); one byte 00, done. Each call does at most
 * BACKFILL_STEPS steps (opts.rollup_backfill_steps) or BACKFILL_BUDGET_NS of work (and the step
 * it is in: at most 4 hours of one series' profiles), in one transaction.
 */
#define BACKFILL_KEY "rollfill"
#define BACKFILL_KEY_LEN 8
#define BACKFILL_STEP_NS (4 * 3600ll * 1000000000ll) /* a step: 4 hours (a day holds 6) */
#define BACKFILL_STEPS 4096 /* a run's steps at most (opts.rollup_backfill_steps) */
#define BACKFILL_BUDGET_NS (20ll * 1000000)
#define BACKFILL_SERIES 4096 /* series records looked at per call */

bool ps_rollup_backfill_done(ps_txn_t *txn)
{
    uint8_t done = 0;
    return ps_txn_put(txn, DB_INFO, BACKFILL_KEY, BACKFILL_KEY_LEN, &done, 1, 0, "writing the rollup backfill");
}

/* the start of the step ts falls in (rounded down for negative times too) */
static int64_t step_start(int64_t ts)
{
    int64_t ws = ts / BACKFILL_STEP_NS * BACKFILL_STEP_NS;
    return ws > ts ? ws - BACKFILL_STEP_NS : ws;
}

/* the oldest profile time of sid's chunks at or after the chunk holding from: *at, or false (none) */
static bool next_data(ps_txn_t *txn, uint64_t sid, int64_t from, int64_t *at)
{
    ps_cur_t cur;
    uint8_t kb[16];
    bool found = false;
    if (!ps_cur_open(&cur, txn, DB_CHUNKS, "reading chunks for the rollup backfill"))
        return false;
    ps_key_sid_ts(kb, sid, from);
    if (ps_cur_seek(&cur, kb, 16) && ps_cur_in_series(&cur, sid)) {
        ps_chunk_header_t h;
        if (ps_chunk_header(cur.v.mv_data, cur.v.mv_size, &h) == 0) {
            *at = h.min_ts > from ? h.min_ts : from;
            found = true;
        }
    }
    ps_cur_close(&cur);
    return found;
}

int ps_rollup_backfill(ps_store_writer_t *w, int64_t now_ns, bool *more, ps_err_t *err)
{
    *more = false;
    if (w->s->opts.no_rollups || w->rollfill_done)
        return 0;
    ps_txn_t t, *txn = &t;
    int ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting the rollup backfill");
    if (ret)
        return ret;
    MDB_val v;
    uint64_t sid = 0;
    int64_t from = INT64_MIN;
    if (ps_txn_get(txn, DB_INFO, BACKFILL_KEY, BACKFILL_KEY_LEN, &v, "reading the rollup backfill")) {
        if (v.mv_size == 1) { /* done */
            ps_txn_abort(txn);
            w->rollfill_done = true;
            return 0;
        }
        if (v.mv_size == 16) { /* else damaged: from the start again (what exists is kept) */
            sid = ps_get_be64(v.mv_data);
            from = ps_ts_unkey(ps_get_be64((const uint8_t *)v.mv_data + 8));
        }
    } else if (txn->ret) {
        ret = ps_txn_error(txn, err);
        ps_txn_abort(txn);
        return ret;
    }
    int64_t cutoff = w->s->opts.retention_ns > 0 ? now_ns - w->s->opts.retention_ns : INT64_MIN;
    int64_t t0 = ps_time_mono();
    /* the profile series from sid on, with their newest compacted profile */
    uint64_t sids[64];
    int64_t lasts[64];
    size_t n = 0, looked = 0;
    uint64_t next_sid = 0;
    bool end = true;
    {
        ps_cur_t cur;
        uint8_t kb[8];
        if (!ps_cur_open(&cur, txn, DB_SERIES, "reading series for the rollup backfill")) {
            ret = ps_txn_error(txn, err);
            ps_txn_abort(txn);
            return ret;
        }
        ps_enc_be64(kb, sid);
        for (bool on = ps_cur_seek(&cur, kb, 8); on; on = ps_cur_next(&cur)) {
            if (n == 64 || looked == BACKFILL_SERIES) {
                end = false;
                next_sid = cur.k.mv_size == 8 ? ps_get_be64(cur.k.mv_data) : sid;
                break;
            }
            looked++;
            ps_series_rec_t r;
            if (cur.k.mv_size == 8 && ps_series_rec_decode(cur.v.mv_data, cur.v.mv_size, &r) == 0 &&
                r.kind == PS_SERIES_PROFILE && r.last_chunk_max != INT64_MIN) {
                sids[n] = ps_get_be64(cur.k.mv_data);
                lasts[n++] = r.last_chunk_max;
            }
        }
        ps_cur_close(&cur);
    }
    uint32_t steps = 0, max_steps = w->s->opts.rollup_backfill_steps;
    if (max_steps == 0)
        max_steps = BACKFILL_STEPS;
    for (size_t i = 0; i < n && ret == 0 && !txn->ret; i++) {
        if (sids[i] != sid)
            from = INT64_MIN; /* a series not started: from its oldest chunk */
        sid = sids[i];
        if (from == INT64_MIN && !next_data(txn, sid, INT64_MIN, &from))
            continue;
        for (;;) {
            if (from < cutoff)
                from = cutoff;
            if (from > ROLLUP_LIMIT)
                break;
            int64_t s0 = step_start(from), se = s0 + BACKFILL_STEP_NS, de = s0 - s0 % ps_rollup_window[1];
            if (de > s0)
                de -= ps_rollup_window[1];
            de += ps_rollup_window[1];
            /* the windows closed by the newest compacted profile (lasts[i]); those after it are
             * compaction's */
            if (s0 < -ROLLUP_LIMIT || s0 >= lasts[i])
                break;
            if (steps == max_steps || ps_time_mono() - t0 > BACKFILL_BUDGET_NS)
                goto Save;
            int64_t nxt;
            bool any = next_data(txn, sid, se, &nxt);
            /* leaving its day: the day too (nothing in the rest of it) */
            int64_t last = (!any || nxt >= de) && de <= lasts[i] ? de : se < lasts[i] ? se : lasts[i];
            if ((ret = ps_rollup_update(txn, sid, s0, last, err)) != 0)
                break;
            steps++;
            if (!any)
                break;
            from = nxt;
        }
        from = INT64_MIN;
    }
    if (ret == 0 && txn->ret)
        ret = ps_txn_error(txn, err);
    if (ret) {
        ps_txn_abort(txn);
        return ret;
    }
    if (end) { /* every series: done */
        if (!ps_rollup_backfill_done(txn)) {
            ret = ps_txn_error(txn, err);
            ps_txn_abort(txn);
            return ret;
        }
        return ps_txn_commit(txn, err, "committing the rollup backfill"); /* found done at the next call */
    }
    sid = next_sid; /* the next series record not looked at yet */
    from = INT64_MIN;
Save:
    *more = true;
    {
        uint8_t b[16];
        ps_enc_be64(b, sid);
        ps_enc_be64(b + 8, ps_ts_key(from));
        if (!ps_txn_put(txn, DB_INFO, BACKFILL_KEY, BACKFILL_KEY_LEN, b, 16, 0, "saving the rollup backfill")) {
            ret = ps_txn_error(txn, err);
            ps_txn_abort(txn);
            return ret;
        }
    }
    return ps_txn_commit(txn, err, "committing the rollup backfill");
}
