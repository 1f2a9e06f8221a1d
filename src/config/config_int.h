/*
 * config_int.h - the YAML pieces shared inside src/config/ by config.c and webconfig.c
 * (yamlutil.c); not public API.
 */
#ifndef PS_CONFIG_INT_H
#define PS_CONFIG_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
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

/* ---- scalars with a type (yaml.v2's decoding into typed fields) ---- */

/** true/false, yes/no, on/off, y/n, unquoted; else "expected true or false, got ...". */
int ps_yaml_get_bool(ps_yaml_walk_t *w, const yaml_node_t *n, bool *out);
/** A Prometheus duration ("1m30s", "250ms") or "0". */
int ps_yaml_get_duration(ps_yaml_walk_t *w, const yaml_node_t *n, int64_t *out);
/** Decimal digits only; "integer out of range" past UINT64_MAX. */
int ps_yaml_get_u64(ps_yaml_walk_t *w, const yaml_node_t *n, uint64_t *out);
/** A byte count: digits and an optional unit (B, KB/KiB, MB/MiB, GB/GiB, TB/TiB, all base 2). */
int ps_yaml_get_bytes(ps_yaml_walk_t *w, const yaml_node_t *n, uint64_t *out);
/** A file name joined to w->dir; "empty file name" unless empty_ok (then ""). */
int ps_yaml_get_file(ps_yaml_walk_t *w, const yaml_node_t *n, bool empty_ok, const char **out);

/* ---- mappings as tables ----
 * One row per key of a YAML mapping: its type, where the value goes (an offset into the caller's
 * struct), its checks; ps_yaml_map_walk checks the keys (strings, once each, known: else the
 * "unknown field" message with the valid ones), parses each value by its row with the key on the
 * path, then the required keys. What the rows cannot say (checks across keys) follows the walk,
 * with the nodes it saw (ps_yaml_seen_t) for the message's position. */

typedef enum {
    PS_YF_STR,      /* const char *: any scalar text (ps_yaml_get_str) */
    PS_YF_FILE,     /* const char *: a file name joined to the file's directory */
    PS_YF_BOOL,     /* bool */
    PS_YF_DURATION, /* int64_t ns */
    PS_YF_U64,      /* uint64_t */
    PS_YF_U32,      /* uint32_t, at most max: "KEY out of range (at most MAX)" */
    PS_YF_COUNT,    /* uint32_t 1 .. max: "must be between 1 and MAX, got N" */
    PS_YF_BYTES,    /* uint64_t (ps_yaml_get_bytes) */
    PS_YF_NODE,     /* nothing parsed: the caller takes the node from ps_yaml_seen_t */
    PS_YF_FN,       /* fn(w, value, dst + offset, ctx) */
} ps_yaml_ftype_t;

enum {
    PS_YF_NONEMPTY = 1, /* STR: "KEY must not be empty" */
    PS_YF_POSITIVE = 2, /* DURATION: "KEY must be greater than 0" */
    PS_YF_NONNEG = 4,   /* DURATION: "KEY must not be negative" */
    PS_YF_EMPTY_OK = 8, /* FILE: "" is kept as "" (else "empty file name") */
    PS_YF_IGNORED = 16, /* checked for its type, then dropped (offset unused) */
};

typedef int (*ps_yaml_field_fn)(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx);
/** For a mapping of any keys: called for each pair with the key on the path. */
typedef int (*ps_yaml_pair_fn)(ps_yaml_walk_t *w, const char *key, const yaml_node_t *k, const yaml_node_t *v,
                               void *ctx);

typedef struct ps_yaml_field {
    const char *key;
    ps_yaml_ftype_t type;
    size_t offset;        /* of the value in the walk's dst */
    unsigned flags;       /* PS_YF_NONEMPTY ... */
    uint64_t max;         /* U32, COUNT */
    const char *required; /* the message when the key is absent (at the mapping); NULL: optional */
    ps_yaml_field_fn fn;  /* FN */
} ps_yaml_field_t;

#define PS_YAML_MAX_FIELDS 32

typedef struct ps_yaml_map {
    const char *what;               /* "tls_config": "unknown field \"x\" in tls_config" */
    const char *expect;             /* "expected EXPECT (a mapping)"; NULL: what */
    const ps_yaml_field_t *fields;  /* NULL with any: any key */
    size_t n;                       /* at most PS_YAML_MAX_FIELDS */
    ps_yaml_pair_fn any;            /* for a mapping of any keys */
    const char *const *rejected;    /* key, reason, key, reason, ..., NULL */
    bool sd_hint;                   /* "*_sd_configs" keys get the service discovery message */
    bool suggest;                   /* unknown keys: "did you mean" the nearest valid one */
    bool nulls;                     /* a null mapping is empty and null values are parsed (strings: "");
                                       else a null value leaves its field unset */
} ps_yaml_map_t;

/** The key and value nodes the walk saw, by row (NULL: absent, or null when !nulls). */
typedef struct ps_yaml_seen {
    const yaml_node_t *key[PS_YAML_MAX_FIELDS], *val[PS_YAML_MAX_FIELDS];
} ps_yaml_seen_t;

/** Walks mapping n by m's rows into dst (ctx goes to the FN rows and any); seen may be NULL. */
int ps_yaml_map_walk(ps_yaml_walk_t *w, const yaml_node_t *n, const ps_yaml_map_t *m, void *dst, void *ctx,
                     ps_yaml_seen_t *seen);
/** The value (or, want_key, the key) node of key in seen; NULL if it was absent. */
const yaml_node_t *ps_yaml_seen_at(const ps_yaml_map_t *m, const ps_yaml_seen_t *seen, const char *key, bool want_key);
/** Checks the key of pair pr of map against m (a string, not seen before, known); *key is its text. */
int ps_yaml_check_key(ps_yaml_walk_t *w, const yaml_node_t *map, const yaml_node_pair_t *pr, const ps_yaml_map_t *m,
                      const char **key);

/* ---- files ---- */

/** s joined to dir ("dir/s", copied into a) when s is relative and dir not NULL; s otherwise. */
const char *ps_yaml_join_dir(ps_arena_t *a, const char *dir, const char *s);

/** Reads the file at path (at most max bytes) into b, and *dir = its directory (malloc'd; NULL
 *  when path has no '/'). Errors PS_EINVAL "PATH: <strerror>" or "PATH: the file is larger than
 *  MAX bytes". */
int ps_yaml_read_file(const char *path, unsigned max, ps_buf_t *b, char **dir, ps_err_t *err);

#endif
