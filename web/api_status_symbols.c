/*
 * api_status_symbols.c - GET /api/v1/status/symbols: the build ids whose frames were stored without
 * symbols (query/symstatus.h), with how many samples they hold, in Prometheus' envelope.
 * Parameters: state (missing, the default; available; all), limit (1 to 10,000, default 100),
 * start and end (Prometheus' times; default: everything retention keeps).
 */
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "query/symstatus.h"

static const char *source_name(int src)
{
    switch (src) {
    case 0: return "";
    case 1: return "dir";
    case 2: return "upload";
    case 3: return "debuginfod";
    default: return "other";
    }
}

static void time_field(ps_json_t *j, const char *key, int64_t ns)
{
    char t[64];
    ps_format_time(ns, t, sizeof(t));
    ps_json_key(j, key);
    ps_json_cstr(j, t);
}

static void write_status(ps_json_t *j, const ps_symstatus_t *st)
{
    ps_json_obj(j);
    ps_json_key(j, "missing");
    ps_json_obj(j);
    ps_json_key(j, "buildIds");
    ps_json_uint(j, st->missing_build_ids);
    ps_json_key(j, "samples");
    ps_json_uint(j, st->missing_samples);
    ps_json_end(j);
    ps_json_key(j, "available");
    ps_json_obj(j);
    ps_json_key(j, "buildIds");
    ps_json_uint(j, st->available_build_ids);
    ps_json_key(j, "samples");
    ps_json_uint(j, st->available_samples);
    ps_json_end(j);
    ps_json_key(j, "buildIds");
    ps_json_arr(j);
    for (uint32_t i = 0; i < st->n; i++) {
        const ps_symstatus_entry_t *e = &st->entries[i];
        ps_json_obj(j);
        ps_json_key(j, "buildId");
        ps_json_cstr(j, e->build_id);
        ps_json_key(j, "files");
        ps_json_arr(j);
        for (uint32_t k = 0; k < e->nfiles; k++)
            ps_json_cstr(j, e->files[k]);
        ps_json_end(j);
        ps_json_key(j, "samples");
        ps_json_uint(j, e->samples);
        ps_json_key(j, "profiles");
        ps_json_uint(j, e->profiles);
        ps_json_key(j, "values");
        ps_json_arr(j);
        for (uint32_t k = 0; k < e->ntypes; k++) {
            ps_json_obj(j);
            ps_json_key(j, "type");
            ps_json_cstr(j, e->types[k]);
            ps_json_key(j, "total");
            ps_json_int(j, e->totals[k]);
            ps_json_end(j);
        }
        ps_json_end(j);
        time_field(j, "firstSeen", e->first_ts);
        time_field(j, "lastSeen", e->last_ts);
        ps_json_key(j, "symbols");
        ps_json_cstr(j, e->source > 0 ? "available" : "missing");
        ps_json_key(j, "source");
        ps_json_cstr(j, source_name(e->source));
        ps_json_end(j);
    }
    ps_json_end(j);
    ps_json_end(j);
}

static int params(ps_qctx_t *c, ps_symstatus_state_t *state, uint32_t *limit, int64_t *start, int64_t *end)
{
    const ps_param_t *v = ps_params_get(&c->params, "limit");
    *limit = PS_SYMSTATUS_LIMIT_DEFAULT;
    if (v != NULL && v->vlen > 0) {
        char *e;
        long long x = strtoll(v->value, &e, 10);
        if (*e || x < 1 || x > PS_SYMSTATUS_LIMIT_MAX)
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"limit\": expected an integer from 1 to %d, got \"%.32s\"",
                              PS_SYMSTATUS_LIMIT_MAX, v->value);
        *limit = (uint32_t)x;
    }
    *state = PS_SYMSTATUS_MISSING;
    v = ps_params_get(&c->params, "state");
    if (v != NULL && v->vlen > 0) {
        if (strcmp(v->value, "missing") == 0)
            *state = PS_SYMSTATUS_MISSING;
        else if (strcmp(v->value, "available") == 0)
            *state = PS_SYMSTATUS_AVAILABLE;
        else if (strcmp(v->value, "all") == 0)
            *state = PS_SYMSTATUS_ALL;
        else
            return ps_err_set(&c->err, PS_EINVAL,
                              "invalid parameter \"state\": expected missing, available or all, got \"%.32s\"", v->value);
    }
    int64_t now = ps_time_now();
    int ret = ps_param_time(&c->params, "start", now, INT64_MIN, start, &c->err);
    if (ret == 0)
        ret = ps_param_time(&c->params, "end", now, INT64_MAX, end, &c->err);
    if (ret == 0 && *start > *end)
        ret = ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"end\": end timestamp must not be before start time");
    return ret;
}

int ps_api_status_symbols(ps_task_t *task)
{
    ps_qctx_t c;
    ps_symstatus_state_t state = PS_SYMSTATUS_MISSING;
    uint32_t limit = PS_SYMSTATUS_LIMIT_DEFAULT;
    int64_t start = INT64_MIN, end = INT64_MAX;
    ps_symstatus_t st;
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = params(&c, &state, &limit, &start, &end);
    if (ret == 0)
        ret = ps_query_symstatus(c.reader, start, end, state, limit, c.srv->symbols_has, c.srv->symbols_has_ctx,
                                 &c.arena, &st, &c.err);
    if (ret == 0) {
        ps_json_t j;
        ps_json_envelope(&j, &c.out);
        write_status(&j, &st);
        ps_json_envelope_close(&j);
        ps_task_send(task, 200, "application/json", c.out.data, c.out.len);
    }
    return ps_qctx_finish(&c, ret);
}
