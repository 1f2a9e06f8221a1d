/*
 * test_remote.c - unit tests for proto/remote.c: the four remote-write bodies Prometheus 2.42 sent
 * ($PS_TESTDATA/prometheus, checked series by series against the decoded .json next to each),
 * 2.0 bodies built here byte by byte from the spec and by ps_remote_write_encode, round trips, and
 * every kind of bad input with its exact code and message; truncation at every byte of a real body.
 * (Decode speed: bench/remote.c.)
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

#include "core/varint.h"
#include "proto/remote.h"
#include "proto/remote_int.h"

/* ---- helpers -------------------------------------------------------------------------------- */

/* A tiny protobuf writer for hand-made bodies (varints: core/varint.h). */
static void put_tag(ps_buf_t *b, unsigned num, unsigned wt) { ps_put_uvarint(b, (uint64_t)num << 3 | wt); }
static void put_bytes(ps_buf_t *b, unsigned num, const void *p, size_t n)
{
    put_tag(b, num, 2);
    ps_put_uvarint(b, n);
    ps_buf_append(b, p, n);
}
static void put_str(ps_buf_t *b, unsigned num, const char *s) { put_bytes(b, num, s, strlen(s)); }
static void put_msg(ps_buf_t *b, unsigned num, ps_buf_t *sub)
{
    put_bytes(b, num, sub->data, sub->len);
    ps_buf_reset(sub);
}
static void put_double(ps_buf_t *b, unsigned num, double v)
{
    uint64_t u;
    memcpy(&u, &v, 8);
    put_tag(b, num, 1);
    for (int i = 0; i < 8; i++)
        ps_buf_putc(b, (uint8_t)(u >> (8 * i)));
}
static void put_int(ps_buf_t *b, unsigned num, uint64_t v)
{
    put_tag(b, num, 0);
    ps_put_uvarint(b, v);
}

/* snappy-compresses raw into out (replacing its contents). */
static void compress(const ps_buf_t *raw, ps_buf_t *out) { ps_test_snappy(raw->data, raw->len, out); }

/* Decodes the uncompressed protobuf raw (compressed here) and expects code rc and message msg. */
static void expect_raw(const ps_buf_t *raw, int version, int rc, const char *msg)
{
    ps_buf_t body = PS_BUF_INIT;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    compress(raw, &body);
    ps_err_clear(&err);
    int got = ps_remote_write_decode(body.data, body.len, version, NULL, &arena, &w, &err);
    if (got != rc || (msg != NULL && strcmp(err.msg, msg) != 0))
        fail_msg("got %d \"%s\"\nwant %d \"%s\"", got, err.msg, rc, msg ? msg : "");
    if (rc != 0)
        assert_int_equal(w.nseries, 0);
    ps_buf_dispose(&body);
    ps_arena_dispose(&arena);
}

/* A 1.0 series with the labels given as name, value, ..., NULL (written as given) and one sample. */
static void v1_series(ps_buf_t *req, ...)
{
    ps_buf_t ts = PS_BUF_INIT, sub = PS_BUF_INIT;
    va_list ap;
    va_start(ap, req);
    for (const char *n; (n = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        put_str(&sub, 1, n);
        put_str(&sub, 2, v);
        put_msg(&ts, 1, &sub);
    }
    va_end(ap);
    put_double(&sub, 1, 1.5);
    put_int(&sub, 2, 1000);
    put_msg(&ts, 2, &sub);
    put_msg(req, 1, &ts);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
}

static void expect_v1_labels(int rc, const char *msg, ...)
{
    ps_buf_t req = PS_BUF_INIT, ts = PS_BUF_INIT, sub = PS_BUF_INIT;
    v1_series(&req, "__name__", "ok", NULL); /* timeseries[0] is fine */
    va_list ap;
    va_start(ap, msg);
    for (const char *n; (n = va_arg(ap, const char *)) != NULL;) {
        const char *v = va_arg(ap, const char *);
        put_str(&sub, 1, n);
        put_str(&sub, 2, v);
        put_msg(&ts, 1, &sub);
    }
    va_end(ap);
    put_msg(&req, 1, &ts);
    expect_raw(&req, 1, rc, msg);
    ps_buf_dispose(&req);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
}

static void check_against_json(const ps_remote_write_t *w, json_t *j)
{
    json_t *tss = json_object_get(j, "timeseries");
    assert_true(json_is_array(tss));
    assert_int_equal(w->nseries, json_array_size(tss));
    uint64_t nsamples = 0;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const ps_remote_series_t *s = &w->series[i];
        json_t *t = json_array_get(tss, i);
        json_t *labels = json_object_get(t, "labels");
        assert_int_equal(s->labels.n, json_object_size(labels));
        for (uint32_t k = 0; k < s->labels.n; k++) {
            const ps_label_pair_t *p = &s->labels.pairs[k];
            assert_int_equal(strlen(p->name), p->nlen);
            assert_int_equal(strlen(p->value), p->vlen);
            json_t *v = json_object_get(labels, p->name);
            if (v == NULL || strcmp(json_string_value(v), p->value) != 0)
                fail_msg("series %u label %s=%s not in the JSON", i, p->name, p->value);
            if (k > 0)
                assert_true(strcmp(s->labels.pairs[k - 1].name, p->name) < 0);
        }
        json_t *samples = json_object_get(t, "samples");
        assert_int_equal(s->nsamples, json_array_size(samples));
        for (uint32_t k = 0; k < s->nsamples; k++) {
            json_t *x = json_array_get(samples, k);
            assert_int_equal(s->samples[k].t_ms, json_integer_value(json_object_get(x, "timestamp_ms")));
            json_t *v = json_object_get(x, "value");
            if (json_is_number(v)) {
                if (s->samples[k].v != json_number_value(v))
                    fail_msg("series %u sample %u: %.17g, want %.17g", i, k, s->samples[k].v, json_number_value(v));
            } else { /* the decoder writes NaN and the infinities as strings */
                const char *str = json_string_value(v);
                assert_non_null(str);
                uint64_t bits;
                memcpy(&bits, &s->samples[k].v, 8);
                if (strcmp(str, "NaN") == 0 || strstr(str, "stale") != NULL)
                    assert_true(isnan(s->samples[k].v));
                else
                    fail_msg("series %u sample %u: unexpected value %s", i, k, str);
            }
        }
        nsamples += s->nsamples;
        assert_int_equal(s->nexemplars, json_integer_value(json_object_get(t, "exemplars")));
        assert_int_equal(s->nhistograms, json_integer_value(json_object_get(t, "histograms")));
        assert_int_equal(s->meta, -1);
    }
    assert_int_equal(w->nsamples, nsamples);
    json_t *md = json_object_get(j, "metadata");
    assert_int_equal(w->nmetadata, md != NULL ? json_array_size(md) : 0);
    for (uint32_t i = 0; i < w->nmetadata; i++) {
        json_t *m = json_array_get(md, i);
        const ps_remote_metadata_t *d = &w->metadata[i];
        const char *type = json_string_value(json_object_get(m, "type"));
        char lower[32];
        size_t k;
        for (k = 0; type[k] && k < sizeof(lower) - 1; k++)
            lower[k] = (char)(type[k] >= 'A' && type[k] <= 'Z' ? type[k] + 32 : type[k]);
        lower[k] = '\0';
        assert_string_equal(ps_metric_type_name(d->type), lower);
        assert_string_equal(d->family, json_string_value(json_object_get(m, "metric_family_name")));
        json_t *help = json_object_get(m, "help"), *unit = json_object_get(m, "unit");
        assert_string_equal(d->help, help ? json_string_value(help) : "");
        assert_string_equal(d->unit, unit ? json_string_value(unit) : "");
    }
}

