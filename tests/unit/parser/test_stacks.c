/*
 * test_stacks.c - profiles written as stacks (parser/stacks.h): flamebearer JSON read back into
 * the exact stacks and values (x offsets, parents, "single" only, metadata), perf script output
 * (the real capture in tests/testdata/perf: its exact counts per stack; headers with spaces and
 * tids, frames without a dso, offsets cut), and every refusal with its exact message and limit.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"

#include "parser/stacks.h"

static ps_stacks_limits_t lim_default(void)
{
    return (ps_stacks_limits_t){.max_samples = 1000, .max_functions = 1000, .max_stack_depth = 64,
                                .max_string_len = 256, .max_frames = 100000, .max_json_memory = 1 << 20};
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* the profile as sorted "root;...;leaf value" lines, one string */
static char *folded(const ps_profile_t *p)
{
    char **lines = calloc(p->nsamples + 1, sizeof(char *));
    size_t total = 1;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *s = &p->samples[i];
        char buf[4096];
        size_t o = 0;
        for (uint32_t k = s->nlocs; k > 0; k--) {
            const ps_location_t *l = &p->locations[s->locs[k - 1] - 1];
            ps_str_t n = p->strings[p->functions[l->lines[0].function - 1].name];
            o += (size_t)snprintf(buf + o, sizeof(buf) - o, "%s%.*s", k == s->nlocs ? "" : ";", (int)n.len, n.ptr);
        }
        snprintf(buf + o, sizeof(buf) - o, " %lld\n", (long long)s->values[0]);
        lines[i] = strdup(buf);
        total += strlen(buf);
    }
    qsort(lines, p->nsamples, sizeof(char *), cmp_str);
    char *out = calloc(1, total);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        strcat(out, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out;
}

static void type_is(const ps_profile_t *p, const char *type, const char *unit)
{
    assert_int_equal(p->ntypes, 1);
    ps_str_t t = p->strings[p->sample_types[0].type], u = p->strings[p->sample_types[0].unit];
    assert_int_equal(t.len, strlen(type));
    assert_memory_equal(t.ptr, type, t.len);
    assert_int_equal(u.len, strlen(unit));
    assert_memory_equal(u.ptr, unit, u.len);
}

static void fb_ok(const char *doc, const char *want)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_stacks_limits_t lim = lim_default();
    ps_profile_t p;
    ps_fbjson_meta_t m;
    ps_err_t err = {0};
    int rc = ps_fbjson_parse(doc, strlen(doc), &lim, &a, &p, &m, &err);
    if (rc != 0)
        fail_msg("%s: %s", doc, err.msg);
    char *got = folded(&p);
    assert_string_equal(got, want);
    free(got);
    ps_arena_dispose(&a);
}

static void fb_bad(const char *doc, int code, const char *msg, const ps_stacks_limits_t *lim)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_stacks_limits_t l = lim_default();
    ps_profile_t p;
    ps_fbjson_meta_t m;
    ps_err_t err = {0};
    assert_int_equal(ps_fbjson_parse(doc, strlen(doc), lim ? lim : &l, &a, &p, &m, &err), code);
    assert_string_equal(err.msg, msg);
    ps_arena_dispose(&a);
}

#define MD "\"metadata\":{\"format\":\"single\",\"spyName\":\"gospy\",\"sampleRate\":100,\"units\":\"samples\",\"name\":\"cpu\"}"

