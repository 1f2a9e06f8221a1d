/*
 * scrape.c - bench_scrape: what continuous collection costs the server.
 *
 * A forked child of the benchmark is the fleet: one epoll HTTP/1.1 server listening on N loopback
 * addresses (127.0.0.1 .. 127.0.0.250, 127.0.1.1 .. - all of 127/8 is loopback on Linux) on one
 * port, so that every target is its own host:port to the scraper (its own connections, its own
 * instance label). It serves the real Go profiles from tests/testdata/pprof/go/:
 *
 *     /debug/pprof/allocs     allocs-01.pb.gz        (cumulative: see below)
 *     /debug/pprof/block      block-01.pb.gz         (cumulative)
 *     /debug/pprof/mutex      mutex-01.pb.gz         (cumulative)
 *     /debug/pprof/goroutine  goroutine-01.pb.gz
 *     /debug/pprof/profile    cpu-01.pb.gz           (answers at once, whatever ?seconds= says)
 *
 * Every body gets a second gzip member appended (concatenated gzip, as Go's reader and profstore
 * accept) holding protobuf field 9, time_nanos = now: a live process' profiles carry their own
 * time, and the scraper stores a profile at that time (identical times would be duplicates).
 * The cumulative profiles grow like a live process': the n-th scrape of a target gets the fixture
 * with every value scaled by (8 + n) / 8 (encoded once at start with ps_pprof_encode, gzip level 1),
 * so the ":delta" series get real, nonzero differences.
 *
 * profstore (started here, --config with a file_sd JSON file of the N targets, the five default
 * profile types, scrape_interval 10s) scrapes them; after the first round (baselines) the
 * benchmark measures a window: profstore's CPU time (/proc/PID/stat), RSS (/proc/PID/status),
 * scrapes and failures (/metrics), per-thread CPU, and the health of every target at the end.
 *
 * Nothing is asserted: the target (1,000 targets x 5 types at 10 s under 25% of one core) is
 * printed next to the figures.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/pprof.h"
#include "util.h"

enum { K_ALLOCS, K_BLOCK, K_MUTEX, K_GOROUTINE, K_CPU, NKINDS };
static const char *const kind_path[NKINDS] = {"/debug/pprof/allocs", "/debug/pprof/block", "/debug/pprof/mutex",
                                              "/debug/pprof/goroutine", "/debug/pprof/profile"};
static const char *const kind_file[NKINDS] = {"pprof/go/allocs-01.pb.gz", "pprof/go/block-01.pb.gz",
                                              "pprof/go/mutex-01.pb.gz", "pprof/go/goroutine-01.pb.gz",
                                              "pprof/go/cpu-01.pb.gz"};
static const int kind_cumulative[NKINDS] = {1, 1, 1, 0, 0};
#define NVARIANTS 32

typedef struct body {
    uint8_t *data;
    size_t len;
} body_t;

static body_t bodies[NKINDS][NVARIANTS]; /* [k][0] = the fixture as Go wrote it */

typedef struct shared_stats { /* MAP_SHARED between the fleet child and the benchmark */
    volatile uint64_t requests, bytes, not_found, accepted;
} shared_stats_t;

typedef struct opts {
    char profstore[4096];
    const char *data_dir;
    int keep;
    uint32_t targets;
    uint32_t interval_s, duration_s, warmup_max_s;
} opts_t;

/* ---- bodies ---------------------------------------------------------------------------------- */

