/*
 * test_config.c - the YAML configuration (src/config/config.c): a full config with every field, the
 * defaults (global, per job, pprof_config merged per key), relative file names, and each error
 * with its FILE:LINE:COL: PATH: prefix, loaded from temporary files.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "config/config.h"
#include "core/timeutil.h"

#define S PS_NS_PER_S

static char tmpdir[64];

static int setup(void **state)
{
    strcpy(tmpdir, "/tmp/ps-test-config-XXXXXX");
    if (mkdtemp(tmpdir) == NULL)
        return -1;
    return 0;
}

static int teardown(void **state)
{
    char cmd[128];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
    return system(cmd) == 0 ? 0 : -1;
}

/* Writes text to tmpdir/name; returns the path (static buffer). */
static const char *write_file(const char *name, const char *text)
{
    static char path[256];
    snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(text, 1, strlen(text), f), strlen(text));
    fclose(f);
    return path;
}

static ps_config_t *load_ok(const char *text)
{
    const char *path = write_file("ok.yml", text);
    ps_err_t err;
    ps_err_clear(&err);
    ps_config_t *c = NULL;
    int rc = ps_config_load(path, &c, &err);
    if (rc != 0)
        print_error("unexpected error: %s\n", err.msg);
    assert_int_equal(rc, 0);
    assert_non_null(c);
    return c;
}

/* Loads text from a file and checks the error: it must start with "PATH:" + where and contain what. */
static void load_err(const char *text, const char *where, const char *what)
{
    const char *path = write_file("bad.yml", text);
    ps_err_t err;
    ps_err_clear(&err);
    ps_config_t *c = (ps_config_t *)0x1;
    int rc = ps_config_load(path, &c, &err);
    assert_int_equal(rc, PS_EINVAL);
    assert_int_equal(err.code, PS_EINVAL);
    assert_null(c);
    char want[512];
    snprintf(want, sizeof(want), "%s:%s", path, where);
    if (strncmp(err.msg, want, strlen(want)) != 0 || strstr(err.msg, what) == NULL) {
        print_error("want prefix: %s\n     and: %s\n     got: %s\n", want, what, err.msg);
        fail();
    }
}

static const ps_pprof_entry_t *pprof(const ps_scrape_config_t *sc, const char *name)
{
    for (uint32_t i = 0; i < sc->npprof; i++)
        if (strcmp(sc->pprof[i].name, name) == 0)
            return &sc->pprof[i];
    return NULL;
}

static const char *label(const ps_labels_t *ls, const char *name)
{
    const ps_label_pair_t *p = ps_labels_get(ls, name);
    return p != NULL ? p->value : NULL;
}

static const char *full_config =
    "global:\n"
    "  scrape_interval: 15s\n"
    "  scrape_timeout: 5s\n"
    "  evaluation_interval: 1m\n"
    "  external_labels:\n"
    "    region: eu-west\n"
    "    cluster: c1\n"
    "scrape_configs:\n"
    "  - job_name: api\n"
    "    scrape_interval: 30s\n"
    "    scrape_timeout: 20s\n"
    "    scheme: https\n"
    "    honor_labels: true\n"
    "    honor_timestamps: false\n"
    "    normalized_addresses: true\n"
    "    enable_http2: false\n"
    "    follow_redirects: false\n"
    "    params:\n"
    "      debug: ['1']\n"
    "      gc: [a, b]\n"
    "    basic_auth:\n"
    "      username: alice\n"
    "      password_file: /etc/secret\n"
    "    tls_config:\n"
    "      ca_file: /etc/ca.pem\n"
    "      cert_file: /etc/cert.pem\n"
    "      key_file: /etc/key.pem\n"
    "      server_name: api.internal\n"
    "      insecure_skip_verify: yes\n"
    "    static_configs:\n"
    "      - targets: ['10.0.0.1:6060', 'api-2.svc:6060', '[::1]:7070', localhost]\n"
    "        labels: {env: prod, zone: b, app: api}\n"
    "      - targets: []\n"
    "    file_sd_configs:\n"
    "      - files: ['/etc/sd/*.json', '/etc/sd/extra.yml']\n"
    "        refresh_interval: 1m\n"
    "      - files: ['/etc/sd2/a.yaml']\n"
    "    http_sd_configs:\n"
    "      - url: https://sd.example.com/targets\n"
    "        refresh_interval: 2m\n"
    "        authorization:\n"
    "          type: Token\n"
    "          credentials: s3cr3t\n"
    "        follow_redirects: false\n"
    "      - url: http://sd2:8080/t\n"
    "        bearer_token_file: /etc/tok\n"
    "    relabel_configs:\n"
    "      - source_labels: [__meta_kubernetes_pod_name, __meta_x]\n"
    "        separator: '|'\n"
    "        regex: '(.+)\\|(.*)'\n"
    "        target_label: pod\n"
    "        replacement: '${1}'\n"
    "        action: Replace\n"
    "      - action: HASHMOD\n"
    "        source_labels: [__address__]\n"
    "        modulus: 4\n"
    "        target_label: __tmp_hash\n"
    "      - action: keep\n"
    "        source_labels: [__tmp_hash]\n"
    "        regex: '0'\n"
    "      - action: labelmap\n"
    "        regex: __meta_kubernetes_pod_label_(.+)\n"
    "      - action: labeldrop\n"
    "        regex: '__meta_.*'\n"
    "      - {action: keepequal, source_labels: [a], target_label: b}\n"
    "      - {action: lowercase, source_labels: [a], target_label: a_lower}\n"
    "    profiling_config:\n"
    "      path_prefix: /app/\n"
    "      pprof_config:\n"
    "        fgprof:\n"
    "          path: /debug/fgprof\n"
    "          seconds: 10\n"
    "        memory:\n"
    "          enabled: false\n"
    "        process_cpu:\n"
    "          seconds: 15s\n"
    "        heap_custom:\n"
    "          enabled: false\n"
    "          path: /debug/pprof/heap\n"
    "          delta: true\n"
    "          keep_sample_type:\n"
    "            - {type: inuse_space, unit: bytes}\n"
    "            - {type: inuse_objects, unit: count}\n"
    "  - job_name: plain\n"
    "    bearer_token: tok\n"
    "    static_configs:\n"
    "      - targets: [h:1]\n";

