/*
 * config.c - the YAML configuration file (see config.h; docs/protocols.md).
 *
 * Parsing. libyaml's document API loads the whole file into nodes that keep their start marks;
 * the walk below follows a fixed schema (it never recurses generically, so an alias that points at
 * its own ancestor is just a node of the wrong type somewhere). Each mapping is a table of rows
 * (key, type, offset into its struct, checks, required; config_int.h) walked by ps_yaml_map_walk;
 * the checks across keys follow the walk. Everything we keep is copied into
 * the config's arena; the YAML document is freed before returning.
 *
 * Errors. Every problem is PS_EINVAL with one message:
 *     FILE:LINE:COL: PATH: WHAT
 * e.g. "prof.yml:12:17: scrape_configs[1].relabel_configs[0].action: unknown relabel action "foo" ..."
 * LINE:COL (1-based) is where the offending node starts (for an unknown or duplicate key: the key).
 * PATH is empty for problems with the whole file. I/O errors are "FILE: <strerror>".
 *
 * YAML typing, as Go's yaml.v2 (which Prometheus and Parca use) decodes into typed fields:
 *  - a plain null (empty, ~, null, Null, NULL) leaves a field unset (its default), except the
 *    entries of pprof_config, where "name:" alone means "present" (so: enabled);
 *  - string fields take any scalar text ("8080" is a string); a NUL character is refused;
 *  - booleans: true/false, yes/no, on/off, y/n in the usual capitalisations, unquoted;
 *  - durations: Prometheus syntax via ps_parse_duration ("1m30s", "250ms"), or "0";
 *  - keys are case-sensitive, must be scalars, unknown keys and duplicate keys are errors (yaml.v2's
 *    UnmarshalStrict); merge keys ("<<") are not supported (an unknown key).
 *  - a second YAML document in the file is an error; an empty file is the default config.
 *
 * Defaults and rules (Prometheus' where the two differ, unless noted):
 *  - global.scrape_interval 10s (Parca's default, not Prometheus' 1m); 0 means the default.
 *  - scrape_timeout: the timeout must not exceed the interval (Prometheus). The default is
 *    min(10s, interval) globally and min(global timeout, interval) per job. Parca instead defaults
 *    to interval + 3s and requires timeout > interval, because it asks for a CPU profile as long as
 *    the interval; we take Prometheus' rule for the timeout, and the scraper gives a delta entry
 *    (process_cpu: ?seconds=N, N = `seconds` or the interval) the scrape timeout plus N; `seconds`
 *    may not exceed the interval (one profile per interval). When process_cpu is enabled the
 *    job's timeout must be >= 2s.
 *  - job: scheme http (http|https only), follow_redirects true, interval/timeout from global.
 *  - file_sd refresh_interval 5m, http_sd refresh_interval 60s (both must be > 0).
 *  - Relative file names (file_sd files, tls ca/cert/key, password_file, credentials_file,
 *    bearer_token_file) are joined to the directory of the config file by ps_config_load, like
 *    Prometheus' SetDirectory; ps_config_parse (no file) leaves them as written.
 *  - static_configs targets must be host or host:port (port 1-65535, IPv6 in brackets); a missing
 *    port is added by the scraper (80/443). No scheme, path, user info or spaces. (Prometheus checks
 *    addresses only after relabeling; so a URL-as-target pattern, as blackbox exporter setups use,
 *    is refused here. file_sd/http_sd targets are only required to be strings: see sd.c.)
 *  - labels (static labels, external_labels, target_label, source_labels) use Prometheus' legacy
 *    name rule [a-zA-Z_][a-zA-Z0-9_]*. external_labels also get the storage limits
 *    (ps_labels_normalize: count, name and value sizes).
 *  - http client: at most one of basic_auth / authorization / bearer_token(_file); password and
 *    password_file exclusive; credentials and credentials_file exclusive; authorization type
 *    "basic" refused (use basic_auth); cert_file needs key_file and back. bearer_token(_file)
 *    become auth_type "Bearer" + credentials; authorization without a type is "Bearer".
 *  - relabel_configs: the checks of Prometheus' relabel.Config.Validate, plus the regex compiled
 *    now (parser/regex.h, see relabel.c for the matching semantics) and, for hashmod, that OpenSSL's MD5
 *    is usable (a FIPS-only OpenSSL refuses it; better to know at load than at the first target).
 *    Default regex "(.*)", separator ";", replacement "$1", action replace (case-insensitive).
 *    We compare with the defaults by value (Prometheus compares the regex object, so an explicit
 *    `regex: (.*)` on keepequal is an error there and accepted here).
 *  - profiling_config (Parca): path_prefix (must start with '/', trailing '/' removed) and
 *    pprof_config merged per key and per field with the defaults below; an entry present without
 *    `enabled` is enabled; a missing `path` or `delta` takes the default's. Custom entries need a
 *    path and a name that is a valid metric name (it becomes __name__). `seconds` is an integer
 *    (seconds, Parca) or a duration, a whole number of seconds. keep_sample_type entries need type
 *    and unit. Output order: memory, block, goroutine, mutex, process_cpu, threadcreate (always
 *    all six, enabled or not), then custom entries in file order.
 *
 * Prometheus keys that make no sense for profiles:
 *  - accepted and ignored (harmless): honor_labels, honor_timestamps (pprof carries no target
 *    labels or sample timestamps to honour), enable_http2, Parca's normalized_addresses, and
 *    global.evaluation_interval;
 *  - refused with an explanation: metrics_path (profile paths come from profiling_config, and
 *    silently ignoring a path the user set would scrape something else), metric_relabel_configs,
 *    any other *_sd_configs (only static, file and http discovery exist here);
 *  - everything else (oauth2, proxy_url, sample_limit, rule_files, ...) is an unknown field.
 *
 * forward: (src/forward; Prometheus' remote_write shape): a list of endpoints. url http or https
 * with a host; protocol pyroscope_push (default) or remote_write; name unique, default the url;
 * headers: names of HTTP token characters, not one the sender sets itself (Authorization,
 * Content-Type, Content-Encoding, Content-Length, Connect-Protocol-Version, User-Agent,
 * X-Prometheus-Remote-Write-Version, Host); queue_config: capacity, max_shards,
 * max_samples_per_send >= 1, batch_send_deadline and min_backoff > 0, max_backoff >= min_backoff;
 * max_bytes: a byte count, an integer with an optional unit B, KB, MB, GB, TB (base 2, as
 * Prometheus' retention.size) or KiB, MiB, GiB, TiB (0: no bound, the default);
 * min_shards and sample_age_limit... are unknown keys. max_lag >= 0 (0: no bound).
 */
#include "config.h"

#include <openssl/evp.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <yaml.h>

#include "config_int.h"
#include "core/timeutil.h"

#define CONFIG_MAX_BYTES (64u << 20)
#define DEFAULT_SCRAPE_INTERVAL (10 * PS_NS_PER_S)
#define DEFAULT_SCRAPE_TIMEOUT (10 * PS_NS_PER_S)
#define DEFAULT_FILE_SD_REFRESH (5 * 60 * PS_NS_PER_S)
#define DEFAULT_HTTP_SD_REFRESH (60 * PS_NS_PER_S)
#define MIN_CPU_TIMEOUT (2 * PS_NS_PER_S)

typedef struct ctx {
    ps_yaml_walk_t w; /* document, name, dir, arena, err and the key path */
    ps_config_t *cfg;
    ps_regex_t **res; /* every compiled regex, freed here if loading fails */
    size_t nres, capres;
} ctx_t;

/* ---- messages and paths ---- */

static size_t push_key(ctx_t *c, const char *key) { return ps_yaml_push_key(&c->w, key); }
static size_t push_idx(ctx_t *c, size_t i) { return ps_yaml_push_idx(&c->w, i); }
static void pop(ctx_t *c, size_t old) { ps_yaml_pop(&c->w, old); }
#define fail(c, ...) ps_yaml_fail(&(c)->w, __VA_ARGS__)

/* ---- nodes ---- */

static yaml_node_t *node(ctx_t *c, int i) { return ps_yaml_node(&c->w, i); }
#define sval ps_yaml_sval
#define slen ps_yaml_slen
#define is_plain ps_yaml_is_plain
#define is_null ps_yaml_is_null
#define kind ps_yaml_kind

static int want_map(ctx_t *c, const yaml_node_t *n, const char *what)
{
    if (n->type != YAML_MAPPING_NODE)
        return fail(c, n, "expected %s (a mapping), got %s", what, kind(n));
    return 0;
}

static int want_seq(ctx_t *c, const yaml_node_t *n, const char *what)
{
    if (n->type != YAML_SEQUENCE_NODE)
        return fail(c, n, "expected a list of %s, got %s", what, kind(n));
    return 0;
}

static size_t seq_len(const yaml_node_t *n) { return (size_t)(n->data.sequence.items.top - n->data.sequence.items.start); }
static yaml_node_t *seq_at(ctx_t *c, const yaml_node_t *n, size_t i) { return node(c, n->data.sequence.items.start[i]); }

/* ---- scalars (yamlutil.c) ---- */

