/*
 * remote_read.h - the remote-read codec (docs/protocols.md): decoding and validating a
 * prometheus.ReadRequest (snappy block format) into our own structs, and writing the two answers
 * Prometheus' read handler gives: a SAMPLES ReadResponse (snappy block format) and
 * STREAMED_XOR_CHUNKS frames of ChunkedReadResponse. Both answers are written by hand, field by
 * field, in the byte order gogo-protobuf (Prometheus' marshaller) gives: field-number order,
 * proto3 defaults (0, 0.0 and -0.0, "") omitted. Decoders of the answers serve tests and tools.
 *
 * Frame (storage/remote/chunked.go):  uvarint(len(data)) | CRC-32C(data), big-endian, 4 bytes |
 * data = ChunkedReadResponse{chunked_series: [one series], query_index}.
 *
 * Nothing here selects or reads series: src/query/remote_read.c does.
 */
#ifndef PS_PROTO_REMOTE_READ_H
#define PS_PROTO_REMOTE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"

/** prometheus.ReadRequest.ResponseType. */
typedef enum { PS_READ_SAMPLES = 0, PS_READ_STREAMED_XOR_CHUNKS = 1 } ps_read_type_t;

/** prometheus.LabelMatcher.Type: the numbers are the wire's (and parser/selector.h's ps_match_op_t). */
enum { PS_READ_EQ = 0, PS_READ_NEQ = 1, PS_READ_RE = 2, PS_READ_NRE = 3 };

/** prometheus.Chunk.Encoding: only XOR is written. */
enum { PS_READ_CHUNK_XOR = 1 };

typedef struct ps_read_matcher {
    int type;                 /* PS_READ_EQ .. PS_READ_NRE */
    const char *name, *value; /* NUL-terminated copies */
    uint32_t nlen, vlen;
} ps_read_matcher_t;

typedef struct ps_read_hints {
    bool present;             /* the query carried ReadHints */
    int64_t step_ms, start_ms, end_ms, range_ms;
    const char *func;         /* "" when absent */
    uint32_t ngrouping;
    const char **grouping;
    bool by;
} ps_read_hints_t;

typedef struct ps_read_query {
    int64_t start_ms, end_ms; /* inclusive */
    uint32_t nmatchers;
    ps_read_matcher_t *matchers;
    ps_read_hints_t hints;
} ps_read_query_t;

typedef struct ps_read_request {
    uint32_t nqueries;
    ps_read_query_t *queries;
    uint32_t naccepted;
    int *accepted;            /* accepted_response_types as sent, unknown values included */
} ps_read_request_t;

typedef struct ps_read_limits {
    size_t max_uncompressed;  /* bytes the snappy header may announce; default 32 MiB (Prometheus'
                               * decodeReadLimit for the body) */
    uint32_t max_queries;     /* default 1,000 */
    uint32_t max_matchers;    /* per query; default 1,000 */
} ps_read_limits_t;

void ps_read_limits_default(ps_read_limits_t *l);

/**
 * Decodes a remote-read body into *out, everything from arena. The announced uncompressed length
 * is checked against lim->max_uncompressed (NULL: defaults) before anything is allocated. Errors
 * are PS_EINVAL or PS_ETOOBIG with a message saying what and where, e.g.
 * "queries[0].matchers[2].type: unknown matcher type 7 (EQ=0, NEQ=1, RE=2, NRE=3)" or
 * "protobuf: malformed prometheus.ReadRequest (uncompressed): queries[0].start_timestamp_ms: field 1
 * (start_timestamp_ms) has wire type 2 (length-delimited), expected 0 (varint)". Checked: matcher
 * types, names nonempty, names and values valid UTF-8 without NUL, the counts in lim. A query with
 * start > end is valid (it selects nothing, as in Prometheus). A failure leaves *out empty.
 */
int ps_read_request_decode(const void *body, size_t n, const ps_read_limits_t *lim, ps_arena_t *arena,
                           ps_read_request_t *out, ps_err_t *err);

/**
 * The response type to answer with, as Prometheus' NegotiateResponseType: the first of the
 * accepted types that is SAMPLES or STREAMED_XOR_CHUNKS; an empty list means SAMPLES. None known:
 * PS_EINVAL "server does not support any of the requested response types: [7 9]; supported:
 * [SAMPLES STREAMED_XOR_CHUNKS]".
 */
int ps_read_negotiate(const ps_read_request_t *req, ps_read_type_t *out, ps_err_t *err);

/** Encodes req as a remote-read body (snappy), appended to out; hints are written when present.
 *  Nothing is validated (tests build bad requests with it). */
void ps_read_request_encode(const ps_read_request_t *req, ps_buf_t *out);

/* ---- SAMPLES: prometheus.ReadResponse ---- */

