/*
 * spanparts.c - the span parts codec (schema 5; docs/FORMAT.md "Span index and span parts"): per
 * profile and series, the spans of its samples grouped by span and how the labels were written
 * (span_id or profile_id, case, trace id), each group's (node, value) pairs against the profile's
 * own stack nodes. Core helpers only (tests/fuzz/fuzz_spanparts.c).
 */
#include <string.h>

#include "core/encode.h"
#include "internal.h"

static bool is_lower_hex32(const char *s, size_t n)
{
    if (n != 32)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
            return false;
    return true;
}

#define F_TRACE16 4  /* trace id: 16 bytes, its 32 lower-case hex digits */
#define F_TRACESTR 8 /* trace id: uvarint length, the bytes as pushed */
#define F_KNOWN (PS_SPAN_F_PROFILE_ID | PS_SPAN_F_UPPER | F_TRACE16 | F_TRACESTR)

/* parts a and b are of one group: the same span written the same way */
static bool same_group(const ps_span_part_t *a, const ps_span_part_t *b)
{
    return a->span == b->span && a->flags == b->flags && a->trace_len == b->trace_len &&
           (a->trace_len == 0 || memcmp(a->trace, b->trace, a->trace_len) == 0);
}

void ps_span_parts_encode(const ps_span_part_t *parts, size_t n, ps_buf_t *out)
{
    size_t ngroups = 0;
    for (size_t i = 0; i < n; i++)
        ngroups += i == 0 || !same_group(&parts[i], &parts[i - 1]);
    ps_buf_putc(out, PS_SPANPARTS_ENC);
    ps_put_uvarint(out, ngroups);
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j < n && same_group(&parts[j], &parts[i]))
            j++;
        const ps_span_part_t *p = &parts[i];
        uint8_t b[8];
        ps_enc_be64(b, p->span);
        ps_buf_append(out, b, 8);
        uint8_t f = p->flags & (PS_SPAN_F_PROFILE_ID | PS_SPAN_F_UPPER);
        if (p->trace_len > 0)
            f |= is_lower_hex32(p->trace, p->trace_len) ? F_TRACE16 : F_TRACESTR;
        ps_buf_putc(out, (char)f);
        if (f & F_TRACE16) {
            uint8_t t[16];
            for (int k = 0; k < 16; k++)
                t[k] = (uint8_t)(ps_hex_digit((unsigned char)p->trace[2 * k]) << 4 | ps_hex_digit((unsigned char)p->trace[2 * k + 1]));
            ps_buf_append(out, t, 16);
        } else if (f & F_TRACESTR) {
            ps_put_uvarint(out, p->trace_len);
            ps_buf_append(out, p->trace, p->trace_len);
        }
        ps_put_uvarint(out, j - i);
        uint64_t prev = 0;
        for (size_t k = i; k < j; k++) {
            ps_put_uvarint(out, parts[k].node - prev);
            ps_put_varint(out, parts[k].value);
            prev = parts[k].node;
        }
        i = j;
    }
}

int ps_span_parts_decode(const void *data, size_t len, ps_arena_t *arena, ps_span_part_t **parts, size_t *n,
                         ps_err_t *err)
{
    static const char hex[] = "0123456789abcdef";
    ps_dec_t d;
    ps_dec_init(&d, data, len);
    *parts = NULL;
    *n = 0;
    if (ps_dec_u8(&d) != PS_SPANPARTS_ENC || d.err)
        return ps_err_set(err, PS_ECORRUPT, "span parts: the encoding byte is not %d", PS_SPANPARTS_ENC);
    uint64_t nspans = ps_dec_uvarint(&d);
    if (d.err || nspans > ps_dec_left(&d) / 11)
        return ps_err_set(err, PS_ECORRUPT, "span parts: %llu spans in %zu bytes", (unsigned long long)nspans, len);
    /* every pair takes at least 2 bytes: at most left / 2 of them */
    size_t cap = ps_dec_left(&d) / 2 + 1, m = 0;
    ps_span_part_t *out = ps_arena_alloc(arena, cap * sizeof(ps_span_part_t));
    uint64_t last_span = 0;
    for (uint64_t i = 0; i < nspans; i++) {
        size_t at = len - ps_dec_left(&d);
        uint64_t span = ps_dec_be64(&d);
        uint8_t f = ps_dec_u8(&d);
        const char *trace = NULL;
        uint32_t tlen = 0;
        if (!d.err && (span == 0 || (i > 0 && span < last_span) || (f & ~F_KNOWN) || (f & F_TRACE16 && f & F_TRACESTR)))
            return ps_err_set(err, PS_ECORRUPT, "span parts: span %llu at byte %zu is damaged", (unsigned long long)i, at);
        if (f & F_TRACE16) {
            const uint8_t *t = ps_dec_bytes(&d, 16);
            if (t != NULL) {
                char *s = ps_arena_alloc(arena, 32);
                for (int k = 0; k < 16; k++) {
                    s[2 * k] = hex[t[k] >> 4];
                    s[2 * k + 1] = hex[t[k] & 15];
                }
                trace = s;
                tlen = 32;
            }
        } else if (f & F_TRACESTR) {
            uint64_t l = ps_dec_uvarint(&d);
            if (!d.err && (l == 0 || l > ps_dec_left(&d)))
                return ps_err_set(err, PS_ECORRUPT, "span parts: span %llu's trace id at byte %zu is damaged",
                                  (unsigned long long)i, at);
            trace = (const char *)ps_dec_bytes(&d, (size_t)l);
            tlen = (uint32_t)l;
        }
        if (!d.err && m > 0 && out[m - 1].span == span && out[m - 1].flags == (f & (PS_SPAN_F_PROFILE_ID | PS_SPAN_F_UPPER)) &&
            out[m - 1].trace_len == tlen && (tlen == 0 || memcmp(out[m - 1].trace, trace, tlen) == 0))
            return ps_err_set(err, PS_ECORRUPT, "span parts: span %llu at byte %zu is the group before it again",
                              (unsigned long long)i, at);
        uint64_t np = ps_dec_uvarint(&d);
        if (!d.err && (np == 0 || np > cap - m))
            return ps_err_set(err, PS_ECORRUPT, "span parts: span %llu at byte %zu has %llu parts", (unsigned long long)i,
                              at, (unsigned long long)np);
        uint64_t node = 0;
        for (uint64_t k = 0; k < np && !d.err; k++) {
            uint64_t dn = ps_dec_uvarint(&d);
            int64_t v = ps_dec_varint(&d);
            if (!d.err && ((k > 0 && dn == 0) || dn > UINT64_MAX - node || dn + node == 0))
                return ps_err_set(err, PS_ECORRUPT, "span parts: span %llu at byte %zu: nodes not ascending",
                                  (unsigned long long)i, at);
            node += dn;
            out[m++] = (ps_span_part_t){.span = span, .node = node, .value = v, .trace = trace, .trace_len = tlen,
                                        .flags = (uint8_t)(f & (PS_SPAN_F_PROFILE_ID | PS_SPAN_F_UPPER))};
        }
        if (d.err)
            break;
        last_span = span;
    }
    if (d.err || ps_dec_left(&d) != 0)
        return ps_err_set(err, PS_ECORRUPT, "span parts: %s at byte %zu", d.err ? "truncated" : "trailing bytes",
                          len - ps_dec_left(&d));
    *parts = out;
    *n = m;
    return 0;
}

