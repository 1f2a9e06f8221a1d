/*
 * list.c - the line view of functions (query.h ps_query_list), `go tool pprof -list` from the stored
 * locations. pprof's rules (driver: granularity "lines"; report/source.go printSource), restated:
 *
 *  - every (function name, file, line) of a location's lines is a node; a location's lines[0] is its
 *    innermost (inlined) frame, so an inlined call is a node of the inlined function;
 *  - flat: the value of a sample goes to the node of its leaf location's innermost line (none when
 *    that location has no lines);
 *  - cum: the value of a sample goes to every node on its stack, once per sample (recursion through
 *    one line counts once);
 *  - the functions listed are those whose name the regexp matches anywhere (Go's MatchString), by
 *    name, then one entry per file of the function (by file name); a function whose lines have no
 *    file is listed without lines ("No source information");
 *  - an entry's flat and cum are the sums over its lines (pprof's "(flat, cum)" header; cum so
 *    summed may exceed the function's cum under recursion, as pprof's does).
 * Lines with neither flat nor cum are not listed: pprof prints them from the source file, which
 * the server does not have.
 */
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "core/hash.h"
#include "query.h"

typedef struct node {
    uint32_t fn;  /* canonical function (index into fns below) */
    int64_t line;
    int64_t flat, cum;
    uint32_t seen; /* last sample (+1) that added cum */
} node_t;

typedef struct cfn {
    ps_str_t name, file;
    uint32_t id;
} cfn_t;

static int str_cmp(ps_str_t a, ps_str_t b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    return c ? c : (a.len > b.len) - (a.len < b.len);
}

static int cmp_cfn(const void *a, const void *b)
{
    const cfn_t *x = a, *y = b;
    int c = str_cmp(x->name, y->name);
    return c ? c : str_cmp(x->file, y->file);
}

/* by function (its rank by name, then file), then line */
static int cmp_node(const void *a, const void *b)
{
    const node_t *x = a, *y = b;
    if (x->fn != y->fn)
        return x->fn < y->fn ? -1 : 1;
    return (x->line > y->line) - (x->line < y->line);
}

