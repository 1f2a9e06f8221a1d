/*
 * config.c - the YAML configuration file (see config.h; docs/protocols.md).
 *
 * Parsing. libyaml's document API loads the whole file into nodes that keep their start marks;
 * the walk below follows a fixed schema (it never recurses generically, so an alias that points at
 * its own ancestor is just a node of the wrong type somewhere). Everything we keep is copied into
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

/* ---- scalars ---- */

static int get_str(ctx_t *c, const yaml_node_t *n, const char **out) { return ps_yaml_get_str(&c->w, n, out); }

/* A file name; relative names are joined to the config file's directory (ps_config_load). */
static int get_file(ctx_t *c, const yaml_node_t *n, const char **out)
{
    const char *s;
    int rc = get_str(c, n, &s);
    if (rc != 0)
        return rc;
    if (s[0] == '\0')
        return fail(c, n, "empty file name");
    *out = ps_yaml_join_dir(c->w.a, c->w.dir, s);
    return 0;
}

static int get_bool(ctx_t *c, const yaml_node_t *n, bool *out)
{
    if (ps_yaml_bool(n, out))
        return 0;
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "expected true or false, got %s", kind(n));
    return fail(c, n, "expected true or false, got \"%.64s\"", sval(n));
}

static int get_duration(ctx_t *c, const yaml_node_t *n, int64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "expected a duration such as 10s or 1m30s, got %s", kind(n));
    if (slen(n) == 1 && sval(n)[0] == '0') {
        *out = 0;
        return 0;
    }
    ps_err_t e;
    ps_err_clear(&e);
    if (ps_parse_duration(sval(n), slen(n), 0, out, &e) != 0)
        return fail(c, n, "%s", e.msg);
    return 0;
}

static int get_u64(ctx_t *c, const yaml_node_t *n, uint64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "expected a non-negative integer, got %s", kind(n));
    const char *s = sval(n);
    size_t l = slen(n);
    uint64_t v = 0;
    if (l == 0)
        return fail(c, n, "expected a non-negative integer, got \"\"");
    for (size_t i = 0; i < l; i++) {
        if (s[i] < '0' || s[i] > '9')
            return fail(c, n, "expected a non-negative integer, got \"%.64s\"", s);
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return fail(c, n, "integer out of range: \"%.64s\"", s);
        v = v * 10 + d;
    }
    *out = v;
    return 0;
}

static void fmt_dur(int64_t ns, char *buf, size_t size) { ps_format_duration(ns, buf, size); }

/* ---- mappings: key checks ---- */

typedef struct fields {
    const char *what;            /* "a scrape config" */
    const char *const *names;    /* accepted keys, NULL-terminated; NULL = any key */
    const char *const *rejected; /* key, reason, key, reason, ..., NULL */
    bool sd_hint;                /* "*_sd_configs" keys get the service discovery message */
} fields_t;

static size_t edit_distance(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    if (la > 63 || lb > 63)
        return 64;
    size_t row[64];
    for (size_t j = 0; j <= lb; j++)
        row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j], best = diag + (a[i - 1] != b[j - 1]);
            if (up + 1 < best)
                best = up + 1;
            if (row[j - 1] + 1 < best)
                best = row[j - 1] + 1;
            diag = up;
            row[j] = best;
        }
    }
    return row[lb];
}

static int unknown_key(ctx_t *c, const yaml_node_t *k, const fields_t *f)
{
    const char *key = sval(k);
    for (const char *const *r = f->rejected; r != NULL && r[0] != NULL; r += 2)
        if (strcmp(key, r[0]) == 0)
            return fail(c, k, "%s is not supported: %s", key, r[1]);
    size_t kl = strlen(key);
    if (f->sd_hint && kl > 11 && strcmp(key + kl - 11, "_sd_configs") == 0)
        return fail(c, k, "%s is not supported: targets come from static_configs, file_sd_configs and http_sd_configs",
                    key);
    const char *best = NULL;
    size_t bd = 3;
    for (const char *const *p = f->names; *p != NULL; p++) {
        size_t d = edit_distance(key, *p);
        if (d < bd && d * 3 <= strlen(*p)) {
            bd = d;
            best = *p;
        }
    }
    if (best != NULL)
        return fail(c, k, "unknown field \"%.64s\" in %s (did you mean \"%s\"?)", key, f->what, best);
    char list[300];
    size_t n = 0;
    list[0] = '\0';
    for (const char *const *p = f->names; *p != NULL && n < sizeof(list); p++) {
        int w = snprintf(list + n, sizeof(list) - n, "%s%s", n > 0 ? ", " : "", *p);
        if (w > 0)
            n += (size_t)w;
    }
    return fail(c, k, "unknown field \"%.64s\" in %s (valid fields: %s)", key, f->what, list);
}

