/*
 * pprof.c - the pprof codec: perftools.profiles.Profile bytes (raw or gzipped) to and from
 * ps_profile_t. Schema: proto/profile.proto (docs/protocols.md). The only user of the generated
 * perftools__profiles__* structs; gzip is gzip.c's.
 *
 * Decoding untrusted bytes runs in three steps; each can reject the input with a message that
 * names the field and index:
 *
 *   1. gunzip, if the bytes start with 1f 8b, into the arena (at most max_inflated bytes);
 *   2. scan: the checks of the protobuf wire format's framing, every repeated field's count (and
 *      the totals: stack entries, values, labels, lines) against ps_pprof_limits_t, string
 *      lengths, UTF-8 and string_table[0] == "". It does not look inside the flat messages
 *      (ValueType, Label, Line, Mapping, Function): step 3 checks those, and if it refuses the
 *      bytes, a deep scan runs to say where;
 *   3. decode: the wire bytes into ps_profile_t, every array allocated once from the arena at its
 *      size, strings copied once into one NUL-terminated block. It accepts exactly what
 *      protobuf-c 1.4 unpack accepts (unknown fields of any wire type it knows skipped, last value
 *      wins for singular fields, repeated varints packed or not, protobuf-c's quirks included: see
 *      "step 3" below) and then makes every check the conversion made -- wire ids to dense
 *      1-based indexes (a direct table when the ids are small, else a sorted array), ids nonzero
 *      and unique, every reference and string index in range -- reporting the first failure in
 *      the conversion's order.
 *
 * Steps 2 and 3 run in one walk over the bytes (walk_decode), each field read once; a field
 * either refuses stops it, and the scan then runs alone over the whole message to answer its
 * first error as it always did (scan_profile: its own walk, which ps_pprof_scan also runs).
 *
 * The path it replaced, protobuf-c unpack into the arena and then convert(), lives on in the
 * tests as the reference (tests/support/pprof_reference.c, over steps 1 and 2 here: pprof_int.h):
 * tests/unit/proto/test_pprof.c and tests/fuzz/fuzz_pprof.c run both on every input and require
 * the same code, message and profile (bench/pprof.c times both).
 *
 * Encoding builds the protobuf-c structs in a scratch arena, with ids = indexes (1..n), packs
 * them, and optionally gzips the result.
 *
 * Wire example: what ps_pprof_encode writes (raw) for strings {"", "samples", "count", "main"},
 * sample type samples/count, function 1 = main, location 1 -> function 1 line 7, one sample of
 * value 5 at location 1:
 *
 *   0a 04 08 01 10 02          1 sample_type  {type: 1 ("samples"), unit: 2 ("count")}
 *   12 06 0a 01 01 12 01 05    2 sample       {location_id: [1] (packed), value: [5] (packed)}
 *   22 08 08 01 22 04 08 01    4 location     {id: 1, line {function_id: 1, line: 7}}
 *         10 07
 *   2a 04 08 01 10 03          5 function     {id: 1, name: 3 ("main")}
 *   32 00                      6 string_table ""
 *   32 07 73 61 6d 70 6c 65 73 6 string_table "samples"
 *   32 05 63 6f 75 6e 74       6 string_table "count"
 *   32 04 6d 61 69 6e          6 string_table "main"
 *
 * Deliberate strictness beyond google/pprof: strings containing a NUL byte are rejected (they
 * cannot round-trip through protobuf-c's NUL-terminated strings, and nothing downstream wants
 * them), and bytes after the last gzip member are an error (as in Go's gzip reader).
 */
#include "pprof.h"

#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/labels.h"
#include "gzip.h"
#include "pprof_int.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__ValueType pb_value_type_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

void ps_pprof_limits_default(ps_pprof_limits_t *l)
{
    l->max_inflated = 64u << 20;
    l->max_strings = 1000000;
    l->max_samples = 1000000;
    l->max_locations = 1000000;
    l->max_functions = 1000000;
    l->max_mappings = 10000;
    l->max_sample_types = 16;
    l->max_stack_depth = 1024;
    l->max_lines = 256;
    l->max_labels = 64;
    l->max_string_len = 64u << 10;
}

/* ---- step 2: wire scan ---------------------------------------------------------------------- */

typedef struct scan {
    const uint8_t *base; /* start of the protobuf, for byte offsets in messages */
    const ps_pprof_limits_t *lim;
    ps_err_t *err;
    uint64_t ntypes, nsamples, nmappings, nlocations, nfunctions, nstrings, ncomments;
    uint64_t nlocs, nvalues, nlabels, nlines, strbytes; /* totals over all samples, locations, strings */
    uint64_t bad_values_sample, bad_values_n; /* first sample with more values than max_sample_types */
    bool bad_values;
    bool deep; /* also check the wire types inside flat messages (label, line, function, ...) */
} scan_t;

/* Names the message being scanned in error messages: "sample[3]", "label", "profile". */
#define NOIDX UINT64_MAX
typedef struct where {
    const char *name;
    uint64_t idx; /* NOIDX if none */
} where_t;

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct field {
    const uint8_t *at; /* where the tag starts */
    uint32_t num, wt;
    const uint8_t *pl; /* WT_LEN payload */
    size_t pn;
} field_t;

static int bad_wire(scan_t *s, where_t w, const field_t *f, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static int bad_wire(scan_t *s, where_t w, const field_t *f, const char *fmt, ...)
{
    char what[256], name[64];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    if (w.idx == NOIDX)
        snprintf(name, sizeof(name), "%s", w.name);
    else
        snprintf(name, sizeof(name), "%s[%llu]", w.name, (unsigned long long)w.idx);
    return ps_err_set(s->err, PS_EINVAL, "not a valid pprof protobuf: %s: field %u %s (at byte %zu)", name, f->num,
                      what, (size_t)(f->at - s->base));
}

static inline int read_uvarint(const uint8_t **pp, const uint8_t *end, uint64_t *v)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) {
        *v = *p;
        *pp = p + 1;
        return 0;
    }
    uint64_t r = 0;
    for (unsigned shift = 0; shift < 64 && p < end; shift += 7) {
        uint8_t c = *p++;
        if (shift == 63 && c > 1)
            return -1;
        r |= (uint64_t)(c & 0x7f) << shift;
        if (c < 0x80) {
            *pp = p;
            *v = r;
            return 0;
        }
    }
    return -1;
}

