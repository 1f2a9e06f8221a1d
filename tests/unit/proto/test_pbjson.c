/*
 * test_pbjson.c - unit tests for proto/pbjson.c: a message with every kind of field
 * (pbtest.proto) written as protojson (exact text: int64 as strings, base64, camelCase names,
 * enums by name, NaN/Infinity, defaults left out), read back from that text and from variants
 * (proto names, numbers for int64, URL-safe base64, enum numbers), binary <-> JSON round trips,
 * a push.v1.PushRequest, and bad input with its exact code and message.
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

#include "proto/pbjson.h"
#include "pbtest.pb-c.h"
#include "pyroscope_push.pb-c.h"

#define BUDGET (1u << 20)

static const char ALL_JSON[] =
    "{\"i32\":-5,\"i64\":\"-9007199254740993\",\"u32\":4000000000,\"u64\":\"18446744073709551615\",\"s32\":-7,"
    "\"s64\":\"-8\",\"f32\":9,\"f64\":\"10\",\"sf32\":-11,\"sf64\":\"-12\",\"flt\":0.1,\"dbl\":1e-7,\"b\":true,"
    "\"str\":\"h\\\"i\",\"rawBytes\":\"/wAB\",\"color\":\"COLOR_GREEN\",\"inner\":{\"name\":\"x\",\"n\":\"3\"},"
    "\"packedI64\":[\"1\",\"-2\"],\"names\":[\"a\",\"b\"],\"inners\":[{\"name\":\"p\"},{\"n\":\"4\"}],"
    "\"choiceInt\":0,\"profileTypeID\":\"cpu\",\"ID\":\"u1\",\"values\":[\"NaN\",\"-Infinity\",2.5,1e+21],"
    "\"colors\":[\"COLOR_RED\",7]}";

/* Fills m (pointing into static storage) with the values ALL_JSON holds. */
static void fill_all(Pbtest__All *m)
{
    static Pbtest__Inner inner = PBTEST__INNER__INIT, in0 = PBTEST__INNER__INIT, in1 = PBTEST__INNER__INIT;
    static Pbtest__Inner *inners[2];
    static int64_t packed[] = {1, -2};
    static char *names[] = {"a", "b"};
    static double values[4];
    static Pbtest__Color colors[] = {PBTEST__COLOR__COLOR_RED, 7};
    static uint8_t raw[] = {0xff, 0x00, 0x01};
    pbtest__all__init(m);
    m->i32 = -5;
    m->i64 = -9007199254740993LL;
    m->u32 = 4000000000u;
    m->u64 = UINT64_MAX;
    m->s32 = -7;
    m->s64 = -8;
    m->f32 = 9;
    m->f64 = 10;
    m->sf32 = -11;
    m->sf64 = -12;
    m->flt = 0.1f;
    m->dbl = 1e-7;
    m->b = 1;
    m->str = "h\"i";
    m->raw_bytes.data = raw;
    m->raw_bytes.len = 3;
    m->color = PBTEST__COLOR__COLOR_GREEN;
    inner.name = "x";
    inner.n = 3;
    m->inner = &inner;
    m->n_packed_i64 = 2;
    m->packed_i64 = packed;
    m->n_names = 2;
    m->names = names;
    in0.name = "p";
    in1.n = 4;
    inners[0] = &in0;
    inners[1] = &in1;
    m->n_inners = 2;
    m->inners = inners;
    m->choice_case = PBTEST__ALL__CHOICE_CHOICE_INT;
    m->choice_int = 0;
    m->profile_typeid = "cpu";
    m->id = "u1";
    values[0] = NAN;
    values[1] = -INFINITY;
    values[2] = 2.5;
    values[3] = 1e21;
    m->n_values = 4;
    m->values = values;
    m->n_colors = 2;
    m->colors = colors;
}

static char *to_json(const ProtobufCMessage *m)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_pb_encode(PS_PB_JSON, m, &b);
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

static void test_encode_json_exact(void **state)
{
    (void)state;
    Pbtest__All m;
    fill_all(&m);
    char *j = to_json(&m.base);
    assert_string_equal(j, ALL_JSON);
    free(j);
}

