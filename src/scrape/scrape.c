/*
 * scrape.c - the scraper thread (see scrape.h).
 *
 * One thread owns every target and every libcurl easy handle. Its loop:
 *   apply a pending reload -> refresh service discovery (inotify events, refresh intervals,
 *   http_sd answers) -> rebuild the target set when groups changed -> start the scrapes that are
 *   due (a min-heap by next due time) -> handle finished transfers (decode, delta, hand to the
 *   writer) -> handle the writer's answers (health) -> epoll_wait on libcurl's sockets (the multi
 *   socket API), an eventfd for wake-ups and inotify, until the next due time or libcurl's timer.
 * HTTP threads read target state for /api/v1/targets and /metrics under the mutex.
 * The schedule (heap and ticks) is schedule.c, the deltas of cumulative profiles delta.c.
 */
#include "scrape.h"

#include <curl/curl.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core/fmt.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/thread.h"
#include "core/timeutil.h"
#include "core/varint.h"
#include "discovery/discovery.h"
#include "httpclient/httpclient.h"
#include "ingest/ingest.h"
#include "delta.h"
#include "schedule.h"
#include "synthetic.h"

#define MAX_JOBS_METRICS 256

/* ---- service discovery state ---- */

typedef struct sd_http {
    ps_http_sd_t *cfg;
    ps_arena_t arena;
    ps_target_group_t *groups;
    uint32_t ngroups;
    int64_t next_refresh; /* mono ns */
    CURL *easy;
    ps_buf_t body;
    struct curl_slist *headers;
    struct curl_slist *connect_to; /* tls_config.server_name (see server_name) */
} sd_http_t;

typedef struct pool {
    ps_scrape_config_t *cfg;
    ps_filesd_t *files;       /* NULL without file_sd_configs */
    int64_t next_file_refresh;
    sd_http_t *https;
    uint32_t nhttp;
    uint32_t unmatched;       /* file_sd patterns matching no file (under the mutex: /metrics reads it) */
    char client_error[512];   /* the last unreadable-file error logged for the job, "" none */
    char limit_error[128];    /* "target_limit exceeded (...)" while the job has too many, "" none */
    uint64_t limit_exceeded;  /* rebuilds that found it over its target_limit */
    uint32_t ndropped;        /* dropped targets kept for it (keep_dropped_targets) */
} pool_t;

/* ---- targets ---- */

typedef struct target {
    uint64_t id;
    uint32_t pool;
    ps_pprof_entry_t *entry;
    ps_arena_t arena;
    ps_labels_t labels;     /* final labels, external labels added */
    ps_labels_t discovered; /* before relabeling */
    char *url;
    char *url_shown;        /* url as logs show it (config.h ps_redact_url) */
    char *name;             /* profile name */
    char *job;              /* its pool's job_name when built (HTTP threads read it, not the pools) */
    int64_t interval, timeout;
    bool cpu_delta;         /* the target itself makes the delta (?seconds=N) */
    int64_t next_due;       /* mono ns */
    /* transfer */
    CURL *easy;
    struct curl_slist *headers;
    struct curl_slist *connect_to; /* tls_config.server_name (see server_name) */
    ps_buf_t body;
    bool too_big;
    int64_t started_mono, started_wall; /* when the request started */
    char errbuf[CURL_ERROR_SIZE];
    /* last result */
    int64_t last_scrape;    /* wall ns when it started (Prometheus' lastScrape), 0 = never */
    double last_duration;   /* s, from the request's start to the body's end */
    int health;             /* 0 unknown, 1 up, -1 down */
    char last_error[512];
    ps_delta_state_t prev;  /* baseline of cumulative profiles */
    bool alive;             /* still in the target set */
    bool parked;            /* due while its CPU profile runs: back in the heap when it ends */
    bool running;           /* its transfer is in the multi handle */
    bool stale;             /* the configuration changed: make a new easy handle at the next scrape */
    bool over_limit;        /* its job is over target_limit: each scrape fails saying so, no request */
    size_t max_body;        /* largest body accepted (ps_scraper_opts_t.max_body) */
} target_t;

typedef struct dropped {
    ps_arena_t arena;
    ps_labels_t discovered;
} dropped_t;

typedef struct job_metrics {
    char job[128];
    uint64_t scrapes, failures, samples;
    double duration_sum;
} job_metrics_t;

typedef struct completion {
    uint64_t target;
    int64_t started_wall;   /* of the scrape that was written */
    double duration;
    uint64_t samples;       /* pprof samples of the profile */
    int status;
    char msg[400];
    struct completion *next;
} completion_t;

struct ps_scraper {
    ps_scraper_opts_t opts;
    ps_writer_t *writer;
    pthread_t thread;
    pthread_mutex_t mu; /* guards targets, dropped, metrics, pending, completions */
    CURLM *multi;
    atomic_int stop;
    ps_config_t *cfg, *pending_cfg;
    pool_t *pools;
    uint32_t npools;
    target_t **targets;
    uint32_t ntargets;
    dropped_t *dropped;
    uint32_t ndropped;
    bool dirty; /* groups changed: rebuild targets */
    int inotify_fd;
    int epfd, wakefd;       /* libcurl's sockets, the wake-up eventfd and inotify, in one epoll */
    int64_t timer_deadline; /* mono ns when libcurl wants socket_action(TIMEOUT); -1 none */
    completion_t *completions;
    job_metrics_t metrics[MAX_JOBS_METRICS];
    uint32_t nmetrics;
    uint64_t sd_failures;
    uint64_t over_max;     /* targets not built in the last rebuild for opts.max_targets */
    uint64_t dropped_not_kept; /* dropped targets not kept (keep_dropped_targets, max_targets) */
    ps_hmap_t by_id;       /* target id -> index in targets (rebuilt with the set) */
    ps_sched_t sched;      /* indexes of targets waiting for their tick, by next_due */
    atomic_int pending_writes; /* handed to the writer, not answered yet */
};

static void wake(ps_scraper_t *s);

static job_metrics_t *job_metrics(ps_scraper_t *s, const char *job)
{
    for (uint32_t i = 0; i < s->nmetrics; i++)
        if (strcmp(s->metrics[i].job, job) == 0)
            return &s->metrics[i];
    if (s->nmetrics == MAX_JOBS_METRICS)
        return &s->metrics[MAX_JOBS_METRICS - 1];
    job_metrics_t *m = &s->metrics[s->nmetrics++];
    memset(m, 0, sizeof(*m));
    snprintf(m->job, sizeof(m->job), "%s", job);
    return m;
}

/* ---- file_sd ---- */

/* Re-reads a pool's files (see ps_filesd_refresh); the target set is rebuilt when groups changed. */
static void refresh_files(ps_scraper_t *s, pool_t *p, bool force)
{
    if (p->files == NULL)
        return;
    if (ps_filesd_refresh(p->files, force, &s->sd_failures))
        s->dirty = true;
    pthread_mutex_lock(&s->mu);
    p->unmatched = ps_filesd_unmatched(p->files);
    pthread_mutex_unlock(&s->mu);
}

/* ---- targets: building ---- */

static void lset_from_labels(ps_labels_t *ls, ps_arena_t *a, const ps_labels_t *l)
{
    for (uint32_t i = 0; i < l->n; i++)
        ps_labels_set(ls, a, l->pairs[i].name, l->pairs[i].nlen, l->pairs[i].value, l->pairs[i].vlen);
}

static ps_labels_t lset_copy(const ps_labels_t *ls, ps_arena_t *a, bool drop_reserved)
{
    ps_labels_t out = {0, ps_arena_alloc(a, (ls->n + 1) * sizeof(ps_label_pair_t))};
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        if (drop_reserved && p->nlen >= 2 && p->name[0] == '_' && p->name[1] == '_')
            continue;
        if (p->vlen == 0)
            continue;
        ps_label_pair_t *q = &out.pairs[out.n++];
        q->name = ps_arena_strndup(a, p->name, p->nlen);
        q->nlen = p->nlen;
        q->value = ps_arena_strndup(a, p->value, p->vlen);
        q->vlen = p->vlen;
    }
    return out;
}

