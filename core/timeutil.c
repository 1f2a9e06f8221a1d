#include "timeutil.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

int64_t ps_time_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * PS_NS_PER_S + ts.tv_nsec;
}

int64_t ps_time_mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * PS_NS_PER_S + ts.tv_nsec;
}

struct timespec ps_mono_deadline(int64_t ns)
{
    int64_t until = ps_time_mono() + (ns > 0 ? ns : 0);
    return (struct timespec){.tv_sec = until / PS_NS_PER_S, .tv_nsec = until % PS_NS_PER_S};
}

static int parse_float_seconds(const char *s, size_t n, int64_t *ns)
{
    char buf[64];
    if (n == 0 || n >= sizeof(buf))
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    for (size_t i = 0; i < n; i++)
        if (!((buf[i] >= '0' && buf[i] <= '9') || buf[i] == '.' || buf[i] == '-' || buf[i] == '+' || buf[i] == 'e' ||
              buf[i] == 'E'))
            return -1;
    char *end;
    double v = strtod(buf, &end);
    if (*end != 0 || !isfinite(v) || fabs(v) > 9.2e9)
        return -1;
    /* round to milliseconds like Prometheus, then to ns */
    *ns = (int64_t)llround(v * 1000.0) * 1000000ll;
    return 0;
}

/* Prometheus' duration units, smallest first ("ms" before "m", so "m" never takes the "m" of "ms");
 * a duration names them from big to small, each once: durations and now-<duration> alike. */
static const struct {
    const char *unit;
    int64_t ns;
} units[] = {{"ms", 1000000ll},         {"s", PS_NS_PER_S},         {"m", 60 * PS_NS_PER_S},
             {"h", 3600 * PS_NS_PER_S}, {"d", 86400 * PS_NS_PER_S}, {"w", 7 * 86400 * PS_NS_PER_S},
             {"y", 365 * 86400 * PS_NS_PER_S}};
#define NUNITS 7

int ps_parse_duration(const char *s, size_t n, int allow_float, int64_t *ns, ps_err_t *err)
{
    if (allow_float && parse_float_seconds(s, n, ns) == 0)
        return 0;
    size_t i = 0;
    int64_t total = 0;
    int last_unit = -1;
    if (n == 0)
        return ps_err_set(err, PS_EINVAL, "empty duration string");
    while (i < n) {
        if (s[i] < '0' || s[i] > '9')
            return ps_err_set(err, PS_EINVAL, "not a valid duration string: \"%.*s\"", (int)n, s);
        uint64_t v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            v = v * 10 + (uint64_t)(s[i++] - '0');
            if (v > (uint64_t)1 << 40)
                return ps_err_set(err, PS_EINVAL, "duration out of range: \"%.*s\"", (int)n, s);
        }
        int u = -1;
        for (int k = 0; k < NUNITS; k++) {
            size_t ul = strlen(units[k].unit);
            if (i + ul <= n && memcmp(s + i, units[k].unit, ul) == 0) {
                u = k;
                i += ul;
                break;
            }
        }
        if (u < 0)
            return ps_err_set(err, PS_EINVAL, "not a valid duration string: \"%.*s\" (units are ms, s, m, h, d, w, y)",
                              (int)n, s);
        /* units go from big to small (y w d h m s ms): their index here grows with their size */
        if (last_unit >= 0 && u >= last_unit)
            return ps_err_set(err, PS_EINVAL, "not a valid duration string: \"%.*s\" (units out of order)", (int)n, s);
        last_unit = u;
        if (v > (uint64_t)INT64_MAX / (uint64_t)units[u].ns || total > INT64_MAX - (int64_t)v * units[u].ns)
            return ps_err_set(err, PS_EINVAL, "duration out of range: \"%.*s\"", (int)n, s);
        total += (int64_t)v * units[u].ns;
    }
    *ns = total;
    return 0;
}

static int digits(const char *s, size_t n, size_t *i, int count, int *out)
{
    int v = 0;
    for (int k = 0; k < count; k++) {
        if (*i >= n || s[*i] < '0' || s[*i] > '9')
            return -1;
        v = v * 10 + (s[(*i)++] - '0');
    }
    *out = v;
    return 0;
}

