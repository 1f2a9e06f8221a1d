/*
 * entry.c - the bytes of a forwarding log entry (docs/FORMAT.md "Forwarding log"). Storage keeps
 * them opaque; only this file writes and reads them.
 *
 *   kind 1, a profile:  0x01, uvarint L, labels (ps_labels_encode, L bytes), gzipped pprof (the rest)
 *   kind 3, a profile with the client's id (a Pyroscope push's RawSample.ID): 0x03, the id's 16
 *                       bytes, then as kind 1 (read back as kind 1 with the id; pushed as the
 *                       RawSample.ID of the forwarded sample, so the receiver resolves the same id)
 *   kind 2, samples:    0x02, uvarint nseries, per series: uvarint L, labels (L bytes),
 *                       uvarint nsamples, per sample t (8 BE, ms, two's complement), value bits (8 BE);
 *                       then, when the write carried metric metadata: uvarint nmeta, per entry
 *                       uvarint type, and family, help, unit each as uvarint length + bytes
 *                       (an entry without it has none; nseries is 0 only when nmeta is not)
 *
 *   e.g. one sample of {__name__="fb", i="0"} at t=1000 ms, value 1, with metadata counter "fb" help "h":
 *     02 01 10 08 5f5f6e616d655f5f 02 6662 01 69 01 30 01 00000000000003e8 3ff0000000000000
 *     01 01 02 6662 01 68 00
 *
 * A profile entry is what Pyroscope's push needs: __name__ is the profile name (the part of the
 * stored __name__ before its first ':': the receiver derives the types from the pprof, as it does
 * for any push), the other labels of the append's first series, and service_name, which
 * Pyroscope requires, set to job when absent (else "unknown_service", the name Pyroscope's
 * clients send when none is configured). The pprof is the profile as stored (after the scraper's
 * deltas), with time_nanos = the stored timestamp and duration_nanos = the stored duration, gzipped
 * at level 1: encoding costs this thread (the decode pool, the scraper), not the writer. When the
 * append carries the body it was decoded from (a push) and the stored time and duration are the
 * body's own, the body goes into the entry as it is (gzipped or not, as received): encoding a
 * profile costs about as much as decoding it, so this keeps forwarding a push cheap.
 *
 * Fidelity: when a stored series of the append is a delta (its type id ends ":delta": the
 * scraper's deltas of cumulative profiles, process_cpu, wall), the labels get __delta__="false",
 * Pyroscope's "already a delta, compute none" (Alloy sets it on the deltas it makes); a profstore
 * receiver then names the types as the scraper does (src/ingest/push.c), so the series have the
 * same type ids there. Only the stored sample types are sent: a type the append skipped
 * (keep_sample_type, a cumulative type without a baseline) is cut from the profile (re-encoded).
 */
#include <string.h>

#include "core/varint.h"
#include "forward.h"
#include "proto/pprof.h"

enum { KIND_PROFILE = 1, KIND_SAMPLES = 2, KIND_PROFILE_ID = 3 };

static void put_labels(ps_buf_t *out, const ps_labels_t *ls)
{
    ps_buf_t tmp = PS_BUF_INIT;
    ps_labels_encode(ls, &tmp);
    ps_put_uvarint(out, tmp.len);
    ps_buf_append(out, tmp.data, tmp.len);
    ps_buf_dispose(&tmp);
}

