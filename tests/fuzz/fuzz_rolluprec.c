/*
 * fuzz_rolluprec.c - libFuzzer target for the rollup record (storage/rolluprec.c).
 *
 * The first 9 bytes pick the window (level 0 or 1 from byte 0, its number from the next 8); the rest
 * goes through ps_rollup_decode; none may crash. A record that decodes must lie in its window (at
 * least one profile, oldest <= newest inside it), hold ascending nodes and values >= 1, and encode
 * again to bytes that decode to the same record and encode the same.
 *
 * Build (clang): tests/fuzz/build.sh; by hand:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined -D_GNU_SOURCE \
 *     -I <include tree> tests/fuzz/fuzz_rolluprec.c storage/rolluprec.c <core sources> -o fuzz_rolluprec
 * Seeds: PS_FUZZ_ROLLUPREC_SEEDS=<dir> writes records the encoder makes into <dir>.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "storage/internal.h"

#include "fuzzutil.h"

const int64_t ps_rollup_window[PS_ROLLUP_LEVELS] = {3600ll * 1000000000ll, 86400ll * 1000000000ll};

static void write_seeds(const char *dir)
{
    uint64_t n0[] = {5, 7}, n1[] = {0, 1, 1ull << 40};
    int64_t v0[] = {500000000, 360000000}, v1[] = {1, INT64_MAX, 3};
    ps_rollup_t r[2] = {
        {2, 1796022364647593488ll, 1796022374647593488ll, 20000000000ll, 860000000, 10000000, 2, n0, v0},
        {3, 1796022000000000000ll, 1796022000000000000ll + 3599999999999ll, INT64_MAX, 0, -5, 3, n1, v1},
    };
    for (size_t i = 0; i < 2; i++) {
        ps_buf_t b = PS_BUF_INIT;
        uint8_t lv = 0;
        uint64_t w = 1796022000000000000ull / 3600000000000ull;
        ps_buf_append(&b, &lv, 1);
        ps_buf_append(&b, &w, 8);
        ps_rollup_encode(&r[i], &b);
        ps_fuzz_write_seed(dir, "seed", (int)i, b.data, b.len);
        ps_buf_dispose(&b);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    ps_fuzz_seeds_once("PS_FUZZ_ROLLUPREC_SEEDS", write_seeds);
    if (size < 9)
        return 0;
    int level = data[0] & 1;
    int64_t len = ps_rollup_window[level];
    uint64_t wn;
    memcpy(&wn, data + 1, 8);
    int64_t ws = (int64_t)(wn % (uint64_t)(((int64_t)1 << 62) / len)) * len;
    ps_arena_t a = PS_ARENA_INIT, a2 = PS_ARENA_INIT;
    ps_rollup_t r, r2;
    ps_err_t err;
    if (ps_rollup_decode(data + 9, size - 9, ws, len, &a, &r, &err) != 0) {
        CHECK(err.code == PS_ECORRUPT);
        ps_arena_dispose(&a);
        return 0;
    }
    CHECK(r.profiles >= 1 && r.min_ts >= ws && r.min_ts <= r.max_ts && r.max_ts < ws + len);
    CHECK(r.duration >= 0 && r.total >= 0);
    for (uint32_t i = 0; i < r.n; i++)
        CHECK(r.values[i] >= 1 && (i == 0 || r.nodes[i] > r.nodes[i - 1]));
    ps_buf_t b = PS_BUF_INIT, b2 = PS_BUF_INIT;
    ps_rollup_encode(&r, &b);
    CHECK(ps_rollup_decode(b.data, b.len, ws, len, &a2, &r2, &err) == 0);
    CHECK(r2.profiles == r.profiles && r2.min_ts == r.min_ts && r2.max_ts == r.max_ts && r2.n == r.n);
    CHECK(r2.duration == r.duration && r2.total == r.total && r2.period == r.period);
    CHECK(r.n == 0 || (memcmp(r.nodes, r2.nodes, r.n * sizeof(uint64_t)) == 0 &&
                       memcmp(r.values, r2.values, r.n * sizeof(int64_t)) == 0));
    ps_rollup_encode(&r2, &b2);
    CHECK(b2.len == b.len && memcmp(b2.data, b.data, b.len) == 0);
    ps_buf_dispose(&b2);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
    ps_arena_dispose(&a2);
    return 0;
}
