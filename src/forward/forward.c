/*
 * forward.c - the senders (see forward.h; docs/configuration.md "Forwarding").
 *
 * One thread per endpoint, with a libcurl easy handle (kept-alive connection). Its loop:
 *  1. Read entries after its cursor from the log (one read snapshot): at most queue_config.capacity
 *     entries and max_shards x max_samples_per_send units (profiles for pyroscope_push, float
 *     samples for remote_write; an entry is never split, so one bigger entry goes alone), 16 MiB
 *     of entries a read.
 *     Entries older than max_lag (by the wall clock of their write) at the front are skipped:
 *     counted in dropped_total, logged once per skip, the cursor moves past them. So are, with
 *     queue_config.max_bytes, the oldest entries after the cursor while all of them together
 *     (their data bytes, whichever protocol: what the log keeps on this endpoint's account) are
 *     more than max_bytes (ps_store_forward_bound; an entry bigger than the bound alone goes too).
 *  2. Nothing to send: wait for the writer's next commit (fwd_logged) or 1 s. A batch that is
 *     neither full nor as old as batch_send_deadline (its first entry's write) waits for more.
 *  3. Build one request: write_relabel_configs on every series (a dropped series is not sent),
 *     then a push.v1.PushRequest (one series per profile, its raw_profile the gzipped pprof, its ID
 *     the client's id of the profile when the push that stored it gave one) POSTed
 *     to {url}/push.v1.PusherService/Push as Connect unary (application/proto), or a remote-write
 *     1.0 WriteRequest (snappy, X-Prometheus-Remote-Write-Version: 0.1.0) POSTed to url.
 *  4. 2xx: the cursor moves past the batch. 5xx, network errors, and 429 (unless
 *     retry_on_http_429: false): the same request again after a backoff that doubles from
 *     min_backoff to max_backoff (retried_total; nothing is dropped for it), until the window's
 *     oldest entry passes max_lag, or the backlog passes max_bytes: then the window is read again
 *     (step 1 drops what is too old or over the bound, the rest is sent again). Any other
 *     status (4xx: the receiver refuses the data, sending it again cannot help): the batch is
 *     dropped, counted in dropped_total, and logged with the endpoint, the status and the first
 *     line of the answer; the cursor moves past it.
 * Shards: a window (capacity entries, max_shards x max_samples_per_send units) is split into
 * max_shards requests by a hash of each series' labels (a series always goes to the same shard),
 * sent at once (a thread per shard, each with its own kept-alive handle) and retried each on its
 * own; the cursor passes the window once every shard is done, and only then is the next window
 * sent: so in order per series. With max_shards 1 (the default) one request is in flight. While a
 * window is in flight the next one is read from the log (its entries decoded) into a second batch
 * (prefetch): a backlog (the catch-up after an outage) goes out window after window with no log
 * read between them. It is sent only once the cursor has passed the window in flight; when that
 * one is stopped or expires, the read-ahead is dropped (read again later).
 *
 * Cursors are kept in memory and stored through the writer (PS_WREQ_FWD_ADVANCE) at most every
 * 100 ms, one request at a time; a cursor not yet stored when the process dies only means the
 * entries after the stored one are sent again (at least once; a profstore or Pyroscope receiver
 * takes an identical profile again as a duplicate, Prometheus an identical sample). The same
 * request trims the entries every endpoint has passed, and drops the cursors of endpoints no
 * longer configured.
 */
#include "forward.h"

#include <curl/curl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "core/hash.h"
#include "core/json.h"
#include "core/log.h"
#include "core/metrics.h"
#include "core/thread.h"
#include "core/timeutil.h"
#include "httpclient/httpclient.h"
#include "proto/pyroscope.h"
#include "proto/remote.h"

#define READ_MAX_BYTES (16u << 20)
#define ADVANCE_EVERY_NS (100 * 1000000ll)
#define IDLE_WAIT_NS PS_NS_PER_S
#define PUSH_PATH "/push.v1.PusherService/Push"
#define PS_FORWARD_MAX_SHARDS 16 /* requests in flight per endpoint at most (max_shards above is cut to it) */

typedef struct ep_stats {
    uint64_t sent, requests, failed, retried, dropped;
    char last_error[512];
    int64_t last_error_ns;
} ep_stats_t;

typedef struct ep {
    ps_forward_t *f;
    const ps_forward_config_t *cfg;
    char *url; /* where the POST goes */
    char *url_shown; /* url as status and logs show it: its password "xxxxx" (config.h ps_redact_url) */
    pthread_t thread;
    atomic_bool stop;
    CURL *curl[PS_FORWARD_MAX_SHARDS]; /* one per shard: its kept-alive connection */
    /* under f->mu */
    uint64_t acked;    /* the last entry sent (or dropped) */
    ep_stats_t st;
} ep_t;

struct ps_forward {
    ps_store_t *store;
    ps_writer_t *writer;
    pthread_mutex_t mu;
    pthread_cond_t cv;   /* the log grew, a sender stops, an advance is done */
    uint64_t gen;        /* commits seen (fwd_logged) */
    atomic_int active;   /* endpoints configured (logged_hook wakes the senders) */
    atomic_int profiles; /* a pyroscope_push endpoint is configured: profile entries are made */
    ps_config_t *cfg;
    ep_t **eps;
    size_t neps;
    /* the cursor advance: at most one in the writer's queue */
    ps_wreq_t adv;
    bool adv_busy, adv_want;
    int64_t adv_at;
    const char **adv_names;
    uint64_t *adv_seqs;
};

