/*
 * test_xorchunk.c - the float chunk codec (storage/xorchunk.h): Prometheus' XOR chunk bytes.
 *
 * - golden: the example of xorchunk.c and docs/FORMAT.md (read from both files), derived by hand
 *   below, and five chunks whose bytes were made by a transcription of Prometheus'
 *   tsdb/chunkenc/xor.go appender and bstream.go writer (Go 1.19; the transcription is not in the
 *   repository: code from there stays out), one of them re-opened as XORChunk.Appender() does.
 *   The same transcription and this encoder gave identical bytes for 15,000 random chunks
 *   (counters, gauges, random bits, NaN, ±Inf, huge gaps), all of which ps_xor_validate passes.
 * - round trips (bits exactly) of regular and irregular timestamps, constants, counters, random
 *   doubles, special values, huge gaps, 1 and 2 samples, the 65535 limit;
 * - resuming a chunk writes the bytes of the uninterrupted one;
 * - truncation at every byte, every single-bit flip, trailing bytes, wrong counts and impossible
 *   bit patterns fail with PS_ECORRUPT (ASan checks that nothing reads outside the bytes).
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

#include "storage/xorchunk.h"

typedef struct sample {
    int64_t t;
    uint64_t v; /* the float64's bits */
} sample_t;

static double f64(uint64_t b)
{
    double v;
    memcpy(&v, &b, sizeof(v));
    return v;
}

static uint64_t bits_of(double v)
{
    uint64_t b;
    memcpy(&b, &v, sizeof(b));
    return b;
}

static void encode(const sample_t *s, size_t n, ps_buf_t *out)
{
    ps_xor_app_t a;
    ps_err_t err;
    ps_buf_reset(out);
    ps_xor_app_init(&a, out);
    for (size_t i = 0; i < n; i++)
        if (ps_xor_app_append(&a, s[i].t, f64(s[i].v), &err) != 0)
            fail_msg("append %zu: %s", i, err.msg);
    assert_int_equal(a.n, n);
}

/* Decodes p into s (room for max); returns the count, or -1 on an error (message in err). */
static long decode(const uint8_t *p, size_t len, sample_t *s, size_t max, ps_err_t *err)
{
    ps_xor_iter_t it;
    long k = 0;
    ps_xor_iter_init(&it, p, len);
    while (ps_xor_iter_next(&it)) {
        if ((size_t)k < max)
            s[k] = (sample_t){it.t, bits_of(it.v)};
        k++;
    }
    if (ps_xor_iter_err(&it, err) != 0) {
        assert_int_equal(err->code, PS_ECORRUPT);
        assert_true(strncmp(err->msg, "xorchunk: ", 10) == 0);
        return -1;
    }
    assert_int_equal(k, ps_xor_count(p, len));
    return k;
}

/* Encodes, checks the decoding bit for bit, validates; leaves the bytes in out. */
static void round_trip(const sample_t *s, size_t n, ps_buf_t *out)
{
    encode(s, n, out);
    sample_t *got = ps_xcalloc(n + 1, sizeof(*got));
    ps_err_t err;
    long k = decode(out->data, out->len, got, n + 1, &err);
    if (k < 0)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(k, n);
    for (size_t i = 0; i < n; i++) {
        if (got[i].t != s[i].t || got[i].v != s[i].v)
            fail_msg("sample %zu: got (%lld, %016llx), want (%lld, %016llx)", i, (long long)got[i].t,
                     (unsigned long long)got[i].v, (long long)s[i].t, (unsigned long long)s[i].v);
    }
    assert_int_equal(ps_xor_validate(out->data, out->len, &err), 0);
    free(got);
}

static void from_hex(const char *hex, ps_buf_t *out)
{
    ps_buf_reset(out);
    for (; hex[0] && hex[1]; hex += 2) {
        unsigned x;
        assert_int_equal(sscanf(hex, "%2x", &x), 1);
        ps_buf_putc(out, (uint8_t)x);
    }
}

static void expect_bytes(const ps_buf_t *got, const ps_buf_t *want)
{
    if (got->len == want->len && memcmp(got->data, want->data, got->len) == 0)
        return;
    char g[1024] = "", w[1024] = "";
    for (size_t i = 0; i < got->len && 2 * i + 3 < sizeof(g); i++)
        sprintf(g + 2 * i, "%02x", got->data[i]);
    for (size_t i = 0; i < want->len && 2 * i + 3 < sizeof(w); i++)
        sprintf(w + 2 * i, "%02x", want->data[i]);
    fail_msg("bytes differ:\n  got  %s\n  want %s", g, w);
}

