/*
 * selector.re - the re2c lexer of the selector language (see selector.h, selector_int.h).
 * The build runs `re2c -W --no-generation-date -o build/parser/selector.re.c parser/selector.re`.
 *
 * Tokens follow Prometheus' promql/parser/lex.go. Two modes:
 *  - statements: identifiers and metric names ([a-zA-Z_:][a-zA-Z0-9_:]*, a name with a ':' is a
 *    T_METRIC_IDENT), keywords (case-insensitive, as PromQL's), numbers (1, 1.5, .5, 5., 1e-3,
 *    0x1f, 0755, Inf, NaN in any case), durations (5m, 1h30m, 100ms), strings, operators,
 *    ( ) [ ] { , and @. Numbers and durations are scanned by hand as lex.go's scanNumber and
 *    acceptRemainingDuration do, so that the same texts are tokens (and errors: "0deadbeef" is
 *    'bad number or duration syntax: "0de"'). Between "[" and "]" the first token must be a
 *    duration (lexDuration), and a letter or ':' is a T_COLON, as in Prometheus 2.42;
 *  - inside braces (after "{" up to "}"): label names [a-zA-Z_][a-zA-Z0-9_]* (no colons and no
 *    keywords), strings, = != =~ !~ , and }.
 * Both skip spaces (' ', \t, \r, \n) and # comments up to the end of the line.
 *
 * Strings are recognised here (their extent, and that they are valid UTF-8); unescaping is done by
 * ps_parse_string (labels.c) when the parser takes the value.
 *
 * The input is scanned with a sentinel and bounds checks (re2c:eof): s[n] is a NUL that ends every
 * rule, while NUL bytes inside the input are ordinary characters (and errors, except in strings).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "core/labels.h"
#include "parser/selector_int.h"

#define YYCTYPE unsigned char
#define YYCURSOR l->cur
#define YYLIMIT l->lim
#define YYMARKER l->mar

/*!re2c
    re2c:yyfill:enable = 0;
    re2c:eof = 0;

    space      = [ \t\r\n]+;
    comment    = "#" [^\r\n]*;


    name       = [a-zA-Z_:] [a-zA-Z0-9_:]*;
    label      = [a-zA-Z_] [a-zA-Z0-9_]*;

    dq_string  = ["] ([^"\\\n] | [\\] [^\n])* ["];
    sq_string  = ['] ([^'\\\n] | [\\] [^\n])* ['];
    raw_string = [`] [^`]* [`];
*/

/* Writes c (the character at p) the way Go's %q prints a rune: 'x', '\n', '\'', 'é'; a byte that
 * does not start valid UTF-8 is written '\xff'. */
static void quote_char(char *out, size_t size, const unsigned char *p, const unsigned char *lim)
{
    unsigned c = *p;
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (len > 1 && p + len <= lim && ps_utf8_valid((const char *)p, len)) {
        snprintf(out, size, "'%.*s'", (int)len, (const char *)p);
        return;
    }
    switch (c) {
    case '\a': snprintf(out, size, "'\\a'"); return;
    case '\b': snprintf(out, size, "'\\b'"); return;
    case '\f': snprintf(out, size, "'\\f'"); return;
    case '\n': snprintf(out, size, "'\\n'"); return;
    case '\r': snprintf(out, size, "'\\r'"); return;
    case '\t': snprintf(out, size, "'\\t'"); return;
    case '\v': snprintf(out, size, "'\\v'"); return;
    case '\\': snprintf(out, size, "'\\\\'"); return;
    case '\'': snprintf(out, size, "'\\''"); return;
    }
    if (c < 0x20 || c >= 0x7f)
        snprintf(out, size, "'\\x%02x'", c);
    else
        snprintf(out, size, "'%c'", (char)c);
}

static ps_tok_t tok(ps_lexer_t *l, ps_tok_type_t type, const unsigned char *start)
{
    ps_tok_t t = {type, (uint32_t)(start - (const unsigned char *)l->s), (uint32_t)(l->cur - start),
                  l->brace_open};
    if (type == T_EOF)
        l->done = true;
    l->last = t;
    return t;
}

