/*
 * unsym.c - the counts of frames stored without symbols, per build id (schema 6; docs/FORMAT.md
 * "Frames without symbols"): what GET /api/v1/status/symbols lists.
 *
 *   unsym  hour(4 BE) build_id(8 BE) -> 01 record
 *
 * hour = ts_key(ts) / 3600 s (as the span index), build_id the string id of the mapping's build
 * id as given. A location counts when it has no lines and its mapping has a build id; a sample
 * counts once per build id among its frames, when one of the profile's stored sample types gives
 * it a nonzero value. The record:
 *
 *   01                         encoding
 *   profiles <uvarint>         profiles with such samples stored in this hour
 *   samples <uvarint>          those samples
 *   first_ts <varint>          ns, the oldest of those profiles
 *   last_ts <varint>           ns, the newest
 *   nfiles <uvarint>           <= PS_UNSYM_FILES_MAX, then nfiles string ids <uvarint>: the file
 *                              names of the mappings (the first ones met; 0 is a mapping without one)
 *   ntypes <uvarint>           <= PS_UNSYM_TYPES_MAX, then ntypes x (type <uvarint>: string id of
 *                              the profile type id, the series' __name__; total <varint>: the sum
 *                              of those samples' values of that type); a type past the cap is not kept
 *
 * The record's codec is unsymrec.c (core helpers only, for its fuzz target).
 *
 * Written in the profile's write transaction (a batch sums its profiles in memory and writes each
 * (hour, build id) record once, ps_unsym_flush); retention drops the hours ended before its cutoff,
 * as it drops the span index, so the counts are those of the hours still kept.
 */
#include <stdlib.h>
#include <string.h>

#include "core/sat.h"
#include "internal.h"

#define NONE UINT32_MAX

/* One (hour, build id) of the current write: the key and what the write adds to its record. */
typedef struct acc {
    uint8_t key[12];
    ps_unsym_rec_t r;
} acc_t;

struct ps_unsym_acc {
    ps_hmap_t index; /* key -> index in a */
    acc_t *a;
    size_t n, cap;
};

void ps_unsym_reset(ps_store_writer_t *w)
{
    if (w->unsym == NULL)
        return;
    ps_hmap_clear(&w->unsym->index);
    w->unsym->n = 0;
}

void ps_unsym_free(ps_store_writer_t *w)
{
    if (w->unsym == NULL)
        return;
    ps_hmap_dispose(&w->unsym->index);
    free(w->unsym->a);
    free(w->unsym);
    w->unsym = NULL;
}

static ps_unsym_rec_t *acc_get(ps_store_writer_t *w, uint32_t hour, uint64_t bid)
{
    if (w->unsym == NULL) {
        w->unsym = ps_xcalloc(1, sizeof(*w->unsym));
        ps_hmap_init(&w->unsym->index);
    }
    struct ps_unsym_acc *u = w->unsym;
    uint8_t k[12];
    k[0] = (uint8_t)(hour >> 24);
    k[1] = (uint8_t)(hour >> 16);
    k[2] = (uint8_t)(hour >> 8);
    k[3] = (uint8_t)hour;
    ps_enc_be64(k + 4, bid);
    uint64_t i;
    if (ps_hmap_get(&u->index, k, 12, &i))
        return &u->a[i].r;
    if (u->n == u->cap) {
        u->cap = u->cap ? 2 * u->cap : 16;
        u->a = ps_xrealloc(u->a, u->cap * sizeof(acc_t));
    }
    i = u->n++;
    memcpy(u->a[i].key, k, 12);
    memset(&u->a[i].r, 0, sizeof(ps_unsym_rec_t));
    ps_hmap_put(&u->index, k, 12, i);
    return &u->a[i].r;
}

/* A build id of the profile: its string id, the mappings' file names, what its samples add. */
typedef struct group {
    uint64_t bid;
    uint32_t stamp; /* the last sample counted + 1 */
    uint64_t samples;
    ps_unsym_rec_t files; /* only files used */
} group_t;

/* The distinct build id masks of a profile's samples, with their samples' count and sums per
 * series: grown as masks appear (a few in practice), an open-addressing table over them. */
typedef struct masks {
    uint32_t ns;          /* sums per mask */
    uint32_t n, cap, hcap;
    uint32_t *slot;       /* hcap: index into the arrays, NONE: empty */
    uint64_t *mask, *count;
    int64_t *sum;         /* n x ns */
} masks_t;

