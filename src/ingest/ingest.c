/*
 * ingest.c - see ingest.h.
 */
#include "ingest.h"

#include <stdio.h>

#include "core/timeutil.h"
#include "parser/labels.h"

static bool has_type(const ps_profile_t *p, const char *name)
{
    size_t n = strlen(name);
    for (uint32_t i = 0; i < p->ntypes; i++) {
        ps_str_t s = ps_profile_str(p, p->sample_types[i].type);
        if (s.len == n && memcmp(s.ptr, name, n) == 0)
            return true;
    }
    return false;
}

int ps_ingest_infer_name(const ps_profile_t *p, const char **name, ps_err_t *err)
{
    if (has_type(p, "cpu"))
        *name = "process_cpu";
    else if (has_type(p, "wall"))
        *name = "wall";
    else if (has_type(p, "alloc_objects") || has_type(p, "alloc_space") || has_type(p, "inuse_objects") ||
             has_type(p, "inuse_space"))
        *name = "memory";
    else if (has_type(p, "goroutine") || has_type(p, "goroutines"))
        *name = "goroutine";
    else if (has_type(p, "threadcreate"))
        *name = "threadcreate";
    else if (has_type(p, "contentions") || has_type(p, "delay"))
        return ps_err_set(err, PS_EINVAL,
                          "cannot infer the profile name: Go block and mutex profiles have the same sample types "
                          "(contentions/count, delay/nanoseconds); pass name=block or name=mutex");
    else {
        char types[256] = "";
        size_t off = 0;
        for (uint32_t i = 0; i < p->ntypes && off < sizeof(types) - 1; i++) {
            ps_str_t t = ps_profile_str(p, p->sample_types[i].type);
            off += (size_t)snprintf(types + off, sizeof(types) - off, "%s%.*s", i ? ", " : "", (int)t.len, t.ptr);
        }
        return ps_err_set(err, PS_EINVAL, "cannot infer the profile name from sample types [%s]; pass name=", types);
    }
    return 0;
}

/* Appends s to b with every character outside [a-zA-Z0-9_] replaced by '_' (type id parts). */
static void put_part(ps_buf_t *b, ps_str_t s)
{
    for (uint32_t i = 0; i < s.len; i++) {
        char c = s.ptr[i];
        bool ok = c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
        ps_buf_putc(b, ok ? (uint8_t)c : '_');
    }
}

int ps_ingest_build(const ps_profile_t *p, const char *name, size_t name_len, const ps_labels_t *base, int64_t ts,
                    const uint8_t *modes, bool delta, ps_arena_t *arena, ps_append_t *app, ps_err_t *err)
{
    int ret;
    memset(app, 0, sizeof(*app));
    /* one series per sample type: __name__ = name:type:unit:period_type:period_unit[:delta] */
    uint32_t ns = 0;
    ps_labels_t *sl = ps_arena_calloc(arena, p->ntypes + 1, sizeof(ps_labels_t));
    uint32_t *ti = ps_arena_calloc(arena, p->ntypes + 1, sizeof(uint32_t));
    ps_buf_t id = PS_BUF_INIT;
    for (uint32_t i = 0; i < p->ntypes; i++) {
        uint8_t mode = modes ? modes[i] : (delta ? PS_INGEST_DELTA : PS_INGEST_ASIS);
        if (mode == PS_INGEST_SKIP)
            continue;
        ps_str_t st = ps_profile_str(p, p->sample_types[i].type), su = ps_profile_str(p, p->sample_types[i].unit);
        ps_str_t pt = ps_profile_str(p, p->period_type.type), pu = ps_profile_str(p, p->period_type.unit);
        if (pt.len == 0 && pu.len == 0) { /* no period type: the sample type stands in */
            pt = st;
            pu = su;
        }
        ps_buf_reset(&id);
        ps_buf_append(&id, name, name_len);
        ps_buf_putc(&id, ':');
        put_part(&id, st);
        ps_buf_putc(&id, ':');
        put_part(&id, su);
        ps_buf_putc(&id, ':');
        put_part(&id, pt);
        ps_buf_putc(&id, ':');
        put_part(&id, pu);
        if (mode == PS_INGEST_DELTA)
            PS_BUF_LIT(&id, ":delta");
        sl[ns].n = base->n + 1;
        sl[ns].pairs = ps_arena_alloc(arena, (base->n + 1) * sizeof(ps_label_pair_t));
        if (base->n)
            memcpy(sl[ns].pairs, base->pairs, base->n * sizeof(ps_label_pair_t));
        ps_label_pair_t *np = &sl[ns].pairs[base->n];
        np->name = "__name__";
        np->nlen = 8;
        np->value = ps_arena_strndup(arena, (const char *)id.data, id.len);
        np->vlen = (uint32_t)id.len;
        if ((ret = ps_labels_normalize(&sl[ns], err)) != 0) {
            ps_buf_dispose(&id);
            return ret;
        }
        ti[ns] = i;
        ns++;
    }
    ps_buf_dispose(&id);
    app->profile = p;
    app->nseries = ns;
    app->series_labels = sl;
    app->type_index = ti;
    app->ts = ts;
    app->duration = p->duration_nanos;
    app->period = p->period;
    app->series_ids = ps_arena_calloc(arena, ns + 1, sizeof(uint64_t));
    app->series_samples = ps_arena_calloc(arena, ns + 1, sizeof(uint32_t));
    return 0;
}