static void set_error(ep_t *e, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- hooks (writer and store threads) ---- */

static void entry_hook(void *ctx, const ps_append_t *app, ps_buf_t *out)
{
    ps_forward_t *f = ctx;
    if (atomic_load(&f->profiles))
        ps_forward_profile_entry(app, out);
}

static void floats_hook(void *ctx, ps_float_append_t *const *items, size_t n, const ps_metric_meta_t *meta, size_t nm,
                        ps_buf_t *out)
{
    ps_forward_floats_entry(items, n, meta, nm, out);
}

static void logged_hook(void *ctx)
{
    ps_forward_t *f = ctx;
    if (!atomic_load(&f->active))
        return;
    pthread_mutex_lock(&f->mu);
    f->gen++;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

ps_forward_t *ps_forward_new(ps_store_t *store)
{
    ps_forward_t *f = ps_xcalloc(1, sizeof(*f));
    f->store = store;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cv, &ca);
    pthread_condattr_destroy(&ca);
    curl_global_init(CURL_GLOBAL_DEFAULT);
    return f;
}

void ps_forward_writer_hooks(ps_forward_t *f, ps_writer_opts_t *wo)
{
    wo->fwd_entry = entry_hook;
    wo->fwd_logged = logged_hook;
    wo->fwd_ctx = f;
}

void ps_forward_attach(ps_forward_t *f, ps_writer_t *w) { f->writer = w; }

/* Waits on f->cv (f->mu held) at most ns. */
static void wait_ns(ps_forward_t *f, int64_t ns)
{
    struct timespec ts = ps_mono_deadline(ns);
    pthread_cond_timedwait(&f->cv, &f->mu, &ts);
}

/* ---- cursors ---- */

static void adv_done(ps_wreq_t *r)
{
    ps_forward_t *f = r->ctx;
    if (r->status != 0)
        ps_log_warn("forwarding: storing the cursors failed (they are stored with the next advance)", "err=%s",
                    ps_log_q(r->err.msg));
    pthread_mutex_lock(&f->mu);
    f->adv_busy = false;
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
}

/* Stores every endpoint's cursor through the writer, unless one advance is still queued or the last
 * one went less than ADVANCE_EVERY_NS ago (force: only the first). f->mu held. */
static void request_advance(ps_forward_t *f, bool force)
{
    int64_t now = ps_time_mono();
    if (f->writer == NULL || f->adv_busy || (!force && now - f->adv_at < ADVANCE_EVERY_NS)) {
        f->adv_want = true;
        return;
    }
    f->adv_names = ps_xrealloc(f->adv_names, (f->neps + 1) * sizeof(*f->adv_names));
    f->adv_seqs = ps_xrealloc(f->adv_seqs, (f->neps + 1) * sizeof(*f->adv_seqs));
    for (size_t i = 0; i < f->neps; i++) {
        f->adv_names[i] = f->eps[i]->cfg->name;
        f->adv_seqs[i] = f->eps[i]->acked;
    }
    memset(&f->adv, 0, sizeof(f->adv));
    f->adv.kind = PS_WREQ_FWD_ADVANCE;
    f->adv.fwd_names = f->adv_names;
    f->adv.fwd_seqs = f->adv_seqs;
    f->adv.nfwd = f->neps;
    f->adv.on_done = adv_done;
    f->adv.ctx = f;
    f->adv_busy = true;
    f->adv_want = false;
    f->adv_at = now;
    if (ps_writer_submit(f->writer, &f->adv) != 0) { /* shutting down */
        f->adv_busy = false;
        f->adv_want = true;
    }
}

/* Waits until no advance is queued. f->mu held. */
static void advance_wait(ps_forward_t *f)
{
    while (f->adv_busy)
        wait_ns(f, PS_NS_PER_S);
}

/* ---- HTTP ---- */

static size_t on_body(char *p, size_t size, size_t n, void *ud)
{
    ps_buf_t *b = ud;
    size_t len = size * n;
    if (b->len < 1024)
        ps_buf_append(b, p, len < 1024 - b->len ? len : 1024 - b->len);
    return len;
}

static int on_progress(void *ud, curl_off_t a, curl_off_t b, curl_off_t c, curl_off_t d)
{
    ep_t *e = ud;
    return atomic_load(&e->stop) ? 1 : 0;
}

/* POSTs body; the HTTP status, or 0 with why for a request that got no answer. */
static long post(ep_t *e, CURL *h, const ps_buf_t *body, ps_buf_t *answer, char *why, size_t whylen)
{
    const ps_forward_config_t *c = e->cfg;
    const ps_http_client_t *cl = &c->client;
    curl_easy_reset(h);
    struct curl_slist *hdr = NULL, *connect_to = NULL;
    if (c->protocol == PS_FORWARD_PYROSCOPE_PUSH) {
        hdr = curl_slist_append(hdr, "Content-Type: application/proto");
        hdr = curl_slist_append(hdr, "Connect-Protocol-Version: 1");
    } else {
        hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
        hdr = curl_slist_append(hdr, "Content-Encoding: snappy");
        hdr = curl_slist_append(hdr, "X-Prometheus-Remote-Write-Version: 0.1.0");
    }
    hdr = curl_slist_append(hdr, "Expect:");
    char line[4200];
    for (uint32_t i = 0; i < c->nheaders; i++) {
        snprintf(line, sizeof(line), "%s: %s", c->header_names[i], c->header_values[i]);
        hdr = curl_slist_append(hdr, line);
    }
    long status = 0;
    if (!ps_httpclient_setup(h, e->url, cl, &hdr, &connect_to, why, whylen))
        goto Done;
    curl_easy_setopt(h, CURLOPT_POST, 1L);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)body->data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_TIMEOUT_MS, (long)(c->remote_timeout / 1000000));
    curl_easy_setopt(h, CURLOPT_POSTREDIR, (long)CURL_REDIR_POST_ALL);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, answer);
    curl_easy_setopt(h, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(h, CURLOPT_XFERINFOFUNCTION, on_progress);
    curl_easy_setopt(h, CURLOPT_XFERINFODATA, e);
    CURLcode rc = curl_easy_perform(h);
    if (rc != CURLE_OK)
        snprintf(why, whylen, "%s", curl_easy_strerror(rc));
    else
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &status);
Done:
    curl_slist_free_all(hdr);
    curl_slist_free_all(connect_to);
    return status;
}

/* ---- batches ---- */

typedef struct batch {
    ep_t *e;
    ps_arena_t *arena;
    int64_t now, max_lag;
    ps_forward_series_t **series; /* the entries' series, in order */
    size_t nseries, capseries;
    ps_metric_meta_t *meta;       /* the entries' metadata (remote_write), in order */
    size_t nmeta, capmeta;
    size_t n;                     /* entries taken */
    uint64_t units, last_seq;
    int64_t first_wall;
    bool full;                    /* stopped by a bound: send now */
    uint64_t skip_to, skipped_units; /* entries past max_lag at the front */
    uint64_t bytes_cut, over_units;  /* entries up to bytes_cut are over max_bytes (their units) */
    uint64_t seen;                /* entries the last read walked */
    ps_err_t err;
} batch_t;