static int get_str(ctx_t *c, const yaml_node_t *n, const char **out) { return ps_yaml_get_str(&c->w, n, out); }
/* A file name; relative names are joined to the config file's directory (ps_config_load). */
static int get_file(ctx_t *c, const yaml_node_t *n, const char **out) { return ps_yaml_get_file(&c->w, n, false, out); }
static int get_duration(ctx_t *c, const yaml_node_t *n, int64_t *out) { return ps_yaml_get_duration(&c->w, n, out); }
static int get_u64(ctx_t *c, const yaml_node_t *n, uint64_t *out) { return ps_yaml_get_u64(&c->w, n, out); }

static void fmt_dur(int64_t ns, char *buf, size_t size) { ps_format_duration(ns, buf, size); }

/* ---- mappings: one table of rows each (config_int.h), walked by ps_yaml_map_walk ---- */

/* a row whose FN gets the whole destination struct */
#define WHOLE(k, f) {.key = (k), .type = PS_YF_FN, .fn = (f)}
#define MAP(what_, expect_, rows, ...)                                                                                 \
    {.what = (what_), .expect = (expect_), .fields = (rows), .n = sizeof(rows) / sizeof((rows)[0]), .suggest = true,   \
     __VA_ARGS__}

static int walk(ctx_t *c, const yaml_node_t *n, const ps_yaml_map_t *m, void *dst, ps_yaml_seen_t *seen)
{
    return ps_yaml_map_walk(&c->w, n, m, dst, c, seen);
}

static int check_key(ctx_t *c, const yaml_node_t *map, const yaml_node_pair_t *pr, const ps_yaml_map_t *m,
                     const char **key)
{
    return ps_yaml_check_key(&c->w, map, pr, m, key);
}

#define seen_val(m, s, key) ps_yaml_seen_at((m), (s), (key), false)
#define seen_key(m, s, key) ps_yaml_seen_at((m), (s), (key), true)

/* ---- labels ---- */

static int cmp_pair(const void *x, const void *y)
{
    const ps_label_pair_t *a = x, *b = y;
    size_t n = a->nlen < b->nlen ? a->nlen : b->nlen;
    int r = memcmp(a->name, b->name, n);
    return r != 0 ? r : (a->nlen > b->nlen) - (a->nlen < b->nlen);
}

/* A mapping of label names to values. limits: also apply the storage limits (external labels). */
static int parse_labels(ctx_t *c, const yaml_node_t *n, ps_labels_t *out, bool limits)
{
    static const ps_yaml_map_t any = {.what = "labels"};
    int rc = want_map(c, n, "labels");
    if (rc != 0)
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    out->n = 0;
    out->pairs = ps_arena_calloc(c->w.a, cnt, sizeof(ps_label_pair_t));
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *name;
        if ((rc = check_key(c, n, pr, &any, &name)) != 0)
            return rc;
        yaml_node_t *k = node(c, pr->key), *v = node(c, pr->value);
        if (!ps_label_name_valid(name, slen(k)))
            return fail(c, k, "\"%.64s\" is not a valid label name (must match [a-zA-Z_][a-zA-Z0-9_]*)", name);
        size_t old = push_key(c, name);
        const char *value = "";
        if (!is_null(v) && (rc = get_str(c, v, &value)) != 0)
            return rc;
        pop(c, old);
        ps_label_pair_t *p = &out->pairs[out->n++];
        p->name = ps_arena_strndup(c->w.a, name, slen(k));
        p->nlen = (uint32_t)slen(k);
        p->value = value;
        p->vlen = (uint32_t)strlen(value);
    }
    if (limits) {
        ps_err_t e;
        ps_err_clear(&e);
        if (ps_labels_normalize(out, &e) != 0)
            return fail(c, n, "%s", e.msg);
    } else {
        if (out->n > 1)
            qsort(out->pairs, out->n, sizeof(*out->pairs), cmp_pair);
    }
    return 0;
}

/* ---- targets ---- */

static bool host_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '-' ||
           ch == '.' || ch == '_';
}

const char *ps_config_target_problem(const char *s, size_t n)
{
    if (n == 0)
        return "empty target";
    if (strstr(s, "://") != NULL)
        return "a target is host:port, not a URL (the scheme comes from `scheme`, paths from profiling_config)";
    for (size_t i = 0; i < n; i++)
        if (s[i] == '/' || s[i] == '?' || s[i] == '#' || s[i] == '@' || (unsigned char)s[i] <= ' ' || s[i] == 0x7f)
            return "not a valid host:port (no paths, queries, user info or spaces)";
    size_t hend, port = n;
    if (s[0] == '[') {
        const char *close = memchr(s, ']', n);
        if (close == NULL)
            return "missing ']' after an IPv6 address";
        hend = (size_t)(close - s) + 1;
        if (hend == 2)
            return "empty IPv6 address";
        for (size_t i = 1; i + 1 < hend; i++) {
            char ch = s[i];
            if (!((ch >= '0' && ch <= '9') || (ch >= 'a' && ch <= 'f') || (ch >= 'A' && ch <= 'F') || ch == ':' ||
                  ch == '.' || ch == '%' || host_char(ch)))
                return "not a valid IPv6 address";
        }
        if (hend < n) {
            if (s[hend] != ':')
                return "unexpected text after ']' (expected :port)";
            port = hend + 1;
        }
    } else {
        const char *colon = memchr(s, ':', n);
        if (colon != NULL && memchr(colon + 1, ':', n - (size_t)(colon - s) - 1) != NULL)
            return "too many colons (write IPv6 addresses in brackets, like [::1]:7070)";
        hend = colon != NULL ? (size_t)(colon - s) : n;
        if (hend == 0)
            return "missing host before the port";
        for (size_t i = 0; i < hend; i++)
            if (!host_char(s[i]))
                return "the host may hold only letters, digits, '-', '.' and '_'";
        if (colon != NULL)
            port = hend + 1;
    }
    if (port < n || (port == n && port > 0 && s[port - 1] == ':')) {
        if (port == n)
            return "missing port after ':'";
        unsigned long v = 0;
        for (size_t i = port; i < n; i++) {
            if (s[i] < '0' || s[i] > '9' || i - port >= 5)
                return "the port must be a number from 1 to 65535";
            v = v * 10 + (unsigned long)(s[i] - '0');
        }
        if (v == 0 || v > 65535)
            return "the port must be a number from 1 to 65535";
    }
    return NULL;
}

static int parse_string_list(ctx_t *c, const yaml_node_t *n, const char *what, const char ***out, uint32_t *nout)
{
    int rc = want_seq(c, n, what);
    if (rc != 0)
        return rc;
    size_t cnt = seq_len(n);
    *out = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    *nout = 0;
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = seq_at(c, n, i);
        size_t old = push_idx(c, i);
        if (is_null(it))
            return fail(c, it, "expected a string, got null");
        if ((rc = get_str(c, it, &(*out)[i])) != 0)
            return rc;
        pop(c, old);
        (*nout)++;
    }
    return 0;
}

static int static_targets(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ctx_t *c = ctx;
    ps_target_group_t *g = dst;
    int rc;
    (void)w;
    if ((rc = parse_string_list(c, v, "targets (host:port)", &g->targets, &g->ntargets)) != 0)
        return rc;
    for (uint32_t i = 0; i < g->ntargets; i++) {
        const char *why = ps_config_target_problem(g->targets[i], strlen(g->targets[i]));
        if (why != NULL) {
            push_idx(c, i);
            return fail(c, seq_at(c, v, i), "invalid target \"%.80s\": %s", g->targets[i], why);
        }
    }
    return 0;
}

static int group_labels(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    return parse_labels(ctx, v, dst, false);
}

static int parse_static(ctx_t *c, const yaml_node_t *n, ps_target_group_t *g)
{
    static const ps_yaml_field_t rows[] = {
        WHOLE("targets", static_targets),
        {.key = "labels", .type = PS_YF_FN, .offset = offsetof(ps_target_group_t, labels), .fn = group_labels},
    };
    static const ps_yaml_map_t m = MAP("a static config", NULL, rows);
    g->source = ps_arena_strndup(c->w.a, c->w.path, c->w.plen);
    return walk(c, n, &m, g, NULL);
}

/* ---- http client options ---- */

typedef struct client_keys {
    const yaml_node_t *basic, *authz, *bearer, *bearer_file; /* key nodes, NULL if absent */
} client_keys_t;

static const yaml_node_t *later(const yaml_node_t *a, const yaml_node_t *b)
{
    return a->start_mark.index > b->start_mark.index ? a : b;
}

static int parse_basic_auth(ps_yaml_walk_t *w, const yaml_node_t *n, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "username", .type = PS_YF_STR, .offset = offsetof(ps_http_client_t, basic_user)},
        {.key = "password", .type = PS_YF_STR, .offset = offsetof(ps_http_client_t, basic_password)},
        {.key = "password_file", .type = PS_YF_FILE, .offset = offsetof(ps_http_client_t, basic_password_file)},
    };
    static const ps_yaml_map_t m = MAP("basic_auth", NULL, rows);
    ctx_t *c = ctx;
    ps_http_client_t *cl = dst;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, cl, &seen);
    (void)w;
    if (rc != 0)
        return rc;
    const yaml_node_t *pw = seen_key(&m, &seen, "password"), *pwf = seen_key(&m, &seen, "password_file");
    if (pw != NULL && pwf != NULL)
        return fail(c, later(pw, pwf), "at most one of password and password_file may be set");
    if (cl->basic_user == NULL)
        cl->basic_user = "";
    return 0;
}

