/*
 * promql.c - the PromQL parser of Prometheus 2.42 (API and tree in promql.h), over the tokens of
 * the re2c lexer in selector.re and the selector machinery of selector.c (selector_int.h).
 *
 * Grammar (EBNF; what generated_parser.y accepts, written for recursive descent with precedence
 * climbing). Binary operators, lowest precedence first, all left-associative but "^":
 *   1 "or"   2 "and" "unless"   3 "==" "!=" "<" "<=" ">" ">="   4 "+" "-"   5 "*" "/" "%" "atan2"
 *   6 "^" (right-associative). A unary sign binds like "*": -a^b is -(a^b), -a*b is (-a)*b.
 *   The postfix forms ([range], [range:step], offset, @) bind tighter than anything.
 *
 *   expr        = unary { binop bin_mod expr }            (precedence climbing, see above)
 *   bin_mod     = [ "bool" ] [ ( "on" | "ignoring" ) labels [ ( "group_left" | "group_right" ) [ labels ] ] ]
 *   unary       = ( "+" | "-" ) expr_pow | postfix        (expr_pow: an expr of operators "^" only)
 *   postfix     = primary { "[" duration "]" | "[" duration ":" [ duration ] "]"
 *                         | "offset" [ "-" ] duration | "@" ( [ "+" | "-" ] number | ( "start" | "end" ) "(" ")" )
 *                         | "anchored" | "smoothed" }       (the last two Prometheus 3.16's, on selectors only)
 *   primary     = number | string | "(" expr ")" | selector | call | aggregation
 *   call        = identifier "(" [ expr { "," expr } ] ")"      (identifier a function of the table)
 *   aggregation = aggr_op [ grouping ] "(" [ expr { "," expr } ] ")" [ grouping ]     (grouping once)
 *   grouping    = ( "by" | "without" ) labels
 *   labels      = "(" [ label { "," label } [ "," ] ] ")"     (a label may be a keyword: by, on, sum ...)
 *   selector    = metric_name [ "{" [ matcher { "," matcher } [ "," ] ] "}" ] | "{" matchers "}"
 *   matcher     = label ( "=" | "!=" | "=~" | "!~" ) string
 *   metric_name = identifier | metric_identifier | aggr_op | "by" | "without" | "offset" | "and" | "or" | "unless"
 *   aggr_op     = "sum" | "avg" | "count" | "min" | "max" | "group" | "stddev" | "stdvar" | "topk"
 *               | "bottomk" | "count_values" | "quantile"
 *   number      = decimal | hex | octal | float | "Inf" | "NaN"  (strconv.ParseInt(s, 0, 64), else ParseFloat)
 *   duration    = { digits ( "y" | "w" | "d" | "h" | "m" | "s" | "ms" ) }   (model.ParseDuration: units
 *                 in that order, each at most once; > 0)
 *
 * Then the tree is checked as Prometheus' checkAST (parse.go) does: operand types of binary
 * operators, "bool" only on comparisons, set operators only between vectors and many-to-many,
 * grouping labels, argument counts and types of calls, aggregation parameter types. The first
 * error found is reported, in Prometheus' words and position ("1:6: parse error: ...").
 *
 * Limits (ps_pq_limits_t) are checked while parsing: input bytes, nodes, and depth (counted both
 * as recursion of the parser and as depth of the tree, so every recursive walk of a tree that
 * parsed is bounded). Exceeding one is a PS_ETOOBIG.
 *
 * Printing (ps_pq_format) is printer.go's String(); ps_pq_pretty is prettier.go's Pretty(level),
 * which is what Prometheus 2.42's /api/v1/format_query answers (String() when it fits in 100 bytes).
 */
#include "parser/promql.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "core/labels.h"
#include "parser/selector_int.h"

#define MAX_LINE 100 /* prettier.go's maxCharactersPerLine */
#define MAX_DURATION_MS ((uint64_t)INT64_MAX / 1000000u)

/* ---- the function table (functions.go of Prometheus 2.42) ---------------------------------- */

#define V PS_PQ_VVECTOR
#define M PS_PQ_VMATRIX
#define S PS_PQ_VSCALAR
#define STR PS_PQ_VSTRING
#define B (PS_PQ_IN_2 | PS_PQ_IN_3)
#define IN2 PS_PQ_IN_2
#define IN3 PS_PQ_IN_3
#define IN3X (PS_PQ_IN_3 | PS_PQ_EXPERIMENTAL)
/* holt_winters is 2.42's; Prometheus 3 renamed it double_exponential_smoothing (the same function,
 * experimental) */
static const ps_pq_func_t funcs[] = {
    {"abs", PS_FN_ABS, 1, {V}, 0, V, B},
    {"absent", PS_FN_ABSENT, 1, {V}, 0, V, B},
    {"absent_over_time", PS_FN_ABSENT_OVER_TIME, 1, {M}, 0, V, B},
    {"acos", PS_FN_ACOS, 1, {V}, 0, V, B},
    {"acosh", PS_FN_ACOSH, 1, {V}, 0, V, B},
    {"asin", PS_FN_ASIN, 1, {V}, 0, V, B},
    {"asinh", PS_FN_ASINH, 1, {V}, 0, V, B},
    {"atan", PS_FN_ATAN, 1, {V}, 0, V, B},
    {"atanh", PS_FN_ATANH, 1, {V}, 0, V, B},
    {"avg_over_time", PS_FN_AVG_OVER_TIME, 1, {M}, 0, V, B},
    {"ceil", PS_FN_CEIL, 1, {V}, 0, V, B},
    {"changes", PS_FN_CHANGES, 1, {M}, 0, V, B},
    {"clamp", PS_FN_CLAMP, 3, {V, S, S}, 0, V, B},
    {"clamp_max", PS_FN_CLAMP_MAX, 2, {V, S}, 0, V, B},
    {"clamp_min", PS_FN_CLAMP_MIN, 2, {V, S}, 0, V, B},
    {"cos", PS_FN_COS, 1, {V}, 0, V, B},
    {"cosh", PS_FN_COSH, 1, {V}, 0, V, B},
    {"count_over_time", PS_FN_COUNT_OVER_TIME, 1, {M}, 0, V, B},
    {"days_in_month", PS_FN_DAYS_IN_MONTH, 1, {V}, 1, V, B},
    {"day_of_month", PS_FN_DAY_OF_MONTH, 1, {V}, 1, V, B},
    {"day_of_week", PS_FN_DAY_OF_WEEK, 1, {V}, 1, V, B},
    {"day_of_year", PS_FN_DAY_OF_YEAR, 1, {V}, 1, V, B},
    {"deg", PS_FN_DEG, 1, {V}, 0, V, B},
    {"delta", PS_FN_DELTA, 1, {M}, 0, V, B},
    {"deriv", PS_FN_DERIV, 1, {M}, 0, V, B},
    {"double_exponential_smoothing", PS_FN_HOLT_WINTERS, 3, {M, S, S}, 0, V, IN3X},
    {"exp", PS_FN_EXP, 1, {V}, 0, V, B},
    {"first_over_time", PS_FN_FIRST_OVER_TIME, 1, {M}, 0, V, IN3},
    {"floor", PS_FN_FLOOR, 1, {V}, 0, V, B},
    {"histogram_avg", PS_FN_HISTOGRAM_AVG, 1, {V}, 0, V, IN3},
    {"histogram_count", PS_FN_HISTOGRAM_COUNT, 1, {V}, 0, V, B},
    {"histogram_stddev", PS_FN_HISTOGRAM_STDDEV, 1, {V}, 0, V, IN3},
    {"histogram_stdvar", PS_FN_HISTOGRAM_STDVAR, 1, {V}, 0, V, IN3},
    {"histogram_sum", PS_FN_HISTOGRAM_SUM, 1, {V}, 0, V, B},
    {"histogram_fraction", PS_FN_HISTOGRAM_FRACTION, 3, {S, S, V}, 0, V, B},
    {"histogram_quantile", PS_FN_HISTOGRAM_QUANTILE, 2, {S, V}, 0, V, B},
    {"holt_winters", PS_FN_HOLT_WINTERS, 3, {M, S, S}, 0, V, IN2},
    {"hour", PS_FN_HOUR, 1, {V}, 1, V, B},
    {"idelta", PS_FN_IDELTA, 1, {M}, 0, V, B},
    {"increase", PS_FN_INCREASE, 1, {M}, 0, V, B},
    {"irate", PS_FN_IRATE, 1, {M}, 0, V, B},
    {"label_replace", PS_FN_LABEL_REPLACE, 5, {V, STR, STR, STR, STR}, 0, V, B},
    {"label_join", PS_FN_LABEL_JOIN, 4, {V, STR, STR, STR}, -1, V, B},
    {"last_over_time", PS_FN_LAST_OVER_TIME, 1, {M}, 0, V, B},
    {"ln", PS_FN_LN, 1, {V}, 0, V, B},
    {"log10", PS_FN_LOG10, 1, {V}, 0, V, B},
    {"log2", PS_FN_LOG2, 1, {V}, 0, V, B},
    {"mad_over_time", PS_FN_MAD_OVER_TIME, 1, {M}, 0, V, IN3X},
    {"max_over_time", PS_FN_MAX_OVER_TIME, 1, {M}, 0, V, B},
    {"min_over_time", PS_FN_MIN_OVER_TIME, 1, {M}, 0, V, B},
    {"minute", PS_FN_MINUTE, 1, {V}, 1, V, B},
    {"month", PS_FN_MONTH, 1, {V}, 1, V, B},
    {"pi", PS_FN_PI, 0, {0}, 0, S, B},
    {"predict_linear", PS_FN_PREDICT_LINEAR, 2, {M, S}, 0, V, B},
    {"present_over_time", PS_FN_PRESENT_OVER_TIME, 1, {M}, 0, V, B},
    {"quantile_over_time", PS_FN_QUANTILE_OVER_TIME, 2, {S, M}, 0, V, B},
    {"rad", PS_FN_RAD, 1, {V}, 0, V, B},
    {"rate", PS_FN_RATE, 1, {M}, 0, V, B},
    {"resets", PS_FN_RESETS, 1, {M}, 0, V, B},
    {"round", PS_FN_ROUND, 2, {V, S}, 1, V, B},
    {"scalar", PS_FN_SCALAR, 1, {V}, 0, S, B},
    {"sgn", PS_FN_SGN, 1, {V}, 0, V, B},
    {"sin", PS_FN_SIN, 1, {V}, 0, V, B},
    {"sinh", PS_FN_SINH, 1, {V}, 0, V, B},
    {"sort", PS_FN_SORT, 1, {V}, 0, V, B},
    {"sort_desc", PS_FN_SORT_DESC, 1, {V}, 0, V, B},
    {"start", PS_FN_START, 0, {0}, 0, S, IN3X},
    {"end", PS_FN_END, 0, {0}, 0, S, IN3X},
    {"range", PS_FN_RANGE, 0, {0}, 0, S, IN3X},
    {"step", PS_FN_STEP, 0, {0}, 0, S, IN3X},
    {"sort_by_label", PS_FN_SORT_BY_LABEL, 2, {V, STR}, -1, V, IN3X},
    {"sort_by_label_desc", PS_FN_SORT_BY_LABEL_DESC, 2, {V, STR}, -1, V, IN3X},
    {"sqrt", PS_FN_SQRT, 1, {V}, 0, V, B},
    {"stddev_over_time", PS_FN_STDDEV_OVER_TIME, 1, {M}, 0, V, B},
    {"stdvar_over_time", PS_FN_STDVAR_OVER_TIME, 1, {M}, 0, V, B},
    {"sum_over_time", PS_FN_SUM_OVER_TIME, 1, {M}, 0, V, B},
    {"tan", PS_FN_TAN, 1, {V}, 0, V, B},
    {"tanh", PS_FN_TANH, 1, {V}, 0, V, B},
    {"time", PS_FN_TIME, 0, {0}, 0, S, B},
    {"timestamp", PS_FN_TIMESTAMP, 1, {V}, 0, V, B},
    {"ts_of_first_over_time", PS_FN_TS_OF_FIRST_OVER_TIME, 1, {M}, 0, V, IN3X},
    {"ts_of_last_over_time", PS_FN_TS_OF_LAST_OVER_TIME, 1, {M}, 0, V, IN3X},
    {"ts_of_max_over_time", PS_FN_TS_OF_MAX_OVER_TIME, 1, {M}, 0, V, IN3X},
    {"ts_of_min_over_time", PS_FN_TS_OF_MIN_OVER_TIME, 1, {M}, 0, V, IN3X},
    {"vector", PS_FN_VECTOR, 1, {S}, 0, V, B},
    {"year", PS_FN_YEAR, 1, {V}, 1, V, B},
};
#undef V
#undef M
#undef S
#undef STR
#undef B
#undef IN2
#undef IN3
#undef IN3X

