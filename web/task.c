/*
 * task.c - see task.h: answers and their error shapes, a task's request parts, read contexts.
 * Nothing here knows h2o: it runs on the pool threads.
 */
#include "task.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/json.h"
#include "core/timeutil.h"
#include "proto/gzip.h"

const ps_param_t *ps_params_get(const ps_params_t *p, const char *name)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < p->n; i++)
        if (p->items[i].nlen == n && memcmp(p->items[i].name, name, n) == 0)
            return &p->items[i];
    return NULL;
}

int ps_param_time(const ps_params_t *p, const char *name, int64_t now, int64_t dflt, int64_t *out, ps_err_t *err)
{
    const ps_param_t *v = ps_params_get(p, name);
    if (v == NULL || v->vlen == 0) {
        *out = dflt;
        return 0;
    }
    if (ps_parse_time(v->value, v->vlen, now, out, err) != 0)
        return ps_err_prefix(err, "invalid parameter \"%s\"", name);
    return 0;
}

int ps_param_duration(const ps_params_t *p, const char *name, int64_t dflt, int64_t *out, ps_err_t *err)
{
    const ps_param_t *v = ps_params_get(p, name);
    if (v == NULL || v->vlen == 0) {
        *out = dflt;
        return 0;
    }
    if (ps_parse_duration(v->value, v->vlen, 1, out, err) != 0)
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": cannot parse \"%.64s\" to a valid duration",
                          name, v->value);
    return 0;
}

/* ---- answers ---- */

void ps_answer_init(ps_answer_t *a, ps_arena_t *arena, bool gzip_ok)
{
    memset(a, 0, sizeof(*a));
    a->arena = arena;
    a->gzip_ok = gzip_ok;
}

void ps_answer_dispose(ps_answer_t *a)
{
    ps_buf_dispose(&a->body);
}

void ps_answer_header(ps_answer_t *a, const char *name, const char *value, size_t vlen)
{
    if (a->status != 0 || a->nheaders == PS_ANSWER_MAX_HEADERS)
        return;
    ps_header_t *h = &a->headers[a->nheaders++];
    h->nlen = strlen(name);
    h->name = ps_arena_strndup(a->arena, name, h->nlen);
    h->value = ps_arena_strndup(a->arena, value, vlen);
    h->vlen = vlen;
}

const char *ps_answer_get_header(const ps_answer_t *a, const char *name)
{
    for (uint32_t i = 0; i < a->nheaders; i++)
        if (strcmp(a->headers[i].name, name) == 0)
            return a->headers[i].value;
    return NULL;
}

bool ps_answer_compressible(const char *content_type)
{
    return strncmp(content_type, "application/json", 16) == 0 || strncmp(content_type, "text/", 5) == 0 ||
           strcmp(content_type, "application/proto") == 0; /* Connect's binary answers */
}

bool ps_answer_gzip(int status, const char *content_type, const void *body, size_t len, bool negotiated,
                    bool gzip_ok, bool *vary, ps_buf_t *gz)
{
    *vary = !negotiated && ps_answer_compressible(content_type) && len >= PS_GZIP_MIN_BYTES;
    return *vary && gzip_ok && status != 304 && status != 204 && ps_gzip(body, len, PS_GZIP_LEVEL, gz, NULL) == 0 &&
           gz->len < len;
}

/* ps_answer_set; owned (not NULL: body's buffer) is taken: it becomes the answer's body when it is
 * sent as it is, else it is freed */
static void answer_set(ps_answer_t *a, int status, const char *content_type, const void *body, size_t len,
                       ps_buf_t *owned)
{
    if (a->status != 0) { /* a second answer: the first one stands */
        if (owned != NULL)
            ps_buf_dispose(owned);
        return;
    }
    /* overload (429) and unavailable (503) say when to come back, unless the handler did:
     * Prometheus' remote write, Pyroscope's SDKs and Alloy wait at least that long */
    if ((status == 429 || status == 503) && ps_answer_get_header(a, "retry-after") == NULL)
        ps_answer_header(a, "retry-after", PS_HTTP_RETRY_AFTER, strlen(PS_HTTP_RETRY_AFTER));
    ps_buf_t gz = PS_BUF_INIT;
    bool negotiated = ps_answer_get_header(a, "content-encoding") != NULL || ps_answer_get_header(a, "vary") != NULL;
    bool vary;
    bool zipped = ps_answer_gzip(status, content_type, body, len, negotiated, a->gzip_ok, &vary, &gz);
    if (vary)
        ps_answer_header(a, "vary", "Accept-Encoding", 15);
    if (zipped) {
        ps_answer_header(a, "content-encoding", "gzip", 4);
        body = gz.data;
        len = gz.len;
    }
    a->status = status;
    a->content_type = ps_arena_strndup(a->arena, content_type, strlen(content_type));
    if (!zipped && owned != NULL) { /* no copy: a 13 MB answer is copied once less */
        ps_buf_dispose(&a->body);
        a->body = *owned;
        *owned = (ps_buf_t)PS_BUF_INIT;
    } else {
        ps_buf_reset(&a->body);
        ps_buf_append(&a->body, body, len);
        if (owned != NULL) /* taken all the same: the caller owns nothing after */
            ps_buf_dispose(owned);
    }
    ps_buf_dispose(&gz);
}

