/*
 * fuzz_promql.c - libFuzzer target for the PromQL parser (parser/promql.c over selector.re and
 * selector.c's machinery) and its printers.
 *
 * Arbitrary bytes go through ps_pq_parse (small limits, so that the depth and node limits are hit
 * too). It may not crash, leak (the PCRE2 codes of a failed parse must be freed) or take long.
 * A failure must come with a message whose line:column is err.pos; a success must satisfy the
 * tree's invariants (types as checkAST computes them, matching only between vectors, depth within
 * the limit), and its canonical form (ps_pq_format, Prometheus' String()) must parse again to a
 * tree that prints the same (but for the signs of +Inf, see same_form); Pretty(0) (what
 * /api/v1/format_query answers) must parse again too, to the same String().
 *
 * Built by tests/fuzz/build.sh (like fuzz_selector: the .c files of parser/ and core/, the lexer,
 * -lpcre2-8) and run by tests/fuzz/run.sh with a few real queries as seeds:
 *   tests/fuzz/run.sh 60 fuzz_promql
 */
#include <stddef.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "parser/promql.h"

#include "fuzzutil.h"

static const ps_pq_limits_t limits = {4096, 48, 400};
/* a canonical form may be longer than its input ("a@1" is "a @ 1.000"), and each +Inf that starts
 * the operand of a "^" reads back with one unary "+" more (see same_form): twice the depth and nodes */
static const ps_pq_limits_t relimits = {1u << 20, 2 * 48 + 2, 2 * 400 + 2};

/* A duration expression (range_expr, step_expr, offset_expr): well formed, and computed for a
 * few query steps and ranges without a crash (an error is a fine answer). */
static void check_dur(const ps_pq_node_t *d, size_t size, uint32_t depth)
{
    CHECK(d != NULL && depth <= 2 * limits.max_depth && d->pos <= size);
    if (d->kind == PS_PQ_NUMBER)
        return;
    CHECK(d->kind == PS_PQ_DURATION);
    switch (d->dur_op) {
    case PS_PQ_DUR_BINOP:
    case PS_PQ_DUR_MIN_OF:
    case PS_PQ_DUR_MAX_OF:
        check_dur(d->lhs, size, depth + 1);
        check_dur(d->rhs, size, depth + 1);
        break;
    case PS_PQ_DUR_NEG:
    case PS_PQ_DUR_PLUS:
        CHECK(d->lhs == NULL);
        check_dur(d->rhs, size, depth + 1);
        break;
    case PS_PQ_DUR_STEP:
    case PS_PQ_DUR_RANGE: CHECK(d->lhs == NULL && d->rhs == NULL); break;
    default: CHECK(0);
    }
}

static void check_durs(const ps_pq_node_t *e, size_t size, uint32_t depth)
{
    static const int64_t steps[][2] = {{0, 0}, {15000, 3600000}, {1, INT64_MAX}};
    const ps_pq_node_t *ds[3] = {e->range_expr, e->step_expr, e->offset_expr};
    for (int i = 0; i < 3; i++) {
        if (ds[i] == NULL)
            continue;
        check_dur(ds[i], size, depth);
        for (size_t k = 0; k < sizeof(steps) / sizeof(steps[0]); k++) {
            int64_t ms = 0;
            ps_err_t err;
            if (ps_pq_duration_ms(ds[i], steps[k][0], steps[k][1], i == 2, &ms, &err) == 0)
                CHECK(i == 2 || ms > 0);
        }
    }
}

