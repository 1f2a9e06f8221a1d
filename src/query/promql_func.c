/*
 * promql_func.c - PromQL functions, as Prometheus 2.42's promql/functions.go and quantile.go
 * compute them (each function says which Go function it follows). The engine (promql_eval.c)
 * evaluates the arguments and hands over their values (pq_call_eval) or one series' window at a
 * time (pq_range_fn): nothing here evaluates a subtree, so this file never calls the engine.
 */
#include "promql_int.h"

#include <ctype.h>
#include <float.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fmt.h"
#include "core/timeutil.h"

/* ---- range vector functions ---- */

/* extrapolatedRate: rate, increase, delta. v3: Prometheus 3's order, the start's extrapolation cut
 * to half an interval before the counter's zero point is looked at (2.42: after). */
static bool extrapolated_rate(const ps_float_sample_t *p, uint32_t n, int64_t range_start, int64_t range_end,
                              double range_s, bool counter, bool is_rate, bool v3, double *res)
{
    if (n < 2)
        return false;
    double result = p[n - 1].v - p[0].v;
    if (counter) {
        double last = 0;
        for (uint32_t i = 0; i < n; i++) {
            if (p[i].v < last)
                result += last;
            last = p[i].v;
        }
    }
    double to_start = (double)(p[0].t - range_start) / 1000;
    double to_end = (double)(range_end - p[n - 1].t) / 1000;
    double sampled = (double)(p[n - 1].t - p[0].t) / 1000;
    double avg = sampled / (double)(n - 1);
    if (v3) {
        double threshold = avg * 1.1;
        if (to_start >= threshold)
            to_start = avg / 2;
        if (counter && result > 0 && p[0].v >= 0) {
            double to_zero = sampled * (p[0].v / result);
            if (to_zero < to_start)
                to_start = to_zero;
        }
        if (to_end >= threshold)
            to_end = avg / 2;
        double factor = (sampled + to_start + to_end) / sampled;
        if (is_rate)
            factor /= range_s;
        *res = result * factor;
        return true;
    }
    if (counter && result > 0 && p[0].v >= 0) {
        double to_zero = sampled * (p[0].v / result);
        if (to_zero < to_start)
            to_start = to_zero;
    }
    double threshold = avg * 1.1;
    double interval = sampled;
    if (to_start < threshold)
        interval += to_start;
    else
        interval += avg / 2;
    if (to_end < threshold)
        interval += to_end;
    else
        interval += avg / 2;
    double factor = interval / sampled;
    if (is_rate)
        factor /= range_s;
    *res = result * factor;
    return true;
}

/* instantValue: irate, idelta */
static bool instant_value(const ps_float_sample_t *p, uint32_t n, bool is_rate, double *res)
{
    if (n < 2)
        return false;
    const ps_float_sample_t *last = &p[n - 1], *prev = &p[n - 2];
    double r;
    if (is_rate && last->v < prev->v)
        r = last->v;
    else
        r = last->v - prev->v;
    int64_t interval = last->t - prev->t;
    if (interval == 0)
        return false;
    if (is_rate)
        r /= (double)interval / 1000;
    *res = r;
    return true;
}

/* kahanSumInc: Neumaier's compensated sum, which 2.42's *_over_time functions use */
static double kahan_inc(double inc, double sum, double *c)
{
    double t = sum + inc;
    if (fabs(sum) >= fabs(inc))
        *c += (sum - t) + inc;
    else
        *c += (inc - t) + sum;
    return t;
}

/* linearRegression (2.42 sums with kahanSumInc, as promtool shows) */
static void linear_regression(const ps_float_sample_t *p, uint32_t n, int64_t intercept_time, double *slope,
                              double *intercept)
{
    double cnt = 0, sum_x = 0, cx = 0, sum_y = 0, cy = 0, sum_xy = 0, cxy = 0, sum_x2 = 0, cx2 = 0, init_y = p[0].v;
    bool const_y = true;
    for (uint32_t i = 0; i < n; i++) {
        if (const_y && i > 0 && p[i].v != init_y)
            const_y = false;
        cnt += 1.0;
        double x = (double)(p[i].t - intercept_time) / 1e3;
        sum_x = kahan_inc(x, sum_x, &cx);
        sum_y = kahan_inc(p[i].v, sum_y, &cy);
        sum_xy = kahan_inc(x * p[i].v, sum_xy, &cxy);
        sum_x2 = kahan_inc(x * x, sum_x2, &cx2);
    }
    if (const_y) {
        if (isinf(init_y)) {
            *slope = *intercept = NAN;
            return;
        }
        *slope = 0;
        *intercept = init_y;
        return;
    }
    sum_x += cx;
    sum_y += cy;
    sum_xy += cxy;
    sum_x2 += cx2;
    double cov_xy = sum_xy - sum_x * sum_y / cnt;
    double var_x = sum_x2 - sum_x * sum_x / cnt;
    *slope = cov_xy / var_x;
    *intercept = sum_y / cnt - *slope * sum_x / cnt;
}

/* Go's time.Duration.Seconds() of a range in ms */
static double duration_seconds(int64_t ms)
{
    int64_t ns = ms * 1000000;
    int64_t sec = ns / 1000000000, nsec = ns % 1000000000;
    return (double)sec + (double)nsec / 1e9;
}

/* ---- Prometheus 3.16's anchored and smoothed ranges (functions.go; without start timestamps,
 * which profstore does not store, so none of their resets) ---- */

double pq_interpolate(ps_float_sample_t a, ps_float_sample_t b, int64_t t, bool counter)
{
    double y1 = a.v, y2 = b.v;
    if (counter && y2 < y1)
        y1 = 0;
    return y1 + (y2 - y1) * (double)(t - a.t) / (double)(b.t - a.t);
}

/* pickOrInterpolateLeft: first is the last sample at or before start, else 0 */
static double pick_left(const ps_float_sample_t *p, uint32_t first, int64_t start, bool smoothed, bool counter)
{
    if (p[first].t >= start || !smoothed)
        return p[first].v;
    return pq_interpolate(p[first], p[first + 1], start, counter);
}

/* pickOrInterpolateRight */
static double pick_right(const ps_float_sample_t *p, uint32_t last, int64_t end, bool smoothed, bool counter)
{
    if (p[last].t <= end || last == 0)
        return p[last].v;
    if (smoothed)
        return pq_interpolate(p[last - 1], p[last], end, counter);
    return p[last - 1].v;
}

/* The samples around a range (start, end] in p[0..n), n > 0, as extendedRate and extendFloats find
 * them: *first the last sample at or before start among all but the last (else 0), *last the last
 * sample, or smoothed the first at or after end (else the last). false when *last is not after start. */
static bool ends(const ps_float_sample_t *p, uint32_t n, int64_t start, int64_t end, bool smoothed, uint32_t *first,
                 uint32_t *last)
{
    uint32_t l = n - 1, i = 0;
    while (i < l && p[i].t <= start)
        i++;
    *first = i > 0 ? i - 1 : 0;
    if (smoothed) {
        uint32_t j = 0;
        while (j < l && p[j].t < end)
            j++;
        l = j;
    }
    *last = l;
    return p[l].t > start;
}