static void test_full_config(void **state)
{
    ps_config_t *c = load_ok(full_config);
    assert_int_equal(c->scrape_interval, 15 * S);
    assert_int_equal(c->scrape_timeout, 5 * S);
    assert_int_equal(c->external_labels.n, 2);
    assert_string_equal(c->external_labels.pairs[0].name, "cluster"); /* sorted */
    assert_string_equal(label(&c->external_labels, "region"), "eu-west");
    assert_int_equal(c->nscrape, 2);

    const ps_scrape_config_t *sc = &c->scrape[0];
    assert_string_equal(sc->job_name, "api");
    assert_int_equal(sc->scrape_interval, 30 * S);
    assert_int_equal(sc->scrape_timeout, 20 * S);
    assert_string_equal(sc->scheme, "https");
    assert_false(sc->client.follow_redirects);
    assert_int_equal(sc->nparams, 2);
    assert_string_equal(sc->params[0].name, "debug");
    assert_int_equal(sc->params[0].n, 1);
    assert_string_equal(sc->params[0].values[0], "1");
    assert_string_equal(sc->params[1].name, "gc");
    assert_int_equal(sc->params[1].n, 2);
    assert_string_equal(sc->params[1].values[1], "b");
    assert_string_equal(sc->client.basic_user, "alice");
    assert_null(sc->client.basic_password);
    assert_string_equal(sc->client.basic_password_file, "/etc/secret");
    assert_null(sc->client.auth_type);
    assert_string_equal(sc->client.tls.ca_file, "/etc/ca.pem");
    assert_string_equal(sc->client.tls.cert_file, "/etc/cert.pem");
    assert_string_equal(sc->client.tls.key_file, "/etc/key.pem");
    assert_string_equal(sc->client.tls.server_name, "api.internal");
    assert_true(sc->client.tls.insecure_skip_verify);

    assert_int_equal(sc->nstatic, 2);
    const ps_target_group_t *g = &sc->static_configs[0];
    assert_int_equal(g->ntargets, 4);
    assert_string_equal(g->targets[0], "10.0.0.1:6060");
    assert_string_equal(g->targets[2], "[::1]:7070");
    assert_string_equal(g->targets[3], "localhost");
    assert_int_equal(g->labels.n, 3);
    assert_string_equal(g->labels.pairs[0].name, "app");
    assert_string_equal(g->labels.pairs[1].name, "env");
    assert_string_equal(g->labels.pairs[2].value, "b");
    assert_string_equal(g->source, "scrape_configs[0].static_configs[0]");
    assert_int_equal(sc->static_configs[1].ntargets, 0);

    assert_int_equal(sc->nfile_sd, 2);
    assert_int_equal(sc->file_sd[0].nfiles, 2);
    assert_string_equal(sc->file_sd[0].files[0], "/etc/sd/*.json");
    assert_int_equal(sc->file_sd[0].refresh_interval, 60 * S);
    assert_int_equal(sc->file_sd[1].refresh_interval, 300 * S); /* default 5m */

    assert_int_equal(sc->nhttp_sd, 2);
    assert_string_equal(sc->http_sd[0].url, "https://sd.example.com/targets");
    assert_int_equal(sc->http_sd[0].refresh_interval, 120 * S);
    assert_string_equal(sc->http_sd[0].client.auth_type, "Token");
    assert_string_equal(sc->http_sd[0].client.auth_credentials, "s3cr3t");
    assert_false(sc->http_sd[0].client.follow_redirects);
    assert_int_equal(sc->http_sd[1].refresh_interval, 60 * S); /* default 60s */
    assert_string_equal(sc->http_sd[1].client.auth_type, "Bearer");
    assert_string_equal(sc->http_sd[1].client.auth_credentials_file, "/etc/tok");
    assert_true(sc->http_sd[1].client.follow_redirects);

    assert_int_equal(sc->nrelabel, 7);
    const ps_relabel_t *r = &sc->relabel[0];
    assert_int_equal(r->action, PS_RELABEL_REPLACE);
    assert_int_equal(r->nsource, 2);
    assert_string_equal(r->source_labels[1], "__meta_x");
    assert_string_equal(r->separator, "|");
    assert_string_equal(r->regex, "(.+)\\|(.*)");
    assert_string_equal(r->target_label, "pod");
    assert_string_equal(r->replacement, "${1}");
    assert_non_null(r->re);
    r = &sc->relabel[1];
    assert_int_equal(r->action, PS_RELABEL_HASHMOD);
    assert_int_equal(r->modulus, 4);
    assert_string_equal(r->separator, ";");
    assert_string_equal(r->regex, "(.*)");
    assert_string_equal(r->replacement, "$1");
    assert_int_equal(sc->relabel[2].action, PS_RELABEL_KEEP);
    assert_null(sc->relabel[2].target_label);
    assert_int_equal(sc->relabel[3].action, PS_RELABEL_LABELMAP);
    assert_int_equal(sc->relabel[4].action, PS_RELABEL_LABELDROP);
    assert_int_equal(sc->relabel[5].action, PS_RELABEL_KEEPEQUAL);
    assert_int_equal(sc->relabel[6].action, PS_RELABEL_LOWERCASE);

    assert_string_equal(sc->path_prefix, "/app");
    assert_int_equal(sc->npprof, 8);
    static const char *const order[] = {"memory", "block", "goroutine", "mutex", "process_cpu", "threadcreate",
                                        "fgprof", "heap_custom"};
    for (int i = 0; i < 8; i++)
        assert_string_equal(sc->pprof[i].name, order[i]);
    assert_false(pprof(sc, "memory")->enabled);
    assert_string_equal(pprof(sc, "memory")->path, "/debug/pprof/allocs");
    const ps_pprof_entry_t *e = pprof(sc, "process_cpu");
    assert_true(e->enabled);
    assert_true(e->delta);
    assert_int_equal(e->seconds, 15 * S);
    assert_string_equal(e->path, "/debug/pprof/profile");
    e = pprof(sc, "fgprof");
    assert_true(e->enabled);
    assert_false(e->delta);
    assert_int_equal(e->seconds, 10 * S);
    assert_string_equal(e->path, "/debug/fgprof");
    e = pprof(sc, "heap_custom");
    assert_false(e->enabled);
    assert_true(e->delta);
    assert_int_equal(e->nkeep, 2);
    assert_string_equal(e->keep_type[1], "inuse_objects");
    assert_string_equal(e->keep_unit[1], "count");

    sc = &c->scrape[1];
    assert_string_equal(sc->job_name, "plain");
    assert_int_equal(sc->scrape_interval, 15 * S); /* global */
    assert_int_equal(sc->scrape_timeout, 5 * S);
    assert_string_equal(sc->scheme, "http");
    assert_true(sc->client.follow_redirects);
    assert_string_equal(sc->client.auth_type, "Bearer");
    assert_string_equal(sc->client.auth_credentials, "tok");
    assert_string_equal(sc->path_prefix, "");
    assert_int_equal(sc->npprof, 6);
    ps_config_free(c);
}

static void test_defaults(void **state)
{
    /* an empty file is the default config */
    ps_config_t *c = load_ok("");
    assert_int_equal(c->scrape_interval, 10 * S);
    assert_int_equal(c->scrape_timeout, 10 * S);
    assert_int_equal(c->nscrape, 0);
    assert_int_equal(c->external_labels.n, 0);
    ps_config_free(c);

    c = load_ok("# only a comment\n---\n");
    assert_int_equal(c->scrape_interval, 10 * S);
    ps_config_free(c);

    /* global interval below the default timeout: the timeout follows it */
    c = load_ok("global: {scrape_interval: 4s}\n"
                "scrape_configs:\n"
                "- job_name: a\n"
                "- job_name: b\n"
                "  scrape_interval: 3s\n"
                "- job_name: c\n"
                "  scrape_interval: 1m\n"
                "- job_name: d\n"
                "  scrape_interval: 0\n"
                "  scrape_timeout: 2s\n");
    assert_int_equal(c->scrape_interval, 4 * S);
    assert_int_equal(c->scrape_timeout, 4 * S);
    assert_int_equal(c->scrape[0].scrape_interval, 4 * S);
    assert_int_equal(c->scrape[0].scrape_timeout, 4 * S);
    assert_int_equal(c->scrape[1].scrape_interval, 3 * S);
    assert_int_equal(c->scrape[1].scrape_timeout, 3 * S); /* min(global timeout, interval) */
    assert_int_equal(c->scrape[2].scrape_interval, 60 * S);
    assert_int_equal(c->scrape[2].scrape_timeout, 4 * S);
    assert_int_equal(c->scrape[3].scrape_interval, 4 * S); /* 0 = the global interval */
    assert_int_equal(c->scrape[3].scrape_timeout, 2 * S);
    for (int i = 0; i < 4; i++) {
        assert_string_equal(c->scrape[i].scheme, "http");
        assert_true(c->scrape[i].client.follow_redirects);
        assert_null(c->scrape[i].client.auth_type);
    }
    ps_config_free(c);

    /* nulls leave defaults */
    c = load_ok("global:\nscrape_configs:\n- job_name: x\n  scheme:\n  static_configs:\n  relabel_configs: ~\n");
    assert_int_equal(c->scrape_interval, 10 * S);
    assert_string_equal(c->scrape[0].scheme, "http");
    assert_int_equal(c->scrape[0].nstatic, 0);
    ps_config_free(c);

    /* ps_config_parse from memory, and ps_config_free(NULL) */
    ps_err_t err;
    const char *y = "scrape_configs: [{job_name: m, static_configs: [{targets: ['a:1']}]}]";
    assert_int_equal(ps_config_parse(y, strlen(y), "mem", &c, &err), 0);
    assert_string_equal(c->path, "mem");
    assert_string_equal(c->scrape[0].static_configs[0].targets[0], "a:1");
    ps_config_free(c);
    ps_config_free(NULL);
}

