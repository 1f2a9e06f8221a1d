/*
 * encode.c - hex and base64 (encode.h).
 */
#include "encode.h"

#include <openssl/evp.h>
#include <stdbool.h>
#include <string.h>
#include <strings.h>

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

/* EVP_*Block take an int length: long inputs go through in pieces of these sizes (a multiple of 3
 * bytes, and of 4 characters). */
#define ENC_PIECE (3 * 4096)
#define DEC_PIECE 4096

size_t ps_base64_encode(const uint8_t *in, size_t n, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < n; i += ENC_PIECE) {
        size_t k = n - i < ENC_PIECE ? n - i : ENC_PIECE;
        o += (size_t)EVP_EncodeBlock((unsigned char *)out + o, in + i, (int)k);
    }
    out[o] = 0;
    return o;
}

/* 0..63 for the standard alphabet; the URL alphabet's '-' and '_' as 64 + (62 or 63) */
static int b64_digit(unsigned char c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    switch (c) {
    case '+': return 62;
    case '/': return 63;
    case '-': return 64 + 62;
    case '_': return 64 + 63;
    default: return -1;
    }
}

long ps_base64_decode(const char *s, size_t n, ps_base64_form_t form, uint8_t *out, size_t *bad)
{
    size_t m = n, at = n;
    if (form == PS_B64_STRICT) {
        if (n % 4 != 0)
            goto Bad;
        while (m > 0 && n - m < 2 && s[m - 1] == '=')
            m--;
    } else {
        while (m > 0 && s[m - 1] == '=')
            m--;
        if (n - m > 2 || m % 4 == 1)
            goto Bad;
    }
    /* EVP_DecodeBlock reads '=' as a digit of value 0 and white space at the ends as nothing:
     * every character is checked here first */
    for (at = 0; at < m; at++) {
        int d = b64_digit((unsigned char)s[at]);
        if (d < 0 || (d >= 64 && form == PS_B64_STRICT))
            goto Bad;
    }
    /* in pieces: the URL alphabet made standard, the last piece padded; EVP_DecodeBlock writes
     * the padding's zero bytes too */
    size_t o = 0;
    unsigned char piece[DEC_PIECE];
    for (size_t i = 0; i < m; i += DEC_PIECE) {
        size_t k = m - i < DEC_PIECE ? m - i : DEC_PIECE, pad = (4 - k % 4) % 4;
        for (size_t j = 0; j < k; j++)
            piece[j] = s[i + j] == '-' ? '+' : s[i + j] == '_' ? '/' : (unsigned char)s[i + j];
        memset(piece + k, '=', pad);
        int w = EVP_DecodeBlock(out + o, piece, (int)(k + pad));
        if (w < 0 || (size_t)w != (k + pad) / 4 * 3)
            goto Bad; /* not reached: checked above */
        o += (size_t)w - pad;
    }
    return (long)o;
Bad:
    if (bad != NULL)
        *bad = at;
    return -1;
}

void ps_uuid_text(const uint8_t u[16], char out[36])
{
    /* a SelectSeries answer writes one per point: two digits a byte from a table, the dashes at
     * their places */
    static const char pairs[513] = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
                                   "202122232425262728292a2b2c2d2e2f303132333435363738393a3b3c3d3e3f"
                                   "404142434445464748494a4b4c4d4e4f505152535455565758595a5b5c5d5e5f"
                                   "606162636465666768696a6b6c6d6e6f707172737475767778797a7b7c7d7e7f"
                                   "808182838485868788898a8b8c8d8e8f909192939495969798999a9b9c9d9e9f"
                                   "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
                                   "c0c1c2c3c4c5c6c7c8c9cacbcccdcecfd0d1d2d3d4d5d6d7d8d9dadbdcdddedf"
                                   "e0e1e2e3e4e5e6e7e8e9eaebecedeeeff0f1f2f3f4f5f6f7f8f9fafbfcfdfeff";
    static const uint8_t at[16] = {0, 2, 4, 6, 9, 11, 14, 16, 19, 21, 24, 26, 28, 30, 32, 34};
    for (int i = 0; i < 16; i++)
        memcpy(out + at[i], pairs + 2 * u[i], 2);
    out[8] = out[13] = out[18] = out[23] = '-';
}

int ps_uuid_scan(const char *s, size_t n, uint8_t out[16])
{
    if (n == 45 && strncasecmp(s, "urn:uuid:", 9) == 0) {
        s += 9;
        n -= 9;
    } else if (n == 38 && s[0] == '{' && s[37] == '}') {
        s++;
        n -= 2;
    }
    bool dashed = n == 36;
    if (!dashed && n != 32)
        return -1;
    if (dashed && (s[8] != '-' || s[13] != '-' || s[18] != '-' || s[23] != '-'))
        return -1;
    size_t k = 0;
    for (int i = 0; i < 16; i++) {
        if (dashed && (k == 8 || k == 13 || k == 18 || k == 23))
            k++;
        int hi = ps_hex_digit((unsigned char)s[k]), lo = ps_hex_digit((unsigned char)s[k + 1]);
        if (hi < 0 || lo < 0)
            return -1;
        out[i] = (uint8_t)(hi << 4 | lo);
        k += 2;
    }
    return 0;
}
