/*
 * fuzz_grpc.c - libFuzzer target for the gRPC listener's HTTP/2 and framing path (src/grpc/server.c)
 * without sockets: the input is what a client sends after its connection preface, fed to the
 * server's nghttp2 session (nghttp2_session_mem_recv) in pieces whose sizes come from the input's
 * first byte; the methods run inline (Health/Check and an echo method). What the server sends back
 * must be HTTP/2 a client's nghttp2 session takes without a protocol error, and every answer
 * carries a grpc-status of 0..16 (trailers or trailers-only) or is a reset. The seeds (written by
 * LLVMFuzzerInitialize with PS_FUZZ_GRPC_SEEDS=DIR) are calls made with nghttp2's client session:
 * health, gzip, echo, framing errors, unknown methods, resets, big headers.
 */
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nghttp2/nghttp2.h>
#include <zlib.h>

#define PS_FUZZ_NAME "fuzz_grpc"
#include "fuzzutil.h"
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

/* ---- the client side: checks what the server sent ---- */

typedef struct client {
    int bad_status;
} client_t;

static int on_header(nghttp2_session *s, const nghttp2_frame *f, const uint8_t *name, size_t namelen,
                     const uint8_t *value, size_t valuelen, uint8_t flags, void *user)
{
    client_t *c = user;
    if (namelen == 11 && memcmp(name, "grpc-status", 11) == 0) {
        int v = 0;
        for (size_t i = 0; i < valuelen; i++)
            v = value[i] >= '0' && value[i] <= '9' ? v * 10 + (value[i] - '0') : 1000;
        if (valuelen == 0 || v > 16)
            c->bad_status = 1;
    }
    return 0;
}

static nghttp2_session *client_new(client_t *c, bool *ok)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session_callbacks_set_on_header_callback(cb, on_header);
    nghttp2_session *s = NULL;
    nghttp2_option *opt;
    nghttp2_option_new(&opt);
    nghttp2_option_set_no_http_messaging(opt, 0);
    *ok = nghttp2_session_client_new2(&s, cb, c, opt) == 0;
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cb);
    return s;
}

static const uint8_t preface[] = "PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\0\0\0\x04\0\0\0\0\0";

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_grpc_opts_t o = {.max_message = 4096, .max_streams = 8, .max_header_list = 2048, .max_resets = 20};
    ps_grpc_t *g = ps_grpc_new_inline(&o);
    ps_grpc_method_t m = {.path = "/t.Echo/Echo", .scope = 0, .fn = echo};
    CHECK(ps_grpc_register(g, &m, NULL) == 0, "register");
    ps_grpc_conn_t *conn = ps_grpc_conn_new_inline(g);
    ps_buf_t out = PS_BUF_INIT;
    client_t cl = {0};
    bool ok;
    nghttp2_session *cli = client_new(&cl, &ok);
    CHECK(ok, "client session");
    /* the client's own preface, so that its session is in step */
    nghttp2_submit_settings(cli, NGHTTP2_FLAG_NONE, NULL, 0);
    const uint8_t *p;
    while (nghttp2_session_mem_send(cli, &p) > 0)
        ;
    int rc = ps_grpc_feed(conn, preface, sizeof(preface) - 1, &out);
    size_t chunk = size > 0 ? 1 + data[0] * 4 : 1;
    size_t i = size > 0 ? 1 : 0;
    while (rc == 0 && i < size) {
        size_t n = size - i < chunk ? size - i : chunk;
        rc = ps_grpc_feed(conn, data + i, n, &out);
        i += n;
    }
    ssize_t r = nghttp2_session_mem_recv(cli, out.data, out.len);
    CHECK(r == (ssize_t)out.len, "the client's session refused what the server sent (%zd of %zu bytes): %s", r,
          out.len, r < 0 ? nghttp2_strerror((int)r) : "");
    CHECK(!cl.bad_status, "a grpc-status out of 0..16");
    nghttp2_session_del(cli);
    ps_buf_dispose(&out);
    ps_grpc_conn_free_inline(conn);
    ps_grpc_stop(g);
    return 0;
}

/* ---- seeds ---- */

static ssize_t seed_read(nghttp2_session *s, int32_t sid, uint8_t *buf, size_t len, uint32_t *flags,
                         nghttp2_data_source *src, void *user)
{
    ps_buf_t *b = src->ptr;
    size_t n = b->len < len ? b->len : len;
    memcpy(buf, b->data, n);
    memmove(b->data, b->data + n, b->len - n);
    b->len -= n;
    if (b->len == 0)
        *flags |= NGHTTP2_DATA_FLAG_EOF;
    return (ssize_t)n;
}

