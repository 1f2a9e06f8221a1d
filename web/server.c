/*
 * server.c - h2o event loops (see server.h).
 */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "core/log.h"
#include "core/thread.h"
#include "core/timeutil.h"
#include "connguard.h"
#include "http.h"
#include "internal.h"
#include "qpool.h"

#define DRAIN_MAX_MS 2000

typedef struct impl {
    h2o_globalconf_t config;
    ps_loop_t *loops;
    uint32_t nloops;
    int port;
    int addr_lock; /* the abstract socket held while this process listens on the address, or -1 */
    int otlp_port, otlp_lock; /* --otlp.http.listen-address: its port (0: none) and lock */
} impl_t;

static int on_req(h2o_handler_t *self, h2o_req_t *req)
{
    if (ps_conns_refuse_framing(req))
        return 0;
    return ps_routes_dispatch(self, req);
}

/* every listener's (plain or TLS): counted, bounded, EMFILE handled, then h2o_accept (web/connguard.c) */
static void on_accept(h2o_socket_t *listener, const char *err)
{
    ps_conns_on_accept(listener, err);
}

static int split_hostport(const char *listen, char *host, size_t hsize, char *port, size_t psize)
{
    const char *colon = strrchr(listen, ':');
    if (colon == NULL)
        return -1;
    size_t hl = (size_t)(colon - listen);
    if (hl >= hsize || strlen(colon + 1) >= psize || colon[1] == 0)
        return -1;
    memcpy(host, listen, hl);
    host[hl] = 0;
    if (hl >= 2 && host[0] == '[' && host[hl - 1] == ']') {
        memmove(host, host + 1, hl - 2);
        host[hl - 2] = 0;
    }
    strcpy(port, colon + 1);
    return 0;
}

/* A socket for the address, with SO_REUSEADDR (a restart binds past TIME_WAIT) and, if reuseport,
 * SO_REUSEPORT; -1 with errno. */
static int bound_socket(const struct addrinfo *ai, bool reuseport)
{
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0), on = 1;
    if (fd < 0)
        return -1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
    if (reuseport)
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &on, sizeof(on));
    if (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    return fd;
}

#define IN_USE_MSG "cannot listen on %s: the address is already in use by another process (another profstore?)"

/*
 * Makes sure no other process listens on ai's address before this one joins it with SO_REUSEPORT
 * (which would let the kernel split connections between the two, silently).
 *  1. A lock per numeric address and port: an abstract Unix socket "profstore-listen <addr>
 *     <port>" (bound atomically, released when the process ends, per network namespace like
 *     the port) held while the server runs: two profstores starting at once cannot both pass 2.
 *  2. A probe: a bind of the address without SO_REUSEPORT fails with EADDRINUSE while anyone
 *     (another program, an older profstore, a wildcard listener covering it) listens there.
 * Port 0 (the kernel picks a free port) needs neither.
 */
static int claim_address(const char *addr, const struct addrinfo *ai, int *lock_out, ps_err_t *err)
{
    char host[NI_MAXHOST], serv[NI_MAXSERV];
    if (getnameinfo(ai->ai_addr, ai->ai_addrlen, host, sizeof(host), serv, sizeof(serv),
                    NI_NUMERICHOST | NI_NUMERICSERV) != 0 ||
        strcmp(serv, "0") == 0)
        return 0;
    int lk = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (lk >= 0) {
        struct sockaddr_un un = {.sun_family = AF_UNIX};
        int n = snprintf(un.sun_path + 1, sizeof(un.sun_path) - 1, "profstore-listen %s %s", host, serv);
        socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
                                    (size_t)(n < (int)sizeof(un.sun_path) - 1 ? n : (int)sizeof(un.sun_path) - 2));
        if (bind(lk, (struct sockaddr *)&un, len) != 0) {
            int e = errno;
            close(lk);
            if (e == EADDRINUSE)
                return ps_err_set(err, PS_EINVAL, IN_USE_MSG, addr);
            lk = -1; /* no lock to take (no AF_UNIX?): the probe alone */
        }
    }
    int fd = bound_socket(ai, false);
    if (fd < 0) {
        int e = errno;
        if (lk >= 0)
            close(lk);
        if (e == EADDRINUSE)
            return ps_err_set(err, PS_EINVAL, IN_USE_MSG, addr);
        return ps_err_set(err, PS_EINVAL, "cannot listen on %s: %s", addr, strerror(e));
    }
    close(fd);
    *lock_out = lk;
    return 0;
}

/* A listening socket on addr; the first (first = true) claims the address (claim_address), the
 * others join the port it got with SO_REUSEPORT: profstore's own HTTP threads share it. */
