/*
 * fuzz_remote.c - libFuzzer target for the remote-write codec (proto/remote.c).
 *
 * The first input byte picks the version (bit 0: 1.0 or 2.0) and whether the rest is taken as the
 * snappy body itself (bit 1 clear) or as the uncompressed protobuf, compressed here (bit 1 set:
 * mutations then reach the protobuf and validation layers instead of dying in snappy). Limits are
 * the defaults with max_uncompressed lowered to 8 MiB. A failure must be a clean PS_EINVAL or
 * PS_ETOOBIG with a message. A success must hold only valid series (sorted, valid labels,
 * __name__ present), is re-encoded in both versions and decoded again, which must give the same
 * series. Built and run by build.sh / run.sh in this folder (seeds: the captured Prometheus bodies).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/remote.h"

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
