/*
 * selector_specs.c - selectors from (type, name, value) triples (selector_specs.h), compiled by matcher.c.
 */
#include "parser/selector_specs.h"

#include <string.h>

#include "parser/selector_int.h"

#define MAX_SPECS 1000

int ps_selector_from_specs(const ps_matcher_spec_t *specs, uint32_t n, ps_arena_t *arena, ps_selector_t *out,
                           ps_err_t *err)
{
    ps_err_t e;
    memset(out, 0, sizeof(*out));
    if (n > MAX_SPECS)
        return ps_err_set(err, PS_ETOOBIG, "%u matchers (the limit is %u)", n, MAX_SPECS);
    out->m = ps_arena_calloc(arena, n ? n : 1, sizeof(ps_matcher_t));
    for (uint32_t i = 0; i < n; i++) {
        ps_matcher_t *m = &out->m[i];
        const ps_matcher_spec_t *s = &specs[i];
        if (s->op != PS_MATCH_EQ && s->op != PS_MATCH_NEQ && s->op != PS_MATCH_RE && s->op != PS_MATCH_NRE) {
            ps_selector_dispose(out);
            memset(out, 0, sizeof(*out));
            return ps_err_set(err, PS_EINVAL, "matchers[%u]: unknown matcher type %d", i, (int)s->op);
        }
        m->op = s->op;
        m->name = ps_arena_strndup(arena, s->name, s->nlen);
        m->nlen = s->nlen;
        m->value = ps_arena_strndup(arena, s->value, s->vlen);
        m->vlen = s->vlen;
        if (ps_matcher_compile(m, &e) != 0) {
            ps_selector_dispose(out);
            memset(out, 0, sizeof(*out));
            return ps_err_set(err, PS_EINVAL, "matchers[%u]: %s", i, e.msg);
        }
        out->n = i + 1;
    }
    return 0;
}
