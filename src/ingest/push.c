/*
 * push.c - a Pyroscope Connect push (push.v1.PushRequest, decoded by proto/pyroscope.c) becomes
 * store appends: the labels of each series validated as Pyroscope's distributor does
 * (pkg/validation/validate.go ValidateLabels), then one append per raw sample, built like a
 * native push (ps_ingest_build): __name__ is the Pyroscope profile name (process_cpu, memory,
 * wall, ...) and each sample type becomes a series named by its profile type id
 * name:type:unit:ptype:punit[:delta], delta by the native rule (process_cpu and wall), so a profile
 * pushed either way lands in the same series.
 *
 * Label rules, in Pyroscope's order, with its messages ('{a="b", ...}' is the series' labels,
 * sorted by name):
 *  - at least one label ("error at least one label pair is required per profile");
 *  - at most PS_LABELS_MAX (64) labels ("profile series '...' has 70 label names; limit 64");
 *  - __name__ a valid metric name ("invalid labels '...' with error: invalid metric name"); here
 *    also without ':' and at most 64 bytes, as the native push's name (it is part of the type id);
 *  - service_name present and not empty ("error service_name label is required");
 *  - names at most PS_LABEL_NAME_MAX bytes, values at most PS_LABEL_VALUE_MAX ("profile with labels
 *    '...' has label name too long: '...'" / "... label value too long: '...'");
 *  - dots in names become '_' (Pyroscope's default); a rewritten name equal to another one with
 *    the same value is dropped, with another value it is a duplicate; a name that is then not
 *    [a-zA-Z_][a-zA-Z0-9_]* is "invalid labels '...' with error: invalid label name '...'";
 *  - duplicate names ("profile with labels '...' has duplicate label name: '...'").
 * Then (profstore's storage rules): labels with an empty value are dropped (Prometheus: an empty
 * value is no label); names starting with "__" other than __name__ (__session_id__, __delta__, ...)
 * are dropped, as Pyroscope's /ingest drops them (profstore reserves "__" names).
 *
 * __delta__="false" (Pyroscope's convention, set by Alloy's pyroscope.scrape and by profstore's
 * forwarding on profiles that are deltas already; Pyroscope's head computes no delta for them):
 * the profile is stored as it came, and its sample types are named as the scraper names the deltas
 * it made: ":delta" for the types that count since process start (ps_ingest_cumulative_type:
 * alloc_objects, alloc_space, contentions, delay) and for every type of a profile that is a delta
 * by name (process_cpu, wall); the other types (inuse_*, goroutines) as they are. So a scraped
 * mutex or memory profile forwarded by another profstore lands in the series it has there. Any
 * other value, or none, keeps the native rule.
 *
 * All or nothing before anything is written: any bad label or sample fails the whole request.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <stdatomic.h>
#include <stdint.h>

#include "core/encode.h"
#include "core/timeutil.h"
#include "ingest.h"

/* '{a="b", c="d"}' of the (sorted) pairs, cut to fit the error message. */
static void format_pairs(const ps_pyro_label_t *ls, size_t n, char *out, size_t size)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_putc(&b, '{');
    for (size_t i = 0; i < n && b.len < size; i++) {
        if (i > 0)
            PS_BUF_LIT(&b, ", ");
        ps_buf_append(&b, ls[i].name, ls[i].nlen);
        ps_buf_putc(&b, '=');
        ps_buf_json_str(&b, ls[i].value, ls[i].vlen);
    }
    ps_buf_putc(&b, '}');
    size_t len = b.len < size - 1 ? b.len : size - 1;
    if (b.len >= size && size > 4) {
        memcpy(out, b.data, size - 4);
        memcpy(out + size - 4, "...", 4);
    } else {
        memcpy(out, b.data, len);
        out[len] = '\0';
    }
    ps_buf_dispose(&b);
}

static int cmp_label(const void *a, const void *b)
{
    const ps_pyro_label_t *x = a, *y = b;
    size_t n = x->nlen < y->nlen ? x->nlen : y->nlen;
    int c = memcmp(x->name, y->name, n);
    return c != 0 ? c : (x->nlen > y->nlen) - (x->nlen < y->nlen);
}

