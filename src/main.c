/*
 * main.c - profstore: flags, start-up, signals, clean shutdown.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "config/config.h"
#include "config/webconfig.h"
#include "forward/forward.h"
#include "scrape/scrape.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "proto/gzip.h"
#include "storage/store.h"
#include "web/server.h"
#include "ingest/ingest.h"

static const char usage[] =
    "usage: profstore [flags]\n"
    "\n"
    "A continuous-profiling store: ingests pprof profiles, keeps them in LMDB, answers label queries.\n"
    "\n"
    "Flags (--flag=value or --flag value):\n"
    "  --listen=HOST:PORT               address to serve HTTP on (default 127.0.0.1:7070)\n"
    "  --data-dir=DIR                   LMDB data directory (default ./data)\n"
    "  --config=FILE                    YAML configuration file (scrape configs; see README)\n"
    "  --retention=DURATION             how long to keep profiles, e.g. 15d, 36h (default 15d; 0 = forever)\n"
    "  --log-level=LEVEL                debug, info, warn or error (default info)\n"
    "  --max-body-size=SIZE             largest accepted request body, e.g. 32MiB (default 32MiB)\n"
    "  --max-inflated-size=SIZE         largest decompressed profile (gzip bomb guard; default 256MiB)\n"
    "  --max-inflated-total=SIZE        bytes being decompressed at once by all requests together; past it\n"
    "                                   a request gets 503 + Retry-After (default: --max-inflated-size)\n"
    "  --threads=N                      HTTP event loop threads (default: number of CPUs)\n"
    "  --web.max-connections=N          most HTTP connections open at once; more wait to be accepted\n"
    "                                   (default 512; 0 = no bound)\n"
    "  --web.read-header-timeout=DURATION  longest a request's header may take from its first byte; also how\n"
    "                                   long a new connection may stay silent (default 10s; 0 = none)\n"
    "  --web.body-idle-timeout=DURATION longest a request body may go without a byte (default 10s; 0 = none)\n"
    "  --web.body-min-rate=SIZE         bytes per second a request body must average after that grace\n"
    "                                   (default 1KiB; 0 = none)\n"
    "  --web.idle-timeout=DURATION      how long a kept-alive connection may wait for its next request,\n"
    "                                   or a client read nothing of its answer (default 2m; 0 = forever)\n"
    "  --agent                          agent mode: scrape and accept pushes, forward everything (forward: in\n"
    "                                   the config), keep only the forwarding log; queries answer 400\n"
    "  --web.enable-h2c                 accept HTTP/2 over cleartext (prior knowledge and Upgrade: h2c); off:\n"
    "                                   HTTP/2 only through TLS (ALPN)\n"
    "  --web.http2-max-resets=N         streams an HTTP/2 client may reset per connection in 10 s before it is\n"
    "                                   sent GOAWAY and closed (default 100; 0 = no cap)\n"
    "  --query.max-series=N             series one selector may select (default 10000)\n"
    "  --storage.remote.read-sample-limit=N  samples one SAMPLES remote-read query may return (default\n"
    "                                   50000000; 0 = no limit; streamed reads have none, as in Prometheus)\n"
    "  --storage.remote.read-concurrent-limit=N  remote reads served at once (default 10; 0 = no limit)\n"
    "  --storage.remote.read-max-bytes-in-frame=N  bytes of one streamed remote-read frame before it is cut\n"
    "                                   (default 1048576)\n"
    "  --query.timeout=DURATION         longest a query may take, queue included: 503 after it (default 2m)\n"
    "  --query.max-samples=N            samples a query may load at once: PromQL samples, the stack samples\n"
    "                                   a profile merge reads (default 50000000)\n"
    "  --query.max-memory=SIZE          memory one PromQL query may hold (loaded samples, subquery points,\n"
    "                                   its answer): past it 422 (default: a quarter of the RAM, or of the\n"
    "                                   cgroup's memory.max if lower, in MiB; 0 = no limit)\n"
    "  --query.max-concurrency=N        queries run at once on the query threads; more wait (default 20;\n"
    "                                   at most 256; 0 = no query threads: queries run on the HTTP threads)\n"
    "  --query.cpus=N                   query threads that compute at the same time; the other running\n"
    "                                   queries wait their turn (5 ms slices), so that queries leave CPUs to\n"
    "                                   ingest and health checks (default: the CPUs less one, at least 1;\n"
    "                                   0 = no limit)\n"
    "  --ingest.decode-threads=N        threads that decode pushes and remote writes (gunzip, snappy, pprof),\n"
    "                                   so the HTTP threads stay free; at nice 5 (default: the CPUs; at most\n"
    "                                   256; 0 = decode on the HTTP threads)\n"
    "  --ingest.decode-queue-max-bytes=SIZE  bodies waiting for a decode thread; past it writes get 429\n"
    "                                   (remote write 503) with Retry-After (default 32MiB)\n"
    "  --query.max-regex-steps=N        PCRE2 steps one query's regex matchers may take (default 1000000000)\n"
    "  --scrape.max-targets=N           targets (target x profile) built over all jobs, and as many dropped\n"
    "                                   ones kept; past it the rest are left out, logged (default 50000;\n"
    "                                   0 = no limit; at most 1000000)\n"
    "  --storage.max-size=SIZE          most the LMDB store may grow to (default 256GiB)\n"
    "  --storage.compact-max-profiles=N fold a series' head into a chunk at N profiles (default 120)\n"
    "  --storage.compact-window=DURATION  ... or once the head spans this much time, or the series got\n"
    "                                   no profile for this long (default 2h; 0 = only by count)\n"
    "  --storage.compact-interval=DURATION  how often to look for heads due by age (default 10s)\n"
    "  --storage.retention-interval=DURATION  how often to apply retention (default 1m)\n"
    "  --storage.commit-delay=DURATION  at most one commit (fsync) per this interval unless a batch is full\n"
    "                                   (group commit; default 10ms; 0 = commit at once)\n"
    "  --storage.write-queue-max-bytes=SIZE  bytes of decoded writes waiting for the writer; past it pushes\n"
    "                                   get 429 (remote write 503) with Retry-After (default 256MiB)\n"
    "  --storage.write-queue-max-items=N  write requests waiting for the writer, the same way (default 8192)\n"
    "  --storage.disk-reserve=SIZE      space kept in <data-dir>/space.reserve and given up when the disk\n"
    "                                   is full, for retention and compaction; writes (507 meanwhile)\n"
    "                                   resume once it can be taken back (default 32MiB, at most 1/16\n"
    "                                   of the disk; 0 = none)\n"
    "  --storage.future-grace=DURATION  refuse profiles and samples more than this in the future (400;\n"
    "                                   default 10m; 0 = any time)\n"
    "  --storage.no-sync                no fsync on commit: faster, NOT durable (benchmarks only)\n"
    "  --storage.check                  read every record of --data-dir (read-only), print what is damaged,\n"
    "                                   and exit: 0 no damage, 1 damage, 2 could not check\n"
    "  --web.config.file=FILE           TLS and authentication (Prometheus' web config format + bearer_tokens;\n"
    "                                   see README); re-read on SIGHUP and POST /-/reload\n"
    "  --web.enable-admin-api           serve /api/v1/admin/* and /api/v1/debug/* (default off: 503)\n"
    "  --web.enable-lifecycle           serve POST /-/reload (default off: 403)\n"
    "  --help                           this text\n"
    "  --version                        print the version\n";

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

static int parse_size(const char *s, uint64_t *out)
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

typedef struct flags {
    const char *listen, *data_dir, *config, *log_level, *web_config;
    int64_t retention, compact_window, compact_interval, retention_interval, commit_delay;
    uint64_t max_body, max_inflated, max_size, compact_max, threads, max_series;
    /* the write side under overload and on a full disk */
    int64_t future_grace;
    uint64_t max_inflated_total, queue_bytes, queue_items, disk_reserve;
    uint64_t read_sample_limit, read_concurrent_limit, read_max_frame;
    int64_t query_timeout;
    uint64_t query_max_concurrency, query_max_regex_steps; /* the query pool (web/qpool.c) */
    uint64_t decode_threads, decode_queue_bytes;             /* the decode pool (web/qpool.c) */
    uint64_t query_cpus;                                      /* query threads computing at once */
    uint64_t query_max_samples, query_max_memory;
    int nosync, admin_api, lifecycle;
    uint64_t max_conns, body_min_rate, h2_max_resets, scrape_max_targets;
    int64_t header_timeout, body_idle_timeout, idle_timeout;
    int h2c;
    int agent;
    int check; /* --storage.check */
} flags_t;