static uint32_t mask_slot(const masks_t *t, uint64_t mask)
{
    uint32_t h = (uint32_t)((mask * 0x9e3779b97f4a7c15ull) >> 32) & (t->hcap - 1);
    while (t->slot[h] != NONE && t->mask[t->slot[h]] != mask)
        h = (h + 1) & (t->hcap - 1);
    return h;
}

/* the index of mask's entry, made (count and sums 0) when new */
static uint32_t mask_entry(masks_t *t, uint64_t mask)
{
    if (2 * (t->n + 1) > t->hcap) { /* at most half full */
        t->hcap = t->hcap ? 2 * t->hcap : 64;
        t->slot = ps_xrealloc(t->slot, t->hcap * sizeof(uint32_t));
        memset(t->slot, 0xff, t->hcap * sizeof(uint32_t));
        for (uint32_t i = 0; i < t->n; i++)
            t->slot[mask_slot(t, t->mask[i])] = i;
    }
    uint32_t h = mask_slot(t, mask);
    if (t->slot[h] != NONE)
        return t->slot[h];
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 32;
        t->mask = ps_xrealloc(t->mask, t->cap * sizeof(uint64_t));
        t->count = ps_xrealloc(t->count, t->cap * sizeof(uint64_t));
        t->sum = ps_xrealloc(t->sum, (size_t)t->cap * t->ns * sizeof(int64_t));
    }
    uint32_t i = t->n++;
    t->mask[i] = mask;
    t->count[i] = 0;
    memset(t->sum + (size_t)i * t->ns, 0, t->ns * sizeof(int64_t));
    t->slot[h] = i;
    return i;
}

