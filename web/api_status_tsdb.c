/*
 * api_status_tsdb.c - GET /api/v1/status/tsdb: Prometheus' answer shape (headStats and the four
 * top-10 lists, `limit` to change 10) over everything stored (query/tsdb.h counts), with
 * profstore's own storage figures under "storage" (what /metrics says as profstore_storage_*).
 */
#include <stdlib.h>

#include "core/timeutil.h"
#include "http.h"
#include "internal.h"
#include "query/tsdb.h"

static void top_json(ps_json_t *j, const char *key, const ps_tsdb_top_t *t)
{
    ps_json_key(j, key);
    ps_json_arr(j);
    for (uint32_t i = 0; i < t->n; i++) {
        ps_json_obj(j);
        ps_json_key(j, "name");
        ps_json_cstr(j, t->items[i].name);
        ps_json_key(j, "value");
        ps_json_uint(j, t->items[i].value);
        ps_json_end(j);
    }
    ps_json_end(j);
}

static void uint_field(ps_json_t *j, const char *key, uint64_t v)
{
    ps_json_key(j, key);
    ps_json_uint(j, v);
}

static void write_stats(ps_json_t *j, const ps_tsdb_stats_t *t, const ps_store_stats_t *st)
{
    ps_json_obj(j);
    ps_json_key(j, "headStats");
    ps_json_obj(j);
    uint_field(j, "numSeries", t->series);
    uint_field(j, "numLabelPairs", t->label_pairs);
    uint_field(j, "chunkCount", st->chunks + st->float_chunks);
    ps_json_key(j, "minTime");
    ps_json_int(j, t->min_ts / 1000000);
    ps_json_key(j, "maxTime");
    ps_json_int(j, t->max_ts / 1000000);
    ps_json_end(j);
    top_json(j, "seriesCountByMetricName", &t->by_metric_name);
    top_json(j, "labelValueCountByLabelName", &t->values_by_label);
    top_json(j, "memoryInBytesByLabelName", &t->bytes_by_label);
    top_json(j, "seriesCountByLabelValuePair", &t->series_by_pair);
    ps_json_key(j, "storage");
    ps_json_obj(j);
    uint_field(j, "profileSeries", t->profile_series);
    uint_field(j, "floatSeries", t->float_series);
    uint_field(j, "headRecords", st->head_records);
    uint_field(j, "chunks", st->chunks);
    uint_field(j, "floatHeads", st->float_heads);
    uint_field(j, "floatChunks", st->float_chunks);
    uint_field(j, "stackNodes", st->nodes);
    uint_field(j, "strings", st->strings);
    uint_field(j, "functions", st->functions);
    uint_field(j, "locations", st->locations);
    uint_field(j, "mappings", st->mappings);
    uint_field(j, "metricMetadata", st->metadata);
    uint_field(j, "fileBytes", st->file_bytes);
    uint_field(j, "usedBytes", st->used_bytes);
    ps_json_end(j);
    ps_json_end(j);
}

static int param_limit(ps_qctx_t *c, uint32_t *limit)
{
    const ps_param_t *v = ps_params_get(&c->params, "limit");
    *limit = 10;
    if (v == NULL || v->vlen == 0)
        return 0;
    char *end;
    long long x = strtoll(v->value, &end, 10);
    if (*end || x < 1 || x > PS_TSDB_LIMIT_MAX)
        return ps_err_set(&c->err, PS_EINVAL, "invalid parameter \"limit\": expected an integer from 1 to %d, got \"%.32s\"",
                          PS_TSDB_LIMIT_MAX, v->value);
    *limit = (uint32_t)x;
    return 0;
}

int ps_api_status_tsdb(ps_task_t *task)
{
    ps_qctx_t c;
    uint32_t limit;
    ps_tsdb_stats_t t;
    ps_store_stats_t st;
    int ret = ps_qctx_begin(&c, task);
    if (ret == 0)
        ret = param_limit(&c, &limit);
    if (ret == 0)
        ret = ps_query_tsdb_stats(c.reader, limit, &c.arena, &t, &c.err);
    if (ret == 0)
        ret = ps_store_stats(c.srv->store, &st, &c.err);
    if (ret == 0) {
        ps_json_t j;
        ps_json_envelope(&j, &c.out);
        write_stats(&j, &t, &st);
        ps_json_envelope_close(&j);
        ps_task_send(task, 200, "application/json", c.out.data, c.out.len);
    }
    return ps_qctx_finish(&c, ret);
}
