/*
 * overload_send.c - bench_overload_send: the open-loop push load of bench/overload.py, in C.
 *
 * Python's asyncio senders could offer only ~7x the write capacity on 2 cores (they spent the CPU
 * the server needed); this sends the same pushes for a fraction of it. It offers --rate pushes/s
 * of one pprof body (--body, the file overload.py writes) to POST /api/v1/profiles/write for
 * --duration seconds, each push its own series {job="bench",req="<id>"}, over up to --conns
 * keep-alive HTTP/1.1 connections (no pipelining: one request in flight per connection) driven by
 * --threads epoll loops. The schedule is open loop: push k is due at start + k / rate whatever
 * the answers; a due push takes an idle connection (one is opened if fewer than --conns are), and
 * when every connection is busy it is counted as "skipped" rather than sent late, so the offered
 * rate printed is what was really sent (skipped_at: in which seconds pushes were skipped).
 * --closed 1 instead: a closed loop, every connection sends its next push as soon as the last is
 * answered (overload.py measures the capacity so: with enough connections the group commit
 * fills, which 8 synchronous Python senders could not do).
 *
 *   bench_overload_send --port P --body FILE (--rate R | --closed 1) [--duration 60] [--conns 2000]
 *                       [--threads 1] [--id-base 1000000000] [--acked FILE] [--grace 60]
 *                       [--series N --stamp-t0 SEC]
 *
 * --series N (bench/forward.py's load): push id k goes to series {job="bench",s="<k % N>"} with
 * time_nanos = (SEC + k / N) s: --body is then an uncompressed pprof without time_nanos, and each
 * push's body is it with field 9 appended, gzipped (level 6; one body per stamped second, made
 * when first due and kept). One epoll loop (--threads 1), so ids, and times per series, increase.
 * SIGINT ends the schedule at once (as if --duration had passed): in flight pushes get --grace,
 * then the results are printed.
 *
 * Every answer is counted by status (200, 429, 503, any other; a connection error or an answer
 * that could not be read as "error"), with whether it had Retry-After and how long it took
 * (median, p99, max per class). The id of every push answered 200 goes to --acked, one a line, so
 * the caller can check after a restart that each is stored. Pushes still in flight when
 * --duration ends get up to --grace seconds to be answered (and counted). The results are
 * "key value" lines on stdout (see print_results), the format overload.py reads.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "util.h"

typedef struct opts {
    int port;
    const char *body_path, *acked_path;
    double rate, duration, grace;
    uint32_t conns, threads;
    bool closed;         /* --closed: every connection sends again as soon as it is answered */
    uint64_t id_base;
    uint32_t series;     /* --series: stamped pushes into N series (0: a series per push) */
    uint64_t stamp_t0;   /* --stamp-t0: the first stamped second */
} opts_t;

/* answer classes counted and timed apart */
enum { C_200, C_429, C_503, C_OTHER, C_ERROR, C_N };
static const char *const class_name[C_N] = {"200", "429", "503", "other", "error"};

#define TIMELINE_S 600

typedef struct lat {
    double *v;
    size_t n, cap;
} lat_t;

typedef struct stats {
    uint64_t count[C_N], retry_after[C_N];
    uint64_t sent, skipped, connects, unanswered;
    uint32_t skipped_at[TIMELINE_S]; /* skipped pushes by second of the run: when the server stalled */
    lat_t lat[C_N];
    uint64_t *acked;
    size_t nacked, acked_cap;
} stats_t;

enum { ST_IDLE, ST_CONNECTING, ST_SENDING, ST_READING };

#define RESP_MAX 65536 /* an answer's head and body: profstore's are a few hundred bytes */

typedef struct conn {
    int fd;              /* -1: not open */
    int state;
    uint64_t id;         /* the push in flight */
    double t0;           /* when it was sent */
    char head[512];      /* its request line and headers */
    const uint8_t *body; /* its body (g_body, or a stamped one) */
    size_t body_len;
    size_t head_len, off; /* bytes of head + body written so far */
    char resp[RESP_MAX];
    size_t resp_len;
    struct conn *next_idle;
} conn_t;