/* ---- golden bytes ---- */

/* The example: remote-read-response-01.json's three samples. By hand, from xor.go:
 *   00 03              the count, big-endian.
 *   84 cf fd b3 c5 68  t0: binary.PutVarint = zigzag 2 * 1796021924802 = 3592043849604 in 7-bit
 *                      groups, least significant first, 0x80 on all but the last.
 *   40 f3 c4 50 00 00 00 00   v0: math.Float64bits(80965.0).
 *   e8 07              t1 - t0 = 1000 = 0b111_1101000: 0x80|0x68, 0x07.
 *   then bits: v1 = 81394.0 = 0x40f3df2000000000, x = v0 ^ v1 = 0x00001b7000000000: 19 leading
 *   zeros, 36 trailing, 9 significant 110110111; the first nonzero x has no window to reuse:
 *   "1" (x != 0) "1" (new window) 10011 (19) 001001 (9) 110110111 = 22 bits.
 *   t2 - t1 = 1000: dod 0, "0". v2 = 81801.0 = 0x40f3f89000000000, x = 0x000027b000000000: 18
 *   leading zeros < 19, so a new window: "1" "1" 10010 (18) 001010 (10) 1001111011 = 23 bits.
 *   46 bits, 2 zero bits to the end of the byte; the last field (10 bits) is not a multiple of 8,
 *   so no empty byte follows:
 *   11100110 01001110 11011101 11001000 10101001 11101100 = e6 4e dd c8 a9 ec. */
static const char *golden_hex = "000384cffdb3c56840f3c45000000000e807e64eddc8a9ec";
static const sample_t golden[3] = {
    {1796021924802, 0x40f3c45000000000ull}, /* 80965.0 */
    {1796021925802, 0x40f3df2000000000ull}, /* 81394.0 */
    {1796021926802, 0x40f3f89000000000ull}, /* 81801.0 */
};

static void test_golden(void **state)
{
    ps_buf_t got = PS_BUF_INIT, want = PS_BUF_INIT;
    assert_true(bits_of(80965.0) == golden[0].v && bits_of(81394.0) == golden[1].v && bits_of(81801.0) == golden[2].v);
    round_trip(golden, 3, &got);
    from_hex(golden_hex, &want);
    expect_bytes(&got, &want);
    ps_buf_dispose(&got);
    ps_buf_dispose(&want);
}

