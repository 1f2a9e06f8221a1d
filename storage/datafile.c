/*
 * datafile.c - at open, before mdb_env_open maps anything, data.mdb is checked to be a whole
 * store (check.c says why: LMDB maps the file and trusts it; a page past the end of a file cut
 * short is a SIGBUS on first touch).
 *
 * The two meta pages are read with pread. The newer one (larger txnid, as LMDB picks) names the
 * last page in use; the file must reach its end: size >= (last_pg + 1) * page size. LMDB may leave
 * the tail unwritten when its last pages are free (pages freed in the transaction that allocated
 * them are never written), so a file short of that is looked at once more, in a child process (a
 * SIGBUS there harms nobody): it opens the store read-only and reads the free list; the file is
 * refused unless every missing page is free. A zero-length data.mdb beside lock.mdb or
 * space.reserve (a store whose data file was lost) is refused too: LMDB would start an empty store
 * on it.
 *
 * LMDB 0.9's meta page (mdb.c, struct MDB_meta behind a 16-byte page header), little-endian on
 * the platforms we build for; offsets from the start of the page:
 *   16 magic u32 (0xBEEFC0DE)  20 version u32 (1)  40 page size u32 (free DB's md_pad)
 *   136 last page u64           144 txnid u64
 * Meta page 0 is at offset 0, meta page 1 at offset page size.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "internal.h"

#define META_MAGIC 0xBEEFC0DEu
#define META_OFF_MAGIC 16
#define META_OFF_VERSION 20
#define META_OFF_PSIZE 40
#define META_OFF_LAST 136
#define META_OFF_TXNID 144
#define META_END 152

static uint32_t le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
    return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

static bool exists_in(const char *dir, const char *name)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    return access(path, F_OK) == 0;
}

/* Opens dir's LMDB environment read-only and nothing else (no named database): 0 or LMDB's error */
static int env_open_ro(const char *dir, MDB_env **env)
{
    int rc = mdb_env_create(env);
    if (rc == 0 && (rc = mdb_env_open(*env, dir, MDB_RDONLY | MDB_NOTLS, 0644)) != 0) {
        mdb_env_close(*env);
        *env = NULL;
    }
    return rc;
}

/* the pages first..last seen on the free list */
typedef struct tail {
    uint64_t first, last;
    uint8_t *seen;
} tail_t;

static bool mark_tail(void *ctx, const uint8_t *pages, size_t n)
{
    tail_t *tl = ctx;
    for (size_t i = 0; i < n; i++) {
        size_t pg;
        memcpy(&pg, pages + i * sizeof(size_t), sizeof(pg));
        if (pg >= tl->first && pg <= tl->last)
            tl->seen[pg - tl->first] = 1;
    }
    return true;
}

/* In a child: opens the store read-only and says (exit 0) whether every page from first to last
 * is on LMDB's free list. Exit 1: one is not; a signal: a page LMDB needed is past the end. */
static int tail_is_free(const char *dir, uint64_t first, uint64_t last)
{
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        size_t n = (size_t)(last - first + 1);
        uint8_t *seen = calloc(n, 1);
        ps_store_t cs = {0}; /* just the environment: no named database is opened */
        cs.dir = (char *)dir;
        ps_txn_t txn;
        if (seen == NULL || env_open_ro(dir, &cs.env) != 0 || ps_txn_begin(&txn, &cs, PS_TXN_READ, NULL, "") != 0)
            _exit(3);
        tail_t tl = {first, last, seen};
        if (!ps_txn_free_lists(&txn, mark_tail, &tl))
            _exit(txn.ret != 0 ? 3 : 1);
        for (size_t i = 0; i < n; i++)
            if (!seen[i])
                _exit(1);
        _exit(0);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return -1;
    return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 1 : 0;
}

int ps_store_check_file(const char *dir, ps_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof(path), "%s/data.mdb", dir);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0; /* none yet: LMDB creates it (or says why not) */
    struct stat sb;
    int ret = 0;
    if (fstat(fd, &sb) != 0) {
        ret = ps_err_set(err, PS_ESTORAGE, "data directory %s: cannot stat data.mdb: %s", dir, strerror(errno));
        goto Exit;
    }
    uint64_t size = (uint64_t)sb.st_size;
    if (size == 0) {
        const char *beside = exists_in(dir, "lock.mdb") ? "lock.mdb" : exists_in(dir, "space.reserve") ? "space.reserve" : NULL;
        if (beside != NULL)
            ret = ps_err_set(err, PS_ECORRUPT,
                             "data directory %s: data.mdb is empty (0 bytes) beside %s: the store's data file was "
                             "lost or cut to nothing; restore it, or remove the directory's files to start an empty store",
                             dir, beside);
        goto Exit;
    }
    uint8_t m0[META_END], m1[META_END];
    if (pread(fd, m0, sizeof(m0), 0) != (ssize_t)sizeof(m0) || le32(m0 + META_OFF_MAGIC) != META_MAGIC) {
        ret = ps_err_set(err, PS_ECORRUPT,
                         "data directory %s: data.mdb (%" PRIu64 " bytes) does not start with an LMDB meta page: it is "
                         "not a profstore store, or its start is damaged",
                         dir, size);
        goto Exit;
    }
    uint32_t psize = le32(m0 + META_OFF_PSIZE);
    if (psize < 512 || psize > 65536 || (psize & (psize - 1)) != 0) {
        ret = ps_err_set(err, PS_ECORRUPT, "data directory %s: data.mdb's first meta page is damaged (page size %" PRIu32 ")",
                         dir, psize);
        goto Exit;
    }
    if (size < (uint64_t)2 * psize || pread(fd, m1, sizeof(m1), psize) != (ssize_t)sizeof(m1)) {
        ret = ps_err_set(err, PS_ECORRUPT,
                         "data directory %s: data.mdb is %" PRIu64 " bytes, shorter than LMDB's two meta pages (%" PRIu64
                         " bytes): the file was cut short (a partial copy or restore?); restore the whole file",
                         dir, size, (uint64_t)2 * psize);
        goto Exit;
    }
    const uint8_t *m = m0;
    if (le32(m1 + META_OFF_MAGIC) == META_MAGIC && le64(m1 + META_OFF_TXNID) > le64(m0 + META_OFF_TXNID))
        m = m1;
    uint64_t last = le64(m + META_OFF_LAST);
    if (last >= UINT64_MAX / psize) {
        ret = ps_err_set(err, PS_ECORRUPT, "data directory %s: data.mdb's meta page is damaged (last page %" PRIu64 ")",
                         dir, last);
        goto Exit;
    }
    uint64_t need = (last + 1) * psize;
    if (size >= need)
        goto Exit;
    uint64_t have = size / psize; /* whole pages present: 0 .. have-1 */
    int free_tail = tail_is_free(dir, have, last);
    if (free_tail != 1)
        ret = ps_err_set(err, PS_ECORRUPT,
                         "data directory %s: data.mdb is %" PRIu64 " bytes, but its last page (%" PRIu64 ", of %" PRIu32
                         " bytes) ends at %" PRIu64 ": the file was cut short (a partial copy or restore?); restore the "
                         "whole file, or check it with %s",
                         dir, size, last, psize, need, ps_setting_name(PS_SETTING_STORE_CHECK));
Exit:
    close(fd);
    return ret;
}