typedef struct worker {
    const opts_t *o;
    uint32_t index;
    double rate;         /* this worker's share */
    uint32_t nconns;
    conn_t *conns;
    conn_t *idle;        /* idle connections (one the server closed meanwhile has fd -1) */
    conn_t *closed;      /* connections closed after an answer or an error */
    uint32_t opened;     /* conns[0..opened) have been used */
    uint32_t busy;
    uint64_t next_seq;   /* pushes scheduled so far */
    stats_t st;
    int ep;
} worker_t;

static const uint8_t *g_body;
static size_t g_body_len;
static double g_start, g_stop;
static volatile sig_atomic_t g_interrupted; /* SIGINT: the schedule ends now */

static void on_sigint(int sig) { (void)sig; g_interrupted = 1; }

/* --series: the gzipped bodies by stamped second - stamp_t0 (one loop uses them: no lock) */
typedef struct stamped {
    uint8_t *data;
    size_t len;
} stamped_t;
static stamped_t *g_stamped;
static size_t g_nstamped;

/* The body of second t0 + rel: g_body with time_nanos (field 9, varint) appended, gzipped. */
static const stamped_t *stamped_body(uint64_t t0, uint64_t rel)
{
    if (rel >= g_nstamped) {
        size_t n = g_nstamped ? g_nstamped : 1024;
        while (n <= rel) n *= 2;
        stamped_t *v = realloc(g_stamped, n * sizeof *v);
        if (!v) {
            fprintf(stderr, "bench_overload_send: out of memory\n");
            exit(2);
        }
        memset(v + g_nstamped, 0, (n - g_nstamped) * sizeof *v);
        g_stamped = v;
        g_nstamped = n;
    }
    stamped_t *b = &g_stamped[rel];
    if (b->data) return b;
    size_t raw_len = g_body_len + 11;
    uint8_t *raw = malloc(raw_len);
    if (!raw) exit(2);
    memcpy(raw, g_body, g_body_len);
    size_t n = g_body_len;
    uint64_t v = (t0 + rel) * 1000000000ull;
    raw[n++] = 9 << 3;
    while (v >= 0x80) {
        raw[n++] = (uint8_t)((v & 0x7f) | 0x80);
        v >>= 7;
    }
    raw[n++] = (uint8_t)v;
    z_stream z = {0};
    if (deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) exit(2);
    size_t cap = deflateBound(&z, n);
    b->data = malloc(cap);
    if (!b->data) exit(2);
    z.next_in = raw;
    z.avail_in = (uInt)n;
    z.next_out = b->data;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END) exit(2);
    b->len = cap - z.avail_out;
    deflateEnd(&z);
    free(raw);
    return b;
}

static void lat_add(lat_t *l, double x) {
    if (l->n == l->cap) {
        size_t cap = l->cap ? l->cap * 2 : 4096;
        double *v = realloc(l->v, cap * sizeof *v);
        if (!v) return; /* a latency fewer: the counts stay exact */
        l->v = v;
        l->cap = cap;
    }
    l->v[l->n++] = x;
}

static void acked_add(stats_t *s, uint64_t id) {
    if (s->nacked == s->acked_cap) {
        size_t cap = s->acked_cap ? s->acked_cap * 2 : 4096;
        uint64_t *v = realloc(s->acked, cap * sizeof *v);
        if (!v) {
            /* losing an acknowledged id would make the durability check pass wrongly */
            fprintf(stderr, "bench_overload_send: out of memory\n");
            exit(2);
        }
        s->acked = v;
        s->acked_cap = cap;
    }
    s->acked[s->nacked++] = id;
}

static void conn_close(worker_t *w, conn_t *c) {
    if (c->fd >= 0) {
        epoll_ctl(w->ep, EPOLL_CTL_DEL, c->fd, NULL);
        close(c->fd);
    }
    c->fd = -1;
    c->state = ST_IDLE;
}

