/*
 * symbols.h - native frames symbolized when read: a location stored with an address and a mapping
 * (file name, GNU build id) but no lines gets its functions, files, lines and inlined frames from
 * the debug file of its build id, read through elfutils' libdwfl (never a DWARF reader of ours).
 *
 * Debug files are looked up in local directories laid out as /usr/lib/debug/.build-id/:
 * <dir>/.build-id/<first 2 hex digits>/<the other hex digits>.debug (a full ELF with its symbols,
 * or the file `objcopy --only-keep-debug` makes); the first directory that has the file wins
 * (main.c: --symbols.dir, then the uploaded debug files of src/debuginfo/).
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
 *
 * debuginfod (ps_symbols_set_debuginfod): a build id with no file in the directory is fetched from
 * debuginfod servers (GET <url>/buildid/<build id>/debuginfo) through elfutils' libdebuginfod, in
 * background threads: the lookup that finds no file queues the fetch and answers "no symbols" at
 * once, so a slow or dead server never holds up a lookup, a read or a write. At most
 * PS_SYMBOLS_DEBUGINFOD_WORKERS fetches run at once and PS_SYMBOLS_DEBUGINFOD_QUEUE wait (a lookup
 * finding the queue full queues nothing: a later one will). A fetched file is accepted only when
 * it is an ELF file whose GNU build id note is the one asked for, of at most max_bytes; it is then
 * moved to <cache_dir>/.build-id/ab/cdef….debug (the directory's layout) and the next lookup of
 * its build id reads it, so a profile read before its symbols arrived shows them once they have.
 * A build id no server has is not asked again for not_found_ns, one whose fetch failed (error,
 * timeout, a refused file) for error_ns. The accepted files stay (and are found after a restart).
 */
#ifndef PS_SYMBOLS_H
#define PS_SYMBOLS_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "core/profile.h"

#define PS_SYMBOLS_CACHE_ENTRIES (1u << 20) /* addresses in the frames cache */
#define PS_SYMBOLS_MODULES 256              /* debug files held open */
#define PS_SYMBOLS_FRAMES_MAX 64            /* inlined frames kept per address */

typedef struct ps_symbols ps_symbols_t;

/** One frame of an address, innermost first. */
typedef struct ps_symbol_frame {
    const char *function; /* linkage name when DWARF has one (as eu-addr2line -f prints it), or "";
                             a profile's function system_name */
    const char *file;     /* the source file as the line table names it, or "" */
    int64_t line;         /* 0 when unknown */
    int64_t column;       /* 0 when unknown */
    const char *name;     /* what it is shown by, a profile's function name: ps_symbols_demangle of
                             function, or function */
} ps_symbol_frame_t;

/** The name a C++ linkage name is shown by, as `go tool pprof` shows it by default and Parca stores
 *  it: demangled (libstdc++'s __cxa_demangle) and simplified, with no parameters, template
 *  arguments, return type or clone suffix ("_ZNK3geo3VecIlEltERKS1_" → "geo::Vec::operator<"), in
 *  arena; NULL when name is not a mangled C++ name (C functions keep theirs) or is longer than
 *  4096 bytes. demangle.c has the rules. */
char *ps_symbols_demangle(const char *name, ps_arena_t *arena);

/** A symbolizer over the debug files under dirs (ndirs of them, in order; copied). */
ps_symbols_t *ps_symbols_new(const char *const *dirs, size_t ndirs);
/** Frees it; NULL is a no-op. */
void ps_symbols_free(ps_symbols_t *s);

#define PS_SYMBOLS_DEBUGINFOD_WORKERS 2                    /* fetches at once */
#define PS_SYMBOLS_DEBUGINFOD_QUEUE 256                     /* fetches waiting */
#define PS_SYMBOLS_DEBUGINFOD_MAX_BYTES (2ull << 30)        /* a larger debug file is refused */
#define PS_SYMBOLS_DEBUGINFOD_NOT_FOUND_NS (600ll * 1000000000) /* as libdebuginfod's cache_miss_s */
#define PS_SYMBOLS_DEBUGINFOD_ERROR_NS (60ll * 1000000000)

