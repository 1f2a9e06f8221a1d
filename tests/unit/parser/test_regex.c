/*
 * test_regex.c - parser/regex.h: anchoring as ^(?s:re)$, '$' only at the end, captures with and
 * without PS_REGEX_CAPTURE, invalid UTF-8 subjects, compile errors with their offset, and limits.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "parser/regex.h"

static ps_regex_t *compile(const char *pat, unsigned flags)
{
    ps_regex_t *re = NULL;
    ps_err_t err;
    if (ps_regex_compile(pat, strlen(pat), flags, &re, &err) != 0)
        fail_msg("%s: %s", pat, err.msg);
    assert_non_null(re);
    return re;
}

static int match(const char *pat, unsigned flags, const char *s, size_t n)
{
    ps_regex_t *re = compile(pat, flags);
    ps_regex_match_t *md = ps_regex_match_new(1 + ps_regex_groups(re));
    int rc = ps_regex_match(re, s, n, md);
    ps_regex_match_free(md);
    ps_regex_free(re);
    return rc;
}

#define M(pat, s) match(pat, 0, s, strlen(s))

static void test_anchoring(void **state)
{
    assert_int_equal(M("api", "api"), 1);
    assert_int_equal(M("api", "xapi"), 0);
    assert_int_equal(M("api", "apix"), 0);
    assert_int_equal(M("a|b", "ab"), 0); /* the whole alternation is anchored */
    assert_int_equal(M("a|b", "b"), 1);
    assert_int_equal(M("a.c", "a\nc"), 1); /* (?s: */
    assert_int_equal(M("a$", "a\n"), 0);   /* '$' is \z */
    assert_int_equal(M("", ""), 1);
    assert_int_equal(match("", 0, NULL, 0), 1);
    assert_int_equal(M("(?i)\xc3\xa9", "\xc3\x89"), 1); /* UTF-8 and Unicode case folding */
    assert_int_equal(M(".", "\xc3\xa9"), 1);              /* one character, two bytes */
}

static void test_captures(void **state)
{
    ps_err_t err;
    ps_regex_t *re = compile("(a+)-(?P<rest>.*)", PS_REGEX_CAPTURE);
    assert_int_equal(ps_regex_groups(re), 2);
    assert_int_equal(ps_regex_group_number(re, "rest"), 2);
    assert_int_equal(ps_regex_group_number(re, "none"), -1);
    ps_regex_match_t *md = ps_regex_match_new(3);
    assert_int_equal(ps_regex_match(re, "aa-xyz", 6, md), 3);
    const size_t *ov = ps_regex_ovector(md);
    assert_int_equal(ov[0], 0);
    assert_int_equal(ov[1], 6);
    assert_int_equal(ov[2], 0);
    assert_int_equal(ov[3], 2);
    assert_int_equal(ov[4], 3);
    assert_int_equal(ov[5], 6);
    ps_regex_match_free(md);
    /* groups that do not fit: still a match, with the pairs that did */
    md = ps_regex_match_new(1);
    assert_int_equal(ps_regex_match(re, "aa-xyz", 6, md), 1);
    ps_regex_match_free(md);
    ps_regex_free(re);
    re = compile("(a)?b", PS_REGEX_CAPTURE);
    md = ps_regex_match_new(2);
    assert_int_equal(ps_regex_match(re, "b", 1, md), 1); /* group 1 did not take part */
    ps_regex_match_free(md);
    ps_regex_free(re);

    /* without PS_REGEX_CAPTURE (...) does not capture and \1 is an error, as in RE2 */
    re = compile("(a+)-(b)", 0);
    assert_int_equal(ps_regex_groups(re), 0);
    ps_regex_free(re);
    re = (ps_regex_t *)1;
    assert_int_equal(ps_regex_compile("(a)\\1", 5, 0, &re, &err), PS_EINVAL);
    assert_null(re);
    assert_int_equal(match("(a)\\1", PS_REGEX_CAPTURE, "aa", 2), 2);
}

static void test_invalid_utf8_subject(void **state)
{
    assert_true(match(".*", 0, "a\xff", 2) < 0); /* an error: the callers count it as no match */
    assert_int_equal(match(".*", PS_REGEX_INVALID_UTF, "a\xff", 2), 0);
    assert_int_equal(match("a.*", PS_REGEX_INVALID_UTF, "ab", 2), 1);
}

