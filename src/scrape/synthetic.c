/*
 * synthetic.c - up, scrape_duration_seconds, scrape_samples_* for a scrape (see synthetic.h).
 */
#include <string.h>

#include "synthetic.h"

static const char *const names[PS_SYNTHETIC_SERIES] = {
    "up", "scrape_duration_seconds", "scrape_samples_scraped", "scrape_samples_post_metric_relabeling",
};

static double stale_nan(void)
{
    uint64_t bits = PS_STALE_NAN_BITS;
    double v;
    memcpy(&v, &bits, sizeof(v));
    return v;
}

void ps_synthetic_build(const ps_labels_t *target, const char *profile, const ps_scrape_report_t *r, int64_t t_ms,
                        ps_arena_t *arena, ps_float_append_t out[PS_SYNTHETIC_SERIES])
{
    /* the target's labels (copied: the target may be gone when the writer gets to them) plus
     * profile, then each name: one pair array per series */
    ps_labels_t base = {0, NULL, 0};
    for (uint32_t i = 0; i < target->n; i++) {
        const ps_label_pair_t *p = &target->pairs[i];
        ps_labels_set(&base, arena, p->name, p->nlen, p->value, p->vlen);
    }
    ps_labels_set(&base, arena, "profile", 7, profile, strlen(profile));
    double v[PS_SYNTHETIC_SERIES];
    if (r != NULL) {
        v[0] = r->up ? 1.0 : 0.0;
        v[1] = r->duration;
        v[2] = (double)r->samples;
        v[3] = (double)r->samples_kept;
        t_ms = r->t_ms;
    } else {
        for (int i = 0; i < PS_SYNTHETIC_SERIES; i++)
            v[i] = stale_nan();
    }
    for (int i = 0; i < PS_SYNTHETIC_SERIES; i++) {
        ps_labels_t *ls = ps_arena_alloc(arena, sizeof(*ls));
        *ls = ps_labels_borrow(&base);
        ps_labels_set(ls, arena, "__name__", 8, names[i], strlen(names[i]));
        ps_float_sample_t *s = ps_arena_alloc(arena, sizeof(*s));
        s->t = t_ms;
        s->v = v[i];
        memset(&out[i], 0, sizeof(out[i]));
        out[i].labels = ls;
        out[i].samples = s;
        out[i].nsamples = 1;
    }
}
