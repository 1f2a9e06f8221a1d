/*
 * test_relabel.c - Prometheus relabeling (src/config/relabel.c): rules come from YAML through
 * ps_config_parse (so they are compiled as in production), label sets are written "a=1,b=2".
 * Expected results follow Prometheus' model/relabel/relabel_test.go; hashmod expectations are
 * computed here with OpenSSL's one-shot MD5(), independently of relabel.c's EVP code.
 */
#define OPENSSL_SUPPRESS_DEPRECATED /* MD5() is deprecated in OpenSSL 3, and that is fine here */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <openssl/md5.h>

#include "config/config.h"

typedef struct rules {
    ps_config_t *cfg;
    const ps_relabel_t *r;
    uint32_t n;
} rules_t;

/* rules_yaml is a YAML flow list of relabel configs. */
static rules_t rules(const char *rules_yaml)
{
    char y[4096];
    snprintf(y, sizeof(y), "scrape_configs:\n- job_name: t\n  relabel_configs: %s\n", rules_yaml);
    ps_err_t err;
    ps_err_clear(&err);
    rules_t rs = {0};
    int rc = ps_config_parse(y, strlen(y), "rules", &rs.cfg, &err);
    if (rc != 0)
        print_error("%s\n", err.msg);
    assert_int_equal(rc, 0);
    rs.r = rs.cfg->scrape[0].relabel;
    rs.n = rs.cfg->scrape[0].nrelabel;
    return rs;
}

/* "a=1,b=2" -> set (values may not contain ',' or '='; "\n" escapes are not needed here). */
static void lset_from(ps_labels_t *ls, ps_arena_t *arena, const char *spec)
{
    const char *p = spec;
    while (*p != '\0') {
        const char *eq = strchr(p, '=');
        assert_non_null(eq);
        const char *end = strchr(eq, ',');
        if (end == NULL)
            end = eq + strlen(eq);
        ps_labels_set(ls, arena, p, (size_t)(eq - p), eq + 1, (size_t)(end - eq - 1));
        p = *end == ',' ? end + 1 : end;
    }
}

static void lset_format(const ps_labels_t *ls, char *out, size_t size)
{
    size_t n = 0;
    out[0] = '\0';
    for (uint32_t i = 0; i < ls->n && n < size; i++) {
        int w = snprintf(out + n, size - n, "%s%s=%s", i > 0 ? "," : "", ls->pairs[i].name, ls->pairs[i].value);
        if (w > 0)
            n += (size_t)w;
        /* sorted, unique names, lengths consistent */
        assert_int_equal(strlen(ls->pairs[i].name), ls->pairs[i].nlen);
        assert_int_equal(strlen(ls->pairs[i].value), ls->pairs[i].vlen);
        assert_true(ls->pairs[i].vlen > 0);
        if (i > 0)
            assert_true(strcmp(ls->pairs[i - 1].name, ls->pairs[i].name) < 0);
    }
}

/* Runs rules on input; want is the output set, or NULL when the target must be dropped. */
static void check(const char *rules_yaml, const char *input, const char *want)
{
    rules_t rs = rules(rules_yaml);
    ps_arena_t arena = PS_ARENA_INIT;
    ps_labels_t ls = {0};
    lset_from(&ls, &arena, input);
    bool keep = ps_relabel_process(rs.r, rs.n, &ls, &arena);
    char got[1024];
    lset_format(&ls, got, sizeof(got));
    if (want == NULL) {
        if (keep) {
            print_error("rules %s on {%s}: want dropped, got {%s}\n", rules_yaml, input, got);
            fail();
        }
    } else if (!keep || strcmp(got, want) != 0) {
        print_error("rules %s on {%s}:\n  want {%s}\n  got  {%s}%s\n", rules_yaml, input, want, got,
                    keep ? "" : " (dropped)");
        fail();
    }
    ps_arena_dispose(&arena);
    ps_config_free(rs.cfg);
}

