/*
 * connect.c - the Connect protocol for unary calls (see connect.h): the checks
 * every call goes through (HTTP method, Connect-Protocol-Version, Content-Type, Connect-Timeout-Ms,
 * Content-Encoding with a bounded gunzip), answers (gzipped when accepted, by ps_http_send) and
 * Connect error JSON with connect-go's code -> HTTP status table.
 *
 * Order of the checks, as connect-go's handler does them: the path (an unknown method is
 * unimplemented, 501), the HTTP method (405 with Allow: POST: every method here is POST-only),
 * Connect-Protocol-Version, Content-Type (415), Connect-Timeout-Ms, Content-Encoding (an unknown
 * one is unimplemented), then the body is inflated (past --max-inflated-size: resource_exhausted,
 * 429 as connect-go's table says) and the method's handler runs.
 *
 * The method table is routes.c's, with the other routes: it runs a call as a task (task.h),
 * ps_connect_call on a pool thread. /metrics counts each method of the table as its own handler
 * (its path, e.g. handler="/push.v1.PusherService/Push"); Connect-shaped paths of no method count
 * as "other".
 */
#include "connect.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/budget.h"
#include "core/json.h"
#include "http.h"
#include "ingest/ingest.h"
#include "proto/gzip.h"
#include "ui_assets.h"

static bool is_ident(char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
}

bool ps_connect_is_path(h2o_iovec_t p)
{
    /* "/" pkg "." Service "/" Method: identifiers, at least one dot in the first segment */
    if (p.len < 6 || p.base[0] != '/')
        return false;
    size_t i = 1, dots = 0;
    while (i < p.len && p.base[i] != '/') {
        char c = p.base[i];
        if (c == '.') {
            if (p.base[i - 1] == '.' || p.base[i - 1] == '/')
                return false;
            dots++;
        } else if (!is_ident(c)) {
            return false;
        }
        i++;
    }
    if (dots == 0 || i >= p.len || p.base[i - 1] == '.' || i + 1 >= p.len)
        return false;
    for (size_t k = i + 1; k < p.len; k++)
        if (!is_ident(p.base[k]))
            return false;
    return true;
}

/* ---- codes ------------------------------------------------------------------------------------ */

static const char *const code_names[] = {
    [PS_CONNECT_CANCELED] = "canceled",
    [PS_CONNECT_UNKNOWN] = "unknown",
    [PS_CONNECT_INVALID_ARGUMENT] = "invalid_argument",
    [PS_CONNECT_DEADLINE_EXCEEDED] = "deadline_exceeded",
    [PS_CONNECT_NOT_FOUND] = "not_found",
    [PS_CONNECT_ALREADY_EXISTS] = "already_exists",
    [PS_CONNECT_PERMISSION_DENIED] = "permission_denied",
    [PS_CONNECT_RESOURCE_EXHAUSTED] = "resource_exhausted",
    [PS_CONNECT_FAILED_PRECONDITION] = "failed_precondition",
    [PS_CONNECT_ABORTED] = "aborted",
    [PS_CONNECT_OUT_OF_RANGE] = "out_of_range",
    [PS_CONNECT_UNIMPLEMENTED] = "unimplemented",
    [PS_CONNECT_INTERNAL] = "internal",
    [PS_CONNECT_UNAVAILABLE] = "unavailable",
    [PS_CONNECT_DATA_LOSS] = "data_loss",
    [PS_CONNECT_UNAUTHENTICATED] = "unauthenticated",
};

/* connect-go's connectCodeToHTTP */
static const int code_status[] = {
    [PS_CONNECT_CANCELED] = 499,          [PS_CONNECT_UNKNOWN] = 500,
    [PS_CONNECT_INVALID_ARGUMENT] = 400,  [PS_CONNECT_DEADLINE_EXCEEDED] = 504,
    [PS_CONNECT_NOT_FOUND] = 404,         [PS_CONNECT_ALREADY_EXISTS] = 409,
    [PS_CONNECT_PERMISSION_DENIED] = 403, [PS_CONNECT_RESOURCE_EXHAUSTED] = 429,
    [PS_CONNECT_FAILED_PRECONDITION] = 400, [PS_CONNECT_ABORTED] = 409,
    [PS_CONNECT_OUT_OF_RANGE] = 400,      [PS_CONNECT_UNIMPLEMENTED] = 501,
    [PS_CONNECT_INTERNAL] = 500,          [PS_CONNECT_UNAVAILABLE] = 503,
    [PS_CONNECT_DATA_LOSS] = 500,         [PS_CONNECT_UNAUTHENTICATED] = 401,
};

