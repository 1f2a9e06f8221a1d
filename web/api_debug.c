/*
 * api_debug.c - storage-level reads without the query language (which comes with selectors):
 *   GET /api/v1/debug/series[?id=SID]       every series with the timestamps and totals of its profiles,
 *                                           or (a float series, "kind":"float") its samples as
 *                                           [t_ms, "value", "value's bits in hex"]
 *   GET /api/v1/debug/profile?id=SID&time=T one stored profile, rebuilt as gzipped pprof (with its
 *                                           samples' span labels, query.h ps_query_span_rows)
 * Used by the durability and round-trip tests, and handy when looking at a data directory.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/fmt.h"
#include "core/json.h"
#include "core/timeutil.h"
#include "render/render.h"
#include "task.h"
#include "query/query.h"
#include "internal.h"

typedef struct list_ctx {
    ps_reader_t *r;
    ps_json_t *j;
    uint64_t only;
    ps_err_t *err;
} list_ctx_t;

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    ps_json_t *j = ((list_ctx_t *)ctx)->j;
    ps_json_obj(j);
    ps_json_key(j, "ts");
    ps_json_int(j, p->ts);
    ps_json_key(j, "duration");
    ps_json_int(j, p->duration);
    ps_json_key(j, "period");
    ps_json_int(j, p->period);
    ps_json_key(j, "total");
    ps_json_int(j, p->total);
    ps_json_end(j);
    return 0;
}

static int on_float_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    ps_json_t *j = ((list_ctx_t *)ctx)->j;
    for (size_t i = 0; i < n; i++) {
        char v[64], bits[24];
        uint64_t b;
        memcpy(&b, &s[i].v, 8);
        ps_fmt_float(s[i].v, v, sizeof(v));
        snprintf(bits, sizeof(bits), "%016llx", (unsigned long long)b);
        ps_json_arr(j);
        ps_json_int(j, s[i].t);
        ps_json_cstr(j, v);
        ps_json_cstr(j, bits);
        ps_json_end(j);
    }
    return 0;
}

static int on_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    list_ctx_t *c = ctx;
    if (c->only && sid != c->only)
        return 0;
    ps_json_obj(c->j);
    ps_json_key(c->j, "id");
    ps_json_uint(c->j, sid);
    ps_json_key(c->j, "labels");
    ps_labels_json(ls, c->j);
    ps_series_kind_t kind = PS_SERIES_PROFILE;
    int ret = ps_reader_series_kind(c->r, sid, &kind, c->err);
    if (ret)
        return ret;
    if (kind == PS_SERIES_FLOAT) {
        ps_json_key(c->j, "kind");
        ps_json_cstr(c->j, "float");
        ps_json_key(c->j, "samples");
        ps_json_arr(c->j);
        ret = ps_reader_samples(c->r, sid, INT64_MIN, INT64_MAX, on_float_samples, c, c->err);
        ps_json_end(c->j);
        ps_json_end(c->j);
        return ret;
    }
    ps_json_key(c->j, "profiles");
    ps_json_arr(c->j);
    ret = ps_reader_profiles(c->r, sid, INT64_MIN, INT64_MAX, true, on_profile, c, c->err);
    ps_json_end(c->j);
    ps_json_end(c->j);
    return ret;
}

int ps_api_debug_series(ps_task_t *task)
{
    ps_server_t *s = task->srv;
    ps_arena_t a = PS_ARENA_INIT;
    ps_params_t params;
    ps_err_t err;
    ps_reader_t *r = NULL;
    ps_buf_t b = PS_BUF_INIT;
    ps_err_clear(&err);
    if (ps_task_params(task, false, &params, &err) != 0)
        goto Fail;
    ps_json_t j;
    list_ctx_t c = {.j = &j, .err = &err};
    const ps_param_t *id = ps_params_get(&params, "id");
    if (id != NULL) {
        char *end;
        c.only = strtoull(id->value, &end, 10);
        if (*end || c.only == 0) {
            ps_err_set(&err, PS_EINVAL, "id: expected a series id, got \"%.32s\"", id->value);
            goto Fail;
        }
    }
    if (ps_reader_begin(s->store, &r, &err) != 0)
        goto Fail;
    ps_reader_unclamp(r); /* what is stored, retention or not */
    c.r = r;
    ps_json_envelope(&j, &b);
    ps_json_arr(&j);
    int ret = ps_reader_series_foreach(r, on_series, &c, &err);
    if (ret != 0) {
        if (err.code == 0)
            ps_err_set(&err, ret, "reading series: %s", ps_strerror(ret));
        goto Fail;
    }
    ps_json_end(&j);
    ps_json_envelope_close(&j);
    ps_task_send(task, 200, "application/json", b.data, b.len);
    goto Exit;
Fail:
    ps_task_error(task, err.code ? err.code : PS_EINTERNAL, err.msg);
Exit:
    ps_reader_end(r);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    return 0;
}

