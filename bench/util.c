/*
 * util.c - see util.h.
 */
#include "util.h"

#include <arpa/inet.h>
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <malloc.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#ifndef PS_TESTDATA
#define PS_TESTDATA "tests/testdata"
#endif

void ps_bench_malloc_tune(void)
{
    mallopt(M_TRIM_THRESHOLD, 1 << 30);
    mallopt(M_MMAP_THRESHOLD, 64 << 20);
}

double ps_bench_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

double ps_bench_self_cpu(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + (double)ru.ru_stime.tv_sec +
           ru.ru_stime.tv_usec / 1e6;
}

int ps_bench_read_file(const char *path, uint8_t **out, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL)
        return -1;
    ps_buf_t b = PS_BUF_INIT;
    for (;;) {
        uint8_t *p = ps_buf_reserve(&b, 65536);
        size_t n = fread(p, 1, 65536, f);
        b.len += n;
        if (n < 65536)
            break;
    }
    int bad = ferror(f);
    fclose(f);
    if (bad) {
        ps_buf_dispose(&b);
        return -1;
    }
    *out = b.data;
    *len = b.len;
    return 0;
}

const char *ps_bench_testdata(void)
{
    const char *e = getenv("PS_TESTDATA");
    return e != NULL && *e ? e : PS_TESTDATA;
}

void ps_bench_prometheus3_default(char *out, size_t n)
{
    const char *peers = getenv("PS_PEERS_DIR"), *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    if (peers != NULL && *peers)
        snprintf(out, n, "%s/prometheus-3.16.0/bin/prometheus", peers);
    else if (xdg != NULL && *xdg)
        snprintf(out, n, "%s/profstore-peers/prometheus-3.16.0/bin/prometheus", xdg);
    else
        snprintf(out, n, "%s/.cache/profstore-peers/prometheus-3.16.0/bin/prometheus", home ? home : "");
}

void ps_bench_profstore_path(char *out, size_t n, const char *given)
{
    if (given != NULL)
        snprintf(out, n, "%s", given);
    else
        ps_bench_default_profstore(out, n);
}

void ps_bench_default_profstore(char *out, size_t n)
{
    char exe[PATH_MAX];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (k <= 0) {
        snprintf(out, n, "build/profstore");
        return;
    }
    exe[k] = 0;
    snprintf(out, n, "%s/../profstore", dirname(exe));
    char *r = realpath(out, NULL);
    if (r != NULL) {
        snprintf(out, n, "%s", r);
        free(r);
    }
}

int ps_bench_mkdirs(const char *path)
{
    char tmp[PATH_MAX];
    snprintf(tmp, sizeof(tmp), "%s", path);
    for (char *p = tmp + 1; *p; p++)
        if (*p == '/') {
            *p = 0;
            if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
                return -1;
            *p = '/';
        }
    if (mkdir(tmp, 0755) != 0 && errno != EEXIST)
        return -1;
    return 0;
}

void ps_bench_rmrf(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        return;
    if (S_ISDIR(st.st_mode)) {
        DIR *d = opendir(path);
        if (d != NULL) {
            struct dirent *e;
            while ((e = readdir(d)) != NULL) {
                if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
                    continue;
                char sub[PATH_MAX];
                snprintf(sub, sizeof(sub), "%s/%s", path, e->d_name);
                ps_bench_rmrf(sub);
            }
            closedir(d);
        }
        rmdir(path);
    } else {
        unlink(path);
    }
}

void ps_bench_file_usage(const char *path, uint64_t *blocks_bytes, uint64_t *size)
{
    struct stat st;
    if (stat(path, &st) != 0) {
        *blocks_bytes = 0;
        *size = 0;
        return;
    }
    *blocks_bytes = (uint64_t)st.st_blocks * 512u;
    *size = (uint64_t)st.st_size;
}

/* ---- server ---- */

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0)
        return -1;
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = 0};
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t al = sizeof(a);
    int port = -1;
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) == 0 && getsockname(fd, (struct sockaddr *)&a, &al) == 0)
        port = ntohs(a.sin_port);
    close(fd);
    return port;
}

