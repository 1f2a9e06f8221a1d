/*
 * render.h - turning a (merged) profile into what people read: flame graphs (Pyroscope's compact
 * FlameGraph shape, also as a diff), folded stacks, top tables.
 *
 * Input is a ps_profile_t as ps_reader_materialize builds it: samples whose values[vi] are the
 * weights (diff: values[0] = left/base, values[1] = right/compare). Frames are functions: each
 * location expands into its lines, innermost (lines[0]) deepest, so inlined functions are frames
 * of their own; a location without lines is named by its address ("0x4a5f3c") or, with a mapping,
 * "mapping_basename+0xoffset". Stacks are read root first (the reverse of pprof's leaf-first
 * order). Frames that end up identical at the same position merge (a tree by function name).
 * Sample labels are ignored here.
 *
 * Under a query budget (core/budget.h) the builders check it every 1,024 samples and between
 * passes, and stop when the query's deadline passed or its client went away:
 * ps_flamegraph_build returns the budget's error (PS_ETIMEOUT, PS_ECANCELED); ps_render_folded
 * and ps_render_top(_diff) write nothing, and their caller asks ps_budget_check_now afterwards
 * (its answer stays) to tell a stop from an empty answer.
 */
#ifndef PS_RENDER_H
#define PS_RENDER_H

#include <stdint.h>

#include "core/err.h"
#include "core/json.h"
#include "core/labels.h"
#include "core/mem.h"
#include "core/profile.h"

typedef struct ps_fg_level {
    uint32_t n;       /* number of int64 values: 4 per node (7 for a diff) */
    int64_t *values;
} ps_fg_level_t;

/**
 * The compact flame graph of Pyroscope (docs/protocols.md, "Pyroscope querier and flame graphs"):
 *  - names[0] = "total"; names de-duplicated, nodes refer to them by index;
 *  - levels[0] holds the root only; each node is [x_offset, total, self, name_index]
 *    (diff: [l_offset, l_total, l_self, r_offset, r_total, r_self, name_index]);
 *  - x_offset is delta-encoded within a level: the gap from the end of the previous node of the
 *    level (prev_start + prev_total) to this node's start; a child's absolute start = parent start
 *    + parent self + totals of earlier siblings (children ordered by name);
 *  - with max_nodes > 0, only the max_nodes nodes with the largest totals are kept (ties broken by
 *    name); everything else under a kept parent is merged into one child named "other";
 *  - max_self = max self over all nodes; total = root total (diff: left_ticks/right_ticks are the
 *    two roots' totals, total = left + right).
 */
typedef struct ps_flamegraph {
    uint32_t nnames;
    const char **names;
    uint32_t nlevels;
    ps_fg_level_t *levels;
    int64_t total, max_self;
    int diff;
    int64_t left_ticks, right_ticks;
} ps_flamegraph_t;

/** Builds the flame graph of values[vi] (diff: of values[0] vs values[1] when diff != 0). */
int ps_flamegraph_build(const ps_profile_t *p, uint32_t vi, int diff, int64_t max_nodes, ps_arena_t *arena,
                        ps_flamegraph_t *out, ps_err_t *err);

/** What an answer says of how its values were computed (docs/api.md "Aggregation over time"). */
typedef struct ps_render_note {
    const char *aggregation;          /* "sum" or "avg"; NULL: left out */
    const char *normalize;            /* a diff's "rate" or "none"; NULL: left out (and the seconds) */
    double base_seconds, compare_seconds; /* a diff's profiled seconds of each side */
} ps_render_note_t;

/** JSON: {"names":[...],"levels":[[...],...],"total":N,"max_self":N} (diff adds "left_ticks",
 *  "right_ticks"), numbers as JSON numbers. */
void ps_flamegraph_json(const ps_flamegraph_t *fg, ps_buf_t *out);

/** ps_flamegraph_json plus note's fields at the end: "aggregation", and for a diff "normalize",
 *  "base_profiled_seconds", "compare_profiled_seconds" (note NULL: none). */
void ps_flamegraph_json_note(const ps_flamegraph_t *fg, const ps_render_note_t *note, ps_buf_t *out);

/** Folded stacks: one line per distinct function stack, "root;...;leaf value\n", sorted by stack,
 *  zero values omitted. */
void ps_render_folded(const ps_profile_t *p, uint32_t vi, ps_buf_t *out);

