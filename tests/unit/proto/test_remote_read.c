/*
 * test_remote_read.c - unit tests for proto/remote_read.c: the three read requests Prometheus 2.42
 * sent and the answer a real Prometheus gave ($PS_TESTDATA/prometheus, checked against the decoded
 * .json next to each), our SAMPLES encoding of that answer byte for byte, negotiation, round trips,
 * bad requests with their exact messages, and frames: CRC, cutting, corruption.
 */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"
#include "promutil.h"

#include "core/crc32c.h"
#include "core/varint.h"
#include "proto/remote_read.h"

static int64_t jint(json_t *o, const char *k)
{
    json_t *v = json_object_get(o, k);
    return v ? (int64_t)json_integer_value(v) : 0;
}

/* ---- the captured requests ------------------------------------------------------------------ */

static void check_request(const char *bin, const char *js)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_read_request_t req;
    ps_err_t err;
    size_t n;
    uint8_t *body = ps_test_read_prom(bin, &n);
    json_t *j = ps_test_read_prom_json(js);
    assert_int_equal(ps_read_request_decode(body, n, NULL, &a, &req, &err), 0);
    json_t *qs = json_object_get(j, "queries");
    assert_int_equal(req.nqueries, json_array_size(qs));
    assert_int_equal(req.naccepted, json_array_size(json_object_get(j, "accepted_response_types")));
    for (uint32_t i = 0; i < req.nqueries; i++) {
        json_t *q = json_array_get(qs, i);
        const ps_read_query_t *d = &req.queries[i];
        assert_int_equal(d->start_ms, jint(q, "start_timestamp_ms"));
        assert_int_equal(d->end_ms, jint(q, "end_timestamp_ms"));
        json_t *ms = json_object_get(q, "matchers");
        assert_int_equal(d->nmatchers, json_array_size(ms));
        for (uint32_t k = 0; k < d->nmatchers; k++) {
            json_t *m = json_array_get(ms, k);
            static const char *types[] = {"EQ", "NEQ", "RE", "NRE"};
            assert_string_equal(types[d->matchers[k].type], json_string_value(json_object_get(m, "type")));
            assert_string_equal(d->matchers[k].name, json_string_value(json_object_get(m, "name")));
            assert_string_equal(d->matchers[k].value, json_string_value(json_object_get(m, "value")));
            assert_int_equal(d->matchers[k].nlen, strlen(d->matchers[k].name));
        }
        json_t *h = json_object_get(q, "hints");
        assert_true(d->hints.present);
        assert_int_equal(d->hints.step_ms, jint(h, "step_ms"));
        assert_int_equal(d->hints.start_ms, jint(h, "start_ms"));
        assert_int_equal(d->hints.end_ms, jint(h, "end_ms"));
        assert_int_equal(d->hints.range_ms, jint(h, "range_ms"));
        json_t *f = json_object_get(h, "func");
        assert_string_equal(d->hints.func, f ? json_string_value(f) : "");
        assert_int_equal(d->hints.ngrouping, json_array_size(json_object_get(h, "grouping")));
        assert_int_equal(d->hints.by, json_is_true(json_object_get(h, "by")));
    }
    ps_read_type_t t = PS_READ_STREAMED_XOR_CHUNKS;
    assert_int_equal(ps_read_negotiate(&req, &t, &err), 0);
    assert_int_equal(t, PS_READ_SAMPLES);
    json_decref(j);
    free(body);
    ps_arena_dispose(&a);
}

static void test_captured_requests(void **state)
{
    check_request("remote-read-01.bin", "remote-read-01.json");
    check_request("remote-read-02.bin", "remote-read-02.json");
    check_request("remote-read-03.bin", "remote-read-03.json");
}

