/*
 * test_float_dense.c - the dense float chunk codec (storage/float_dense.h).
 *
 * - golden: the example of float_dense.c and docs/FORMAT.md, byte for byte, and the encoding choices
 *   (kind, e, shift, dod, grid) on series of known shape, pinned by their mode byte and length;
 * - round trips, bits exactly, of special values (the stale marker, NaN payloads, -0.0, ±Inf,
 *   subnormals), decimals of each kind, pages, huge gaps and values, 1, 2, 3, 120 and 65535
 *   samples, any tbase; and the XOR chunk transcoded is ps_xor_app's of the same samples;
 * - truncation at every byte, every single-bit flip (an error or other samples), trailing bytes,
 *   nonzero end bits and header fields out of range fail with PS_ECORRUPT "fdense: ..." (ASan
 *   checks that nothing reads outside the bytes).
 */
#include <math.h>
#include <setjmp.h>
#include <stdbool.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"

#include "storage/float_dense.h"
#include "storage/xorchunk.h"

static uint64_t b64(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static uint64_t rng = 88172645463325252ull;
static uint64_t rnd(void)
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return rng;
}

/* encodes, decodes (same bits), transcodes (ps_xor_app's bytes); returns the dense length and
 * leaves the chunk in out */
static size_t roundtrip(const int64_t *t, const uint64_t *v, uint32_t n, int64_t tbase, ps_buf_t *out)
{
    ps_buf_reset(out);
    ps_float_dense_encode(t, v, n, tbase, out);
    int64_t *dt;
    uint64_t *dv;
    uint32_t dn;
    ps_err_t err;
    if (ps_float_dense_decode(out->data, out->len, tbase, &dt, &dv, &dn, &err) != 0)
        fail_msg("decode: %s", err.msg);
    assert_int_equal(dn, n);
    for (uint32_t i = 0; i < n; i++) {
        if (dt[i] != t[i] || dv[i] != v[i])
            fail_msg("sample %u: %lld %016llx, want %lld %016llx", i, (long long)dt[i], (unsigned long long)dv[i],
                     (long long)t[i], (unsigned long long)v[i]);
    }
    free(dt);
    free(dv);
    ps_buf_t x = PS_BUF_INIT, y = PS_BUF_INIT;
    ps_xor_app_t a;
    ps_xor_app_init(&a, &x);
    for (uint32_t i = 0; i < n; i++) {
        double f;
        memcpy(&f, &v[i], 8);
        assert_int_equal(ps_xor_app_append(&a, t[i], f, NULL), 0);
    }
    assert_int_equal(ps_float_dense_to_xor(out->data, out->len, tbase, &y, &err), 0);
    assert_int_equal(y.len, x.len);
    assert_memory_equal(y.data, x.data, x.len);
    ps_buf_dispose(&x);
    ps_buf_dispose(&y);
    return out->len;
}

/* The example of float_dense.c and docs/FORMAT.md. */
static void test_golden(void **state)
{
    (void)state;
    static const uint8_t want[21] = {0x03, 0x84, 0xcf, 0xfd, 0xb3, 0xc5, 0x68, 0x01, 0x8a, 0xf1, 0x09,
                                     0xe8, 0x07, 0x00, 0x0a, 0x0a, 0x00, 0x00, 0xd6, 0xb2, 0xe0};
    int64_t t[3] = {1796021924802ll, 1796021925802ll, 1796021926802ll};
    uint64_t v[3] = {b64(80965.0), b64(81394.0), b64(81801.0)};
    ps_buf_t b = PS_BUF_INIT;
    assert_int_equal(roundtrip(t, v, 3, 0, &b), 21);
    assert_memory_equal(b.data, want, 21);
    /* the same with tbase t0: t0 is one byte */
    assert_int_equal(roundtrip(t, v, 3, t[0], &b), 16);
    assert_int_equal(b.data[1], 0x00);
    /* FORMAT.md repeats the specification (float_dense.c's head comment from "Why:", without its
     * " * ") and has the example */
    static char src[1 << 16], doc[1 << 20], spec[1 << 16];
    const char *files[2] = {PS_SOURCE_DIR "/storage/float_dense.c", PS_SOURCE_DIR "/docs/FORMAT.md"};
    char *bufs[2] = {src, doc};
    size_t caps[2] = {sizeof(src), sizeof(doc)};
    for (int f = 0; f < 2; f++) {
        FILE *fp = fopen(files[f], "rb");
        assert_non_null(fp);
        size_t n = fread(bufs[f], 1, caps[f] - 1, fp);
        fclose(fp);
        bufs[f][n] = 0;
    }
    const char *p = strstr(src, " * Why:"), *end = strstr(src, " */\n#include");
    assert_non_null(p);
    assert_non_null(end);
    size_t k = 0;
    while (p < end) {
        const char *nl = strchr(p, '\n');
        const char *from = strncmp(p, " * ", 3) == 0 ? p + 3 : p + 2; /* " *" alone: an empty line */
        memcpy(spec + k, from, (size_t)(nl + 1 - from));
        k += (size_t)(nl + 1 - from);
        p = nl + 1;
    }
    spec[k] = 0;
    assert_true(k > 1000);
    if (strstr(doc, spec) == NULL)
        fail_msg("docs/FORMAT.md does not repeat float_dense.c's specification (run the text over again)");
    assert_non_null(strstr(doc, "03 84 cf fd b3 c5 68 01 8a f1 09 e8 07 00 0a 0a 00 00 d6 b2 e0"));
    assert_non_null(strstr(doc, "  d6 b2 e0            zigzag(429) = 858"));
    ps_buf_dispose(&b);
}

