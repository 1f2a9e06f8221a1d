/*
 * api_adhoc.c - adhocprofiles.v1.AdHocProfileService over Connect (what Grafana's Profiles
 * Drilldown's ad hoc view and profstore's own UI call: Upload, Get, List, Diff), with Pyroscope's
 * semantics (docs/api.md "Ad hoc profiles"): Upload takes a name and a base64 file (pprof, gzipped
 * or not, Pyroscope's flamebearer JSON, perf script output or folded stacks), stores it as sent under a new id (a ULID, '-', the name) and answers
 * as Get does; Get answers the flame graph of one of its sample types (profile_type; absent: the
 * first) as Pyroscope's flamebearer JSON in a string; List: every id, newest first; Diff: the diff
 * flame graph of two uploads for a sample type both have. The file is decoded again at each Get
 * (the ingest room's ps_adhoc_decode), rendered by src/render as /pyroscope/render is. Upload runs
 * on the writer thread (storage's adhoc database); the answer follows the commit.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "connect.h"
#include "core/encode.h"
#include "core/timeutil.h"
#include "ingest/ingest.h"
#include "internal.h"
#include "proto/adhoc.h"
#include "proto/querier.h"
#include "query/querier.h"
#include "render/render.h"

/* the decoding budget: the request's strings twice and their structs, plus 64 KiB */
static size_t budget_of(const ps_connect_call_t *c)
{
    return c->body_len * 4 + ((size_t)64 << 10);
}

static int fail(ps_connect_call_t *c, int code, const ps_err_t *err)
{
    ps_connect_error(c, ps_connect_code_of(err->code ? err->code : code), err->msg);
    return 0;
}

static int check_id(const char *id, ps_err_t *err)
{
    if (!ps_adhoc_id_valid(id))
        return ps_err_set(err, PS_EINVAL, "id '%.300s' is invalid: can only contain [a-zA-Z0-9_-.]%s", id,
                          strlen(id) > PS_ADHOC_ID_MAX ? ", at most 256 characters" : "");
    return 0;
}

int ps_adhoc_load(ps_server_t *srv, const char *id, ps_arena_t *arena, ps_store_adhoc_t *st, ps_profile_t *p,
                  ps_adhoc_format_t *fmt, ps_fbjson_meta_t *meta, ps_err_t *err)
{
    int ret = check_id(id, err);
    if (ret == 0)
        ret = ps_store_adhoc_get(srv->store, id, strlen(id), arena, st, err);
    if (ret != 0)
        return ret;
    ps_adhoc_format_t f;
    if ((ret = ps_adhoc_decode(st->data, st->len, &srv->opts.limits, arena, p, &f, meta, err)) != 0)
        return ps_err_prefix(err, "stored profile %s", id);
    if (fmt)
        *fmt = f;
    return 0;
}

/* the name part of an id (after the ULID and its '-') */
static const char *name_of(const char *id)
{
    const char *d = strchr(id, '-');
    return d ? d + 1 : "";
}

/* Pyroscope's flamebearer JSON of type vi of p (a diff: p is a pair), without the newline; the
 * metadata Pyroscope's converters give each format: a flamebearer JSON upload its own (jm), text
 * formats spyName "unknown" */
static int flamebearer(const ps_profile_t *p, uint32_t vi, int diff, int64_t max_nodes, ps_adhoc_format_t fmt,
                       const ps_fbjson_meta_t *jm, ps_arena_t *a, ps_buf_t *out, ps_err_t *err)
{
    ps_flamegraph_t fg;
    if (fmt == PS_ADHOC_JSON && jm != NULL && max_nodes > 0) /* its "other" nodes are merges: not counted */
        max_nodes += jm->other_nodes;
    int ret = ps_flamegraph_build(p, vi, diff, max_nodes, a, &fg, err);
    if (ret != 0)
        return ret;
    ps_str_t t = ps_profile_str(p, p->sample_types[vi].type), u = ps_profile_str(p, p->sample_types[vi].unit);
    ps_fb_meta_t m;
    ps_flamebearer_meta(ps_arena_strndup(a, t.ptr, t.len), ps_arena_strndup(a, u.ptr, u.len),
                        fmt == PS_ADHOC_FOLDED || fmt == PS_ADHOC_PERF ? "unknown" : NULL, &m);
    if (fmt == PS_ADHOC_JSON && jm != NULL) {
        m.name = jm->name;
        m.units = jm->units;
        m.spy_name = jm->spy_name;
        m.sample_rate = jm->sample_rate;
    }
    ps_flamebearer_json(&fg, &m, NULL, NULL, 0, out);
    if (out->len && out->data[out->len - 1] == '\n')
        out->len--;
    ps_buf_putc(out, '\0');
    return 0;
}