/* Checks the key of a pair: a string, not seen before in this mapping, and (f->names) known. */
static int check_key(ctx_t *c, const yaml_node_t *map, const yaml_node_pair_t *pr, const fields_t *f,
                     const char **key)
{
    yaml_node_t *k = node(c, pr->key);
    if (k->type != YAML_SCALAR_NODE || is_null(k))
        return fail(c, k, "keys of %s must be strings, got %s", f->what, kind(k));
    if (memchr(sval(k), '\0', slen(k)) != NULL)
        return fail(c, k, "a key contains a NUL character");
    for (const yaml_node_pair_t *q = map->data.mapping.pairs.start; q < pr; q++) {
        yaml_node_t *qk = node(c, q->key);
        if (qk->type == YAML_SCALAR_NODE && slen(qk) == slen(k) && memcmp(sval(qk), sval(k), slen(k)) == 0)
            return fail(c, k, "duplicate key \"%.64s\" (first at line %zu, column %zu)", sval(k),
                        qk->start_mark.line + 1, qk->start_mark.column + 1);
    }
    if (f->names != NULL) {
        const char *const *p = f->names;
        while (*p != NULL && strcmp(*p, sval(k)) != 0)
            p++;
        if (*p == NULL)
            return unknown_key(c, k, f);
    }
    *key = sval(k);
    return 0;
}

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
    static const fields_t any = {"labels", NULL, NULL, false};
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

static int parse_static(ctx_t *c, const yaml_node_t *n, ps_target_group_t *g)
{
    static const char *const names[] = {"targets", "labels", NULL};
    static const fields_t f = {"a static config", names, NULL, false};
    int rc = want_map(c, n, "a static config");
    if (rc != 0)
        return rc;
    g->source = ps_arena_strndup(c->w.a, c->w.path, c->w.plen);
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "targets") == 0) {
            if ((rc = parse_string_list(c, v, "targets (host:port)", &g->targets, &g->ntargets)) != 0)
                return rc;
            for (uint32_t i = 0; i < g->ntargets; i++) {
                const char *why = ps_config_target_problem(g->targets[i], strlen(g->targets[i]));
                if (why != NULL) {
                    push_idx(c, i);
                    return fail(c, seq_at(c, v, i), "invalid target \"%.80s\": %s", g->targets[i], why);
                }
            }
        } else {
            if ((rc = parse_labels(c, v, &g->labels, false)) != 0)
                return rc;
        }
        pop(c, old);
    }
    return 0;
}

/* ---- http client options ---- */

#define CLIENT_FIELDS                                                                                                  \
    "basic_auth", "authorization", "bearer_token", "bearer_token_file", "tls_config", "follow_redirects", "enable_http2"

typedef struct client_keys {
    const yaml_node_t *basic, *authz, *bearer, *bearer_file; /* key nodes, NULL if absent */
} client_keys_t;

static const yaml_node_t *later(const yaml_node_t *a, const yaml_node_t *b)
{
    return a->start_mark.index > b->start_mark.index ? a : b;
}

static int parse_basic_auth(ctx_t *c, const yaml_node_t *n, ps_http_client_t *cl)
{
    static const char *const names[] = {"username", "password", "password_file", NULL};
    static const fields_t f = {"basic_auth", names, NULL, false};
    int rc = want_map(c, n, "basic_auth");
    if (rc != 0)
        return rc;
    const yaml_node_t *pw = NULL, *pwf = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "username") == 0) {
            rc = get_str(c, v, &cl->basic_user);
        } else if (strcmp(key, "password") == 0) {
            rc = get_str(c, v, &cl->basic_password);
            pw = node(c, pr->key);
        } else {
            rc = get_file(c, v, &cl->basic_password_file);
            pwf = node(c, pr->key);
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    if (pw != NULL && pwf != NULL)
        return fail(c, later(pw, pwf), "at most one of password and password_file may be set");
    if (cl->basic_user == NULL)
        cl->basic_user = "";
    return 0;
}

static int parse_authorization(ctx_t *c, const yaml_node_t *n, ps_http_client_t *cl)
{
    static const char *const names[] = {"type", "credentials", "credentials_file", NULL};
    static const fields_t f = {"authorization", names, NULL, false};
    int rc = want_map(c, n, "authorization");
    if (rc != 0)
        return rc;
    const yaml_node_t *cr = NULL, *crf = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "type") == 0) {
            if ((rc = get_str(c, v, &cl->auth_type)) != 0)
                return rc;
            if (strcasecmp(cl->auth_type, "basic") == 0)
                return fail(c, v, "authorization type cannot be \"basic\": use basic_auth");
        } else if (strcmp(key, "credentials") == 0) {
            if ((rc = get_str(c, v, &cl->auth_credentials)) != 0)
                return rc;
            cr = node(c, pr->key);
        } else {
            if ((rc = get_file(c, v, &cl->auth_credentials_file)) != 0)
                return rc;
            crf = node(c, pr->key);
        }
        pop(c, old);
    }
    if (cr != NULL && crf != NULL)
        return fail(c, later(cr, crf), "at most one of credentials and credentials_file may be set");
    if (cl->auth_type == NULL || cl->auth_type[0] == '\0')
        cl->auth_type = "Bearer";
    return 0;
}

