/*
 * pbjson.c - the two codecs of a Connect body for any protobuf-c message (see pbjson.h), generic
 * over ProtobufCMessageDescriptor: field names, types, labels, packed repeated fields, oneofs and
 * proto3 `optional` (a quantifier: has_x for scalars, the pointer for strings and messages).
 *
 * Binary decoding runs in two steps: a scan of the wire format against the descriptor (wire types,
 * lengths, varints, packed runs, UTF-8 and NUL-free strings, nesting depth) that says where input
 * is wrong ("protobuf: series[0].labels[1]: field 2 (value) has wire type 0 (varint), expected 2
 * (length-delimited)"), then protobuf-c's unpack on the budgeted arena allocator (pballoc.h).
 * Strings must be NUL-free because protobuf-c hands them to C as NUL-terminated strings.
 *
 * JSON decoding: a pre-scan bounds nesting (PBJSON_MAX_DEPTH) and the memory jansson will take
 * (PBJSON_VALUE_COST per value, against the budget), then jansson parses (duplicate keys are an
 * error, as in protojson; a document with an integer past int64, such as the -1.8e19 that Go
 * writes as -18100867622327496704, is parsed again with every number as a double, so 64-bit
 * integers given as JSON numbers in it keep 53 bits: protojson writes those as strings), then
 * the tree is converted field by field into a message allocated from
 * the budgeted arena. JSON writing uses core/json.h, in field number order, as protojson does.
 *
 * Not supported (unused by the Pyroscope schemas): map fields (read and written as repeated entry
 * messages), groups, well-known types with a special JSON form (Timestamp, Duration, Any,
 * wrappers: read and written as the plain messages they are).
 */
#include "pbjson.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "core/encode.h"
#include "core/fmt.h"
#include "core/json.h"
#include "core/varint.h"
#include "pballoc.h"

#define PBJSON_MAX_DEPTH 32   /* message nesting, in both codecs; JSON arrays and objects alike */
#define PBJSON_VALUE_COST 96  /* bytes jansson takes per JSON value, at most (counted against budget) */

/* ---- field helpers ---------------------------------------------------------------------------- */

static void *field_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (char *)m + f->offset;
}

static size_t *count_ptr(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    return (size_t *)((char *)m + f->quantifier_offset);
}

static size_t elem_size(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
    case PROTOBUF_C_TYPE_ENUM:
        return 4;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
        return 8;
    case PROTOBUF_C_TYPE_BOOL:
        return sizeof(protobuf_c_boolean);
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_MESSAGE:
        return sizeof(void *);
    case PROTOBUF_C_TYPE_BYTES:
        return sizeof(ProtobufCBinaryData);
    }
    return 8;
}

/* The JSON name of a proto field name, as protoc derives it: '_' dropped, the letter after it
 * upper-cased (sample_type -> sampleType, profile_typeID -> profileTypeID, ID -> ID). */
static void json_name(const char *name, char *out, size_t size)
{
    size_t o = 0;
    bool up = false;
    for (const char *p = name; *p != '\0' && o + 1 < size; p++) {
        if (*p == '_') {
            up = true;
            continue;
        }
        out[o++] = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        up = false;
    }
    out[o] = '\0';
}

/* ---- paths in error messages ("series[0].labels[2].name") --------------------------------------- */

typedef struct path {
    char buf[256];
    size_t len;
} path_t;

static size_t path_push(path_t *p, const char *name, long idx)
{
    size_t old = p->len;
    int n;
    if (idx >= 0)
        n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "%s%s[%ld]", p->len ? "." : "", name, idx);
    else
        n = snprintf(p->buf + p->len, sizeof(p->buf) - p->len, "%s%s", p->len ? "." : "", name);
    if (n > 0)
        p->len = p->len + (size_t)n < sizeof(p->buf) ? p->len + (size_t)n : sizeof(p->buf) - 1;
    return old;
}

static void path_pop(path_t *p, size_t old)
{
    p->len = old;
    p->buf[old] = '\0';
}

/* ---- binary: the wire scan -------------------------------------------------------------------- */

typedef struct scan {
    const uint8_t *base;
    path_t path;
    ps_err_t *err;
} scan_t;

static const char *wt_name(unsigned wt)
{
    static const char *const n[] = {"varint", "fixed64", "length-delimited", "start group", "end group", "fixed32"};
    return wt < 6 ? n[wt] : "invalid";
}

static int scan_err(scan_t *s, const uint8_t *at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int scan_err(scan_t *s, const uint8_t *at, const char *fmt, ...)
{
    char what[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    size_t off = (size_t)(at - s->base);
    return ps_err_set_at(s->err, PS_EINVAL, off, "protobuf: %s%s%s (at byte %zu)", s->path.buf, s->path.len ? ": " : "",
                         what, off);
}

#define FAIL(s, at, msg) scan_err((s), (at), "%s", (msg))

/* core's bounds-checked uvarint (10 bytes at most, no bits past 64): 0, or -1 truncated/overlong */
static int read_varint(const uint8_t **p, const uint8_t *end, uint64_t *v)
{
    ps_dec_t d;
    ps_dec_init(&d, *p, (size_t)(end - *p));
    *v = ps_dec_uvarint(&d);
    *p = d.p;
    return d.err ? -1 : 0;
}

static unsigned wire_type_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_SFIXED64: case PROTOBUF_C_TYPE_FIXED64: case PROTOBUF_C_TYPE_DOUBLE:
        return 1;
    case PROTOBUF_C_TYPE_SFIXED32: case PROTOBUF_C_TYPE_FIXED32: case PROTOBUF_C_TYPE_FLOAT:
        return 5;
    case PROTOBUF_C_TYPE_STRING: case PROTOBUF_C_TYPE_BYTES: case PROTOBUF_C_TYPE_MESSAGE:
        return 2;
    default:
        return 0;
    }
}