/* The writer's choices on series of known shape: the mode byte (kind | dod << 2 | e << 3) and the
 * length. */
static void test_choices(void **state)
{
    (void)state;
    enum { N = 120 };
    int64_t t[N];
    uint64_t v[N];
    ps_buf_t b = PS_BUF_INIT;
    /* a constant on a regular grid: no bits at all after the header */
    for (int i = 0; i < N; i++)
        t[i] = 1700000000000ll + 15000ll * i, v[i] = b64(1500);
    /* n 1 | t0 6 | mode 1 | m[0] 2 | td1 2 | shift vw1 vw2 3 | tw1 tw2 2: every code is 0 */
    assert_int_equal(roundtrip(t, v, N, 0, &b), 17);
    assert_int_equal(b.data[7], 0x01); /* kind 1, e 0, deltas */
    /* CPU seconds: ticks / 100, kind 1, e 2 */
    int64_t ticks = 123456789;
    for (int i = 0; i < N; i++) {
        ticks += 1400 + (int64_t)(rnd() % 100);
        v[i] = b64((double)ticks / 100);
    }
    size_t len = roundtrip(t, v, N, 0, &b);
    assert_int_equal(b.data[7], 0x15); /* kind 1 | dod | e 2: the idle ticks' dods take 7-9 bits */
    assert_int_equal(len, 139);
    /* milliseconds * 0.001: kind 2 (m * 10^-3), e 3 */
    int64_t ms = 987654321;
    for (int i = 0; i < N; i++) {
        ms += (int64_t)(rnd() % 3000);
        v[i] = b64((double)ms * 0.001);
    }
    roundtrip(t, v, N, 0, &b);
    assert_int_equal(b.data[7] & 3, 2);
    assert_int_equal(b.data[7] >> 3, 3);
    /* pages: shift 12 (the byte after m[0] and td1) */
    int64_t pages = 4000000;
    for (int i = 0; i < N; i++) {
        pages += (int64_t)(rnd() % 64) - 32;
        v[i] = b64((double)(pages * 4096));
    }
    roundtrip(t, v, N, 0, &b);
    assert_int_equal(b.data[7], 0x01);
    /* n 1 | t0 6 | mode 1 | m[0] 5 (zigzag of about 1.6e10) | td1 2 | shift */
    assert_int_equal(b.data[1 + 6 + 1 + 5 + 2], 12);
    /* random doubles: kind 0, the XOR'd bits */
    for (int i = 0; i < N; i++)
        v[i] = b64(0.0005 + (double)(rnd() >> 11) / 9007199254740992.0 * 0.02);
    roundtrip(t, v, N, 0, &b);
    assert_int_equal(b.data[7], 0);
    /* one scrape in 20 off by up to 42 ms: the grid (bit 7 of tw1) */
    for (int i = 0; i < N; i++) {
        t[i] = 1700000000000ll + 15000ll * i + (i % 20 == 7 ? 42 : 0);
        v[i] = b64(1500);
    }
    len = roundtrip(t, v, N, 0, &b);
    /* the header of the constant (17 bytes, step 15000 in td1's place); 119 grid offsets: 113
     * zero codes of 1 bit and 6 of 1 + 7 bits (zigzag(42) = 84): 161 bits, 21 bytes */
    assert_int_equal(len, 17 + 21);
    assert_int_equal(b.data[15], 0x80 | 0);
    assert_int_equal(b.data[16], 7);
    ps_buf_dispose(&b);
}

