/*
 * remote.h - decoding and validating Prometheus remote-write requests (docs/protocols.md): the snappy
 * block format around prometheus.WriteRequest (1.0) or io.prometheus.write.v2.Request (2.0), into
 * our own structs. The only user of the generated remote.proto structs; generated structs never
 * leave proto/. Nothing here stores anything: the caller (ingest) does.
 *
 * What is kept: every series with its labels (validated, as ps_labels_t), its float samples
 * (timestamp in ms, value; NaNs, the stale marker 0x7ff0000000000002 among them, keep their bit
 * pattern), and metadata (type, family name, help, unit). What is only counted: native histograms
 * and exemplars (nhistograms, nexemplars per series and per request); their contents are skipped.
 */
#ifndef PS_PROTO_REMOTE_H
#define PS_PROTO_REMOTE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"

/** The bit pattern of Prometheus' stale marker (a NaN). */
#define PS_REMOTE_STALE_NAN_BITS UINT64_C(0x7ff0000000000002)

typedef struct ps_remote_limits {
    size_t max_uncompressed; /* bytes announced by the snappy header; default 32 MiB */
    uint32_t max_series;     /* timeseries per request; default 1,000,000 */
    uint64_t max_samples;    /* float samples per request; default 10,000,000 */
    uint32_t max_metadata;   /* metadata entries per request; default 1,000,000 */
    uint32_t max_symbols;    /* 2.0 symbols table entries; default 10,000,000 */
} ps_remote_limits_t;

/** Fills l with the defaults above. */
void ps_remote_limits_default(ps_remote_limits_t *l);

/** Metric types: the numbers of prometheus.MetricMetadata.MetricType (2.0 uses the same). */
typedef enum ps_metric_type {
    PS_METRIC_UNKNOWN = 0, /* 2.0: METRIC_TYPE_UNSPECIFIED */
    PS_METRIC_COUNTER = 1,
    PS_METRIC_GAUGE = 2,
    PS_METRIC_HISTOGRAM = 3,
    PS_METRIC_GAUGEHISTOGRAM = 4,
    PS_METRIC_SUMMARY = 5,
    PS_METRIC_INFO = 6,
    PS_METRIC_STATESET = 7,
} ps_metric_type_t;

/** "unknown", "counter", "gauge", "histogram", "gaugehistogram", "summary", "info", "stateset"
 *  (Prometheus' /api/v1/metadata spelling); NULL out of range. */
const char *ps_metric_type_name(int type);

typedef struct ps_remote_sample {
    int64_t t_ms;
    double v;
} ps_remote_sample_t;

typedef struct ps_remote_metadata {
    ps_metric_type_t type;
    const char *family; /* metric family name; 2.0: the series' __name__ */
    const char *help;   /* "" when absent */
    const char *unit;   /* "" when absent */
    uint32_t family_len, help_len, unit_len;
} ps_remote_metadata_t;

typedef struct ps_remote_series {
    ps_labels_t labels;          /* sorted, valid, __name__ present and nonempty */
    ps_remote_sample_t *samples; /* in request order (not checked for time order here) */
    uint32_t nsamples;
    uint32_t nhistograms;        /* native histograms: counted, not decoded */
    uint32_t nexemplars;         /* counted, not decoded */
    int32_t meta;                /* 2.0: index into ps_remote_write_t.metadata, or -1 (always -1 in 1.0) */
    int64_t created_ms;          /* 2.0 start (created) time, 0 = not set: the first nonzero
                                    Sample.start_timestamp (rc.4, Prometheus 3.8+), else the
                                    TimeSeries.created_timestamp of earlier drafts. Not stored. */
} ps_remote_series_t;

typedef struct ps_remote_write {
    int version;                    /* 1 or 2 */
    ps_remote_series_t *series;
    uint32_t nseries;
    ps_remote_metadata_t *metadata; /* 1.0: WriteRequest.metadata; 2.0: one per series that has any */
    uint32_t nmetadata;
    uint64_t nsamples, nhistograms, nexemplars; /* totals over all series */
} ps_remote_write_t;

/**
 * Decodes a remote-write body (snappy block format; version 1 = prometheus.WriteRequest,
 * 2 = io.prometheus.write.v2.Request) into *out, everything allocated from arena; *out and its
 * strings (NUL-terminated) are valid as long as the arena.
 *
 * The uncompressed length the snappy header announces is checked against lim->max_uncompressed
 * before anything is allocated. Errors (PS_EINVAL, PS_ETOOBIG for the limits in lim, PS_EUNSUPPORTED
 * for a version other than 1 and 2) carry a message that says what and where, e.g.
 * "timeseries[3].labels[1]: label names not sorted: \"env\" after \"job\"". Validation, per series:
 * labels sorted by name with no duplicates; __name__ present and nonempty;
 * every name (metric names too) nonempty UTF-8 without NUL, as Prometheus 3 sends them (its default
 * UTF-8 validation: "service.name" is a name), of at most PS_LABEL_NAME_MAX bytes; values nonempty, valid
 * UTF-8 without NUL, at most PS_LABEL_VALUE_MAX bytes; at most PS_LABELS_MAX labels. 2.0 also:
 * symbols[0] == "", every ref in range, an even number of labels_refs, not both samples and
 * histograms. Metadata: type 0..7, strings valid UTF-8. A failure leaves *out empty; nothing is
 * decoded partially.
 */
int ps_remote_write_decode(const void *body, size_t n, int version, const ps_remote_limits_t *lim,
                           ps_arena_t *arena, ps_remote_write_t *out, ps_err_t *err);

/**
 * Encodes w as a remote-write body of the given version (1 or 2), snappy-compressed, appended to
 * out. Labels are written as given, unvalidated (so tests can build bad requests). 1.0 writes
 * w->metadata as WriteRequest.metadata; 2.0 writes each series' metadata (series.meta) inline and
 * builds the symbols table (symbols[0] == ""). Histogram and exemplar counts are not written.
 * For tests, benchmarks and the future forwarder.
 */
int ps_remote_write_encode(const ps_remote_write_t *w, int version, ps_buf_t *out, ps_err_t *err);

#endif
