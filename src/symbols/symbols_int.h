/*
 * symbols_int.h - what symbols.c asks of debuginfod.c (fetching debug files from debuginfod
 * servers in the background); not public API: symbols.h's ps_symbols_set_debuginfod is.
 */
#ifndef PS_SYMBOLS_INT_H
#define PS_SYMBOLS_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "symbols.h"

typedef struct ps_dbgd ps_dbgd_t;

/** The fetcher: its cache directory made, the process environment libdebuginfod reads set, its
 *  workers started. NULL with err when a URL or the directory is not usable. */
ps_dbgd_t *ps_dbgd_new(const ps_symbols_debuginfod_t *o, ps_err_t *err);
/** Stops the workers (a fetch under way is abandoned within a second) and frees; NULL: no-op. */
void ps_dbgd_free(ps_dbgd_t *d);

/** How many fetched files have landed so far (0 for NULL): a build id tried before the count
 *  moved is worth trying again. */
uint64_t ps_dbgd_landed(ps_dbgd_t *d);

/** The fetched debug file of a normalised build id: true with its path in path (cap bytes) when
 *  it has landed; else false, and a fetch is queued unless one is queued or under way, the build
 *  id failed a short while ago, or the queue is full. Never waits on the network; NULL: false. */
bool ps_dbgd_find(ps_dbgd_t *d, const char *bid, char *path, size_t cap);

void ps_dbgd_stats(ps_dbgd_t *d, ps_symbols_debuginfod_stats_t *st);
void ps_dbgd_metrics(ps_dbgd_t *d, ps_buf_t *b);

#endif