static void test_empty_message_is_empty_object(void **state)
{
    (void)state;
    Pbtest__All m = PBTEST__ALL__INIT;
    char *j = to_json(&m.base);
    assert_string_equal(j, "{}");
    free(j);
}

/* JSON -> message -> binary equals the binary of the original; and binary -> message -> JSON. */
static void test_roundtrip(void **state)
{
    (void)state;
    Pbtest__All m;
    fill_all(&m);
    ps_buf_t bin = PS_BUF_INIT;
    ps_pb_encode(PS_PB_BINARY, &m.base, &bin);

    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ProtobufCMessage *out;
    assert_int_equal(ps_pb_decode(PS_PB_JSON, ALL_JSON, strlen(ALL_JSON), &pbtest__all__descriptor, &a, BUDGET, &out,
                                  &err), 0);
    ps_buf_t bin2 = PS_BUF_INIT;
    ps_pb_encode(PS_PB_BINARY, out, &bin2);
    assert_int_equal(bin2.len, bin.len);
    assert_memory_equal(bin2.data, bin.data, bin.len);
    Pbtest__All *d = (Pbtest__All *)out;
    assert_int_equal(d->choice_case, PBTEST__ALL__CHOICE_CHOICE_INT);
    assert_true(isnan(d->values[0]));

    assert_int_equal(
        ps_pb_decode(PS_PB_BINARY, bin.data, bin.len, &pbtest__all__descriptor, &a, BUDGET, &out, &err), 0);
    char *j = to_json(out);
    assert_string_equal(j, ALL_JSON);
    free(j);
    ps_buf_dispose(&bin);
    ps_buf_dispose(&bin2);
    ps_arena_dispose(&a);
}

/* A double past int64 is written in full digits (as Go's protojson does) and read back. */
static void test_big_double(void **state)
{
    (void)state;
    Pbtest__All m = PBTEST__ALL__INIT;
    m.dbl = -18100867622327496704.0;
    m.i64 = 5;
    m.color = PBTEST__COLOR__COLOR_RED;
    char *j = to_json(&m.base);
    assert_string_equal(j, "{\"i64\":\"5\",\"dbl\":-18100867622327496704,\"color\":\"COLOR_RED\"}");
    static const char in[] = "{\"i64\":5,\"dbl\":-18100867622327496704,\"color\":1,\"i32\":-3}";
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ProtobufCMessage *out;
    assert_int_equal(ps_pb_decode(PS_PB_JSON, in, strlen(in), &pbtest__all__descriptor, &a, BUDGET, &out, &err), 0);
    Pbtest__All *d = (Pbtest__All *)out;
    assert_true(d->dbl == -18100867622327496704.0);
    assert_int_equal(d->i64, 5);
    assert_int_equal(d->i32, -3);
    assert_int_equal(d->color, PBTEST__COLOR__COLOR_RED);
    free(j);
    ps_arena_dispose(&a);
}

/* What protojson also reads: proto names, int64 as numbers, 32-bit ints as strings, URL-safe
 * unpadded base64, enum numbers, null as the default, unknown fields. */
static void test_decode_variants(void **state)
{
    (void)state;
    static const char in[] = "{\"raw_bytes\":\"_w\",\"i64\":-42,\"u32\":\"7\",\"color\":2,\"profile_typeID\":\"x\","
                             "\"str\":null,\"unknownField\":{\"a\":[1,2]},\"packed_i64\":[3, \"4\"],\"dbl\":\"1.5\","
                             "\"flt\":\"Infinity\",\"f64\":1e3,\"choiceStr\":\"s\"}";
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ProtobufCMessage *out;
    assert_int_equal(ps_pb_decode(PS_PB_JSON, in, strlen(in), &pbtest__all__descriptor, &a, BUDGET, &out, &err), 0);
    char *j = to_json(out);
    assert_string_equal(j, "{\"i64\":\"-42\",\"u32\":7,\"f64\":\"1000\",\"flt\":\"Infinity\",\"dbl\":1.5,"
                           "\"rawBytes\":\"/w==\",\"color\":\"COLOR_GREEN\",\"packedI64\":[\"3\",\"4\"],"
                           "\"choiceStr\":\"s\",\"profileTypeID\":\"x\"}");
    free(j);
    ps_arena_dispose(&a);
}

