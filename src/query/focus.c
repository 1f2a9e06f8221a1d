/*
 * focus.c - go tool pprof's -focus, -ignore, -hide, -show and -show_from over a materialized
 * profile (query.h "focus"). The rules are pprof's own (profile/filter.go, FilterSamplesByName then
 * ShowFrom, in that order, as its driver applies them), restated:
 *
 *  - a regexp matches a location when it matches, anywhere (Go's MatchString: unanchored), the name
 *    or the file name of the function of one of its lines, or the file of its mapping;
 *  - ignore: a sample with a matching location is dropped; focus: a sample is kept only if some
 *    location matches focus (and none matches ignore; a location matching both counts as ignored);
 *  - hide: the lines whose function's name or file matches are removed from each location (all of
 *    them when its mapping's file matches); a location left without lines leaves every stack;
 *  - show: the reverse of hide (only matching lines stay; a line without a function stays);
 *  - a sample left without locations is dropped;
 *  - show_from: in each location the lines beyond its outermost matching line go (a mapping match
 *    keeps them all); in each sample the locations above (rootward of) its outermost matching
 *    location go; a sample without a matching location is dropped.
 * Focus and ignore look at the lines as stored, before hide and show take any away.
 *
 * Matches are memoised per string (names and files repeat across locations), so the cost is one
 * regex run per distinct string per regexp plus a pass over the samples. Every run is bounded by
 * PCRE2's limits (parser/regex.h); a run that hits one is an error of the query (PS_ELIMIT), and the
 * query's deadline is checked every 1,024 samples.
 */
#include <stdio.h>
#include <string.h>

#include "core/budget.h"
#include "parser/labels.h"
#include "query.h"

const char *const ps_focus_names[PS_FOCUS_N] = {"focus", "ignore", "hide", "show", "show_from"};

int ps_focus_set(ps_focus_t *f, int which, const char *v, size_t n, ps_err_t *err)
{
    ps_err_t e = {0};
    char shown[96];
    if (n == 0)
        return 0;
    ps_regex_free(f->re[which]);
    f->re[which] = NULL;
    ps_quote_string(shown, sizeof(shown), v, n, 64);
    if (ps_regex_check_re2(v, n, &e) != 0) {
        /* the check quotes Prometheus' ^(?:re)$ where it is about parentheses; pprof compiles re alone */
        char pasted[sizeof(e.msg)], msg[sizeof(e.msg)];
        snprintf(pasted, sizeof(pasted), "`^(?:%.*s)$`", (int)n, v);
        const char *at = strstr(e.msg, pasted);
        if (at != NULL && n < sizeof(msg) / 2) {
            snprintf(msg, sizeof(msg), "%.*s`%.*s`%s", (int)(at - e.msg), e.msg, (int)n, v, at + strlen(pasted));
            memcpy(e.msg, msg, sizeof(msg));
        }
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": error parsing regexp %s: %s", ps_focus_names[which],
                          shown, e.msg);
    }
    if (ps_regex_compile(v, n, PS_REGEX_SEARCH | PS_REGEX_INVALID_UTF, &f->re[which], &e) != 0)
        return ps_err_set(err, PS_EINVAL, "invalid parameter \"%s\": error parsing regexp %s: %s at offset %d",
                          ps_focus_names[which], shown, e.msg, (int)e.pos);
    return 0;
}

bool ps_focus_any(const ps_focus_t *f)
{
    for (int k = 0; k < PS_FOCUS_N; k++)
        if (f->re[k] != NULL)
            return true;
    return false;
}

void ps_focus_dispose(ps_focus_t *f)
{
    for (int k = 0; k < PS_FOCUS_N; k++) {
        ps_regex_free(f->re[k]);
        f->re[k] = NULL;
    }
}

typedef struct fctx {
    const ps_focus_t *f;
    ps_profile_t *p;
    ps_regex_match_t *md;
    uint8_t *memo[PS_FOCUS_N]; /* per string: 0 not run yet, 1 no match, 2 match */
    ps_err_t *err;
} fctx_t;

