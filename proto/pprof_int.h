/*
 * pprof_int.h - (private to proto/ and the tests' reference decoder, tests/support/) the first
 * steps of ps_pprof_decode alone, so that a second decoder can run behind the same checks.
 */
#ifndef PS_PROTO_PPROF_INT_H
#define PS_PROTO_PPROF_INT_H

#include "proto/pprof.h"

/** Steps 1 and 2 of ps_pprof_decode (lim not NULL): gunzip into arena (or the max_inflated check),
 *  then the wire scan; *buf, *len the protobuf bytes. 0, or ps_pprof_decode's error. */
int ps_pprof_scan(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, const uint8_t **buf,
                  size_t *len, ps_err_t *err);
/** The deep scan ps_pprof_decode runs when its decoder refuses bytes the first scan passed: says
 *  where (else "not a valid pprof protobuf"). Always an error. */
int ps_pprof_scan_deep(const uint8_t *buf, size_t len, const ps_pprof_limits_t *lim, ps_err_t *err);

#endif
