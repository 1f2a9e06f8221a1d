/*
 * test_focus.c - unit tests for src/query/focus.c (pprof's -focus, -ignore, -hide, -show,
 * -show_from) and list.c (pprof's -list) on a hand-built profile whose answers are worked out by
 * hand from pprof's profile/filter.go: an inlined location, a location without lines in a mapping,
 * an empty stack, recursion; bad regexps; a regexp that hits PCRE2's limits. The integration test
 * test_query_focus.py compares the same with go tool pprof on real profiles.
 *
 * The profile (stacks leaf first; location 2 holds the inlined inl (innermost) in mid):
 *   s0 = 10: [leaf@1, (inl@7 in mid@3), main@1]
 *   s1 =  5: [mid@4, main@2]
 *   s2 =  3: [0x40 in libc.so (no lines), main@2]
 *   s3 =  2: [] (an empty stack)
 *   s4 =  7: [rec@5, rec@6, main@1]
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "query/query.h"

enum { F_MAIN = 1, F_MID, F_INL, F_LEAF, F_REC };

typedef struct fx {
    ps_profile_t p;
    ps_str_t strs[16];
    ps_value_type_t types[1];
    ps_function_t funcs[5];
    ps_location_t locs[8];
    ps_line_t lines[10];
    ps_mapping_t maps[1];
    ps_sample_t samples[5];
    uint32_t stacks[16];
    int64_t vals[5];
} fx_t;

static const char *STRS[] = {"", "samples", "count", "main.main", "pkg.mid", "pkg.inl", "pkg.leaf", "pkg.rec",
                             "main.go", "pkg/mid.go", "pkg/inl.go", "/lib/libc.so.6"};

static void fx_build(fx_t *x)
{
    memset(x, 0, sizeof(*x));
    ps_profile_t *p = &x->p;
    for (uint32_t i = 0; i < sizeof(STRS) / sizeof(STRS[0]); i++)
        x->strs[i] = (ps_str_t){STRS[i], (uint32_t)strlen(STRS[i])};
    p->strings = x->strs;
    p->nstrings = sizeof(STRS) / sizeof(STRS[0]);
    x->types[0] = (ps_value_type_t){1, 2};
    p->sample_types = x->types;
    p->ntypes = 1;
    /* functions: name, file */
    x->funcs[0] = (ps_function_t){.name = 3, .filename = 8};  /* main.main main.go */
    x->funcs[1] = (ps_function_t){.name = 4, .filename = 9};  /* pkg.mid pkg/mid.go */
    x->funcs[2] = (ps_function_t){.name = 5, .filename = 10}; /* pkg.inl pkg/inl.go */
    x->funcs[3] = (ps_function_t){.name = 6, .filename = 9};  /* pkg.leaf pkg/mid.go */
    x->funcs[4] = (ps_function_t){.name = 7, .filename = 9};  /* pkg.rec pkg/mid.go */
    p->functions = x->funcs;
    p->nfunctions = 5;
    x->maps[0] = (ps_mapping_t){.filename = 11};
    p->mappings = x->maps;
    p->nmappings = 1;
    /* locations (1-based): 1 leaf@1; 2 inl@7 in mid@3; 3 main@1; 4 mid@4; 5 main@2; 6 libc 0x40;
     * 7 rec@5; 8 rec@6 */
    ps_line_t *l = x->lines;
    l[0] = (ps_line_t){F_LEAF, 1, 0};
    l[1] = (ps_line_t){F_INL, 7, 0};
    l[2] = (ps_line_t){F_MID, 3, 0};
    l[3] = (ps_line_t){F_MAIN, 1, 0};
    l[4] = (ps_line_t){F_MID, 4, 0};
    l[5] = (ps_line_t){F_MAIN, 2, 0};
    l[6] = (ps_line_t){F_REC, 5, 0};
    l[7] = (ps_line_t){F_REC, 6, 0};
    x->locs[0] = (ps_location_t){.nlines = 1, .lines = &l[0]};
    x->locs[1] = (ps_location_t){.nlines = 2, .lines = &l[1]};
    x->locs[2] = (ps_location_t){.nlines = 1, .lines = &l[3]};
    x->locs[3] = (ps_location_t){.nlines = 1, .lines = &l[4]};
    x->locs[4] = (ps_location_t){.nlines = 1, .lines = &l[5]};
    x->locs[5] = (ps_location_t){.mapping = 1, .address = 0x40};
    x->locs[6] = (ps_location_t){.nlines = 1, .lines = &l[6]};
    x->locs[7] = (ps_location_t){.nlines = 1, .lines = &l[7]};
    p->locations = x->locs;
    p->nlocations = 8;
    uint32_t *st = x->stacks;
    static const uint32_t s0[] = {1, 2, 3}, s1[] = {4, 5}, s2[] = {6, 5}, s4[] = {7, 8, 3};
    memcpy(st, s0, sizeof(s0));
    memcpy(st + 3, s1, sizeof(s1));
    memcpy(st + 5, s2, sizeof(s2));
    memcpy(st + 7, s4, sizeof(s4));
    static const int64_t v[] = {10, 5, 3, 2, 7};
    memcpy(x->vals, v, sizeof(v));
    x->samples[0] = (ps_sample_t){.nlocs = 3, .locs = st, .values = &x->vals[0]};
    x->samples[1] = (ps_sample_t){.nlocs = 2, .locs = st + 3, .values = &x->vals[1]};
    x->samples[2] = (ps_sample_t){.nlocs = 2, .locs = st + 5, .values = &x->vals[2]};
    x->samples[3] = (ps_sample_t){.nlocs = 0, .locs = NULL, .values = &x->vals[3]};
    x->samples[4] = (ps_sample_t){.nlocs = 3, .locs = st + 7, .values = &x->vals[4]};
    p->samples = x->samples;
    p->nsamples = 5;
}

