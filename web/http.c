/*
 * http.c - see http.h.
 */
#include "http.h"

#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>

#include "core/encode.h"
#include "core/metrics.h"
#include "internal.h"
#include "proto/gzip.h"
#include "ui_assets.h"

static int url_decode(const char *s, size_t n, ps_arena_t *a, const char **out, size_t *outlen)
{
    char *d = ps_arena_alloc(a, n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '+') {
            d[j++] = ' ';
        } else if (s[i] == '%') {
            if (i + 2 >= n)
                return -1;
            int h = ps_hex_digit((unsigned char)s[i + 1]), l = ps_hex_digit((unsigned char)s[i + 2]);
            if (h < 0 || l < 0)
                return -1;
            d[j++] = (char)(h * 16 + l);
            i += 2;
        } else {
            d[j++] = s[i];
        }
    }
    d[j] = 0;
    *out = d;
    *outlen = j;
    return 0;
}

static int parse_pairs(const char *s, size_t n, ps_arena_t *a, ps_params_t *out, size_t *cap, ps_err_t *err)
{
    size_t i = 0;
    while (i < n) {
        size_t start = i;
        while (i < n && s[i] != '&')
            i++;
        size_t len = i - start;
        i++;
        if (len == 0)
            continue;
        const char *kv = s + start;
        const char *eq = memchr(kv, '=', len);
        size_t kl = eq ? (size_t)(eq - kv) : len;
        if (out->n == *cap) {
            size_t nc = *cap ? *cap * 2 : 16;
            ps_param_t *ni = ps_arena_alloc(a, nc * sizeof(*ni));
            if (out->n)
                memcpy(ni, out->items, out->n * sizeof(*ni));
            out->items = ni;
            *cap = nc;
        }
        if (out->n >= 10000)
            return ps_err_set(err, PS_ETOOBIG, "too many parameters");
        ps_param_t *p = &out->items[out->n];
        if (url_decode(kv, kl, a, &p->name, &p->nlen) != 0 ||
            url_decode(eq ? eq + 1 : "", eq ? len - kl - 1 : 0, a, &p->value, &p->vlen) != 0)
            return ps_err_set(err, PS_EINVAL, "invalid URL escape in parameter \"%.*s\"", (int)(kl > 64 ? 64 : kl), kv);
        out->n++;
    }
    return 0;
}

int ps_http_params(h2o_req_t *req, bool with_body, ps_arena_t *arena, ps_params_t *out, ps_err_t *err)
{
    size_t cap = 0;
    int ret;
    out->n = 0;
    out->items = NULL;
    if (req->query_at != SIZE_MAX) {
        const char *q = req->path.base + req->query_at + 1;
        size_t qn = req->path.len - req->query_at - 1;
        if ((ret = parse_pairs(q, qn, arena, out, &cap, err)) != 0)
            return ret;
    }
    if (with_body && req->entity.base != NULL) {
        ssize_t ct = h2o_find_header(&req->headers, H2O_TOKEN_CONTENT_TYPE, -1);
        if (ct >= 0) {
            h2o_iovec_t v = req->headers.entries[ct].value;
            if (v.len >= 33 && strncasecmp(v.base, "application/x-www-form-urlencoded", 33) == 0)
                return parse_pairs(req->entity.base, req->entity.len, arena, out, &cap, err);
        }
    }
    return 0;
}

static const char *reason(int status)
{
    switch (status) {
    case 200: return "OK";
    case 204: return "No Content";
    case 304: return "Not Modified";
    case 400: return "Bad Request";
    case 404: return "Not Found";
    case 405: return "Method Not Allowed";
    case 408: return "Request Timeout";
    case 409: return "Conflict";
    case 413: return "Payload Too Large";
    case 415: return "Unsupported Media Type";
    case 401: return "Unauthorized";
    case 403: return "Forbidden";
    case 422: return "Unprocessable Entity";
    case 429: return "Too Many Requests";
    case 499: return "Client Closed Request";
    case 500: return "Internal Server Error";
    case 501: return "Not Implemented";
    case 503: return "Service Unavailable";
    case 504: return "Gateway Timeout";
    case 507: return "Insufficient Storage";
    default: return "Error";
    }
}