static void print_log_tail(const char *path)
{
    uint8_t *d;
    size_t n;
    if (ps_bench_read_file(path, &d, &n) != 0)
        return;
    size_t off = n > 3000 ? n - 3000 : 0;
    fprintf(stderr, "---- %s (tail) ----\n%.*s\n----\n", path, (int)(n - off), (const char *)d + off);
    free(d);
}

void ps_bench_print_log_tail(const char *path, int nlines, const char *indent)
{
    uint8_t *d;
    size_t n;
    if (ps_bench_read_file(path, &d, &n) != 0)
        return;
    size_t start = n;
    int lines = 0;
    while (start > 0) {
        if (d[start - 1] == '\n' && start != n && ++lines >= nlines)
            break;
        start--;
    }
    const char *p = (const char *)d + start, *end = (const char *)d + n;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        printf("%s%.*s\n", indent, (int)(eol - p > 400 ? 400 : eol - p), p);
        p = eol + 1;
    }
    free(d);
}

int ps_bench_server_start(ps_bench_server_t *s, const char *binary, const char *data_dir, const char *log_path,
                          const char *const *args)
{
    if (access(binary, X_OK) != 0) {
        fprintf(stderr, "bench: profstore binary %s is not executable (%s)\n", binary, strerror(errno));
        return -1;
    }
    const char *argv[64];
    int argc = 0;
    argv[argc++] = binary;
    argv[argc++] = "--listen";
    argv[argc++] = "127.0.0.1:{port}";
    argv[argc++] = "--data-dir";
    argv[argc++] = data_dir;
    argv[argc++] = "--web.enable-admin-api"; /* the benches compact through /api/v1/admin/compact */
    argv[argc++] = "--web.enable-lifecycle";
    for (int i = 0; args != NULL && args[i] != NULL && argc < 62; i++)
        argv[argc++] = args[i];
    argv[argc] = NULL;
    return ps_bench_exec_start(s, argv, log_path, "/-/ready");
}

int ps_bench_exec_start(ps_bench_server_t *s, const char *const *args, const char *log_path, const char *ready_path)
{
    memset(s, 0, sizeof(*s));
    snprintf(s->log, sizeof(s->log), "%s", log_path);
    const char *binary = args[0];
    if (access(binary, X_OK) != 0) {
        fprintf(stderr, "bench: %s is not executable (%s)\n", binary, strerror(errno));
        return -1;
    }
    s->port = free_port();
    if (s->port <= 0) {
        fprintf(stderr, "bench: cannot find a free port\n");
        return -1;
    }
    snprintf(s->url, sizeof(s->url), "http://127.0.0.1:%d", s->port);
    /* "{port}" in an argument becomes the port */
    static char subst[64][512];
    const char *argv[64];
    int argc = 0;
    for (int i = 0; args[i] != NULL && argc < 63; i++) {
        const char *at = strstr(args[i], "{port}");
        if (at == NULL) {
            argv[argc++] = args[i];
            continue;
        }
        snprintf(subst[argc], sizeof(subst[argc]), "%.*s%d%s", (int)(at - args[i]), args[i], s->port, at + 6);
        argv[argc] = subst[argc];
        argc++;
    }
    argv[argc] = NULL;

    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        perror("fork");
        return -1;
    }
    if (pid == 0) {
        prctl(PR_SET_PDEATHSIG, SIGTERM); /* if the benchmark dies, its server goes too */
        if (getenv("PS_BENCH_CORE") != NULL && *getenv("PS_BENCH_CORE") != '0') {
            /* debugging a crash: allow a core dump, written next to the log (core_pattern permitting) */
            struct rlimit rl = {RLIM_INFINITY, RLIM_INFINITY};
            setrlimit(RLIMIT_CORE, &rl);
            char dir[PATH_MAX];
            snprintf(dir, sizeof(dir), "%s", log_path);
            if (chdir(dirname(dir)) != 0)
                perror("chdir");
        }
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
            close(fd);
        }
        execv(binary, (char *const *)argv);
        fprintf(stderr, "exec %s: %s\n", binary, strerror(errno));
        _exit(127);
    }
    s->pid = pid;
    char url[128];
    snprintf(url, sizeof(url), "%s%s", s->url, ready_path);
    double deadline = ps_bench_now() + 20;
    while (ps_bench_now() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            fprintf(stderr, "bench: %s exited during start-up (status %d)\n", binary, st);
            print_log_tail(log_path);
            s->pid = 0;
            return -1;
        }
        if (ps_bench_http("GET", url, NULL, 0, NULL) == 200)
            return 0;
        usleep(20 * 1000);
    }
    fprintf(stderr, "bench: %s not ready after 20 s\n", binary);
    print_log_tail(log_path);
    ps_bench_server_stop(s);
    return -1;
}