static void url_escape(ps_buf_t *b, const char *s)
{
    static const char hex[] = "0123456789ABCDEF";
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_' ||
            c == '.' || c == '~') {
            ps_buf_putc(b, c);
        } else {
            ps_buf_putc(b, '%');
            ps_buf_putc(b, (uint8_t)hex[c >> 4]);
            ps_buf_putc(b, (uint8_t)hex[c & 15]);
        }
    }
}

static void target_free(target_t *t)
{
    if (t == NULL)
        return;
    if (t->easy)
        curl_easy_cleanup(t->easy);
    curl_slist_free_all(t->headers);
    curl_slist_free_all(t->connect_to);
    ps_buf_dispose(&t->body);
    ps_delta_dispose(&t->prev);
    ps_arena_dispose(&t->arena);
    free(t);
}

/* A target that is not scraped: its labels before relabeling kept for droppedTargets (a takes
 * the arena they live in). */
/* Keeps a target dropped by relabeling for /api/v1/targets (takes a), unless its job already keeps
 * keep_dropped_targets of them or all jobs opts.max_targets. */
static void add_dropped(ps_scraper_t *s, pool_t *p, ps_arena_t a, ps_labels_t discovered)
{
    if ((p->cfg->keep_dropped_targets > 0 && p->ndropped >= p->cfg->keep_dropped_targets) ||
        (s->opts.max_targets > 0 && s->ndropped >= s->opts.max_targets)) {
        ps_arena_dispose(&a);
        s->dropped_not_kept++;
        return;
    }
    p->ndropped++;
    s->dropped = ps_xrealloc(s->dropped, (s->ndropped + 1) * sizeof(dropped_t));
    s->dropped[s->ndropped++] = (dropped_t){a, discovered};
}

/* Adds the targets of one group of one pool (Prometheus' label setup, then relabeling). */
static void build_group(ps_scraper_t *s, uint32_t pi, const ps_target_group_t *g, const char *meta_name,
                        const char *meta_value, target_t ***out, uint32_t *nout, uint32_t *capout)
{
    pool_t *p = &s->pools[pi];
    ps_scrape_config_t *c = p->cfg;
    for (uint32_t ti = 0; ti < g->ntargets; ti++) {
        for (uint32_t ei = 0; ei < c->npprof; ei++) {
            ps_pprof_entry_t *e = &c->pprof[ei];
            if (!e->enabled)
                continue;
            ps_arena_t a = PS_ARENA_INIT;
            ps_labels_t ls = {0};
            lset_from_labels(&ls, &a, &g->labels);
            const char *addr = g->targets[ti];
            ps_labels_set(&ls, &a, "__address__", 11, addr, strlen(addr));
            ps_labels_set(&ls, &a, "job", 3, c->job_name, strlen(c->job_name));
            if (ps_labels_value(&ls, "__scheme__") == NULL)
                ps_labels_set(&ls, &a, "__scheme__", 10, c->scheme, strlen(c->scheme));
            char path[2048];
            snprintf(path, sizeof(path), "%s%s", c->path_prefix ? c->path_prefix : "", e->path);
            ps_labels_set(&ls, &a, "__profile_path__", 16, path, strlen(path));
            ps_labels_set(&ls, &a, "__name__", 8, e->name, strlen(e->name));
            char dur[32];
            ps_format_duration(c->scrape_interval, dur, sizeof(dur));
            if (ps_labels_value(&ls, "__scrape_interval__") == NULL)
                ps_labels_set(&ls, &a, "__scrape_interval__", 19, dur, strlen(dur));
            ps_format_duration(c->scrape_timeout, dur, sizeof(dur));
            if (ps_labels_value(&ls, "__scrape_timeout__") == NULL)
                ps_labels_set(&ls, &a, "__scrape_timeout__", 18, dur, strlen(dur));
            for (uint32_t k = 0; k < c->nparams; k++) {
                char pn[256];
                int pl = snprintf(pn, sizeof(pn), "__param_%s", c->params[k].name);
                if (c->params[k].n > 0 && pl > 0 && (size_t)pl < sizeof(pn))
                    ps_labels_set(&ls, &a, pn, (size_t)pl, c->params[k].values[0], strlen(c->params[k].values[0]));
            }
            if (meta_name)
                ps_labels_set(&ls, &a, meta_name, strlen(meta_name), meta_value, strlen(meta_value));
            ps_labels_t discovered = lset_copy(&ls, &a, false);
            bool keep = ps_relabel_process(c->relabel, c->nrelabel, &ls, &a);
            const char *address = ps_labels_value(&ls, "__address__");
            if (!keep || address == NULL || *address == 0) {
                if (keep)
                    ps_log_warn("target dropped: no address after relabeling", "job=%s", ps_log_q(c->job_name));
                add_dropped(s, p, a, discovered);
                continue;
            }
            if (s->opts.max_targets > 0 && *nout >= s->opts.max_targets) { /* memory: a hostile SD list */
                ps_arena_dispose(&a);
                s->over_max++;
                continue;
            }
            /* the scheme and address the URL is built from: http or https only (libcurl would
             * read file://, talk gopher:// to any local port; the UI would link javascript:), and
             * an address that cannot carry a path, query, fragment or user info of its own */
            const char *scheme = ps_labels_value(&ls, "__scheme__");
            if (scheme == NULL || *scheme == 0)
                scheme = c->scheme;
            const char *why = NULL;
            const char *ppath = ps_labels_value(&ls, "__profile_path__");
            if (ppath == NULL || *ppath == 0)
                ppath = e->path;
            if (strcmp(scheme, "http") != 0 && strcmp(scheme, "https") != 0)
                why = "the scheme is not http or https";
            else if ((why = ps_config_target_problem(address, strlen(address))) != NULL)
                ;
            else if (ppath[0] != '/') /* "@host/x" would make the address user info */
                why = "the profile path does not start with /";
            if (why != NULL) {
                ps_buf_t sa = PS_BUF_INIT, aa = PS_BUF_INIT, pa = PS_BUF_INIT;
                ps_redact_value("__scheme__", 10, scheme, strlen(scheme), &sa);
                ps_redact_value("__address__", 11, address, strlen(address), &aa);
                ps_redact_value("__profile_path__", 16, ppath, strlen(ppath), &pa);
                ps_buf_putc(&sa, 0);
                ps_buf_putc(&aa, 0);
                ps_buf_putc(&pa, 0);
                ps_log_warn("target dropped after relabeling", "job=%s reason=%s scheme=%s address=%s path=%s",
                            ps_log_q(c->job_name), ps_log_q(why), ps_log_q((const char *)sa.data),
                            ps_log_q((const char *)aa.data), ps_log_q((const char *)pa.data));
                ps_buf_dispose(&sa);
                ps_buf_dispose(&aa);
                ps_buf_dispose(&pa);
                add_dropped(s, p, a, discovered);
                continue;
            }
            /* address defaulting: no port means the scheme's */
            char hostport[512];
            const char *colon = strrchr(address, ':'), *bracket = strrchr(address, ']');
            if (colon == NULL || (bracket != NULL && colon < bracket))
                snprintf(hostport, sizeof(hostport), "%s:%s", address, strcmp(scheme, "https") == 0 ? "443" : "80");
            else
                snprintf(hostport, sizeof(hostport), "%s", address);
            if (ps_labels_value(&ls, "instance") == NULL)
                ps_labels_set(&ls, &a, "instance", 8, hostport, strlen(hostport));
            /* URL: scheme://address/prefix/path?params[&seconds=N] */
            ps_buf_t url = PS_BUF_INIT;
            ps_buf_printf(&url, "%s://%s%s", scheme, hostport, ppath);
            char sep = strchr((const char *)url.data, '?') ? '&' : '?';
            for (uint32_t k = 0; k < ls.n; k++) {
                if (ls.pairs[k].nlen > 8 && memcmp(ls.pairs[k].name, "__param_", 8) == 0) {
                    ps_buf_putc(&url, (uint8_t)sep);
                    sep = '&';
                    url_escape(&url, ls.pairs[k].name + 8);
                    ps_buf_putc(&url, '=');
                    url_escape(&url, ls.pairs[k].value);
                }
            }
            int64_t secs = e->seconds > 0 ? e->seconds : c->scrape_interval;
            bool cpu_delta = e->delta;
            if (cpu_delta) {
                ps_buf_printf(&url, "%cseconds=%lld", sep, (long long)(secs / PS_NS_PER_S > 0 ? secs / PS_NS_PER_S : 1));
            }
            ps_buf_putc(&url, 0);
            const char *pname = ps_labels_value(&ls, "__name__");
            if (pname == NULL || !ps_label_name_valid(pname, strlen(pname)))
                pname = e->name;
            /* final labels: no __ labels; external labels where the target has none of that name */
            for (uint32_t k = 0; k < s->cfg->external_labels.n; k++) {
                const ps_label_pair_t *x = &s->cfg->external_labels.pairs[k];
                if (ps_labels_value(&ls, x->name) == NULL)
                    ps_labels_set(&ls, &a, x->name, x->nlen, x->value, x->vlen);
            }
            target_t *t = ps_xcalloc(1, sizeof(*t));
            t->arena = a;
            t->discovered = discovered;
            t->labels = lset_copy(&ls, &t->arena, true);
            ps_err_t err;
            int bad = ps_labels_normalize(&t->labels, &err);
            if (bad == 0 && t->labels.n >= PS_LABELS_MAX) /* __name__ is added to each series */
                bad = ps_err_set(&err, PS_EINVAL, "%u labels: a series may have at most %d besides __name__",
                                 t->labels.n, PS_LABELS_MAX - 1);
            if (bad != 0) {
                ps_log_warn("target dropped: invalid labels after relabeling", "job=%s err=%s", ps_log_q(c->job_name),
                            ps_log_q(err.msg));
                ps_buf_dispose(&url);
                add_dropped(s, p, t->arena, t->discovered);
                free(t);
                continue;
            }
            t->url = ps_arena_strndup(&t->arena, (const char *)url.data, url.len - 1);
            t->url_shown = ps_redact_url_arena(&t->arena, t->url);
            t->name = ps_arena_strndup(&t->arena, pname, strlen(pname));
            t->job = ps_arena_strndup(&t->arena, c->job_name, strlen(c->job_name));
            ps_buf_dispose(&url);
            t->pool = pi;
            t->entry = e;
            t->interval = c->scrape_interval;
            t->timeout = c->scrape_timeout + (cpu_delta ? secs : 0);
            t->cpu_delta = cpu_delta;
            ps_buf_t key = PS_BUF_INIT;
            ps_buf_append(&key, t->url, strlen(t->url));
            ps_buf_putc(&key, 0);
            ps_buf_append(&key, t->name, strlen(t->name));
            ps_buf_putc(&key, 0);
            ps_labels_encode(&t->labels, &key);
            t->id = ps_hash64(key.data, key.len, 0x7a26e7);
            ps_buf_dispose(&key);
            if (*nout == *capout) {
                *capout = *capout ? *capout * 2 : 64;
                *out = ps_xrealloc(*out, *capout * sizeof(target_t *));
            }
            (*out)[(*nout)++] = t;
        }
    }
}