static void test_flamebearer(void **state)
{
    (void)state;
    /* total 12: main (self 2) -> work (self 5) -> inner (3); main -> x (no self) -> x (2) */
    const char *doc = "{\"version\":1,\"flamebearer\":{\"names\":[\"total\",\"main\",\"work\",\"inner\",\"x\"],"
                      "\"levels\":[[0,12,0,0],[0,12,2,1],[2,8,5,2,0,2,0,4],[5,3,3,3,2,2,2,4]],"
                      "\"numTicks\":12,\"maxSelf\":5}," MD ",\"timeline\":null}";
    fb_ok(doc, "main 2\nmain;work 5\nmain;work;inner 3\nmain;x;x 2\n");
    ps_arena_t a = PS_ARENA_INIT;
    ps_stacks_limits_t lim = lim_default();
    ps_profile_t p;
    ps_fbjson_meta_t m;
    ps_err_t err = {0};
    assert_int_equal(ps_fbjson_parse(doc, strlen(doc), &lim, &a, &p, &m, &err), 0);
    type_is(&p, "cpu", "samples");
    assert_string_equal(m.name, "cpu");
    assert_string_equal(m.units, "samples");
    assert_string_equal(m.spy_name, "gospy");
    assert_int_equal(m.sample_rate, 100);
    assert_int_equal(p.nfunctions, 4); /* "total" is not a frame */
    /* no metadata but the format, no version: "samples", "count" */
    const char *bare = "{\"flamebearer\":{\"names\":[\"total\",\"a\"],\"levels\":[[0,1,0,0],[0,1,1,1]]},"
                       "\"metadata\":{\"format\":\"single\"}}";
    assert_int_equal(ps_fbjson_parse(bare, strlen(bare), &lim, &a, &p, &m, &err), 0);
    type_is(&p, "samples", "count");
    assert_string_equal(m.spy_name, "");
    assert_int_equal(m.sample_rate, 0);
    /* an empty profile (profstore's render of nothing) has no samples */
    const char *empty = "{\"flamebearer\":{\"names\":[\"total\"],\"levels\":[[0,0,0,0]]},\"metadata\":{\"format\":\"single\"}}";
    assert_int_equal(ps_fbjson_parse(empty, strlen(empty), &lim, &a, &p, &m, &err), 0);
    assert_int_equal(p.nsamples, 0);
    ps_arena_dispose(&a);
}

#define FB(levels) "{\"flamebearer\":{\"names\":[\"total\",\"a\",\"b\"],\"levels\":" levels "}," \
                   "\"metadata\":{\"format\":\"single\"}}"