int ps_unsym_count(ps_store_writer_t *w, ps_txn_t *txn, const ps_append_t *it, const uint64_t *strid, ps_arena_t *a,
                   ps_err_t *err)
{
    const ps_profile_t *p = it->profile;
    if (p->nmappings == 0 || p->nlocations == 0 || it->nseries == 0)
        return 0;
    /* mappings with a build id -> their group (one per build id string id) */
    uint32_t *mg = NULL;
    group_t *g = NULL;
    uint32_t ng = 0;
    ps_hmap_t gi; /* build id string id -> group, once there are more than 8 (initialised then) */
    for (uint32_t i = 0; i < p->nmappings; i++) {
        const ps_mapping_t *m = &p->mappings[i];
        if (m->build_id == 0 || m->build_id >= p->nstrings || strid[m->build_id] == 0)
            continue;
        if (mg == NULL) {
            mg = ps_arena_alloc(a, (p->nmappings + 1) * sizeof(uint32_t));
            for (uint32_t j = 0; j <= p->nmappings; j++)
                mg[j] = NONE;
            g = ps_arena_alloc(a, (p->nmappings + 1) * sizeof(group_t));
        }
        uint64_t bid = strid[m->build_id], v;
        uint32_t k = 0;
        if (ng <= 8) {
            while (k < ng && g[k].bid != bid)
                k++;
        } else {
            k = ps_hmap_get(&gi, &bid, 8, &v) ? (uint32_t)v : ng;
        }
        if (k == ng) {
            g[ng++] = (group_t){.bid = bid};
            if (ng == 9) { /* from now on by the map */
                ps_hmap_init(&gi);
                for (uint32_t j = 0; j < ng; j++)
                    ps_hmap_put(&gi, &g[j].bid, 8, j);
            } else if (ng > 9) {
                ps_hmap_put(&gi, &bid, 8, k);
            }
        }
        mg[i + 1] = k;
    }
    if (ng > 8)
        ps_hmap_dispose(&gi);
    if (ng == 0)
        return 0;
    /* locations without lines of those mappings -> group; their mappings' file names */
    uint32_t *lg = NULL;
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *l = &p->locations[i];
        uint32_t k = l->nlines == 0 && l->mapping != 0 && l->mapping <= p->nmappings ? mg[l->mapping] : NONE;
        if (k == NONE)
            continue;
        if (lg == NULL) {
            lg = ps_arena_alloc(a, (p->nlocations + 1) * sizeof(uint32_t));
            for (uint32_t j = 0; j <= p->nlocations; j++)
                lg[j] = NONE;
        }
        lg[i + 1] = k;
        uint32_t fn = p->mappings[l->mapping - 1].filename;
        ps_unsym_rec_add_file(&g[k].files, fn < p->nstrings ? strid[fn] : 0);
    }
    if (lg == NULL)
        return 0;
    uint32_t ns = it->nseries;
    int64_t *tot = ps_arena_calloc(a, (size_t)ng * ns, sizeof(int64_t));
    /* up to 64 build ids (nearly always): each location's group as a bit, a sample's groups the OR
     * of its frames' bits (no branch per frame); more: a stamp per group */
    uint64_t *lm = NULL;
    if (ng <= 64) {
        lm = ps_arena_alloc(a, (p->nlocations + 1) * sizeof(uint64_t));
        for (uint32_t j = 0; j <= p->nlocations; j++)
            lm[j] = lg[j] == NONE ? 0 : 1ull << lg[j];
    }
    /* with masks, the samples are summed per distinct mask first (stacks of a profile hit few
     * distinct sets of build ids), then each mask's sums go to its groups */
    masks_t mt = {.ns = ns};
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *smp = &p->samples[i];
        bool any = false;
        for (uint32_t si = 0; si < ns && !any; si++)
            any = smp->values[it->type_index[si]] != 0;
        if (!any)
            continue;
        if (lm != NULL) {
            uint64_t mask = 0;
            for (uint32_t j = 0; j < smp->nlocs; j++)
                mask |= lm[smp->locs[j] <= p->nlocations ? smp->locs[j] : 0];
            if (mask == 0)
                continue;
            uint32_t m = mask_entry(&mt, mask);
            mt.count[m]++;
            for (uint32_t si = 0; si < ns; si++)
                mt.sum[(size_t)m * ns + si] = ps_sat_add(mt.sum[(size_t)m * ns + si], smp->values[it->type_index[si]]);
            continue;
        }
        for (uint32_t j = 0; j < smp->nlocs; j++) {
            uint32_t k = smp->locs[j] <= p->nlocations ? lg[smp->locs[j]] : NONE;
            if (k == NONE || g[k].stamp == i + 1)
                continue;
            g[k].stamp = i + 1;
            g[k].samples++;
            for (uint32_t si = 0; si < ns; si++)
                tot[(size_t)k * ns + si] = ps_sat_add(tot[(size_t)k * ns + si], smp->values[it->type_index[si]]);
        }
    }
    for (uint32_t m = 0; m < mt.n; m++)
        for (uint64_t mask = mt.mask[m]; mask != 0; mask &= mask - 1) {
            uint32_t k = (uint32_t)__builtin_ctzll(mask);
            g[k].samples += mt.count[m];
            for (uint32_t si = 0; si < ns; si++)
                tot[(size_t)k * ns + si] = ps_sat_add(tot[(size_t)k * ns + si], mt.sum[(size_t)m * ns + si]);
        }
    free(mt.slot);
    free(mt.mask);
    free(mt.count);
    free(mt.sum);
    /* the profile type ids (the series' __name__) as string ids, once a profile */
    uint64_t *types = NULL;
    uint32_t hour = ps_hour_of(it->ts);
    for (uint32_t k = 0; k < ng; k++) {
        if (g[k].samples == 0)
            continue;
        if (types == NULL) {
            types = ps_arena_alloc(a, ns * sizeof(uint64_t));
            for (uint32_t si = 0; si < ns; si++) {
                const ps_label_pair_t *nm = ps_labels_get(&it->series_labels[si], "__name__");
                int ret;
                types[si] = 0;
                if (nm != NULL &&
                    (ret = ps_sym_intern(w, txn, SYM_STRING, nm->value, nm->vlen, &types[si], err)) != 0)
                    return ret;
            }
        }
        ps_unsym_rec_t add = g[k].files;
        add.profiles = 1;
        add.samples = g[k].samples;
        add.first_ts = add.last_ts = it->ts;
        for (uint32_t si = 0; si < ns; si++)
            if (types[si] != 0 && tot[(size_t)k * ns + si] != 0)
                ps_unsym_rec_add_total(&add, types[si], tot[(size_t)k * ns + si]);
        ps_unsym_rec_merge(acc_get(w, hour, g[k].bid), &add);
    }
    return 0;
}