/* Length of a valid UTF-8 prefix check: returns the offset of the first bad byte, or n. */
static size_t utf8_bad(const uint8_t *s, size_t n)
{
    size_t i = 0;
    while (i < n) {
        uint8_t c = s[i];
        if (c < 0x80) {
            if (c == 0)
                return i;
            i++;
            continue;
        }
        size_t k;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) { k = 1; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { k = 2; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { k = 3; cp = c & 0x07; }
        else return i;
        if (i + k >= n)
            return i;
        for (size_t j = 1; j <= k; j++) {
            if ((s[i + j] & 0xc0) != 0x80)
                return i;
            cp = cp << 6 | (s[i + j] & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000) || cp > 0x10ffff ||
            (cp >= 0xd800 && cp <= 0xdfff))
            return i;
        i += k + 1;
    }
    return n;
}

static int scan_msg(scan_t *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth);

/* A packed run of scalars of type t in [p, end). */
static int scan_packed(scan_t *s, ProtobufCType t, const uint8_t *p, const uint8_t *end)
{
    unsigned wt = wire_type_of(t);
    if (wt == 1 || wt == 5) {
        size_t w = wt == 1 ? 8 : 4;
        if ((size_t)(end - p) % w != 0)
            return FAIL(s, p, "packed fixed-width values: length is not a multiple of the value size");
        return 0;
    }
    while (p < end) {
        uint64_t v;
        const uint8_t *at = p;
        if (read_varint(&p, end, &v) != 0)
            return FAIL(s, at, "packed varints: truncated or overlong varint");
    }
    return 0;
}

static int scan_field(scan_t *s, const ProtobufCFieldDescriptor *f, unsigned wt, const uint8_t *at, const uint8_t *p,
                      const uint8_t *end, int depth)
{
    unsigned want = wire_type_of(f->type);
    size_t len = (size_t)(end - p);
    if (wt != want) {
        if (wt == 2 && f->label == PROTOBUF_C_LABEL_REPEATED && want != 2)
            return scan_packed(s, f->type, p, end);
        return scan_err(s, at, "field %u has wire type %u (%s), expected %u (%s)", f->id, wt, wt_name(wt), want,
                        wt_name(want));
    }
    if (f->type == PROTOBUF_C_TYPE_STRING) {
        size_t bad = utf8_bad(p, len);
        if (bad < len) {
            return scan_err(s, p + bad, "%s", p[bad] == 0 ? "string contains a NUL byte" : "string is not valid UTF-8");
        }
    } else if (f->type == PROTOBUF_C_TYPE_MESSAGE) {
        return scan_msg(s, f->descriptor, p, end, depth + 1);
    }
    return 0;
}

static int scan_msg(scan_t *s, const ProtobufCMessageDescriptor *d, const uint8_t *p, const uint8_t *end, int depth)
{
    if (depth > PBJSON_MAX_DEPTH)
        return FAIL(s, p, "messages nested deeper than 32");
    uint32_t counts[64] = {0}; /* occurrences of the first 64 fields (for the index in paths) */
    while (p < end) {
        const uint8_t *at = p;
        uint64_t tag;
        if (read_varint(&p, end, &tag) != 0)
            return FAIL(s, at, "truncated or overlong field tag");
        unsigned wt = (unsigned)(tag & 7);
        uint64_t num = tag >> 3;
        if (num == 0 || num > 536870911u)
            return FAIL(s, at, "field number 0 or out of range");
        const uint8_t *vstart = p, *vend;
        uint64_t v;
        switch (wt) {
        case 0:
            if (read_varint(&p, end, &v) != 0)
                return FAIL(s, at, "truncated or overlong varint");
            vend = p;
            break;
        case 1: case 5: {
            size_t w = wt == 1 ? 8 : 4;
            if ((size_t)(end - p) < w)
                return FAIL(s, at, "truncated fixed-width value");
            p += w;
            vend = p;
            break;
        }
        case 2:
            if (read_varint(&p, end, &v) != 0)
                return FAIL(s, at, "truncated length");
            if (v > (uint64_t)(end - p))
                return FAIL(s, at, "length runs past the end of the message");
            vstart = p;
            p += v;
            vend = p;
            break;
        default:
            return FAIL(s, at, wt == 3 || wt == 4 ? "groups are not supported" : "invalid wire type");
        }
        const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field(d, (unsigned)num);
        if (f == NULL)
            continue; /* unknown field: skipped, as protobuf-c keeps or drops it */
        unsigned fi = (unsigned)(f - d->fields);
        long idx = -1;
        if (f->label == PROTOBUF_C_LABEL_REPEATED && fi < 64)
            idx = counts[fi]++;
        size_t old = path_push(&s->path, f->name, idx);
        int rc = scan_field(s, f, wt, at, vstart, vend, depth);
        path_pop(&s->path, old);
        if (rc != 0)
            return rc;
    }
    return 0;
}

static int decode_binary(const void *data, size_t n, const ProtobufCMessageDescriptor *d, ps_arena_t *arena,
                         size_t budget, ProtobufCMessage **out, ps_err_t *err)
{
    scan_t s = {.base = data, .err = err};
    s.path.buf[0] = '\0';
    if (scan_msg(&s, d, data, (const uint8_t *)data + n, 1) != 0)
        return err != NULL ? err->code : PS_EINVAL;
    ps_pb_arena_t pa;
    ps_pb_arena_init(&pa, arena, budget > SIZE_MAX / 2 ? SIZE_MAX / 2 : budget);
    ProtobufCMessage *m = protobuf_c_message_unpack(d, &pa.base, n, data);
    if (m == NULL) {
        if (pa.over)
            return ps_err_set(err, PS_ETOOBIG, "protobuf: decoding %s needs more than %zu bytes of memory", d->name,
                              budget);
        return ps_err_set(err, PS_EINVAL, "protobuf: cannot decode %s", d->name);
    }
    *out = m;
    return 0;
}

/* ---- JSON: reading ---------------------------------------------------------------------------- */

typedef struct jdec {
    ps_pb_arena_t pa;
    path_t path;
    ps_err_t *err;
    size_t budget;
    ps_pb_i64_str_fn str_i64; /* or NULL */
    bool otlp_hex;            /* OTLP JSON: trace_id, span_id, profile_id are hex, not base64 */
} jdec_t;

static void *jalloc(jdec_t *j, size_t n)
{
    return j->pa.base.alloc(&j->pa, n);
}

static int jfail(jdec_t *j, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int jfail(jdec_t *j, const char *fmt, ...)
{
    char what[300];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    return ps_err_set(j->err, PS_EINVAL, "json: %s%s%s", j->path.buf, j->path.len ? ": " : "", what);
}

static int joom(jdec_t *j)
{
    return ps_err_set(j->err, PS_ETOOBIG, "json: decoding needs more than %zu bytes of memory", j->budget);
}

static const char *jtype(const json_t *v)
{
    switch (json_typeof(v)) {
    case JSON_OBJECT: return "object";
    case JSON_ARRAY: return "array";
    case JSON_STRING: return "string";
    case JSON_INTEGER: case JSON_REAL: return "number";
    case JSON_TRUE: case JSON_FALSE: return "boolean";
    case JSON_NULL: return "null";
    }
    return "?";
}

/* Pre-scan: nesting depth, and a count of values against the budget (core/json.h); also sets
 * *neg_zero when a number token is a negative zero written as an integer ("-0", as Go's protojson
 * writes -0.0): jansson would read it as the integer 0 and lose the sign. */
static int json_prescan(const char *s, size_t n, size_t budget, bool *neg_zero, ps_err_t *err)
{
    size_t values;
    int ret = ps_json_prescan(s, n, "json", PBJSON_MAX_DEPTH, &values, neg_zero, err);
    if (ret == 0 && values > (budget > n ? budget - n : 0) / PBJSON_VALUE_COST)
        ret = ps_err_set(err, PS_ETOOBIG, "json: %zu values need more than the %zu bytes of memory allowed", values,
                         budget);
    return ret;
}

/* ---- numbers in JSON strings, as protojson reads them ----------------------------------------------
 * protojson (Go's google.golang.org/protobuf/encoding/protojson, which connect-go's JSON codec
 * runs) reads the string of a numeric field so: no white space around it (strings.TrimSpace), then
 * the first JSON token of the string, which must be a number (internal/encoding/json parseNumber:
 * the token must end at the string's end or at a character other than [-+._a-zA-Z0-9]; what
 * follows is not read: "12 34" is 12), then for integers the token's value if it is a whole number
 * (normalizeToIntString: "1e3" and "1.50e2" are, "1.5" is not), within the field's bits. */

/* Go's unicode.IsSpace at the start (at_end: the end) of s[0..n), valid UTF-8. */
static bool go_space_edge(const char *s, size_t n, bool at_end)
{
    static const uint32_t wide[] = {0x85, 0xa0, 0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004, 0x2005, 0x2006,
                                    0x2007, 0x2008, 0x2009, 0x200a, 0x2028, 0x2029, 0x202f, 0x205f, 0x3000};
    if (n == 0)
        return false;
    unsigned char c = (unsigned char)(at_end ? s[n - 1] : s[0]);
    if (c == ' ' || (c >= '\t' && c <= '\r'))
        return true;
    if (c < 0x80)
        return false;
    size_t i = 0; /* the edge character's first byte */
    if (at_end)
        for (i = n - 1; i > 0 && ((unsigned char)s[i] & 0xc0) == 0x80 && n - i < 4;)
            i--;
    unsigned char b = (unsigned char)s[i];
    size_t k = (b & 0xe0) == 0xc0 ? 1 : (b & 0xf0) == 0xe0 ? 2 : 0; /* the wide spaces take 2 or 3 bytes */
    if (k == 0 || i + k > n - 1 || (at_end && i + k != n - 1))
        return false;
    uint32_t cp = b & (k == 1 ? 0x1fu : 0x0fu);
    for (size_t m = 1; m <= k; m++)
        cp = cp << 6 | ((unsigned char)s[i + m] & 0x3fu);
    for (size_t m = 0; m < sizeof(wide) / sizeof(wide[0]); m++)
        if (cp == wide[m])
            return true;
    return false;
}

static bool is_digit(char c)
{
    return c >= '0' && c <= '9';
}

/* The parts of the JSON number token at the start of s[0..n) (Go's parseNumber and
 * parseNumberParts): false when there is none or it runs into a character that cannot end one. */
typedef struct gonum {
    size_t len;           /* the token's length */
    bool neg;
    const char *intp;     /* integer digits without a leading zero ("0" gives none) */
    size_t nintp;
    const char *frac;     /* fraction digits, trailing zeros dropped */
    size_t nfrac;
    const char *exp;      /* exponent with its sign, as written (may be empty) */
    size_t nexp;
} gonum_t;

static bool go_number(const char *s, size_t n, gonum_t *g)
{
    size_t p = 0;
    memset(g, 0, sizeof(*g));
    if (p < n && s[p] == '-') {
        g->neg = true;
        if (++p == n)
            return false;
    }
    if (p < n && s[p] == '0') {
        p++;
    } else if (p < n && s[p] >= '1' && s[p] <= '9') {
        g->intp = s + p;
        while (p < n && is_digit(s[p]))
            p++;
        g->nintp = (size_t)(s + p - g->intp);
    } else {
        return false;
    }
    if (n - p >= 2 && s[p] == '.' && is_digit(s[p + 1])) {
        g->frac = s + p + 1;
        p += 2;
        while (p < n && is_digit(s[p]))
            p++;
        g->nfrac = (size_t)(s + p - g->frac);
        while (g->nfrac > 0 && g->frac[g->nfrac - 1] == '0')
            g->nfrac--;
    }
    if (n - p >= 2 && (s[p] == 'e' || s[p] == 'E')) {
        g->exp = s + ++p;
        if (s[p] == '+' || s[p] == '-') {
            if (++p == n)
                return false;
        }
        while (p < n && is_digit(s[p]))
            p++;
        g->nexp = (size_t)(s + p - g->exp);
    }
    if (p < n) {
        char c = s[p];
        if (c == '-' || c == '+' || c == '.' || c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
            is_digit(c))
            return false;
    }
    g->len = p;
    return true;
}

/* The whole number a token stands for (normalizeToIntString, then strconv.ParseInt/ParseUint with
 * bits): false when it is not one or is out of range. */
static bool go_number_int(const gonum_t *g, bool is_signed, int bits, int64_t *si, uint64_t *ui)
{
    *si = 0;
    *ui = 0;
    if (g->nintp == 0 && g->nfrac == 0)
        return true; /* "0", "-0", "0.000", "0e7" */
    long exp = 0;
    if (g->nexp > 0) { /* strconv.ParseInt(exp, 10, 32) */
        size_t i = 0;
        bool eneg = false;
        if (g->exp[0] == '+' || g->exp[0] == '-')
            eneg = g->exp[i++] == '-';
        if (i == g->nexp)
            return false;
        for (; i < g->nexp; i++) {
            exp = exp * 10 + (g->exp[i] - '0');
            if (exp > 2147483648L)
                return false;
        }
        if (eneg)
            exp = -exp;
        if (exp > 2147483647L)
            return false;
    }
    char num[24];
    size_t nn = 0;
    if (exp >= 0) {
        if ((long)g->nfrac > exp || (long)g->nintp + exp > 20)
            return false;
        if (g->nintp > 0)
            memcpy(num, g->intp, g->nintp);
        if (g->nfrac > 0)
            memcpy(num + g->nintp, g->frac, g->nfrac);
        nn = g->nintp + g->nfrac;
        for (long k = 0; k < exp - (long)g->nfrac; k++)
            num[nn++] = '0';
    } else {
        if (g->nfrac > 0 || (long)g->nintp + exp < 0)
            return false;
        size_t index = (size_t)((long)g->nintp + exp);
        for (size_t k = index; k < g->nintp; k++)
            if (g->intp[k] != '0')
                return false;
        if (index > 0)
            memcpy(num, g->intp, index);
        nn = index;
    }
    if (nn == 0 || (g->neg && !is_signed))
        return false;
    uint64_t v = 0;
    for (size_t k = 0; k < nn; k++) {
        if (v > (UINT64_MAX - (uint64_t)(num[k] - '0')) / 10)
            return false;
        v = v * 10 + (uint64_t)(num[k] - '0');
    }
    if (!is_signed) {
        if (bits < 64 && v > (UINT64_C(1) << bits) - 1)
            return false;
        *ui = v;
        return true;
    }
    uint64_t lim = UINT64_C(1) << (bits - 1); /* |min| */
    if (v > (g->neg ? lim : lim - 1))
        return false;
    *si = g->neg ? (int64_t)(0 - v) : (int64_t)v;
    return true;
}

/* The number token that is the whole of the JSON string v (protojson's reading), or false. */
static bool go_string_number(const json_t *v, gonum_t *g)
{
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    return n > 0 && !go_space_edge(s, n, false) && !go_space_edge(s, n, true) && go_number(s, n, g);
}

static int json_int(jdec_t *j, const json_t *v, bool is_signed, int bits, int64_t *si, uint64_t *ui)
{
    if (json_is_integer(v)) {
        json_int_t x = json_integer_value(v);
        bool ok = is_signed ? (bits == 64 || (x >= -(INT64_C(1) << (bits - 1)) && x < (INT64_C(1) << (bits - 1))))
                            : (x >= 0 && (bits == 64 || (uint64_t)x <= (UINT64_C(1) << bits) - 1));
        if (!ok)
            return jfail(j, "%lld is out of range", (long long)x);
        *si = x;
        *ui = (uint64_t)x;
        return 0;
    }
    if (json_is_real(v)) { /* jansson read it as a double ("1.0", "1e3", or past 64 bits) */
        double dv = json_real_value(v);
        double lo = is_signed ? -ldexp(1, bits - 1) : 0, hi = is_signed ? ldexp(1, bits - 1) : ldexp(1, bits);
        if (dv != floor(dv) || !(dv >= lo && dv < hi))
            return jfail(j, "%.17g is not an integer in range", dv);
        if (fabs(dv) >= 9007199254740992.0) /* from 2^53 on, the double may not be the number written */
            return jfail(j, "%.17g: an integer from 2^53 on must be written without a fraction or exponent "
                            "(or as a string)", dv);
        if (is_signed)
            *si = (int64_t)dv;
        else
            *ui = (uint64_t)dv;
        return 0;
    }
    if (!json_is_string(v))
        return jfail(j, "expected an integer, got %s", jtype(v));
    gonum_t g;
    if (!go_string_number(v, &g))
        return jfail(j, "\"%.40s\" is not a number", json_string_value(v));
    if (!go_number_int(&g, is_signed, bits, si, ui))
        return jfail(j, "\"%.40s\" is not an integer in range", json_string_value(v));
    return 0;
}

static int json_f64(jdec_t *j, const json_t *v, double *out)
{
    if (json_is_number(v)) {
        *out = json_number_value(v);
        return 0;
    }
    if (!json_is_string(v))
        return jfail(j, "expected a number, got %s", jtype(v));
    const char *s = json_string_value(v);
    if (strcmp(s, "NaN") == 0) { *out = NAN; return 0; }
    if (strcmp(s, "Infinity") == 0) { *out = INFINITY; return 0; }
    if (strcmp(s, "-Infinity") == 0) { *out = -INFINITY; return 0; }
    gonum_t g;
    char tok[400];
    if (!go_string_number(v, &g) || g.len >= sizeof(tok))
        return jfail(j, "\"%.40s\" is not a number", s);
    memcpy(tok, s, g.len); /* strconv.ParseFloat of the token: out of range is an error */
    tok[g.len] = '\0';
    errno = 0;
    double d = strtod(tok, NULL);
    if (errno == ERANGE && isinf(d))
        return jfail(j, "\"%.40s\" is out of range", s);
    *out = d;
    return 0;
}

/* bytes: protojson's unmarshalBytes: the URL alphabet when the string has '-' or '_', else the
 * standard one; '=' padding when the length is a multiple of 4, none otherwise; Go's decoder
 * skips '\r' and '\n' anywhere and ignores the bits left over in the last character. */
static int json_bytes(jdec_t *j, const json_t *v, ProtobufCBinaryData *out)
{
    if (!json_is_string(v))
        return jfail(j, "expected a base64 string, got %s", jtype(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v);
    bool url = strpbrk(s, "-_") != NULL, padded = n % 4 == 0;
    char *t = jalloc(j, n + 1);
    uint8_t *o = jalloc(j, PS_BASE64_DECODED_MAX(n) + 1);
    if (t == NULL || o == NULL)
        return joom(j);
    size_t m = 0, pad = 0;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '\r' || c == '\n')
            continue;
        bool ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || is_digit(c) ||
                  (url ? c == '-' || c == '_' : c == '+' || c == '/');
        if (c == '=' && padded) {
            pad++;
        } else if (!ok || pad > 0) {
            return jfail(j, "invalid base64 character at offset %zu", i);
        }
        t[m++] = c;
    }
    if ((padded && (m % 4 != 0 || pad > 2)) || (!padded && m % 4 == 1))
        return jfail(j, "invalid base64 (length)");
    size_t bad;
    long k = ps_base64_decode(t, m, PS_B64_LENIENT, o, &bad);
    if (k < 0)
        return jfail(j, "invalid base64 at offset %zu", bad);
    out->data = o;
    out->len = (size_t)k;
    return 0;
}

/* OTLP JSON writes these ids as hex (docs/protocols.md, "OTLP profiles") */
static bool otlp_hex_field(const char *name)
{
    return strcmp(name, "trace_id") == 0 || strcmp(name, "span_id") == 0 || strcmp(name, "profile_id") == 0;
}

static int json_hex(jdec_t *j, const json_t *v, ProtobufCBinaryData *out)
{
    if (!json_is_string(v))
        return jfail(j, "expected a hex string, got %s", jtype(v));
    const char *s = json_string_value(v);
    size_t n = json_string_length(v), bad;
    uint8_t *o = jalloc(j, n / 2 + 1);
    if (o == NULL)
        return joom(j);
    if (ps_hex_decode(s, n, o, &bad) != 0)
        return bad == n ? jfail(j, "invalid hex (odd length %zu)", n)
                        : jfail(j, "invalid hex character at offset %zu", bad);
    out->data = o;
    out->len = n / 2;
    return 0;
}

/* An enum by value name or number. A name that is not one of the enum's is left out (1: the field
 * stays unset, a repeated field has no element for it), as protojson does with DiscardUnknown. */
static int json_enum(jdec_t *j, const ProtobufCEnumDescriptor *ed, const json_t *v, int32_t *out)
{
    if (json_is_string(v)) {
        for (unsigned i = 0; i < ed->n_values; i++) /* get_value_by_name looks up the C-ish short name */
            if (strcmp(ed->values[i].name, json_string_value(v)) == 0) {
                *out = ed->values[i].value;
                return 0;
            }
        return 1;
    }
    if (json_is_number(v)) {
        int64_t x;
        uint64_t u;
        if (json_int(j, v, true, 32, &x, &u) != 0)
            return j->err != NULL ? j->err->code : PS_EINVAL;
        *out = (int32_t)x;
        return 0;
    }
    return jfail(j, "expected an enum name or number, got %s", jtype(v));
}

static int json_msg(jdec_t *j, const ProtobufCMessageDescriptor *d, const json_t *obj, int depth,
                    ProtobufCMessage **out);

/* One value of field f (one element when repeated) into slot. */
static int json_value(jdec_t *j, const ProtobufCFieldDescriptor *f, const json_t *v, void *slot, int depth)
{
    int64_t i;
    uint64_t u;
    double dv;
    int rc = 0;
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        if ((rc = json_int(j, v, true, 32, &i, &u)) == 0)
            *(int32_t *)slot = (int32_t)i;
        break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64: {
        gonum_t g;
        if (j->str_i64 != NULL && json_is_string(v) && !go_string_number(v, &g)) {
            /* not a number protojson reads: the caller's reader may know it */
            ps_err_t e;
            ps_err_clear(&e);
            rc = j->str_i64(f->name, json_string_value(v), json_string_length(v), &i, &e);
            if (rc == 0) {
                *(int64_t *)slot = i;
                break;
            }
            if (rc < 0)
                return jfail(j, "%s", e.msg);
        }
        if ((rc = json_int(j, v, true, 64, &i, &u)) == 0)
            *(int64_t *)slot = i;
        break;
    }
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        if ((rc = json_int(j, v, false, 32, &i, &u)) == 0)
            *(uint32_t *)slot = (uint32_t)u;
        break;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        if ((rc = json_int(j, v, false, 64, &i, &u)) == 0)
            *(uint64_t *)slot = u;
        break;
    case PROTOBUF_C_TYPE_FLOAT:
        if ((rc = json_f64(j, v, &dv)) == 0) {
            if (isfinite(dv) && fabs(dv) > 3.4028234663852886e38)
                return jfail(j, "%.17g is out of range for a float", dv);
            *(float *)slot = (float)dv;
        }
        break;
    case PROTOBUF_C_TYPE_DOUBLE:
        if ((rc = json_f64(j, v, &dv)) == 0)
            *(double *)slot = dv;
        break;
    case PROTOBUF_C_TYPE_BOOL:
        if (!json_is_boolean(v))
            return jfail(j, "expected true or false, got %s", jtype(v));
        *(protobuf_c_boolean *)slot = json_is_true(v);
        break;
    case PROTOBUF_C_TYPE_ENUM: {
        int32_t e = 0;
        if ((rc = json_enum(j, f->descriptor, v, &e)) == 0)
            *(int32_t *)slot = e;
        break;
    }
    case PROTOBUF_C_TYPE_STRING: {
        if (!json_is_string(v))
            return jfail(j, "expected a string, got %s", jtype(v));
        size_t n = json_string_length(v);
        char *s = jalloc(j, n + 1);
        if (s == NULL)
            return joom(j);
        memcpy(s, json_string_value(v), n + 1);
        *(char **)slot = s;
        break;
    }
    case PROTOBUF_C_TYPE_BYTES:
        rc = j->otlp_hex && otlp_hex_field(f->name) ? json_hex(j, v, slot) : json_bytes(j, v, slot);
        break;
    case PROTOBUF_C_TYPE_MESSAGE:
        rc = json_msg(j, f->descriptor, v, depth + 1, (ProtobufCMessage **)slot);
        break;
    }
    return rc;
}

