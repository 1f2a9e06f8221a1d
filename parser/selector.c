/*
 * selector.c - the parser of the selector language (selector.h), over the tokens of the re2c
 * lexer in selector.re, and the machinery it shares with the PromQL parser (promql.c) through
 * selector_int.h: token descriptions, errors, string literals, numbers, matchers and grouping
 * lists.
 *
 *   selector := metric_name [ "{" [ matcher { "," matcher } [","] ] "}" ] | "{" matchers "}"
 *
 * ps_selector_parse is Prometheus' parser.ParseMetricSelector (what match[] takes): the input is a
 * selector and nothing else, lexed as PromQL, so its errors are Prometheus' to the position
 * ("1:3: parse error: unexpected <offset>" for `x offset 5m`). Syntax errors read as Prometheus'
 * do (promql/parser/parse.go, generated_parser.y):
 *   "1:6: parse error: unexpected \"}\" in label matching, expected string"
 * where a token is described as Prometheus' Item.desc(): end of input, identifier "x",
 * metric identifier "a:b", string "\"v\"", number "1", duration "5m", "}" (punctuation),
 * <op:+>, <aggr:sum>, <by> (keywords). Positions are line:column, 1-based, the column in bytes.
 *
 * Memory: names and values come from the caller's arena; only the compiled regexes (PCRE2) are
 * heap objects. Every selector made is recorded, so a failed parse frees them all.
 * Limits (PS_ETOOBIG): 64 KiB of input, 64 matchers per selector, 1000 selectors per expression,
 * 64 grouping labels.
 */
#include "parser/selector.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/encode.h"
#include "core/labels.h"
#include "parser/labels.h"
#include "parser/matcher.h"
#include "parser/selector_int.h"

#define MAX_INPUT (64u * 1024u)
#define MAX_MATCHERS 64u
#define MAX_SELECTORS 1000u
#define MAX_GROUPING 64u

/* ---- token descriptions -------------------------------------------------------- */

static size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
}

const char *ps_psr_text(const ps_psr_t *p, ps_tok_t t) { return p->s + t.pos; }

/* Prometheus' Item.desc(). */
/* Item.String()'s quoting in Prometheus 2.42: names whole, other values longer than 10 bytes cut
 * to 10 runes ("%.10q...", so a short string of wide runes is whole and still gets "..."). */
static void go_item_quote(char *out, size_t size, const char *s, size_t n, bool cut)
{
    size_t k = n;
    if (cut && n > 10) {
        size_t runes = 0;
        for (k = 0; k < n && runes < 10; runes++) {
            size_t cl = utf8_len((unsigned char)s[k]);
            k += cl > 1 && k + cl <= n && ps_utf8_valid(s + k, cl) ? cl : 1;
        }
    }
    ps_quote_string(out, size > 3 ? size - 3 : size, s, k, k);
    if (cut && n > 10)
        strncat(out, "...", size - strlen(out) - 1);
}

