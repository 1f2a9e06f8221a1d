/*
 * test_file_sd.c - the file set of a scrape configuration's file_sd_configs (src/discovery/file_sd.c)
 * in a temporary directory: a new file, a file changed in place, a file replaced by a rename that
 * kept its size and modification time (only inode and ctime differ), a deleted file, a broken file
 * (keeps its groups, counts a failure), something that is not a regular file, and the text of the
 * warning for patterns that match no file.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "config/config.h"
#include "discovery/discovery.h"

typedef struct fx {
    char dir[64];
    ps_config_t *cfg;
    ps_filesd_t *f;
    uint64_t failures;
} fx_t;

static void path_of(const fx_t *x, const char *name, char *out, size_t n)
{
    snprintf(out, n, "%s/%s", x->dir, name);
}

/* Writes name through a temporary file and a rename, as deploy tools do; mtime_from (a file name or
 * NULL) gives the new file that file's modification time. */
static void put(const fx_t *x, const char *name, const char *text, const char *mtime_from)
{
    char p[256], tmp[256];
    path_of(x, name, p, sizeof(p));
    snprintf(tmp, sizeof(tmp), "%s/.tmp", x->dir);
    FILE *fp = fopen(tmp, "w");
    assert_non_null(fp);
    fputs(text, fp);
    fclose(fp);
    if (mtime_from) {
        char src[256];
        struct stat st;
        path_of(x, mtime_from, src, sizeof(src));
        assert_int_equal(stat(src, &st), 0);
        struct timespec ts[2] = {st.st_atim, st.st_mtim};
        assert_int_equal(utimensat(AT_FDCWD, tmp, ts, 0), 0);
    }
    assert_int_equal(rename(tmp, p), 0);
}

static void rm(const fx_t *x, const char *name)
{
    char p[256];
    path_of(x, name, p, sizeof(p));
    assert_int_equal(unlink(p), 0);
}

