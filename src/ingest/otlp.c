/*
 * otlp.c - an OTLP profiles export (proto/otlp.h: ExportProfilesServiceRequest, opentelemetry-proto
 * v1.10.0) becomes store appends, converted as Pyroscope converts it (grafana/pyroscope
 * pkg/ingester/otlp/convert.go and ingest_handler.go at commit 3fe6a457, which speaks the same
 * proto through go.opentelemetry.io/proto/otlp/profiles/v1development v0.3.0), into the same
 * decoded profile (core/profile.h) a pprof push stores. docs/protocols.md "OTLP profiles" has the
 * rules in prose; in short:
 *
 *  - The dictionary is checked first, whole: every index in it (mapping filename and attributes,
 *    location mapping and line functions, function strings, attribute keys and string values,
 *    stack locations) within its table, the tables within the pprof limits. A bad dictionary
 *    refuses the request (PS_EINVAL / PS_ETOOBIG, the message naming the table, entry and field).
 *    Entry 0 of every table is the zero value: mapping_index 0 and function_index 0 are "none".
 *    The tables refer only downwards (stack -> location -> mapping, function -> string), so they
 *    cannot hold a cycle; the one nesting (AnyValue inside AnyValue) is bounded by the decoder.
 *  - Then each profile, alone: its sample_type, period_type, and each sample's stack_index,
 *    link_index, attribute_indices and value count. A bad profile is refused (counted in
 *    partial_success.rejected_profiles, the first reason as its error_message) and the others
 *    are stored.
 *  - One profile per service: service.name of the sample's attributes, else of the resource's,
 *    else "unknown_service" (":" process.executable.name when the resource says it). The series
 *    labels: service_name, then the resource's and the scope's attributes with a string or
 *    integer value (first of a name wins), their names sanitised to Prometheus label names (every
 *    character outside [a-zA-Z0-9_] becomes '_', a leading digit gets a '_' in front; names
 *    starting with "__" are dropped as in every profstore push).
 *  - The sample type: samples:count with period type cpu:nanoseconds (and a period) is stored as
 *    cpu:nanoseconds, each value times the period, named process_cpu; off_cpu:nanoseconds without
 *    a period is named off_cpu, a sample's values summed; any other is named by its period type
 *    (Pyroscope's "third part of the type id"), or, with none, by profstore's inference from the
 *    sample type (ps_ingest_infer_name). Values: exactly one per sample (off_cpu: one or more);
 *    none with timestamps counts the timestamps. Stored as Pyroscope's __delta__="false": the
 *    profile as it came, named with ":delta" for process_cpu and wall (push.c's rule), so a CPU
 *    profile sent by OTLP lands in the series a pprof push of it lands in.
 *  - Sample attributes (but service.name) with a string or integer value become pprof labels of
 *    the sample, key as sent; a link (link_index != 0) becomes span_id (hex, when not empty) and
 *    trace_id (hex, when 16 bytes).
 *  - Locations keep address and mapping; a mapping keeps start, limit, offset, file name, and the
 *    build id of its attribute process.executable.build_id.gnu; its has_* flags say what all its
 *    locations in the profile carry (Pyroscope's survey). Unsymbolized frames stay so.
 *  - time_unix_nano 0 is now, duration_nano 0 is 10 s (Pyroscope's defaults).
 *
 * Bounded: the samples of a request at most lim->max_samples; per profile one pass over its
 * samples plus the entries they touch; remap arrays the size of the tables, reset entry by entry.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "core/hash.h"
#include "core/timeutil.h"
#include "ingest.h"

#define SVC_KEY "service.name"
#define EXE_KEY "process.executable.name"
#define BUILD_ID_KEY "process.executable.build_id.gnu"
#define DEFAULT_DURATION_NS 10000000000LL
/* appends (profiles of one service) per request: each is a write request queued on its own, and
 * the writer queues 8,192 at most (--storage.write-queue-max-items' default) */
#define MAX_APPENDS 4096

/* ---- checking the dictionary --------------------------------------------------------------------- */

static int idx_err(ps_err_t *err, const char *where, size_t i, const char *field, int64_t v, const char *table,
                   size_t n)
{
    return ps_err_set(err, PS_EINVAL, "dictionary.%s[%zu].%s: %" PRId64 " out of range (%s has %zu entries)", where, i,
                      field, v, table, n);
}

static bool in(int64_t v, size_t n)
{
    return v >= 0 && (uint64_t)v < n;
}

static int check_value(const ps_otlp_request_t *r, const ps_otlp_value_t *v)
{
    return v->kind == PS_OTLP_STRINDEX && !in(v->i, r->nstrings);
}

