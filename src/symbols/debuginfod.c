/*
 * debuginfod.c - debug files fetched from debuginfod servers in background threads (symbols.h).
 *
 * libdebuginfod 0.188 (elfutils) does the HTTP: debuginfod_find_debuginfo asks every URL of
 * $DEBUGINFOD_URLS at once for /buildid/<hex>/debuginfo, keeps the first answer, and writes it to
 * $DEBUGINFOD_CACHE_PATH/<hex>/debuginfo (a temporary file renamed when complete); a 404 leaves
 * an empty file there, which makes it answer -ENOENT without asking for the cache directory's
 * cache_miss_s seconds. Its limits: $DEBUGINFOD_TIMEOUT (at least 100 KiB/s over that many
 * seconds), $DEBUGINFOD_MAXTIME (whole transfer, seconds), $DEBUGINFOD_RETRY_LIMIT (tries again
 * at once after an error other than a 404). It calls the progress function about once a second (curl_multi_wait of 1 s) with
 * the bytes received so far once it has picked a server, and a non-zero answer ends the transfer.
 *
 * Ours on top: each worker has its own client (one is not thread safe); the progress function
 * ends a fetch past our deadline (milliseconds, not whole seconds), past max_bytes (a server that
 * sends no Content-Length), or on shutdown. A file it returns is checked here (ELF, its GNU build
 * id note equal to the one asked for, its size) and moved to <cache>/.build-id/ab/cdef….debug,
 * which only accepted files reach: a lookup needs no state to trust what is there, and the files
 * are found again after a restart. A refused file is deleted.
 *
 * State per build id (one map, value = until_ns << 2 | state): queued, under way, failed until.
 */
#include <elfutils/debuginfod.h>
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <libelf.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/hash.h"
#include "core/metrics.h"
#include "symbols_int.h"

#define BID_MAX 128          /* as symbols.c's BUILD_ID_MAX */
#define ENTRIES_MAX 65536    /* build ids remembered; then those not queued are forgotten */

enum { ST_QUEUED = 1, ST_FETCHING = 2, ST_FAILED = 3 };

typedef struct worker {
    struct ps_dbgd *d;
    pthread_t th;
    int64_t deadline;     /* of the fetch under way */
    bool timed_out, too_big, stopped;
} worker_t;

struct ps_dbgd {
    char *dir;            /* the cache directory */
    int64_t timeout_ns, not_found_ns, error_ns;
    uint64_t max_bytes;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool stop;            /* under mu; also read by the progress function */
    atomic_bool stopping;
    ps_hmap_t state;      /* build id -> until_ns << 2 | ST_* */
    char (*queue)[BID_MAX + 1];
    size_t qhead, qlen;
    uint64_t pending;     /* queued or under way */
    atomic_uint_fast64_t landed;
    ps_counter_t ok, not_found, timeouts, errors, refused, bytes, queue_full;
    worker_t workers[PS_SYMBOLS_DEBUGINFOD_WORKERS];
    size_t nworkers;
};

static int64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void landed_path(const ps_dbgd_t *d, const char *bid, char *path, size_t cap)
{
    snprintf(path, cap, "%s/.build-id/%.2s/%s.debug", d->dir, bid, bid + 2);
}

/* ---- a fetch ---- */

static int on_progress(debuginfod_client *c, long a, long b)
{
    worker_t *w = debuginfod_get_user_data(c);
    if (atomic_load(&w->d->stopping)) {
        w->stopped = true;
        return 1;
    }
    if (now_ns() >= w->deadline) {
        w->timed_out = true;
        return 1;
    }
    /* a: bytes received once a server is picked (a count of turns before); b: its Content-Length */
    if ((uint64_t)(a < 0 ? 0 : a) > w->d->max_bytes || (uint64_t)(b < 0 ? 0 : b) > w->d->max_bytes) {
        w->too_big = true;
        return 1;
    }
    return 0;
}

/* Whether the file open at fd is an ELF file whose GNU build id is bid (hex), of at most max bytes;
 * its size in *size. */
static bool acceptable(int fd, const char *bid, uint64_t max, uint64_t *size)
{
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size <= 0 || (uint64_t)st.st_size > max)
        return false;
    *size = (uint64_t)st.st_size;
    Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
    if (elf == NULL)
        return false;
    bool ok = false;
    const void *id = NULL;
    ssize_t n = elf_kind(elf) == ELF_K_ELF ? dwelf_elf_gnu_build_id(elf, &id) : -1;
    if (n > 0 && (size_t)n * 2 == strlen(bid)) {
        ok = true;
        for (ssize_t i = 0; i < n && ok; i++) {
            char hx[3];
            snprintf(hx, sizeof(hx), "%02x", ((const unsigned char *)id)[i]);
            ok = hx[0] == bid[2 * i] && hx[1] == bid[2 * i + 1];
        }
    }
    elf_end(elf);
    return ok;
}

