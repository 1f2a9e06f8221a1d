/*
 * access.c - the web configuration in force (--web.config.file): the TLS context of the listeners
 * (OpenSSL through h2o, HTTP/2 offered by ALPN), the credential checker and the response
 * headers; and the check every request passes first (ps_web_authorize).
 *
 * Swapping. What a web config becomes is one immutable ps_websec_t, counted. The server keeps
 * the current one (under a mutex); each loop holds its own reference in ps_loop_t.websec and
 * puts the TLS context on its accept ctx. ps_server_web_config (start, SIGHUP, /-/reload) makes
 * a new one and posts a message to every loop, which swaps its reference on its own thread: a
 * request is checked against one configuration from start to end, and connections already
 * accepted keep the TLS context they started with (OpenSSL counts those itself). A file that does
 * not load or whose certificates do not keeps the running one. TLS cannot be switched on or
 * off by a reload (the listeners are the same): that needs a restart.
 *
 * Refusals (rule 10: a status, the API's error shape, the reason):
 *  - no or bad credentials: 401, WWW-Authenticate: Basic (Bearer when only tokens are configured);
 *  - a credential without the route's scope: 403;
 *  - admin routes without --web.enable-admin-api: 503 "admin APIs disabled" (Prometheus 2.42);
 *    /-/reload without --web.enable-lifecycle: 403 "Lifecycle API is not enabled." (Prometheus);
 * Connect paths answer in Connect's JSON (unauthenticated, permission_denied, unavailable), the
 * others in Prometheus' envelope (errorType unauthorized, forbidden, unavailable).
 */
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

#include "auth/auth.h"
#include "connect.h"
#include "core/log.h"
#include "core/thread.h"
#include "http.h"
#include "internal.h"

typedef struct ps_websec ps_websec_t;
struct ps_websec {
    atomic_int refs;
    ps_webconfig_t *wc; /* owned: the headers point into it */
    ps_auth_t *auth;    /* NULL: no authentication */
    SSL_CTX *ssl;       /* NULL: plain HTTP */
};

static pthread_mutex_t cur_mu = PTHREAD_MUTEX_INITIALIZER;
static void (*post_loops)(ps_server_t *s, ps_async_cb cb); /* ps_tls_started's (under cur_mu) */

static void websec_release(ps_websec_t *w)
{
    if (w == NULL || atomic_fetch_sub(&w->refs, 1) != 1)
        return;
    if (w->ssl != NULL)
        SSL_CTX_free(w->ssl);
    ps_auth_free(w->auth);
    ps_webconfig_free(w->wc);
    free(w);
}

/* The server's current configuration with a reference for the caller, or NULL. */
static ps_websec_t *websec_acquire(ps_server_t *s)
{
    pthread_mutex_lock(&cur_mu);
    ps_websec_t *w = s->websec;
    if (w != NULL)
        atomic_fetch_add(&w->refs, 1);
    pthread_mutex_unlock(&cur_mu);
    return w;
}

static SSL_CTX *make_ssl(const ps_webconfig_t *wc, ps_err_t *err)
{
    SSL_CTX *ctx = ps_webconfig_ssl_ctx(wc, "profstore", err);
    if (ctx == NULL)
        return NULL;
    static const h2o_iovec_t http1_only[] = {{H2O_STRLIT("http/1.1")}, {NULL}};
    h2o_ssl_register_alpn_protocols(ctx, wc->http2 ? h2o_alpn_protocols : http1_only);
    return ctx;
}

static void on_swap(ps_async_t *a, h2o_req_t *req)
{
    ps_loop_t *l = a->loop;
    ps_websec_t *old = l->websec;
    ps_tls_loop_init(l);
    websec_release(old);
    free(a);
}

void ps_tls_loop_init(ps_loop_t *l)
{
    l->websec = websec_acquire(l->srv);
    l->accept_ctx.ssl_ctx = l->websec != NULL ? l->websec->ssl : NULL;
}

int ps_server_web_config(ps_server_t *s, ps_webconfig_t *wc, ps_err_t *err)
{
    ps_websec_t *w = ps_xcalloc(1, sizeof(*w));
    atomic_init(&w->refs, 1);
    w->wc = wc;
    if (wc->tls.enabled && (w->ssl = make_ssl(wc, err)) == NULL) {
        websec_release(w);
        return err->code;
    }
    pthread_mutex_lock(&cur_mu);
    ps_websec_t *old = s->websec;
    bool was_tls = s->websec_started ? s->websec_tls : wc->tls.enabled;
    if (was_tls != wc->tls.enabled) {
        pthread_mutex_unlock(&cur_mu);
        int rc = ps_err_set(err, PS_EINVAL, "%s: TLS cannot be turned %s by a reload (tls_server_config %s): restart "
                                            "profstore for that", wc->path, was_tls ? "off" : "on",
                            was_tls ? "removed" : "added");
        websec_release(w); /* frees wc */
        return rc;
    }
    w->auth = ps_auth_new(wc);
    s->websec = w;
    s->websec_tls = wc->tls.enabled;
    bool started = s->websec_started;
    void (*post)(ps_server_t *, ps_async_cb) = post_loops;
    pthread_mutex_unlock(&cur_mu);
    websec_release(old);
    if (started)
        post(s, on_swap);
    return 0;
}

