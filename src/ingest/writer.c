/*
 * writer.c - the writer thread (see ingest.h).
 */
#include "ingest.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "core/log.h"
#include "core/thread.h"
#include "core/timeutil.h"

struct ps_writer {
    ps_store_writer_t *sw; /* the store's writer: used by the thread only */
    ps_writer_opts_t opts;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    ps_wreq_t *head, *tail;
    uint32_t queued;
    uint64_t queued_units;   /* the weight() of what is queued */
    uint64_t queued_bytes;   /* the bytes of what is queued */
    bool stopping;
    bool joined; /* ps_writer_shutdown has joined the thread */
    /* the syncer thread: makes each committed batch durable (the sync of its meta page, unless
     * a later commit's page sync did it first) and answers it, while the writer goes on with the
     * next batch. Under mu. */
    pthread_t syncer;
    pthread_cond_t sync_cv;          /* the syncer waits here for batches */
    struct pending *sync_q;          /* committed batches, oldest first */
    bool sync_stop;
    int64_t write_start;             /* ps_time_mono() when the batch being written began; 0: none */
    uint64_t writes;                 /* batches written (committed or failed) */
    int64_t write_avg_ns, sync_avg_ns; /* moving means: a batch's write (commit included), a sync */
    bool syncing;         /* the syncer holds batches it has not answered yet */
    bool sync_waits_write; /* the syncer waits for the end of the batch being written */
    uint32_t decoding;    /* writes being decoded (ps_writer_decoding) */
    bool decode_waiting;  /* the writer waits for them: wake it when one ends */
    ps_writer_stats_t stats;
};

const char *const ps_writer_txn_le[PS_WRITER_TXN_BUCKETS] = {"0.001", "0.0025", "0.005", "0.01", "0.025", "0.05",
                                                             "0.1",   "0.25",   "0.5",   "1",    "2.5",   "10"};
static const double txn_le_ns[PS_WRITER_TXN_BUCKETS] = {1e6, 2.5e6, 5e6, 1e7, 2.5e7, 5e7, 1e8, 2.5e8, 5e8, 1e9, 2.5e9, 1e10};

void ps_writer_opts_default(ps_writer_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->max_batch = 512;
    o->max_queue = 8192;
    o->max_queue_bytes = PS_WRITER_QUEUE_BYTES;
    o->commit_delay_ns = 0;
    o->eager_samples = PS_WRITER_EAGER_SAMPLES;
    o->decode_wait_ns = PS_WRITER_DECODE_WAIT_NS;
    o->compact_interval_ns = 10 * PS_NS_PER_S;
    o->retention_interval_ns = 60 * PS_NS_PER_S;
}

/* A request's share of max_batch. */
/* counted once, by ps_writer_submit (the writer reads it on every wake) */
static uint64_t samples_of(const ps_wreq_t *r)
{
    uint64_t n = 0;
    if (r->kind == PS_WREQ_SAMPLES)
        for (size_t i = 0; i < r->nfloats; i++)
            n += r->floats[i]->nsamples;
    return n;
}

#define PS_WRITER_CHECKPOINT_IDLE_NS PS_NS_PER_S /* idle this long after a commit: a float log checkpoint */

static uint64_t weight(const ps_wreq_t *r)
{
    return r->kind != PS_WREQ_SAMPLES ? 1 : 1 + r->nsamples / PS_WRITER_SAMPLES_PER_UNIT;
}

static void grow(void *arr, size_t *cap, size_t need, size_t size)
{
    void **p = arr;
    if (need <= *cap)
        return;
    *cap = need * 2;
    *p = ps_xrealloc(*p, *cap * size);
}

