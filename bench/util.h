/*
 * util.h - shared helpers for the benchmarks (bench/util.c, built into the ps_bench library):
 * starting and stopping a profstore child process, reading its /proc figures, plain HTTP
 * requests, and a libcurl-multi pusher that keeps N keep-alive connections busy.
 */
#ifndef PS_BENCH_UTIL_H
#define PS_BENCH_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "config/flags.h"
#include "core/mem.h"

/** Makes glibc malloc keep freed memory (no brk trimming, no per-block mmap): trimming costs TLB
 *  shootdowns that are very expensive on some VMs and would dominate the benchmark's own CPU. */
void ps_bench_malloc_tune(void);

/* ---- clocks ---- */
double ps_bench_now(void);      /* monotonic seconds */
double ps_bench_self_cpu(void); /* getrusage(RUSAGE_SELF): user + system seconds */

/* ---- files and paths ---- */
/** Reads a whole file; returns 0 or -1 (errno set). *out is malloc'd. */
int ps_bench_read_file(const char *path, uint8_t **out, size_t *len);
/** Directory of the testdata (env PS_TESTDATA, else the compile-time default): "<repo>/tests/testdata". */
const char *ps_bench_testdata(void);
/** Default profstore binary: <dir of this executable>/../profstore. */
void ps_bench_default_profstore(char *out, size_t n);
/** The profstore binary a bench runs: given (its --profstore), else ps_bench_default_profstore's. */
void ps_bench_profstore_path(char *out, size_t n, const char *given);
/** Where scripts/install-prometheus3.sh puts Prometheus 3: $PS_PEERS_DIR, else
 *  ${XDG_CACHE_HOME:-$HOME/.cache}/profstore-peers, then /prometheus-3.16.0/bin/prometheus. */
void ps_bench_prometheus3_default(char *out, size_t n);
/** mkdir -p. */
int ps_bench_mkdirs(const char *path);
/** rm -rf (used on directories the benchmark created itself). */
void ps_bench_rmrf(const char *path);
/** st_blocks * 512 and st_size of a file (0 if missing). */
void ps_bench_file_usage(const char *path, uint64_t *blocks_bytes, uint64_t *size);

/* ---- a profstore child process ---- */
typedef struct ps_bench_server {
    pid_t pid;
    int port;
    char url[64];      /* http://127.0.0.1:PORT */
    char log[1024];    /* its stdout + stderr */
    int exit_status;   /* wait status once it has exited */
} ps_bench_server_t;

/**
 * Starts `profstore --listen 127.0.0.1:<free port> --data-dir DIR args...` (args NULL-terminated),
 * output to log_path, and waits (up to 20 s) until GET /-/ready answers 200. Returns 0 or -1
 * (with the log's tail printed to stderr).
 */
int ps_bench_server_start(ps_bench_server_t *s, const char *binary, const char *data_dir, const char *log_path,
                          const char *const *args);
/** Starts any program (args NULL-terminated, args[0] its path; "{port}" in an argument becomes a
 *  free port, also in s->port and s->url), output to log_path, and waits (up to 20 s) until GET
 *  ready_path answers 200. Returns 0 or -1. Stop it with ps_bench_server_stop. */
int ps_bench_exec_start(ps_bench_server_t *s, const char *const *args, const char *log_path, const char *ready_path);
/** SIGTERM, wait (up to 30 s, then SIGKILL). Returns the wait status (0 = clean exit). */
int ps_bench_server_stop(ps_bench_server_t *s);
/** 1 if the server is still running; else 0 with its wait status in *status (if not NULL). */
int ps_bench_server_alive(ps_bench_server_t *s, int *status);
/** Prints the last nlines lines of a log file to stdout, each after indent. */
void ps_bench_print_log_tail(const char *path, int nlines, const char *indent);
/** "killed by signal 11 (Segmentation fault)", "exited with status 1", ... */
void ps_bench_describe_status(int st, char *out, size_t n);
/* Env PS_BENCH_CORE=1: the server may dump core (in the directory of its log). */

#define PS_BENCH_MAX_THREADS 64
typedef struct ps_bench_proc {
    double cpu_user, cpu_sys; /* seconds, from /proc/PID/stat */
    uint64_t vm_hwm_kb, vm_rss_kb; /* /proc/PID/status */
    uint32_t nthreads;        /* from /proc/PID/task, ascending tid (creation order) */
    int tid[PS_BENCH_MAX_THREADS];
    double thread_cpu[PS_BENCH_MAX_THREADS]; /* seconds on a CPU: /proc/PID/task/TID/schedstat (ns), else stat's ticks */
    uint32_t thread_exact;                   /* how many of them schedstat gave */
    char thread_name[PS_BENCH_MAX_THREADS][16]; /* /proc/PID/task/TID/comm: "writer", "http-0", ... */
} ps_bench_proc_t;
int ps_bench_proc_read(pid_t pid, ps_bench_proc_t *out);

