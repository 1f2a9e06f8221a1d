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