void ps_psr_tok_desc(const ps_psr_t *p, ps_tok_t t, char *out, size_t size)
{
    char q[128];
    const char *kind = NULL;
    int len = (int)(t.len > 40 ? 40 : t.len);

    if (p->promql && (t.type == T_LIMITK || t.type == T_LIMIT_RATIO))
        t.type = T_IDENT; /* Prometheus 3 words, names in 2.42 */
    switch (t.type) {
    case T_EOF:
    case T_ERROR: snprintf(out, size, "end of input"); return;
    case T_IDENT: kind = "identifier"; break;
    case T_METRIC_IDENT: kind = "metric identifier"; break;
    case T_STRING: kind = "string"; break;
    case T_NUMBER: kind = "number"; break;
    case T_DURATION: kind = "duration"; break;
    case T_AT:
        if (p->promql) { /* 2.42 has no name for "@" in ItemTypeStr, so desc() says this */
            snprintf(out, size, "\"<Item 57385>\" <op:@>");
            return;
        }
        break;
    default: break;
    }
    if (p->promql && t.type == T_IDENT && !t.braced &&
        ((t.len == 5 && strncasecmp(ps_psr_text(p, t), "start", 5) == 0) ||
         (t.len == 3 && strncasecmp(ps_psr_text(p, t), "end", 3) == 0))) {
        /* 2.42's START and END tokens are described by their text: "start" */
        ps_quote_string(out, size, ps_psr_text(p, t), t.len, 10);
        return;
    }
    if (kind != NULL) {
        bool ident = t.type == T_IDENT || t.type == T_METRIC_IDENT;
        if (p->promql)
            go_item_quote(q, sizeof(q), ps_psr_text(p, t), t.len, !ident);
        else
            ps_quote_string(q, sizeof(q), ps_psr_text(p, t), t.len, ident ? 64 : 10);
        snprintf(out, size, "%s %s", kind, q);
    } else if (ps_tok_is_keyword(t.type)) {
        snprintf(out, size, "<%.*s>", len, ps_psr_text(p, t));
    } else if (ps_tok_is_operator(t.type)) {
        snprintf(out, size, "<op:%.*s>", len, ps_psr_text(p, t));
    } else if (ps_tok_is_aggregator(t.type)) {
        snprintf(out, size, "<aggr:%.*s>", len, ps_psr_text(p, t));
    } else {
        ps_quote_string(out, size, ps_psr_text(p, t), t.len, 10);
    }
}

/* ---- errors -------------------------------------------------------------------------------- */

static void *failv(ps_psr_t *p, int code, uint32_t pos, const char *prefix, const char *suffix, const char *fmt,
                   va_list ap)
{
    char msg[480];
    unsigned line = 1;
    size_t col, bol = 0;

    if (p->rc != 0)
        return NULL; /* the first error stands */
    vsnprintf(msg, sizeof(msg), fmt, ap);
    for (size_t i = 0; i < pos && i < p->n; i++)
        if (p->s[i] == '\n') {
            line++;
            bol = i + 1;
        }
    col = pos - bol + 1;
    ps_err_set_at(p->err, code, pos, "%u:%zu: %s%s%s", line, col, prefix, msg, suffix);
    p->rc = code;
    return NULL;
}

__attribute__((format(printf, 3, 4))) void *ps_psr_perr(ps_psr_t *p, uint32_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(p, PS_EINVAL, pos, "parse error: ", "", fmt, ap);
    va_end(ap);
    return NULL;
}

__attribute__((format(printf, 3, 4))) void *ps_psr_too_big(ps_psr_t *p, uint32_t pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    failv(p, PS_ETOOBIG, pos, "", "", fmt, ap);
    va_end(ap);
    return NULL;
}

/* "unexpected <token>[ in <context>][, expected <expected>]", or the lexer's own error. */
void *ps_psr_unexpected(ps_psr_t *p, ps_tok_t t, const char *context, const char *expected)
{
    char d[160];
    if (t.type == T_ERROR)
        return ps_psr_perr(p, p->lex.err_pos, "%s", p->lex.msg);
    ps_psr_tok_desc(p, t, d, sizeof(d));
    return ps_psr_perr(p, t.pos, "unexpected %s%s%s%s%s", d, context ? " in " : "", context ? context : "",
                expected ? ", expected " : "", expected ? expected : "");
}

/* ---- tokens -------------------------------------------------------------------------------- */

void ps_psr_advance(ps_psr_t *p)
{
    p->last_end = p->tok.pos + p->tok.len;
    if (p->has_ahead) {
        p->tok = p->ahead;
        p->has_ahead = false;
    } else {
        p->tok = ps_sel_lex_next(&p->lex);
    }
}

ps_tok_t ps_psr_peek(ps_psr_t *p)
{
    if (!p->has_ahead) {
        p->ahead = ps_sel_lex_next(&p->lex);
        p->has_ahead = true;
    }
    return p->ahead;
}