static void test_captured_request_facts(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_read_request_t req;
    ps_err_t err;
    size_t n;
    uint8_t *body = ps_test_read_prom("remote-read-02.bin", &n);
    assert_int_equal(n, 113);
    assert_int_equal(ps_read_request_decode(body, n, NULL, &a, &req, &err), 0);
    assert_int_equal(req.nqueries, 1);
    const ps_read_query_t *q = &req.queries[0];
    assert_int_equal(q->start_ms, 1796021893000);
    assert_int_equal(q->end_ms, 1796021933000);
    assert_int_equal(q->nmatchers, 2);
    assert_int_equal(q->matchers[0].type, PS_READ_EQ);
    assert_string_equal(q->matchers[0].name, "__name__");
    assert_string_equal(q->matchers[0].value, "gotarget_kernel_iterations_total");
    assert_string_equal(q->matchers[1].name, "replica");
    assert_string_equal(q->matchers[1].value, "fixture");
    assert_string_equal(q->hints.func, "rate");
    assert_int_equal(q->hints.step_ms, 5000);
    assert_int_equal(q->hints.range_ms, 10000);
    /* our encoding of what we decoded is the same protobuf as Prometheus' */
    ps_buf_t enc = PS_BUF_INIT;
    ps_read_request_encode(&req, &enc);
    char raw1[256], raw2[256];
    size_t l1 = sizeof(raw1), l2 = sizeof(raw2);
    assert_int_equal(snappy_uncompress((const char *)body, n, raw1, &l1), SNAPPY_OK);
    assert_int_equal(snappy_uncompress((const char *)enc.data, enc.len, raw2, &l2), SNAPPY_OK);
    assert_int_equal(l1, 110);
    assert_int_equal(l2, l1);
    assert_memory_equal(raw1, raw2, l1);
    ps_buf_dispose(&enc);
    free(body);
    ps_arena_dispose(&a);
}

/* ---- the captured answer -------------------------------------------------------------------- */

static void test_captured_response(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    size_t n;
    uint8_t *body = ps_test_read_prom("remote-read-response-01.bin", &n);
    json_t *j = ps_test_read_prom_json("remote-read-response-01.json");
    ps_read_result_t *res;
    uint32_t nres;
    assert_int_equal(n, 188);
    assert_int_equal(ps_read_response_decode(body, n, 1u << 20, &a, &res, &nres, &err), 0);
    json_t *jr = json_object_get(j, "results");
    assert_int_equal(nres, json_array_size(jr));
    assert_int_equal(nres, 1);
    json_t *series = json_array_get(jr, 0);
    assert_int_equal(res[0].nseries, json_array_size(series));
    assert_int_equal(res[0].nseries, 1);
    json_t *s0 = json_array_get(series, 0);
    const ps_read_series_t *s = &res[0].series[0];
    json_t *labels = json_object_get(s0, "labels");
    assert_int_equal(s->labels.n, json_object_size(labels));
    assert_int_equal(s->labels.n, 6);
    for (uint32_t k = 0; k < s->labels.n; k++)
        assert_string_equal(s->labels.pairs[k].value,
                            json_string_value(json_object_get(labels, s->labels.pairs[k].name)));
    json_t *samples = json_object_get(s0, "samples");
    assert_int_equal(s->nsamples, json_array_size(samples));
    assert_int_equal(s->nsamples, 3);
    for (uint32_t k = 0; k < s->nsamples; k++) {
        json_t *x = json_array_get(samples, k);
        assert_int_equal(s->samples[k].t_ms, jint(x, "timestamp_ms"));
        assert_true(s->samples[k].v == json_number_value(json_object_get(x, "value")));
    }
    assert_true(s->samples[0].v == 80965.0 && s->samples[0].t_ms == 1796021924802);

    /* our SAMPLES encoding of the same data: the same protobuf bytes as Prometheus' */
    ps_read_resp_t r;
    ps_read_resp_init(&r);
    ps_read_resp_begin_result(&r);
    ps_read_resp_add_series(&r, &s->labels, s->samples, s->nsamples);
    ps_read_resp_end_result(&r);
    char raw[512];
    size_t rl = sizeof(raw);
    assert_int_equal(snappy_uncompress((const char *)body, n, raw, &rl), SNAPPY_OK);
    assert_int_equal(ps_read_resp_size(&r), rl);
    assert_memory_equal(ps_read_resp_bytes(&r), raw, rl);
    /* and, compressed, the same 188 bytes too: Go's snappy and libsnappy make the same literals and
     * copies of this message */
    ps_buf_t out = PS_BUF_INIT;
    assert_int_equal(ps_read_resp_finish(&r, &out, &err), 0);
    ps_buf_t ours = PS_BUF_INIT;
    ps_test_snappy(raw, rl, &ours);
    assert_int_equal(out.len, ours.len);
    assert_memory_equal(out.data, ours.data, out.len);
    assert_int_equal(out.len, n);
    assert_memory_equal(out.data, body, n);
    ps_buf_dispose(&out);
    ps_buf_dispose(&ours);
    ps_read_resp_dispose(&r);
    json_decref(j);
    free(body);
    ps_arena_dispose(&a);
}

