/*
 * test_promqltest.c - Prometheus 3's own PromQL test files (tests/promql3/testdata/<name>.test, see its
 * README) run against profstore's PromQL engine (parser/promql.h, query/promql_eval.h) over an
 * in-memory sample source, in the test language of Prometheus' promql/promqltest/test.go:
 *
 *  - `load[_with_nhcb] <step>`: series `name{l="v", "utf8.name"="v"} 1+2x10 _ stale _x3`, added to
 *    what is loaded (a series given twice in one load: its last line); native histogram values
 *    ({{...}}) are not stored, their series are remembered as histogram series (and so are the
 *    native histograms with custom buckets that `_with_nhcb` would make of classic ones);
 *    `metric@st ...` lines (start timestamps) are read and left out;
 *  - `clear`: forget everything;
 *  - `eval instant at <t> <expr>`: the query at t, then test.go's range-mode check (t - 1m to
 *    t + 1m, step 1m: the points at t must be the same answer) unless the query calls start(),
 *    end(), range() or step() or is ordered, and test.go's @ variants (every selector and subquery
 *    outside subqueries at @ t, run at -10t, 0, t/5, t, 10t; t = 0: -1s, 0, 1s) unless it calls a
 *    function whose answer depends on the evaluation time;
 *  - `eval range from <a> to <b> step <s> <expr>`: the range query;
 *  - expectations: `expect fail [msg|regex: ...]`, `eval_fail` with `expected_fail_message` /
 *    `expected_fail_regexp`, `expect ordered` / `eval_ordered`, `expect warn|info [...]` and
 *    `eval_warn|eval_info`, `expect no_warn|no_info`, `expect range vector from .. to .. step ..`,
 *    `expect string "..."`, a number alone (a scalar answer) and series lines;
 *  - annotations as test.go's checkAnnotations: each `expect warn|info [msg|regex]` matches one of
 *    the answer's, each of its warnings (infos) matches an `expect warn` (`info`) when there is one,
 *    none with `expect no_warn|no_info`, at least one with eval_warn|eval_info;
 *  - answers compared as test.go's compareResult: series as label sets (positions only when
 *    ordered), values within a relative 1e-6 (almost.Equal: NaN equals NaN, a stale marker only a
 *    stale marker), a range answer's points at start + i * step, sorted series.
 *
 * Each eval ends passed, failed (with the first reason) or unsupported: it expects a native
 * histogram, or it fails and one of its selectors matches a histogram series. The outcomes must be
 * those of tests/promql3/expected.txt (each eval that does not pass, by file and line, with its
 * reason; and the number of evals of each file): an eval that passed and fails now, or that was
 * listed and passes now, fails the test. PS_PROMQLTEST_WRITE=<path> writes the current outcomes
 * in that form (to update the list); PS_PROMQLTEST_FILE=<name> runs one file and prints every
 * failure; PS_PROMQLTEST_COMPAT=2 runs them with Prometheus 2.42's semantics (--promql.compat=2)
 * and only counts.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <time.h>

#include <cmocka.h>

#include "../testutil.h"

#include "parser/promql.h"
#include "parser/regex.h"
#include "query/promql_eval.h"
#include "memsrc.h"

#ifndef PS_SOURCE_DIR
#define PS_SOURCE_DIR "."
#endif
#define TESTDATA PS_SOURCE_DIR "/tests/promql3/testdata"
#define EXPECTED PS_SOURCE_DIR "/tests/promql3/expected.txt"

#define STALE_BITS 0x7ff0000000000002ull
#define EPSILON 0.000001

/* ---- small things ---- */

static char *xstrndup(const char *s, size_t n)
{
    char *d = malloc(n + 1);
    assert_non_null(d);
    memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static char *xprintf(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    char *s = NULL;
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

static bool is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b == STALE_BITS;
}

static double stale_nan(void)
{
    uint64_t b = STALE_BITS;
    double v;
    memcpy(&v, &b, 8);
    return v;
}

/* util/almost.Equal */
static bool almost_equal(double a, double b)
{
    if (is_stale(a) || is_stale(b))
        return is_stale(a) && is_stale(b);
    if (isnan(a) && isnan(b))
        return true;
    if (a == b)
        return true;
    double min_normal = 2.2250738585072014e-308;
    double abs_sum = fabs(a) + fabs(b), diff = fabs(a - b);
    if (a == 0 || b == 0 || abs_sum < min_normal)
        return diff < EPSILON * min_normal;
    return diff / fmin(abs_sum, 1.7976931348623157e308) < EPSILON;
}

/* model.ParseDuration: [0-9]+(y|w|d|h|m|s|ms) ..., or "0"; -1 when it is not one */
static int parse_dur(const char *s, size_t n, int64_t *out)
{
    static const struct {
        const char *u;
        int64_t ms;
    } units[] = {{"ms", 1}, {"y", 365LL * 86400000}, {"w", 7LL * 86400000}, {"d", 86400000}, {"h", 3600000},
                 {"m", 60000}, {"s", 1000}};
    while (n > 0 && (*s == ' ' || *s == '\t'))
        s++, n--;
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t'))
        n--;
    if (n == 1 && *s == '0') {
        *out = 0;
        return 0;
    }
    int64_t total = 0;
    size_t i = 0;
    if (n == 0)
        return -1;
    while (i < n) {
        int64_t v = 0;
        size_t d = i;
        while (i < n && s[i] >= '0' && s[i] <= '9')
            v = v * 10 + (s[i++] - '0');
        if (i == d)
            return -1;
        size_t k;
        for (k = 0; k < sizeof(units) / sizeof(units[0]); k++) {
            size_t ul = strlen(units[k].u);
            if (i + ul <= n && memcmp(s + i, units[k].u, ul) == 0 &&
                !(ul == 1 && units[k].u[0] == 'm' && i + 1 < n && s[i + 1] == 's')) {
                total += v * units[k].ms;
                i += ul;
                break;
            }
        }
        if (k == sizeof(units) / sizeof(units[0]))
            return -1;
    }
    *out = total;
    return 0;
}

/* ---- the in-memory source ---- */

typedef struct mem_src {
    mem_series_t *v;
    uint32_t n, cap;
    mem_series_t *hist; /* series with native histogram samples (labels only) */
    uint32_t nhist, caphist;
    ps_arena_t a;
} mem_src_t;

static int mem_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                      ps_pq_series_t **out, uint32_t *nout, ps_err_t *err)
{
    mem_src_t *m = ctx;
    return memsrc_select(m->v, m->n, sel, mint, maxt, arena, budget, out, nout, err);
}

static void mem_clear(mem_src_t *m)
{
    for (uint32_t i = 0; i < m->n; i++) {
        free(m->v[i].s);
        free(m->v[i].key);
    }
    for (uint32_t i = 0; i < m->nhist; i++)
        free(m->hist[i].key);
    free(m->v);
    free(m->hist);
    ps_arena_dispose(&m->a);
    memset(m, 0, sizeof(*m));
}

/* A key of a label set (sorted by name): name \1 value \2 ... */
static char *labels_key(const ps_labels_t *ls)
{
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t i = 0; i < ls->n; i++) {
        ps_buf_append(&b, ls->pairs[i].name, ls->pairs[i].nlen);
        ps_buf_putc(&b, 1);
        ps_buf_append(&b, ls->pairs[i].value, ls->pairs[i].vlen);
        ps_buf_putc(&b, 2);
    }
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

