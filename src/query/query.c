/*
 * query.c - the query engine (see query.h).
 */
#include "query_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/budget.h"
#include "core/hash.h"
#include "core/sat.h"
#include "core/timeutil.h"
#include "core/varint.h"

/* ---- sorted id vectors ---- */

typedef struct idvec {
    uint64_t *v;
    size_t n, cap;
} idvec_t;

static void idvec_push(idvec_t *a, uint64_t x)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->v = ps_xrealloc(a->v, a->cap * sizeof(uint64_t));
    }
    a->v[a->n++] = x;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

static void idvec_sort_unique(idvec_t *a)
{
    if (a->n < 2)
        return;
    qsort(a->v, a->n, sizeof(uint64_t), cmp_u64);
    size_t k = 1;
    for (size_t i = 1; i < a->n; i++)
        if (a->v[i] != a->v[k - 1])
            a->v[k++] = a->v[i];
    a->n = k;
}

static void idvec_intersect(idvec_t *a, const idvec_t *b)
{
    size_t i = 0, j = 0, k = 0;
    while (i < a->n && j < b->n) {
        if (a->v[i] < b->v[j])
            i++;
        else if (a->v[i] > b->v[j])
            j++;
        else {
            a->v[k++] = a->v[i];
            i++;
            j++;
        }
    }
    a->n = k;
}

static int on_posting(void *ctx, uint64_t sid)
{
    idvec_push(ctx, sid);
    return 0;
}

typedef struct values_ctx {
    ps_reader_t *r;
    ps_matcher_t *m;
    idvec_t *out;
    ps_err_t *err;
} values_ctx_t;

static int on_value(void *ctx, const char *v, size_t vlen)
{
    values_ctx_t *c = ctx;
    int rc = ps_matcher_eval(c->m, v, vlen, c->err);
    if (rc > 0)
        return ps_reader_postings(c->r, c->m->name, c->m->nlen, v, vlen, on_posting, c->out, c->err);
    return rc;
}

int ps_query_labels_match(ps_selector_t *sel, const ps_labels_t *ls, ps_err_t *err)
{
    for (uint32_t i = 0; i < sel->n; i++) {
        ps_matcher_t *m = &sel->m[i];
        const char *v = "";
        size_t vl = 0;
        for (uint32_t j = 0; j < ls->n; j++)
            if (ls->pairs[j].nlen == m->nlen && memcmp(ls->pairs[j].name, m->name, m->nlen) == 0) {
                v = ls->pairs[j].value;
                vl = ls->pairs[j].vlen;
                break;
            }
        int rc = ps_matcher_eval(m, v, vl, err);
        if (rc <= 0)
            return rc;
    }
    return 1;
}

int ps_query_select(ps_reader_t *r, ps_selector_t *sel, int64_t start, int64_t end, uint32_t max_series,
                    ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err)
{
    idvec_t cand = {0}, list = {0};
    bool have = false;
    int ret = 0;
    memset(out, 0, sizeof(*out));
    /* The candidates start from the shortest postings list of the equality matchers that come
     * before any other (their intersection is the same in any order, and nothing else runs
     * before it is complete); a later equality matcher whose list is much longer than the
     * candidates is applied by looking each candidate up in it. The same candidates as reading
     * every list whole, and {__name__="t",instance="i"} over a million series of type t reads one
     * id instead of a million. */
    uint32_t first = UINT32_MAX;
    size_t best = SIZE_MAX, cnt;
    for (uint32_t i = 0; i < sel->n && (sel->m[i].matches_empty || sel->m[i].op == PS_MATCH_EQ); i++) {
        ps_matcher_t *m = &sel->m[i];
        if (m->matches_empty)
            continue;
        if ((ret = ps_reader_postings_count(r, m->name, m->nlen, m->value, m->vlen, &cnt, err)) != 0) {
            ps_err_prefix(err, "reading the label index");
            goto Exit;
        }
        if (cnt < best) {
            best = cnt;
            first = i;
        }
    }
    if (first != UINT32_MAX) {
        ps_matcher_t *m = &sel->m[first];
        if ((ret = ps_reader_postings(r, m->name, m->nlen, m->value, m->vlen, on_posting, &cand, err)) != 0) {
            if (ret != PS_ELIMIT && ret != PS_ETIMEOUT && ret != PS_ECANCELED)
                ps_err_prefix(err, "reading the label index");
            goto Exit;
        }
        have = true;
    }
    for (uint32_t i = 0; i < sel->n; i++) {
        ps_matcher_t *m = &sel->m[i];
        if (m->matches_empty || i == first)
            continue;
        if (have && cand.n == 0)
            break;
        list.n = 0;
        if (m->op == PS_MATCH_EQ && have) {
            ret = ps_reader_postings_count(r, m->name, m->nlen, m->value, m->vlen, &cnt, err);
            if (ret == 0 && cnt / 8 > cand.n) {
                ret = ps_reader_postings_filter(r, m->name, m->nlen, m->value, m->vlen, cand.v, &cand.n, err);
                if (ret != 0) {
                    ps_err_prefix(err, "reading the label index");
                    goto Exit;
                }
                continue;
            }
            if (ret == 0)
                ret = ps_reader_postings(r, m->name, m->nlen, m->value, m->vlen, on_posting, &list, err);
        } else if (m->op == PS_MATCH_EQ) {
            ret = ps_reader_postings(r, m->name, m->nlen, m->value, m->vlen, on_posting, &list, err);
        } else {
            values_ctx_t c = {r, m, &list, err};
            ret = ps_reader_label_values(r, m->name, m->nlen, on_value, &c, err);
            idvec_sort_unique(&list);
        }
        if (ret) {
            if (ret != PS_ELIMIT && ret != PS_ETIMEOUT && ret != PS_ECANCELED)
                ps_err_prefix(err, "reading the label index");
            goto Exit;
        }
        if (!have) {
            cand.n = 0;
            for (size_t k = 0; k < list.n; k++)
                idvec_push(&cand, list.v[k]);
            have = true;
        } else {
            idvec_intersect(&cand, &list);
        }
        if (cand.n == 0)
            break;
    }
    if (!have) {
        ret = ps_err_set(err, PS_EINVAL, "vector selector must contain at least one non-empty matcher");
        goto Exit;
    }
    out->sids = ps_arena_alloc(arena, (cand.n + 1) * sizeof(uint64_t));
    out->labels = ps_arena_alloc(arena, (cand.n + 1) * sizeof(ps_labels_t));
    bool ranged = start != INT64_MIN || end != INT64_MAX;
    for (size_t k = 0; k < cand.n; k++) {
        ps_labels_t ls;
        int rc = ps_budget_check(err);
        if (rc) {
            ret = rc;
            goto Exit;
        }
        rc = ps_reader_series_labels(r, cand.v[k], arena, &ls, err);
        if (rc == PS_ENOTFOUND)
            continue; /* a postings entry without its series: not a series of this snapshot */
        if (rc) {
            ret = rc;
            goto Exit;
        }
        if ((rc = ps_query_labels_match(sel, &ls, err)) <= 0) {
            if (rc == 0)
                continue;
            ret = rc;
            goto Exit;
        }
        if (ranged && (rc = ps_reader_has_data(r, cand.v[k], start, end, err)) <= 0) {
            if (rc == 0)
                continue;
            ret = rc;
            goto Exit;
        }
        if (out->n == max_series) {
            ret = ps_err_set(err, PS_ELIMIT, "the selector matches more than %u series (the limit, %s); narrow it",
                             max_series, ps_setting_name(PS_SETTING_QUERY_MAX_SERIES));
            goto Exit;
        }
        out->sids[out->n] = cand.v[k];
        out->labels[out->n] = ls;
        out->n++;
    }
Exit:
    free(cand.v);
    free(list.v);
    return ret;
}

bool ps_profile_type_same_measure(const char *a, const char *b)
{
    /* name:sample_type:sample_unit:period_type:period_unit[:delta]: parts 0-2 and the delta flag */
    size_t i = 0;
    for (int colons = 0; colons < 3; i++) {
        if (a[i] != b[i])
            return false;
        if (a[i] == '\0')
            return false; /* fewer than 3 colons: not a type id */
        colons += a[i] == ':';
    }
    const char *da = strrchr(a + i, ':'), *db = strrchr(b + i, ':');
    bool dela = da && strcmp(da, ":delta") == 0 && strchr(a + i, ':') != da;
    bool delb = db && strcmp(db, ":delta") == 0 && strchr(b + i, ':') != db;
    return dela == delb;
}

/* Whether a type id has no period type of its own: an empty one, or the sample type standing in
 * (a pprof without one: ingest.c). */
static bool stand_in_period(const char *t)
{
    const char *c1 = strchr(t, ':'), *c2 = c1 ? strchr(c1 + 1, ':') : NULL, *c3 = c2 ? strchr(c2 + 1, ':') : NULL;
    if (c3 == NULL)
        return true;
    if (c3[1] == ':') /* an empty period type */
        return true;
    size_t n = (size_t)(c3 - (c1 + 1)); /* "sample_type:sample_unit" */
    return strncmp(c1 + 1, c3 + 1, n) == 0 && (c3[1 + n] == '\0' || c3[1 + n] == ':');
}