/* Reads one field: its tag and value (a LEN value's payload goes to f->pl, f->pn). */
static __attribute__((noinline)) int next_field_slow(scan_t *s, where_t w, const uint8_t **pp, const uint8_t *end,
                                                     field_t *f)
{
    uint64_t tag, v;
    f->at = *pp;
    f->num = 0;
    if (read_uvarint(pp, end, &tag) != 0)
        return bad_wire(s, w, f, "tag is truncated or overlong");
    f->num = (uint32_t)(tag >> 3);
    f->wt = (uint32_t)(tag & 7);
    if ((tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
        return bad_wire(s, w, f, "is not a valid field number");
    switch (f->wt) {
    case WT_VARINT:
        if (read_uvarint(pp, end, &v) != 0)
            return bad_wire(s, w, f, "has a truncated or overlong varint");
        return 0;
    case WT_LEN:
        if (read_uvarint(pp, end, &v) != 0 || v > (uint64_t)(end - *pp))
            return bad_wire(s, w, f, "runs past the end of its message");
        f->pl = *pp;
        f->pn = (size_t)v;
        *pp += v;
        return 0;
    case WT_I64:
    case WT_I32: {
        size_t k = f->wt == WT_I64 ? 8 : 4;
        if ((size_t)(end - *pp) < k)
            return bad_wire(s, w, f, "has a truncated fixed-size value");
        *pp += k;
        return 0;
    }
    default:
        return bad_wire(s, w, f, "has unsupported wire type %u", f->wt);
    }
}

/* The length after the one-byte tag at p (rem >= 2 bytes from p) when it takes one or two bytes
 * (*hdr), else SIZE_MAX and *hdr 0. */
static inline __attribute__((always_inline)) size_t short_len(const uint8_t *p, size_t rem, size_t *hdr)
{
    if (p[1] < 0x80) {
        *hdr = 1;
        return p[1];
    }
    if (rem >= 3 && p[2] < 0x80) {
        *hdr = 2;
        return (size_t)(p[1] & 0x7f) | (size_t)p[2] << 7;
    }
    *hdr = 0;
    return SIZE_MAX;
}

/* The same, inline for the usual one-byte tag with a varint of at most 9 bytes (no overflow to
 * check) or a length of one or two bytes. */
static inline __attribute__((always_inline)) int next_field(scan_t *s, where_t w, const uint8_t **pp,
                                                            const uint8_t *end, field_t *f)
{
    const uint8_t *p = *pp;
    size_t rem = (size_t)(end - p);
    uint8_t t = p[0];
    if (t >= 8 && t < 0x80 && rem >= 2) {
        if ((t & 7) == WT_VARINT) {
            size_t max = rem - 1 < 9 ? rem - 1 : 9;
            for (size_t i = 0; i < max; i++)
                if (p[1 + i] < 0x80) {
                    f->at = p;
                    f->num = t >> 3;
                    f->wt = WT_VARINT;
                    *pp = p + 2 + i;
                    return 0;
                }
        } else if ((t & 7) == WT_LEN) {
            size_t hdr, len = short_len(p, rem, &hdr);
            if (len <= rem - 1 - hdr) {
                f->at = p;
                f->num = t >> 3;
                f->wt = WT_LEN;
                f->pl = p + 1 + hdr;
                f->pn = len;
                *pp = p + 1 + hdr + len;
                return 0;
            }
        }
    }
    /* through locals, so that the caller's cursor and field stay in registers */
    const uint8_t *q = p;
    field_t g = {0};
    int rc = next_field_slow(s, w, &q, end, &g);
    *pp = q;
    *f = g;
    return rc;
}

static inline int want_wt(scan_t *s, where_t w, const field_t *f, uint32_t wt)
{
    if (f->wt == wt)
        return 0;
    return bad_wire(s, w, f, "has wire type %u, expected %u", f->wt, wt);
}

/* The varints of a packed run (n bytes): a varint ends at each byte without the high bit, counted
 * 8 at a time. */
static inline size_t count_packed(const uint8_t *p, size_t n)
{
    uint64_t c = 0;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        c += (((~w & 0x8080808080808080ull) >> 7) * 0x0101010101010101ull) >> 56;
    }
    for (; i < n; i++)
        c += (p[i] & 0x80) == 0;
    return (size_t)c;
}

/* Elements of a repeated varint field, given as one value (wire type 0) or packed (2). */
static inline int count_varints(scan_t *s, where_t w, const field_t *f, uint64_t *count)
{
    if (f->wt == WT_VARINT) {
        *count += 1;
        return 0;
    }
    if (f->wt != WT_LEN)
        return bad_wire(s, w, f, "has wire type %u, expected 0 or 2", f->wt);
    if (f->pn > 0 && (f->pl[f->pn - 1] & 0x80))
        return bad_wire(s, w, f, "ends in a truncated packed varint");
    *count += count_packed(f->pl, f->pn);
    return 0;
}

/* A message whose fields 1..nvarint are all singular varints (ValueType, Label, Mapping, Line,
 * Function); other field numbers are unknown and skipped. */
static __attribute__((noinline)) int scan_flat_deep(scan_t *s, where_t w, const uint8_t *p, size_t n,
                                                    uint32_t nvarint)
{
    const uint8_t *end = p + n;
    field_t f;
    while (p < end) {
        if (next_field(s, w, &p, end, &f) != 0)
            return PS_EINVAL;
        if (f.num <= nvarint && want_wt(s, w, &f, WT_VARINT) != 0)
            return PS_EINVAL;
    }
    return 0;
}

static inline int scan_flat(scan_t *s, where_t w, const uint8_t *p, size_t n, uint32_t nvarint)
{
    return s->deep ? scan_flat_deep(s, w, p, n, nvarint) : 0;
}

static int scan_sample(scan_t *s, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    const ps_pprof_limits_t *lim = s->lim;
    where_t w = {"sample", s->nsamples};
    uint64_t nlocs = 0, nvalues = 0, nlabels = 0;
    field_t f;

    while (p < end) {
        if (next_field(s, w, &p, end, &f) != 0)
            return PS_EINVAL;
        switch (f.num) {
        case 1:
            if (count_varints(s, w, &f, &nlocs) != 0)
                return PS_EINVAL;
            if (nlocs > lim->max_stack_depth)
                return ps_err_set(s->err, PS_ETOOBIG, "sample[%llu] has more than %u locations (max_stack_depth)",
                                  (unsigned long long)w.idx, lim->max_stack_depth);
            break;
        case 2:
            if (count_varints(s, w, &f, &nvalues) != 0)
                return PS_EINVAL;
            break;
        case 3:
            if (want_wt(s, w, &f, WT_LEN) != 0 || scan_flat(s, (where_t){"sample.label", NOIDX}, f.pl, f.pn, 4) != 0)
                return PS_EINVAL;
            if (++nlabels > lim->max_labels)
                return ps_err_set(s->err, PS_ETOOBIG, "sample[%llu] has more than %u labels (max_labels)",
                                  (unsigned long long)w.idx, lim->max_labels);
            break;
        }
    }
    s->nlocs += nlocs;
    s->nvalues += nvalues;
    s->nlabels += nlabels;
    if (nvalues > lim->max_sample_types && !s->bad_values) {
        s->bad_values = true;
        s->bad_values_sample = w.idx;
        s->bad_values_n = nvalues;
    }
    return 0;
}

static int scan_location(scan_t *s, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    where_t w = {"location", s->nlocations};
    uint64_t nlines = 0;
    field_t f;

    while (p < end) {
        if (next_field(s, w, &p, end, &f) != 0)
            return PS_EINVAL;
        switch (f.num) {
        case 1:
        case 2:
        case 3:
        case 5:
            if (want_wt(s, w, &f, WT_VARINT) != 0)
                return PS_EINVAL;
            break;
        case 4:
            if (want_wt(s, w, &f, WT_LEN) != 0 || scan_flat(s, (where_t){"location.line", NOIDX}, f.pl, f.pn, 3) != 0)
                return PS_EINVAL;
            if (++nlines > s->lim->max_lines)
                return ps_err_set(s->err, PS_ETOOBIG, "location[%llu] has more than %u lines (max_lines)",
                                  (unsigned long long)w.idx, s->lim->max_lines);
            break;
        }
    }
    s->nlines += nlines;
    return 0;
}

enum { STR_OK, STR_NUL, STR_NOT_UTF8 };

/* Whether the 8 bytes at p hold a byte with the high bit set or a zero byte ((w - 0x01..) & ~w
 * has its high bit). */
static inline bool word_not_ascii(const uint8_t *p)
{
    uint64_t w;
    memcpy(&w, p, 8);
    return ((w | ((w - 0x0101010101010101ull) & ~w)) & 0x8080808080808080ull) != 0;
}

/* Whether a string holds a NUL byte (the first question), else whether it is valid UTF-8: one
 * pass, 8 bytes at a time, over the usual all-ASCII string, its last 1-7 bytes in the word that
 * ends it (over bytes already seen to be ASCII). */
static int str_check(const uint8_t *p, size_t n)
{
    size_t i = 0;
    if (n >= 8) {
        for (; i + 8 <= n; i += 8)
            if (word_not_ascii(p + i))
                break;
        if (i + 8 > n && (i == n || !word_not_ascii(p + n - 8)))
            return STR_OK;
    }
    for (; i < n; i++) { /* from the first word that is not all ASCII (every byte before i is) */
        if (p[i] == 0)
            return STR_NUL;
        if (p[i] & 0x80) { /* everything before is ASCII and NUL-free */
            if (memchr(p + i, 0, n - i) != NULL)
                return STR_NUL;
            return ps_utf8_valid((const char *)p + i, n - i) ? STR_OK : STR_NOT_UTF8;
        }
    }
    return STR_OK;
}

static int scan_string(scan_t *s, const field_t *f)
{
    unsigned long long i = s->nstrings;
    if (f->pn > s->lim->max_string_len)
        return ps_err_set(s->err, PS_ETOOBIG, "string_table[%llu] is %zu bytes long, more than %u (max_string_len)", i,
                          f->pn, s->lim->max_string_len);
    if (i == 0 && f->pn != 0)
        return ps_err_set(s->err, PS_EINVAL, "string_table[0] must be empty");
    int c = str_check(f->pl, f->pn);
    if (c == STR_NUL)
        return ps_err_set(s->err, PS_EINVAL, "string_table[%llu] contains a NUL byte", i);
    if (c == STR_NOT_UTF8)
        return ps_err_set(s->err, PS_EINVAL, "string_table[%llu] is not valid UTF-8", i);
    return 0;
}

#define OVER_LIMIT(count, limit, what, name)                                                                  \
    do {                                                                                                      \
        if ((count) > (limit))                                                                                \
            return ps_err_set(s->err, PS_ETOOBIG, "profile has more than %u " what " (" name ")", (limit)); \
    } while (0)

static int scan_profile(scan_t *s, const uint8_t *p, size_t n)
{
    const uint8_t *end = p + n;
    const ps_pprof_limits_t *lim = s->lim;
    const where_t top = {"profile", NOIDX};
    field_t f;
    int rc;

    while (p < end) {
        if (next_field(s, top, &p, end, &f) != 0)
            return PS_EINVAL;
        switch (f.num) {
        case 1: {
            where_t w = {"sample_type", s->ntypes};
            if (want_wt(s, top, &f, WT_LEN) != 0 || scan_flat(s, w, f.pl, f.pn, 2) != 0)
                return PS_EINVAL;
            s->ntypes++;
            OVER_LIMIT(s->ntypes, lim->max_sample_types, "sample types", "max_sample_types");
            break;
        }
        case 2:
            if (want_wt(s, top, &f, WT_LEN) != 0)
                return PS_EINVAL;
            OVER_LIMIT(s->nsamples + 1, lim->max_samples, "samples", "max_samples");
            if ((rc = scan_sample(s, f.pl, f.pn)) != 0)
                return rc;
            s->nsamples++;
            break;
        case 3: {
            where_t w = {"mapping", s->nmappings};
            if (want_wt(s, top, &f, WT_LEN) != 0 || scan_flat(s, w, f.pl, f.pn, 10) != 0)
                return PS_EINVAL;
            s->nmappings++;
            OVER_LIMIT(s->nmappings, lim->max_mappings, "mappings", "max_mappings");
            break;
        }
        case 4:
            if (want_wt(s, top, &f, WT_LEN) != 0)
                return PS_EINVAL;
            OVER_LIMIT(s->nlocations + 1, lim->max_locations, "locations", "max_locations");
            if ((rc = scan_location(s, f.pl, f.pn)) != 0)
                return rc;
            s->nlocations++;
            break;
        case 5: {
            where_t w = {"function", s->nfunctions};
            if (want_wt(s, top, &f, WT_LEN) != 0 || scan_flat(s, w, f.pl, f.pn, 5) != 0)
                return PS_EINVAL;
            s->nfunctions++;
            OVER_LIMIT(s->nfunctions, lim->max_functions, "functions", "max_functions");
            break;
        }
        case 6:
            if (want_wt(s, top, &f, WT_LEN) != 0)
                return PS_EINVAL;
            OVER_LIMIT(s->nstrings + 1, lim->max_strings, "strings", "max_strings");
            if ((rc = scan_string(s, &f)) != 0)
                return rc;
            s->nstrings++;
            s->strbytes += f.pn;
            break;
        case 11:
            if (want_wt(s, top, &f, WT_LEN) != 0 || scan_flat(s, (where_t){"period_type", NOIDX}, f.pl, f.pn, 2) != 0)
                return PS_EINVAL;
            break;
        case 13:
            if (count_varints(s, top, &f, &s->ncomments) != 0)
                return PS_EINVAL;
            OVER_LIMIT(s->ncomments, lim->max_strings, "comments", "max_strings");
            break;
        case 7:
        case 8:
        case 9:
        case 10:
        case 12:
        case 14:
        case 15:
            if (want_wt(s, top, &f, WT_VARINT) != 0)
                return PS_EINVAL;
            break;
        }
    }
    if (s->ntypes == 0)
        return ps_err_set(s->err, PS_EINVAL, "profile has no sample types");
    if (s->bad_values)
        return ps_err_set(s->err, PS_EINVAL, "sample[%llu] has %llu values but there are %llu sample types",
                          (unsigned long long)s->bad_values_sample, (unsigned long long)s->bad_values_n,
                          (unsigned long long)s->ntypes);
    if (s->nstrings == 0)
        return ps_err_set(s->err, PS_EINVAL, "string_table is empty (string_table[0] must be empty)");
    return 0;
}

/* ---- wire ids to dense indexes (step 3's; the tests' reference decoder has a copy) ----------- */

typedef struct idpair {
    uint64_t id;
    uint32_t idx; /* 1-based */
} idpair_t;

/* Wire id -> dense 1-based index. */
typedef struct idmap {
    uint64_t nident;  /* when the ids are 1..nident in order (as Go writes them): id = index */
    uint32_t *direct; /* else direct[id] = index (0 = undefined), when ids are small */
    uint64_t ndirect;
    idpair_t *pairs;  /* else sorted by id */
    uint32_t npairs;
} idmap_t;

static int cmp_idpair(const void *a, const void *b)
{
    const idpair_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Builds the map of the n wire ids in ids[] (the ids of the mapping, function or location array,
 * in order); fails on an id 0 or one used twice. */
static int idmap_build(idmap_t *m, ps_arena_t *arena, const uint64_t *ids, size_t n, const char *what, ps_err_t *err)
{
    uint64_t max = 0;
    bool ident = true;
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        uint64_t id = ids[i];
        if (id == 0)
            return ps_err_set(err, PS_EINVAL, "%s[%zu]: id 0 is not allowed (ids must be nonzero)", what, i);
        if (id > max)
            max = id;
        ident &= id == i + 1;
    }
    if (n == 0)
        return 0;
    if (ident) {
        m->nident = n;
        return 0;
    }
    if (max <= 4 * (uint64_t)n + 64) {
        m->ndirect = max + 1;
        m->direct = ps_arena_calloc(arena, (size_t)m->ndirect, sizeof(uint32_t));
        for (size_t i = 0; i < n; i++) {
            uint64_t id = ids[i];
            if (m->direct[id] != 0)
                return ps_err_set(err, PS_EINVAL, "%s[%zu]: id %llu is already used by %s[%u]", what, i,
                                  (unsigned long long)id, what, m->direct[id] - 1);
            m->direct[id] = (uint32_t)i + 1;
        }
        return 0;
    }
    m->pairs = ps_arena_alloc(arena, n * sizeof(idpair_t));
    m->npairs = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        m->pairs[i].id = ids[i];
        m->pairs[i].idx = (uint32_t)i + 1;
    }
    qsort(m->pairs, n, sizeof(idpair_t), cmp_idpair);
    for (size_t i = 1; i < n; i++)
        if (m->pairs[i].id == m->pairs[i - 1].id)
            return ps_err_set(err, PS_EINVAL, "%s[%u]: id %llu is already used by %s[%u]", what, m->pairs[i].idx - 1,
                              (unsigned long long)m->pairs[i].id, what, m->pairs[i - 1].idx - 1);
    return 0;
}

