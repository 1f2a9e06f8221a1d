/*
 * adhoc.c - ad hoc profiles (ingest.h): an uploaded file's format detected and decoded (pprof
 * through proto/pprof.h; flamebearer JSON, perf script and folded stacks through parser/stacks.h),
 * names and ids as Pyroscope's
 * adhocprofiles makes them (a ULID, '-', the name with every code point outside [A-Za-z0-9._-]
 * as '_'), and the pair profile of a diff. docs/api.md "Ad hoc profiles" says the same for users.
 */
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/random.h>

#include "core/timeutil.h"
#include "proto/gzip.h"
#include "ingest.h"

#define SNIFF 512 /* bytes looked at to tell raw pprof from text */

void ps_adhoc_stacks_limits(const ps_pprof_limits_t *lim, ps_stacks_limits_t *out)
{
    out->max_samples = lim->max_samples;
    out->max_functions = lim->max_functions;
    out->max_stack_depth = lim->max_stack_depth;
    out->max_string_len = lim->max_string_len;
    out->max_frames = PS_ADHOC_MAX_FRAMES;
    out->max_json_memory = lim->max_inflated > SIZE_MAX / 4 ? SIZE_MAX : lim->max_inflated * 4;
}

int ps_adhoc_decode(const void *data, size_t n, const ps_pprof_limits_t *lim, ps_arena_t *arena, ps_profile_t *p,
                    ps_adhoc_format_t *fmt, ps_fbjson_meta_t *meta, ps_err_t *err)
{
    const uint8_t *b = data;
    memset(p, 0, sizeof(*p));
    *fmt = PS_ADHOC_PPROF;
    if (meta)
        memset(meta, 0, sizeof(*meta));
    if (n == 0)
        return ps_err_set(err, PS_EINVAL, "the profile is empty");
    if (ps_is_gzip(b, n)) { /* a gzipped pprof, or gzipped text: what it holds decides */
        const uint8_t *in;
        size_t inn;
        int ret = ps_gunzip(b, n, lim->max_inflated, arena, &in, &inn, err);
        if (ret != 0) /* gzip.c's messages start "gzip: ", but the bound's */
            return strncmp(err->msg, "gzip: ", 6) == 0 ? ret : ps_err_prefix(err, "gzip");
        if (inn == 0)
            return ps_err_set(err, PS_EINVAL, "gzip: the profile is empty once decompressed");
        if (ps_is_gzip(in, inn))
            return ps_err_set(err, PS_EINVAL, "gzip: gzip inside gzip");
        b = in;
        n = inn;
    }
    bool binary = false;
    for (size_t i = 0; i < n && i < SNIFF && !binary; i++)
        binary = (b[i] < 0x20 && b[i] != '\t' && b[i] != '\n' && b[i] != '\r') || b[i] == 0x7f;
    if (binary) {
        int ret = ps_pprof_decode(b, n, lim, arena, p, err);
        return ret != 0 ? ps_err_prefix(err, "pprof") : 0;
    }
    ps_stacks_limits_t sl;
    ps_adhoc_stacks_limits(lim, &sl);
    size_t i = 0;
    while (i < n && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r'))
        i++;
    if (i < n && b[i] == '{') {
        *fmt = PS_ADHOC_JSON;
        ps_fbjson_meta_t m;
        int ret = ps_fbjson_parse(b, n, &sl, arena, p, meta ? meta : &m, err);
        /* the syntax errors say "flamebearer JSON: line ..." already */
        return ret != 0 && strncmp(err->msg, "flamebearer JSON: ", 18) != 0 ? ps_err_prefix(err, "flamebearer JSON")
                                                                             : ret;
    }
    if (ps_perf_detect(b, n)) {
        *fmt = PS_ADHOC_PERF;
        int ret = ps_perf_parse(b, n, &sl, arena, p, err);
        return ret != 0 ? ps_err_prefix(err, "perf script") : 0;
    }
    *fmt = PS_ADHOC_FOLDED;
    ps_folded_opts_t fo = {.type = "samples", .unit = "count"};
    int ret = ps_folded_parse(b, n, &fo, &sl, arena, p, err);
    return ret != 0 ? ps_err_prefix(err, "folded stacks") : 0;
}

const char **ps_adhoc_types(const ps_profile_t *p, ps_arena_t *arena)
{
    const char **v = ps_arena_alloc(arena, (p->ntypes + 1) * sizeof(*v));
    for (uint32_t i = 0; i < p->ntypes; i++) {
        ps_str_t s = ps_profile_str(p, p->sample_types[i].type);
        v[i] = ps_arena_strndup(arena, s.ptr, s.len);
    }
    v[p->ntypes] = NULL;
    return v;
}

int ps_adhoc_type_index(const ps_profile_t *p, const char *name)
{
    if (name == NULL || name[0] == 0)
        return p->ntypes > 0 ? 0 : -1;
    size_t n = strlen(name);
    for (uint32_t i = 0; i < p->ntypes; i++) {
        ps_str_t s = ps_profile_str(p, p->sample_types[i].type);
        if (s.len == n && memcmp(s.ptr, name, n) == 0)
            return (int)i;
    }
    return -1;
}

static bool id_char(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '.' || c == '-' ||
           c == '_';
}

int ps_adhoc_name(const char *name, size_t n, ps_arena_t *arena, const char **out, ps_err_t *err)
{
    char *o = ps_arena_alloc(arena, n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)name[i];
        if (c >= 0x80 && c < 0xc0) /* a continuation byte: its code point has its '_' already */
            continue;
        o[k++] = id_char(c) ? (char)c : '_';
    }
    o[k] = 0;
    if (k > PS_ADHOC_NAME_MAX)
        return ps_err_set(err, PS_EINVAL, "name: %zu characters, more than %d", k, PS_ADHOC_NAME_MAX);
    *out = o;
    return 0;
}

