/*
 * connguard.h - connection hardening around h2o (web/connguard.c): a bound on open connections, the
 * descriptor reserve at EMFILE, header/body/idle timeouts with a 408 answer (HTTP/1 and per
 * HTTP/2 stream; an HTTP/2 header block never finished: GOAWAY), HTTP/1 framing
 * (Content-Length vs Transfer-Encoding) checked before any handler, h2c off unless asked for,
 * a cap on HTTP/2 streams a client resets, and --max-body-size held while a body arrives on every
 * route but the debug file upload (413). server.c calls these; nothing else needs to.
 */
#ifndef PS_WEB_CONNGUARD_H
#define PS_WEB_CONNGUARD_H

#include <h2o.h>

#include "core/mem.h"
#include "server.h"

struct ps_loop;

/** Server-wide: allocates s->conns from s->opts and sets h2o's own settings in conf (h2c on or off,
 *  HTTP/2 idle timeout, HTTP/1 request timeout as a far backstop only). Call before the loops. */
void ps_conns_configure(ps_server_t *s, h2o_globalconf_t *conf);
/** Per loop, on the loop's own thread after h2o_context_init: the descriptor reserve and the
 *  timer that enforces the timeouts and the connection bound. */
void ps_conns_loop_init(struct ps_loop *l);
/** The accept callback of every listener (plain or TLS): listener->data is an h2o_accept_ctx_t
 *  whose ctx is a ps_loop_t's. Counts the connection, pauses the listener at --web.max-connections,
 *  handles EMFILE/ENFILE, then h2o_accept. */
void ps_conns_on_accept(h2o_socket_t *listener, const char *err);
/** First thing for every request: an HTTP/1 request with both Content-Length and
 *  Transfer-Encoding, two different Content-Lengths or two Transfer-Encodings is answered 400 and
 *  its connection closed (what follows its body is never parsed). 1 when it answered, else 0.
 *  It also ties the request's end to the body check of the connection's next request. */
int ps_conns_refuse_framing(h2o_req_t *req);
/** profstore_http_connections* and the timeout counters, in the text exposition format. */
void ps_conns_metrics(ps_server_t *s, ps_buf_t *b);

#endif
