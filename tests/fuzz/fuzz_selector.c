/*
 * fuzz_selector.c - libFuzzer target for the selector language (parser/selector.re, selector.c,
 * matcher.c, regex.c) and for label sets (labels.c).
 *
 * Arbitrary bytes go through ps_expr_parse and ps_selector_parse; neither may crash, leak (the
 * PCRE2 codes of a failed parse must be freed) or take long. A failure must come with a message
 * (and err.pos, if set, inside the input and the line:column the message starts with);
 * a success must satisfy the tree's invariants (limits, matchers, grouping), its matchers must run
 * on a few values, and a number-only expression must evaluate.
 *
 * Build (clang; run from the repository root; the lexer is generated into a temporary directory):
 *   gen=$(mktemp -d) && re2c -W --no-generation-date -o "$gen/selector.re.c" parser/selector.re && \
 *   clang -std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=undefined -D_GNU_SOURCE -I src -I . \
 *     tests/fuzz/fuzz_selector.c $(find parser src/core -maxdepth 1 -name '*.c') "$gen/selector.re.c" \
 *     -lpcre2-8 -lm -lpthread -o fuzz_selector && rm -rf "$gen"
 * (that is parser's and src/core's .c files; parser/selector.c, matcher.c, regex.c, labels.c and core's
 * mem.c, err.c, labels.c are the ones needed)
 *   mkdir -p corpus && printf 'x{job="api",instance=~"10\\\\..*"}' > corpus/1 && \
 *     printf 'sum by (job) (rate(x[5m])) + 1' > corpus/2
 *   ./fuzz_selector -max_len=4096 -timeout=10 corpus/
 * A dictionary helps (-dict=FILE, one "token" a line): "{" "}" "=~" "!~" "!=" "sum" "by"
 * "without" "(" ")" "\"" "'" "`" "\\x" "\\u" "0x" "e+" "Inf" "NaN" "offset" "[5m]" "^" "#".
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "parser/labels.h"
#include "parser/selector.h"

#define CHECK(c)                                                                                                       \
    do {                                                                                                               \
        if (!(c))                                                                                                      \
            abort();                                                                                                   \
    } while (0)

static void check_selector(ps_selector_t *sel, const uint8_t *data, size_t size)
{
    bool non_empty = false;
    CHECK(sel->n >= 1 && sel->n <= 64);
    for (uint32_t i = 0; i < sel->n; i++) {
        ps_matcher_t *m = &sel->m[i];
        CHECK(m->name != NULL && m->value != NULL);
        CHECK(strlen(m->name) <= m->nlen && m->name[m->nlen] == '\0');
        CHECK(m->value[m->vlen] == '\0');
        CHECK(m->nlen > 0);
        bool re = m->op == PS_MATCH_RE || m->op == PS_MATCH_NRE;
        CHECK(re == (m->re != NULL) && re == (m->md != NULL));
        CHECK(m->matches_empty == ps_matcher_match(m, "", 0));
        non_empty |= !m->matches_empty;
        if (m->op == PS_MATCH_EQ)
            CHECK(ps_matcher_match(m, m->value, m->vlen));
        if (m->op == PS_MATCH_NEQ)
            CHECK(!ps_matcher_match(m, m->value, m->vlen));
        (void)ps_matcher_match(m, "a", 1);
        (void)ps_matcher_match(m, (const char *)data, size < 64 ? size : 64);
    }
    CHECK(non_empty);
}

static void check_expr(ps_expr_t *e, const uint8_t *data, size_t size, int depth)
{
    CHECK(e != NULL && depth <= 64);
    switch (e->kind) {
    case PS_EXPR_SELECTOR: check_selector(&e->sel, data, size); break;
    case PS_EXPR_NUMBER: break;
    case PS_EXPR_NEG:
        CHECK(ps_expr_is_scalar(e->lhs) == ps_expr_is_scalar(e));
        check_expr(e->lhs, data, size, depth + 1);
        break;
    case PS_EXPR_BINARY:
        CHECK(strchr("+-*/%^", e->op) != NULL && e->op != '\0');
        CHECK(ps_expr_is_scalar(e->lhs) && ps_expr_is_scalar(e->rhs));
        check_expr(e->lhs, data, size, depth + 1);
        check_expr(e->rhs, data, size, depth + 1);
        break;
    case PS_EXPR_SUM:
        CHECK(!ps_expr_is_scalar(e->lhs));
        CHECK(e->grouped || (e->ngroup == 0 && !e->without));
        CHECK(e->ngroup <= 64);
        for (uint32_t i = 0; i < e->ngroup; i++)
            CHECK(e->group[i] != NULL && e->group[i][0] != '\0');
        check_expr(e->lhs, data, size, depth + 1);
        break;
    default: CHECK(0);
    }
    CHECK(e->pos <= size);
}

/* A position, when there is one, is in the input, and the message starts with its line:column. */
static void check_pos(const ps_err_t *err, const uint8_t *data, size_t size)
{
    CHECK(err->pos >= -1 && (err->pos < 0 || (size_t)err->pos <= size));
    if (err->pos < 0)
        return;
    unsigned line = 1;
    size_t bol = 0;
    for (size_t i = 0; i < (size_t)err->pos; i++)
        if (data[i] == '\n') {
            line++;
            bol = i + 1;
        }
    char want[48];
    int n = snprintf(want, sizeof(want), "%u:%zu: ", line, (size_t)err->pos - bol + 1);
    CHECK(n > 0 && strncmp(err->msg, want, (size_t)n) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_expr_t *e = NULL;
    ps_selector_t sel;
    ps_err_t err;

    int rc = ps_expr_parse((const char *)data, size, &a, &e, &err);
    if (rc == 0) {
        check_expr(e, data, size, 1);
        if (ps_expr_is_scalar(e)) {
            double v = ps_expr_eval_scalar(e);
            (void)isnan(v);
        }
        ps_expr_dispose(e);
        ps_expr_dispose(e); /* dispose is idempotent */
    } else {
        CHECK(e == NULL);
        CHECK(rc == PS_EINVAL || rc == PS_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        check_pos(&err, data, size);
    }

    rc = ps_selector_parse((const char *)data, size, &a, &sel, &err);
    if (rc == 0) {
        check_selector(&sel, data, size);
    } else {
        CHECK(sel.n == 0 && sel.m == NULL);
        CHECK(err.msg[0] != '\0');
    }
    ps_selector_dispose(&sel);

    /* the same bytes as a label set (the push's labels parameter): positions are "1:<offset+1>" */
    ps_labels_t ls;
    rc = ps_parse_labelset((const char *)data, size, &a, &ls, &err);
    if (rc == 0) {
        CHECK(ls.n <= PS_LABELS_MAX);
        for (uint32_t i = 1; i < ls.n; i++)
            CHECK(strcmp(ls.pairs[i - 1].name, ls.pairs[i].name) < 0);
    } else {
        CHECK(rc == PS_EINVAL && err.code == rc && err.msg[0] != '\0');
        CHECK(err.pos >= -1 && (err.pos < 0 || (size_t)err.pos <= size));
        char want[32];
        int n = snprintf(want, sizeof(want), "1:%d: ", (int)err.pos + 1);
        CHECK(err.pos < 0 || (n > 0 && strncmp(err.msg, want, (size_t)n) == 0));
    }
    ps_arena_dispose(&a);
    return 0;
}
