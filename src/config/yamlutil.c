/*
 * yamlutil.c - the YAML walking pieces config.c and webconfig.c share (see config_int.h): node
 * typing as yaml.v2's, error messages "FILE:LINE:COL: PATH: WHAT", the key path, reading the file.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config_int.h"
#include "core/file.h"
#include "core/timeutil.h"

bool ps_yaml_is_plain(const yaml_node_t *n)
{
    return n->data.scalar.style == YAML_PLAIN_SCALAR_STYLE || n->data.scalar.style == YAML_ANY_SCALAR_STYLE;
}

bool ps_yaml_is_null(const yaml_node_t *n)
{
    if (n == NULL)
        return true;
    if (n->type != YAML_SCALAR_NODE)
        return false;
    if (n->tag != NULL && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
        return true;
    if (!ps_yaml_is_plain(n))
        return false;
    const char *s = ps_yaml_sval(n);
    size_t l = ps_yaml_slen(n);
    return l == 0 || (l == 1 && s[0] == '~') ||
           (l == 4 && (memcmp(s, "null", 4) == 0 || memcmp(s, "Null", 4) == 0 || memcmp(s, "NULL", 4) == 0));
}

const char *ps_yaml_kind(const yaml_node_t *n)
{
    switch (n->type) {
    case YAML_MAPPING_NODE: return "a mapping";
    case YAML_SEQUENCE_NODE: return "a list";
    case YAML_SCALAR_NODE: return ps_yaml_is_null(n) ? "null" : "a scalar";
    default: return "nothing";
    }
}

static bool str_eq(const yaml_node_t *n, const char *s)
{
    return ps_yaml_slen(n) == strlen(s) && memcmp(ps_yaml_sval(n), s, ps_yaml_slen(n)) == 0;
}

bool ps_yaml_bool(const yaml_node_t *n, bool *out)
{
    static const char *const yes[] = {"true", "True", "TRUE", "yes", "Yes", "YES", "on", "On", "ON", "y", "Y"};
    static const char *const no[] = {"false", "False", "FALSE", "no", "No", "NO", "off", "Off", "OFF", "n", "N"};
    if (n->type != YAML_SCALAR_NODE || !ps_yaml_is_plain(n))
        return false;
    for (size_t i = 0; i < sizeof(yes) / sizeof(yes[0]); i++) {
        if (str_eq(n, yes[i]))
            return *out = true, true;
        if (str_eq(n, no[i]))
            return *out = false, true;
    }
    return false;
}

yaml_node_t *ps_yaml_node(ps_yaml_walk_t *w, int i) { return yaml_document_get_node(w->doc, i); }

__attribute__((format(printf, 2, 3))) static size_t push(ps_yaml_walk_t *w, const char *fmt, ...)
{
    size_t old = w->plen;
    if (w->plen + 1 < sizeof(w->path)) {
        va_list ap;
        va_start(ap, fmt);
        int k = vsnprintf(w->path + w->plen, sizeof(w->path) - w->plen, fmt, ap);
        va_end(ap);
        if (k > 0)
            w->plen += (size_t)k;
        if (w->plen >= sizeof(w->path))
            w->plen = sizeof(w->path) - 1;
    }
    return old;
}

size_t ps_yaml_push_key(ps_yaml_walk_t *w, const char *key)
{
    return w->plen == 0 ? push(w, "%s", key) : push(w, ".%s", key);
}

size_t ps_yaml_push_idx(ps_yaml_walk_t *w, size_t i) { return push(w, "[%zu]", i); }

void ps_yaml_pop(ps_yaml_walk_t *w, size_t old)
{
    w->plen = old;
    w->path[old] = '\0';
}

int ps_yaml_fail(ps_yaml_walk_t *w, const yaml_node_t *n, const char *fmt, ...)
{
    char what[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    size_t line = n != NULL ? n->start_mark.line + 1 : 1, col = n != NULL ? n->start_mark.column + 1 : 1;
    if (w->plen == 0)
        return ps_err_set(w->err, PS_EINVAL, "%s:%zu:%zu: %s", w->name, line, col, what);
    return ps_err_set(w->err, PS_EINVAL, "%s:%zu:%zu: %s: %s", w->name, line, col, w->path, what);
}

int ps_yaml_get_str(ps_yaml_walk_t *w, const yaml_node_t *n, const char **out)
{
    if (n->type != YAML_SCALAR_NODE)
        return ps_yaml_fail(w, n, "expected a string, got %s", ps_yaml_kind(n));
    if (memchr(ps_yaml_sval(n), '\0', ps_yaml_slen(n)) != NULL)
        return ps_yaml_fail(w, n, "the string contains a NUL character");
    *out = ps_arena_strndup(w->a, ps_yaml_sval(n), ps_yaml_slen(n));
    return 0;
}

/* Line and column (1-based) of byte offset off in data. */
static void offset_pos(const char *data, size_t n, size_t off, size_t *line, size_t *col)
{
    *line = 1;
    *col = 1;
    for (size_t i = 0; i < off && i < n; i++) {
        if (data[i] == '\n') {
            (*line)++;
            *col = 1;
        } else {
            (*col)++;
        }
    }
}