/* The profile after filters (kind, regexp pairs, NULL-terminated) as text: each sample "v:loc/loc"
 * with a location as its lines' function names joined by "+" (innermost first), or "#addr". */
static char *run(fx_t *x, ps_arena_t *a, ...)
{
    ps_focus_t f = {0};
    ps_err_t err = {0};
    va_list ap;
    va_start(ap, a);
    for (;;) {
        int kind = va_arg(ap, int);
        if (kind < 0)
            break;
        const char *re = va_arg(ap, const char *);
        assert_int_equal(ps_focus_set(&f, kind, re, strlen(re), &err), 0);
    }
    va_end(ap);
    fx_build(x);
    assert_int_equal(ps_focus_apply(&f, &x->p, a, &err), 0);
    ps_focus_dispose(&f);
    static char out[1024];
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < x->p.nsamples; i++) {
        const ps_sample_t *s = &x->p.samples[i];
        n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%lld:", i ? " " : "", (long long)s->values[0]);
        for (uint32_t j = 0; j < s->nlocs; j++) {
            const ps_location_t *loc = &x->p.locations[s->locs[j] - 1];
            if (j)
                n += (size_t)snprintf(out + n, sizeof(out) - n, "/");
            if (loc->nlines == 0)
                n += (size_t)snprintf(out + n, sizeof(out) - n, "#%llx", (unsigned long long)loc->address);
            for (uint32_t k = 0; k < loc->nlines; k++)
                n += (size_t)snprintf(out + n, sizeof(out) - n, "%s%s", k ? "+" : "",
                                      STRS[x->p.functions[loc->lines[k].function - 1].name]);
        }
    }
    return out;
}

#define ALL "10:pkg.leaf/pkg.inl+pkg.mid/main.main 5:pkg.mid/main.main 3:#40/main.main 2: 7:pkg.rec/pkg.rec/main.main"

static void test_no_filter_changes_nothing(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    assert_string_equal(run(&x, &a, -1), ALL);
    ps_arena_dispose(&a);
}

