/*
 * connguard.c - connection hardening around h2o 2.2.5 (see connguard.h).
 *
 * What h2o 2.2.5 does by itself, and why this file exists:
 * - HTTP/1 (lib/http1.c) reads the whole body before the handler runs, under one timer
 *   (globalconf.http1.req_timeout, 10 s) that covers the keep-alive wait, the header and the
 *   body together and closes the socket without an answer when it fires. Here that timer is only a
 *   far backstop (REQ_BACKSTOP_MS); a per-loop tick (every TICK_MAX_MS or less) looks at every
 *   HTTP/1 connection instead: which phase it is in (waiting for a request, reading its header,
 *   reading its body, busy) and when bytes last came in on its socket. Busy is a request handed
 *   to its handler (whatever its socket does meanwhile: qpool.c reads it to see the client's end,
 *   and its bytes stay in the input buffer until the answer) or an answer being written.
 *   A header not complete within --web.read-header-timeout of its first byte, or a body with no
 *   byte for --web.body-idle-timeout or arriving slower than --web.body-min-rate (after that
 *   timeout's grace), is answered 408 in the API's error shape and the connection closed. A fresh
 *   connection that sends nothing within the header timeout, a kept-alive one idle for
 *   --web.idle-timeout, and one whose answer h2o cannot write because the client reads nothing
 *   (the kernel's unsent queue, SIOCOUTQ, unchanged for --web.idle-timeout) are closed without an
 *   answer.
 * - HTTP/2 (lib/http2/connection.c) has only its idle timeout (globalconf.http2.idle_timeout,
 *   --web.idle-timeout here), which any byte read resets. The same tick bounds what a client
 *   dribbles: a header block (HEADERS, then CONTINUATIONs up to END_HEADERS, timed by the frame
 *   parser's wrapper from the read that brought its first byte, or by the tick from when it first
 *   sees one the wrapper missed: a stream in RECV_HEADERS, a partial frame left in the input) not
 *   complete within
 *   --web.read-header-timeout ends the connection with GOAWAY PROTOCOL_ERROR (h2o parses nothing
 *   else meanwhile, so no stream can be answered); a stream receiving its body (h2o 2.2.5 keeps it
 *   whole in the stream until END_STREAM; h2_stream_t mirrors the stream's head to see it) gets
 *   --web.body-idle-timeout and --web.body-min-rate as an HTTP/1 body, and is answered 408 on that
 *   stream alone. Both are counted in profstore_http_timeouts_total.
 * - Body size: h2o has one limit (max_request_entity_size), the larger of --max-body-size and
 *   --debuginfo.max-file-bytes, and reads a whole body before a handler runs. Every route but the
 *   debug file upload is held to --max-body-size while its body arrives (413, in the error shape
 *   routes.c answers with; HTTP/1: the connection closed, HTTP/2: the stream alone), checked after
 *   every read and write callback of the socket (both wrapped) and on the tick: at most one socket
 *   read past the limit. h1_conn_t mirrors h2o's HTTP/1 connection to see its request's body
 *   phase; HTTP/2 streams are found in the connection's priority tree (public structs). See "the
 *   body limit" below.
 * - Content-Length and Transfer-Encoding never reach req->headers (h2o consumes them: the first
 *   Content-Length wins, a Transfer-Encoding overrides it), so ps_conns_refuse_framing re-reads the
 *   request's header block, which is still at the start of the socket's input buffer while the
 *   request is being handled, and refuses the ambiguous ones before any handler runs.
 * - h2c (prior knowledge and Upgrade: h2c) hangs on globalconf.http1.upgrade_to_http2.
 * - Rapid reset (CVE-2023-44487): h2o 2.2.5 has no budget for streams a client resets. Each
 *   HTTP/2 connection's frame parser (_read_expect of h2o's connection struct, whose head h2_conn_t
 *   mirrors) is wrapped: every RST_STREAM frame the client sends is counted, and past
 *   --web.http2-max-resets within RESET_WINDOW_MS the wrapper returns ENHANCE_YOUR_CALM, on which
 *   h2o sends GOAWAY and closes. The wrapper is put in place as soon as h2o turns a connection into
 *   HTTP/2 inside a read callback (wrapped too, for that), else at the next tick; frames h2o parses
 *   in the very read that made the connection HTTP/2 (one socket read) are not counted.
 * - Accept: h2o_evloop_socket_accept returns NULL on EMFILE and the listener stays readable, so
 *   the loop spins. Here the listener pauses for FD_PAUSE_MS, the oldest idle connections (HTTP/2:
 *   without a stream) are closed to free descriptors; when this loop has none idle, the other loops
 *   close theirs at their next ticks (descriptors are the process's, connections each loop's), and
 *   only when that frees none within FD_STARVE_MS is the newcomer accepted on a reserve
 *   descriptor, answered 503 and closed (counted as refused). At --web.max-connections
 *   the listener pauses (newcomers wait in the kernel backlog, as Prometheus' LimitListener) and
 *   resumes when one closes; while clients wait there, connections idle for EVICT_MIN_IDLE_MS or
 *   more are closed, oldest first, one per waiting client, so idle keep-alives cannot starve them.
 *
 * Everything runs on the loop's own thread, but the open count, which is server-wide and atomic.
 */
#include "connguard.h"

#include <errno.h>
#include <fcntl.h>
#include <h2o/http1.h>
#include <h2o/http2.h>
#include <h2o/http2_scheduler.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/ssl.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <strings.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "connect.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "http.h"
#include "internal.h"

#define TICK_MAX_MS 100
#define TICK_MIN_MS 10
#define REQ_BACKSTOP_MS (3600 * 1000) /* h2o's own total request timer: an hour */
#define EVICT_MIN_IDLE_MS 250         /* an idle connection younger than this is not closed for room */
#define EVICT_MAX_PER_ROUND 64
#define FD_PAUSE_MS 50    /* listener pause after EMFILE */
#define FD_STARVE_MS 300  /* EMFILE with nothing idle here: other loops are asked first, this long */
#define FD_HELP_PER_TICK 4 /* idle connections a loop closes each tick for a starved one */
#define RESET_WINDOW_MS 10000
#define MAX_LISTENERS 8   /* per loop */

/* The head of h2o 2.2.5's struct st_h2_conn_t, field for field up to its frame parser
 * (h2o/http2_internal.h has it, but includes a khash.h that Debian does not ship). */
typedef struct h2_conn h2_conn_t;
typedef ssize_t (*expect_fn)(h2_conn_t *conn, const uint8_t *src, size_t len, const char **err_desc);
struct h2_conn {
    h2o_conn_t super;
    h2o_socket_t *sock;
    h2o_http2_settings_t peer_settings;
    void *streams; /* khash_t(h2o_http2_stream_t) * */
    struct {
        uint32_t max_open, max_processed;
    } pull_stream_ids;
    struct {
        uint32_t max_open;
    } push_stream_ids;
    struct {
        struct {
            uint32_t open, half_closed, send_body;
        } priority, pull, push;
    } num_streams;
    h2o_http2_scheduler_node_t scheduler;
    int state; /* h2o_http2_conn_state_t */
    h2o_linklist_t _conns; /* in h2o_context_t.http2._conns */
    expect_fn _read_expect;
};
#define H2_FRAME_HEADER_SIZE 9
#define H2_FRAME_TYPE_DATA 0
#define H2_FRAME_TYPE_HEADERS 1
#define H2_FRAME_TYPE_RST_STREAM 3
#define H2_FRAME_TYPE_CONTINUATION 9
#define H2_FRAME_FLAG_END_HEADERS 0x4

/* h2o 2.2.5's struct st_h2o_http1_conn_t (lib/http1.c), field for field. Only read. Its layout is
 * checked where it is found (the request's conn is its head, its socket the connection's). In the
 * body phase _req_entity_reader is set, _reqsize is the header's length plus the Content-Length
 * (a chunked body: the header's length; the body, decoded in place, follows it), req.input.path
 * is a copy in the request's pool. */
typedef struct h1_conn {
    h2o_conn_t super;
    h2o_socket_t *sock;
    h2o_linklist_t _conns; /* in h2o_context_t.http1._conns */
    h2o_timeout_t *_timeout;
    h2o_timeout_entry_t _timeout_entry;
    uint64_t _req_index;
    size_t _prevreqlen;
    size_t _reqsize;
    void *_req_entity_reader;
    struct {
        h2o_ostream_t super;
        int sent_headers;
        struct {
            void *buf;
            h2o_ostream_pull_cb cb;
        } pull;
    } _ostr_final;
    struct {
        void *data;
        h2o_http1_upgrade_cb cb;
    } upgrade;
    h2o_req_t req;
} h1_conn_t;