static void housekeeping(ps_writer_t *w, int64_t *next_compact, int64_t *next_retain, bool force_check)
{
    int64_t mono = ps_time_mono();
    ps_err_t err;
    if (force_check || mono >= *next_compact) {
        uint32_t n = 0;
        if (ps_store_compact(w->sw, false, ps_time_now(), &n, &err) != 0)
            ps_log_error("compaction failed", "err=%s", ps_log_q(err.msg));
        else if (n > 0)
            ps_log_debug("compacted", "chunks=%u", n);
        pthread_mutex_lock(&w->mu);
        w->stats.compactions++;
        w->stats.chunks += n;
        pthread_mutex_unlock(&w->mu);
        *next_compact = mono + w->opts.compact_interval_ns;
    }
    if (mono >= *next_retain) {
        uint32_t n = 0;
        if (ps_store_retain(w->sw, ps_time_now(), &n, &err) != 0)
            ps_log_error("retention failed", "err=%s", ps_log_q(err.msg));
        else if (n > 0)
            ps_log_info("retention dropped series", "series=%u", n);
        pthread_mutex_lock(&w->mu);
        w->stats.retention_runs++;
        w->stats.series_dropped += n;
        pthread_mutex_unlock(&w->mu);
        *next_retain = mono + w->opts.retention_interval_ns;
    }
}

/* How long the queued requests may wait for others to share their commit (w->mu held): the
 * least any of them tolerates; INT64_MAX for an empty queue. */
static int64_t commit_wait(const ps_writer_t *w)
{
    int64_t delay = INT64_MAX;
    uint64_t samples = 0;
    for (const ps_wreq_t *r = w->head; r != NULL && delay > 0; r = r->next) {
        int64_t d = r->commit_delay_ns > 0 ? r->commit_delay_ns : w->opts.commit_delay_ns;
        if (r->kind != PS_WREQ_APPEND && r->kind != PS_WREQ_SAMPLES)
            d = 0; /* admin requests: now */
        if (r->kind == PS_WREQ_SAMPLES && w->opts.eager_samples > 0 &&
            (samples += r->nsamples) >= w->opts.eager_samples)
            d = 0; /* enough samples to share the fsync already: waiting only adds latency */
        if (d < delay)
            delay = d;
    }
    return delay;
}

/* Whether the queue may wait for the writes being decoded (w->mu held): appends and samples only
 * (admin requests go now), and the batch not full yet. */
static bool decode_wait_ok(const ps_writer_t *w)
{
    if (w->decoding == 0 || w->opts.decode_wait_ns <= 0 || w->stopping || w->queued_units >= w->opts.max_batch)
        return false;
    for (const ps_wreq_t *r = w->head; r != NULL; r = r->next)
        if (r->kind != PS_WREQ_APPEND && r->kind != PS_WREQ_SAMPLES)
            return false;
    return true;
}

/* The appends of a committed batch, answered once its commit is durable: its meta page is synced
 * by the syncer (ps_store_writer_sync) or, when that comes first, by a later commit's page sync
 * (ps_store_writer_defer_sync). */
typedef struct pending {
    ps_wreq_t *head, *tail; /* linked by next, in batch order */
    uint64_t txn;           /* the commit they wait for */
    bool fwd;               /* call fwd_logged once it is durable */
    struct pending *next;   /* the syncer's queue */
} pending_t;

static void pending_add(pending_t *p, ps_wreq_t *r)
{
    r->next = NULL;
    if (p->tail)
        p->tail->next = r;
    else
        p->head = r;
    p->tail = r;
}

/* Syncs what p waits for unless a later commit did, then answers it (on the syncer, not under
 * w->mu). A failed sync fails its requests: whether they are stored is unknown, so they are not acknowledged. */
static void settle(ps_writer_t *w, pending_t *p)
{
    if (p->head == NULL && !p->fwd)
        return;
    ps_err_t err;
    ps_err_clear(&err);
    int rc = ps_store_writer_sync(w->sw, p->txn, &err);
    if (rc != 0)
        ps_log_error("sync failed", "err=%s", ps_log_q(err.msg));
    else if (p->fwd && w->opts.fwd_logged != NULL)
        w->opts.fwd_logged(w->opts.fwd_ctx);
    uint64_t failed = 0;
    for (ps_wreq_t *r = p->head, *next; r != NULL; r = next) {
        next = r->next;
        if (rc != 0) {
            r->status = rc;
            r->err = err;
            if (r->kind == PS_WREQ_APPEND && r->app.status == 0) {
                r->app.status = rc;
                r->app.err = err;
                failed++;
            }
        }
        r->on_done(r);
    }
    if (failed > 0) {
        pthread_mutex_lock(&w->mu);
        w->stats.appended -= failed;
        w->stats.failed += failed;
        pthread_mutex_unlock(&w->mu);
    }
    *p = (pending_t){0};
}