/* extendedRate: rate, increase, delta of an anchored or smoothed range */
static bool extended_rate(const ps_float_sample_t *p, uint32_t n, int64_t start, int64_t end, double range_s,
                          bool smoothed, bool counter, bool is_rate, double *res)
{
    uint32_t first, last;
    if (!ends(p, n, start, end, smoothed, &first, &last))
        return false;
    if (smoothed && p[first].t > end)
        return false; /* the data starts after the range: nothing to interpolate from */
    double left = pick_left(p, first, start, smoothed, counter), right = pick_right(p, last, end, smoothed, counter);
    double result = right - left;
    if (counter) { /* correctForCounterResets over the samples strictly inside the range */
        int64_t i = first, j = last;
        if (p[i].t <= start)
            i++;
        if (p[j].t >= end)
            j--;
        double correction = 0, prev = left;
        for (; i <= j; i++) {
            if (p[i].v < prev)
                correction += prev;
            prev = p[i].v;
        }
        if (right < prev)
            correction += prev;
        result += correction;
    }
    if (is_rate)
        result /= range_s;
    *res = result;
    return true;
}

uint32_t pq_extend_window(const ps_float_sample_t *p, uint32_t n, int64_t mint, int64_t maxt, bool smoothed,
                          ps_float_sample_t *out)
{
    uint32_t first, last;
    if (!ends(p, n, mint, maxt, smoothed, &first, &last))
        return 0;
    double left = pick_left(p, first, mint, smoothed, false), right = pick_right(p, last, maxt, smoothed, false);
    int64_t i = first, j = last;
    if (p[i].t <= mint)
        i++;
    if (p[j].t >= maxt)
        j--;
    uint32_t k = 0;
    out[k++] = (ps_float_sample_t){mint, left};
    for (; i <= j; i++)
        out[k++] = p[i];
    out[k++] = (ps_float_sample_t){maxt, right};
    return k;
}

bool pq_extended_fn(ps_pq_fn_t fn, bool smoothed, const ps_float_sample_t *p, uint32_t n, int64_t rstart,
                    int64_t rend, int64_t range_ms, double *res)
{
    double range_s = duration_seconds(range_ms);
    switch (fn) {
    case PS_FN_RATE: return extended_rate(p, n, rstart, rend, range_s, smoothed, true, true, res);
    case PS_FN_INCREASE: return extended_rate(p, n, rstart, rend, range_s, smoothed, true, false, res);
    case PS_FN_DELTA: return extended_rate(p, n, rstart, rend, range_s, smoothed, false, false, res);
    case PS_FN_RESETS:
    case PS_FN_CHANGES: {
        /* pickFirstSampleIndices: from the last sample at or before the start; none after it, no answer */
        uint32_t i = 0;
        while (i < n && p[i].t <= rstart)
            i++;
        if (i >= n)
            return false;
        uint32_t first = i > 0 ? i - 1 : 0, count = 0;
        for (uint32_t k = first + 1; k < n; k++) {
            double prev = p[k - 1].v, cur = p[k].v;
            if (fn == PS_FN_RESETS ? cur < prev : cur != prev && !(isnan(cur) && isnan(prev)))
                count++;
        }
        *res = count;
        return true;
    }
    default: return false; /* refused when planned */
    }
}

bool pq_range_fn(pq_ctx_t *c, ps_pq_fn_t fn, const ps_float_sample_t *p, uint32_t n, int64_t ts_fn, int64_t rstart,
                 int64_t rend, int64_t range_ms, const double *sargs, double *res)
{
    switch (fn) {
    case PS_FN_RATE:
        return extrapolated_rate(p, n, rstart, rend, duration_seconds(range_ms), true, true, c->open != 0, res);
    case PS_FN_INCREASE:
        return extrapolated_rate(p, n, rstart, rend, duration_seconds(range_ms), true, false, c->open != 0, res);
    case PS_FN_DELTA:
        return extrapolated_rate(p, n, rstart, rend, duration_seconds(range_ms), false, false, c->open != 0, res);
    case PS_FN_IRATE:
        return instant_value(p, n, true, res);
    case PS_FN_IDELTA:
        return instant_value(p, n, false, res);
    case PS_FN_RESETS: {
        int resets = 0;
        double prev = p[0].v;
        for (uint32_t i = 1; i < n; i++) {
            if (p[i].v < prev)
                resets++;
            prev = p[i].v;
        }
        *res = resets;
        return true;
    }
    case PS_FN_CHANGES: {
        int changes = 0;
        double prev = p[0].v;
        for (uint32_t i = 1; i < n; i++) {
            double cur = p[i].v;
            if (cur != prev && !(isnan(cur) && isnan(prev)))
                changes++;
            prev = cur;
        }
        *res = changes;
        return true;
    }
    case PS_FN_DERIV: {
        if (n < 2)
            return false;
        double slope, icpt;
        linear_regression(p, n, p[0].t, &slope, &icpt);
        *res = slope;
        return true;
    }
    case PS_FN_PREDICT_LINEAR: {
        if (n < 2)
            return false;
        double slope, icpt;
        linear_regression(p, n, ts_fn, &slope, &icpt);
        *res = slope * sargs[1] + icpt;
        return true;
    }
    case PS_FN_AVG_OVER_TIME: {
        if (c->open) { /* Prometheus 3: a Kahan sum, the incremental mean once it would overflow */
            double sum = p[0].v, count = 1, mean = 0, kc = 0;
            bool incremental = false;
            for (uint32_t i = 1; i < n; i++) {
                count = (double)(i + 1);
                if (!incremental) {
                    double kc2 = kc, sum2 = pq_kahan_inc(p[i].v, sum, &kc2);
                    if (!isinf(sum2)) {
                        sum = sum2;
                        kc = kc2;
                        continue;
                    }
                    incremental = true;
                    mean = sum / (count - 1);
                    kc /= count - 1;
                }
                double q = (count - 1) / count;
                kc = q * kc;
                mean = pq_kahan_inc(p[i].v / count, q * mean, &kc);
            }
            *res = incremental ? mean + kc : sum / count + kc / count;
            return true;
        }
        double mean = 0, count = 0, c = 0;
        for (uint32_t i = 0; i < n; i++) {
            double v = p[i].v;
            count++;
            if (isinf(mean)) {
                if (isinf(v) && (mean > 0) == (v > 0))
                    continue;
                if (!isinf(v) && !isnan(v))
                    continue;
            }
            mean = kahan_inc(v / count - mean / count, mean, &c);
        }
        *res = isinf(mean) ? mean : mean + c;
        return true;
    }
    case PS_FN_COUNT_OVER_TIME:
        *res = n;
        return true;
    case PS_FN_LAST_OVER_TIME:
        *res = p[n - 1].v;
        return true;
    case PS_FN_FIRST_OVER_TIME:
        *res = p[0].v;
        return true;
    case PS_FN_TS_OF_FIRST_OVER_TIME:
        *res = (double)p[0].t / 1000;
        return true;
    case PS_FN_TS_OF_LAST_OVER_TIME:
        *res = (double)p[n - 1].t / 1000;
        return true;
    case PS_FN_TS_OF_MAX_OVER_TIME:
    case PS_FN_TS_OF_MIN_OVER_TIME: { /* compareOverTime: the last of equal values */
        double m = p[0].v;
        int64_t t = p[0].t;
        for (uint32_t i = 0; i < n; i++)
            if ((fn == PS_FN_TS_OF_MAX_OVER_TIME ? p[i].v >= m : p[i].v <= m) || isnan(m)) {
                m = p[i].v;
                t = p[i].t;
            }
        *res = (double)t / 1000;
        return true;
    }
    case PS_FN_MAD_OVER_TIME: { /* the median of the distances from the median; NaN if one is NaN */
        double *vals = ps_arena_alloc(&c->scratch, n * sizeof(double));
        for (uint32_t i = 0; i < n; i++) {
            if (isnan(p[i].v)) {
                *res = NAN;
                return true;
            }
            vals[i] = p[i].v;
        }
        double median = pq_quantile(0.5, vals, n, c->open != 0);
        for (uint32_t i = 0; i < n; i++)
            vals[i] = fabs(vals[i] - median);
        *res = pq_quantile(0.5, vals, n, c->open != 0);
        return true;
    }
    case PS_FN_PRESENT_OVER_TIME:
    case PS_FN_ABSENT_OVER_TIME:
        *res = 1;
        return true;
    case PS_FN_HOLT_WINTERS: {
        /* funcHoltWinters with calcTrendValue (sf, tf checked by the caller) */
        if (n < 2)
            return false;
        double sf = sargs[1], tf = sargs[2], s0 = 0, s1 = p[0].v, b = p[1].v - p[0].v;
        for (uint32_t i = 1; i < n; i++) {
            double x = sf * p[i].v;
            if (i - 1 != 0)
                b = tf * (s1 - s0) + (1 - tf) * b;
            double y = (1 - sf) * (s1 + b);
            s0 = s1;
            s1 = x + y;
        }
        *res = s1;
        return true;
    }
    case PS_FN_MAX_OVER_TIME: {
        double m = p[0].v;
        for (uint32_t i = 0; i < n; i++)
            if (p[i].v > m || isnan(m))
                m = p[i].v;
        *res = m;
        return true;
    }
    case PS_FN_MIN_OVER_TIME: {
        double m = p[0].v;
        for (uint32_t i = 0; i < n; i++)
            if (p[i].v < m || isnan(m))
                m = p[i].v;
        *res = m;
        return true;
    }
    case PS_FN_SUM_OVER_TIME: {
        double sum = 0, c = 0;
        for (uint32_t i = 0; i < n; i++)
            sum = kahan_inc(p[i].v, sum, &c);
        *res = isinf(sum) ? sum : sum + c;
        return true;
    }
    case PS_FN_QUANTILE_OVER_TIME: {
        double *vals = ps_arena_alloc(&c->scratch, n * sizeof(double));
        for (uint32_t i = 0; i < n; i++)
            vals[i] = p[i].v;
        *res = pq_quantile(sargs[0], vals, n, c->open != 0);
        return true;
    }
    case PS_FN_STDDEV_OVER_TIME:
    case PS_FN_STDVAR_OVER_TIME: {
        double count = 0, mean = 0, cmean = 0, aux = 0, caux = 0;
        for (uint32_t i = 0; i < n; i++) {
            count++;
            double delta = p[i].v - (mean + cmean);
            mean = kahan_inc(delta / count, mean, &cmean);
            aux = kahan_inc(delta * (p[i].v - (mean + cmean)), aux, &caux);
        }
        *res = fn == PS_FN_STDDEV_OVER_TIME ? sqrt((aux + caux) / count) : (aux + caux) / count;
        return true;
    }
    default:
        return false;
    }
}

