/*
 * fuzz_pyingest.c - libFuzzer target for Pyroscope's /ingest (src/ingest/pyroscope.c, multipart.c):
 * the parameter parser (name with its tags, from/until, sampleRate, format, the multipart boundary)
 * and the body (multipart/form-data with sample_type_config, raw pprof, folded and lines text).
 *
 * Input: "<query string>\n<Content-Type>\n<body>", as run.sh writes the seeds from the captured
 * SDK requests (testdata/pyroscope/nodejs-*). The query string is split at '&' and '=' and
 * percent-decoded like the HTTP layer does. Every failure must be PS_EINVAL, PS_ETOOBIG or
 * PS_EUNSUPPORTED with a message; a success must give series whose labels hold service_name,
 * pyroscope_spy and a __name__ with five or six ':'-separated parts. ps_mp_parse is also run on
 * the body on its own, and each part must lie inside the body. Built by build.sh, run by run.sh.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/timeutil.h"
#include "ingest/ingest.h"

#define PS_FUZZ_NAME "fuzz_pyingest"
#include "fuzzutil.h"

static int hexval(char c)
{
    return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* percent-decodes s[0..n) into a NUL-terminated copy from a ('+' is a space) */
static char *pdecode(const char *s, size_t n, ps_arena_t *a, size_t *out_len)
{
    char *o = ps_arena_alloc(a, n + 1);
    size_t j = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] == '%' && i + 2 < n && hexval(s[i + 1]) >= 0 && hexval(s[i + 2]) >= 0) {
            o[j++] = (char)(hexval(s[i + 1]) * 16 + hexval(s[i + 2]));
            i += 2;
        } else {
            o[j++] = s[i] == '+' ? ' ' : s[i];
        }
    }
    o[j] = 0;
    *out_len = j;
    return o;
}

static void set_param(ps_pyro_params_t *in, const char *k, size_t kl, const char *v, size_t vl)
{
    static const struct { const char *name; size_t off, loff; } map[] = {
        {"name", offsetof(ps_pyro_params_t, name), offsetof(ps_pyro_params_t, name_len)},
        {"from", offsetof(ps_pyro_params_t, from), offsetof(ps_pyro_params_t, from_len)},
        {"until", offsetof(ps_pyro_params_t, until), offsetof(ps_pyro_params_t, until_len)},
        {"sampleRate", offsetof(ps_pyro_params_t, sample_rate), offsetof(ps_pyro_params_t, sample_rate_len)},
        {"spyName", offsetof(ps_pyro_params_t, spy_name), offsetof(ps_pyro_params_t, spy_name_len)},
        {"units", offsetof(ps_pyro_params_t, units), offsetof(ps_pyro_params_t, units_len)},
        {"aggregationType", offsetof(ps_pyro_params_t, aggregation), offsetof(ps_pyro_params_t, aggregation_len)},
        {"format", offsetof(ps_pyro_params_t, format), offsetof(ps_pyro_params_t, format_len)},
    };
    for (size_t i = 0; i < sizeof(map) / sizeof(map[0]); i++)
        if (strlen(map[i].name) == kl && memcmp(map[i].name, k, kl) == 0) {
            *(const char **)((char *)in + map[i].off) = v;
            *(size_t *)((char *)in + map[i].loff) = vl;
        }
}

static void check_failure(int ret, const ps_err_t *err, const char *what)
{
    CHECK(ret == PS_EINVAL || ret == PS_ETOOBIG || ret == PS_EUNSUPPORTED, "%s: unexpected code %d (%s)", what, ret,
          err->msg);
    CHECK(err->msg[0] != 0, "%s: error %d without a message", what, ret);
}

static void check_append(const ps_append_t *app)
{
    CHECK(app->nseries >= 1, "no series");
    for (uint32_t i = 0; i < app->nseries; i++) {
        const ps_labels_t *ls = &app->series_labels[i];
        CHECK(ps_labels_value(ls, "service_name") != NULL, "series %u: no service_name", i);
        CHECK(ps_labels_value(ls, "pyroscope_spy") != NULL, "series %u: no pyroscope_spy", i);
        const char *nm = ps_labels_value(ls, "__name__");
        CHECK(nm != NULL, "series %u: no __name__", i);
        int colons = 0;
        for (const char *c = nm; *c; c++)
            colons += *c == ':';
        CHECK(colons == 4 || colons == 5, "series %u: __name__ %s", i, nm);
        CHECK(app->type_index[i] < app->profile->ntypes, "series %u: type index", i);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *s = (const char *)data;
    const char *nl1 = memchr(s, '\n', size);
    if (nl1 == NULL)
        return 0;
    const char *nl2 = memchr(nl1 + 1, '\n', size - (size_t)(nl1 + 1 - s));
    if (nl2 == NULL)
        return 0;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pyro_params_t in = {0};
    for (const char *q = s; q < nl1;) {
        const char *amp = memchr(q, '&', (size_t)(nl1 - q));
        const char *end = amp ? amp : nl1;
        const char *eq = memchr(q, '=', (size_t)(end - q));
        size_t kl, vl;
        char *k = pdecode(q, (size_t)((eq ? eq : end) - q), &a, &kl);
        char *v = eq ? pdecode(eq + 1, (size_t)(end - eq - 1), &a, &vl) : pdecode("", 0, &a, &vl);
        set_param(&in, k, kl, v, vl);
        q = end + 1;
    }
    size_t ctl = (size_t)(nl2 - nl1 - 1);
    in.content_type = ctl ? nl1 + 1 : NULL;
    in.content_type_len = ctl;
    const uint8_t *body = (const uint8_t *)nl2 + 1;
    size_t n = size - (size_t)(body - data);

    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    lim.max_inflated = 8u << 20;
    ps_err_t err;
    ps_pyro_meta_t m;
    int ret = ps_pyro_meta_parse(&in, 1796022000ll * PS_NS_PER_S, &a, &m, &err);
    if (ret != 0) {
        check_failure(ret, &err, "meta");
    } else {
        CHECK(ps_labels_value(&m.labels, "service_name") != NULL, "meta without service_name");
        ps_append_t app;
        ret = ps_pyro_prepare(body, n, &m, &lim, &a, &app, &err);
        if (ret != 0)
            check_failure(ret, &err, "prepare");
        else
            check_append(&app);
        if (m.format == PS_PYRO_MULTIPART) {
            ps_mp_part_t *parts;
            uint32_t np;
            ret = ps_mp_parse(body, n, m.boundary, m.boundary_len, &a, &parts, &np, &err);
            if (ret != 0) {
                check_failure(ret, &err, "multipart");
            } else {
                CHECK(np >= 1 && np <= PS_MP_MAX_PARTS, "%u parts", np);
                for (uint32_t i = 0; i < np; i++)
                    CHECK(parts[i].data >= body && parts[i].data + parts[i].len <= body + n && parts[i].name_len > 0,
                          "part %u outside the body", i);
            }
        }
    }
    ps_arena_dispose(&a);
    return 0;
}
