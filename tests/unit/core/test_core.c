/*
 * test_core.c - core helpers: varints and the sticky decoder, the hash map, label validation and
 * encoding, durations and times.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../testutil.h"

#include "core/file.h"
#include "core/fmt.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/labels.h"
#include "core/mem.h"
#include "core/sat.h"
#include "core/thread.h"
#include "core/timeutil.h"
#include "core/varint.h"

static void test_varint_roundtrip(void **state)
{
    static const int64_t vals[] = {0, 1, -1, 63, -64, 64, 127, 128, 300, -300, INT32_MAX, INT32_MIN, INT64_MAX, INT64_MIN};
    ps_buf_t b = PS_BUF_INIT;
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        ps_put_varint(&b, vals[i]);
        ps_put_uvarint(&b, (uint64_t)vals[i]);
        ps_put_be64(&b, (uint64_t)vals[i]);
    }
    ps_dec_t d;
    ps_dec_init(&d, b.data, b.len);
    for (size_t i = 0; i < sizeof(vals) / sizeof(vals[0]); i++) {
        assert_int_equal(ps_dec_varint(&d), vals[i]);
        assert_int_equal(ps_dec_uvarint(&d), (uint64_t)vals[i]);
        assert_int_equal(ps_dec_be64(&d), (uint64_t)vals[i]);
    }
    assert_int_equal(d.err, 0);
    assert_int_equal(ps_dec_left(&d), 0);
    static const uint8_t be[8] = {0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef};
    assert_true(ps_get_be64(be) == 0x0123456789abcdefull);
    /* reading past the end sets the sticky error and keeps returning 0 */
    assert_int_equal(ps_dec_uvarint(&d), 0);
    assert_int_not_equal(d.err, 0);
    assert_int_equal(ps_dec_u8(&d), 0);
    /* every truncation of a 10-byte varint fails */
    ps_buf_reset(&b);
    ps_put_uvarint(&b, UINT64_MAX);
    assert_int_equal(b.len, 10);
    for (size_t n = 0; n < 10; n++) {
        ps_dec_init(&d, b.data, n);
        ps_dec_uvarint(&d);
        assert_int_not_equal(d.err, 0);
    }
    /* an 11-byte varint (overflow) fails */
    uint8_t over[11];
    memset(over, 0xff, 10);
    over[10] = 0x01;
    ps_dec_init(&d, over, 11);
    ps_dec_uvarint(&d);
    assert_int_not_equal(d.err, 0);
    ps_buf_dispose(&b);
    /* time keys sort like numbers */
    assert_true(ps_ts_key(-5) < ps_ts_key(0));
    assert_true(ps_ts_key(0) < ps_ts_key(7));
    assert_int_equal(ps_ts_unkey(ps_ts_key(-123456789)), -123456789);
}

/* Keys of every length 0-40 under one hash (so that only the key compare tells them apart: the
 * short ones by two words each, the rest by memcmp), at an odd address: each finds its own value,
 * and the same length with any one byte changed finds nothing. */
static void test_hmap_key_compare(void **state)
{
    (void)state;
    ps_hmap_t m;
    ps_hmap_init(&m);
    uint8_t buf[48], *key = buf + 1;
    for (size_t n = 0; n <= 40; n++) {
        for (size_t i = 0; i < n; i++)
            key[i] = (uint8_t)(i * 7 + n);
        ps_hmap_put_h(&m, 99, key, n, 1000 + n);
    }
    assert_int_equal(m.count, 41);
    for (size_t n = 0; n <= 40; n++) {
        for (size_t i = 0; i < n; i++)
            key[i] = (uint8_t)(i * 7 + n);
        uint64_t v = 0;
        assert_true(ps_hmap_get_h(&m, 99, key, n, &v));
        assert_int_equal(v, 1000 + n);
        for (size_t j = 0; j < n; j++) {
            key[j] ^= 0x80;
            assert_false(ps_hmap_get_h(&m, 99, key, n, &v));
            key[j] ^= 0x80;
        }
    }
    ps_hmap_dispose(&m);
}

static void test_hmap(void **state)
{
    ps_hmap_t m;
    ps_hmap_init(&m);
    char key[32];
    for (int i = 0; i < 100000; i++) {
        int n = snprintf(key, sizeof(key), "key-%d", i);
        ps_hmap_put(&m, key, (size_t)n, (uint64_t)i * 3);
    }
    assert_int_equal(m.count, 100000);
    /* its slots (8 MiB by now: calloc's mmap gives 16 bytes past a page) start a cache line */
    assert_int_equal((uintptr_t)m.slots % 64, 0);
    for (int i = 0; i < 100000; i++) {
        int n = snprintf(key, sizeof(key), "key-%d", i);
        uint64_t v;
        assert_true(ps_hmap_get(&m, key, (size_t)n, &v));
        assert_int_equal(v, (uint64_t)i * 3);
    }
    uint64_t v;
    assert_false(ps_hmap_get(&m, "nope", 4, &v));
    ps_hmap_put(&m, "", 0, 42);
    assert_true(ps_hmap_get(&m, "", 0, &v));
    assert_int_equal(v, 42);
    ps_hmap_clear(&m);
    assert_false(ps_hmap_get(&m, "key-1", 5, &v));
    ps_hmap_dispose(&m);
    /* the hash is part of the on-disk format (symbol and series hash keys): pin its values */
    assert_int_equal(ps_hash64("", 0, 0), 0x2aa90f84c64a17b6ull);
    assert_int_equal(ps_hash64("job\0api", 7, 0), 0xc202023bf024ce12ull);
    assert_int_equal(ps_hash64("0123456789abcdefXYZ", 19, 0x5e41e5), 0x35c186baa347703ull);
    /* two 16-byte blocks, an 8-byte word and 6 bytes (the values of the byte-by-byte reads) */
    assert_int_equal(ps_hash64("0123456789abcdefghijklmnopqrstuvwxyz0123456789", 46, 7), 0x261622500e1e1dabull);
    /* every tail length (0 to 7 bytes after the words; the values of the byte-by-byte reads),
     * at an odd address, seed = length */
    static const uint64_t tails[25] = {
        0x2aa90f84c64a17b6ull, 0xc2d247044062b6c9ull, 0x4a19199babe622d7ull,
        0xa3b98eb74a9720b6ull, 0x237216e15dce629aull, 0xea3e3e155878a3f0ull,
        0x386a4bf916f02181ull, 0x14e62cd00b898cddull, 0x315a2a42acd83f8aull,
        0x989d56bf31ded9b7ull, 0x6a66f05850cbeff7ull, 0x6b1cee577a62151eull,
        0x7cf626d416b0aab2ull, 0x11b6a6d674641834ull, 0x657e36ad34ef6de0ull,
        0xe5ac44615d284039ull, 0x75401f498442ba81ull, 0xce2d63f4aeb71ff7ull,
        0xb899dbd692eae3f1ull, 0x4c625b532871c5deull, 0x1436715cf7525655ull,
        0x4e00fc434c8cbe12ull, 0xc0995e5a052b88f7ull, 0x1f95e1a7230310a2ull,
        0x9ed48f9b41add796ull,
    };
    static const char fox[] = "The quick brown fox jumps!";
    for (size_t n = 0; n <= 24; n++)
        assert_int_equal(ps_hash64(fox + 1, n, n), tails[n]);
    assert_int_not_equal(ps_hash64("a", 1, 0), ps_hash64("b", 1, 0));
    assert_int_not_equal(ps_hash64("a", 1, 0), ps_hash64("a", 1, 1));
}

