/*
 * test_pprof.c - unit tests for proto/pprof.c: decoding the real Go and Node profiles in
 * $PS_TESTDATA/pprof (facts from its README), gzip and raw input, encode/decode round trips, and
 * malformed input (bad gzip, gzip bombs, protobuf garbage, dangling ids and string indexes, limits),
 * each failing with the expected code and message. (Decode and encode speed: bench/pprof.c.)
 */
#include <dirent.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../testutil.h"
#include <zlib.h>

#include "core/varint.h"
#include "proto/gzip.h"
#include "proto/pprof.h"
#include "pprof_reference.h"


/* ---- helpers -------------------------------------------------------------------------------- */



static int str_eq(const ps_profile_t *p, uint32_t idx, const char *s)
{
    ps_str_t v = ps_profile_str(p, idx);
    return v.len == strlen(s) && memcmp(v.ptr, s, v.len) == 0;
}

#define assert_str(p, idx, s)                                                                              \
    do {                                                                                                   \
        ps_str_t v_ = ps_profile_str((p), (idx));                                                          \
        if (!str_eq((p), (idx), (s)))                                                                      \
            fail_msg("string %u is \"%.*s\", expected \"%s\"", (unsigned)(idx), (int)v_.len, v_.ptr, (s)); \
    } while (0)

static void assert_decoders_agree(const void *data, size_t n, const ps_pprof_limits_t *lim);

/* Decoding must fail with code and a message containing substr (and the reference decoder
 * must fail the same way). */
static void expect_error(const void *data, size_t n, const ps_pprof_limits_t *lim, int code, const char *substr)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_pprof_decode(data, n, lim, &a, &p, &err);
    if (rc != code || strstr(err.msg, substr) == NULL)
        fail_msg("decode returned %d \"%s\", expected %d with \"%s\"", rc, err.msg, code, substr);
    assert_int_equal(err.code, code);
    assert_int_equal(p.nsamples, 0); /* *out is cleared on failure */
    ps_arena_dispose(&a);
    assert_decoders_agree(data, n, lim);
}

/* Field-by-field comparison of two decoded profiles (strings by content). */
static void assert_profiles_equal(const ps_profile_t *a, const ps_profile_t *b)
{
    assert_int_equal(a->nstrings, b->nstrings);
    for (uint32_t i = 0; i < a->nstrings; i++) {
        assert_int_equal(a->strings[i].len, b->strings[i].len);
        assert_memory_equal(a->strings[i].ptr, b->strings[i].ptr, a->strings[i].len);
        assert_int_equal(a->strings[i].ptr[a->strings[i].len], '\0'); /* decoded strings are NUL-terminated */
    }
    assert_int_equal(a->ntypes, b->ntypes);
    for (uint32_t i = 0; i < a->ntypes; i++) {
        assert_int_equal(a->sample_types[i].type, b->sample_types[i].type);
        assert_int_equal(a->sample_types[i].unit, b->sample_types[i].unit);
    }
    assert_int_equal(a->nmappings, b->nmappings);
    for (uint32_t i = 0; i < a->nmappings; i++) {
        const ps_mapping_t *x = &a->mappings[i], *y = &b->mappings[i];
        assert_int_equal(x->memory_start, y->memory_start);
        assert_int_equal(x->memory_limit, y->memory_limit);
        assert_int_equal(x->file_offset, y->file_offset);
        assert_int_equal(x->filename, y->filename);
        assert_int_equal(x->build_id, y->build_id);
        assert_int_equal(x->flags, y->flags);
    }
    assert_int_equal(a->nfunctions, b->nfunctions);
    for (uint32_t i = 0; i < a->nfunctions; i++) {
        const ps_function_t *x = &a->functions[i], *y = &b->functions[i];
        assert_int_equal(x->name, y->name);
        assert_int_equal(x->system_name, y->system_name);
        assert_int_equal(x->filename, y->filename);
        assert_int_equal(x->start_line, y->start_line);
    }
    assert_int_equal(a->nlocations, b->nlocations);
    for (uint32_t i = 0; i < a->nlocations; i++) {
        const ps_location_t *x = &a->locations[i], *y = &b->locations[i];
        assert_int_equal(x->mapping, y->mapping);
        assert_int_equal(x->address, y->address);
        assert_int_equal(x->is_folded, y->is_folded);
        assert_int_equal(x->nlines, y->nlines);
        for (uint32_t k = 0; k < x->nlines; k++) {
            assert_int_equal(x->lines[k].function, y->lines[k].function);
            assert_int_equal(x->lines[k].line, y->lines[k].line);
            assert_int_equal(x->lines[k].column, y->lines[k].column);
        }
    }
    assert_int_equal(a->nsamples, b->nsamples);
    for (uint32_t i = 0; i < a->nsamples; i++) {
        const ps_sample_t *x = &a->samples[i], *y = &b->samples[i];
        assert_int_equal(x->nlocs, y->nlocs);
        for (uint32_t k = 0; k < x->nlocs; k++)
            assert_int_equal(x->locs[k], y->locs[k]);
        for (uint32_t k = 0; k < a->ntypes; k++)
            assert_int_equal(x->values[k], y->values[k]);
        assert_int_equal(x->nlabels, y->nlabels);
        for (uint32_t k = 0; k < x->nlabels; k++) {
            assert_int_equal(x->labels[k].key, y->labels[k].key);
            assert_int_equal(x->labels[k].str, y->labels[k].str);
            assert_int_equal(x->labels[k].num, y->labels[k].num);
            assert_int_equal(x->labels[k].num_unit, y->labels[k].num_unit);
        }
    }
    assert_int_equal(a->period_type.type, b->period_type.type);
    assert_int_equal(a->period_type.unit, b->period_type.unit);
    assert_int_equal(a->period, b->period);
    assert_int_equal(a->time_nanos, b->time_nanos);
    assert_int_equal(a->duration_nanos, b->duration_nanos);
    assert_int_equal(a->default_sample_type, b->default_sample_type);
    assert_int_equal(a->drop_frames, b->drop_frames);
    assert_int_equal(a->keep_frames, b->keep_frames);
    assert_int_equal(a->doc_url, b->doc_url);
    assert_int_equal(a->ncomments, b->ncomments);
    for (uint32_t i = 0; i < a->ncomments; i++)
        assert_int_equal(a->comments[i], b->comments[i]);
}

/* Both decoders (the direct one and ps_pprof_decode_reference, protobuf-c + conversion) on the
 * same bytes: same code, same message, identical profiles. The one allowed difference: protobuf-c
 * ran out of its allocation budget (the direct decoder has none to run out of). Returns the code. */
static int decoders_agree(const void *data, size_t n, const ps_pprof_limits_t *lim)
{
    ps_arena_t a = PS_ARENA_INIT, b = PS_ARENA_INIT;
    ps_profile_t p, q;
    ps_err_t e1, e2;
    ps_err_clear(&e1);
    ps_err_clear(&e2);
    int rc = ps_pprof_decode(data, n, lim, &a, &p, &e1);
    int rr = ps_pprof_decode_reference(data, n, lim, &b, &q, &e2);
    if (rr == PS_ETOOBIG && strstr(e2.msg, "decoding the profile needs more than") != NULL) {
        ps_arena_dispose(&a);
        ps_arena_dispose(&b);
        return rc;
    }
    if (rc != rr || strcmp(e1.msg, e2.msg) != 0)
        fail_msg("direct decoder: %d \"%s\"; reference: %d \"%s\"", rc, e1.msg, rr, e2.msg);
    if (rc == 0) {
        assert_profiles_equal(&p, &q);
        assert_profiles_equal(&q, &p); /* and the reference's strings NUL-terminated too */
    } else {
        assert_int_equal(p.nsamples, 0);
        assert_int_equal(p.nstrings, 0);
    }
    ps_arena_dispose(&a);
    ps_arena_dispose(&b);
    return rc;
}

static void assert_decoders_agree(const void *data, size_t n, const ps_pprof_limits_t *lim)
{
    (void)decoders_agree(data, n, lim);
}

/* A tiny protobuf writer, for bytes ps_pprof_encode would never produce. */
static void pw_varint(ps_buf_t *b, uint32_t field, uint64_t v)
{
    ps_put_uvarint(b, (uint64_t)field << 3 | 0);
    ps_put_uvarint(b, v);
}
static void pw_bytes(ps_buf_t *b, uint32_t field, const void *p, size_t n)
{
    ps_put_uvarint(b, (uint64_t)field << 3 | 2);
    ps_put_uvarint(b, n);
    ps_buf_append(b, p, n);
}
static void pw_msg(ps_buf_t *b, uint32_t field, ps_buf_t *m)
{
    pw_bytes(b, field, m->data, m->len);
    ps_buf_dispose(m);
}

static uint8_t *gzip_bytes(const void *p, size_t n, size_t *outn)
{
    uLongf cap = compressBound(n) + 64;
    uint8_t *out = malloc(cap);
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = out;
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    *outn = zs.total_out;
    deflateEnd(&zs);
    return out;
}

/* ---- a hand-made profile that uses every field ----------------------------------------------- */

static const char *const kStrings[] = {
    "",            /* 0 */
    "samples",     /* 1 */
    "count",       /* 2 */
    "cpu",         /* 3 */
    "nanoseconds", /* 4 */
    "main",        /* 5 */
    "main.go",     /* 6 */
    "/bin/app",    /* 7 */
    "abc123",      /* 8 */
    "worker",      /* 9 */
    "w-1",         /* 10 */
    "bytes",       /* 11 */
    "runtime.*",   /* 12 */
    "keep.*",      /* 13 */
    "a comment",   /* 14 */
    "https://example.com/doc", /* 15 */
    "inlined",     /* 16 */
    "_Z7inlinedv", /* 17 */
    "libc.so.6",   /* 18 */
    "ünïcødé ✓",   /* 19 */
};
#define NSTR (sizeof(kStrings) / sizeof(kStrings[0]))

static void make_profile(ps_arena_t *a, ps_profile_t *p)
{
    memset(p, 0, sizeof(*p));
    p->nstrings = NSTR;
    p->strings = ps_arena_calloc(a, NSTR, sizeof(ps_str_t));
    for (uint32_t i = 0; i < NSTR; i++)
        p->strings[i] = (ps_str_t){kStrings[i], (uint32_t)strlen(kStrings[i])};

    p->ntypes = 2;
    p->sample_types = ps_arena_calloc(a, 2, sizeof(ps_value_type_t));
    p->sample_types[0] = (ps_value_type_t){1, 2};
    p->sample_types[1] = (ps_value_type_t){3, 4};
    p->period_type = (ps_value_type_t){3, 4};
    p->period = 10000000;
    p->time_nanos = 1796022364647593488;
    p->duration_nanos = 3116928839;
    p->default_sample_type = 3;
    p->drop_frames = 12;
    p->keep_frames = 13;
    p->doc_url = 15;
    p->ncomments = 2;
    p->comments = ps_arena_calloc(a, 2, sizeof(uint32_t));
    p->comments[0] = 14;
    p->comments[1] = 19;

    p->nmappings = 2;
    p->mappings = ps_arena_calloc(a, 2, sizeof(ps_mapping_t));
    p->mappings[0] = (ps_mapping_t){0x400000, 0x800000, 0, 7, 8, PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_LINE_NUMBERS};
    p->mappings[1] = (ps_mapping_t){0x7f0000000000ull, 0xffffffffffffffffull, 0x1000, 18, 0,
                                    PS_MAP_HAS_FILENAMES | PS_MAP_HAS_INLINE_FRAMES};

    p->nfunctions = 3;
    p->functions = ps_arena_calloc(a, 3, sizeof(ps_function_t));
    p->functions[0] = (ps_function_t){5, 5, 6, 10};
    p->functions[1] = (ps_function_t){16, 17, 6, -3};
    p->functions[2] = (ps_function_t){19, 0, 0, 0};

    p->nlocations = 3;
    p->locations = ps_arena_calloc(a, 3, sizeof(ps_location_t));
    ps_line_t *l0 = ps_arena_calloc(a, 2, sizeof(ps_line_t));
    l0[0] = (ps_line_t){2, 42, 7};  /* inlined into ... */
    l0[1] = (ps_line_t){1, 12, 0};  /* ... main */
    p->locations[0] = (ps_location_t){1, 0x401234, 0, 2, l0};
    ps_line_t *l1 = ps_arena_calloc(a, 1, sizeof(ps_line_t));
    l1[0] = (ps_line_t){3, -1, 0};
    p->locations[1] = (ps_location_t){2, 0x7f0000001000ull, 1, 1, l1};
    p->locations[2] = (ps_location_t){0, 0, 0, 0, NULL}; /* no mapping, no lines */

    p->nsamples = 3;
    p->samples = ps_arena_calloc(a, 3, sizeof(ps_sample_t));
    uint32_t *s0 = ps_arena_calloc(a, 3, sizeof(uint32_t));
    s0[0] = 1, s0[1] = 2, s0[2] = 3;
    int64_t *v0 = ps_arena_calloc(a, 2, sizeof(int64_t));
    v0[0] = 1, v0[1] = 10000000;
    ps_label_t *lb0 = ps_arena_calloc(a, 3, sizeof(ps_label_t));
    lb0[0] = (ps_label_t){9, 10, 0, 0};       /* string label */
    lb0[1] = (ps_label_t){11, 0, 4096, 11};   /* numeric label with unit */
    lb0[2] = (ps_label_t){9, 19, -5, 4};      /* both str and num: kept as is */
    p->samples[0] = (ps_sample_t){3, s0, v0, 3, lb0};
    uint32_t *s1 = ps_arena_calloc(a, 1, sizeof(uint32_t));
    s1[0] = 2;
    int64_t *v1 = ps_arena_calloc(a, 2, sizeof(int64_t));
    v1[0] = -7, v1[1] = INT64_MIN;
    p->samples[1] = (ps_sample_t){1, s1, v1, 0, NULL};
    int64_t *v2 = ps_arena_calloc(a, 2, sizeof(int64_t));
    v2[0] = 0, v2[1] = INT64_MAX;
    p->samples[2] = (ps_sample_t){0, NULL, v2, 0, NULL}; /* empty stack */
}

static void encode_or_fail(const ps_profile_t *p, int level, ps_buf_t *out)
{
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_pprof_encode(p, level, out, &err);
    if (rc != 0)
        fail_msg("encode failed: %d %s", rc, err.msg);
}

static void decode_or_fail(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *a, ps_profile_t *p)
{
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_pprof_decode(data, n, lim, a, p, &err);
    if (rc != 0)
        fail_msg("decode failed: %d %s", rc, err.msg);
    assert_decoders_agree(data, n, lim);
}

/* Encodes the hand-made profile after mutate() and expects decoding to fail. */
static void expect_mutated(void (*mutate)(ps_profile_t *), int code, const char *substr)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_buf_t b = PS_BUF_INIT;
    make_profile(&a, &p);
    mutate(&p);
    encode_or_fail(&p, -1, &b);
    expect_error(b.data, b.len, NULL, code, substr);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* Encodes the hand-made profile, appends extra (protobuf concatenation merges messages: repeated
 * fields gain elements) and expects decoding to fail. */
static void expect_appended_lim(const ps_buf_t *extra, const ps_pprof_limits_t *lim, int code, const char *substr)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_buf_t b = PS_BUF_INIT;
    make_profile(&a, &p);
    encode_or_fail(&p, -1, &b);
    ps_buf_append(&b, extra->data, extra->len);
    expect_error(b.data, b.len, lim, code, substr);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void expect_appended(const ps_buf_t *extra, int code, const char *substr)
{
    expect_appended_lim(extra, NULL, code, substr);
}

/* ---- the real fixtures ---------------------------------------------------------------------- */

