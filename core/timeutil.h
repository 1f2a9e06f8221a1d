/*
 * timeutil.h - Prometheus-style durations ("15d", "1h30m", "250ms", or float seconds) and time
 * parameters (RFC3339, unix seconds or milliseconds, now-5m), all as int64 nanoseconds.
 */
#ifndef PS_CORE_TIMEUTIL_H
#define PS_CORE_TIMEUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "err.h"
#include "mem.h"

#define PS_NS_PER_S 1000000000ll

/** ns since the epoch as whole ms, rounded down (toward the past, also before 1970). */
static inline int64_t ps_ns_to_ms_floor(int64_t ns)
{
    return ns / 1000000 - (ns % 1000000 < 0);
}
/** Current wall-clock time in ns since the epoch. */
int64_t ps_time_now(void);
/** Monotonic clock in ns. */
int64_t ps_time_mono(void);
/** The CLOCK_MONOTONIC time ns from now (ns < 0: now), as pthread_cond_timedwait takes it for a
 *  condition variable made with that clock. */
struct timespec ps_mono_deadline(int64_t ns);
/** Parses "1h30m", "15d", "2w", "500ms", "1y" (Prometheus units ms s m h d w y) or a plain float
 *  number of seconds when allow_float. */
int ps_parse_duration(const char *s, size_t n, int allow_float, int64_t *ns, ps_err_t *err);
/**
 * Parses a time parameter of the query APIs, as Grafana and Pyroscope write them:
 *  - RFC3339 with optional fraction and zone ("2026-11-30T07:06:04.5Z", "...+02:00");
 *  - a unix time whose size says its unit: below 1e10 seconds (a float is rounded to the ms, as
 *    Prometheus does: "1700000000.5"), below 1e13 milliseconds (Grafana's from/to), below 1e16
 *    microseconds, below 1e19 nanoseconds. Every value Prometheus takes as seconds within the
 *    range of an int64 of ns (until 2262, 9.2e9 s) is below 1e10, so it means what it meant;
 *    values past that range were errors and now read as ms, us or ns (from April 1970 on);
 *  - "now", "now-5m", "now+1h", "now-1h30m": now_ns plus or minus a Prometheus duration (units y
 *    w d h m s ms, the larger first, each once).
 * Anything else is PS_EINVAL "cannot parse \"<s>\" to a valid timestamp" (Prometheus' words), with
 * for a relative time what is wrong and at which character (1-based) in err->pos and the message.
 */
int ps_parse_time(const char *s, size_t n, int64_t now_ns, int64_t *ns, ps_err_t *err);
/**
 * Parses a time as Pyroscope's attime does (its /ingest from/until and query API from/until):
 * "_", "," and blanks are dropped; all digits: 8 of them a valid YYYYMMDD (UTC midnight), else by
 * count 13 ms, 16 us, 19 ns, any other count seconds; otherwise an optional "now" and an offset
 * of <number><unit>... after '-' or '+' (units by prefix: s, m/min, h, d, w, M/mon = 30 d,
 * y = 365 d), relative to now_ns; and RFC3339 or float seconds ("1700000000.5", as ps_parse_time). Pyroscope takes anything else
 * as now; here it is PS_EINVAL with a message that names the part that is wrong and where.
 */
int ps_attime_parse(const char *s, size_t n, int64_t now_ns, int64_t *out_ns, ps_err_t *err);
/** Formats ns as RFC3339Nano UTC ("2026-11-30T07:06:04.123456789Z") into buf (>= 40 bytes). */
void ps_format_time(int64_t ns, char *buf, size_t size);
/** The same as Go's time.RFC3339Nano writes it: the fraction without its trailing zeros, none when
 *  the second is whole ("2026-11-30T07:06:04.1234Z"). */
void ps_format_time_go(int64_t ns, char *buf, size_t size);
/** Formats a duration like Prometheus ("1h30m", "15d"). */
void ps_format_duration(int64_t ns, char *buf, size_t size);

#endif