int ps_yaml_error(const yaml_parser_t *p, const char *data, size_t n, const char *name, ps_err_t *err)
{
    size_t line = p->problem_mark.line + 1, col = p->problem_mark.column + 1;
    if (p->error == YAML_READER_ERROR)
        offset_pos(data, n, p->problem_offset, &line, &col);
    const char *problem = p->problem != NULL ? p->problem : "YAML error";
    if (p->error == YAML_MEMORY_ERROR)
        problem = "out of memory";
    if (p->context != NULL)
        return ps_err_set(err, PS_EINVAL, "%s:%zu:%zu: invalid YAML: %s %s (line %zu, column %zu)", name, line, col,
                          problem, p->context, p->context_mark.line + 1, p->context_mark.column + 1);
    return ps_err_set(err, PS_EINVAL, "%s:%zu:%zu: invalid YAML: %s", name, line, col, problem);
}

int ps_yaml_load_first(yaml_parser_t *p, yaml_document_t *doc, const char *data, size_t n, const char *name,
                       ps_err_t *err)
{
    if (!yaml_parser_initialize(p))
        return ps_err_set(err, PS_ENOMEM, "%s: out of memory", name);
    yaml_parser_set_input_string(p, (const unsigned char *)data, n);
    if (!yaml_parser_load(p, doc)) {
        int rc = ps_yaml_error(p, data, n, name, err);
        yaml_parser_delete(p);
        return rc;
    }
    return 0;
}

int ps_yaml_no_second(yaml_parser_t *p, const char *data, size_t n, const char *name, ps_err_t *err)
{
    yaml_document_t doc;
    if (!yaml_parser_load(p, &doc))
        return ps_yaml_error(p, data, n, name, err);
    int rc = 0;
    if (yaml_document_get_root_node(&doc) != NULL)
        rc = ps_err_set(err, PS_EINVAL, "%s:%zu:%zu: a second YAML document is not supported", name,
                        doc.start_mark.line + 1, doc.start_mark.column + 1);
    yaml_document_delete(&doc);
    return rc;
}

const char *ps_yaml_join_dir(ps_arena_t *a, const char *dir, const char *s)
{
    if (dir == NULL || s[0] == '/')
        return s;
    size_t dl = strlen(dir), sl = strlen(s);
    char *j = ps_arena_alloc(a, dl + sl + 2);
    memcpy(j, dir, dl);
    if (dl == 0 || dir[dl - 1] != '/')
        j[dl++] = '/';
    memcpy(j + dl, s, sl + 1);
    return j;
}

int ps_yaml_read_file(const char *path, unsigned max, ps_buf_t *b, char **dir, ps_err_t *err)
{
    *dir = NULL;
    /* a regular file only: a FIFO would block the thread applying the reload (core/file.h) */
    char why[128];
    int rc = 0;
    if (ps_file_read(path, max, b, why, sizeof(why)) != 0) {
        if (strncmp(why, "larger than", 11) == 0)
            rc = ps_err_set(err, PS_EINVAL, "%s: the file is larger than %u bytes", path, max);
        else
            rc = ps_err_set(err, PS_EINVAL, "%s: %s", path, why);
    }
    if (rc == 0) {
        /* relative names stay relative when the file is in the working directory */
        const char *slash = strrchr(path, '/');
        *dir = slash == NULL ? NULL : ps_xstrndup(path, slash == path ? 1 : (size_t)(slash - path));
    }
    return rc;
}