static void test_err(void **state)
{
    ps_err_t err;
    assert_int_equal(ps_err_set_at(&err, PS_EINVAL, 16, "1:%d: bad", 17), PS_EINVAL);
    assert_int_equal(err.code, PS_EINVAL);
    assert_int_equal(err.pos, 16);
    assert_string_equal(err.msg, "1:17: bad");
    assert_int_equal(ps_err_prefix(&err, "labels"), PS_EINVAL); /* the position stays */
    assert_string_equal(err.msg, "labels: 1:17: bad");
    assert_int_equal(err.pos, 16);
    assert_int_equal(ps_err_set(&err, PS_ETOOBIG, "too big"), PS_ETOOBIG);
    assert_int_equal(err.pos, -1);
    ps_err_set_at(&err, PS_EINVAL, (size_t)1 << 40, "x");
    assert_int_equal(err.pos, INT32_MAX);
    ps_err_clear(&err);
    assert_int_equal(err.code, 0);
    assert_int_equal(err.pos, -1);
    assert_string_equal(err.msg, "");
    assert_int_equal(ps_err_set_at(NULL, PS_EINVAL, 3, "x"), PS_EINVAL);
}

static void test_labels(void **state)
{
    assert_true(ps_label_name_valid("job", 3));
    assert_true(ps_label_name_valid("_x9", 3));
    assert_false(ps_label_name_valid("9x", 2));
    assert_false(ps_label_name_valid("a:b", 3));
    assert_false(ps_label_name_valid("", 0));
    assert_true(ps_metric_name_valid("process_cpu:cpu:nanoseconds", 27));
    assert_true(ps_utf8_valid("h\xc3\xa9llo", 6));
    assert_false(ps_utf8_valid("\xc3", 1));
    assert_false(ps_utf8_valid("\xc0\xaf", 2));         /* overlong */
    assert_false(ps_utf8_valid("\xed\xa0\x80", 3));     /* surrogate */
    assert_false(ps_utf8_valid("\xf4\x90\x80\x80", 4)); /* > U+10FFFF */

    ps_label_pair_t pairs[3] = {{"job", "api", 3, 3}, {"__name__", "cpu", 8, 3}, {"instance", "a:1", 8, 3}};
    ps_labels_t ls = {3, pairs};
    ps_err_t err;
    assert_int_equal(ps_labels_normalize(&ls, &err), 0);
    assert_string_equal(ls.pairs[0].name, "__name__");
    assert_string_equal(ls.pairs[2].name, "job");
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_encode(&ls, &b);
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t back;
    assert_int_equal(ps_labels_decode(b.data, b.len, &a, &back), 0);
    assert_int_equal(back.n, 3);
    assert_string_equal(back.pairs[1].value, "a:1");
    /* the exact bytes, and ps_labels_encode_to the same (a value of 200 bytes: a two-byte length) */
    assert_int_equal(b.len, 3 * 2 + 8 + 3 + 8 + 3 + 3 + 3);
    assert_memory_equal(b.data, "\x08__name__\x03" "cpu\x08instance\x03" "a:1\x03job\x03" "api", b.len);
    char bigv[200];
    memset(bigv, 'v', sizeof(bigv));
    ps_label_pair_t wide[2] = {{"__name__", "m", 8, 1}, {"k", bigv, 1, sizeof(bigv)}};
    ps_labels_t wl = {2, wide};
    ps_buf_t wb = PS_BUF_INIT;
    ps_labels_encode(&wl, &wb);
    assert_int_equal(wb.len, 1 + 8 + 1 + 1 + 1 + 1 + 2 + 200);
    assert_memory_equal(wb.data + 13, "\xc8\x01vv", 4);
    assert_int_equal(ps_labels_encoded_max(&wl), 8 + 1 + 1 + 200 + 20);
    uint8_t to[300];
    assert_int_equal(ps_labels_encode_to(&wl, to), wb.len);
    assert_memory_equal(to, wb.data, wb.len);
    ps_buf_dispose(&wb);
    /* truncated encodings fail */
    for (size_t n = 1; n < b.len; n++)
        if (ps_labels_decode(b.data, n, &a, &back) == 0)
            assert_true(back.n < 3);
    ps_buf_reset(&b);
    ps_labels_format(&ls, &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "{__name__=\"cpu\", instance=\"a:1\", job=\"api\"}");

    ps_label_pair_t dup[2] = {{"a", "1", 1, 1}, {"a", "2", 1, 1}};
    ls = (ps_labels_t){2, dup};
    assert_int_equal(ps_labels_normalize(&ls, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "duplicate label name"));
    /* UTF-8 names, as Prometheus 3 takes them: fine; invalid UTF-8 or a NUL in a name: refused */
    assert_true(ps_label_name_utf8_valid("service.name", 12));
    assert_true(ps_label_name_utf8_valid("\xc3\xa9", 2));
    assert_false(ps_label_name_utf8_valid("", 0));
    assert_false(ps_label_name_utf8_valid("a\0b", 3));
    assert_false(ps_label_name_utf8_valid("a\xc3", 2));
    ps_label_pair_t utf[2] = {{"a-b", "1", 3, 1}, {"__name__", "http.server.duration", 8, 20}};
    ls = (ps_labels_t){2, utf};
    assert_int_equal(ps_labels_normalize(&ls, &err), 0);
    ps_buf_reset(&b);
    ps_labels_format(&ls, &b);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "{__name__=\"http.server.duration\", \"a-b\"=\"1\"}");
    ps_label_pair_t bad[1] = {{"a\xff", "1", 2, 1}};
    ls = (ps_labels_t){1, bad};
    assert_int_equal(ps_labels_normalize(&ls, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid label name \"a\xff\": not valid UTF-8");
    ps_label_pair_t badn[1] = {{"a\0b", "1", 3, 1}};
    ls = (ps_labels_t){1, badn};
    assert_int_equal(ps_labels_normalize(&ls, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "contains a NUL byte"));
    char big[400];
    memset(big, 'x', sizeof(big));
    ps_label_pair_t longv[1] = {{"a", big, 1, 400}};
    ls = (ps_labels_t){1, longv};
    assert_int_equal(ps_labels_normalize(&ls, &err), PS_EINVAL);
    ps_label_pair_t badutf[1] = {{"a", "\xff", 1, 1}};
    ls = (ps_labels_t){1, badutf};
    assert_int_equal(ps_labels_normalize(&ls, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "UTF-8"));
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void test_labels_edit(void **state)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_labels_t ls = {0};
    assert_null(ps_labels_value(&ls, "a"));
    ps_labels_del(&ls, &arena, "a", 1); /* absent: no-op */
    char name[16];
    for (int i = 99; i >= 0; i--) { /* reverse order, more than any initial capacity */
        int n = snprintf(name, sizeof(name), "l%02d", i);
        ps_labels_set(&ls, &arena, name, (size_t)n, "v", 1);
    }
    assert_int_equal(ls.n, 100);
    for (uint32_t i = 1; i < ls.n; i++)
        assert_true(strcmp(ls.pairs[i - 1].name, ls.pairs[i].name) < 0);
    ps_labels_set(&ls, &arena, "l50", 3, "new", 3);
    assert_string_equal(ps_labels_value(&ls, "l50"), "new");
    assert_int_equal(ls.n, 100);
    ps_labels_set(&ls, &arena, "l50", 3, "", 0); /* "" deletes */
    assert_null(ps_labels_value(&ls, "l50"));
    assert_int_equal(ls.n, 99);
    ps_labels_del(&ls, &arena, "l00", 3);
    ps_labels_del(&ls, &arena, "l99", 3);
    assert_int_equal(ls.n, 97);
    assert_string_equal(ls.pairs[0].name, "l01");
    assert_string_equal(ls.pairs[96].name, "l98");
    /* name and value given with a length: not NUL-terminated input, NUL-terminated copies */
    ps_labels_set(&ls, &arena, "abcdef", 2, "xyz", 2);
    assert_string_equal(ps_labels_value(&ls, "ab"), "xy");
    assert_string_equal(ls.pairs[0].name, "ab");
    assert_int_equal(ls.pairs[0].nlen, 2);
    assert_int_equal(ls.pairs[0].vlen, 2);
    /* a prefix sorts before a longer name */
    ps_labels_set(&ls, &arena, "a", 1, "1", 1);
    assert_string_equal(ls.pairs[0].name, "a");
    assert_int_equal(ls.n, 99);
    for (uint32_t i = 1; i < ls.n; i++)
        assert_true(strcmp(ls.pairs[i - 1].name, ls.pairs[i].name) < 0);

    /* a set made elsewhere (cap 0) is copied at the first edit, never written to */
    ps_label_pair_t pairs[] = {{"a", "1", 1, 1}, {"c", "3", 1, 1}};
    ps_labels_t orig = {2, pairs};
    ps_labels_t v = ps_labels_borrow(&orig);
    ps_labels_set(&v, &arena, "b", 1, "2", 1);
    ps_labels_set(&v, &arena, "a", 1, "9", 1);
    assert_int_equal(v.n, 3);
    assert_string_equal(v.pairs[0].value, "9");
    assert_string_equal(v.pairs[1].name, "b");
    assert_true(v.cap >= 3);
    assert_int_equal(orig.n, 2);
    assert_string_equal(pairs[0].value, "1");
    assert_string_equal(pairs[1].name, "c");
    v = ps_labels_borrow(&orig);
    ps_labels_del(&v, &arena, "a", 1);
    assert_int_equal(v.n, 1);
    assert_string_equal(v.pairs[0].name, "c");
    assert_string_equal(pairs[0].name, "a");
    v = ps_labels_borrow(&orig);
    ps_labels_set(&v, &arena, "c", 1, "", 0);
    assert_int_equal(v.n, 1);
    assert_string_equal(pairs[1].name, "c");
    assert_string_equal(pairs[1].value, "3");
    ps_arena_dispose(&arena);
}

