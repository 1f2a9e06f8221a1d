/*
 * stacks.h - profiles written as text, stacks of frame names (docs/api.md "Ad hoc profiles"):
 *   - Pyroscope's flamebearer JSON (flamebearer.c): what Pyroscope's UI exports and /render
 *     answers, profstore's /pyroscope/render too;
 *   - `perf script` output (perfscript.c): one event a paragraph, its header line then one frame
 *     line per stack frame, leaf first.
 *   - folded stacks (folded.c): "main;work;inner 12" lines (Pyroscope's /ingest and ad hoc uploads).
 * Each becomes a ps_profile_t of one sample type, one function and one location per distinct frame
 * name (no addresses, files or lines), through the builder below. Hostile input is expected:
 * every count is bounded by ps_stacks_limits_t before it is allocated, errors are PS_EINVAL or
 * PS_ETOOBIG with the line (perf) or the field and index (JSON) that is wrong.
 */
#ifndef PS_PARSER_STACKS_H
#define PS_PARSER_STACKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/hash.h"
#include "core/mem.h"
#include "core/profile.h"

typedef struct ps_stacks_limits {
    uint32_t max_samples;     /* distinct stacks with a value */
    uint32_t max_functions;   /* distinct frame names */
    uint32_t max_stack_depth; /* frames in one stack */
    uint32_t max_string_len;  /* bytes of a frame name */
    uint64_t max_frames;      /* frames of all samples together (each sample holds its whole stack) */
    size_t max_json_memory;   /* bytes jansson may take for a flamebearer document (96 per value) */
} ps_stacks_limits_t;

/* ---- the builder ---- */

typedef struct ps_stacks {
    ps_profile_t *p;
    ps_arena_t *arena;
    const ps_stacks_limits_t *lim;
    ps_hmap_t names; /* frame name -> location index */
    uint32_t cap_strings, cap_funcs, cap_samples;
    uint64_t frames;
} ps_stacks_t;

/** Starts *p empty (strings[0] = ""), of one sample type type/unit (copied). Everything from arena;
 *  lim is borrowed until ps_stacks_dispose. */
void ps_stacks_init(ps_stacks_t *b, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p, const char *type,
                    const char *unit);
/** The location of frame name s[0..n) (made on first use): PS_ETOOBIG past max_functions or
 *  max_string_len, PS_EINVAL when s is not UTF-8. Messages name no position: the caller adds it. */
int ps_stacks_frame(ps_stacks_t *b, const char *s, size_t n, uint32_t *loc, ps_err_t *err);
/** Adds a sample of value over the stack locs[0..n) (root first, as the formats write it; stored
 *  leaf first). PS_ETOOBIG past max_samples, max_stack_depth or max_frames. */
int ps_stacks_sample(ps_stacks_t *b, const uint32_t *locs, uint32_t n, int64_t value, ps_err_t *err);
/** The index of a new string s (copied) among the profile's strings (a period type's names). */
uint32_t ps_stacks_string(ps_stacks_t *b, const char *s);
/** Frees the builder's map (the profile stays, in the arena). */
void ps_stacks_dispose(ps_stacks_t *b);

/* ---- folded stacks (folded.c) ---- */

typedef struct ps_folded_opts {
    bool lines;              /* each line a stack alone, one sample of period (Pyroscope's format=lines) */
    int64_t period;          /* > 0: each count is multiplied by it, and it is the profile's period of
                              * period_type/period_unit (cpu: 1e9 / sampleRate ns); 0: counts as they are */
    const char *type, *unit; /* the one sample type */
    const char *period_type, *period_unit;
} ps_folded_opts_t;

/**
 * Reads folded stacks into *p: one sample per non-empty line, its stack the ';'-separated frames
 * (root first), its value the count after the last space (times the period). Errors read "line 2:
 * no space before the count (expected "frame;frame;... count")", "line 3: "x" is not a sample
 * count (...)", "line 4: frame 2 is not valid UTF-8"; limits are PS_ETOOBIG ("more than N samples
 * (lines)"); no line: "the body has no samples (...)". Everything from arena.
 */
int ps_folded_parse(const void *data, size_t n, const ps_folded_opts_t *opts, const ps_stacks_limits_t *lim,
                    ps_arena_t *arena, ps_profile_t *p, ps_err_t *err);

/* ---- flamebearer JSON (flamebearer.c) ---- */

/** What a flamebearer document says of itself (metadata), strings from the arena. */
typedef struct ps_fbjson_meta {
    const char *name;     /* metadata.name ("" when absent) */
    const char *units;    /* metadata.units ("" when absent) */
    const char *spy_name; /* metadata.spyName ("" when absent) */
    uint32_t sample_rate; /* metadata.sampleRate (0 when absent) */
    uint32_t other_nodes; /* nodes named "other" below the root: the merges of a cut flame graph */
} ps_fbjson_meta_t;

/**
 * Reads a FlamebearerProfile JSON document (version absent, 0 or 1; metadata.format "single";
 * flamebearer.names and levels; numTicks, maxSelf and the rest are derived, and ignored)
 * into *p: one sample per node with a self value, its stack the names from level 1 down to it
 * (the root "total" of level 0 is not a frame), of the sample type metadata.name (or "samples"
 * when empty) and unit metadata.units (or "count"). A "double" (diff) document is refused, as
 * Pyroscope refuses it. Errors read "flamebearer JSON: line 3 column 7: ..." for syntax and
 * "flamebearer.levels[2][13]: ..." for content.
 */
int ps_fbjson_parse(const void *data, size_t n, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                    ps_fbjson_meta_t *meta, ps_err_t *err);

/* ---- perf script (perfscript.c) ---- */

/** Whether data looks like `perf script` output: its first line that is neither empty nor a
 *  '#' comment is an event header ("comm pid[/tid] ...") and the line after it starts with a
 *  blank (a frame), is empty, or is the end. */
int ps_perf_detect(const void *data, size_t n);

/**
 * Reads `perf script` output into *p, of sample type "samples", unit "count": one sample of 1 per
 * event, its stack the event's command name (root) then its frames from the outermost to the
 * leaf. A frame's name is its symbol without perf's "+0x<offset>" (so one function is one node),
 * "[unknown]" as perf prints it. '#' comment lines between events are skipped. Errors read
 * "line 12: ...".
 */
int ps_perf_parse(const void *data, size_t n, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                  ps_err_t *err);

#endif