static const char *const bodies[] = {"remote-write-01", "remote-write-02", "remote-write-03",
                                     "remote-write-metadata-01"};

/* The captured body bodies[b] (.bin), n bytes; free it. */
static uint8_t *read_body(size_t b, size_t *n)
{
    char name[64];
    snprintf(name, sizeof(name), "%s.bin", bodies[b]);
    return ps_test_read_prom(name, n);
}

/* ---- the captured bodies -------------------------------------------------------------------- */

static void test_real_bodies(void **state)
{
    (void)state;
    static const uint32_t want_series[] = {18, 18, 18, 0}, want_meta[] = {0, 0, 0, 8};
    for (size_t b = 0; b < 4; b++) {
        char name[64];
        size_t n;
        snprintf(name, sizeof(name), "%s.bin", bodies[b]);
        uint8_t *body = ps_test_read_prom(name, &n);
        snprintf(name, sizeof(name), "%s.json", bodies[b]);
        json_t *j = ps_test_read_prom_json(name);
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t w;
        ps_err_t err;
        int rc = ps_remote_write_decode(body, n, 1, NULL, &arena, &w, &err);
        if (rc != 0)
            fail_msg("%s: %s", bodies[b], err.msg);
        assert_int_equal(w.version, 1);
        assert_int_equal(w.nseries, want_series[b]);
        assert_int_equal(w.nmetadata, want_meta[b]);
        assert_int_equal(w.nsamples, want_series[b]); /* one scrape: one sample per series */
        assert_int_equal(w.nhistograms, 0);
        assert_int_equal(w.nexemplars, 0);
        check_against_json(&w, j);
        json_decref(j);
        ps_arena_dispose(&arena);
        free(body);
    }
}

/* Facts straight from the README and the JSON, to make the comparison above not vacuous. */
static void test_real_body_facts(void **state)
{
    (void)state;
    size_t n;
    uint8_t *body = ps_test_read_prom("remote-write-01.bin", &n);
    assert_int_equal(n, 696);
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    assert_int_equal(ps_remote_write_decode(body, n, 1, NULL, &arena, &w, &err), 0);
    const ps_remote_series_t *s = &w.series[0];
    assert_int_equal(s->labels.n, 6);
    assert_string_equal(s->labels.pairs[0].name, "__name__");
    assert_string_equal(s->labels.pairs[0].value, "gotarget_kernel_iterations_total");
    assert_string_equal(ps_labels_value(&s->labels, "kernel"), "fib");
    assert_string_equal(ps_labels_value(&s->labels, "replica"), "fixture");
    assert_int_equal(s->samples[0].t_ms, 1796021924802LL);
    assert_true(s->samples[0].v == 0.0);
    assert_true(w.series[3].samples[0].v == 80965.0);
    ps_arena_dispose(&arena);
    free(body);

    body = ps_test_read_prom("remote-write-metadata-01.bin", &n);
    assert_int_equal(ps_remote_write_decode(body, n, 1, NULL, &arena, &w, &err), 0);
    assert_int_equal(w.nmetadata, 8);
    assert_int_equal(w.metadata[3].type, PS_METRIC_GAUGE);
    assert_string_equal(w.metadata[3].family, "gotarget_goroutines");
    assert_string_equal(w.metadata[3].help, "Current number of goroutines.");
    assert_string_equal(w.metadata[3].unit, "");
    assert_int_equal(w.metadata[0].type, PS_METRIC_COUNTER);
    ps_arena_dispose(&arena);
    free(body);
}

static void assert_same(const ps_remote_write_t *a, const ps_remote_write_t *b)
{
    assert_int_equal(a->nseries, b->nseries);
    for (uint32_t i = 0; i < a->nseries; i++) {
        const ps_remote_series_t *x = &a->series[i], *y = &b->series[i];
        assert_int_equal(ps_labels_cmp(&x->labels, &y->labels), 0);
        assert_int_equal(x->nsamples, y->nsamples);
        for (uint32_t k = 0; k < x->nsamples; k++) {
            assert_int_equal(x->samples[k].t_ms, y->samples[k].t_ms);
            assert_memory_equal(&x->samples[k].v, &y->samples[k].v, 8);
        }
    }
}

/* Real bodies: 1.0 -> ps_remote_write_encode(1) and (2) -> decode: the same series. */
static void test_round_trip(void **state)
{
    (void)state;
    for (size_t b = 0; b < 3; b++) {
        size_t n;
        uint8_t *body = read_body(b, &n);
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t w, w1, w2;
        ps_buf_t e1 = PS_BUF_INIT, e2 = PS_BUF_INIT;
        ps_err_t err;
        assert_int_equal(ps_remote_write_decode(body, n, 1, NULL, &arena, &w, &err), 0);
        assert_int_equal(ps_remote_write_encode(&w, 1, &e1, &err), 0);
        assert_int_equal(ps_remote_write_encode(&w, 2, &e2, &err), 0);
        assert_int_equal(ps_remote_write_decode(e1.data, e1.len, 1, NULL, &arena, &w1, &err), 0);
        int rc = ps_remote_write_decode(e2.data, e2.len, 2, NULL, &arena, &w2, &err);
        if (rc != 0)
            fail_msg("%s", err.msg);
        assert_same(&w, &w1);
        assert_same(&w, &w2);
        assert_int_equal(w2.version, 2);
        assert_int_equal(w2.nmetadata, 0);
        /* the wrong version: a 1.0 body read as 2.0 and the reverse are noticed */
        rc = ps_remote_write_decode(body, n, 2, NULL, &arena, &w2, &err);
        assert_int_equal(rc, PS_EINVAL);
        assert_string_equal(err.msg, "field 1 is reserved in a 2.0 request (is this a 1.0 prometheus.WriteRequest?)");
        rc = ps_remote_write_decode(e2.data, e2.len, 1, NULL, &arena, &w1, &err);
        assert_int_equal(rc, PS_EINVAL);
        assert_string_equal(err.msg,
                            "field 4 is not part of a 1.0 request (is this a 2.0 io.prometheus.write.v2.Request?)");
        ps_buf_dispose(&e1);
        ps_buf_dispose(&e2);
        ps_arena_dispose(&arena);
        free(body);
    }
}