/* The push in flight on c got its answer (or failed): count it; c becomes idle or closed. */
static void finish(worker_t *w, conn_t *c, int cls, bool retry_after, bool keep) {
    double dt = ps_bench_now() - c->t0;
    w->st.count[cls]++;
    if (retry_after) w->st.retry_after[cls]++;
    lat_add(&w->st.lat[cls], dt);
    if (cls == C_200) acked_add(&w->st, c->id);
    w->busy--;
    if (keep) {
        struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
        epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
        c->state = ST_IDLE;
        c->next_idle = w->idle;
        w->idle = c;
    } else {
        conn_close(w, c);
        c->next_idle = w->closed;
        w->closed = c;
    }
}

/* the request head of push id: the same path overload.py's push_path() makes */
static size_t make_head(char *out, size_t cap, uint64_t id, uint32_t series, size_t body_len) {
    char lab[96], enc[288];
    if (series)
        snprintf(lab, sizeof lab, "{job=\"bench\",s=\"%llu\"}", (unsigned long long)(id % series));
    else
        snprintf(lab, sizeof lab, "{job=\"bench\",req=\"%llu\"}", (unsigned long long)id);
    ps_bench_urlencode(lab, enc, sizeof enc);
    int n = snprintf(out, cap,
                 "POST /api/v1/profiles/write?%slabels=%s HTTP/1.1\r\nHost: 127.0.0.1\r\n"
                 "Content-Type: application/octet-stream\r\nContent-Length: %zu\r\n\r\n",
                 series ? "" : "name=process_cpu&", enc, body_len);
    return (size_t)n;
}

/* Writes what is left of the request; 0 done, 1 would block, -1 error. */
static int write_some(conn_t *c) {
    while (c->off < c->head_len + c->body_len) {
        struct iovec iov[2];
        int n = 0;
        if (c->off < c->head_len) {
            iov[n].iov_base = c->head + c->off;
            iov[n].iov_len = c->head_len - c->off;
            n++;
            iov[n].iov_base = (void *)c->body;
            iov[n].iov_len = c->body_len;
            n++;
        } else {
            iov[n].iov_base = (void *)(c->body + (c->off - c->head_len));
            iov[n].iov_len = c->body_len - (c->off - c->head_len);
            n++;
        }
        ssize_t k = writev(c->fd, iov, n);
        if (k < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return 1;
            return -1;
        }
        c->off += (size_t)k;
    }
    return 0;
}

static void send_start(worker_t *w, conn_t *c) {
    c->state = ST_SENDING;
    c->off = 0;
    c->resp_len = 0;
    int r = write_some(c);
    if (r < 0) {
        finish(w, c, C_ERROR, false, false);
        return;
    }
    c->state = r == 0 ? ST_READING : ST_SENDING;
    struct epoll_event ev = {.events = (r == 0 ? EPOLLIN : EPOLLOUT) | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
}

/* Push number seq of this worker is due: send it on an idle connection, a new one, or skip it. */
static void dispatch(worker_t *w, uint64_t seq) {
    /* an idle connection first, else a closed one reopened, else a new one */
    conn_t *c = NULL;
    if (w->idle) {
        c = w->idle;
        w->idle = c->next_idle;
    } else if (w->closed) {
        c = w->closed;
        w->closed = c->next_idle;
    } else if (w->opened < w->nconns) {
        c = &w->conns[w->opened++];
    }
    if (!c) {
        w->st.skipped++;
        double at = ps_bench_now() - g_start;
        if (at >= 0 && at < TIMELINE_S) w->st.skipped_at[(int)at]++;
        return;
    }
    c->id = w->o->id_base + (uint64_t)w->index * 100000000u + seq;
    if (w->o->series) {
        const stamped_t *sb = stamped_body(w->o->stamp_t0, c->id / w->o->series);
        c->body = sb->data;
        c->body_len = sb->len;
    } else {
        c->body = g_body;
        c->body_len = g_body_len;
    }
    c->head_len = make_head(c->head, sizeof c->head, c->id, w->o->series, c->body_len);
    c->t0 = ps_bench_now();
    w->busy++;
    w->st.sent++;
    if (c->fd >= 0) {
        send_start(w, c);
        return;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        finish(w, c, C_ERROR, false, false);
        return;
    }
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_port = htons((uint16_t)w->o->port)};
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    c->fd = fd;
    w->st.connects++;
    struct epoll_event ev = {.events = EPOLLOUT | EPOLLRDHUP, .data.ptr = c};
    epoll_ctl(w->ep, EPOLL_CTL_ADD, fd, &ev);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) == 0) {
        send_start(w, c);
    } else if (errno == EINPROGRESS) {
        c->state = ST_CONNECTING;
    } else {
        finish(w, c, C_ERROR, false, false);
    }
}