/* ps_buf_json_str as RFC 8259 escapes, a byte at a time: the reference of its word-at-a-time path */
static void json_str_ref(ps_buf_t *b, const unsigned char *s, size_t n)
{
    ps_buf_putc(b, '"');
    for (size_t i = 0; i < n; i++) {
        char e[8];
        switch (s[i]) {
        case '"': PS_BUF_LIT(b, "\\\""); break;
        case '\\': PS_BUF_LIT(b, "\\\\"); break;
        case '\n': PS_BUF_LIT(b, "\\n"); break;
        case '\r': PS_BUF_LIT(b, "\\r"); break;
        case '\t': PS_BUF_LIT(b, "\\t"); break;
        default:
            if (s[i] < 0x20) {
                snprintf(e, sizeof(e), "\\u%04x", s[i]);
                ps_buf_append(b, e, 6);
            } else {
                ps_buf_putc(b, s[i]);
            }
        }
    }
    ps_buf_putc(b, '"');
}

/* Every byte value at every place of strings of 0 to 40 bytes (the words of 8, the last word that
 * overlaps the one before, the bytes of a short string), alone and beside a second one; each
 * appended after an odd number of bytes (unaligned words): as the reference writes them. */
static void test_json_str_words(void **state)
{
    (void)state;
    ps_buf_t got = PS_BUF_INIT, want = PS_BUF_INIT;
    unsigned char s[40];
    size_t cases = 0;
    for (size_t n = 0; n <= sizeof(s); n++)
        for (size_t at = 0; at < (n ? n : 1); at++)
            for (unsigned c = 0; c < 256; c++) {
                memset(s, 'a' + (int)(n % 26), sizeof(s));
                if (n > 0)
                    s[at] = (unsigned char)c;
                if (n > 2 && c % 7 == 0)
                    s[(at * 5 + 3) % n] = (unsigned char)(c ^ 0x5c); /* a second byte: \\ when c is 0 */
                ps_buf_reset(&got);
                ps_buf_reset(&want);
                PS_BUF_LIT(&got, "xyz");
                PS_BUF_LIT(&want, "xyz");
                ps_buf_json_str(&got, (const char *)s, n);
                json_str_ref(&want, s, n);
                assert_int_equal(got.len, want.len);
                assert_memory_equal(got.data, want.data, want.len);
                cases++;
                if (n == 0)
                    break;
            }
    assert_int_equal(cases, 1 + 256 * 820); /* 1 + 256 * (1 + 2 + ... + 40) */
    ps_buf_dispose(&got);
    ps_buf_dispose(&want);
}