void ps_forward_profile_entry(const ps_append_t *app, ps_buf_t *out)
{
    if (app->nseries == 0 || app->profile == NULL)
        return;
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls = ps_labels_borrow(&app->series_labels[0]);
    const char *name = ps_labels_value(&ls, "__name__");
    size_t nlen = name != NULL ? strcspn(name, ":") : 0;
    if (name != NULL)
        ps_labels_set(&ls, &a, "__name__", 8, name, nlen);
    if (ps_labels_value(&ls, "service_name") == NULL) {
        const char *job = ps_labels_value(&ls, "job");
        const char *svc = job != NULL ? job : "unknown_service";
        ps_labels_set(&ls, &a, "service_name", 12, svc, strlen(svc));
    }
    bool any_delta = false;
    for (uint32_t i = 0; i < app->nseries && !any_delta; i++) {
        const char *id = ps_labels_value(&app->series_labels[i], "__name__");
        size_t il = id != NULL ? strlen(id) : 0;
        any_delta = il > 6 && memcmp(id + il - 6, ":delta", 6) == 0;
    }
    if (any_delta)
        ps_labels_set(&ls, &a, "__delta__", 9, "false", 5);
    bool all_types = app->nseries == app->profile->ntypes;
    size_t start = out->len;
    if (app->uuid != NULL) {
        ps_buf_putc(out, KIND_PROFILE_ID);
        ps_buf_append(out, app->uuid, 16);
    } else {
        ps_buf_putc(out, KIND_PROFILE);
    }
    put_labels(out, &ls);
    if (all_types && app->raw != NULL && app->raw_len > 0 && app->profile->time_nanos == app->ts &&
        app->profile->duration_nanos == app->duration) {
        /* the body as pushed decodes to what is stored: no encoding (it costs as much as decoding) */
        ps_buf_append(out, app->raw, app->raw_len);
    } else {
        ps_profile_t p = *app->profile;
        p.time_nanos = app->ts;
        p.duration_nanos = app->duration;
        if (!all_types) { /* only the stored types (type_index: the type of each series) */
            const ps_profile_t *o = app->profile;
            p.ntypes = app->nseries;
            p.sample_types = ps_arena_alloc(&a, (app->nseries + 1) * sizeof(*p.sample_types));
            for (uint32_t k = 0; k < app->nseries; k++)
                p.sample_types[k] = o->sample_types[app->type_index[k]];
            p.samples = ps_arena_alloc(&a, (o->nsamples + 1) * sizeof(*p.samples));
            for (uint32_t i = 0; i < o->nsamples; i++) {
                p.samples[i] = o->samples[i];
                p.samples[i].values = ps_arena_alloc(&a, (app->nseries + 1) * sizeof(int64_t));
                for (uint32_t k = 0; k < app->nseries; k++)
                    p.samples[i].values[k] = o->samples[i].values[app->type_index[k]];
            }
        }
        ps_err_t err;
        if (ps_pprof_encode(&p, 1, out, &err) != 0)
            out->len = start; /* a profile that was decoded encodes; if not, it is not forwarded */
    }
    ps_arena_dispose(&a);
}

static void put_str(ps_buf_t *out, const char *p, size_t len)
{
    ps_put_uvarint(out, len);
    ps_buf_append(out, p, len);
}

void ps_forward_floats_entry(ps_float_append_t *const *items, size_t n, const ps_metric_meta_t *meta, size_t nm,
                             ps_buf_t *out)
{
    uint64_t nseries = 0;
    for (size_t i = 0; i < n; i++)
        if (items[i]->status == 0 && items[i]->stored != NULL && items[i]->accepted > 0)
            nseries++;
    if (nseries == 0 && nm == 0)
        return;
    ps_buf_putc(out, KIND_SAMPLES);
    ps_put_uvarint(out, nseries);
    for (size_t i = 0; i < n; i++) {
        const ps_float_append_t *f = items[i];
        if (f->status != 0 || f->stored == NULL || f->accepted == 0)
            continue;
        put_labels(out, f->labels);
        uint64_t k = 0;
        for (uint32_t j = 0; j < f->nsamples; j++)
            k += f->stored[j] != 0;
        ps_put_uvarint(out, k);
        for (uint32_t j = 0; j < f->nsamples; j++) {
            if (!f->stored[j])
                continue;
            uint64_t bits;
            memcpy(&bits, &f->samples[j].v, 8);
            ps_put_be64(out, (uint64_t)f->samples[j].t);
            ps_put_be64(out, bits);
        }
    }
    if (nm == 0)
        return;
    ps_put_uvarint(out, nm);
    for (size_t i = 0; i < nm; i++) {
        ps_put_uvarint(out, (uint64_t)(meta[i].type < 0 ? 0 : meta[i].type));
        put_str(out, meta[i].family, meta[i].family_len);
        put_str(out, meta[i].help, meta[i].help_len);
        put_str(out, meta[i].unit, meta[i].unit_len);
    }
}

