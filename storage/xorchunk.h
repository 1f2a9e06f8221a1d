/*
 * xorchunk.h - the float chunk: up to 65535 (t_ms, float64) samples of one series, in the byte
 * layout of Prometheus' XOR chunk (tsdb/chunkenc/xor.go): delta-of-delta timestamps and XOR'd
 * values (Gorilla). Byte-exact, so remote_read's STREAMED_XOR_CHUNKS can send stored chunks as
 * they are. The layout is specified at the top of xorchunk.c and in docs/FORMAT.md.
 *
 * storage/floats.c stores float series in these chunks. A writer cuts a chunk at
 * PS_XOR_SAMPLES_PER_CHUNK samples, as Prometheus' head does: that bounds what a query decodes to
 * reach one sample, and the chunks are those Prometheus itself would send. Values keep their exact
 * bits (NaN payloads, the stale marker PS_XOR_STALE_NAN, -0.0).
 */
#ifndef PS_STORAGE_XORCHUNK_H
#define PS_STORAGE_XORCHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

#define PS_XOR_MAX_SAMPLES 65535        /* the 16-bit sample count */
#define PS_XOR_SAMPLES_PER_CHUNK 120    /* where a writer (head, compactor) cuts, like Prometheus */
#define PS_XOR_STALE_NAN 0x7ff0000000000002ull /* Prometheus' stale marker, as float64 bits */

/** Appends samples to a chunk at the end of a ps_buf_t. After every call the chunk is complete:
 *  buf->data[start .. buf->len) are its bytes. Nothing else may append to buf meanwhile. */
typedef struct ps_xor_app {
    ps_buf_t *buf;
    size_t start;       /* offset of the chunk in buf */
    uint32_t n;         /* samples so far */
    uint8_t free_bits;  /* unwritten bits in the last byte, 0..8 (Prometheus' bstream count) */
    uint8_t leading, trailing; /* the XOR window of the last value header; leading 0xff: none */
    int64_t t;          /* last timestamp */
    uint64_t tdelta;    /* last timestamp delta */
    uint64_t v;         /* last value's bits */
} ps_xor_app_t;

/** Starts an empty chunk (the 2-byte count, 0) at the end of buf. */
void ps_xor_app_init(ps_xor_app_t *a, ps_buf_t *buf);

/** Continues the chunk in buf->data[start .. buf->len) (validated first: PS_ECORRUPT, buf
 *  untouched). Appending then writes the same bytes as if the chunk had never been interrupted. */
int ps_xor_app_resume(ps_xor_app_t *a, ps_buf_t *buf, size_t start, ps_err_t *err);

/** Appends one sample. PS_EOUTOFORDER if t_ms is not after the last timestamp, PS_ETOOBIG if the
 *  chunk holds PS_XOR_MAX_SAMPLES; the chunk is unchanged then. */
int ps_xor_app_append(ps_xor_app_t *a, int64_t t_ms, double v, ps_err_t *err);

/** The chunk's bytes; valid until the next append to (or other change of) the buffer. */
static inline const uint8_t *ps_xor_app_bytes(const ps_xor_app_t *a, size_t *len)
{
    *len = a->buf->len - a->start;
    return a->buf->data + a->start;
}

/**
 * Reads a chunk sample by sample, validating as it goes; the bytes are borrowed and must stay
 * valid while the iterator is used. Never reads outside them. The error is sticky: after the
 * first problem ps_xor_iter_next() returns 0 for good and ps_xor_iter_err() says what and where.
 * The check that the bytes end where the samples do comes with the last sample: a chunk with
 * trailing bytes fails there, before that sample is returned.
 */
typedef struct ps_xor_iter {
    int64_t t;          /* the current sample, after ps_xor_iter_next() returned 1 */
    double v;
    /* private */
    const uint8_t *p;   /* the chunk */
    size_t len;
    size_t pos;         /* bits read after the 2-byte count */
    uint32_t n, i;      /* samples in the chunk, returned so far */
    uint64_t tdelta, vbits;
    uint8_t leading, trailing, window; /* window: a value header was read */
    uint8_t last_bits;  /* width of the last field read (for the end check) */
    int err;            /* 0 or PS_ECORRUPT */
    const char *why;
    size_t at;          /* byte offset of the problem in the chunk */
    bool any_end;       /* ps_xor_iter_init_foreign */
} ps_xor_iter_t;

void ps_xor_iter_init(ps_xor_iter_t *it, const void *p, size_t len);
/** As ps_xor_iter_init, for a chunk another writer made: when the last sample ends on a byte
 *  boundary, Prometheus 2's writer leaves an empty byte after it (which stored chunks have, and
 *  which appending relies on) and Prometheus 3's does not; both ends are accepted here. */
void ps_xor_iter_init_foreign(ps_xor_iter_t *it, const void *p, size_t len);

/** Advances to the next sample: 1 (it->t, it->v hold it), or 0 at the end or on an error. */
int ps_xor_iter_next(ps_xor_iter_t *it);

/** 0 if the chunk read cleanly so far, else PS_ECORRUPT with "xorchunk: <what> at byte B
 *  (after I of N samples)" in err. */
int ps_xor_iter_err(const ps_xor_iter_t *it, ps_err_t *err);

/** The sample count of the header (0 if len < 2): O(1), unvalidated. */
static inline uint32_t ps_xor_count(const void *p, size_t len)
{
    const uint8_t *b = p;
    return len < 2 ? 0 : (uint32_t)b[0] << 8 | b[1];
}

/** Validates a whole chunk (for bytes read from disk or received): decodes every sample, checks
 *  the end and that there is at least one sample. 0 or PS_ECORRUPT with a message. */
int ps_xor_validate(const void *p, size_t len, ps_err_t *err);

#endif
