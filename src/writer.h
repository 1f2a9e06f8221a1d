/*
 * writer.h - the writer thread: the only thread that writes to the store. Requests from the HTTP
 * threads (and later the scraper) are queued; the writer takes everything queued, applies it in
 * one transaction (group commit), then calls each request's on_done from the writer thread.
 * Between batches it compacts heads and applies retention.
 */
#ifndef PS_WRITER_H
#define PS_WRITER_H

#include <stdint.h>

#include "storage/store.h"

typedef enum { PS_WREQ_APPEND, PS_WREQ_COMPACT, PS_WREQ_RETAIN } ps_wreq_kind_t;

typedef struct ps_wreq ps_wreq_t;
struct ps_wreq {
    ps_wreq_kind_t kind;
    ps_append_t app;             /* PS_WREQ_APPEND: in and out */
    int status;                  /* result for COMPACT/RETAIN */
    ps_err_t err;
    uint32_t count;              /* chunks written / series dropped */
    void (*on_done)(ps_wreq_t *r); /* called on the writer thread once durable (or failed) */
    int64_t commit_delay_ns;     /* > 0: this request tolerates that much group-commit delay (scrapes:
                                  * nobody waits on them); 0: the writer's commit_delay */
    void *ctx;
    ps_wreq_t *next;
};

typedef struct ps_writer_opts {
    uint32_t max_batch;          /* profiles per transaction (default 512) */
    uint32_t max_queue;          /* queued requests before submit refuses (default 8192) */
    int64_t commit_delay_ns;     /* at most one commit per this interval, unless a batch is full (10 ms) */
    int64_t compact_interval_ns; /* how often to look for heads due (default 10 s) */
    int64_t retention_interval_ns; /* how often to apply retention (default 1 min) */
} ps_writer_opts_t;

typedef struct ps_writer ps_writer_t;

void ps_writer_opts_default(ps_writer_opts_t *o);
ps_writer_t *ps_writer_start(ps_store_t *store, const ps_writer_opts_t *o);
/** Queues r. Returns PS_EUNAVAIL (not queued) when stopping or when the queue is full. */
int ps_writer_submit(ps_writer_t *w, ps_wreq_t *r);
/** Stops accepting, finishes everything queued (on_done is called for each), joins the thread. */
void ps_writer_stop(ps_writer_t *w);

typedef struct ps_writer_stats {
    uint64_t batches, appended, failed, duplicates, compactions, chunks, retention_runs, series_dropped;
    uint32_t queued;
} ps_writer_stats_t;
void ps_writer_stats(ps_writer_t *w, ps_writer_stats_t *st);

#endif
