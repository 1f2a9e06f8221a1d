/*
 * synthetic.h - the series Prometheus writes for every scrape of a target (scrape/scrape.go,
 * "report"), written by the scraper for every target x profile as float samples at the scrape's
 * start time:
 *
 *   up                                     1 when the scrape (and storing its profile) succeeded, else 0
 *   scrape_duration_seconds                from the request's start to the body's end
 *   scrape_samples_scraped                 pprof samples in the scraped profile (0 when it failed)
 *   scrape_samples_post_metric_relabeling  pprof samples stored: 0 for a failed scrape and for the
 *                                          first scrape of a cumulative profile (a baseline only)
 *
 * with the target's labels (job, instance, target and group labels, external labels) plus
 * profile="<pprof_config key>", so that `up == 0` finds dead targets and `up{profile="process_cpu"}`
 * one profile of them. A target that goes away gets Prometheus' stale marker in each of them.
 */
#ifndef PS_SCRAPE_SYNTHETIC_H
#define PS_SCRAPE_SYNTHETIC_H

#include <stdbool.h>
#include <stdint.h>

#include "core/labels.h"
#include "core/mem.h"
#include "ingest/ingest.h" /* ps_float_append_t (storage/store.h) */

#define PS_SYNTHETIC_SERIES 4

/** Prometheus' stale marker: the NaN with these bits (model/value.StaleNaN). */
#define PS_STALE_NAN_BITS 0x7ff0000000000002ull

typedef struct ps_scrape_report {
    int64_t t_ms;          /* the scrape's start (wall clock, ms) */
    bool up;
    double duration;       /* seconds */
    uint64_t samples;      /* pprof samples scraped */
    uint64_t samples_kept; /* pprof samples stored */
} ps_scrape_report_t;

/**
 * Fills out[PS_SYNTHETIC_SERIES] (labels, one sample each; all from arena) for one scrape of the
 * target with labels target (normalised, no __name__) and profile name profile. With r NULL, the
 * samples are stale markers at t_ms (the target went away).
 */
void ps_synthetic_build(const ps_labels_t *target, const char *profile, const ps_scrape_report_t *r, int64_t t_ms,
                        ps_arena_t *arena, ps_float_append_t out[PS_SYNTHETIC_SERIES]);

#endif
