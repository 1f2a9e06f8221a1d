/*
 * remote_read.h - answering Prometheus remote read (POST /api/v1/read): per query of a decoded
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
 * Limits (Prometheus' flags and defaults): sample_limit samples per SAMPLES query ("exceeded sample
 * limit (N)", PS_ELIMIT, which Prometheus answers with 400), counted in a first pass over the
 * query's series before anything is encoded, so a read over everything fails at the limit without
 * growing an answer. Streamed answers have no sample limit, as in Prometheus (read_handler.go: only
 * the frame size and the concurrency limit apply there): they are made a piece at a time by a
 * ps_read_cursor_t, so their memory is bounded by the frame size, not by the answer. max_series
 * series per query (--query.max-series, PS_ELIMIT from ps_query_select) in both modes. The
 * concurrency limit is the HTTP handler's.
 *
 * Under a query budget (core/budget.h, installed by the caller): the selection's matchers charge
 * it and check it (PS_ELIMIT naming the matcher, PS_ETIMEOUT, PS_ECANCELED), and each series is a
 * check too, so a read stops at its deadline or when its client goes away.
 */
#ifndef PS_QUERY_REMOTE_READ_H
#define PS_QUERY_REMOTE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/remote_read.h"
#include "storage/store.h"

typedef struct ps_read_opts {
    uint64_t sample_limit;  /* samples per SAMPLES query, 0 = no limit (default 50,000,000) */
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
 * On an error out may hold part of an answer: the caller discards it. stats is optional. A
 * streamed answer is made whole here (ps_read_cursor_next without a pause): for tests and tools;
 * the HTTP handler streams it through a cursor.
 */
int ps_query_read(ps_reader_t *r, const ps_read_request_t *req, ps_read_type_t type, const ps_read_opts_t *o,
                  ps_buf_t *out, ps_read_stats_t *stats, ps_err_t *err);

/* ---- STREAMED_XOR_CHUNKS a piece at a time ---- */

typedef struct ps_read_cursor ps_read_cursor_t;

/**
 * A cursor over the streamed answer to req, read through r. Builds every query's selector at
 * once, so a bad matcher in any query fails here (PS_EINVAL "queries[i]: ..."), before anything
 * is sent. r and req are borrowed: both must stay valid (the read snapshot open) until
 * ps_read_cursor_free. o is copied (NULL: defaults).
 */
int ps_read_cursor_new(ps_reader_t *r, const ps_read_request_t *req, const ps_read_opts_t *o,
                       ps_read_cursor_t **out, ps_err_t *err);

/**
 * Appends the next frames of the answer to out until out holds at least want bytes or the answer
 * ends (*done then true; later calls append nothing). It stops only after a whole chunk, so out may
 * pass want by up to one frame (max_frame_bytes plus one chunk and framing). The frames, put
 * together, are byte for byte those of ps_query_read, whatever the want of each call. Errors (a
 * query's series over max_series, storage errors) leave the answer incomplete: the caller must
 * not send it as whole.
 */
int ps_read_cursor_next(ps_read_cursor_t *c, ps_buf_t *out, size_t want, bool *done, ps_err_t *err);

/** What the answer held so far. */
const ps_read_stats_t *ps_read_cursor_stats(const ps_read_cursor_t *c);

/** Frees c (NULL: nothing). */
void ps_read_cursor_free(ps_read_cursor_t *c);

#endif