static void die_usage(const char *fmt, const char *a, const char *b)
{
    fprintf(stderr, "profstore: ");
    fprintf(stderr, fmt, a, b);
    fprintf(stderr, "\nRun profstore --help for the flags.\n");
    exit(2);
}

static void parse_flags(int argc, char **argv, flags_t *f)
{
    for (int i = 1; i < argc; i++) {
        const char *arg = argv[i];
        if (strncmp(arg, "--", 2) != 0)
            die_usage("unexpected argument \"%s\"%s", arg, "");
        const char *name = arg + 2, *val = NULL;
        char nbuf[64];
        const char *eq = strchr(name, '=');
        if (eq) {
            size_t nl = (size_t)(eq - name);
            if (nl >= sizeof(nbuf))
                die_usage("unknown flag \"%s\"%s", arg, "");
            memcpy(nbuf, name, nl);
            nbuf[nl] = 0;
            name = nbuf;
            val = eq + 1;
        }
        if (strcmp(name, "help") == 0 || strcmp(name, "h") == 0) {
            fputs(usage, stdout);
            exit(0);
        }
        if (strcmp(name, "version") == 0) {
            printf("profstore version 0.1.0\n");
            exit(0);
        }
        if (strcmp(name, "storage.no-sync") == 0) {
            f->nosync = 1;
            continue;
        }
        if (strcmp(name, "storage.check") == 0) {
            f->check = 1;
            continue;
        }
        if (strcmp(name, "web.enable-admin-api") == 0 || strcmp(name, "web.enable-lifecycle") == 0) {
            if (val != NULL && strcmp(val, "true") != 0 && strcmp(val, "false") != 0)
                die_usage("--%s: \"%s\" is not true or false", name, val);
            *(name[11] == 'a' ? &f->admin_api : &f->lifecycle) = val == NULL || strcmp(val, "true") == 0;
            continue;
        }
        if (strcmp(name, "web.enable-h2c") == 0) {
            f->h2c = 1;
            continue;
        }
        if (strcmp(name, "agent") == 0) {
            f->agent = 1;
            continue;
        }
        static const char *known[] = {"listen", "data-dir", "config", "log-level", "retention",
                                      "max-inflated-total", "storage.write-queue-max-bytes",
                                      "storage.write-queue-max-items", "storage.future-grace", "storage.disk-reserve",
                                      "storage.compact-window", "storage.compact-interval",
                                      "storage.retention-interval", "max-body-size", "max-inflated-size",
                                      "storage.max-size", "storage.compact-max-profiles", "threads",
                                      "query.max-series", "storage.commit-delay", "query.timeout",
                                      "query.max-samples", "query.max-concurrency", "query.max-regex-steps", "query.max-memory",
                                      "ingest.decode-threads", "ingest.decode-queue-max-bytes", "query.cpus",
                                      "storage.remote.read-sample-limit",
                                      "storage.remote.read-concurrent-limit",
                                      "storage.remote.read-max-bytes-in-frame", "web.config.file", "web.max-connections",
                                      "web.read-header-timeout", "web.body-idle-timeout", "web.body-min-rate",
                                      "web.idle-timeout", "web.http2-max-resets", "scrape.max-targets", NULL};
        int is_known = 0;
        for (int k = 0; known[k]; k++)
            is_known |= strcmp(name, known[k]) == 0;
        if (!is_known)
            die_usage("unknown flag --%s%s", name, "");
        if (val == NULL) {
            if (i + 1 >= argc)
                die_usage("flag --%s needs a value%s", name, "");
            val = argv[++i];
        }
        ps_err_t err;
        int64_t *dur = NULL;
        uint64_t *size = NULL, *num = NULL;
        if (strcmp(name, "listen") == 0)
            f->listen = val;
        else if (strcmp(name, "data-dir") == 0)
            f->data_dir = val;
        else if (strcmp(name, "config") == 0)
            f->config = val;
        else if (strcmp(name, "log-level") == 0)
            f->log_level = val;
        else if (strcmp(name, "web.config.file") == 0)
            f->web_config = val;
        else if (strcmp(name, "retention") == 0)
            dur = &f->retention;
        else if (strcmp(name, "storage.compact-window") == 0)
            dur = &f->compact_window;
        else if (strcmp(name, "storage.compact-interval") == 0)
            dur = &f->compact_interval;
        else if (strcmp(name, "storage.retention-interval") == 0)
            dur = &f->retention_interval;
        else if (strcmp(name, "storage.commit-delay") == 0)
            dur = &f->commit_delay;
        else if (strcmp(name, "storage.future-grace") == 0)
            dur = &f->future_grace;
        else if (strcmp(name, "max-inflated-total") == 0)
            size = &f->max_inflated_total;
        else if (strcmp(name, "storage.disk-reserve") == 0)
            size = &f->disk_reserve;
        else if (strcmp(name, "storage.write-queue-max-bytes") == 0)
            size = &f->queue_bytes;
        else if (strcmp(name, "storage.write-queue-max-items") == 0)
            num = &f->queue_items;
        else if (strcmp(name, "max-body-size") == 0)
            size = &f->max_body;
        else if (strcmp(name, "max-inflated-size") == 0)
            size = &f->max_inflated;
        else if (strcmp(name, "storage.max-size") == 0)
            size = &f->max_size;
        else if (strcmp(name, "storage.compact-max-profiles") == 0)
            num = &f->compact_max;
        else if (strcmp(name, "threads") == 0)
            num = &f->threads;
        else if (strcmp(name, "query.max-series") == 0)
            num = &f->max_series;
        else if (strcmp(name, "query.timeout") == 0)
            dur = &f->query_timeout;
        else if (strcmp(name, "query.max-concurrency") == 0 || strcmp(name, "query.max-regex-steps") == 0) {
            /* threads 0 (no pool: queries on the HTTP threads) .. 256 (LMDB readers); steps 1 .. 1e12 */
            bool conc = name[10] == 'c';
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || *end || end == val || val[0] == '-' || (conc ? v > 256 : v == 0 || v > 1000000000000ull))
                die_usage("--%s: \"%s\" is not a number in range", name, val);
            *(conc ? &f->query_max_concurrency : &f->query_max_regex_steps) = v;
        }
        else if (strcmp(name, "query.max-samples") == 0)
            num = &f->query_max_samples;
        else if (strcmp(name, "query.max-memory") == 0)
            size = &f->query_max_memory;
        else if (strcmp(name, "ingest.decode-queue-max-bytes") == 0)
            size = &f->decode_queue_bytes;
        else if (strcmp(name, "ingest.decode-threads") == 0 || strcmp(name, "query.cpus") == 0) { /* 0 .. 256 */
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || *end || end == val || val[0] == '-' || v > 256)
                die_usage("--%s: \"%s\" is not a number in range", name, val);
            *(name[0] == 'i' ? &f->decode_threads : &f->query_cpus) = v;
        }
        else if (strcmp(name, "web.read-header-timeout") == 0)
            dur = &f->header_timeout;
        else if (strcmp(name, "web.body-idle-timeout") == 0)
            dur = &f->body_idle_timeout;
        else if (strcmp(name, "web.idle-timeout") == 0)
            dur = &f->idle_timeout;
        else if (strcmp(name, "web.body-min-rate") == 0)
            size = &f->body_min_rate;
        else if (strcmp(name, "web.max-connections") == 0 || strcmp(name, "web.http2-max-resets") == 0 ||
                 strcmp(name, "scrape.max-targets") == 0) {
            uint64_t *dst = name[0] == 's' ? &f->scrape_max_targets : name[4] == 'm' ? &f->max_conns : &f->h2_max_resets;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            /* 0: no bound / no cap */
            if (errno || *end || end == val || val[0] == '-' || v > 1000000)
                die_usage("--%s: \"%s\" is not a number in range (0 .. 1000000)", name, val);
            *dst = v;
        } else if (strncmp(name, "storage.remote.read-", 20) == 0) {
            /* Prometheus' remote-read limits: 0 means no limit, except for the frame size */
            uint64_t *dst = strcmp(name + 20, "sample-limit") == 0       ? &f->read_sample_limit
                            : strcmp(name + 20, "concurrent-limit") == 0 ? &f->read_concurrent_limit
                                                                          : &f->read_max_frame;
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || *end || end == val || val[0] == '-' || (dst == &f->read_max_frame && v == 0) ||
                v > (dst == &f->read_sample_limit ? 1000000000000ull : 1000000000ull))
                die_usage("--%s: \"%s\" is not a number in range", name, val);
            *dst = v;
        } else
            die_usage("unknown flag --%s%s", name, "");
        if (dur && (strcmp(val, "0") == 0 ? (*dur = 0, 0) : ps_parse_duration(val, strlen(val), 0, dur, &err)) != 0)
            die_usage("--%s: %s", name, err.msg);
        if (size && parse_size(val, size) != 0)
            die_usage("--%s: \"%s\" is not a size (e.g. 1048576, 32MiB, 1GB)", name, val);
        if (num) {
            char *end;
            errno = 0;
            unsigned long long v = strtoull(val, &end, 10);
            if (errno || *end || end == val || v == 0 || v > (num == &f->max_series ? 10000000 : num == &f->query_max_samples ? 1000000000000ull : num == &f->queue_items ? 1000000 : 65535))
                die_usage("--%s: \"%s\" is not a positive number in range", name, val);
            *num = v;
        }
    }
}