const char *ps_adhoc_id(int64_t now_ms, const char *name, ps_arena_t *arena)
{
    static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
    /* ULID's monotonic mode: an id made in the same millisecond as the last one (or with the clock
     * behind it) is the last one's time and random bits plus one, so key order stays upload order */
    static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
    static int64_t last_ms = INT64_MIN;
    static uint8_t last_rnd[10];
    uint8_t rnd[10];
    pthread_mutex_lock(&mu);
    if (now_ms <= last_ms) {
        now_ms = last_ms;
        for (int i = 9; i >= 0 && ++last_rnd[i] == 0; i--)
            ;
    } else {
        if (getrandom(last_rnd, sizeof(last_rnd), 0) != (ssize_t)sizeof(last_rnd)) { /* no entropy: the clock's ns */
            uint64_t t = (uint64_t)ps_time_now();
            for (size_t i = 0; i < sizeof(last_rnd); i++)
                last_rnd[i] = (uint8_t)(t >> (8 * (i % 8))) ^ (uint8_t)(i * 151);
        }
        last_rnd[0] &= 0x7f; /* room to count up within a millisecond */
        last_ms = now_ms;
    }
    memcpy(rnd, last_rnd, sizeof(rnd));
    pthread_mutex_unlock(&mu);
    size_t nl = strlen(name);
    char *id = ps_arena_alloc(arena, 27 + nl + 1);
    uint64_t t = (uint64_t)now_ms & ((1ull << 48) - 1);
    for (int i = 9; i >= 0; i--, t >>= 5)
        id[i] = b32[t & 31];
    /* 80 random bits, 5 at a time */
    for (int i = 0; i < 16; i++) {
        int bit = i * 5, v = 0;
        for (int j = 0; j < 5; j++, bit++)
            v = (v << 1) | ((rnd[bit / 8] >> (7 - bit % 8)) & 1);
        id[10 + i] = b32[v];
    }
    id[26] = '-';
    memcpy(id + 27, name, nl + 1);
    return id;
}

bool ps_adhoc_id_valid(const char *id)
{
    size_t n = strlen(id);
    if (n == 0 || n > PS_ADHOC_ID_MAX)
        return false;
    for (size_t i = 0; i < n; i++)
        if (!id_char((unsigned char)id[i]))
            return false;
    return true;
}