static void test_compile_errors(void **state)
{
    static const struct {
        const char *pat, *msg;
        int32_t pos;
    } cases[] = {
        {"(", "missing closing parenthesis", 1},
        {"a)|(b", "unmatched closing parenthesis", 1}, /* cannot break out of ^(?s:...)$ */
        {"ab[", "missing terminating ] for character class", 3},
        {"a\\C", "using \\C is disabled by the application", 3},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_regex_t *re = NULL;
        ps_err_t err;
        assert_int_equal(ps_regex_compile(cases[i].pat, strlen(cases[i].pat), PS_REGEX_CAPTURE, &re, &err), PS_EINVAL);
        assert_null(re);
        if (strcmp(err.msg, cases[i].msg) != 0 || err.pos != cases[i].pos)
            fail_msg("%s: got %d \"%s\" want %d \"%s\"", cases[i].pat, (int)err.pos, err.msg, (int)cases[i].pos,
                     cases[i].msg);
    }
    ps_regex_t *re = (ps_regex_t *)1;
    assert_int_equal(ps_regex_compile("(", 1, 0, &re, NULL), PS_EINVAL);
    assert_null(re);
    ps_regex_free(NULL);
    ps_regex_match_free(NULL);
}

/* Exponential backtracking stops at the limits: an error, at once. */
/* What Go's RE2 refuses and PCRE2 takes, in Go's words (the answers of Prometheus 2.42 for
 * x{a=~"<re>"}, whose message is "error parsing regexp: " and these). */
static void test_re2_syntax(void **state)
{
    (void)state;
    static const struct {
        const char *re, *msg;
    } bad[] = {
        {"a*+", "invalid nested repetition operator: `*+`"},
        {"a*?+", "invalid nested repetition operator: `*?+`"},
        {"x{2}{3}", "invalid nested repetition operator: `{2}{3}`"},
        {"a{1001}", "invalid repeat count: `{1001}`"},
        {"a{3,2}", "invalid repeat count: `{3,2}`"},
        {"a{2888888801}", "invalid repeat count: `{2888888801}`"}, /* found by fuzz_promql: no endless loop */
        {"(?=a)", "invalid or unsupported Perl syntax: `(?=`"},
        {"(?<=a)", "invalid or unsupported Perl syntax: `(?<`"},
        {"(?ix)a", "invalid or unsupported Perl syntax: `(?ix`"},
        {"(?i-)a", "invalid or unsupported Perl syntax: `(?i-)`"},
        {"(?P=n)", "invalid or unsupported Perl syntax: `(?P`"},
        {"\\Z", "invalid escape sequence: `\\Z`"},
        {"\\1", "invalid escape sequence: `\\1`"},
        {"[\\b]", "invalid escape sequence: `\\b`"},
        {"[a-\\d]", "invalid escape sequence: `\\d`"},
        {"[[:foo:]]", "invalid character class range: `[:foo:]`"},
        {"[z-a]", "invalid character class range: `z-a`"},
        {"*a", "missing argument to repetition operator: `*`"},
        {"(?i)*", "missing argument to repetition operator: `*`"},
        {"\\Q\\E+", "missing argument to repetition operator: `+`"},
        {"(a", "missing closing ): `^(?:(a)$`"},
        {"\\Qa*", "missing closing ): `^(?:\\Qa*)$`"},
        {"\\", "missing closing ): `^(?:\\)$`"},
        {"a))", "unexpected ): `^(?:a)))$`"},
        {"a)|(b", "unexpected ): `a)|(b`"},
        {"[a", "missing closing ]: `[a)$`"},
    };
    static const char *const good[] = {
        "a{1000}", "a{,3}", "a{2", "a{2888888801", "(?P<n>a)", "(?i)a", "(?-s:a)", "(?U)a+", "(?)a", "\\12", "\\0", "\\Qa*\\E+",
        "[]a]", "[^]a]", "[[:^alpha:]]", "\\pL\\p{Greek}", "\\x{41}\\x41", "a+?", "a{2,3}?", "\\.\\$", "a\\b",
        "[a*+]", "\xc3\xa9+", "a(?i)+",
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        ps_err_t err;
        if (ps_regex_check_re2(bad[i].re, strlen(bad[i].re), &err) != PS_EINVAL)
            fail_msg("%s: accepted", bad[i].re);
        if (strcmp(err.msg, bad[i].msg) != 0)
            fail_msg("%s:\n got  %s\n want %s", bad[i].re, err.msg, bad[i].msg);
    }
    for (size_t i = 0; i < sizeof(good) / sizeof(good[0]); i++) {
        ps_err_t err;
        if (ps_regex_check_re2(good[i], strlen(good[i]), &err) != 0)
            fail_msg("%s: %s", good[i], err.msg);
    }
}

