/*
 * fuzz_float_dense.c - libFuzzer target for the dense float chunk codec (storage/float_dense.c).
 *
 * The first byte picks a tbase (0, a 2026 timestamp, the extremes, -5) and a mode:
 * - bit 7 clear: the rest is a dense chunk. ps_float_dense_decode must not crash or read outside it
 *   (ASan); it fails with PS_ECORRUPT "fdense: ..." or gives 1..65535 samples with strictly
 *   increasing timestamps within ±9223372036854 ms. Those samples re-encode to a chunk that
 *   decodes to the same samples, bit for bit, and transcode to a XOR chunk that reads back the
 *   same samples too.
 * - bit 7 set: the rest is samples (8 bytes: a timestamp step of 1..2^20 or, one in 16, a huge
 *   one, then 8 bytes of float64 bits, or a small decimal); encode, decode: the same bits, and
 *   the XOR transcode is what ps_xor_app writes for them.
 *
 * Build: tests/fuzz/build.sh (clang, ASan + UBSan); run: tests/fuzz/run.sh 60 fuzz_float_dense.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PS_FUZZ_NAME "fuzz_float_dense"
#include "storage/float_dense.h"
#include "storage/xorchunk.h"

#include "fuzzutil.h"

static const int64_t tbases[8] = {0, 1796021924802ll, -PS_FLOAT_DENSE_T_MAX, PS_FLOAT_DENSE_T_MAX, -5, 0, 1, 15000};

/* t, v (k samples) encode with tbase and come back bit for bit; the chunk transcodes to the XOR
 * chunk ps_xor_app writes for them. */
static void roundtrip(const int64_t *t, const uint64_t *v, uint32_t k, int64_t tbase)
{
    ps_buf_t b = PS_BUF_INIT, x = PS_BUF_INIT, want = PS_BUF_INIT;
    ps_err_t err;
    ps_float_dense_encode(t, v, k, tbase, &b);
    int64_t *t2;
    uint64_t *v2;
    uint32_t k2;
    int rc = ps_float_dense_decode(b.data, b.len, tbase, &t2, &v2, &k2, &err);
    CHECK(rc == 0, "re-encoded chunk fails: %s", err.msg);
    CHECK(k2 == k && memcmp(t2, t, k * sizeof(*t)) == 0 && memcmp(v2, v, k * sizeof(*v)) == 0,
          "re-encoded chunk decodes to other samples");
    free(t2);
    free(v2);
    CHECK(ps_float_dense_to_xor(b.data, b.len, tbase, &x, &err) == 0, "transcode: %s", err.msg);
    ps_xor_app_t a;
    ps_xor_app_init(&a, &want);
    for (uint32_t i = 0; i < k; i++) {
        double f;
        memcpy(&f, &v[i], 8);
        CHECK(ps_xor_app_append(&a, t[i], f, &err) == 0, "xor append: %s", err.msg);
    }
    CHECK(x.len == want.len && memcmp(x.data, want.data, x.len) == 0, "transcoded XOR chunk differs");
    ps_buf_dispose(&b);
    ps_buf_dispose(&x);
    ps_buf_dispose(&want);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int64_t tbase = tbases[data[0] & 7];
    if (!(data[0] & 0x80)) {
        int64_t *t;
        uint64_t *v;
        uint32_t k;
        ps_err_t err;
        int rc = ps_float_dense_decode(data + 1, size - 1, tbase, &t, &v, &k, &err);
        if (rc != 0) {
            CHECK(rc == PS_ECORRUPT && err.code == PS_ECORRUPT && strncmp(err.msg, "fdense: ", 8) == 0,
                  "bad error %d: %s", rc, err.msg);
            CHECK(t == NULL && v == NULL && k == 0, "outputs set on error");
            return 0;
        }
        CHECK(k >= 1 && k <= PS_FLOAT_DENSE_MAX_SAMPLES, "count %u", k);
        for (uint32_t i = 0; i < k; i++) {
            CHECK(t[i] >= -PS_FLOAT_DENSE_T_MAX && t[i] <= PS_FLOAT_DENSE_T_MAX, "t out of range");
            CHECK(i == 0 || t[i] > t[i - 1], "t not increasing");
        }
        roundtrip(t, v, k, tbase);
        free(t);
        free(v);
        return 0;
    }
    /* samples from the bytes */
    size_t k = (size - 1) / 9;
    if (k == 0)
        return 0;
    if (k > PS_FLOAT_DENSE_MAX_SAMPLES)
        k = PS_FLOAT_DENSE_MAX_SAMPLES;
    int64_t *t = malloc(k * sizeof(*t));
    uint64_t *v = malloc(k * sizeof(*v));
    const uint8_t *p = data + 1;
    int64_t at = tbase > PS_FLOAT_DENSE_T_MAX - 1000000 ? PS_FLOAT_DENSE_T_MAX - 1000000 : tbase;
    size_t n = 0;
    for (size_t i = 0; i < k; i++, p += 9) {
        uint64_t u;
        memcpy(&u, p + 1, 8);
        int64_t step = p[0] % 16 == 15 ? (int64_t)(u >> 24) + 1 : 1 + (int64_t)(p[0] >> 4) * 4999 + (int64_t)(u & 0xff);
        if (i > 0) {
            if (step > PS_FLOAT_DENSE_T_MAX - at)
                break;
            at += step;
        }
        t[n] = at;
        switch (p[0] & 3) {
        case 0: v[n] = u; break; /* any bits */
        case 1: { double d = (double)(int64_t)(u % 2000001) - 1000000; memcpy(&v[n], &d, 8); } break;
        case 2: { double d = (double)(int64_t)(u % 100000000) / 100; memcpy(&v[n], &d, 8); } break;
        default: { double d = (double)(int64_t)(u % 100000000) * 0.001; memcpy(&v[n], &d, 8); } break;
        }
        n++;
    }
    roundtrip(t, v, (uint32_t)n, tbase);
    free(t);
    free(v);
    return 0;
}

