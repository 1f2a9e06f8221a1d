/*
 * server.c - the gRPC listener (grpc.h): one epoll loop thread owning the sockets, TLS and the
 * nghttp2 sessions; worker threads running the methods. The loop never blocks: it reads, feeds
 * nghttp2 (nghttp2_session_mem_recv), queues complete calls to the workers, and writes what
 * nghttp2 has to send (nghttp2_session_mem_send) as the socket takes it.
 *
 * What bounds a client (docs/api.md, "gRPC"):
 *   - connections: opts.max_connections (closed at accept past it); 10 s for the TLS handshake and
 *     the HTTP/2 preface; opts.idle_timeout without a byte while no call of the connection runs;
 *   - streams: SETTINGS_MAX_CONCURRENT_STREAMS opts.max_streams (nghttp2 refuses more with
 *     REFUSED_STREAM); resets per connection per 10 s opts.max_resets (rapid reset: GOAWAY
 *     ENHANCE_YOUR_CALM) on top of nghttp2's own reset rate limit;
 *   - headers: opts.max_header_list bytes per request (counted here, the stream reset past it),
 *     nghttp2's 64 KiB per field and its bound on CONTINUATION frames;
 *   - SETTINGS, PING and other frames that ask for an ACK: nghttp2_option_set_max_outbound_ack
 *     (1000 queued ACKs, then the session ends), 32 entries per SETTINGS frame;
 *   - flow control: nghttp2 checks window overflows (FLOW_CONTROL_ERROR); what is buffered to send
 *     stays at 64 KiB per connection past which nothing more is produced until the socket drains,
 *     so a client that never reads holds one answer at most per stream;
 *   - messages: opts.max_message per request message, refused as soon as its length prefix shows
 *     it, compressed or after gunzip (proto/gzip.h, under the process-wide decompression budget);
 *     opts.max_buffered bytes of requests held over all calls; opts.max_queued calls waiting.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <nghttp2/nghttp2.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

#include "auth/auth.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "grpc.h"
#include "proto/gzip.h"

#define HANDSHAKE_TIMEOUT (10 * PS_NS_PER_S)
#define STOP_FLUSH_TIMEOUT (10 * PS_NS_PER_S)
#define RESET_WINDOW (10 * PS_NS_PER_S)
#define LINGER_TIMEOUT (2 * PS_NS_PER_S) /* a lingering close's bound (conn_linger) */
#define OUT_HIGH 65536 /* bytes buffered to send past which nghttp2 is not asked for more */
#define MAX_AUTH 4096  /* an Authorization value longer than this is malformed */
#define MSG_MAX 512

typedef struct sec {
    atomic_int refs;
    SSL_CTX *ssl; /* NULL: h2c */
    ps_auth_t *auth;
} sec_t;

typedef struct method {
    char *path;
    size_t pathlen;
    unsigned scope;
    ps_grpc_unary_fn fn;
    void *ctx;
} method_t;

struct stream;
struct ps_grpc_conn;

typedef struct job {
    struct job *next;
    ps_grpc_t *g;
    struct ps_grpc_conn *c;
    struct stream *s; /* loop-owned: NULL once the stream is gone */
    const method_t *m;
    uint8_t *req;
    size_t n, counted;
    bool gzip;
    char *auth; /* an Authorization value bcrypt must check on the worker, or NULL */
    size_t authlen;
    sec_t *sec;
    unsigned scopes;
    int64_t deadline;
    atomic_bool cancelled;
    /* the result */
    int status;
    char msg[MSG_MAX];
    ps_buf_t resp;
} job_t;

typedef struct stream {
    struct stream *next, *prev;
    int32_t id;
    struct ps_grpc_conn *c;
    char path[256];
    size_t pathlen;
    bool path_long, is_post, ct_ok, ct_seen, headers_done, req_done, answered, rst_after;
    char ct[64];
    char enc[32];
    size_t enclen;
    bool enc_seen;
    char timeout[32];
    bool timeout_seen, timeout_long;
    char *auth;
    size_t authlen;
    bool auth_long;
    size_t hdr_bytes;
    int64_t deadline;
    const method_t *m;
    unsigned scopes;
    ps_buf_t body;
    size_t counted; /* of body, in g->buffered */
    job_t *job;
    /* the answer */
    ps_buf_t resp;
    size_t respoff;
    int status;
    char msg[MSG_MAX];
} stream_t;

struct ps_grpc_conn {
    struct ps_grpc_conn *next, *prev;
    ps_grpc_t *g;
    int fd;
    SSL *ssl;
    bool handshaken, closed, goaway_sent, got_frame;
    nghttp2_session *h2;
    ps_buf_t out;
    size_t outoff;
    ps_buf_t *sink; /* inline mode: where sent bytes go */
    int64_t created, last_read;
    int64_t linger_until; /* closed with fd still open: lingering until then (conn_linger) */
    uint32_t inflight; /* jobs out on the workers */
    uint32_t resets;
    int64_t reset_window;
    uint32_t events;
    stream_t *streams;
};
typedef struct ps_grpc_conn conn_t;

struct ps_grpc {
    ps_grpc_opts_t o;
    bool inline_mode;
    int lfd, port, ep, efd;
    pthread_t loop, *workers;
    bool started;
    method_t *methods;
    uint32_t nmethods;
    pthread_mutex_t sec_mu;
    sec_t *sec;
    bool tls_fixed, tls_on;
    conn_t *conns;
    uint32_t nconns;
    size_t buffered;
    atomic_int stopping; /* 1: begin_shutdown, 2: stop */
    bool listener_closed;
    int64_t stop_at;
    /* the workers' queue and the answers they hand back */
    pthread_mutex_t qmu;
    pthread_cond_t qcv;
    job_t *qhead, *qtail, *done;
    uint32_t queued;
    uint32_t jobs_out; /* loop-only */
    bool workers_quit;
    _Atomic uint64_t counts[17];
    ps_gauge_t open;
    ps_counter_t refused, reset_floods;
};

static const char *const status_names[17] = {
    "OK", "CANCELLED", "UNKNOWN", "INVALID_ARGUMENT", "DEADLINE_EXCEEDED", "NOT_FOUND",
    "ALREADY_EXISTS", "PERMISSION_DENIED", "RESOURCE_EXHAUSTED", "FAILED_PRECONDITION", "ABORTED",
    "OUT_OF_RANGE", "UNIMPLEMENTED", "INTERNAL", "UNAVAILABLE", "DATA_LOSS", "UNAUTHENTICATED"};

const char *ps_grpc_status_name(int status)
{
    return status >= 0 && status < 17 ? status_names[status] : "UNKNOWN";
}

ps_grpc_status_t ps_grpc_status_of(int c)
{
    switch (c) {
    case PS_OK: return PS_GRPC_OK;
    case PS_EINVAL: case PS_ECONFLICT: case PS_EOUTOFORDER: case PS_EUNSUPPORTED: return PS_GRPC_INVALID_ARGUMENT;
    case PS_ETOOBIG: case PS_ENOSPACE: case PS_ELIMIT: return PS_GRPC_RESOURCE_EXHAUSTED;
    case PS_ENOTFOUND: return PS_GRPC_NOT_FOUND;
    case PS_EUNAVAIL: case PS_EOVERLOAD: return PS_GRPC_UNAVAILABLE;
    case PS_ETIMEOUT: return PS_GRPC_DEADLINE_EXCEEDED;
    case PS_ECANCELED: return PS_GRPC_CANCELLED;
    case PS_ECORRUPT: return PS_GRPC_DATA_LOSS;
    default: return PS_GRPC_INTERNAL;
    }
}

void ps_grpc_counts(ps_grpc_t *g, uint64_t out[17])
{
    for (int i = 0; i < 17; i++)
        out[i] = atomic_load(&g->counts[i]);
}