typedef struct fixture {
    const char *file;
    uint32_t nsamples;
    const char *types[4][2];
    int64_t period;
    const char *period_type[2];
    int64_t duration_ms; /* rounded; 0 = unset */
    uint32_t nlocations, nfunctions, nmappings;
    int64_t totals[4];
    const char *str_keys[4]; /* string label keys, NULL-terminated */
    const char *num_keys[2]; /* numeric label keys */
    const char *default_type; /* NULL: not checked; "": unset */
} fixture_t;

static const fixture_t kFixtures[] = {
    {"go/cpu-01.pb.gz", 272, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3117,
     338, 193, 5, {298, 2980000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-01.pb", 272, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3117, 338,
     193, 5, {298, 2980000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-02.pb.gz", 265, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3124,
     359, 207, 5, {293, 2930000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-03.pb.gz", 271, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3127,
     344, 194, 5, {289, 2890000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-04.pb.gz", 263, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3124,
     351, 203, 5, {289, 2890000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-05.pb.gz", 269, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"}, 3123,
     342, 191, 5, {286, 2860000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/cpu-seed2-01.pb.gz", 214, {{"samples", "count"}, {"cpu", "nanoseconds"}}, 10000000, {"cpu", "nanoseconds"},
     3146, 248, 142, 5, {234, 2340000000}, {"kernel", "seed", "worker"}, {NULL}, ""},
    {"go/heap-01.pb.gz", 111,
     {{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
     524288, {"space", "bytes"}, 0, 105, 72, 5, {29635699, 12417316511, 6721, 1048832}, {NULL}, {"bytes", NULL}, ""},
    {"go/heap-gc-01.pb.gz", 112,
     {{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
     524288, {"space", "bytes"}, 0, 111, 78, 5, {29636064, 12422350540, 6721, 1048832}, {NULL}, {"bytes", NULL}, ""},
    {"go/allocs-01.pb.gz", 113,
     {{"alloc_objects", "count"}, {"alloc_space", "bytes"}, {"inuse_objects", "count"}, {"inuse_space", "bytes"}},
     524288, {"space", "bytes"}, 0, 111, 78, 5, {29636064, 12422350540, 6721, 1048832}, {NULL}, {"bytes", NULL},
     "alloc_space"},
    {"go/goroutine-01.pb.gz", 14, {{"goroutine", "count"}}, 1, {"goroutine", "count"}, 0, 54, 56, 5, {26}, {NULL},
     {NULL}, ""},
    {"go/block-01.pb.gz", 14, {{"contentions", "count"}, {"delay", "nanoseconds"}}, 1, {"contentions", "count"}, 0, 45,
     44, 5, {20163, 45699096660}, {NULL}, {NULL}, ""},
    {"go/mutex-01.pb.gz", 7, {{"contentions", "count"}, {"delay", "nanoseconds"}}, 1, {"contentions", "count"}, 0, 20,
     18, 5, {10982, 764045163}, {NULL}, {NULL}, ""},
    {"go/threadcreate-01.pb.gz", 2, {{"threadcreate", "count"}}, 1, {"threadcreate", "count"}, 0, 4, 4, 5, {9}, {NULL},
     {NULL}, ""},
    {"node/cpu-01.pb.gz", 269, {{"sample", "count"}, {"wall", "nanoseconds"}, {"cpu", "nanoseconds"}}, 10369000,
     {"wall", "nanoseconds"}, 3007, 30, 30, 0, {290, 2768523000, 2990225547}, {"kernel", NULL}, {NULL}, NULL},
    {"node/wall-01.pb.gz", 36, {{"sample", "count"}, {"wall", "nanoseconds"}}, 1118000, {"wall", "nanoseconds"}, 2037,
     34, 34, 0, {1624, 1815632000}, {NULL}, {NULL}, NULL},
    {"node/heap-01.pb.gz", 13, {{"inuse_objects", "count"}, {"inuse_space", "bytes"}}, 131072,
     {"inuse_space", "bytes"}, 0, 11, 11, 0, {791161, 98009024}, {NULL}, {NULL}, NULL},
};
#define NFIXTURES (sizeof(kFixtures) / sizeof(kFixtures[0]))

/* Is key (a string) in the NULL-terminated list? */
static int in_list(const ps_profile_t *p, uint32_t key, const char *const *list, size_t max)
{
    for (size_t i = 0; i < max && list[i] != NULL; i++)
        if (str_eq(p, key, list[i]))
            return 1;
    return 0;
}

static void check_fixture(const fixture_t *fx, const ps_profile_t *p)
{
    uint32_t ntypes = 0;
    while (ntypes < 4 && fx->types[ntypes][0] != NULL)
        ntypes++;
    assert_int_equal(p->nsamples, fx->nsamples);
    assert_int_equal(p->ntypes, ntypes);
    for (uint32_t i = 0; i < ntypes; i++) {
        assert_str(p, p->sample_types[i].type, fx->types[i][0]);
        assert_str(p, p->sample_types[i].unit, fx->types[i][1]);
    }
    assert_int_equal(p->period, fx->period);
    assert_str(p, p->period_type.type, fx->period_type[0]);
    assert_str(p, p->period_type.unit, fx->period_type[1]);
    assert_int_equal((p->duration_nanos + 500000) / 1000000, fx->duration_ms);
    assert_int_equal(p->nlocations, fx->nlocations);
    assert_int_equal(p->nfunctions, fx->nfunctions);
    assert_int_equal(p->nmappings, fx->nmappings);
    /* captured 2026-11-30 (README) */
    assert_true(p->time_nanos >= 1796022364000000000ll && p->time_nanos <= 1796022407000000000ll);
    if (fx->default_type != NULL)
        assert_str(p, p->default_sample_type, fx->default_type);
    assert_str(p, 0, "");

    int64_t totals[4] = {0};
    int seen_str[4] = {0}, seen_num[2] = {0};
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *s = &p->samples[i];
        for (uint32_t k = 0; k < ntypes; k++)
            totals[k] += s->values[k];
        for (uint32_t k = 0; k < s->nlocs; k++)
            assert_true(s->locs[k] >= 1 && s->locs[k] <= p->nlocations);
        for (uint32_t k = 0; k < s->nlabels; k++) {
            const ps_label_t *l = &s->labels[k];
            const char *const *keys = l->str != 0 ? fx->str_keys : fx->num_keys;
            size_t nkeys = l->str != 0 ? 4 : 2;
            if (!in_list(p, l->key, keys, nkeys))
                fail_msg("%s: unexpected %s label key \"%s\"", fx->file, l->str ? "string" : "numeric",
                         ps_profile_str(p, l->key).ptr);
            for (size_t j = 0; j < nkeys && keys[j] != NULL; j++)
                if (str_eq(p, l->key, keys[j]))
                    (l->str != 0 ? seen_str : seen_num)[j] = 1;
        }
    }
    for (uint32_t k = 0; k < ntypes; k++)
        assert_int_equal(totals[k], fx->totals[k]);
    for (size_t j = 0; j < 4 && fx->str_keys[j] != NULL; j++)
        assert_true(seen_str[j]);
    for (size_t j = 0; j < 2 && fx->num_keys[j] != NULL; j++)
        assert_true(seen_num[j]);
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *l = &p->locations[i];
        assert_true(l->mapping <= p->nmappings);
        for (uint32_t k = 0; k < l->nlines; k++)
            assert_true(l->lines[k].function >= 1 && l->lines[k].function <= p->nfunctions);
    }
    if (fx->nmappings == 0)
        for (uint32_t i = 0; i < p->nlocations; i++)
            assert_int_equal(p->locations[i].mapping, 0);
}

static void test_fixtures(void **state)
{
    (void)state;
    for (size_t i = 0; i < NFIXTURES; i++) {
        size_t n;
        uint8_t *data = ps_test_read_fixture(kFixtures[i].file, &n);
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        decode_or_fail(data, n, NULL, &a, &p);
        check_fixture(&kFixtures[i], &p);
        ps_arena_dispose(&a);
        free(data);
    }
}

/* Every *.pb / *.pb.gz in pprof/go and pprof/node decodes (also files added after this test). */
static void test_all_fixture_files(void **state)
{
    (void)state;
    static const char *const dirs[] = {"go", "node"};
    int files = 0;
    for (size_t d = 0; d < 2; d++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/pprof/%s", ps_test_testdata(), dirs[d]);
        DIR *dir = opendir(path);
        if (dir == NULL)
            fail_msg("cannot open %s", path);
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (!(len > 3 && strcmp(e->d_name + len - 3, ".pb") == 0) &&
                !(len > 6 && strcmp(e->d_name + len - 6, ".pb.gz") == 0))
                continue;
            char rel[512];
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], e->d_name);
            size_t n;
            uint8_t *data = ps_test_read_fixture(rel, &n);
            ps_arena_t a = PS_ARENA_INIT;
            ps_profile_t p;
            ps_err_t err;
            if (ps_pprof_decode(data, n, NULL, &a, &p, &err) != 0)
                fail_msg("%s: %s", rel, err.msg);
            assert_true(p.ntypes > 0);
            ps_arena_dispose(&a);
            free(data);
            files++;
        }
        closedir(dir);
    }
    assert_true(files >= (int)NFIXTURES);
}

static void test_go_cpu_facts(void **state)
{
    (void)state;
    size_t n;
    uint8_t *data = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode_or_fail(data, n, NULL, &a, &p);
    /* mappings: the binary first, then the shared objects */
    assert_str(&p, p.mappings[0].filename, "/tmp/gotarget");
    int libc = 0, inlined = 0, main_go = 0;
    for (uint32_t i = 0; i < p.nmappings; i++)
        libc += str_eq(&p, p.mappings[i].filename, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    for (uint32_t i = 0; i < p.nlocations; i++)
        inlined += p.locations[i].nlines > 1;
    for (uint32_t i = 0; i < p.nfunctions; i++)
        main_go += str_eq(&p, p.functions[i].filename, "gotarget/main.go");
    assert_int_equal(libc, 1);
    assert_true(inlined > 0);
    assert_true(main_go > 0);
    /* each sample: cpu = count * period; the workers' samples carry 3 string labels, the
     * runtime's none */
    uint32_t labelled = 0;
    for (uint32_t i = 0; i < p.nsamples; i++) {
        assert_int_equal(p.samples[i].values[1], p.samples[i].values[0] * 10000000);
        assert_true(p.samples[i].nlabels == 0 || p.samples[i].nlabels == 3);
        labelled += p.samples[i].nlabels == 3;
        assert_true(p.samples[i].nlocs > 0);
    }
    assert_true(labelled > p.nsamples / 2);
    ps_arena_dispose(&a);
    free(data);
}

/* Go writes 1- and 2-element repeated fields unpacked: check that cpu-01.pb really has a Sample
 * with a wire-type-0 value field (so decoding it exercises the unpacked form). */
static void test_go_cpu_has_unpacked_values(void **state)
{
    (void)state;
    size_t n;
    uint8_t *data = ps_test_read_fixture("go/cpu-01.pb", &n);
    ps_dec_t d;
    int unpacked_values = 0;
    ps_dec_init(&d, data, n);
    while (ps_dec_left(&d) > 0 && !d.err) {
        uint64_t tag = ps_dec_uvarint(&d);
        switch (tag & 7) {
        case 0: ps_dec_uvarint(&d); break;
        case 1: ps_dec_bytes(&d, 8); break;
        case 5: ps_dec_bytes(&d, 4); break;
        case 2: {
            uint64_t len = ps_dec_uvarint(&d);
            const uint8_t *pl = ps_dec_bytes(&d, (size_t)len);
            if ((tag >> 3) == 2 && pl != NULL) { /* a Sample */
                ps_dec_t s;
                ps_dec_init(&s, pl, (size_t)len);
                while (ps_dec_left(&s) > 0 && !s.err) {
                    uint64_t t = ps_dec_uvarint(&s);
                    if (t == (2 << 3 | 0))
                        unpacked_values++;
                    if ((t & 7) == 0)
                        ps_dec_uvarint(&s);
                    else if ((t & 7) == 2)
                        ps_dec_bytes(&s, (size_t)ps_dec_uvarint(&s));
                    else
                        s.err = 1;
                }
            }
            break;
        }
        default: d.err = 1;
        }
    }
    assert_false(d.err);
    assert_int_equal(unpacked_values, 2 * 272); /* two values per sample, each its own field */
    free(data);
}

static void test_gzip_and_raw_identical(void **state)
{
    (void)state;
    size_t ngz, nraw;
    uint8_t *gz = ps_test_read_fixture("go/cpu-01.pb.gz", &ngz);
    uint8_t *raw = ps_test_read_fixture("go/cpu-01.pb", &nraw);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p1, p2;
    assert_true(ps_is_gzip(gz, ngz));
    assert_false(ps_is_gzip(raw, nraw));
    decode_or_fail(gz, ngz, NULL, &a, &p1);
    decode_or_fail(raw, nraw, NULL, &a, &p2);
    assert_profiles_equal(&p1, &p2);

    /* ps_gunzip gives back exactly the raw file */
    const uint8_t *out;
    size_t outn;
    ps_err_t err;
    assert_int_equal(ps_gunzip(gz, ngz, 1u << 20, &a, &out, &outn, &err), 0);
    assert_int_equal(outn, nraw);
    assert_memory_equal(out, raw, nraw);
    /* ... also when max_out is exactly the size */
    assert_int_equal(ps_gunzip(gz, ngz, nraw, &a, &out, &outn, &err), 0);
    assert_int_equal(outn, nraw);
    assert_int_equal(ps_gunzip(gz, ngz, nraw - 1, &a, &out, &outn, &err), PS_ETOOBIG);
    ps_arena_dispose(&a);
    free(gz);
    free(raw);
}

static void test_roundtrip_fixtures(void **state)
{
    (void)state;
    static const int levels[] = {-1, 0, 1, 9};
    for (size_t i = 0; i < NFIXTURES; i++) {
        size_t n;
        uint8_t *data = ps_test_read_fixture(kFixtures[i].file, &n);
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p, q;
        decode_or_fail(data, n, NULL, &a, &p);
        for (size_t k = 0; k < sizeof(levels) / sizeof(levels[0]); k++) {
            ps_buf_t b = PS_BUF_INIT;
            ps_buf_append(&b, "xy", 2); /* encode appends */
            encode_or_fail(&p, levels[k], &b);
            assert_memory_equal(b.data, "xy", 2);
            assert_int_equal(ps_is_gzip(b.data + 2, b.len - 2), levels[k] >= 0);
            decode_or_fail(b.data + 2, b.len - 2, NULL, &a, &q);
            assert_profiles_equal(&p, &q);
            check_fixture(&kFixtures[i], &q);
            ps_buf_dispose(&b);
        }
        ps_arena_dispose(&a);
        free(data);
    }
}

static void test_roundtrip_handmade(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p, q, r;
    ps_buf_t b = PS_BUF_INIT, b2 = PS_BUF_INIT;
    make_profile(&a, &p);
    encode_or_fail(&p, -1, &b);
    decode_or_fail(b.data, b.len, NULL, &a, &q);
    assert_profiles_equal(&p, &q);
    /* the label with both str and num survives as is */
    assert_int_equal(q.samples[0].labels[2].str, 19);
    assert_int_equal(q.samples[0].labels[2].num, -5);
    assert_int_equal(q.samples[0].labels[2].num_unit, 4);
    assert_int_equal(q.samples[1].values[1], INT64_MIN);
    assert_int_equal(q.mappings[1].memory_limit, 0xffffffffffffffffull);
    assert_int_equal(q.locations[1].is_folded, 1);
    assert_int_equal(q.locations[0].lines[0].column, 7);
    assert_str(&q, q.doc_url, "https://example.com/doc");
    /* encoding is deterministic */
    encode_or_fail(&q, -1, &b2);
    assert_int_equal(b.len, b2.len);
    assert_memory_equal(b.data, b2.data, b.len);
    /* a gzipped copy decodes to the same */
    ps_buf_reset(&b2);
    encode_or_fail(&q, 6, &b2);
    decode_or_fail(b2.data, b2.len, NULL, &a, &r);
    assert_profiles_equal(&p, &r);
    ps_buf_dispose(&b);
    ps_buf_dispose(&b2);
    ps_arena_dispose(&a);
}

/* The wire example at the top of pprof.c. */
static void test_wire_example(void **state)
{
    (void)state;
    static const uint8_t want[] = {0x0a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x12, 0x06, 0x0a, 0x01, 0x01, 0x12, 0x01, 0x05,
                                   0x22, 0x08, 0x08, 0x01, 0x22, 0x04, 0x08, 0x01, 0x10, 0x07, 0x2a, 0x04, 0x08, 0x01,
                                   0x10, 0x03, 0x32, 0x00, 0x32, 0x07, 's',  'a',  'm',  'p',  'l',  'e',  's',  0x32,
                                   0x05, 'c',  'o',  'u',  'n',  't',  0x32, 0x04, 'm',  'a',  'i',  'n'};
    ps_str_t strs[] = {{"", 0}, {"samples", 7}, {"count", 5}, {"main", 4}};
    ps_value_type_t st = {1, 2};
    ps_function_t fn = {3, 0, 0, 0};
    ps_line_t ln = {1, 7, 0};
    ps_location_t loc = {0, 0, 0, 1, &ln};
    uint32_t locs[] = {1};
    int64_t vals[] = {5};
    ps_sample_t s = {1, locs, vals, 0, NULL};
    ps_profile_t p = {0};
    p.nstrings = 4, p.strings = strs, p.ntypes = 1, p.sample_types = &st, p.nsamples = 1, p.samples = &s;
    p.nfunctions = 1, p.functions = &fn, p.nlocations = 1, p.locations = &loc;
    ps_buf_t b = PS_BUF_INIT;
    encode_or_fail(&p, -1, &b);
    assert_int_equal(b.len, sizeof(want));
    assert_memory_equal(b.data, want, sizeof(want));
    ps_buf_dispose(&b);
}

/* Unpacked and packed repeated scalars, fields in any order, unknown fields: all the same. */
static void test_wire_variants(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p1, p2;
    ps_buf_t b1 = PS_BUF_INIT, b2 = PS_BUF_INIT, m = PS_BUF_INIT, v = PS_BUF_INIT;

    /* b1: packed; canonical order */
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(&b1, 1, &m);
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(&b1, 1, &m);
    ps_put_uvarint(&v, 1), ps_put_uvarint(&v, 2), pw_msg(&m, 1, &v);
    ps_put_uvarint(&v, 3), ps_put_uvarint(&v, 300), pw_msg(&m, 2, &v);
    pw_msg(&b1, 2, &m);
    pw_varint(&m, 1, 1), pw_msg(&b1, 4, &m);
    pw_varint(&m, 1, 2), pw_msg(&b1, 4, &m);
    pw_bytes(&b1, 6, "", 0), pw_bytes(&b1, 6, "samples", 7), pw_bytes(&b1, 6, "count", 5);
    ps_put_uvarint(&v, 1), ps_put_uvarint(&v, 2), pw_msg(&b1, 13, &v);

    /* b2: strings first, unpacked values, locations after the samples, unknown fields everywhere */
    pw_bytes(&b2, 6, "", 0), pw_bytes(&b2, 6, "samples", 7);
    pw_varint(&b2, 99, 12345);          /* unknown varint */
    pw_bytes(&b2, 100, "junk", 4);      /* unknown bytes */
    ps_put_uvarint(&b2, 101 << 3 | 1), ps_buf_append(&b2, "12345678", 8); /* unknown fixed64 */
    ps_put_uvarint(&b2, 102 << 3 | 5), ps_buf_append(&b2, "1234", 4);     /* unknown fixed32 */
    pw_varint(&m, 2, 3), pw_varint(&m, 1, 1), pw_varint(&m, 77, 1), pw_varint(&m, 2, 300), pw_varint(&m, 1, 2);
    pw_msg(&b2, 2, &m);
    pw_varint(&m, 2, 2), pw_varint(&m, 1, 1), pw_varint(&m, 9, 9), pw_msg(&b2, 1, &m);
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(&b2, 1, &m);
    pw_varint(&m, 1, 1), pw_bytes(&m, 50, "x", 1), pw_msg(&b2, 4, &m);
    pw_varint(&m, 1, 2), pw_msg(&b2, 4, &m);
    pw_bytes(&b2, 6, "count", 5);
    pw_varint(&b2, 13, 1), pw_varint(&b2, 13, 2);

    decode_or_fail(b1.data, b1.len, NULL, &a, &p1);
    decode_or_fail(b2.data, b2.len, NULL, &a, &p2);
    assert_profiles_equal(&p1, &p2);
    assert_int_equal(p1.nsamples, 1);
    assert_int_equal(p1.samples[0].nlocs, 2);
    assert_int_equal(p1.samples[0].values[1], 300);
    assert_int_equal(p1.ncomments, 2);
    ps_buf_dispose(&b1);
    ps_buf_dispose(&b2);
    ps_arena_dispose(&a);
}

/* Ids need not be small or dense: large sparse ids go through the sorted-array lookup. */
static void test_sparse_ids(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_buf_t b = PS_BUF_INIT, m = PS_BUF_INIT, v = PS_BUF_INIT;
    const uint64_t big = 1ull << 60;
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(&b, 1, &m);
    pw_varint(&m, 1, big + 5), pw_varint(&m, 5, 2), pw_msg(&b, 3, &m);
    pw_varint(&m, 1, 7), pw_varint(&m, 2, 2), pw_msg(&b, 5, &m);
    pw_varint(&m, 1, 123456789012ull), pw_varint(&m, 2, 1), pw_msg(&b, 5, &m);
    pw_varint(&v, 1, 123456789012ull), pw_varint(&v, 2, 99), pw_msg(&m, 4, &v);
    pw_varint(&m, 1, big), pw_varint(&m, 2, big + 5), pw_msg(&b, 4, &m);
    pw_varint(&m, 1, 3), pw_varint(&m, 2, big + 5), pw_msg(&b, 4, &m);
    pw_varint(&m, 1, big), pw_varint(&m, 1, 3), pw_varint(&m, 2, 1), pw_msg(&b, 2, &m);
    pw_bytes(&b, 6, "", 0), pw_bytes(&b, 6, "samples", 7), pw_bytes(&b, 6, "count", 5);
    decode_or_fail(b.data, b.len, NULL, &a, &p);
    assert_int_equal(p.nlocations, 2);
    assert_int_equal(p.samples[0].locs[0], 1);
    assert_int_equal(p.samples[0].locs[1], 2);
    assert_int_equal(p.locations[0].mapping, 1);
    assert_int_equal(p.locations[0].lines[0].function, 2);
    assert_int_equal(p.locations[0].lines[0].line, 99);

    /* duplicates are caught on this path too */
    pw_varint(&m, 1, big), pw_msg(&b, 4, &m);
    expect_error(b.data, b.len, NULL, PS_EINVAL, "location[2]: id 1152921504606846976 is already used by location[0]");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void test_limits_default(void **state)
{
    (void)state;
    ps_pprof_limits_t l;
    ps_pprof_limits_default(&l);
    assert_int_equal(l.max_inflated, 64u << 20);
    assert_int_equal(l.max_strings, 1000000);
    assert_int_equal(l.max_samples, 1000000);
    assert_int_equal(l.max_locations, 1000000);
    assert_int_equal(l.max_functions, 1000000);
    assert_int_equal(l.max_mappings, 10000);
    assert_int_equal(l.max_sample_types, 16);
    assert_int_equal(l.max_stack_depth, 1024);
    assert_int_equal(l.max_lines, 256);
    assert_int_equal(l.max_labels, 64);
    assert_int_equal(l.max_string_len, 64u << 10);
    assert_false(ps_is_gzip("\x1f", 1));
    assert_true(ps_is_gzip("\x1f\x8b", 2));
    assert_false(ps_is_gzip("\x8b\x1f", 2));
}

/* ---- gzip ------------------------------------------------------------------------------------ */

static void test_gzip_errors(void **state)
{
    (void)state;
    size_t n;
    uint8_t *gz = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    uint8_t *bad = malloc(n + 16);

    /* truncated: in the deflate data, and in the 8-byte trailer */
    expect_error(gz, n / 2, NULL, PS_EINVAL, "gzip: unexpected end of data");
    expect_error(gz, n - 3, NULL, PS_EINVAL, "gzip: unexpected end of data");
    expect_error(gz, 2, NULL, PS_EINVAL, "gzip:");
    /* corrupt deflate data, then a corrupt CRC */
    memcpy(bad, gz, n);
    for (size_t i = 100; i < 140; i++)
        bad[i] ^= 0x5a;
    expect_error(bad, n, NULL, PS_EINVAL, "gzip: ");
    memcpy(bad, gz, n);
    bad[n - 6] ^= 1;
    expect_error(bad, n, NULL, PS_EINVAL, "gzip: incorrect data check");
    /* bad header flags */
    memcpy(bad, gz, n);
    bad[2] = 7;
    expect_error(bad, n, NULL, PS_EINVAL, "gzip: ");
    /* trailing garbage after the member */
    memcpy(bad, gz, n);
    memcpy(bad + n, "garbage!", 8);
    expect_error(bad, n + 8, NULL, PS_EINVAL, "gzip: 8 bytes of trailing garbage");
    /* ps_gunzip on non-gzip input */
    ps_arena_t a = PS_ARENA_INIT;
    const uint8_t *out;
    size_t outn;
    ps_err_t err;
    assert_int_equal(ps_gunzip("hello", 5, 100, &a, &out, &outn, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "gzip: not a gzip stream"));
    assert_int_equal(ps_gunzip("", 0, 100, &a, &out, &outn, &err), PS_EINVAL);
    ps_arena_dispose(&a);
    free(bad);
    free(gz);
}

static void test_gzip_concatenated(void **state)
{
    (void)state;
    size_t n1, n2, n3;
    uint8_t *g1 = gzip_bytes("hello, ", 7, &n1);
    uint8_t *g2 = gzip_bytes("", 0, &n2);
    uint8_t *g3 = gzip_bytes("world", 5, &n3);
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_append(&b, g1, n1);
    ps_buf_append(&b, g2, n2);
    ps_buf_append(&b, g3, n3);
    ps_arena_t a = PS_ARENA_INIT;
    const uint8_t *out;
    size_t outn;
    ps_err_t err;
    assert_int_equal(ps_gunzip(b.data, b.len, 100, &a, &out, &outn, &err), 0);
    assert_int_equal(outn, 12);
    assert_memory_equal(out, "hello, world", 12);
    /* the limit counts all members together */
    assert_int_equal(ps_gunzip(b.data, b.len, 11, &a, &out, &outn, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "decompressed body exceeds 11 bytes");
    /* a second member cut short */
    assert_int_equal(ps_gunzip(b.data, b.len - 4, 100, &a, &out, &outn, &err), PS_EINVAL);

    /* a pprof profile split across two gzip members decodes */
    ps_arena_t pa = PS_ARENA_INIT;
    ps_profile_t p, q;
    ps_buf_t raw = PS_BUF_INIT, gz = PS_BUF_INIT;
    make_profile(&pa, &p);
    encode_or_fail(&p, -1, &raw);
    size_t h1, h2;
    uint8_t *m1 = gzip_bytes(raw.data, raw.len / 2, &h1);
    uint8_t *m2 = gzip_bytes(raw.data + raw.len / 2, raw.len - raw.len / 2, &h2);
    ps_buf_append(&gz, m1, h1);
    ps_buf_append(&gz, m2, h2);
    decode_or_fail(gz.data, gz.len, NULL, &pa, &q);
    assert_profiles_equal(&p, &q);

    free(m1), free(m2), free(g1), free(g2), free(g3);
    ps_buf_dispose(&raw), ps_buf_dispose(&gz), ps_buf_dispose(&b);
    ps_arena_dispose(&a), ps_arena_dispose(&pa);
}

/* ps_gunzip (libdeflate, zlib for what libdeflate does not take as it is) answers as
 * ps_gunzip_zlib (zlib's streaming inflate alone) does: the same code, message and output. */
static int gunzip_same(const uint8_t *in, size_t n, size_t max_out)
{
    ps_arena_t a = PS_ARENA_INIT, b = PS_ARENA_INIT;
    const uint8_t *o1 = NULL, *o2 = NULL;
    size_t n1 = 0, n2 = 0;
    ps_err_t e1, e2;
    ps_err_clear(&e1);
    ps_err_clear(&e2);
    int r1 = ps_gunzip(in, n, max_out, &a, &o1, &n1, &e1);
    int r2 = ps_gunzip_zlib(in, n, max_out, &b, &o2, &n2, &e2);
    if (r1 != r2 || strcmp(e1.msg, e2.msg) != 0)
        fail_msg("%zu bytes, max %zu: ps_gunzip %d \"%s\", zlib %d \"%s\"", n, max_out, r1, e1.msg, r2, e2.msg);
    assert_int_equal(n1, n2);
    if (r1 == 0 && n1 > 0)
        assert_memory_equal(o1, o2, n1);
    assert_int_equal(ps_inflate_budget_reserved(), 0);
    /* and into the thread's buffer: the same answer */
    const uint8_t *o3 = NULL;
    size_t n3 = 0;
    ps_err_t e3;
    ps_err_clear(&e3);
    int r3 = ps_gunzip_temp(in, n, max_out, &b, &o3, &n3, &e3);
    if (r3 != r2 || strcmp(e3.msg, e2.msg) != 0)
        fail_msg("%zu bytes, max %zu: ps_gunzip_temp %d \"%s\", zlib %d \"%s\"", n, max_out, r3, e3.msg, r2, e2.msg);
    assert_int_equal(n3, n2);
    if (r3 == 0 && n3 > 0)
        assert_memory_equal(o3, o2, n3);
    ps_gunzip_temp_done();
    assert_int_equal(ps_inflate_budget_reserved(), 0);
    ps_arena_dispose(&a);
    ps_arena_dispose(&b);
    return r1;
}

/* Each thread keeps its libdeflate decompressor (gzip.c): threads gunzipping at once, good
 * streams and bad ones in turn, each get exactly the raw bytes back (one decompressor shared by
 * the threads would mix their states). */
typedef struct gz_job {
    const uint8_t *gz, *raw;
    size_t ngz, nraw;
    int wrong; /* gunzips whose answer was not the expected one */
} gz_job_t;

static void *gunzip_many(void *arg)
{
    gz_job_t *j = arg;
    uint8_t *bad = malloc(j->ngz);
    memcpy(bad, j->gz, j->ngz);
    bad[j->ngz / 2] ^= 0x10;
    for (int i = 0; i < 300; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        const uint8_t *out = NULL;
        size_t outn = 0;
        ps_err_t err;
        ps_err_clear(&err);
        if (i % 3 == 2) { /* a damaged stream: refused (zlib words it), and the next is fine */
            if (ps_gunzip(bad, j->ngz, 64u << 20, &a, &out, &outn, &err) != PS_EINVAL)
                j->wrong++;
        } else if (ps_gunzip(j->gz, j->ngz, 64u << 20, &a, &out, &outn, &err) != 0 || outn != j->nraw ||
                   memcmp(out, j->raw, outn) != 0) {
            j->wrong++;
        }
        ps_arena_dispose(&a);
    }
    free(bad);
    return NULL;
}

static void test_gunzip_threads(void **state)
{
    (void)state;
    static const char *const fx[] = {"go/cpu-01.pb.gz", "go/heap-01.pb.gz", "go/cpu-02.pb.gz"};
    gz_job_t jobs[3];
    uint8_t *gz[3];
    ps_arena_t a = PS_ARENA_INIT;
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        ps_err_t err;
        gz[i] = ps_test_read_fixture(fx[i], &jobs[i].ngz);
        jobs[i].gz = gz[i];
        jobs[i].wrong = 0;
        assert_int_equal(ps_gunzip_zlib(gz[i], jobs[i].ngz, 64u << 20, &a, &jobs[i].raw, &jobs[i].nraw, &err), 0);
    }
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, gunzip_many, &jobs[i]), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].wrong, 0);
    }
    gunzip_many(&jobs[0]); /* this thread too, after the others ended */
    assert_int_equal(jobs[0].wrong, 0);
    assert_int_equal(ps_inflate_budget_reserved(), 0);
    for (int i = 0; i < 3; i++)
        free(gz[i]);
    ps_arena_dispose(&a);
}

/* A gzip member of p with the header flags flg (FEXTRA, FNAME, FCOMMENT, FHCRC) and fields, made
 * by hand around zlib's raw deflate; hcrc_ok: the header CRC16 right or off by one. */
static void gzip_member(ps_buf_t *out, const char *p, size_t n, uint8_t flg, bool hcrc_ok)
{
    size_t start = out->len;
    const uint8_t hdr[10] = {0x1f, 0x8b, 8, flg, 1, 2, 3, 4, 0, 3};
    ps_buf_append(out, hdr, sizeof(hdr));
    if (flg & 4)
        ps_buf_append(out, "\x04\x00" "abcd", 6);
    if (flg & 8)
        ps_buf_append(out, "name.pb\0", 8);
    if (flg & 16)
        ps_buf_append(out, "a comment\0", 10);
    if (flg & 2) {
        uint32_t c = (uint32_t)crc32(0, out->data + start, (uInt)(out->len - start)) + (hcrc_ok ? 0 : 1);
        uint8_t h[2] = {(uint8_t)c, (uint8_t)(c >> 8)};
        ps_buf_append(out, h, 2);
    }
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 6, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    size_t cap = deflateBound(&zs, n) + 16;
    zs.next_in = (Bytef *)p;
    zs.avail_in = (uInt)n;
    zs.next_out = ps_buf_reserve(out, cap);
    zs.avail_out = (uInt)cap;
    assert_int_equal(deflate(&zs, Z_FINISH), Z_STREAM_END);
    out->len += zs.total_out;
    deflateEnd(&zs);
    uint32_t crc = (uint32_t)crc32(0, (const Bytef *)p, (uInt)n), isize = (uint32_t)n;
    uint8_t t[8] = {(uint8_t)crc, (uint8_t)(crc >> 8), (uint8_t)(crc >> 16), (uint8_t)(crc >> 24),
                    (uint8_t)isize, (uint8_t)(isize >> 8), (uint8_t)(isize >> 16), (uint8_t)(isize >> 24)};
    ps_buf_append(out, t, 8);
}

static void test_gunzip_libdeflate_as_zlib(void **state)
{
    (void)state;
    /* the real profiles, at and around their size limit, one member and two */
    static const char *const fx[] = {"go/cpu-01.pb.gz", "go/cpu-02.pb.gz", "go/heap-01.pb.gz"};
    for (size_t i = 0; i < sizeof(fx) / sizeof(fx[0]); i++) {
        size_t n;
        uint8_t *gz = ps_test_read_fixture(fx[i], &n);
        ps_arena_t a = PS_ARENA_INIT;
        const uint8_t *raw;
        size_t rawn;
        ps_err_t err;
        assert_int_equal(ps_gunzip_zlib(gz, n, 64u << 20, &a, &raw, &rawn, &err), 0);
        assert_int_equal(gunzip_same(gz, n, 64u << 20), 0);
        assert_int_equal(gunzip_same(gz, n, rawn), 0);
        assert_int_equal(gunzip_same(gz, n, rawn - 1), PS_ETOOBIG);
        assert_int_equal(gunzip_same(gz, n, 1000), PS_ETOOBIG);
        ps_buf_t two = PS_BUF_INIT;
        ps_buf_append(&two, gz, n);
        ps_buf_append(&two, gz, n);
        assert_int_equal(gunzip_same(two.data, two.len, 2 * rawn), 0);
        assert_int_equal(gunzip_same(two.data, two.len, 2 * rawn - 1), PS_ETOOBIG);
        /* trailing bytes, a second member cut short, flipped bits */
        ps_buf_append(&two, "\x1f", 1);
        assert_int_equal(gunzip_same(two.data, two.len, 64u << 20), PS_EINVAL);
        assert_int_equal(gunzip_same(two.data, n + 20, 64u << 20), PS_EINVAL);
        for (size_t k = 0; k < n; k += 97) {
            two.data[k] ^= 0x10;
            gunzip_same(two.data, n, 64u << 20);
            two.data[k] ^= 0x10;
        }
        ps_buf_dispose(&two);
        ps_arena_dispose(&a);
        free(gz);
    }
    /* every header field; a header CRC that is wrong (zlib refuses it, libdeflate would not look) */
    const char *text = "hello, hello, hello, world";
    for (uint8_t flg = 0; flg < 32; flg += 2) {
        for (int ok = 0; ok < 2; ok++) {
            ps_buf_t m = PS_BUF_INIT;
            gzip_member(&m, text, strlen(text), flg, ok);
            int want = (flg & 2) && !ok ? PS_EINVAL : 0;
            assert_int_equal(gunzip_same(m.data, m.len, 100), want);
            ps_buf_dispose(&m);
        }
    }
    ps_buf_t m = PS_BUF_INIT;
    gzip_member(&m, text, strlen(text), 2, false);
    ps_arena_t a = PS_ARENA_INIT;
    const uint8_t *out;
    size_t outn;
    ps_err_t err;
    assert_int_equal(ps_gunzip(m.data, m.len, 100, &a, &out, &outn, &err), PS_EINVAL);
    assert_string_equal(err.msg, "gzip: header crc mismatch");
    ps_arena_dispose(&a);
    /* a small stream cut at every length and with every byte flipped */
    ps_buf_reset(&m);
    gzip_member(&m, text, strlen(text), 8, true);
    for (size_t len = 0; len < m.len; len++)
        assert_int_equal(gunzip_same(m.data, len, 100), PS_EINVAL);
    for (size_t k = 0; k < m.len; k++)
        for (int bit = 0; bit < 8; bit++) {
            m.data[k] ^= (uint8_t)(1u << bit);
            gunzip_same(m.data, m.len, 100);
            m.data[k] ^= (uint8_t)(1u << bit);
        }
    ps_buf_dispose(&m);
}

/* 100 MB of zeros gzipped (~100 KB): stopped at max_inflated without allocating 100 MB. */
static void test_gzip_bomb(void **state)
{
    (void)state;
    const size_t chunk = 1u << 20;
    uint8_t *zeros = calloc(1, chunk);
    ps_buf_t gz = PS_BUF_INIT;
    z_stream zs;
    memset(&zs, 0, sizeof(zs));
    assert_int_equal(deflateInit2(&zs, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    for (int i = 0; i < 100; i++) {
        zs.next_in = zeros;
        zs.avail_in = (uInt)chunk;
        int flush = i == 99 ? Z_FINISH : Z_NO_FLUSH;
        int zrc;
        do {
            zs.next_out = ps_buf_reserve(&gz, 65536);
            zs.avail_out = 65536;
            zrc = deflate(&zs, flush);
            gz.len += 65536 - zs.avail_out;
        } while (zs.avail_out == 0 || (flush == Z_FINISH && zrc != Z_STREAM_END));
    }
    deflateEnd(&zs);
    assert_true(gz.len < 200000);

    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_inflated = 1u << 20;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    assert_int_equal(ps_pprof_decode(gz.data, gz.len, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "decompressed body exceeds 1048576 bytes");
    assert_true(a.used_total < 3u << 20); /* grown geometrically up to the limit, no further */
    ps_arena_dispose(&a);

    /* with the default 64 MiB limit too (the ISIZE trailer says 100 MB: not trusted beyond the limit) */
    lim.max_inflated = 64u << 20;
    assert_int_equal(ps_pprof_decode(gz.data, gz.len, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "decompressed body exceeds 67108864 bytes");
    assert_true(a.used_total < 3 * (64u << 20));
    ps_arena_dispose(&a);
    ps_buf_dispose(&gz);
    free(zeros);
}

/* The process-wide budget of bytes being decompressed at once: a second inflate past it is
 * PS_EUNAVAIL while the first holds its share; one alone always gets its own limit. */
static void test_inflate_budget(void **state)
{
    (void)state;
    ps_buf_t gz = PS_BUF_INIT, raw = PS_BUF_INIT;
    for (int i = 0; i < (4 << 20); i++)
        ps_buf_putc(&raw, (char)(i % 7));
    assert_int_equal(ps_gzip(raw.data, raw.len, 6, &gz, NULL), 0);
    ps_err_t err;
    ps_arena_t a = PS_ARENA_INIT;
    const uint8_t *out;
    size_t outn;
    ps_inflate_budget_set(1u << 20);
    /* alone: 4 MiB although the budget is 1 MiB */
    assert_int_equal(ps_gunzip(gz.data, gz.len, 8u << 20, &a, &out, &outn, &err), 0);
    assert_int_equal(outn, raw.len);
    assert_memory_equal(out, raw.data, raw.len);
    assert_int_equal(ps_inflate_budget_reserved(), 0); /* released on return */
    /* someone else holds 512 KiB: the output's growth past the rest of the budget is refused */
    assert_int_equal(ps_inflate_reserve(512u << 10, 0, &err), 0);
    uint64_t refused = ps_inflate_budget_refused();
    assert_int_equal(ps_gunzip(gz.data, gz.len, 8u << 20, &a, &out, &outn, &err), PS_EUNAVAIL);
    assert_non_null(strstr(err.msg, "too much is being decompressed at once ("));
    assert_non_null(strstr(err.msg, " of 1048576 bytes, the decompression budget): retry later"));
    assert_int_equal(ps_inflate_budget_refused(), refused + 1);
    assert_int_equal(ps_inflate_budget_reserved(), 512u << 10);
    ps_inflate_release(512u << 10);
    assert_int_equal(ps_gunzip(gz.data, gz.len, 8u << 20, &a, &out, &outn, &err), 0);
    ps_inflate_budget_set(0);
    ps_arena_dispose(&a);
    ps_buf_dispose(&gz);
    ps_buf_dispose(&raw);
}

/* ---- malformed protobuf --------------------------------------------------------------------- */

static void test_not_pprof(void **state)
{
    (void)state;
    expect_error("hello", 5, NULL, PS_EINVAL, "not a valid pprof protobuf");
    expect_error("<html><body>404</body></html>", 29, NULL, PS_EINVAL, "not a valid pprof protobuf");
    expect_error("", 0, NULL, PS_EINVAL, "profile has no sample types");

    /* random bytes, many seeds: always a clean EINVAL */
    uint8_t buf[4096];
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int round = 0; round < 200; round++) {
        size_t n = 1 + (size_t)(x % sizeof(buf));
        for (size_t i = 0; i < n; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            buf[i] = (uint8_t)x;
        }
        if (buf[0] == 0x1f)
            buf[0] = 0;
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        ps_err_t err;
        int rc = ps_pprof_decode(buf, n, NULL, &a, &p, &err);
        if (rc != PS_EINVAL)
            fail_msg("random input %d: rc %d (%s)", round, rc, rc ? err.msg : "");
        ps_arena_dispose(&a);
        assert_decoders_agree(buf, n, NULL);
    }
}

static void test_protobuf_garbage(void **state)
{
    (void)state;
    size_t n;
    uint8_t *raw = ps_test_read_fixture("go/cpu-01.pb", &n);
    /* truncated at many points: always fails cleanly */
    for (size_t cut = 1; cut < n; cut += 97) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        ps_err_t err;
        int rc = ps_pprof_decode(raw, cut, NULL, &a, &p, &err);
        if (rc != PS_EINVAL)
            fail_msg("cut at %zu: rc %d", cut, rc);
        ps_arena_dispose(&a);
        assert_decoders_agree(raw, cut, NULL);
    }
    expect_error(raw, n - 1, NULL, PS_EINVAL, "not a valid pprof protobuf: profile: field 6 runs past the end");
    free(raw);

    ps_buf_t b = PS_BUF_INIT, m = PS_BUF_INIT;
    /* a known field with the wrong wire type */
    pw_varint(&b, 2, 1);
    expect_appended(&b, PS_EINVAL, "not a valid pprof protobuf: profile: field 2 has wire type 0, expected 2");
    ps_buf_reset(&b);
    pw_bytes(&b, 9, "x", 1);
    expect_appended(&b, PS_EINVAL, "profile: field 9 has wire type 2, expected 0");
    ps_buf_reset(&b);
    pw_bytes(&m, 1, "x", 1), pw_msg(&b, 4, &m);
    expect_appended(&b, PS_EINVAL, "location[3]: field 1 has wire type 2, expected 0");
    ps_buf_reset(&b);
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 1), pw_bytes(&m, 3, "\x08", 1), pw_msg(&b, 2, &m);
    expect_appended(&b, PS_EINVAL, "not a valid pprof protobuf");
    ps_buf_reset(&b);
    /* inside a label (found by the detailed re-scan after protobuf-c refuses it) */
    {
        ps_buf_t lab = PS_BUF_INIT, smp = PS_BUF_INIT;
        pw_bytes(&lab, 1, "k", 1);
        pw_varint(&smp, 2, 1), pw_varint(&smp, 2, 2);
        pw_msg(&smp, 3, &lab);
        pw_msg(&b, 2, &smp);
    }
    expect_appended(&b, PS_EINVAL, "not a valid pprof protobuf: sample.label: field 1 has wire type 2, expected 0");
    ps_buf_reset(&b);
    /* group wire types are not supported */
    ps_put_uvarint(&b, 20 << 3 | 3);
    expect_appended(&b, PS_EINVAL, "field 20 has unsupported wire type 3");
    ps_buf_reset(&b);
    /* field number 0, overlong varint, truncated packed varint */
    ps_put_uvarint(&b, 0 << 3 | 0), ps_put_uvarint(&b, 1);
    expect_appended(&b, PS_EINVAL, "is not a valid field number");
    ps_buf_reset(&b);
    ps_put_uvarint(&b, 9 << 3 | 0), ps_buf_append(&b, "\xff\xff\xff\xff\xff\xff\xff\xff\xff\x7f", 10);
    expect_appended(&b, PS_EINVAL, "field 9 has a truncated or overlong varint");
    ps_buf_reset(&b);
    pw_bytes(&b, 13, "\x01\x82", 2);
    expect_appended(&b, PS_EINVAL, "field 13 ends in a truncated packed varint");
    ps_buf_dispose(&b);
}

static void mut_func_name(ps_profile_t *p) { p->functions[2].name = 900; }
static void mut_label_key(ps_profile_t *p) { p->samples[0].labels[1].num_unit = NSTR; }
static void mut_sample_type(ps_profile_t *p) { p->sample_types[1].unit = 1000; }
static void mut_mapping_file(ps_profile_t *p) { p->mappings[1].build_id = 55; }
static void mut_comment(ps_profile_t *p) { p->comments[1] = 20; }
static void mut_drop(ps_profile_t *p) { p->drop_frames = 77; }
static void mut_period_type(ps_profile_t *p) { p->period_type.unit = 300; }
static void mut_loc(ps_profile_t *p) { p->samples[1].locs[0] = 99; }
static void mut_func(ps_profile_t *p) { p->locations[1].lines[0].function = 42; }
static void mut_mapping(ps_profile_t *p) { p->locations[0].mapping = 7; }
static void mut_no_types(ps_profile_t *p) { p->ntypes = 0; }
static void mut_str0(ps_profile_t *p) { p->strings[0] = (ps_str_t){"x", 1}; }
static void mut_utf8(ps_profile_t *p) { p->strings[3] = (ps_str_t){"ab\xc3\x28", 4}; }
static void mut_surrogate(ps_profile_t *p) { p->strings[4] = (ps_str_t){"\xed\xa0\x80", 3}; }
static void mut_no_strings(ps_profile_t *p)
{
    p->nstrings = 0;
    p->ntypes = 1;
    p->sample_types[0] = (ps_value_type_t){0, 0};
    p->nsamples = p->nlocations = p->nfunctions = p->nmappings = p->ncomments = 0;
    p->drop_frames = p->keep_frames = p->default_sample_type = p->doc_url = 0;
    p->period_type = (ps_value_type_t){0, 0};
}

static void test_bad_references(void **state)
{
    (void)state;
    char msg[160];
    snprintf(msg, sizeof(msg), "function[2].name: string index 900 out of range (string_table has %zu entries)", NSTR);
    expect_mutated(mut_func_name, PS_EINVAL, msg);
    snprintf(msg, sizeof(msg), "sample[0].label[1].num_unit: string index %zu out of range", NSTR);
    expect_mutated(mut_label_key, PS_EINVAL, msg);
    expect_mutated(mut_sample_type, PS_EINVAL, "sample_type[1].unit: string index 1000 out of range");
    expect_mutated(mut_mapping_file, PS_EINVAL, "mapping[1].build_id: string index 55 out of range");
    expect_mutated(mut_comment, PS_EINVAL, "comment[1]: string index 20 out of range");
    expect_mutated(mut_drop, PS_EINVAL, "drop_frames: string index 77 out of range");
    expect_mutated(mut_period_type, PS_EINVAL, "period_type.unit: string index 300 out of range");
    expect_mutated(mut_loc, PS_EINVAL, "sample[1]: location_id 99 is not defined");
    expect_mutated(mut_func, PS_EINVAL, "location[1].line[0]: function_id 42 is not defined");
    expect_mutated(mut_mapping, PS_EINVAL, "location[0]: mapping_id 7 is not defined");
    expect_mutated(mut_no_types, PS_EINVAL, "profile has no sample types");
    expect_mutated(mut_str0, PS_EINVAL, "string_table[0] must be empty");
    expect_mutated(mut_utf8, PS_EINVAL, "string_table[3] is not valid UTF-8");
    expect_mutated(mut_surrogate, PS_EINVAL, "string_table[4] is not valid UTF-8");
    expect_mutated(mut_no_strings, PS_EINVAL, "string_table is empty");

    /* negative string index (int64 on the wire) */
    ps_buf_t b = PS_BUF_INIT, m = PS_BUF_INIT;
    pw_varint(&m, 1, 9), pw_varint(&m, 2, (uint64_t)-1), pw_msg(&b, 5, &m);
    expect_appended(&b, PS_EINVAL, "function[3].name: string index -1 out of range");
    ps_buf_reset(&b);
    /* a sample with three values in a two-type profile (caught by the scan) ... */
    pw_varint(&m, 2, 1), pw_varint(&m, 2, 2), pw_varint(&m, 2, 3), pw_msg(&b, 2, &m);
    expect_appended(&b, PS_EINVAL, "sample[3] has 3 values but there are 2 sample types");
    ps_buf_reset(&b);
    /* ... and with one (caught in conversion) */
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 1), pw_msg(&b, 2, &m);
    expect_appended(&b, PS_EINVAL, "sample[3] has 1 values but there are 2 sample types");
    ps_buf_reset(&b);
    /* duplicate and zero ids */
    pw_varint(&m, 1, 2), pw_msg(&b, 4, &m);
    expect_appended(&b, PS_EINVAL, "location[3]: id 2 is already used by location[1]");
    ps_buf_reset(&b);
    pw_varint(&m, 1, 1), pw_msg(&b, 5, &m);
    expect_appended(&b, PS_EINVAL, "function[3]: id 1 is already used by function[0]");
    ps_buf_reset(&b);
    pw_varint(&m, 1, 2), pw_msg(&b, 3, &m);
    expect_appended(&b, PS_EINVAL, "mapping[2]: id 2 is already used by mapping[1]");
    ps_buf_reset(&b);
    pw_varint(&m, 2, 5), pw_msg(&b, 5, &m);
    expect_appended(&b, PS_EINVAL, "function[3]: id 0 is not allowed (ids must be nonzero)");
    ps_buf_reset(&b);
    pw_varint(&m, 3, 5), pw_msg(&b, 4, &m);
    expect_appended(&b, PS_EINVAL, "location[3]: id 0 is not allowed");
    ps_buf_reset(&b);
    pw_msg(&b, 3, &m);
    expect_appended(&b, PS_EINVAL, "mapping[2]: id 0 is not allowed");
    ps_buf_reset(&b);
    /* a sample referring to location id 0 */
    pw_varint(&m, 1, 0), pw_varint(&m, 2, 1), pw_varint(&m, 2, 1), pw_msg(&b, 2, &m);
    expect_appended(&b, PS_EINVAL, "sample[3]: location_id 0 is not defined");
    ps_buf_reset(&b);
    /* strings: NUL byte, bad UTF-8 (appended entries are string_table[NSTR]) */
    pw_bytes(&b, 6, "a\0b", 3);
    snprintf(msg, sizeof(msg), "string_table[%zu] contains a NUL byte", NSTR);
    expect_appended(&b, PS_EINVAL, msg);
    ps_buf_reset(&b);
    pw_bytes(&b, 6, "\xc0\xaf", 2); /* overlong '/' */
    snprintf(msg, sizeof(msg), "string_table[%zu] is not valid UTF-8", NSTR);
    expect_appended(&b, PS_EINVAL, msg);
    ps_buf_reset(&b);
    /* the same past the first 8 bytes (checked a word at a time), and a NUL anywhere before bad
     * UTF-8 anywhere */
    pw_bytes(&b, 6, "abcdefghij\0k", 12);
    snprintf(msg, sizeof(msg), "string_table[%zu] contains a NUL byte", NSTR);
    expect_appended(&b, PS_EINVAL, msg);
    ps_buf_reset(&b);
    pw_bytes(&b, 6, "\xc0\xaf" "abcdefgh\0", 11);
    expect_appended(&b, PS_EINVAL, msg);
    ps_buf_reset(&b);
    pw_bytes(&b, 6, "abcdefgh\xc3\xa9xyz\xc0\xaf", 15);
    snprintf(msg, sizeof(msg), "string_table[%zu] is not valid UTF-8", NSTR);
    expect_appended(&b, PS_EINVAL, msg);
    ps_buf_dispose(&b);

    /* the encoder refuses NUL bytes too (protobuf-c strings are NUL-terminated) */
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    make_profile(&a, &p);
    p.strings[5] = (ps_str_t){"ma\0in", 5};
    assert_int_equal(ps_pprof_encode(&p, -1, &b, &err), PS_EINVAL);
    assert_string_equal(err.msg, "string_table[5] contains a NUL byte");
    make_profile(&a, &p);
    assert_int_equal(ps_pprof_encode(&p, 10, &b, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "gzip level 10"));
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* ---- limits --------------------------------------------------------------------------------- */

static void limit_case(const char *file, void (*set)(ps_pprof_limits_t *), int code, const char *substr)
{
    size_t n;
    uint8_t *data = ps_test_read_fixture(file, &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    set(&lim);
    expect_error(data, n, &lim, code, substr);
    free(data);
}

static void lim_samples(ps_pprof_limits_t *l) { l->max_samples = 10; }
static void lim_samples_exact(ps_pprof_limits_t *l) { l->max_samples = 271; }
static void lim_locations(ps_pprof_limits_t *l) { l->max_locations = 337; }
static void lim_functions(ps_pprof_limits_t *l) { l->max_functions = 100; }
static void lim_mappings(ps_pprof_limits_t *l) { l->max_mappings = 2; }
static void lim_strings(ps_pprof_limits_t *l) { l->max_strings = 50; }
static void lim_types(ps_pprof_limits_t *l) { l->max_sample_types = 1; }
static void lim_depth(ps_pprof_limits_t *l) { l->max_stack_depth = 3; }
static void lim_lines(ps_pprof_limits_t *l) { l->max_lines = 1; }
static void lim_labels(ps_pprof_limits_t *l) { l->max_labels = 2; }
static void lim_strlen(ps_pprof_limits_t *l) { l->max_string_len = 8; }
static void lim_inflated(ps_pprof_limits_t *l) { l->max_inflated = 24976; }

static void test_limits(void **state)
{
    (void)state;
    limit_case("go/cpu-01.pb.gz", lim_samples, PS_ETOOBIG, "profile has more than 10 samples (max_samples)");
    limit_case("go/cpu-01.pb.gz", lim_samples_exact, PS_ETOOBIG, "more than 271 samples");
    limit_case("go/cpu-01.pb.gz", lim_locations, PS_ETOOBIG, "profile has more than 337 locations (max_locations)");
    limit_case("go/cpu-01.pb.gz", lim_functions, PS_ETOOBIG, "profile has more than 100 functions (max_functions)");
    limit_case("go/cpu-01.pb.gz", lim_mappings, PS_ETOOBIG, "profile has more than 2 mappings (max_mappings)");
    limit_case("go/cpu-01.pb.gz", lim_strings, PS_ETOOBIG, "profile has more than 50 strings (max_strings)");
    limit_case("go/cpu-01.pb.gz", lim_types, PS_ETOOBIG, "profile has more than 1 sample types (max_sample_types)");
    limit_case("go/cpu-01.pb.gz", lim_depth, PS_ETOOBIG, "has more than 3 locations (max_stack_depth)");
    limit_case("go/goroutine-01.pb.gz", lim_lines, PS_ETOOBIG, "has more than 1 lines (max_lines)");
    limit_case("go/cpu-01.pb.gz", lim_labels, PS_ETOOBIG, "sample[0] has more than 2 labels (max_labels)");
    limit_case("go/cpu-01.pb.gz", lim_strlen, PS_ETOOBIG, "bytes long, more than 8 (max_string_len)");
    limit_case("go/cpu-01.pb.gz", lim_inflated, PS_ETOOBIG, "decompressed body exceeds 24976 bytes");
    limit_case("go/cpu-01.pb", lim_inflated, PS_ETOOBIG, "profile is 24977 bytes, more than 24976 (max_inflated)");

    /* exactly at the limits: fine */
    size_t n;
    uint8_t *data = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_samples = 272, lim.max_locations = 338, lim.max_functions = 193, lim.max_mappings = 5;
    lim.max_sample_types = 2, lim.max_labels = 3, lim.max_inflated = 24977;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    decode_or_fail(data, n, &lim, &a, &p);
    ps_arena_dispose(&a);
    free(data);

    /* comments are bounded by max_strings */
    ps_buf_t b = PS_BUF_INIT, v = PS_BUF_INIT;
    for (size_t i = 0; i < NSTR - 1; i++)
        ps_put_uvarint(&v, 1);
    pw_msg(&b, 13, &v);
    ps_pprof_limits_default(&lim);
    lim.max_strings = NSTR;
    expect_appended_lim(&b, &lim, PS_ETOOBIG, "profile has more than 20 comments (max_strings)");
    /* 2 + 19 comments with max_strings 21: accepted */
    lim.max_strings = NSTR + 1;
    ps_buf_t enc = PS_BUF_INIT;
    make_profile(&a, &p);
    encode_or_fail(&p, -1, &enc);
    ps_buf_append(&enc, b.data, b.len);
    decode_or_fail(enc.data, enc.len, &lim, &a, &p);
    assert_int_equal(p.ncomments, 2 + NSTR - 1);
    ps_arena_dispose(&a);
    ps_buf_dispose(&enc);
    ps_buf_dispose(&b);
}

/* For every fixture: limits set to exactly what the profile needs pass; one less fails. */
static void test_limits_exact(void **state)
{
    (void)state;
    for (size_t i = 0; i < NFIXTURES; i++) {
        size_t n;
        uint8_t *data = ps_test_read_fixture(kFixtures[i].file, &n);
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        decode_or_fail(data, n, NULL, &a, &p);
        ps_pprof_limits_t lim;
        ps_pprof_limits_default(&lim);
        lim.max_strings = p.nstrings;
        lim.max_samples = p.nsamples;
        lim.max_locations = p.nlocations;
        lim.max_functions = p.nfunctions;
        lim.max_mappings = p.nmappings;
        lim.max_sample_types = p.ntypes;
        lim.max_stack_depth = lim.max_labels = lim.max_lines = lim.max_string_len = 0;
        for (uint32_t k = 0; k < p.nsamples; k++) {
            if (p.samples[k].nlocs > lim.max_stack_depth)
                lim.max_stack_depth = p.samples[k].nlocs;
            if (p.samples[k].nlabels > lim.max_labels)
                lim.max_labels = p.samples[k].nlabels;
        }
        for (uint32_t k = 0; k < p.nlocations; k++)
            if (p.locations[k].nlines > lim.max_lines)
                lim.max_lines = p.locations[k].nlines;
        for (uint32_t k = 0; k < p.nstrings; k++)
            if (p.strings[k].len > lim.max_string_len)
                lim.max_string_len = p.strings[k].len;
        size_t raw = n;
        if (ps_is_gzip(data, n)) {
            const uint8_t *out;
            ps_err_t err;
            assert_int_equal(ps_gunzip(data, n, SIZE_MAX, &a, &out, &raw, &err), 0);
        }
        lim.max_inflated = raw;
        decode_or_fail(data, n, &lim, &a, &p);

        uint32_t *fields[] = {&lim.max_strings,      &lim.max_samples,      &lim.max_locations, &lim.max_functions,
                              &lim.max_mappings,     &lim.max_sample_types, &lim.max_stack_depth,
                              &lim.max_labels,       &lim.max_lines,        &lim.max_string_len};
        for (size_t k = 0; k < sizeof(fields) / sizeof(fields[0]); k++) {
            if (*fields[k] == 0)
                continue; /* e.g. no mappings, no labels */
            (*fields[k])--;
            ps_err_t err;
            int rc = ps_pprof_decode(data, n, &lim, &a, &p, &err);
            if (rc != PS_ETOOBIG)
                fail_msg("%s: limit %zu lowered by one: rc %d (%s)", kFixtures[i].file, k, rc, rc ? err.msg : "");
            (*fields[k])++;
        }
        lim.max_inflated--;
        expect_error(data, n, &lim, PS_ETOOBIG, ps_is_gzip(data, n) ? "decompressed body exceeds" : "(max_inflated)");
        ps_arena_dispose(&a);
        free(data);
    }
}

/* Fields the limits cannot count (unknown ones, singular ones repeated) cost protobuf-c memory
 * (the reference decoder stays within its budget of bytes per input byte and fails cleanly past
 * it); the direct decoder allocates nothing for them. */
static void test_memory_bounded(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_buf_t b = PS_BUF_INIT;
    make_profile(&a, &p);
    encode_or_fail(&p, -1, &b);
    for (int i = 0; i < 300000; i++)
        pw_varint(&b, 1000 + i % 7, 1);       /* unknown */
    for (int i = 0; i < 300000; i++)
        pw_varint(&b, 9, (uint64_t)i);       /* time_nanos, again and again: last one wins */
    ps_arena_dispose(&a);
    ps_err_t err;
    int rc = ps_pprof_decode(b.data, b.len, NULL, &a, &p, &err);
    assert_int_equal(rc, 0);
    assert_int_equal(p.time_nanos, 299999);
    assert_true(a.used_total <= 48 * b.len + (2u << 20));
    ps_arena_dispose(&a);
    rc = ps_pprof_decode_reference(b.data, b.len, NULL, &a, &p, &err);
    assert_true(rc == 0 || rc == PS_ETOOBIG);
    if (rc == 0)
        assert_int_equal(p.time_nanos, 299999);
    assert_true(a.used_total <= 48 * b.len + (2u << 20));
    ps_arena_dispose(&a);
    ps_buf_dispose(&b);
}

/* ---- the direct decoder against the reference (protobuf-c + conversion) ---------------------- */

/* Every file under tests/testdata (pprof or not, gzipped or not): both decoders agree. */
static int agree_tree(const char *dir, int *decoded)
{
    int files = 0;
    DIR *d = opendir(dir);
    if (d == NULL)
        fail_msg("cannot open %s", dir);
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char path[2048];
        snprintf(path, sizeof(path), "%s/%s", dir, e->d_name);
        DIR *sub = opendir(path);
        if (sub != NULL) {
            closedir(sub);
            files += agree_tree(path, decoded);
            continue;
        }
        size_t n;
        uint8_t *data = ps_test_read_path(path, &n);
        size_t len = strlen(e->d_name);
        bool pprof = (len > 3 && strcmp(e->d_name + len - 3, ".pb") == 0) ||
                     (len > 6 && strcmp(e->d_name + len - 6, ".pb.gz") == 0);
        int rc = decoders_agree(data, n, NULL);
        if (pprof && rc != 0)
            fail_msg("%s: rc %d", path, rc);
        *decoded += rc == 0;
        /* and truncated, and with one byte flipped: still the same answers */
        for (size_t cut = 1; cut < n && cut < 4096; cut += 1 + cut / 4)
            assert_decoders_agree(data, cut, NULL);
        for (size_t k = 0; k < n; k += 1 + n / 64) {
            data[k] ^= 0x5a;
            assert_decoders_agree(data, n, NULL);
            data[k] ^= 0x5a;
        }
        free(data);
        files++;
    }
    closedir(d);
    return files;
}

static void test_decoders_agree_testdata(void **state)
{
    (void)state;
    int decoded = 0;
    int files = agree_tree(ps_test_testdata(), &decoded);
    /* tests/testdata: its 63 fixtures, README.md, SHA256SUMS and the generator's make.sh, capture.py
     * and promjson.py, and store-v6's data.mdb.gz, answers.json and make.py; decoded: the 17 pprof
     * files and the 5 bodies of @pyroscope/nodejs 0.6.4 (raw gzip'd pprof; the Go SDK's multipart
     * bodies, the Python SDK's PushRequest, the perf script capture and the data directory are not
     * pprof) */
    assert_int_equal(files, 71);
    assert_int_equal(decoded, 22);
}

/* A profile of one sample type (strings "", "s", "c") to append fields to. */
static void base_profile(ps_buf_t *b)
{
    ps_buf_t m = PS_BUF_INIT;
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(b, 1, &m);
    pw_bytes(b, 6, "", 0), pw_bytes(b, 6, "s", 1), pw_bytes(b, 6, "c", 1);
}

/* Decodes b with both decoders (which must agree); the direct decoder's result in *p. */
static int both(const ps_buf_t *b, ps_arena_t *a, ps_profile_t *p, ps_err_t *err)
{
    int rc = decoders_agree(b->data, b->len, NULL);
    ps_err_clear(err);
    assert_int_equal(ps_pprof_decode(b->data, b->len, NULL, a, p, err), rc);
    return rc;
}

#define RAW(b, ...)                                      \
    do {                                                 \
        static const uint8_t r_[] = {__VA_ARGS__};       \
        ps_buf_append((b), r_, sizeof(r_));              \
    } while (0)

/* What protobuf-c 1.4 accepts and refuses, and how it reads what it accepts: the direct decoder
 * does the same (each case checked against the reference and against the known answer). */
static void test_wire_quirks(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_buf_t b = PS_BUF_INIT;

    /* field number 0 in a flat message: "80 00" (two bytes) is an unknown field, "00" is refused */
    base_profile(&b);
    RAW(&b, 0x1a, 0x09, 0x80, 0x00, 0x05, 0x08, 0x07, 0x10, 0x01, 0x28); /* mapping {?, id 7, ?, filename 1} */
    RAW(&b, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.nmappings, 1);
    assert_int_equal(p.mappings[0].memory_start, 1);
    assert_int_equal(p.mappings[0].filename, 1);
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x0a, 0x04, 0x00, 0x05, 0x08, 0x01); /* sample_type {field 0, type 1} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf: sample_type[1]: field 0 is not a valid field number "
                                 "(at byte 16)");

    /* tags: 5 bytes fine, 6 refused (the wire scan takes 10) */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0xc8, 0x80, 0x80, 0x80, 0x00, 0x05); /* time_nanos 5, tag in 5 bytes */
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.time_nanos, 5);
    RAW(&b, 0xc8, 0x80, 0x80, 0x80, 0x80, 0x00, 0x06);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf");

    /* a length prefix in 6 bytes: refused */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x32, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 'x');
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf");

    /* varints in flat messages: 10 bytes with bits past 64 (dropped), 11 bytes (refused) */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x2a, 0x0d, 0x08, 0x01, 0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x7f);
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.functions[0].start_line, INT64_MIN);
    RAW(&b, 0x2a, 0x0e, 0x08, 0x02, 0x28, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    /* (the deep scan, stricter than protobuf-c, stops at the first function's varint) */
    assert_string_equal(err.msg, "not a valid pprof protobuf: function[0]: field 5 has a truncated or overlong "
                                 "varint (at byte 18)");

    /* bools take any wire type: true if any byte of the value, a LEN prefix included, is nonzero */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x1a, 0x17, 0x08, 0x01,                  /* mapping {id 1, */
        0x3a, 0x01, 0x00,                            /*  has_functions: LEN "00" -> true (prefix 01) */
        0x45, 0x00, 0x00, 0x00, 0x00,                /*  has_filenames: fixed32 0 -> false */
        0x48, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x02, /* has_line_numbers: 2^64 -> true */
        0x52, 0x00);                                 /*  has_inline_frames: LEN "" -> false } */
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.mappings[0].flags, PS_MAP_HAS_FUNCTIONS | PS_MAP_HAS_LINE_NUMBERS);

    /* a singular message twice: the last one wins whole (protobuf-c's merge keeps nothing of the
     * first for proto3 scalars) -- but both must be well-formed */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x5a, 0x04, 0x08, 0x01, 0x10, 0x02, 0x5a, 0x02, 0x08, 0x02);
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.period_type.type, 2);
    assert_int_equal(p.period_type.unit, 0);
    RAW(&b, 0x5a, 0x00);
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.period_type.type, 0);
    RAW(&b, 0x5a, 0x01, 0x08, 0x5a, 0x02, 0x08, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf: period_type: field 1 has a truncated or overlong "
                                 "varint (at byte 28)");
    /* singular scalars repeated: the last wins, inside messages too */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x60, 0x05, 0x60, 0x07);                         /* period 5, period 7 */
    RAW(&b, 0x22, 0x04, 0x08, 0x09, 0x08, 0x03);             /* location {id 9, id 3} */
    RAW(&b, 0x12, 0x04, 0x08, 0x03, 0x10, 0x01);             /* sample {location_id 3, value 1} */
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.period, 7);
    assert_int_equal(p.samples[0].locs[0], 1);

    /* repeated varints packed and not, mixed; a packed element of 11 bytes is refused */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x22, 0x02, 0x08, 0x01, 0x22, 0x02, 0x08, 0x02);
    RAW(&b, 0x12, 0x0b, 0x0a, 0x01, 0x01, 0x08, 0x02, 0x0a, 0x02, 0x01, 0x02, 0x10, 0x2a);
    RAW(&b, 0x68, 0x01, 0x6a, 0x02, 0x02, 0x00);             /* comment 1, comments [2, 0] */
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.samples[0].nlocs, 4);
    assert_int_equal(p.samples[0].locs[0], 1);
    assert_int_equal(p.samples[0].locs[1], 2);
    assert_int_equal(p.samples[0].locs[2], 1);
    assert_int_equal(p.samples[0].locs[3], 2);
    assert_int_equal(p.samples[0].values[0], 42);
    assert_int_equal(p.ncomments, 3);
    assert_int_equal(p.comments[1], 2);
    RAW(&b, 0x12, 0x0f, 0x10, 0x01, 0x0a, 0x0b, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf");

    /* negative int64 values (10-byte varints), packed */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x12, 0x0c, 0x12, 0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.samples[0].values[0], -1);

    /* a wrong wire type in a flat message is refused; in a location, the scan says so */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x2a, 0x04, 0x08, 0x01, 0x12, 0x00); /* function {id 1, name: LEN} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf: function[0]: field 2 has wire type 2, expected 0 "
                                 "(at byte 18)");
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x22, 0x04, 0x08, 0x01, 0x2a, 0x00); /* location {id 1, is_folded: LEN} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf: location[0]: field 5 has wire type 2, expected 0 "
                                 "(at byte 18)");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* Several checks fail: the answer is the first conversion would meet, whatever the wire order. */
