/*
 * flamebearer.c - Pyroscope's flamebearer JSON (pkg/og/structs/flamebearer: FlamebearerProfile,
 * FlamebearerV1, FlamebearerMetadataV1, FlamebearerTimelineV1), as its /pyroscope/render and
 * /pyroscope/render-diff answer it, from a flame graph of ps_flamegraph_build. The metadata rules
 * are those of Pyroscope's pkg/model ExportToFlamebearer (see render.h).
 */
#include <string.h>

#include "render.h"

void ps_flamebearer_meta(const char *sample_type, const char *sample_unit, const char *spy, ps_fb_meta_t *out)
{
    static const char *objects[] = {"inuse_objects", "alloc_objects", "goroutine", "samples"};
    out->spy_name = spy ? spy : "";
    out->sample_rate = 100;
    out->units = sample_unit;
    out->name = sample_type;
    out->aggregation = NULL;
    out->normalize = NULL;
    for (size_t i = 0; i < sizeof(objects) / sizeof(objects[0]); i++)
        if (strcmp(sample_type, objects[i]) == 0)
            out->units = "objects";
    if (strcmp(sample_type, "cpu") == 0) {
        out->units = "samples";
        out->sample_rate = 1000000000u;
    }
}

static void write_flamebearer(ps_json_t *j, const ps_flamegraph_t *fg)
{
    ps_json_key(j, "flamebearer");
    ps_json_obj(j);
    ps_json_key(j, "names");
    ps_json_arr(j);
    for (uint32_t i = 0; i < fg->nnames; i++)
        ps_json_cstr(j, fg->names[i]);
    ps_json_end(j);
    ps_json_key(j, "levels");
    ps_json_arr(j);
    for (uint32_t l = 0; l < fg->nlevels; l++) {
        ps_json_arr(j);
        for (uint32_t i = 0; i < fg->levels[l].n; i++)
            ps_json_int(j, fg->levels[l].values[i]);
        ps_json_end(j);
    }
    ps_json_end(j);
    ps_json_key(j, "numTicks");
    ps_json_int(j, fg->total);
    ps_json_key(j, "maxSelf");
    ps_json_int(j, fg->max_self);
    ps_json_end(j);
}

static void write_meta(ps_json_t *j, const ps_fb_meta_t *m, int diff)
{
    ps_json_key(j, "metadata");
    ps_json_obj(j);
    ps_json_key(j, "format");
    ps_json_cstr(j, diff ? "double" : "single");
    ps_json_key(j, "spyName");
    ps_json_cstr(j, m->spy_name ? m->spy_name : "");
    ps_json_key(j, "sampleRate");
    ps_json_uint(j, m->sample_rate);
    ps_json_key(j, "units");
    ps_json_cstr(j, m->units ? m->units : "");
    ps_json_key(j, "name");
    ps_json_cstr(j, m->name ? m->name : "");
    if (m->aggregation) {
        ps_json_key(j, "aggregation");
        ps_json_cstr(j, m->aggregation);
    }
    if (m->normalize) {
        ps_json_key(j, "normalize");
        ps_json_cstr(j, m->normalize);
    }
    ps_json_end(j);
}

static void write_timeline(ps_json_t *j, const char *key, const ps_fb_timeline_t *tl)
{
    ps_json_key(j, key);
    if (tl == NULL) {
        ps_json_null(j);
        return;
    }
    ps_json_obj(j);
    ps_json_key(j, "startTime");
    ps_json_int(j, tl->start_time);
    ps_json_key(j, "samples");
    ps_json_arr(j);
    for (uint32_t i = 0; i < tl->n; i++)
        ps_json_uint(j, tl->samples[i]);
    ps_json_end(j);
    ps_json_key(j, "durationDelta");
    ps_json_int(j, tl->duration_delta);
    ps_json_key(j, "watermarks");
    ps_json_null(j);
    ps_json_end(j);
}

void ps_flamebearer_json(const ps_flamegraph_t *fg, const ps_fb_meta_t *meta, const ps_fb_timeline_t *tl,
                         const ps_fb_group_t *groups, uint32_t ngroups, ps_buf_t *out)
{
    ps_json_t j;
    ps_json_init(&j, out);
    ps_json_obj(&j);
    ps_json_key(&j, "version");
    ps_json_int(&j, 1);
    write_flamebearer(&j, fg);
    write_meta(&j, meta, fg->diff);
    write_timeline(&j, "timeline", tl);
    ps_json_key(&j, "groups");
    if (groups == NULL) {
        ps_json_null(&j);
    } else {
        ps_json_obj(&j);
        for (uint32_t i = 0; i < ngroups; i++)
            write_timeline(&j, groups[i].key, &groups[i].tl);
        ps_json_end(&j);
    }
    ps_json_key(&j, "heatmap");
    ps_json_null(&j);
    if (fg->diff && fg->left_ticks != 0) {
        ps_json_key(&j, "leftTicks");
        ps_json_int(&j, fg->left_ticks);
    }
    if (fg->diff && fg->right_ticks != 0) {
        ps_json_key(&j, "rightTicks");
        ps_json_int(&j, fg->right_ticks);
    }
    ps_json_end(&j);
    ps_buf_putc(out, '\n');
}
