/*
 * selector.h - Prometheus series selectors (what match[] and the profile APIs take; PromQL is
 * promql.h, which uses the same selectors).
 *
 *   selector   := metric_name [ "{" [ matcher { "," matcher } [","] ] "}" ] | "{" matchers "}"
 *   matcher    := label_name ( "=" | "!=" | "=~" | "!~" ) string
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
#include "parser/regex.h"

typedef enum { PS_MATCH_EQ, PS_MATCH_NEQ, PS_MATCH_RE, PS_MATCH_NRE } ps_match_op_t;

typedef struct ps_matcher {
    ps_match_op_t op;
    const char *name;  /* NUL-terminated, from the arena */
    size_t nlen;
    const char *value; /* unquoted, NUL-terminated */
    size_t vlen;
    ps_regex_t *re;    /* RE/NRE (without PS_REGEX_CAPTURE); owned: freed by ps_selector_dispose */
    ps_regex_match_t *md; /* this matcher's match data: one match at a time */
    bool matches_empty; /* whether the matcher accepts "" (and so series without the label) */
} ps_matcher_t;

typedef struct ps_selector {
    uint32_t n;
    ps_matcher_t *m;   /* in source order; a metric name becomes an EQ matcher on __name__ first */
} ps_selector_t;

/** Parses a selector (the whole input, nothing but the selector: Prometheus'
 *  parser.ParseMetricSelector). Limits: 64 KiB of input, 64 matchers. */
int ps_selector_parse(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err);

/** As ps_selector_parse, but `{}` and selectors whose every matcher matches "" are taken: a
 *  Pyroscope label_selector, to which the caller adds a profile type matcher. */
int ps_selector_parse_labels(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err);

/** Frees the compiled regexes of the selector's matchers. Safe on NULL. */
void ps_selector_dispose(ps_selector_t *sel);

/** True if value v matches. A regex that hits a limit counts as no match: only for tests that
 *  cannot fail (the compiler's "matches empty"); queries use ps_matcher_eval. */
bool ps_matcher_match(ps_matcher_t *m, const char *v, size_t vlen);
/** 1 if value v matches, 0 if not, or a negative code with err: a regex that hits a PCRE2 limit
 *  or the query's regex budget (PS_ELIMIT: "regex matcher job!~\"(a|aa)+$\": PCRE2 match limit
 *  hit on a value of 312 bytes"), or the query's deadline or cancellation (core/budget.h). */
int ps_matcher_eval(ps_matcher_t *m, const char *v, size_t vlen, ps_err_t *err);

#endif