/* Chunks made by the transcription of Prometheus' appender (see the top of this file). */
static void test_prometheus_bytes(void **state)
{
    static const sample_t one[] = {{0, 0x3ff0000000000000ull}};
    static const sample_t stale[] = {{1000, PS_XOR_STALE_NAN}, {2000, PS_XOR_STALE_NAN}};
    /* t1 - t0 = 1e6, then the dod of each bucket at its edges, and 1e12 (the 64-bit bucket) */
    static const sample_t dods[] = {{0, 0},       {1000000, 0}, {2008192, 0}, {3008193, 0},
                                    {4000002, 0}, {5057347, 0}, {6049157, 0}, {6975431, 0},
                                    {8425993, 0}, {9352268, 0}, {9754255, 0}, {1000010156242, 0}};
    /* 0, a 64-significant-bit x (m written as 0), a reuse, ±Inf, -0.0, stale, NaN, 1.5 twice */
    static const sample_t vals[] = {
        {1700000000000, 0},
        {1700000015000, 0x8000000000000001ull},
        {1700000030000, 0x8000000000000003ull},
        {1700000045000, 0x7ff0000000000000ull},
        {1700000060000, 0xfff0000000000000ull},
        {1700000075000, 0x8000000000000000ull},
        {1700000090000, PS_XOR_STALE_NAN},
        {1700000105000, 0x7ff8000000000000ull},
        {1700000120000, 0x3ff8000000000000ull},
        {1700000135000, 0x3ff8000000000000ull},
    };
    static const struct {
        const sample_t *s;
        size_t n;
        const char *hex;
    } cases[] = {
        {one, 1, "0001003ff000000000000000"}, /* ends after 64 bits of v0: the empty byte */
        {stale, 2, "0002d00f7ff0000000000002e80700"},
        {dods, 12, "000c000000000000000000c0843d500028005bc000d000068000bbc0001d00000e800017fffffffffffc00003c00"
                   "0003a352944000"},
        {vals, 10, "000a80a0abfef96200000000000000009875c004000000000000000a00000000000000025ffe0000000000006a0000"
                   "0000000000013ff80000000000002fff000000000000240010000000000004900000000000000000"},
    };
    ps_buf_t got = PS_BUF_INIT, want = PS_BUF_INIT;
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        round_trip(cases[c].s, cases[c].n, &got);
        from_hex(cases[c].hex, &want);
        expect_bytes(&got, &want);
    }
    /* Prometheus' XORChunk.Appender() re-opening a chunk before any value header was written
     * takes the iterator's L = T = 0 instead of "none", so it reuses that window (64 bits) from
     * then on: 1.0 at 1000 and 2000 ms, re-opened, 2.0 at 3000 and 3.0 at 4000 ms. We read it,
     * and continue it (our appender writes a header then, which Prometheus reads as well). */
    static const sample_t reopened[] = {
        {1000, 0x3ff0000000000000ull}, {2000, 0x3ff0000000000000ull},
        {3000, 0x4000000000000000ull}, {4000, 0x4008000000000000ull}};
    from_hex("0004d00f3ff0000000000000e80727ff000000000000040010000000000000", &want);
    sample_t s[5];
    ps_err_t err;
    assert_int_equal(decode(want.data, want.len, s, 5, &err), 4);
    assert_memory_equal(s, reopened, sizeof(reopened));
    ps_xor_app_t a;
    assert_int_equal(ps_xor_app_resume(&a, &want, 0, &err), 0);
    assert_int_equal(ps_xor_app_append(&a, 5000, 0.5, &err), 0);
    assert_int_equal(decode(want.data, want.len, s, 5, &err), 5);
    assert_memory_equal(s, reopened, sizeof(reopened));
    assert_true(s[4].t == 5000 && s[4].v == 0x3fe0000000000000ull);
    ps_buf_dispose(&got);
    ps_buf_dispose(&want);
}

/* ---- the example in xorchunk.c and docs/FORMAT.md ---- */

/* The example of text: lines after "EXAMPLE:" ... "N bytes:" up to "Reading validates". A line
 * indented by exactly 2 (after the " * " of a C comment) holds hex pairs up to two spaces; a
 * line indented further whose first token is of 0s and 1s holds bits up to two spaces. */