/* The head of h2o 2.2.5's struct st_h2o_http2_stream_t (h2o/http2_internal.h), field for field up
 * to the request it embeds. Only read, but for the two steps of an answer (answer_h2). The layout
 * is checked on every use: a stream still receiving its body has not started its answer, so its
 * request's _ostr_top is the stream's own final ostream. */
enum { H2S_IDLE, H2S_RECV_HEADERS, H2S_RECV_BODY, H2S_REQ_PENDING, H2S_SEND_HEADERS, H2S_SEND_BODY,
       H2S_SEND_BODY_IS_FINAL, H2S_END_STREAM };
typedef struct h2_stream {
    uint32_t stream_id;
    h2o_ostream_t _ostr_final;
    int state; /* h2o_http2_stream_state_t */
    ssize_t output_window, input_window;
    h2o_http2_priority_t received_priority;
    h2o_buffer_t *_req_body; /* the body so far (h2o 2.2.5 hands it whole to the handler) */
    size_t _expected_content_length;
    H2O_VECTOR(h2o_iovec_t) _data;
    h2o_ostream_pull_cb _pull_cb;
    struct {
        uint32_t open, half_closed, send_body;
    } *_num_streams_slot;
    void *cache_digests;
    union {
        struct {
            uint32_t parent_stream_id;
            unsigned promise_sent : 1;
        } push;
        struct {
            unsigned casper_is_ready : 1;
        } pull;
    };
    struct {
        h2o_linklist_t link;
        h2o_http2_scheduler_openref_t scheduler;
    } _refs;
    h2o_send_state_t send_state;
    h2o_req_t req;
} h2_stream_t;

enum { R_FD, R_MAXCONN, NREASONS };
static const char *const reason_names[NREASONS] = {"fd_limit", "max_connections"};
enum { T_HEADER, T_BODY_IDLE, T_BODY_RATE, T_FRESH, T_IDLE, T_WRITE, NTIMEOUTS };

struct ps_conns {
    ps_gauge_t open;
    uint32_t max;
    uint64_t header_ms, body_idle_ms, idle_ms, min_rate, tick_ms;
    uint32_t max_resets;
    size_t max_body; /* --max-body-size: every body but a debug file upload's */
    atomic_uint fd_starved; /* loops at EMFILE with nothing of their own to close */
    ps_counter_t accepted, refused[NREASONS], evicted[NREASONS], timeouts[NTIMEOUTS], framing, resets_refused,
        too_large;
};


/* one loop's share: its connections in accept order, its paused listeners, its reserve fd */
typedef struct lconns {
    ps_loop_t *loop;
    struct ps_conns *cs;
    h2o_linklist_t conns;
    h2o_timeout_t tick_timeout;
    h2o_timeout_entry_t tick;
    h2o_socket_t *paused[MAX_LISTENERS];
    int npaused;
    uint64_t fd_wait_until; /* loop ms: no accept before (after EMFILE) */
    uint32_t closing;       /* connections shut or answered 408, not closed yet */
    int reserve_fd;
    bool starved;           /* counted in cs->fd_starved */
    uint64_t starved_since; /* loop ms */
} lconns_t;

typedef struct conn {
    h2o_linklist_t link; /* lconns_t.conns, oldest first */
    lconns_t *lc;
    h2o_socket_t *sock;
    h2o_socket_cb orig_read;  /* h2o's read callback, which on_read_wrapped calls */
    h2o_socket_cb orig_write; /* h2o's write callback (of the write in flight), which on_write_wrapped calls */
    expect_fn orig_expect;    /* h2o's HTTP/2 frame parser, which on_expect_wrapped calls */
    h2_conn_t *h2;     /* once h2o made it HTTP/2 */
    h1_conn_t *h1;     /* h2o's HTTP/1 connection, valid while it is the socket's data and h2 is NULL */
    uint64_t lim_req;  /* h1's request (_req_index) lim_exempt and lim_hdr are of */
    size_t lim_hdr;    /* its header's length */
    int lim_exempt;    /* 1: a debug file upload (h2o's own limit, the larger); 2: not; 0: not known */
    h2o_timeout_entry_t recheck; /* zero timeout: the wrapper put back and the body checked */
    uint32_t held[8];  /* HTTP/2: streams answered 413 whose DATA h2o is not given before the answer is out */
    int nheld;
    uint64_t accepted_at, read_at, busy_at; /* loop ms: accepted, bytes last came in, last seen in a request */
    uint64_t reads;           /* read callbacks (or input growths seen by the tick) */
    size_t seen_in;           /* the socket's input size at the last tick */
    uint64_t body_t0;         /* loop ms the body phase was first seen (0: not in it) */
    size_t body_b0;           /* the input's size then (h2o keeps the body there until the answer) */
    uint64_t reset_window_at;
    uint32_t resets;
    uint64_t out_at; /* loop ms the unsent queue last changed while h2o was writing */
    int outq;        /* the kernel's unsent bytes (SIOCOUTQ) then */
    /* HTTP/2 */
    uint64_t h2_hdr_at; /* loop ms the first frame of a header block not yet complete came in (0: none) */
    struct h2body {     /* its streams receiving a body, as the last tick saw them */
        uint32_t id, gen;
        size_t size, b0;  /* the body's bytes then; when first seen */
        uint64_t at, t0;  /* loop ms it last grew; first seen */
        int exempt;       /* as lim_exempt */
    } *bodies;
    size_t nbodies, capbodies;
    uint32_t gen;
    char kill[200];   /* set: the frame parser fails with this (GOAWAY PROTOCOL_ERROR) */
    SSL_CTX *ssl_ctx; /* a reference to the TLS context it was accepted with: h2o makes the connection's
                       * SSL from it at its first read, which may come after a reload swapped it */
    int in_cb;
    unsigned closed : 1, evicting : 1;
} conn_t;

static void on_read_wrapped(h2o_socket_t *sock, const char *err);
static void on_write_wrapped(h2o_socket_t *sock, const char *err);
static ssize_t on_expect_wrapped(h2_conn_t *h2, const uint8_t *src, size_t len, const char **err_desc);
static void check_body(conn_t *c);
static void answer_h2_413(conn_t *c, h2o_req_t *req, const char *msg);
static bool h1_too_large(conn_t *c, h1_conn_t *h1, char *msg, size_t n);
static struct h2body *h2body_of(conn_t *c, const h2_stream_t *st, uint64_t now);
static bool h2_too_large(conn_t *c, h2_stream_t *st, struct h2body *b, char *msg, size_t n);

static uint64_t ms_of(int64_t ns)
{
    return ns <= 0 ? 0 : (uint64_t)(ns / 1000000) + (ns % 1000000 != 0);
}

void ps_conns_configure(ps_server_t *s, h2o_globalconf_t *conf)
{
    struct ps_conns *cs = ps_xcalloc(1, sizeof(*cs));
    const ps_server_opts_t *o = &s->opts;
    cs->max = o->max_connections;
    cs->header_ms = ms_of(o->read_header_timeout);
    cs->body_idle_ms = ms_of(o->body_idle_timeout);
    cs->idle_ms = ms_of(o->idle_timeout);
    cs->min_rate = o->body_min_rate;
    cs->max_resets = o->http2_max_resets;
    cs->max_body = o->max_upload > o->max_body ? o->max_body : 0; /* else h2o's own limit is max_body */
    /* the tick: at most a quarter of the smallest timeout, so one fires within 25 % of its value */
    uint64_t t = TICK_MAX_MS;
    uint64_t tos[] = {cs->header_ms, cs->body_idle_ms, cs->idle_ms};
    for (size_t i = 0; i < sizeof(tos) / sizeof(tos[0]); i++)
        if (tos[i] != 0 && tos[i] / 4 < t)
            t = tos[i] / 4;
    cs->tick_ms = t < TICK_MIN_MS ? TICK_MIN_MS : t;
    s->conns = cs;

    conf->http1.upgrade_to_http2 = o->enable_h2c ? 1 : 0;
    conf->http1.req_timeout = REQ_BACKSTOP_MS;
    if (cs->idle_ms != 0)
        conf->http2.idle_timeout = cs->idle_ms;
}

/* ---- per connection: the record, the read wrapper, the HTTP/2 reset budget ---- */

static void conn_free(conn_t *c)
{
    h2o_linklist_unlink(&c->link);
    h2o_timeout_unlink(&c->recheck);
    if (c->ssl_ctx != NULL)
        SSL_CTX_free(c->ssl_ctx);
    free(c->bodies);
    free(c);
}

