/*
 * flags.c - the flag table engine (parse, --help, docs/flags.md, status values) and profstore's
 * own table. A flag added here shows in all four at once; tests/unit/config/test_flags.c checks
 * docs/flags.md against ps_flags_markdown and each default against its help text.
 */
#include "config/flags.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/timeutil.h"

#define HELP_COL 35 /* the column --help's texts start at */

static const ps_flag_t *find(const ps_flagset_t *fs, const char *name, size_t n)
{
    for (size_t i = 0; i < fs->n; i++)
        if (strncmp(fs->flags[i].name, name, n) == 0 && fs->flags[i].name[n] == '\0')
            return &fs->flags[i];
    return NULL;
}

int ps_flags_parse_size(const char *s, uint64_t *out)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || v < 0)
        return -1;
    static const struct {
        const char *sfx;
        double mul;
    } sfx[] = {{"", 1},          {"B", 1},           {"KB", 1e3},        {"MB", 1e6},
               {"GB", 1e9},      {"TB", 1e12},       {"KiB", 1024.0},    {"MiB", 1048576.0},
               {"GiB", 1073741824.0}, {"TiB", 1099511627776.0}, {"k", 1e3}, {"K", 1024.0}};
    for (size_t i = 0; i < sizeof(sfx) / sizeof(sfx[0]); i++)
        if (strcmp(end, sfx[i].sfx) == 0) {
            double r = v * sfx[i].mul;
            if (r > 9e18)
                return -1;
            *out = (uint64_t)r;
            return 0;
        }
    return -1;
}

void ps_flags_format_size(uint64_t v, char *buf, size_t size)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    snprintf(buf, size, "%llu%s", (unsigned long long)v, units[u]);
}

int ps_flag_set(const ps_flag_t *fl, const char *val, void *dst, ps_err_t *err)
{
    void *p = (char *)dst + fl->offset;
    switch (fl->type) {
    case PS_FLAG_BOOL:
        if (val != NULL && strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
            return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not true or false", fl->name, val);
        *(bool *)p = val == NULL || strcmp(val, "true") == 0;
        return 0;
    case PS_FLAG_STRING:
        *(const char **)p = val;
        return 0;
    case PS_FLAG_ENUM: {
        char list[256] = "";
        size_t len = 0;
        for (const char *const *c = fl->choices; *c; c++) {
            if (strcmp(val, *c) == 0) {
                *(const char **)p = val;
                return 0;
            }
            len += (size_t)snprintf(list + len, len < sizeof(list) ? sizeof(list) - len : 0, "%s%s",
                                    c == fl->choices ? "" : ", ", *c);
        }
        return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not one of %s", fl->name, val, list);
    }
    case PS_FLAG_UINT: {
        char *end;
        errno = 0;
        unsigned long long v = strtoull(val, &end, 10);
        if (errno || *end || end == val || val[0] == '-' || v < fl->min || v > fl->max)
            return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a %s", fl->name, val,
                              fl->bad ? fl->bad : "number in range");
        *(uint64_t *)p = v;
        return 0;
    }
    case PS_FLAG_SIZE:
        if (ps_flags_parse_size(val, (uint64_t *)p) != 0)
            return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a %s", fl->name, val,
                              fl->bad ? fl->bad : "size (e.g. 1048576, 32MiB, 1GB)");
        return 0;
    case PS_FLAG_DURATION: {
        if (strcmp(val, "0") == 0) {
            *(int64_t *)p = 0;
            return 0;
        }
        ps_err_t e;
        ps_err_clear(&e);
        if (ps_parse_duration(val, strlen(val), 0, (int64_t *)p, &e) != 0)
            return ps_err_set(err, PS_EINVAL, "--%s: %s", fl->name, e.msg);
        return 0;
    }
    case PS_FLAG_ACTION:
        return fl->action;
    case PS_FLAG_FLOAT: {
        char *end;
        errno = 0;
        double v = strtod(val, &end);
        bool bounded = fl->fmin != 0 || fl->fmax != 0;
        if (errno || *end || end == val || !isfinite(v) || (bounded && (v < fl->fmin || v > fl->fmax))) {
            if (fl->bad || !bounded)
                return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a %s", fl->name, val,
                                  fl->bad ? fl->bad : "number");
            return ps_err_set(err, PS_EINVAL, "--%s: \"%s\" is not a number in [%g, %g]", fl->name, val,
                              fl->fmin, fl->fmax);
        }
        *(double *)p = v;
        return 0;
    }
    case PS_FLAG_FUNC:
        return fl->set(fl, val, dst, err);
    }
    return ps_err_set(err, PS_EINTERNAL, "--%s: no such flag type", fl->name);
}

void ps_flags_defaults(const ps_flagset_t *fs, void *dst)
{
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        if (fl->def != NULL && fl->type != PS_FLAG_ACTION) {
            ps_err_t err;
            ps_err_clear(&err);
            if (ps_flag_set(fl, fl->def, dst, &err) != 0) { /* a wrong row: caught by test_flags */
                fprintf(stderr, "%s: default of %s\n", fs->prog, err.msg);
                abort();
            }
        }
    }
}