static void doc_example(const char *text, const char *name, ps_buf_t *bytes, ps_buf_t *bits, long *stated)
{
    const char *ex = strstr(text, "EXAMPLE: the 3 samples of gotarget");
    if (ex == NULL)
        fail_msg("%s: no XOR chunk EXAMPLE", name);
    const char *b = strstr(ex, " bytes:\n"), *end = strstr(ex, "Reading validates");
    assert_non_null(b);
    assert_non_null(end);
    const char *num = b;
    while (num > ex && num[-1] >= '0' && num[-1] <= '9')
        num--;
    *stated = strtol(num, NULL, 10);
    for (const char *p = strchr(b, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
        if (p[0] == ' ' && p[1] == '*')
            p += p[2] == ' ' ? 3 : 2;
        size_t ind = 0;
        while (p[ind] == ' ')
            ind++;
        const char *q = p + ind;
        if (ind == 2) {
            while (q[0] != '\n' && !(q[0] == ' ' && q[1] == ' ')) {
                unsigned x;
                if (sscanf(q, "%2x", &x) != 1 || (q[2] != ' ' && q[2] != '\n'))
                    fail_msg("%s: bad hex in the example: %.20s", name, q);
                ps_buf_putc(bytes, (uint8_t)x);
                q += q[2] == ' ' ? 3 : 2;
            }
        } else if (ind > 2 && (*q == '0' || *q == '1')) {
            while (*q == '0' || *q == '1' || (q[0] == ' ' && (q[1] == '0' || q[1] == '1'))) {
                if (*q != ' ')
                    ps_buf_putc(bits, (uint8_t)*q);
                q++;
            }
        }
    }
}

static void check_doc_example(const char *text, const char *name)
{
    ps_buf_t doc = PS_BUF_INIT, bits = PS_BUF_INIT, want = PS_BUF_INIT;
    long stated = 0;
    doc_example(text, name, &doc, &bits, &stated);
    from_hex(golden_hex, &want);
    expect_bytes(&doc, &want);
    assert_int_equal(doc.len, stated);
    /* the bits annotated are those of the last 6 bytes (the bit stream after e8 07) */
    assert_int_equal(bits.len, 48);
    for (size_t i = 0; i < 48; i++) {
        int bit = want.data[18 + i / 8] >> (7 - i % 8) & 1;
        if (bits.data[i] != '0' + bit)
            fail_msg("%s: annotated bit %zu is %c, the byte has %d", name, i, bits.data[i], bit);
    }
    sample_t got[4];
    ps_err_t err;
    assert_int_equal(decode(doc.data, doc.len, got, 4, &err), 3);
    for (int i = 0; i < 3; i++)
        assert_true(got[i].t == golden[i].t && got[i].v == golden[i].v);
    ps_buf_dispose(&doc);
    ps_buf_dispose(&bits);
    ps_buf_dispose(&want);
}

static void test_doc_example(void **state)
{
    char *c = ps_test_read_source("storage/xorchunk.c"), *md = ps_test_read_source("docs/FORMAT.md");
    check_doc_example(c, "storage/xorchunk.c");
    check_doc_example(md, "docs/FORMAT.md");
    /* and the samples are those of the fixture it names */
    char fx[1024];
    snprintf(fx, sizeof(fx), "%s/prometheus/remote-read-response-01.json", ps_test_testdata());
    char *js = (char *)ps_test_read_path(fx, NULL);
    const char *p = strstr(js, "gotarget_kernel_iterations_total");
    assert_non_null(p);
    for (int i = 0; i < 3; i++) {
        double v;
        long long t;
        p = strstr(p, "\"value\": ");
        assert_non_null(p);
        assert_int_equal(sscanf(p, "\"value\": %lf,", &v), 1);
        p = strstr(p, "\"timestamp_ms\": ");
        assert_non_null(p);
        assert_int_equal(sscanf(p, "\"timestamp_ms\": %lld", &t), 1);
        assert_true(bits_of(v) == golden[i].v);
        assert_int_equal(t, golden[i].t);
    }
    free(js);
    free(c);
    free(md);
}

/* FORMAT.md repeats xorchunk.c's head comment, line by line. */
static void test_spec_repeated(void **state)
{
    char *c = ps_test_read_source("storage/xorchunk.c"), *md = ps_test_read_source("docs/FORMAT.md");
    ps_test_doc_repeats_comment(c, md, "xorchunk.c - the float chunk encoding", "storage/xorchunk.c");
    free(c);
    free(md);
}

/* ---- round trips ---- */

static void test_round_trips(void **state)
{
    enum { N = 500 };
    sample_t s[N];
    ps_buf_t b = PS_BUF_INIT;
    int64_t t0 = 1796021924802;

    for (int i = 0; i < N; i++) /* regular 15 s scrapes, a counter */
        s[i] = (sample_t){t0 + 15000 * i, bits_of((double)(1000 + 7 * i))};
    round_trip(s, N, &b);
    for (int i = 0; i < N; i++) /* constant: 1 bit of dod and 1 of value per sample */
        s[i] = (sample_t){t0 + 15000 * i, bits_of(42.0)};
    round_trip(s, N, &b);
    /* 2 + 6 (t0) + 8 (v0) + 2 (15000) + 1 bit, then 2 bits each for 498 samples: 997 bits */
    assert_int_equal(b.len, 2 + 6 + 8 + 2 + (997 + 7) / 8);

    int64_t t = t0; /* irregular: jitter of up to ±0.5 s, counters with resets, gauges */
    uint64_t cnt = 0;
    for (int i = 0; i < N; i++) {
        t += 15000 + (int64_t)(ps_test_rnd() % 1001) - 500;
        cnt = i % 97 == 96 ? 0 : cnt + ps_test_rnd() % 5000;
        s[i] = (sample_t){t, bits_of(i % 2 ? (double)cnt : (double)(ps_test_rnd() % 10000) / 100.0)};
    }
    round_trip(s, N, &b);

    t = -1000000; /* random doubles (all 64 bits random, so also NaNs with payloads), random gaps */
    for (int i = 0; i < N; i++) {
        t += 1 + (int64_t)(ps_test_rnd() >> (ps_test_rnd() % 52 + 12)); /* < 2^52 each */
        s[i] = (sample_t){t, ps_test_rnd()};
    }
    round_trip(s, N, &b);

    static const uint64_t special[] = {
        PS_XOR_STALE_NAN,      0x7ff8000000000000ull, 0xfff8000000000001ull, 0x7ff0000000000000ull,
        0xfff0000000000000ull, 0x8000000000000000ull, 0,                     1, /* -0.0, +0.0, min denormal */
        0x7fefffffffffffffull, PS_XOR_STALE_NAN,      PS_XOR_STALE_NAN,      0x3ff0000000000000ull,
    };
    size_t ns = sizeof(special) / sizeof(special[0]);
    for (size_t i = 0; i < ns; i++)
        s[i] = (sample_t){t0 + 30000 * (int64_t)i, special[i]};
    round_trip(s, ns, &b);
    assert_true(isnan(f64(PS_XOR_STALE_NAN)));

    /* huge gaps: the 64-bit dod bucket, and the timestamp range's ends */
    sample_t gaps[] = {{INT64_MIN, 0}, {INT64_MIN + 1, 0}, {0, 0}, {1, 0}, {INT64_MAX - 1, 0}, {INT64_MAX, 0}};
    round_trip(gaps, 6, &b);
    sample_t two[] = {{INT64_MIN, 1}, {INT64_MAX, 2}}; /* t1 - t0 = 2^64 - 1 */
    round_trip(two, 2, &b);
    round_trip(two, 1, &b);
    assert_int_equal(b.len, 2 + 10 + 8 + 1); /* varint of zigzag(INT64_MIN) is 10 bytes; the empty byte */
    round_trip(two + 1, 1, &b);
    ps_buf_dispose(&b);
}

static void test_limits(void **state)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_xor_app_t a;
    ps_err_t err;
    ps_xor_app_init(&a, &b);
    assert_int_equal(ps_xor_app_append(&a, 1000, 0.0, &err), 0);
    size_t len = b.len;
    assert_int_equal(ps_xor_app_append(&a, 1000, 2.0, &err), PS_EOUTOFORDER);
    assert_string_equal(err.msg, "xorchunk: timestamp 1000 ms is not after 1000 ms");
    assert_int_equal(ps_xor_app_append(&a, 999, 2.0, &err), PS_EOUTOFORDER);
    assert_int_equal(b.len, len);
    for (int i = 1; i < PS_XOR_MAX_SAMPLES; i++)
        assert_int_equal(ps_xor_app_append(&a, 1000 + 1000 * (int64_t)i, (double)(i % 13), &err), 0);
    len = b.len;
    assert_int_equal(ps_xor_app_append(&a, 1LL << 40, 1.0, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "xorchunk: the chunk is full (65535 samples)");
    assert_int_equal(b.len, len);
    assert_int_equal(ps_xor_count(b.data, b.len), 65535);
    assert_int_equal(ps_xor_validate(b.data, b.len, &err), 0);
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, b.data, b.len);
    uint32_t k = 0;
    while (ps_xor_iter_next(&it)) {
        assert_int_equal(it.t, 1000 + 1000 * (int64_t)k);
        assert_true(it.v == (double)(k % 13));
        k++;
    }
    assert_int_equal(k, 65535);
    assert_int_equal(ps_xor_iter_err(&it, &err), 0);

    /* an empty chunk: 2 bytes, iterates to nothing, but is no stored chunk */
    ps_buf_reset(&b);
    ps_xor_app_init(&a, &b);
    assert_int_equal(b.len, 2);
    ps_xor_iter_init(&it, b.data, b.len);
    assert_int_equal(ps_xor_iter_next(&it), 0);
    assert_int_equal(ps_xor_iter_err(&it, &err), 0);
    assert_int_equal(ps_xor_validate(b.data, b.len, &err), PS_ECORRUPT);
    assert_string_equal(err.msg, "xorchunk: no samples");
    ps_buf_dispose(&b);
}

