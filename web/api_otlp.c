/*
 * api_otlp.c - POST /v1development/profiles: OTLP/HTTP profiles (the OpenTelemetry eBPF profiler's
 * and the Collector's otlphttp exporter's request). Translates only: Content-Type and
 * Content-Encoding, then the export (ingest/otlp.c: decode, convert, write, durable), then the
 * answer as opentelemetry-proto's docs/specification.md says (docs/protocols.md "OTLP profiles"):
 *
 *  - 200 with an ExportProfilesServiceResponse in the request's encoding (application/x-protobuf
 *    or application/json), partial_success set when profiles were refused;
 *  - a 4xx/5xx with a google.rpc.Status {code, message} in the request's encoding: 400 bad data
 *    (not retried), 413 past a size limit, 415 another Content-Type or Content-Encoding, 429 the
 *    write queue or the decompression budget is full and 503 shutting down (both retried, with
 *    Retry-After), 507 disk full.
 */
#include <stdatomic.h>
#include <string.h>
#include <strings.h>

#include "core/log.h"
#include "ingest/ingest.h"
#include "internal.h"
#include "proto/gzip.h"
#include "proto/otlp.h"

/* gRPC status codes of the Status body (OTLP clients only log them) */
enum {
    G_INVALID_ARGUMENT = 3,
    G_PERMISSION_DENIED = 7,
    G_RESOURCE_EXHAUSTED = 8,
    G_INTERNAL = 13,
    G_UNAVAILABLE = 14,
    G_UNAUTHENTICATED = 16
};

#define OTLP_PATH "/v1development/profiles"


typedef struct otlp_call {
    ps_task_t *t;
    int codec;
    int code;
    const char *msg;
    uint8_t *resp;
    size_t resp_len;
    size_t body_len;
    uint64_t profiles, samples;
} otlp_call_t;

static int grpc_code(int code)
{
    switch (code) {
    case PS_EINVAL: case PS_EOUTOFORDER: case PS_ECONFLICT: case PS_EUNSUPPORTED: return G_INVALID_ARGUMENT;
    case PS_ETOOBIG: case PS_ENOSPACE: case PS_EOVERLOAD: return G_RESOURCE_EXHAUSTED;
    case PS_EUNAVAIL: return G_UNAVAILABLE;
    default: return G_INTERNAL;
    }
}

static void send_status(ps_answer_t *a, int codec, int status, int code, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_otlp_status(codec, grpc_code(code), msg, &b);
    ps_answer_set(a, status, codec == PS_OTLP_JSON ? "application/json" : "application/x-protobuf", b.data, b.len);
    ps_buf_dispose(&b);
}

void ps_api_otlp_fail(ps_answer_t *a, int code, const char *msg)
{
    send_status(a, PS_OTLP_PROTO, ps_err_http_status(code), code, msg);
}

bool ps_api_otlp_is_path(h2o_iovec_t path)
{
    return h2o_memis(path.base, path.len, H2O_STRLIT(OTLP_PATH));
}

void ps_api_otlp_refuse(h2o_req_t *req, int status, const char *msg)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
    int codec = i != -1 && req->headers.entries[i].value.len >= 16 &&
                        h2o_lcstris(req->headers.entries[i].value.base, 16, H2O_STRLIT("application/json"))
                    ? PS_OTLP_JSON
                    : PS_OTLP_PROTO;
    ps_buf_t b = PS_BUF_INIT;
    ps_otlp_status(codec, status == 401 ? G_UNAUTHENTICATED : status == 403 ? G_PERMISSION_DENIED : G_UNAVAILABLE, msg,
                   &b);
    ps_http_send(req, status, codec == PS_OTLP_JSON ? "application/json" : "application/x-protobuf", b.data, b.len);
    ps_buf_dispose(&b);
}

/* on the loop: the answer */
static void on_finish(ps_task_t *t)
{
    otlp_call_t *c = t->finish_arg;
    if (c->code != 0) {
        ps_log_debug("otlp push rejected", "err=%s", ps_log_q(c->msg));
        send_status(&t->ans, c->codec, ps_err_http_status(c->code), c->code, c->msg);
        return;
    }
    ps_ingest_count(c->profiles, c->samples, c->body_len);
    ps_task_send(t, 200, c->codec == PS_OTLP_JSON ? "application/json" : "application/x-protobuf", c->resp,
                 c->resp_len);
}

