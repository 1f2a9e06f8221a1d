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
 *   PCRE2_MATCH_INVALID_UTF              with PS_REGEX_INVALID_UTF;
 *   PCRE2_DUPNAMES                       a group name may be given twice, as in RE2 ($name is
 *                                        the first such group, as Go's Expand takes it).
 * Error offsets are therefore offsets into the user's regex. PS_REGEX_SEARCH drops the anchors and
 * PCRE2_DOTALL: Go's regexp.MatchString, a match anywhere, '.' not matching "\n" (pprof's filters).
 *
 * RE2 versus PCRE2, the differences we know of:
 *  - PCRE2 accepts more: back-references by name (\k<n>), lookahead/lookbehind, atomic groups,
 *    possessive quantifiers, recursion (?R), conditionals, backtracking verbs (*SKIP) (*ACCEPT),
 *    callouts (?C) (ignored: no callout function is set) and leading (*…) options (a
 *    (*LIMIT_MATCH=n) can only lower our limits). Such regexes are errors in Prometheus.
 *  - RE2 guarantees linear time; PCRE2 backtracks, so a regex like (a+)+$ can take exponential
 *    time. The match context caps that (limits in regex.h); a match that hits a limit is an
 *    error: the selector matchers report it (parser/matcher.c), relabeling counts it as no match.
 *  - \w \d \s \b are ASCII in both (no PCRE2_UCP); (?i) folds Unicode case in both.
 *  - RE2 treats each byte of invalid UTF-8 in the subject as U+FFFD; PCRE2 refuses such a subject
 *    (a match error, so no match) unless PS_REGEX_INVALID_UTF is given.
 *  - Syntax RE2 has and PCRE2 lacks or reads differently: \pN one-letter classes and \p{Greek} work
 *    in both; \z in both; \Z is "end or before final newline" in PCRE2 and an error in RE2;
 *    \C is refused; [[:word:]] works in both; (?P<name>…) works in both; (?U) works in both.
 *  - Repetition counts above 1000 are an error in RE2 and allowed (to 65535) in PCRE2.
 *  - RE2 reads [[.a.]] [[=a=]] (a class of '[' '.' 'a', then ']') and a class opening with ':' '.'
 *    '=' ([:alpha:] outside a class) as plain classes; PCRE2 refuses them as POSIX collating
 *    elements or a named class out of place, so such a pattern is compiled again with those
 *    characters escaped (posix_brackets()).
 *  - RE2 repeats assertions (^* \b+) and applies a repetition after (?i) to what precedes the flags;
 *    PCRE2 refuses both, so such a pattern is compiled again rewritten (repeatable()).
 * ps_regex_check_re2 refuses, with Go's words, most of what RE2 refuses and PCRE2 takes; PromQL's
 * matchers run it before compiling (the selector language and relabeling do not).
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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

_Static_assert(sizeof(PCRE2_SIZE) == sizeof(size_t) && PCRE2_UNSET == PS_REGEX_UNSET, "PCRE2_SIZE is size_t");

#define BASE_OPTIONS                                                                                                   \
    (PCRE2_UTF | PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL | PCRE2_DOLLAR_ENDONLY | PCRE2_NEVER_BACKSLASH_C |  \
     PCRE2_DUPNAMES)

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

/* The length of a repetition operator at p[i] ("*", "+?", "{2,3}"), 0 if there is none. */
static size_t quantifier_len(const char *p, size_t n, size_t i)
{
    size_t j = i;
    if (i >= n)
        return 0;
    if (p[i] == '*' || p[i] == '+' || p[i] == '?') {
        j = i + 1;
    } else if (p[i] == '{') {
        j = i + 1;
        if (j >= n || p[j] < '0' || p[j] > '9')
            return 0;
        while (j < n && ((p[j] >= '0' && p[j] <= '9') || p[j] == ','))
            j++;
        if (j >= n || p[j] != '}')
            return 0;
        j++;
    } else {
        return 0;
    }
    if (j < n && (p[j] == '?' || p[j] == '+'))
        j++;
    return j - i;
}

