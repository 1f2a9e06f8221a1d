/*
 * profile.h - the in-memory profile model shared by the decoder (proto/), the store (storage/)
 * and the renderers (src/). It carries everything a pprof profile says about samples and
 * symbols, with dense indexes instead of wire ids:
 *
 *   - strings[0] is always "" (an index 0 means "no string");
 *   - mappings, functions and locations are referred to by 1-based index into their arrays
 *     (0 = none), whatever ids the wire format used;
 *   - a sample's stack lists location indexes leaf first (pprof order);
 *   - every sample has exactly ntypes values.
 *
 * All arrays are borrowed from whoever built the profile (usually an arena).
 */
#ifndef PS_CORE_PROFILE_H
#define PS_CORE_PROFILE_H

#include <stddef.h>
#include <stdint.h>

typedef struct ps_str {
    const char *ptr;
    uint32_t len;
} ps_str_t;

enum {
    PS_MAP_HAS_FUNCTIONS = 1,
    PS_MAP_HAS_FILENAMES = 2,
    PS_MAP_HAS_LINE_NUMBERS = 4,
    PS_MAP_HAS_INLINE_FRAMES = 8,
};

typedef struct ps_mapping {
    uint64_t memory_start, memory_limit, file_offset;
    uint32_t filename, build_id; /* string indexes */
    uint32_t flags;              /* PS_MAP_HAS_* */
} ps_mapping_t;

typedef struct ps_function {
    uint32_t name, system_name, filename; /* string indexes */
    int64_t start_line;
} ps_function_t;

typedef struct ps_line {
    uint32_t function; /* function index, 0 = none */
    int64_t line, column;
} ps_line_t;

typedef struct ps_location {
    uint32_t mapping;  /* mapping index, 0 = none */
    uint64_t address;
    uint32_t is_folded;
    uint32_t nlines;
    ps_line_t *lines;  /* lines[0] is the innermost (inlined) frame */
} ps_location_t;

typedef struct ps_label {
    uint32_t key;      /* string index */
    uint32_t str;      /* string index, 0 when numeric */
    int64_t num;
    uint32_t num_unit; /* string index */
} ps_label_t;

typedef struct ps_sample {
    uint32_t nlocs;
    uint32_t *locs;    /* location indexes, leaf first */
    int64_t *values;   /* ntypes values */
    uint32_t nlabels;
    ps_label_t *labels;
} ps_sample_t;

typedef struct ps_value_type {
    uint32_t type, unit; /* string indexes */
} ps_value_type_t;

typedef struct ps_profile {
    uint32_t nstrings;
    ps_str_t *strings;
    uint32_t ntypes;
    ps_value_type_t *sample_types;
    uint32_t nsamples;
    ps_sample_t *samples;
    uint32_t nmappings;
    ps_mapping_t *mappings;   /* index i+1 */
    uint32_t nfunctions;
    ps_function_t *functions; /* index i+1 */
    uint32_t nlocations;
    ps_location_t *locations; /* index i+1 */
    ps_value_type_t period_type;
    int64_t period;
    int64_t time_nanos;
    int64_t duration_nanos;
    uint32_t default_sample_type; /* string index, 0 = unset */
    uint32_t drop_frames, keep_frames; /* string indexes */
    uint32_t ncomments;
    uint32_t *comments;       /* string indexes */
    uint32_t doc_url;         /* string index */
} ps_profile_t;

static inline ps_str_t ps_profile_str(const ps_profile_t *p, uint32_t i)
{
    if (i >= p->nstrings) {
        ps_str_t e = {"", 0};
        return e;
    }
    return p->strings[i];
}

/** The frame name of an address without a function: "0x" and the address in hex. Written into buf
 *  (size bytes, NUL-terminated, cut if short); returns the whole name's length, as snprintf. */
size_t ps_profile_addr_name(uint64_t addr, char *buf, size_t size);

/** The frame name of a location without lines, as flame graphs, top tables and call sites name it:
 *  the base name of its mapping's file, "+0x" and the offset in that file ("libc.so.6+0x12345"); or
 *  ps_profile_addr_name of its address when it has no mapping with a file name. Into buf as above. */
size_t ps_profile_bare_name(const ps_profile_t *p, const ps_location_t *loc, char *buf, size_t size);

#endif
