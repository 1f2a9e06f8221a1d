/*
 * encode.c - hex and base64 (encode.h).
 */
#include "encode.h"

int ps_hex_decode(const char *s, size_t n, uint8_t *out, size_t *bad)
{
    size_t i = 0;
    if (n % 2 != 0) {
        i = n;
        goto Bad;
    }
    for (; i < n; i += 2) {
        int hi = ps_hex_digit((unsigned char)s[i]);
        if (hi < 0)
            goto Bad;
        int lo = ps_hex_digit((unsigned char)s[i + 1]);
        if (lo < 0) {
            i++;
            goto Bad;
        }
        out[i / 2] = (uint8_t)(hi << 4 | lo);
    }
    return 0;
Bad:
    if (bad != NULL)
        *bad = i;
    return -1;
}