/* A scrape ended: the easy handle leaves the multi handle but stays with the target, so the next
 * scrape reuses it (and libcurl its connection). */
static void end_transfer(ps_scraper_t *s, target_t *t)
{
    if (t->body.cap > (1u << 20)) /* one huge answer should not stay allocated for ever */
        ps_buf_dispose(&t->body);
    if (t->easy && t->running)
        curl_multi_remove_handle(s->multi, t->easy);
    t->running = false;
}

static void abort_transfer(ps_scraper_t *s, target_t *t)
{
    end_transfer(s, t);
    if (t->easy) {
        curl_easy_cleanup(t->easy);
        t->easy = NULL;
    }
    curl_slist_free_all(t->headers);
    t->headers = NULL;
    curl_slist_free_all(t->connect_to);
    t->connect_to = NULL;
}

/* Rebuilds the target set from the current groups, keeping state of targets that stay. */
static void write_synthetic(ps_scraper_t *s, const target_t *t, const ps_scrape_report_t *rep, int64_t t_ms);

/* Prometheus' target_limit: a job with more targets after relabeling scrapes none of them; each
 * scrape fails with "target_limit exceeded (number of targets: N, limit: L)" (up 0) until it has
 * no more than the limit again. */
static void apply_target_limits(ps_scraper_t *s, target_t **t, uint32_t n)
{
    uint32_t *count = ps_xcalloc(s->npools + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        count[t[i]->pool]++;
    pthread_mutex_lock(&s->mu);
    for (uint32_t pi = 0; pi < s->npools; pi++) {
        pool_t *p = &s->pools[pi];
        bool over = p->cfg->target_limit > 0 && count[pi] > p->cfg->target_limit;
        if (over) {
            snprintf(p->limit_error, sizeof(p->limit_error), "target_limit exceeded (number of targets: %u, limit: %u)",
                     count[pi], p->cfg->target_limit);
            p->limit_exceeded++;
            ps_log_warn("job over its target_limit: none of its targets is scraped", "job=%s err=%s",
                        ps_log_q(p->cfg->job_name), ps_log_q(p->limit_error));
        } else {
            p->limit_error[0] = 0;
        }
    }
    for (uint32_t i = 0; i < n; i++)
        t[i]->over_limit = s->pools[t[i]->pool].limit_error[0] != 0;
    pthread_mutex_unlock(&s->mu);
    free(count);
}

static void rebuild(ps_scraper_t *s)
{
    target_t **nt = NULL;
    uint32_t n = 0, cap = 0;
    pthread_mutex_lock(&s->mu);
    for (uint32_t i = 0; i < s->ndropped; i++)
        ps_arena_dispose(&s->dropped[i].arena);
    free(s->dropped);
    s->dropped = NULL;
    s->ndropped = 0;
    s->over_max = 0;
    for (uint32_t pi = 0; pi < s->npools; pi++)
        s->pools[pi].ndropped = 0;
    pthread_mutex_unlock(&s->mu);
    for (uint32_t pi = 0; pi < s->npools; pi++) {
        pool_t *p = &s->pools[pi];
        for (uint32_t g = 0; g < p->cfg->nstatic; g++)
            build_group(s, pi, &p->cfg->static_configs[g], NULL, NULL, &nt, &n, &cap);
        for (uint32_t f = 0; p->files != NULL && f < ps_filesd_count(p->files); f++) {
            const ps_target_group_t *groups;
            uint32_t ng;
            const char *path = ps_filesd_file(p->files, f, &groups, &ng);
            for (uint32_t g = 0; g < ng; g++)
                build_group(s, pi, &groups[g], "__meta_filepath", path, &nt, &n, &cap);
        }
        for (uint32_t h = 0; h < p->nhttp; h++)
            for (uint32_t g = 0; g < p->https[h].ngroups; g++)
                build_group(s, pi, &p->https[h].groups[g], "__meta_url", p->https[h].cfg->url_shown, &nt, &n, &cap);
    }
    /* carry over transfers, health and delta baselines; drop duplicates */
    int64_t mono = ps_time_mono();
    ps_hmap_t old;
    ps_hmap_init(&old);
    for (uint32_t i = 0; i < s->ntargets; i++) {
        uint8_t k[8];
        ps_enc_be64(k, s->targets[i]->id);
        ps_hmap_put(&old, k, 8, i);
        s->targets[i]->alive = false;
    }
    ps_hmap_t seen;
    ps_hmap_init(&seen);
    uint32_t m = 0;
    for (uint32_t i = 0; i < n; i++) {
        target_t *t = nt[i];
        uint8_t k[8];
        uint64_t idx;
        ps_enc_be64(k, t->id);
        if (ps_hmap_get(&seen, k, 8, &idx)) {
            target_free(t);
            continue;
        }
        ps_hmap_put(&seen, k, 8, 1);
        if (ps_hmap_get(&old, k, 8, &idx)) {
            target_t *o = s->targets[idx];
            /* the same target: keep the old object (its transfer may be running), new config pointers */
            o->alive = true;
            o->pool = t->pool;
            o->entry = t->entry;
            o->interval = t->interval;
            o->timeout = t->timeout;
            o->cpu_delta = t->cpu_delta;
            o->stale = true; /* settings (timeouts, auth, TLS) may have changed */
            target_free(t);
            t = o;
        } else {
            t->alive = true;
            t->next_due = ps_sched_first(t->id, t->interval, mono);
        }
        nt[m++] = t;
    }
    ps_hmap_dispose(&seen);
    ps_hmap_dispose(&old);
    if (s->over_max > 0) {
        char what[128];
        snprintf(what, sizeof(what), "targets not scraped: more than %s", ps_setting_name(PS_SETTING_SCRAPE_MAX_TARGETS));
        ps_log_warn(what, "max=%u not_built=%llu", s->opts.max_targets, (unsigned long long)s->over_max);
    }
    apply_target_limits(s, nt, m);
    /* targets that went away: stale markers in their scrape series, as Prometheus writes them */
    int64_t now_ms = ps_time_now() / 1000000;
    for (uint32_t i = 0; i < s->ntargets; i++)
        if (!s->targets[i]->alive && s->targets[i]->last_scrape != 0)
            write_synthetic(s, s->targets[i], NULL, now_ms);
    pthread_mutex_lock(&s->mu);
    for (uint32_t i = 0; i < s->ntargets; i++)
        if (!s->targets[i]->alive) {
            abort_transfer(s, s->targets[i]);
            target_free(s->targets[i]);
        }
    free(s->targets);
    s->targets = nt;
    s->ntargets = m;
    ps_hmap_clear(&s->by_id);
    ps_sched_clear(&s->sched);
    for (uint32_t i = 0; i < m; i++) {
        uint8_t k[8];
        ps_enc_be64(k, nt[i]->id);
        ps_hmap_put(&s->by_id, k, 8, i);
        nt[i]->parked = false;
        ps_sched_push(&s->sched, i, nt[i]->next_due);
    }
    pthread_mutex_unlock(&s->mu);
    /* keep one idle connection per target host: reconnecting costs more than the scrape */
    {
        /* one per distinct scheme://host:port (the profiles of a target share its connection) */
        ps_hmap_t hosts;
        ps_hmap_init(&hosts);
        for (uint32_t i = 0; i < m; i++) {
            const char *u = nt[i]->url, *h = strstr(u, "://");
            const char *end = h ? strchr(h + 3, '/') : NULL;
            size_t n = end ? (size_t)(end - u) : strlen(u);
            ps_hmap_put(&hosts, u, n, 1);
        }
        curl_multi_setopt(s->multi, CURLMOPT_MAXCONNECTS, (long)(hosts.count + 16));
        ps_hmap_dispose(&hosts);
    }
    s->dirty = false;
    ps_log_debug("targets rebuilt", "active=%u dropped=%u", m, s->ndropped);
}

/* ---- configuration ---- */

static void pools_free(ps_scraper_t *s)
{
    for (uint32_t i = 0; i < s->npools; i++) {
        pool_t *p = &s->pools[i];
        ps_filesd_free(p->files);
        for (uint32_t h = 0; h < p->nhttp; h++) {
            sd_http_t *hs = &p->https[h];
            if (hs->easy) {
                curl_multi_remove_handle(s->multi, hs->easy);
                curl_easy_cleanup(hs->easy);
            }
            curl_slist_free_all(hs->headers);
            curl_slist_free_all(hs->connect_to);
            ps_buf_dispose(&hs->body);
            ps_arena_dispose(&hs->arena);
        }
        free(p->https);
    }
    free(s->pools);
    s->pools = NULL;
    s->npools = 0;
}

static void apply_config(ps_scraper_t *s, ps_config_t *cfg)
{
    ps_config_t *old = s->cfg;
    /* HTTP threads read the pools (/metrics) under the mutex */
    pthread_mutex_lock(&s->mu);
    pools_free(s);
    s->cfg = cfg;
    s->npools = cfg->nscrape;
    s->pools = ps_xcalloc(cfg->nscrape + 1, sizeof(pool_t));
    for (uint32_t i = 0; i < cfg->nscrape; i++) {
        pool_t *p = &s->pools[i];
        p->cfg = &cfg->scrape[i];
        p->nhttp = p->cfg->nhttp_sd;
        p->https = ps_xcalloc(p->nhttp + 1, sizeof(sd_http_t));
        for (uint32_t h = 0; h < p->nhttp; h++)
            p->https[h].cfg = &p->cfg->http_sd[h];
    }
    pthread_mutex_unlock(&s->mu);
    for (uint32_t i = 0; i < cfg->nscrape; i++) {
        pool_t *p = &s->pools[i];
        if (p->cfg->nfile_sd > 0) {
            p->files = ps_filesd_new(p->cfg);
            refresh_files(s, p, true);
            p->next_file_refresh = ps_time_mono() + ps_filesd_interval(p->files);
            ps_filesd_watch(p->files, s->inotify_fd);
        }
    }
    rebuild(s); /* re-points surviving targets at the new config before the old one goes */
    ps_config_free(old);
}

/* ---- transfers ---- */

/* http_sd answers (bounded: an SD list is small) */
static size_t on_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    ps_buf_t *b = ctx;
    size_t n = size * nmemb;
    if (b->len + n > (16u << 20))
        return 0; /* CURLE_WRITE_ERROR */
    ps_buf_append(b, p, n);
    return n;
}