static int auth_type(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    const char **t = dst;
    int rc = ps_yaml_get_str(w, v, t);
    if (rc != 0)
        return rc;
    if (strcasecmp(*t, "basic") == 0)
        return fail((ctx_t *)ctx, v, "authorization type cannot be \"basic\": use basic_auth");
    return 0;
}

static int parse_authorization(ps_yaml_walk_t *w, const yaml_node_t *n, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "type", .type = PS_YF_FN, .offset = offsetof(ps_http_client_t, auth_type), .fn = auth_type},
        {.key = "credentials", .type = PS_YF_STR, .offset = offsetof(ps_http_client_t, auth_credentials)},
        {.key = "credentials_file", .type = PS_YF_FILE, .offset = offsetof(ps_http_client_t, auth_credentials_file)},
    };
    static const ps_yaml_map_t m = MAP("authorization", NULL, rows);
    ctx_t *c = ctx;
    ps_http_client_t *cl = dst;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, cl, &seen);
    (void)w;
    if (rc != 0)
        return rc;
    const yaml_node_t *cr = seen_key(&m, &seen, "credentials"), *crf = seen_key(&m, &seen, "credentials_file");
    if (cr != NULL && crf != NULL)
        return fail(c, later(cr, crf), "at most one of credentials and credentials_file may be set");
    if (cl->auth_type == NULL || cl->auth_type[0] == '\0')
        cl->auth_type = "Bearer";
    return 0;
}

static int parse_tls(ps_yaml_walk_t *w, const yaml_node_t *n, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "ca_file", .type = PS_YF_FILE, .offset = offsetof(ps_tls_config_t, ca_file)},
        {.key = "cert_file", .type = PS_YF_FILE, .offset = offsetof(ps_tls_config_t, cert_file)},
        {.key = "key_file", .type = PS_YF_FILE, .offset = offsetof(ps_tls_config_t, key_file)},
        {.key = "server_name", .type = PS_YF_STR, .offset = offsetof(ps_tls_config_t, server_name)},
        {.key = "insecure_skip_verify", .type = PS_YF_BOOL, .offset = offsetof(ps_tls_config_t, insecure_skip_verify)},
    };
    static const ps_yaml_map_t m = MAP("tls_config", NULL, rows);
    ctx_t *c = ctx;
    ps_tls_config_t *t = dst;
    int rc = walk(c, n, &m, t, NULL);
    (void)w;
    if (rc != 0)
        return rc;
    if ((t->cert_file != NULL) != (t->key_file != NULL))
        return fail(c, n, t->cert_file != NULL ? "cert_file is set without key_file"
                                               : "key_file is set without cert_file");
    return 0;
}

/* The http client options of a mapping whose struct T holds them in its member client. */
#define CLIENT_ROWS(T)                                                                                                 \
    {.key = "basic_auth", .type = PS_YF_FN, .offset = offsetof(T, client), .fn = parse_basic_auth},                    \
    {.key = "authorization", .type = PS_YF_FN, .offset = offsetof(T, client), .fn = parse_authorization},              \
    {.key = "bearer_token", .type = PS_YF_STR, .offset = offsetof(T, client.auth_credentials)},                        \
    {.key = "bearer_token_file", .type = PS_YF_FILE, .offset = offsetof(T, client.auth_credentials_file)},             \
    {.key = "tls_config", .type = PS_YF_FN, .offset = offsetof(T, client.tls), .fn = parse_tls},                       \
    {.key = "follow_redirects", .type = PS_YF_BOOL, .offset = offsetof(T, client.follow_redirects)},                   \
    {.key = "enable_http2", .type = PS_YF_BOOL, .flags = PS_YF_IGNORED}

/* The checks of Prometheus' HTTPClientConfig.Validate, at the later of two conflicting keys (the
 * keys of m's CLIENT_ROWS in seen). */
static int finish_client(ctx_t *c, ps_http_client_t *cl, const ps_yaml_map_t *m, const ps_yaml_seen_t *seen)
{
    client_keys_t k = {seen_key(m, seen, "basic_auth"), seen_key(m, seen, "authorization"),
                       seen_key(m, seen, "bearer_token"), seen_key(m, seen, "bearer_token_file")};
    const client_keys_t *ck = &k;
    if (ck->bearer != NULL && ck->bearer_file != NULL)
        return fail(c, later(ck->bearer, ck->bearer_file), "at most one of bearer_token and bearer_token_file may be set");
    const yaml_node_t *bearer = ck->bearer != NULL ? ck->bearer : ck->bearer_file;
    if (ck->basic != NULL && ck->authz != NULL)
        return fail(c, later(ck->basic, ck->authz), "at most one of basic_auth and authorization may be set");
    if (ck->basic != NULL && bearer != NULL)
        return fail(c, later(ck->basic, bearer), "at most one of basic_auth, bearer_token and bearer_token_file may be set");
    if (ck->authz != NULL && bearer != NULL)
        return fail(c, later(ck->authz, bearer), "authorization cannot be combined with bearer_token or bearer_token_file");
    if (bearer != NULL)
        cl->auth_type = "Bearer";
    return 0;
}

/* ---- service discovery ---- */

/* Prometheus' ^[^*]*(\*[^/]*)?\.(json|yml|yaml|JSON|YML|YAML)$ */
static const char *bad_sd_pattern(const char *s)
{
    const char *star = strchr(s, '*');
    if (star != NULL && strchr(star, '/') != NULL)
        return "only the last path segment may contain '*'";
    static const char *const ext[] = {".json", ".yml", ".yaml", ".JSON", ".YML", ".YAML"};
    size_t l = strlen(s);
    for (size_t i = 0; i < sizeof(ext) / sizeof(ext[0]); i++) {
        size_t el = strlen(ext[i]);
        if (l >= el && strcmp(s + l - el, ext[i]) == 0)
            return NULL;
    }
    return "the file name must end in .json, .yml or .yaml";
}

static int sd_files(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ctx_t *c = ctx;
    ps_file_sd_t *sd = dst;
    int rc;
    (void)w;
    if ((rc = want_seq(c, v, "file names")) != 0)
        return rc;
    size_t cnt = seq_len(v);
    sd->files = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = seq_at(c, v, i);
        size_t o2 = push_idx(c, i);
        if (is_null(it))
            return fail(c, it, "expected a file name, got null");
        if ((rc = get_file(c, it, &sd->files[i])) != 0)
            return rc;
        const char *why = bad_sd_pattern(sd->files[i]);
        if (why != NULL)
            return fail(c, it, "path \"%.100s\" is not valid for file discovery: %s", sval(it), why);
        sd->nfiles++;
        pop(c, o2);
    }
    return 0;
}

static int parse_file_sd(ctx_t *c, const yaml_node_t *n, ps_file_sd_t *sd)
{
    static const ps_yaml_field_t rows[] = {
        WHOLE("files", sd_files),
        {.key = "refresh_interval", .type = PS_YF_DURATION, .offset = offsetof(ps_file_sd_t, refresh_interval),
         .flags = PS_YF_POSITIVE},
    };
    static const ps_yaml_map_t m = MAP("a file_sd config", NULL, rows);
    sd->refresh_interval = DEFAULT_FILE_SD_REFRESH;
    int rc = walk(c, n, &m, sd, NULL);
    if (rc != 0)
        return rc;
    if (sd->nfiles == 0)
        return fail(c, n, "a file_sd config needs at least one file in `files`");
    return 0;
}

/* An http or https URL with a host and no spaces (http_sd's, forward's url): the value of node url. */
static int check_http_url(ctx_t *c, const yaml_node_t *url, const char *s)
{
    size_t skip = strncmp(s, "http://", 7) == 0 ? 7 : strncmp(s, "https://", 8) == 0 ? 8 : 0;
    size_t old = push_key(c, "url");
    if (skip == 0)
        return fail(c, url, "the URL scheme must be http or https: \"%.100s\"", s);
    if (s[skip] == '\0' || s[skip] == '/' || s[skip] == ':')
        return fail(c, url, "the URL has no host: \"%.100s\"", s);
    for (const char *p = s; *p != '\0'; p++)
        if ((unsigned char)*p <= ' ' || *p == 0x7f)
            return fail(c, url, "the URL contains spaces or control characters");
    pop(c, old);
    return 0;
}

static int parse_http_sd(ctx_t *c, const yaml_node_t *n, ps_http_sd_t *sd)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "url", .type = PS_YF_STR, .offset = offsetof(ps_http_sd_t, url),
         .required = "an http_sd config needs a url"},
        {.key = "refresh_interval", .type = PS_YF_DURATION, .offset = offsetof(ps_http_sd_t, refresh_interval),
         .flags = PS_YF_POSITIVE},
        CLIENT_ROWS(ps_http_sd_t),
    };
    static const ps_yaml_map_t m = MAP("an http_sd config", NULL, rows);
    sd->refresh_interval = DEFAULT_HTTP_SD_REFRESH;
    sd->client.follow_redirects = true;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, sd, &seen);
    if (rc != 0)
        return rc;
    if ((rc = check_http_url(c, seen_val(&m, &seen, "url"), sd->url)) != 0)
        return rc;
    sd->url_shown = ps_redact_url_arena(c->w.a, sd->url);
    return finish_client(c, &sd->client, &m, &seen);
}