static const char *const by_code[] = {"code", NULL};
static const ps_metric_t m_calls = {"profstore_grpc_calls_total", PS_COUNTER,
                                    "gRPC calls answered, by status (a call its client reset: CANCELLED).", by_code},
                         m_open = {"profstore_grpc_connections", PS_GAUGE, "gRPC connections open.", NULL},
                         m_refused = {"profstore_grpc_connections_refused_total", PS_COUNTER,
                                      "gRPC connections closed at accept: --grpc.max-connections were open.", NULL},
                         m_floods = {"profstore_grpc_reset_flood_total", PS_COUNTER,
                                     "gRPC connections ended (GOAWAY ENHANCE_YOUR_CALM) for resetting too many streams.",
                                     NULL};

void ps_grpc_metrics(ps_grpc_t *g, ps_buf_t *b)
{
    ps_metric_head(b, &m_calls);
    for (int i = 0; i < 17; i++)
        ps_metric_u64(b, &m_calls, NULL, &status_names[i], atomic_load(&g->counts[i]));
    ps_metric_write_u64(b, &m_open, (uint64_t)ps_gauge_get(&g->open));
    ps_metric_write_u64(b, &m_refused, ps_counter_get(&g->refused));
    ps_metric_write_u64(b, &m_floods, ps_counter_get(&g->reset_floods));
}

/* ---- web configuration ------------------------------------------------------------------------ */

static void sec_release(sec_t *s)
{
    if (s != NULL && atomic_fetch_sub(&s->refs, 1) == 1) {
        SSL_CTX_free(s->ssl);
        ps_auth_free(s->auth);
        free(s);
    }
}

static sec_t *sec_acquire(ps_grpc_t *g)
{
    pthread_mutex_lock(&g->sec_mu);
    sec_t *s = g->sec;
    if (s != NULL)
        atomic_fetch_add(&s->refs, 1);
    pthread_mutex_unlock(&g->sec_mu);
    return s;
}

/* ALPN: h2 when offered; a client offering no h2 goes on without ALPN (its preface decides) */
static int on_alpn(SSL *ssl, const unsigned char **out, unsigned char *outlen, const unsigned char *in,
                   unsigned int inlen, void *arg)
{
    for (unsigned i = 0; i < inlen;) {
        unsigned l = in[i];
        if (i + 1 + l > inlen)
            break;
        if (l == 2 && memcmp(in + i + 1, "h2", 2) == 0) {
            *out = in + i + 1;
            *outlen = 2;
            return SSL_TLSEXT_ERR_OK;
        }
        i += 1 + l;
    }
    return SSL_TLSEXT_ERR_NOACK;
}

/* A TLS context as the main port's (the same file, the same rules), serving h2 by ALPN. */
static SSL_CTX *make_ssl(const ps_webconfig_t *wc, ps_err_t *err)
{
    SSL_CTX *ctx = ps_webconfig_ssl_ctx(wc, "profstore-grpc", err);
    if (ctx == NULL)
        return NULL;
    SSL_CTX_set_mode(ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
    SSL_CTX_set_alpn_select_cb(ctx, on_alpn, NULL);
    return ctx;
}

int ps_grpc_web_config(ps_grpc_t *g, const ps_webconfig_t *wc, ps_err_t *err)
{
    bool tls = wc != NULL && wc->tls.enabled;
    pthread_mutex_lock(&g->sec_mu);
    bool fixed = g->tls_fixed, was = g->tls_on;
    pthread_mutex_unlock(&g->sec_mu);
    if (fixed && tls != was)
        return ps_err_set(err, PS_EINVAL, "%s: a reload cannot turn TLS %s on the gRPC listener: restart profstore",
                          wc != NULL ? wc->path : "--web.config.file", tls ? "on" : "off");
    sec_t *s = ps_xcalloc(1, sizeof(*s));
    atomic_init(&s->refs, 1);
    if (tls && (s->ssl = make_ssl(wc, err)) == NULL) {
        free(s);
        return err != NULL ? err->code : PS_EINVAL;
    }
    s->auth = wc != NULL ? ps_auth_new(wc) : NULL;
    pthread_mutex_lock(&g->sec_mu);
    sec_t *old = g->sec;
    g->sec = s;
    g->tls_fixed = true;
    g->tls_on = tls;
    pthread_mutex_unlock(&g->sec_mu);
    sec_release(old);
    return 0;
}

/* ---- the method table ------------------------------------------------------------------------- */

static const method_t *find_method(ps_grpc_t *g, const char *p, size_t n)
{
    for (uint32_t i = 0; i < g->nmethods; i++)
        if (g->methods[i].pathlen == n && memcmp(g->methods[i].path, p, n) == 0)
            return &g->methods[i];
    return NULL;
}

/* whether some method's service is svc (n bytes) */
static bool has_service(ps_grpc_t *g, const char *svc, size_t n)
{
    for (uint32_t i = 0; i < g->nmethods; i++) {
        const char *p = g->methods[i].path + 1, *slash = strchr(p, '/');
        if ((size_t)(slash - p) == n && memcmp(p, svc, n) == 0)
            return true;
    }
    return false;
}

int ps_grpc_register(ps_grpc_t *g, const ps_grpc_method_t *m, ps_err_t *err)
{
    const char *p = m->path;
    const char *slash = p != NULL && p[0] == '/' ? strchr(p + 1, '/') : NULL;
    if (slash == NULL || slash == p + 1 || slash[1] == 0 || strchr(slash + 1, '/') != NULL || m->fn == NULL)
        return ps_err_set(err, PS_EINVAL, "gRPC method \"%s\": not /package.Service/Method", p ? p : "");
    if (find_method(g, p, strlen(p)) != NULL)
        return ps_err_set(err, PS_EINVAL, "gRPC method %s registered twice", p);
    g->methods = ps_xrealloc(g->methods, (g->nmethods + 1) * sizeof(*g->methods));
    g->methods[g->nmethods++] =
        (method_t){.path = ps_xstrndup(p, strlen(p)), .pathlen = strlen(p), .scope = m->scope, .fn = m->fn, .ctx = m->ctx};
    return 0;
}

/* grpc.health.v1.HealthCheckRequest {string service = 1;} -> HealthCheckResponse {ServingStatus
 * status = 1;} with SERVING = 1, NOT_SERVING = 2 (grpc/grpc doc/health-checking.md) */
static ps_grpc_status_t health_check(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n,
                                     ps_buf_t *resp, char *msg, size_t msgsize)
{
    ps_grpc_t *g = ctx;
    const uint8_t *svc = NULL;
    size_t svclen = 0;
    for (size_t i = 0; i < n;) {
        uint64_t key = 0;
        int shift = 0;
        for (;;) { /* a varint of at most 10 bytes */
            if (i >= n || shift > 63)
                goto Bad;
            key |= (uint64_t)(req[i] & 0x7f) << shift;
            shift += 7;
            if (!(req[i++] & 0x80))
                break;
        }
        unsigned wt = key & 7;
        uint64_t len = 0;
        if (key >> 3 == 0 || key >> 3 > 0x1fffffff)
            goto Bad; /* field numbers are 1 .. 2^29-1 */
        if (wt == 0 || wt == 2) {
            shift = 0;
            for (;;) {
                if (i >= n || shift > 63)
                    goto Bad;
                len |= (uint64_t)(req[i] & 0x7f) << shift;
                shift += 7;
                if (!(req[i++] & 0x80))
                    break;
            }
            if (wt == 0)
                continue;
        } else if (wt == 1 || wt == 5) {
            len = wt == 1 ? 8 : 4;
        } else {
            goto Bad;
        }
        if (len > n - i)
            goto Bad;
        if (key >> 3 == 1 && wt == 2) {
            svc = req + i;
            svclen = len;
        }
        i += len;
    }
    if (svclen > 0 && !has_service(g, (const char *)svc, svclen)) {
        snprintf(msg, msgsize, "unknown service %.*s", (int)(svclen > 200 ? 200 : svclen), (const char *)svc);
        return PS_GRPC_NOT_FOUND;
    }
    ps_buf_putc(resp, 0x08);
    ps_buf_putc(resp, atomic_load(&g->stopping) ? 2 : 1);
    return PS_GRPC_OK;
Bad:
    snprintf(msg, msgsize, "grpc: error unmarshalling request: not a grpc.health.v1.HealthCheckRequest");
    return PS_GRPC_INTERNAL;
}

ps_grpc_status_t ps_grpc_unimplemented(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n,
                                       ps_buf_t *resp, char *msg, size_t msgsize)
{
    snprintf(msg, msgsize, "%s", ctx != NULL ? (const char *)ctx : "not implemented");
    return PS_GRPC_UNIMPLEMENTED;
}

/* ---- answers ---------------------------------------------------------------------------------- */

/* grpc-message: percent-encoded UTF-8, bytes outside 0x20..0x7e and '%' as %XX (PROTOCOL-HTTP2.md) */
static size_t pct_encode(const char *in, char *out, size_t size)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)in; *p && o + 4 < size; p++) {
        if (*p < 0x20 || *p > 0x7e || *p == '%') {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        } else {
            out[o++] = (char)*p;
        }
    }
    out[o] = 0;
    return o;
}