/* A buffer that grows past 4 MiB (advised as huge pages, 32 MiB at once) keeps its bytes, and
 * grows on by doubling. */
static void test_buf_grows_big(void **state)
{
    (void)state;
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t i = 0; b.len < ((size_t)5 << 20); i++)
        ps_buf_append(&b, &i, sizeof(i));
    assert_int_equal(b.cap, (size_t)32 << 20);
    ps_buf_reserve(&b, (size_t)40 << 20);
    assert_int_equal(b.cap, (size_t)64 << 20);
    for (uint32_t i = 0; i < (uint32_t)((5 << 20) / sizeof(i)); i++) {
        uint32_t v;
        memcpy(&v, b.data + (size_t)i * sizeof(v), sizeof(v));
        if (v != i)
            fail_msg("word %u holds %u", i, v);
    }
    ps_buf_dispose(&b);
}

static void test_json_writer(void **state)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_json_t j;
    ps_json_init(&j, &b);
    ps_json_obj(&j);
    ps_json_key(&j, "status");
    ps_json_cstr(&j, "success");
    ps_json_key(&j, "data");
    ps_json_arr(&j);
    ps_json_int(&j, -3);
    ps_json_uint(&j, 18446744073709551615ull);
    ps_json_obj(&j);
    ps_json_end(&j);
    ps_json_arr(&j);
    ps_json_end(&j);
    ps_json_double(&j, 0.1);
    ps_json_double(&j, 1e21);
    ps_json_double(&j, NAN);
    ps_json_double_str(&j, -INFINITY);
    ps_json_fixed(&j, 12.3456, 2);
    ps_json_fixed(&j, -0.001, 2);
    ps_json_bool(&j, true);
    ps_json_null(&j);
    ps_json_cstr(&j, NULL);
    ps_json_str(&j, "a\"\\\n\x01\xc3\xa9", 7);
    ps_json_raw(&j, "{\"k\":1}", 7);
    ps_json_end(&j);
    ps_json_key(&j, "e");
    ps_json_obj(&j);
    ps_json_key(&j, "x");
    ps_json_arr(&j);
    ps_json_end(&j);
    ps_json_end(&j);
    ps_json_end(&j);
    assert_int_equal(j.depth, 0);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data,
                        "{\"status\":\"success\",\"data\":[-3,18446744073709551615,{},[],0.1,1e+21,\"NaN\",\"-Inf\","
                        "12.35,0.00,true,null,null,\"a\\\"\\\\\\n\\u0001\xc3\xa9\",{\"k\":1}],\"e\":{\"x\":[]}}");
    /* escapes between, before and after runs of plain bytes (appended a run at a time) */
    ps_buf_reset(&b);
    ps_buf_json_str(&b, "\"ab\\cd\x1f\x7f\xff\tef\r", 13);
    ps_buf_json_str(&b, "", 0);
    ps_buf_json_str(&b, "plain", 5);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "\"\\\"ab\\\\cd\\u001f\x7f\xff\\tef\\r\"\"\"\"plain\"");
    /* the same digits without a separator, for plain text (folded stacks) */
    ps_buf_reset(&b);
    ps_buf_put_i64(&b, INT64_MIN);
    ps_buf_putc(&b, ' ');
    ps_buf_put_i64(&b, 0);
    ps_buf_putc(&b, ' ');
    ps_buf_put_i64(&b, 42);
    ps_buf_putc(&b, 0);
    assert_string_equal((char *)b.data, "-9223372036854775808 0 42");
    ps_buf_dispose(&b);
}

static void test_ts_ms(void **state)
{
    /* Prometheus' jsonutil.MarshalTimestamp: seconds, then ".mmm" zero-padded when not whole */
    static const struct {
        int64_t ms;
        const char *want;
    } cases[] = {{1500, "1.500"}, {1000, "1"}, {0, "0"}, {7, "0.007"}, {-1005, "-1.005"},
                 {1796021924802, "1796021924.802"}};
    char b[40];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_fmt_ts_ms(cases[i].ms, b, sizeof(b));
        assert_string_equal(b, cases[i].want);
    }
    ps_fmt_ts_ms(1796021924802, b, 5); /* cut to the buffer, NUL-terminated */
    assert_string_equal(b, "1796");
}

static void test_fmt_float(void **state)
{
    /* the outputs of the snprintf("%.*e") search ps_fmt_float made before its exact digits (the
     * shortest that read back, Go's 'f' between 1e-6 and 1e21; the same for 12 million random and
     * near-power-of-ten values when it changed) */
    static const struct {
        double v;
        const char *want;
    } cases[] = {
        {0.1, "0.1"},
        {2.0 / 3, "0.6666666666666666"},
        {1.0 / 3, "0.3333333333333333"},
        {nextafter(1000, 0), "999.9999999999999"},
        {1e-6, "0.000001"},
        {9.999999999999999e-7, "0.000001"},
        {1e-5, "0.00001"},
        {2.5e-5, "0.000025"},
        {1e21, "1e+21"},
        {9.999999999999999e20, "999999999999999868928"},
        {123.456, "123.456"},
        {123456789.123, "123456789.123"},
        {5e-324, "5e-324"},
        {1.7976931348623157e308, "1.7976931348623157e+308"},
        {-0.3, "-0.3"},
        {0.30000000000000004, "0.30000000000000004"},
        {1e15 + 0.5, "1000000000000000.5"},
        {4.35, "4.35"},
        {1234.5678e10, "12345678000000"},
    };
    char b[40];
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_fmt_float(cases[i].v, b, sizeof(b));
        assert_string_equal(b, cases[i].want);
    }
    ps_fmt_float(2.0 / 3, b, 5); /* cut to the buffer, NUL-terminated */
    assert_string_equal(b, "0.66");
    char d[24];
    int exp;
    assert_int_equal(ps_fmt_shortest(0.000123, d, &exp), 3);
    assert_string_equal(d, "123");
    assert_int_equal(exp, -4);
    assert_int_equal(ps_fmt_shortest(-2.0 / 3, d, &exp), 16);
    assert_string_equal(d, "6666666666666666");
    assert_int_equal(exp, -1);
    assert_int_equal(ps_fmt_shortest(nextafter(1000, 0), d, &exp), 16);
    assert_string_equal(d, "9999999999999999");
    assert_int_equal(exp, 2);
}