static inline __attribute__((always_inline)) uint32_t idmap_get(const idmap_t *m, uint64_t id)
{
    if (id - 1 < m->nident)
        return (uint32_t)id;
    if (m->nident != 0)
        return 0;
    if (m->direct != NULL)
        return id < m->ndirect ? m->direct[id] : 0;
    size_t lo = 0, hi = m->npairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->pairs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->npairs && m->pairs[lo].id == id ? m->pairs[lo].idx : 0;
}

/* ---- step 3: the direct decoder's reading ---------------------------------------------------- */

/*
 * The decoder reads the wire bytes into ps_profile_t with exactly the semantics of
 * protobuf-c 1.4 unpack followed by convert() (ps_pprof_decode_reference keeps that path; the
 * unit tests and fuzz_pprof compare the two on every input):
 *
 *   - framing as protobuf-c reads it: a tag of at most 5 bytes whose first byte has a nonzero
 *     field number part (protobuf-c accepts "80 00", field 0, as an unknown field), varints of at
 *     most 10 bytes (bits past 64 dropped), LEN prefixes of at most 5 bytes and INT_MAX; unknown
 *     fields of wire types 0, 1, 2, 5 skipped, others rejected;
 *   - a known scalar field needs wire type 0, a message or string 2, except bools: protobuf-c's
 *     parse_boolean takes any wire type and is true if any byte of the value (a LEN one's prefix
 *     included) has a nonzero low 7 bits;
 *   - repeated varints packed (2) or not (0), mixed; a singular field given twice: the last wins,
 *     also for period_type (protobuf-c "merges" ValueTypes, but its merge keeps nothing of the
 *     earlier one for proto3 scalars);
 *   - any of that wrong -> the walk stops, and ps_pprof_decode runs the deep scan to say where (as
 *     when protobuf-c refuses a message);
 *   - then every check of convert(), reported as convert() would report the first one it meets:
 *     each failed check records (category, element, field) and the smallest one is the answer.
 *
 * It runs in the same walk as the scan ("steps 2 and 3 in one walk" below).
 */
typedef struct wfield {
    uint32_t num, wt;
    const uint8_t *v; /* the value's bytes (a LEN value: from its prefix) */
    size_t vn;
    uint64_t u; /* WT_VARINT: the value (wire_u64 of v, vn) */
    const uint8_t *pl; /* WT_LEN payload */
    size_t pn;
} wfield_t;

/* protobuf-c's parse_uint64 of a varint of n (1..10) bytes. */
static inline __attribute__((always_inline)) uint64_t wire_u64(const uint8_t *v, size_t n)
{
    if (n == 1)
        return v[0];
    uint64_t r = v[0] & 0x7f;
    for (size_t i = 1; i < n; i++)
        r |= (uint64_t)(v[i] & 0x7f) << (7 * i);
    return r;
}

/* One field as protobuf-c's scan reads it (p < end). */
static __attribute__((noinline)) int wire_field_slow(const uint8_t **pp, const uint8_t *end, wfield_t *f)
{
    const uint8_t *p = *pp;
    size_t rem = (size_t)(end - p), used;
    uint32_t tag;

    if ((p[0] & 0xf8) == 0)
        return -1;
    f->wt = p[0] & 7;
    tag = (p[0] & 0x7f) >> 3;
    if ((p[0] & 0x80) == 0) {
        used = 1;
    } else {
        size_t max = rem > 5 ? 5 : rem, i;
        unsigned shift = 4;
        for (i = 1; i < max; i++) {
            tag |= (uint32_t)(p[i] & 0x7f) << shift;
            shift += 7;
            if ((p[i] & 0x80) == 0)
                break;
        }
        if (i == max)
            return -1;
        used = i + 1;
    }
    f->num = tag;
    p += used;
    rem -= used;
    f->v = p;
    switch (f->wt) {
    case WT_VARINT: {
        size_t max = rem < 10 ? rem : 10, i;
        for (i = 0; i < max; i++)
            if ((p[i] & 0x80) == 0)
                break;
        if (i == max)
            return -1;
        f->vn = i + 1;
        f->u = wire_u64(p, f->vn);
        break;
    }
    case WT_I64:
    case WT_I32:
        f->vn = f->wt == WT_I64 ? 8 : 4;
        if (rem < f->vn)
            return -1;
        break;
    case WT_LEN: {
        size_t max = rem < 5 ? rem : 5, i;
        uint64_t len = 0;
        for (i = 0; i < max; i++) {
            len |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if ((p[i] & 0x80) == 0)
                break;
        }
        if (i == max || len > INT_MAX || i + 1 + len > rem)
            return -1;
        f->pl = p + i + 1;
        f->pn = (size_t)len;
        f->vn = i + 1 + (size_t)len;
        break;
    }
    default:
        return -1;
    }
    *pp = p + f->vn;
    return 0;
}

/* wire_field_slow through locals, so that the caller's cursor and field stay in registers (their
 * addresses do not escape into the call). */
static inline __attribute__((always_inline)) int wire_field_slow_local(const uint8_t **pp, const uint8_t *end,
                                                                       wfield_t *f)
{
    const uint8_t *q = *pp;
    wfield_t g = {0};
    int rc = wire_field_slow(&q, end, &g);
    *pp = q;
    *f = g;
    return rc;
}

/* The usual field, inline: a one-byte tag with a varint of at most maxv bytes (two and three read
 * without a loop) or a length of one or two bytes. 0 (*pp past it), -1 if the length runs past the
 * end, else 1: the caller's slow path reads it. */