/* The Get answer of a decoded profile (type: the asked one, NULL: the first). */
static int answer_get(ps_connect_call_t *c, const char *id, int64_t uploaded_ms, const ps_profile_t *p,
                      ps_adhoc_format_t fmt, const ps_fbjson_meta_t *jm, const char *type, int64_t max_nodes,
                      ps_err_t *err)
{
    int vi = ps_adhoc_type_index(p, type);
    if (vi < 0)
        vi = 0; /* Pyroscope: an unknown profile_type answers the first */
    ps_buf_t fb = PS_BUF_INIT;
    int ret = flamebearer(p, (uint32_t)vi, 0, max_nodes, fmt, jm, c->arena, &fb, err);
    if (ret == 0) {
        const char **types = ps_adhoc_types(p, c->arena);
        ps_ah_profile_t r = {.id = id, .name = name_of(id), .uploaded_ms = uploaded_ms, .profile_type = types[vi],
                             .profile_types = types, .ntypes = p->ntypes, .flamebearer = (const char *)fb.data};
        ps_buf_t b = PS_BUF_INIT;
        ps_ah_encode_get(c->codec, &r, &b);
        ps_connect_reply_take(c, &b);
    }
    ps_buf_dispose(&fb);
    return ret;
}

/* ---- Upload ---- */

typedef struct up {
    ps_connect_call_t *c;
    ps_wreq_t w;
    ps_profile_t p;
    ps_adhoc_format_t fmt;
    ps_fbjson_meta_t jm;
    int64_t max_nodes;
} up_t;

static void on_up_finish(ps_task_t *t)
{
    up_t *u = t->finish_arg;
    ps_connect_call_t *c = u->c;
    ps_err_t err;
    if (u->w.status != 0) { /* a file larger than --adhoc.max-bytes: never storable, the client's */
        if (u->w.err.code == PS_ETOOBIG)
            ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, u->w.err.msg);
        else
            fail(c, u->w.status, &u->w.err);
        return;
    }
    if (answer_get(c, u->w.adhoc.id, u->w.adhoc.uploaded_ms, &u->p, u->fmt, &u->jm, NULL, u->max_nodes, &err) != 0)
        fail(c, PS_EINTERNAL, &err);
}

