/*
 * env.c - opening the LMDB environment: the schema table (every named database with its flags,
 * opened once at start-up in one transaction), schema version check, next-id counters.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <time.h>

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
};


int ps_lmdb_err(ps_err_t *err, int rc, const char *what)
{
    int code = PS_ESTORAGE;
    if (rc == MDB_MAP_FULL || rc == ENOSPC)
        code = PS_ENOSPACE;
    else if (rc == MDB_CORRUPTED || rc == MDB_PAGE_NOTFOUND || rc == MDB_INVALID)
        code = PS_ECORRUPT;
    else if (rc == MDB_VERSION_MISMATCH)
        code = PS_EVERSION;
    else if (rc == ENOMEM)
        code = PS_ENOMEM;
    if (rc == MDB_MAP_FULL)
        return ps_err_set(err, code, "%s: the store reached its maximum size (--storage.max-size)", what);
    return ps_err_set(err, code, "%s: %s", what, mdb_strerror(rc));
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
}

static void next_encode(const ps_next_ids_t *n, ps_buf_t *b)
{
    for (int k = 1; k < SYM_KINDS; k++)
        ps_put_be64(b, n->sym[k]);
    ps_put_be64(b, n->node);
    ps_put_be64(b, n->series);
}

int ps_store_save_next(ps_store_t *s, MDB_txn *txn, ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    next_encode(&s->next, &b);
    MDB_val k = ps_mval("next", 4), v = ps_mval(b.data, b.len);
    int rc = mdb_put(txn, s->dbi[DB_INFO], &k, &v, 0);
    ps_buf_dispose(&b);
    return rc ? ps_lmdb_err(err, rc, "saving id counters") : 0;
}

/* The counters as committed in txn's snapshot (all 1 in a new store). */
static int next_read(ps_store_t *s, MDB_txn *txn, ps_next_ids_t *n, ps_err_t *err)
{
    MDB_val k = ps_mval("next", 4), v;
    int rc = mdb_get(txn, s->dbi[DB_INFO], &k, &v);
    if (rc == MDB_NOTFOUND) {
        for (int i = 0; i < SYM_KINDS; i++)
            n->sym[i] = 1;
        n->node = 1;
        n->series = 1;
        return 0;
    }
    if (rc)
        return ps_lmdb_err(err, rc, "reading id counters");
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

int ps_store_load_next(ps_store_t *s, MDB_txn *txn, ps_err_t *err)
{
    return next_read(s, txn, &s->next, err);
}

int ps_store_open(const ps_store_opts_t *o, ps_store_t **out, ps_err_t *err)
{
    int rc, ret = 0;
    MDB_txn *txn = NULL;
    ps_store_t *s = ps_xcalloc(1, sizeof(*s));
    s->opts = *o;
    s->dir = ps_xstrndup(o->dir, strlen(o->dir));
    s->opts.dir = s->dir;
    s->opened_wall = ps_time_now();
    ps_hmap_init(&s->sym_cache);
    ps_hmap_init(&s->tree_cache);
    ps_hmap_init(&s->stack_cache);
    ps_hmap_init(&s->series_cache);
    ps_hmap_init(&s->state_index);
    ps_hmap_init(&s->append_wall);
    ps_hmap_init(&s->fstate_index);

    if (mkdir(o->dir, 0755) != 0 && errno != EEXIST) {
        ret = ps_err_set(err, PS_ESTORAGE, "cannot create data directory %s: %s", o->dir, strerror(errno));
        goto Exit;
    }
    if ((rc = mdb_env_create(&s->env)) != 0 || (rc = mdb_env_set_maxdbs(s->env, DB_COUNT + 2)) != 0 ||
        (rc = mdb_env_set_mapsize(s->env, o->map_size)) != 0 || (rc = mdb_env_set_maxreaders(s->env, 512)) != 0) {
        ret = ps_lmdb_err(err, rc, "creating LMDB environment");
        goto Exit;
    }
    /* MDB_NOTLS: read transactions are per request, not per thread. */
    unsigned flags = MDB_NOTLS | (o->nosync ? MDB_NOSYNC : 0);
    if ((rc = mdb_env_open(s->env, o->dir, flags, 0644)) != 0) {
        ret = ps_lmdb_err(err, rc, "opening LMDB environment");
        ps_err_prefix(err, "data directory %s", o->dir);
        goto Exit;
    }
    int stale = 0;
    mdb_reader_check(s->env, &stale);
    if ((rc = mdb_txn_begin(s->env, NULL, 0, &txn)) != 0) {
        ret = ps_lmdb_err(err, rc, "starting transaction");
        goto Exit;
    }
    /* schema version: refuse anything we would misread */
    MDB_dbi info;
    if ((rc = mdb_dbi_open(txn, schema[DB_INFO].name, MDB_CREATE | schema[DB_INFO].flags, &info)) != 0) {
        ret = ps_lmdb_err(err, rc, "opening database info");
        goto Exit;
    }
    MDB_val k = ps_mval("schema", 6), v;
    rc = mdb_get(txn, info, &k, &v);
    if (rc == 0) {
        if (v.mv_size != 4) {
            ret = ps_err_set(err, PS_ECORRUPT, "data directory %s: schema record is damaged", o->dir);
            goto Exit;
        }
        uint32_t ver = ps_get_be32(v.mv_data);
        if (ver == 1 || ver == 2) {
            /* version 1 holds profile series only, version 2 float series too (fhead records of
             * encoding 2 only), all in records version 3 reads as they are: the upgrade is the new
             * databases (created below) and the version number, in this transaction. An older
             * profstore refuses the directory afterwards. */
            uint8_t b[4] = {0, 0, 0, PS_SCHEMA_VERSION};
            MDB_val nv = ps_mval(b, 4);
            if ((rc = mdb_put(txn, info, &k, &nv, 0)) != 0) {
                ret = ps_lmdb_err(err, rc, "upgrading the schema version");
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
    } else if (rc == MDB_NOTFOUND) {
        uint8_t b[4] = {0, 0, 0, PS_SCHEMA_VERSION};
        v = ps_mval(b, 4);
        if ((rc = mdb_put(txn, info, &k, &v, 0)) != 0) {
            ret = ps_lmdb_err(err, rc, "writing schema version");
            goto Exit;
        }
    } else {
        ret = ps_lmdb_err(err, rc, "reading schema version");
        goto Exit;
    }
    s->dbi[DB_INFO] = info;
    for (int i = 1; i < DB_COUNT; i++) {
        if ((rc = mdb_dbi_open(txn, schema[i].name, MDB_CREATE | schema[i].flags, &s->dbi[i])) != 0) {
            ret = ps_lmdb_err(err, rc, "opening database");
            ps_err_prefix(err, "%s", schema[i].name);
            goto Exit;
        }
    }
    if ((ret = ps_store_load_next(s, txn, err)) != 0)
        goto Exit;
    rc = mdb_txn_commit(txn);
    txn = NULL;
    if (rc) {
        ret = ps_lmdb_err(err, rc, "committing schema");
        goto Exit;
    }
Exit:
    if (txn)
        mdb_txn_abort(txn);
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
    if (s->env)
        mdb_env_close(s->env);
    ps_hmap_dispose(&s->sym_cache);
    ps_hmap_dispose(&s->tree_cache);
    ps_hmap_dispose(&s->stack_cache);
    ps_hmap_dispose(&s->series_cache);
    ps_hmap_dispose(&s->state_index);
    for (size_t i = 0; i < s->nstates; i++)
        free(s->states[i]);
    free(s->states);
    free(s->due);
    ps_fstate_clear(s);
    ps_hmap_dispose(&s->fstate_index);
    free(s->fstates);
    free(s->fdirty);
    ps_buf_dispose(&s->sym_key);
    ps_hmap_dispose(&s->append_wall);
    free(s->dir);
    free(s);
}

int ps_store_stats(ps_store_t *s, ps_store_stats_t *st, ps_err_t *err)
{
    memset(st, 0, sizeof(*st));
    MDB_txn *txn;
    int rc = mdb_txn_begin(s->env, NULL, MDB_RDONLY, &txn);
    if (rc)
        return ps_lmdb_err(err, rc, "starting read transaction");
    MDB_stat ms;
    uint64_t pages = 0;
    MDB_stat es;
    mdb_env_stat(s->env, &es);
    for (int i = 0; i < DB_COUNT; i++) {
        if (mdb_stat(txn, s->dbi[i], &ms) == 0) {
            pages += ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
            switch (i) {
            case DB_SERIES: st->series = ms.ms_entries; break;
            case DB_HEAD: st->head_records = ms.ms_entries; break;
            case DB_CHUNKS: st->chunks = ms.ms_entries; break;
            case DB_NODES: st->nodes = ms.ms_entries; break;
            case DB_FHEAD: st->float_heads = ms.ms_entries; break;
            case DB_FCHUNKS: st->float_chunks = ms.ms_entries; break;
            case DB_META: st->metadata = ms.ms_entries; break;
            }
        }
    }
    /* the symbol counts from the committed counters of this snapshot: s->next belongs to the
     * writer thread (and runs ahead of what is committed while it writes) */
    ps_next_ids_t next;
    int ret = next_read(s, txn, &next, err);
    mdb_txn_abort(txn);
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