static inline __attribute__((always_inline)) int field_fast(const uint8_t **pp, const uint8_t *end, wfield_t *f,
                                                            size_t maxv)
{
    const uint8_t *p = *pp;
    size_t rem = (size_t)(end - p);
    uint8_t t = p[0];
    if (t < 8 || t >= 0x80 || rem < 2)
        return 1;
    if ((t & 7) == WT_VARINT) {
        size_t max = rem - 1 < maxv ? rem - 1 : maxv, i = 0;
        uint64_t u = p[1];
        if (u >= 0x80) { /* wire_u64's value, read as the end is looked for */
            u = (u & 0x7f) | (uint64_t)(p[2 < rem ? 2 : 1] & 0x7f) << 7;
            if (max >= 2 && p[2] < 0x80) {
                i = 1;
            } else if (max >= 3 && p[3] < 0x80) {
                u |= (uint64_t)p[3] << 14;
                i = 2;
            } else {
                for (i = 2; i < max; i++) {
                    u |= (uint64_t)(p[1 + i] & 0x7f) << (7 * i);
                    if (p[1 + i] < 0x80)
                        break;
                }
                if (i >= max)
                    return 1;
            }
        }
        f->num = t >> 3;
        f->wt = WT_VARINT;
        f->v = p + 1;
        f->vn = i + 1;
        f->u = u;
        *pp = p + 2 + i;
        return 0;
    }
    if ((t & 7) == WT_LEN) {
        size_t hdr, len = short_len(p, rem, &hdr);
        if (hdr == 0)
            return 1;
        if (len > rem - 1 - hdr)
            return -1;
        f->num = t >> 3;
        f->wt = WT_LEN;
        f->v = p + 1;
        f->pl = p + 1 + hdr;
        f->pn = len;
        f->vn = hdr + len;
        *pp = p + 1 + hdr + len;
        return 0;
    }
    return 1;
}

/* The same as protobuf-c reads it, inline for the usual field. */
static inline __attribute__((always_inline)) int wire_field(const uint8_t **pp, const uint8_t *end, wfield_t *f)
{
    int rc = field_fast(pp, end, f, 10);
    return rc <= 0 ? rc : wire_field_slow_local(pp, end, f);
}

/* protobuf-c's parse_boolean. */
static inline bool wire_bool(const uint8_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] & 0x7f)
            return true;
    return false;
}

/* A flat message: fields 1..nf are singular varints (those in boolmask bools), decoded into
 * vals[1..nf] (zero when absent; a bool nonzero when true, wire_bool's answer); other field
 * numbers are skipped. */
static inline __attribute__((always_inline)) int wire_flat(const uint8_t *p, size_t n, uint32_t nf, uint32_t boolmask,
                                                           uint64_t *vals)
{
    const uint8_t *end = p + n;
    wfield_t f;
    for (uint32_t i = 0; i <= nf; i++)
        vals[i] = 0;
    while (p < end) {
        uint32_t t = p[0], num = t >> 3;
        if ((t & 0x87) == 0 && num - 1 < nf && end - p >= 2) { /* a varint of one or two bytes */
            if (p[1] < 0x80) {
                vals[num] = p[1];
                p += 2;
                continue;
            }
            if (end - p >= 3 && p[2] < 0x80) {
                vals[num] = (uint64_t)(p[1] & 0x7f) | (uint64_t)p[2] << 7;
                p += 3;
                continue;
            }
        }
        if (wire_field(&p, end, &f) != 0)
            return -1;
        if (f.num - 1 >= nf)
            continue;
        if (boolmask & (1u << f.num))
            vals[f.num] = wire_bool(f.v, f.vn);
        else if (f.wt != WT_VARINT)
            return -1;
        else
            vals[f.num] = f.u;
    }
    return 0;
}

/* Categories of convert()'s checks, in the order it makes them. */
enum {
    CK_TYPES = 1,   /* sample_type[i].type, .unit */
    CK_PERIOD,      /* period_type.type, .unit */
    CK_SCALARS,     /* default_sample_type, drop_frames, keep_frames, doc_url */
    CK_COMMENTS,    /* comment[i] */
    CK_MAP_IDS,     /* mapping ids nonzero and unique */
    CK_MAP_STR,     /* mapping[i].filename, .build_id */
    CK_FUN_IDS,
    CK_FUN_STR,     /* function[i].name, .system_name, .filename */
    CK_LOC_IDS,
    CK_LOC_REF,     /* location[i]: mapping_id (0), line[k].function_id (1 + k) */
    CK_NVALUES,     /* sample[i] has n values, all samples first */
    CK_SAMPLE_REF,  /* sample[i]: location_id[k] (k), label[k] key, str, num_unit (LABEL0 + 3k + f) */
};
#define LABEL0 ((uint64_t)1 << 40)

typedef struct wdec {
    ps_arena_t *arena;
    uint32_t nstr;
    bool bad;             /* a check failed: the first in convert()'s order is below */
    uint64_t bad_key[3];
    char bad_msg[sizeof(((ps_err_t *)0)->msg)];
} wdec_t;

static void check_failed(wdec_t *d, uint64_t cat, uint64_t i, uint64_t sub, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void check_failed(wdec_t *d, uint64_t cat, uint64_t i, uint64_t sub, const char *fmt, ...)
{
    const uint64_t k[3] = {cat, i, sub};
    if (d->bad && (k[0] > d->bad_key[0] || (k[0] == d->bad_key[0] && (k[1] > d->bad_key[1] ||
                                                                       (k[1] == d->bad_key[1] && k[2] >= d->bad_key[2])))))
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(d->bad_msg, sizeof(d->bad_msg), fmt, ap);
    va_end(ap);
    memcpy(d->bad_key, k, sizeof(k));
    d->bad = true;
}

static void str_idx_failed(wdec_t *d, uint64_t cat, uint64_t i, uint64_t sub, int64_t v, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));
static void str_idx_failed(wdec_t *d, uint64_t cat, uint64_t i, uint64_t sub, int64_t v, const char *fmt, ...)
{
    char w[128];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w, sizeof(w), fmt, ap);
    va_end(ap);
    check_failed(d, cat, i, sub, "%s: string index %lld out of range (string_table has %u entries)", w, (long long)v,
                 d->nstr);
}

/* dst = the string index v (an int64 from the wire), or a failed check (as STR_IDX). */
#define WSTR(dst, v, cat, i, sub, ...)                                          \
    do {                                                                        \
        uint64_t v_ = (v);                                                      \
        if (v_ < d->nstr) {                                                     \
            (dst) = (uint32_t)v_;                                               \
        } else {                                                                \
            (dst) = 0;                                                          \
            str_idx_failed(d, (cat), (i), (sub), (int64_t)v_, __VA_ARGS__);     \
        }                                                                       \
    } while (0)

/* An idmap that failed to build (convert() would have stopped there) resolves nothing. */
static void wire_idmap(wdec_t *d, idmap_t *m, bool *ok, const uint64_t *ids, size_t n, const char *what, uint64_t cat)
{
    ps_err_t e;
    ps_err_clear(&e);
    *ok = idmap_build(m, d->arena, ids, n, what, &e) == 0;
    if (!*ok)
        check_failed(d, cat, 0, 0, "%s", e.msg);
}

/* ---- steps 2 and 3 in one walk --------------------------------------------------------------- */

/*
 * A profile is scanned and decoded in one walk: each field is read once, with the scan's checks
 * (its framing, wire types, limits, counts, strings) and the decoder's (protobuf-c's framing) made
 * on it together. What the walk reads goes into growable arrays of raw values kept per thread
 * (struct scratch: doubling from 64 elements; what passes 1 MiB in all is freed after the walk);
 * after it, every array of ps_profile_t is allocated from the arena at its size and filled from
 * them: ids resolved, string indexes checked as convert() would. The first field that either
 * reader refuses, or that breaks a limit, stops the walk (WALK_BAD): then the scan runs alone to
 * give its error, and, if it passes, the deep scan says where protobuf-c's reading fails (what the
 * two steps apart answered). Memory stays within the same limits: an array grows only for an
 * element the limits allow (a packed run's room is its bytes, or its varints counted first when
 * the bytes pass the limit), to at most twice its count.
 */
#define WALK_BAD 1

enum { V_STRS, V_TYPES, V_MAPS, V_MAPIDS, V_FUNS, V_FUNIDS, V_LOCS, V_LOCIDS, V_LINES, V_SAMPLES, V_SLOCS, V_VALS,
       V_LABELS, V_COMMENTS, NVEC };

typedef struct vec {
    void *p;
    size_t n, cap; /* elements */
} vec_t;

typedef struct scratch {
    vec_t v[NVEC];
} scratch_t;

typedef struct rawstr {
    const uint8_t *p;
    size_t n;
} rawstr_t;
typedef struct rawloc {
    uint64_t mapping_id, address;
    uint32_t nlines, folded;
} rawloc_t;
typedef struct rawline {
    uint64_t function_id;
    int64_t line, column;
} rawline_t;
typedef struct rawsample {
    uint32_t nlocs, nvals, nlabels;
} rawsample_t;
typedef struct rawvals {
    uint64_t v[11]; /* a mapping's fields 1..10 */
} rawvals_t;
typedef struct rawfun {
    uint64_t name, system_name, filename, start_line;
} rawfun_t;
typedef struct rawtype {
    uint64_t type, unit;
} rawtype_t;
typedef struct rawlabel {
    uint64_t key, str, num, num_unit;
} rawlabel_t;

static const size_t vec_esize[NVEC] = {
    [V_STRS] = sizeof(rawstr_t),       [V_TYPES] = sizeof(rawtype_t),  [V_MAPS] = sizeof(rawvals_t),
    [V_MAPIDS] = sizeof(uint64_t),     [V_FUNS] = sizeof(rawfun_t),    [V_FUNIDS] = sizeof(uint64_t),
    [V_LOCS] = sizeof(rawloc_t),       [V_LOCIDS] = sizeof(uint64_t),  [V_LINES] = sizeof(rawline_t),
    [V_SAMPLES] = sizeof(rawsample_t), [V_SLOCS] = sizeof(uint64_t),   [V_VALS] = sizeof(uint64_t),
    [V_LABELS] = sizeof(rawlabel_t),   [V_COMMENTS] = sizeof(uint64_t),
};