int ps_flags_parse(const ps_flagset_t *fs, int argc, char **argv, void *dst, ps_err_t *err)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i], *val = NULL;
        const ps_flag_t *fl = NULL;
        if (arg[0] == '-' && arg[1] != '-' && arg[1] != '\0' && arg[2] == '\0') { /* -n */
            for (size_t k = 0; k < fs->n && fl == NULL; k++)
                if (fs->flags[k].short_name == arg[1])
                    fl = &fs->flags[k];
            if (fl == NULL)
                return ps_err_set(err, PS_EINVAL, "unexpected argument \"%s\"", arg);
        } else {
            if (strncmp(arg, "--", 2) != 0)
                return ps_err_set(err, PS_EINVAL, "unexpected argument \"%s\"", arg);
            const char *name = arg + 2;
            size_t nl = strlen(name);
            const char *eq = strchr(name, '=');
            if (eq) {
                nl = (size_t)(eq - name);
                val = eq + 1;
                if (nl >= 64)
                    return ps_err_set(err, PS_EINVAL, "unknown flag \"%s\"", arg);
            }
            fl = find(fs, name, nl);
            if (fl == NULL)
                return ps_err_set(err, PS_EINVAL, "unknown flag --%.*s", (int)nl, name);
        }
        if (fl->type == PS_FLAG_ACTION)
            return fl->action;
        if (val == NULL && fl->type != PS_FLAG_BOOL) {
            if (i + 1 >= argc)
                return ps_err_set(err, PS_EINVAL, "flag --%s needs a value", fl->name);
            val = argv[++i];
        }
        int rc = ps_flag_set(fl, val, dst, err);
        if (rc != 0)
            return rc;
    }
    return 0;
}

/* "--name=META" as --help and docs/flags.md write it */
static void put_usage(const ps_flag_t *fl, ps_buf_t *out)
{
    if (fl->short_name)
        ps_buf_printf(out, "-%c, ", fl->short_name);
    ps_buf_printf(out, "--%s", fl->name);
    if (fl->metavar)
        ps_buf_printf(out, "=%s", fl->metavar);
}

void ps_flags_help(const ps_flagset_t *fs, ps_buf_t *out)
{
    ps_buf_printf(out, "%s", fs->head);
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        if (fl->help == NULL)
            continue;
        size_t start = out->len;
        ps_buf_printf(out, "  ");
        put_usage(fl, out);
        size_t w = out->len - start;
        ps_buf_printf(out, "%*s", w < HELP_COL ? (int)(HELP_COL - w) : 2, "");
        for (const char *h = fl->help; *h; h++) {
            ps_buf_putc(out, (uint8_t)*h);
            if (*h == '\n')
                ps_buf_printf(out, "%*s", HELP_COL, "");
        }
        ps_buf_putc(out, '\n');
    }
}

/* text in a Markdown table cell: line breaks become spaces, Markdown's punctuation is escaped */
static void put_md(ps_buf_t *out, const char *s)
{
    for (; *s; s++) {
        if (*s == '\n')
            ps_buf_putc(out, ' ');
        else {
            if (strchr("\\`*_|<>[]", *s))
                ps_buf_putc(out, '\\');
            ps_buf_putc(out, (uint8_t)*s);
        }
    }
}

void ps_flags_markdown(const ps_flagset_t *fs, ps_buf_t *out)
{
    ps_buf_printf(out,
                  "# Command-line flags\n"
                  "\n"
                  "<!-- Generated from the flag table (src/config/flags.c) by `%s --help-markdown > "
                  "docs/flags.md`;\n"
                  "     do not edit: tests/unit/config/test_flags.c fails when this file differs. -->\n"
                  "\n"
                  "Every flag is written `--flag=value` or `--flag value`. A flag without a value (`--agent`)\n"
                  "is a switch: `--agent`, `--agent=true` and `--agent=false` are all accepted.\n"
                  "Sizes take B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024);\n"
                  "durations take ms, s, m, h, d, w, y (`1h30m`). `GET /api/v1/status/flags` answers every\n"
                  "flag with the value in force.\n"
                  "\n"
                  "| Flag | Default | Meaning |\n"
                  "|------|---------|---------|\n",
                  fs->prog);
    for (size_t i = 0; i < fs->n; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        if (fl->help == NULL)
            continue;
        ps_buf_printf(out, "| `");
        put_usage(fl, out);
        ps_buf_printf(out, "` | ");
        if (fl->def != NULL)
            ps_buf_printf(out, "`%s`", fl->def);
        else if (fl->def_note != NULL)
            ps_buf_printf(out, "%s", fl->def_note);
        ps_buf_printf(out, " | ");
        if (fl->doc != NULL)
            ps_buf_printf(out, "%s", fl->doc);
        else
            put_md(out, fl->help);
        ps_buf_printf(out, " |\n");
    }
}

static int value_cmp(const void *a, const void *b)
{
    return strcmp(((const ps_flag_value_t *)a)->name, ((const ps_flag_value_t *)b)->name);
}

uint32_t ps_flags_values(const ps_flagset_t *fs, const void *dst, ps_flag_value_t *out, uint32_t cap)
{
    uint32_t n = 0;
    for (size_t i = 0; i < fs->n && n < cap; i++) {
        const ps_flag_t *fl = &fs->flags[i];
        if (fl->help == NULL || fl->type == PS_FLAG_ACTION)
            continue;
        const void *p = (const char *)dst + fl->offset;
        char v[64];
        const char *s = v;
        switch (fl->type) {
        case PS_FLAG_BOOL:
            s = *(const bool *)p ? "true" : "false";
            break;
        case PS_FLAG_STRING:
        case PS_FLAG_ENUM:
            s = *(const char *const *)p ? *(const char *const *)p : "";
            break;
        case PS_FLAG_UINT:
            snprintf(v, sizeof(v), "%llu", (unsigned long long)*(const uint64_t *)p);
            break;
        case PS_FLAG_SIZE:
            ps_flags_format_size(*(const uint64_t *)p, v, sizeof(v));
            break;
        case PS_FLAG_DURATION:
            ps_format_duration(*(const int64_t *)p, v, sizeof(v));
            break;
        case PS_FLAG_FLOAT:
            snprintf(v, sizeof(v), "%g", *(const double *)p);
            break;
        case PS_FLAG_ACTION:
        case PS_FLAG_FUNC: /* its value is the caller's to show */
            v[0] = '\0';
            break;
        }
        out[n].name = fl->name;
        out[n].value = ps_xstrndup(s, strlen(s));
        n++;
    }
    qsort(out, n, sizeof(out[0]), value_cmp);
    return n;
}