void ps_tls_started(ps_server_t *s, void (*post)(ps_server_t *s, ps_async_cb cb))
{
    pthread_mutex_lock(&cur_mu);
    post_loops = post;
    s->websec_tls = s->websec != NULL && s->websec->ssl != NULL;
    s->websec_started = true;
    pthread_mutex_unlock(&cur_mu);
}

/* ---- the check of every request ---- */

/* ---- the credential thread ----
 * A bcrypt check at cost 10 takes ~0.1 s of CPU. On an event loop it would stall every connection
 * of that loop, and a client sending a new wrong password each time could stall them all; so a
 * verdict that is not cached (ps_auth_check_quick: PS_AUTH_PENDING) is computed here, on one
 * thread (bcrypt is one at a time process-wide anyway), while the request waits like a write does
 * (ps_async_t), and the request's loop goes on. At most PS_AUTHQ_MAX checks wait or run: past
 * that a request is refused with 503 and Retry-After at once (a flood of guesses cannot make the
 * queue, or the wait of an honest first login, unbounded). Credentials already checked are
 * cached by src/auth and never come here. */

typedef struct authjob authjob_t;
struct authjob {
    ps_async_t async;  /* the completion, on the request's loop */
    ps_websec_t *w;    /* a reference: the checker outlives a reload meanwhile */
    char *hdr;         /* a copy of the Authorization value */
    size_t len;
    unsigned cls;
    int (*route)(h2o_req_t *req);
    ps_auth_verdict_t v; /* PS_AUTH_PENDING: not checked (shutting down) */
    unsigned scopes;
    authjob_t *next;
};

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    authjob_t *head, **tail;
    uint32_t n;         /* queued or running */
    bool started, stop;
    pthread_t thread;
} aq = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, NULL, &aq.head, 0, false, false, 0};

static void *auth_main(void *arg)
{
    (void)arg;
    ps_thread_name("auth");
    pthread_mutex_lock(&aq.mu);
    for (;;) {
        while (aq.head == NULL && !aq.stop)
            pthread_cond_wait(&aq.cv, &aq.mu);
        authjob_t *j = aq.head;
        if (j == NULL)
            break;
        if ((aq.head = j->next) == NULL)
            aq.tail = &aq.head;
        bool stop = aq.stop;
        pthread_mutex_unlock(&aq.mu);
        j->v = stop ? PS_AUTH_PENDING : ps_auth_check(j->w->auth, j->hdr, j->len, &j->scopes);
        pthread_mutex_lock(&aq.mu);
        aq.n--;
        pthread_mutex_unlock(&aq.mu);
        ps_async_complete(&j->async);
        pthread_mutex_lock(&aq.mu);
    }
    pthread_mutex_unlock(&aq.mu);
    return NULL;
}

void ps_web_auth_stop(void)
{
    pthread_mutex_lock(&aq.mu);
    bool join = aq.started && !aq.stop;
    aq.stop = true;
    pthread_cond_broadcast(&aq.cv);
    pthread_mutex_unlock(&aq.mu);
    if (join)
        pthread_join(aq.thread, NULL);
}

static void refuse(h2o_req_t *req, bool connect, int status, ps_connect_code_t code, const char *msg)
{
    if (connect)
        ps_connect_error_req(req, code, msg);
    else if (ps_api_otlp_is_path(req->path_normalized))
        ps_api_otlp_refuse(req, status, msg); /* OTLP/HTTP: a google.rpc.Status */
    else
        ps_http_error_status(req, status, msg);
}

/* The rest of the check once the credentials have a verdict (v, scopes; PS_AUTH_OK with every scope
 * when there is no authentication). 0 to go on, -1 when it answered. */
static int authorize_verdict(h2o_req_t *req, ps_websec_t *w, unsigned need, ps_auth_verdict_t v, unsigned scopes)
{
    bool connect = ps_connect_is_path(req->path_normalized);
    if (v != PS_AUTH_OK) {
        const char *ch = ps_auth_challenge(w->auth);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_WWW_AUTHENTICATE, NULL, ch, strlen(ch));
        char msg[200];
        snprintf(msg, sizeof(msg), "unauthorized: %s", ps_auth_verdict_str(v));
        refuse(req, connect, 401, PS_CONNECT_UNAUTHENTICATED, msg);
        return -1;
    }
    if ((scopes & need) != need) {
        char msg[200];
        snprintf(msg, sizeof(msg), "forbidden: this credential lacks the %s scope that %.*s needs",
                 need & PS_ROUTE_ADMIN ? "admin" : need & PS_ROUTE_WRITE ? "write" : "read",
                 (int)(req->path_normalized.len > 100 ? 100 : req->path_normalized.len), req->path_normalized.base);
        refuse(req, connect, 403, PS_CONNECT_PERMISSION_DENIED, msg);
        return -1;
    }
    if (need & PS_ROUTE_ADMIN) {
        ps_server_t *s = ps_loop_of(req->conn->ctx)->srv;
        if (h2o_memis(req->path_normalized.base, req->path_normalized.len, H2O_STRLIT("/-/reload"))) {
            if (!s->opts.enable_lifecycle) {
                refuse(req, connect, 403, PS_CONNECT_PERMISSION_DENIED,
                       "Lifecycle API is not enabled. (start profstore with --web.enable-lifecycle)");
                return -1;
            }
        } else if (!s->opts.enable_admin_api) {
            refuse(req, connect, 503, PS_CONNECT_UNAVAILABLE,
                   "admin APIs disabled (start profstore with --web.enable-admin-api)");
            return -1;
        }
    }
    return 0;
}

