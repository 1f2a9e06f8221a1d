/*
 * selector_specs.h - selectors built from matchers that arrive already split, as (type, name, value)
 * triples (remote read's prometheus.LabelMatcher), rather than parsed from PromQL text. The
 * result is the same ps_selector_t the parser makes: =~ and !~ compiled by the same rules
 * (PCRE2, fully anchored as ^(?s:re)$, under match limits; see selector.h), matches_empty set.
 */
#ifndef PS_PARSER_SELECTOR_SPECS_H
#define PS_PARSER_SELECTOR_SPECS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "parser/selector.h"

typedef struct ps_matcher_spec {
    ps_match_op_t op;
    const char *name;
    size_t nlen;
    const char *value;
    size_t vlen;
} ps_matcher_spec_t;

/**
 * Builds out from n specs in the given order; names and values are copied (NUL-terminated) from
 * arena. An invalid regex is PS_EINVAL "matchers[2]: error parsing regexp \"(\": missing closing
 * parenthesis at offset 1", with nothing left to dispose; more than 1,000 matchers is PS_ETOOBIG.
 * Unlike a parsed selector, every matcher may match "" (the caller decides whether that is
 * allowed). Free with ps_selector_dispose.
 */
int ps_selector_from_specs(const ps_matcher_spec_t *specs, uint32_t n, ps_arena_t *arena, ps_selector_t *out,
                           ps_err_t *err);

#endif
