/*
 * fmt.h - number formatting as Prometheus' JSON API writes it.
 */
#ifndef PS_CORE_FMT_H
#define PS_CORE_FMT_H

#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"

/** Go's strconv.FormatFloat(v, 'f', -1, 64), or 'e' when |v| < 1e-6 or >= 1e21, and "NaN",
 *  "+Inf", "-Inf": the shortest text that reads back as v. buf >= 40 bytes. */
void ps_fmt_float(double v, char *buf, size_t size);
/** The shortest significant digits that read back as v (finite, not 0), as Go's shortest
 *  formatting finds them: digits (NUL-terminated, no sign, no trailing zeros but the one of "0"),
 *  *exp the decimal exponent of the first digit (v = d.ddd x 10^exp). Returns the digit count. */
int ps_fmt_shortest(double v, char digits[24], int *exp);
/** Prometheus' JSON timestamp: ms written as seconds, "sec[.mmm]" (fraction omitted when 0). */
void ps_fmt_ts_ms(int64_t ms, char *buf, size_t size);

/** A label value as the Prometheus text format writes it between quotes: backslash, double quote
 *  and newline escaped (\\, \", \n). Truncated to fit buf (never inside an escape); NUL-terminated. */
void ps_fmt_label_value(const char *s, char *buf, size_t size);
/** The same escaping, appended whole to b. */
void ps_fmt_label_value_buf(ps_buf_t *b, const char *s);

#endif