static void test_label_value_escape(void **state)
{
    char b[16];
    ps_fmt_label_value("a\"b\\c\nd", b, sizeof(b));
    assert_string_equal(b, "a\\\"b\\\\c\\nd");
    ps_fmt_label_value("plain", b, sizeof(b));
    assert_string_equal(b, "plain");
    ps_fmt_label_value("abc\"", b, 5); /* no room for the whole escape: cut before it */
    assert_string_equal(b, "abc");
}

static void test_log_values(void **state)
{
    assert_string_equal(ps_log_q("static"), "static");
    assert_string_equal(ps_log_q("/tmp/a b.json"), "\"/tmp/a b.json\"");
    assert_string_equal(ps_log_q("1:5: got \"=~\" a\\b\nc\x01"), "\"1:5: got \\\"=~\\\" a\\\\b\\nc\\x01\"");
    assert_string_equal(ps_log_q("k=v"), "\"k=v\"");
    assert_string_equal(ps_log_q(""), "\"\"");
    assert_string_equal(ps_log_q(NULL), "\"\"");
    /* eight values of one line stay valid together */
    const char *v[8];
    char in[8][8];
    for (int i = 0; i < 8; i++) {
        snprintf(in[i], sizeof(in[i]), "v%d", i);
        v[i] = ps_log_q(in[i]);
    }
    for (int i = 0; i < 8; i++)
        assert_string_equal(v[i], in[i]);
}

