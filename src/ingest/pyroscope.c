/*
 * pyroscope.c - Pyroscope's POST /ingest: its parameters, and its bodies into a store append. See
 * ingest.h (ps_pyro_*) and docs/api.md "Pyroscope ingest". The facts come from grafana/pyroscope
 * (pkg/ingester/pyroscope/ingest_handler.go, ingest_adapter.go, pkg/og/convert/pprof/profile.go,
 * api/model/labelset) and are written down in docs/protocols.md, "Pyroscope ingest".
 *
 * name = app.name{k=v,...}: split at the first '{'; the part before, trimmed, is the app name
 *   ([A-Za-z0-9_.-/]+). Tags are k=v separated by ',' and closed by '}', keys and values trimmed;
 *   keys are [A-Za-z0-9_.]+, never __name__; a tag with an empty value is no label. Tags starting
 *   with "__" are dropped, except __session_id__, which is kept as the label __session_id__ (as
 *   Pyroscope keeps it). Dots in keys become '_' (otel.scope.name -> otel_scope_name): profstore's
 *   label names are Prometheus'. A tag service_name replaces the app name as service_name.
 *   Stricter than Pyroscope: a missing '}', text after it, a tag without '=' are errors, not ignored.
 * from, until: ps_attime_parse (digit counts, YYYYMMDD, now-1h), default now; until >= from.
 * sampleRate: an integer 0..1e9 (default 100; 0 = values are not scaled). spyName: default
 *   "unknown", stored as pyroscope_spy. units: kept for nothing (Pyroscope stores pprof now).
 *   aggregationType: sum or average (nothing else; not used for storing).
 * format: absent = folded lines ("groups"), or a multipart pprof upload when the Content-Type is
 *   multipart/form-data; pprof, lines, groups; trie, tree (also by Content-Type
 *   binary/octet-stream+trie/+tree), jfr and speedscope are refused with 415.
 *
 * pprof uploads: the profile name is Pyroscope's: "wall" when a sample type is wall; else the
 *   first sample type (renamed by its sample_type_config display-name) that contains "cpu" ->
 *   process_cpu, "alloc_"/"inuse_" or is space/objects -> memory, "mutex_" -> mutex, "block_" ->
 *   block, "goroutines" -> goroutine (profstore's name for Pyroscope's goroutines); none of them:
 *   the name the native push infers, else Pyroscope's answer (the last sample type, outside
 *   [a-zA-Z0-9_] as '_'). The stored sample types keep their pprof names. The time is the
 *   profile's time_nanos unless 0 or in 1970 (then from). A prev_profile part is refused as
 *   Pyroscope refuses it.
 * folded / lines: the type comes from the suffix after the last '.' of the app name (table
 *   below; no dot: cpu), and service_name is the app name without it. cpu/wall values (samples)
 *   become nanoseconds: x 1e9/sampleRate, sample type cpu|wall/nanoseconds, period type
 *   cpu/nanoseconds. The time is from, the duration until - from.
 * Delta: as the native push (process_cpu and wall are delta).
 */
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/timeutil.h"
#include "proto/gzip.h"
#include "ingest.h"

/* ---- the name parameter ---- */

static bool service_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
           c == '-' || c == '/';
}

static bool tag_char(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
}

static void trim(const char *s, size_t *b, size_t *e)
{
    while (*b < *e && (s[*b] == ' ' || s[*b] == '\t' || s[*b] == '\n' || s[*b] == '\r'))
        (*b)++;
    while (*e > *b && (s[*e - 1] == ' ' || s[*e - 1] == '\t' || s[*e - 1] == '\n' || s[*e - 1] == '\r'))
        (*e)--;
}

/* labels the name's tags can have besides service_name, pyroscope_spy, app_name and __name__ */
#define MAX_TAGS (PS_LABELS_MAX - 4)

static void add_label(ps_labels_t *ls, ps_arena_t *a, const char *k, size_t kl, const char *v, size_t vl)
{
    ps_label_pair_t *p = &ls->pairs[ls->n++];
    p->name = ps_arena_strndup(a, k, kl);
    p->nlen = (uint32_t)kl;
    p->value = ps_arena_strndup(a, v, vl);
    p->vlen = (uint32_t)vl;
}

