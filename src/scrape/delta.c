/*
 * delta.c - cumulative profiles into reset-aware deltas (see delta.h).
 *
 * Stack keys must be stable across scrapes of one target, whose process may map its binary at
 * another address each start (ASLR): a location is hashed by its mapping's file name and the
 * mapping-relative address, its functions' names and files and its line numbers, never by the
 * location id or the absolute address. A sample's key is the hashes of its locations plus its
 * labels (key, string value, number), two 64-bit hashes of that: 16 bytes per stack in the baseline.
 */
#include "delta.h"

#include <stdlib.h>
#include <string.h>

#include "core/sat.h"
#include "ingest/ingest.h"

void ps_delta_dispose(ps_delta_state_t *st)
{
    ps_hmap_dispose(&st->index);
    free(st->values);
    free(st->totals);
    memset(st, 0, sizeof(*st));
}

bool ps_delta_is_cumulative(ps_str_t type) { return ps_ingest_cumulative_type(type); }

static void put_str(ps_buf_t *b, const ps_profile_t *p, uint32_t i)
{
    ps_str_t s = ps_profile_str(p, i);
    ps_buf_append(b, &s.len, sizeof(s.len));
    ps_buf_append(b, s.ptr, s.len);
}

/* A hash of a location's content that is stable across scrapes of one target: mapping file and
 * mapping-relative address (survives ASLR), functions, files and lines. */
static void location_hashes(const ps_profile_t *p, uint64_t *out, ps_buf_t *b)
{
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *l = &p->locations[i];
        ps_buf_reset(b);
        uint64_t addr = l->address;
        if (l->mapping) {
            const ps_mapping_t *m = &p->mappings[l->mapping - 1];
            addr = addr - m->memory_start + m->file_offset;
            put_str(b, p, m->filename);
        }
        ps_buf_append(b, &addr, sizeof(addr));
        for (uint32_t j = 0; j < l->nlines; j++) {
            if (l->lines[j].function) {
                const ps_function_t *f = &p->functions[l->lines[j].function - 1];
                put_str(b, p, f->name);
                put_str(b, p, f->filename);
            }
            ps_buf_append(b, &l->lines[j].line, sizeof(int64_t));
        }
        out[i] = ps_hash64(b->data, b->len, 0x10ca7e);
    }
}

/* A sample's key (stack and labels) hashed to 16 bytes: baselines keep these, not stack texts. */
static void stack_hkey(const ps_profile_t *p, const ps_sample_t *smp, const uint64_t *loc_h, ps_buf_t *b,
                       uint8_t out[16])
{
    ps_buf_reset(b);
    for (uint32_t i = 0; i < smp->nlocs; i++)
        ps_buf_append(b, &loc_h[smp->locs[i] - 1], sizeof(uint64_t));
    for (uint32_t j = 0; j < smp->nlabels; j++) {
        put_str(b, p, smp->labels[j].key);
        put_str(b, p, smp->labels[j].str);
        ps_buf_append(b, &smp->labels[j].num, sizeof(int64_t));
    }
    uint64_t a = ps_hash64(b->data, b->len, 0x51ac1), c = ps_hash64(b->data, b->len, 0x9e3779b9);
    memcpy(out, &a, 8);
    memcpy(out + 8, &c, 8);
}