/* 1 if regexp k matches string si anywhere, 0 if not, < 0 on a limit (err set). */
static int smatch(fctx_t *c, int k, uint32_t si)
{
    if (si >= c->p->nstrings)
        si = 0;
    uint8_t *m = &c->memo[k][si];
    if (*m == 0) {
        ps_str_t s = c->p->strings[si];
        int rc = ps_regex_match(c->f->re[k], s.ptr, s.len, c->md);
        if (rc < 0) {
            const char *hit = ps_regex_limit_hit(rc);
            if (hit != NULL)
                return ps_err_set(c->err, PS_ELIMIT, "regexp \"%s\": PCRE2 %s hit on a name of %u bytes",
                                  ps_focus_names[k], hit, s.len);
            rc = 0; /* invalid UTF-8 matches nothing */
        }
        *m = rc > 0 ? 2 : 1;
    }
    return *m == 2;
}

/* Whether the function of line ln matches k by its name or file (0 without a function). */
static int line_match(fctx_t *c, int k, const ps_line_t *ln)
{
    if (ln->function == 0 || ln->function > c->p->nfunctions)
        return 0;
    const ps_function_t *fn = &c->p->functions[ln->function - 1];
    int rc = smatch(c, k, fn->name);
    return rc != 0 ? rc : smatch(c, k, fn->filename);
}

static int map_match(fctx_t *c, int k, const ps_location_t *loc)
{
    if (loc->mapping == 0 || loc->mapping > c->p->nmappings)
        return 0;
    return smatch(c, k, c->p->mappings[loc->mapping - 1].filename);
}

/* pprof's Location.matchesName */
static int loc_match(fctx_t *c, int k, const ps_location_t *loc)
{
    for (uint32_t j = 0; j < loc->nlines; j++) {
        int rc = line_match(c, k, &loc->lines[j]);
        if (rc != 0)
            return rc;
    }
    return map_match(c, k, loc);
}

/* Keeps the lines of loc for which line_match(k) == keep (lines without a function stay). A copy in
 * the arena: lines may be shared. */
static int keep_lines(fctx_t *c, int k, ps_location_t *loc, int keep, ps_arena_t *arena)
{
    ps_line_t *nl = ps_arena_alloc(arena, (loc->nlines ? loc->nlines : 1) * sizeof(ps_line_t));
    uint32_t m = 0;
    for (uint32_t j = 0; j < loc->nlines; j++) {
        int rc = line_match(c, k, &loc->lines[j]);
        if (rc < 0)
            return rc;
        if (loc->lines[j].function == 0 || rc == keep)
            nl[m++] = loc->lines[j];
    }
    loc->lines = nl;
    loc->nlines = m;
    return 0;
}

enum { L_FOCUS = 1, L_IGNORE = 2, L_HIDDEN = 4, L_FROM = 8 };