static void on_auth_done(ps_async_t *a, h2o_req_t *req)
{
    authjob_t *j = (authjob_t *)a;
    if (req != NULL) {
        if (j->v == PS_AUTH_PENDING) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
            refuse(req, ps_connect_is_path(req->path_normalized), 503, PS_CONNECT_UNAVAILABLE,
                   "server is shutting down");
        } else if (authorize_verdict(req, j->w, j->cls & PS_ROUTE_SCOPES, j->v, j->scopes) == 0) {
            j->route(req);
        }
    }
    websec_release(j->w);
    OPENSSL_cleanse(j->hdr, j->len);
    free(j->hdr);
    free(j);
}

/* Hands the check of hdr to the credential thread: 1, or -1 when it answered (503: full). */
static int authorize_later(h2o_req_t *req, ps_websec_t *w, unsigned cls, const char *hdr, size_t len,
                           int (*route)(h2o_req_t *req))
{
    pthread_mutex_lock(&aq.mu);
    bool full = aq.stop || aq.n >= PS_AUTHQ_MAX;
    if (!full && !aq.started) {
        if (pthread_create(&aq.thread, NULL, auth_main, NULL) != 0)
            full = true;
        else
            aq.started = true;
    }
    if (full) {
        bool stop = aq.stop;
        pthread_mutex_unlock(&aq.mu);
        char msg[160];
        if (stop)
            snprintf(msg, sizeof(msg), "server is shutting down");
        else
            snprintf(msg, sizeof(msg), "too many credential checks waiting (%d, each a bcrypt); retry", PS_AUTHQ_MAX);
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT("1"));
        refuse(req, ps_connect_is_path(req->path_normalized), 503, PS_CONNECT_UNAVAILABLE, msg);
        return -1;
    }
    authjob_t *j = ps_xcalloc(1, sizeof(*j));
    atomic_fetch_add(&w->refs, 1);
    j->w = w;
    j->hdr = ps_xmalloc(len + 1);
    memcpy(j->hdr, hdr, len);
    j->len = len;
    j->cls = cls;
    j->route = route;
    ps_async_init(&j->async, req, on_auth_done);
    *aq.tail = j;
    aq.tail = &j->next;
    aq.n++;
    pthread_cond_signal(&aq.cv);
    pthread_mutex_unlock(&aq.mu);
    return 1;
}

int ps_web_authorize(h2o_req_t *req, unsigned cls, int (*route)(h2o_req_t *req))
{
    ps_loop_t *l = ps_loop_of(req->conn->ctx);
    ps_websec_t *w = l->websec;
    for (uint32_t i = 0; w != NULL && i < w->wc->nheaders; i++) {
        /* copied: an answer sent later may outlive this configuration */
        h2o_iovec_t n = h2o_strdup(&req->pool, w->wc->headers[i].name, SIZE_MAX),
                    v = h2o_strdup(&req->pool, w->wc->headers[i].value, SIZE_MAX);
        h2o_add_header_by_str(&req->pool, &req->res.headers, n.base, n.len, 0, NULL, v.base, v.len);
    }
    unsigned need = cls & PS_ROUTE_SCOPES;
    if (need == PS_ROUTE_OPEN)
        return 0;
    ps_auth_verdict_t v = PS_AUTH_OK;
    unsigned scopes = PS_SCOPE_ALL;
    if (w != NULL && w->auth != NULL) {
        ssize_t hi = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
        const char *hdr = hi >= 0 ? req->headers.entries[hi].value.base : NULL;
        size_t len = hi >= 0 ? req->headers.entries[hi].value.len : 0;
        v = ps_auth_check_quick(w->auth, hdr, len, &scopes);
        if (v == PS_AUTH_PENDING)
            return authorize_later(req, w, cls, hdr, len, route);
    }
    return authorize_verdict(req, w, need, v, scopes);
}

bool ps_web_is_admin(h2o_req_t *req)
{
    ps_websec_t *w = ps_loop_of(req->conn->ctx)->websec;
    if (w == NULL || w->auth == NULL)
        return false; /* without authentication nobody is known to be the operator */
    ssize_t hi = h2o_find_header(&req->headers, H2O_TOKEN_AUTHORIZATION, -1);
    unsigned scopes = 0;
    return hi >= 0 &&
           ps_auth_check_quick(w->auth, req->headers.entries[hi].value.base, req->headers.entries[hi].value.len,
                               &scopes) == PS_AUTH_OK &&
           (scopes & PS_SCOPE_ADMIN);
}
