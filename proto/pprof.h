/*
 * pprof.h - decoding and encoding pprof profiles (perftools.profiles.Profile, docs/protocols.md).
 *
 * The only users of protobuf-c and zlib for pprof. Decoded profiles are ps_profile_t (see
 * core/profile.h) allocated from a caller's arena; generated protobuf-c structs never
 * leave proto/.
 */
#ifndef PS_PROTO_PPROF_H
#define PS_PROTO_PPROF_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/profile.h"

typedef struct ps_pprof_limits {
    size_t max_inflated;        /* bytes after gunzip (gzip bomb guard); default 64 MiB */
    uint32_t max_strings;       /* default 1,000,000 */
    uint32_t max_samples;       /* default 1,000,000 */
    uint32_t max_locations;     /* default 1,000,000 */
    uint32_t max_functions;     /* default 1,000,000 */
    uint32_t max_mappings;      /* default 10,000 */
    uint32_t max_sample_types;  /* default 16 */
    uint32_t max_stack_depth;   /* locations per sample; default 1,024 */
    uint32_t max_lines;         /* lines per location; default 256 */
    uint32_t max_labels;        /* labels per sample; default 64 */
    uint32_t max_string_len;    /* bytes per string; default 64 KiB */
} ps_pprof_limits_t;

/** Fills l with the defaults above. */
void ps_pprof_limits_default(ps_pprof_limits_t *l);

/**
 * Decodes a pprof profile, gzipped (detected by magic) or not, into *out. Everything in *out is
 * allocated from arena. Validates the whole profile: string_table[0] == "", every string index in
 * range and valid UTF-8, ids nonzero and unique, every referenced mapping/function/location id
 * defined, each sample has exactly one value per sample type, at least one sample type, limits.
 * Errors are PS_EINVAL/PS_ETOOBIG with a message naming the field and index, e.g.
 * "sample[3]: location_id 99 is not defined".
 */
int ps_pprof_decode(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *out,
                    ps_err_t *err);

/**
 * Encodes p as a pprof Profile message into out (appending). Mappings, functions and locations
 * get ids 1..n in array order. gzip_level < 0 writes the raw protobuf; 0..9 gzips it.
 */
int ps_pprof_encode(const ps_profile_t *p, int gzip_level, ps_buf_t *out, ps_err_t *err);

#endif