static int json_field(jdec_t *j, ProtobufCMessage *m, const ProtobufCFieldDescriptor *f, const json_t *v, int depth)
{
    if (f->label == PROTOBUF_C_LABEL_REPEATED) {
        if (!json_is_array(v))
            return jfail(j, "expected an array, got %s", jtype(v));
        size_t n = json_array_size(v), es = elem_size(f->type), w = 0;
        void *arr = NULL;
        if (n > 0 && (arr = jalloc(j, n * es)) == NULL)
            return joom(j);
        if (arr != NULL)
            memset(arr, 0, n * es);
        for (size_t k = 0; k < n; k++) {
            size_t old = j->path.len;
            snprintf(j->path.buf + j->path.len, sizeof(j->path.buf) - j->path.len, "[%zu]", k);
            j->path.len += strlen(j->path.buf + j->path.len);
            const json_t *e = json_array_get(v, k);
            int rc = json_is_null(e) ? jfail(j, "null is not allowed in a repeated field")
                                     : json_value(j, f, e, (char *)arr + w * es, depth);
            path_pop(&j->path, old);
            if (rc < 0 || rc > 1)
                return rc;
            w += rc == 0; /* 1: an enum name the enum does not have, left out */
        }
        *count_ptr(m, f) = w;
        *(void **)field_ptr(m, f) = arr;
        return 0;
    }
    int rc = json_value(j, f, v, field_ptr(m, f), depth);
    if (rc == 1)
        return 0; /* an enum name the enum does not have: the field stays unset */
    if (rc != 0)
        return rc;
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        *(uint32_t *)((char *)m + f->quantifier_offset) = f->id;
    else if (f->label == PROTOBUF_C_LABEL_OPTIONAL && f->type != PROTOBUF_C_TYPE_STRING &&
             f->type != PROTOBUF_C_TYPE_MESSAGE)
        *(protobuf_c_boolean *)((char *)m + f->quantifier_offset) = 1;
    return 0;
}

