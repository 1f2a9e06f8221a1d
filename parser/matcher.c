/*
 * matcher.c - label matchers: = and != compare bytes, =~ and !~ run a regex (parser/regex.h).
 *
 * A regex matcher is compiled as PromQL's ^(?s:<re>)$ (ps_regex_compile; regex.c lists how PCRE2
 * differs from Go's RE2) without capturing groups (a back-reference \1 is an error, as in RE2).
 * Error offsets in messages are offsets into the user's regex. A match that hits a limit (or any
 * other match error) counts as no match, for =~ and !~ alike: ps_matcher_match returns false.
 */
#include <string.h>

#include "parser/regex.h"
#include "parser/selector_int.h"

/* 1 on a match, 0 on no match, a negative code on an error (limits, bad UTF-8 subject). */
static int re_match(const ps_matcher_t *m, const char *v, size_t vlen)
{
    int rc = ps_regex_match(m->re, v, vlen, m->md);
    return rc > 0 ? 1 : rc;
}

bool ps_matcher_match(ps_matcher_t *m, const char *v, size_t vlen)
{
    switch (m->op) {
    case PS_MATCH_EQ:
        return vlen == m->vlen && (vlen == 0 || memcmp(v, m->value, vlen) == 0);
    case PS_MATCH_NEQ:
        return !(vlen == m->vlen && (vlen == 0 || memcmp(v, m->value, vlen) == 0));
    case PS_MATCH_RE:
        return re_match(m, v, vlen) == 1;
    case PS_MATCH_NRE:
        return re_match(m, v, vlen) == 0;
    }
    return false;
}

int ps_matcher_compile(ps_matcher_t *m, ps_err_t *err)
{
    ps_err_t e;

    m->re = NULL;
    m->md = NULL;
    if (m->op == PS_MATCH_EQ || m->op == PS_MATCH_NEQ) {
        m->matches_empty = ps_matcher_match(m, "", 0);
        return 0;
    }
    if (ps_regex_compile(m->value, m->vlen, 0, &m->re, &e) != 0) {
        char shown[96];
        ps_sel_quote(shown, sizeof(shown), m->value, m->vlen, 64);
        return ps_err_set(err, PS_EINVAL, "error parsing regexp %s: %s at offset %d", shown, e.msg, (int)e.pos);
    }
    m->md = ps_regex_match_new(1);
    m->matches_empty = ps_matcher_match(m, "", 0);
    return 0;
}

void ps_matcher_free(ps_matcher_t *m)
{
    ps_regex_match_free(m->md);
    ps_regex_free(m->re);
    m->md = NULL;
    m->re = NULL;
}