static void test_flamebearer_bad(void **state)
{
    (void)state;
    fb_bad("{\"flamebearer\":", PS_EINVAL,
           "flamebearer JSON: line 1 column 15: unexpected token near end of file", NULL);
    fb_bad("[1]", PS_EINVAL, "flamebearer JSON: the document is an array, not an object", NULL);
    fb_bad("{\"version\":2}", PS_EINVAL, "version: 2 is not supported (1 is)", NULL);
    fb_bad("{\"version\":1}", PS_EINVAL, "metadata: missing, not an object", NULL);
    fb_bad("{\"metadata\":{\"format\":\"double\"}}", PS_EINVAL,
           "metadata.format: \"double\" (a diff) cannot be uploaded, as in Pyroscope: upload its two profiles and "
           "diff them", NULL);
    fb_bad("{\"metadata\":{}}", PS_EINVAL, "metadata.format: \"\" is not supported (\"single\" is)", NULL);
    fb_bad("{\"metadata\":{\"format\":\"single\",\"name\":7}}", PS_EINVAL, "metadata.name: an integer, not a string",
           NULL);
    fb_bad("{\"metadata\":{\"format\":\"single\",\"sampleRate\":-1}}", PS_EINVAL,
           "metadata.sampleRate: out of range, not an integer from 0 to 4294967295", NULL);
    fb_bad("{\"metadata\":{\"format\":\"single\"}}", PS_EINVAL, "flamebearer: missing, not an object", NULL);
    fb_bad("{\"flamebearer\":{\"names\":[],\"levels\":[]},\"metadata\":{\"format\":\"single\"}}", PS_EINVAL,
           "flamebearer.names: empty (a profile has at least one name)", NULL);
    fb_bad("{\"flamebearer\":{\"names\":[\"total\",1],\"levels\":[[0,0,0,0]]},\"metadata\":{\"format\":\"single\"}}",
           PS_EINVAL, "flamebearer.names[1]: an integer, not a string", NULL);
    fb_bad(FB("[]"), PS_EINVAL, "flamebearer.levels: empty (a profile has at least one level)", NULL);
    fb_bad(FB("[[0,1,0,0],[0,1,1]]"), PS_EINVAL,
           "flamebearer.levels[1]: 3 values, not a multiple of 4 (x offset, total, self, name index per node)", NULL);
    fb_bad(FB("[[0,1,0,0],[0,1,1.5,1]]"), PS_EINVAL, "flamebearer.levels[1][2]: a number, not an integer", NULL);
    fb_bad(FB("[[0,1,0,0],[0,1,1,3]]"), PS_EINVAL, "flamebearer.levels[1][3]: name index 3, there are 3 names", NULL);
    fb_bad(FB("[[0,1,0,0],[0,1,2,1]]"), PS_EINVAL,
           "flamebearer.levels[1][2]: self 2 is more than the node's total 1", NULL);
    fb_bad(FB("[[0,1,0,0],[0,1,0,1],[0,2,2,2]]"), PS_EINVAL,
           "flamebearer.levels[2][0]: the node (x 0, total 2) is not within its parent levels[1][0] (x 0, total 1)",
           NULL);
    fb_bad(FB("[[0,1,0,0],[5,1,0,1],[0,1,1,2]]"), PS_EINVAL,
           "flamebearer.levels[2][0]: no node of level 1 above x offset 0", NULL);
    fb_bad(FB("[[0,1,0,0],[-1,1,1,1]]"), PS_EINVAL,
           "flamebearer.levels[1][0]: -1 is out of range (0 to 2^62-1)", NULL);
    fb_bad(FB("[[0,1,0,0],[4611686018427387903,1,1,1]]"), PS_EINVAL,
           "flamebearer.levels[1][0]: the node ends past 2^62-1", NULL);
    fb_bad("{\"a\":1,\"a\":2}", PS_EINVAL, "flamebearer JSON: line 1 column 10: duplicate object key near '\"a\"'", NULL);
    ps_stacks_limits_t small = lim_default();
    small.max_stack_depth = 1;
    fb_bad(FB("[[0,1,0,0],[0,1,0,1],[0,1,1,2]]"), PS_ETOOBIG,
           "flamebearer.levels: 3 levels, stacks deeper than 1 frames", &small);
    small = lim_default();
    small.max_json_memory = 96 * 10;
    fb_bad(FB("[[0,1,0,0],[0,1,1,1]]"), PS_ETOOBIG,
           "flamebearer JSON: 24 values need more than the 960 bytes of memory allowed", &small);
    small = lim_default();
    small.max_samples = 1;
    fb_bad(FB("[[0,2,0,0],[0,2,1,1],[1,1,1,2]]"), PS_ETOOBIG, "flamebearer.levels[2][0]: more than 1 stacks", &small);
    small = lim_default();
    small.max_frames = 2;
    fb_bad(FB("[[0,2,0,0],[0,2,1,1],[1,1,1,2]]"), PS_ETOOBIG,
           "flamebearer.levels[2][0]: the stacks hold more than 2 frames together", &small);
    fb_bad("{\"metadata\":{\"format\":\"single\"},\"flamebearer\":{\"names\":[\"total\",\"\\u00ff\\ud800\"]}}", PS_EINVAL,
           "flamebearer JSON: line 1 column 78: invalid Unicode '\\uD800' near '\"\\u00ff\\ud800\"'", NULL);
    char deep[200];
    memset(deep, '[', 70);
    deep[70] = 0;
    fb_bad(deep, PS_EINVAL, "flamebearer JSON: line 1 column 65: nesting deeper than 64", NULL);
}

static void perf_ok(const char *text, const char *want)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_stacks_limits_t lim = lim_default();
    ps_profile_t p;
    ps_err_t err = {0};
    assert_true(ps_perf_detect(text, strlen(text)));
    int rc = ps_perf_parse(text, strlen(text), &lim, &a, &p, &err);
    if (rc != 0)
        fail_msg("%s", err.msg);
    type_is(&p, "samples", "count");
    char *got = folded(&p);
    assert_string_equal(got, want);
    free(got);
    ps_arena_dispose(&a);
}

static void perf_bad(const char *text, int code, const char *msg, const ps_stacks_limits_t *lim)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_stacks_limits_t l = lim_default();
    ps_profile_t p;
    ps_err_t err = {0};
    assert_int_equal(ps_perf_parse(text, strlen(text), lim ? lim : &l, &a, &p, &err), code);
    assert_string_equal(err.msg, msg);
    ps_arena_dispose(&a);
}

