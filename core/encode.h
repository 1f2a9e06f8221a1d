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

/** Reads a UUID's 16 bytes from the n characters of s in the forms Go's uuid.Parse takes (what
 *  Pyroscope reads ids with): 8-4-4-4-12 hex digits, the same in braces or after "urn:uuid:", or
 *  32 hex digits; either case. Returns 0, or -1 (out may be partly written). */
int ps_uuid_scan(const char *s, size_t n, uint8_t out[16]);
/** u as lowercase UUID text, 8-4-4-4-12 hex digits: 36 characters into out (no NUL). */
void ps_uuid_text(const uint8_t u[16], char out[36]);

/** The length of the base64 text of n bytes (padded), and the room a decode of n characters needs
 *  (the padding's bytes are written, then not counted). */
#define PS_BASE64_LEN(n) (((n) + 2) / 3 * 4)
#define PS_BASE64_DECODED_MAX(n) (((n) + 3) / 4 * 3)

/** Writes the standard padded base64 of in[0..n) to out (room for PS_BASE64_LEN(n) + 1) with a
 *  NUL after it. Returns PS_BASE64_LEN(n). */
size_t ps_base64_encode(const uint8_t *in, size_t n, char *out);

typedef enum ps_base64_form {
    PS_B64_STRICT,  /* standard alphabet, '=' padding required */
    PS_B64_LENIENT, /* either alphabet, padding optional */
} ps_base64_form_t;

/** Decodes the n characters of s into out (room for PS_BASE64_DECODED_MAX(n)). Returns the byte
 *  count (0 for ""), or -1 with *bad (if not NULL) the offset of the first character outside the
 *  form's alphabet ('=' before the padding too), or n when the length or the padding is wrong
 *  (checked first). */
long ps_base64_decode(const char *s, size_t n, ps_base64_form_t form, uint8_t *out, size_t *bad);

#endif
