/*
 * config_yaml.c - the loaded configuration written back as YAML, for GET /api/v1/status/config.
 *
 * As Prometheus shows its own (config.Config marshalled by yaml.v2): every field with its
 * effective value, defaults filled in, durations in Prometheus' notation ("10s", "1m30s"),
 * secrets (basic_auth password, authorization credentials, forward header values, and by the
 * one rule of redact.c: params and labels named like credentials) as "<secret>", URL passwords
 * as "xxxxx" (url.URL.Redacted), file names as given.
 * Keys in the order docs/configuration.md documents them. Strings are plain scalars when that cannot be
 * misread (letters, digits and "_./:-" not looking like a number, bool or null: "15s",
 * "127.0.0.1:6060"), double-quoted with escapes otherwise, so the text reads back to the same
 * configuration.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "core/timeutil.h"

#define SECRET PS_SECRET

static bool plain_ok(const char *s)
{
    static const char *const reserved[] = {"true", "false", "yes", "no", "on", "off", "null", "y", "n", "~", NULL};
    if (s[0] == 0 || s[0] == '-' || s[0] == ':' || s[0] == '.')
        return false;
    /* what YAML 1.1 could read as a number: digits with at most one '.', ':' (base 60), e, sign */
    bool numeric = true;
    int dots = 0;
    for (const char *p = s; *p; p++) {
        dots += *p == '.';
        numeric &= strchr("0123456789_.:+-eE", *p) != NULL;
    }
    if (numeric && dots <= 1)
        return false;
    for (const char *p = s; *p; p++) {
        char c = *p;
        if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
              c == '/' || c == '-' || (c == ':' && p[1] != ' ' && p[1] != 0)))
            return false;
    }
    for (int i = 0; reserved[i]; i++)
        if (strcasecmp(s, reserved[i]) == 0)
            return false;
    return true;
}

/* A scalar: plain, or double-quoted with YAML's escapes (a superset of JSON's). */
static void scalar(ps_buf_t *b, const char *s)
{
    if (plain_ok(s))
        ps_buf_append(b, s, strlen(s));
    else
        ps_buf_json_str(b, s, strlen(s));
}

/* The value of name as every output shows it (redact.c), as a scalar. */
static void shown(ps_buf_t *b, const char *name, const char *value)
{
    ps_buf_t v = PS_BUF_INIT;
    ps_redact_value(name, strlen(name), value, strlen(value), &v);
    ps_buf_putc(&v, 0);
    scalar(b, (const char *)v.data);
    ps_buf_dispose(&v);
}

static void indent(ps_buf_t *b, int n)
{
    for (int i = 0; i < n; i++)
        ps_buf_append(b, " ", 1);
}

/* "<ind>key: value\n" */
static void kv(ps_buf_t *b, int ind, const char *key, const char *value)
{
    indent(b, ind);
    ps_buf_printf(b, "%s: ", key);
    scalar(b, value);
    ps_buf_append(b, "\n", 1);
}

static void kv_dur(ps_buf_t *b, int ind, const char *key, int64_t ns)
{
    char d[64];
    ps_format_duration(ns, d, sizeof(d));
    kv(b, ind, key, d);
}

static void kv_bool(ps_buf_t *b, int ind, const char *key, bool v)
{
    indent(b, ind);
    ps_buf_printf(b, "%s: %s\n", key, v ? "true" : "false");
}

static void kv_opt(ps_buf_t *b, int ind, const char *key, const char *value)
{
    if (value != NULL && value[0] != 0)
        kv(b, ind, key, value);
}

/* "<kind>key:\n<ind>- a\n" (yaml.v2 puts list items at the key's indentation; kind is 0 right
 * after a "- ") */
static void list_at(ps_buf_t *b, int kind, int ind, const char *key, const char *const *v, uint32_t n)
{
    indent(b, kind);
    ps_buf_printf(b, "%s:\n", key);
    for (uint32_t i = 0; i < n; i++) {
        indent(b, ind);
        ps_buf_append(b, "- ", 2);
        scalar(b, v[i]);
        ps_buf_append(b, "\n", 1);
    }
}

static void list(ps_buf_t *b, int ind, const char *key, const char *const *v, uint32_t n)
{
    list_at(b, ind, ind, key, v, n);
}

/* A params entry: its values as "<secret>" when the name looks like a credential (as targets'
 * __param_ labels and scrape URLs show them) */
static void param_list(ps_buf_t *b, int ind, const char *key, const char *const *v, uint32_t n)
{
    indent(b, ind);
    ps_buf_printf(b, "%s:\n", key);
    for (uint32_t i = 0; i < n; i++) {
        indent(b, ind);
        ps_buf_append(b, "- ", 2);
        shown(b, key, v[i]);
        ps_buf_append(b, "\n", 1);
    }
}

static void labels_map(ps_buf_t *b, int ind, const char *key, const ps_labels_t *ls)
{
    if (ls->n == 0)
        return;
    indent(b, ind);
    ps_buf_printf(b, "%s:\n", key);
    for (uint32_t i = 0; i < ls->n; i++) {
        indent(b, ind + 2);
        scalar(b, ls->pairs[i].name);
        ps_buf_append(b, ": ", 2);
        shown(b, ls->pairs[i].name, ls->pairs[i].value);
        ps_buf_append(b, "\n", 1);
    }
}

