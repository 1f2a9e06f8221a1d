/*
 * pprof_reference.c - (tests and benchmarks only) ps_pprof_decode_reference: after the same
 * gunzip and wire scan as ps_pprof_decode (proto/pprof_int.h), protobuf-c 1.4 unpack into the
 * arena (pballoc.h's allocator, a budget of UNPACK_BYTES_PER_INPUT_BYTE per input byte plus 1 MiB)
 * and convert() to ps_profile_t, making each check in the order proto/pprof.c's step 3 reproduces.
 * Compiled into the tests that compare the two decoders, never into profstore.
 */
#include "pprof_reference.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "proto/pballoc.h"
#include "proto/pprof_int.h"
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile_t;
typedef Perftools__Profiles__Sample pb_sample_t;
typedef Perftools__Profiles__Label pb_label_t;
typedef Perftools__Profiles__Mapping pb_mapping_t;
typedef Perftools__Profiles__Location pb_location_t;
typedef Perftools__Profiles__Line pb_line_t;
typedef Perftools__Profiles__Function pb_function_t;

#define UNPACK_BYTES_PER_INPUT_BYTE 48

/* ---- wire ids to dense indexes (a copy of proto/pprof.c's: the two decoders share no code) ---- */

typedef struct idpair {
    uint64_t id;
    uint32_t idx; /* 1-based */
} idpair_t;

/* Wire id -> dense 1-based index. */
typedef struct idmap {
    uint32_t *direct; /* direct[id] = index (0 = undefined), when ids are small */
    uint64_t ndirect;
    idpair_t *pairs;  /* else sorted by id */
    uint32_t npairs;
} idmap_t;

