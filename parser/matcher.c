/*
 * matcher.c - label matchers (matcher.h): = and != compare bytes, =~ and !~ run a regex (parser/regex.h).
 *
 * A regex matcher is compiled as PromQL's ^(?s:<re>)$ (ps_regex_compile; regex.c lists how PCRE2
 * differs from Go's RE2) without capturing groups (a back-reference \1 is an error, as in RE2).
 * Error offsets in messages are offsets into the user's regex.
 *
 * Regex work (ps_matcher_eval). A match runs in stages of rising PCRE2 match limits, STAGES below
 * (1,000, 32,000, then PS_REGEX_MATCH_LIMIT = 1,000,000 steps), as pcre2test's find_limits does:
 * almost every value is decided within the first. Each run is charged to the query's regex budget
 * (core/budget.h, --query.max-regex-steps) at its limit, an upper bound of the steps it took, and
 * no run may go past what is left of the budget. A value that needs more than the last stage's
 * limit, or more than the budget has left, is an error of the query (PS_ELIMIT, 422, naming the
 * matcher and the value's length), never "no match": a limit must not make a wrong answer. Every
 * run also checks the query's deadline and cancel flag, so a regex scan stops when its query does.
 * A match error that is no limit (an invalid UTF-8 value) is a value the regex does not match:
 * =~ is false, !~ true (as RE2 reads such bytes as U+FFFD, which the regex would have to match).
 * ps_matcher_match (bool) is the same without a budget, for the compile-time "matches empty" test.
 */
#include "parser/matcher.h"

#include <stdio.h>
#include <string.h>

#include "core/budget.h"
#include "parser/labels.h"
#include "parser/regex.h"

static const uint32_t STAGES[] = {1000, 32000, PS_REGEX_MATCH_LIMIT};
#define NSTAGES (sizeof(STAGES) / sizeof(STAGES[0]))

static int limit_error(const ps_matcher_t *m, const char *what, size_t vlen, ps_err_t *err)
{
    char shown[96];
    ps_quote_string(shown, sizeof(shown), m->value, m->vlen, 64);
    return ps_err_set(err, PS_ELIMIT, "regex matcher %.*s%s%s: %s on a value of %zu bytes", (int)m->nlen, m->name,
                      m->op == PS_MATCH_RE ? "=~" : "!~", shown, what, vlen);
}

/* "the query's regex budget is spent (<the setting>)" */
static const char *regex_spent(char *buf, size_t size)
{
    snprintf(buf, size, "the query's regex budget is spent (%s)", ps_setting_name(PS_SETTING_QUERY_MAX_REGEX_STEPS));
    return buf;
}

/* 1 on a match, 0 on no match, a negative code on an error (limits, budget, deadline). */
static int re_match(const ps_matcher_t *m, const char *v, size_t vlen, ps_err_t *err)
{
    int ret;
    char spent[128];
    if ((ret = ps_budget_check_now(err)) != 0)
        return ret;
    for (size_t i = 0; i < NSTAGES; i++) {
        uint64_t left = ps_budget_regex_left();
        uint32_t lim = left < STAGES[i] ? (uint32_t)left : STAGES[i];
        if (lim == 0)
            return limit_error(m, regex_spent(spent, sizeof(spent)), vlen, err);
        int rc = ps_regex_match_limit(m->re, v, vlen, m->md, lim);
        ps_budget_regex(lim);
        if (rc > 0)
            return 1;
        if (rc == 0)
            return 0;
        const char *hit = ps_regex_limit_hit(rc);
        if (hit == NULL)
            return 0; /* not a limit: an invalid UTF-8 value matches nothing */
        if (strcmp(hit, "match limit") != 0)
            return limit_error(m, hit[0] == 'd'   ? "PCRE2 depth limit hit"
                                  : hit[0] == 'h' ? "PCRE2 heap limit hit"
                                                  : "PCRE2 memory limit hit",
                               vlen, err);
        if (lim < STAGES[i])
            return limit_error(m, regex_spent(spent, sizeof(spent)), vlen, err);
    }
    return limit_error(m, "PCRE2 match limit hit", vlen, err);
}

/* v equals the matcher's value */
static bool value_eq(const ps_matcher_t *m, const char *v, size_t vlen)
{
    return vlen == m->vlen && (vlen == 0 || memcmp(v, m->value, vlen) == 0);
}

int ps_matcher_eval(ps_matcher_t *m, const char *v, size_t vlen, ps_err_t *err)
{
    int rc;
    switch (m->op) {
    case PS_MATCH_EQ:
        return value_eq(m, v, vlen);
    case PS_MATCH_NEQ:
        return !value_eq(m, v, vlen);
    case PS_MATCH_RE:
        return re_match(m, v, vlen, err);
    case PS_MATCH_NRE:
        rc = re_match(m, v, vlen, err);
        return rc < 0 ? rc : !rc;
    }
    return 0;
}

/* Without a budget: a limit counts as no match (both ways), for the compile-time test only. */
static int plain_match(const ps_matcher_t *m, const char *v, size_t vlen)
{
    int rc = ps_regex_match(m->re, v, vlen, m->md);
    return rc > 0 ? 1 : rc;
}

bool ps_matcher_match(ps_matcher_t *m, const char *v, size_t vlen)
{
    switch (m->op) {
    case PS_MATCH_EQ:
        return value_eq(m, v, vlen);
    case PS_MATCH_NEQ:
        return !value_eq(m, v, vlen);
    case PS_MATCH_RE:
        return plain_match(m, v, vlen) == 1;
    case PS_MATCH_NRE:
        return plain_match(m, v, vlen) == 0;
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
        ps_quote_string(shown, sizeof(shown), m->value, m->vlen, 64);
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