/* ---- relabeling ---- */

static const struct {
    const char *name;
    ps_relabel_action_t action;
} relabel_actions[] = {
    {"replace", PS_RELABEL_REPLACE},     {"keep", PS_RELABEL_KEEP},           {"drop", PS_RELABEL_DROP},
    {"keepequal", PS_RELABEL_KEEPEQUAL}, {"dropequal", PS_RELABEL_DROPEQUAL}, {"hashmod", PS_RELABEL_HASHMOD},
    {"labelmap", PS_RELABEL_LABELMAP},   {"labeldrop", PS_RELABEL_LABELDROP}, {"labelkeep", PS_RELABEL_LABELKEEP},
    {"lowercase", PS_RELABEL_LOWERCASE}, {"uppercase", PS_RELABEL_UPPERCASE},
};

static const char *action_name(ps_relabel_action_t a)
{
    for (size_t i = 0; i < sizeof(relabel_actions) / sizeof(relabel_actions[0]); i++)
        if (relabel_actions[i].action == a)
            return relabel_actions[i].name;
    return "?";
}

const char *ps_relabel_action_name(ps_relabel_action_t a)
{
    return action_name(a);
}

static bool word_char(char ch)
{
    return (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9') || ch == '_';
}

/* Length of a "$name" or "${name}" reference at s (s[0] == '$'), 0 if none. */
static size_t var_ref(const char *s)
{
    size_t i = 1;
    if (s[1] == '{') {
        i = 2;
        while (word_char(s[i]))
            i++;
        return i > 2 && s[i] == '}' ? i + 1 : 0;
    }
    while (word_char(s[i]))
        i++;
    return i > 1 ? i : 0;
}

/* Prometheus' relabelTarget: ^(?:(?:[a-zA-Z_]|\$(?:\{\w+\}|\w+))+\w*)+$ */
static bool labelmap_replacement_ok(const char *s)
{
    size_t i = 0;
    if (s[0] == '\0')
        return false;
    if (s[0] == '$') {
        size_t k = var_ref(s);
        if (k == 0)
            return false;
        i = k;
    } else if (!word_char(s[0]) || (s[0] >= '0' && s[0] <= '9')) {
        return false;
    } else {
        i = 1;
    }
    while (s[i] != '\0') {
        if (word_char(s[i])) {
            i++;
        } else if (s[i] == '$') {
            size_t k = var_ref(s + i);
            if (k == 0)
                return false;
            i += k;
        } else {
            return false;
        }
    }
    return true;
}

static bool md5_usable(void)
{
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int mdlen = 0;
    return EVP_Digest("", 0, md, &mdlen, EVP_md5(), NULL) == 1 && mdlen == 16;
}

static int compile_regex(ctx_t *c, const yaml_node_t *at, ps_relabel_t *r)
{
    /* ^(?s:<re>)$ with numbered captures ($1) and subjects that may be invalid UTF-8 (relabel.c) */
    ps_regex_t *re;
    ps_err_t e;
    if (ps_regex_compile(r->regex, strlen(r->regex), PS_REGEX_CAPTURE | PS_REGEX_INVALID_UTF, &re, &e) != 0)
        return fail(c, at, "invalid regex \"%.100s\": %s at offset %d", r->regex, e.msg, (int)e.pos);
    if (c->nres == c->capres) {
        c->capres = c->capres ? c->capres * 2 : 16;
        c->res = ps_xrealloc(c->res, c->capres * sizeof(*c->res));
    }
    c->res[c->nres++] = re;
    r->re = re;
    return 0;
}

static int relabel_sources(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ctx_t *c = ctx;
    ps_relabel_t *r = dst;
    int rc;
    (void)w;
    if ((rc = parse_string_list(c, v, "label names", &r->source_labels, &r->nsource)) != 0)
        return rc;
    for (uint32_t i = 0; i < r->nsource; i++) {
        if (!ps_label_name_valid(r->source_labels[i], strlen(r->source_labels[i]))) {
            push_idx(c, i);
            return fail(c, seq_at(c, v, i), "\"%.64s\" is not a valid label name", r->source_labels[i]);
        }
    }
    return 0;
}

static int relabel_action(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    const char *s;
    int rc = ps_yaml_get_str(w, v, &s);
    if (rc != 0)
        return rc;
    size_t i = 0, na = sizeof(relabel_actions) / sizeof(relabel_actions[0]);
    while (i < na && strcasecmp(s, relabel_actions[i].name) != 0)
        i++;
    if (i == na)
        return fail((ctx_t *)ctx, v,
                    "unknown relabel action \"%.64s\" (valid: replace, keep, drop, keepequal, dropequal, "
                    "hashmod, labelmap, labeldrop, labelkeep, lowercase, uppercase)",
                    s);
    *(ps_relabel_action_t *)dst = relabel_actions[i].action;
    return 0;
}

static int parse_relabel(ctx_t *c, const yaml_node_t *n, ps_relabel_t *r)
{
    static const ps_yaml_field_t rows[] = {
        WHOLE("source_labels", relabel_sources),
        {.key = "separator", .type = PS_YF_STR, .offset = offsetof(ps_relabel_t, separator)},
        {.key = "target_label", .type = PS_YF_STR, .offset = offsetof(ps_relabel_t, target_label)},
        {.key = "regex", .type = PS_YF_STR, .offset = offsetof(ps_relabel_t, regex)},
        {.key = "modulus", .type = PS_YF_U64, .offset = offsetof(ps_relabel_t, modulus)},
        {.key = "replacement", .type = PS_YF_STR, .offset = offsetof(ps_relabel_t, replacement)},
        {.key = "action", .type = PS_YF_FN, .offset = offsetof(ps_relabel_t, action), .fn = relabel_action},
    };
    static const ps_yaml_map_t m = MAP("a relabel config", NULL, rows);
    r->action = PS_RELABEL_REPLACE;
    r->separator = ";";
    r->regex = "(.*)";
    r->replacement = "$1";
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, r, &seen);
    if (rc != 0)
        return rc;
    const yaml_node_t *action = seen_val(&m, &seen, "action"), *target = seen_val(&m, &seen, "target_label"),
                      *regex = seen_val(&m, &seen, "regex"), *modulus = seen_val(&m, &seen, "modulus"),
                      *replacement = seen_val(&m, &seen, "replacement"), *sources = seen_val(&m, &seen, "source_labels");

    if (target != NULL && r->target_label[0] == '\0')
        r->target_label = NULL;

    size_t old = push_key(c, "regex");
    if ((rc = compile_regex(c, regex != NULL ? regex : n, r)) != 0)
        return rc;
    pop(c, old);

    /* Prometheus' relabel.Config.Validate, in its order */
    ps_relabel_action_t a = r->action;
    const char *an = action_name(a);
    const yaml_node_t *at = action != NULL ? action : n;
    bool is_default_sep = strcmp(r->separator, ";") == 0, is_default_rep = strcmp(r->replacement, "$1") == 0;
    if (a == PS_RELABEL_HASHMOD && r->modulus == 0) {
        old = push_key(c, "modulus");
        return fail(c, modulus != NULL ? modulus : n, "action hashmod requires a modulus greater than 0");
    }
    if ((a == PS_RELABEL_REPLACE || a == PS_RELABEL_HASHMOD || a == PS_RELABEL_LOWERCASE ||
         a == PS_RELABEL_UPPERCASE || a == PS_RELABEL_KEEPEQUAL || a == PS_RELABEL_DROPEQUAL) &&
        r->target_label == NULL)
        return fail(c, target != NULL ? target : n, "action %s requires a target_label", an);
    if (r->target_label != NULL && a != PS_RELABEL_LABELMAP && a != PS_RELABEL_LABELDROP &&
        a != PS_RELABEL_LABELKEEP && a != PS_RELABEL_KEEP && a != PS_RELABEL_DROP) {
        bool templ = a == PS_RELABEL_REPLACE && strchr(r->target_label, '$') != NULL;
        if (!templ && !ps_label_name_valid(r->target_label, strlen(r->target_label))) {
            push_key(c, "target_label");
            return fail(c, target, "\"%.64s\" is not a valid label name for action %s (must match "
                                   "[a-zA-Z_][a-zA-Z0-9_]*%s)",
                        r->target_label, an, a == PS_RELABEL_REPLACE ? ", or use $1 / ${name} references" : "");
        }
    }
    if ((a == PS_RELABEL_LOWERCASE || a == PS_RELABEL_UPPERCASE || a == PS_RELABEL_KEEPEQUAL ||
         a == PS_RELABEL_DROPEQUAL) &&
        !is_default_rep) {
        push_key(c, "replacement");
        return fail(c, replacement, "replacement cannot be set for action %s", an);
    }
    if (a == PS_RELABEL_LABELMAP && !labelmap_replacement_ok(r->replacement)) {
        push_key(c, "replacement");
        return fail(c, replacement != NULL ? replacement : n,
                    "\"%.64s\" is not a valid replacement for action labelmap (a label name, which may use $1 or "
                    "${name})",
                    r->replacement);
    }
    if ((a == PS_RELABEL_KEEPEQUAL || a == PS_RELABEL_DROPEQUAL) &&
        (strcmp(r->regex, "(.*)") != 0 || r->modulus != 0 || !is_default_sep || !is_default_rep))
        return fail(c, at, "action %s takes only source_labels and target_label", an);
    if ((a == PS_RELABEL_LABELDROP || a == PS_RELABEL_LABELKEEP) &&
        (sources != NULL || r->target_label != NULL || r->modulus != 0 || !is_default_sep || !is_default_rep))
        return fail(c, at, "action %s takes only regex", an);
    if (a == PS_RELABEL_HASHMOD && !md5_usable())
        return fail(c, at, "action hashmod needs MD5, which this OpenSSL refuses (FIPS mode?)");
    return 0;
}

