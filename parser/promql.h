/*
 * promql.h - the PromQL syntax tree and its parser (the grammar is promql.c's head comment; the
 * lexer is selector.re). Node kinds, operators and value types are those of Prometheus'
 * promql/parser/ast.go, so that the evaluator (src/query/promql_eval.c) can follow Prometheus' engine
 * step by step and messages can read like Prometheus'.
 *
 * The parser accepts the whole PromQL language of Prometheus 2.42 (subqueries, @, every function
 * of Prometheus' function table) and of Prometheus 3 as far as profstore goes (ps_pq_limits_t.compat:
 * quoted UTF-8 names in matchers and grouping lists, holt_winters renamed
 * double_exponential_smoothing, an experimental function, some of 3's newer functions, duration
 * expressions, the anchored and smoothed modifiers), and
 * checks value types as Prometheus does ("expected type range vector in call to function
 * \"rate\", got instant vector"). Whether a node is evaluated is the
 * evaluator's concern: it answers an unsupported part with a PS_EUNSUPPORTED naming it.
 *
 * Times and durations are milliseconds, like Prometheus' timestamps.
 */
#ifndef PS_PARSER_PROMQL_H
#define PS_PARSER_PROMQL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "parser/selector.h"

/* Value types (parser.ValueType). */
typedef enum { PS_PQ_VNONE, PS_PQ_VSCALAR, PS_PQ_VVECTOR, PS_PQ_VMATRIX, PS_PQ_VSTRING } ps_pq_vtype_t;

typedef enum {
    PS_PQ_NUMBER,   /* num */
    PS_PQ_STRING,   /* str, slen (unquoted) */
    PS_PQ_VECTOR,   /* instant vector selector: sel, offset, at */
    PS_PQ_MATRIX,   /* range vector selector: expr (a PS_PQ_VECTOR), range_ms */
    PS_PQ_SUBQUERY, /* expr[range:step] offset/@: expr, range_ms, step_ms (0 = default), offset, at */
    PS_PQ_CALL,     /* func, args */
    PS_PQ_AGG,      /* aggop, expr, param (topk k, quantile q, count_values label), grouping */
    PS_PQ_BINARY,   /* binop, lhs, rhs, return_bool, matching */
    PS_PQ_UNARY,    /* unary_neg, expr */
    PS_PQ_PAREN,    /* expr */
    PS_PQ_DURATION, /* a duration expression (Prometheus 3's DurationExpr, only under range_expr, step_expr and
                       offset_expr): dur_op; binop with lhs and rhs (+ - * / % ^), or the unary minus of rhs,
                       step(), range(), min_of(lhs, rhs), max_of(lhs, rhs); wrapped when written in
                       parentheses. Its leaves are NUMBER nodes, in seconds. */
} ps_pq_kind_t;

/* What a DURATION node computes (promql/durations.go). */
typedef enum {
    PS_PQ_DUR_BINOP, /* lhs binop rhs */
    PS_PQ_DUR_NEG,   /* -rhs */
    PS_PQ_DUR_PLUS,  /* rhs: "(5m)", a parenthesised literal (wrapped) */
    PS_PQ_DUR_STEP,  /* step(): the query's step in seconds (0 for an instant query) */
    PS_PQ_DUR_RANGE, /* range(): the query's end - start in seconds (0 for an instant query) */
    PS_PQ_DUR_MIN_OF, PS_PQ_DUR_MAX_OF,
} ps_pq_durop_t;

/* Binary operators, in Prometheus' precedence groups (lowest first: or; and unless; comparisons;
 * + -; * / % atan2; ^ which is right-associative). */
typedef enum {
    PS_PQ_OR, PS_PQ_AND, PS_PQ_UNLESS,
    PS_PQ_EQLC, PS_PQ_NEQ, PS_PQ_LSS, PS_PQ_LTE, PS_PQ_GTR, PS_PQ_GTE, /* == != < <= > >= */
    PS_PQ_ADD, PS_PQ_SUB, PS_PQ_MUL, PS_PQ_DIV, PS_PQ_MOD, PS_PQ_ATAN2, PS_PQ_POW,
} ps_pq_binop_t;