static int check_dictionary(const ps_otlp_request_t *r, const ps_pprof_limits_t *lim, ps_err_t *err)
{
    if (r->nstrings > lim->max_strings)
        return ps_err_set(err, PS_ETOOBIG, "dictionary.string_table: %zu strings; limit %" PRIu32, r->nstrings,
                          lim->max_strings);
    if (r->nlocations > lim->max_locations)
        return ps_err_set(err, PS_ETOOBIG, "dictionary.location_table: %zu locations; limit %" PRIu32, r->nlocations,
                          lim->max_locations);
    if (r->nfunctions > lim->max_functions)
        return ps_err_set(err, PS_ETOOBIG, "dictionary.function_table: %zu functions; limit %" PRIu32, r->nfunctions,
                          lim->max_functions);
    if (r->nmappings > lim->max_mappings)
        return ps_err_set(err, PS_ETOOBIG, "dictionary.mapping_table: %zu mappings; limit %" PRIu32, r->nmappings,
                          lim->max_mappings);
    if (r->nstacks > lim->max_locations)
        return ps_err_set(err, PS_ETOOBIG, "dictionary.stack_table: %zu stacks; limit %" PRIu32, r->nstacks,
                          lim->max_locations);
    if (r->nattrs > lim->max_strings || r->nlinks > lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "dictionary: %zu attributes, %zu links; limit %" PRIu32 " and %" PRIu32,
                          r->nattrs, r->nlinks, lim->max_strings, lim->max_samples);
    for (size_t i = 0; i < r->nstrings; i++) {
        size_t n = strlen(r->strings[i]);
        if (n > lim->max_string_len)
            return ps_err_set(err, PS_ETOOBIG, "dictionary.string_table[%zu]: %zu bytes; limit %" PRIu32, i, n,
                              lim->max_string_len);
    }
    for (size_t i = 0; i < r->nmappings; i++) {
        const ps_otlp_mapping_t *m = &r->mappings[i];
        if (!in(m->filename, r->nstrings))
            return idx_err(err, "mapping_table", i, "filename_strindex", m->filename, "string_table", r->nstrings);
        for (size_t k = 0; k < m->nattrs; k++)
            if (!in(m->attrs[k], r->nattrs)) {
                char f[48];
                snprintf(f, sizeof(f), "attribute_indices[%zu]", k);
                return idx_err(err, "mapping_table", i, f, m->attrs[k], "attribute_table", r->nattrs);
            }
    }
    for (size_t i = 0; i < r->nfunctions; i++) {
        const ps_otlp_function_t *f = &r->functions[i];
        if (!in(f->name, r->nstrings))
            return idx_err(err, "function_table", i, "name_strindex", f->name, "string_table", r->nstrings);
        if (!in(f->system_name, r->nstrings))
            return idx_err(err, "function_table", i, "system_name_strindex", f->system_name, "string_table",
                           r->nstrings);
        if (!in(f->filename, r->nstrings))
            return idx_err(err, "function_table", i, "filename_strindex", f->filename, "string_table", r->nstrings);
    }
    for (size_t i = 0; i < r->nlocations; i++) {
        const ps_otlp_location_t *l = &r->locations[i];
        if (!in(l->mapping, r->nmappings) && !(l->mapping == 0 && r->nmappings == 0))
            return idx_err(err, "location_table", i, "mapping_index", l->mapping, "mapping_table", r->nmappings);
        if (l->nlines > lim->max_lines)
            return ps_err_set(err, PS_ETOOBIG, "dictionary.location_table[%zu].lines: %zu lines; limit %" PRIu32, i,
                              l->nlines, lim->max_lines);
        for (size_t k = 0; k < l->nlines; k++)
            if (!in(l->lines[k].function, r->nfunctions) && !(l->lines[k].function == 0 && r->nfunctions == 0)) {
                char f[48];
                snprintf(f, sizeof(f), "lines[%zu].function_index", k);
                return idx_err(err, "location_table", i, f, l->lines[k].function, "function_table", r->nfunctions);
            }
    }
    for (size_t i = 0; i < r->nattrs; i++) {
        if (!in(r->attrs[i].key, r->nstrings))
            return idx_err(err, "attribute_table", i, "key_strindex", r->attrs[i].key, "string_table", r->nstrings);
        if (check_value(r, &r->attrs[i].v))
            return idx_err(err, "attribute_table", i, "value.string_value_strindex", r->attrs[i].v.i, "string_table",
                           r->nstrings);
    }
    for (size_t i = 0; i < r->nstacks; i++) {
        const ps_otlp_stack_t *s = &r->stacks[i];
        if (s->n > lim->max_stack_depth)
            return ps_err_set(err, PS_ETOOBIG, "dictionary.stack_table[%zu]: %zu locations; limit %" PRIu32, i, s->n,
                              lim->max_stack_depth);
        for (size_t k = 0; k < s->n; k++)
            if (!in(s->locs[k], r->nlocations)) {
                char f[48];
                snprintf(f, sizeof(f), "location_indices[%zu]", k);
                return idx_err(err, "stack_table", i, f, s->locs[k], "location_table", r->nlocations);
            }
    }
    return 0;
}

/* ---- attribute values ---------------------------------------------------------------------------- */

static bool str_is(const ps_otlp_request_t *r, int32_t i, const char *s)
{
    return in(i, r->nstrings) && strcmp(r->strings[i], s) == 0;
}

/* The text of a value as Pyroscope reads it (strings, integers, string indexes); NULL when none
 * or empty. buf holds an integer's digits. */
static const char *value_text(const ps_otlp_request_t *r, const ps_otlp_value_t *v, char *buf, size_t size,
                              size_t *len)
{
    const char *s = NULL;
    switch (v->kind) {
    case PS_OTLP_STR:
        s = v->s;
        *len = v->len;
        break;
    case PS_OTLP_INT:
        *len = (size_t)snprintf(buf, size, "%" PRId64, v->i);
        s = buf;
        break;
    case PS_OTLP_STRINDEX:
        if (in(v->i, r->nstrings)) {
            s = r->strings[v->i];
            *len = strlen(s);
        }
        break;
    default:
        break;
    }
    return s != NULL && *len > 0 ? s : NULL;
}

/* The key of a resource or scope attribute */
static const char *kv_key(const ps_otlp_request_t *r, const ps_otlp_kv_t *kv, size_t *len)
{
    if (kv->klen > 0) {
        *len = kv->klen;
        return kv->key;
    }
    if (kv->key_strindex > 0 && in(kv->key_strindex, r->nstrings)) {
        *len = strlen(r->strings[kv->key_strindex]);
        return r->strings[kv->key_strindex];
    }
    *len = 0;
    return "";
}