/** Machine-wide CPU time from /proc/stat (seconds summed over all CPUs): busy (everything but
 *  idle and iowait) and iowait. For "how much did other processes use during the run". */
typedef struct ps_bench_sys {
    double busy, iowait;
} ps_bench_sys_t;
int ps_bench_sys_read(ps_bench_sys_t *out);

/* ---- plain requests ---- */
/** GET or POST (body may be NULL) url; the response body goes to out (if not NULL). Returns the
 *  HTTP status, or -1 on a transport error. */
long ps_bench_http(const char *method, const char *url, const void *body, size_t len, ps_buf_t *out);
/** Value of an unlabelled sample `name value` in a Prometheus text exposition; -1 if missing. */
double ps_bench_metric(const char *text, size_t len, const char *name);

/* ---- pusher: POSTs with up to `conns` requests in flight on keep-alive connections ---- */
typedef struct ps_bench_pusher ps_bench_pusher_t;

/** copy_bodies: copy each body (else it must stay valid until the request completes). */
ps_bench_pusher_t *ps_bench_pusher_new(uint32_t conns, int copy_bodies);
/* A request counts as ok with any 2xx status. */
/** Starts a POST to url; waits first (driving the transfers) while all connections are busy, or
 *  while a request with the same key (>= 0; e.g. the series, so that one series' profiles reach
 *  the server in order, as from one agent) is in flight. key < 0: no ordering. */
void ps_bench_pusher_post(ps_bench_pusher_t *p, int64_t key, const char *url, const void *body, size_t len);
/** Replaces the request headers (NULL-terminated "Name: value" strings; default
 *  "Content-Type: application/octet-stream"). Call while nothing is in flight. */
void ps_bench_pusher_headers(ps_bench_pusher_t *p, const char *const *headers);
/** Waits for everything in flight. */
void ps_bench_pusher_drain(ps_bench_pusher_t *p);

typedef struct ps_bench_push_stats {
    uint64_t ok, failed;
    double *lat;       /* seconds, one per finished request (ok or not), in completion order */
    size_t nlat;
    char first_error[512];
} ps_bench_push_stats_t;
/** Stats so far (pointers valid until the pusher is freed). */
const ps_bench_push_stats_t *ps_bench_pusher_stats(ps_bench_pusher_t *p);
/** Forgets the stats (latencies, counts) so far. */
void ps_bench_pusher_reset_stats(ps_bench_pusher_t *p);
void ps_bench_pusher_free(ps_bench_pusher_t *p);

/** q-quantile (0..1) of v[0..n) (sorts v in place). */
double ps_bench_quantile(double *v, size_t n, double q);

/** The --profstore row of a benchmark's flag table: the binary at offset off of its options. */
#define PS_BENCH_FLAG_PROFSTORE(off)                                                                          \
    {.name = "profstore", .type = PS_FLAG_STRING, .offset = (off), .metavar = "PATH",                          \
     .help = "profstore binary (default: ../profstore next to this program)"}

/** A benchmark's flags: sets opts to the table's defaults (the caller sets the computed ones
 *  first), then parses argv into it with ps_flags_parse. --help or -h: the table's help on stdout,
 *  exit 0; a bad flag: "PROG: <what and where>" and the help on stderr, exit 2. */
void ps_bench_flags(const ps_flagset_t *fs, int argc, char **argv, void *opts);
/** ps_bench_flags' failure for what the table cannot check (flags that depend on each other):
 *  "PROG: <msg>" on stderr, exit 2. */
void ps_bench_flags_fail(const ps_flagset_t *fs, const char *fmt, ...) __attribute__((format(printf, 2, 3), noreturn));

/** Percent-encodes s into out (RFC 3986 unreserved characters kept). */
void ps_bench_urlencode(const char *s, char *out, size_t n);
/** Prints "  load average before the run: <the line of /proc/loadavg, or ?>". */
void ps_bench_print_loadavg(void);

/* ---- a deterministic generator for synthetic data: xorshift64*, a fixed seed, one state per
 * file that uses it (the same sequence every run) ---- */
#define PS_BENCH_RND_SEED 0x9e3779b97f4a7c15ull
/** The next number of the xorshift64* sequence whose state is *state (seeded PS_BENCH_RND_SEED). */
static inline uint64_t ps_bench_rnd_next(uint64_t *state)
{
    uint64_t x = *state;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    *state = x;
    return x * 0x2545f4914f6cdd1dull;
}
/** Uniform in [0, 1) from a number of the sequence. */
static inline double ps_bench_rnd_to_unit(uint64_t r) { return (double)(r >> 11) / (double)(1ull << 53); }
static inline uint64_t ps_bench_rnd(void)
{
    static uint64_t state = PS_BENCH_RND_SEED;
    return ps_bench_rnd_next(&state);
}
/** Uniform in [0, 1). */
static inline double ps_bench_rnd_unit(void) { return ps_bench_rnd_to_unit(ps_bench_rnd()); }

#endif
