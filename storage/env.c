/*
 * env.c - opening the LMDB environment: the schema table (every named database with its flags,
 * opened once at start-up in one transaction), schema version check, next-id counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <time.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "internal.h"

static const struct {
    const char *name;
    unsigned flags;
} schema[DB_COUNT] = {
    [DB_INFO] = {"info", 0},
    [DB_SYM] = {"sym", 0},
    [DB_SYM_HASH] = {"sym_hash", MDB_DUPSORT | MDB_DUPFIXED},
    [DB_TREE] = {"tree", 0},
    [DB_NODES] = {"nodes", 0},
    [DB_SERIES] = {"series", 0},
    [DB_SERIES_HASH] = {"series_hash", MDB_DUPSORT | MDB_DUPFIXED},
    [DB_POSTINGS] = {"postings", MDB_DUPSORT | MDB_DUPFIXED},
    [DB_HEAD] = {"head", 0},
    [DB_CHUNKS] = {"chunks", 0},
    [DB_FCHUNKS] = {"fchunks", 0},
    [DB_FHEAD] = {"fhead", 0},
    [DB_META] = {"meta", 0},
    [DB_FPREFIX] = {"fprefix", 0},
    [DB_FWDLOG] = {"fwdlog", 0},
    [DB_FWDCURSOR] = {"fwdcursor", 0},
    [DB_SPANS] = {"spans", 0},
    [DB_UUIDS] = {"uuids", 0},
    [DB_SPANPARTS] = {"spanparts", 0},
    [DB_ADHOC] = {"adhoc", 0},
    [DB_UNSYM] = {"unsym", 0},
    [DB_ROLLUPS] = {"rollups", 0},
    [DB_LTIMES] = {"ltimes", 0},
    [DB_FLOG] = {"flog", 0},
    [DB_PTIMES] = {"ptimes", 0},
};

/* Databases created at any open when missing, without a schema version of their own: they hold
 * no data the others need (docs/FORMAT.md "Versioning"). A read-only open of a directory that
 * lacks one reads it as empty. */
static bool added_at_open(int i)
{
    return i == DB_ADHOC;
}


/* Bytes of LMDB's free list: pages retention and compaction freed, reused before the file grows. */
static uint64_t free_bytes(ps_store_t *s)
{
    ps_txn_t t;
    MDB_stat st;
    mdb_env_stat(s->env, &st);
    if (ps_txn_begin(&t, s, PS_TXN_READ, NULL, "starting read transaction") != 0)
        return 0;
    uint64_t n = ps_txn_free_pages(&t);
    ps_txn_abort(&t);
    return n * st.ms_psize;
}

int ps_store_space_check(ps_store_t *s, ps_err_t *err)
{
    /* without the reserve, writes go on only into pages retention freed inside the file */
    if (s->opts.disk_reserve > 0 && !s->reserve_held && !ps_store_reserve_take(s) && free_bytes(s) < s->opts.disk_reserve) {
        struct statvfs vfs;
        uint64_t avail = statvfs(s->dir, &vfs) == 0 ? (uint64_t)vfs.f_bavail * vfs.f_frsize : 0;
        char mp[4096];
        ps_store_mount_point(s->dir, mp, sizeof(mp));
        return ps_err_set(err, PS_ENOSPACE,
                          "disk full: %llu bytes free on %s (data directory %s); writes resume once %llu bytes are "
                          "free there or in the store (retention) (%s)",
                          (unsigned long long)avail, mp, s->dir, (unsigned long long)s->opts.disk_reserve,
                          ps_setting_name(PS_SETTING_DISK_RESERVE));
    }
    if (s->map_headroom == 0)
        return 0;
    MDB_envinfo info;
    MDB_stat st;
    mdb_env_info(s->env, &info);
    mdb_env_stat(s->env, &st);
    uint64_t high = ((uint64_t)info.me_last_pgno + 1) * st.ms_psize;
    if (high < s->opts.map_size)
        return 0;
    /* the file's high-water mark reached the limit: what is in use is that minus the free list */
    uint64_t used = high - free_bytes(s);
    /* a batch needs room: stop a little before the limit (1/64 of it) */
    if (used + s->opts.map_size / 64 < s->opts.map_size)
        return 0;
    return ps_err_set(err, PS_ENOSPACE,
                      "%llu of %llu bytes in use: the store reached its maximum size (%s)",
                      (unsigned long long)used, (unsigned long long)s->opts.map_size,
                      ps_setting_name(PS_SETTING_STORE_MAX_SIZE));
}

void ps_store_opts_default(ps_store_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->dir = "./data";
    o->map_size = 256ull << 30;
    o->retention_ns = 15ll * 24 * 3600 * 1000000000ll;
    o->compact_max_profiles = 120;
    o->compact_window_ns = 2ll * 3600 * 1000000000ll;
    o->cache_bytes = 512ull << 20;
    o->series_cache_max = 65536;
}