ps_labels_t pq_absent_labels(pq_ctx_t *c, const ps_pq_node_t *arg)
{
    ps_labels_t m = {0, NULL, 0};
    const ps_pq_node_t *vs = arg->kind == PS_PQ_VECTOR ? arg : arg->kind == PS_PQ_MATRIX ? arg->expr : NULL;
    if (vs == NULL)
        return m;
    const ps_matcher_t *empty[PS_LABELS_MAX + 1];
    uint32_t ne = 0;
    for (uint32_t i = 0; i < vs->sel.n; i++) {
        const ps_matcher_t *ma = &vs->sel.m[i];
        if (strcmp(ma->name, "__name__") == 0)
            continue;
        if (ma->op == PS_MATCH_EQ && ps_labels_value(&m, ma->name) == NULL)
            ps_labels_set(&m, &c->scratch, ma->name, ma->nlen, ma->value, ma->vlen); /* "" sets nothing */
        else if (ne < PS_LABELS_MAX)
            empty[ne++] = ma;
    }
    for (uint32_t i = 0; i < ne; i++)
        ps_labels_del(&m, &c->scratch, empty[i]->name, empty[i]->nlen);
    return m;
}

/* Go's time.Unix(int64(v), 0).UTC() fields, as Go computes them (time.absDate on the "absolute"
 * uint64 seconds, wrapping as Go's int64 arithmetic does; int64(NaN or out of range) is
 * math.MinInt64 on amd64), so that even absurd values give Go's answers. */