int ps_connect_adhoc_upload(ps_connect_call_t *c)
{
    ps_err_t err;
    ps_ah_req_t r;
    up_t *u = ps_arena_calloc(c->arena, 1, sizeof(*u));
    u->c = c;
    if (c->srv->opts.agent) { /* routes.c refuses the reads: an upload could never be read back */
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, "agent mode: ad hoc profiles are not kept (queries go to the "
                                                         "engine this profstore forwards to)");
        return 0;
    }
    int ret = ps_ah_decode(c->codec, PS_AH_UPLOAD, c->body, c->body_len, c->arena, budget_of(c), &r, &err);
    if (ret == 0)
        ret = ps_querier_max_nodes(r.has_max_nodes, r.max_nodes, &u->max_nodes, &err);
    const char *name = NULL;
    if (ret == 0)
        ret = ps_adhoc_name(r.name, strlen(r.name), c->arena, &name, &err);
    uint8_t *data = NULL;
    long n = 0;
    if (ret == 0) {
        size_t bad = 0;
        data = ps_arena_alloc(c->arena, PS_BASE64_DECODED_MAX(r.profile_len) + 1);
        n = ps_base64_decode(r.profile, r.profile_len, PS_B64_STRICT, data, &bad);
        if (n < 0)
            ret = bad < r.profile_len
                      ? ps_err_set(&err, PS_EINVAL, "profile: not base64: character %zu (0x%02x) is outside the standard "
                                   "alphabet", bad, (unsigned char)r.profile[bad])
                      : ps_err_set(&err, PS_EINVAL, "profile: not base64: %zu characters, not a padded multiple of 4",
                                   r.profile_len);
        else if (n == 0)
            ret = ps_err_set(&err, PS_EINVAL, "profile: missing (the file, base64)");
    }
    if (ret == 0)
        ret = ps_adhoc_decode(data, (size_t)n, &c->srv->opts.limits, c->arena, &u->p, &u->fmt, &u->jm, &err);
    if (ret != 0) {
        /* every refusal of the file is the client's: invalid_argument (400), a gzip bomb too */
        ps_connect_error(c, err.code == PS_ETOOBIG || err.code == PS_EINVAL ? PS_CONNECT_INVALID_ARGUMENT
                                                                          : ps_connect_code_of(err.code),
                         err.msg);
        return 0;
    }
    int64_t now_ms = ps_time_now() / 1000000;
    const char *id = ps_adhoc_id(now_ms, name, c->arena);
    u->w.kind = PS_WREQ_ADHOC;
    u->w.adhoc = (ps_store_adhoc_t){.id = id, .idlen = strlen(id), .uploaded_ms = now_ms, .data = data, .len = (size_t)n};
    ps_connect_submit(c, &u->w, on_up_finish, u);
    return 0;
}

/* ---- Get, List, Diff ---- */

int ps_connect_adhoc_get(ps_connect_call_t *c)
{
    ps_err_t err;
    ps_ah_req_t r;
    int64_t max_nodes = 0;
    ps_store_adhoc_t st;
    ps_profile_t p;
    int ret = ps_ah_decode(c->codec, PS_AH_GET, c->body, c->body_len, c->arena, budget_of(c), &r, &err);
    if (ret == 0)
        ret = ps_querier_max_nodes(r.has_max_nodes, r.max_nodes, &max_nodes, &err);
    ps_adhoc_format_t fmt = PS_ADHOC_PPROF;
    ps_fbjson_meta_t jm;
    if (ret == 0)
        ret = ps_adhoc_load(c->srv, r.id, c->arena, &st, &p, &fmt, &jm, &err);
    if (ret == 0)
        ret = answer_get(c, st.id, st.uploaded_ms, &p, fmt, &jm, r.profile_type, max_nodes, &err);
    return ret != 0 ? fail(c, ret, &err) : 0;
}

typedef struct list_ctx {
    ps_arena_t *a;
    ps_ah_profile_t *v;
    size_t n, cap;
} list_ctx_t;

static int on_adhoc(void *ctx, const ps_store_adhoc_t *a)
{
    list_ctx_t *l = ctx;
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        ps_ah_profile_t *nv = ps_arena_alloc(l->a, l->cap * sizeof(*nv));
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(*nv));
        l->v = nv;
    }
    const char *id = ps_arena_strndup(l->a, a->id, a->idlen);
    l->v[l->n++] = (ps_ah_profile_t){.id = id, .name = name_of(id), .uploaded_ms = a->uploaded_ms};
    return 0;
}

