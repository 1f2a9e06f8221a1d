/*
 * selector.c - the parser of the selector language (grammar in selector.h), over the tokens of
 * the re2c lexer in selector.re. Recursive descent with PromQL's precedence, lowest first:
 *
 *   expr    := mul { ("+" | "-") mul }                      left-associative
 *   mul     := unary { ("*" | "/" | "%") unary }            left-associative
 *   unary   := ("+" | "-") unary | pow                      so -2^2 is -(2^2), -1*2 is (-1)*2
 *   pow     := primary [ "^" unary ]                        right-associative: 2^3^2 = 2^9
 *   primary := number | "(" expr ")" | selector | sum
 *   sum     := "sum" [grouping] "(" expr ")" [grouping]     grouping := ("by"|"without") "(" labels ")"
 *
 * Binary arithmetic is between numbers only (ps_expr_is_scalar); unary minus also applies to series
 * (as in PromQL: the values are negated); sum() takes a series expression.
 * The rest of PromQL is recognised well enough to say it is not supported, with the position:
 *   "1:1: rate() is not supported: profstore answers selectors, sum/sum by and number arithmetic"
 * Syntax errors read as Prometheus' do (promql/parser/parse.go, generated_parser.y):
 *   "1:6: parse error: unexpected \"}\" in label matching, expected string"
 * where a token is described as Prometheus' Item.desc(): end of input, identifier "x",
 * metric identifier "a:b", string "\"v\"", number "1", duration "5m", "}" (punctuation),
 * <op:+>, <aggr:sum>, <by> (keywords). Positions are line:column, 1-based, the column in bytes.
 *
 * Memory: the tree, names and values come from the caller's arena; only the compiled regexes
 * (PCRE2) are heap objects. Every selector made is recorded, so a failed parse frees them all.
 * Limits (PS_ETOOBIG): 64 KiB of input, 64 matchers per selector, 1000 selectors per expression,
 * 64 grouping labels, and 64 levels of nesting, counted both as parser recursion (parentheses,
 * unary signs, ^) and as depth of the tree built (so 1+1+...+1 has at most 64 terms): everything
 * that walks the tree recursively (dispose, eval, the engine) can rely on it.
 */
#include "parser/selector.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/labels.h"
#include "parser/labels.h"
#include "parser/selector_int.h"

#define MAX_INPUT (64u * 1024u)
#define MAX_MATCHERS 64u
#define MAX_SELECTORS 1000u
#define MAX_GROUPING 64u
#define MAX_DEPTH 64u

static const char SUPPORTED[] = "profstore answers selectors, sum/sum by and number arithmetic";

/* PromQL's functions (promql/parser/functions.go), to tell "not supported" from "unknown". */
static const char *const functions[] = {
    "abs", "absent", "absent_over_time", "acos", "acosh", "asin", "asinh", "atan", "atanh", "avg_over_time",
    "ceil", "changes", "clamp", "clamp_max", "clamp_min", "cos", "cosh", "count_over_time", "day_of_month",
    "day_of_week", "day_of_year", "days_in_month", "deg", "delta", "deriv", "double_exponential_smoothing", "end",
    "exp", "first_over_time", "floor", "histogram_avg", "histogram_count", "histogram_fraction",
    "histogram_quantile", "histogram_quantiles", "histogram_stddev", "histogram_stdvar", "histogram_sum",
    "holt_winters", "hour", "idelta", "increase", "info", "integral", "irate", "label_join", "label_replace",
    "last_over_time", "ln", "log10", "log2", "mad_over_time", "max_over_time", "min_over_time", "minute", "month",
    "pi", "predict_linear", "present_over_time", "quantile_over_time", "rad", "range", "rate", "resets", "round",
    "scalar", "sgn", "sin", "sinh", "sort", "sort_by_label", "sort_by_label_desc", "sort_desc", "sqrt", "start",
    "stddev_over_time", "stdvar_over_time", "step", "sum_over_time", "tan", "tanh", "time", "timestamp",
    "ts_of_first_over_time", "ts_of_last_over_time", "ts_of_max_over_time", "ts_of_min_over_time", "vector",
    "year",
};