static double date_field(ps_pq_fn_t fn, double v)
{
    int64_t secs = (v >= -9223372036854775808.0 && v < 9223372036854775808.0) ? (int64_t)v : INT64_MIN;
    const uint64_t per_day = 86400, per400 = 146097, per100 = 36524, per4 = 1461;
    const int64_t abs_zero_year = -292277022399LL;
    uint64_t abs = (uint64_t)secs + (uint64_t)62135596800LL + (uint64_t)9223371966579724800LL;
    if (fn == PS_FN_HOUR)
        return (double)(abs % per_day / 3600);
    if (fn == PS_FN_MINUTE)
        return (double)(abs % per_day % 3600 / 60);
    if (fn == PS_FN_DAY_OF_WEEK)
        return (double)((abs + 1 * per_day) % (7 * per_day) / per_day); /* absolute zero is a Monday - 1 */
    uint64_t d = abs / per_day, n = d / per400, y = 400 * n;
    d -= per400 * n;
    n = d / per100;
    n -= n >> 2;
    y += 100 * n;
    d -= per100 * n;
    n = d / per4;
    y += 4 * n;
    d -= per4 * n;
    n = d / 365;
    n -= n >> 2;
    y += n;
    d -= 365 * n;
    int64_t year = (int64_t)(y + (uint64_t)abs_zero_year);
    int yday = (int)d;
    bool leap = year % 4 == 0 && (year % 100 != 0 || year % 400 == 0);
    if (fn == PS_FN_YEAR)
        return (double)year;
    if (fn == PS_FN_DAY_OF_YEAR)
        return yday + 1;
    static const int before[] = {0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334, 365};
    int day = yday, month;
    if (leap && day == 31 + 29 - 1) {
        month = 2;
        day = 29;
    } else {
        if (leap && day > 31 + 29 - 1)
            day--;
        month = day / 31;
        int end = before[month + 1], begin;
        if (day >= end) {
            month++;
            begin = end;
        } else {
            begin = before[month];
        }
        month++;
        day = day - begin + 1;
    }
    if (fn == PS_FN_MONTH)
        return month;
    if (fn == PS_FN_DAY_OF_MONTH)
        return day;
    /* days_in_month: 32 - Date(y, m, 32).Day() */
    static const int mdays[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return month == 2 && leap ? 29 : mdays[month - 1];
}

/* ---- label_replace and label_join ---- */

static bool name_char(unsigned char ch)
{
    return isalnum(ch) || ch == '_' || ch >= 0x80;
}

/* regexp.Regexp.ExpandString of Go: $1, ${1}, $name, ${name}, $$ */
static void expand(ps_buf_t *dst, const ps_regex_t *re, const char *tpl, const char *src, const size_t *ov,
                   int pairs)
{
    size_t tn = strlen(tpl);
    size_t i = 0;
    while (i < tn) {
        const char *d = memchr(tpl + i, '$', tn - i);
        if (d == NULL)
            break;
        ps_buf_append(dst, tpl + i, (size_t)(d - (tpl + i)));
        i = (size_t)(d - tpl) + 1;
        if (i < tn && tpl[i] == '$') {
            ps_buf_putc(dst, '$');
            i++;
            continue;
        }
        /* extract */
        size_t j = i;
        bool brace = j < tn && tpl[j] == '{';
        if (brace)
            j++;
        size_t ns = j;
        while (j < tn && name_char((unsigned char)tpl[j]))
            j++;
        size_t nl = j - ns;
        if (nl == 0 || (brace && (j >= tn || tpl[j] != '}'))) {
            ps_buf_putc(dst, '$');
            continue;
        }
        if (brace)
            j++;
        long num = 0;
        for (size_t k = 0; k < nl; k++) {
            char ch = tpl[ns + k];
            if (ch < '0' || ch > '9' || num >= 100000000) {
                num = -1;
                break;
            }
            num = num * 10 + (ch - '0');
        }
        if (tpl[ns] == '0' && nl > 1)
            num = -1;
        i = j;
        if (num < 0) {
            char name[256];
            if (nl >= sizeof(name))
                continue;
            memcpy(name, tpl + ns, nl);
            name[nl] = 0;
            num = ps_regex_group_number(re, name);
            if (num < 0)
                continue;
        }
        if (num < pairs && ov[2 * num] != PS_REGEX_UNSET)
            ps_buf_append(dst, src + ov[2 * num], ov[2 * num + 1] - ov[2 * num]);
    }
    if (i < tn)
        ps_buf_append(dst, tpl + i, tn - i);
}

static const char *str_arg(const pq_node_t *p, uint32_t i)
{
    const ps_pq_node_t *n = p->n->args[i];
    while (n->kind == PS_PQ_PAREN)
        n = n->expr;
    return n->kind == PS_PQ_STRING ? n->str : "";
}

static int label_replace(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *in, pq_vec_t *out)
{
    const char *dst = str_arg(p, 1), *repl = str_arg(p, 2), *src = str_arg(p, 3);
    int pairs = (int)ps_regex_groups(p->re) + 1;
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t i = 0; i < in->n; i++) {
        pq_elem_t e = in->e[i];
        const char *sv = ps_labels_value(&e.ls, src);
        if (sv == NULL)
            sv = "";
        int rc = ps_regex_match(p->re, sv, strlen(sv), p->md);
        if (rc > 0) {
            ps_buf_reset(&b);
            expand(&b, p->re, repl, sv, ps_regex_ovector(p->md), pairs);
            ps_labels_t ls = ps_labels_borrow(&e.ls);
            ps_labels_del(&ls, &c->scratch, dst, strlen(dst));
            if (b.len > 0)
                ps_labels_set(&ls, &c->scratch, dst, strlen(dst), (const char *)b.data, b.len);
            e.ls = ls;
        }
        out->e[out->n++] = e;
    }
    ps_buf_dispose(&b);
    return 0;
}

static int label_join(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *in, pq_vec_t *out)
{
    const char *dst = str_arg(p, 1), *sep = str_arg(p, 2);
    if (!pq_label_name_ok(c, dst))
        return ps_err_set(c->err, PS_ELIMIT, "invalid destination label name in label_join(): %s", dst);
    for (uint32_t k = 3; k < p->nargs; k++) {
        const char *s = str_arg(p, k);
        if (!pq_label_name_ok(c, s))
            return ps_err_set(c->err, PS_ELIMIT, "invalid source label name in label_join(): %s", s);
    }
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t i = 0; i < in->n; i++) {
        pq_elem_t e = in->e[i];
        ps_buf_reset(&b);
        for (uint32_t k = 3; k < p->nargs; k++) {
            if (k > 3)
                ps_buf_append(&b, sep, strlen(sep));
            const char *v = ps_labels_value(&e.ls, str_arg(p, k));
            if (v)
                ps_buf_append(&b, v, strlen(v));
        }
        ps_labels_t ls = ps_labels_borrow(&e.ls);
        if (b.len == 0)
            ps_labels_del(&ls, &c->scratch, dst, strlen(dst));
        else
            ps_labels_set(&ls, &c->scratch, dst, strlen(dst), (const char *)b.data, b.len);
        e.ls = ls;
        out->e[out->n++] = e;
    }
    ps_buf_dispose(&b);
    return 0;
}

/* ---- histogram_quantile over classic buckets ---- */

typedef struct bucket {
    double ub, count;
} bucket_t;

static int cmp_bucket(const void *a, const void *b)
{
    double x = ((const bucket_t *)a)->ub, y = ((const bucket_t *)b)->ub;
    return (x > y) - (x < y);
}

/* Prometheus' coalesceBuckets: buckets of one upper bound (sorted, n > 0) summed into one; the new n. */
static uint32_t coalesce_buckets(bucket_t *b, uint32_t n)
{
    bucket_t last = b[0];
    uint32_t k = 0;
    for (uint32_t i = 1; i < n; i++) {
        if (b[i].ub == last.ub) {
            last.count += b[i].count;
        } else {
            b[k++] = last;
            last = b[i];
        }
    }
    b[k] = last;
    return k + 1;
}

/* Prometheus 3's ensureMonotonicAndIgnoreSmallDeltas over sorted, coalesced buckets: a count within
 * 1e-12 (relative, almost.Equal) of the one before is made equal to it silently; a lower one is raised
 * to it, and the fix counted in the query's monotonicity info (at step ts, the expression at pos). */