static int load_bodies(void)
{
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    for (int k = 0; k < NKINDS; k++) {
        char path[4096];
        snprintf(path, sizeof(path), "%s/%s", ps_bench_testdata(), kind_file[k]);
        if (ps_bench_read_file(path, &bodies[k][0].data, &bodies[k][0].len) != 0) {
            fprintf(stderr, "bench_scrape: cannot read %s: %s\n", path, strerror(errno));
            return -1;
        }
        if (!kind_cumulative[k])
            continue;
        for (int v = 1; v < NVARIANTS; v++) {
            ps_arena_t a = PS_ARENA_INIT;
            ps_profile_t p;
            ps_err_t err;
            if (ps_pprof_decode(bodies[k][0].data, bodies[k][0].len, &lim, &a, &p, &err) != 0) {
                fprintf(stderr, "bench_scrape: %s: %s\n", path, err.msg);
                return -1;
            }
            for (uint32_t i = 0; i < p.nsamples; i++)
                for (uint32_t t = 0; t < p.ntypes; t++)
                    p.samples[i].values[t] = p.samples[i].values[t] * (8 + v) / 8;
            ps_buf_t out = PS_BUF_INIT;
            if (ps_pprof_encode(&p, 1, &out, &err) != 0) {
                fprintf(stderr, "bench_scrape: encode %s: %s\n", path, err.msg);
                return -1;
            }
            bodies[k][v].data = out.data;
            bodies[k][v].len = out.len;
            ps_arena_dispose(&a);
        }
    }
    return 0;
}

/* A complete gzip member holding one stored deflate block: protobuf field 9 (time_nanos) = ns. */
static size_t time_member(uint8_t *out, int64_t ns)
{
    uint8_t pb[16];
    size_t n = 0;
    pb[n++] = 9 << 3; /* field 9, varint */
    uint64_t v = (uint64_t)ns;
    do {
        pb[n++] = (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
        v >>= 7;
    } while (v);
    static const uint8_t hdr[10] = {0x1f, 0x8b, 8, 0, 0, 0, 0, 0, 0, 0xff};
    size_t o = 0;
    memcpy(out, hdr, 10);
    o = 10;
    out[o++] = 0x01; /* BFINAL, stored */
    out[o++] = (uint8_t)n;
    out[o++] = 0;
    out[o++] = (uint8_t)~n;
    out[o++] = 0xff;
    memcpy(out + o, pb, n);
    o += n;
    uint32_t crc = (uint32_t)crc32(0L, pb, (uInt)n);
    for (int i = 0; i < 4; i++)
        out[o++] = (uint8_t)(crc >> (8 * i));
    for (int i = 0; i < 4; i++)
        out[o++] = (uint8_t)(n >> (8 * i));
    return o;
}

/* ---- the fleet: an epoll HTTP server on N loopback addresses ---------------------------------- */

typedef struct conn {
    int fd;
    uint32_t target;
    char in[8192];
    size_t inlen;
    uint8_t *out;
    size_t outlen, outoff, outcap;
    int close_after;
} conn_t;

#define TAG_LISTENER (1ull << 63)

static void addr_of(uint32_t i, char *out, size_t n)
{
    snprintf(out, n, "127.0.%u.%u", i / 250, 1 + i % 250);
}

/* Binds N listeners on one port (retrying with another port when one address has it taken). */
static int bind_fleet(uint32_t n, int *fds, int *port_out)
{
    for (int attempt = 0; attempt < 20; attempt++) {
        int port = 0;
        uint32_t i;
        for (i = 0; i < n; i++) {
            int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
            int one = 1;
            setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
            struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port)};
            char a[32];
            addr_of(i, a, sizeof(a));
            inet_pton(AF_INET, a, &sa.sin_addr);
            if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || listen(fd, 256) != 0) {
                close(fd);
                break;
            }
            if (port == 0) {
                socklen_t sl = sizeof(sa);
                getsockname(fd, (struct sockaddr *)&sa, &sl);
                port = ntohs(sa.sin_port);
            }
            fds[i] = fd;
        }
        if (i == n) {
            *port_out = port;
            return 0;
        }
        while (i > 0)
            close(fds[--i]);
    }
    return -1;
}

static void conn_close(int ep, conn_t *c)
{
    epoll_ctl(ep, EPOLL_CTL_DEL, c->fd, NULL);
    close(c->fd);
    free(c->out);
    free(c);
}

