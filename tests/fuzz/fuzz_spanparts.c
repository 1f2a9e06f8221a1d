/*
 * fuzz_spanparts.c - libFuzzer target for the span parts decoder (storage/spanparts.c).
 *
 * Arbitrary bytes go through ps_span_parts_decode; none may crash. A record that decodes must
 * satisfy its invariants (spans not descending, nodes ascending and nonzero within a group, the
 * trace id of its length), encode again to the same bytes (the encoder is deterministic and every
 * record has one encoding), and decode again to the same parts.
 *
 * Build (clang): tests/fuzz/build.sh; by hand:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
 *     -I <include tree> tests/fuzz/fuzz_spanparts.c storage/spanparts.c <core sources> -o fuzz_spanparts
 * Seeds: PS_FUZZ_SPANPARTS_SEEDS=<dir> writes records the encoder makes into <dir>.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/internal.h"

#include "fuzzutil.h"

static int same_group(const ps_span_part_t *a, const ps_span_part_t *b)
{
    return a->span == b->span && a->flags == b->flags && a->trace_len == b->trace_len &&
           (a->trace_len == 0 || memcmp(a->trace, b->trace, a->trace_len) == 0);
}

static void write_seeds(const char *dir)
{
    static const char *tr = "4bf92f3577b34da6a3ce929d0e0e4736";
    ps_span_part_t p[4] = {
        {.span = 0xaa, .node = 5, .value = 10, .trace = tr, .trace_len = 32},
        {.span = 0xaa, .node = 300, .value = -2, .trace = tr, .trace_len = 32},
        {.span = 0x0123456789abcdefull, .node = 7, .value = 1, .trace = "t-1", .trace_len = 3, .flags = PS_SPAN_F_UPPER},
        {.span = 0xfedcba9876543210ull, .node = 9, .value = 4, .flags = PS_SPAN_F_PROFILE_ID},
    };
    for (size_t n = 1; n <= 4; n++) {
        ps_buf_t b = PS_BUF_INIT;
        ps_span_parts_encode(p, n, &b);
        ps_fuzz_write_seed(dir, "seed", (int)n, b.data, b.len);
        ps_buf_dispose(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_fuzz_seeds_once("PS_FUZZ_SPANPARTS_SEEDS", write_seeds);
    ps_arena_t a = PS_ARENA_INIT;
    ps_span_part_t *parts;
    size_t n;
    ps_err_t err;
    if (ps_span_parts_decode(data, size, &a, &parts, &n, &err) != 0) {
        CHECK(err.code == PS_ECORRUPT);
        ps_arena_dispose(&a);
        return 0;
    }
    for (size_t i = 0; i < n; i++) {
        CHECK(parts[i].span != 0 && parts[i].node != 0);
        CHECK((parts[i].trace_len == 0) == (parts[i].trace == NULL));
        if (i > 0) {
            CHECK(parts[i].span >= parts[i - 1].span);
            if (same_group(&parts[i], &parts[i - 1]))
                CHECK(parts[i].node > parts[i - 1].node);
        }
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_span_parts_encode(parts, n, &b);
    ps_span_part_t *p2;
    size_t n2;
    CHECK(ps_span_parts_decode(b.data, b.len, &a, &p2, &n2, &err) == 0);
    CHECK(n2 == n);
    for (size_t i = 0; i < n; i++)
        CHECK(p2[i].span == parts[i].span && p2[i].node == parts[i].node && p2[i].value == parts[i].value &&
              same_group(&p2[i], &parts[i]));
    /* and the encoding of what decoded is stable */
    ps_buf_t b2 = PS_BUF_INIT;
    ps_span_parts_encode(p2, n2, &b2);
    CHECK(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0);
    ps_buf_dispose(&b2);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    return 0;
}
