/*
 * ingest.h - the ingest pipeline: how a profile gets from the wire into the store.
 *
 *  1. Preparing (any thread, ingest.c): a pushed (or scraped) pprof body plus its parameters
 *     becomes a store append: refuse bodies that are not pprof by their shape (multipart, text),
 *     decode and validate, infer the profile name (or check the given one against the sample
 *     types), build one series per sample type with its profile type id as __name__, pick the
 *     timestamp.
 *  2. Writing (writer.c): the writer thread is the only thread that writes to the store. Requests
 *     from the HTTP threads and the scraper are queued; the writer takes everything queued,
 *     applies it in one transaction (group commit) and hands the batch to the syncer thread,
 *     which calls each request's on_done once that transaction is durable: a sync of its own
 *     beside the writer's next batch, or that batch's commit (whose page sync covers the meta
 *     page of the last) when a sync would take longer than the rest of it. A batch alone
 *     (nothing queued or being decoded, the syncer idle) the writer syncs and answers itself. Between batches the
 *     writer compacts heads and applies retention.
 */
#ifndef PS_INGEST_H
#define PS_INGEST_H

#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/thread.h"
#include "parser/stacks.h"
#include "proto/otlp.h"
#include "proto/pprof.h"
#include "proto/pyroscope.h"
#include "proto/remote.h"
#include "storage/store.h"

typedef struct ps_writer ps_writer_t;
typedef struct ps_otlp_export ps_otlp_export_t;

typedef struct ps_ingest_params {
    const char *name;   /* profile name ("process_cpu"); NULL = infer from sample types */
    size_t name_len;
    const char *labels; /* {job="api",...}; NULL = none */
    size_t labels_len;
    const char *time;   /* ps_parse_time (RFC3339, unix s or ms, now-5m); NULL = the profile's time_nanos, else now */
    size_t time_len;
    int delta;          /* -1 = by profile name (process_cpu, wall), 0 = no, 1 = yes */
    const char *content_type; /* the request's Content-Type; NULL = none */
    size_t content_type_len;
} ps_ingest_params_t;

/** Builds app (everything allocated from arena) from a pprof body. */
int ps_ingest_prepare(const void *body, size_t n, const ps_ingest_params_t *params, const ps_pprof_limits_t *lim,
                      ps_arena_t *arena, ps_append_t *app, ps_err_t *err);

enum { PS_INGEST_SKIP = 0, PS_INGEST_ASIS = 1, PS_INGEST_DELTA = 2 };

/**
 * Builds app for an already decoded profile: one series per sample type whose mode is not SKIP,
 * named name:type:unit:period_type:period_unit (+ ":delta" for mode DELTA). modes (one per
 * sample type) may be NULL: then every type is stored, with ":delta" when delta is true.
 * base: normalised labels without __name__. Everything from arena.
 */
int ps_ingest_build(const ps_profile_t *p, const char *name, size_t name_len, const ps_labels_t *base, int64_t ts,
                    const uint8_t *modes, bool delta, ps_arena_t *arena, ps_append_t *app, ps_err_t *err);

/** The native push's delta rule for a profile named name (len bytes): process_cpu and wall are
 *  delta, every other name cumulative. */
bool ps_ingest_default_delta(const char *name, size_t len);
/** True for the sample types that count since process start (alloc_objects, alloc_space,
 *  contentions, delay): the scraper stores their deltas (":delta"), a push with __delta__="false"
 *  names them so too. */
bool ps_ingest_cumulative_type(ps_str_t type);

/** Infers the profile name from the sample types, or explains why it cannot (PS_EINVAL). The
 *  rule is at the top of ingest.c. */
int ps_ingest_infer_name(const ps_profile_t *p, const char **name, ps_err_t *err);
/** PS_EINVAL when a well-known name contradicts the profile's sample types (the rule is at the
 *  top of ingest.c), with a message naming the kind inferred; else 0. */