static uint32_t shards_of(const ps_forward_config_t *c)
{
    return c->max_shards < 1 ? 1 : c->max_shards > PS_FORWARD_MAX_SHARDS ? PS_FORWARD_MAX_SHARDS : c->max_shards;
}

static uint64_t units_of(const ps_forward_series_t *s, size_t n, int kind)
{
    if (kind == 1)
        return n;
    uint64_t u = 0;
    for (size_t i = 0; i < n; i++)
        u += s[i].nsamples;
    return u;
}

static int on_entry(void *ctx, const ps_forward_log_entry_t *en)
{
    batch_t *b = ctx;
    ep_t *e = b->e;
    const ps_forward_config_t *c = e->cfg;
    b->seen++;
    /* another protocol's entry is not this endpoint's to send: passed over (at the front of an
     * empty batch the cursor moves past it; later, with the batch) */
    bool profile = en->len > 0 && (en->data[0] == 1 || en->data[0] == 3); /* kind 3: with the client's id */
    bool mine = en->len > 0 && profile == (c->protocol == PS_FORWARD_PYROSCOPE_PUSH);
    int kind;
    ps_forward_series_t *s = NULL;
    ps_metric_meta_t *m = NULL;
    size_t ns = 0, nm = 0;
    if (mine) {
        /* the entry is copied: the read snapshot ends with the walk */
        uint8_t *copy = ps_arena_alloc(b->arena, en->len + 1);
        memcpy(copy, en->data, en->len);
        ps_err_t derr;
        if (ps_forward_entry_decode(copy, en->len, b->arena, &kind, &s, &ns, &m, &nm, &derr) != 0) {
            /* bytes this code did not write (a damaged disk): not sendable, and never silently lost */
            ps_log_error("forwarding: a damaged log entry is skipped", "endpoint=%s seq=%llu err=%s",
                         ps_log_q(c->name), (unsigned long long)en->seq, ps_log_q(derr.msg));
            pthread_mutex_lock(&e->f->mu);
            e->st.dropped++;
            pthread_mutex_unlock(&e->f->mu);
            set_error(e, "damaged log entry %llu: %s", (unsigned long long)en->seq, derr.msg);
            mine = false;
        }
    }
    if (!mine) {
        if (b->n == 0)
            b->skip_to = en->seq;
        else
            b->last_seq = en->seq;
        return 0;
    }
    uint64_t u = units_of(s, ns, kind);
    if (b->n == 0 && en->seq <= b->bytes_cut) {
        b->skip_to = en->seq;
        b->over_units += u;
        return 0;
    }
    if (b->n == 0 && b->max_lag > 0 && en->wall_ns < b->now - b->max_lag) {
        b->skip_to = en->seq;
        b->skipped_units += u;
        return 0;
    }
    uint64_t window = (uint64_t)c->max_samples_per_send * shards_of(c);
    if (b->n > 0 && b->units + u > window) {
        b->full = true;
        return 1;
    }
    if (b->nseries + ns > b->capseries) {
        b->capseries = (b->nseries + ns) * 2;
        b->series = ps_xrealloc(b->series, b->capseries * sizeof(*b->series));
    }
    for (size_t i = 0; i < ns; i++)
        b->series[b->nseries++] = &s[i];
    if (b->nmeta + nm > b->capmeta) {
        b->capmeta = (b->nmeta + nm) * 2;
        b->meta = ps_xrealloc(b->meta, b->capmeta * sizeof(*b->meta));
    }
    for (size_t i = 0; i < nm; i++)
        b->meta[b->nmeta++] = m[i];
    if (b->n == 0)
        b->first_wall = en->wall_ns;
    b->n++;
    b->units += u;
    b->last_seq = en->seq;
    if (b->n >= c->capacity || b->units >= window)
        b->full = true;
    return b->full ? 1 : 0;
}

/* write_relabel_configs on every series of b; the ones kept stay at the front. Returns how many. */
static size_t relabel_batch(ep_t *e, batch_t *b)
{
    const ps_forward_config_t *c = e->cfg;
    size_t kept = 0;
    for (size_t i = 0; i < b->nseries; i++) {
        ps_forward_series_t *s = b->series[i];
        if (c->nrelabel > 0 && !ps_relabel_process(c->relabel, c->nrelabel, &s->labels, b->arena))
            continue;
        if (s->labels.n == 0)
            continue;
        b->series[kept++] = s;
    }
    return kept;
}

/* The request body of series[0..kept) and (remote_write) meta[0..nmeta) (kept + nmeta > 0); *units
 * gets what it holds. */