const ps_pq_func_t *ps_pq_func_lookup(const char *name, size_t n)
{
    for (size_t i = 0; i < sizeof(funcs) / sizeof(funcs[0]); i++)
        if (strlen(funcs[i].name) == n && memcmp(funcs[i].name, name, n) == 0)
            return &funcs[i];
    return NULL;
}

/* ---- names --------------------------------------------------------------------------------- */

const char *ps_pq_binop_name(ps_pq_binop_t op)
{
    static const char *const names[] = {"or", "and", "unless", "==", "!=", "<", "<=", ">",
                                        ">=", "+",   "-",      "*",  "/",  "%", "atan2", "^"};
    return (unsigned)op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

const char *ps_pq_aggop_name(ps_pq_aggop_t op)
{
    static const char *const names[] = {"sum",  "avg",  "count", "min",     "max",          "group",
                                        "stddev", "stdvar", "topk", "bottomk", "count_values", "quantile"};
    return (unsigned)op < sizeof(names) / sizeof(names[0]) ? names[op] : "?";
}

const char *ps_pq_vtype_name(ps_pq_vtype_t t)
{
    switch (t) {
    case PS_PQ_VSCALAR: return "scalar";
    case PS_PQ_VVECTOR: return "instant vector";
    case PS_PQ_VMATRIX: return "range vector";
    case PS_PQ_VSTRING: return "string";
    default: return "none";
    }
}

/* parser.ValueType's own String(), used by one message ("got matrix instead"). */
static const char *vtype_raw(ps_pq_vtype_t t)
{
    switch (t) {
    case PS_PQ_VSCALAR: return "scalar";
    case PS_PQ_VVECTOR: return "vector";
    case PS_PQ_VMATRIX: return "matrix";
    case PS_PQ_VSTRING: return "string";
    default: return "none";
    }
}

void ps_pq_limits_default(ps_pq_limits_t *l)
{
    l->max_input = 64u * 1024u;
    l->max_depth = 128;
    l->max_nodes = 10000;
    l->compat = 3;
    l->experimental = false;
}

/* ---- parser state -------------------------------------------------------------------------- */

/* A node with what only the parser needs: the depth of its subtree and, for a binary
 * expression, where its operator is (checkAST's opRange). */
typedef struct pnode {
    ps_pq_node_t n; /* first: a ps_pq_node_t * made here is a pnode_t * */
    uint32_t depth;
    uint32_t op_pos;
} pnode_t;

typedef struct pq {
    ps_psr_t p;
    ps_pq_limits_t lim;
    uint32_t nodes;
    uint32_t in_agg; /* inside the arguments of this many aggregations */
    const char *dur_ctx, *dur_want; /* what a token that cannot start a duration is unexpected in, and what
                                       was expected there */
} pq_t;

static uint32_t depth_of(const ps_pq_node_t *e) { return e ? ((const pnode_t *)(const void *)e)->depth : 0; }

static ps_pq_node_t *new_node(pq_t *q, ps_pq_kind_t kind, uint32_t pos, ps_pq_node_t *a, ps_pq_node_t *b)
{
    uint32_t da = depth_of(a), db = depth_of(b), depth = 1 + (da > db ? da : db);
    if (depth > q->lim.max_depth)
        return ps_psr_too_big(&q->p, pos, "expression is too deeply nested (the limit is %" PRIu32 " levels)",
                              q->lim.max_depth);
    if (++q->nodes > q->lim.max_nodes)
        return ps_psr_too_big(&q->p, pos, "expression has too many nodes (the limit is %" PRIu32 ")",
                              q->lim.max_nodes);
    pnode_t *pn = ps_arena_calloc(q->p.arena, 1, sizeof(*pn));
    pn->depth = depth;
    pn->n.kind = kind;
    pn->n.pos = pos;
    return &pn->n;
}

/* Depth of a node whose children were set after it was made (calls, aggregations). */
static bool set_depth(pq_t *q, ps_pq_node_t *e, ps_pq_node_t **kids, uint32_t n)
{
    uint32_t d = 0;
    for (uint32_t i = 0; i < n; i++)
        if (depth_of(kids[i]) > d)
            d = depth_of(kids[i]);
    if (d + 1 > q->lim.max_depth) {
        ps_psr_too_big(&q->p, e->pos, "expression is too deeply nested (the limit is %" PRIu32 " levels)",
                       q->lim.max_depth);
        return false;
    }
    ((pnode_t *)(void *)e)->depth = d + 1;
    return true;
}

static bool enter(pq_t *q)
{
    if (++q->p.depth > q->lim.max_depth) {
        ps_psr_too_big(&q->p, q->p.tok.pos, "expression is too deeply nested (the limit is %" PRIu32 " levels)",
                       q->lim.max_depth);
        return false;
    }
    return true;
}

static const char *tok_text(pq_t *q, ps_tok_t t) { return ps_psr_text(&q->p, t); }

/* A token that cannot be where it is. Prometheus' parser recovers from a syntax error at the
 * innermost rule with an error case: inside an aggregation's arguments, however deep, that is
 * the aggregation ("unexpected identifier \"b\" in aggregation"), else the whole input. */
static void *syntax_error(pq_t *q, ps_tok_t t)
{
    return ps_psr_unexpected(&q->p, t, q->in_agg > 0 ? "aggregation" : NULL, NULL);
}

/* ---- durations (model.ParseDuration) ------------------------------------------------------- */

/* Parses "1h30m" into milliseconds: units y w d h m s ms, in that order, each at most once; 0 only
 * when zero_ok (Prometheus 3 checks the sign where the duration is used). */
static bool parse_duration_z(pq_t *q, ps_tok_t t, int64_t *out, bool zero_ok)
{
    static const struct {
        const char *unit;
        uint64_t ms;
    } units[] = {{"y", 365ull * 86400000}, {"w", 7ull * 86400000}, {"d", 86400000}, {"h", 3600000},
                 {"m", 60000},             {"s", 1000},            {"ms", 1}};
    const char *s = tok_text(q, t);
    size_t i = 0, n = t.len, u = 0;
    uint64_t total = 0;
    char shown[80];

    while (i < n) {
        uint64_t v = 0;
        bool over = false;
        size_t d0 = i;
        while (i < n && s[i] >= '0' && s[i] <= '9') {
            if (v > (UINT64_MAX - 9) / 10)
                over = true;
            v = v * 10 + (uint64_t)(s[i] - '0');
            i++;
        }
        size_t ul = (i + 1 < n && s[i] == 'm' && s[i + 1] == 's') ? 2 : 1;
        while (u < sizeof(units) / sizeof(units[0]) &&
               !(strlen(units[u].unit) == ul && memcmp(units[u].unit, s + i, ul) == 0))
            u++;
        if (i == d0 || i >= n || u == sizeof(units) / sizeof(units[0])) {
            ps_quote_string(shown, sizeof(shown), s, n, 40);
            ps_psr_perr(&q->p, t.pos, "not a valid duration string: %s", shown);
            return false;
        }
        /* a time.Duration counts nanoseconds: at most 2^63-1 ns, some 292 years */
        if (over || v > MAX_DURATION_MS / units[u].ms || total + v * units[u].ms > MAX_DURATION_MS) {
            ps_psr_perr(&q->p, t.pos, "duration out of range");
            return false;
        }
        total += v * units[u].ms;
        i += ul;
        u++;
    }
    if (total == 0 && !zero_ok) {
        ps_psr_perr(&q->p, t.pos, "duration must be greater than 0");
        return false;
    }
    *out = (int64_t)total;
    return true;
}

static bool parse_duration(pq_t *q, ps_tok_t t, int64_t *out) { return parse_duration_z(q, t, out, false); }

/* ---- expressions --------------------------------------------------------------------------- */

static ps_pq_node_t *parse_expr(pq_t *q, int min_prec);

static int binop_of(ps_tok_type_t t, ps_pq_binop_t *op)
{
    switch (t) {
    case T_LOR: *op = PS_PQ_OR; return 1;
    case T_LAND: *op = PS_PQ_AND; return 2;
    case T_LUNLESS: *op = PS_PQ_UNLESS; return 2;
    case T_EQLC: *op = PS_PQ_EQLC; return 3;
    case T_NEQ: *op = PS_PQ_NEQ; return 3;
    case T_LSS: *op = PS_PQ_LSS; return 3;
    case T_LTE: *op = PS_PQ_LTE; return 3;
    case T_GTR: *op = PS_PQ_GTR; return 3;
    case T_GTE: *op = PS_PQ_GTE; return 3;
    case T_ADD: *op = PS_PQ_ADD; return 4;
    case T_SUB: *op = PS_PQ_SUB; return 4;
    case T_MUL: *op = PS_PQ_MUL; return 5;
    case T_DIV: *op = PS_PQ_DIV; return 5;
    case T_MOD: *op = PS_PQ_MOD; return 5;
    case T_ATAN2: *op = PS_PQ_ATAN2; return 5;
    case T_POW: *op = PS_PQ_POW; return 6;
    default: return 0;
    }
}
#define PREC_POW 6

static bool is_aggr(ps_tok_type_t t) { return t >= T_SUM && t <= T_QUANTILE; }

static ps_pq_aggop_t aggop_of(ps_tok_type_t t)
{
    switch (t) {
    case T_AVG: return PS_PQ_AVG;
    case T_COUNT: return PS_PQ_COUNT;
    case T_MIN: return PS_PQ_MIN;
    case T_MAX: return PS_PQ_MAX;
    case T_GROUP: return PS_PQ_GROUP;
    case T_STDDEV: return PS_PQ_STDDEV;
    case T_STDVAR: return PS_PQ_STDVAR;
    case T_TOPK: return PS_PQ_TOPK;
    case T_BOTTOMK: return PS_PQ_BOTTOMK;
    case T_COUNT_VALUES: return PS_PQ_COUNT_VALUES;
    case T_QUANTILE: return PS_PQ_QUANTILE;
    default: return PS_PQ_SUM;
    }
}

static bool has_param(ps_pq_aggop_t op)
{
    return op == PS_PQ_TOPK || op == PS_PQ_BOTTOMK || op == PS_PQ_COUNT_VALUES || op == PS_PQ_QUANTILE;
}

/* An identifier token: limitk and limit_ratio are Prometheus 3 words, names in 2.42. */
static bool is_ident(ps_tok_type_t t) { return t == T_IDENT || t == T_LIMITK || t == T_LIMIT_RATIO; }

/* The identifier word, in any case (start and end are keywords, and PromQL's keywords are). */
static bool tok_is(pq_t *q, ps_tok_t t, const char *word)
{
    return is_ident(t.type) && t.len == strlen(word) && strncasecmp(tok_text(q, t), word, t.len) == 0;
}

/* Whether an expression can start with the token. */
static bool starts_expr(ps_tok_type_t t)
{
    return t == T_NUMBER || t == T_STRING || t == T_LPAREN || t == T_LBRACE || t == T_ADD || t == T_SUB ||
           ps_psr_is_metric_word(t);
}

/* The argument list of a call or an aggregation; the current token is "(". */
static bool parse_args(pq_t *q, ps_pq_node_t ***out, uint32_t *nout)
{
    ps_psr_t *p = &q->p;
    ps_pq_node_t **args = NULL;
    uint32_t n = 0, cap = 0;

    ps_psr_advance(p); /* "(" */
    if (p->tok.type != T_RPAREN) {
        for (;;) {
            ps_pq_node_t *a = parse_expr(q, 0);
            if (a == NULL)
                return false;
            if (n == cap) {
                uint32_t ncap = cap ? cap * 2 : 4;
                ps_pq_node_t **na = ps_arena_alloc(p->arena, ncap * sizeof(*na));
                if (n)
                    memcpy(na, args, n * sizeof(*na));
                args = na;
                cap = ncap;
            }
            args[n++] = a;
            if (p->tok.type == T_COMMA) {
                uint32_t comma = p->tok.pos;
                ps_psr_advance(p);
                /* generated_parser.y takes "args ," when no expression follows: ")" or anything else */
                if (p->tok.type != T_ERROR && !starts_expr(p->tok.type) && !(p->tok.type == T_DURATION && q->lim.compat != 2)) {
                    ps_psr_perr(p, comma, "trailing commas not allowed in function call args");
                    return false;
                }
                continue;
            }
            if (p->tok.type == T_RPAREN)
                break;
            syntax_error(q, p->tok);
            return false;
        }
    }
    ps_psr_advance(p); /* ")" */
    *out = args;
    *nout = n;
    return true;
}

static ps_pq_node_t *parse_call(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t name = p->tok;
    ps_pq_node_t **args;
    uint32_t nargs;

    ps_psr_advance(p);
    if (!parse_args(q, &args, &nargs))
        return NULL;
    const ps_pq_func_t *f = ps_pq_func_lookup(tok_text(q, name), name.len);
    if (f != NULL && !(f->avail & (q->lim.compat == 2 ? PS_PQ_IN_2 : PS_PQ_IN_3)))
        f = NULL;
    if (f != NULL && q->lim.compat != 2 && (f->avail & PS_PQ_EXPERIMENTAL) && !q->lim.experimental) {
        char shown[96];
        ps_quote_string(shown, sizeof(shown), tok_text(q, name), name.len, 64);
        return ps_psr_perr(p, name.pos, "function %s is not enabled", shown);
    }
    if (f == NULL) {
        char shown[96];
        ps_quote_string(shown, sizeof(shown), tok_text(q, name), name.len, 64);
        return ps_psr_perr(p, name.pos, "unknown function with name %s", shown);
    }
    ps_pq_node_t *e = new_node(q, PS_PQ_CALL, name.pos, NULL, NULL);
    if (e == NULL || !set_depth(q, e, args, nargs))
        return NULL;
    e->func = f;
    e->args = args;
    e->nargs = nargs;
    e->type = f->ret;
    e->end = p->last_end;
    return e;
}

static ps_pq_node_t *parse_aggregation(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t op = p->tok;
    ps_psr_grouping_t g = {0};
    ps_pq_node_t **args;
    uint32_t nargs;

    ps_psr_advance(p);
    if ((p->tok.type == T_BY || p->tok.type == T_WITHOUT) && !ps_psr_grouping(p, &g))
        return NULL;
    if (p->tok.type != T_LPAREN)
        return ps_psr_unexpected(p, p->tok, "aggregation", NULL);
    q->in_agg++;
    bool ok = parse_args(q, &args, &nargs);
    q->in_agg--;
    if (!ok)
        return NULL;
    if (!g.grouped) {
        /* Prometheus' parser reads the token after ")" to see whether a grouping follows, so a
         * lexer error there comes before what it finds wrong with the arguments */
        if (p->tok.type == T_ERROR)
            return ps_psr_unexpected(p, p->tok, NULL, NULL);
        if ((p->tok.type == T_BY || p->tok.type == T_WITHOUT) && !ps_psr_grouping(p, &g))
            return NULL;
    }

    ps_pq_aggop_t aop = aggop_of(op.type);
    uint32_t want = has_param(aop) ? 2 : 1;
    if (nargs == 0)
        return ps_psr_perr(p, op.pos, "no arguments for aggregate expression provided");
    if (nargs != want)
        return ps_psr_perr(p, op.pos,
                           "wrong number of arguments for aggregate expression provided, expected %u, got %u", want,
                           nargs);
    ps_pq_node_t *e = new_node(q, PS_PQ_AGG, op.pos, NULL, NULL);
    if (e == NULL || !set_depth(q, e, args, nargs))
        return NULL;
    e->aggop = aop;
    e->type = PS_PQ_VVECTOR;
    e->param = want == 2 ? args[0] : NULL;
    e->expr = args[want - 1];
    e->grouped = g.grouped;
    e->without = g.without;
    e->ngroup = g.n;
    e->group = g.names;
    e->end = p->last_end;
    return e;
}

static ps_pq_node_t *parse_selector(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t t = p->tok;
    bool named = t.type != T_LBRACE;
    ps_pq_node_t *e = new_node(q, PS_PQ_VECTOR, t.pos, NULL, NULL);

    if (e == NULL || !ps_psr_matchers(p, &e->sel, t.pos, named))
        return NULL;
    e->type = PS_PQ_VVECTOR;
    if (named)
        e->name = e->sel.m[0].value;
    e->end = p->last_end;
    return e;
}

/* ---- Prometheus 3's duration expressions (generated_parser.y's duration_expr) ----------------- */

/* 1<<63 nanoseconds, in seconds: parse.go's durationLiteralOutOfRange */
#define DUR_MAX_SECONDS 9223372036.854775808

/* A number or a duration literal as a NUMBER node in seconds (number_duration_literal). */
static ps_pq_node_t *dur_literal(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t t = p->tok;
    double v;
    bool isdur = t.type == T_DURATION;
    if (isdur) {
        int64_t ms;
        if (!parse_duration_z(q, t, &ms, true))
            return NULL;
        v = (double)ms / 1000.0;
    } else if (!ps_psr_number(p, t, &v)) {
        return NULL;
    }
    ps_pq_node_t *e = new_node(q, PS_PQ_NUMBER, t.pos, NULL, NULL);
    if (e == NULL)
        return NULL;
    e->num = v;
    e->duration = isdur;
    e->type = PS_PQ_VSCALAR;
    e->end = t.pos + t.len;
    ps_psr_advance(p);
    return e;
}

static ps_pq_node_t *dur_node(pq_t *q, ps_pq_durop_t op, uint32_t pos, ps_pq_node_t *lhs, ps_pq_node_t *rhs)
{
    ps_pq_node_t *e = new_node(q, PS_PQ_DURATION, pos, lhs, rhs);
    if (e == NULL)
        return NULL;
    e->dur_op = op;
    e->lhs = lhs;
    e->rhs = rhs;
    e->type = PS_PQ_VSCALAR;
    e->end = rhs ? rhs->end : pos;
    return e;
}

static ps_pq_node_t *dur_expr(pq_t *q, int min_prec);

/* "(" duration ")": the node marked wrapped (a bare number is wrapped in a unary plus, as
 * parse.go's wrapParenDurationExpr does); the current token is "(". */
static ps_pq_node_t *dur_paren(pq_t *q)
{
    ps_psr_t *p = &q->p;
    uint32_t lp = p->tok.pos;
    ps_psr_advance(p);
    ps_pq_node_t *in = dur_expr(q, 0);
    if (in == NULL)
        return NULL;
    if (p->tok.type != T_RPAREN)
        return ps_psr_unexpected(p, p->tok, q->dur_ctx, q->dur_want);
    uint32_t end = p->tok.pos + 1;
    ps_psr_advance(p);
    if (in->kind != PS_PQ_DURATION && (in = dur_node(q, PS_PQ_DUR_PLUS, lp, NULL, in)) == NULL)
        return NULL;
    in->wrapped = true;
    if (in->dur_op == PS_PQ_DUR_PLUS) { /* its position runs from "(" to the literal's end, as Prometheus' */
        in->pos = lp;
        in->end = in->rhs->end;
    }
    (void)end;
    return in;
}

/* step(), range(), min_of(a, b), max_of(a, b), "(" duration ")", or a literal. */
static ps_pq_node_t *dur_atom(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t t = p->tok;
    if (t.type == T_NUMBER || t.type == T_DURATION)
        return dur_literal(q);
    if (t.type == T_LPAREN)
        return dur_paren(q);
    if (is_ident(t.type) && ps_psr_peek(p).type == T_LPAREN) {
        bool step = tok_is(q, t, "step"), range = tok_is(q, t, "range");
        bool mn = tok_is(q, t, "min_of"), mx = tok_is(q, t, "max_of");
        if (step || range) {
            ps_psr_advance(p);
            ps_psr_advance(p);
            if (p->tok.type != T_RPAREN)
                return ps_psr_unexpected(p, p->tok, q->dur_ctx, q->dur_want);
            ps_pq_node_t *e = dur_node(q, step ? PS_PQ_DUR_STEP : PS_PQ_DUR_RANGE, t.pos, NULL, NULL);
            if (e != NULL)
                e->end = p->tok.pos + 1;
            ps_psr_advance(p);
            return e;
        }
        if (mn || mx) {
            ps_psr_advance(p);
            ps_psr_advance(p);
            ps_pq_node_t *a = dur_expr(q, 0);
            if (a == NULL)
                return NULL;
            if (p->tok.type != T_COMMA)
                return ps_psr_unexpected(p, p->tok, q->dur_ctx, q->dur_want);
            ps_psr_advance(p);
            ps_pq_node_t *b = dur_expr(q, 0);
            if (b == NULL)
                return NULL;
            if (p->tok.type != T_RPAREN)
                return ps_psr_unexpected(p, p->tok, q->dur_ctx, q->dur_want);
            ps_pq_node_t *e = dur_node(q, mn ? PS_PQ_DUR_MIN_OF : PS_PQ_DUR_MAX_OF, t.pos, a, b);
            if (e != NULL)
                e->end = p->tok.pos + 1;
            ps_psr_advance(p);
            return e;
        }
    }
    return ps_psr_unexpected(p, t, q->dur_ctx, q->dur_want);
}

/* A sign before a duration (parse.go's applyUnaryOpToDurationExpr): folded into a literal, else a
 * NEG node (a '+' keeps the operand). */
static ps_pq_node_t *dur_sign(pq_t *q, ps_tok_t op, ps_pq_node_t *in)
{
    if (in == NULL)
        return NULL;
    if (in->kind == PS_PQ_NUMBER) {
        if (op.type == T_SUB)
            in->num = -in->num;
        if (in->num > DUR_MAX_SECONDS || in->num < -DUR_MAX_SECONDS)
            return ps_psr_perr(&q->p, op.pos, "duration out of range");
        in->pos = op.pos;
        return in;
    }
    if (op.type == T_ADD)
        return in;
    ps_pq_node_t *e = dur_node(q, PS_PQ_DUR_NEG, op.pos, NULL, in);
    if (e != NULL)
        e->end = in->end;
    return e;
}

static ps_pq_node_t *dur_unary(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_pq_node_t *e;
    if (!enter(q))
        return NULL;
    if (p->tok.type == T_ADD || p->tok.type == T_SUB) {
        ps_tok_t op = p->tok;
        ps_psr_advance(p);
        e = dur_sign(q, op, dur_expr(q, PREC_POW));
    } else {
        e = dur_atom(q);
    }
    q->p.depth--;
    return e;
}

/* duration_expr: + - below * / % below ^ (right-associative), a sign binding like *; a literal out
 * of a time.Duration's range, a division or modulo by a literal 0 are parse errors. */
static ps_pq_node_t *dur_expr(pq_t *q, int min_prec)
{
    ps_psr_t *p = &q->p;
    ps_pq_binop_t op;
    int prec;
    ps_pq_node_t *lhs = dur_unary(q);
    while (lhs != NULL && (prec = binop_of(p->tok.type, &op)) != 0 && prec >= min_prec && op >= PS_PQ_ADD &&
           op != PS_PQ_ATAN2) {
        ps_tok_t ot = p->tok;
        ps_psr_advance(p);
        ps_pq_node_t *rhs = dur_expr(q, op == PS_PQ_POW ? prec : prec + 1);
        if (rhs == NULL)
            return NULL;
        if ((op == PS_PQ_DIV || op == PS_PQ_MOD) && rhs->kind == PS_PQ_NUMBER && rhs->num == 0)
            return ps_psr_perr(p, ot.pos, op == PS_PQ_DIV ? "division by zero" : "modulo by zero");
        ps_pq_node_t *e = dur_node(q, PS_PQ_DUR_BINOP, lhs->pos, lhs, rhs);
        if (e == NULL)
            return NULL;
        e->binop = op;
        lhs = e;
    }
    if (lhs != NULL && lhs->kind == PS_PQ_NUMBER && (lhs->num > DUR_MAX_SECONDS || lhs->num < -DUR_MAX_SECONDS))
        return ps_psr_perr(p, lhs->pos, "duration out of range");
    return lhs;
}

/* A range or a subquery step (positive_duration_expr): a literal must be > 0 here; a duration
 * expression is left for the evaluator. Folds a literal into *ms, else sets *expr. */
static bool dur_positive(pq_t *q, int64_t *ms, ps_pq_node_t **expr)
{
    ps_pq_node_t *d = dur_expr(q, 0);
    if (d == NULL)
        return false;
    *expr = NULL;
    if (d->kind == PS_PQ_NUMBER) {
        if (!(d->num > 0)) {
            ps_psr_perr(&q->p, d->pos, "duration must be greater than 0");
            return false;
        }
        /* time.Duration(math.Round(v * 1e9)), in milliseconds as durationMilliseconds truncates; under
         * a millisecond it is 1 ms here (Prometheus' window of 0 ms selects nothing; profstore's range
         * 0 is an instant selector's) */
        *ms = (int64_t)(round(d->num * 1e9) / 1e6);
        if (*ms == 0)
            *ms = 1;
        return true;
    }
    *expr = d;
    *ms = 0;
    return true;
}

/* An offset (offset_duration_expr): a literal, step(), range(), min_of/max_of(...) or a
 * parenthesised duration, each with an optional sign; what follows is not part of it ("x offset
 * 2 ^ 2" is "(x offset 2) ^ 2"). Folds a literal into *ms, else sets *expr. */
static ps_pq_node_t *dur_offset(pq_t *q, int64_t *ms, ps_pq_node_t **expr)
{
    ps_psr_t *p = &q->p;
    ps_pq_node_t *d;
    if (p->tok.type == T_ADD || p->tok.type == T_SUB) {
        ps_tok_t op = p->tok;
        ps_psr_advance(p);
        d = dur_sign(q, op, dur_atom(q));
    } else {
        d = dur_atom(q);
    }
    if (d == NULL)
        return NULL;
    *expr = NULL;
    if (d->kind == PS_PQ_NUMBER) {
        /* "offset Inf" is out of range as in Prometheus; so is "offset NaN" here (Prometheus 3.16
         * takes it for the offset -106751d23h47m16s854ms, Go's conversion of NaN) */
        if (!(fabs(d->num) <= DUR_MAX_SECONDS))
            return ps_psr_perr(&q->p, d->pos, "duration out of range");
        *ms = (int64_t)(round(d->num * 1e9) / 1e6);
        return d;
    }
    *expr = d;
    *ms = 0;
    return d;
}

static ps_pq_node_t *parse_primary(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t t = p->tok;
    ps_pq_node_t *e;

    switch (t.type) {
    case T_DURATION: /* Prometheus 3: a duration is a number of seconds ("predict_linear(x[1h], 30m)") */
        if (q->lim.compat == 2)
            break;
        return dur_literal(q);
    case T_NUMBER: {
        double v;
        if (!ps_psr_number(p, t, &v) || (e = new_node(q, PS_PQ_NUMBER, t.pos, NULL, NULL)) == NULL)
            return NULL;
        e->num = v;
        e->fixed = q->lim.compat != 2;
        e->type = PS_PQ_VSCALAR;
        e->end = t.pos + t.len;
        ps_psr_advance(p);
        return e;
    }
    case T_STRING: {
        char *s;
        size_t n;
        if (!ps_psr_unquote(p, t, &s, &n) || (e = new_node(q, PS_PQ_STRING, t.pos, NULL, NULL)) == NULL)
            return NULL;
        e->str = s;
        e->slen = n;
        e->type = PS_PQ_VSTRING;
        e->end = t.pos + t.len;
        ps_psr_advance(p);
        return e;
    }
    case T_LPAREN: {
        ps_psr_advance(p);
        ps_pq_node_t *in = parse_expr(q, 0);
        if (in == NULL)
            return NULL;
        if (p->tok.type != T_RPAREN)
            return syntax_error(q, p->tok);
        if ((e = new_node(q, PS_PQ_PAREN, t.pos, in, NULL)) == NULL)
            return NULL;
        e->expr = in;
        e->type = in->type;
        e->end = p->tok.pos + 1;
        ps_psr_advance(p);
        return e;
    }
    case T_LBRACE: return parse_selector(q);
    default: break;
    }
    if (is_ident(t.type) && ps_psr_peek(p).type == T_LPAREN) {
        /* START and END tokens in 2.42, not names; in 3 also experimental functions */
        if ((tok_is(q, t, "start") || tok_is(q, t, "end")) && q->lim.compat == 2)
            return syntax_error(q, ps_psr_peek(p));
        return parse_call(q);
    }
    if (is_aggr(t.type)) {
        ps_tok_type_t next = ps_psr_peek(p).type;
        if (next == T_LPAREN || next == T_BY || next == T_WITHOUT)
            return parse_aggregation(q);
    }
    if (ps_psr_is_metric_word(t.type))
        return parse_selector(q);
    return syntax_error(q, t);
}

/* [range] or [range:step]; the current token is "[". */
static ps_pq_node_t *parse_range(pq_t *q, ps_pq_node_t *e)
{
    ps_psr_t *p = &q->p;
    ps_tok_t lb = p->tok;
    int64_t range, step = 0;

    ps_pq_node_t *range_expr = NULL, *step_expr = NULL;
    ps_psr_advance(p);
    if (q->lim.compat != 2) {
        q->dur_ctx = "subquery or range selector";
        q->dur_want = "number, duration, step(), or range()";
        if (!dur_positive(q, &range, &range_expr))
            return NULL;
    } else {
        if (p->tok.type != T_DURATION)
            return ps_psr_unexpected(p, p->tok, "subquery selector", "duration");
        if (!parse_duration(q, p->tok, &range))
            return NULL;
        ps_psr_advance(p);
    }
    if (p->tok.type == T_RBRACKET) {
        const char *msg = NULL;
        if (e->kind != PS_PQ_VECTOR)
            msg = "ranges only allowed for vector selectors";
        else if (e->offset_ms != 0 || e->offset_expr != NULL)
            msg = "no offset modifiers allowed before range";
        else if (e->at == PS_PQ_AT_TIME) /* 2.42 lets "x @ end()[5m]" through: it checks Timestamp only */
            msg = "no @ modifiers allowed before range";
        if (msg != NULL)
            return ps_psr_perr(p, lb.pos, "%s", msg);
        ps_pq_node_t *m = new_node(q, PS_PQ_MATRIX, e->pos, e, NULL);
        if (m == NULL)
            return NULL;
        m->expr = e;
        m->range_ms = range;
        m->range_expr = range_expr;
        m->type = PS_PQ_VMATRIX;
        m->end = p->tok.pos + 1;
        ps_psr_advance(p);
        return m;
    }
    if (p->tok.type != T_COLON)
        return ps_psr_unexpected(p, p->tok, "subquery or range", "\":\" or \"]\"");
    ps_psr_advance(p);
    if (q->lim.compat != 2 && p->tok.type != T_RBRACKET) {
        q->dur_ctx = "subquery selector";
        q->dur_want = "number, duration, step(), range(), or \"]\"";
        if (!dur_positive(q, &step, &step_expr))
            return NULL;
        if (p->tok.type != T_RBRACKET)
            return ps_psr_unexpected(p, p->tok, "subquery selector", "\"]\"");
    } else if (p->tok.type == T_DURATION) {
        if (!parse_duration(q, p->tok, &step))
            return NULL;
        ps_psr_advance(p);
        if (p->tok.type != T_RBRACKET)
            return ps_psr_unexpected(p, p->tok, "subquery selector", "\"]\"");
    } else if (p->tok.type != T_RBRACKET) {
        return ps_psr_unexpected(p, p->tok, "subquery selector", "duration or \"]\"");
    }
    ps_pq_node_t *s = new_node(q, PS_PQ_SUBQUERY, e->pos, e, NULL);
    if (s == NULL)
        return NULL;
    s->expr = e;
    s->range_ms = range;
    s->range_expr = range_expr;
    s->step_ms = step;
    s->step_expr = step_expr;
    s->type = PS_PQ_VMATRIX;
    s->end = p->tok.pos + 1;
    ps_psr_advance(p);
    return s;
}

/* The node an offset or @ applies to (parse.go's addOffset / getAtModifierVars), or NULL. */
static ps_pq_node_t *modifier_target(ps_pq_node_t *e)
{
    switch (e->kind) {
    case PS_PQ_VECTOR:
    case PS_PQ_SUBQUERY: return e;
    case PS_PQ_MATRIX: return e->expr;
    default: return NULL;
    }
}

static ps_pq_node_t *parse_offset(pq_t *q, ps_pq_node_t *e)
{
    ps_psr_t *p = &q->p;
    bool neg = false;
    int64_t d;

    ps_pq_node_t *dexpr = NULL;
    uint32_t end;
    ps_psr_advance(p);
    if (q->lim.compat != 2) {
        q->dur_ctx = "offset";
        q->dur_want = "number, duration, step(), or range()";
        ps_pq_node_t *dn = dur_offset(q, &d, &dexpr);
        if (dn == NULL)
            return NULL;
        end = dn->end;
    } else {
        if (p->tok.type == T_SUB) {
            neg = true;
            ps_psr_advance(p);
        }
        if (p->tok.type != T_DURATION)
            return ps_psr_unexpected(p, p->tok, "offset", "duration");
        if (!parse_duration(q, p->tok, &d))
            return NULL;
        if (neg)
            d = -d;
        end = p->tok.pos + p->tok.len;
        ps_psr_advance(p);
    }
    ps_pq_node_t *t = modifier_target(e);
    if (t == NULL)
        return ps_psr_perr(p, e->pos, "offset modifier must be preceded by an instant vector selector or range vector "
                                      "selector or a subquery");
    if (t->offset_ms != 0 || t->offset_expr != NULL)
        return ps_psr_perr(p, e->pos, "offset may not be set multiple times");
    t->offset_ms = d;
    t->offset_expr = dexpr;
    e->end = end;
    return e;
}

static ps_pq_node_t *parse_at(pq_t *q, ps_pq_node_t *e)
{
    ps_psr_t *p = &q->p;
    ps_pq_at_t at;
    double ts = 0;

    ps_psr_advance(p);
    ps_tok_t t = p->tok;
    if (tok_is(q, t, "start") || tok_is(q, t, "end")) {
        at = tok_is(q, t, "start") ? PS_PQ_AT_START : PS_PQ_AT_END;
        ps_psr_advance(p);
        if (p->tok.type != T_LPAREN)
            return ps_psr_unexpected(p, p->tok, "@", "timestamp");
        ps_psr_advance(p);
        if (p->tok.type != T_RPAREN)
            return ps_psr_unexpected(p, p->tok, "@", "timestamp");
    } else {
        bool neg = false;
        if (t.type == T_ADD || t.type == T_SUB) {
            neg = t.type == T_SUB;
            ps_psr_advance(p);
        }
        if (p->tok.type == T_DURATION && q->lim.compat != 2) { /* Prometheus 3: "@ 100s" is "@ 100" */
            int64_t ms;
            if (!parse_duration_z(q, p->tok, &ms, true))
                return NULL;
            ts = (double)ms / 1000.0;
        } else if (p->tok.type != T_NUMBER) {
            return ps_psr_unexpected(p, p->tok, "@", "timestamp");
        } else if (!ps_psr_number(p, p->tok, &ts)) {
            return NULL;
        }
        if (neg)
            ts = -ts;
        if (isinf(ts) || isnan(ts) || ts >= 9223372036854775807.0 || ts <= -9223372036854775808.0) {
            if (isnan(ts) || isinf(ts))
                return ps_psr_perr(p, e->pos, "timestamp out of bounds for @ modifier: %s",
                                   isnan(ts) ? "NaN" : ts > 0 ? "+Inf" : "-Inf");
            return ps_psr_perr(p, e->pos, "timestamp out of bounds for @ modifier: %f", ts);
        }
        at = PS_PQ_AT_TIME;
    }
    ps_pq_node_t *tg = modifier_target(e);
    if (tg == NULL)
        return ps_psr_perr(p, e->pos, "@ modifier must be preceded by an instant vector selector or range vector "
                                      "selector or a subquery");
    if (tg->at != PS_PQ_AT_NONE)
        return ps_psr_perr(p, e->pos, "@ <timestamp> may not be set multiple times");
    tg->at = at;
    if (at == PS_PQ_AT_TIME) {
        /* timestamp.FromFloatSeconds; Go's int64() of a float out of range is INT64_MIN on amd64 */
        double ms = round(ts * 1000.0);
        tg->at_ms = ms >= 9223372036854775807.0 || ms < -9223372036854775808.0 ? INT64_MIN : (int64_t)ms;
    }
    e->end = p->tok.pos + p->tok.len;
    ps_psr_advance(p);
    return e;
}

/* Prometheus 3.16's "anchored" / "smoothed" after e (parse.go's setAnchored / setSmoothed): on a vector
 * or range selector, in any order with offset and @, also twice; the current token is the word. The
 * range's end is left where it was, as generated_parser.y leaves it. */
static ps_pq_node_t *parse_extended(pq_t *q, ps_pq_node_t *e, bool smoothed)
{
    ps_psr_t *p = &q->p;
    const char *word = smoothed ? "smoothed" : "anchored";
    ps_pq_node_t *v = e->kind == PS_PQ_VECTOR ? e : e->kind == PS_PQ_MATRIX ? e->expr : NULL;

    if (e->kind == PS_PQ_SUBQUERY)
        return ps_psr_perr(p, e->pos, "%s modifier is not supported for subqueries", word);
    if (v == NULL)
        return ps_psr_perr(p, e->pos, "%s modifier not implemented", word);
    if (smoothed ? v->anchored : v->smoothed)
        return ps_psr_perr(p, e->pos, "anchored and smoothed modifiers cannot be used together");
    if (smoothed)
        v->smoothed = true;
    else
        v->anchored = true;
    ps_psr_advance(p);
    return e;
}

static ps_pq_node_t *parse_postfix(pq_t *q)
{
    ps_pq_node_t *e = parse_primary(q);
    while (e != NULL) {
        ps_tok_t t = q->p.tok;
        switch (t.type) {
        case T_LBRACKET: e = parse_range(q, e); break;
        case T_OFFSET: e = parse_offset(q, e); break;
        case T_AT: e = parse_at(q, e); break;
        default:
            /* keywords of Prometheus 3.16 (names in 2.42, where nothing may follow an operand) */
            if (q->lim.compat != 2 && (tok_is(q, t, "anchored") || tok_is(q, t, "smoothed"))) {
                e = parse_extended(q, e, tok_is(q, t, "smoothed"));
                break;
            }
            return e;
        }
    }
    return NULL;
}

static ps_pq_node_t *parse_unary(pq_t *q)
{
    ps_psr_t *p = &q->p;
    ps_tok_t t = p->tok;
    ps_pq_node_t *e;

    if (!enter(q))
        return NULL;
    if (t.type == T_ADD || t.type == T_SUB) {
        ps_psr_advance(p);
        ps_pq_node_t *in = parse_expr(q, PREC_POW);
        if (in == NULL) {
            e = NULL;
        } else if (in->kind == PS_PQ_NUMBER) { /* -1 is a number literal, as generated_parser.y folds it */
            if (t.type == T_SUB)
                in->num = -in->num;
            in->pos = t.pos;
            e = in;
        } else if ((e = new_node(q, PS_PQ_UNARY, t.pos, in, NULL)) != NULL) {
            e->unary_neg = t.type == T_SUB;
            e->expr = in;
            e->type = in->type;
            e->end = in->end;
        }
    } else {
        e = parse_postfix(q);
    }
    q->p.depth--;
    return e;
}

/* The modifiers after a binary operator; m is allocated here. */
static bool parse_bin_modifiers(pq_t *q, ps_pq_node_t *e)
{
    ps_psr_t *p = &q->p;
    ps_pq_matching_t *m = ps_arena_calloc(p->arena, 1, sizeof(*m));

    m->card = PS_PQ_ONE_TO_ONE;
    e->matching = m;
    if (p->tok.type == T_BOOL) {
        e->return_bool = true;
        ps_psr_advance(p);
    }
    if (p->tok.type == T_ON || p->tok.type == T_IGNORING) {
        ps_psr_grouping_t g = {0};
        m->on = p->tok.type == T_ON;
        if (!ps_psr_grouping(p, &g))
            return false;
        m->nlabels = g.n;
        m->labels = g.names;
        if (p->tok.type == T_GROUP_LEFT || p->tok.type == T_GROUP_RIGHT) {
            m->card = p->tok.type == T_GROUP_LEFT ? PS_PQ_MANY_TO_ONE : PS_PQ_ONE_TO_MANY;
            if (ps_psr_peek(p).type == T_LPAREN) {
                ps_psr_grouping_t inc = {0};
                if (!ps_psr_grouping(p, &inc))
                    return false;
                m->ninclude = inc.n;
                m->include = inc.names;
            } else {
                ps_psr_advance(p);
                /* the labels are optional, but what follows must then start an expression */
                if (p->tok.type != T_ERROR && !starts_expr(p->tok.type) && !(p->tok.type == T_DURATION && q->lim.compat != 2)) {
                    ps_psr_unexpected(p, p->tok, "grouping opts", "\"(\"");
                    return false;
                }
            }
        }
    }
    return true;
}

static ps_pq_node_t *parse_expr(pq_t *q, int min_prec)
{
    ps_psr_t *p = &q->p;
    ps_pq_node_t *lhs;
    ps_pq_binop_t op;
    int prec;

    lhs = parse_unary(q); /* the recursion is counted there: every nesting goes through it */
    while (lhs != NULL && (prec = binop_of(p->tok.type, &op)) != 0 && prec >= min_prec) {
        ps_tok_t ot = p->tok;
        ps_pq_node_t *e = new_node(q, PS_PQ_BINARY, ot.pos, NULL, NULL); /* a limit error names the operator */
        if (e == NULL) {
            lhs = NULL;
            break;
        }
        e->pos = lhs->pos;
        ps_psr_advance(p);
        if (!parse_bin_modifiers(q, e)) {
            lhs = NULL;
            break;
        }
        ps_pq_node_t *rhs = parse_expr(q, op == PS_PQ_POW ? prec : prec + 1);
        ps_pq_node_t *kids[2] = {lhs, rhs};
        if (rhs == NULL || !set_depth(q, e, kids, 2)) {
            lhs = NULL;
            break;
        }
        ((pnode_t *)(void *)e)->op_pos = ot.pos;
        e->binop = op;
        e->lhs = lhs;
        e->rhs = rhs;
        e->type = lhs->type == PS_PQ_VSCALAR && rhs->type == PS_PQ_VSCALAR ? PS_PQ_VSCALAR : PS_PQ_VVECTOR;
        e->end = rhs->end;
        lhs = e;
    }
    return lhs;
}

/* ---- type checks (parse.go's checkAST) ----------------------------------------------------- */

static bool is_comparison(ps_pq_binop_t op) { return op >= PS_PQ_EQLC && op <= PS_PQ_GTE; }
static bool is_set_op(ps_pq_binop_t op) { return op == PS_PQ_AND || op == PS_PQ_OR || op == PS_PQ_UNLESS; }

static ps_pq_vtype_t check(pq_t *q, ps_pq_node_t *n);

static bool expect_type(pq_t *q, ps_pq_node_t *n, ps_pq_vtype_t want, const char *context)
{
    ps_pq_vtype_t t = check(q, n);
    if (q->p.rc != 0)
        return false;
    if (t != want) {
        ps_psr_perr(&q->p, n->pos, "expected type %s in %s, got %s", ps_pq_vtype_name(want), context,
                    ps_pq_vtype_name(t));
        return false;
    }
    return true;
}

static void check_binary(pq_t *q, ps_pq_node_t *n)
{
    ps_psr_t *p = &q->p;
    uint32_t op_pos = ((pnode_t *)(void *)n)->op_pos;
    ps_pq_vtype_t lt = check(q, n->lhs), rt;
    ps_pq_matching_t *m = n->matching;

    if (p->rc != 0)
        return;
    rt = check(q, n->rhs);
    if (p->rc != 0)
        return;
    if (n->return_bool && !is_comparison(n->binop)) {
        ps_psr_perr(p, op_pos, "bool modifier can only be used on comparison operators");
        return;
    }
    if (is_comparison(n->binop) && !n->return_bool && lt == PS_PQ_VSCALAR && rt == PS_PQ_VSCALAR) {
        ps_psr_perr(p, op_pos, "comparisons between scalars must use BOOL modifier");
        return;
    }
    if (is_set_op(n->binop) && m->card == PS_PQ_ONE_TO_ONE)
        m->card = PS_PQ_MANY_TO_MANY;
    if (m->on)
        for (uint32_t i = 0; i < m->nlabels; i++)
            for (uint32_t j = 0; j < m->ninclude; j++)
                if (strcmp(m->labels[i], m->include[j]) == 0) {
                    char shown[96];
                    ps_quote_string(shown, sizeof(shown), m->labels[i], strlen(m->labels[i]), 64);
                    ps_psr_perr(p, op_pos, "label %s must not occur in ON and GROUP clause at once", shown);
                    return;
                }
    if (lt != PS_PQ_VSCALAR && lt != PS_PQ_VVECTOR) {
        ps_psr_perr(p, n->lhs->pos, "binary expression must contain only scalar and instant vector types");
        return;
    }
    if (rt != PS_PQ_VSCALAR && rt != PS_PQ_VVECTOR) {
        ps_psr_perr(p, n->rhs->pos, "binary expression must contain only scalar and instant vector types");
        return;
    }
    if (lt != PS_PQ_VVECTOR || rt != PS_PQ_VVECTOR) {
        if (m->nlabels > 0) {
            ps_psr_perr(p, n->pos, "vector matching only allowed between instant vectors");
            return;
        }
        n->matching = NULL;
    } else if (is_set_op(n->binop)) {
        if (m->card == PS_PQ_ONE_TO_MANY || m->card == PS_PQ_MANY_TO_ONE) {
            ps_psr_perr(p, n->pos, "no grouping allowed for \"%s\" operation", ps_pq_binop_name(n->binop));
            return;
        }
    }
    if ((lt == PS_PQ_VSCALAR || rt == PS_PQ_VSCALAR) && is_set_op(n->binop))
        ps_psr_perr(p, n->pos, "set operator \"%s\" not allowed in binary scalar expression",
                    ps_pq_binop_name(n->binop));
}

static void check_call(pq_t *q, ps_pq_node_t *n)
{
    ps_psr_t *p = &q->p;
    const ps_pq_func_t *f = n->func;
    uint32_t nargs = f->nargs;

    if (f->variadic == 0) {
        if (nargs != n->nargs) {
            ps_psr_perr(p, n->pos, "expected %u argument(s) in call to \"%s\", got %u", nargs, f->name, n->nargs);
            return;
        }
    } else {
        uint32_t na = nargs - 1;
        if (na > n->nargs) {
            ps_psr_perr(p, n->pos, "expected at least %u argument(s) in call to \"%s\", got %u", na, f->name, n->nargs);
            return;
        }
        if (f->variadic > 0 && na + (uint32_t)f->variadic < n->nargs) {
            ps_psr_perr(p, n->pos, "expected at most %u argument(s) in call to \"%s\", got %u",
                        na + (uint32_t)f->variadic, f->name, n->nargs);
            return;
        }
    }
    for (uint32_t i = 0; i < n->nargs; i++) {
        uint32_t k = i;
        if (k >= nargs) {
            if (f->variadic == 0)
                break;
            k = nargs - 1;
        }
        ps_pq_vtype_t t = check(q, n->args[i]);
        if (p->rc != 0)
            return;
        if (t != f->args[k]) {
            ps_psr_perr(p, n->args[i]->pos, "expected type %s in call to function \"%s\", got %s",
                        ps_pq_vtype_name(f->args[k]), f->name, ps_pq_vtype_name(t));
            return;
        }
    }
}

/* A metric name given twice; without a name, at least one matcher that does not match "". */
static void check_selector(pq_t *q, const ps_pq_node_t *n)
{
    const ps_selector_t *sel = &n->sel;
    char a[80], b[80];

    if (n->name != NULL) {
        for (uint32_t i = 1; i < sel->n; i++)
            if (sel->m[i].nlen == 8 && memcmp(sel->m[i].name, "__name__", 8) == 0) {
                ps_quote_string(a, sizeof(a), sel->m[0].value, sel->m[0].vlen, 64);
                ps_quote_string(b, sizeof(b), sel->m[i].value, sel->m[i].vlen, 64);
                ps_psr_perr(&q->p, n->pos, "metric name must not be set twice: %s or %s", a, b);
                return;
            }
        return;
    }
    for (uint32_t i = 0; i < sel->n; i++)
        if (!sel->m[i].matches_empty)
            return;
    ps_psr_perr(&q->p, n->pos, "vector selector must contain at least one non-empty matcher");
}

static ps_pq_vtype_t check(pq_t *q, ps_pq_node_t *n)
{
    ps_psr_t *p = &q->p;

    switch (n->kind) {
    case PS_PQ_AGG:
        if (!expect_type(q, n->expr, PS_PQ_VVECTOR, "aggregation expression"))
            break;
        if (n->aggop == PS_PQ_TOPK || n->aggop == PS_PQ_BOTTOMK || n->aggop == PS_PQ_QUANTILE)
            expect_type(q, n->param, PS_PQ_VSCALAR, "aggregation parameter");
        else if (n->aggop == PS_PQ_COUNT_VALUES)
            expect_type(q, n->param, PS_PQ_VSTRING, "aggregation parameter");
        break;
    case PS_PQ_BINARY: check_binary(q, n); break;
    case PS_PQ_CALL: check_call(q, n); break;
    case PS_PQ_PAREN: check(q, n->expr); break;
    case PS_PQ_UNARY: {
        ps_pq_vtype_t t = check(q, n->expr);
        if (p->rc == 0 && t != PS_PQ_VSCALAR && t != PS_PQ_VVECTOR)
            ps_psr_perr(p, n->pos, "unary expression only allowed on expressions of type scalar or instant vector, "
                                   "got \"%s\"",
                        ps_pq_vtype_name(t));
        break;
    }
    case PS_PQ_SUBQUERY: {
        ps_pq_vtype_t t = check(q, n->expr);
        if (p->rc == 0 && t != PS_PQ_VVECTOR)
            ps_psr_perr(p, n->pos, "subquery is only allowed on instant vector, got %s instead", vtype_raw(t));
        break;
    }
    case PS_PQ_MATRIX: check(q, n->expr); break;
    case PS_PQ_VECTOR: check_selector(q, n); break;
    case PS_PQ_NUMBER:
    case PS_PQ_STRING:
    case PS_PQ_DURATION: break;
    }
    return n->type;
}

/* ---- API ----------------------------------------------------------------------------------- */

int ps_pq_parse(const char *s, size_t n, const ps_pq_limits_t *lim, ps_arena_t *arena, ps_pq_node_t **out,
                ps_err_t *err)
{
    pq_t q;
    ps_pq_node_t *e = NULL;

    *out = NULL;
    memset(&q, 0, sizeof(q));
    if (lim != NULL)
        q.lim = *lim;
    else
        ps_pq_limits_default(&q.lim);
    if (n > q.lim.max_input)
        return ps_err_set(err, PS_ETOOBIG, "query is too long: %zu bytes (the limit is %zu)", n, q.lim.max_input);
    ps_psr_init(&q.p, s, n, arena, err, true);
    q.p.quoted = q.lim.compat != 2;
    q.p.lex.durexpr = q.lim.compat != 2;
    if (q.p.tok.type == T_EOF) {
        ps_psr_perr(&q.p, 0, "no expression found in input");
    } else {
        e = parse_expr(&q, 0);
        if (e != NULL && q.p.tok.type != T_EOF)
            e = ps_psr_unexpected(&q.p, q.p.tok, NULL, NULL);
        if (e != NULL)
            check(&q, e);
    }
    if (q.p.rc != 0) {
        ps_psr_dispose_all(&q.p);
        return q.p.rc;
    }
    if (e == NULL) { /* cannot happen: every NULL comes with an error */
        ps_psr_dispose_all(&q.p);
        return ps_err_set(err, PS_EINTERNAL, "PromQL parser failed without a message");
    }
    *out = e;
    return 0;
}

/* durations.go's evaluateDurationExpr, in seconds */
static int dur_eval(const ps_pq_node_t *d, double step_s, double range_s, double *out, ps_err_t *err)
{
    double l = 0, r = 0;
    int ret;
    if (d->kind == PS_PQ_NUMBER) {
        *out = d->num;
        return 0;
    }
    if (d->lhs != NULL && (ret = dur_eval(d->lhs, step_s, range_s, &l, err)) != 0)
        return ret;
    if (d->rhs != NULL && (ret = dur_eval(d->rhs, step_s, range_s, &r, err)) != 0)
        return ret;
    switch (d->dur_op) {
    case PS_PQ_DUR_STEP: *out = step_s; return 0;
    case PS_PQ_DUR_RANGE: *out = range_s; return 0;
    case PS_PQ_DUR_MIN_OF: *out = fmin(l, r); return 0;
    case PS_PQ_DUR_MAX_OF: *out = fmax(l, r); return 0;
    case PS_PQ_DUR_NEG: *out = -r; return 0;
    case PS_PQ_DUR_PLUS: *out = r; return 0;
    case PS_PQ_DUR_BINOP: break;
    }
    switch (d->binop) {
    case PS_PQ_ADD: *out = l + r; return 0;
    case PS_PQ_SUB: *out = l - r; return 0;
    case PS_PQ_MUL: *out = l * r; return 0;
    case PS_PQ_DIV:
        if (r == 0)
            return ps_err_set(err, PS_EINVAL, "%" PRIu32 ":%" PRIu32 ": division by zero", d->pos, d->end);
        *out = l / r;
        return 0;
    case PS_PQ_MOD:
        if (r == 0)
            return ps_err_set(err, PS_EINVAL, "%" PRIu32 ":%" PRIu32 ": modulo by zero", d->pos, d->end);
        *out = fmod(l, r);
        return 0;
    case PS_PQ_POW: *out = pow(l, r); return 0;
    default: return ps_err_set(err, PS_EINVAL, "unexpected duration expression operator");
    }
}

int ps_pq_duration_ms(const ps_pq_node_t *d, int64_t step_ms, int64_t range_ms, bool allow_negative, int64_t *out,
                      ps_err_t *err)
{
    double v;
    int ret = dur_eval(d, (double)step_ms / 1000.0, (double)range_ms / 1000.0, &v, err);
    if (ret)
        return ret;
    if (isnan(v) || isinf(v))
        return ps_err_set(err, PS_EINVAL, "%" PRIu32 ":%" PRIu32 ": duration is NaN or infinite", d->pos, d->end);
    if (v <= 0 && !allow_negative)
        return ps_err_set(err, PS_EINVAL, "%" PRIu32 ":%" PRIu32 ": duration must be greater than 0", d->pos, d->end);
    if (v > DUR_MAX_SECONDS || v < -DUR_MAX_SECONDS)
        return ps_err_set(err, PS_EINVAL, "%" PRIu32 ":%" PRIu32 ": duration is out of range", d->pos, d->end);
    /* time.Duration(duration*1000) * time.Millisecond: truncated to whole milliseconds */
    double ms = trunc(v * 1000.0);
    *out = ms >= 9223372036854775807.0 ? INT64_MAX : ms <= -9223372036854775808.0 ? INT64_MIN : (int64_t)ms;
    if (*out == 0 && !allow_negative)
        *out = 1; /* a positive duration under a millisecond: see dur_positive */
    return 0;
}

void ps_pq_dispose(ps_pq_node_t *e)
{
    if (e == NULL)
        return;
    switch (e->kind) {
    case PS_PQ_VECTOR: ps_selector_dispose(&e->sel); break;
    case PS_PQ_CALL:
        for (uint32_t i = 0; i < e->nargs; i++)
            ps_pq_dispose(e->args[i]);
        break;
    case PS_PQ_AGG:
        ps_pq_dispose(e->param);
        ps_pq_dispose(e->expr);
        break;
    case PS_PQ_BINARY:
        ps_pq_dispose(e->lhs);
        ps_pq_dispose(e->rhs);
        break;
    case PS_PQ_MATRIX:
    case PS_PQ_SUBQUERY:
    case PS_PQ_UNARY:
    case PS_PQ_PAREN: ps_pq_dispose(e->expr); break;
    case PS_PQ_NUMBER:
    case PS_PQ_STRING:
    case PS_PQ_DURATION: break;
    }
}

/* ---- printing (printer.go's String(), prettier.go's Pretty()) ------------------------------ */

/* Runes Go's unicode.IsPrint refuses among the assigned ones that matter in practice: C1 controls,
 * spaces other than ' ', format characters, line and paragraph separators, private use,
 * non-characters. (Unassigned code points, which Go escapes too, are kept.) */
static bool go_unprintable(uint32_t r)
{
    static const uint32_t ranges[][2] = {
        {0x80, 0xa0},       {0xad, 0xad},       {0x600, 0x605},     {0x61c, 0x61c},     {0x6dd, 0x6dd},
        {0x70f, 0x70f},     {0x1680, 0x1680},   {0x180e, 0x180e},   {0x2000, 0x200f},   {0x2028, 0x202f},
        {0x205f, 0x2064},   {0x2066, 0x206f},   {0x3000, 0x3000},   {0xd800, 0xf8ff},   {0xfeff, 0xfeff},
        {0xfff9, 0xfffb},   {0xfffe, 0xffff},   {0xe0001, 0xe0001}, {0xe0020, 0xe007f}, {0xf0000, 0x10ffff},
    };
    for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++)
        if (r >= ranges[i][0] && r <= ranges[i][1])
            return true;
    return false;
}