static int cmp_idpair(const void *a, const void *b)
{
    const idpair_t *x = a, *y = b;
    if (x->id != y->id)
        return x->id < y->id ? -1 : 1;
    return x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Builds the map of the n wire ids in ids[] (the ids of the mapping, function or location array,
 * in order); fails on an id 0 or one used twice. */
static int idmap_build(idmap_t *m, ps_arena_t *arena, const uint64_t *ids, size_t n, const char *what, ps_err_t *err)
{
    uint64_t max = 0;
    memset(m, 0, sizeof(*m));
    for (size_t i = 0; i < n; i++) {
        uint64_t id = ids[i];
        if (id == 0)
            return ps_err_set(err, PS_EINVAL, "%s[%zu]: id 0 is not allowed (ids must be nonzero)", what, i);
        if (id > max)
            max = id;
    }
    if (n == 0)
        return 0;
    if (max <= 4 * (uint64_t)n + 64) {
        m->ndirect = max + 1;
        m->direct = ps_arena_calloc(arena, (size_t)m->ndirect, sizeof(uint32_t));
        for (size_t i = 0; i < n; i++) {
            uint64_t id = ids[i];
            if (m->direct[id] != 0)
                return ps_err_set(err, PS_EINVAL, "%s[%zu]: id %llu is already used by %s[%u]", what, i,
                                  (unsigned long long)id, what, m->direct[id] - 1);
            m->direct[id] = (uint32_t)i + 1;
        }
        return 0;
    }
    m->pairs = ps_arena_alloc(arena, n * sizeof(idpair_t));
    m->npairs = (uint32_t)n;
    for (size_t i = 0; i < n; i++) {
        m->pairs[i].id = ids[i];
        m->pairs[i].idx = (uint32_t)i + 1;
    }
    qsort(m->pairs, n, sizeof(idpair_t), cmp_idpair);
    for (size_t i = 1; i < n; i++)
        if (m->pairs[i].id == m->pairs[i - 1].id)
            return ps_err_set(err, PS_EINVAL, "%s[%u]: id %llu is already used by %s[%u]", what, m->pairs[i].idx - 1,
                              (unsigned long long)m->pairs[i].id, what, m->pairs[i - 1].idx - 1);
    return 0;
}

static inline __attribute__((always_inline)) uint32_t idmap_get(const idmap_t *m, uint64_t id)
{
    if (m->direct != NULL)
        return id < m->ndirect ? m->direct[id] : 0;
    size_t lo = 0, hi = m->npairs;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->pairs[mid].id < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->npairs && m->pairs[lo].id == id ? m->pairs[lo].idx : 0;
}

/* ---- conversion ---- */

/* String index checks: v is an int64 from the wire; a negative one fails as a huge unsigned one. */
#define STR_IDX(dst, v, ...)                                                                                  \
    do {                                                                                                      \
        uint64_t v_ = (uint64_t)(v);                                                                          \
        if (v_ >= nstr) {                                                                                     \
            char w_[128];                                                                                     \
            snprintf(w_, sizeof(w_), __VA_ARGS__);                                                            \
            rc = ps_err_set(err, PS_EINVAL, "%s: string index %lld out of range (string_table has %u entries)", \
                            w_, (long long)(v), nstr);                                                        \
            goto Exit;                                                                                        \
        }                                                                                                     \
        (dst) = (uint32_t)v_;                                                                                 \
    } while (0)

static int convert(const pb_profile_t *pb, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *out,
                   ps_err_t *err)
{
    idmap_t mids, fids, lids;
    uint64_t *ids;
    int rc = 0;

    /* the scan checked these counts; protobuf-c counted the same bytes */
    if (pb->n_string_table > lim->max_strings || pb->n_sample > lim->max_samples ||
        pb->n_location > lim->max_locations || pb->n_function > lim->max_functions ||
        pb->n_mapping > lim->max_mappings || pb->n_sample_type > lim->max_sample_types ||
        pb->n_comment > lim->max_strings || pb->n_sample_type == 0 || pb->n_string_table == 0) {
        rc = ps_err_set(err, PS_EINTERNAL, "pprof: protobuf-c and the wire scan disagree");
        goto Exit;
    }
    const uint32_t nstr = (uint32_t)pb->n_string_table;

    /* strings: used in place (NUL-terminated copies in the arena, NUL-free by the scan) */
    out->nstrings = nstr;
    out->strings = ps_arena_alloc(arena, nstr * sizeof(ps_str_t));
    for (uint32_t i = 0; i < nstr; i++) {
        out->strings[i].ptr = pb->string_table[i];
        out->strings[i].len = (uint32_t)strlen(pb->string_table[i]);
    }

    out->ntypes = (uint32_t)pb->n_sample_type;
    out->sample_types = ps_arena_alloc(arena, out->ntypes * sizeof(ps_value_type_t));
    for (uint32_t i = 0; i < out->ntypes; i++) {
        STR_IDX(out->sample_types[i].type, pb->sample_type[i]->type, "sample_type[%u].type", i);
        STR_IDX(out->sample_types[i].unit, pb->sample_type[i]->unit, "sample_type[%u].unit", i);
    }
    if (pb->period_type != NULL) {
        STR_IDX(out->period_type.type, pb->period_type->type, "period_type.type");
        STR_IDX(out->period_type.unit, pb->period_type->unit, "period_type.unit");
    }
    out->period = pb->period;
    out->time_nanos = pb->time_nanos;
    out->duration_nanos = pb->duration_nanos;
    STR_IDX(out->default_sample_type, pb->default_sample_type, "default_sample_type");
    STR_IDX(out->drop_frames, pb->drop_frames, "drop_frames");
    STR_IDX(out->keep_frames, pb->keep_frames, "keep_frames");
    STR_IDX(out->doc_url, pb->doc_url, "doc_url");
    out->ncomments = (uint32_t)pb->n_comment;
    out->comments = ps_arena_alloc(arena, out->ncomments * sizeof(uint32_t));
    for (uint32_t i = 0; i < out->ncomments; i++)
        STR_IDX(out->comments[i], pb->comment[i], "comment[%u]", i);

    /* mappings */
    ids = ps_arena_alloc(arena, pb->n_mapping * sizeof(uint64_t));
    for (size_t i = 0; i < pb->n_mapping; i++)
        ids[i] = pb->mapping[i]->id;
    if ((rc = idmap_build(&mids, arena, ids, pb->n_mapping, "mapping", err)) != 0)
        goto Exit;
    out->nmappings = (uint32_t)pb->n_mapping;
    out->mappings = ps_arena_alloc(arena, out->nmappings * sizeof(ps_mapping_t));
    for (uint32_t i = 0; i < out->nmappings; i++) {
        const pb_mapping_t *m = pb->mapping[i];
        ps_mapping_t *d = &out->mappings[i];
        d->memory_start = m->memory_start;
        d->memory_limit = m->memory_limit;
        d->file_offset = m->file_offset;
        STR_IDX(d->filename, m->filename, "mapping[%u].filename", i);
        STR_IDX(d->build_id, m->build_id, "mapping[%u].build_id", i);
        d->flags = (m->has_functions ? PS_MAP_HAS_FUNCTIONS : 0) | (m->has_filenames ? PS_MAP_HAS_FILENAMES : 0) |
                   (m->has_line_numbers ? PS_MAP_HAS_LINE_NUMBERS : 0) |
                   (m->has_inline_frames ? PS_MAP_HAS_INLINE_FRAMES : 0);
    }

    /* functions */
    ids = ps_arena_alloc(arena, pb->n_function * sizeof(uint64_t));
    for (size_t i = 0; i < pb->n_function; i++)
        ids[i] = pb->function[i]->id;
    if ((rc = idmap_build(&fids, arena, ids, pb->n_function, "function", err)) != 0)
        goto Exit;
    out->nfunctions = (uint32_t)pb->n_function;
    out->functions = ps_arena_alloc(arena, out->nfunctions * sizeof(ps_function_t));
    for (uint32_t i = 0; i < out->nfunctions; i++) {
        const pb_function_t *f = pb->function[i];
        ps_function_t *d = &out->functions[i];
        STR_IDX(d->name, f->name, "function[%u].name", i);
        STR_IDX(d->system_name, f->system_name, "function[%u].system_name", i);
        STR_IDX(d->filename, f->filename, "function[%u].filename", i);
        d->start_line = f->start_line;
    }

    /* locations, with all their lines in one array */
    ids = ps_arena_alloc(arena, pb->n_location * sizeof(uint64_t));
    for (size_t i = 0; i < pb->n_location; i++)
        ids[i] = pb->location[i]->id;
    if ((rc = idmap_build(&lids, arena, ids, pb->n_location, "location", err)) != 0)
        goto Exit;
    size_t nlines = 0;
    for (size_t i = 0; i < pb->n_location; i++)
        nlines += pb->location[i]->n_line;
    ps_line_t *lines = ps_arena_alloc(arena, nlines * sizeof(ps_line_t));
    out->nlocations = (uint32_t)pb->n_location;
    out->locations = ps_arena_alloc(arena, out->nlocations * sizeof(ps_location_t));
    for (uint32_t i = 0; i < out->nlocations; i++) {
        const pb_location_t *l = pb->location[i];
        ps_location_t *d = &out->locations[i];
        d->mapping = 0;
        if (l->mapping_id != 0 && (d->mapping = idmap_get(&mids, l->mapping_id)) == 0) {
            rc = ps_err_set(err, PS_EINVAL, "location[%u]: mapping_id %llu is not defined", i,
                            (unsigned long long)l->mapping_id);
            goto Exit;
        }
        d->address = l->address;
        d->is_folded = l->is_folded ? 1 : 0;
        d->nlines = (uint32_t)l->n_line;
        d->lines = lines;
        for (uint32_t k = 0; k < d->nlines; k++) {
            const pb_line_t *ln = l->line[k];
            lines[k].function = 0;
            if (ln->function_id != 0 && (lines[k].function = idmap_get(&fids, ln->function_id)) == 0) {
                rc = ps_err_set(err, PS_EINVAL, "location[%u].line[%u]: function_id %llu is not defined", i, k,
                                (unsigned long long)ln->function_id);
                goto Exit;
            }
            lines[k].line = ln->line;
            lines[k].column = ln->column;
        }
        lines += d->nlines;
    }

    /* samples: values used in place; stacks and labels each in one array */
    size_t nlocs = 0, nlabels = 0;
    for (size_t i = 0; i < pb->n_sample; i++) {
        const pb_sample_t *s = pb->sample[i];
        if (s->n_value != out->ntypes) {
            rc = ps_err_set(err, PS_EINVAL, "sample[%zu] has %zu values but there are %u sample types", i, s->n_value,
                            out->ntypes);
            goto Exit;
        }
        nlocs += s->n_location_id;
        nlabels += s->n_label;
    }
    uint32_t *locs = ps_arena_alloc(arena, nlocs * sizeof(uint32_t));
    ps_label_t *labels = ps_arena_alloc(arena, nlabels * sizeof(ps_label_t));
    out->nsamples = (uint32_t)pb->n_sample;
    out->samples = ps_arena_alloc(arena, out->nsamples * sizeof(ps_sample_t));
    for (uint32_t i = 0; i < out->nsamples; i++) {
        const pb_sample_t *s = pb->sample[i];
        ps_sample_t *d = &out->samples[i];
        d->nlocs = (uint32_t)s->n_location_id;
        d->locs = locs;
        for (uint32_t k = 0; k < d->nlocs; k++) {
            if ((locs[k] = idmap_get(&lids, s->location_id[k])) == 0) {
                rc = ps_err_set(err, PS_EINVAL, "sample[%u]: location_id %llu is not defined", i,
                                (unsigned long long)s->location_id[k]);
                goto Exit;
            }
        }
        locs += d->nlocs;
        d->values = s->value;
        d->nlabels = (uint32_t)s->n_label;
        d->labels = labels;
        for (uint32_t k = 0; k < d->nlabels; k++) {
            const pb_label_t *l = s->label[k];
            STR_IDX(labels[k].key, l->key, "sample[%u].label[%u].key", i, k);
            STR_IDX(labels[k].str, l->str, "sample[%u].label[%u].str", i, k);
            STR_IDX(labels[k].num_unit, l->num_unit, "sample[%u].label[%u].num_unit", i, k);
            labels[k].num = l->num;
        }
        labels += d->nlabels;
    }
Exit:
    return rc;
}

int ps_pprof_decode_reference(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena,
                              ps_profile_t *out, ps_err_t *err)
{
    ps_pprof_limits_t deflim;
    const uint8_t *buf;
    size_t len;

    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        ps_pprof_limits_default(&deflim);
        lim = &deflim;
    }
    int rc = ps_pprof_scan(data, n, lim, arena, &buf, &len, err);
    if (rc == 0) {
        size_t budget = len > (SIZE_MAX / 2 - (1u << 20)) / UNPACK_BYTES_PER_INPUT_BYTE
                            ? SIZE_MAX / 2
                            : len * UNPACK_BYTES_PER_INPUT_BYTE + (1u << 20);
        ps_pb_arena_t pa;
        ps_pb_arena_init(&pa, arena, budget);
        pb_profile_t *pb = perftools__profiles__profile__unpack(&pa.base, len, buf);
        if (pb == NULL && pa.over)
            rc = ps_err_set(err, PS_ETOOBIG, "decoding the profile needs more than %zu bytes of memory", budget);
        else if (pb == NULL)
            rc = ps_pprof_scan_deep(buf, len, lim, err);
        else
            rc = convert(pb, lim, arena, out, err);
    }
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}
