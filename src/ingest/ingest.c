/*
 * ingest.c - see ingest.h.
 *
 * Profile names. A profile's kind is recognised from its sample types (the first rule that
 * matches wins):
 *
 *   sample types include          kind / inferred name
 *   cpu                           process_cpu
 *   wall                          wall
 *   alloc_objects, alloc_space,   memory
 *   inuse_objects, inuse_space
 *   goroutine, goroutines         goroutine
 *   threadcreate                  threadcreate
 *   contentions, delay            block or mutex (Go writes the same types for both: ambiguous)
 *   anything else                 not recognised
 *
 * Without name= the inferred name is used; for block/mutex and unrecognised profiles a name
 * is required (400). With name= the given name is used unless it contradicts the profile:
 * a name contradicts when (1) it is one of the well-known names of the table below, (2) the
 * profile's kind is recognised (including the block/mutex pair), and (3) none of the profile's
 * sample types is one of that name's types. Then the push is refused with a 400 that names the
 * kind inferred ("this is a "goroutine" profile; send name=goroutine or leave name out").
 * Everything else is accepted: any name for block and mutex profiles (name=block on a mutex
 * profile cannot be told apart), any name for unrecognised sample types, and any name that is
 * not well known (name=myapp_cpu on a CPU profile).
 *
 *   well-known name                          its sample types
 *   process_cpu, cpu                         cpu
 *   wall                                     wall
 *   memory, heap, allocs                     alloc_objects, alloc_space, inuse_objects, inuse_space
 *   goroutine, goroutines                    goroutine, goroutines
 *   threadcreate                             threadcreate
 *   block, mutex                             contentions, delay
 *
 * (A Node.js CPU profile has both cpu and wall types: name=wall fits it.)
 */
#include "ingest.h"

#include <stdio.h>
#include <strings.h>

#include "core/timeutil.h"
#include "parser/labels.h"

enum { K_CPU, K_WALL, K_MEMORY, K_GOROUTINE, K_THREADCREATE, K_CONTENTION, K_UNKNOWN };

/* per kind: its inferred name (NULL: ambiguous) and the sample types that identify it */
static const struct kind {
    const char *name;
    const char *types[5];
} kinds[] = {
    [K_CPU] = {"process_cpu", {"cpu"}},
    [K_WALL] = {"wall", {"wall"}},
    [K_MEMORY] = {"memory", {"alloc_objects", "alloc_space", "inuse_objects", "inuse_space"}},
    [K_GOROUTINE] = {"goroutine", {"goroutine", "goroutines"}},
    [K_THREADCREATE] = {"threadcreate", {"threadcreate"}},
    [K_CONTENTION] = {NULL, {"contentions", "delay"}},
};

static const struct known_name {
    const char *name;
    int kind;
} known_names[] = {
    {"process_cpu", K_CPU}, {"cpu", K_CPU},           {"wall", K_WALL},
    {"memory", K_MEMORY},   {"heap", K_MEMORY},       {"allocs", K_MEMORY},
    {"goroutine", K_GOROUTINE}, {"goroutines", K_GOROUTINE}, {"threadcreate", K_THREADCREATE},
    {"block", K_CONTENTION}, {"mutex", K_CONTENTION},
};

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

static bool has_kind_type(const ps_profile_t *p, int kind)
{
    for (size_t i = 0; i < sizeof(kinds[kind].types) / sizeof(kinds[kind].types[0]) && kinds[kind].types[i]; i++)
        if (has_type(p, kinds[kind].types[i]))
            return true;
    return false;
}

/* The profile's kind (K_UNKNOWN when its sample types are not recognised). */
static int profile_kind(const ps_profile_t *p)
{
    for (int k = 0; k < K_UNKNOWN; k++)
        if (has_kind_type(p, k))
            return k;
    return K_UNKNOWN;
}

