/*
 * test_delta.c - cumulative profiles into deltas (src/scrape/delta.c). Profiles are built by hand:
 * three functions main.a, main.b, main.c in a.go, one location each; a stack is written as a
 * string of function letters, leaf first ("ab" = main.a called by main.b). Every expectation is
 * the exact value a merge over the scrape's interval must give.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ingest/ingest.h"
#include "scrape/delta.h"

static const char *STR[] = {"",      "alloc_objects", "count",  "alloc_space", "bytes", "inuse_objects",
                            "inuse_space", "contentions", "delay", "nanoseconds", "main.a", "main.b",
                            "main.c", "a.go",  "thread", "t1",     "t2",       "/bin/app", "goroutine"};
enum { S_ALLOC_OBJECTS = 1, S_COUNT, S_ALLOC_SPACE, S_BYTES, S_INUSE_OBJECTS, S_INUSE_SPACE, S_CONTENTIONS, S_DELAY,
       S_NANOS, S_MAIN_A, S_A_GO = 13, S_THREAD, S_T1, S_T2, S_BIN, S_GOROUTINE };

static const ps_value_type_t MEMORY[] = {{S_ALLOC_OBJECTS, S_COUNT}, {S_ALLOC_SPACE, S_BYTES},
                                         {S_INUSE_OBJECTS, S_COUNT}, {S_INUSE_SPACE, S_BYTES}};
static const ps_value_type_t MUTEX[] = {{S_CONTENTIONS, S_COUNT}, {S_DELAY, S_NANOS}};
static const ps_value_type_t GOROUTINE[] = {{S_GOROUTINE, S_COUNT}};

typedef struct spec {
    const char *stack;  /* function letters, leaf first */
    int64_t v[4];
    const char *thread; /* sample label thread=..., or NULL */
} spec_t;

/* How the symbols are laid out: base != 0 puts every location in a mapping of /bin/app loaded at
 * base (another process start: other absolute addresses); reversed lists the locations in the
 * opposite order (other location indexes for the same frames). */
typedef struct layout {
    uint64_t base;
    bool reversed;
} layout_t;

static ps_profile_t *mk(ps_arena_t *a, const ps_value_type_t *types, uint32_t nt, const spec_t *sp, uint32_t n,
                        layout_t lay)
{
    ps_profile_t *p = ps_arena_calloc(a, 1, sizeof(*p));
    p->nstrings = sizeof(STR) / sizeof(STR[0]);
    p->strings = ps_arena_alloc(a, p->nstrings * sizeof(ps_str_t));
    for (uint32_t i = 0; i < p->nstrings; i++)
        p->strings[i] = (ps_str_t){STR[i], (uint32_t)strlen(STR[i])};
    p->ntypes = nt;
    p->sample_types = (ps_value_type_t *)types;
    p->nfunctions = 3;
    p->functions = ps_arena_calloc(a, 3, sizeof(ps_function_t));
    for (uint32_t f = 0; f < 3; f++)
        p->functions[f] = (ps_function_t){S_MAIN_A + f, S_MAIN_A + f, S_A_GO, 1};
    if (lay.base) {
        p->nmappings = 1;
        p->mappings = ps_arena_calloc(a, 1, sizeof(ps_mapping_t));
        p->mappings[0] = (ps_mapping_t){lay.base, lay.base + 0x100000, 0, S_BIN, 0, 0};
    }
    p->nlocations = 3;
    p->locations = ps_arena_calloc(a, 3, sizeof(ps_location_t));
    for (uint32_t f = 0; f < 3; f++) {
        uint32_t li = lay.reversed ? 2 - f : f;
        ps_location_t *l = &p->locations[li];
        l->mapping = lay.base ? 1 : 0;
        l->address = lay.base + 0x1000 + 0x10 * f;
        l->nlines = 1;
        l->lines = ps_arena_calloc(a, 1, sizeof(ps_line_t));
        l->lines[0] = (ps_line_t){f + 1, 10 * (f + 1), 0};
    }
    p->nsamples = n;
    p->samples = ps_arena_calloc(a, n + 1, sizeof(ps_sample_t));
    for (uint32_t i = 0; i < n; i++) {
        ps_sample_t *s = &p->samples[i];
        s->nlocs = (uint32_t)strlen(sp[i].stack);
        s->locs = ps_arena_alloc(a, (s->nlocs + 1) * sizeof(uint32_t));
        for (uint32_t j = 0; j < s->nlocs; j++) {
            uint32_t f = (uint32_t)(sp[i].stack[j] - 'a');
            s->locs[j] = (lay.reversed ? 2 - f : f) + 1;
        }
        s->values = ps_arena_alloc(a, nt * sizeof(int64_t));
        memcpy(s->values, sp[i].v, nt * sizeof(int64_t));
        if (sp[i].thread) {
            s->nlabels = 1;
            s->labels = ps_arena_calloc(a, 1, sizeof(ps_label_t));
            s->labels[0] = (ps_label_t){S_THREAD, strcmp(sp[i].thread, "t1") == 0 ? S_T1 : S_T2, 0, 0};
        }
    }
    return p;
}