static ps_pq_vtype_t check_tree(const ps_pq_node_t *e, size_t size, uint32_t depth)
{
    CHECK(e != NULL && depth <= limits.max_depth);
    CHECK(e->pos <= size);
    check_durs(e, size, depth);
    /* Prometheus 3.16's modifiers: on a vector selector only (a range's), never both */
    CHECK(!(e->anchored && e->smoothed) && (e->kind == PS_PQ_VECTOR || (!e->anchored && !e->smoothed)));
    switch (e->kind) {
    case PS_PQ_NUMBER: CHECK(e->type == PS_PQ_VSCALAR); break;
    case PS_PQ_STRING: CHECK(e->type == PS_PQ_VSTRING && e->str != NULL && e->str[e->slen] == '\0'); break;
    case PS_PQ_VECTOR:
        CHECK(e->type == PS_PQ_VVECTOR && e->sel.n >= 1);
        CHECK(e->name == NULL || strcmp(e->sel.m[0].name, "__name__") == 0);
        for (uint32_t i = 0; i < e->sel.n; i++)
            (void)ps_matcher_match(&e->sel.m[i], "a", 1);
        break;
    case PS_PQ_MATRIX:
        CHECK(e->type == PS_PQ_VMATRIX && (e->range_ms > 0) != (e->range_expr != NULL) &&
              e->expr->kind == PS_PQ_VECTOR);
        check_tree(e->expr, size, depth + 1);
        break;
    case PS_PQ_SUBQUERY:
        CHECK(e->type == PS_PQ_VMATRIX && (e->range_ms > 0) != (e->range_expr != NULL) && e->step_ms >= 0 &&
              (e->step_expr == NULL || e->step_ms == 0));
        CHECK(check_tree(e->expr, size, depth + 1) == PS_PQ_VVECTOR);
        break;
    case PS_PQ_CALL:
        CHECK(e->func != NULL && e->type == e->func->ret);
        for (uint32_t i = 0; i < e->nargs; i++) {
            uint32_t k = i < e->func->nargs ? i : e->func->nargs - 1u;
            CHECK(check_tree(e->args[i], size, depth + 1) == e->func->args[k]);
        }
        break;
    case PS_PQ_AGG:
        CHECK(e->type == PS_PQ_VVECTOR);
        CHECK(check_tree(e->expr, size, depth + 1) == PS_PQ_VVECTOR);
        CHECK((e->param != NULL) == (e->aggop == PS_PQ_TOPK || e->aggop == PS_PQ_BOTTOMK ||
                                     e->aggop == PS_PQ_QUANTILE || e->aggop == PS_PQ_COUNT_VALUES));
        if (e->param != NULL)
            CHECK(check_tree(e->param, size, depth + 1) ==
                  (e->aggop == PS_PQ_COUNT_VALUES ? PS_PQ_VSTRING : PS_PQ_VSCALAR));
        CHECK(e->grouped || (e->ngroup == 0 && !e->without));
        break;
    case PS_PQ_BINARY: {
        ps_pq_vtype_t l = check_tree(e->lhs, size, depth + 1), r = check_tree(e->rhs, size, depth + 1);
        CHECK(l == PS_PQ_VSCALAR || l == PS_PQ_VVECTOR);
        CHECK(r == PS_PQ_VSCALAR || r == PS_PQ_VVECTOR);
        CHECK(e->type == (l == PS_PQ_VSCALAR && r == PS_PQ_VSCALAR ? PS_PQ_VSCALAR : PS_PQ_VVECTOR));
        CHECK((e->matching != NULL) == (l == PS_PQ_VVECTOR && r == PS_PQ_VVECTOR));
        bool set = e->binop == PS_PQ_AND || e->binop == PS_PQ_OR || e->binop == PS_PQ_UNLESS;
        if (e->matching != NULL)
            CHECK(set == (e->matching->card == PS_PQ_MANY_TO_MANY));
        CHECK(!e->return_bool || (e->binop >= PS_PQ_EQLC && e->binop <= PS_PQ_GTE));
        break;
    }
    case PS_PQ_UNARY:
    case PS_PQ_PAREN:
        CHECK(check_tree(e->expr, size, depth + 1) == e->type);
        if (e->kind == PS_PQ_UNARY)
            CHECK(e->type == PS_PQ_VSCALAR || e->type == PS_PQ_VVECTOR);
        break;
    default: CHECK(0);
    }
    return e->type;
}

/* The number at b->data[*i] (after "@ "): parsed, *i moved past it. false if there is none. */
static bool at_number(const ps_buf_t *b, size_t *i, double *v)
{
    char tmp[64];
    size_t n = 0;
    while (*i + n < b->len && n < sizeof(tmp) - 1 && strchr("+-.0123456789", b->data[*i + n]) != NULL)
        n++;
    if (n == 0)
        return false;
    memcpy(tmp, b->data + *i, n);
    tmp[n] = '\0';
    char *end;
    *v = strtod(tmp, &end);
    if (end != tmp + n)
        return false;
    *i += n;
    return true;
}