int ps_ingest_check_name(const ps_profile_t *p, const char *name, size_t name_len, ps_err_t *err);
/** PS_EINVAL, saying what to send instead, when a body is not a pprof profile by its shape: a
 *  multipart/form-data body (by content_type, which may be NULL, or a body starting with "--")
 *  or text (the first bytes are printable). 0 otherwise (the decoder has the last word). */
int ps_ingest_check_body(const void *body, size_t n, const char *content_type, size_t ct_len, ps_err_t *err);

/** Writes the success JSON for a durable append:
 *  {"status":"success","data":{"timestamp":..., "samples":N, "duplicate":false, "series":[...]}} */
void ps_ingest_result_json(const ps_append_t *app, ps_buf_t *out);

/* ---- Pyroscope's Connect push (push.c) ---- */

/**
 * Validates a decoded push.v1.PushRequest (labels by Pyroscope's rules, each raw sample decoded
 * and checked like a native push; the rules are at the top of push.c) and builds one append per
 * raw sample into *apps (napps of them, from arena, sorted by timestamp). All or nothing: the
 * first bad series or sample fails it all, PS_EINVAL with "series[i]: ..." or
 * "series[i].samples[j]: ..." in front of the message. The samples are decoded on the caller's
 * thread and on the helpers par lends (NULL: the caller alone); the answer is the same either way.
 */
int ps_ingest_push_prepare(const ps_pyro_push_t *req, const ps_pprof_limits_t *lim, const ps_par_t *par,
                           ps_arena_t *arena, ps_append_t ***apps, size_t *napps, ps_err_t *err);

/* ---- OTLP profiles (otlp.c) ---- */

/** One append of an OTLP export: the profile of one service of one OTLP profile. */
typedef struct ps_otlp_app {
    ps_append_t *app;
    uint32_t src;      /* the OTLP profile it came from, in request order */
    const char *where; /* "resource_profiles[i].scope_profiles[j].profiles[k]" */
} ps_otlp_app_t;

/** What a request became: the appends to store, and the OTLP profiles refused with the first
 *  reason (partial_success). */
typedef struct ps_otlp_result {
    ps_otlp_app_t *apps; /* sorted by timestamp */
    size_t napps, apps_cap;
    size_t nprofiles;    /* OTLP profiles in the request */
    uint8_t *counted;    /* per OTLP profile: already counted as rejected */
    int64_t rejected;    /* OTLP profiles refused */
    char msg[480];       /* the first refusal: "resource_profiles[0].scope_profiles[0].profiles[1]: ..." */
} ps_otlp_result_t;

/**
 * Converts a decoded export (rules at the top of otlp.c) into appends, everything from arena. A
 * request that cannot be read as a whole (dictionary index out of range, a table past a pprof
 * limit, more than lim->max_samples samples) is PS_EINVAL or PS_ETOOBIG with the field and index;
 * a bad profile is only refused (res->rejected, res->msg) and the others converted.
 */
int ps_ingest_otlp_prepare(const ps_otlp_request_t *r, const ps_pprof_limits_t *lim, ps_arena_t *arena,
                           ps_otlp_result_t *res, ps_err_t *err);
/** ps_otlp_decode (codec PS_OTLP_PROTO or PS_OTLP_JSON, budget bytes) then ps_ingest_otlp_prepare. */
int ps_ingest_otlp_decode(int codec, const void *body, size_t n, size_t budget, const ps_pprof_limits_t *lim,
                          ps_arena_t *arena, ps_otlp_result_t *res, ps_err_t *err);