static void resume_listeners(lconns_t *lc)
{
    if (lc->npaused == 0 || atomic_load(&lc->loop->srv->stopping))
        return;
    if (lc->cs->max != 0 && ps_gauge_get(&lc->cs->open) >= lc->cs->max)
        return;
    if (h2o_now(lc->loop->ctx.loop) < lc->fd_wait_until)
        return;
    for (int i = 0; i < lc->npaused; i++)
        h2o_socket_read_start(lc->paused[i], ps_conns_on_accept);
    lc->npaused = 0;
}

static void pause_listener(lconns_t *lc, h2o_socket_t *listener)
{
    for (int i = 0; i < lc->npaused; i++)
        if (lc->paused[i] == listener)
            return;
    if (lc->npaused == MAX_LISTENERS)
        return; /* cannot happen: a loop has a handful of listeners */
    h2o_socket_read_stop(listener);
    lc->paused[lc->npaused++] = listener;
}

/* h2o_socket_t.on_close: h2o disposed the socket (whatever closed it) */
static void on_conn_close(void *data)
{
    conn_t *c = data;
    lconns_t *lc = c->lc;
    ps_gauge_add(&lc->cs->open, -1);
    if (c->evicting)
        lc->closing--;
    c->closed = 1;
    c->sock = NULL;
    h2o_timeout_unlink(&c->recheck);
    if (c->in_cb == 0)
        conn_free(c);
    resume_listeners(lc);
}

/* HTTP/2: a connection that became HTTP/2 gets its frame parser wrapped (once) */
static void hook_h2(conn_t *c, h2_conn_t *h2)
{
    c->h2 = h2;
    if (h2->_read_expect != NULL && h2->_read_expect != on_expect_wrapped) {
        c->orig_expect = h2->_read_expect;
        h2->_read_expect = on_expect_wrapped;
    }
}

/* after any h2o callback of c's socket: keep the read wrapper in place and notice HTTP/2 */
static void rewrap(conn_t *c)
{
    h2o_socket_t *sock = c->sock;
    if (sock->_cb.read != NULL && sock->_cb.read != on_read_wrapped) {
        c->orig_read = sock->_cb.read;
        sock->_cb.read = on_read_wrapped;
    }
    /* a write's end may start reading (HTTP/1: after a 100 Continue, h2o reads the body) */
    if (sock->_cb.write != NULL && sock->_cb.write != on_write_wrapped) {
        c->orig_write = sock->_cb.write;
        sock->_cb.write = on_write_wrapped;
    }
    if (c->h2 == NULL && c->h1 == NULL) {
        /* h2o_http1_accept links the new connection last in ctx->http1._conns */
        h2o_linklist_t *anchor = &c->lc->loop->ctx.http1._conns;
        if (!h2o_linklist_is_empty(anchor)) {
            h1_conn_t *h1 = H2O_STRUCT_FROM_MEMBER(h1_conn_t, _conns, anchor->prev);
            if (h1->sock == sock && sock->data == h1 && h1->req.conn == &h1->super)
                c->h1 = h1;
        }
    }
    if (c->h2 == NULL) {
        /* h2o_http2_accept links the new connection last in ctx->http2._conns */
        h2o_linklist_t *anchor = &c->lc->loop->ctx.http2._conns;
        if (!h2o_linklist_is_empty(anchor)) {
            h2_conn_t *h2 = H2O_STRUCT_FROM_MEMBER(h2_conn_t, _conns, anchor->prev);
            if (h2->sock == sock)
                hook_h2(c, h2);
        }
    }
}

/* After h2o's own read or write callback returned: the connection freed if it closed meanwhile,
 * else the wrappers put back and the body's size checked (outside nested callbacks). */
static void after_callback(conn_t *c)
{
    c->in_cb--;
    if (c->closed) {
        if (c->in_cb == 0)
            conn_free(c);
        return;
    }
    rewrap(c);
    if (c->in_cb == 0)
        check_body(c);
}

static void on_read_wrapped(h2o_socket_t *sock, const char *err)
{
    conn_t *c = sock->on_close.data;
    c->read_at = h2o_now(c->lc->loop->ctx.loop);
    c->reads++;
    c->in_cb++;
    c->orig_read(sock, err);
    after_callback(c);
}

/* h2o's socket layer takes the write callback and clears it before calling it */
static void on_write_wrapped(h2o_socket_t *sock, const char *err)
{
    conn_t *c = sock->on_close.data;
    c->in_cb++;
    c->orig_write(sock, err);
    after_callback(c);
}

static ssize_t on_expect_wrapped(h2_conn_t *h2, const uint8_t *src, size_t len, const char **err_desc)
{
    conn_t *c = h2->sock->on_close.data;
    if (c->kill[0] != '\0') {
        *err_desc = c->kill;
        return H2O_HTTP2_ERROR_PROTOCOL;
    }
    if (c->nheld != 0 && len >= H2_FRAME_HEADER_SIZE && src[3] == H2_FRAME_TYPE_DATA) {
        /* h2o resets a stream it gets DATA for once answered, its answer's body unsent with it: the
         * parse waits until the answer is written (on_recheck, in this loop turn) */
        uint32_t id = ((uint32_t)src[5] << 24 | (uint32_t)src[6] << 16 | (uint32_t)src[7] << 8 | src[8]) & 0x7fffffff;
        for (int i = 0; i < c->nheld; i++)
            if (c->held[i] == id)
                return H2O_HTTP2_ERROR_INCOMPLETE;
    }
    ssize_t ret = c->orig_expect(h2, src, len, err_desc);
    if (h2->_read_expect != on_expect_wrapped) { /* h2o moved on (preface done, CONTINUATION, ...) */
        c->orig_expect = h2->_read_expect;
        h2->_read_expect = on_expect_wrapped;
    }
    /* a header block (HEADERS, then CONTINUATIONs up to END_HEADERS) is timed from the read that
     * brought its first byte; h2o parses a frame only once it is whole (the preface's 4th byte is
     * a space, never a frame type) */
    if (len >= 4 && (src[3] == H2_FRAME_TYPE_HEADERS || src[3] == H2_FRAME_TYPE_CONTINUATION)) {
        if (ret == H2O_HTTP2_ERROR_INCOMPLETE || (ret > 0 && (src[4] & H2_FRAME_FLAG_END_HEADERS) == 0)) {
            if (c->h2_hdr_at == 0)
                c->h2_hdr_at = h2o_now(c->lc->loop->ctx.loop);
        } else if (ret > 0) {
            c->h2_hdr_at = 0;
        }
    }
    if (c->lc->cs->max_resets != 0 && ret > 0 && len >= H2_FRAME_HEADER_SIZE && src[3] == H2_FRAME_TYPE_RST_STREAM) {
        uint64_t now = h2o_now(c->lc->loop->ctx.loop);
        if (c->resets == 0 || now - c->reset_window_at >= RESET_WINDOW_MS) {
            c->reset_window_at = now;
            c->resets = 0;
        }
        if (++c->resets > c->lc->cs->max_resets) {
            ps_counter_add(&c->lc->cs->resets_refused, 1);
            *err_desc = "too many streams reset by the client (--web.http2-max-resets)";
            return H2O_HTTP2_ERROR_ENHANCE_YOUR_CALM;
        }
    }
    return ret;
}

/* ---- accept ---- */

static const char busy_503[] =
    "HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Type: application/json\r\nRetry-After: 1\r\n"
    "Content-Length: 105\r\n\r\n"
    "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"the server is out of file descriptors; retry later\"}";

static int evict_idle(lconns_t *lc, int max, uint64_t min_idle_ms, int reason);

/* nothing idle anywhere: newcomers are accepted on the reserve descriptor, answered 503, closed */
static void refuse_on_reserve(lconns_t *lc, h2o_socket_t *listener)
{
    int lfd = h2o_socket_get_fd(listener);
    for (int i = 0; i < 16; i++) {
        close(lc->reserve_fd);
        int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (fd >= 0) {
            ssize_t w = write(fd, busy_503, sizeof(busy_503) - 1);
            (void)w;
            shutdown(fd, SHUT_WR);
            close(fd);
            ps_counter_add(&lc->cs->refused[R_FD], 1);
        }
        lc->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
        if (fd < 0 || lc->reserve_fd < 0)
            break;
    }
}

/* EMFILE/ENFILE: free descriptors by closing idle connections. Descriptors are the process's, the
 * connections each loop's: with nothing idle here, the other loops are asked (cs->fd_starved, read
 * by their ticks) to close their oldest idle ones, and only when that has not freed one within
 * FD_STARVE_MS are newcomers refused on the reserve descriptor with a 503. Either way the listener
 * rests until the next tick. */
static void set_starved(lconns_t *lc, bool on, uint64_t now)
{
    if (lc->starved == on)
        return;
    lc->starved = on;
    lc->starved_since = now;
    if (on)
        atomic_fetch_add(&lc->cs->fd_starved, 1);
    else
        atomic_fetch_sub(&lc->cs->fd_starved, 1);
}

