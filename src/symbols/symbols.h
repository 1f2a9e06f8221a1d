/*
 * symbols.h - native frames symbolized when read: a location stored with an address and a mapping
 * (file name, GNU build id) but no lines gets its functions, files, lines and inlined frames from
 * the debug file of its build id, read through elfutils' libdwfl (never a DWARF reader of ours).
 *
 * Debug files are looked up in a local directory laid out as /usr/lib/debug/.build-id/:
 * <dir>/.build-id/<first 2 hex digits>/<the other hex digits>.debug (a full ELF with its symbols,
 * or the file `objcopy --only-keep-debug` makes).
 *
 * Address translation (as pprof's elfexec.GetBase and Parca's symbolizer): the stored address is
 * a process virtual address; its offset in the file is address - memory_start + file_offset; the
 * ELF address is that offset moved into the PT_LOAD segment whose file range holds it
 * (offset - p_offset + p_vaddr). An ET_EXEC file (not position independent) is mapped at its own
 * addresses: the stored address is the ELF address. A mapping with no range (start and limit 0)
 * gives the ELF address as is.
 *
 * Results are cached: build id + ELF address → frames (at most PS_SYMBOLS_CACHE_ENTRIES
 * addresses; when full the cache is emptied), and up to PS_SYMBOLS_MODULES open debug files. A
 * build id with no file, or a file libdw cannot read, is tried again once the file's (mtime, size)
 * change, so a profile read before its debug file was placed shows symbols once it is there.
 * All calls are thread safe (one mutex: libdwfl handles are not).
 */
#ifndef PS_SYMBOLS_H
#define PS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"
#include "core/profile.h"

#define PS_SYMBOLS_CACHE_ENTRIES (1u << 20) /* addresses in the frames cache */
#define PS_SYMBOLS_MODULES 256              /* debug files held open */
#define PS_SYMBOLS_FRAMES_MAX 64            /* inlined frames kept per address */

typedef struct ps_symbols ps_symbols_t;

/** One frame of an address, innermost first. */
typedef struct ps_symbol_frame {
    const char *function; /* linkage name when DWARF has one (as eu-addr2line -f prints it), or "" */
    const char *file;     /* the source file as the line table names it, or "" */
    int64_t line;         /* 0 when unknown */
    int64_t column;       /* 0 when unknown */
} ps_symbol_frame_t;

/** A symbolizer over the debug files under dir (copied). */
ps_symbols_t *ps_symbols_new(const char *dir);
/** Frees it; NULL is a no-op. */
void ps_symbols_free(ps_symbols_t *s);

/** The frames of address in the mapping (build id in hex, case-insensitive; its file name is only
 *  for messages): *n frames in out (at most cap), innermost first. Returns 0 with *n = 0 when
 *  there are no symbols (no debug file, a damaged one, or an address it does not cover). The
 *  strings are copied into arena. */
int ps_symbols_lookup(ps_symbols_t *s, const char *build_id, uint64_t memory_start, uint64_t memory_limit,
                      uint64_t file_offset, uint64_t address, ps_symbol_frame_t *out, size_t cap, size_t *n,
                      ps_arena_t *arena);

/** The frames of a debug file given by path (no cache, a fresh libdwfl handle), strings in arena:
 *  what the fuzz target drives. */
int ps_symbols_lookup_file(const char *path, uint64_t memory_start, uint64_t memory_limit, uint64_t file_offset,
                           uint64_t address, ps_symbol_frame_t *out, size_t cap, size_t *n, ps_arena_t *arena);

/** Gives each location of p without lines whose mapping has a build id the frames of its
 *  address (functions and strings added to p, memory from arena); the mappings of those that got
 *  some are flagged as having functions, file names, lines and inlined frames. Locations with
 *  no symbols are left as they are. The store's symbolize hook (ps_store_set_symbolizer). */
void ps_symbols_profile(void *s, ps_profile_t *p, ps_arena_t *arena);

/** Where the debug file of a build id comes from (ps_symbols_has); 0: none. */
enum {
    PS_SYMBOLS_FROM_DIR = 1,        /* --symbols.dir */
    PS_SYMBOLS_FROM_UPLOAD = 2,     /* uploaded (reserved) */
    PS_SYMBOLS_FROM_DEBUGINFOD = 3, /* fetched from a debuginfod server (reserved) */
};

/** Whether a usable debug file of build_id (hex, case-insensitive) is known now: its source
 *  (PS_SYMBOLS_FROM_*), or 0. Opens the file as a lookup would (and keeps it open); a build id
 *  with no usable file is looked at again at most once a second, as for lookups. Never fetches. */
int ps_symbols_has(ps_symbols_t *s, const char *build_id);

/** Counters: lookups answered from the cache, lookups that read a debug file, debug files opened,
 *  build ids with no usable debug file (each time one is tried). */
void ps_symbols_stats(ps_symbols_t *s, uint64_t *hits, uint64_t *misses, uint64_t *opened, uint64_t *missing);

#endif