int ps_query_single_type(const ps_series_set_t *s, const char **type, ps_err_t *err)
{
    *type = NULL;
    const char *types[8], *other = NULL;
    uint32_t nt = 0;
    bool more = false;
    for (uint32_t i = 0; i < s->n; i++) {
        const ps_label_pair_t *nm = ps_labels_get(&s->labels[i], "__name__");
        const char *t = nm ? nm->value : "";
        bool seen = false;
        for (uint32_t k = 0; k < nt; k++)
            seen |= strcmp(types[k], t) == 0;
        if (seen)
            continue;
        if (nt > 0 && other == NULL && !ps_profile_type_same_measure(types[0], t))
            other = t;
        if (nt < 8)
            types[nt++] = t;
        else
            more = true;
    }
    if (other != NULL) {
        char list[1024] = "";
        size_t off = 0;
        for (uint32_t k = 0; k < nt && off < sizeof(list); k++)
            off += (size_t)snprintf(list + off, sizeof(list) - off, "%s%s", k ? ", " : "", types[k]);
        return ps_err_set(err, PS_EINVAL,
                          "the selector matches series of %s%u profile types (%s%s); merging different types is "
                          "meaningless (%s and %s are not the same measure: name, sample type, unit and delta must "
                          "agree): add __name__ or a profile type to the selector",
                          more ? "more than " : "", nt, list, more ? ", ..." : "", types[0], other);
    }
    /* one measure (types that differ only in their period type): merged as the one standing for it */
    const char *pick = NULL;
    for (uint32_t k = 0; k < nt; k++) {
        const char *t = types[k];
        bool better = pick == NULL || (stand_in_period(pick) && !stand_in_period(t)) ||
                      (stand_in_period(pick) == stand_in_period(t) && strcmp(t, pick) < 0);
        if (better)
            pick = t;
    }
    *type = pick;
    return 0;
}

void ps_series_set_push(ps_series_set_t *s, uint32_t *cap, ps_arena_t *arena, uint64_t sid, const ps_labels_t *ls)
{
    if (s->n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        uint64_t *ns = ps_arena_alloc(arena, *cap * sizeof(uint64_t));
        ps_labels_t *nl = ps_arena_alloc(arena, *cap * sizeof(ps_labels_t));
        if (s->n) {
            memcpy(ns, s->sids, s->n * sizeof(uint64_t));
            memcpy(nl, s->labels, s->n * sizeof(ps_labels_t));
        }
        s->sids = ns;
        s->labels = nl;
    }
    s->sids[s->n] = sid;
    s->labels[s->n] = *ls;
    s->n++;
}

int ps_query_select_union(ps_reader_t *r, ps_selector_t *sels, uint32_t nsels, int64_t start, int64_t end,
                          uint32_t max_series, ps_arena_t *arena, ps_series_set_t *out, ps_err_t *err)
{
    if (nsels == 1) /* one selector's series are distinct already, and within max_series */
        return ps_query_select(r, sels, start, end, max_series, arena, out, err);
    memset(out, 0, sizeof(*out));
    uint32_t cap = 0;
    ps_hmap_t seen;
    ps_hmap_init(&seen);
    int ret = 0;
    for (uint32_t i = 0; i < nsels && ret == 0; i++) {
        ps_series_set_t s;
        if ((ret = ps_query_select(r, &sels[i], start, end, max_series, arena, &s, err)) != 0)
            break;
        for (uint32_t k = 0; k < s.n; k++) {
            uint64_t dummy;
            if (ps_hmap_get(&seen, &s.sids[k], sizeof(uint64_t), &dummy))
                continue;
            ps_hmap_put(&seen, &s.sids[k], sizeof(uint64_t), 1);
            if (out->n == max_series) {
                ret = ps_err_set(err, PS_ELIMIT, "the match[] selectors match more than %u series (the limit)",
                                 max_series);
                break;
            }
            ps_series_set_push(out, &cap, arena, s.sids[k], &s.labels[k]);
        }
    }
    ps_hmap_dispose(&seen);
    return ret;
}

/* appends a copy of s (n bytes) to l's list, without looking at its set; the copy */
static const char *strset_push(ps_strset_t *l, const char *s, size_t n)
{
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 64;
        const char **nv = ps_arena_alloc(l->arena, l->cap * sizeof(char *));
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(char *));
        l->v = nv;
    }
    return l->v[l->n++] = ps_arena_strndup(l->arena, s, n);
}

int ps_strset_add(void *ctx, const char *s, size_t n)
{
    ps_strset_t *l = ctx;
    uint64_t dummy;
    if (ps_hmap_get(&l->seen, s, n, &dummy))
        return 0;
    ps_hmap_put(&l->seen, s, n, 1);
    strset_push(l, s, n);
    return 0;
}

void ps_strset_labels(ps_strset_t *l, const char *name, const ps_labels_t *ls)
{
    if (name == NULL) {
        for (uint32_t k = 0; k < ls->n; k++)
            ps_strset_add(l, ls->pairs[k].name, ls->pairs[k].nlen);
        return;
    }
    const ps_label_pair_t *v = ps_labels_get(ls, name);
    if (v)
        ps_strset_add(l, v->value, v->vlen);
}

/* The label index's names or values as they come: distinct and ascending bytewise, which is
 * strcmp's order for strings without NUL (labels hold none). ordered stays true while every
 * string keeps to that, so that the answer is the sorted set's without a set or a sort. */
typedef struct index_list {
    ps_strset_t *l;
    bool ordered;
    size_t prevn; /* the length of the last string listed */
} index_list_t;

/* Whether series ls would add a name (name NULL) or a value of name that l lacks. */
static bool strset_lacks(const ps_strset_t *l, const char *name, const ps_labels_t *ls)
{
    uint64_t dummy;
    if (name == NULL) {
        for (uint32_t k = 0; k < ls->n; k++)
            if (!ps_hmap_get(&l->seen, ls->pairs[k].name, ls->pairs[k].nlen, &dummy))
                return true;
        return false;
    }
    const ps_label_pair_t *v = ps_labels_get(ls, name);
    return v != NULL && !ps_hmap_get(&l->seen, v->value, v->vlen, &dummy);
}

/* The walk over every series for a range: a series is looked at (has data?) only when it would
 * add something. */
typedef struct walk_range_ctx {
    ps_reader_t *r;
    int64_t start, end;
    const char *name;
    ps_strset_t *l;
    bool profile;     /* profile series only (Pyroscope's label APIs) */
    const char *type; /* and of this profile type (__name__) only; NULL: any */
    ps_err_t *err;
} walk_range_ctx_t;

/* Whether sid has data in [start, end]; of profile series only, whether it is one that has (the
 * whole range: any profile series, as ps_query_profile_series_has answers it); of a type too, one
 * in its postings */
static int series_has(ps_reader_t *r, bool profile, const char *type, uint64_t sid, int64_t start, int64_t end,
                      ps_err_t *err)
{
    if (type != NULL) {
        uint64_t id = sid;
        size_t n = 1;
        int rc = ps_reader_postings_filter(r, "__name__", 8, type, strlen(type), &id, &n, err);
        if (rc || n == 0)
            return rc;
    }
    return profile ? ps_query_profile_series_has(r, sid, start, end, err) : ps_reader_has_data(r, sid, start, end, err);
}

static int on_series_in_range(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    walk_range_ctx_t *c = ctx;
    int has = ps_budget_check(c->err); /* a walk over every series */
    if (has == 0 && strset_lacks(c->l, c->name, ls)) {
        const char *t = c->type ? ps_labels_value(ls, "__name__") : NULL;
        if (c->type == NULL || (t != NULL && strcmp(t, c->type) == 0))
            has = series_has(c->r, c->profile, NULL, sid, c->start, c->end, c->err);
    }
    if (has < 0)
        return has; /* with detail in c->err */
    if (has)
        ps_strset_labels(c->l, c->name, ls);
    return 0;
}

/* The label index walked for a range: a value (or name) is listed when one of its series has
 * data in [start, end]. The label index's times decide most values (ps_reader_label_values_in);
 * the others' series are looked at, the first with data ending the look at that value. Past 16,384
 * looks at series, more than 4 for each string listed (most values without data, whose series
 * the index gives in no order the store keeps), the walk over every series in id order is
 * cheaper: it gives up (gave_up) for that one. */