static int parse_tls(ctx_t *c, const yaml_node_t *n, ps_tls_config_t *t)
{
    static const char *const names[] = {"ca_file", "cert_file", "key_file", "server_name", "insecure_skip_verify", NULL};
    static const fields_t f = {"tls_config", names, NULL, false};
    int rc = want_map(c, n, "tls_config");
    if (rc != 0)
        return rc;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "ca_file") == 0)
            rc = get_file(c, v, &t->ca_file);
        else if (strcmp(key, "cert_file") == 0)
            rc = get_file(c, v, &t->cert_file);
        else if (strcmp(key, "key_file") == 0)
            rc = get_file(c, v, &t->key_file);
        else if (strcmp(key, "server_name") == 0)
            rc = get_str(c, v, &t->server_name);
        else
            rc = get_bool(c, v, &t->insecure_skip_verify);
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    if ((t->cert_file != NULL) != (t->key_file != NULL))
        return fail(c, n, t->cert_file != NULL ? "cert_file is set without key_file"
                                               : "key_file is set without cert_file");
    return 0;
}

/* 1 if key is not an http client option, 0 if parsed, < 0 on error. */
static int parse_client_field(ctx_t *c, const yaml_node_pair_t *pr, const char *key, ps_http_client_t *cl,
                              client_keys_t *ck)
{
    yaml_node_t *k = node(c, pr->key), *v = node(c, pr->value);
    if (strcmp(key, "basic_auth") == 0) {
        ck->basic = k;
        return parse_basic_auth(c, v, cl);
    }
    if (strcmp(key, "authorization") == 0) {
        ck->authz = k;
        return parse_authorization(c, v, cl);
    }
    if (strcmp(key, "bearer_token") == 0) {
        ck->bearer = k;
        return get_str(c, v, &cl->auth_credentials);
    }
    if (strcmp(key, "bearer_token_file") == 0) {
        ck->bearer_file = k;
        return get_file(c, v, &cl->auth_credentials_file);
    }
    if (strcmp(key, "tls_config") == 0)
        return parse_tls(c, v, &cl->tls);
    if (strcmp(key, "follow_redirects") == 0)
        return get_bool(c, v, &cl->follow_redirects);
    if (strcmp(key, "enable_http2") == 0) {
        bool ignored;
        return get_bool(c, v, &ignored);
    }
    return 1;
}

/* The checks of Prometheus' HTTPClientConfig.Validate, at the later of two conflicting keys. */
static int finish_client(ctx_t *c, ps_http_client_t *cl, const client_keys_t *ck)
{
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

static int parse_file_sd(ctx_t *c, const yaml_node_t *n, ps_file_sd_t *sd)
{
    static const char *const names[] = {"files", "refresh_interval", NULL};
    static const fields_t f = {"a file_sd config", names, NULL, false};
    int rc = want_map(c, n, "a file_sd config");
    if (rc != 0)
        return rc;
    sd->refresh_interval = DEFAULT_FILE_SD_REFRESH;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "files") == 0) {
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
        } else {
            if ((rc = get_duration(c, v, &sd->refresh_interval)) != 0)
                return rc;
            if (sd->refresh_interval <= 0)
                return fail(c, v, "refresh_interval must be greater than 0");
        }
        pop(c, old);
    }
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
    static const char *const names[] = {"url", "refresh_interval", CLIENT_FIELDS, NULL};
    static const fields_t f = {"an http_sd config", names, NULL, false};
    int rc = want_map(c, n, "an http_sd config");
    if (rc != 0)
        return rc;
    sd->refresh_interval = DEFAULT_HTTP_SD_REFRESH;
    sd->client.follow_redirects = true;
    client_keys_t ck = {0};
    const yaml_node_t *url = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "url") == 0) {
            if ((rc = get_str(c, v, &sd->url)) != 0)
                return rc;
            url = v;
        } else if (strcmp(key, "refresh_interval") == 0) {
            if ((rc = get_duration(c, v, &sd->refresh_interval)) != 0)
                return rc;
            if (sd->refresh_interval <= 0)
                return fail(c, v, "refresh_interval must be greater than 0");
        } else if ((rc = parse_client_field(c, pr, key, &sd->client, &ck)) != 0) {
            return rc;
        }
        pop(c, old);
    }
    if (url == NULL)
        return fail(c, n, "an http_sd config needs a url");
    if ((rc = check_http_url(c, url, sd->url)) != 0)
        return rc;
    sd->url_shown = ps_redact_url_arena(c->w.a, sd->url);
    return finish_client(c, &sd->client, &ck);
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

