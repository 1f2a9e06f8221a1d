/*
 * fuzz_float_log.c - libFuzzer target for the float sample log's record (storage/float_log.c).
 *
 * - first byte's bit 7 clear: the rest is a record. ps_flog_decode must not crash or read outside
 *   it (ASan); it fails with PS_ECORRUPT "float log: ..." and a sid range [from, to] (empty when
 *   from > to: the damage is past the last sid), keeping only whole runs of the sids below from, or gives runs sorted by sid with 1..65535 samples each, t
 *   strictly increasing within ±9223372036854 ms, sids up to the record's last. Those entries
 *   re-encode to a record that decodes to the same entries.
 * - bit 7 set: the rest is entries (10 bytes: a sid step of 0..3, a timestamp step, 8 bytes of
 *   value bits); encode, decode: the same entries.
 *
 * Build: tests/fuzz/build.sh (clang, ASan + UBSan); run: tests/fuzz/run.sh 60 fuzz_float_log.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PS_FUZZ_NAME "fuzz_float_log"
#include "storage/float_log.h"

#include "fuzzutil.h"

static void check_entries(const ps_flog_ent_t *e, size_t n)
{
    size_t run = 0;
    for (size_t i = 0; i < n; i++) {
        CHECK(e[i].t >= -PS_FLOG_T_MAX && e[i].t <= PS_FLOG_T_MAX, "t out of range");
        if (i > 0 && e[i].sid == e[i - 1].sid) {
            CHECK(e[i].t > e[i - 1].t, "t not increasing");
            CHECK(++run < PS_FLOG_RUN_MAX, "run too long");
        } else {
            CHECK(i == 0 || e[i].sid > e[i - 1].sid, "sids not increasing");
            run = 0;
        }
    }
}

static void roundtrip(const ps_flog_ent_t *e, size_t n)
{
    ps_buf_t b = PS_BUF_INIT, d = PS_BUF_INIT;
    ps_err_t err;
    uint64_t from, to;
    ps_flog_encode(e, n, &b);
    CHECK(ps_flog_decode(b.data, b.len, &d, &from, &to, &err) == 0, "re-encoded record fails: %s", err.msg);
    CHECK(d.len == n * sizeof(*e) && memcmp(d.data, e, d.len) == 0, "re-encoded record decodes to other entries");
    ps_buf_dispose(&b);
    ps_buf_dispose(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    if (!(data[0] & 0x80)) {
        ps_buf_t d = PS_BUF_INIT;
        ps_err_t err;
        uint64_t from, to;
        int rc = ps_flog_decode(data + 1, size - 1, &d, &from, &to, &err);
        const ps_flog_ent_t *e = (const ps_flog_ent_t *)d.data;
        size_t n = d.len / sizeof(*e);
        CHECK(d.len % sizeof(*e) == 0, "partial entry");
        check_entries(e, n);
        if (rc != 0) {
            CHECK(rc == PS_ECORRUPT && err.code == PS_ECORRUPT && strncmp(err.msg, "float log: ", 11) == 0,
                  "bad error %d: %s", rc, err.msg);
            CHECK(n == 0 || e[n - 1].sid < from, "kept entries of a damaged sid");
        } else {
            CHECK(n >= 1, "no entries");
            roundtrip(e, n);
        }
        ps_buf_dispose(&d);
        return 0;
    }
    size_t k = (size - 1) / 10;
    if (k == 0)
        return 0;
    ps_flog_ent_t *e = malloc(k * sizeof(*e));
    const uint8_t *p = data + 1;
    uint64_t sid = 1;
    int64_t t = -PS_FLOG_T_MAX + (int64_t)(p[0] & 0x3f) * 1000;
    size_t n = 0, run = 0;
    for (size_t i = 0; i < k; i++, p += 10) {
        uint64_t u;
        memcpy(&u, p + 2, 8);
        uint64_t dsid = p[0] & 3;
        if (i > 0 && (dsid > 0 || run + 1 >= PS_FLOG_RUN_MAX)) {
            sid += dsid ? dsid : 1;
            run = 0;
            t = (int64_t)(u % 2000000) - 1000000;
        } else if (i > 0) {
            int64_t step = p[1] == 0xff ? (int64_t)(u >> 30) + 1 : 1 + p[1];
            if (step > PS_FLOG_T_MAX - t)
                break;
            t += step;
            run++;
        }
        e[n++] = (ps_flog_ent_t){sid, t, u};
    }
    roundtrip(e, n);
    free(e);
    return 0;
}
