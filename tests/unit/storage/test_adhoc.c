/*
 * test_adhoc.c - the ad hoc profiles (storage/adhoc.c): put, get (bytes and time as stored), list
 * oldest first, a taken id refused, the oldest dropped past the count and byte limits, a file
 * larger than the byte limit refused, bad ids, everything kept across reopen, and the store's
 * other records untouched.
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

static ps_store_t *open_store(const char *dir, uint32_t max_n, uint64_t max_b)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 26;
    o.nosync = true;
    o.adhoc_max_profiles = max_n;
    o.adhoc_max_bytes = max_b;
    ps_store_t *s = NULL;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0)
        fail_msg("open: %s", err.msg);
    return s;
}

/* "id@ms:len;" for each */
static int on_adhoc(void *ctx, const ps_store_adhoc_t *a)
{
    char t[64];
    ps_buf_append(ctx, a->id, a->idlen);
    snprintf(t, sizeof(t), "@%lld:%zu;", (long long)a->uploaded_ms, a->len);
    ps_buf_append(ctx, t, strlen(t));
    assert_null(a->data);
    return 0;
}

static void expect(ps_store_t *s, const char *want)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err;
    assert_int_equal(ps_store_adhoc_list(s, on_adhoc, &b, &err), 0);
    ps_buf_append(&b, "", 1);
    assert_string_equal((const char *)b.data, want);
    ps_buf_dispose(&b);
}

static int put(ps_store_t *s, const char *id, int64_t ms, const char *data, uint32_t *dropped, ps_err_t *err)
{
    ps_store_adhoc_t a = {.id = id, .idlen = strlen(id), .uploaded_ms = ms, .data = data, .len = strlen(data)};
    return ps_store_adhoc_put(ps_test_writer(s), &a, dropped, err);
}

static void test_adhoc(void **state)
{
    (void)state;
    char *dir = ps_test_tmpdir("/tmp/ps-adhoc-XXXXXX");
    ps_store_t *s = open_store(dir, 3, 20);
    ps_err_t err;
    ps_arena_t a = PS_ARENA_INIT;
    ps_store_adhoc_t g;
    uint32_t dropped = 99;
    expect(s, "");
    assert_int_equal(ps_store_adhoc_get(s, "A-x", 3, &a, &g, &err), PS_ENOTFOUND);
    assert_string_equal(err.msg, "profile A-x not found");
    assert_int_equal(put(s, "B-two", 2000, "bbbb", &dropped, &err), 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(put(s, "A-one", -5, "a;b 1\n", NULL, &err), 0);
    expect(s, "A-one@-5:6;B-two@2000:4;"); /* by id: the ULID's order */
    assert_int_equal(ps_store_adhoc_get(s, "A-one", 5, &a, &g, &err), 0);
    assert_int_equal(g.uploaded_ms, -5);
    assert_int_equal(g.len, 6);
    assert_memory_equal(g.data, "a;b 1\n", 6);
    assert_string_equal(g.id, "A-one");
    /* a taken id, bad ids, a file over the byte limit: refused, nothing changed */
    assert_int_equal(put(s, "A-one", 1, "z", NULL, &err), PS_ECONFLICT);
    assert_string_equal(err.msg, "ad hoc profile A-one exists already");
    assert_int_equal(put(s, "", 1, "z", NULL, &err), PS_EINVAL);
    assert_string_equal(err.msg, "id: 0 bytes (1 to 256, no NUL)");
    assert_int_equal(put(s, "C-big", 1, "0123456789012345678901", NULL, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "the profile is 22 bytes, more than the 20 all ad hoc profiles may hold "
                                 "(--adhoc.max-bytes)");
    expect(s, "A-one@-5:6;B-two@2000:4;");
    /* bytes: 6 + 4 + 12 > 20: the oldest goes */
    assert_int_equal(put(s, "C-three", 3000, "cccccccccccc", &dropped, &err), 0);
    assert_int_equal(dropped, 1);
    expect(s, "B-two@2000:4;C-three@3000:12;");
    /* count: a fourth would be the third kept... two small ones: 3 kept at most */
    assert_int_equal(put(s, "D-four", 4000, "d", &dropped, &err), 0);
    assert_int_equal(dropped, 0);
    assert_int_equal(put(s, "E-five", 5000, "e", &dropped, &err), 0);
    assert_int_equal(dropped, 1);
    expect(s, "C-three@3000:12;D-four@4000:1;E-five@5000:1;");
    /* kept across reopen; nothing else in the store */
    ps_test_close_store(s);
    s = open_store(dir, 3, 20);
    expect(s, "C-three@3000:12;D-four@4000:1;E-five@5000:1;");
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 0);
    ps_test_close_store(s);
    ps_arena_dispose(&a);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_adhoc),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