static void monotonic_v3(pq_ctx_t *c, bucket_t *b, uint32_t n, int64_t ts, uint32_t pos)
{
    const double min_normal = 2.2250738585072014e-308;
    double prev = b[0].count, minb = INFINITY, maxb = -INFINITY, maxdiff = 0;
    bool forced = false;
    for (uint32_t i = 1; i < n; i++) {
        double cur = b[i].count;
        if (cur == prev)
            continue;
        double abs_sum = fabs(prev) + fabs(cur), diff = fabs(prev - cur);
        bool almost = (isnan(prev) && isnan(cur)) ||
                      (prev == 0 || cur == 0 || abs_sum < min_normal ? diff < 1e-12 * min_normal
                                                                     : diff / fmin(abs_sum, DBL_MAX) < 1e-12);
        if (almost) {
            b[i].count = prev;
            continue;
        }
        if (cur < prev) {
            b[i].count = prev;
            forced = true;
            minb = fmin(minb, b[i].ub);
            maxb = fmax(maxb, b[i].ub);
            maxdiff = fmax(maxdiff, prev - cur);
            continue;
        }
        prev = cur;
    }
    if (!forced)
        return;
    if (c->mono.count++ == 0) {
        c->mono.pos = pos;
        c->mono.min_ts = c->mono.max_ts = ts;
        c->mono.min_bucket = minb;
        c->mono.max_bucket = maxb;
        c->mono.max_diff = maxdiff;
        return;
    }
    c->mono.min_ts = ts < c->mono.min_ts ? ts : c->mono.min_ts;
    c->mono.max_ts = ts > c->mono.max_ts ? ts : c->mono.max_ts;
    c->mono.min_bucket = fmin(c->mono.min_bucket, minb);
    c->mono.max_bucket = fmax(c->mono.max_bucket, maxb);
    c->mono.max_diff = fmax(c->mono.max_diff, maxdiff);
}

void pq_mono_annotate(pq_ctx_t *c)
{
    if (c->mono.count == 0)
        return;
    char lo[40], hi[40], t0[48], t1[48];
    pq_go_fmt_v(c->mono.min_bucket, lo, sizeof(lo));
    pq_go_fmt_v(c->mono.max_bucket, hi, sizeof(hi));
    /* time.Unix(ts/1000, 0): whole seconds, Go's division (toward zero) */
    ps_format_time_go(c->mono.min_ts / 1000 * 1000000000, t0, sizeof(t0));
    ps_format_time_go(c->mono.max_ts / 1000 * 1000000000, t1, sizeof(t1));
    pq_annotate(c, false, c->mono.pos,
                "input to histogram_quantile needed to be fixed for monotonicity (see "
                "https://prometheus.io/docs/prometheus/latest/querying/functions/#histogram_quantile), from buckets "
                "%s to %s, with a max diff of %.2g, over %u samples from %s to %s",
                lo, hi, c->mono.max_diff, c->mono.count, t0, t1);
}

/* bucketQuantile with coalesceBuckets and ensureMonotonic (2.42), or Prometheus 3's fixes
 * (monotonic_v3) when c->open */
static double bucket_quantile(pq_ctx_t *c, double q, bucket_t *b, uint32_t n, int64_t ts, uint32_t pos)
{
    if (isnan(q))
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    qsort(b, n, sizeof(bucket_t), cmp_bucket);
    if (!(isinf(b[n - 1].ub) && b[n - 1].ub > 0))
        return NAN;
    n = coalesce_buckets(b, n);
    if (c->open) {
        monotonic_v3(c, b, n, ts, pos);
    } else {
        double max = -INFINITY;
        for (uint32_t i = 0; i < n; i++) {
            if (b[i].count > max)
                max = b[i].count;
            else if (b[i].count < max)
                b[i].count = max;
        }
    }
    if (n < 2)
        return NAN;
    double obs = b[n - 1].count;
    if (obs == 0)
        return NAN;
    double rank = q * obs;
    uint32_t lo = 0, hi = n - 1; /* sort.Search over n - 1 */
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (!(b[mid].count >= rank))
            lo = mid + 1;
        else
            hi = mid;
    }
    uint32_t i = lo;
    if (i == n - 1)
        return b[n - 2].ub;
    if (i == 0 && b[0].ub <= 0)
        return b[0].ub;
    double start = 0, end = b[i].ub, count = b[i].count;
    if (i > 0) {
        start = b[i - 1].ub;
        count -= b[i - 1].count;
        rank -= b[i - 1].count;
    }
    return start + (end - start) * (rank / count);
}

/* strconv.ParseFloat's forms: decimal and hex floats, inf/infinity/nan in any case, a sign */
static bool parse_go_float(const char *s, double *out)
{
    if (*s == 0 || isspace((unsigned char)*s))
        return false;
    const char *t = s + (*s == '+' || *s == '-');
    if (strncasecmp(t, "nan", 3) == 0 && t[3] != 0)
        return false; /* "nan(...)" is C's, not Go's */
    if (strncasecmp(t, "nan", 3) == 0 && t != s)
        return false; /* Go takes no sign on NaN */
    char *end;
    *out = strtod(s, &end);
    return end != s && *end == 0;
}

typedef struct hgroup {
    ps_labels_t ls;
    bucket_t *b;
    uint32_t n, cap;
} hgroup_t;

/* BucketFraction (Prometheus 3): the fraction of the observations of classic buckets between
 * lower and upper, interpolated linearly inside a bucket (a bucket from -Inf or to +Inf counts
 * whole or not at all). */
static double bucket_fraction(double lower, double upper, bucket_t *b, uint32_t n)
{
    qsort(b, n, sizeof(bucket_t), cmp_bucket);
    if (!(isinf(b[n - 1].ub) && b[n - 1].ub > 0))
        return NAN;
    n = coalesce_buckets(b, n);
    double count = b[n - 1].count;
    if (count == 0 || isnan(lower) || isnan(upper))
        return NAN;
    if (lower >= upper)
        return 0;
    double rank = 0, lower_rank = 0, upper_rank = 0;
    bool lower_set = false, upper_set = false;
    double lb = b[0].ub <= 0 ? -INFINITY : 0;
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            lb = b[i - 1].ub;
        double ub = b[i].ub;
        if (!lower_set && lb >= lower) {
            lower_rank = rank;
            lower_set = true;
        }
        if (!upper_set && lb >= upper) {
            upper_rank = rank;
            upper_set = true;
        }
        if (lower_set && upper_set)
            break;
        if (!lower_set && lb < lower && ub > lower) {
            lower_rank = isinf(lb) && lb < 0 ? b[i].count : rank + (b[i].count - rank) * (lower - lb) / (ub - lb);
            lower_set = true;
        }
        if (!upper_set && lb < upper && ub > upper) {
            upper_rank = isinf(lb) && lb < 0 ? b[i].count : rank + (b[i].count - rank) * (upper - lb) / (ub - lb);
            upper_set = true;
        }
        if (lower_set && upper_set)
            break;
        rank = b[i].count;
    }
    if (!lower_set || lower_rank > count)
        lower_rank = count;
    if (!upper_set || upper_rank > count)
        upper_rank = count;
    return (upper_rank - lower_rank) / count;
}

/* histogram_quantile(q, buckets), or (Prometheus 3) histogram_fraction(lower, upper, buckets)
 * when fraction: of the classic buckets of in (the arg-th argument), grouped by their labels but le. */
