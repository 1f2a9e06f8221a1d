/*
 * selector.h - Prometheus series selectors (what match[] and the profile APIs take; PromQL is
 * promql.h, which uses the same selectors).
 *
 *   selector   := metric_name [ "{" [ matcher { "," matcher } [","] ] "}" ] | "{" matchers "}"
 *   matcher    := label_name ( "=" | "!=" | "=~" | "!~" ) string  |  string (the metric name)
 *   label_name := identifier | string (Prometheus 3's quoted UTF-8 names: {"service.name"="x"})
 *
 * Lexing is done by a re2c scanner (selector.re, generated at build time); parsing is recursive
 * descent. Strings take the three PromQL quote styles with Go escapes (see labels.h). Metric
 * names may contain colons (profile type ids do). Errors read like Prometheus':
 *   "1:17: parse error: unexpected \"}\" in label matching, expected string"
 * with a 1-based byte column; err->pos is the 0-based byte offset of that place in the input
 * (-1 for the errors about the whole input, such as its size).
 *
 * Regex matchers are compiled with parser/regex.h: PCRE2 fully anchored as ^(?s:re)$ (JIT when
 * available) with match, depth and heap limits so no regex can stall the server; an invalid regex
 * is a parse error.
 * A selector must contain at least one matcher that does not match the empty string.
 */
#ifndef PS_PARSER_SELECTOR_H
#define PS_PARSER_SELECTOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "parser/matcher.h"
#include "parser/regex.h"

typedef struct ps_selector {
    uint32_t n;
    ps_matcher_t *m;   /* (matcher.h) in source order; a metric name becomes an EQ matcher on __name__ first */
} ps_selector_t;

/** Parses a selector (the whole input, nothing but the selector: Prometheus'
 *  parser.ParseMetricSelector). Limits: 64 KiB of input, 64 matchers. */
int ps_selector_parse(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err);

/** As ps_selector_parse, but `{}` and selectors whose every matcher matches "" are taken: a
 *  Pyroscope label_selector, to which the caller adds a profile type matcher. */
int ps_selector_parse_labels(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err);

/** Frees the compiled regexes of the selector's matchers. Safe on NULL. */
void ps_selector_dispose(ps_selector_t *sel);

#endif