static const ps_pyro_label_t *find(const ps_pyro_label_t *ls, size_t n, const char *name)
{
    size_t nl = strlen(name);
    for (size_t i = 0; i < n; i++)
        if (ls[i].nlen == nl && memcmp(ls[i].name, name, nl) == 0)
            return &ls[i];
    return NULL;
}

/* The series' labels as they came, sorted, for an error message (only formatted on failure). */
static const char *series_str(const ps_pyro_series_t *s, ps_arena_t *arena, char *out, size_t size)
{
    ps_pyro_label_t *ls = ps_arena_alloc(arena, s->nlabels * sizeof(*ls));
    memcpy(ls, s->labels, s->nlabels * sizeof(*ls));
    qsort(ls, s->nlabels, sizeof(*ls), cmp_label);
    format_pairs(ls, s->nlabels, out, size);
    return out;
}

/* Validates the labels of one series (Pyroscope's rules, above) into base (without __name__) and
 * the profile name. */
static int series_labels(const ps_pyro_series_t *s, ps_arena_t *arena, ps_labels_t *base, const char **name,
                         size_t *name_len, bool *is_delta, ps_err_t *err)
{
    char ls_str[200];
    size_t n = s->nlabels;
    if (n == 0)
        return ps_err_set(err, PS_EINVAL, "error at least one label pair is required per profile");
    ps_pyro_label_t *ls = ps_arena_alloc(arena, n * sizeof(*ls));
    memcpy(ls, s->labels, n * sizeof(*ls));
    qsort(ls, n, sizeof(*ls), cmp_label);
#define LS_STR series_str(s, arena, ls_str, sizeof(ls_str)) /* formatted only for an error */
    if (n > PS_LABELS_MAX)
        return ps_err_set(err, PS_EINVAL, "profile series '%s' has %zu label names; limit %d", LS_STR, n,
                          PS_LABELS_MAX);
    const ps_pyro_label_t *nm = find(ls, n, "__name__");
    if (nm == NULL || !ps_metric_name_valid(nm->value, nm->vlen))
        return ps_err_set(err, PS_EINVAL, "invalid labels '%s' with error: invalid metric name", LS_STR);
    if (memchr(nm->value, ':', nm->vlen) != NULL || nm->vlen > 64)
        return ps_err_set(err, PS_EINVAL, "invalid labels '%s' with error: invalid metric name (a profile name has no "
                          "':' and at most 64 bytes: it is the first part of the profile type id)", LS_STR);
    const ps_pyro_label_t *svc = find(ls, n, "service_name");
    if (svc == NULL || svc->vlen == 0)
        return ps_err_set(err, PS_EINVAL, "error service_name label is required");
    *name = nm->value;
    *name_len = nm->vlen;
    const ps_pyro_label_t *dl = find(ls, n, "__delta__");
    *is_delta = dl != NULL && dl->vlen == 5 && memcmp(dl->value, "false", 5) == 0;

    /* rewrite dotted names, check names and lengths */
    for (size_t i = 0; i < n; i++) {
        if (ls[i].nlen > PS_LABEL_NAME_MAX)
            return ps_err_set(err, PS_EINVAL, "profile with labels '%s' has label name too long: '%.64s...'", LS_STR,
                              ls[i].name);
        if (ls[i].vlen > PS_LABEL_VALUE_MAX)
            return ps_err_set(err, PS_EINVAL, "profile with labels '%s' has label value too long: '%.64s...'", LS_STR,
                              ls[i].value);
        if (memchr(ls[i].name, '.', ls[i].nlen) != NULL) {
            char *nn = ps_arena_strndup(arena, ls[i].name, ls[i].nlen);
            for (char *p = nn; *p; p++)
                if (*p == '.')
                    *p = '_';
            ls[i].name = nn;
        }
        if (!ps_label_name_valid(ls[i].name, ls[i].nlen))
            return ps_err_set(err, PS_EINVAL, "invalid labels '%s' with error: invalid label name '%.*s'", LS_STR,
                              (int)(ls[i].nlen > 64 ? 64 : ls[i].nlen), ls[i].name);
    }
    qsort(ls, n, sizeof(*ls), cmp_label); /* again: rewritten names may sort elsewhere */
    base->n = 0;
    base->cap = 0;
    base->pairs = ps_arena_alloc(arena, n * sizeof(*base->pairs));
    for (size_t i = 0; i < n; i++) {
        if (i > 0 && cmp_label(&ls[i - 1], &ls[i]) == 0) {
            if (ls[i - 1].vlen == ls[i].vlen && memcmp(ls[i - 1].value, ls[i].value, ls[i].vlen) == 0)
                continue; /* a rewritten a_b equal to an a_b already there: one label */
            return ps_err_set(err, PS_EINVAL, "profile with labels '%s' has duplicate label name: '%.*s'", LS_STR,
                              (int)ls[i].nlen, ls[i].name);
        }
        if (ls[i].vlen == 0 || (ls[i].nlen >= 2 && ls[i].name[0] == '_' && ls[i].name[1] == '_'))
            continue; /* __name__ becomes the type id; other __ names are dropped; empty is absent */
        ps_label_pair_t *p = &base->pairs[base->n++];
        p->name = ls[i].name;
        p->nlen = (uint32_t)ls[i].nlen;
        p->value = ls[i].value;
        p->vlen = (uint32_t)ls[i].vlen;
    }
#undef LS_STR
    return ps_labels_normalize(base, err);
}