/* ---- the direct 1.0 decoder against protobuf-c ---------------------------------------------- */

/* Everything of two decoded requests, bit for bit (strings NUL-terminated at their lengths). */
static void assert_identical(const ps_remote_write_t *a, const ps_remote_write_t *b)
{
    assert_int_equal(a->version, b->version);
    assert_int_equal(a->nseries, b->nseries);
    assert_int_equal(a->nmetadata, b->nmetadata);
    assert_int_equal(a->nsamples, b->nsamples);
    assert_int_equal(a->nhistograms, b->nhistograms);
    assert_int_equal(a->nexemplars, b->nexemplars);
    for (uint32_t i = 0; i < a->nseries; i++) {
        const ps_remote_series_t *x = &a->series[i], *y = &b->series[i];
        assert_int_equal(x->labels.n, y->labels.n);
        for (uint32_t k = 0; k < x->labels.n; k++) {
            const ps_label_pair_t *p = &x->labels.pairs[k], *q = &y->labels.pairs[k];
            assert_int_equal(p->nlen, q->nlen);
            assert_int_equal(p->vlen, q->vlen);
            assert_memory_equal(p->name, q->name, p->nlen + 1);
            assert_memory_equal(p->value, q->value, p->vlen + 1);
        }
        assert_int_equal(x->nsamples, y->nsamples);
        if (x->nsamples)
            assert_memory_equal(x->samples, y->samples, x->nsamples * sizeof(*x->samples));
        assert_int_equal(x->nhistograms, y->nhistograms);
        assert_int_equal(x->nexemplars, y->nexemplars);
        assert_int_equal(x->meta, y->meta);
        assert_int_equal(x->created_ms, y->created_ms);
    }
    for (uint32_t i = 0; i < a->nmetadata; i++) {
        const ps_remote_metadata_t *x = &a->metadata[i], *y = &b->metadata[i];
        assert_int_equal(x->type, y->type);
        assert_string_equal(x->family, y->family);
        assert_string_equal(x->help, y->help);
        assert_string_equal(x->unit, y->unit);
    }
}

/* The snappy body (n bytes) as 1.0 by the three paths: the direct decoder accepts only what
 * protobuf-c accepts, with the same result; where it declines, ps_remote_write_decode gives
 * protobuf-c's code and message. Returns whether the direct decoder took it. */
static bool same_by_both_paths(const void *body, size_t n, const ps_remote_limits_t *lim)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t d, r, any;
    ps_err_t e1, e2, e3;
    ps_err_clear(&e1);
    ps_err_clear(&e2);
    ps_err_clear(&e3);
    int rd = ps_remote_write_decode_path(body, n, 1, lim, &arena, &d, PS_REMOTE_DECODE_DIRECT, &e1);
    int rr = ps_remote_write_decode_path(body, n, 1, lim, &arena, &r, PS_REMOTE_DECODE_PROTOBUF_C, &e2);
    int ra = ps_remote_write_decode(body, n, 1, lim, &arena, &any, &e3);
    assert_true(rd == 0 || rd == PS_REMOTE_DECLINED || rd == rr); /* snappy errors come before either */
    if (rd == 0) {
        if (rr != 0)
            fail_msg("the direct decoder took a body protobuf-c refuses: %s", e2.msg);
        assert_identical(&d, &r);
    } else {
        assert_int_equal(d.nseries, 0);
    }
    assert_int_equal(ra, rr);
    if (rr != 0)
        assert_string_equal(e3.msg, e2.msg);
    else
        assert_identical(&any, &r);
    ps_arena_dispose(&arena);
    return rd == 0;
}

static bool same_by_both_paths_raw(const ps_buf_t *raw)
{
    ps_buf_t body = PS_BUF_INIT;
    compress(raw, &body);
    bool took = same_by_both_paths(body.data, body.len, NULL);
    ps_buf_dispose(&body);
    return took;
}

/* A request of three series in Prometheus' layout, with what the direct decoder must read as
 * protobuf-c does: a label's value before its name, a name given twice (the last one counts),
 * start_timestamp, a histogram, a NaN, a 10-byte negative timestamp, UTF-8 and a name ending the
 * buffer. */
static void direct_request(ps_buf_t *req)
{
    ps_buf_t ts = PS_BUF_INIT, sub = PS_BUF_INIT;
    v1_series(req, "__name__", "up", "instance", "h:9100", "job", "node", NULL);
    put_str(&sub, 2, "c\xc3\xa9");
    put_str(&sub, 1, "__name__");
    put_msg(&ts, 1, &sub);
    put_str(&sub, 1, "zz");
    put_str(&sub, 1, "env");
    put_str(&sub, 2, "prod");
    put_msg(&ts, 1, &sub);
    put_int(&sub, 2, (uint64_t)-5);
    put_double(&sub, 1, NAN);
    put_int(&sub, 3, 77);
    put_msg(&ts, 2, &sub);
    put_str(&ts, 4, "\x01\x02");
    put_double(&sub, 1, -2.25);
    put_msg(&ts, 2, &sub);
    put_msg(req, 1, &ts);
    put_str(&sub, 1, "__name__");
    put_str(&sub, 2, "last");
    put_msg(&ts, 1, &sub);
    put_msg(req, 1, &ts);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
}