static int classic_histogram(pq_ctx_t *c, pq_node_t *p, bool fraction, double q, double upper, const pq_vec_t *in,
                             int64_t ts, pq_vec_t *out)
{
    ps_hmap_t *idx = &p->m1;
    ps_hmap_clear(idx);
    uint32_t arg = fraction ? 2 : 1;
    if (!fraction)
        pq_check_quantile(c, q, p->n->args[0]->pos);
    hgroup_t *g = ps_arena_alloc(&c->scratch, (in->n + 1) * sizeof(hgroup_t));
    uint32_t ng = 0;
    for (uint32_t i = 0; i < in->n; i++) {
        const pq_elem_t *e = &in->e[i];
        const char *le = ps_labels_value(&e->ls, "le");
        double ub;
        if (le == NULL || !parse_go_float(le, &ub) || (isnan(ub) && c->open)) { /* 3.x: a NaN bound too */
            char qv[400];
            pq_go_quote(le ? le : "", qv, sizeof(qv));
            pq_annotate(c, true, p->n->args[arg]->pos, "bucket label \"le\" is missing or has a malformed value of %s",
                        qv);
            continue;
        }
        ps_buf_reset(&c->kb);
        for (uint32_t k = 0; k < e->ls.n; k++)
            if (strcmp(e->ls.pairs[k].name, "le") != 0) {
                ps_buf_append(&c->kb, e->ls.pairs[k].name, e->ls.pairs[k].nlen);
                ps_buf_putc(&c->kb, 0xff);
                ps_buf_append(&c->kb, e->ls.pairs[k].value, e->ls.pairs[k].vlen);
                ps_buf_putc(&c->kb, 0xff);
            }
        uint64_t gi;
        if (!ps_hmap_get(idx, c->kb.data, c->kb.len, &gi)) {
            gi = ng++;
            ps_hmap_put(idx, c->kb.data, c->kb.len, gi);
            ps_labels_t ls = pq_drop_name(c, &e->ls);
            ps_labels_del(&ls, &c->scratch, "le", 2);
            g[gi] = (hgroup_t){ls, ps_arena_alloc(&c->scratch, (in->n - i) * sizeof(bucket_t)), 0, in->n - i};
        }
        g[gi].b[g[gi].n++] = (bucket_t){ub, e->v};
    }
    for (uint32_t k = 0; k < ng; k++)
        if (g[k].n > 0)
            out->e[out->n++] = (pq_elem_t){g[k].ls,
                                           fraction ? bucket_fraction(q, upper, g[k].b, g[k].n)
                                                    : bucket_quantile(c, q, g[k].b, g[k].n, ts, p->n->args[arg]->pos),
                                           ts, 0};
    return 0;
}

/* ---- sort, sort_desc ---- */

/* sort: vectorByReverseValueHeap reversed (ascending, NaN last); sort_desc: vectorByValueHeap
 * reversed (descending, NaN last). Insertion sort (what Go does up to 12 elements), stable. */
static bool sort_before(double a, double b, bool desc) /* a goes before b */
{
    /* Reverse(h).Less(i, j) = h.Less(j, i) */
    if (isnan(b))
        return true;
    return desc ? b < a : b > a;
}

static void sort_vec(pq_vec_t *v, bool desc)
{
    if (v->n <= 1)
        return;
    for (uint32_t i = 1; i < v->n; i++) {
        pq_elem_t x = v->e[i];
        uint32_t j = i;
        while (j > 0 && sort_before(x.v, v->e[j - 1].v, desc)) {
            v->e[j] = v->e[j - 1];
            j--;
        }
        v->e[j] = x;
    }
}

/* ---- sort_by_label, sort_by_label_desc (Prometheus 3, experimental) ---- */

/* facette/natsort's Compare (the version Prometheus pins): a before b when, chunk by chunk (runs
 * of digits, runs of other bytes), a's is smaller: two numbers as integers (strconv.Atoi: not past
 * int64), else as strings; when a's last chunk is reached with every chunk equal, a is before. */
static bool natsort_less(const char *a, const char *b)
{
    size_t i = 0, j = 0, na = strlen(a), nb = strlen(b);
    while (i < na) {
        if (j >= nb)
            return false;
        bool da = a[i] >= '0' && a[i] <= '9', db = b[j] >= '0' && b[j] <= '9';
        size_t ei = i, ej = j;
        while (ei < na && (a[ei] >= '0' && a[ei] <= '9') == da)
            ei++;
        while (ej < nb && (b[ej] >= '0' && b[ej] <= '9') == db)
            ej++;
        bool last_a = ei >= na, last_b = ej >= nb;
        if (da && db) {
            errno = 0;
            char *end;
            char ca[32], cb[32];
            long long x = -1, y = -1;
            bool okx = ei - i < sizeof(ca), oky = ej - j < sizeof(cb);
            if (okx) {
                memcpy(ca, a + i, ei - i);
                ca[ei - i] = 0;
                x = strtoll(ca, &end, 10);
                okx = errno == 0;
            }
            errno = 0;
            if (oky) {
                memcpy(cb, b + j, ej - j);
                cb[ej - j] = 0;
                y = strtoll(cb, &end, 10);
                oky = errno == 0;
            }
            if (okx && oky) {
                if (x != y)
                    return x < y;
                if (last_a)
                    return true;
                if (last_b)
                    return false;
                i = ei;
                j = ej;
                continue;
            }
        }
        size_t la = ei - i, lb = ej - j;
        if (la == lb && memcmp(a + i, b + j, la) == 0) {
            if (last_a)
                return true;
            if (last_b)
                return false;
            i = ei;
            j = ej;
            continue;
        }
        int r = memcmp(a + i, b + j, la < lb ? la : lb);
        return r != 0 ? r < 0 : la < lb;
    }
    return false;
}

typedef struct bylabel {
    const pq_node_t *p;
    bool desc;
} bylabel_t;

static _Thread_local const bylabel_t *bylabel_ctx; /* qsort's comparator has no argument for it */

static int cmp_bylabel(const void *x, const void *y)
{
    const pq_elem_t *a = x, *b = y;
    const bylabel_t *k = bylabel_ctx;
    for (uint32_t i = 1; i < k->p->nargs; i++) {
        const char *name = str_arg(k->p, i);
        const char *va = ps_labels_value(&a->ls, name), *vb = ps_labels_value(&b->ls, name);
        va = va ? va : "";
        vb = vb ? vb : "";
        if (strcmp(va, vb) == 0)
            continue;
        bool less = natsort_less(va, vb);
        return k->desc ? (less ? 1 : -1) : (less ? -1 : 1);
    }
    int r = ps_labels_cmp(&a->ls, &b->ls); /* then by the whole label set */
    return k->desc ? -r : r;
}

/* ---- the call ---- */