/* What RE2 takes and PCRE2 as such would not: repeated assertions, a repetition after (?i),
 * a group name given twice. */
static void test_re2_accepts(void **state)
{
    (void)state;
    assert_int_equal(M("^*a$+", "a"), 1);
    assert_int_equal(M("a\\b+", "a"), 1);
    assert_int_equal(M("a(?i)+b", "aaB"), 1); /* a+ then (?i)b, as Go reads it */
    assert_int_equal(M("a(?i)+b", "AaB"), 0);
    assert_int_equal(M("x$(?i)*", "x"), 1);
    assert_int_equal(M("[a-c]\\b{1,3}-", "b-"), 1);
    ps_regex_t *re = compile("(?P<n>a)x|(?P<n>b)y", PS_REGEX_CAPTURE);
    assert_int_equal(ps_regex_group_number(re, "n"), 1); /* the first of the name, as Go's Expand */
    ps_regex_free(re);
}

/* POSIX brackets RE2 reads as plain classes and PCRE2 refuses: [[.a.]] is a class of '[' '.' 'a'
 * then ']'; [:alpha:] outside a class is a class of ':' 'a' 'l' 'p' 'h' */
static void test_re2_posix_brackets(void **state)
{
    (void)state;
    assert_int_equal(M("[[.a.]]", "a]"), 1);
    assert_int_equal(M("[[.a.]]", "[]"), 1);
    assert_int_equal(M("[[.a.]]", ".]"), 1);
    assert_int_equal(M("[[.a.]]", "a"), 0);
    assert_int_equal(M("[[=a=]]", "=]"), 1);
    assert_int_equal(M("[[=a=]]", "b]"), 0);
    assert_int_equal(M("[[.a.]", "."), 1);
    assert_int_equal(M("[:alpha:]", "h"), 1);
    assert_int_equal(M("[:alpha:]", "b"), 0);
    assert_int_equal(M("[.a.]+", ".a."), 1);
    assert_int_equal(M("[=a=]", "="), 1);
    assert_int_equal(M("x[^[.a.]]", "xb]"), 1);
    assert_int_equal(M("x[^[.a.]]", "xa]"), 0);
    assert_int_equal(M("[[:alpha:][.a.]]", "q]"), 1); /* [:alpha:] a named class inside: one class, then ']' */
    assert_int_equal(M("[[:alpha:][.a.]]", "q"), 0);
    assert_int_equal(M("\\[[.a.]]", "[a]"), 1); /* an escaped [ opens no class */
    assert_int_equal(M("(a)[[.b.]]*", "a]"), 0);
    assert_int_equal(M("\\Q[.a.]\\E", "[.a.]"), 1); /* quoted: nothing to escape */
}

static void test_limits(void **state)
{
    char subject[64];
    memset(subject, 'a', sizeof(subject) - 1);
    subject[sizeof(subject) - 2] = 'b';
    subject[sizeof(subject) - 1] = '\0';
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (unsigned flags = 0; flags <= (PS_REGEX_CAPTURE | PS_REGEX_INVALID_UTF); flags++)
        assert_true(match("(a+)+c?(a|aa)+", flags, subject, strlen(subject)) < 0);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double dt = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (dt > 5.0)
        fail_msg("catastrophic regexes took %.2f s", dt);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_anchoring),
        cmocka_unit_test(test_captures),
        cmocka_unit_test(test_invalid_utf8_subject),
        cmocka_unit_test(test_compile_errors),
        cmocka_unit_test(test_re2_syntax),
        cmocka_unit_test(test_re2_accepts),
        cmocka_unit_test(test_re2_posix_brackets),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