static void test_pprof_defaults(void **state)
{
    /* no profiling_config: Parca's five plus threadcreate (disabled) */
    ps_config_t *c = load_ok("scrape_configs: [{job_name: a}]\n");
    const ps_scrape_config_t *sc = &c->scrape[0];
    assert_int_equal(sc->npprof, 6);
    static const struct {
        const char *name, *path;
        bool enabled, delta;
    } want[] = {
        {"memory", "/debug/pprof/allocs", true, false},       {"block", "/debug/pprof/block", true, false},
        {"goroutine", "/debug/pprof/goroutine", true, false}, {"mutex", "/debug/pprof/mutex", true, false},
        {"process_cpu", "/debug/pprof/profile", true, true},  {"threadcreate", "/debug/pprof/threadcreate", false, false},
    };
    for (int i = 0; i < 6; i++) {
        assert_string_equal(sc->pprof[i].name, want[i].name);
        assert_string_equal(sc->pprof[i].path, want[i].path);
        assert_int_equal(sc->pprof[i].enabled, want[i].enabled);
        assert_int_equal(sc->pprof[i].delta, want[i].delta);
        assert_int_equal(sc->pprof[i].seconds, 0);
        assert_int_equal(sc->pprof[i].nkeep, 0);
    }
    assert_string_equal(sc->path_prefix, "");
    ps_config_free(c);

    /* merged per key and per field; custom entries after the defaults, in file order */
    c = load_ok("scrape_configs:\n"
                "- job_name: a\n"
                "  profiling_config:\n"
                "    pprof_config:\n"
                "      zeta: {path: /z}\n"
                "      block: {path: /my/block}\n"
                "      memory: {enabled: false}\n"
                "      threadcreate:\n"
                "      process_cpu: {delta: false}\n"
                "      alpha: {path: /a, enabled: false, delta: true, seconds: 3s}\n"
                "      goroutine: {enabled: true}\n");
    sc = &c->scrape[0];
    assert_int_equal(sc->npprof, 8);
    assert_string_equal(sc->pprof[0].name, "memory");
    assert_false(sc->pprof[0].enabled);
    assert_string_equal(sc->pprof[0].path, "/debug/pprof/allocs");
    assert_string_equal(sc->pprof[1].name, "block");
    assert_true(sc->pprof[1].enabled); /* present without enabled */
    assert_string_equal(sc->pprof[1].path, "/my/block");
    assert_true(sc->pprof[2].enabled);
    assert_string_equal(sc->pprof[2].path, "/debug/pprof/goroutine");
    assert_true(sc->pprof[3].enabled); /* mutex: absent, default */
    assert_string_equal(sc->pprof[4].name, "process_cpu");
    assert_true(sc->pprof[4].enabled);
    assert_false(sc->pprof[4].delta); /* explicit delta wins */
    assert_string_equal(sc->pprof[4].path, "/debug/pprof/profile");
    assert_string_equal(sc->pprof[5].name, "threadcreate");
    assert_true(sc->pprof[5].enabled); /* "threadcreate:" alone = present = enabled */
    assert_string_equal(sc->pprof[5].path, "/debug/pprof/threadcreate");
    assert_string_equal(sc->pprof[6].name, "zeta");
    assert_true(sc->pprof[6].enabled);
    assert_false(sc->pprof[6].delta);
    assert_string_equal(sc->pprof[6].path, "/z");
    assert_string_equal(sc->pprof[7].name, "alpha");
    assert_false(sc->pprof[7].enabled);
    assert_true(sc->pprof[7].delta);
    assert_int_equal(sc->pprof[7].seconds, 3 * S);
    ps_config_free(c);

    /* process_cpu {} keeps delta: true; a disabled process_cpu allows a short timeout */
    c = load_ok("scrape_configs:\n"
                "- job_name: a\n"
                "  profiling_config: {pprof_config: {process_cpu: {}}}\n"
                "- job_name: b\n"
                "  scrape_interval: 1s\n"
                "  profiling_config: {pprof_config: {process_cpu: {enabled: false}}}\n");
    assert_true(pprof(&c->scrape[0], "process_cpu")->delta);
    assert_true(pprof(&c->scrape[0], "process_cpu")->enabled);
    assert_false(pprof(&c->scrape[1], "process_cpu")->enabled);
    assert_int_equal(c->scrape[1].scrape_timeout, 1 * S);
    ps_config_free(c);
}

static void test_relative_paths(void **state)
{
    ps_config_t *c = load_ok("scrape_configs:\n"
                             "- job_name: a\n"
                             "  file_sd_configs: [{files: ['sd/*.json', '/abs/x.yml']}]\n"
                             "  tls_config: {ca_file: ca.pem}\n"
                             "  authorization: {credentials_file: tok}\n"
                             "  http_sd_configs: [{url: 'http://h/x', basic_auth: {username: u, password_file: pw}}]\n");
    char want[256];
    const ps_scrape_config_t *sc = &c->scrape[0];
    snprintf(want, sizeof(want), "%s/sd/*.json", tmpdir);
    assert_string_equal(sc->file_sd[0].files[0], want);
    assert_string_equal(sc->file_sd[0].files[1], "/abs/x.yml");
    snprintf(want, sizeof(want), "%s/ca.pem", tmpdir);
    assert_string_equal(sc->client.tls.ca_file, want);
    snprintf(want, sizeof(want), "%s/tok", tmpdir);
    assert_string_equal(sc->client.auth_credentials_file, want);
    assert_string_equal(sc->client.auth_type, "Bearer");
    snprintf(want, sizeof(want), "%s/pw", tmpdir);
    assert_string_equal(sc->http_sd[0].client.basic_password_file, want);
    ps_config_free(c);

    /* from memory: kept as written */
    ps_err_t err;
    const char *y = "scrape_configs: [{job_name: a, file_sd_configs: [{files: ['sd/*.json']}]}]";
    assert_int_equal(ps_config_parse(y, strlen(y), "mem.yml", &c, &err), 0);
    assert_string_equal(c->scrape[0].file_sd[0].files[0], "sd/*.json");
    ps_config_free(c);
}

static void test_accepted_spellings(void **state)
{
    /* actions are case-insensitive; booleans in yaml.v2 spellings; numbers as strings */
    ps_config_t *c = load_ok("scrape_configs:\n"
                             "- job_name: 123\n"
                             "  follow_redirects: No\n"
                             "  relabel_configs:\n"
                             "  - {action: LabelMap, regex: 'x_(.+)', replacement: 'y_${1}'}\n"
                             "  - {action: UPPERCASE, source_labels: [a], target_label: b}\n"
                             "  - {action: DropEqual, source_labels: [a], target_label: b}\n"
                             "  - {action: labelkeep, regex: 'a|b|__.*'}\n"
                             "  - {action: replace, target_label: '${1}x', regex: '(a)'}\n"
                             "  - {action: replace, target_label: a, regex: '(?P<n>a)', replacement: '$n'}\n"
                             "  static_configs: [{targets: [\"h\", 'a-b.c_d:65535', '[fe80::1%eth0]:1', '[::1]']}]\n");
    const ps_scrape_config_t *sc = &c->scrape[0];
    assert_string_equal(sc->job_name, "123");
    assert_false(sc->client.follow_redirects);
    assert_int_equal(sc->relabel[0].action, PS_RELABEL_LABELMAP);
    assert_int_equal(sc->relabel[1].action, PS_RELABEL_UPPERCASE);
    assert_int_equal(sc->relabel[2].action, PS_RELABEL_DROPEQUAL);
    assert_int_equal(sc->relabel[3].action, PS_RELABEL_LABELKEEP);
    assert_int_equal(sc->static_configs[0].ntargets, 4);
    ps_config_free(c);
}

static void test_errors_syntax_and_keys(void **state)
{
    load_err("scrape_configs:\n  - job_name: [a\n", "3:1: invalid YAML: ", "");
    load_err("foo: 1\n", "1:1: unknown field \"foo\" in the top level", "valid fields: global, scrape_configs");
    load_err("- a\n- b\n", "1:1: the top level must be a mapping", "got a list");
    load_err("scrape_configs:\n- job_name: a\n  scrape_intervall: 5s\n",
             "3:3: scrape_configs[0]: unknown field \"scrape_intervall\" in a scrape config",
             "did you mean \"scrape_interval\"?");
    load_err("scrape_configs:\n- job_name: a\n  wibble: 5s\n", "3:3: scrape_configs[0]: unknown field \"wibble\"",
             "valid fields: job_name, scrape_interval");
    load_err("scrape_configs:\n- job_name: a\n  relabel_configs:\n  - action: keep\n    regexp: x\n",
             "5:5: scrape_configs[0].relabel_configs[0]: unknown field \"regexp\" in a relabel config",
             "did you mean \"regex\"?");
    load_err("global:\n  scrape_interval: 5s\n  scrape_interval: 6s\n",
             "3:3: global: duplicate key \"scrape_interval\" (first at line 2, column 3)", "");
    load_err("rule_files: [a.yml]\n", "1:1: rule_files is not supported", "");
    load_err("scrape_configs:\n- job_name: a\n  metrics_path: /debug/pprof/profile\n",
             "3:3: scrape_configs[0]: metrics_path is not supported", "profiling_config");
    load_err("scrape_configs:\n- job_name: a\n  kubernetes_sd_configs: [{role: pod}]\n",
             "3:3: scrape_configs[0]: kubernetes_sd_configs is not supported", "file_sd_configs");
    load_err("scrape_configs:\n- job_name: a\n  metric_relabel_configs: []\n",
             "3:3: scrape_configs[0]: metric_relabel_configs is not supported", "");
    load_err("scrape_configs:\n- job_name: a\n  oauth2: {}\n", "3:3: scrape_configs[0]: unknown field \"oauth2\"", "");
    load_err("a: 1\n---\nb: 2\n", "1:1: unknown field \"a\"", "");
    load_err("global: {}\n---\nglobal: {}\n", "2:1: a second YAML document is not supported", "");
    load_err("scrape_configs:\n- job_name: a\n  <<: {scheme: http}\n", "3:3: scrape_configs[0]: unknown field \"<<\"",
             "");
}