static void test_first_error(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_buf_t b = PS_BUF_INIT;

    /* a mapping's bad string before a sample type's on the wire: the sample type's is first */
    base_profile(&b);
    RAW(&b, 0x1a, 0x04, 0x08, 0x01, 0x28, 0x63);             /* mapping {id 1, filename 99} */
    RAW(&b, 0x0a, 0x02, 0x10, 0x62);                         /* sample_type {unit 98} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "sample_type[1].unit: string index 98 out of range (string_table has 3 entries)");
    /* ... after a bad period type and a bad comment, which come earlier in conversion's order */
    RAW(&b, 0x5a, 0x02, 0x08, 0x50);                         /* period_type {type 80} */
    RAW(&b, 0x68, 0x46);                                     /* comment 70 */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "sample_type[1].unit: string index 98 out of range (string_table has 3 entries)");

    /* a label's bad string before an undefined location, and a sample with the wrong number of
     * values after both: the count comes first, then the location */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x12, 0x08, 0x1a, 0x02, 0x08, 0x09, 0x08, 0x05, 0x10, 0x01); /* sample {label {key 9}, loc 5, v 1} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "sample[0]: location_id 5 is not defined");
    RAW(&b, 0x12, 0x00);                                     /* sample {} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "sample[1] has 0 values but there are 1 sample types");

    /* a location: a line's undefined function before its undefined mapping on the wire */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x22, 0x08, 0x08, 0x01, 0x22, 0x02, 0x08, 0x04, 0x10, 0x06); /* loc {id 1, line {fn 4}, mapping 6} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "location[0]: mapping_id 6 is not defined");
    /* ... and a duplicate location id after it: the duplicate first */
    RAW(&b, 0x22, 0x02, 0x08, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "location[1]: id 1 is already used by location[0]");
    /* ... and a function with id 0 before everything: that first */
    RAW(&b, 0x2a, 0x02, 0x10, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "function[0]: id 0 is not allowed (ids must be nonzero)");

    /* duplicates among large ids (the sorted lookup): the smallest duplicated id is reported */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x2a, 0x06, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10); /* function {id 2^32} */
    RAW(&b, 0x2a, 0x02, 0x08, 0x07);                         /* function {id 7} */
    RAW(&b, 0x2a, 0x06, 0x08, 0x80, 0x80, 0x80, 0x80, 0x10); /* function {id 2^32} */
    RAW(&b, 0x2a, 0x02, 0x08, 0x07);                         /* function {id 7} */
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "function[3]: id 7 is already used by function[1]");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* ---- the one walk (steps 2 and 3 together) ---------------------------------------------------- */