static void client(ps_buf_t *b, int ind, const ps_http_client_t *c)
{
    if (c->basic_user || c->basic_password || c->basic_password_file) {
        indent(b, ind);
        ps_buf_append(b, "basic_auth:\n", 12);
        /* always, "" too (as Prometheus, whose username has no omitempty): a block of empty
         * values alone would print as a null basic_auth, which reads back as none */
        kv(b, ind + 2, "username", c->basic_user ? c->basic_user : "");
        if (c->basic_password && c->basic_password[0])
            kv(b, ind + 2, "password", SECRET);
        kv_opt(b, ind + 2, "password_file", c->basic_password_file);
    }
    /* with a type alone too (credentials: '' prints none): that reads back as this block again */
    if (c->auth_credentials || c->auth_credentials_file || c->auth_type) {
        indent(b, ind);
        ps_buf_append(b, "authorization:\n", 15);
        kv(b, ind + 2, "type", c->auth_type ? c->auth_type : "Bearer");
        if (c->auth_credentials && c->auth_credentials[0])
            kv(b, ind + 2, "credentials", SECRET);
        kv_opt(b, ind + 2, "credentials_file", c->auth_credentials_file);
    }
    const ps_tls_config_t *t = &c->tls;
    if (t->ca_file || t->cert_file || t->key_file || t->server_name || t->insecure_skip_verify) {
        indent(b, ind);
        ps_buf_append(b, "tls_config:\n", 12);
        kv_opt(b, ind + 2, "ca_file", t->ca_file);
        kv_opt(b, ind + 2, "cert_file", t->cert_file);
        kv_opt(b, ind + 2, "key_file", t->key_file);
        kv_opt(b, ind + 2, "server_name", t->server_name);
        kv_bool(b, ind + 2, "insecure_skip_verify", t->insecure_skip_verify);
    }
    kv_bool(b, ind, "follow_redirects", c->follow_redirects);
}

static void relabel(ps_buf_t *b, int ind, const ps_relabel_t *r)
{
    /* the first key goes after the "- " of the list item */
    indent(b, ind);
    ps_buf_append(b, "- ", 2);
    int in = ind + 2;
    if (r->nsource > 0) {
        ps_buf_append(b, "source_labels: [", 16);
        for (uint32_t i = 0; i < r->nsource; i++) {
            if (i)
                ps_buf_append(b, ", ", 2);
            scalar(b, r->source_labels[i]);
        }
        ps_buf_append(b, "]\n", 2);
        indent(b, in);
    }
    ps_buf_append(b, "separator: ", 11);
    scalar(b, r->separator ? r->separator : ";");
    ps_buf_append(b, "\n", 1);
    kv_opt(b, in, "target_label", r->target_label);
    kv(b, in, "regex", r->regex ? r->regex : "(.*)");
    if (r->modulus) {
        indent(b, in);
        ps_buf_printf(b, "modulus: %llu\n", (unsigned long long)r->modulus);
    }
    kv(b, in, "replacement", r->replacement ? r->replacement : "$1");
    kv(b, in, "action", ps_relabel_action_name(r->action));
}

static void pprof_entry(ps_buf_t *b, int ind, const ps_pprof_entry_t *e)
{
    indent(b, ind);
    scalar(b, e->name);
    ps_buf_append(b, ":\n", 2);
    kv_bool(b, ind + 2, "enabled", e->enabled);
    kv(b, ind + 2, "path", e->path ? e->path : "");
    kv_bool(b, ind + 2, "delta", e->delta);
    if (e->seconds > 0) {
        indent(b, ind + 2);
        ps_buf_printf(b, "seconds: %lld\n", (long long)(e->seconds / PS_NS_PER_S));
    }
    if (e->nkeep > 0) {
        indent(b, ind + 2);
        ps_buf_append(b, "keep_sample_type:\n", 18);
        for (uint32_t i = 0; i < e->nkeep; i++) {
            indent(b, ind + 2);
            ps_buf_append(b, "- type: ", 8);
            scalar(b, e->keep_type[i]);
            ps_buf_append(b, "\n", 1);
            kv(b, ind + 4, "unit", e->keep_unit[i]);
        }
    }
}

