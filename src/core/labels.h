/*
 * labels.h - series label sets: sorted (name, value) pairs, validation by Prometheus' rules,
 * and a canonical binary encoding used in storage keys.
 */
#ifndef PS_CORE_LABELS_H
#define PS_CORE_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "mem.h"

#define PS_LABEL_NAME_MAX 128   /* bytes */
#define PS_LABEL_VALUE_MAX 360  /* bytes; name + value fit an LMDB key (511) */
#define PS_LABELS_MAX 64        /* labels per series, __name__ included */

typedef struct ps_label_pair {
    const char *name;
    const char *value;
    uint32_t nlen, vlen;
} ps_label_pair_t;

typedef struct ps_labels {
    uint32_t n;
    ps_label_pair_t *pairs; /* sorted by name, names unique */
} ps_labels_t;

/** True if s is a valid Prometheus label name [a-zA-Z_][a-zA-Z0-9_]*. */
bool ps_label_name_valid(const char *s, size_t n);
/** True if s is a valid metric name [a-zA-Z_:][a-zA-Z0-9_:]*. */
bool ps_metric_name_valid(const char *s, size_t n);
/** True if s is valid UTF-8 (no overlongs, no surrogates). */
bool ps_utf8_valid(const char *s, size_t n);

/** Sorts pairs by name and checks names, values, limits and duplicates. */
int ps_labels_normalize(ps_labels_t *ls, ps_err_t *err);
/** Value of a label or NULL. */
const ps_label_pair_t *ps_labels_get(const ps_labels_t *ls, const char *name);
/** Canonical encoding: for each pair uvarint(nlen) name uvarint(vlen) value. */
void ps_labels_encode(const ps_labels_t *ls, ps_buf_t *out);
/** Decodes into pairs allocated from arena (strings NUL-terminated copies). */
int ps_labels_decode(const void *p, size_t n, ps_arena_t *arena, ps_labels_t *out);
/** Appends the labels as a JSON object {"a":"b",...} to out. */
void ps_labels_json(const ps_labels_t *ls, ps_buf_t *out);
/** Orders label sets as Prometheus sorts series: pair by pair, name then value. */
int ps_labels_cmp(const ps_labels_t *a, const ps_labels_t *b);
/** Formats as {a="b", c="d"} (Prometheus style) into out. */
void ps_labels_format(const ps_labels_t *ls, ps_buf_t *out);

#endif