/* ---- profstore's flags, in --help order ---- */

#define OFF(field) offsetof(ps_flags_t, field)
#define POSITIVE "positive number in range"
#define MILLION "number in range (0 .. 1000000)"

static const char *const log_levels[] = {"debug", "info", "warn", "error", NULL};
static const char *const promql_compats[] = {"3", "2", NULL};
static const char *const features[] = {"promql-experimental-functions", NULL};

/* clang-format off */
static const ps_flag_t profstore_flags[] = {
    {.name = "listen", .type = PS_FLAG_STRING, .offset = OFF(listen), .metavar = "HOST:PORT", .def = "127.0.0.1:7070",
     .doc = "address to serve HTTP on; an address another process listens on (another profstore "
            "with another data directory, any program) is refused at start (exit 1, `cannot listen "
            "on 127.0.0.1:7070: the address is already in use by another process (another "
            "profstore?)`): the HTTP threads share the port with `SO_REUSEPORT` only among "
            "themselves",
     .help = "address to serve HTTP on (default 127.0.0.1:7070)"},
    {.name = "otlp.http.listen-address", .type = PS_FLAG_STRING, .offset = OFF(otlp_http_listen),
     .metavar = "HOST:PORT", .def_note = "none",
     .doc = "a second address to serve HTTP on, for OTLP/HTTP senders that use the OTLP port "
            "convention (`127.0.0.1:4318`: `POST /v1development/profiles`); the same server as "
            "`--listen` (every route, TLS and authentication of `--web.config.file`)",
     .help = "a second HTTP address, for OTLP/HTTP senders on the OTLP port (e.g. 127.0.0.1:4318; default none)"},
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = OFF(data_dir), .metavar = "DIR", .def = "./data",
     .doc = "LMDB data directory (created if missing)",
     .help = "LMDB data directory (default ./data)"},
    {.name = "config", .type = PS_FLAG_STRING, .offset = OFF(config), .metavar = "FILE",
     .def_note = "none",
     .doc = "YAML configuration file ([Scraping](configuration.md#scraping), "
            "[Forwarding](configuration.md#forwarding))",
     .help = "YAML configuration file (scrape configs; see docs/configuration.md)"},
    {.name = "retention", .type = PS_FLAG_DURATION, .offset = OFF(retention), .metavar = "DURATION", .def = "15d",
     .doc = "drop profiles older than this (Prometheus duration: `15d`, `36h`; `0` keeps "
            "everything); every query reads from now − retention on",
     .help = "how long to keep profiles, e.g. 15d, 36h (default 15d; 0 = forever)"},
    {.name = "log-level", .type = PS_FLAG_ENUM, .offset = OFF(log_level), .metavar = "LEVEL", .def = "info",
     .choices = log_levels,
     .doc = "`debug`, `info`, `warn` or `error` (logfmt on stderr)",
     .help = "debug, info, warn or error (default info)"},
    {.name = "max-body-size", .type = PS_FLAG_SIZE, .offset = OFF(max_body), .metavar = "SIZE", .def = "32MiB",
     .doc = "largest accepted request body; larger gets 413",
     .help = "largest accepted request body, e.g. 32MiB (default 32MiB)"},
    {.name = "max-inflated-size", .type = PS_FLAG_SIZE, .offset = OFF(max_inflated), .metavar = "SIZE",
     .def = "256MiB",
     .doc = "largest decompressed profile (gzip bomb guard)",
     .help = "largest decompressed profile (gzip bomb guard; default 256MiB)"},
    {.name = "max-inflated-total", .type = PS_FLAG_SIZE, .offset = OFF(max_inflated_total), .metavar = "SIZE",
     .def_note = "`--max-inflated-size`",
     .doc = "bytes being decompressed at once by all requests together (gunzip, snappy); past it a "
            "request gets 503 + `Retry-After`",
     .help = "bytes being decompressed at once by all requests together; past it\n"
             "a request gets 503 + Retry-After (default: --max-inflated-size)"},
    {.name = "threads", .type = PS_FLAG_UINT, .offset = OFF(threads), .metavar = "N", .min = 1, .max = 65535,
     .bad = POSITIVE, .def_note = "CPUs",
     .doc = "HTTP event-loop threads, 1 to 65535 (requests are parsed on them; pushes are decoded "
            "on the decode pool, `--ingest.decode-threads`, queries run on the query pool, "
            "`--query.max-concurrency`)",
     .help = "HTTP event loop threads (default: number of CPUs)"},
    {.name = "web.max-connections", .type = PS_FLAG_UINT, .offset = OFF(max_conns), .metavar = "N", .def = "512",
     .max = 1000000, .bad = MILLION,
     .doc = "HTTP connections open at once (Prometheus' flag); more wait to be accepted (`0` = no "
            "bound; at most 1000000); see [Connections](operations.md#connections)",
     .help = "most HTTP connections open at once; more wait to be accepted\n"
             "(default 512; 0 = no bound)"},
    {.name = "web.read-header-timeout", .type = PS_FLAG_DURATION, .offset = OFF(header_timeout),
     .metavar = "DURATION", .def = "10s",
     .doc = "a request's header must be complete this long after its first byte (else 408); a new "
            "connection silent this long is closed (`0` = none)",
     .help = "longest a request's header may take from its first byte; also how\n"
             "long a new connection may stay silent (default 10s; 0 = none)"},
    {.name = "web.body-idle-timeout", .type = PS_FLAG_DURATION, .offset = OFF(body_idle_timeout),
     .metavar = "DURATION", .def = "10s",
     .doc = "a request body may go this long without a byte (else 408; `0` = none)",
     .help = "longest a request body may go without a byte (default 10s; 0 = none)"},
    {.name = "web.body-min-rate", .type = PS_FLAG_SIZE, .offset = OFF(body_min_rate), .metavar = "SIZE",
     .def = "1KiB",
     .doc = "bytes/s a body must average once it has run longer than `--web.body-idle-timeout` "
            "(else 408; `0` = none)",
     .help = "bytes per second a request body must average after that grace\n"
             "(default 1KiB; 0 = none)"},
    {.name = "web.idle-timeout", .type = PS_FLAG_DURATION, .offset = OFF(idle_timeout), .metavar = "DURATION",
     .def = "2m",
     .doc = "a kept-alive connection waiting this long for its next request is closed (also "
            "HTTP/2's idle timeout), and so is one whose client has read nothing of its answer for "
            "this long (`0` = forever)",
     .help = "how long a kept-alive connection may wait for its next request,\n"
             "or a client read nothing of its answer (default 2m; 0 = forever)"},
    {.name = "agent", .type = PS_FLAG_BOOL, .offset = OFF(agent), .def = "false",
     .doc = "agent mode (Prometheus' word): scrape and accept pushes, forward everything "
            "([Forwarding](configuration.md#forwarding)), keep only the forwarding log; every "
            "route that reads the store (queries, series and label lists, remote read, Pyroscope's "
            "query APIs and querier, the debug and tsdb views) answers 400 `agent mode: queries go "
            "to the engine this profstore forwards to (forward: in the config)`",
     .help = "agent mode: scrape and accept pushes, forward everything (forward: in\n"
             "the config), keep only the forwarding log; queries answer 400"},
    {.name = "web.enable-h2c", .type = PS_FLAG_BOOL, .offset = OFF(h2c), .def = "false",
     .doc = "accept HTTP/2 over cleartext (prior knowledge, `Upgrade: h2c`); off, HTTP/2 is only "
            "negotiated by TLS (ALPN)",
     .help = "accept HTTP/2 over cleartext (prior knowledge and Upgrade: h2c); off:\n"
             "HTTP/2 only through TLS (ALPN)"},
    {.name = "web.http2-max-resets", .type = PS_FLAG_UINT, .offset = OFF(h2_max_resets), .metavar = "N",
     .def = "100", .max = 1000000, .bad = MILLION,
     .doc = "streams an HTTP/2 client may reset on one connection in 10 s; past it GOAWAY "
            "`ENHANCE_YOUR_CALM` and close (`0` = no cap; at most 1000000)",
     .help = "streams an HTTP/2 client may reset per connection in 10 s before it is\n"
             "sent GOAWAY and closed (default 100; 0 = no cap)"},
    {.name = "adhoc.max-profiles", .type = PS_FLAG_UINT, .offset = OFF(adhoc_max_profiles), .metavar = "N",
     .def = "1000", .min = 1, .max = 1000000, .bad = POSITIVE,
     .doc = "ad hoc profiles kept (uploads to share, `adhocprofiles.v1`); an upload past it drops the oldest "
            "(1 to 1000000)",
     .help = "ad hoc profiles kept; an upload past it drops the oldest (default 1000)"},
    {.name = "adhoc.max-bytes", .type = PS_FLAG_SIZE, .offset = OFF(adhoc_max_bytes), .metavar = "SIZE",
     .def = "256MiB",
     .doc = "bytes of the ad hoc profiles' files kept; an upload past it drops the oldest, a larger file is refused",
     .help = "bytes of ad hoc profiles kept; an upload past it drops the oldest\n(default 256MiB)"},
    {.name = "grpc.listen-address", .type = PS_FLAG_STRING, .offset = OFF(grpc_listen), .metavar = "HOST:PORT",
     .def_note = "none: off",
     .doc = "address of the gRPC listener (OTLP's gRPC port is 4317: `127.0.0.1:4317`), h2c or TLS "
            "with `--web.config.file`'s certificate and credentials; see [gRPC](api.md#grpc)",
     .help = "address of the gRPC listener (OTLP's port: 127.0.0.1:4317; default\n"
             "none: off); TLS and credentials from --web.config.file"},
    {.name = "grpc.max-recv-msg-size", .type = PS_FLAG_SIZE, .offset = OFF(grpc_max_msg), .metavar = "SIZE",
     .def = "16MiB",
     .doc = "largest gRPC request message, compressed and after gunzip; larger gets "
            "`RESOURCE_EXHAUSTED`",
     .help = "largest gRPC request message, compressed and decompressed (default 16MiB)"},
    {.name = "grpc.max-concurrent-streams", .type = PS_FLAG_UINT, .offset = OFF(grpc_max_streams),
     .metavar = "N", .def = "100", .min = 1, .max = 1000000, .bad = POSITIVE,
     .doc = "calls one gRPC connection may have open at once (HTTP/2 "
            "`SETTINGS_MAX_CONCURRENT_STREAMS`)",
     .help = "calls one gRPC connection may have open at once (default 100)"},
    {.name = "grpc.max-connections", .type = PS_FLAG_UINT, .offset = OFF(grpc_max_conns), .metavar = "N",
     .def = "1024", .min = 1, .max = 1000000, .bad = POSITIVE,
     .doc = "gRPC connections open at once; more are closed as they are accepted",
     .help = "gRPC connections open at once; more are closed (default 1024)"},
    {.name = "grpc.idle-timeout", .type = PS_FLAG_DURATION, .offset = OFF(grpc_idle_timeout),
     .metavar = "DURATION", .def = "5m",
     .doc = "a gRPC connection none of whose calls runs and whose client sent nothing (not even a "
            "PING) this long gets GOAWAY and is closed (`0` = 5m)",
     .help = "how long a gRPC connection may stay silent with no call running\n"
             "(default 5m)"},
    {.name = "query.max-series", .type = PS_FLAG_UINT, .offset = OFF(max_series), .metavar = "N", .def = "10000",
     .min = 1, .max = 10000000, .bad = POSITIVE,
     .doc = "series one selector may select (more is a 422; 1 to 10000000)",
     .help = "series one selector may select (default 10000)"},
    /* Prometheus' remote-read limits: 0 means no limit, except for the frame size */
    {.name = "storage.remote.read-sample-limit", .type = PS_FLAG_UINT, .offset = OFF(read_sample_limit),
     .metavar = "N", .def = "50000000", .max = 1000000000000ull,
     .doc = "samples one SAMPLES remote-read query may return (`0` = no limit; streamed reads have "
            "none, as in Prometheus)",
     .help = "samples one SAMPLES remote-read query may return (default\n"
             "50000000; 0 = no limit; streamed reads have none, as in Prometheus)"},
    {.name = "storage.remote.read-concurrent-limit", .type = PS_FLAG_UINT, .offset = OFF(read_concurrent_limit),
     .metavar = "N", .def = "10", .max = 1000000000,
     .doc = "remote reads served at once (`0` = no limit)",
     .help = "remote reads served at once (default 10; 0 = no limit)"},
    {.name = "storage.remote.read-max-bytes-in-frame", .type = PS_FLAG_UINT, .offset = OFF(read_max_frame),
     .metavar = "N", .def = "1048576", .min = 1, .max = 1000000000,
     .doc = "bytes of chunks in one streamed remote-read frame before it is cut (at least 1)",
     .help = "bytes of one streamed remote-read frame before it is cut\n"
             "(default 1048576)"},
    {.name = "query.timeout", .type = PS_FLAG_DURATION, .offset = OFF(query_timeout), .metavar = "DURATION",
     .def = "2m",
     .doc = "longest a query may take from its arrival, queue included: then it stops and answers "
            "503 `errorType: timeout` (Connect: `deadline_exceeded`); PromQL's smaller `timeout` "
            "parameter and Connect-Timeout-Ms win",
     .help = "longest a query may take, queue included: 503 after it (default 2m)"},
    {.name = "query.max-samples", .type = PS_FLAG_UINT, .offset = OFF(query_max_samples), .metavar = "N",
     .def = "50000000", .min = 1, .max = 1000000000000ull, .bad = POSITIVE,
     .doc = "samples a query may load at once (Prometheus' flag; more is a 422): PromQL's loaded "
            "samples, subquery points and answered points; a profile merge's stack samples (each "
            "profile's (stack, value) pairs it reads)",
     .help = "samples a query may load at once: PromQL samples, the stack samples\n"
             "a profile merge reads (default 50000000)"},
    {.name = "query.max-memory", .type = PS_FLAG_SIZE, .offset = OFF(query_max_memory), .metavar = "SIZE",
     .def_note = "a quarter of the RAM (or of the cgroup's `memory.max` if lower), in whole MiB, "
                 "at least 64MiB",
     .doc = "memory one PromQL query may hold: its loaded series, its subqueries' points, its "
            "scratch and its answer; past it the query stops with a 422 naming the flag (`0`: no "
            "limit). With `--query.max-concurrency` queries at once, up to that many times this",
     .help = "memory one PromQL query may hold (loaded samples, subquery points,\n"
             "its answer): past it 422 (default: a quarter of the RAM, or of the\n"
             "cgroup's memory.max if lower, in MiB; 0 = no limit)"},
    {.name = "promql.compat", .type = PS_FLAG_ENUM, .offset = OFF(promql_compat), .metavar = "VERSION", .def = "3",
     .choices = promql_compats,
     .doc = "the Prometheus whose PromQL semantics queries follow: `3` (Prometheus 3: range selectors "
            "and the lookback left-open, `(t - range, t]`; `double_exponential_smoothing`, no "
            "`holt_winters`) or `2` (Prometheus 2.42: `[t - range, t]`, `holt_winters`)",
     .help = "PromQL semantics of Prometheus 3 or 2 (default 3; 2: 2.42's range\n"
             "selectors and lookback closed on the left, holt_winters)"},
    {.name = "enable-feature", .type = PS_FLAG_ENUM, .offset = OFF(enable_feature), .metavar = "FEATURE",
     .def_note = "none",
     .choices = features,
     .doc = "Prometheus' flag, with the one feature profstore has: `promql-experimental-functions` "
            "lets PromQL call Prometheus 3's experimental functions that profstore evaluates "
            "(`double_exponential_smoothing`, which was 2.x's `holt_winters`, `mad_over_time`, "
            "`ts_of_first_over_time`, `ts_of_last_over_time`, `ts_of_max_over_time`, "
            "`ts_of_min_over_time`, `sort_by_label`, `sort_by_label_desc`); without it they are "
            "refused as in Prometheus 3 (`function \"double_exponential_smoothing\" is not enabled`)",
     .help = "promql-experimental-functions: PromQL's experimental functions\n"
             "(double_exponential_smoothing, mad_over_time, ts_of_*_over_time,\n"
             "sort_by_label, sort_by_label_desc)"},
    /* threads 0 (no pool: queries on the HTTP threads) .. 256 (LMDB readers) */
    {.name = "query.max-concurrency", .type = PS_FLAG_UINT, .offset = OFF(query_max_concurrency), .metavar = "N",
     .def = "20", .max = 256,
     .doc = "query threads (at most 256; scheduled `SCHED_IDLE`, below the HTTP and writer threads "
            "— and below other processes: on a host kept busy by others, queries get little CPU): "
            "queries run there, not on the HTTP threads, this many at once; more wait in a queue "
            "(up to 1,024, then 503); `0` runs queries on the HTTP threads (no pool)",
     .help = "queries run at once on the query threads; more wait (default 20;\n"
             "at most 256; 0 = no query threads: queries run on the HTTP threads)"},
    {.name = "query.cpus", .type = PS_FLAG_UINT, .offset = OFF(query_cpus), .metavar = "N", .max = 256,
     .def_note = "CPUs − 1 (at least 1)",
     .doc = "of the running queries, how many compute at the same time; the others sleep until "
            "their turn (5 ms turns, oldest first), so queries leave a CPU to the HTTP threads, "
            "the decoders and the writer (`0`: no limit; at most 256). Gauges "
            "`profstore_query_computing`, `profstore_query_waiting_for_cpu`",
     .help = "query threads that compute at the same time; the other running\n"
             "queries wait their turn (5 ms slices), so that queries leave CPUs to\n"
             "ingest and health checks (default: the CPUs less one, at least 1;\n"
             "0 = no limit)"},
    {.name = "ingest.decode-threads", .type = PS_FLAG_UINT, .offset = OFF(decode_threads), .metavar = "N",
     .max = 256, .def_note = "CPUs (at most 256)",
     .doc = "threads that decode writes (pushes, `/ingest`, Connect push, remote write: gunzip, "
            "snappy, protobuf, the ingest build), so the HTTP threads stay free; at nice 5, below "
            "the HTTP threads and the writer; at most 256; `0` decodes on the HTTP threads",
     .help = "threads that decode pushes and remote writes (gunzip, snappy, pprof),\n"
             "so the HTTP threads stay free; at nice 5 (default: the CPUs; at most\n"
             "256; 0 = decode on the HTTP threads)"},
    {.name = "ingest.decode-queue-max-bytes", .type = PS_FLAG_SIZE, .offset = OFF(decode_queue_bytes),
     .metavar = "SIZE", .def = "32MiB", /* web/qpool.h: PS_DPOOL_DEFAULT_BYTES */
     .doc = "bodies waiting for a decode thread (one is always taken); past it a write gets 429 "
            "(remote write 503) with `Retry-After`",
     .help = "bodies waiting for a decode thread; past it writes get 429\n"
             "(remote write 503) with Retry-After (default 32MiB)"},
    {.name = "query.max-regex-steps", .type = PS_FLAG_UINT, .offset = OFF(query_max_regex_steps), .metavar = "N",
     .def = "1000000000", .min = 1, .max = 1000000000000ull,
     .doc = "PCRE2 steps one query's regex matchers may take in all (more is a 422 naming the "
            "matcher; see [Query](api.md#query))",
     .help = "PCRE2 steps one query's regex matchers may take (default 1000000000)"},
    {.name = "scrape.max-targets", .type = PS_FLAG_UINT, .offset = OFF(scrape_max_targets), .metavar = "N",
     .def = "50000", .max = 1000000, .bad = MILLION,
     .doc = "targets (target × profile) built over all jobs, and as many dropped ones kept for "
            "`/api/v1/targets`; past it the rest are left out and logged (`0` = no limit; at most "
            "1000000)",
     .help = "targets (target x profile) built over all jobs, and as many dropped\n"
             "ones kept; past it the rest are left out, logged (default 50000;\n"
             "0 = no limit; at most 1000000)"},
    {.name = "storage.max-size", .type = PS_FLAG_SIZE, .offset = OFF(max_size), .metavar = "SIZE", .def = "256GiB",
     .doc = "LMDB map size: the most the store may grow to",
     .help = "most the LMDB store may grow to (default 256GiB)"},
    {.name = "storage.compact-max-profiles", .type = PS_FLAG_UINT, .offset = OFF(compact_max), .metavar = "N",
     .def = "120", .min = 1, .max = 65535, .bad = POSITIVE,
     .doc = "fold a series' head records into a chunk once it holds this many (1 to 65535)",
     .help = "fold a series' head into a chunk at N profiles (default 120)"},
    {.name = "storage.compact-window", .type = PS_FLAG_DURATION, .offset = OFF(compact_window),
     .metavar = "DURATION", .def = "2h",
     .doc = "… or once its head spans this much time, or the series got nothing for this long "
            "(`0` = only by count)",
     .help = "... or once the head spans this much time, or the series got\n"
             "no profile for this long (default 2h; 0 = only by count)"},
    {.name = "storage.compact-interval", .type = PS_FLAG_DURATION, .offset = OFF(compact_interval),
     .metavar = "DURATION", .def = "10s",
     .doc = "how often to look for heads due by age",
     .help = "how often to look for heads due by age (default 10s)"},
    {.name = "storage.retention-interval", .type = PS_FLAG_DURATION, .offset = OFF(retention_interval),
     .metavar = "DURATION", .def = "1m",
     .doc = "how often to apply retention",
     .help = "how often to apply retention (default 1m)"},
    {.name = "storage.commit-delay", .type = PS_FLAG_DURATION, .offset = OFF(commit_delay), .metavar = "DURATION",
     .def = "0s",
     .doc = "group commit: the first write into an idle writer commits at once, and the writes that "
            "arrive while a commit (fsync) runs share the next one. A duration > 0 also holds a "
            "commit until this long after the last one unless a batch is full (512) or the "
            "remote-write requests queued hold 1,000 samples. Scraped profiles, which nobody waits "
            "on, wait up to 50 ms when nothing else is queued",
     .help = "hold a commit (fsync) until this long after the last one unless a\n"
             "batch is full (default 0s: commit at once; writes arriving during a\n"
             "commit share the next)"},
    {.name = "storage.write-queue-max-bytes", .type = PS_FLAG_SIZE, .offset = OFF(queue_bytes), .metavar = "SIZE",
     .def = "256MiB",
     .doc = "bytes of decoded writes waiting for the writer; past it pushes get 429 (remote write "
            "503) + `Retry-After`",
     .help = "bytes of decoded writes waiting for the writer; past it pushes\n"
             "get 429 (remote write 503) with Retry-After (default 256MiB)"},
    {.name = "storage.write-queue-max-items", .type = PS_FLAG_UINT, .offset = OFF(queue_items), .metavar = "N",
     .def = "8192", .min = 1, .max = 1000000, .bad = POSITIVE,
     .doc = "write requests waiting for the writer, the same way (1 to 1000000)",
     .help = "write requests waiting for the writer, the same way (default 8192)"},
    {.name = "storage.disk-reserve", .type = PS_FLAG_SIZE, .offset = OFF(disk_reserve), .metavar = "SIZE",
     .def = "32MiB",
     .doc = "space held in `<data-dir>/space.reserve`, given up when the disk is full so retention "
            "and compaction can run (writes get 507 meanwhile and resume once it can be taken "
            "back); at most 1/16 of the disk (a larger one is sized down, and logged); `0` = none. "
            "A disk already full at start is logged (`writes are refused from the start`): reads "
            "go on, writes get 507 until space returns",
     .help = "space kept in <data-dir>/space.reserve and given up when the disk\n"
             "is full, for retention and compaction; writes (507 meanwhile)\n"
             "resume once it can be taken back (default 32MiB, at most 1/16\n"
             "of the disk; 0 = none)"},
    {.name = "storage.future-grace", .type = PS_FLAG_DURATION, .offset = OFF(future_grace), .metavar = "DURATION",
     .def = "10m", /* Mimir's creation grace period */
     .doc = "refuse profiles and samples more than this in the future (400); `0` takes any time",
     .help = "refuse profiles and samples more than this in the future (400;\n"
             "default 10m; 0 = any time)"},
    {.name = "storage.no-sync", .type = PS_FLAG_BOOL, .offset = OFF(nosync), .def = "false",
     .doc = "no fsync on commit: fast and **not durable**; for benchmarks only",
     .help = "no fsync on commit: faster, NOT durable (benchmarks only)"},
    {.name = "storage.check", .type = PS_FLAG_BOOL, .offset = OFF(check), .def = "false",
     .doc = "read every record of `--data-dir` (read-only), print what is damaged and exit: 0 "
            "none, 1 damage, 2 could not check ([a damaged store](operations.md#a-damaged-store))",
     .help = "read every record of --data-dir (read-only), print what is damaged,\n"
             "and exit: 0 no damage, 1 damage, 2 could not check"},
    {.name = "symbols.dir", .type = PS_FLAG_STRING, .offset = OFF(symbols_dir), .metavar = "DIR",
     .def_note = "none: off",
     .doc = "symbolize native frames when read (locations with an address and a build id, no lines: "
            "OTLP, pprof) from the debug files under DIR, laid out as `/usr/lib/debug`: "
            "`DIR/.build-id/ab/cdef….debug` ([Symbols](operations.md#symbols))",
     .help = "symbolize native frames when read from the debug files under DIR\n"
             "(DIR/.build-id/ab/cdef....debug, as /usr/lib/debug; default none: off)"},
    {.name = "debuginfo.max-file-bytes", .type = PS_FLAG_SIZE, .offset = OFF(debuginfo_max_file), .metavar = "SIZE",
     .def = "256MiB",
     .doc = "largest debug file taken by the upload service (`debuginfo.v1alpha1`, what Grafana Alloy's "
            "`pyroscope.ebpf` uploads; 413 past it). Such a body is read whole, in memory, before it is "
            "stored; only the upload path reads past `--max-body-size`, every other route refuses a "
            "larger body while it arrives ([Symbols](operations.md#symbols))",
     .help = "largest uploaded debug file (debuginfo.v1alpha1; 413 past it;\n"
             "default 256MiB)"},
    {.name = "debuginfo.max-bytes", .type = PS_FLAG_SIZE, .offset = OFF(debuginfo_max_bytes), .metavar = "SIZE",
     .def = "10GiB",
     .doc = "disk the uploaded debug files (`<data-dir>/debuginfo/`, with their metadata) may use; an "
            "upload past it is refused (507), `ShouldInitiateUpload` answers `resource_exhausted` once it is reached",
     .help = "disk the uploaded debug files may use (<data-dir>/debuginfo;\n"
             "507 past it; default 10GiB)"},
    {.name = "debuginfod.url", .type = PS_FLAG_STRING, .offset = OFF(debuginfod_urls), .metavar = "URLS",
     .def_note = "none: off",
     .doc = "fetch the debug files of build ids that neither `--symbols.dir` nor the uploads hold from these debuginfod servers "
            "(base URLs separated by spaces, as `DEBUGINFOD_URLS`: `http://`, `https://` or "
            "`file://`; all are asked at once and the first answer is kept), in the background: a "
            "read never waits for a server ([Symbols](operations.md#symbols))",
     .help = "fetch missing debug files from these debuginfod servers (base URLs\n"
             "separated by spaces, as DEBUGINFOD_URLS), in the background\n"
             "(default none: off)"},
    {.name = "debuginfod.cache-dir", .type = PS_FLAG_STRING, .offset = OFF(debuginfod_cache), .metavar = "DIR",
     .def_note = "`<data-dir>/debuginfod`",
     .doc = "where fetched debug files are kept (`DIR/.build-id/ab/cdef….debug`, found again after a "
            "restart; never trimmed) and libdebuginfod's download area",
     .help = "where fetched debug files are kept (default <data-dir>/debuginfod)"},
    {.name = "debuginfod.timeout", .type = PS_FLAG_DURATION, .offset = OFF(debuginfod_timeout),
     .metavar = "DURATION", .def = "2m",
     .doc = "one fetch's whole time (connecting, all servers, the transfer), ended within a second "
            "after it (`0` = 2m); the build id is asked again a minute later (one no server has: 10 minutes later)",
     .help = "how long one debuginfod fetch may take (default 2m)"},
    {.name = "web.config.file", .type = PS_FLAG_STRING, .offset = OFF(web_config), .metavar = "FILE",
     .def_note = "none",
     .doc = "TLS and authentication, Prometheus' web config format plus bearer tokens ([TLS and "
            "authentication](configuration.md#tls-and-authentication---webconfigfile)); re-read on "
            "`SIGHUP` and `POST /-/reload`",
     .help = "TLS and authentication (Prometheus' web config format + bearer_tokens;\n"
             "see docs/configuration.md); re-read on SIGHUP and POST /-/reload"},
    {.name = "web.enable-admin-api", .type = PS_FLAG_BOOL, .offset = OFF(admin_api), .def = "false",
     .doc = "serve `/api/v1/admin/*` and `/api/v1/debug/*`; off, they answer 503 `admin APIs "
            "disabled` (Prometheus 2.42's answer)",
     .help = "serve /api/v1/admin/* and /api/v1/debug/* (default off: 503)"},
    {.name = "web.enable-lifecycle", .type = PS_FLAG_BOOL, .offset = OFF(lifecycle), .def = "false",
     .doc = "serve `POST /-/reload`; off, it answers 403 `Lifecycle API is not enabled.` "
            "(Prometheus'); `SIGHUP` always reloads",
     .help = "serve POST /-/reload (default off: 403)"},
    {.name = "help", .type = PS_FLAG_ACTION, .action = PS_FLAGS_HELP, .help = "this text"},
    {.name = "version", .type = PS_FLAG_ACTION, .action = PS_FLAGS_VERSION, .help = "print the version"},
    {.name = "h", .type = PS_FLAG_ACTION, .action = PS_FLAGS_HELP},                   /* hidden */
    {.name = "help-markdown", .type = PS_FLAG_ACTION, .action = PS_FLAGS_MARKDOWN}, /* docs/flags.md */
};
/* clang-format on */