/* "type/unit, type/unit" of every sample type (cut at size). */
static void types_str(const ps_profile_t *p, bool units, char *out, size_t size)
{
    size_t off = 0;
    out[0] = 0;
    for (uint32_t i = 0; i < p->ntypes && off < size - 1; i++) {
        ps_str_t t = ps_profile_str(p, p->sample_types[i].type), u = ps_profile_str(p, p->sample_types[i].unit);
        int n = units ? snprintf(out + off, size - off, "%s%.*s/%.*s", i ? ", " : "", (int)t.len, t.ptr, (int)u.len, u.ptr)
                      : snprintf(out + off, size - off, "%s%.*s", i ? ", " : "", (int)t.len, t.ptr);
        off += n > 0 ? (size_t)n : 0;
    }
}

int ps_ingest_infer_name(const ps_profile_t *p, const char **name, ps_err_t *err)
{
    int k = profile_kind(p);
    if (k == K_CONTENTION)
        return ps_err_set(err, PS_EINVAL,
                          "cannot infer the profile name: Go block and mutex profiles have the same sample types "
                          "(contentions/count, delay/nanoseconds); pass name=block or name=mutex");
    if (k == K_UNKNOWN) {
        char types[256];
        types_str(p, false, types, sizeof(types));
        return ps_err_set(err, PS_EINVAL, "cannot infer the profile name from sample types [%s]; pass name=", types);
    }
    *name = kinds[k].name;
    return 0;
}

int ps_ingest_check_name(const ps_profile_t *p, const char *name, size_t name_len, ps_err_t *err)
{
    int nk = K_UNKNOWN;
    for (size_t i = 0; i < sizeof(known_names) / sizeof(known_names[0]); i++)
        if (strlen(known_names[i].name) == name_len && memcmp(known_names[i].name, name, name_len) == 0)
            nk = known_names[i].kind;
    int pk = profile_kind(p);
    if (nk == K_UNKNOWN || pk == K_UNKNOWN || has_kind_type(p, nk))
        return 0;
    char types[256];
    types_str(p, true, types, sizeof(types));
    if (pk == K_CONTENTION)
        return ps_err_set(err, PS_EINVAL,
                          "name \"%.*s\" contradicts the profile's sample types (%s): this is a \"block\" or \"mutex\" "
                          "profile; send name=block or name=mutex", (int)name_len, name, types);
    return ps_err_set(err, PS_EINVAL,
                      "name \"%.*s\" contradicts the profile's sample types (%s): this is a \"%s\" profile; send "
                      "name=%s or leave name out", (int)name_len, name, types, kinds[pk].name, kinds[pk].name);
}

/* Length of the well-formed UTF-8 sequence of 2-4 bytes at s (at most n bytes), else 0. */
static size_t utf8_seq(const uint8_t *s, size_t n)
{
    size_t len = s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : s[0] >= 0xE0 ? 3 : s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : 0;
    if (len == 0 || len > n)
        return 0;
    for (size_t i = 1; i < len; i++)
        if ((s[i] & 0xC0) != 0x80)
            return 0;
    return len;
}