static __attribute__((noinline)) void vec_grow(vec_t *v, size_t esize, size_t need)
{
    size_t cap = v->cap < 64 ? 64 : v->cap * 2;
    while (cap < need)
        cap *= 2;
    if (cap > SIZE_MAX / esize)
        cap = SIZE_MAX / esize; /* ps_xrealloc then aborts, as on any allocation that fails */
    v->p = ps_xrealloc(v->p, cap * esize);
    v->cap = cap;
}

/* Room for more elements at the end of v: their first. */
static inline __attribute__((always_inline)) void *vec_room(vec_t *v, size_t esize, size_t more)
{
    if (v->cap - v->n < more)
        vec_grow(v, esize, v->n + more);
    return (char *)v->p + v->n * esize;
}

/* Room for one more element: it. */
static inline __attribute__((always_inline)) void *vec_push(vec_t *v, size_t esize)
{
    void *p = vec_room(v, esize, 1);
    v->n++;
    return p;
}

#define PUSH(vec, T) ((T *)vec_push((vec), sizeof(T)))

/* Scratch kept per thread between walks (a key's destructor frees it when the thread ends). */
#define SCRATCH_KEEP ((size_t)1 << 20) /* bytes kept after a walk; more is freed */
static pthread_once_t sc_once = PTHREAD_ONCE_INIT;
static pthread_key_t sc_key;
static bool sc_key_ok;

static void scratch_free(void *p)
{
    scratch_t *sc = p;
    for (int k = 0; k < NVEC; k++)
        free(sc->v[k].p);
    free(sc);
}

static void sc_init(void)
{
    sc_key_ok = pthread_key_create(&sc_key, scratch_free) == 0;
}

/* The thread's scratch (*keep: it stays the thread's), or a new one to free after use. */
static scratch_t *scratch_get(bool *keep)
{
    pthread_once(&sc_once, sc_init);
    scratch_t *sc = sc_key_ok ? pthread_getspecific(sc_key) : NULL;
    *keep = sc != NULL;
    if (sc != NULL)
        return sc;
    sc = ps_xcalloc(1, sizeof(*sc));
    *keep = sc_key_ok && pthread_setspecific(sc_key, sc) == 0;
    return sc;
}

/* Every array with room (none NULL: their pointers are stepped over even when empty). */
static inline void scratch_ready(scratch_t *sc)
{
    for (int k = 0; k < NVEC; k++)
        if (sc->v[k].p == NULL)
            vec_grow(&sc->v[k], vec_esize[k], 1);
}

static void scratch_put(scratch_t *sc, bool keep)
{
    size_t bytes = 0;
    for (int k = 0; k < NVEC; k++) {
        bytes += sc->v[k].cap * vec_esize[k];
        sc->v[k].n = 0;
    }
    if (keep && bytes <= SCRATCH_KEEP)
        return;
    for (int k = 0; k < NVEC; k++) {
        free(sc->v[k].p);
        sc->v[k] = (vec_t){0};
    }
    if (!keep)
        free(sc);
}

/* A field that the scan's reader (next_field_slow) and protobuf-c's (wire_field_slow) both take,
 * and alike; else -1. */
static __attribute__((noinline)) int both_field_slow(const uint8_t **pp, const uint8_t *end, wfield_t *f)
{
    const uint8_t *q = *pp, *r = *pp;
    uint64_t tag, v;
    if (read_uvarint(&q, end, &tag) != 0 || (tag >> 3) == 0 || (tag >> 3) > 0x1fffffff)
        return -1;
    switch (tag & 7) {
    case WT_VARINT:
        if (read_uvarint(&q, end, &v) != 0)
            return -1;
        break;
    case WT_LEN:
        if (read_uvarint(&q, end, &v) != 0 || v > (uint64_t)(end - q))
            return -1;
        q += v;
        break;
    case WT_I64:
    case WT_I32: {
        size_t k = (tag & 7) == WT_I64 ? 8 : 4;
        if ((size_t)(end - q) < k)
            return -1;
        q += k;
        break;
    }
    default:
        return -1;
    }
    wfield_t g = {0};
    if (wire_field_slow(&r, end, &g) != 0 || r != q || g.num != (uint32_t)(tag >> 3) || g.wt != (uint32_t)(tag & 7))
        return -1;
    *pp = r;
    *f = g;
    return 0;
}

/* One field (p < end) as both readers take it, inline for a one-byte tag with a varint of at most
 * 9 bytes or a length of one or two bytes (which both read alike); else -1. */
static inline __attribute__((always_inline)) int walk_field(const uint8_t **pp, const uint8_t *end, wfield_t *f)
{
    int rc = field_fast(pp, end, f, 9);
    if (rc <= 0)
        return rc;
    const uint8_t *q = *pp; /* through locals, so that the caller's cursor and field stay in registers */
    wfield_t g = {0};
    rc = both_field_slow(&q, end, &g);
    *pp = q;
    *f = g;
    return rc;
}

/* A repeated varint field's elements (one, or packed: protobuf-c's reading, the scan's count)
 * appended to v, at most left of them (the scan's limit): -1 if either refuses them or there are
 * more. */
static inline __attribute__((always_inline)) int walk_varints(const wfield_t *f, vec_t *v, size_t left, size_t *added)
{
    if (f->wt == WT_VARINT) {
        if (left == 0)
            return -1;
        *PUSH(v, uint64_t) = f->u;
        *added = 1;
        return 0;
    }
    if (f->wt != WT_LEN || (f->pn > 0 && (f->pl[f->pn - 1] & 0x80)))
        return -1;
    size_t room = f->pn;
    if (room == 0) {
        *added = 0;
        return 0;
    }
    if (room > left) {
        room = count_packed(f->pl, f->pn);
        if (room > left)
            return -1;
    }
    uint64_t *dst = vec_room(v, sizeof(uint64_t), room), *d0 = dst;
    const uint8_t *p = f->pl, *end = f->pl + f->pn;
    while (p < end) {
        if (*p < 0x80) {
            *dst++ = *p++;
            continue;
        }
        if (p[1] < 0x80) { /* p is not the run's last byte: that one ends a varint (checked above) */
            *dst++ = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            p += 2;
            continue;
        }
        size_t rem = (size_t)(end - p), max = rem < 10 ? rem : 10, i;
        uint64_t u = (uint64_t)(p[0] & 0x7f) | (uint64_t)(p[1] & 0x7f) << 7; /* wire_u64's, as its end is looked for */
        for (i = 2; i < max; i++) {
            u |= (uint64_t)(p[i] & 0x7f) << (7 * i);
            if ((p[i] & 0x80) == 0)
                break;
        }
        if (i >= max)
            return -1;
        *dst++ = u;
        p += i + 1;
    }
    *added = (size_t)(dst - d0);
    v->n += *added;
    return 0;
}

/* What the walk reads besides the arrays: the singular fields, the string bytes. */
typedef struct walked {
    uint64_t pt_type, pt_unit, dst, drop, keep, doc;
    int64_t time_nanos, duration_nanos, period;
    size_t strbytes;
} walked_t;

static int walk_sample(scratch_t *sc, const ps_pprof_limits_t *lim, const uint8_t *q, size_t n)
{
    const uint8_t *qend = q + n;
    rawsample_t *rs = PUSH(&sc->v[V_SAMPLES], rawsample_t);
    size_t nlocs = 0, nvals = 0, nlabels = 0, added;
    uint64_t v[5];
    wfield_t g = {0};
    while (q < qend) {
        /* a Go profile's usual label, {key, str} of one-byte string indexes (1a 04 08 kk 10 ss): as
         * walk_field and wire_flat read it, without them */
        if (q[0] == 0x1a && qend - q >= 6 && q[1] == 4 && q[2] == 0x08 && q[4] == 0x10 && ((q[3] | q[5]) & 0x80) == 0) {
            if (++nlabels > lim->max_labels)
                return WALK_BAD;
            *PUSH(&sc->v[V_LABELS], rawlabel_t) = (rawlabel_t){q[3], q[5], 0, 0};
            q += 6;
            continue;
        }
        if (walk_field(&q, qend, &g) != 0)
            return WALK_BAD;
        switch (g.num) {
        case 1:
            if (walk_varints(&g, &sc->v[V_SLOCS], lim->max_stack_depth - nlocs, &added) != 0)
                return WALK_BAD;
            nlocs += added;
            break;
        case 2:
            if (walk_varints(&g, &sc->v[V_VALS], lim->max_sample_types - nvals, &added) != 0)
                return WALK_BAD;
            nvals += added;
            break;
        case 3:
            if (g.wt != WT_LEN || wire_flat(g.pl, g.pn, 4, 0, v) != 0 || ++nlabels > lim->max_labels)
                return WALK_BAD;
            *PUSH(&sc->v[V_LABELS], rawlabel_t) = (rawlabel_t){v[1], v[2], v[3], v[4]};
            break;
        }
    }
    rs->nlocs = (uint32_t)nlocs;
    rs->nvals = (uint32_t)nvals;
    rs->nlabels = (uint32_t)nlabels;
    return 0;
}

/* The varint field of the one-byte tag at *pp, of at most 5 bytes, as both readers read it: true
 * with *pp past it, else false (nothing read). */
static inline __attribute__((always_inline)) bool take_varint(const uint8_t **pp, const uint8_t *end, uint8_t tag,
                                                              uint64_t *u)
{
    const uint8_t *p = *pp;
    if (end - p < 2 || p[0] != tag)
        return false;
    const uint8_t *q = p + 1, *stop = end - q > 5 ? q + 5 : end;
    if (read_uvarint(&q, stop, u) != 0)
        return false;
    *pp = q;
    return true;
}

