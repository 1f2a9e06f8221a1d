/*
 * test_format.c - the hex examples of docs/FORMAT.md and of the storage file heads (storage/head.c,
 * storage/chunk.c) are what the real encoders write, byte for byte. The examples are read from the
 * files themselves (PS_SOURCE_DIR), so a doc that drifts from the code fails here.
 *
 * How the examples are found:
 * - FORMAT.md, inside ``` blocks: a line "<database> key <hex>" starts a record of that database,
 *   a line "value <hex>" starts its value, and a line of hex alone continues the field above.
 *   Hex is tokens of hex digit pairs ("01", "0000000000000001") separated by single spaces; two
 *   spaces end it (the annotation follows). The records are compared, in order, with a table of
 *   the values they describe, encoded here with the storage encoders.
 * - The chunk example (chunk.c's head comment, repeated in FORMAT.md): the hex lines after
 *   "EXAMPLE:" ... "N bytes:" up to "Decoding validates", decoded with ps_chunk_decode and compared
 *   with the data it describes, and the encoding of that data compared with the bytes.
 * - head.c: the line after "Example (", tokens separated by " | ".
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

#include "core/encode.h"
#include "core/hash.h"
#include "core/labels.h"
#include "core/varint.h"
#include "proto/recording.h"
#include "storage/chunk.h"
#include "storage/float_dense.h"
#include "storage/internal.h"
#include "storage/xorchunk.h"

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    return -1;
}

/* Appends the hex run starting at p (up to the line's end, two spaces, or a token that is not hex
 * digit pairs; tokens equal to sep are skipped) to out. Returns the bytes appended. */
static size_t hex_run(const char *p, const char *sep, ps_buf_t *out)
{
    size_t n = 0, seplen = sep ? strlen(sep) : 0;
    for (;;) {
        if (sep && strncmp(p, sep, seplen) == 0 && (p[seplen] == ' ' || p[seplen] == '\n')) {
            p += seplen;
        } else {
            const char *q = p;
            while (hexval(*q) >= 0)
                q++;
            if (q == p || (q - p) % 2 != 0 || !(*q == ' ' || *q == '\n' || *q == 0))
                return n;
            for (const char *c = p; c < q; c += 2) {
                ps_buf_putc(out, (uint8_t)(hexval(c[0]) << 4 | hexval(c[1])));
                n++;
            }
            p = q;
        }
        if (p[0] != ' ' || p[1] == ' ' || p[1] == '\n' || p[1] == 0)
            return n;
        p++;
    }
}

static const char *skip_ws(const char *p)
{
    while (*p == ' ')
        p++;
    return p;
}

/* If p starts with word followed by a space, returns what follows the spaces after it. */
static const char *word(const char *p, const char *w)
{
    size_t n = strlen(w);
    if (strncmp(p, w, n) != 0 || p[n] != ' ')
        return NULL;
    return skip_ws(p + n);
}

/* ---- FORMAT.md records ---- */

typedef struct rec {
    char db[16];
    ps_buf_t key, value;
    int line;
} rec_t;

static const char *const dbs[] = {"info", "sym", "sym_hash", "tree", "nodes", "series", "series_hash",
                                  "postings", "head", "chunks", "fchunks", "fhead", "meta", "fprefix",
                                  "spans", "spanparts", "uuids", "adhoc", "unsym", "rollups", "ltimes"};

static size_t parse_records(const char *doc, rec_t *recs, size_t max)
{
    size_t n = 0;
    bool fence = false;
    rec_t *cur = NULL;
    ps_buf_t *field = NULL;
    int line = 0;
    for (const char *p = doc; *p; p = strchr(p, '\n') ? strchr(p, '\n') + 1 : p + strlen(p)) {
        line++;
        if (strncmp(p, "```", 3) == 0) {
            fence = !fence;
            cur = NULL;
            field = NULL;
            continue;
        }
        if (!fence)
            continue;
        const char *q = skip_ws(p), *h;
        bool started = false;
        for (size_t i = 0; i < sizeof(dbs) / sizeof(dbs[0]); i++) {
            const char *after = word(q, dbs[i]);
            if (after && (h = word(after, "key")) != NULL) {
                assert_true(n < max);
                cur = &recs[n++];
                memset(cur, 0, sizeof(*cur));
                snprintf(cur->db, sizeof(cur->db), "%s", dbs[i]);
                cur->line = line;
                field = &cur->key;
                if (hex_run(h, NULL, field) == 0)
                    fail_msg("FORMAT.md:%d: no hex after \"key\"", line);
                started = true;
                break;
            }
        }
        if (started || cur == NULL)
            continue;
        if ((h = word(q, "value")) != NULL) {
            field = &cur->value;
            if (hex_run(h, NULL, field) == 0)
                fail_msg("FORMAT.md:%d: no hex after \"value\"", line);
        } else {
            hex_run(q, NULL, field);
        }
    }
    return n;
}

