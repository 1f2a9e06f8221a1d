/*
 * pprof.c - the pprof codec: perftools.profiles.Profile bytes (raw or gzipped) to and from
 * ps_profile_t. Schema: proto/profile.proto (docs/protocols.md). The only user of the generated
 * perftools__profiles__* structs; gzip is gzip.c's.
 *
 * Decoding untrusted bytes runs in three steps; each can reject the input with a message that
 * names the field and index:
 *
 *   1. gunzip, if the bytes start with 1f 8b, into the arena (at most max_inflated bytes);
 *   2. scan: one walk over the protobuf wire format that checks the framing, counts every
 *      repeated field (and the totals: stack entries, values, labels, lines, string bytes) and
 *      checks the counts, string lengths, UTF-8 and string_table[0] == "" against
 *      ps_pprof_limits_t -- all before anything proportional to those counts is allocated. For
 *      speed it does not look inside the flat messages (ValueType, Label, Line, Mapping,
 *      Function): step 3 checks those, and if it refuses the bytes, a second, deep scan runs to
 *      say where;
 *   3. decode (wire_decode): a direct second pass over the wire bytes into ps_profile_t, every
 *      array allocated once from the arena at the size step 2 counted, strings copied once into
 *      one NUL-terminated block. It accepts exactly what protobuf-c 1.4 unpack accepts (unknown
 *      fields of any wire type it knows skipped, last value wins for singular fields, repeated
 *      varints packed or not, protobuf-c's quirks included: see "step 3" below) and then makes
 *      every check the conversion made -- wire ids to dense 1-based indexes (a direct table when
 *      the ids are small, else a sorted array), ids nonzero and unique, every reference and
 *      string index in range -- reporting the first failure in the conversion's order.
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
    uint64_t c = 0;
    size_t i = 0;
    for (; i + 8 <= f->pn; i += 8) { /* a varint ends at each byte without the high bit: 8 at a time */
        uint64_t w;
        memcpy(&w, f->pl + i, 8);
        c += (((~w & 0x8080808080808080ull) >> 7) * 0x0101010101010101ull) >> 56;
    }
    for (; i < f->pn; i++)
        c += (f->pl[i] & 0x80) == 0;
    *count += c;
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

/* Whether a string holds a NUL byte (the first question), else whether it is valid UTF-8: one
 * pass, 8 bytes at a time, over the usual all-ASCII string. */
static int str_check(const uint8_t *p, size_t n)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        /* a byte with the high bit set, or a zero byte ((w - 0x01..) & ~w has its high bit) */
        if (((w | ((w - 0x0101010101010101ull) & ~w)) & 0x8080808080808080ull) != 0)
            break;
    }
    for (; i < n; i++) {
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
    uint32_t *direct; /* direct[id] = index (0 = undefined), when ids are small */
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
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        uint64_t id = ids[i];
        if (id == 0)
            return ps_err_set(err, PS_EINVAL, "%s[%zu]: id 0 is not allowed (ids must be nonzero)", what, i);
        if (id > max)
            max = id;
    }
    if (n == 0)
        return 0;
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

/* ---- step 3: the direct decoder ------------------------------------------------------------- */

/*
 * A second walk over the wire bytes that fills ps_profile_t, with exactly the semantics of
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
 *   - any of that wrong -> WIRE_BAD, and ps_pprof_decode runs the deep scan to say where (as when
 *     protobuf-c refuses a message);
 *   - then every check of convert(), reported as convert() would report the first one it meets:
 *     each failed check records (category, element, field) and the smallest one is the answer.
 *
 * One walk over the top-level fields decodes strings, sample types, mappings, functions and
 * scalars, and notes where each location and sample is; then the locations are decoded (their
 * mapping and function ids resolve through the maps built after the walk), then the samples
 * (location ids resolved). Every array comes from the arena once, sized by the counts of step 2;
 * strings are copied into one block, each NUL-terminated.
 */
#define WIRE_BAD 1

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