/* ---- request accounting: per handler, answers by status code and a duration histogram. One
 * relaxed atomic add per counter, no lock; /metrics sums them. ---- */

#define BUCKETS (&ps_histogram_default_buckets) /* 5 ms .. 10 s */

typedef struct handler_stats {
    ps_counter_t codes[500]; /* answers by status - 100 (100..599) */
    ps_histogram_t duration;
} handler_stats_t;

struct ps_http_stats {
    uint32_t n;
    handler_stats_t *h;
    uint32_t (*handler_of)(h2o_iovec_t path);
    const char *(*name)(uint32_t i);
};

static const char *const by_handler_code[] = {"handler", "code", NULL}, *const by_handler[] = {"handler", NULL},
                         *const by_class[] = {"class", NULL};
static const ps_metric_t m_requests = {"profstore_http_requests_total", PS_COUNTER,
                                       "HTTP requests answered, by handler (route pattern) and status code.",
                                       by_handler_code},
                         m_duration = {"profstore_http_request_duration_seconds", PS_HISTOGRAM,
                                       "Time from a request's arrival to its answer, by handler.", by_handler},
                         m_errors = {"profstore_http_errors_total", PS_COUNTER, "HTTP error responses by class.",
                                     by_class};

struct ps_http_stats *ps_http_stats_new(uint32_t n, uint32_t (*handler_of)(h2o_iovec_t path),
                                        const char *(*name)(uint32_t i))
{
    struct ps_http_stats *st = ps_xcalloc(1, sizeof(*st));
    st->n = n;
    st->h = ps_xcalloc(st->n, sizeof(*st->h));
    st->handler_of = handler_of;
    st->name = name;
    return st;
}

/* Counts an answer of handler path, begun at t0 (a null time: now). */
static void count(struct ps_http_stats *st, h2o_iovec_t path, const struct timeval *t0, int status)
{
    if (st == NULL)
        return;
    handler_stats_t *h = &st->h[st->handler_of(path)];
    struct timeval now;
    gettimeofday(&now, NULL);
    int64_t d = ((int64_t)now.tv_sec - t0->tv_sec) * 1000000000 + ((int64_t)now.tv_usec - t0->tv_usec) * 1000;
    if (t0->tv_sec == 0 && t0->tv_usec == 0)
        d = 0;
    ps_histogram_observe(&h->duration, BUCKETS, d);
    ps_counter_add(&h->codes[status >= 100 && status <= 599 ? status - 100 : 499], 1);
}

static const struct timeval *begin_of(h2o_req_t *req)
{
    return h2o_timeval_is_null(&req->timestamps.request_begin_at) ? &req->processed_at.at
                                                                   : &req->timestamps.request_begin_at;
}

/* Counts the answer to req: its handler (route pattern), status and the time since the request
 * began (its first byte arrived, as h2o recorded it). */
static void account(struct ps_http_stats *st, h2o_req_t *req, int status)
{
    count(st, req->path_normalized, begin_of(req), status);
}

void ps_http_account_task(const ps_task_t *t, int status)
{
    count(t->srv->http_stats, h2o_iovec_init(t->path, t->path_len), &t->begin, status);
}

void ps_http_stats_write(const struct ps_http_stats *st, ps_buf_t *b)
{
    ps_metric_head(b, &m_requests);
    for (uint32_t i = 0; i < st->n; i++)
        for (int c = 0; c < 500; c++) {
            uint64_t v = ps_counter_get(&st->h[i].codes[c]);
            if (v == 0)
                continue;
            char code[8];
            snprintf(code, sizeof(code), "%d", c + 100);
            ps_metric_u64(b, &m_requests, NULL, (const char *const[]){st->name(i), code}, v);
        }
    ps_metric_head(b, &m_duration);
    for (uint32_t i = 0; i < st->n; i++)
        if (ps_histogram_count(&st->h[i].duration, BUCKETS) > 0)
            ps_metric_histogram(b, &m_duration, (const char *const[]){st->name(i)}, &st->h[i].duration, BUCKETS);
}