/* The counters as committed in txn's snapshot (all 1 in a new store). */
int ps_store_next_read(ps_txn_t *txn, ps_next_ids_t *n, ps_err_t *err)
{
    MDB_val v;
    if (!ps_txn_get(txn, DB_INFO, "next", 4, &v, "reading id counters")) {
        if (txn->ret)
            return ps_txn_error(txn, err);
        for (int i = 0; i < SYM_KINDS; i++)
            n->sym[i] = 1;
        n->node = 1;
        n->series = 1;
        return 0;
    }
    if (v.mv_size != 8 * (SYM_KINDS - 1 + 2))
        return ps_err_set(err, PS_ECORRUPT, "id counters record has %zu bytes", v.mv_size);
    const uint8_t *p = v.mv_data;
    n->sym[0] = 1;
    for (int i = 1; i < SYM_KINDS; i++, p += 8)
        n->sym[i] = ps_get_be64(p);
    n->node = ps_get_be64(p);
    n->series = ps_get_be64(p + 8);
    return 0;
}

/* The upgrade to schema 13: every series so far is in the series index (W = the last id given). */
static int series_w_upgrade(ps_txn_t *txn, ps_err_t *err)
{
    ps_next_ids_t n;
    int ret = ps_store_next_read(txn, &n, err);
    return ret != 0 ? ret : ps_series_w_write(txn, n.series - 1, err);
}

/* The writer's counters of txn's snapshot, read only to refuse a store whose records of them are
 * damaged at its opening, as the writer (writer.c) would later. */
static int counters_check(ps_txn_t *txn, ps_err_t *err)
{
    ps_next_ids_t n;
    uint64_t fwd;
    int ret = ps_store_next_read(txn, &n, err);
    return ret != 0 ? ret : ps_forward_log_load_next(txn, &fwd, err);
}

/* read_only: the databases of this schema version, opened in a read transaction (whose commit
 * keeps the handles); nothing created or upgraded */
static int open_read_only(ps_store_t *s, ps_err_t *err)
{
    ps_txn_t t;
    int rc, ret = ps_txn_begin(&t, s, PS_TXN_READ, err, "starting read transaction");
    if (ret)
        return ret;
    for (int i = 0; i < DB_COUNT && ret == 0; i++)
        if ((rc = mdb_dbi_open(t.txn, schema[i].name, schema[i].flags, &s->dbi[i])) != 0 &&
            !(rc == MDB_NOTFOUND && added_at_open(i) && (s->absent |= 1u << i))) {
            ret = rc == MDB_NOTFOUND ? ps_err_set(err, PS_EVERSION,
                                                  "data directory %s has no database %s: not a store of schema version %d",
                                                  s->dir, schema[i].name, PS_SCHEMA_VERSION)
                                     : ps_lmdb_err(err, rc, "opening database");
        }
    MDB_val v;
    if (ret == 0 && (!ps_txn_get(&t, DB_INFO, "schema", 6, &v, "reading the schema") || v.mv_size != 4 ||
                     ps_get_be32(v.mv_data) != PS_SCHEMA_VERSION))
        ret = ps_err_set(err, PS_EVERSION, "data directory %s: not a store of schema version %d (open it once with "
                         "profstore to upgrade it)", s->dir, PS_SCHEMA_VERSION);
    if (ret == 0)
        ret = counters_check(&t, err);
    if (ret == 0 && (rc = mdb_txn_commit(t.txn)) != 0) /* a read transaction's commit keeps the handles */
        return ps_lmdb_err(err, rc, "reading the schema");
    if (ret)
        ps_txn_abort(&t);
    return ret;
}

