/*
 * debuginfo.h - the uploaded debug files (Pyroscope's debuginfo.v1alpha1.DebuginfoService, as
 * Grafana Alloy's pyroscope.ebpf and profilecli upload them): kept as files the symbolizer reads
 * as it reads --symbols.dir, <dir>/.build-id/<2 hex digits>/<the other digits>.debug, each with
 * its ObjectMetadata beside it (<...>.meta, proto/debuginfo.h, binary protobuf).
 *
 * The protocol, Pyroscope's (pkg/debuginfo/store.go):
 *   1. ShouldInitiateUpload(file): yes for a build id never seen (or whose upload started more
 *      than PS_DEBUGINFO_STALE_NS ago and never finished); no, with the reason's words, when its
 *      file is here or its upload is in progress. A yes makes the build id pending.
 *   2. POST .../Upload/<gnu_build_id> with the file as the body: only for a pending build id.
 *      The file is written to <dir>/tmp, checked (an ELF file whose headers libelf reads and
 *      whose sections lie within it, with a GNU build id note equal to the upload's:
 *      ps_symbols_elf_check), fsynced with its metadata, renamed into .build-id/ab/ and the
 *      directory fsynced: an answered upload is durable and the symbolizer sees it at once.
 *   3. UploadFinished(gnu_build_id): the build id is no longer pending.
 * Pending build ids live in memory only (at most PS_DEBUGINFO_PENDING_MAX): after a restart an
 * unfinished upload starts again from step 1. A file placed here by hand (no .meta) is listed
 * with the metadata its path and stat give.
 *
 * Limits: a file larger than max_file_bytes is refused (PS_ETOOBIG); the files kept (.debug and
 * .meta, counted at open and kept up to date) plus the uploads being written may not pass
 * max_bytes (PS_ENOSPACE), nor the disk (ENOSPC: PS_ENOSPACE). All calls are thread safe (one
 * mutex over the state; files are written outside it).
 */
#ifndef PS_DEBUGINFO_H
#define PS_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "proto/debuginfo.h"

#define PS_DEBUGINFO_PENDING_MAX 1024 /* build ids between ShouldInitiateUpload and UploadFinished */
#define PS_DEBUGINFO_STALE_NS (7 * 60 * 1000000000LL) /* Pyroscope's: upload-stale-period 5m + 2m */
#define PS_DEBUGINFO_STRING_MAX 4096 /* bytes of each FileMetadata string */

/* ShouldInitiateUploadResponse.reason, Pyroscope's words (Alloy compares the in-progress one) */
#define PS_DEBUGINFO_REASON_FIRST_TIME "First time we see this Build ID, therefore please upload!"
#define PS_DEBUGINFO_REASON_STALE \
    "A previous upload was started but not finished and is now stale, so it can be retried."
#define PS_DEBUGINFO_REASON_IN_PROGRESS \
    "A previous upload is still in-progress and not stale yet (only stale uploads can be retried)."
#define PS_DEBUGINFO_REASON_EXISTS \
    "Debuginfo already exists and is not marked as invalid, therefore no new upload is needed."
#define PS_DEBUGINFO_REASON_EMPTY "Empty GNU build ID, therefore no upload is needed."

typedef struct ps_debuginfo ps_debuginfo_t;

typedef struct ps_debuginfo_opts {
    uint64_t max_file_bytes; /* the largest file taken */
    uint64_t max_bytes;      /* all the files kept, with their metadata */
    bool nosync;             /* no fsync (benchmarks only) */
} ps_debuginfo_opts_t;

/** Opens (creating what is missing) the store of debug files under dir: empties dir/tmp, counts
 *  the files of dir/.build-id, removes a .meta whose .debug is gone. */
int ps_debuginfo_open(const char *dir, const ps_debuginfo_opts_t *o, ps_debuginfo_t **out, ps_err_t *err);
/** Closes it; NULL is a no-op. */
void ps_debuginfo_free(ps_debuginfo_t *d);
/** The directory the symbolizer reads (the dir of ps_debuginfo_open). */
const char *ps_debuginfo_dir(const ps_debuginfo_t *d);

/** ShouldInitiateUpload (file NULL: absent) at now_ns: *should and *reason (one of the reasons
 *  above, static). PS_EINVAL for a request Pyroscope calls invalid ("invalid request: ..."),
 *  PS_ENOSPACE when the files kept already fill max_bytes, PS_EOVERLOAD when
 *  PS_DEBUGINFO_PENDING_MAX uploads are pending and none is stale. */
int ps_debuginfo_should_upload(ps_debuginfo_t *d, const ps_di_file_t *file, int64_t now_ns, bool *should,
                               const char **reason, ps_err_t *err);

/** The body of Upload/<build_id> (len bytes at data), kept durably at now_ns. PS_EINVAL: a build
 *  id not 2 to 40 hex digits, a file that is not a whole ELF file or whose build id differs;
 *  PS_ENOTFOUND: no pending upload of the build id; PS_ECONFLICT: another request is writing
 *  it; PS_ETOOBIG: over max_file_bytes; PS_ENOSPACE: over max_bytes or the disk full;
 *  PS_ESTORAGE: a file system error. A refused upload leaves the build id pending. */
int ps_debuginfo_upload(ps_debuginfo_t *d, const char *build_id, const void *data, size_t len, int64_t now_ns,
                        ps_err_t *err);

/** UploadFinished. PS_EINVAL: a bad build id; PS_ENOTFOUND: neither pending nor kept;
 *  PS_ECONFLICT: kept and not pending ("upload is not in uploading state"), or pending and not
 *  uploaded yet. */
int ps_debuginfo_finished(ps_debuginfo_t *d, const char *build_id, ps_err_t *err);

/** ListDebuginfo: the pending uploads (STATE_UPLOADING) and the files kept (STATE_UPLOADED), in
 *  build id order; *v and its strings from arena. */
int ps_debuginfo_list(ps_debuginfo_t *d, ps_arena_t *arena, ps_di_object_t **v, size_t *n, ps_err_t *err);

/** DeleteDebuginfo: removes the file and its metadata (none: no error) and forgets a pending
 *  upload. PS_EINVAL: a bad build id; PS_ECONFLICT: being written now. */
int ps_debuginfo_delete(ps_debuginfo_t *d, const char *build_id, ps_err_t *err);

/** The bytes and files kept (metadata included in bytes), uploads pending. */
void ps_debuginfo_usage(ps_debuginfo_t *d, uint64_t *bytes, uint64_t *files, uint64_t *pending);

#endif