static ps_tok_t lex_error(ps_lexer_t *l, const unsigned char *at, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static ps_tok_t lex_error(ps_lexer_t *l, const unsigned char *at, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(l->msg, sizeof(l->msg), fmt, ap);
    va_end(ap);
    l->err_pos = (uint32_t)(at - (const unsigned char *)l->s);
    l->done = true;
    l->last = (ps_tok_t){T_ERROR, l->err_pos, 0, false};
    return l->last;
}

/* ---- numbers and durations, as lex.go scans them ------------------------------------------- */

static bool is_alnum(int c)
{
    return c == '_' || (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
}

static int peek_c(const ps_lexer_t *l) { return l->cur < l->lim ? *l->cur : -1; }

static bool accept(ps_lexer_t *l, const char *set)
{
    if (l->cur < l->lim && *l->cur != '\0' && strchr(set, *l->cur) != NULL) {
        l->cur++;
        return true;
    }
    return false;
}

static void accept_run(ps_lexer_t *l, const char *set)
{
    while (accept(l, set))
        ;
}

/* scanNumber: true if a number ends here (what follows is not alphanumeric). */
static bool scan_number(ps_lexer_t *l)
{
    const char *digits = "0123456789";
    if (accept(l, "0") && accept(l, "xX"))
        digits = "0123456789abcdefABCDEF";
    accept_run(l, digits);
    if (accept(l, "."))
        accept_run(l, digits);
    if (accept(l, "eE")) {
        accept(l, "+-");
        accept_run(l, "0123456789");
    }
    return !is_alnum(peek_c(l));
}

/* acceptRemainingDuration: units after the digits scan_number took, then maybe more digits and
 * units; it reads one character past the end (*extra says whether it did, for the backup). */
static bool accept_remaining_duration(ps_lexer_t *l, bool *extra)
{
    *extra = false;
    if (!accept(l, "smhdwy"))
        return false;
    accept(l, "s");
    while (accept(l, "0123456789")) {
        accept_run(l, "0123456789");
        if (!accept(l, "smhdw"))
            return false;
        accept(l, "s");
    }
    int c = peek_c(l);
    if (c >= 0) {
        l->cur++;
        *extra = true;
    }
    return !is_alnum(c);
}

static ps_tok_t bad_number(ps_lexer_t *l, const unsigned char *start, const char *what)
{
    char q[120];
    ps_quote_string(q, sizeof(q), (const char *)start, (size_t)(l->cur - start), 100);
    return lex_error(l, start, "%s: %s", what, q);
}

/* lexNumberOrDuration, from start. */
static ps_tok_t lex_number(ps_lexer_t *l, const unsigned char *start)
{
    bool extra;
    l->cur = start;
    if (scan_number(l))
        return tok(l, T_NUMBER, start);
    if (accept_remaining_duration(l, &extra)) {
        if (extra)
            l->cur--;
        return tok(l, T_DURATION, start);
    }
    return bad_number(l, start, "bad number or duration syntax");
}

/* step, range, min_of or max_of (lex.go's scanDurationKeyword, in any case) from start, as a T_IDENT;
 * else a T_EOF token with l->cur left at start */
static ps_tok_t lex_duration_keyword(ps_lexer_t *l, const unsigned char *start)
{
    static const char *const words[] = {"step", "range", "min_of", "max_of"};
    const unsigned char *e = start;
    while (e < l->lim && (*e == '_' || ((*e | 0x20) >= 'a' && (*e | 0x20) <= 'z')))
        e++;
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if ((size_t)(e - start) == strlen(words[i]) && strncasecmp((const char *)start, words[i], strlen(words[i])) == 0) {
            l->cur = e;
            return tok(l, T_IDENT, start);
        }
    l->cur = start;
    return (ps_tok_t){.type = T_EOF};
}

/* lexDurationExpr (Prometheus 3): in brackets until the first number, duration or keyword; NULL
 * type T_EOF when the token is one the main scanner takes (an operator, a parenthesis, "]"). */
static ps_tok_t lex_duration_expr(ps_lexer_t *l)
{
    const unsigned char *start;
    char q[16];
    while (l->cur < l->lim && (*l->cur == ' ' || *l->cur == '\t' || *l->cur == '\r' || *l->cur == '\n'))
        l->cur++;
    start = l->cur;
    if (start >= l->lim)
        return lex_error(l, start, "unexpected end of input in duration expression");
    unsigned c = *start;
    if ((c >= '0' && c <= '9') || (c == '.' && start + 1 < l->lim && start[1] >= '0' && start[1] <= '9')) {
        l->want_duration = false;
        return lex_number(l, start);
    }
    if (c == ':')
        return lex_error(l, start, "unexpected colon before duration in duration expression");
    if (strchr("()+-*/%^,]", (int)c) != NULL && c != 0) {
        if (c == ']')
            l->want_duration = false;
        return (ps_tok_t){.type = T_EOF};
    }
    ps_tok_t t = lex_duration_keyword(l, start);
    if (t.type == T_IDENT) {
        l->want_duration = false;
        return t;
    }
    quote_char(q, sizeof(q), start, l->lim);
    return lex_error(l, start, "unexpected character in duration expression: %s", q);
}

/* lexDuration: the first token after "[" (spaces skipped). */
static ps_tok_t lex_duration(ps_lexer_t *l)
{
    const unsigned char *start;
    bool extra;

    while (l->cur < l->lim && (*l->cur == ' ' || *l->cur == '\t' || *l->cur == '\r' || *l->cur == '\n'))
        l->cur++;
    start = l->cur;
    if (scan_number(l))
        return lex_error(l, start, "missing unit character in duration");
    if (!accept_remaining_duration(l, &extra))
        return bad_number(l, start, "bad duration syntax");
    if (extra)
        l->cur--;
    return tok(l, T_DURATION, start);
}

/* A quote that does not close. lex.go reads the string up to the end of the line, and in PromQL a
 * bad escape on the way is what it reports ("\\" at the end: "escape sequence not terminated"). */
static ps_tok_t unterminated(ps_lexer_t *l, const unsigned char *start)
{
    char m[96];
    if (l->promql)
        for (const unsigned char *p = start + 1; p < l->lim && *p != '\n'; p++) {
            if (*p != '\\')
                continue;
            const char *e = ps_sel_escape_error(m, sizeof(m), (const char *)p, (size_t)(l->lim - p), (char)*start);
            if (e != NULL)
                return lex_error(l, start, "%s", e);
            p++;
        }
    return lex_error(l, start, "unterminated quoted string");
}

static ps_tok_t string_tok(ps_lexer_t *l, const unsigned char *start)
{
    if (l->promql && *start != '`') {
        /* lex.go checks escapes as it reads a string: the first bad one or bad UTF-8 is the error */
        char m[96];
        for (const unsigned char *p = start + 1; p < l->cur - 1;) {
            if (*p == '\\') {
                size_t rest = (size_t)(l->cur - p); /* with the closing quote: "\x4" has an illegal '"' */
                const char *e = ps_sel_escape_error(m, sizeof(m), (const char *)p, rest, (char)*start);
                if (e != NULL)
                    return lex_error(l, start, "%s", e);
                p += 2;
                continue;
            }
            size_t cl = *p < 0x80              ? 1
                        : (*p & 0xe0) == 0xc0 ? 2
                        : (*p & 0xf0) == 0xe0 ? 3
                        : (*p & 0xf8) == 0xf0 ? 4
                                              : 0;
            if (cl == 0 || p + cl > l->cur - 1 || !ps_utf8_valid((const char *)p, cl))
                return lex_error(l, start, "invalid UTF-8 rune");
            p += cl;
        }
        return tok(l, T_STRING, start);
    }
    if (!ps_utf8_valid((const char *)start, (size_t)(l->cur - start)))
        return lex_error(l, start, "invalid UTF-8 rune");
    return tok(l, T_STRING, start);
}

void ps_sel_lex_init(ps_lexer_t *l, const char *s, size_t n)
{
    memset(l, 0, sizeof(*l));
    l->s = s;
    l->n = n;
    l->cur = (const unsigned char *)s;
    l->lim = (const unsigned char *)s + n;
}

ps_tok_t ps_sel_lex_next(ps_lexer_t *l)
{
    const unsigned char *start;
    char q[16];

    if (l->done)
        return l->last;
    for (;;) {
        start = l->cur;
        if (l->brace_open)
            goto InsideBraces;
        if (l->want_duration && l->durexpr) {
            ps_tok_t t = lex_duration_expr(l);
            if (t.type != T_EOF)
                return t;
            start = l->cur; /* an operator, a parenthesis or "]": the scanner below takes it */
        } else if (l->want_duration) {
            l->want_duration = false;
            return lex_duration(l);
        }
        if (l->bracket_open && l->durexpr && start < l->lim && *start != ':' &&
            (*start == '_' || ((*start | 0x20) >= 'a' && (*start | 0x20) <= 'z'))) {
            /* Prometheus 3's lex.go: in brackets a word is a duration keyword, or an error */
            ps_tok_t t = lex_duration_keyword(l, start);
            if (t.type == T_IDENT)
                return t;
            quote_char(q, sizeof(q), start, l->lim);
            return lex_error(l, start, "unexpected character: %s, expected ':'", q);
        }
        if (l->bracket_open && start < l->lim &&
            (*start == ':' || *start == '_' || ((*start | 0x20) >= 'a' && (*start | 0x20) <= 'z'))) {
            /* lex.go: inside brackets a letter is taken for a colon ("a[5m x]" is "a[5m:]") */
            if (l->got_colon) {
                quote_char(q, sizeof(q), start, l->lim);
                return lex_error(l, start, "unexpected colon %s", q);
            }
            l->got_colon = true;
            l->cur++;
            return tok(l, T_COLON, start);
        }
    /*!re2c
    space       { continue; }
    comment     { continue; }

    "("         { l->paren_depth++; return tok(l, T_LPAREN, start); }
    ")"         {
                    if (--l->paren_depth < 0) /* after the ")", as lex.go (it emits the token first) */
                        return lex_error(l, l->cur, "unexpected right parenthesis ')'");
                    return tok(l, T_RPAREN, start);
                }
    "{"         { l->brace_open = true; return tok(l, T_LBRACE, start); }
    "["         {
                    if (l->bracket_open)
                        return lex_error(l, start, "unexpected left bracket '['");
                    l->bracket_open = true;
                    l->got_colon = false;
                    l->want_duration = true;
                    return tok(l, T_LBRACKET, start);
                }
    "]"         {
                    if (!l->bracket_open)
                        return lex_error(l, start, "unexpected right bracket ']'");
                    l->bracket_open = false;
                    return tok(l, T_RBRACKET, start);
                }
    ","         { return tok(l, T_COMMA, start); }
    "@"         { return tok(l, T_AT, start); }

    "+"         { return tok(l, T_ADD, start); }
    "-"         { return tok(l, T_SUB, start); }
    "*"         { return tok(l, T_MUL, start); }
    "/"         { return tok(l, T_DIV, start); }
    "%"         { return tok(l, T_MOD, start); }
    "^"         { return tok(l, T_POW, start); }
    "=="        { return tok(l, T_EQLC, start); }
    "=~"        { return lex_error(l, start, "unexpected character after '=': '~'"); }
    "="         { return tok(l, T_EQL, start); }
    "!="        { return tok(l, T_NEQ, start); }
    "!"         {
                    if (l->cur >= l->lim) /* lex.go prints the end of input as the rune U+FFFD */
                        return l->promql ? lex_error(l, start, "unexpected character after '!': '\xef\xbf\xbd'")
                                         : lex_error(l, start, "unexpected end of input after '!'");
                    quote_char(q, sizeof(q), l->cur, l->lim);
                    return lex_error(l, start, "unexpected character after '!': %s", q);
                }
    "<="        { return tok(l, T_LTE, start); }
    "<"         { return tok(l, T_LSS, start); }
    ">="        { return tok(l, T_GTE, start); }
    ">"         { return tok(l, T_GTR, start); }

    [0-9] | "." [0-9]       { return lex_number(l, start); }

    dq_string | sq_string | raw_string { return string_tok(l, start); }
    ["']        { return unterminated(l, start); }
    [`]         { return lex_error(l, start, "unterminated raw string"); }

    'inf' | 'nan'   { return tok(l, T_NUMBER, start); }
    'and'           { return tok(l, T_LAND, start); }
    'or'            { return tok(l, T_LOR, start); }
    'unless'        { return tok(l, T_LUNLESS, start); }
    'atan2'         { return tok(l, T_ATAN2, start); }
    'sum'           { return tok(l, T_SUM, start); }
    'avg'           { return tok(l, T_AVG, start); }
    'count'         { return tok(l, T_COUNT, start); }
    'min'           { return tok(l, T_MIN, start); }
    'max'           { return tok(l, T_MAX, start); }
    'group'         { return tok(l, T_GROUP, start); }
    'stddev'        { return tok(l, T_STDDEV, start); }
    'stdvar'        { return tok(l, T_STDVAR, start); }
    'topk'          { return tok(l, T_TOPK, start); }
    'bottomk'       { return tok(l, T_BOTTOMK, start); }
    'count_values'  { return tok(l, T_COUNT_VALUES, start); }
    'quantile'      { return tok(l, T_QUANTILE, start); }
    'limitk'        { return tok(l, T_LIMITK, start); }
    'limit_ratio'   { return tok(l, T_LIMIT_RATIO, start); }
    'by'            { return tok(l, T_BY, start); }
    'without'       { return tok(l, T_WITHOUT, start); }
    'offset'        { return tok(l, T_OFFSET, start); }
    'bool'          { return tok(l, T_BOOL, start); }
    'on'            { return tok(l, T_ON, start); }
    'ignoring'      { return tok(l, T_IGNORING, start); }
    'group_left'    { return tok(l, T_GROUP_LEFT, start); }
    'group_right'   { return tok(l, T_GROUP_RIGHT, start); }
    name            {
                        bool colon = memchr(start, ':', (size_t)(l->cur - start)) != NULL;
                        return tok(l, colon ? T_METRIC_IDENT : T_IDENT, start);
                    }

    $           {
                    if (l->paren_depth > 0)
                        return lex_error(l, start, "unclosed left parenthesis");
                    if (l->bracket_open)
                        return lex_error(l, start, "unclosed left bracket");
                    return tok(l, T_EOF, start);
                }
    *           {
                    quote_char(q, sizeof(q), start, l->lim);
                    return lex_error(l, start, "unexpected character: %s", q);
                }
    */

    InsideBraces:
    /*!re2c
    space       { continue; }
    comment     { continue; }
    label       { return tok(l, T_IDENT, start); }
    ","         { return tok(l, T_COMMA, start); }
    dq_string | sq_string | raw_string { return string_tok(l, start); }
    ["']        { return unterminated(l, start); }
    [`]         { return lex_error(l, start, "unterminated raw string"); }
    "=~"        { return tok(l, T_EQL_REGEX, start); }
    "="         { return tok(l, T_EQL, start); }
    "!~"        { return tok(l, T_NEQ_REGEX, start); }
    "!="        { return tok(l, T_NEQ, start); }
    "!"         {
                    if (l->cur >= l->lim)
                        return l->promql
                                   ? lex_error(l, start, "unexpected character after '!' inside braces: '\xef\xbf\xbd'")
                                   : lex_error(l, start, "unexpected end of input inside braces");
                    quote_char(q, sizeof(q), l->cur, l->lim);
                    return lex_error(l, start, "unexpected character after '!' inside braces: %s", q);
                }
    "{"         { return lex_error(l, start, "unexpected left brace '{'"); }
    "}"         { l->brace_open = false; return tok(l, T_RBRACE, start); }
    $           { return lex_error(l, start, "unexpected end of input inside braces"); }
    *           {
                    quote_char(q, sizeof(q), start, l->lim);
                    return lex_error(l, start, "unexpected character inside braces: %s", q);
                }
    */
    }
}