static uint32_t utf8_rune(const unsigned char *s, size_t len)
{
    if (len == 2)
        return (uint32_t)(s[0] & 0x1f) << 6 | (s[1] & 0x3f);
    if (len == 3)
        return (uint32_t)(s[0] & 0x0f) << 12 | (uint32_t)(s[1] & 0x3f) << 6 | (s[2] & 0x3f);
    return (uint32_t)(s[0] & 0x07) << 18 | (uint32_t)(s[1] & 0x3f) << 12 | (uint32_t)(s[2] & 0x3f) << 6 | (s[3] & 0x3f);
}

/* strconv.Quote: Go's escapes; printable UTF-8 is kept as it is, other runes are \uNNNN or
 * \UNNNNNNNN, bytes that are not UTF-8 \xNN. */
static void go_quote(ps_buf_t *b, const char *s, size_t n)
{
    ps_buf_putc(b, '"');
    for (size_t i = 0; i < n;) {
        unsigned char c = (unsigned char)s[i];
        size_t cl = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
        if (cl > 1 && i + cl <= n && ps_utf8_valid(s + i, cl)) {
            uint32_t r = utf8_rune((const unsigned char *)s + i, cl);
            if (!go_unprintable(r))
                ps_buf_append(b, s + i, cl);
            else if (r < 0x10000)
                ps_buf_printf(b, "\\u%04x", r);
            else
                ps_buf_printf(b, "\\U%08x", r);
            i += cl;
            continue;
        }
        i++;
        switch (c) {
        case '\a': PS_BUF_LIT(b, "\\a"); continue;
        case '\b': PS_BUF_LIT(b, "\\b"); continue;
        case '\f': PS_BUF_LIT(b, "\\f"); continue;
        case '\n': PS_BUF_LIT(b, "\\n"); continue;
        case '\r': PS_BUF_LIT(b, "\\r"); continue;
        case '\t': PS_BUF_LIT(b, "\\t"); continue;
        case '\v': PS_BUF_LIT(b, "\\v"); continue;
        case '\\': PS_BUF_LIT(b, "\\\\"); continue;
        case '"': PS_BUF_LIT(b, "\\\""); continue;
        }
        if (c < 0x20 || c >= 0x7f)
            ps_buf_printf(b, "\\x%02x", c);
        else
            ps_buf_putc(b, c);
    }
    ps_buf_putc(b, '"');
}

