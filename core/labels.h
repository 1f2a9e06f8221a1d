/*
 * labels.h - series label sets: sorted (name, value) pairs, validation by Prometheus' rules,
 * a canonical binary encoding used in storage keys, and editing in place (relabeling) with
 * ps_labels_set / ps_labels_del.
 */
#ifndef PS_CORE_LABELS_H
#define PS_CORE_LABELS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "err.h"
#include "json.h"
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
    uint32_t cap;           /* room in pairs when ps_labels_set/_del allocated it (from an arena), and
                               so may write it; 0: pairs belong to someone else, the first edit copies */
} ps_labels_t;

/** True if s is a valid Prometheus label name [a-zA-Z_][a-zA-Z0-9_]*. */
bool ps_label_name_valid(const char *s, size_t n);
/** True if s is a valid metric name [a-zA-Z_:][a-zA-Z0-9_:]*. */
bool ps_metric_name_valid(const char *s, size_t n);
/** True if s is a label or metric name as Prometheus 3 takes them by default (its UTF-8 validation
 *  scheme): nonempty, valid UTF-8, and, here, no NUL byte (names are C strings in places). The
 *  classic names above are a subset. */
bool ps_label_name_utf8_valid(const char *s, size_t n);
/** True if s is valid UTF-8 (no overlongs, no surrogates). */
bool ps_utf8_valid(const char *s, size_t n);

/** Sorts pairs by name and checks names, values, limits and duplicates. */
int ps_labels_normalize(ps_labels_t *ls, ps_err_t *err);
/** Value of a label or NULL. */
const ps_label_pair_t *ps_labels_get(const ps_labels_t *ls, const char *name);
/** Canonical encoding: for each pair uvarint(nlen) name uvarint(vlen) value. */
void ps_labels_encode(const ps_labels_t *ls, ps_buf_t *out);
/** The most bytes ps_labels_encode_to writes for ls. */
size_t ps_labels_encoded_max(const ps_labels_t *ls);
/** ps_labels_encode into dst (ps_labels_encoded_max bytes at least); returns the bytes written. */
size_t ps_labels_encode_to(const ps_labels_t *ls, uint8_t *dst);
/** Decodes into pairs allocated from arena (strings NUL-terminated copies). */
int ps_labels_decode(const void *p, size_t n, ps_arena_t *arena, ps_labels_t *out);
/** Writes the labels as a JSON object {"a":"b",...} in their order (Prometheus' "metric"). */
void ps_labels_json(const ps_labels_t *ls, ps_json_t *j);
/** Orders label sets as Prometheus sorts series: pair by pair, name then value. */
int ps_labels_cmp(const ps_labels_t *a, const ps_labels_t *b);
/** Formats as {a="b", c="d"} (Prometheus style) into out. */
void ps_labels_format(const ps_labels_t *ls, ps_buf_t *out);

/* ---- editing (relabeling): on a set sorted by name (normalised, or built by these) ---- */

/** Sets name to value, keeping pairs sorted by name; an empty value deletes the label, as
 *  Prometheus' labels.Builder.Set does. The new strings are NUL-terminated copies from arena, and
 *  so is the pair array when ls->cap is 0 (a set made elsewhere is never written to). Nothing is
 *  validated: ps_labels_normalize does that. Pointers to pairs are valid until the next edit. */
void ps_labels_set(ps_labels_t *ls, ps_arena_t *arena, const char *name, size_t nlen, const char *value,
                   size_t vlen);
/** Deletes a label (nothing if it is absent); copies the pair array first when ls->cap is 0. */
void ps_labels_del(ps_labels_t *ls, ps_arena_t *arena, const char *name, size_t nlen);
/** The value of a label, or NULL if absent (binary search: the set must be sorted). Values made
 *  by ps_labels_set, ps_labels_decode and the parsers are NUL-terminated. */
const char *ps_labels_value(const ps_labels_t *ls, const char *name);
/** A view of ls to edit: the same pairs, cap 0, so that the first edit copies them and ls stays
 *  as it is. (A plain struct copy of a set with cap > 0 shares the room: edit only one of them.) */
static inline ps_labels_t ps_labels_borrow(const ps_labels_t *ls)
{
    ps_labels_t v = {ls->n, ls->pairs, 0};
    return v;
}

#endif
