/*
 * encode.h - bytes as text: hex digits and base64, the one copy of each every room uses.
 *
 * Hex: either case ("0-9a-fA-F"), two digits a byte, the high nibble first.
 * Base64 (RFC 4648): OpenSSL's EVP_EncodeBlock and EVP_DecodeBlock do the work; this header adds
 * the checks they lack (EVP_DecodeBlock reads '=' anywhere as a zero digit, skips white space at
 * the ends and counts the padding as decoded bytes) and the two forms our inputs come in:
 *   PS_B64_STRICT   the standard alphabet, padded to a multiple of 4 with one or two '=' (Go's
 *                   base64.StdEncoding: HTTP basic auth);
 *   PS_B64_LENIENT  the standard or the URL alphabet ('-' '_' for '+' '/', in any mix), padding
 *                   optional (at most two '=' at the end, their number not checked), a length
 *                   that leaves one character over refused (protojson's bytes fields).
 * Bits left over in the last character are ignored in both (Go's decoders, not Strict()).
 */
#ifndef PS_CORE_ENCODE_H
#define PS_CORE_ENCODE_H

#include <stddef.h>
#include <stdint.h>

/** The value of a hex digit of either case (0..15), or -1 for any other c (EOF too). */
static inline int ps_hex_digit(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/** Decodes the n hex digits of s (n even) into out (n / 2 bytes). Returns 0, or -1 with *bad
 *  (if not NULL) the offset of the first character that is not a hex digit, or n when n is odd.
 *  out may be partly written on error. */
int ps_hex_decode(const char *s, size_t n, uint8_t *out, size_t *bad);

#endif
