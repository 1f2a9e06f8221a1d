/*
 * fuzz_unsymrec.c - libFuzzer target for the record of the counts of frames without symbols
 * (storage/unsymrec.c).
 *
 * Arbitrary bytes go through ps_unsym_rec_decode; none may crash. A record that decodes must
 * satisfy its invariants (at least one profile and one sample, first <= last, the counts within
 * their caps), encode again to bytes that decode to the same record and encode the same, and
 * merged with itself give twice its counts (saturated) with the same names.
 *
 * Build (clang): tests/fuzz/build.sh; by hand:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
 *     -I <include tree> tests/fuzz/fuzz_unsymrec.c storage/unsymrec.c <core sources> -o fuzz_unsymrec
 * Seeds: PS_FUZZ_UNSYMREC_SEEDS=<dir> writes records the encoder makes into <dir>.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/sat.h"
#include "storage/internal.h"

#include "fuzzutil.h"

static void write_seeds(const char *dir)
{
    ps_unsym_rec_t r[3] = {
        {.profiles = 2, .samples = 46, .first_ts = 1796022364647593488ll, .last_ts = 1796022374647593488ll,
         .nfiles = 1, .files = {58}, .ntypes = 1, .types = {59}, .totals = {860000000}},
        {.profiles = 1, .samples = 1, .first_ts = -5, .last_ts = -5},
        {.profiles = UINT64_MAX, .samples = 7, .first_ts = INT64_MIN, .last_ts = INT64_MAX, .nfiles = 8,
         .files = {0, 1, 2, 3, 4, 5, 6, 7}, .ntypes = 16, .types = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16},
         .totals = {INT64_MIN, INT64_MAX, -1, 1}},
    };
    for (size_t i = 0; i < 3; i++) {
        ps_buf_t b = PS_BUF_INIT;
        ps_unsym_rec_encode(&r[i], &b);
        ps_fuzz_write_seed(dir, "seed", (int)i, b.data, b.len);
        ps_buf_dispose(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_fuzz_seeds_once("PS_FUZZ_UNSYMREC_SEEDS", write_seeds);
    ps_unsym_rec_t r, r2;
    ps_err_t err;
    if (ps_unsym_rec_decode(data, size, &r, &err) != 0) {
        CHECK(err.code == PS_ECORRUPT);
        return 0;
    }
    CHECK(r.profiles >= 1 && r.samples >= 1 && r.first_ts <= r.last_ts);
    CHECK(r.nfiles <= PS_UNSYM_FILES_MAX && r.ntypes <= PS_UNSYM_TYPES_MAX);
    ps_buf_t b = PS_BUF_INIT, b2 = PS_BUF_INIT;
    ps_unsym_rec_encode(&r, &b);
    CHECK(ps_unsym_rec_decode(b.data, b.len, &r2, &err) == 0);
    CHECK(memcmp(&r, &r2, sizeof(r)) == 0);
    ps_unsym_rec_encode(&r2, &b2);
    CHECK(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0);
    /* merged with itself: counts doubled (saturated), names as they were (duplicates in the
     * record merge into their first) */
    ps_unsym_rec_t m = r;
    ps_unsym_rec_merge(&m, &r);
    CHECK(m.profiles == ps_sat_addu(r.profiles, r.profiles) && m.samples == ps_sat_addu(r.samples, r.samples));
    CHECK(m.first_ts == r.first_ts && m.last_ts == r.last_ts);
    CHECK(m.nfiles == r.nfiles && m.ntypes == r.ntypes);
    ps_buf_dispose(&b2);
    ps_buf_dispose(&b);
    return 0;
}