/* scrape bodies: the limit holds after Content-Encoding is undone, so a compressed bomb stops too */
static size_t on_target_body(char *p, size_t size, size_t nmemb, void *ctx)
{
    target_t *t = ctx;
    size_t n = size * nmemb;
    if (t->body.len + n > t->max_body) {
        t->too_big = true;
        return 0; /* aborts the transfer with CURLE_WRITE_ERROR */
    }
    ps_buf_append(&t->body, p, n);
    return n;
}

/* A file named in the configuration that cannot be read fails the scrape (or the http_sd refresh)
 * with an error naming it, as in Prometheus; it is read again at each scrape. */
static void set_result(ps_scraper_t *s, target_t *t, int64_t started_wall, double duration, const char *err,
                       uint64_t samples, uint64_t kept);

/* A job's client configuration names a file that cannot be read: logged once per job until it
 * changes or a scrape of the job starts again. */
static void client_error(pool_t *p, const char *why)
{
    if (strcmp(p->client_error, why) == 0)
        return;
    snprintf(p->client_error, sizeof(p->client_error), "%s", why);
    ps_log_warn("scrape failed: a file named in the configuration cannot be read", "job=%s err=%s",
                ps_log_q(p->cfg->job_name), ps_log_q(why));
}

static void start_scrape(ps_scraper_t *s, target_t *t)
{
    pool_t *p = &s->pools[t->pool];
    const ps_http_client_t *cl = &p->cfg->client;
    char why[512];
    t->started_mono = ps_time_mono(); /* now, not the loop turn's time: the duration is the request's */
    t->started_wall = ps_time_now();
    if (t->over_limit) {
        snprintf(why, sizeof(why), "%s", p->limit_error);
        set_result(s, t, t->started_wall, 0.0, why, 0, 0);
        return;
    }
    if (t->easy != NULL && (t->stale || cl->basic_password_file || cl->auth_credentials_file)) {
        /* new settings, or credentials files to read again: a fresh handle */
        abort_transfer(s, t);
    }
    t->stale = false;
    if (t->easy == NULL) {
        CURL *e = curl_easy_init();
        if (e == NULL)
            return;
        t->easy = e;
        curl_easy_setopt(e, CURLOPT_URL, t->url);
        curl_easy_setopt(e, CURLOPT_PRIVATE, t);
        curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_target_body);
        curl_easy_setopt(e, CURLOPT_WRITEDATA, t);
        /* the body limit is enforced as bytes arrive (on_target_body); no progress callback */
        curl_easy_setopt(e, CURLOPT_ERRORBUFFER, t->errbuf);
        curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)(t->timeout / 1000000));
        curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)(p->cfg->scrape_timeout / 1000000));
        curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, "");
        char h[128];
        snprintf(h, sizeof(h), "X-Prometheus-Scrape-Timeout-Seconds: %.3f", (double)t->timeout / 1e9);
        t->headers = curl_slist_append(NULL, h);
        t->headers = curl_slist_append(t->headers, "Accept: application/octet-stream, */*;q=0.1");
        if (!ps_httpclient_setup(e, t->url, cl, &t->headers, &t->connect_to, why, sizeof(why))) {
            abort_transfer(s, t);
            goto Fail;
        }
        curl_easy_setopt(e, CURLOPT_HTTPHEADER, t->headers);
    } else if (!ps_httpclient_tls_files_ok(cl, why, sizeof(why))) { /* a reused handle: the TLS files still there? */
        goto Fail;
    }
    p->client_error[0] = 0;
    t->max_body = s->opts.max_body;
    t->too_big = false;
    t->errbuf[0] = 0;
    ps_buf_reset(&t->body);
    t->running = true;
    curl_multi_add_handle(s->multi, t->easy);
    return;
