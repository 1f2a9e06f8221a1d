/*
 * fuzz_remote_read.c - libFuzzer target for the remote-read request decoder (proto/remote_read.c).
 *
 * The first input byte says whether the rest is the snappy body itself (bit 1 clear) or the
 * uncompressed protobuf, compressed here (bit 1 set: mutations then reach the protobuf and
 * validation layers). Limits are the defaults with max_uncompressed lowered to 8 MiB. A failure
 * must be a clean PS_EINVAL or PS_ETOOBIG with a message and leave nothing decoded. A success must
 * hold only valid matchers (type 0..3, a nonempty name, NUL-free UTF-8 strings whose lengths are
 * right), negotiate to SAMPLES or STREAMED_XOR_CHUNKS or fail with a message, and re-encode
 * (ps_read_request_encode) to a body that decodes to the same request. Built and run by build.sh /
 * run.sh in this folder (seeds: the captured Prometheus read requests).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/remote_read.h"

#define PS_FUZZ_NAME "fuzz_remote_read"
#define PS_FUZZ_SNAPPY
#include "fuzzutil.h"

static void check_valid(const ps_read_request_t *r)
{
    for (uint32_t i = 0; i < r->nqueries; i++) {
        const ps_read_query_t *q = &r->queries[i];
        for (uint32_t k = 0; k < q->nmatchers; k++) {
            const ps_read_matcher_t *m = &q->matchers[k];
            CHECK(m->type >= PS_READ_EQ && m->type <= PS_READ_NRE, "query %u matcher %u type %d", i, k, m->type);
            CHECK(m->nlen > 0 && strlen(m->name) == m->nlen && ps_utf8_valid(m->name, m->nlen), "query %u matcher %u name",
                  i, k);
            CHECK(strlen(m->value) == m->vlen && ps_utf8_valid(m->value, m->vlen), "query %u matcher %u value", i, k);
        }
        CHECK(q->hints.func != NULL, "query %u func", i);
    }
}

static void check_same(const ps_read_request_t *a, const ps_read_request_t *b)
{
    CHECK(a->nqueries == b->nqueries && a->naccepted == b->naccepted, "counts");
    for (uint32_t k = 0; k < a->naccepted; k++)
        CHECK(a->accepted[k] == b->accepted[k], "accepted[%u]", k);
    for (uint32_t i = 0; i < a->nqueries; i++) {
        const ps_read_query_t *x = &a->queries[i], *y = &b->queries[i];
        CHECK(x->start_ms == y->start_ms && x->end_ms == y->end_ms && x->nmatchers == y->nmatchers, "query %u", i);
        for (uint32_t k = 0; k < x->nmatchers; k++)
            CHECK(x->matchers[k].type == y->matchers[k].type && strcmp(x->matchers[k].name, y->matchers[k].name) == 0 &&
                      strcmp(x->matchers[k].value, y->matchers[k].value) == 0,
                  "query %u matcher %u", i, k);
        CHECK(x->hints.present == y->hints.present && x->hints.step_ms == y->hints.step_ms &&
                  x->hints.start_ms == y->hints.start_ms && x->hints.end_ms == y->hints.end_ms &&
                  x->hints.range_ms == y->hints.range_ms && x->hints.by == y->hints.by &&
                  strcmp(x->hints.func, y->hints.func) == 0 && x->hints.ngrouping == y->hints.ngrouping,
              "query %u hints", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_read_limits_t lim;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_buf_t enc = PS_BUF_INIT;
    ps_read_request_t r, back;
    ps_read_type_t type;
    ps_err_t err;
    char *z;

    if (size == 0)
        return 0;
    const uint8_t *body;
    size_t n;
    ps_fuzz_body(data, size, &body, &n, &z);
    ps_read_limits_default(&lim);
    lim.max_uncompressed = 8u << 20;
    ps_err_clear(&err);
    int rc = ps_read_request_decode(body, n, &lim, &arena, &r, &err);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        CHECK(r.nqueries == 0 && r.naccepted == 0, "a failure left output");
        goto Exit;
    }
    check_valid(&r);
    rc = ps_read_negotiate(&r, &type, &err);
    CHECK(rc == 0 ? (type == PS_READ_SAMPLES || type == PS_READ_STREAMED_XOR_CHUNKS) : (rc == PS_EINVAL && err.msg[0]),
          "negotiate %d", rc);
    ps_read_request_encode(&r, &enc);
    lim.max_uncompressed = SIZE_MAX / 4;
    rc = ps_read_request_decode(enc.data, enc.len, &lim, &arena, &back, &err);
    CHECK(rc == 0, "decoding the re-encoded request failed: %s", err.msg);
    check_same(&r, &back);
Exit:
    free(z);
    ps_buf_dispose(&enc);
    ps_arena_dispose(&arena);
    return 0;
}