/* A chunk that starts after other bytes in the buffer, and one resumed after every sample,
 * give the bytes of the chunk written in one go. */
static void test_resume(void **state)
{
    enum { N = 60 };
    sample_t s[N];
    int64_t t = 1700000000000;
    for (int i = 0; i < N; i++) {
        t += i % 7 == 3 ? 15000 + 70000 * i : 15000; /* dods in every bucket */
        s[i] = (sample_t){t, i % 5 == 0 ? bits_of(3.0) : i < 20 ? (uint64_t)i << 40 : ps_test_rnd()};
    }
    ps_buf_t whole = PS_BUF_INIT, b = PS_BUF_INIT;
    ps_err_t err;
    for (size_t n = 1; n <= N; n++) {
        encode(s, n, &whole);
        for (size_t k = 0; k <= n; k++) {
            ps_buf_reset(&b);
            PS_BUF_LIT(&b, "prefix");
            ps_xor_app_t a;
            ps_xor_app_init(&a, &b);
            for (size_t i = 0; i < k; i++)
                assert_int_equal(ps_xor_app_append(&a, s[i].t, f64(s[i].v), &err), 0);
            ps_xor_app_t r;
            if (ps_xor_app_resume(&r, &b, 6, &err) != 0)
                fail_msg("resume after %zu of %zu: %s", k, n, err.msg);
            for (size_t i = k; i < n; i++)
                assert_int_equal(ps_xor_app_append(&r, s[i].t, f64(s[i].v), &err), 0);
            size_t len;
            const uint8_t *p = ps_xor_app_bytes(&r, &len);
            assert_memory_equal(b.data, "prefix", 6);
            if (len != whole.len)
                fail_msg("resumed after %zu of %zu: %zu bytes, want %zu", k, n, len, whole.len);
            assert_memory_equal(p, whole.data, len);
        }
    }
    /* resuming corrupt bytes fails and leaves them */
    encode(s, 10, &b);
    b.len--;
    ps_xor_app_t r;
    assert_int_equal(ps_xor_app_resume(&r, &b, 0, &err), PS_ECORRUPT);
    assert_int_equal(ps_xor_app_resume(&r, &b, b.len + 1, &err), PS_EINVAL);
    ps_buf_dispose(&whole);
    ps_buf_dispose(&b);
}