int pq_call_plan(pq_ctx_t *c, pq_node_t *p)
{
    const ps_pq_node_t *n = p->n;
    switch (n->func->id) {
    case PS_FN_RATE: case PS_FN_IRATE: case PS_FN_INCREASE: case PS_FN_DELTA: case PS_FN_IDELTA:
    case PS_FN_RESETS: case PS_FN_CHANGES: case PS_FN_DERIV: case PS_FN_PREDICT_LINEAR:
    case PS_FN_AVG_OVER_TIME: case PS_FN_MIN_OVER_TIME: case PS_FN_MAX_OVER_TIME: case PS_FN_SUM_OVER_TIME:
    case PS_FN_COUNT_OVER_TIME: case PS_FN_LAST_OVER_TIME: case PS_FN_QUANTILE_OVER_TIME:
    case PS_FN_STDDEV_OVER_TIME: case PS_FN_STDVAR_OVER_TIME: case PS_FN_PRESENT_OVER_TIME:
    case PS_FN_ABS: case PS_FN_CEIL: case PS_FN_FLOOR: case PS_FN_ROUND: case PS_FN_SQRT: case PS_FN_SGN:
    case PS_FN_CLAMP: case PS_FN_CLAMP_MIN: case PS_FN_CLAMP_MAX:
    case PS_FN_TIME: case PS_FN_VECTOR: case PS_FN_SCALAR: case PS_FN_TIMESTAMP:
    case PS_FN_SORT: case PS_FN_SORT_DESC: case PS_FN_LABEL_JOIN: case PS_FN_HISTOGRAM_QUANTILE:
    case PS_FN_ABSENT: case PS_FN_ABSENT_OVER_TIME: case PS_FN_HOLT_WINTERS:
    case PS_FN_DAY_OF_MONTH: case PS_FN_DAY_OF_WEEK: case PS_FN_DAY_OF_YEAR: case PS_FN_DAYS_IN_MONTH:
    case PS_FN_HOUR: case PS_FN_MINUTE: case PS_FN_MONTH: case PS_FN_YEAR:
    case PS_FN_PI: case PS_FN_DEG: case PS_FN_RAD:
    case PS_FN_START: case PS_FN_END: case PS_FN_RANGE: case PS_FN_STEP:
    case PS_FN_EXP: case PS_FN_LN: case PS_FN_LOG2: case PS_FN_LOG10: case PS_FN_SIN: case PS_FN_COS: case PS_FN_TAN:
    case PS_FN_ASIN: case PS_FN_ACOS: case PS_FN_ATAN: case PS_FN_SINH: case PS_FN_COSH: case PS_FN_TANH:
    case PS_FN_ASINH: case PS_FN_ACOSH: case PS_FN_ATANH:
    case PS_FN_HISTOGRAM_COUNT: case PS_FN_HISTOGRAM_SUM: case PS_FN_HISTOGRAM_FRACTION:
    case PS_FN_FIRST_OVER_TIME: case PS_FN_HISTOGRAM_AVG: case PS_FN_HISTOGRAM_STDDEV: case PS_FN_HISTOGRAM_STDVAR:
    case PS_FN_MAD_OVER_TIME: case PS_FN_TS_OF_FIRST_OVER_TIME: case PS_FN_TS_OF_LAST_OVER_TIME:
    case PS_FN_TS_OF_MAX_OVER_TIME: case PS_FN_TS_OF_MIN_OVER_TIME:
    case PS_FN_SORT_BY_LABEL: case PS_FN_SORT_BY_LABEL_DESC:
        return 0;
    case PS_FN_LABEL_REPLACE: {
        const char *dst = str_arg(p, 1), *re = str_arg(p, 4);
        ps_buf_t b = PS_BUF_INIT;
        if (c->open) /* Prometheus 3: '.' matches a newline, as in selectors; 2.42: not here */
            PS_BUF_LIT(&b, "(?s:");
        else
            PS_BUF_LIT(&b, "(?-s:");
        ps_buf_append(&b, re, strlen(re));
        ps_buf_putc(&b, ')');
        ps_err_t e2;
        /* what Go's RE2 refuses and PCRE2 would take (lookaround, back-references, \Z, a++) is
         * refused as Prometheus refuses it */
        int ret = ps_regex_check_re2(re, strlen(re), &e2);
        if (ret == 0)
            ret = ps_regex_compile((const char *)b.data, b.len, PS_REGEX_CAPTURE | PS_REGEX_INVALID_UTF, &p->re, &e2);
        ps_buf_dispose(&b);
        if (ret)
            return ps_err_set(c->err, PS_ELIMIT, "invalid regular expression in label_replace(): %s", re);
        if (!pq_label_name_ok(c, dst))
            return ps_err_set(c->err, PS_ELIMIT, "invalid destination label name in label_replace(): %s", dst);
        p->md = ps_regex_match_new(ps_regex_groups(p->re) + 1);
        return 0;
    }
    default: {
        char what[96];
        snprintf(what, sizeof(what), "the function %s()", n->func->name);
        return ps_err_set_at(c->err, PS_EUNSUPPORTED, n->pos,
                             "%s (at 1:%u) is not supported by profstore's PromQL evaluator; Prometheus reading "
                             "profstore through remote_read evaluates all of PromQL",
                             what, n->pos + 1);
    }
    }
}

/* v3: Prometheus 3 multiplies by one constant in deg and rad (2.42: by 180, then divides by pi) */
static double simple(ps_pq_fn_t fn, double v, bool v3)
{
    switch (fn) {
    case PS_FN_ABS: return fabs(v);
    case PS_FN_CEIL: return ceil(v);
    case PS_FN_FLOOR: return floor(v);
    case PS_FN_SQRT: return sqrt(v);
    case PS_FN_SGN: return v < 0 ? -1 : v > 0 ? 1 : v;
    case PS_FN_DEG: return v3 ? v * (180 / M_PI) : v * 180 / M_PI;
    case PS_FN_EXP: return exp(v);
    case PS_FN_LN: return log(v);
    case PS_FN_LOG2: return log2(v);
    case PS_FN_LOG10: return log10(v);
    case PS_FN_SIN: return sin(v);
    case PS_FN_COS: return cos(v);
    case PS_FN_TAN: return tan(v);
    case PS_FN_ASIN: return asin(v);
    case PS_FN_ACOS: return acos(v);
    case PS_FN_ATAN: return atan(v);
    case PS_FN_SINH: return sinh(v);
    case PS_FN_COSH: return cosh(v);
    case PS_FN_TANH: return tanh(v);
    case PS_FN_ASINH: return asinh(v);
    case PS_FN_ACOSH: return acosh(v);
    case PS_FN_ATANH: return atanh(v);
    case PS_FN_RAD: return v3 ? v * (M_PI / 180) : v * M_PI / 180;
    default: return v;
    }
}