const ps_flagset_t ps_profstore_flagset = {
    .prog = "profstore",
    .head = "usage: profstore [flags]\n"
            "\n"
            "A continuous-profiling store: ingests pprof profiles, keeps them in LMDB, answers label queries.\n"
            "\n"
            "Flags (--flag=value or --flag value):\n",
    .flags = profstore_flags,
    .n = sizeof(profstore_flags) / sizeof(profstore_flags[0]),
};

/* --query.max-memory's default: a quarter of the RAM, or of the cgroup's (v2) memory.max when
 * that is lower, rounded down to MiB (at least 64 MiB) */
static uint64_t default_query_memory(void)
{
    long pages = sysconf(_SC_PHYS_PAGES), psize = sysconf(_SC_PAGESIZE);
    uint64_t ram = pages > 0 && psize > 0 ? (uint64_t)pages * (uint64_t)psize : 4ull << 30;
    FILE *fp = fopen("/sys/fs/cgroup/memory.max", "r");
    if (fp) {
        unsigned long long v;
        if (fscanf(fp, "%llu", &v) == 1 && v > 0 && v < ram)
            ram = v;
        fclose(fp);
    }
    uint64_t q = (ram / 4) & ~((1ull << 20) - 1);
    return q < (64ull << 20) ? 64ull << 20 : q;
}

void ps_profstore_flags_init(ps_flags_t *f)
{
    memset(f, 0, sizeof(*f));
    ps_flags_defaults(&ps_profstore_flagset, f);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    f->threads = ncpu > 0 ? (uint64_t)ncpu : 1;
    f->decode_threads = ncpu < 1 ? 1 : ncpu > 256 ? 256 : (uint64_t)ncpu;
    f->query_cpus = ncpu <= 2 ? 1 : ncpu > 257 ? 256 : (uint64_t)ncpu - 1;
    f->query_max_memory = default_query_memory();
}

int ps_profstore_flags_parse(ps_flags_t *f, int argc, char **argv, ps_err_t *err)
{
    int rc = ps_flags_parse(&ps_profstore_flagset, argc, argv, f, err);
    if (rc == 0 && f->max_inflated_total == 0)
        f->max_inflated_total = f->max_inflated;
    return rc;
}