/* Parses one request from c->in (if complete) and builds its response in c->out. 1 if built. */
static int conn_request(conn_t *c, uint32_t *counts, shared_stats_t *st)
{
    char *end = memmem(c->in, c->inlen, "\r\n\r\n", 4);
    if (end == NULL)
        return 0;
    size_t reqlen = (size_t)(end - c->in) + 4;
    int kind = -1;
    if (c->inlen > 4 && memcmp(c->in, "GET ", 4) == 0) {
        char *sp = memchr(c->in + 4, ' ', reqlen - 4);
        size_t plen = sp ? (size_t)(sp - (c->in + 4)) : 0;
        for (int k = 0; k < NKINDS; k++) {
            size_t kl = strlen(kind_path[k]);
            if (plen >= kl && memcmp(c->in + 4, kind_path[k], kl) == 0 && (plen == kl || c->in[4 + kl] == '?'))
                kind = k;
        }
    }
    c->close_after = memmem(c->in, reqlen, "Connection: close", 17) != NULL;
    const uint8_t *b = (const uint8_t *)"not found\n";
    size_t blen = 10;
    uint8_t tm[64];
    size_t tmlen = 0;
    if (kind >= 0) {
        uint32_t *cnt = &counts[c->target * NKINDS + kind];
        int v = kind_cumulative[kind] ? (int)(*cnt < NVARIANTS ? *cnt : NVARIANTS - 1) : 0;
        (*cnt)++;
        b = bodies[kind][v].data;
        blen = bodies[kind][v].len;
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        tmlen = time_member(tm, (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec);
    } else {
        st->not_found++;
    }
    char hdr[256];
    int hl = snprintf(hdr, sizeof(hdr),
                      "HTTP/1.1 %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n%s\r\n",
                      kind >= 0 ? "200 OK" : "404 Not Found", kind >= 0 ? "application/octet-stream" : "text/plain",
                      blen + tmlen, c->close_after ? "Connection: close\r\n" : "");
    size_t need = (size_t)hl + blen + tmlen;
    if (c->outcap < need) {
        c->out = realloc(c->out, need);
        c->outcap = need;
    }
    memcpy(c->out, hdr, (size_t)hl);
    memcpy(c->out + hl, b, blen);
    memcpy(c->out + hl + blen, tm, tmlen);
    c->outlen = need;
    c->outoff = 0;
    memmove(c->in, c->in + reqlen, c->inlen - reqlen);
    c->inlen -= reqlen;
    st->requests++;
    st->bytes += need;
    return 1;
}

/* Writes what it can; 1 = all written, 0 = wait for EPOLLOUT, -1 = error. */
static int conn_flush(conn_t *c)
{
    while (c->outoff < c->outlen) {
        ssize_t w = write(c->fd, c->out + c->outoff, c->outlen - c->outoff);
        if (w < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK)
                return 0;
            if (errno == EINTR)
                continue;
            return -1;
        }
        c->outoff += (size_t)w;
    }
    c->outlen = c->outoff = 0;
    return 1;
}