uint64_t ps_query_labels_walk_after = 16384;
typedef struct in_range_ctx {
    ps_reader_t *r;
    int64_t start, end;
    ps_err_t *err;
    void *list;  /* index_list_t or each_ctx_t: where the names or values go */
    const uint32_t *listed; /* how many went */
    /* names: a series comes up under each of its names; its answer is looked up once. Two bits a
     * series id, bit 2i: looked at, bit 2i+1: has data (ids are dense: 250 KB for 10^6) */
    bool memo;
    uint64_t *bits;
    size_t nwords;
    uint64_t looks;
    bool gave_up;
    bool profile;     /* profile series only: series_has */
    const char *type; /* of this type only */
} in_range_ctx_t;

static int has_data_in_range(void *ctx, uint64_t sid)
{
    in_range_ctx_t *c = ctx;
    size_t w = (size_t)(sid / 32), b = (size_t)(sid % 32) * 2;
    if (c->memo && w < c->nwords && (c->bits[w] >> b & 1))
        return (int)(c->bits[w] >> (b + 1) & 1);
    if (++c->looks > ps_query_labels_walk_after && c->looks > 4 * (uint64_t)*c->listed) {
        c->gave_up = true;
        return PS_ELIMIT;
    }
    int has = ps_budget_check(c->err); /* at worst a walk over every series */
    if (has == 0)
        has = series_has(c->r, c->profile, c->type, sid, c->start, c->end, c->err);
    if (c->memo && has >= 0 && w < ((size_t)1 << 22)) { /* ids past 2^27 (32 MiB of bits): not kept */
        if (w >= c->nwords) {
            size_t n = c->nwords ? c->nwords : 1024;
            while (n <= w)
                n *= 2;
            c->bits = ps_xrealloc(c->bits, n * sizeof(uint64_t));
            memset(c->bits + c->nwords, 0, (n - c->nwords) * sizeof(uint64_t));
            c->nwords = n;
        }
        c->bits[w] |= (1ull | (uint64_t)(has > 0) << 1) << b;
    }
    return has; /* < 0 with detail in c->err */
}

static int index_list_add(void *ctx, const char *s, size_t n);

static int value_in_range(void *ctx, const char *v, size_t n)
{
    in_range_ctx_t *c = ctx;
    return index_list_add(c->list, v, n);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void ps_strset_finish(ps_strset_t *l, ps_strlist_t *out)
{
    if (l->n > 1)
        qsort(l->v, l->n, sizeof(char *), cmp_cstr);
    out->n = l->n;
    out->v = l->v;
    ps_hmap_dispose(&l->seen);
}


/* ps_query_labels_each: the index's strings to cb while they keep to the answer's order */
typedef struct each_ctx {
    int (*cb)(void *ctx, const char *s, size_t n);
    void *ctx;
    const char *prev;
    size_t prevn;
    bool any;
    uint32_t n; /* strings given to cb */
} each_ctx_t;

/* The two tests of each string that each_in_order makes, 8 bytes at a time and without a call (an
 * answer of 10^6 label values of ~16 bytes makes them 10^6 times; a string's last bytes are the
 * word that ends it, overlapping the one before): s holds a NUL byte... */
static inline bool has_nul(const char *s, size_t n)
{
    const uint64_t ones = 0x0101010101010101ull, high = 0x8080808080808080ull;
    if (n < 8)
        return memchr(s, 0, n) != NULL;
    uint64_t x;
    for (size_t k = 0; k + 8 < n; k += 8) {
        memcpy(&x, s + k, 8);
        if ((x - ones) & ~x & high) /* Bit Twiddling Hacks' haszero: exact as a test of any byte */
            return true;
    }
    memcpy(&x, s + n - 8, 8);
    return ((x - ones) & ~x & high) != 0;
}

/* ... and a (an bytes) sorts strictly before b bytewise, the shorter first on a common prefix
 * (memcmp's order, then the lengths) */
static inline bool sorts_before(const char *a, size_t an, const char *b, size_t bn)
{
    size_t m = an < bn ? an : bn;
    if (m < 8) {
        int d = memcmp(a, b, m);
        return d < 0 || (d == 0 && an < bn);
    }
    for (size_t k = 0; k + 8 < m; k += 8) {
        uint64_t x = ps_get_be64((const uint8_t *)a + k), y = ps_get_be64((const uint8_t *)b + k);
        if (x != y)
            return x < y;
    }
    /* the bytes before m - 8 are equal: its word decides the first difference */
    uint64_t x = ps_get_be64((const uint8_t *)a + m - 8), y = ps_get_be64((const uint8_t *)b + m - 8);
    return x != y ? x < y : an < bn;
}

/* (8 bytes at a time, with the lengths: a million values spent 9% of their answer in strcmp) */
static int index_list_add(void *ctx, const char *s, size_t n)
{
    index_list_t *c = ctx;
    ps_strset_t *l = c->l;
    if (c->ordered && has_nul(s, n))
        c->ordered = false;
    if (c->ordered && l->n > 0 && !sorts_before(l->v[l->n - 1], c->prevn, s, n))
        c->ordered = false;
    strset_push(l, s, n);
    c->prevn = n;
    return 0;
}

static int each_in_order(void *ctx, const char *s, size_t n)
{
    each_ctx_t *c = ctx;
    if (has_nul(s, n))
        return PS_EOUTOFORDER;
    if (c->any && !sorts_before(c->prev, c->prevn, s, n)) /* strictly ascending bytewise */
        return PS_EOUTOFORDER;
    c->prev = s; /* the index's own bytes: valid for the reader's transaction */
    c->prevn = n;
    c->any = true;
    c->n++;
    return c->cb(c->ctx, s, n);
}

/* The label index's names (name NULL) or name's values with data in [rc->start, rc->end], into cb:
 * of every series, of profile series only (rc->profile) or of rc->type's */
static int label_index_in(in_range_ctx_t *rc, const char *name, int (*cb)(void *ctx, const char *s, size_t n),
                          ps_err_t *err)
{
    ps_reader_t *r = rc->r;
    size_t nl = name ? strlen(name) : 0;
    if (rc->type)
        return name ? ps_reader_type_label_values_in(r, rc->type, name, nl, rc->start, rc->end, has_data_in_range, cb,
                                                     rc, err)
                    : ps_reader_type_label_names_in(r, rc->type, rc->start, rc->end, has_data_in_range, cb, rc, err);
    if (rc->profile)
        return name ? ps_reader_profile_label_values_in(r, name, nl, rc->start, rc->end, has_data_in_range, cb, rc,
                                                        err)
                    : ps_reader_profile_label_names_in(r, rc->start, rc->end, has_data_in_range, cb, rc, err);
    return name ? ps_reader_label_values_in(r, name, nl, rc->start, rc->end, has_data_in_range, cb, rc, err)
                : ps_reader_label_names_in(r, rc->start, rc->end, has_data_in_range, cb, rc, err);
}

static int each_in_range(void *ctx, const char *s, size_t n)
{
    return each_in_order(((in_range_ctx_t *)ctx)->list, s, n);
}

/* ps_query_labels_each, of every series or (profile) of profile series, of type's when not NULL */
static int labels_each(ps_reader_t *r, bool profile, const char *type, const char *name, int64_t start, int64_t end,
                       int (*cb)(void *ctx, const char *s, size_t n), void *ctx, bool *walk_all, ps_err_t *err)
{
    *walk_all = false;
    each_ctx_t c = {cb, ctx, NULL, 0, false, 0};
    if (!profile && start == INT64_MIN && end == INT64_MAX)
        return name ? ps_reader_label_values(r, name, strlen(name), each_in_order, &c, err)
                    : ps_reader_label_names(r, each_in_order, &c, err);
    /* a range: as ps_query_labels walks the label index, but into cb */
    in_range_ctx_t rc = {r, start, end, err, &c, &c.n, name == NULL, NULL, 0, 0, false, profile, type};
    int ret = label_index_in(&rc, name, each_in_range, err);
    free(rc.bits);
    *walk_all = rc.gave_up;
    return rc.gave_up ? PS_EOUTOFORDER : ret;
}

int ps_query_labels_each(ps_reader_t *r, const char *name, int64_t start, int64_t end,
                         int (*cb)(void *ctx, const char *s, size_t n), void *ctx, bool *walk_all, ps_err_t *err)
{
    return labels_each(r, false, NULL, name, start, end, cb, ctx, walk_all, err);
}

int ps_query_profile_labels_each(ps_reader_t *r, const char *type, const char *name, int64_t start, int64_t end,
                                 int (*cb)(void *ctx, const char *s, size_t n), void *ctx, ps_err_t *err)
{
    bool walk_all;
    return labels_each(r, true, type, name, start, end, cb, ctx, &walk_all, err);
}

static int labels_walk(ps_reader_t *r, const char *name, int64_t start, int64_t end, bool profile, const char *type,
                       ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    ps_strset_t l = {.arena = arena};
    ps_hmap_init(&l.seen);
    memset(out, 0, sizeof(*out));
    walk_range_ctx_t wc = {r, start, end, name, &l, profile, type, err};
    int ret = ps_reader_series_foreach(r, on_series_in_range, &wc, err);
    if (ret == 0)
        ps_strset_finish(&l, out);
    else
        ps_hmap_dispose(&l.seen);
    return ret;
}

int ps_query_labels_walk(ps_reader_t *r, const char *name, int64_t start, int64_t end, ps_arena_t *arena,
                         ps_strlist_t *out, ps_err_t *err)
{
    return labels_walk(r, name, start, end, false, NULL, arena, out, err);
}

/* The names or values of every series (profile: of every profile series, of type when not NULL)
 * with data in [start, end], from the label index and its times */
static int index_labels(ps_reader_t *r, const char *name, int64_t start, int64_t end, bool profile, const char *type,
                        ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    ps_strset_t l = {.arena = arena};
    ps_hmap_init(&l.seen);
    memset(out, 0, sizeof(*out));
    int ret = 0;
    /* a million values: the set and the sort took 1.7 s of the 1.8 s this answer took. With a
     * range, only values of series with data in it, as Prometheus answers: each value's series
     * looked at up to the first with data (a walk of every series took 4.6 s for 10^6). Profile
     * series only: their own times (ps_reader_profile_label_*_in), the whole range too (a
     * value of float series only is not listed) */
    index_list_t c = {&l, true, 0};
    in_range_ctx_t rc = {r, start, end, err, &c, &l.n, name == NULL, NULL, 0, 0, false, profile, type};
    if (!profile && type == NULL && start == INT64_MIN && end == INT64_MAX)
        ret = name ? ps_reader_label_values(r, name, strlen(name), index_list_add, &c, err)
                   : ps_reader_label_names(r, index_list_add, &c, err);
    else
        ret = label_index_in(&rc, name, value_in_range, err);
    free(rc.bits);
    if (rc.gave_up) { /* the walk over every series instead */
        ps_hmap_dispose(&l.seen);
        return labels_walk(r, name, start, end, profile, type, arena, out, err);
    } else if (ret == 0 && c.ordered) {
        out->n = l.n;
        out->v = l.v;
        ps_hmap_dispose(&l.seen);
        return 0;
    } else if (ret == 0) { /* not as the index should be: the set, as for the other ways */
        uint32_t n = l.n;
        const char **v = l.v;
        l.n = l.cap = 0;
        l.v = NULL;
        for (uint32_t i = 0; i < n; i++)
            ps_strset_add(&l, v[i], strlen(v[i]));
    }
    if (ret == 0)
        ps_strset_finish(&l, out);
    else
        ps_hmap_dispose(&l.seen);
    return ret;
}

int ps_query_profile_labels(ps_reader_t *r, const char *name, int64_t start, int64_t end, ps_arena_t *arena,
                            ps_strlist_t *out, ps_err_t *err)
{
    return index_labels(r, name, start, end, true, NULL, arena, out, err);
}

int ps_query_type_labels(ps_reader_t *r, const char *type, const char *name, int64_t start, int64_t end,
                         ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    return index_labels(r, name, start, end, true, type, arena, out, err);
}

int ps_query_labels(ps_reader_t *r, const char *name, ps_selector_t *sels, uint32_t nsels, int64_t start,
                    int64_t end, uint32_t max_series, ps_arena_t *arena, ps_strlist_t *out, ps_err_t *err)
{
    if (nsels == 0)
        return index_labels(r, name, start, end, false, NULL, arena, out, err);
    ps_strset_t l = {.arena = arena};
    ps_hmap_init(&l.seen);
    memset(out, 0, sizeof(*out));
    ps_series_set_t s;
    int ret = ps_query_select_union(r, sels, nsels, start, end, max_series, arena, &s, err);
    if (ret == 0) {
        for (uint32_t i = 0; i < s.n; i++)
            ps_strset_labels(&l, name, &s.labels[i]);
        ps_strset_finish(&l, out);
    } else {
        ps_hmap_dispose(&l.seen);
    }
    return ret;
}

/* ---- node map ---- */

void ps_nodemap_init(ps_nodemap_t *m)
{
    m->cap = 1024;
    m->count = 0;
    m->keys = ps_xcalloc(m->cap, sizeof(uint64_t));
    m->vals = ps_xcalloc(m->cap, sizeof(int64_t));
}

void ps_nodemap_dispose(ps_nodemap_t *m)
{
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
    m->cap = m->count = 0;
}

static inline size_t slot_of(uint64_t k, size_t mask)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdull;
    k ^= k >> 33;
    return (size_t)k & mask;
}

