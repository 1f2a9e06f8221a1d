/*
 * test_task.c - unit tests for web/task.c, what a pool thread fills without h2o: an answer's
 * Retry-After, Vary and gzip (as ps_http_send does them on the loop), the first answer standing,
 * the error shapes (Prometheus' JSON, plain text), a task's request headers and parameter errors,
 * and the hold count that sends a task back to its loop once.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <zlib.h>

#include "web/task.h"

typedef struct answer_fixture {
    ps_arena_t arena;
    ps_answer_t a;
} fix_t;

static void fix_init(fix_t *f, bool gzip_ok)
{
    f->arena = (ps_arena_t)PS_ARENA_INIT;
    ps_answer_init(&f->a, &f->arena, gzip_ok);
}

static void fix_dispose(fix_t *f)
{
    ps_answer_dispose(&f->a);
    ps_arena_dispose(&f->arena);
}

static void assert_body(const ps_answer_t *a, const char *want)
{
    assert_int_equal(a->body.len, strlen(want));
    assert_memory_equal(a->body.data, want, a->body.len);
}

/* n bytes of a JSON array of numbers */
static char *json_of(size_t n)
{
    char *s = malloc(n + 1);
    s[0] = '[';
    for (size_t i = 1; i < n - 1; i++)
        s[i] = i % 2 ? '1' : ',';
    s[n - 1] = ']';
    s[n] = '\0';
    return s;
}

static void test_small_answer_as_is(void **state)
{
    (void)state;
    fix_t f;
    fix_init(&f, true);
    ps_answer_set(&f.a, 200, "application/json", "{}", 2);
    assert_int_equal(f.a.status, 200);
    assert_string_equal(f.a.content_type, "application/json");
    assert_int_equal(f.a.nheaders, 0);
    assert_body(&f.a, "{}");
    /* a second answer is ignored: the first one stands */
    ps_answer_set(&f.a, 500, "text/plain", "x", 1);
    assert_int_equal(f.a.status, 200);
    assert_body(&f.a, "{}");
    fix_dispose(&f);
}

static void test_retry_after(void **state)
{
    (void)state;
    fix_t f;
    fix_init(&f, false);
    ps_answer_set(&f.a, 503, "text/plain; charset=utf-8", "busy\n", 5);
    assert_int_equal(f.a.nheaders, 1);
    assert_string_equal(f.a.headers[0].name, "retry-after");
    assert_string_equal(f.a.headers[0].value, PS_HTTP_RETRY_AFTER);
    fix_dispose(&f);

    fix_init(&f, false); /* the handler's own stands */
    ps_answer_header(&f.a, "retry-after", "30", 2);
    ps_answer_set(&f.a, 429, "application/json", "{}", 2);
    assert_int_equal(f.a.nheaders, 1);
    assert_string_equal(ps_answer_get_header(&f.a, "retry-after"), "30");
    fix_dispose(&f);
}

static void test_gzip_when_accepted(void **state)
{
    (void)state;
    char *js = json_of(4000);
    fix_t f;
    fix_init(&f, true);
    ps_answer_set(&f.a, 200, "application/json", js, 4000);
    assert_int_equal(f.a.nheaders, 2);
    assert_string_equal(f.a.headers[0].name, "vary");
    assert_string_equal(f.a.headers[0].value, "Accept-Encoding");
    assert_string_equal(f.a.headers[1].name, "content-encoding");
    assert_string_equal(f.a.headers[1].value, "gzip");
    assert_true(f.a.body.len < 4000);
    char out[4001];
    z_stream z = {0};
    assert_int_equal(inflateInit2(&z, 16 + MAX_WBITS), Z_OK);
    z.next_in = f.a.body.data;
    z.avail_in = (uInt)f.a.body.len;
    z.next_out = (Bytef *)out;
    z.avail_out = sizeof(out);
    assert_int_equal(inflate(&z, Z_FINISH), Z_STREAM_END);
    assert_int_equal(z.total_out, 4000);
    assert_memory_equal(out, js, 4000);
    inflateEnd(&z);
    fix_dispose(&f);

    /* not accepted: Vary only, the body as it is */
    fix_init(&f, false);
    ps_answer_set(&f.a, 200, "application/json", js, 4000);
    assert_int_equal(f.a.nheaders, 1);
    assert_string_equal(f.a.headers[0].name, "vary");
    assert_body(&f.a, js);
    fix_dispose(&f);

    /* not text: as it is, no Vary */
    fix_init(&f, true);
    ps_answer_set(&f.a, 200, "application/octet-stream", js, 4000);
    assert_int_equal(f.a.nheaders, 0);
    assert_body(&f.a, js);
    fix_dispose(&f);

    /* the handler chose the encoding (a snappy answer): nothing added */
    fix_init(&f, true);
    ps_answer_header(&f.a, "content-encoding", "snappy", 6);
    ps_answer_set(&f.a, 200, "text/plain", js, 4000);
    assert_int_equal(f.a.nheaders, 1);
    assert_body(&f.a, js);
    fix_dispose(&f);

    /* under 1 KiB: as it is */
    fix_init(&f, true);
    ps_answer_set(&f.a, 200, "application/json", js, PS_GZIP_MIN_BYTES - 1);
    assert_int_equal(f.a.nheaders, 0);
    fix_dispose(&f);
    free(js);
}