static void on_fd_limit(lconns_t *lc, h2o_socket_t *listener)
{
    uint64_t now = h2o_now(lc->loop->ctx.loop);
    if (evict_idle(lc, 16, 0, R_FD) != 0 || lc->closing != 0) {
        set_starved(lc, false, now);
    } else {
        set_starved(lc, true, now);
        if (now - lc->starved_since >= FD_STARVE_MS && lc->reserve_fd >= 0)
            refuse_on_reserve(lc, listener);
    }
    lc->fd_wait_until = now + FD_PAUSE_MS;
    pause_listener(lc, listener);
}

void ps_conns_on_accept(h2o_socket_t *listener, const char *err)
{
    if (err != NULL)
        return;
    h2o_accept_ctx_t *actx = listener->data;
    ps_loop_t *l = ps_loop_of(actx->ctx);
    lconns_t *lc = l->conns;
    struct ps_conns *cs = lc->cs;
    if (cs->max != 0 && ps_gauge_get(&cs->open) >= cs->max) {
        pause_listener(lc, listener); /* newcomers wait in the kernel's backlog */
        return;
    }
    h2o_socket_t *sock = h2o_evloop_socket_accept(listener);
    if (sock == NULL) {
        if (errno == EMFILE || errno == ENFILE)
            on_fd_limit(lc, listener);
        return;
    }
    set_starved(lc, false, 0);
    conn_t *c = ps_xcalloc(1, sizeof(*c));
    c->lc = lc;
    c->sock = sock;
    c->accepted_at = c->read_at = c->busy_at = h2o_now(l->ctx.loop);
    if (actx->ssl_ctx != NULL && SSL_CTX_up_ref(actx->ssl_ctx) == 1) /* kept until the connection ends */
        c->ssl_ctx = actx->ssl_ctx;
    h2o_linklist_insert(&lc->conns, &c->link);
    sock->on_close.cb = on_conn_close;
    sock->on_close.data = c;
    ps_gauge_add(&cs->open, 1);
    ps_counter_add(&cs->accepted, 1);
    c->in_cb++;
    h2o_accept(actx, sock);
    c->in_cb--;
    if (c->closed) {
        conn_free(c);
        return;
    }
    rewrap(c);
}

/* ---- the tick: timeouts, the bound, eviction ---- */

enum { A_NONE, A_CLOSE, A_408, A_413, A_H2_408, A_H2_413, A_H2_KILL };

typedef struct visit {
    lconns_t *lc;
    uint64_t now;        /* loop ms */
    struct timeval wall; /* for h2o's request timestamps */
    int collect_idle;    /* gather the waiting connections into idle[] */
    conn_t **idle;
    size_t nidle, cap;
    /* the actions, done after the walk */
    struct action {
        h2o_req_t *req;
        conn_t *c;
        int what, kind;
        char msg[200];
    } *acts;
    size_t nacts, acap;
} visit_t;

static int h2_streams(const h2_conn_t *h2)
{
    return h2->num_streams.pull.open + h2->num_streams.pull.half_closed + h2->num_streams.pull.send_body +
               h2->num_streams.push.open + h2->num_streams.push.half_closed + h2->num_streams.push.send_body !=
           0;
}

static void add_idle(visit_t *v, conn_t *c)
{
    if (v->nidle == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->idle = realloc(v->idle, v->cap * sizeof(*v->idle));
        if (v->idle == NULL)
            abort();
    }
    v->idle[v->nidle++] = c;
}

static void add_action(visit_t *v, h2o_req_t *req, conn_t *c, int what, int kind, const char *msg)
{
    if (v->nacts == v->acap) {
        v->acap = v->acap ? v->acap * 2 : 16;
        v->acts = realloc(v->acts, v->acap * sizeof(*v->acts));
        if (v->acts == NULL)
            abort();
    }
    struct action *a = &v->acts[v->nacts++];
    a->req = req;
    a->c = c;
    a->what = what;
    a->kind = kind;
    snprintf(a->msg, sizeof(a->msg), "%s", msg ? msg : "");
}

static int64_t wall_ms_since(const struct timeval *now, const struct timeval *t)
{
    return ((int64_t)now->tv_sec - t->tv_sec) * 1000 + ((int64_t)now->tv_usec - t->tv_usec) / 1000;
}

static void fmt_ms(uint64_t ms, char *buf, size_t n)
{
    ps_format_duration((int64_t)ms * 1000000, buf, n);
}

/* A body arriving (HTTP/1 or an HTTP/2 stream) must keep moving, and after the idle timeout's grace
 * on average not slower than the minimum rate: the timeout kind that fired (msg says it), or -1.
 * last_byte: when a byte last came; t0: when the body was first seen, got bytes ago. */
static int body_verdict(const struct ps_conns *cs, uint64_t now, uint64_t last_byte, uint64_t t0, uint64_t got,
                        char *msg, size_t msglen)
{
    if (cs->body_idle_ms != 0 && now - last_byte >= cs->body_idle_ms) {
        char d[32];
        fmt_ms(cs->body_idle_ms, d, sizeof(d));
        snprintf(msg, msglen, "no byte of the request body for %s (--web.body-idle-timeout)", d);
        return T_BODY_IDLE;
    }
    uint64_t el = now - t0, grace = cs->body_idle_ms;
    if (cs->min_rate != 0 && el > grace && got * 1000 < cs->min_rate * (el - grace)) {
        snprintf(msg, msglen, "request body too slow: %llu bytes in %llu ms, under %llu bytes/s (--web.body-min-rate)",
                 (unsigned long long)got, (unsigned long long)el, (unsigned long long)cs->min_rate);
        return T_BODY_RATE;
    }
    return -1;
}

static int visit_req(h2o_req_t *req, void *data)
{
    visit_t *v = data;
    h2o_socket_t *sock = req->conn->callbacks->get_socket != NULL ? req->conn->callbacks->get_socket(req->conn) : NULL;
    if (sock == NULL || sock->on_close.cb != on_conn_close)
        return 0;
    conn_t *c = sock->on_close.data;
    struct ps_conns *cs = v->lc->cs;
    if (c->evicting)
        return 0;
    /* A request h2o handed to its handler (h2o_process_request bound its pathconf; h2o_init_request
     * clears it for the next one) is complete: its bytes stay in the socket's input until the
     * answer, and the socket may be read meanwhile (qpool.c watches for the client's end), yet it
     * is neither a header arriving nor a body stalled, however long it is handled. */
    if (req->pathconf != NULL || !h2o_socket_is_reading(sock) || h2o_socket_is_writing(sock)) {
        c->body_t0 = 0; /* busy: the handler or the answer */
        c->busy_at = v->now;
        /* an answer the client does not read: the kernel's queue stands still while h2o waits */
        int q = -1;
        if (!h2o_socket_is_writing(sock) || ioctl(h2o_socket_get_fd(sock), SIOCOUTQ, &q) != 0 || q != c->outq) {
            c->outq = q;
            c->out_at = v->now;
        } else if (cs->idle_ms != 0 && q > 0 && v->now - c->out_at >= cs->idle_ms) {
            add_action(v, req, c, A_CLOSE, T_WRITE, NULL);
        }
        return 0;
    }
    char d[32], msg[200];
    if (sock->input->size == 0 && h2o_timeval_is_null(&req->timestamps.request_body_begin_at)) {
        /* waiting for a request */
        c->body_t0 = 0;
        if (c->reads == 0) {
            if (cs->header_ms != 0 && v->now - c->accepted_at >= cs->header_ms) {
                add_action(v, req, c, A_CLOSE, T_FRESH, NULL);
                return 0;
            }
        } else {
            uint64_t last = c->read_at > c->busy_at ? c->read_at : c->busy_at;
            if (cs->idle_ms != 0 && v->now - last >= cs->idle_ms) {
                add_action(v, req, c, A_CLOSE, T_IDLE, NULL);
                return 0;
            }
        }
        if (v->collect_idle)
            add_idle(v, c);
        return 0;
    }
    if (h2o_timeval_is_null(&req->timestamps.request_body_begin_at)) {
        /* the header is arriving: bounded in total from its first byte */
        c->body_t0 = 0;
        c->busy_at = v->now;
        int64_t el = h2o_timeval_is_null(&req->timestamps.request_begin_at)
                         ? (int64_t)(v->now - c->accepted_at)
                         : wall_ms_since(&v->wall, &req->timestamps.request_begin_at);
        if (cs->header_ms != 0 && el >= (int64_t)cs->header_ms) {
            fmt_ms(cs->header_ms, d, sizeof(d));
            snprintf(msg, sizeof(msg),
                     "request header not complete within %s of its first byte (--web.read-header-timeout)", d);
            add_action(v, req, c, A_408, T_HEADER, msg);
        }
        return 0;
    }
    /* the body is arriving: it must keep moving, and on average not slower than the minimum rate */
    c->busy_at = v->now;
    if (c->body_t0 == 0) {
        c->body_t0 = v->now;
        c->body_b0 = sock->input->size;
    }
    h1_conn_t *h1 = H2O_STRUCT_FROM_MEMBER(h1_conn_t, req, req);
    if (cs->max_body != 0 && (h2o_conn_t *)h1 == req->conn && h1->sock == sock && h1->_req_entity_reader != NULL) {
        c->h1 = h1;
        if (h1_too_large(c, h1, msg, sizeof(msg))) {
            add_action(v, req, c, A_413, -1, msg);
            return 0;
        }
    }
    uint64_t got = sock->input->size > c->body_b0 ? sock->input->size - c->body_b0 : 0;
    int kind = body_verdict(cs, v->now, c->read_at, c->body_t0, got, msg, sizeof(msg));
    if (kind >= 0)
        add_action(v, req, c, A_408, kind, msg);
    return 0;
}