void ps_answer_set(ps_answer_t *a, int status, const char *content_type, const void *body, size_t len)
{
    answer_set(a, status, content_type, body, len, NULL);
}

void ps_answer_take(ps_answer_t *a, int status, const char *content_type, ps_buf_t *body)
{
    answer_set(a, status, content_type, body->data, body->len, body);
}

const char *ps_http_error_type(int status)
{
    switch (status) {
    case 400: case 409: case 413: case 415: return "bad_data";
    case 401: return "unauthorized";
    case 403: return "forbidden";
    case 404: return "not_found";
    case 408: return "timeout";
    case 405: return "bad_data";
    case 422: return "execution";
    case 429: case 503: return "unavailable";
    default: return status >= 500 ? "internal" : "bad_data";
    }
}

/* {"status":"error","errorType":type,"error":msg} with status */
static void prom_error(ps_answer_t *a, int status, const char *type, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_init(&j, &b);
    ps_json_obj(&j);
    ps_json_key(&j, "status");
    ps_json_cstr(&j, "error");
    ps_json_key(&j, "errorType");
    ps_json_cstr(&j, type);
    ps_json_key(&j, "error");
    ps_json_cstr(&j, msg);
    ps_json_envelope_close(&j);
    ps_answer_set(a, status, "application/json", b.data, b.len);
    ps_buf_dispose(&b);
}

void ps_answer_prom_error_status(ps_answer_t *a, int status, const char *msg)
{
    prom_error(a, status, ps_http_error_type(status), msg);
}

void ps_answer_prom_error(ps_answer_t *a, int code, const char *msg)
{
    int status = ps_err_http_status(code);
    if (code != PS_ETIMEOUT && code != PS_ECANCELED)
        prom_error(a, status, ps_http_error_type(status), msg);
    else /* Prometheus' errorTimeout (503) and errorCanceled (499) have their own errorType */
        prom_error(a, status, code == PS_ETIMEOUT ? "timeout" : "canceled", msg);
}

void ps_answer_text_error(ps_answer_t *a, int code, const char *msg)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_printf(&b, "%s\n", msg);
    ps_answer_set(a, ps_err_http_status(code), "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
}

/* ---- tasks ---- */

int ps_task_params(ps_task_t *t, bool with_body, ps_params_t *out, ps_err_t *err)
{
    int ret = with_body ? t->params_ret : t->query_ret;
    *out = with_body ? t->params : t->query;
    if (ret != 0)
        *err = with_body ? t->params_err : t->query_err;
    return ret;
}

const char *ps_task_header(const ps_task_t *t, const char *name, size_t *len)
{
    size_t n = strlen(name);
    for (size_t i = 0; i < t->nheaders; i++)
        if (t->headers[i].nlen == n && memcmp(t->headers[i].name, name, n) == 0) {
            if (len != NULL)
                *len = t->headers[i].vlen;
            return t->headers[i].value;
        }
    if (len != NULL)
        *len = 0;
    return NULL;
}

void ps_task_send(ps_task_t *t, int status, const char *content_type, const void *body, size_t len)
{
    ps_answer_set(&t->ans, status, content_type, body, len);
}

void ps_task_add_header(ps_task_t *t, const char *name, const char *value, size_t vlen)
{
    ps_answer_header(&t->ans, name, value, vlen);
}

void ps_task_error(ps_task_t *t, int code, const char *msg)
{
    ps_answer_prom_error(&t->ans, code, msg);
}

void ps_task_error_status(ps_task_t *t, int status, const char *msg)
{
    ps_answer_prom_error_status(&t->ans, status, msg);
}

void ps_task_fail(ps_task_t *t, int code, const char *msg)
{
    (t->fail != NULL ? t->fail : ps_answer_prom_error)(&t->ans, code, msg);
}

void ps_task_hold(ps_task_t *t)
{
    atomic_fetch_add(&t->holds, 1);
}

void ps_task_release(ps_task_t *t)
{
    if (atomic_fetch_sub(&t->holds, 1) == 1)
        t->on_released(t);
}

/* ---- read contexts ---- */

int ps_qctx_begin(ps_qctx_t *c, ps_task_t *t)
{
    memset(c, 0, sizeof(*c));
    c->t = t;
    c->srv = t->srv;
    if (ps_task_params(t, true, &c->params, &c->err) != 0)
        return c->err.code;
    return ps_reader_begin(c->srv->store, &c->reader, &c->err);
}

int ps_qctx_finish(ps_qctx_t *c, int ret)
{
    if (ret != 0)
        ps_task_error(c->t, c->err.code ? c->err.code : ret, c->err.msg[0] ? c->err.msg : ps_strerror(ret));
    ps_reader_end(c->reader);
    ps_buf_dispose(&c->out);
    ps_arena_dispose(&c->arena);
    return 0;
}
