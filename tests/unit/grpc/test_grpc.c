/*
 * test_grpc.c - the gRPC listener's calls without sockets (grpc/grpc.h's inline mode): a client
 * nghttp2 session talks to the server's; health, an echo method, gzip, framing errors, the
 * percent-encoded grpc-message, the method table's rules and the status table.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>
#include <nghttp2/nghttp2.h>
#include <zlib.h>

#include "grpc/grpc.h"

static ps_grpc_status_t echo(void *ctx, const ps_grpc_call_t *call, const uint8_t *req, size_t n, ps_buf_t *resp,
                             char *msg, size_t msgsize)
{
    if (n > 0 && req[0] == 'E') {
        snprintf(msg, msgsize, "asked for an error: \xff%%\n");
        return PS_GRPC_INVALID_ARGUMENT;
    }
    ps_buf_append(resp, req, n);
    return PS_GRPC_OK;
}

/* one answer as the client saw it */
typedef struct answer {
    char status[8], grpc_status[8], grpc_message[256];
    uint8_t data[4096];
    size_t n;
    int closed;
} answer_t;

static answer_t answers[16];

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    answer_t *a = &answers[f->hd.stream_id / 2];
    char *dst = NULL;
    size_t size = 0;
    if (namelen == 7 && memcmp(name, ":status", 7) == 0)
        dst = a->status, size = sizeof(a->status);
    else if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0)
        dst = a->grpc_status, size = sizeof(a->grpc_status);
    else if (namelen == 12 && memcmp(name, "grpc-message", 12) == 0)
        dst = a->grpc_message, size = sizeof(a->grpc_message);
    if (dst != NULL && valuelen < size) {
        memcpy(dst, value, valuelen);
        dst[valuelen] = 0;
    }
    return 0;
}

static int on_data(nghttp2_session *s, uint8_t flags, int32_t sid, const uint8_t *data, size_t len, void *user)
{
    answer_t *a = &answers[sid / 2];
    if (a->n + len <= sizeof(a->data)) {
        memcpy(a->data + a->n, data, len);
        a->n += len;
    }
    return 0;
}

static int on_close(nghttp2_session *s, int32_t sid, uint32_t code, void *user)
{
    answers[sid / 2].closed = 1;
    return 0;
}

typedef struct pair {
    ps_grpc_t *g;
    ps_grpc_conn_t *conn;
    nghttp2_session *cli;
} pair_t;

static void pair_open(pair_t *p)
{
    memset(answers, 0, sizeof(answers));
    ps_grpc_opts_t o = {.max_message = 1024};
    p->g = ps_grpc_new_inline(&o);
    ps_grpc_method_t m = {.path = "/t.Echo/Echo", .fn = echo};
    assert_int_equal(ps_grpc_register(p->g, &m, NULL), 0);
    p->conn = ps_grpc_conn_new_inline(p->g);
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cb, on_data);
    nghttp2_session_callbacks_set_on_stream_close_callback(cb, on_close);
    assert_int_equal(nghttp2_session_client_new(&p->cli, cb, NULL), 0);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(p->cli, NGHTTP2_FLAG_NONE, NULL, 0);
}

/* what the client has to send goes to the server, and back, until both are quiet */
static void pump(pair_t *p)
{
    for (int round = 0; round < 16; round++) {
        ps_buf_t toserver = PS_BUF_INIT, out = PS_BUF_INIT;
        const uint8_t *d;
        ssize_t n;
        while ((n = nghttp2_session_mem_send(p->cli, &d)) > 0)
            ps_buf_append(&toserver, d, (size_t)n);
        if (toserver.len > 0)
            ps_grpc_feed(p->conn, toserver.data, toserver.len, &out);
        if (out.len > 0)
            assert_int_equal(nghttp2_session_mem_recv(p->cli, out.data, out.len), (ssize_t)out.len);
        size_t moved = toserver.len + out.len;
        ps_buf_dispose(&toserver);
        ps_buf_dispose(&out);
        if (moved == 0)
            return;
    }
}

static void pair_close(pair_t *p)
{
    nghttp2_session_del(p->cli);
    ps_grpc_conn_free_inline(p->conn);
    ps_grpc_stop(p->g);
}

typedef struct body {
    const uint8_t *p;
    size_t n;
} body_t;