static void fleet_run(uint32_t n, const int *lfds, shared_stats_t *st)
{
    prctl(PR_SET_PDEATHSIG, SIGKILL);
    int ep = epoll_create1(EPOLL_CLOEXEC);
    uint32_t *counts = calloc((size_t)n * NKINDS, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++) {
        struct epoll_event ev = {.events = EPOLLIN, .data.u64 = TAG_LISTENER | i};
        epoll_ctl(ep, EPOLL_CTL_ADD, lfds[i], &ev);
    }
    struct epoll_event evs[256];
    for (;;) {
        int ne = epoll_wait(ep, evs, 256, -1);
        if (ne < 0 && errno != EINTR)
            _exit(1);
        for (int e = 0; e < ne; e++) {
            if (evs[e].data.u64 & TAG_LISTENER) {
                uint32_t i = (uint32_t)(evs[e].data.u64 & ~TAG_LISTENER);
                int fd;
                while ((fd = accept4(lfds[i], NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
                    int one = 1;
                    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
                    conn_t *c = calloc(1, sizeof(*c));
                    c->fd = fd;
                    c->target = i;
                    struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_ADD, fd, &ev);
                    st->accepted++;
                }
                continue;
            }
            conn_t *c = evs[e].data.ptr;
            int dead = 0;
            if (c->outlen > 0) { /* finishing a response */
                int r = conn_flush(c);
                if (r < 0)
                    dead = 1;
                else if (r == 1) {
                    if (c->close_after)
                        dead = 1;
                    else {
                        struct epoll_event ev = {.events = EPOLLIN, .data.ptr = c};
                        epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                    }
                }
            } else {
                ssize_t r = read(c->fd, c->in + c->inlen, sizeof(c->in) - c->inlen);
                if (r <= 0) {
                    if (r == 0 || (errno != EAGAIN && errno != EINTR))
                        dead = 1;
                } else {
                    c->inlen += (size_t)r;
                    if (c->inlen == sizeof(c->in) && memmem(c->in, c->inlen, "\r\n\r\n", 4) == NULL)
                        dead = 1; /* headers too large */
                }
            }
            /* serve the requests that are complete (one at a time per connection) */
            while (!dead && c->outlen == 0 && conn_request(c, counts, st)) {
                int r = conn_flush(c);
                if (r < 0 || (r == 1 && c->close_after)) {
                    dead = 1;
                } else if (r == 0) {
                    struct epoll_event ev = {.events = EPOLLOUT, .data.ptr = c};
                    epoll_ctl(ep, EPOLL_CTL_MOD, c->fd, &ev);
                }
            }
            if (dead)
                conn_close(ep, c);
        }
    }
}

/* ---- figures from profstore ------------------------------------------------------------------- */

/* Value of `name{job="bench"} V` (or an unlabelled `name V` if job is NULL) in a text exposition. */
static double metric(const char *text, const char *name, const char *job)
{
    char key[256];
    if (job)
        snprintf(key, sizeof(key), "\n%s{job=\"%s\"} ", name, job);
    else
        snprintf(key, sizeof(key), "\n%s ", name);
    const char *p = strstr(text, key);
    return p ? strtod(p + strlen(key), NULL) : -1;
}

typedef struct snap {
    double t, cpu_user, cpu_sys;
    double scrapes, failures, dur_sum, samples, batches, appends_failed, duplicates, series, file_bytes;
    uint64_t rss_kb, hwm_kb;
    ps_bench_proc_t proc;
    double fleet_cpu;
} snap_t;

/* RssAnon and RssFile (+ RssShmem) of /proc/PID/status, in KiB. */
static void rss_split(pid_t pid, uint64_t *anon, uint64_t *file)
{
    char path[64], line[256];
    *anon = *file = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "r");
    if (f == NULL)
        return;
    while (fgets(line, sizeof(line), f)) {
        unsigned long long v;
        if (sscanf(line, "RssAnon: %llu", &v) == 1)
            *anon = v;
        else if (sscanf(line, "RssFile: %llu", &v) == 1 || sscanf(line, "RssShmem: %llu", &v) == 1)
            *file += v;
    }
    fclose(f);
}

static double proc_cpu(pid_t pid)
{
    ps_bench_proc_t p;
    if (ps_bench_proc_read(pid, &p) != 0)
        return 0;
    return p.cpu_user + p.cpu_sys;
}

static int take(const ps_bench_server_t *srv, pid_t fleet, snap_t *s)
{
    memset(s, 0, sizeof(*s));
    s->t = ps_bench_now();
    if (ps_bench_proc_read(srv->pid, &s->proc) != 0)
        return -1;
    s->cpu_user = s->proc.cpu_user;
    s->cpu_sys = s->proc.cpu_sys;
    s->rss_kb = s->proc.vm_rss_kb;
    s->hwm_kb = s->proc.vm_hwm_kb;
    s->fleet_cpu = proc_cpu(fleet);
    char url[128];
    snprintf(url, sizeof(url), "%s/metrics", srv->url);
    ps_buf_t b = PS_BUF_INIT;
    if (ps_bench_http("GET", url, NULL, 0, &b) != 200) {
        ps_buf_dispose(&b);
        return -1;
    }
    ps_buf_putc(&b, 0);
    const char *text = (const char *)b.data;
    s->scrapes = metric(text, "profstore_scrapes_total", "bench");
    s->failures = metric(text, "profstore_scrape_failures_total", "bench");
    s->dur_sum = metric(text, "profstore_scrape_duration_seconds_sum", "bench");
    s->samples = metric(text, "profstore_scrape_samples_total", "bench");
    s->batches = metric(text, "profstore_writer_batches_total", NULL);
    s->appends_failed = metric(text, "profstore_writer_appends_failed_total", NULL);
    s->duplicates = metric(text, "profstore_writer_duplicates_total", NULL);
    s->series = metric(text, "profstore_storage_series", NULL);
    s->file_bytes = metric(text, "profstore_storage_file_bytes", NULL);
    ps_buf_dispose(&b);
    return 0;
}

