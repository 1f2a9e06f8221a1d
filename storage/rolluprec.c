/*
 * rolluprec.c - the rollup record (storage/rollup.c; docs/FORMAT.md "Rollups"):
 *
 *   01 | profiles uvarint >= 1 | min_ts varint | max_ts - min_ts uvarint | duration uvarint |
 *   period varint | total uvarint | n uvarint | scale uvarint >= 1 |
 *   n node ids (the first as is, then gaps >= 1, uvarints) | n values / scale (uvarints >= 1)
 *
 * min_ts and max_ts lie in the record's window; scale is the gcd of the values. The decoder checks
 * all of it (a record is read as it is stored: damage gives PS_ECORRUPT naming the field, and the
 * merge reads the window from the level below).
 */
#include <string.h>

#include "internal.h"

#define CORRUPT(...) ps_err_set(err, PS_ECORRUPT, "rollup: " __VA_ARGS__)

static uint64_t gcd64(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

void ps_rollup_encode(const ps_rollup_t *r, ps_buf_t *out)
{
    uint64_t scale = 0;
    for (uint32_t i = 0; i < r->n; i++)
        scale = gcd64(scale, (uint64_t)r->values[i]);
    if (scale == 0)
        scale = 1;
    ps_buf_putc(out, PS_ROLLUP_REC_V1);
    ps_put_uvarint(out, r->profiles);
    ps_put_varint(out, r->min_ts);
    ps_put_uvarint(out, (uint64_t)r->max_ts - (uint64_t)r->min_ts);
    ps_put_uvarint(out, (uint64_t)r->duration);
    ps_put_varint(out, r->period);
    ps_put_uvarint(out, (uint64_t)r->total);
    ps_put_uvarint(out, r->n);
    ps_put_uvarint(out, scale);
    for (uint32_t i = 0; i < r->n; i++)
        ps_put_uvarint(out, i == 0 ? r->nodes[0] : r->nodes[i] - r->nodes[i - 1]);
    for (uint32_t i = 0; i < r->n; i++)
        ps_put_uvarint(out, (uint64_t)r->values[i] / scale);
}

int ps_rollup_decode(const void *p, size_t n, int64_t ws, int64_t len, ps_arena_t *arena, ps_rollup_t *out,
                     ps_err_t *err)
{
    ps_dec_t d;
    ps_dec_init(&d, p, n);
    memset(out, 0, sizeof(*out));
    uint8_t enc = ps_dec_u8(&d);
    if (d.err)
        return CORRUPT("empty record");
    if (enc != PS_ROLLUP_REC_V1)
        return CORRUPT("unknown encoding %u", enc);
    out->profiles = ps_dec_uvarint(&d);
    out->min_ts = ps_dec_varint(&d);
    uint64_t span = ps_dec_uvarint(&d);
    uint64_t dur = ps_dec_uvarint(&d);
    out->period = ps_dec_varint(&d);
    uint64_t total = ps_dec_uvarint(&d);
    uint64_t nn = ps_dec_uvarint(&d);
    uint64_t scale = ps_dec_uvarint(&d);
    if (d.err)
        return CORRUPT("record cut short in its header (%zu bytes)", n);
    if (out->profiles == 0)
        return CORRUPT("no profiles");
    int64_t wend = ws + (len - 1); /* the window's last ns */
    if (out->min_ts < ws || out->min_ts > wend || span > (uint64_t)(wend - out->min_ts))
        return CORRUPT("profiles from %lld to +%llu ns outside the window [%lld, %lld]", (long long)out->min_ts,
                       (unsigned long long)span, (long long)ws, (long long)wend);
    out->max_ts = out->min_ts + (int64_t)span;
    if (dur > INT64_MAX || total > INT64_MAX)
        return CORRUPT("duration %llu or total %llu past int64", (unsigned long long)dur, (unsigned long long)total);
    out->duration = (int64_t)dur;
    out->total = (int64_t)total;
    if (scale == 0 || scale > INT64_MAX)
        return CORRUPT("scale %llu", (unsigned long long)scale);
    if (nn > ps_dec_left(&d) / 2) /* a node takes at least a byte of id and one of value */
        return CORRUPT("%llu nodes in %zu bytes", (unsigned long long)nn, ps_dec_left(&d));
    out->n = (uint32_t)nn;
    out->nodes = ps_arena_alloc(arena, (nn + 1) * sizeof(uint64_t));
    out->values = ps_arena_alloc(arena, (nn + 1) * sizeof(int64_t));
    uint64_t node = 0;
    for (uint32_t i = 0; i < out->n; i++) {
        uint64_t g = ps_dec_uvarint(&d);
        if (d.err)
            return CORRUPT("node %u cut short", i);
        if (i > 0 && (g == 0 || g > UINT64_MAX - node))
            return CORRUPT("node %u: gap %llu after %llu", i, (unsigned long long)g, (unsigned long long)node);
        node = i == 0 ? g : node + g;
        out->nodes[i] = node;
    }
    uint64_t vmax = (uint64_t)INT64_MAX / scale;
    for (uint32_t i = 0; i < out->n; i++) {
        uint64_t v = ps_dec_uvarint(&d);
        if (d.err)
            return CORRUPT("value %u cut short", i);
        if (v == 0 || v > vmax)
            return CORRUPT("value %u: %llu x %llu", i, (unsigned long long)v, (unsigned long long)scale);
        out->values[i] = (int64_t)(v * scale);
    }
    if (ps_dec_left(&d) != 0)
        return CORRUPT("%zu bytes after the record", ps_dec_left(&d));
    return 0;
}