/* ---- series labels ------------------------------------------------------------------------------- */

/* name sanitised to a Prometheus label name (the rule at the top), from arena */
static char *sanitise(const char *s, size_t n, ps_arena_t *arena, size_t *out_len)
{
    bool digit = n > 0 && s[0] >= '0' && s[0] <= '9';
    char *o = ps_arena_alloc(arena, n + 2);
    size_t k = 0;
    if (digit)
        o[k++] = '_';
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        o[k++] = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' ? c : '_';
    }
    o[k] = '\0';
    *out_len = k;
    return o;
}

/* Adds the attributes kvs (resource's or scope's) to ls (first of a name wins). */
static int add_kv_labels(const ps_otlp_request_t *r, const ps_otlp_kv_t *kvs, size_t n, const char *what,
                         ps_arena_t *arena, ps_label_pair_t *pairs, uint32_t *np, ps_err_t *err)
{
    for (size_t i = 0; i < n; i++) {
        size_t klen, vlen, nlen;
        char num[24];
        const char *key = kv_key(r, &kvs[i], &klen);
        const char *val = value_text(r, &kvs[i].v, num, sizeof(num), &vlen);
        if (val == NULL || klen == 0 || (klen >= 2 && key[0] == '_' && key[1] == '_'))
            continue;
        char *name = sanitise(key, klen, arena, &nlen);
        if (strcmp(name, "service_name") == 0)
            continue; /* the service's own label (the rule at the top) */
        bool seen = false;
        for (uint32_t k = 0; k < *np && !seen; k++)
            seen = pairs[k].nlen == nlen && memcmp(pairs[k].name, name, nlen) == 0;
        if (seen)
            continue;
        if (nlen > PS_LABEL_NAME_MAX)
            return ps_err_set(err, PS_EINVAL, "%s attribute \"%.64s...\": name longer than %d bytes", what, key,
                              PS_LABEL_NAME_MAX);
        if (vlen > PS_LABEL_VALUE_MAX)
            return ps_err_set(err, PS_EINVAL, "%s attribute \"%.64s\": value longer than %d bytes", what, key,
                              PS_LABEL_VALUE_MAX);
        if (*np + 2 >= PS_LABELS_MAX) /* room for service_name and __name__ */
            return ps_err_set(err, PS_EINVAL, "%s attributes: more than %d labels", what, PS_LABELS_MAX - 2);
        pairs[*np] = (ps_label_pair_t){name, ps_arena_strndup(arena, val, vlen), (uint32_t)nlen, (uint32_t)vlen};
        (*np)++;
    }
    return 0;
}

/* ---- the conversion of one profile --------------------------------------------------------------- */

enum { CONV_NONE, CONV_CPU, CONV_OFFCPU };

/* What the remap arrays hold for the service being built; entries touched are reset after it. */
typedef struct conv {
    const ps_otlp_request_t *r;
    ps_arena_t *arena;
    uint32_t *str_map, *loc_map, *fn_map, *map_map; /* wire index -> profile index + 0 (0: not yet) */
    uint32_t *attr_key, *attr_val;                  /* attribute -> label key/str string index */
    uint32_t *touched;                              /* entries to reset: tagged by table in the top bits */
    size_t ntouched, touched_cap;
    /* the profile being built */
    ps_str_t *strings;
    uint32_t nstrings, strings_cap;
    ps_location_t *locs;
    uint32_t nlocs, locs_cap;
    ps_function_t *fns;
    uint32_t nfns, fns_cap;
    ps_mapping_t *maps;
    uint32_t nmaps, maps_cap;
    uint32_t span_key, trace_key;
} conv_t;

enum { T_STR = 0, T_LOC = 1, T_FN = 2, T_MAP = 3, T_ATTR = 4 };

static void *grow(ps_arena_t *arena, void *p, uint32_t n, uint32_t *cap, size_t size)
{
    if (n < *cap)
        return p;
    uint32_t nc = *cap ? *cap * 2 : 64;
    void *np = ps_arena_alloc(arena, (size_t)nc * size);
    if (n)
        memcpy(np, p, (size_t)n * size);
    *cap = nc;
    return np;
}

static void touch(conv_t *c, uint32_t table, uint32_t i)
{
    if (c->ntouched == c->touched_cap) {
        size_t nc = c->touched_cap ? c->touched_cap * 2 : 1024;
        uint32_t *n = ps_arena_alloc(c->arena, nc * sizeof(*n) * 2);
        if (c->ntouched)
            memcpy(n, c->touched, c->ntouched * sizeof(*n) * 2);
        c->touched = n;
        c->touched_cap = nc;
    }
    c->touched[2 * c->ntouched] = table;
    c->touched[2 * c->ntouched + 1] = i;
    c->ntouched++;
}

static void reset(conv_t *c)
{
    for (size_t k = 0; k < c->ntouched; k++) {
        uint32_t t = c->touched[2 * k], i = c->touched[2 * k + 1];
        switch (t) {
        case T_STR: c->str_map[i] = 0; break;
        case T_LOC: c->loc_map[i] = 0; break;
        case T_FN: c->fn_map[i] = 0; break;
        case T_MAP: c->map_map[i] = 0; break;
        default: c->attr_key[i] = 0; c->attr_val[i] = 0; break;
        }
    }
    c->ntouched = 0;
    c->nstrings = 1; /* strings[0] = "" */
    c->nlocs = c->nfns = c->nmaps = 0;
    c->span_key = c->trace_key = 0;
}