static void test_durations_and_times(void **state)
{
    int64_t ns;
    ps_err_t err;
    assert_int_equal(ps_parse_duration("15d", 3, 0, &ns, &err), 0);
    assert_int_equal(ns, 15ll * 86400 * PS_NS_PER_S);
    assert_int_equal(ps_parse_duration("1h30m", 5, 0, &ns, &err), 0);
    assert_int_equal(ns, 5400ll * PS_NS_PER_S);
    assert_int_equal(ps_parse_duration("250ms", 5, 0, &ns, &err), 0);
    assert_int_equal(ns, 250000000ll);
    assert_int_equal(ps_parse_duration("2w", 2, 0, &ns, &err), 0);
    assert_int_equal(ns, 14ll * 86400 * PS_NS_PER_S);
    assert_int_equal(ps_parse_duration("1.5", 3, 1, &ns, &err), 0);
    assert_int_equal(ns, 1500000000ll);
    assert_int_equal(ps_parse_duration("1.5", 3, 0, &ns, &err), PS_EINVAL);
    assert_int_equal(ps_parse_duration("5x", 2, 0, &ns, &err), PS_EINVAL);
    assert_int_equal(ps_parse_duration("m", 1, 0, &ns, &err), PS_EINVAL);
    assert_int_equal(ps_parse_duration("1m1h", 4, 0, &ns, &err), PS_EINVAL);
    assert_int_equal(ps_parse_duration("", 0, 0, &ns, &err), PS_EINVAL);
    char buf[64];
    ps_format_duration(5400ll * PS_NS_PER_S, buf, sizeof(buf));
    assert_string_equal(buf, "1h30m");
    /* Prometheus' model.Duration: weeks and years only when exact */
    ps_format_duration(15ll * 86400 * PS_NS_PER_S, buf, sizeof(buf));
    assert_string_equal(buf, "15d");
    ps_format_duration(14ll * 86400 * PS_NS_PER_S, buf, sizeof(buf));
    assert_string_equal(buf, "2w");
    ps_format_duration(36ll * 3600 * PS_NS_PER_S, buf, sizeof(buf));
    assert_string_equal(buf, "1d12h");
    ps_format_duration(365ll * 86400 * PS_NS_PER_S + 86400 * PS_NS_PER_S, buf, sizeof(buf));
    assert_string_equal(buf, "366d");
    ps_format_duration(0, buf, sizeof(buf));
    assert_string_equal(buf, "0s");

    assert_int_equal(ps_parse_time("1796022364", 10, 0, &ns, &err), 0);
    assert_int_equal(ns, 1796022364ll * PS_NS_PER_S);
    assert_int_equal(ps_parse_time("1796022364.647", 14, 0, &ns, &err), 0);
    assert_int_equal(ns, 1796022364647000000ll);
    const char *r = "2026-11-30T07:06:04.647593488Z";
    assert_int_equal(ps_parse_time(r, strlen(r), 0, &ns, &err), 0);
    assert_int_equal(ns, 1796022364647593488ll);
    r = "2026-11-30T09:06:04+02:00";
    assert_int_equal(ps_parse_time(r, strlen(r), 0, &ns, &err), 0);
    assert_int_equal(ns, 1796022364ll * PS_NS_PER_S);
    r = "1970-01-01T00:00:00Z";
    assert_int_equal(ps_parse_time(r, strlen(r), 0, &ns, &err), 0);
    assert_int_equal(ns, 0);
    ps_format_time(1796022364647593488ll, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-30T07:06:04.647593488Z");
    /* Go's RFC3339Nano: trailing zeros of the fraction cut, no fraction when whole */
    ps_format_time_go(1796022364647593488ll, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-30T07:06:04.647593488Z");
    ps_format_time_go(1796022364120000000ll, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-30T07:06:04.12Z");
    ps_format_time_go(1796022364000000000ll, buf, sizeof(buf));
    assert_string_equal(buf, "2026-11-30T07:06:04Z");
    static const char *bad[] = {"", "yesterday", "2026-13-01T00:00:00Z", "2026-11-30T07:06:04", "2026-11-30", "1e400",
                                "12abc", "9300000000", "9.3e9", "10000000000000000000", "-", "now5m", "now-", "now-5",
                                "now-5x", "now-m", "now-5m1h", "now-1e3s", "nowish", "now-9999999999999y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        if (ps_parse_time(bad[i], strlen(bad[i]), 0, &ns, &err) != PS_EINVAL)
            fail_msg("%s: accepted as %lld", bad[i], (long long)ns);
        assert_non_null(strstr(err.msg, "cannot parse"));
    }
}

/* ps_parse_time: unix s, ms, us, ns told apart by size, now-relative, positions in errors */
/* ps_mono_deadline: ns from now on the monotonic clock, its nanoseconds below a second; a
 * negative wait is now. */
static void test_mono_deadline(void **state)
{
    (void)state;
    int64_t before = ps_time_mono();
    struct timespec a = ps_mono_deadline(1500000000), b = ps_mono_deadline(-5), c = ps_mono_deadline(999999999);
    int64_t after = ps_time_mono();
    int64_t ta = (int64_t)a.tv_sec * PS_NS_PER_S + a.tv_nsec, tb = (int64_t)b.tv_sec * PS_NS_PER_S + b.tv_nsec,
            tc = (int64_t)c.tv_sec * PS_NS_PER_S + c.tv_nsec;
    assert_true(a.tv_nsec >= 0 && a.tv_nsec < PS_NS_PER_S && c.tv_nsec >= 0 && c.tv_nsec < PS_NS_PER_S);
    assert_true(ta >= before + 1500000000 && ta <= after + 1500000000);
    assert_true(tb >= before && tb <= after);
    assert_true(tc >= before + 999999999 && tc <= after + 999999999);
}

static void test_parse_time_forms(void **state)
{
    (void)state;
    const int64_t now = 1796022364647593488ll, T = 1796022364ll * PS_NS_PER_S;
    static const struct {
        const char *in;
        int64_t want;
    } ok[] = {
        {"1796022364", 1796022364ll * PS_NS_PER_S},
        {"1796022364.5", 1796022364500000000ll},
        {"1796022364.0004", 1796022364000000000ll}, /* seconds are rounded to the ms, as Prometheus */
        {"-1.5", -1500000000ll},
        {"0", 0},
        {"9200000000", 9200000000ll * PS_NS_PER_S}, /* the last seconds that fit */
        {"1796022364647", 1796022364647ll * 1000000},
        {"1796022364647.5", 1796022364647500000ll},
        {"10000000000", 10000000000ll * 1000000}, /* from 1e10: ms */
        {"1796022364647593", 1796022364647593000ll},
        {"1796022364647593488", 1796022364647593488ll},
        {"1.796022364647e12", 1796022364647ll * 1000000},
        {"2026-11-30T07:06:04Z", 1796022364ll * PS_NS_PER_S},
        {"now", now},
        {"now-5m", now - 300 * PS_NS_PER_S},
        {"now-1h30m", now - 5400 * PS_NS_PER_S},
        {"now+1d", now + 86400 * PS_NS_PER_S},
        {"now-1w2d3h4m5s6ms", now - ((9ll * 86400 + 3 * 3600 + 4 * 60 + 5) * PS_NS_PER_S + 6000000)},
    };
    ps_err_t err;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = 0;
        if (ps_parse_time(ok[i].in, strlen(ok[i].in), now, &v, &err) != 0)
            fail_msg("%s: %s", ok[i].in, err.msg);
        if (v != ok[i].want)
            fail_msg("%s: got %lld, want %lld", ok[i].in, (long long)v, (long long)ok[i].want);
    }
    (void)T;
    static const struct {
        const char *in, *msg;
        int pos;
    } bad[] = {
        {"now-5x", "cannot parse \"now-5x\" to a valid timestamp: unknown unit \"x\" at character 6 (ms, s, m, h, d, w, y)", 5},
        {"now-", "cannot parse \"now-\" to a valid timestamp: a duration after '-' is missing at character 5, as in now-5m", 4},
        {"now5m", "cannot parse \"now5m\" to a valid timestamp: want '-' or '+' after \"now\" at character 4, as in now-5m", 3},
        {"now-h", "cannot parse \"now-h\" to a valid timestamp: want a number at character 5", 4},
        {"now-1h5", "cannot parse \"now-1h5\" to a valid timestamp: want a unit (ms, s, m, h, d, w, y) at character 8", 7},
        {"now-5m1h", "cannot parse \"now-5m1h\" to a valid timestamp: unit \"h\" at character 8 is out of order (y, w, d, h, "
                     "m, s, ms: each once, the larger first)", 7},
        {"now+250y", "cannot parse \"now+250y\" to a valid timestamp: the offset from now is out of range (before 1678 or "
                     "after 2262)", 4},
        {"now-300y", "cannot parse \"now-300y\" to a valid timestamp: the duration at character 5 is out of range", 4},
        {"yesterday", "cannot parse \"yesterday\" to a valid timestamp", -1},
        {"9300000000", "cannot parse \"9300000000\" to a valid timestamp: out of range (before 1678 or after 2262)", -1},
        /* floats in ms and us past 2262 (fuzz_pyingest: 9.988e15 us * 1000 was a signed overflow) */
        {"0998837E7", "cannot parse \"0998837E7\" to a valid timestamp: out of range (before 1678 or after 2262)", -1},
        {"9.3e12", "cannot parse \"9.3e12\" to a valid timestamp: out of range (before 1678 or after 2262)", -1},
        {"9999-12-31T23:59:59Z", "cannot parse \"9999-12-31T23:59:59Z\" to a valid timestamp: out of range (before 1678 "
                                 "or after 2262)", -1},
        {"0000-01-01T00:00:00Z", "cannot parse \"0000-01-01T00:00:00Z\" to a valid timestamp: out of range (before 1678 "
                                 "or after 2262)", -1},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = 0;
        if (ps_parse_time(bad[i].in, strlen(bad[i].in), now, &v, &err) != PS_EINVAL)
            fail_msg("%s: accepted as %lld", bad[i].in, (long long)v);
        assert_string_equal(err.msg, bad[i].msg);
        assert_int_equal(err.pos, bad[i].pos);
    }
}

/* Pyroscope's attime: digit counts, YYYYMMDD, now-offsets; garbage is an error here */
static void test_attime(void **state)
{
    (void)state;
    const int64_t now = 1796022364ll * PS_NS_PER_S + 123;
    static const struct {
        const char *in;
        int64_t want;
    } ok[] = {
        {"1796022364", 1796022364ll * PS_NS_PER_S},
        {"1796022364647", 1796022364647ll * 1000000},
        {"1796022364647123", 1796022364647123ll * 1000},
        {"1796022364647123456", 1796022364647123456ll},
        {"20261130", 1795996800ll * PS_NS_PER_S}, /* 2026-11-30T00:00:00Z */
        {"20261340", 20261340ll * PS_NS_PER_S},   /* month 13: not a date, so seconds */
        {"now", now},
        {"now-1h", now - 3600 * PS_NS_PER_S},
        {"now-1h30m", now - 5400 * PS_NS_PER_S},
        {"-15min", now - 900 * PS_NS_PER_S},
        {"now+1d", now + 86400 * PS_NS_PER_S},
        {"now-2mon", now - 2 * 30 * 86400 * PS_NS_PER_S},
        {"now-1M", now - 30 * 86400 * PS_NS_PER_S},
        {"now-1w", now - 7 * 86400 * PS_NS_PER_S},
        {"now-1y", now - 365 * 86400 * PS_NS_PER_S},
        {" now - 5s ", now - 5 * PS_NS_PER_S},
        {"1_796_022_364", 1796022364ll * PS_NS_PER_S},
        {"2026-11-30T09:06:04+02:00", 1796022364ll * PS_NS_PER_S},
    };
    ps_err_t err;
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        int64_t v = 0;
        int rc = ps_attime_parse(ok[i].in, strlen(ok[i].in), now, &v, &err);
        if (rc != 0)
            fail_msg("%s: %s", ok[i].in, err.msg);
        if (v != ok[i].want)
            fail_msg("%s: got %lld, want %lld", ok[i].in, (long long)v, (long long)ok[i].want);
    }
    static const char *const bad[] = {"", "yesterday", "now-", "now-1x", "now-h", "17960223641234567890",
                                      "99999999999999999999", "now-99999999999y", "2026-11-30",
                                      "35920420", "now+101y", "now-999y"};
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int64_t v = 0;
        if (ps_attime_parse(bad[i], strlen(bad[i]), now, &v, &err) != PS_EINVAL)
            fail_msg("%s: accepted as %lld", bad[i], (long long)v);
    }
    assert_int_equal(ps_attime_parse("now-1x", 6, now, &(int64_t){0}, &err), PS_EINVAL);
    assert_string_equal(err.msg, "time \"now-1x\": unknown unit \"x\" at character 6 (s, m/min, h, d, w, M/mon, y)");
    int64_t v = 0;
    assert_int_equal(ps_attime_parse("2026-11-30T07:06:04.5Z", 22, now, &v, &err), 0); /* RFC3339 too */
    assert_int_equal(v, 1796022364500000000ll);
}