static void test_direct_against_protobuf_c(void **state)
{
    (void)state;
    /* the captured bodies: the direct decoder takes the series, leaves metadata to protobuf-c */
    for (size_t b = 0; b < 4; b++) {
        size_t n;
        uint8_t *body = read_body(b, &n);
        assert_int_equal(same_by_both_paths(body, n, NULL), b < 3);
        for (size_t cut = 0; cut < n; cut += 7) /* truncated: snappy's errors, by both paths */
            assert_false(same_by_both_paths(body, cut, NULL));
        free(body);
    }

    ps_buf_t req = PS_BUF_INIT, bad = PS_BUF_INIT;
    direct_request(&req);
    assert_true(same_by_both_paths_raw(&req));
    {
        ps_buf_t body = PS_BUF_INIT;
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t w;
        ps_err_t err;
        compress(&req, &body);
        assert_int_equal(ps_remote_write_decode_path(body.data, body.len, 1, NULL, &arena, &w,
                                                     PS_REMOTE_DECODE_DIRECT, &err), 0);
        assert_int_equal(w.nseries, 3);
        assert_int_equal(w.nsamples, 3);
        assert_int_equal(w.nhistograms, 1);
        assert_string_equal(w.series[1].labels.pairs[0].value, "c\xc3\xa9");
        assert_string_equal(w.series[1].labels.pairs[1].name, "env");
        assert_int_equal(w.series[1].samples[0].t_ms, -5);
        assert_true(isnan(w.series[1].samples[0].v));
        assert_int_equal(w.series[1].samples[1].t_ms, 0);
        assert_true(w.series[1].samples[1].v == -2.25);
        assert_string_equal(w.series[2].labels.pairs[0].value, "last");
        assert_int_equal(w.series[2].nsamples, 0);
        /* the limits decline (protobuf-c's path says which) */
        ps_remote_limits_t lim;
        ps_remote_limits_default(&lim);
        lim.max_series = 2;
        assert_false(same_by_both_paths(body.data, body.len, &lim));
        ps_remote_limits_default(&lim);
        lim.max_samples = 2;
        assert_false(same_by_both_paths(body.data, body.len, &lim));
        ps_buf_dispose(&body);
        ps_arena_dispose(&arena);
    }

    /* every byte of the request changed to each of these values, and every length cut */
    static const uint8_t vals[] = {0x00, 0x01, 0x02, 0x08, 0x0a, 0x12, 0x1a, 0x22, 0x2a, 0x7f, 0x80, 0xc3, 0xff};
    unsigned took = 0, tried = 0;
    for (size_t i = 0; i < req.len; i++) {
        for (size_t k = 0; k < sizeof(vals); k++) {
            ps_buf_reset(&bad);
            ps_buf_append(&bad, req.data, req.len);
            bad.data[i] = vals[k];
            took += same_by_both_paths_raw(&bad);
            tried++;
        }
        ps_buf_reset(&bad);
        ps_buf_append(&bad, req.data, i);
        took += same_by_both_paths_raw(&bad);
        tried++;
    }
    /* the direct decoder takes a good part of them (the value bytes), not all */
    assert_true(took > tried / 10 && took < tried / 2);

    /* what it leaves to protobuf-c, accepted there: exemplars, metadata, an unknown field, a key
     * of two bytes */
    static const char *const extra[] = {"\x1a\x00", "\x1a\x04\x11\x00\x00\x00", "\x30\x01", "\x8a\x00"};
    static const size_t extra_len[] = {2, 2, 2, 2};
    for (size_t k = 0; k < 4; k++) {
        ps_buf_t ts = PS_BUF_INIT;
        ps_buf_reset(&bad);
        v1_series(&bad, "__name__", "x", NULL);
        if (k == 0) { /* an empty exemplar inside the series */
            ps_buf_t sub = PS_BUF_INIT;
            put_str(&sub, 1, "__name__");
            put_str(&sub, 2, "y");
            put_msg(&ts, 1, &sub);
            ps_buf_append(&ts, extra[k], extra_len[k]);
            put_msg(&bad, 1, &ts);
            ps_buf_dispose(&sub);
        } else if (k == 1) { /* metadata {type UNKNOWN, family "a"} */
            ps_buf_append(&bad, "\x1a\x03\x12\x01\x61", 5);
        } else if (k == 3) { /* a series whose label has the key 8a 00 (field 1, two bytes) */
            ps_buf_t sub = PS_BUF_INIT;
            put_str(&sub, 1, "__name__");
            put_str(&sub, 2, "y");
            ps_buf_append(&ts, extra[k], extra_len[k]);
            ps_put_uvarint(&ts, sub.len);
            ps_buf_append(&ts, sub.data, sub.len);
            put_msg(&bad, 1, &ts);
            ps_buf_dispose(&sub);
        } else {
            ps_buf_append(&bad, extra[k], extra_len[k]);
        }
        assert_false(same_by_both_paths_raw(&bad));
        ps_buf_t body = PS_BUF_INIT;
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t w;
        ps_err_t err;
        compress(&bad, &body);
        int rc = ps_remote_write_decode(body.data, body.len, 1, NULL, &arena, &w, &err);
        if (rc != 0)
            fail_msg("extra %zu: %s", k, err.msg);
        assert_int_equal(w.nseries, k == 0 || k == 3 ? 2 : 1);
        ps_buf_dispose(&body);
        ps_buf_dispose(&ts);
        ps_arena_dispose(&arena);
    }
    ps_buf_dispose(&req);
    ps_buf_dispose(&bad);
}

/* Stale markers and other NaNs keep their bit pattern through encode and decode (both versions).
 * (-0.0 does not: proto3 omits a double that compares equal to 0, in Go's encoder as in protobuf-c.) */
static void test_stale_nan_bits(void **state)
{
    (void)state;
    ps_label_pair_t pairs[] = {{"__name__", "up", 8, 2}, {"job", "x", 3, 1}};
    uint64_t bits[] = {PS_REMOTE_STALE_NAN_BITS, UINT64_C(0x7ff8000000000001), UINT64_C(0x7ff0000000000000),
                       UINT64_C(0xfff0000000000000)};
    ps_remote_sample_t samples[4];
    for (int k = 0; k < 4; k++) {
        samples[k].t_ms = -5 + k; /* negative timestamps too */
        memcpy(&samples[k].v, &bits[k], 8);
    }
    ps_remote_series_t s = {{2, pairs, 0}, samples, 4, 0, 0, -1, 0};
    ps_remote_write_t w = {1, &s, 1, NULL, 0, 4, 0, 0};
    for (int version = 1; version <= 2; version++) {
        ps_buf_t e = PS_BUF_INIT;
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t d;
        ps_err_t err;
        assert_int_equal(ps_remote_write_encode(&w, version, &e, &err), 0);
        assert_int_equal(ps_remote_write_decode(e.data, e.len, version, NULL, &arena, &d, &err), 0);
        assert_int_equal(d.series[0].nsamples, 4);
        for (int k = 0; k < 4; k++) {
            uint64_t got;
            memcpy(&got, &d.series[0].samples[k].v, 8);
            assert_int_equal(got, bits[k]);
            assert_int_equal(d.series[0].samples[k].t_ms, -5 + k);
        }
        ps_buf_dispose(&e);
        ps_arena_dispose(&arena);
    }
}

/* ---- 2.0 built by hand from the spec ---------------------------------------------------------- */

/* symbols "", "__name__", "up", "job", "api", "Whether it is up.", "seconds"; series up{job="api"}
 * with two samples, metadata gauge/help/unit, one exemplar and a created timestamp. */