int ps_bench_server_alive(ps_bench_server_t *s, int *status)
{
    if (s->pid <= 0)
        return 0;
    int st = 0;
    if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
        s->pid = 0;
        s->exit_status = st;
        if (status != NULL)
            *status = st;
        return 0;
    }
    return 1;
}

void ps_bench_describe_status(int st, char *out, size_t n)
{
    if (WIFSIGNALED(st))
        snprintf(out, n, "killed by signal %d (%s)%s", WTERMSIG(st), strsignal(WTERMSIG(st)),
                 WCOREDUMP(st) ? ", core dumped" : "");
    else if (WIFEXITED(st))
        snprintf(out, n, "exited with status %d", WEXITSTATUS(st));
    else
        snprintf(out, n, "wait status %d", st);
}

int ps_bench_server_stop(ps_bench_server_t *s)
{
    if (s->pid <= 0)
        return s->exit_status;
    if (s->pid <= 0)
        return -1;
    kill(s->pid, SIGTERM);
    double deadline = ps_bench_now() + 30;
    int st = 0;
    for (;;) {
        pid_t r = waitpid(s->pid, &st, WNOHANG);
        if (r == s->pid)
            break;
        if (r < 0) {
            st = -1;
            break;
        }
        if (ps_bench_now() > deadline) {
            fprintf(stderr, "bench: profstore did not stop within 30 s after SIGTERM; killing it\n");
            kill(s->pid, SIGKILL);
            waitpid(s->pid, &st, 0);
            break;
        }
        usleep(10 * 1000);
    }
    s->pid = 0;
    return st;
}

/* utime and stime (seconds) from a /proc/.../stat file */
static int read_stat_cpu(const char *path, double *user, double *sys)
{
    uint8_t *d;
    size_t n;
    if (ps_bench_read_file(path, &d, &n) != 0)
        return -1;
    d = ps_xrealloc(d, n + 1);
    d[n] = 0;
    /* fields after "(comm)": state is field 3; utime 14, stime 15 */
    char *p = strrchr((char *)d, ')');
    int rc = -1;
    if (p != NULL) {
        unsigned long ut = 0, stt = 0;
        if (sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %lu %lu", &ut, &stt) == 2) {
            long hz = sysconf(_SC_CLK_TCK);
            *user = (double)ut / (double)hz;
            *sys = (double)stt / (double)hz;
            rc = 0;
        }
    }
    free(d);
    return rc;
}

static int cmp_int(const void *a, const void *b) { return *(const int *)a - *(const int *)b; }

