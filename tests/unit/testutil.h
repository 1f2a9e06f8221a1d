/*
 * testutil.h - what the unit tests share: where the fixtures are and reading files whole. Include
 * after <cmocka.h> (a missing file fails the test).
 */
#ifndef PS_TESTUTIL_H
#define PS_TESTUTIL_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#ifndef PS_TESTDATA
#define PS_TESTDATA "../shared/testdata"
#endif

/** shared/testdata: $PS_TESTDATA, else the path compiled in. */
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

/** shared/testdata/pprof/<rel>, read whole (see ps_test_read_path). */
static inline uint8_t *ps_test_read_fixture(const char *rel, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/pprof/%s", ps_test_testdata(), rel);
    return ps_test_read_path(path, n);
}

#endif