static bool build_body(ep_t *e, ps_forward_series_t **series, size_t kept, const ps_metric_meta_t *meta,
                       size_t nmeta, ps_arena_t *arena, ps_buf_t *body, uint64_t *units, ps_err_t *err)
{
    const ps_forward_config_t *c = e->cfg;
    ps_buf_reset(body);
    *units = 0;
    if (c->protocol == PS_FORWARD_PYROSCOPE_PUSH) {
        ps_pyro_push_t req = {ps_arena_calloc(arena, kept, sizeof(ps_pyro_series_t)), kept};
        for (size_t i = 0; i < kept; i++) {
            ps_forward_series_t *s = series[i];
            ps_pyro_series_t *ps = &req.series[i];
            ps->labels = ps_arena_calloc(arena, s->labels.n, sizeof(ps_pyro_label_t));
            ps->nlabels = s->labels.n;
            for (uint32_t j = 0; j < s->labels.n; j++)
                ps->labels[j] = (ps_pyro_label_t){s->labels.pairs[j].name, s->labels.pairs[j].value,
                                                  s->labels.pairs[j].nlen, s->labels.pairs[j].vlen};
            ps->samples = ps_arena_calloc(arena, 1, sizeof(ps_pyro_sample_t));
            const char *id = "";
            if (s->has_uuid) { /* the client's id goes on: the receiver stores it and resolves it */
                char *t = ps_arena_alloc(arena, 37);
                static const char hex[] = "0123456789abcdef";
                for (int k = 0, o = 0; k < 16; k++) {
                    if (k == 4 || k == 6 || k == 8 || k == 10)
                        t[o++] = '-';
                    t[o++] = hex[s->uuid[k] >> 4];
                    t[o++] = hex[s->uuid[k] & 15];
                }
                t[36] = '\0';
                id = t;
            }
            ps->samples[0] = (ps_pyro_sample_t){s->pprof, s->pprof_len, id};
            ps->nsamples = 1;
        }
        ps_pyro_push_encode(PS_PYRO_PROTO, &req, body);
        *units = kept;
        return true;
    }
    ps_remote_write_t w = {0};
    w.version = 1;
    w.series = ps_arena_calloc(arena, kept, sizeof(ps_remote_series_t));
    w.nseries = (uint32_t)kept;
    for (size_t i = 0; i < kept; i++) {
        ps_forward_series_t *s = series[i];
        ps_remote_series_t *rs = &w.series[i];
        rs->labels = s->labels;
        rs->meta = -1;
        rs->samples = ps_arena_alloc(arena, (size_t)s->nsamples * sizeof(ps_remote_sample_t) + 1);
        rs->nsamples = s->nsamples;
        for (uint32_t j = 0; j < s->nsamples; j++)
            rs->samples[j] = (ps_remote_sample_t){s->samples[j].t, s->samples[j].v};
        *units += s->nsamples;
        w.nsamples += s->nsamples;
    }
    /* metadata as Prometheus sends it in 1.0: WriteRequest.metadata, not tied to a series */
    w.metadata = ps_arena_calloc(arena, nmeta + 1, sizeof(ps_remote_metadata_t));
    w.nmetadata = (uint32_t)nmeta;
    for (size_t i = 0; i < nmeta; i++)
        w.metadata[i] = (ps_remote_metadata_t){(ps_metric_type_t)meta[i].type, meta[i].family, meta[i].help,
                                               meta[i].unit, (uint32_t)meta[i].family_len,
                                               (uint32_t)meta[i].help_len, (uint32_t)meta[i].unit_len};
    return ps_remote_write_encode(&w, 1, body, err) == 0;
}

static void set_error(ep_t *e, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&e->f->mu);
    vsnprintf(e->st.last_error, sizeof(e->st.last_error), fmt, ap);
    e->st.last_error_ns = ps_time_now();
    pthread_mutex_unlock(&e->f->mu);
    va_end(ap);
}

/* The first line of an answer, for messages. */
static void first_line(const ps_buf_t *a, char *out, size_t size)
{
    size_t n = 0;
    while (n < a->len && n + 1 < size && a->data[n] != '\n' && a->data[n] != '\r') {
        out[n] = (char)(a->data[n] >= ' ' && a->data[n] < 0x7f ? a->data[n] : '?');
        n++;
    }
    out[n] = '\0';
}

/* Sends body until it is answered 2xx or refused for good; false when stopped first. */
/* What became of a request: answered (2xx, or refused for good and dropped), stopped (the sender
 * stops: sent again later), expired (its oldest entry passed max_lag while it was retried: the
 * window is read again, which drops what is too old and sends the rest). */
enum { SEND_DONE, SEND_STOPPED, SEND_EXPIRED };

/* Sends body until it is answered 2xx or refused for good, or expires_wall (0: never) passes. */
static int send_batch(ep_t *e, CURL *h, const ps_buf_t *body, uint64_t units, int64_t expires_wall)
{
    ps_forward_t *f = e->f;
    const ps_forward_config_t *c = e->cfg;
    int64_t backoff = c->min_backoff;
    ps_buf_t answer = PS_BUF_INIT;
    char why[256], line[256];
    int tries = 0;
    for (;;) {
        if (atomic_load(&e->stop))
            break;
        ps_buf_reset(&answer);
        why[0] = '\0';
        long status = post(e, h, body, &answer, why, sizeof(why));
        if (status >= 200 && status < 300) {
            pthread_mutex_lock(&f->mu);
            e->st.sent += units;
            e->st.requests++;
            pthread_mutex_unlock(&f->mu);
            ps_buf_dispose(&answer);
            return SEND_DONE;
        }
        first_line(&answer, line, sizeof(line));
        bool retry = status == 0 || status >= 500 || (status == 429 && c->retry_on_http_429);
        pthread_mutex_lock(&f->mu);
        e->st.failed++;
        e->st.requests++;
        if (!retry)
            e->st.dropped += units;
        else if (!atomic_load(&e->stop))
            e->st.retried++;
        pthread_mutex_unlock(&f->mu);
        if (status == 0)
            set_error(e, "%s", why);
        else
            set_error(e, "HTTP %ld: %s", status, line);
        if (!retry) {
            ps_log_error("forwarding: the endpoint refused a batch; dropped", "endpoint=%s status=%ld units=%llu answer=%s",
                         ps_log_q(c->name), status, (unsigned long long)units, ps_log_q(line));
            ps_buf_dispose(&answer);
            return SEND_DONE;
        }
        /* the first failure of a request is a warning, its further retries are debug lines */
        if (tries++ == 0)
            ps_log_warn("forwarding: sending failed; retrying", "endpoint=%s status=%ld err=%s backoff_ms=%lld",
                        ps_log_q(c->name), status, ps_log_q(status == 0 ? why : line), (long long)(backoff / 1000000));
        else
            ps_log_debug("forwarding: sending failed again; retrying", "endpoint=%s status=%ld err=%s backoff_ms=%lld",
                         ps_log_q(c->name), status, ps_log_q(status == 0 ? why : line), (long long)(backoff / 1000000));
        if (expires_wall > 0 && ps_time_now() >= expires_wall) {
            ps_buf_dispose(&answer);
            return SEND_EXPIRED;
        }
        if (c->max_bytes > 0) { /* the backlog grew past max_bytes meanwhile: read again, dropping the oldest */
            pthread_mutex_lock(&f->mu);
            uint64_t acked = e->acked, cut = 0;
            pthread_mutex_unlock(&f->mu);
            ps_err_t berr;
            if (ps_store_forward_bound(f->store, acked, c->max_bytes, &cut, &berr) == 0 && cut > acked) {
                ps_buf_dispose(&answer);
                return SEND_EXPIRED;
            }
        }
        pthread_mutex_lock(&f->mu);
        int64_t until = ps_time_mono() + backoff;
        while (!atomic_load(&e->stop) && ps_time_mono() < until)
            wait_ns(f, until - ps_time_mono());
        pthread_mutex_unlock(&f->mu);
        backoff = backoff * 2 > c->max_backoff ? c->max_backoff : backoff * 2;
    }
    ps_buf_dispose(&answer);
    return SEND_STOPPED;
}

