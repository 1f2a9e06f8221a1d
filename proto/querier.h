/*
 * querier.h - the querier.v1.QuerierService messages (proto/pyroscope_querier.proto,
 * docs/protocols.md) as our own C types: each request decoded from a Connect body (binary protobuf or
 * protojson, ps_pb_codec_t), each answer encoded in the request's codec. Generated protobuf-c
 * structs stay inside proto/querier.c.
 *
 * Decoded strings and arrays come from the caller's arena; decoding counts its allocations against
 * a budget (PS_ETOOBIG past it) and fails with PS_EINVAL and a message that names the message and
 * says where ("querier.v1.SelectSeriesRequest: protobuf: ...", "...: json: line 1 column 9: ...").
 */
#ifndef PS_PROTO_QUERIER_H
#define PS_PROTO_QUERIER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/json.h"
#include "core/labels.h"
#include "core/mem.h"

/** The codec of a Connect body: 0 binary protobuf, 1 protojson (ps_pb_codec_t's values). */
enum { PS_QR_BINARY = 0, PS_QR_JSON = 1 };

/* ---- requests ---- */

/** ProfileTypesRequest, and the range of LabelNames/LabelValues/Series. Times in ms. */
typedef struct ps_qr_labels_req {
    const char *name;          /* LabelValues: the label; else NULL */
    uint32_t nmatchers;
    const char **matchers;     /* selectors */
    uint32_t nlabel_names;     /* Series: names to keep */
    const char **label_names;
    int64_t start, end;
} ps_qr_labels_req_t;

enum { PS_QR_FORMAT_FLAMEGRAPH = 1, PS_QR_FORMAT_TREE = 2, PS_QR_FORMAT_DOT = 3, PS_QR_FORMAT_PPROF = 4 };

/** SelectMergeStacktracesRequest, SelectMergeProfileRequest, a side of DiffRequest. */
typedef struct ps_qr_merge_req {
    const char *type_id;        /* profile_typeID ("" when absent) */
    const char *label_selector;
    int64_t start, end;         /* ms */
    bool has_max_nodes;
    int64_t max_nodes;
    int format;                 /* PS_QR_FORMAT_*; UNSPECIFIED (0) reads as FLAMEGRAPH */
    bool has_stack_trace_selector; /* a call site or go_pgo was sent */
    uint32_t ncall_site;        /* stack_trace_selector.call_site: function names, root first */
    const char **call_site;
    bool has_go_pgo;            /* stack_trace_selector.go_pgo was sent */
    uint32_t nprofile_ids;      /* profile_id_selector entries */
    const char **profile_ids;
    uint32_t nspan_ids;         /* span_selector entries (SelectMergeStacktraces, SelectMergeSpanProfile) */
    const char **span_ids;      /* nspan_ids strings */
    uint32_t ntrace_ids;        /* trace_id_selector entries (SelectMergeStacktraces, SelectMergeProfile) */
    bool async;                 /* async sent with a type other than DISABLED (SelectMergeStacktraces) */
} ps_qr_merge_req_t;

/** SelectSeriesRequest. */
typedef struct ps_qr_series_req {
    const char *type_id;
    const char *label_selector;
    int64_t start, end;         /* ms */
    uint32_t ngroup_by;
    const char **group_by;
    double step;                /* seconds */
    bool average;               /* aggregation AVERAGE (absent or SUM: false) */
    int aggregation;            /* the enum's number as sent (0 SUM, 1 AVERAGE, other: unknown) */
    bool has_limit;
    int64_t limit;
    bool has_stack_trace_selector; /* a call site or go_pgo was sent */
    uint32_t ncall_site;        /* stack_trace_selector.call_site: function names, root first */
    const char **call_site;
    bool has_go_pgo;            /* stack_trace_selector.go_pgo was sent */
    int exemplar_type;          /* types.v1.ExemplarType as sent (0 UNSPECIFIED, 1 NONE, 2 INDIVIDUAL, 3 SPAN) */
} ps_qr_series_req_t;