int ps_unsym_flush(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err)
{
    struct ps_unsym_acc *u = w->unsym;
    if (u == NULL || u->n == 0)
        return 0;
    ps_buf_t b = PS_BUF_INIT;
    int ret = 0;
    for (size_t i = 0; i < u->n && ret == 0; i++) {
        ps_unsym_rec_t r;
        MDB_val v;
        if (ps_txn_get(txn, DB_UNSYM, u->a[i].key, 12, &v, "reading the counts of frames without symbols")) {
            if ((ret = ps_unsym_rec_decode(v.mv_data, v.mv_size, &r, err)) != 0)
                break; /* damaged: the write fails rather than lose what the record says */
        } else if (txn->ret) {
            ret = ps_txn_error(txn, err);
            break;
        } else {
            memset(&r, 0, sizeof(r));
        }
        ps_unsym_rec_merge(&r, &u->a[i].r);
        ps_buf_reset(&b);
        ps_unsym_rec_encode(&r, &b);
        if (!ps_txn_put(txn, DB_UNSYM, u->a[i].key, 12, b.data, b.len, 0, "writing the counts of frames without symbols"))
            ret = ps_txn_error(txn, err);
    }
    ps_buf_dispose(&b);
    ps_unsym_reset(w);
    return ret;
}

int ps_unsym_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err)
{
    return ps_drop_hours(txn, DB_UNSYM, ps_hour_of(cutoff), "applying retention to the counts of frames without symbols",
                         err);
}

/* The string symbol id into *out (copied into nothing: LMDB's bytes, valid in r's snapshot). */
static int sym_str(ps_reader_t *r, uint64_t id, ps_str_t *out, ps_err_t *err)
{
    MDB_val v;
    if (id == 0) {
        *out = (ps_str_t){"", 0};
        return 0;
    }
    if (!ps_sym_get(&r->txn, SYM_STRING, id, &v)) {
        if (r->txn.ret)
            return ps_txn_error(&r->txn, err);
        return ps_err_set(err, PS_ECORRUPT, "unsym record: string %llu is not stored", (unsigned long long)id);
    }
    *out = (ps_str_t){v.mv_data, (uint32_t)v.mv_size};
    return 0;
}

int ps_reader_unsym(ps_reader_t *r, int64_t start, int64_t end, int (*cb)(void *ctx, const ps_store_unsym_t *u),
                    void *ctx, ps_err_t *err)
{
    if (start < r->min_ts)
        start = r->min_ts;
    if (start > end || (r->store->absent & (1u << DB_UNSYM)))
        return 0;
    uint32_t h0 = ps_hour_of(start), h1 = ps_hour_of(end);
    ps_cur_t cur;
    if (!ps_cur_open(&cur, &r->txn, DB_UNSYM, "reading the counts of frames without symbols"))
        return ps_txn_error(&r->txn, err);
    uint8_t k[4] = {(uint8_t)(h0 >> 24), (uint8_t)(h0 >> 16), (uint8_t)(h0 >> 8), (uint8_t)h0};
    int ret = 0;
    for (bool on = ps_cur_seek(&cur, k, 4); on; on = ps_cur_next(&cur)) {
        if (cur.k.mv_size != 12) {
            ret = ps_err_set(err, PS_ECORRUPT, "unsym key of %zu bytes", cur.k.mv_size);
            break;
        }
        uint32_t h = ps_get_be32(cur.k.mv_data);
        if (h > h1)
            break;
        ps_unsym_rec_t rec;
        ps_store_unsym_t u = {.hour = h};
        if ((ret = ps_unsym_rec_decode(cur.v.mv_data, cur.v.mv_size, &rec, err)) != 0 ||
            (ret = sym_str(r, ps_get_be64((const uint8_t *)cur.k.mv_data + 4), &u.build_id, err)) != 0)
            break;
        u.profiles = rec.profiles;
        u.samples = rec.samples;
        u.first_ts = rec.first_ts;
        u.last_ts = rec.last_ts;
        u.nfiles = rec.nfiles;
        for (uint32_t i = 0; i < rec.nfiles && ret == 0; i++)
            ret = sym_str(r, rec.files[i], &u.files[i], err);
        u.ntypes = rec.ntypes;
        for (uint32_t i = 0; i < rec.ntypes && ret == 0; i++) {
            ret = sym_str(r, rec.types[i], &u.types[i], err);
            u.totals[i] = rec.totals[i];
        }
        if (ret != 0 || (ret = cb(ctx, &u)) != 0)
            break;
    }
    ps_cur_close(&cur);
    if (ret == 0 && r->txn.ret)
        ret = ps_txn_error(&r->txn, err);
    return ret;
}