/* appends side s of a pair into out (arrays sized for both), its indexes shifted past what out holds */
static void pair_side(ps_profile_t *out, const ps_profile_t *s, uint32_t vi, int side, ps_arena_t *arena)
{
    uint32_t so = out->nstrings, mo = out->nmappings, fo = out->nfunctions, lo = out->nlocations;
    memcpy(out->strings + so, s->strings, s->nstrings * sizeof(ps_str_t));
    out->nstrings += s->nstrings;
    for (uint32_t i = 0; i < s->nmappings; i++) {
        ps_mapping_t m = s->mappings[i];
        m.filename += m.filename ? so : 0;
        m.build_id += m.build_id ? so : 0;
        out->mappings[out->nmappings++] = m;
    }
    for (uint32_t i = 0; i < s->nfunctions; i++) {
        ps_function_t f = s->functions[i];
        f.name += f.name ? so : 0;
        f.system_name += f.system_name ? so : 0;
        f.filename += f.filename ? so : 0;
        out->functions[out->nfunctions++] = f;
    }
    for (uint32_t i = 0; i < s->nlocations; i++) {
        ps_location_t l = s->locations[i];
        l.mapping += l.mapping ? mo : 0;
        l.lines = ps_arena_alloc(arena, (l.nlines + 1) * sizeof(ps_line_t));
        for (uint32_t k = 0; k < l.nlines; k++) {
            l.lines[k] = s->locations[i].lines[k];
            l.lines[k].function += l.lines[k].function ? fo : 0;
        }
        out->locations[out->nlocations++] = l;
    }
    for (uint32_t i = 0; i < s->nsamples; i++) {
        const ps_sample_t *x = &s->samples[i];
        ps_sample_t *y = &out->samples[out->nsamples++];
        memset(y, 0, sizeof(*y));
        y->nlocs = x->nlocs;
        y->locs = ps_arena_alloc(arena, (x->nlocs + 1) * sizeof(uint32_t));
        for (uint32_t k = 0; k < x->nlocs; k++)
            y->locs[k] = x->locs[k] + lo;
        y->values = ps_arena_calloc(arena, 2, sizeof(int64_t));
        y->values[side] = x->values[vi];
    }
}

void ps_adhoc_pair(const ps_profile_t *l, uint32_t li, const ps_profile_t *r, uint32_t ri, ps_arena_t *arena,
                   ps_profile_t *out)
{
    memset(out, 0, sizeof(*out));
    out->strings = ps_arena_alloc(arena, ((size_t)l->nstrings + r->nstrings + 1) * sizeof(ps_str_t));
    out->mappings = ps_arena_alloc(arena, ((size_t)l->nmappings + r->nmappings + 1) * sizeof(ps_mapping_t));
    out->functions = ps_arena_alloc(arena, ((size_t)l->nfunctions + r->nfunctions + 1) * sizeof(ps_function_t));
    out->locations = ps_arena_alloc(arena, ((size_t)l->nlocations + r->nlocations + 1) * sizeof(ps_location_t));
    out->samples = ps_arena_alloc(arena, ((size_t)l->nsamples + r->nsamples + 1) * sizeof(ps_sample_t));
    pair_side(out, l, li, 0, arena);
    pair_side(out, r, ri, 1, arena);
    out->ntypes = 2;
    out->sample_types = ps_arena_alloc(arena, 2 * sizeof(ps_value_type_t));
    out->sample_types[0] = l->sample_types[li];
    out->sample_types[1] = l->sample_types[li];
    out->period_type = l->period_type;
    out->period = l->period;
}

void ps_adhoc_pair_sub(ps_profile_t *pair, int64_t *left_total)
{
    int64_t lt = 0;
    for (uint32_t i = 0; i < pair->nsamples; i++) {
        int64_t *v = pair->samples[i].values;
        lt += v[0] < 0 ? -v[0] : v[0];
        v[0] = v[1] - v[0];
    }
    pair->ntypes = 1;
    *left_total = lt;
}

void ps_adhoc_select(const ps_profile_t *p, uint32_t vi, ps_arena_t *arena, ps_profile_t *out)
{
    *out = *p;
    out->ntypes = 1;
    out->sample_types = &p->sample_types[vi];
    out->default_sample_type = 0;
    out->samples = ps_arena_alloc(arena, ((size_t)p->nsamples + 1) * sizeof(ps_sample_t));
    for (uint32_t i = 0; i < p->nsamples; i++) {
        out->samples[i] = p->samples[i];
        out->samples[i].values = p->samples[i].values + vi;
    }
}
