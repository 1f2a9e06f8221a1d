/*
 * test_debuginfo.c - unit tests for src/debuginfo/debuginfo.c on a debug file made here (gcc -g
 * -O2, objcopy --only-keep-debug): the protocol's states (first time, in progress, stale, kept),
 * what is refused and leaves the upload pending, the counts against the limits, the files and
 * their metadata as a reopen finds them (a .meta alone and tmp/ removed), list, delete, the bound
 * on pending uploads.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "debuginfo/debuginfo.h"

static char dir[256], store[300], build_id[128];
static char *debug_data;
static size_t debug_len;

static void sh(const char *fmt, ...)
{
    char cmd[2048];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(cmd, sizeof(cmd), fmt, ap);
    va_end(ap);
    if (system(cmd) != 0)
        fail_msg("command failed: %s", cmd);
}

static int setup(void **state)
{
    (void)state;
    strcpy(dir, "/tmp/ps_debuginfo_XXXXXX");
    assert_non_null(mkdtemp(dir));
    sh("printf 'int work(int n){return n*3;}\\nint main(int c,char**v){return work(c);}\\n' > %s/p.c", dir);
    sh("gcc -g -O2 -o %s/p %s/p.c && objcopy --only-keep-debug %s/p %s/p.debug", dir, dir, dir, dir);
    char cmd[600];
    snprintf(cmd, sizeof(cmd), "readelf -n %s/p | sed -n 's/.*Build ID: //p'", dir);
    FILE *p = popen(cmd, "r");
    assert_non_null(fgets(build_id, sizeof(build_id), p));
    build_id[strcspn(build_id, "\n")] = 0;
    pclose(p);
    snprintf(cmd, sizeof(cmd), "%s/p.debug", dir);
    FILE *f = fopen(cmd, "rb");
    assert_non_null(f);
    fseek(f, 0, SEEK_END);
    debug_len = (size_t)ftell(f);
    fseek(f, 0, SEEK_SET);
    debug_data = malloc(debug_len);
    assert_int_equal(fread(debug_data, 1, debug_len, f), debug_len);
    fclose(f);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    sh("rm -rf %s", dir);
    free(debug_data);
    return 0;
}

static ps_debuginfo_t *open_store(const char *name, uint64_t max_file, uint64_t max_bytes)
{
    ps_debuginfo_t *d;
    ps_err_t err;
    snprintf(store, sizeof(store), "%s/%s", dir, name);
    ps_debuginfo_opts_t o = {.max_file_bytes = max_file, .max_bytes = max_bytes, .nosync = false};
    assert_int_equal(ps_debuginfo_open(store, &o, &d, &err), 0);
    return d;
}

static const ps_di_file_t *file_of(const char *id, int type)
{
    static ps_di_file_t f;
    f = (ps_di_file_t){.gnu_build_id = id, .go_build_id = "", .otel_file_id = "otel", .name = "p", .type = type};
    return &f;
}

static uint64_t size_of(const char *ext)
{
    char path[600];
    struct stat st;
    snprintf(path, sizeof(path), "%s/.build-id/%.2s/%s.%s", store, build_id, build_id + 2, ext);
    return stat(path, &st) == 0 ? (uint64_t)st.st_size : 0;
}

#define T0 1796022000000000000LL

static void should(ps_debuginfo_t *d, const char *id, int64_t now, bool want, const char *reason)
{
    bool s;
    const char *r;
    ps_err_t err;
    assert_int_equal(ps_debuginfo_should_upload(d, file_of(id, PS_DI_TYPE_EXECUTABLE_NO_TEXT), now, &s, &r, &err), 0);
    assert_int_equal(s, want);
    assert_string_equal(r, reason);
}

static void test_protocol(void **state)
{
    (void)state;
    ps_debuginfo_t *d = open_store("proto", 1u << 30, 1ull << 32);
    ps_err_t err;
    uint64_t bytes, files, pending;
    assert_int_equal(ps_debuginfo_upload(d, build_id, debug_data, debug_len, T0, &err), PS_ENOTFOUND);
    assert_string_equal(err.msg, "no pending upload for this build ID");
    should(d, build_id, T0, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    should(d, build_id, T0 + 1, false, PS_DEBUGINFO_REASON_IN_PROGRESS);
    assert_int_equal(ps_debuginfo_finished(d, build_id, &err), PS_ECONFLICT);
    /* refused bodies leave it pending and nothing kept */
    assert_int_equal(ps_debuginfo_upload(d, build_id, "hello", 5, T0, &err), PS_EINVAL);
    assert_string_equal(err.msg, "not an ELF file (it does not start with \\x7fELF)");
    assert_int_equal(ps_debuginfo_upload(d, "zz", debug_data, debug_len, T0, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid gnu_build_id: invalid gnuBuildID \"zz\"");
    ps_debuginfo_usage(d, &bytes, &files, &pending);
    assert_true(bytes == 0 && files == 0 && pending == 1);
    /* upper case is the same build id */
    char upper[128];
    for (size_t i = 0; build_id[i]; i++)
        upper[i] = (char)(build_id[i] >= 'a' && build_id[i] <= 'f' ? build_id[i] - 32 : build_id[i]);
    upper[strlen(build_id)] = 0;
    assert_int_equal(ps_debuginfo_upload(d, upper, debug_data, debug_len, T0 + 5, &err), 0);
    assert_int_equal(size_of("debug"), debug_len);
    ps_debuginfo_usage(d, &bytes, &files, &pending);
    assert_int_equal(bytes, debug_len + size_of("meta"));
    assert_true(files == 1 && pending == 1);
    should(d, build_id, T0 + 6, false, PS_DEBUGINFO_REASON_EXISTS);
    assert_int_equal(ps_debuginfo_finished(d, build_id, &err), 0);
    assert_int_equal(ps_debuginfo_finished(d, build_id, &err), PS_ECONFLICT);
    assert_string_equal(err.msg, "upload is not in uploading state");
    assert_int_equal(ps_debuginfo_finished(d, "abcd", &err), PS_ENOTFOUND);
    assert_string_equal(err.msg, "no upload metadata found for build ID abcd");
    /* listed with the metadata it was sent with */
    ps_arena_t a = PS_ARENA_INIT;
    ps_di_object_t *v;
    size_t n;
    assert_int_equal(ps_debuginfo_list(d, &a, &v, &n, &err), 0);
    assert_int_equal(n, 1);
    assert_string_equal(v[0].file.gnu_build_id, build_id);
    assert_string_equal(v[0].file.name, "p");
    assert_string_equal(v[0].file.otel_file_id, "otel");
    assert_int_equal(v[0].file.type, PS_DI_TYPE_EXECUTABLE_NO_TEXT);
    assert_int_equal(v[0].state, PS_DI_STATE_UPLOADED);
    assert_true(v[0].started_ns == T0 && v[0].finished_ns == T0 + 5 && v[0].size_bytes == (int64_t)debug_len);
    ps_arena_dispose(&a);
    /* reopened: the same counts; a .meta alone and tmp/ are cleared */
    ps_debuginfo_free(d);
    sh("mkdir -p %s/.build-id/ab && touch %s/.build-id/ab/cdef.meta %s/tmp/x.debug.tmp", store, store, store);
    d = open_store("proto", 1u << 30, 1ull << 32);
    ps_debuginfo_usage(d, &bytes, &files, &pending);
    assert_true(bytes == debug_len + size_of("meta") && files == 1 && pending == 0);
    char path[600];
    snprintf(path, sizeof(path), "%s/.build-id/ab/cdef.meta", store);
    assert_int_equal(access(path, F_OK), -1);
    snprintf(path, sizeof(path), "%s/tmp/x.debug.tmp", store);
    assert_int_equal(access(path, F_OK), -1);
    should(d, build_id, T0 + 7, false, PS_DEBUGINFO_REASON_EXISTS);
    /* deleted: nothing counted, a first time again */
    assert_int_equal(ps_debuginfo_delete(d, build_id, &err), 0);
    assert_int_equal(ps_debuginfo_delete(d, build_id, &err), 0);
    ps_debuginfo_usage(d, &bytes, &files, &pending);
    assert_true(bytes == 0 && files == 0 && pending == 0);
    assert_int_equal(size_of("debug"), 0);
    should(d, build_id, T0 + 8, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    ps_debuginfo_free(d);
}

static void test_stale_and_bound(void **state)
{
    (void)state;
    ps_debuginfo_t *d = open_store("stale", 1u << 30, 1ull << 32);
    ps_err_t err;
    bool s;
    const char *r;
    should(d, build_id, T0, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    should(d, build_id, T0 + PS_DEBUGINFO_STALE_NS, false, PS_DEBUGINFO_REASON_IN_PROGRESS);
    should(d, build_id, T0 + PS_DEBUGINFO_STALE_NS + 1, true, PS_DEBUGINFO_REASON_STALE);
    /* at most PS_DEBUGINFO_PENDING_MAX pending; a stale one makes room */
    char id[16];
    for (int i = 1; i < PS_DEBUGINFO_PENDING_MAX; i++) {
        snprintf(id, sizeof(id), "%08x", i);
        should(d, id, T0 + PS_DEBUGINFO_STALE_NS + 2, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    }
    assert_int_equal(ps_debuginfo_should_upload(d, file_of("ffffffff", 1), T0 + PS_DEBUGINFO_STALE_NS + 3, &s, &r, &err),
                     PS_EOVERLOAD);
    assert_string_equal(err.msg, "1024 uploads are in progress, none stale; try again later");
    should(d, "ffffffff", T0 + 3 * PS_DEBUGINFO_STALE_NS, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    /* requests Pyroscope calls invalid */
    assert_int_equal(ps_debuginfo_should_upload(d, file_of("abcd", 0), T0, &s, &r, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid request: init.File.Type(0) is not valid");
    assert_int_equal(ps_debuginfo_should_upload(d, NULL, T0, &s, &r, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid request: init.File == nil");
    assert_int_equal(ps_debuginfo_should_upload(d, file_of("", 1), T0, &s, &r, &err), 0);
    assert_true(!s && strcmp(r, PS_DEBUGINFO_REASON_EMPTY) == 0);
    ps_debuginfo_free(d);
}

static void test_limits(void **state)
{
    (void)state;
    ps_err_t err;
    char want[300];
    ps_debuginfo_t *d = open_store("small", debug_len - 1, 1ull << 32);
    should(d, build_id, T0, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    assert_int_equal(ps_debuginfo_upload(d, build_id, debug_data, debug_len, T0, &err), PS_ETOOBIG);
    snprintf(want, sizeof(want), "the file is %zu bytes, more than the debug file size limit (%zu bytes)", debug_len,
             debug_len - 1);
    assert_string_equal(err.msg, want);
    ps_debuginfo_free(d);
    d = open_store("full", 1u << 30, debug_len + 100);
    should(d, build_id, T0, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    assert_int_equal(ps_debuginfo_upload(d, build_id, debug_data, debug_len, T0, &err), PS_ENOSPACE);
    snprintf(want, sizeof(want),
             "debug info store full: the file's %zu bytes and the 0 bytes kept are more than the debug info store "
             "limit (%zu bytes)", debug_len, debug_len + 100);
    assert_string_equal(err.msg, want);
    assert_int_equal(size_of("debug"), 0);
    ps_debuginfo_free(d);
    d = open_store("full", 1u << 30, debug_len + 8192 + 1000);
    assert_int_equal(ps_debuginfo_upload(d, build_id, debug_data, debug_len, T0, &err), PS_ENOTFOUND); /* a restart forgets */
    should(d, build_id, T0, true, PS_DEBUGINFO_REASON_FIRST_TIME);
    assert_int_equal(ps_debuginfo_upload(d, build_id, debug_data, debug_len, T0, &err), 0);
    ps_debuginfo_free(d);
    uint64_t used = debug_len + size_of("meta");
    d = open_store("full", 1u << 30, used);
    bool s;
    const char *r;
    assert_int_equal(ps_debuginfo_should_upload(d, file_of("abcd", 1), T0, &s, &r, &err), PS_ENOSPACE);
    snprintf(want, sizeof(want), "debug info store full: %llu bytes kept, the debug info store limit is %llu bytes",
             (unsigned long long)used, (unsigned long long)used);
    assert_string_equal(err.msg, want);
    ps_debuginfo_free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_protocol),
        cmocka_unit_test(test_stale_and_bound),
        cmocka_unit_test(test_limits),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
