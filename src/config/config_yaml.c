/*
 * config_yaml.c - the loaded configuration written back as YAML, for GET /api/v1/status/config.
 *
 * As Prometheus shows its own (config.Config marshalled by yaml.v2): every field with its
 * effective value, defaults filled in, durations in Prometheus' notation ("10s", "1m30s"),
 * secrets (basic_auth password, authorization credentials, forward header values, and by the
 * one rule of redact.c: params and labels named like credentials) as <secret>, URL passwords
 * as "xxxxx" (url.URL.Redacted), file names as given. Keys in the order docs/configuration.md
 * documents them.
 *
 * libyaml's emitter writes it, set up as yaml.v2 sets up its port of that emitter (indent 2,
 * width 80, unicode), and each string gets the style yaml.v2 asks for (encode.go stringv): plain
 * unless the plain text would read back as something else than that string -- a bool, null, int,
 * float or timestamp by yaml.v2's resolve rules, or a base-60 float -- then double-quoted; the
 * emitter itself turns a plain request into single quotes where plain is not allowed (": ", a
 * leading "- ", "#", spaces at the ends...). So "<secret>", "127.0.0.1:6060", "$1" and
 * "http://u:xxxxx@h/p?q=1" are plain, "5", "true", "" and "1:30" double-quoted.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "config.h"
#include "core/timeutil.h"

#define SECRET PS_SECRET

/* ---- yaml.v2's resolve(): what a plain scalar would read back as ------------------------------ */

static bool all_digits(const char *s, size_t n, int base)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        int c = (unsigned char)s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                                                                       : c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
        if (d >= base)
            return false;
    }
    return true;
}

/* strconv.ParseInt(s, 0, 64) or ParseUint(s, 0, 64) succeeds (underscores already removed) */
static bool go_int(const char *s)
{
    bool neg = false, sign = s[0] == '+' || s[0] == '-';
    if (sign)
        neg = s[0] == '-', s++;
    int base = 10;
    if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
        base = 16, s += 2;
    else if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
        base = 8, s += 2;
    else if (s[0] == '0' && (s[1] == 'b' || s[1] == 'B'))
        base = 2, s += 2;
    else if (s[0] == '0' && s[1] != 0)
        base = 8, s += 1;
    if (!all_digits(s, strlen(s), base))
        return false;
    errno = 0;
    unsigned long long v = strtoull(s, NULL, base);
    if (errno == ERANGE)
        return false;
    if (!sign)
        return true; /* ParseUint takes what ParseInt cannot */
    return neg ? v <= (1ull << 63) : v < (1ull << 63);
}

/* ^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$ and no overflow (strconv.ParseFloat) */
static bool go_float(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    size_t ip = strspn(p, "0123456789");
    p += ip;
    if (*p == '.') {
        size_t fp = strspn(p + 1, "0123456789");
        if (ip == 0 && fp == 0)
            return false;
        p += 1 + fp;
    } else if (ip == 0) {
        return false;
    }
    if (*p == 'e' || *p == 'E') {
        p++;
        if (*p == '+' || *p == '-')
            p++;
        size_t ep = strspn(p, "0123456789");
        if (ep == 0)
            return false;
        p += ep;
    }
    if (*p != 0)
        return false;
    errno = 0;
    double d = strtod(s, NULL);
    return !(errno == ERANGE && (d > 1 || d < -1)); /* overflow fails; underflow gives 0 */
}

/* n digits at *p, at most max of them, into *v */
static bool digits(const char **p, int min, int max, int *v)
{
    int k = 0;
    *v = 0;
    while (k < max && **p >= '0' && **p <= '9')
        *v = *v * 10 + (*(*p)++ - '0'), k++;
    return k >= min;
}

/* yaml.v2's parseTimestamp: time.Parse with "2006-1-2T15:4:5.999999999Z07:00" (T or t),
 * "2006-1-2 15:4:5.999999999" or "2006-1-2" */
