/*
 * float_log.c - the float sample log's record (float_log.h).
 *
 *   record: 01 | last <uvarint> | run... (to the end of the value)
 *   run:    dsid <uvarint> | count <uvarint> | t0 <varint> | v0 <8 bytes BE> | (dt <uvarint> | v <8 bytes BE>)...
 *
 * last is the sid of the last run (what a damaged record may hold is bounded by it). A run holds count (1..65535) samples of series sid = the previous run's sid + dsid (the first
 * run: dsid itself; dsid >= 1 after it, so runs are in sid order, each sid once); t0 is the first
 * sample's t (ms), each dt >= 1 the step to the next; |t| <= 9223372036854; v the float64 bits.
 */
#include "float_log.h"

#include "core/varint.h"

void ps_flog_encode(const ps_flog_ent_t *e, size_t n, ps_buf_t *out)
{
    ps_buf_putc(out, PS_FLOG_REC_V1);
    ps_put_uvarint(out, e[n - 1].sid);
    uint64_t prev = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i + 1;
        while (j < n && e[j].sid == e[i].sid)
            j++;
        ps_put_uvarint(out, e[i].sid - prev);
        ps_put_uvarint(out, j - i);
        ps_put_varint(out, e[i].t);
        ps_put_be64(out, e[i].v);
        for (size_t k = i + 1; k < j; k++) {
            ps_put_uvarint(out, (uint64_t)(e[k].t - e[k - 1].t));
            ps_put_be64(out, e[k].v);
        }
        prev = e[i].sid;
        i = j;
    }
}

int ps_flog_decode(const void *p, size_t len, ps_buf_t *out, uint64_t *bad_from, uint64_t *bad_to, ps_err_t *err)
{
    const uint8_t *b = p;
    *bad_from = 0;
    *bad_to = UINT64_MAX;
    if (len < 1 || b[0] != PS_FLOG_REC_V1)
        return ps_err_set(err, PS_ECORRUPT, "float log: encoding byte %u, not %u at byte 0", len ? b[0] : 0u,
                          PS_FLOG_REC_V1);
    ps_dec_t d;
    ps_dec_init(&d, b + 1, len - 1);
    uint64_t last = ps_dec_uvarint(&d), sid = 0;
    if (d.err)
        return ps_err_set(err, PS_ECORRUPT, "float log: bad last series at byte 1");
    *bad_to = last;
    if (ps_dec_left(&d) == 0)
        return ps_err_set(err, PS_ECORRUPT, "float log: no samples at byte %zu", len);
    const char *why = NULL;
    size_t run_at = out->len, at = 1;
    for (uint32_t r = 0; ps_dec_left(&d) > 0; r++) {
        run_at = out->len;
        at = (size_t)(d.p - b);
        uint64_t dsid = ps_dec_uvarint(&d);
        if (d.err || (r > 0 && dsid == 0) || dsid > UINT64_MAX - sid) {
            why = "bad series step";
            *bad_from = sid + 1;
            if (r > 0 && dsid > 0 && dsid <= UINT64_MAX - sid)
                *bad_from = sid + dsid;
            break;
        }
        sid += dsid;
        *bad_from = sid;
        if (sid > last) {
            why = "series past the record's last";
            *bad_to = sid;
            break;
        }
        uint64_t cnt = ps_dec_uvarint(&d);
        if (d.err || cnt == 0 || cnt > PS_FLOG_RUN_MAX || cnt > ps_dec_left(&d) / 9) {
            why = "bad sample count";
            break;
        }
        int64_t t = ps_dec_varint(&d);
        if (d.err || t > PS_FLOG_T_MAX || t < -PS_FLOG_T_MAX) {
            why = "bad timestamp";
            break;
        }
        ps_flog_ent_t *e = (ps_flog_ent_t *)ps_buf_reserve(out, cnt * sizeof(*e));
        for (uint64_t k = 0; k < cnt; k++) {
            if (k > 0) {
                uint64_t dt = ps_dec_uvarint(&d);
                if (d.err || dt == 0 || dt > (uint64_t)(PS_FLOG_T_MAX - t)) {
                    why = "bad timestamp step";
                    break;
                }
                t += (int64_t)dt;
            }
            uint64_t v = ps_dec_be64(&d);
            if (d.err) {
                why = "truncated value";
                break;
            }
            e[k] = (ps_flog_ent_t){sid, t, v};
        }
        if (why != NULL)
            break;
        out->len += cnt * sizeof(*e);
    }
    if (why == NULL && sid != last) {
        why = "record ends before its last series";
        *bad_from = sid + 1;
        at = (size_t)(d.p - b);
    }
    if (why == NULL)
        return 0;
    out->len = run_at;
    return ps_err_set(err, PS_ECORRUPT, "float log: %s at byte %zu", why, at);
}
