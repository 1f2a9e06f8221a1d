/*
 * check.c - a damaged store is refused or reported, never a crash.
 *
 * LMDB maps data.mdb and trusts it: a page past the end of a file cut short (a partial copy or
 * restore) is a SIGBUS on first touch, and a damaged page header a SIGSEGV or an LMDB assertion.
 * Two defences:
 *
 * - At open (ps_store_check_file, before mdb_env_open maps anything): the two meta pages are read
 *   with pread. The newer one (larger txnid, as LMDB picks) names the last page in use; the file
 *   must reach its end: size >= (last_pg + 1) * page size. LMDB may leave the tail unwritten when
 *   its last pages are free (pages freed in the transaction that allocated them are never
 *   written), so a file short of that is looked at once more, in a child process (a SIGBUS there
 *   harms nobody): it opens the store read-only and reads the free list; the file is refused
 *   unless every missing page is free. A zero-length data.mdb beside lock.mdb or space.reserve
 *   (a store whose data file was lost) is refused too: LMDB would start an empty store on it.
 *
 * - On demand (--storage.check, ps_store_check_dir): every record is decoded as the reads decode
 *   it: each chunk and head record of every profile series in full, each float series' samples,
 *   each series record; what does not decode is reported, one line each, and the walk goes on.
 *   The walk runs in a child process, so that damage in LMDB's own pages (which LMDB may meet with
 *   a SIGSEGV or an assertion) is reported as such instead of ending the check.
 *
 * LMDB 0.9's meta page (mdb.c, struct MDB_meta behind a 16-byte page header), little-endian on
 * the platforms we build for; offsets from the start of the page:
 *   16 magic u32 (0xBEEFC0DE)  20 version u32 (1)  40 page size u32 (free DB's md_pad)
 *   136 last page u64           144 txnid u64
 * Meta page 0 is at offset 0, meta page 1 at offset page size.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "chunk.h"
#include "internal.h"

#define META_MAGIC 0xBEEFC0DEu
#define META_OFF_MAGIC 16
#define META_OFF_VERSION 20
#define META_OFF_PSIZE 40
#define META_OFF_LAST 136
#define META_OFF_TXNID 144
#define META_END 152
#define DONE_AT 4000 /* in the page shared with the check's child: set once it has reported */

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
        ps_cur_t cur;
        if (seen == NULL || ps_store_env_open_ro(dir, &cs.env) != 0 ||
            ps_txn_begin(&txn, &cs, PS_TXN_READ, NULL, "") != 0 || !ps_cur_open(&cur, &txn, -1 /* free list */, ""))
            _exit(3);
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
            MDB_val v = cur.v;
            /* an IDL: count, then that many page numbers (size_t each) */
            if (v.mv_size < sizeof(size_t))
                _exit(1);
            size_t cnt;
            memcpy(&cnt, v.mv_data, sizeof(cnt));
            if (cnt > v.mv_size / sizeof(size_t) - 1)
                _exit(1);
            for (size_t i = 1; i <= cnt; i++) {
                size_t pg;
                memcpy(&pg, (const uint8_t *)v.mv_data + i * sizeof(size_t), sizeof(pg));
                if (pg >= first && pg <= last)
                    seen[pg - first] = 1;
            }
        }
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

/* ---- --storage.check: every record decoded ---- */

typedef struct check {
    ps_store_t *s;
    ps_reader_t *r;
    ps_arena_t arena;
    ps_check_stats_t *st;
    void (*on_damage)(void *ctx, const char *msg);
    void *ctx;
    char *phase; /* shared with the parent: what the walk is doing */
} check_t;

