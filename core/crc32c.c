/*
 * crc32c.c - CRC-32C, slicing by 8 (crc32c.h). table[0] is the classic byte-at-a-time table of the
 * reflected polynomial; table[k][b] is the CRC of byte b followed by k zero bytes, so 8 input
 * bytes are folded with 8 lookups.
 */
#include "crc32c.h"

#include <pthread.h>

#define POLY 0x82F63B78u

static uint32_t table[8][256];
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void build(void)
{
    for (uint32_t b = 0; b < 256; b++) {
        uint32_t c = b;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ POLY : c >> 1;
        table[0][b] = c;
    }
    for (uint32_t b = 0; b < 256; b++)
        for (int k = 1; k < 8; k++)
            table[k][b] = (table[k - 1][b] >> 8) ^ table[0][table[k - 1][b] & 0xff];
}

uint32_t ps_crc32c(uint32_t crc, const void *p, size_t n)
{
    const uint8_t *s = p;
    pthread_once(&once, build);
    crc = ~crc;
    while (n >= 8) {
        uint32_t lo = crc ^ ((uint32_t)s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16 | (uint32_t)s[3] << 24);
        crc = table[7][lo & 0xff] ^ table[6][(lo >> 8) & 0xff] ^ table[5][(lo >> 16) & 0xff] ^ table[4][lo >> 24] ^
              table[3][s[4]] ^ table[2][s[5]] ^ table[1][s[6]] ^ table[0][s[7]];
        s += 8;
        n -= 8;
    }
    while (n--)
        crc = (crc >> 8) ^ table[0][(crc ^ *s++) & 0xff];
    return ~crc;
}
