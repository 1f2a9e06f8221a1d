/*
 * test_flags.c - the flag table (src/config/flags.c): docs/flags.md is what the table generates,
 * each default is the one its help names, parsing and its error messages, the status values.
 */
#include <setjmp.h>
#include <stdarg.h>
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
    assert_int_equal(docs, 45);
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
    assert_int_equal(checked, 32);
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
    ps_flag_value_t v[64];
    uint32_t n = ps_flags_values(&ps_profstore_flagset, &f, v, 64);
    assert_int_equal(n, 45);
    assert_string_equal(v[0].name, "agent");
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