/* Relabeling a set it does not own (cap 0, as config's group labels) leaves that set as it was. */
static void test_borrowed_set(void **state)
{
    ps_arena_t arena = PS_ARENA_INIT;
    ps_label_pair_t pairs[] = {{"__a", "1", 3, 1}, {"b", "2", 1, 1}, {"c", "3", 1, 1}};
    const ps_labels_t orig = {3, pairs};
    rules_t rs = rules("[{action: labeldrop, regex: 'b|c'}, {target_label: __a, replacement: x},"
                       " {source_labels: [__a], target_label: d}]");
    ps_labels_t ls = ps_labels_borrow(&orig);
    assert_true(ps_relabel_process(rs.r, rs.n, &ls, &arena));
    char got[256];
    lset_format(&ls, got, sizeof(got));
    assert_string_equal(got, "__a=x,d=x");
    assert_ptr_equal(orig.pairs, pairs);
    assert_int_equal(orig.n, 3);
    assert_string_equal(pairs[0].value, "1");
    assert_string_equal(pairs[1].name, "b");
    assert_string_equal(pairs[2].name, "c");
    ps_labels_t empty = {0};
    assert_true(ps_relabel_process(NULL, 0, &empty, &arena));
    assert_int_equal(empty.n, 0);
    ps_config_free(rs.cfg);
    ps_arena_dispose(&arena);
}