Fail:
    client_error(p, why);
    set_result(s, t, t->started_wall, 0.0, why, 0, 0);
}

/* ---- finishing a scrape ---- */

typedef struct scrape_req {
    ps_wreq_t w;
    ps_arena_t arena;
    ps_scraper_t *s;
    uint64_t target;
    int64_t started_wall;
    double duration;
    uint64_t samples;
} scrape_req_t;

static void on_written(ps_wreq_t *w)
{
    scrape_req_t *r = w->ctx;
    ps_scraper_t *s = r->s;
    completion_t *c = ps_xcalloc(1, sizeof(*c));
    c->target = r->target;
    c->started_wall = r->started_wall;
    c->duration = r->duration;
    c->samples = r->samples;
    c->status = w->status ? w->status : w->app.status;
    if (c->status)
        snprintf(c->msg, sizeof(c->msg), "storing the profile: %.360s", w->status ? w->err.msg : w->app.err.msg);
    pthread_mutex_lock(&s->mu);
    c->next = s->completions;
    s->completions = c;
    pthread_mutex_unlock(&s->mu);
    wake(s);
    ps_arena_dispose(&r->arena);
    free(r);
    atomic_fetch_sub(&s->pending_writes, 1); /* last: ps_scraper_stop waits for this */
}

/* ---- synthetic series (synthetic.h): up, scrape_duration_seconds, scrape_samples_* ---- */

#define SCRAPE_COMMIT_DELAY (50 * 1000000) /* nobody waits on a scrape: share fsyncs widely */

typedef struct synth_req {
    ps_wreq_t w;
    ps_arena_t arena;
    ps_scraper_t *s;
    ps_float_append_t fa[PS_SYNTHETIC_SERIES];
    ps_float_append_t *items[PS_SYNTHETIC_SERIES];
} synth_req_t;

static void on_synthetic_written(ps_wreq_t *w)
{
    synth_req_t *r = w->ctx;
    ps_scraper_t *s = r->s;
    /* rejected samples (out of order: a late result after a newer one) are only counted by the
     * store; a failed transaction or series is worth a warning */
    if (w->status != 0)
        ps_log_warn("storing scrape series failed", "err=%s", ps_log_q(w->err.msg));
    for (int i = 0; i < PS_SYNTHETIC_SERIES && w->status == 0; i++)
        if (r->fa[i].status != 0) {
            ps_log_warn("storing scrape series failed", "err=%s", ps_log_q(r->fa[i].err.msg));
            break;
        }
    ps_arena_dispose(&r->arena);
    free(r);
    atomic_fetch_sub(&s->pending_writes, 1); /* last: ps_scraper_stop waits for this */
}

/* Hands the synthetic samples of one scrape of t (rep), or stale markers at t_ms (rep NULL), to the
 * writer. Scraper thread. */
static void write_synthetic(ps_scraper_t *s, const target_t *t, const ps_scrape_report_t *rep, int64_t t_ms)
{
    synth_req_t *r = ps_xcalloc(1, sizeof(*r));
    r->s = s;
    ps_synthetic_build(&t->labels, t->name, rep, t_ms, &r->arena, r->fa); /* copies the labels */
    for (int i = 0; i < PS_SYNTHETIC_SERIES; i++)
        r->items[i] = &r->fa[i];
    r->w.kind = PS_WREQ_SAMPLES;
    r->w.floats = r->items;
    r->w.nfloats = PS_SYNTHETIC_SERIES;
    r->w.bytes = r->arena.used_total;
    r->w.commit_delay_ns = SCRAPE_COMMIT_DELAY;
    r->w.on_done = on_synthetic_written;
    r->w.ctx = r;
    atomic_fetch_add(&s->pending_writes, 1);
    if (ps_writer_submit(s->writer, &r->w) != 0) {
        atomic_fetch_sub(&s->pending_writes, 1);
        ps_log_debug("scrape series not stored", "url=%s err=%s", ps_log_q(t->url_shown), ps_log_q(r->w.err.msg));
        ps_arena_dispose(&r->arena);
        free(r);
    }
}

/* The result of the scrape that started at started_wall and took duration s. It may arrive (from the
 * writer) after the target's next scrape started: the times are the written scrape's, not t's, and
 * a result older than the one shown (a late answer from the writer after a newer scrape failed)
 * is counted but does not replace it. */
static void set_result(ps_scraper_t *s, target_t *t, int64_t started_wall, double duration, const char *err,
                       uint64_t samples, uint64_t kept)
{
    bool shown = false;
    pthread_mutex_lock(&s->mu);
    if (started_wall >= t->last_scrape) {
        shown = true;
        t->last_scrape = started_wall;
        t->last_duration = duration;
        t->health = err ? -1 : 1;
        snprintf(t->last_error, sizeof(t->last_error), "%s", err ? err : "");
    }
    job_metrics_t *m = job_metrics(s, t->job);
    m->scrapes++;
    m->failures += err != NULL;
    m->duration_sum += duration;
    pthread_mutex_unlock(&s->mu);
    if (shown) { /* the scrape series say what /api/v1/targets says */
        ps_scrape_report_t rep = {started_wall / 1000000, err == NULL, duration, err ? 0 : samples, err ? 0 : kept};
        write_synthetic(s, t, &rep, 0);
    }
    if (err)
        ps_log_debug("scrape failed", "url=%s err=%s", ps_log_q(t->url_shown), ps_log_q(err));
}

