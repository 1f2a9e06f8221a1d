/*
 * fuzz_remote.c - libFuzzer target for the remote-write codec (proto/remote.c).
 *
 * The first input byte picks the version (bit 0: 1.0 or 2.0) and whether the rest is taken as the
 * snappy body itself (bit 1 clear) or as the uncompressed protobuf, compressed here (bit 1 set:
 * mutations then reach the protobuf and validation layers instead of dying in snappy). Limits are
 * the defaults with max_uncompressed lowered to 8 MiB. A failure must be a clean PS_EINVAL or
 * PS_ETOOBIG with a message. A success must hold only valid series (sorted, valid labels,
 * __name__ present), is re-encoded in both versions and decoded again, which must give the same
 * series. A 1.0 body is also decoded by each path alone (proto/remote_int.h): the direct decoder
 * takes only bodies protobuf-c accepts, with the same result bit for bit; where it declines, the
 * answer is protobuf-c's, code and message. Built and run by build.sh / run.sh in this folder
 * (seeds: the captured Prometheus bodies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/remote.h"
#include "proto/remote_int.h"

#define PS_FUZZ_NAME "fuzz_remote"
#define PS_FUZZ_SNAPPY
#include "fuzzutil.h"

static void check_valid(const ps_remote_write_t *w)
{
    for (uint32_t i = 0; i < w->nseries; i++) {
        const ps_labels_t *ls = &w->series[i].labels;
        CHECK(ls->n >= 1 && ls->n <= PS_LABELS_MAX, "series %u has %u labels", i, ls->n);
        CHECK(ps_labels_value(ls, "__name__") != NULL, "series %u without __name__", i);
        for (uint32_t k = 0; k < ls->n; k++) {
            const ps_label_pair_t *p = &ls->pairs[k];
            CHECK(ps_label_name_utf8_valid(p->name, p->nlen) && p->vlen > 0 && ps_utf8_valid(p->value, p->vlen) &&
                      strlen(p->name) == p->nlen && strlen(p->value) == p->vlen,
                  "series %u label %u", i, k);
            if (k > 0)
                CHECK(strcmp(ls->pairs[k - 1].name, p->name) < 0, "series %u labels not sorted", i);
        }
        CHECK(w->series[i].meta < (int32_t)w->nmetadata, "series %u meta", i);
    }
}

static void check_same(const ps_remote_write_t *a, const ps_remote_write_t *b)
{
    CHECK(a->nseries == b->nseries, "nseries %u vs %u", a->nseries, b->nseries);
    for (uint32_t i = 0; i < a->nseries; i++) {
        const ps_remote_series_t *x = &a->series[i], *y = &b->series[i];
        CHECK(ps_labels_cmp(&x->labels, &y->labels) == 0, "series %u labels", i);
        CHECK(x->nsamples == y->nsamples, "series %u nsamples", i);
        for (uint32_t k = 0; k < x->nsamples; k++) {
            double zero = 0.0;
            /* -0.0 comes back as 0.0 (proto3 omits zero doubles) */
            int same = memcmp(&x->samples[k].v, &y->samples[k].v, 8) == 0 ||
                       (x->samples[k].v == zero && y->samples[k].v == zero);
            CHECK(x->samples[k].t_ms == y->samples[k].t_ms && same, "series %u sample %u", i, k);
        }
    }
}