static int parse_relabel(ctx_t *c, const yaml_node_t *n, ps_relabel_t *r)
{
    static const char *const names[] = {"source_labels", "separator", "target_label", "regex",
                                        "modulus",       "replacement", "action",     NULL};
    static const fields_t f = {"a relabel config", names, NULL, false};
    int rc = want_map(c, n, "a relabel config");
    if (rc != 0)
        return rc;
    r->action = PS_RELABEL_REPLACE;
    r->separator = ";";
    r->regex = "(.*)";
    r->replacement = "$1";
    const yaml_node_t *action = NULL, *target = NULL, *regex = NULL, *modulus = NULL, *replacement = NULL,
                      *sources = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "source_labels") == 0) {
            if ((rc = parse_string_list(c, v, "label names", &r->source_labels, &r->nsource)) != 0)
                return rc;
            for (uint32_t i = 0; i < r->nsource; i++) {
                if (!ps_label_name_valid(r->source_labels[i], strlen(r->source_labels[i]))) {
                    push_idx(c, i);
                    return fail(c, seq_at(c, v, i), "\"%.64s\" is not a valid label name", r->source_labels[i]);
                }
            }
            sources = v;
        } else if (strcmp(key, "separator") == 0) {
            rc = get_str(c, v, &r->separator);
        } else if (strcmp(key, "target_label") == 0) {
            rc = get_str(c, v, &r->target_label);
            target = v;
        } else if (strcmp(key, "regex") == 0) {
            rc = get_str(c, v, &r->regex);
            regex = v;
        } else if (strcmp(key, "modulus") == 0) {
            rc = get_u64(c, v, &r->modulus);
            modulus = v;
        } else if (strcmp(key, "replacement") == 0) {
            rc = get_str(c, v, &r->replacement);
            replacement = v;
        } else {
            const char *s;
            if ((rc = get_str(c, v, &s)) != 0)
                return rc;
            size_t i = 0, na = sizeof(relabel_actions) / sizeof(relabel_actions[0]);
            while (i < na && strcasecmp(s, relabel_actions[i].name) != 0)
                i++;
            if (i == na)
                return fail(c, v,
                            "unknown relabel action \"%.64s\" (valid: replace, keep, drop, keepequal, dropequal, "
                            "hashmod, labelmap, labeldrop, labelkeep, lowercase, uppercase)",
                            s);
            r->action = relabel_actions[i].action;
            action = v;
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
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

static int parse_keep_types(ctx_t *c, const yaml_node_t *n, ps_pprof_entry_t *e)
{
    static const char *const names[] = {"type", "unit", NULL};
    static const fields_t f = {"a keep_sample_type entry", names, NULL, false};
    int rc = want_seq(c, n, "{type, unit} entries");
    if (rc != 0)
        return rc;
    size_t cnt = seq_len(n);
    e->keep_type = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    e->keep_unit = ps_arena_calloc(c->w.a, cnt, sizeof(char *));
    for (size_t i = 0; i < cnt; i++) {
        yaml_node_t *it = seq_at(c, n, i);
        size_t old = push_idx(c, i);
        if ((rc = want_map(c, it, "a sample type ({type, unit})")) != 0)
            return rc;
        const char *type = NULL, *unit = NULL;
        for (yaml_node_pair_t *pr = it->data.mapping.pairs.start; pr < it->data.mapping.pairs.top; pr++) {
            const char *key;
            if ((rc = check_key(c, it, pr, &f, &key)) != 0)
                return rc;
            yaml_node_t *v = node(c, pr->value);
            if (is_null(v))
                continue;
            size_t o2 = push_key(c, key);
            if ((rc = get_str(c, v, strcmp(key, "type") == 0 ? &type : &unit)) != 0)
                return rc;
            pop(c, o2);
        }
        if (type == NULL || type[0] == '\0')
            return fail(c, it, "a sample type needs a type (e.g. alloc_space)");
        if (unit == NULL || unit[0] == '\0')
            return fail(c, it, "a sample type needs a unit (e.g. bytes)");
        e->keep_type[i] = type;
        e->keep_unit[i] = unit;
        e->nkeep++;
        pop(c, old);
    }
    return 0;
}

static int parse_pprof_entry(ctx_t *c, const yaml_node_t *n, pentry_t *pe)
{
    static const char *const names[] = {"enabled", "path", "delta", "seconds", "keep_sample_type", NULL};
    static const fields_t f = {"a pprof_config entry", names, NULL, false};
    pe->present = true;
    if (is_null(n))
        return 0;
    int rc = want_map(c, n, "a pprof_config entry");
    if (rc != 0)
        return rc;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "enabled") == 0) {
            rc = get_bool(c, v, &pe->e.enabled);
            pe->has_enabled = true;
        } else if (strcmp(key, "path") == 0) {
            if ((rc = get_str(c, v, &pe->e.path)) != 0)
                return rc;
            if (pe->e.path[0] != '/')
                return fail(c, v, "the path must start with '/': \"%.100s\"", pe->e.path);
        } else if (strcmp(key, "delta") == 0) {
            rc = get_bool(c, v, &pe->e.delta);
            pe->has_delta = true;
        } else if (strcmp(key, "seconds") == 0) {
            /* Parca: an integer number of seconds; we also take a duration */
            uint64_t s;
            if (v->type == YAML_SCALAR_NODE && slen(v) > 0 && sval(v)[slen(v) - 1] >= '0' &&
                sval(v)[slen(v) - 1] <= '9') {
                if ((rc = get_u64(c, v, &s)) != 0)
                    return rc;
                if (s > 365ull * 86400)
                    return fail(c, v, "seconds out of range");
                pe->e.seconds = (int64_t)s * PS_NS_PER_S;
            } else {
                if ((rc = get_duration(c, v, &pe->e.seconds)) != 0)
                    return rc;
                if (pe->e.seconds % PS_NS_PER_S != 0)
                    return fail(c, v, "seconds must be a whole number of seconds");
            }
            pe->seconds = v;
        } else {
            rc = parse_keep_types(c, v, &pe->e);
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    return 0;
}