#define BOUNDARY_CHUNKS 1 /* of the 200 chunks below, those whose last sample ends on a byte boundary */

/* A chunk whose last sample ends on a byte boundary without the empty byte Prometheus 2's writer
 * leaves there (Prometheus 3's writer leaves none): the stored-chunk reader refuses it, the
 * foreign-chunk reader gives every sample; any other shortened chunk both refuse. */
static void test_foreign_end(void **state)
{
    (void)state;
    enum { N = 200 };
    sample_t s[N], got[N];
    int64_t t = 1700000000000;
    for (int i = 0; i < N; i++) {
        t += i % 3 == 0 ? 15000 : 15000 + 37 * i;
        s[i] = (sample_t){t, i % 4 == 0 ? bits_of((double)i) : ps_test_rnd()};
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    int boundary = 0;
    for (size_t n = 1; n <= N; n++) {
        encode(s, n, &b);
        ps_xor_iter_t it;
        ps_xor_iter_init(&it, b.data, b.len);
        while (ps_xor_iter_next(&it))
            ;
        assert_int_equal(ps_xor_iter_err(&it, &err), 0);
        bool on_boundary = it.pos % 8 == 0 && it.last_bits % 8 == 0;
        boundary += on_boundary;
        /* whole: both readers take it */
        ps_xor_iter_init_foreign(&it, b.data, b.len);
        size_t k = 0;
        while (ps_xor_iter_next(&it))
            k++;
        assert_int_equal(ps_xor_iter_err(&it, &err), 0);
        assert_int_equal(k, n);
        /* without its last byte */
        assert_int_equal(decode(b.data, b.len - 1, got, N, &err), -1);
        if (on_boundary && strstr(err.msg, "the chunk ends before its last byte") == NULL)
            fail_msg("%zu samples, last byte dropped: %s", n, err.msg);
        ps_xor_iter_init_foreign(&it, b.data, b.len - 1);
        k = 0;
        while (ps_xor_iter_next(&it)) {
            assert_int_equal(it.t, s[k].t);
            assert_true(bits_of(it.v) == s[k].v);
            k++;
        }
        if (on_boundary) {
            assert_int_equal(ps_xor_iter_err(&it, &err), 0);
            assert_int_equal(k, n);
        } else {
            assert_int_equal(ps_xor_iter_err(&it, &err), PS_ECORRUPT);
        }
    }
    assert_int_equal(boundary, BOUNDARY_CHUNKS);
    ps_buf_dispose(&b);
}

/* ---- bad bytes ---- */

static int same_samples(const sample_t *a, const sample_t *b, long n)
{
    for (long i = 0; i < n; i++)
        if (a[i].t != b[i].t || a[i].v != b[i].v)
            return 0;
    return 1;
}

static void test_truncation_and_flips(void **state)
{
    enum { N = 130 };
    sample_t s[N], got[N + 8];
    int64_t t = 1796021924802;
    for (int i = 0; i < N; i++) {
        t += 15000 + (int64_t)(ps_test_rnd() % 2001) - 1000 + (i == 60 ? 1000000000 : 0);
        s[i] = (sample_t){t, i % 3 == 0 ? bits_of((double)i) : i % 3 == 1 ? PS_XOR_STALE_NAN : ps_test_rnd()};
    }
    size_t lens[] = {1, 2, 3, 17, N};
    ps_buf_t b = PS_BUF_INIT, c = PS_BUF_INIT;
    ps_err_t err;
    for (size_t li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
        size_t n = lens[li];
        round_trip(s, n, &b);
        /* every proper prefix fails (copied, so ASan sees a read past its end) */
        for (size_t cut = 0; cut < b.len; cut++) {
            uint8_t *p = ps_xmalloc(cut ? cut : 1);
            memcpy(p, b.data, cut);
            if (decode(p, cut, got, N + 8, &err) != -1)
                fail_msg("%zu samples cut to %zu of %zu bytes decodes", n, cut, b.len);
            assert_int_equal(ps_xor_validate(p, cut, &err), PS_ECORRUPT);
            free(p);
        }
        /* a trailing byte, zero or not, fails */
        for (int extra = 0; extra < 2; extra++) {
            ps_buf_reset(&c);
            ps_buf_append(&c, b.data, b.len);
            ps_buf_putc(&c, (uint8_t)extra);
            assert_int_equal(ps_xor_validate(c.data, c.len, &err), PS_ECORRUPT);
        }
        /* every single-bit flip fails, or decodes to other samples: never the same ones */
        for (size_t bit = 0; bit < b.len * 8; bit++) {
            ps_buf_reset(&c);
            ps_buf_append(&c, b.data, b.len);
            c.data[bit / 8] ^= (uint8_t)(0x80 >> bit % 8);
            long k = decode(c.data, c.len, got, N + 8, &err);
            if (k == (long)n && same_samples(got, s, k))
                fail_msg("%zu samples: flipping bit %zu gives the same samples", n, bit);
        }
        /* random bytes in random places */
        for (int r = 0; r < 2000; r++) {
            ps_buf_reset(&c);
            ps_buf_append(&c, b.data, b.len);
            for (int j = 0; j < 1 + r % 3; j++)
                c.data[ps_test_rnd() % c.len] = (uint8_t)ps_test_rnd();
            uint8_t *p = ps_xmalloc(c.len);
            memcpy(p, c.data, c.len);
            long k = decode(p, c.len, got, N + 8, &err);
            if (k >= 0)
                assert_int_equal(ps_xor_validate(p, c.len, &err), k > 0 ? 0 : PS_ECORRUPT);
            free(p);
        }
    }
    ps_buf_dispose(&b);
    ps_buf_dispose(&c);
}

/* Bit patterns the decoder refuses, each with its message. */
static void test_impossible(void **state)
{
    static const struct {
        const char *hex, *msg;
    } cases[] = {
        /* 2 samples: t0 0, v0 0, t1 - t0 = 1, then "11" lz 31 (11111) m 0 = 64: 31 + 64 > 64 */
        {"0002" "00" "0000000000000000" "01" "fe" "00" "0000000000000000",
         "xorchunk: a value's leading and significant bits exceed 64 at byte 13 (after 1 of 2 samples)"},
        /* t1 - t0 = 0 */
        {"00020000000000000000000000" "00", "xorchunk: a timestamp is not after the previous one at byte 12 (after 1 of 2 samples)"},
        /* 3 samples, t1 - t0 = 1, value "0"; then "10" dod 14 bits = 0x3fff = -1: t2 - t1 = 0 */
        {"000300000000000000000001" "5fff80", /* 0 (value), 10 11111111111111 (dod), 0 (value) */
         "xorchunk: a timestamp is not after the previous one at byte 14 (after 2 of 3 samples)"},
        /* the bits end inside sample 1 (no value) */
        {"0002" "00" "3ff0000000000000" "e807",
         "xorchunk: the bits end before the last sample at byte 13 (after 1 of 2 samples)"},
        /* the count says 1, the bits hold 2 samples */
        {"0001d00f7ff0000000000002e80700", "xorchunk: bytes after the last sample (sample count too small?) at byte 13 "
                                           "(after 1 of 1 samples)"},
        /* the empty byte after v0 is not zero */
        {"0001003ff000000000000001", "xorchunk: nonzero bits after the last sample at byte 11 (after 1 of 1 samples)"},
        /* padding bits after the final "0" not zero */
        {"0002d00f7ff0000000000002e80701", "xorchunk: nonzero bits after the last sample at byte 14 (after 2 of 2 samples)"},
        /* a varint of 11 bytes */
        {"0001ffffffffffffffffffff01", "xorchunk: a varint overflows 64 bits or ends in a zero byte at byte 12 (after 0 "
                                       "of 1 samples)"},
        /* t0 as 80 00: a varint Go's PutVarint does not write */
        {"0001" "8000" "0000000000000000" "00",
         "xorchunk: a varint overflows 64 bits or ends in a zero byte at byte 4 (after 0 of 1 samples)"},
        /* the rest is as Prometheus' writer never writes it, though its reader would accept it:
         * t0 0, v0 0, t1 - t0 = 1, value "0", then dod 0 as "10" and 14 zero bits, value "0" */
        {"0003" "00" "0000000000000000" "01" "400000",
         "xorchunk: a delta of delta in a wider bucket than it needs at byte 12 (after 2 of 3 samples)"},
        /* v1: "11" lz 0, m 1, bit 0: x = 0 written as bits */
        {"0002" "00" "0000000000000000" "01" "c008",
         "xorchunk: a value's XOR is 0 but written as bits at byte 12 (after 1 of 2 samples)"},
        /* v1: "11" lz 0, m 2, bits 01: x = 0x4000000000000000 has 1 leading zero, not 0 */
        {"0002" "00" "0000000000000000" "01" "c012",
         "xorchunk: a value header's window is not the XOR's at byte 12 (after 1 of 2 samples)"},
        /* v1: "11" lz 0, m 1, bit 1 (x = the sign bit); t2: dod 0; v2: the same header again */
        {"0003" "00" "0000000000000000" "01" "c00d8018",
         "xorchunk: a value header where the last window fits at byte 13 (after 2 of 3 samples)"},
        {"0000" "00", "xorchunk: bytes after the sample count 0 at byte 2 (after 0 of 0 samples)"},
        {"00", "xorchunk: shorter than the 2-byte sample count at byte 0 (after 0 of 0 samples)"},
    };
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    sample_t got[4];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        from_hex(cases[i].hex, &b);
        assert_int_equal(decode(b.data, b.len, got, 4, &err), -1);
        assert_string_equal(err.msg, cases[i].msg);
        assert_int_equal(ps_xor_validate(b.data, b.len, &err), PS_ECORRUPT);
        assert_string_equal(err.msg, cases[i].msg);
    }
    /* no checksum: the example with n = 4 reads its 2 zero end bits as a 4th sample */
    from_hex(golden_hex, &b);
    b.data[1] = 4;
    assert_int_equal(decode(b.data, b.len, got, 4, &err), 4);
    assert_true(got[3].t == golden[2].t + 1000 && got[3].v == golden[2].v);
    b.data[1] = 5; /* but not as two */
    assert_int_equal(decode(b.data, b.len, got, 4, &err), -1);
    assert_string_equal(err.msg, "xorchunk: the bits end before the last sample at byte 24 (after 4 of 5 samples)");

    /* what Prometheus' reader accepts and its writer can make when it re-opens a chunk: a reused
     * window before any header reads 64 bits (L = T = 0) */
    /* t0 0, v0 0, t1 - t0 = 1, then "1" "0" and 64 bits of x = 0x8000000000000000: 66 bits */
    from_hex("0002" "00" "0000000000000000" "01" "a0" "0000000000000000", &b);
    assert_int_equal(decode(b.data, b.len, got, 4, &err), 2);
    assert_true(got[1].t == 1 && got[1].v == 0x8000000000000000ull);
    ps_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),          cmocka_unit_test(test_prometheus_bytes),
        cmocka_unit_test(test_doc_example),     cmocka_unit_test(test_spec_repeated),
        cmocka_unit_test(test_round_trips),     cmocka_unit_test(test_limits),
        cmocka_unit_test(test_resume),          cmocka_unit_test(test_truncation_and_flips),
        cmocka_unit_test(test_impossible),      cmocka_unit_test(test_foreign_end),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
