/*
 * grpc.h - the gRPC listener (--grpc.listen-address): unary gRPC methods over HTTP/2, h2c with prior
 * knowledge and TLS with ALPN h2, on libnghttp2 (the only user of it). One event-loop thread
 * (epoll) holds every connection and HTTP/2 session; the methods run on worker threads, so a
 * handler may block (a write waiting for its commit). Same TLS and credentials as the main port
 * (config/webconfig.h, auth/auth.h), each method declaring the scope it needs.
 *
 * A call, as grpc/grpc's PROTOCOL-HTTP2.md frames it: HEADERS (:method POST, :path
 * /package.Service/Method, content-type application/grpc[+proto], te: trailers, optional
 * grpc-timeout, grpc-encoding identity|gzip, authorization), DATA with one message
 * (1 byte compressed flag, 4 bytes big-endian length, the message), END_STREAM. The answer:
 * HEADERS (:status 200, content-type application/grpc, grpc-accept-encoding), DATA (the response
 * message, never compressed), trailers (grpc-status, grpc-message percent-encoded); an error is
 * trailers-only (one HEADERS with END_STREAM). docs/api.md lists the statuses and their messages.
 */
#ifndef PS_GRPC_H
#define PS_GRPC_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/webconfig.h"
#include "core/err.h"
#include "core/mem.h"

/** The status codes of grpc/grpc doc/statuscodes.md (their numbers are the wire's). */
typedef enum {
    PS_GRPC_OK = 0,
    PS_GRPC_CANCELLED = 1,
    PS_GRPC_UNKNOWN = 2,
    PS_GRPC_INVALID_ARGUMENT = 3,
    PS_GRPC_DEADLINE_EXCEEDED = 4,
    PS_GRPC_NOT_FOUND = 5,
    PS_GRPC_ALREADY_EXISTS = 6,
    PS_GRPC_PERMISSION_DENIED = 7,
    PS_GRPC_RESOURCE_EXHAUSTED = 8,
    PS_GRPC_FAILED_PRECONDITION = 9,
    PS_GRPC_ABORTED = 10,
    PS_GRPC_OUT_OF_RANGE = 11,
    PS_GRPC_UNIMPLEMENTED = 12,
    PS_GRPC_INTERNAL = 13,
    PS_GRPC_UNAVAILABLE = 14,
    PS_GRPC_DATA_LOSS = 15,
    PS_GRPC_UNAUTHENTICATED = 16,
} ps_grpc_status_t;

/** What a handler knows of its call. Valid during the handler only. */
typedef struct ps_grpc_call {
    const char *path;          /* "/package.Service/Method" */
    int64_t deadline;          /* ps_time_now() clock, ns; 0: the client set none (grpc-timeout) */
    unsigned scopes;           /* PS_SCOPE_* of the caller's credential (all without authentication) */
    const atomic_bool *cancelled; /* set when the client resets the stream or its deadline passes */
} ps_grpc_call_t;

/** A unary method: the request message req (n bytes, already decompressed) in, the response
 *  message appended to resp (empty on entry). Returns a status; for one other than PS_GRPC_OK,
 *  msg (msgsize bytes, "" on entry) takes the grpc-message and resp is not sent. Runs on a worker
 *  thread and may block; it should give up when *call->cancelled is set. */
typedef ps_grpc_status_t (*ps_grpc_unary_fn)(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n,
                                             ps_buf_t *resp, char *msg, size_t msgsize);

/** One row of the method table. */
typedef struct ps_grpc_method {
    const char *path;          /* "/package.Service/Method" (copied) */
    unsigned scope;            /* PS_SCOPE_* the credential needs (0: any caller, even without one) */
    ps_grpc_unary_fn fn;
    void *ctx;
} ps_grpc_method_t;

typedef struct ps_grpc_opts {
    const char *listen;        /* host:port ("127.0.0.1:4317"; port 0 picks one) */
    size_t max_message;        /* largest request message, compressed or not (0: 4 MiB) */
    uint32_t max_streams;      /* SETTINGS_MAX_CONCURRENT_STREAMS per connection (0: 100) */
    uint32_t max_connections;  /* connections at once; more are closed at accept (0: 1024) */
    int64_t idle_timeout;      /* ns a connection may go without a byte from its client while no call
                                  of it is running (0: 5 minutes); 10 s for the TLS handshake and
                                  the connection preface */
    uint32_t workers;          /* threads running the methods (0: 4) */
    uint32_t max_queued;       /* calls waiting for a worker; more get RESOURCE_EXHAUSTED (0: 64) */
    size_t max_buffered;       /* request bytes held at once over all calls (0: 4 x max_message, at
                                  least 64 MiB); a call past it gets RESOURCE_EXHAUSTED */
    uint32_t max_header_list;  /* bytes of one request's header list (names + values + 32 each;
                                  0: 16 KiB); past it the stream is reset */
    uint32_t max_resets;       /* streams a client may reset per connection per 10 s (0: 200); past
                                  it GOAWAY ENHANCE_YOUR_CALM and the connection closes */
} ps_grpc_opts_t;