/* ---- profiling_config ---- */

static const struct {
    const char *name, *path;
    bool enabled, delta;
} pprof_defaults[] = {
    {"memory", "/debug/pprof/allocs", true, false},     {"block", "/debug/pprof/block", true, false},
    {"goroutine", "/debug/pprof/goroutine", true, false}, {"mutex", "/debug/pprof/mutex", true, false},
    {"process_cpu", "/debug/pprof/profile", true, true},  {"threadcreate", "/debug/pprof/threadcreate", false, false},
};
#define NDEFAULTS (sizeof(pprof_defaults) / sizeof(pprof_defaults[0]))

typedef struct pentry {
    ps_pprof_entry_t e;
    bool has_enabled, has_delta, present;
    const yaml_node_t *key, *seconds;
} pentry_t;

typedef struct sample_type {
    const char *type, *unit;
} sample_type_t;

static int parse_keep_types(ps_yaml_walk_t *w, const yaml_node_t *n, void *dst, void *ctx)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "type", .type = PS_YF_STR, .offset = offsetof(sample_type_t, type)},
        {.key = "unit", .type = PS_YF_STR, .offset = offsetof(sample_type_t, unit)},
    };
    static const ps_yaml_map_t m = MAP("a keep_sample_type entry", "a sample type ({type, unit})", rows);
    ctx_t *c = ctx;
    ps_pprof_entry_t *e = dst;
    (void)w;
    int rc = want_seq(c, n, "{type, unit} entries");
    if (rc != 0)
        return rc;
    size_t cnt = seq_len(n);
    e->keep_type = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    e->keep_unit = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = seq_at(c, n, i);
        size_t old = push_idx(c, i);
        sample_type_t st = {NULL, NULL};
        if ((rc = walk(c, it, &m, &st, NULL)) != 0)
            return rc;
        if (st.type == NULL || st.type[0] == '\0')
            return fail(c, it, "a sample type needs a type (e.g. alloc_space)");
        if (st.unit == NULL || st.unit[0] == '\0')
            return fail(c, it, "a sample type needs a unit (e.g. bytes)");
        e->keep_type[i] = st.type;
        e->keep_unit[i] = st.unit;
        e->nkeep++;
        pop(c, old);
    }
    return 0;
}

static int pprof_path(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    const char **path = dst;
    int rc = ps_yaml_get_str(w, v, path);
    if (rc != 0)
        return rc;
    if ((*path)[0] != '/')
        return fail((ctx_t *)ctx, v, "the path must start with '/': \"%.100s\"", *path);
    return 0;
}

/* Parca: an integer number of seconds; we also take a duration */
static int pprof_seconds(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ctx_t *c = ctx;
    int64_t *seconds = dst;
    int rc;
    (void)w;
    if (v->type == YAML_SCALAR_NODE && slen(v) > 0 && sval(v)[slen(v) - 1] >= '0' && sval(v)[slen(v) - 1] <= '9') {
        uint64_t s;
        if ((rc = get_u64(c, v, &s)) != 0)
            return rc;
        if (s > 365ull * 86400)
            return fail(c, v, "seconds out of range");
        *seconds = (int64_t)s * PS_NS_PER_S;
        return 0;
    }
    if ((rc = get_duration(c, v, seconds)) != 0)
        return rc;
    if (*seconds % PS_NS_PER_S != 0)
        return fail(c, v, "seconds must be a whole number of seconds");
    return 0;
}

static int parse_pprof_entry(ctx_t *c, const yaml_node_t *n, pentry_t *pe)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "enabled", .type = PS_YF_BOOL, .offset = offsetof(pentry_t, e.enabled)},
        {.key = "path", .type = PS_YF_FN, .offset = offsetof(pentry_t, e.path), .fn = pprof_path},
        {.key = "delta", .type = PS_YF_BOOL, .offset = offsetof(pentry_t, e.delta)},
        {.key = "seconds", .type = PS_YF_FN, .offset = offsetof(pentry_t, e.seconds), .fn = pprof_seconds},
        {.key = "keep_sample_type", .type = PS_YF_FN, .offset = offsetof(pentry_t, e), .fn = parse_keep_types},
    };
    static const ps_yaml_map_t m = MAP("a pprof_config entry", NULL, rows);
    pe->present = true;
    if (is_null(n))
        return 0;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, pe, &seen);
    if (rc != 0)
        return rc;
    pe->has_enabled = seen_val(&m, &seen, "enabled") != NULL;
    pe->has_delta = seen_val(&m, &seen, "delta") != NULL;
    if (seen_val(&m, &seen, "seconds") != NULL)
        pe->seconds = seen_val(&m, &seen, "seconds");
    return 0;
}

/* profiling_config as read: the default entries as given, then the custom ones */
typedef struct profiling {
    ps_scrape_config_t *sc;
    pentry_t defs[NDEFAULTS];
    pentry_t *custom;
    size_t ncustom;
} profiling_t;

static int path_prefix(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ctx_t *c = ctx;
    profiling_t *pf = dst;
    const char *p;
    int rc = ps_yaml_get_str(w, v, &p);
    if (rc != 0)
        return rc;
    if (p[0] != '\0' && p[0] != '/')
        return fail(c, v, "path_prefix must start with '/': \"%.100s\"", p);
    size_t l = strlen(p);
    while (l > 0 && p[l - 1] == '/')
        l--;
    pf->sc->path_prefix = ps_arena_strndup(c->w.a, p, l);
    return 0;
}

/* pprof_config: profile name -> settings; the names of the defaults merge with them */
static int pprof_config(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    static const ps_yaml_map_t anykey = {.what = "pprof_config"};
    ctx_t *c = ctx;
    profiling_t *pf = dst;
    int rc;
    (void)w;
    if ((rc = want_map(c, v, "profile settings by name")) != 0)
        return rc;
    size_t cnt = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
    pf->custom = ps_arena_calloc(c->w.a, cnt, sizeof(pentry_t));
    for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
        const char *name;
        if ((rc = check_key(c, v, q, &anykey, &name)) != 0)
            return rc;
        yaml_node_t *k = node(c, q->key);
        pentry_t *pe = NULL;
        for (size_t i = 0; i < NDEFAULTS; i++)
            if (strcmp(name, pprof_defaults[i].name) == 0)
                pe = &pf->defs[i];
        if (pe == NULL) {
            if (!ps_metric_name_valid(name, slen(k)))
                return fail(c, k,
                            "\"%.64s\" is not a valid profile name: it becomes the __name__ label, so it "
                            "must match [a-zA-Z_:][a-zA-Z0-9_:]*",
                            name);
            pe = &pf->custom[pf->ncustom++];
            pe->e.name = ps_arena_strndup(c->w.a, name, slen(k));
        }
        pe->key = k;
        size_t o2 = push_key(c, name);
        if ((rc = parse_pprof_entry(c, node(c, q->value), pe)) != 0)
            return rc;
        if (pe >= pf->custom && pe < pf->custom + pf->ncustom && pe->e.path == NULL)
            return fail(c, k, "the custom profile \"%.64s\" needs a path", name);
        pop(c, o2);
    }
    return 0;
}

/* Parses profiling_config (n may be NULL: all defaults) and merges it with the defaults. timeout
 * and the nodes are for the checks that involve the scrape timeout. */
static int parse_profiling(ctx_t *c, const yaml_node_t *n, ps_scrape_config_t *sc, const yaml_node_t *timeout_at)
{
    static const ps_yaml_field_t rows[] = {WHOLE("path_prefix", path_prefix), WHOLE("pprof_config", pprof_config)};
    static const ps_yaml_map_t m = MAP("profiling_config", NULL, rows);
    profiling_t pf;
    memset(&pf, 0, sizeof(pf));
    pf.sc = sc;
    pentry_t *defs = pf.defs;
    int rc = 0;
    size_t base = c->w.plen;
    sc->path_prefix = "";
    if (n != NULL) {
        push_key(c, "profiling_config");
        if ((rc = walk(c, n, &m, &pf, NULL)) != 0)
            return rc;
        pop(c, base);
    }
    pentry_t *custom = pf.custom;
    size_t ncustom = pf.ncustom;
    sc->npprof = (uint32_t)(NDEFAULTS + ncustom);
    sc->pprof = ps_arena_calloc(c->w.a, sc->npprof, sizeof(ps_pprof_entry_t));
    for (size_t i = 0; i < sc->npprof; i++) {
        pentry_t *pe = i < NDEFAULTS ? &defs[i] : &custom[i - NDEFAULTS];
        ps_pprof_entry_t *e = &sc->pprof[i];
        *e = pe->e;
        if (i < NDEFAULTS) {
            e->name = pprof_defaults[i].name;
            if (!pe->present)
                e->enabled = pprof_defaults[i].enabled;
            if (e->path == NULL)
                e->path = pprof_defaults[i].path;
            if (!pe->has_delta)
                e->delta = pprof_defaults[i].delta;
        }
        if (pe->present && !pe->has_enabled)
            e->enabled = true;
        if (!e->enabled)
            continue;
        char a[32], b[32];
        if (e->seconds > sc->scrape_interval) {
            push_key(c, "profiling_config");
            push_key(c, "pprof_config");
            push_key(c, e->name);
            push_key(c, "seconds");
            fmt_dur(e->seconds, a, sizeof(a));
            fmt_dur(sc->scrape_interval, b, sizeof(b));
            return fail(c, pe->seconds, "%s is longer than the scrape interval (%s): one profile is taken per interval",
                        a, b);
        }
        if (strcmp(e->name, "process_cpu") == 0 && sc->scrape_timeout < MIN_CPU_TIMEOUT) {
            pop(c, base);
            push_key(c, "scrape_timeout");
            fmt_dur(sc->scrape_timeout, a, sizeof(a));
            return fail(c, timeout_at,
                        "the scrape timeout %s is too short for process_cpu profiling: it must be at least 2s (the "
                        "CPU profile is recorded during the scrape)",
                        a);
        }
    }
    pop(c, base);
    return 0;
}

