/*
 * remote.c - remote_write into the store: a decoded request (proto/remote.h) becomes one
 * PS_WREQ_SAMPLES writer request (float appends and metadata, stored in the writer's next
 * transaction with whatever else is queued), and its outcome becomes the answer.
 *
 * Rejections follow Prometheus' TSDB appender and Mimir's answer: every valid sample of a request
 * is stored; out-of-order samples (older than the series' newest), duplicate timestamps with
 * another value and samples older than the retention period are counted and make the answer a 400
 * naming the first rejected series, its timestamps and the counts, so the sender drops them
 * instead of retrying. An identical duplicate (a retried request) is accepted silently.
 */
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "core/hash.h"
#include "core/timeutil.h"
#include "ingest.h"

void ps_ingest_remote_prepare(const ps_remote_write_t *w, ps_arena_t *arena, ps_wreq_t *r)
{
    uint32_t n = 0;
    size_t keys = 0, nsamples = 0;
    for (uint32_t i = 0; i < w->nseries; i++)
        if (w->series[i].nsamples > 0) {
            n++;
            nsamples += w->series[i].nsamples;
            keys += ps_labels_encoded_max(&w->series[i].labels);
        }
    /* not zeroed whole: each append's error buffer is most of its bytes (it was most of the decode
     * threads' memset and page faults); the writer writes a message before it reads one */
    ps_float_append_t *fa = ps_arena_alloc(arena, (n + 1) * sizeof(*fa));
    ps_float_append_t **items = ps_arena_alloc(arena, (n + 1) * sizeof(*items));
    ps_float_sample_t *smp = ps_arena_alloc(arena, (nsamples + 1) * sizeof(*smp));
    uint8_t *key = ps_arena_alloc(arena, keys + 1);
    uint32_t k = 0;
    for (uint32_t i = 0; i < w->nseries; i++) {
        const ps_remote_series_t *rs = &w->series[i];
        if (rs->nsamples == 0)
            continue;
        /* ps_remote_sample_t and ps_float_sample_t are both (int64 ms, double) */
        for (uint32_t j = 0; j < rs->nsamples; j++)
            smp[j] = (ps_float_sample_t){rs->samples[j].t_ms, rs->samples[j].v};
        const size_t e0 = offsetof(ps_float_append_t, err), e1 = e0 + sizeof(fa[k].err);
        memset(&fa[k], 0, e0);
        memset((char *)&fa[k] + e1, 0, sizeof(fa[k]) - e1);
        ps_err_clear(&fa[k].err);
        fa[k].labels = &rs->labels;
        fa[k].samples = smp;
        fa[k].nsamples = rs->nsamples;
        smp += rs->nsamples;
        /* the series' key and its hash here, on a decode thread: the single writer finds a series
         * it holds by them without encoding and hashing the labels itself */
        fa[k].key = key;
        fa[k].klen = (uint32_t)ps_labels_encode_to(&rs->labels, key);
        fa[k].key_hash = ps_hash64(key, fa[k].klen, 0);
        key += fa[k].klen;
        items[k] = &fa[k];
        k++;
    }
    ps_metric_meta_t *meta = ps_arena_calloc(arena, w->nmetadata + 1, sizeof(*meta));
    for (uint32_t i = 0; i < w->nmetadata; i++) {
        const ps_remote_metadata_t *m = &w->metadata[i];
        meta[i] = (ps_metric_meta_t){m->family, m->family_len, (int)m->type, m->help, m->help_len, m->unit,
                                     m->unit_len};
    }
    r->kind = PS_WREQ_SAMPLES;
    r->floats = items;
    r->nfloats = k;
    r->meta = meta;
    r->nmeta = w->nmetadata;
}

static void put_time(ps_buf_t *b, int64_t t_ms)
{
    char ts[48];
    if (t_ms > INT64_MAX / 1000000 || t_ms < INT64_MIN / 1000000)
        snprintf(ts, sizeof(ts), "out of range");
    else
        ps_format_time_go(t_ms * 1000000, ts, sizeof(ts));
    ps_buf_printf(b, "%" PRId64 " (%s)", t_ms, ts);
}

int ps_ingest_remote_result(const ps_wreq_t *r, ps_remote_result_t *res, ps_buf_t *msg)
{
    memset(res, 0, sizeof(*res));
    const ps_float_append_t *first = NULL;
    uint64_t total = 0;
    for (size_t i = 0; i < r->nfloats; i++) {
        const ps_float_append_t *f = r->floats[i];
        total += f->nsamples;
        if (f->status != 0) {
            res->series_failed++;
            res->samples_failed += f->nsamples;
        } else {
            res->written += f->accepted;
            res->duplicates += f->duplicates;
            res->out_of_order += f->out_of_order;
            res->dup_conflicts += f->dup_conflicts;
            res->out_of_bounds += f->out_of_bounds;
            res->too_new += f->too_new;
        }
        if (first == NULL && (f->status != 0 || f->out_of_order || f->dup_conflicts || f->out_of_bounds || f->too_new))
            first = f;
    }
    if (r->status != 0) {
        ps_buf_printf(msg, "%s", r->err.msg);
        return r->status;
    }
    if (first == NULL)
        return 0;
    uint64_t rejected = res->out_of_order + res->dup_conflicts + res->out_of_bounds + res->too_new + res->samples_failed;
    ps_buf_printf(msg, "%" PRIu64 " of %" PRIu64 " samples rejected (%" PRIu64 " out of order sample, %" PRIu64
                       " duplicate sample for timestamp, %" PRIu64 " out of bounds",
                  rejected, total, res->out_of_order, res->dup_conflicts, res->out_of_bounds);
    if (res->too_new)
        ps_buf_printf(msg, ", %" PRIu64 " too far in the future", res->too_new);
    if (res->series_failed)
        ps_buf_printf(msg, ", %" PRIu64 " in %" PRIu64 " refused series", res->samples_failed, res->series_failed);
    ps_buf_printf(msg, "); the %" PRIu64 " others are stored. First rejected: series ",
                  total - rejected);
    ps_labels_format(first->labels, msg);
    if (first->status != 0) {
        ps_buf_printf(msg, ": %s", first->err.msg);
    } else {
        const char *sep = ": ";
        if (first->out_of_order) {
            ps_buf_printf(msg, "%s%u out of order sample(s) (older than the series' newest sample), the first at ", sep,
                          first->out_of_order);
            put_time(msg, first->first_out_of_order);
            sep = "; ";
        }
        if (first->dup_conflicts) {
            ps_buf_printf(msg, "%s%u duplicate sample(s) for timestamp (another value is stored there), the first at ",
                          sep, first->dup_conflicts);
            put_time(msg, first->first_dup_conflict);
            sep = "; ";
        }
        if (first->out_of_bounds) {
            ps_buf_printf(msg, "%s%u sample(s) out of bounds (older than the retention period), the first at ", sep,
                          first->out_of_bounds);
            put_time(msg, first->first_out_of_bounds);
            sep = "; ";
        }
        if (first->too_new) {
            ps_buf_printf(msg, "%s%u sample(s) too far in the future (more than %s after now), the first at ", sep,
                          first->too_new, ps_setting_name(PS_SETTING_FUTURE_GRACE));
            put_time(msg, first->first_too_new);
        }
    }
    ps_buf_putc(msg, 0);
    msg->len--;
    return PS_EINVAL;
}