static void nodemap_grow(ps_nodemap_t *m)
{
    uint64_t *ok = m->keys;
    int64_t *ov = m->vals;
    size_t ocap = m->cap;
    m->cap *= 2;
    m->keys = ps_xcalloc(m->cap, sizeof(uint64_t));
    m->vals = ps_xcalloc(m->cap, sizeof(int64_t));
    for (size_t i = 0; i < ocap; i++) {
        if (ok[i] == 0)
            continue;
        size_t j = slot_of(ok[i], m->cap - 1);
        while (m->keys[j] != 0)
            j = (j + 1) & (m->cap - 1);
        m->keys[j] = ok[i];
        m->vals[j] = ov[i];
    }
    free(ok);
    free(ov);
}

void ps_nodemap_add(ps_nodemap_t *m, uint64_t node, int64_t v)
{
    if (node == 0)
        node = PS_NODEMAP_ROOT; /* the empty stack (Go's threadcreate has 8 such samples of 9) */
    if ((m->count + 1) * 2 > m->cap)
        nodemap_grow(m);
    size_t mask = m->cap - 1, j = slot_of(node, mask);
    while (m->keys[j] != 0 && m->keys[j] != node)
        j = (j + 1) & mask;
    if (m->keys[j] == 0) {
        m->keys[j] = node;
        m->vals[j] = 0;
        m->count++;
    }
    m->vals[j] = ps_sat_add(m->vals[j], v);
}

int64_t ps_nodemap_get(const ps_nodemap_t *m, uint64_t node)
{
    if (node == 0)
        node = PS_NODEMAP_ROOT;
    if (m->cap == 0)
        return 0;
    size_t mask = m->cap - 1, j = slot_of(node, mask);
    while (m->keys[j] != 0) {
        if (m->keys[j] == node)
            return m->vals[j];
        j = (j + 1) & mask;
    }
    return 0;
}

/* A merge adds into acc and counts the (stack node, value) pairs it read: the samples of
 * --query.max-samples for profile merges (core/budget.h), taken after each series. */
typedef struct add_ctx {
    ps_nodemap_t *acc;
    uint64_t n;
} add_ctx_t;

static void on_node_add(void *ctx, uint64_t node, int64_t v)
{
    add_ctx_t *c = ctx;
    c->n++;
    ps_nodemap_add(c->acc, node, v);
}

static int take_samples(add_ctx_t *c, ps_err_t *err)
{
    uint64_t n = c->n;
    c->n = 0;
    return ps_budget_samples(n, err);
}

/* ---- aggregation over time ---- */

/* part k (0-based) of a type id name:sample_type:...; *n its length; NULL if there is none */
static const char *id_part(const char *id, int k, size_t *n)
{
    for (; k > 0 && id; k--) {
        id = strchr(id, ':');
        if (id)
            id++;
    }
    if (id == NULL)
        return NULL;
    const char *e = strchr(id, ':');
    *n = e ? (size_t)(e - id) : strlen(id);
    return id;
}

static bool part_is(const char *p, size_t n, const char *w)
{
    return p && n == strlen(w) && memcmp(p, w, n) == 0;
}

static bool gauge_name(const char *p, size_t n)
{
    return part_is(p, n, "goroutine") || part_is(p, n, "goroutines") || part_is(p, n, "threadcreate");
}

ps_agg_t ps_query_type_agg(const char *type_id)
{
    size_t nn = 0, sn = 0, dn = 0;
    if (type_id == NULL)
        return PS_AGG_SUM;
    const char *name = id_part(type_id, 0, &nn), *st = id_part(type_id, 1, &sn), *d = id_part(type_id, 5, &dn);
    if (part_is(d, dn, "delta"))
        return PS_AGG_SUM;
    if (st && sn >= 5 && memcmp(st, "inuse", 5) == 0)
        return PS_AGG_AVG;
    if (gauge_name(st, sn) || gauge_name(name, nn))
        return PS_AGG_AVG;
    return PS_AGG_SUM;
}

const char *ps_agg_name(ps_agg_t a)
{
    return a == PS_AGG_AVG ? "avg" : a == PS_AGG_SUM ? "sum" : "auto";
}

/* v as one of two words: *which 0 or 1, -1 when v is absent or empty; else PS_EINVAL naming param,
 * both words and what the parameter means (hint). */
static int parse_one_of(const char *v, const char *param, const char *w0, const char *w1, const char *hint, int *which,
                        ps_err_t *err)
{
    *which = -1;
    if (v == NULL || v[0] == '\0')
        return 0;
    if (strcmp(v, w0) == 0 || strcmp(v, w1) == 0) {
        *which = strcmp(v, w1) == 0;
        return 0;
    }
    return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": \"%.32s\" is neither \"%s\" nor \"%s\" (%s)", param, v,
                      w0, w1, hint);
}