/* An expression node and the depth of the tree under it (private: the API has no field for it). */
typedef struct node {
    ps_expr_t e; /* first: a ps_expr_t * made here is a node_t * */
    uint32_t depth;
} node_t;


/* ---- quoting and token descriptions -------------------------------------------------------- */

static size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
}

void ps_sel_quote(char *out, size_t size, const char *s, size_t n, size_t max)
{
    size_t o = 0, lim = n;
    bool cut = false;
    char esc[8];

    if (size == 0)
        return;
    if (n > max) {
        lim = max;
        while (lim > 0 && ((unsigned char)s[lim] & 0xc0) == 0x80)
            lim--;
        cut = true;
    }
#define PUT(str, len)                                                                                                  \
    do {                                                                                                               \
        size_t l_ = (len);                                                                                             \
        if (o + l_ >= size)                                                                                            \
            goto Full;                                                                                                 \
        memcpy(out + o, (str), l_);                                                                                    \
        o += l_;                                                                                                       \
    } while (0)
    PUT("\"", 1);
    for (size_t i = 0; i < lim;) {
        unsigned char c = (unsigned char)s[i];
        size_t cl = utf8_len(c);
        if (cl > 1 && i + cl <= lim && ps_utf8_valid(s + i, cl)) {
            PUT(s + i, cl);
            i += cl;
            continue;
        }
        i++;
        switch (c) {
        case '\a': PUT("\\a", 2); continue;
        case '\b': PUT("\\b", 2); continue;
        case '\f': PUT("\\f", 2); continue;
        case '\n': PUT("\\n", 2); continue;
        case '\r': PUT("\\r", 2); continue;
        case '\t': PUT("\\t", 2); continue;
        case '\v': PUT("\\v", 2); continue;
        case '\\': PUT("\\\\", 2); continue;
        case '"': PUT("\\\"", 2); continue;
        }
        if (c < 0x20 || c >= 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", c);
            PUT(esc, 4);
        } else {
            PUT((const char *)&c, 1);
        }
    }
    PUT("\"", 1);
    if (cut)
        PUT("...", 3);
#undef PUT
Full:
    out[o] = '\0';
}

const char *ps_psr_text(const ps_psr_t *p, ps_tok_t t) { return p->s + t.pos; }