/* With PS_FUZZ_FLOAT_DENSE_SEEDS=DIR in the environment, writes a few valid chunks there as a seed
 * corpus (tests/fuzz/run.sh uses it): counters, decimals, pages, constants, random bits, jittered
 * and irregular timestamps; and a few sample inputs (bit 7 set). */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    (void)argc, (void)argv;
    const char *dir = getenv("PS_FUZZ_FLOAT_DENSE_SEEDS");
    if (dir == NULL)
        return 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    int64_t t[120];
    uint64_t v[120];
    for (int s = 0; s < 24; s++) {
        int n = 1 + s * 5;
        int64_t at = 1796021924802ll, m = 1000000;
        for (int i = 0; i < n; i++) {
            ps_fuzz_lcg(&x);
            m += (int64_t)(x >> 58);
            double d = s % 5 == 0 ? (double)m : s % 5 == 1 ? (double)m / 100 : s % 5 == 2 ? (double)(m * 4096)
                                                               : s % 5 == 3 ? 1.0 : 0;
            memcpy(&v[i], &d, 8);
            if (s % 5 == 4)
                v[i] = x;
            t[i] = at;
            at += s % 3 == 0 ? 15000 : s % 3 == 1 ? 15000 + (i % 20 == 3 ? 42 : 0) : 1 + (int64_t)(x >> 40);
        }
        ps_buf_t b = PS_BUF_INIT;
        ps_buf_putc(&b, 0);
        ps_float_dense_encode(t, v, (uint32_t)n, 0, &b);
        ps_fuzz_write_seed(dir, "float_dense", s, b.data, b.len);
        ps_buf_dispose(&b);
    }
    for (int s = 0; s < 4; s++) {
        uint8_t in[1 + 9 * 40];
        in[0] = (uint8_t)(0x80 | s);
        for (int i = 0; i < 40; i++) {
            ps_fuzz_lcg(&x);
            in[1 + 9 * i] = (uint8_t)(s | (i % 7) << 4);
            memcpy(in + 2 + 9 * i, &x, 8);
        }
        ps_fuzz_write_seed(dir, "float_dense-samples", s, in, sizeof(in));
    }
    return 0;
}