/** Builds a ReadResponse: begin_result, add_series..., end_result per query, then finish. The
 *  uncompressed message grows in raw (about 11 + 9 bytes per sample, labels once per series). */
typedef struct ps_read_resp {
    ps_buf_t raw;
    size_t result_at;         /* offset of the open QueryResult's body in raw */
    bool open;
} ps_read_resp_t;

void ps_read_resp_init(ps_read_resp_t *r);
void ps_read_resp_dispose(ps_read_resp_t *r);
void ps_read_resp_begin_result(ps_read_resp_t *r);
/** One TimeSeries of the open result: labels as given (the caller sorts), samples in time order. */
void ps_read_resp_add_series(ps_read_resp_t *r, const ps_labels_t *ls, const ps_remote_sample_t *s, size_t n);
void ps_read_resp_end_result(ps_read_resp_t *r);
/** Makes room for n more bytes of message (when the caller knows how much is coming). */
static inline void ps_read_resp_reserve(ps_read_resp_t *r, size_t n) { ps_buf_reserve(&r->raw, n); }
/** Bytes of the uncompressed message so far. */
static inline size_t ps_read_resp_size(const ps_read_resp_t *r) { return r->raw.len; }
/** The uncompressed message (valid until the next change). */
static inline const uint8_t *ps_read_resp_bytes(const ps_read_resp_t *r) { return r->raw.data; }
/** Snappy-compresses the message (block format) and appends it to out. */
int ps_read_resp_finish(ps_read_resp_t *r, ps_buf_t *out, ps_err_t *err);

/* ---- STREAMED_XOR_CHUNKS: frames of prometheus.ChunkedReadResponse ---- */

/**
 * Writes the frames of series after series into out. A frame holds one series (labels and some of
 * its chunks) and is cut as Prometheus' StreamChunkedReadResponses cuts it: the budget is
 * max_frame_bytes minus the size of each Label message; every chunk added takes its Chunk
 * message's size off; the frame goes out once the budget is used up (<= 0) or the series ends. So
 * a frame exceeds max_frame_bytes by at most one chunk plus framing, and a series without chunks
 * gives no frame.
 */
typedef struct ps_read_stream {
    ps_buf_t *out;
    size_t max_frame;
    int64_t query_index;
    ps_buf_t labels;          /* the open series' Label fields, encoded */
    ps_buf_t chunks;          /* its Chunk fields not yet sent */
    ps_buf_t frame;           /* scratch: the data of the frame being sent */
    int64_t budget, left;
    uint64_t nframes;
} ps_read_stream_t;

void ps_read_stream_init(ps_read_stream_t *s, ps_buf_t *out, size_t max_frame_bytes);
void ps_read_stream_dispose(ps_read_stream_t *s);
/** Starts a series of query query_index (sends what is left of the previous one first). */
void ps_read_stream_series(ps_read_stream_t *s, int64_t query_index, const ps_labels_t *ls);
/** Adds one XOR chunk (min_t, max_t: its first and last sample times, ms; data: its bytes). */
void ps_read_stream_chunk(ps_read_stream_t *s, int64_t min_t, int64_t max_t, const uint8_t *data, size_t n);
/** Sends what is left of the open series. */
void ps_read_stream_flush(ps_read_stream_t *s);

/* ---- decoding the answers (tests, tools, a future remote-read client) ---- */

typedef struct ps_read_series {
    ps_labels_t labels;       /* as sent, unvalidated */
    uint32_t nsamples;
    ps_remote_sample_t *samples;
} ps_read_series_t;

typedef struct ps_read_result {
    uint32_t nseries;
    ps_read_series_t *series;
} ps_read_result_t;

/** Decodes a SAMPLES answer (snappy ReadResponse); histograms are skipped. */
int ps_read_response_decode(const void *body, size_t n, size_t max_uncompressed, ps_arena_t *arena,
                            ps_read_result_t **results, uint32_t *nresults, ps_err_t *err);

typedef struct ps_read_chunk {
    int64_t min_t, max_t;
    int type;
    const uint8_t *data;      /* from the arena */
    size_t len;
} ps_read_chunk_t;

typedef struct ps_read_frame {
    int64_t query_index;
    uint32_t nseries;
    struct ps_read_frame_series {
        ps_labels_t labels;
        uint32_t nchunks;
        ps_read_chunk_t *chunks;
    } *series;
} ps_read_frame_t;

/** Decodes the frame at the start of p[0..n): *used gets its length. PS_EINVAL on a truncated
 *  frame, a CRC mismatch ("frame at byte B: CRC32C 0x... does not match 0x...") or bad protobuf. */
int ps_read_frame_decode(const void *p, size_t n, size_t *used, ps_arena_t *arena, ps_read_frame_t *out,
                         ps_err_t *err);

#endif