/* ---- scalars with a type ---- */

int ps_yaml_get_bool(ps_yaml_walk_t *w, const yaml_node_t *n, bool *out)
{
    if (ps_yaml_bool(n, out))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return ps_yaml_fail(w, n, "expected true or false, got %s", ps_yaml_kind(n));
    return ps_yaml_fail(w, n, "expected true or false, got \"%.64s\"", ps_yaml_sval(n));
}

int ps_yaml_get_duration(ps_yaml_walk_t *w, const yaml_node_t *n, int64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return ps_yaml_fail(w, n, "expected a duration such as 10s or 1m30s, got %s", ps_yaml_kind(n));
    if (ps_yaml_slen(n) == 1 && ps_yaml_sval(n)[0] == '0') {
        *out = 0;
        return 0;
    }
    ps_err_t e;
    ps_err_clear(&e);
    if (ps_parse_duration(ps_yaml_sval(n), ps_yaml_slen(n), 0, out, &e) != 0)
        return ps_yaml_fail(w, n, "%s", e.msg);
    return 0;
}

int ps_yaml_get_u64(ps_yaml_walk_t *w, const yaml_node_t *n, uint64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return ps_yaml_fail(w, n, "expected a non-negative integer, got %s", ps_yaml_kind(n));
    const char *s = ps_yaml_sval(n);
    size_t l = ps_yaml_slen(n);
    uint64_t v = 0;
    if (l == 0)
        return ps_yaml_fail(w, n, "expected a non-negative integer, got \"\"");
    for (size_t i = 0; i < l; i++) {
        if (s[i] < '0' || s[i] > '9')
            return ps_yaml_fail(w, n, "expected a non-negative integer, got \"%.64s\"", s);
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return ps_yaml_fail(w, n, "integer out of range: \"%.64s\"", s);
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

int ps_yaml_get_bytes(ps_yaml_walk_t *w, const yaml_node_t *n, uint64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return ps_yaml_fail(w, n, "expected a byte size such as 64MiB, got %s", ps_yaml_kind(n));
    const char *s = ps_yaml_sval(n);
    size_t l = ps_yaml_slen(n), i = 0;
    uint64_t v = 0;
    for (; i < l && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return ps_yaml_fail(w, n, "byte size \"%.64s\" is too large", s);
        v = v * 10 + d;
    }
    static const struct {
        const char *unit;
        unsigned shift;
    } units[] = {{"", 0},  {"B", 0},    {"KB", 10}, {"KiB", 10}, {"MB", 20},
                 {"MiB", 20}, {"GB", 30}, {"GiB", 30}, {"TB", 40}, {"TiB", 40}};
    if (i == 0)
        return ps_yaml_fail(w, n, "expected a byte size such as 64MiB, got \"%.64s\"", s);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        if (strlen(units[u].unit) == l - i && memcmp(units[u].unit, s + i, l - i) == 0) {
            if (units[u].shift > 0 && v > (UINT64_MAX >> units[u].shift))
                return ps_yaml_fail(w, n, "byte size \"%.64s\" is too large", s);
            *out = v << units[u].shift;
            return 0;
        }
    return ps_yaml_fail(w, n, "byte size \"%.64s\": unknown unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s);
}

int ps_yaml_get_file(ps_yaml_walk_t *w, const yaml_node_t *n, bool empty_ok, const char **out)
{
    const char *s;
    int rc = ps_yaml_get_str(w, n, &s);
    if (rc != 0)
        return rc;
    if (s[0] == '\0') {
        if (!empty_ok)
            return ps_yaml_fail(w, n, "empty file name");
        *out = s;
        return 0;
    }
    *out = ps_yaml_join_dir(w->a, w->dir, s);
    return 0;
}

/* ---- mappings as tables ---- */

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

static int unknown_key(ps_yaml_walk_t *w, const yaml_node_t *k, const ps_yaml_map_t *m)
{
    const char *key = ps_yaml_sval(k);
    for (const char *const *r = m->rejected; r != NULL && r[0] != NULL; r += 2)
        if (strcmp(key, r[0]) == 0)
            return ps_yaml_fail(w, k, "%s is not supported: %s", key, r[1]);
    size_t kl = strlen(key);
    if (m->sd_hint && kl > 11 && strcmp(key + kl - 11, "_sd_configs") == 0)
        return ps_yaml_fail(
            w, k, "%s is not supported: targets come from static_configs, file_sd_configs and http_sd_configs", key);
    if (m->suggest) {
        const char *best = NULL;
        size_t bd = 3;
        for (size_t i = 0; i < m->n; i++) {
            const char *name = m->fields[i].key;
            size_t d = edit_distance(key, name);
            if (d < bd && d * 3 <= strlen(name)) {
                bd = d;
                best = name;
            }
        }
        if (best != NULL)
            return ps_yaml_fail(w, k, "unknown field \"%.64s\" in %s (did you mean \"%s\"?)", key, m->what, best);
    }
    char list[300];
    size_t n = 0;
    list[0] = '\0';
    for (size_t i = 0; i < m->n && n < sizeof(list); i++) {
        int wr = snprintf(list + n, sizeof(list) - n, "%s%s", n > 0 ? ", " : "", m->fields[i].key);
        if (wr > 0)
            n += (size_t)wr;
    }
    return ps_yaml_fail(w, k, "unknown field \"%.64s\" in %s (valid fields: %s)", key, m->what, list);
}

static const ps_yaml_field_t *row_of(const ps_yaml_map_t *m, const char *key)
{
    for (size_t i = 0; i < m->n; i++)
        if (strcmp(m->fields[i].key, key) == 0)
            return &m->fields[i];
    return NULL;
}

int ps_yaml_check_key(ps_yaml_walk_t *w, const yaml_node_t *map, const yaml_node_pair_t *pr, const ps_yaml_map_t *m,
                      const char **key)
{
    yaml_node_t *k = ps_yaml_node(w, pr->key);
    if (k->type != YAML_SCALAR_NODE || ps_yaml_is_null(k))
        return ps_yaml_fail(w, k, "keys of %s must be strings, got %s", m->what, ps_yaml_kind(k));
    if (memchr(ps_yaml_sval(k), '\0', ps_yaml_slen(k)) != NULL)
        return ps_yaml_fail(w, k, "a key contains a NUL character");
    for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pr; q++) {
        yaml_node_t *qk = ps_yaml_node(w, q->key);
        if (qk->type == YAML_SCALAR_NODE && ps_yaml_slen(qk) == ps_yaml_slen(k) &&
            memcmp(ps_yaml_sval(qk), ps_yaml_sval(k), ps_yaml_slen(k)) == 0)
            return ps_yaml_fail(w, k, "duplicate key \"%.64s\" (first at line %zu, column %zu)", ps_yaml_sval(k),
                                qk->start_mark.line + 1, qk->start_mark.column + 1);
    }
    if (m->fields != NULL && row_of(m, ps_yaml_sval(k)) == NULL)
        return unknown_key(w, k, m);
    *key = ps_yaml_sval(k);
    return 0;
}

/* Parses v into the field of row f (key on the path already). */
static int set_field(ps_yaml_walk_t *w, const ps_yaml_field_t *f, const yaml_node_t *v, void *dst, void *ctx,
                     bool nulls)
{
    void *p = (char *)dst + f->offset;
    union {
        bool b;
        int64_t d;
        uint64_t u;
        const char *s;
    } tmp;
    if (f->flags & PS_YF_IGNORED)
        p = &tmp;
    int rc;
    switch (f->type) {
    case PS_YF_STR:
        if (nulls && v->type == YAML_SCALAR_NODE && ps_yaml_is_null(v)) { /* yaml.v2: an empty string */
            *(const char **)p = "";
            return 0;
        }
        if ((rc = ps_yaml_get_str(w, v, p)) != 0)
            return rc;
        if ((f->flags & PS_YF_NONEMPTY) && (*(const char **)p)[0] == '\0')
            return ps_yaml_fail(w, v, "%s must not be empty", f->key);
        return 0;
    case PS_YF_FILE:
        if (nulls && v->type == YAML_SCALAR_NODE && ps_yaml_is_null(v)) {
            *(const char **)p = "";
            return 0;
        }
        return ps_yaml_get_file(w, v, (f->flags & PS_YF_EMPTY_OK) != 0, p);
    case PS_YF_BOOL:
        return ps_yaml_get_bool(w, v, p);
    case PS_YF_DURATION:
        if ((rc = ps_yaml_get_duration(w, v, p)) != 0)
            return rc;
        if ((f->flags & PS_YF_POSITIVE) && *(int64_t *)p <= 0)
            return ps_yaml_fail(w, v, "%s must be greater than 0", f->key);
        if ((f->flags & PS_YF_NONNEG) && *(int64_t *)p < 0)
            return ps_yaml_fail(w, v, "%s must not be negative", f->key);
        return 0;
    case PS_YF_U64:
        return ps_yaml_get_u64(w, v, p);
    case PS_YF_U32:
        if ((rc = ps_yaml_get_u64(w, v, &tmp.u)) != 0)
            return rc;
        if (tmp.u > f->max)
            return ps_yaml_fail(w, v, "%s out of range (at most %llu)", f->key, (unsigned long long)f->max);
        *(uint32_t *)p = (uint32_t)tmp.u;
        return 0;
    case PS_YF_COUNT:
        if ((rc = ps_yaml_get_u64(w, v, &tmp.u)) != 0)
            return rc;
        if (tmp.u == 0 || tmp.u > f->max)
            return ps_yaml_fail(w, v, "must be between 1 and %llu, got %llu", (unsigned long long)f->max,
                                (unsigned long long)tmp.u);
        *(uint32_t *)p = (uint32_t)tmp.u;
        return 0;
    case PS_YF_BYTES:
        return ps_yaml_get_bytes(w, v, p);
    case PS_YF_NODE:
        return 0;
    case PS_YF_FN:
        return f->fn(w, v, p, ctx);
    }
    return ps_yaml_fail(w, v, "unhandled field");
}

int ps_yaml_map_walk(ps_yaml_walk_t *w, const yaml_node_t *n, const ps_yaml_map_t *m, void *dst, void *ctx,
                     ps_yaml_seen_t *seen)
{
    ps_yaml_seen_t local;
    if (seen == NULL)
        seen = &local;
    memset(seen, 0, sizeof(*seen));
    if (m->n > PS_YAML_MAX_FIELDS) /* a table of ours too long for seen: caught by the unit tests */
        return ps_yaml_fail(w, n, "internal error: %s has more than %d fields", m->what, PS_YAML_MAX_FIELDS);
    if (m->nulls && ps_yaml_is_null(n))
        return 0;
    if (n->type != YAML_MAPPING_NODE)
        return ps_yaml_fail(w, n, "expected %s (a mapping), got %s", m->expect ? m->expect : m->what, ps_yaml_kind(n));
    for (const yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = ps_yaml_node(w, pr->key), *v = ps_yaml_node(w, pr->value);
        if (k == NULL || v == NULL)
            return ps_yaml_fail(w, n, "broken mapping");
        const char *key;
        int rc = ps_yaml_check_key(w, n, pr, m, &key);
        if (rc != 0)
            return rc;
        if (m->fields == NULL) {
            size_t old = ps_yaml_push_key(w, key);
            if ((rc = m->any(w, key, k, v, ctx)) != 0)
                return rc;
            ps_yaml_pop(w, old);
            continue;
        }
        if (!m->nulls && ps_yaml_is_null(v))
            continue;
        const ps_yaml_field_t *f = row_of(m, key);
        size_t i = (size_t)(f - m->fields);
        seen->key[i] = k;
        seen->val[i] = v;
        if (f->type == PS_YF_NODE)
            continue;
        size_t old = ps_yaml_push_key(w, key);
        if ((rc = set_field(w, f, v, dst, ctx, m->nulls)) != 0)
            return rc;
        ps_yaml_pop(w, old);
    }
    for (size_t i = 0; i < m->n; i++)
        if (m->fields[i].required != NULL && seen->val[i] == NULL)
            return ps_yaml_fail(w, n, "%s", m->fields[i].required);
    return 0;
}

const yaml_node_t *ps_yaml_seen_at(const ps_yaml_map_t *m, const ps_yaml_seen_t *seen, const char *key, bool want_key)
{
    const ps_yaml_field_t *f = row_of(m, key);
    if (f == NULL)
        return NULL;
    size_t i = (size_t)(f - m->fields);
    return want_key ? seen->key[i] : seen->val[i];
}