int ps_agg_parse(const char *v, const char *param, ps_agg_t *out, ps_err_t *err)
{
    int w, rc = parse_one_of(v, param, "sum", "avg", "the aggregation over time; absent: the profile type's own", &w, err);
    *out = w < 0 ? PS_AGG_AUTO : w == 0 ? PS_AGG_SUM : PS_AGG_AVG;
    return rc;
}

const char *ps_norm_name(ps_norm_t n)
{
    return n == PS_NORM_RATE ? "rate" : n == PS_NORM_NONE ? "none" : "auto";
}

int ps_norm_parse(const char *v, const char *param, ps_norm_t *out, ps_err_t *err)
{
    int w, rc = parse_one_of(v, param, "rate", "none",
                             "rate: value per second of profiled time; absent: rate when the windows' lengths differ", &w, err);
    *out = w < 0 ? PS_NORM_AUTO : w == 0 ? PS_NORM_RATE : PS_NORM_NONE;
    return rc;
}

/* v / n rounded half away from zero (n > 0) */
static inline int64_t div_round(int64_t v, int64_t n)
{
    int64_t q = v / n, rem = v % n;
    if (rem < 0 ? -rem >= n - (-rem) : rem >= n - rem)
        q += v < 0 ? -1 : 1;
    return q;
}

/* acc += round(m / n) node by node */
static void fold_mean(ps_nodemap_t *acc, const ps_nodemap_t *m, uint64_t n)
{
    for (size_t i = 0; i < m->cap; i++)
        if (m->keys[i] != 0)
            ps_nodemap_add(acc, m->keys[i], div_round(m->vals[i], (int64_t)n));
}

static void nodemap_clear(ps_nodemap_t *m)
{
    if (m->count == 0)
        return;
    memset(m->keys, 0, m->cap * sizeof(uint64_t));
    m->count = 0;
}

int ps_query_merge_range(ps_reader_t *r, const ps_series_set_t *s, int64_t start, int64_t end, ps_agg_t agg,
                         ps_nodemap_t *acc, ps_sum_info_t *info, ps_err_t *err)
{
    ps_sum_info_t own = {0};
    if (info == NULL)
        info = &own;
    if (agg != PS_AGG_AVG) {
        add_ctx_t c = {acc, 0};
        for (uint32_t i = 0; i < s->n; i++) {
            int ret = ps_reader_sum(r, s->sids[i], start, end, on_node_add, &c, info, err);
            if (ret == 0)
                ret = take_samples(&c, err);
            if (ret)
                return ret;
        }
        return 0;
    }
    /* each series summed on its own (into acc itself when it is the only one), then its mean added */
    bool direct = s->n == 1 && acc->count == 0;
    ps_nodemap_t one;
    if (!direct)
        ps_nodemap_init(&one);
    add_ctx_t c = {direct ? acc : &one, 0};
    int ret = 0;
    for (uint32_t i = 0; i < s->n && ret == 0; i++) {
        uint64_t before = info->profiles;
        ret = ps_reader_sum(r, s->sids[i], start, end, on_node_add, &c, info, err);
        if (ret == 0)
            ret = take_samples(&c, err);
        uint64_t n = info->profiles - before;
        if (ret || n == 0)
            continue;
        if (direct) {
            if (n > 1)
                for (size_t k = 0; k < acc->cap; k++)
                    if (acc->keys[k] != 0)
                        acc->vals[k] = div_round(acc->vals[k], (int64_t)n);
        } else {
            fold_mean(acc, &one, n);
            nodemap_clear(&one);
        }
    }
    if (!direct)
        ps_nodemap_dispose(&one);
    return ret;
}

int ps_query_merge_at(ps_reader_t *r, const ps_series_set_t *s, int64_t at, int64_t lookback, ps_nodemap_t *acc,
                      ps_sum_info_t *info, ps_err_t *err)
{
    add_ctx_t c = {acc, 0};
    for (uint32_t i = 0; i < s->n; i++) {
        int64_t ts;
        int ret = ps_reader_latest(r, s->sids[i], ps_sat_add(ps_sat_sub(at, lookback), 1), at, &ts, err);
        if (ret == PS_ENOTFOUND)
            continue;
        if (ret)
            return ret;
        if ((ret = ps_reader_sum(r, s->sids[i], ts, ts, on_node_add, &c, info, err)) != 0 ||
            (ret = take_samples(&c, err)) != 0)
            return ret;
    }
    return 0;
}

int ps_profile_type_parts(const char *id, ps_arena_t *a, const char *parts[6])
{
    int k = 0;
    size_t n = strlen(id), start = 0;
    for (size_t i = 0; i <= n; i++) {
        if (i == n || id[i] == ':') {
            if (k == 6)
                return PS_EINVAL;
            parts[k++] = ps_arena_strndup(a, id + start, i - start);
            start = i + 1;
        }
    }
    if (k < 5 || (k == 6 && strcmp(parts[5], "delta") != 0))
        return PS_EINVAL;
    if (k == 5)
        parts[5] = NULL;
    return 0;
}

/* Materialises n nodes with nv values each as a profile of the types (one per value). */
static int materialize(ps_reader_t *r, const char *const *types, uint32_t nv, const uint64_t *nodes,
                       const int64_t *vals, size_t n, const ps_sum_info_t *info, ps_arena_t *arena, ps_profile_t *out,
                       ps_err_t *err)
{
    const char **st = ps_arena_alloc(arena, 2 * (size_t)nv * sizeof(char *)), *pt[2] = {NULL, NULL};
    for (uint32_t k = 0; k < nv; k++) {
        const char *parts[6];
        if (types[k] == NULL || ps_profile_type_parts(types[k], arena, parts) != 0)
            return ps_err_set(err, PS_EINVAL, "\"%s\" is not a profile type id (name:type:unit:period_type:period_unit)",
                              types[k] ? types[k] : "");
        st[2 * k] = parts[1];
        st[2 * k + 1] = parts[2];
        pt[0] = parts[3];
        pt[1] = parts[4];
    }
    int ret = ps_reader_materialize(r, nodes, vals, n, nv, st, pt, arena, out, err);
    if (ret == 0 && info != NULL) {
        out->time_nanos = info->profiles ? info->min_ts : 0;
        out->duration_nanos = info->duration;
        out->period = info->period;
    }
    return ret;
}

/* ---- profile selections ---- */

#define UNKNOWN_TYPE "unknown:unknown:unknown:unknown:unknown"

static int on_any(void *ctx, uint64_t sid)
{
    (void)sid;
    *(int *)ctx = 1;
    return 1;
}

int ps_query_any_posting(ps_reader_t *r, const char *name, size_t nlen, const char *value, size_t vlen,
                         ps_err_t *err)
{
    int found = 0;
    int ret = ps_reader_postings(r, name, nlen, value, vlen, on_any, &found, err);
    return ret < 0 ? ret : found;
}

/* The first __name__="..." matcher, or -1. */
static int name_matcher(const ps_selector_t *sel)
{
    for (uint32_t i = 0; i < sel->n; i++)
        if (sel->m[i].op == PS_MATCH_EQ && strcmp(sel->m[i].name, "__name__") == 0)
            return (int)i;
    return -1;
}

/* The stored profile types of a family. name: the profile name; pt/pu/delta: NULL for any. */
typedef struct family_ctx {
    ps_arena_t *arena;
    const char *name, *pt, *pu;
    int delta; /* -1 any, 0 no, 1 yes */
    const char **v;
    uint32_t n, cap;
} family_ctx_t;

static int on_family_type(void *ctx, const char *v, size_t n)
{
    family_ctx_t *f = ctx;
    const char *parts[6];
    char *id = ps_arena_strndup(f->arena, v, n);
    if (ps_profile_type_parts(id, f->arena, parts) != 0 || strcmp(parts[0], f->name) != 0)
        return 0;
    if ((f->pt && strcmp(parts[3], f->pt) != 0) || (f->pu && strcmp(parts[4], f->pu) != 0))
        return 0;
    if (f->delta >= 0 && (parts[5] != NULL) != (f->delta == 1))
        return 0;
    if (f->n == f->cap) {
        f->cap = f->cap ? f->cap * 2 : 8;
        const char **nv = ps_arena_alloc(f->arena, f->cap * sizeof(char *));
        if (f->n)
            memcpy(nv, f->v, f->n * sizeof(char *));
        f->v = nv;
    }
    f->v[f->n++] = id;
    return 0;
}