static ssize_t read_body(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    body_t *b = src->ptr;
    size_t n = b->n < len ? b->n : len;
    memcpy(buf, b->p, n);
    b->p += n;
    b->n -= n;
    if (b->n == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define NV(a, b) {(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), 0}

/* a call: its stream's answer */
static answer_t *call(pair_t *p, const char *path, const char *enc, const uint8_t *body, size_t n)
{
    nghttp2_nv nv[7] = {NV(":method", "POST"), NV(":scheme", "http"), NV(":path", path), NV(":authority", "x"),
                        NV("content-type", "application/grpc"), NV("te", "trailers"), NV("grpc-encoding", enc ? enc : "")};
    body_t b = {body, n};
    nghttp2_data_provider dp = {.source.ptr = &b, .read_callback = read_body};
    int32_t sid = nghttp2_submit_request(p->cli, NULL, nv, enc ? 7 : 6, &dp, NULL);
    assert_true(sid > 0 && sid / 2 < 16);
    pump(p);
    assert_true(answers[sid / 2].closed);
    return &answers[sid / 2];
}

static void test_health_and_echo(void **state)
{
    pair_t p;
    pair_open(&p);
    answer_t *a = call(&p, "/grpc.health.v1.Health/Check", NULL, (const uint8_t *)"\0\0\0\0\0", 5);
    assert_string_equal(a->status, "200");
    assert_string_equal(a->grpc_status, "0");
    assert_int_equal(a->n, 7);
    assert_memory_equal(a->data, "\0\0\0\0\x02\x08\x01", 7);
    a = call(&p, "/t.Echo/Echo", NULL, (const uint8_t *)"\0\0\0\0\x03" "abc", 8);
    assert_string_equal(a->grpc_status, "0");
    assert_memory_equal(a->data, "\0\0\0\0\x03" "abc", 8);
    /* gzip: the handler sees the decompressed message; the answer is not compressed */
    uint8_t gz[64];
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)"hello";
    z.avail_in = 5;
    z.next_out = gz + 5;
    z.avail_out = sizeof(gz) - 5;
    deflate(&z, Z_FINISH);
    size_t zn = z.total_out;
    deflateEnd(&z);
    gz[0] = 1, gz[1] = gz[2] = gz[3] = 0, gz[4] = (uint8_t)zn;
    a = call(&p, "/t.Echo/Echo", "gzip", gz, 5 + zn);
    assert_string_equal(a->grpc_status, "0");
    assert_memory_equal(a->data, "\0\0\0\0\x05" "hello", 10);
    pair_close(&p);
}

static void test_errors(void **state)
{
    pair_t p;
    pair_open(&p);
    answer_t *a = call(&p, "/t.Echo/Echo", NULL, (const uint8_t *)"\0\0\0\0\x05" "Error", 10);
    assert_string_equal(a->grpc_status, "3");
    assert_string_equal(a->grpc_message, "asked for an error: %FF%25%0A"); /* percent-encoded */
    assert_int_equal(a->n, 0);
    a = call(&p, "/t.Echo/Echo", NULL, (const uint8_t *)"\0\0\0\0\x09" "abc", 8);
    assert_string_equal(a->grpc_status, "13");
    assert_string_equal(a->grpc_message,
                        "grpc: the request ended inside a message: its length prefix says 9 bytes, 3 arrived");
    a = call(&p, "/t.Echo/Echo", NULL, (const uint8_t *)"\0\0\0\x04\x01", 5);
    assert_string_equal(a->grpc_status, "8");
    assert_string_equal(a->grpc_message, "grpc: received message larger than max (1025 vs. 1024)");
    a = call(&p, "/t.Echo/Nope", NULL, (const uint8_t *)"", 0);
    assert_string_equal(a->grpc_status, "12");
    assert_string_equal(a->grpc_message, "unknown method Nope for service t.Echo");
    a = call(&p, "/t.Echo/Echo", "zstd", (const uint8_t *)"\0\0\0\0\0", 5);
    assert_string_equal(a->grpc_status, "12");
    assert_string_equal(a->grpc_message, "grpc: Decompressor is not installed for grpc-encoding \"zstd\"");
    a = call(&p, "/t.Echo/Echo", "gzip", (const uint8_t *)"\x01\0\0\0\x03" "abc", 8);
    assert_string_equal(a->grpc_status, "13");
    assert_string_equal(a->grpc_message, "grpc: failed to decompress the received message: gzip: not a gzip stream (bad magic)");
    pair_close(&p);
}

static void test_table_and_statuses(void **state)
{
    ps_grpc_opts_t o = {0};
    ps_grpc_t *g = ps_grpc_new_inline(&o);
    ps_err_t err;
    const char *bad[] = {"", "x", "/x", "/x/", "//m", "/a/b/c", NULL};
    for (int i = 0; bad[i]; i++) {
        ps_grpc_method_t m = {.path = bad[i], .fn = echo};
        ps_err_clear(&err);
        assert_int_equal(ps_grpc_register(g, &m, &err), PS_EINVAL);
    }
    ps_grpc_method_t dup = {.path = "/grpc.health.v1.Health/Check", .fn = echo};
    assert_int_equal(ps_grpc_register(g, &dup, &err), PS_EINVAL);
    assert_string_equal(err.msg, "gRPC method /grpc.health.v1.Health/Check registered twice");
    ps_grpc_stop(g);
    assert_int_equal(ps_grpc_status_of(PS_EINVAL), PS_GRPC_INVALID_ARGUMENT);
    assert_int_equal(ps_grpc_status_of(PS_ETOOBIG), PS_GRPC_RESOURCE_EXHAUSTED);
    assert_int_equal(ps_grpc_status_of(PS_ENOSPACE), PS_GRPC_RESOURCE_EXHAUSTED);
    assert_int_equal(ps_grpc_status_of(PS_EOVERLOAD), PS_GRPC_UNAVAILABLE);
    assert_int_equal(ps_grpc_status_of(PS_EUNAVAIL), PS_GRPC_UNAVAILABLE);
    assert_int_equal(ps_grpc_status_of(PS_ETIMEOUT), PS_GRPC_DEADLINE_EXCEEDED);
    assert_int_equal(ps_grpc_status_of(PS_ESTORAGE), PS_GRPC_INTERNAL);
    assert_string_equal(ps_grpc_status_name(16), "UNAUTHENTICATED");
    assert_string_equal(ps_grpc_status_name(17), "UNKNOWN");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_health_and_echo),
        cmocka_unit_test(test_errors),
        cmocka_unit_test(test_table_and_statuses),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