static bool go_timestamp(const char *s)
{
    static const int mdays[] = {31, 29, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    const char *p = s;
    int y, mo, d, h, mi, se;
    if (!digits(&p, 4, 4, &y) || *p++ != '-' || !digits(&p, 1, 2, &mo) || *p++ != '-' || !digits(&p, 1, 2, &d))
        return false;
    if (mo < 1 || mo > 12 || d < 1 || d > mdays[mo - 1] ||
        (mo == 2 && d == 29 && !(y % 4 == 0 && (y % 100 != 0 || y % 400 == 0))))
        return false;
    if (*p == 0)
        return true;
    char sep = *p++;
    if (sep != 'T' && sep != 't' && sep != ' ')
        return false;
    if (!digits(&p, 1, 2, &h) || *p++ != ':' || !digits(&p, 1, 2, &mi) || *p++ != ':' || !digits(&p, 1, 2, &se) ||
        h > 23 || mi > 59 || se > 59)
        return false;
    if (*p == '.') {
        p++;
        int f;
        if (!digits(&p, 1, 9, &f))
            return false;
    }
    if (sep == ' ')
        return *p == 0;
    if (*p == 'Z')
        return p[1] == 0;
    int zh, zm;
    return (*p == '+' || *p == '-') && (p++, digits(&p, 2, 2, &zh)) && *p++ == ':' && digits(&p, 2, 2, &zm) &&
           *p == 0;
}

/* ^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$ */
static bool base60_float(const char *s)
{
    const char *p = s;
    if (*p == '+' || *p == '-')
        p++;
    if (!(*p >= '0' && *p <= '9'))
        return false;
    p += strspn(p, "0123456789_");
    int groups = 0;
    while (*p == ':') {
        p++;
        size_t n = strspn(p, "0123456789");
        if (n == 0 || n > 2 || (n == 2 && p[0] > '5'))
            return false;
        p += n;
        groups++;
    }
    if (groups == 0)
        return false;
    if (*p == '.')
        p += 1 + strspn(p + 1, "0123456789_");
    return *p == 0;
}

/* True if yaml.v2 writes s plain (the emitter may still quote it), false for double quotes. */
static bool v2_plain(const char *s)
{
    static const char *const special[] = {
        "y", "Y", "yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON",
        "n", "N", "no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF",
        "", "~", "null", "Null", "NULL", ".nan", ".NaN", ".NAN", ".inf", ".Inf", ".INF",
        "+.inf", "+.Inf", "+.INF", "-.inf", "-.Inf", "-.INF", NULL};
    char c = s[0];
    bool hinted = c == 0 || strchr("+-0123456789yYnNtTfFoO~.", c) != NULL;
    if (hinted) {
        for (int i = 0; special[i]; i++)
            if (strcmp(s, special[i]) == 0)
                return false;
        if (c == '.' && go_float(s))
            return false;
        if (c != '.' && strchr("yYnNtTfFoO~", c) == NULL) { /* a digit or a sign */
            if (go_timestamp(s))
                return false;
            size_t n = strlen(s);
            char *plain = malloc(n + 1), *q = plain;
            for (const char *p = s; *p; p++)
                if (*p != '_')
                    *q++ = *p;
            *q = 0;
            bool num = go_int(plain) || go_float(plain);
            free(plain);
            if (num)
                return false;
        }
    }
    return !base60_float(s);
}

/* ---- events ------------------------------------------------------------------------------------ */

typedef struct ye {
    yaml_emitter_t em;
    bool failed;
} ye_t;

static void emit(ye_t *y, yaml_event_t *ev)
{
    if (y->failed)
        yaml_event_delete(ev);
    else if (!yaml_emitter_emit(&y->em, ev)) /* it frees the event either way */
        y->failed = true;
}

static void scalar_styled(ye_t *y, const char *s, yaml_scalar_style_t style)
{
    yaml_event_t ev;
    if (!yaml_scalar_event_initialize(&ev, NULL, NULL, (yaml_char_t *)s, (int)strlen(s), 1, 1, style)) {
        y->failed = true;
        return;
    }
    emit(y, &ev);
}

/* a string as yaml.v2 writes one */
static void str(ye_t *y, const char *s)
{
    scalar_styled(y, s, strchr(s, '\n') != NULL ? YAML_LITERAL_SCALAR_STYLE
                        : v2_plain(s)           ? YAML_PLAIN_SCALAR_STYLE
                                                : YAML_DOUBLE_QUOTED_SCALAR_STYLE);
}

/* a number or bool: plain */
static void raw(ye_t *y, const char *s) { scalar_styled(y, s, YAML_PLAIN_SCALAR_STYLE); }

static void map_start(ye_t *y)
{
    yaml_event_t ev;
    yaml_mapping_start_event_initialize(&ev, NULL, NULL, 1, YAML_BLOCK_MAPPING_STYLE);
    emit(y, &ev);
}

static void seq_start(ye_t *y, bool flow)
{
    yaml_event_t ev;
    yaml_sequence_start_event_initialize(&ev, NULL, NULL, 1, flow ? YAML_FLOW_SEQUENCE_STYLE : YAML_BLOCK_SEQUENCE_STYLE);
    emit(y, &ev);
}

static void map_end(ye_t *y)
{
    yaml_event_t ev;
    yaml_mapping_end_event_initialize(&ev);
    emit(y, &ev);
}

static void seq_end(ye_t *y)
{
    yaml_event_t ev;
    yaml_sequence_end_event_initialize(&ev);
    emit(y, &ev);
}

/* ---- the configuration ----------------------------------------------------------------------- */

/* The value of name as every output shows it (redact.c). */
static void shown(ye_t *y, const char *name, const char *value)
{
    ps_buf_t v = PS_BUF_INIT;
    ps_redact_value(name, strlen(name), value, strlen(value), &v);
    ps_buf_putc(&v, 0);
    str(y, (const char *)v.data);
    ps_buf_dispose(&v);
}

static void kv(ye_t *y, const char *key, const char *value)
{
    str(y, key);
    str(y, value);
}

static void kv_dur(ye_t *y, const char *key, int64_t ns)
{
    char d[64];
    ps_format_duration(ns, d, sizeof(d));
    kv(y, key, d);
}

static void kv_bool(ye_t *y, const char *key, bool v)
{
    str(y, key);
    raw(y, v ? "true" : "false");
}

static void kv_u64(ye_t *y, const char *key, unsigned long long v)
{
    char d[32];
    snprintf(d, sizeof(d), "%llu", v);
    str(y, key);
    raw(y, d);
}

static void kv_opt(ye_t *y, const char *key, const char *value)
{
    if (value != NULL && value[0] != 0)
        kv(y, key, value);
}

static void list(ye_t *y, const char *key, const char *const *v, uint32_t n)
{
    str(y, key);
    seq_start(y, false);
    for (uint32_t i = 0; i < n; i++)
        str(y, v[i]);
    seq_end(y);
}

static void labels_map(ye_t *y, const char *key, const ps_labels_t *ls)
{
    if (ls->n == 0)
        return;
    str(y, key);
    map_start(y);
    for (uint32_t i = 0; i < ls->n; i++) {
        str(y, ls->pairs[i].name);
        shown(y, ls->pairs[i].name, ls->pairs[i].value);
    }
    map_end(y);
}

static void client(ye_t *y, const ps_http_client_t *c)
{
    if (c->basic_user || c->basic_password || c->basic_password_file) {
        str(y, "basic_auth");
        map_start(y);
        /* always, "" too (as Prometheus, whose username has no omitempty): a block of empty
         * values alone would print as a null basic_auth, which reads back as none */
        kv(y, "username", c->basic_user ? c->basic_user : "");
        if (c->basic_password && c->basic_password[0])
            kv(y, "password", SECRET);
        kv_opt(y, "password_file", c->basic_password_file);
        map_end(y);
    }
    /* with a type alone too (credentials: '' prints none): that reads back as this block again */
    if (c->auth_credentials || c->auth_credentials_file || c->auth_type) {
        str(y, "authorization");
        map_start(y);
        kv(y, "type", c->auth_type ? c->auth_type : "Bearer");
        if (c->auth_credentials && c->auth_credentials[0])
            kv(y, "credentials", SECRET);
        kv_opt(y, "credentials_file", c->auth_credentials_file);
        map_end(y);
    }
    const ps_tls_config_t *t = &c->tls;
    if (t->ca_file || t->cert_file || t->key_file || t->server_name || t->insecure_skip_verify) {
        str(y, "tls_config");
        map_start(y);
        kv_opt(y, "ca_file", t->ca_file);
        kv_opt(y, "cert_file", t->cert_file);
        kv_opt(y, "key_file", t->key_file);
        kv_opt(y, "server_name", t->server_name);
        kv_bool(y, "insecure_skip_verify", t->insecure_skip_verify);
        map_end(y);
    }
    kv_bool(y, "follow_redirects", c->follow_redirects);
}

static void relabel(ye_t *y, const ps_relabel_t *r)
{
    map_start(y);
    if (r->nsource > 0) {
        str(y, "source_labels");
        seq_start(y, true); /* as Prometheus' model.LabelNames (yaml:",flow") */
        for (uint32_t i = 0; i < r->nsource; i++)
            str(y, r->source_labels[i]);
        seq_end(y);
    }
    /* in the order of Prometheus' relabel.Config */
    kv(y, "separator", r->separator ? r->separator : ";");
    kv(y, "regex", r->regex ? r->regex : "(.*)");
    if (r->modulus)
        kv_u64(y, "modulus", (unsigned long long)r->modulus);
    kv_opt(y, "target_label", r->target_label);
    kv(y, "replacement", r->replacement ? r->replacement : "$1");
    kv(y, "action", ps_relabel_action_name(r->action));
    map_end(y);
}

static void relabels(ye_t *y, const char *key, const ps_relabel_t *r, uint32_t n)
{
    if (n == 0)
        return;
    str(y, key);
    seq_start(y, false);
    for (uint32_t i = 0; i < n; i++)
        relabel(y, &r[i]);
    seq_end(y);
}

static void pprof_entry(ye_t *y, const ps_pprof_entry_t *e)
{
    str(y, e->name);
    map_start(y);
    kv_bool(y, "enabled", e->enabled);
    kv(y, "path", e->path ? e->path : "");
    kv_bool(y, "delta", e->delta);
    if (e->seconds > 0)
        kv_u64(y, "seconds", (unsigned long long)(e->seconds / PS_NS_PER_S));
    if (e->nkeep > 0) {
        str(y, "keep_sample_type");
        seq_start(y, false);
        for (uint32_t i = 0; i < e->nkeep; i++) {
            map_start(y);
            kv(y, "type", e->keep_type[i]);
            kv(y, "unit", e->keep_unit[i]);
            map_end(y);
        }
        seq_end(y);
    }
    map_end(y);
}

static void scrape_config(ye_t *y, const ps_scrape_config_t *sc)
{
    map_start(y);
    kv(y, "job_name", sc->job_name);
    kv_dur(y, "scrape_interval", sc->scrape_interval);
    kv_dur(y, "scrape_timeout", sc->scrape_timeout);
    kv(y, "scheme", sc->scheme ? sc->scheme : "http");
    if (sc->target_limit > 0)
        kv_u64(y, "target_limit", sc->target_limit);
    if (sc->keep_dropped_targets > 0)
        kv_u64(y, "keep_dropped_targets", sc->keep_dropped_targets);
    if (sc->nparams > 0) {
        str(y, "params");
        map_start(y);
        for (uint32_t i = 0; i < sc->nparams; i++) {
            /* the values as "<secret>" when the name looks like a credential (as targets'
             * __param_ labels and scrape URLs show them) */
            str(y, sc->params[i].name);
            seq_start(y, false);
            for (uint32_t k = 0; k < sc->params[i].n; k++)
                shown(y, sc->params[i].name, sc->params[i].values[k]);
            seq_end(y);
        }
        map_end(y);
    }
    client(y, &sc->client);
    if (sc->nstatic > 0) {
        str(y, "static_configs");
        seq_start(y, false);
        for (uint32_t i = 0; i < sc->nstatic; i++) {
            const ps_target_group_t *g = &sc->static_configs[i];
            map_start(y);
            list(y, "targets", g->targets, g->ntargets);
            labels_map(y, "labels", &g->labels);
            map_end(y);
        }
        seq_end(y);
    }
    if (sc->nfile_sd > 0) {
        str(y, "file_sd_configs");
        seq_start(y, false);
        for (uint32_t i = 0; i < sc->nfile_sd; i++) {
            map_start(y);
            kv_dur(y, "refresh_interval", sc->file_sd[i].refresh_interval);
            list(y, "files", sc->file_sd[i].files, sc->file_sd[i].nfiles);
            map_end(y);
        }
        seq_end(y);
    }
    if (sc->nhttp_sd > 0) {
        str(y, "http_sd_configs");
        seq_start(y, false);
        for (uint32_t i = 0; i < sc->nhttp_sd; i++) {
            map_start(y);
            kv(y, "url", sc->http_sd[i].url_shown);
            kv_dur(y, "refresh_interval", sc->http_sd[i].refresh_interval);
            client(y, &sc->http_sd[i].client);
            map_end(y);
        }
        seq_end(y);
    }
    relabels(y, "relabel_configs", sc->relabel, sc->nrelabel);
    str(y, "profiling_config");
    map_start(y);
    kv_opt(y, "path_prefix", sc->path_prefix);
    str(y, "pprof_config");
    map_start(y);
    for (uint32_t i = 0; i < sc->npprof; i++)
        pprof_entry(y, &sc->pprof[i]);
    map_end(y);
    map_end(y);
    map_end(y);
}

static void forward_config(ye_t *y, const ps_forward_config_t *f)
{
    map_start(y);
    kv(y, "name", f->name);
    kv(y, "url", f->url_shown);
    kv(y, "protocol", f->protocol == PS_FORWARD_REMOTE_WRITE ? "remote_write" : "pyroscope_push");
    kv_dur(y, "remote_timeout", f->remote_timeout);
    if (f->nheaders > 0) {
        str(y, "headers");
        map_start(y);
        for (uint32_t i = 0; i < f->nheaders; i++)
            kv(y, f->header_names[i], SECRET); /* header values often carry tokens */
        map_end(y);
    }
    client(y, &f->client);
    relabels(y, "write_relabel_configs", f->relabel, f->nrelabel);
    kv_dur(y, "max_lag", f->max_lag);
    str(y, "queue_config");
    map_start(y);
    kv_u64(y, "capacity", f->capacity);
    kv_u64(y, "max_shards", f->max_shards);
    kv_u64(y, "max_samples_per_send", f->max_samples_per_send);
    kv_dur(y, "batch_send_deadline", f->batch_send_deadline);
    kv_dur(y, "min_backoff", f->min_backoff);
    kv_dur(y, "max_backoff", f->max_backoff);
    kv_bool(y, "retry_on_http_429", f->retry_on_http_429);
    if (f->max_bytes > 0)
        kv_u64(y, "max_bytes", (unsigned long long)f->max_bytes);
    map_end(y);
    map_end(y);
}

static void recording_rule(ye_t *y, const ps_recording_rule_config_t *r)
{
    map_start(y);
    kv_opt(y, "id", r->id);
    kv(y, "metric_name", r->metric_name);
    list(y, "matchers", r->matchers, r->nmatchers);
    list(y, "group_by", r->group_by, r->ngroup_by);
    labels_map(y, "external_labels", &r->external_labels);
    kv_opt(y, "function_name", r->function_name);
    map_end(y);
}

static int on_write(void *data, unsigned char *buffer, size_t size)
{
    ps_buf_append(data, buffer, size);
    return 1;
}

void ps_config_yaml(const ps_config_t *c, ps_buf_t *out)
{
    if (c == NULL)
        return;
    ye_t y = {.failed = false};
    size_t start = out->len;
    yaml_event_t ev;
    if (!yaml_emitter_initialize(&y.em))
        return;
    yaml_emitter_set_output(&y.em, on_write, out);
    yaml_emitter_set_unicode(&y.em, 1);
    yaml_emitter_set_indent(&y.em, 2);
    yaml_emitter_set_width(&y.em, 80);
    yaml_stream_start_event_initialize(&ev, YAML_UTF8_ENCODING);
    emit(&y, &ev);
    yaml_document_start_event_initialize(&ev, NULL, NULL, NULL, 1);
    emit(&y, &ev);
    map_start(&y);

    str(&y, "global");
    map_start(&y);
    kv_dur(&y, "scrape_interval", c->scrape_interval);
    kv_dur(&y, "scrape_timeout", c->scrape_timeout);
    labels_map(&y, "external_labels", &c->external_labels);
    map_end(&y);
    if (c->nforward > 0) {
        str(&y, "forward");
        seq_start(&y, false);
        for (uint32_t i = 0; i < c->nforward; i++)
            forward_config(&y, &c->forward[i]);
        seq_end(&y);
    }
    if (c->nrecording > 0) {
        str(&y, "recording_rules");
        seq_start(&y, false);
        for (uint32_t i = 0; i < c->nrecording; i++)
            recording_rule(&y, &c->recording[i]);
        seq_end(&y);
    }
    if (c->nscrape > 0) {
        str(&y, "scrape_configs");
        seq_start(&y, false);
        for (uint32_t i = 0; i < c->nscrape; i++)
            scrape_config(&y, &c->scrape[i]);
        seq_end(&y);
    }

    map_end(&y);
    yaml_document_end_event_initialize(&ev, 1);
    emit(&y, &ev);
    yaml_stream_end_event_initialize(&ev);
    emit(&y, &ev);
    if (!y.failed && !yaml_emitter_flush(&y.em))
        y.failed = true;
    yaml_emitter_delete(&y.em);
    if (y.failed)
        out->len = start; /* not reached: every string of a loaded configuration is valid UTF-8 */
}