/* Parses profiling_config (n may be NULL: all defaults) and merges it with the defaults. timeout
 * and the nodes are for the checks that involve the scrape timeout. */
static int parse_profiling(ctx_t *c, const yaml_node_t *n, ps_scrape_config_t *sc, const yaml_node_t *timeout_at)
{
    static const char *const names[] = {"path_prefix", "pprof_config", NULL};
    static const fields_t f = {"profiling_config", names, NULL, false};
    static const fields_t anykey = {"pprof_config", NULL, NULL, false};
    pentry_t defs[NDEFAULTS];
    memset(defs, 0, sizeof(defs));
    pentry_t *custom = NULL;
    size_t ncustom = 0;
    int rc = 0;
    size_t base = c->w.plen;
    sc->path_prefix = "";
    if (n != NULL) {
        push_key(c, "profiling_config");
        if ((rc = want_map(c, n, "profiling_config")) != 0)
            return rc;
        for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
            const char *key;
            if ((rc = check_key(c, n, pr, &f, &key)) != 0)
                return rc;
            yaml_node_t *v = node(c, pr->value);
            if (is_null(v))
                continue;
            size_t old = push_key(c, key);
            if (strcmp(key, "path_prefix") == 0) {
                const char *p;
                if ((rc = get_str(c, v, &p)) != 0)
                    return rc;
                if (p[0] != '\0' && p[0] != '/')
                    return fail(c, v, "path_prefix must start with '/': \"%.100s\"", p);
                size_t l = strlen(p);
                while (l > 0 && p[l - 1] == '/')
                    l--;
                sc->path_prefix = ps_arena_strndup(c->w.a, p, l);
            } else {
                if ((rc = want_map(c, v, "profile settings by name")) != 0)
                    return rc;
                size_t cnt = (size_t)(v->data.mapping.pairs.top - v->data.mapping.pairs.start);
                custom = ps_arena_calloc(c->w.a, cnt, sizeof(pentry_t));
                for (yaml_node_pair_t *q = v->data.mapping.pairs.start; q < v->data.mapping.pairs.top; q++) {
                    const char *name;
                    if ((rc = check_key(c, v, q, &anykey, &name)) != 0)
                        return rc;
                    yaml_node_t *k = node(c, q->key);
                    pentry_t *pe = NULL;
                    for (size_t i = 0; i < NDEFAULTS; i++)
                        if (strcmp(name, pprof_defaults[i].name) == 0)
                            pe = &defs[i];
                    if (pe == NULL) {
                        if (!ps_metric_name_valid(name, slen(k)))
                            return fail(c, k,
                                        "\"%.64s\" is not a valid profile name: it becomes the __name__ label, so it "
                                        "must match [a-zA-Z_:][a-zA-Z0-9_:]*",
                                        name);
                        pe = &custom[ncustom++];
                        pe->e.name = ps_arena_strndup(c->w.a, name, slen(k));
                    }
                    pe->key = k;
                    size_t o2 = push_key(c, name);
                    if ((rc = parse_pprof_entry(c, node(c, q->value), pe)) != 0)
                        return rc;
                    if (pe >= custom && pe < custom + ncustom && pe->e.path == NULL)
                        return fail(c, k, "the custom profile \"%.64s\" needs a path", name);
                    pop(c, o2);
                }
            }
            pop(c, old);
        }
        pop(c, base);
    }

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
    static const fields_t any = {"params", NULL, NULL, false};
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