/* Case-insensitive: does the header line [p, e) start with name (which ends in ':')? */
static bool header_is(const char *p, const char *e, const char *name) {
    size_t n = strlen(name);
    return (size_t)(e - p) >= n && strncasecmp(p, name, n) == 0;
}

/* Parses c->resp: 0 = need more, 1 = a whole answer (counted), -1 = malformed (counted). */
static int parse_answer(worker_t *w, conn_t *c) {
    char *end = memmem(c->resp, c->resp_len, "\r\n\r\n", 4);
    if (!end) return c->resp_len >= sizeof c->resp ? -1 : 0;
    size_t head_len = (size_t)(end - c->resp) + 4;
    if (c->resp_len < 12 || memcmp(c->resp, "HTTP/1.", 7) != 0) return -1;
    int status = atoi(c->resp + 9);
    long long clen = -1;
    bool retry = false, close_after = false;
    const char *p = memchr(c->resp, '\n', head_len);
    while (p && p + 1 < end) {
        p++;
        const char *e = memchr(p, '\r', (size_t)(end + 2 - p));
        if (!e) break;
        if (header_is(p, e, "content-length:")) {
            clen = strtoll(p + 15, NULL, 10);
        } else if (header_is(p, e, "retry-after:")) {
            retry = true;
        } else if (header_is(p, e, "connection:")) {
            const char *v = p + 11;
            while (v < e && *v == ' ') v++;
            if ((size_t)(e - v) >= 5 && strncasecmp(v, "close", 5) == 0) close_after = true;
        } else if (header_is(p, e, "transfer-encoding:")) {
            return -1; /* profstore answers a push with a Content-Length */
        }
        p = memchr(e, '\n', (size_t)(end + 2 - e));
    }
    if (clen < 0 || clen > (long long)(sizeof c->resp - head_len)) return -1;
    if (c->resp_len < head_len + (size_t)clen) return 0;
    if (c->resp_len > head_len + (size_t)clen) return -1; /* nothing was asked for beyond it */
    int cls = status == 200 ? C_200 : status == 429 ? C_429 : status == 503 ? C_503 : C_OTHER;
    finish(w, c, cls, retry, !close_after);
    return 1;
}