static void test_focus_ignore(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    /* by an inlined function: the whole location counts */
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "inl", -1), "10:pkg.leaf/pkg.inl+pkg.mid/main.main");
    /* by file name (pkg/mid.go: mid, leaf, rec) and by the mapping's file; unanchored */
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "mid\\.go", -1),
                        "10:pkg.leaf/pkg.inl+pkg.mid/main.main 5:pkg.mid/main.main 7:pkg.rec/pkg.rec/main.main");
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "libc", -1), "3:#40/main.main");
    /* ignore wins over focus; an empty stack goes with any name filter */
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "main", PS_FOCUS_IGNORE, "mid", -1),
                        "3:#40/main.main");
    assert_string_equal(run(&x, &a, PS_FOCUS_IGNORE, "nothing-matches", -1),
                        "10:pkg.leaf/pkg.inl+pkg.mid/main.main 5:pkg.mid/main.main 3:#40/main.main "
                        "7:pkg.rec/pkg.rec/main.main");
    /* anchored by the user: ^pkg\.mid$ is not pkg.middle; (?i) works */
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "^PKG\\.REC$", -1), "");
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "(?i)^PKG\\.REC$", -1), "7:pkg.rec/pkg.rec/main.main");
    ps_arena_dispose(&a);
}

static void test_hide_show(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    /* hide an inlined frame: its location keeps the other line */
    assert_string_equal(run(&x, &a, PS_FOCUS_HIDE, "inl", -1),
                        "10:pkg.leaf/pkg.mid/main.main 5:pkg.mid/main.main 3:#40/main.main 7:pkg.rec/pkg.rec/main.main");
    /* hide by the mapping's file removes the location; a sample left empty goes; so does the empty one */
    assert_string_equal(run(&x, &a, PS_FOCUS_HIDE, "libc|main", -1),
                        "10:pkg.leaf/pkg.inl+pkg.mid 5:pkg.mid 7:pkg.rec/pkg.rec");
    /* show keeps the matching lines; a location without lines has none to keep */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW, "mid|inl", -1), "10:pkg.leaf/pkg.inl+pkg.mid 5:pkg.mid 7:pkg.rec/pkg.rec");
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW, "pkg\\.(mid|inl)", -1), "10:pkg.inl+pkg.mid 5:pkg.mid");
    ps_arena_dispose(&a);
}

static void test_show_from(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    /* frames above the outermost match go; samples without one go (the empty one too) */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW_FROM, "pkg\\.mid", -1), "10:pkg.leaf/pkg.inl+pkg.mid 5:pkg.mid");
    /* a file name matches too (leaf and rec are in pkg/mid.go) */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW_FROM, "mid", -1),
                        "10:pkg.leaf/pkg.inl+pkg.mid 5:pkg.mid 7:pkg.rec/pkg.rec");
    /* the outermost of a recursion */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW_FROM, "rec", -1), "7:pkg.rec/pkg.rec");
    /* within a location: the lines outside the match go */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW_FROM, "inl", -1), "10:pkg.leaf/pkg.inl");
    /* a mapping match keeps the location whole */
    assert_string_equal(run(&x, &a, PS_FOCUS_SHOW_FROM, "libc", -1), "3:#40");
    /* after focus and hide */
    assert_string_equal(run(&x, &a, PS_FOCUS_FOCUS, "leaf|rec", PS_FOCUS_HIDE, "inl", PS_FOCUS_SHOW_FROM, "mid|rec", -1),
                        "10:pkg.leaf/pkg.mid 7:pkg.rec/pkg.rec");
    ps_arena_dispose(&a);
}

