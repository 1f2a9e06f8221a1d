/*
 * fuzz_xorchunk.c - libFuzzer target for the float chunk decoder (storage/xorchunk.c).
 *
 * Arbitrary bytes go through ps_xor_iter_* and ps_xor_validate; neither may crash or read outside
 * the bytes (ASan), and they must agree. A chunk that reads cleanly must have strictly increasing
 * timestamps and exactly its header's count of samples; the appender re-encodes those samples to
 * a chunk that validates and decodes to the same samples, bit for bit; and ps_xor_app_resume on
 * the input continues it with one more sample that reads back too.
 *
 * Build: tests/fuzz/build.sh (clang, ASan + UBSan); run: tests/fuzz/run.sh 60 fuzz_xorchunk.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "storage/xorchunk.h"

#include "fuzzutil.h"

typedef struct sample {
    int64_t t;
    uint64_t v;
} sample_t;

/* Reads p fully into s (room for PS_XOR_MAX_SAMPLES); returns the count or -1. */
static long read_all_as(const uint8_t *p, size_t len, sample_t *s, bool foreign)
{
    ps_xor_iter_t it;
    ps_err_t err;
    long k = 0;
    if (foreign)
        ps_xor_iter_init_foreign(&it, p, len);
    else
        ps_xor_iter_init(&it, p, len);
    while (ps_xor_iter_next(&it)) {
        CHECK(k < PS_XOR_MAX_SAMPLES);
        CHECK(k == 0 || it.t > s[k - 1].t);
        s[k].t = it.t;
        memcpy(&s[k].v, &it.v, sizeof(s[k].v));
        k++;
    }
    CHECK(ps_xor_iter_next(&it) == 0); /* sticky */
    int r = ps_xor_iter_err(&it, &err);
    if (r != 0) {
        CHECK(r == PS_ECORRUPT && err.code == PS_ECORRUPT && strncmp(err.msg, "xorchunk: ", 10) == 0);
        CHECK(err.pos >= 0 && (size_t)err.pos <= len);
        return -1;
    }
    CHECK((uint32_t)k == ps_xor_count(p, len));
    return k;
}

static long read_all(const uint8_t *p, size_t len, sample_t *s) { return read_all_as(p, len, s, false); }

static sample_t s1[PS_XOR_MAX_SAMPLES + 1], s2[PS_XOR_MAX_SAMPLES + 1];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_err_t err;
    /* a chunk of another writer: what the stored-chunk reader takes, it takes the same */
    long nf = read_all_as(data, size, s2, true);
    long n = read_all(data, size, s1);
    CHECK(n < 0 || (nf == n && memcmp(s1, s2, (size_t)n * sizeof(sample_t)) == 0));
    int rv = ps_xor_validate(data, size, &err);
    CHECK(rv == 0 || rv == PS_ECORRUPT);
    CHECK((rv == 0) == (n > 0));
    if (n < 0)
        return 0;

    /* re-encode */
    ps_buf_t b = PS_BUF_INIT;
    ps_xor_app_t a;
    ps_xor_app_init(&a, &b);
    for (long i = 0; i < n; i++) {
        double v;
        memcpy(&v, &s1[i].v, sizeof(v));
        CHECK(ps_xor_app_append(&a, s1[i].t, v, &err) == 0);
    }
    CHECK(read_all(b.data, b.len, s2) == n);
    CHECK(memcmp(s1, s2, (size_t)n * sizeof(sample_t)) == 0);

    /* resume the input and append one sample */
    ps_buf_reset(&b);
    ps_buf_append(&b, data, size);
    CHECK(ps_xor_app_resume(&a, &b, 0, &err) == 0);
    if (n < PS_XOR_MAX_SAMPLES && (n == 0 || s1[n - 1].t < INT64_MAX)) {
        int64_t t = n == 0 ? 0 : s1[n - 1].t + 1;
        CHECK(ps_xor_app_append(&a, t, 0.5, &err) == 0);
        CHECK(read_all(b.data, b.len, s2) == n + 1);
        CHECK(memcmp(s1, s2, (size_t)n * sizeof(sample_t)) == 0);
        CHECK(s2[n].t == t && s2[n].v == 0x3fe0000000000000ull);
    }
    ps_buf_dispose(&b);
    return 0;
}

/* With PS_FUZZ_XORCHUNK_SEEDS=DIR in the environment, writes a few valid chunks there as a seed
 * corpus (tests/fuzz/run.sh uses it): counters, gauges, constants, random bits, jittered and
 * irregular timestamps. */
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
    const char *dir = getenv("PS_FUZZ_XORCHUNK_SEEDS");
    if (dir == NULL)
        return 0;
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int s = 0; s < 24; s++) {
        ps_buf_t b = PS_BUF_INIT;
        ps_xor_app_t a;
        ps_err_t err;
        ps_xor_app_init(&a, &b);
        int64_t t = 1796021924802;
        double cnt = 0;
        int n = 1 + s * 5;
        for (int i = 0; i < n; i++) {
            ps_fuzz_lcg(&x);
            double v;
            uint64_t vb = x;
            switch (s % 4) {
            case 0: v = cnt += (double)(x >> 58); break;
            case 1: v = (double)(x >> 44) / 100.0; break;
            case 2: v = 1.0; break;
            default: memcpy(&v, &vb, sizeof(v)); break;
            }
            ps_xor_app_append(&a, t, v, &err);
            t += s % 3 == 0 ? 15000 : s % 3 == 1 ? 15000 + (int64_t)(x >> 54) - 512 : 1 + (int64_t)(x >> 30);
        }
        ps_fuzz_write_seed(dir, "xorchunk", s, b.data, b.len);
        ps_buf_dispose(&b);
    }
    return 0;
}