static uint32_t add_str(conv_t *c, const char *s, size_t n)
{
    if (n == 0)
        return 0;
    c->strings = grow(c->arena, c->strings, c->nstrings, &c->strings_cap, sizeof(*c->strings));
    c->strings[c->nstrings] = (ps_str_t){s, (uint32_t)n};
    return c->nstrings++;
}

static uint32_t map_str(conv_t *c, int32_t i)
{
    if (i <= 0 || c->r->strings[i][0] == '\0')
        return 0;
    if (c->str_map[i] == 0) {
        c->str_map[i] = add_str(c, c->r->strings[i], strlen(c->r->strings[i]));
        touch(c, T_STR, (uint32_t)i);
    }
    return c->str_map[i];
}

static uint32_t map_fn(conv_t *c, int32_t i)
{
    if (i == 0)
        return 0; /* entry 0: no function */
    if (c->fn_map[i] == 0) {
        const ps_otlp_function_t *f = &c->r->functions[i];
        c->fns = grow(c->arena, c->fns, c->nfns, &c->fns_cap, sizeof(*c->fns));
        c->fns[c->nfns] = (ps_function_t){map_str(c, f->name), map_str(c, f->system_name), map_str(c, f->filename),
                                          f->start_line};
        c->fn_map[i] = ++c->nfns;
        touch(c, T_FN, (uint32_t)i);
    }
    return c->fn_map[i];
}

static uint32_t map_mapping(conv_t *c, int32_t i)
{
    if (i == 0)
        return 0; /* entry 0: no mapping */
    if (c->map_map[i] == 0) {
        const ps_otlp_request_t *r = c->r;
        const ps_otlp_mapping_t *m = &r->mappings[i];
        uint32_t build_id = 0;
        for (size_t k = 0; k < m->nattrs && build_id == 0; k++) {
            const ps_otlp_attr_t *a = &r->attrs[m->attrs[k]];
            size_t len;
            char num[24];
            const char *v;
            if (str_is(r, a->key, BUILD_ID_KEY) && (v = value_text(r, &a->v, num, sizeof(num), &len)) != NULL)
                build_id = add_str(c, ps_arena_strndup(c->arena, v, len), len);
        }
        c->maps = grow(c->arena, c->maps, c->nmaps, &c->maps_cap, sizeof(*c->maps));
        c->maps[c->nmaps] = (ps_mapping_t){m->memory_start, m->memory_limit, m->file_offset, map_str(c, m->filename),
                                           build_id, PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_FILENAMES |
                                                         PS_MAP_HAS_LINE_NUMBERS | PS_MAP_HAS_INLINE_FRAMES};
        c->map_map[i] = ++c->nmaps;
        touch(c, T_MAP, (uint32_t)i);
    }
    return c->map_map[i];
}

static uint32_t map_loc(conv_t *c, int32_t i)
{
    if (c->loc_map[i] == 0) {
        const ps_otlp_location_t *l = &c->r->locations[i];
        uint32_t mi = map_mapping(c, l->mapping);
        ps_line_t *lines = l->nlines ? ps_arena_alloc(c->arena, l->nlines * sizeof(*lines)) : NULL;
        /* Pyroscope's survey: a mapping has functions (lines, file names, inline frames) only when
         * every location of it has them */
        uint32_t flags = l->nlines ? PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_FILENAMES | PS_MAP_HAS_LINE_NUMBERS |
                                         (l->nlines > 1 ? PS_MAP_HAS_INLINE_FRAMES : 0)
                                   : 0;
        for (size_t k = 0; k < l->nlines; k++) {
            lines[k] = (ps_line_t){map_fn(c, l->lines[k].function), l->lines[k].line, l->lines[k].column};
            if (l->lines[k].function <= 0)
                flags &= ~(uint32_t)PS_MAP_HAS_FUNCTIONS;
            else if (c->r->functions[l->lines[k].function].filename <= 0)
                flags &= ~(uint32_t)PS_MAP_HAS_FILENAMES;
            if (l->lines[k].line <= 0)
                flags &= ~(uint32_t)PS_MAP_HAS_LINE_NUMBERS;
        }
        if (mi != 0)
            c->maps[mi - 1].flags &= flags;
        c->locs = grow(c->arena, c->locs, c->nlocs, &c->locs_cap, sizeof(*c->locs));
        c->locs[c->nlocs] = (ps_location_t){mi, l->address, 0, (uint32_t)l->nlines, lines};
        c->loc_map[i] = ++c->nlocs;
        touch(c, T_LOC, (uint32_t)i);
    }
    return c->loc_map[i];
}

/* the pprof label of attribute i (false: none, service.name or no string value) */
static bool attr_label(conv_t *c, int32_t i, ps_label_t *out)
{
    if (c->attr_key[i] == 0) {
        const ps_otlp_attr_t *a = &c->r->attrs[i];
        size_t len;
        char num[24];
        const char *v = value_text(c->r, &a->v, num, sizeof(num), &len);
        uint32_t key = str_is(c->r, a->key, SVC_KEY) ? 0 : map_str(c, a->key);
        if (v == NULL || key == 0) {
            c->attr_key[i] = UINT32_MAX; /* no label */
        } else {
            c->attr_key[i] = key;
            c->attr_val[i] = a->v.kind == PS_OTLP_STRINDEX ? map_str(c, (int32_t)a->v.i)
                                                            : add_str(c, ps_arena_strndup(c->arena, v, len), len);
        }
        touch(c, T_ATTR, (uint32_t)i);
    }
    if (c->attr_key[i] == UINT32_MAX)
        return false;
    *out = (ps_label_t){c->attr_key[i], c->attr_val[i], 0, 0};
    return true;
}

