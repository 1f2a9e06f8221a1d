/*
 * materialize.c - from stack nodes back to a self-contained profile: walk each node up the
 * stack tree, then resolve locations, functions, mappings, label sets and strings from their
 * global ids into dense local tables.
 *
 * Then the store's symbolizer (ps_store_set_symbolizer), if any, gives native frames their lines.
 *
 * Under a query budget (core/budget.h) the walks stop when it says so (the query's deadline, its
 * client gone): a check every BUDGET_EVERY samples and locations, one clock read each.
 */
#include <stdlib.h>

#include "core/budget.h"
#include "internal.h"

#define BUDGET_EVERY 1024 /* samples (or locations) between two checks of the query's budget */

typedef struct vec {
    void *data;
    size_t n, cap, size;
} vec_t;

static void *vec_push(vec_t *v)
{
    if (v->n == v->cap) {
        v->cap = v->cap ? v->cap * 2 : 64;
        v->data = ps_xrealloc(v->data, v->cap * v->size);
    }
    return (char *)v->data + v->size * v->n++;
}

typedef struct mctx {
    ps_reader_t *r;
    ps_arena_t *arena;
    ps_err_t *err;
    ps_hmap_t strs, maps, fns, locs, nodes;
    vec_t str_gids;  /* uint64 gid per local string index */
    vec_t map_gids, fn_gids, loc_gids;
} mctx_t;

static uint32_t local_index(ps_hmap_t *m, vec_t *gids, uint64_t gid, uint32_t base)
{
    uint8_t k[8];
    uint64_t v;
    ps_enc_be64(k, gid);
    if (ps_hmap_get(m, k, 8, &v))
        return (uint32_t)v;
    *(uint64_t *)vec_push(gids) = gid;
    uint32_t idx = (uint32_t)gids->n - 1 + base;
    ps_hmap_put(m, k, 8, idx);
    return idx;
}

static uint32_t str_index(mctx_t *c, uint64_t gid)
{
    if (gid == 0)
        return 0;
    return local_index(&c->strs, &c->str_gids, gid, 0);
}

static int node_up(mctx_t *c, uint64_t node, uint64_t *parent, uint64_t *item)
{
    uint8_t k[8];
    uint64_t v;
    ps_enc_be64(k, node);
    /* cache: node -> index into a side array would be nicer; two entries per node keep it simple */
    uint8_t k2[9];
    memcpy(k2, k, 8);
    k2[8] = 1;
    if (ps_hmap_get(&c->nodes, k, 8, &v) && ps_hmap_get(&c->nodes, k2, 9, item)) {
        *parent = v;
        return 0;
    }
    MDB_val mv;
    if (!ps_txn_get(&c->r->txn, DB_NODES, k, 8, &mv, "reading stack node") || mv.mv_size != 16) {
        ps_txn_error(&c->r->txn, NULL); /* a failed read is told as the node missing */
        return ps_err_set(c->err, PS_ECORRUPT, "stack node %llu is missing or damaged", (unsigned long long)node);
    }
    *parent = ps_get_be64(mv.mv_data);
    *item = ps_get_be64((const uint8_t *)mv.mv_data + 8);
    ps_hmap_put(&c->nodes, k, 8, *parent);
    ps_hmap_put(&c->nodes, k2, 9, *item);
    return 0;
}

static int sym(mctx_t *c, int kind, uint64_t id, ps_dec_t *d)
{
    MDB_val v;
    if (!ps_sym_get(&c->r->txn, kind, id, &v)) {
        ps_txn_error(&c->r->txn, NULL); /* a failed read is told as the symbol missing */
        return ps_err_set(c->err, PS_ECORRUPT, "symbol %d/%llu is missing", kind, (unsigned long long)id);
    }
    ps_dec_init(d, v.mv_data, v.mv_size);
    return 0;
}