/* One shard of a window: its series (by label hash), body, result. */
typedef struct shard {
    ep_t *e;
    CURL *curl;
    ps_forward_series_t **series;
    size_t n, cap;
    ps_buf_t body;
    uint64_t units;
    int64_t expires;  /* when the window's oldest entry passes max_lag (0: never) */
    int result;       /* SEND_* */
    bool go;          /* a body was built: it is sent */
} shard_t;

static void *shard_run(void *arg)
{
    shard_t *sh = arg;
    ps_thread_name("fwd-shard");
    sh->result = send_batch(sh->e, sh->curl, &sh->body, sh->units, sh->expires);
    return NULL;
}

/* Sends window b: relabelled, split into max_shards requests by series (a series always to the same
 * shard, so its order holds), sent at once, each retried on its own. SEND_DONE when every shard was
 * answered (2xx, or dropped for a 4xx); SEND_STOPPED or SEND_EXPIRED when one was stopped or
 * expired (then the whole window is sent again: at least once). */
/* Reads the window after cur into nx (from arena) while cur is in flight: the log read and the
 * entries' decoding overlap the requests (a catch-up's windows go out back to back). Nothing is
 * kept (nx->n = 0: the loop reads it again later) on an error or when entries older than max_lag
 * are at its front: the loop alone counts those. */
static void prefetch(ep_t *e, const batch_t *cur, batch_t *nx, ps_arena_t *arena)
{
    ps_forward_series_t **keep = nx->series;
    size_t cap = nx->capseries, capmeta = nx->capmeta;
    ps_metric_meta_t *keep_meta = nx->meta;
    ps_arena_reset(arena);
    memset(nx, 0, sizeof(*nx));
    nx->series = keep;
    nx->capseries = cap;
    nx->meta = keep_meta;
    nx->capmeta = capmeta;
    nx->e = e;
    nx->arena = arena;
    nx->max_lag = e->cfg->max_lag;
    nx->last_seq = cur->last_seq;
    nx->now = ps_time_now();
    ps_err_clear(&nx->err);
    int rc = ps_store_forward_read(e->f->store, nx->last_seq, e->cfg->capacity, READ_MAX_BYTES, on_entry, nx, NULL,
                                   &nx->err);
    if ((rc != 0 && rc != 1) || nx->skipped_units > 0)
        nx->n = 0;
}

static int send_window(ep_t *e, batch_t *b, shard_t *shard, batch_t *nx, ps_arena_t *nx_arena)
{
    const ps_forward_config_t *c = e->cfg;
    size_t kept = relabel_batch(e, b);
    if (kept == 0 && b->nmeta == 0)
        return SEND_DONE;
    uint32_t ns = shards_of(c);
    if (ns > kept)
        ns = kept > 0 ? (uint32_t)kept : 1;
    for (uint32_t k = 0; k < ns; k++) {
        shard[k].e = e;
        shard[k].curl = e->curl[k];
        shard[k].n = 0;
        shard[k].go = false;
        shard[k].result = SEND_DONE;
        shard[k].expires = c->max_lag > 0 ? b->first_wall + c->max_lag : 0;
    }
    for (size_t i = 0; i < kept; i++) {
        ps_buf_t enc = PS_BUF_INIT;
        ps_labels_encode(&b->series[i]->labels, &enc);
        uint32_t k = ns == 1 ? 0 : (uint32_t)(ps_hash64(enc.data, enc.len, 0) % ns);
        ps_buf_dispose(&enc);
        shard_t *sh = &shard[k];
        if (sh->n == sh->cap) {
            sh->cap = sh->cap ? sh->cap * 2 : 64;
            sh->series = ps_xrealloc(sh->series, sh->cap * sizeof(*sh->series));
        }
        sh->series[sh->n++] = b->series[i];
    }
    uint32_t nreq = 0;
    for (uint32_t k = 0; k < ns; k++) {
        size_t nmeta = k == 0 ? b->nmeta : 0; /* the metadata go with the first shard */
        if (shard[k].n == 0 && nmeta == 0)
            continue;
        ps_err_t err;
        ps_err_clear(&err);
        if (!build_body(e, shard[k].series, shard[k].n, b->meta, nmeta, b->arena, &shard[k].body, &shard[k].units,
                        &err) ||
            err.code != 0) {
            set_error(e, "encoding a batch: %s", err.msg);
            ps_log_error("forwarding: encoding a batch failed; dropped", "endpoint=%s err=%s", ps_log_q(c->name),
                         ps_log_q(err.msg));
            shard[k].n = 0;
            continue;
        }
        shard[k].go = true;
        nreq++;
    }
    if (nreq <= 1 && nx == NULL) { /* on this thread */
        for (uint32_t k = 0; k < ns; k++)
            if (shard[k].go)
                shard_run(&shard[k]);
    } else if (nreq == 0) {
        prefetch(e, b, nx, nx_arena);
    } else {
        pthread_t th[PS_FORWARD_MAX_SHARDS];
        bool started[PS_FORWARD_MAX_SHARDS] = {false};
        for (uint32_t k = 0; k < ns; k++)
            if (shard[k].go)
                started[k] = pthread_create(&th[k], NULL, shard_run, &shard[k]) == 0;
        if (nx != NULL)
            prefetch(e, b, nx, nx_arena);
        for (uint32_t k = 0; k < ns; k++) {
            if (started[k])
                pthread_join(th[k], NULL);
            else if (shard[k].go)
                shard_run(&shard[k]);
        }
    }
    int r = SEND_DONE;
    for (uint32_t k = 0; k < ns; k++)
        if (shard[k].result == SEND_STOPPED || (shard[k].result == SEND_EXPIRED && r == SEND_DONE))
            r = shard[k].result;
    return r;
}