static void expect_err(ps_pb_codec_t codec, const void *in, size_t n, const ProtobufCMessageDescriptor *d,
                       size_t budget, int code, const char *msg)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_err_clear(&err);
    ProtobufCMessage *out;
    int rc = ps_pb_decode(codec, in, n, d, &a, budget, &out, &err);
    assert_int_equal(rc, code);
    assert_string_equal(err.msg, msg);
    ps_arena_dispose(&a);
}

#define JERR(in, code, msg) expect_err(PS_PB_JSON, (in), strlen(in), &pbtest__all__descriptor, BUDGET, (code), (msg))

static void test_json_errors(void **state)
{
    (void)state;
    JERR("{\"inners\":[{\"n\":\"4\"},{\"n\":true}]}", PS_EINVAL, "json: inners[1].n: expected an integer, got boolean");
    JERR("{\"i32\":4294967296}", PS_EINVAL, "json: i32: 4294967296 is out of range");
    JERR("{\"i32\":1.5}", PS_EINVAL, "json: i32: 1.5 is not an integer in range");
    JERR("{\"u64\":-1}", PS_EINVAL, "json: u64: -1 is out of range");
    JERR("{\"str\":5}", PS_EINVAL, "json: str: expected a string, got number");
    JERR("{\"names\":\"a\"}", PS_EINVAL, "json: names: expected an array, got string");
    JERR("{\"names\":[null]}", PS_EINVAL, "json: names[0]: null is not allowed in a repeated field");
    JERR("{\"rawBytes\":\"a$==\"}", PS_EINVAL, "json: raw_bytes: invalid base64 character at offset 1");
    JERR("{\"inner\":[]}", PS_EINVAL, "json: inner: expected an object (pbtest.Inner), got array");
    JERR("{\"choiceStr\":\"a\",\"choiceInt\":1}", PS_EINVAL,
         "json: fields choice_str and choice_int are of the same oneof");
    JERR("{\"i32\":1,\"i32\":2}", PS_EINVAL, "json: i32: duplicate field (given as \"i32\" and as \"i32\")");
    JERR("{\"i32\":", PS_EINVAL, "json: line 1 column 7: unexpected token near end of file");
    JERR("[1]", PS_EINVAL, "json: expected an object (pbtest.All), got array");
    JERR("{\"str\":\"a\\u0000b\"}", PS_EINVAL, "json: line 1 column 17: strings must not contain \\u0000");
    /* nesting and memory bounds */
    char deep[200];
    memset(deep, '[', 40);
    deep[40] = '\0';
    JERR(deep, PS_EINVAL, "json: line 1 column 33: nesting deeper than 32");
    static const char many[] = "{\"names\":[\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\",\"a\"]}";
    expect_err(PS_PB_JSON, many, strlen(many), &pbtest__all__descriptor, 1000, PS_ETOOBIG,
               "json: 13 values need more than the 1000 bytes of memory allowed");
}

/* protojson's reading as connect-go runs it (UnmarshalOptions{DiscardUnknown: true}), case by case:
 * what Pyroscope's server takes, profstore takes with the same value; what it refuses, profstore
 * refuses. */
static ProtobufCMessage *dec_ok(ps_arena_t *a, const char *in)
{
    ps_err_t err;
    ps_err_clear(&err);
    ProtobufCMessage *out = NULL;
    int rc = ps_pb_decode(PS_PB_JSON, in, strlen(in), &pbtest__all__descriptor, a, BUDGET, &out, &err);
    if (rc != 0)
        fail_msg("%s: %s", in, err.msg);
    return out;
}