/* cfg_fmt: the file_sd_configs (YAML flow list) with every %s the temporary directory. */
static void setup_fx(fx_t *x, const char *cfg_fmt)
{
    memset(x, 0, sizeof(*x));
    snprintf(x->dir, sizeof(x->dir), "/tmp/ps-filesd-XXXXXX");
    assert_non_null(mkdtemp(x->dir));
    char sd[1024], y[2048];
    snprintf(sd, sizeof(sd), cfg_fmt, x->dir, x->dir, x->dir, x->dir);
    snprintf(y, sizeof(y), "scrape_configs:\n- job_name: j\n  file_sd_configs: %s\n", sd);
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_config_parse(y, strlen(y), "t.yml", &x->cfg, &err);
    if (rc != 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    x->f = ps_filesd_new(&x->cfg->scrape[0]);
}

static void teardown_fx(fx_t *x)
{
    ps_filesd_free(x->f);
    ps_config_free(x->cfg);
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", x->dir);
    assert_int_equal(system(cmd), 0);
}

/* The groups of the file named name: one group, one target, the label v (or NULL: no such file). */
static const char *v_of(const fx_t *x, const char *name)
{
    char p[256];
    path_of(x, name, p, sizeof(p));
    for (uint32_t i = 0; i < ps_filesd_count(x->f); i++) {
        const ps_target_group_t *g;
        uint32_t ng;
        if (strcmp(ps_filesd_file(x->f, i, &g, &ng), p) != 0)
            continue;
        if (ng == 0)
            return "";
        assert_int_equal(ng, 1);
        assert_int_equal(g[0].ntargets, 1);
        assert_string_equal(g[0].targets[0], "h:1");
        assert_int_equal(g[0].labels.n, 1);
        assert_string_equal(g[0].labels.pairs[0].name, "v");
        return g[0].labels.pairs[0].value;
    }
    return NULL;
}

static const char *group(const char *v)
{
    static char b[128];
    snprintf(b, sizeof(b), "[{\"targets\": [\"h:1\"], \"labels\": {\"v\": \"%s\"}}]\n", v);
    return b;
}

static void test_new_changed_deleted(void **state)
{
    fx_t x;
    setup_fx(&x, "[{files: ['%s/*.json']}]");
    char want[256];
    snprintf(want, sizeof(want), "file_sd_configs[0].files[0]: \"%s/*.json\" matches no file", x.dir);
    /* nothing there yet */
    assert_false(ps_filesd_refresh(x.f, true, &x.failures));
    assert_int_equal(ps_filesd_count(x.f), 0);
    assert_string_equal(ps_filesd_warning(x.f), want);
    assert_int_equal(ps_filesd_unmatched(x.f), 1);
    /* a new file */
    put(&x, "a.json", group("one"), NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(ps_filesd_count(x.f), 1);
    assert_string_equal(v_of(&x, "a.json"), "one");
    assert_string_equal(ps_filesd_warning(x.f), "");
    assert_int_equal(ps_filesd_unmatched(x.f), 0);
    /* no change: nothing re-read */
    assert_false(ps_filesd_refresh(x.f, false, &x.failures));
    assert_string_equal(v_of(&x, "a.json"), "one");
    /* force: every file re-read */
    assert_true(ps_filesd_refresh(x.f, true, &x.failures));
    /* replaced by a rename, same size and mtime: the new inode tells */
    put(&x, "a.json", group("two"), "a.json");
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_string_equal(v_of(&x, "a.json"), "two");
    /* a second file, then the first one deleted */
    put(&x, "b.json", group("bee"), NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(ps_filesd_count(x.f), 2);
    assert_string_equal(v_of(&x, "a.json"), "two");
    assert_string_equal(v_of(&x, "b.json"), "bee");
    rm(&x, "a.json");
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(ps_filesd_count(x.f), 1);
    assert_null(v_of(&x, "a.json"));
    assert_string_equal(v_of(&x, "b.json"), "bee");
    /* the last one goes: the pattern matches nothing again */
    rm(&x, "b.json");
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(ps_filesd_count(x.f), 0);
    assert_string_equal(ps_filesd_warning(x.f), want);
    assert_int_equal(x.failures, 0);
    teardown_fx(&x);
}

/* A file changed in place (another size) is re-read without a rename too. */
static void test_changed_in_place(void **state)
{
    fx_t x;
    setup_fx(&x, "[{files: ['%s/*.json']}]");
    put(&x, "a.json", group("one"), NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    char p[256];
    path_of(&x, "a.json", p, sizeof(p));
    FILE *fp = fopen(p, "w");
    assert_non_null(fp);
    fputs(group("three"), fp);
    fclose(fp);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_string_equal(v_of(&x, "a.json"), "three");
    teardown_fx(&x);
}

/* A broken file keeps the groups it gave before and counts a failure at each refresh that reads it
 * (its last good state is what it is compared with, so it is read again until fixed). */
static void test_broken_file(void **state)
{
    fx_t x;
    setup_fx(&x, "[{files: ['%s/*.json', '%s/*.yml']}]");
    put(&x, "a.json", group("one"), NULL);
    put(&x, "c.yml", "- targets: ['h:1']\n  labels: {v: yaml}\n", NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_string_equal(v_of(&x, "c.yml"), "yaml");
    put(&x, "a.json", "[{\"targets\": [\"h:1\"], \"labels\": {\"v\": \"two\"}}\n", NULL); /* no closing ] */
    assert_false(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(x.failures, 1);
    assert_int_equal(ps_filesd_count(x.f), 2);
    assert_string_equal(v_of(&x, "a.json"), "one");
    assert_false(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(x.failures, 2);
    assert_string_equal(v_of(&x, "a.json"), "one");
    /* valid JSON, not a target group list */
    put(&x, "a.json", "{\"targets\": [\"h:1\"]}\n", NULL);
    assert_false(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(x.failures, 3);
    assert_string_equal(v_of(&x, "a.json"), "one");
    /* fixed */
    put(&x, "a.json", group("ok"), NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(x.failures, 3);
    assert_string_equal(v_of(&x, "a.json"), "ok");
    /* a new file that is broken from the start: matched, no groups, one failure */
    put(&x, "d.json", "not json\n", NULL);
    assert_false(ps_filesd_refresh(x.f, false, &x.failures));
    assert_int_equal(x.failures, 4);
    assert_int_equal(ps_filesd_count(x.f), 3);
    assert_string_equal(v_of(&x, "d.json"), "");
    assert_string_equal(v_of(&x, "c.yml"), "yaml");
    teardown_fx(&x);
}

/* The warning names every pattern that matches nothing, by config and file index; a directory whose
 * name matches is not a file. */
static void test_unmatched_warning(void **state)
{
    fx_t x;
    setup_fx(&x, "[{files: ['%s/*.json'], refresh_interval: 2m}, {files: ['%s/*.yml', '%s/sub/*.yaml'], "
                 "refresh_interval: 30s}]");
    char d[256];
    path_of(&x, "dir.json", d, sizeof(d));
    assert_int_equal(mkdir(d, 0700), 0);
    assert_false(ps_filesd_refresh(x.f, true, &x.failures));
    char want[1024];
    snprintf(want, sizeof(want),
             "file_sd_configs[0].files[0]: \"%s/*.json\" matches no file; "
             "file_sd_configs[1].files[0]: \"%s/*.yml\" matches no file; "
             "file_sd_configs[1].files[1]: \"%s/sub/*.yaml\" matches no file",
             x.dir, x.dir, x.dir);
    assert_string_equal(ps_filesd_warning(x.f), want);
    assert_int_equal(ps_filesd_unmatched(x.f), 3);
    assert_int_equal(ps_filesd_count(x.f), 0);
    put(&x, "t.yml", "[]\n", NULL);
    assert_true(ps_filesd_refresh(x.f, false, &x.failures)); /* a new file (without groups) applied */
    assert_int_equal(ps_filesd_count(x.f), 1);
    snprintf(want, sizeof(want),
             "file_sd_configs[0].files[0]: \"%s/*.json\" matches no file; "
             "file_sd_configs[1].files[1]: \"%s/sub/*.yaml\" matches no file",
             x.dir, x.dir);
    assert_string_equal(ps_filesd_warning(x.f), want);
    assert_int_equal(ps_filesd_unmatched(x.f), 2);
    assert_int_equal(x.failures, 0);
    /* the smallest refresh interval */
    assert_int_equal(ps_filesd_interval(x.f), 30ll * 1000000000);
    assert_int_equal(rmdir(d), 0);
    teardown_fx(&x);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_changed_deleted),
        cmocka_unit_test(test_changed_in_place),
        cmocka_unit_test(test_broken_file),
        cmocka_unit_test(test_unmatched_warning),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