typedef enum {
    PS_PQ_SUM, PS_PQ_AVG, PS_PQ_COUNT, PS_PQ_MIN, PS_PQ_MAX, PS_PQ_GROUP, PS_PQ_STDDEV, PS_PQ_STDVAR,
    PS_PQ_TOPK, PS_PQ_BOTTOMK, PS_PQ_COUNT_VALUES, PS_PQ_QUANTILE,
} ps_pq_aggop_t;

/* Vector matching cardinality (parser.VectorMatchCardinality). */
typedef enum { PS_PQ_ONE_TO_ONE, PS_PQ_MANY_TO_ONE, PS_PQ_ONE_TO_MANY, PS_PQ_MANY_TO_MANY } ps_pq_card_t;

typedef struct ps_pq_matching {
    ps_pq_card_t card;     /* MANY_TO_MANY for and/or/unless */
    bool on;               /* on(...) rather than ignoring(...) */
    uint32_t nlabels;      /* the on/ignoring list */
    const char **labels;
    uint32_t ninclude;     /* group_left/group_right(...) extra labels */
    const char **include;
} ps_pq_matching_t;

/* @ modifier: a time, or start() / end() of the query. */
typedef enum { PS_PQ_AT_NONE, PS_PQ_AT_TIME, PS_PQ_AT_START, PS_PQ_AT_END } ps_pq_at_t;

/* Functions: every function of Prometheus 2.42's table has an entry (parser/functions.go); id
 * says which one. The evaluator implements a subset and refuses the others by name. */
typedef enum {
    PS_FN_ABS, PS_FN_ABSENT, PS_FN_ABSENT_OVER_TIME, PS_FN_ACOS, PS_FN_ACOSH, PS_FN_ASIN, PS_FN_ASINH,
    PS_FN_ATAN, PS_FN_ATANH, PS_FN_AVG_OVER_TIME, PS_FN_CEIL, PS_FN_CHANGES, PS_FN_CLAMP, PS_FN_CLAMP_MAX,
    PS_FN_CLAMP_MIN, PS_FN_COS, PS_FN_COSH, PS_FN_COUNT_OVER_TIME, PS_FN_DAYS_IN_MONTH, PS_FN_DAY_OF_MONTH,
    PS_FN_DAY_OF_WEEK, PS_FN_DAY_OF_YEAR, PS_FN_DEG, PS_FN_DELTA, PS_FN_DERIV, PS_FN_EXP, PS_FN_FLOOR,
    PS_FN_HISTOGRAM_COUNT, PS_FN_HISTOGRAM_SUM, PS_FN_HISTOGRAM_FRACTION, PS_FN_HISTOGRAM_QUANTILE,
    PS_FN_HOLT_WINTERS, PS_FN_HOUR, PS_FN_IDELTA, PS_FN_INCREASE, PS_FN_IRATE, PS_FN_LABEL_REPLACE,
    PS_FN_LABEL_JOIN, PS_FN_LAST_OVER_TIME, PS_FN_LN, PS_FN_LOG10, PS_FN_LOG2, PS_FN_MAX_OVER_TIME,
    PS_FN_MIN_OVER_TIME, PS_FN_MINUTE, PS_FN_MONTH, PS_FN_PI, PS_FN_PREDICT_LINEAR, PS_FN_PRESENT_OVER_TIME,
    PS_FN_QUANTILE_OVER_TIME, PS_FN_RAD, PS_FN_RATE, PS_FN_RESETS, PS_FN_ROUND, PS_FN_SCALAR, PS_FN_SGN,
    PS_FN_SIN, PS_FN_SINH, PS_FN_SORT, PS_FN_SORT_DESC, PS_FN_SQRT, PS_FN_STDDEV_OVER_TIME,
    PS_FN_STDVAR_OVER_TIME, PS_FN_SUM_OVER_TIME, PS_FN_TAN, PS_FN_TANH, PS_FN_TIME, PS_FN_TIMESTAMP,
    PS_FN_VECTOR, PS_FN_YEAR,
    /* Prometheus 3's */
    PS_FN_FIRST_OVER_TIME, PS_FN_HISTOGRAM_AVG, PS_FN_HISTOGRAM_STDDEV, PS_FN_HISTOGRAM_STDVAR,
    PS_FN_MAD_OVER_TIME, PS_FN_TS_OF_FIRST_OVER_TIME, PS_FN_TS_OF_LAST_OVER_TIME, PS_FN_TS_OF_MAX_OVER_TIME,
    PS_FN_TS_OF_MIN_OVER_TIME, PS_FN_SORT_BY_LABEL, PS_FN_SORT_BY_LABEL_DESC,
    PS_FN_START, PS_FN_END, PS_FN_RANGE, PS_FN_STEP, /* experimental: the query's start, end, end - start and step */
    PS_FN_COUNT_
} ps_pq_fn_t;