/* Removes what libdebuginfod left for bid: its file (a refused one, or the empty "not found"
 * marker of a fetch we ended) and its directory. */
static void drop_cached(const ps_dbgd_t *d, const char *bid, bool only_empty)
{
    char p[4096];
    struct stat st;
    snprintf(p, sizeof(p), "%s/%s/debuginfo", d->dir, bid);
    if (stat(p, &st) == 0 && (!only_empty || st.st_size == 0))
        unlink(p);
    snprintf(p, sizeof(p), "%s/%s", d->dir, bid);
    rmdir(p); /* fails when not empty: fine */
}

/* Fetches bid with c: the outcome's ST_FAILED retry delay (0: accepted), counters updated. */
static int64_t fetch(ps_dbgd_t *d, worker_t *w, debuginfod_client *c, const char *bid)
{
    w->timed_out = w->too_big = w->stopped = false;
    w->deadline = now_ns() + d->timeout_ns;
    char *path = NULL;
    int fd = debuginfod_find_debuginfo(c, (const unsigned char *)bid, 0, &path);
    int64_t retry = d->error_ns;
    if (fd < 0) {
        if (w->timed_out || w->too_big || w->stopped)
            drop_cached(d, bid, true); /* not a 404: no "not found" marker */
        if (w->too_big || fd == -EFBIG)
            ps_counter_add(&d->refused, 1);
        else if (w->timed_out || fd == -ETIME)
            ps_counter_add(&d->timeouts, 1);
        else if (fd == -ENOENT && !w->stopped) {
            ps_counter_add(&d->not_found, 1);
            retry = d->not_found_ns;
        } else
            ps_counter_add(&d->errors, 1);
        free(path);
        return retry;
    }
    uint64_t size = 0;
    bool ok = acceptable(fd, bid, d->max_bytes, &size);
    close(fd);
    char dest[4096];
    if (ok) {
        char dir[4096];
        snprintf(dir, sizeof(dir), "%s/.build-id", d->dir);
        mkdir(dir, 0755);
        snprintf(dir, sizeof(dir), "%s/.build-id/%.2s", d->dir, bid);
        mkdir(dir, 0755);
        landed_path(d, bid, dest, sizeof(dest));
        if (path == NULL || rename(path, dest) != 0) {
            if (path != NULL)
                unlink(path);
            drop_cached(d, bid, false);
            free(path);
            ps_counter_add(&d->errors, 1); /* the counters last: what they count is done */
            return retry;
        }
        drop_cached(d, bid, false);
        atomic_fetch_add(&d->landed, 1); /* before the counter a test may wait on */
        ps_counter_add(&d->ok, 1);
        ps_counter_add(&d->bytes, size);
        free(path);
        return 0;
    }
    if (path != NULL)
        unlink(path);
    drop_cached(d, bid, false);
    free(path);
    ps_counter_add(&d->refused, 1);
    return retry;
}

static void *work(void *arg)
{
    worker_t *w = arg;
    ps_dbgd_t *d = w->d;
    debuginfod_client *c = debuginfod_begin();
    if (c != NULL) {
        debuginfod_set_user_data(c, w);
        debuginfod_set_progressfn(c, on_progress);
    }
    char bid[BID_MAX + 1];
    pthread_mutex_lock(&d->mu);
    for (;;) {
        while (!d->stop && d->qlen == 0)
            pthread_cond_wait(&d->cv, &d->mu);
        if (d->stop)
            break;
        memcpy(bid, d->queue[d->qhead], sizeof(bid));
        d->qhead = (d->qhead + 1) % PS_SYMBOLS_DEBUGINFOD_QUEUE;
        d->qlen--;
        size_t bl = strlen(bid);
        ps_hmap_put(&d->state, bid, bl, ST_FETCHING);
        pthread_mutex_unlock(&d->mu);
        int64_t retry = d->error_ns;
        if (c != NULL)
            retry = fetch(d, w, c, bid); /* the network: no lock held */
        else
            ps_counter_add(&d->errors, 1);
        pthread_mutex_lock(&d->mu);
        d->pending--;
        if (retry == 0) {
            ps_hmap_put(&d->state, bid, bl, 0); /* landed: the file says so from now on */
        } else
            ps_hmap_put(&d->state, bid, bl, (uint64_t)(now_ns() + retry) << 2 | ST_FAILED);
    }
    pthread_mutex_unlock(&d->mu);
    debuginfod_end(c);
    return NULL;
}

/* ---- the API ---- */

static bool url_ok(const char *u, size_t n)
{
    static const char *const schemes[] = {"http://", "https://", "file://"};
    for (size_t i = 0; i < 3; i++) {
        size_t k = strlen(schemes[i]);
        if (n > k && strncasecmp(u, schemes[i], k) == 0)
            return true;
    }
    return false;
}

