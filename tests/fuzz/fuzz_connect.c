/*
 * fuzz_connect.c - libFuzzer target for Connect request decoding: proto/pbjson.c's two codecs over
 * the Pyroscope messages (push.v1.PushRequest through proto/pyroscope.c, and the types.v1
 * requests the querier reads) with a memory budget.
 *
 * The first input byte picks the codec (bit 0: JSON) and the message (bits 1-3); the rest is the
 * body. A failure must be a clean PS_EINVAL or PS_ETOOBIG with a message. A success is written as
 * JSON, which must decode again and give the same JSON (protojson is a fixed point after one
 * round), and as binary, which must decode again. Built and run by build.sh / run.sh in this
 * folder; with PS_FUZZ_CONNECT_SEEDS=DIR (and PS_FUZZ_CONNECT_PPROF=a pprof file) the target
 * writes its seeds there: encoded PushRequests, binary and JSON, and types.v1 requests.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pbjson.h"
#include "proto/pyroscope.h"
#include "pyroscope_push.pb-c.h"
#include "pyroscope_types.pb-c.h"

#define PS_FUZZ_NAME "fuzz_connect"
#include "fuzzutil.h"

static const ProtobufCMessageDescriptor *const descs[8] = {
    &push__v1__push_request__descriptor,      &types__v1__label_values_request__descriptor,
    &types__v1__label_names_request__descriptor, &types__v1__series__descriptor,
    &types__v1__stack_trace_selector__descriptor, &types__v1__profile_type__descriptor,
    &types__v1__labels__descriptor,           &push__v1__push_request__descriptor,
};

static void check_push(int codec, const uint8_t *body, size_t n)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_push_t req;
    int rc = ps_pyro_push_decode(codec, body, n, &a, n * 8 + 65536, &req, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
    } else {
        for (size_t i = 0; i < req.nseries; i++)
            for (size_t k = 0; k < req.series[i].nlabels; k++) {
                const ps_pyro_label_t *l = &req.series[i].labels[k];
                CHECK(strlen(l->name) == l->nlen && strlen(l->value) == l->vlen, "label %zu.%zu has a NUL", i, k);
            }
        ps_buf_t b = PS_BUF_INIT;
        ps_pyro_push_encode(PS_PYRO_PROTO, &req, &b);
        ps_pyro_push_t again;
        rc = ps_pyro_push_decode(PS_PYRO_PROTO, b.data, b.len, &a, b.len * 8 + 65536, &again, &err);
        CHECK(rc == 0, "re-encoded push does not decode: %s", err.msg);
        CHECK(again.nseries == req.nseries, "nseries %zu vs %zu", again.nseries, req.nseries);
        ps_buf_dispose(&b);
    }
    ps_arena_dispose(&a);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    ps_pb_codec_t codec = (data[0] & 1) ? PS_PB_JSON : PS_PB_BINARY;
    const ProtobufCMessageDescriptor *d = descs[(data[0] >> 1) & 7];
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    if (d == &push__v1__push_request__descriptor) {
        check_push(codec, body, n);
        return 0;
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ProtobufCMessage *m;
    int rc = ps_pb_decode(codec, body, n, d, &a, n * 8 + 65536, &m, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        ps_arena_dispose(&a);
        return 0;
    }
    ps_buf_t j1 = PS_BUF_INIT, j2 = PS_BUF_INIT, bin = PS_BUF_INIT;
    ps_pb_encode(PS_PB_JSON, m, &j1);
    ProtobufCMessage *m2;
    rc = ps_pb_decode(PS_PB_JSON, j1.data, j1.len, d, &a, j1.len * 64 + 65536, &m2, &err);
    CHECK(rc == 0, "our JSON does not decode: %s: %.*s", err.msg, (int)(j1.len > 300 ? 300 : j1.len), j1.data);
    ps_pb_encode(PS_PB_JSON, m2, &j2);
    CHECK(j1.len == j2.len && memcmp(j1.data, j2.data, j1.len) == 0, "JSON round trip differs: %.*s vs %.*s",
          (int)(j1.len > 300 ? 300 : j1.len), j1.data, (int)(j2.len > 300 ? 300 : j2.len), j2.data);
    ps_pb_encode(PS_PB_BINARY, m, &bin);
    /* the first decode's budget: the message fitted in it, and its binary form (without the unknown
     * fields and padding the input may have had) needs no more; a budget by its own length may be
     * too small (a run of empty strings: 2 bytes on the wire, a pointer and an allocation decoded) */
    rc = ps_pb_decode(PS_PB_BINARY, bin.data, bin.len, d, &a, n * 8 + 65536, &m2, &err);
    CHECK(rc == 0, "our binary does not decode: %s", err.msg);
    ps_buf_dispose(&j1);
    ps_buf_dispose(&j2);
    ps_buf_dispose(&bin);
    ps_arena_dispose(&a);
    return 0;
}