static void test_replace(void **state)
{
    /* Prometheus relabel_test.go cases */
    check("[{source_labels: [a], regex: 'f(.*)', target_label: d, separator: ';', replacement: 'ch${1}-ch${1}'}]",
          "a=foo,b=bar,c=baz", "a=foo,b=bar,c=baz,d=choo-choo");
    check("[{source_labels: [a, b], regex: 'f(.*);(.*)r', target_label: a, replacement: 'b${1}${2}m'}]",
          "a=foo,b=bar,c=baz", "a=boobam,b=bar,c=baz");
    check("[{source_labels: [a], regex: 'f(.*)', target_label: d, replacement: 'ch${1}-ch${1}'},"
          " {source_labels: [b], regex: 'x(.*)', target_label: e, replacement: 'y$1'}]",
          "a=foo,b=bar", "a=foo,b=bar,d=choo-choo"); /* second does not match: no change */
    /* chained: the second rule sees the first one's output */
    check("[{source_labels: [a], regex: '(.*)', target_label: b, replacement: '${1}x'},"
          " {source_labels: [b], regex: '(.*)', target_label: c, replacement: '${1}y'}]",
          "a=foo", "a=foo,b=foox,c=fooxy");
    /* the regex is anchored: "o" does not match "foo" */
    check("[{source_labels: [a], regex: 'o', target_label: b, replacement: hit}]", "a=foo", "a=foo");
    check("[{source_labels: [a], regex: 'f.+', target_label: b, replacement: hit}]", "a=foo", "a=foo,b=hit");
    /* an alternation whose first branch is a prefix still matches the whole value */
    check("[{source_labels: [a], regex: 'a|ab', target_label: b, replacement: hit}]", "a=ab", "a=ab,b=hit");
    /* '$' and the end anchor do not match before a final newline (Go's \z) */
    {
        ps_arena_t arena = PS_ARENA_INIT;
        ps_labels_t ls = {0};
        ps_labels_set(&ls, &arena, "a", 1, "foo\n", 4);
        rules_t rs = rules("[{source_labels: [a], regex: 'foo', action: keep}]");
        assert_false(ps_relabel_process(rs.r, rs.n, &ls, &arena));
        ps_config_free(rs.cfg);
        rs = rules("[{source_labels: [a], regex: 'foo$', action: keep}]");
        assert_false(ps_relabel_process(rs.r, rs.n, &ls, &arena));
        ps_config_free(rs.cfg);
        /* '.' matches a newline ((?s)) */
        rs = rules("[{source_labels: [a], regex: 'fo.*', action: keep}]");
        assert_true(ps_relabel_process(rs.r, rs.n, &ls, &arena));
        ps_config_free(rs.cfg);
        ps_arena_dispose(&arena);
    }
    /* an empty result deletes the target; "$2" of a regex with one group is "" */
    check("[{source_labels: [a], regex: '(f).*', target_label: b, replacement: '$2'}]", "a=foo,b=bar", "a=foo");
    /* "$1x" is the group named "1x" (empty), "${1}x" is group 1 then "x" */
    check("[{source_labels: [a], regex: 'f(.*)', target_label: b, replacement: '$1x'}]", "a=foo,b=bar", "a=foo");
    check("[{source_labels: [a], regex: 'f(.*)', target_label: b, replacement: '${1}x'}]", "a=foo", "a=foo,b=oox");
    /* "$$" is a literal '$'; a '$' without a valid reference stays */
    check("[{source_labels: [a], regex: 'f(.*)', target_label: b, replacement: '$$1-$-${-${1'}]", "a=foo",
          "a=foo,b=$1-$-${-${1");
    /* named groups, by $name and ${name}; group numbers with a leading zero are names */
    check("[{source_labels: [a], regex: 'f(?P<rest>.*)', target_label: b, replacement: '${rest}!$rest'}]", "a=foo",
          "a=foo,b=oo!oo");
    check("[{source_labels: [a], regex: 'f(?<rest>.*)', target_label: b, replacement: '[$01]'}]", "a=foo",
          "a=foo,b=[]");
    /* $0 is the whole match; an unset optional group is "" */
    check("[{source_labels: [a], regex: 'f(x)?(o+)', target_label: b, replacement: '$0/$1/$2'}]", "a=foo",
          "a=foo,b=foo//oo");
    /* the target label itself is expanded; an invalid result does nothing */
    check("[{source_labels: [a], regex: '(.*)', target_label: 'x_${1}', replacement: 'v'}]", "a=foo",
          "a=foo,x_foo=v");
    check("[{source_labels: [a], regex: '(.*)', target_label: '${1}', replacement: 'v'}]", "a=1abc", "a=1abc");
    check("[{source_labels: [a], regex: '(.*)', target_label: '${1}', replacement: 'v'}]", "a=", "");
    /* missing source labels are "", joined by the separator */
    check("[{source_labels: [a, missing, b], regex: '(.*)', target_label: c}]", "a=x,b=y", "a=x,b=y,c=x;;y");
    check("[{source_labels: [a, b], separator: '', regex: '(.*)', target_label: c}]", "a=x,b=y", "a=x,b=y,c=xy");
    check("[{source_labels: [a, b], separator: ' - ', target_label: c}]", "a=x,b=y", "a=x,b=y,c=x - y");
    /* fast path: empty value, default regex, no '$': sets (or with "" deletes) the target */
    check("[{target_label: env, replacement: prod}]", "a=1", "a=1,env=prod");
    check("[{source_labels: [nope], target_label: env, replacement: prod}]", "a=1", "a=1,env=prod");
    check("[{target_label: a, replacement: ''}]", "a=1,b=2", "b=2");
    /* default replacement $1 copies the value */
    check("[{source_labels: [__address__], target_label: instance}]", "__address__=h:1", "__address__=h:1,instance=h:1");
    /* a regex with no match leaves everything as is, even with an empty value */
    check("[{source_labels: [nope], regex: '.+', target_label: x, replacement: y}]", "a=1", "a=1");
    /* UTF-8: '.' is one character */
    check("[{source_labels: [a], regex: '(.)(.*)', target_label: b, replacement: '$1'}]", "a=\xc3\xa9t\xc3\xa9",
          "a=\xc3\xa9t\xc3\xa9,b=\xc3\xa9");
}

static void test_keep_drop(void **state)
{
    check("[{source_labels: [a], regex: 'f.*', action: drop}]", "a=foo", NULL);
    check("[{source_labels: [a], regex: 'f.*', action: drop}]", "a=bar", "a=bar");
    check("[{source_labels: [a], regex: 'f.*', action: keep}]", "a=foo", "a=foo");
    check("[{source_labels: [a], regex: 'f.*', action: keep}]", "a=boo", NULL);
    /* a missing label is "": keep with .+ drops it */
    check("[{source_labels: [a], regex: '.+', action: keep}]", "b=1", NULL);
    check("[{source_labels: [a], regex: '', action: keep}]", "b=1", "b=1");
    /* Prometheus' example: drop by regex on a joined value */
    check("[{source_labels: [__meta_env, __meta_team], regex: 'dev;.*', action: drop}]",
          "__meta_env=dev,__meta_team=x", NULL);
    check("[{source_labels: [__meta_env, __meta_team], regex: 'dev;.*', action: drop}]",
          "__meta_env=prod,__meta_team=x", "__meta_env=prod,__meta_team=x");
    /* processing stops at a drop */
    check("[{source_labels: [a], regex: 'x', action: keep}, {target_label: z, replacement: never}]", "a=y", NULL);
    /* case-insensitive matching with an inline flag */
    check("[{source_labels: [a], regex: '(?i)FOO', action: keep}]", "a=foo", "a=foo");
}