int ps_store_open(const ps_store_opts_t *o, ps_store_t **out, ps_err_t *err)
{
    int rc, ret = 0;
    ps_txn_t t = {0};
    ps_store_t *s = ps_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->pend_mu, NULL);
    s->opts = *o;
    s->dir = ps_xstrndup(o->dir, strlen(o->dir));
    s->opts.dir = s->dir;

    /* room past --storage.max-size that only retention and compaction use: 1/8 of it, 1 MiB to 1 GiB */
    s->map_headroom = o->map_size / 8 < (1u << 20) ? (1u << 20) : o->map_size / 8 > (1ull << 30) ? (1ull << 30) : o->map_size / 8;
    if (!o->read_only && mkdir(o->dir, 0755) != 0 && errno != EEXIST) {
        ret = ps_err_set(err, PS_ESTORAGE, "cannot create data directory %s: %s", o->dir, strerror(errno));
        goto Exit;
    }
    ps_store_reserve_fit(s);
    if ((rc = mdb_env_create(&s->env)) != 0 || (rc = mdb_env_set_maxdbs(s->env, DB_COUNT + 2)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, o->map_size + s->map_headroom)) != 0 || (rc = mdb_env_set_maxreaders(s->env, 512)) != 0) {
        ret = ps_lmdb_err(err, rc, "creating LMDB environment");
        goto Exit;
    }
    /* a file LMDB would map and then fault on (SIGBUS past its end) is refused before */
    if ((ret = ps_store_check_file(o->dir, err)) != 0)
        goto Exit;
    /* MDB_NOTLS: read transactions are per request, not per thread. MDB_NOMETASYNC: a commit
     * syncs its pages, then writes its meta page without a sync; ps_txn_commit (txn.c) syncs it
     * after, or the writer's next commit does (ps_store_writer_defer_sync) */
    unsigned flags = MDB_NOTLS | MDB_NOMETASYNC | (o->nosync ? MDB_NOSYNC : 0) | (o->read_only ? MDB_RDONLY : 0);
    if ((rc = mdb_env_open(s->env, o->dir, flags, 0644)) != 0) {
        ret = ps_lmdb_err(err, rc, "opening LMDB environment");
        ps_err_prefix(err, "data directory %s", o->dir);
        goto Exit;
    }
    int stale = 0;
    mdb_reader_check(s->env, &stale);
    if (o->read_only) {
        ret = open_read_only(s, err);
        goto Exit;
    }
    if ((ret = ps_txn_begin(&t, s, PS_TXN_WRITE, err, "starting transaction")) != 0)
        goto Exit;
    /* schema version: refuse anything we would misread */
    if ((rc = mdb_dbi_open(t.txn, schema[DB_INFO].name, MDB_CREATE | schema[DB_INFO].flags, &s->dbi[DB_INFO])) != 0) {
        ret = ps_lmdb_err(err, rc, "opening database info");
        goto Exit;
    }
    MDB_val v;
    if (ps_txn_get(&t, DB_INFO, "schema", 6, &v, "reading schema version")) {
        if (v.mv_size != 4) {
            ret = ps_err_set(err, PS_ECORRUPT, "data directory %s: schema record is damaged", o->dir);
            goto Exit;
        }
        uint32_t ver = ps_get_be32(v.mv_data);
        if (ver >= 1 && ver <= 14) {
            /* version 1 holds profile series only, version 2 float series too (fhead records of
             * encoding 2 only), version 3 split open chunks (fhead 04, fprefix), version 4 dense
             * closed chunks (06, 07), version 5 the span index and profile ids, version 6 the
             * counts of frames without symbols (empty for the profiles stored before), version 7
             * packed profile chunks (encoding 8; it reads the encoding 1 chunks as they are), all in
             * records version 8 reads as they are (8 adds the rollups, made for the windows
             * compacted from then on: merges read the profiles of a window without one), and
             * version 8 all in records version 9 reads as they are (9 adds chunks of encoding 9,
             * references to a twin chunk, made for the chunks compacted from then on), and version 9
             * all in records version 10 reads as they are (10 adds the label index's times, built
             * below from every series' data), and version 10 all in records version 11 reads as
             * they are (11 adds padded float heads, fhead 0a, which the writer writes from then
             * on), and version 11 all in records version 12 reads as they are (12 adds the float
             * sample log, flog, empty until the writer logs), and version 12 all in records version
             * 13 reads as they are (13 writes a new series' hash index entry later: its watermark,
             * info "seriesw", is written below as the last series id, all indexed), and version 13
             * (or 14) all in records version 15 reads as they are (14 writes a new series' postings
             * late too: a 13 store's series past W have theirs already, which readers and the merge
             * take as they are; 15 adds the profile series' label times, ptimes, built below from
             * every profile series' data): the upgrade is
             * the new databases (created below),
             * what they hold, and the version number, in this transaction.
             * An older profstore refuses the directory afterwards. */
            uint8_t b[4] = {0, 0, 0, PS_SCHEMA_VERSION};
            if (!ps_txn_put(&t, DB_INFO, "schema", 6, b, 4, 0, "upgrading the schema version")) {
                ret = ps_txn_error(&t, err);
                ps_err_prefix(err, "version %u to %d", ver, PS_SCHEMA_VERSION);
                goto Exit;
            }
            s->upgraded_from = (int)ver;
            ver = PS_SCHEMA_VERSION;
        }
        if (ver != PS_SCHEMA_VERSION) {
            ret = ps_err_set(err, PS_EVERSION,
                             "data directory %s has schema version %u, this profstore reads version %d only; %s",
                             o->dir, ver, PS_SCHEMA_VERSION,
                             ver > PS_SCHEMA_VERSION ? "use a newer profstore" : "no migration exists yet");
            goto Exit;
        }
    } else if (t.ret == 0) {
        uint8_t b[4] = {0, 0, 0, PS_SCHEMA_VERSION};
        /* a new store: compaction makes every rollup, none to backfill (unless made without) */
        if (!ps_txn_put(&t, DB_INFO, "schema", 6, b, 4, 0, "writing schema version") ||
            ps_series_w_write(&t, 0, err) != 0 || (!o->no_rollups && !ps_rollup_backfill_done(&t))) {
            ret = ps_txn_error(&t, err);
            goto Exit;
        }
    } else {
        ret = ps_txn_error(&t, err);
        goto Exit;
    }
    for (int i = 1; i < DB_COUNT; i++) {
        if ((rc = mdb_dbi_open(t.txn, schema[i].name, MDB_CREATE | schema[i].flags, &s->dbi[i])) != 0) {
            ret = ps_lmdb_err(err, rc, "opening database");
            ps_err_prefix(err, "%s", schema[i].name);
            goto Exit;
        }
    }
    if ((ret = counters_check(&t, err)) != 0)
        goto Exit;
    if (s->upgraded_from != 0 && s->upgraded_from < 13 && (ret = series_w_upgrade(&t, err)) != 0)
        goto Exit;
    if (s->upgraded_from != 0 && s->upgraded_from < 10 && (ret = ps_ltimes_build(s, &t, err)) != 0)
        goto Exit;
    if (s->upgraded_from != 0 && s->upgraded_from < 15 && (ret = ps_ptimes_build(s, &t, err)) != 0)
        goto Exit;
    if ((ret = ps_txn_commit(&t, err, "committing schema")) != 0)
        goto Exit;
    if (!ps_store_reserve_take(s)) /* a full disk: writes wait (ps_store_space_check), reads go on */
        ps_err_clear(err);
