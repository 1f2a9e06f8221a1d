/*
 * fuzzutil.h - what the fuzz targets' seed writers share (LLVMFuzzerInitialize with
 * PS_FUZZ_*_SEEDS=DIR): a fixed-seed generator and writing one seed file.
 */
#ifndef PS_FUZZUTIL_H
#define PS_FUZZUTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

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

#endif
