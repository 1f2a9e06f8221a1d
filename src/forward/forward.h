/*
 * forward.h - forwarding: every profile and float sample this server stores is sent on to the
 * endpoints of the configuration's `forward:` section (Pyroscope's Connect push, Prometheus'
 * remote write), at least once, in order per series, after it is durable here.
 *
 * The queue is the store's forwarding log (storage/store.h): each stored write carries its entry,
 * made here (ps_forward_entry on the submitting thread for a profile, ps_forward_floats_entry in
 * the writer's transaction for float samples, both handed down by main.c so that storage and
 * ingest know nothing of this room). One sender thread per endpoint reads the log from its cursor,
 * batches, POSTs, retries with backoff, and moves its cursor on; the cursors go back to the store
 * through the writer (PS_WREQ_FWD_ADVANCE), which also trims what every endpoint has sent. The
 * rules (batches, retries, drops, max_lag, max_bytes) are at the top of forward.c.
 */
#ifndef PS_FORWARD_FORWARD_H
#define PS_FORWARD_FORWARD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config/config.h"
#include "core/mem.h"
#include "ingest/ingest.h"
#include "storage/store.h"

typedef struct ps_forward ps_forward_t;

/** Creates the forwarder (no endpoint yet: nothing is logged). Start the writer with
 *  ps_forward_writer_hooks first, then give it the writer with ps_forward_attach. */
ps_forward_t *ps_forward_new(ps_store_t *store);
/** Fills the writer's fwd_entry / fwd_logged / fwd_ctx. */
void ps_forward_writer_hooks(ps_forward_t *f, ps_writer_opts_t *wo);
/** The writer that stores the cursors (before ps_forward_apply). */
void ps_forward_attach(ps_forward_t *f, ps_writer_t *w);
/** (Re)configures the endpoints from cfg (a reference is kept): senders of the previous
 *  configuration stop (their unacknowledged batch is sent again: at least once), a sender per
 *  endpoint starts at its stored cursor, or at the log's end for a new endpoint; cursors of
 *  endpoints no longer configured are dropped. cfg may be NULL (no endpoint). Main thread. */
void ps_forward_apply(ps_forward_t *f, ps_config_t *cfg);
/** Stops the senders and stores their cursors (through the writer, which must still run). */
void ps_forward_shutdown(ps_forward_t *f);
/** Frees f, after the writer has stopped. NULL is a no-op. */
void ps_forward_free(ps_forward_t *f);

/** Appends the /metrics text of every endpoint (profstore_forward_*). Any thread. */
void ps_forward_metrics(ps_forward_t *f, ps_buf_t *out);
/** Appends the JSON array of /api/v1/status/forward's data. Any thread. */
void ps_forward_status_json(ps_forward_t *f, ps_buf_t *out);

/* ---- entries (entry.c) ---- */

/** The log entry of a profile append: kind 1 (kind 3 with the client's id first, when the append has
 *  one: app->uuid), its labels (those of its first series, __name__ the
 *  profile name, service_name = job when absent) and the stored profile as gzipped pprof
 *  (time_nanos = the stored timestamp). Nothing appended for an append without series. */
void ps_forward_profile_entry(const ps_append_t *app, ps_buf_t *out);
/** The log entry of a write's stored float samples (ps_float_append_t.stored) and its metric metadata
 *  (remote write's, as received: Prometheus sends them again every minute): kind 2, per series its
 *  labels and samples, then the metadata. Nothing appended when no sample was stored and there is
 *  no metadata. */
void ps_forward_floats_entry(ps_float_append_t *const *items, size_t n, const ps_metric_meta_t *meta, size_t nm,
                             ps_buf_t *out);

/** One decoded entry's series (a profile entry has one with one pprof). From arena. */
typedef struct ps_forward_series {
    ps_labels_t labels;
    const uint8_t *pprof;   /* kind 1: gzipped pprof */
    size_t pprof_len;
    bool has_uuid;          /* kind 1: the client's id of the profile (RawSample.ID), from a kind 3 entry */
    uint8_t uuid[16];
    ps_float_sample_t *samples; /* kind 2 */
    uint32_t nsamples;
} ps_forward_series_t;

/** Decodes an entry: *kind 1 (for kind 3 too, has_uuid set) or 2, its series (from arena; pprof points into data) and, when meta
 *  is not NULL, a kind 2 entry's metadata (strings point into data; not NUL-terminated). PS_ECORRUPT
 *  for bytes this code did not write. */
int ps_forward_entry_decode(const uint8_t *data, size_t len, ps_arena_t *arena, int *kind,
                            ps_forward_series_t **series, size_t *nseries, ps_metric_meta_t **meta, size_t *nmeta,
                            ps_err_t *err);

#endif