static void test_keepequal_dropequal(void **state)
{
    check("[{source_labels: [a], target_label: b, action: keepequal}]", "a=foo,b=foo", "a=foo,b=foo");
    check("[{source_labels: [a], target_label: b, action: keepequal}]", "a=foo,b=bar", NULL);
    check("[{source_labels: [a], target_label: b, action: dropequal}]", "a=foo,b=foo", NULL);
    check("[{source_labels: [a], target_label: b, action: dropequal}]", "a=foo,b=bar", "a=foo,b=bar");
    /* both missing: "" == "" */
    check("[{source_labels: [x], target_label: y, action: keepequal}]", "a=1", "a=1");
    check("[{source_labels: [x], target_label: y, action: dropequal}]", "a=1", NULL);
    check("[{source_labels: [a], target_label: y, action: keepequal}]", "a=1", NULL);
    /* joined sources */
    check("[{source_labels: [a, b], target_label: c, action: keepequal}]", "a=1,b=2,c=1;2", "a=1,b=2,c=1;2");
}

/* The expected hashmod result, computed with MD5() directly. */
static uint64_t want_hashmod(const char *value, uint64_t modulus)
{
    unsigned char sum[MD5_DIGEST_LENGTH];
    MD5((const unsigned char *)value, strlen(value), sum);
    uint64_t h = 0;
    for (int i = 8; i < 16; i++)
        h = (h << 8) | sum[i];
    return h % modulus;
}

static void test_hashmod(void **state)
{
    /* Prometheus' relabel_test.go: "baz" % 1000 = 976 (a fixed point for the byte order) */
    assert_int_equal(want_hashmod("baz", 1000), 976);
    check("[{source_labels: [c], target_label: d, action: hashmod, modulus: 1000}]", "a=foo,b=bar,c=baz",
          "a=foo,b=bar,c=baz,d=976");

    static const char *const values[] = {"10.0.0.1:9100", "10.0.0.2:9100", "node-exporter.kube-system:9100", "",
                                         "\xe2\x82\xac", "a;b"};
    static const uint64_t moduli[] = {1, 2, 3, 7, 10, 1000, 1u << 31, 18446744073709551615ull};
    for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
        for (size_t m = 0; m < sizeof(moduli) / sizeof(moduli[0]); m++) {
            char rule[256], input[128], want[256];
            snprintf(rule, sizeof(rule),
                     "[{source_labels: [__address__], target_label: __tmp_hash, action: hashmod, modulus: %llu}]",
                     (unsigned long long)moduli[m]);
            unsigned long long h = (unsigned long long)want_hashmod(values[i], moduli[m]);
            if (values[i][0] == '\0') {
                snprintf(input, sizeof(input), "x=1");
                snprintf(want, sizeof(want), "__tmp_hash=%llu,x=1", h);
            } else {
                snprintf(input, sizeof(input), "__address__=%s", values[i]);
                snprintf(want, sizeof(want), "__address__=%s,__tmp_hash=%llu", values[i], h);
            }
            check(rule, input, want);
        }
    }
    /* sharding by joined sources, then keep one shard */
    char rule[256], want[128];
    unsigned long long h = (unsigned long long)want_hashmod("h1:80;prod", 3);
    snprintf(rule, sizeof(rule),
             "[{source_labels: [__address__, env], target_label: shard, action: hashmod, modulus: 3},"
             " {source_labels: [shard], regex: '%llu', action: keep}]",
             h);
    snprintf(want, sizeof(want), "__address__=h1:80,env=prod,shard=%llu", h);
    check(rule, "__address__=h1:80,env=prod", want);
}