/* closes a connection from outside h2o: both directions shut, h2o sees the end on its next read
 * and closes it itself */
static void shut(conn_t *c)
{
    c->evicting = 1;
    c->lc->closing++;
    shutdown(h2o_socket_get_fd(c->sock), SHUT_RDWR);
}

/* the 408 or 413 itself, in the API's error shape, for a request no handler has seen: a 408 in
 * Connect's on Connect paths, a 413 as routes.c answers one */
static void send_refusal(h2o_req_t *req, h2o_socket_t *sock, int status, const char *msg)
{
    if (req->pathconf == NULL) {
        /* what h2o does before a handler (its setup_before_processing is not exported) */
        if (h2o_timeval_is_null(&req->timestamps.request_body_begin_at)) {
            /* still reading the header: nothing of the request is usable (its method and path
             * may point into a buffer h2o has since moved) */
            req->input.method = h2o_iovec_init(H2O_STRLIT("GET"));
            req->input.path = h2o_iovec_init(H2O_STRLIT("/"));
            req->input.scheme = sock->ssl != NULL ? &H2O_URL_SCHEME_HTTPS : &H2O_URL_SCHEME_HTTP;
        }
        h2o_hostconf_t *hostconf = *req->conn->hosts;
        h2o_get_timestamp(req->conn->ctx, &req->pool, &req->processed_at);
        req->input.authority = hostconf->authority.hostport;
        req->scheme = req->input.scheme;
        req->method = req->input.method;
        req->authority = req->input.authority;
        req->path = req->input.path;
        req->path_normalized =
            h2o_url_normalize_path(&req->pool, req->input.path.base, req->input.path.len, &req->query_at, &req->norm_indexes);
        req->input.query_at = req->query_at;
        h2o_req_bind_conf(req, hostconf, &hostconf->fallback_path);
    }
    if (status == 408 && !h2o_timeval_is_null(&req->timestamps.request_body_begin_at) &&
        ps_connect_is_path(req->path_normalized)) {
        ps_buf_t b = PS_BUF_INIT;
        ps_connect_error_json(PS_CONNECT_DEADLINE_EXCEEDED, msg, &b);
        ps_http_send(req, 408, "application/json", b.data, b.len);
        ps_buf_dispose(&b);
        return;
    }
    ps_http_error_status(req, status, msg);
}

/* HTTP/1: the answer, then the connection closes */
static void answer_h1(h2o_req_t *req, conn_t *c, int status, const char *msg)
{
    h2o_socket_read_stop(c->sock);
    req->http1_is_persistent = 0;
    c->evicting = 1; /* answered: no second action */
    c->lc->closing++;
    send_refusal(req, c->sock, status, msg);
}

/* HTTP/2: a stream still receiving its body is answered (408, 413) and ends with the answer; the
 * connection and its other streams go on. h2o 2.2.5 answers only a stream it has moved to
 * SEND_HEADERS, as its run_pending_requests does when a body is complete (RECV_BODY ->
 * REQ_PENDING -> SEND_HEADERS, counted half-closed); this takes those two steps (the
 * h2o_http2_stream_set_state of http2_internal.h), then answers instead of processing. DATA the
 * client still sends for the stream is refused by h2o (RST_STREAM STREAM_CLOSED). */
static void answer_h2(h2o_req_t *req, int status, const char *msg)
{
    h2_conn_t *h2 = (h2_conn_t *)req->conn;
    h2_stream_t *st = H2O_STRUCT_FROM_MEMBER(h2_stream_t, req, req);
    st->state = H2S_REQ_PENDING;
    ++st->_num_streams_slot->half_closed;
    st->state = H2S_SEND_HEADERS;
    if (st->stream_id % 2 == 1 && h2->pull_stream_ids.max_processed < st->stream_id)
        h2->pull_stream_ids.max_processed = st->stream_id;
    send_refusal(req, h2->sock, status, msg);
}

/* ---- the body limit: --max-body-size while a body arrives ----
 *
 * h2o's own limit (max_request_entity_size) is the larger of --max-body-size and
 * --debuginfo.max-file-bytes, and h2o reads a whole body before a handler runs. Every body but a
 * debug file upload's is held here to --max-body-size while it arrives: an HTTP/1 request whose
 * Content-Length is over it is answered 413 as soon as its header is read, a chunked one once the
 * bytes decoded so far are over it; an HTTP/2 stream the same by its content-length or its bytes
 * so far (413 on that stream alone). Checked after every read h2o makes through the wrapper (one
 * socket read, what the kernel held: up to its receive buffer, past the limit), and on every tick
 * for reads the wrapper did not see. The wrappers are put back after every callback of the socket
 * (h2o reads a body after its 100 Continue is written, in the write's callback), and on an HTTP/1
 * connection as soon as h2o starts reading its next request (a zero timeout linked when the
 * request is disposed, run in the same loop turn, before the next poll): an answer sent from
 * elsewhere (a task's end) starts that read outside them. */

/* the length of the HTTP/1 request header at the start of p (an empty line before its request
 * line skipped, as picohttpparser does; lines end in LF or CRLF), 0 when not whole */
static size_t header_len(const char *p, size_t n)
{
    const char *s = p, *end = p + n;
    if (s < end && *s == '\r')
        s++;
    if (s < end && *s == '\n')
        s++;
    for (int first = 1;; first = 0) {
        const char *nl = memchr(s, '\n', (size_t)(end - s));
        if (nl == NULL)
            return 0;
        if (!first && (nl == s || (nl == s + 1 && *s == '\r')))
            return (size_t)(nl + 1 - p);
        s = nl + 1;
    }
}

/* 1: req is a debug file upload (h2o's own limit holds it), 2: not; by its path as routes.c sees
 * it (normalized) */
static int exempt_of(h2o_req_t *req)
{
    size_t query_at, *norm_indexes;
    h2o_iovec_t path = h2o_url_normalize_path(&req->pool, req->input.path.base, req->input.path.len, &query_at,
                                              &norm_indexes);
    return ps_api_debuginfo_is_upload(path) ? 1 : 2;
}

/* HTTP/1: is the body h1 reads over the limit? Then msg says by how much. */
static bool h1_too_large(conn_t *c, h1_conn_t *h1, char *msg, size_t n)
{
    size_t max = c->lc->cs->max_body;
    h2o_buffer_t *in = c->sock->input;
    if (c->lim_req != h1->_req_index || c->lim_exempt == 0) {
        c->lim_req = h1->_req_index;
        c->lim_exempt = exempt_of(&h1->req);
        c->lim_hdr = header_len(in->bytes, in->size < H2O_MAX_REQLEN ? in->size : H2O_MAX_REQLEN);
    }
    if (c->lim_exempt == 1 || c->lim_hdr == 0)
        return false;
    if (h1->_reqsize > c->lim_hdr) { /* Content-Length: _reqsize is the header and the body */
        size_t cl = h1->_reqsize - c->lim_hdr;
        if (cl <= max)
            return false;
        ps_http_body_limit_msg(msg, n, cl, true, max);
        return true;
    }
    size_t got = in->size > c->lim_hdr ? in->size - c->lim_hdr : 0; /* chunked: decoded so far */
    if (got <= max)
        return false;
    ps_http_body_limit_msg(msg, n, got, false, max);
    return true;
}