static char *hex(const ps_buf_t *b)
{
    char *s = malloc(b->len * 2 + 1);
    for (size_t i = 0; i < b->len; i++)
        sprintf(s + 2 * i, "%02x", b->data[i]);
    s[b->len * 2] = 0;
    return s;
}

static void expect_equal(const char *what, int line, const ps_buf_t *got, const ps_buf_t *want)
{
    if (got->len == want->len && (got->len == 0 || memcmp(got->data, want->data, got->len) == 0))
        return;
    char *g = hex(got), *w = hex(want);
    fail_msg("%s (line %d):\n  doc     %s\n  encoder %s", what, line, g, w);
}

/* The series of the example: __name__, instance, job. */
static void example_labels(ps_buf_t *out)
{
    ps_label_pair_t pairs[3] = {
        {.name = "__name__", .nlen = 8, .value = "process_cpu:samples:count:cpu:nanoseconds:delta", .vlen = 47},
        {.name = "instance", .nlen = 8, .value = "a:6060", .vlen = 6},
        {.name = "job", .nlen = 3, .value = "api", .vlen = 3},
    };
    ps_labels_t ls = {3, pairs};
    ps_labels_encode(&ls, out);
}

static void test_format_md_records(void **state)
{
    char *doc = ps_test_read_source("docs/FORMAT.md");
    rec_t recs[32];
    size_t n = parse_records(doc, recs, 32);
    ps_buf_t k = PS_BUF_INIT, v = PS_BUF_INIT, labels = PS_BUF_INIT;
    example_labels(&labels);
    size_t i = 0;
#define NEXT(dbname)                                                                                                  \
    do {                                                                                                              \
        if (i >= n)                                                                                                   \
            fail_msg("FORMAT.md: %zu example records, expected a %s record next", n, dbname);                        \
        if (strcmp(recs[i].db, dbname) != 0)                                                                          \
            fail_msg("FORMAT.md:%d: a %s record where the test expects %s", recs[i].line, recs[i].db, dbname);         \
        ps_buf_reset(&k);                                                                                             \
        ps_buf_reset(&v);                                                                                             \
    } while (0)
#define CHECK()                                                                                                       \
    do {                                                                                                              \
        expect_equal("key", recs[i].line, &recs[i].key, &k);                                                          \
        expect_equal("value", recs[i].line, &recs[i].value, &v);                                                      \
        i++;                                                                                                          \
    } while (0)

    /* info["schema"] = version (the encoding ps_store_open writes) */
    NEXT("info");
    ps_buf_append(&k, "schema", 6);
    ps_put_be32(&v, PS_SCHEMA_VERSION);
    CHECK();

    /* string 1 = "samples", and its hash index entry */
    NEXT("sym");
    ps_buf_putc(&k, SYM_STRING);
    ps_put_be64(&k, 1);
    ps_buf_append(&v, "samples", 7);
    CHECK();
    NEXT("sym_hash");
    ps_buf_putc(&k, SYM_STRING);
    ps_put_be64(&k, ps_hash64("samples", 7, SYM_STRING));
    ps_put_be64(&v, 1);
    CHECK();

    /* the stack tree: node 1 = root -> label set 1, node 2 = node 1 -> location 11 */
    NEXT("nodes");
    ps_put_be64(&k, 1);
    ps_put_be64(&v, 0);
    ps_put_be64(&v, PS_ITEM_LABELSET | 1);
    CHECK();
    NEXT("nodes");
    ps_put_be64(&k, 2);
    ps_put_be64(&v, 1);
    ps_put_be64(&v, 11);
    CHECK();
    NEXT("tree");
    ps_put_be64(&k, 1);
    ps_put_be64(&k, 11);
    ps_put_be64(&v, 2);
    CHECK();

    /* series 1, its hash entry and one of its postings */
    NEXT("series");
    ps_put_be64(&k, 1);
    ps_series_rec_t r = {PS_SERIES_PROFILE, 1796022367779241333ll, 1796022364647593488ll, INT64_MIN, 2, labels.data, labels.len};
    ps_series_rec_encode(&r, &v);
    CHECK();
    ps_series_rec_t back;
    assert_int_equal(ps_series_rec_decode(recs[i - 1].value.data, recs[i - 1].value.len, &back), 0);
    assert_int_equal(back.last_ts, 1796022367779241333ll);
    assert_int_equal(back.head_count, 2);
    NEXT("series_hash");
    ps_put_be64(&k, ps_hash64(labels.data, labels.len, 0x5e41e5));
    ps_put_be64(&v, 1);
    CHECK();
    NEXT("postings");
    ps_buf_append(&k, "job\0api", 7);
    ps_put_be64(&v, 1);
    CHECK();

    /* its label times (ltimes.c, schema 10): series 1's two profiles fall in one granule */
    NEXT("ltimes");
    ps_buf_append(&k, "job\0api", 7);
    assert_true(ps_ltimes_same_granule(1796022364647593488ll, 1796022367779241333ll));
    ps_ltimes_rec_encode(1796022364647593488ll, 1796022364647593488ll, &v);
    CHECK();

    /* a head record of series 2 */
    NEXT("head");
    uint8_t kb[16];
    ps_key_sid_ts(kb, 2, 1796022364647593488ll);
    ps_buf_append(&k, kb, 16);
    uint64_t nodes[3] = {12, 25, 29};
    int64_t values[3] = {10000000, 10000000, 20000000};
    ps_head_encode(3116928839ll, 10000000, nodes, values, 3, &v);
    CHECK();
    ps_arena_t a = PS_ARENA_INIT;
    ps_stored_profile_t sp;
    assert_int_equal(ps_head_decode(recs[i - 1].value.data, recs[i - 1].value.len, &a, &sp), 0);
    assert_int_equal(sp.total, 40000000);
    assert_int_equal(sp.n, 3);
    ps_arena_dispose(&a);

    /* a float series (5): its record, a closed chunk (the XOR example), its head, metadata */
    ps_buf_t flabels = PS_BUF_INIT;
    ps_labels_t fls = {0};
    ps_arena_t fa = PS_ARENA_INIT;
    ps_labels_set(&fls, &fa, "__name__", 8, "gotarget_kernel_iterations_total", 32);
    ps_labels_set(&fls, &fa, "kernel", 6, "matmul", 6);
    ps_labels_encode(&fls, &flabels);
    NEXT("series");
    ps_put_be64(&k, 5);
    ps_series_rec_t fr = {PS_SERIES_FLOAT, 0, 0, 0, 0, flabels.data, flabels.len};
    ps_series_rec_encode(&fr, &v);
    CHECK();
    assert_int_equal(ps_series_rec_decode(recs[i - 1].value.data, recs[i - 1].value.len, &back), 0);
    assert_int_equal(back.kind, PS_SERIES_FLOAT);
    NEXT("fchunks");
    ps_key_sid_ts(kb, 5, 1796021926802ll * 1000000);
    ps_buf_append(&k, kb, 16);
    ps_buf_putc(&v, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_t app;
    ps_xor_app_init(&app, &v);
    assert_int_equal(ps_xor_app_append(&app, 1796021924802ll, 80965.0, NULL), 0);
    assert_int_equal(ps_xor_app_append(&app, 1796021925802ll, 81394.0, NULL), 0);
    assert_int_equal(ps_xor_app_append(&app, 1796021926802ll, 81801.0, NULL), 0);
    CHECK();
    NEXT("fhead");
    ps_put_be64(&k, 5);
    ps_buf_putc(&v, PS_FLOAT_CHUNK_ENC_XOR);
    ps_xor_app_init(&app, &v);
    assert_int_equal(ps_xor_app_append(&app, 1796021927802ll, 82210.0, NULL), 0);
    CHECK();
    NEXT("meta");
    ps_buf_append(&k, "gotarget_kernel_iterations_total", 32);
    ps_metric_meta_t mm = {"gotarget_kernel_iterations_total", 32, 1, "Iterations of the compute kernels.", 34, "", 0};
    ps_meta_rec_encode(&mm, &v);
    CHECK();
    /* series 6: the two chunks of series 5 packed into one record */
    NEXT("fchunks");
    ps_key_sid_ts(kb, 6, 1796021927802ll * 1000000);
    ps_buf_append(&k, kb, 16);
    const ps_buf_t *closed = &recs[i - 3].value, *open = &recs[i - 2].value; /* checked above */
    ps_float_pack_entry_t pe[2] = {{1796021924802ll, 1796021926802ll, closed->data + 1, closed->len - 1},
                              {1796021927802ll, 1796021927802ll, open->data + 1, open->len - 1}};
    ps_float_pack_encode(PS_FLOAT_CHUNK_ENC_PACKED, pe, 2, &v);
    CHECK();
    /* series 7: the XOR example's chunk (series 5's closed one) as an open chunk split at 16, the
     * prefix written by transaction 42 */
    NEXT("fprefix");
    ps_put_be64(&k, 42);
    ps_put_be64(&k, 7);
    ps_float_prefix_encode(closed->data + 1, 16, &v);
    CHECK();
    NEXT("fhead");
    ps_put_be64(&k, 7);
    ps_float_head_encode_tail(closed->data + 1, closed->len - 1, 16, 42, &v);
    CHECK();
    /* series 5's head, padded (schema 11): 22 bytes written as 32 */
    NEXT("fhead");
    ps_put_be64(&k, 5);
    {
        ps_buf_t h5 = PS_BUF_INIT;
        ps_xor_app_t a5;
        ps_xor_app_init(&a5, &h5);
        assert_int_equal(ps_xor_app_append(&a5, 1796021927802ll, 82210.0, NULL), 0);
        size_t size = 0;
        ps_float_head_encode_padded(h5.data, h5.len, 0, 0, &size, &v);
        assert_int_equal(size, 32);
        ps_buf_dispose(&h5);
    }
    CHECK();
    /* series 8: series 5's closed chunk as a dense chunk (schema 4); series 9: series 5's two
     * chunks packed dense */
    int64_t dt[4] = {1796021924802ll, 1796021925802ll, 1796021926802ll, 1796021927802ll};
    double dvals[4] = {80965.0, 81394.0, 81801.0, 82210.0};
    uint64_t dv[4];
    memcpy(dv, dvals, sizeof(dv));
    NEXT("fchunks");
    ps_key_sid_ts(kb, 8, 1796021926802ll * 1000000);
    ps_buf_append(&k, kb, 16);
    ps_buf_putc(&v, PS_FLOAT_CHUNK_ENC_DENSE);
    ps_float_dense_encode(dt, dv, 3, 0, &v);
    CHECK();
    ps_buf_t xback = PS_BUF_INIT; /* it transcodes to series 5's XOR chunk */
    assert_int_equal(ps_float_dense_to_xor(recs[i - 1].value.data + 1, recs[i - 1].value.len - 1, 0, &xback, NULL), 0);
    assert_int_equal(xback.len, closed->len - 1);
    assert_memory_equal(xback.data, closed->data + 1, xback.len);
    ps_buf_dispose(&xback);
    NEXT("fchunks");
    ps_key_sid_ts(kb, 9, 1796021927802ll * 1000000);
    ps_buf_append(&k, kb, 16);
    ps_buf_t d0 = PS_BUF_INIT, d1 = PS_BUF_INIT;
    ps_float_dense_encode(dt, dv, 3, dt[0], &d0);
    ps_float_dense_encode(dt + 3, dv + 3, 1, dt[3], &d1);
    ps_float_pack_entry_t de[2] = {{dt[0], dt[2], d0.data, d0.len}, {dt[3], dt[3], d1.data, d1.len}};
    ps_float_pack_encode(PS_FLOAT_CHUNK_ENC_DPACKED, de, 2, &v);
    CHECK();
    ps_buf_dispose(&d0);
    ps_buf_dispose(&d1);
    ps_buf_dispose(&flabels);
    ps_arena_dispose(&fa);

    /* a setting (settings.c): "setting:" name -> modified ms (sign flipped) and the value */
    NEXT("info");
    ps_buf_append(&k, "setting:pluginSettings", 22);
    ps_put_be64(&v, (uint64_t)2000 ^ (1ull << 63));
    ps_buf_append(&v, "new", 3);
    CHECK();
    /* a recording rule (recrules.c): "rrule:" id -> generation (sign flipped) and a binary
     * RecordingRuleStore (proto/recording.c), which decodes to the rule */
    NEXT("info");
    ps_buf_append(&k, "rrule:kernel", 12);
    ps_put_be64(&v, (uint64_t)2 ^ (1ull << 63));
    ps_buf_append(&v, "\x0a\x06kernel\x12\x13profiles_recorded_k", 29);
    {
        ps_arena_t ra = PS_ARENA_INIT;
        ps_rr_rule_t rr;
        ps_err_t rerr;
        assert_int_equal(ps_rr_store_decode(v.data + 8, v.len - 8, &ra, &rr, &rerr), 0);
        assert_string_equal(rr.id, "kernel");
        assert_string_equal(rr.metric_name, "profiles_recorded_k");
        ps_arena_dispose(&ra);
    }
    CHECK();

    /* the span index (schema 5): span 0123456789abcdef in series 2's profile of the head example */
    NEXT("spans");
    uint8_t sk[28];
    ps_span_key(sk, 0x0123456789abcdefull, 2, 1796022364647593488ll);
    ps_buf_append(&k, sk, 28);
    CHECK();
    /* its span parts: node 12 = 10 ms, node 29 = 5 ms of that span, with a trace id */
    NEXT("spanparts");
    ps_key_sid_ts(kb, 2, 1796022364647593488ll);
    ps_buf_append(&k, kb, 16);
    {
        const char *tr = "4bf92f3577b34da6a3ce929d0e0e4736";
        ps_span_part_t parts[2] = {{.span = 0x0123456789abcdefull, .node = 12, .value = 10000000, .trace = tr, .trace_len = 32},
                                   {.span = 0x0123456789abcdefull, .node = 29, .value = 5000000, .trace = tr, .trace_len = 32}};
        ps_span_parts_encode(parts, 2, &v);
    }
    CHECK();
    /* that profile's client id 7c9e6679-7425-40de-944b-e07fc1f90ae7 */
    uint8_t uuid[16];
    assert_true(ps_uuid_scan("7c9e6679-7425-40de-944b-e07fc1f90ae7", 36, uuid) == 0);
    NEXT("uuids");
    ps_buf_append(&k, sk, 4); /* the hour, as in the spans key */
    ps_buf_append(&k, uuid, 16);
    ps_buf_append(&k, kb, 16);
    CHECK();

    /* frames without symbols (unsym.c, schema 6): the hour of the span example, build id string 57 */
    NEXT("unsym");
    ps_buf_append(&k, sk, 4);
    ps_put_be64(&k, 57);
    {
        ps_unsym_rec_t r = {.profiles = 2, .samples = 46, .first_ts = 1796022364647593488ll,
                            .last_ts = 1796022374647593488ll, .nfiles = 1, .files = {58}, .ntypes = 1,
                            .types = {59}, .totals = {860000000}};
        ps_unsym_rec_encode(&r, &v);
        ps_unsym_rec_t back;
        ps_err_t uerr;
        assert_int_equal(ps_unsym_rec_decode(v.data, v.len, &back, &uerr), 0);
        assert_memory_equal(&back, &r, sizeof(r));
    }
    CHECK();

    /* a rollup (rollup.c, schema 8): series 2's hour of the span example, two profiles */
    NEXT("rollups");
    ps_put_be64(&k, 2);
    ps_buf_putc(&k, 0);
    ps_put_be64(&k, ps_ts_key(1796022000000000000ll));
    {
        uint64_t nodes[] = {5, 7};
        int64_t values[] = {500000000, 360000000};
        ps_rollup_t r = {2, 1796022364647593488ll, 1796022374647593488ll, 20000000000ll, 860000000, 10000000, 2, nodes,
                         values};
        ps_rollup_encode(&r, &v);
        ps_rollup_t back;
        ps_err_t rerr;
        ps_arena_t ra = PS_ARENA_INIT;
        assert_int_equal(ps_rollup_decode(v.data, v.len, 1796022000000000000ll, 3600000000000ll, &ra, &back, &rerr), 0);
        assert_int_equal(back.n, 2);
        assert_int_equal(back.values[1], 360000000);
        assert_int_equal(back.max_ts, 1796022374647593488ll);
        ps_arena_dispose(&ra);
    }
    CHECK();

    /* an ad hoc profile (adhoc.c): id -> 01, uploaded ms (sign flipped), the file as uploaded */
    NEXT("adhoc");
    ps_buf_append(&k, "01M92BW73SCST6GMMMKYGWX9W1-a", 28);
    ps_buf_putc(&v, 0x01);
    ps_put_be64(&v, (uint64_t)1796449639545ll ^ (1ull << 63));
    ps_buf_append(&v, "a;b 1\n", 6);
    CHECK();

    if (i != n)
        fail_msg("FORMAT.md:%d: a %s example the test does not know: add it to test_format.c", recs[i].line,
                 recs[i].db);
    for (size_t j = 0; j < n; j++) {
        ps_buf_dispose(&recs[j].key);
        ps_buf_dispose(&recs[j].value);
    }
    ps_buf_dispose(&k);
    ps_buf_dispose(&v);
    ps_buf_dispose(&labels);
    free(doc);
#undef NEXT
#undef CHECK
}

/* ---- the chunk example ---- */

/* Extracts the chunk example from text (chunk.c or FORMAT.md): bytes and the stated length. */
static void chunk_example(const char *text, const char *name, ps_buf_t *out, long *stated)
{
    const char *ex = strstr(text, "EXAMPLE:");
    if (ex == NULL)
        fail_msg("%s: no chunk EXAMPLE", name);
    const char *b = strstr(ex, " bytes:\n");
    const char *end = strstr(ex, "Decoding validates");
    assert_non_null(b);
    assert_non_null(end);
    const char *num = b;
    while (num > ex && num[-1] >= '0' && num[-1] <= '9')
        num--;
    *stated = strtol(num, NULL, 10);
    for (const char *p = strchr(b, '\n') + 1; p < end; p = strchr(p, '\n') + 1) {
        const char *q = skip_ws(p);
        if (*q == '*')
            q = skip_ws(q + 1);
        hex_run(q, NULL, out);
    }
}

/* The example's data: 3 profiles 10 s apart from 1700000000 s, 10 s long, period 10 ms; node 1 =
 * 30 ms in every profile, node 5 = 10 ms in profile 1 only, node 6 = 20 ms, absent, 40 ms. */
static void described_chunk(ps_chunk_data_t *d)
{
    static int64_t ts[3] = {1700000000000000000ll, 1700000010000000000ll, 1700000020000000000ll};
    static int64_t dur[3] = {10000000000ll, 10000000000ll, 10000000000ll};
    static int64_t per[3] = {10000000, 10000000, 10000000};
    static int64_t tot[3] = {50000000, 40000000, 70000000};
    static uint64_t ids[3] = {1, 5, 6};
    static uint32_t off[4] = {0, 3, 4, 6};
    static uint32_t idx[6] = {0, 1, 2, 1, 0, 2};
    static int64_t val[6] = {30000000, 30000000, 30000000, 10000000, 20000000, 40000000};
    *d = (ps_chunk_data_t){3, ts, dur, per, tot, 3, ids, off, idx, val};
}

static void check_chunk_example(const char *text, const char *name)
{
    ps_buf_t doc = PS_BUF_INIT, enc = PS_BUF_INIT;
    long stated = 0;
    chunk_example(text, name, &doc, &stated);
    ps_chunk_data_t want, got;
    described_chunk(&want);
    ps_err_t err;
    assert_int_equal(ps_chunk_encode(&want, &enc, &err), 0);
    expect_equal(name, 0, &doc, &enc);
    assert_int_equal(doc.len, stated);
    ps_arena_t a = PS_ARENA_INIT;
    if (ps_chunk_decode(doc.data, doc.len, &a, &got, &err) != 0)
        fail_msg("%s: example does not decode: %s", name, err.msg);
    assert_int_equal(got.n, 3);
    assert_int_equal(got.nnodes, 3);
    for (uint32_t i = 0; i < 3; i++) {
        assert_int_equal(got.ts[i], want.ts[i]);
        assert_int_equal(got.durations[i], want.durations[i]);
        assert_int_equal(got.periods[i], want.periods[i]);
        assert_int_equal(got.totals[i], want.totals[i]);
        assert_int_equal(got.node_ids[i], want.node_ids[i]);
    }
    for (uint32_t i = 0; i <= 3; i++)
        assert_int_equal(got.off[i], want.off[i]);
    for (uint32_t i = 0; i < 6; i++) {
        assert_int_equal(got.idx[i], want.idx[i]);
        assert_int_equal(got.val[i], want.val[i]);
    }
    ps_arena_dispose(&a);
    ps_buf_dispose(&doc);
    ps_buf_dispose(&enc);
}

static void test_chunk_example(void **state)
{
    char *c = ps_test_read_source("storage/chunk.c"), *md = ps_test_read_source("docs/FORMAT.md");
    check_chunk_example(c, "storage/chunk.c");
    check_chunk_example(md, "docs/FORMAT.md");
    free(c);
    free(md);
}

/* FORMAT.md repeats chunk.c's head comment: the same text, line by line. */
static void test_chunk_spec_repeated(void **state)
{
    char *c = ps_test_read_source("storage/chunk.c"), *md = ps_test_read_source("docs/FORMAT.md");
    ps_test_doc_repeats_comment(c, md, "chunk.c - the chunk encoding PS_CHUNK_ENC_V1", "storage/chunk.c");
    free(c);
    free(md);
}

/* ---- head.c's example ---- */

static void test_head_example(void **state)
{
    char *text = ps_test_read_source("storage/head.c");
    const char *ex = strstr(text, "Example (");
    assert_non_null(ex);
    const char *p = skip_ws(strchr(ex, '\n') + 1);
    assert_true(*p == '*');
    ps_buf_t doc = PS_BUF_INIT, enc = PS_BUF_INIT;
    hex_run(skip_ws(p + 1), "|", &doc);
    /* "duration 3 s, period 10 ms, nodes 5 -> 20, 9 -> 10" */
    uint64_t nodes[2] = {5, 9};
    int64_t values[2] = {20, 10};
    ps_head_encode(3000000000ll, 10000000, nodes, values, 2, &enc);
    expect_equal("storage/head.c example", 0, &doc, &enc);
    ps_arena_t a = PS_ARENA_INIT;
    ps_stored_profile_t sp;
    assert_int_equal(ps_head_decode(doc.data, doc.len, &a, &sp), 0);
    assert_int_equal(sp.duration, 3000000000ll);
    assert_int_equal(sp.period, 10000000);
    assert_int_equal(sp.total, 30);
    assert_int_equal(sp.n, 2);
    assert_int_equal(sp.nodes[1], 9);
    assert_int_equal(sp.values[1], 10);
    ps_arena_dispose(&a);
    ps_buf_dispose(&doc);
    ps_buf_dispose(&enc);
    free(text);
}

/* The parser itself: two spaces end a run, odd digits and non-hex words are not hex. */
static void test_hex_run(void **state)
{
    ps_buf_t b = PS_BUF_INIT;
    assert_int_equal(hex_run("01 0a0b  0c annotation\n", NULL, &b), 3);
    assert_int_equal(b.data[2], 0x0b);
    ps_buf_reset(&b);
    assert_int_equal(hex_run("01 abc 02\n", NULL, &b), 1);
    ps_buf_reset(&b);
    assert_int_equal(hex_run("last delta\n", NULL, &b), 0);
    ps_buf_reset(&b);
    assert_int_equal(hex_run("01 | 02 03 | 04\n", "|", &b), 4);
    ps_buf_dispose(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_hex_run),
        cmocka_unit_test(test_format_md_records),
        cmocka_unit_test(test_chunk_example),
        cmocka_unit_test(test_chunk_spec_repeated),
        cmocka_unit_test(test_head_example),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
