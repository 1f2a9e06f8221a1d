#include "fmt.h"

#include <math.h>
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
    /* shortest %.Ng that round-trips */
    char g[40];
    int prec;
    for (prec = 1; prec <= 17; prec++) {
        snprintf(g, sizeof(g), "%.*e", prec - 1, v);
        if (strtod(g, NULL) == v)
            break;
    }
    double a = fabs(v);
    if (a < 1e-6 || a >= 1e21) {
        /* Go 'e' format: mantissa digits, then e+XX / e-XX with at least two exponent digits */
        char *e = strchr(g, 'e');
        int exp = atoi(e + 1);
        *e = 0;
        snprintf(buf, size, "%se%c%02d", g, exp < 0 ? '-' : '+', abs(exp));
        return;
    }
    /* fixed: as many decimals as the significant digits need */
    int exp = (int)floor(log10(a));
    char tmp[40];
    snprintf(tmp, sizeof(tmp), "%.*e", prec - 1, v);
    exp = atoi(strchr(tmp, 'e') + 1);
    int decimals = prec - 1 - exp;
    if (decimals < 0)
        decimals = 0;
    snprintf(buf, size, "%.*f", decimals, v);
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

void ps_fmt_label_value(const char *s, char *buf, size_t size)
{
    size_t o = 0;
    if (size == 0)
        return;
    for (; *s; s++) {
        char esc = *s == '\\' ? '\\' : *s == '"' ? '"' : *s == '\n' ? 'n' : 0;
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