static void build_v2(ps_buf_t *req, const uint32_t *refs, size_t nrefs, uint32_t help_ref)
{
    static const char *const syms[] = {"", "__name__", "up", "job", "api", "Whether it is up.", "seconds"};
    ps_buf_t ts = PS_BUF_INIT, sub = PS_BUF_INIT, packed = PS_BUF_INIT;
    for (size_t i = 0; i < 7; i++)
        put_str(req, 4, syms[i]);
    for (size_t i = 0; i < nrefs; i++)
        ps_put_uvarint(&packed, refs[i]);
    put_bytes(&ts, 1, packed.data, packed.len);
    put_double(&sub, 1, 1.0);
    put_int(&sub, 2, 1796021924802ULL);
    put_msg(&ts, 2, &sub);
    put_double(&sub, 1, 0.0);
    put_int(&sub, 2, 1796021925802ULL);
    put_msg(&ts, 2, &sub);
    put_int(&sub, 1, 3); /* exemplar labels_refs [3, 4], unpacked this time */
    put_int(&sub, 1, 4);
    put_double(&sub, 2, 7.0);
    put_msg(&ts, 4, &sub);
    put_int(&sub, 1, 2); /* metadata: GAUGE */
    put_int(&sub, 3, help_ref);
    put_int(&sub, 4, 6);
    put_msg(&ts, 5, &sub);
    put_int(&ts, 6, 1796021900000ULL);
    put_msg(req, 5, &ts);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
    ps_buf_dispose(&packed);
}

static void test_v2_by_hand(void **state)
{
    (void)state;
    static const uint32_t refs[] = {1, 2, 3, 4};
    ps_buf_t req = PS_BUF_INIT, body = PS_BUF_INIT;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    build_v2(&req, refs, 4, 5);
    compress(&req, &body);
    int rc = ps_remote_write_decode(body.data, body.len, 2, NULL, &arena, &w, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(w.version, 2);
    assert_int_equal(w.nseries, 1);
    const ps_remote_series_t *s = &w.series[0];
    assert_int_equal(s->labels.n, 2);
    assert_string_equal(s->labels.pairs[0].name, "__name__");
    assert_string_equal(s->labels.pairs[0].value, "up");
    assert_string_equal(s->labels.pairs[1].name, "job");
    assert_string_equal(s->labels.pairs[1].value, "api");
    assert_int_equal(s->nsamples, 2);
    assert_int_equal(s->samples[0].t_ms, 1796021924802LL);
    assert_true(s->samples[0].v == 1.0);
    assert_int_equal(s->samples[1].t_ms, 1796021925802LL);
    assert_true(s->samples[1].v == 0.0);
    assert_int_equal(s->nexemplars, 1);
    assert_int_equal(s->nhistograms, 0);
    assert_int_equal(s->created_ms, 1796021900000LL);
    assert_int_equal(s->meta, 0);
    assert_int_equal(w.nmetadata, 1);
    assert_int_equal(w.metadata[0].type, PS_METRIC_GAUGE);
    assert_string_equal(w.metadata[0].family, "up");
    assert_string_equal(w.metadata[0].help, "Whether it is up.");
    assert_string_equal(w.metadata[0].unit, "seconds");
    assert_int_equal(w.nsamples, 2);
    assert_int_equal(w.nexemplars, 1);

    /* our encoder writes what we decode, metadata included */
    ps_buf_t e = PS_BUF_INIT;
    ps_remote_write_t w2;
    assert_int_equal(ps_remote_write_encode(&w, 2, &e, &err), 0);
    assert_int_equal(ps_remote_write_decode(e.data, e.len, 2, NULL, &arena, &w2, &err), 0);
    assert_same(&w, &w2);
    assert_int_equal(w2.nmetadata, 1);
    assert_int_equal(w2.series[0].meta, 0);
    assert_string_equal(w2.metadata[0].help, "Whether it is up.");
    assert_string_equal(w2.metadata[0].unit, "seconds");
    assert_int_equal(w2.series[0].created_ms, 1796021900000LL);
    ps_buf_dispose(&e);
    ps_buf_dispose(&req);
    ps_buf_dispose(&body);
    ps_arena_dispose(&arena);
}

/* Remote write 2.0 rc.4 (Prometheus 3.8+): the start (created) time is on each Sample (field 3),
 * no longer TimeSeries field 6; and names are UTF-8 ("http.server.duration", "service.name"). */
static void test_v2_start_timestamp_utf8(void **state)
{
    (void)state;
    ps_buf_t req = PS_BUF_INIT, ts = PS_BUF_INIT, sub = PS_BUF_INIT, refs = PS_BUF_INIT, body = PS_BUF_INIT;
    put_str(&req, 4, "");
    put_str(&req, 4, "__name__");
    put_str(&req, 4, "http.server.duration");
    put_str(&req, 4, "service.name");
    put_str(&req, 4, "checkout");
    for (int r = 1; r <= 4; r++)
        ps_put_uvarint(&refs, (uint64_t)r);
    put_msg(&ts, 1, &refs);
    put_double(&sub, 1, 2.5);
    put_int(&sub, 2, 1796021924802ULL);
    put_int(&sub, 3, 1796021900000ULL);
    put_msg(&ts, 2, &sub);
    put_msg(&req, 5, &ts);
    compress(&req, &body);
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    if (ps_remote_write_decode(body.data, body.len, 2, NULL, &arena, &w, &err) != 0)
        fail_msg("%s", err.msg);
    assert_int_equal(w.nseries, 1);
    assert_int_equal(w.series[0].created_ms, 1796021900000LL);
    assert_int_equal(w.series[0].nsamples, 1);
    assert_int_equal(w.series[0].samples[0].t_ms, 1796021924802LL);
    assert_true(w.series[0].samples[0].v == 2.5);
    assert_string_equal(ps_labels_value(&w.series[0].labels, "__name__"), "http.server.duration");
    assert_string_equal(ps_labels_value(&w.series[0].labels, "service.name"), "checkout");
    ps_buf_dispose(&req);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
    ps_buf_dispose(&refs);
    ps_buf_dispose(&body);
    ps_arena_dispose(&arena);
}

static void test_v2_bad(void **state)
{
    (void)state;
    ps_buf_t req = PS_BUF_INIT, ts = PS_BUF_INIT;
    static const uint32_t out_of_range[] = {1, 2, 3, 7};
    build_v2(&req, out_of_range, 4, 5);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].labels_refs[3]: symbol ref 7 out of range (7 symbols)");
    ps_buf_reset(&req);
    static const uint32_t odd[] = {1, 2, 3};
    build_v2(&req, odd, 3, 5);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].labels_refs: odd number of refs (3): they come in pairs");
    ps_buf_reset(&req);
    static const uint32_t ok[] = {1, 2, 3, 4};
    build_v2(&req, ok, 4, 99);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].metadata.help_ref: symbol ref 99 out of range (7 symbols)");
    ps_buf_reset(&req);
    static const uint32_t unsorted[] = {3, 4, 1, 2};
    build_v2(&req, unsorted, 4, 5);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].labels[1]: label names not sorted: \"__name__\" after \"job\"");
    ps_buf_reset(&req);
    static const uint32_t noname[] = {3, 4};
    build_v2(&req, noname, 2, 5);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0]: no __name__ label (the metric name is required)");
    ps_buf_reset(&req);
    static const uint32_t emptyname[] = {1, 0};
    build_v2(&req, emptyname, 2, 5);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].labels[0]: empty __name__ (the metric name)");
    ps_buf_reset(&req);

    /* symbols[0] must be "" */
    put_str(&req, 4, "x");
    expect_raw(&req, 2, PS_EINVAL, "symbols[0] must be the empty string (it is 1 bytes long)");
    ps_buf_reset(&req);
    /* both samples and histograms */
    put_str(&req, 4, "");
    put_str(&req, 4, "__name__");
    put_str(&req, 4, "h");
    put_bytes(&ts, 1, "\x01\x02", 2);
    put_bytes(&ts, 2, "\x10\x01", 2);
    put_bytes(&ts, 3, "", 0);
    put_msg(&req, 5, &ts);
    expect_raw(&req, 2, PS_EINVAL,
               "timeseries[0]: has both samples (1) and histograms (1); 2.0 wants separate series");
    ps_buf_reset(&req);
    /* a histogram alone is counted */
    put_str(&req, 4, "");
    put_str(&req, 4, "__name__");
    put_str(&req, 4, "h");
    put_bytes(&ts, 1, "\x01\x02", 2);
    put_bytes(&ts, 3, "\x08\x01", 2);
    put_msg(&req, 5, &ts);
    ps_buf_t body = PS_BUF_INIT;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    compress(&req, &body);
    assert_int_equal(ps_remote_write_decode(body.data, body.len, 2, NULL, &arena, &w, &err), 0);
    assert_int_equal(w.series[0].nhistograms, 1);
    assert_int_equal(w.series[0].nsamples, 0);
    assert_int_equal(w.nhistograms, 1);
    ps_buf_reset(&req);
    /* an exemplar ref out of range */
    put_str(&req, 4, "");
    put_str(&req, 4, "__name__");
    put_str(&req, 4, "h");
    put_bytes(&ts, 1, "\x01\x02", 2);
    put_bytes(&ts, 4, "\x0a\x02\x01\x09", 4);
    put_msg(&req, 5, &ts);
    expect_raw(&req, 2, PS_EINVAL, "timeseries[0].exemplars[0].labels_refs[1]: symbol ref 9 out of range (3 symbols)");
    ps_buf_reset(&req);
    /* wire types: a packed labels_refs is fine, a fixed64 one is not */
    put_str(&req, 4, "");
    put_tag(&ts, 1, 1);
    ps_buf_append(&ts, "\x01\x00\x00\x00\x00\x00\x00\x00", 8);
    put_msg(&req, 5, &ts);
    expect_raw(&req, 2, PS_EINVAL,
               "protobuf: malformed io.prometheus.write.v2.Request (uncompressed): timeseries[0].labels_refs: field 1 "
               "(labels_refs) has wire type 1 (fixed64), expected 0 (varint)");
    ps_buf_dispose(&body);
    ps_arena_dispose(&arena);
    ps_buf_dispose(&req);
    ps_buf_dispose(&ts);
}