/* HTTP/2: the record of a stream receiving its body (made when first seen) */
static struct h2body *h2body_of(conn_t *c, const h2_stream_t *st, uint64_t now)
{
    for (size_t i = 0; i < c->nbodies; i++)
        if (c->bodies[i].id == st->stream_id)
            return &c->bodies[i];
    if (c->nbodies == c->capbodies) {
        c->capbodies = c->capbodies ? c->capbodies * 2 : 4;
        c->bodies = realloc(c->bodies, c->capbodies * sizeof(*c->bodies));
        if (c->bodies == NULL)
            abort();
    }
    size_t size = st->_req_body != NULL ? st->_req_body->size : 0;
    struct h2body *b = &c->bodies[c->nbodies++];
    *b = (struct h2body){.id = st->stream_id, .gen = c->gen, .size = size, .b0 = size, .at = now, .t0 = now};
    return b;
}

/* HTTP/2: is the body stream st receives over the limit? Then msg says by how much. */
static bool h2_too_large(conn_t *c, h2_stream_t *st, struct h2body *b, char *msg, size_t n)
{
    size_t max = c->lc->cs->max_body;
    if (max == 0)
        return false;
    if (b->exempt == 0)
        b->exempt = exempt_of(&st->req);
    if (b->exempt == 1)
        return false;
    if (st->_expected_content_length != SIZE_MAX && st->_expected_content_length > max) {
        ps_http_body_limit_msg(msg, n, st->_expected_content_length, true, max);
        return true;
    }
    size_t size = st->_req_body != NULL ? st->_req_body->size : 0;
    if (size <= max)
        return false;
    ps_http_body_limit_msg(msg, n, size, false, max);
    return true;
}

/* HTTP/2: a stream h2o has not handed on, receiving its body */
static bool h2_receiving(h2_stream_t *st)
{
    return st->state == H2S_RECV_BODY && st->req._ostr_top == &st->_ostr_final && st->req.pathconf == NULL;
}

/* HTTP/2: the stream after ref (NULL: the first) in h2's priority tree, where h2o opens every
 * stream (h2o_http2_scheduler_openref_t is public, the stream's _refs.scheduler), depth first
 * without recursion; NULL after the last */
static h2_stream_t *next_stream(h2_conn_t *h2, h2_stream_t *prev)
{
    h2o_http2_scheduler_node_t *root = &h2->scheduler, *node = prev == NULL ? root : &prev->_refs.scheduler.node;
    h2o_linklist_t *link = node->_all_refs.next; /* its first dependent */
    while (link == &node->_all_refs) {           /* none (left): the next sibling of node or of a parent */
        if (node == root)
            return NULL;
        h2o_http2_scheduler_openref_t *up = H2O_STRUCT_FROM_MEMBER(h2o_http2_scheduler_openref_t, node, node);
        node = node->_parent;
        link = up->_all_link.next;
    }
    h2o_http2_scheduler_openref_t *ref = H2O_STRUCT_FROM_MEMBER(h2o_http2_scheduler_openref_t, _all_link, link);
    return H2O_STRUCT_FROM_MEMBER(h2_stream_t, _refs.scheduler, ref);
}

/* HTTP/2: c's streams over the limit are answered 413, after a read (a few a read) */
static void check_h2(conn_t *c)
{
    enum { MAX_PER_READ = 8 };
    h2o_req_t *over[MAX_PER_READ];
    char msgs[MAX_PER_READ][160];
    int n = 0;
    uint64_t now = h2o_now(c->lc->loop->ctx.loop);
    for (h2_stream_t *st = next_stream(c->h2, NULL); st != NULL && n < MAX_PER_READ; st = next_stream(c->h2, st))
        if (st->req.conn == &c->h2->super && h2_receiving(st) &&
            h2_too_large(c, st, h2body_of(c, st, now), msgs[n], sizeof(msgs[n])))
            over[n++] = &st->req;
    for (int i = 0; i < n; i++)
        answer_h2_413(c, over[i], msgs[i]);
}

/* HTTP/2: have the 413s of the held streams left them (h2o ended or closed those streams)? */
static bool held_written(conn_t *c)
{
    for (h2_stream_t *st = next_stream(c->h2, NULL); st != NULL; st = next_stream(c->h2, st))
        for (int i = 0; i < c->nheld; i++)
            if (st->stream_id == c->held[i] && st->state < H2S_END_STREAM)
                return false;
    return true;
}

static void on_recheck(h2o_timeout_entry_t *e)
{
    conn_t *c = H2O_STRUCT_FROM_MEMBER(conn_t, recheck, e);
    if (c->closed)
        return;
    rewrap(c);
    if (c->nheld != 0 && (c->h2 == NULL || held_written(c))) {
        /* the 413s are out: h2o parses the DATA it was not given (and resets those streams); not
         * yet (h2o writes when its last write is done): the tick asks again */
        c->nheld = 0;
        h2o_socket_t *sock = c->sock;
        if (c->h2 != NULL && sock->input->size != 0 && h2o_socket_is_reading(sock) && sock->_cb.read == on_read_wrapped) {
            on_read_wrapped(sock, NULL); /* may free c */
            return;
        }
    }
    check_body(c);
}

/* rewrap and check_body in this loop turn, after h2o's callbacks of it so far (the zero timeouts
 * run in the order they were linked) */
static void recheck_soon(conn_t *c)
{
    if (c->closed)
        return;
    h2o_timeout_unlink(&c->recheck);
    c->recheck.cb = on_recheck;
    h2o_timeout_link(c->lc->loop->ctx.loop, &c->lc->loop->ctx.zero_timeout, &c->recheck);
}

/* HTTP/2: a stream answered 413; h2o writes the answer at its zero timeout, linked by now */
static void answer_h2_413(conn_t *c, h2o_req_t *req, const char *msg)
{
    h2_stream_t *st = H2O_STRUCT_FROM_MEMBER(h2_stream_t, req, req);
    ps_counter_add(&c->lc->cs->too_large, 1);
    answer_h2(req, 413, msg);
    if (c->nheld < (int)(sizeof(c->held) / sizeof(c->held[0])))
        c->held[c->nheld++] = st->stream_id;
    recheck_soon(c);
}

/* a body of c over the limit is answered 413 (HTTP/1: the connection closes after it) */
static void check_body(conn_t *c)
{
    /* h2o reading the socket: its connection (h1, h2) is alive. One it has closed may still hold
     * the socket, not reading, while TLS says goodbye (sock->data then points to freed memory); a
     * 100 Continue being written: the write's end checks */
    if (c->closed || c->evicting || c->lc->cs->max_body == 0 || !h2o_socket_is_reading(c->sock))
        return;
    if (c->h2 != NULL) {
        check_h2(c);
        return;
    }
    h1_conn_t *h1 = c->h1;
    if (h1 == NULL || c->sock->data != h1 || h1->_req_entity_reader == NULL || h1->req.pathconf != NULL)
        return;
    char msg[160];
    if (!h1_too_large(c, h1, msg, sizeof(msg)))
        return;
    ps_counter_add(&c->lc->cs->too_large, 1);
    answer_h1(&h1->req, c, 413, msg);
}

/* the request's pool disposed: h2o is done with it, and may start reading the next one outside
 * the wrapper (a write callback's h2o_socket_read_start) */
static void on_h1_req_dispose(void *p)
{
    conn_t *c = *(conn_t **)p;
    recheck_soon(c);
}

/* HTTP/2: the whole connection ends (a header block not complete blocks every stream): the frame
 * parser's next call fails, on which h2o sends GOAWAY PROTOCOL_ERROR with msg and closes, as it
 * does for a malformed frame. The call is made now, on a byte added to the socket's input
 * (which the failing parser never reads). */
static void kill_h2(conn_t *c, const char *msg)
{
    c->evicting = 1;
    c->lc->closing++;
    snprintf(c->kill, sizeof(c->kill), "%s", msg);
    h2o_socket_t *sock = c->sock;
    if (!h2o_socket_is_reading(sock) || sock->_cb.read != on_read_wrapped || c->h2->_read_expect != on_expect_wrapped) {
        shutdown(h2o_socket_get_fd(sock), SHUT_RDWR); /* h2o is not reading: the socket's end it sees later */
        return;
    }
    h2o_iovec_t room = h2o_buffer_reserve(&sock->input, 1);
    room.base[0] = 0;
    sock->input->size++;
    on_read_wrapped(sock, NULL); /* may free c */
}

/* a stream of an HTTP/2 connection of this loop (H2O_HTTP2_CALLBACKS.foreach_request): one
 * receiving its body must keep it moving, as an HTTP/1 body */
