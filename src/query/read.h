/*
 * read.h - answering Prometheus remote read (POST /api/v1/read): per query of a decoded
 * ReadRequest, the series matching its matchers (all four types, built with
 * ps_selector_from_specs and selected by ps_query_select) with data in [start_ms, end_ms],
 * sorted by labels, and
 *  - SAMPLES: their samples in [start_ms, end_ms] (float samples, or a profile series' totals
 *    at its profile times) as one ReadResponse, snappy-compressed;
 *  - STREAMED_XOR_CHUNKS: their chunks as frames of ChunkedReadResponse: a float series' stored
 *    XOR chunks as they are (whole chunks overlapping the range, as Prometheus sends them), a
 *    profile series' totals in the range made into XOR chunks here, PS_XOR_SAMPLES_PER_CHUNK
 *    samples each; frames cut at max_frame_bytes as Prometheus cuts them.
 *
 * As Prometheus' TSDB does: a query with hints is trimmed to [hints.start_ms, hints.end_ms] (here:
 * intersected with the query's range; Prometheus' clients send the same range in both), and a
 * SAMPLES query with hints func "series" gets its series without samples.
 *
 * Limits (Prometheus' flags and defaults): sample_limit samples per query ("exceeded sample limit
 * (N)", PS_ELIMIT, which Prometheus answers with 400); for SAMPLES counted in a first pass over the
 * query's series before anything is encoded, so a read over everything fails at the limit without
 * growing an answer; streamed answers (1-2 bytes a sample) count as they are made; the same limit bounds
 * streamed reads, whose answer is also built in memory (Prometheus streams them unlimited).
 * max_series series per query (--query.max-series, PS_ELIMIT from ps_query_select). The
 * concurrency limit is the HTTP handler's.
 */
#ifndef PS_QUERY_READ_H
#define PS_QUERY_READ_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/remote_read.h"
#include "storage/store.h"

typedef struct ps_read_opts {
    uint64_t sample_limit;  /* samples per query, 0 = no limit (default 50,000,000) */
    size_t max_frame_bytes; /* streamed frames (default 1,048,576) */
    uint32_t max_series;    /* series per query (default 10,000, --query.max-series) */
} ps_read_opts_t;

void ps_read_opts_default(ps_read_opts_t *o);

/** What an answer held, for logs and metrics. */
typedef struct ps_read_stats {
    uint64_t series, samples, chunks, frames;
} ps_read_stats_t;

/**
 * Answers req as type, appending the body (snappy ReadResponse, or frames) to out. Errors: a bad
 * regex PS_EINVAL "queries[0].matchers[2]: error parsing regexp ..."; a selector whose every
 * matcher matches "" PS_EINVAL; the limits PS_ELIMIT; storage errors as the reader gives them.
 * On an error out may hold part of an answer: the caller discards it. stats is optional.
 */
int ps_query_read(ps_reader_t *r, const ps_read_request_t *req, ps_read_type_t type, const ps_read_opts_t *o,
                  ps_buf_t *out, ps_read_stats_t *stats, ps_err_t *err);

#endif