/* fmt.Sprint(float64), i.e. strconv.FormatFloat(v, 'g', -1, 64): the shortest digits that read
 * back, in e-form when the exponent is < -4 or >= max(6, digits): 1e+06, 123456, 1.5e-07, +Inf. */
/* strconv.FormatFloat(v, 'g', -1, 64) (fmt's %v of a float64), or with fixed its 'f' form */
static void go_float_mode(ps_buf_t *b, double v, bool fixed)
{
    char digs[32], tmp[40];
    int exp10 = 0, nd = 0;

    if (isnan(v)) {
        PS_BUF_LIT(b, "NaN");
        return;
    }
    if (isinf(v)) {
        ps_buf_printf(b, "%s", v > 0 ? "+Inf" : "-Inf");
        return;
    }
    if (v == 0) {
        ps_buf_printf(b, "%s", signbit(v) ? "-0" : "0");
        return;
    }
    /* the shortest %e precision that round-trips */
    for (int prec = 0; prec < 17; prec++) {
        snprintf(tmp, sizeof(tmp), "%.*e", prec, v);
        if (strtod(tmp, NULL) == v)
            break;
    }
    /* tmp is [-]d[.ddd]e[+-]xx: collect the digits and the exponent */
    const char *c = tmp;
    if (*c == '-') {
        ps_buf_putc(b, '-');
        c++;
    }
    for (; *c != 'e'; c++)
        if (*c != '.')
            digs[nd++] = *c;
    exp10 = atoi(c + 1);
    while (nd > 1 && digs[nd - 1] == '0')
        nd--;
    /* strconv's %g with the shortest precision decides with a precision of 6 */
    int dp = exp10 + 1, eprec = 6;
    if (!fixed && (exp10 < -4 || exp10 >= eprec)) {
        ps_buf_putc(b, (uint8_t)digs[0]);
        if (nd > 1) {
            ps_buf_putc(b, '.');
            ps_buf_append(b, digs + 1, (size_t)nd - 1);
        }
        ps_buf_printf(b, "e%c%02d", exp10 < 0 ? '-' : '+', exp10 < 0 ? -exp10 : exp10);
        return;
    }
    if (dp <= 0) {
        PS_BUF_LIT(b, "0.");
        for (int i = dp; i < 0; i++)
            ps_buf_putc(b, '0');
        ps_buf_append(b, digs, (size_t)nd);
        return;
    }
    for (int i = 0; i < dp; i++)
        ps_buf_putc(b, i < nd ? (uint8_t)digs[i] : '0');
    if (nd > dp) {
        ps_buf_putc(b, '.');
        ps_buf_append(b, digs + dp, (size_t)(nd - dp));
    }
}

