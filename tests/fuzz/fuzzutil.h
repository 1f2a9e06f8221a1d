/*
 * fuzzutil.h - what the fuzz targets share: CHECK (abort on a finding, with a message when
 * PS_FUZZ_NAME names the target), the check of an error position, the snappy step of the
 * remote codecs' targets (PS_FUZZ_SNAPPY), and for the seed writers (LLVMFuzzerInitialize with
 * PS_FUZZ_*_SEEDS=DIR) a fixed-seed generator and writing one seed file.
 *
 * Define PS_FUZZ_NAME ("fuzz_remote") and PS_FUZZ_SNAPPY, as needed, before including this.
 */
#ifndef PS_FUZZUTIL_H
#define PS_FUZZUTIL_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"

#ifdef PS_FUZZ_NAME
/* Prints "target: cond: message" on stderr and aborts. */
__attribute__((noreturn, format(printf, 3, 4))) static inline void ps_fuzz_fail(const char *target, const char *cond,
                                                                                const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "%s: %s: ", target, cond);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    abort();
}

/* CHECK(cond, fmt, ...): a finding when cond is false, said on stderr. */
#define CHECK(cond, ...)                                                                                               \
    do {                                                                                                               \
        if (!(cond))                                                                                                   \
            ps_fuzz_fail(PS_FUZZ_NAME, #cond, __VA_ARGS__);                                                            \
    } while (0)

/* A decoder's failure is clean: rc is PS_EINVAL or PS_ETOOBIG, and err says it with a message. */
static inline void ps_fuzz_check_decode_error(int rc, const ps_err_t *err)
{
    CHECK(rc == PS_EINVAL || rc == PS_ETOOBIG, "decode returned %d: %s", rc, err->msg);
    CHECK(err->code == rc && err->msg[0] != '\0', "error without a message");
}
#else
/* CHECK(cond): a finding when cond is false. */
#define CHECK(c)                                                                                                       \
    do {                                                                                                               \
        if (!(c))                                                                                                      \
            abort();                                                                                                   \
    } while (0)
#endif

/* A parser's error position, when there is one, is in the input (data, size), and the message
 * starts with its line:column. */
static inline void ps_fuzz_check_pos(const ps_err_t *err, const uint8_t *data, size_t size)
{
    if (!(err->pos >= -1 && (err->pos < 0 || (size_t)err->pos <= size)))
        abort();
    if (err->pos < 0)
        return;
    unsigned line = 1;
    size_t bol = 0;
    for (size_t i = 0; i < (size_t)err->pos; i++)
        if (data[i] == '\n') {
            line++;
            bol = i + 1;
        }
    char want[48];
    int n = snprintf(want, sizeof(want), "%u:%zu: ", line, (size_t)err->pos - bol + 1);
    if (!(n > 0 && strncmp(err->msg, want, (size_t)n) == 0))
        abort();
}

#ifdef PS_FUZZ_SNAPPY /* with PS_FUZZ_NAME */
#include <snappy-c.h>

/* The body a remote codec's target decodes: the input after its first byte, taken as the snappy
 * body itself (bit 1 of that byte clear) or as the uncompressed protobuf, compressed here (bit 1
 * set; *z is then the buffer, for the caller to free). */
static inline void ps_fuzz_body(const uint8_t *data, size_t size, const uint8_t **body, size_t *n, char **z)
{
    *body = data + 1;
    *n = size - 1;
    *z = NULL;
    if (data[0] & 2) {
        size_t max = snappy_max_compressed_length(*n);
        *z = malloc(max ? max : 1);
        CHECK(snappy_compress((const char *)*body, *n, *z, &max) == SNAPPY_OK, "compress");
        *body = (const uint8_t *)*z;
        *n = max;
    }
}
#endif

/* One step of a 64-bit LCG (Knuth's MMIX constants): the seeds are the same every run. */
static inline uint64_t ps_fuzz_lcg(uint64_t *x)
{
    return *x = *x * 6364136223846793005ull + 1442695040888963407ull;
}

/* Writes len bytes to DIR/NAME-NN (NN = i, two digits); a file that cannot be written is skipped. */
static inline void ps_fuzz_write_seed(const char *dir, const char *name, int i, const void *data, size_t len)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s-%02d", dir, name, i);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
}

/* On the first call only: write_seeds(dir) when the environment variable env names a directory
 * (run.sh asks a target for the seeds its encoders make that way). */
static inline void ps_fuzz_seeds_once(const char *env, void (*write_seeds)(const char *dir))
{
    static int seeded;
    if (seeded)
        return;
    seeded = 1;
    const char *dir = getenv(env);
    if (dir)
        write_seeds(dir);
}

#endif