/* Makes every batch of the list q durable (one sync up to txn, their newest commit; nothing when
 * a later commit's page sync did it) and answers them, oldest first, between answers(true) and
 * answers(false). Not under w->mu; q's batches are freed. */
static void sync_and_answer(ps_writer_t *w, pending_t *q, uint64_t txn)
{
    ps_err_t err;
    ps_err_clear(&err);
    int64_t t0 = ps_time_mono();
    if (ps_store_writer_sync(w->sw, txn, &err) != 0) /* each settle tries again, and fails its own */
        ps_log_error("sync failed", "err=%s", ps_log_q(err.msg));
    int64_t took = ps_time_mono() - t0;
    if (took > 20000) { /* a sync, not a batch a later commit had synced already */
        pthread_mutex_lock(&w->mu);
        w->sync_avg_ns = (3 * w->sync_avg_ns + took) / 4;
        pthread_mutex_unlock(&w->mu);
    }
    if (w->opts.answers != NULL) /* the batches' completions sent together */
        w->opts.answers(true);
    while (q != NULL) {
        pending_t *next = q->next;
        settle(w, q);
        free(q);
        q = next;
    }
    if (w->opts.answers != NULL)
        w->opts.answers(false);
}

/* The syncer: takes every batch the writer committed, syncs once for all of them (nothing when a
 * later commit's page sync has already made them durable) and answers them, oldest first, while
 * the writer builds and commits the next batch: a batch waits for its own commit and one sync,
 * not for the next batch's commit too. Ends once stopped with nothing left. */
