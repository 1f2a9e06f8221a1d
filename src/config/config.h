/*
 * config.h - the YAML configuration file (--config), a Prometheus user's scrape configuration
 * plus Parca's profiling_config (docs/protocols.md). Errors name file:line:column and the key.
 *
 *   global:          scrape_interval (10s), scrape_timeout (10s, <= interval), external_labels
 *   scrape_configs:  job_name, scrape_interval, scrape_timeout, scheme (http|https), params,
 *                    basic_auth, authorization / bearer_token(_file), tls_config, static_configs,
 *                    file_sd_configs, http_sd_configs, relabel_configs, profiling_config
 *   forward:         name, url, protocol (pyroscope_push | remote_write), remote_timeout, headers,
 *                    basic_auth, authorization, tls_config, write_relabel_configs, max_lag,
 *                    queue_config (Prometheus' remote_write shape; see src/forward)
 */
#ifndef PS_CONFIG_H
#define PS_CONFIG_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "parser/regex.h"

typedef enum {
    PS_RELABEL_REPLACE,
    PS_RELABEL_KEEP,
    PS_RELABEL_DROP,
    PS_RELABEL_KEEPEQUAL,
    PS_RELABEL_DROPEQUAL,
    PS_RELABEL_HASHMOD,
    PS_RELABEL_LABELMAP,
    PS_RELABEL_LABELDROP,
    PS_RELABEL_LABELKEEP,
    PS_RELABEL_LOWERCASE,
    PS_RELABEL_UPPERCASE,
} ps_relabel_action_t;

typedef struct ps_relabel {
    ps_relabel_action_t action;
    uint32_t nsource;
    const char **source_labels;
    const char *separator;    /* default ";" */
    const char *target_label; /* may be NULL */
    const char *regex;        /* source text; default "(.*)" */
    ps_regex_t *re;           /* compiled ^(?s:regex)$, with captures (parser/regex.h) */
    uint64_t modulus;
    const char *replacement;  /* default "$1" */
} ps_relabel_t;

typedef struct ps_tls_config {
    const char *ca_file, *cert_file, *key_file, *server_name;
    bool insecure_skip_verify;
} ps_tls_config_t;

typedef struct ps_http_client {
    const char *basic_user, *basic_password, *basic_password_file;
    const char *auth_type;             /* "Bearer" by default when credentials are given */
    const char *auth_credentials, *auth_credentials_file; /* also bearer_token(_file) */
    ps_tls_config_t tls;
    bool follow_redirects;             /* default true */
} ps_http_client_t;

typedef struct ps_target_group {
    uint32_t ntargets;
    const char **targets;              /* host:port */
    ps_labels_t labels;                /* group labels (normalised) */
    const char *source;                /* e.g. file path + index, for debugging */
} ps_target_group_t;

typedef struct ps_file_sd {
    uint32_t nfiles;
    const char **files;                /* patterns; only the last path segment may hold a '*' */
    int64_t refresh_interval;          /* ns, default 5m */
} ps_file_sd_t;

typedef struct ps_http_sd {
    const char *url;
    const char *url_shown;             /* url as status and logs show it (ps_redact_url) */
    int64_t refresh_interval;          /* ns, default 60s */
    ps_http_client_t client;
} ps_http_sd_t;

typedef struct ps_pprof_entry {
    const char *name;                  /* memory, block, goroutine, mutex, process_cpu, threadcreate, custom */
    bool enabled;
    const char *path;
    bool delta;
    int64_t seconds;                   /* ns; 0 = the scrape interval */
    uint32_t nkeep;
    const char **keep_type, **keep_unit; /* keep_sample_type: only these sample types are stored */
} ps_pprof_entry_t;

typedef struct ps_param_values {
    const char *name;
    uint32_t n;
    const char **values;
} ps_param_values_t;

typedef struct ps_scrape_config {
    const char *job_name;
    int64_t scrape_interval, scrape_timeout; /* ns */
    const char *scheme;                /* "http" or "https" */
    uint32_t nparams;
    ps_param_values_t *params;
    ps_http_client_t client;
    uint32_t nstatic;
    ps_target_group_t *static_configs;
    uint32_t nfile_sd;
    ps_file_sd_t *file_sd;
    uint32_t nhttp_sd;
    ps_http_sd_t *http_sd;
    uint32_t nrelabel;
    ps_relabel_t *relabel;
    const char *path_prefix;           /* profiling_config.path_prefix, "" if none */
    uint32_t npprof;
    ps_pprof_entry_t *pprof;           /* defaults merged per key, in a stable order */
    uint32_t target_limit;             /* more targets (target x profile) after relabeling: none of the
                                        * job's is scraped, each fails saying so (Prometheus'; 0 = none) */
    uint32_t keep_dropped_targets;     /* targets dropped by relabeling kept for /api/v1/targets
                                        * (Prometheus 2.47's; 0 = all) */
} ps_scrape_config_t;

/** Where forwarded data goes (src/forward): Pyroscope's Connect push or Prometheus' remote write. */
typedef enum { PS_FORWARD_PYROSCOPE_PUSH = 1, PS_FORWARD_REMOTE_WRITE = 2 } ps_forward_protocol_t;