int ps_bench_proc_read(pid_t pid, ps_bench_proc_t *out)
{
    memset(out, 0, sizeof(*out));
    char path[64];
    uint8_t *d;
    size_t n;
    snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
    if (read_stat_cpu(path, &out->cpu_user, &out->cpu_sys) != 0)
        return -1;
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *dir = opendir(path);
    if (dir != NULL) {
        struct dirent *e;
        while ((e = readdir(dir)) != NULL && out->nthreads < PS_BENCH_MAX_THREADS)
            if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
                out->tid[out->nthreads++] = atoi(e->d_name);
        closedir(dir);
        qsort(out->tid, out->nthreads, sizeof(int), cmp_int);
        for (uint32_t i = 0; i < out->nthreads; i++) {
            char tp[96];
            double u = 0, s = 0;
            snprintf(tp, sizeof(tp), "/proc/%d/task/%d/stat", (int)pid, out->tid[i]);
            read_stat_cpu(tp, &u, &s);
            out->thread_cpu[i] = u + s;
            /* schedstat's first field: the thread's time on a CPU in ns (stat's are 10 ms ticks) */
            snprintf(tp, sizeof(tp), "/proc/%d/task/%d/schedstat", (int)pid, out->tid[i]);
            FILE *sf = fopen(tp, "r");
            unsigned long long ns;
            if (sf != NULL && fscanf(sf, "%llu", &ns) == 1) {
                out->thread_cpu[i] = (double)ns / 1e9;
                out->thread_exact++;
            }
            if (sf != NULL)
                fclose(sf);
            snprintf(tp, sizeof(tp), "/proc/%d/task/%d/comm", (int)pid, out->tid[i]);
            FILE *f = fopen(tp, "r");
            if (f != NULL) {
                if (fgets(out->thread_name[i], sizeof(out->thread_name[i]), f) != NULL)
                    out->thread_name[i][strcspn(out->thread_name[i], "\n")] = '\0';
                fclose(f);
            }
        }
    }
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    if (ps_bench_read_file(path, &d, &n) != 0)
        return -1;
    d = ps_xrealloc(d, n + 1);
    d[n] = 0;
    char *l;
    if ((l = strstr((char *)d, "VmHWM:")) != NULL)
        out->vm_hwm_kb = strtoull(l + 6, NULL, 10);
    if ((l = strstr((char *)d, "VmRSS:")) != NULL)
        out->vm_rss_kb = strtoull(l + 6, NULL, 10);
    free(d);
    return 0;
}

int ps_bench_sys_read(ps_bench_sys_t *out)
{
    memset(out, 0, sizeof(*out));
    FILE *f = fopen("/proc/stat", "r");
    if (f == NULL)
        return -1;
    unsigned long long v[10] = {0};
    int n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4],
                   &v[5], &v[6], &v[7], &v[8], &v[9]);
    fclose(f);
    if (n < 5)
        return -1;
    double hz = (double)sysconf(_SC_CLK_TCK);
    /* user nice system idle iowait irq softirq steal (guest time is already in user) */
    unsigned long long busy = v[0] + v[1] + v[2] + v[5] + v[6] + v[7];
    out->busy = (double)busy / hz;
    out->iowait = (double)v[4] / hz;
    return 0;
}

/* ---- plain requests ---- */

static size_t to_buf(char *ptr, size_t size, size_t nmemb, void *ud)
{
    if (ud != NULL)
        ps_buf_append(ud, ptr, size * nmemb);
    return size * nmemb;
}

long ps_bench_http(const char *method, const char *url, const void *body, size_t len, ps_buf_t *out)
{
    CURL *h = curl_easy_init();
    if (h == NULL)
        return -1;
    struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 3600L);
    if (strcmp(method, "POST") == 0) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body != NULL ? body : "");
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    }
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    curl_easy_cleanup(h);
    return code;
}

double ps_bench_metric(const char *text, size_t len, const char *name)
{
    size_t nl = strlen(name);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > nl && memcmp(p, name, nl) == 0 && p[nl] == ' ')
            return strtod(p + nl + 1, NULL);
        p = eol + 1;
    }
    return -1;
}

/* ---- pusher ---- */

typedef struct slot {
    CURL *h;
    int64_t key;
    double t0;
    uint8_t *body; /* owned copy when copy_bodies */
    size_t cap;
    ps_buf_t resp;
} slot_t;

struct ps_bench_pusher {
    CURLM *m;
    uint32_t conns, nbusy;
    int copy;
    slot_t *slots;
    uint32_t *free_ids;
    uint32_t nfree;
    struct curl_slist *hdr;
    ps_bench_push_stats_t st;
    size_t latcap;
};

static size_t to_slot(char *ptr, size_t size, size_t nmemb, void *ud)
{
    slot_t *s = ud;
    if (s->resp.len < 4096)
        ps_buf_append(&s->resp, ptr, size * nmemb);
    return size * nmemb;
}

