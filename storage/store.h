/*
 * store.h - the profile store: one LMDB environment holding deduplicated symbols (strings,
 * mappings, functions, locations, sample label sets), one stack tree shared by all series,
 * series with their postings, head records and compacted chunks. See docs/FORMAT.md.
 *
 * Threads: exactly one thread writes, through the store's one ps_store_writer_t (ps_store_write[_batch],
 * ps_store_compact, ps_store_retain, ps_store_forward_advance); any number of threads read through ps_reader_t, each with its own LMDB read transaction, which
 * never waits for the writer. This module knows nothing of HTTP or protobuf.
 */
#ifndef PS_STORAGE_STORE_H
#define PS_STORAGE_STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "core/profile.h"

#define PS_SCHEMA_VERSION 15 /* 2: float series (issue 8); 3: open float chunks split into fhead tail +
                              * fprefix; 4: closed float chunks dense (06, 07); 5: span index, profile
                              * ids; 6: counts of frames without symbols (unsym); 7: profile chunks
                              * packed (encoding 8, zstd); 8: rollups; 9: chunks that refer to a
                              * twin (encoding 9); 10: the label index's times (ltimes); 11: padded
                              * float heads (fhead 0a); 12: the float sample log (flog); 13: series
                              * indexed late (info "seriesw"); 14: their postings late too; 15: the
                              * profile series' label times (ptimes); a version 1-14 directory is
                              * upgraded at open */

typedef struct ps_store ps_store_t;
/* The store's writer: what the writing thread keeps between transactions (caches, id counters). */
typedef struct ps_store_writer ps_store_writer_t;

typedef struct ps_store_opts {
    const char *dir;              /* data directory, created if missing */
    uint64_t map_size;            /* LMDB map size: the most the store may grow to (bytes) */
    int64_t retention_ns;         /* drop data older than this (0 = keep forever) */
    uint32_t compact_max_profiles;/* compact a series' head once it holds this many profiles */
    int64_t compact_window_ns;    /* ... or once its head spans this much time, or the series got no
                                   * profile for this long (wall clock); 0 = only by count */
    bool nosync;                  /* tests/benchmarks only: no fsync on commit (not durable) */
    uint64_t cache_bytes;         /* writer caches (symbols, stacks, series) are dropped past this (default 512 MiB) */
    uint32_t series_cache_max;    /* ... and the series caches (labels -> id, head state) past this many
                                   * series (default 65,536): a million series would keep ~300 B each */
    uint32_t series_pending_max;  /* new series wait for their series index entries until this many
                                   * (or the next compaction); 0: PS_SERIES_PENDING_MAX */
    uint64_t disk_reserve;        /* bytes kept in <dir>/space.reserve: given up when the disk is
                                   * full, so that retention and compaction (LMDB deletes need new
                                   * pages) can run; writes wait until it can be taken back. 0 = none */
    int64_t future_grace_ns;      /* profiles and samples more than this after now are refused (a
                                   * series would then refuse every present one as out of order);
                                   * 0 = any time (the default here; profstore's --storage.future-grace: 10m) */
    bool log_only;                /* --agent: writes store nothing but their forwarding log entries
                                   * (every profile and sample is taken as stored; write.c) */
    uint32_t adhoc_max_profiles;  /* ad hoc profiles kept (the oldest dropped past it); 0: PS_ADHOC_MAX_PROFILES */
    uint64_t adhoc_max_bytes;     /* ... and their bytes; 0: PS_ADHOC_MAX_BYTES */
    bool no_rollups;              /* benchmarks: compaction makes no rollups (merges then read profiles) */
    uint32_t rollup_min_profiles; /* a window (hour or day) gets a rollup only when it holds at least
                                   * this many profiles of its series (fewer are as cheap to read raw);
                                   * 0: PS_ROLLUP_MIN_PROFILES. Any value reads right (tests set it low) */
    uint32_t rollup_backfill_steps; /* the rollup backfill's steps (4 hours of a series) per compaction
                                   * run at most, besides its 20 ms; 0: 4096 (tests set it low) */
    int32_t float_log_pages;      /* the float sample log (flog): a write that would make it hold more
                                   * pages writes every logged series' head (a checkpoint); 0:
                                   * PS_FLOG_MAX_PAGES; -1: no log, every write rewrites the heads it
                                   * changed (as schema 11 did; tests of the head records) */
    bool read_only;               /* ps_store_check_dir: nothing written, not even a schema upgrade;
                                   * a store of another schema version or without its databases is refused */
} ps_store_opts_t;

/** The default of opts.series_pending_max: 65,536 new series' hash entries written sorted touch
 *  each leaf of a million series' index about once, where each written with its series cost one
 *  leaf (and its branch page) of its own. */
#define PS_SERIES_PENDING_MAX 65536

/** The default of opts.rollup_min_profiles: an hour gets a rollup when it holds a profile every
 *  ~2 minutes or more often (one every 5 minutes: 12 an hour, whose record would cost about as much
 *  as the profiles while their chunk is summed column by column in ~0.1 ms); a day then from 32. */
#define PS_ROLLUP_MIN_PROFILES 32

/** Says in err (PS_EINVAL) that ts (ns) is too far in the future for grace_ns:
 *  "timestamp 2100-01-01T00:00:00Z is 73 years in the future (more than --storage.future-grace=10m)". */