#define NV(n, v, vl) {(uint8_t *)(n), (uint8_t *)(v), sizeof(n) - 1, (vl), NGHTTP2_NV_FLAG_NONE}

static ssize_t on_read_resp(nghttp2_session *h2, int32_t sid, uint8_t *buf, size_t length, uint32_t *flags,
                            nghttp2_data_source *src, void *user)
{
    stream_t *s = src->ptr;
    size_t left = s->resp.len - s->respoff, n = left < length ? left : length;
    memcpy(buf, s->resp.data + s->respoff, n);
    s->respoff += n;
    if (s->respoff == s->resp.len) {
        *flags |= NGHTTP2_DATA_FLAG_EOF | NGHTTP2_DATA_FLAG_NO_END_STREAM;
        nghttp2_nv tr[] = {NV("grpc-status", "0", 1)};
        if (nghttp2_submit_trailer(h2, sid, tr, 1) != 0)
            return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE;
    }
    return (ssize_t)n;
}

/* The answer of s: a response message (status OK) or trailers-only; http: the :status ("200"). */
static void answer(stream_t *s, int status, const char *msg, const char *http)
{
    conn_t *c = s->c;
    ps_grpc_t *g = c->g;
    if (s->answered)
        return;
    s->answered = true;
    s->status = status;
    atomic_fetch_add(&g->counts[status >= 0 && status < 17 ? status : 2], 1);
    if (s->job != NULL)
        atomic_store(&s->job->cancelled, true);
    if (!s->req_done)
        s->rst_after = true; /* the client is still sending: RST_STREAM(NO_ERROR) after our end */
    /* the request's bytes are not needed any more */
    g->buffered -= s->counted;
    s->counted = 0;
    ps_buf_dispose(&s->body);
    if (status == PS_GRPC_OK) {
        nghttp2_nv hd[] = {NV(":status", "200", 3), NV("content-type", "application/grpc", 16),
                           NV("grpc-accept-encoding", "identity,gzip", 13)};
        nghttp2_data_provider dp = {.source.ptr = s, .read_callback = on_read_resp};
        if (nghttp2_submit_response(c->h2, s->id, hd, 3, &dp) != 0)
            nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
        return;
    }
    char st[12];
    int stl = snprintf(st, sizeof(st), "%d", status);
    size_t ml = pct_encode(msg != NULL ? msg : "", s->msg, sizeof(s->msg));
    nghttp2_nv hd[] = {{(uint8_t *)":status", (uint8_t *)http, 7, strlen(http), NGHTTP2_NV_FLAG_NONE},
                       NV("content-type", "application/grpc", 16),
                       NV("grpc-accept-encoding", "identity,gzip", 13),
                       NV("grpc-status", st, (size_t)stl),
                       NV("grpc-message", s->msg, ml)};
    if (nghttp2_submit_response(c->h2, s->id, hd, ml ? 5 : 4, NULL) != 0)
        nghttp2_submit_rst_stream(c->h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_INTERNAL_ERROR);
}