/* One raw sample into app. */
static int sample_append(const ps_pyro_sample_t *smp, const char *name, size_t name_len, const ps_labels_t *base,
                         bool is_delta, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_append_t *app,
                         ps_err_t *err)
{
    int rc;
    if (smp->len == 0)
        return ps_err_set(err, PS_EINVAL, "raw_profile is empty: expected a pprof profile (gzipped or not)");
    if ((rc = ps_ingest_check_body(smp->raw, smp->len, NULL, 0, err)) != 0)
        return rc;
    ps_profile_t *p = ps_arena_calloc(arena, 1, sizeof(*p));
    if ((rc = ps_pprof_decode(smp->raw, smp->len, lim, arena, p, err)) != 0)
        return rc;
    if ((rc = ps_ingest_check_name(p, name, name_len, err)) != 0)
        return rc;
    int64_t ts = p->time_nanos > 0 ? p->time_nanos : ps_time_now();
    bool by_name = ps_ingest_default_delta(name, name_len);
    uint8_t *modes = NULL;
    if (is_delta) { /* __delta__="false": named as the scraper names the deltas it made (above) */
        modes = ps_arena_alloc(arena, p->ntypes + 1);
        for (uint32_t k = 0; k < p->ntypes; k++)
            modes[k] = by_name || ps_ingest_cumulative_type(ps_profile_str(p, p->sample_types[k].type))
                           ? PS_INGEST_DELTA : PS_INGEST_ASIS;
    }
    if ((rc = ps_ingest_build(p, name, name_len, base, ts, modes, by_name, arena, app, err)) != 0)
        return rc;
    app->raw = smp->raw;
    app->raw_len = smp->len;
    /* the client's profile id, stored with the profile when it is a UUID (else none) */
    uint8_t uuid[16];
    if (smp->id != NULL && ps_uuid_scan(smp->id, strlen(smp->id), uuid) == 0) {
        uint8_t *u = ps_arena_alloc(arena, 16);
        memcpy(u, uuid, 16);
        app->uuid = u;
    }
    return 0;
}

static int cmp_app_ts(const void *a, const void *b)
{
    const ps_append_t *x = *(ps_append_t *const *)a, *y = *(ps_append_t *const *)b;
    return (x->ts > y->ts) - (x->ts < y->ts);
}

/* The decoding of one request's samples, shared by the threads of ps_par_for. */
typedef struct series_info {
    ps_labels_t base;
    const char *name;
    size_t name_len;
    bool is_delta;
} series_info_t;

typedef struct slot_fail {
    size_t at; /* the lowest index this thread saw fail (SIZE_MAX: none) */
    ps_err_t err;
} slot_fail_t;

typedef struct push_work {
    const ps_pyro_push_t *req;
    const ps_pprof_limits_t *lim;
    ps_arena_t *arena;   /* the caller's, for slot 0 */
    ps_arena_t *arenas;  /* the helpers' (slots 1 ..), absorbed into arena at the end */
    series_info_t *si;
    uint32_t *series_of; /* flat sample index -> series */
    size_t *first;       /* series -> its first flat index */
    ps_append_t **out;   /* flat index -> its append */
    slot_fail_t *fails;  /* per slot */
    atomic_size_t fail;  /* the lowest index known to fail: later ones need not be decoded */
} push_work_t;