int ps_store_future_error(int64_t ts, int64_t now, int64_t grace_ns, ps_err_t *err);
/** Before a write transaction (and at start, to say so): PS_ENOSPACE (with the message the answer
 *  gives) when the pages in use reach opts.map_size, or the disk reserve was given up or could not
 *  be taken and cannot be taken back yet; else 0. */
int ps_store_space_check(ps_store_t *s, ps_err_t *err);
/** The disk reserve in force: opts.disk_reserve, at most 1/16 of the data directory's file system. */
uint64_t ps_store_disk_reserve(const ps_store_t *s);
/** The store's future_grace_ns. */
int64_t ps_store_future_grace(const ps_store_t *s);

void ps_store_opts_default(ps_store_opts_t *o);

/** Opens (creating if needed) the store. Refuses another schema version with PS_EVERSION, and a
 *  data.mdb that cannot be a whole store with PS_ECORRUPT and its sizes: shorter than its last
 *  page in use (a partial copy or restore), or empty beside the store's other files. */
int ps_store_open(const ps_store_opts_t *o, ps_store_t **out, ps_err_t *err);

/** What ps_store_check looked at. */
typedef struct ps_check_stats {
    uint64_t series, float_series, chunks, heads, profiles, samples;
    uint64_t damaged; /* records that do not decode (each reported) */
} ps_check_stats_t;

/**
 * Decodes every record as the reads would: each series record, each chunk and head record of the
 * profile series in full, each float series' samples. on_damage gets one message per damaged
 * record (series id, key, what is wrong) and the walk goes on. phase_buf (optional, 256 bytes) is
 * kept saying what is being read. Returns 0 (damage is in st), or an error that stopped the check.
 * Damage in LMDB's own pages may crash the process: see ps_store_check_dir.
 */
int ps_store_check(ps_store_t *s, void (*on_damage)(void *ctx, const char *msg), void *ctx, ps_check_stats_t *st,
                   char *phase_buf, ps_err_t *err);

/** --storage.check: opens the store read-only and runs ps_store_check in a child process, writing
 *  "damaged: ..." lines and a summary to out. A crash of the child (damage in LMDB's own pages)
 *  is reported as damage, with what it was reading. Returns 0 (no damage), 1 (damage, or the store
 *  refused as damaged), 2 (could not check). */
int ps_store_check_dir(const ps_store_opts_t *o, FILE *out);
/** Closes the environment. No reader or writer may be active. ps_store_close(NULL) is a no-op. */
void ps_store_close(ps_store_t *s);

/** The writer of s, for the one thread that writes: its counters are read from the committed
 *  store. PS_EINVAL if s is read-only or has a writer open already; closed before ps_store_close. */
int ps_store_writer_open(ps_store_t *s, ps_store_writer_t **out, ps_err_t *err);
/** ps_store_writer_close(NULL) is a no-op. */
void ps_store_writer_close(ps_store_writer_t *w);

/* ---- writing (one writer thread) ---- */

/** One profile to append: one series per selected sample type of the profile. */
typedef struct ps_append {
    /* in */
    const ps_profile_t *profile;
    uint32_t nseries;
    const ps_labels_t *series_labels; /* nseries normalised label sets, each with __name__ */
    const uint32_t *type_index;       /* nseries: which sample value feeds series i */
    int64_t ts;                       /* ns since epoch */
    int64_t duration;                 /* ns */
    int64_t period;
    /* out */
    int status;                       /* 0 or PS_E* for this profile alone */
    ps_err_t err;
    bool duplicate;                   /* identical profile already stored at ts: nothing written */
    uint64_t *series_ids;             /* nseries, filled on success (caller-provided array) */
    uint32_t *series_samples;         /* nseries: nonzero stacks stored per series (caller array) */
    /* in: the forwarding log entry of this profile (made above storage, see src/forward), logged in
     * the same transaction when the profile is stored (status 0, not a duplicate); 0 bytes: none */
    const uint8_t *fwd;
    size_t fwd_len;
    /* in, optional (not read by storage): the pprof body this profile was decoded from, as received
     * (gzipped or not), valid until the append is submitted; forwarding sends it as it is when the
     * stored time and duration are the body's own, instead of encoding the profile again */
    const uint8_t *raw;
    size_t raw_len;
    /* in, optional: the client's id of this profile (Pyroscope's RawSample.ID, 16 bytes; NULL:
     * none), stored with each of its series' (sid, ts) when the profile is stored (not for a
     * duplicate) */
    const uint8_t *uuid;
    /* in, optional (not read by storage): this profile's contributions to the recording rules
     * (made above storage, see src/rules), handed to the recorder (ps_store_set_recorder) */
    const uint8_t *rec;
    size_t rec_len;
} ps_append_t;

/**
 * Appends every item in one LMDB transaction, committed (and fsynced) before returning.
 * An item that fails (out of order, conflict, limits) fails alone: items[i]->status says.
 * A failure of the transaction itself (disk full, I/O) fails every item and is returned.
 * On return 0, every item with status 0 is durable.
 */
int ps_store_write_batch(ps_store_writer_t *w, ps_append_t **items, size_t n, ps_err_t *err);