typedef struct one_ctx {
    int64_t ts;
    int found;
    ps_arena_t *arena;
    ps_stored_profile_t p;
} one_ctx_t;

static int on_one(void *ctx, const ps_stored_profile_t *p)
{
    one_ctx_t *c = ctx;
    c->found = 1;
    c->p = *p;
    uint64_t *nodes = ps_arena_alloc(c->arena, (p->n + 1) * sizeof(uint64_t));
    int64_t *values = ps_arena_alloc(c->arena, (p->n + 1) * sizeof(int64_t));
    memcpy(nodes, p->nodes, p->n * sizeof(uint64_t));
    memcpy(values, p->values, p->n * sizeof(int64_t));
    c->p.nodes = nodes;
    c->p.values = values;
    return 1;
}

int ps_api_debug_profile(ps_task_t *task)
{
    ps_server_t *s = task->srv;
    ps_arena_t a = PS_ARENA_INIT;
    ps_params_t params;
    ps_err_t err;
    ps_reader_t *r = NULL;
    ps_buf_t b = PS_BUF_INIT;
    ps_err_clear(&err);
    if (ps_task_params(task, false, &params, &err) != 0)
        goto Fail;
    const ps_param_t *id = ps_params_get(&params, "id"), *t = ps_params_get(&params, "time");
    if (id == NULL || t == NULL) {
        ps_err_set(&err, PS_EINVAL, "parameters id (series id) and time (profile timestamp) are required");
        goto Fail;
    }
    char *end;
    uint64_t sid = strtoull(id->value, &end, 10);
    if (*end || sid == 0) {
        ps_err_set(&err, PS_EINVAL, "id: expected a series id, got \"%.32s\"", id->value);
        goto Fail;
    }
    int64_t ts;
    /* an all-digit time of 19 digits is taken as ns, as stored */
    if (t->vlen >= 16 && strspn(t->value, "0123456789-") == t->vlen)
        ts = strtoll(t->value, NULL, 10);
    else if (ps_parse_time(t->value, t->vlen, ps_time_now(), &ts, &err) != 0)
        goto Fail;
    if (ps_reader_begin(s->store, &r, &err) != 0)
        goto Fail;
    ps_reader_unclamp(r); /* what is stored, retention or not */
    ps_labels_t ls;
    int lrc = ps_reader_series_labels(r, sid, &a, &ls, &err);
    if (lrc == PS_ENOTFOUND)
        ps_err_set(&err, PS_ENOTFOUND, "series %llu does not exist", (unsigned long long)sid);
    if (lrc != 0)
        goto Fail;
    const ps_label_pair_t *nm = ps_labels_get(&ls, "__name__");
    const char *parts[6];
    if (nm == NULL || ps_profile_type_parts(nm->value, &a, parts) != 0) {
        ps_err_set(&err, PS_ECORRUPT, "series %llu has no valid profile type", (unsigned long long)sid);
        goto Fail;
    }
    one_ctx_t c = {.ts = ts, .arena = &a};
    int ret = ps_reader_profiles(r, sid, ts, ts, false, on_one, &c, &err);
    if (ret < 0)
        goto Fail;
    if (!c.found) {
        ps_err_set(&err, PS_ENOTFOUND, "series %llu has no profile at %lld ns", (unsigned long long)sid, (long long)ts);
        goto Fail;
    }
    ps_profile_t prof;
    const char *st[2] = {parts[1], parts[2]}, *pt[2] = {parts[3], parts[4]};
    /* with its span labels, as stored beside the stacks */
    size_t nrows = c.p.n;
    uint64_t *nodes = ps_xmalloc((nrows + 1) * sizeof(uint64_t));
    int64_t *vals = ps_xmalloc((nrows + 1) * sizeof(int64_t));
    memcpy(nodes, c.p.nodes, nrows * sizeof(uint64_t));
    memcpy(vals, c.p.values, nrows * sizeof(int64_t));
    const ps_span_part_t **lab = NULL;
    ret = ps_query_span_rows(r, &sid, 1, ts, &nodes, &vals, &nrows, &lab, &a, &err);
    if (ret == 0)
        ret = ps_reader_materialize(r, nodes, vals, nrows, 1, st, pt, &a, &prof, &err);
    if (ret == 0 && lab != NULL)
        ps_query_span_labels(&prof, lab, &a);
    free(nodes);
    free(vals);
    free(lab);
    if (ret != 0)
        goto Fail;
    prof.time_nanos = c.p.ts;
    prof.duration_nanos = c.p.duration;
    prof.period = c.p.period;
    if (ps_pprof_encode(&prof, 1, &b, &err) != 0)
        goto Fail;
    ps_task_send(task, 200, "application/octet-stream", b.data, b.len);
    goto Exit;
Fail:
    ps_task_error(task, err.code ? err.code : PS_EINTERNAL, err.msg);
Exit:
    ps_reader_end(r);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    return 0;
}
