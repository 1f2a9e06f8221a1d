#include "fmt.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void ps_fmt_float(double v, char *buf, size_t size)
{
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
    const char *sign = "";
    uint64_t u = (uint64_t)ms;
    if (ms < 0) {
        sign = "-";
        u = (uint64_t)0 - (uint64_t)ms;
    }
    unsigned frac = (unsigned)(u % 1000);
    if (frac)
        snprintf(buf, size, "%s%llu.%03u", sign, (unsigned long long)(u / 1000), frac);
    else
        snprintf(buf, size, "%s%llu", sign, (unsigned long long)(u / 1000));
}
