/*
 * test_adhoc.c - ad hoc profile uploads (src/ingest/adhoc.c): the format detected (gzipped and raw
 * pprof from the fixtures, folded text, flamebearer JSON, perf script, empty), errors naming the format, names made
 * ids as Pyroscope makes them, ids checked, the ULID's time, the pair and its difference.
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

#include "ingest/ingest.h"

static void decode(const void *d, size_t n, int want_ret, ps_adhoc_format_t want_fmt, const char *want_msg,
                   ps_arena_t *a, ps_profile_t *p)
{
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_inflated = 1u << 20;
    ps_adhoc_format_t fmt;
    ps_err_t err = {0};
    assert_int_equal(ps_adhoc_decode(d, n, &lim, a, p, &fmt, NULL, &err), want_ret);
    if (want_ret == 0)
        assert_int_equal(fmt, want_fmt);
    else if (want_msg)
        assert_string_equal(err.msg, want_msg);
}

static void test_decode(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    size_t n;
    uint8_t *gz = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    decode(gz, n, 0, PS_ADHOC_PPROF, NULL, &a, &p);
    const char **types = ps_adhoc_types(&p, &a);
    assert_int_equal(p.ntypes, 2);
    assert_string_equal(types[0], "samples");
    assert_string_equal(types[1], "cpu");
    assert_null(types[2]);
    assert_int_equal(ps_adhoc_type_index(&p, "cpu"), 1);
    assert_int_equal(ps_adhoc_type_index(&p, NULL), 0);
    assert_int_equal(ps_adhoc_type_index(&p, "wall"), -1);
    free(gz);
    uint8_t *raw = ps_test_read_fixture("go/cpu-01.pb", &n);
    decode(raw, n, 0, PS_ADHOC_PPROF, NULL, &a, &p);
    assert_int_equal(p.ntypes, 2);
    /* a raw pprof cut short: still pprof (binary), its decoder's error */
    decode(raw, 40, PS_EINVAL, PS_ADHOC_PPROF, NULL, &a, &p);
    free(raw);
    static const char folded[] = "a;b;c 3\r\na;b 2\n\nz 1";
    decode(folded, sizeof(folded) - 1, 0, PS_ADHOC_FOLDED, NULL, &a, &p);
    assert_int_equal(p.ntypes, 1);
    assert_int_equal(p.nsamples, 3);
    assert_string_equal(ps_adhoc_types(&p, &a)[0], "samples");
    decode("", 0, PS_EINVAL, 0, "the profile is empty", &a, &p);
    decode("\n  {\"x\":1}", 10, PS_EINVAL, 0, "flamebearer JSON: metadata: missing, not an object", &a, &p);
    decode("{\"x\":", 5, PS_EINVAL, 0, "flamebearer JSON: line 1 column 5: unexpected token near end of file", &a, &p);
    static const char fb[] = " {\"flamebearer\":{\"names\":[\"total\",\"a\"],\"levels\":[[0,3,0,0],[0,3,3,1]]},"
                             "\"metadata\":{\"format\":\"single\",\"name\":\"cpu\",\"units\":\"samples\",\"spyName\":\"x\"}}";
    decode(fb, sizeof(fb) - 1, 0, PS_ADHOC_JSON, NULL, &a, &p);
    assert_string_equal(ps_adhoc_types(&p, &a)[0], "cpu");
    assert_int_equal(p.nsamples, 1);
    assert_int_equal(p.samples[0].values[0], 3);
    static const char perf[] = "prog 1 2.0: 1 cycles:\n\t1 main+0x1 (/x)\n\nprog 1 2.1: 1 cycles:\n\t1 main+0x1 (/x)\n";
    decode(perf, sizeof(perf) - 1, 0, PS_ADHOC_PERF, NULL, &a, &p);
    assert_int_equal(p.nsamples, 1);
    assert_int_equal(p.samples[0].values[0], 2);
    assert_string_equal(ps_adhoc_types(&p, &a)[0], "samples");
    decode("prog 1 2.0: 1 cycles:\n\tzz\n", 25, PS_EINVAL, 0,
           "perf script: line 2: \"zz\" is not a stack frame (expected \"address symbol (dso)\")", &a, &p);
    decode("a;b\n", 4, PS_EINVAL, 0,
           "folded stacks: line 1: no space before the count (expected \"frame;frame;... count\")", &a, &p);
    decode("\x1f\x8b\x08garbage", 10, PS_EINVAL, 0, NULL, &a, &p);
    ps_arena_dispose(&a);
}

static void test_names_and_ids(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    const char *name;
    assert_int_equal(ps_adhoc_name("cpu 01 (é).pb.gz", strlen("cpu 01 (é).pb.gz"), &a, &name, &err), 0);
    assert_string_equal(name, "cpu_01____.pb.gz"); /* one '_' per code point, é too */
    char big[202];
    memset(big, 'n', 201);
    big[201] = 0;
    assert_int_equal(ps_adhoc_name(big, 201, &a, &name, &err), PS_EINVAL);
    assert_string_equal(err.msg, "name: 201 characters, more than 200");
    /* 1733374800000 ms = 2024-12-05T05:00:00Z: the ULID's first 10 characters */
    const char *id = ps_adhoc_id(1733374800000, "x.pb", &a);
    assert_int_equal(strlen(id), 31);
    assert_memory_equal(id, "01JEAK0W40", 10);
    assert_string_equal(id + 26, "-x.pb");
    assert_true(ps_adhoc_id_valid(id));
    assert_string_not_equal(id, ps_adhoc_id(1733374800000, "x.pb", &a)); /* 80 random bits */
    assert_false(ps_adhoc_id_valid(""));
    assert_false(ps_adhoc_id_valid("../etc"));
    assert_false(ps_adhoc_id_valid("a b"));
    memset(big, 'n', 201);
    char huge[300];
    memset(huge, 'i', 299);
    huge[299] = 0;
    assert_false(ps_adhoc_id_valid(huge));
    ps_arena_dispose(&a);
}

static void test_pair(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t l, r, pair;
    decode("a;b 3\nc 1\n", 10, 0, PS_ADHOC_FOLDED, NULL, &a, &l);
    decode("a;b 5\n", 6, 0, PS_ADHOC_FOLDED, NULL, &a, &r);
    ps_adhoc_pair(&l, 0, &r, 0, &a, &pair);
    assert_int_equal(pair.ntypes, 2);
    assert_int_equal(pair.nsamples, 3);
    assert_int_equal(pair.samples[0].values[0], 3);
    assert_int_equal(pair.samples[0].values[1], 0);
    assert_int_equal(pair.samples[2].values[1], 5);
    /* the right side's frames point at its own functions, past the left's */
    ps_str_t f = ps_profile_str(&pair, pair.functions[pair.locations[pair.samples[2].locs[0] - 1].lines[0].function - 1].name);
    assert_int_equal(f.len, 1);
    assert_memory_equal(f.ptr, "b", 1);
    int64_t lt;
    ps_adhoc_pair_sub(&pair, &lt);
    assert_int_equal(lt, 4);
    assert_int_equal(pair.ntypes, 1);
    assert_int_equal(pair.samples[0].values[0], -3);
    assert_int_equal(pair.samples[2].values[0], 5);
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_decode),
        cmocka_unit_test(test_names_and_ids),
        cmocka_unit_test(test_pair),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