static const ProtobufCFieldDescriptor *find_field(const ProtobufCMessageDescriptor *d, const char *key)
{
    const ProtobufCFieldDescriptor *f = protobuf_c_message_descriptor_get_field_by_name(d, key);
    if (f != NULL)
        return f;
    char jn[128];
    for (unsigned i = 0; i < d->n_fields; i++) {
        json_name(d->fields[i].name, jn, sizeof(jn));
        if (strcmp(jn, key) == 0)
            return &d->fields[i];
    }
    return NULL;
}

static int json_msg(jdec_t *j, const ProtobufCMessageDescriptor *d, const json_t *obj, int depth,
                    ProtobufCMessage **out)
{
    if (!json_is_object(obj))
        return jfail(j, "expected an object (%s), got %s", d->name, jtype(obj));
    if (depth > PBJSON_MAX_DEPTH)
        return jfail(j, "messages nested deeper than %d", PBJSON_MAX_DEPTH);
    ProtobufCMessage *m = jalloc(j, d->sizeof_message);
    if (m == NULL)
        return joom(j);
    d->message_init(m);
    const char *key;
    json_t *v;
    const ProtobufCFieldDescriptor *seen_oneof[8] = {0};
    const char **seen = jalloc(j, (d->n_fields + 1) * sizeof(char *)); /* the key each field came by */
    if (seen == NULL)
        return joom(j);
    memset(seen, 0, (d->n_fields + 1) * sizeof(char *));
    json_object_foreach((json_t *)obj, key, v) {
        const ProtobufCFieldDescriptor *f = find_field(d, key);
        if (f == NULL)
            continue; /* unknown fields are ignored (connect-go: DiscardUnknown) */
        size_t fi = (size_t)(f - d->fields);
        if (seen[fi] != NULL) { /* its JSON name and its proto name: protojson's "duplicate field" */
            size_t old = path_push(&j->path, f->name, -1);
            int rc = jfail(j, "duplicate field (given as \"%.60s\" and as \"%.60s\")", seen[fi], key);
            path_pop(&j->path, old);
            return rc;
        }
        seen[fi] = key;
        if (json_is_null(v))
            continue; /* null is the default */
        if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF) {
            for (int k = 0; k < 8; k++) {
                if (seen_oneof[k] == NULL) {
                    seen_oneof[k] = f;
                    break;
                }
                if (seen_oneof[k]->quantifier_offset == f->quantifier_offset)
                    return jfail(j, "fields %s and %s are of the same oneof", seen_oneof[k]->name, f->name);
            }
        }
        size_t old = path_push(&j->path, f->name, -1);
        int rc = json_field(j, m, f, v, depth);
        path_pop(&j->path, old);
        if (rc != 0)
            return rc;
    }
    *out = m;
    return 0;
}