static int walk_location(scratch_t *sc, const ps_pprof_limits_t *lim, const uint8_t *q, size_t n)
{
    const uint8_t *qend = q + n;
    rawloc_t *rl = PUSH(&sc->v[V_LOCS], rawloc_t);
    uint64_t id = 0, v[4];
    wfield_t g = {0};
    *rl = (rawloc_t){0};
    /* the fields in the usual orders (id, mapping_id, address, lines: pprof's; id, address,
     * lines, mapping_id: Go's runtime), id, mapping and address read without the loop's dispatch
     * while they come so, lines of fewer than 128 bytes without the field reader; the loop reads
     * the rest (each field sets what it would set there) */
    if (take_varint(&q, qend, 0x08, &id)) {
        take_varint(&q, qend, 0x10, &rl->mapping_id);
        take_varint(&q, qend, 0x18, &rl->address);
    }
    while (q < qend) {
        if (q[0] == 0x22 && qend - q >= 2 && q[1] < 0x80 && q[1] <= qend - q - 2) { /* 22 LL, in bounds */
            if (wire_flat(q + 2, q[1], 3, 0, v) != 0 || ++rl->nlines > lim->max_lines)
                return WALK_BAD;
            *PUSH(&sc->v[V_LINES], rawline_t) = (rawline_t){v[1], (int64_t)v[2], (int64_t)v[3]};
            q += 2 + q[1];
            continue;
        }
        if (take_varint(&q, qend, 0x10, &rl->mapping_id))
            continue;
        if (walk_field(&q, qend, &g) != 0)
            return WALK_BAD;
        switch (g.num) {
        case 1:
        case 2:
        case 3:
        case 5:
            if (g.wt != WT_VARINT)
                return WALK_BAD;
            if (g.num == 1)
                id = g.u;
            else if (g.num == 2)
                rl->mapping_id = g.u;
            else if (g.num == 3)
                rl->address = g.u;
            else
                rl->folded = wire_bool(g.v, g.vn);
            break;
        case 4:
            if (g.wt != WT_LEN || wire_flat(g.pl, g.pn, 3, 0, v) != 0 || ++rl->nlines > lim->max_lines)
                return WALK_BAD;
            *PUSH(&sc->v[V_LINES], rawline_t) = (rawline_t){v[1], (int64_t)v[2], (int64_t)v[3]};
            break;
        }
    }
    *PUSH(&sc->v[V_LOCIDS], uint64_t) = id;
    return 0;
}

/* The walk over the top-level fields: 0, or WALK_BAD. */
static int walk_profile(scratch_t *sc, const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, walked_t *w)
{
    const uint8_t *p = buf, *end = buf + len;
    vec_t *vs = sc->v;
    uint64_t v[11];
    wfield_t f = {0};
    size_t added;

    memset(w, 0, sizeof(*w));
    while (p < end) {
        /* a sample or a location of fewer than 128 bytes: its length and bounds checked here */
        if ((p[0] == 0x12 || p[0] == 0x22) && end - p >= 2 && p[1] < 0x80 && p[1] <= end - p - 2) {
            if (p[0] == 0x12 ? vs[V_SAMPLES].n >= lim->max_samples || walk_sample(sc, lim, p + 2, p[1]) != 0
                             : vs[V_LOCS].n >= lim->max_locations || walk_location(sc, lim, p + 2, p[1]) != 0)
                return WALK_BAD;
            p += 2 + p[1];
            continue;
        }
        if (walk_field(&p, end, &f) != 0)
            return WALK_BAD;
        if (f.num <= 6 || f.num == 11) {
            if (f.wt != WT_LEN)
                return WALK_BAD;
        } else if (f.num <= 15 && f.num != 13 && f.wt != WT_VARINT) {
            return WALK_BAD;
        }
        switch (f.num) {
        case 1: /* sample_type */
            if (vs[V_TYPES].n >= lim->max_sample_types || wire_flat(f.pl, f.pn, 2, 0, v) != 0)
                return WALK_BAD;
            *PUSH(&vs[V_TYPES], rawtype_t) = (rawtype_t){v[1], v[2]};
            break;
        case 2:
            if (vs[V_SAMPLES].n >= lim->max_samples || walk_sample(sc, lim, f.pl, f.pn) != 0)
                return WALK_BAD;
            break;
        case 3: /* mapping */
            if (vs[V_MAPS].n >= lim->max_mappings || wire_flat(f.pl, f.pn, 10, 0x780 /* 7..10 */, v) != 0)
                return WALK_BAD;
            memcpy(PUSH(&vs[V_MAPS], rawvals_t)->v, v, sizeof(v));
            *PUSH(&vs[V_MAPIDS], uint64_t) = v[1];
            break;
        case 4:
            if (vs[V_LOCS].n >= lim->max_locations || walk_location(sc, lim, f.pl, f.pn) != 0)
                return WALK_BAD;
            break;
        case 5: /* function */
            if (vs[V_FUNS].n >= lim->max_functions || wire_flat(f.pl, f.pn, 5, 0, v) != 0)
                return WALK_BAD;
            *PUSH(&vs[V_FUNS], rawfun_t) = (rawfun_t){v[2], v[3], v[4], v[5]};
            *PUSH(&vs[V_FUNIDS], uint64_t) = v[1];
            break;
        case 6: /* string_table: the scan's checks */
            if (vs[V_STRS].n >= lim->max_strings || f.pn > lim->max_string_len || (vs[V_STRS].n == 0 && f.pn != 0) ||
                str_check(f.pl, f.pn) != STR_OK)
                return WALK_BAD;
            *PUSH(&vs[V_STRS], rawstr_t) = (rawstr_t){f.pl, f.pn};
            w->strbytes += f.pn;
            break;
        case 11: /* period_type: the last one wins */
            if (wire_flat(f.pl, f.pn, 2, 0, v) != 0)
                return WALK_BAD;
            w->pt_type = v[1];
            w->pt_unit = v[2];
            break;
        case 13: /* comment */
            if (walk_varints(&f, &vs[V_COMMENTS], lim->max_strings - vs[V_COMMENTS].n, &added) != 0)
                return WALK_BAD;
            break;
        case 7: w->drop = f.u; break;
        case 8: w->keep = f.u; break;
        case 9: w->time_nanos = (int64_t)f.u; break;
        case 10: w->duration_nanos = (int64_t)f.u; break;
        case 12: w->period = (int64_t)f.u; break;
        case 14: w->dst = f.u; break;
        case 15: w->doc = f.u; break;
        }
    }
    if (vs[V_TYPES].n == 0 || vs[V_STRS].n == 0)
        return WALK_BAD;
    return 0;
}

/* An array of the profile for the raw one v: *n its length. */
static void *arena_array(ps_arena_t *arena, const vec_t *v, size_t esize, uint32_t *n)
{
    *n = (uint32_t)v->n;
    return ps_arena_alloc(arena, v->n * esize);
}

