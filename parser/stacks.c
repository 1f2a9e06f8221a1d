/*
 * stacks.c - the builder of profiles made of named stacks (stacks.h): frame names interned once
 * (one string, function and location each), samples holding their stack leaf first.
 */
#include <string.h>

#include "core/labels.h"
#include "stacks.h"

/* grows an arena array of *cap elements of size sz holding n to hold n + 1 */
static void *grow(ps_arena_t *a, void *arr, uint32_t n, uint32_t *cap, size_t sz)
{
    if (n < *cap)
        return arr;
    uint32_t nc = *cap ? *cap * 2 : 64;
    void *na = ps_arena_alloc(a, (size_t)nc * sz);
    if (n)
        memcpy(na, arr, (size_t)n * sz);
    *cap = nc;
    return na;
}

static uint32_t add_str(ps_stacks_t *b, const char *s, size_t n)
{
    ps_profile_t *p = b->p;
    p->strings = grow(b->arena, p->strings, p->nstrings, &b->cap_strings, sizeof(ps_str_t));
    p->strings[p->nstrings].ptr = ps_arena_strndup(b->arena, s, n);
    p->strings[p->nstrings].len = (uint32_t)n;
    return p->nstrings++;
}

void ps_stacks_init(ps_stacks_t *b, const ps_stacks_limits_t *lim, ps_arena_t *arena, ps_profile_t *p, const char *type,
                    const char *unit)
{
    memset(b, 0, sizeof(*b));
    memset(p, 0, sizeof(*p));
    b->p = p;
    b->arena = arena;
    b->lim = lim;
    ps_hmap_init(&b->names);
    add_str(b, "", 0);
    p->ntypes = 1;
    p->sample_types = ps_arena_calloc(arena, 1, sizeof(ps_value_type_t));
    p->sample_types[0].type = add_str(b, type, strlen(type));
    p->sample_types[0].unit = add_str(b, unit, strlen(unit));
}

int ps_stacks_frame(ps_stacks_t *b, const char *s, size_t n, uint32_t *loc, ps_err_t *err)
{
    uint64_t v;
    if (ps_hmap_get(&b->names, s, n, &v)) {
        *loc = (uint32_t)v;
        return 0;
    }
    ps_profile_t *p = b->p;
    if (p->nfunctions >= b->lim->max_functions)
        return ps_err_set(err, PS_ETOOBIG, "more than %u distinct frame names", b->lim->max_functions);
    if (n > b->lim->max_string_len)
        return ps_err_set(err, PS_ETOOBIG, "a frame name of %zu bytes, more than %u", n, b->lim->max_string_len);
    if (!ps_utf8_valid(s, n))
        return ps_err_set(err, PS_EINVAL, "a frame name that is not UTF-8");
    uint32_t si = add_str(b, s, n);
    uint32_t c = b->cap_funcs;
    p->functions = grow(b->arena, p->functions, p->nfunctions, &c, sizeof(ps_function_t));
    if (c != b->cap_funcs) { /* functions and locations have the same count: they grow together */
        uint32_t c2 = b->cap_funcs;
        p->locations = grow(b->arena, p->locations, p->nlocations, &c2, sizeof(ps_location_t));
        b->cap_funcs = c;
    }
    ps_function_t *fn = &p->functions[p->nfunctions++];
    memset(fn, 0, sizeof(*fn));
    fn->name = fn->system_name = si;
    ps_location_t *l = &p->locations[p->nlocations++];
    memset(l, 0, sizeof(*l));
    l->nlines = 1;
    l->lines = ps_arena_calloc(b->arena, 1, sizeof(ps_line_t));
    l->lines[0].function = p->nfunctions;
    *loc = p->nlocations;
    ps_hmap_put(&b->names, s, n, *loc);
    return 0;
}

int ps_stacks_sample(ps_stacks_t *b, const uint32_t *locs, uint32_t n, int64_t value, ps_err_t *err)
{
    ps_profile_t *p = b->p;
    if (n > b->lim->max_stack_depth)
        return ps_err_set(err, PS_ETOOBIG, "a stack of %u frames, more than %u", n, b->lim->max_stack_depth);
    if (p->nsamples >= b->lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "more than %u stacks", b->lim->max_samples);
    if (b->frames + n > b->lim->max_frames)
        return ps_err_set(err, PS_ETOOBIG, "the stacks hold more than %llu frames together",
                          (unsigned long long)b->lim->max_frames);
    b->frames += n;
    p->samples = grow(b->arena, p->samples, p->nsamples, &b->cap_samples, sizeof(ps_sample_t));
    ps_sample_t *s = &p->samples[p->nsamples++];
    memset(s, 0, sizeof(*s));
    s->nlocs = n;
    s->locs = ps_arena_alloc(b->arena, ((size_t)n + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < n; i++)
        s->locs[i] = locs[n - 1 - i];
    s->values = ps_arena_alloc(b->arena, sizeof(int64_t));
    s->values[0] = value;
    return 0;
}

uint32_t ps_stacks_string(ps_stacks_t *b, const char *s)
{
    return add_str(b, s, strlen(s));
}

void ps_stacks_dispose(ps_stacks_t *b)
{
    ps_hmap_dispose(&b->names);
}