/* ---- scrape configs ---- */

static int parse_params(ctx_t *c, const yaml_node_t *n, ps_scrape_config_t *sc)
{
    static const ps_yaml_map_t any = {.what = "params"};
    int rc = want_map(c, n, "params (name: [values])");
    if (rc != 0)
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    sc->params = ps_arena_calloc(c->w.a, cnt, sizeof(ps_param_values_t));
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &any, &key)) != 0)
            return rc;
        ps_param_values_t *p = &sc->params[sc->nparams];
        p->name = ps_arena_strndup(c->w.a, key, strlen(key));
        if (p->name[0] == '\0')
            return fail(c, node(c, pr->key), "empty parameter name");
        size_t old = push_key(c, key);
        yaml_node_t *v = node(c, pr->value);
        if (!is_null(v) && (rc = parse_string_list(c, v, "strings", &p->values, &p->n)) != 0)
            return rc;
        pop(c, old);
        sc->nparams++;
    }
    return 0;
}

/* A YAML sequence of elements of one kind, each parsed by fn into an arena array; the path in
 * messages gets [i] for the element being parsed. */
typedef int (*elem_fn)(ctx_t *c, const yaml_node_t *n, void *out);

static int parse_list(ctx_t *c, const yaml_node_t *v, const char *what, size_t size, void **out, uint32_t *count,
                      elem_fn fn)
{
    int rc;
    if ((rc = want_seq(c, v, what)) != 0)
        return rc;
    size_t cnt = seq_len(v);
    char *arr = ps_arena_calloc(c->w.a, cnt, size);
    *out = arr;
    for (size_t i = 0; i < cnt; i++) {
        size_t o2 = push_idx(c, i);
        if ((rc = fn(c, seq_at(c, v, i), arr + i * size)) != 0)
            return rc;
        pop(c, o2);
        (*count)++;
    }
    return 0;
}

static int static_elem(ctx_t *c, const yaml_node_t *n, void *out) { return parse_static(c, n, out); }
static int file_sd_elem(ctx_t *c, const yaml_node_t *n, void *out) { return parse_file_sd(c, n, out); }
static int http_sd_elem(ctx_t *c, const yaml_node_t *n, void *out) { return parse_http_sd(c, n, out); }
static int relabel_elem(ctx_t *c, const yaml_node_t *n, void *out) { return parse_relabel(c, n, out); }

static int scrape_scheme(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    const char **scheme = dst;
    int rc = ps_yaml_get_str(w, v, scheme);
    if (rc != 0)
        return rc;
    if (strcmp(*scheme, "http") != 0 && strcmp(*scheme, "https") != 0)
        return fail((ctx_t *)ctx, v, "scheme must be http or https, got \"%.32s\"", *scheme);
    return 0;
}

static int scrape_params(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    return parse_params(ctx, v, dst);
}

static int scrape_static(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_scrape_config_t *sc = dst;
    (void)w;
    return parse_list(ctx, v, "static configs ({targets, labels})", sizeof(ps_target_group_t),
                      (void **)&sc->static_configs, &sc->nstatic, static_elem);
}

static int scrape_file_sd(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_scrape_config_t *sc = dst;
    (void)w;
    return parse_list(ctx, v, "file_sd configs", sizeof(ps_file_sd_t), (void **)&sc->file_sd, &sc->nfile_sd,
                      file_sd_elem);
}

static int scrape_http_sd(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_scrape_config_t *sc = dst;
    (void)w;
    return parse_list(ctx, v, "http_sd configs", sizeof(ps_http_sd_t), (void **)&sc->http_sd, &sc->nhttp_sd,
                      http_sd_elem);
}

static int scrape_relabel(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_scrape_config_t *sc = dst;
    (void)w;
    return parse_list(ctx, v, "relabel configs", sizeof(ps_relabel_t), (void **)&sc->relabel, &sc->nrelabel,
                      relabel_elem);
}
static int parse_scrape(ctx_t *c, const yaml_node_t *n, ps_scrape_config_t *sc, const yaml_node_t **job_node)
{
#define SC(k, t, field, ...) {.key = (k), .type = (t), .offset = offsetof(ps_scrape_config_t, field), __VA_ARGS__}
    static const ps_yaml_field_t rows[] = {
        SC("job_name", PS_YF_STR, job_name, .flags = PS_YF_NONEMPTY, .required = "job_name is required"),
        SC("scrape_interval", PS_YF_DURATION, scrape_interval),
        SC("scrape_timeout", PS_YF_DURATION, scrape_timeout),
        SC("scheme", PS_YF_FN, scheme, .fn = scrape_scheme),
        WHOLE("params", scrape_params),
        WHOLE("static_configs", scrape_static),
        WHOLE("file_sd_configs", scrape_file_sd),
        WHOLE("http_sd_configs", scrape_http_sd),
        WHOLE("relabel_configs", scrape_relabel),
        {.key = "profiling_config", .type = PS_YF_NODE}, /* parsed below, once the timeout is known */
        CLIENT_ROWS(ps_scrape_config_t),
        {.key = "honor_labels", .type = PS_YF_BOOL, .flags = PS_YF_IGNORED},
        {.key = "honor_timestamps", .type = PS_YF_BOOL, .flags = PS_YF_IGNORED},
        {.key = "normalized_addresses", .type = PS_YF_BOOL, .flags = PS_YF_IGNORED},
        SC("target_limit", PS_YF_U32, target_limit, .max = UINT32_MAX),
        SC("keep_dropped_targets", PS_YF_U32, keep_dropped_targets, .max = UINT32_MAX),
    };
#undef SC
    static const char *const rejected[] = {
        "metrics_path", "profile paths come from profiling_config (path_prefix and pprof_config.<name>.path)",
        "metric_relabel_configs", "profiles have no metric samples to relabel; use relabel_configs", NULL};
    static const ps_yaml_map_t m = MAP("a scrape config", NULL, rows, .rejected = rejected, .sd_hint = true);
    if (is_null(n))
        return fail(c, n, "empty scrape config");
    const ps_config_t *cfg = c->cfg;
    sc->scheme = "http";
    sc->client.follow_redirects = true;
    ps_yaml_seen_t seen;
    *job_node = NULL;
    int rc = walk(c, n, &m, sc, &seen);
    *job_node = seen_val(&m, &seen, "job_name");
    if (rc != 0)
        return rc;
    if ((rc = finish_client(c, &sc->client, &m, &seen)) != 0)
        return rc;
    const yaml_node_t *interval = seen_val(&m, &seen, "scrape_interval"), *timeout = seen_val(&m, &seen, "scrape_timeout"),
                      *profiling = seen_val(&m, &seen, "profiling_config");
    /* Prometheus' ScrapeConfig.Validate: interval/timeout from global, timeout <= interval */
    if (sc->scrape_interval == 0)
        sc->scrape_interval = cfg->scrape_interval;
    if (sc->scrape_timeout > sc->scrape_interval) {
        char a[32], b[32];
        fmt_dur(sc->scrape_timeout, a, sizeof(a));
        fmt_dur(sc->scrape_interval, b, sizeof(b));
        push_key(c, "scrape_timeout");
        return fail(c, timeout, "the scrape timeout (%s) is greater than the scrape interval (%s)", a, b);
    }
    if (sc->scrape_timeout == 0)
        sc->scrape_timeout = cfg->scrape_timeout < sc->scrape_interval ? cfg->scrape_timeout : sc->scrape_interval;
    return parse_profiling(c, profiling, sc, timeout != NULL ? timeout : interval != NULL ? interval : n);
}

/* ---- forward ---- */