/* A profile of n samples (stack i % 40 + 1 deep, values i and -i: ten-byte varints, labels i % 4),
 * n locations of 1 + i % 3 lines, n functions, GROW_NMAP(n) mappings, max(n, 16) + 1 strings and n / 2
 * comments (one varint each); ids 1..n in order unless order is 1 (locations from n down to 1) or
 * 2 (locations 1000 * (i + 1): the sorted map). A sample's location k is location (7i + k) % n. */
#define GROW_NMAP(n) ((n) / 3 + 1 < 1000 ? (n) / 3 + 1 : 1000)
static void grow_profile(ps_buf_t *b, uint32_t n, int order)
{
    ps_buf_t m = PS_BUF_INIT, v = PS_BUF_INIT, l = PS_BUF_INIT;
    uint32_t nmap = GROW_NMAP(n);
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(b, 1, &m);
    pw_varint(&m, 1, 3), pw_varint(&m, 2, 4), pw_msg(b, 1, &m);
    for (uint32_t i = 0; i < n; i++) {
        for (uint32_t k = 0; k < i % 40 + 1; k++) {
            uint32_t li = (7 * i + k) % n;
            ps_put_uvarint(&v, order == 0 ? li + 1 : order == 1 ? n - li : 1000 * ((uint64_t)li + 1));
        }
        pw_msg(&m, 1, &v);
        ps_put_uvarint(&v, i), ps_put_uvarint(&v, (uint64_t)-(int64_t)i), pw_msg(&m, 2, &v);
        for (uint32_t k = 0; k < i % 4; k++)
            pw_varint(&l, 1, 5), pw_varint(&l, 2, 6 + k), pw_msg(&m, 3, &l);
        pw_msg(b, 2, &m);
    }
    for (uint32_t i = 0; i < nmap; i++)
        pw_varint(&m, 1, i + 1), pw_varint(&m, 5, i % n + 1), pw_varint(&m, 7, 1), pw_msg(b, 3, &m);
    for (uint32_t i = 0; i < n; i++) {
        pw_varint(&m, 1, order == 0 ? i + 1 : order == 1 ? n - i : 1000 * ((uint64_t)i + 1));
        pw_varint(&m, 2, i % nmap + 1);
        pw_varint(&m, 3, 0x400000 + 16 * (uint64_t)i);
        for (uint32_t k = 0; k < 1 + i % 3; k++)
            pw_varint(&l, 1, (i + k) % n + 1), pw_varint(&l, 2, i + k), pw_msg(&m, 4, &l);
        pw_msg(b, 4, &m);
    }
    for (uint32_t i = 0; i < n; i++)
        pw_varint(&m, 1, i + 1), pw_varint(&m, 2, i + 1), pw_varint(&m, 4, i % 7 + 1), pw_msg(b, 5, &m);
    pw_bytes(b, 6, "", 0);
    for (uint32_t i = 1; i <= (n < 16 ? 16 : n); i++) {
        char s[16];
        int k = snprintf(s, sizeof(s), "s%u", i);
        pw_bytes(b, 6, s, (size_t)k);
    }
    for (uint32_t i = 0; i < n / 2; i++)
        pw_varint(b, 13, i % n);
}

