/*
 * test_pyroscope.c - Pyroscope's /ingest (src/ingest/pyroscope.c, multipart.c): the multipart
 * parser (boundaries, parts, every malformed shape and limit), the name parameter with its tags,
 * the other parameters, the folded/lines builder with exact values, the profile name of pprof
 * uploads with and without sample_type_config, and the captured SDK bodies end to end.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "../testutil.h"

#include "core/timeutil.h"
#include "ingest/ingest.h"

#define NOW (1796022000ll * PS_NS_PER_S)

/* ---- multipart ---- */

static void test_boundary(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    const char *b;
    size_t bl;
    static const char ct1[] = "multipart/form-data; boundary=----formdata-undici-074999895113";
    assert_int_equal(ps_mp_boundary(ct1, sizeof(ct1) - 1, &a, &b, &bl, &err), 0);
    assert_int_equal(bl, 32);
    assert_memory_equal(b, "----formdata-undici-074999895113", 32);
    static const char ct2[] = "Multipart/Form-Data ; charset=utf-8; Boundary=\"a b:c\"";
    assert_int_equal(ps_mp_boundary(ct2, sizeof(ct2) - 1, &a, &b, &bl, &err), 0);
    assert_int_equal(bl, 5);
    assert_memory_equal(b, "a b:c", 5);

    static const struct { const char *ct, *msg; } bad[] = {
        {"multipart/form-data", "Content-Type: multipart/form-data without a boundary parameter"},
        {"multipart/form-data; boundary=", "Content-Type: the boundary must be 1 to 70 characters long, not 0"},
        {"multipart/form-data; boundary=\"abc", "Content-Type: unterminated quoted string"},
        {"multipart/form-data; boundary=a{b", "Content-Type: boundary character 2 (0x7b) is not allowed (RFC 2046)"},
        {"multipart/form-data; boundary=\"ab \"", "Content-Type: boundary character 3 (0x20) is not allowed (RFC 2046)"},
        {"multipart/form-data boundary=x", "Content-Type: expected ';' at offset 20, got 'b'"},
        {"multipart/form-data; boundary", "Content-Type: parameter at offset 21 has no '=value'"},
        {"text/plain; boundary=x", "Content-Type: expected multipart/form-data, got \"text/plain; boundary=x\""},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ps_mp_boundary(bad[i].ct, strlen(bad[i].ct), &a, &b, &bl, &err), PS_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
    char longb[128];
    snprintf(longb, sizeof(longb), "multipart/form-data; boundary=%071d", 0);
    assert_int_equal(ps_mp_boundary(longb, strlen(longb), &a, &b, &bl, &err), PS_EINVAL);
    assert_string_equal(err.msg, "Content-Type: the boundary must be 1 to 70 characters long, not 71");
    ps_arena_dispose(&a);
}

static int parse(const char *body, ps_mp_part_t **parts, uint32_t *np, ps_arena_t *a, ps_err_t *err)
{
    return ps_mp_parse(body, strlen(body), "XyZ", 3, a, parts, np, err);
}

static void test_parts(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_mp_part_t *p;
    uint32_t np;
    static const char body[] = "preamble\r\n--XyZ  \r\n"
                               "content-disposition: form-data; name=\"profile\"; filename=\"profile.pprof\"\r\n"
                               "Content-Type: application/octet-stream\r\nX-Other: 1\r\n\r\n"
                               "ab\r\ncd\r\n--XyZ\r\n"
                               "Content-Disposition: form-data; name=sample_type_config\r\n\r\n"
                               "{}\r\n--XyZ\r\n"
                               "Content-Disposition: form-data; name=\"q\\\"uoted\"\r\n\r\n"
                               "\r\n--XyZ\r\n"
                               "Content-Disposition: form-data; name=nobody\r\n"
                               "\r\n--XyZ--\r\nepilogue";
    assert_int_equal(parse(body, &p, &np, &a, &err), 0);
    assert_int_equal(np, 4);
    assert_int_equal(p[0].name_len, 7);
    assert_memory_equal(p[0].name, "profile", 7);
    assert_int_equal(p[0].filename_len, 13);
    assert_memory_equal(p[0].filename, "profile.pprof", 13);
    assert_int_equal(p[0].ct_len, 24);
    assert_memory_equal(p[0].content_type, "application/octet-stream", 24);
    assert_int_equal(p[0].len, 6);
    assert_memory_equal(p[0].data, "ab\r\ncd", 6);
    assert_string_equal(p[1].name, "sample_type_config");
    assert_null(p[1].filename);
    assert_int_equal(p[1].len, 2);
    assert_string_equal(p[2].name, "q\"uoted");
    assert_int_equal(p[2].len, 0); /* an empty body: CRLF CRLF-delimiter */
    assert_string_equal(p[3].name, "nobody");
    assert_int_equal(p[3].len, 0); /* no body at all: the empty line is the delimiter's CRLF */
    assert_ptr_equal(ps_mp_find(p, np, "sample_type_config"), &p[1]);
    assert_null(ps_mp_find(p, np, "prev_profile"));
    ps_arena_dispose(&a);
}

static void test_malformed(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_mp_part_t *p;
    uint32_t np;
    static const struct { const char *body, *msg; } bad[] = {
        {"", "multipart body: the boundary \"XyZ\" does not occur in it"},
        {"--XyZ--\r\n", "multipart body: no parts"},
        {"--XyZ", "multipart body: expected CRLF after the boundary at offset 5 (the body ends there: truncated)"},
        {"--XyZx\r\n", "multipart body: expected CRLF after the boundary at offset 5"},
        {"--XyZ\r\nContent-Disposition: form-data; name=a\r\n",
         "multipart part 1: headers not ended by an empty line (truncated)"},
        {"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\ndata",
         "multipart part 1: not ended by the boundary (truncated body)"},
        {"--XyZ\r\nContent-Disposition: form-data; name=a\r\n\r\ndata\r\n--XyZ",
         "multipart body: expected CRLF after the boundary at offset 60 (the body ends there: truncated)"},
        {"--XyZ\r\n\r\ndata\r\n--XyZ--", "multipart part 1: no Content-Disposition header"},
        {"--XyZ\r\nContent-Type: x\r\n\r\ndata\r\n--XyZ--", "multipart part 1: no Content-Disposition header"},
        {"--XyZ\r\nContent-Disposition: attachment; name=a\r\n\r\nd\r\n--XyZ--",
         "multipart part 1: Content-Disposition is not form-data"},
        {"--XyZ\r\nContent-Disposition: form-data; filename=a\r\n\r\nd\r\n--XyZ--",
         "multipart part 1: Content-Disposition has no name"},
        {"--XyZ\r\nContent-Disposition form-data\r\n\r\nd\r\n--XyZ--",
         "multipart part 1: header line without ':' (\"Content-Disposition form-data\")"},
        {"--XyZ\r\nContent-Disposition: form-data; name=\"a\r\n\r\nd\r\n--XyZ--",
         "multipart part 1: Content-Disposition: unterminated quoted string"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(parse(bad[i].body, &p, &np, &a, &err), PS_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
    ps_arena_dispose(&a);
}

static void test_limits(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_mp_part_t *p;
    uint32_t np;
    ps_buf_t b = PS_BUF_INIT;
    for (int i = 0; i < PS_MP_MAX_PARTS; i++)
        ps_buf_printf(&b, "--XyZ\r\nContent-Disposition: form-data; name=p%d\r\n\r\n%d\r\n", i, i);
    PS_BUF_LIT(&b, "--XyZ--\r\n");
    assert_int_equal(ps_mp_parse(b.data, b.len, "XyZ", 3, &a, &p, &np, &err), 0);
    assert_int_equal(np, PS_MP_MAX_PARTS);
    assert_int_equal(p[63].len, 2);
    assert_memory_equal(p[63].data, "63", 2);
    b.len -= 9;
    PS_BUF_LIT(&b, "--XyZ\r\nContent-Disposition: form-data; name=x\r\n\r\nx\r\n--XyZ--\r\n");
    assert_int_equal(ps_mp_parse(b.data, b.len, "XyZ", 3, &a, &p, &np, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "multipart body: more than 64 parts");

    /* headers: exactly PS_MP_MAX_HEADER bytes are fine, one more is not */
    for (int extra = 0; extra <= 1; extra++) {
        ps_buf_reset(&b);
        PS_BUF_LIT(&b, "--XyZ\r\nContent-Disposition: form-data; name=a\r\nX: ");
        size_t fixed = 40 + 3 + 2; /* the disposition line, "X: ", the CRLF ending the X line */
        for (size_t i = 0; i < PS_MP_MAX_HEADER - fixed + (size_t)extra; i++)
            ps_buf_putc(&b, 'a');
        PS_BUF_LIT(&b, "\r\n\r\nd\r\n--XyZ--");
        int ret = ps_mp_parse(b.data, b.len, "XyZ", 3, &a, &p, &np, &err);
        if (extra == 0) {
            assert_int_equal(ret, 0);
            assert_int_equal(p[0].len, 1);
        } else {
            assert_int_equal(ret, PS_ETOOBIG);
            assert_string_equal(err.msg, "multipart part 1: headers longer than 8192 bytes");
        }
    }
    /* headers that never end, longer than the limit: refused as too long before the end is found */
    ps_buf_reset(&b);
    PS_BUF_LIT(&b, "--XyZ\r\nX: ");
    for (int i = 0; i < 100000; i++)
        ps_buf_putc(&b, 'a');
    assert_int_equal(ps_mp_parse(b.data, b.len, "XyZ", 3, &a, &p, &np, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "multipart part 1: headers longer than 8192 bytes");
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* ---- parameters ---- */

static int meta(const char *name, const char *format, const char *ct, ps_arena_t *a, ps_pyro_meta_t *m,
                ps_err_t *err)
{
    ps_pyro_params_t in = {0};
    ps_test_setstr(&in.name, &in.name_len, name);
    ps_test_setstr(&in.format, &in.format_len, format);
    ps_test_setstr(&in.content_type, &in.content_type_len, ct);
    return ps_pyro_meta_parse(&in, NOW, a, m, err);
}

static void labels_str(const ps_labels_t *ls, char *out, size_t size)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(ls, &b);
    snprintf(out, size, "%.*s", (int)b.len, (const char *)b.data);
    ps_buf_dispose(&b);
}

static void test_name(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_meta_t m;
    char s[1024];
    static const struct { const char *name, *format, *labels; } ok[] = {
        {"nodeapp{otel.scope.name=com.grafana.pyroscope/nodejs,otel.scope.version=0.6.4,env=test}", "pprof",
         "{env=\"test\", otel_scope_name=\"com.grafana.pyroscope/nodejs\", otel_scope_version=\"0.6.4\", "
         "pyroscope_spy=\"unknown\", service_name=\"nodeapp\"}"},
        {" my-app/x.y { a = 1 , b=2, } ", "pprof", "{a=\"1\", b=\"2\", pyroscope_spy=\"unknown\", service_name=\"my-app/x.y\"}"},
        {"app.cpu{__session_id__=s1,__x=1,k=}", NULL,
         "{__session_id__=\"s1\", pyroscope_spy=\"unknown\", service_name=\"app\"}"},
        {"app.cpu{service_name=svc,a=1,a=2}", NULL,
         "{a=\"2\", app_name=\"app\", pyroscope_spy=\"unknown\", service_name=\"svc\"}"},
        {"app.cpu{service_name=svc}", "pprof", "{pyroscope_spy=\"unknown\", service_name=\"svc\"}"},
        {"a.b.inuse_space{}", NULL, "{pyroscope_spy=\"unknown\", service_name=\"a.b\"}"},
        {"a.b.inuse_space", "pprof", "{pyroscope_spy=\"unknown\", service_name=\"a.b.inuse_space\"}"},
    };
    for (size_t i = 0; i < sizeof(ok) / sizeof(ok[0]); i++) {
        if (meta(ok[i].name, ok[i].format, NULL, &a, &m, &err) != 0)
            fail_msg("%s: %s", ok[i].name, err.msg);
        labels_str(&m.labels, s, sizeof(s));
        assert_string_equal(s, ok[i].labels);
    }
    assert_int_equal(meta("a.b.inuse_space", NULL, NULL, &a, &m, &err), 0);
    assert_string_equal(m.profile_name, "memory");
    assert_string_equal(m.sample_type, "inuse_space");
    assert_string_equal(m.sample_unit, "bytes");
    assert_false(m.scale);
    assert_int_equal(meta("a.wall", "lines", NULL, &a, &m, &err), 0);
    assert_int_equal(m.format, PS_PYRO_LINES);
    assert_string_equal(m.profile_name, "wall");
    assert_string_equal(m.sample_type, "wall");
    assert_string_equal(m.sample_unit, "nanoseconds");
    assert_true(m.scale);
    assert_int_equal(m.sample_rate, 100);
    assert_int_equal(m.from, NOW);
    assert_int_equal(m.until, NOW);

    /* 60 tags fit, 61 do not */
    ps_buf_t b = PS_BUF_INIT;
    PS_BUF_LIT(&b, "app{");
    for (int i = 0; i < 61; i++)
        ps_buf_printf(&b, "%sk%d=v", i ? "," : "", i);
    PS_BUF_LIT(&b, "}");
    ps_buf_putc(&b, 0);
    assert_int_equal(meta((const char *)b.data, "pprof", NULL, &a, &m, &err), PS_EINVAL);
    assert_string_equal(err.msg, "name: more than 60 tags (a series has at most 64 labels, with __name__, "
                                 "service_name, pyroscope_spy and app_name)");
    char *cut = strstr((const char *)b.data, ",k60=v");
    strcpy(cut, "}");
    assert_int_equal(meta((const char *)b.data, "pprof", NULL, &a, &m, &err), 0);
    assert_int_equal(m.labels.n, 62);
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

static void test_bad_params(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_meta_t m;
    static const struct { const char *name, *format, *ct; int code; const char *msg; } bad[] = {
        {NULL, NULL, NULL, PS_EINVAL, "name: missing (expected app.name{k=v,...})"},
        {"app", "jfr", NULL, PS_EUNSUPPORTED, "format=jfr is not supported by profstore: send pprof (format=pprof, "
         "or a multipart/form-data upload), folded lines (no format) or format=lines"},
        {"app", NULL, "binary/octet-stream+tree", PS_EUNSUPPORTED, "Content-Type binary/octet-stream+tree (the tree "
         "format) is not supported by profstore: send pprof or folded lines"},
        {"app", "x", NULL, PS_EINVAL, "format: unknown format \"x\" (expected pprof, lines, groups or none)"},
        {"app", NULL, "multipart/form-data", PS_EINVAL, "Content-Type: multipart/form-data without a boundary parameter"},
        {".cpu", NULL, NULL, PS_EINVAL, "name: the application name is empty before .cpu"},
        {"app{a.b=1,a_b=2}", "pprof", NULL, 0, NULL}, /* the same name once rewritten: the last value wins */
        {"app{pyroscope_spy=x}", "pprof", NULL, 0, NULL},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        int ret = meta(bad[i].name, bad[i].format, bad[i].ct, &a, &m, &err);
        assert_int_equal(ret, bad[i].code);
        if (bad[i].msg)
            assert_string_equal(err.msg, bad[i].msg);
    }
    ps_pyro_params_t in = {0};
    ps_test_setstr(&in.name, &in.name_len, "app");
    ps_test_setstr(&in.from, &in.from_len, "1796022000");
    ps_test_setstr(&in.until, &in.until_len, "now-1h");
    assert_int_equal(ps_pyro_meta_parse(&in, NOW + 7200 * PS_NS_PER_S, &a, &m, &err), 0);
    assert_int_equal(m.from, NOW);
    assert_int_equal(m.until, NOW + 3600 * PS_NS_PER_S);
    ps_test_setstr(&in.sample_rate, &in.sample_rate_len, "1000000001");
    assert_int_equal(ps_pyro_meta_parse(&in, NOW + 7200 * PS_NS_PER_S, &a, &m, &err), PS_EINVAL);
    assert_string_equal(err.msg, "sampleRate: expected an integer from 0 to 1000000000 (Hz), got \"1000000001\"");
    ps_test_setstr(&in.sample_rate, &in.sample_rate_len, "0");
    assert_int_equal(ps_pyro_meta_parse(&in, NOW + 7200 * PS_NS_PER_S, &a, &m, &err), 0);
    assert_false(m.scale);
    assert_string_equal(m.sample_type, "samples");
    ps_arena_dispose(&a);
}

/* ---- folded and lines ---- */

static void test_folded(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_meta_t m;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_pyro_params_t in = {0};
    ps_test_setstr(&in.name, &in.name_len, "app.cpu");
    ps_test_setstr(&in.sample_rate, &in.sample_rate_len, "250");
    ps_test_setstr(&in.until, &in.until_len, "1796022010");
    ps_test_setstr(&in.from, &in.from_len, "1796022000");
    assert_int_equal(ps_pyro_meta_parse(&in, NOW, &a, &m, &err), 0);
    ps_profile_t p;
    static const char body[] = "main;a b;c 3\r\nmain;a b 2\n\nmain 1";
    assert_int_equal(ps_pyro_folded(body, sizeof(body) - 1, false, &m, &lim, &a, &p, &err), 0);
    assert_int_equal(p.nsamples, 3);
    assert_int_equal(p.nfunctions, 3); /* main, "a b", c */
    assert_int_equal(p.nlocations, 3);
    assert_int_equal(p.period, 4000000);
    assert_int_equal(p.time_nanos, NOW);
    assert_int_equal(p.duration_nanos, 10 * PS_NS_PER_S);
    ps_str_t t = ps_profile_str(&p, p.sample_types[0].type), u = ps_profile_str(&p, p.sample_types[0].unit);
    assert_memory_equal(t.ptr, "cpu", 3);
    assert_memory_equal(u.ptr, "nanoseconds", 11);
    assert_int_equal(p.samples[0].nlocs, 3);
    assert_int_equal(p.samples[0].values[0], 12000000);
    ps_str_t leaf = ps_profile_str(&p, p.functions[p.locations[p.samples[0].locs[0] - 1].lines[0].function - 1].name);
    assert_int_equal(leaf.len, 1);
    assert_memory_equal(leaf.ptr, "c", 1);
    assert_int_equal(p.samples[1].values[0], 8000000);
    assert_int_equal(p.samples[2].nlocs, 1);
    /* the builder's profile is what the pprof decoder would give: it encodes and decodes again */
    ps_buf_t enc = PS_BUF_INIT;
    assert_int_equal(ps_pprof_encode(&p, -1, &enc, &err), 0);
    ps_profile_t q;
    assert_int_equal(ps_pprof_decode(enc.data, enc.len, &lim, &a, &q, &err), 0);
    assert_int_equal(q.nsamples, 3);
    ps_buf_dispose(&enc);

    static const char lines[] = "x;y\nx;y\nx\n";
    assert_int_equal(ps_pyro_folded(lines, sizeof(lines) - 1, true, &m, &lim, &a, &p, &err), 0);
    assert_int_equal(p.nsamples, 3);
    assert_int_equal(p.samples[0].values[0], 4000000);

    lim.max_stack_depth = 2;
    assert_int_equal(ps_pyro_folded(body, sizeof(body) - 1, false, &m, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "line 1: more than 2 frames");
    ps_pprof_limits_default(&lim);
    lim.max_samples = 2;
    assert_int_equal(ps_pyro_folded(body, sizeof(body) - 1, false, &m, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "more than 2 samples (lines)");
    ps_pprof_limits_default(&lim);
    lim.max_functions = 2;
    assert_int_equal(ps_pyro_folded(body, sizeof(body) - 1, false, &m, &lim, &a, &p, &err), PS_ETOOBIG);
    assert_string_equal(err.msg, "line 1: more than 2 distinct frames");
    ps_arena_dispose(&a);
}

static void test_folded_many_frames(void **state)
{
    /* arrays grow past their first sizes: 5,000 distinct frames over 1,000 lines */
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_meta_t m;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    assert_int_equal(meta("app.alloc_space", NULL, NULL, &a, &m, &err), 0);
    ps_buf_t b = PS_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        ps_buf_printf(&b, "f%d;g%d;h%d;i%d;j%d %d\n", i, i, i, i, i, i + 1);
    ps_profile_t p;
    assert_int_equal(ps_pyro_folded(b.data, b.len, false, &m, &lim, &a, &p, &err), 0);
    assert_int_equal(p.nfunctions, 5000);
    assert_int_equal(p.nstrings, 5003);
    assert_int_equal(p.nsamples, 1000);
    int64_t sum = 0;
    for (uint32_t i = 0; i < p.nsamples; i++)
        sum += p.samples[i].values[0];
    assert_int_equal(sum, 500500);
    assert_int_equal(p.period, 0);
    for (uint32_t i = 0; i < p.nfunctions; i++) { /* interned in the order they appear */
        ps_str_t n = ps_profile_str(&p, p.functions[i].name);
        char want[16];
        snprintf(want, sizeof(want), "%c%u", "fghij"[i % 5], i / 5);
        assert_int_equal(n.len, strlen(want));
        assert_memory_equal(n.ptr, want, n.len);
    }
    ps_buf_dispose(&b);
    ps_arena_dispose(&a);
}

/* ---- pprof uploads ---- */

static void decode(const char *rel, ps_arena_t *a, ps_profile_t *p)
{
    size_t n;
    uint8_t *b = ps_test_read_fixture(rel, &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    if (ps_pprof_decode(b, n, &lim, a, p, &err) != 0)
        fail_msg("%s: %s", rel, err.msg);
    free(b);
}

static void test_pprof_name(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    static const struct { const char *rel, *stc, *name; } cases[] = {
        {"go/cpu-01.pb.gz", NULL, "process_cpu"},
        {"go/heap-01.pb.gz", NULL, "memory"},
        {"go/allocs-01.pb.gz", NULL, "memory"},
        {"go/goroutine-01.pb.gz", NULL, "goroutine"},
        {"go/goroutine-01.pb.gz", "{\"goroutine\":{\"display-name\":\"goroutines\"}}", "goroutine"},
        {"go/threadcreate-01.pb.gz", NULL, "threadcreate"},
        {"go/mutex-01.pb.gz", "{\"contentions\":{\"display-name\":\"mutex_count\"},\"delay\":{\"display-name\":"
                              "\"mutex_duration\"}}", "mutex"},
        {"go/block-01.pb.gz", "{\"contentions\":{\"display-name\":\"block_count\",\"units\":\"lock_samples\"}}", "block"},
        {"go/block-01.pb.gz", NULL, "delay"},
        {"go/block-01.pb.gz", "{}", "delay"},
        {"node/cpu-01.pb.gz", NULL, "wall"}, /* wall first, as Pyroscope */
        {"node/wall-01.pb.gz", NULL, "wall"},
        {"node/heap-01.pb.gz", NULL, "memory"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        ps_profile_t p;
        decode(cases[i].rel, &a, &p);
        const char *name;
        if (ps_pyro_pprof_name(&p, cases[i].stc, cases[i].stc ? strlen(cases[i].stc) : 0, &a, &name, &err) != 0)
            fail_msg("%s: %s", cases[i].rel, err.msg);
        if (strcmp(name, cases[i].name) != 0)
            fail_msg("%s with %s: %s, want %s", cases[i].rel, cases[i].stc ? cases[i].stc : "no config", name,
                     cases[i].name);
    }
    ps_profile_t p;
    decode("go/mutex-01.pb.gz", &a, &p);
    const char *name;
    static const struct { const char *stc, *msg; } bad[] = {
        {"[1]", "sample_type_config: expected a JSON object (sample type -> settings)"},
        {"{\"a\":1}", "sample_type_config: \"a\": expected an object"},
        {"{\"a\":{\"display-name\":2}}", "sample_type_config: \"a\": display-name is not a string"},
        {"{\"a\":{},\"a\":{}}", "sample_type_config: invalid JSON at line 1, column 11: duplicate object key near '\"a\"'"},
        {"{", "sample_type_config: invalid JSON at line 1, column 1: string or '}' expected near end of file"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        assert_int_equal(ps_pyro_pprof_name(&p, bad[i].stc, strlen(bad[i].stc), &a, &name, &err), PS_EINVAL);
        assert_string_equal(err.msg, bad[i].msg);
    }
    ps_arena_dispose(&a);
}

/* The captured request i of an SDK run: its query parameters as the handler passes them. */
static void captured_prepare(const char *sdk, int i, int64_t want_ts, const char *want_types)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/pyroscope/%s/ingest-%02d.bin", ps_test_testdata(), sdk, i);
    size_t n;
    uint8_t *body = ps_test_read_path(path, &n);
    bool mp = strcmp(sdk, "nodejs-0.4.13") == 0;
    static const char *bounds[] = {NULL, "----formdata-undici-074999895113", "----formdata-undici-006014481849"};
    char ct[128];
    snprintf(ct, sizeof(ct), "multipart/form-data; boundary=%s", mp ? bounds[i] : "");
    ps_pyro_params_t in = {0};
    in.name = mp ? "nodeapp{env=test}" : "nodeapp{otel.scope.name=com.grafana.pyroscope/nodejs,env=test}";
    in.name_len = strlen(in.name);
    ps_test_setstr(&in.spy_name, &in.spy_name_len, "nodespy");
    in.format = mp ? NULL : "pprof";
    in.format_len = mp ? 0 : 5;
    in.content_type = mp ? ct : "application/octet-stream";
    in.content_type_len = strlen(in.content_type);
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_pyro_meta_t m;
    ps_append_t app;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    assert_int_equal(ps_pyro_meta_parse(&in, NOW, &a, &m, &err), 0);
    assert_int_equal(m.format, mp ? PS_PYRO_MULTIPART : PS_PYRO_PPROF);
    if (ps_pyro_prepare(body, n, &m, &lim, &a, &app, &err) != 0)
        fail_msg("%s %d: %s", sdk, i, err.msg);
    assert_int_equal(app.ts, want_ts);
    char types[512] = "";
    for (uint32_t s = 0; s < app.nseries; s++) {
        const char *v = ps_labels_value(&app.series_labels[s], "__name__");
        snprintf(types + strlen(types), sizeof(types) - strlen(types), "%s%s", s ? " " : "", v);
    }
    assert_string_equal(types, want_types);
    assert_string_equal(ps_labels_value(&app.series_labels[0], "service_name"), "nodeapp");
    assert_string_equal(ps_labels_value(&app.series_labels[0], "pyroscope_spy"), "nodespy");
    assert_string_equal(ps_labels_value(&app.series_labels[0], "env"), "test");
    /* a body cut anywhere is refused, never taken */
    for (size_t cut = 0; cut < n; cut += n / 37 + 1) {
        ps_append_t app2;
        assert_int_not_equal(ps_pyro_prepare(body, cut, &m, &lim, &a, &app2, &err), 0);
    }
    free(body);
    ps_arena_dispose(&a);
}

static void test_captured_bodies(void **state)
{
    captured_prepare("nodejs-0.6.4", 1, 1796022457476999936ll,
                     "wall:samples:count:wall:nanoseconds:delta wall:wall:nanoseconds:wall:nanoseconds:delta");
    captured_prepare("nodejs-0.4.13", 1, 1796022440404000000ll,
                     "wall:samples:count:wall:nanoseconds:delta wall:wall:nanoseconds:wall:nanoseconds:delta");
    captured_prepare("nodejs-0.4.13", 2, 1796022440408999936ll,
                     "memory:inuse_objects:count:inuse_space:bytes memory:inuse_space:bytes:inuse_space:bytes");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_boundary),
        cmocka_unit_test(test_parts),
        cmocka_unit_test(test_malformed),
        cmocka_unit_test(test_limits),
        cmocka_unit_test(test_name),
        cmocka_unit_test(test_bad_params),
        cmocka_unit_test(test_folded),
        cmocka_unit_test(test_folded_many_frames),
        cmocka_unit_test(test_pprof_name),
        cmocka_unit_test(test_captured_bodies),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