/** One float sample. t is in milliseconds, like Prometheus' timestamps. */
typedef struct ps_float_sample {
    int64_t t;
    double v;
} ps_float_sample_t;

/** Float samples for one series (remote_write, synthetic scrape series). */
typedef struct ps_float_append {
    /* in */
    const ps_labels_t *labels;       /* normalised, with __name__ */
    const ps_float_sample_t *samples; /* in request order; NaNs keep their bits (stale markers) */
    uint32_t nsamples;
    bool counter;                    /* in: a counter of increments (recording rules): each sample's v is
                                      * added to the series' newest value (0 when none; NaN counts as 0)
                                      * and a t at or before the newest is moved to newest + 1 ms; the
                                      * samples are rewritten in place to what is stored (so samples must
                                      * be writable) */
    const uint8_t *key;              /* in, optional (NULL: none): labels ps_labels_encode'd, klen bytes, */
    uint32_t klen;                   /* and key_hash their ps_hash64(key, klen, 0), when the caller */
    uint64_t key_hash;               /* has them (the recorder): the append does not make them again */
    /* out: the per-series outcome, like Prometheus' TSDB appender */
    int status;                      /* 0, or PS_ECONFLICT (a profile series has these labels) or
                                      * PS_ECORRUPT (its stored head is damaged): nothing stored */
    ps_err_t err;
    uint64_t sid;                    /* 0 if the series was not created (nothing accepted) */
    uint32_t accepted;               /* samples stored */
    uint32_t duplicates;             /* same t, same value bits as stored: accepted, nothing written */
    uint32_t out_of_order;           /* older than the series' newest sample */
    uint32_t dup_conflicts;          /* same t as the newest sample, other value bits */
    uint32_t out_of_bounds;          /* older than now - retention, or t beyond +-9223372036854 ms */
    uint32_t too_new;                /* more than future_grace_ns after now */
    int64_t first_out_of_order, first_dup_conflict, first_out_of_bounds, first_too_new; /* ms, valid if counted */
    /* out, set by ps_store_write while forwarding is on (else NULL): nsamples bytes, 1 for each
     * sample stored (not an identical duplicate, not rejected); valid until the next write */
    const uint8_t *stored;
} ps_float_append_t;

/** Metric family metadata (remote_write): last write wins. */
typedef struct ps_metric_meta {
    const char *family; /* at most PS_META_FAMILY_MAX bytes, nonempty; others are skipped */
    size_t family_len;
    int type;           /* prometheus.MetricMetadata.MetricType: 0 unknown, 1 counter, ..., 7 stateset */
    const char *help;
    size_t help_len;
    const char *unit;
    size_t unit_len;
} ps_metric_meta_t;
#define PS_META_FAMILY_MAX 400

/**
 * Like ps_store_write_batch, and in the same transaction: float appends (per series, samples in
 * request order) and metadata. A float sample is rejected alone (counted in its ps_float_append_t);
 * a series fails alone (status). A failure of the transaction itself (PS_ENOSPACE, I/O) fails
 * every item, and is returned; then nothing of the call is stored.
 */
int ps_store_write(ps_store_writer_t *w, ps_append_t **profiles, size_t np, ps_float_append_t **floats, size_t nf,
                   const ps_metric_meta_t *meta, size_t nm, ps_err_t *err);

/**
 * Durability of ps_store_write. A commit syncs the pages it wrote, then writes the meta page that
 * points at them; every commit but those of ps_store_write with defer_sync on syncs that page
 * too before it returns (two syncs a commit). With defer_sync on, ps_store_write returns before
 * that second sync: its transaction, ps_store_writer_last_txn's answer then, is durable once
 * ps_store_sync(.., txn) returned 0, which syncs only if no later commit has synced it already
 * (the next commit's first sync covers the meta pages written before it). So a writer that
 * commits the next batch before it answers the last one pays one sync a commit under load.
 */
void ps_store_writer_defer_sync(ps_store_writer_t *w, bool on);
/** The newest write transaction that committed changes (0: none since the store was opened). */
uint64_t ps_store_writer_last_txn(const ps_store_writer_t *w);
/** Makes every commit up to txn durable: nothing when a sync since has done it, else an fdatasync
 *  of the data file (its failure: PS_ESTORAGE or PS_ENOSPACE, and txn's durability unknown).
 *  Unlike the rest of the writer's calls, it may run on another thread beside them. */
int ps_store_writer_sync(ps_store_writer_t *w, uint64_t txn, ps_err_t *err);

/** Compacts heads due by the thresholds (or all heads when force). *ncompacted gets the chunk count. */
int ps_store_compact(ps_store_writer_t *w, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err);
/** A float log checkpoint (docs/FORMAT.md "Float sample log"): writes the head of every series with
 *  samples in the log and empties it, in one transaction (none if the log is empty). The writer
 *  runs it when idle: reads then pay for no log. */
int ps_store_float_checkpoint(ps_store_writer_t *w, ps_err_t *err);
/** Whether this writer logged float samples since its last checkpoint (one may be due when idle). */
bool ps_store_float_log_pending(const ps_store_writer_t *w);
/** Compacts the heads that reached compact_max_profiles in the writes since the last call. */
int ps_store_compact_due(ps_store_writer_t *w, uint32_t *nchunks, ps_err_t *err);
/** Drops chunks and head records (float chunks and heads by their newest sample) older than
 *  now - retention, then series left empty. */