static void finish_scrape(ps_scraper_t *s, target_t *t, CURLcode res)
{
    char err[512];
    long status = 0;
    char *ctype = NULL;
    /* Prometheus' scrape duration: from the request's start to the body's end, not the storing */
    double duration = (double)(ps_time_mono() - t->started_mono) / 1e9;
    curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_easy_getinfo(t->easy, CURLINFO_CONTENT_TYPE, &ctype);
    if (t->too_big) {
        snprintf(err, sizeof(err), "body exceeds the limit of %zu bytes", t->max_body);
        goto Fail;
    }
    if (res != CURLE_OK) {
        snprintf(err, sizeof(err), "%s", t->errbuf[0] ? t->errbuf : curl_easy_strerror(res));
        goto Fail;
    }
    if (status != 200) {
        char snippet[120] = "";
        size_t n = t->body.len < 100 ? t->body.len : 100;
        for (size_t i = 0; i < n; i++)
            snippet[i] = (t->body.data[i] >= 32 && t->body.data[i] < 127) ? (char)t->body.data[i] : ' ';
        snippet[n] = 0;
        snprintf(err, sizeof(err), "server returned HTTP status %ld%s%s", status, n ? ": " : "", snippet);
        goto Fail;
    }
    if (ctype && strncasecmp(ctype, "text/html", 9) == 0) {
        snprintf(err, sizeof(err), "received %s, not a pprof profile (wrong path?)", ctype);
        goto Fail;
    }
    if (t->body.len == 0) {
        snprintf(err, sizeof(err), "empty body");
        goto Fail;
    }
    scrape_req_t *r = ps_xcalloc(1, sizeof(*r));
    r->s = s;
    r->target = t->id;
    r->started_wall = t->started_wall;
    r->duration = duration;
    ps_profile_t *p = ps_arena_calloc(&r->arena, 1, sizeof(*p));
    ps_err_t perr;
    if (ps_pprof_decode(t->body.data, t->body.len, &s->opts.limits, &r->arena, p, &perr) != 0) {
        if (t->body.len > 0 && (t->body.data[0] == '<' || (ctype && strncasecmp(ctype, "text/", 5) == 0)))
            snprintf(err, sizeof(err), "received text (%.64s), not a pprof profile: %.380s", ctype ? ctype : "no type",
                     perr.msg);
        else
            snprintf(err, sizeof(err), "invalid profile: %.480s", perr.msg);
        ps_arena_dispose(&r->arena);
        free(r);
        goto Fail;
    }
    uint8_t *modes = ps_arena_alloc(&r->arena, p->ntypes + 1);
    for (uint32_t k = 0; k < p->ntypes; k++)
        modes[k] = t->cpu_delta ? PS_INGEST_DELTA : PS_INGEST_ASIS;
    ps_profile_t *q = t->cpu_delta ? p : ps_delta_apply(&t->prev, p, modes, &r->arena);
    /* keep_sample_type */
    if (t->entry->nkeep > 0) {
        for (uint32_t k = 0; k < p->ntypes; k++) {
            ps_str_t ty = ps_profile_str(p, p->sample_types[k].type), un = ps_profile_str(p, p->sample_types[k].unit);
            bool keep = false;
            for (uint32_t j = 0; j < t->entry->nkeep; j++)
                keep |= strlen(t->entry->keep_type[j]) == ty.len && memcmp(t->entry->keep_type[j], ty.ptr, ty.len) == 0 &&
                        (t->entry->keep_unit[j] == NULL || (strlen(t->entry->keep_unit[j]) == un.len &&
                                                            memcmp(t->entry->keep_unit[j], un.ptr, un.len) == 0));
            if (!keep)
                modes[k] = PS_INGEST_SKIP;
        }
    }
    bool any = false;
    for (uint32_t k = 0; k < p->ntypes; k++)
        any |= modes[k] != PS_INGEST_SKIP;
    pthread_mutex_lock(&s->mu);
    job_metrics(s, t->job)->samples += p->nsamples;
    pthread_mutex_unlock(&s->mu);
    if (!any) { /* first scrape of a cumulative profile: a baseline only */
        uint64_t nsamples = p->nsamples; /* p lives in r->arena */
        ps_arena_dispose(&r->arena);
        free(r);
        set_result(s, t, t->started_wall, duration, NULL, nsamples, 0);
        return;
    }
    int64_t ts = p->time_nanos > 0 ? p->time_nanos : t->started_wall;
    /* the labels copied into the request: t may be freed (a reload drops it) while this is queued */
    ps_labels_t labels = lset_copy(&t->labels, &r->arena, false);
    if (ps_ingest_build(q, t->name, strlen(t->name), &labels, ts, modes, false, &r->arena, &r->w.app, &perr) != 0) {
        snprintf(err, sizeof(err), "%.500s", perr.msg);
        ps_arena_dispose(&r->arena);
        free(r);
        goto Fail;
    }
    r->samples = p->nsamples;
    r->w.kind = PS_WREQ_APPEND;
    r->w.bytes = r->arena.used_total; /* held until stored: the queue's bound */
    r->w.commit_delay_ns = SCRAPE_COMMIT_DELAY;
    r->w.on_done = on_written;
    r->w.ctx = r;
    pthread_mutex_lock(&s->mu);
    t->last_scrape = t->started_wall;
    t->last_duration = duration;
    pthread_mutex_unlock(&s->mu);
    atomic_fetch_add(&s->pending_writes, 1);
    if (ps_writer_submit(s->writer, &r->w) != 0) {
        atomic_fetch_sub(&s->pending_writes, 1);
        snprintf(err, sizeof(err), "%.500s", r->w.err.msg);
        ps_arena_dispose(&r->arena);
        free(r);
        goto Fail;
    }
    return; /* health is set when the writer answers */
Fail:
    set_result(s, t, t->started_wall, duration, err, 0, 0);
}

static void on_completion(ps_scraper_t *s, completion_t *c)
{
    uint8_t k[8];
    uint64_t idx;
    ps_enc_be64(k, c->target);
    if (ps_hmap_get(&s->by_id, k, 8, &idx) && idx < s->ntargets)
        set_result(s, s->targets[idx], c->started_wall, c->duration, c->status ? c->msg : NULL, c->samples,
                   c->status ? 0 : c->samples);
}

/* ---- http_sd ---- */

static void start_http_sd(ps_scraper_t *s, pool_t *p, sd_http_t *h)
{
    CURL *e = curl_easy_init();
    if (e == NULL)
        return;
    h->easy = e;
    ps_buf_reset(&h->body);
    curl_easy_setopt(e, CURLOPT_URL, h->cfg->url);
    curl_easy_setopt(e, CURLOPT_PRIVATE, NULL);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &h->body);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 30000L);
    char hd[96];
    snprintf(hd, sizeof(hd), "X-Prometheus-Refresh-Interval-Seconds: %lld",
             (long long)(h->cfg->refresh_interval / PS_NS_PER_S));
    curl_slist_free_all(h->headers);
    h->headers = curl_slist_append(NULL, hd);
    curl_slist_free_all(h->connect_to);
    h->connect_to = NULL;
    char why[512];
    if (!ps_httpclient_setup(e, h->cfg->url, &h->cfg->client, &h->headers, &h->connect_to, why, sizeof(why))) {
        ps_log_error("http_sd: refresh failed, keeping the last good targets", "job=%s url=%s err=%s",
                     ps_log_q(p->cfg->job_name), ps_log_q(h->cfg->url_shown), ps_log_q(why));
        s->sd_failures++;
        curl_easy_cleanup(e);
        h->easy = NULL;
        h->next_refresh = ps_time_mono() + h->cfg->refresh_interval;
        return;
    }
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
    curl_multi_add_handle(s->multi, e);
}

static void finish_http_sd(ps_scraper_t *s, pool_t *p, sd_http_t *h, CURLcode res)
{
    long status = 0;
    curl_easy_getinfo(h->easy, CURLINFO_RESPONSE_CODE, &status);
    curl_multi_remove_handle(s->multi, h->easy);
    curl_easy_cleanup(h->easy);
    h->easy = NULL;
    h->next_refresh = ps_time_mono() + h->cfg->refresh_interval;
    if (res != CURLE_OK || status != 200) {
        ps_log_error("http_sd: refresh failed, keeping the last good targets", "job=%s url=%s err=%s",
                     ps_log_q(p->cfg->job_name), ps_log_q(h->cfg->url_shown),
                     ps_log_q(res != CURLE_OK ? curl_easy_strerror(res)
                              : status == 0   ? "no answer"
                                              : "HTTP status not 200"));
        s->sd_failures++;
        return;
    }
    ps_arena_t na = PS_ARENA_INIT;
    ps_target_group_t *groups;
    uint32_t ng;
    ps_err_t err;
    if (ps_sd_parse(h->body.len ? (const char *)h->body.data : "", h->body.len, false, h->cfg->url_shown, &na, &groups, &ng,
                    &err) != 0) {
        ps_log_error("http_sd: invalid answer, keeping the last good targets", "job=%s err=%s",
                     ps_log_q(p->cfg->job_name), ps_log_q(err.msg));
        s->sd_failures++;
        ps_arena_dispose(&na);
        return;
    }
    ps_arena_dispose(&h->arena);
    h->arena = na;
    h->groups = groups;
    h->ngroups = ng;
    s->dirty = true;
}

/* ---- the loop ---- */

#define TAG_WAKE (1ull << 62)
#define TAG_INOTIFY (1ull << 61)

/* libcurl tells which sockets to watch for what (CURLMOPT_SOCKETFUNCTION). */
static int on_socket(CURL *e, curl_socket_t fd, int what, void *userp, void *socketp)
{
    ps_scraper_t *s = userp;
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(s->epfd, EPOLL_CTL_DEL, fd, NULL);
        curl_multi_assign(s->multi, fd, NULL);
        return 0;
    }
    struct epoll_event ev = {0};
    ev.data.u64 = (uint64_t)fd;
    if (what & CURL_POLL_IN)
        ev.events |= EPOLLIN;
    if (what & CURL_POLL_OUT)
        ev.events |= EPOLLOUT;
    if (socketp == NULL) {
        if (epoll_ctl(s->epfd, EPOLL_CTL_ADD, fd, &ev) != 0 && errno == EEXIST)
            epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
        curl_multi_assign(s->multi, fd, (void *)1);
    } else {
        epoll_ctl(s->epfd, EPOLL_CTL_MOD, fd, &ev);
    }
    return 0;
}

/* libcurl's single timer (CURLMOPT_TIMERFUNCTION). */
static int on_timer(CURLM *m, long timeout_ms, void *userp)
{
    ps_scraper_t *s = userp;
    s->timer_deadline = timeout_ms < 0 ? -1 : ps_time_mono() + (int64_t)timeout_ms * 1000000;
    return 0;
}

static void wake(ps_scraper_t *s)
{
    uint64_t one = 1;
    ssize_t r = write(s->wakefd, &one, sizeof(one));
    (void)r;
}

