/*
 * test_encode.c - unit tests for core/encode.c: hex digits of either case, decoding with the
 * offset of the first bad digit and odd lengths; base64 both ways (RFC 4648 section 10's vectors),
 * what each form accepts and refuses, EVP_DecodeBlock's quirks kept out ('=' inside, white space,
 * the padding's bytes), long inputs in pieces, and agreement with a bit-at-a-time reference.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/encode.h"

static void test_hex_digit(void **state)
{
    for (int c = -1; c < 256; c++) {
        int want = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        assert_int_equal(ps_hex_digit(c), want);
    }
    assert_int_equal(ps_hex_digit('g'), -1);
    assert_int_equal(ps_hex_digit('G'), -1);
    assert_int_equal(ps_hex_digit('/'), -1);
    assert_int_equal(ps_hex_digit(':'), -1);
    assert_int_equal(ps_hex_digit('@'), -1);
    assert_int_equal(ps_hex_digit('`'), -1);
}

static void test_hex_decode(void **state)
{
    uint8_t out[8];
    size_t bad = 99;
    assert_int_equal(ps_hex_decode("00ff7FaB", 8, out, &bad), 0);
    assert_memory_equal(out, "\x00\xff\x7f\xab", 4);
    assert_int_equal(bad, 99);
    assert_int_equal(ps_hex_decode("", 0, out, &bad), 0);
    /* the offset of the first bad character: high or low digit */
    assert_int_equal(ps_hex_decode("0g12", 4, out, &bad), -1);
    assert_int_equal(bad, 1);
    assert_int_equal(ps_hex_decode("01x2", 4, out, &bad), -1);
    assert_int_equal(bad, 2);
    assert_int_equal(ps_hex_decode("01 2", 4, out, &bad), -1);
    assert_int_equal(bad, 2);
    assert_int_equal(ps_hex_decode("01\xc3\xa9", 4, out, &bad), -1);
    assert_int_equal(bad, 2);
    /* odd length: n, even if a digit is bad too */
    assert_int_equal(ps_hex_decode("012", 3, out, &bad), -1);
    assert_int_equal(bad, 3);
    assert_int_equal(ps_hex_decode("x12", 3, out, &bad), -1);
    assert_int_equal(bad, 3);
    assert_int_equal(ps_hex_decode("0x", 2, out, NULL), -1);
    /* a NUL inside n is a bad digit */
    assert_int_equal(ps_hex_decode("01\0" "2", 4, out, &bad), -1);
    assert_int_equal(bad, 2);
}

