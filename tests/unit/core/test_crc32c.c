/*
 * test_crc32c.c - unit tests for core/crc32c.c: the check value, the iSCSI vectors of RFC 3720
 * (B.4), incremental use, and agreement with a bit-at-a-time reference at every length and
 * alignment up to 100 bytes.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "core/crc32c.h"

static uint32_t reference(const uint8_t *p, size_t n)
{
    uint32_t c = 0xffffffffu;
    for (size_t i = 0; i < n; i++) {
        c ^= p[i];
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
}

static void test_vectors(void **state)
{
    uint8_t b[32];
    assert_int_equal(ps_crc32c(0, "123456789", 9), 0xe3069283u);
    assert_int_equal(ps_crc32c(0, "", 0), 0u);
    memset(b, 0, sizeof(b));
    assert_int_equal(ps_crc32c(0, b, 32), 0x8a9136aau);
    memset(b, 0xff, sizeof(b));
    assert_int_equal(ps_crc32c(0, b, 32), 0x62a8ab43u);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)i;
    assert_int_equal(ps_crc32c(0, b, 32), 0x46dd794eu);
    for (int i = 0; i < 32; i++)
        b[i] = (uint8_t)(31 - i);
    assert_int_equal(ps_crc32c(0, b, 32), 0x113fdb5cu);
}

static void test_incremental_and_reference(void **state)
{
    uint8_t buf[108];
    uint32_t x = 12345;
    for (size_t i = 0; i < sizeof(buf); i++) {
        x = x * 1103515245u + 12345u;
        buf[i] = (uint8_t)(x >> 16);
    }
    for (size_t off = 0; off < 8; off++)
        for (size_t n = 0; n <= 100; n++) {
            uint32_t want = reference(buf + off, n);
            assert_int_equal(ps_crc32c(0, buf + off, n), want);
            for (size_t cut = 0; cut <= n; cut += 7)
                assert_int_equal(ps_crc32c(ps_crc32c(0, buf + off, cut), buf + off + cut, n - cut), want);
        }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_vectors),
        cmocka_unit_test(test_incremental_and_reference),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