static void finish_http_sd(ps_scraper_t *s, pool_t *p, sd_http_t *h, CURLcode res);

/* Handles every finished transfer. */
static void reap(ps_scraper_t *s)
{
    CURLMsg *msg;
    int left;
    while ((msg = curl_multi_info_read(s->multi, &left)) != NULL) {
        if (msg->msg != CURLMSG_DONE)
            continue;
        CURL *e = msg->easy_handle;
        CURLcode res = msg->data.result;
        target_t *t = NULL;
        curl_easy_getinfo(e, CURLINFO_PRIVATE, (char **)&t);
        if (t != NULL) {
            finish_scrape(s, t, res);
            end_transfer(s, t);
            if (t->parked) { /* it kept its tick: due now */
                t->parked = false;
                uint8_t k[8];
                uint64_t idx;
                ps_enc_be64(k, t->id);
                if (ps_hmap_get(&s->by_id, k, 8, &idx))
                    ps_sched_push(&s->sched, (uint32_t)idx, t->next_due);
            }
            continue;
        }
        for (uint32_t i = 0; i < s->npools; i++)
            for (uint32_t h = 0; h < s->pools[i].nhttp; h++)
                if (s->pools[i].https[h].easy == e)
                    finish_http_sd(s, &s->pools[i], &s->pools[i].https[h], res);
    }
}

static void *run(void *arg)
{
    ps_scraper_t *s = arg;
    ps_thread_name("scrape");
    char evbuf[4096] __attribute__((aligned(8)));
    while (!atomic_load(&s->stop)) {
        int64_t mono = ps_time_mono();
        /* reload */
        pthread_mutex_lock(&s->mu);
        ps_config_t *pending = s->pending_cfg;
        s->pending_cfg = NULL;
        completion_t *done = s->completions;
        s->completions = NULL;
        pthread_mutex_unlock(&s->mu);
        if (pending != NULL) {
            apply_config(s, pending);
            ps_log_info("scrape configuration applied", "jobs=%u targets=%u", s->npools, s->ntargets);
        }
        /* writer answers */
        while (done != NULL) {
            completion_t *n = done->next;
            on_completion(s, done);
            free(done);
            done = n;
        }
        /* file_sd: inotify events or refresh interval */
        bool files_changed = false;
        if (s->inotify_fd >= 0) {
            ssize_t r;
            while ((r = read(s->inotify_fd, evbuf, sizeof(evbuf))) > 0)
                files_changed = true;
        }
        for (uint32_t i = 0; i < s->npools; i++) {
            pool_t *p = &s->pools[i];
            if (p->cfg->nfile_sd > 0 && (files_changed || mono >= p->next_file_refresh)) {
                bool force = mono >= p->next_file_refresh;
                refresh_files(s, p, force);
                if (force)
                    p->next_file_refresh = mono + ps_filesd_interval(p->files);
            }
            for (uint32_t h = 0; h < p->nhttp; h++)
                if (p->https[h].easy == NULL && mono >= p->https[h].next_refresh)
                    start_http_sd(s, p, &p->https[h]);
        }
        if (s->dirty)
            rebuild(s);
        /* due scrapes, from the heap */
        int64_t next = mono + PS_NS_PER_S;
        int64_t due;
        while (ps_sched_peek(&s->sched, &due, NULL) && due <= mono) {
            uint32_t ti = ps_sched_pop(&s->sched);
            target_t *t = s->targets[ti];
            if (t->running && t->cpu_delta) {
                /* a CPU profile (?seconds=N) still running keeps its tick: the next starts as soon
                 * as it ends, so back-to-back profiles cover the time without gaps */
                t->parked = true;
                continue;
            }
            if (!t->running)
                start_scrape(s, t);
            /* the next tick of its schedule (a tick that finds the last scrape running is skipped) */
            t->next_due = ps_sched_next(t->next_due, t->interval, mono);
            ps_sched_push(&s->sched, ti, t->next_due);
        }
        if (ps_sched_peek(&s->sched, &due, NULL) && due < next)
            next = due;
        int running = 0;
        if (s->timer_deadline >= 0 && ps_time_mono() >= s->timer_deadline) {
            s->timer_deadline = -1;
            curl_multi_socket_action(s->multi, CURL_SOCKET_TIMEOUT, 0, &running);
        }
        reap(s);
        int64_t until = next;
        if (s->timer_deadline >= 0 && s->timer_deadline < until)
            until = s->timer_deadline;
        int64_t wait_ms = (until - ps_time_mono() + 999999) / 1000000;
        if (wait_ms < 0)
            wait_ms = 0;
        if (wait_ms > 1000)
            wait_ms = 1000;
        struct epoll_event evs[256];
        int n = epoll_wait(s->epfd, evs, 256, (int)wait_ms);
        for (int i = 0; i < n; i++) {
            uint64_t tag = evs[i].data.u64;
            if (tag == TAG_WAKE) {
                uint64_t v;
                while (read(s->wakefd, &v, sizeof(v)) > 0)
                    ;
            } else if (tag == TAG_INOTIFY) {
                /* read at the top of the loop */
            } else {
                int mask = 0;
                if (evs[i].events & (EPOLLIN | EPOLLHUP))
                    mask |= CURL_CSELECT_IN;
                if (evs[i].events & EPOLLOUT)
                    mask |= CURL_CSELECT_OUT;
                if (evs[i].events & EPOLLERR)
                    mask |= CURL_CSELECT_ERR;
                curl_multi_socket_action(s->multi, (curl_socket_t)tag, mask, &running);
            }
        }
        reap(s);
    }
    return NULL;
}