/* ---- /api/v1/status/flags: every flag with its effective value, as Prometheus lists its own ---- */

static const char *fmt_dup(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static const char *fmt_dup(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(NULL, 0, fmt, ap);
    va_end(ap);
    char *p = ps_xmalloc((size_t)n + 1);
    va_start(ap, fmt);
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    va_end(ap);
    return p;
}

static const char *fmt_dur(int64_t ns)
{
    char d[64];
    ps_format_duration(ns, d, sizeof(d));
    return fmt_dup("%s", d);
}

/* bytes in the largest binary unit that divides them, as the flags are written: "32MiB" */
static const char *fmt_size(uint64_t v)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    int u = 0;
    while (u < 4 && v != 0 && v % 1024 == 0) {
        v /= 1024;
        u++;
    }
    return fmt_dup("%llu%s", (unsigned long long)v, units[u]);
}

static int flag_cmp(const void *a, const void *b)
{
    return strcmp(((const ps_server_flag_t *)a)->name, ((const ps_server_flag_t *)b)->name);
}

/* A flag added to parse_flags goes here too (test_prom_compat.py checks --help against the list). */
static void status_flags(const flags_t *f, ps_server_t *srv)
{
    static ps_server_flag_t fl[64];
    uint32_t n = 0;
#define FLAG(nm, v) (n < sizeof(fl) / sizeof(fl[0]) ? (fl[n].name = (nm), fl[n].value = (v), n++) : n)
    FLAG("listen", f->listen);
    FLAG("data-dir", f->data_dir);
    FLAG("config", f->config ? f->config : "");
    FLAG("log-level", f->log_level);
    FLAG("retention", fmt_dur(f->retention));
    FLAG("max-body-size", fmt_size(f->max_body));
    FLAG("max-inflated-size", fmt_size(f->max_inflated));
    FLAG("max-inflated-total", fmt_size(f->max_inflated_total ? f->max_inflated_total : f->max_inflated));
    FLAG("storage.write-queue-max-bytes", fmt_size(f->queue_bytes));
    FLAG("storage.write-queue-max-items", fmt_dup("%llu", (unsigned long long)f->queue_items));
    FLAG("storage.future-grace", fmt_dur(f->future_grace));
    FLAG("storage.disk-reserve", fmt_size(f->disk_reserve));
    FLAG("threads", fmt_dup("%llu", (unsigned long long)f->threads));
    FLAG("query.max-series", fmt_dup("%llu", (unsigned long long)f->max_series));
    FLAG("query.max-samples", fmt_dup("%llu", (unsigned long long)f->query_max_samples));
    FLAG("query.max-memory", fmt_size(f->query_max_memory));
    FLAG("query.max-concurrency", fmt_dup("%llu", (unsigned long long)f->query_max_concurrency));
    FLAG("ingest.decode-threads", fmt_dup("%llu", (unsigned long long)f->decode_threads));
    FLAG("query.cpus", fmt_dup("%llu", (unsigned long long)f->query_cpus));
    FLAG("ingest.decode-queue-max-bytes", fmt_size(f->decode_queue_bytes));
    FLAG("query.max-regex-steps", fmt_dup("%llu", (unsigned long long)f->query_max_regex_steps));
    FLAG("query.timeout", fmt_dur(f->query_timeout));
    FLAG("storage.remote.read-sample-limit", fmt_dup("%llu", (unsigned long long)f->read_sample_limit));
    FLAG("storage.remote.read-concurrent-limit", fmt_dup("%llu", (unsigned long long)f->read_concurrent_limit));
    FLAG("storage.remote.read-max-bytes-in-frame", fmt_dup("%llu", (unsigned long long)f->read_max_frame));
    FLAG("storage.max-size", fmt_size(f->max_size));
    FLAG("storage.compact-max-profiles", fmt_dup("%llu", (unsigned long long)f->compact_max));
    FLAG("storage.compact-window", fmt_dur(f->compact_window));
    FLAG("storage.compact-interval", fmt_dur(f->compact_interval));
    FLAG("storage.retention-interval", fmt_dur(f->retention_interval));
    FLAG("storage.commit-delay", fmt_dur(f->commit_delay));
    FLAG("storage.no-sync", f->nosync ? "true" : "false");
    FLAG("storage.check", f->check ? "true" : "false");
    FLAG("web.config.file", f->web_config ? f->web_config : "");
    FLAG("web.enable-admin-api", f->admin_api ? "true" : "false");
    FLAG("web.enable-lifecycle", f->lifecycle ? "true" : "false");
    FLAG("scrape.max-targets", fmt_dup("%llu", (unsigned long long)f->scrape_max_targets));
    FLAG("web.max-connections", fmt_dup("%llu", (unsigned long long)f->max_conns));
    FLAG("web.read-header-timeout", fmt_dur(f->header_timeout));
    FLAG("web.body-idle-timeout", fmt_dur(f->body_idle_timeout));
    FLAG("web.body-min-rate", fmt_size(f->body_min_rate));
    FLAG("web.idle-timeout", fmt_dur(f->idle_timeout));
    FLAG("web.enable-h2c", f->h2c ? "true" : "false");
    FLAG("agent", f->agent ? "true" : "false");
    FLAG("web.http2-max-resets", fmt_dup("%llu", (unsigned long long)f->h2_max_resets));
#undef FLAG
    qsort(fl, n, sizeof(fl[0]), flag_cmp);
    srv->flags = fl;
    srv->nflags = n;
}