static void test_errors_types(void **state)
{
    load_err("scrape_configs: {job_name: a}\n", "1:17: scrape_configs: expected a list of scrape configs", "a mapping");
    load_err("scrape_configs:\n- job_name: [a]\n", "2:13: scrape_configs[0].job_name: expected a string, got a list",
             "");
    load_err("scrape_configs:\n-\n- job_name: a\n", "2:2: scrape_configs[0]: empty scrape config", "");
    load_err("scrape_configs:\n- job_name: a\n  follow_redirects: maybe\n",
             "3:21: scrape_configs[0].follow_redirects: expected true or false, got \"maybe\"", "");
    load_err("scrape_configs:\n- job_name: a\n  follow_redirects: 'true'\n",
             "3:21: scrape_configs[0].follow_redirects: expected true or false", "");
    load_err("global:\n  external_labels: [a, b]\n", "2:20: global.external_labels: expected labels (a mapping)",
             "got a list");
    load_err("scrape_configs:\n- job_name: a\n  params: {x: y}\n",
             "3:15: scrape_configs[0].params.x: expected a list of strings, got a scalar", "");
    load_err("scrape_configs:\n- job_name: a\n  relabel_configs: [{action: hashmod, modulus: -1, target_label: x}]\n",
             "3:48: scrape_configs[0].relabel_configs[0].modulus: expected a non-negative integer, got \"-1\"", "");
    load_err("scrape_configs:\n- job_name: a\n  static_configs: [{targets: 'h:1'}]\n",
             "3:30: scrape_configs[0].static_configs[0].targets: expected a list of targets", "");
    load_err("scrape_configs:\n- job_name: \"a\\0b\"\n", "2:13: scrape_configs[0].job_name: the string contains a NUL", "");
}

static void test_errors_durations(void **state)
{
    load_err("global:\n  scrape_interval: 10\n", "2:20: global.scrape_interval: not a valid duration string: \"10\"",
             "");
    load_err("global:\n  scrape_interval: 1x\n", "2:20: global.scrape_interval: not a valid duration string", "");
    load_err("global:\n  scrape_interval: 5s\n  scrape_timeout: 6s\n",
             "3:19: global.scrape_timeout: the global scrape timeout (6s) is greater than the scrape interval (5s)", "");
    load_err("scrape_configs:\n- job_name: a\n  scrape_interval: 5s\n  scrape_timeout: 10s\n",
             "4:19: scrape_configs[0].scrape_timeout: the scrape timeout (10s) is greater than the scrape interval (5s)",
             "");
    /* job timeout against the global interval */
    load_err("global: {scrape_interval: 4s}\nscrape_configs:\n- job_name: a\n  scrape_timeout: 5s\n",
             "4:19: scrape_configs[0].scrape_timeout: the scrape timeout (5s) is greater", "");
    load_err("scrape_configs:\n- job_name: a\n  file_sd_configs: [{files: [a.json], refresh_interval: 0}]\n",
             "3:57: scrape_configs[0].file_sd_configs[0].refresh_interval: refresh_interval must be greater than 0",
             "");
    /* process_cpu needs >= 2s */
    load_err("scrape_configs:\n- job_name: a\n  scrape_interval: 5s\n  scrape_timeout: 1500ms\n",
             "4:19: scrape_configs[0].scrape_timeout: the scrape timeout 1s500ms is too short for process_cpu", "at least 2s");
    load_err("scrape_configs:\n- job_name: a\n  scrape_interval: 1s\n",
             "3:20: scrape_configs[0].scrape_timeout: the scrape timeout 1s is too short for process_cpu", "");
    load_err("global: {scrape_interval: 1s}\nscrape_configs:\n- job_name: a\n",
             "3:3: scrape_configs[0].scrape_timeout: the scrape timeout 1s is too short", "");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {x: {path: /x, seconds: 1500ms}}}\n",
             "3:60: scrape_configs[0].profiling_config.pprof_config.x.seconds: seconds must be a whole number", "");
}

static void test_errors_jobs(void **state)
{
    load_err("scrape_configs:\n- job_name: a\n- job_name: b\n- job_name: a\n",
             "4:13: scrape_configs[2].job_name: duplicate job name \"a\" (also scrape_configs[0], line 2)", "");
    load_err("scrape_configs:\n- job_name: a\n- scheme: http\n", "3:3: scrape_configs[1]: job_name is required", "");
    load_err("scrape_configs:\n- job_name: ''\n", "2:13: scrape_configs[0].job_name: job_name must not be empty", "");
    load_err("scrape_configs:\n- job_name: a\n  scheme: ftp\n",
             "3:11: scrape_configs[0].scheme: scheme must be http or https, got \"ftp\"", "");
    load_err("scrape_configs:\n- job_name: a\n  scheme: HTTP\n", "3:11: scrape_configs[0].scheme: scheme must be", "");
}

static void test_errors_labels(void **state)
{
    load_err("global:\n  external_labels:\n    ok: 1\n    bad-name: x\n",
             "4:5: global.external_labels: \"bad-name\" is not a valid label name", "");
    load_err("global:\n  external_labels: {a: b, a: c}\n", "2:27: global.external_labels: duplicate key \"a\"", "");
    load_err("scrape_configs:\n- job_name: a\n  static_configs:\n  - targets: [h]\n    labels: {1x: y}\n",
             "5:14: scrape_configs[0].static_configs[0].labels: \"1x\" is not a valid label name", "");
    load_err("scrape_configs:\n- job_name: a\n  relabel_configs:\n  - {source_labels: [a], target_label: 'a-b'}\n",
             "4:40: scrape_configs[0].relabel_configs[0].target_label: \"a-b\" is not a valid label name for action "
             "replace",
             "");
    load_err("scrape_configs:\n- job_name: a\n  relabel_configs:\n  - {action: hashmod, modulus: 2, target_label: "
             "'x.y'}\n",
             "4:49: scrape_configs[0].relabel_configs[0].target_label: \"x.y\" is not a valid label name for action "
             "hashmod",
             "");
    load_err("scrape_configs:\n- job_name: a\n  relabel_configs:\n  - {source_labels: [ok, 'not ok'], target_label: x}\n",
             "4:26: scrape_configs[0].relabel_configs[0].source_labels[1]: \"not ok\" is not a valid label name", "");
}