int ps_store_retain(ps_store_writer_t *w, int64_t now_ns, uint32_t *ndropped_series, ps_err_t *err);

typedef struct ps_store_stats {
    uint64_t series, head_records, chunks, nodes, strings, functions, locations, mappings;
    uint64_t float_heads, float_chunks, metadata; /* open float chunks, closed ones, metric families */
    uint64_t float_log_records; /* flog: write transactions whose samples wait for a checkpoint */
    uint64_t rollups, rollup_bytes; /* rollup records (an hour's or a day's profiles merged) and their pages' bytes */
    uint64_t file_bytes;  /* size of data.mdb */
    uint64_t used_bytes;  /* pages in use * page size */
} ps_store_stats_t;
/** Any thread: counts of what is committed, all from one read snapshot. */
int ps_store_stats(ps_store_t *s, ps_store_stats_t *st, ps_err_t *err);

/* ---- the forwarding log (src/forward; docs/FORMAT.md "Forwarding log") ----
 * Entries are opaque bytes made above storage, each written in the transaction of the data it
 * forwards, under an increasing sequence number (1, 2, ...), with the wall clock of the write. Each
 * forwarding endpoint has a cursor: the last sequence number it acknowledged. */

/** Makes the entry of a write's float samples and metadata inside its transaction: the samples of
 *  items whose stored[j] is 1 (status 0 items only) and the write's nm metadata, appended to out;
 *  nothing appended = no entry. */
typedef void (*ps_store_forward_floats_fn)(void *ctx, ps_float_append_t *const *items, size_t n,
                                           const ps_metric_meta_t *meta, size_t nm, ps_buf_t *out);
/** Turns the logging of float samples on (fn != NULL) or off. Any thread; the next write sees it.
 *  (Profiles are logged when their ps_append_t carries an entry.) */
void ps_store_set_forward(ps_store_t *s, ps_store_forward_floats_fn fn, void *ctx);

typedef struct ps_forward_log_entry {
    uint64_t seq;
    int64_t wall_ns;       /* when it was written */
    const uint8_t *data;   /* valid during the callback only */
    size_t len;
} ps_forward_log_entry_t;

/** Any thread: calls cb for the entries with seq > after, oldest first, at most max_n of them and
 *  no more than max_bytes of data (but always the first), from one read snapshot. *last (optional)
 *  gets the newest sequence number ever written (0: none), *oldest_wall (optional) the wall clock of
 *  the first entry after `after` (0: none). cb returning nonzero stops the walk with that value. */
int ps_store_forward_read(ps_store_t *s, uint64_t after, size_t max_n, size_t max_bytes,
                          int (*cb)(void *ctx, const ps_forward_log_entry_t *e), void *ctx, uint64_t *last,
                          ps_err_t *err);
/** Any thread: a byte bound on the entries after `after` (an endpoint's backlog). Walks from the
 *  newest entry back, summing the entries' data bytes; *cut gets the newest sequence number that
 *  no longer fits in max_bytes (the entries after..*cut are over the bound, oldest first), or
 *  `after` when all fit. The walk stops at `after` or past max_bytes: it costs the entries that
 *  fit, not the backlog. */
int ps_store_forward_bound(ps_store_t *s, uint64_t after, uint64_t max_bytes, uint64_t *cut, ps_err_t *err);
/** Any thread: the cursor of endpoint name, or PS_ENOTFOUND. */
int ps_store_forward_cursor(ps_store_t *s, const char *name, uint64_t *seq, ps_err_t *err);
/**
 * Writer thread: in one transaction, sets the cursors of the n endpoints (names[i] -> seqs[i]),
 * deletes every other cursor (an endpoint no longer configured), and deletes the entries every
 * cursor is past (seq <= the smallest; with n == 0 all of them), at most 100,000 a call (the rest
 * go with the next). *trimmed (optional) gets how many were deleted.
 */
int ps_store_forward_advance(ps_store_writer_t *w, const char *const *names, const uint64_t *seqs, size_t n, uint64_t *trimmed,
                             ps_err_t *err);

/* ---- recording (src/rules; docs/FORMAT.md "Recording rules") ----
 * Float samples made from the profiles of a write, in its transaction. */

/** Called by ps_store_write inside its transaction, after the profiles and before the float
 *  samples, with the write's profiles (each with its status: record only those with status 0 that
 *  are not duplicates). It may return float appends (*out, *nout; memory of the recorder, valid
 *  until its next call), written in the same transaction as the write's own (after them), with
 *  their outcome set. Not called in log-only mode (--agent). */
typedef void (*ps_store_record_fn)(void *ctx, ps_append_t *const *items, size_t n, ps_float_append_t ***out,
                                   size_t *nout);
/** Sets the recorder (fn NULL: none). Before the writer starts. */
void ps_store_set_recorder(ps_store_t *s, ps_store_record_fn fn, void *ctx);

/* ---- symbols when read (src/symbols) ---- */

/** Called by ps_reader_materialize on the profile it made (memory from its arena): may give
 *  locations without lines their lines, adding functions and strings. */
typedef void (*ps_store_symbolize_fn)(void *ctx, ps_profile_t *p, ps_arena_t *arena);
/** Sets the symbolizer of every read (fn NULL: none). Before any reader. */
void ps_store_set_symbolizer(ps_store_t *s, ps_store_symbolize_fn fn, void *ctx);