static void fail(stream_t *s, int status, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static void fail(stream_t *s, int status, const char *fmt, ...)
{
    char m[MSG_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof(m), fmt, ap);
    va_end(ap);
    answer(s, status, m, "200");
}

/* ---- calls ------------------------------------------------------------------------------------ */

/* Runs a job's method (on a worker, or inline): decompression, the bcrypt check, the handler. */
static void job_run(job_t *j)
{
    ps_grpc_t *g = j->g;
    if (atomic_load(&j->cancelled)) {
        j->status = PS_GRPC_CANCELLED;
        snprintf(j->msg, sizeof(j->msg), "the call was cancelled before it ran");
        return;
    }
    if (j->deadline != 0 && ps_time_now() >= j->deadline) {
        j->status = PS_GRPC_DEADLINE_EXCEEDED;
        snprintf(j->msg, sizeof(j->msg), "the deadline passed before the call ran");
        return;
    }
    if (j->auth != NULL) { /* a basic-auth password bcrypt must check */
        unsigned scopes = 0;
        ps_auth_verdict_t v = ps_auth_check(j->sec->auth, j->auth, j->authlen, &scopes);
        OPENSSL_cleanse(j->auth, j->authlen);
        if (v != PS_AUTH_OK) {
            j->status = PS_GRPC_UNAUTHENTICATED;
            snprintf(j->msg, sizeof(j->msg), "unauthorized: %s", ps_auth_verdict_str(v));
            return;
        }
        if ((scopes & j->m->scope) != j->m->scope) {
            j->status = PS_GRPC_PERMISSION_DENIED;
            snprintf(j->msg, sizeof(j->msg), "forbidden: this credential lacks the %s scope that %s needs",
                     j->m->scope & PS_SCOPE_ADMIN ? "admin" : j->m->scope & PS_SCOPE_WRITE ? "write" : "read",
                     j->m->path);
            return;
        }
        j->scopes = scopes;
    }
    const uint8_t *msg = j->req + 5;
    size_t n = j->n - 5;
    ps_arena_t arena = PS_ARENA_INIT;
    if (j->req[0] == 1) {
        ps_err_t err;
        ps_err_clear(&err);
        int rc = ps_gunzip(msg, n, g->o.max_message, &arena, &msg, &n, &err);
        if (rc == PS_ETOOBIG) {
            j->status = PS_GRPC_RESOURCE_EXHAUSTED;
            snprintf(j->msg, sizeof(j->msg), "grpc: received message after decompression larger than max %zu",
                     g->o.max_message);
            goto Exit;
        }
        if (rc != 0) {
            j->status = rc == PS_EUNAVAIL ? PS_GRPC_RESOURCE_EXHAUSTED : PS_GRPC_INTERNAL;
            snprintf(j->msg, sizeof(j->msg), rc == PS_EUNAVAIL ? "%s" : "grpc: failed to decompress the received message: %s",
                     err.msg);
            goto Exit;
        }
    }
    ps_grpc_call_t call = {.path = j->m->path, .deadline = j->deadline, .scopes = j->scopes, .cancelled = &j->cancelled};
    PS_BUF_LIT(&j->resp, "\0\0\0\0\0"); /* the prefix, filled below */
    ps_buf_t body = PS_BUF_INIT;
    j->msg[0] = 0;
    j->status = j->m->fn(j->m->ctx, &call, msg, n, &body, j->msg, sizeof(j->msg));
    if (j->status < 0 || j->status > 16)
        j->status = PS_GRPC_UNKNOWN;
    if (j->status == PS_GRPC_OK) {
        if (body.len > UINT32_MAX) {
            j->status = PS_GRPC_RESOURCE_EXHAUSTED;
            snprintf(j->msg, sizeof(j->msg), "grpc: the response message is larger than 4 GiB");
        } else {
            ps_buf_append(&j->resp, body.data, body.len);
            uint32_t l = (uint32_t)body.len;
            j->resp.data[1] = (uint8_t)(l >> 24);
            j->resp.data[2] = (uint8_t)(l >> 16);
            j->resp.data[3] = (uint8_t)(l >> 8);
            j->resp.data[4] = (uint8_t)l;
        }
    }
    ps_buf_dispose(&body);
Exit:
    ps_arena_dispose(&arena);
}

static void job_free(job_t *j)
{
    free(j->req);
    free(j->auth);
    sec_release(j->sec);
    ps_buf_dispose(&j->resp);
    free(j);
}

static void conn_flush(conn_t *c);
static void conn_maybe_free(conn_t *c);
static void conn_events(conn_t *c, uint32_t ev);

/* On the loop: a job is back. */
static void job_done(job_t *j)
{
    ps_grpc_t *g = j->g;
    conn_t *c = j->c;
    g->buffered -= j->counted;
    if (!g->inline_mode)
        g->jobs_out--;
    c->inflight--;
    stream_t *s = j->s;
    if (c->closed) {
        job_free(j);
        conn_maybe_free(c);
        return;
    }
    if (s != NULL) {
        s->job = NULL;
        if (!s->answered) {
            if (j->status == PS_GRPC_OK) {
                s->resp = j->resp;
                j->resp = (ps_buf_t)PS_BUF_INIT;
                s->respoff = 0;
            }
            answer(s, j->status, j->msg, "200");
        }
    }
    job_free(j);
    if (!g->inline_mode)
        conn_flush(c); /* may free c */
}

static void dispatch(stream_t *s)
{
    conn_t *c = s->c;
    ps_grpc_t *g = c->g;
    size_t n = s->body.len; /* a call begun before the shutdown runs, even when its body ends after */
    if (n == 0) {
        fail(s, PS_GRPC_UNIMPLEMENTED, "grpc: no request message for the unary method %s", s->m->path);
        return;
    }
    if (n < 5) {
        fail(s, PS_GRPC_INTERNAL, "grpc: the request ended inside a message's 5-byte prefix (%zu bytes)", n);
        return;
    }
    const uint8_t *p = s->body.data;
    uint32_t len = (uint32_t)p[1] << 24 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 8 | p[4];
    if (n - 5 < len) {
        fail(s, PS_GRPC_INTERNAL, "grpc: the request ended inside a message: its length prefix says %u bytes, %zu arrived",
             len, n - 5);
        return;
    }
    if (s->deadline != 0 && ps_time_now() >= s->deadline) {
        fail(s, PS_GRPC_DEADLINE_EXCEEDED, "the deadline passed before the call ran");
        return;
    }
    pthread_mutex_lock(&g->qmu);
    bool full = !g->inline_mode && g->queued >= g->o.max_queued;
    pthread_mutex_unlock(&g->qmu);
    if (full) {
        fail(s, PS_GRPC_RESOURCE_EXHAUSTED, "server overloaded: %u calls wait for a worker already", g->o.max_queued);
        return;
    }
    job_t *j = ps_xcalloc(1, sizeof(*j));
    j->g = g;
    j->c = c;
    j->s = s;
    j->m = s->m;
    j->req = s->body.data; /* taken */
    j->n = n;
    j->counted = s->counted;
    s->body = (ps_buf_t)PS_BUF_INIT;
    s->counted = 0;
    j->scopes = s->scopes;
    j->deadline = s->deadline;
    if (s->auth != NULL && s->m->scope != 0) { /* ps_auth_check_quick said PENDING */
        j->auth = s->auth;
        j->authlen = s->authlen;
        s->auth = NULL;
        j->sec = sec_acquire(g);
    }
    atomic_init(&j->cancelled, false);
    s->job = j;
    c->inflight++;
    if (g->inline_mode) {
        job_run(j);
        job_done(j);
        return;
    }
    g->jobs_out++;
    pthread_mutex_lock(&g->qmu);
    if (g->qtail)
        g->qtail->next = j;
    else
        g->qhead = j;
    g->qtail = j;
    g->queued++;
    pthread_cond_signal(&g->qcv);
    pthread_mutex_unlock(&g->qmu);
}

static void *worker_main(void *arg)
{
    ps_grpc_t *g = arg;
    pthread_setname_np(pthread_self(), "grpc-worker");
    for (;;) {
        pthread_mutex_lock(&g->qmu);
        while (g->qhead == NULL && !g->workers_quit)
            pthread_cond_wait(&g->qcv, &g->qmu);
        job_t *j = g->qhead;
        if (j == NULL) {
            pthread_mutex_unlock(&g->qmu);
            return NULL;
        }
        g->qhead = j->next;
        if (g->qhead == NULL)
            g->qtail = NULL;
        g->queued--;
        pthread_mutex_unlock(&g->qmu);
        j->next = NULL;
        job_run(j);
        pthread_mutex_lock(&g->qmu);
        j->next = g->done;
        g->done = j;
        pthread_mutex_unlock(&g->qmu);
        uint64_t one = 1;
        ssize_t w = write(g->efd, &one, sizeof(one));
        (void)w;
    }
}

/* ---- HTTP/2 callbacks ------------------------------------------------------------------------- */

static stream_t *stream_of(nghttp2_session *h2, int32_t id)
{
    return nghttp2_session_get_stream_user_data(h2, id);
}

static void stream_free(conn_t *c, stream_t *s)
{
    if (s->job != NULL)
        s->job->s = NULL, atomic_store(&s->job->cancelled, true);
    if (s->prev)
        s->prev->next = s->next;
    else
        c->streams = s->next;
    if (s->next)
        s->next->prev = s->prev;
    c->g->buffered -= s->counted;
    ps_buf_dispose(&s->body);
    ps_buf_dispose(&s->resp);
    if (s->auth != NULL) {
        OPENSSL_cleanse(s->auth, s->authlen);
        free(s->auth);
    }
    free(s);
}

static int on_begin_headers(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    conn_t *c = user;
    if (f->hd.type != NGHTTP2_HEADERS || f->headers.cat != NGHTTP2_HCAT_REQUEST)
        return 0;
    stream_t *s = ps_xcalloc(1, sizeof(*s));
    s->id = f->hd.stream_id;
    s->c = c;
    s->next = c->streams;
    if (c->streams)
        c->streams->prev = s;
    c->streams = s;
    nghttp2_session_set_stream_user_data(h2, s->id, s);
    return 0;
}

static bool eq(const uint8_t *a, size_t al, const char *b)
{
    return al == strlen(b) && memcmp(a, b, al) == 0;
}

static void copy_field(char *dst, size_t size, const uint8_t *v, size_t vl, bool *too_long)
{
    if (vl >= size) {
        *too_long = true;
        vl = size - 1;
    }
    memcpy(dst, v, vl);
    dst[vl] = 0;
}

static int on_header(nghttp2_session *h2, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    conn_t *c = user;
    stream_t *s = stream_of(h2, f->hd.stream_id);
    if (s == NULL)
        return 0;
    s->hdr_bytes += namelen + valuelen + 32;
    if (s->hdr_bytes > c->g->o.max_header_list)
        return NGHTTP2_ERR_TEMPORAL_CALLBACK_FAILURE; /* RST_STREAM: the header list is too large */
    if (s->headers_done)
        return 0; /* the client's trailers: nothing of them is used */
    bool dummy = false;
    if (eq(name, namelen, ":path")) {
        copy_field(s->path, sizeof(s->path), value, valuelen, &s->path_long);
        s->pathlen = valuelen < sizeof(s->path) ? valuelen : sizeof(s->path) - 1;
    } else if (eq(name, namelen, ":method")) {
        s->is_post = eq(value, valuelen, "POST");
    } else if (eq(name, namelen, "content-type")) {
        s->ct_seen = true;
        copy_field(s->ct, sizeof(s->ct), value, valuelen, &dummy);
        /* application/grpc, application/grpc+proto, application/grpc;... (PROTOCOL-HTTP2.md) */
        s->ct_ok = valuelen >= 16 && strncasecmp((const char *)value, "application/grpc", 16) == 0 &&
                   (valuelen == 16 || value[16] == '+' || value[16] == ';');
        if (s->ct_ok && valuelen > 16 && value[16] == '+')
            s->ct_ok = (valuelen == 22 && strncasecmp((const char *)value + 17, "proto", 5) == 0);
    } else if (eq(name, namelen, "grpc-encoding")) {
        s->enc_seen = true;
        bool l = false;
        copy_field(s->enc, sizeof(s->enc), value, valuelen, &l);
        s->enclen = l ? sizeof(s->enc) : valuelen;
    } else if (eq(name, namelen, "grpc-timeout")) {
        s->timeout_seen = true;
        copy_field(s->timeout, sizeof(s->timeout), value, valuelen, &s->timeout_long);
    } else if (eq(name, namelen, "authorization")) {
        if (valuelen > MAX_AUTH || s->auth != NULL) {
            s->auth_long = true;
        } else {
            s->auth = ps_xmalloc(valuelen + 1);
            memcpy(s->auth, value, valuelen);
            s->auth[valuelen] = 0;
            s->authlen = valuelen;
        }
    }
    return 0;
}

/* grpc-timeout: 1 to 8 digits and a unit H M S m u n (PROTOCOL-HTTP2.md); the deadline, or -1 */
static int64_t parse_timeout(const char *t)
{
    size_t n = strlen(t);
    if (n < 2 || n > 9)
        return -1;
    int64_t v = 0;
    for (size_t i = 0; i + 1 < n; i++) {
        if (t[i] < '0' || t[i] > '9')
            return -1;
        v = v * 10 + (t[i] - '0');
    }
    int64_t unit;
    switch (t[n - 1]) {
    case 'H': unit = 3600 * PS_NS_PER_S; break;
    case 'M': unit = 60 * PS_NS_PER_S; break;
    case 'S': unit = PS_NS_PER_S; break;
    case 'm': unit = 1000000; break;
    case 'u': unit = 1000; break;
    case 'n': unit = 1; break;
    default: return -1;
    }
    return v * unit; /* at most 99999999 hours: fits */
}

/* The request's headers are complete: everything that can be refused before its body. */
static void on_request_headers(conn_t *c, stream_t *s)
{
    ps_grpc_t *g = c->g;
    s->headers_done = true;
    if (atomic_load(&g->stopping)) {
        fail(s, PS_GRPC_UNAVAILABLE, "the server is shutting down");
        return;
    }
    if (!s->is_post) {
        answer(s, PS_GRPC_UNIMPLEMENTED, "gRPC calls are POST requests", "405");
        return;
    }
    if (!s->ct_ok) {
        char m[160];
        snprintf(m, sizeof(m), "invalid gRPC request content-type \"%s\"", s->ct_seen ? s->ct : "");
        answer(s, PS_GRPC_INTERNAL, m, "415");
        return;
    }
    /* credentials first: a caller without them learns nothing of the method table */
    sec_t *sec = sec_acquire(g);
    const method_t *m = s->path_long ? NULL : find_method(g, s->path, s->pathlen);
    unsigned scopes = PS_SCOPE_ALL;
    bool pending = false;
    if (sec != NULL && sec->auth != NULL) {
        ps_auth_verdict_t v = s->auth_long ? PS_AUTH_MALFORMED
                                           : ps_auth_check_quick(sec->auth, s->auth, s->authlen, &scopes);
        if (v == PS_AUTH_PENDING) {
            pending = true;
        } else if (v != PS_AUTH_OK && !(m != NULL && m->scope == 0)) {
            sec_release(sec);
            fail(s, PS_GRPC_UNAUTHENTICATED, "unauthorized: %s", ps_auth_verdict_str(v));
            return;
        } else if (v != PS_AUTH_OK) {
            scopes = 0;
        }
    }
    sec_release(sec);
    if (m == NULL) {
        const char *p = s->path[0] == '/' ? s->path + 1 : s->path, *slash = strchr(p, '/');
        if (slash != NULL && !has_service(g, p, (size_t)(slash - p)))
            fail(s, PS_GRPC_UNIMPLEMENTED, "unknown service %.*s", (int)(slash - p), p);
        else if (slash != NULL)
            fail(s, PS_GRPC_UNIMPLEMENTED, "unknown method %s for service %.*s", slash + 1, (int)(slash - p), p);
        else
            fail(s, PS_GRPC_UNIMPLEMENTED, "malformed method name: \"%s\"", s->path);
        return;
    }
    if (!pending && (scopes & m->scope) != m->scope) {
        fail(s, PS_GRPC_PERMISSION_DENIED, "forbidden: this credential lacks the %s scope that %s needs",
             m->scope & PS_SCOPE_ADMIN ? "admin" : m->scope & PS_SCOPE_WRITE ? "write" : "read", m->path);
        return;
    }
    if (!pending && s->auth != NULL) {
        OPENSSL_cleanse(s->auth, s->authlen);
        free(s->auth);
        s->auth = NULL;
    }
    s->m = m;
    s->scopes = scopes;
    if (s->enc_seen && !eq((const uint8_t *)s->enc, s->enclen, "identity") && !eq((const uint8_t *)s->enc, s->enclen, "gzip")) {
        fail(s, PS_GRPC_UNIMPLEMENTED, "grpc: Decompressor is not installed for grpc-encoding \"%.*s\"",
             (int)s->enclen, s->enc);
        return;
    }
    if (s->timeout_seen) {
        int64_t t = s->timeout_long ? -1 : parse_timeout(s->timeout);
        if (t < 0) {
            fail(s, PS_GRPC_INTERNAL, "malformed grpc-timeout \"%s\"", s->timeout);
            return;
        }
        s->deadline = ps_time_now() + (t > 0 ? t : 1);
    }
}

static int on_data_chunk(nghttp2_session *h2, uint8_t flags, int32_t sid, const uint8_t *data, size_t len, void *user)
{
    conn_t *c = user;
    ps_grpc_t *g = c->g;
    stream_t *s = stream_of(h2, sid);
    if (s == NULL || s->answered || !s->headers_done)
        return 0;
    size_t have = s->body.len;
    /* the first message's prefix, as soon as it is there */
    size_t want = SIZE_MAX;
    if (have + len >= 5) {
        uint8_t pre[5];
        for (size_t i = 0; i < 5; i++)
            pre[i] = i < have ? s->body.data[i] : data[i - have];
        uint32_t l = (uint32_t)pre[1] << 24 | (uint32_t)pre[2] << 16 | (uint32_t)pre[3] << 8 | pre[4];
        if (pre[0] > 1) {
            fail(s, PS_GRPC_INTERNAL, "grpc: received unexpected payload format %u (the compressed flag is 0 or 1)", pre[0]);
            return 0;
        }
        if (pre[0] == 1 && !(s->enc_seen && eq((const uint8_t *)s->enc, s->enclen, "gzip"))) {
            fail(s, PS_GRPC_INTERNAL, "grpc: compressed flag set with identity or empty encoding");
            return 0;
        }
        if (l > g->o.max_message) {
            fail(s, PS_GRPC_RESOURCE_EXHAUSTED, "grpc: received message larger than max (%u vs. %zu)", l,
                 g->o.max_message);
            return 0;
        }
        want = 5 + (size_t)l;
        if (have + len > want) {
            fail(s, PS_GRPC_UNIMPLEMENTED, "grpc: more than one request message for the unary method %s", s->m->path);
            return 0;
        }
    }
    if (g->buffered + len > g->o.max_buffered) {
        fail(s, PS_GRPC_RESOURCE_EXHAUSTED, "server overloaded: %zu bytes of requests are held already", g->buffered);
        return 0;
    }
    ps_buf_append(&s->body, data, len);
    s->counted += len;
    g->buffered += len;
    return 0;
}

static void on_request_end(conn_t *c, stream_t *s)
{
    s->req_done = true;
    if (!s->answered)
        dispatch(s);
}

static void goaway_calm(conn_t *c)
{
    if (!c->goaway_sent) {
        ps_counter_add(&c->g->reset_floods, 1);
        nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                              NGHTTP2_ENHANCE_YOUR_CALM, (const uint8_t *)"too many resets", 15);
        c->goaway_sent = true;
    }
    nghttp2_session_terminate_session(c->h2, NGHTTP2_ENHANCE_YOUR_CALM);
}