static char *labels_str(const ps_labels_t *ls)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(ls, &b);
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

static mem_series_t *series_get(mem_series_t **v, uint32_t *n, uint32_t *cap, const ps_labels_t *ls, ps_arena_t *a)
{
    char *key = labels_key(ls);
    for (uint32_t i = 0; i < *n; i++)
        if (strcmp((*v)[i].key, key) == 0) {
            free(key);
            return &(*v)[i];
        }
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 16;
        *v = realloc(*v, *cap * sizeof(mem_series_t));
    }
    mem_series_t *s = &(*v)[(*n)++];
    ps_labels_t c = {ls->n, ps_arena_alloc(a, (ls->n + 1) * sizeof(ps_label_pair_t)), 0};
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        c.pairs[i] = (ps_label_pair_t){ps_arena_strndup(a, p->name, p->nlen), ps_arena_strndup(a, p->value, p->vlen),
                                       p->nlen, p->vlen};
    }
    *s = (mem_series_t){c, key, NULL, 0, 0};
    return s;
}

static int cmp_sample(const void *a, const void *b)
{
    const ps_float_sample_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

/* ---- series descriptions (parser.ParseSeriesDesc) ---- */

enum { V_FLOAT, V_OMITTED, V_HIST };

typedef struct sval {
    double v;
    int kind;
} sval_t;

typedef struct sdesc {
    ps_labels_t labels; /* sorted, from the arena */
    sval_t *v;
    uint32_t n, cap;
} sdesc_t;

static void sd_push(sdesc_t *d, int kind, double v)
{
    if (d->n == d->cap) {
        d->cap = d->cap ? d->cap * 2 : 16;
        d->v = realloc(d->v, d->cap * sizeof(sval_t));
    }
    d->v[d->n++] = (sval_t){v, kind};
}

static int hexval(int c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* A Go string literal at s[*i] ("...", '...' or `...`), unquoted (strconv.Unquote); NULL if bad. */
static char *unquote(const char *s, size_t *i, size_t *len)
{
    char q = s[*i];
    size_t j = *i + 1;
    ps_buf_t b = PS_BUF_INIT;
    while (s[j] && s[j] != q) {
        if (s[j] == '\\' && q != '`') {
            char c = s[j + 1];
            const char *esc = "n\nt\tr\r\\\\\"\"''a\ab\bf\fv\v";
            const char *e = NULL;
            for (const char *k = esc; *k; k += 2)
                if (*k == c)
                    e = k;
            if (e) {
                ps_buf_putc(&b, e[1]);
                j += 2;
            } else if (c == 'x' || c == 'u' || c == 'U') {
                int nd = c == 'x' ? 2 : c == 'u' ? 4 : 8;
                uint32_t v = 0;
                for (int k = 0; k < nd; k++) {
                    int h = hexval(s[j + 2 + k]);
                    if (h < 0) {
                        ps_buf_dispose(&b);
                        return NULL;
                    }
                    v = v * 16 + (uint32_t)h;
                }
                if (c == 'x')
                    ps_buf_putc(&b, (char)v);
                else
                    ps_buf_put_utf8(&b, v);
                j += 2 + (size_t)nd;
            } else if (c >= '0' && c <= '7') {
                uint32_t v = 0;
                for (int k = 0; k < 3; k++)
                    v = v * 8 + (uint32_t)(s[j + 1 + k] - '0');
                ps_buf_putc(&b, (char)v);
                j += 4;
            } else {
                ps_buf_dispose(&b);
                return NULL;
            }
        } else {
            ps_buf_putc(&b, s[j++]);
        }
    }
    if (s[j] != q) {
        ps_buf_dispose(&b);
        return NULL;
    }
    *i = j + 1;
    *len = b.len;
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

/* Names in load lines as the test engine reads them (promqltest's TestParserOpts turn on
 * EnableUnquotedUTF8Names): besides the classic characters, any non-ASCII byte (the letters of a
 * UTF-8 name, e.g. 温度{場所="東京"}) and, after the first character, dots. */
static bool is_name_start(char c, bool metric)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (metric && c == ':') ||
           (unsigned char)c >= 0x80;
}

static bool is_name_char(char c, bool metric)
{
    return is_name_start(c, metric) || (c >= '0' && c <= '9') || c == '.';
}

static void skip_ws(const char *s, size_t *i)
{
    while (s[*i] == ' ' || s[*i] == '\t')
        (*i)++;
}

/* a number at s (Inf, NaN, decimal with exponent, optional sign): its length, 0 if none */
static size_t scan_number(const char *s)
{
    size_t i = 0;
    if (s[i] == '+' || s[i] == '-')
        i++;
    if (strncasecmp(s + i, "inf", 3) == 0)
        return i + 3;
    if (strncasecmp(s + i, "nan", 3) == 0)
        return i + 3;
    size_t d = i;
    while (s[i] >= '0' && s[i] <= '9')
        i++;
    if (s[i] == '.') {
        i++;
        while (s[i] >= '0' && s[i] <= '9')
            i++;
    }
    if (i == d || (i == d + 1 && s[d] == '.'))
        return 0;
    if (s[i] == 'e' || s[i] == 'E') {
        size_t k = i + 1;
        if (s[k] == '+' || s[k] == '-')
            k++;
        if (s[k] >= '0' && s[k] <= '9') {
            while (s[k] >= '0' && s[k] <= '9')
                k++;
            i = k;
        }
    }
    return i;
}

static double num_of(const char *s, size_t n)
{
    char b[64];
    snprintf(b, sizeof(b), "%.*s", (int)n, s);
    return strtod(b, NULL);
}

/* One value item: _ _xN stale v vxN v+dxN v-dxN {{h}} {{h}}xN {{h}}+{{h}}xN; false if bad. */
static bool parse_item(const char *t, size_t n, sdesc_t *d)
{
    char *tok = xstrndup(t, n);
    bool ok = false;
    if (strcmp(tok, "_") == 0) {
        sd_push(d, V_OMITTED, 0);
        ok = true;
    } else if (strncmp(tok, "_x", 2) == 0) {
        long k = strtol(tok + 2, NULL, 10);
        for (long i = 0; i < k; i++)
            sd_push(d, V_OMITTED, 0);
        ok = k > 0;
    } else if (strcmp(tok, "stale") == 0) {
        sd_push(d, V_FLOAT, stale_nan());
        ok = true;
    } else if (strncmp(tok, "{{", 2) == 0) {
        /* native histograms: how many, not what */
        char *x = strrchr(tok, '}');
        long k = 0;
        if (x && x[1] == 'x')
            k = strtol(x + 2, NULL, 10);
        for (long i = 0; i <= k; i++)
            sd_push(d, V_HIST, 0);
        ok = true;
    } else {
        size_t a = scan_number(tok);
        if (a > 0) {
            double v = num_of(tok, a);
            const char *p = tok + a;
            if (*p == 0) {
                sd_push(d, V_FLOAT, v);
                ok = true;
            } else if (*p == 'x') {
                long k = strtol(p + 1, NULL, 10);
                for (long i = 0; i <= k; i++)
                    sd_push(d, V_FLOAT, v);
                ok = true;
            } else if (*p == '+' || *p == '-') {
                size_t b = scan_number(p);
                if (b > 0 && p[b] == 'x') {
                    double delta = num_of(p, b);
                    long k = strtol(p + b + 1, NULL, 10);
                    for (long i = 0; i <= k; i++) {
                        sd_push(d, V_FLOAT, v);
                        v += delta;
                    }
                    ok = true;
                }
            }
        }
    }
    free(tok);
    return ok;
}

/* A series description: labels then values. false with *why if bad. */
static bool parse_sdesc(const char *s, ps_arena_t *a, sdesc_t *d, const char **why)
{
    memset(d, 0, sizeof(*d));
    ps_label_pair_t pairs[PS_LABELS_MAX + 1];
    uint32_t np = 0;
    size_t i = 0;
    if (is_name_start(s[0], true)) {
        while (is_name_char(s[i], true))
            i++;
        pairs[np++] = (ps_label_pair_t){"__name__", ps_arena_strndup(a, s, i), 8, (uint32_t)i};
    }
    skip_ws(s, &i);
    if (s[i] == '{' && s[i + 1] != '{') {
        i++;
        for (;;) {
            skip_ws(s, &i);
            if (s[i] == ',') {
                i++;
                continue;
            }
            if (s[i] == '}') {
                i++;
                break;
            }
            char *name;
            size_t nl;
            if (s[i] == '"' || s[i] == '\'' || s[i] == '`') {
                name = unquote(s, &i, &nl);
                if (name == NULL) {
                    *why = "bad quoted name";
                    return false;
                }
            } else if (is_name_start(s[i], false)) {
                size_t st = i;
                while (is_name_char(s[i], false))
                    i++;
                name = xstrndup(s + st, i - st);
                nl = i - st;
            } else {
                *why = "bad label";
                return false;
            }
            skip_ws(s, &i);
            if (s[i] != '=') { /* a quoted metric name alone */
                if (np >= PS_LABELS_MAX) {
                    free(name);
                    *why = "too many labels";
                    return false;
                }
                pairs[np++] = (ps_label_pair_t){"__name__", ps_arena_strndup(a, name, nl), 8, (uint32_t)nl};
                free(name);
                continue;
            }
            i++;
            skip_ws(s, &i);
            size_t vl;
            char *val = s[i] == '"' || s[i] == '\'' || s[i] == '`' ? unquote(s, &i, &vl) : NULL;
            if (val == NULL || np >= PS_LABELS_MAX) {
                free(name);
                free(val);
                *why = "bad label value";
                return false;
            }
            pairs[np++] = (ps_label_pair_t){ps_arena_strndup(a, name, nl), ps_arena_strndup(a, val, vl), (uint32_t)nl,
                                            (uint32_t)vl};
            free(name);
            free(val);
        }
    }
    /* sort by name; a later pair of the same name wins; empty values are no label */
    ps_labels_t ls = {0, ps_arena_alloc(a, (np + 1) * sizeof(ps_label_pair_t)), 0};
    for (uint32_t k = 0; k < np; k++) {
        uint32_t j = 0;
        while (j < ls.n && strcmp(ls.pairs[j].name, pairs[k].name) < 0)
            j++;
        if (j < ls.n && strcmp(ls.pairs[j].name, pairs[k].name) == 0) {
            ls.pairs[j] = pairs[k];
            continue;
        }
        memmove(&ls.pairs[j + 1], &ls.pairs[j], (ls.n - j) * sizeof(ps_label_pair_t));
        ls.pairs[j] = pairs[k];
        ls.n++;
    }
    uint32_t w = 0;
    for (uint32_t k = 0; k < ls.n; k++)
        if (ls.pairs[k].vlen > 0)
            ls.pairs[w++] = ls.pairs[k];
    ls.n = w;
    d->labels = ls;
    /* values: whitespace separated, a histogram's {{ ... }} taken whole */
    for (;;) {
        skip_ws(s, &i);
        if (!s[i])
            break;
        size_t st = i;
        int depth = 0;
        while (s[i] && (depth > 0 || (s[i] != ' ' && s[i] != '\t'))) {
            if (s[i] == '{')
                depth++;
            else if (s[i] == '}')
                depth--;
            i++;
        }
        if (!parse_item(s + st, i - st, d)) {
            *why = "bad value";
            return false;
        }
    }
    return true;
}

/* ---- the test file ---- */

enum { EX_FAIL, EX_WARN, EX_INFO };

typedef struct xseries {
    char *key, *str;
    sval_t *v;
    uint32_t n;
    int pos;
} xseries_t;

/* an `expect warn|info [msg: m | regex: r]` line: msg, else re (NULL: any) */
typedef struct xann {
    char *msg;
    ps_regex_t *re;
} xann_t;

typedef struct eval {
    int line;
    char *expr;
    bool is_range;
    int64_t start, end, step, at;
    bool fail, ordered, warn, info, exclude_range, has_string, expect_scalar;
    char *fail_msg;      /* expected_fail_message / expect fail msg: */
    ps_regex_t *fail_re; /* expected_fail_regexp / expect fail regex: */
    char *string;
    xseries_t *x;
    uint32_t nx;
    bool hist;           /* expects a native histogram */
    char *bad;           /* the eval line itself is not understood */
    xann_t ann[2][16];   /* expect warn / expect info lines ([0] warn, [1] info) */
    uint32_t nann[2];
    bool no_ann[2];      /* expect no_warn / no_info */
} eval_t;

static void eval_free(eval_t *e)
{
    for (uint32_t i = 0; i < e->nx; i++) {
        free(e->x[i].key);
        free(e->x[i].str);
        free(e->x[i].v);
    }
    free(e->x);
    free(e->expr);
    free(e->fail_msg);
    free(e->string);
    free(e->bad);
    ps_regex_free(e->fail_re);
    for (int k = 0; k < 2; k++)
        for (uint32_t i = 0; i < e->nann[k]; i++) {
            free(e->ann[k][i].msg);
            ps_regex_free(e->ann[k][i].re);
        }
}

/* a Go regexp.MatchString pattern (unanchored) */
static ps_regex_t *compile_search(const char *pat)
{
    char *p = xprintf("(?:.*)(?:%s)(?:.*)", pat);
    ps_regex_t *re = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    if (ps_regex_compile(p, strlen(p), PS_REGEX_INVALID_UTF, &re, &err) != 0)
        re = NULL;
    free(p);
    return re;
}

static bool re_search(ps_regex_t *re, const char *s)
{
    ps_regex_match_t *md = ps_regex_match_new(1);
    int r = ps_regex_match(re, s, strlen(s), md);
    ps_regex_match_free(md);
    return r > 0;
}

static char *trim(char *s)
{
    while (*s == ' ' || *s == '\t')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r'))
        s[--n] = 0;
    return s;
}

/* test.go's parseNumber: strconv.ParseInt(s, 0, 64), else ParseFloat */
static bool parse_number_line(const char *s, double *v)
{
    char *end;
    if (!*s)
        return false;
    errno = 0;
    long long n = strtoll(s, &end, 0);
    if (*end == 0 && errno == 0 && !(s[0] == '0' && s[1] >= '0' && s[1] <= '9' && strpbrk(s, "89"))) {
        *v = (double)n;
        return true;
    }
    size_t k = scan_number(s);
    if (k > 0 && s[k] == 0) {
        *v = num_of(s, k);
        return true;
    }
    if (strcasecmp(s, "+inf") == 0 || strcasecmp(s, "-inf") == 0 || strcasecmp(s, "infinity") == 0) {
        *v = s[0] == '-' ? -INFINITY : INFINITY;
        return true;
    }
    return false;
}

/* ---- running ---- */

enum { R_PASS, R_FAIL, R_UNSUPPORTED };

typedef struct outcome {
    char *file;
    int line;
    int result;
    char *why;
} outcome_t;

typedef struct runner {
    mem_src_t m;
    ps_arena_t a;
    outcome_t *out;
    uint32_t nout, capout;
} runner_t;

static const char *const unsafe_funcs[] = {"days_in_month", "day_of_month", "day_of_week", "day_of_year", "end",
                                           "hour", "minute", "month", "year", "predict_linear", "range", "start",
                                           "step", "time", "timestamp", NULL};

/* test.go's atModifierTestCases' Inspect: @ ts on every selector and subquery outside subqueries;
 * false when it meets a call of a function whose answer depends on the evaluation time. */
static bool set_at(ps_pq_node_t *e, int64_t ts)
{
    if (e == NULL)
        return true;
    switch (e->kind) {
    case PS_PQ_VECTOR:
    case PS_PQ_SUBQUERY:
        if (e->at == PS_PQ_AT_NONE) {
            e->at = PS_PQ_AT_TIME;
            e->at_ms = ts;
        }
        return true;
    case PS_PQ_MATRIX: return set_at(e->expr, ts);
    case PS_PQ_CALL: {
        bool ok = true;
        for (int i = 0; unsafe_funcs[i] != NULL; i++)
            if (strcmp(e->func->name, unsafe_funcs[i]) == 0)
                ok = false;
        for (uint32_t i = 0; i < e->nargs; i++)
            ok &= set_at(e->args[i], ts);
        return ok;
    }
    case PS_PQ_AGG: {
        bool a = set_at(e->param, ts);
        return set_at(e->expr, ts) && a;
    }
    case PS_PQ_BINARY: {
        bool a = set_at(e->lhs, ts);
        return set_at(e->rhs, ts) && a;
    }
    case PS_PQ_UNARY:
    case PS_PQ_PAREN: return set_at(e->expr, ts);
    default: return true;
    }
}

/* does a selector of e match a histogram series? */
static bool touches_hist(const ps_pq_node_t *e, mem_src_t *m)
{
    if (e == NULL)
        return false;
    switch (e->kind) {
    case PS_PQ_VECTOR:
        for (uint32_t i = 0; i < m->nhist; i++)
            if (memsrc_matches(&e->sel, &m->hist[i].labels))
                return true;
        return false;
    case PS_PQ_CALL:
        for (uint32_t i = 0; i < e->nargs; i++)
            if (touches_hist(e->args[i], m))
                return true;
        return false;
    case PS_PQ_AGG: return touches_hist(e->param, m) || touches_hist(e->expr, m);
    case PS_PQ_BINARY: return touches_hist(e->lhs, m) || touches_hist(e->rhs, m);
    default: return touches_hist(e->expr, m);
    }
}

static bool fail_matches(const eval_t *ev, const char *msg)
{
    if (ev->fail_msg && strcmp(ev->fail_msg, msg) != 0)
        return false;
    if (ev->fail_re && !re_search(ev->fail_re, msg))
        return false;
    return true;
}

static const xseries_t *find_x(const eval_t *ev, const char *key)
{
    for (uint32_t i = 0; i < ev->nx; i++)
        if (strcmp(ev->x[i].key, key) == 0)
            return &ev->x[i];
    return NULL;
}

/* compareResult for a vector: got[i] = (labels, value) */
static char *compare_vector(const eval_t *ev, const ps_labels_t *ls, const double *vals, uint32_t n)
{
    if (ev->expect_scalar)
        return xprintf("expected scalar result, but got a vector of %u", n);
    bool *seen = calloc(ev->nx + 1, 1);
    char *why = NULL;
    for (uint32_t i = 0; i < n && !why; i++) {
        char *key = labels_key(&ls[i]);
        const xseries_t *x = find_x(ev, key);
        free(key);
        if (x == NULL) {
            char *s = labels_str(&ls[i]);
            why = xprintf("unexpected metric %s in result, has value %.17g", s, vals[i]);
            free(s);
            break;
        }
        if (ev->ordered && x->pos != (int)i + 1)
            why = xprintf("expected metric %s at position %d but was at %u", x->str, x->pos, i + 1);
        else if (x->n == 0 || x->v[0].kind == V_OMITTED || !almost_equal(x->v[0].v, vals[i]))
            why = xprintf("expected %.17g for %s but got %.17g", x->n ? x->v[0].v : NAN, x->str, vals[i]);
        seen[x - ev->x] = true;
    }
    for (uint32_t i = 0; i < ev->nx && !why; i++)
        if (!seen[i])
            why = xprintf("expected metric %s not found", ev->x[i].str);
    free(seen);
    return why;
}

static char *compare_scalar(const eval_t *ev, double v)
{
    if (!ev->expect_scalar)
        return xprintf("expected vector or matrix result, but got scalar %.17g", v);
    if (!almost_equal(ev->x[0].v[0].v, v))
        return xprintf("expected scalar %.17g but got %.17g", ev->x[0].v[0].v, v);
    return NULL;
}

static char *compare_matrix(const eval_t *ev, const ps_pq_result_t *r)
{
    if (ev->ordered)
        return xprintf("expected ordered result, but query returned a matrix");
    if (ev->expect_scalar)
        return xprintf("expected scalar result, but got a matrix");
    for (uint32_t i = 0; i + 1 < r->n; i++)
        if (ps_labels_cmp(&r->series[i].labels, &r->series[i + 1].labels) > 0)
            return xprintf("matrix results should always be sorted by labels");
    bool *seen = calloc(ev->nx + 1, 1);
    char *why = NULL;
    for (uint32_t i = 0; i < r->n && !why; i++) {
        const ps_qseries_t *s = &r->series[i];
        char *key = labels_key(&s->labels);
        const xseries_t *x = find_x(ev, key);
        free(key);
        if (x == NULL) {
            char *ls = labels_str(&s->labels);
            why = xprintf("unexpected metric %s in result (%u points)", ls, s->n);
            free(ls);
            break;
        }
        seen[x - ev->x] = true;
        uint32_t k = 0;
        for (uint32_t j = 0; j < x->n && !why; j++) {
            int64_t ts = ev->start + (int64_t)j * ev->step;
            if (ts > ev->end) {
                why = xprintf("expected %u points for %s, but query time range cannot return this many points", x->n,
                              x->str);
                break;
            }
            if (x->v[j].kind == V_OMITTED)
                continue;
            if (k >= s->n) {
                why = xprintf("expected a point at %lld for %s, got %u points", (long long)ts, x->str, s->n);
                break;
            }
            if (s->points[k].t != ts)
                why = xprintf("expected the point %u of %s at %lld, got it at %lld", k, x->str, (long long)ts,
                              (long long)s->points[k].t);
            else if (!almost_equal(x->v[j].v, s->points[k].v))
                why = xprintf("expected %.17g at %lld for %s, got %.17g", x->v[j].v, (long long)ts, x->str,
                              s->points[k].v);
            k++;
        }
        if (!why && k != s->n)
            why = xprintf("expected %u points for %s, got %u", k, x->str, s->n);
    }
    for (uint32_t i = 0; i < ev->nx && !why; i++)
        if (!seen[i])
            why = xprintf("expected metric %s not found", ev->x[i].str);
    free(seen);
    return why;
}

static char *compare_result(const eval_t *ev, const ps_pq_result_t *r)
{
    switch (r->type) {
    case PS_PQ_VSCALAR: return compare_scalar(ev, r->scalar);
    case PS_PQ_VSTRING:
        if (!ev->has_string || strcmp(ev->string, r->str) != 0)
            return xprintf("expected string \"%s\" but got \"%s\"", ev->has_string ? ev->string : "", r->str);
        return NULL;
    case PS_PQ_VMATRIX: return compare_matrix(ev, r);
    default: {
        ps_labels_t *ls = malloc((r->n + 1) * sizeof(ps_labels_t));
        double *v = malloc((r->n + 1) * sizeof(double));
        for (uint32_t i = 0; i < r->n; i++) {
            ls[i] = r->series[i].labels;
            v[i] = r->series[i].points[0].v;
        }
        char *why = compare_vector(ev, ls, v, r->n);
        free(ls);
        free(v);
        return why;
    }
    }
}

/* whether annotation a, printed as Prometheus prints it (with its position in the query), is x */
static bool ann_matches(const xann_t *x, const eval_t *ev, const ps_pq_annot_t *a)
{
    char msg[640];
    ps_pq_annot_text(a, ev->expr, strlen(ev->expr), msg, sizeof(msg));
    if (x->msg)
        return strcmp(x->msg, msg) == 0;
    return x->re == NULL || re_search(x->re, msg);
}

/* test.go's checkAnnotations: NULL, or why the answer's annotations are not the expected ones */
static char *check_annotations(const eval_t *ev, const ps_pq_result_t *r)
{
    static const char *const kinds[2] = {"warn", "info"};
    for (int k = 0; k < 2; k++) {
        uint32_t n = 0;
        for (uint32_t i = 0; i < r->nannots; i++)
            n += r->annots[i].warn == (k == 0);
        if ((k == 0 ? ev->warn : ev->info) && n == 0)
            return xprintf("expected %s annotations but got none", kinds[k]);
        if (ev->nann[k] > 0 && n == 0)
            return xprintf("expected %s annotations but none were found", kinds[k]);
        for (uint32_t e = 0; e < ev->nann[k]; e++) {
            bool found = false;
            for (uint32_t i = 0; i < r->nannots && !found; i++)
                found = r->annots[i].warn == (k == 0) && ann_matches(&ev->ann[k][e], ev, &r->annots[i]);
            if (!found)
                return xprintf("expected %s annotation matching %s but no matching annotation was found (%u found)",
                               kinds[k], ev->ann[k][e].msg ? ev->ann[k][e].msg : "(pattern)", n);
        }
        for (uint32_t i = 0; i < r->nannots && ev->nann[k] > 0; i++) {
            if (r->annots[i].warn != (k == 0))
                continue;
            bool found = false;
            for (uint32_t e = 0; e < ev->nann[k] && !found; e++)
                found = ann_matches(&ev->ann[k][e], ev, &r->annots[i]);
            if (!found)
                return xprintf("unexpected %s annotation %s", kinds[k], r->annots[i].msg);
        }
        if (ev->no_ann[k] && n > 0)
            for (uint32_t i = 0; i < r->nannots; i++)
                if (r->annots[i].warn == (k == 0))
                    return xprintf("unexpected %s annotation %s", kinds[k], r->annots[i].msg);
    }
    return NULL;
}

/* Parsed as test.go's TestParserOpts: Prometheus 3's language with its experimental functions. */
static int compat = 3; /* PS_PROMQLTEST_COMPAT=2: 2.42's semantics, to measure them (no comparison) */

static int parse(const char *q, ps_arena_t *a, ps_pq_node_t **e, ps_err_t *err)
{
    ps_pq_limits_t lim;
    ps_pq_limits_default(&lim);
    lim.compat = compat;
    lim.experimental = true;
    return ps_pq_parse(q, strlen(q), &lim, a, e, err);
}

static int eval_query(runner_t *rn, ps_pq_node_t *e, int64_t start, int64_t end, int64_t step, ps_pq_result_t *res,
                      ps_err_t *err)
{
    ps_pq_opts_t o;
    ps_pq_opts_default(&o);
    o.compat = compat;
    o.start = start;
    o.end = end;
    o.step = step;
    o.max_samples = 10000; /* test.go's DefaultMaxSamplesPerQuery */
    ps_pq_source_t src = {mem_select, &rn->m};
    ps_err_clear(err);
    return ps_pq_eval(e, &src, &o, &rn->a, res, err);
}

/* One query of an eval (test.go's runInstantQuery / execRangeEval): NULL or why it fails. */
static char *run_one(runner_t *rn, const eval_t *ev, bool at_variant, int64_t at_ts, int64_t t, bool *hist)
{
    ps_arena_reset(&rn->a);
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    ps_err_clear(&err);
    if (parse(ev->expr, &rn->a, &e, &err) != 0) {
        if (ev->fail && fail_matches(ev, err.msg))
            return NULL;
        return xprintf("parse error: %s", err.msg);
    }
    *hist = *hist || touches_hist(e, &rn->m);
    if (at_variant)
        set_at(e, at_ts);
    ps_pq_result_t r;
    int ret = ev->is_range ? eval_query(rn, e, ev->start, ev->end, ev->step, &r, &err)
                           : eval_query(rn, e, t, t, 0, &r, &err);
    char *why = NULL;
    if (ret != 0) {
        if (!ev->fail)
            why = xprintf("error evaluating: %s", err.msg);
        else if (!fail_matches(ev, err.msg))
            why = xprintf("expected error matching %s, got: %s", ev->fail_msg ? ev->fail_msg : "(regex)", err.msg);
        goto out;
    }
    if (ev->fail) {
        why = xprintf("expected error evaluating query but got none");
        goto out;
    }
    if ((why = check_annotations(ev, &r)) != NULL)
        goto out;
    if ((why = compare_result(ev, &r)) != NULL || ev->is_range || ev->exclude_range)
        goto out;
    /* the range-mode check, but for start(), end(), range(), step() and ordered results */
    const char *fn[] = {"start()", "end()", "range()", "step()"};
    for (int k = 0; k < 4; k++)
        if (strstr(ev->expr, fn[k]))
            goto out;
    bool scalar = r.type == PS_PQ_VSCALAR;
    ps_pq_result_t rr;
    if ((ret = eval_query(rn, e, t - 60000, t + 60000, 60000, &rr, &err)) != 0) {
        why = xprintf("error evaluating in range mode: %s", err.msg);
        goto out;
    }
    if (ev->ordered)
        goto out;
    if (rr.type != PS_PQ_VMATRIX) {
        why = xprintf("range mode: not a matrix");
        goto out;
    }
    for (uint32_t i = 0; i + 1 < rr.n; i++)
        if (ps_labels_cmp(&rr.series[i].labels, &rr.series[i + 1].labels) > 0) {
            why = xprintf("range mode: matrix results should always be sorted by labels");
            goto out;
        }
    ps_labels_t *ls = malloc((rr.n + 1) * sizeof(ps_labels_t));
    double *v = malloc((rr.n + 1) * sizeof(double));
    uint32_t n = 0;
    for (uint32_t i = 0; i < rr.n; i++)
        for (uint32_t k = 0; k < rr.series[i].n; k++)
            if (rr.series[i].points[k].t == t) {
                ls[n] = rr.series[i].labels;
                v[n++] = rr.series[i].points[k].v;
                break;
            }
    if (scalar)
        why = n ? compare_scalar(ev, v[0]) : xprintf("range mode: no point at the evaluation time");
    else
        why = compare_vector(ev, ls, v, n);
    free(ls);
    free(v);
    if (why) {
        char *w = xprintf("range mode: %s", why);
        free(why);
        why = w;
    }
out:
    ps_pq_dispose(e);
    return why;
}

/* An eval: its queries one after the other, the first reason it fails (NULL: it passes). */
static char *run_eval(runner_t *rn, const eval_t *ev, bool *hist)
{
    if (ev->bad)
        return strdup(ev->bad);
    if (ev->is_range)
        return run_one(rn, ev, false, 0, 0, hist);
    char *why = run_one(rn, ev, false, 0, ev->at, hist);
    if (why)
        return why;
    /* test.go's @ variants */
    ps_arena_reset(&rn->a);
    ps_pq_node_t *e = NULL;
    ps_err_t err;
    bool variants = false;
    if (parse(ev->expr, &rn->a, &e, &err) == 0) {
        variants = set_at(e, ev->at);
        ps_pq_dispose(e);
    }
    if (variants) {
        int64_t ts = ev->at;
        int64_t times[5] = {-10 * ts, 0, ts / 5, ts, 10 * ts};
        int nt = 5;
        if (ts == 0) {
            times[0] = -1000, times[1] = 0, times[2] = 1000;
            nt = 3;
        }
        for (int k = 0; k < nt; k++)
            if ((why = run_one(rn, ev, true, ts, times[k], hist)) != NULL) {
                char *w = xprintf("with @ %lld at %lld: %s", (long long)ts, (long long)times[k], why);
                free(why);
                return w;
            }
    }
    return NULL;
}

static void record(runner_t *rn, const char *file, int line, int result, char *why)
{
    if (rn->nout == rn->capout) {
        rn->capout = rn->capout ? rn->capout * 2 : 1024;
        rn->out = realloc(rn->out, rn->capout * sizeof(outcome_t));
    }
    for (char *p = why; p && *p; p++)
        if (*p == '\n' || *p == '\t')
            *p = ' ';
    if (why && !ps_utf8_valid(why, strlen(why))) { /* the list stays UTF-8 text: other bytes as \xNN */
        ps_buf_t b = PS_BUF_INIT;
        for (const unsigned char *p = (const unsigned char *)why; *p; p++)
            if (*p >= 0x80)
                ps_buf_printf(&b, "\\x%02x", *p);
            else
                ps_buf_putc(&b, *p);
        ps_buf_putc(&b, 0);
        free(why);
        why = (char *)b.data;
    }
    rn->out[rn->nout++] = (outcome_t){strdup(file), line, result, why};
}

/* load: the series of one load command (the last line of a series wins), appended */
static void do_load(runner_t *rn, sdesc_t *d, uint32_t nd, int64_t step, bool nhcb)
{
    for (uint32_t k = 0; k < nd; k++) {
        bool dup = false;
        char *key = labels_key(&d[k].labels);
        for (uint32_t j = k + 1; j < nd && !dup; j++) {
            char *k2 = labels_key(&d[j].labels);
            dup = strcmp(key, k2) == 0;
            free(k2);
        }
        free(key);
        if (dup)
            continue;
        bool has_float = false, has_hist = false;
        for (uint32_t i = 0; i < d[k].n; i++) {
            has_float |= d[k].v[i].kind == V_FLOAT;
            has_hist |= d[k].v[i].kind == V_HIST;
        }
        if (has_hist)
            series_get(&rn->m.hist, &rn->m.nhist, &rn->m.caphist, &d[k].labels, &rn->m.a);
        if (nhcb) {
            /* the native histogram with custom buckets of a classic one: name without _bucket,
             * _count or _sum, without le */
            const char *name = ps_labels_value(&d[k].labels, "__name__");
            const char *suf[] = {"_bucket", "_count", "_sum"};
            for (int u = 0; name && u < 3; u++) {
                size_t nl = strlen(name), sl = strlen(suf[u]);
                if (nl > sl && strcmp(name + nl - sl, suf[u]) == 0) {
                    ps_labels_t h = ps_labels_borrow(&d[k].labels);
                    ps_labels_set(&h, &rn->m.a, "__name__", 8, name, nl - sl);
                    ps_labels_del(&h, &rn->m.a, "le", 2);
                    series_get(&rn->m.hist, &rn->m.nhist, &rn->m.caphist, &h, &rn->m.a);
                }
            }
        }
        if (!has_float)
            continue;
        mem_series_t *s = series_get(&rn->m.v, &rn->m.n, &rn->m.cap, &d[k].labels, &rn->m.a);
        for (uint32_t i = 0; i < d[k].n; i++) {
            if (d[k].v[i].kind != V_FLOAT)
                continue;
            if (s->n == s->cap) {
                s->cap = s->cap ? s->cap * 2 : 64;
                s->s = realloc(s->s, s->cap * sizeof(ps_float_sample_t));
            }
            s->s[s->n++] = (ps_float_sample_t){(int64_t)i * step, d[k].v[i].v};
        }
        qsort(s->s, s->n, sizeof(ps_float_sample_t), cmp_sample);
        /* a sample at a time already taken: the first one stays (the append is refused) */
        uint32_t w = 0;
        for (uint32_t i = 0; i < s->n; i++)
            if (w == 0 || s->s[w - 1].t != s->s[i].t)
                s->s[w++] = s->s[i];
        s->n = w;
    }
}

static void add_x(eval_t *ev, const sdesc_t *d, int pos)
{
    ev->x = realloc(ev->x, (ev->nx + 1) * sizeof(xseries_t));
    xseries_t *x = &ev->x[ev->nx++];
    x->key = labels_key(&d->labels);
    x->str = labels_str(&d->labels);
    x->v = d->v;
    x->n = d->n;
    x->pos = pos;
    for (uint32_t i = 0; i < d->n; i++)
        if (d->v[i].kind == V_HIST)
            ev->hist = true;
}

static void parse_expect(eval_t *ev, const char *l)
{
    /* ^expect\s+(ordered|fail|warn|no_warn|info|no_info)(?:\s+(regex|msg):(.+))?$ */
    const char *p = l + 6;
    while (*p == ' ' || *p == '\t')
        p++;
    const char *w = p;
    while (*p && *p != ' ' && *p != '\t')
        p++;
    size_t wl = (size_t)(p - w);
    while (*p == ' ' || *p == '\t')
        p++;
    char *msg = NULL, *re = NULL, *msg0 = NULL, *re0 = NULL;
    if (strncmp(p, "msg:", 4) == 0)
        msg = trim(msg0 = strdup(p + 4));
    else if (strncmp(p, "regex:", 6) == 0)
        re = trim(re0 = strdup(p + 6));
    if (wl == 7 && strncmp(w, "ordered", 7) == 0) {
        ev->ordered = true;
    } else if (wl == 4 && strncmp(w, "fail", 4) == 0) {
        ev->fail = true;
        if (msg)
            ev->fail_msg = strdup(msg);
        if (re)
            ev->fail_re = compile_search(re);
    } else if (wl == 4 && (strncmp(w, "warn", 4) == 0 || strncmp(w, "info", 4) == 0)) {
        int k = w[0] == 'i';
        if (ev->nann[k] < 16)
            ev->ann[k][ev->nann[k]++] = (xann_t){msg ? strdup(msg) : NULL, re ? compile_search(re) : NULL};
    } else if (wl == 7 && strncmp(w, "no_warn", 7) == 0) {
        ev->no_ann[0] = true;
    } else if (wl == 7 && strncmp(w, "no_info", 7) == 0) {
        ev->no_ann[1] = true;
    } else {
        ev->bad = xprintf("invalid expect line %s", l);
    }
    free(msg0);
    free(re0);
}

/* Runs one file; outcomes appended to rn->out. Returns how many evals it has. */
static uint32_t run_file(runner_t *rn, const char *name)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", TESTDATA, name);
    size_t len;
    char *text = (char *)ps_test_read_path(path, &len);
    /* getLines: split, trim, comments to empty lines */
    uint32_t nl = 1;
    for (size_t i = 0; i < len; i++)
        nl += text[i] == '\n';
    char **lines = calloc(nl + 1, sizeof(char *));
    uint32_t k = 0;
    for (char *p = text;;) {
        char *e = strchr(p, '\n');
        if (e)
            *e = 0;
        char *l = trim(p);
        lines[k++] = *l == '#' ? (char *)"" : l;
        if (!e)
            break;
        p = e + 1;
    }
    nl = k;
    mem_clear(&rn->m);
    uint32_t evals = 0;
    for (uint32_t i = 0; i < nl; i++) {
        char *l = lines[i];
        if (!*l)
            continue;
        if (strncasecmp(l, "clear", 5) == 0 && (l[5] == 0 || l[5] == ' ' || l[5] == '\t')) {
            mem_clear(&rn->m);
        } else if (strncasecmp(l, "load", 4) == 0) {
            bool nhcb = strncmp(l, "load_with_nhcb", 14) == 0;
            int64_t step = 0;
            const char *st = l + (nhcb ? 14 : 4);
            if (parse_dur(st, strlen(st), &step) != 0)
                fail_msg("%s:%u: bad load %s", name, i + 1, l);
            sdesc_t *d = NULL;
            uint32_t nd = 0;
            while (i + 1 < nl && *lines[i + 1]) {
                i++;
                char *dl = lines[i];
                char *sp = strpbrk(dl, " \t");
                if (sp && sp - dl >= 3 && strncmp(sp - 3, "@st", 3) == 0)
                    continue; /* start timestamps: not stored */
                d = realloc(d, (nd + 1) * sizeof(sdesc_t));
                const char *why = NULL;
                if (!parse_sdesc(dl, &rn->m.a, &d[nd], &why))
                    fail_msg("%s:%u: %s: %s", name, i + 1, why, dl);
                nd++;
            }
            do_load(rn, d, nd, step, nhcb);
            for (uint32_t j = 0; j < nd; j++)
                free(d[j].v);
            free(d);
        } else if (strncasecmp(l, "eval", 4) == 0) {
            eval_t ev;
            memset(&ev, 0, sizeof(ev));
            ev.line = (int)i + 1;
            evals++;
            /* eval[_mod] instant [at <t>] <expr> | eval[_mod] range from <a> to <b> step <s> <expr> */
            char *p = l + 4;
            if (*p == '_') {
                char *q = p + 1;
                while (*q && *q != ' ' && *q != '\t')
                    q++;
                size_t ml = (size_t)(q - p - 1);
                if (ml == 4 && strncmp(p + 1, "fail", 4) == 0)
                    ev.fail = true;
                else if (ml == 7 && strncmp(p + 1, "ordered", 7) == 0)
                    ev.ordered = true;
                else if (ml == 4 && strncmp(p + 1, "warn", 4) == 0)
                    ev.warn = true;
                else if (ml == 4 && strncmp(p + 1, "info", 4) == 0)
                    ev.info = true;
                p = q;
            }
            p = trim(p);
            if (strncmp(p, "instant", 7) == 0) {
                p = trim(p + 7);
                if (strncmp(p, "at", 2) == 0 && (p[2] == ' ' || p[2] == '\t')) {
                    p = trim(p + 2);
                    char *q = strpbrk(p, " \t");
                    if (q == NULL || parse_dur(p, (size_t)(q - p), &ev.at) != 0)
                        ev.bad = xprintf("bad eval line %s", l);
                    p = q ? trim(q) : p;
                }
                ev.start = ev.end = ev.at;
                ev.expr = strdup(p);
            } else if (strncmp(p, "range", 5) == 0) {
                ev.is_range = true;
                /* from (.+) to (.+) step (.+?) (.+): greedy, as the regexp */
                char *from = strstr(p, " from ");
                char *to = from ? strstr(from + 6, " to ") : NULL;
                char *stp = to ? strstr(to + 4, " step ") : NULL;
                char *ex = stp ? strpbrk(trim(stp + 6), " \t") : NULL;
                if (!ex || parse_dur(from + 6, (size_t)(to - from - 6), &ev.start) != 0 ||
                    parse_dur(to + 4, (size_t)(stp - to - 4), &ev.end) != 0 ||
                    parse_dur(trim(stp + 6), (size_t)(ex - trim(stp + 6)), &ev.step) != 0) {
                    ev.bad = xprintf("bad eval line %s", l);
                    ev.expr = strdup("");
                } else {
                    ev.expr = strdup(trim(ex));
                }
            } else {
                ev.bad = xprintf("bad eval line %s", l);
                ev.expr = strdup(p);
            }
            int j = 1;
            while (i + 1 < nl && *lines[i + 1]) {
                i++;
                char *dl = lines[i];
                if (ev.fail && strncmp(dl, "expected_fail_message", 21) == 0) {
                    ev.fail_msg = strdup(trim(dl + 21));
                    break;
                }
                if (ev.fail && strncmp(dl, "expected_fail_regexp", 20) == 0) {
                    ev.fail_re = compile_search(trim(dl + 20));
                    break;
                }
                if (strncmp(dl, "expect range vector", 19) == 0) {
                    char *from = strstr(dl, " from "), *to = from ? strstr(from, " to ") : NULL;
                    char *stp = to ? strstr(to, " step ") : NULL;
                    if (!stp || parse_dur(from + 6, (size_t)(to - from - 6), &ev.start) != 0 ||
                        parse_dur(to + 4, (size_t)(stp - to - 4), &ev.end) != 0 ||
                        parse_dur(stp + 6, strlen(stp + 6), &ev.step) != 0)
                        ev.bad = xprintf("bad line %s", dl);
                    ev.at = ev.end;
                    ev.exclude_range = true;
                    continue;
                }
                if (strncmp(dl, "expect string", 13) == 0) {
                    const char *s = trim(dl + 13);
                    size_t pos = 0, sl;
                    ev.string = (*s == '"' || *s == '`') ? unquote(s, &pos, &sl) : NULL;
                    if (ev.string == NULL)
                        ev.bad = xprintf("bad line %s", dl);
                    ev.has_string = true;
                    ev.exclude_range = true;
                    continue;
                }
                if (strncmp(dl, "expect", 6) == 0 && (dl[6] == ' ' || dl[6] == '\t')) {
                    parse_expect(&ev, dl);
                    continue;
                }
                double v;
                if (parse_number_line(dl, &v)) {
                    sdesc_t d = {0};
                    sd_push(&d, V_FLOAT, v);
                    d.labels = (ps_labels_t){0, NULL, 0};
                    add_x(&ev, &d, 0);
                    ev.expect_scalar = true;
                    break;
                }
                sdesc_t d;
                const char *why = NULL;
                if (!parse_sdesc(dl, &rn->m.a, &d, &why)) {
                    ev.bad = xprintf("line %u: %s: %s", i + 1, why, dl);
                    free(d.v);
                    continue;
                }
                add_x(&ev, &d, j++);
            }
            bool hist = false;
            char *why = run_eval(rn, &ev, &hist);
            if (ev.hist)
                record(rn, name, ev.line, R_UNSUPPORTED, strdup("expects a native histogram"));
            else if (why && hist)
                record(rn, name, ev.line, R_UNSUPPORTED, xprintf("selects native histograms (%s)", why));
            else if (why)
                record(rn, name, ev.line, R_FAIL, why), why = NULL;
            else
                record(rn, name, ev.line, R_PASS, NULL);
            if (ev.hist || (why && hist))
                free(why);
            eval_free(&ev);
        } else {
            fail_msg("%s:%u: unknown command %s", name, i + 1, l);
        }
    }
    mem_clear(&rn->m);
    free(lines);
    free(text);
    return evals;
}

/* ---- the expected outcomes ---- */

static const char *const result_names[] = {"pass", "fail", "unsupported"};

static int cmp_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static void test_promqltest_files(void **state)
{
    (void)state;
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    const char *only = getenv("PS_PROMQLTEST_FILE");
    compat = getenv("PS_PROMQLTEST_COMPAT") && strcmp(getenv("PS_PROMQLTEST_COMPAT"), "2") == 0 ? 2 : 3;
    DIR *dir = opendir(TESTDATA);
    assert_non_null(dir);
    char *names[256];
    uint32_t nn = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL && nn < 256) {
        size_t l = strlen(de->d_name);
        if (l > 5 && strcmp(de->d_name + l - 5, ".test") == 0 && (!only || strcmp(only, de->d_name) == 0))
            names[nn++] = strdup(de->d_name);
    }
    closedir(dir);
    qsort(names, nn, sizeof(char *), cmp_name);
    assert_true(nn > 0);

    runner_t rn;
    memset(&rn, 0, sizeof(rn));
    uint32_t counts[256];
    uint32_t tot[3] = {0, 0, 0};
    for (uint32_t f = 0; f < nn; f++) {
        uint32_t first = rn.nout;
        counts[f] = run_file(&rn, names[f]);
        uint32_t c[3] = {0, 0, 0};
        for (uint32_t i = first; i < rn.nout; i++)
            c[rn.out[i].result]++;
        for (int r = 0; r < 3; r++)
            tot[r] += c[r];
        printf("promqltest %-32s %4u passed, %4u failed, %4u unsupported\n", names[f], c[0], c[1], c[2]);
        if (only)
            for (uint32_t i = first; i < rn.nout; i++)
                if (rn.out[i].result != R_PASS)
                    printf("  %s:%d %s: %s\n", rn.out[i].file, rn.out[i].line, result_names[rn.out[i].result],
                           rn.out[i].why);
    }
    clock_gettime(CLOCK_MONOTONIC, &t1);
    printf("promqltest: %u evals of %u files in %.2f s: %u passed, %u failed, %u unsupported\n", rn.nout, nn,
           (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9, tot[0], tot[1], tot[2]);

    const char *wpath = getenv("PS_PROMQLTEST_WRITE");
    if (wpath) {
        FILE *w = fopen(wpath, "w");
        assert_non_null(w);
        fprintf(w, "# The outcomes of Prometheus' PromQL test files against profstore (tests/unit/query/"
                   "test_promqltest.c);\n# every eval not listed passes. Lines: count <file> <evals>, and "
                   "<file>:<line> fail|unsupported <reason>.\n");
        for (uint32_t f = 0; f < nn; f++)
            fprintf(w, "count %s %u\n", names[f], counts[f]);
        for (uint32_t i = 0; i < rn.nout; i++)
            if (rn.out[i].result != R_PASS)
                fprintf(w, "%s:%d %s %s\n", rn.out[i].file, rn.out[i].line, result_names[rn.out[i].result],
                        rn.out[i].why);
        fclose(w);
        printf("promqltest: outcomes written to %s\n", wpath);
    }

    if (compat == 2) { /* a measure only */
        printf("promqltest: with Prometheus 2.42's semantics (--promql.compat=2): not compared\n");
        for (uint32_t i = 0; i < rn.nout; i++) {
            free(rn.out[i].file);
            free(rn.out[i].why);
        }
        free(rn.out);
        for (uint32_t f = 0; f < nn; f++)
            free(names[f]);
        ps_arena_dispose(&rn.a);
        return;
    }
    /* against the expected outcomes */
    size_t elen;
    char *exp = (char *)ps_test_read_path(EXPECTED, &elen);
    int mismatches = 0;
    bool *listed = calloc(rn.nout + 1, 1);
    for (char *save = NULL, *l = strtok_r(exp, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
        if (*l == '#' || !*l)
            continue;
        char file[256];
        unsigned cnt;
        int line;
        char res[32];
        if (sscanf(l, "count %255s %u", file, &cnt) == 2) {
            for (uint32_t f = 0; f < nn; f++)
                if (strcmp(names[f], file) == 0 && counts[f] != cnt) {
                    print_error("%s: %u evals, the list says %u\n", file, counts[f], cnt);
                    mismatches++;
                }
            continue;
        }
        char *colon = strchr(l, ':');
        if (colon == NULL || sscanf(colon + 1, "%d %31s", &line, res) != 2)
            fail_msg("bad line in %s: %s", EXPECTED, l);
        *colon = 0;
        bool in_run = false;
        for (uint32_t f = 0; f < nn; f++)
            in_run |= strcmp(names[f], l) == 0;
        if (!in_run)
            continue;
        uint32_t i;
        for (i = 0; i < rn.nout; i++)
            if (rn.out[i].line == line && strcmp(rn.out[i].file, l) == 0)
                break;
        if (i == rn.nout) {
            print_error("%s:%d is listed but is no eval\n", l, line);
            mismatches++;
            continue;
        }
        listed[i] = true;
        if (strcmp(result_names[rn.out[i].result], res) != 0) {
            print_error("%s:%d: %s now (listed: %s)%s%s\n", l, line, result_names[rn.out[i].result], res,
                        rn.out[i].why ? ": " : "", rn.out[i].why ? rn.out[i].why : "");
            mismatches++;
        }
    }
    for (uint32_t i = 0; i < rn.nout; i++)
        if (!listed[i] && rn.out[i].result != R_PASS) {
            print_error("%s:%d: %s now (passed before): %s\n", rn.out[i].file, rn.out[i].line,
                        result_names[rn.out[i].result], rn.out[i].why);
            mismatches++;
        }
    free(listed);
    free(exp);
    for (uint32_t i = 0; i < rn.nout; i++) {
        free(rn.out[i].file);
        free(rn.out[i].why);
    }
    free(rn.out);
    mem_clear(&rn.m);
    ps_arena_dispose(&rn.a);
    for (uint32_t f = 0; f < nn; f++)
        free(names[f]);
    if (mismatches)
        fail_msg("%d outcomes differ from %s (update it with PS_PROMQLTEST_WRITE=<path> when the change is meant)",
                 mismatches, EXPECTED);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_promqltest_files),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