#define ADD(a, b) nv[k++] = (nghttp2_nv){(uint8_t *)(a), (uint8_t *)(b), strlen(a), strlen(b), 0}

static void write_seed(const char *dir, const char *name, uint8_t chunk, const char *path, const char *enc,
                       const uint8_t *msg, size_t n, uint8_t flag, int copies, bool reset)
{
    nghttp2_session_callbacks *cb;
    nghttp2_session_callbacks_new(&cb);
    nghttp2_session *s;
    nghttp2_session_client_new(&s, cb, NULL);
    nghttp2_session_callbacks_del(cb);
    nghttp2_submit_settings(s, NGHTTP2_FLAG_NONE, NULL, 0);
    const uint8_t *p;
    while (nghttp2_session_mem_send(s, &p) > 0)
        ; /* the preface: the target sends its own */
    ps_buf_t bodies[16];
    for (int c = 0; c < copies && c < 16; c++) {
        nghttp2_nv nv[8];
        size_t k = 0;
        ADD(":method", "POST");
        ADD(":scheme", "http");
        ADD(":path", path);
        ADD(":authority", "x");
        ADD("content-type", "application/grpc");
        ADD("te", "trailers");
        if (enc)
            ADD("grpc-encoding", enc);
        bodies[c] = (ps_buf_t)PS_BUF_INIT;
        uint8_t pre[5] = {flag, (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n};
        ps_buf_append(&bodies[c], pre, 5);
        ps_buf_append(&bodies[c], msg, n);
        nghttp2_data_provider dp = {.source.ptr = &bodies[c], .read_callback = seed_read};
        int32_t sid = nghttp2_submit_request(s, NULL, nv, k, reset ? NULL : &dp, NULL);
        if (reset)
            nghttp2_submit_rst_stream(s, NGHTTP2_FLAG_NONE, sid, NGHTTP2_CANCEL);
    }
    ps_buf_t out = PS_BUF_INIT;
    ps_buf_putc(&out, chunk);
    ssize_t r;
    while ((r = nghttp2_session_mem_send(s, &p)) > 0)
        ps_buf_append(&out, p, (size_t)r);
    for (int c = 0; c < copies && c < 16; c++)
        ps_buf_dispose(&bodies[c]);
    nghttp2_session_del(s);
    char fn[512];
    snprintf(fn, sizeof(fn), "%s/%s", dir, name);
    FILE *f = fopen(fn, "wb");
    if (f) {
        fwrite(out.data, 1, out.len, f);
        fclose(f);
    }
    ps_buf_dispose(&out);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("PS_FUZZ_GRPC_SEEDS");
    if (dir == NULL)
        return 0;
    static const uint8_t health[] = "\x0a\x15grpc.health.v1.Health";
    uint8_t gz[256];
    uLongf gzn = sizeof(gz);
    z_stream z = {0};
    deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
    z.next_in = (Bytef *)"hello hello hello";
    z.avail_in = 17;
    z.next_out = gz;
    z.avail_out = sizeof(gz);
    deflate(&z, Z_FINISH);
    gzn = z.total_out;
    deflateEnd(&z);
    write_seed(dir, "health", 255, "/grpc.health.v1.Health/Check", NULL, health, sizeof(health) - 1, 0, 1, false);
    write_seed(dir, "health-bytes", 0, "/grpc.health.v1.Health/Check", NULL, health, sizeof(health) - 1, 0, 1, false);
    write_seed(dir, "echo-gzip", 255, "/t.Echo/Echo", "gzip", gz, gzn, 1, 2, false);
    write_seed(dir, "echo-error", 7, "/t.Echo/Echo", NULL, (const uint8_t *)"Error", 5, 0, 1, false);
    write_seed(dir, "flag-no-encoding", 255, "/t.Echo/Echo", NULL, gz, gzn, 1, 1, false);
    write_seed(dir, "unknown", 255, "/x.Y/Z", "br", health, 3, 0, 3, false);
    write_seed(dir, "resets", 255, "/t.Echo/Echo", NULL, health, 3, 0, 16, true);
    write_seed(dir, "many", 63, "/t.Echo/Echo", NULL, health, sizeof(health) - 1, 0, 12, false);
    return 0;
}