/* days since 1970-01-01 of a civil date (Howard Hinnant's algorithm) */
static int64_t days_from_civil(int Y, int M, int D)
{
    int y = Y - (M <= 2);
    int era = (y >= 0 ? y : y - 399) / 400;
    unsigned yoe = (unsigned)(y - era * 400);
    unsigned doy = (153 * (unsigned)(M + (M > 2 ? -3 : 9)) + 2) / 5 + (unsigned)D - 1;
    unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return (int64_t)era * 146097 + (int64_t)doe - 719468;
}

/* RFC3339: YYYY-MM-DDTHH:MM:SS[.frac](Z|+HH:MM|-HH:MM), the whole of s; -1 if it is not one, -2
 * if it is one outside the range of an int64 of ns. */
static int parse_rfc3339(const char *s, size_t n, int64_t *ns)
{
    size_t i = 0;
    int Y, M, D, h, m, sec;
    if (digits(s, n, &i, 4, &Y) || i >= n || s[i++] != '-' || digits(s, n, &i, 2, &M) || i >= n || s[i++] != '-' ||
        digits(s, n, &i, 2, &D) || i >= n || (s[i] != 'T' && s[i] != 't' && s[i] != ' ') || (++i, 0) ||
        digits(s, n, &i, 2, &h) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &m) || i >= n || s[i++] != ':' ||
        digits(s, n, &i, 2, &sec))
        return -1;
    int64_t frac = 0;
    if (i < n && s[i] == '.') {
        i++;
        int nd = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (nd < 9) {
                frac = frac * 10 + (s[i] - '0');
                nd++;
            }
            i++;
        }
        if (nd == 0)
            return -1;
        while (nd++ < 9)
            frac *= 10;
    }
    int64_t offset = 0;
    if (i < n && (s[i] == 'Z' || s[i] == 'z')) {
        i++;
    } else if (i < n && (s[i] == '+' || s[i] == '-')) {
        int sign = s[i++] == '-' ? -1 : 1, oh, om;
        if (digits(s, n, &i, 2, &oh) || i >= n || s[i++] != ':' || digits(s, n, &i, 2, &om))
            return -1;
        offset = sign * (oh * 3600 + om * 60);
    } else {
        return -1;
    }
    if (i != n || M < 1 || M > 12 || D < 1 || D > 31 || h > 23 || m > 59 || sec > 60)
        return -1;
    int64_t secs = days_from_civil(Y, M, D) * 86400 + h * 3600 + m * 60 + sec - offset;
    if (secs <= INT64_MIN / PS_NS_PER_S || secs >= INT64_MAX / PS_NS_PER_S - 1) /* not an int64 of ns (1678..2262) */
        return -2;
    *ns = secs * PS_NS_PER_S + frac;
    return 0;
}

/* A unix time: a number whose size says its unit (see ps_parse_time); -1 if s is not a number,
 * -2 if it is one past the range of an int64 of ns. Seconds are read as Prometheus reads them
 * (a float, rounded to the ms); ms, us and ns with a fraction exactly, to the ns. */