static void test_errors_relabel(void **state)
{
    const char *head = "scrape_configs:\n- job_name: a\n  relabel_configs:\n";
    char y[512];
#define RL(rule) (snprintf(y, sizeof(y), "%s  - %s\n", head, rule), y)
    load_err(RL("{action: keep, regex: 'a(b'}"),
             "4:27: scrape_configs[0].relabel_configs[0].regex: invalid regex \"a(b\": missing closing parenthesis", "");
    load_err(RL("{action: keep, regex: 'a)|(b'}"), "4:27: scrape_configs[0].relabel_configs[0].regex: invalid regex",
             "");
    load_err(RL("{action: foo}"),
             "4:14: scrape_configs[0].relabel_configs[0].action: unknown relabel action \"foo\"", "labelmap");
    static const char *const need_target[] = {"replace", "hashmod", "lowercase", "uppercase", "keepequal", "dropequal"};
    for (size_t i = 0; i < 6; i++) {
        char rule[128], msg[128];
        snprintf(rule, sizeof(rule), "{action: %s, source_labels: [a], modulus: %d}", need_target[i],
                 strcmp(need_target[i], "hashmod") == 0 ? 2 : 0);
        snprintf(msg, sizeof(msg), "4:5: scrape_configs[0].relabel_configs[0]: action %s requires a target_label",
                 need_target[i]);
        if (strcmp(need_target[i], "hashmod") != 0) {
            snprintf(rule, sizeof(rule), "{action: %s, source_labels: [a]}", need_target[i]);
        }
        load_err(RL(rule), msg, "");
    }
    load_err(RL("{source_labels: [a], target_label: ''}"), "4:40: scrape_configs[0].relabel_configs[0]: action replace "
                                                           "requires a target_label",
             "");
    load_err(RL("{action: hashmod, target_label: h, modulus: 0}"),
             "4:49: scrape_configs[0].relabel_configs[0].modulus: action hashmod requires a modulus greater than 0", "");
    load_err(RL("{action: hashmod, target_label: h}"),
             "4:5: scrape_configs[0].relabel_configs[0].modulus: action hashmod requires a modulus", "");
    load_err(RL("{action: lowercase, source_labels: [a], target_label: b, replacement: x}"),
             "4:75: scrape_configs[0].relabel_configs[0].replacement: replacement cannot be set for action lowercase",
             "");
    load_err(RL("{action: keepequal, source_labels: [a], target_label: b, regex: 'x'}"),
             "4:14: scrape_configs[0].relabel_configs[0]: action keepequal takes only source_labels and target_label",
             "");
    load_err(RL("{action: labeldrop, source_labels: [a], regex: 'x'}"),
             "4:14: scrape_configs[0].relabel_configs[0]: action labeldrop takes only regex", "");
    load_err(RL("{action: labelkeep, regex: 'x', separator: ','}"),
             "4:14: scrape_configs[0].relabel_configs[0]: action labelkeep takes only regex", "");
    load_err(RL("{action: labelmap, regex: 'x', replacement: 'a-$1'}"),
             "4:49: scrape_configs[0].relabel_configs[0].replacement: \"a-$1\" is not a valid replacement for action "
             "labelmap",
             "");
    load_err(RL("{action: labelmap, regex: 'x', replacement: '1$1'}"), "4:49: scrape_configs[0].relabel_configs[0]."
                                                                       "replacement: \"1$1\" is not a valid",
             "");
#undef RL
}

static void test_errors_client(void **state)
{
    load_err("scrape_configs:\n- job_name: a\n  basic_auth: {username: u}\n  authorization: {credentials: x}\n",
             "4:3: scrape_configs[0]: at most one of basic_auth and authorization may be set", "");
    load_err("scrape_configs:\n- job_name: a\n  authorization: {credentials: x}\n  basic_auth: {username: u}\n",
             "4:3: scrape_configs[0]: at most one of basic_auth and authorization may be set", "");
    load_err("scrape_configs:\n- job_name: a\n  basic_auth:\n    password: p\n    password_file: /f\n",
             "5:5: scrape_configs[0].basic_auth: at most one of password and password_file may be set", "");
    load_err("scrape_configs:\n- job_name: a\n  bearer_token: t\n  bearer_token_file: /f\n",
             "4:3: scrape_configs[0]: at most one of bearer_token and bearer_token_file may be set", "");
    load_err("scrape_configs:\n- job_name: a\n  bearer_token: t\n  basic_auth: {username: u}\n",
             "4:3: scrape_configs[0]: at most one of basic_auth, bearer_token and bearer_token_file", "");
    load_err("scrape_configs:\n- job_name: a\n  authorization: {credentials: x}\n  bearer_token: t\n",
             "4:3: scrape_configs[0]: authorization cannot be combined with bearer_token", "");
    load_err("scrape_configs:\n- job_name: a\n  authorization: {type: Basic, credentials: x}\n",
             "3:25: scrape_configs[0].authorization.type: authorization type cannot be \"basic\"", "");
    load_err("scrape_configs:\n- job_name: a\n  authorization: {credentials: x, credentials_file: y}\n",
             "3:35: scrape_configs[0].authorization: at most one of credentials and credentials_file", "");
    load_err("scrape_configs:\n- job_name: a\n  tls_config: {cert_file: c}\n",
             "3:15: scrape_configs[0].tls_config: cert_file is set without key_file", "");
    load_err("scrape_configs:\n- job_name: a\n  tls_config: {ca: inline}\n",
             "3:16: scrape_configs[0].tls_config: unknown field \"ca\" in tls_config", "");
    load_err("scrape_configs:\n- job_name: a\n  http_sd_configs: [{url: 'h/x'}]\n",
             "3:27: scrape_configs[0].http_sd_configs[0].url: the URL scheme must be http or https", "");
    load_err("scrape_configs:\n- job_name: a\n  http_sd_configs: [{url: 'http:///x'}]\n",
             "3:27: scrape_configs[0].http_sd_configs[0].url: the URL has no host", "");
    load_err("scrape_configs:\n- job_name: a\n  http_sd_configs: [{refresh_interval: 1m}]\n",
             "3:21: scrape_configs[0].http_sd_configs[0]: an http_sd config needs a url", "");
    load_err("scrape_configs:\n- job_name: a\n  http_sd_configs: [{url: 'http://h', basic_auth: {username: u}, "
             "bearer_token: t}]\n",
             "3:66: scrape_configs[0].http_sd_configs[0]: at most one of basic_auth, bearer_token", "");
}

static void test_errors_targets(void **state)
{
    static const struct {
        const char *target, *why;
    } bad[] = {
        {"http://h:1", "not a URL"},
        {"h:1/metrics", "no paths"},
        {"a:b:c", "too many colons"},
        {"::1", "too many colons"},
        {"h:99999", "port must be a number from 1 to 65535"},
        {"h:0", "port must be a number"},
        {"h:x", "port must be a number"},
        {"h:", "missing port"},
        {":80", "missing host"},
        {"a b:1", "spaces"},
        {"user@h:1", "user info"},
        {"[::1", "missing ']'"},
        {"[::1]x", "unexpected text after ']'"},
        {"h!:1", "the host may hold only"},
        {"", "empty target"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        char y[256], want[128];
        snprintf(y, sizeof(y), "scrape_configs:\n- job_name: a\n  static_configs:\n  - targets: ['ok:1', '%s']\n",
                 bad[i].target);
        snprintf(want, sizeof(want), "4:23: scrape_configs[0].static_configs[0].targets[1]: invalid target \"%s\": ",
                 bad[i].target);
        load_err(y, want, bad[i].why);
    }
    load_err("scrape_configs:\n- job_name: a\n  static_configs:\n  - targets: [~]\n",
             "4:15: scrape_configs[0].static_configs[0].targets[0]: expected a string, got null", "");
}

static void test_errors_file_sd(void **state)
{
    load_err("scrape_configs:\n- job_name: a\n  file_sd_configs: [{files: ['dir/*/x.json']}]\n",
             "3:30: scrape_configs[0].file_sd_configs[0].files[0]: path \"dir/*/x.json\" is not valid for file "
             "discovery: only the last path segment may contain '*'",
             "");
    load_err("scrape_configs:\n- job_name: a\n  file_sd_configs: [{files: ['/etc/*.txt']}]\n",
             "3:30: scrape_configs[0].file_sd_configs[0].files[0]: path \"/etc/*.txt\" is not valid", ".json, .yml or .yaml");
    load_err("scrape_configs:\n- job_name: a\n  file_sd_configs: [{files: []}]\n",
             "3:21: scrape_configs[0].file_sd_configs[0]: a file_sd config needs at least one file", "");
    load_err("scrape_configs:\n- job_name: a\n  file_sd_configs: [{refresh_interval: 1m}]\n",
             "3:21: scrape_configs[0].file_sd_configs[0]: a file_sd config needs at least one file", "");
}

static void test_cpu_seconds_not_bound_by_timeout(void **state)
{
    /* the scraper gives a CPU entry the scrape timeout plus its seconds: an explicit seconds as long
     * as the timeout is as valid as the default (the interval) */
    ps_config_t *c = load_ok("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {process_cpu: {seconds: 10}}}\n");
    const ps_scrape_config_t *sc = &c->scrape[0];
    assert_int_equal(sc->scrape_timeout, 10 * S);
    int found = 0;
    for (uint32_t i = 0; i < sc->npprof; i++)
        if (strcmp(sc->pprof[i].name, "process_cpu") == 0) {
            assert_int_equal(sc->pprof[i].seconds, 10 * S);
            found = 1;
        }
    assert_true(found);
    ps_config_free(c);
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {process_cpu: {seconds: 11}}}\n",
             "3:60: scrape_configs[0].profiling_config.pprof_config.process_cpu.seconds: 11s is longer than the "
             "scrape interval (10s): one profile is taken per interval",
             "");
}