/* Special values, sizes, extreme timestamps and values, any tbase: bits exactly. */
static void test_roundtrips(void **state)
{
    (void)state;
    enum { N = 65535 };
    int64_t *t = calloc(N, sizeof(*t));
    uint64_t *v = calloc(N, sizeof(*v));
    ps_buf_t b = PS_BUF_INIT;
    static const uint64_t special[] = {0x7ff0000000000002ull, 0x7ff8000000000001ull, 0xfff8000000000000ull,
                                       0x8000000000000000ull, 0x7ff0000000000000ull, 0xfff0000000000000ull,
                                       0x0000000000000001ull, 0x000fffffffffffffull, 0x7fefffffffffffffull, 0};
    for (int i = 0; i < 10; i++)
        t[i] = 1000 * (i + 1), v[i] = special[i];
    roundtrip(t, v, 10, 0, &b);
    /* each special value among decimals: the chunk is XOR'd bits */
    for (int s = 0; s < 10; s++) {
        for (int i = 0; i < 120; i++)
            t[i] = 15000ll * i, v[i] = b64(i * 0.25);
        v[60] = special[s];
        roundtrip(t, v, 120, 0, &b);
        roundtrip(t + 60, v + 60, 1, 15000 * 60, &b);
        roundtrip(t + 59, v + 59, 2, -5, &b);
        roundtrip(t + 58, v + 58, 3, 7, &b);
    }
    /* extreme timestamps, huge gaps, irregular steps */
    int64_t ext[5] = {-PS_FLOAT_DENSE_T_MAX, -1, 0, 1, PS_FLOAT_DENSE_T_MAX};
    for (int i = 0; i < 5; i++)
        v[i] = b64((double)i);
    roundtrip(ext, v, 5, 0, &b);
    roundtrip(ext, v, 5, PS_FLOAT_DENSE_T_MAX, &b);
    roundtrip(ext, v, 5, -PS_FLOAT_DENSE_T_MAX, &b);
    roundtrip(ext + 3, v, 2, 0, &b);
    for (int i = 0; i < 120; i++)
        t[i] = (i == 0 ? -1000000 : t[i - 1]) + 1 + (int64_t)(rnd() % (i % 7 == 0 ? 100000000 : 30));
    for (int i = 0; i < 120; i++)
        v[i] = b64((double)(int64_t)(rnd() % 2000000) - 1000000);
    roundtrip(t, v, 120, 0, &b);
    /* values at the edges of the decimal range: ±2^53, big exponents, tiny decimals */
    double edge[8] = {9007199254740992.0, -9007199254740992.0, 9007199254740991.0, 1e300, 1.5e-300, 0.1, 0.3, 123.456};
    for (int i = 0; i < 8; i++)
        t[i] = i, v[i] = b64(edge[i]);
    roundtrip(t, v, 8, 0, &b);
    for (int i = 0; i < 120; i++)
        t[i] = i, v[i] = b64((double)(int64_t)(rnd() % 1000000) / 1000000000000.0);
    roundtrip(t, v, 120, 0, &b);
    for (int i = 0; i < 120; i++)
        t[i] = i, v[i] = b64(i % 2 ? 9007199254740992.0 : -9007199254740992.0);
    roundtrip(t, v, 120, 0, &b);
    /* 65535 samples of a counter */
    double c = 0;
    for (int i = 0; i < N; i++) {
        c += (double)(rnd() % 1000);
        t[i] = 1700000000000ll + 15000ll * i, v[i] = b64(c);
    }
    roundtrip(t, v, N, 0, &b);
    /* random bits */
    for (int i = 0; i < 500; i++)
        t[i] = 1000 * i, v[i] = rnd();
    roundtrip(t, v, 500, 0, &b);
    free(t);
    free(v);
    ps_buf_dispose(&b);
}

static int decode_rc(const ps_buf_t *b, size_t len, int64_t tbase, ps_err_t *err)
{
    int64_t *t;
    uint64_t *v;
    uint32_t n;
    int rc = ps_float_dense_decode(b->data, len, tbase, &t, &v, &n, err);
    if (rc == 0) {
        free(t);
        free(v);
    } else {
        assert_int_equal(rc, PS_ECORRUPT);
        assert_null(t);
        assert_non_null(strstr(err->msg, "fdense: "));
    }
    return rc;
}