/* Big buffers: malloc'd below 1 MiB, mmap'd from it; growing across the line keeps the bytes,
 * and an adopted buffer goes with its arena (ASan/LSan see a leak or a bad free otherwise). */
static void test_saturating(void **state)
{
    (void)state;
    assert_true(ps_sat_add(INT64_MAX - 1, 1) == INT64_MAX);
    assert_true(ps_sat_add(INT64_MAX, 1) == INT64_MAX);
    assert_true(ps_sat_add(INT64_MAX, INT64_MAX) == INT64_MAX);
    assert_true(ps_sat_add(INT64_MIN, -1) == INT64_MIN);
    assert_true(ps_sat_add(INT64_MIN, INT64_MAX) == -1);
    assert_true(ps_sat_add(-5, 3) == -2);
    assert_true(ps_sat_sub(INT64_MIN, 1) == INT64_MIN);
    assert_true(ps_sat_sub(0, INT64_MIN) == INT64_MAX);
    assert_true(ps_sat_sub(INT64_MAX, -1) == INT64_MAX);
    assert_true(ps_sat_sub(-1, INT64_MAX) == INT64_MIN);
    assert_true(ps_sat_sub(7, 9) == -2);
    assert_true(ps_sat_mul(INT64_MAX / 2 + 1, 2) == INT64_MAX);
    assert_true(ps_sat_mul(INT64_MIN, -1) == INT64_MAX);
    assert_true(ps_sat_mul(INT64_MIN / 2 - 1, 2) == INT64_MIN);
    assert_true(ps_sat_mul(-4, 5) == -20);
    assert_true(ps_sat_addu(UINT64_MAX - 1, 2) == UINT64_MAX);
    assert_true(ps_sat_addu(1, 2) == 3);
    assert_true(ps_sat_round(1e19) == INT64_MAX);
    assert_true(ps_sat_round(9223372036854775807.0) == INT64_MAX);
    assert_true(ps_sat_round(-1e19) == INT64_MIN);
    assert_true(ps_sat_round(NAN) == 0);
    assert_true(ps_sat_round(2.5) == 3 && ps_sat_round(-2.5) == -3 && ps_sat_round(0.49) == 0);
}

static void test_arena_big(void **state)
{
    (void)state;
    unsigned char *p = ps_arena_big_alloc(100);
    for (int i = 0; i < 100; i++)
        p[i] = (unsigned char)i;
    p = ps_arena_big_realloc(p, 200 * 1024); /* still malloc'd */
    memset(p + 100, 0xab, 200 * 1024 - 100);
    p = ps_arena_big_realloc(p, 3u << 20); /* crosses into a mapping: copied */
    for (int i = 0; i < 100; i++)
        assert_int_equal(p[i], i);
    assert_int_equal(p[200 * 1024 - 1], 0xab);
    p[(3u << 20) - 1] = 7;
    p = ps_arena_big_realloc(p, 5u << 20); /* mremap */
    assert_int_equal(p[(3u << 20) - 1], 7);
    assert_int_equal(p[99], 99);
    p = ps_arena_big_realloc(p, 64); /* a mapping shrinks in place */
    assert_int_equal(p[63], 63);
    ps_arena_big_free(p);

    ps_arena_t a = PS_ARENA_INIT;
    unsigned char *q = ps_arena_big_alloc(5000);
    memset(q, 1, 5000);
    ps_arena_big_adopt(&a, q, 5000);
    unsigned char *r = ps_arena_big_alloc(2u << 20);
    ps_arena_big_adopt(&a, r, 2u << 20);
    assert_int_equal(a.used_total, 5000 + (2u << 20));
    assert_int_equal(q[4999], 1);
    ps_arena_reset(&a);
    assert_int_equal(a.used_total, 0);
    ps_arena_big_free(ps_arena_big_alloc(0));
    ps_arena_dispose(&a);
}

/* ps_par_for: every index exactly once, slots below the width, also when helpers start late
 * (after the call returned: the state they hold must still be valid, as ASan checks). */
typedef struct par_ctx {
    atomic_int *calls;
    atomic_uint max_slot;
} par_ctx_t;