/* The arrays the walk grows (from 64 elements, doubling) past each step, up to 70,000 samples
 * (more than the scratch a thread keeps): every value where it belongs, as the reference has it. */
static void test_one_walk_grows(void **state)
{
    (void)state;
    static const uint32_t sizes[] = {1, 63, 64, 65, 129, 1000, 70000, 3};
    for (size_t si = 0; si < sizeof(sizes) / sizeof(sizes[0]); si++) {
        for (int order = 0; order < 3; order++) {
            uint32_t n = sizes[si];
            ps_buf_t b = PS_BUF_INIT;
            ps_arena_t a = PS_ARENA_INIT;
            ps_profile_t p;
            ps_err_t err;
            grow_profile(&b, n, order);
            if (both(&b, &a, &p, &err) != 0)
                fail_msg("%u samples, order %d: %s", n, order, err.msg);
            assert_int_equal(p.nsamples, n);
            assert_int_equal(p.nlocations, n);
            assert_int_equal(p.nfunctions, n);
            assert_int_equal(p.nmappings, GROW_NMAP(n));
            assert_int_equal(p.nstrings, (n < 16 ? 16 : n) + 1);
            assert_int_equal(p.ncomments, n / 2);
            for (uint32_t i = 0; i < n; i += (n > 1000 ? 997 : 1)) {
                const ps_sample_t *s = &p.samples[i];
                assert_int_equal(s->nlocs, i % 40 + 1);
                for (uint32_t k = 0; k < s->nlocs; k++) /* location (7i + k) % n, whatever its id */
                    assert_int_equal(s->locs[k], (7 * i + k) % n + 1);
                assert_int_equal(s->values[0], (int64_t)i);
                assert_int_equal(s->values[1], -(int64_t)i);
                assert_int_equal(s->nlabels, i % 4);
                for (uint32_t k = 0; k < s->nlabels; k++)
                    assert_true(s->labels[k].key == 5 && s->labels[k].str == 6 + k);
                const ps_location_t *l = &p.locations[i];
                assert_int_equal(l->nlines, 1 + i % 3);
                assert_int_equal(l->mapping, i % GROW_NMAP(n) + 1);
                assert_int_equal(l->address, 0x400000 + 16 * (uint64_t)i);
                for (uint32_t k = 0; k < l->nlines; k++)
                    assert_true(l->lines[k].function == (i + k) % n + 1 && l->lines[k].line == (int64_t)(i + k));
                assert_int_equal(p.functions[i].name, i + 1);
                assert_int_equal(p.strings[i + 1].len, (uint32_t)snprintf(NULL, 0, "s%u", i + 1));
            }
            assert_int_equal(p.mappings[0].flags, PS_MAP_HAS_FUNCTIONS);
            if (n == 1000 && order == 0) { /* one location id past the last, then 0: each not defined */
                ps_buf_t m = PS_BUF_INIT;
                pw_varint(&m, 1, n + 1), pw_varint(&m, 2, 1), pw_varint(&m, 2, 2), pw_msg(&b, 2, &m);
                assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
                assert_string_equal(err.msg, "sample[1000]: location_id 1001 is not defined");
                pw_varint(&m, 1, 0), pw_varint(&m, 2, 1), pw_varint(&m, 2, 2), pw_msg(&b, 2, &m);
                pw_varint(&m, 1, 3), pw_varint(&m, 1, 0), pw_varint(&m, 2, 1), pw_varint(&m, 2, 2), pw_msg(&b, 2, &m);
                assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
                assert_string_equal(err.msg, "sample[1000]: location_id 1001 is not defined");
                ps_buf_reset(&b);
                grow_profile(&b, n, order);
                pw_varint(&m, 1, 3), pw_varint(&m, 1, 0), pw_varint(&m, 2, 1), pw_varint(&m, 2, 2), pw_msg(&b, 2, &m);
                assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
                assert_string_equal(err.msg, "sample[1000]: location_id 0 is not defined");
            }
            ps_arena_dispose(&a);
            ps_buf_dispose(&b);
        }
    }
}

