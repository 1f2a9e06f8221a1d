/*
 * test_sd.c - file_sd / http_sd target group lists (src/discovery/sd.c): JSON and YAML, valid lists, empty
 * lists, and each kind of bad input with the message that names the file and group.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "discovery/discovery.h"

static int parse(const char *text, size_t n, bool yaml, const char *name, ps_arena_t *a, ps_target_group_t **g,
                 uint32_t *ng, ps_err_t *err)
{
    ps_err_clear(err);
    return ps_sd_parse(text, n, yaml, name, a, g, ng, err);
}

static void parse_ok(const char *text, bool yaml, ps_arena_t *a, ps_target_group_t **g, uint32_t *ng)
{
    ps_err_t err;
    int rc = parse(text, strlen(text), yaml, yaml ? "t.yml" : "t.json", a, g, ng, &err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(rc, 0);
}

static void parse_err(const char *text, size_t n, bool yaml, const char *want_prefix, const char *want_sub)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_target_group_t *g = (ps_target_group_t *)0x1;
    uint32_t ng = 99;
    ps_err_t err;
    int rc = parse(text, n, yaml, yaml ? "t.yml" : "t.json", &a, &g, &ng, &err);
    assert_int_equal(rc, PS_EINVAL);
    assert_null(g);
    assert_int_equal(ng, 0);
    if (strncmp(err.msg, want_prefix, strlen(want_prefix)) != 0 || strstr(err.msg, want_sub) == NULL) {
        print_error("want prefix: %s\n     and: %s\n     got: %s\n", want_prefix, want_sub, err.msg);
        fail();
    }
    ps_arena_dispose(&a);
}
#define ERR(text, yaml, prefix, sub) parse_err(text, strlen(text), yaml, prefix, sub)

static void check_two_groups(const ps_target_group_t *g, uint32_t ng, const char *name)
{
    char src[64];
    assert_int_equal(ng, 2);
    assert_int_equal(g[0].ntargets, 2);
    assert_string_equal(g[0].targets[0], "10.0.0.1:9100");
    assert_string_equal(g[0].targets[1], "node-2:9100");
    assert_int_equal(g[0].labels.n, 3);
    assert_string_equal(g[0].labels.pairs[0].name, "__meta_x"); /* sorted */
    assert_string_equal(g[0].labels.pairs[0].value, "m");
    assert_string_equal(g[0].labels.pairs[1].name, "env");
    assert_string_equal(g[0].labels.pairs[1].value, "prod");
    assert_int_equal(g[0].labels.pairs[1].nlen, 3);
    assert_int_equal(g[0].labels.pairs[1].vlen, 4);
    assert_string_equal(g[0].labels.pairs[2].name, "team");
    snprintf(src, sizeof(src), "%s:0", name);
    assert_string_equal(g[0].source, src);
    assert_int_equal(g[1].ntargets, 1);
    assert_string_equal(g[1].targets[0], "http://blackbox-style/target");
    assert_int_equal(g[1].labels.n, 0);
    snprintf(src, sizeof(src), "%s:1", name);
    assert_string_equal(g[1].source, src);
}

static void test_json_valid(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_target_group_t *g;
    uint32_t ng;
    parse_ok("[{\"targets\": [\"10.0.0.1:9100\", \"node-2:9100\"],\n"
             "  \"labels\": {\"team\": \"core\", \"env\": \"prod\", \"__meta_x\": \"m\"}},\n"
             " {\"targets\": [\"http://blackbox-style/target\"], \"comment\": \"ignored, as encoding/json does\"}]",
             false, &a, &g, &ng);
    check_two_groups(g, ng, "t.json");

    /* empty lists, null, groups without targets or labels, null labels/targets */
    parse_ok("[]", false, &a, &g, &ng);
    assert_int_equal(ng, 0);
    parse_ok(" null ", false, &a, &g, &ng);
    assert_int_equal(ng, 0);
    parse_ok("[{}, {\"targets\": null, \"labels\": null}, {\"labels\": {\"a\": \"\", \"b\": null}}]", false, &a, &g,
             &ng);
    assert_int_equal(ng, 3);
    assert_int_equal(g[0].ntargets, 0);
    assert_int_equal(g[1].labels.n, 0);
    assert_int_equal(g[2].labels.n, 2);
    assert_string_equal(g[2].labels.pairs[1].value, "");
    /* UTF-8 values and escapes */
    parse_ok("[{\"targets\": [\"h:1\"], \"labels\": {\"a\": \"\\u00e9\\n\"}}]", false, &a, &g, &ng);
    assert_string_equal(g[0].labels.pairs[0].value, "\xc3\xa9\n");
    ps_arena_dispose(&a);
}