/* ---- JSON: duplicate keys ----------------------------------------------------------------------
 * protojson refuses a field given twice ("duplicate field"), but skips the value of an unknown field
 * unread, duplicate keys inside it and all. jansson's JSON_REJECT_DUPLICATES refuses every duplicate
 * key; when it does, the document is parsed again keeping the last value of each key, and this walk
 * over its text, led by the descriptors, looks for a key given twice (by one name or by both) in
 * the objects of known fields only. The text is valid JSON when it runs (jansson read it). */

typedef struct dwalk {
    const char *s;
    size_t n, p;
} dwalk_t;

static void dw_ws(dwalk_t *w)
{
    while (w->p < w->n && (w->s[w->p] == ' ' || w->s[w->p] == '\t' || w->s[w->p] == '\n' || w->s[w->p] == '\r'))
        w->p++;
}

/* a string at p (its opening quote): the raw text between the quotes */
static void dw_string(dwalk_t *w, size_t *start, size_t *len)
{
    size_t q = ++w->p;
    while (w->p < w->n && w->s[w->p] != '"')
        w->p += w->s[w->p] == '\\' ? 2 : 1;
    *start = q;
    *len = w->p - q;
    w->p++;
}

static void dw_skip(dwalk_t *w)
{
    dw_ws(w);
    if (w->p >= w->n)
        return;
    char c = w->s[w->p];
    if (c == '"') {
        size_t a, l;
        dw_string(w, &a, &l);
        return;
    }
    if (c != '{' && c != '[') {
        while (w->p < w->n && strchr(",]} \t\r\n", w->s[w->p]) == NULL)
            w->p++;
        return;
    }
    size_t depth = 0;
    while (w->p < w->n) {
        c = w->s[w->p];
        if (c == '"') {
            size_t a, l;
            dw_string(w, &a, &l);
            continue;
        }
        w->p++;
        if (c == '{' || c == '[')
            depth++;
        else if ((c == '}' || c == ']') && --depth == 0)
            return;
    }
}