/* The same, inline for the usual one-byte tag with a varint, or a length of one or two bytes. */
static inline __attribute__((always_inline)) int wire_field(const uint8_t **pp, const uint8_t *end, wfield_t *f)
{
    const uint8_t *p = *pp;
    size_t rem = (size_t)(end - p);
    uint8_t t = p[0];
    if (t >= 8 && t < 0x80 && rem >= 2) {
        if ((t & 7) == WT_VARINT) {
            size_t max = rem - 1 < 10 ? rem - 1 : 10, i = 0;
            uint64_t u = p[1];
            if (u >= 0x80) { /* wire_u64's value, read as the end is looked for */
                u &= 0x7f;
                for (i = 1; i < max; i++) {
                    u |= (uint64_t)(p[1 + i] & 0x7f) << (7 * i);
                    if (p[1 + i] < 0x80)
                        break;
                }
                if (i == max)
                    return -1;
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
                return wire_field_slow_local(pp, end, f);
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
    }
    return wire_field_slow_local(pp, end, f);
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
 * vals[1..nf] (zero when absent); other field numbers are skipped. */
static inline __attribute__((always_inline)) int wire_flat(const uint8_t *p, size_t n, uint32_t nf, uint32_t boolmask,
                                                           uint64_t *vals)
{
    const uint8_t *end = p + n;
    wfield_t f;
    for (uint32_t i = 0; i <= nf; i++)
        vals[i] = 0;
    while (p < end) {
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

/* A repeated varint field's elements (one, or packed) appended at dst[*n], at most cap in all. */
static inline __attribute__((always_inline)) int wire_varints(const wfield_t *f, uint64_t *dst, size_t *n, size_t cap)
{
    if (f->wt == WT_VARINT) {
        if (*n >= cap)
            return -2;
        dst[(*n)++] = f->u;
        return 0;
    }
    if (f->wt != WT_LEN)
        return -1;
    const uint8_t *p = f->pl, *end = f->pl + f->pn;
    while (p < end) {
        if (*p < 0x80) {
            if (*n >= cap)
                return -2;
            dst[(*n)++] = *p++;
            continue;
        }
        if (end - p >= 2 && p[1] < 0x80) { /* two bytes: ids up to 16383 */
            if (*n >= cap)
                return -2;
            dst[(*n)++] = (uint64_t)(p[0] & 0x7f) | (uint64_t)p[1] << 7;
            p += 2;
            continue;
        }
        size_t rem = (size_t)(end - p), max = rem < 10 ? rem : 10, i;
        for (i = 0; i < max; i++)
            if ((p[i] & 0x80) == 0)
                break;
        if (i == max)
            return -1;
        if (*n >= cap)
            return -2;
        dst[(*n)++] = wire_u64(p, i + 1);
        p += i + 1;
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

/* A sub-message's payload, as walk 1 found it. */
typedef struct wspan {
    const uint8_t *p;
    size_t n;
} wspan_t;

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

static int wire_decode(const scan_t *s, const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim,
                       ps_arena_t *arena, ps_profile_t *out, ps_err_t *err)
{
    const uint8_t *end = buf + len, *p;
    wdec_t dd, *d = &dd;
    wfield_t f;
    uint64_t v[16];
    idmap_t mids, fids, lids;
    bool mids_ok, fids_ok, lids_ok;
    int64_t pt_type = 0, pt_unit = 0, dst = 0, drop = 0, keep = 0, doc = 0;
    size_t ncomments = 0;

    memset(d, 0, sizeof(*d));
    d->arena = arena;
    if (s->nstrings > UINT32_MAX || s->nsamples > UINT32_MAX || s->nlocations > UINT32_MAX ||
        s->nfunctions > UINT32_MAX || s->nmappings > UINT32_MAX || s->ncomments > UINT32_MAX ||
        s->nlocs > SIZE_MAX / 16 || s->nvalues > SIZE_MAX / 16 || s->nlabels > SIZE_MAX / 64 ||
        s->nlines > SIZE_MAX / 32 || s->strbytes > SIZE_MAX / 2)
        return ps_err_set(err, PS_EINTERNAL, "pprof: the wire scan counted too much");
    d->nstr = (uint32_t)s->nstrings;

    out->nstrings = 0;
    out->strings = ps_arena_alloc(arena, s->nstrings * sizeof(ps_str_t));
    char *text = ps_arena_alloc(arena, (size_t)s->strbytes + (size_t)s->nstrings);
    size_t ntext = 0;
    out->ntypes = 0;
    out->sample_types = ps_arena_alloc(arena, s->ntypes * sizeof(ps_value_type_t));
    uint64_t *comments = ps_arena_alloc(arena, s->ncomments * sizeof(uint64_t));
    out->nmappings = 0;
    out->mappings = ps_arena_alloc(arena, s->nmappings * sizeof(ps_mapping_t));
    uint64_t *map_ids = ps_arena_alloc(arena, s->nmappings * sizeof(uint64_t));
    out->nfunctions = 0;
    out->functions = ps_arena_alloc(arena, s->nfunctions * sizeof(ps_function_t));
    uint64_t *fun_ids = ps_arena_alloc(arena, s->nfunctions * sizeof(uint64_t));
    /* where walk 1 meets each location and sample, for walks 2 and 3 */
    wspan_t *loc_spans = ps_arena_alloc(arena, s->nlocations * sizeof(wspan_t));
    wspan_t *sample_spans = ps_arena_alloc(arena, s->nsamples * sizeof(wspan_t));
    size_t nloc_spans = 0, nsample_spans = 0;

    /* walk 1: strings, sample types, mappings, functions, scalars */
    for (p = buf; p < end;) {
        if (wire_field(&p, end, &f) != 0)
            return WIRE_BAD;
        switch (f.num) {
        case 1: /* sample_type */
            if (f.wt != WT_LEN || wire_flat(f.pl, f.pn, 2, 0, v) != 0)
                return WIRE_BAD;
            if (out->ntypes >= s->ntypes)
                goto Disagree;
            {
                uint32_t i = out->ntypes++;
                ps_value_type_t *t = &out->sample_types[i];
                WSTR(t->type, v[1], CK_TYPES, i, 0, "sample_type[%u].type", i);
                WSTR(t->unit, v[2], CK_TYPES, i, 1, "sample_type[%u].unit", i);
            }
            break;
        case 2:
            if (f.wt != WT_LEN)
                return WIRE_BAD;
            if (nsample_spans >= s->nsamples)
                goto Disagree;
            sample_spans[nsample_spans++] = (wspan_t){f.pl, f.pn};
            break;
        case 4:
            if (f.wt != WT_LEN)
                return WIRE_BAD;
            if (nloc_spans >= s->nlocations)
                goto Disagree;
            loc_spans[nloc_spans++] = (wspan_t){f.pl, f.pn};
            break;
        case 3: /* mapping */
            if (f.wt != WT_LEN || wire_flat(f.pl, f.pn, 10, 0x780 /* 7..10 */, v) != 0)
                return WIRE_BAD;
            if (out->nmappings >= s->nmappings)
                goto Disagree;
            {
                uint32_t i = out->nmappings++;
                ps_mapping_t *m = &out->mappings[i];
                map_ids[i] = v[1];
                m->memory_start = v[2];
                m->memory_limit = v[3];
                m->file_offset = v[4];
                WSTR(m->filename, v[5], CK_MAP_STR, i, 0, "mapping[%u].filename", i);
                WSTR(m->build_id, v[6], CK_MAP_STR, i, 1, "mapping[%u].build_id", i);
                m->flags = (v[7] ? PS_MAP_HAS_FUNCTIONS : 0) | (v[8] ? PS_MAP_HAS_FILENAMES : 0) |
                           (v[9] ? PS_MAP_HAS_LINE_NUMBERS : 0) | (v[10] ? PS_MAP_HAS_INLINE_FRAMES : 0);
            }
            break;
        case 5: /* function */
            if (f.wt != WT_LEN || wire_flat(f.pl, f.pn, 5, 0, v) != 0)
                return WIRE_BAD;
            if (out->nfunctions >= s->nfunctions)
                goto Disagree;
            {
                uint32_t i = out->nfunctions++;
                ps_function_t *fn = &out->functions[i];
                fun_ids[i] = v[1];
                WSTR(fn->name, v[2], CK_FUN_STR, i, 0, "function[%u].name", i);
                WSTR(fn->system_name, v[3], CK_FUN_STR, i, 1, "function[%u].system_name", i);
                WSTR(fn->filename, v[4], CK_FUN_STR, i, 2, "function[%u].filename", i);
                fn->start_line = (int64_t)v[5];
            }
            break;
        case 6: /* string_table: UTF-8 and NUL-free by the scan */
            if (f.wt != WT_LEN)
                return WIRE_BAD;
            if (out->nstrings >= s->nstrings || f.pn > s->strbytes - (ntext - out->nstrings))
                goto Disagree;
            memcpy(text + ntext, f.pl, f.pn);
            text[ntext + f.pn] = '\0';
            out->strings[out->nstrings].ptr = text + ntext;
            out->strings[out->nstrings].len = (uint32_t)f.pn;
            out->nstrings++;
            ntext += f.pn + 1;
            break;
        case 11: /* period_type: the last one wins */
            if (f.wt != WT_LEN || wire_flat(f.pl, f.pn, 2, 0, v) != 0)
                return WIRE_BAD;
            pt_type = (int64_t)v[1];
            pt_unit = (int64_t)v[2];
            break;
        case 13: { /* comment */
            int r = wire_varints(&f, comments, &ncomments, (size_t)s->ncomments);
            if (r == -2)
                goto Disagree;
            if (r != 0)
                return WIRE_BAD;
            break;
        }
        case 7:
        case 8:
        case 9:
        case 10:
        case 12:
        case 14:
        case 15: {
            if (f.wt != WT_VARINT)
                return WIRE_BAD;
            int64_t x = (int64_t)f.u;
            switch (f.num) {
            case 7: drop = x; break;
            case 8: keep = x; break;
            case 9: out->time_nanos = x; break;
            case 10: out->duration_nanos = x; break;
            case 12: out->period = x; break;
            case 14: dst = x; break;
            default: doc = x; break;
            }
            break;
        }
        }
    }
    if (out->nstrings != s->nstrings || out->ntypes != s->ntypes || out->nmappings != s->nmappings ||
        out->nfunctions != s->nfunctions || ncomments != s->ncomments || nloc_spans != s->nlocations ||
        nsample_spans != s->nsamples)
        goto Disagree;
    WSTR(out->period_type.type, (uint64_t)pt_type, CK_PERIOD, 0, 0, "period_type.type");
    WSTR(out->period_type.unit, (uint64_t)pt_unit, CK_PERIOD, 0, 1, "period_type.unit");
    WSTR(out->default_sample_type, (uint64_t)dst, CK_SCALARS, 0, 0, "default_sample_type");
    WSTR(out->drop_frames, (uint64_t)drop, CK_SCALARS, 0, 1, "drop_frames");
    WSTR(out->keep_frames, (uint64_t)keep, CK_SCALARS, 0, 2, "keep_frames");
    WSTR(out->doc_url, (uint64_t)doc, CK_SCALARS, 0, 3, "doc_url");
    out->ncomments = (uint32_t)ncomments;
    out->comments = ps_arena_alloc(arena, ncomments * sizeof(uint32_t));
    for (uint32_t i = 0; i < out->ncomments; i++)
        WSTR(out->comments[i], comments[i], CK_COMMENTS, i, 0, "comment[%u]", i);
    wire_idmap(d, &mids, &mids_ok, map_ids, out->nmappings, "mapping", CK_MAP_IDS);
    wire_idmap(d, &fids, &fids_ok, fun_ids, out->nfunctions, "function", CK_FUN_IDS);

    /* walk 2: locations, with all their lines in one array */
    out->nlocations = 0;
    out->locations = ps_arena_alloc(arena, s->nlocations * sizeof(ps_location_t));
    uint64_t *loc_ids = ps_arena_alloc(arena, s->nlocations * sizeof(uint64_t));
    ps_line_t *lines = ps_arena_alloc(arena, s->nlines * sizeof(ps_line_t));
    size_t nlines = 0;
    for (size_t li = 0; li < nloc_spans; li++) {
        uint32_t i = out->nlocations++;
        ps_location_t *l = &out->locations[i];
        uint64_t id = 0, mapping_id = 0, address = 0;
        bool folded = false;
        l->lines = lines + nlines;
        l->nlines = 0;
        const uint8_t *q = loc_spans[li].p, *qend = q + loc_spans[li].n;
        while (q < qend) {
            wfield_t g;
            if (wire_field(&q, qend, &g) != 0)
                return WIRE_BAD;
            switch (g.num) {
            case 1:
            case 2:
            case 3:
                if (g.wt != WT_VARINT)
                    return WIRE_BAD;
                *(g.num == 1 ? &id : g.num == 2 ? &mapping_id : &address) = g.u;
                break;
            case 4: {
                if (g.wt != WT_LEN || wire_flat(g.pl, g.pn, 3, 0, v) != 0)
                    return WIRE_BAD;
                if (nlines >= s->nlines)
                    goto Disagree;
                uint32_t k = l->nlines++;
                ps_line_t *ln = &lines[nlines++];
                ln->function = 0;
                if (v[1] != 0 && fids_ok && (ln->function = idmap_get(&fids, v[1])) == 0)
                    check_failed(d, CK_LOC_REF, i, 1 + (uint64_t)k,
                                 "location[%u].line[%u]: function_id %llu is not defined", i, k,
                                 (unsigned long long)v[1]);
                ln->line = (int64_t)v[2];
                ln->column = (int64_t)v[3];
                break;
            }
            case 5:
                folded = wire_bool(g.v, g.vn);
                break;
            }
        }
        loc_ids[i] = id;
        l->mapping = 0;
        if (mapping_id != 0 && mids_ok && (l->mapping = idmap_get(&mids, mapping_id)) == 0)
            check_failed(d, CK_LOC_REF, i, 0, "location[%u]: mapping_id %llu is not defined", i,
                         (unsigned long long)mapping_id);
        l->address = address;
        l->is_folded = folded ? 1 : 0;
    }
    if (nlines != s->nlines)
        goto Disagree;
    wire_idmap(d, &lids, &lids_ok, loc_ids, out->nlocations, "location", CK_LOC_IDS);

    /* walk 3: samples; stacks, values and labels each in one array */
    out->nsamples = 0;
    out->samples = ps_arena_alloc(arena, s->nsamples * sizeof(ps_sample_t));
    uint32_t *locs = ps_arena_alloc(arena, s->nlocs * sizeof(uint32_t));
    uint64_t *raw_locs = ps_arena_alloc(arena, (s->nlocs < lim->max_stack_depth ? s->nlocs : lim->max_stack_depth) *
                                                   sizeof(uint64_t));
    int64_t *values = ps_arena_alloc(arena, s->nvalues * sizeof(int64_t));
    ps_label_t *labels = ps_arena_alloc(arena, s->nlabels * sizeof(ps_label_t));
    size_t nlocs = 0, nvalues = 0, nlabels = 0;
    for (size_t si = 0; si < nsample_spans; si++) {
        uint32_t i = out->nsamples++;
        ps_sample_t *sm = &out->samples[i];
        size_t nraw = 0, nval = 0;
        sm->locs = locs + nlocs;
        sm->values = values + nvalues;
        sm->labels = labels + nlabels;
        sm->nlabels = 0;
        const uint8_t *q = sample_spans[si].p, *qend = q + sample_spans[si].n;
        while (q < qend) {
            wfield_t g;
            int r;
            if (wire_field(&q, qend, &g) != 0)
                return WIRE_BAD;
            switch (g.num) {
            case 1:
                r = wire_varints(&g, raw_locs, &nraw, s->nlocs - nlocs < lim->max_stack_depth
                                                          ? (size_t)(s->nlocs - nlocs)
                                                          : lim->max_stack_depth);
                if (r == -2)
                    goto Disagree;
                if (r != 0)
                    return WIRE_BAD;
                break;
            case 2:
                r = wire_varints(&g, (uint64_t *)sm->values, &nval, (size_t)(s->nvalues - nvalues));
                if (r == -2)
                    goto Disagree;
                if (r != 0)
                    return WIRE_BAD;
                break;
            case 3: {
                if (g.wt != WT_LEN || wire_flat(g.pl, g.pn, 4, 0, v) != 0)
                    return WIRE_BAD;
                if (nlabels + sm->nlabels >= s->nlabels)
                    goto Disagree;
                uint32_t k = sm->nlabels++;
                ps_label_t *lb = &sm->labels[k];
                WSTR(lb->key, v[1], CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k, "sample[%u].label[%u].key", i, k);
                WSTR(lb->str, v[2], CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k + 1, "sample[%u].label[%u].str", i,
                     k);
                WSTR(lb->num_unit, v[4], CK_SAMPLE_REF, i, LABEL0 + 3 * (uint64_t)k + 2,
                     "sample[%u].label[%u].num_unit", i, k);
                lb->num = (int64_t)v[3];
                break;
            }
            }
        }
        sm->nlocs = (uint32_t)nraw;
        for (uint32_t k = 0; k < sm->nlocs; k++) {
            sm->locs[k] = lids_ok ? idmap_get(&lids, raw_locs[k]) : 0;
            if (sm->locs[k] == 0 && lids_ok)
                check_failed(d, CK_SAMPLE_REF, i, k, "sample[%u]: location_id %llu is not defined", i,
                             (unsigned long long)raw_locs[k]);
        }
        if (nval != out->ntypes)
            check_failed(d, CK_NVALUES, i, 0, "sample[%u] has %zu values but there are %u sample types", i, nval,
                         out->ntypes);
        nlocs += nraw;
        nvalues += nval;
        nlabels += sm->nlabels;
    }
    if (nlocs != s->nlocs || nvalues != s->nvalues || nlabels != s->nlabels)
        goto Disagree;
    if (d->bad)
        return ps_err_set(err, PS_EINVAL, "%s", d->bad_msg);
    return 0;
Disagree:
    return ps_err_set(err, PS_EINTERNAL, "pprof: the direct decoder and the wire scan disagree");
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

/* Steps 1 and 2: gunzip (or the size check), then the scan into *s. */
static int front(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, const uint8_t **buf,
                 size_t *len, scan_t *s, ps_err_t *err)
{
    int rc;
    *buf = data;
    *len = n;
    if (ps_is_gzip(data, n)) {
        if ((rc = ps_gunzip(data, n, lim->max_inflated, arena, buf, len, err)) != 0)
            return rc;
    } else if (n > lim->max_inflated) {
        return ps_err_set(err, PS_ETOOBIG, "profile is %zu bytes, more than %zu (max_inflated)", n, lim->max_inflated);
    }
    memset(s, 0, sizeof(*s));
    s->base = *buf;
    s->lim = lim;
    s->err = err;
    return scan_profile(s, *buf, *len);
}

int ps_pprof_decode(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *out,
                    ps_err_t *err)
{
    ps_pprof_limits_t deflim;
    const uint8_t *buf;
    size_t len;
    scan_t s;

    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        ps_pprof_limits_default(&deflim);
        lim = &deflim;
    }
    int rc = front(data, n, lim, arena, &buf, &len, &s, err);
    if (rc == 0 && (rc = wire_decode(&s, buf, len, lim, arena, out, err)) == WIRE_BAD)
        rc = wire_error(buf, len, lim, err);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int ps_pprof_scan(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, const uint8_t **buf,
                  size_t *len, ps_err_t *err)
{
    scan_t s;
    return front(data, n, lim, arena, buf, len, &s, err);
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