static void damage(check_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define MAX_LISTED 100 /* damaged records listed; the rest only counted */

static void damage(check_t *c, const char *fmt, ...)
{
    if (++c->st->damaged > MAX_LISTED)
        return;
    char msg[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    c->on_damage(c->ctx, msg);
}

static void phase(check_t *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void phase(check_t *c, const char *fmt, ...)
{
    if (c->phase == NULL)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->phase, 256, fmt, ap);
    va_end(ap);
}

static int on_samples(void *ctx, const ps_float_sample_t *s, size_t n)
{
    (void)s;
    ((check_t *)ctx)->st->samples += n;
    return 0;
}

/* Walks one database, calling fn for each record; an LMDB error ends the walk of that database
 * (reported) and the next walks get a fresh snapshot (LMDB fails a transaction after an error). */
static int walk(check_t *c, int db, const char *name, void (*fn)(check_t *c, const MDB_val *k, const MDB_val *v))
{
    if (c->r == NULL)
        return 0;
    char what[128];
    snprintf(what, sizeof(what), "database %s: LMDB's pages are damaged, the rest of it unread", name);
    ps_cur_t cur;
    if (ps_cur_open(&cur, &c->r->txn, db, what)) {
        uint64_t n = 0;
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
            ps_arena_reset(&c->arena);
            phase(c, "record %" PRIu64 " of database %s", ++n, name);
            fn(c, &cur.k, &cur.v);
        }
        ps_cur_close(&cur);
    }
    ps_err_t err = {0};
    if (ps_txn_error(&c->r->txn, &err) != 0) {
        damage(c, "%s", err.msg);
        ps_reader_end(c->r);
        c->r = NULL;
        if (ps_reader_begin(c->s, &c->r, &err) == 0)
            ps_reader_unclamp(c->r);
        else
            damage(c, "cannot read on: %s", err.msg);
    }
    return 0;
}

static void check_series(check_t *c, const MDB_val *k, const MDB_val *v)
{
    if (k->mv_size != 8) {
        damage(c, "series: a key of %zu bytes (8 expected)", k->mv_size);
        return;
    }
    uint64_t sid = ps_get_be64(k->mv_data);
    phase(c, "series %" PRIu64, sid);
    ps_series_rec_t rec;
    if (ps_series_rec_decode(v->mv_data, v->mv_size, &rec) != 0) {
        damage(c, "series %" PRIu64 ": damaged series record (%zu bytes)", sid, v->mv_size);
        return;
    }
    c->st->series++;
    if (rec.kind != PS_SERIES_FLOAT)
        return; /* its chunks and head records are checked one by one below */
    c->st->float_series++;
    ps_err_t err = {0};
    if (ps_reader_samples(c->r, sid, INT64_MIN, INT64_MAX, on_samples, c, &err) != 0)
        damage(c, "%s", err.msg);
}

static void check_chunk(check_t *c, const MDB_val *k, const MDB_val *v)
{
    if (k->mv_size != 16) {
        damage(c, "chunks: a key of %zu bytes (16 expected)", k->mv_size);
        return;
    }
    uint64_t sid = ps_get_be64(k->mv_data);
    int64_t max_ts = ps_ts_unkey(ps_get_be64((const uint8_t *)k->mv_data + 8));
    phase(c, "chunk of series %" PRIu64 " up to %" PRId64, sid, max_ts);
    ps_chunk_data_t d;
    ps_err_t err = {0};
    c->st->chunks++;
    if (ps_chunk_decode(v->mv_data, v->mv_size, &c->arena, &d, &err) != 0)
        damage(c, "series %" PRIu64 ": damaged chunk (up to %" PRId64 ", %zu bytes): %s", sid, max_ts, v->mv_size, err.msg);
    else if (d.n == 0 || d.ts[d.n - 1] != max_ts)
        damage(c, "series %" PRIu64 ": chunk keyed up to %" PRId64 " ends at %" PRId64, sid, max_ts,
               d.n ? d.ts[d.n - 1] : INT64_MIN);
    else
        c->st->profiles += d.n;
}

static void check_head(check_t *c, const MDB_val *k, const MDB_val *v)
{
    if (k->mv_size != 16) {
        damage(c, "head: a key of %zu bytes (16 expected)", k->mv_size);
        return;
    }
    uint64_t sid = ps_get_be64(k->mv_data);
    int64_t ts = ps_ts_unkey(ps_get_be64((const uint8_t *)k->mv_data + 8));
    phase(c, "head record of series %" PRIu64 " at %" PRId64, sid, ts);
    ps_stored_profile_t sp;
    c->st->heads++;
    if (ps_head_decode(v->mv_data, v->mv_size, &c->arena, &sp) != 0)
        damage(c, "series %" PRIu64 ": damaged head record at %" PRId64 " (%zu bytes)", sid, ts, v->mv_size);
    else
        c->st->profiles++;
}

int ps_store_check(ps_store_t *s, void (*on_damage)(void *ctx, const char *msg), void *ctx, ps_check_stats_t *st,
                   char *phase_buf, ps_err_t *err)
{
    memset(st, 0, sizeof(*st));
    check_t c = {.s = s, .arena = PS_ARENA_INIT, .st = st, .on_damage = on_damage, .ctx = ctx, .phase = phase_buf};
    int ret = ps_reader_begin(s, &c.r, err);
    if (ret)
        return ret;
    ps_reader_unclamp(c.r);
    walk(&c, DB_SERIES, "series", check_series);
    walk(&c, DB_CHUNKS, "chunks", check_chunk);
    walk(&c, DB_HEAD, "head", check_head);
    ps_reader_end(c.r); /* NULL: a no-op */
    ps_arena_dispose(&c.arena);
    return 0;
}

static void print_damage(void *ctx, const char *msg)
{
    fprintf(ctx, "damaged: %s\n", msg);
    fflush(ctx);
}

int ps_store_check_dir(const ps_store_opts_t *o, FILE *out)
{
    /* the phase, shared with the child, names where a crash happened */
    char *shared = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    if (shared == MAP_FAILED) {
        fprintf(out, "profstore: cannot check %s: mmap: %s\n", o->dir, strerror(errno));
        return 2;
    }
    snprintf(shared, 256, "opening the store");
    fflush(out);
    pid_t pid = fork();
    if (pid < 0) {
        fprintf(out, "profstore: cannot check %s: fork: %s\n", o->dir, strerror(errno));
        return 2;
    }
    if (pid == 0) {
        ps_store_t *s;
        ps_err_t err = {0};
        ps_check_stats_t st;
        ps_store_opts_t ro = *o;
        ro.read_only = true;
        ro.disk_reserve = 0;
        if (ps_store_open(&ro, &s, &err) != 0) {
            fprintf(out, "profstore: %s\n", err.msg);
            fflush(out);
            shared[DONE_AT] = 1;
            _exit(err.code == PS_ECORRUPT || err.code == PS_EVERSION ? 1 : 2);
        }
        if (ps_store_check(s, print_damage, out, &st, shared, &err) != 0) {
            fprintf(out, "profstore: cannot check %s: %s\n", o->dir, err.msg);
            fflush(out);
            shared[DONE_AT] = 1;
            _exit(2);
        }
        fprintf(out,
                "%s: %" PRIu64 " series (%" PRIu64 " float), %" PRIu64 " chunks, %" PRIu64 " head records, %" PRIu64
                " profiles, %" PRIu64 " float samples checked: %s\n",
                o->dir, st.series, st.float_series, st.chunks, st.heads, st.profiles, st.samples,
                st.damaged ? "DAMAGED" : "no damage found");
        if (st.damaged)
            fprintf(out, "%" PRIu64 " damaged record%s%s; reads that meet one answer 500 naming it\n", st.damaged,
                    st.damaged == 1 ? "" : "s", st.damaged > MAX_LISTED ? " (the first 100 listed)" : "");
        fflush(out);
        shared[DONE_AT] = 1;
        ps_store_close(s);
        _exit(st.damaged ? 1 : 0);
    }
    int wst, rc;
    while (waitpid(pid, &wst, 0) < 0)
        if (errno != EINTR) {
            munmap(shared, 4096);
            return 2;
        }
    if (!shared[DONE_AT]) {
        /* ended without its report: a signal (or, in a sanitizer build, the sanitizer's exit) */
        char how[64];
        if (WIFSIGNALED(wst))
            snprintf(how, sizeof(how), "signal %d (%s)", WTERMSIG(wst), strsignal(WTERMSIG(wst)));
        else
            snprintf(how, sizeof(how), "exit status %d", WIFEXITED(wst) ? WEXITSTATUS(wst) : -1);
        fprintf(out, "damaged: LMDB's own pages: the check ended on %s at %s\n%s: DAMAGED\n", how, shared, o->dir);
        rc = 1;
    } else {
        rc = WIFEXITED(wst) ? WEXITSTATUS(wst) : 2;
    }
    munmap(shared, 4096);
    return rc;
}