/* A key of the text (escapes decoded by jansson) as a C string from the arena, or NULL. */
static char *dw_key(jdec_t *j, const dwalk_t *w, size_t a, size_t l)
{
    if (memchr(w->s + a, '\\', l) == NULL) {
        char *k = jalloc(j, l + 1);
        if (k != NULL) {
            memcpy(k, w->s + a, l);
            k[l] = '\0';
        }
        return k;
    }
    json_t *v = json_loadb(w->s + a - 1, l + 2, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);
    char *k = v != NULL && json_is_string(v) ? jalloc(j, json_string_length(v) + 1) : NULL;
    if (k != NULL)
        memcpy(k, json_string_value(v), json_string_length(v) + 1);
    json_decref(v);
    return k;
}

static int dw_value(jdec_t *j, dwalk_t *w, const ProtobufCFieldDescriptor *f);

/* the object at p (its '{') as a message of d: 0, or the error of a field given twice */
static int dw_object(jdec_t *j, dwalk_t *w, const ProtobufCMessageDescriptor *d)
{
    const char **seen = jalloc(j, (d->n_fields + 1) * sizeof(char *));
    if (seen == NULL)
        return joom(j);
    memset(seen, 0, (d->n_fields + 1) * sizeof(char *));
    w->p++; /* '{' */
    for (;;) {
        dw_ws(w);
        if (w->p >= w->n || w->s[w->p] == '}') {
            w->p++;
            return 0;
        }
        if (w->s[w->p] == ',') {
            w->p++;
            continue;
        }
        size_t a, l;
        dw_string(w, &a, &l);
        dw_ws(w);
        w->p++; /* ':' */
        char *key = dw_key(j, w, a, l);
        if (key == NULL)
            return joom(j);
        const ProtobufCFieldDescriptor *f = find_field(d, key);
        if (f == NULL) {
            dw_skip(w);
            continue;
        }
        size_t fi = (size_t)(f - d->fields), old = path_push(&j->path, f->name, -1);
        int rc = 0;
        if (seen[fi] != NULL)
            rc = jfail(j, "duplicate field (given as \"%.60s\" and as \"%.60s\")", seen[fi], key);
        else
            rc = dw_value(j, w, f);
        seen[fi] = key;
        path_pop(&j->path, old);
        if (rc != 0)
            return rc;
    }
}