/** ProfileTypesRequest (start, end) into r (the rest zero). */
int ps_qr_decode_profile_types(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_labels_req_t *r, ps_err_t *err);
/** types.v1.LabelNamesRequest. */
int ps_qr_decode_label_names(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                             ps_qr_labels_req_t *r, ps_err_t *err);
/** types.v1.LabelValuesRequest. */
int ps_qr_decode_label_values(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                              ps_qr_labels_req_t *r, ps_err_t *err);
/** SeriesRequest. */
int ps_qr_decode_series(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                        ps_qr_labels_req_t *r, ps_err_t *err);
/** SelectMergeStacktracesRequest. */
int ps_qr_decode_merge_stacktraces(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                                   ps_qr_merge_req_t *r, ps_err_t *err);
/** SelectMergeProfileRequest (format reads as PPROF). */
int ps_qr_decode_merge_profile(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_merge_req_t *r, ps_err_t *err);
/** SelectMergeSpanProfileRequest (its fields in a merge request; format as sent, 0 reads as FLAMEGRAPH). */
int ps_qr_decode_merge_span(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                            ps_qr_merge_req_t *r, ps_err_t *err);
/** DiffRequest: its two sides (an absent side reads as an empty request). */
int ps_qr_decode_diff(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_qr_merge_req_t *left,
                      ps_qr_merge_req_t *right, ps_err_t *err);
/** SelectSeriesRequest. */
int ps_qr_decode_select_series(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                               ps_qr_series_req_t *r, ps_err_t *err);

/** types.v1.GetProfileStatsRequest (no fields: only checks that the body is one). */
int ps_qr_decode_profile_stats(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err);

/** SelectHeatmapRequest. query_type and exemplar_type are the enums' numbers as sent. */
enum { PS_QR_HEATMAP_INDIVIDUAL = 1, PS_QR_HEATMAP_SPAN = 2 };
enum { PS_QR_EXEMPLAR_NONE = 1, PS_QR_EXEMPLAR_INDIVIDUAL = 2, PS_QR_EXEMPLAR_SPAN = 3 };
typedef struct ps_qr_heatmap_req {
    const char *type_id;
    const char *label_selector;
    int64_t start, end;         /* ms */
    double step;                /* seconds */
    uint32_t ngroup_by;
    const char **group_by;
    int query_type;             /* PS_QR_HEATMAP_* (0: unspecified) */
    int exemplar_type;          /* PS_QR_EXEMPLAR_* (0: unspecified) */
    bool has_limit;
    int64_t limit;
} ps_qr_heatmap_req_t;

/** AnalyzeQueryRequest. */
typedef struct ps_qr_analyze_req {
    int64_t start, end;         /* ms */
    const char *query;          /* "" when absent */
} ps_qr_analyze_req_t;

/** SelectHeatmapRequest. */
int ps_qr_decode_heatmap(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                         ps_qr_heatmap_req_t *r, ps_err_t *err);
/** AnalyzeQueryRequest. */
int ps_qr_decode_analyze(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                         ps_qr_analyze_req_t *r, ps_err_t *err);

/* ---- answers (appended to out in codec) ---- */

/** types.v1.GetProfileStatsResponse: data_ingested, oldest/newest_profile_time (ms). */
void ps_qr_encode_profile_stats(int codec, bool ingested, int64_t oldest_ms, int64_t newest_ms, ps_buf_t *out);

/** ProfileTypesResponse: one types.v1.ProfileType per id (ID verbatim, the other fields its
 *  parts: name, sample_type, sample_unit, period_type, period_unit). ids that are not profile
 *  type ids are skipped. */
void ps_qr_encode_profile_types(int codec, const char *const *ids, uint32_t n, ps_arena_t *arena, ps_buf_t *out);
/** LabelNamesResponse / LabelValuesResponse (the same message shape: names). */
void ps_qr_encode_names(int codec, const char *const *names, uint32_t n, ps_arena_t *arena, ps_buf_t *out);
/** The same answer written as the names come (begin, add each in order, end): no list kept. */
typedef struct ps_qr_names_enc {
    int codec;
    ps_buf_t *out;
    ps_json_t j;
    uint32_t n; /* names added */
} ps_qr_names_enc_t;
void ps_qr_names_begin(ps_qr_names_enc_t *e, int codec, ps_buf_t *out);
void ps_qr_names_add(ps_qr_names_enc_t *e, const char *s, size_t n);
void ps_qr_names_end(ps_qr_names_enc_t *e);
/** SeriesResponse: labels_set (field 2). */
void ps_qr_encode_series(int codec, const ps_labels_t *sets, uint32_t n, ps_arena_t *arena, ps_buf_t *out);

/** One flame graph (render's ps_flamegraph_t, field for field). */
typedef struct ps_qr_flamegraph {
    uint32_t nnames;
    const char **names;
    uint32_t nlevels;
    const uint32_t *level_n;    /* values per level */
    int64_t *const *levels;     /* level i: level_n[i] int64s */
    int64_t total, max_self;
    int64_t left_ticks, right_ticks; /* a diff's */
} ps_qr_flamegraph_t;

/** SelectMergeStacktracesResponse with flamegraph (field 1). */
void ps_qr_encode_flamegraph(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out);
/** SelectMergeStacktracesResponse with tree (field 2): Pyroscope's tree bytes of fg (4 values
 *  per node), see querier.c. PS_EINTERNAL if fg is not a well-formed flame graph. */