static void test_errors_profiling(void **state)
{
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {fgprof: {seconds: 5}}}\n",
             "3:37: scrape_configs[0].profiling_config.pprof_config.fgprof: the custom profile \"fgprof\" needs a path", "");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config:\n    pprof_config:\n      fg-prof: {path: /x}\n",
             "5:7: scrape_configs[0].profiling_config.pprof_config: \"fg-prof\" is not a valid profile name", "__name__");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {memory: {path: debug}}}\n",
             "3:52: scrape_configs[0].profiling_config.pprof_config.memory.path: the path must start with '/'", "");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {path_prefix: x}\n",
             "3:35: scrape_configs[0].profiling_config.path_prefix: path_prefix must start with '/'", "");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: {memory: {enable: true}}}\n",
             "3:46: scrape_configs[0].profiling_config.pprof_config.memory: unknown field \"enable\"",
             "did you mean \"enabled\"?");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config:\n    pprof_config:\n      memory:\n"
             "        keep_sample_type: [{type: alloc_space}]\n",
             "6:28: scrape_configs[0].profiling_config.pprof_config.memory.keep_sample_type[0]: a sample type needs a "
             "unit",
             "");
    load_err("scrape_configs:\n- job_name: a\n  profiling_config: {pprof_config: [memory]}\n",
             "3:36: scrape_configs[0].profiling_config.pprof_config: expected profile settings by name (a mapping), got a list", "");
}

static void test_load_io_errors(void **state)
{
    ps_err_t err;
    ps_config_t *c = (ps_config_t *)0x1;
    assert_int_equal(ps_config_load("/nonexistent/dir/x.yml", &c, &err), PS_EINVAL);
    assert_null(c);
    assert_string_equal(err.msg, "/nonexistent/dir/x.yml: No such file or directory");
    /* invalid UTF-8 is a YAML reader error with a position */
    const char *path = write_file("utf8.yml", "global:\n  external_labels: {a: \"\xff\"}\n");
    assert_int_equal(ps_config_load(path, &c, &err), PS_EINVAL);
    char want[256];
    snprintf(want, sizeof(want), "%s:2:", path);
    assert_memory_equal(err.msg, want, strlen(want));
}

/* ps_config_yaml: Prometheus' /api/v1/status/config text: defaults filled in, secrets hidden, and
 * reading it back gives the same text */

/* forward: (src/forward) defaults, every key, the YAML shown with secrets hidden, and the errors */
static void test_forward(void **state)
{
    (void)state;
    ps_config_t *c = load_ok("forward:\n"
                             "- url: http://b:4040/\n"
                             "- name: prom\n"
                             "  url: https://p:9090/api/v1/write\n"
                             "  protocol: remote_write\n"
                             "  remote_timeout: 5s\n"
                             "  max_lag: 30m\n"
                             "  headers: {X-Scope-OrgID: tenant1}\n"
                             "  authorization: {credentials: tok}\n"
                             "  tls_config: {insecure_skip_verify: true}\n"
                             "  write_relabel_configs: [{action: labeldrop, regex: pod}]\n"
                             "  queue_config: {capacity: 10, max_shards: 2, max_samples_per_send: 7,\n"
                             "                 batch_send_deadline: 1s, min_backoff: 10ms, max_backoff: 1m,\n"
                             "                 retry_on_http_429: false, max_bytes: 64KiB}\n");
    assert_int_equal(c->nforward, 2);
    const ps_forward_config_t *a = &c->forward[0], *b = &c->forward[1];
    assert_string_equal(a->name, "http://b:4040/");
    assert_int_equal(a->protocol, PS_FORWARD_PYROSCOPE_PUSH);
    assert_int_equal(a->remote_timeout, 30 * PS_NS_PER_S);
    assert_int_equal(a->max_lag, 2 * 3600 * PS_NS_PER_S);
    assert_int_equal(a->capacity, 2500);
    assert_int_equal(a->max_shards, 1);
    assert_int_equal(a->max_samples_per_send, 500);
    assert_int_equal(a->batch_send_deadline, 5 * PS_NS_PER_S);
    assert_int_equal(a->min_backoff, 30 * 1000000);
    assert_int_equal(a->max_backoff, 5 * PS_NS_PER_S);
    assert_true(a->retry_on_http_429);
    assert_string_equal(b->name, "prom");
    assert_int_equal(b->protocol, PS_FORWARD_REMOTE_WRITE);
    assert_int_equal(b->remote_timeout, 5 * PS_NS_PER_S);
    assert_int_equal(b->max_lag, 30 * 60 * PS_NS_PER_S);
    assert_int_equal(b->nheaders, 1);
    assert_string_equal(b->header_names[0], "X-Scope-OrgID");
    assert_string_equal(b->header_values[0], "tenant1");
    assert_string_equal(b->client.auth_type, "Bearer");
    assert_string_equal(b->client.auth_credentials, "tok");
    assert_true(b->client.tls.insecure_skip_verify);
    assert_int_equal(b->nrelabel, 1);
    assert_int_equal(b->relabel[0].action, PS_RELABEL_LABELDROP);
    assert_int_equal(b->capacity, 10);
    assert_int_equal(b->max_shards, 2);
    assert_int_equal(b->max_samples_per_send, 7);
    assert_int_equal(b->batch_send_deadline, PS_NS_PER_S);
    assert_int_equal(b->min_backoff, 10 * 1000000);
    assert_int_equal(b->max_backoff, 60 * PS_NS_PER_S);
    assert_false(b->retry_on_http_429);
    assert_int_equal(a->max_bytes, 0);
    assert_int_equal(b->max_bytes, 65536);
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(c, &y);
    ps_buf_putc(&y, 0);
    const char *want = "forward:\n"
                       "- name: prom\n"
                       "  url: https://p:9090/api/v1/write\n"
                       "  protocol: remote_write\n"
                       "  remote_timeout: 5s\n"
                       "  headers:\n"
                       "    X-Scope-OrgID: <secret>\n"
                       "  authorization:\n"
                       "    type: Bearer\n"
                       "    credentials: <secret>\n"
                       "  tls_config:\n"
                       "    insecure_skip_verify: true\n"
                       "  follow_redirects: true\n"
                       "  write_relabel_configs:\n";
    const char *got = strstr((const char *)y.data, "- name: prom");
    assert_non_null(got);
    assert_memory_equal(got, want + 9, strlen(want) - 9);
    assert_non_null(strstr((const char *)y.data, "  max_lag: 30m\n  queue_config:\n    capacity: 10\n    max_shards: 2\n"
                                                 "    max_samples_per_send: 7\n    batch_send_deadline: 1s\n"
                                                 "    min_backoff: 10ms\n    max_backoff: 1m\n"
                                                 "    retry_on_http_429: false\n    max_bytes: 65536\n"));
    assert_null(strstr((const char *)y.data, "tenant1"));
    assert_null(strstr((const char *)y.data, "tok"));
    /* the text reads back to a configuration that prints the same (fuzz_config's rule) */
    ps_config_t *c2 = NULL;
    ps_err_t err2;
    assert_int_equal(ps_config_parse((const char *)y.data, y.len - 1, "status.yml", &c2, &err2), 0);
    ps_buf_t y2 = PS_BUF_INIT;
    ps_config_yaml(c2, &y2);
    ps_buf_putc(&y2, 0);
    assert_string_equal((const char *)y2.data, (const char *)y.data);
    ps_buf_dispose(&y2);
    ps_config_free(c2);
    ps_buf_dispose(&y);
    ps_config_free(c);

    load_err("forward:\n- url: ftp://x\n", "2:8: forward[0].url: the URL scheme must be http or https: \"ftp://x\"", "");
    load_err("forward:\n- name: a\n", "2:3: forward[0]: a forward endpoint needs a url", "");
    load_err("forward:\n- url: http://x\n  protocol: otlp\n",
             "3:13: forward[0].protocol: protocol must be pyroscope_push or remote_write, got \"otlp\"", "");
    load_err("forward:\n- url: http://x\n- url: http://x\n",
             "3:3: forward[1].url: duplicate forward endpoint name \"http://x\" (also forward[0]); names must be unique", "");
    load_err("forward:\n- {name: a, url: http://x}\n- {name: a, url: http://y}\n",
             "3:10: forward[1].name: duplicate forward endpoint name \"a\" (also forward[0])", "");
    load_err("forward:\n- url: http://x\n  queue_config: {min_backoff: 1s, max_backoff: 100ms}\n",
             "3:48: forward[0].queue_config.max_backoff: max_backoff (100ms) is less than min_backoff (1s)", "");
    load_err("forward:\n- url: http://x\n  queue_config: {capacity: 0}\n",
             "3:28: forward[0].queue_config.capacity: must be between 1 and 1000000, got 0", "");
    load_err("forward:\n- url: http://x\n  queue_config: {batch_send_deadline: 0s}\n",
             "3:39: forward[0].queue_config.batch_send_deadline: batch_send_deadline must be greater than 0", "");
    load_err("forward:\n- url: http://x\n  headers: {Content-Type: text/plain}\n",
             "3:13: forward[0].headers.Content-Type: header \"Content-Type\" is set by profstore itself", "");
    load_err("forward:\n- url: http://x\n  queue_config: {min_shards: 1}\n", "3:18: forward[0].queue_config: unknown",
             "min_shards");
    load_err("forward:\n- url: http://x\n  max_lag: -1s\n", "3:12: forward[0].max_lag:", "");
    load_err("forward:\n- url: http://x\n  queue_config: {max_bytes: 64Mb}\n",
             "3:29: forward[0].queue_config.max_bytes: byte size \"64Mb\": unknown unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)",
             "");
    load_err("forward:\n- url: http://x\n  queue_config: {max_bytes: -1}\n",
             "3:29: forward[0].queue_config.max_bytes: expected a byte size such as 64MiB, got \"-1\"", "");
    load_err("forward:\n- url: http://x\n  queue_config: {max_bytes: 99999999999TB}\n",
             "3:29: forward[0].queue_config.max_bytes: byte size \"99999999999TB\" is too large", "");
    ps_config_t *cb = load_ok("forward:\n- url: http://x\n  queue_config: {max_bytes: 2GB}\n");
    assert_int_equal(cb->forward[0].max_bytes, 2ull << 30);
    ps_config_free(cb);
}

