/*
 * profile_id.c - the id of every stored profile as UUID text (query.h "profile ids"; the layout is
 * docs/api.md "Profile ids"): derived from the profile's series id and timestamp, which never
 * change and are never reused, so an id costs no stored byte and names one profile forever.
 */
#include "query.h"
#include "core/encode.h"

#include <string.h>
#include <stdlib.h>
#include <strings.h>

#include "query_int.h"

bool ps_query_profile_uuid(ps_reader_t *r, uint64_t sid, int64_t ts, uint8_t u[16])
{
    (void)r; /* the store's own id of the profile, once it keeps client ids, is looked up here */
    return ps_profile_uuid_make(sid, ts, u);
}

int ps_query_profile_id(ps_reader_t *r, uint64_t sid, int64_t ts, char out[PS_PROFILE_ID_LEN + 1])
{
    uint8_t u[16];
    if (!ps_query_profile_uuid(r, sid, ts, u)) {
        out[0] = '\0';
        return 0;
    }
    ps_profile_uuid_text(u, out);
    return PS_PROFILE_ID_LEN;
}

int ps_query_profile_id_parse(ps_reader_t *r, const char *s, size_t n, const char *field, ps_profile_ref_t *out,
                              uint32_t max, uint32_t *nout, ps_err_t *err)
{
    uint8_t u[16];
    *nout = 0;
    if (ps_uuid_scan(s, n, u) != 0)
        return ps_err_set(err, PS_EINVAL,
                          "%s: \"%.*s\" is not a profile id (a UUID, xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx, as exemplars "
                          "give them)",
                          field, n > 64 ? 64 : (int)n, s);
    uint64_t sid;
    int64_t ts;
    int rc = ps_profile_uuid_split(u, &sid, &ts) ? ps_query_profile_series_has(r, sid, ts, ts, err) : 0;
    if (rc < 0)
        return rc;
    if (rc == 1 && max > 0) {
        out[0] = (ps_profile_ref_t){sid, ts};
        *nout = 1;
        return 0;
    }
    /* a client's id (a Pyroscope push's RawSample.ID): the profiles it names, one per series */
    enum { CLIENT_MAX = 16 };
    uint64_t sids[CLIENT_MAX];
    int64_t tss[CLIENT_MAX];
    size_t cap = max < CLIENT_MAX ? max : CLIENT_MAX;
    rc = cap > 0 ? ps_reader_profiles_by_uuid(r, u, sids, tss, cap, err) : 0;
    if (rc < 0)
        return rc;
    uint32_t k = 0;
    for (size_t i = 0; i < (size_t)rc && i < cap; i++) {
        int has = ps_query_profile_series_has(r, sids[i], tss[i], tss[i], err); /* retention, a dropped series */
        if (has < 0)
            return has;
        if (has)
            out[k++] = (ps_profile_ref_t){sids[i], tss[i]};
    }
    if (k == 0)
        return ps_err_set(err, PS_EINVAL, "%s: unknown profile id \"%.*s\" (no stored profile has it)", field, (int)n, s);
    *nout = k;
    return 0;
}

typedef struct list_ctx {
    ps_profile_entry_t *v;
    size_t n, cap, max;
    uint32_t series;
    uint64_t sid;
    ps_err_t *err;
} list_ctx_t;

static int on_listed(void *ctx, const ps_stored_profile_t *p)
{
    list_ctx_t *c = ctx;
    if (c->n == c->max)
        return ps_err_set(c->err, PS_ELIMIT,
                          "the range holds more than %zu profiles of the selected series: narrow the selector or the "
                          "range",
                          c->max);
    if (c->n == c->cap) {
        c->cap = c->cap ? c->cap * 2 : 64;
        c->v = ps_xrealloc(c->v, c->cap * sizeof(*c->v));
    }
    c->v[c->n++] = (ps_profile_entry_t){{c->sid, p->ts}, p->total, c->series};
    return 0;
}

static int cmp_entry(const void *a, const void *b)
{
    const ps_profile_entry_t *x = a, *y = b;
    if (x->ref.ts != y->ref.ts)
        return x->ref.ts < y->ref.ts ? -1 : 1;
    return x->ref.sid < y->ref.sid ? -1 : x->ref.sid > y->ref.sid;
}

int ps_query_profile_list(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                          uint32_t max, ps_arena_t *arena, ps_series_set_t *set, ps_profile_entry_t **out,
                          uint32_t *n, ps_err_t *err)
{
    *out = NULL;
    *n = 0;
    int ret = ps_query_select(r, sel, start, end, max_series, arena, set, err);
    list_ctx_t c = {.max = max, .err = err};
    for (uint32_t i = 0; i < set->n && ret == 0; i++) {
        ps_series_kind_t kind;
        ret = ps_reader_series_kind(r, set->sids[i], &kind, err);
        if (ret == PS_ENOTFOUND || (ret == 0 && kind != PS_SERIES_PROFILE)) {
            ret = 0;
            continue;
        }
        c.series = i;
        c.sid = set->sids[i];
        if (ret == 0)
            ret = ps_reader_profiles(r, set->sids[i], start, end, true, on_listed, &c, err);
    }
    if (ret == 0 && c.n > 0) {
        qsort(c.v, c.n, sizeof(*c.v), cmp_entry);
        *out = ps_arena_alloc(arena, c.n * sizeof(**out));
        memcpy(*out, c.v, c.n * sizeof(**out));
        *n = (uint32_t)c.n;
    }
    free(c.v);
    return ret;
}