int ps_qr_encode_tree(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err);
/** DiffResponse: a FlameGraphDiff (7 values per node, leftTicks, rightTicks). */
void ps_qr_encode_diff(int codec, const ps_qr_flamegraph_t *fg, ps_arena_t *arena, ps_buf_t *out);
/** SelectMergeStacktracesResponse with pprof {profile} (field 5) from an uncompressed pprof. */
int ps_qr_encode_merge_pprof(int codec, const void *pprof, size_t n, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err);
/** google.v1.Profile (SelectMergeProfile's answer) from an uncompressed pprof: binary is the
 *  pprof's bytes themselves. */
int ps_qr_encode_profile(int codec, const void *pprof, size_t n, ps_arena_t *arena, ps_buf_t *out, ps_err_t *err);

/** One exemplar (types.v1.Exemplar) of a heatmap slot or a SelectSeries point: its profile id is
 *  profile_id, or with has_uuid the 16 bytes uuid as UUID text (written straight into the
 *  answer, no text kept per exemplar); an id "" (NULL) is left out. */
typedef struct ps_qr_exemplar {
    int64_t t;                  /* ms */
    const char *profile_id;
    int64_t value;
    ps_labels_t labels;         /* the profile's labels that are not its series' */
    bool has_uuid;
    uint8_t uuid[16];
} ps_qr_exemplar_t;

/** One series of SelectSeriesResponse. */
typedef struct ps_qr_point {
    int64_t t; /* ms */
    double v;
    const ps_qr_exemplar_t *exemplar; /* NULL: none */
} ps_qr_point_t;
typedef struct ps_qr_series {
    ps_labels_t labels;
    uint32_t n;
    const ps_qr_point_t *points;
} ps_qr_series_t;
/** SelectSeriesResponse. */
void ps_qr_encode_select_series(int codec, const ps_qr_series_t *s, uint32_t n, ps_arena_t *arena, ps_buf_t *out);
/** A SelectSeriesResponse read point by point from its maker's own arrays (no struct kept per
 *  point: an answer with exemplars has ~150,000): n series, series i with labels(ctx, i) and
 *  npoints(ctx, i) points; point(ctx, i, k, p, ex) makes point k of series i into p, with
 *  p->exemplar = ex (made too) when it has one, else NULL. Each point is asked for twice, in order. */
typedef struct ps_qr_series_src {
    uint32_t n;
    void *ctx;
    const ps_labels_t *(*labels)(void *ctx, uint32_t i);
    uint32_t (*npoints)(void *ctx, uint32_t i);
    void (*point)(void *ctx, uint32_t i, uint32_t k, ps_qr_point_t *p, ps_qr_exemplar_t *ex);
} ps_qr_series_src_t;
/** SelectSeriesResponse of src. */
void ps_qr_encode_select_series_src(int codec, const ps_qr_series_src_t *src, ps_arena_t *arena, ps_buf_t *out);

/** One slot (types.v1.HeatmapSlot): nbuckets y_min and counts, nexemplars exemplars. */
typedef struct ps_qr_heatmap_slot {
    int64_t t;                  /* ms: the right edge of (t - step, t] */
    uint32_t nbuckets;
    const double *y_min;
    const int32_t *counts;
    uint32_t nexemplars;
    const ps_qr_exemplar_t *exemplars;
} ps_qr_heatmap_slot_t;
/** One series (types.v1.HeatmapSeries). */
typedef struct ps_qr_heatmap_series {
    ps_labels_t labels;
    uint32_t nslots;
    const ps_qr_heatmap_slot_t *slots;
} ps_qr_heatmap_series_t;
/** SelectHeatmapResponse. */
void ps_qr_encode_heatmap(int codec, const ps_qr_heatmap_series_t *s, uint32_t n, ps_arena_t *arena, ps_buf_t *out);

/** One querier.v1.QueryScope. */
typedef struct ps_qr_query_scope {
    const char *component_type;
    uint64_t component_count, block_count, series_count, profile_count, sample_count;
    uint64_t index_bytes, profile_bytes, symbol_bytes;
} ps_qr_query_scope_t;
/** AnalyzeQueryResponse: the scopes and query_impact {total_bytes_in_time_range, total_queried_series,
 *  deduplication_needed false}. */
void ps_qr_encode_analyze(int codec, const ps_qr_query_scope_t *scopes, uint32_t n, uint64_t total_bytes,
                          uint64_t total_series, ps_arena_t *arena, ps_buf_t *out);

#endif