#define PS_RULE_ID_MAX 64            /* bytes of a stored rule's id */
#define PS_RULE_VALUE_MAX 65536      /* bytes of a stored rule's value */

/** A stored recording rule: an id and opaque bytes (src/rules' encoding), with its generation. */
typedef struct ps_store_rule {
    const char *id;    /* not NUL-terminated when read */
    size_t idlen;
    const void *value;
    size_t vlen;
    int64_t generation;
} ps_store_rule_t;

/** Any thread: calls cb for every stored rule, by id (bytewise), from one read snapshot; the bytes
 *  are valid during the call only. cb returning nonzero stops with that value. */
int ps_store_rules(ps_store_t *s, int (*cb)(void *ctx, const ps_store_rule_t *r), void *ctx, ps_err_t *err);
/**
 * Writer thread, one transaction. Upsert (del false): a rule not stored is created with
 * generation 1 (PS_ELIMIT when max rules are stored already); a stored one is replaced with its
 * generation + 1 if r->generation (the one the caller saw) equals it, else PS_ECONFLICT. Delete:
 * PS_ENOTFOUND when not stored. *gen gets the generation written.
 */
int ps_store_rule_put(ps_store_writer_t *w, const ps_store_rule_t *r, bool del, uint32_t max, int64_t *gen,
                      ps_err_t *err);

/* ---- settings (settings.c; docs/FORMAT.md "Settings") ----
 * A small table of named string values with the time each was last modified (what Grafana's
 * settings.v1.SettingsService keeps). */

#define PS_SETTING_NAME_MAX 256    /* bytes */
#define PS_SETTING_VALUE_MAX 65536 /* bytes */

typedef struct ps_store_setting {
    const char *name;  /* not NUL-terminated when read */
    size_t nlen;
    const char *value;
    size_t vlen;
    int64_t modified_ms;
} ps_store_setting_t;

/** Any thread: calls cb for every setting, by name (bytewise), from one read snapshot; the
 *  setting's bytes are valid during the call only. cb returning nonzero stops with that value. */
int ps_store_settings(ps_store_t *s, int (*cb)(void *ctx, const ps_store_setting_t *st), void *ctx, ps_err_t *err);
/** Writer thread: stores st (del: deletes the setting named st->name; none stored is no error) in
 *  one transaction. PS_ECONFLICT when the stored one was modified after st->modified_ms; PS_EINVAL
 *  for a name that is empty, longer than PS_SETTING_NAME_MAX or holds a NUL, or a value longer
 *  than PS_SETTING_VALUE_MAX. */
int ps_store_setting_put(ps_store_writer_t *w, const ps_store_setting_t *st, bool del, ps_err_t *err);

/* ---- ad hoc profiles (adhoc.c; docs/FORMAT.md "Ad hoc profiles") ----
 * Profile files uploaded by hand to be shared (adhocprofiles.v1), kept as uploaded under an id
 * that starts with a ULID, so the ids' byte order is their upload order. At most
 * opts.adhoc_max_profiles of them and opts.adhoc_max_bytes of files: an upload past either drops
 * the oldest ones, in its own transaction. No time retention. */

#define PS_ADHOC_ID_MAX 256                 /* bytes of an id */
#define PS_ADHOC_MAX_PROFILES 1000          /* the defaults of the two limits */
#define PS_ADHOC_MAX_BYTES ((uint64_t)256 << 20)

typedef struct ps_store_adhoc {
    const char *id;       /* not NUL-terminated when read */
    size_t idlen;
    int64_t uploaded_ms;
    const void *data;     /* the file; NULL in a listing */
    size_t len;
} ps_store_adhoc_t;

/** Any thread: the ad hoc profile id (copied into arena: out->data, out->id). PS_ENOTFOUND
 *  when none has that id. */
int ps_store_adhoc_get(ps_store_t *s, const char *id, size_t idlen, ps_arena_t *arena, ps_store_adhoc_t *out,
                       ps_err_t *err);
/** Any thread: cb for each ad hoc profile, oldest first, from one read snapshot (id and len set,
 *  data NULL; valid during the call only). cb returning nonzero stops with that value. */
int ps_store_adhoc_list(ps_store_t *s, int (*cb)(void *ctx, const ps_store_adhoc_t *a), void *ctx, ps_err_t *err);
/** Writer thread: stores a (an id of 1..PS_ADHOC_ID_MAX bytes, not stored yet) in one transaction,
 *  first dropping the oldest profiles while the count or the bytes would pass the limits
 *  (*dropped, optional, gets how many). PS_ETOOBIG when a alone is larger than the byte limit,
 *  PS_ECONFLICT when the id is taken, PS_EINVAL for a bad id. */
int ps_store_adhoc_put(ps_store_writer_t *w, const ps_store_adhoc_t *a, uint32_t *dropped, ps_err_t *err);

/* ---- reading (any thread) ---- */

typedef struct ps_reader ps_reader_t;

/** Starts a read snapshot. Everything read through it is valid until ps_reader_end. Its reads of
 *  profiles and samples are clamped to what retention keeps: nothing older than now - retention
 *  (at this call) is seen, though retention drops whole chunks only (ps_store_retain). */