int ps_reader_materialize(ps_reader_t *r, const uint64_t *nodes, const int64_t *values, size_t n, uint32_t nvalues,
                          const char *const *sample_types, const char *const *period_type, ps_arena_t *arena,
                          ps_profile_t *out, ps_err_t *err)
{
    mctx_t c = {.r = r, .arena = arena, .err = err};
    c.str_gids.size = c.map_gids.size = c.fn_gids.size = c.loc_gids.size = sizeof(uint64_t);
    ps_hmap_init(&c.strs);
    ps_hmap_init(&c.maps);
    ps_hmap_init(&c.fns);
    ps_hmap_init(&c.locs);
    ps_hmap_init(&c.nodes);
    int ret = 0;
    memset(out, 0, sizeof(*out));
    *(uint64_t *)vec_push(&c.str_gids) = 0; /* "" */

    /* samples: walk each node to the root */
    out->nsamples = (uint32_t)n;
    out->samples = ps_arena_calloc(arena, n ? n : 1, sizeof(ps_sample_t));
    vec_t stack = {.size = sizeof(uint32_t)};
    for (size_t i = 0; i < n; i++) {
        ps_sample_t *s = &out->samples[i];
        if (i % BUDGET_EVERY == BUDGET_EVERY - 1 && (ret = ps_budget_check_now(err)) != 0)
            goto Exit;
        stack.n = 0;
        uint64_t node = nodes[i], lsid = 0;
        uint32_t depth = 0;
        while (node != 0) {
            uint64_t parent = 0, item = 0;
            if ((ret = node_up(&c, node, &parent, &item)) != 0)
                goto Exit;
            if (item & PS_ITEM_LABELSET)
                lsid = item & ~PS_ITEM_LABELSET;
            else
                *(uint32_t *)vec_push(&stack) = local_index(&c.locs, &c.loc_gids, item, 1);
            node = parent;
            if (++depth > 1u << 20) {
                ret = ps_err_set(err, PS_ECORRUPT, "stack node %llu: cycle in stack tree", (unsigned long long)nodes[i]);
                goto Exit;
            }
        }
        s->nlocs = (uint32_t)stack.n;
        s->locs = ps_arena_alloc(arena, (stack.n ? stack.n : 1) * sizeof(uint32_t));
        if (stack.n)
            memcpy(s->locs, stack.data, stack.n * sizeof(uint32_t));
        s->values = ps_arena_alloc(arena, nvalues * sizeof(int64_t));
        memcpy(s->values, values + i * nvalues, nvalues * sizeof(int64_t));
        if (lsid) {
            ps_dec_t d;
            if ((ret = sym(&c, SYM_LABELSET, lsid, &d)) != 0)
                goto Exit;
            uint64_t nl = ps_dec_uvarint(&d);
            if (d.err || nl > ps_dec_left(&d)) {
                ret = ps_err_set(err, PS_ECORRUPT, "label set %llu is damaged", (unsigned long long)lsid);
                goto Exit;
            }
            s->nlabels = (uint32_t)nl;
            s->labels = ps_arena_calloc(arena, nl ? nl : 1, sizeof(ps_label_t));
            for (uint64_t j = 0; j < nl; j++) {
                s->labels[j].key = str_index(&c, ps_dec_uvarint(&d));
                s->labels[j].str = str_index(&c, ps_dec_uvarint(&d));
                s->labels[j].num = ps_dec_varint(&d);
                s->labels[j].num_unit = str_index(&c, ps_dec_uvarint(&d));
            }
            if (d.err) {
                ret = ps_err_set(err, PS_ECORRUPT, "label set %llu is damaged", (unsigned long long)lsid);
                goto Exit;
            }
        }
    }
    /* locations (this may add functions and mappings) */
    out->nlocations = (uint32_t)c.loc_gids.n;
    out->locations = ps_arena_calloc(arena, c.loc_gids.n + 1, sizeof(ps_location_t));
    for (size_t i = 0; i < c.loc_gids.n; i++) {
        ps_location_t *l = &out->locations[i];
        ps_dec_t d;
        if (i % BUDGET_EVERY == BUDGET_EVERY - 1 && (ret = ps_budget_check_now(err)) != 0)
            goto Exit;
        if ((ret = sym(&c, SYM_LOCATION, ((uint64_t *)c.loc_gids.data)[i], &d)) != 0)
            goto Exit;
        uint64_t mg = ps_dec_uvarint(&d);
        l->mapping = mg ? local_index(&c.maps, &c.map_gids, mg, 1) : 0;
        l->address = ps_dec_uvarint(&d);
        l->is_folded = (uint32_t)ps_dec_uvarint(&d);
        uint64_t nl = ps_dec_uvarint(&d);
        if (d.err || nl > ps_dec_left(&d)) {
            ret = ps_err_set(err, PS_ECORRUPT, "location symbol is damaged");
            goto Exit;
        }
        l->nlines = (uint32_t)nl;
        l->lines = ps_arena_calloc(arena, nl ? nl : 1, sizeof(ps_line_t));
        for (uint64_t j = 0; j < nl; j++) {
            uint64_t fg = ps_dec_uvarint(&d);
            l->lines[j].function = fg ? local_index(&c.fns, &c.fn_gids, fg, 1) : 0;
            l->lines[j].line = ps_dec_varint(&d);
            l->lines[j].column = ps_dec_varint(&d);
        }
        if (d.err) {
            ret = ps_err_set(err, PS_ECORRUPT, "location symbol is damaged");
            goto Exit;
        }
    }
    out->nfunctions = (uint32_t)c.fn_gids.n;
    out->functions = ps_arena_calloc(arena, c.fn_gids.n + 1, sizeof(ps_function_t));
    for (size_t i = 0; i < c.fn_gids.n; i++) {
        ps_function_t *f = &out->functions[i];
        ps_dec_t d;
        if ((ret = sym(&c, SYM_FUNCTION, ((uint64_t *)c.fn_gids.data)[i], &d)) != 0)
            goto Exit;
        f->name = str_index(&c, ps_dec_uvarint(&d));
        f->system_name = str_index(&c, ps_dec_uvarint(&d));
        f->filename = str_index(&c, ps_dec_uvarint(&d));
        f->start_line = ps_dec_varint(&d);
        if (d.err) {
            ret = ps_err_set(err, PS_ECORRUPT, "function symbol is damaged");
            goto Exit;
        }
    }
    out->nmappings = (uint32_t)c.map_gids.n;
    out->mappings = ps_arena_calloc(arena, c.map_gids.n + 1, sizeof(ps_mapping_t));
    for (size_t i = 0; i < c.map_gids.n; i++) {
        ps_mapping_t *m = &out->mappings[i];
        ps_dec_t d;
        if ((ret = sym(&c, SYM_MAPPING, ((uint64_t *)c.map_gids.data)[i], &d)) != 0)
            goto Exit;
        m->memory_start = ps_dec_uvarint(&d);
        m->memory_limit = ps_dec_uvarint(&d);
        m->file_offset = ps_dec_uvarint(&d);
        m->filename = str_index(&c, ps_dec_uvarint(&d));
        m->build_id = str_index(&c, ps_dec_uvarint(&d));
        m->flags = (uint32_t)ps_dec_uvarint(&d);
        if (d.err) {
            ret = ps_err_set(err, PS_ECORRUPT, "mapping symbol is damaged");
            goto Exit;
        }
    }
    /* strings: the stored ones, then the sample and period type names */
    size_t nstored = c.str_gids.n;
    out->nstrings = (uint32_t)(nstored + 2 * nvalues + 2);
    out->strings = ps_arena_calloc(arena, out->nstrings, sizeof(ps_str_t));
    out->strings[0] = (ps_str_t){"", 0};
    for (size_t i = 1; i < nstored; i++) {
        MDB_val v;
        if (!ps_sym_get(&r->txn, SYM_STRING, ((uint64_t *)c.str_gids.data)[i], &v)) {
            ps_txn_error(&r->txn, NULL);
            ret = ps_err_set(err, PS_ECORRUPT, "string symbol is missing");
            goto Exit;
        }
        out->strings[i] = (ps_str_t){ps_arena_strndup(arena, v.mv_data, v.mv_size), (uint32_t)v.mv_size};
    }
    uint32_t si = (uint32_t)nstored;
    out->ntypes = nvalues;
    out->sample_types = ps_arena_calloc(arena, nvalues ? nvalues : 1, sizeof(ps_value_type_t));
    for (uint32_t k = 0; k < nvalues; k++) {
        for (int j = 0; j < 2; j++) {
            const char *t = sample_types[2 * k + j];
            out->strings[si] = (ps_str_t){ps_arena_strndup(arena, t, strlen(t)), (uint32_t)strlen(t)};
            if (j == 0)
                out->sample_types[k].type = si++;
            else
                out->sample_types[k].unit = si++;
        }
    }
    for (int j = 0; j < 2; j++) {
        const char *t = period_type ? period_type[j] : "";
        out->strings[si] = (ps_str_t){ps_arena_strndup(arena, t, strlen(t)), (uint32_t)strlen(t)};
        if (j == 0)
            out->period_type.type = si++;
        else
            out->period_type.unit = si++;
    }
    out->nstrings = si;
    if (r->store->symbolize != NULL)
        r->store->symbolize(r->store->symbolize_ctx, out, arena);
Exit:
    free(stack.data);
    free(c.str_gids.data);
    free(c.map_gids.data);
    free(c.fn_gids.data);
    free(c.loc_gids.data);
    ps_hmap_dispose(&c.strs);
    ps_hmap_dispose(&c.maps);
    ps_hmap_dispose(&c.fns);
    ps_hmap_dispose(&c.locs);
    ps_hmap_dispose(&c.nodes);
    return ret;
}

void ps_store_set_symbolizer(ps_store_t *s, ps_store_symbolize_fn fn, void *ctx)
{
    s->symbolize = fn;
    s->symbolize_ctx = ctx;
}