static void test_perf(void **state)
{
    (void)state;
    char path[1024];
    snprintf(path, sizeof(path), "%s/perf/prog-script.txt", ps_test_testdata());
    size_t n;
    char *text = (char *)ps_test_read_path(path, &n);
    text = realloc(text, n + 1);
    text[n] = 0;
    perf_ok(text, "prog;__libc_start_call_main;leaf_b 20\n"
                  "prog;__libc_start_call_main;main;leaf_a 84\n"
                  "prog;__libc_start_call_main;main;leaf_a;asm_sysvec_reschedule_ipi;irqentry_exit_to_user_mode 1\n"
                  "prog;__libc_start_call_main;main;leaf_b 21\n");
    free(text);
    /* Pyroscope's test lines: comm with spaces, pid/tid, cpu or not; [unknown]; CRLF; '#' header;
     * a header without frames (perf script without -g), then one straight after another */
    perf_ok("# ========\n# captured on: x\n#\n"
            "V8 WorkerThread 24636/25607 [000] 94564.109216: cycles:\r\n"
            "\t    ffffffffb37b3618 __cgroup_account_cputime+0x28 (/lib/modules/5.19.0/build/vmlinux)\r\n"
            "                  3fa48f [unknown] ([unknown])\r\n"
            "\t    91197 f(int) const (/x)\r\n"
            "\t    91198 g+0x (/x)\r\n"
            "\t    91199 h\r\n"
            "\r\n"
            "java 12688 [002] 6544038.708352: cpu-clock:\n"
            "java 12688/12764 6544038.708352: cpu-clock:\n"
            "\n\n",
            "V8 WorkerThread;h;g+0x;f(int) const;[unknown];__cgroup_account_cputime 1\njava 2\n");
    assert_false(ps_perf_detect("a;b;c 12\n", 9));
    assert_false(ps_perf_detect("main 12 x\nmain;b 1\n", 19));
    assert_false(ps_perf_detect("main 12 xx\nmain;b 1\n", 20));
    assert_true(ps_perf_detect("main 12 xx", 10));
    assert_false(ps_perf_detect("# only\n", 7));
    perf_bad("", PS_EINVAL, "no events (expected `perf script` output: an event header line, then its frames)", NULL);
    perf_bad("prog 1 2.0: x\n\tzz f (d)\n", PS_EINVAL,
             "line 2: \"zz f (d)\" is not a stack frame (expected \"address symbol (dso)\")", NULL);
    perf_bad("\t12 f (d)\n", PS_EINVAL, "line 1: a frame outside an event (an event header comes first)", NULL);
    perf_bad("prog 1 2.0: x\n\n12 f\n", PS_EINVAL,
             "line 3: \"12 f\" is not an event header (expected \"command pid[/tid] ...\", then its frames)", NULL);
    perf_bad("prog 1 2.0: x\n\t12 f\xff (d)\n", PS_EINVAL, "line 2: a frame name that is not UTF-8", NULL);
    ps_stacks_limits_t small = lim_default();
    small.max_stack_depth = 2;
    perf_bad("prog 1 2.0: x\n\t1 a (d)\n\t2 b (d)\n\t3 c (d)\n", PS_ETOOBIG,
             "line 3: the event of line 1 has more than 2 frames", &small);
    small = lim_default();
    small.max_samples = 1;
    perf_bad("p 1 2.0: x\n\t1 a (d)\n\np 1 2.0: x\n\t1 a (d)\n\np 1 2.0: x\n\t2 b (d)\n", PS_ETOOBIG,
             "line 7: the event: more than 1 stacks", &small);
    small = lim_default();
    small.max_functions = 2;
    perf_bad("p 1 2.0: x\n\t1 a (d)\n\t2 b (d)\n", PS_ETOOBIG, "line 3: more than 2 distinct frame names", &small);
    small = lim_default();
    small.max_string_len = 3;
    perf_bad("p 1 2.0: x\n\t1 abcd (d)\n", PS_ETOOBIG, "line 2: a frame name of 4 bytes, more than 3", &small);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_flamebearer),
        cmocka_unit_test(test_flamebearer_bad),
        cmocka_unit_test(test_perf),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