int ps_reader_begin(ps_store_t *s, ps_reader_t **out, ps_err_t *err);
/** Lifts r's retention clamp: r sees everything still stored (the debug views). */
void ps_reader_unclamp(ps_reader_t *r);
/** Whether r's merges (ps_reader_sum) read the rollups of whole hours and days (the default) or
 *  the raw profiles only: the answers are the same (docs/FORMAT.md "Rollups"). */
void ps_reader_rollups(ps_reader_t *r, bool use);
void ps_reader_end(ps_reader_t *r);

/*
 * Errors: every reader function returns 0 or a negative PS_E code with detail in err (optional);
 * PS_ESTORAGE or PS_ECORRUPT for an LMDB error or damaged bytes, met wherever in a walk: what a
 * callback saw until then is not the whole answer. PS_ENOTFOUND (where documented) is an answer,
 * not an error, and leaves err untouched. The walks call cb for each entry; cb returning nonzero
 * stops the walk with that value (err untouched).
 */
/** Calls cb for every series (ascending id). */
int ps_reader_series_foreach(ps_reader_t *r, int (*cb)(void *ctx, uint64_t sid, const ps_labels_t *ls), void *ctx,
                             ps_err_t *err);
/** Labels of one series (copied into arena). PS_ENOTFOUND if it does not exist. */
int ps_reader_series_labels(ps_reader_t *r, uint64_t sid, ps_arena_t *arena, ps_labels_t *out, ps_err_t *err);
/** The series id for exactly these (normalised) labels, or PS_ENOTFOUND. */
int ps_reader_series_lookup(ps_reader_t *r, const ps_labels_t *ls, uint64_t *sid, ps_err_t *err);
/** Calls cb for every series id in the postings list of name=value (ascending). */
int ps_reader_postings(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                       int (*cb)(void *ctx, uint64_t sid), void *ctx, ps_err_t *err);
/** How many series ids the postings list of name=value holds (0 when there is none), in O(log n). */
int ps_reader_postings_count(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                             size_t *count, ps_err_t *err);
/** Keeps of ids[0..*n) (any order) those in the postings list of name=value, in their order: one
 *  look-up each, for a few ids against a long list. */
int ps_reader_postings_filter(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                              uint64_t *ids, size_t *n, ps_err_t *err);
/** Calls cb(value) for every value of label name (ascending, bytewise). */
int ps_reader_label_values(ps_reader_t *r, const char *name, size_t nlen,
                           int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err);
/** ps_reader_label_values of the values with a series that pred takes: pred(sid) for each series
 *  of a value in turn until it answers > 0 (then cb(value)), 0 (the next series) or < 0 (an error,
 *  returned); every value when pred is NULL. One walk of the postings, no set: what the label index
 *  answers for a time range. */
int ps_reader_label_values_where(ps_reader_t *r, const char *name, size_t nlen, int (*pred)(void *ctx, uint64_t sid),
                                 int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err);
/** ps_reader_label_values_where(r, name, nlen, pred, ...) for a time range: the values with a
 *  series that has data in [start, end] (pred: ps_reader_has_data over that range, the caller's),
 *  each decided by its first and last time in the label index's times where they tell (no data
 *  there, or data at a time inside it), by pred on its series in turn where not. The same answer,
 *  in the same order. */
int ps_reader_label_values_in(ps_reader_t *r, const char *name, size_t nlen, int64_t start, int64_t end,
                              int (*pred)(void *ctx, uint64_t sid), int (*cb)(void *ctx, const char *v, size_t vlen),
                              void *ctx, ps_err_t *err);
/** The label names with a value that ps_reader_label_values_in lists, to cb (ascending). */
int ps_reader_label_names_in(ps_reader_t *r, int64_t start, int64_t end, int (*pred)(void *ctx, uint64_t sid),
                             int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx, ps_err_t *err);
/** ps_reader_label_values_in and ps_reader_label_names_in over the times of profile series only
 *  (schema 15): a value is listed when one of its profile series has data in [start, end]. The
 *  times decide most values; pred takes the others' series in turn (any kind: pred must take
 *  profile series only, with data in the range) up to the first it takes. */
int ps_reader_profile_label_values_in(ps_reader_t *r, const char *name, size_t nlen, int64_t start, int64_t end,
                                      int (*pred)(void *ctx, uint64_t sid),
                                      int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err);
int ps_reader_profile_label_names_in(ps_reader_t *r, int64_t start, int64_t end, int (*pred)(void *ctx, uint64_t sid),
                                     int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx, ps_err_t *err);
/** The same over the profile series of one profile type (their __name__ is type): pred must take
 *  only series of that type. PS_EUNSUPPORTED when the times cannot tell type from another (two types of
 *  one hash, docs/FORMAT.md): then the caller selects the series. */
int ps_reader_type_label_values_in(ps_reader_t *r, const char *type, const char *name, size_t nlen, int64_t start,
                                   int64_t end, int (*pred)(void *ctx, uint64_t sid),
                                   int (*cb)(void *ctx, const char *v, size_t vlen), void *ctx, ps_err_t *err);
int ps_reader_type_label_names_in(ps_reader_t *r, const char *type, int64_t start, int64_t end,
                                  int (*pred)(void *ctx, uint64_t sid), int (*cb)(void *ctx, const char *n, size_t nlen),
                                  void *ctx, ps_err_t *err);