/* One tag s[b..e) ("k=v", untrimmed), the t-th; added to ls unless dropped. */
static int parse_tag(const char *s, size_t b, size_t e, ps_arena_t *a, ps_labels_t *ls, ps_err_t *err)
{
    const char *eq = memchr(s + b, '=', e - b);
    if (eq == NULL)
        return ps_err_set(err, PS_EINVAL, "name: tag \"%.*s\" (at offset %zu) has no '='", (int)(e - b > 64 ? 64 : e - b),
                          s + b, b);
    size_t kb = b, ke = (size_t)(eq - s), vb = ke + 1, ve = e;
    trim(s, &kb, &ke);
    trim(s, &vb, &ve);
    if (kb == ke)
        return ps_err_set(err, PS_EINVAL, "name: tag at offset %zu has an empty name", b);
    for (size_t i = kb; i < ke; i++)
        if (!tag_char(s[i]))
            return ps_err_set(err, PS_EINVAL, "name: tag name \"%.*s\": character '%c' (offset %zu) is not allowed "
                              "(allowed: [A-Za-z0-9_.])", (int)(ke - kb > 64 ? 64 : ke - kb), s + kb, s[i], i);
    size_t kl = ke - kb;
    if (kl == 8 && memcmp(s + kb, "__name__", 8) == 0)
        return ps_err_set(err, PS_EINVAL, "name: the tag name __name__ is reserved");
    if (kl >= 2 && s[kb] == '_' && s[kb + 1] == '_' && !(kl == 14 && memcmp(s + kb, "__session_id__", 14) == 0))
        return 0; /* dropped, as Pyroscope drops them */
    if (vb == ve)
        return 0; /* an empty value is no label */
    if (ls->n == MAX_TAGS)
        return ps_err_set(err, PS_EINVAL, "name: more than %d tags (a series has at most %d labels, with __name__, "
                          "service_name, pyroscope_spy and app_name)", MAX_TAGS, PS_LABELS_MAX);
    char *key = ps_arena_strndup(a, s + kb, kl);
    for (size_t i = 0; i < kl; i++)
        if (key[i] == '.')
            key[i] = '_';
    for (uint32_t i = 0; i < ls->n; i++) /* the last value of a key wins, as in Pyroscope's map */
        if (ls->pairs[i].nlen == kl && memcmp(ls->pairs[i].name, key, kl) == 0) {
            ls->pairs[i].value = ps_arena_strndup(a, s + vb, ve - vb);
            ls->pairs[i].vlen = (uint32_t)(ve - vb);
            return 0;
        }
    add_label(ls, a, key, kl, s + vb, ve - vb);
    return 0;
}

/* Splits name into the app name and its tags (into ls, room for PS_LABELS_MAX pairs). */
static int parse_name(const char *s, size_t n, ps_arena_t *a, const char **app, size_t *app_len, ps_labels_t *ls,
                      ps_err_t *err)
{
    int ret;
    const char *br = memchr(s, '{', n);
    size_t b = 0, e = br ? (size_t)(br - s) : n;
    trim(s, &b, &e);
    if (b == e)
        return ps_err_set(err, PS_EINVAL, "name: the application name is empty (expected app.name{k=v,...})");
    for (size_t i = b; i < e; i++)
        if (!service_char(s[i]))
            return ps_err_set(err, PS_EINVAL, "name: application name \"%.*s\": character '%c' (offset %zu) is not "
                              "allowed (allowed: [A-Za-z0-9_.-/])", (int)(e - b > 64 ? 64 : e - b), s + b, s[i], i);
    *app = s + b;
    *app_len = e - b;
    if (br == NULL)
        return 0;
    size_t i = (size_t)(br - s) + 1;
    const char *close = memchr(s + i, '}', n - i);
    if (close == NULL)
        return ps_err_set(err, PS_EINVAL, "name: the tags opened at offset %zu are not closed by '}'", i - 1);
    size_t ce = (size_t)(close - s);
    for (size_t j = ce + 1; j < n; j++)
        if (s[j] != ' ' && s[j] != '\t')
            return ps_err_set(err, PS_EINVAL, "name: unexpected text after '}' at offset %zu", j);
    size_t tb = i, te = ce;
    trim(s, &tb, &te);
    if (tb == te)
        return 0; /* app{} */
    while (i <= ce) {
        const char *comma = memchr(s + i, ',', ce - i);
        size_t end = comma ? (size_t)(comma - s) : ce, sb = i, se = end;
        trim(s, &sb, &se);
        if (sb == se && end == ce) /* a trailing ',' */
            break;
        if ((ret = parse_tag(s, i, end, a, ls, err)) != 0)
            return ret;
        i = end + 1;
    }
    return 0;
}