/* RE2 repeats an assertion (^*, \b+) and lets a repetition after (?i) apply to what precedes it
 * (a(?i)+ is a+ then (?i)); PCRE2 calls both "quantifier does not follow a repeatable item". The
 * same pattern written as PCRE2 takes it: (?:^)*, a+(?i). NULL when there is nothing to change. */
static char *repeatable(const char *p, size_t n, size_t *outn)
{
    char *o = malloc(3 * n + 8);
    size_t k = 0, i = 0;
    bool changed = false;

    while (i < n) {
        size_t item = i, q;
        bool assertion = false, flags = false;
        if (p[i] == '\\' && i + 1 < n) {
            if (p[i + 1] == 'Q') {
                const char *e = memmem(p + i + 2, n - i - 2, "\\E", 2);
                i = e != NULL ? (size_t)(e - p) + 2 : n;
            } else {
                assertion = p[i + 1] != '\0' && strchr("bBAzZG", p[i + 1]) != NULL;
                i += 2;
            }
        } else if (p[i] == '[') {
            size_t j = i + 1;
            if (j < n && p[j] == '^')
                j++;
            if (j < n && p[j] == ']')
                j++;
            while (j < n && p[j] != ']')
                j += p[j] == '\\' ? 2 : p[j] == '[' && j + 1 < n && p[j + 1] == ':' ? 2 : 1;
            i = j < n ? j + 1 : n;
        } else if (p[i] == '(' && i + 1 < n && p[i + 1] == '?') {
            size_t j = i + 2;
            while (j < n && strchr("imsUx-", p[j]) != NULL && p[j] != '\0')
                j++;
            flags = j < n && p[j] == ')';
            i = flags ? j + 1 : i + 1;
        } else {
            assertion = p[i] == '^' || p[i] == '$';
            i++;
        }
        if ((assertion || flags) && (q = quantifier_len(p, n, i)) > 0) {
            if (assertion) {
                memcpy(o + k, "(?:", 3);
                k += 3;
                memcpy(o + k, p + item, i - item);
                k += i - item;
                o[k++] = ')';
                memcpy(o + k, p + i, q);
                k += q;
            } else {
                memcpy(o + k, p + i, q);
                k += q;
                memcpy(o + k, p + item, i - item);
                k += i - item;
            }
            i += q;
            changed = true;
            continue;
        }
        memcpy(o + k, p + item, i - item);
        k += i - item;
    }
    if (!changed) {
        free(o);
        return NULL;
    }
    o[k] = '\0';
    *outn = k;
    return o;
}

/* RE2 reads [[.a.]] and [[=a=]] as a class of '[', '.' (or '='), 'a' followed by ']', and a class
 * that opens with ':', '.' or '=' ([:alpha:] at the top, [.a.]) as a class of those characters;
 * PCRE2 takes them for POSIX collating elements or a named class outside a class and refuses them.
 * The same pattern for PCRE2: the '[' inside a class escaped (\[.a.]), the first character of a
 * class escaped ([\:alpha:]). NULL when there is nothing to change. */
