/*
 * testutil.h - what the unit tests share: where the fixtures are, reading files whole, checking
 * that a doc repeats a source comment, temporary folders, and a random generator. Include after <cmocka.h> (a missing file fails the test).
 */
#ifndef PS_TESTUTIL_H
#define PS_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef PS_TESTDATA
#define PS_TESTDATA "tests/testdata"
#endif

/** tests/testdata: $PS_TESTDATA, else the path compiled in (<repo>/tests/testdata). */
static inline const char *ps_test_testdata(void)
{
    const char *d = getenv("PS_TESTDATA");
    return d != NULL && d[0] != '\0' ? d : PS_TESTDATA;
}

/** The whole file, malloc'ed and NUL-terminated (*n without the NUL); fails the test if it cannot. */
static inline uint8_t *ps_test_read_path(const char *path, size_t *n)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        fail_msg("cannot open %s", path);
    fseek(f, 0, SEEK_END);
    long len = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc(len > 0 ? (size_t)len + 1 : 1);
    assert_non_null(b);
    assert_int_equal(fread(b, 1, (size_t)len, f), (size_t)len);
    fclose(f);
    b[len > 0 ? len : 0] = 0;
    if (n != NULL)
        *n = (size_t)len;
    return b;
}

/** tests/testdata/pprof/<rel>, read whole (see ps_test_read_path). */
static inline uint8_t *ps_test_read_fixture(const char *rel, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/pprof/%s", ps_test_testdata(), rel);
    return ps_test_read_path(path, n);
}

#ifdef PS_SOURCE_DIR
/** A file of this repository (rel to its top), read whole and NUL-terminated. */
static inline char *ps_test_read_source(const char *rel)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", PS_SOURCE_DIR, rel);
    return (char *)ps_test_read_path(path, NULL);
}
#endif

/**
 * Checks that a C file's head comment is repeated in a Markdown page: from the line holding
 * `first` in both, every line of the comment (after " * ") equals the page's line, up to
 * the end of the comment and of the page's code block (three backquotes). file names the C file in
 * failures.
 */
static inline void ps_test_doc_repeats_comment(const char *c, const char *md, const char *first, const char *file)
{
    const char *cp = strstr(c, first), *mp = strstr(md, first);
    assert_non_null(cp);
    assert_non_null(mp);
    const char *cend = strstr(cp, "\n */"), *mend = strstr(mp, "\n```");
    assert_non_null(cend);
    assert_non_null(mend);
    for (int line = 1;; line++) {
        const char *cn = memchr(cp, '\n', (size_t)(cend - cp)), *mn = memchr(mp, '\n', (size_t)(mend - mp));
        size_t cl = cn ? (size_t)(cn - cp) : (size_t)(cend - cp), ml = mn ? (size_t)(mn - mp) : (size_t)(mend - mp);
        if (cl != ml || memcmp(cp, mp, cl) != 0)
            fail_msg("spec line %d differs:\n  %s %.*s\n  FORMAT.md %.*s", line, file, (int)cl, cp, (int)ml, mp);
        if (!cn || !mn) {
            assert_true(!cn && !mn);
            break;
        }
        /* next line: the comment's starts with " * " (or " *" when empty) */
        cp = cn + 1;
        mp = mn + 1;
        assert_true(cp[0] == ' ' && cp[1] == '*');
        cp += cp[2] == ' ' ? 3 : 2;
    }
}

/** A new folder made from tmpl ("/tmp/name-XXXXXX"), malloc'ed; fails the test if it cannot. */
static inline char *ps_test_tmpdir(const char *tmpl)
{
    char *d = strdup(tmpl);
    assert_non_null(d);
    assert_non_null(mkdtemp(d));
    return d;
}

/** Removes folder d and all below it (rm -rf); fails the test if that fails. */
static inline void ps_test_rm_rf(const char *d)
{
    char cmd[512];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", d);
    assert_int_equal(system(cmd), 0);
}

/* A deterministic generator for random test data: xorshift64*, a fixed seed, one state per test
 * file (the same sequence every run, so a failure repeats). */
static inline uint64_t ps_test_rnd(void)
{
    static uint64_t state = 0x9e3779b97f4a7c15ull;
    uint64_t x = state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    state = x;
    return x * 0x2545f4914f6cdd1dull;
}

/** Sets a (pointer, length) field pair to s and strlen(s) (NULL: NULL and 0). */
static inline void ps_test_setstr(const char **v, size_t *n, const char *s)
{
    *v = s;
    *n = s ? strlen(s) : 0;
}

/* ---- a pool for ps_par_for (core/thread.h): each helper a thread of its own, started after a
 * random delay of up to 3 ms (so some start after the caller is done); ps_test_spawn_wait waits
 * for all of them to end. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

static atomic_int ps_test_spawned_live;

typedef struct ps_test_spawned {
    void (*fn)(void *arg);
    void *arg;
    unsigned delay_us;
} ps_test_spawned_t;

static inline void *ps_test_spawned_main(void *a)
{
    ps_test_spawned_t t = *(ps_test_spawned_t *)a;
    free(a);
    usleep(t.delay_us);
    t.fn(t.arg);
    atomic_fetch_sub(&ps_test_spawned_live, 1);
    return NULL;
}

static inline bool ps_test_spawn(void *pool, void (*fn)(void *arg), void *arg)
{
    (void)pool;
    ps_test_spawned_t *t = malloc(sizeof(*t));
    assert_non_null(t);
    *t = (ps_test_spawned_t){fn, arg, (unsigned)(rand() % 3000)};
    pthread_t th;
    atomic_fetch_add(&ps_test_spawned_live, 1);
    if (pthread_create(&th, NULL, ps_test_spawned_main, t) != 0) {
        atomic_fetch_sub(&ps_test_spawned_live, 1);
        free(t);
        return false;
    }
    pthread_detach(th);
    return true;
}

static inline void ps_test_spawn_wait(void)
{
    while (atomic_load(&ps_test_spawned_live) > 0)
        usleep(1000);
}

#endif