void ps_http_errors_write(const struct ps_http_stats *st, ps_buf_t *b)
{
    uint64_t c4xx = 0, c5xx = 0;
    for (uint32_t i = 0; i < st->n; i++)
        for (int c = 400 - 100; c < 500; c++) { /* codes[] is by status - 100 */
            uint64_t v = ps_counter_get(&st->h[i].codes[c]);
            if (c < 500 - 100)
                c4xx += v;
            else
                c5xx += v;
        }
    ps_metric_head(b, &m_errors);
    ps_metric_u64(b, &m_errors, NULL, (const char *const[]){"4xx"}, c4xx);
    ps_metric_u64(b, &m_errors, NULL, (const char *const[]){"5xx"}, c5xx);
}

/* A handler that set Content-Encoding or Vary chose the representation itself (the UI's assets,
 * gzipped at build time): it is sent as it is. Otherwise task.c's ps_answer_gzip decides (text and
 * Connect's binary answers of PS_GZIP_MIN_BYTES and more; pprof is gzipped already). */
static bool negotiated(h2o_req_t *req)
{
    return h2o_find_header(&req->res.headers, H2O_TOKEN_CONTENT_ENCODING, -1) != -1 ||
           h2o_find_header(&req->res.headers, H2O_TOKEN_VARY, -1) != -1;
}

static bool accepts_gzip(h2o_req_t *req)
{
    ssize_t i = h2o_find_header(&req->headers, H2O_TOKEN_ACCEPT_ENCODING, -1);
    return i != -1 && ps_ui_accepts_gzip(req->headers.entries[i].value.base, req->headers.entries[i].value.len);
}

void ps_http_send(h2o_req_t *req, int status, const char *content_type, const void *body, size_t len)
{
    ps_server_t *s = ps_http_server(req);
    account(s->http_stats, req, status); /* before the answer: a client that then reads /metrics sees it */
    req->res.status = status;
    req->res.reason = reason(status);
    /* overload (429) and unavailable (503) say when to come back, unless the handler did:
     * Prometheus' remote write, Pyroscope's SDKs and Alloy wait at least that long */
    if ((status == 429 || status == 503) && h2o_find_header(&req->res.headers, H2O_TOKEN_RETRY_AFTER, -1) == -1)
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_RETRY_AFTER, NULL, H2O_STRLIT(PS_HTTP_RETRY_AFTER));
    ps_buf_t gz = PS_BUF_INIT;
    bool vary;
    if (ps_answer_gzip(status, content_type, body, len, negotiated(req), accepts_gzip(req), &vary, &gz)) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL, H2O_STRLIT("Accept-Encoding"));
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_ENCODING, NULL, H2O_STRLIT("gzip"));
        body = gz.data;
        len = gz.len;
    } else if (vary) {
        h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_VARY, NULL, H2O_STRLIT("Accept-Encoding"));
    }
    /* a 304 has no body and must not say Content-Length: 0 (RFC 9110 8.6): h2o leaves it out */
    req->res.content_length = status == 304 ? SIZE_MAX : len;
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, strlen(content_type));
    h2o_send_inline(req, body, len); /* copies the body */
    ps_buf_dispose(&gz);
}

/* A body of this size and more is sent from the answer's buffer, not copied into the request's
 * pool: a 13 MB SelectSeries answer was copied once more there, into pages of its own. */
#define BODY_TAKE_MIN (64u << 10)

static void body_dispose(void *p)
{
    ps_buf_dispose(p);
}