Exit:
    ps_txn_abort(&t);
    if (ret) {
        ps_store_close(s);
        return ret;
    }
    *out = s;
    return 0;
}

int64_t ps_store_future_grace(const ps_store_t *s)
{
    return s->opts.future_grace_ns;
}

void ps_store_close(ps_store_t *s)
{
    if (s == NULL)
        return;
    ps_pend_posts_unshare(s);
    pthread_mutex_destroy(&s->pend_mu);
    if (s->env)
        mdb_env_close(s->env);
    free(s->dir);
    free(s);
}

int ps_store_stats(ps_store_t *s, ps_store_stats_t *st, ps_err_t *err)
{
    memset(st, 0, sizeof(*st));
    ps_txn_t txn;
    int ret = ps_txn_begin(&txn, s, PS_TXN_READ, err, "starting read transaction");
    if (ret)
        return ret;
    MDB_stat ms;
    uint64_t pages = 0;
    MDB_stat es;
    mdb_env_stat(s->env, &es);
    for (int i = 0; i < DB_COUNT; i++) {
        if (ps_txn_stat(&txn, i, &ms)) {
            pages += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
            switch (i) {
            case DB_SERIES: st->series = ms.ms_entries; break;
            case DB_HEAD: st->head_records = ms.ms_entries; break;
            case DB_CHUNKS: st->chunks = ms.ms_entries; break;
            case DB_NODES: st->nodes = ms.ms_entries; break;
            case DB_FHEAD: st->float_heads = ms.ms_entries; break;
            case DB_FCHUNKS: st->float_chunks = ms.ms_entries; break;
            case DB_META: st->metadata = ms.ms_entries; break;
            case DB_FLOG: st->float_log_records = ms.ms_entries; break;
            case DB_ROLLUPS:
                st->rollups = ms.ms_entries;
                st->rollup_bytes = (ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages) * (uint64_t)ms.ms_psize;
                break;
            }
        }
    }
    /* the symbol counts from the committed counters of this snapshot: the writer's (writer.c)
     * run ahead of what is committed while it writes */
    ps_next_ids_t next;
    ret = ps_store_next_read(&txn, &next, err);
    ps_txn_abort(&txn);
    if (ret)
        return ret;
    st->strings = next.sym[SYM_STRING] - 1;
    st->functions = next.sym[SYM_FUNCTION] - 1;
    st->locations = next.sym[SYM_LOCATION] - 1;
    st->mappings = next.sym[SYM_MAPPING] - 1;
    st->used_bytes = pages * es.ms_psize;
    char path[4096];
    snprintf(path, sizeof(path), "%s/data.mdb", s->dir);
    struct stat sb;
    if (stat(path, &sb) == 0)
        st->file_bytes = (uint64_t)sb.st_blocks * 512;
    return 0;
}