void ps_bench_pusher_headers(ps_bench_pusher_t *p, const char *const *headers)
{
    curl_slist_free_all(p->hdr);
    p->hdr = curl_slist_append(NULL, "Expect:");
    for (int i = 0; headers[i] != NULL; i++)
        p->hdr = curl_slist_append(p->hdr, headers[i]);
    for (uint32_t i = 0; i < p->conns; i++)
        curl_easy_setopt(p->slots[i].h, CURLOPT_HTTPHEADER, p->hdr);
}

ps_bench_pusher_t *ps_bench_pusher_new(uint32_t conns, int copy_bodies)
{
    ps_bench_pusher_t *p = ps_xcalloc(1, sizeof(*p));
    p->m = curl_multi_init();
    p->conns = conns;
    p->copy = copy_bodies;
    p->slots = ps_xcalloc(conns, sizeof(slot_t));
    p->free_ids = ps_xcalloc(conns, sizeof(uint32_t));
    p->hdr = curl_slist_append(NULL, "Expect:");
    p->hdr = curl_slist_append(p->hdr, "Content-Type: application/octet-stream");
    curl_multi_setopt(p->m, CURLMOPT_MAX_TOTAL_CONNECTIONS, (long)conns);
    curl_multi_setopt(p->m, CURLMOPT_MAXCONNECTS, (long)conns);
    for (uint32_t i = 0; i < conns; i++) {
        slot_t *s = &p->slots[i];
        s->h = curl_easy_init();
        s->key = -1;
        curl_easy_setopt(s->h, CURLOPT_PRIVATE, s);
        curl_easy_setopt(s->h, CURLOPT_WRITEFUNCTION, to_slot);
        curl_easy_setopt(s->h, CURLOPT_WRITEDATA, s);
        curl_easy_setopt(s->h, CURLOPT_HTTPHEADER, p->hdr);
        curl_easy_setopt(s->h, CURLOPT_NOSIGNAL, 1L);
        curl_easy_setopt(s->h, CURLOPT_TCP_NODELAY, 1L);
        curl_easy_setopt(s->h, CURLOPT_TCP_KEEPALIVE, 1L);
        curl_easy_setopt(s->h, CURLOPT_POST, 1L);
        curl_easy_setopt(s->h, CURLOPT_HTTP_VERSION, (long)CURL_HTTP_VERSION_1_1);
        curl_easy_setopt(s->h, CURLOPT_TIMEOUT, 600L);
        p->free_ids[p->nfree++] = conns - 1 - i;
    }
    p->latcap = 1024;
    p->st.lat = ps_xmalloc(p->latcap * sizeof(double));
    return p;
}

static int collect(ps_bench_pusher_t *p)
{
    int done = 0, left;
    CURLMsg *msg;
    double now = ps_bench_now();
    while ((msg = curl_multi_info_read(p->m, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        slot_t *s = NULL;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_PRIVATE, (char **)&s);
        long code = 0;
        curl_easy_getinfo(msg->easy_handle, CURLINFO_RESPONSE_CODE, &code);
        if (msg->data.result == CURLE_OK && code >= 200 && code < 300) {
            p->st.ok++;
        } else {
            if (p->st.failed == 0) {
                if (msg->data.result != CURLE_OK)
                    snprintf(p->st.first_error, sizeof(p->st.first_error), "curl: %s",
                             curl_easy_strerror(msg->data.result));
                else
                    snprintf(p->st.first_error, sizeof(p->st.first_error), "HTTP %ld: %.*s", code,
                             (int)(s->resp.len > 400 ? 400 : s->resp.len), (const char *)s->resp.data);
            }
            p->st.failed++;
        }
        if (p->st.nlat == p->latcap) {
            p->latcap *= 2;
            p->st.lat = ps_xrealloc(p->st.lat, p->latcap * sizeof(double));
        }
        p->st.lat[p->st.nlat++] = now - s->t0;
        curl_multi_remove_handle(p->m, s->h);
        s->key = -1;
        p->free_ids[p->nfree++] = (uint32_t)(s - p->slots);
        p->nbusy--;
        done++;
    }
    return done;
}

/* Runs the transfers; if wait, blocks until at least one request finished. */
static void step(ps_bench_pusher_t *p, int wait)
{
    int running;
    do {
        curl_multi_perform(p->m, &running);
        if (collect(p) > 0 || !wait || p->nbusy == 0)
            return;
        curl_multi_poll(p->m, NULL, 0, 100, NULL);
    } while (1);
}

static int key_busy(const ps_bench_pusher_t *p, int64_t key)
{
    if (key < 0)
        return 0;
    for (uint32_t i = 0; i < p->conns; i++)
        if (p->slots[i].key == key)
            return 1;
    return 0;
}

void ps_bench_pusher_post(ps_bench_pusher_t *p, int64_t key, const char *url, const void *body, size_t len)
{
    while (p->nfree == 0 || key_busy(p, key))
        step(p, 1);
    slot_t *s = &p->slots[p->free_ids[--p->nfree]];
    s->key = key;
    const void *data = body;
    if (p->copy) {
        if (s->cap < len) {
            s->body = ps_xrealloc(s->body, len);
            s->cap = len;
        }
        memcpy(s->body, body, len);
        data = s->body;
    }
    ps_buf_reset(&s->resp);
    curl_easy_setopt(s->h, CURLOPT_URL, url);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDS, data);
    curl_easy_setopt(s->h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)len);
    s->t0 = ps_bench_now();
    curl_multi_add_handle(p->m, s->h);
    p->nbusy++;
    step(p, 0);
}