static void test_error_shapes(void **state)
{
    (void)state;
    fix_t f;
    fix_init(&f, false);
    ps_answer_prom_error(&f.a, PS_EINVAL, "bad \"x\"");
    assert_int_equal(f.a.status, 400);
    assert_string_equal(f.a.content_type, "application/json");
    assert_body(&f.a, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"bad \\\"x\\\"\"}\n");
    fix_dispose(&f);

    fix_init(&f, false);
    ps_answer_prom_error(&f.a, PS_ETIMEOUT, "too slow");
    assert_int_equal(f.a.status, 503);
    assert_body(&f.a, "{\"status\":\"error\",\"errorType\":\"timeout\",\"error\":\"too slow\"}\n");
    assert_string_equal(ps_answer_get_header(&f.a, "retry-after"), "1");
    fix_dispose(&f);

    fix_init(&f, false);
    ps_answer_prom_error_status(&f.a, 405, "no");
    assert_int_equal(f.a.status, 405);
    assert_body(&f.a, "{\"status\":\"error\",\"errorType\":\"bad_data\",\"error\":\"no\"}\n");
    fix_dispose(&f);

    fix_init(&f, false);
    ps_answer_text_error(&f.a, PS_EINVAL, "snappy: corrupt input");
    assert_int_equal(f.a.status, 400);
    assert_string_equal(f.a.content_type, "text/plain; charset=utf-8");
    assert_body(&f.a, "snappy: corrupt input\n");
    fix_dispose(&f);
}

static void on_released(ps_task_t *t)
{
    (*(int *)t->runner)++;
}

static void test_task(void **state)
{
    (void)state;
    ps_arena_t arena = PS_ARENA_INIT;
    ps_task_t t;
    memset(&t, 0, sizeof(t));
    t.arena = &arena;
    ps_answer_init(&t.ans, &arena, false);
    ps_header_t h[2] = {{"content-type", "application/json", 12, 16}, {"x-a", "1", 3, 1}};
    t.headers = h;
    t.nheaders = 2;
    size_t n;
    assert_string_equal(ps_task_header(&t, "content-type", &n), "application/json");
    assert_int_equal(n, 16);
    assert_null(ps_task_header(&t, "content-encoding", &n));
    assert_int_equal(n, 0);

    /* the parse's error comes back to the run that asks for the parameters */
    t.params_ret = PS_EINVAL;
    ps_err_set(&t.params_err, PS_EINVAL, "invalid URL escape in parameter \"q\"");
    ps_params_t p;
    ps_err_t err;
    assert_int_equal(ps_task_params(&t, true, &p, &err), PS_EINVAL);
    assert_string_equal(err.msg, "invalid URL escape in parameter \"q\"");
    assert_int_equal(ps_task_params(&t, false, &p, &err), 0);
    assert_int_equal(p.n, 0);

    /* the error shape of the route: Prometheus' when none */
    ps_task_fail(&t, PS_EUNAVAIL, "busy");
    assert_int_equal(t.ans.status, 503);
    assert_body(&t.ans, "{\"status\":\"error\",\"errorType\":\"unavailable\",\"error\":\"busy\"}\n");

    /* back to the loop once, at the last release, whichever thread releases last */
    int released = 0;
    t.runner = &released;
    t.on_released = on_released;
    atomic_init(&t.holds, 1);
    ps_task_hold(&t);
    ps_task_hold(&t);
    ps_task_release(&t);
    ps_task_release(&t);
    assert_int_equal(released, 0);
    ps_task_release(&t);
    assert_int_equal(released, 1);
    ps_answer_dispose(&t.ans);
    ps_arena_dispose(&arena);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_small_answer_as_is), cmocka_unit_test(test_retry_after),
        cmocka_unit_test(test_gzip_when_accepted), cmocka_unit_test(test_error_shapes),
        cmocka_unit_test(test_task),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