static uint32_t hex_str(conv_t *c, const uint8_t *b, size_t n)
{
    char *h = ps_arena_alloc(c->arena, 2 * n + 1);
    static const char d[] = "0123456789abcdef";
    for (size_t k = 0; k < n; k++) {
        h[2 * k] = d[b[k] >> 4];
        h[2 * k + 1] = d[b[k] & 15];
    }
    h[2 * n] = '\0';
    return add_str(c, h, 2 * n);
}

/* ---- the request --------------------------------------------------------------------------------- */

/* The service name of the samples without one: the resource's service.name, else unknown_service
 * (":" process.executable.name). */
static const char *resource_service(const ps_otlp_request_t *r, const ps_otlp_resource_t *res, ps_arena_t *arena)
{
    const char *exe = NULL;
    size_t exe_len = 0;
    for (size_t i = 0; i < res->nattrs; i++) {
        size_t klen, vlen;
        char num[24];
        const char *key = kv_key(r, &res->attrs[i], &klen);
        const char *v = value_text(r, &res->attrs[i].v, num, sizeof(num), &vlen);
        if (v == NULL)
            continue;
        if (klen == strlen(SVC_KEY) && memcmp(key, SVC_KEY, klen) == 0)
            return ps_arena_strndup(arena, v, vlen);
        if (exe == NULL && klen == strlen(EXE_KEY) && memcmp(key, EXE_KEY, klen) == 0) {
            exe = ps_arena_strndup(arena, v, vlen);
            exe_len = vlen;
        }
    }
    if (exe == NULL)
        return "unknown_service";
    char *s = ps_arena_alloc(arena, exe_len + 17);
    memcpy(s, "unknown_service:", 16);
    memcpy(s + 16, exe, exe_len + 1);
    return s;
}

typedef struct group {
    const char *svc;
    size_t svc_len;
    uint32_t n, at; /* samples, first in the order */
} group_t;

/* The checks of one profile that refuse it (the samples' indexes and values). */
static int check_profile(const ps_otlp_request_t *r, const ps_otlp_profile_t *p, int kind, ps_err_t *err)
{
    if (!p->has_sample_type)
        return ps_err_set(err, PS_EINVAL, "sample_type is missing");
    for (size_t i = 0; i < p->nsamples; i++) {
        const ps_otlp_sample_t *s = &p->samples[i];
        if (!in(s->stack, r->nstacks))
            return ps_err_set(err, PS_EINVAL, "samples[%zu].stack_index: %" PRId32 " out of range (stack_table has %zu entries)",
                              i, s->stack, r->nstacks);
        if (s->link != 0 && !in(s->link, r->nlinks))
            return ps_err_set(err, PS_EINVAL, "samples[%zu].link_index: %" PRId32 " out of range (link_table has %zu entries)",
                              i, s->link, r->nlinks);
        for (size_t k = 0; k < s->nattrs; k++)
            if (!in(s->attrs[k], r->nattrs))
                return ps_err_set(err, PS_EINVAL,
                                  "samples[%zu].attribute_indices[%zu]: %" PRId32 " out of range (attribute_table has %zu entries)",
                                  i, k, s->attrs[k], r->nattrs);
        if (s->nattrs > 64)
            return ps_err_set(err, PS_ETOOBIG, "samples[%zu].attribute_indices: %zu attributes; limit 64", i, s->nattrs);
        if (s->nvalues == 0 && s->ntimestamps == 0)
            return ps_err_set(err, PS_EINVAL, "samples[%zu]: no values and no timestamps", i);
        if (s->nvalues > 1 && kind != CONV_OFFCPU)
            return ps_err_set(err, PS_EINVAL, "samples[%zu].values: %zu values, expected 1 (the profile has one sample type)",
                              i, s->nvalues);
    }
    return 0;
}

typedef struct otlp_state {
    const ps_otlp_request_t *r;
    const ps_pprof_limits_t *lim;
    ps_arena_t *arena;
    conv_t c;
    int32_t *svc_group; /* attribute -> group of the profile being split (-1: not yet) */
    uint32_t *order;
    size_t order_cap;
    ps_otlp_result_t *res;
} otlp_state_t;

static int profile_kind(const ps_otlp_request_t *r, const ps_otlp_profile_t *p)
{
    bool period = p->has_period_type && p->period != 0;
    if (str_is(r, p->type, "samples") && str_is(r, p->unit, "count") && period && str_is(r, p->ptype, "cpu") &&
        str_is(r, p->punit, "nanoseconds"))
        return CONV_CPU;
    if (str_is(r, p->type, "off_cpu") && str_is(r, p->unit, "nanoseconds") &&
        (!period || (p->ptype == 0 && p->punit == 0)))
        return CONV_OFFCPU;
    return CONV_NONE;
}