void ps_http_send_answer(h2o_req_t *req, ps_answer_t *a)
{
    ps_server_t *s = ps_http_server(req);
    account(s->http_stats, req, a->status); /* before the answer: a client that then reads /metrics sees it */
    req->res.status = a->status;
    req->res.reason = reason(a->status);
    for (uint32_t i = 0; i < a->nheaders; i++) {
        const ps_header_t *h = &a->headers[i];
        if (strcmp(h->name, "retry-after") == 0 && h2o_find_header(&req->res.headers, H2O_TOKEN_RETRY_AFTER, -1) != -1)
            continue; /* the handler said when (access.c) */
        h2o_add_header_by_str(&req->pool, &req->res.headers, h2o_strdup(&req->pool, h->name, h->nlen).base, h->nlen, 1,
                              NULL, h2o_strdup(&req->pool, h->value, h->vlen).base, h->vlen);
    }
    /* a 304 has no body and must not say Content-Length: 0 (RFC 9110 8.6): h2o leaves it out */
    req->res.content_length = a->status == 304 ? SIZE_MAX : a->body.len;
    const char *ct = a->content_type != NULL ? a->content_type : "text/plain; charset=utf-8";
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, h2o_strdup(&req->pool, ct, SIZE_MAX).base,
                   strlen(ct));
    static h2o_generator_t generator = {NULL, NULL}; /* as h2o_send_inline's */
    if (a->body.len == 0 && a->status != 304 && req->version < 0x200) {
        /* no body (a 204 of remote write): the headers alone. h2o_send_inline would add an
         * empty buffer, which h2o's HTTP/1 writer leaves pending after writing the headers: an
         * EPOLLOUT round (two epoll_ctl, an epoll_wait, a writev of nothing) an answer */
        h2o_start_response(req, &generator);
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
        return;
    }
    if (a->status == 304 || a->body.len < BODY_TAKE_MIN) {
        h2o_send_inline(req, a->body.data != NULL ? (const char *)a->body.data : "", a->body.len); /* copies the body */
        return;
    }
    /* the buffer goes with the request (freed when its pool is), h2o writes from it */
    ps_buf_t *body = h2o_mem_alloc_shared(&req->pool, sizeof(*body), body_dispose);
    *body = a->body;
    a->body = (ps_buf_t)PS_BUF_INIT;
    h2o_iovec_t v = h2o_iovec_init(body->data, body->len);
    h2o_start_response(req, &generator);
    if (h2o_memis(req->input.method.base, req->input.method.len, H2O_STRLIT("HEAD")))
        h2o_send(req, NULL, 0, H2O_SEND_STATE_FINAL);
    else
        h2o_send(req, &v, 1, H2O_SEND_STATE_FINAL);
}

/* A body of this size and more is copied into a block of its own (ps_arena_big_adopt): the arena
 * goes back to its loop's pool, which keeps only its head block. */
#define BODY_BLOCK_MIN (64u << 10)

ps_task_t *ps_http_task(h2o_req_t *req, ps_fail_fn fail)
{
    ps_arena_t *arena = ps_loop_arena_get(req);
    ps_task_t *t = ps_arena_calloc(arena, 1, sizeof(*t));
    t->srv = ps_http_server(req);
    t->arena = arena;
    t->fail = fail;
    t->path = ps_arena_strndup(arena, req->path_normalized.base, req->path_normalized.len);
    t->path_len = req->path_normalized.len;
    t->method = ps_arena_strndup(arena, req->method.base, req->method.len);
    t->begin = *begin_of(req);
    t->query_ret = ps_http_params(req, false, arena, &t->query, &t->query_err);
    t->params_ret = ps_http_params(req, true, arena, &t->params, &t->params_err);
    t->nheaders = req->headers.size;
    t->headers = ps_arena_calloc(arena, req->headers.size + 1, sizeof(*t->headers));
    bool gzip_ok = false;
    for (size_t i = 0; i < req->headers.size; i++) {
        const h2o_header_t *e = &req->headers.entries[i];
        ps_header_t *h = &t->headers[i];
        h->name = ps_arena_strndup(arena, e->name->base, e->name->len);
        h->nlen = e->name->len;
        h->value = ps_arena_strndup(arena, e->value.base, e->value.len);
        h->vlen = e->value.len;
        if (!gzip_ok && e->name == &H2O_TOKEN_ACCEPT_ENCODING->buf)
            gzip_ok = ps_ui_accepts_gzip(e->value.base, e->value.len);
    }
    if (req->entity.base != NULL && req->entity.len < BODY_BLOCK_MIN) {
        t->body = ps_arena_strndup(arena, req->entity.base, req->entity.len);
    } else if (req->entity.base != NULL) { /* a block of its own, never kept by the loop's pool */
        char *body = ps_arena_big_alloc(req->entity.len + 1);
        memcpy(body, req->entity.base, req->entity.len);
        body[req->entity.len] = '\0';
        ps_arena_big_adopt(arena, body, req->entity.len + 1);
        t->body = body;
    }
    t->body_len = t->body != NULL ? req->entity.len : 0;
    ps_answer_init(&t->ans, arena, gzip_ok);
    return t;
}

