/*
 * writer.c - the store's writer (store.h ps_store_writer_t): what the one writing thread keeps
 * between its transactions - the caches in front of LMDB, the id counters and the forwarding
 * log's next number (ahead of what is committed while it writes), when each series last got data.
 */
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "internal.h"

void ps_series_caches_clear(ps_store_writer_t *w)
{
    ps_hmap_clear(&w->wc->series_cache);
    ps_hmap_clear(&w->wc->state_index);
    for (size_t i = 0; i < w->wc->nstates; i++)
        free(w->wc->states[i]);
    w->wc->nstates = 0;
    free(w->wc->states); /* its capacity follows the most series ever cached: give it back */
    w->wc->states = NULL;
    w->wc->capstates = 0;
}

void ps_sym_caches_clear(ps_store_writer_t *w)
{
    for (int k = 1; k < SYM_KINDS; k++)
        ps_hmap_clear(&w->wc->sym_cache[k]);
    for (int k = 0; k < 3; k++)
        ps_hmap_clear(&w->wc->sym_words[k]);
    ps_hmap_clear(&w->wc->tree_cache);
    ps_hmap_clear(&w->wc->stack_cache);
    ps_lt_memo_clear(&w->lt_memo);
    ps_series_caches_clear(w);
    ps_float_state_clear(w->wc);
}

/* ---- ps_walls_t ---- */

static inline size_t walls_home(uint64_t sid, size_t cap)
{
    return (size_t)((sid * 0x9e3779b97f4a7c15ull) >> 17) & (cap - 1);
}

/* the slot of sid, or the empty slot where it would go */
static inline size_t walls_find(const ps_walls_t *m, uint64_t sid)
{
    size_t i = walls_home(sid, m->cap);
    while (m->slots[2 * i] != 0 && m->slots[2 * i] != sid)
        i = (i + 1) & (m->cap - 1);
    return i;
}

static void walls_resize(ps_walls_t *m, size_t cap)
{
    uint64_t *old = m->slots;
    size_t ocap = m->cap;
    m->slots = ps_xcalloc(cap, 2 * sizeof(uint64_t));
    m->cap = cap;
    for (size_t i = 0; i < ocap; i++) {
        if (old[2 * i] == 0)
            continue;
        size_t j = walls_find(m, old[2 * i]);
        m->slots[2 * j] = old[2 * i];
        m->slots[2 * j + 1] = old[2 * i + 1];
    }
    free(old);
}

void ps_walls_set(ps_walls_t *m, uint64_t sid, int64_t v)
{
    if (sid == 0) {
        m->count += !m->has_zero;
        m->has_zero = true;
        m->zero = v;
        return;
    }
    if (m->cap == 0 || (m->count + 1) * 4 > m->cap * 3)
        walls_resize(m, m->cap ? m->cap * 2 : 64);
    size_t i = walls_find(m, sid);
    if (m->slots[2 * i] == 0) {
        m->slots[2 * i] = sid;
        m->count++;
    }
    m->slots[2 * i + 1] = (uint64_t)v;
}

bool ps_walls_get(const ps_walls_t *m, uint64_t sid, int64_t *v)
{
    if (sid == 0) {
        if (m->has_zero)
            *v = m->zero;
        return m->has_zero;
    }
    if (m->cap == 0)
        return false;
    size_t i = walls_find(m, sid);
    if (m->slots[2 * i] == 0)
        return false;
    *v = (int64_t)m->slots[2 * i + 1];
    return true;
}

static bool in_sorted(const uint64_t *a, size_t n, uint64_t x)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (a[mid] == x)
            return true;
        if (a[mid] < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return false;
}

void ps_walls_drop(ps_walls_t *m, const uint64_t *drop, size_t ndrop)
{
    ps_walls_t keep = {0};
    if (m->has_zero && !in_sorted(drop, ndrop, 0))
        ps_walls_set(&keep, 0, m->zero);
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[2 * i] != 0 && !in_sorted(drop, ndrop, m->slots[2 * i]))
            ps_walls_set(&keep, m->slots[2 * i], (int64_t)m->slots[2 * i + 1]);
    ps_walls_dispose(m);
    *m = keep;
}

void ps_walls_expire(ps_walls_t *m, int64_t from, int64_t until)
{
    size_t gone = 0;
    for (size_t i = 0; i < m->cap; i++) {
        int64_t v = (int64_t)m->slots[2 * i + 1];
        gone += m->slots[2 * i] != 0 && v >= from && v <= until;
    }
    bool zero = m->has_zero && !(m->zero >= from && m->zero <= until);
    if (gone == 0 && zero == m->has_zero)
        return;
    ps_walls_t keep = {0};
    size_t left = m->count - gone - (m->has_zero && !zero), cap = 64;
    while ((left + 1) * 4 > cap * 3)
        cap *= 2;
    if (left > (size_t)zero)
        walls_resize(&keep, cap); /* sized once for what stays: the table shrinks */
    if (zero)
        ps_walls_set(&keep, 0, m->zero);
    for (size_t i = 0; i < m->cap; i++) {
        int64_t v = (int64_t)m->slots[2 * i + 1];
        if (m->slots[2 * i] != 0 && !(v >= from && v <= until))
            ps_walls_set(&keep, m->slots[2 * i], v);
    }
    ps_walls_dispose(m);
    *m = keep;
}