/* the value of field f at p: messages (alone or in an array) are walked, the rest skipped */
static int dw_value(jdec_t *j, dwalk_t *w, const ProtobufCFieldDescriptor *f)
{
    dw_ws(w);
    if (f->type != PROTOBUF_C_TYPE_MESSAGE || w->p >= w->n || (w->s[w->p] != '{' && w->s[w->p] != '[')) {
        dw_skip(w);
        return 0;
    }
    if (w->s[w->p] == '{')
        return dw_object(j, w, f->descriptor);
    w->p++; /* '[' */
    for (long k = 0;; k++) {
        dw_ws(w);
        if (w->p >= w->n || w->s[w->p] == ']') {
            w->p++;
            return 0;
        }
        if (w->s[w->p] == ',') {
            w->p++;
            k--;
            continue;
        }
        if (w->s[w->p] != '{') {
            dw_skip(w);
            continue;
        }
        size_t old = j->path.len;
        snprintf(j->path.buf + j->path.len, sizeof(j->path.buf) - j->path.len, "[%ld]", k);
        j->path.len += strlen(j->path.buf + j->path.len);
        int rc = dw_object(j, w, f->descriptor);
        path_pop(&j->path, old);
        if (rc != 0)
            return rc;
    }
}

static json_t *json_parse(const void *data, size_t n, size_t flags, json_error_t *je)
{
    json_t *root = json_loadb(data, n, flags, je);
    if (root == NULL && strstr(je->text, "too big") != NULL) /* an integer past int64 (a big double, as Go's
                                                              * protojson writes 1.8e19): read numbers as reals */
        root = json_loadb(data, n, flags | JSON_DECODE_INT_AS_REAL, je);
    return root;
}

static int decode_json(const void *data, size_t n, const ProtobufCMessageDescriptor *d, ps_arena_t *arena,
                       size_t budget, ps_pb_i64_str_fn str_i64, bool otlp_hex, ProtobufCMessage **out, ps_err_t *err)
{
    if (n == 0) /* connect-go's JSON codec says so before protojson reads anything */
        return ps_err_set(err, PS_EINVAL, "json: zero-length payload is not a valid JSON object");
    bool neg_zero = false;
    int rc = json_prescan(data, n, budget, &neg_zero, err);
    if (rc != 0)
        return rc;
    jdec_t j = {.err = err, .budget = budget, .str_i64 = str_i64, .otlp_hex = otlp_hex};
    j.path.buf[0] = '\0';
    ps_pb_arena_init(&j.pa, arena, budget > SIZE_MAX / 2 ? SIZE_MAX / 2 : budget);
    json_error_t je;
    /* a "-0" (a double's -0.0, as Go writes it) keeps its sign only when numbers are read as reals */
    size_t flags = neg_zero ? JSON_DECODE_INT_AS_REAL : 0;
    json_t *root = json_parse(data, n, flags | JSON_REJECT_DUPLICATES, &je);
    bool dup = root == NULL && strstr(je.text, "duplicate object key") != NULL;
    if (dup)
        root = json_parse(data, n, flags, &je);
    if (root == NULL) /* jansson's own words, but for its flag name */
        return ps_err_set_at(err, PS_EINVAL, (size_t)(je.position > 0 ? je.position : 0), "json: line %d column %d: %s",
                             je.line, je.column,
                             strstr(je.text, "JSON_ALLOW_NUL") != NULL ? "strings must not contain \\u0000" : je.text);
    if (dup && json_is_object(root)) {
        dwalk_t w = {.s = data, .n = n};
        dw_ws(&w);
        rc = dw_object(&j, &w, d);
        path_pop(&j.path, 0);
    }
    if (rc == 0)
        rc = json_msg(&j, d, root, 1, out);
    json_decref(root);
    return rc;
}

int ps_pb_decode(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                 ps_arena_t *arena, size_t budget, ProtobufCMessage **out, ps_err_t *err)
{
    *out = NULL;
    if (data == NULL)
        data = "";
    return codec == PS_PB_JSON ? decode_json(data, n, d, arena, budget, NULL, false, out, err)
                               : decode_binary(data, n, d, arena, budget, out, err);
}

int ps_pb_decode_ex(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                    ps_arena_t *arena, size_t budget, ps_pb_i64_str_fn str_i64, ProtobufCMessage **out, ps_err_t *err)
{
    *out = NULL;
    if (data == NULL)
        data = "";
    return codec == PS_PB_JSON ? decode_json(data, n, d, arena, budget, str_i64, false, out, err)
                               : decode_binary(data, n, d, arena, budget, out, err);
}

int ps_pb_decode_otlp(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                      ps_arena_t *arena, size_t budget, ProtobufCMessage **out, ps_err_t *err)
{
    *out = NULL;
    if (data == NULL)
        data = "";
    return codec == PS_PB_JSON ? decode_json(data, n, d, arena, budget, NULL, true, out, err)
                               : decode_binary(data, n, d, arena, budget, out, err);
}

/* ---- JSON: writing ---------------------------------------------------------------------------- */

/* A double as protojson writes it: Go's shortest form ('e' below 1e-6 and from 1e21, exponent
 * without a leading zero), NaN and infinities as the strings "NaN", "Infinity", "-Infinity". */