/** Top table as JSON: {"total":N,"rows":[{"function":..,"file":..,"line":N,"flat":N,"flat%":x,"cum":N,"cum%":x},...]}
 *  (line: the function's start line; when the profile does not say, the lowest line of the
 *  function that a location has; 0 when none has one)
 *  sorted by |flat| descending (then |cum| descending, then name), at most limit rows (0 = all).
 *  flat = value of samples whose leaf frame is the function; cum = value of samples with the
 *  function anywhere in the stack, counted once per sample even under recursion. total = the sum
 *  of |value| over the samples (as pprof); percentages of total, rounded to 2 decimals, signed. */
void ps_render_top(const ps_profile_t *p, uint32_t vi, uint32_t limit, ps_buf_t *out);

/** The top table of a diff (values compare - base): as ps_render_top, but total (and so the
 *  denominator of the percentages) is base_total, the base's sum of |value|, as `go tool pprof
 *  -diff_base` computes it; base_total <= 0 (an empty base) falls back to the sum of |value|.
 *  pprof prints the percentages' absolute values; here they keep the sign of flat and cum. */
void ps_render_top_diff(const ps_profile_t *p, uint32_t vi, uint32_t limit, int64_t base_total, ps_buf_t *out);

/** ps_render_top_diff with note's fields after "rows" (as ps_flamegraph_json_note; NULL: none). */
void ps_render_top_note(const ps_profile_t *p, uint32_t vi, uint32_t limit, int64_t base_total,
                        const ps_render_note_t *note, ps_buf_t *out);

/* ---- Pyroscope's flamebearer (its /pyroscope/render and /render-diff answers) ---- */

/** The metadata of a flamebearer profile (Pyroscope's FlamebearerMetadataV1). */
typedef struct ps_fb_meta {
    const char *spy_name; /* "" when unknown */
    uint32_t sample_rate;
    const char *units;
    const char *name;
    const char *aggregation; /* profstore's: "sum" or "avg", written after name; NULL: left out */
    const char *normalize;   /* a diff's "rate" or "none", after aggregation; NULL: left out */
} ps_fb_meta_t;

/** A timeline: samples[i] covers the step that ends at start_time + i * duration_delta (seconds). */
typedef struct ps_fb_timeline {
    int64_t start_time;     /* unix seconds */
    int64_t duration_delta; /* seconds */
    uint32_t n;
    const uint64_t *samples;
} ps_fb_timeline_t;

/** A timeline of one group of series (render's groupBy): key is the label value, or "*". */
typedef struct ps_fb_group {
    const char *key;
    ps_fb_timeline_t tl;
} ps_fb_group_t;

/**
 * The metadata Pyroscope's ExportToFlamebearer gives a profile type's sample type and unit:
 * units = the sample unit, except "objects" for the sample types inuse_objects, alloc_objects,
 * goroutine and samples, and "samples" for cpu; sample_rate = 1000000000 for cpu, else 100;
 * name = the sample type; spy_name = spy ("" if NULL). The strings are borrowed.
 */
void ps_flamebearer_meta(const char *sample_type, const char *sample_unit, const char *spy, ps_fb_meta_t *out);

/**
 * Pyroscope's FlamebearerProfile JSON, field for field in the order Go's encoding/json writes it
 * (a newline at the end, as json.Encoder):
 *   {"version":1,"flamebearer":{"names":[..],"levels":[[..],..],"numTicks":N,"maxSelf":N},
 *    "metadata":{"format":"single"|"double","spyName":..,"sampleRate":N,"units":..,"name":..
 *                [,"aggregation":..][,"normalize":..]},
 *    "timeline":{"startTime":S,"samples":[..],"durationDelta":D,"watermarks":null}|null,
 *    "groups":{"<key>":<timeline>,...}|null,"heatmap":null[,"leftTicks":N,"rightTicks":N]}
 * The flame graph is fg as ps_flamegraph_build made it (names[0] "total", delta-encoded 4-int
 * nodes, 7 for a diff); numTicks = fg->total (a diff: left + right ticks); format "double" and
 * leftTicks/rightTicks for a diff (each left out when 0, as Go's omitempty). tl NULL: null;
 * groups NULL: null, else the ngroups timelines by key (give the keys ascending, as Go orders a map).
 */
void ps_flamebearer_json(const ps_flamegraph_t *fg, const ps_fb_meta_t *meta, const ps_fb_timeline_t *tl,
                         const ps_fb_group_t *groups, uint32_t ngroups, ps_buf_t *out);

#endif