/* q->only's profiles of the series of set in [q->start, q->end], summed into acc */
static int merge_only(ps_reader_t *r, const ps_profile_query_t *q, const ps_series_set_t *set, ps_nodemap_t *acc,
                      ps_sum_info_t *info, ps_err_t *err)
{
    for (uint32_t i = 0; i < set->n; i++) {
        uint32_t lo = 0, hi = q->nonly; /* the first ref of the series */
        while (lo < hi) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (q->only[mid].sid < set->sids[i])
                lo = mid + 1;
            else
                hi = mid;
        }
        for (uint32_t k = lo; k < q->nonly && q->only[k].sid == set->sids[i]; k++) {
            int64_t ts = q->only[k].ts;
            if (ts < q->start || ts > q->end)
                continue;
            ps_series_set_t one = {1, (uint64_t *)&set->sids[i], &set->labels[i]};
            int ret = ps_query_merge_range(r, &one, ts, ts, PS_AGG_SUM, acc, info, err);
            if (ret)
                return ret;
        }
    }
    return 0;
}

static int merge_set(ps_reader_t *r, const ps_profile_query_t *q, const ps_series_set_t *set, ps_agg_t agg,
                     ps_nodemap_t *acc, ps_sum_info_t *info, ps_err_t *err)
{
    if (q->ranged && q->nonly > 0)
        return merge_only(r, q, set, acc, info, err);
    if (q->ranged)
        return ps_query_merge_range(r, set, q->start, q->end, agg, acc, info, err);
    return ps_query_merge_at(r, set, q->at, q->lookback, acc, info, err);
}

static void sel_alloc(ps_profile_sel_t *out, uint32_t ntypes, ps_arena_t *arena)
{
    out->ntypes = ntypes;
    out->types = ps_arena_calloc(arena, ntypes, sizeof(char *));
    out->totals = ps_arena_calloc(arena, ntypes, sizeof(int64_t));
    out->aggs = ps_arena_calloc(arena, ntypes, sizeof(ps_agg_t));
    out->accs = ps_xcalloc(ntypes, sizeof(ps_nodemap_t));
    for (uint32_t k = 0; k < ntypes; k++)
        ps_nodemap_init(&out->accs[k]);
}

static void sel_totals(ps_profile_sel_t *out)
{
    for (uint32_t k = 0; k < out->ntypes; k++) {
        const ps_nodemap_t *m = &out->accs[k];
        uint64_t t = 0;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != 0)
                t = ps_sat_addu(t, m->vals[i] < 0 ? 0 - (uint64_t)m->vals[i] : (uint64_t)m->vals[i]);
        out->totals[k] = t > INT64_MAX ? INT64_MAX : (int64_t)t;
    }
}

void ps_profile_sel_dispose(ps_profile_sel_t *s)
{
    if (s == NULL || s->accs == NULL)
        return;
    for (uint32_t k = 0; k < s->ntypes; k++)
        ps_nodemap_dispose(&s->accs[k]);
    free(s->accs);
    s->accs = NULL;
}

static void window(const ps_profile_query_t *q, int64_t *lo, int64_t *hi)
{
    if (q->ranged) {
        *lo = q->start;
        *hi = q->end;
    } else {
        *lo = ps_sat_add(ps_sat_sub(q->at, q->lookback), 1);
        *hi = q->at;
    }
}

/* One profile type (the selector's as it is). */
static int select_one_type(ps_reader_t *r, const ps_profile_query_t *q, ps_arena_t *arena, ps_profile_sel_t *out,
                           ps_err_t *err)
{
    ps_series_set_t set;
    const char *type;
    int64_t lo, hi;
    window(q, &lo, &hi);
    int ret = ps_query_select(r, q->sel, lo, hi, q->max_series, arena, &set, err);
    if (ret == 0)
        ret = ps_query_single_type(&set, &type, err);
    if (ret)
        return ret;
    int ni = name_matcher(q->sel);
    if (set.n == 0 && ni >= 0) {
        /* nothing matched: a profile type never stored is a mistake worth saying */
        const ps_matcher_t *m = &q->sel->m[ni];
        int found = ps_query_any_posting(r, "__name__", 8, m->value, m->vlen, err);
        if (found < 0)
            return found;
        if (!found)
            return ps_err_set(err, PS_ENOTFOUND,
                              "invalid parameter \"%s\": unknown profile type \"%s\" (GET /api/v1/profiles/types lists "
                              "the stored ones)",
                              q->param, m->value);
        type = m->value;
    }
    sel_alloc(out, 1, arena);
    out->types[0] = type ? type : UNKNOWN_TYPE;
    out->aggs[0] = q->nonly > 0 ? PS_AGG_SUM : q->agg != PS_AGG_AUTO ? q->agg : ps_query_type_agg(out->types[0]);
    out->nseries = set.n;
    ret = merge_set(r, q, &set, out->aggs[0], &out->accs[0], &out->info, err);
    if (ret == 0 && q->span_labels && set.n == 1 && out->info.profiles == 1) {
        uint64_t *one = ps_arena_alloc(arena, sizeof(uint64_t));
        one[0] = set.sids[0];
        out->one_sids = one;
        out->one_ts = out->info.min_ts;
    }
    return ret;
}

int ps_query_profile_ref(ps_reader_t *r, const ps_profile_ref_t *ref, ps_arena_t *arena, ps_profile_sel_t *out,
                         ps_labels_t *labels, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    ps_labels_t ls;
    int ret = ps_reader_series_labels(r, ref->sid, arena, &ls, err);
    if (ret == PS_ENOTFOUND)
        return ps_err_set(err, PS_ENOTFOUND, "series %llu does not exist", (unsigned long long)ref->sid);
    if (ret)
        return ret;
    const ps_label_pair_t *nm = ps_labels_get(&ls, "__name__");
    sel_alloc(out, 1, arena);
    out->types[0] = nm ? nm->value : UNKNOWN_TYPE;
    out->aggs[0] = ps_query_type_agg(out->types[0]);
    out->nseries = 1;
    ps_series_set_t one = {1, (uint64_t *)&ref->sid, &ls};
    ret = ps_query_merge_range(r, &one, ref->ts, ref->ts, PS_AGG_SUM, &out->accs[0], &out->info, err);
    if (ret == 0)
        sel_totals(out);
    if (ret == 0 && out->info.profiles == 1) { /* its samples with their span labels */
        uint64_t *sid = ps_arena_alloc(arena, sizeof(uint64_t));
        *sid = ref->sid;
        out->one_sids = sid;
        out->one_ts = ref->ts;
    }
    if (labels)
        *labels = ls;
    return ret;
}

static int select_family(ps_reader_t *r, const ps_profile_query_t *q, int ni, const char *parts[6],
                         ps_arena_t *arena, ps_profile_sel_t *out, ps_err_t *err)
{
    family_ctx_t f = {.arena = arena, .name = parts[0], .delta = -1};
    if (parts[1] != NULL) { /* a full type id: its period type and delta flag too */
        f.pt = parts[3];
        f.pu = parts[4];
        f.delta = parts[5] != NULL;
    }
    int ret = ps_reader_label_values(r, "__name__", 8, on_family_type, &f, err);
    if (ret)
        return ret;
    if (f.n == 0 && parts[1] == NULL)
        return ps_err_set(err, PS_EINVAL,
                          "invalid parameter \"%s\": \"%s\" is not a profile type "
                          "(name:sample_type:sample_unit:period_type:period_unit[:delta]) nor the name of stored ones "
                          "(GET /api/v1/profiles/types lists them)",
                          q->param, parts[0]);
    if (f.n == 0)
        return ps_err_set(err, PS_ENOTFOUND,
                          "invalid parameter \"%s\": unknown profile type \"%s\" (GET /api/v1/profiles/types lists "
                          "the stored ones)",
                          q->param, ni >= 0 ? q->sel->m[ni].value : parts[0]);
    /* the selector with __name__ set to each type in turn (prepended when it has none) */
    ps_selector_t sel = *q->sel;
    uint32_t at = 0;
    if (ni < 0) {
        sel.m = ps_arena_alloc(arena, (q->sel->n + 1) * sizeof(ps_matcher_t));
        memcpy(sel.m + 1, q->sel->m, q->sel->n * sizeof(ps_matcher_t));
        sel.m[0] = (ps_matcher_t){.op = PS_MATCH_EQ, .name = "__name__", .nlen = 8};
        sel.n++;
    } else {
        sel.m = ps_arena_alloc(arena, q->sel->n * sizeof(ps_matcher_t));
        memcpy(sel.m, q->sel->m, q->sel->n * sizeof(ps_matcher_t));
        at = (uint32_t)ni;
    }
    ps_series_set_t *sets = ps_arena_calloc(arena, f.n, sizeof(ps_series_set_t));
    uint32_t nonempty = 0, total = 0;
    int64_t lo, hi;
    window(q, &lo, &hi);
    for (uint32_t k = 0; k < f.n; k++) {
        sel.m[at].value = f.v[k];
        sel.m[at].vlen = strlen(f.v[k]);
        if ((ret = ps_query_select(r, &sel, lo, hi, q->max_series, arena, &sets[k], err)) != 0)
            return ret;
        nonempty += sets[k].n > 0;
        total += sets[k].n;
        if (total > q->max_series)
            return ps_err_set(err, PS_ELIMIT, "the selector matches more than %u series (the limit, %s); narrow it",
                              q->max_series, ps_setting_name(PS_SETTING_QUERY_MAX_SERIES));
    }
    uint32_t n = nonempty ? nonempty : f.n;
    sel_alloc(out, n, arena);
    ps_series_set_t **use = ps_arena_alloc(arena, n * sizeof(*use));
    for (uint32_t k = 0, j = 0; k < f.n; k++)
        if (!nonempty || sets[k].n > 0) {
            out->types[j] = f.v[k];
            use[j++] = &sets[k];
        }
    /* one sample type once, one period type */
    for (uint32_t k = 1; k < n; k++) {
        const char *pa[6], *pb[6];
        ps_profile_type_parts(out->types[k - 1], arena, pa);
        ps_profile_type_parts(out->types[k], arena, pb);
        if (strcmp(pa[1], pb[1]) == 0 || strcmp(pa[3], pb[3]) != 0 || strcmp(pa[4], pb[4]) != 0)
            return ps_err_set(err, PS_EINVAL,
                              "invalid parameter \"%s\": the profile types %s and %s cannot be one profile (%s); "
                              "select one of them by its full type id",
                              q->param, out->types[k - 1], out->types[k],
                              strcmp(pa[1], pb[1]) == 0 ? "the same sample type twice" : "different period types");
    }
    uint64_t best = 0;
    uint64_t *one = q->span_labels ? ps_arena_alloc(arena, n * sizeof(uint64_t)) : NULL;
    int64_t one_ts = 0;
    for (uint32_t k = 0; k < n; k++) {
        ps_sum_info_t info = {0};
        out->aggs[k] = q->agg != PS_AGG_AUTO ? q->agg : ps_query_type_agg(out->types[k]);
        if ((ret = merge_set(r, q, use[k], out->aggs[k], &out->accs[k], &info, err)) != 0)
            return ret;
        if (one != NULL && use[k]->n == 1 && info.profiles == 1 && (k == 0 || info.min_ts == one_ts)) {
            one[k] = use[k]->sids[0];
            one_ts = info.min_ts;
        } else {
            one = NULL;
        }
        out->nseries += use[k]->n;
        if (k == 0 || info.profiles > best) {
            best = info.profiles;
            out->info = info;
        }
    }
    out->one_sids = one;
    out->one_ts = one_ts;
    return 0;
}

