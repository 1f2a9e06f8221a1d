/*
 * matcher.c - label matchers: = and != compare bytes, =~ and !~ run PCRE2 (8-bit, UTF).
 *
 * Anchoring. PromQL compiles a regex matcher as ^(?s:<re>)$ with Go's RE2. We compile <re> itself
 * with the options that mean the same thing, instead of pasting it into that text:
 *   PCRE2_ANCHORED | PCRE2_ENDANCHORED   the match starts at 0 and ends at the subject end ("^…$");
 *                                        unlike pasted text, a value such as `a)|(b` cannot break
 *                                        out of the group (it is an error, as in Prometheus, whose
 *                                        parser also checks the regex on its own), and (*ACCEPT)
 *                                        cannot end a match early;
 *   PCRE2_DOTALL                         "(?s:": '.' also matches "\n";
 *   PCRE2_DOLLAR_ENDONLY                 a '$' inside <re> is \z as in RE2 (PCRE2's '$' would also
 *                                        match before a final "\n", and so would a pasted "$");
 *   PCRE2_UTF                            patterns and subjects are UTF-8, as Go's;
 *   PCRE2_NEVER_BACKSLASH_C              \C (one code unit, may split a character) is refused;
 *   PCRE2_NO_AUTO_CAPTURE                (…) does not capture, so a back-reference \1 is an error
 *                                        (RE2 has none); capturing costs nothing we use anyway.
 * Error offsets in messages are therefore offsets into the user's regex.
 *
 * RE2 versus PCRE2, the differences we know of:
 *  - PCRE2 accepts more: back-references by name (\k<n>), lookahead/lookbehind, atomic groups,
 *    possessive quantifiers, recursion (?R), conditionals, backtracking verbs (*SKIP) (*ACCEPT),
 *    callouts (?C) (ignored: no callout function is set) and leading (*…) options (a
 *    (*LIMIT_MATCH=n) can only lower our limits). Such regexes are errors in Prometheus.
 *  - RE2 guarantees linear time; PCRE2 backtracks, so a regex like (a+)+$ can take exponential
 *    time. The match context caps that: match_limit 1,000,000, depth_limit 10,000, heap 16 MiB.
 *    A match that hits a limit (or any other match error) counts as no match, for =~ and !~ alike:
 *    ps_matcher_match returns false.
 *  - \w \d \s \b are ASCII in both (no PCRE2_UCP); (?i) folds Unicode case in both.
 *  - RE2 treats each byte of invalid UTF-8 in the subject as U+FFFD; PCRE2 refuses such a subject
 *    (a match error, so no match). Stored label values are valid UTF-8, so this is moot.
 *  - Syntax RE2 has and PCRE2 lacks or reads differently: \pN one-letter classes and \p{Greek} work
 *    in both; \z in both; \Z is "end or before final newline" in PCRE2 and an error in RE2;
 *    \C is refused; [[:word:]] works in both; (?P<name>…) works in both; (?U) works in both.
 *  - Repetition counts above 1000 are an error in RE2 and allowed (to 65535) in PCRE2.
 * Nested quantifiers and long alternations are bounded by PCRE2's compiled-size limit (an error).
 *
 * JIT: each regex is JIT-compiled when the library supports it (failure is ignored: the
 * interpreter runs). A JIT match that runs out of JIT stack is retried by the interpreter, which
 * keeps its backtracking frames on the heap under the heap limit.
 */
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "parser/selector_int.h"

#define MATCH_LIMIT 1000000u
#define DEPTH_LIMIT 10000u
#define HEAP_LIMIT_KIB (16u * 1024u)

#define RE_OPTIONS                                                                                                     \
    (PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C |  \
     PCRE2_NO_AUTO_CAPTURE)

static pcre2_match_context *match_ctx;
static pthread_once_t match_ctx_once = PTHREAD_ONCE_INIT;

/* One match context for every matcher: contexts are only read while matching, so threads share it. */
static void init_match_ctx(void)
{
    match_ctx = pcre2_match_context_create(NULL);
    if (match_ctx == NULL)
        abort(); /* out of memory: as ps_xmalloc */
    pcre2_set_match_limit(match_ctx, MATCH_LIMIT);
    pcre2_set_depth_limit(match_ctx, DEPTH_LIMIT);
    pcre2_set_heap_limit(match_ctx, HEAP_LIMIT_KIB);
}

/* 1 on a match, 0 on no match, a negative PCRE2 code on an error (limits, bad UTF-8 subject). */
static int re_match(const ps_matcher_t *m, const char *v, size_t vlen)
{
    pcre2_code *re = m->re;
    pcre2_match_data *md = m->md;
    PCRE2_SPTR subject = (PCRE2_SPTR)(v != NULL ? v : "");
    int rc = pcre2_match(re, subject, vlen, 0, 0, md, match_ctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(re, subject, vlen, 0, PCRE2_NO_JIT, md, match_ctx);
    if (rc >= 0)
        return 1;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : rc;
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
    int code;
    PCRE2_SIZE off;

    m->re = NULL;
    m->md = NULL;
    if (m->op == PS_MATCH_EQ || m->op == PS_MATCH_NEQ) {
        m->matches_empty = ps_matcher_match(m, "", 0);
        return 0;
    }
    pthread_once(&match_ctx_once, init_match_ctx);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)m->value, m->vlen, RE_OPTIONS, &code, &off, NULL);
    if (re == NULL) {
        PCRE2_UCHAR msg[256];
        char shown[96];
        if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
            snprintf((char *)msg, sizeof(msg), "error %d", code);
        ps_sel_quote(shown, sizeof(shown), m->value, m->vlen, 64);
        return ps_err_set(err, PS_EINVAL, "error parsing regexp %s: %s at offset %zu", shown, (const char *)msg,
                          (size_t)off);
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter runs without it */
    pcre2_match_data *md = pcre2_match_data_create(1, NULL);
    if (md == NULL)
        abort();
    m->re = re;
    m->md = md;
    m->matches_empty = ps_matcher_match(m, "", 0);
    return 0;
}

void ps_matcher_free(ps_matcher_t *m)
{
    if (m->md != NULL)
        pcre2_match_data_free(m->md);
    if (m->re != NULL)
        pcre2_code_free(m->re);
    m->md = NULL;
    m->re = NULL;
}