/* A length-prefixed string into p and len (pointing into the bytes of d); false when damaged. */
static bool get_str(ps_dec_t *d, const char **p, size_t *len)
{
    uint64_t l = ps_dec_uvarint(d);
    if (d->err || l > ps_dec_left(d))
        return false;
    *p = (const char *)ps_dec_bytes(d, (size_t)l);
    *len = (size_t)l;
    return *p != NULL || l == 0;
}

static int get_labels(ps_dec_t *d, ps_arena_t *arena, ps_labels_t *ls, ps_err_t *err)
{
    uint64_t l = ps_dec_uvarint(d);
    const uint8_t *p = d->err || l > ps_dec_left(d) ? NULL : ps_dec_bytes(d, (size_t)l);
    if (p == NULL || ps_labels_decode(p, (size_t)l, arena, ls) != 0)
        return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged labels");
    return 0;
}

int ps_forward_entry_decode(const uint8_t *data, size_t len, ps_arena_t *arena, int *kind,
                            ps_forward_series_t **series, size_t *nseries, ps_metric_meta_t **meta, size_t *nmeta,
                            ps_err_t *err)
{
    ps_dec_t d;
    ps_dec_init(&d, data, len);
    *kind = ps_dec_u8(&d);
    *series = NULL;
    *nseries = 0;
    if (meta != NULL) {
        *meta = NULL;
        *nmeta = 0;
    }
    if (*kind == KIND_PROFILE || *kind == KIND_PROFILE_ID) {
        ps_forward_series_t *s = ps_arena_calloc(arena, 1, sizeof(*s));
        if (*kind == KIND_PROFILE_ID) {
            const uint8_t *u = ps_dec_left(&d) >= 16 ? ps_dec_bytes(&d, 16) : NULL;
            if (u == NULL)
                return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged profile id");
            memcpy(s->uuid, u, 16);
            s->has_uuid = true;
            *kind = KIND_PROFILE;
        }
        if (get_labels(&d, arena, &s->labels, err) != 0)
            return PS_ECORRUPT;
        s->pprof = d.p;
        s->pprof_len = ps_dec_left(&d);
        *series = s;
        *nseries = 1;
        return 0;
    }
    if (*kind != KIND_SAMPLES)
        return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: unknown kind %d", *kind);
    uint64_t ns = ps_dec_uvarint(&d);
    if (d.err || ns > ps_dec_left(&d))
        return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged series count");
    ps_forward_series_t *s = ps_arena_calloc(arena, (size_t)ns + 1, sizeof(*s));
    for (uint64_t i = 0; i < ns; i++) {
        if (get_labels(&d, arena, &s[i].labels, err) != 0)
            return PS_ECORRUPT;
        uint64_t k = ps_dec_uvarint(&d);
        if (d.err || k > ps_dec_left(&d) / 16)
            return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged sample count");
        s[i].samples = ps_arena_alloc(arena, (size_t)k * sizeof(ps_float_sample_t) + 1);
        s[i].nsamples = (uint32_t)k;
        for (uint64_t j = 0; j < k; j++) {
            s[i].samples[j].t = (int64_t)ps_dec_be64(&d);
            uint64_t bits = ps_dec_be64(&d);
            memcpy(&s[i].samples[j].v, &bits, 8);
        }
    }
    if (d.err)
        return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged samples");
    uint64_t nm = 0;
    ps_metric_meta_t *m = NULL;
    if (ps_dec_left(&d) > 0) { /* metadata */
        nm = ps_dec_uvarint(&d);
        if (d.err || nm == 0 || nm > ps_dec_left(&d) / 4)
            return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged metadata count");
        m = ps_arena_calloc(arena, (size_t)nm, sizeof(*m));
        for (uint64_t i = 0; i < nm; i++) {
            m[i].type = (int)ps_dec_uvarint(&d);
            if (d.err || !get_str(&d, &m[i].family, &m[i].family_len) || !get_str(&d, &m[i].help, &m[i].help_len) ||
                !get_str(&d, &m[i].unit, &m[i].unit_len))
                return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged metadata");
        }
    }
    if (d.err || ps_dec_left(&d) != 0 || (ns == 0 && nm == 0))
        return ps_err_set(err, PS_ECORRUPT, "forwarding log entry: damaged samples");
    if (meta != NULL) {
        *meta = m;
        *nmeta = (size_t)nm;
    }
    *series = s;
    *nseries = (size_t)ns;
    return 0;
}