/* what /api/v1/status/config shows after a load: the configuration as YAML, "" without one */
static void status_config(ps_server_t *srv, const ps_config_t *cfg, int64_t when)
{
    ps_buf_t y = PS_BUF_INIT;
    ps_config_yaml(cfg, &y);
    ps_server_config_loaded(srv, true, y.len ? (const char *)y.data : "", y.len, when);
    ps_buf_dispose(&y);
}

/* The configuration side of the process: the file, the scraper it drives, and the one rule for
 * (re)loading it, used by SIGHUP and POST /-/reload alike. */
typedef struct wiring {
    pthread_mutex_t mu;      /* one reload at a time */
    const char *config_path; /* NULL without --config */
    const char *web_config_path; /* NULL without --web.config.file */
    ps_server_t *srv;
    ps_scraper_opts_t scrape_opts;
} wiring_t;

/* Applies cfg (taken): starts the scraper on the first configuration, reloads it afterwards. */
static void apply_config(wiring_t *w, ps_config_t *cfg)
{
    ps_forward_apply(w->srv->forward, cfg); /* keeps its own reference */
    if (w->srv->scraper == NULL)
        w->srv->scraper = ps_scraper_start(cfg, w->srv->writer, &w->scrape_opts);
    else
        ps_scraper_reload(w->srv->scraper, cfg);
}

