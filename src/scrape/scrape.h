/*
 * scrape.h - continuous collection: the scraper thread. Targets come from the configuration's
 * static_configs, file_sd_configs (inotify + refresh_interval) and http_sd_configs, go through
 * relabeling, and every target x enabled profile is scraped on its interval with libcurl's multi
 * interface (no thread per target). Scraped profiles take the same path as pushes into the writer.
 *
 * Cumulative profiles (Go allocs/heap alloc_*, block, mutex: counts since process start) are
 * stored as reset-aware deltas between consecutive scrapes of a target, under ":delta" profile
 * types: a merge over [t1, t2] is then what happened in it. The first scrape of a target only sets
 * the baseline for them; a value that went down (a process restart) starts a new baseline and the
 * scrape stores the new process' counts as they are.
 */
#ifndef PS_SCRAPE_H
#define PS_SCRAPE_H

#include "config/config.h"
#include "core/mem.h"
#include "proto/pprof.h"
#include "ingest/ingest.h"

typedef struct ps_scraper ps_scraper_t;

typedef struct ps_scraper_opts {
    size_t max_body;            /* largest profile body accepted from a target (default 64 MiB) */
    ps_pprof_limits_t limits;
    uint32_t max_targets;       /* targets (target x profile) kept over every job, and as many dropped
                                 * ones; past it no more are built (--scrape.max-targets; 0 = none) */
} ps_scraper_opts_t;

/** Starts the scraper thread with cfg (taken). */
ps_scraper_t *ps_scraper_start(ps_config_t *cfg, ps_writer_t *writer, const ps_scraper_opts_t *o);
/** Replaces the configuration (taken); applied by the scraper thread at once. Thread-safe. */
void ps_scraper_reload(ps_scraper_t *s, ps_config_t *cfg);
/** Stops scraping, waits for the thread. NULL is a no-op. */
void ps_scraper_stop(ps_scraper_t *s);

/** GET /api/v1/targets body (Prometheus shape); state: "active", "dropped" or "any"/NULL. With
 *  redact (callers without admin), label values and URLs as the configuration's one rule shows
 *  them (config.h ps_redact_value: "<secret>" for credential-like names, "xxxxx" for URL
 *  passwords). Thread-safe. */
void ps_scraper_targets_json(ps_scraper_t *s, const char *state, bool redact, ps_buf_t *out);
/** Self-metrics in Prometheus text format. Thread-safe; s may be NULL. */
void ps_scraper_metrics(ps_scraper_t *s, ps_buf_t *out);

#endif