static void test_yaml_valid(void **state)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_target_group_t *g;
    uint32_t ng;
    parse_ok("- targets:\n"
             "    - 10.0.0.1:9100\n"
             "    - 'node-2:9100'\n"
             "  labels:\n"
             "    team: core\n"
             "    env: prod\n"
             "    __meta_x: m\n"
             "- targets: [\"http://blackbox-style/target\"]\n",
             true, &a, &g, &ng);
    check_two_groups(g, ng, "t.yml");
    /* JSON is YAML too */
    parse_ok("[{\"targets\": [\"10.0.0.1:9100\", \"node-2:9100\"], \"labels\": {\"team\": \"core\", \"env\": \"prod\", "
             "\"__meta_x\": \"m\"}}, {\"targets\": [\"http://blackbox-style/target\"]}]",
             true, &a, &g, &ng);
    check_two_groups(g, ng, "t.yml");
    /* empty document, null, [] */
    parse_ok("", true, &a, &g, &ng);
    assert_int_equal(ng, 0);
    parse_ok("# nothing yet\n", true, &a, &g, &ng);
    assert_int_equal(ng, 0);
    parse_ok("~\n", true, &a, &g, &ng);
    assert_int_equal(ng, 0);
    parse_ok("[]\n", true, &a, &g, &ng);
    assert_int_equal(ng, 0);
    /* scalars of any YAML type are strings; null label values are "" */
    parse_ok("- targets: [9100, true]\n  labels: {port: 9100, on: yes, none: ~}\n- {}\n", true, &a, &g, &ng);
    assert_int_equal(ng, 2);
    assert_string_equal(g[0].targets[0], "9100");
    assert_string_equal(g[0].targets[1], "true");
    assert_string_equal(g[0].labels.pairs[0].name, "none");
    assert_string_equal(g[0].labels.pairs[0].value, "");
    assert_string_equal(g[0].labels.pairs[1].name, "on");
    assert_string_equal(g[0].labels.pairs[1].value, "yes");
    assert_string_equal(g[0].labels.pairs[2].value, "9100");
    assert_int_equal(g[1].ntargets, 0);
    ps_arena_dispose(&a);

    /* a NULL name gets a placeholder */
    ps_err_t err;
    assert_int_equal(ps_sd_parse("[{\"targets\": [\"h\"]}]", 20, false, NULL, &a, &g, &ng, &err), 0);
    assert_string_equal(g[0].source, "<sd>:0");
    ps_arena_dispose(&a);
}

