/*
 * regex.c - PCRE2 behind regex.h: options, JIT, limits.
 *
 * Anchoring. PromQL and Prometheus' relabeling compile a regex as ^(?s:<re>)$ with Go's RE2. We
 * compile <re> itself with the options that mean the same thing, instead of pasting it into that
 * text:
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
 *   PCRE2_NO_AUTO_CAPTURE                without PS_REGEX_CAPTURE: (…) does not capture, so a
 *                                        back-reference \1 is an error (RE2 has none);
 *   PCRE2_MATCH_INVALID_UTF              with PS_REGEX_INVALID_UTF.
 * Error offsets are therefore offsets into the user's regex.
 *
 * RE2 versus PCRE2, the differences we know of:
 *  - PCRE2 accepts more: back-references by name (\k<n>), lookahead/lookbehind, atomic groups,
 *    possessive quantifiers, recursion (?R), conditionals, backtracking verbs (*SKIP) (*ACCEPT),
 *    callouts (?C) (ignored: no callout function is set) and leading (*…) options (a
 *    (*LIMIT_MATCH=n) can only lower our limits). Such regexes are errors in Prometheus.
 *  - RE2 guarantees linear time; PCRE2 backtracks, so a regex like (a+)+$ can take exponential
 *    time. The match context caps that (limits in regex.h); a match that hits a limit is an
 *    error, which the callers count as no match.
 *  - \w \d \s \b are ASCII in both (no PCRE2_UCP); (?i) folds Unicode case in both.
 *  - RE2 treats each byte of invalid UTF-8 in the subject as U+FFFD; PCRE2 refuses such a subject
 *    (a match error, so no match) unless PS_REGEX_INVALID_UTF is given.
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
#include "parser/regex.h"

#include <pcre2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

_Static_assert(sizeof(PCRE2_SIZE) == sizeof(size_t) && PCRE2_UNSET == PS_REGEX_UNSET, "PCRE2_SIZE is size_t");

#define BASE_OPTIONS                                                                                                   \
    (PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C)

static pcre2_match_context *match_ctx;
static pthread_once_t match_ctx_once = PTHREAD_ONCE_INIT;

/* One match context for every regex: contexts are only read while matching, so threads share it. */
static void init_match_ctx(void)
{
    match_ctx = pcre2_match_context_create(NULL);
    if (match_ctx == NULL)
        abort(); /* out of memory: as ps_xmalloc */
    pcre2_set_match_limit(match_ctx, PS_REGEX_MATCH_LIMIT);
    pcre2_set_depth_limit(match_ctx, PS_REGEX_DEPTH_LIMIT);
    pcre2_set_heap_limit(match_ctx, PS_REGEX_HEAP_LIMIT_KIB);
}

int ps_regex_compile(const char *pat, size_t n, unsigned flags, ps_regex_t **out, ps_err_t *err)
{
    int code;
    PCRE2_SIZE off;
    uint32_t options = BASE_OPTIONS;

    *out = NULL;
    if (!(flags & PS_REGEX_CAPTURE))
        options |= PCRE2_NO_AUTO_CAPTURE;
    if (flags & PS_REGEX_INVALID_UTF)
        options |= PCRE2_MATCH_INVALID_UTF;
    pthread_once(&match_ctx_once, init_match_ctx);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(pat != NULL ? pat : ""), n, options, &code, &off, NULL);
    if (re == NULL) {
        PCRE2_UCHAR msg[256];
        if (pcre2_get_error_message(code, msg, sizeof(msg)) < 0)
            snprintf((char *)msg, sizeof(msg), "error %d", code);
        return ps_err_set_at(err, PS_EINVAL, (size_t)off, "%s", (const char *)msg);
    }
    (void)pcre2_jit_compile(re, PCRE2_JIT_COMPLETE); /* optional: the interpreter runs without it */
    *out = (ps_regex_t *)re;
    return 0;
}

void ps_regex_free(ps_regex_t *re)
{
    if (re != NULL)
        pcre2_code_free((pcre2_code *)re);
}

uint32_t ps_regex_groups(const ps_regex_t *re)
{
    uint32_t n = 0;
    if (pcre2_pattern_info((const pcre2_code *)re, PCRE2_INFO_CAPTURECOUNT, &n) != 0)
        return 0;
    return n;
}

int ps_regex_group_number(const ps_regex_t *re, const char *name)
{
    int g = pcre2_substring_number_from_name((const pcre2_code *)re, (PCRE2_SPTR)name);
    return g > 0 ? g : -1;
}

ps_regex_match_t *ps_regex_match_new(uint32_t pairs)
{
    pcre2_match_data *md = pcre2_match_data_create(pairs > 0 ? pairs : 1, NULL);
    if (md == NULL)
        abort(); /* out of memory: as ps_xmalloc */
    return (ps_regex_match_t *)md;
}

void ps_regex_match_free(ps_regex_match_t *md)
{
    if (md != NULL)
        pcre2_match_data_free((pcre2_match_data *)md);
}

int ps_regex_match(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md)
{
    const pcre2_code *code = (const pcre2_code *)re;
    pcre2_match_data *data = (pcre2_match_data *)md;
    PCRE2_SPTR subject = (PCRE2_SPTR)(s != NULL ? s : "");
    int rc = pcre2_match(code, subject, n, 0, 0, data, match_ctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(code, subject, n, 0, PCRE2_NO_JIT, data, match_ctx);
    if (rc == 0) /* a match whose groups did not all fit: the pairs that did are set */
        return (int)pcre2_get_ovector_count(data);
    if (rc > 0)
        return rc;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : rc;
}

const size_t *ps_regex_ovector(const ps_regex_match_t *md)
{
    return pcre2_get_ovector_pointer((pcre2_match_data *)md);
}
