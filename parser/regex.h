/*
 * regex.h - the one regex engine of profstore: PCRE2 (8-bit, UTF), compiled fully anchored as
 * Prometheus' ^(?s:<re>)$, JIT-compiled where the library can, matched under limits so that no
 * regex can stall the server. Used by the selector matchers (matcher.c) and by relabeling
 * (src/config/relabel.c). regex.c says how PCRE2 differs from Go's RE2.
 *
 * Limits of every match: PS_REGEX_MATCH_LIMIT backtracking steps (or fewer: ps_regex_match_limit),
 * PS_REGEX_DEPTH_LIMIT nested backtracking, PS_REGEX_HEAP_LIMIT_KIB of heap. A match that hits one
 * is an error (< 0, ps_regex_limit_hit names it). The selector matchers (matcher.c) answer it as
 * an error of the query, never as "no match"; relabeling (src/config/relabel.c) counts it as no
 * match, as Prometheus' relabeling cannot fail either. A JIT match that runs out of JIT stack is
 * run again by the interpreter (under the same limits).
 *
 * Thread safety: a compiled ps_regex_t is read-only and shared by any number of threads; a
 * ps_regex_match_t (the captures of one match) is used by one thread at a time.
 */
#ifndef PS_PARSER_REGEX_H
#define PS_PARSER_REGEX_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"

#define PS_REGEX_MATCH_LIMIT 1000000u
#define PS_REGEX_DEPTH_LIMIT 10000u
#define PS_REGEX_HEAP_LIMIT_KIB (16u * 1024u)

/** A compiled regex (a pcre2_code_8). */
typedef struct ps_regex ps_regex_t;
/** Room for the captures of one match (a pcre2_match_data_8). */
typedef struct ps_regex_match ps_regex_match_t;

enum {
    /** (...) captures, numbered as the user wrote them (relabeling's $1). Without it only named
     *  groups capture and a back-reference \1 is an error (RE2 has none). */
    PS_REGEX_CAPTURE = 1 << 0,
    /** Subjects may be invalid UTF-8: such bytes match nothing but do not fail the match
     *  (PCRE2_MATCH_INVALID_UTF). Without it an invalid subject is a match error. */
    PS_REGEX_INVALID_UTF = 1 << 1,
    /** Unanchored, as Go's regexp.MatchString: a match anywhere in the subject, '.' not matching
     *  "\n" (Go's default; (?s) says otherwise). go tool pprof's -focus/-ignore/-hide/-show_from. */
    PS_REGEX_SEARCH = 1 << 2,
};

/** An offset in ps_regex_ovector() of a group that took no part in the match. */
#define PS_REGEX_UNSET SIZE_MAX

/**
 * Compiles pat[0..n) fully anchored (the match starts at 0 and ends at the end of the subject),
 * '.' matching "\n", '$' only at the very end, UTF-8, no \C; flags as above. On an invalid regex
 * returns PS_EINVAL with err->msg PCRE2's message ("missing closing parenthesis") and err->pos the
 * offset in pat where it noticed; the caller words the message.
 */
int ps_regex_compile(const char *pat, size_t n, unsigned flags, ps_regex_t **out, ps_err_t *err);
/**
 * Checks pat[0..n) against what Go's RE2 parser (regexp/syntax) refuses and PCRE2 would take:
 * stacked repetitions (a*+, a**), repeat counts over 1000, (?=, (?<, (?>, (?x and other Perl
 * syntax, escapes RE2 lacks (\Z \k  \e \G ...), unknown [:classes:], a repetition without an
 * operand, and unbalanced parentheses, \Q without \E, a class left open, judged on Prometheus'
 * ^(?:re)$. 0, or PS_EINVAL with Go's words in err->msg ("invalid nested repetition operator:
 * `*+`"). What it lets through still has to compile.
 */
int ps_regex_check_re2(const char *pat, size_t n, ps_err_t *err);
/** Frees a regex. NULL is a no-op. */
void ps_regex_free(ps_regex_t *re);
/** Number of capturing groups (0 when there are none). */
uint32_t ps_regex_groups(const ps_regex_t *re);
/** Number of the group called name, or -1 if there is none. */
int ps_regex_group_number(const ps_regex_t *re, const char *name);

/** Match data with room for pairs (>= 1) offset pairs: the whole match and pairs - 1 groups.
 *  Aborts on out of memory, as ps_xmalloc. */
ps_regex_match_t *ps_regex_match_new(uint32_t pairs);
/** Frees match data. NULL is a no-op. */
void ps_regex_match_free(ps_regex_match_t *md);

/**
 * Matches s[0..n) (s may be NULL when n is 0). Returns > 0 on a match (the number of offset pairs
 * set in md; groups beyond md's room are not recorded), 0 on no match, and a negative PCRE2 error
 * code when the match failed (a limit, an invalid UTF-8 subject without PS_REGEX_INVALID_UTF).
 */
int ps_regex_match(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md);
/** As ps_regex_match under a match limit of match_limit steps (0 or more than
 *  PS_REGEX_MATCH_LIMIT: PS_REGEX_MATCH_LIMIT); the other limits as always. */
int ps_regex_match_limit(const ps_regex_t *re, const char *s, size_t n, ps_regex_match_t *md, uint32_t match_limit);
/** For a negative result of a match: the limit it hit ("match limit", "depth limit", "heap
 *  limit", ...), or NULL for other errors (an invalid UTF-8 subject). */
const char *ps_regex_limit_hit(int rc);
/** The offsets of the last match in md: pair i is [2i, 2i+1] (PS_REGEX_UNSET if the group did
 *  not take part). Valid until the next match with md. */
const size_t *ps_regex_ovector(const ps_regex_match_t *md);

#endif