static void json_is(const char *in, const char *want)
{
    ps_arena_t a = PS_ARENA_INIT;
    char *j = to_json(dec_ok(&a, in));
    if (strcmp(j, want) != 0)
        fail_msg("%s: got %s, want %s", in, j, want);
    free(j);
    ps_arena_dispose(&a);
}

static void test_protojson_rules(void **state)
{
    (void)state;
    /* numbers in strings: one JSON number token, whole after its exponent */
    json_is("{\"i64\":\"1e3\",\"i32\":\"1.50e2\",\"u32\":\"-0\",\"s64\":\"0.0\",\"sf64\":\"100e-2\"}",
            "{\"i32\":150,\"i64\":\"1000\",\"sf64\":\"1\"}");
    json_is("{\"i64\":\"12 34\"}", "{\"i64\":\"12\"}");      /* the first token only */
    json_is("{\"i64\":\"-9223372036854775808\",\"u64\":\"18446744073709551615\"}",
            "{\"i64\":\"-9223372036854775808\",\"u64\":\"18446744073709551615\"}");
    json_is("{\"i64\":1e3,\"i32\":-2.0}", "{\"i32\":-2,\"i64\":\"1000\"}");
    /* jansson reads "9007199254740993.0" as a double: from 2^53 on that is refused, not rounded */
    JERR("{\"i64\":9007199254740993.0}", PS_EINVAL, "json: i64: 9007199254740992: an integer from 2^53 on must be "
         "written without a fraction or exponent (or as a string)");
    JERR("{\"i64\":\"0x10\"}", PS_EINVAL, "json: i64: \"0x10\" is not a number");
    JERR("{\"i64\":\"007\"}", PS_EINVAL, "json: i64: \"007\" is not a number");
    JERR("{\"i64\":\" 7\"}", PS_EINVAL, "json: i64: \" 7\" is not a number");
    JERR("{\"i64\":\"7\\u00a0\"}", PS_EINVAL, "json: i64: \"7\xc2\xa0\" is not a number");
    JERR("{\"i64\":\"+7\"}", PS_EINVAL, "json: i64: \"+7\" is not a number");
    JERR("{\"i64\":\"5.\"}", PS_EINVAL, "json: i64: \"5.\" is not a number");
    JERR("{\"i64\":\"1.5\"}", PS_EINVAL, "json: i64: \"1.5\" is not an integer in range");
    JERR("{\"i64\":\"10e-2\"}", PS_EINVAL, "json: i64: \"10e-2\" is not an integer in range");
    JERR("{\"i64\":\"9223372036854775808\"}", PS_EINVAL, "json: i64: \"9223372036854775808\" is not an integer in range");
    JERR("{\"u64\":\"-1\"}", PS_EINVAL, "json: u64: \"-1\" is not an integer in range");
    JERR("{\"i32\":\"2147483648\"}", PS_EINVAL, "json: i32: \"2147483648\" is not an integer in range");
    JERR("{\"dbl\":\"1e999\"}", PS_EINVAL, "json: dbl: \"1e999\" is out of range");
    JERR("{\"dbl\":\"0x1p3\"}", PS_EINVAL, "json: dbl: \"0x1p3\" is not a number");
    json_is("{\"dbl\":\"-2.5e-1\"}", "{\"dbl\":-0.25}");
    /* enums: a name the enum lacks is left out (DiscardUnknown), also in a list; numbers as they are */
    json_is("{\"color\":\"BLUE\",\"colors\":[\"COLOR_RED\",\"BLUE\",2,\"1\"]}",
            "{\"colors\":[\"COLOR_RED\",\"COLOR_GREEN\"]}");
    json_is("{\"color\":7}", "{\"color\":7}");
    JERR("{\"color\":1.5}", PS_EINVAL, "json: color: 1.5 is not an integer in range");
    JERR("{\"color\":true}", PS_EINVAL, "json: color: expected an enum name or number, got boolean");
    /* bytes: std or URL alphabet by the string, padding by its length, \r\n skipped */
    json_is("{\"rawBytes\":\"/wAB\"}", "{\"rawBytes\":\"/wAB\"}");
    json_is("{\"rawBytes\":\"_wAB\"}", "{\"rawBytes\":\"/wAB\"}");
    json_is("{\"rawBytes\":\"/w==\"}", "{\"rawBytes\":\"/w==\"}");
    json_is("{\"rawBytes\":\"_w\"}", "{\"rawBytes\":\"/w==\"}");
    json_is("{\"rawBytes\":\"/w\\r\\n==\\r\\n\"}", "{\"rawBytes\":\"/w==\"}"); /* 8 characters: padded */
    JERR("{\"rawBytes\":\"/w\\r\\n==\"}", PS_EINVAL, /* 6 characters: unpadded, as Go counts them */
         "json: raw_bytes: invalid base64 character at offset 4");
    JERR("{\"rawBytes\":\"/w=\"}", PS_EINVAL, "json: raw_bytes: invalid base64 character at offset 2");
    JERR("{\"rawBytes\":\"+w-A\"}", PS_EINVAL, "json: raw_bytes: invalid base64 character at offset 0");
    JERR("{\"rawBytes\":\"/w=A\"}", PS_EINVAL, "json: raw_bytes: invalid base64 character at offset 3");
    JERR("{\"rawBytes\":\"/====\"}", PS_EINVAL, "json: raw_bytes: invalid base64 character at offset 1");
    JERR("{\"rawBytes\":\"AAAAA\"}", PS_EINVAL, "json: raw_bytes: invalid base64 (length)");
    /* a field by both names is a duplicate, also when one is null; by one name inside an unknown
     * field's value it is not looked at */
    JERR("{\"profileTypeID\":\"a\",\"profile_typeID\":\"b\"}", PS_EINVAL,
         "json: profile_typeID: duplicate field (given as \"profileTypeID\" and as \"profile_typeID\")");
    JERR("{\"maxNodes\":null,\"max_nodes\":\"5\"}", PS_EINVAL,
         "json: max_nodes: duplicate field (given as \"maxNodes\" and as \"max_nodes\")");
    JERR("{\"inners\":[{},{\"n\":1,\"n\":2}]}", PS_EINVAL,
         "json: inners[1].n: duplicate field (given as \"n\" and as \"n\")");
    JERR("{\"inner\":{\"name\":\"a\",\"na\\u006de\":\"b\"}}", PS_EINVAL,
         "json: inner.name: duplicate field (given as \"name\" and as \"name\")");
    json_is("{\"x\":{\"a\":1,\"a\":2},\"y\":1,\"y\":[],\"str\":\"s\"}", "{\"str\":\"s\"}");
    JERR("{\"x\":1,\"x\":2,\"str\":[}", PS_EINVAL, "json: line 1 column 21: unexpected token near '}'");
    /* null: the default, for every kind of field; not inside a list */
    json_is("{\"inner\":null,\"names\":null,\"color\":null,\"rawBytes\":null,\"choiceStr\":null,\"choiceInt\":3}",
            "{\"choiceInt\":3}");
    JERR("{\"colors\":[null]}", PS_EINVAL, "json: colors[0]: null is not allowed in a repeated field");
    /* the body */
    JERR("", PS_EINVAL, "json: zero-length payload is not a valid JSON object");
    JERR("null", PS_EINVAL, "json: line 1 column 4: '[' or '{' expected near 'null'");
    JERR("{} {}", PS_EINVAL, "json: line 1 column 4: end of file expected near '{'");
}