static void test_yaml(void **state)
{
    (void)state;
    static const char *small =
        "global: {scrape_interval: 1m, external_labels: {cluster: 'eu 1', a: '15'}}\n"
        "scrape_configs:\n"
        "  - job_name: api\n"
        "    basic_auth: {username: u, password: hunter2}\n"
        "    static_configs: [{targets: ['127.0.0.1:6060'], labels: {team: core}}]\n"
        "    relabel_configs: [{source_labels: [__address__], regex: '(.*):.*', target_label: host}]\n"
        "    profiling_config:\n"
        "      pprof_config: {memory: {enabled: false}, block: {enabled: false}, mutex: {enabled: false},\n"
        "                     process_cpu: {enabled: false}, goroutine: {path: /g}}\n";
    static const char *want =
        "global:\n"
        "  scrape_interval: 1m\n"
        "  scrape_timeout: 10s\n"
        "  external_labels:\n"
        "    a: \"15\"\n"
        "    cluster: eu 1\n"
        "scrape_configs:\n"
        "- job_name: api\n"
        "  scrape_interval: 1m\n"
        "  scrape_timeout: 10s\n"
        "  scheme: http\n"
        "  basic_auth:\n"
        "    username: u\n"
        "    password: <secret>\n"
        "  follow_redirects: true\n"
        "  static_configs:\n"
        "  - targets:\n"
        "    - 127.0.0.1:6060\n"
        "    labels:\n"
        "      team: core\n"
        "  relabel_configs:\n"
        "  - source_labels: [__address__]\n"
        "    separator: ;\n"
        "    regex: (.*):.*\n"
        "    target_label: host\n"
        "    replacement: $1\n"
        "    action: replace\n"
        "  profiling_config:\n"
        "    pprof_config:\n"
        "      memory:\n"
        "        enabled: false\n"
        "        path: /debug/pprof/allocs\n"
        "        delta: false\n"
        "      block:\n"
        "        enabled: false\n"
        "        path: /debug/pprof/block\n"
        "        delta: false\n"
        "      goroutine:\n"
        "        enabled: true\n"
        "        path: /g\n"
        "        delta: false\n"
        "      mutex:\n"
        "        enabled: false\n"
        "        path: /debug/pprof/mutex\n"
        "        delta: false\n"
        "      process_cpu:\n"
        "        enabled: false\n"
        "        path: /debug/pprof/profile\n"
        "        delta: true\n"
        "      threadcreate:\n"
        "        enabled: false\n"
        "        path: /debug/pprof/threadcreate\n"
        "        delta: false\n";
    ps_config_t *c = load_ok(small);
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(c, &y);
    ps_buf_append(&y, "", 1);
    assert_string_equal((char *)y.data, want);
    ps_buf_dispose(&y);
    ps_config_free(c);

    /* every kind of field: the text reads back to the same text, and no secret is in it */
    const char *texts[] = {small, full_config};
    for (int k = 0; k < 2; k++) {
        ps_buf_t y1 = PS_BUF_INIT, y2 = PS_BUF_INIT;
        c = load_ok(texts[k]);
        ps_config_yaml(c, &y1);
        ps_config_free(c);
        ps_config_t *c2 = NULL;
        ps_err_t err;
        int rc = ps_config_parse((char *)y1.data, y1.len, "status.yml", &c2, &err);
        if (rc != 0)
            print_error("%s\n%.*s", err.msg, (int)y1.len, (char *)y1.data);
        assert_int_equal(rc, 0);
        ps_config_yaml(c2, &y2);
        ps_config_free(c2);
        assert_int_equal(y1.len, y2.len);
        assert_memory_equal(y1.data, y2.data, y1.len);
        ps_buf_append(&y1, "", 1);
        assert_null(strstr((char *)y1.data, "hunter2"));
        assert_null(strstr((char *)y1.data, ": tok"));
        ps_buf_dispose(&y1);
        ps_buf_dispose(&y2);
    }
    ps_config_yaml(NULL, &y); /* nothing */
    assert_int_equal(y.len, 0);
}

/* Strings as Prometheus 2.42 writes them in /api/v1/status/config (yaml.v2): these external
 * labels given to Prometheus 2.42, its answer copied here (less its evaluation_interval): plain,
 * double-quoted when plain reads back as another type (numbers, bools, null, dates, base 60),
 * single-quoted where plain YAML cannot hold the text, a literal block for a newline, folded past
 * 80 columns, UTF-8 as is. */