static int parse_headers(ctx_t *c, const yaml_node_t *n, ps_forward_config_t *fc)
{
    static const char *const reserved[] = {"authorization", "content-type", "content-encoding", "content-length",
                                           "connect-protocol-version", "user-agent",
                                           "x-prometheus-remote-write-version", "host", NULL};
    int rc = want_map(c, n, "headers (name: value)");
    if (rc != 0)
        return rc;
    size_t cnt = (size_t)(n->data.mapping.pairs.top - n->data.mapping.pairs.start);
    fc->header_names = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    fc->header_values = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        yaml_node_t *k = node(c, pr->key), *v = node(c, pr->value);
        const char *name, *value;
        if ((rc = get_str(c, k, &name)) != 0)
            return rc;
        size_t old = push_key(c, name);
        if (name[0] == '\0')
            return fail(c, k, "empty header name");
        for (const char *p = name; *p; p++)
            if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
                  strchr("!#$%&'*+-.^_`|~", *p) != NULL))
                return fail(c, k, "invalid header name \"%.64s\"", name);
        for (int i = 0; reserved[i]; i++)
            if (strcasecmp(name, reserved[i]) == 0)
                return fail(c, k, "header \"%.64s\" is set by profstore itself and may not be configured", name);
        for (uint32_t i = 0; i < fc->nheaders; i++)
            if (strcasecmp(fc->header_names[i], name) == 0)
                return fail(c, k, "duplicate header \"%.64s\"", name);
        if (is_null(v))
            return fail(c, v, "header \"%.64s\" has no value", name);
        if ((rc = get_str(c, v, &value)) != 0)
            return rc;
        for (const char *p = value; *p; p++)
            if ((unsigned char)*p < ' ' && *p != '\t')
                return fail(c, v, "header \"%.64s\": control characters in the value", name);
        fc->header_names[fc->nheaders] = name;
        fc->header_values[fc->nheaders++] = value;
        pop(c, old);
    }
    return 0;
}

static int parse_queue(ps_yaml_walk_t *w, const yaml_node_t *n, void *dst, void *ctx)
{
#define Q(k, t, field, ...) {.key = (k), .type = (t), .offset = offsetof(ps_forward_config_t, field), __VA_ARGS__}
    static const ps_yaml_field_t rows[] = {
        Q("capacity", PS_YF_COUNT, capacity, .max = 1000000),
        Q("max_shards", PS_YF_COUNT, max_shards, .max = 1000000),
        Q("max_samples_per_send", PS_YF_COUNT, max_samples_per_send, .max = 1000000),
        Q("batch_send_deadline", PS_YF_DURATION, batch_send_deadline, .flags = PS_YF_POSITIVE),
        Q("min_backoff", PS_YF_DURATION, min_backoff, .flags = PS_YF_POSITIVE),
        Q("max_backoff", PS_YF_DURATION, max_backoff, .flags = PS_YF_POSITIVE),
        Q("retry_on_http_429", PS_YF_BOOL, retry_on_http_429),
        Q("max_bytes", PS_YF_BYTES, max_bytes),
    };
#undef Q
    static const ps_yaml_map_t m = MAP("queue_config", NULL, rows);
    ctx_t *c = ctx;
    ps_forward_config_t *fc = dst;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, fc, &seen);
    (void)w;
    if (rc != 0)
        return rc;
    if (fc->max_backoff < fc->min_backoff) {
        char a[32], b[32];
        fmt_dur(fc->max_backoff, a, sizeof(a));
        fmt_dur(fc->min_backoff, b, sizeof(b));
        push_key(c, "max_backoff");
        const yaml_node_t *maxb = seen_val(&m, &seen, "max_backoff");
        return fail(c, maxb != NULL ? maxb : n, "max_backoff (%s) is less than min_backoff (%s)", a, b);
    }
    return 0;
}

static int forward_protocol(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    const char *p;
    int rc = ps_yaml_get_str(w, v, &p);
    if (rc != 0)
        return rc;
    if (strcmp(p, "pyroscope_push") == 0)
        *(ps_forward_protocol_t *)dst = PS_FORWARD_PYROSCOPE_PUSH;
    else if (strcmp(p, "remote_write") == 0)
        *(ps_forward_protocol_t *)dst = PS_FORWARD_REMOTE_WRITE;
    else
        return fail((ctx_t *)ctx, v, "protocol must be pyroscope_push or remote_write, got \"%.32s\"", p);
    return 0;
}

static int forward_headers(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    return parse_headers(ctx, v, dst);
}

static int forward_relabel(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    ps_forward_config_t *fc = dst;
    (void)w;
    return parse_list(ctx, v, "relabel configs", sizeof(ps_relabel_t), (void **)&fc->relabel, &fc->nrelabel,
                      relabel_elem);
}

static int parse_forward(ctx_t *c, const yaml_node_t *n, ps_forward_config_t *fc, const yaml_node_t **name_node)
{
#define F(k, t, field, ...) {.key = (k), .type = (t), .offset = offsetof(ps_forward_config_t, field), __VA_ARGS__}
    static const ps_yaml_field_t rows[] = {
        F("name", PS_YF_STR, name, .flags = PS_YF_NONEMPTY),
        F("url", PS_YF_STR, url, .required = "a forward endpoint needs a url"),
        F("protocol", PS_YF_FN, protocol, .fn = forward_protocol),
        F("remote_timeout", PS_YF_DURATION, remote_timeout, .flags = PS_YF_POSITIVE),
        WHOLE("headers", forward_headers),
        WHOLE("write_relabel_configs", forward_relabel),
        WHOLE("queue_config", parse_queue),
        F("max_lag", PS_YF_DURATION, max_lag, .flags = PS_YF_NONNEG),
        CLIENT_ROWS(ps_forward_config_t),
    };
#undef F
    static const ps_yaml_map_t m = MAP("a forward endpoint", NULL, rows);
    if (is_null(n))
        return fail(c, n, "empty forward endpoint");
    fc->protocol = PS_FORWARD_PYROSCOPE_PUSH;
    fc->client.follow_redirects = true;
    fc->remote_timeout = 30 * PS_NS_PER_S;
    fc->max_lag = 2 * 3600 * PS_NS_PER_S;
    fc->capacity = 2500;
    fc->max_shards = 1;
    fc->max_samples_per_send = 500;
    fc->batch_send_deadline = 5 * PS_NS_PER_S;
    fc->min_backoff = 30 * 1000000;
    fc->max_backoff = 5 * PS_NS_PER_S;
    fc->retry_on_http_429 = true;
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, fc, &seen);
    *name_node = seen_val(&m, &seen, "name");
    if (rc != 0)
        return rc;
    if ((rc = check_http_url(c, seen_val(&m, &seen, "url"), fc->url)) != 0)
        return rc;
    fc->url_shown = ps_redact_url_arena(c->w.a, fc->url);
    if (fc->name == NULL) /* shown in status, logs and metrics: never with the URL's password */
        fc->name = fc->url_shown;
    return finish_client(c, &fc->client, &m, &seen);
}

static int parse_forwards(ctx_t *c, const yaml_node_t *v, ps_config_t *cfg)
{
    int rc;
    if ((rc = want_seq(c, v, "forward endpoints")) != 0)
        return rc;
    size_t cnt = seq_len(v);
    cfg->forward = ps_arena_calloc(c->w.a, cnt, sizeof(ps_forward_config_t));
    const yaml_node_t **at = ps_arena_calloc(c->w.a, cnt, sizeof(yaml_node_t *));
    for (size_t i = 0; i < cnt; i++) {
        size_t o2 = push_idx(c, i);
        ps_forward_config_t *fc = &cfg->forward[i];
        const yaml_node_t *item = seq_at(c, v, i);
        if ((rc = parse_forward(c, item, fc, &at[i])) != 0)
            return rc;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->forward[j].name, fc->name) == 0) {
                push_key(c, at[i] != NULL ? "name" : "url");
                return fail(c, at[i] != NULL ? at[i] : item,
                            "duplicate forward endpoint name \"%.64s\" (also forward[%zu]); names must be unique",
                            fc->name, j);
            }
        }
        pop(c, o2);
        cfg->nforward++;
    }
    return 0;
}

/* ---- recording_rules ---- */

static int str_list(ctx_t *c, const yaml_node_t *v, const char *what, const char ***out, uint32_t *n)
{
    int rc;
    if ((rc = want_seq(c, v, what)) != 0)
        return rc;
    size_t cnt = seq_len(v);
    *out = ps_arena_calloc(c->w.a, cnt + 1, sizeof(char *));
    for (size_t i = 0; i < cnt; i++) {
        size_t o = push_idx(c, i);
        if ((rc = get_str(c, seq_at(c, v, i), &(*out)[i])) != 0)
            return rc;
        pop(c, o);
    }
    *n = (uint32_t)cnt;
    return 0;
}

static int rr_matchers(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    ps_recording_rule_config_t *r = dst;
    return str_list(ctx, v, "matchers", &r->matchers, &r->nmatchers);
}

static int rr_group_by(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    ps_recording_rule_config_t *r = dst;
    return str_list(ctx, v, "label names", &r->group_by, &r->ngroup_by);
}

static int rr_labels(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    return parse_labels(ctx, v, dst, false);
}

