/*
 * folded.c - folded stacks (stacks.h), Brendan Gregg's format as Pyroscope's /ingest and its ad hoc
 * converter read it: one line a stack, frames root first separated by ';', then a space and the
 * count ("main;work;inner 12", the count after the last space); CRLF or LF; empty lines skipped.
 * In lines mode (Pyroscope's format=lines) a line is a stack alone, one sample each. Each line is
 * a sample (identical stacks are not merged: the flame graph adds them up), of the count times
 * opts->period.
 */
#include <string.h>

#include "core/labels.h"
#include "stacks.h"

typedef struct folded {
    ps_stacks_t b;
    const ps_stacks_limits_t *lim;
    uint32_t *stack; /* the current line's frames, root first */
    int64_t period;
} folded_t;

static int frame_index(folded_t *f, const char *s, size_t n, uint32_t depth, uint32_t *out, ps_err_t *err)
{
    uint64_t v;
    if (ps_hmap_get(&f->b.names, s, n, &v)) {
        *out = (uint32_t)v;
        return 0;
    }
    if (f->b.p->nfunctions >= f->lim->max_functions)
        return ps_err_set(err, PS_ETOOBIG, "more than %u distinct frames", f->lim->max_functions);
    if (n > f->lim->max_string_len)
        return ps_err_set(err, PS_ETOOBIG, "a frame name is %zu bytes long, at most %u", n, f->lim->max_string_len);
    if (!ps_utf8_valid(s, n))
        return ps_err_set(err, PS_EINVAL, "frame %u is not valid UTF-8", depth + 1);
    return ps_stacks_frame(&f->b, s, n, out, err);
}

static int parse_count(const char *s, size_t n, size_t line, int64_t period, int64_t *out, ps_err_t *err)
{
    uint64_t v = 0;
    if (n == 0 || n > 19)
        goto Bad;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9')
            goto Bad;
        v = v * 10 + (uint64_t)(s[i] - '0');
    }
    if (v > (uint64_t)INT64_MAX / (uint64_t)period)
        return ps_err_set(err, PS_EINVAL, "line %zu: the value %llu is too large", line, (unsigned long long)v);
    *out = (int64_t)v * period;
    return 0;
Bad:
    return ps_err_set(err, PS_EINVAL, "line %zu: \"%.*s\" is not a sample count (expected \"frame;frame;... count\")",
                      line, (int)(n > 32 ? 32 : n), s);
}

static int folded_line(folded_t *f, const char *s, size_t n, size_t line, bool lines, ps_err_t *err)
{
    int ret;
    int64_t value = f->period;
    size_t sn = n;
    if (!lines) {
        const char *sp = NULL;
        for (size_t i = n; i > 0; i--)
            if (s[i - 1] == ' ') {
                sp = s + i - 1;
                break;
            }
        if (sp == NULL)
            return ps_err_set(err, PS_EINVAL, "line %zu: no space before the count (expected \"frame;frame;... count\")",
                              line);
        sn = (size_t)(sp - s);
        if ((ret = parse_count(sp + 1, n - sn - 1, line, f->period, &value, err)) != 0)
            return ret;
    }
    uint32_t depth = 0;
    for (size_t i = 0; i <= sn;) {
        const char *semi = memchr(s + i, ';', sn - i);
        size_t e = semi ? (size_t)(semi - s) : sn;
        if (depth == f->lim->max_stack_depth)
            return ps_err_set(err, PS_ETOOBIG, "line %zu: more than %u frames", line, f->lim->max_stack_depth);
        if ((ret = frame_index(f, s + i, e - i, depth, &f->stack[depth], err)) != 0)
            return ps_err_prefix(err, "line %zu", line);
        depth++;
        i = e + 1;
    }
    if (f->b.p->nsamples >= f->lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "more than %u samples (lines)", f->lim->max_samples);
    if ((ret = ps_stacks_sample(&f->b, f->stack, depth, value, err)) != 0) /* max_frames */
        return ps_err_prefix(err, "line %zu", line);
    return 0;
}

int ps_folded_parse(const void *data, size_t n, const ps_folded_opts_t *opts, const ps_stacks_limits_t *lim,
                    ps_arena_t *arena, ps_profile_t *p, ps_err_t *err)
{
    int ret = 0;
    folded_t f = {.lim = lim, .period = opts->period > 0 ? opts->period : 1};
    ps_stacks_init(&f.b, lim, arena, p, opts->type, opts->unit);
    if (opts->period > 0) {
        p->period = opts->period;
        p->period_type.type = ps_stacks_string(&f.b, opts->period_type);
        p->period_type.unit = ps_stacks_string(&f.b, opts->period_unit);
    }
    f.stack = ps_arena_alloc(arena, ((size_t)lim->max_stack_depth + 1) * sizeof(uint32_t));
    const char *s = data;
    size_t line = 0;
    for (size_t i = 0; i < n && ret == 0;) {
        const char *nl = memchr(s + i, '\n', n - i);
        size_t e = nl ? (size_t)(nl - s) : n, le = e;
        line++;
        if (le > i && s[le - 1] == '\r')
            le--;
        if (le > i)
            ret = folded_line(&f, s + i, le - i, line, opts->lines, err);
        i = e + 1;
    }
    ps_stacks_dispose(&f.b);
    if (ret == 0 && p->nsamples == 0)
        ret = ps_err_set(err, PS_EINVAL, "the body has no samples (expected \"frame;frame;... count\" lines)");
    return ret;
}