/* ---- bad 1.0 labels ------------------------------------------------------------------------- */

static void test_v1_bad_labels(void **state)
{
    (void)state;
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[2]: label names not sorted: \"env\" after \"job\"", "__name__",
                     "up", "job", "a", "env", "b", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[2]: duplicate label name \"job\"", "__name__", "up", "job", "a",
                     "job", "b", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1]: no __name__ label (the metric name is required)", "job", "a", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1]: no __name__ label (the metric name is required)", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[0]: empty __name__ (the metric name)", "__name__", "", "job",
                     "a", NULL);
    /* names are UTF-8, as Prometheus 3 sends them (its default validation scheme); 2.x refused these */
    expect_v1_labels(0, NULL, "__name__", "up", "a-b", "x", NULL);
    expect_v1_labels(0, NULL, "1a", "x", "__name__", "up", NULL); /* sorted by bytes: "1" before "_" */
    expect_v1_labels(0, NULL, "__name__", "http.server.duration", "service.name", "x", "\xc3\xa9t\xc3\xa9", "y", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: label name \"a\\xc3(\" is not valid UTF-8", "__name__", "up",
                     "a\xc3\x28", "x", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: label name \"\\xed\\xa0\\x80\" is not valid UTF-8", "__name__",
                     "up", "\xed\xa0\x80", "x", NULL); /* a surrogate */
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: empty label name", "__name__", "up", "", "x", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: empty value of label \"job\"", "__name__", "up", "job", "",
                     NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: value of label \"job\" is not valid UTF-8", "__name__", "up",
                     "job", "a\xc3\x28", NULL);
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: value of label \"job\" is not valid UTF-8", "__name__", "up",
                     "job", "\xed\xa0\x80", NULL); /* a surrogate */
    expect_v1_labels(0, NULL, "__name__", "a b", NULL); /* a UTF-8 metric name (Prometheus 3) */
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[0]: value of label \"__name__\" is not valid UTF-8", "__name__",
                     "up\xff", NULL);
    expect_v1_labels(0, NULL, "__name__", "a:b", "job", "\xc3\xa9t\xc3\xa9", NULL); /* UTF-8 values are fine */

    /* NUL inside a value (put_str cannot write it) */
    ps_buf_t req = PS_BUF_INIT, ts = PS_BUF_INIT, sub = PS_BUF_INIT;
    put_str(&sub, 1, "__name__");
    put_bytes(&sub, 2, "u\0p", 3);
    put_msg(&ts, 1, &sub);
    put_msg(&req, 1, &ts);
    expect_raw(&req, 1, PS_EINVAL, "timeseries[0].labels[0]: value of label \"__name__\" contains a NUL byte");
    ps_buf_reset(&req);
    /* NUL inside a name: refused (valid UTF-8, but names are C strings here) */
    put_str(&sub, 1, "__name__");
    put_str(&sub, 2, "up");
    put_msg(&ts, 1, &sub);
    put_bytes(&sub, 1, "a\0b", 3);
    put_str(&sub, 2, "x");
    put_msg(&ts, 1, &sub);
    put_msg(&req, 1, &ts);
    expect_raw(&req, 1, PS_EINVAL, "timeseries[0].labels[1]: label name \"a\\x00b\" contains a NUL byte");
    ps_buf_reset(&req);

    /* a value too long, and one exactly at the limit */
    char v[PS_LABEL_VALUE_MAX + 2];
    memset(v, 'v', sizeof(v));
    v[PS_LABEL_VALUE_MAX + 1] = '\0';
    expect_v1_labels(PS_EINVAL, "timeseries[1].labels[1]: value of label \"job\" is 361 bytes long (the limit is 360)",
                     "__name__", "up", "job", v, NULL);
    v[PS_LABEL_VALUE_MAX] = '\0';
    expect_v1_labels(0, NULL, "__name__", "up", "job", v, NULL);
    char nm[PS_LABEL_NAME_MAX + 2];
    memset(nm, 'n', sizeof(nm));
    nm[PS_LABEL_NAME_MAX + 1] = '\0';
    expect_v1_labels(PS_EINVAL,
                     "timeseries[1].labels[1]: label name \"nnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnnn...\" is 129 bytes "
                     "long (the limit is 128)",
                     "__name__", "up", nm, "x", NULL);

    /* too many labels: PS_LABELS_MAX is fine, one more is not */
    for (int count = PS_LABELS_MAX; count <= PS_LABELS_MAX + 1; count++) {
        ps_buf_reset(&req);
        put_str(&sub, 1, "__name__");
        put_str(&sub, 2, "up");
        put_msg(&ts, 1, &sub);
        for (int k = 1; k < count; k++) {
            char name[16];
            snprintf(name, sizeof(name), "l%03d", k);
            put_str(&sub, 1, name);
            put_str(&sub, 2, "x");
            put_msg(&ts, 1, &sub);
        }
        put_msg(&req, 1, &ts);
        expect_raw(&req, 1, count == PS_LABELS_MAX ? 0 : PS_EINVAL,
                   count == PS_LABELS_MAX ? NULL : "timeseries[0]: too many labels: 65 (the limit is 64)");
    }
    /* 100,000 labels (issue 8's bomb): the same clean error, bounded memory */
    ps_buf_reset(&req);
    for (int k = 0; k < 100000; k++) {
        char name[16];
        snprintf(name, sizeof(name), "l%06d", k);
        put_str(&sub, 1, name);
        put_str(&sub, 2, "x");
        put_msg(&ts, 1, &sub);
    }
    put_msg(&req, 1, &ts);
    expect_raw(&req, 1, PS_EINVAL, "timeseries[0]: too many labels: 100000 (the limit is 64)");
    ps_buf_dispose(&req);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
}