static int visit_h2_req(h2o_req_t *req, void *data)
{
    visit_t *v = data;
    h2_conn_t *h2 = (h2_conn_t *)req->conn;
    if (h2->sock == NULL || h2->sock->on_close.cb != on_conn_close)
        return 0;
    conn_t *c = h2->sock->on_close.data;
    struct ps_conns *cs = v->lc->cs;
    h2_stream_t *st = H2O_STRUCT_FROM_MEMBER(h2_stream_t, req, req);
    if (c->evicting || req->_ostr_top != &st->_ostr_final || req->pathconf != NULL)
        return 0;
    if (st->state == H2S_RECV_HEADERS && c->h2_hdr_at == 0) {
        /* a header block h2o began in a read the wrapper did not see (the one that made the
         * connection HTTP/2): timed from now */
        c->h2_hdr_at = v->now;
        return 0;
    }
    if (st->state != H2S_RECV_BODY)
        return 0;
    size_t size = st->_req_body != NULL ? st->_req_body->size : 0;
    struct h2body *b = h2body_of(c, st, v->now);
    if (size > b->size) {
        b->size = size;
        b->at = v->now;
    }
    b->gen = c->gen;
    char msg[200];
    if (h2_too_large(c, st, b, msg, sizeof(msg))) {
        add_action(v, req, c, A_H2_413, -1, msg);
        return 0;
    }
    int kind = body_verdict(cs, v->now, b->at, b->t0, size - b->b0, msg, sizeof(msg));
    if (kind >= 0)
        add_action(v, req, c, A_H2_408, kind, msg);
    return 0;
}

static int cmp_idle(const void *a, const void *b)
{
    const conn_t *x = *(conn_t *const *)a, *y = *(conn_t *const *)b;
    uint64_t lx = x->read_at > x->busy_at ? x->read_at : x->busy_at;
    uint64_t ly = y->read_at > y->busy_at ? y->read_at : y->busy_at;
    return lx < ly ? -1 : lx > ly;
}

static void progress(lconns_t *lc, uint64_t now)
{
    for (h2o_linklist_t *n = lc->conns.next; n != &lc->conns; n = n->next) {
        conn_t *c = H2O_STRUCT_FROM_MEMBER(conn_t, link, n);
        if (c->sock == NULL)
            continue;
        /* h2o_socket_t.bytes_read cannot be relied on in 2.2.5: a growing input is progress (the
         * wrapper sees reads as they come, this catches those h2o took directly) */
        if (c->sock->input->size != c->seen_in) {
            if (c->sock->input->size > c->seen_in) {
                c->read_at = now;
                c->reads++;
            }
            c->seen_in = c->sock->input->size;
        }
    }
}

/* closes up to max waiting HTTP/1 connections idle for min_idle_ms or more, oldest first */
static int evict_idle(lconns_t *lc, int max, uint64_t min_idle_ms, int reason)
{
    visit_t v = {.lc = lc, .now = h2o_now(lc->loop->ctx.loop), .collect_idle = 1};
    gettimeofday(&v.wall, NULL);
    progress(lc, v.now);
    H2O_HTTP1_CALLBACKS.foreach_request(&lc->loop->ctx, visit_req, &v);
    free(v.acts); /* the timeouts are the tick's business */
    /* HTTP/2 connections without a stream are idle too */
    h2o_linklist_t *anchor = &lc->loop->ctx.http2._conns;
    for (h2o_linklist_t *n = anchor->next; n != anchor; n = n->next) {
        h2_conn_t *h2 = H2O_STRUCT_FROM_MEMBER(h2_conn_t, _conns, n);
        if (h2->sock == NULL || h2->sock->on_close.cb != on_conn_close)
            continue;
        conn_t *c = h2->sock->on_close.data;
        if (!c->evicting && !h2_streams(h2))
            add_idle(&v, c);
    }
    qsort(v.idle, v.nidle, sizeof(*v.idle), cmp_idle);
    int n = 0;
    for (size_t i = 0; i < v.nidle && n < max; i++) {
        conn_t *c = v.idle[i];
        uint64_t last = c->read_at > c->busy_at ? c->read_at : c->busy_at;
        if (v.now - last < min_idle_ms)
            break;
        shut(c);
        ps_counter_add(&lc->cs->evicted[reason], 1);
        n++;
    }
    free(v.idle);
    return n;
}

/* clients waiting in the backlogs of this loop's paused listeners (Linux: TCP_INFO of a listening
 * socket gives its accept queue's length in tcpi_unacked) */
static uint32_t backlog(lconns_t *lc)
{
    uint32_t n = 0;
    for (int i = 0; i < lc->npaused; i++) {
        struct tcp_info ti;
        socklen_t tl = sizeof(ti);
        if (getsockopt(h2o_socket_get_fd(lc->paused[i]), IPPROTO_TCP, TCP_INFO, &ti, &tl) == 0)
            n += ti.tcpi_unacked;
    }
    return n;
}

static void on_tick(h2o_timeout_entry_t *e)
{
    lconns_t *lc = H2O_STRUCT_FROM_MEMBER(lconns_t, tick, e);
    ps_loop_t *l = lc->loop;
    visit_t v = {.lc = lc, .now = h2o_now(l->ctx.loop)};
    gettimeofday(&v.wall, NULL);
    progress(lc, v.now);
    H2O_HTTP1_CALLBACKS.foreach_request(&l->ctx, visit_req, &v);
    for (size_t i = 0; i < v.nacts; i++) {
        struct action *a = &v.acts[i];
        ps_counter_add(a->kind >= 0 ? &lc->cs->timeouts[a->kind] : &lc->cs->too_large, 1);
        if (a->what == A_CLOSE)
            shut(a->c);
        else
            answer_h1(a->req, a->c, a->what == A_413 ? 413 : 408, a->msg);
    }
    free(v.acts);
    v.acts = NULL;
    v.acap = 0;
    /* HTTP/2 connections: their parser wrapped if not yet (an h2c Upgrade turns over in a write
     * callback), a header block bounded from its first byte, bodies kept moving */
    v.nacts = 0;
    for (h2o_linklist_t *n = l->ctx.http2._conns.next; n != &l->ctx.http2._conns; n = n->next) {
        h2_conn_t *h2 = H2O_STRUCT_FROM_MEMBER(h2_conn_t, _conns, n);
        if (h2->sock != NULL && h2->sock->on_close.cb == on_conn_close) {
            conn_t *c = h2->sock->on_close.data;
            if (c->h2 == NULL || h2->_read_expect != on_expect_wrapped)
                hook_h2(c, h2);
            if (h2_streams(h2))
                c->busy_at = v.now;
            if (c->nheld != 0)
                recheck_soon(c);
            c->gen++;
            /* a partial HEADERS or CONTINUATION frame left by a read the wrapper did not see (h2o
             * reading: it parsed all it could, what is left is a frame not yet whole) */
            h2o_buffer_t *in = h2->sock->input;
            if (c->h2_hdr_at == 0 && h2o_socket_is_reading(h2->sock) && in->size >= 4 &&
                ((uint8_t)in->bytes[3] == H2_FRAME_TYPE_HEADERS || (uint8_t)in->bytes[3] == H2_FRAME_TYPE_CONTINUATION))
                c->h2_hdr_at = v.now;
            if (!c->evicting && c->h2_hdr_at != 0 && lc->cs->header_ms != 0 &&
                v.now - c->h2_hdr_at >= lc->cs->header_ms) {
                char d[32], msg[200];
                fmt_ms(lc->cs->header_ms, d, sizeof(d));
                snprintf(msg, sizeof(msg),
                         "request header not complete within %s of its first byte (--web.read-header-timeout)", d);
                add_action(&v, NULL, c, A_H2_KILL, T_HEADER, msg);
            }
        }
    }
    if (lc->cs->body_idle_ms != 0 || lc->cs->min_rate != 0 || lc->cs->max_body != 0)
        H2O_HTTP2_CALLBACKS.foreach_request(&l->ctx, visit_h2_req, &v);
    /* the streams gone from their connection's table */
    for (h2o_linklist_t *n = l->ctx.http2._conns.next; n != &l->ctx.http2._conns; n = n->next) {
        h2_conn_t *h2 = H2O_STRUCT_FROM_MEMBER(h2_conn_t, _conns, n);
        if (h2->sock != NULL && h2->sock->on_close.cb == on_conn_close) {
            conn_t *c = h2->sock->on_close.data;
            size_t k = 0;
            for (size_t i = 0; i < c->nbodies; i++)
                if (c->bodies[i].gen == c->gen)
                    c->bodies[k++] = c->bodies[i];
            c->nbodies = k;
        }
    }
    /* the 408s first: an answer is only queued, while a kill may free the connection */
    for (int pass = 0; pass < 2; pass++)
        for (size_t i = 0; i < v.nacts; i++) {
            struct action *a = &v.acts[i];
            if ((a->what == A_H2_KILL) != (pass == 1))
                continue;
            if (a->what == A_H2_413) {
                answer_h2_413(a->c, a->req, a->msg);
                continue;
            }
            ps_counter_add(&lc->cs->timeouts[a->kind], 1);
            if (a->what == A_H2_KILL)
                kill_h2(a->c, a->msg);
            else
                answer_h2(a->req, 408, a->msg);
        }
    free(v.acts);
    /* another loop out of descriptors with nothing of its own to close */
    if (atomic_load(&lc->cs->fd_starved) > (lc->starved ? 1u : 0u))
        evict_idle(lc, FD_HELP_PER_TICK, 0, R_FD);
    /* the bound: room again, or clients waiting behind idle connections */
    resume_listeners(lc);
    if (lc->npaused != 0 && !atomic_load(&l->srv->stopping) && v.now >= lc->fd_wait_until) {
        uint32_t waiting = backlog(lc);
        if (waiting != 0)
            evict_idle(lc, waiting < EVICT_MAX_PER_ROUND ? (int)waiting : EVICT_MAX_PER_ROUND, EVICT_MIN_IDLE_MS,
                       R_MAXCONN);
    }
    h2o_timeout_link(l->ctx.loop, &lc->tick_timeout, &lc->tick);
}