/* ---- the other parameters ---- */

/* the types of folded/lines bodies by the name's suffix (Pyroscope's convertMetadata) */
static const struct suffix {
    const char *suffix, *name, *type, *unit;
} suffixes[] = {
    {"cpu", "process_cpu", "samples", "count"},
    {"wall", "wall", "samples", "count"},
    {"inuse_objects", "memory", "inuse_objects", "count"},
    {"inuse_space", "memory", "inuse_space", "bytes"},
    {"alloc_objects", "memory", "alloc_objects", "count"},
    {"alloc_space", "memory", "alloc_space", "bytes"},
    {"goroutines", "goroutine", "goroutines", "count"},
    {"mutex_count", "mutex", "contentions", "count"},
    {"mutex_duration", "mutex", "delay", "nanoseconds"},
    {"block_count", "block", "contentions", "count"},
    {"block_duration", "block", "delay", "nanoseconds"},
    {"itimer", "process_cpu", "samples", "count"},
    {"alloc_in_new_tlab_objects", "memory", "alloc_in_new_tlab_objects", "count"},
    {"alloc_in_new_tlab_bytes", "memory", "alloc_in_new_tlab_bytes", "bytes"},
    {"alloc_outside_tlab_objects", "memory", "alloc_outside_tlab_objects", "count"},
    {"alloc_outside_tlab_bytes", "memory", "alloc_outside_tlab_bytes", "bytes"},
    {"lock_count", "block", "contentions", "count"},
    {"lock_duration", "block", "delay", "nanoseconds"},
    {"live", "memory", "live", "count"},
    {"exceptions", "exceptions", "samples", "count"},
    {"seconds", "wall", "samples", "count"},
    {"nanoseconds", "wall", "samples", "count"},
    {"microseconds", "wall", "samples", "count"},
    {"milliseconds", "wall", "samples", "count"},
    {"bytes", "memory", "samples", "bytes"},
};