/* a and b, bit for bit: counts, labels (NUL-terminated at their lengths), samples, metadata */
static void check_identical(const ps_remote_write_t *a, const ps_remote_write_t *b)
{
    CHECK(a->version == b->version && a->nseries == b->nseries && a->nmetadata == b->nmetadata &&
              a->nsamples == b->nsamples && a->nhistograms == b->nhistograms && a->nexemplars == b->nexemplars,
          "the counts differ");
    for (uint32_t i = 0; i < a->nseries; i++) {
        const ps_remote_series_t *x = &a->series[i], *y = &b->series[i];
        CHECK(x->labels.n == y->labels.n && x->nsamples == y->nsamples && x->nhistograms == y->nhistograms &&
                  x->nexemplars == y->nexemplars && x->meta == y->meta && x->created_ms == y->created_ms,
              "series %u counts", i);
        for (uint32_t k = 0; k < x->labels.n; k++) {
            const ps_label_pair_t *p = &x->labels.pairs[k], *q = &y->labels.pairs[k];
            CHECK(p->nlen == q->nlen && p->vlen == q->vlen && memcmp(p->name, q->name, p->nlen + 1) == 0 &&
                      memcmp(p->value, q->value, p->vlen + 1) == 0,
                  "series %u label %u", i, k);
        }
        CHECK(x->nsamples == 0 || memcmp(x->samples, y->samples, x->nsamples * sizeof(*x->samples)) == 0,
              "series %u samples", i);
    }
    for (uint32_t i = 0; i < a->nmetadata; i++) {
        const ps_remote_metadata_t *x = &a->metadata[i], *y = &b->metadata[i];
        CHECK(x->type == y->type && strcmp(x->family, y->family) == 0 && strcmp(x->help, y->help) == 0 &&
                  strcmp(x->unit, y->unit) == 0,
              "metadata %u", i);
    }
}

/* The two 1.0 paths against each other and against what ps_remote_write_decode answered (rc, w). */
static void check_paths(const uint8_t *body, size_t n, const ps_remote_limits_t *lim, int rc, const ps_err_t *err,
                        const ps_remote_write_t *w, ps_arena_t *arena)
{
    ps_remote_write_t d, r;
    ps_err_t e1, e2;
    ps_err_clear(&e1);
    ps_err_clear(&e2);
    int rd = ps_remote_write_decode_path(body, n, 1, lim, arena, &d, PS_REMOTE_DECODE_DIRECT, &e1);
    int rr = ps_remote_write_decode_path(body, n, 1, lim, arena, &r, PS_REMOTE_DECODE_PROTOBUF_C, &e2);
    CHECK(rr == rc, "protobuf-c's path gave %d, the decoder %d", rr, rc);
    CHECK(rc == 0 || strcmp(e2.msg, err->msg) == 0, "messages differ: \"%s\" / \"%s\"", e2.msg, err->msg);
    if (rd == 0) {
        CHECK(rr == 0, "the direct decoder took a body protobuf-c refuses: %s", e2.msg);
        check_identical(&d, &r);
    } else {
        CHECK(rd == PS_REMOTE_DECLINED || rd == rr, "the direct decoder gave %d", rd);
        CHECK(d.nseries == 0, "a declined body left output");
    }
    if (rc == 0)
        check_identical(w, &r);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_remote_limits_t lim;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_buf_t enc = PS_BUF_INIT;
    ps_remote_write_t w, v;
    ps_err_t err;
    char *z;

    if (size == 0)
        return 0;
    int version = (data[0] & 1) ? 2 : 1;
    const uint8_t *body;
    size_t n;
    ps_fuzz_body(data, size, &body, &n, &z);
    ps_remote_limits_default(&lim);
    lim.max_uncompressed = 8u << 20;
    ps_err_clear(&err);
    int rc = ps_remote_write_decode(body, n, version, &lim, &arena, &w, &err);
    if (version == 1)
        check_paths(body, n, &lim, rc, &err, &w, &arena);
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        CHECK(w.nseries == 0 && w.nmetadata == 0, "a failure left output");
        goto Exit;
    }
    check_valid(&w);
    for (int ver = 1; ver <= 2; ver++) {
        ps_buf_reset(&enc);
        CHECK(ps_remote_write_encode(&w, ver, &enc, &err) == 0, "encode %d: %s", ver, err.msg);
        lim.max_uncompressed = SIZE_MAX / 4;
        rc = ps_remote_write_decode(enc.data, enc.len, ver, &lim, &arena, &v, &err);
        CHECK(rc == 0, "decoding the re-encoded request (version %d) failed: %s", ver, err.msg);
        check_same(&w, &v);
    }
Exit:
    free(z);
    ps_buf_dispose(&enc);
    ps_arena_dispose(&arena);
    return 0;
}