static char *posix_brackets(const char *p, size_t n, size_t *outn)
{
    char *o = malloc(2 * n + 8);
    if (o == NULL)
        abort(); /* out of memory: as ps_xmalloc */
    size_t k = 0, i = 0;
    bool changed = false;

    while (i < n) {
        if (p[i] == '\\' && i + 1 < n && p[i + 1] == 'Q') {
            const char *e = memmem(p + i + 2, n - i - 2, "\\E", 2);
            size_t j = e != NULL ? (size_t)(e - p) + 2 : n;
            memcpy(o + k, p + i, j - i);
            k += j - i;
            i = j;
        } else if (p[i] == '\\') {
            size_t j = i + 2 < n ? i + 2 : n;
            memcpy(o + k, p + i, j - i);
            k += j - i;
            i = j;
        } else if (p[i] == '[') {
            o[k++] = p[i++];
            if (i < n && (p[i] == ':' || p[i] == '.' || p[i] == '=')) {
                o[k++] = '\\';
                changed = true;
            }
            if (i < n && p[i] == '^')
                o[k++] = p[i++];
            if (i < n && p[i] == ']')
                o[k++] = p[i++];
            while (i < n && p[i] != ']') {
                if (p[i] == '\\' && i + 1 < n) {
                    o[k++] = p[i++];
                    o[k++] = p[i++];
                } else if (p[i] == '[' && i + 1 < n && p[i + 1] == ':') {
                    const char *e = memmem(p + i + 2, n - i - 2, ":]", 2); /* [:name:] */
                    size_t j = e != NULL ? (size_t)(e - p) + 2 : i + 2;
                    memcpy(o + k, p + i, j - i);
                    k += j - i;
                    i = j;
                } else {
                    if (p[i] == '[' && i + 1 < n && (p[i + 1] == '.' || p[i + 1] == '=')) {
                        o[k++] = '\\';
                        changed = true;
                    }
                    o[k++] = p[i++];
                }
            }
            if (i < n)
                o[k++] = p[i++];
        } else {
            o[k++] = p[i++];
        }
    }
    if (!changed) {
        free(o);
        return NULL;
    }
    o[k] = '\0';
    *outn = k;
    return o;
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
    if (flags & PS_REGEX_SEARCH)
        options &= ~(uint32_t)(PCRE2_ANCHORED | PCRE2_ENDANCHORED | PCRE2_DOTALL);
    pthread_once(&match_ctx_once, init_match_ctx);
    pcre2_code *re = pcre2_compile((PCRE2_SPTR)(pat != NULL ? pat : ""), n, options, &code, &off, NULL);
    /* on a failure after rewriting, the first error, about the user's text, stands */
    int code2 = code;
    size_t n2 = n;
    char *p2 = NULL, *p3;
    if (re == NULL && pat != NULL &&
        (code == PCRE2_ERROR_POSIX_NO_SUPPORT_COLLATING || code == PCRE2_ERROR_POSIX_CLASS_NOT_IN_CLASS) &&
        (p2 = posix_brackets(pat, n, &n2)) != NULL) {
        PCRE2_SIZE off2;
        re = pcre2_compile((PCRE2_SPTR)p2, n2, options, &code2, &off2, NULL);
    }
    if (re == NULL && code2 == PCRE2_ERROR_QUANTIFIER_INVALID && pat != NULL) {
        for (int pass = 0; pass < 3 && re == NULL && code2 == PCRE2_ERROR_QUANTIFIER_INVALID; pass++) {
            PCRE2_SIZE off2;
            if ((p3 = repeatable(p2 != NULL ? p2 : pat, n2, &n2)) == NULL)
                break; /* "$(?i)*" takes two passes: $*(?i), then (?:$)*(?i) */
            free(p2);
            p2 = p3;
            re = pcre2_compile((PCRE2_SPTR)p2, n2, options, &code2, &off2, NULL);
        }
    }
    free(p2);
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
    if (g == PCRE2_ERROR_NOUNIQUESUBSTRING) { /* a name given twice: the first group, as Go's */
        PCRE2_SPTR first, last;
        if (pcre2_substring_nametable_scan((const pcre2_code *)re, (PCRE2_SPTR)name, &first, &last) > 0)
            g = first[0] << 8 | first[1];
    }
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

/* Each thread's own context for matches under a lower match limit (a context is written by
 * pcre2_set_match_limit, so it cannot be shared); made on first use, freed when the thread ends. */
static _Thread_local pcre2_match_context *limit_ctx;
static pthread_key_t limit_key;
static pthread_once_t limit_key_once = PTHREAD_ONCE_INIT;

static void free_limit_ctx(void *ctx)
{
    pcre2_match_context_free(ctx);
}

static void init_limit_key(void)
{
    if (pthread_key_create(&limit_key, free_limit_ctx) != 0)
        abort();
}

static int match_in(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md, pcre2_match_context *ctx)
{
    const pcre2_code *code = (const pcre2_code *)re;
    pcre2_match_data *data = (pcre2_match_data *)md;
    PCRE2_SPTR subject = (PCRE2_SPTR)(s != NULL ? s : "");
    int rc = pcre2_match(code, subject, n, 0, 0, data, ctx);
    if (rc == PCRE2_ERROR_JIT_STACKLIMIT)
        rc = pcre2_match(code, subject, n, 0, PCRE2_NO_JIT, data, ctx);
    if (rc == 0) /* a match whose groups did not all fit: the pairs that did are set */
        return (int)pcre2_get_ovector_count(data);
    if (rc > 0)
        return rc;
    return rc == PCRE2_ERROR_NOMATCH ? 0 : rc;
}

int ps_regex_match(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md)
{
    pthread_once(&match_ctx_once, init_match_ctx);
    return match_in(re, s, n, md, match_ctx);
}

int ps_regex_match_limit(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md, uint32_t match_limit)
{
    if (match_limit == 0 || match_limit > PS_REGEX_MATCH_LIMIT)
        match_limit = PS_REGEX_MATCH_LIMIT;
    if (limit_ctx == NULL) {
        if ((limit_ctx = pcre2_match_context_create(NULL)) == NULL)
            abort(); /* out of memory: as ps_xmalloc */
        pthread_once(&limit_key_once, init_limit_key);
        pthread_setspecific(limit_key, limit_ctx);
        pcre2_set_depth_limit(limit_ctx, PS_REGEX_DEPTH_LIMIT);
        pcre2_set_heap_limit(limit_ctx, PS_REGEX_HEAP_LIMIT_KIB);
    }
    pcre2_set_match_limit(limit_ctx, match_limit);
    return match_in(re, s, n, md, limit_ctx);
}

const char *ps_regex_limit_hit(int rc)
{
    switch (rc) {
    case PCRE2_ERROR_MATCHLIMIT: return "match limit";
    case PCRE2_ERROR_DEPTHLIMIT: return "depth limit";
    case PCRE2_ERROR_HEAPLIMIT: return "heap limit";
    case PCRE2_ERROR_JIT_STACKLIMIT: return "JIT stack limit";
    case PCRE2_ERROR_NOMEMORY: return "memory limit";
    default: return NULL;
    }
}

const size_t *ps_regex_ovector(const ps_regex_match_t *md)
{
    return pcre2_get_ovector_pointer((pcre2_match_data *)md);
}

/* ---- RE2's syntax (what Go's regexp/syntax refuses and PCRE2 would take) ------------------- */

typedef struct re2chk {
    const char *p;
    size_t n;
    ps_err_t *err;
} re2chk_t;

/* Go's message: "<what>: `<expr>`". */
static int re2_fail(re2chk_t *c, const char *what, const char *expr, size_t len, const char *tail)
{
    return ps_err_set(c->err, PS_EINVAL, "%s: `%.*s%s`", what, (int)(len > 400 ? 400 : len), expr, tail);
}

/* The pasted form ^(?:re)$ that Prometheus compiles: errors about parentheses quote it. */
static int re2_fail_pasted(re2chk_t *c, const char *what)
{
    return ps_err_set(c->err, PS_EINVAL, "%s: `^(?:%.*s)$`", what, (int)(c->n > 400 ? 400 : c->n), c->p);
}

static size_t utf8_char_len(const char *p, size_t n)
{
    unsigned char b = (unsigned char)p[0];
    size_t l = b < 0x80 ? 1 : (b & 0xe0) == 0xc0 ? 2 : (b & 0xf0) == 0xe0 ? 3 : (b & 0xf8) == 0xf0 ? 4 : 1;
    return l <= n ? l : 1;
}

/* An escape at p[i] == '\\': the letters and digits RE2 knows (inside a class fewer: no \b \B \A
 * \z, and as the end of a range no \d \s \w \p either). Returns the length to skip, 0 after an
 * error. \Q...\E is handled by the caller. */
static size_t re2_escape(re2chk_t *c, const char *p, size_t n, size_t i, int where)
{
    if (i + 1 >= n)
        return 1; /* a trailing backslash: the caller judges the rest */
    unsigned char d = (unsigned char)p[i + 1];
    if (d >= 0x80) {
        re2_fail(c, "invalid escape sequence", p + i, 1 + utf8_char_len(p + i + 1, n - i - 1), "");
        return 0;
    }
    bool alnum = (d >= '0' && d <= '9') || ((d | 0x20) >= 'a' && (d | 0x20) <= 'z');
    if (!alnum)
        return 2; /* punctuation stands for itself */
    static const char *const known[] = {"aftnrvx0pPdDsSwWbBAz", "aftnrvx0pPdDsSwW", "aftnrvx0"};
    if (strchr(known[where], d) != NULL) {
        if ((d == 'p' || d == 'P') && i + 2 < n && p[i + 2] == '{') {
            const char *e = memchr(p + i + 2, '}', n - i - 2);
            return e != NULL ? (size_t)(e - p) + 1 - i : 2;
        }
        if (d == 'x' && i + 2 < n && p[i + 2] == '{') {
            const char *e = memchr(p + i + 2, '}', n - i - 2);
            return e != NULL ? (size_t)(e - p) + 1 - i : 2;
        }
        return 2;
    }
    if (d >= '1' && d <= '7' && i + 2 < n && p[i + 2] >= '0' && p[i + 2] <= '7')
        return 2; /* an octal escape, not a back-reference */
    re2_fail(c, "invalid escape sequence", p + i, 2, "");
    return 0;
}

/* The character a class item at p[i] stands for, for range checks; -1 when it is not one
 * character (an escape such as \x41 is taken as unknown). *len is its length. */
static long re2_class_char(const char *p, size_t n, size_t i, size_t *len)
{
    if (p[i] == '\\') {
        *len = 2;
        if (i + 1 < n && !(((unsigned char)p[i + 1] | 0x20) >= 'a' && ((unsigned char)p[i + 1] | 0x20) <= 'z') &&
            !(p[i + 1] >= '0' && p[i + 1] <= '9') && (unsigned char)p[i + 1] < 0x80)
            return (unsigned char)p[i + 1];
        return -1;
    }
    *len = utf8_char_len(p + i, n - i);
    if (*len == 1)
        return (unsigned char)p[i];
    const unsigned char *u = (const unsigned char *)p + i;
    if (*len == 2)
        return (long)(u[0] & 0x1f) << 6 | (u[1] & 0x3f);
    if (*len == 3)
        return (long)(u[0] & 0x0f) << 12 | (long)(u[1] & 0x3f) << 6 | (u[2] & 0x3f);
    return (long)(u[0] & 0x07) << 18 | (long)(u[1] & 0x3f) << 12 | (long)(u[2] & 0x3f) << 6 | (u[3] & 0x3f);
}

/* A class from pat[i] == '['; returns the index after its ']', or 0 after an error. A class that
 * does not close in re runs on into the ")$" of ^(?:re)$, as in Prometheus. */
static size_t re2_class(re2chk_t *c, size_t i0)
{
    static const char *const names[] = {"alnum", "alpha", "ascii", "blank", "cntrl", "digit", "graph",
                                        "lower", "print", "punct", "space", "upper", "word",  "xdigit"};
    size_t n = c->n - i0 + 2, i = 1;
    char *p = malloc(n + 1);
    size_t ret = 0;
    bool first = true;

    memcpy(p, c->p + i0, n - 2);
    memcpy(p + n - 2, ")$", 3);
    if (i < n && p[i] == '^')
        i++;
    while (i < n && (p[i] != ']' || first)) {
        first = false;
        if (p[i] == '[' && i + 2 < n && p[i + 1] == ':') {
            const char *end = memmem(p + i + 2, n - i - 2, ":]", 2);
            if (end != NULL) {
                size_t a = i + 2, b = (size_t)(end - p);
                if (a < b && p[a] == '^')
                    a++;
                bool known = false;
                for (size_t k = 0; k < sizeof(names) / sizeof(names[0]); k++)
                    known |= strlen(names[k]) == b - a && memcmp(names[k], p + a, b - a) == 0;
                if (!known) {
                    re2_fail(c, "invalid character class range", p + i, b + 2 - i, "");
                    goto Exit;
                }
                i = b + 2;
                continue;
            }
        }
        size_t item = i, len;
        if (p[i] == '\\') {
            if (re2_escape(c, p, n, i, 1) == 0)
                goto Exit;
            if (i + 1 < n && p[i + 1] != '\0' && strchr("dDsSwWpP", p[i + 1]) != NULL) { /* no range */
                i += re2_escape(c, p, n, i, 1);
                continue;
            }
        }
        long lo = re2_class_char(p, n, i, &len);
        i += len;
        if (i + 1 < n && p[i] == '-' && p[i + 1] != ']') {
            i++;
            if (p[i] == '\\' && re2_escape(c, p, n, i, 2) == 0)
                goto Exit;
            long hi = re2_class_char(p, n, i, &len);
            i += len;
            if (lo >= 0 && hi >= 0 && hi < lo) {
                re2_fail(c, "invalid character class range", p + item, i - item, "");
                goto Exit;
            }
        }
    }
    if (i >= n) {
        re2_fail(c, "missing closing ]", p, n, "");
        goto Exit;
    }
    if (i >= n - 2) { /* closed by nothing of re: cannot happen, ")$" has no "]" */
        re2_fail(c, "missing closing ]", p, n, "");
        goto Exit;
    }
    ret = i0 + i + 1;
Exit:
    free(p);
    return ret;
}

/* {n}, {n,}, {n,m} at p[i]: the length, or 0 when it is not a repetition (then "{" is a literal). */
static size_t re2_repeat(const re2chk_t *c, size_t i, long *lo, long *hi)
{
    size_t j = i + 1;
    long a = 0, b;
    if (j >= c->n || c->p[j] < '0' || c->p[j] > '9')
        return 0;
    for (; j < c->n && c->p[j] >= '0' && c->p[j] <= '9'; j++)
        if (a <= 100000) /* past RE2's 1000 anyway: no overflow */
            a = a * 10 + (c->p[j] - '0');
    b = a;
    if (j < c->n && c->p[j] == ',') {
        j++;
        b = -1;
        if (j < c->n && c->p[j] >= '0' && c->p[j] <= '9') {
            b = 0;
            for (; j < c->n && c->p[j] >= '0' && c->p[j] <= '9'; j++)
                if (b <= 100000)
                    b = b * 10 + (c->p[j] - '0');
        }
    }
    if (j >= c->n || c->p[j] != '}')
        return 0;
    *lo = a;
    *hi = b;
    return j + 1 - i;
}

int ps_regex_check_re2(const char *pat, size_t n, ps_err_t *err)
{
    re2chk_t c = {pat, n, err};
    size_t i = 0, rep = SIZE_MAX; /* rep: where the repetition operators just before i began */
    bool operand = false;         /* something a repetition can apply to precedes i */
    bool unbalanced = false;      /* a ")" closed more than re opened */
    int depth = 0;

    while (i < n) {
        char ch = pat[i];
        if (ch == '*' || ch == '+' || ch == '?' || ch == '{') {
            size_t len = 1;
            long lo = 0, hi = 0;
            if (ch == '{') {
                len = re2_repeat(&c, i, &lo, &hi);
                if (len == 0) { /* a literal "{" */
                    operand = true;
                    rep = SIZE_MAX;
                    i++;
                    continue;
                }
            }
            size_t start = i;
            i += len;
            if (i < n && pat[i] == '?')
                i++; /* lazy */
            if (rep != SIZE_MAX)
                return re2_fail(&c, "invalid nested repetition operator", pat + rep, i - rep, "");
            if (!operand)
                return re2_fail(&c, "missing argument to repetition operator", pat + start, i - start, "");
            if (ch == '{' && (lo > 1000 || hi > 1000 || (hi >= 0 && hi < lo)))
                return re2_fail(&c, "invalid repeat count", pat + start, len, "");
            rep = start;
            continue;
        }
        rep = SIZE_MAX;
        switch (ch) {
        case '\\':
            if (i + 1 < n && pat[i + 1] == 'Q') {
                const char *e = memmem(pat + i + 2, n - i - 2, "\\E", 2);
                if (e == NULL) { /* quotes the rest, and the ")$" of ^(?:re)$ too */
                    if (depth + 1 > 0)
                        return re2_fail_pasted(&c, "missing closing )");
                    /* depth -1: ^(?:re)$ compiles, re alone has a ")" too many */
                    return ps_err_set(err, PS_EINVAL, "unexpected ): `%.*s`", (int)(n > 400 ? 400 : n), pat);
                }
                operand = operand || (size_t)(e - pat) > i + 2; /* \Q\E quotes nothing */
                i = (size_t)(e - pat) + 2;
                continue;
            }
            if (i + 1 >= n) { /* a trailing backslash escapes the ")" of ^(?:re)$ */
                if (depth + 1 > 0)
                    return re2_fail_pasted(&c, "missing closing )");
                return ps_err_set(err, PS_EINVAL, "unexpected ): `%.*s`", (int)(n > 400 ? 400 : n), pat);
            }
            {
                size_t k = re2_escape(&c, pat, n, i, 0);
                if (k == 0)
                    return PS_EINVAL;
                i += k;
            }
            operand = true;
            continue;
        case '[':
            if ((i = re2_class(&c, i)) == 0)
                return PS_EINVAL;
            operand = true;
            continue;
        case '(':
            if (i + 1 < n && pat[i + 1] == '?') {
                size_t j = i + 2;
                if (j + 1 < n && pat[j] == 'P' && pat[j + 1] == '<') {
                    i = j + 2;
                    depth++;
                    operand = false;
                    continue;
                }
                while (j < n && strchr("imsU-", pat[j]) != NULL && pat[j] != '\0')
                    j++;
                if (j < n && (pat[j] == ')' || pat[j] == ':') && !(j > i + 2 && pat[j - 1] == '-')) {
                    if (pat[j] == ':') {
                        depth++;
                        operand = false;
                    } /* (?i) alone leaves what a repetition applies to as it was */
                    i = j + 1;
                    continue;
                }
                if (j >= n)
                    return re2_fail_pasted(&c, "missing closing )");
                size_t end = j + utf8_char_len(pat + j, n - j);
                return re2_fail(&c, "invalid or unsupported Perl syntax", pat + i, end - i, "");
            }
            depth++;
            operand = false;
            i++;
            continue;
        case ')':
            /* Prometheus compiles ^(?:re)$, where one ")" too many still closes "(?:", then
             * parses re alone: "a)|(b" is an error of re, "a))" one of ^(?:a)))$ */
            if (--depth < -1)
                return re2_fail_pasted(&c, "unexpected )");
            if (depth < 0)
                unbalanced = true;
            operand = true;
            i++;
            continue;
        case '|':
            operand = false;
            i++;
            continue;
        default:
            operand = true;
            i += utf8_char_len(pat + i, n - i);
            continue;
        }
    }
    if (depth > 0)
        return re2_fail_pasted(&c, "missing closing )");
    if (depth < 0)
        return re2_fail_pasted(&c, "unexpected )");
    if (unbalanced)
        return ps_err_set(err, PS_EINVAL, "unexpected ): `%.*s`", (int)(n > 400 ? 400 : n), pat);
    return 0;
}