/* After the walk: the profile from the raw arrays, with convert()'s checks. */
static int walk_finish(const scratch_t *sc, const walked_t *w, ps_arena_t *arena, ps_profile_t *out, ps_err_t *err)
{
    const vec_t *vs = sc->v;
    wdec_t dd, *d = &dd;
    idmap_t mids, fids, lids;
    bool mids_ok, fids_ok, lids_ok;

    memset(d, 0, sizeof(*d));
    d->arena = arena;
    d->nstr = (uint32_t)vs[V_STRS].n;

    /* strings, copied into one block, each NUL-terminated (UTF-8 and NUL-free by the walk): when
     * each follows the one before it after 1 to 6 bytes (its field's tag and length: as every
     * encoder writes the string_table), their span at once, each string's NUL then overwriting
     * the bytes after it in the copy */
    const rawstr_t *rs = vs[V_STRS].p;
    out->nstrings = d->nstr;
    out->strings = ps_arena_alloc(arena, d->nstr * sizeof(ps_str_t));
    bool one_span = true;
    for (uint32_t i = 1; i < d->nstr; i++)
        one_span &= (size_t)(rs[i].p - (rs[i - 1].p + rs[i - 1].n)) - 1 < 6; /* rs[i].p after the end */
    if (one_span) {
        const uint8_t *from = rs[0].p;
        size_t span = (size_t)(rs[d->nstr - 1].p + rs[d->nstr - 1].n - from);
        char *text = ps_arena_alloc(arena, span + 1);
        ps_str_t *str = out->strings;
        memcpy(text, from, span);
        for (uint32_t i = 0; i < d->nstr; i++) {
            char *t = text + (rs[i].p - from);
            t[rs[i].n] = '\0';
            str[i] = (ps_str_t){t, (uint32_t)rs[i].n};
        }
    } else {
        char *text = ps_arena_alloc(arena, w->strbytes + d->nstr);
        for (uint32_t i = 0; i < d->nstr; i++) {
            memcpy(text, rs[i].p, rs[i].n);
            text[rs[i].n] = '\0';
            out->strings[i].ptr = text;
            out->strings[i].len = (uint32_t)rs[i].n;
            text += rs[i].n + 1;
        }
    }

    const rawtype_t *rt = vs[V_TYPES].p;
    out->sample_types = arena_array(arena, &vs[V_TYPES], sizeof(ps_value_type_t), &out->ntypes);
    for (uint32_t i = 0; i < out->ntypes; i++) {
        ps_value_type_t *t = &out->sample_types[i];
        WSTR(t->type, rt[i].type, CK_TYPES, i, 0, "sample_type[%u].type", i);
        WSTR(t->unit, rt[i].unit, CK_TYPES, i, 1, "sample_type[%u].unit", i);
    }
    WSTR(out->period_type.type, w->pt_type, CK_PERIOD, 0, 0, "period_type.type");
    WSTR(out->period_type.unit, w->pt_unit, CK_PERIOD, 0, 1, "period_type.unit");
    WSTR(out->default_sample_type, w->dst, CK_SCALARS, 0, 0, "default_sample_type");
    WSTR(out->drop_frames, w->drop, CK_SCALARS, 0, 1, "drop_frames");
    WSTR(out->keep_frames, w->keep, CK_SCALARS, 0, 2, "keep_frames");
    WSTR(out->doc_url, w->doc, CK_SCALARS, 0, 3, "doc_url");
    out->time_nanos = w->time_nanos;
    out->duration_nanos = w->duration_nanos;
    out->period = w->period;
    const uint64_t *rc = vs[V_COMMENTS].p;
    out->comments = arena_array(arena, &vs[V_COMMENTS], sizeof(uint32_t), &out->ncomments);
    for (uint32_t i = 0; i < out->ncomments; i++)
        WSTR(out->comments[i], rc[i], CK_COMMENTS, i, 0, "comment[%u]", i);

    const rawvals_t *rm = vs[V_MAPS].p;
    out->mappings = arena_array(arena, &vs[V_MAPS], sizeof(ps_mapping_t), &out->nmappings);
    for (uint32_t i = 0; i < out->nmappings; i++) {
        ps_mapping_t *m = &out->mappings[i];
        const uint64_t *v = rm[i].v;
        m->memory_start = v[2];
        m->memory_limit = v[3];
        m->file_offset = v[4];
        WSTR(m->filename, v[5], CK_MAP_STR, i, 0, "mapping[%u].filename", i);
        WSTR(m->build_id, v[6], CK_MAP_STR, i, 1, "mapping[%u].build_id", i);
        m->flags = (v[7] ? PS_MAP_HAS_FUNCTIONS : 0) | (v[8] ? PS_MAP_HAS_FILENAMES : 0) |
                   (v[9] ? PS_MAP_HAS_LINE_NUMBERS : 0) | (v[10] ? PS_MAP_HAS_INLINE_FRAMES : 0);
    }
    const rawfun_t *rf = vs[V_FUNS].p;
    out->functions = arena_array(arena, &vs[V_FUNS], sizeof(ps_function_t), &out->nfunctions);
    for (uint32_t i = 0; i < out->nfunctions; i++) {
        ps_function_t *fn = &out->functions[i];
        WSTR(fn->name, rf[i].name, CK_FUN_STR, i, 0, "function[%u].name", i);
        WSTR(fn->system_name, rf[i].system_name, CK_FUN_STR, i, 1, "function[%u].system_name", i);
        WSTR(fn->filename, rf[i].filename, CK_FUN_STR, i, 2, "function[%u].filename", i);
        fn->start_line = (int64_t)rf[i].start_line;
    }
    wire_idmap(d, &mids, &mids_ok, vs[V_MAPIDS].p, out->nmappings, "mapping", CK_MAP_IDS);
    wire_idmap(d, &fids, &fids_ok, vs[V_FUNIDS].p, out->nfunctions, "function", CK_FUN_IDS);

    /* locations, with all their lines in one array */
    const rawloc_t *rl = vs[V_LOCS].p;
    const rawline_t *rn = vs[V_LINES].p;
    out->locations = arena_array(arena, &vs[V_LOCS], sizeof(ps_location_t), &out->nlocations);
    ps_line_t *lines = ps_arena_alloc(arena, vs[V_LINES].n * sizeof(ps_line_t));
    for (uint32_t i = 0; i < out->nlocations; i++) {
        ps_location_t *l = &out->locations[i];
        l->lines = lines;
        l->nlines = rl[i].nlines;
        for (uint32_t k = 0; k < l->nlines; k++, rn++) {
            ps_line_t *ln = &lines[k];
            ln->function = 0;
            if (rn->function_id != 0 && fids_ok && (ln->function = idmap_get(&fids, rn->function_id)) == 0)
                check_failed(d, CK_LOC_REF, i, 1 + (uint64_t)k, "location[%u].line[%u]: function_id %llu is not defined",
                             i, k, (unsigned long long)rn->function_id);
            ln->line = rn->line;
            ln->column = rn->column;
        }
        lines += l->nlines;
        l->mapping = 0;
        if (rl[i].mapping_id != 0 && mids_ok && (l->mapping = idmap_get(&mids, rl[i].mapping_id)) == 0)
            check_failed(d, CK_LOC_REF, i, 0, "location[%u]: mapping_id %llu is not defined", i,
                         (unsigned long long)rl[i].mapping_id);
        l->address = rl[i].address;
        l->is_folded = rl[i].folded ? 1 : 0;
    }
    wire_idmap(d, &lids, &lids_ok, vs[V_LOCIDS].p, out->nlocations, "location", CK_LOC_IDS);

    /* samples; stacks, values and labels each in one array */
    const rawsample_t *rsm = vs[V_SAMPLES].p;
    const uint64_t *raw_locs = vs[V_SLOCS].p;
    const rawlabel_t *rb = vs[V_LABELS].p;
    out->samples = arena_array(arena, &vs[V_SAMPLES], sizeof(ps_sample_t), &out->nsamples);
    uint32_t *locs = ps_arena_alloc(arena, vs[V_SLOCS].n * sizeof(uint32_t));
    int64_t *values = ps_arena_alloc(arena, vs[V_VALS].n * sizeof(int64_t));
    ps_label_t *labels = ps_arena_alloc(arena, vs[V_LABELS].n * sizeof(ps_label_t));
    if (vs[V_VALS].n > 0)
        memcpy(values, vs[V_VALS].p, vs[V_VALS].n * sizeof(int64_t));
    /* ids 1..n in order (Go's): all stacks at once, looked at one by one only if one is undefined */
    bool locs_done = false;
    if (lids_ok && lids.nident != 0) {
        const uint64_t nid = lids.nident;
        const size_t nl = vs[V_SLOCS].n;
        size_t k = 0;
        bool bad = false;
        for (; k + 4 <= nl; k += 4) {
            uint64_t x0 = raw_locs[k], x1 = raw_locs[k + 1], x2 = raw_locs[k + 2], x3 = raw_locs[k + 3];
            locs[k] = (uint32_t)x0, locs[k + 1] = (uint32_t)x1, locs[k + 2] = (uint32_t)x2, locs[k + 3] = (uint32_t)x3;
            bad |= (x0 - 1 >= nid) | (x1 - 1 >= nid) | (x2 - 1 >= nid) | (x3 - 1 >= nid);
        }
        for (; k < nl; k++) {
            locs[k] = (uint32_t)raw_locs[k];
            bad |= raw_locs[k] - 1 >= nid;
        }
        locs_done = !bad;
    }
    for (uint32_t i = 0; i < out->nsamples; i++) {
        ps_sample_t *sm = &out->samples[i];
        sm->locs = locs;
        sm->nlocs = rsm[i].nlocs;
        sm->values = values;
        sm->labels = labels;
        sm->nlabels = rsm[i].nlabels;
        for (uint32_t k = 0; k < sm->nlabels; k++, rb++) {
            ps_label_t *lb = &labels[k];
            WSTR(lb->key, rb->key, CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k, "sample[%u].label[%u].key", i, k);
            WSTR(lb->str, rb->str, CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k + 1, "sample[%u].label[%u].str", i, k);
            WSTR(lb->num_unit, rb->num_unit, CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k + 2,
                 "sample[%u].label[%u].num_unit", i, k);
            lb->num = (int64_t)rb->num;
        }
        for (uint32_t k = 0; k < sm->nlocs && !locs_done; k++) {
            locs[k] = lids_ok ? idmap_get(&lids, raw_locs[k]) : 0;
            if (locs[k] == 0 && lids_ok)
                check_failed(d, CK_SAMPLE_REF, i, k, "sample[%u]: location_id %llu is not defined", i,
                             (unsigned long long)raw_locs[k]);
        }
        if (rsm[i].nvals != out->ntypes)
            check_failed(d, CK_NVALUES, i, 0, "sample[%u] has %zu values but there are %u sample types", i,
                         (size_t)rsm[i].nvals, out->ntypes);
        raw_locs += sm->nlocs;
        locs += sm->nlocs;
        values += rsm[i].nvals;
        labels += sm->nlabels;
    }
    if (d->bad)
        return ps_err_set(err, PS_EINVAL, "%s", d->bad_msg);
    return 0;
}


/* Steps 2 and 3: 0, an error of convert()'s checks, or WALK_BAD (nothing allocated from arena). */
static int walk_decode(const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, ps_arena_t *arena,
                       ps_profile_t *out, ps_err_t *err)
{
    bool keep;
    scratch_t *sc = scratch_get(&keep);
    walked_t w;
    scratch_ready(sc);
    int rc = walk_profile(sc, buf, len, lim, &w);
    if (rc == 0)
        rc = walk_finish(sc, &w, arena, out, err);
    scratch_put(sc, keep);
    return rc;
}

/* The deep scan, after a decoder refused the wire bytes: the message says where. */
static int wire_error(const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, ps_err_t *err)
{
    scan_t s;
    int rc;
    memset(&s, 0, sizeof(s));
    s.base = buf;
    s.lim = lim;
    s.err = err;
    s.deep = true;
    if ((rc = scan_profile(&s, buf, len)) == 0)
        rc = ps_err_set(err, PS_EINVAL, "not a valid pprof protobuf");
    return rc;
}

/* Step 1: gunzip (or the size check); temp: into the thread's buffer (ps_gunzip_temp) where
 * libdeflate takes the stream. */
static int inflate(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, bool temp,
                   const uint8_t **buf, size_t *len, ps_err_t *err)
{
    *buf = data;
    *len = n;
    if (ps_is_gzip(data, n))
        return (temp ? ps_gunzip_temp : ps_gunzip)(data, n, lim->max_inflated, arena, buf, len, err);
    if (n > lim->max_inflated)
        return ps_err_set(err, PS_ETOOBIG, "profile is %zu bytes, more than %zu (max_inflated)", n, lim->max_inflated);
    return 0;
}