/* the flags as the table parses them; main puts them into opts_t */
typedef struct flagv {
    const char *profstore, *data_dir;
    bool keep;
    uint64_t targets, interval_s, duration_s;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)

/* clang-format off */
static const ps_flag_t flags[] = {
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "profstore data directory (default: a new /tmp/profstore-scrape-XXXXXX,\n"
             "removed at the end unless --keep)"},
    {.name = "keep", .type = PS_FLAG_BOOL, .offset = FV(keep), .help = "keep the data directory"},
    {.name = "targets", .type = PS_FLAG_UINT, .offset = FV(targets), .metavar = "N", .def = "1000", .min = 1,
     .max = 250 * 250, .help = "targets (loopback addresses), each scraped for 5 profile types\n"
                               "(default 1000; at most 62500)"},
    {.name = "interval", .type = PS_FLAG_UINT, .offset = FV(interval_s), .metavar = "S", .def = "10", .min = 2,
     .max = UINT32_MAX, .help = "scrape_interval in seconds (default 10; at least 2)"},
    {.name = "duration", .type = PS_FLAG_UINT, .offset = FV(duration_s), .metavar = "S", .min = 1,
     .max = UINT32_MAX, .help = "measured window after the first round (default 60; env QUICK=1: 20)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_scrape",
                                     "usage: bench_scrape [flags]\n"
                                     "env: PS_TESTDATA (tests/testdata), QUICK=1\n",
                                     flags, sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    flagv_t fv = {.duration_s = 60};
    const char *quick = getenv("QUICK");
    if (quick && *quick && strcmp(quick, "0") != 0)
        fv.duration_s = 20;
    ps_bench_flags(&flagset, argc, argv, &fv);
    ps_bench_profstore_path(o.profstore, sizeof(o.profstore), fv.profstore);
    o.data_dir = fv.data_dir;
    o.keep = fv.keep;
    o.targets = (uint32_t)fv.targets;
    o.interval_s = (uint32_t)fv.interval_s;
    o.duration_s = (uint32_t)fv.duration_s;
    o.warmup_max_s = o.interval_s * 3;

    if (load_bodies() != 0)
        return 1;

    /* the fleet */
    int *lfds = calloc(o.targets, sizeof(int));
    int port;
    if (bind_fleet(o.targets, lfds, &port) != 0) {
        fprintf(stderr, "bench_scrape: cannot bind %u loopback addresses on one port: %s\n", o.targets,
                strerror(errno));
        return 1;
    }
    shared_stats_t *st = mmap(NULL, sizeof(*st), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    memset(st, 0, sizeof(*st));
    fflush(stdout);
    fflush(stderr);
    pid_t fleet = fork();
    if (fleet < 0) {
        perror("fork");
        return 1;
    }
    if (fleet == 0) {
        fleet_run(o.targets, lfds, st);
        _exit(0);
    }
    for (uint32_t i = 0; i < o.targets; i++)
        close(lfds[i]);

    /* data dir, file_sd file, config */
    char dir[4096];
    if (o.data_dir) {
        snprintf(dir, sizeof(dir), "%s", o.data_dir);
        ps_bench_mkdirs(dir);
    } else {
        snprintf(dir, sizeof(dir), "/tmp/profstore-scrape-XXXXXX");
        if (mkdtemp(dir) == NULL) {
            perror("mkdtemp");
            return 1;
        }
    }
    char data[4200], sd[4200], cfgp[4200], logp[4200];
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(sd, sizeof(sd), "%s/targets.json", dir);
    snprintf(cfgp, sizeof(cfgp), "%s/profstore.yml", dir);
    snprintf(logp, sizeof(logp), "%s/profstore.log", dir);
    FILE *f = fopen(sd, "w");
    if (f == NULL) {
        perror(sd);
        return 1;
    }
    fputs("[{\"labels\": {\"fleet\": \"bench\"}, \"targets\": [", f);
    for (uint32_t i = 0; i < o.targets; i++) {
        char a[32];
        addr_of(i, a, sizeof(a));
        fprintf(f, "%s\"%s:%d\"", i ? ", " : "", a, port);
    }
    fputs("]}]\n", f);
    fclose(f);
    f = fopen(cfgp, "w");
    fprintf(f,
            "global:\n  scrape_interval: %us\n  scrape_timeout: %us\n"
            "scrape_configs:\n  - job_name: bench\n    file_sd_configs:\n      - files: ['%s']\n",
            o.interval_s, o.interval_s, sd);
    fclose(f);

    ps_bench_server_t srv;
    const char *args[] = {"--config", cfgp, NULL};
    double t_start = ps_bench_now();
    if (ps_bench_server_start(&srv, o.profstore, data, logp, args) != 0) {
        kill(fleet, SIGKILL);
        waitpid(fleet, NULL, 0);
        return 1;
    }
    uint64_t per_round = (uint64_t)o.targets * NKINDS;
    printf("bench_scrape: %u targets (127.0.x.y:%d, one epoll server) x %d profile types every %us = %llu scrapes "
           "per interval (%.1f/s)\n",
           o.targets, port, NKINDS, o.interval_s, (unsigned long long)per_round, (double)per_round / o.interval_s);
    printf("  profiles: allocs/block/mutex (growing: values x (8+n)/8 at the n-th scrape), goroutine, cpu-01; "
           "bodies %zu..%zu bytes\n",
           bodies[K_MUTEX][0].len, bodies[K_CPU][0].len);

    /* warm-up: the first round (cumulative profiles: baselines only) */
    snap_t s0, s1;
    double warm_deadline = ps_bench_now() + o.warmup_max_s;
    for (;;) {
        if (take(&srv, fleet, &s0) != 0) {
            fprintf(stderr, "bench_scrape: cannot read profstore's figures\n");
            break;
        }
        if (s0.scrapes >= (double)per_round || ps_bench_now() > warm_deadline)
            break;
        usleep(200 * 1000);
    }
    double first_round = s0.t - t_start;
    printf("  first round: %.0f scrapes in %.1f s after start (%s)\n", s0.scrapes, first_round,
           s0.scrapes >= (double)per_round ? "complete" : "INCOMPLETE");

    /* the measured window, RSS sampled every second */
    uint64_t rss_max = s0.rss_kb;
    double t_end = s0.t + o.duration_s;
    int died = 0;
    while (ps_bench_now() < t_end) {
        usleep(1000 * 1000);
        int status;
        if (!ps_bench_server_alive(&srv, &status)) {
            char why[128];
            ps_bench_describe_status(status, why, sizeof(why));
            printf("  profstore DIED during the window: %s\n", why);
            ps_bench_print_log_tail(logp, 20, "    ");
            died = 1;
            break;
        }
        ps_bench_proc_t p;
        if (ps_bench_proc_read(srv.pid, &p) == 0 && p.vm_rss_kb > rss_max)
            rss_max = p.vm_rss_kb;
    }
    if (died || take(&srv, fleet, &s1) != 0) {
        kill(fleet, SIGKILL);
        waitpid(fleet, NULL, 0);
        return 1;
    }

    double wall = s1.t - s0.t;
    double cpu = (s1.cpu_user + s1.cpu_sys) - (s0.cpu_user + s0.cpu_sys);
    double scrapes = s1.scrapes - s0.scrapes, failures = s1.failures - s0.failures;
    double core_pct = 100.0 * cpu / wall;
    double per_1000_interval = cpu / wall * o.interval_s * (1000.0 / o.targets);
    printf("  window            %.1f s\n", wall);
    printf("  scrapes           %.0f (%.1f/s; the schedule asks %.1f/s), failures %.0f\n", scrapes, scrapes / wall,
           (double)per_round / o.interval_s, failures);
    printf("  stored            %.0f pprof samples scraped, %.0f writer batches, %.0f appends failed, %.0f "
           "duplicates; %.0f series, data file %.1f MB\n",
           s1.samples - s0.samples, s1.batches - s0.batches, s1.appends_failed - s0.appends_failed,
           s1.duplicates - s0.duplicates, s1.series, s1.file_bytes / 1e6);
    printf("  profstore CPU     %.2f s (user %.2f, sys %.2f) = %.1f%% of one core          target: < 25%% at "
           "1,000 targets x 5 types / 10 s\n",
           cpu, s1.cpu_user - s0.cpu_user, s1.cpu_sys - s0.cpu_sys, core_pct);
    if (scrapes > 0)
        printf("  per scrape        %.3f ms CPU, %.2f ms wall (mean scrape duration)\n", 1000.0 * cpu / scrapes,
               1000.0 * (s1.dur_sum - s0.dur_sum) / scrapes);
    printf("  per 1,000 targets x %d types per %u s interval: %.2f s CPU (%.1f%% of one core)\n", NKINDS,
           o.interval_s, per_1000_interval, 100.0 * per_1000_interval / o.interval_s);
    printf("  RSS               %.1f MiB at the window's start, %.1f MiB at its end, %.1f MiB max, VmHWM %.1f MiB\n",
           s0.rss_kb / 1024.0, s1.rss_kb / 1024.0, rss_max / 1024.0, s1.hwm_kb / 1024.0);
    uint64_t anon, filekb;
    rss_split(srv.pid, &anon, &filekb);
    printf("                    at the end: %.1f MiB anonymous, %.1f MiB file-backed (the mmap'd data file)\n",
           anon / 1024.0, filekb / 1024.0);
    printf("  threads           CPU s in the window (threads that used none left out):");
    for (uint32_t i = 0, k = 0; i < s1.proc.nthreads; i++) {
        double before = 0;
        for (uint32_t j = 0; j < s0.proc.nthreads; j++)
            if (s0.proc.tid[j] == s1.proc.tid[i])
                before = s0.proc.thread_cpu[j];
        if (s1.proc.thread_cpu[i] - before >= 0.005)
            printf("%s %s %.2f", k++ ? "," : "", s1.proc.thread_name[i], s1.proc.thread_cpu[i] - before);
    }
    printf("\n");
    printf("  fleet server      %.2f s CPU in the window; %llu requests, %llu connections, %.1f MB, %llu not found\n",
           s1.fleet_cpu - s0.fleet_cpu, (unsigned long long)st->requests, (unsigned long long)st->accepted,
           st->bytes / 1e6, (unsigned long long)st->not_found);

    /* health of every target */
    char url[128];
    snprintf(url, sizeof(url), "%s/api/v1/targets?state=active", srv.url);
    ps_buf_t b = PS_BUF_INIT;
    if (ps_bench_http("GET", url, NULL, 0, &b) == 200) {
        ps_buf_putc(&b, 0);
        unsigned up = 0, down = 0, unknown = 0;
        const char *p = (const char *)b.data, *q;
        for (q = p; (q = strstr(q, "\"health\":\"")) != NULL; q += 10) {
            if (strncmp(q + 10, "up", 2) == 0)
                up++;
            else if (strncmp(q + 10, "down", 4) == 0)
                down++;
            else
                unknown++;
        }
        printf("  targets           %u up, %u down, %u unknown (of %llu)\n", up, down, unknown,
               (unsigned long long)per_round);
        const char *le = strstr(p, "\"lastError\":\"");
        while (le && le[13] == '"')
            le = strstr(le + 13, "\"lastError\":\"");
        if (le) {
            const char *e = strchr(le + 13, '"');
            printf("  first lastError   %.*s\n", (int)(e ? e - (le + 13) : 200), le + 13);
        }
    }
    ps_buf_dispose(&b);

    int stst = ps_bench_server_stop(&srv);
    kill(fleet, SIGKILL);
    waitpid(fleet, NULL, 0);
    if (stst != 0) {
        char why[128];
        ps_bench_describe_status(stst, why, sizeof(why));
        printf("  profstore stop: %s\n", why);
    }
    if (!o.keep && o.data_dir == NULL)
        ps_bench_rmrf(dir);
    else
        printf("  kept: %s\n", dir);
    return stst == 0 ? 0 : 1;
}