static void *syncer(void *arg)
{
    ps_writer_t *w = arg;
    ps_thread_name("syncer");
    pthread_mutex_lock(&w->mu);
    for (;;) {
        if (w->sync_q == NULL) {
            if (w->sync_stop)
                break;
            pthread_cond_wait(&w->sync_cv, &w->mu);
            continue;
        }
        pending_t *q = w->sync_q;
        w->sync_q = NULL;
        w->syncing = true;
        w->stats.sync_rounds++;
        uint64_t txn = 0;
        for (pending_t *p = q; p != NULL; p = p->next)
            txn = p->txn > txn ? p->txn : txn;
        /* a batch the writer is writing now syncs these too, with its pages: its end is waited
         * for when a sync of our own would take longer than the rest of it (two syncs at once
         * only slow each other on a busy disk); else they are synced now, beside its work */
        for (uint64_t writes = w->writes;;) {
            int64_t now = ps_time_mono(), left = w->write_start + w->write_avg_ns - now;
            if (w->write_start == 0 || w->writes != writes || 2 * w->sync_avg_ns < left || w->sync_stop)
                break;
            struct timespec ts = ps_mono_deadline(left > 100000 ? left : 100000);
            w->sync_waits_write = true;
            pthread_cond_timedwait(&w->sync_cv, &w->mu, &ts);
        }
        w->sync_waits_write = false;
        pthread_mutex_unlock(&w->mu);
        sync_and_answer(w, q, txn);
        pthread_mutex_lock(&w->mu);
        w->syncing = false;
    }
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

/* The committed batch p made durable and answered: by the writer itself when alone (nothing
 * queued or being decoded when it took the batch, nor now, and the syncer idle: nobody would use
 * the writer meanwhile, and a hand-off to the syncer, a thread wake-up, is saved from a lone
 * request's latency), else by the syncer while the writer goes on with the next batch. */
static void hand_to_syncer(ps_writer_t *w, pending_t *p, bool alone)
{
    if (p->head == NULL && !p->fwd)
        return;
    pending_t *q = ps_xmalloc(sizeof(*q));
    *q = *p;
    q->next = NULL;
    *p = (pending_t){0};
    pthread_mutex_lock(&w->mu);
    if (alone && w->head == NULL && w->decoding == 0 && w->sync_q == NULL && !w->syncing) { /* still alone */
        w->stats.sync_rounds++;
        pthread_mutex_unlock(&w->mu);
        sync_and_answer(w, q, q->txn);
        return;
    }
    pending_t **at = &w->sync_q;
    while (*at != NULL)
        at = &(*at)->next;
    *at = q;
    pthread_mutex_unlock(&w->mu);
    pthread_cond_signal(&w->sync_cv); /* after the unlock: the syncer wakes to a free mutex */
}

static void *run(void *arg)
{
    ps_writer_t *w = arg;
    ps_thread_name("writer");
    ps_append_t **apps = ps_xmalloc(w->opts.max_batch * sizeof(*apps));
    ps_float_append_t **fl = NULL; /* the float series of the batch's PS_WREQ_SAMPLES requests */
    ps_metric_meta_t *meta = NULL;
    size_t capfl = 0, capmeta = 0;
    int64_t next_compact = ps_time_mono() + w->opts.compact_interval_ns;
    int64_t next_retain = ps_time_mono() + w->opts.retention_interval_ns / 10; /* soon after start */
    int64_t last_commit = 0;
    pending_t pending = {0};
    ps_store_writer_defer_sync(w->sw, true);
    for (;;) {
        pthread_mutex_lock(&w->mu);
        while (w->head == NULL && !w->stopping) {
            int64_t mono = ps_time_mono(), wake = next_compact < next_retain ? next_compact : next_retain;
            /* idle for PS_WRITER_CHECKPOINT_IDLE_NS after logging float samples: a checkpoint,
             * so that reads pay for no log (docs/FORMAT.md "Float sample log") */
            bool ckpt = ps_store_float_log_pending(w->sw);
            if (ckpt && last_commit + PS_WRITER_CHECKPOINT_IDLE_NS < wake)
                wake = last_commit + PS_WRITER_CHECKPOINT_IDLE_NS;
            if (mono >= wake) {
                pthread_mutex_unlock(&w->mu);
                ps_err_t err;
                if (ckpt && mono >= last_commit + PS_WRITER_CHECKPOINT_IDLE_NS &&
                    ps_store_float_checkpoint(w->sw, &err) != 0) {
                    ps_log_error("float log checkpoint failed", "err=%s", ps_log_q(err.msg));
                    last_commit = mono; /* tried again after another idle second */
                }
                if (mono >= next_compact || mono >= next_retain)
                    housekeeping(w, &next_compact, &next_retain, false);
                pthread_mutex_lock(&w->mu);
                continue;
            }
            struct timespec ts = ps_mono_deadline(wake - mono);
            pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        }
        if (w->head == NULL && w->stopping) {
            pthread_mutex_unlock(&w->mu);
            break;
        }
        /* group commit, leader/follower: this thread is the leader. What is queued when it wakes
         * is committed at once, and what arrives while that commit (its fsync) runs waits for the
         * next one, which then takes all of it: one fsync of latency when idle, commits as large
         * as the load under load. Only a configured commit_delay (0 by default) or a queue of
         * scrapes alone (nobody waits on them: they share fsyncs for their commit_delay_ns)
         * waits for more, at most that long since the last commit, and no longer once the batch
         * is full or a request that may not wait arrives. A batch's appends are answered once its
         * commit is durable, by the syncer (pending_t) */
        for (;;) {
            int64_t delay = commit_wait(w);
            if (w->queued >= w->opts.max_batch || delay <= 0 || delay == INT64_MAX || w->stopping)
                break;
            int64_t deadline = last_commit + delay, mono = ps_time_mono();
            if (mono >= deadline)
                break;
            struct timespec ts = ps_mono_deadline(deadline - mono);
            if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0)
                break;
        }
        /* writes being decoded now reach the queue within a decode time, while a commit (its
         * fsync) takes longer: a batch waits for them (at most decode_wait_ns; never when nothing
         * decodes, so a request into an idle writer commits at once), so one commit takes them
         * all instead of the next commit. The last batch's answers wait with it (no extra sync). */
        if (decode_wait_ok(w)) {
            int64_t deadline = ps_time_mono() + w->opts.decode_wait_ns;
            struct timespec ts = ps_mono_deadline(w->opts.decode_wait_ns);
            w->decode_waiting = true;
            while (decode_wait_ok(w) && ps_time_mono() < deadline)
                if (pthread_cond_timedwait(&w->cv, &w->mu, &ts) != 0)
                    break;
            w->decode_waiting = false;
            w->stats.decode_waits++;
        }
        /* take up to max_batch units: a profile is one, a samples request one per
         * PS_WRITER_SAMPLES_PER_UNIT samples (at least one request, however big) */
        ps_wreq_t *batch = w->head, *last = w->head;
        uint32_t n = 1;
        uint64_t units = weight(last), bytes = last->bytes;
        while (last->next != NULL && units + weight(last->next) <= w->opts.max_batch) {
            last = last->next;
            units += weight(last);
            bytes += last->bytes;
            n++;
        }
        w->head = last->next;
        if (w->head == NULL)
            w->tail = NULL;
        last->next = NULL;
        w->queued -= n;
        w->queued_units -= units;
        w->queued_bytes -= bytes;
        bool alone = w->head == NULL && w->decoding == 0;
        pthread_mutex_unlock(&w->mu);

        size_t napps = 0, nfl = 0, nmeta = 0;
        bool want_compact = false;
        last_commit = ps_time_mono();
        for (ps_wreq_t *r = batch; r != NULL; r = r->next) {
            if (r->kind == PS_WREQ_APPEND)
                apps[napps++] = &r->app;
            if (r->kind == PS_WREQ_SAMPLES) {
                if (r->nfloats > 0) { /* memcpy may not be given NULL, even for 0 bytes */
                    grow(&fl, &capfl, nfl + r->nfloats, sizeof(*fl));
                    memcpy(fl + nfl, r->floats, r->nfloats * sizeof(*fl));
                    nfl += r->nfloats;
                }
                if (r->nmeta > 0) {
                    grow(&meta, &capmeta, nmeta + r->nmeta, sizeof(*meta));
                    memcpy(meta + nmeta, r->meta, r->nmeta * sizeof(*meta));
                    nmeta += r->nmeta;
                }
            }
        }
        uint64_t fwritten = 0, frejected = 0;
        int64_t txn_ns = -1;
        int wrc = 0;
        if (napps > 0 || nfl > 0 || nmeta > 0) {
            ps_err_t err;
            ps_err_clear(&err);
            int64_t t0 = ps_time_mono();
            pthread_mutex_lock(&w->mu);
            w->write_start = t0;
            pthread_mutex_unlock(&w->mu);
            int rc = wrc = ps_store_write(w->sw, apps, napps, fl, nfl, meta, nmeta, &err);
            txn_ns = ps_time_mono() - t0;
            pthread_mutex_lock(&w->mu);
            w->write_start = 0;
            w->writes++;
            w->write_avg_ns = (7 * w->write_avg_ns + txn_ns) / 8;
            bool waits = w->sync_waits_write;
            pthread_mutex_unlock(&w->mu);
            if (waits) /* the syncer waits for this write's page sync */
                pthread_cond_signal(&w->sync_cv);
            if (rc == 0) {
                pending.txn = ps_store_writer_last_txn(w->sw);
                pending.fwd = (napps > 0 || nfl > 0) && w->opts.fwd_logged != NULL;
            }
            if (rc != 0)
                ps_log_error("write failed", "profiles=%zu series=%zu err=%s", napps, nfl, ps_log_q(err.msg));
            /* a full disk (or map) is a state: reads go on, retention and compaction free space,
             * and the next transaction that commits ends it */
            pthread_mutex_lock(&w->mu);
            if (rc == PS_ENOSPACE && !w->stats.disk_full) {
                ps_log_warn("storage is full: writes are refused with 507 until space returns", "err=%s",
                            ps_log_q(err.msg));
                next_retain = ps_time_mono(); /* retention frees space: now, not at its interval */
            }
            else if (rc == 0 && w->stats.disk_full)
                ps_log_info("storage has space again: writes are accepted", NULL);
            if (rc == PS_ENOSPACE || rc == 0)
                w->stats.disk_full = rc == PS_ENOSPACE;
            pthread_mutex_unlock(&w->mu);
            for (ps_wreq_t *r = batch; r != NULL; r = r->next) {
                if (r->kind != PS_WREQ_SAMPLES)
                    continue;
                if (rc != 0) {
                    r->status = rc;
                    r->err = err;
                }
                for (size_t i = 0; i < r->nfloats; i++) {
                    const ps_float_append_t *f = r->floats[i];
                    fwritten += f->status == 0 ? f->accepted : 0;
                    frejected += f->status == 0 ? f->out_of_order + f->dup_conflicts + f->out_of_bounds + f->too_new
                                             : f->nsamples;
                }
            }
        }
        for (ps_wreq_t *r = batch; r != NULL; r = r->next)
            if (r->kind == PS_WREQ_APPEND) {
                ps_buf_dispose(&r->fwd); /* logged (or not): on_done may free r */
                ps_buf_dispose(&r->rec);
            }
        uint64_t ok = 0, failed = 0, dups = 0, nospace = 0;
        if (wrc == PS_ENOSPACE)
            for (ps_wreq_t *r = batch; r != NULL; r = r->next)
                nospace += r->kind == PS_WREQ_APPEND || r->kind == PS_WREQ_SAMPLES;
        for (size_t i = 0; i < napps; i++) {
            if (apps[i]->status == 0) {
                ok++;
                dups += apps[i]->duplicate;
            } else {
                failed++;
            }
        }
        pthread_mutex_lock(&w->mu);
        w->stats.batches += napps > 0 || nfl > 0 || nmeta > 0;
        if (txn_ns >= 0) {
            unsigned k = 0;
            while (k < PS_WRITER_TXN_BUCKETS && (double)txn_ns > txn_le_ns[k])
                k++;
            w->stats.txn_buckets[k]++;
            w->stats.txn_sum_ns += (uint64_t)txn_ns;
        }
        w->stats.appended += ok;
        w->stats.failed += failed;
        w->stats.duplicates += dups;
        w->stats.samples_written += fwritten;
        w->stats.samples_rejected += frejected;
        w->stats.refused_disk_full += nospace;
        pthread_mutex_unlock(&w->mu);
        /* admin requests run after the appends of the same batch */
        for (ps_wreq_t *r = batch, *next; r != NULL; r = next) {
            next = r->next;
            if (r->kind == PS_WREQ_COMPACT) {
                r->status = ps_store_compact(w->sw, true, ps_time_now(), &r->count, &r->err);
            } else if (r->kind == PS_WREQ_RETAIN) {
                r->status = ps_store_retain(w->sw, ps_time_now(), &r->count, &r->err);
            } else if (r->kind == PS_WREQ_FWD_ADVANCE) {
                uint64_t trimmed = 0;
                r->status = ps_store_forward_advance(w->sw, r->fwd_names, r->fwd_seqs, r->nfwd, &trimmed, &r->err);
                r->count = (uint32_t)trimmed;
            } else if (r->kind == PS_WREQ_SETTING) {
                r->status = ps_store_setting_put(w->sw, &r->setting, r->setting_del, &r->err);
            } else if (r->kind == PS_WREQ_ADHOC) {
                r->status = ps_store_adhoc_put(w->sw, &r->adhoc, &r->count, &r->err);
            } else if (r->kind == PS_WREQ_RULE) {
                r->status = ps_store_rule_put(w->sw, &r->rule, r->rule_del, w->opts.max_rules, &r->rule_gen, &r->err);
                if (r->status == 0 && r->rule_after != NULL)
                    r->rule_after(r->rule_after_ctx);
            } else if (r->kind == PS_WREQ_APPEND && r->status == 0 && r->app.status == 0) {
                want_compact = true;
            }
            if (wrc == 0 && (r->kind == PS_WREQ_APPEND || r->kind == PS_WREQ_SAMPLES) && txn_ns >= 0)
                pending_add(&pending, r); /* answered once durable: by the syncer */
            else
                r->on_done(r);
        }
        hand_to_syncer(w, &pending, alone);
        if (w->opts.committed != NULL)
            w->opts.committed(w->opts.committed_ctx);
        /* heads that reached compact_max_profiles are folded at once, not only at the interval */
        if (want_compact) {
            uint32_t nc = 0;
            ps_err_t err;
            if (ps_store_compact_due(w->sw, &nc, &err) != 0)
                ps_log_error("compaction failed", "err=%s", ps_log_q(err.msg));
            pthread_mutex_lock(&w->mu);
            w->stats.chunks += nc;
            pthread_mutex_unlock(&w->mu);
        }
        housekeeping(w, &next_compact, &next_retain, false);
    }
    free(apps);
    free(fl);
    free(meta);
    return NULL;
}