/* ---- seeds ---------------------------------------------------------------------------------- */

static void seed(const char *dir, int i, uint8_t sel, const ps_buf_t *b)
{
    ps_buf_t s = PS_BUF_INIT;
    ps_buf_putc(&s, sel);
    ps_buf_append(&s, b->data, b->len);
    ps_fuzz_write_seed(dir, "seed", i, s.data, s.len);
    ps_buf_dispose(&s);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc;
    (void)argv;
    const char *dir = getenv("PS_FUZZ_CONNECT_SEEDS");
    if (dir == NULL)
        return 0;
    static uint8_t raw[65536];
    size_t rawn = 0;
    const char *pp = getenv("PS_FUZZ_CONNECT_PPROF");
    FILE *f = pp != NULL ? fopen(pp, "rb") : NULL;
    if (f != NULL) {
        rawn = fread(raw, 1, sizeof(raw) - 4096, f);
        fclose(f);
    }
    ps_pyro_label_t labels[] = {{"__name__", "process_cpu", 8, 11}, {"service_name", "app", 12, 3},
                                {"k8s.pod.name", "p-1", 12, 3}};
    ps_pyro_sample_t smp = {raw, rawn, "7c9e6679-7425-40de-944b-e07fc1f90ae7"};
    ps_pyro_series_t ser = {labels, 3, &smp, 1};
    ps_pyro_push_t req = {&ser, 1};
    ps_buf_t b = PS_BUF_INIT;
    int i = 0;
    for (int codec = 0; codec < 2; codec++) {
        ps_buf_reset(&b);
        ps_pyro_push_encode(codec, &req, &b);
        seed(dir, i++, (uint8_t)codec, &b);
    }
    /* types.v1 requests, binary and JSON */
    Types__V1__LabelValuesRequest lv = TYPES__V1__LABEL_VALUES_REQUEST__INIT;
    char *matchers[] = {"{service_name=\"app\"}", "{__name__=~\"process_cpu.*\"}"};
    lv.name = "service_name";
    lv.n_matchers = 2;
    lv.matchers = matchers;
    lv.start = 1796022000000;
    lv.end = -1;
    Types__V1__StackTraceSelector sts = TYPES__V1__STACK_TRACE_SELECTOR__INIT;
    Types__V1__GoPGO pgo = TYPES__V1__GO_PGO__INIT;
    Types__V1__Location loc = TYPES__V1__LOCATION__INIT, *locs[] = {&loc};
    loc.name = "main.work";
    pgo.keep_locations = 5;
    pgo.aggregate_callees = 1;
    sts.go_pgo = &pgo;
    sts.n_call_site = 1;
    sts.call_site = locs;
    Types__V1__Series series = TYPES__V1__SERIES__INIT;
    Types__V1__Point pt = TYPES__V1__POINT__INIT, *pts[] = {&pt};
    pt.value = 0.1;
    pt.timestamp = 1796022000123;
    series.n_points = 1;
    series.points = pts;
    const ProtobufCMessage *msgs[] = {&lv.base, &sts.base, &series.base};
    const uint8_t sel[] = {1 << 1, 4 << 1, 3 << 1};
    for (int k = 0; k < 3; k++)
        for (int codec = 0; codec < 2; codec++) {
            ps_buf_reset(&b);
            ps_pb_encode(codec ? PS_PB_JSON : PS_PB_BINARY, msgs[k], &b);
            seed(dir, i++, (uint8_t)(sel[k] | codec), &b);
        }
    ps_buf_dispose(&b);
    return 0;
}