/* Converts one OTLP profile into appends (one per service), or refuses it (err). */
static int convert_profile(otlp_state_t *st, const ps_otlp_profile_t *p, const ps_labels_t *base_in,
                           const char *res_svc, uint32_t src, const char *where, ps_err_t *err)
{
    const ps_otlp_request_t *r = st->r;
    ps_arena_t *arena = st->arena;
    int kind = profile_kind(r, p);
    int rc;
    if (!in(p->type, r->nstrings) || !in(p->unit, r->nstrings))
        return ps_err_set(err, PS_EINVAL, "sample_type: string index %" PRId32 " out of range (string_table has %zu entries)",
                          in(p->type, r->nstrings) ? p->unit : p->type, r->nstrings);
    if (p->has_period_type && (!in(p->ptype, r->nstrings) || !in(p->punit, r->nstrings)))
        return ps_err_set(err, PS_EINVAL, "period_type: string index %" PRId32 " out of range (string_table has %zu entries)",
                          in(p->ptype, r->nstrings) ? p->punit : p->ptype, r->nstrings);
    if ((rc = check_profile(r, p, kind, err)) != 0)
        return rc;
    if (p->nsamples == 0)
        return 0;

    /* the samples by service: attribute index of their service.name -> group */
    group_t *groups = NULL;
    uint32_t ngroups = 0, gcap = 0;
    uint32_t *gof = ps_arena_alloc(arena, p->nsamples * sizeof(*gof));
    int32_t *touched_attrs = ps_arena_alloc(arena, (p->nsamples + 1) * sizeof(int32_t));
    size_t ntouched_attrs = 0;
    int32_t res_group = -1;
    ps_hmap_t names; /* service name -> group */
    ps_hmap_init(&names);
    for (size_t i = 0; i < p->nsamples; i++) {
        const ps_otlp_sample_t *s = &p->samples[i];
        int32_t ai = -1;
        for (size_t k = 0; k < s->nattrs && ai < 0; k++) {
            const ps_otlp_attr_t *a = &r->attrs[s->attrs[k]];
            size_t len;
            char num[24];
            if (str_is(r, a->key, SVC_KEY) && value_text(r, &a->v, num, sizeof(num), &len) != NULL)
                ai = s->attrs[k];
        }
        int32_t g = ai < 0 ? res_group : st->svc_group[ai];
        if (g < 0) {
            const char *svc;
            size_t len;
            char num[24];
            if (ai < 0) {
                svc = res_svc;
                len = strlen(res_svc);
            } else {
                svc = value_text(r, &r->attrs[ai].v, num, sizeof(num), &len);
                svc = ps_arena_strndup(arena, svc, len);
            }
            uint64_t known;
            if (ps_hmap_get(&names, svc, len, &known)) { /* the same name by another attribute */
                g = (int32_t)known;
            } else {
                groups = grow(arena, groups, ngroups, &gcap, sizeof(*groups));
                groups[ngroups] = (group_t){svc, len, 0, 0};
                ps_hmap_put(&names, svc, len, ngroups);
                g = (int32_t)ngroups++;
            }
            if (ai < 0) {
                res_group = g;
            } else {
                st->svc_group[ai] = g;
                touched_attrs[ntouched_attrs++] = ai;
            }
        }
        gof[i] = (uint32_t)g;
        groups[g].n++;
    }
    ps_hmap_dispose(&names);
    for (size_t k = 0; k < ntouched_attrs; k++)
        st->svc_group[touched_attrs[k]] = -1;
    if (st->res->napps + ngroups > MAX_APPENDS)
        return ps_err_set(err, PS_ETOOBIG, "%" PRIu32 " services: more than %d profiles of a service in one request",
                          ngroups, MAX_APPENDS);
    uint32_t at = 0;
    for (uint32_t g = 0; g < ngroups; g++) {
        groups[g].at = at;
        at += groups[g].n;
        groups[g].n = 0;
    }
    uint32_t *order = ps_arena_alloc(arena, p->nsamples * sizeof(*order));
    for (size_t i = 0; i < p->nsamples; i++) {
        group_t *g = &groups[gof[i]];
        order[g->at + g->n++] = (uint32_t)i;
    }

    /* the series' labels but service_name are the same for each group */
    int64_t ts = p->time_unix_nano > 0 && p->time_unix_nano <= INT64_MAX ? (int64_t)p->time_unix_nano : ps_time_now();
    int64_t dur = p->duration_nano > 0 && p->duration_nano <= INT64_MAX ? (int64_t)p->duration_nano : DEFAULT_DURATION_NS;
    conv_t *c = &st->c;
    for (uint32_t g = 0; g < ngroups; g++) {
        reset(c);
        ps_profile_t *out = ps_arena_calloc(arena, 1, sizeof(*out));
        out->ntypes = 1;
        out->sample_types = ps_arena_calloc(arena, 1, sizeof(*out->sample_types));
        if (kind == CONV_CPU) {
            out->sample_types[0] = (ps_value_type_t){add_str(c, "cpu", 3), add_str(c, "nanoseconds", 11)};
            out->period_type = out->sample_types[0];
        } else {
            out->sample_types[0] = (ps_value_type_t){map_str(c, p->type), map_str(c, p->unit)};
            if (p->has_period_type && p->period != 0)
                out->period_type = (ps_value_type_t){map_str(c, p->ptype), map_str(c, p->punit)};
        }
        out->period = p->period;
        out->time_nanos = ts;
        out->duration_nanos = dur;
        out->default_sample_type = out->sample_types[0].type;
        out->nsamples = groups[g].n;
        out->samples = ps_arena_alloc(arena, groups[g].n * sizeof(*out->samples));
        for (uint32_t k = 0; k < groups[g].n; k++) {
            const ps_otlp_sample_t *s = &p->samples[order[groups[g].at + k]];
            ps_sample_t *o = &out->samples[k];
            const ps_otlp_stack_t *stk = &r->stacks[s->stack];
            o->nlocs = (uint32_t)stk->n;
            o->locs = ps_arena_alloc(arena, (stk->n + 1) * sizeof(*o->locs));
            for (size_t l = 0; l < stk->n; l++)
                o->locs[l] = map_loc(c, stk->locs[l]);
            o->values = ps_arena_alloc(arena, sizeof(int64_t));
            int64_t v = 0;
            if (s->nvalues == 0) {
                v = (int64_t)s->ntimestamps;
            } else {
                for (size_t l = 0; l < s->nvalues; l++) /* one, or off_cpu's sum */
                    v = (int64_t)((uint64_t)v + (uint64_t)s->values[l]);
            }
            if (kind == CONV_CPU)
                v = (int64_t)((uint64_t)v * (uint64_t)p->period);
            o->values[0] = v;
            o->labels = ps_arena_alloc(arena, (s->nattrs + 2) * sizeof(*o->labels));
            o->nlabels = 0;
            for (size_t l = 0; l < s->nattrs; l++)
                if (attr_label(c, s->attrs[l], &o->labels[o->nlabels]))
                    o->nlabels++;
            if (s->link != 0) {
                const ps_otlp_link_t *lk = &r->links[s->link];
                if (lk->span_len > 0) {
                    if (c->span_key == 0)
                        c->span_key = add_str(c, "span_id", 7);
                    o->labels[o->nlabels++] = (ps_label_t){c->span_key, hex_str(c, lk->span_id, lk->span_len), 0, 0};
                }
                if (lk->trace_len == 16) {
                    if (c->trace_key == 0)
                        c->trace_key = add_str(c, "trace_id", 8);
                    o->labels[o->nlabels++] = (ps_label_t){c->trace_key, hex_str(c, lk->trace_id, 16), 0, 0};
                }
            }
        }
        out->strings = c->strings;
        out->nstrings = c->nstrings;
        out->locations = c->locs;
        out->nlocations = c->nlocs;
        out->functions = c->fns;
        out->nfunctions = c->nfns;
        out->mappings = c->maps;
        out->nmappings = c->nmaps;
        /* the arrays now belong to out: the next group starts new ones */
        c->strings = NULL;
        c->strings_cap = 0;
        c->strings = grow(arena, NULL, 0, &c->strings_cap, sizeof(*c->strings));
        c->strings[0] = (ps_str_t){"", 0};
        c->locs = NULL;
        c->locs_cap = 0;
        c->fns = NULL;
        c->fns_cap = 0;
        c->maps = NULL;
        c->maps_cap = 0;

        /* the profile's name */
        const char *name;
        if (kind == CONV_CPU) {
            name = "process_cpu";
        } else if (kind == CONV_OFFCPU) {
            name = "off_cpu";
        } else {
            ps_str_t pt = p->has_period_type && p->period != 0 ? ps_profile_str(out, out->period_type.type)
                                                               : (ps_str_t){"", 0};
            if (pt.len > 0 && pt.len <= 64 && ps_metric_name_valid(pt.ptr, pt.len) && memchr(pt.ptr, ':', pt.len) == NULL)
                name = ps_arena_strndup(arena, pt.ptr, pt.len);
            else if ((rc = ps_ingest_infer_name(out, &name, err)) != 0)
                return rc;
        }
        size_t name_len = strlen(name);
        /* labels: service_name and the base */
        ps_labels_t base = {0};
        base.pairs = ps_arena_alloc(arena, (base_in->n + 1) * sizeof(*base.pairs));
        memcpy(base.pairs, base_in->pairs, base_in->n * sizeof(*base.pairs));
        base.n = base_in->n;
        if (groups[g].svc_len > PS_LABEL_VALUE_MAX)
            return ps_err_set(err, PS_EINVAL, "service.name \"%.64s...\": longer than %d bytes", groups[g].svc,
                              PS_LABEL_VALUE_MAX);
        base.pairs[base.n++] = (ps_label_pair_t){"service_name", groups[g].svc, 12, (uint32_t)groups[g].svc_len};
        if ((rc = ps_labels_normalize(&base, err)) != 0)
            return rc;
        bool by_name = ps_ingest_default_delta(name, name_len);
        uint8_t mode = by_name || ps_ingest_cumulative_type(ps_profile_str(out, out->sample_types[0].type))
                           ? PS_INGEST_DELTA
                           : PS_INGEST_ASIS;
        ps_append_t *app = ps_arena_calloc(arena, 1, sizeof(*app));
        if ((rc = ps_ingest_build(out, name, name_len, &base, ts, &mode, false, arena, app, err)) != 0)
            return rc;
        ps_otlp_result_t *res = st->res;
        if (res->napps == res->apps_cap) {
            size_t nc = res->apps_cap ? res->apps_cap * 2 : 16;
            ps_otlp_app_t *na = ps_arena_alloc(arena, nc * sizeof(*na));
            if (res->napps)
                memcpy(na, res->apps, res->napps * sizeof(*na));
            res->apps = na;
            res->apps_cap = nc;
        }
        res->apps[res->napps] = (ps_otlp_app_t){app, src, where};
        res->napps++;
    }
    return 0;
}