/* model.Duration's String(): 1y, 2w only when exact; 90d, 1h30m, 100ms. */
static void go_duration(ps_buf_t *b, int64_t ms)
{
    static const struct {
        const char *unit;
        int64_t ms;
        bool exact;
    } units[] = {{"y", 365ll * 86400000, true}, {"w", 7ll * 86400000, true}, {"d", 86400000, false},
                 {"h", 3600000, false},         {"m", 60000, false},        {"s", 1000, false},
                 {"ms", 1, false}};
    if (ms == 0) {
        PS_BUF_LIT(b, "0s");
        return;
    }
    for (size_t i = 0; i < sizeof(units) / sizeof(units[0]); i++) {
        if (units[i].exact && ms % units[i].ms != 0)
            continue;
        int64_t v = ms / units[i].ms;
        if (v > 0) {
            ps_buf_printf(b, "%" PRId64 "%s", v, units[i].unit);
            ms -= v * units[i].ms;
        }
    }
}

static void put_str(ps_buf_t *b, const char *s) { ps_buf_append(b, s, strlen(s)); }

/* A label name as Prometheus 3 prints it: as it is when it is a legacy name, else quoted
 * (Matcher.shouldQuoteName, printer.go's writeLabels). */
static void put_name(ps_buf_t *b, const char *s, size_t n)
{
    if (n > 0 && ps_label_name_valid(s, n))
        ps_buf_append(b, s, n);
    else
        go_quote(b, s, n);
}