static void test_response_shapes(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_resp_t r;
    ps_buf_t out = PS_BUF_INIT;
    ps_read_result_t *res;
    uint32_t nres;

    /* one empty result: 0a 00, what the capture server answered and Prometheus accepted */
    ps_read_resp_init(&r);
    ps_read_resp_begin_result(&r);
    ps_read_resp_end_result(&r);
    assert_int_equal(ps_read_resp_size(&r), 2);
    assert_memory_equal(ps_read_resp_bytes(&r), "\x0a\x00", 2);
    ps_read_resp_dispose(&r);

    /* zeros are omitted (value 0.0, -0.0, timestamp 0); NaN bits and negative times survive */
    ps_label_pair_t lp[2] = {{"__name__", "up", 8, 2}, {"job", "x", 3, 1}};
    ps_labels_t ls = {2, lp, 0};
    uint64_t stale = 0x7ff0000000000002ull;
    ps_remote_sample_t s[5] = {{0, 0.0}, {-5, -0.0}, {1, 1.5}, {2, 0}, {3, 0}};
    memcpy(&s[3].v, &stale, 8);
    s[4].v = -INFINITY;
    ps_read_resp_init(&r);
    ps_read_resp_begin_result(&r);
    ps_read_resp_add_series(&r, &ls, s, 5);
    ps_read_resp_end_result(&r);
    ps_read_resp_begin_result(&r);
    ps_read_resp_end_result(&r);
    /* sample 0 is 12 00, sample 1 is 12 0b 10 fb ff ff ff ff ff ff ff ff 01 */
    const uint8_t *b = ps_read_resp_bytes(&r);
    const uint8_t want_s0[] = {0x12, 0x00, 0x12, 0x0b, 0x10, 0xfb, 0xff, 0xff, 0xff, 0xff,
                               0xff, 0xff, 0xff, 0xff, 0x01};
    assert_non_null(memmem(b, ps_read_resp_size(&r), want_s0, sizeof(want_s0)));
    assert_int_equal(ps_read_resp_finish(&r, &out, &err), 0);
    assert_int_equal(ps_read_response_decode(out.data, out.len, 1u << 20, &a, &res, &nres, &err), 0);
    assert_int_equal(nres, 2);
    assert_int_equal(res[0].nseries, 1);
    assert_int_equal(res[1].nseries, 0);
    assert_int_equal(res[0].series[0].nsamples, 5);
    assert_int_equal(res[0].series[0].samples[1].t_ms, -5);
    uint64_t bits;
    memcpy(&bits, &res[0].series[0].samples[3].v, 8);
    assert_true(bits == stale);
    assert_true(res[0].series[0].samples[4].v == -INFINITY);
    assert_string_equal(res[0].series[0].labels.pairs[1].value, "x");
    ps_read_resp_dispose(&r);

    /* a result over 127 bytes takes a 2-byte length (the header moves) */
    ps_remote_sample_t many[40];
    for (int i = 0; i < 40; i++)
        many[i] = (ps_remote_sample_t){1796021924802 + 1000 * i, i + 0.5};
    ps_read_resp_init(&r);
    for (int q = 0; q < 3; q++) {
        ps_read_resp_begin_result(&r);
        ps_read_resp_add_series(&r, &ls, many, 40);
        ps_read_resp_add_series(&r, &ls, many, (size_t)q);
        ps_read_resp_end_result(&r);
    }
    ps_buf_reset(&out);
    assert_int_equal(ps_read_resp_finish(&r, &out, &err), 0);
    assert_int_equal(ps_read_response_decode(out.data, out.len, 1u << 20, &a, &res, &nres, &err), 0);
    assert_int_equal(nres, 3);
    for (int q = 0; q < 3; q++) {
        assert_int_equal(res[q].nseries, 2);
        assert_int_equal(res[q].series[0].nsamples, 40);
        assert_int_equal(res[q].series[1].nsamples, q);
        assert_true(res[q].series[0].samples[39].v == 39.5);
        assert_int_equal(res[q].series[0].samples[39].t_ms, 1796021924802 + 39000);
    }
    ps_read_resp_dispose(&r);
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

/* ---- negotiation, round trips, bad requests ------------------------------------------------- */

static void test_negotiate(void **state)
{
    ps_err_t err;
    ps_read_type_t t;
    int a1[] = {1, 0}, a2[] = {0, 1}, a3[] = {7, 1}, a4[] = {7, 9};
    ps_read_request_t r = {0};
    r.accepted = a1, r.naccepted = 2;
    assert_int_equal(ps_read_negotiate(&r, &t, &err), 0);
    assert_int_equal(t, PS_READ_STREAMED_XOR_CHUNKS);
    r.accepted = a2;
    assert_int_equal(ps_read_negotiate(&r, &t, &err), 0);
    assert_int_equal(t, PS_READ_SAMPLES);
    r.accepted = a3;
    assert_int_equal(ps_read_negotiate(&r, &t, &err), 0);
    assert_int_equal(t, PS_READ_STREAMED_XOR_CHUNKS);
    r.accepted = a4;
    assert_int_equal(ps_read_negotiate(&r, &t, &err), PS_EINVAL);
    assert_string_equal(err.msg, "server does not support any of the requested response types: [7 9]; supported: "
                                 "[SAMPLES STREAMED_XOR_CHUNKS]");
}

static void test_round_trip(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_read_matcher_t ms[4] = {{PS_READ_EQ, "__name__", "up", 8, 2},
                               {PS_READ_NEQ, "job", "", 3, 0},
                               {PS_READ_RE, "instance", "a.*|b", 8, 5},
                               {PS_READ_NRE, "env", "prod\xc3\xa9", 3, 6}};
    const char *grouping[] = {"job", "instance"};
    ps_read_query_t qs[2] = {{-1000, 5, 4, ms, {true, 15000, 1, 2, 300000, "rate", 2, grouping, true}},
                             {0, 0, 1, ms, {0}}};
    qs[1].hints.func = "";
    int acc[2] = {1, 0};
    ps_read_request_t req = {2, qs, 2, acc}, back;
    ps_buf_t enc = PS_BUF_INIT;
    ps_read_request_encode(&req, &enc);
    assert_int_equal(ps_read_request_decode(enc.data, enc.len, NULL, &a, &back, &err), 0);
    assert_int_equal(back.nqueries, 2);
    assert_int_equal(back.naccepted, 2);
    assert_int_equal(back.accepted[0], 1);
    assert_int_equal(back.queries[0].start_ms, -1000);
    assert_int_equal(back.queries[0].end_ms, 5);
    for (int k = 0; k < 4; k++) {
        assert_int_equal(back.queries[0].matchers[k].type, ms[k].type);
        assert_string_equal(back.queries[0].matchers[k].name, ms[k].name);
        assert_string_equal(back.queries[0].matchers[k].value, ms[k].value);
    }
    const ps_read_hints_t *h = &back.queries[0].hints;
    assert_true(h->present && h->by);
    assert_int_equal(h->step_ms, 15000);
    assert_int_equal(h->range_ms, 300000);
    assert_string_equal(h->func, "rate");
    assert_int_equal(h->ngrouping, 2);
    assert_string_equal(h->grouping[1], "instance");
    assert_false(back.queries[1].hints.present);
    assert_string_equal(back.queries[1].hints.func, "");
    ps_buf_dispose(&enc);
    ps_arena_dispose(&a);
}

/* Decodes the snappy of raw and expects rc with message msg. */
static void expect_bad_raw(const void *raw, size_t n, const ps_read_limits_t *lim, int rc, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_buf_t z = PS_BUF_INIT;
    ps_read_request_t req;
    ps_err_t err;
    ps_test_snappy(raw, n, &z);
    assert_int_equal(ps_read_request_decode(z.data, z.len, lim, &a, &req, &err), rc);
    assert_string_equal(err.msg, msg);
    assert_int_equal(req.nqueries, 0);
    ps_buf_dispose(&z);
    ps_arena_dispose(&a);
}

static void test_bad_requests(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_read_request_t req;
    ps_err_t err;

    assert_int_equal(ps_read_request_decode("garbage", 7, NULL, &a, &req, &err), PS_EINVAL);
    assert_string_equal(err.msg, "snappy: corrupt or truncated input (7 bytes, announcing 103 uncompressed)");
    assert_int_equal(ps_read_request_decode("", 0, NULL, &a, &req, &err), PS_EINVAL);
    assert_string_equal(err.msg, "snappy: empty body (expected snappy block format)");
    /* 4 GiB announced: refused before allocating */
    const uint8_t big[] = {0xff, 0xff, 0xff, 0xff, 0x0f, 0x00};
    assert_int_equal(ps_read_request_decode(big, sizeof(big), NULL, &a, &req, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "snappy: the body announces 4294967295 uncompressed bytes (the limit is 33554432)");
    assert_int_equal(ps_read_request_decode("\xff\x06\x00\x00sNaPpY", 10, NULL, &a, &req, &err), PS_EINVAL);
    assert_string_equal(err.msg, "snappy: framed (stream) format; remote read uses the block format");
    /* truncated: every prefix of a real body fails cleanly */
    size_t n;
    uint8_t *body = ps_test_read_prom("remote-read-01.bin", &n);
    for (size_t k = 0; k < n; k++) {
        int rc = ps_read_request_decode(body, k, NULL, &a, &req, &err);
        assert_true(rc == PS_EINVAL);
        assert_true(err.msg[0] != '\0');
    }
    free(body);

    /* wire types: queries[0].start_timestamp_ms as bytes */
    const uint8_t wt[] = {0x0a, 0x03, 0x0a, 0x01, 0x41};
    expect_bad_raw(wt, sizeof(wt), NULL, PS_EINVAL,
                   "protobuf: malformed prometheus.ReadRequest (uncompressed): queries[0].start_timestamp_ms: field 1 "
                   "(start_timestamp_ms) has wire type 2 (length-delimited), expected 0 (varint)");
    /* a matcher's name as a varint */
    const uint8_t wt2[] = {0x0a, 0x04, 0x1a, 0x02, 0x10, 0x01};
    expect_bad_raw(wt2, sizeof(wt2), NULL, PS_EINVAL,
                   "protobuf: malformed prometheus.ReadRequest (uncompressed): queries[0].matchers[0].name: field 2 "
                   "(name) has wire type 0 (varint), expected 2 (length-delimited)");
    /* a length past the end */
    const uint8_t trunc[] = {0x0a, 0x09, 0x08, 0x01};
    expect_bad_raw(trunc, sizeof(trunc), NULL, PS_EINVAL,
                   "protobuf: malformed prometheus.ReadRequest (uncompressed): queries[0]: length runs past the end "
                   "of the request");
    /* unknown matcher type 7 */
    const uint8_t mt[] = {0x0a, 0x0a, 0x1a, 0x08, 0x08, 0x07, 0x12, 0x01, 'a', 0x1a, 0x01, 'b'};
    expect_bad_raw(mt, sizeof(mt), NULL, PS_EINVAL,
                   "queries[0].matchers[0].type: unknown matcher type 7 (EQ=0, NEQ=1, RE=2, NRE=3)");
    const uint8_t noname[] = {0x0a, 0x05, 0x1a, 0x03, 0x1a, 0x01, 'b'};
    expect_bad_raw(noname, sizeof(noname), NULL, PS_EINVAL, "queries[0].matchers[0].name: empty label name");
    const uint8_t badutf[] = {0x0a, 0x08, 0x1a, 0x06, 0x12, 0x01, 'a', 0x1a, 0x01, 0xff};
    expect_bad_raw(badutf, sizeof(badutf), NULL, PS_EINVAL, "queries[0].matchers[0].value is not valid UTF-8");
    const uint8_t nul[] = {0x0a, 0x08, 0x1a, 0x06, 0x12, 0x01, 0x00, 0x1a, 0x01, 'b'};
    expect_bad_raw(nul, sizeof(nul), NULL, PS_EINVAL, "queries[0].matchers[0].name contains a NUL byte");
    /* limits */
    ps_read_limits_t lim;
    ps_read_limits_default(&lim);
    lim.max_queries = 2;
    const uint8_t three[] = {0x0a, 0x00, 0x0a, 0x00, 0x0a, 0x00};
    expect_bad_raw(three, sizeof(three), &lim, PS_ETOOBIG, "3 queries in one read request (the limit is 2)");
    lim.max_queries = 10;
    lim.max_matchers = 1;
    const uint8_t twom[] = {0x0a, 0x0c, 0x1a, 0x04, 0x12, 0x02, 'a', 'b', 0x1a, 0x04, 0x12, 0x02, 'c', 'd'};
    expect_bad_raw(twom, sizeof(twom), &lim, PS_ETOOBIG, "queries[0]: 2 matchers (the limit is 1)");
    lim.max_uncompressed = 5;
    expect_bad_raw(three, sizeof(three), &lim, PS_ETOOBIG,
                   "snappy: the body announces 6 uncompressed bytes (the limit is 5)");
    /* an empty request is valid: no queries */
    ps_buf_t z = PS_BUF_INIT;
    ps_test_snappy("", 0, &z);
    assert_int_equal(ps_read_request_decode(z.data, z.len, NULL, &a, &req, &err), 0);
    assert_int_equal(req.nqueries, 0);
    ps_buf_dispose(&z);
    ps_arena_dispose(&a);
}

/* ---- frames --------------------------------------------------------------------------------- */

static void test_frames(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_buf_t out = PS_BUF_INIT;
    ps_read_stream_t st;
    ps_label_pair_t lp[2] = {{"__name__", "up", 8, 2}, {"job", "x", 3, 1}};
    ps_labels_t ls = {2, lp, 0};
    uint8_t data[20];
    for (int i = 0; i < 20; i++)
        data[i] = (uint8_t)(i * 7);
    /* label sizes: 10 + 2 + 2 = 14 and 3 + 2 + 1 + 2 = 8; a chunk {1000, 2000, XOR, 20 bytes} is
     * 3 + 3 + 2 + 22 = 30 bytes. With 80 bytes per frame the budget is 80 - 22 = 58: the second
     * chunk takes it to -2, so frames hold 2, 2 and 1 chunks. */
    ps_read_stream_init(&st, &out, 80);
    ps_read_stream_series(&st, 0, &ls);
    for (int k = 0; k < 5; k++)
        ps_read_stream_chunk(&st, 1000, 2000, data, sizeof(data));
    ps_read_stream_series(&st, 3, &ls); /* a series without chunks: no frame */
    ps_read_stream_series(&st, 3, &ls);
    ps_read_stream_chunk(&st, 0, -1, data, 0);
    ps_read_stream_flush(&st);
    assert_int_equal(st.nframes, 4);
    size_t off = 0;
    const uint32_t want_chunks[] = {2, 2, 1, 1};
    const int64_t want_qi[] = {0, 0, 0, 3};
    for (int f = 0; f < 4; f++) {
        ps_read_frame_t fr;
        size_t used;
        assert_int_equal(ps_read_frame_decode(out.data + off, out.len - off, &used, &a, &fr, &err), 0);
        assert_int_equal(fr.query_index, want_qi[f]);
        assert_int_equal(fr.nseries, 1);
        assert_int_equal(fr.series[0].labels.n, 2);
        assert_string_equal(fr.series[0].labels.pairs[0].value, "up");
        assert_int_equal(fr.series[0].nchunks, want_chunks[f]);
        const ps_read_chunk_t *c = &fr.series[0].chunks[0];
        assert_int_equal(c->type, PS_READ_CHUNK_XOR);
        if (f < 3) {
            assert_int_equal(c->min_t, 1000);
            assert_int_equal(c->max_t, 2000);
            assert_int_equal(c->len, 20);
            assert_memory_equal(c->data, data, 20);
        } else {
            assert_int_equal(c->max_t, -1);
            assert_int_equal(c->len, 0);
        }
        /* the frame layout: uvarint length, big-endian CRC32C of the data, the data */
        const uint8_t *p = out.data + off;
        size_t hl = p[0] < 0x80 ? 1 : 2;
        size_t dl = used - hl - 4;
        assert_int_equal(ps_get_be32(p + hl), ps_crc32c(0, p + hl + 4, dl));
        if (f == 0) /* 2 + 14 + 2 + 8 labels, 2 * 32 chunks: series 90 bytes, frame data 92 */
            assert_int_equal(dl, 92);
        off += used;
    }
    assert_int_equal(off, out.len);
    ps_read_stream_dispose(&st);

    /* corruption: a flipped data byte, a flipped CRC byte, truncation */
    ps_read_frame_t fr;
    size_t used;
    out.data[10] ^= 1;
    assert_int_equal(ps_read_frame_decode(out.data, out.len, &used, &a, &fr, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "frame: CRC32C 0x"));
    out.data[10] ^= 1;
    assert_int_equal(ps_read_frame_decode(out.data, 50, &used, &a, &fr, &err), PS_EINVAL);
    assert_string_equal(err.msg, "frame: 92 bytes announced, 45 left");
    assert_int_equal(ps_read_frame_decode(out.data, 0, &used, &a, &fr, &err), PS_EINVAL);
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_captured_requests),
        cmocka_unit_test(test_captured_request_facts),
        cmocka_unit_test(test_captured_response),
        cmocka_unit_test(test_response_shapes),
        cmocka_unit_test(test_negotiate),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_bad_requests),
        cmocka_unit_test(test_frames),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