static void test_base64_encode(void **state)
{
    static const char *const want[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    char out[16];
    for (size_t n = 0; n <= 6; n++) {
        memset(out, 'x', sizeof(out));
        assert_int_equal(ps_base64_encode((const uint8_t *)"foobar", n, out), strlen(want[n]));
        assert_string_equal(out, want[n]);
        assert_int_equal(PS_BASE64_LEN(n), strlen(want[n]));
    }
    assert_int_equal(ps_base64_encode((const uint8_t *)"\xfb\xff\xbf", 3, out), 4);
    assert_string_equal(out, "+/+/");
}

/* decodes s, or returns -1 and *bad */
static long dec(const char *s, ps_base64_form_t form, char *out, size_t *bad)
{
    size_t n = strlen(s);
    uint8_t buf[64];
    assert_true(PS_BASE64_DECODED_MAX(n) <= sizeof(buf));
    *bad = 999;
    long k = ps_base64_decode(s, n, form, buf, bad);
    if (k >= 0) {
        memcpy(out, buf, (size_t)k);
        out[k] = 0;
    }
    return k;
}

static void test_base64_strict(void **state)
{
    char out[64];
    size_t bad;
    static const char *const in[] = {"", "Zg==", "Zm8=", "Zm9v", "Zm9vYg==", "Zm9vYmE=", "Zm9vYmFy"};
    for (size_t n = 0; n <= 6; n++) {
        assert_int_equal(dec(in[n], PS_B64_STRICT, out, &bad), n);
        assert_memory_equal(out, "foobar", n);
    }
    assert_int_equal(dec("YWxpY2U6czNjcjN0", PS_B64_STRICT, out, &bad), 12);
    assert_string_equal(out, "alice:s3cr3t");
    assert_int_equal(dec("+/+/", PS_B64_STRICT, out, &bad), 3);
    assert_memory_equal(out, "\xfb\xff\xbf", 3);
    /* length: not a multiple of 4 (padding missing) */
    static const char *const badlen[] = {"Zg", "Zg=", "Zm8", "Zm9vY", "Zm9v\n", " Zm9v"};
    for (size_t i = 0; i < sizeof(badlen) / sizeof(badlen[0]); i++) {
        assert_int_equal(dec(badlen[i], PS_B64_STRICT, out, &bad), -1);
        assert_int_equal(bad, strlen(badlen[i]));
    }
    /* characters: the URL alphabet, '=' anywhere but the last two, white space inside */
    struct { const char *s; size_t at; } badc[] = {
        {"Zm-v", 2}, {"Zm_v", 2}, {"Z=9v", 1}, {"Zm9v=g==", 4}, {"Zm=v", 2}, {"Z===", 1}, {"====", 0},
        {"Zm9v====", 4}, {"Zm 9", 2}, {"Zm9\n", 3}, {"Zm9\r", 3}, {"Zm9.", 3}, {"Zm9\xc3", 3},
    };
    for (size_t i = 0; i < sizeof(badc) / sizeof(badc[0]); i++) {
        assert_int_equal(dec(badc[i].s, PS_B64_STRICT, out, &bad), -1);
        assert_int_equal(bad, badc[i].at);
    }
    /* bits left over in the last digit are ignored, as Go's StdEncoding does */
    assert_int_equal(dec("Zh==", PS_B64_STRICT, out, &bad), 1);
    assert_string_equal(out, "f");
    assert_int_equal(dec("Zm9=", PS_B64_STRICT, out, &bad), 2);
    assert_string_equal(out, "fo");
    /* NUL bytes decode as bytes */
    assert_int_equal(dec("AAAA", PS_B64_STRICT, out, &bad), 3);
    assert_memory_equal(out, "\0\0\0", 3);
}

static void test_base64_lenient(void **state)
{
    char out[64];
    size_t bad;
    struct { const char *s; const char *want; size_t n; } ok[] = {
        {"", "", 0}, {"=", "", 0}, {"==", "", 0},
        {"Zg", "f", 1}, {"Zg=", "f", 1}, {"Zg==", "f", 1},
        {"Zm8", "fo", 2}, {"Zm8=", "fo", 2}, {"Zm8==", "fo", 2},
        {"Zm9v", "foo", 3}, {"Zm9v=", "foo", 3}, {"Zm9v==", "foo", 3},
        {"Zm9vYmFy", "foobar", 6},
        {"-_-_", "\xfb\xff\xbf", 3}, {"+/-_", "\xfb\xff\xbf", 3}, {"-/+_", "\xfb\xff\xbf", 3},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        assert_int_equal(dec(ok[i].s, PS_B64_LENIENT, out, &bad), ok[i].n);
        assert_memory_equal(out, ok[i].want, ok[i].n);
    }
    /* length: one character over, or more than two '=' */
    static const char *const badlen[] = {"Z", "Z=", "Zm9vY", "Zm9vY==", "===", "Zg===", "Zm9v===="};
    for (size_t i = 0; i < sizeof(badlen) / sizeof(badlen[0]); i++) {
        assert_int_equal(dec(badlen[i], PS_B64_LENIENT, out, &bad), -1);
        assert_int_equal(bad, strlen(badlen[i]));
    }
    struct { const char *s; size_t at; } badc[] = {
        {"Z=g=", 1}, {"Zm=v", 2}, {"Zm 9", 2}, {" Zm9", 0}, {"Zm9\n", 3}, {"Zm9v\n\n=", 4}, {"Zm9.", 3}, {"=Zm9", 0}, {"Z=Z", 1},
    };
    for (size_t i = 0; i < sizeof(badc) / sizeof(badc[0]); i++) {
        assert_int_equal(dec(badc[i].s, PS_B64_LENIENT, out, &bad), -1);
        assert_int_equal(bad, badc[i].at);
    }
}

/* every length to past two pieces (EVP's int length is fed 4096 characters at a time), both
 * ways, against a bit-at-a-time reference */
static void test_base64_long(void **state)
{
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t max = 3 * 4096 + 50;
    uint8_t *in = malloc(max), *back = malloc(PS_BASE64_DECODED_MAX(PS_BASE64_LEN(max)));
    char *enc = malloc(PS_BASE64_LEN(max) + 1), *ref = malloc(PS_BASE64_LEN(max) + 1);
    for (size_t i = 0; i < max; i++)
        in[i] = (uint8_t)(i * 7919 >> 3);
    for (size_t n = 0; n <= max; n += n < 64 ? 1 : n > 3 * 4096 - 8 ? 1 : 97) {
        size_t k = 0;
        uint32_t acc = 0;
        int bits = 0;
        for (size_t i = 0; i < n; i++) {
            acc = acc << 8 | in[i];
            bits += 8;
            while (bits >= 6) {
                bits -= 6;
                ref[k++] = tab[acc >> bits & 63];
            }
        }
        if (bits > 0)
            ref[k++] = tab[acc << (6 - bits) & 63];
        while (k % 4 != 0)
            ref[k++] = '=';
        ref[k] = 0;
        assert_int_equal(ps_base64_encode(in, n, enc), k);
        assert_string_equal(enc, ref);
        size_t bad;
        assert_int_equal(ps_base64_decode(enc, k, PS_B64_STRICT, back, &bad), n);
        assert_memory_equal(back, in, n);
        size_t m = k;
        while (m > 0 && enc[m - 1] == '=')
            m--;
        for (size_t i = 0; i < m; i++)
            enc[i] = enc[i] == '+' ? '-' : enc[i] == '/' ? '_' : enc[i];
        assert_int_equal(ps_base64_decode(enc, m, PS_B64_LENIENT, back, &bad), n);
        assert_memory_equal(back, in, n);
    }
    free(in);
    free(back);
    free(enc);
    free(ref);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_digit),
        cmocka_unit_test(test_hex_decode),
        cmocka_unit_test(test_base64_encode),
        cmocka_unit_test(test_base64_strict),
        cmocka_unit_test(test_base64_lenient),
        cmocka_unit_test(test_base64_long),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