static void *sender(void *arg)
{
    ep_t *e = arg;
    ps_forward_t *f = e->f;
    const ps_forward_config_t *c = e->cfg;
    ps_thread_name("fwd-%s", c->name);
    ps_arena_t arenas[2] = {PS_ARENA_INIT, PS_ARENA_INIT};
    ps_arena_t *arena = &arenas[0], *nx_arena = &arenas[1];
    shard_t shard[PS_FORWARD_MAX_SHARDS];
    memset(shard, 0, sizeof(shard));
    batch_t b, nx; /* the window being filled or sent; the next one, read while b is in flight */
    memset(&b, 0, sizeof(b));
    memset(&nx, 0, sizeof(nx));
    bool open = false; /* b is being filled: later reads go on after its last entry */
    while (!atomic_load(&e->stop)) {
        pthread_mutex_lock(&f->mu);
        uint64_t gen = f->gen, acked = e->acked;
        pthread_mutex_unlock(&f->mu);
        if (!open || b.n == 0) { /* an empty batch holds nothing: start it afresh at the cursor */
            ps_arena_reset(arena);
            ps_forward_series_t **keep = b.series;
            size_t cap = b.capseries, capmeta = b.capmeta;
            ps_metric_meta_t *keep_meta = b.meta;
            memset(&b, 0, sizeof(b));
            b.series = keep;
            b.capseries = cap;
            b.meta = keep_meta;
            b.capmeta = capmeta;
            b.e = e;
            b.arena = arena;
            b.max_lag = c->max_lag;
            b.last_seq = acked;
            open = true;
        }
        uint64_t from = b.last_seq;
        b.now = ps_time_now();
        b.skip_to = b.skipped_units = b.over_units = 0;
        b.bytes_cut = 0;
        b.seen = 0;
        ps_err_clear(&b.err);
        int rc = 0;
        if (!b.full) { /* else a prefetched window, full already */
            if (c->max_bytes > 0 && b.n == 0 &&
                ps_store_forward_bound(f->store, from, c->max_bytes, &b.bytes_cut, &b.err) != 0)
                b.bytes_cut = 0; /* not readable now: the read below reports it */
            rc = ps_store_forward_read(f->store, from, c->capacity - b.n, READ_MAX_BYTES, on_entry, &b, NULL, &b.err);
        }
        if (rc != 0 && rc != 1) {
            set_error(e, "reading the forwarding log: %s", b.err.msg);
            ps_log_error("forwarding: reading the log failed", "endpoint=%s err=%s", ps_log_q(c->name),
                         ps_log_q(b.err.msg));
            open = false;
            pthread_mutex_lock(&f->mu);
            wait_ns(f, IDLE_WAIT_NS);
            pthread_mutex_unlock(&f->mu);
            continue;
        }
        if (b.skip_to > 0) { /* at the front of an empty batch: the cursor moves past them */
            if (b.skip_to > b.last_seq)
                b.last_seq = b.skip_to;
            if (b.skipped_units > 0) {
                set_error(e, "%llu units older than max_lag dropped", (unsigned long long)b.skipped_units);
                ps_log_warn("forwarding: entries older than max_lag dropped", "endpoint=%s units=%llu up_to_seq=%llu",
                            ps_log_q(c->name), (unsigned long long)b.skipped_units, (unsigned long long)b.skip_to);
            }
            if (b.over_units > 0) {
                set_error(e, "%llu units over queue_config.max_bytes dropped", (unsigned long long)b.over_units);
                ps_log_warn("forwarding: the oldest entries over max_bytes dropped",
                            "endpoint=%s units=%llu up_to_seq=%llu max_bytes=%llu", ps_log_q(c->name),
                            (unsigned long long)b.over_units, (unsigned long long)b.skip_to,
                            (unsigned long long)c->max_bytes);
            }
            pthread_mutex_lock(&f->mu);
            e->st.dropped += b.skipped_units + b.over_units;
            if (b.skip_to > e->acked) { /* at once: a window read again after a failure must not count them again */
                e->acked = b.skip_to;
                request_advance(f, false);
            }
            pthread_mutex_unlock(&f->mu);
        }
        if (b.n == 0) {
            pthread_mutex_lock(&f->mu);
            if (b.last_seq > e->acked) { /* skipped, or other protocols' entries only */
                e->acked = b.last_seq;
                request_advance(f, false);
            } else if (f->adv_want) {
                request_advance(f, false);
            }
            if (b.seen == 0 && f->gen == gen && !atomic_load(&e->stop))
                wait_ns(f, IDLE_WAIT_NS);
            pthread_mutex_unlock(&f->mu);
            continue;
        }
        int64_t age = ps_time_now() - b.first_wall;
        if (!b.full && age < c->batch_send_deadline) {
            pthread_mutex_lock(&f->mu);
            if (f->adv_want)
                request_advance(f, false);
            if (f->gen == gen && !atomic_load(&e->stop))
                wait_ns(f, c->batch_send_deadline - age);
            pthread_mutex_unlock(&f->mu);
            continue; /* read what came meanwhile (the deadline counts from the batch's first entry) */
        }
        nx.n = 0; /* read by send_window while b is in flight (not when nothing of b is sent) */
        int r = send_window(e, &b, shard, &nx, nx_arena);
        open = false;
        if (r == SEND_STOPPED)
            break; /* the window is sent again by the next sender */
        if (r == SEND_EXPIRED)
            continue; /* read again: what passed max_lag is dropped, the rest sent */
        pthread_mutex_lock(&f->mu);
        e->acked = b.last_seq;
        request_advance(f, false);
        pthread_mutex_unlock(&f->mu);
        if (nx.n > 0 && c->max_bytes > 0) { /* over max_bytes now? then a fresh read, which cuts first */
            uint64_t cut = 0;
            ps_err_t berr;
            ps_err_clear(&berr);
            if (ps_store_forward_bound(f->store, b.last_seq, c->max_bytes, &cut, &berr) == 0 && cut > b.last_seq)
                nx.n = 0;
        }
        if (nx.n > 0) { /* the next window, read meanwhile: filled further (if not full) and sent */
            batch_t t = b;
            b = nx;
            nx = t;
            ps_arena_t *ta = arena;
            arena = nx_arena;
            nx_arena = ta;
            open = true;
        }
    }
    free(b.series);
    free(b.meta);
    free(nx.series);
    free(nx.meta);
    for (int k = 0; k < PS_FORWARD_MAX_SHARDS; k++) {
        ps_buf_dispose(&shard[k].body);
        free(shard[k].series);
    }
    ps_arena_dispose(&arenas[0]);
    ps_arena_dispose(&arenas[1]);
    return NULL;
}