/* Prometheus' String() is not quite a fixed point, and Prometheus 2.42 does the same:
 *   - +Inf prints with its sign, so "Inf ^ x" prints "+Inf ^ x", which reads back as +(Inf ^ x) and
 *     prints "++Inf ^ x": every run of '+' before "Inf" is taken as one;
 *   - "@ t" prints milliseconds / 1000 as "%.3f" and reads seconds * 1000 rounded, which past about
 *     2^52 / 1000 s (a double's 52 bits no longer hold the milliseconds after the division) can move
 *     a millisecond each way: the numbers after "@ " may differ by that much. */
static bool same_form(const ps_buf_t *x, const ps_buf_t *y)
{
    size_t i = 0, j = 0;
    while (i < x->len && j < y->len) {
        if (i >= 2 && j >= 2 && memcmp(x->data + i - 2, "@ ", 2) == 0 && memcmp(y->data + j - 2, "@ ", 2) == 0) {
            double a, b;
            size_t i2 = i, j2 = j;
            if (at_number(x, &i2, &a) && at_number(y, &j2, &b)) {
                double m = fabs(a) > fabs(b) ? fabs(a) : fabs(b);
                if (!(fabs(a - b) <= 0.0015 + m * 0x1p-49))
                    return false;
                i = i2;
                j = j2;
                continue;
            }
        }
        if (x->data[i] == '+' && y->data[j] == '+') {
            size_t i2 = i, j2 = j;
            while (i2 < x->len && x->data[i2] == '+')
                i2++;
            while (j2 < y->len && y->data[j2] == '+')
                j2++;
            bool xi = x->len - i2 >= 3 && memcmp(x->data + i2, "Inf", 3) == 0;
            bool yi = y->len - j2 >= 3 && memcmp(y->data + j2, "Inf", 3) == 0;
            if (xi && yi) {
                i = i2;
                j = j2;
                continue;
            }
        }
        if (x->data[i] != y->data[j])
            return false;
        i++;
        j++;
    }
    return i == x->len && j == y->len;
}

/* Parses text (which must parse) and appends its String() to out. */
static void reformat(ps_arena_t *a, const ps_buf_t *text, ps_buf_t *out)
{
    ps_pq_node_t *e;
    ps_err_t err;
    int rc = ps_pq_parse((const char *)text->data, text->len, &relimits, a, &e, &err);
    if (rc != 0) {
        fprintf(stderr, "canonical form does not parse: %.*s\n  %s\n", (int)text->len, (const char *)text->data,
                err.msg);
        abort();
    }
    ps_pq_format(e, out);
    ps_pq_dispose(e);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_node_t *e = NULL;
    ps_err_t err;

    int rc = ps_pq_parse((const char *)data, size, &limits, &a, &e, &err);
    if (rc != 0) {
        CHECK(e == NULL);
        CHECK(rc == PS_EINVAL || rc == PS_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        ps_fuzz_check_pos(&err, data, size);
        ps_arena_dispose(&a);
        return 0;
    }
    check_tree(e, size, 1);

    ps_buf_t s1 = {0}, s2 = {0}, pretty = {0}, s3 = {0};
    ps_pq_format(e, &s1);
    ps_pq_pretty(e, 0, &pretty);
    ps_pq_dispose(e);
    reformat(&a, &s1, &s2);
    if (!same_form(&s1, &s2)) {
        fprintf(stderr, "String() is not stable:\n  %.*s\n  %.*s\n", (int)s1.len, (const char *)s1.data, (int)s2.len,
                (const char *)s2.data);
        abort();
    }
    reformat(&a, &pretty, &s3);
    CHECK(same_form(&s3, &s1));
    ps_buf_dispose(&s1);
    ps_buf_dispose(&s2);
    ps_buf_dispose(&s3);
    ps_buf_dispose(&pretty);
    ps_arena_dispose(&a);
    return 0;
}