static int open_listener(const char *flag, const char *addr, bool first, int *lock_out, int *port_out, ps_err_t *err)
{
    char host[256], port[32];
    if (split_hostport(addr, host, sizeof(host), port, sizeof(port)) != 0)
        return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not host:port", flag, addr);
    struct addrinfo hints = {0}, *res;
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    int gai = getaddrinfo(host[0] ? host : NULL, port, &hints, &res);
    if (gai != 0)
        return ps_err_set(err, PS_EINVAL, "--%s %s: %s", flag, addr, gai_strerror(gai));
    int rc = first ? claim_address(addr, res, lock_out, err) : 0;
    if (rc != 0) {
        freeaddrinfo(res);
        return rc;
    }
    int fd = bound_socket(res, true), on = 1;
    if (fd < 0 || listen(fd, SOMAXCONN) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        freeaddrinfo(res);
        return ps_err_set(err, PS_EINVAL, "cannot listen on %s: %s", addr, strerror(e));
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &on, sizeof(on));
    freeaddrinfo(res);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof(ss);
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *port_out = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                               : ((struct sockaddr_in *)&ss)->sin_port);
    return fd;
}

int ps_server_bind(ps_server_t *s, ps_err_t *err)
{
    impl_t *im = ps_xcalloc(1, sizeof(*im));
    s->impl = im;
    s->start_time = ps_time_now();
    s->http_stats = ps_http_stats_new(ps_routes_nhandlers(), ps_routes_handler, ps_routes_handler_name);
    h2o_config_init(&im->config);
    im->config.max_request_entity_size = s->opts.max_upload > s->opts.max_body ? s->opts.max_upload : s->opts.max_body;
    im->config.server_name = h2o_iovec_init(H2O_STRLIT("profstore/" PS_VERSION));
    ps_conns_configure(s, &im->config); /* timeouts, h2c, the connection bound */
    h2o_hostconf_t *host = h2o_config_register_host(&im->config, h2o_iovec_init(H2O_STRLIT("default")), 65535);
    h2o_pathconf_t *path = h2o_config_register_path(host, "/", 0);
    h2o_handler_t *h = h2o_create_handler(path, sizeof(*h));
    h->on_req = on_req;

    im->nloops = s->opts.threads ? s->opts.threads : 1;
    im->loops = ps_xcalloc(im->nloops, sizeof(ps_loop_t));
    im->addr_lock = -1;
    /* the first socket claims the address and picks the port (maybe 0 = any); the others join it
     * with SO_REUSEPORT */
    char addr[300];
    snprintf(addr, sizeof(addr), "%s", s->opts.listen);
    for (uint32_t i = 0; i < im->nloops; i++) {
        int port = 0;
        int fd = open_listener("listen", addr, i == 0, &im->addr_lock, &port, err);
        if (fd < 0)
            return fd;
        im->loops[i].fd = fd;
        if (i == 0) {
            im->port = port;
            char *colon = strrchr(addr, ':');
            snprintf(colon + 1, sizeof(addr) - (size_t)(colon + 1 - addr), "%d", port);
        }
    }
    /* the OTLP/HTTP port (4318 by the OTLP convention): a second listener of every loop, the same
     * server behind it (routes, TLS, authentication) */
    im->otlp_lock = -1;
    for (uint32_t i = 0; i < im->nloops; i++)
        im->loops[i].otlp_fd = -1;
    if (s->opts.otlp_http_listen != NULL && s->opts.otlp_http_listen[0] != '\0') {
        snprintf(addr, sizeof(addr), "%s", s->opts.otlp_http_listen);
        for (uint32_t i = 0; i < im->nloops; i++) {
            int port = 0;
            int fd = open_listener("otlp.http.listen-address", addr, i == 0, &im->otlp_lock, &port, err);
            if (fd < 0)
                return fd;
            im->loops[i].otlp_fd = fd;
            if (i == 0) {
                im->otlp_port = port;
                char *colon = strrchr(addr, ':');
                snprintf(colon + 1, sizeof(addr) - (size_t)(colon + 1 - addr), "%d", port);
            }
        }
    }
    return 0;
}

typedef struct start_ctx {
    ps_loop_t *loop;
    impl_t *im;
    pthread_barrier_t *ready;
} start_ctx_t;

/* Everything per loop is created on the loop's own thread: h2o keeps per-thread buffer pools
 * (h2o_socket_buffer_prototype is __thread), so a socket made on another thread would share that
 * thread's pool without locking. */
static void *loop_main(void *arg)
{
    start_ctx_t *sc = arg;
    ps_loop_t *l = sc->loop;
    impl_t *im = sc->im;
    ps_thread_name("http-%u", (unsigned)(l - im->loops));
    h2o_context_init(&l->ctx, h2o_evloop_create(), &im->config);
    ps_conns_loop_init(l); /* before any listener reads */
    l->accept_ctx.ctx = &l->ctx;
    l->accept_ctx.hosts = im->config.hosts;
    ps_tls_loop_init(l); /* the TLS context and authentication of --web.config.file */
    l->queue = h2o_multithread_create_queue(l->ctx.loop);
    h2o_multithread_register_receiver(l->queue, &l->receiver, ps_async_on_messages);
    l->listener = h2o_evloop_socket_create(l->ctx.loop, l->fd, H2O_SOCKET_FLAG_DONT_READ);
    l->listener->data = &l->accept_ctx;
    h2o_socket_read_start(l->listener, on_accept);
    if (l->otlp_fd >= 0) {
        l->otlp_listener = h2o_evloop_socket_create(l->ctx.loop, l->otlp_fd, H2O_SOCKET_FLAG_DONT_READ);
        l->otlp_listener->data = &l->accept_ctx;
        h2o_socket_read_start(l->otlp_listener, on_accept);
    }
    pthread_barrier_wait(sc->ready);
    while (!l->exit)
        h2o_evloop_run(l->ctx.loop, INT32_MAX);
    /* Drain: the answers handed over before the exit message (FIFO) are being written; h2o closes
     * idle connections at once and the others once their response is out. Wait for that, or
     * at most DRAIN_MAX_MS for a client that does not read its answer. */
    h2o_context_request_shutdown(&l->ctx);
    int64_t deadline = ps_time_mono() + DRAIN_MAX_MS * (PS_NS_PER_S / 1000);
    while ((!h2o_linklist_is_empty(&l->ctx.http1._conns) || !h2o_linklist_is_empty(&l->ctx.http2._conns)) &&
           ps_time_mono() < deadline)
        h2o_evloop_run(l->ctx.loop, 10);
    return NULL;
}

