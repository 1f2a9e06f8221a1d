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
 * A chunk whose node section is another stored chunk's but for the value scale (cpu nanoseconds =
 * samples x period: the same scaled values) is stored as a reference to it (PS_CHUNK_ENC_REF): the
 * same header and meta, then the other chunk's series id and its own scale. Its reader passes the
 * chunk it refers to (the one of that series with the same max_ts) to the _ref decoders.
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
    uint8_t encoding;    /* PS_CHUNK_ENC_V1, PS_CHUNK_ENC_ZSTD or PS_CHUNK_ENC_REF */
    uint32_t n;
    int64_t min_ts, max_ts;
} ps_chunk_header_t;

/* 2..7 are float chunk encodings (storage/internal.h): never reused */
enum { PS_CHUNK_ENC_V1 = 1, PS_CHUNK_ENC_ZSTD = 8, PS_CHUNK_ENC_REF = 9 };

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

/* ---- references (PS_CHUNK_ENC_REF) ---- */

/** A hash of V1 chunk v1's n, min_ts, max_ts and node section but its value scale (never 0; 0 if
 *  v1 is not a V1 chunk): chunks of equal keys may be twins, which ps_chunk_refer checks. */
uint64_t ps_chunk_twin_key(const void *v1, size_t n);

/**
 * If the node section of chunk self (V1 or ZSTD) is, byte for byte but the value scale, that of
 * chunk twin (V1 or ZSTD, the same n, min_ts and max_ts; read as untrusted bytes), appends to out
 * the reference to it: self's header (encoding PS_CHUNK_ENC_REF) and meta, twin_sid, self's scale
 * and a check of the node section; returns 1. Returns 0 (out untouched) when they differ or the
 * reference would not be smaller than self; PS_EINVAL if self is neither V1 nor ZSTD.
 */
int ps_chunk_refer(const void *self, size_t n, const void *twin, size_t tn, uint64_t twin_sid, ps_buf_t *out,
                   ps_err_t *err);

/** The value scale (gcd of the values) of a V1 or ZSTD chunk; PS_ECORRUPT for a reference or bad bytes. */
int ps_chunk_value_scale(const void *p, size_t n, uint64_t *scale, ps_err_t *err);

/** 1 and *sid, the series whose chunk of the same max_ts it refers to, for a PS_CHUNK_ENC_REF
 *  chunk; 0 for the other encodings; PS_ECORRUPT on bad bytes. */
int ps_chunk_ref_sid(const void *p, size_t n, uint64_t *sid, ps_err_t *err);

/**
 * ps_chunk_decode and ps_chunk_sum_range of any chunk, a reference included: ref, refn the chunk
 * it refers to (NULL: missing, PS_ECORRUPT naming it), ignored for the other encodings. A
 * reference whose chunk is damaged, of other profiles, or not the one it was made from (its
 * check) fails with PS_ECORRUPT, as a damaged chunk does. ps_chunk_decode and ps_chunk_sum_range
 * are these with ref NULL.
 */
int ps_chunk_decode_ref(const void *p, size_t n, const void *ref, size_t refn, ps_arena_t *arena,
                        ps_chunk_data_t *out, ps_err_t *err);
int ps_chunk_sum_range_ref(const void *p, size_t n, const void *ref, size_t refn, uint32_t from, uint32_t to,
                           void (*on_node)(void *ctx, uint64_t node_id, int64_t sum), void *ctx, ps_err_t *err);

#endif