static void test_v1_bad_metadata(void **state)
{
    (void)state;
    ps_buf_t req = PS_BUF_INIT, sub = PS_BUF_INIT;
    put_int(&sub, 1, 9);
    put_str(&sub, 2, "up");
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, PS_EINVAL, "metadata[0].type: unknown metric type 9 (0..7)");
    ps_buf_reset(&req);
    put_int(&sub, 1, 1);
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, PS_EINVAL, "metadata[0].metric_family_name is empty");
    ps_buf_reset(&req);
    put_int(&sub, 1, 1);
    put_str(&sub, 2, "up");
    put_str(&sub, 4, "bad \xff");
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, PS_EINVAL, "metadata[0].help is not valid UTF-8");
    ps_buf_reset(&req);
    put_int(&sub, 1, 1);
    put_str(&sub, 2, "up");
    put_str(&sub, 5, "seconds");
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, 0, NULL);
    ps_buf_reset(&req);
    put_int(&sub, 1, 1);
    put_str(&sub, 2, "http.server.duration"); /* a UTF-8 family name (Prometheus 3) */
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, 0, NULL);
    ps_buf_reset(&req);
    put_int(&sub, 1, 1);
    put_str(&sub, 2, "up\xc3");
    put_msg(&req, 3, &sub);
    expect_raw(&req, 1, PS_EINVAL, "metadata[0].metric_family_name is not valid UTF-8");
    ps_buf_dispose(&req);
    ps_buf_dispose(&sub);
}

/* ---- bad framing: snappy, protobuf wire types, limits ------------------------------------------ */

static void expect_body(const void *body, size_t n, int version, const ps_remote_limits_t *lim, int rc,
                        const char *msg)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    ps_err_clear(&err);
    int got = ps_remote_write_decode(body, n, version, lim, &arena, &w, &err);
    if (got != rc || strcmp(err.msg, msg) != 0)
        fail_msg("got %d \"%s\"\nwant %d \"%s\"", got, err.msg, rc, msg);
    ps_arena_dispose(&arena);
}

static void test_bad_snappy(void **state)
{
    (void)state;
    expect_body("", 0, 1, NULL, PS_EINVAL, "snappy: empty body (expected snappy block format)");
    expect_body("garbage", 7, 1, NULL, PS_EINVAL,
                "snappy: corrupt or truncated input (7 bytes, announcing 103 uncompressed)");
    /* 4 GiB - 1 announced (the most a snappy header can say): refused before anything is allocated */
    expect_body("\xff\xff\xff\xff\x0f", 5, 1, NULL, PS_ETOOBIG,
                "snappy: the body announces 4294967295 uncompressed bytes (the limit is 33554432)");
    expect_body("\x80\x80\x80\x80\x10", 5, 1, NULL, PS_EINVAL,
                "snappy: corrupt input (bad uncompressed-length header)");
    expect_body("\xff\xff\xff\xff\xff\xff", 6, 1, NULL, PS_EINVAL,
                "snappy: corrupt input (bad uncompressed-length header)");
    /* the framed format is not the block format */
    expect_body("\xff\x06\x00\x00sNaPpY\x00\x01", 12, 1, NULL, PS_EINVAL,
                "snappy: framed (stream) format; remote write uses the block format");
    expect_body("\x00", 1, 3, NULL, PS_EUNSUPPORTED, "remote-write version 3 is not supported (1 or 2)");
    /* snappy of an empty message is an empty request */
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    assert_int_equal(ps_remote_write_decode("\x00", 1, 1, NULL, &arena, &w, &err), 0);
    assert_int_equal(w.nseries, 0);
    assert_int_equal(w.nmetadata, 0);
    assert_int_equal(ps_remote_write_decode("\x00", 1, 2, NULL, &arena, &w, &err), 0);
    ps_arena_dispose(&arena);
}

static void test_wire_types(void **state)
{
    (void)state;
    ps_buf_t req = PS_BUF_INIT, ts = PS_BUF_INIT, sub = PS_BUF_INIT;
    /* a sample value as a varint */
    put_str(&sub, 1, "__name__");
    put_str(&sub, 2, "up");
    put_msg(&ts, 1, &sub);
    put_int(&sub, 1, 5);
    put_msg(&ts, 2, &sub);
    put_msg(&req, 1, &ts);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): timeseries[0].samples[0].value: field 1 "
               "(value) has wire type 0 (varint), expected 1 (fixed64)");
    ps_buf_reset(&req);
    /* timeseries as a varint */
    put_int(&req, 1, 5);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): timeseries[0]: field 1 (timeseries) has "
               "wire type 0 (varint), expected 2 (length-delimited)");
    ps_buf_reset(&req);
    /* a length past the end */
    ps_buf_append(&req, "\x0a\x05\x0a\x01", 4);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): timeseries[0]: length runs past the end of "
               "the request");
    ps_buf_reset(&req);
    /* a label name length past the end of the label */
    ps_buf_append(&req, "\x0a\x04\x0a\x02\x0a\x05", 6);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): timeseries[0].labels[0].name: length runs "
               "past the end of the enclosing message");
    ps_buf_reset(&req);
    /* a group wire type */
    ps_buf_append(&req, "\x0b", 1);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): timeseries[0]: field number 1 with wire "
               "type 3 (start group) is not valid");
    ps_buf_reset(&req);
    /* a truncated varint */
    ps_buf_append(&req, "\x78\xff", 2);
    expect_raw(&req, 1, PS_EINVAL,
               "protobuf: malformed prometheus.WriteRequest (uncompressed): field 15: truncated or overlong varint");
    ps_buf_reset(&req);
    /* unknown fields are skipped (forward compatibility) */
    put_int(&req, 15, 7);
    put_str(&req, 2, "cortex source");
    expect_raw(&req, 1, 0, NULL);
    ps_buf_dispose(&req);
    ps_buf_dispose(&ts);
    ps_buf_dispose(&sub);
}

