/*
 * promutil.h - what the remote codec tests (test_remote.c, test_remote_read.c) share: the
 * captured Prometheus files of $PS_TESTDATA/prometheus (bodies and their JSON transcripts) and
 * snappy block-format compression of hand-made bodies. Include after "../testutil.h".
 */
#ifndef PS_TEST_PROMUTIL_H
#define PS_TEST_PROMUTIL_H

#include <jansson.h>
#include <snappy-c.h>

#include "core/mem.h"

/** tests/testdata/prometheus/<name>, read whole (see ps_test_read_path). */
static inline uint8_t *ps_test_read_prom(const char *name, size_t *n)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/prometheus/%s", ps_test_testdata(), name);
    return ps_test_read_path(path, n);
}

/** tests/testdata/prometheus/<name> as JSON; fails the test if it is not. */
static inline json_t *ps_test_read_prom_json(const char *name)
{
    char path[1024];
    json_error_t je;
    snprintf(path, sizeof(path), "%s/prometheus/%s", ps_test_testdata(), name);
    json_t *j = json_load_file(path, 0, &je);
    if (j == NULL)
        fail_msg("%s: %s", path, je.text);
    return j;
}

/** out = raw (n bytes) in the snappy block format. */
static inline void ps_test_snappy(const void *raw, size_t n, ps_buf_t *out)
{
    size_t max = snappy_max_compressed_length(n);
    ps_buf_reset(out);
    char *dst = (char *)ps_buf_reserve(out, max);
    assert_int_equal(snappy_compress(n ? (const char *)raw : "", n, dst, &max), SNAPPY_OK);
    out->len = max;
}

#endif