/* Which Prometheus has a function (ps_pq_func_t.avail). */
enum {
    PS_PQ_IN_2 = 1 << 0,     /* Prometheus 2.42 */
    PS_PQ_IN_3 = 1 << 1,     /* Prometheus 3 */
    PS_PQ_EXPERIMENTAL = 1 << 2, /* in 3 only with promql-experimental-functions (parser.Function.Experimental) */
};

typedef struct ps_pq_func {
    const char *name;
    ps_pq_fn_t id;
    uint8_t nargs;              /* declared argument types, as functions.go's ArgTypes */
    ps_pq_vtype_t args[5];      /* label_replace has five */
    int8_t variadic;            /* functions.go's Variadic: 0 fixed, n up to n optional, -1 any */
    ps_pq_vtype_t ret;
    uint8_t avail;              /* PS_PQ_IN_2 | PS_PQ_IN_3 | PS_PQ_EXPERIMENTAL */
} ps_pq_func_t;

/** The function called name in any version, or NULL (the parser then says "unknown function with
 *  name ..."; it also says so of a function the version parsed does not have). */
const ps_pq_func_t *ps_pq_func_lookup(const char *name, size_t n);

typedef struct ps_pq_node ps_pq_node_t;
struct ps_pq_node {
    ps_pq_kind_t kind;
    ps_pq_vtype_t type;      /* the value type the node evaluates to */
    uint32_t pos, end;       /* byte range in the input, for messages */

    double num;              /* NUMBER */
    const char *str;         /* STRING (NUL-terminated, from the arena) */
    size_t slen;

    ps_selector_t sel;       /* VECTOR: matchers (the metric name is an EQ matcher on __name__ first) */
    const char *name;        /* VECTOR: the metric name as written, or NULL */
    int64_t offset_ms;       /* VECTOR, SUBQUERY: offset (may be negative) */
    ps_pq_at_t at;           /* VECTOR, SUBQUERY */
    int64_t at_ms;           /* at == PS_PQ_AT_TIME */

    int64_t range_ms;        /* MATRIX, SUBQUERY */
    int64_t step_ms;         /* SUBQUERY: 0 = the global evaluation interval */

    const ps_pq_func_t *func; /* CALL */
    uint32_t nargs;
    ps_pq_node_t **args;

    ps_pq_aggop_t aggop;     /* AGG */
    ps_pq_node_t *param;     /* AGG: topk/bottomk/quantile/count_values parameter, else NULL */
    bool without, grouped;   /* AGG: by/without given, and which */
    uint32_t ngroup;
    const char **group;      /* AGG: label names */

    ps_pq_binop_t binop;     /* BINARY */
    ps_pq_node_t *lhs, *rhs;
    bool return_bool;
    ps_pq_matching_t *matching; /* BINARY between two vectors, else NULL */

    bool unary_neg;          /* UNARY: '-' (a '+' keeps the operand as it is) */
    ps_pq_node_t *expr;      /* MATRIX, SUBQUERY, AGG, UNARY, PAREN */