static int cmp_app_ts(const void *a, const void *b)
{
    const ps_append_t *x = ((const ps_otlp_app_t *)a)->app, *y = ((const ps_otlp_app_t *)b)->app;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

void ps_otlp_result_reject(ps_otlp_result_t *res, const ps_err_t *e, const char *fmt, ...)
{
    res->rejected++;
    if (res->msg[0] != '\0')
        return;
    char where[160];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(where, sizeof(where), fmt, ap);
    va_end(ap);
    snprintf(res->msg, sizeof(res->msg), "%.160s%s%.300s", where, where[0] ? ": " : "", e->msg);
}

int ps_ingest_otlp_prepare(const ps_otlp_request_t *r, const ps_pprof_limits_t *lim, ps_arena_t *arena,
                           ps_otlp_result_t *res, ps_err_t *err)
{
    ps_err_t ignored;
    if (err == NULL)
        err = &ignored;
    memset(res, 0, sizeof(*res));
    size_t nprofiles = 0, nsamples = 0;
    for (size_t i = 0; i < r->nresources; i++)
        for (size_t k = 0; k < r->resources[i].nscopes; k++) {
            const ps_otlp_scope_t *sc = &r->resources[i].scopes[k];
            nprofiles += sc->nprofiles;
            for (size_t p = 0; p < sc->nprofiles; p++)
                nsamples += sc->profiles[p].nsamples;
        }
    if (nsamples > lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "the request holds %zu samples; limit %" PRIu32, nsamples, lim->max_samples);
    if (nprofiles == 0)
        return 0;
    if (!r->has_dictionary)
        return ps_err_set(err, PS_EINVAL, "dictionary: missing (the request holds %zu profiles)", nprofiles);
    int rc = check_dictionary(r, lim, err);
    if (rc != 0)
        return rc;

    otlp_state_t st = {.r = r, .lim = lim, .arena = arena, .res = res};
    conv_t *c = &st.c;
    c->r = r;
    c->arena = arena;
    c->str_map = ps_arena_calloc(arena, r->nstrings + 1, sizeof(uint32_t));
    c->loc_map = ps_arena_calloc(arena, r->nlocations + 1, sizeof(uint32_t));
    c->fn_map = ps_arena_calloc(arena, r->nfunctions + 1, sizeof(uint32_t));
    c->map_map = ps_arena_calloc(arena, r->nmappings + 1, sizeof(uint32_t));
    c->attr_key = ps_arena_calloc(arena, r->nattrs + 1, sizeof(uint32_t));
    c->attr_val = ps_arena_calloc(arena, r->nattrs + 1, sizeof(uint32_t));
    c->strings = grow(arena, NULL, 0, &c->strings_cap, sizeof(*c->strings));
    c->strings[0] = (ps_str_t){"", 0};
    c->nstrings = 1;
    st.svc_group = ps_arena_alloc(arena, (r->nattrs + 1) * sizeof(int32_t));
    for (size_t i = 0; i <= r->nattrs; i++)
        st.svc_group[i] = -1;

    uint32_t src = 0;
    ps_label_pair_t *pairs = ps_arena_alloc(arena, PS_LABELS_MAX * sizeof(*pairs));
    for (size_t i = 0; i < r->nresources; i++) {
        const ps_otlp_resource_t *rs = &r->resources[i];
        const char *res_svc = resource_service(r, rs, arena);
        /* the resource's labels once, each scope's after them */
        uint32_t res_np = 0;
        ps_err_t res_e;
        ps_err_clear(&res_e);
        ps_label_pair_t *res_pairs = ps_arena_alloc(arena, PS_LABELS_MAX * sizeof(*res_pairs));
        int res_rc = add_kv_labels(r, rs->attrs, rs->nattrs, "resource", arena, res_pairs, &res_np, &res_e);
        for (size_t k = 0; k < rs->nscopes; k++) {
            const ps_otlp_scope_t *sc = &rs->scopes[k];
            uint32_t np = res_np;
            ps_err_t e = res_e;
            memcpy(pairs, res_pairs, res_np * sizeof(*pairs));
            int lrc = res_rc;
            if (lrc == 0)
                lrc = add_kv_labels(r, sc->attrs, sc->nattrs, "scope", arena, pairs, &np, &e);
            ps_labels_t base = {np, ps_arena_alloc(arena, (np + 1) * sizeof(*pairs)), 0};
            memcpy(base.pairs, pairs, np * sizeof(*pairs));
            for (size_t p = 0; p < sc->nprofiles; p++, src++) {
                if (lrc != 0) {
                    ps_otlp_result_reject(res, &e, "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]", i, k, p);
                    continue;
                }
                ps_err_t pe;
                ps_err_clear(&pe);
                size_t before = res->napps;
                char where[160];
                snprintf(where, sizeof(where), "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]", i, k, p);
                if (convert_profile(&st, &sc->profiles[p], &base, res_svc, src, ps_arena_strndup(arena, where, strlen(where)),
                                    &pe) != 0) {
                    res->napps = before; /* the services converted before the refusal are dropped too */
                    ps_otlp_result_reject(res, &pe, "resource_profiles[%zu].scope_profiles[%zu].profiles[%zu]", i, k,
                                          p);
                }
            }
        }
    }
    res->nprofiles = nprofiles;
    res->counted = ps_arena_calloc(arena, nprofiles + 1, 1);
    if (res->napps > 1)
        qsort(res->apps, res->napps, sizeof(*res->apps), cmp_app_ts); /* a series' profiles in time order, as the store wants */
    return 0;
}

int ps_ingest_otlp_decode(int codec, const void *body, size_t n, size_t budget, const ps_pprof_limits_t *lim,
                          ps_arena_t *arena, ps_otlp_result_t *res, ps_err_t *err)
{
    ps_otlp_request_t req;
    int rc = ps_otlp_decode(codec, body, n, arena, budget, &req, err);
    if (rc != 0)
        return rc;
    return ps_ingest_otlp_prepare(&req, lim, arena, res, err);
}

void ps_ingest_otlp_refused(ps_otlp_result_t *res, size_t i, const ps_err_t *e)
{
    const ps_otlp_app_t *a = &res->apps[i];
    if (res->counted[a->src])
        return; /* its OTLP profile is counted once */
    res->counted[a->src] = 1;
    ps_otlp_result_reject(res, e, "%s", a->where);
}