static void test_limits(void **state)
{
    (void)state;
    size_t n;
    uint8_t *body = ps_test_read_prom("remote-write-01.bin", &n);
    ps_remote_limits_t lim;
    ps_remote_limits_default(&lim);
    lim.max_series = 17;
    expect_body(body, n, 1, &lim, PS_ETOOBIG, "18 timeseries (the limit is 17)");
    ps_remote_limits_default(&lim);
    lim.max_samples = 17;
    expect_body(body, n, 1, &lim, PS_ETOOBIG, "18 samples (the limit is 17)");
    ps_remote_limits_default(&lim);
    lim.max_uncompressed = 2606;
    expect_body(body, n, 1, &lim, PS_ETOOBIG,
                "snappy: the body announces 2607 uncompressed bytes (the limit is 2606)");
    lim.max_uncompressed = 2607;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_remote_write_t w;
    ps_err_t err;
    assert_int_equal(ps_remote_write_decode(body, n, 1, &lim, &arena, &w, &err), 0);
    ps_arena_dispose(&arena);
    free(body);
    body = ps_test_read_prom("remote-write-metadata-01.bin", &n);
    ps_remote_limits_default(&lim);
    lim.max_metadata = 7;
    expect_body(body, n, 1, &lim, PS_ETOOBIG, "8 metadata entries (the limit is 7)");
    free(body);

    /* 2.0: symbols, series and series with metadata (build_v2: 7 symbols, 1 series with metadata) */
    static const uint32_t refs[] = {1, 2, 3, 4};
    ps_buf_t req = PS_BUF_INIT, z = PS_BUF_INIT;
    build_v2(&req, refs, 4, 5);
    compress(&req, &z);
    ps_remote_limits_default(&lim);
    lim.max_symbols = 6;
    expect_body(z.data, z.len, 2, &lim, PS_ETOOBIG, "7 symbols (the limit is 6)");
    ps_remote_limits_default(&lim);
    lim.max_series = 0;
    expect_body(z.data, z.len, 2, &lim, PS_ETOOBIG, "1 timeseries (the limit is 0)");
    ps_remote_limits_default(&lim);
    lim.max_samples = 1;
    expect_body(z.data, z.len, 2, &lim, PS_ETOOBIG, "2 samples (the limit is 1)");
    ps_remote_limits_default(&lim);
    lim.max_metadata = 0;
    expect_body(z.data, z.len, 2, &lim, PS_ETOOBIG, "1 series with metadata (the limit is 0)");
    ps_buf_dispose(&req);
    ps_buf_dispose(&z);
}

/* Every proper prefix of a real body fails cleanly; so does every prefix of its protobuf (or it is
 * a valid shorter request), and every single-byte corruption. Run under ASan too. */
static void test_truncation_and_corruption(void **state)
{
    (void)state;
    for (size_t b = 0; b < 4; b++) {
        size_t n;
        uint8_t *body = read_body(b, &n);
        ps_arena_t arena = PS_ARENA_INIT;
        ps_remote_write_t w;
        ps_err_t err;
        for (size_t cut = 0; cut < n; cut++) {
            uint8_t *copy = malloc(cut ? cut : 1); /* exact size: ASan sees any overread */
            memcpy(copy, body, cut);
            int rc = ps_remote_write_decode(copy, cut, 1, NULL, &arena, &w, &err);
            if (rc != PS_EINVAL)
                fail_msg("%s cut at %zu: rc %d", bodies[b], cut, rc);
            assert_true(strncmp(err.msg, "snappy: ", 8) == 0);
            free(copy);
            ps_arena_reset(&arena);
        }
        /* the uncompressed protobuf, cut and corrupted, then compressed again */
        size_t ulen;
        assert_int_equal(snappy_uncompressed_length((const char *)body, n, &ulen), SNAPPY_OK);
        ps_buf_t raw = PS_BUF_INIT, part = PS_BUF_INIT, z = PS_BUF_INIT;
        ps_buf_reserve(&raw, ulen);
        assert_int_equal(snappy_uncompress((const char *)body, n, (char *)raw.data, &ulen), SNAPPY_OK);
        raw.len = ulen;
        size_t ok = 0;
        for (size_t cut = 0; cut <= raw.len; cut++) {
            ps_buf_reset(&part);
            ps_buf_append(&part, raw.data, cut);
            compress(&part, &z);
            int rc = ps_remote_write_decode(z.data, z.len, 1, NULL, &arena, &w, &err);
            assert_true(rc == 0 || rc == PS_EINVAL);
            if (rc == 0)
                ok++;
            else
                assert_true(err.msg[0] != '\0');
            ps_arena_reset(&arena);
        }
        /* the cuts that are valid requests are exactly the message boundaries: 0, after each
         * timeseries / metadata entry, and the whole */
        assert_int_equal(ok, (size_t)(b < 3 ? 18 : 8) + 1);
        for (size_t pos = 0; pos < raw.len; pos++) {
            for (unsigned flip = 1; flip < 256; flip <<= 1) {
                ps_buf_reset(&part);
                ps_buf_append(&part, raw.data, raw.len);
                part.data[pos] ^= (uint8_t)flip;
                compress(&part, &z);
                int rc = ps_remote_write_decode(z.data, z.len, 1, NULL, &arena, &w, &err);
                assert_true(rc == 0 || rc == PS_EINVAL || rc == PS_ETOOBIG);
                ps_arena_reset(&arena);
            }
        }
        ps_buf_dispose(&raw);
        ps_buf_dispose(&part);
        ps_buf_dispose(&z);
        ps_arena_dispose(&arena);
        free(body);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_real_bodies),
        cmocka_unit_test(test_real_body_facts),
        cmocka_unit_test(test_round_trip),
        cmocka_unit_test(test_direct_against_protobuf_c),
        cmocka_unit_test(test_stale_nan_bits),
        cmocka_unit_test(test_v2_by_hand),
        cmocka_unit_test(test_v2_bad),
        cmocka_unit_test(test_v2_start_timestamp_utf8),
        cmocka_unit_test(test_v1_bad_labels),
        cmocka_unit_test(test_v1_bad_metadata),
        cmocka_unit_test(test_bad_snappy),
        cmocka_unit_test(test_wire_types),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_truncation_and_corruption),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
