/*
 * fuzz_selector.c - libFuzzer target for the selector language (parser/selector.re, selector.c,
 * matcher.c, regex.c) and for label sets (labels.c).
 *
 * Arbitrary bytes go through ps_selector_parse (PromQL's parser has its own target, fuzz_promql);
 * it may not crash, leak (the PCRE2 codes of a failed parse must be freed) or take long. A failure
 * must come with a message (and err.pos, if set, inside the input and the line:column the message
 * starts with); a success must satisfy the selector's invariants (limits, matchers), and its
 * matchers must run on a few values.
 *
 * Build (clang; run from the repository root; the lexer is generated into a temporary directory):
 *   gen=$(mktemp -d) && re2c -W --no-generation-date -o "$gen/selector.re.c" parser/selector.re && \
 *   clang -std=gnu11 -g -O1 -fno-omit-frame-pointer -fsanitize=fuzzer,address,undefined \
 *     -fno-sanitize-recover=undefined -D_GNU_SOURCE -I src -I . \
 *     tests/fuzz/fuzz_selector.c $(find parser core -maxdepth 1 -name '*.c') "$gen/selector.re.c" \
 *     -lpcre2-8 -lm -lpthread -o fuzz_selector && rm -rf "$gen"
 * (that is parser's and core's .c files; parser/selector.c, matcher.c, regex.c, labels.c and core's
 * mem.c, err.c, labels.c are the ones needed)
 *   mkdir -p corpus && printf 'x{job="api",instance=~"10\\\\..*"}' > corpus/1 && \
 *     printf '{__name__=~"memory:.*",job!="batch"}' > corpus/2
 *   ./fuzz_selector -max_len=4096 -timeout=10 corpus/
 * A dictionary helps (-dict=FILE, one "token" a line): "{" "}" "=~" "!~" "!=" "sum" "by"
 * "without" "(" ")" "\"" "'" "`" "\\x" "\\u" "0x" "e+" "Inf" "NaN" "offset" "[5m]" "^" "#".
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/mem.h"
#include "parser/labels.h"
#include "parser/selector.h"

#include "fuzzutil.h"

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

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_selector_t sel;
    ps_err_t err;
    int rc;

    rc = ps_selector_parse((const char *)data, size, &a, &sel, &err);
    if (rc == 0) {
        check_selector(&sel, data, size);
    } else {
        CHECK(sel.n == 0 && sel.m == NULL);
        CHECK(rc == PS_EINVAL || rc == PS_ETOOBIG);
        CHECK(err.code == rc && err.msg[0] != '\0' && memchr(err.msg, '\0', sizeof(err.msg)) != NULL);
        ps_fuzz_check_pos(&err, data, size);
    }
    ps_selector_dispose(&sel);
    ps_selector_dispose(&sel); /* dispose is idempotent */

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