typedef struct ps_forward_config {
    const char *name;                  /* unique; default: url_shown. Names the endpoint's cursor */
    const char *url;                   /* http(s)://...; pyroscope_push: the server's base URL */
    const char *url_shown;             /* url as status and logs show it (ps_redact_url) */
    ps_forward_protocol_t protocol;    /* default pyroscope_push */
    ps_http_client_t client;
    uint32_t nheaders;
    const char **header_names, **header_values;
    uint32_t nrelabel;
    ps_relabel_t *relabel;             /* write_relabel_configs, per series before sending */
    int64_t remote_timeout;            /* ns, a request's limit (30s) */
    int64_t max_lag;                   /* ns: older entries are dropped, counted (2h; 0 = never) */
    uint32_t capacity;                 /* entries read from the log at once (2500) */
    uint32_t max_shards;               /* requests in flight, a window split by series (1; at most 16 used) */
    uint32_t max_samples_per_send;     /* profiles or samples per request (500) */
    int64_t batch_send_deadline;       /* ns a partial batch waits for more (5s) */
    int64_t min_backoff, max_backoff;  /* ns, retries of 5xx / network errors (30ms, 5s) */
    bool retry_on_http_429;            /* default true: a 429 is retried, not dropped */
    uint64_t max_bytes;                /* queue_config.max_bytes: bytes of log entries after the cursor;
                                        * past it the oldest are dropped (0 = no bound) */
} ps_forward_config_t;

/** One rule of recording_rules: (src/rules validates it; docs/configuration.md "Recording rules"). */
typedef struct ps_recording_rule_config {
    const char *id;                    /* "" = derived from the rule */
    const char *metric_name;
    uint32_t nmatchers, ngroup_by;
    const char **matchers, **group_by;
    ps_labels_t external_labels;
    const char *function_name;         /* NULL = no stacktrace filter */
} ps_recording_rule_config_t;

typedef struct ps_config {
    const char *path;
    int64_t scrape_interval, scrape_timeout; /* global defaults (ns) */
    ps_labels_t external_labels;
    uint32_t nscrape;
    ps_scrape_config_t *scrape;
    uint32_t nforward;
    ps_forward_config_t *forward;
    uint32_t nrecording;
    ps_recording_rule_config_t *recording; /* recording_rules: */
    _Atomic uint32_t refs;             /* owners besides the first (ps_config_ref) */
    ps_arena_t arena;                  /* everything above lives here */
} ps_config_t;

/** Loads and validates a config file. Errors: "FILE:LINE:COL: scrape_configs[0].scrape_timeout: ..." */
int ps_config_load(const char *path, ps_config_t **out, ps_err_t *err);
/** The same from memory (name is used in messages). */
int ps_config_parse(const char *yaml, size_t n, const char *name, ps_config_t **out, ps_err_t *err);
/** Frees a config and its compiled regexes, or drops one reference (ps_config_ref). NULL is a no-op. */
void ps_config_free(ps_config_t *c);
/** Another owner of c (the scraper and the forwarder both keep the configuration they run):
 *  each calls ps_config_free once. Returns c. */
ps_config_t *ps_config_ref(ps_config_t *c);
/** Appends the configuration as YAML, as Prometheus' /api/v1/status/config shows its own: every
 *  field with its effective value (defaults filled in), secrets as "<secret>" (config_yaml.c). */
void ps_config_yaml(const ps_config_t *c, ps_buf_t *out);
/** "replace", "keep", ... */
const char *ps_relabel_action_name(ps_relabel_action_t a);

/** NULL if addr is a scrape target address (host, host:port, [v6] or [v6]:port: no scheme, path,
 *  query, fragment, user info, spaces), else what is wrong. The rule for static_configs and for
 *  __address__ after relabeling: anything else would change the URL the scraper builds. */
const char *ps_config_target_problem(const char *addr, size_t n);

/* ---- what outputs show of secrets (redact.c): one rule for status, targets and logs ---- */

#define PS_SECRET "<secret>"     /* a secret value, as Prometheus shows config_util.Secret */
#define PS_URL_PASSWORD "xxxxx" /* a URL's password, as Go's url.URL.Redacted() */

/** Whether a label or parameter name looks like it holds a credential: one of its words (split at
 *  _ - .; "__param_" dropped; any case) is token, password, passwd, pwd, secret, credential(s),
 *  apikey or authorization, or it is "key" alone or api_key, access_key, private_key, auth_key,
 *  signing_key, session_key (not shard_key). */
bool ps_secret_name(const char *name, size_t n);
/** Appends s with every URL in it redacted: a user info password as "xxxxx" (the user kept), the
 *  values of credential-named query parameters as "<secret>". Other text is copied. */
void ps_redact_url(const char *s, size_t n, ps_buf_t *out);
/** Appends the value of name as shown: "<secret>" when the name looks like a credential, else the
 *  value with its URLs redacted (ps_redact_url); an __address__ is read as a URL's authority
 *  ("user:pw@host:port" -> "user:xxxxx@host:port"), a __profile_path__ as its path and query
 *  ("/p?token=t" -> "/p?token=<secret>"). */
void ps_redact_value(const char *name, size_t nl, const char *value, size_t vl, ps_buf_t *out);
/** ps_redact_url of a NUL-terminated url, as a NUL-terminated copy in a. */
char *ps_redact_url_arena(ps_arena_t *a, const char *url);

/* ---- relabeling (relabel.c) ---- */

/** Applies rules in order to ls (sorted by name), Prometheus semantics (model/relabel/relabel.go),
 *  editing it with ps_labels_set / ps_labels_del (core/labels.h): new strings, and the pair array if
 *  ls->cap is 0, come from arena. false = drop the target. */
bool ps_relabel_process(const ps_relabel_t *rules, uint32_t n, ps_labels_t *ls, ps_arena_t *arena);

#endif