/** Calls cb(name) for every label name (ascending). */
int ps_reader_label_names(ps_reader_t *r, int (*cb)(void *ctx, const char *n, size_t nlen), void *ctx,
                          ps_err_t *err);

/** One stored profile of a series: a sparse vector stack node -> value. */
typedef struct ps_stored_profile {
    int64_t ts, duration, period, total;
    uint32_t n;
    const uint64_t *nodes; /* ascending */
    const int64_t *values;
} ps_stored_profile_t;

/**
 * Calls cb for each profile of series sid with start <= ts <= end, oldest first, from chunks and
 * head alike. If meta_only, nodes/values are empty (totals come from the chunk totals column).
 * Arrays passed to cb are valid only during the call.
 */
int ps_reader_profiles(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, bool meta_only,
                       int (*cb)(void *ctx, const ps_stored_profile_t *p), void *ctx, ps_err_t *err);

/** What ps_reader_sum saw: how many profiles, their earliest time, summed durations, max period. */
typedef struct ps_sum_info {
    uint64_t profiles;
    int64_t min_ts, max_ts;
    int64_t duration;
    int64_t period;
    int64_t total;
} ps_sum_info_t;

/**
 * Adds up, node by node, every profile of series sid with start <= ts <= end: on_node is called
 * for each (node, value) of each contributing chunk or head record (a node may be reported more
 * than once; the caller sums). info (optional) accumulates across calls: zero it first.
 * Chunks are summed column by column without materialising their profiles; a whole hour or day
 * of the range with a rollup is read as that one merged record (the same sums and info: see
 * docs/FORMAT.md "Rollups"), so on_node may see fewer, larger values, in another order.
 */
int ps_reader_sum(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end,
                  void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info,
                  ps_err_t *err);

/** Timestamp of the newest profile of sid with start <= ts <= end, or PS_ENOTFOUND. A damaged
 *  chunk or an LMDB error is an error with detail in err, as in ps_reader_profiles. */
int ps_reader_latest(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, int64_t *ts, ps_err_t *err);

/** What a read of a profile series' range would touch, from the chunk headers and keys alone. */
typedef struct ps_footprint {
    uint64_t chunks;         /* compacted chunks overlapping the range (read whole) */
    uint64_t chunk_profiles; /* the profiles those chunks hold (some may be outside the range) */
    uint64_t chunk_bytes;    /* their stored bytes */
    uint64_t head_profiles;  /* head records in the range */
    uint64_t head_bytes;     /* their stored bytes */
} ps_footprint_t;

/** Adds to f (zero it first) what reading the profiles of series sid with start <= ts <= end (ns)
 *  would touch, without decoding any profile; a float series adds nothing. */
int ps_reader_footprint(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_footprint_t *f, ps_err_t *err);

/** 1 if sid has any profile with start <= ts <= end (cheap: two seeks), 0 if not, or an error. */
int ps_reader_has_data(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err);

/**
 * Builds a self-contained ps_profile_t (strings, mappings, functions, locations, samples with
 * their sample labels) from n stack nodes with nvalues values each (values[i*nvalues + k]).
 * sample_types are given as (type, unit) C string pairs; period_type likewise.
 * Everything is allocated from arena. Nodes that carry a sample label set give their samples
 * those labels (see docs/FORMAT.md "stack tree").
 */
int ps_reader_materialize(ps_reader_t *r, const uint64_t *nodes, const int64_t *values, size_t n, uint32_t nvalues,
                          const char *const *sample_types, const char *const *period_type, ps_arena_t *arena,
                          ps_profile_t *out, ps_err_t *err);

/* ---- span index and client profile ids (spans.c; docs/FORMAT.md "Span index") ----
 * A sample's span is its first pprof label named span_id or profile_id (pyroscope-go's older otel
 * integration) whose value is 16 hex digits, not all zero (Pyroscope's rule); each append indexes
 * (span, series, ts) for every span with a nonzero sample value in that series. */

/** Parses a span id: exactly 16 hex digits (either case), not all zero, into *span (the 8 bytes
 *  big-endian). */
bool ps_span_parse(const char *s, size_t n, uint64_t *span);

/** One part of a profile's span parts (docs/FORMAT.md "Span parts"): the value of the samples of
 *  span whose stack (without their span_id/profile_id and trace_id labels) ends at node. The
 *  profile's own record holds each sample's value at that node too: the span parts are the share of
 *  it that was labelled with the span. */
typedef struct ps_span_part {
    uint64_t span, node;
    int64_t value;
    const char *trace;  /* the span's trace_id label as pushed (trace_len bytes; 0: none) */
    uint32_t trace_len;
    uint8_t flags;      /* PS_SPAN_F_*: how the span label was written */
} ps_span_part_t;
#define PS_SPAN_F_PROFILE_ID 1 /* the label was profile_id (else span_id) */
#define PS_SPAN_F_UPPER 2      /* its hex digits were upper case (else lower case) */

/** Decodes a span parts record (parts from arena, in record order: by span, then node). PS_ECORRUPT
 *  naming the byte offset if it is damaged. */
int ps_span_parts_decode(const void *data, size_t len, ps_arena_t *arena, ps_span_part_t **parts, size_t *n,
                         ps_err_t *err);