int ps_query_profile_select(ps_reader_t *r, const ps_profile_query_t *q, ps_arena_t *arena, ps_profile_sel_t *out,
                            ps_err_t *err)
{
    int ret;
    memset(out, 0, sizeof(*out));
    int ni = name_matcher(q->sel);
    const char *parts[6] = {NULL, NULL, NULL, NULL, NULL, NULL};
    if (ni >= 0 && ps_profile_type_parts(q->sel->m[ni].value, arena, parts) != 0) {
        const char *v = q->sel->m[ni].value;
        if (strchr(v, ':') != NULL || v[0] == '\0')
            return ps_err_set(err, PS_EINVAL,
                              "invalid parameter \"%s\": \"%s\" is not a profile type "
                              "(name:sample_type:sample_unit:period_type:period_unit[:delta]; GET /api/v1/profiles/types "
                              "lists them) nor a profile name",
                              q->param, v);
        parts[0] = v; /* a bare profile name: its family */
    } else if (q->all_types && ni < 0) {
        /* the family of the profile name the selected series share */
        ps_series_set_t set;
        int64_t lo, hi;
        window(q, &lo, &hi);
        if ((ret = ps_query_select(r, q->sel, lo, hi, q->max_series, arena, &set, err)) != 0)
            return ret;
        for (uint32_t i = 0; i < set.n; i++) {
            const ps_label_pair_t *nm = ps_labels_get(&set.labels[i], "__name__");
            const char *p2[6];
            if (nm == NULL || ps_profile_type_parts(nm->value, arena, p2) != 0)
                continue;
            if (parts[0] == NULL)
                parts[0] = p2[0];
            else if (strcmp(parts[0], p2[0]) != 0)
                return ps_err_set(err, PS_EINVAL,
                                  "invalid parameter \"%s\": the selector matches profiles of %s and of %s; "
                                  "sample_types=all merges the sample types of one profile name: add __name__ or a "
                                  "profile name to the selector",
                                  q->param, parts[0], p2[0]);
        }
        if (parts[0] == NULL) {
            sel_alloc(out, 1, arena);
            out->types[0] = UNKNOWN_TYPE;
            out->aggs[0] = q->agg != PS_AGG_AUTO ? q->agg : PS_AGG_SUM;
            out->window = q->ranged ? ps_sat_sub(q->end, q->start) : q->lookback;
            return 0;
        }
    } else if (!q->all_types) {
        ret = select_one_type(r, q, arena, out, err);
        if (ret == 0)
            sel_totals(out);
        out->window = q->ranged ? ps_sat_sub(q->end, q->start) : q->lookback;
        return ret;
    }
    ret = select_family(r, q, ni, parts, arena, out, err);
    if (ret == 0)
        sel_totals(out);
    out->window = q->ranged ? ps_sat_sub(q->end, q->start) : q->lookback;
    return ret;
}

static double profiled_s(const ps_profile_sel_t *s)
{
    return (double)(s->info.duration > 0 ? s->info.duration : s->window) / 1e9;
}

void ps_query_diff_normalize(ps_profile_sel_t *base, const ps_profile_sel_t *cmp, ps_norm_t ask, ps_diff_norm_t *out)
{
    out->base_s = profiled_s(base);
    out->compare_s = profiled_s(cmp);
    out->used = ask == PS_NORM_AUTO ? (base->window != cmp->window ? PS_NORM_RATE : PS_NORM_NONE) : ask;
    if (out->used != PS_NORM_RATE)
        return;
    bool sums = false;
    for (uint32_t k = 0; k < base->ntypes; k++)
        sums |= base->aggs[k] == PS_AGG_SUM;
    for (uint32_t k = 0; k < cmp->ntypes; k++)
        sums |= cmp->aggs[k] == PS_AGG_SUM;
    if (!sums || out->base_s <= 0 || out->compare_s <= 0) {
        out->used = PS_NORM_NONE;
        return;
    }
    double f = out->compare_s / out->base_s;
    if (f == 1.0)
        return;
    for (uint32_t k = 0; k < base->ntypes; k++) {
        ps_nodemap_t *m = &base->accs[k];
        if (base->aggs[k] != PS_AGG_SUM)
            continue;
        for (size_t i = 0; i < m->cap; i++)
            if (m->keys[i] != 0)
                m->vals[i] = ps_sat_round((double)m->vals[i] * f);
    }
    sel_totals(base);
}