static bool eq(const char *s, size_t n, const char *lit)
{
    return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

static int parse_format(const ps_pyro_params_t *in, ps_pyro_meta_t *m, ps_err_t *err)
{
    const char *f = in->format ? in->format : "";
    size_t fl = in->format ? in->format_len : 0;
    const char *ct = in->content_type ? in->content_type : "";
    size_t cl = in->content_type ? in->content_type_len : 0;
    if (eq(f, fl, "trie") || eq(f, fl, "tree") || eq(f, fl, "jfr") || eq(f, fl, "speedscope"))
        return ps_err_set(err, PS_EUNSUPPORTED, "format=%.*s is not supported by profstore: send pprof (format=pprof, "
                          "or a multipart/form-data upload), folded lines (no format) or format=lines", (int)fl, f);
    if (fl == 0 && (eq(ct, cl, "binary/octet-stream+trie") || eq(ct, cl, "binary/octet-stream+tree")))
        return ps_err_set(err, PS_EUNSUPPORTED, "Content-Type %.*s (the %s format) is not supported by profstore: send "
                          "pprof or folded lines", (int)cl, ct, ct[cl - 1] == 'e' && ct[cl - 2] == 'i' ? "trie" : "tree");
    bool multipart = memmem(ct, cl, "multipart/form-data", 19) != NULL;
    if (eq(f, fl, "pprof"))
        m->format = multipart ? PS_PYRO_MULTIPART : PS_PYRO_PPROF;
    else if (eq(f, fl, "lines"))
        m->format = PS_PYRO_LINES;
    else if (fl == 0 || eq(f, fl, "groups"))
        m->format = multipart ? PS_PYRO_MULTIPART : PS_PYRO_FOLDED;
    else
        return ps_err_set(err, PS_EINVAL, "format: unknown format \"%.*s\" (expected pprof, lines, groups or none)",
                          (int)(fl > 32 ? 32 : fl), f);
    return 0;
}

static int parse_time(const char *what, const char *s, size_t n, int64_t now, int64_t *out, ps_err_t *err)
{
    if (s == NULL || n == 0) {
        *out = now;
        return 0;
    }
    if (ps_attime_parse(s, n, now, out, err) != 0)
        return ps_err_prefix(err, "%s", what);
    return 0;
}

static int parse_rate(const ps_pyro_params_t *in, ps_pyro_meta_t *m, ps_err_t *err)
{
    m->sample_rate = 100;
    if (in->sample_rate == NULL || in->sample_rate_len == 0)
        return 0;
    uint64_t v = 0;
    for (size_t i = 0; i < in->sample_rate_len; i++) {
        char c = in->sample_rate[i];
        if (c < '0' || c > '9' || (v = v * 10 + (uint64_t)(c - '0')) > 1000000000) /* v <= 1e9 before: no overflow */
            return ps_err_set(err, PS_EINVAL, "sampleRate: expected an integer from 0 to 1000000000 (Hz), got \"%.*s\"",
                              (int)(in->sample_rate_len > 32 ? 32 : in->sample_rate_len), in->sample_rate);
    }
    m->sample_rate = (uint32_t)v;
    return 0;
}

/* The folded/lines type from the app name's suffix; *app_len loses the suffix. */
static int suffix_type(const char *app, size_t *app_len, ps_pyro_meta_t *m, ps_err_t *err)
{
    const char *dot = NULL;
    for (size_t i = *app_len; i > 0; i--)
        if (app[i - 1] == '.') {
            dot = app + i - 1;
            break;
        }
    const char *sfx = dot ? dot + 1 : "cpu";
    size_t sl = dot ? (size_t)(app + *app_len - sfx) : 3;
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (eq(sfx, sl, suffixes[i].suffix)) {
            m->profile_name = suffixes[i].name;
            m->sample_type = suffixes[i].type;
            m->sample_unit = suffixes[i].unit;
            bool timed = strcmp(m->profile_name, "process_cpu") == 0 || strcmp(m->profile_name, "wall") == 0;
            m->scale = timed && m->sample_rate != 0;
            if (m->scale) {
                m->sample_type = strcmp(m->profile_name, "wall") == 0 ? "wall" : "cpu";
                m->sample_unit = "nanoseconds";
            }
            if (dot != NULL)
                *app_len = (size_t)(dot - app);
            if (*app_len == 0)
                return ps_err_set(err, PS_EINVAL, "name: the application name is empty before .%.*s", (int)sl, sfx);
            return 0;
        }
    return ps_err_set(err, PS_EINVAL, "name: unknown profile type \"%.*s\" (the suffix after the last '.' of the "
                      "application name, for folded and lines bodies: cpu, wall, inuse_space, alloc_objects, "
                      "goroutines, mutex_count, block_duration, ...)", (int)(sl > 64 ? 64 : sl), sfx);
}

int ps_pyro_meta_parse(const ps_pyro_params_t *in, int64_t now_ns, ps_arena_t *arena, ps_pyro_meta_t *m,
                       ps_err_t *err)
{
    int ret;
    memset(m, 0, sizeof(*m));
    if ((ret = parse_format(in, m, err)) != 0)
        return ret;
    if (m->format == PS_PYRO_MULTIPART &&
        (ret = ps_mp_boundary(in->content_type, in->content_type_len, arena, &m->boundary, &m->boundary_len, err)) != 0)
        return ret;
    if (in->name == NULL || in->name_len == 0)
        return ps_err_set(err, PS_EINVAL, "name: missing (expected app.name{k=v,...})");
    ps_labels_t *ls = &m->labels;
    ls->pairs = ps_arena_calloc(arena, PS_LABELS_MAX, sizeof(ps_label_pair_t));
    const char *app = NULL;
    size_t app_len = 0;
    if ((ret = parse_name(in->name, in->name_len, arena, &app, &app_len, ls, err)) != 0)
        return ret;
    if ((ret = parse_time("from", in->from, in->from_len, now_ns, &m->from, err)) != 0 ||
        (ret = parse_time("until", in->until, in->until_len, now_ns, &m->until, err)) != 0)
        return ret;
    if (m->until < m->from)
        return ps_err_set(err, PS_EINVAL, "until (%lld ns) is before from (%lld ns)", (long long)m->until,
                          (long long)m->from);
    if ((ret = parse_rate(in, m, err)) != 0)
        return ret;
    if (in->aggregation != NULL && in->aggregation_len > 0 && !eq(in->aggregation, in->aggregation_len, "sum") &&
        !eq(in->aggregation, in->aggregation_len, "average"))
        return ps_err_set(err, PS_EINVAL, "aggregationType: expected sum or average, got \"%.*s\"",
                          (int)(in->aggregation_len > 32 ? 32 : in->aggregation_len), in->aggregation);
    if (in->units != NULL && in->units_len > 64)
        return ps_err_set(err, PS_EINVAL, "units: longer than 64 bytes");
    if (m->format == PS_PYRO_FOLDED || m->format == PS_PYRO_LINES)
        if ((ret = suffix_type(app, &app_len, m, err)) != 0)
            return ret;
    const ps_label_pair_t *sn = ps_labels_get(ls, "service_name");
    if (sn == NULL) {
        add_label(ls, arena, "service_name", 12, app, app_len);
    } else if ((m->format == PS_PYRO_FOLDED || m->format == PS_PYRO_LINES) && ps_labels_get(ls, "app_name") == NULL) {
        add_label(ls, arena, "app_name", 8, app, app_len); /* as Pyroscope's Put does */
    }
    const char *spy = in->spy_name && in->spy_name_len ? in->spy_name : "unknown";
    size_t spyl = in->spy_name && in->spy_name_len ? in->spy_name_len : 7;
    if (spyl > PS_LABEL_VALUE_MAX || !ps_utf8_valid(spy, spyl))
        return ps_err_set(err, PS_EINVAL, "spyName: %s", spyl > PS_LABEL_VALUE_MAX ? "longer than 360 bytes"
                                                                                  : "not valid UTF-8");
    if (ps_labels_get(ls, "pyroscope_spy") == NULL)
        add_label(ls, arena, "pyroscope_spy", 13, spy, spyl);
    for (uint32_t i = 0; i < ls->n; i++) /* Pyroscope's names are the classic ones (no quoted UTF-8) */
        if (!ps_label_name_valid(ls->pairs[i].name, ls->pairs[i].nlen))
            return ps_err_set(err, PS_EINVAL, "name: invalid label name \"%.*s\": must match [a-zA-Z_][a-zA-Z0-9_]*",
                              (int)ls->pairs[i].nlen, ls->pairs[i].name);
    if ((ret = ps_labels_normalize(ls, err)) != 0)
        return ps_err_prefix(err, "name");
    sn = ps_labels_get(ls, "service_name");
    m->service = sn->value;
    m->service_len = sn->vlen;
    return 0;
}

/* ---- pprof uploads ---- */

/* display-name of sample type t in the sample_type_config root (NULL: none) */
static const char *display_name(json_t *root, ps_str_t t, char *key, size_t keysz)
{
    if (root == NULL || t.len >= keysz)
        return NULL;
    memcpy(key, t.ptr, t.len);
    key[t.len] = 0;
    json_t *c = json_object_get(root, key);
    json_t *d = c ? json_object_get(c, "display-name") : NULL;
    return json_is_string(d) && json_string_length(d) > 0 ? json_string_value(d) : NULL;
}

static int check_stc(json_t *root, ps_err_t *err)
{
    if (!json_is_object(root))
        return ps_err_set(err, PS_EINVAL, "sample_type_config: expected a JSON object (sample type -> settings)");
    const char *k;
    json_t *v;
    json_object_foreach(root, k, v) {
        if (!json_is_object(v))
            return ps_err_set(err, PS_EINVAL, "sample_type_config: \"%.64s\": expected an object", k);
        json_t *d = json_object_get(v, "display-name");
        if (d != NULL && !json_is_string(d))
            return ps_err_set(err, PS_EINVAL, "sample_type_config: \"%.64s\": display-name is not a string", k);
    }
    return 0;
}

static bool contains(const char *s, const char *lit)
{
    return strstr(s, lit) != NULL;
}

static const char *sanitized_name(const ps_profile_t *p, ps_arena_t *arena)
{
    ps_str_t t = ps_profile_str(p, p->sample_types[p->ntypes - 1].type);
    size_t l = t.len > 64 ? 64 : t.len;
    char *out = ps_arena_alloc(arena, l + 2);
    size_t o = 0;
    if (l == 0 || (t.ptr[0] >= '0' && t.ptr[0] <= '9'))
        out[o++] = '_';
    for (size_t i = 0; i < l; i++) {
        char c = t.ptr[i];
        out[o++] = (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) ? c : '_';
    }
    out[o] = 0;
    return out;
}

int ps_pyro_pprof_name(const ps_profile_t *p, const void *stc, size_t stc_len, ps_arena_t *arena, const char **name,
                       ps_err_t *err)
{
    json_t *root = NULL;
    if (stc != NULL) {
        json_error_t je;
        root = json_loadb(stc, stc_len, JSON_REJECT_DUPLICATES, &je);
        if (root == NULL)
            return ps_err_set(err, PS_EINVAL, "sample_type_config: invalid JSON at line %d, column %d: %s", je.line,
                              je.column, je.text);
        int ret = check_stc(root, err);
        if (ret != 0) {
            json_decref(root);
            return ret;
        }
    }
    *name = NULL;
    for (uint32_t i = 0; i < p->ntypes && *name == NULL; i++) {
        ps_str_t t = ps_profile_str(p, p->sample_types[i].type);
        if (eq(t.ptr, t.len, "wall"))
            *name = "wall";
    }
    char key[256], st[256];
    for (uint32_t i = 0; i < p->ntypes && *name == NULL; i++) {
        ps_str_t t = ps_profile_str(p, p->sample_types[i].type);
        const char *d = display_name(root, t, key, sizeof(key));
        snprintf(st, sizeof(st), "%.*s", d ? (int)strlen(d) : (int)t.len, d ? d : t.ptr);
        if (contains(st, "cpu"))
            *name = "process_cpu";
        else if (contains(st, "alloc_") || contains(st, "inuse_") || strcmp(st, "space") == 0 ||
                 strcmp(st, "objects") == 0)
            *name = "memory";
        else if (contains(st, "mutex_"))
            *name = "mutex";
        else if (contains(st, "block_"))
            *name = "block";
        else if (contains(st, "goroutines"))
            *name = "goroutine";
    }
    json_decref(root);
    if (*name == NULL && ps_ingest_infer_name(p, name, NULL) != 0)
        *name = sanitized_name(p, arena);
    return 0;
}

/* The pprof bytes of a multipart upload, and its sample_type_config (NULL when none). */
static int multipart_profile(const void *body, size_t n, const ps_pyro_meta_t *m, ps_arena_t *arena,
                             const uint8_t **pp, size_t *pn, const uint8_t **stc, size_t *stcn, ps_err_t *err)
{
    int ret;
    ps_mp_part_t *parts;
    uint32_t np;
    if ((ret = ps_mp_parse(body, n, m->boundary, m->boundary_len, arena, &parts, &np, err)) != 0)
        return ret;
    if (ps_mp_find(parts, np, "prev_profile") != NULL)
        return ps_err_set(err, PS_EINVAL, "unsupported client version (the upload has a prev_profile part). Please "
                                          "update github.com/grafana/pyroscope-go to the latest version");
    const ps_mp_part_t *pr = ps_mp_find(parts, np, "profile");
    if (pr == NULL || pr->len == 0)
        return ps_err_set(err, PS_EINVAL, "multipart body: %s \"profile\" part (the pprof)", pr ? "empty" : "no");
    *pp = pr->data;
    *pn = pr->len;
    const ps_mp_part_t *sc = ps_mp_find(parts, np, "sample_type_config");
    *stc = sc ? sc->data : NULL;
    *stcn = sc ? sc->len : 0;
    if (sc != NULL && sc->len > 65536)
        return ps_err_set(err, PS_ETOOBIG, "sample_type_config: %zu bytes, at most 65536", sc->len);
    return 0;
}

#define NS_1971 (365ll * 86400 * PS_NS_PER_S)

static int prepare_pprof(const void *body, size_t n, const ps_pyro_meta_t *m, const ps_pprof_limits_t *lim,
                         ps_arena_t *arena, ps_append_t *app, ps_err_t *err)
{
    int ret;
    const uint8_t *pp = body, *stc = NULL;
    size_t pn = n, stcn = 0;
    if (m->format == PS_PYRO_MULTIPART &&
        (ret = multipart_profile(body, n, m, arena, &pp, &pn, &stc, &stcn, err)) != 0)
        return ret;
    if (pn >= 2 && pp[0] == '-' && pp[1] == '-')
        return ps_err_set(err, PS_EINVAL, "the body looks like multipart/form-data, but the Content-Type is not "
                                          "multipart/form-data with a boundary");
    if ((ret = ps_ingest_check_body(pp, pn, NULL, 0, err)) != 0)
        return ret;
    ps_profile_t *p = ps_arena_calloc(arena, 1, sizeof(*p));
    if ((ret = ps_pprof_decode(pp, pn, lim, arena, p, err)) != 0)
        return ret;
    const char *name;
    if ((ret = ps_pyro_pprof_name(p, stc, stcn, arena, &name, err)) != 0)
        return ret;
    int64_t ts = p->time_nanos >= NS_1971 ? p->time_nanos : m->from;
    size_t nl = strlen(name);
    return ps_ingest_build(p, name, nl, &m->labels, ts, NULL, ps_ingest_default_delta(name, nl), arena, app, err);
}

/* ---- folded and lines bodies (parser/folded.c) ---- */

int ps_pyro_folded(const void *body, size_t n, bool lines, const ps_pyro_meta_t *m, const ps_pprof_limits_t *lim,
                   ps_arena_t *arena, ps_profile_t *p, ps_err_t *err)
{
    ps_stacks_limits_t sl = {.max_samples = lim->max_samples, .max_functions = lim->max_functions,
                             .max_stack_depth = lim->max_stack_depth, .max_string_len = lim->max_string_len,
                             .max_frames = UINT64_MAX}; /* the body's size bounds the frames */
    ps_folded_opts_t o = {.lines = lines, .type = m->sample_type, .unit = m->sample_unit};
    if (m->scale) {
        o.period = PS_NS_PER_S / m->sample_rate;
        o.period_type = "cpu";
        o.period_unit = "nanoseconds";
    }
    int ret = ps_folded_parse(body, n, &o, &sl, arena, p, err);
    if (ret == 0) {
        p->time_nanos = m->from;
        p->duration_nanos = m->until - m->from;
    }
    return ret;
}

/* ---- the body ---- */

int ps_pyro_prepare(const void *body, size_t n, const ps_pyro_meta_t *m, const ps_pprof_limits_t *lim,
                    ps_arena_t *arena, ps_append_t *app, ps_err_t *err)
{
    memset(app, 0, sizeof(*app));
    if (n == 0)
        return ps_err_set(err, PS_EINVAL, "empty body");
    if (m->format == PS_PYRO_PPROF || m->format == PS_PYRO_MULTIPART)
        return prepare_pprof(body, n, m, lim, arena, app, err);
    if (ps_is_gzip(body, n))
        return ps_err_set(err, PS_EINVAL, "the body is gzip-compressed (a pprof profile?): send it with format=pprof; "
                                          "without a format the body is read as folded lines");
    ps_profile_t *p = ps_arena_calloc(arena, 1, sizeof(*p));
    int ret = ps_pyro_folded(body, n, m->format == PS_PYRO_LINES, m, lim, arena, p, err);
    if (ret != 0)
        return ret;
    size_t nl = strlen(m->profile_name);
    bool delta = ps_ingest_default_delta(m->profile_name, nl);
    return ps_ingest_build(p, m->profile_name, nl, &m->labels, m->from, NULL, delta, arena, app, err);
}
