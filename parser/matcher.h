/*
 * matcher.h - label matchers (name op "value"), the piece of a selector (selector.h) that is
 * matched against a label's value: = and != compare bytes, =~ and !~ run a regex compiled with
 * regex.h as PromQL's fully anchored ^(?s:re)$ (matcher.c says how limits and budgets apply).
 * The selector parsers (selector.c, promql.c) and ps_selector_from_specs fill the fields and
 * call ps_matcher_compile; ps_selector_dispose calls ps_matcher_free.
 */
#ifndef PS_PARSER_MATCHER_H
#define PS_PARSER_MATCHER_H

#include <stdbool.h>
#include <stddef.h>

#include "core/err.h"
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

/**
 * Compiles the matcher's regex (m->op RE or NRE, m->value set) and sets m->re, m->md and
 * m->matches_empty. On an invalid regex returns PS_EINVAL with the message
 * "error parsing regexp \"<re>\": <PCRE2 message> at offset N" (no position prefix).
 * EQ and NEQ only get matches_empty.
 */
int ps_matcher_compile(ps_matcher_t *m, ps_err_t *err);
/** Frees m->re and m->md (safe when they are NULL). */
void ps_matcher_free(ps_matcher_t *m);

/** True if value v matches. A regex that hits a limit counts as no match: only for tests that
 *  cannot fail (the compiler's "matches empty"); queries use ps_matcher_eval. */
bool ps_matcher_match(ps_matcher_t *m, const char *v, size_t vlen);
/** 1 if value v matches, 0 if not, or a negative code with err: a regex that hits a PCRE2 limit
 *  or the query's regex budget (PS_ELIMIT: "regex matcher job!~\"(a|aa)+$\": PCRE2 match limit
 *  hit on a value of 312 bytes"), or the query's deadline or cancellation (core/budget.h). */
int ps_matcher_eval(ps_matcher_t *m, const char *v, size_t vlen, ps_err_t *err);

#endif