/* the export's answer (the writer thread, or this run's): kept for on_finish */
static void on_done(void *ctx, int code, const uint8_t *resp, size_t resp_len, const char *msg,
                    const ps_otlp_result_t *res)
{
    otlp_call_t *c = ctx;
    ps_arena_t *arena = c->t->arena; /* not in use by the run any more: it waits or has returned */
    c->code = code;
    if (code != 0) {
        c->msg = ps_arena_strndup(arena, msg, strlen(msg));
    } else {
        c->resp = ps_arena_alloc(arena, resp_len + 1);
        if (resp_len)
            memcpy(c->resp, resp, resp_len);
        c->resp_len = resp_len;
        for (size_t i = 0; i < res->napps; i++)
            if (!res->counted[res->apps[i].src]) { /* stored (or an identical duplicate) */
                c->profiles++;
                c->samples += res->apps[i].app->profile->nsamples;
            }
    }
    ps_task_release(c->t);
}

/* token a of a header value (before ';', trimmed) equals s, case-insensitive */
static bool token_is(const char *v, size_t n, const char *s)
{
    while (n > 0 && (*v == ' ' || *v == '\t'))
        v++, n--;
    const char *semi = memchr(v, ';', n);
    if (semi != NULL)
        n = (size_t)(semi - v);
    while (n > 0 && (v[n - 1] == ' ' || v[n - 1] == '\t'))
        n--;
    return n == strlen(s) && strncasecmp(v, s, n) == 0;
}

int ps_api_otlp_profiles(ps_task_t *t)
{
    ps_server_t *s = t->srv;
    size_t ctl = 0, cel = 0;
    const char *ct = ps_task_header(t, "content-type", &ctl), *ce = ps_task_header(t, "content-encoding", &cel);
    int codec;
    if (ct != NULL && (token_is(ct, ctl, "application/x-protobuf") || token_is(ct, ctl, "application/protobuf")))
        codec = PS_OTLP_PROTO;
    else if (ct != NULL && token_is(ct, ctl, "application/json"))
        codec = PS_OTLP_JSON;
    else {
        char msg[200];
        snprintf(msg, sizeof(msg), "Content-Type \"%.*s\" is not supported: send application/x-protobuf or application/json",
                 (int)(ctl > 64 ? 64 : ctl), ct != NULL ? ct : "");
        send_status(&t->ans, PS_OTLP_PROTO, 415, PS_EUNSUPPORTED, msg);
        return 0;
    }
    if (atomic_load(&s->stopping)) {
        send_status(&t->ans, codec, 503, PS_EUNAVAIL, "server is shutting down");
        return 0;
    }
    const uint8_t *body = (const uint8_t *)(t->body != NULL ? t->body : "");
    size_t n = t->body != NULL ? t->body_len : 0;
    size_t max = s->opts.limits.max_inflated ? s->opts.limits.max_inflated : ((size_t)64 << 20);
    if (ce != NULL && cel > 0 && !token_is(ce, cel, "identity")) {
        if (!token_is(ce, cel, "gzip")) {
            char msg[200];
            snprintf(msg, sizeof(msg), "Content-Encoding \"%.*s\" is not supported: send gzip or none",
                     (int)(cel > 32 ? 32 : cel), ce);
            send_status(&t->ans, codec, 415, PS_EUNSUPPORTED, msg);
            return 0;
        }
        ps_err_t err;
        if (ps_gunzip(body, n, max, t->arena, &body, &n, &err) != 0) {
            char msg[600];
            if (err.code == PS_ETOOBIG)
                snprintf(msg, sizeof(msg), "request body inflates to more than %zu bytes (--max-inflated-size)", max);
            else
                snprintf(msg, sizeof(msg), "request body (Content-Encoding: gzip): %.400s", err.msg);
            /* the decompression budget (PS_EUNAVAIL) is a retryable overload: 429 */
            int code = err.code == PS_EUNAVAIL ? PS_EOVERLOAD : err.code;
            send_status(&t->ans, codec, ps_err_http_status(code), code, err.code == PS_EUNAVAIL ? err.msg : msg);
            return 0;
        }
    }
    otlp_call_t *c = ps_arena_calloc(t->arena, 1, sizeof(*c));
    c->t = t;
    c->codec = codec;
    c->body_len = t->body_len;
    t->finish = on_finish;
    t->finish_arg = c;
    ps_task_hold(t); /* released by on_done */
    ps_ingest_otlp(s->writer, codec, body, n, ps_ingest_otlp_budget(n, s->opts.limits.max_inflated),
                   &s->opts.limits, t->arena, on_done, c);
    return 0;
}
