/*
 * check.c - a damaged store is refused or reported, never a crash.
 *
 * LMDB maps data.mdb and trusts it: a page past the end of a file cut short (a partial copy or
 * restore) is a SIGBUS on first touch, and a damaged page header a SIGSEGV or an LMDB assertion.
 * Two defences:
 *
 * - At open (ps_store_check_file, datafile.c, before mdb_env_open maps anything): data.mdb must
 *   reach the end of the last page its newer meta page names (or what it lacks be free pages), and
 *   not be empty beside the files of a store.
 *
 * - On demand (--storage.check, ps_store_check_dir): every record is decoded as the reads decode
 *   it: each chunk and head record of every profile series in full, each float series' samples,
 *   each series record, each label times record, each float log record; what does not decode is reported, one line each, and the walk goes on.
 *   The walk runs in a child process, so that damage in LMDB's own pages (which LMDB may meet with
 *   a SIGSEGV or an assertion) is reported as such instead of ending the check.
 */
#include <errno.h>
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
#include "float_log.h"
#include "internal.h"

#define DONE_AT 4000 /* in the page shared with the check's child: set once it has reported */

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
        /* the phase names the record being read before LMDB reads it: a damaged page may crash
         * the first get of a walk (it named the last series of the walk before) */
        uint64_t n = 1;
        phase(c, "record %" PRIu64 " of database %s", n, name);
        for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
            ps_arena_reset(&c->arena);
            fn(c, &cur.k, &cur.v);
            phase(c, "record %" PRIu64 " of database %s", ++n, name);
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
    MDB_val ref;
    if (ps_chunk_ref_lookup(&c->r->txn, v->mv_data, v->mv_size, &ref, &err) != 0 ||
        ps_chunk_decode_ref(v->mv_data, v->mv_size, ref.mv_data, ref.mv_size, &c->arena, &d, &err) != 0)
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

/* an ad hoc profile: its id's characters and the value's header (the file itself is the ingest
 * room's to decode, as each Get does) */
static void check_adhoc(check_t *c, const MDB_val *k, const MDB_val *v)
{
    const char *id = k->mv_data;
    bool ok = k->mv_size > 0 && k->mv_size <= PS_ADHOC_ID_MAX;
    for (size_t i = 0; ok && i < k->mv_size; i++)
        ok = (id[i] >= 'a' && id[i] <= 'z') || (id[i] >= 'A' && id[i] <= 'Z') || (id[i] >= '0' && id[i] <= '9') ||
             id[i] == '.' || id[i] == '-' || id[i] == '_';
    if (!ok)
        damage(c, "adhoc: a key of %zu bytes that is not an id", k->mv_size);
    else if (v->mv_size < 9 || ((const uint8_t *)v->mv_data)[0] != 0x01)
        damage(c, "ad hoc profile %.*s: a record of %zu bytes%s", (int)k->mv_size, id, v->mv_size,
               v->mv_size < 9 ? " (less than 9)" : ", not of encoding 01");
}

/* the counts of frames without symbols of an hour and build id */
static void check_unsym(check_t *c, const MDB_val *k, const MDB_val *v)
{
    if (k->mv_size != 12) {
        damage(c, "unsym: a key of %zu bytes (12 expected)", k->mv_size);
        return;
    }
    ps_unsym_rec_t r;
    ps_err_t err = {0};
    if (ps_unsym_rec_decode(v->mv_data, v->mv_size, &r, &err) != 0)
        damage(c, "unsym: hour %u, build id string %" PRIu64 ": %s", ps_get_be32(k->mv_data),
               ps_get_be64((const uint8_t *)k->mv_data + 4), err.msg);
}

/* a rollup: its key names a series, a level and a window start; its record decodes in that window
 * (a damaged one is read around by merges, but it is damage all the same) */