ps_profile_t *ps_delta_apply(ps_delta_state_t *st, const ps_profile_t *p, uint8_t *modes, ps_arena_t *arena)
{
    uint32_t nt = p->ntypes;
    /* per type: delta, or skip (no usable baseline); a reset (below) keeps a delta type as it is */
    bool usable = st->valid && st->ntypes == nt;
    bool any_cum = false;
    for (uint32_t k = 0; k < nt; k++) {
        bool cum = ps_delta_is_cumulative(ps_profile_str(p, p->sample_types[k].type));
        modes[k] = !cum ? PS_INGEST_ASIS : usable ? PS_INGEST_DELTA : PS_INGEST_SKIP;
        any_cum |= cum;
    }
    if (!any_cum)
        return (ps_profile_t *)p;
    ps_profile_t *q = ps_arena_alloc(arena, sizeof(*q));
    *q = *p;
    q->samples = ps_arena_alloc(arena, (p->nsamples + 1) * sizeof(ps_sample_t));
    /* new baseline */
    ps_delta_state_t cur = {0};
    ps_hmap_init(&cur.index);
    cur.ntypes = nt;
    cur.values = ps_xcalloc((size_t)p->nsamples * nt + 1, sizeof(int64_t));
    cur.totals = ps_xcalloc(nt, sizeof(int64_t));
    cur.valid = true;
    ps_buf_t key = PS_BUF_INIT;
    uint32_t rows = 0;
    uint32_t *row_of = ps_arena_alloc(arena, (p->nsamples + 1) * sizeof(uint32_t));
    uint8_t *hks = ps_arena_alloc(arena, ((size_t)p->nsamples + 1) * 16);
    uint64_t *loc_h = ps_arena_alloc(arena, ((size_t)p->nlocations + 1) * sizeof(uint64_t));
    location_hashes(p, loc_h, &key);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        uint8_t *hk = hks + 16 * (size_t)i;
        stack_hkey(p, &p->samples[i], loc_h, &key, hk);
        uint64_t r;
        if (!ps_hmap_get(&cur.index, hk, 16, &r)) {
            r = rows++;
            ps_hmap_put(&cur.index, hk, 16, r);
        }
        row_of[i] = (uint32_t)r;
        for (uint32_t k = 0; k < nt; k++) {
            cur.values[r * nt + k] = ps_sat_add(cur.values[r * nt + k], p->samples[i].values[k]);
            cur.totals[k] = ps_sat_add(cur.totals[k], p->samples[i].values[k]);
        }
    }
    /* a delta type is kept as it is (reset: the process restarted) when its total went down */
    bool *reset = ps_arena_calloc(arena, nt, sizeof(bool));
    for (uint32_t k = 0; k < nt; k++)
        if (modes[k] == PS_INGEST_DELTA && cur.totals[k] < st->totals[k])
            reset[k] = true;
    /* each sample's row in the baseline (UINT64_MAX: none), looked up once */
    uint64_t *prev_of = ps_arena_alloc(arena, ((size_t)p->nsamples + 1) * sizeof(uint64_t));
    for (uint32_t i = 0; i < p->nsamples; i++) {
        uint64_t pr;
        if (!usable || !ps_hmap_get(&st->index, hks + 16 * (size_t)i, 16, &pr)) {
            prev_of[i] = UINT64_MAX;
            continue;
        }
        prev_of[i] = pr;
        /* a stack whose count went down also means a restart */
        for (uint32_t k = 0; k < nt; k++)
            if (modes[k] == PS_INGEST_DELTA && cur.values[row_of[i] * nt + k] < st->values[pr * nt + k])
                reset[k] = true;
    }
    /* rows may repeat a stack: the delta of a row goes to its first sample, the others get 0 */
    uint8_t *done = ps_arena_calloc(arena, rows + 1, 1);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        q->samples[i] = p->samples[i];
        int64_t *v = ps_arena_alloc(arena, nt * sizeof(int64_t));
        memcpy(v, p->samples[i].values, nt * sizeof(int64_t));
        uint32_t r = row_of[i];
        uint64_t pr = prev_of[i];
        for (uint32_t k = 0; k < nt; k++) {
            if (modes[k] != PS_INGEST_DELTA || reset[k])
                continue;
            v[k] = done[r] ? 0 : ps_sat_sub(cur.values[r * nt + k], pr != UINT64_MAX ? st->values[pr * nt + k] : 0);
        }
        done[r] = 1;
        q->samples[i].values = v;
    }
    ps_buf_dispose(&key);
    ps_delta_dispose(st);
    *st = cur;
    return q;
}
