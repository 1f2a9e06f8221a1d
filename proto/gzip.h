/*
 * gzip.h - gzip (RFC 1952) both ways, and the process-wide budget of bytes being decompressed at
 * once. The only user of zlib and libdeflate (proto/gzip.c).
 */
#ifndef PS_PROTO_GZIP_H
#define PS_PROTO_GZIP_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** True if the bytes start with the gzip magic 1f 8b. */
int ps_is_gzip(const void *p, size_t n);

/**
 * Gunzips in (one or more concatenated gzip members) into a buffer from arena, failing with
 * PS_ETOOBIG once more than max_out bytes would be produced and PS_EINVAL on a corrupt or
 * truncated stream. *out is valid as long as the arena. Inflates with libdeflate; a stream that
 * libdeflate does not take as it is goes through ps_gunzip_zlib, whose answer it gives.
 */
int ps_gunzip(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
              ps_err_t *err);
/**
 * ps_gunzip into a buffer the calling thread keeps between calls (where libdeflate takes the
 * stream; else zlib's answer, into arena as ps_gunzip's): *out is valid until the thread's next
 * ps_gunzip_temp or ps_gunzip_temp_done, which frees the buffer when it is over 256 KiB.
 */
int ps_gunzip_temp(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
                   ps_err_t *err);
void ps_gunzip_temp_done(void);
/** ps_gunzip with zlib's streaming inflate alone: ps_gunzip's fallback, and its reference in the
 *  tests (same output, same codes and messages). */
int ps_gunzip_zlib(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
                   ps_err_t *err);

/**
 * The process-wide budget of bytes being decompressed at once (gunzip outputs, snappy bodies),
 * whatever the concurrency: 0 (the default) = none. A request that would pass it while others
 * hold some is refused with PS_EUNAVAIL (answer 503 + Retry-After); one alone always gets its
 * own limit (--max-inflated-size). ps_gunzip reserves as its output grows and releases on return.
 */
void ps_inflate_budget_set(uint64_t bytes);
/** Reserves n more bytes of the budget for a caller holding held already (PS_EUNAVAIL, with a
 *  message, when they do not fit and others hold some too). */
int ps_inflate_reserve(uint64_t n, uint64_t held, ps_err_t *err);
void ps_inflate_release(uint64_t n);
/** Requests refused by the budget, and the bytes reserved now (for /metrics). */
uint64_t ps_inflate_budget_refused(void);
uint64_t ps_inflate_budget_reserved(void);

/** Gzips n bytes of in at level (0..9) as one gzip member, appending to out (Connect answers). */
int ps_gzip(const void *in, size_t n, int level, ps_buf_t *out, ps_err_t *err);

#endif