int ps_query_list(const ps_profile_t *p, uint32_t vi, const ps_regex_t *re, ps_arena_t *arena, ps_list_t *out,
                  ps_err_t *err)
{
    int ret = 0;
    memset(out, 0, sizeof(*out));
    ps_regex_match_t *md = ps_regex_match_new(1);
    /* per function index: its canonical function + 1 when its name matches, 0 when it does not */
    uint32_t *canon = ps_arena_calloc(arena, (size_t)p->nfunctions + 1, sizeof(uint32_t));
    cfn_t *fns = ps_arena_alloc(arena, ((size_t)p->nfunctions + 1) * sizeof(cfn_t));
    uint32_t nfns = 0;
    ps_hmap_t fmap, nmap;
    ps_hmap_init(&fmap);
    ps_hmap_init(&nmap);
    node_t *nodes = NULL;
    size_t nnodes = 0, cap = 0;
    for (uint32_t f = 1; f <= p->nfunctions; f++) {
        ps_str_t name = ps_profile_str(p, p->functions[f - 1].name);
        ps_str_t file = ps_profile_str(p, p->functions[f - 1].filename);
        int rc = ps_regex_match(re, name.ptr, name.len, md);
        if (rc < 0 && ps_regex_limit_hit(rc) != NULL) {
            ret = ps_err_set(err, PS_ELIMIT, "regexp \"list\": PCRE2 %s hit on a name of %u bytes",
                             ps_regex_limit_hit(rc), name.len);
            goto Exit;
        }
        if (rc <= 0)
            continue;
        /* key: name, NUL, file */
        size_t kl = (size_t)name.len + 1 + file.len;
        char *key = ps_arena_alloc(arena, kl);
        memcpy(key, name.ptr, name.len);
        key[name.len] = '\0';
        memcpy(key + name.len + 1, file.ptr, file.len);
        uint64_t id;
        if (!ps_hmap_get(&fmap, key, kl, &id)) {
            id = nfns;
            fns[nfns] = (cfn_t){name, file, (uint32_t)id};
            nfns++;
            ps_hmap_put(&fmap, key, kl, id);
        }
        canon[f] = (uint32_t)id + 1;
    }
    /* canonical functions numbered by rank (name, then file), so nodes sort by number */
    qsort(fns, nfns, sizeof(cfn_t), cmp_cfn);
    uint32_t *rank = ps_arena_alloc(arena, ((size_t)nfns + 1) * sizeof(uint32_t));
    for (uint32_t i = 0; i < nfns; i++)
        rank[fns[i].id] = i;
    for (uint32_t f = 1; f <= p->nfunctions; f++)
        if (canon[f] != 0)
            canon[f] = rank[canon[f] - 1] + 1;
    for (uint32_t s = 0; s < p->nsamples; s++) {
        if ((s & 1023) == 0 && (ret = ps_budget_check(err)) != 0)
            goto Exit;
        const ps_sample_t *smp = &p->samples[s];
        int64_t v = smp->values[vi];
        out->total += v < 0 ? -v : v;
        for (uint32_t j = 0; j < smp->nlocs; j++) {
            uint32_t l = smp->locs[j];
            if (l == 0 || l > p->nlocations)
                continue;
            const ps_location_t *loc = &p->locations[l - 1];
            for (uint32_t k = 0; k < loc->nlines; k++) {
                uint32_t fi = loc->lines[k].function;
                if (fi == 0 || fi > p->nfunctions || canon[fi] == 0)
                    continue;
                uint32_t fn = canon[fi] - 1;
                int64_t line = loc->lines[k].line;
                uint8_t key[12];
                memcpy(key, &fn, 4);
                memcpy(key + 4, &line, 8);
                uint64_t ni;
                if (!ps_hmap_get(&nmap, key, sizeof(key), &ni)) {
                    if (nnodes == cap) {
                        cap = cap ? cap * 2 : 64;
                        nodes = ps_xrealloc(nodes, cap * sizeof(node_t));
                    }
                    ni = nnodes;
                    nodes[nnodes++] = (node_t){.fn = fn, .line = line};
                    ps_hmap_put(&nmap, key, sizeof(key), ni);
                }
                node_t *n = &nodes[ni];
                if (j == 0 && k == 0)
                    n->flat += v;
                if (n->seen != s + 1) {
                    n->seen = s + 1;
                    n->cum += v;
                }
            }
        }
    }
    if (nnodes)
        qsort(nodes, nnodes, sizeof(node_t), cmp_node);
    /* entries: one per (name, file) with nodes, plus matching functions no sample reached are left
     * out (pprof lists only nodes of the graph) */
    out->fns = ps_arena_alloc(arena, (nnodes ? nnodes : 1) * sizeof(ps_list_fn_t));
    out->lines = ps_arena_alloc(arena, (nnodes ? nnodes : 1) * sizeof(ps_list_line_t));
    for (size_t i = 0; i < nnodes; i++) {
        const node_t *n = &nodes[i];
        if (i == 0 || n->fn != nodes[i - 1].fn) {
            ps_list_fn_t *e = &out->fns[out->n++];
            *e = (ps_list_fn_t){.name = fns[n->fn].name, .file = fns[n->fn].file, .lines = &out->lines[i]};
        }
        ps_list_fn_t *e = &out->fns[out->n - 1];
        e->flat += n->flat;
        e->cum += n->cum;
        out->lines[i] = (ps_list_line_t){n->line, n->flat, n->cum};
        e->nlines++;
    }
Exit:
    free(nodes);
    ps_hmap_dispose(&fmap);
    ps_hmap_dispose(&nmap);
    ps_regex_match_free(md);
    return ret;
}