static const char *const scrape_fields[] = {
    "job_name", "scrape_interval", "scrape_timeout", "scheme", "params", "static_configs", "file_sd_configs",
    "http_sd_configs", "relabel_configs", "profiling_config", CLIENT_FIELDS, "honor_labels", "honor_timestamps",
    "normalized_addresses", "target_limit", "keep_dropped_targets", NULL};
static const char *const scrape_rejected[] = {
    "metrics_path", "profile paths come from profiling_config (path_prefix and pprof_config.<name>.path)",
    "metric_relabel_configs", "profiles have no metric samples to relabel; use relabel_configs",
    NULL};

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

static int parse_scrape(ctx_t *c, const yaml_node_t *n, ps_scrape_config_t *sc, const yaml_node_t **job_node)
{
    static const fields_t f = {"a scrape config", scrape_fields, scrape_rejected, true};
    if (is_null(n))
        return fail(c, n, "empty scrape config");
    int rc = want_map(c, n, "a scrape config");
    if (rc != 0)
        return rc;
    const ps_config_t *cfg = c->cfg;
    sc->scheme = "http";
    sc->client.follow_redirects = true;
    client_keys_t ck = {0};
    const yaml_node_t *interval = NULL, *timeout = NULL, *profiling = NULL;
    *job_node = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "job_name") == 0) {
            if ((rc = get_str(c, v, &sc->job_name)) != 0)
                return rc;
            if (sc->job_name[0] == '\0')
                return fail(c, v, "job_name must not be empty");
            *job_node = v;
        } else if (strcmp(key, "scrape_interval") == 0) {
            rc = get_duration(c, v, &sc->scrape_interval);
            interval = v;
        } else if (strcmp(key, "scrape_timeout") == 0) {
            rc = get_duration(c, v, &sc->scrape_timeout);
            timeout = v;
        } else if (strcmp(key, "scheme") == 0) {
            if ((rc = get_str(c, v, &sc->scheme)) != 0)
                return rc;
            if (strcmp(sc->scheme, "http") != 0 && strcmp(sc->scheme, "https") != 0)
                return fail(c, v, "scheme must be http or https, got \"%.32s\"", sc->scheme);
        } else if (strcmp(key, "params") == 0) {
            rc = parse_params(c, v, sc);
        } else if (strcmp(key, "static_configs") == 0) {
            rc = parse_list(c, v, "static configs ({targets, labels})", sizeof(ps_target_group_t),
                            (void **)&sc->static_configs, &sc->nstatic, static_elem);
        } else if (strcmp(key, "file_sd_configs") == 0) {
            rc = parse_list(c, v, "file_sd configs", sizeof(ps_file_sd_t), (void **)&sc->file_sd, &sc->nfile_sd,
                            file_sd_elem);
        } else if (strcmp(key, "http_sd_configs") == 0) {
            rc = parse_list(c, v, "http_sd configs", sizeof(ps_http_sd_t), (void **)&sc->http_sd, &sc->nhttp_sd,
                            http_sd_elem);
        } else if (strcmp(key, "relabel_configs") == 0) {
            rc = parse_list(c, v, "relabel configs", sizeof(ps_relabel_t), (void **)&sc->relabel, &sc->nrelabel,
                            relabel_elem);
        } else if (strcmp(key, "profiling_config") == 0) {
            profiling = v; /* parsed below, once the timeout is known */
        } else if (strcmp(key, "target_limit") == 0 || strcmp(key, "keep_dropped_targets") == 0) {
            uint64_t lim;
            if ((rc = get_u64(c, v, &lim)) == 0 && lim > UINT32_MAX)
                rc = fail(c, v, "%s out of range (at most %u)", key, UINT32_MAX);
            if (rc == 0)
                *(key[0] == 't' ? &sc->target_limit : &sc->keep_dropped_targets) = (uint32_t)lim;
        } else if (strcmp(key, "honor_labels") == 0 || strcmp(key, "honor_timestamps") == 0 ||
                   strcmp(key, "normalized_addresses") == 0) {
            bool ignored;
            rc = get_bool(c, v, &ignored);
        } else {
            rc = parse_client_field(c, pr, key, &sc->client, &ck);
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    if (sc->job_name == NULL)
        return fail(c, n, "job_name is required");
    if ((rc = finish_client(c, &sc->client, &ck)) != 0)
        return rc;

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

/* A byte count: digits and an optional unit (B, KB/KiB, MB/MiB, GB/GiB, TB/TiB, all base 2). */
static int get_bytes(ctx_t *c, const yaml_node_t *n, uint64_t *out)
{
    if (n->type != YAML_SCALAR_NODE)
        return fail(c, n, "expected a byte size such as 64MiB, got %s", kind(n));
    const char *s = sval(n);
    size_t l = slen(n), i = 0;
    uint64_t v = 0;
    for (; i < l && s[i] >= '0' && s[i] <= '9'; i++) {
        unsigned d = (unsigned)(s[i] - '0');
        if (v > (UINT64_MAX - d) / 10)
            return fail(c, n, "byte size \"%.64s\" is too large", s);
        v = v * 10 + d;
    }
    static const struct {
        const char *unit;
        unsigned shift;
    } units[] = {{"", 0},  {"B", 0},    {"KB", 10}, {"KiB", 10}, {"MB", 20},
                 {"MiB", 20}, {"GB", 30}, {"GiB", 30}, {"TB", 40}, {"TiB", 40}};
    if (i == 0)
        return fail(c, n, "expected a byte size such as 64MiB, got \"%.64s\"", s);
    for (size_t u = 0; u < sizeof(units) / sizeof(units[0]); u++)
        if (strlen(units[u].unit) == l - i && memcmp(units[u].unit, s + i, l - i) == 0) {
            if (units[u].shift > 0 && v > (UINT64_MAX >> units[u].shift))
                return fail(c, n, "byte size \"%.64s\" is too large", s);
            *out = v << units[u].shift;
            return 0;
        }
    return fail(c, n, "byte size \"%.64s\": unknown unit (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB)", s);
}

static int get_positive(ctx_t *c, const yaml_node_t *v, uint32_t *out)
{
    uint64_t x;
    int rc = get_u64(c, v, &x);
    if (rc != 0)
        return rc;
    if (x == 0 || x > 1000000)
        return fail(c, v, "must be between 1 and 1000000, got %llu", (unsigned long long)x);
    *out = (uint32_t)x;
    return 0;
}

static int parse_queue(ctx_t *c, const yaml_node_t *n, ps_forward_config_t *fc)
{
    static const char *const names[] = {"capacity", "max_shards", "max_samples_per_send", "batch_send_deadline",
                                        "min_backoff", "max_backoff", "retry_on_http_429", "max_bytes", NULL};
    static const fields_t f = {"queue_config", names, NULL, false};
    int rc = want_map(c, n, "queue_config");
    if (rc != 0)
        return rc;
    const yaml_node_t *maxb = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "capacity") == 0)
            rc = get_positive(c, v, &fc->capacity);
        else if (strcmp(key, "max_shards") == 0)
            rc = get_positive(c, v, &fc->max_shards);
        else if (strcmp(key, "max_samples_per_send") == 0)
            rc = get_positive(c, v, &fc->max_samples_per_send);
        else if (strcmp(key, "retry_on_http_429") == 0)
            rc = get_bool(c, v, &fc->retry_on_http_429);
        else if (strcmp(key, "max_bytes") == 0)
            rc = get_bytes(c, v, &fc->max_bytes);
        else {
            int64_t *d = strcmp(key, "batch_send_deadline") == 0 ? &fc->batch_send_deadline
                         : strcmp(key, "min_backoff") == 0        ? &fc->min_backoff
                                                                  : &fc->max_backoff;
            if ((rc = get_duration(c, v, d)) == 0 && *d <= 0)
                rc = fail(c, v, "%s must be greater than 0", key);
            if (d == &fc->max_backoff)
                maxb = v;
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    if (fc->max_backoff < fc->min_backoff) {
        char a[32], b[32];
        fmt_dur(fc->max_backoff, a, sizeof(a));
        fmt_dur(fc->min_backoff, b, sizeof(b));
        push_key(c, "max_backoff");
        return fail(c, maxb != NULL ? maxb : n, "max_backoff (%s) is less than min_backoff (%s)", a, b);
    }
    return 0;
}