typedef struct ps_grpc ps_grpc_t;

/** Binds the listening socket (the port conflict shows before anything starts) and registers
 *  grpc.health.v1.Health/Check (SERVING; a service name that is neither "" nor a registered
 *  service answers NOT_FOUND). NULL with err on failure. */
ps_grpc_t *ps_grpc_new(const ps_grpc_opts_t *o, ps_err_t *err);
/** Adds a method to the table (before ps_grpc_start). PS_EINVAL for a path not of the form
 *  "/service/method" or one already there. */
int ps_grpc_register(ps_grpc_t *g, const ps_grpc_method_t *m, ps_err_t *err);
/** Puts a web configuration in force (wc is read, not taken: TLS context and credentials are
 *  built from it): before ps_grpc_start or later (SIGHUP). TLS offers ALPN h2 only (gRPC needs
 *  HTTP/2, whatever http_server_config.http2 says). PS_EINVAL when a certificate does not load or a
 *  reload would turn TLS on or off; the configuration in force stays. NULL wc: none. Thread-safe. */
int ps_grpc_web_config(ps_grpc_t *g, const ps_webconfig_t *wc, ps_err_t *err);
/** Starts the loop and the workers. */
int ps_grpc_start(ps_grpc_t *g, ps_err_t *err);
/** The port bound. */
int ps_grpc_port(const ps_grpc_t *g);
/** Closes the listener and sends GOAWAY (NO_ERROR, the last stream it took) on every connection:
 *  calls begun before it still run (Health/Check answers NOT_SERVING from now on); a call whose
 *  headers arrive after it gets UNAVAILABLE "the server is shutting down". */
void ps_grpc_begin_shutdown(ps_grpc_t *g);
/** Waits until every call begun before the shutdown is answered and its answer sent (10 s at
 *  most), closes every connection, joins the threads and frees g. NULL is a no-op. */
void ps_grpc_stop(ps_grpc_t *g);

/** A method that answers UNIMPLEMENTED with ctx (a const char *) as grpc-message: the place of a
 *  method this build does not serve yet. */
ps_grpc_status_t ps_grpc_unimplemented(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n,
                                       ps_buf_t *resp, char *msg, size_t msgsize);

/** The gRPC status for a profstore error code (core/err.h): EINVAL INVALID_ARGUMENT, ETOOBIG and
 *  ENOSPACE RESOURCE_EXHAUSTED, EUNAVAIL and EOVERLOAD UNAVAILABLE (retried by OTLP exporters),
 *  ETIMEOUT DEADLINE_EXCEEDED, ...; the table is in src/grpc/server.c. */
ps_grpc_status_t ps_grpc_status_of(int ps_code);
/** The name of a status ("RESOURCE_EXHAUSTED"). */
const char *ps_grpc_status_name(int status);

/** Counters for tests: calls answered per status (17 entries). */
void ps_grpc_counts(ps_grpc_t *g, uint64_t out[17]);
/** /metrics: profstore_grpc_calls_total{code} (every status, 0 included), profstore_grpc_connections
 *  (open), profstore_grpc_connections_refused_total (past --grpc.max-connections),
 *  profstore_grpc_reset_flood_total (connections ended for too many resets). Thread-safe. */
void ps_grpc_metrics(ps_grpc_t *g, ps_buf_t *b);

/*
 * Without sockets (the fuzz target, unit tests): a server with no listener and no threads whose
 * calls run on the caller's thread. ps_grpc_feed gives one connection's client bytes to its HTTP/2
 * session and appends what the server would send to out. 0, or -1 once the session is over.
 */
ps_grpc_t *ps_grpc_new_inline(const ps_grpc_opts_t *o);
typedef struct ps_grpc_conn ps_grpc_conn_t;
ps_grpc_conn_t *ps_grpc_conn_new_inline(ps_grpc_t *g);
int ps_grpc_feed(ps_grpc_conn_t *c, const uint8_t *in, size_t n, ps_buf_t *out);
void ps_grpc_conn_free_inline(ps_grpc_conn_t *c);

#endif