/* ---- configuration ---- */

static void stop_senders(ps_forward_t *f)
{
    for (size_t i = 0; i < f->neps; i++)
        atomic_store(&f->eps[i]->stop, true);
    pthread_mutex_lock(&f->mu);
    pthread_cond_broadcast(&f->cv);
    pthread_mutex_unlock(&f->mu);
    for (size_t i = 0; i < f->neps; i++)
        pthread_join(f->eps[i]->thread, NULL);
}

static void free_eps(ep_t **eps, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < PS_FORWARD_MAX_SHARDS; k++)
            if (eps[i]->curl[k] != NULL)
                curl_easy_cleanup(eps[i]->curl[k]);
        free(eps[i]->url);
        free(eps[i]->url_shown);
        free(eps[i]);
    }
    free(eps);
}

static char *post_url(const ps_forward_config_t *c)
{
    size_t n = strlen(c->url), pl = strlen(PUSH_PATH);
    if (c->protocol != PS_FORWARD_PYROSCOPE_PUSH || (n >= pl && strcmp(c->url + n - pl, PUSH_PATH) == 0))
        return ps_xstrndup(c->url, n);
    while (n > 0 && c->url[n - 1] == '/')
        n--;
    char *u = ps_xmalloc(n + pl + 1);
    memcpy(u, c->url, n);
    memcpy(u + n, PUSH_PATH, pl + 1);
    return u;
}

void ps_forward_apply(ps_forward_t *f, ps_config_t *cfg)
{
    if (cfg != NULL)
        ps_config_ref(cfg);
    stop_senders(f);
    size_t n = cfg != NULL ? cfg->nforward : 0;
    ep_t **eps = n > 0 ? ps_xcalloc(n, sizeof(*eps)) : NULL;
    uint64_t last = 0;
    ps_err_t err;
    if (n > 0 && ps_store_forward_read(f->store, 0, 0, 0, NULL, NULL, &last, &err) != 0)
        ps_log_error("forwarding: reading the log failed", "err=%s", ps_log_q(err.msg));
    for (size_t i = 0; i < n; i++) {
        ep_t *e = eps[i] = ps_xcalloc(1, sizeof(*e));
        e->f = f;
        e->cfg = &cfg->forward[i];
        e->url = post_url(e->cfg);
        ps_buf_t shown = PS_BUF_INIT;
        ps_redact_url(e->url, strlen(e->url), &shown);
        e->url_shown = ps_xstrndup(shown.len ? (const char *)shown.data : "", shown.len);
        ps_buf_dispose(&shown);
        for (uint32_t k = 0; k < e->cfg->max_shards && k < PS_FORWARD_MAX_SHARDS; k++)
            e->curl[k] = curl_easy_init();
        uint64_t seq;
        int rc = ps_store_forward_cursor(f->store, e->cfg->name, &seq, &err);
        e->acked = rc == 0 ? seq : last; /* a new endpoint starts at the log's end */
        if (rc != 0 && rc != PS_ENOTFOUND)
            ps_log_error("forwarding: reading a cursor failed; starting at the log's end", "endpoint=%s err=%s",
                         ps_log_q(e->cfg->name), ps_log_q(err.msg));
        for (size_t j = 0; j < f->neps; j++) /* counters go on across reloads */
            if (strcmp(f->eps[j]->cfg->name, e->cfg->name) == 0) {
                e->st = f->eps[j]->st;
                e->acked = f->eps[j]->acked;
            }
    }
    pthread_mutex_lock(&f->mu);
    advance_wait(f); /* it may point at the old names */
    ep_t **old = f->eps;
    size_t nold = f->neps;
    ps_config_t *oldcfg = f->cfg;
    f->eps = eps;
    f->neps = n;
    f->cfg = cfg;
    /* entries only for the protocols configured: a pyroscope_push endpoint skips float entries,
     * so without a remote_write endpoint none are made (and the reverse) */
    bool profiles = false, floats = false;
    for (size_t i = 0; i < n; i++) {
        profiles |= cfg->forward[i].protocol == PS_FORWARD_PYROSCOPE_PUSH;
        floats |= cfg->forward[i].protocol == PS_FORWARD_REMOTE_WRITE;
    }
    atomic_store(&f->active, n > 0);
    atomic_store(&f->profiles, profiles);
    ps_store_set_forward(f->store, floats ? floats_hook : NULL, f);
    request_advance(f, true); /* the new set of cursors; removed endpoints' go */
    pthread_mutex_unlock(&f->mu);
    free_eps(old, nold);
    ps_config_free(oldcfg);
    for (size_t i = 0; i < n; i++) {
        pthread_create(&eps[i]->thread, NULL, sender, eps[i]);
        ps_log_info("forwarding", "endpoint=%s protocol=%s url=%s cursor=%llu", ps_log_q(eps[i]->cfg->name),
                    eps[i]->cfg->protocol == PS_FORWARD_REMOTE_WRITE ? "remote_write" : "pyroscope_push",
                    ps_log_q(eps[i]->url_shown), (unsigned long long)eps[i]->acked);
    }
}

void ps_forward_shutdown(ps_forward_t *f)
{
    if (f == NULL)
        return;
    stop_senders(f);
    pthread_mutex_lock(&f->mu);
    advance_wait(f);
    if (f->neps > 0)
        request_advance(f, true);
    advance_wait(f);
    pthread_mutex_unlock(&f->mu);
    /* the hooks stay: the writes still queued (accepted before the shutdown) are logged, and
     * forwarded after the restart */
}