static void test_json_errors(void **state)
{
    ERR("[{\"targets\": [\"a\"]", false, "t.json:1:", "invalid JSON");
    ERR("", false, "t.json:", "invalid JSON");
    ERR("[{\"targets\": [\"a\"]},\n {\"targets\": [\"b\" \"c\"]}]", false, "t.json:2:", "invalid JSON");
    ERR("{\"targets\": []}", false, "t.json: expected a list of target groups", "got an object");
    ERR("\"x\"", false, "t.json: expected a list of target groups", "got a string");
    ERR("[{\"targets\": []}, null]", false, "t.json: [1]: expected a target group (an object), got null", "");
    ERR("[[\"a:1\"]]", false, "t.json: [0]: expected a target group (an object), got a list", "");
    ERR("[{\"targets\": \"a:1\"}]", false, "t.json: [0].targets: expected a list of strings, got a string", "");
    ERR("[{}, {\"targets\": [\"a:1\", 9100]}]", false, "t.json: [1].targets[1]: must be a string, got a number", "");
    ERR("[{\"targets\": [\"a:1\"], \"labels\": [\"x\"]}]", false,
        "t.json: [0].labels: expected an object of strings, got a list", "");
    ERR("[{\"labels\": {\"ok\": \"1\", \"bad-name\": \"2\"}}]", false,
        "t.json: [0].labels: \"bad-name\" is not a valid label name", "");
    ERR("[{\"labels\": {\"0a\": \"1\"}}]", false, "t.json: [0].labels: \"0a\" is not a valid label name", "");
    ERR("[{\"labels\": {\"a\": 1}}]", false, "t.json: [0].labels.a: must be a string, got a number", "");
    ERR("[{\"labels\": {\"a\": {\"b\": \"c\"}}}]", false, "t.json: [0].labels.a: must be a string, got an object", "");
    ERR("[{\"targets\": [\"a\\u0000b\"]}]", false, "t.json: [0].targets[0]: contains a NUL character", "");
    ERR("[{\"labels\": {\"a\": \"x\", \"a\": \"y\"}}]", false, "t.json:1:", "duplicate");
    /* invalid UTF-8 */
    ERR("[{\"targets\": [\"\xff\"]}]", false, "t.json:", "invalid JSON");
    /* bytes after the list */
    ERR("[] []", false, "t.json:1:", "invalid JSON");
}

static void test_yaml_errors(void **state)
{
    ERR("- targets: [a\n", true, "t.yml:2:1: invalid YAML: ", "");
    ERR("targets: [a]\n", true, "t.yml:1:1: expected a list of target groups", "got a mapping");
    ERR("- targets: [a:1]\n- ~\n", true, "t.yml:2:3: [1]: expected a target group", "got null");
    ERR("- targets: [a:1]\n- [b:1]\n", true, "t.yml:2:3: [1]: expected a target group", "got a list");
    ERR("- targets: a:1\n", true, "t.yml:1:12: [0].targets: expected a list of strings, got a string", "");
    ERR("- targets:\n  - a:1\n  - {host: b}\n", true, "t.yml:3:5: [0].targets[1]: a target must be a string, got a mapping",
        "");
    ERR("- targets: [a:1, ~]\n", true, "t.yml:1:18: [0].targets[1]: a target must be a string, got null", "");
    ERR("- targets: [a:1]\n  labels:\n    ok: 1\n    bad-name: x\n", true,
        "t.yml:4:5: [0].labels: \"bad-name\" is not a valid label name", "");
    ERR("- labels: [a]\n", true, "t.yml:1:11: [0].labels: expected a mapping of label names to values, got a list", "");
    ERR("- labels: {a: [1]}\n", true, "t.yml:1:15: [0].labels.a: a label value must be a string, got a list", "");
    ERR("- labels: {a: 1, a: 2}\n", true, "t.yml:1:18: [0].labels: duplicate label name \"a\"", "");
    ERR("- targets: []\n  lables: {a: b}\n", true,
        "t.yml:2:3: [0]: unknown field \"lables\" in a target group (valid fields: targets, labels)", "");
    ERR("- targets: []\n  targets: []\n", true, "t.yml:2:3: [0]: duplicate key \"targets\"", "");
    ERR("- {targets: [\"a\\0b\"]}\n", true, "t.yml:1:14: [0].targets[0]: a target contains a NUL character", "");
    /* invalid UTF-8: a reader error, with the position computed from the offset */
    ERR("- targets: [a]\n- targets: [\xff]\n", true, "t.yml:2:", "invalid YAML");
    /* the error path must not leak or leave groups behind (checked by parse_err and ASan) */
    ERR("- targets: [a]\n- targets: [b]\n- 7\n", true, "t.yml:3:3: [2]: expected a target group", "");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_json_valid),
        cmocka_unit_test(test_yaml_valid),
        cmocka_unit_test(test_json_errors),
        cmocka_unit_test(test_yaml_errors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