static void put_double(ps_json_t *j, double v, bool is_float)
{
    if (isnan(v)) {
        ps_json_cstr(j, "NaN");
        return;
    }
    if (isinf(v)) {
        ps_json_cstr(j, v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    char buf[64];
    if (is_float) { /* the shortest decimal that reads back as the same float, as a double */
        for (int p = 1; p <= 9; p++) {
            snprintf(buf, sizeof(buf), "%.*g", p, v);
            if ((float)strtod(buf, NULL) == (float)v)
                break;
        }
        v = strtod(buf, NULL);
    }
    ps_fmt_float(v, buf, sizeof(buf));
    size_t n = strlen(buf);
    if (n >= 4 && buf[n - 4] == 'e' && buf[n - 3] == '-' && buf[n - 2] == '0') { /* 1e-07 -> 1e-7 */
        buf[n - 2] = buf[n - 1];
        buf[n - 1] = '\0';
        n--;
    }
    ps_json_raw(j, buf, n);
}

static void put_base64(ps_json_t *j, const ProtobufCBinaryData *b)
{
    size_t n = PS_BASE64_LEN(b->len) + 1;
    char stackbuf[256], *o = n <= sizeof(stackbuf) ? stackbuf : ps_xmalloc(n);
    size_t k = ps_base64_encode(b->data, b->len, o);
    ps_json_str(j, o, k);
    if (o != stackbuf)
        free(o);
}

static void put_enum(ps_json_t *j, const ProtobufCEnumDescriptor *ed, int32_t v)
{
    const ProtobufCEnumValue *ev = protobuf_c_enum_descriptor_get_value(ed, v);
    if (ev != NULL)
        ps_json_cstr(j, ev->name);
    else
        ps_json_int(j, v);
}

static void put_u64_str(ps_json_t *j, uint64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
    ps_json_str(j, b, (size_t)n);
}

static void put_i64_str(ps_json_t *j, int64_t v)
{
    char b[24];
    int n = snprintf(b, sizeof(b), "%lld", (long long)v);
    ps_json_str(j, b, (size_t)n);
}

static void put_msg(ps_json_t *j, const ProtobufCMessage *m);

static void put_value(ps_json_t *j, const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (f->type) {
    case PROTOBUF_C_TYPE_INT32: case PROTOBUF_C_TYPE_SINT32: case PROTOBUF_C_TYPE_SFIXED32:
        ps_json_int(j, *(const int32_t *)p); break;
    case PROTOBUF_C_TYPE_UINT32: case PROTOBUF_C_TYPE_FIXED32:
        ps_json_uint(j, *(const uint32_t *)p); break;
    case PROTOBUF_C_TYPE_INT64: case PROTOBUF_C_TYPE_SINT64: case PROTOBUF_C_TYPE_SFIXED64:
        put_i64_str(j, *(const int64_t *)p); break;
    case PROTOBUF_C_TYPE_UINT64: case PROTOBUF_C_TYPE_FIXED64:
        put_u64_str(j, *(const uint64_t *)p); break;
    case PROTOBUF_C_TYPE_FLOAT: put_double(j, *(const float *)p, true); break;
    case PROTOBUF_C_TYPE_DOUBLE: put_double(j, *(const double *)p, false); break;
    case PROTOBUF_C_TYPE_BOOL: ps_json_bool(j, *(const protobuf_c_boolean *)p != 0); break;
    case PROTOBUF_C_TYPE_ENUM: put_enum(j, f->descriptor, *(const int32_t *)p); break;
    case PROTOBUF_C_TYPE_STRING: {
        const char *s = *(char *const *)p;
        ps_json_cstr(j, s != NULL ? s : "");
        break;
    }
    case PROTOBUF_C_TYPE_BYTES: put_base64(j, p); break;
    case PROTOBUF_C_TYPE_MESSAGE: {
        const ProtobufCMessage *sub = *(ProtobufCMessage *const *)p;
        if (sub != NULL)
            put_msg(j, sub);
        else
            ps_json_raw(j, "{}", 2);
        break;
    }
    }
}

/* Whether a proto3 implicit-presence field holds its default (and is not written). */
static bool is_default(const ProtobufCFieldDescriptor *f, const void *p)
{
    switch (elem_size(f->type)) {
    case 4: return *(const uint32_t *)p == 0 && (f->type != PROTOBUF_C_TYPE_FLOAT || !signbit(*(const float *)p));
    default: break;
    }
    switch (f->type) {
    case PROTOBUF_C_TYPE_BOOL: return *(const protobuf_c_boolean *)p == 0;
    case PROTOBUF_C_TYPE_STRING: { const char *s = *(char *const *)p; return s == NULL || s[0] == '\0'; }
    case PROTOBUF_C_TYPE_MESSAGE: return *(void *const *)p == NULL;
    case PROTOBUF_C_TYPE_BYTES: return ((const ProtobufCBinaryData *)p)->len == 0;
    case PROTOBUF_C_TYPE_DOUBLE: return *(const uint64_t *)p == 0; /* -0.0 is written */
    default: return *(const uint64_t *)p == 0;
    }
}

static bool is_present(const ProtobufCMessage *m, const ProtobufCFieldDescriptor *f)
{
    const void *p = field_ptr(m, f);
    if (f->flags & PROTOBUF_C_FIELD_FLAG_ONEOF)
        return *(const uint32_t *)((const char *)m + f->quantifier_offset) == f->id;
    switch (f->label) {
    case PROTOBUF_C_LABEL_REPEATED: return *count_ptr(m, f) > 0;
    case PROTOBUF_C_LABEL_REQUIRED: return true;
    case PROTOBUF_C_LABEL_OPTIONAL:
        if (f->type == PROTOBUF_C_TYPE_STRING || f->type == PROTOBUF_C_TYPE_MESSAGE)
            return *(void *const *)p != NULL;
        return *(const protobuf_c_boolean *)((const char *)m + f->quantifier_offset) != 0;
    case PROTOBUF_C_LABEL_NONE: return !is_default(f, p);
    }
    return false;
}

static void put_msg(ps_json_t *j, const ProtobufCMessage *m)
{
    const ProtobufCMessageDescriptor *d = m->descriptor;
    ps_json_obj(j);
    char jn[128];
    for (unsigned i = 0; i < d->n_fields; i++) {
        const ProtobufCFieldDescriptor *f = &d->fields[i];
        if (!is_present(m, f))
            continue;
        json_name(f->name, jn, sizeof(jn));
        ps_json_key(j, jn);
        if (f->label == PROTOBUF_C_LABEL_REPEATED) {
            size_t n = *count_ptr(m, f), es = elem_size(f->type);
            const char *arr = *(char *const *)field_ptr(m, f);
            ps_json_arr(j);
            for (size_t k = 0; k < n; k++)
                put_value(j, f, arr + k * es);
            ps_json_end(j);
        } else {
            put_value(j, f, field_ptr(m, f));
        }
    }
    ps_json_end(j);
}

void ps_pb_encode(ps_pb_codec_t codec, const ProtobufCMessage *m, ps_buf_t *out)
{
    if (codec == PS_PB_JSON) {
        ps_json_t j;
        ps_json_init(&j, out);
        put_msg(&j, m);
        return;
    }
    size_t n = protobuf_c_message_get_packed_size(m);
    if (n == 0)
        return; /* an empty message is no bytes (and an empty buffer has no data pointer yet) */
    uint8_t *p = ps_buf_reserve(out, n);
    protobuf_c_message_pack(m, p);
    out->len += n;
}

int ps_pb_decode_api(int codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d, ps_arena_t *arena,
                     size_t budget, ProtobufCMessage **out, ps_err_t *err)
{
    int ret = ps_pb_decode(codec == PS_PB_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n, d, arena, budget, out, err);
    if (ret != 0)
        ps_err_prefix(err, "%s", d->name);
    return ret;
}

void ps_pb_encode_api(int codec, const ProtobufCMessage *m, ps_buf_t *out)
{
    ps_pb_encode(codec == PS_PB_JSON ? PS_PB_JSON : PS_PB_BINARY, m, out);
}