/* One scrape: applies the delta and checks the modes and every value of every sample. */
static void scrape(ps_delta_state_t *st, const ps_value_type_t *types, uint32_t nt, const spec_t *sp, uint32_t n,
                   layout_t lay, const uint8_t *want_modes, const int64_t (*want)[4])
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t *p = mk(&a, types, nt, sp, n, lay);
    uint8_t modes[4] = {99, 99, 99, 99};
    ps_profile_t *q = ps_delta_apply(st, p, modes, &a);
    for (uint32_t k = 0; k < nt; k++)
        assert_int_equal(modes[k], want_modes[k]);
    assert_int_equal(q->nsamples, n);
    for (uint32_t i = 0; i < n; i++) {
        assert_ptr_equal(q->samples[i].locs, p->samples[i].locs); /* stacks and symbols are p's */
        for (uint32_t k = 0; k < nt; k++) {
            if (q->samples[i].values[k] != want[i][k])
                print_error("sample %u (%s) type %u: got %lld, want %lld\n", i, sp[i].stack, k,
                            (long long)q->samples[i].values[k], (long long)want[i][k]);
            assert_int_equal(q->samples[i].values[k], want[i][k]);
            assert_int_equal(p->samples[i].values[k], sp[i].v[k]); /* the scraped profile is unchanged */
        }
    }
    ps_arena_dispose(&a);
}

static const uint8_t FIRST_MEM[] = {PS_INGEST_SKIP, PS_INGEST_SKIP, PS_INGEST_ASIS, PS_INGEST_ASIS};
static const uint8_t NEXT_MEM[] = {PS_INGEST_DELTA, PS_INGEST_DELTA, PS_INGEST_ASIS, PS_INGEST_ASIS};
static const uint8_t FIRST_MUTEX[] = {PS_INGEST_SKIP, PS_INGEST_SKIP};
static const uint8_t NEXT_MUTEX[] = {PS_INGEST_DELTA, PS_INGEST_DELTA};
static const layout_t PLAIN = {0, false};

#define N(x) (uint32_t)(sizeof(x) / sizeof(x[0]))

static void test_cumulative_types(void **state)
{
    const char *yes[] = {"alloc_objects", "alloc_space", "contentions", "delay"};
    const char *no[] = {"inuse_objects", "inuse_space", "samples", "cpu", "goroutine", "alloc", "delays", ""};
    for (size_t i = 0; i < N(yes); i++)
        assert_true(ps_delta_is_cumulative((ps_str_t){yes[i], (uint32_t)strlen(yes[i])}));
    for (size_t i = 0; i < N(no); i++)
        assert_false(ps_delta_is_cumulative((ps_str_t){no[i], (uint32_t)strlen(no[i])}));
}

/* The first scrape is a baseline only; then each scrape stores what happened since the one before. */
static void test_consecutive(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 1000, 1, 100}, NULL}, {"ab", {5, 500, 2, 200}, NULL}};
    int64_t w1[][4] = {{10, 1000, 1, 100}, {5, 500, 2, 200}};
    scrape(&st, MEMORY, 4, s1, 2, PLAIN, FIRST_MEM, w1);
    assert_true(st.valid);
    spec_t s2[] = {{"a", {15, 1600, 3, 300}, NULL}, {"ab", {5, 500, 0, 0}, NULL}};
    int64_t w2[][4] = {{5, 600, 3, 300}, {0, 0, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 2, PLAIN, NEXT_MEM, w2);
    spec_t s3[] = {{"ab", {8, 800, 1, 10}, NULL}, {"a", {20, 2000, 4, 400}, NULL}}; /* another sample order */
    int64_t w3[][4] = {{3, 300, 1, 10}, {5, 400, 4, 400}};
    scrape(&st, MEMORY, 4, s3, 2, PLAIN, NEXT_MEM, w3);
    ps_delta_dispose(&st);
    assert_false(st.valid);
}

/* A process restart: the total went down, so the new process' counts are stored as they are (not
 * negative, and not the new count plus the old one); the restarted scrape is the new baseline. */