/** The span parts of profile (sid, ts) (none: *n = 0), as ps_span_parts_decode. */
int ps_reader_span_parts(ps_reader_t *r, uint64_t sid, int64_t ts, ps_arena_t *arena, ps_span_part_t **parts,
                         size_t *n, ps_err_t *err);

/** Calls cb(sid, ts) for each profile holding samples of span with start <= ts <= end (ns; clamped
 *  to the reader's retention), by hour, then series, then time: one seek per hour of the range
 *  that holds any span record (empty hours are skipped by the seeks themselves), plus one. */
int ps_reader_span_profiles(ps_reader_t *r, uint64_t span, int64_t start, int64_t end,
                            int (*cb)(void *ctx, uint64_t sid, int64_t ts), void *ctx, ps_err_t *err);

/** Any thread: the profiles (one per series of the push) that uuid names: how many (0: none), the
 *  first max of them in sid[], ts[] (by hour, then sid, then ts); or a negative PS_E code. One seek
 *  per hour holding any id, plus one. Ids are not kept the other way: a profile's id in an answer
 *  is the one derived from (sid, ts). */
int ps_store_profile_by_uuid(ps_store_t *s, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max,
                             ps_err_t *err);
/** ps_store_profile_by_uuid in the reader's snapshot. */
int ps_reader_profiles_by_uuid(ps_reader_t *r, const uint8_t uuid[16], uint64_t *sid, int64_t *ts, size_t max,
                               ps_err_t *err);

/* ---- samples: float series (Prometheus) and profile totals, as one kind of answer ---- */

/** What a series holds: profiles (pprof) or float samples (remote_write, synthetic scrape series). */
typedef enum { PS_SERIES_PROFILE = 1, PS_SERIES_FLOAT = 2 } ps_series_kind_t;

/** The kind of series sid; PS_ENOTFOUND if it does not exist. */
int ps_reader_series_kind(ps_reader_t *r, uint64_t sid, ps_series_kind_t *kind, ps_err_t *err);

/**
 * Calls cb with the samples of series sid with mint <= t <= maxt (ms), oldest first, in batches
 * (valid only during the call): a float series' stored samples (stale markers and other NaNs keep
 * their bit pattern), or a profile series' totals, one per profile, at t = floor(ts / 1e6).
 */
int ps_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                      int (*cb)(void *ctx, const ps_float_sample_t *s, size_t n), void *ctx, ps_err_t *err);

/**
 * Calls cb with each stored chunk of float series sid that overlaps [mint, maxt] (ms), oldest
 * first, as Prometheus XOR chunk bytes (storage/xorchunk.h) exactly as stored: whole chunks, which
 * may hold samples outside the range; the open (head) chunk included. min_t/max_t are the chunk's
 * first and last sample times. A profile series has no XOR chunks: cb is never called. The bytes
 * are valid during the call only (the head's are put together from two records).
 */
int ps_reader_xor_chunks(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                         int (*cb)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n),
                         void *ctx, ps_err_t *err);

/**
 * Calls cb for the stored metadata of every metric family (ascending), or only of metric (exact
 * name) when metric is not NULL. Strings are valid only during the call (not NUL-terminated).
 */
int ps_reader_metadata(ps_reader_t *r, const char *metric, size_t mlen,
                       int (*cb)(void *ctx, const ps_metric_meta_t *m), void *ctx, ps_err_t *err);

/* ---- frames stored without symbols (unsym.c; docs/FORMAT.md "Frames without symbols") ----
 * Counted when a profile is stored, in its write transaction, per hour (of the profile's time) and
 * build id: a location without lines whose mapping has a build id is a frame without symbols; a
 * sample counts once per build id among its frames when a stored sample type gives it a nonzero
 * value. Retention drops whole hours (those ended before its cutoff). */

#define PS_UNSYM_FILES_MAX 8  /* file names kept per hour and build id (the first met) */
#define PS_UNSYM_TYPES_MAX 16 /* profile types summed per hour and build id (the first met) */

typedef struct ps_store_unsym {
    uint32_t hour;            /* hours since the epoch's key origin (ps_ts_key(ts) / 3600 s) */
    ps_str_t build_id;        /* as the mappings gave it */
    uint64_t profiles;        /* profiles with such frames stored in the hour */
    uint64_t samples;         /* their samples with a frame of this build id without symbols */
    int64_t first_ts, last_ts; /* ns: the oldest and the newest of those profiles */
    uint32_t nfiles;
    ps_str_t files[PS_UNSYM_FILES_MAX]; /* the mappings' file names ("" for none) */
    uint32_t ntypes;
    ps_str_t types[PS_UNSYM_TYPES_MAX]; /* profile type ids (the series' __name__) */
    int64_t totals[PS_UNSYM_TYPES_MAX]; /* the sum of those samples' values of each type */
} ps_store_unsym_t;

/** Any thread: cb for each (hour, build id) record of the hours holding [start, end] (ns; clamped
 *  to r's retention), by hour then build id string id; strings valid until ps_reader_end. */
int ps_reader_unsym(ps_reader_t *r, int64_t start, int64_t end, int (*cb)(void *ctx, const ps_store_unsym_t *u),
                    void *ctx, ps_err_t *err);

#endif
