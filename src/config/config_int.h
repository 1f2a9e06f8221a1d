/*
 * config_int.h - the YAML pieces shared inside src/config/ by config.c and webconfig.c
 * (yamlutil.c); not public API.
 */
#ifndef PS_CONFIG_INT_H
#define PS_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <yaml.h>

#include "core/err.h"
#include "core/mem.h"

/* ---- nodes ---- */

static inline const char *ps_yaml_sval(const yaml_node_t *n) { return (const char *)n->data.scalar.value; }
static inline size_t ps_yaml_slen(const yaml_node_t *n) { return n->data.scalar.length; }

/** A plain (unquoted) scalar. */
bool ps_yaml_is_plain(const yaml_node_t *n);
/** NULL, a !!null tag, or a plain empty, ~, null, Null, NULL (yaml.v2's nulls). */
bool ps_yaml_is_null(const yaml_node_t *n);
/** "a mapping", "a list", "null", "a scalar" or "nothing", for messages. */
const char *ps_yaml_kind(const yaml_node_t *n);
/** true if n is a plain scalar yaml.v2 reads as a bool (*out set), false if not. */
bool ps_yaml_bool(const yaml_node_t *n, bool *out);

/* ---- the walk: document, messages and the key path ---- */

/** A walk over one loaded document; zero it, then set doc, name, dir, a, err. */
typedef struct ps_yaml_walk {
    yaml_document_t *doc;
    const char *name; /* for messages */
    const char *dir;  /* relative file names are joined to this; NULL = keep */
    ps_arena_t *a;    /* what is kept is copied here */
    ps_err_t *err;
    char path[400]; /* the key path of messages, e.g. scrape_configs[1].job_name */
    size_t plen;
} ps_yaml_walk_t;

/** Node i of the document (NULL if none). */
yaml_node_t *ps_yaml_node(ps_yaml_walk_t *w, int i);

/** Appends ".key" ("key" at the start) or "[i]" to the path (clamped); returns the old length
 *  for ps_yaml_pop. */
size_t ps_yaml_push_key(ps_yaml_walk_t *w, const char *key);
size_t ps_yaml_push_idx(ps_yaml_walk_t *w, size_t i);
/** Cuts the path back to old. */
void ps_yaml_pop(ps_yaml_walk_t *w, size_t old);

/** PS_EINVAL "NAME:LINE:COL: PATH: WHAT" ("NAME:LINE:COL: WHAT" with an empty path) at n's start
 *  (1:1 without a node); WHAT from fmt, at most 399 bytes. Returns the code. */
__attribute__((format(printf, 3, 4))) int ps_yaml_fail(ps_yaml_walk_t *w, const yaml_node_t *n, const char *fmt,
                                                       ...);

/** PS_EINVAL "NAME:LINE:COL: invalid YAML: ..." for parser p's error over data[0..n). */
int ps_yaml_error(const yaml_parser_t *p, const char *data, size_t n, const char *name, ps_err_t *err);

/** Loads the first document of p into doc; the error if it cannot. */
int ps_yaml_load_first(yaml_parser_t *p, yaml_document_t *doc, const char *data, size_t n, const char *name,
                       ps_err_t *err);
/** After the first document: 0 if p holds no other one, else the error ("a second YAML document
 *  is not supported", or invalid YAML). */
int ps_yaml_no_second(yaml_parser_t *p, const char *data, size_t n, const char *name, ps_err_t *err);

/** A string scalar without NUL, copied into w->a; else the error "expected a string, got KIND"
 *  or "the string contains a NUL character". */
int ps_yaml_get_str(ps_yaml_walk_t *w, const yaml_node_t *n, const char **out);

/* ---- files ---- */

/** s joined to dir ("dir/s", copied into a) when s is relative and dir not NULL; s otherwise. */
const char *ps_yaml_join_dir(ps_arena_t *a, const char *dir, const char *s);

/** Reads the file at path (at most max bytes) into b, and *dir = its directory (malloc'd; NULL
 *  when path has no '/'). Errors PS_EINVAL "PATH: <strerror>" or "PATH: the file is larger than
 *  MAX bytes". */
int ps_yaml_read_file(const char *path, unsigned max, ps_buf_t *b, char **dir, ps_err_t *err);

#endif