/* Packed runs whose bytes are more than their varints (the walk's room for them is the bytes,
 * unless that passes a limit: then the varints counted): the limits hold at the count. */
static void test_one_walk_counts(void **state)
{
    (void)state;
    ps_pprof_limits_t lim;
    ps_buf_t b = PS_BUF_INIT, m = PS_BUF_INIT, v = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;

    ps_pprof_limits_default(&lim);
    lim.max_stack_depth = 3;
    base_profile(&b);
    ps_put_uvarint(&v, 300), ps_put_uvarint(&v, 301), pw_msg(&m, 1, &v); /* 4 bytes, 2 ids */
    pw_varint(&m, 1, 302);                                                  /* a third */
    pw_varint(&m, 2, 7);
    pw_msg(&b, 2, &m);
    expect_error(b.data, b.len, &lim, PS_EINVAL, "sample[0]: location_id 300 is not defined");
    ps_buf_reset(&b);
    base_profile(&b);
    ps_put_uvarint(&v, 300), ps_put_uvarint(&v, 301), pw_msg(&m, 1, &v);
    ps_put_uvarint(&v, 302), ps_put_uvarint(&v, 303), pw_msg(&m, 1, &v); /* a fourth */
    pw_varint(&m, 2, 7);
    pw_msg(&b, 2, &m);
    expect_error(b.data, b.len, &lim, PS_ETOOBIG, "sample[0] has more than 3 locations (max_stack_depth)");

    /* values: one sample type, one two-byte value; two of them */
    ps_pprof_limits_default(&lim);
    lim.max_sample_types = 1;
    ps_buf_reset(&b);
    base_profile(&b);
    ps_put_uvarint(&v, 300), pw_msg(&m, 2, &v);
    pw_msg(&b, 2, &m);
    decode_or_fail(b.data, b.len, &lim, &a, &p);
    assert_int_equal(p.samples[0].values[0], 300);
    ps_put_uvarint(&v, 300), ps_put_uvarint(&v, 301), pw_msg(&m, 2, &v);
    pw_msg(&b, 2, &m);
    expect_error(b.data, b.len, &lim, PS_EINVAL, "sample[1] has 2 values but there are 1 sample types");

    /* comments, bounded by max_strings (3 here): three of two bytes each, then a fourth */
    ps_pprof_limits_default(&lim);
    lim.max_strings = 3;
    ps_buf_reset(&b);
    base_profile(&b);
    ps_put_uvarint(&v, 200), ps_put_uvarint(&v, 201), ps_put_uvarint(&v, 2), pw_msg(&b, 13, &v);
    expect_error(b.data, b.len, &lim, PS_EINVAL, "comment[0]: string index 200 out of range (string_table has 3 entries)");
    pw_varint(&b, 13, 1);
    expect_error(b.data, b.len, &lim, PS_ETOOBIG, "profile has more than 3 comments (max_strings)");

    /* a packed run that ends inside a varint, one with a varint of 11 bytes (protobuf-c refuses it,
     * the scan does not look): the scan's words, the deep scan's */
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x12, 0x04, 0x12, 0x02, 0x01, 0x80);
    expect_error(b.data, b.len, NULL, PS_EINVAL,
                 "not a valid pprof protobuf: sample[0]: field 2 ends in a truncated packed varint (at byte 16)");
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x12, 0x0d, 0x12, 0x0b, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not a valid pprof protobuf");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* Where the walk stops at what protobuf-c refuses, a problem of the scan's later on the wire is
 * still the answer (the scan looks at the whole message first, as before); a problem past a
 * thousand good samples and locations too. */