int ps_focus_apply(const ps_focus_t *f, ps_profile_t *p, ps_arena_t *arena, ps_err_t *err)
{
    if (!ps_focus_any(f))
        return 0;
    int ret = 0;
    fctx_t c = {.f = f, .p = p, .err = err, .md = ps_regex_match_new(1)};
    for (int k = 0; k < PS_FOCUS_N; k++)
        if (f->re[k] != NULL)
            c.memo[k] = ps_arena_calloc(arena, p->nstrings ? p->nstrings : 1, 1);
    uint8_t *st = ps_arena_calloc(arena, (size_t)p->nlocations + 1, 1);
    const bool by_name = f->re[PS_FOCUS_FOCUS] || f->re[PS_FOCUS_IGNORE] || f->re[PS_FOCUS_HIDE] || f->re[PS_FOCUS_SHOW];
    bool any_hidden = false;
    int rc = 0;

    /* FilterSamplesByName, location by location */
    for (uint32_t i = 1; by_name && i <= p->nlocations; i++) {
        ps_location_t *loc = &p->locations[i - 1];
        if (f->re[PS_FOCUS_IGNORE] && (rc = loc_match(&c, PS_FOCUS_IGNORE, loc)) != 0) {
            if (rc < 0)
                goto Exit;
            st[i] |= L_IGNORE;
        } else if (f->re[PS_FOCUS_FOCUS] == NULL || (rc = loc_match(&c, PS_FOCUS_FOCUS, loc)) > 0) {
            st[i] |= L_FOCUS;
        } else if (rc < 0) {
            goto Exit;
        }
        if (f->re[PS_FOCUS_HIDE] && (rc = loc_match(&c, PS_FOCUS_HIDE, loc)) != 0) {
            if (rc < 0)
                goto Exit;
            if ((rc = map_match(&c, PS_FOCUS_HIDE, loc)) < 0)
                goto Exit;
            if (rc > 0)
                loc->nlines = 0;
            else if ((rc = keep_lines(&c, PS_FOCUS_HIDE, loc, 0, arena)) < 0)
                goto Exit;
            if (loc->nlines == 0)
                st[i] |= L_HIDDEN;
        }
        if (f->re[PS_FOCUS_SHOW]) {
            if ((rc = map_match(&c, PS_FOCUS_SHOW, loc)) < 0)
                goto Exit;
            if (rc == 0 && (rc = keep_lines(&c, PS_FOCUS_SHOW, loc, 1, arena)) < 0)
                goto Exit;
            if (loc->nlines == 0)
                st[i] |= L_HIDDEN;
        }
        any_hidden |= (st[i] & L_HIDDEN) != 0;
    }
    /* ShowFrom's locations */
    for (uint32_t i = 1; f->re[PS_FOCUS_SHOW_FROM] && i <= p->nlocations; i++) {
        ps_location_t *loc = &p->locations[i - 1];
        if ((rc = map_match(&c, PS_FOCUS_SHOW_FROM, loc)) < 0)
            goto Exit;
        if (rc > 0) {
            st[i] |= L_FROM;
            continue;
        }
        for (uint32_t j = loc->nlines; j-- > 0;) {
            if ((rc = line_match(&c, PS_FOCUS_SHOW_FROM, &loc->lines[j])) < 0)
                goto Exit;
            if (rc > 0) {
                loc->nlines = j + 1;
                st[i] |= L_FROM;
                break;
            }
        }
    }

    uint32_t out = 0;
    for (uint32_t s = 0; s < p->nsamples; s++) {
        if ((s & 1023) == 0 && (ret = ps_budget_check(err)) != 0)
            goto Exit;
        ps_sample_t smp = p->samples[s];
        if (by_name) {
            bool foc = false, ign = false;
            for (uint32_t j = 0; j < smp.nlocs && !ign; j++) {
                uint32_t l = smp.locs[j] <= p->nlocations ? smp.locs[j] : 0;
                foc |= (st[l] & L_FOCUS) != 0;
                ign |= (st[l] & L_IGNORE) != 0;
            }
            if (!foc || ign)
                continue;
            if (any_hidden) {
                uint32_t *nl = ps_arena_alloc(arena, (smp.nlocs ? smp.nlocs : 1) * sizeof(uint32_t)), m = 0;
                for (uint32_t j = 0; j < smp.nlocs; j++)
                    if (!(st[smp.locs[j] <= p->nlocations ? smp.locs[j] : 0] & L_HIDDEN))
                        nl[m++] = smp.locs[j];
                if (m == 0)
                    continue;
                smp.locs = nl;
                smp.nlocs = m;
            }
        }
        if (f->re[PS_FOCUS_SHOW_FROM]) {
            uint32_t j = smp.nlocs;
            while (j > 0 && !(st[smp.locs[j - 1] <= p->nlocations ? smp.locs[j - 1] : 0] & L_FROM))
                j--;
            if (j == 0)
                continue;
            smp.nlocs = j; /* leaf first: the locations [0, j) are the matching one and below */
        }
        p->samples[out++] = smp;
    }
    p->nsamples = out;
    rc = 0;
Exit:
    ps_regex_match_free(c.md);
    return ret != 0 ? ret : rc;
}
