/*
 * chunk.h - the immutable chunk: a run of profiles of one series, stored column by column.
 * The byte layout is specified at the top of chunk.c and in docs/FORMAT.md.
 *
 * Profiles are sparse vectors node id -> value (int64, nonzero). A chunk holds:
 *   timestamps (delta-of-delta), durations and periods (run-length), totals (delta+zigzag),
 *   the sorted node ids present (delta), and per node its values over the chunk's profiles
 *   (delta + zigzag + varint, runs of equal deltas and of zeros run-length encoded; a node that
 *   appears late starts at its first index).
 * A closed chunk is stored packed (PS_CHUNK_ENC_ZSTD): the same header and meta, the node section
 * compressed by zstd; every decoder here reads both encodings.
 */
#ifndef PS_STORAGE_CHUNK_H
#define PS_STORAGE_CHUNK_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

#define PS_CHUNK_MAX_PROFILES 65535

/**
 * A chunk's content in compressed-sparse-column form:
 * for node j (node_ids[j], ascending, unique), its nonzero values are
 * val[off[j] .. off[j+1]) at profile indexes idx[off[j] .. off[j+1]) (ascending).
 */
typedef struct ps_chunk_data {
    uint32_t n;          /* profiles, 1..PS_CHUNK_MAX_PROFILES */
    int64_t *ts;         /* n timestamps (ns), strictly increasing */
    int64_t *durations;  /* n */
    int64_t *periods;    /* n */
    int64_t *totals;     /* n: sum of each profile's values */
    uint32_t nnodes;
    uint64_t *node_ids;  /* nnodes */
    uint32_t *off;       /* nnodes + 1 */
    uint32_t *idx;       /* off[nnodes] */
    int64_t *val;        /* off[nnodes] */
} ps_chunk_data_t;

typedef struct ps_chunk_header {
    uint8_t encoding;    /* PS_CHUNK_ENC_V1 or PS_CHUNK_ENC_ZSTD */
    uint32_t n;
    int64_t min_ts, max_ts;
} ps_chunk_header_t;

enum { PS_CHUNK_ENC_V1 = 1, PS_CHUNK_ENC_ZSTD = 8 }; /* 2..7 are float chunk encodings (storage/internal.h): never reused */

/** The largest node section a packed chunk may hold, and the most it may expand over its
 *  compressed bytes: a packed chunk beyond either is damaged (the packer keeps such chunks V1). */
#define PS_CHUNK_MAX_NODE_BYTES (64u << 20)
#define PS_CHUNK_MAX_EXPANSION 1024u
/** The zstd level the compactor packs closed chunks with. */
#define PS_CHUNK_ZSTD_LEVEL 9

/** Encodes d (appending to out). Rejects non-increasing timestamps or unsorted ids (PS_EINVAL). */
int ps_chunk_encode(const ps_chunk_data_t *d, ps_buf_t *out, ps_err_t *err);

/**
 * Packs the V1 chunk v1 (as ps_chunk_encode wrote it, not validated again) into out: encoding
 * PS_CHUNK_ENC_ZSTD, its node section compressed at zstd level `level`; or, when that is not
 * smaller or the node section is beyond PS_CHUNK_MAX_NODE_BYTES / PS_CHUNK_MAX_EXPANSION, v1
 * itself. Appends to out. PS_EINVAL if v1 is not a V1 chunk.
 */
int ps_chunk_pack(const void *v1, size_t n, int level, ps_buf_t *out, ps_err_t *err);

/**
 * Packed node sections are kept decompressed in a small process-wide cache (a few hundred chunks,
 * ~12 MiB at most; a hit is the same frame byte for byte): its lookups so far, and a way to empty
 * it (tests, benchmarks).
 */
void ps_chunk_cache_stats(uint64_t *hits, uint64_t *misses);
void ps_chunk_cache_clear(void);

/** Reads the fixed header only (O(1)). PS_ECORRUPT on bad bytes. */
int ps_chunk_header(const void *p, size_t n, ps_chunk_header_t *h);

/** Decodes timestamps, durations, periods and totals only (no node values) into arena arrays;
 *  the node fields of out are left zero. */
int ps_chunk_decode_meta(const void *p, size_t n, ps_arena_t *arena, ps_chunk_data_t *out, ps_err_t *err);

/** Decodes everything into arena arrays. Validates all bytes (never reads out of bounds,
 *  PS_ECORRUPT with a message on any inconsistency). */
int ps_chunk_decode(const void *p, size_t n, ps_arena_t *arena, ps_chunk_data_t *out, ps_err_t *err);

/**
 * Sums, for every node, its values over the profiles with index in [from, to) and calls
 * on_node(ctx, node_id, sum) for each node with a nonzero sum, in ascending node order.
 * Decodes without materialising the whole chunk. Returns 0 or PS_ECORRUPT.
 */
int ps_chunk_sum_range(const void *p, size_t n, uint32_t from, uint32_t to,
                       void (*on_node)(void *ctx, uint64_t node_id, int64_t sum), void *ctx, ps_err_t *err);

#endif