static void decode_one(void *ctx, unsigned slot, size_t i)
{
    push_work_t *w = ctx;
    if (i > atomic_load_explicit(&w->fail, memory_order_relaxed))
        return; /* an earlier sample failed: this one's answer is not needed */
    ps_arena_t *arena = slot == 0 ? w->arena : &w->arenas[slot];
    uint32_t si = w->series_of[i];
    const series_info_t *in = &w->si[si];
    ps_append_t *app = ps_arena_calloc(arena, 1, sizeof(*app));
    ps_err_t err;
    ps_err_clear(&err);
    if (sample_append(&w->req->series[si].samples[i - w->first[si]], in->name, in->name_len, &in->base, in->is_delta,
                      w->lim, arena, app, &err) != 0) {
        slot_fail_t *f = &w->fails[slot];
        if (i < f->at) {
            f->at = i;
            f->err = err;
        }
        size_t cur = atomic_load(&w->fail);
        while (i < cur && !atomic_compare_exchange_weak(&w->fail, &cur, i))
            ;
        return;
    }
    w->out[i] = app;
}

int ps_ingest_push_prepare(const ps_pyro_push_t *req, const ps_pprof_limits_t *lim, const ps_par_t *par,
                           ps_arena_t *arena, ps_append_t ***apps, size_t *napps, ps_err_t *err)
{
    /* the labels of every series first (cheap); samples are decoded only up to the first bad
     * series, so the error is the one a walk in order would meet first */
    ps_err_t ignored;
    if (err == NULL)
        err = &ignored;
    series_info_t *si = ps_arena_calloc(arena, req->nseries + 1, sizeof(*si));
    size_t *first = ps_arena_alloc(arena, (req->nseries + 1) * sizeof(*first));
    size_t nseries = req->nseries, total = 0;
    ps_err_t label_err;
    for (size_t i = 0; i < req->nseries; i++) {
        first[i] = total;
        if (series_labels(&req->series[i], arena, &si[i].base, &si[i].name, &si[i].name_len, &si[i].is_delta,
                          &label_err) != 0) {
            nseries = i;
            break;
        }
        total += req->series[i].nsamples;
    }
    push_work_t w = {.req = req, .lim = lim, .arena = arena, .si = si, .first = first};
    unsigned width = par != NULL && par->width > 1 ? par->width : 1;
    w.series_of = ps_arena_alloc(arena, (total + 1) * sizeof(uint32_t));
    for (size_t i = 0; i < nseries; i++)
        for (size_t j = 0; j < req->series[i].nsamples; j++)
            w.series_of[first[i] + j] = (uint32_t)i;
    w.out = ps_arena_calloc(arena, total + 1, sizeof(*w.out));
    w.fails = ps_arena_alloc(arena, width * sizeof(*w.fails));
    for (unsigned k = 0; k < width; k++)
        w.fails[k].at = SIZE_MAX;
    w.arenas = ps_arena_calloc(arena, width, sizeof(*w.arenas));
    atomic_init(&w.fail, SIZE_MAX);
    ps_par_for(par, total, decode_one, &w);
    for (unsigned k = 1; k < width; k++)
        ps_arena_absorb(arena, &w.arenas[k]);

    const slot_fail_t *f = NULL;
    for (unsigned k = 0; k < width; k++)
        if (w.fails[k].at != SIZE_MAX && (f == NULL || w.fails[k].at < f->at))
            f = &w.fails[k];
    if (f != NULL) {
        size_t i = w.series_of[f->at];
        *err = f->err;
        return ps_err_prefix(err, "series[%zu].samples[%zu]", i, f->at - first[i]);
    }
    if (nseries < req->nseries) {
        *err = label_err;
        return ps_err_prefix(err, "series[%zu]", nseries);
    }
    qsort(w.out, total, sizeof(*w.out), cmp_app_ts); /* a series' profiles in time order, as the store wants */
    *apps = w.out;
    *napps = total;
    return 0;
}