void ps_forward_free(ps_forward_t *f)
{
    if (f == NULL)
        return;
    ps_store_set_forward(f->store, NULL, NULL);
    free_eps(f->eps, f->neps);
    ps_config_free(f->cfg);
    free(f->adv_names);
    free(f->adv_seqs);
    pthread_mutex_destroy(&f->mu);
    pthread_cond_destroy(&f->cv);
    free(f);
}

/* ---- observability ---- */

typedef struct snap {
    const char *name, *url, *protocol;
    uint64_t acked, pending;
    double lag;
    ep_stats_t st;
} snap_t;

static int first_wall(void *ctx, const ps_forward_log_entry_t *e)
{
    *(int64_t *)ctx = e->wall_ns;
    return 0;
}

/* A copy of every endpoint's state, with pending entries and lag from the log. f->mu held. */
static snap_t *snapshot(ps_forward_t *f, size_t *n)
{
    snap_t *s = ps_xcalloc(f->neps + 1, sizeof(*s));
    uint64_t last = 0;
    ps_err_t err;
    ps_store_forward_read(f->store, 0, 0, 0, NULL, NULL, &last, &err);
    int64_t now = ps_time_now();
    for (size_t i = 0; i < f->neps; i++) {
        ep_t *e = f->eps[i];
        s[i].name = e->cfg->name;
        s[i].url = e->url_shown;
        s[i].protocol = e->cfg->protocol == PS_FORWARD_REMOTE_WRITE ? "remote_write" : "pyroscope_push";
        s[i].acked = e->acked;
        s[i].pending = last > e->acked ? last - e->acked : 0;
        s[i].st = e->st;
        int64_t w = 0;
        if (s[i].pending > 0 && ps_store_forward_read(f->store, e->acked, 1, 1, first_wall, &w, NULL, &err) == 0 &&
            w > 0)
            s[i].lag = (double)(now - w) / 1e9;
    }
    *n = f->neps;
    return s;
}

static const char *const by_endpoint[] = {"endpoint", "protocol", NULL};
static const ps_metric_t fwd_metrics[] = {
    {"profstore_forward_sent_total", PS_COUNTER,
     "Profiles (pyroscope_push) or samples (remote_write) forwarded and acknowledged.", by_endpoint},
    {"profstore_forward_requests_total", PS_COUNTER, "Forwarding requests answered or failed.", by_endpoint},
    {"profstore_forward_failed_total", PS_COUNTER,
     "Forwarding requests that failed (non-2xx answers and network errors).", by_endpoint},
    {"profstore_forward_retried_total", PS_COUNTER, "Forwarding requests sent again after a failure.", by_endpoint},
    {"profstore_forward_dropped_total", PS_COUNTER,
     "Profiles or samples not forwarded: refused by the endpoint (4xx) or older than max_lag.", by_endpoint},
    {"profstore_forward_pending", PS_GAUGE, "Forwarding log entries the endpoint has not acknowledged yet.",
     by_endpoint},
    {"profstore_forward_lag_seconds", PS_GAUGE,
     "Age of the oldest entry the endpoint has not acknowledged (0 when none).", by_endpoint},
    {"profstore_forward_last_error_timestamp_seconds", PS_GAUGE,
     "When the endpoint's last error happened (0: never).", by_endpoint},
};

void ps_forward_metrics(ps_forward_t *f, ps_buf_t *out)
{
    pthread_mutex_lock(&f->mu);
    size_t n;
    snap_t *s = snapshot(f, &n);
    pthread_mutex_unlock(&f->mu);
    if (n == 0) { /* no forward: section: /metrics as without this room */
        free(s);
        return;
    }
    for (size_t k = 0; k < sizeof(fwd_metrics) / sizeof(fwd_metrics[0]); k++) {
        const ps_metric_t *m = &fwd_metrics[k];
        ps_metric_head(out, m);
        for (size_t i = 0; i < n; i++) {
            const char *labels[] = {s[i].name, s[i].protocol};
            uint64_t v[] = {s[i].st.sent, s[i].st.requests, s[i].st.failed, s[i].st.retried, s[i].st.dropped,
                            s[i].pending};
            if (k < 6)
                ps_metric_u64(out, m, NULL, labels, v[k]);
            else
                ps_metric_f(out, m, NULL, labels, k == 6 ? s[i].lag : (double)s[i].st.last_error_ns / 1e9, 3);
        }
    }
    free(s);
}

void ps_forward_status_json(ps_forward_t *f, ps_buf_t *out)
{
    pthread_mutex_lock(&f->mu);
    size_t n;
    snap_t *s = snapshot(f, &n);
    pthread_mutex_unlock(&f->mu);
    ps_json_t j;
    ps_json_init(&j, out);
    ps_json_arr(&j);
    for (size_t i = 0; i < n; i++) {
        ps_json_obj(&j);
        ps_json_key(&j, "name");
        ps_json_cstr(&j, s[i].name);
        ps_json_key(&j, "url");
        ps_json_cstr(&j, s[i].url);
        ps_json_key(&j, "protocol");
        ps_json_cstr(&j, s[i].protocol);
        ps_json_key(&j, "cursor");
        ps_json_uint(&j, s[i].acked);
        ps_json_key(&j, "sent");
        ps_json_uint(&j, s[i].st.sent);
        ps_json_key(&j, "requests");
        ps_json_uint(&j, s[i].st.requests);
        ps_json_key(&j, "failed");
        ps_json_uint(&j, s[i].st.failed);
        ps_json_key(&j, "retried");
        ps_json_uint(&j, s[i].st.retried);
        ps_json_key(&j, "dropped");
        ps_json_uint(&j, s[i].st.dropped);
        ps_json_key(&j, "pending");
        ps_json_uint(&j, s[i].pending);
        ps_json_key(&j, "lagSeconds");
        ps_json_fixed(&j, s[i].lag, 3);
        ps_json_key(&j, "lastError");
        ps_json_cstr(&j, s[i].st.last_error);
        ps_json_key(&j, "lastErrorTime");
        if (s[i].st.last_error_ns > 0) {
            char ts[64];
            ps_format_time(s[i].st.last_error_ns, ts, sizeof(ts));
            ps_json_cstr(&j, ts);
        } else {
            ps_json_null(&j);
        }
        ps_json_end(&j);
    }
    ps_json_end(&j);
    free(s);
}