static void test_one_walk_first_error(void **state)
{
    (void)state;
    ps_buf_t b = PS_BUF_INIT;
    base_profile(&b);
    RAW(&b, 0x1a, 0x02, 0x0a, 0x00);       /* mapping {field 1 as bytes}: protobuf-c refuses it */
    pw_bytes(&b, 6, "a\0b", 3);             /* string_table[3] with a NUL */
    expect_error(b.data, b.len, NULL, PS_EINVAL, "string_table[3] contains a NUL byte");
    ps_buf_reset(&b);
    base_profile(&b);
    RAW(&b, 0x1a, 0x02, 0x0a, 0x00);
    expect_error(b.data, b.len, NULL, PS_EINVAL,
                 "not a valid pprof protobuf: mapping[0]: field 1 has wire type 2, expected 0 (at byte 16)");
    ps_buf_reset(&b);
    grow_profile(&b, 1000, 0);
    pw_bytes(&b, 6, "\xff", 1);
    expect_error(b.data, b.len, NULL, PS_EINVAL, "string_table[1001] is not valid UTF-8");
    ps_buf_reset(&b);
    grow_profile(&b, 1000, 0);
    pw_bytes(&b, 1, "", 0);                 /* a third sample type: every sample has 2 values */
    expect_error(b.data, b.len, NULL, PS_EINVAL, "sample[0] has 2 values but there are 3 sample types");
    ps_buf_dispose(&b);
}

/* The string_table copied at once where its fields follow each other (a 3-byte length among
 * them), one by one where another field comes between: each string NUL-terminated either way. */
static void test_one_walk_strings(void **state)
{
    (void)state;
    ps_buf_t b = PS_BUF_INIT, m = PS_BUF_INIT;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    char *big = malloc(20000);
    memset(big, 'x', 20000);
    for (int apart = 0; apart < 2; apart++) {
        ps_buf_reset(&b);
        base_profile(&b);
        if (apart)
            pw_varint(&m, 1, 1), pw_varint(&m, 2, 3), pw_msg(&b, 5, &m); /* function {id 1, name 3} */
        pw_bytes(&b, 6, "main", 4);
        pw_bytes(&b, 6, big, 20000);
        pw_bytes(&b, 6, "", 0);
        pw_bytes(&b, 6, "z", 1);
        assert_int_equal(both(&b, &a, &p, &err), 0);
        assert_int_equal(p.nstrings, 7);
        assert_true(str_eq(&p, 3, "main") && str_eq(&p, 5, "") && str_eq(&p, 6, "z"));
        assert_int_equal(p.strings[4].len, 20000);
        assert_memory_equal(p.strings[4].ptr, big, 20000);
        for (uint32_t i = 0; i < p.nstrings; i++)
            assert_int_equal(p.strings[i].ptr[p.strings[i].len], '\0');
        assert_int_equal(p.nfunctions, (uint32_t)apart);
        ps_arena_dispose(&a);
    }
    free(big);
    ps_buf_dispose(&b);
}

/* Each thread keeps its own scratch: threads decoding at once each get their profile. */
typedef struct walk_job {
    const uint8_t *data;
    size_t n;
    uint64_t sum; /* of every location index and value, and the counts */
    int wrong;
} walk_job_t;

static uint64_t profile_sum(const ps_profile_t *p)
{
    uint64_t s = p->nsamples + 31 * (uint64_t)p->nlocations + 977 * (uint64_t)p->nstrings;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        for (uint32_t k = 0; k < p->samples[i].nlocs; k++)
            s = s * 31 + p->samples[i].locs[k];
        for (uint32_t k = 0; k < p->ntypes; k++)
            s = s * 31 + (uint64_t)p->samples[i].values[k];
    }
    for (uint32_t i = 0; i < p->nlocations; i++)
        for (uint32_t k = 0; k < p->locations[i].nlines; k++)
            s = s * 31 + p->locations[i].lines[k].function;
    return s;
}

static void *decode_many(void *arg)
{
    walk_job_t *j = arg;
    for (int i = 0; i < 200; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        ps_err_t err;
        if (ps_pprof_decode(j->data, j->n, NULL, &a, &p, &err) != 0 || profile_sum(&p) != j->sum)
            j->wrong++;
        ps_arena_dispose(&a);
    }
    return NULL;
}

static void test_one_walk_threads(void **state)
{
    (void)state;
    static const char *const fx[] = {"go/cpu-01.pb.gz", "go/heap-01.pb.gz", "node/cpu-01.pb.gz"};
    walk_job_t jobs[3];
    uint8_t *data[3];
    pthread_t th[3];
    for (int i = 0; i < 3; i++) {
        ps_arena_t a = PS_ARENA_INIT;
        ps_profile_t p;
        data[i] = ps_test_read_fixture(fx[i], &jobs[i].n);
        jobs[i].data = data[i];
        jobs[i].wrong = 0;
        decode_or_fail(data[i], jobs[i].n, NULL, &a, &p);
        jobs[i].sum = profile_sum(&p);
        ps_arena_dispose(&a);
    }
    assert_true(jobs[0].sum != jobs[1].sum && jobs[1].sum != jobs[2].sum);
    for (int i = 0; i < 3; i++)
        assert_int_equal(pthread_create(&th[i], NULL, decode_many, &jobs[i]), 0);
    for (int i = 0; i < 3; i++) {
        assert_int_equal(pthread_join(th[i], NULL), 0);
        assert_int_equal(jobs[i].wrong, 0);
    }
    for (int i = 0; i < 3; i++)
        free(data[i]);
}


/* ---- branch i27dc: the thread's inflate buffer, strings' last word, Go's labels and locations ---- */

/* ps_gunzip_temp inflates into one buffer a thread keeps (up to 256 KiB between calls): the same
 * bytes as ps_gunzip, the same memory from one call to the next, a new buffer when it must grow
 * (a member bigger than ISIZE said) and after one past 256 KiB; zlib's fallback into the arena. */
static void test_gunzip_temp(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    const uint8_t *raw, *o1, *o2;
    size_t nraw, n1, n2, ngz;
    ps_err_t err;
    uint8_t *gz = ps_test_read_fixture("go/cpu-01.pb.gz", &ngz);
    assert_int_equal(ps_gunzip_zlib(gz, ngz, 64u << 20, &a, &raw, &nraw, &err), 0);
    assert_int_equal(nraw, 24977);
    assert_int_equal(ps_gunzip_temp(gz, ngz, 64u << 20, &a, &o1, &n1, &err), 0);
    assert_int_equal(n1, nraw);
    assert_memory_equal(o1, raw, nraw);
    assert_true(o1 < raw || o1 >= raw + nraw);
    size_t used = a.used_total;
    ps_gunzip_temp_done();
    assert_int_equal(ps_gunzip_temp(gz, ngz, 64u << 20, &a, &o2, &n2, &err), 0);
    assert_ptr_equal(o2, o1); /* the thread's buffer again */
    assert_int_equal(a.used_total, used); /* nothing of it in the arena */
    assert_memory_equal(o2, raw, nraw);
    ps_gunzip_temp_done();

    /* 2 MiB of zeros in two members: ISIZE (the last's) says 1 MiB, the buffer grows; after the
     * call it is freed (past 256 KiB), and a small stream gets a new one */
    size_t zn = 1u << 20, g1n;
    uint8_t *zeros = calloc(1, zn), *g1 = gzip_bytes(zeros, zn, &g1n);
    ps_buf_t two = PS_BUF_INIT;
    ps_buf_append(&two, g1, g1n);
    ps_buf_append(&two, g1, g1n);
    assert_int_equal(ps_gunzip_temp(two.data, two.len, 64u << 20, &a, &o1, &n1, &err), 0);
    assert_int_equal(n1, 2 * zn);
    for (size_t i = 0; i < n1; i++)
        if (o1[i] != 0)
            fail_msg("byte %zu is %u", i, o1[i]);
    assert_int_equal(ps_inflate_budget_reserved(), 0);
    const uint8_t *big = o1;
    ps_gunzip_temp_done(); /* frees the 2 MiB (a mapping of its own) */
    assert_int_equal(ps_gunzip_temp(gz, ngz, 64u << 20, &a, &o2, &n2, &err), 0);
    assert_ptr_not_equal(o2, big); /* from malloc's heap */
    assert_memory_equal(o2, raw, nraw);
    /* over the limit, as ps_gunzip words it */
    assert_int_equal(ps_gunzip_temp(two.data, two.len, zn + 5, &a, &o1, &n1, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "decompressed body exceeds 1048581 bytes");
    assert_int_equal(ps_inflate_budget_reserved(), 0);
    ps_gunzip_temp_done();

    /* a member with a header CRC goes to zlib: its output is the arena's */
    ps_buf_t hc = PS_BUF_INIT;
    gzip_member(&hc, "hello", 5, 0x02, true);
    used = a.used_total;
    assert_int_equal(ps_gunzip_temp(hc.data, hc.len, 100, &a, &o1, &n1, &err), 0);
    assert_int_equal(n1, 5);
    assert_memory_equal(o1, "hello", 5);
    assert_true(a.used_total > used);
    ps_gunzip_temp_done();

    free(zeros), free(g1), free(gz);
    ps_buf_dispose(&two), ps_buf_dispose(&hc);
    ps_arena_dispose(&a);
}

/* Strings are checked 8 bytes at a time, the last 1-7 in the word that ends the string: a NUL,
 * a byte that is not UTF-8, or a valid 2-byte character at every offset of strings of 1 to 40
 * bytes, each decoded by both decoders (errors word for word) with the expected answer. */
static void test_string_every_offset(void **state)
{
    (void)state;
    static const struct {
        uint8_t b[2];
        size_t n;
        int code;
        const char *msg;
    } bad[] = {
        {{0x00}, 1, PS_EINVAL, "string_table[3] contains a NUL byte"},
        {{0x80}, 1, PS_EINVAL, "string_table[3] is not valid UTF-8"},
        {{0xff}, 1, PS_EINVAL, "string_table[3] is not valid UTF-8"},
        {{0xc3, 0xa9}, 2, 0, NULL}, /* é */
        {{0x7f}, 1, 0, NULL},
    };
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    char s[48];
    for (size_t n = 1; n <= 40; n++) {
        for (size_t k = 0; k < n; k++) {
            for (size_t j = 0; j < sizeof(bad) / sizeof(bad[0]); j++) {
                if (k + bad[j].n > n)
                    continue;
                memset(s, 'a', n);
                memcpy(s + k, bad[j].b, bad[j].n);
                ps_buf_t b = PS_BUF_INIT;
                base_profile(&b);
                pw_bytes(&b, 6, s, n);
                int rc = both(&b, &a, &p, &err);
                if (rc != bad[j].code)
                    fail_msg("%zu bytes, byte %02x at %zu: %d \"%s\"", n, bad[j].b[0], k, rc, err.msg);
                if (rc != 0) {
                    assert_string_equal(err.msg, bad[j].msg);
                } else {
                    assert_int_equal(p.nstrings, 4);
                    assert_int_equal(p.strings[3].len, n);
                    assert_memory_equal(p.strings[3].ptr, s, n);
                }
                ps_buf_dispose(&b);
                ps_arena_reset(&a);
            }
        }
    }
    /* a NUL after a non-ASCII byte in the last word: the NUL is the answer (the first question) */
    ps_buf_t b = PS_BUF_INIT;
    base_profile(&b);
    pw_bytes(&b, 6, "abcdefghij\xc3\xa9k\0", 14);
    assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "string_table[3] contains a NUL byte");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* A sample of base_profile's one type, value 5, with the given label bytes (field 3). */
static void sample_with_labels(ps_buf_t *b, const uint8_t *lab, size_t n)
{
    ps_buf_t m = PS_BUF_INIT;
    pw_varint(&m, 2, 5);
    ps_buf_append(&m, lab, n);
    pw_msg(b, 2, &m);
}

/* The profile of one such sample, decoded by both decoders alike into *p (from a). */
static void decode_labels(ps_arena_t *a, ps_profile_t *p, const uint8_t *lab, size_t n)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    base_profile(&b);
    sample_with_labels(&b, lab, n);
    if (both(&b, a, p, &err) != 0)
        fail_msg("%s", err.msg);
    ps_buf_dispose(&b);
}