int pq_call_eval(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *a, pq_val_t *out)
{
    ps_pq_fn_t fn = p->n->func->id;
    out->type = PS_PQ_VVECTOR;
    switch (fn) {
    case PS_FN_TIME:
        out->type = PS_PQ_VSCALAR;
        out->s = (double)ts / 1000;
        return 0;
    case PS_FN_SCALAR:
        out->type = PS_PQ_VSCALAR;
        out->s = a[0].v.n == 1 ? a[0].v.e[0].v : NAN;
        return 0;
    case PS_FN_VECTOR:
        out->v = pq_vec_new(c, 1);
        out->v.e[out->v.n++] = (pq_elem_t){{0, NULL, 0}, a[0].s, ts, 0};
        return 0;
    case PS_FN_PI:
        out->type = PS_PQ_VSCALAR;
        out->s = M_PI;
        return 0;
    case PS_FN_START: case PS_FN_END: case PS_FN_RANGE: case PS_FN_STEP: {
        /* engine.go's foldQueryContextFunctions: step() is 0 in an instant query */
        const ps_pq_opts_t *o = c->o;
        out->type = PS_PQ_VSCALAR;
        out->s = fn == PS_FN_START ? (double)o->start / 1000 : fn == PS_FN_END ? (double)o->end / 1000
               : fn == PS_FN_RANGE ? (double)(o->end - o->start) / 1000
               : o->start == o->end ? 0 : (double)o->step / 1000;
        return 0;
    }
    case PS_FN_ABSENT:
        out->v = pq_vec_new(c, 1);
        if (a[0].v.n == 0)
            out->v.e[out->v.n++] = (pq_elem_t){pq_absent_labels(c, p->n->args[0]), 1, ts, 0};
        return 0;
    case PS_FN_HISTOGRAM_FRACTION:
        if (c->open) { /* Prometheus 3: of classic buckets too */
            out->v = pq_vec_new(c, a[2].v.n);
            return classic_histogram(c, p, true, a[0].s, a[1].s, &a[2].v, ts, &out->v);
        }
        out->v = pq_vec_new(c, 0);
        return 0;
    case PS_FN_HISTOGRAM_COUNT:
    case PS_FN_HISTOGRAM_SUM:
    case PS_FN_HISTOGRAM_AVG:
    case PS_FN_HISTOGRAM_STDDEV:
    case PS_FN_HISTOGRAM_STDVAR:
        out->v = pq_vec_new(c, 0); /* of native histograms only: a float sample has none */
        return 0;
    case PS_FN_DAY_OF_MONTH: case PS_FN_DAY_OF_WEEK: case PS_FN_DAY_OF_YEAR: case PS_FN_DAYS_IN_MONTH:
    case PS_FN_HOUR: case PS_FN_MINUTE: case PS_FN_MONTH: case PS_FN_YEAR:
        if (p->nargs == 0) {
            out->v = pq_vec_new(c, 1);
            out->v.e[out->v.n++] = (pq_elem_t){{0, NULL, 0}, date_field(fn, (double)(ts / 1000)), ts, 0};
            return 0;
        }
        break;
    default:
        break;
    }
    const pq_vec_t *in = &a[0].v;
    if (fn == PS_FN_HISTOGRAM_QUANTILE)
        in = &a[1].v;
    out->v = pq_vec_new(c, in->n);
    int ret = 0;
    switch (fn) {
    case PS_FN_ABS: case PS_FN_CEIL: case PS_FN_FLOOR: case PS_FN_SQRT: case PS_FN_SGN:
    case PS_FN_DEG: case PS_FN_RAD:
    case PS_FN_EXP: case PS_FN_LN: case PS_FN_LOG2: case PS_FN_LOG10: case PS_FN_SIN: case PS_FN_COS: case PS_FN_TAN:
    case PS_FN_ASIN: case PS_FN_ACOS: case PS_FN_ATAN: case PS_FN_SINH: case PS_FN_COSH: case PS_FN_TANH:
    case PS_FN_ASINH: case PS_FN_ACOSH: case PS_FN_ATANH:
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] =
                (pq_elem_t){pq_drop_name(c, &in->e[i].ls), simple(fn, in->e[i].v, c->open != 0), ts, 0};
        break;
    case PS_FN_DAY_OF_MONTH: case PS_FN_DAY_OF_WEEK: case PS_FN_DAY_OF_YEAR: case PS_FN_DAYS_IN_MONTH:
    case PS_FN_HOUR: case PS_FN_MINUTE: case PS_FN_MONTH: case PS_FN_YEAR:
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] = (pq_elem_t){pq_drop_name(c, &in->e[i].ls), date_field(fn, in->e[i].v), ts, 0};
        break;
    case PS_FN_ROUND: {
        double to_nearest = p->nargs >= 2 ? a[1].s : 1;
        double inv = 1.0 / to_nearest;
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] =
                (pq_elem_t){pq_drop_name(c, &in->e[i].ls), floor(in->e[i].v * inv + 0.5) / inv, ts, 0};
        break;
    }
    case PS_FN_CLAMP: {
        double min = a[1].s, max = a[2].s;
        if (max < min)
            break;
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] =
                (pq_elem_t){pq_drop_name(c, &in->e[i].ls), pq_go_max(min, pq_go_min(max, in->e[i].v)), ts, 0};
        break;
    }
    case PS_FN_CLAMP_MAX:
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] = (pq_elem_t){pq_drop_name(c, &in->e[i].ls), pq_go_min(a[1].s, in->e[i].v), ts, 0};
        break;
    case PS_FN_CLAMP_MIN:
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] = (pq_elem_t){pq_drop_name(c, &in->e[i].ls), pq_go_max(a[1].s, in->e[i].v), ts, 0};
        break;
    case PS_FN_TIMESTAMP: {
        const ps_pq_node_t *arg = p->n->args[0];
        while (arg->kind == PS_PQ_PAREN)
            arg = arg->expr;
        bool sample_time = arg->kind == PS_PQ_VECTOR;
        for (uint32_t i = 0; i < in->n; i++)
            out->v.e[out->v.n++] = (pq_elem_t){pq_drop_name(c, &in->e[i].ls),
                                               (double)(sample_time ? in->e[i].t : ts) / 1000, ts, 0};
        break;
    }
    case PS_FN_SORT:
    case PS_FN_SORT_DESC:
        if (c->o->start != c->o->end)
            pq_annotate(c, true, p->n->pos, "sort is ineffective for range queries since results are always ordered "
                                             "by labels");
        for (uint32_t i = 0; i < in->n; i++) {
            out->v.e[out->v.n] = in->e[i];
            out->v.e[out->v.n].t = ts;
            out->v.e[out->v.n++].src = 0;
        }
        sort_vec(&out->v, fn == PS_FN_SORT_DESC);
        break;
    case PS_FN_SORT_BY_LABEL:
    case PS_FN_SORT_BY_LABEL_DESC: {
        if (c->o->start != c->o->end)
            pq_annotate(c, true, p->n->pos, "sort is ineffective for range queries since results are always ordered "
                                             "by labels");
        for (uint32_t i = 0; i < in->n; i++) {
            out->v.e[out->v.n] = in->e[i];
            out->v.e[out->v.n].t = ts;
            out->v.e[out->v.n++].src = 0;
        }
        bylabel_t k = {p, fn == PS_FN_SORT_BY_LABEL_DESC};
        bylabel_ctx = &k;
        if (out->v.n > 1)
            qsort(out->v.e, out->v.n, sizeof(pq_elem_t), cmp_bylabel);
        bylabel_ctx = NULL;
        break;
    }
    case PS_FN_LABEL_REPLACE:
        ret = label_replace(c, p, in, &out->v);
        break;
    case PS_FN_LABEL_JOIN:
        ret = label_join(c, p, in, &out->v);
        break;
    case PS_FN_HISTOGRAM_QUANTILE:
        ret = classic_histogram(c, p, false, a[0].s, 0, in, ts, &out->v);
        break;
    default:
        return ps_err_set(c->err, PS_EINTERNAL, "function %s has no evaluation", p->n->func->name);
    }
    for (uint32_t i = 0; i < out->v.n; i++) {
        out->v.e[i].t = ts;
        out->v.e[i].src = 0;
    }
    if (ret)
        return ret;
    return pq_check_unique(c, p, &out->v);
}