static void on_event(worker_t *w, conn_t *c, uint32_t evs) {
    if (c->state == ST_IDLE) {
        /* an idle keep-alive connection became readable: the server closed it (or sent junk); it
         * stays on the idle list and is reopened when taken */
        conn_close(w, c);
        return;
    }
    if (c->state == ST_CONNECTING) {
        int err = 0;
        socklen_t len = sizeof err;
        getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len);
        if (err) {
            finish(w, c, C_ERROR, false, false);
            return;
        }
        send_start(w, c);
        return;
    }
    if (c->state == ST_SENDING) {
        if (evs & (EPOLLERR | EPOLLHUP)) {
            finish(w, c, C_ERROR, false, false);
            return;
        }
        int r = write_some(c);
        if (r < 0) {
            /* the server may have answered (e.g. 429) before reading the whole body and closed */
            c->state = ST_READING;
        } else if (r == 0) {
            c->state = ST_READING;
            struct epoll_event ev = {.events = EPOLLIN | EPOLLRDHUP, .data.ptr = c};
            epoll_ctl(w->ep, EPOLL_CTL_MOD, c->fd, &ev);
            return;
        } else {
            return;
        }
    }
    /* ST_READING */
    for (;;) {
        if (c->resp_len == sizeof c->resp) {
            finish(w, c, C_ERROR, false, false);
            return;
        }
        ssize_t k = read(c->fd, c->resp + c->resp_len, sizeof c->resp - c->resp_len);
        if (k < 0) {
            if (errno == EINTR) continue;
            if (errno == EAGAIN || errno == EWOULDBLOCK) return;
            finish(w, c, C_ERROR, false, false);
            return;
        }
        if (k == 0) {
            int r = parse_answer(w, c);
            if (r == 1) {
                /* answered without Connection: close, then closed: it stays on the idle list, closed */
                if (c->state == ST_IDLE) conn_close(w, c);
                return;
            }
            finish(w, c, C_ERROR, false, false);
            return;
        }
        c->resp_len += (size_t)k;
        int r = parse_answer(w, c);
        if (r == 1) return;
        if (r < 0) {
            finish(w, c, C_ERROR, false, false);
            return;
        }
    }
}

