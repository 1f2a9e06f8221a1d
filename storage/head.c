/*
 * head.c - head records: one freshly ingested profile of one series, written at once (durable)
 * and later folded into a chunk by the compactor.
 *
 *   key   (DB_HEAD) : sid u64 BE | ts u64 BE (sign bit flipped, so byte order = time order)
 *   value           : enc u8 (=1) | duration varint | period varint | total varint | n uvarint |
 *                     n x ( node delta uvarint | value varint )
 *   node ids ascending: the first delta is from 0. varint = zigzag LEB128, uvarint = LEB128.
 *
 *   Example (duration 3 s, period 10 ms, nodes 5 -> 20, 9 -> 10; total 30):
 *   01 | 80 f8 82 ad 16 | 80 da c4 09 | 3c | 02 | 05 28 | 04 14
 *   (tests/unit/storage/test_format.c checks it against ps_head_encode)
 */
#include "core/sat.h"
#include "internal.h"

void ps_head_encode(int64_t duration, int64_t period, const uint64_t *nodes, const int64_t *values, uint32_t n,
                    ps_buf_t *out)
{
    int64_t total = 0;
    for (uint32_t i = 0; i < n; i++)
        total = ps_sat_add(total, values[i]);
    /* the varints written into room reserved once (ps_enc_uvarint): a check of the room for
     * each was half of this function's instructions */
    uint8_t *e = ps_buf_reserve(out, 1 + 4 * 10 + (size_t)n * 2 * 10), *q = e;
    *q++ = PS_HEAD_REC_V1;
    q = ps_enc_uvarint(q, ps_zigzag(duration));
    q = ps_enc_uvarint(q, ps_zigzag(period));
    q = ps_enc_uvarint(q, ps_zigzag(total));
    q = ps_enc_uvarint(q, n);
    uint64_t prev = 0;
    for (uint32_t i = 0; i < n; i++) {
        q = ps_enc_uvarint(q, nodes[i] - prev);
        q = ps_enc_uvarint(q, ps_zigzag(values[i]));
        prev = nodes[i];
    }
    out->len += (size_t)(q - e);
}

int ps_head_decode(const void *p, size_t len, ps_arena_t *arena, ps_stored_profile_t *out)
{
    ps_dec_t d;
    ps_dec_init(&d, p, len);
    if (ps_dec_u8(&d) != PS_HEAD_REC_V1)
        return PS_ECORRUPT;
    out->duration = ps_dec_varint(&d);
    out->period = ps_dec_varint(&d);
    out->total = ps_dec_varint(&d);
    uint64_t n = ps_dec_uvarint(&d);
    if (d.err || n > ps_dec_left(&d) / 2)
        return PS_ECORRUPT;
    out->n = (uint32_t)n;
    if (arena == NULL) { /* meta only */
        out->nodes = NULL;
        out->values = NULL;
        return 0;
    }
    uint64_t *nodes = ps_arena_alloc(arena, (n ? n : 1) * sizeof(uint64_t));
    int64_t *values = ps_arena_alloc(arena, (n ? n : 1) * sizeof(int64_t));
    uint64_t prev = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t delta = ps_dec_uvarint(&d);
        if (i > 0 && delta == 0)
            d.err = 1;
        prev += delta;
        nodes[i] = prev;
        values[i] = ps_dec_varint(&d);
    }
    if (d.err || ps_dec_left(&d) != 0)
        return PS_ECORRUPT;
    out->nodes = nodes;
    out->values = values;
    return 0;
}