/** Counts the OTLP profile of res->apps[i] as refused by the store (e's message), once. */
void ps_ingest_otlp_refused(ps_otlp_result_t *res, size_t i, const ps_err_t *e);
/** Counts one more refused OTLP profile; the first one's reason is "<where>: <e's message>". */
void ps_otlp_result_reject(ps_otlp_result_t *res, const ps_err_t *e, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/**
 * The answer of an export, called once: code 0 and resp (an ExportProfilesServiceResponse in the
 * request's codec, partial_success set when a profile was refused), or a PS_E code and msg (the
 * transport's error: PS_EINVAL bad data, PS_ETOOBIG past a limit, PS_EOVERLOAD the write queue is
 * full, PS_EUNAVAIL shutting down, PS_ENOSPACE disk full). res: what was converted (counts).
 * Everything is valid only during the call.
 */
typedef void (*ps_otlp_done_fn)(void *ctx, int code, const uint8_t *resp, size_t resp_len, const char *msg,
                                const ps_otlp_result_t *res);
/**
 * An OTLP profiles export from any transport (OTLP/HTTP here, gRPC beside it): decodes body (n
 * bytes, already inflated; at most budget bytes decoded), converts, hands every append to writer,
 * and calls done once every one is durable or refused: from the writer thread, or from the
 * caller's thread before returning when nothing was written. arena must live until done.
 */
void ps_ingest_otlp(ps_writer_t *writer, int codec, const void *body, size_t n, size_t budget,
                    const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_otlp_done_fn done, void *ctx);
/** ps_ingest_otlp for a transport that waits for the answer on its own thread (the gRPC listener):
 *  returns 0 with the ExportProfilesServiceResponse appended to resp, or the PS_E code with err,
 *  once every append is durable or refused. */
int ps_ingest_otlp_wait(ps_writer_t *writer, int codec, const void *body, size_t n, const ps_pprof_limits_t *lim,
                        ps_buf_t *resp, ps_err_t *err);
/**
 * The decoding budget of an export of n bytes (inflated) under max_inflated (0: 64 MiB): OTLP's
 * tables are small messages; a sample of 7 bytes on the wire takes ~115 as protobuf-c structs
 * (16x), so 32x the body, at most max_inflated, plus 1 MiB (10^6 samples, the pprof limit, fit in
 * a body of 8 MB). Every transport uses it.
 */
static inline size_t ps_ingest_otlp_budget(size_t n, size_t max_inflated)
{
    size_t max = max_inflated ? max_inflated : ((size_t)64 << 20);
    return (n < max / 32 ? n * 32 : max) + ((size_t)1 << 20);
}

/* ---- the writer thread (writer.c) ---- */

typedef enum {
    PS_WREQ_APPEND,
    PS_WREQ_COMPACT,
    PS_WREQ_RETAIN,
    PS_WREQ_SAMPLES,
    PS_WREQ_FWD_ADVANCE,
    PS_WREQ_SETTING,
    PS_WREQ_ADHOC,
    PS_WREQ_RULE
} ps_wreq_kind_t;

typedef struct ps_wreq ps_wreq_t;
struct ps_wreq {
    ps_wreq_kind_t kind;
    ps_append_t app;             /* PS_WREQ_APPEND: in and out */
    ps_float_append_t **floats;  /* PS_WREQ_SAMPLES: float series (in and out), in the same
                                  * transaction as the profiles of the batch */
    size_t nfloats;
    uint64_t nsamples;           /* PS_WREQ_SAMPLES: the samples of floats (set by ps_writer_submit) */
    uint64_t bytes;              /* memory the request holds while queued (its arena: decoded profile,
                                  * samples), for max_queue_bytes; 0 = not counted */
    const ps_metric_meta_t *meta;/* PS_WREQ_SAMPLES: metric metadata to store */
    size_t nmeta;
    int status;                  /* result for COMPACT/RETAIN */
    ps_err_t err;
    uint32_t count;              /* chunks written / series dropped */
    void (*on_done)(ps_wreq_t *r); /* called once durable (or failed): on the syncer thread for a
                                    * stored append or samples request (on the writer's for a batch
                                    * alone), else on the writer thread */
    int64_t commit_delay_ns;     /* > 0: this request tolerates that much group-commit delay (scrapes:
                                  * nobody waits on them), whatever the writer's commit_delay; 0: the
                                  * writer's commit_delay */
    void *ctx;
    /* PS_WREQ_FWD_ADVANCE: ps_store_forward_advance's cursors (count gets the entries trimmed) */
    const char *const *fwd_names;
    const uint64_t *fwd_seqs;
    size_t nfwd;
    ps_store_setting_t setting;  /* PS_WREQ_SETTING: ps_store_setting_put's (status, err) */
    bool setting_del;
    ps_store_adhoc_t adhoc;      /* PS_WREQ_ADHOC: ps_store_adhoc_put's (status, err; count: dropped) */
    ps_buf_t fwd;                /* PS_WREQ_APPEND: its forwarding log entry (ps_writer_opts_t.fwd_entry),
                                  * made by ps_writer_submit, freed by the writer before on_done */
    ps_buf_t rec;                /* PS_WREQ_APPEND: its recording rules' contributions
                                  * (ps_writer_opts_t.rec_entry), made and freed likewise */
    /* PS_WREQ_RULE: ps_store_rule_put's (status, err; rule_gen gets the generation written) */
    ps_store_rule_t rule;
    bool rule_del;
    int64_t rule_gen;
    void (*rule_after)(void *ctx); /* PS_WREQ_RULE: called on the writer thread after a change is
                                    * committed, before on_done (the rule set's reload) */
    void *rule_after_ctx;
    ps_wreq_t *next;
};

typedef struct ps_writer_opts {
    uint32_t max_batch;          /* profiles per transaction (default 512); a PS_WREQ_SAMPLES request
                                  * counts as 1 + its samples / PS_WRITER_SAMPLES_PER_UNIT */
    uint32_t max_queue;          /* queued requests before submit refuses (default 8192); a
                                  * PS_WREQ_SAMPLES request is also refused when the queue would
                                  * then weigh more than this many units (max_batch's units) */
    uint64_t max_queue_bytes;    /* ... or when the queue would then hold more bytes (ps_wreq_t.bytes)
                                  * than this (default PS_WRITER_QUEUE_BYTES); one request is always
                                  * taken when nothing is queued. Refused: PS_EOVERLOAD */
    int64_t commit_delay_ns;     /* > 0: hold a commit until this long after the last one, unless a
                                  * batch is full (default 0: what is queued commits at once, and
                                  * what arrives during a commit shares the next: group commit) */
    uint32_t eager_samples;      /* ... or the samples requests queued hold this many samples
                                  * (PS_WRITER_EAGER_SAMPLES; 0 = always wait) */
    int64_t decode_wait_ns;      /* while writes are being decoded (ps_writer_decoding), a batch
                                  * waits for them at most this long before it commits (default
                                  * PS_WRITER_DECODE_WAIT_NS; 0: never). Nothing decoding: no wait */
    int64_t compact_interval_ns; /* how often to look for heads due (default 10 s) */
    int64_t retention_interval_ns; /* how often to apply retention (default 1 min) */
    /* forwarding (src/forward, handed over by main.c; NULL: none): fwd_entry makes the forwarding
     * log entry of an append on the submitting thread (a decode or scrape thread, so the writer
     * only copies bytes; nothing appended: not forwarded); fwd_logged is called on the syncer
     * thread (or the writer's) once a commit that may have logged entries is durable */
    void (*fwd_entry)(void *ctx, const ps_append_t *app, ps_buf_t *out);
    void (*fwd_logged)(void *ctx);
    void *fwd_ctx;
    /* recording rules (src/rules, handed over by main.c; NULL: none): rec_entry makes an append's
     * contributions on the submitting thread, as fwd_entry does its entry */
    void (*rec_entry)(void *ctx, const ps_append_t *app, ps_buf_t *out);
    void *rec_ctx;
    uint32_t max_rules;          /* PS_WREQ_RULE: the most rules stored (0: no limit) */
    /* called on the syncer thread (on the writer's, for a batch it answers itself: alone)
     * before (true) and after (false) it answers the committed batches it took (their requests' on_done, one after another): the web server sends their completions to each
     * loop at once (ps_server_answers). NULL: none */
    void (*answers)(bool begin);
    /* tests: called on the writer thread after each batch, its appends handed to the syncer (a
     * test holds the writer there to queue requests "while a commit runs") */
    void (*committed)(void *ctx);
    void *committed_ctx;
} ps_writer_opts_t;

/** How many float samples weigh as much as one profile in a batch (max_batch): 512 units of
 *  remote-write requests of 2,000 samples are ~250 requests, 512k samples, in one transaction. */
#define PS_WRITER_SAMPLES_PER_UNIT 1024
/** The default of ps_writer_opts_t.eager_samples: with a commit_delay > 0, queued remote-write
 *  requests holding this many samples are committed without waiting for it. An fsync costs about
 *  as much as writing 1,000 samples, so it is shared well enough already, and a sender with few
 *  requests in flight (Prometheus' shards) would only wait. */
#define PS_WRITER_EAGER_SAMPLES 1000

/** The default of ps_writer_opts_t.decode_wait_ns: about a decode of a 2,000-sample remote-write
 *  request or a pushed profile on a busy machine; a commit (its fsync) takes longer. */
#define PS_WRITER_DECODE_WAIT_NS (2 * 1000 * 1000)

/** The default of ps_writer_opts_t.max_queue_bytes (--storage.write-queue-max-bytes): 256 MiB of
 *  decoded requests wait for the writer at most. */
#define PS_WRITER_QUEUE_BYTES (256ull << 20)

void ps_writer_opts_default(ps_writer_opts_t *o);
/** Starts the thread that writes to store, with the store's writer (ps_store_writer_open); NULL
 *  with err if that cannot be opened. */
ps_writer_t *ps_writer_start(ps_store_t *store, const ps_writer_opts_t *o, ps_err_t *err);
/** Queues r. Returns (not queued) PS_EUNAVAIL when stopping, PS_EOVERLOAD when the queue is full
 *  (max_queue items or units, max_queue_bytes): answer 429 (503 to remote write) with Retry-After. */
int ps_writer_submit(ps_writer_t *w, ps_wreq_t *r);
/** A write's body starts being decoded (delta +1; its requests follow by ps_writer_submit), or it
 *  ended (-1: submitted, or failed). The writer waits for them (decode_wait_ns) rather than commit
 *  a short batch while they decode. w NULL: nothing. Any thread. */
void ps_writer_decoding(ps_writer_t *w, int delta);
/** On the thread that decodes a write counted by ps_writer_decoding (w; NULL: none): its next
 *  ps_writer_submit on this thread ends the count as it queues the request. */
void ps_writer_decode_begin(ps_writer_t *w);
/** The end of that decoding: ends the count if no submit did (w's ps_writer_decoding -1). */
void ps_writer_decode_end(void);
/** Stops accepting, finishes everything queued (on_done is called for each), joins the thread.
 *  w stays valid: a submit from a handler that raced with the shutdown is refused ("server is
 *  shutting down"), never a use after free. Idempotent. */
void ps_writer_shutdown(ps_writer_t *w);
/** ps_writer_shutdown, then frees w: once nothing can submit any more (the loops have ended). */
void ps_writer_stop(ps_writer_t *w);

#define PS_WRITER_TXN_BUCKETS 12
typedef struct ps_writer_stats {
    uint64_t batches, appended, failed, duplicates, compactions, chunks, retention_runs, series_dropped;
    uint64_t samples_written, samples_rejected; /* float samples of PS_WREQ_SAMPLES requests */
    uint32_t queued;
    uint64_t queued_bytes;       /* ps_wreq_t.bytes of what is queued */
    uint64_t refused_queue_full; /* requests refused by ps_writer_submit: the queue was full */
    uint64_t refused_disk_full;  /* requests failed with PS_ENOSPACE (disk or --storage.max-size full) */
    bool disk_full;              /* the last write transaction failed with PS_ENOSPACE */
    /* write transactions by duration (building, commit and fsync): counts per bucket of
     * ps_writer_txn_le (not cumulative; the last one is +Inf), and their sum */
    uint64_t txn_buckets[PS_WRITER_TXN_BUCKETS + 1];
    uint64_t txn_sum_ns;
    uint64_t decode_waits;       /* batches that waited for writes being decoded (decode_wait_ns) */
    uint64_t sync_rounds;        /* the syncer's rounds: each synced and answered the batches it took at once */
} ps_writer_stats_t;
/** The upper bounds (seconds) of the transaction-duration buckets, as Prometheus' le labels. */
extern const char *const ps_writer_txn_le[PS_WRITER_TXN_BUCKETS];
void ps_writer_stats(ps_writer_t *w, ps_writer_stats_t *st);

/* ---- remote_write (remote.c) ---- */

/**
 * Makes r a PS_WREQ_SAMPLES request from a decoded remote-write request (everything from arena,
 * which must live until on_done): one float append per series with samples, and its metadata.
 * Series that carry only histograms or exemplars get no append (they are counted by the decoder).
 */
void ps_ingest_remote_prepare(const ps_remote_write_t *w, ps_arena_t *arena, ps_wreq_t *r);

/** What happened to the samples of a done PS_WREQ_SAMPLES request. */
typedef struct ps_remote_result {
    uint64_t written;      /* samples stored */
    uint64_t duplicates;   /* identical to what was stored: accepted, not written again */
    uint64_t out_of_order, dup_conflicts, out_of_bounds, too_new; /* rejected samples (too_new: past
                                                                     * --storage.future-grace) */
    uint64_t series_failed;  /* series refused whole (a profile series with these labels) */
    uint64_t samples_failed; /* their samples */
} ps_remote_result_t;

/**
 * Sums up a done request. Returns 0 if every sample was stored (or was an identical duplicate);
 * else the code to answer with (PS_EINVAL, 400: the sender must not retry; or the transaction's
 * own failure, e.g. PS_ENOSPACE) and msg gets the message, Mimir's style: what was rejected,
 * counts, and the first rejected series with its labels and timestamp.
 */
int ps_ingest_remote_result(const ps_wreq_t *r, ps_remote_result_t *res, ps_buf_t *msg);


/* ---- Pyroscope's POST /ingest (pyroscope.c, multipart.c) ---- */

#define PS_MP_MAX_PARTS 64     /* parts in a multipart body */
#define PS_MP_MAX_HEADER 8192  /* bytes of headers per part */

/** One part of a multipart/form-data body. Strings come from the parse's arena; data points into
 *  the body (valid as long as the body). */
typedef struct ps_mp_part {
    const char *name, *filename, *content_type; /* filename, content_type: NULL when absent */
    size_t name_len, filename_len, ct_len;
    const uint8_t *data;
    size_t len;
} ps_mp_part_t;

/** The boundary of a "multipart/form-data; boundary=..." Content-Type (quoted or not, 1..70 RFC 2046
 *  characters). PS_EINVAL naming what is wrong. */
int ps_mp_boundary(const char *ct, size_t n, ps_arena_t *arena, const char **boundary, size_t *blen, ps_err_t *err);
/** Splits a multipart/form-data body into its parts (rules and limits at the top of multipart.c):
 *  PS_EINVAL for a malformed or truncated body, PS_ETOOBIG past PS_MP_MAX_PARTS parts or
 *  PS_MP_MAX_HEADER header bytes in a part. */
int ps_mp_parse(const void *body, size_t n, const char *boundary, size_t blen, ps_arena_t *arena, ps_mp_part_t **parts,
                uint32_t *nparts, ps_err_t *err);
/** The first part named name, or NULL. */
const ps_mp_part_t *ps_mp_find(const ps_mp_part_t *parts, uint32_t n, const char *name);

/** The body formats of /ingest (its format parameter and Content-Type). */
typedef enum {
    PS_PYRO_PPROF,     /* format=pprof: the body is the pprof (or a multipart upload holding it) */
    PS_PYRO_MULTIPART, /* no format, multipart/form-data: a "profile" part (pyroscope-go, nodejs 0.4) */
    PS_PYRO_FOLDED,    /* no format (Pyroscope's "groups"): "a;b;c 12" lines */
    PS_PYRO_LINES,     /* format=lines: "a;b;c" lines, each one sample */
} ps_pyro_format_t;

/** The query parameters of /ingest as received (percent-decoded; NULL = absent). */
typedef struct ps_pyro_params {
    const char *name, *from, *until, *sample_rate, *spy_name, *units, *aggregation, *format;
    size_t name_len, from_len, until_len, sample_rate_len, spy_name_len, units_len, aggregation_len, format_len;
    const char *content_type; /* the request's Content-Type; NULL = none */
    size_t content_type_len;
} ps_pyro_params_t;

/** The metadata of an /ingest request, checked (ps_pyro_meta_parse). */
typedef struct ps_pyro_meta {
    ps_pyro_format_t format;
    ps_labels_t labels;       /* service_name, pyroscope_spy, the tags; normalised, without __name__ */
    const char *service;      /* service_name */
    size_t service_len;
    int64_t from, until;      /* ns */
    uint32_t sample_rate;     /* Hz (default 100) */
    /* folded and lines formats: the type the name's suffix gives */
    const char *profile_name; /* process_cpu, wall, memory, ... */
    const char *sample_type, *sample_unit;
    bool scale;               /* cpu/wall: values are samples, stored as ns (1e9 / sample_rate each) */
    const char *boundary;     /* PS_PYRO_MULTIPART: the boundary of the Content-Type */
    size_t boundary_len;
} ps_pyro_meta_t;

/**
 * Checks the parameters of an /ingest request as Pyroscope reads them (the rules are at the top of
 * pyroscope.c): the name with its tags, from/until (ps_attime_parse, default now_ns), sampleRate,
 * spyName, units, aggregationType, format, and the multipart boundary of the Content-Type. PS_EINVAL (answer 400) with a message that names the
 * parameter; PS_EUNSUPPORTED (415) for the formats profstore does not take (trie, tree, jfr,
 * speedscope). Everything from arena.
 */
int ps_pyro_meta_parse(const ps_pyro_params_t *in, int64_t now_ns, ps_arena_t *arena, ps_pyro_meta_t *m,
                       ps_err_t *err);

/**
 * Builds app from an /ingest body with checked metadata m: the pprof (raw, or the "profile" part of
 * a multipart body, with its sample_type_config), or folded/lines text. PS_EINVAL (answer 422) for
 * a body that cannot be ingested, PS_ETOOBIG (413) past a limit. Everything from arena.
 */
int ps_pyro_prepare(const void *body, size_t n, const ps_pyro_meta_t *m, const ps_pprof_limits_t *lim,
                    ps_arena_t *arena, ps_append_t *app, ps_err_t *err);

/** The profile of a folded (lines = false: "a;b;c 12") or lines (lines = true: "a;b;c", one each) body
 *  with m's type, time and scale: parser/folded.c's (one sample type, one function and location per
 *  distinct frame name) under lim. */
int ps_pyro_folded(const void *body, size_t n, bool lines, const ps_pyro_meta_t *m, const ps_pprof_limits_t *lim,
                   ps_arena_t *arena, ps_profile_t *p, ps_err_t *err);

/** The profile name Pyroscope gives a pprof upload (wall, process_cpu, memory, mutex, block,
 *  goroutine), from its sample types renamed by the display-names of stc (a sample_type_config JSON
 *  document, NULL = none). PS_EINVAL when stc is not a JSON object of objects. */
int ps_pyro_pprof_name(const ps_profile_t *p, const void *stc, size_t stc_len, ps_arena_t *arena, const char **name,
                       ps_err_t *err);

/* ---- ad hoc profiles: files uploaded by hand to be shared (adhoc.c; docs/api.md "Ad hoc profiles") ---- */

/** What an upload was read as. */
typedef enum { PS_ADHOC_PPROF, PS_ADHOC_FOLDED, PS_ADHOC_JSON, PS_ADHOC_PERF } ps_adhoc_format_t;

/** Frames of all the stacks of a text upload together at most (64 MiB of location indexes). */
#define PS_ADHOC_MAX_FRAMES (16u << 20)

/** The limits of parser/stacks.h for an upload decoded under lim (PS_ADHOC_MAX_FRAMES; jansson's
 *  memory: 4 x lim->max_inflated). */
void ps_adhoc_stacks_limits(const ps_pprof_limits_t *lim, ps_stacks_limits_t *out);

/**
 * Decodes an uploaded file into *p, its format detected from its bytes (as Pyroscope's ad hoc
 * converter does without a file name): gzip (1f 8b) is inflated first (at most lim->max_inflated
 * bytes: a gzip bomb is "gzip: ..."); then a control byte (not tab, CR, LF) among the first 512
 * -> pprof; '{' first (after blanks) -> Pyroscope's flamebearer JSON (meta, which may be NULL,
 * gets its metadata); a first line that is a `perf script` event header -> perf script (one
 * sample type "samples", unit "count", 1 per event); else folded stacks ("a;b;c 12" lines, the
 * same type). PS_EINVAL/PS_ETOOBIG with the format in front ("pprof: sample[3]: ...",
 * "flamebearer JSON: flamebearer.levels[2][4]: ...", "perf script: line 7: ...", "folded stacks:
 * line 2: ..."); lim bounds everything. Everything from arena.
 */
int ps_adhoc_decode(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                    ps_adhoc_format_t *fmt, ps_fbjson_meta_t *meta, ps_err_t *err);

/** The profile types of p (its sample types' names, in order: profile_types), from arena. */
const char **ps_adhoc_types(const ps_profile_t *p, ps_arena_t *arena);

/** The index of sample type name in p (NULL or "": 0), or -1. */
int ps_adhoc_type_index(const ps_profile_t *p, const char *name);

/** The name as an id keeps it (Pyroscope's rule): every code point outside [A-Za-z0-9._-] becomes
 *  '_'. PS_EINVAL past PS_ADHOC_NAME_MAX bytes of the result. */
#define PS_ADHOC_NAME_MAX 200
int ps_adhoc_name(const char *name, size_t n, ps_arena_t *arena, const char **out, ps_err_t *err);

/** A new id: a ULID of now_ms (10 characters of time, 16 random, Crockford base32), '-', name. */
const char *ps_adhoc_id(int64_t now_ms, const char *name, ps_arena_t *arena);

/** Whether id is one Get can look up: 1..PS_ADHOC_ID_MAX characters of [A-Za-z0-9._-]. */
bool ps_adhoc_id_valid(const char *id);

/** One profile of two sample types (values[0] = left's type li, values[1] = right's type ri), the
 *  shape ps_flamegraph_build's diff and the top table of a diff read. Everything from arena. */
void ps_adhoc_pair(const ps_profile_t *l, uint32_t li, const ps_profile_t *r, uint32_t ri, ps_arena_t *arena,
                   ps_profile_t *out);
/** A pair made one profile of one value, right - left, in place (a diff's top table, folded, pprof);
 *  *left_total gets the left side's sum of |value| (the top table's denominator). */
void ps_adhoc_pair_sub(ps_profile_t *pair, int64_t *left_total);
/** p with sample type vi alone (a view: samples re-pointed, the rest shared), from arena. */
void ps_adhoc_select(const ps_profile_t *p, uint32_t vi, ps_arena_t *arena, ps_profile_t *out);

#endif