const char *ps_connect_code_name(ps_connect_code_t code)
{
    return code >= PS_CONNECT_CANCELED && code <= PS_CONNECT_UNAUTHENTICATED ? code_names[code] : "unknown";
}

int ps_connect_code_status(ps_connect_code_t code)
{
    return code >= PS_CONNECT_CANCELED && code <= PS_CONNECT_UNAUTHENTICATED ? code_status[code] : 500;
}

ps_connect_code_t ps_connect_code_of(int ps_code)
{
    switch (ps_code) {
    case PS_EINVAL: return PS_CONNECT_INVALID_ARGUMENT;
    case PS_ETOOBIG: return PS_CONNECT_RESOURCE_EXHAUSTED;
    case PS_ENOTFOUND: return PS_CONNECT_NOT_FOUND;
    case PS_ECONFLICT: return PS_CONNECT_ALREADY_EXISTS;
    case PS_EOUTOFORDER: return PS_CONNECT_INVALID_ARGUMENT;
    case PS_ENOSPACE: return PS_CONNECT_RESOURCE_EXHAUSTED;
    case PS_ECORRUPT: return PS_CONNECT_DATA_LOSS;
    case PS_ENOMEM: return PS_CONNECT_RESOURCE_EXHAUSTED;
    case PS_EUNAVAIL: return PS_CONNECT_UNAVAILABLE;
    case PS_EUNSUPPORTED: return PS_CONNECT_INVALID_ARGUMENT;
    case PS_ETIMEOUT: return PS_CONNECT_DEADLINE_EXCEEDED;
    case PS_ECANCELED: return PS_CONNECT_CANCELED;
    case PS_ELIMIT: return PS_CONNECT_RESOURCE_EXHAUSTED;
    case PS_EOVERLOAD: return PS_CONNECT_RESOURCE_EXHAUSTED; /* HTTP 429: Alloy retries it */
    default: return PS_CONNECT_INTERNAL; /* ESTORAGE, EVERSION, EINTERNAL */
    }
}

/* ---- answers ---------------------------------------------------------------------------------- */

/* The error JSON with an explicit HTTP status (415, 405 have no code of their own). */
void ps_connect_error_json(ps_connect_code_t code, const char *msg, ps_buf_t *b)
{
    ps_json_t j;
    ps_json_init(&j, b);
    ps_json_obj(&j);
    ps_json_key(&j, "code");
    ps_json_cstr(&j, ps_connect_code_name(code));
    ps_json_key(&j, "message");
    ps_json_cstr(&j, msg);
    ps_json_end(&j);
}

/* the error JSON with status, offering gzip as every answer does */
static void answer_error(ps_answer_t *a, int status, ps_connect_code_t code, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_connect_error_json(code, msg, &b);
    ps_answer_header(a, "accept-encoding", "gzip", 4);
    ps_answer_set(a, status, "application/json", b.data, b.len);
    ps_buf_dispose(&b);
}

void ps_connect_fail(ps_answer_t *a, int code, const char *msg)
{
    ps_connect_code_t cc = ps_connect_code_of(code);
    answer_error(a, ps_connect_code_status(cc), cc, msg);
}

void ps_connect_error_req(h2o_req_t *req, ps_connect_code_t code, const char *msg)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_answer_t a;
    h2o_iovec_t ae = ps_http_header(req, "accept-encoding");
    ps_answer_init(&a, &arena, ae.base != NULL && ps_ui_accepts_gzip(ae.base, ae.len));
    answer_error(&a, ps_connect_code_status(code), code, msg);
    ps_http_send_answer(req, &a);
    ps_answer_dispose(&a);
    ps_arena_dispose(&arena);
}

void ps_connect_error(ps_connect_call_t *c, ps_connect_code_t code, const char *msg)
{
    answer_error(&c->t->ans, ps_connect_code_status(code), code, msg);
}