/** Where debug files are fetched from (borrowed for the call). */
typedef struct ps_symbols_debuginfod {
    const char *urls;      /* base URLs separated by spaces, as DEBUGINFOD_URLS: http://, https://, file:// */
    const char *cache_dir; /* where fetched files land (made if missing) */
    int64_t timeout_ns;    /* one fetch, whole; ended within a second after it */
    uint64_t max_bytes;    /* 0: PS_SYMBOLS_DEBUGINFOD_MAX_BYTES */
    int64_t not_found_ns;  /* 0: PS_SYMBOLS_DEBUGINFOD_NOT_FOUND_NS */
    int64_t error_ns;      /* 0: PS_SYMBOLS_DEBUGINFOD_ERROR_NS */
} ps_symbols_debuginfod_t;

/** Fetches the debug files of build ids the directory lacks from debuginfod servers (above).
 *  Once per process, before the threads that read the environment start: libdebuginfod 0.188
 *  takes its servers, cache and limits from environment variables only, which this sets
 *  (DEBUGINFOD_URLS, _CACHE_PATH, _TIMEOUT, _MAXTIME, _RETRY_LIMIT; _MAXSIZE unset). 0,
 *  PS_EINVAL with err (no URL, or one that is not http://, https:// or file://), or PS_ESTORAGE
 *  (a cache directory that cannot be made). */
int ps_symbols_set_debuginfod(ps_symbols_t *s, const ps_symbols_debuginfod_t *o, ps_err_t *err);

/** debuginfod counters (all 0 without it). */
typedef struct ps_symbols_debuginfod_stats {
    uint64_t fetches;   /* finished, whatever the outcome */
    uint64_t ok;        /* files accepted */
    uint64_t not_found; /* no server has it (404) */
    uint64_t timeouts;  /* past the timeout */
    uint64_t errors;    /* could not connect, other HTTP errors, the cache directory */
    uint64_t refused;   /* a file that is not ELF, has another build id, or is too large */
    uint64_t bytes;     /* of the accepted files */
    uint64_t queue_full; /* lookups that found the queue full */
    uint64_t pending;   /* queued or under way now */
} ps_symbols_debuginfod_stats_t;

void ps_symbols_debuginfod_stats(ps_symbols_t *s, ps_symbols_debuginfod_stats_t *st);
/** /metrics: the debuginfod families (profstore_debuginfod_*); nothing without it. */
void ps_symbols_metrics(ps_symbols_t *s, ps_buf_t *b);

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

/** Whether the file open at fd is an ELF file whole enough to read (libelf parses its headers;
 *  every section's bytes lie within the file) with a GNU build id note:
 *  0 with the build id in lowercase hex in hex (cap bytes with the NUL); else PS_EINVAL and err
 *  says what ("not an ELF file ...", "truncated ELF file: section 29 (.debug_str) ends at byte
 *  ..., the file has ... bytes", "the ELF file has no GNU build ID note ..."). The file is only
 *  read (elfcheck.c). */
int ps_symbols_elf_check(int fd, char *hex, size_t cap, ps_err_t *err);

/** ps_symbols_has: the file was fetched from a debuginfod server. */
#define PS_SYMBOLS_DEBUGINFOD (-1)

/** Whether a usable debug file of build_id (hex, case-insensitive) is known now, and where: 1 +
 *  the index of its directory (ps_symbols_new's order), PS_SYMBOLS_DEBUGINFOD, or 0. Opens the
 *  file as a lookup would (and keeps it open), and like a lookup queues a debuginfod fetch for a
 *  build id no directory has (never waiting for it); a build id with no usable file is looked at
 *  again at most once a second, as for lookups. */
int ps_symbols_has(ps_symbols_t *s, const char *build_id);

/** Counters: lookups answered from the cache, lookups that read a debug file, debug files opened,
 *  build ids with no usable debug file (each time one is tried). */
void ps_symbols_stats(ps_symbols_t *s, uint64_t *hits, uint64_t *misses, uint64_t *opened, uint64_t *missing);

#endif