static void test_binary_errors(void **state)
{
    (void)state;
    /* PushRequest{series[0]{labels[0]{name: varint}}} */
    static const uint8_t wt[] = {0x0a, 0x04, 0x0a, 0x02, 0x08, 0x01};
    expect_err(PS_PB_BINARY, wt, sizeof(wt), &push__v1__push_request__descriptor, BUDGET, PS_EINVAL,
               "protobuf: series[0].labels[0].name: field 1 has wire type 0 (varint), expected 2 (length-delimited) "
               "(at byte 4)");
    static const uint8_t trunc[] = {0x0a, 0x05, 0x0a, 0x02};
    expect_err(PS_PB_BINARY, trunc, sizeof(trunc), &push__v1__push_request__descriptor, BUDGET, PS_EINVAL,
               "protobuf: length runs past the end of the message (at byte 0)");
    static const uint8_t utf8[] = {0x0a, 0x06, 0x0a, 0x04, 0x12, 0x02, 0xc3, 0x28};
    expect_err(PS_PB_BINARY, utf8, sizeof(utf8), &push__v1__push_request__descriptor, BUDGET, PS_EINVAL,
               "protobuf: series[0].labels[0].value: string is not valid UTF-8 (at byte 6)");
    static const uint8_t nul[] = {0x0a, 0x05, 0x0a, 0x03, 0x0a, 0x01, 0x00};
    expect_err(PS_PB_BINARY, nul, sizeof(nul), &push__v1__push_request__descriptor, BUDGET, PS_EINVAL,
               "protobuf: series[0].labels[0].name: string contains a NUL byte (at byte 6)");
    static const uint8_t group[] = {0x0b};
    expect_err(PS_PB_BINARY, group, sizeof(group), &push__v1__push_request__descriptor, BUDGET, PS_EINVAL,
               "protobuf: groups are not supported (at byte 0)");
    static const uint8_t varint[] = {0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f};
    expect_err(PS_PB_BINARY, varint, sizeof(varint), &pbtest__all__descriptor, BUDGET, PS_EINVAL,
               "protobuf: truncated or overlong varint (at byte 0)");
    /* 2000 empty series: 4,000 bytes of input, far more than 4 KiB of memory */
    uint8_t many[4000];
    for (size_t i = 0; i < sizeof(many); i += 2) {
        many[i] = 0x0a;
        many[i + 1] = 0;
    }
    expect_err(PS_PB_BINARY, many, sizeof(many), &push__v1__push_request__descriptor, 4096, PS_ETOOBIG,
               "protobuf: decoding push.v1.PushRequest needs more than 4096 bytes of memory");
}