static void check_rollup(check_t *c, const MDB_val *k, const MDB_val *v)
{
    const uint8_t *kb = k->mv_data;
    if (k->mv_size != 17 || kb[8] >= PS_ROLLUP_LEVELS) {
        damage(c, "rollups: a key of %zu bytes%s", k->mv_size, k->mv_size == 17 ? " with an unknown level" : " (17 expected)");
        return;
    }
    uint64_t sid = ps_get_be64(kb);
    int64_t ws = ps_ts_unkey(ps_get_be64(kb + 9)), len = ps_rollup_window[kb[8]];
    phase(c, "rollup of series %" PRIu64 " from %" PRId64, sid, ws);
    ps_rollup_t r;
    ps_err_t err = {0};
    if (ws % len != 0)
        damage(c, "series %" PRIu64 ": a rollup at %" PRId64 ", not the start of a window of %" PRId64 " ns", sid, ws, len);
    else if (ps_rollup_decode(v->mv_data, v->mv_size, ws, len, &c->arena, &r, &err) != 0)
        damage(c, "series %" PRIu64 ": rollup from %" PRId64 ": %s", sid, ws, err.msg);
}

/* the label index's times of a name or a pair (ltimes.c) */
static void check_ltimes(check_t *c, const MDB_val *k, const MDB_val *v)
{
    int64_t first, last;
    if (k->mv_size > 0 && ps_ltimes_rec_decode(v, &first, &last))
        return;
    const char *p = k->mv_data, *z = memchr(p, 0, k->mv_size);
    int n = z ? (int)(z - p) : (int)k->mv_size;
    damage(c, "label times of %.*s%s%.*s: damaged record", n, p, z ? "=" : "", z ? (int)(k->mv_size - (size_t)n - 1) : 0,
           z ? z + 1 : "");
}

/* the profile series' label times (ltimes.c, schema 15): ltimes' records, and per profile type (key
 * 0x00 hash) its record (0x01 the type, or 0x02) and its own */
static void check_ptimes(check_t *c, const MDB_val *k, const MDB_val *v)
{
    const uint8_t *p = k->mv_data, *b = v->mv_data;
    if (k->mv_size == 0 || p[0] != 0) {
        check_ltimes(c, k, v);
    } else if (k->mv_size < 9) {
        damage(c, "ptimes: a type key of %zu bytes", k->mv_size);
    } else if (k->mv_size == 9) {
        if (!(v->mv_size == 1 && b[0] == 2) && !(v->mv_size >= 2 && b[0] == 1))
            damage(c, "ptimes: type %016" PRIx64 ": damaged type record", ps_get_be64(p + 1));
    } else {
        MDB_val rest = {k->mv_size - 9, (void *)(p + 9)};
        check_ltimes(c, &rest, v);
    }
}

/* a float log record (float_log.c): the series it damages fail their reads too (counted there) */
static void check_flog(check_t *c, const MDB_val *k, const MDB_val *v)
{
    if (k->mv_size != 8) {
        damage(c, "flog: a key of %zu bytes (8 expected)", k->mv_size);
        return;
    }
    uint64_t key = ps_get_be64(k->mv_data), from, to;
    phase(c, "float log record %" PRIu64, key);
    ps_buf_t b = PS_BUF_INIT;
    ps_err_t err = {0};
    if (ps_flog_decode(v->mv_data, v->mv_size, &b, &from, &to, &err) != 0)
        damage(c, "flog: record %" PRIu64 " (series %" PRIu64 " to %" PRIu64 "): %s", key, from, to, err.msg);
    ps_buf_dispose(&b);
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
    if (!(s->absent & (1u << DB_ADHOC)))
        walk(&c, DB_ADHOC, "adhoc", check_adhoc);
    walk(&c, DB_UNSYM, "unsym", check_unsym);
    walk(&c, DB_ROLLUPS, "rollups", check_rollup);
    walk(&c, DB_LTIMES, "ltimes", check_ltimes);
    walk(&c, DB_PTIMES, "ptimes", check_ptimes);
    walk(&c, DB_FLOG, "flog", check_flog);
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
