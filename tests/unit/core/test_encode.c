/*
 * test_encode.c - unit tests for src/core/encode.c: hex digits of either case, decoding with the
 * offset of the first bad digit and odd lengths.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_digit),
        cmocka_unit_test(test_hex_decode),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
