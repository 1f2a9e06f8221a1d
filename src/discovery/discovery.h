/*
 * discovery.h - where scrape targets come from: target group lists in Prometheus' file_sd and
 * http_sd formats (docs/protocols.md), and the set of file_sd files of one scrape configuration, re-read
 * when they change. static_configs are part of the configuration itself (config/config.h);
 * http_sd bodies are fetched by the scraper's HTTP client and parsed here.
 */
#ifndef PS_DISCOVERY_H
#define PS_DISCOVERY_H

#include <stdbool.h>
#include <stdint.h>

#include "config/config.h"
#include "core/err.h"
#include "core/mem.h"

/** Parses a file_sd file (JSON or YAML list of {targets: [...], labels: {...}}) or an http_sd
 *  body (JSON). Groups and strings from arena. Errors name the file and position (sd.c). */
int ps_sd_parse(const char *data, size_t n, bool yaml, const char *name, ps_arena_t *arena, ps_target_group_t **groups,
                uint32_t *ngroups, ps_err_t *err);

/* ---- file_sd: the files matched by one scrape config's file_sd_configs (file_sd.c) ---- */

typedef struct ps_filesd ps_filesd_t;

/** The file set of cfg's file_sd_configs (cfg is borrowed and must outlive it); nothing read yet. */
ps_filesd_t *ps_filesd_new(const ps_scrape_config_t *cfg);
/** NULL is a no-op. */
void ps_filesd_free(ps_filesd_t *f);
/**
 * Re-globs the patterns and re-reads the files that changed (mtime, ctime, size or inode), or
 * every file when force. A file that cannot be read or is invalid keeps the groups it gave before
 * and adds one to *failures (at each refresh that reads it, until it is fixed); a file that no
 * longer exists takes its groups with it. Returns true when a file's groups were replaced (a file
 * read and applied, also with the same content) or removed. A pattern that matches no file is
 * logged once until it matches again, and named by ps_filesd_warning.
 */
bool ps_filesd_refresh(ps_filesd_t *f, bool force, uint64_t *failures);
/** The refresh interval (the smallest of the file_sd_configs), ns. */
int64_t ps_filesd_interval(const ps_filesd_t *f);
/** Number of files currently matched. */
uint32_t ps_filesd_count(const ps_filesd_t *f);
/** File i: its path (returned) and its groups. Valid until the next refresh. */
const char *ps_filesd_file(const ps_filesd_t *f, uint32_t i, const ps_target_group_t **groups, uint32_t *ngroups);
/** A message naming the patterns that match no file (or "" when all match). Valid until the next refresh. */
const char *ps_filesd_warning(const ps_filesd_t *f);
/** How many patterns matched no file at the last refresh. */
uint32_t ps_filesd_unmatched(const ps_filesd_t *f);
/** Adds inotify watches (fd from inotify_init1) for the directories of the patterns. */
void ps_filesd_watch(const ps_filesd_t *f, int inotify_fd);

#endif