ps_writer_t *ps_writer_start(ps_store_t *store, const ps_writer_opts_t *o, ps_err_t *err)
{
    ps_writer_t *w = ps_xcalloc(1, sizeof(*w));
    if (ps_store_writer_open(store, &w->sw, err) != 0) {
        free(w);
        return NULL;
    }
    w->opts = *o;
    if (w->opts.max_batch == 0)
        w->opts.max_batch = 512;
    pthread_mutex_init(&w->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&w->cv, &ca);
    pthread_cond_init(&w->sync_cv, &ca);
    pthread_condattr_destroy(&ca);
    pthread_create(&w->syncer, NULL, syncer, w);
    pthread_create(&w->thread, NULL, run, w);
    return w;
}

static void decoded_here(ps_writer_t *w);

int ps_writer_submit(ps_writer_t *w, ps_wreq_t *r)
{
    r->next = NULL;
    r->status = 0;
    r->nsamples = samples_of(r);
    r->fwd = (ps_buf_t)PS_BUF_INIT;
    r->rec = (ps_buf_t)PS_BUF_INIT;
    if (r->kind == PS_WREQ_APPEND) {
        if (w->opts.fwd_entry != NULL) /* here, on the submitting thread: the writer only copies it */
            w->opts.fwd_entry(w->opts.fwd_ctx, &r->app, &r->fwd);
        r->app.fwd = r->fwd.data;
        r->app.fwd_len = r->fwd.len;
        if (w->opts.rec_entry != NULL) /* likewise: the writer only sums contributions up */
            w->opts.rec_entry(w->opts.rec_ctx, &r->app, &r->rec);
        r->app.rec = r->rec.data;
        r->app.rec_len = r->rec.len;
    }
    uint64_t units = weight(r);
    pthread_mutex_lock(&w->mu);
    decoded_here(w);
    if (w->stopping) {
        pthread_mutex_unlock(&w->mu);
        ps_buf_dispose(&r->fwd);
        ps_buf_dispose(&r->rec);
        return ps_err_set(&r->err, PS_EUNAVAIL, "server is shutting down");
    }
    /* bounded by items, by weight (samples requests: max_queue units of decoded samples, 8,192
     * units ~ 8M samples) and by the bytes the queued requests hold; one request is always taken
     * into an empty queue, however big. The sender retries the 429 (503) after Retry-After. */
    bool admin = r->kind == PS_WREQ_COMPACT || r->kind == PS_WREQ_RETAIN || r->kind == PS_WREQ_FWD_ADVANCE;
    if (!admin && w->queued > 0 &&
        (w->queued >= w->opts.max_queue ||
         (r->kind == PS_WREQ_SAMPLES && w->queued_units + units > w->opts.max_queue) ||
         (w->opts.max_queue_bytes > 0 && w->queued_bytes + r->bytes > w->opts.max_queue_bytes))) {
        uint32_t q = w->queued;
        uint64_t qb = w->queued_bytes;
        w->stats.refused_queue_full++;
        pthread_mutex_unlock(&w->mu);
        ps_buf_dispose(&r->fwd);
        ps_buf_dispose(&r->rec);
        return ps_err_set(&r->err, PS_EOVERLOAD,
                          "write queue is full (%u requests, %llu MiB waiting for the writer; limits %s=%u, "
                          "%s=%llu MiB): retry later",
                          q, (unsigned long long)(qb >> 20), ps_setting_name(PS_SETTING_WRITE_QUEUE_MAX_ITEMS),
                          w->opts.max_queue, ps_setting_name(PS_SETTING_WRITE_QUEUE_MAX_BYTES),
                          (unsigned long long)(w->opts.max_queue_bytes >> 20));
    }
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    w->queued++;
    w->queued_units += units;
    w->queued_bytes += r->bytes;
    /* the writer waiting for the writes being decoded (decode_wait_ok held when it last looked)
     * wakes for the last of them, a full batch or a request that may not wait, not for every one
     * (a wake-up a pushed profile: a futex wake here, a switch to the writer and back) */
    bool wake = !w->decode_waiting || w->decoding == 0 || w->queued_units >= w->opts.max_batch ||
                (r->kind != PS_WREQ_APPEND && r->kind != PS_WREQ_SAMPLES);
    pthread_mutex_unlock(&w->mu);
    if (wake) /* after the unlock: the writer wakes to a free mutex, not to block on it at once */
        pthread_cond_signal(&w->cv);
    return 0;
}