static int on_frame_recv(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    conn_t *c = user;
    stream_t *s = f->hd.stream_id ? stream_of(h2, f->hd.stream_id) : NULL;
    c->got_frame = true;
    switch (f->hd.type) {
    case NGHTTP2_HEADERS:
        if (s == NULL)
            break;
        if (f->headers.cat == NGHTTP2_HCAT_REQUEST && !s->headers_done)
            on_request_headers(c, s);
        if (f->hd.flags & NGHTTP2_FLAG_END_STREAM)
            on_request_end(c, s);
        break;
    case NGHTTP2_DATA:
        if (s != NULL && (f->hd.flags & NGHTTP2_FLAG_END_STREAM))
            on_request_end(c, s);
        break;
    case NGHTTP2_RST_STREAM: {
        int64_t now = ps_time_now();
        if (now - c->reset_window > RESET_WINDOW) {
            c->reset_window = now;
            c->resets = 0;
        }
        if (++c->resets > c->g->o.max_resets)
            goaway_calm(c);
        break;
    }
    default: break;
    }
    return 0;
}

static int on_frame_send(nghttp2_session *h2, const nghttp2_frame *f, void *user)
{
    if (f->hd.type != NGHTTP2_HEADERS || !(f->hd.flags & NGHTTP2_FLAG_END_STREAM))
        return 0;
    stream_t *s = stream_of(h2, f->hd.stream_id);
    if (s != NULL && s->rst_after && !s->req_done)
        nghttp2_submit_rst_stream(h2, NGHTTP2_FLAG_NONE, s->id, NGHTTP2_NO_ERROR);
    return 0;
}