void ps_walls_dispose(ps_walls_t *m)
{
    free(m->slots);
    memset(m, 0, sizeof(*m));
}

static ps_wcache_t *ps_wcache_new(void)
{
    ps_wcache_t *wc = ps_xcalloc(1, sizeof(*wc));
    for (int k = 1; k < SYM_KINDS; k++)
        ps_hmap_init(&wc->sym_cache[k]);
    for (int k = 0; k < 3; k++)
        ps_hmap_init(&wc->sym_words[k]);
    ps_hmap_init(&wc->tree_cache);
    ps_hmap_init(&wc->stack_cache);
    ps_hmap_init(&wc->series_cache);
    ps_hmap_init(&wc->state_index);
    ps_hmap_init(&wc->float_state_index);
    ps_hmap_init(&wc->float_label_index);
    return wc;
}

static void ps_wcache_free(ps_wcache_t *wc)
{
    if (wc == NULL)
        return;
    for (int k = 1; k < SYM_KINDS; k++)
        ps_hmap_dispose(&wc->sym_cache[k]);
    for (int k = 0; k < 3; k++)
        ps_hmap_dispose(&wc->sym_words[k]);
    ps_hmap_dispose(&wc->tree_cache);
    ps_hmap_dispose(&wc->stack_cache);
    ps_hmap_dispose(&wc->series_cache);
    ps_hmap_dispose(&wc->state_index);
    for (size_t i = 0; i < wc->nstates; i++)
        free(wc->states[i]);
    free(wc->states);
    free(wc->due);
    ps_float_state_clear(wc);
    ps_hmap_dispose(&wc->float_state_index);
    ps_hmap_dispose(&wc->float_label_index);
    ps_buf_dispose(&wc->float_key);
    free(wc->float_states);
    free(wc->float_dirty);
    free(wc->flog_pend);
    free(wc);
}

static void next_encode(const ps_next_ids_t *n, ps_buf_t *b)
{
    for (int k = 1; k < SYM_KINDS; k++)
        ps_put_be64(b, n->sym[k]);
    ps_put_be64(b, n->node);
    ps_put_be64(b, n->series);
}

int ps_store_save_next(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    next_encode(&w->next, &b);
    /* unchanged (a write of known series and symbols): no put, so no page of DB_INFO written and
     * synced by this commit (a quarter of a one-sample commit's pages) */
    MDB_val v;
    bool ok = ps_txn_get(txn, DB_INFO, "next", 4, &v, "reading id counters") && v.mv_size == b.len &&
              memcmp(v.mv_data, b.data, b.len) == 0;
    if (!ok && txn->ret == 0)
        ok = ps_txn_put(txn, DB_INFO, "next", 4, b.data, b.len, 0, "saving id counters");
    ps_buf_dispose(&b);
    return ok ? 0 : ps_txn_error(txn, err);
}

int ps_store_load_next(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    int ret = ps_store_next_read(txn, &w->next, err);
    return ret != 0 ? ret : ps_forward_log_load_next(txn, &w->fwd_next, err);
}

int ps_store_writer_open(ps_store_t *s, ps_store_writer_t **out, ps_err_t *err)
{
    if (s->opts.read_only)
        return ps_err_set(err, PS_EINVAL, "data directory %s is open read-only: it has no writer", s->dir);
    if (atomic_exchange(&s->has_writer, true))
        return ps_err_set(err, PS_EINVAL, "data directory %s has a writer already", s->dir);
    ps_store_writer_t *w = ps_xcalloc(1, sizeof(*w));
    w->s = s;
    w->opened_wall = ps_time_now();
    w->wc = ps_wcache_new();
    ps_txn_t t;
    int ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret == 0) {
        ret = ps_store_load_next(w, &t, err);
        if (ret == 0)
            ret = ps_series_pending_load(w, &t, err);
        ps_txn_abort(&t);
    }
    if (ret != 0) {
        ps_store_writer_close(w);
        return ret;
    }
    *out = w;
    return 0;
}

void ps_store_writer_close(ps_store_writer_t *w)
{
    if (w == NULL)
        return;
    atomic_store(&w->s->has_writer, false);
    ps_wcache_free(w->wc);
    free(w->series_pending.slots);
    ps_buf_dispose(&w->fwd_mask);
    ps_buf_dispose(&w->rec_all);
    ps_buf_dispose(&w->ltimes_key);
    ps_lt_memo_clear(&w->lt_memo);
    ps_buf_dispose(&w->fwd_buf);
    for (size_t i = 0; i < sizeof(w->append_bufs) / sizeof(w->append_bufs[0]); i++)
        ps_buf_dispose(&w->append_bufs[i]);
    ps_walls_dispose(&w->append_wall);
    ps_unsym_free(w);
    free(w);
}