/* Damage: truncation, bit flips, trailing bytes, fields out of range. */
static void test_damage(void **state)
{
    (void)state;
    enum { N = 120 };
    int64_t t[N];
    uint64_t v[N];
    ps_buf_t b = PS_BUF_INIT, d = PS_BUF_INIT;
    ps_err_t err;
    for (int shape = 0; shape < 4; shape++) {
        int64_t ticks = 5000;
        for (int i = 0; i < N; i++) {
            t[i] = 1700000000000ll + 15000ll * i + (shape == 1 && i % 9 == 4 ? 17 : 0);
            ticks += (int64_t)(rnd() % 50);
            v[i] = shape == 2 ? rnd() : shape == 3 ? b64(1.0) : b64((double)ticks / 100);
        }
        roundtrip(t, v, N, 0, &b);
        for (size_t len = 0; len < b.len; len++) /* every truncation */
            assert_int_equal(decode_rc(&b, len, 0, &err), PS_ECORRUPT);
        ps_buf_reset(&d);
        ps_buf_append(&d, b.data, b.len);
        ps_buf_putc(&d, 0);
        assert_int_equal(decode_rc(&d, d.len, 0, &err), PS_ECORRUPT);
        assert_non_null(strstr(err.msg, "bytes or nonzero bits after the samples"));
        int failed = 0;
        for (size_t i = 0; i < b.len; i++) { /* every single-bit flip: an error or other samples */
            for (int bit = 0; bit < 8; bit++) {
                ps_buf_reset(&d);
                ps_buf_append(&d, b.data, b.len);
                d.data[i] ^= (uint8_t)(1u << bit);
                int64_t *dt;
                uint64_t *dv;
                uint32_t dn;
                int rc = ps_float_dense_decode(d.data, d.len, 0, &dt, &dv, &dn, &err);
                if (rc != 0) {
                    assert_int_equal(rc, PS_ECORRUPT);
                    failed++;
                    continue;
                }
                bool same = dn == N && memcmp(dt, t, sizeof(t)) == 0 && memcmp(dv, v, sizeof(v)) == 0;
                free(dt);
                free(dv);
                if (same)
                    fail_msg("shape %d byte %zu bit %d of %zu: the same samples", shape, i, bit, b.len);
            }
        }
        assert_true(failed > 0);
    }
    /* fields out of range, by hand: n 0, n 65536, a bad mode, widths over 64, a wide code that
     * fits the narrow width, timestamps that do not increase */
    static const uint8_t n0[] = {0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t nbig[] = {0x80, 0x80, 0x04, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0};
    static const uint8_t mode3[] = {0x01, 0x00, 0x03, 0x00};
    static const uint8_t mul0[] = {0x01, 0x00, 0x02, 0x00};
    static const uint8_t e19[] = {0x01, 0x00, 0x01 | 19 << 3, 0x00};
    static const uint8_t w65[] = {0x02, 0x00, 0x01, 0x00, 0x01, 0x00, 0x41, 0x41};
    static const uint8_t wide[] = {0x02, 0x00, 0x01, 0x00, 0x01, 0x00, 0x01, 0x08, 0x80, 0x80};
    static const uint8_t td0[] = {0x02, 0x00, 0x01, 0x00, 0x00, 0x00, 0x00, 0x00};
    static const uint8_t back[] = {0x03, 0x00, 0x01, 0x00, 0x0a, 0x00, 0x00, 0x00, 0x05, 0x05, 0xc8};
    static const uint8_t ok1[] = {0x01, 0x00, 0x01, 0x00};
    struct {
        const uint8_t *p;
        size_t n;
        const char *what;
    } cases[] = {{n0, sizeof(n0), "bad sample count"},
                 {nbig, sizeof(nbig), "bad sample count"},
                 {mode3, sizeof(mode3), "bad mode"},
                 {mul0, sizeof(mul0), "bad mode"},
                 {e19, sizeof(e19), "bad mode"},
                 {w65, sizeof(w65), "bad value widths"},
                 {wide, sizeof(wide), "a wide code that fits the narrow width"},
                 {td0, sizeof(td0), "bad second timestamp"},
                 {back, sizeof(back), "timestamps do not increase"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_buf_reset(&d);
        ps_buf_append(&d, cases[i].p, cases[i].n);
        assert_int_equal(decode_rc(&d, d.len, 0, &err), PS_ECORRUPT);
        if (strstr(err.msg, cases[i].what) == NULL)
            fail_msg("case %zu: %s, want %s", i, err.msg, cases[i].what);
    }
    /* the smallest chunk: 1 sample, t 0, m 0 -> +0.0 */
    ps_buf_reset(&d);
    ps_buf_append(&d, ok1, sizeof(ok1));
    assert_int_equal(decode_rc(&d, d.len, 0, &err), 0);
    /* t0 past the limit with tbase */
    assert_int_equal(decode_rc(&d, d.len, PS_FLOAT_DENSE_T_MAX + 1, &err), PS_ECORRUPT);
    ps_buf_dispose(&b);
    ps_buf_dispose(&d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_golden),
        cmocka_unit_test(test_choices),
        cmocka_unit_test(test_roundtrips),
        cmocka_unit_test(test_damage),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
