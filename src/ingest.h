/*
 * ingest.h - turning a pushed (or scraped) pprof body plus its parameters into a store append:
 * decode and validate (on the calling thread), infer the profile name, build one series per
 * sample type with its profile type id as __name__, pick the timestamp.
 */
#ifndef PS_INGEST_H
#define PS_INGEST_H

#include <stdbool.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/pprof.h"
#include "storage/store.h"

typedef struct ps_ingest_params {
    const char *name;   /* profile name ("process_cpu"); NULL = infer from sample types */
    size_t name_len;
    const char *labels; /* {job="api",...}; NULL = none */
    size_t labels_len;
    const char *time;   /* RFC3339 or unix seconds; NULL = the profile's time_nanos, else now */
    size_t time_len;
    int delta;          /* -1 = by profile name (process_cpu, wall), 0 = no, 1 = yes */
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

/** Infers the profile name from the sample types, or explains why it cannot. */
int ps_ingest_infer_name(const ps_profile_t *p, const char **name, ps_err_t *err);

/** Writes the success JSON for a durable append:
 *  {"status":"success","data":{"timestamp":..., "samples":N, "duplicate":false, "series":[...]}} */
void ps_ingest_result_json(const ps_append_t *app, ps_buf_t *out);

#endif