static void test_yaml_as_prometheus(void **state)
{
    (void)state;
    static const char *in = "global:\n"
        "  external_labels:\n"
        "    region: eu\n"
        "    num: \"5\"\n"
        "    sp: \"eu 1\"\n"
        "    t: \"true\"\n"
        "    e1: \"~\"\n"
        "    colon: \"a: b\"\n"
        "    colon2: \"a:b\"\n"
        "    endcolon: \"ab:\"\n"
        "    dash: \"- x\"\n"
        "    dash2: \"-x\"\n"
        "    hash: \"a #b\"\n"
        "    hash2: \"a#b\"\n"
        "    ts: \"2023-01-01\"\n"
        "    ts2: \"2023-1-1 10:00:00\"\n"
        "    b60: \"1:30\"\n"
        "    uni: \"\xc3\xa9 \xc3\xbc\"\n"
        "    long: \"word word word word word word word word word word word word word word word word word word word word end\"\n"
        "    lead: \" x\"\n"
        "    trail: \"x \"\n"
        "    q: \"it's\"\n"
        "    ctl: \"a\\tb\"\n"
        "    secret: \"<secret>\"\n"
        "    dollar: \"$1\"\n"
        "    paren: \"(.*)\"\n"
        "    semi: \";\"\n"
        "    star: \"*x\"\n"
        "    amp: \"&x\"\n"
        "    bang: \"!x\"\n"
        "    pct: \"%x\"\n"
        "    at: \"@x\"\n"
        "    bq: \"`x\"\n"
        "    brace: \"{x}\"\n"
        "    brack: \"[x]\"\n"
        "    comma: \"a,b\"\n"
        "    qm: \"?x\"\n"
        "    gt: \">x\"\n"
        "    pipe: \"|x\"\n"
        "    sq: \"'x'\"\n"
        "    dq: '\"x\"'\n"
        "    hex: \"0x1F\"\n"
        "    oct: \"0o17\"\n"
        "    flt: \"1e3\"\n"
        "    dotf: \".5\"\n"
        "    under: \"1_000\"\n"
        "    big: \"99999999999999999999\"\n"
        "    neg: \"-1\"\n"
        "    yes: \"yes\"\n"
        "    yy: \"y\"\n"
        "    nl: \"a\\nb\"\n"
        "    bs: \"a\\\\b\"\n"
        "    nul: \"null\"\n"
        "    inf: \".inf\"\n"
        "    ver: \"1.2.3\"\n"
        "    ip: \"10.0.0.1\"\n"
        "    v: \"v1.0\"\n"
        "    date3: \"2023-02-30\"\n";
    static const char *want = "global:\n"
        "  scrape_interval: 10s\n"
        "  scrape_timeout: 10s\n"
        "  external_labels:\n"
        "    amp: '&x'\n"
        "    at: '@x'\n"
        "    b60: \"1:30\"\n"
        "    bang: '!x'\n"
        "    big: \"99999999999999999999\"\n"
        "    bq: '`x'\n"
        "    brace: '{x}'\n"
        "    brack: '[x]'\n"
        "    bs: a\\b\n"
        "    colon: 'a: b'\n"
        "    colon2: a:b\n"
        "    comma: a,b\n"
        "    ctl: \"a\\tb\"\n"
        "    dash: '- x'\n"
        "    dash2: -x\n"
        "    date3: 2023-02-30\n"
        "    dollar: $1\n"
        "    dotf: \".5\"\n"
        "    dq: '\"x\"'\n"
        "    e1: \"~\"\n"
        "    endcolon: 'ab:'\n"
        "    flt: \"1e3\"\n"
        "    gt: '>x'\n"
        "    hash: 'a #b'\n"
        "    hash2: a#b\n"
        "    hex: \"0x1F\"\n"
        "    inf: \".inf\"\n"
        "    ip: 10.0.0.1\n"
        "    lead: ' x'\n"
        "    long: word word word word word word word word word word word word word word word\n"
        "      word word word word word end\n"
        "    neg: \"-1\"\n"
        "    nl: |-\n"
        "      a\n"
        "      b\n"
        "    nul: \"null\"\n"
        "    num: \"5\"\n"
        "    oct: \"0o17\"\n"
        "    paren: (.*)\n"
        "    pct: '%x'\n"
        "    pipe: '|x'\n"
        "    q: it's\n"
        "    qm: ?x\n"
        "    region: eu\n"
        "    secret: <secret>\n"
        "    semi: ;\n"
        "    sp: eu 1\n"
        "    sq: '''x'''\n"
        "    star: '*x'\n"
        "    t: \"true\"\n"
        "    trail: 'x '\n"
        "    ts: \"2023-01-01\"\n"
        "    ts2: \"2023-1-1 10:00:00\"\n"
        "    under: \"1_000\"\n"
        "    uni: \xc3\xa9 \xc3\xbc\n"
        "    v: v1.0\n"
        "    ver: 1.2.3\n"
        "    \"yes\": \"yes\"\n"
        "    yy: \"y\"\n";
    ps_config_t *c = load_ok(in);
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(c, &y);
    ps_buf_append(&y, "", 1);
    assert_string_equal((char *)y.data, want);
    /* and it reads back to the same labels */
    ps_config_t *c2 = NULL;
    ps_err_t err;
    assert_int_equal(ps_config_parse((char *)y.data, y.len - 1, "status.yml", &c2, &err), 0);
    assert_int_equal(c2->external_labels.n, c->external_labels.n);
    for (uint32_t i = 0; i < c->external_labels.n; i++) {
        assert_string_equal(c2->external_labels.pairs[i].name, c->external_labels.pairs[i].name);
        assert_string_equal(c2->external_labels.pairs[i].value, c->external_labels.pairs[i].value);
    }
    ps_config_free(c2);
    ps_buf_dispose(&y);
    ps_config_free(c);
}

/* The client blocks of empty values (fuzz_config's finding: `basic_auth: {username: ''}` printed an
 * empty `basic_auth:`, a null that reads back as no basic_auth): the text keeps each block, with
 * username "" and the authorization's type, and reads back to the same text. */
static void test_yaml_empty_client_values(void **state)
{
    (void)state;
    static const struct {
        const char *client, *want;
    } cases[] = {
        {"  basic_auth: {username: ''}\n", "  basic_auth:\n    username: \"\"\n"},
        {"  basic_auth: {password: ''}\n", "  basic_auth:\n    username: \"\"\n"},
        {"  authorization: {credentials: ''}\n", "  authorization:\n    type: Bearer\n"},
        {"  authorization: {type: Token}\n", "  authorization:\n    type: Token\n"},
        {"  bearer_token: ''\n", "  authorization:\n    type: Bearer\n"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char text[256];
        snprintf(text, sizeof(text), "scrape_configs:\n- job_name: a\n%s", cases[i].client);
        ps_config_t *c = load_ok(text);
        ps_buf_t y1 = PS_BUF_INIT, y2 = PS_BUF_INIT;
        ps_config_yaml(c, &y1);
        ps_config_free(c);
        ps_buf_append(&y1, "", 1);
        const char *at = strstr((char *)y1.data, "  scheme: http\n");
        assert_non_null(at);
        at += strlen("  scheme: http\n");
        assert_memory_equal(at, cases[i].want, strlen(cases[i].want));
        assert_true(strncmp(at + strlen(cases[i].want), "  follow_redirects: true\n", 25) == 0);
        ps_config_t *c2 = NULL;
        ps_err_t err;
        assert_int_equal(ps_config_parse((char *)y1.data, y1.len - 1, "status.yml", &c2, &err), 0);
        ps_config_yaml(c2, &y2);
        ps_config_free(c2);
        assert_int_equal(y2.len, y1.len - 1);
        assert_memory_equal(y1.data, y2.data, y2.len);
        ps_buf_dispose(&y1);
        ps_buf_dispose(&y2);
    }
}

/* recording_rules: (src/rules validates them; here their shape) */
static void test_recording_rules(void **state)
{
    (void)state;
    ps_config_t *c = load_ok("recording_rules:\n"
                             "  - id: abc\n"
                             "    metric_name: profiles_recorded_x\n"
                             "    matchers: ['{__profile_type__=\"a:b:c:d:e\"}', '{job=\"j\"}']\n"
                             "    group_by: [instance]\n"
                             "    external_labels: {team: t}\n"
                             "    function_name: main.f\n"
                             "  - metric_name: profiles_recorded_y\n");
    assert_int_equal(c->nrecording, 2);
    const ps_recording_rule_config_t *r = &c->recording[0];
    assert_string_equal(r->id, "abc");
    assert_string_equal(r->metric_name, "profiles_recorded_x");
    assert_int_equal(r->nmatchers, 2);
    assert_string_equal(r->matchers[1], "{job=\"j\"}");
    assert_int_equal(r->ngroup_by, 1);
    assert_string_equal(r->group_by[0], "instance");
    assert_int_equal(r->external_labels.n, 1);
    assert_string_equal(r->external_labels.pairs[0].value, "t");
    assert_string_equal(r->function_name, "main.f");
    r = &c->recording[1];
    assert_string_equal(r->id, "");
    assert_int_equal(r->nmatchers + r->ngroup_by + r->external_labels.n, 0);
    assert_null(r->function_name);
    ps_config_free(c);
    load_err("recording_rules:\n  - metric_name: profiles_recorded_x\n    matcher: []\n", "3:5:",
             "recording_rules[0]: unknown field \"matcher\" in a recording rule");
    load_err("recording_rules:\n  - matchers: []\n", "2:5:", "recording_rules[0]: a recording rule needs a metric_name");
    load_err("recording_rules:\n  - metric_name: profiles_recorded_x\n    group_by: [[a]]\n", "3:16:",
             "recording_rules[0].group_by[0]: expected a string");
    load_err("recording_rules: {a: b}\n", "1:18:", "recording_rules: expected a list of recording rules");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_full_config),        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_pprof_defaults),     cmocka_unit_test(test_relative_paths),
        cmocka_unit_test(test_accepted_spellings), cmocka_unit_test(test_errors_syntax_and_keys),
        cmocka_unit_test(test_errors_types),       cmocka_unit_test(test_errors_durations),
        cmocka_unit_test(test_errors_jobs),        cmocka_unit_test(test_errors_labels),
        cmocka_unit_test(test_errors_relabel),     cmocka_unit_test(test_errors_client),
        cmocka_unit_test(test_errors_targets),     cmocka_unit_test(test_errors_file_sd),
        cmocka_unit_test(test_errors_profiling),   cmocka_unit_test(test_load_io_errors),
        cmocka_unit_test(test_cpu_seconds_not_bound_by_timeout), cmocka_unit_test(test_yaml),
        cmocka_unit_test(test_yaml_empty_client_values), cmocka_unit_test(test_forward),
        cmocka_unit_test(test_yaml_as_prometheus), cmocka_unit_test(test_recording_rules),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