static void test_reset_by_total(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {100, 10000, 0, 0}, NULL}, {"b", {50, 5000, 0, 0}, NULL}};
    int64_t w1[][4] = {{100, 10000, 0, 0}, {50, 5000, 0, 0}};
    scrape(&st, MEMORY, 4, s1, 2, PLAIN, FIRST_MEM, w1);
    spec_t s2[] = {{"a", {3, 300, 0, 0}, NULL}, {"b", {60, 6000, 0, 0}, NULL}}; /* b is higher all the same */
    int64_t w2[][4] = {{3, 300, 0, 0}, {60, 6000, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 2, PLAIN, NEXT_MEM, w2);
    spec_t s3[] = {{"a", {4, 400, 0, 0}, NULL}, {"b", {61, 6100, 0, 0}, NULL}};
    int64_t w3[][4] = {{1, 100, 0, 0}, {1, 100, 0, 0}};
    scrape(&st, MEMORY, 4, s3, 2, PLAIN, NEXT_MEM, w3);
    ps_delta_dispose(&st);
}

/* A restart that the total does not show (the new process already counts more): one stack went
 * down, which a counter since process start cannot do. */
static void test_reset_by_stack(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {100, 1000, 0, 0}, NULL}, {"b", {1, 10, 0, 0}, NULL}};
    int64_t w1[][4] = {{100, 1000, 0, 0}, {1, 10, 0, 0}};
    scrape(&st, MEMORY, 4, s1, 2, PLAIN, FIRST_MEM, w1);
    spec_t s2[] = {{"a", {50, 500, 0, 0}, NULL}, {"b", {200, 2000, 0, 0}, NULL}};
    int64_t w2[][4] = {{50, 500, 0, 0}, {200, 2000, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 2, PLAIN, NEXT_MEM, w2);
    ps_delta_dispose(&st);
}

/* A new stack counts from zero; a stack that is gone stores nothing and leaves the baseline. */
static void test_stacks_appear_and_disappear(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 100, 0, 0}, NULL}, {"b", {20, 200, 0, 0}, NULL}};
    int64_t w1[][4] = {{10, 100, 0, 0}, {20, 200, 0, 0}};
    scrape(&st, MEMORY, 4, s1, 2, PLAIN, FIRST_MEM, w1);
    spec_t s2[] = {{"a", {12, 120, 0, 0}, NULL}, {"c", {25, 250, 0, 0}, NULL}, {"cb", {1, 7, 0, 0}, NULL}};
    int64_t w2[][4] = {{2, 20, 0, 0}, {25, 250, 0, 0}, {1, 7, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 3, PLAIN, NEXT_MEM, w2);
    spec_t s3[] = {{"a", {12, 120, 0, 0}, NULL}, {"c", {26, 260, 0, 0}, NULL}, {"cb", {1, 7, 0, 0}, NULL}};
    int64_t w3[][4] = {{0, 0, 0, 0}, {1, 10, 0, 0}, {0, 0, 0, 0}};
    scrape(&st, MEMORY, 4, s3, 3, PLAIN, NEXT_MEM, w3);
    ps_delta_dispose(&st);
}

/* Sample labels are part of the stack: two threads on one stack are two baselines. One stack listed
 * twice in a scrape: its delta goes to the first sample, the second gets 0 (not twice the delta). */
static void test_labels_and_repeated_stacks(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 100, 0, 0}, "t1"}, {"a", {20, 200, 0, 0}, "t2"}, {"b", {10, 100, 0, 0}, NULL},
                   {"b", {5, 50, 0, 0}, NULL}};
    int64_t w1[][4] = {{10, 100, 0, 0}, {20, 200, 0, 0}, {10, 100, 0, 0}, {5, 50, 0, 0}};
    scrape(&st, MEMORY, 4, s1, 4, PLAIN, FIRST_MEM, w1);
    spec_t s2[] = {{"a", {15, 150, 0, 0}, "t1"}, {"a", {25, 260, 0, 0}, "t2"}, {"b", {12, 120, 0, 0}, NULL},
                   {"b", {6, 60, 0, 0}, NULL}};
    int64_t w2[][4] = {{5, 50, 0, 0}, {5, 60, 0, 0}, {3, 30, 0, 0}, {0, 0, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 4, PLAIN, NEXT_MEM, w2);
    ps_delta_dispose(&st);
}