static int mkdirs(const char *dir)
{
    char p[4096];
    size_t n = strlen(dir);
    if (n == 0 || n >= sizeof(p))
        return -1;
    memcpy(p, dir, n + 1);
    for (size_t i = 1; i <= n; i++) {
        if (p[i] == '/' || p[i] == 0) {
            char c = p[i];
            p[i] = 0;
            if (mkdir(p, 0755) != 0 && errno != EEXIST)
                return -1;
            p[i] = c;
        }
    }
    struct stat st;
    return stat(dir, &st) == 0 && S_ISDIR(st.st_mode) ? 0 : -1;
}

ps_dbgd_t *ps_dbgd_new(const ps_symbols_debuginfod_t *o, ps_err_t *err)
{
    /* the URLs: at least one, each http://, https:// or file:// */
    const char *u = o->urls ? o->urls : "";
    size_t nurls = 0;
    for (const char *p = u; *p;) {
        while (*p == ' ')
            p++;
        size_t n = strcspn(p, " ");
        if (n == 0)
            break;
        if (!url_ok(p, n)) {
            ps_err_set(err, PS_EINVAL, "debuginfod URL \"%.*s\" is not http://, https:// or file://", (int)(n > 200 ? 200 : n), p);
            return NULL;
        }
        nurls++;
        p += n;
    }
    if (nurls == 0) {
        ps_err_set(err, PS_EINVAL, "no debuginfod URL");
        return NULL;
    }
    if (o->cache_dir == NULL || mkdirs(o->cache_dir) != 0) {
        ps_err_set(err, PS_ESTORAGE, "debuginfod cache directory \"%s\": %s", o->cache_dir ? o->cache_dir : "",
                   strerror(errno ? errno : EINVAL));
        return NULL;
    }
    ps_dbgd_t *d = ps_xcalloc(1, sizeof(*d));
    d->dir = ps_xstrndup(o->cache_dir, strlen(o->cache_dir));
    d->timeout_ns = o->timeout_ns > 0 ? o->timeout_ns : 120 * 1000000000LL;
    d->max_bytes = o->max_bytes ? o->max_bytes : PS_SYMBOLS_DEBUGINFOD_MAX_BYTES;
    d->not_found_ns = o->not_found_ns > 0 ? o->not_found_ns : PS_SYMBOLS_DEBUGINFOD_NOT_FOUND_NS;
    d->error_ns = o->error_ns > 0 ? o->error_ns : PS_SYMBOLS_DEBUGINFOD_ERROR_NS;
    /* libdebuginfod's settings are environment variables, read at each fetch */
    char v[64];
    setenv(DEBUGINFOD_URLS_ENV_VAR, u, 1);
    setenv(DEBUGINFOD_CACHE_PATH_ENV_VAR, d->dir, 1);
    long secs = (long)((d->timeout_ns + 999999999) / 1000000000);
    snprintf(v, sizeof(v), "%ld", secs);
    setenv(DEBUGINFOD_TIMEOUT_ENV_VAR, v, 1);
    setenv(DEBUGINFOD_MAXTIME_ENV_VAR, v, 1);
    /* not $DEBUGINFOD_MAXSIZE: with it set, 0.188 dprintf()s to its verbose fd even when there is
     * none (-1), which leaks glibc's buffer on each fetch; the progress function sees the
     * Content-Length and ends the fetch instead */
    unsetenv(DEBUGINFOD_MAXSIZE_ENV_VAR);
    setenv(DEBUGINFOD_RETRY_LIMIT_ENV_VAR, "0", 1); /* one try per fetch: ours come error_ns later */
    unsetenv(DEBUGINFOD_PROGRESS_ENV_VAR); /* would print to stderr */
    unsetenv(DEBUGINFOD_VERBOSE_ENV_VAR);
    /* its "not found" marker lasts as long as ours */
    char p[4096];
    snprintf(p, sizeof(p), "%s/cache_miss_s", d->dir);
    FILE *f = fopen(p, "w");
    if (f != NULL) {
        fprintf(f, "%lld", (long long)(d->not_found_ns / 1000000000));
        fclose(f);
    }
    elf_version(EV_CURRENT);
    pthread_mutex_init(&d->mu, NULL);
    pthread_cond_init(&d->cv, NULL);
    ps_hmap_init(&d->state);
    d->queue = ps_xcalloc(PS_SYMBOLS_DEBUGINFOD_QUEUE, sizeof(*d->queue));
    for (size_t i = 0; i < PS_SYMBOLS_DEBUGINFOD_WORKERS; i++) {
        d->workers[i].d = d;
        if (pthread_create(&d->workers[i].th, NULL, work, &d->workers[i]) != 0)
            break;
        d->nworkers++;
    }
    return d;
}

