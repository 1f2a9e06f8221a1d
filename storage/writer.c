/*
 * writer.c - the store's writer (store.h ps_store_writer_t): what the one writing thread keeps
 * between its transactions - the caches in front of LMDB, the id counters and the forwarding
 * log's next number (ahead of what is committed while it writes), when each series last got data.
 */
#include <stdatomic.h>
#include <stdlib.h>

#include "core/timeutil.h"
#include "internal.h"

void ps_sym_caches_clear(ps_store_writer_t *w)
{
    ps_hmap_clear(&w->wc->sym_cache);
    ps_hmap_clear(&w->wc->tree_cache);
    ps_hmap_clear(&w->wc->stack_cache);
    ps_hmap_clear(&w->wc->series_cache);
    ps_hmap_clear(&w->wc->state_index);
    for (size_t i = 0; i < w->wc->nstates; i++)
        free(w->wc->states[i]);
    w->wc->nstates = 0;
    ps_float_state_clear(w->wc);
}

static ps_wcache_t *ps_wcache_new(void)
{
    ps_wcache_t *wc = ps_xcalloc(1, sizeof(*wc));
    ps_hmap_init(&wc->sym_cache);
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
    ps_hmap_dispose(&wc->sym_cache);
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
    ps_buf_dispose(&wc->sym_key);
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
    bool ok = ps_txn_put(txn, DB_INFO, "next", 4, b.data, b.len, 0, "saving id counters");
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
    ps_hmap_init(&w->append_wall);
    ps_txn_t t;
    int ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret == 0) {
        ret = ps_store_load_next(w, &t, err);
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
    ps_buf_dispose(&w->fwd_mask);
    ps_buf_dispose(&w->rec_all);
    ps_buf_dispose(&w->fwd_buf);
    ps_hmap_dispose(&w->append_wall);
    ps_unsym_free(w);
    free(w);
}