/* Re-reads --web.config.file: a file that does not load keeps the one in force. */
static int reload_web_config(wiring_t *w, ps_err_t *err)
{
    ps_webconfig_t *wc = NULL;
    int rc = ps_webconfig_load(w->web_config_path, &wc, err);
    if (rc == 0 && (rc = ps_server_web_config(w->srv, wc, err)) == 0)
        ps_log_info("web configuration reloaded", "file=%s", ps_log_q(w->web_config_path));
    else
        ps_log_error("web configuration reload failed; keeping the running one", "err=%s", ps_log_q(err->msg));
    return rc;
}

static int reload_config(void *ctx, ps_err_t *err)
{
    wiring_t *w = ctx;
    ps_config_t *cfg = NULL;
    pthread_mutex_lock(&w->mu);
    int wrc = 0, rc = 0;
    ps_err_t werr;
    ps_err_clear(&werr);
    if (w->web_config_path != NULL)
        wrc = reload_web_config(w, &werr);
    if (w->config_path == NULL) {
        if (wrc != 0)
            *err = werr;
        pthread_mutex_unlock(&w->mu);
        return wrc;
    }
    rc = ps_config_load(w->config_path, &cfg, err);
    if (rc == 0) {
        status_config(w->srv, cfg, ps_time_now());
        apply_config(w, cfg);
        ps_log_info("configuration reloaded", "file=%s", ps_log_q(w->config_path));
    } else {
        ps_log_error("configuration reload failed; keeping the running configuration", "err=%s", ps_log_q(err->msg));
        ps_server_config_loaded(w->srv, false, NULL, 0, ps_time_now());
    }
    pthread_mutex_unlock(&w->mu);
    if (rc == 0 && wrc != 0) {
        *err = werr;
        return wrc;
    }
    return rc;
}