void ps_connect_reply(ps_connect_call_t *c, const void *msg, size_t len)
{
    ps_answer_header(&c->t->ans, "accept-encoding", "gzip", 4);
    /* gzipped for a client that accepts it, like every answer */
    ps_answer_set(&c->t->ans, 200, c->codec == PS_CONNECT_JSON ? "application/json" : "application/proto", msg, len);
}

void ps_connect_reply_take(ps_connect_call_t *c, ps_buf_t *msg)
{
    ps_answer_header(&c->t->ans, "accept-encoding", "gzip", 4);
    ps_answer_take(&c->t->ans, 200, c->codec == PS_CONNECT_JSON ? "application/json" : "application/proto", msg);
}

/* ---- the checks -------------------------------------------------------------------------------- */

static h2o_iovec_t header(ps_task_t *t, const char *name)
{
    size_t n;
    const char *v = ps_task_header(t, name, &n);
    return h2o_iovec_init(v, n);
}

static h2o_iovec_t trim(h2o_iovec_t v)
{
    while (v.len > 0 && (v.base[0] == ' ' || v.base[0] == '\t')) {
        v.base++;
        v.len--;
    }
    while (v.len > 0 && (v.base[v.len - 1] == ' ' || v.base[v.len - 1] == '\t'))
        v.len--;
    return v;
}

/* The codec of a Content-Type: application/proto, application/json[; charset=utf-8]; -1 else. */
static int codec_of(h2o_iovec_t ct)
{
    const char *semi = ct.base != NULL ? memchr(ct.base, ';', ct.len) : NULL;
    h2o_iovec_t mt = trim(h2o_iovec_init(ct.base, semi != NULL ? (size_t)(semi - ct.base) : ct.len));
    int codec;
    if (h2o_lcstris(mt.base, mt.len, H2O_STRLIT("application/proto")))
        codec = PS_CONNECT_PROTO;
    else if (h2o_lcstris(mt.base, mt.len, H2O_STRLIT("application/json")))
        codec = PS_CONNECT_JSON;
    else
        return -1;
    if (semi != NULL) {
        h2o_iovec_t par = trim(h2o_iovec_init(semi + 1, ct.len - (size_t)(semi + 1 - ct.base)));
        if (par.len > 0 && !h2o_lcstris(par.base, par.len, H2O_STRLIT("charset=utf-8")) &&
            !h2o_lcstris(par.base, par.len, H2O_STRLIT("charset=\"utf-8\"")))
            return -1;
    }
    return codec;
}

static int64_t mono_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

/* Quoted, printable, at most 40 bytes of a header value for an error message. */
static void quote(h2o_iovec_t v, char *out, size_t size)
{
    size_t o = 0;
    for (size_t i = 0; i < v.len && i < 40 && o + 2 < size; i++)
        out[o++] = v.base[i] >= 0x20 && v.base[i] < 0x7f && v.base[i] != '"' ? v.base[i] : '?';
    out[o] = '\0';
}