static int parse_unix(const char *s, size_t n, int64_t *ns)
{
    static const uint64_t lim[] = {10000000000ull, 10000000000000ull, 10000000000000000ull, 10000000000000000000ull};
    static const int64_t mul[] = {PS_NS_PER_S, 1000000, 1000, 1};
    size_t i = 0;
    bool neg = false;
    if (i < n && (s[i] == '-' || s[i] == '+'))
        neg = s[i++] == '-';
    size_t d0 = i;
    uint64_t v = 0;
    while (i < n && s[i] >= '0' && s[i] <= '9' && i - d0 < 19)
        v = v * 10 + (uint64_t)(s[i++] - '0');
    size_t f0 = i + 1, f1 = f0;
    if (i < n && s[i] == '.')
        for (f1 = f0; f1 < n && s[f1] >= '0' && s[f1] <= '9';)
            f1++;
    bool plain = i > d0 && (i == n || (s[i] == '.' && f1 == n && f1 > f0));
    if (plain && v >= lim[0]) { /* ms, us or ns, digit by digit */
        for (int k = 1; k < 4; k++) {
            if (v >= lim[k])
                continue;
            if (v > (uint64_t)(INT64_MAX - PS_NS_PER_S) / (uint64_t)mul[k])
                return -2;
            int64_t frac = 0, m = mul[k];
            for (size_t f = f0; i < n && f < f1 && m > 1; f++) {
                m /= 10;
                frac += (s[f] - '0') * m;
            }
            *ns = (neg ? -1 : 1) * ((int64_t)v * mul[k] + frac);
            return 0;
        }
        return -2;
    }
    if (parse_float_seconds(s, n, ns) == 0) /* seconds (below 9.2e9) */
        return 0;
    char buf[64];
    if (n == 0 || n >= sizeof(buf) || strspn(s, "0123456789.-+eE") < n)
        return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    double f = strtod(buf, &end);
    if (*end != 0 || end == buf)
        return -1;
    double a = fabs(f), scaled = a < 1e13 ? a * 1e6 : a < 1e16 ? a * 1e3 : a; /* in ns */
    if (!isfinite(f) || a < 1e10 || scaled >= 9.2e18) /* 9.99e15 us is past 2262 too */
        return -2;
    /* "1.7e12": ms as a float, rounded to the us (53 bits hold every us until 2255) */
    *ns = a < 1e13 ? (int64_t)llround(f * 1e3) * 1000 : a < 1e16 ? (int64_t)llround(f) * 1000 : (int64_t)llround(f);
    return 0;
}

#define TIME_SHOWN 64 /* bytes of a bad time quoted in a message */