    /* Prometheus 3's duration expressions ("x[1h / 2]", "offset step()", "[5m:step() * 2]"): when set,
     * the evaluator computes range_ms, step_ms or offset_ms from them for the query's step and range
     * (ps_pq_duration_ms); a duration that is only a number or a literal is folded into those fields
     * by the parser instead, as Prometheus does. */
    ps_pq_node_t *range_expr;  /* MATRIX, SUBQUERY */
    ps_pq_node_t *step_expr;   /* SUBQUERY */
    ps_pq_node_t *offset_expr; /* VECTOR, SUBQUERY */
    ps_pq_durop_t dur_op;      /* DURATION */
    bool wrapped;              /* DURATION: written in parentheses */
    bool duration;             /* NUMBER: written as a duration ("1h" is the number 3600, printed "1h") */
    bool fixed;                /* NUMBER: printed as Prometheus 3 does (strconv's 'f' form: 1000000, 0.00001),
                                  else as 2.42 (%v: 1e+06, 1e-05) */
    /* VECTOR (a MATRIX's too: "x[5m] anchored" sets its VECTOR's): Prometheus 3.16's range selector
     * modifiers, at most one of them. anchored: a range's window reaches back to the last sample at or
     * before its start (rate, increase, delta, resets and changes only); smoothed: the values at both
     * ends of a range, and an instant selector's value, are interpolated between the samples around
     * them (rate, increase and delta only). */
    bool anchored, smoothed;
};

/* Limits, and the language parsed. */
typedef struct ps_pq_limits {
    size_t max_input;        /* bytes of query text (default 64 KiB) */
    uint32_t max_depth;      /* nesting depth (default 128) */
    uint32_t max_nodes;      /* nodes in the tree (default 10,000) */
    int compat;              /* the language of Prometheus 3 (default) or 2 (2.42: holt_winters, none of 3's
                                functions) */
    bool experimental;       /* 3's experimental functions too (--enable-feature=promql-experimental-functions;
                                default false: `function "double_exponential_smoothing" is not enabled`) */
} ps_pq_limits_t;

void ps_pq_limits_default(ps_pq_limits_t *l);

/**
 * Parses a PromQL expression (the whole input; lim NULL = defaults) into a tree allocated from
 * arena. Errors are PS_EINVAL with Prometheus' texts and positions, e.g.
 *   "1:6: parse error: expected type range vector in call to function \"rate\", got instant vector"
 * and err->pos set to the byte offset; a limit exceeded is PS_ETOOBIG ("1:129: expression is too
 * deeply nested (the limit is 128 levels)"; the input size has no position). The regexes of the
 * tree's matchers must be freed with ps_pq_dispose.
 * The tree as Prometheus' parser builds it: -1 is a NUMBER (signs fold into literals), "+a" a
 * UNARY with unary_neg false, parentheses stay as PAREN nodes, a MATRIX's offset and @ are on its
 * VECTOR, matching is set only between two vectors (MANY_TO_MANY for and/or/unless), and
 * "x @ end()[5m]" is allowed (2.42 refuses only a numeric @ before a range).
 */
int ps_pq_parse(const char *s, size_t n, const ps_pq_limits_t *lim, ps_arena_t *arena, ps_pq_node_t **out,
                ps_err_t *err);
void ps_pq_dispose(ps_pq_node_t *e);

/**
 * The value of a duration expression d (a node's range_expr, step_expr or offset_expr) for a query
 * whose step is step_ms (0 for an instant query) and whose range is range_ms (end - start), in
 * milliseconds, as Prometheus' durationVisitor computes it (seconds, truncated to milliseconds).
 * PS_EINVAL with Prometheus' words and byte range ("12:20: duration must be greater than 0",
 * "division by zero", "duration is NaN or infinite", "duration is out of range") when it is not a
 * duration (negative and zero values are one for offsets only: allow_negative).
 */
int ps_pq_duration_ms(const ps_pq_node_t *d, int64_t step_ms, int64_t range_ms, bool allow_negative, int64_t *out,
                      ps_err_t *err);

/** Writes e in Prometheus' canonical one-line form (printer.go's String()), appended to out. */
void ps_pq_format(const ps_pq_node_t *e, ps_buf_t *out);
/** Writes e as prettier.go's Pretty(level), appended to out: String() when that fits in 100 bytes,
 *  else split over indented lines. Pretty(0) is what Prometheus 2.42's /api/v1/format_query answers. */
void ps_pq_pretty(const ps_pq_node_t *e, int level, ps_buf_t *out);

/** "sum", "rate", "+", "==", ...: Prometheus' spellings. */
const char *ps_pq_binop_name(ps_pq_binop_t op);
const char *ps_pq_aggop_name(ps_pq_aggop_t op);
/** "scalar", "instant vector", "range vector", "string" (parser.DocumentedType). */
const char *ps_pq_vtype_name(ps_pq_vtype_t t);

#endif