/* the writer whose count of writes being decoded includes this thread's (ps_writer_decode_begin) */
static _Thread_local ps_writer_t *decoding_here;

void ps_writer_decode_begin(ps_writer_t *w)
{
    decoding_here = w;
}

void ps_writer_decode_end(void)
{
    ps_writer_t *w = decoding_here;
    decoding_here = NULL;
    ps_writer_decoding(w, -1);
}

/* w->mu held: this thread's write, being submitted, is decoded */
static void decoded_here(ps_writer_t *w)
{
    if (decoding_here == w) {
        decoding_here = NULL;
        if (w->decoding > 0)
            w->decoding--;
    }
}

void ps_writer_decoding(ps_writer_t *w, int delta)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    bool wake = false;
    if (delta > 0)
        w->decoding++;
    else if (w->decoding > 0 && --w->decoding == 0 && w->decode_waiting)
        wake = true;
    pthread_mutex_unlock(&w->mu);
    if (wake)
        pthread_cond_signal(&w->cv);
}

void ps_writer_shutdown(ps_writer_t *w)
{
    if (w == NULL)
        return;
    pthread_mutex_lock(&w->mu);
    bool joined = w->joined;
    w->stopping = true;
    w->joined = true;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    if (!joined) {
        pthread_join(w->thread, NULL);
        pthread_mutex_lock(&w->mu);
        w->sync_stop = true;
        pthread_cond_signal(&w->sync_cv);
        pthread_mutex_unlock(&w->mu);
        pthread_join(w->syncer, NULL);
    }
}

void ps_writer_stop(ps_writer_t *w)
{
    if (w == NULL)
        return;
    ps_writer_shutdown(w);
    ps_store_writer_close(w->sw);
    pthread_mutex_destroy(&w->mu);
    pthread_cond_destroy(&w->cv);
    pthread_cond_destroy(&w->sync_cv);
    free(w);
}

void ps_writer_stats(ps_writer_t *w, ps_writer_stats_t *st)
{
    pthread_mutex_lock(&w->mu);
    *st = w->stats;
    st->queued = w->queued;
    st->queued_bytes = w->queued_bytes;
    pthread_mutex_unlock(&w->mu);
}