void ps_conns_loop_init(ps_loop_t *l)
{
    lconns_t *lc = ps_xcalloc(1, sizeof(*lc));
    lc->loop = l;
    lc->cs = l->srv->conns;
    h2o_linklist_init_anchor(&lc->conns);
    lc->reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    h2o_timeout_init(l->ctx.loop, &lc->tick_timeout, lc->cs->tick_ms);
    lc->tick.cb = on_tick;
    h2o_timeout_link(l->ctx.loop, &lc->tick_timeout, &lc->tick);
    l->conns = lc;
}

/* ---- HTTP/1 framing ---- */

static int name_is(const char *p, size_t n, const char *lit)
{
    size_t ln = strlen(lit);
    return n == ln && strncasecmp(p, lit, n) == 0;
}

int ps_conns_refuse_framing(h2o_req_t *req)
{
    if (req->version >= 0x200 || req->conn->callbacks->get_socket == NULL)
        return 0;
    h2o_socket_t *sock = req->conn->callbacks->get_socket(req->conn);
    if (sock != NULL && sock->on_close.cb == on_conn_close) {
        /* its end: the next request's body checked from its first read (the body limit) */
        conn_t *c = sock->on_close.data;
        if (c->lc->cs->max_body != 0) {
            conn_t **link = h2o_mem_alloc_shared(&req->pool, sizeof(*link), on_h1_req_dispose);
            *link = c;
        }
    }
    if (sock == NULL || sock->input == NULL || sock->input->size == 0)
        return 0;
    const char *p = sock->input->bytes, *end = p + (sock->input->size < H2O_MAX_REQLEN ? sock->input->size : H2O_MAX_REQLEN);
    /* the request line, then a header per line up to the empty one (picohttpparser takes LF and CRLF) */
    const char *nl = memchr(p, '\n', (size_t)(end - p));
    if (nl == NULL)
        return 0;
    p = nl + 1;
    int ncl = 0, nte = 0, cl_differ = 0;
    const char *cl = NULL;
    size_t cllen = 0;
    while (p < end) {
        nl = memchr(p, '\n', (size_t)(end - p));
        if (nl == NULL)
            break;
        const char *le = nl;
        if (le > p && le[-1] == '\r')
            le--;
        if (le == p)
            break; /* the end of the header */
        const char *colon = memchr(p, ':', (size_t)(le - p));
        if (colon != NULL && *p != ' ' && *p != '\t') {
            const char *v = colon + 1, *ve = le;
            while (v < ve && (*v == ' ' || *v == '\t'))
                v++;
            while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
                ve--;
            if (name_is(p, (size_t)(colon - p), "content-length")) {
                if (ncl++ && ((size_t)(ve - v) != cllen || memcmp(v, cl, cllen) != 0))
                    cl_differ = 1;
                cl = v;
                cllen = (size_t)(ve - v);
            } else if (name_is(p, (size_t)(colon - p), "transfer-encoding")) {
                nte++;
            }
        }
        p = nl + 1;
    }
    const char *why = ncl && nte   ? "the request has both Content-Length and Transfer-Encoding: its body's length is "
                                     "ambiguous; send one of them"
                      : cl_differ  ? "the request has two different Content-Length headers: its body's length is "
                                     "ambiguous; send one"
                      : nte > 1    ? "the request has more than one Transfer-Encoding header; send one "
                                     "(Transfer-Encoding: chunked)"
                                   : NULL;
    if (why == NULL)
        return 0;
    ps_counter_add(&ps_loop_of(req->conn->ctx)->srv->conns->framing, 1);
    req->http1_is_persistent = 0; /* what follows the body is never read as a request */
    h2o_socket_read_stop(sock);
    if (ps_connect_is_path(req->path_normalized)) {
        ps_buf_t b = PS_BUF_INIT;
        ps_connect_error_json(PS_CONNECT_INVALID_ARGUMENT, why, &b);
        ps_http_send(req, 400, "application/json", b.data, b.len);
        ps_buf_dispose(&b);
    } else {
        ps_http_error_status(req, 400, why);
    }
    return 1;
}

/* ---- metrics ---- */

static const char *const by_reason[] = {"reason", NULL}, *const by_kind[] = {"kind", NULL};
static const ps_metric_t m_open = {"profstore_http_connections", PS_GAUGE, "Open HTTP connections."},
                         m_limit = {"profstore_http_connections_limit", PS_GAUGE,
                                    "The bound on open HTTP connections (--web.max-connections; 0: none)."},
                         m_accepted = {"profstore_http_connections_accepted_total", PS_COUNTER,
                                       "HTTP connections accepted."},
                         m_refused = {"profstore_http_connections_refused_total", PS_COUNTER,
                                      "Connections accepted and closed at once with a 503, by reason (fd_limit: no "
                                      "file descriptor left).",
                                      by_reason},
                         m_evicted = {"profstore_http_connections_evicted_total", PS_COUNTER,
                                      "Idle connections closed to make room, by reason (fd_limit: no file descriptor "
                                      "left; max_connections: clients waiting at --web.max-connections).",
                                      by_reason},
                         m_timeouts = {"profstore_http_timeouts_total", PS_COUNTER,
                                       "Connections cut by a timeout, by kind (header, body_idle, body_rate: answered "
                                       "408; no_request, keepalive_idle, write_stall: closed without an answer).",
                                       by_kind},
                         m_framing = {"profstore_http_framing_refused_total", PS_COUNTER,
                                      "HTTP/1 requests refused (400, connection closed) for an ambiguous body length "
                                      "(Content-Length with Transfer-Encoding, or two of them)."},
                         m_reset_flood = {"profstore_http2_reset_flood_total", PS_COUNTER,
                                          "HTTP/2 connections closed (GOAWAY ENHANCE_YOUR_CALM) for resetting more "
                                          "streams than --web.http2-max-resets."},
                         m_too_large = {"profstore_http_body_too_large_total", PS_COUNTER,
                                        "Request bodies refused (413) while arriving for being over --max-body-size "
                                        "(HTTP/1: the connection closed; HTTP/2: the stream)."};

/* m's head, then one sample per label value: values[i] counts[i] for i < n */
static void counter_family(ps_buf_t *b, const ps_metric_t *m, const char *const *values, const ps_counter_t *counts,
                           int n)
{
    ps_metric_head(b, m);
    for (int i = 0; i < n; i++)
        ps_metric_u64(b, m, NULL, &values[i], ps_counter_get(&counts[i]));
}

void ps_conns_metrics(ps_server_t *s, ps_buf_t *b)
{
    struct ps_conns *cs = s->conns;
    if (cs == NULL)
        return;
    ps_metric_write_u64(b, &m_open, (uint64_t)ps_gauge_get(&cs->open));
    ps_metric_write_u64(b, &m_limit, cs->max);
    ps_metric_write_u64(b, &m_accepted, ps_counter_get(&cs->accepted));
    counter_family(b, &m_refused, reason_names + R_FD, cs->refused + R_FD, 1);
    counter_family(b, &m_evicted, reason_names, cs->evicted, NREASONS);
    static const char *const tnames[NTIMEOUTS] = {"header",     "body_idle",      "body_rate",
                                                  "no_request", "keepalive_idle", "write_stall"};
    counter_family(b, &m_timeouts, tnames, cs->timeouts, NTIMEOUTS);
    ps_metric_write_u64(b, &m_framing, ps_counter_get(&cs->framing));
    ps_metric_write_u64(b, &m_reset_flood, ps_counter_get(&cs->resets_refused));
    ps_metric_write_u64(b, &m_too_large, ps_counter_get(&cs->too_large));
}
