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