static const char *aggregator_name(ps_tok_type_t t)
{
    switch (t) {
    case T_SUM: return "sum";
    case T_AVG: return "avg";
    case T_COUNT: return "count";
    case T_MIN: return "min";
    case T_MAX: return "max";
    case T_GROUP: return "group";
    case T_STDDEV: return "stddev";
    case T_STDVAR: return "stdvar";
    case T_TOPK: return "topk";
    case T_BOTTOMK: return "bottomk";
    case T_COUNT_VALUES: return "count_values";
    case T_QUANTILE: return "quantile";
    case T_LIMITK: return "limitk";
    case T_LIMIT_RATIO: return "limit_ratio";
    default: return "?";
    }
}

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
    ps_sel_quote(out, size > 3 ? size - 3 : size, s, k, k);
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
        ps_sel_quote(out, size, ps_psr_text(p, t), t.len, 10);
        return;
    }
    if (kind != NULL) {
        bool ident = t.type == T_IDENT || t.type == T_METRIC_IDENT;
        if (p->promql)
            go_item_quote(q, sizeof(q), ps_psr_text(p, t), t.len, !ident);
        else
            ps_sel_quote(q, sizeof(q), ps_psr_text(p, t), t.len, ident ? 64 : 10);
        snprintf(out, size, "%s %s", kind, q);
    } else if (ps_tok_is_keyword(t.type)) {
        snprintf(out, size, "<%.*s>", len, ps_psr_text(p, t));
    } else if (ps_tok_is_operator(t.type)) {
        snprintf(out, size, "<op:%.*s>", len, ps_psr_text(p, t));
    } else if (ps_tok_is_aggregator(t.type)) {
        snprintf(out, size, "<aggr:%.*s>", len, ps_psr_text(p, t));
    } else {
        ps_sel_quote(out, size, ps_psr_text(p, t), t.len, 10);
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

__attribute__((format(printf, 3, 4))) static void *unsupported(ps_psr_t *p, uint32_t pos, const char *fmt, ...)
{
    char suffix[sizeof(SUPPORTED) + 2];
    va_list ap;
    snprintf(suffix, sizeof(suffix), ": %s", SUPPORTED);
    va_start(ap, fmt);
    failv(p, PS_EINVAL, pos, "", suffix, fmt, ap);
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

/* An expression ended and the current token cannot follow it. */
static void *after_expr(ps_psr_t *p)
{
    ps_tok_t t = p->tok;
    if (ps_tok_is_comparison(t.type))
        return unsupported(p, t.pos, "comparison operator \"%.*s\" is not supported", (int)t.len, ps_psr_text(p, t));
    switch (t.type) {
    case T_LAND: return unsupported(p, t.pos, "set operator \"and\" is not supported");
    case T_LOR: return unsupported(p, t.pos, "set operator \"or\" is not supported");
    case T_LUNLESS: return unsupported(p, t.pos, "set operator \"unless\" is not supported");
    case T_ATAN2: return unsupported(p, t.pos, "operator \"atan2\" is not supported");
    case T_LBRACKET: return unsupported(p, t.pos, "range selectors and subqueries ([...]) are not supported");
    case T_OFFSET: return unsupported(p, t.pos, "the offset modifier is not supported");
    case T_AT: return unsupported(p, t.pos, "the @ modifier is not supported");
    default: return ps_psr_unexpected(p, t, NULL, NULL);
    }
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
        unsigned v = c >= '0' && c <= '9' ? (unsigned)(c - '0')
                     : (c | 0x20) >= 'a' && (c | 0x20) <= 'f' ? (unsigned)((c | 0x20) - 'a' + 10) : 99;
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
            ps_sel_quote(q, qs, s, n, n);
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
        ps_sel_quote(q, qs, s, n, n);
        ps_psr_perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %s: invalid syntax", q);
        return false;
    }
    if (isinf(d)) {
        ps_sel_quote(q, qs, s, n, n);
        ps_psr_perr(p, t.pos, "error parsing number: strconv.ParseFloat: parsing %s: value out of range", q);
        return false;
    }
    *out = d;
    return true;
}

/* ---- nodes --------------------------------------------------------------------------------- */

static uint32_t depth_of(const ps_expr_t *e) { return e ? ((const node_t *)(const void *)e)->depth : 0; }

static ps_expr_t *new_expr(ps_psr_t *p, ps_expr_kind_t kind, uint32_t pos, ps_expr_t *lhs, ps_expr_t *rhs)
{
    uint32_t dl = depth_of(lhs), dr = depth_of(rhs);
    uint32_t depth = 1 + (dl > dr ? dl : dr);
    if (depth > MAX_DEPTH)
        return ps_psr_too_big(p, pos, "expression is too deeply nested (the limit is %u levels)", MAX_DEPTH);
    node_t *nd = ps_arena_calloc(p->arena, 1, sizeof(*nd));
    nd->depth = depth;
    nd->e.kind = kind;
    nd->e.pos = pos;
    nd->e.lhs = lhs;
    nd->e.rhs = rhs;
    return &nd->e;
}

static bool is_function(const char *s, size_t n)
{
    for (size_t i = 0; i < sizeof(functions) / sizeof(functions[0]); i++)
        if (strlen(functions[i]) == n && memcmp(functions[i], s, n) == 0)
            return true;
    return false;
}

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
    } else if (nt.type == T_STRING && !p->promql) {
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
                ps_sel_quote(a, sizeof(a), sel->m[0].value, sel->m[0].vlen, 64);
                ps_sel_quote(b, sizeof(b), sel->m[i].value, sel->m[i].vlen, 64);
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

/* selector := name [ "{" matchers "}" ] | "{" matchers "}"; the current token is the name or "{". */
static ps_expr_t *parse_selector(ps_psr_t *p)
{
    uint32_t pos = p->tok.pos;
    ps_expr_t *e = new_expr(p, PS_EXPR_SELECTOR, pos, NULL, NULL);
    if (e == NULL || !ps_psr_matchers(p, &e->sel, pos, p->tok.type != T_LBRACE))
        return NULL;
    return e;
}

/* ---- expressions --------------------------------------------------------------------------- */

static ps_expr_t *parse_expr(ps_psr_t *p);
static ps_expr_t *parse_unary(ps_psr_t *p);

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
        } else if (t.type == T_STRING && !p->promql) {
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

/* sum := "sum" [grouping] "(" expr ")" [grouping]; the token is "sum". */
static ps_expr_t *parse_sum(ps_psr_t *p)
{
    uint32_t pos = p->tok.pos, nargs = 1;
    ps_psr_grouping_t g = {0};

    ps_psr_advance(p);
    if ((p->tok.type == T_BY || p->tok.type == T_WITHOUT) && !ps_psr_grouping(p, &g))
        return NULL;
    if (p->tok.type != T_LPAREN)
        return ps_psr_unexpected(p, p->tok, "aggregation", "\"(\"");
    ps_psr_advance(p);
    if (p->tok.type == T_RPAREN)
        return ps_psr_perr(p, pos, "no arguments for aggregate expression provided");
    ps_expr_t *arg = parse_expr(p);
    if (arg == NULL)
        return NULL;
    while (p->tok.type == T_COMMA) {
        uint32_t comma = p->tok.pos;
        ps_psr_advance(p);
        if (p->tok.type == T_RPAREN)
            return ps_psr_perr(p, comma, "trailing commas not allowed in function call args");
        if (parse_expr(p) == NULL)
            return NULL;
        nargs++;
    }
    if (p->tok.type != T_RPAREN)
        return after_expr(p);
    ps_psr_advance(p);
    if (nargs != 1)
        return ps_psr_perr(p, pos, "wrong number of arguments for aggregate expression provided, expected 1, got %u", nargs);
    if (ps_expr_is_scalar(arg))
        return ps_psr_perr(p, arg->pos, "expected type instant vector in aggregation expression, got scalar");
    if (!g.grouped && (p->tok.type == T_BY || p->tok.type == T_WITHOUT) && !ps_psr_grouping(p, &g))
        return NULL;
    ps_expr_t *e = new_expr(p, PS_EXPR_SUM, pos, arg, NULL);
    if (e == NULL)
        return NULL;
    e->grouped = g.grouped;
    e->without = g.without;
    e->ngroup = g.n;
    e->group = g.names;
    return e;
}

static ps_expr_t *parse_primary(ps_psr_t *p)
{
    ps_tok_t t = p->tok;
    ps_tok_type_t next;
    ps_expr_t *e;

    switch (t.type) {
    case T_NUMBER: {
        double v;
        if (!ps_psr_number(p, t, &v))
            return NULL;
        if ((e = new_expr(p, PS_EXPR_NUMBER, t.pos, NULL, NULL)) == NULL)
            return NULL;
        e->num = v;
        ps_psr_advance(p);
        break;
    }
    case T_LPAREN:
        ps_psr_advance(p);
        if ((e = parse_expr(p)) == NULL)
            return NULL;
        if (p->tok.type != T_RPAREN)
            return after_expr(p);
        ps_psr_advance(p);
        break;
    case T_LBRACE:
        e = parse_selector(p);
        break;
    case T_STRING:
        return unsupported(p, t.pos, "string literals are not supported");
    case T_IDENT:
        if (ps_psr_peek(p).type == T_LPAREN) {
            char q[80];
            if (is_function(ps_psr_text(p, t), t.len))
                return unsupported(p, t.pos, "%.*s() is not supported", (int)t.len, ps_psr_text(p, t));
            ps_sel_quote(q, sizeof(q), ps_psr_text(p, t), t.len, 64);
            return ps_psr_perr(p, t.pos, "unknown function with name %s", q);
        }
        e = parse_selector(p);
        break;
    default:
        if (ps_tok_is_aggregator(t.type)) {
            next = ps_psr_peek(p).type;
            if (next == T_LPAREN || next == T_BY || next == T_WITHOUT) {
                if (t.type == T_SUM) {
                    e = parse_sum(p);
                    break;
                }
                return unsupported(p, t.pos, "%s() is not supported", aggregator_name(t.type));
            }
        }
        if (!ps_psr_is_metric_word(t.type))
            return ps_psr_unexpected(p, t, NULL, NULL);
        e = parse_selector(p);
        break;
    }
    if (e == NULL)
        return NULL;
    switch (p->tok.type) { /* postfix forms we do not take */
    case T_LBRACKET:
    case T_OFFSET:
    case T_AT: return after_expr(p);
    default: return e;
    }
}

/* After a binary operator: PromQL's bool / on / ignoring / group_left / group_right. */
static bool bin_modifier_ok(ps_psr_t *p)
{
    ps_tok_t t = p->tok;
    if (t.type == T_BOOL) {
        unsupported(p, t.pos, "the bool modifier is not supported");
        return false;
    }
    if (t.type == T_ON || t.type == T_IGNORING || t.type == T_GROUP_LEFT || t.type == T_GROUP_RIGHT) {
        unsupported(p, t.pos, "vector matching (%.*s) is not supported", (int)t.len, ps_psr_text(p, t));
        return false;
    }
    return true;
}

static ps_expr_t *binary(ps_psr_t *p, ps_tok_t op, ps_expr_t *l, ps_expr_t *r)
{
    if (!ps_expr_is_scalar(r))
        return unsupported(p, op.pos, "arithmetic on series is not supported");
    ps_expr_t *e = new_expr(p, PS_EXPR_BINARY, l->pos, l, r);
    if (e != NULL)
        e->op = ps_psr_text(p, op)[0];
    return e;
}

/* The operator token is current and l its left operand: checks l, takes the operator. */
static bool take_operator(ps_psr_t *p, ps_expr_t *l, ps_tok_t *op)
{
    *op = p->tok;
    if (!ps_expr_is_scalar(l)) {
        unsupported(p, op->pos, "arithmetic on series is not supported");
        return false;
    }
    ps_psr_advance(p);
    return bin_modifier_ok(p);
}

static ps_expr_t *parse_pow(ps_psr_t *p)
{
    ps_tok_t op;
    ps_expr_t *l = parse_primary(p), *r;
    if (l == NULL || p->tok.type != T_POW)
        return l;
    if (!take_operator(p, l, &op) || (r = parse_unary(p)) == NULL)
        return NULL;
    return binary(p, op, l, r);
}

static ps_expr_t *parse_unary(ps_psr_t *p)
{
    ps_tok_t t = p->tok;
    ps_expr_t *e;

    if (++p->depth > MAX_DEPTH)
        return ps_psr_too_big(p, t.pos, "expression is too deeply nested (the limit is %u levels)", MAX_DEPTH);
    if (t.type == T_ADD || t.type == T_SUB) {
        ps_psr_advance(p);
        e = parse_unary(p);
        if (e != NULL && t.type == T_SUB) /* on a number or on series (the engine negates values) */
            e = new_expr(p, PS_EXPR_NEG, t.pos, e, NULL);
    } else {
        e = parse_pow(p);
    }
    p->depth--;
    return e;
}

static ps_expr_t *parse_mul(ps_psr_t *p)
{
    ps_tok_t op;
    ps_expr_t *l = parse_unary(p), *r;
    while (l != NULL && (p->tok.type == T_MUL || p->tok.type == T_DIV || p->tok.type == T_MOD)) {
        if (!take_operator(p, l, &op) || (r = parse_unary(p)) == NULL)
            return NULL;
        l = binary(p, op, l, r);
    }
    return l;
}

static ps_expr_t *parse_expr(ps_psr_t *p)
{
    ps_tok_t op;
    ps_expr_t *l = parse_mul(p), *r;
    while (l != NULL && (p->tok.type == T_ADD || p->tok.type == T_SUB)) {
        if (!take_operator(p, l, &op) || (r = parse_mul(p)) == NULL)
            return NULL;
        l = binary(p, op, l, r);
    }
    return l;
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

/* Parses the whole input as an expression; NULL after an error, with every regex freed. */
static ps_expr_t *parse_all(ps_psr_t *p)
{
    ps_expr_t *e = NULL;
    if (p->tok.type == T_EOF) {
        ps_psr_perr(p, 0, "no expression found in input"); /* at 0, as Prometheus */
    } else {
        e = parse_expr(p);
        if (e != NULL && p->tok.type != T_EOF)
            e = after_expr(p);
    }
    if (e == NULL) {
        ps_psr_dispose_all(p);
        if (p->rc == 0) /* cannot happen: every NULL comes with an error */
            p->rc = ps_err_set(p->err, PS_EINTERNAL, "selector parser failed without a message");
    }
    return e;
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

int ps_expr_parse(const char *s, size_t n, ps_arena_t *arena, ps_expr_t **out, ps_err_t *err)
{
    ps_psr_t p;
    int rc;

    *out = NULL;
    if ((rc = check_size(n, err)) != 0)
        return rc;
    ps_psr_init(&p, s, n, arena, err, false);
    ps_expr_t *e = parse_all(&p);
    if (e == NULL)
        return p.rc;
    *out = e;
    return 0;
}

int ps_selector_parse(const char *s, size_t n, ps_arena_t *arena, ps_selector_t *out, ps_err_t *err)
{
    ps_psr_t p;
    int rc;

    out->n = 0;
    out->m = NULL;
    if ((rc = check_size(n, err)) != 0)
        return rc;
    ps_psr_init(&p, s, n, arena, err, false);
    ps_expr_t *e = parse_all(&p);
    if (e == NULL)
        return p.rc;
    if (e->kind != PS_EXPR_SELECTOR) {
        ps_expr_dispose(e);
        ps_psr_perr(&p, e->pos, "expected a series selector, got %s",
             e->kind == PS_EXPR_SUM ? "an aggregation" : "a number expression");
        return p.rc;
    }
    *out = e->sel;
    return 0;
}

void ps_selector_dispose(ps_selector_t *sel)
{
    if (sel == NULL)
        return;
    for (uint32_t i = 0; i < sel->n; i++)
        ps_matcher_free(&sel->m[i]);
}

void ps_expr_dispose(ps_expr_t *e)
{
    if (e == NULL)
        return;
    switch (e->kind) {
    case PS_EXPR_SELECTOR: ps_selector_dispose(&e->sel); break;
    case PS_EXPR_BINARY:
        ps_expr_dispose(e->lhs);
        ps_expr_dispose(e->rhs);
        break;
    case PS_EXPR_NEG:
    case PS_EXPR_SUM: ps_expr_dispose(e->lhs); break;
    case PS_EXPR_NUMBER: break;
    }
}

bool ps_expr_is_scalar(const ps_expr_t *e)
{
    if (e == NULL)
        return false;
    switch (e->kind) {
    case PS_EXPR_NUMBER: return true;
    case PS_EXPR_NEG: return ps_expr_is_scalar(e->lhs);
    case PS_EXPR_BINARY: return ps_expr_is_scalar(e->lhs) && ps_expr_is_scalar(e->rhs);
    default: return false;
    }
}

double ps_expr_eval_scalar(const ps_expr_t *e)
{
    if (e == NULL)
        return NAN;
    switch (e->kind) {
    case PS_EXPR_NUMBER: return e->num;
    case PS_EXPR_NEG: return -ps_expr_eval_scalar(e->lhs);
    case PS_EXPR_BINARY: {
        double a = ps_expr_eval_scalar(e->lhs), b = ps_expr_eval_scalar(e->rhs);
        switch (e->op) {
        case '+': return a + b;
        case '-': return a - b;
        case '*': return a * b;
        case '/': return a / b; /* IEEE 754: x/0 = ±Inf, 0/0 = NaN, as Go */
        case '%': return fmod(a, b); /* Go's math.Mod */
        case '^': return pow(a, b);  /* Go's math.Pow */
        }
        return NAN;
    }
    default: return NAN;
    }
}