static void test_labelmap(void **state)
{
    check("[{action: labelmap, regex: '__meta_(.+)'}]", "__meta_app=web,__meta_zone=b,job=x",
          "__meta_app=web,__meta_zone=b,app=web,job=x,zone=b");
    check("[{action: labelmap, regex: '__meta_kubernetes_pod_label_(.+)', replacement: 'k8s_${1}'}]",
          "__meta_kubernetes_pod_label_app=api,__meta_kubernetes_pod_name=p1",
          "__meta_kubernetes_pod_label_app=api,__meta_kubernetes_pod_name=p1,k8s_app=api");
    /* anchored: a label name that only contains the pattern is not mapped */
    check("[{action: labelmap, regex: 'meta_(.+)'}]", "__meta_a=1", "__meta_a=1");
    /* overwrites an existing label */
    check("[{action: labelmap, regex: 'old_(.+)'}]", "old_x=1,x=2", "old_x=1,x=1");
    /* a mapped name that is not a valid label name is skipped */
    check("[{action: labelmap, regex: 'a_(.*)'}]", "a_=1,a_b=2", "a_=1,a_b=2,b=2");
    /* labelmap then labeldrop: the usual pair */
    check("[{action: labelmap, regex: '__meta_(.+)'}, {action: labeldrop, regex: '__meta_.*'}]",
          "__meta_a=1,__meta_b=2,c=3", "a=1,b=2,c=3");
}

static void test_labeldrop_labelkeep(void **state)
{
    check("[{action: labeldrop, regex: '__meta_.*'}]", "__meta_a=1,__meta_b=2,a=3", "a=3");
    check("[{action: labeldrop, regex: 'nothing'}]", "a=1,b=2", "a=1,b=2");
    check("[{action: labelkeep, regex: 'a|__address__'}]", "__address__=h,a=1,b=2,c=3", "__address__=h,a=1");
    check("[{action: labelkeep, regex: 'nothing'}]", "a=1,b=2", "");
    /* anchored on names too */
    check("[{action: labeldrop, regex: 'a'}]", "a=1,ab=2,ba=3", "ab=2,ba=3");
}

static void test_case(void **state)
{
    check("[{action: lowercase, source_labels: [a], target_label: b}]", "a=FooBAR-09", "a=FooBAR-09,b=foobar-09");
    check("[{action: uppercase, source_labels: [a], target_label: b}]", "a=FooBar-09", "a=FooBar-09,b=FOOBAR-09");
    check("[{action: lowercase, source_labels: [a, c], target_label: a}]", "a=X,c=Y", "a=x;y,c=Y");
    /* Latin-1, Latin Extended-A, Greek, Cyrillic */
    check("[{action: lowercase, source_labels: [a], target_label: b}]",
          "a=\xc3\x84\xc3\x96\xc3\x9c\xc4\x80\xce\xa3\xd0\x96", /* ÄÖÜĀΣЖ */
          "a=\xc3\x84\xc3\x96\xc3\x9c\xc4\x80\xce\xa3\xd0\x96,b=\xc3\xa4\xc3\xb6\xc3\xbc\xc4\x81\xcf\x83\xd0\xb6");
    check("[{action: uppercase, source_labels: [a], target_label: b}]",
          "a=stra\xc3\x9f" "e \xc3\xbf\xc3\xa4\xd0\xb6", /* straße ÿäж: ß has no simple upper case */
          "a=stra\xc3\x9f" "e \xc3\xbf\xc3\xa4\xd0\xb6,b=STRA\xc3\x9f" "E \xc5\xb8\xc3\x84\xd0\x96");
    /* an empty value deletes the target */
    check("[{action: uppercase, source_labels: [missing], target_label: b}]", "b=x", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_borrowed_set),          cmocka_unit_test(test_replace),
        cmocka_unit_test(test_keep_drop),     cmocka_unit_test(test_keepequal_dropequal),
        cmocka_unit_test(test_hashmod),       cmocka_unit_test(test_labelmap),
        cmocka_unit_test(test_labeldrop_labelkeep), cmocka_unit_test(test_case),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
