/*
 * float_dense.h - the dense float chunk: a closed chunk's samples (t_ms, float64) in fewer bytes than
 * Prometheus' XOR chunk (xorchunk.h) when the values are decimals with few digits (counters,
 * gauges, ticks / 100) and the timestamps regular. The layout is specified at the top of
 * float_dense.c and in docs/FORMAT.md "Dense chunks".
 *
 * storage/floats.c stores closed float chunks in it (fchunks encodings 06 and 07); the open
 * head stays a XOR chunk. A dense chunk holds the same samples bit for bit (NaN payloads, the
 * stale marker, -0.0, ±Inf: chunks of values that are not decimal keep XOR'd bits), so the XOR
 * chunk ps_xor_app makes from them is the one it was made from: remote_read's streamed chunks are
 * transcoded back (ps_float_dense_to_xor).
 */
#ifndef PS_STORAGE_FLOAT_DENSE_H
#define PS_STORAGE_FLOAT_DENSE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

#define PS_FLOAT_DENSE_MAX_SAMPLES 65535       /* as many as a XOR chunk can hold */
#define PS_FLOAT_DENSE_T_MAX 9223372036854ll   /* |t| (ms) of a sample, as float series allow */

/** Appends the dense chunk of the n (1..PS_FLOAT_DENSE_MAX_SAMPLES) samples t[i], bits[i] (the
 *  float64 bits; t strictly increasing, |t| <= PS_FLOAT_DENSE_T_MAX) to out; tbase is subtracted from
 *  the first timestamp (0 for a chunk on its own, the entry's min_t inside packed chunks). */
void ps_float_dense_encode(const int64_t *t, const uint64_t *bits, uint32_t n, int64_t tbase, ps_buf_t *out);

/** Decodes the dense chunk p[0..len) written with tbase, validating every byte (never reading
 *  outside them): *n samples into t and bits, newly allocated (free() both). 0 or PS_ECORRUPT
 *  with "fdense: <what> at byte B" in err (t, bits NULL then). */
int ps_float_dense_decode(const void *p, size_t len, int64_t tbase, int64_t **t, uint64_t **bits, uint32_t *n,
                          ps_err_t *err);

/** The XOR chunk (xorchunk.h, without an encoding byte) of the dense chunk p[0..len), appended
 *  to out: the bytes ps_xor_app writes for its samples. 0 or PS_ECORRUPT (out unchanged). */
int ps_float_dense_to_xor(const void *p, size_t len, int64_t tbase, ps_buf_t *out, ps_err_t *err);

#endif