int main(int argc, char **argv)
{
    flags_t f = {.listen = "127.0.0.1:7070", .data_dir = "./data", .log_level = "info"};
    ps_store_opts_t so;
    ps_writer_opts_t wo;
    ps_store_opts_default(&so);
    ps_writer_opts_default(&wo);
    f.retention = so.retention_ns;
    f.compact_window = so.compact_window_ns;
    f.compact_interval = wo.compact_interval_ns;
    f.retention_interval = wo.retention_interval_ns;
    f.commit_delay = wo.commit_delay_ns;
    f.future_grace = 10 * 60 * PS_NS_PER_S; /* Mimir's creation grace period */
    f.queue_bytes = wo.max_queue_bytes;
    f.queue_items = wo.max_queue;
    f.disk_reserve = 32ull << 20;
    f.max_body = 32ull << 20;
    f.max_inflated = 256ull << 20;
    f.max_size = so.map_size;
    f.compact_max = so.compact_max_profiles;
    f.max_series = 10000;
    f.read_sample_limit = 50000000;
    f.read_concurrent_limit = 10;
    f.read_max_frame = 1048576;
    f.query_timeout = 120 * PS_NS_PER_S;
    f.query_max_concurrency = 20;
    f.query_max_regex_steps = 1000000000;
    f.decode_queue_bytes = 32ull << 20; /* web/qpool.h: PS_DPOOL_DEFAULT_BYTES */
    f.query_max_samples = 50000000;
    f.query_max_memory = default_query_memory();
    f.max_conns = 512;
    f.scrape_max_targets = 50000;
    f.header_timeout = 10 * PS_NS_PER_S;
    f.body_idle_timeout = 10 * PS_NS_PER_S;
    f.body_min_rate = 1024;
    f.idle_timeout = 120 * PS_NS_PER_S;
    f.h2_max_resets = 100;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    f.threads = ncpu > 0 ? (uint64_t)ncpu : 1;
    f.decode_threads = ncpu < 1 ? 1 : ncpu > 256 ? 256 : (uint64_t)ncpu;
    f.query_cpus = ncpu <= 2 ? 1 : ncpu > 257 ? 256 : (uint64_t)ncpu - 1;
    parse_flags(argc, argv, &f);

    int lvl = ps_log_parse_level(f.log_level);
    if (lvl < 0)
        die_usage("--log-level: \"%s\" is not one of debug, info, warn, error%s", f.log_level, "");
    ps_log_level = lvl;

    ps_err_t err;
    ps_err_clear(&err);
    ps_config_t *cfg = NULL;
    if (f.config != NULL && ps_config_load(f.config, &cfg, &err) != 0) {
        fprintf(stderr, "profstore: %s\n", err.msg);
        return 2;
    }
    ps_webconfig_t *wc = NULL;
    if (f.web_config != NULL && ps_webconfig_load(f.web_config, &wc, &err) != 0) {
        fprintf(stderr, "profstore: %s\n", err.msg);
        return 2;
    }

    /* the flags that set the limits the lower floors' messages name (core/err.h) */
    static const char *const setting_flags[PS_SETTING_COUNT] = {
        [PS_SETTING_QUERY_TIMEOUT] = "--query.timeout",
        [PS_SETTING_QUERY_MAX_SAMPLES] = "--query.max-samples",
        [PS_SETTING_QUERY_MAX_SERIES] = "--query.max-series",
        [PS_SETTING_QUERY_MAX_MEMORY] = "--query.max-memory",
        [PS_SETTING_QUERY_MAX_REGEX_STEPS] = "--query.max-regex-steps",
        [PS_SETTING_INFLATE_BUDGET] = "--max-inflated-total",
        [PS_SETTING_FUTURE_GRACE] = "--storage.future-grace",
        [PS_SETTING_STORE_MAX_SIZE] = "--storage.max-size",
        [PS_SETTING_DISK_RESERVE] = "--storage.disk-reserve",
        [PS_SETTING_WRITE_QUEUE_MAX_ITEMS] = "--storage.write-queue-max-items",
        [PS_SETTING_WRITE_QUEUE_MAX_BYTES] = "--storage.write-queue-max-bytes",
        [PS_SETTING_SCRAPE_MAX_TARGETS] = "--scrape.max-targets",
        [PS_SETTING_STORE_CHECK] = "--storage.check",
    };
    ps_setting_names_set(setting_flags);

    /* every thread inherits this mask; the main thread takes signals with sigwait */
    sigset_t set;
    sigemptyset(&set);
    sigaddset(&set, SIGTERM);
    sigaddset(&set, SIGINT);
    sigaddset(&set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &set, NULL);
    signal(SIGPIPE, SIG_IGN);

    so.dir = f.data_dir;
    so.map_size = f.max_size;
    so.retention_ns = f.retention;
    so.compact_max_profiles = (uint32_t)f.compact_max;
    so.compact_window_ns = f.compact_window;
    so.nosync = f.nosync;
    so.future_grace_ns = f.future_grace;
    so.disk_reserve = f.disk_reserve;
    so.log_only = f.agent != 0;
    wo.max_queue_bytes = f.queue_bytes;
    wo.max_queue = (uint32_t)f.queue_items;
    ps_inflate_budget_set(f.max_inflated_total ? f.max_inflated_total : f.max_inflated);
    wo.compact_interval_ns = f.compact_interval > 0 ? f.compact_interval : PS_NS_PER_S;
    wo.retention_interval_ns = f.retention_interval > 0 ? f.retention_interval : PS_NS_PER_S;
    wo.commit_delay_ns = f.commit_delay;

    if (f.check)
        return ps_store_check_dir(&so, stdout);
    ps_store_t *store = NULL;
    if (ps_store_open(&so, &store, &err) != 0) {
        ps_log_error("cannot open storage", "dir=%s err=%s", ps_log_q(f.data_dir), ps_log_q(err.msg));
        return 1;
    }
    if (ps_store_disk_reserve(store) < f.disk_reserve)
        ps_log_info("disk reserve sized to the disk", "reserve=%llu configured=%llu (1/16 of the file system at most)",
                    (unsigned long long)ps_store_disk_reserve(store), (unsigned long long)f.disk_reserve);
    if (ps_store_space_check(store, &err) != 0) /* reads go on; writes are 507 until space returns */
        ps_log_warn("writes are refused from the start", "err=%s", ps_log_q(err.msg));
    ps_err_clear(&err);
    ps_server_t srv = {0};
    srv.opts.listen = f.listen;
    srv.opts.threads = (uint32_t)f.threads;
    srv.opts.max_body = f.max_body;
    srv.opts.max_series = (uint32_t)f.max_series;
    ps_read_opts_default(&srv.opts.read);
    srv.opts.read.sample_limit = f.read_sample_limit;
    srv.opts.read.max_frame_bytes = (size_t)f.read_max_frame;
    srv.opts.read.max_series = (uint32_t)f.max_series;
    srv.opts.read_concurrency = (uint32_t)f.read_concurrent_limit;
    srv.opts.query_timeout = f.query_timeout;
    srv.opts.query_max_samples = f.query_max_samples;
    srv.opts.query_max_memory = f.query_max_memory;
    srv.opts.query_max_concurrency = (uint32_t)f.query_max_concurrency;
    srv.opts.query_max_regex_steps = f.query_max_regex_steps;
    srv.opts.decode_threads = (uint32_t)f.decode_threads;
    srv.opts.query_cpus = (uint32_t)f.query_cpus;
    srv.opts.decode_queue_bytes = (size_t)f.decode_queue_bytes;
    ps_pprof_limits_default(&srv.opts.limits);
    srv.opts.limits.max_inflated = f.max_inflated;
    srv.opts.retention_ns = f.retention;
    srv.opts.enable_admin_api = f.admin_api;
    srv.opts.enable_lifecycle = f.lifecycle;
    srv.opts.max_connections = (uint32_t)f.max_conns;
    srv.opts.read_header_timeout = f.header_timeout;
    srv.opts.body_idle_timeout = f.body_idle_timeout;
    srv.opts.body_min_rate = f.body_min_rate;
    srv.opts.idle_timeout = f.idle_timeout;
    srv.opts.enable_h2c = f.h2c != 0;
    srv.opts.agent = f.agent != 0;
    if (f.agent && (cfg == NULL || cfg->nforward == 0))
        ps_log_warn("agent mode without forward: endpoints in the config: what is received is not kept", NULL);
    srv.opts.http2_max_resets = (uint32_t)f.h2_max_resets;
    srv.store = store;
    status_flags(&f, &srv);
    if (ps_server_bind(&srv, &err) != 0) {
        ps_log_error("cannot start HTTP server", "err=%s", ps_log_q(err.msg));
        ps_store_close(store);
        return 1;
    }
    if (wc != NULL && ps_server_web_config(&srv, wc, &err) != 0) { /* its certificates do not load */
        fprintf(stderr, "profstore: %s\n", err.msg);
        ps_store_close(store);
        return 2;
    }
    status_config(&srv, cfg, srv.start_time); /* loaded at start; before apply_config takes cfg */
    srv.forward = ps_forward_new(store);
    ps_forward_writer_hooks(srv.forward, &wo);
    srv.writer = ps_writer_start(store, &wo);
    ps_forward_attach(srv.forward, srv.writer);
    /* a scraped body may be twice a pushed one, and at least 64 MiB (Go heap profiles of big
     * processes) */
    wiring_t wiring = {.config_path = f.config, .web_config_path = f.web_config, .srv = &srv};
    pthread_mutex_init(&wiring.mu, NULL);
    wiring.scrape_opts.max_targets = (uint32_t)f.scrape_max_targets;
    wiring.scrape_opts.max_body = f.max_body * 2 > (64u << 20) ? f.max_body * 2 : (64u << 20);
    wiring.scrape_opts.limits = srv.opts.limits;
    if (f.config != NULL || f.web_config != NULL) {
        srv.reload = reload_config;
        srv.reload_ctx = &wiring;
    }
    if (cfg != NULL)
        apply_config(&wiring, cfg);
    if (ps_server_start(&srv, &err) != 0) {
        ps_log_error("cannot start HTTP server", "err=%s", ps_log_q(err.msg));
        return 1;
    }
    char ret_s[32];
    ps_format_duration(f.retention, ret_s, sizeof(ret_s));
    ps_log_info("profstore is ready", "listen=%s port=%d data_dir=%s retention=%s threads=%llu", ps_log_q(f.listen),
                ps_server_port(&srv), ps_log_q(f.data_dir), ps_log_q(f.retention ? ret_s : "forever"),
                (unsigned long long)f.threads);

    for (;;) {
        int sig = 0;
        if (sigwait(&set, &sig) != 0)
            continue;
        if (sig == SIGHUP) {
            if (f.config == NULL && f.web_config == NULL)
                ps_log_warn("SIGHUP ignored: no --config or --web.config.file to reload", NULL);
            else
                (void)reload_config(&wiring, &err);
            continue;
        }
        ps_log_info("shutting down", "signal=%s", sig == SIGTERM ? "SIGTERM" : "SIGINT");
        break;
    }
    ps_server_begin_shutdown(&srv);  /* new writes get 503; listeners close */
    ps_scraper_stop(srv.scraper);    /* no new scrapes; those handed to the writer still finish */
    ps_forward_shutdown(srv.forward); /* senders stop; their cursors go through the writer */
    ps_writer_shutdown(srv.writer);  /* queued writes finish; their answers are queued to the loops */
    ps_server_stop(&srv);            /* each loop sends those answers, drains, and ends */
    ps_writer_stop(srv.writer);      /* no loop can submit any more: free it */
    ps_forward_free(srv.forward);
    ps_store_close(store);
    ps_log_info("stopped", NULL);
    return 0;
}
