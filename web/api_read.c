/*
 * api_read.c - POST /api/v1/read: Prometheus remote read (APIS.md §2.3). Decodes the snappy
 * ReadRequest (proto/remote_read.h), negotiates the response type as Prometheus does, has
 * src/query/read.h answer it, and sends
 *   SAMPLES:             Content-Type: application/x-protobuf, Content-Encoding: snappy;
 *   STREAMED_XOR_CHUNKS: Content-Type: application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse.
 * Errors are text/plain, as Prometheus' read handler answers them (its client prints the body):
 * 400 for a bad request or an exceeded limit ("exceeded sample limit (N)", as Prometheus answers;
 * too many series likewise), 413 for a body announcing more than 32 MiB, 503 over
 * --storage.remote.read-concurrent-limit, 500 for our own failures.
 */
#include <stdio.h>
#include <string.h>

#include "core/log.h"
#include "http.h"
#include "internal.h"
#include "proto/remote_read.h"
#include "query/read.h"

#define STREAMED_TYPE "application/x-streamed-protobuf; proto=prometheus.ChunkedReadResponse"

static void send_error(h2o_req_t *req, int status, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_printf(&b, "%s\n", msg);
    ps_http_send(req, status, "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
}

static int status_of(int code)
{
    switch (code) {
    case PS_EINVAL: return 400;
    case PS_ETOOBIG: return 413;
    case PS_ELIMIT: return 400; /* Prometheus: "exceeded sample limit" is a 400; series too */
    case PS_EUNAVAIL: return 503;
    default: return ps_err_http_status(code);
    }
}

/* The answer to one read: 0 with the body in out and its type in *type, or an HTTP status with
 * the message in err. */
static int answer(ps_server_t *s, h2o_req_t *req, ps_arena_t *arena, ps_buf_t *out, ps_read_type_t *type,
                  ps_err_t *err)
{
    ps_reader_t *r = NULL;
    ps_read_request_t rr;
    ps_read_stats_t st;
    int rc;

    ssize_t ce = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_ENCODING, -1);
    if (ce >= 0 && !h2o_lcstris(req->headers.entries[ce].value.base, req->headers.entries[ce].value.len,
                                H2O_STRLIT("snappy"))) {
        h2o_iovec_t v = req->headers.entries[ce].value;
        ps_err_set(err, PS_EINVAL, "Content-Encoding \"%.*s\" is not supported: a remote-read body is snappy "
                   "(block format)", (int)(v.len > 32 ? 32 : v.len), v.base);
        return 400;
    }
    ps_read_limits_t lim;
    ps_read_limits_default(&lim);
    if ((rc = ps_read_request_decode(req->entity.base, req->entity.len, &lim, arena, &rr, err)) != 0 ||
        (rc = ps_read_negotiate(&rr, type, err)) != 0 || (rc = ps_reader_begin(s->store, &r, err)) != 0)
        return status_of(err->code ? err->code : rc);
    rc = ps_query_read(r, &rr, *type, &s->opts.read, out, &st, err);
    ps_reader_end(r);
    if (rc != 0)
        return status_of(err->code ? err->code : rc);
    ps_log_debug("remote read", "queries=%u type=%s series=%llu samples=%llu chunks=%llu frames=%llu bytes=%zu",
                 rr.nqueries, *type == PS_READ_SAMPLES ? "samples" : "streamed", (unsigned long long)st.series,
                 (unsigned long long)st.samples, (unsigned long long)st.chunks, (unsigned long long)st.frames,
                 out->len);
    return 0;
}

int ps_api_read(h2o_req_t *req)
{
    ps_server_t *s = ps_http_server(req);
    ps_arena_t arena = PS_ARENA_INIT;
    ps_buf_t out = PS_BUF_INIT;
    ps_read_type_t type = PS_READ_SAMPLES;
    ps_err_t err;
    int status;

    ps_err_clear(&err);
    unsigned inflight = atomic_fetch_add(&s->reads_inflight, 1) + 1;
    if (s->opts.read_concurrency != 0 && inflight > s->opts.read_concurrency) {
        ps_err_set(&err, PS_EUNAVAIL, "too many concurrent remote reads (the limit is %u, "
                   "--storage.remote.read-concurrent-limit); retry later", s->opts.read_concurrency);
        status = 503;
    } else {
        status = answer(s, req, &arena, &out, &type, &err);
    }
    /* done reading before the answer goes out: a client's next read may arrive on another thread
     * before this one returns */
    atomic_fetch_sub(&s->reads_inflight, 1);
    if (status >= 500 && status != 503)
        ps_log_error("remote read failed", "err=%s", ps_log_q(err.msg));
    if (status != 0) {
        send_error(req, status, err.msg[0] ? err.msg : ps_strerror(err.code));
    } else if (type == PS_READ_SAMPLES) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL, H2O_STRLIT("snappy"));
        ps_http_send(req, 200, "application/x-protobuf", out.data, out.len);
    } else {
        ps_http_send(req, 200, STREAMED_TYPE, out.data, out.len);
    }
    ps_buf_dispose(&out);
    ps_arena_dispose(&arena);
    return 0;
}