static void scrape_config(ps_buf_t *b, const ps_scrape_config_t *sc)
{
    ps_buf_append(b, "- job_name: ", 12);
    scalar(b, sc->job_name);
    ps_buf_append(b, "\n", 1);
    kv_dur(b, 2, "scrape_interval", sc->scrape_interval);
    kv_dur(b, 2, "scrape_timeout", sc->scrape_timeout);
    kv(b, 2, "scheme", sc->scheme ? sc->scheme : "http");
    if (sc->target_limit > 0)
        ps_buf_printf(b, "  target_limit: %u\n", sc->target_limit);
    if (sc->keep_dropped_targets > 0)
        ps_buf_printf(b, "  keep_dropped_targets: %u\n", sc->keep_dropped_targets);
    if (sc->nparams > 0) {
        ps_buf_append(b, "  params:\n", 10);
        for (uint32_t i = 0; i < sc->nparams; i++)
            param_list(b, 4, sc->params[i].name, sc->params[i].values, sc->params[i].n);
    }
    client(b, 2, &sc->client);
    if (sc->nstatic > 0) {
        ps_buf_append(b, "  static_configs:\n", 18);
        for (uint32_t i = 0; i < sc->nstatic; i++) {
            const ps_target_group_t *g = &sc->static_configs[i];
            ps_buf_append(b, "  - ", 4);
            list_at(b, 0, 4, "targets", g->targets, g->ntargets);
            labels_map(b, 4, "labels", &g->labels);
        }
    }
    if (sc->nfile_sd > 0) {
        ps_buf_append(b, "  file_sd_configs:\n", 19);
        for (uint32_t i = 0; i < sc->nfile_sd; i++) {
            ps_buf_append(b, "  - ", 4);
            kv_dur(b, 0, "refresh_interval", sc->file_sd[i].refresh_interval);
            list(b, 4, "files", sc->file_sd[i].files, sc->file_sd[i].nfiles);
        }
    }
    if (sc->nhttp_sd > 0) {
        ps_buf_append(b, "  http_sd_configs:\n", 19);
        for (uint32_t i = 0; i < sc->nhttp_sd; i++) {
            ps_buf_append(b, "  - ", 4);
            kv(b, 0, "url", sc->http_sd[i].url_shown);
            kv_dur(b, 4, "refresh_interval", sc->http_sd[i].refresh_interval);
            client(b, 4, &sc->http_sd[i].client);
        }
    }
    if (sc->nrelabel > 0) {
        ps_buf_append(b, "  relabel_configs:\n", 19);
        for (uint32_t i = 0; i < sc->nrelabel; i++)
            relabel(b, 2, &sc->relabel[i]);
    }
    ps_buf_append(b, "  profiling_config:\n", 20);
    kv_opt(b, 4, "path_prefix", sc->path_prefix);
    ps_buf_append(b, "    pprof_config:\n", 18);
    for (uint32_t i = 0; i < sc->npprof; i++)
        pprof_entry(b, 6, &sc->pprof[i]);
}

static void forward_config(ps_buf_t *b, const ps_forward_config_t *f)
{
    ps_buf_append(b, "- ", 2);
    kv(b, 0, "name", f->name);
    kv(b, 2, "url", f->url_shown);
    kv(b, 2, "protocol", f->protocol == PS_FWD_REMOTE_WRITE ? "remote_write" : "pyroscope_push");
    kv_dur(b, 2, "remote_timeout", f->remote_timeout);
    if (f->nheaders > 0) {
        ps_buf_append(b, "  headers:\n", 11);
        for (uint32_t i = 0; i < f->nheaders; i++) {
            indent(b, 4);
            scalar(b, f->header_names[i]);
            ps_buf_append(b, ": ", 2);
            scalar(b, SECRET); /* header values often carry tokens */
            ps_buf_append(b, "\n", 1);
        }
    }
    client(b, 2, &f->client);
    if (f->nrelabel > 0) {
        ps_buf_append(b, "  write_relabel_configs:\n", 25);
        for (uint32_t i = 0; i < f->nrelabel; i++)
            relabel(b, 2, &f->relabel[i]);
    }
    kv_dur(b, 2, "max_lag", f->max_lag);
    ps_buf_append(b, "  queue_config:\n", 16);
    indent(b, 4);
    ps_buf_printf(b, "capacity: %u\n    max_shards: %u\n    max_samples_per_send: %u\n", f->capacity, f->max_shards,
                  f->max_samples_per_send);
    kv_dur(b, 4, "batch_send_deadline", f->batch_send_deadline);
    kv_dur(b, 4, "min_backoff", f->min_backoff);
    kv_dur(b, 4, "max_backoff", f->max_backoff);
    kv_bool(b, 4, "retry_on_http_429", f->retry_on_http_429);
    if (f->max_bytes > 0) {
        indent(b, 4);
        ps_buf_printf(b, "max_bytes: %llu\n", (unsigned long long)f->max_bytes);
    }
}

void ps_config_yaml(const ps_config_t *c, ps_buf_t *out)
{
    if (c == NULL)
        return;
    ps_buf_append(out, "global:\n", 8);
    kv_dur(out, 2, "scrape_interval", c->scrape_interval);
    kv_dur(out, 2, "scrape_timeout", c->scrape_timeout);
    labels_map(out, 2, "external_labels", &c->external_labels);
    if (c->nforward > 0) {
        ps_buf_append(out, "forward:\n", 9);
        for (uint32_t i = 0; i < c->nforward; i++)
            forward_config(out, &c->forward[i]);
    }
    if (c->nscrape == 0)
        return;
    ps_buf_append(out, "scrape_configs:\n", 16);
    for (uint32_t i = 0; i < c->nscrape; i++)
        scrape_config(out, &c->scrape[i]);
}