int ps_server_start(ps_server_t *s, ps_err_t *err)
{
    impl_t *im = s->impl;
    /* the query threads first: the loops hand them queries from their first request on */
    if (s->opts.query_max_concurrency > 0 &&
        (s->qpool = ps_qpool_start(s, s->opts.query_max_concurrency, err)) == NULL)
        return err->code;
    if (s->opts.decode_threads > 0 &&
        (s->dpool = ps_qpool_start_decode(s, s->opts.decode_threads, s->opts.decode_queue_bytes, err)) == NULL)
        return err->code;
    pthread_barrier_t ready;
    pthread_barrier_init(&ready, NULL, im->nloops + 1);
    start_ctx_t *sc = ps_xcalloc(im->nloops, sizeof(*sc));
    for (uint32_t i = 0; i < im->nloops; i++) {
        ps_loop_t *l = &im->loops[i];
        l->srv = s;
        sc[i] = (start_ctx_t){l, im, &ready};
        if (pthread_create(&l->thread, NULL, loop_main, &sc[i]) != 0) {
            /* the threads already started wait at the barrier forever: this is fatal anyway */
            return ps_err_set(err, PS_EINTERNAL, "cannot start HTTP thread: %s", strerror(errno));
        }
    }
    pthread_barrier_wait(&ready); /* every loop has its queue and listener */
    pthread_barrier_destroy(&ready);
    free(sc);
    ps_tls_started(s, ps_server_post_loops);
    return 0;
}

int ps_server_port(ps_server_t *s)
{
    return ((impl_t *)s->impl)->port;
}

int ps_server_otlp_port(ps_server_t *s)
{
    return ((impl_t *)s->impl)->otlp_port;
}

typedef struct wake {
    ps_async_t a;
} wake_t;

static void on_close_listener(ps_async_t *a, h2o_req_t *req)
{
    /* runs on the loop thread: closing the listener there is safe */
    ps_loop_t *l = a->loop;
    if (l->listener != NULL) {
        h2o_socket_read_stop(l->listener);
        h2o_socket_close(l->listener);
        l->listener = NULL;
    }
    if (l->otlp_listener != NULL) {
        h2o_socket_read_stop(l->otlp_listener);
        h2o_socket_close(l->otlp_listener);
        l->otlp_listener = NULL;
    }
    free(a);
}

static void on_exit_loop(ps_async_t *a, h2o_req_t *req)
{
    ps_loop_t *l = a->loop;
    l->exit = 1;
    free(a);
}

static void post(ps_loop_t *l, ps_async_cb cb)
{
    ps_async_t *a = ps_xcalloc(1, sizeof(*a));
    a->loop = l;
    a->on_complete = cb;
    h2o_multithread_send_message(&l->receiver, &a->msg);
}

void ps_server_post_loops(ps_server_t *s, ps_async_cb cb)
{
    impl_t *im = s->impl;
    for (uint32_t i = 0; im != NULL && i < im->nloops; i++)
        if (im->loops[i].queue != NULL)
            post(&im->loops[i], cb);
}

void ps_server_begin_shutdown(ps_server_t *s)
{
    impl_t *im = s->impl;
    atomic_store(&s->stopping, 1);
    for (uint32_t i = 0; i < im->nloops; i++)
        if (im->loops[i].queue != NULL)
            post(&im->loops[i], on_close_listener);
}

void ps_server_stop(ps_server_t *s)
{
    impl_t *im = s->impl;
    if (im == NULL)
        return;
    ps_qpool_stop(s->dpool); /* writes being decoded finish (the writer refuses them now: 503) */
    ps_qpool_stop(s->qpool); /* queries stop (canceled); their completions reach the loops first */
    ps_web_auth_stop();      /* credential checks not made are answered 503 */
    for (uint32_t i = 0; i < im->nloops; i++)
        if (im->loops[i].queue != NULL)
            post(&im->loops[i], on_exit_loop);
    for (uint32_t i = 0; i < im->nloops; i++)
        if (im->loops[i].queue != NULL)
            pthread_join(im->loops[i].thread, NULL);
    /* the loops, connections and h2o config are left for process exit to reclaim */
}