/* now, now-<duration>, now+<duration> ("now-1h30m"): s starts with "now". */
static int parse_relative(const char *s, size_t n, int64_t now, int64_t *ns, ps_err_t *err)
{
    const int shown = (int)(n > TIME_SHOWN ? TIME_SHOWN : n);
#define BAD(at, ...) ps_err_set_at(err, PS_EINVAL, (at), "cannot parse \"%.*s\" to a valid timestamp: " __VA_ARGS__)
    size_t i = 3;
    if (i == n) {
        *ns = now;
        return 0;
    }
    if (s[i] != '-' && s[i] != '+')
        return BAD(i, "want '-' or '+' after \"now\" at character %zu, as in now-5m", shown, s, i + 1);
    int sign = s[i++] == '-' ? -1 : 1;
    if (i == n)
        return BAD(i, "a duration after '%c' is missing at character %zu, as in now-5m", shown, s, s[i - 1], i + 1);
    int64_t total = 0;
    int last = NUNITS; /* units[] index of the last unit: each next one is smaller */
    while (i < n) {
        size_t d0 = i;
        uint64_t v = 0;
        while (i < n && s[i] >= '0' && s[i] <= '9' && v <= (uint64_t)1 << 40)
            v = v * 10 + (uint64_t)(s[i++] - '0');
        if (i == d0)
            return BAD(i, "want a number at character %zu", shown, s, i + 1);
        if (i < n && s[i] >= '0' && s[i] <= '9')
            return BAD(d0, "the number at character %zu is out of range", shown, s, d0 + 1);
        size_t u0 = i;
        while (i < n && ((s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
            i++;
        if (i == u0)
            return BAD(i, "want a unit (ms, s, m, h, d, w, y) at character %zu", shown, s, i + 1);
        int u = -1;
        for (int k = 0; k < NUNITS; k++)
            if (strlen(units[k].unit) == i - u0 && memcmp(s + u0, units[k].unit, i - u0) == 0)
                u = k;
        if (u < 0)
            return BAD(u0, "unknown unit \"%.*s\" at character %zu (ms, s, m, h, d, w, y)", shown, s,
                       (int)(i - u0 > 16 ? 16 : i - u0), s + u0, u0 + 1);
        if (u >= last)
            return BAD(u0, "unit \"%s\" at character %zu is out of order (y, w, d, h, m, s, ms: each once, the "
                           "larger first)", shown, s, units[u].unit, u0 + 1);
        last = u;
        if (v > (uint64_t)INT64_MAX / (uint64_t)units[u].ns || total > INT64_MAX - (int64_t)v * units[u].ns)
            return BAD(d0, "the duration at character %zu is out of range", shown, s, d0 + 1);
        total += (int64_t)v * units[u].ns;
    }
    /* the result must be an int64 of ns: within 1677-09-21 .. 2262-04-11 */
    if ((sign < 0 && now < INT64_MIN + total) || (sign > 0 && now > INT64_MAX - total))
        return BAD(4, "the offset from now is out of range (before 1678 or after 2262)", shown, s);
    *ns = now + sign * total;
    return 0;
#undef BAD
}

int ps_parse_time(const char *s, size_t n, int64_t now, int64_t *ns, ps_err_t *err)
{
    const int shown = (int)(n > TIME_SHOWN ? TIME_SHOWN : n);
    if (n >= 3 && memcmp(s, "now", 3) == 0)
        return parse_relative(s, n, now, ns, err);
    int rc = parse_unix(s, n, ns);
    if (rc == -1)
        rc = parse_rfc3339(s, n, ns);
    if (rc == 0)
        return 0;
    if (rc == -2)
        return ps_err_set(err, PS_EINVAL, "cannot parse \"%.*s\" to a valid timestamp: out of range (before 1678 or "
                                          "after 2262)", shown, s);
    return ps_err_set(err, PS_EINVAL, "cannot parse \"%.*s\" to a valid timestamp", shown, s);
}

void ps_format_time(int64_t ns, char *buf, size_t size)
{
    time_t secs = (time_t)(ns / PS_NS_PER_S);
    int64_t frac = ns % PS_NS_PER_S;
    if (frac < 0) {
        frac += PS_NS_PER_S;
        secs--;
    }
    struct tm tm;
    gmtime_r(&secs, &tm);
    char base[32];
    strftime(base, sizeof(base), "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac)
        snprintf(buf, size, "%s.%09lldZ", base, (long long)frac);
    else
        snprintf(buf, size, "%sZ", base);
}

void ps_format_time_go(int64_t ns, char *buf, size_t size)
{
    ps_format_time(ns, buf, size);
    char *dot = strchr(buf, '.'), *z = dot ? strchr(dot, 'Z') : NULL;
    if (z == NULL)
        return;
    char *e = z;
    while (e > dot + 1 && e[-1] == '0')
        e--;
    if (e == dot + 1)
        e = dot;
    memmove(e, z, strlen(z) + 1);
}

void ps_format_duration(int64_t ns, char *buf, size_t size)
{
    static const struct {
        const char *u;
        int64_t ns;
    } units[] = {{"y", 365 * 86400 * PS_NS_PER_S}, {"w", 7 * 86400 * PS_NS_PER_S}, {"d", 86400 * PS_NS_PER_S},
                 {"h", 3600 * PS_NS_PER_S},        {"m", 60 * PS_NS_PER_S},         {"s", PS_NS_PER_S},
                 {"ms", 1000000}};
    size_t off = 0;
    if (ns <= 0) {
        snprintf(buf, size, "0s");
        return;
    }
    /* as Prometheus' model.Duration: years and weeks only when they divide exactly ("15d", not
     * "2w1d"), everything below a millisecond dropped */
    for (int k = 0; k < 7 && off < size; k++) {
        if (k < 2 && ns % units[k].ns != 0)
            continue;
        if (ns >= units[k].ns) {
            off += (size_t)snprintf(buf + off, size - off, "%lld%s", (long long)(ns / units[k].ns), units[k].u);
            ns %= units[k].ns;
        }
    }
}

/* Pyroscope's offset units, by prefix as attime.go tests them (order matters: "mon" before "m") */
static int64_t attime_unit(const char *u, size_t n)
{
    if (n == 0)
        return 0;
    if (u[0] == 's')
        return 1;
    if ((n >= 3 && memcmp(u, "mon", 3) == 0) || u[0] == 'M')
        return 86400 * 30;
    if (u[0] == 'm')
        return 60;
    if (u[0] == 'h')
        return 3600;
    if (u[0] == 'd')
        return 86400;
    if (u[0] == 'w')
        return 86400 * 7;
    if (u[0] == 'y')
        return 86400 * 365;
    return 0;
}

#define ATTIME_MAX 64

int ps_attime_parse(const char *in, size_t n, int64_t now_ns, int64_t *out, ps_err_t *err)
{
    char s[ATTIME_MAX + 1];
    size_t len = 0;
    for (size_t i = 0; i < n; i++) {
        char c = in[i];
        if (c == '_' || c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r')
            continue;
        if (len == ATTIME_MAX)
            return ps_err_set(err, PS_EINVAL, "time \"%.*s...\" is too long", 32, in);
        s[len++] = c;
    }
    s[len] = 0;
    if (len == 0)
        return ps_err_set(err, PS_EINVAL, "empty time (want unix seconds, ms, us or ns, YYYYMMDD, or now-1h)");
    size_t nd = 0;
    while (nd < len && s[nd] >= '0' && s[nd] <= '9')
        nd++;
    if (nd == len) {
        if (len == 8) {
            int Y = 0, M = 0, D = 0;
            size_t di = 0; /* all 8 are digits: these cannot fail */
            digits(s, len, &di, 4, &Y);
            digits(s, len, &di, 2, &M);
            digits(s, len, &di, 2, &D);
            if (Y > 1900 && M >= 1 && M <= 12 && D >= 1 && D <= 31) {
                int64_t days = days_from_civil(Y, M, D);
                if (days > INT64_MAX / (86400 * PS_NS_PER_S)) /* after 2262-04-11: not an int64 of ns */
                    return ps_err_set(err, PS_EINVAL, "time \"%s\" is out of range (after 2262)", s);
                *out = days * 86400 * PS_NS_PER_S;
                return 0;
            }
        }
        if (len > 19)
            return ps_err_set(err, PS_EINVAL, "time \"%s\" has %zu digits (at most 19: unix ns)", s, len);
        uint64_t v = 0;
        for (size_t i = 0; i < len; i++)
            v = v * 10 + (uint64_t)(s[i] - '0');
        if (v > (uint64_t)INT64_MAX)
            return ps_err_set(err, PS_EINVAL, "time \"%s\" is out of range", s);
        int64_t mul = len == 13 ? 1000000 : len == 16 ? 1000 : len == 19 ? 1 : PS_NS_PER_S;
        if (mul > 1 && (int64_t)v > INT64_MAX / mul)
            return ps_err_set(err, PS_EINVAL, "time \"%s\" is out of range", s);
        *out = (int64_t)v * mul;
        return 0;
    }
    /* reference ("now" or nothing) and an offset: now-1h, now-1h30m, -15m, now+1d */
    size_t i = 0;
    if (len >= 3 && memcmp(s, "now", 3) == 0)
        i = 3;
    if (i == len) {
        *out = now_ns;
        return 0;
    }
    if (s[i] != '-' && s[i] != '+') {
        if (i == 0 && (parse_rfc3339(s, len, out) == 0 || parse_unix(s, len, out) == 0)) /* also "1.5" */
            return 0;
        return ps_err_set(err, PS_EINVAL, "cannot parse time \"%s\" (want unix seconds, ms, us or ns, YYYYMMDD, "
                                          "RFC3339, or now-1h)", s);
    }
    int sign = s[i++] == '-' ? -1 : 1;
    if (i == len)
        return ps_err_set(err, PS_EINVAL, "time \"%s\": an offset after '%c' is missing", s, sign < 0 ? '-' : '+');
    int64_t secs = 0;
    while (i < len) {
        size_t d0 = i;
        int64_t num = 0;
        while (i < len && s[i] >= '0' && s[i] <= '9' && num < 1000000000)
            num = num * 10 + (s[i++] - '0');
        if (i == d0 || (i < len && s[i] >= '0' && s[i] <= '9'))
            return ps_err_set_at(err, PS_EINVAL, d0, "time \"%s\": want a number at character %zu", s, d0 + 1);
        size_t u0 = i;
        while (i < len && !(s[i] >= '0' && s[i] <= '9'))
            i++;
        int64_t mul = attime_unit(s + u0, i - u0);
        if (mul == 0)
            return ps_err_set_at(err, PS_EINVAL, u0, "time \"%s\": unknown unit \"%.*s\" at character %zu (s, m/min, "
                                 "h, d, w, M/mon, y)", s, (int)(i - u0), s + u0, u0 + 1);
        secs += num * mul;
        if (secs > 100ll * 365 * 86400) /* with now, still within an int64 of ns */
            return ps_err_set(err, PS_EINVAL, "time \"%s\": the offset is out of range", s);
    }
    *out = now_ns + sign * secs * PS_NS_PER_S;
    return 0;
}
