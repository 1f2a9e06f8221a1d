/*
 * api_settings.c - settings.v1.SettingsService over Connect (what Grafana's flame graph and
 * Profiles Drilldown read and write: Get, Set, Delete), with Pyroscope's semantics: Get lists
 * every setting by name (none stored: an empty list); Set stores a setting, its modifiedAt the
 * server's clock when not positive, and refuses (already_exists) one older than what is stored;
 * Delete removes a setting (none stored: no error) unless it was modified after now. Set and
 * Delete run on the writer thread (storage's settings table, docs/FORMAT.md "Settings"); the
 * answer follows the commit. profstore has one tenant: every caller shares the table.
 */
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "core/timeutil.h"
#include "ingest/ingest.h"
#include "internal.h"
#include "proto/querier.h"
#include "proto/settings.h"

/* the decoding budget: a setting's strings twice and their structs, plus 64 KiB */
static size_t budget_of(const ps_connect_call_t *c)
{
    return c->body_len * 4 + ((size_t)64 << 10);
}

typedef struct get_ctx {
    ps_arena_t *a;
    ps_st_setting_t *v;
    size_t n, cap;
} get_ctx_t;

static int on_setting(void *ctx, const ps_store_setting_t *st)
{
    get_ctx_t *g = ctx;
    if (g->n == g->cap) {
        g->cap = g->cap ? g->cap * 2 : 16;
        ps_st_setting_t *nv = ps_arena_alloc(g->a, g->cap * sizeof(*nv));
        if (g->n)
            memcpy(nv, g->v, g->n * sizeof(*nv));
        g->v = nv;
    }
    g->v[g->n++] = (ps_st_setting_t){.name = ps_arena_strndup(g->a, st->name, st->nlen), .nlen = st->nlen,
                                     .value = ps_arena_strndup(g->a, st->value, st->vlen), .vlen = st->vlen,
                                     .modified_ms = st->modified_ms};
    return 0;
}

int ps_connect_settings_get(ps_connect_call_t *c)
{
    ps_err_t err;
    get_ctx_t g = {.a = c->arena};
    int ret = ps_st_decode_get(c->codec, c->body, c->body_len, c->arena, budget_of(c), &err);
    if (ret == 0)
        ret = ps_store_settings(c->srv->store, on_setting, &g, &err);
    if (ret != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code ? err.code : ret), err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_st_encode_get(c->codec, g.v, g.n, c->arena, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

/* A Set or Delete handed to the writer. */
typedef struct put {
    ps_connect_call_t *c;
    ps_wreq_t w;
    ps_st_setting_t s;
} put_t;

/* on the loop, once the writer committed (or failed) */
static void on_put_finish(ps_task_t *t)
{
    put_t *p = t->finish_arg;
    ps_connect_call_t *c = p->c;
    if (p->w.status != 0) {
        ps_connect_error(c, ps_connect_code_of(p->w.status), p->w.err.msg);
        return;
    }
    ps_buf_t b = PS_BUF_INIT;
    if (p->w.setting_del)
        ps_st_encode_delete(c->codec, &b);
    else
        ps_st_encode_set(c->codec, &p->s, &b);
    ps_connect_reply_take(c, &b);
}

static int submit(ps_connect_call_t *c, put_t *p, bool del)
{
    ps_err_t err;
    p->c = c;
    p->w.kind = PS_WREQ_SETTING;
    p->w.setting = (ps_store_setting_t){.name = p->s.name, .nlen = p->s.nlen, .value = p->s.value,
                                        .vlen = p->s.vlen, .modified_ms = p->s.modified_ms};
    p->w.setting_del = del;
    /* the checks the store makes, answered before queueing */
    if (p->s.nlen == 0 || p->s.nlen > PS_SETTING_NAME_MAX || (!del && p->s.vlen > PS_SETTING_VALUE_MAX)) {
        if (p->s.nlen == 0)
            ps_err_set(&err, PS_EINVAL, del ? "no setting name provided" : "setting.name: missing");
        else if (p->s.nlen > PS_SETTING_NAME_MAX)
            ps_err_set(&err, PS_EINVAL, "%sname: %zu bytes, more than %d", del ? "" : "setting.", p->s.nlen,
                       PS_SETTING_NAME_MAX);
        else
            ps_err_set(&err, PS_EINVAL, "setting.value: %zu bytes, more than %d", p->s.vlen, PS_SETTING_VALUE_MAX);
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, err.msg);
        return 0;
    }
    ps_connect_submit(c, &p->w, on_put_finish, p);
    return 0;
}

int ps_connect_settings_set(ps_connect_call_t *c)
{
    ps_err_t err;
    bool has;
    put_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    if (ps_st_decode_set(c->codec, c->body, c->body_len, c->arena, budget_of(c), &p->s, &has, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    if (!has) {
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, "no setting values provided");
        return 0;
    }
    if (p->s.modified_ms <= 0)
        p->s.modified_ms = ps_time_now() / 1000000;
    return submit(c, p, false);
}

int ps_connect_settings_delete(ps_connect_call_t *c)
{
    ps_err_t err;
    put_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    if (ps_st_decode_delete(c->codec, c->body, c->body_len, c->arena, budget_of(c), &p->s, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    p->s.modified_ms = ps_time_now() / 1000000;
    return submit(c, p, true);
}
