/*
 * unsymrec.c - the record of the counts of frames without symbols (unsym.c; docs/FORMAT.md
 * "Frames without symbols"): encoding, decoding (every field checked, PS_ECORRUPT naming it),
 * merging. Core helpers only, so that fuzz_unsymrec links it alone.
 *
 *   01 | profiles uvarint | samples uvarint | first_ts varint | last_ts varint |
 *   nfiles uvarint (<= 8) | nfiles x string id uvarint | ntypes uvarint (<= 16) |
 *   ntypes x (type string id uvarint, total varint)
 *
 *   01 02 2e a0d8d0d7e5b4e0ec31 a0e8af98b0b5e0ec31 01 3a 01 3b 80bc94b406
 *      2 profiles, 46 samples, first 1796022364647593488 ns, last 1796022374647593488 ns,
 *      file name string 58, type string 59 with total 860,000,000
 */
#include <string.h>

#include "core/sat.h"
#include "internal.h"

void ps_unsym_rec_encode(const ps_unsym_rec_t *r, ps_buf_t *out)
{
    ps_buf_putc(out, PS_UNSYM_REC_V1);
    ps_put_uvarint(out, r->profiles);
    ps_put_uvarint(out, r->samples);
    ps_put_varint(out, r->first_ts);
    ps_put_varint(out, r->last_ts);
    ps_put_uvarint(out, r->nfiles);
    for (uint32_t i = 0; i < r->nfiles; i++)
        ps_put_uvarint(out, r->files[i]);
    ps_put_uvarint(out, r->ntypes);
    for (uint32_t i = 0; i < r->ntypes; i++) {
        ps_put_uvarint(out, r->types[i]);
        ps_put_varint(out, r->totals[i]);
    }
}

int ps_unsym_rec_decode(const void *p, size_t n, ps_unsym_rec_t *r, ps_err_t *err)
{
    ps_dec_t d;
    ps_dec_init(&d, p, n);
    memset(r, 0, sizeof(*r));
    uint8_t enc = ps_dec_u8(&d);
    if (d.err == 0 && enc != PS_UNSYM_REC_V1)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: unknown encoding %u", enc);
    r->profiles = ps_dec_uvarint(&d);
    r->samples = ps_dec_uvarint(&d);
    r->first_ts = ps_dec_varint(&d);
    r->last_ts = ps_dec_varint(&d);
    uint64_t nf = ps_dec_uvarint(&d);
    if (d.err == 0 && nf > PS_UNSYM_FILES_MAX)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: %llu file names (at most %d)", (unsigned long long)nf,
                          PS_UNSYM_FILES_MAX);
    r->nfiles = (uint32_t)nf;
    for (uint32_t i = 0; i < r->nfiles && d.err == 0; i++)
        r->files[i] = ps_dec_uvarint(&d);
    uint64_t nt = ps_dec_uvarint(&d);
    if (d.err == 0 && nt > PS_UNSYM_TYPES_MAX)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: %llu profile types (at most %d)", (unsigned long long)nt,
                          PS_UNSYM_TYPES_MAX);
    r->ntypes = (uint32_t)nt;
    for (uint32_t i = 0; i < r->ntypes && d.err == 0; i++) {
        r->types[i] = ps_dec_uvarint(&d);
        r->totals[i] = ps_dec_varint(&d);
    }
    if (d.err != 0)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: truncated (%zu bytes)", n);
    if (ps_dec_left(&d) != 0)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: %zu bytes after its end", ps_dec_left(&d));
    if (r->profiles == 0 || r->samples == 0 || r->first_ts > r->last_ts)
        return ps_err_set(err, PS_ECORRUPT, "unsym record: %llu profiles, %llu samples, first %lld after last %lld",
                          (unsigned long long)r->profiles, (unsigned long long)r->samples, (long long)r->first_ts,
                          (long long)r->last_ts);
    return 0;
}

void ps_unsym_rec_add_file(ps_unsym_rec_t *r, uint64_t f)
{
    for (uint32_t i = 0; i < r->nfiles; i++)
        if (r->files[i] == f)
            return;
    if (r->nfiles < PS_UNSYM_FILES_MAX)
        r->files[r->nfiles++] = f;
}

void ps_unsym_rec_add_total(ps_unsym_rec_t *r, uint64_t type, int64_t v)
{
    for (uint32_t i = 0; i < r->ntypes; i++)
        if (r->types[i] == type) {
            r->totals[i] = ps_sat_add(r->totals[i], v);
            return;
        }
    if (r->ntypes < PS_UNSYM_TYPES_MAX) {
        r->types[r->ntypes] = type;
        r->totals[r->ntypes++] = v;
    }
}

void ps_unsym_rec_merge(ps_unsym_rec_t *dst, const ps_unsym_rec_t *src)
{
    if (dst->profiles == 0) {
        dst->first_ts = src->first_ts;
        dst->last_ts = src->last_ts;
    } else {
        dst->first_ts = src->first_ts < dst->first_ts ? src->first_ts : dst->first_ts;
        dst->last_ts = src->last_ts > dst->last_ts ? src->last_ts : dst->last_ts;
    }
    dst->profiles = ps_sat_addu(dst->profiles, src->profiles);
    dst->samples = ps_sat_addu(dst->samples, src->samples);
    for (uint32_t i = 0; i < src->nfiles; i++)
        ps_unsym_rec_add_file(dst, src->files[i]);
    for (uint32_t i = 0; i < src->ntypes; i++)
        ps_unsym_rec_add_total(dst, src->types[i], src->totals[i]);
}