/* Go's %#U of the rune at s: "U+0071 'q'" (the character only when it is printable ASCII or
 * UTF-8). */
static void rune_desc(char *out, size_t size, const char *s, size_t n)
{
    unsigned char c = n ? (unsigned char)s[0] : 0;
    size_t cl = utf8_len(c);
    uint32_t r = c;
    if (cl > 1 && cl <= n && ps_utf8_valid(s, cl)) {
        r = cl == 2   ? (uint32_t)(c & 0x1f) << 6 | (s[1] & 0x3f)
            : cl == 3 ? (uint32_t)(c & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f)
                      : (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 |
                            (s[3] & 0x3f);
        snprintf(out, size, "U+%04X '%.*s'", r, (int)cl, s);
    } else if (c >= 0x20 && c < 0x7f) {
        snprintf(out, size, "U+%04X '%c'", r, c);
    } else {
        snprintf(out, size, "U+%04X", c >= 0x80 ? 0xFFFDu : r);
    }
}

/* What lex.go's lexEscape says about the escape sequence at s[0] == '\\' (Prometheus 2.42 checks
 * escapes in its lexer and reports them at the start of the string). NULL if it finds nothing. */
const char *ps_sel_escape_error(char *out, size_t size, const char *s, size_t n, char quote)
{
    char d[32];
    size_t i = 1, digits;
    unsigned base;
    uint32_t max, x = 0;

    if (i >= n)
        return "escape sequence not terminated";
    switch (s[i]) {
    case 'a': case 'b': case 'f': case 'n': case 'r': case 't': case 'v': case '\\': return NULL;
    case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7':
        digits = 3, base = 8, max = 255;
        break;
    case 'x': digits = 2, base = 16, max = 255, i++; break;
    case 'u': digits = 4, base = 16, max = 0x10ffff, i++; break;
    case 'U': digits = 8, base = 16, max = 0x10ffff, i++; break;
    default:
        if (s[i] == quote)
            return NULL;
        rune_desc(d, sizeof(d), s + i, n - i);
        snprintf(out, size, "unknown escape sequence %s", d);
        return out;
    }
    for (; digits > 0; digits--, i++) {
        int c = i < n ? (unsigned char)s[i] : -1;
        int h = ps_hex_digit(c);
        unsigned v = h < 0 ? 99 : (unsigned)h;
        if (v >= base) {
            if (c < 0)
                return "escape sequence not terminated";
            rune_desc(d, sizeof(d), s + i, n - i);
            snprintf(out, size, "illegal character %s in escape sequence", d);
            return out;
        }
        x = x * base + v;
    }
    if (x > max || (x >= 0xd800 && x < 0xe000))
        return "escape sequence is an invalid Unicode code point";
    return NULL;
}

/* Unquotes a T_STRING with ps_parse_string, whose error offset is in the token. In PromQL mode
 * an escape error is said as lex.go says it, at the start of the string. */
bool ps_psr_unquote(ps_psr_t *p, ps_tok_t t, char **out, size_t *outlen)
{
    ps_err_t e;
    size_t end;
    const char *s = ps_psr_text(p, t);

    if (ps_parse_string(s, t.len, &end, p->arena, out, outlen, &e) == 0)
        return true;
    if (p->promql && e.pos >= 0 && (uint32_t)e.pos < t.len && s[e.pos] == '\\') {
        char msg[96];
        const char *m = ps_sel_escape_error(msg, sizeof(msg), s + e.pos, t.len - (size_t)e.pos, s[0]);
        if (m != NULL) {
            ps_psr_perr(p, t.pos, "%s", m);
            return false;
        }
    }
    ps_psr_perr(p, t.pos + (uint32_t)e.pos, "%s", e.msg);
    return false;
}

/* A number as PromQL reads one: strconv.ParseInt(s, 0, 64) (so 0x1f, 0755), else ParseFloat. */
bool ps_psr_number(ps_psr_t *p, ps_tok_t t, double *out)
{
    const char *s = ps_psr_text(p, t);
    char *end;
    size_t n = t.len, qs = 4 * n + 8;
    char *q = ps_arena_alloc(p->arena, qs); /* the number quoted whole, as Go's error says it */

    if (n == 3 && strncasecmp(s, "inf", 3) == 0) {
        *out = INFINITY;
        return true;
    }
    if (n == 3 && strncasecmp(s, "nan", 3) == 0) {
        *out = NAN;
        return true;
    }
    char *b = ps_arena_strndup(p->arena, s, n);
    errno = 0;
    if (n >= 2 && b[0] == '0' && (b[1] == 'x' || b[1] == 'X')) {
        /* ParseInt(s, 0, 64) or nothing: ParseFloat wants a 'p' exponent after a hex mantissa */
        bool hex = n > 2 && strspn(b + 2, "0123456789abcdefABCDEF") == n - 2;
        unsigned long long v = hex ? strtoull(b + 2, &end, 16) : 0;
        if (!hex || errno == ERANGE || v > (unsigned long long)INT64_MAX) {
            ps_quote_string(q, qs, s, n, n);
            ps_psr_perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %s: invalid syntax", q);
            return false;
        }
        *out = (double)v;
        return true;
    }
    if (n > 1 && b[0] == '0' && strspn(b, "01234567") == n) {
        unsigned long long v = strtoull(b, &end, 8);
        if (errno != ERANGE && v <= (unsigned long long)INT64_MAX) {
            *out = (double)v;
            return true;
        }
        errno = 0; /* too big for int64: a float, read in decimal as Go's ParseFloat does */
    }
    double d = strtod(b, &end);
    if (end != b + n) { /* "1e": an exponent without digits */
        ps_quote_string(q, qs, s, n, n);
        ps_psr_perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %s: invalid syntax", q);
        return false;
    }
    if (isinf(d)) {
        ps_quote_string(q, qs, s, n, n);
        ps_psr_perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %s: value out of range", q);
        return false;
    }
    *out = d;
    return true;
}

/* ---- names -------------------------------------------------------------------------------- */

/* Tokens PromQL accepts as a bare metric name (generated_parser.y: metric_identifier). */
bool ps_psr_is_metric_word(ps_tok_type_t t)
{
    return t == T_IDENT || t == T_METRIC_IDENT || ps_tok_is_aggregator(t) || t == T_BY || t == T_WITHOUT ||
           t == T_OFFSET || t == T_LAND || t == T_LOR || t == T_LUNLESS;
}

/* ---- selectors ----------------------------------------------------------------------------- */

static ps_matcher_t *add_matcher(ps_psr_t *p, ps_selector_t *sel, uint32_t *cap, uint32_t pos)
{
    if (sel->n == MAX_MATCHERS)
        return ps_psr_too_big(p, pos, "too many matchers in one selector (the limit is %u)", MAX_MATCHERS);
    if (sel->n == *cap) {
        uint32_t ncap = *cap ? *cap * 2 : 4;
        ps_matcher_t *m = ps_arena_alloc(p->arena, ncap * sizeof(*m));
        if (sel->n)
            memcpy(m, sel->m, sel->n * sizeof(*m));
        sel->m = m;
        *cap = ncap;
    }
    ps_matcher_t *m = &sel->m[sel->n];
    memset(m, 0, sizeof(*m));
    return m;
}

/* Compiles m (the next free slot of sel) and, if that works, counts it in. */
static bool commit_matcher(ps_psr_t *p, ps_selector_t *sel, ps_matcher_t *m, uint32_t pos)
{
    ps_err_t e;
    if (ps_matcher_compile(m, &e) != 0) {
        ps_psr_perr(p, pos, "%s", e.msg);
        return false;
    }
    sel->n++;
    return true;
}

bool ps_psr_check_name(ps_psr_t *p, ps_tok_t t, const char *name, size_t n)
{
    if (n == 0) {
        ps_psr_perr(p, t.pos, "label name must not be empty");
        return false;
    }
    if (!ps_utf8_valid(name, n)) {
        ps_psr_perr(p, t.pos, "label name is not valid UTF-8");
        return false;
    }
    if (memchr(name, 0, n) != NULL) { /* names are C strings here (and the store takes none such) */
        ps_psr_perr(p, t.pos, "label name must not contain a NUL byte");
        return false;
    }
    return true;
}

/* matcher := (label | string) ("=" | "!=" | "=~" | "!~") string  |  string (a metric name) */
static bool parse_matcher(ps_psr_t *p, ps_selector_t *sel, uint32_t *cap)
{
    ps_tok_t nt = p->tok;
    char *name;
    size_t nlen;
    ps_match_op_t op;

    if (nt.type == T_IDENT) {
        nlen = nt.len;
        name = ps_arena_strndup(p->arena, ps_psr_text(p, nt), nlen);
    } else if (nt.type == T_STRING && (!p->promql || p->quoted)) {
        if (!ps_psr_unquote(p, nt, &name, &nlen))
            return false;
    } else {
        ps_psr_unexpected(p, nt, "label matching", "identifier or \"}\"");
        return false;
    }
    ps_psr_advance(p);
    switch (p->tok.type) {
    case T_EQL: op = PS_MATCH_EQ; break;
    case T_NEQ: op = PS_MATCH_NEQ; break;
    case T_EQL_REGEX: op = PS_MATCH_RE; break;
    case T_NEQ_REGEX: op = PS_MATCH_NRE; break;
    default:
        if (nt.type == T_STRING && (p->tok.type == T_COMMA || p->tok.type == T_RBRACE)) {
            /* {"metric.name", ...}: a quoted metric name (Prometheus 3) */
            ps_matcher_t *m = add_matcher(p, sel, cap, nt.pos);
            if (m == NULL)
                return false;
            m->op = PS_MATCH_EQ;
            m->name = "__name__";
            m->nlen = 8;
            m->value = name;
            m->vlen = nlen;
            return commit_matcher(p, sel, m, nt.pos);
        }
        ps_psr_unexpected(p, p->tok, "label matching", "label matching operator");
        return false;
    }
    if (nt.type == T_STRING && !ps_psr_check_name(p, nt, name, nlen))
        return false;
    ps_psr_advance(p);
    ps_tok_t vt = p->tok;
    if (vt.type != T_STRING) {
        ps_psr_unexpected(p, vt, "label matching", "string");
        return false;
    }
    char *value;
    size_t vlen;
    if (!ps_psr_unquote(p, vt, &value, &vlen))
        return false;
    if (p->promql && (op == PS_MATCH_RE || op == PS_MATCH_NRE)) {
        ps_err_t e;
        if (ps_regex_check_re2(value, vlen, &e) != 0) { /* what Go's RE2 refuses, in its words */
            ps_psr_perr(p, nt.pos, "error parsing regexp: %s", e.msg);
            return false;
        }
    }
    ps_matcher_t *m = add_matcher(p, sel, cap, nt.pos);
    if (m == NULL)
        return false;
    m->op = op;
    m->name = name;
    m->nlen = nlen;
    m->value = value;
    m->vlen = vlen;
    if (!commit_matcher(p, sel, m, nt.pos))
        return false;
    ps_psr_advance(p);
    return true;
}

bool ps_psr_matchers(ps_psr_t *p, ps_selector_t *sel, uint32_t pos, bool named)
{
    uint32_t cap = 0;

    sel->n = 0;
    sel->m = NULL;
    if (p->nsels == MAX_SELECTORS) {
        ps_psr_too_big(p, pos, "too many selectors in one expression (the limit is %u)", MAX_SELECTORS);
        return false;
    }
    if (p->nsels == p->capsels) {
        uint32_t ncap = p->capsels ? p->capsels * 2 : 8;
        ps_selector_t **s = ps_arena_alloc(p->arena, ncap * sizeof(*s));
        if (p->nsels)
            memcpy(s, p->sels, p->nsels * sizeof(*s));
        p->sels = s;
        p->capsels = ncap;
    }
    p->sels[p->nsels++] = sel;

    if (named) {
        ps_matcher_t *m = add_matcher(p, sel, &cap, pos);
        m->op = PS_MATCH_EQ;
        m->name = "__name__";
        m->nlen = 8;
        m->value = ps_arena_strndup(p->arena, ps_psr_text(p, p->tok), p->tok.len);
        m->vlen = p->tok.len;
        if (!commit_matcher(p, sel, m, pos))
            return false;
        ps_psr_advance(p);
        if (p->tok.type != T_LBRACE)
            return true;
    }
    ps_psr_advance(p); /* "{" */
    for (;;) {
        if (p->tok.type == T_RBRACE)
            break;
        if (!parse_matcher(p, sel, &cap))
            return false;
        if (p->tok.type == T_COMMA) {
            ps_psr_advance(p);
            continue;
        }
        if (p->tok.type == T_RBRACE)
            break;
        ps_psr_unexpected(p, p->tok, "label matching", "\",\" or \"}\"");
        return false;
    }
    ps_psr_advance(p); /* "}" */

    if (p->promql) /* PromQL checks these with the types, after parsing (promql.c) */
        return true;
    if (named) {
        for (uint32_t i = 1; i < sel->n; i++)
            if (sel->m[i].nlen == 8 && memcmp(sel->m[i].name, "__name__", 8) == 0) {
                char a[80], b[80];
                ps_quote_string(a, sizeof(a), sel->m[0].value, sel->m[0].vlen, 64);
                ps_quote_string(b, sizeof(b), sel->m[i].value, sel->m[i].vlen, 64);
                ps_psr_perr(p, pos, "metric name must not be set twice: %s or %s", a, b);
                return false;
            }
    } else {
        bool non_empty = false;
        for (uint32_t i = 0; i < sel->n; i++)
            non_empty |= !sel->m[i].matches_empty;
        if (!non_empty) {
            ps_psr_perr(p, pos, "vector selector must contain at least one non-empty matcher");
            return false;
        }
    }
    return true;
}

/* ---- grouping lists (PromQL's by/without/on/ignoring) ---------------------------------- */

/* grouping := ("by" | "without") "(" [ label { "," label } [","] ] ")"; the token is by/without. */
bool ps_psr_grouping(ps_psr_t *p, ps_psr_grouping_t *g)
{
    g->grouped = true;
    g->without = p->tok.type == T_WITHOUT;
    ps_psr_advance(p);
    if (p->tok.type != T_LPAREN) {
        ps_psr_unexpected(p, p->tok, "grouping opts", "\"(\"");
        return false;
    }
    ps_psr_advance(p);
    for (;;) {
        ps_tok_t t = p->tok;
        char *name;
        size_t nlen;
        if (t.type == T_RPAREN)
            break;
        if (t.type == T_IDENT || ps_tok_is_keyword(t.type) || ps_tok_is_aggregator(t.type) || t.type == T_LAND ||
            t.type == T_LOR || t.type == T_LUNLESS || t.type == T_ATAN2) {
            /* keywords are label names here (generated_parser.y: maybe_label) */
            nlen = t.len;
            name = ps_arena_strndup(p->arena, ps_psr_text(p, t), nlen);
        } else if (t.type == T_STRING && (!p->promql || p->quoted)) {
            if (!ps_psr_unquote(p, t, &name, &nlen) || !ps_psr_check_name(p, t, name, nlen))
                return false;
        } else {
            ps_psr_unexpected(p, t, "grouping opts", "label");
            return false;
        }
        if (g->n == MAX_GROUPING) {
            ps_psr_too_big(p, t.pos, "too many grouping labels (the limit is %u)", MAX_GROUPING);
            return false;
        }
        if (g->n == g->cap) {
            uint32_t ncap = g->cap ? g->cap * 2 : 4;
            const char **a = ps_arena_alloc(p->arena, ncap * sizeof(*a));
            if (g->n)
                memcpy(a, g->names, g->n * sizeof(*a));
            g->names = a;
            g->cap = ncap;
        }
        g->names[g->n++] = name;
        ps_psr_advance(p);
        if (p->tok.type == T_COMMA) {
            ps_psr_advance(p);
            continue;
        }
        if (p->tok.type == T_RPAREN)
            break;
        ps_psr_unexpected(p, p->tok, "grouping opts", "\",\" or \")\"");
        return false;
    }
    ps_psr_advance(p); /* ")" */
    return true;
}

/* ---- API ----------------------------------------------------------------------------------- */

void ps_psr_init(ps_psr_t *p, const char *s, size_t n, ps_arena_t *arena, ps_err_t *err, bool promql)
{
    memset(p, 0, sizeof(*p));
    char *copy = ps_arena_alloc(arena, n + 1); /* the lexer needs a NUL after the input */
    if (n > 0)
        memcpy(copy, s, n);
    copy[n] = '\0';
    p->s = copy;
    p->n = n;
    p->arena = arena;
    p->err = err;
    p->promql = promql;
    ps_sel_lex_init(&p->lex, copy, n);
    p->lex.promql = promql;
    ps_psr_advance(p);
}

void ps_psr_dispose_all(ps_psr_t *p)
{
    for (uint32_t i = 0; i < p->nsels; i++)
        ps_selector_dispose(p->sels[i]);
    p->nsels = 0;
}

static int check_size(size_t n, ps_err_t *err)
{
    if (n > MAX_INPUT)
        return ps_err_set(err, PS_ETOOBIG, "query is too long: %zu bytes (the limit is %u)", n, MAX_INPUT);
    return 0;
}

static int parse_selector(const char *s, size_t n, bool need_non_empty, ps_arena_t *arena, ps_selector_t *out,
                          ps_err_t *err)
{
    ps_psr_t p;
    int rc;

    out->n = 0;
    out->m = NULL;
    if ((rc = check_size(n, err)) != 0)
        return rc;
    /* parser.ParseMetricSelector: a selector and nothing else, lexed as PromQL (Prometheus 3's:
     * quoted UTF-8 names too) */
    ps_psr_init(&p, s, n, arena, err, true);
    p.quoted = true;
    ps_tok_t t = p.tok;
    if (t.type == T_EOF)
        ps_psr_perr(&p, 0, "unexpected end of input");
    else if (!ps_psr_is_metric_word(t.type) && t.type != T_LBRACE)
        ps_psr_unexpected(&p, t, NULL, NULL);
    else if (ps_psr_matchers(&p, out, t.pos, t.type != T_LBRACE)) {
        bool non_empty = false; /* what Prometheus' API requires of match[] and we of every selector */
        for (uint32_t i = 0; i < out->n; i++)
            non_empty |= !out->m[i].matches_empty;
        if (p.tok.type != T_EOF)
            ps_psr_unexpected(&p, p.tok, NULL, NULL);
        else if (!non_empty && need_non_empty)
            ps_psr_perr(&p, t.pos, "vector selector must contain at least one non-empty matcher");
    }
    if (p.rc != 0) {
        ps_psr_dispose_all(&p);
        out->n = 0;
        out->m = NULL;
        return p.rc;
    }
    return 0;
}

int ps_selector_parse(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err)
{
    return parse_selector(s, n, true, arena, out, err);
}

int ps_selector_parse_labels(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err)
{
    return parse_selector(s, n, false, arena, out, err);
}

void ps_selector_dispose(ps_selector_t *sel)
{
    if (sel == NULL)
        return;
    for (uint32_t i = 0; i < sel->n; i++)
        ps_matcher_free(&sel->m[i]);
}
