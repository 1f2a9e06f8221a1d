/*
 * sat.h - saturating int64 arithmetic for values that come from input and are summed: sample
 * values of a profile, merged profiles, totals, durations. Pushed values are any int64; their
 * sum must neither be undefined behaviour (signed overflow) nor wrap to the other sign, so it
 * stops at INT64_MAX or INT64_MIN. Go's pprof wraps instead; a sum that large means nothing
 * either way, and a saturated one keeps its sign.
 */
#ifndef PS_CORE_SAT_H
#define PS_CORE_SAT_H

#include <math.h>
#include <stdint.h>

/** a + b, clamped to [INT64_MIN, INT64_MAX]. */
static inline int64_t ps_sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_add_overflow(a, b, &r))
        return b > 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/** a - b, clamped. */
static inline int64_t ps_sat_sub(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_sub_overflow(a, b, &r))
        return b < 0 ? INT64_MAX : INT64_MIN;
    return r;
}

/** a * b, clamped. */
static inline int64_t ps_sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (__builtin_mul_overflow(a, b, &r))
        return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
    return r;
}

/** x rounded half away from zero, clamped (NaN: 0). */
static inline int64_t ps_sat_round(double x)
{
    if (x != x)
        return 0;
    if (x >= 9223372036854775807.0) /* 2^63: the first double past INT64_MAX */
        return INT64_MAX;
    if (x <= -9223372036854775808.0)
        return INT64_MIN;
    return llround(x);
}

/** a + b for unsigned counts, clamped to UINT64_MAX. */
static inline uint64_t ps_sat_addu(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_add_overflow(a, b, &r) ? UINT64_MAX : r;
}

#endif
