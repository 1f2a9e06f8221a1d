/*
 * symstatus.c - symstatus.h: one walk over the (hour, build id) records of the range, summed per
 * build id in a hash map, the symbolizer asked once per build id, then sorted.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "core/hash.h"
#include "core/sat.h"
#include "symstatus.h"

typedef struct walk {
    ps_arena_t *arena;
    ps_hmap_t index; /* build id -> index in e */
    ps_symstatus_entry_t *e;
    size_t n, cap;
} walk_t;

/* the build id as listed: lowercase when it is all hex digits, else as given */
static char *norm_id(ps_arena_t *a, ps_str_t b)
{
    char *s = ps_arena_strndup(a, b.ptr, b.len);
    bool hex = b.len > 0;
    for (uint32_t i = 0; i < b.len && hex; i++)
        hex = isxdigit((unsigned char)s[i]) != 0;
    for (uint32_t i = 0; i < b.len && hex; i++)
        s[i] = (char)tolower((unsigned char)s[i]);
    return s;
}

static bool str_is(const char *s, ps_str_t x)
{
    return strlen(s) == x.len && memcmp(s, x.ptr, x.len) == 0;
}

static int on_record(void *ctx, const ps_store_unsym_t *u)
{
    walk_t *w = ctx;
    char tmp[256];
    const char *key = tmp;
    size_t klen = u->build_id.len;
    bool hex = klen > 0 && klen < sizeof(tmp);
    for (size_t i = 0; i < klen && hex; i++) {
        hex = isxdigit((unsigned char)u->build_id.ptr[i]) != 0;
        tmp[i] = (char)tolower((unsigned char)u->build_id.ptr[i]);
    }
    if (!hex)
        key = u->build_id.ptr;
    uint64_t idx;
    ps_symstatus_entry_t *e;
    if (ps_hmap_get(&w->index, key, klen, &idx)) {
        e = &w->e[idx];
        e->first_ts = u->first_ts < e->first_ts ? u->first_ts : e->first_ts;
        e->last_ts = u->last_ts > e->last_ts ? u->last_ts : e->last_ts;
    } else {
        if (w->n == w->cap) {
            w->cap = w->cap ? 2 * w->cap : 64;
            w->e = ps_xrealloc(w->e, w->cap * sizeof(ps_symstatus_entry_t));
        }
        idx = w->n++;
        e = &w->e[idx];
        memset(e, 0, sizeof(*e));
        e->build_id = norm_id(w->arena, u->build_id);
        e->first_ts = u->first_ts;
        e->last_ts = u->last_ts;
        ps_hmap_put(&w->index, key, klen, idx);
    }
    e->profiles = ps_sat_addu(e->profiles, u->profiles);
    e->samples = ps_sat_addu(e->samples, u->samples);
    for (uint32_t i = 0; i < u->nfiles; i++) {
        uint32_t j = 0;
        while (j < e->nfiles && !str_is(e->files[j], u->files[i]))
            j++;
        if (j == e->nfiles && e->nfiles < PS_UNSYM_FILES_MAX && u->files[i].len > 0)
            e->files[e->nfiles++] = ps_arena_strndup(w->arena, u->files[i].ptr, u->files[i].len);
    }
    for (uint32_t i = 0; i < u->ntypes; i++) {
        uint32_t j = 0;
        while (j < e->ntypes && !str_is(e->types[j], u->types[i]))
            j++;
        if (j < e->ntypes)
            e->totals[j] = ps_sat_add(e->totals[j], u->totals[i]);
        else if (e->ntypes < PS_UNSYM_TYPES_MAX) {
            e->types[e->ntypes] = ps_arena_strndup(w->arena, u->types[i].ptr, u->types[i].len);
            e->totals[e->ntypes++] = u->totals[i];
        }
    }
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const ps_symstatus_entry_t *x = a, *y = b;
    if (x->samples != y->samples)
        return x->samples > y->samples ? -1 : 1;
    return strcmp(x->build_id, y->build_id);
}

/* a type's total descending, then its name */
static void sort_types(ps_symstatus_entry_t *e)
{
    for (uint32_t i = 1; i < e->ntypes; i++)
        for (uint32_t j = i; j > 0; j--) {
            bool swap = e->totals[j] > e->totals[j - 1] ||
                        (e->totals[j] == e->totals[j - 1] && strcmp(e->types[j], e->types[j - 1]) < 0);
            if (!swap)
                break;
            const char *t = e->types[j];
            e->types[j] = e->types[j - 1];
            e->types[j - 1] = t;
            int64_t v = e->totals[j];
            e->totals[j] = e->totals[j - 1];
            e->totals[j - 1] = v;
        }
}

int ps_query_symstatus(ps_reader_t *r, int64_t start, int64_t end, ps_symstatus_state_t state, uint32_t limit,
                       ps_symstatus_has_fn has, void *has_ctx, ps_arena_t *arena, ps_symstatus_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    walk_t w = {.arena = arena};
    ps_hmap_init(&w.index);
    int ret = ps_reader_unsym(r, start, end, on_record, &w, err);
    if (ret == 0) {
        size_t m = 0;
        for (size_t i = 0; i < w.n; i++) {
            ps_symstatus_entry_t *e = &w.e[i];
            e->source = has != NULL ? has(has_ctx, e->build_id) : 0;
            if (e->source > 0) {
                out->available_build_ids++;
                out->available_samples = ps_sat_addu(out->available_samples, e->samples);
            } else {
                out->missing_build_ids++;
                out->missing_samples = ps_sat_addu(out->missing_samples, e->samples);
            }
            if (state == PS_SYMSTATUS_ALL || (state == PS_SYMSTATUS_MISSING) == (e->source == 0))
                w.e[m++] = *e;
        }
        if (m > 1)
            qsort(w.e, m, sizeof(ps_symstatus_entry_t), cmp_entry);
        out->n = (uint32_t)(m < limit ? m : limit);
        out->entries = ps_arena_alloc(arena, (out->n + 1) * sizeof(ps_symstatus_entry_t));
        for (uint32_t i = 0; i < out->n; i++) {
            out->entries[i] = w.e[i];
            sort_types(&out->entries[i]);
        }
    }
    free(w.e);
    ps_hmap_dispose(&w.index);
    return ret;
}