static void *worker_main(void *arg) {
    worker_t *w = arg;
    struct epoll_event evs[256];
    double stop = g_stop, hard_stop = g_stop + w->o->grace;
    for (;;) {
        double now = ps_bench_now();
        if (g_interrupted && now < stop) { /* SIGINT: the schedule ends now */
            stop = now;
            hard_stop = now + w->o->grace;
        }
        if (now < stop && w->o->closed) {
            while (w->busy < w->nconns) dispatch(w, w->next_seq++);
        } else if (now < stop) {
            /* every push due by now: seq k is due at start + k / rate */
            uint64_t due = (uint64_t)((now - g_start) * w->rate) + 1;
            while (w->next_seq < due) dispatch(w, w->next_seq++);
        } else if (w->busy == 0 || now >= hard_stop) {
            break;
        }
        double next_due = w->o->closed ? stop : g_start + (double)w->next_seq / w->rate;
        double wait = now < stop ? next_due - now : hard_stop - now;
        int ms = wait <= 0 ? 0 : (int)(wait * 1000.0) + 1;
        if (ms > 100) ms = 100;
        int n = epoll_wait(w->ep, evs, 256, ms);
        for (int i = 0; i < n; i++) on_event(w, evs[i].data.ptr, evs[i].events);
    }
    w->st.unanswered = w->busy;
    return NULL;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* the flags as the table parses them; main puts them into opts_t */
typedef struct flagv {
    const char *body_path, *acked_path;
    double rate, duration, grace;
    uint64_t port, conns, threads, id_base, closed, series, stamp_t0;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)

/* clang-format off */
static const ps_flag_t flags[] = {
    {.name = "port", .type = PS_FLAG_UINT, .offset = FV(port), .metavar = "P", .min = 1, .max = 65535,
     .help = "profstore's port on 127.0.0.1 (required)"},
    {.name = "body", .type = PS_FLAG_STRING, .offset = FV(body_path), .metavar = "FILE",
     .help = "the pprof body every push sends (required)"},
    {.name = "rate", .type = PS_FLAG_FLOAT, .offset = FV(rate), .metavar = "R", .fmin = 0.001, .fmax = 1e7,
     .help = "pushes/s offered, open loop (required unless --closed 1)"},
    {.name = "closed", .type = PS_FLAG_UINT, .offset = FV(closed), .metavar = "0|1", .def = "0", .max = 1,
     .help = "1: closed loop, every connection sends again when answered (default 0)"},
    {.name = "duration", .type = PS_FLAG_FLOAT, .offset = FV(duration), .metavar = "SECONDS", .def = "60",
     .fmin = 0.001, .fmax = 1e6, .help = "how long the schedule runs (default 60)"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "2000", .min = 1,
     .max = 1000000, .help = "keep-alive connections at most (default 2000)"},
    {.name = "threads", .type = PS_FLAG_UINT, .offset = FV(threads), .metavar = "N", .def = "1", .min = 1,
     .max = 64, .help = "epoll loops (default 1)"},
    {.name = "id-base", .type = PS_FLAG_UINT, .offset = FV(id_base), .metavar = "N", .def = "1000000000",
     .max = 1000000000000000ull, .help = "the first push's id (default 1000000000)"},
    {.name = "acked", .type = PS_FLAG_STRING, .offset = FV(acked_path), .metavar = "FILE",
     .help = "write the id of every push answered 200 here, one a line"},
    {.name = "grace", .type = PS_FLAG_FLOAT, .offset = FV(grace), .metavar = "SECONDS", .def = "60",
     .fmin = 0, .fmax = 1e6, .help = "how long pushes in flight at the end may take (default 60)"},
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "0", .max = 1000000000,
     .help = "stamped pushes into N series, --body an uncompressed pprof\n"
             "(default 0: a series per push)"},
    {.name = "stamp-t0", .type = PS_FLAG_UINT, .offset = FV(stamp_t0), .metavar = "SEC", .def = "0",
     .max = 100000000000ull, .help = "with --series: the first stamped second (default 0)"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_overload_send",
                                     "usage: bench_overload_send --port P --body FILE (--rate R | --closed 1) "
                                     "[flags]\n",
                                     flags, sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv) {
    opts_t o = {0};
    flagv_t f = {0};
    ps_bench_flags(&flagset, argc, argv, &f);
    if (!f.port || !f.body_path || (f.rate <= 0 && !f.closed))
        ps_bench_flags_fail(&flagset, "--port, --body and --rate or --closed 1 are required (--help lists the flags)");
    o.port = (int)f.port;
    o.body_path = f.body_path;
    o.acked_path = f.acked_path;
    o.rate = f.rate;
    o.duration = f.duration;
    o.grace = f.grace;
    o.conns = (uint32_t)f.conns;
    o.threads = (uint32_t)f.threads;
    o.id_base = f.id_base;
    o.closed = f.closed == 1;
    o.series = (uint32_t)f.series;
    o.stamp_t0 = f.stamp_t0;
    if (o.conns < o.threads) o.conns = o.threads;
    if (o.series) o.threads = 1; /* ids (and times per series) in order: one loop */
    uint8_t *body;
    if (ps_bench_read_file(o.body_path, &body, &g_body_len) != 0) {
        fprintf(stderr, "bench_overload_send: %s: %s\n", o.body_path, strerror(errno));
        return 2;
    }
    g_body = body;
    signal(SIGPIPE, SIG_IGN);
    struct sigaction sa = {.sa_handler = on_sigint};
    sigaction(SIGINT, &sa, NULL);

    worker_t *ws = calloc(o.threads, sizeof *ws);
    pthread_t *tids = calloc(o.threads, sizeof *tids);
    if (!ws || !tids) return 2;
    for (uint32_t t = 0; t < o.threads; t++) {
        worker_t *w = &ws[t];
        w->o = &o;
        w->index = t;
        w->rate = o.closed ? 1 : o.rate / o.threads;
        w->nconns = o.conns / o.threads + (t < o.conns % o.threads);
        w->conns = calloc(w->nconns, sizeof *w->conns);
        w->ep = epoll_create1(EPOLL_CLOEXEC);
        if (!w->conns || w->ep < 0) {
            fprintf(stderr, "bench_overload_send: out of memory or epoll: %s\n", strerror(errno));
            return 2;
        }
        for (uint32_t i = 0; i < w->nconns; i++) w->conns[i].fd = -1;
    }
    g_start = ps_bench_now();
    g_stop = g_start + o.duration;
    double cpu0 = ps_bench_self_cpu();
    for (uint32_t t = 0; t < o.threads; t++) pthread_create(&tids[t], NULL, worker_main, &ws[t]);
    for (uint32_t t = 0; t < o.threads; t++) pthread_join(tids[t], NULL);
    double elapsed = ps_bench_now() - g_start;
    double cpu = ps_bench_self_cpu() - cpu0;

    /* sum the workers */
    stats_t tot = {0};
    uint32_t opened = 0;
    for (uint32_t t = 0; t < o.threads; t++) {
        stats_t *s = &ws[t].st;
        opened += ws[t].opened;
        for (int k = 0; k < C_N; k++) {
            tot.count[k] += s->count[k];
            tot.retry_after[k] += s->retry_after[k];
            for (size_t j = 0; j < s->lat[k].n; j++) lat_add(&tot.lat[k], s->lat[k].v[j]);
        }
        tot.sent += s->sent;
        tot.skipped += s->skipped;
        tot.connects += s->connects;
        tot.unanswered += s->unanswered;
        for (int k = 0; k < TIMELINE_S; k++) tot.skipped_at[k] += s->skipped_at[k];
        for (size_t j = 0; j < s->nacked; j++) acked_add(&tot, s->acked[j]);
    }
    if (o.acked_path) {
        FILE *f = fopen(o.acked_path, "w");
        if (!f) {
            fprintf(stderr, "bench_overload_send: %s: %s\n", o.acked_path, strerror(errno));
            return 2;
        }
        for (size_t j = 0; j < tot.nacked; j++) fprintf(f, "%llu\n", (unsigned long long)tot.acked[j]);
        if (fclose(f) != 0) {
            fprintf(stderr, "bench_overload_send: %s: %s\n", o.acked_path, strerror(errno));
            return 2;
        }
    }
    /* the results, "key value" lines (overload.py reads them) */
    printf("duration %.3f\n", o.duration);
    printf("elapsed %.3f\n", elapsed);
    printf("rate %.3f\n", o.rate);
    printf("sent %llu\n", (unsigned long long)tot.sent);
    printf("next_id %llu\n", (unsigned long long)(o.id_base + ws[0].next_seq));
    printf("skipped %llu\n", (unsigned long long)tot.skipped);
    printf("skipped_at");
    for (int k = 0; k < TIMELINE_S; k++)
        if (tot.skipped_at[k]) printf(" %d:%u", k, tot.skipped_at[k]);
    printf("\n");
    printf("unanswered %llu\n", (unsigned long long)tot.unanswered);
    printf("connections %u\n", opened);
    printf("connects %llu\n", (unsigned long long)tot.connects);
    printf("sender_cpu %.3f\n", cpu);
    for (int k = 0; k < C_N; k++) {
        lat_t *l = &tot.lat[k];
        if (l->n) qsort(l->v, l->n, sizeof *l->v, cmp_double);
        double med = l->n ? l->v[l->n / 2] : 0, p99 = l->n ? l->v[(l->n * 99) / 100] : 0;
        double mx = l->n ? l->v[l->n - 1] : 0;
        printf("status %s %llu retry_after %llu latency_ms median %.1f p99 %.1f max %.1f\n", class_name[k],
               (unsigned long long)tot.count[k], (unsigned long long)tot.retry_after[k], med * 1000, p99 * 1000,
               mx * 1000);
    }
    for (uint32_t t = 0; t < o.threads; t++) {
        for (int k = 0; k < C_N; k++) free(ws[t].st.lat[k].v);
        free(ws[t].st.acked);
        free(ws[t].conns);
        close(ws[t].ep);
    }
    for (int k = 0; k < C_N; k++) free(tot.lat[k].v);
    free(tot.acked);
    free(ws);
    free(tids);
    free(body);
    return fflush(stdout) == 0 ? 0 : 2;
}