/* Stacks are recognised by content: another load address (ASLR) and other location indexes. */
static void test_stable_across_process_layout(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 100, 0, 0}, NULL}, {"abc", {20, 200, 0, 0}, NULL}};
    int64_t w1[][4] = {{10, 100, 0, 0}, {20, 200, 0, 0}};
    scrape(&st, MEMORY, 4, s1, 2, (layout_t){0x400000, false}, FIRST_MEM, w1);
    spec_t s2[] = {{"a", {11, 110, 0, 0}, NULL}, {"abc", {25, 250, 0, 0}, NULL}};
    int64_t w2[][4] = {{1, 10, 0, 0}, {5, 50, 0, 0}};
    scrape(&st, MEMORY, 4, s2, 2, (layout_t){0x7f0000000000, true}, NEXT_MEM, w2);
    /* "cba" is another stack than "abc" */
    spec_t s3[] = {{"a", {11, 110, 0, 0}, NULL}, {"abc", {25, 250, 0, 0}, NULL}, {"cba", {3, 30, 0, 0}, NULL}};
    int64_t w3[][4] = {{0, 0, 0, 0}, {0, 0, 0, 0}, {3, 30, 0, 0}};
    scrape(&st, MEMORY, 4, s3, 3, (layout_t){0x500000, false}, NEXT_MEM, w3);
    ps_delta_dispose(&st);
}

/* Modes per sample type: a restart seen in one type keeps that type as it is, the other is a delta;
 * a profile without cumulative types is returned as it is and leaves the baseline alone; another
 * set of sample types has no usable baseline. */
static void test_modes_per_type(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 1000}, NULL}};
    int64_t w1[][4] = {{10, 1000}};
    scrape(&st, MUTEX, 2, s1, 1, PLAIN, FIRST_MUTEX, w1);
    spec_t s2[] = {{"a", {5, 1500}, NULL}};
    int64_t w2[][4] = {{5, 500}};
    scrape(&st, MUTEX, 2, s2, 1, PLAIN, NEXT_MUTEX, w2);
    spec_t s3[] = {{"a", {6, 1600}, NULL}};
    int64_t w3[][4] = {{1, 100}};
    scrape(&st, MUTEX, 2, s3, 1, PLAIN, NEXT_MUTEX, w3);

    /* no cumulative type: p itself, ASIS, baseline untouched */
    ps_arena_t a = PS_ARENA_INIT;
    spec_t g[] = {{"ab", {7}, NULL}};
    ps_profile_t *p = mk(&a, GOROUTINE, 1, g, 1, PLAIN);
    uint8_t modes[1] = {99};
    assert_ptr_equal(ps_delta_apply(&st, p, modes, &a), p);
    assert_int_equal(modes[0], PS_INGEST_ASIS);
    assert_true(st.valid);
    assert_int_equal(st.ntypes, 2);
    assert_int_equal(st.totals[0], 6);
    assert_int_equal(st.totals[1], 1600);
    ps_arena_dispose(&a);

    /* the same target now answers with four sample types: a new baseline */
    spec_t s4[] = {{"a", {7, 1700, 1, 1}, NULL}};
    int64_t w4[][4] = {{7, 1700, 1, 1}};
    scrape(&st, MEMORY, 4, s4, 1, PLAIN, FIRST_MEM, w4);
    spec_t s5[] = {{"a", {9, 1800, 2, 2}, NULL}};
    int64_t w5[][4] = {{2, 100, 2, 2}};
    scrape(&st, MEMORY, 4, s5, 1, PLAIN, NEXT_MEM, w5);
    ps_delta_dispose(&st);
}

/* An empty scrape after a busy one is a restart (total 0 < total before); nothing to store. */
static void test_empty_profile(void **state)
{
    ps_delta_state_t st = {0};
    spec_t s1[] = {{"a", {10, 1000}, NULL}};
    int64_t w1[][4] = {{10, 1000}};
    scrape(&st, MUTEX, 2, s1, 1, PLAIN, FIRST_MUTEX, w1);
    scrape(&st, MUTEX, 2, NULL, 0, PLAIN, NEXT_MUTEX, NULL);
    assert_int_equal(st.totals[0], 0);
    spec_t s3[] = {{"a", {2, 200}, NULL}};
    int64_t w3[][4] = {{2, 200}};
    scrape(&st, MUTEX, 2, s3, 1, PLAIN, NEXT_MUTEX, w3);
    ps_delta_dispose(&st);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cumulative_types),
        cmocka_unit_test(test_consecutive),
        cmocka_unit_test(test_reset_by_total),
        cmocka_unit_test(test_reset_by_stack),
        cmocka_unit_test(test_stacks_appear_and_disappear),
        cmocka_unit_test(test_labels_and_repeated_stacks),
        cmocka_unit_test(test_stable_across_process_layout),
        cmocka_unit_test(test_modes_per_type),
        cmocka_unit_test(test_empty_profile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