void ps_http_task_free(ps_task_t *t, void *loop)
{
    ps_answer_dispose(&t->ans);
    ps_loop_arena_put(loop, t->arena); /* t lives in it */
}

void ps_http_start(h2o_req_t *req, int status, const char *content_type, h2o_generator_t *gen)
{
    ps_server_t *s = ps_http_server(req);
    account(s->http_stats, req, status);
    req->res.status = status;
    req->res.reason = reason(status);
    h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_CONTENT_TYPE, NULL, content_type, strlen(content_type));
    h2o_start_response(req, gen);
}

void ps_http_send_envelope(h2o_req_t *req, int status, ps_json_t *j, ps_buf_t *b)
{
    ps_json_envelope_close(j);
    ps_http_send(req, status, "application/json", b->data, b->len);
    ps_buf_dispose(b);
}

/* an answer made by task.c's shapes, sent now */
static void send_made(h2o_req_t *req, void (*make)(ps_answer_t *a, int x, const char *msg), int x, const char *msg)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_answer_t a;
    h2o_iovec_t ae = ps_http_header(req, "accept-encoding");
    ps_answer_init(&a, &arena, ae.base != NULL && ps_ui_accepts_gzip(ae.base, ae.len));
    make(&a, x, msg);
    ps_http_send_answer(req, &a);
    ps_answer_dispose(&a);
    ps_arena_dispose(&arena);
}

void ps_http_error_status(h2o_req_t *req, int status, const char *msg)
{
    send_made(req, ps_answer_prom_error_status, status, msg);
}

void ps_http_error(h2o_req_t *req, int code, const char *msg)
{
    send_made(req, ps_answer_prom_error, code, msg);
}

void ps_http_body_limit_msg(char *buf, size_t n, size_t len, bool total, size_t max)
{
    if (total)
        snprintf(buf, n, "request body of %zu bytes is larger than --max-body-size (%zu bytes)", len, max);
    else
        snprintf(buf, n, "request body larger than --max-body-size (%zu bytes): %zu bytes arrived so far", max, len);
}

ps_server_t *ps_http_server(h2o_req_t *req)
{
    return ps_loop_of(req->conn->ctx)->srv;
}

typedef struct async_link {
    ps_async_t *a;
} async_link_t;

static void on_link_dispose(void *p)
{
    async_link_t *l = p;
    if (l->a != NULL)
        l->a->req = NULL;
}

void ps_async_init(ps_async_t *a, h2o_req_t *req, ps_async_cb cb)
{
    memset(&a->msg, 0, sizeof(a->msg));
    a->batch_next = NULL;
    a->req = req;
    a->on_complete = cb;
    a->loop = ps_loop_of(req->conn->ctx);
    async_link_t *l = h2o_mem_alloc_shared(&req->pool, sizeof(*l), on_link_dispose);
    l->a = a;
    a->link = l;
}

void ps_async_cancel(ps_async_t *a)
{
    ((async_link_t *)a->link)->a = NULL;
    a->req = NULL;
}