static void put_list(ps_buf_t *b, const char **names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) {
        if (i > 0)
            PS_BUF_LIT(b, ", ");
        put_name(b, names[i], strlen(names[i]));
    }
}

/* A duration expression as printer.go's DurationExpr.writeTo and NumberLiteral.String() write it. */
static void put_dur(ps_buf_t *b, const ps_pq_node_t *d)
{
    if (d->kind == PS_PQ_NUMBER) {
        if (!d->duration) {
            go_float_mode(b, d->num, true);
            return;
        }
        double ms = d->num * 1000.0;
        if (ms < 0) {
            ps_buf_putc(b, '-');
            ms = -ms;
        }
        go_duration(b, ms >= 9223372036854775807.0 ? INT64_MAX : (int64_t)ms);
        return;
    }
    if (d->wrapped)
        ps_buf_putc(b, '(');
    switch (d->dur_op) {
    case PS_PQ_DUR_STEP: PS_BUF_LIT(b, "step()"); break;
    case PS_PQ_DUR_RANGE: PS_BUF_LIT(b, "range()"); break;
    case PS_PQ_DUR_MIN_OF:
    case PS_PQ_DUR_MAX_OF:
        put_str(b, d->dur_op == PS_PQ_DUR_MIN_OF ? "min_of(" : "max_of(");
        put_dur(b, d->lhs);
        PS_BUF_LIT(b, ", ");
        put_dur(b, d->rhs);
        ps_buf_putc(b, ')');
        break;
    case PS_PQ_DUR_NEG:
        ps_buf_putc(b, '-');
        put_dur(b, d->rhs);
        break;
    case PS_PQ_DUR_PLUS: put_dur(b, d->rhs); break;
    case PS_PQ_DUR_BINOP:
        put_dur(b, d->lhs);
        ps_buf_putc(b, ' ');
        put_str(b, ps_pq_binop_name(d->binop));
        ps_buf_putc(b, ' ');
        put_dur(b, d->rhs);
        break;
    }
    if (d->wrapped)
        ps_buf_putc(b, ')');
}