static void test_bad_regexps(void **state)
{
    (void)state;
    ps_focus_t f = {0};
    ps_err_t err = {0};
    assert_int_equal(ps_focus_set(&f, PS_FOCUS_FOCUS, "(a", 2, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid parameter \"focus\": error parsing regexp \"(a\": missing closing ): `(a`");
    assert_int_equal(ps_focus_set(&f, PS_FOCUS_SHOW_FROM, "a**", 3, &err), PS_EINVAL);
    assert_string_equal(err.msg,
                        "invalid parameter \"show_from\": error parsing regexp \"a**\": invalid nested repetition "
                        "operator: `**`");
    assert_int_equal(ps_focus_set(&f, PS_FOCUS_HIDE, "", 0, &err), 0); /* empty: no filter */
    assert_false(ps_focus_any(&f));
    ps_focus_dispose(&f);
}

static void test_regex_limit_is_an_error(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    ps_focus_t f = {0};
    ps_err_t err = {0};
    /* catastrophic backtracking on a long name: PCRE2's match limit, an error, never "no match" */
    char name[200];
    memset(name, 'a', sizeof(name) - 2);
    name[sizeof(name) - 2] = 'b';
    name[sizeof(name) - 1] = '\0';
    STRS[3] = name;
    fx_build(&x);
    const char *re = "^(a|aa)+$";
    assert_int_equal(ps_focus_set(&f, PS_FOCUS_IGNORE, re, strlen(re), &err), 0);
    assert_int_equal(ps_focus_apply(&f, &x.p, &a, &err), PS_ELIMIT);
    assert_non_null(strstr(err.msg, "limit"));
    STRS[3] = "main.main";
    ps_focus_dispose(&f);
    ps_arena_dispose(&a);
}

static void test_list(void **state)
{
    (void)state;
    fx_t x;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err = {0};
    ps_regex_t *re;
    ps_list_t l;
    fx_build(&x);
    assert_int_equal(ps_regex_compile("pkg\\.(mid|rec|inl)", 18, PS_REGEX_SEARCH, &re, &err), 0);
    assert_int_equal(ps_query_list(&x.p, 0, re, &a, &l, &err), 0);
    assert_int_equal(l.total, 27);
    /* by name: pkg.inl, pkg.mid, pkg.rec */
    assert_int_equal(l.n, 3);
    assert_memory_equal(l.fns[0].name.ptr, "pkg.inl", 7);
    assert_int_equal(l.fns[0].nlines, 1);
    assert_int_equal(l.fns[0].lines[0].line, 7);
    assert_int_equal(l.fns[0].lines[0].flat, 0); /* not the leaf location */
    assert_int_equal(l.fns[0].lines[0].cum, 10);
    assert_memory_equal(l.fns[1].name.ptr, "pkg.mid", 7);
    assert_memory_equal(l.fns[1].file.ptr, "pkg/mid.go", 10);
    assert_int_equal(l.fns[1].nlines, 2);
    assert_int_equal(l.fns[1].lines[0].line, 3);
    assert_int_equal(l.fns[1].lines[0].cum, 10);
    assert_int_equal(l.fns[1].lines[1].line, 4);
    assert_int_equal(l.fns[1].lines[1].flat, 5);
    assert_int_equal(l.fns[1].lines[1].cum, 5);
    assert_int_equal(l.fns[1].flat, 5);
    assert_int_equal(l.fns[1].cum, 15);
    /* recursion: two lines, each counted once per sample */
    assert_memory_equal(l.fns[2].name.ptr, "pkg.rec", 7);
    assert_int_equal(l.fns[2].nlines, 2);
    assert_int_equal(l.fns[2].lines[0].line, 5);
    assert_int_equal(l.fns[2].lines[0].flat, 7);
    assert_int_equal(l.fns[2].lines[0].cum, 7);
    assert_int_equal(l.fns[2].lines[1].line, 6);
    assert_int_equal(l.fns[2].lines[1].flat, 0);
    assert_int_equal(l.fns[2].lines[1].cum, 7);
    ps_regex_free(re);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_no_filter_changes_nothing),
        cmocka_unit_test(test_focus_ignore),
        cmocka_unit_test(test_hide_show),
        cmocka_unit_test(test_show_from),
        cmocka_unit_test(test_bad_regexps),
        cmocka_unit_test(test_regex_limit_is_an_error),
        cmocka_unit_test(test_list),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