int ps_connect_adhoc_list(ps_connect_call_t *c)
{
    ps_err_t err;
    ps_ah_req_t r;
    list_ctx_t l = {.a = c->arena};
    int ret = ps_ah_decode(c->codec, PS_AH_LIST, c->body, c->body_len, c->arena, budget_of(c), &r, &err);
    if (ret == 0)
        ret = ps_store_adhoc_list(c->srv->store, on_adhoc, &l, &err);
    if (ret != 0)
        return fail(c, ret, &err);
    /* newest first (the store lists oldest first) */
    for (size_t i = 0; i < l.n / 2; i++) {
        ps_ah_profile_t t = l.v[i];
        l.v[i] = l.v[l.n - 1 - i];
        l.v[l.n - 1 - i] = t;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_ah_encode_list(c->codec, l.v, l.n, c->arena, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

/* Go's %v of a []string: "[a b c]" */
static const char *go_list(const char *const *v, size_t n, ps_arena_t *a)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_putc(&b, '[');
    for (size_t i = 0; i < n; i++) {
        if (i)
            ps_buf_putc(&b, ' ');
        ps_buf_append(&b, v[i], strlen(v[i]));
    }
    ps_buf_putc(&b, ']');
    const char *s = ps_arena_strndup(a, (const char *)b.data, b.len);
    ps_buf_dispose(&b);
    return s;
}

int ps_adhoc_diff_pair(ps_server_t *srv, const char *left_id, const char *right_id, const char *type, ps_arena_t *a,
                       ps_profile_t *pair, const char ***common, size_t *ncommon, ps_err_t *err)
{
    ps_store_adhoc_t ls, rs;
    ps_profile_t l, r;
    int ret = check_id(left_id, err);
    if (ret == 0)
        ret = check_id(right_id, err);
    if (ret == 0 && (ret = ps_adhoc_load(srv, left_id, a, &ls, &l, NULL, NULL, err)) != 0 && err->code == PS_ENOTFOUND)
        ps_err_set(err, PS_ENOTFOUND, "left profile %s not found", left_id);
    if (ret == 0 && (ret = ps_adhoc_load(srv, right_id, a, &rs, &r, NULL, NULL, err)) != 0 && err->code == PS_ENOTFOUND)
        ps_err_set(err, PS_ENOTFOUND, "right profile %s not found", right_id);
    if (ret != 0)
        return ret;
    const char **lt = ps_adhoc_types(&l, a), **rt = ps_adhoc_types(&r, a);
    const char **cv = ps_arena_alloc(a, (l.ntypes + 1) * sizeof(*cv));
    size_t nc = 0;
    for (uint32_t i = 0; i < l.ntypes; i++)
        if (ps_adhoc_type_index(&r, lt[i]) >= 0)
            cv[nc++] = lt[i];
    if (nc == 0)
        return ps_err_set(err, PS_EINVAL, "no common profile types between left (%s) and right (%s)",
                          go_list(lt, l.ntypes, a), go_list(rt, r.ntypes, a));
    int li = ps_adhoc_type_index(&l, type), ri = ps_adhoc_type_index(&r, type);
    li = li < 0 ? 0 : li;
    ri = ri < 0 ? 0 : ri;
    if (strcmp(lt[li], rt[ri]) != 0)
        return ps_err_set(err, PS_EINVAL, "profile type mismatch: left profile uses '%s', right profile uses '%s'; "
                          "please specify a profile type from the common types: %s", lt[li], rt[ri], go_list(cv, nc, a));
    ps_adhoc_pair(&l, (uint32_t)li, &r, (uint32_t)ri, a, pair);
    *common = cv;
    *ncommon = nc;
    return 0;
}

int ps_connect_adhoc_diff(ps_connect_call_t *c)
{
    ps_err_t err;
    ps_ah_req_t r;
    int64_t max_nodes = 0;
    ps_profile_t pair;
    const char **common = NULL;
    size_t nc = 0;
    int ret = ps_ah_decode(c->codec, PS_AH_DIFF, c->body, c->body_len, c->arena, budget_of(c), &r, &err);
    if (ret == 0)
        ret = ps_querier_max_nodes(r.has_max_nodes, r.max_nodes, &max_nodes, &err);
    if (ret == 0)
        ret = ps_adhoc_diff_pair(c->srv, r.left_id, r.right_id, r.profile_type, c->arena, &pair, &common, &nc, &err);
    ps_buf_t fb = PS_BUF_INIT;
    if (ret == 0)
        ret = flamebearer(&pair, 0, 1, max_nodes, PS_ADHOC_PPROF, NULL, c->arena, &fb, &err);
    if (ret == 0) {
        ps_buf_t b = PS_BUF_INIT;
        ps_ah_encode_diff(c->codec, common, nc, (const char *)fb.data, &b);
        ps_connect_reply_take(c, &b);
    }
    ps_buf_dispose(&fb);
    return ret != 0 ? fail(c, ret, &err) : 0;
}