static int on_stream_close(nghttp2_session *h2, int32_t sid, uint32_t code, void *user)
{
    conn_t *c = user;
    stream_t *s = stream_of(h2, sid);
    if (s != NULL) {
        if (!s->answered && s->job != NULL)
            atomic_fetch_add(&c->g->counts[PS_GRPC_CANCELLED], 1); /* the client gave up on a running call */
        nghttp2_session_set_stream_user_data(h2, sid, NULL);
        stream_free(c, s);
    }
    return 0;
}

static nghttp2_session_callbacks *cbs;
static nghttp2_option *opt;

static void h2_init(void)
{
    {
        nghttp2_session_callbacks_new(&cbs);
        nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, on_begin_headers);
        nghttp2_session_callbacks_set_on_header_callback(cbs, on_header);
        nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, on_data_chunk);
        nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, on_frame_recv);
        nghttp2_session_callbacks_set_on_frame_send_callback(cbs, on_frame_send);
        nghttp2_session_callbacks_set_on_stream_close_callback(cbs, on_stream_close);
    }
    {
        nghttp2_option_new(&opt);
        nghttp2_option_set_max_outbound_ack(opt, 1000); /* SETTINGS/PING floods */
        nghttp2_option_set_max_settings(opt, 32);       /* entries in one SETTINGS frame */
        nghttp2_option_set_max_deflate_dynamic_table_size(opt, 4096);
        nghttp2_option_set_max_continuations(opt, 8);   /* CONTINUATION floods */
        nghttp2_option_set_stream_reset_rate_limit(opt, 1000, 33); /* nghttp2's own rapid-reset bound */
        nghttp2_option_set_no_closed_streams(opt, 1);   /* no state kept for closed streams */
    }
}

static int conn_session(conn_t *c)
{
    static pthread_once_t once = PTHREAD_ONCE_INIT;
    pthread_once(&once, h2_init);
    if (nghttp2_session_server_new2(&c->h2, cbs, c, opt) != 0)
        return -1;
    nghttp2_settings_entry iv[] = {
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, c->g->o.max_streams},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, c->g->o.max_header_list},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, 1u << 20},
    };
    if (nghttp2_submit_settings(c->h2, NGHTTP2_FLAG_NONE, iv, 3) != 0)
        return -1;
    /* the connection's window: 4 MiB on top of the 64 KiB the protocol starts with */
    nghttp2_session_set_local_window_size(c->h2, NGHTTP2_FLAG_NONE, 0, 4 << 20);
    return 0;
}

/* ---- connections ------------------------------------------------------------------------------ */

/* The socket's end: out of epoll, closed, its slot given back. */
static void conn_drop_fd(conn_t *c)
{
    ps_grpc_t *g = c->g;
    if (!g->inline_mode)
        epoll_ctl(g->ep, EPOLL_CTL_DEL, c->fd, NULL);
    if (c->ssl != NULL)
        SSL_free(c->ssl);
    close(c->fd);
    c->ssl = NULL;
    c->fd = -1;
    g->nconns--;
    ps_gauge_set(&g->open, g->nconns);
}

static void conn_end_session(conn_t *c)
{
    c->closed = true;
    while (c->streams != NULL) {
        stream_t *s = c->streams;
        nghttp2_session_set_stream_user_data(c->h2, s->id, NULL);
        stream_free(c, s);
    }
}

/* Ends the connection at once (a lingering one too); it is freed once no job of it is out. */
static void conn_close(conn_t *c)
{
    if (!c->closed)
        conn_end_session(c);
    if (c->fd >= 0)
        conn_drop_fd(c);
    conn_maybe_free(c);
}

/* A session that ended with all of it sent (our GOAWAY last): the socket's write side is shut and
 * what the peer still sends is read and dropped until it closes too, or LINGER_TIMEOUT passes.
 * Closed at once with unread bytes in it, the socket would answer with a reset, which can make
 * the peer's kernel drop our GOAWAY before the peer reads it (the "lingering close" of nginx
 * and h2o). */
static void conn_linger(conn_t *c)
{
    if (c->g->inline_mode || c->fd < 0 || c->closed) {
        conn_close(c);
        return;
    }
    conn_events(c, EPOLLIN);
    conn_end_session(c);
    shutdown(c->fd, SHUT_WR);
    c->linger_until = ps_time_now() + LINGER_TIMEOUT;
}

/* A lingering connection's bytes: dropped; its peer's end (or an error) ends it. */
static void conn_linger_read(conn_t *c)
{
    uint8_t buf[16384];
    for (int i = 0; i < 16; i++) {
        ssize_t n = recv(c->fd, buf, sizeof(buf), 0);
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
            return;
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;
    }
    conn_close(c);
}

static void conn_destroy(conn_t *c)
{
    ps_grpc_t *g = c->g;
    if (c->prev)
        c->prev->next = c->next;
    else
        g->conns = c->next;
    if (c->next)
        c->next->prev = c->prev;
    nghttp2_session_del(c->h2);
    ps_buf_dispose(&c->out);
    free(c);
}

/* a closed connection goes once no job of it is out (inline: when its owner frees it) */
static void conn_maybe_free(conn_t *c)
{
    if (c->closed && c->fd < 0 && c->inflight == 0 && !c->g->inline_mode)
        conn_destroy(c);
}

static void conn_events(conn_t *c, uint32_t ev)
{
    if (c->closed || c->fd < 0 || c->events == ev)
        return;
    struct epoll_event e = {.events = ev, .data.ptr = c};
    epoll_ctl(c->g->ep, EPOLL_CTL_MOD, c->fd, &e);
    c->events = ev;
}

/* Writes c->out; 1 when all of it went, 0 when the socket is full, -1 on an error. */
static int conn_write(conn_t *c)
{
    while (c->outoff < c->out.len) {
        size_t left = c->out.len - c->outoff;
        ssize_t w;
        if (c->ssl != NULL) {
            ERR_clear_error();
            int r = SSL_write(c->ssl, c->out.data + c->outoff, left > INT32_MAX ? INT32_MAX : (int)left);
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_WRITE || e == SSL_ERROR_WANT_READ)
                    return 0;
                return -1;
            }
            w = r;
        } else {
            w = send(c->fd, c->out.data + c->outoff, left, MSG_NOSIGNAL);
            if (w < 0) {
                if (errno == EAGAIN || errno == EWOULDBLOCK)
                    return 0;
                if (errno == EINTR)
                    continue;
                return -1;
            }
        }
        c->outoff += (size_t)w;
    }
    c->out.len = c->outoff = 0;
    return 1;
}