/* Checks the headers; fills c's codec and deadline, or answers the error (returns -1). */
static int check_headers(ps_task_t *t, ps_connect_call_t *c, bool *gzip_in)
{
    char q[48], msg[200];
    h2o_iovec_t v = header(t, "connect-protocol-version");
    if (v.base != NULL && !h2o_memis(v.base, v.len, H2O_STRLIT("1"))) {
        quote(v, q, sizeof(q));
        snprintf(msg, sizeof(msg), "connect-protocol-version must be \"1\": got \"%s\"", q);
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, msg);
        return -1;
    }
    v = header(t, "content-type");
    if ((c->codec = codec_of(v)) < 0) {
        quote(v, q, sizeof(q));
        snprintf(msg, sizeof(msg), "unsupported content type \"%s\": expected application/proto or application/json",
                 v.base != NULL ? q : "");
        ps_answer_header(&t->ans, "accept-post", H2O_STRLIT("application/json, application/proto")); /* as connect-go does */
        answer_error(&t->ans, 415, PS_CONNECT_INVALID_ARGUMENT, msg);
        return -1;
    }
    v = header(t, "connect-timeout-ms");
    if (v.base != NULL) {
        int64_t ms = 0;
        bool ok = v.len >= 1 && v.len <= 10;
        for (size_t i = 0; ok && i < v.len; i++) {
            ok = v.base[i] >= '0' && v.base[i] <= '9';
            ms = ms * 10 + (v.base[i] - '0');
        }
        if (!ok) {
            quote(v, q, sizeof(q));
            snprintf(msg, sizeof(msg), "protocol error: invalid connect-timeout-ms \"%s\" (1 to 10 digits)", q);
            ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, msg);
            return -1;
        }
        c->deadline_ns = mono_ns() + ms * 1000000;
        ps_budget_t *b = ps_budget_get(); /* on the query pool: the query stops at the earlier deadline */
        if (b != NULL && (b->deadline == 0 || c->deadline_ns < b->deadline)) {
            b->deadline = c->deadline_ns;
            b->timeout = ms * 1000000;
            b->source = "Connect-Timeout-Ms";
        }
    }
    v = trim(header(t, "content-encoding"));
    *gzip_in = false;
    if (v.len > 0 && !h2o_lcstris(v.base, v.len, H2O_STRLIT("identity"))) {
        if (!h2o_lcstris(v.base, v.len, H2O_STRLIT("gzip"))) {
            quote(v, q, sizeof(q));
            snprintf(msg, sizeof(msg), "unknown compression \"%s\": supported encodings are gzip", q);
            ps_connect_error(c, PS_CONNECT_UNIMPLEMENTED, msg);
            return -1;
        }
        *gzip_in = true;
    }
    return 0;
}

int ps_connect_call(ps_task_t *t, const char *method_path, ps_connect_fn fn)
{
    char msg[300];
    ps_arena_t *arena = t->arena;
    ps_connect_call_t *c = ps_arena_calloc(arena, 1, sizeof(*c));
    c->t = t;
    c->srv = t->srv;
    c->arena = arena;
    if (strcmp(t->method, "POST") != 0) {
        ps_answer_header(&t->ans, "allow", "POST", 4);
        snprintf(msg, sizeof(msg), "method %.*s not allowed: %s is a unary Connect method (use POST)",
                 (int)(strlen(t->method) > 16 ? 16 : strlen(t->method)), t->method, method_path);
        answer_error(&t->ans, 405, PS_CONNECT_UNIMPLEMENTED, msg);
        return 0;
    }
    bool gzip_in;
    if (check_headers(t, c, &gzip_in) != 0)
        return 0;
    c->body = (const uint8_t *)(t->body != NULL ? t->body : "");
    c->body_len = t->body != NULL ? t->body_len : 0;
    if (gzip_in) {
        ps_err_t err;
        char emsg[600];
        size_t max = t->srv->opts.limits.max_inflated ? t->srv->opts.limits.max_inflated : (64u << 20);
        if (ps_gunzip(c->body, c->body_len, max, arena, &c->body, &c->body_len, &err) != 0) {
            if (err.code == PS_ETOOBIG)
                snprintf(emsg, sizeof(emsg), "request body inflates to more than %zu bytes (--max-inflated-size)", max);
            else
                snprintf(emsg, sizeof(emsg), "request body (Content-Encoding: gzip): %s", err.msg);
            ps_connect_error(c, err.code == PS_ETOOBIG    ? PS_CONNECT_RESOURCE_EXHAUSTED
                                : err.code == PS_EUNAVAIL ? PS_CONNECT_UNAVAILABLE /* the inflate budget */
                                                          : PS_CONNECT_INVALID_ARGUMENT,
                             err.code == PS_EUNAVAIL ? err.msg : emsg);
            return 0;
        }
    }
    return fn(c);
}

static void on_submitted(ps_wreq_t *w)
{
    ps_task_release(w->ctx);
}

void ps_connect_submit(ps_connect_call_t *c, ps_wreq_t *w, void (*finish)(ps_task_t *t), void *arg)
{
    w->on_done = on_submitted;
    w->ctx = c->t;
    c->t->finish = finish;
    c->t->finish_arg = arg;
    ps_task_hold(c->t); /* released by on_submitted, on the writer thread */
    if (ps_writer_submit(c->srv->writer, w) != 0) {
        w->status = w->err.code;
        ps_task_release(c->t);
    }
}