void ps_dbgd_free(ps_dbgd_t *d)
{
    if (d == NULL)
        return;
    pthread_mutex_lock(&d->mu);
    d->stop = true;
    atomic_store(&d->stopping, true);
    pthread_cond_broadcast(&d->cv);
    pthread_mutex_unlock(&d->mu);
    for (size_t i = 0; i < d->nworkers; i++)
        pthread_join(d->workers[i].th, NULL);
    ps_hmap_dispose(&d->state);
    free(d->queue);
    pthread_cond_destroy(&d->cv);
    pthread_mutex_destroy(&d->mu);
    free(d->dir);
    free(d);
}

uint64_t ps_dbgd_landed(ps_dbgd_t *d)
{
    return d == NULL ? 0 : atomic_load(&d->landed);
}

bool ps_dbgd_find(ps_dbgd_t *d, const char *bid, char *path, size_t cap)
{
    if (d == NULL)
        return false;
    landed_path(d, bid, path, cap);
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
        return true;
    size_t bl = strlen(bid);
    int64_t now = now_ns();
    pthread_mutex_lock(&d->mu);
    uint64_t v = 0;
    bool known = ps_hmap_get(&d->state, bid, bl, &v);
    int state = (int)(v & 3);
    if (known && (state == ST_QUEUED || state == ST_FETCHING || (state == ST_FAILED && now < (int64_t)(v >> 2)))) {
        pthread_mutex_unlock(&d->mu);
        return false;
    }
    if (!known && d->state.count >= ENTRIES_MAX && d->pending == 0)
        ps_hmap_clear(&d->state); /* many build ids: forget the failed ones (asked again) */
    if (d->stop || d->qlen == PS_SYMBOLS_DEBUGINFOD_QUEUE || d->state.count >= ENTRIES_MAX) {
        ps_counter_add(&d->queue_full, 1);
        pthread_mutex_unlock(&d->mu);
        return false;
    }
    memcpy(d->queue[(d->qhead + d->qlen) % PS_SYMBOLS_DEBUGINFOD_QUEUE], bid, bl + 1);
    d->qlen++;
    d->pending++;
    ps_hmap_put(&d->state, bid, bl, ST_QUEUED);
    pthread_cond_signal(&d->cv);
    pthread_mutex_unlock(&d->mu);
    return false;
}

void ps_dbgd_stats(ps_dbgd_t *d, ps_symbols_debuginfod_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    if (d == NULL)
        return;
    st->ok = ps_counter_get(&d->ok);
    st->not_found = ps_counter_get(&d->not_found);
    st->timeouts = ps_counter_get(&d->timeouts);
    st->errors = ps_counter_get(&d->errors);
    st->refused = ps_counter_get(&d->refused);
    st->fetches = st->ok + st->not_found + st->timeouts + st->errors + st->refused;
    st->bytes = ps_counter_get(&d->bytes);
    st->queue_full = ps_counter_get(&d->queue_full);
    pthread_mutex_lock(&d->mu);
    st->pending = d->pending;
    pthread_mutex_unlock(&d->mu);
}

static const char *const result_label[] = {"result", NULL};
static const ps_metric_t m_fetches = {"profstore_debuginfod_fetches_total", PS_COUNTER,
                                      "Debug files fetched from debuginfod servers, by outcome: ok (accepted), "
                                      "not_found, timeout, error, refused (not ELF, another build id, too large).",
                                      result_label},
                         m_bytes = {"profstore_debuginfod_fetched_bytes_total", PS_COUNTER,
                                    "Bytes of the debug files accepted from debuginfod servers.", NULL},
                         m_queue_full = {"profstore_debuginfod_queue_full_total", PS_COUNTER,
                                         "Build ids not queued for a fetch because the queue was full (asked again "
                                         "at a later read).",
                                         NULL},
                         m_pending = {"profstore_debuginfod_pending", PS_GAUGE,
                                      "Debuginfod fetches queued or under way.", NULL};

void ps_dbgd_metrics(ps_dbgd_t *d, ps_buf_t *b)
{
    if (d == NULL)
        return;
    ps_symbols_debuginfod_stats_t st;
    ps_dbgd_stats(d, &st);
    ps_metric_head(b, &m_fetches);
    const char *names[] = {"ok", "not_found", "timeout", "error", "refused"};
    uint64_t vals[] = {st.ok, st.not_found, st.timeouts, st.errors, st.refused};
    for (size_t i = 0; i < 5; i++)
        ps_metric_u64(b, &m_fetches, NULL, &names[i], vals[i]);
    ps_metric_write_u64(b, &m_bytes, st.bytes);
    ps_metric_write_u64(b, &m_queue_full, st.queue_full);
    ps_metric_write_u64(b, &m_pending, st.pending);
}
