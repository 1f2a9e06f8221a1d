/*
 * test_querier.c - unit tests for proto/querier.c: requests as Grafana's connect-go client sends
 * them (hand-written bytes: optional fields present or absent, enums, repeated strings), the same
 * as protojson, answers byte for byte (ProfileTypes, the SeriesResponse field 2, a flame graph,
 * SelectSeries points, Pyroscope's tree bytes, google.v1.Profile = the pprof bytes), and bad input
 * with its message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"

#include "proto/querier.h"
#include "pyroscope_querier.pb-c.h"

#define BUDGET (1u << 20)

/* out holds exactly the text want (buffers are not NUL-terminated) */
static void assert_buf(const ps_buf_t *out, const char *want)
{
    assert_int_equal(out->len, strlen(want));
    assert_memory_equal(out->data, want, out->len);
}

static void test_profile_types(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_qr_labels_req_t r;
    /* Grafana's health check: start 1000, end 4000 */
    static const uint8_t req[] = {0x08, 0xe8, 0x07, 0x10, 0xa0, 0x1f};
    assert_int_equal(ps_qr_decode_profile_types(PS_QR_BINARY, req, sizeof(req), &a, BUDGET, &r, &err), 0);
    assert_int_equal(r.start, 1000);
    assert_int_equal(r.end, 4000);
    assert_int_equal(ps_qr_decode_profile_types(PS_QR_JSON, "{\"start\":\"1000\",\"end\":4000}", 27, &a, BUDGET, &r,
                                                &err), 0);
    assert_int_equal(r.end, 4000);
    const char *ids[] = {"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta", "not a type"};
    ps_buf_t out = PS_BUF_INIT;
    ps_qr_encode_profile_types(PS_QR_BINARY, ids, 2, &a, &out);
    static const char want[] = "\x0a\x64"
                               "\x0a\x31process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"
                               "\x12\x0bprocess_cpu\x22\x03" "cpu\x2a\x0bnanoseconds\x32\x03" "cpu\x3a\x0bnanoseconds";
    assert_int_equal(out.len, sizeof(want) - 1);
    assert_memory_equal(out.data, want, sizeof(want) - 1);
    ps_buf_reset(&out);
    ps_qr_encode_profile_types(PS_QR_JSON, ids, 1, &a, &out);
    assert_buf(&out,
                        "{\"profileTypes\":[{\"ID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta\","
                        "\"name\":\"process_cpu\",\"sampleType\":\"cpu\",\"sampleUnit\":\"nanoseconds\","
                        "\"periodType\":\"cpu\",\"periodUnit\":\"nanoseconds\"}]}");
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

/* LabelNamesResponse streamed (ps_qr_names_*) = the message encoded whole, both codecs, 0 to 4
 * names (an empty one, escapes, a long one past a 1-byte length) */
static void test_names_streamed(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    char long_name[300];
    memset(long_name, 'x', sizeof(long_name) - 1);
    long_name[sizeof(long_name) - 1] = 0;
    const char *names[] = {"", "a\"b\\c\x01", "\xc3\xa9t\xc3\xa9", long_name};
    static const char *const want_json[] = {"{}", "{\"names\":[\"\"]}", "{\"names\":[\"\",\"a\\\"b\\\\c\\u0001\"]}"};
    for (int codec = 0; codec < 2; codec++) {
        int cc = codec ? PS_QR_JSON : PS_QR_BINARY;
        for (uint32_t n = 0; n <= 4; n++) {
            ps_buf_t whole = PS_BUF_INIT, streamed = PS_BUF_INIT;
            ps_qr_encode_names(cc, names, n, &a, &whole);
            ps_qr_names_enc_t e;
            ps_qr_names_begin(&e, cc, &streamed);
            for (uint32_t i = 0; i < n; i++)
                ps_qr_names_add(&e, names[i], strlen(names[i]));
            ps_qr_names_end(&e);
            assert_int_equal(streamed.len, whole.len);
            if (whole.len)
                assert_memory_equal(streamed.data, whole.data, whole.len);
            if (cc == PS_QR_JSON && n < 3)
                assert_buf(&streamed, want_json[n]);
            static const char want_bin[] = "\x0a\x00\x0a\x06" "a\"b\\c\x01";
            if (cc == PS_QR_BINARY && n == 2) {
                assert_int_equal(streamed.len, sizeof(want_bin) - 1);
                assert_memory_equal(streamed.data, want_bin, sizeof(want_bin) - 1);
            }
            ps_buf_dispose(&whole);
            ps_buf_dispose(&streamed);
        }
    }
    ps_arena_dispose(&a);
}

static void test_merge_requests(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_qr_merge_req_t m, l, r;
    /* profile_typeID "a:b:c:d:e", label_selector "{}", start 1, end 2, max_nodes 16384 */
    static const uint8_t req[] = {0x0a, 0x09, 'a', ':', 'b', ':', 'c', ':', 'd', ':', 'e', 0x12, 0x02, '{', '}',
                                  0x18, 0x01, 0x20, 0x02, 0x28, 0x80, 0x80, 0x01};
    assert_int_equal(ps_qr_decode_merge_stacktraces(PS_QR_BINARY, req, sizeof(req), &a, BUDGET, &m, &err), 0);
    assert_string_equal(m.type_id, "a:b:c:d:e");
    assert_string_equal(m.label_selector, "{}");
    assert_int_equal(m.start, 1);
    assert_int_equal(m.end, 2);
    assert_true(m.has_max_nodes);
    assert_int_equal(m.max_nodes, 16384);
    assert_int_equal(m.format, PS_QR_FORMAT_FLAMEGRAPH);
    /* max_nodes absent; format PPROF by name in JSON */
    static const char js[] = "{\"profileTypeID\":\"x\",\"format\":\"PROFILE_FORMAT_PPROF\",\"maxNodes\":\"0\"}";
    assert_int_equal(ps_qr_decode_merge_stacktraces(PS_QR_JSON, js, sizeof(js) - 1, &a, BUDGET, &m, &err), 0);
    assert_int_equal(m.format, PS_QR_FORMAT_PPROF);
    assert_true(m.has_max_nodes); /* present, 0 */
    assert_int_equal(ps_qr_decode_merge_stacktraces(PS_QR_BINARY, req, 15, &a, BUDGET, &m, &err), 0);
    assert_false(m.has_max_nodes);
    /* Diff: left = the request, no right */
    uint8_t diff[2 + sizeof(req)] = {0x0a, sizeof(req)};
    memcpy(diff + 2, req, sizeof(req));
    assert_int_equal(ps_qr_decode_diff(PS_QR_BINARY, diff, sizeof(diff), &a, BUDGET, &l, &r, &err), 0);
    assert_string_equal(l.type_id, "a:b:c:d:e");
    assert_string_equal(r.type_id, "");
    /* garbage */
    static const uint8_t bad[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0x0f};
    assert_int_equal(ps_qr_decode_merge_stacktraces(PS_QR_BINARY, bad, sizeof(bad), &a, BUDGET, &m, &err), PS_EINVAL);
    assert_true(strncmp(err.msg, "querier.v1.SelectMergeStacktracesRequest: protobuf: ", 52) == 0);
    assert_int_equal(ps_qr_decode_merge_stacktraces(PS_QR_JSON, "{\"start\":[]}", 12, &a, BUDGET, &m, &err), PS_EINVAL);
    assert_true(strncmp(err.msg, "querier.v1.SelectMergeStacktracesRequest: json: start: ", 55) == 0);
    ps_arena_dispose(&a);
}

static void test_select_series(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_qr_series_req_t r;
    /* group_by ["pod"], step 15.0, aggregation AVERAGE, limit 3 */
    static const uint8_t req[] = {0x0a, 0x01, 'x', 0x2a, 0x03, 'p', 'o', 'd', 0x31, 0, 0, 0, 0, 0, 0, 0x2e, 0x40,
                                  0x38, 0x01, 0x48, 0x03};
    assert_int_equal(ps_qr_decode_select_series(PS_QR_BINARY, req, sizeof(req), &a, BUDGET, &r, &err), 0);
    assert_int_equal(r.ngroup_by, 1);
    assert_string_equal(r.group_by[0], "pod");
    assert_true(r.step == 15.0);
    assert_true(r.average);
    assert_true(r.has_limit);
    assert_int_equal(r.limit, 3);
    assert_int_equal(ps_qr_decode_select_series(PS_QR_BINARY, req, 17, &a, BUDGET, &r, &err), 0);
    assert_false(r.average);
    assert_false(r.has_limit);
    ps_label_pair_t pairs[] = {{.name = "pod", .value = "p1", .nlen = 3, .vlen = 2}};
    ps_labels_t ls = {.n = 1, .pairs = pairs};
    ps_qr_point_t pts[] = {{1000, 2.5, NULL}};
    ps_qr_series_t s = {ls, 1, pts};
    ps_buf_t out = PS_BUF_INIT;
    ps_qr_encode_select_series(PS_QR_BINARY, &s, 1, &a, &out);
    static const uint8_t want[] = {0x0a, 0x19, 0x0a, 0x09, 0x0a, 0x03, 'p', 'o', 'd', 0x12, 0x02, 'p', '1', 0x12, 0x0c,
                                   0x09, 0, 0, 0, 0, 0, 0, 0x04, 0x40, 0x10, 0xe8, 0x07};
    assert_int_equal(out.len, sizeof(want));
    assert_memory_equal(out.data, want, sizeof(want));
    /* with exemplars (written directly, not through protobuf-c): protobuf-c reads it and writes the
     * same bytes back; zero values (0.0 and -0.0, t 0, value 0, "") left out, negatives as 10-byte varints */
    {
        ps_label_pair_t ep[] = {{.name = "instance", .value = "a", .nlen = 8, .vlen = 1},
                                {.name = "empty", .value = "", .nlen = 5, .vlen = 0}};
        ps_qr_exemplar_t ex[] = {{1796022007000, "18ecc07f-e804-8e60-8000-000000000002", 2980000000, {2, ep, 0}},
                                 {-5, "", 0, {0, NULL, 0}},
                                 /* the id as its bytes (the querier's exemplars): written as the text above */
                                 {.t = 1796022008000, .value = 7, .labels = {2, ep, 0}, .has_uuid = true,
                                  .uuid = {0x18, 0xec, 0xc0, 0x7f, 0xe8, 0x04, 0x8e, 0x60, 0x80, 0x00, 0, 0, 0, 0, 0, 2}}};
        ps_qr_point_t xp[] = {{1000, 2.5, &ex[0]}, {0, 0.0, &ex[1]}, {-7, -0.0, NULL}, {60000, 1e300, &ex[0]},
                              {120000, 3.0, &ex[2]}};
        ps_qr_series_t xs[] = {{ls, 5, xp}, {{0, NULL, 0}, 1, xp}};
        ps_buf_reset(&out);
        ps_qr_encode_select_series(PS_QR_BINARY, xs, 2, &a, &out);
        Querier__V1__SelectSeriesResponse *m = querier__v1__select_series_response__unpack(NULL, out.len, out.data);
        assert_non_null(m);
        assert_int_equal(m->n_series, 2);
        assert_int_equal(m->series[0]->n_points, 5);
        assert_string_equal(m->series[0]->points[4]->exemplars[0]->profile_id, "18ecc07f-e804-8e60-8000-000000000002");
        assert_int_equal(m->series[0]->points[4]->exemplars[0]->value, 7);
        assert_int_equal(m->series[0]->points[4]->exemplars[0]->n_labels, 2);
        assert_string_equal(m->series[0]->points[4]->exemplars[0]->labels[0]->name, "instance");
        assert_int_equal(m->series[0]->points[0]->n_exemplars, 1);
        assert_string_equal(m->series[0]->points[0]->exemplars[0]->profile_id, "18ecc07f-e804-8e60-8000-000000000002");
        assert_int_equal(m->series[0]->points[0]->exemplars[0]->value, 2980000000);
        assert_int_equal(m->series[0]->points[0]->exemplars[0]->n_labels, 2);
        assert_int_equal(m->series[0]->points[1]->exemplars[0]->timestamp, -5);
        assert_int_equal(m->series[0]->points[2]->timestamp, -7);
        assert_int_equal(m->series[0]->points[2]->n_exemplars, 0);
        size_t n = querier__v1__select_series_response__get_packed_size(m);
        uint8_t *again = malloc(n);
        querier__v1__select_series_response__pack(m, again);
        if (getenv("PS_DUMP")) {
            FILE *f1 = fopen("/tmp/i23_ours.bin", "wb"), *f2 = fopen("/tmp/i23_pbc.bin", "wb");
            fwrite(out.data, 1, out.len, f1);
            fwrite(again, 1, n, f2);
            fclose(f1);
            fclose(f2);
        }
        assert_int_equal(n, out.len);
        assert_memory_equal(again, out.data, n);
        free(again);
        querier__v1__select_series_response__free_unpacked(m, NULL);
        /* JSON: the id of the bytes is the same text (three points carry it) */
        ps_buf_reset(&out);
        ps_qr_encode_select_series(PS_QR_JSON, xs, 1, &a, &out);
        ps_buf_putc(&out, 0);
        int ids = 0;
        for (const char *q = (char *)out.data; (q = strstr(q, "\"18ecc07f-e804-8e60-8000-000000000002\"")) != NULL; q++)
            ids++;
        assert_int_equal(ids, 3);
    }
    /* SeriesResponse: labels_set is field 2 */
    ps_buf_reset(&out);
    ps_qr_encode_series(PS_QR_BINARY, &ls, 1, &a, &out);
    static const uint8_t want_series[] = {0x12, 0x0b, 0x0a, 0x09, 0x0a, 0x03, 'p', 'o', 'd', 0x12, 0x02, 'p', '1'};
    assert_int_equal(out.len, sizeof(want_series));
    assert_memory_equal(out.data, want_series, sizeof(want_series));
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

static void test_flamegraph_and_profile(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    const char *names[] = {"total", "main"};
    int64_t l0[] = {0, 5, 0, 0}, l1[] = {0, 5, 5, 1};
    int64_t *levels[] = {l0, l1};
    uint32_t ln[] = {4, 4};
    ps_qr_flamegraph_t fg = {.nnames = 2, .names = names, .nlevels = 2, .level_n = ln, .levels = levels, .total = 5,
                             .max_self = 5};
    ps_buf_t out = PS_BUF_INIT;
    ps_qr_encode_flamegraph(PS_QR_BINARY, &fg, &a, &out);
    static const uint8_t want[] = {0x0a, 0x21, 0x0a, 0x05, 't', 'o', 't', 'a', 'l', 0x0a, 0x04, 'm', 'a', 'i', 'n',
                                   0x12, 0x06, 0x0a, 0x04, 0, 5, 0, 0, 0x12, 0x06, 0x0a, 0x04, 0, 5, 5, 1,
                                   0x18, 0x05, 0x20, 0x05};
    assert_int_equal(out.len, sizeof(want));
    assert_memory_equal(out.data, want, sizeof(want));
    ps_buf_reset(&out);
    ps_qr_encode_flamegraph(PS_QR_JSON, &fg, &a, &out);
    assert_buf(&out, "{\"flamegraph\":{\"names\":[\"total\",\"main\"],\"levels\":[{\"values\":"
                                          "[\"0\",\"5\",\"0\",\"0\"]},{\"values\":[\"0\",\"5\",\"5\",\"1\"]}],"
                                          "\"total\":\"5\",\"maxSelf\":\"5\"}}");
    /* TREE: total -> {a 2, b 3}; pre-order, children written last first (Pyroscope's stack) */
    const char *tnames[] = {"total", "b", "a"};
    int64_t t0[] = {0, 5, 0, 0}, t1[] = {0, 2, 2, 2, 0, 3, 3, 1};
    int64_t *tlevels[] = {t0, t1};
    uint32_t tln[] = {4, 8};
    ps_qr_flamegraph_t tfg = {.nnames = 3, .names = tnames, .nlevels = 2, .level_n = tln, .levels = tlevels,
                              .total = 5, .max_self = 3};
    ps_buf_reset(&out);
    assert_int_equal(ps_qr_encode_tree(PS_QR_BINARY, &tfg, &a, &out, &err), 0);
    static const uint8_t want_tree[] = {0x12, 0x0b, 0x00, 0x00, 0x02, 0x01, 'b', 0x03, 0x00, 0x01, 'a', 0x02, 0x00};
    assert_int_equal(out.len, sizeof(want_tree));
    assert_memory_equal(out.data, want_tree, sizeof(want_tree));
    /* google.v1.Profile: binary is the pprof itself; JSON its protojson; PPROF format nests it */
    static const uint8_t pprof[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x32, 0x00, 0x32, 0x03, 'c', 'p', 'u',
                                    0x32, 0x02, 'n', 's'};
    ps_buf_reset(&out);
    assert_int_equal(ps_qr_encode_profile(PS_QR_BINARY, pprof, sizeof(pprof), &a, &out, &err), 0);
    assert_int_equal(out.len, sizeof(pprof));
    assert_memory_equal(out.data, pprof, sizeof(pprof));
    ps_buf_reset(&out);
    assert_int_equal(ps_qr_encode_profile(PS_QR_JSON, pprof, sizeof(pprof), &a, &out, &err), 0);
    assert_buf(&out,
                        "{\"sampleType\":[{\"type\":\"1\",\"unit\":\"2\"}],\"stringTable\":[\"\",\"cpu\",\"ns\"]}");
    ps_buf_reset(&out);
    assert_int_equal(ps_qr_encode_merge_pprof(PS_QR_BINARY, pprof, sizeof(pprof), &a, &out, &err), 0);
    assert_int_equal(out.len, sizeof(pprof) + 4);
    static const uint8_t head[] = {0x2a, sizeof(pprof) + 2, 0x0a, sizeof(pprof)};
    assert_memory_equal(out.data, head, 4);
    assert_memory_equal(out.data + 4, pprof, sizeof(pprof));
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_profile_types),
        cmocka_unit_test(test_names_streamed),
        cmocka_unit_test(test_merge_requests),
        cmocka_unit_test(test_select_series),
        cmocka_unit_test(test_flamegraph_and_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