static int parse_forward(ctx_t *c, const yaml_node_t *n, ps_forward_config_t *fc, const yaml_node_t **name_node)
{
    static const char *const names[] = {"name", "url", "protocol", "remote_timeout", "headers",
                                        "write_relabel_configs", "queue_config", "max_lag", CLIENT_FIELDS, NULL};
    static const fields_t f = {"a forward endpoint", names, NULL, false};
    if (is_null(n))
        return fail(c, n, "empty forward endpoint");
    int rc = want_map(c, n, "a forward endpoint");
    if (rc != 0)
        return rc;
    fc->protocol = PS_FWD_PYROSCOPE_PUSH;
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
    client_keys_t ck = {0};
    const yaml_node_t *url = NULL;
    *name_node = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "name") == 0) {
            if ((rc = get_str(c, v, &fc->name)) == 0 && fc->name[0] == '\0')
                rc = fail(c, v, "name must not be empty");
            *name_node = v;
        } else if (strcmp(key, "url") == 0) {
            rc = get_str(c, v, &fc->url);
            url = v;
        } else if (strcmp(key, "protocol") == 0) {
            const char *p;
            if ((rc = get_str(c, v, &p)) != 0)
                return rc;
            if (strcmp(p, "pyroscope_push") == 0)
                fc->protocol = PS_FWD_PYROSCOPE_PUSH;
            else if (strcmp(p, "remote_write") == 0)
                fc->protocol = PS_FWD_REMOTE_WRITE;
            else
                rc = fail(c, v, "protocol must be pyroscope_push or remote_write, got \"%.32s\"", p);
        } else if (strcmp(key, "remote_timeout") == 0) {
            if ((rc = get_duration(c, v, &fc->remote_timeout)) == 0 && fc->remote_timeout <= 0)
                rc = fail(c, v, "remote_timeout must be greater than 0");
        } else if (strcmp(key, "max_lag") == 0) {
            if ((rc = get_duration(c, v, &fc->max_lag)) == 0 && fc->max_lag < 0)
                rc = fail(c, v, "max_lag must not be negative");
        } else if (strcmp(key, "headers") == 0) {
            rc = parse_headers(c, v, fc);
        } else if (strcmp(key, "write_relabel_configs") == 0) {
            rc = parse_list(c, v, "relabel configs", sizeof(ps_relabel_t), (void **)&fc->relabel, &fc->nrelabel,
                            relabel_elem);
        } else if (strcmp(key, "queue_config") == 0) {
            rc = parse_queue(c, v, fc);
        } else {
            rc = parse_client_field(c, pr, key, &fc->client, &ck);
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
    if (url == NULL)
        return fail(c, n, "a forward endpoint needs a url");
    if ((rc = check_http_url(c, url, fc->url)) != 0)
        return rc;
    fc->url_shown = ps_redact_url_arena(c->w.a, fc->url);
    if (fc->name == NULL) /* shown in status, logs and metrics: never with the URL's password */
        fc->name = fc->url_shown;
    return finish_client(c, &fc->client, &ck);
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

/* ---- top level ---- */

static int parse_global(ctx_t *c, const yaml_node_t *n, ps_config_t *cfg)
{
    static const char *const names[] = {"scrape_interval", "scrape_timeout", "external_labels",
                                        "evaluation_interval", NULL};
    static const fields_t f = {"global", names, NULL, false};
    int rc = want_map(c, n, "the global section");
    if (rc != 0)
        return rc;
    const yaml_node_t *timeout = NULL;
    for (yaml_node_pair_t *pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top; pr++) {
        const char *key;
        if ((rc = check_key(c, n, pr, &f, &key)) != 0)
            return rc;
        yaml_node_t *v = node(c, pr->value);
        if (is_null(v))
            continue;
        size_t old = push_key(c, key);
        if (strcmp(key, "scrape_interval") == 0) {
            rc = get_duration(c, v, &cfg->scrape_interval);
        } else if (strcmp(key, "scrape_timeout") == 0) {
            rc = get_duration(c, v, &cfg->scrape_timeout);
            timeout = v;
        } else if (strcmp(key, "evaluation_interval") == 0) {
            int64_t ignored;
            rc = get_duration(c, v, &ignored);
        } else {
            rc = parse_labels(c, v, &cfg->external_labels, true);
        }
        if (rc != 0)
            return rc;
        pop(c, old);
    }
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
    static const char *const names[] = {"global", "scrape_configs", "forward", NULL};
    static const char *const rejected[] = {"rule_files", "profstore evaluates no rules", "alerting",
                                           "profstore sends no alerts", NULL};
    static const fields_t f = {"the top level", names, rejected, false};
    const yaml_node_t *global = NULL, *scrapes = NULL, *forward = NULL;
    int rc;
    if (root != NULL && !is_null(root)) {
        if (root->type != YAML_MAPPING_NODE)
            return fail(c, root, "the top level must be a mapping (global:, scrape_configs:), got %s", kind(root));
        for (yaml_node_pair_t *pr = root->data.mapping.pairs.start; pr < root->data.mapping.pairs.top; pr++) {
            const char *key;
            if ((rc = check_key(c, root, pr, &f, &key)) != 0)
                return rc;
            yaml_node_t *v = node(c, pr->value);
            if (is_null(v))
                continue;
            if (strcmp(key, "global") == 0)
                global = v;
            else if (strcmp(key, "forward") == 0)
                forward = v;
            else
                scrapes = v;
        }
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
