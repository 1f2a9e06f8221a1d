/*
 * test_settings.c - the settings table (storage/settings.c): put, list by name, an older update
 * refused (PS_ECONFLICT) and nothing changed, delete (a missing one is no error), bad names and
 * values refused, everything kept across reopen, and the settings do not disturb the store's
 * other records (stats, schema). The recording rule records (storage/recrules.c): created with
 * generation 1, replaced only by the generation stored (+1), a stale one PS_ECONFLICT, delete of a
 * missing one PS_ENOTFOUND, the limit, kept across reopen.
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
#include "../storewriter.h"

#include "core/mem.h"
#include "storage/store.h"

static ps_store_t *open_store(const char *dir)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 26;
    o.nosync = true;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

/* "name=value@ms;" for each setting */
static int on_setting(void *ctx, const ps_store_setting_t *st)
{
    ps_buf_t *b = ctx;
    char t[32];
    ps_buf_append(b, st->name, st->nlen);
    ps_buf_append(b, "=", 1);
    ps_buf_append(b, st->value, st->vlen);
    snprintf(t, sizeof(t), "@%lld;", (long long)st->modified_ms);
    ps_buf_append(b, t, strlen(t));
    return 0;
}

static void expect(ps_store_t *s, const char *want)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    assert_int_equal(ps_store_settings(s, on_setting, &b, &err), 0);
    ps_buf_append(&b, "", 1);
    assert_string_equal((const char *)b.data, want);
    ps_buf_dispose(&b);
}

static int put(ps_store_t *s, const char *name, const char *value, int64_t ms, bool del, ps_err_t *err)
{
    ps_store_setting_t st = {name, strlen(name), value, value ? strlen(value) : 0, ms};
    return ps_store_setting_put(ps_test_writer(s), &st, del, err);
}

static void test_settings_table(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-settings-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_err_t err;
    expect(s, "");
    assert_int_equal(put(s, "zeta", "1", 100, false, &err), 0);
    assert_int_equal(put(s, "alpha", "", 50, false, &err), 0);
    expect(s, "alpha=@50;zeta=1@100;");
    /* older: refused, nothing changed; equal or newer: replaces */
    assert_int_equal(put(s, "zeta", "old", 99, false, &err), PS_ECONFLICT);
    assert_string_equal(err.msg, "failed to update zeta: a newer update is already written (modified at 100 ms, "
                                 "this one 99)");
    assert_int_equal(put(s, "zeta", "2", 100, false, &err), 0);
    expect(s, "alpha=@50;zeta=2@100;");
    /* negative times keep their order (sign flipped) */
    assert_int_equal(put(s, "neg", "a", -5, false, &err), 0);
    assert_int_equal(put(s, "neg", "b", -6, false, &err), PS_ECONFLICT);
    /* bad input */
    assert_int_equal(put(s, "", "v", 1, false, &err), PS_EINVAL);
    assert_string_equal(err.msg, "name: missing (the setting's name)");
    char big[PS_SETTING_NAME_MAX + 2];
    memset(big, 'n', sizeof(big) - 1);
    big[sizeof(big) - 1] = '\0';
    assert_int_equal(put(s, big, "v", 1, false, &err), PS_EINVAL);
    assert_string_equal(err.msg, "name: 257 bytes, more than 256");
    ps_store_setting_t nul = {"a\0b", 3, "v", 1, 1};
    assert_int_equal(ps_store_setting_put(ps_test_writer(s), &nul, false, &err), PS_EINVAL);
    char *val = calloc(1, PS_SETTING_VALUE_MAX + 2);
    memset(val, 'v', PS_SETTING_VALUE_MAX + 1);
    assert_int_equal(put(s, "big", val, 1, false, &err), PS_EINVAL);
    assert_string_equal(err.msg, "value: 65537 bytes, more than 65536");
    val[PS_SETTING_VALUE_MAX] = '\0'; /* the largest one fits */
    assert_int_equal(put(s, "big", val, 1, false, &err), 0);
    assert_int_equal(put(s, "big", NULL, 2, true, &err), 0);
    free(val);
    /* delete: a newer stored one is refused, a missing one is fine */
    assert_int_equal(put(s, "zeta", NULL, 99, true, &err), PS_ECONFLICT);
    assert_int_equal(put(s, "never", NULL, 1, true, &err), 0);
    assert_int_equal(put(s, "neg", NULL, 0, true, &err), 0);
    expect(s, "alpha=@50;zeta=2@100;");
    /* kept across reopen; the store itself untouched */
    ps_test_close_store(s);
    s = open_store(dir);
    expect(s, "alpha=@50;zeta=2@100;");
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 0);
    assert_int_equal(put(s, "zeta", NULL, 100, true, &err), 0);
    expect(s, "alpha=@50;");
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static int on_rule(void *ctx, const ps_store_rule_t *r)
{
    ps_buf_printf(ctx, "%.*s=%.*s@%lld;", (int)r->idlen, r->id, (int)r->vlen, (const char *)r->value,
                  (long long)r->generation);
    return 0;
}

static const char *rules(ps_store_t *s, ps_buf_t *b)
{
    ps_err_t err;
    ps_buf_reset(b);
    assert_int_equal(ps_store_rules(s, on_rule, b, &err), 0);
    ps_buf_putc(b, 0);
    return (const char *)b->data;
}

static int rput(ps_store_t *s, const char *id, const char *v, int64_t gen, bool del, int64_t *out, ps_err_t *err)
{
    ps_store_rule_t r = {id, strlen(id), v, v ? strlen(v) : 0, gen};
    return ps_store_rule_put(ps_test_writer(s), &r, del, 2, out, err);
}

static void test_rule_records(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-rrules-XXXXXX");
    ps_store_t *s = open_store(dir);
    ps_err_t err;
    ps_buf_t b = PS_BUF_INIT;
    int64_t gen = -1;
    assert_string_equal(rules(s, &b), "");
    assert_int_equal(rput(s, "b", "one", 7, false, &gen, &err), 0); /* new: generation 1, whatever was sent */
    assert_int_equal(gen, 1);
    assert_int_equal(rput(s, "a", "x", 0, false, &gen, &err), 0);
    assert_string_equal(rules(s, &b), "a=x@1;b=one@1;");
    assert_int_equal(rput(s, "b", "two", 0, false, &gen, &err), PS_ECONFLICT);
    assert_string_equal(err.msg, "conflicting update, please try again: observed_generation=0, store_generation=1");
    assert_int_equal(rput(s, "b", "two", 1, false, &gen, &err), 0);
    assert_int_equal(gen, 2);
    assert_int_equal(rput(s, "c", "three", 0, false, &gen, &err), PS_ELIMIT); /* at most 2 */
    assert_string_equal(err.msg, "2 recording rules are stored already, the most there may be");
    assert_int_equal(rput(s, "zz", NULL, 0, true, &gen, &err), PS_ENOTFOUND);
    assert_string_equal(err.msg, "no rule with ID='zz' found");
    ps_test_close_store(s);
    s = open_store(dir);
    assert_string_equal(rules(s, &b), "a=x@1;b=two@2;");
    assert_int_equal(rput(s, "a", NULL, 0, true, &gen, &err), 0);
    assert_string_equal(rules(s, &b), "b=two@2;");
    expect(s, ""); /* the settings are apart */
    ps_buf_dispose(&b);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_settings_table),
        cmocka_unit_test(test_rule_records),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
