#include "fmt.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Writes u in decimal at the end of a 24-byte scratch; returns the start. */
static char *utoa_end(uint64_t u, char *end)
{
    *end = 0;
    do {
        *--end = (char)('0' + u % 10);
        u /= 10;
    } while (u);
    return end;
}

/* t[0..n) into buf (NUL-terminated, cut to size as snprintf would) */
static void copy_out(char *buf, size_t size, const char *t, size_t n)
{
    if (size == 0)
        return;
    if (n >= size)
        n = size - 1;
    memcpy(buf, t, n);
    buf[n] = 0;
}

void ps_fmt_float(double v, char *buf, size_t size)
{
    /* fast path: whole numbers (profile totals always are) print as integers, as Go's 'f' does */
    if (v == v && fabs(v) < 1e15 && v == (double)(int64_t)v && !(v == 0 && signbit(v))) {
        char tmp[24], *p = utoa_end((uint64_t)(v < 0 ? -(int64_t)v : (int64_t)v), tmp + sizeof(tmp) - 1);
        if (v < 0)
            *--p = '-';
        size_t n = (size_t)(tmp + sizeof(tmp) - 1 - p);
        if (n < size) {
            memcpy(buf, p, n + 1);
            return;
        }
    }
    if (isnan(v)) {
        snprintf(buf, size, "NaN");
        return;
    }
    if (isinf(v)) {
        snprintf(buf, size, v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        snprintf(buf, size, signbit(v) ? "-0" : "0");
        return;
    }
    char d[24];
    int exp, nd = ps_fmt_shortest(v, d, &exp);
    double a = fabs(v);
    char t[40], *o = t; /* at most 26 bytes: sign, "0.00000", 17 digits; or d.16 digits e-308 */
    if (v < 0)
        *o++ = '-';
    if (a < 1e-6 || a >= 1e21) {
        /* Go 'e' format: d[.ddd]e+XX / e-XX, at least two exponent digits */
        *o++ = d[0];
        if (nd > 1) {
            *o++ = '.';
            memcpy(o, d + 1, (size_t)nd - 1);
            o += nd - 1;
        }
        o += snprintf(o, sizeof(t) - (size_t)(o - t), "e%c%02d", exp < 0 ? '-' : '+', abs(exp));
        copy_out(buf, size, t, (size_t)(o - t));
        return;
    }
    /* fixed: as many decimals as the significant digits need */
    int decimals = nd - 1 - exp;
    if (decimals < 0) { /* more integer digits than significant ones (>= 1e15): as %.0f writes it */
        snprintf(buf, size, "%.0f", v);
        return;
    }
    if (exp < 0) {
        *o++ = '0';
        *o++ = '.';
        for (int i = 0; i < -exp - 1; i++)
            *o++ = '0';
        memcpy(o, d, (size_t)nd);
        o += nd;
    } else {
        memcpy(o, d, (size_t)exp + 1);
        o += exp + 1;
        if (nd > exp + 1) {
            *o++ = '.';
            memcpy(o, d + exp + 1, (size_t)(nd - exp - 1));
            o += nd - exp - 1;
        }
    }
    *o = 0;
    copy_out(buf, size, t, (size_t)(o - t));
}

typedef unsigned __int128 u128_t;

/* m * 2^e * 10^k rounded to an integer (half to even), or its floor: exactly (the caller keeps
 * the numerator below 2^127: m < 2^53, 10^k <= 10^22, and 2^e small when e > 0) */
static uint64_t scaled(uint64_t m, int e, int k, bool round)
{
    static const uint64_t p10[] = {1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                   100000000ull, 1000000000ull, 10000000000ull, 100000000000ull, 1000000000000ull,
                                   10000000000000ull, 100000000000000ull, 1000000000000000ull,
                                   10000000000000000ull, 100000000000000000ull, 1000000000000000000ull,
                                   10000000000000000000ull};
    u128_t num = m, den = 1;
    if (k > 19)
        num *= (u128_t)p10[19] * p10[k - 19];
    else if (k >= 0)
        num *= p10[k];
    else
        den = p10[-k];
    if (e >= 0)
        num <<= e;
    else
        den <<= -e;
    u128_t q = num / den, r = num - q * den;
    if (round && (2 * r > den || (2 * r == den && (q & 1))))
        q++;
    return (uint64_t)q;
}

/* v (normal, 1e-5 <= |v| < 1e21) rounded to n significant digits: *d (10^(n-1) <= *d < 10^n),
 * *exp the exponent of its first digit */
static void round_digits(uint64_t m, int e, int n, int guess, uint64_t *d, int *exp)
{
    static const uint64_t lo[] = {0, 1ull, 10ull, 100ull, 1000ull, 10000ull, 100000ull, 1000000ull, 10000000ull,
                                  100000000ull, 1000000000ull, 10000000000ull, 100000000000ull,
                                  1000000000000ull, 10000000000000ull, 100000000000000ull,
                                  1000000000000000ull, 10000000000000000ull, 100000000000000000ull};
    int E = guess; /* the exponent of v's first digit: 10^E <= |v| < 10^(E+1), exactly */
    for (int tries = 0; tries < 4; tries++) {
        uint64_t x = scaled(m, e, n - 1 - E, false);
        if (x >= lo[n + 1])
            E++;
        else if (x < lo[n])
            E--;
        else
            break;
    }
    uint64_t x = scaled(m, e, n - 1 - E, true);
    if (x == lo[n + 1]) { /* rounded up to the next power of ten */
        x = lo[n];
        E++;
    }
    *d = x;
    *exp = E;
}

/* d * 10^(exp - n + 1) read back: is it v? */
static bool reads_back(uint64_t d, int n, int exp, double v)
{
    char t[48];
    int k = snprintf(t, sizeof(t), "%llue%d", (unsigned long long)d, exp - n + 1);
    (void)k;
    return strtod(t, NULL) == fabs(v);
}

int ps_fmt_shortest(double v, char digits[24], int *exp)
{
    double a = fabs(v);
    if (a >= 1e-5 && a < 1e21) {
        /* exact digits from the binary value (v = m * 2^e), checked by reading them back: 15
         * digits with the zeros at their end cut are the shortest when 15 or fewer suffice (the
         * argument below), else 16, else 17 */
        int be;
        double fr = frexp(a, &be);
        uint64_t m = (uint64_t)ldexp(fr, 53);
        int e = be - 53, guess = (int)floor(log10(a));
        for (int n = 15; n <= 17; n++) {
            uint64_t d;
            int E;
            round_digits(m, e, n, guess, &d, &E);
            if (n < 17 && !reads_back(d, n, E, v))
                continue;
            char tmp[24], *p = utoa_end(d, tmp + sizeof(tmp) - 1);
            int nd = (int)(tmp + sizeof(tmp) - 1 - p);
            while (nd > 1 && p[nd - 1] == '0')
                nd--;
            memcpy(digits, p, (size_t)nd);
            digits[nd] = 0;
            *exp = E;
            return nd;
        }
    }
    /* If the shortest digits that read back as v are 15 or fewer, %.14e shows them followed by
     * zeros: they are within half an ulp (< 1.2e-16 relative) of v, and the 15-digit grid's half
     * step is >= 5e-16 relative, so v rounds to them. Else 16 digits, else 17 (always enough).
     * Subnormal numbers have a wider ulp: all lengths are tried. */
    char g[40];
    int prec;
    for (prec = isnormal(v) ? 15 : 1; prec < 17; prec++) {
        snprintf(g, sizeof(g), "%.*e", prec - 1, v);
        if (strtod(g, NULL) == v)
            break;
    }
    if (prec == 17)
        snprintf(g, sizeof(g), "%.16e", v);
    const char *p = g + (g[0] == '-');
    int nd = 0;
    for (; *p && *p != 'e'; p++)
        if (*p >= '0' && *p <= '9')
            digits[nd++] = *p;
    *exp = atoi(p + 1);
    while (nd > 1 && digits[nd - 1] == '0')
        nd--;
    digits[nd] = 0;
    return nd;
}

void ps_fmt_ts_ms(int64_t ms, char *buf, size_t size)
{
    uint64_t u = ms < 0 ? (uint64_t)0 - (uint64_t)ms : (uint64_t)ms;
    char tmp[32], *end = tmp + sizeof(tmp) - 1, *p;
    unsigned frac = (unsigned)(u % 1000);
    *end = 0;
    if (frac) { /* ".mmm", zero-padded, as Prometheus writes it */
        end -= 4;
        end[0] = '.';
        end[1] = (char)('0' + frac / 100);
        end[2] = (char)('0' + frac / 10 % 10);
        end[3] = (char)('0' + frac % 10);
        end[4] = 0;
    }
    char secs[24];
    char *sp = utoa_end(u / 1000, secs + sizeof(secs) - 1);
    size_t sl = strlen(sp);
    p = end - sl;
    memcpy(p, sp, sl);
    if (ms < 0)
        *--p = '-';
    size_t n = strlen(p); /* at most 25 bytes */
    if (n >= size)
        n = size ? size - 1 : 0;
    if (size) {
        memcpy(buf, p, n);
        buf[n] = 0;
    }
}

/* the character after the backslash that escapes c in a label value, or 0 */
static char label_escape(char c)
{
    return c == '\\' ? '\\' : c == '"' ? '"' : c == '\n' ? 'n' : 0;
}

void ps_fmt_label_value_buf(ps_buf_t *b, const char *s)
{
    for (; *s; s++) {
        char esc = label_escape(*s);
        if (esc) {
            ps_buf_putc(b, '\\');
            ps_buf_putc(b, (uint8_t)esc);
        } else {
            ps_buf_putc(b, (uint8_t)*s);
        }
    }
}

void ps_fmt_label_value(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return;
    for (; *s; s++) {
        char esc = label_escape(*s);
        size_t need = esc ? 2 : 1;
        if (o + need >= size)
            break;
        if (esc) {
            buf[o++] = '\\';
            buf[o++] = esc;
        } else {
            buf[o++] = *s;
        }
    }
    buf[o] = 0;
}