int ps_ingest_check_body(const void *body, size_t n, const char *content_type, size_t ct_len, ps_err_t *err)
{
    const uint8_t *b = body;
    static const char mp[] = "multipart/form-data";
    if ((content_type != NULL && ct_len >= sizeof(mp) - 1 && strncasecmp(content_type, mp, sizeof(mp) - 1) == 0) ||
        (n >= 2 && b[0] == '-' && b[1] == '-'))
        return ps_err_set(err, PS_EINVAL, "body is multipart/form-data: this endpoint takes a raw pprof body (gzipped "
                                          "or not); send Pyroscope SDK uploads to /ingest");
    if (n >= 2 && b[0] == 0x1f && b[1] == 0x8b)
        return 0;
    /* text: the first 64 bytes (or all of a shorter body) are printable ASCII, tab, CR, LF or
     * well-formed UTF-8. A pprof body never is: its first field's tag or length is followed by
     * a control byte or a varint byte >= 0x80 (string_table[0] is empty: 0x32 0x00) */
    size_t i = 0, lim = n < 64 ? n : 64;
    while (i < lim) {
        if ((b[i] >= 0x20 && b[i] < 0x7F) || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
            i++;
        } else if (b[i] >= 0x80) {
            size_t l = utf8_seq(b + i, n - i);
            if (l == 0)
                return 0;
            i += l;
        } else {
            return 0;
        }
    }
    if (n == 0)
        return 0;
    /* quote the first 20 bytes (not cutting a UTF-8 sequence), with ", \ and controls escaped */
    char q[96];
    size_t qo = 0, cut = n < 20 ? n : 20;
    while (cut < n && cut > 0 && (b[cut] & 0xC0) == 0x80)
        cut--;
    for (i = 0; i < cut; i++) {
        uint8_t c = b[i];
        if (c == '"' || c == '\\') {
            q[qo++] = '\\';
            q[qo++] = (char)c;
        } else if (c == '\n' || c == '\r' || c == '\t') {
            q[qo++] = '\\';
            q[qo++] = c == '\n' ? 'n' : c == '\r' ? 'r' : 't';
        } else {
            q[qo++] = (char)c;
        }
    }
    q[qo] = 0;
    return ps_err_set(err, PS_EINVAL, "body looks like text (\"%s\"%s): expected a pprof profile (gzipped or not)", q,
                      cut < n ? "..." : "");
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
    if (params->time != NULL && (ret = ps_parse_time(params->time, params->time_len, ps_time_now(), &ts, err)) != 0)
        return ps_err_prefix(err, "time");

    if ((ret = ps_ingest_check_body(body, n, params->content_type, params->content_type_len, err)) != 0)
        return ret;
    if ((ret = ps_pprof_decode(body, n, lim, arena, p, err)) != 0)
        return ret;
    if (name == NULL) {
        if ((ret = ps_ingest_infer_name(p, &name, err)) != 0)
            return ret;
        name_len = strlen(name);
    } else if ((ret = ps_ingest_check_name(p, name, name_len, err)) != 0) {
        return ret;
    }
    if (params->time == NULL)
        ts = p->time_nanos > 0 ? p->time_nanos : ps_time_now();
    bool delta = params->delta >= 0 ? params->delta == 1 : ps_ingest_default_delta(name, name_len);
    if ((ret = ps_ingest_build(p, name, name_len, &base, ts, NULL, delta, arena, app, err)) != 0)
        return ret;
    app->raw = body;
    app->raw_len = n;
    return 0;
}

bool ps_ingest_default_delta(const char *name, size_t len)
{
    return (len == 11 && memcmp(name, "process_cpu", 11) == 0) || (len == 4 && memcmp(name, "wall", 4) == 0);
}

bool ps_ingest_cumulative_type(ps_str_t type)
{
    static const char *names[] = {"alloc_objects", "alloc_space", "contentions", "delay"};
    for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
        if (type.len == strlen(names[i]) && memcmp(type.ptr, names[i], type.len) == 0)
            return true;
    return false;
}

void ps_ingest_result_json(const ps_append_t *app, ps_buf_t *out)
{
    char ts[48];
    ps_format_time(app->ts, ts, sizeof(ts));
    ps_json_t j;
    ps_json_envelope(&j, out);
    ps_json_obj(&j);
    ps_json_key(&j, "timestamp");
    ps_json_cstr(&j, ts);
    ps_json_key(&j, "timestamp_ns");
    ps_json_int(&j, app->ts);
    ps_json_key(&j, "samples");
    ps_json_uint(&j, app->profile->nsamples);
    ps_json_key(&j, "duplicate");
    ps_json_bool(&j, app->duplicate);
    ps_json_key(&j, "series");
    ps_json_arr(&j);
    for (uint32_t i = 0; i < app->nseries; i++) {
        const ps_labels_t *ls = &app->series_labels[i];
        const ps_label_pair_t *nm = ps_labels_get(ls, "__name__");
        ps_json_obj(&j);
        ps_json_key(&j, "id");
        ps_json_uint(&j, app->series_ids[i]);
        ps_json_key(&j, "profile_type");
        ps_json_str(&j, nm ? nm->value : "", nm ? nm->vlen : 0);
        ps_json_key(&j, "labels");
        ps_labels_json(ls, &j);
        ps_json_key(&j, "stacks");
        ps_json_uint(&j, app->series_samples[i]);
        ps_json_end(&j);
    }
    ps_json_end(&j); /* series */
    ps_json_end(&j); /* data */
    ps_json_envelope_close(&j);
}