int ps_ingest_prepare(const void *body, size_t n, const ps_ingest_params_t *params, const ps_pprof_limits_t *lim,
                      ps_arena_t *arena, ps_append_t *app, ps_err_t *err)
{
    int ret;
    ps_profile_t *p = ps_arena_calloc(arena, 1, sizeof(*p));
    ps_labels_t base = {0, NULL};
    const char *name = NULL;
    size_t name_len = 0;

    memset(app, 0, sizeof(*app));
    /* labels and name first: cheap, and a bad parameter should not cost a decode */
    if (params->labels != NULL && (ret = ps_parse_labelset(params->labels, params->labels_len, arena, &base, err)) != 0)
        return ps_err_prefix(err, "labels");
    if (base.n >= PS_LABELS_MAX)
        return ps_err_set(err, PS_EINVAL, "labels: %u labels given, at most %d are allowed (__name__ is added to them)",
                          base.n, PS_LABELS_MAX - 1);
    for (uint32_t i = 0; i < base.n; i++)
        if (base.pairs[i].nlen >= 2 && base.pairs[i].name[0] == '_' && base.pairs[i].name[1] == '_')
            return ps_err_set(err, PS_EINVAL, "labels: label names starting with \"__\" are reserved (%.*s)%s",
                              (int)base.pairs[i].nlen, base.pairs[i].name,
                              strcmp(base.pairs[i].name, "__name__") == 0 ? "; use the name parameter" : "");
    if (params->name != NULL) {
        name = params->name;
        name_len = params->name_len;
        if (!ps_label_name_valid(name, name_len) || name_len > 64)
            return ps_err_set(err, PS_EINVAL, "name: invalid profile name \"%.*s\": must match [a-zA-Z_][a-zA-Z0-9_]*, "
                              "at most 64 bytes", (int)(name_len > 64 ? 64 : name_len), name);
    }
    int64_t ts = 0;
    if (params->time != NULL && (ret = ps_parse_time(params->time, params->time_len, &ts, err)) != 0)
        return ps_err_prefix(err, "time");

    if ((ret = ps_pprof_decode(body, n, lim, arena, p, err)) != 0)
        return ret;
    if (name == NULL) {
        if ((ret = ps_ingest_infer_name(p, &name, err)) != 0)
            return ret;
        name_len = strlen(name);
    }
    if (params->time == NULL)
        ts = p->time_nanos > 0 ? p->time_nanos : ps_time_now();
    bool delta = params->delta >= 0 ? params->delta == 1
                                    : (name_len == 11 && memcmp(name, "process_cpu", 11) == 0) ||
                                          (name_len == 4 && memcmp(name, "wall", 4) == 0);
    return ps_ingest_build(p, name, name_len, &base, ts, NULL, delta, arena, app, err);
}

void ps_ingest_result_json(const ps_append_t *app, ps_buf_t *out)
{
    char ts[48];
    ps_format_time(app->ts, ts, sizeof(ts));
    ps_buf_printf(out, "{\"status\":\"success\",\"data\":{\"timestamp\":\"%s\",\"timestamp_ns\":%lld,\"samples\":%u,"
                       "\"duplicate\":%s,\"series\":[",
                  ts, (long long)app->ts, app->profile->nsamples, app->duplicate ? "true" : "false");
    for (uint32_t i = 0; i < app->nseries; i++) {
        const ps_labels_t *ls = &app->series_labels[i];
        const ps_label_pair_t *nm = ps_labels_get(ls, "__name__");
        ps_buf_printf(out, "%s{\"id\":%llu,\"profile_type\":", i ? "," : "", (unsigned long long)app->series_ids[i]);
        ps_buf_json_str(out, nm ? nm->value : "", nm ? nm->vlen : 0);
        PS_BUF_LIT(out, ",\"labels\":");
        ps_labels_json(ls, out);
        ps_buf_printf(out, ",\"stacks\":%u}", app->series_samples[i]);
    }
    PS_BUF_LIT(out, "]}}\n");
}