void ps_bench_pusher_drain(ps_bench_pusher_t *p)
{
    while (p->nbusy > 0)
        step(p, 1);
}

const ps_bench_push_stats_t *ps_bench_pusher_stats(ps_bench_pusher_t *p) { return &p->st; }

void ps_bench_pusher_reset_stats(ps_bench_pusher_t *p)
{
    p->st.ok = p->st.failed = 0;
    p->st.nlat = 0;
    p->st.first_error[0] = 0;
}

void ps_bench_pusher_free(ps_bench_pusher_t *p)
{
    if (p == NULL)
        return;
    ps_bench_pusher_drain(p);
    for (uint32_t i = 0; i < p->conns; i++) {
        curl_easy_cleanup(p->slots[i].h);
        free(p->slots[i].body);
        ps_buf_dispose(&p->slots[i].resp);
    }
    curl_multi_cleanup(p->m);
    curl_slist_free_all(p->hdr);
    free(p->slots);
    free(p->free_ids);
    free(p->st.lat);
    free(p);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double ps_bench_quantile(double *v, size_t n, double q)
{
    if (n == 0)
        return 0;
    qsort(v, n, sizeof(double), cmp_double);
    size_t i = (size_t)(q * (double)(n - 1) + 0.5);
    return v[i >= n ? n - 1 : i];
}

void ps_bench_urlencode(const char *s, char *out, size_t n)
{
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (; *s && o + 4 < n; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            out[o++] = (char)c;
        } else {
            out[o++] = '%';
            out[o++] = hex[c >> 4];
            out[o++] = hex[c & 15];
        }
    }
    out[o] = 0;
}

void ps_bench_flags(const ps_flagset_t *fs, int argc, char **argv, void *opts)
{
    ps_flags_defaults(fs, opts);
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_flags_parse(fs, argc, argv, opts, &err);
    if (rc == 0)
        return;
    ps_buf_t help = PS_BUF_INIT;
    ps_flags_help(fs, &help);
    if (rc > 0) { /* --help, the only action of a benchmark's table */
        fwrite(help.data, 1, help.len, stdout);
        exit(0);
    }
    fprintf(stderr, "%s: %s\n", fs->prog, err.msg);
    fwrite(help.data, 1, help.len, stderr);
    exit(2);
}

void ps_bench_flags_fail(const ps_flagset_t *fs, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "%s: ", fs->prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    exit(2);
}

void ps_bench_print_loadavg(void)
{
    char la[128] = "?";
    FILE *f = fopen("/proc/loadavg", "r");
    if (f != NULL) {
        if (fgets(la, sizeof(la), f) != NULL)
            la[strcspn(la, "\n")] = 0;
        fclose(f);
    }
    printf("  load average before the run: %s\n", la);
}