/* Sends what nghttp2 has to send, as far as the socket takes it. */
static void conn_flush(conn_t *c)
{
    if (c->closed)
        return;
    for (;;) {
        while (c->out.len - c->outoff < OUT_HIGH) {
            const uint8_t *p;
            ssize_t n = nghttp2_session_mem_send(c->h2, &p);
            if (n < 0) {
                conn_close(c);
                return;
            }
            if (n == 0)
                break;
            if (c->sink != NULL)
                ps_buf_append(c->sink, p, (size_t)n);
            else
                ps_buf_append(&c->out, p, (size_t)n);
        }
        if (c->sink != NULL)
            break;
        if (c->out.len == c->outoff)
            break;
        int w = conn_write(c);
        if (w < 0) {
            conn_close(c);
            return;
        }
        if (w == 0) {
            conn_events(c, EPOLLIN | EPOLLOUT);
            return;
        }
    }
    if (c->sink == NULL)
        conn_events(c, EPOLLIN);
    if (!nghttp2_session_want_read(c->h2) && !nghttp2_session_want_write(c->h2) && c->out.len == c->outoff)
        conn_linger(c);
}

static int conn_recv(conn_t *c, const uint8_t *p, size_t n)
{
    ssize_t r = nghttp2_session_mem_recv(c->h2, p, n);
    if (r < 0) {
        /* a protocol error: nghttp2 has queued a GOAWAY, send it and close */
        c->goaway_sent = true;
        nghttp2_session_terminate_session(c->h2, NGHTTP2_PROTOCOL_ERROR);
        return -1;
    }
    return 0;
}

static void conn_on_io(conn_t *c, uint32_t ev)
{
    if (c->closed) { /* lingering */
        conn_linger_read(c);
        return;
    }
    if (ev & (EPOLLERR)) {
        conn_close(c);
        return;
    }
    if (c->ssl != NULL && !c->handshaken) {
        ERR_clear_error();
        int r = SSL_do_handshake(c->ssl);
        if (r != 1) {
            int e = SSL_get_error(c->ssl, r);
            if (e == SSL_ERROR_WANT_READ)
                conn_events(c, EPOLLIN);
            else if (e == SSL_ERROR_WANT_WRITE)
                conn_events(c, EPOLLIN | EPOLLOUT);
            else
                conn_close(c);
            return;
        }
        c->handshaken = true;
        c->last_read = ps_time_now();
    }
    uint8_t buf[16384];
    for (int i = 0; i < 16 && !c->closed; i++) { /* then the other connections get their turn */
        ssize_t n;
        if (c->ssl != NULL) {
            ERR_clear_error();
            int r = SSL_read(c->ssl, buf, sizeof(buf));
            if (r <= 0) {
                int e = SSL_get_error(c->ssl, r);
                if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE)
                    break;
                conn_close(c);
                return;
            }
            n = r;
        } else {
            n = recv(c->fd, buf, sizeof(buf), 0);
            if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
                break;
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0) {
                conn_close(c);
                return;
            }
        }
        c->last_read = ps_time_now();
        if (conn_recv(c, buf, (size_t)n) != 0)
            break;
        if (c->ssl == NULL && (size_t)n < sizeof(buf))
            break;
    }
    conn_flush(c);
}

static conn_t *conn_new(ps_grpc_t *g, int fd)
{
    conn_t *c = ps_xcalloc(1, sizeof(*c));
    c->g = g;
    c->fd = fd;
    c->created = c->last_read = c->reset_window = ps_time_now();
    if (conn_session(c) != 0) {
        free(c);
        return NULL;
    }
    c->next = g->conns;
    if (g->conns)
        g->conns->prev = c;
    g->conns = c;
    return c;
}

static void on_accept(ps_grpc_t *g)
{
    for (int i = 0; i < 64; i++) {
        int fd = accept4(g->lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd < 0)
            return; /* EAGAIN, or EMFILE: the next turn tries again */
        if (g->nconns >= g->o.max_connections || atomic_load(&g->stopping)) {
            if (!atomic_load(&g->stopping))
                ps_counter_add(&g->refused, 1);
            close(fd);
            continue;
        }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
        conn_t *c = conn_new(g, fd);
        if (c == NULL) {
            close(fd);
            continue;
        }
        g->nconns++;
        ps_gauge_set(&g->open, g->nconns);
        sec_t *sec = sec_acquire(g);
        if (sec != NULL && sec->ssl != NULL) {
            c->ssl = SSL_new(sec->ssl);
            SSL_set_fd(c->ssl, fd);
            SSL_set_accept_state(c->ssl);
        } else {
            c->handshaken = true;
        }
        sec_release(sec);
        struct epoll_event e = {.events = EPOLLIN, .data.ptr = c};
        c->events = EPOLLIN;
        epoll_ctl(g->ep, EPOLL_CTL_ADD, fd, &e);
        if (c->ssl == NULL)
            conn_flush(c); /* our SETTINGS (TLS: once the handshake is done) */
    }
}

/* Timeouts and deadlines, every 200 ms. */
static void sweep(ps_grpc_t *g)
{
    int64_t now = ps_time_now();
    for (conn_t *c = g->conns, *next; c != NULL; c = next) {
        next = c->next;
        if (c->closed) {
            if (c->fd >= 0 && now >= c->linger_until)
                conn_close(c);
            continue;
        }
        if ((!c->handshaken || !c->got_frame) && now - c->created > HANDSHAKE_TIMEOUT) {
            conn_close(c);
            continue;
        }
        if (c->inflight == 0 && now - c->last_read > g->o.idle_timeout) {
            if (!c->goaway_sent) {
                nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                                      NGHTTP2_NO_ERROR, (const uint8_t *)"idle", 4);
                c->goaway_sent = true;
                nghttp2_session_terminate_session(c->h2, NGHTTP2_NO_ERROR);
                conn_flush(c);
            } else {
                conn_close(c);
            }
            continue;
        }
        bool any = false;
        for (stream_t *s = c->streams; s != NULL; s = s->next)
            if (!s->answered && s->deadline != 0 && now >= s->deadline) {
                fail(s, PS_GRPC_DEADLINE_EXCEEDED, "the deadline passed while the call ran");
                any = true;
            }
        if (any)
            conn_flush(c);
    }
}

static void drain_done(ps_grpc_t *g)
{
    uint64_t v;
    ssize_t r = read(g->efd, &v, sizeof(v));
    (void)r;
    pthread_mutex_lock(&g->qmu);
    job_t *j = g->done;
    g->done = NULL;
    pthread_mutex_unlock(&g->qmu);
    while (j != NULL) {
        job_t *next = j->next;
        job_done(j);
        j = next;
    }
}

static void begin_stop(ps_grpc_t *g)
{
    if (!g->listener_closed) {
        g->listener_closed = true;
        epoll_ctl(g->ep, EPOLL_CTL_DEL, g->lfd, NULL);
        close(g->lfd);
        g->lfd = -1;
        for (conn_t *c = g->conns, *next; c != NULL; c = next) {
            next = c->next; /* conn_flush may free c */
            if (c->closed || c->goaway_sent)
                continue;
            nghttp2_submit_goaway(c->h2, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(c->h2),
                                  NGHTTP2_NO_ERROR, NULL, 0);
            c->goaway_sent = true;
            conn_flush(c);
        }
    }
}

/* whether every call begun before the shutdown is answered and its answer sent */
static bool all_done(ps_grpc_t *g)
{
    if (g->jobs_out > 0)
        return false;
    for (conn_t *c = g->conns; c != NULL; c = c->next)
        if (!c->closed && (c->streams != NULL || c->out.len > c->outoff || nghttp2_session_want_write(c->h2)))
            return false;
    return true;
}