void ps_query_profile_comment(ps_profile_t *p, ps_arena_t *arena, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    if (n < 0)
        return;
    size_t len = (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1;
    ps_str_t *strs = ps_arena_alloc(arena, ((size_t)p->nstrings + 1) * sizeof(ps_str_t));
    if (p->nstrings)
        memcpy(strs, p->strings, p->nstrings * sizeof(ps_str_t));
    strs[p->nstrings] = (ps_str_t){ps_arena_strndup(arena, buf, len), len};
    uint32_t *cs = ps_arena_alloc(arena, ((size_t)p->ncomments + 1) * sizeof(uint32_t));
    if (p->ncomments)
        memcpy(cs, p->comments, p->ncomments * sizeof(uint32_t));
    cs[p->ncomments++] = p->nstrings;
    p->strings = strs;
    p->nstrings++;
    p->comments = cs;
}

int ps_query_span_rows(ps_reader_t *r, const uint64_t *sids, uint32_t nv, int64_t ts, uint64_t **nodes, int64_t **vals,
                       size_t *n, const ps_span_part_t ***lab, ps_arena_t *arena, ps_err_t *err)
{
    *lab = NULL;
    ps_span_part_t **parts = ps_arena_alloc(arena, nv * sizeof(*parts));
    size_t *np = ps_arena_alloc(arena, nv * sizeof(size_t)), extra = 0;
    for (uint32_t k = 0; k < nv; k++) {
        int ret = ps_reader_span_parts(r, sids[k], ts, arena, &parts[k], &np[k], err);
        if (ret)
            return ret;
        extra += np[k];
    }
    if (extra == 0)
        return 0;
    size_t cap = *n + 2 * extra + 1, m = *n;
    uint64_t *nd = ps_xrealloc(*nodes, cap * sizeof(uint64_t));
    int64_t *vl = ps_xrealloc(*vals, cap * nv * sizeof(int64_t));
    *nodes = nd;
    *vals = vl;
    const ps_span_part_t **lb = ps_xcalloc(cap, sizeof(*lb));
    ps_hmap_t base, rows; /* node -> its row + 1; (span, flags, node, trace) -> its row + 1 */
    ps_buf_t kb = PS_BUF_INIT;
    ps_hmap_init(&base);
    ps_hmap_init(&rows);
    for (size_t i = 0; i < m; i++)
        ps_hmap_put(&base, &nd[i], 8, i + 1);
    for (uint32_t k = 0; k < nv; k++)
        for (size_t j = 0; j < np[k]; j++) {
            const ps_span_part_t *p = &parts[k][j];
            uint64_t row;
            ps_buf_reset(&kb);
            ps_buf_append(&kb, &p->span, 8);
            ps_buf_append(&kb, &p->node, 8);
            ps_buf_append(&kb, &p->flags, 1);
            if (p->trace_len > 0)
                ps_buf_append(&kb, p->trace, p->trace_len);
            const void *key = kb.data;
            size_t klen = kb.len;
            if (!ps_hmap_get(&base, &p->node, 8, &row)) { /* the node's samples summed to 0 */
                nd[m] = p->node;
                memset(vl + m * nv, 0, nv * sizeof(int64_t));
                row = ++m;
                ps_hmap_put(&base, &p->node, 8, row);
            }
            vl[(row - 1) * nv + k] = ps_sat_sub(vl[(row - 1) * nv + k], p->value);
            if (!ps_hmap_get(&rows, key, klen, &row)) { /* one row per span written one way, and node */
                nd[m] = p->node;
                memset(vl + m * nv, 0, nv * sizeof(int64_t));
                lb[m] = p;
                row = ++m;
                ps_hmap_put(&rows, key, klen, row);
            }
            vl[(row - 1) * nv + k] = p->value;
        }
    ps_hmap_dispose(&base);
    ps_hmap_dispose(&rows);
    ps_buf_dispose(&kb);
    size_t w = 0;
    for (size_t i = 0; i < m; i++) {
        bool any = false;
        for (uint32_t k = 0; k < nv; k++)
            any |= vl[i * nv + k] != 0;
        if (!any)
            continue;
        nd[w] = nd[i];
        memmove(vl + w * nv, vl + i * nv, nv * sizeof(int64_t));
        lb[w++] = lb[i];
    }
    *n = w;
    *lab = lb;
    return 0;
}

void ps_query_span_labels(ps_profile_t *p, const ps_span_part_t **lab, ps_arena_t *arena)
{
    size_t nl = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        nl += lab[i] != NULL;
    ps_str_t *strs = ps_arena_alloc(arena, ((size_t)p->nstrings + 3 + 2 * nl) * sizeof(ps_str_t));
    if (p->nstrings)
        memcpy(strs, p->strings, p->nstrings * sizeof(ps_str_t));
    uint32_t ns = p->nstrings, kspan = ns++, kprof = ns++, ktrace = ns++;
    strs[kspan] = (ps_str_t){"span_id", 7};
    strs[kprof] = (ps_str_t){"profile_id", 10};
    strs[ktrace] = (ps_str_t){"trace_id", 8};
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_span_part_t *sp = lab[i];
        if (sp == NULL)
            continue;
        ps_sample_t *smp = &p->samples[i];
        ps_label_t *l = ps_arena_alloc(arena, ((size_t)smp->nlabels + 2) * sizeof(ps_label_t));
        if (smp->nlabels)
            memcpy(l, smp->labels, smp->nlabels * sizeof(ps_label_t));
        char *hex = ps_arena_alloc(arena, 17);
        snprintf(hex, 17, sp->flags & PS_SPAN_F_UPPER ? "%016" PRIX64 : "%016" PRIx64, sp->span);
        strs[ns] = (ps_str_t){hex, 16};
        l[smp->nlabels++] = (ps_label_t){.key = sp->flags & PS_SPAN_F_PROFILE_ID ? kprof : kspan, .str = ns++};
        if (sp->trace_len > 0) {
            strs[ns] = (ps_str_t){sp->trace, sp->trace_len};
            l[smp->nlabels++] = (ps_label_t){.key = ktrace, .str = ns++};
        }
        smp->labels = l;
    }
    p->strings = strs;
    p->nstrings = ns;
}

int ps_query_profile_build(ps_reader_t *r, const ps_profile_sel_t *a, const ps_profile_sel_t *b, int mode,
                           ps_arena_t *arena, ps_profile_t *out, ps_err_t *err)
{
    const ps_profile_sel_t *ts = a; /* whose types */
    if (mode != PS_PROFILE_ONE) {
        if (b == NULL)
            return ps_err_set(err, PS_EINTERNAL, "a diff needs two selections");
        if (a->nseries == 0 && b->nseries > 0)
            ts = b;
        else if (a->nseries > 0 && b->nseries > 0) {
            bool same = a->ntypes == b->ntypes;
            for (uint32_t k = 0; same && k < a->ntypes; k++)
                same = strcmp(a->types[k], b->types[k]) == 0 ||
                       (a->ntypes == 1 && ps_profile_type_same_measure(a->types[k], b->types[k]));
            if (!same)
                return ps_err_set(err, PS_EINVAL, "base and compare select different profile types (%s%s and %s%s)",
                                  a->types[0], a->ntypes > 1 ? ", ..." : "", b->types[0], b->ntypes > 1 ? ", ..." : "");
        }
        if (mode == PS_PROFILE_PAIR && ts->ntypes != 1)
            return ps_err_set(err, PS_EINVAL, "a flame graph diff shows one sample type; this one has %u", ts->ntypes);
    }
    uint32_t nt = ts->ntypes, nv = mode == PS_PROFILE_PAIR ? 2 : nt;
    const ps_nodemap_t *am = a->nseries || ts == a ? a->accs : NULL, *bm = b && (b->nseries || ts == b) ? b->accs : NULL;
    /* every node of either side, once (a single map's keys are unique: no check needed) */
    ps_nodemap_t seen;
    ps_nodemap_init(&seen);
    bool dedup = nt > 1 || (am && bm && mode != PS_PROFILE_ONE);
    size_t cap = 1;
    for (uint32_t k = 0; k < nt; k++)
        cap += (am ? am[k].count : 0) + (bm ? bm[k].count : 0);
    uint64_t *nodes = ps_xmalloc(cap * sizeof(uint64_t));
    int64_t *vals = ps_xmalloc(cap * nv * sizeof(int64_t));
    size_t n = 0;
    for (int side = 0; side < 2; side++) {
        const ps_nodemap_t *ms = side == 0 ? am : bm;
        if (ms == NULL || (side == 1 && mode == PS_PROFILE_ONE))
            continue;
        for (uint32_t k = 0; k < nt; k++)
            for (size_t i = 0; i < ms[k].cap; i++) {
                uint64_t node = ms[k].keys[i];
                if (node == 0)
                    continue;
                if (dedup) {
                    if (ps_nodemap_get(&seen, node) != 0)
                        continue;
                    ps_nodemap_add(&seen, node, 1);
                }
                bool any = false;
                int64_t *v = vals + n * nv;
                for (uint32_t t = 0; t < nt; t++) {
                    int64_t va = am ? ps_nodemap_get(&am[t], node) : 0, vb = bm ? ps_nodemap_get(&bm[t], node) : 0;
                    if (mode == PS_PROFILE_ONE)
                        v[t] = va;
                    else if (mode == PS_PROFILE_SUB)
                        v[t] = ps_sat_sub(vb, va);
                    else {
                        v[0] = va;
                        v[1] = vb;
                        any |= va != 0 || vb != 0;
                        continue;
                    }
                    any |= v[t] != 0;
                }
                if (any)
                    nodes[n++] = node == PS_NODEMAP_ROOT ? 0 : node;
            }
    }
    const ps_sum_info_t *info = b && b->info.profiles ? &b->info : &a->info;
    const char *pair[2] = {ts->types[0], ts->types[0]};
    const ps_span_part_t **lab = NULL; /* the span of each row (NULL: none) */
    int ret = 0;
    if (mode == PS_PROFILE_ONE && a->one_sids != NULL && a == ts)
        ret = ps_query_span_rows(r, a->one_sids, a->ntypes, a->one_ts, &nodes, &vals, &n, &lab, arena, err);
    if (ret == 0)
        ret = materialize(r, mode == PS_PROFILE_PAIR ? pair : ts->types, nv, nodes, vals, n, info, arena, out, err);
    if (ret == 0 && lab != NULL)
        ps_query_span_labels(out, lab, arena);
    free(lab);
    for (uint32_t k = 0; ret == 0 && ts->aggs && k < nt; k++) {
        const char *parts[6];
        if (ps_profile_type_parts(ts->types[k], arena, parts) != 0)
            continue;
        if (ts->aggs[k] == PS_AGG_AVG)
            ps_query_profile_comment(out, arena,
                                     "profstore: %s: aggregation=avg: each series' profiles averaged over time, node by "
                                     "node, and the series' means summed",
                                     parts[1]);
        else
            ps_query_profile_comment(out, arena, "profstore: %s: aggregation=sum: every profile of every series summed",
                                     parts[1]);
    }
    ps_nodemap_dispose(&seen);
    free(nodes);
    free(vals);
    return ret;
}