/* A PushRequest as Alloy sends it, both ways. */
static void test_push_request(void **state)
{
    (void)state;
    static const char in[] = "{\"series\":[{\"labels\":[{\"name\":\"__name__\",\"value\":\"process_cpu\"},"
                             "{\"name\":\"service_name\",\"value\":\"app\"}],\"samples\":[{\"rawProfile\":\"AAEC\","
                             "\"ID\":\"7c9e6679-7425-40de-944b-e07fc1f90ae7\"}]}]}";
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ProtobufCMessage *out;
    assert_int_equal(ps_pb_decode(PS_PB_JSON, in, strlen(in), &push__v1__push_request__descriptor, &a, BUDGET, &out,
                                  &err), 0);
    Push__V1__PushRequest *r = (Push__V1__PushRequest *)out;
    assert_int_equal(r->n_series, 1);
    assert_int_equal(r->series[0]->n_labels, 2);
    assert_string_equal(r->series[0]->labels[1]->value, "app");
    assert_int_equal(r->series[0]->samples[0]->raw_profile.len, 3);
    assert_int_equal(r->series[0]->samples[0]->raw_profile.data[2], 2);
    char *j = to_json(out);
    assert_string_equal(j, in);
    free(j);
    ps_buf_t bin = PS_BUF_INIT;
    ps_pb_encode(PS_PB_BINARY, out, &bin);
    assert_int_equal(bin.len, 93);
    assert_int_equal(ps_pb_decode(PS_PB_BINARY, bin.data, bin.len, &push__v1__push_request__descriptor, &a, BUDGET,
                                  &out, &err), 0);
    j = to_json(out);
    assert_string_equal(j, in);
    free(j);
    ps_buf_dispose(&bin);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_encode_json_exact),  cmocka_unit_test(test_empty_message_is_empty_object),
        cmocka_unit_test(test_roundtrip),          cmocka_unit_test(test_decode_variants),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_protojson_rules),        cmocka_unit_test(test_binary_errors),
        cmocka_unit_test(test_push_request),       cmocka_unit_test(test_big_double),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