static void par_fn(void *ctx, unsigned slot, size_t i)
{
    par_ctx_t *c = ctx;
    atomic_fetch_add(&c->calls[i], 1);
    unsigned m = atomic_load(&c->max_slot);
    while (slot > m && !atomic_compare_exchange_weak(&c->max_slot, &m, slot))
        ;
}

static void test_par_for(void **state)
{
    (void)state;
    const size_t ns[] = {0, 1, 2, 5, 1000};
    ps_par_t par = {ps_test_spawn, NULL, 4};
    for (int round = 0; round < 20; round++) {
        for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++) {
            size_t n = ns[k];
            par_ctx_t c = {calloc(n + 1, sizeof(atomic_int)), 0};
            ps_par_for(round % 5 == 4 ? NULL : &par, n, par_fn, &c);
            for (size_t i = 0; i < n; i++)
                assert_int_equal(atomic_load(&c.calls[i]), 1);
            assert_true(atomic_load(&c.max_slot) < 4);
            free(c.calls);
        }
    }
    ps_test_spawn_wait();
}

/* CPU slots: with one slot, four threads that each hold it for 40 ms of work (calling
 * ps_cpu_slot_turn as they go) never compute at once, and take turns: the slot changes hands
 * many more times than the 3 a run without turns would need. */
typedef struct slot_ctx {
    ps_cpu_slots_t *slots;
    atomic_int inside, max_inside, owner, changes;
} slot_ctx_t;

static void *slot_worker(void *arg)
{
    slot_ctx_t *c = ((void **)arg)[0];
    int me = (int)(intptr_t)((void **)arg)[1];
    ps_cpu_slot_take(c->slots);
    int64_t worked = 0, last = ps_time_mono();
    while (worked < 40000000) {
        int in = atomic_fetch_add(&c->inside, 1) + 1;
        int m = atomic_load(&c->max_inside);
        while (in > m && !atomic_compare_exchange_weak(&c->max_inside, &m, in))
            ;
        if (atomic_exchange(&c->owner, me) != me)
            atomic_fetch_add(&c->changes, 1);
        atomic_fetch_sub(&c->inside, 1);
        int64_t now = ps_time_mono();
        worked += now - last;
        ps_cpu_slot_turn(); /* may sleep: that time is not work */
        last = ps_time_mono();
    }
    ps_cpu_slot_give();
    return NULL;
}

static void test_cpu_slots(void **state)
{
    (void)state;
    slot_ctx_t c = {ps_cpu_slots_new(1), 0, 0, -1, 0};
    pthread_t th[4];
    void *args[4][2];
    for (int i = 0; i < 4; i++) {
        args[i][0] = &c;
        args[i][1] = (void *)(intptr_t)i;
        assert_int_equal(pthread_create(&th[i], NULL, slot_worker, args[i]), 0);
    }
    for (int i = 0; i < 4; i++)
        pthread_join(th[i], NULL);
    assert_int_equal(atomic_load(&c.max_inside), 1);
    assert_true(atomic_load(&c.changes) > 8); /* 160 ms of work in 5 ms turns: about 32 */
    unsigned running, waiting;
    ps_cpu_slots_stats(c.slots, &running, &waiting);
    assert_int_equal(running, 0);
    assert_int_equal(waiting, 0);
    ps_cpu_slots_free(c.slots);
    /* no slots: take and turn do nothing */
    ps_cpu_slot_take(NULL);
    ps_cpu_slot_turn();
    ps_cpu_slot_give();
}

/* ps_file_read / ps_file_readable: regular files only, bounded; a FIFO is refused at once (a
 * blocking open(2) would wait for a writer for ever: the test would hang) */
static void test_file_read(void **state)
{
    (void)state;
    char dir[] = "/tmp/ps_file_XXXXXX";
    assert_non_null(mkdtemp(dir));
    char reg[64], fifo[64], missing[64];
    snprintf(reg, sizeof(reg), "%s/reg", dir);
    snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
    snprintf(missing, sizeof(missing), "%s/missing", dir);
    FILE *f = fopen(reg, "w");
    assert_non_null(f);
    fputs("hello\n", f);
    fclose(f);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    char why[128];
    ps_buf_t b = PS_BUF_INIT;
    assert_int_equal(ps_file_read(reg, 100, &b, why, sizeof(why)), 0);
    assert_int_equal(b.len, 6);
    assert_memory_equal(b.data, "hello\n", 6);
    ps_buf_reset(&b);
    assert_int_equal(ps_file_read(reg, 5, &b, why, sizeof(why)), -1);
    assert_string_equal(why, "larger than 5 bytes");
    ps_buf_reset(&b);
    assert_int_equal(ps_file_read(fifo, 100, &b, why, sizeof(why)), -1);
    assert_string_equal(why, "not a regular file");
    assert_int_equal(ps_file_read(dir, 100, &b, why, sizeof(why)), -1);
    assert_string_equal(why, "not a regular file");
    assert_int_equal(ps_file_read(missing, 100, &b, why, sizeof(why)), -1);
    assert_string_equal(why, "No such file or directory");
    assert_true(ps_file_readable(reg, why, sizeof(why)));
    assert_false(ps_file_readable(fifo, why, sizeof(why)));
    assert_string_equal(why, "not a regular file");
    assert_false(ps_file_readable("/dev/null", why, sizeof(why)));
    ps_buf_dispose(&b);
    unlink(reg);
    unlink(fifo);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_varint_roundtrip),
        cmocka_unit_test(test_hmap),
        cmocka_unit_test(test_hmap_key_compare),
        cmocka_unit_test(test_arena_big),
        cmocka_unit_test(test_par_for),
        cmocka_unit_test(test_cpu_slots),
        cmocka_unit_test(test_saturating),
        cmocka_unit_test(test_err),
        cmocka_unit_test(test_labels),
        cmocka_unit_test(test_labels_edit),
        cmocka_unit_test(test_durations_and_times),
        cmocka_unit_test(test_attime),
        cmocka_unit_test(test_parse_time_forms),
        cmocka_unit_test(test_mono_deadline),
        cmocka_unit_test(test_json_writer),
        cmocka_unit_test(test_json_str_words),
        cmocka_unit_test(test_buf_grows_big),
        cmocka_unit_test(test_label_value_escape),
        cmocka_unit_test(test_ts_ms),
        cmocka_unit_test(test_fmt_float),
        cmocka_unit_test(test_log_values),
        cmocka_unit_test(test_file_read),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