/* Go's label {key, str} of one-byte indexes (1a 04 08 kk 10 ss) is read without the field reader:
 * the same labels as the reference decoder's, and every near miss (a two-byte index, other
 * fields, another order, a length that is not 4, a label cut short, more than max_labels) read
 * the usual way, with the same answers. */
static void test_go_labels(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_buf_t b = PS_BUF_INIT;

    static const uint8_t two[] = {0x1a, 4, 0x08, 1, 0x10, 2, 0x1a, 4, 0x08, 2, 0x10, 1};
    decode_labels(&a, &p, two, sizeof(two));
    assert_int_equal(p.nsamples, 1);
    assert_int_equal(p.samples[0].nlabels, 2);
    assert_int_equal(p.samples[0].labels[0].key, 1);
    assert_int_equal(p.samples[0].labels[0].str, 2);
    assert_int_equal(p.samples[0].labels[0].num, 0);
    assert_int_equal(p.samples[0].labels[1].key, 2);
    assert_int_equal(p.samples[0].labels[1].str, 1);
    assert_int_equal(p.samples[0].values[0], 5);
    ps_arena_reset(&a);

    static const struct {
        uint8_t lab[12];
        size_t n;
        int code;
        const char *msg;
    } cases[] = {
        {{0x1a, 4, 0x08, 0x7f, 0x10, 1}, 6, PS_EINVAL,
         "sample[0].label[0].key: string index 127 out of range (string_table has 3 entries)"},
        {{0x1a, 4, 0x08, 1, 0x10, 0x7f}, 6, PS_EINVAL,
         "sample[0].label[0].str: string index 127 out of range (string_table has 3 entries)"},
        {{0x1a, 5, 0x08, 0x81, 0x00, 0x10, 1}, 7, 0, NULL},           /* key 1 in two bytes */
        {{0x1a, 4, 0x08, 0x81, 0x10, 1}, 6, 0, NULL},                 /* key 0x81 0x10 = 2049, then 01: refused */
        {{0x1a, 4, 0x10, 2, 0x08, 1}, 6, 0, NULL},                    /* str first */
        {{0x1a, 4, 0x08, 1, 0x18, 2}, 6, 0, NULL},                    /* num, not str */
        {{0x1a, 4, 0x08, 1, 0x20, 2}, 6, 0, NULL},                    /* num_unit 2 */
        {{0x1a, 6, 0x08, 1, 0x10, 2, 0x18, 9}, 8, 0, NULL},           /* and a num */
        {{0x1a, 2, 0x08, 1}, 4, 0, NULL},                             /* a key alone */
        {{0x1a, 4, 0x08, 1, 0x10}, 5, PS_EINVAL, NULL},               /* cut short */
        {{0x1a, 4, 0x08, 1, 0x12, 2}, 6, PS_EINVAL, NULL},            /* str as bytes */
        {{0x1a, 4, 0x08, 1, 0x10, 2, 0x1a}, 7, PS_EINVAL, NULL},      /* a next label's tag alone */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        base_profile(&b);
        sample_with_labels(&b, cases[i].lab, cases[i].n);
        int rc = both(&b, &a, &p, &err);
        if (i == 3) { /* 08 81 10 is key 2049: out of range */
            assert_int_equal(rc, PS_EINVAL);
        } else if (cases[i].code == 0) {
            if (rc != 0)
                fail_msg("case %zu: %d \"%s\"", i, rc, err.msg);
        } else {
            assert_int_equal(rc, cases[i].code);
            if (cases[i].msg != NULL)
                assert_string_equal(err.msg, cases[i].msg);
        }
        ps_buf_dispose(&b);
        ps_arena_reset(&a);
    }
    /* the values each case above decodes to, where it decodes */
    decode_labels(&a, &p, cases[2].lab, cases[2].n);
    assert_int_equal(p.samples[0].labels[0].key, 1);
    assert_int_equal(p.samples[0].labels[0].str, 1);
    ps_arena_reset(&a);
    decode_labels(&a, &p, cases[7].lab, cases[7].n);
    assert_int_equal(p.samples[0].labels[0].str, 2);
    assert_int_equal(p.samples[0].labels[0].num, 9);
    ps_arena_reset(&a);

    /* max_labels counts the labels read without the field reader too */
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_labels = 2;
    static const uint8_t three[] = {0x1a, 4, 0x08, 1, 0x10, 2, 0x1a, 4, 0x08, 2, 0x10, 1, 0x1a, 4, 0x08, 1, 0x10, 1};
    base_profile(&b);
    sample_with_labels(&b, three, sizeof(three));
    assert_int_equal(decoders_agree(b.data, b.len, &lim), PS_ETOOBIG);
    ps_err_clear(&err);
    assert_int_equal(ps_pprof_decode(b.data, b.len, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "sample[0] has more than 2 labels (max_labels)");
    ps_arena_reset(&a);
    /* the sample's length one label past the end */
    assert_int_equal(ps_pprof_decode(b.data, b.len - 6, &lim, &a, &p, &err), PS_EINVAL);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* A location with mapping 1 and function 1 defined (base_profile plus both), its bytes given. */
static void location_profile(ps_buf_t *b, const uint8_t *loc, size_t n)
{
    ps_buf_t m = PS_BUF_INIT;
    base_profile(b);
    pw_varint(&m, 1, 1), pw_varint(&m, 5, 1), pw_msg(b, 3, &m); /* mapping 1, filename "s" */
    pw_varint(&m, 1, 1), pw_varint(&m, 2, 2), pw_msg(b, 5, &m); /* function 1, name "c" */
    pw_bytes(b, 4, loc, n);
}

/* Go's location (id, mapping_id, address, then its lines) is read in that order without the
 * field loop, and lines, locations and samples of fewer than 128 bytes without the field reader:
 * the same locations as the reference decoder's for Go's order and every other (repeated fields:
 * the last wins), ids of 1 to 10 bytes, cut short, lines of every length from 0 to 127 (their
 * locations 4 to 131 bytes) and one past the end. */
static void test_go_locations(void **state)
{
    (void)state;
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    ps_buf_t b = PS_BUF_INIT;

    /* pprof's order, then the Go runtime's (the mapping last) */
    static const uint8_t pprof_order[] = {0x08, 1, 0x10, 1, 0x18, 0xc0, 0xa5, 0x9a, 0x02, 0x22, 4, 0x08, 1, 0x10, 42};
    static const uint8_t go_order[] = {0x08, 1, 0x18, 0xc0, 0xa5, 0x9a, 0x02, 0x22, 4, 0x08, 1, 0x10, 42, 0x10, 1};
    for (int k = 0; k < 2; k++) {
        location_profile(&b, k == 0 ? pprof_order : go_order, k == 0 ? sizeof(pprof_order) : sizeof(go_order));
        assert_int_equal(both(&b, &a, &p, &err), 0);
        assert_int_equal(p.nlocations, 1);
        assert_int_equal(p.locations[0].mapping, 1);
        assert_int_equal(p.locations[0].address, 0x4692c0);
        assert_int_equal(p.locations[0].nlines, 1);
        assert_int_equal(p.locations[0].lines[0].function, 1);
        assert_int_equal(p.locations[0].lines[0].line, 42);
        ps_buf_dispose(&b);
        ps_arena_reset(&a);
    }

    static const struct {
        uint8_t loc[24];
        size_t n;
        uint64_t address; /* when it decodes */
    } cases[] = {
        {{0x08, 1, 0x10, 1, 0x18, 5, 0x18, 7}, 8, 7},                 /* address twice: the last */
        {{0x08, 1, 0x10, 1, 0x18, 5, 0x08, 1, 0x18, 6}, 10, 6},       /* id again, after */
        {{0x10, 1, 0x08, 1, 0x18, 3}, 6, 3},                           /* mapping first */
        {{0x18, 3, 0x10, 1, 0x08, 1}, 6, 3},                           /* reversed */
        {{0x08, 1, 0x18, 3}, 4, 3},                                    /* no mapping */
        /* a mapping of 10 bytes last */
        {{0x08, 1, 0x18, 3, 0x10, 1, 0x10, 0x81, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x00}, 16, 3},
        {{0x08, 1, 0x18, 3, 0x22, 2, 0x08, 1, 0x10, 1, 0x18, 4}, 12, 4}, /* Go's order, an address again */
        {{0x08, 1, 0x10, 1}, 4, 0},                                    /* no address */
        {{0x08, 1}, 2, 0},
        {{0x08, 0x81, 0x80, 0x80, 0x80, 0x00, 0x10, 1, 0x18, 4}, 10, 4}, /* id 1 in 5 bytes */
        {{0x08, 0x81, 0x80, 0x80, 0x80, 0x80, 0x00, 0x10, 1, 0x18, 4}, 11, 4}, /* and in 6 */
        {{0x08, 1, 0x10, 1, 0x18, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}, 15, UINT64_MAX},
        {{0x08, 1, 0x10, 1, 0x18, 3, 0x28, 1}, 8, 3},                 /* is_folded */
        {{0x08, 1, 0x10, 1, 0x18, 3, 0x22, 0}, 8, 3},                 /* an empty line */
        {{0x08, 1, 0x10, 1, 0x18, 3, 0x22, 2, 0x10, 9, 0x22, 2, 0x08, 1}, 14, 3}, /* two lines */
        {{0x08, 1, 0x10, 1, 0x18, 3, 0x22, 0x82, 0x00, 0x10, 7}, 11, 3}, /* a line's length in two bytes */
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        location_profile(&b, cases[i].loc, cases[i].n);
        int rc = both(&b, &a, &p, &err);
        if (rc != 0)
            fail_msg("case %zu: %d \"%s\"", i, rc, err.msg);
        assert_int_equal(p.locations[0].address, cases[i].address);
        ps_buf_dispose(&b);
        ps_arena_reset(&a);
        /* each cut short by 1 to n - 1 bytes: the location's length says so (both decoders agree) */
        for (size_t cut = 1; cut < cases[i].n; cut++) {
            location_profile(&b, cases[i].loc, cases[i].n - cut);
            both(&b, &a, &p, &err);
            ps_buf_dispose(&b);
            ps_arena_reset(&a);
        }
    }
    /* a 5-byte id whose fifth byte goes on: a 6-byte varint, read by the loop */
    static const uint8_t id6[] = {0x08, 0x81, 0x80, 0x80, 0x80, 0x80, 0x01, 0x10, 1};
    location_profile(&b, id6, sizeof(id6));
    assert_int_equal(both(&b, &a, &p, &err), 0);
    assert_int_equal(p.locations[0].mapping, 1);
    ps_buf_dispose(&b);
    ps_arena_reset(&a);
    /* lines of 0 to 127 bytes (unknown field 9 filling the rest), and their length one past the end */
    uint8_t loc[160];
    for (size_t len = 0; len < 128; len++) {
        size_t n = 0;
        loc[n++] = 0x08, loc[n++] = 1, loc[n++] = 0x22, loc[n++] = (uint8_t)len;
        if (len >= 2)
            loc[n++] = 0x10, loc[n++] = (uint8_t)len; /* line = len */
        if (len >= 4) { /* unknown field 9 fills the rest */
            loc[n++] = 0x4a, loc[n++] = (uint8_t)(len - 4);
            memset(loc + n, 'x', len - 4);
            n += len - 4;
        } else if (len == 1 || len == 3) {
            loc[n++] = 0x4a; /* a tag cut short: refused */
        }
        location_profile(&b, loc, n);
        int rc = both(&b, &a, &p, &err);
        if (len == 1 || len == 3) {
            assert_int_equal(rc, PS_EINVAL);
        } else {
            if (rc != 0)
                fail_msg("a line of %zu bytes: %d \"%s\"", len, rc, err.msg);
            assert_int_equal(p.locations[0].nlines, 1);
            assert_int_equal(p.locations[0].lines[0].line, len >= 2 ? (int64_t)len : 0);
        }
        /* the profile cut by a byte: the location's length (4 to 131 bytes) one past its end */
        ps_arena_reset(&a);
        assert_int_equal(decoders_agree(b.data, b.len - 1, NULL), PS_EINVAL);
        ps_buf_dispose(&b);
        ps_arena_reset(&a);
        location_profile(&b, loc, n - 1); /* the line's length one past the location's end */
        assert_int_equal(both(&b, &a, &p, &err), PS_EINVAL);
        ps_buf_dispose(&b);
        ps_arena_reset(&a);
    }
    ps_arena_dispose(&a);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_limits_default),
        cmocka_unit_test(test_fixtures),
        cmocka_unit_test(test_all_fixture_files),
        cmocka_unit_test(test_go_cpu_facts),
        cmocka_unit_test(test_go_cpu_has_unpacked_values),
        cmocka_unit_test(test_gzip_and_raw_identical),
        cmocka_unit_test(test_roundtrip_fixtures),
        cmocka_unit_test(test_roundtrip_handmade),
        cmocka_unit_test(test_wire_example),
        cmocka_unit_test(test_wire_variants),
        cmocka_unit_test(test_sparse_ids),
        cmocka_unit_test(test_gzip_errors),
        cmocka_unit_test(test_gzip_concatenated),
        cmocka_unit_test(test_gzip_bomb),
        cmocka_unit_test(test_gunzip_libdeflate_as_zlib),
        cmocka_unit_test(test_gunzip_threads),
        cmocka_unit_test(test_inflate_budget),
        cmocka_unit_test(test_not_pprof),
        cmocka_unit_test(test_protobuf_garbage),
        cmocka_unit_test(test_bad_references),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_limits_exact),
        cmocka_unit_test(test_memory_bounded),
        cmocka_unit_test(test_decoders_agree_testdata),
        cmocka_unit_test(test_wire_quirks),
        cmocka_unit_test(test_first_error),
        cmocka_unit_test(test_one_walk_grows),
        cmocka_unit_test(test_one_walk_counts),
        cmocka_unit_test(test_one_walk_first_error),
        cmocka_unit_test(test_one_walk_strings),
        cmocka_unit_test(test_one_walk_threads),
        cmocka_unit_test(test_gunzip_temp),
        cmocka_unit_test(test_string_every_offset),
        cmocka_unit_test(test_go_labels),
        cmocka_unit_test(test_go_locations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