static void *loop_main(void *arg)
{
    ps_grpc_t *g = arg;
    pthread_setname_np(pthread_self(), "grpc-loop");
    struct epoll_event evs[64];
    int64_t last_sweep = ps_time_now();
    for (;;) {
        int n = epoll_wait(g->ep, evs, 64, 200);
        for (int i = 0; i < n; i++) {
            void *p = evs[i].data.ptr;
            if (p == (void *)&g->lfd)
                on_accept(g);
            else if (p == (void *)&g->efd)
                drain_done(g);
            else
                conn_on_io(p, evs[i].events);
        }
        int stopping = atomic_load(&g->stopping);
        if (stopping >= 1)
            begin_stop(g);
        int64_t now = ps_time_now();
        if (now - last_sweep >= 200 * (PS_NS_PER_S / 1000)) {
            sweep(g);
            last_sweep = now;
        }
        if (stopping == 2) {
            if (g->stop_at == 0)
                g->stop_at = now;
            if (all_done(g) || now - g->stop_at > STOP_FLUSH_TIMEOUT)
                break;
        }
    }
    return NULL;
}

/* ---- life cycle ------------------------------------------------------------------------------- */

static void opts_default(ps_grpc_opts_t *o)
{
    if (o->max_message == 0)
        o->max_message = 4u << 20;
    if (o->max_streams == 0)
        o->max_streams = 100;
    if (o->max_connections == 0)
        o->max_connections = 1024;
    if (o->idle_timeout == 0)
        o->idle_timeout = 300 * PS_NS_PER_S;
    if (o->workers == 0)
        o->workers = 4;
    if (o->max_queued == 0)
        o->max_queued = 64;
    if (o->max_buffered == 0) {
        o->max_buffered = o->max_message * 4;
        if (o->max_buffered < (64u << 20))
            o->max_buffered = 64u << 20;
    }
    if (o->max_header_list == 0)
        o->max_header_list = 16384;
    if (o->max_resets == 0)
        o->max_resets = 200;
}

static ps_grpc_t *alloc(const ps_grpc_opts_t *o)
{
    ps_grpc_t *g = ps_xcalloc(1, sizeof(*g));
    g->o = *o;
    opts_default(&g->o);
    g->lfd = g->ep = g->efd = -1;
    pthread_mutex_init(&g->sec_mu, NULL);
    pthread_mutex_init(&g->qmu, NULL);
    pthread_cond_init(&g->qcv, NULL);
    /* open, as the main port's /-/healthy: probes carry no credentials */
    ps_grpc_method_t h = {.path = "/grpc.health.v1.Health/Check", .scope = 0, .fn = health_check, .ctx = g};
    ps_grpc_register(g, &h, NULL);
    return g;
}

static void free_all(ps_grpc_t *g)
{
    for (uint32_t i = 0; i < g->nmethods; i++)
        free(g->methods[i].path);
    free(g->methods);
    sec_release(g->sec);
    pthread_mutex_destroy(&g->sec_mu);
    pthread_mutex_destroy(&g->qmu);
    pthread_cond_destroy(&g->qcv);
    free(g->workers);
    free(g);
}

ps_grpc_t *ps_grpc_new(const ps_grpc_opts_t *o, ps_err_t *err)
{
    char host[256], port[16];
    const char *colon = o->listen ? strrchr(o->listen, ':') : NULL;
    size_t hl = colon ? (size_t)(colon - o->listen) : 0;
    if (colon == NULL || hl >= sizeof(host) || strlen(colon + 1) == 0 || strlen(colon + 1) >= sizeof(port)) {
        ps_err_set(err, PS_EINVAL, "--grpc.listen-address: \"%s\" is not host:port", o->listen ? o->listen : "");
        return NULL;
    }
    memcpy(host, o->listen, hl);
    host[hl] = 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    snprintf(port, sizeof(port), "%s", colon + 1);
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE}, *res = NULL;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (gai != 0) {
        ps_err_set(err, PS_EINVAL, "--grpc.listen-address %s: %s", o->listen, gai_strerror(gai));
        return NULL;
    }
    int fd = socket(res->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0)
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (fd < 0 || bind(fd, res->ai_addr, res->ai_addrlen) != 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        ps_err_set(err, PS_EINVAL, "cannot listen on %s (--grpc.listen-address): %s", o->listen, strerror(e));
        return NULL;
    }
    freeaddrinfo(res);
    ps_grpc_t *g = alloc(o);
    g->lfd = fd;
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    g->port = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                             : ((struct sockaddr_in *)&ss)->sin_port);
    return g;
}

int ps_grpc_port(const ps_grpc_t *g)
{
    return g->port;
}

int ps_grpc_start(ps_grpc_t *g, ps_err_t *err)
{
    g->ep = epoll_create1(EPOLL_CLOEXEC);
    g->efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    if (g->ep < 0 || g->efd < 0)
        return ps_err_set(err, PS_EINTERNAL, "gRPC listener: epoll: %s", strerror(errno));
    struct epoll_event le = {.events = EPOLLIN, .data.ptr = &g->lfd}, ee = {.events = EPOLLIN, .data.ptr = &g->efd};
    epoll_ctl(g->ep, EPOLL_CTL_ADD, g->lfd, &le);
    epoll_ctl(g->ep, EPOLL_CTL_ADD, g->efd, &ee);
    g->workers = ps_xcalloc(g->o.workers, sizeof(pthread_t));
    for (uint32_t i = 0; i < g->o.workers; i++)
        pthread_create(&g->workers[i], NULL, worker_main, g);
    pthread_create(&g->loop, NULL, loop_main, g);
    g->started = true;
    return 0;
}

void ps_grpc_begin_shutdown(ps_grpc_t *g)
{
    if (g == NULL)
        return;
    int zero = 0;
    atomic_compare_exchange_strong(&g->stopping, &zero, 1);
    uint64_t one = 1;
    if (g->efd >= 0) {
        ssize_t w = write(g->efd, &one, sizeof(one));
        (void)w;
    }
}

void ps_grpc_stop(ps_grpc_t *g)
{
    if (g == NULL)
        return;
    ps_grpc_begin_shutdown(g);
    atomic_store(&g->stopping, 2);
    if (g->started) {
        pthread_join(g->loop, NULL);
        pthread_mutex_lock(&g->qmu);
        g->workers_quit = true;
        pthread_cond_broadcast(&g->qcv);
        pthread_mutex_unlock(&g->qmu);
        for (uint32_t i = 0; i < g->o.workers; i++)
            pthread_join(g->workers[i], NULL);
        /* answers that came back too late: their connections go now */
        job_t *j = g->done;
        g->done = NULL;
        while (j != NULL) {
            job_t *next = j->next;
            j->s = NULL;
            j->c->inflight--;
            job_free(j);
            j = next;
        }
    }
    while (g->conns != NULL) {
        conn_t *c = g->conns;
        c->inflight = 0;
        conn_close(c);
        if (g->inline_mode)
            conn_destroy(c);
    }
    if (g->lfd >= 0)
        close(g->lfd);
    if (g->ep >= 0)
        close(g->ep);
    if (g->efd >= 0)
        close(g->efd);
    free_all(g);
}

/* ---- without sockets -------------------------------------------------------------------------- */

ps_grpc_t *ps_grpc_new_inline(const ps_grpc_opts_t *o)
{
    ps_grpc_t *g = alloc(o);
    g->inline_mode = true;
    return g;
}

ps_grpc_conn_t *ps_grpc_conn_new_inline(ps_grpc_t *g)
{
    conn_t *c = conn_new(g, -1);
    c->handshaken = true;
    return c;
}

int ps_grpc_feed(ps_grpc_conn_t *c, const uint8_t *in, size_t n, ps_buf_t *out)
{
    if (c->closed)
        return -1;
    c->sink = out;
    int rc = conn_recv(c, in, n);
    if (!c->closed)
        conn_flush(c);
    c->sink = NULL;
    return rc != 0 || c->closed ? -1 : 0;
}

void ps_grpc_conn_free_inline(ps_grpc_conn_t *c)
{
    conn_close(c);
    conn_destroy(c);
}
