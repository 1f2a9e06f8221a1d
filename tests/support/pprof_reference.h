/*
 * pprof_reference.h - (tests and benchmarks only) the pprof decoder that proto/pprof.c's own wire
 * decoder replaced, kept as the reference it is compared with (test_pprof.c, fuzz_pprof.c,
 * bench/pprof.c). Not part of the product.
 */
#ifndef PS_TESTS_PPROF_REFERENCE_H
#define PS_TESTS_PPROF_REFERENCE_H

#include "proto/pprof.h"

/**
 * ps_pprof_decode the old way (protobuf-c unpack into the arena, then conversion). Same contract,
 * same results and messages, except that it may also fail with PS_ETOOBIG "decoding the profile
 * needs more than N bytes of memory" (protobuf-c's allocation budget).
 */
int ps_pprof_decode_reference(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena,
                              ps_profile_t *out, ps_err_t *err);

#endif
