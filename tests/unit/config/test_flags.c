/*
 * test_flags.c - the flag table (src/config/flags.c): docs/flags.md is what the table generates,
 * each default is the one its help names, parsing and its error messages, the status values.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "config/flags.h"

static char *slurp(const char *path, size_t *len)
{
    FILE *fp = fopen(path, "rb");
    if (fp == NULL)
        return NULL;
    ps_buf_t b = PS_BUF_INIT;
    char chunk[4096];
    size_t n;
    while ((n = fread(chunk, 1, sizeof(chunk), fp)) > 0)
        ps_buf_append(&b, chunk, n);
    fclose(fp);
    ps_buf_putc(&b, 0);
    *len = b.len - 1;
    return (char *)b.data;
}

/* docs/flags.md is generated: regenerate it with `build/profstore --help-markdown > docs/flags.md` */
static void test_docs_flags_md_is_generated(void **state)
{
    (void)state;
    size_t len = 0;
    char *doc = slurp(PS_SOURCE_DIR "/docs/flags.md", &len);
    assert_non_null(doc);
    ps_buf_t md = PS_BUF_INIT;
    ps_flags_markdown(&ps_profstore_flagset, &md);
    ps_buf_putc(&md, 0);
    if (len != md.len - 1 || memcmp(doc, md.data, len) != 0)
        fail_msg("docs/flags.md differs from the flag table: run build/profstore --help-markdown > docs/flags.md");
    free(doc);
    ps_buf_dispose(&md);
}

/* a doc and a def_note are written into docs/flags.md as they are: each must stay one table cell */
static void test_docs_are_one_cell(void **state)
{
    (void)state;
    const ps_flagset_t *fs = &ps_profstore_flagset;
    int docs = 0;
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        const char *texts[] = {fl->doc, fl->def_note};
        for (int t = 0; t < 2; t++)
            if (texts[t] != NULL && (strpbrk(texts[t], "|\n") != NULL || texts[t][0] == '\0'))
                fail_msg("--%s: %s is not one Markdown table cell: %s", fl->name, t ? "def_note" : "doc", texts[t]);
        if (fl->doc != NULL) {
            assert_non_null(fl->help); /* a hidden flag is not in docs/flags.md */
            docs++;
        }
        if (fl->def_note != NULL)
            assert_null(fl->def);
    }
    assert_int_equal(docs, 61);
}

/* a default in the table is the one its help text names ("default 32MiB", over a line break too) */
static void test_defaults_match_help(void **state)
{
    (void)state;
    const ps_flagset_t *fs = &ps_profstore_flagset;
    int checked = 0;
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        if (fl->def == NULL || fl->type == PS_FLAG_BOOL)
            continue;
        char help[1024], want[128];
        snprintf(help, sizeof(help), "%s", fl->help);
        for (char *p = help; *p; p++)
            if (*p == '\n')
                *p = ' ';
        snprintf(want, sizeof(want), "default %s", fl->def);
        if (strstr(help, want) == NULL)
            fail_msg("--%s: default %s is not in its help: %s", fl->name, fl->def, help);
        checked++;
    }
    assert_int_equal(checked, 42);
}

/* names are unique, every visible value flag has a metavar, bools none */
static void test_rows_well_formed(void **state)
{
    (void)state;
    const ps_flagset_t *fs = &ps_profstore_flagset;
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        for (size_t j = i + 1; j < fs->n; j++)
            assert_string_not_equal(fl->name, fs->flags[j].name);
        if (fl->type == PS_FLAG_BOOL || fl->type == PS_FLAG_ACTION)
            assert_null(fl->metavar);
        else
            assert_non_null(fl->metavar);
    }
}

