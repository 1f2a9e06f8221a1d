/*
 * float_log.h - the float sample log's record (flog, schema 12): the samples one write
 * transaction appended to float series whose fhead record it did not rewrite, sorted by series.
 * The layout is specified at the top of float_log.c and in docs/FORMAT.md "Float series"; the
 * rules (who logs, how reads apply it, the checkpoint) are in floats.c.
 */
#ifndef PS_STORAGE_FLOAT_LOG_H
#define PS_STORAGE_FLOAT_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

#define PS_FLOG_REC_V1 1                 /* the record's encoding byte */
#define PS_FLOG_T_MAX 9223372036854ll    /* |t| (ms) of a sample, as float series allow */
#define PS_FLOG_RUN_MAX 65535            /* samples of one series in a record (a XOR chunk's count) */

/* One logged sample: series, t (ms), the float64 bits. */
typedef struct ps_flog_ent {
    uint64_t sid;
    int64_t t;
    uint64_t v;
} ps_flog_ent_t;

/** Appends the record of the n (>= 1) entries e (sorted by sid, t strictly increasing within a
 *  sid, at most PS_FLOG_RUN_MAX of a sid, |t| <= PS_FLOG_T_MAX) to out. */
void ps_flog_encode(const ps_flog_ent_t *e, size_t n, ps_buf_t *out);

/** Decodes the record p[0..len), validating every byte (never reading outside them), appending
 *  its entries to out (an array of ps_flog_ent_t; out->len counts bytes). 0, or PS_ECORRUPT with
 *  "float log: <what> at byte B" in err and [*bad_from, *bad_to] the sids whose entries the record
 *  may hold but out does not (none when *bad_from > *bad_to; out keeps the complete entries of the
 *  sids below *bad_from). */
int ps_flog_decode(const void *p, size_t len, ps_buf_t *out, uint64_t *bad_from, uint64_t *bad_to, ps_err_t *err);

#endif