/* The completions held back on this thread (ps_server_answers), last first. A loop woken once
 * per completion drained its queue between them (the writer answers a batch one by one): a pipe
 * write on the writer's thread and a wake-up of the loop each, ~4 of each a loop and commit under
 * bench_ingest's load, now one. */
static _Thread_local bool held;
static _Thread_local ps_async_t *held_list;

void ps_async_complete(ps_async_t *a)
{
    if (held) {
        a->batch_next = held_list;
        held_list = a;
        return;
    }
    ps_loop_t *loop = a->loop;
    h2o_multithread_send_message(&loop->receiver, &a->msg);
}

void ps_server_answers(bool begin)
{
    if (begin) {
        held = true;
        return;
    }
    held = false;
    ps_async_t *list = NULL; /* in the order held */
    while (held_list != NULL) {
        ps_async_t *a = held_list;
        held_list = a->batch_next;
        a->batch_next = list;
        list = a;
    }
    while (list != NULL) { /* one message a loop: its first completion carries the others */
        ps_async_t *first = list, *tail = first, *others = NULL, **otail = &others;
        for (ps_async_t *a = first->batch_next, *next; a != NULL; a = next) {
            next = a->batch_next;
            if (a->loop == first->loop) {
                tail->batch_next = a;
                tail = a;
            } else {
                *otail = a;
                otail = &a->batch_next;
            }
        }
        tail->batch_next = NULL;
        *otail = NULL;
        list = others;
        ps_loop_t *loop = first->loop;
        h2o_multithread_send_message(&loop->receiver, &first->msg); /* first may be freed from here on */
    }
}

/* Called on the loop thread for completions sent by ps_async_complete. */
void ps_async_on_messages(h2o_multithread_receiver_t *receiver, h2o_linklist_t *messages)
{
    while (!h2o_linklist_is_empty(messages)) {
        h2o_multithread_message_t *m = H2O_STRUCT_FROM_MEMBER(h2o_multithread_message_t, link, messages->next);
        h2o_linklist_unlink(&m->link);
        for (ps_async_t *a = H2O_STRUCT_FROM_MEMBER(ps_async_t, msg, m), *next; a != NULL; a = next) {
            next = a->batch_next; /* a may be freed by its on_complete */
            if (a->on_complete == NULL) /* a wake-up message */
                continue;
            h2o_req_t *req = a->req;
            if (req != NULL)
                ((async_link_t *)a->link)->a = NULL;
            a->on_complete(a, req);
        }
    }
}

static void on_write_done(ps_wreq_t *w)
{
    ps_async_complete(w->ctx); /* back to the request's loop */
}

int ps_async_submit_write(ps_async_t *a, ps_wreq_t *w, h2o_req_t *req, ps_async_cb cb)
{
    w->on_done = on_write_done;
    w->ctx = a;
    ps_async_init(a, req, cb);
    if (ps_writer_submit(ps_http_server(req)->writer, w) != 0) {
        ps_async_cancel(a);
        return -1;
    }
    return 0;
}

ps_arena_t *ps_loop_arena_get(h2o_req_t *req)
{
    ps_loop_t *l = ps_loop_of(req->conn->ctx);
    if (l->nfree > 0)
        return l->free_arenas[--l->nfree];
    ps_arena_t *a = ps_xmalloc(sizeof(*a));
    *a = (ps_arena_t)PS_ARENA_INIT;
    return a;
}

void ps_loop_arena_put(void *loop, ps_arena_t *a)
{
    ps_loop_t *l = loop;
    if (a == NULL)
        return;
    if (l->nfree < (int)(sizeof(l->free_arenas) / sizeof(l->free_arenas[0]))) {
        ps_arena_reset(a);
        l->free_arenas[l->nfree++] = a;
        return;
    }
    ps_arena_dispose(a);
    free(a);
}

h2o_iovec_t ps_http_header(h2o_req_t *req, const char *name)
{
    ssize_t i = h2o_find_header_by_str(&req->headers, name, strlen(name), -1);
    return i >= 0 ? req->headers.entries[i].value : h2o_iovec_init(NULL, 0);
}