static int parse(ps_flags_t *f, ps_err_t *err, int argc, ...)
{
    char *argv[16] = {"profstore"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc && i < 16; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    ps_err_clear(err);
    ps_profstore_flags_init(f);
    return ps_profstore_flags_parse(f, argc, argv, err);
}

static void expect_error(const char *arg, const char *msg)
{
    ps_flags_t f;
    ps_err_t err;
    assert_int_equal(parse(&f, &err, 2, arg), PS_EINVAL);
    assert_string_equal(err.msg, msg);
}

static void test_parse_errors(void **state)
{
    (void)state;
    expect_error("positional", "unexpected argument \"positional\"");
    expect_error("-h", "unexpected argument \"-h\"");
    expect_error("--bogus", "unknown flag --bogus");
    expect_error("--bogus=1", "unknown flag --bogus");
    expect_error("--listen", "flag --listen needs a value");
    expect_error("--threads=0", "--threads: \"0\" is not a positive number in range");
    expect_error("--threads=65536", "--threads: \"65536\" is not a positive number in range");
    expect_error("--query.max-concurrency=257", "--query.max-concurrency: \"257\" is not a number in range");
    expect_error("--query.max-regex-steps=0", "--query.max-regex-steps: \"0\" is not a number in range");
    expect_error("--storage.remote.read-max-bytes-in-frame=0",
                 "--storage.remote.read-max-bytes-in-frame: \"0\" is not a number in range");
    expect_error("--web.max-connections=-1",
                 "--web.max-connections: \"-1\" is not a number in range (0 .. 1000000)");
    expect_error("--max-body-size=12XB", "--max-body-size: \"12XB\" is not a size (e.g. 1048576, 32MiB, 1GB)");
    expect_error("--retention=abc", "--retention: not a valid duration string: \"abc\"");
    expect_error("--log-level=loud", "--log-level: \"loud\" is not one of debug, info, warn, error");
    expect_error("--agent=1", "--agent: \"1\" is not true or false");
    expect_error("--web.enable-admin-api=yes", "--web.enable-admin-api: \"yes\" is not true or false");
}

static void test_parse_values(void **state)
{
    (void)state;
    ps_flags_t f;
    ps_err_t err;
    assert_int_equal(parse(&f, &err, 8, "--threads", "3", "--retention=0", "--max-inflated-size=1.5MiB", "--agent",
                           "--storage.no-sync=false", "--query.max-concurrency=0"),
                     0);
    assert_int_equal(f.threads, 3);
    assert_int_equal(f.retention, 0);
    assert_int_equal(f.max_inflated, 1572864);
    assert_int_equal(f.max_inflated_total, 1572864); /* follows --max-inflated-size */
    assert_true(f.agent);
    assert_false(f.nosync);
    assert_int_equal(f.query_max_concurrency, 0);
    assert_string_equal(f.listen, "127.0.0.1:7070");
    assert_int_equal(f.compact_window, 2 * 3600 * 1000000000ll);
    assert_int_equal(parse(&f, &err, 3, "--help", "--bogus"), PS_FLAGS_HELP);
    assert_int_equal(parse(&f, &err, 2, "--h"), PS_FLAGS_HELP);
    assert_int_equal(parse(&f, &err, 2, "--version=1"), PS_FLAGS_VERSION);
    assert_int_equal(parse(&f, &err, 2, "--help-markdown"), PS_FLAGS_MARKDOWN);
}

/* what /api/v1/status/flags shows: sorted, sizes in their largest binary unit, durations short */
static void test_values(void **state)
{
    (void)state;
    ps_flags_t f;
    ps_err_t err;
    assert_int_equal(parse(&f, &err, 5, "--web.body-min-rate=1.5KiB", "--max-body-size=1000", "--query.timeout=90s",
                           "--web.enable-lifecycle"),
                     0);
    ps_flag_value_t v[128];
    uint32_t n = ps_flags_values(&ps_profstore_flagset, &f, v, 128);
    assert_int_equal(n, 61);
    assert_string_equal(v[0].name, "adhoc.max-bytes");
    for (uint32_t i = 1; i < n; i++)
        assert_true(strcmp(v[i - 1].name, v[i].name) < 0);
    static const struct {
        const char *name, *value;
    } want[] = {{"web.body-min-rate", "1536B"}, {"max-body-size", "1000B"},     {"query.timeout", "1m30s"},
                {"web.enable-lifecycle", "true"}, {"config", ""},             {"storage.max-size", "256GiB"},
                {"max-inflated-total", "256MiB"}, {"log-level", "info"},      {"query.max-series", "10000"}};
    for (size_t w = 0; w < sizeof(want) / sizeof(want[0]); w++) {
        uint32_t i = 0;
        while (i < n && strcmp(v[i].name, want[w].name) != 0)
            i++;
        assert_true(i < n);
        assert_string_equal(v[i].value, want[w].value);
    }
    for (uint32_t i = 0; i < n; i++) {
        assert_string_not_equal(v[i].name, "help");
        free((char *)v[i].value);
    }
}

/* a benchmark's table: short names (-n, -h), a float in bounds, a repeatable flag through set() */
typedef struct {
    uint64_t n;
    bool keep;
    double rate;
    double dens[4];
    int ndens;
} bench_opts_t;

static int add_density(const ps_flag_t *fl, const char *val, void *dst, ps_err_t *err)
{
    bench_opts_t *o = dst;
    if (o->ndens == 4)
        return ps_err_set(err, PS_EINVAL, "--%s: at most 4", fl->name);
    o->dens[o->ndens++] = atof(val);
    return 0;
}

static const ps_flag_t bench_flags[] = {
    {.name = "profiles", .short_name = 'n', .type = PS_FLAG_UINT, .offset = offsetof(bench_opts_t, n),
     .metavar = "N", .def = "20", .min = 1, .max = 100, .help = "pushes (default 20)"},
    {.name = "keep", .short_name = 'k', .type = PS_FLAG_BOOL, .offset = offsetof(bench_opts_t, keep),
     .help = "keep it"},
    {.name = "rate", .type = PS_FLAG_FLOAT, .offset = offsetof(bench_opts_t, rate), .metavar = "R",
     .def = "0.5", .fmin = 0.001, .fmax = 1e7, .help = "per second (default 0.5)"},
    {.name = "density", .type = PS_FLAG_FUNC, .metavar = "D", .set = add_density, .help = "repeatable"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "this help"},
};
static const ps_flagset_t bench_set = {"bench_x", "usage: bench_x [flags]\n", bench_flags, 5};

static int bench_parse(bench_opts_t *o, ps_err_t *err, int argc, ...)
{
    char *argv[16] = {"bench_x"};
    va_list ap;
    va_start(ap, argc);
    for (int i = 1; i < argc; i++)
        argv[i] = va_arg(ap, char *);
    va_end(ap);
    memset(o, 0, sizeof(*o));
    ps_flags_defaults(&bench_set, o);
    ps_err_clear(err);
    return ps_flags_parse(&bench_set, argc, argv, o, err);
}

static void test_bench_table(void **state)
{
    (void)state;
    bench_opts_t o;
    ps_err_t err;
    assert_int_equal(bench_parse(&o, &err, 1), 0);
    assert_int_equal(o.n, 20);
    assert_true(o.rate == 0.5);
    assert_int_equal(bench_parse(&o, &err, 8, "-n", "7", "-k", "--rate=2.25", "--density", "0.3", "--density=1"), 0);
    assert_int_equal(o.n, 7);
    assert_true(o.keep);
    assert_true(o.rate == 2.25);
    assert_int_equal(o.ndens, 2);
    assert_true(o.dens[0] == 0.3 && o.dens[1] == 1.0);
    assert_int_equal(bench_parse(&o, &err, 3, "--profiles", "9"), 0);
    assert_int_equal(o.n, 9);
    assert_int_equal(bench_parse(&o, &err, 3, "-h", "--bogus"), 1);
    assert_int_equal(bench_parse(&o, &err, 2, "-x"), PS_EINVAL);
    assert_string_equal(err.msg, "unexpected argument \"-x\"");
    assert_int_equal(bench_parse(&o, &err, 2, "-n"), PS_EINVAL);
    assert_string_equal(err.msg, "flag --profiles needs a value");
    assert_int_equal(bench_parse(&o, &err, 3, "-n", "0"), PS_EINVAL);
    assert_string_equal(err.msg, "--profiles: \"0\" is not a number in range");
    assert_int_equal(bench_parse(&o, &err, 2, "-nk"), PS_EINVAL);
    assert_string_equal(err.msg, "unexpected argument \"-nk\"");
    assert_int_equal(bench_parse(&o, &err, 2, "--rate=0"), PS_EINVAL);
    assert_string_equal(err.msg, "--rate: \"0\" is not a number in [0.001, 1e+07]");
    assert_int_equal(bench_parse(&o, &err, 2, "--rate=1x"), PS_EINVAL);
    assert_string_equal(err.msg, "--rate: \"1x\" is not a number in [0.001, 1e+07]");
    assert_int_equal(bench_parse(&o, &err, 2, "--rate=nan"), PS_EINVAL);
    assert_int_equal(bench_parse(&o, &err, 11, "--density=1", "--density=1", "--density=1", "--density=1",
                                 "--density=1", "-n", "1", "-n", "1", "-n"),
                     PS_EINVAL);
    assert_string_equal(err.msg, "--density: at most 4");
    ps_buf_t out = PS_BUF_INIT;
    ps_flags_help(&bench_set, &out);
    ps_buf_putc(&out, 0);
    assert_string_equal((char *)out.data, "usage: bench_x [flags]\n"
                                          "  -n, --profiles=N                 pushes (default 20)\n"
                                          "  -k, --keep                       keep it\n"
                                          "  --rate=R                         per second (default 0.5)\n"
                                          "  --density=D                      repeatable\n"
                                          "  -h, --help                       this help\n");
    ps_buf_dispose(&out);
    ps_flag_value_t v[8];
    assert_int_equal(bench_parse(&o, &err, 2, "--rate=0.125"), 0);
    uint32_t n = ps_flags_values(&bench_set, &o, v, 8);
    assert_int_equal(n, 4);
    assert_string_equal(v[0].name, "density");
    assert_string_equal(v[0].value, "");
    assert_string_equal(v[2].name, "profiles");
    assert_string_equal(v[2].value, "20");
    assert_string_equal(v[3].name, "rate");
    assert_string_equal(v[3].value, "0.125");
    for (uint32_t i = 0; i < n; i++)
        free((char *)v[i].value);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_docs_flags_md_is_generated),
        cmocka_unit_test(test_docs_are_one_cell),
        cmocka_unit_test(test_defaults_match_help),
        cmocka_unit_test(test_rows_well_formed),
        cmocka_unit_test(test_parse_errors),
        cmocka_unit_test(test_parse_values),
        cmocka_unit_test(test_values),
        cmocka_unit_test(test_bench_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