ps_scraper_t *ps_scraper_start(ps_config_t *cfg, ps_writer_t *writer, const ps_scraper_opts_t *o)
{
    curl_global_init(CURL_GLOBAL_DEFAULT);
    ps_scraper_t *s = ps_xcalloc(1, sizeof(*s));
    s->opts = *o;
    if (s->opts.max_body == 0)
        s->opts.max_body = 64u << 20;
    s->writer = writer;
    pthread_mutex_init(&s->mu, NULL);
    s->multi = curl_multi_init();
    curl_multi_setopt(s->multi, CURLMOPT_MAX_HOST_CONNECTIONS, 8L);
    s->inotify_fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    s->epfd = epoll_create1(EPOLL_CLOEXEC);
    s->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->timer_deadline = -1;
    struct epoll_event ev = {.events = EPOLLIN};
    ev.data.u64 = TAG_WAKE;
    epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->wakefd, &ev);
    if (s->inotify_fd >= 0) {
        ev.data.u64 = TAG_INOTIFY;
        epoll_ctl(s->epfd, EPOLL_CTL_ADD, s->inotify_fd, &ev);
    }
    curl_multi_setopt(s->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(s->multi, CURLMOPT_SOCKETDATA, s);
    curl_multi_setopt(s->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(s->multi, CURLMOPT_TIMERDATA, s);
    ps_hmap_init(&s->by_id);
    s->pending_cfg = cfg;
    pthread_create(&s->thread, NULL, run, s);
    return s;
}

void ps_scraper_reload(ps_scraper_t *s, ps_config_t *cfg)
{
    pthread_mutex_lock(&s->mu);
    ps_config_free(s->pending_cfg);
    s->pending_cfg = cfg;
    pthread_mutex_unlock(&s->mu);
    wake(s);
}

void ps_scraper_stop(ps_scraper_t *s)
{
    if (s == NULL)
        return;
    atomic_store(&s->stop, 1);
    wake(s);
    pthread_join(s->thread, NULL);
    /* profiles already handed to the writer are answered into this struct: wait for them */
    while (atomic_load(&s->pending_writes) > 0)
        usleep(1000);
    for (uint32_t i = 0; i < s->ntargets; i++) {
        abort_transfer(s, s->targets[i]);
        target_free(s->targets[i]);
    }
    free(s->targets);
    for (uint32_t i = 0; i < s->ndropped; i++)
        ps_arena_dispose(&s->dropped[i].arena);
    free(s->dropped);
    pools_free(s);
    ps_config_free(s->cfg);
    ps_config_free(s->pending_cfg);
    curl_multi_cleanup(s->multi);
    if (s->inotify_fd >= 0)
        close(s->inotify_fd);
    close(s->epfd);
    close(s->wakefd);
    /* completions still queued belong to writes that finished before the writer stopped */
    while (s->completions) {
        completion_t *n = s->completions->next;
        free(s->completions);
        s->completions = n;
    }
    pthread_mutex_destroy(&s->mu);
    ps_hmap_dispose(&s->by_id);
    ps_sched_dispose(&s->sched);
    free(s);
}

/* ---- reading state ---- */


/* Labels as shown: with redact, values per the configuration's rule (ps_redact_value). */
static void labels_json(const ps_labels_t *ls, bool redact, ps_json_t *j)
{
    ps_buf_t v = PS_BUF_INIT;
    ps_json_obj(j);
    for (uint32_t i = 0; i < ls->n; i++) {
        ps_json_keyn(j, ls->pairs[i].name, ls->pairs[i].nlen);
        if (redact) {
            ps_buf_reset(&v);
            ps_redact_value(ls->pairs[i].name, ls->pairs[i].nlen, ls->pairs[i].value, ls->pairs[i].vlen, &v);
            ps_json_str(j, v.len ? (const char *)v.data : "", v.len);
        } else {
            ps_json_str(j, ls->pairs[i].value, ls->pairs[i].vlen);
        }
    }
    ps_json_end(j);
    ps_buf_dispose(&v);
}

/* A URL as shown: with redact, its password and credential-like query values hidden (ps_redact_url). */
static void url_json(const char *url, bool redact, ps_json_t *j)
{
    if (!redact) {
        ps_json_cstr(j, url);
        return;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_redact_url(url, strlen(url), &b);
    ps_json_str(j, b.len ? (const char *)b.data : "", b.len);
    ps_buf_dispose(&b);
}

void ps_scraper_targets_json(ps_scraper_t *s, const char *state, bool redact, ps_buf_t *out)
{
    bool active = state == NULL || strcmp(state, "any") == 0 || strcmp(state, "active") == 0 || *state == 0;
    bool dropped = state == NULL || strcmp(state, "any") == 0 || strcmp(state, "dropped") == 0 || *state == 0;
    ps_json_t j;
    ps_json_envelope(&j, out);
    ps_json_obj(&j);
    ps_json_key(&j, "activeTargets");
    ps_json_arr(&j);
    if (s != NULL)
        pthread_mutex_lock(&s->mu);
    for (uint32_t i = 0; s && active && i < s->ntargets; i++) {
        target_t *t = s->targets[i];
        char ts[48] = "0001-01-01T00:00:00Z", iv[32], to[32];
        if (t->last_scrape)
            ps_format_time(t->last_scrape, ts, sizeof(ts));
        ps_format_duration(t->interval, iv, sizeof(iv));
        ps_format_duration(t->timeout, to, sizeof(to));
        ps_json_obj(&j);
        ps_json_key(&j, "discoveredLabels");
        labels_json(&t->discovered, redact, &j);
        ps_json_key(&j, "labels");
        labels_json(&t->labels, redact, &j);
        ps_json_key(&j, "scrapePool");
        ps_json_cstr(&j, t->job);
        ps_json_key(&j, "scrapeUrl");
        url_json(t->url, redact, &j);
        ps_json_key(&j, "globalUrl");
        url_json(t->url, redact, &j);
        ps_json_key(&j, "profileName");
        ps_json_cstr(&j, t->name);
        ps_json_key(&j, "lastError");
        ps_json_cstr(&j, t->last_error);
        ps_json_key(&j, "lastScrape");
        ps_json_cstr(&j, ts);
        ps_json_key(&j, "lastScrapeDuration");
        ps_json_fixed(&j, t->last_duration, 6);
        ps_json_key(&j, "health");
        ps_json_cstr(&j, t->health > 0 ? "up" : t->health < 0 ? "down" : "unknown");
        ps_json_key(&j, "scrapeInterval");
        ps_json_cstr(&j, iv);
        ps_json_key(&j, "scrapeTimeout");
        ps_json_cstr(&j, to);
        ps_json_end(&j);
    }
    ps_json_end(&j);
    ps_json_key(&j, "droppedTargets");
    ps_json_arr(&j);
    for (uint32_t i = 0; s && dropped && i < s->ndropped; i++) {
        ps_json_obj(&j);
        ps_json_key(&j, "discoveredLabels");
        labels_json(&s->dropped[i].discovered, redact, &j);
        ps_json_end(&j);
    }
    if (s != NULL)
        pthread_mutex_unlock(&s->mu);
    ps_json_end(&j); /* droppedTargets */
    ps_json_end(&j); /* data */
    ps_json_envelope_close(&j);
}

static const char *const by_job[] = {"job", NULL};
static const ps_metric_t m_scrapes = {"profstore_scrapes_total", PS_COUNTER, "Scrapes finished, by job.", by_job},
    m_failures = {"profstore_scrape_failures_total", PS_COUNTER, "Scrapes that failed, by job.", by_job},
    m_duration = {"profstore_scrape_duration_seconds", PS_SUMMARY, "Time spent on scrapes, by job.", by_job},
    m_samples = {"profstore_scrape_samples_total", PS_COUNTER, "pprof samples in scraped profiles, by job.",
                 by_job},
    m_targets = {"profstore_scrape_targets", PS_GAUGE, "Active targets (target x profile)."},
    m_sd_failures = {"profstore_sd_failures_total", PS_COUNTER, "Service discovery refreshes that failed."},
    m_over_max = {"profstore_scrape_targets_over_max", PS_GAUGE,
                  "Targets not built for --scrape.max-targets (last rebuild)."},
    m_not_kept = {"profstore_scrape_dropped_targets_not_kept_total", PS_COUNTER,
                  "Targets dropped by relabeling and not kept for /api/v1/targets (keep_dropped_targets, "
                  "--scrape.max-targets)."},
    m_limit = {"profstore_scrape_pool_exceeded_target_limit_total", PS_COUNTER,
               "Rebuilds of a job's targets that found more than its target_limit, by job.", by_job},
    m_unmatched = {"profstore_sd_file_patterns_unmatched", PS_GAUGE,
                   "file_sd patterns that match no file, by job.", by_job};

/* the label values of a sample by job */
#define JOB(name) ((const char *const[]){(name)})

void ps_scraper_metrics(ps_scraper_t *s, ps_buf_t *out)
{
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    ps_metric_head(out, &m_scrapes);
    for (uint32_t i = 0; i < s->nmetrics; i++)
        ps_metric_u64(out, &m_scrapes, NULL, JOB(s->metrics[i].job), s->metrics[i].scrapes);
    ps_metric_head(out, &m_failures);
    for (uint32_t i = 0; i < s->nmetrics; i++)
        ps_metric_u64(out, &m_failures, NULL, JOB(s->metrics[i].job), s->metrics[i].failures);
    ps_metric_head(out, &m_duration);
    for (uint32_t i = 0; i < s->nmetrics; i++) {
        ps_metric_f(out, &m_duration, "_sum", JOB(s->metrics[i].job), s->metrics[i].duration_sum, 6);
        ps_metric_u64(out, &m_duration, "_count", JOB(s->metrics[i].job), s->metrics[i].scrapes);
    }
    ps_metric_head(out, &m_samples);
    for (uint32_t i = 0; i < s->nmetrics; i++)
        ps_metric_u64(out, &m_samples, NULL, JOB(s->metrics[i].job), s->metrics[i].samples);
    ps_metric_write_u64(out, &m_targets, s->ntargets);
    ps_metric_write_u64(out, &m_sd_failures, s->sd_failures);
    ps_metric_write_u64(out, &m_over_max, s->over_max);
    ps_metric_write_u64(out, &m_not_kept, s->dropped_not_kept);
    ps_metric_head(out, &m_limit);
    for (uint32_t i = 0; i < s->npools; i++)
        if (s->pools[i].cfg->target_limit > 0)
            ps_metric_u64(out, &m_limit, NULL, JOB(s->pools[i].cfg->job_name), s->pools[i].limit_exceeded);
    ps_metric_head(out, &m_unmatched);
    for (uint32_t i = 0; i < s->npools; i++)
        if (s->pools[i].cfg->nfile_sd > 0)
            ps_metric_u64(out, &m_unmatched, NULL, JOB(s->pools[i].cfg->job_name), s->pools[i].unmatched);
    pthread_mutex_unlock(&s->mu);
}
