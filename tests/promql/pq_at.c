/*
 * pq_at.c - the @-modifier variants of Prometheus' promql/test.go (atModifierTestCases) for
 * tests/integration/test_promql_testdata.py, which cannot rewrite a syntax tree itself.
 *
 * Reads lines "<ms>\t<query>" on stdin and writes one line per input line: the query with
 * "@ <ms/1000>" on every selector and subquery that has no numeric @ and is not inside a subquery
 * (a matrix's @ is its selector's; @ start() and @ end() are replaced, as test.go's Timestamp
 * takes precedence over them when printed), in Prometheus' String() form (ps_pq_format); an empty
 * line when the query calls a function whose answer depends on the evaluation time
 * (AtModifierUnsafeFunctions) outside subqueries, which test.go leaves without variants; "!" and
 * the parser's message when it does not parse.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "parser/promql.h"

static const char *const unsafe[] = {"days_in_month", "day_of_month", "day_of_week", "day_of_year", "hour", "minute",
                                     "month", "year", "predict_linear", "time", "timestamp", NULL};

/* test.go's Inspect: false when a call of an unsafe function is found */
static int set_at(ps_pq_node_t *e, int64_t ts)
{
    if (e == NULL)
        return 1;
    switch (e->kind) {
    case PS_PQ_VECTOR:
    case PS_PQ_SUBQUERY:
        if (e->at != PS_PQ_AT_TIME) {
            e->at = PS_PQ_AT_TIME;
            e->at_ms = ts;
        }
        return 1; /* nothing inside a subquery: its @ is set now */
    case PS_PQ_MATRIX: return set_at(e->expr, ts);
    case PS_PQ_CALL: {
        int ok = 1;
        for (int i = 0; unsafe[i] != NULL; i++)
            if (strcmp(e->func->name, unsafe[i]) == 0)
                ok = 0;
        for (uint32_t i = 0; i < e->nargs; i++)
            ok &= set_at(e->args[i], ts);
        return ok;
    }
    case PS_PQ_AGG: return set_at(e->param, ts) & set_at(e->expr, ts);
    case PS_PQ_BINARY: return set_at(e->lhs, ts) & set_at(e->rhs, ts);
    case PS_PQ_UNARY:
    case PS_PQ_PAREN: return set_at(e->expr, ts);
    default: return 1;
    }
}

int main(void)
{
    char *line = NULL;
    size_t cap = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) > 0) {
        if (line[n - 1] == '\n')
            line[--n] = '\0';
        char *tab = strchr(line, '\t');
        if (tab == NULL)
            return 2;
        int64_t ts = strtoll(line, NULL, 10);
        const char *q = tab + 1;
        ps_arena_t a = PS_ARENA_INIT;
        ps_pq_node_t *e;
        ps_err_t err;
        ps_pq_limits_t lim; /* 2.42's language: the files are 2.42's (holt_winters) */
        ps_pq_limits_default(&lim);
        lim.compat = 2;
        if (ps_pq_parse(q, strlen(q), &lim, &a, &e, &err) != 0) {
            printf("!%s\n", err.msg);
        } else {
            ps_buf_t out = PS_BUF_INIT;
            if (set_at(e, ts))
                ps_pq_format(e, &out);
            printf("%.*s\n", (int)out.len, (const char *)out.data);
            ps_buf_dispose(&out);
            ps_pq_dispose(e);
        }
        ps_arena_dispose(&a);
        fflush(stdout);
    }
    free(line);
    return 0;
}