static int parse_recording(ctx_t *c, const yaml_node_t *v, ps_config_t *cfg)
{
#define R(k, t, field, ...) {.key = (k), .type = (t), .offset = offsetof(ps_recording_rule_config_t, field), __VA_ARGS__}
    static const ps_yaml_field_t rows[] = {
        R("id", PS_YF_STR, id),
        R("metric_name", PS_YF_STR, metric_name, .flags = PS_YF_NONEMPTY,
          .required = "a recording rule needs a metric_name"),
        WHOLE("matchers", rr_matchers),
        WHOLE("group_by", rr_group_by),
        R("external_labels", PS_YF_FN, external_labels, .fn = rr_labels),
        R("function_name", PS_YF_STR, function_name, .flags = PS_YF_NONEMPTY),
    };
#undef R
    static const ps_yaml_map_t m = MAP("a recording rule", NULL, rows);
    int rc;
    if ((rc = want_seq(c, v, "recording rules")) != 0)
        return rc;
    size_t cnt = seq_len(v);
    cfg->recording = ps_arena_calloc(c->w.a, cnt + 1, sizeof(ps_recording_rule_config_t));
    for (size_t i = 0; i < cnt; i++) {
        size_t o = push_idx(c, i);
        ps_recording_rule_config_t *r = &cfg->recording[i];
        const yaml_node_t *item = seq_at(c, v, i);
        if (item->type != YAML_MAPPING_NODE)
            return fail(c, item, "expected a recording rule (a mapping), got %s", kind(item));
        if ((rc = walk(c, item, &m, r, NULL)) != 0)
            return rc;
        if (r->id == NULL)
            r->id = "";
        pop(c, o);
        cfg->nrecording++;
    }
    return 0;
}

/* ---- top level ---- */

static int external_labels(ps_yaml_walk_t *w, const yaml_node_t *v, void *dst, void *ctx)
{
    (void)w;
    return parse_labels(ctx, v, dst, true);
}

static int parse_global(ctx_t *c, const yaml_node_t *n, ps_config_t *cfg)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "scrape_interval", .type = PS_YF_DURATION, .offset = offsetof(ps_config_t, scrape_interval)},
        {.key = "scrape_timeout", .type = PS_YF_DURATION, .offset = offsetof(ps_config_t, scrape_timeout)},
        {.key = "external_labels", .type = PS_YF_FN, .offset = offsetof(ps_config_t, external_labels),
         .fn = external_labels},
        {.key = "evaluation_interval", .type = PS_YF_DURATION, .flags = PS_YF_IGNORED},
    };
    static const ps_yaml_map_t m = MAP("global", "the global section", rows);
    ps_yaml_seen_t seen;
    int rc = walk(c, n, &m, cfg, &seen);
    if (rc != 0)
        return rc;
    const yaml_node_t *timeout = seen_val(&m, &seen, "scrape_timeout");

    if (cfg->scrape_interval == 0)
        cfg->scrape_interval = DEFAULT_SCRAPE_INTERVAL;
    if (cfg->scrape_timeout > cfg->scrape_interval) {
        char a[32], b[32];
        fmt_dur(cfg->scrape_timeout, a, sizeof(a));
        fmt_dur(cfg->scrape_interval, b, sizeof(b));
        push_key(c, "scrape_timeout");
        return fail(c, timeout, "the global scrape timeout (%s) is greater than the scrape interval (%s)", a, b);
    }
    if (cfg->scrape_timeout == 0)
        cfg->scrape_timeout =
            DEFAULT_SCRAPE_TIMEOUT < cfg->scrape_interval ? DEFAULT_SCRAPE_TIMEOUT : cfg->scrape_interval;
    return 0;
}

static int parse_root(ctx_t *c, const yaml_node_t *root, ps_config_t *cfg)
{
    static const ps_yaml_field_t rows[] = {
        {.key = "global", .type = PS_YF_NODE},
        {.key = "scrape_configs", .type = PS_YF_NODE},
        {.key = "forward", .type = PS_YF_NODE},
        {.key = "recording_rules", .type = PS_YF_NODE},
    };
    static const char *const rejected[] = {"rule_files", "profstore evaluates no rules", "alerting",
                                           "profstore sends no alerts", NULL};
    static const ps_yaml_map_t m = MAP("the top level", NULL, rows, .rejected = rejected);
    const yaml_node_t *global = NULL, *scrapes = NULL, *forward = NULL, *recording = NULL;
    int rc;
    if (root != NULL && !is_null(root)) {
        if (root->type != YAML_MAPPING_NODE)
            return fail(c, root, "the top level must be a mapping (global:, scrape_configs:), got %s", kind(root));
        ps_yaml_seen_t seen;
        if ((rc = walk(c, root, &m, cfg, &seen)) != 0)
            return rc;
        global = seen_val(&m, &seen, "global");
        scrapes = seen_val(&m, &seen, "scrape_configs");
        forward = seen_val(&m, &seen, "forward");
        recording = seen_val(&m, &seen, "recording_rules");
    }

    if (global != NULL) {
        size_t old = push_key(c, "global");
        if ((rc = parse_global(c, global, cfg)) != 0)
            return rc;
        pop(c, old);
    } else {
        cfg->scrape_interval = DEFAULT_SCRAPE_INTERVAL;
        cfg->scrape_timeout = DEFAULT_SCRAPE_TIMEOUT;
    }
    if (forward != NULL) {
        size_t old = push_key(c, "forward");
        if ((rc = parse_forwards(c, forward, cfg)) != 0)
            return rc;
        pop(c, old);
    }
    if (recording != NULL) {
        size_t old = push_key(c, "recording_rules");
        if ((rc = parse_recording(c, recording, cfg)) != 0)
            return rc;
        pop(c, old);
    }
    if (scrapes == NULL)
        return 0;
    size_t old = push_key(c, "scrape_configs");
    if ((rc = want_seq(c, scrapes, "scrape configs")) != 0)
        return rc;
    size_t cnt = seq_len(scrapes);
    cfg->scrape = ps_arena_calloc(c->w.a, cnt, sizeof(ps_scrape_config_t));
    const yaml_node_t **jobs = ps_arena_calloc(c->w.a, cnt, sizeof(yaml_node_t *));
    for (size_t i = 0; i < cnt; i++) {
        size_t o2 = push_idx(c, i);
        ps_scrape_config_t *sc = &cfg->scrape[i];
        if ((rc = parse_scrape(c, seq_at(c, scrapes, i), sc, &jobs[i])) != 0)
            return rc;
        for (size_t j = 0; j < i; j++) {
            if (strcmp(cfg->scrape[j].job_name, sc->job_name) == 0) {
                push_key(c, "job_name");
                return fail(c, jobs[i], "duplicate job name \"%.64s\" (also scrape_configs[%zu], line %zu)",
                            sc->job_name, j, jobs[j]->start_mark.line + 1);
            }
        }
        pop(c, o2);
        cfg->nscrape++;
    }
    pop(c, old);
    return 0;
}

static int parse_config(const char *data, size_t n, const char *name, const char *dir, ps_config_t **out,
                        ps_err_t *err)
{
    *out = NULL;
    yaml_parser_t p;
    yaml_document_t doc;
    int rc = ps_yaml_load_first(&p, &doc, data, n, name, err);
    if (rc != 0)
        return rc;
    ps_config_t *cfg = ps_xcalloc(1, sizeof(ps_config_t));
    ctx_t c;
    memset(&c, 0, sizeof(c));
    c.w.doc = &doc;
    c.w.name = name;
    c.w.dir = dir;
    c.w.a = &cfg->arena;
    c.w.err = err;
    c.cfg = cfg;
    rc = parse_root(&c, yaml_document_get_root_node(&doc), cfg);
    yaml_document_delete(&doc);
    if (rc == 0) /* a second document is refused rather than ignored */
        rc = ps_yaml_no_second(&p, data, n, name, err);
    yaml_parser_delete(&p);
    if (rc != 0) {
        for (size_t i = 0; i < c.nres; i++)
            ps_regex_free(c.res[i]);
        free(c.res);
        ps_arena_dispose(&cfg->arena);
        free(cfg);
        return rc;
    }
    free(c.res);
    cfg->path = ps_arena_strndup(&cfg->arena, name, strlen(name));
    *out = cfg;
    return 0;
}

int ps_config_parse(const char *yaml, size_t n, const char *name, ps_config_t **out, ps_err_t *err)
{
    return parse_config(yaml != NULL ? yaml : "", yaml != NULL ? n : 0, name != NULL ? name : "<config>", NULL, out,
                        err);
}

int ps_config_load(const char *path, ps_config_t **out, ps_err_t *err)
{
    *out = NULL;
    ps_buf_t b = PS_BUF_INIT;
    char *dir;
    int rc = ps_yaml_read_file(path, CONFIG_MAX_BYTES, &b, &dir, err);
    if (rc == 0)
        rc = parse_config(b.len > 0 ? (const char *)b.data : "", b.len, path, dir, out, err);
    free(dir);
    ps_buf_dispose(&b);
    return rc;
}

ps_config_t *ps_config_ref(ps_config_t *c)
{
    atomic_fetch_add(&c->refs, 1);
    return c;
}

void ps_config_free(ps_config_t *c)
{
    if (c == NULL)
        return;
    uint32_t r = atomic_load(&c->refs);
    while (r > 0)
        if (atomic_compare_exchange_weak(&c->refs, &r, r - 1))
            return;
    for (uint32_t i = 0; i < c->nscrape; i++)
        for (uint32_t j = 0; j < c->scrape[i].nrelabel; j++)
            ps_regex_free(c->scrape[i].relabel[j].re);
    for (uint32_t i = 0; i < c->nforward; i++)
        for (uint32_t j = 0; j < c->forward[i].nrelabel; j++)
            ps_regex_free(c->forward[i].relabel[j].re);
    ps_arena_dispose(&c->arena);
    free(c);
}