/* " anchored" / " smoothed" of a vector selector */
static void put_extended(ps_buf_t *b, const ps_pq_node_t *v)
{
    if (v->anchored)
        PS_BUF_LIT(b, " anchored");
    else if (v->smoothed)
        PS_BUF_LIT(b, " smoothed");
}

/* " @ 100.000" / " @ start()" and " offset 5m" of a vector selector or subquery; a vector selector's
 * modifier goes between them, a range selector's before them (printer.go: "x @ 1.000 anchored offset 1m",
 * "x[5m] anchored @ 1.000 offset 1m"). */
static void put_at_offset(ps_buf_t *b, const ps_pq_node_t *v, bool range)
{
    if (range)
        put_extended(b, v);
    switch (v->at) {
    case PS_PQ_AT_TIME: ps_buf_printf(b, " @ %.3f", (double)v->at_ms / 1000.0); break;
    case PS_PQ_AT_START: PS_BUF_LIT(b, " @ start()"); break;
    case PS_PQ_AT_END: PS_BUF_LIT(b, " @ end()"); break;
    case PS_PQ_AT_NONE: break;
    }
    if (!range)
        put_extended(b, v);
    if (v->offset_expr != NULL) {
        PS_BUF_LIT(b, " offset ");
        put_dur(b, v->offset_expr);
    } else if (v->offset_ms > 0) {
        PS_BUF_LIT(b, " offset ");
        go_duration(b, v->offset_ms);
    } else if (v->offset_ms < 0) {
        PS_BUF_LIT(b, " offset -");
        go_duration(b, v->offset_ms == INT64_MIN ? INT64_MAX : -v->offset_ms);
    }
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* The selector without @ and offset: name{sorted matchers}. */
static void put_selector(ps_buf_t *b, const ps_pq_node_t *v)
{
    static const char *const ops[] = {"=", "!=", "=~", "!~"};
    const ps_selector_t *sel = &v->sel;
    ps_buf_t one = {0};
    char **strs = NULL;
    uint32_t n = 0;

    if (v->name != NULL)
        put_str(b, v->name);
    if (sel->n > 0)
        strs = calloc(sel->n, sizeof(*strs));
    const char *name = v->name != NULL ? v->name : "";
    for (uint32_t i = 0; i < sel->n; i++) {
        const ps_matcher_t *m = &sel->m[i];
        /* printer.go leaves out __name__="<the name>", also __name__="" when there is no name (a
         * quoted name, {"a\x00b"}, may hold a NUL: compared with its length) */
        if (m->op == PS_MATCH_EQ && m->nlen == 8 && memcmp(m->name, "__name__", 8) == 0 && m->vlen == strlen(name) &&
            memcmp(m->value, name, m->vlen) == 0)
            continue;
        ps_buf_reset(&one);
        put_name(&one, m->name, m->nlen);
        put_str(&one, ops[m->op]);
        go_quote(&one, m->value, m->vlen);
        ps_buf_putc(&one, '\0');
        strs[n] = malloc(one.len);
        memcpy(strs[n++], one.data, one.len);
    }
    if (n > 0) {
        qsort(strs, n, sizeof(*strs), cmp_str);
        ps_buf_putc(b, '{');
        for (uint32_t i = 0; i < n; i++) {
            if (i > 0)
                ps_buf_putc(b, ',');
            put_str(b, strs[i]);
            free(strs[i]);
        }
        ps_buf_putc(b, '}');
    }
    free(strs);
    ps_buf_dispose(&one);
}

static void put_agg_op(ps_buf_t *b, const ps_pq_node_t *e)
{
    put_str(b, ps_pq_aggop_name(e->aggop));
    if (e->without) {
        PS_BUF_LIT(b, " without (");
        put_list(b, e->group, e->ngroup);
        PS_BUF_LIT(b, ") ");
    } else if (e->ngroup > 0) {
        PS_BUF_LIT(b, " by (");
        put_list(b, e->group, e->ngroup);
        PS_BUF_LIT(b, ") ");
    }
}

/* " bool on (a) group_left (b)" after a binary operator. */
static void put_bin_modifiers(ps_buf_t *b, const ps_pq_node_t *e)
{
    const ps_pq_matching_t *m = e->matching;
    if (e->return_bool)
        PS_BUF_LIT(b, " bool");
    if (m != NULL && (m->nlabels > 0 || m->on)) {
        put_str(b, m->on ? " on (" : " ignoring (");
        put_list(b, m->labels, m->nlabels);
        ps_buf_putc(b, ')');
        if (m->card == PS_PQ_MANY_TO_ONE || m->card == PS_PQ_ONE_TO_MANY) {
            put_str(b, m->card == PS_PQ_MANY_TO_ONE ? " group_left (" : " group_right (");
            put_list(b, m->include, m->ninclude);
            ps_buf_putc(b, ')');
        }
    }
}

/* "[5m:1m] @ 1.000 offset 5m" of a subquery. */
static void put_subquery_suffix(ps_buf_t *b, const ps_pq_node_t *e)
{
    ps_buf_putc(b, '[');
    if (e->range_expr != NULL)
        put_dur(b, e->range_expr);
    else
        go_duration(b, e->range_ms);
    ps_buf_putc(b, ':');
    if (e->step_expr != NULL)
        put_dur(b, e->step_expr);
    else if (e->step_ms != 0)
        go_duration(b, e->step_ms);
    ps_buf_putc(b, ']');
    put_at_offset(b, e, false);
}

void ps_pq_format(const ps_pq_node_t *e, ps_buf_t *b)
{
    switch (e->kind) {
    case PS_PQ_NUMBER:
        if (e->duration)
            put_dur(b, e);
        else
            go_float_mode(b, e->num, e->fixed);
        break;
    case PS_PQ_STRING: go_quote(b, e->str, e->slen); break;
    case PS_PQ_DURATION: put_dur(b, e); break;
    case PS_PQ_VECTOR:
        put_selector(b, e);
        put_at_offset(b, e, false);
        break;
    case PS_PQ_MATRIX:
        put_selector(b, e->expr);
        ps_buf_putc(b, '[');
        if (e->range_expr != NULL)
            put_dur(b, e->range_expr);
        else
            go_duration(b, e->range_ms);
        ps_buf_putc(b, ']');
        put_at_offset(b, e->expr, true);
        break;
    case PS_PQ_SUBQUERY:
        ps_pq_format(e->expr, b);
        put_subquery_suffix(b, e);
        break;
    case PS_PQ_CALL:
        put_str(b, e->func->name);
        ps_buf_putc(b, '(');
        for (uint32_t i = 0; i < e->nargs; i++) {
            if (i > 0)
                PS_BUF_LIT(b, ", ");
            ps_pq_format(e->args[i], b);
        }
        ps_buf_putc(b, ')');
        break;
    case PS_PQ_AGG:
        put_agg_op(b, e);
        ps_buf_putc(b, '(');
        if (e->param != NULL) {
            ps_pq_format(e->param, b);
            PS_BUF_LIT(b, ", ");
        }
        ps_pq_format(e->expr, b);
        ps_buf_putc(b, ')');
        break;
    case PS_PQ_BINARY:
        ps_pq_format(e->lhs, b);
        ps_buf_putc(b, ' ');
        put_str(b, ps_pq_binop_name(e->binop));
        put_bin_modifiers(b, e);
        ps_buf_putc(b, ' ');
        ps_pq_format(e->rhs, b);
        break;
    case PS_PQ_UNARY:
        ps_buf_putc(b, e->unary_neg ? '-' : '+');
        ps_pq_format(e->expr, b);
        break;
    case PS_PQ_PAREN:
        ps_buf_putc(b, '(');
        ps_pq_format(e->expr, b);
        ps_buf_putc(b, ')');
        break;
    }
}

static void indent(ps_buf_t *b, int level)
{
    for (int i = 0; i < level; i++)
        PS_BUF_LIT(b, "  ");
}

/* needsSplit: String() is longer than 100 bytes. */
static bool needs_split(const ps_pq_node_t *e)
{
    ps_buf_t s = {0};
    ps_pq_format(e, &s);
    bool split = s.len > MAX_LINE;
    ps_buf_dispose(&s);
    return split;
}

void ps_pq_pretty(const ps_pq_node_t *e, int level, ps_buf_t *b)
{
    switch (e->kind) {
    case PS_PQ_AGG:
        indent(b, level);
        if (!needs_split(e)) {
            ps_pq_format(e, b);
            return;
        }
        put_agg_op(b, e);
        PS_BUF_LIT(b, "(\n");
        if (e->param != NULL) {
            ps_pq_pretty(e->param, level + 1, b);
            PS_BUF_LIT(b, ",\n");
        }
        ps_pq_pretty(e->expr, level + 1, b);
        ps_buf_putc(b, '\n');
        indent(b, level);
        ps_buf_putc(b, ')');
        return;
    case PS_PQ_BINARY:
        if (!needs_split(e)) {
            indent(b, level);
            ps_pq_format(e, b);
            return;
        }
        ps_pq_pretty(e->lhs, level + 1, b);
        ps_buf_putc(b, '\n');
        indent(b, level);
        put_str(b, ps_pq_binop_name(e->binop));
        put_bin_modifiers(b, e);
        ps_buf_putc(b, '\n');
        ps_pq_pretty(e->rhs, level + 1, b);
        return;
    case PS_PQ_CALL:
        indent(b, level);
        if (!needs_split(e)) {
            ps_pq_format(e, b);
            return;
        }
        put_str(b, e->func->name);
        PS_BUF_LIT(b, "(\n");
        for (uint32_t i = 0; i < e->nargs; i++) {
            if (i > 0)
                PS_BUF_LIT(b, ",\n");
            ps_pq_pretty(e->args[i], level + 1, b);
        }
        ps_buf_putc(b, '\n');
        indent(b, level);
        ps_buf_putc(b, ')');
        return;
    case PS_PQ_PAREN:
        indent(b, level);
        if (!needs_split(e)) {
            ps_pq_format(e, b);
            return;
        }
        PS_BUF_LIT(b, "(\n");
        ps_pq_pretty(e->expr, level + 1, b);
        ps_buf_putc(b, '\n');
        indent(b, level);
        ps_buf_putc(b, ')');
        return;
    case PS_PQ_SUBQUERY:
        if (!needs_split(e)) { /* 2.42 writes no indent here */
            ps_pq_format(e, b);
            return;
        }
        ps_pq_pretty(e->expr, level, b);
        put_subquery_suffix(b, e);
        return;
    case PS_PQ_UNARY: {
        ps_buf_t child = {0};
        size_t i = 0, j;
        ps_pq_pretty(e->expr, level, &child);
        j = child.len;
        while (i < j && (child.data[i] == ' ' || child.data[i] == '\n' || child.data[i] == '\t'))
            i++;
        while (j > i && (child.data[j - 1] == ' ' || child.data[j - 1] == '\n' || child.data[j - 1] == '\t'))
            j--;
        indent(b, level);
        ps_buf_putc(b, e->unary_neg ? '-' : '+');
        ps_buf_append(b, child.data + i, j - i);
        ps_buf_dispose(&child);
        return;
    }
    default:
        indent(b, level);
        ps_pq_format(e, b);
        return;
    }
}