/* Step 2 alone: the scan. */
static int scan_alone(const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, ps_err_t *err)
{
    scan_t s;
    memset(&s, 0, sizeof(s));
    s.base = buf;
    s.lim = lim;
    s.err = err;
    return scan_profile(&s, buf, len);
}

int ps_pprof_decode(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *out,
                    ps_err_t *err)
{
    ps_pprof_limits_t deflim;
    const uint8_t *buf;
    size_t len;

    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        ps_pprof_limits_default(&deflim);
        lim = &deflim;
    }
    /* the inflated bytes are the thread's: the profile keeps nothing of them (walk_finish copies
     * the strings), so the next decode inflates into the same memory, still in this core's cache */
    int rc = inflate(data, n, lim, arena, true, &buf, &len, err);
    /* the one walk; what it refuses, the scan and then the deep scan name as the steps apart did */
    if (rc == 0 && (rc = walk_decode(buf, len, lim, arena, out, err)) == WALK_BAD &&
        (rc = scan_alone(buf, len, lim, err)) == 0)
        rc = wire_error(buf, len, lim, err);
    ps_gunzip_temp_done();
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int ps_pprof_scan(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, const uint8_t **buf,
                  size_t *len, ps_err_t *err)
{
    int rc = inflate(data, n, lim, arena, false, buf, len, err);
    return rc != 0 ? rc : scan_alone(*buf, *len, lim, err);
}

int ps_pprof_scan_deep(const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, ps_err_t *err)
{
    return wire_error(buf, len, lim, err);
}

/* ---- encoding ------------------------------------------------------------------------------- */

int ps_pprof_encode(const ps_profile_t *p, int gzip_level, ps_buf_t *out, ps_err_t *err)
{
    static const pb_profile_t profile_init = PERFTOOLS__PROFILES__PROFILE__INIT;
    static const pb_value_type_t vt_init = PERFTOOLS__PROFILES__VALUE_TYPE__INIT;
    static const pb_sample_t sample_init = PERFTOOLS__PROFILES__SAMPLE__INIT;
    static const pb_label_t label_init = PERFTOOLS__PROFILES__LABEL__INIT;
    static const pb_mapping_t mapping_init = PERFTOOLS__PROFILES__MAPPING__INIT;
    static const pb_location_t location_init = PERFTOOLS__PROFILES__LOCATION__INIT;
    static const pb_line_t line_init = PERFTOOLS__PROFILES__LINE__INIT;
    static const pb_function_t function_init = PERFTOOLS__PROFILES__FUNCTION__INIT;
    ps_arena_t a = PS_ARENA_INIT;
    pb_profile_t pb = profile_init;
    pb_value_type_t period_type = vt_init;
    int rc = 0;

    if (gzip_level > 9) {
        rc = ps_err_set(err, PS_EINVAL, "gzip level %d out of range (0..9, or negative for none)", gzip_level);
        goto Exit;
    }

    /* strings: protobuf-c wants NUL-terminated ones */
    pb.n_string_table = p->nstrings;
    pb.string_table = ps_arena_alloc(&a, p->nstrings * sizeof(char *));
    for (uint32_t i = 0; i < p->nstrings; i++) {
        const ps_str_t *s = &p->strings[i];
        if (s->len > 0 && memchr(s->ptr, 0, s->len) != NULL) {
            rc = ps_err_set(err, PS_EINVAL, "string_table[%u] contains a NUL byte", i);
            goto Exit;
        }
        pb.string_table[i] = ps_arena_strndup(&a, s->len > 0 ? s->ptr : "", s->len);
    }

    pb.n_sample_type = p->ntypes;
    pb.sample_type = ps_arena_alloc(&a, p->ntypes * sizeof(pb_value_type_t *));
    pb_value_type_t *vts = ps_arena_alloc(&a, p->ntypes * sizeof(pb_value_type_t));
    for (uint32_t i = 0; i < p->ntypes; i++) {
        vts[i] = vt_init;
        vts[i].type = p->sample_types[i].type;
        vts[i].unit = p->sample_types[i].unit;
        pb.sample_type[i] = &vts[i];
    }
    if (p->period_type.type != 0 || p->period_type.unit != 0) {
        period_type.type = p->period_type.type;
        period_type.unit = p->period_type.unit;
        pb.period_type = &period_type;
    }
    pb.period = p->period;
    pb.time_nanos = p->time_nanos;
    pb.duration_nanos = p->duration_nanos;
    pb.default_sample_type = p->default_sample_type;
    pb.drop_frames = p->drop_frames;
    pb.keep_frames = p->keep_frames;
    pb.doc_url = p->doc_url;
    pb.n_comment = p->ncomments;
    pb.comment = ps_arena_alloc(&a, p->ncomments * sizeof(int64_t));
    for (uint32_t i = 0; i < p->ncomments; i++)
        pb.comment[i] = p->comments[i];

    pb.n_mapping = p->nmappings;
    pb.mapping = ps_arena_alloc(&a, p->nmappings * sizeof(pb_mapping_t *));
    pb_mapping_t *ms = ps_arena_alloc(&a, p->nmappings * sizeof(pb_mapping_t));
    for (uint32_t i = 0; i < p->nmappings; i++) {
        const ps_mapping_t *m = &p->mappings[i];
        ms[i] = mapping_init;
        ms[i].id = i + 1;
        ms[i].memory_start = m->memory_start;
        ms[i].memory_limit = m->memory_limit;
        ms[i].file_offset = m->file_offset;
        ms[i].filename = m->filename;
        ms[i].build_id = m->build_id;
        ms[i].has_functions = (m->flags & PS_MAP_HAS_FUNCTIONS) != 0;
        ms[i].has_filenames = (m->flags & PS_MAP_HAS_FILENAMES) != 0;
        ms[i].has_line_numbers = (m->flags & PS_MAP_HAS_LINE_NUMBERS) != 0;
        ms[i].has_inline_frames = (m->flags & PS_MAP_HAS_INLINE_FRAMES) != 0;
        pb.mapping[i] = &ms[i];
    }

    pb.n_function = p->nfunctions;
    pb.function = ps_arena_alloc(&a, p->nfunctions * sizeof(pb_function_t *));
    pb_function_t *fs = ps_arena_alloc(&a, p->nfunctions * sizeof(pb_function_t));
    for (uint32_t i = 0; i < p->nfunctions; i++) {
        const ps_function_t *f = &p->functions[i];
        fs[i] = function_init;
        fs[i].id = i + 1;
        fs[i].name = f->name;
        fs[i].system_name = f->system_name;
        fs[i].filename = f->filename;
        fs[i].start_line = f->start_line;
        pb.function[i] = &fs[i];
    }

    pb.n_location = p->nlocations;
    pb.location = ps_arena_alloc(&a, p->nlocations * sizeof(pb_location_t *));
    pb_location_t *ls = ps_arena_alloc(&a, p->nlocations * sizeof(pb_location_t));
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *l = &p->locations[i];
        ls[i] = location_init;
        ls[i].id = i + 1;
        ls[i].mapping_id = l->mapping;
        ls[i].address = l->address;
        ls[i].is_folded = l->is_folded != 0;
        ls[i].n_line = l->nlines;
        ls[i].line = ps_arena_alloc(&a, l->nlines * sizeof(pb_line_t *));
        pb_line_t *lns = ps_arena_alloc(&a, l->nlines * sizeof(pb_line_t));
        for (uint32_t k = 0; k < l->nlines; k++) {
            lns[k] = line_init;
            lns[k].function_id = l->lines[k].function;
            lns[k].line = l->lines[k].line;
            lns[k].column = l->lines[k].column;
            ls[i].line[k] = &lns[k];
        }
        pb.location[i] = &ls[i];
    }

    pb.n_sample = p->nsamples;
    pb.sample = ps_arena_alloc(&a, p->nsamples * sizeof(pb_sample_t *));
    pb_sample_t *ss = ps_arena_alloc(&a, p->nsamples * sizeof(pb_sample_t));
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *s = &p->samples[i];
        ss[i] = sample_init;
        ss[i].n_location_id = s->nlocs;
        ss[i].location_id = ps_arena_alloc(&a, s->nlocs * sizeof(uint64_t));
        for (uint32_t k = 0; k < s->nlocs; k++)
            ss[i].location_id[k] = s->locs[k];
        ss[i].n_value = p->ntypes;
        ss[i].value = s->values;
        ss[i].n_label = s->nlabels;
        ss[i].label = ps_arena_alloc(&a, s->nlabels * sizeof(pb_label_t *));
        pb_label_t *lbs = ps_arena_alloc(&a, s->nlabels * sizeof(pb_label_t));
        for (uint32_t k = 0; k < s->nlabels; k++) {
            lbs[k] = label_init;
            lbs[k].key = s->labels[k].key;
            lbs[k].str = s->labels[k].str;
            lbs[k].num = s->labels[k].num;
            lbs[k].num_unit = s->labels[k].num_unit;
            ss[i].label[k] = &lbs[k];
        }
        pb.sample[i] = &ss[i];
    }

    size_t size = perftools__profiles__profile__get_packed_size(&pb);
    if (gzip_level < 0) {
        ps_buf_reserve(out, size);
        out->len += perftools__profiles__profile__pack(&pb, out->data + out->len);
    } else {
        uint8_t *tmp = ps_arena_alloc(&a, size);
        size_t packed = perftools__profiles__profile__pack(&pb, tmp);
        rc = ps_gzip(tmp, packed, gzip_level, out, err);
    }
Exit:
    ps_arena_dispose(&a);
    return rc;
}
