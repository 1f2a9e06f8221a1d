/*
 * tsdb.h - what the store holds, counted as Prometheus' /api/v1/status/tsdb counts its head:
 * series per metric name (here: per profile type id, as __name__), label values per label name,
 * bytes of label values per name, series per label pair; the number of label pairs; and the time
 * range of the stored profiles. One read snapshot; top lists of `limit` entries.
 */
#ifndef PS_QUERY_TSDB_H
#define PS_QUERY_TSDB_H

#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "storage/store.h"

#define PS_TSDB_LIMIT_MAX 10000

typedef struct ps_tsdb_stat {
    const char *name; /* "process_cpu:cpu:..." / "job" / "job=api" (from the arena) */
    uint64_t value;
} ps_tsdb_stat_t;

typedef struct ps_tsdb_top {
    uint32_t n;
    ps_tsdb_stat_t *items; /* value descending, then name ascending */
} ps_tsdb_top_t;

typedef struct ps_tsdb_stats {
    uint64_t series, profile_series, float_series;
    uint64_t label_pairs; /* distinct name=value pairs */
    int64_t min_ts, max_ts; /* ns: the oldest and newest stored profile; 0, 0 without profiles */
    ps_tsdb_top_t by_metric_name;      /* seriesCountByMetricName */
    ps_tsdb_top_t values_by_label;     /* labelValueCountByLabelName */
    ps_tsdb_top_t bytes_by_label;      /* memoryInBytesByLabelName: bytes of the distinct values */
    ps_tsdb_top_t series_by_pair;      /* seriesCountByLabelValuePair */
} ps_tsdb_stats_t;

/** Counts what r's snapshot holds into out (lists from arena), each top list at most limit long
 *  (1 .. PS_TSDB_LIMIT_MAX). */
int ps_query_tsdb_stats(ps_reader_t *r, uint32_t limit, ps_arena_t *arena, ps_tsdb_stats_t *out, ps_err_t *err);

#endif
