/*
 * test_render.c - unit tests for src/render/render.c: flame graphs (plain and diff), folded stacks and
 * top tables on hand-built profiles with known answers (nested stacks, inlined frames, recursion,
 * negative values, locations without lines with and without mapping, max_nodes truncation into
 * "other", names that need escaping); random small profiles against invariants; the real Go CPU
 * profile $PS_TESTDATA/pprof/go/cpu-01.pb.gz against `go tool pprof -top` figures; every Go and Node
 * fixture, every sample type, with a structural check of the flame graph encoding (absolute
 * positions decoded back, children inside their parent's span, total = self + children). Prints
 * render times (CPU time) for cpu-01 and a synthetic 100k-sample profile; PS_RENDER_WORST=1 adds a
 * 100k-sample profile whose stacks are nearly all distinct (3.3M call tree nodes, seconds).
 */
#include <dirent.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include "../testutil.h"
#include <jansson.h>

#include "core/budget.h"
#include "proto/pprof.h"
#include "render/render.h"


/* ---- a tiny profile builder ------------------------------------------------------------------- */

enum { PB_MAX = 512 };

typedef struct pb {
    ps_profile_t p;
    ps_str_t strs[PB_MAX];
    ps_value_type_t types[2];
    ps_function_t funcs[PB_MAX];
    ps_location_t locs[PB_MAX];
    uint32_t loc_of_func[PB_MAX]; /* function -> its one-line location, 0 = none yet */
    ps_line_t lines[PB_MAX * 2];
    uint32_t nlines;
    ps_mapping_t maps[8];
    ps_sample_t samples[PB_MAX];
    uint32_t locbuf[PB_MAX * 16];
    uint32_t nlocbuf;
    int64_t vals[PB_MAX * 2];
} pb_t;

static uint32_t pb_str(pb_t *b, const char *s)
{
    for (uint32_t i = 0; i < b->p.nstrings; i++)
        if (b->strs[i].len == strlen(s) && memcmp(b->strs[i].ptr, s, b->strs[i].len) == 0)
            return i;
    assert_true(b->p.nstrings < PB_MAX);
    b->strs[b->p.nstrings] = (ps_str_t){s, (uint32_t)strlen(s)};
    return b->p.nstrings++;
}

static pb_t *pb_new(uint32_t ntypes)
{
    pb_t *b = calloc(1, sizeof(pb_t));
    assert_non_null(b);
    b->p.strings = b->strs;
    b->p.sample_types = b->types;
    b->p.functions = b->funcs;
    b->p.locations = b->locs;
    b->p.mappings = b->maps;
    b->p.samples = b->samples;
    b->p.ntypes = ntypes;
    pb_str(b, "");
    b->types[0] = (ps_value_type_t){pb_str(b, "samples"), pb_str(b, "count")};
    b->types[1] = (ps_value_type_t){pb_str(b, "cpu"), pb_str(b, "nanoseconds")};
    return b;
}

/* A function (1-based index); the same name, system name and file give the same function. */
static uint32_t pb_func(pb_t *b, const char *name, const char *sys, const char *file)
{
    uint32_t n = pb_str(b, name), s = pb_str(b, sys), f = pb_str(b, file);
    for (uint32_t i = 0; i < b->p.nfunctions; i++)
        if (b->funcs[i].name == n && b->funcs[i].system_name == s && b->funcs[i].filename == f)
            return i + 1;
    assert_true(b->p.nfunctions < PB_MAX);
    b->funcs[b->p.nfunctions] = (ps_function_t){n, s, f, 1};
    return ++b->p.nfunctions;
}

/* A location with nlines lines; fn[0] is the innermost (inlined) function. */
static uint32_t pb_loc(pb_t *b, uint32_t mapping, uint64_t addr, uint32_t nlines, const uint32_t *fn)
{
    assert_true(b->p.nlocations < PB_MAX && b->nlines + nlines <= PB_MAX * 2);
    ps_location_t *l = &b->locs[b->p.nlocations];
    memset(l, 0, sizeof(*l));
    l->mapping = mapping;
    l->address = addr;
    l->nlines = nlines;
    l->lines = &b->lines[b->nlines];
    for (uint32_t i = 0; i < nlines; i++)
        b->lines[b->nlines++] = (ps_line_t){fn[i], 10 + i, 0};
    return ++b->p.nlocations;
}

static uint32_t pb_mapping(pb_t *b, uint64_t start, uint64_t limit, uint64_t off, const char *file)
{
    b->maps[b->p.nmappings] = (ps_mapping_t){start, limit, off, pb_str(b, file), 0, 0};
    return ++b->p.nmappings;
}

/* A sample; locs are leaf first. */
static void pb_sample(pb_t *b, uint32_t nlocs, const uint32_t *locs, int64_t v0, int64_t v1)
{
    assert_true(b->p.nsamples < PB_MAX && b->nlocbuf + nlocs <= PB_MAX * 16);
    ps_sample_t *s = &b->samples[b->p.nsamples];
    memset(s, 0, sizeof(*s));
    s->nlocs = nlocs;
    s->locs = &b->locbuf[b->nlocbuf];
    if (nlocs > 0)
        memcpy(s->locs, locs, nlocs * sizeof(uint32_t));
    b->nlocbuf += nlocs;
    s->values = &b->vals[2 * b->p.nsamples];
    s->values[0] = v0;
    s->values[1] = v1;
    b->p.nsamples++;
}

/* A sample from "root;...;leaf": one function (file m.go) and one location per name. The string
 * must outlive the profile (names point into it), so it is copied into static storage. */
static void pb_stack(pb_t *b, const char *stack, int64_t v0, int64_t v1)
{
    static char pool[1 << 16];
    static size_t used;
    size_t n = strlen(stack);
    assert_true(used + n + 1 <= sizeof(pool));
    char *s = memcpy(pool + used, stack, n + 1);
    used += n + 1;
    uint32_t locs[64], nl = 0;
    for (char *tok = strtok(s, ";"); tok != NULL; tok = strtok(NULL, ";")) {
        uint32_t fn = pb_func(b, tok, "", "m.go");
        if (b->loc_of_func[fn] == 0)
            b->loc_of_func[fn] = pb_loc(b, 0, 0x1000 + 0x10 * fn, 1, &fn);
        locs[nl++] = b->loc_of_func[fn];
    }
    uint32_t leaf_first[64];
    for (uint32_t i = 0; i < nl; i++)
        leaf_first[i] = locs[nl - 1 - i];
    pb_sample(b, nl, leaf_first, v0, v1);
}

/* ---- helpers --------------------------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static char *buf_str(ps_buf_t *b)
{
    ps_buf_putc(b, '\0');
    b->len--;
    return (char *)b->data;
}

static char *fg_json(const ps_flamegraph_t *fg, ps_buf_t *b)
{
    ps_buf_reset(b);
    ps_flamegraph_json(fg, b);
    return buf_str(b);
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts); /* CPU time: the build machine is shared */
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* A decoded flame graph node. */
typedef struct dnode {
    int64_t start[2], total[2], self[2];
    int64_t csum[2]; /* sum of children totals */
    uint32_t name, level;
    int32_t parent; /* index into the flat node array, -1 for the root */
} dnode_t;

/*
 * Decodes fg back to absolute positions and checks the structure: names[0] = "total", the root alone
 * on level 0 at offset 0, name indexes in range, every node of level L+1 inside the span of one node
 * of level L after its self part, and totals = self + children totals (per side for a diff). Values
 * must be positive where a node exists (total > 0 on some side). Returns the nodes (malloc'ed).
 */
static dnode_t *check_fg(const ps_flamegraph_t *fg, size_t *count)
{
    size_t w = fg->diff ? 7 : 4, sides = fg->diff ? 2 : 1;
    assert_true(fg->nnames >= 1);
    assert_string_equal(fg->names[0], "total");
    assert_true(fg->nlevels >= 1);
    assert_int_equal(fg->levels[0].n, w);
    size_t n = 0;
    for (uint32_t l = 0; l < fg->nlevels; l++) {
        assert_int_equal(fg->levels[l].n % w, 0);
        assert_true(fg->levels[l].n > 0);
        n += fg->levels[l].n / w;
    }
    dnode_t *d = calloc(n, sizeof(dnode_t));
    size_t *lstart = calloc(fg->nlevels + 1, sizeof(size_t));
    size_t k = 0;
    int64_t max_self = 0;
    for (uint32_t l = 0; l < fg->nlevels; l++) {
        lstart[l] = k;
        int64_t prev[2] = {0, 0};
        const int64_t *v = fg->levels[l].values;
        for (uint32_t i = 0; i < fg->levels[l].n; i += (uint32_t)w, k++) {
            dnode_t *x = &d[k];
            x->level = l;
            x->parent = -1;
            for (size_t s = 0; s < sides; s++) {
                x->start[s] = prev[s] + v[i + 3 * s];
                x->total[s] = v[i + 3 * s + 1];
                x->self[s] = v[i + 3 * s + 2];
                prev[s] = x->start[s] + x->total[s];
                assert_true(x->total[s] >= 0 && x->self[s] >= 0 && x->self[s] <= x->total[s]);
                if (x->self[s] > max_self)
                    max_self = x->self[s];
            }
            assert_true(x->total[0] > 0 || x->total[1] > 0 || l == 0);
            x->name = (uint32_t)v[i + w - 1];
            assert_true(x->name < fg->nnames);
        }
    }
    lstart[fg->nlevels] = k;
    assert_int_equal(d[0].start[0], 0);
    assert_int_equal(d[0].name, 0);
    assert_int_equal(fg->max_self, max_self);
    if (fg->diff) {
        assert_int_equal(d[0].start[1], 0);
        assert_int_equal(fg->left_ticks, d[0].total[0]);
        assert_int_equal(fg->right_ticks, d[0].total[1]);
        assert_int_equal(fg->total, d[0].total[0] + d[0].total[1]);
    } else {
        assert_int_equal(fg->total, d[0].total[0]);
    }
    for (uint32_t l = 1; l < fg->nlevels; l++) {
        size_t pp = lstart[l - 1];
        for (size_t c = lstart[l]; c < lstart[l + 1]; c++) {
            dnode_t *x = &d[c];
            size_t s = x->total[0] > 0 ? 0 : 1; /* a side on which the node has width */
            for (;; pp++) {
                assert_true(pp < lstart[l]); /* some parent must contain it */
                dnode_t *p = &d[pp];
                if (p->start[s] + p->self[s] <= x->start[s] && x->start[s] + x->total[s] <= p->start[s] + p->total[s] &&
                    p->total[s] > 0)
                    break;
            }
            dnode_t *p = &d[pp];
            for (size_t t = 0; t < sides; t++) {
                assert_true(p->start[t] + p->self[t] <= x->start[t]);
                assert_true(x->start[t] + x->total[t] <= p->start[t] + p->total[t]);
                p->csum[t] += x->total[t];
            }
            x->parent = (int32_t)pp;
        }
    }
    for (size_t i = 0; i < k; i++)
        for (size_t s = 0; s < sides; s++)
            assert_int_equal(d[i].total[s], d[i].self[s] + d[i].csum[s]);
    free(lstart);
    *count = k;
    return d;
}

/* The folded stacks a (non-diff, untruncated) flame graph describes, rebuilt from its nodes. */
static int cmp_strp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

static char *fg_to_folded(const ps_flamegraph_t *fg, const dnode_t *d, size_t n)
{
    char **lines = calloc(n, sizeof(char *));
    size_t m = 0, total = 1;
    for (size_t i = 1; i < n; i++) {
        if (d[i].self[0] == 0)
            continue;
        const char *path[4096];
        size_t depth = 0;
        for (int32_t x = (int32_t)i; x > 0; x = d[x].parent)
            path[depth++] = fg->names[d[x].name];
        size_t len = 32;
        for (size_t j = 0; j < depth; j++)
            len += strlen(path[j]) + 1;
        char *s = malloc(len), *w = s;
        for (size_t j = depth; j-- > 0;)
            w += sprintf(w, "%s%s", path[j], j ? ";" : "");
        sprintf(w, " %lld\n", (long long)d[i].self[0]);
        lines[m++] = s;
        total += strlen(s);
    }
    qsort(lines, m, sizeof(char *), cmp_strp);
    char *out = malloc(total), *w = out;
    *w = '\0';
    for (size_t i = 0; i < m; i++) {
        w = stpcpy(w, lines[i]);
        free(lines[i]);
    }
    free(lines);
    return out;
}

/* Sum of the values of every folded line. */
static int64_t folded_sum(const char *s, size_t *nlines)
{
    int64_t sum = 0;
    *nlines = 0;
    for (const char *line = s; *line;) {
        const char *nl = strchr(line, '\n');
        assert_non_null(nl);
        const char *sp = nl;
        while (sp > line && sp[-1] != ' ')
            sp--;
        assert_true(sp > line);
        sum += strtoll(sp, NULL, 10);
        (*nlines)++;
        line = nl + 1;
    }
    return sum;
}

/* ---- hand-built profiles --------------------------------------------------------------------- */

static pb_t *nested_profile(void)
{
    pb_t *b = pb_new(2);
    pb_stack(b, "main;a;b", 10, 0);
    pb_stack(b, "main;a", 5, 0);
    pb_stack(b, "main;c", 3, 0);
    pb_stack(b, "main;a;b", 2, 0);
    pb_stack(b, "main;zero", 0, 0); /* value 0: no node, no row, no line */
    return b;
}

static void test_nested_flamegraph(void **state)
{
    pb_t *b = nested_profile();
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    ps_err_t err;
    ps_buf_t out = PS_BUF_INIT;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, &err), 0);
    assert_string_equal(fg_json(&fg, &out),
                        "{\"names\":[\"total\",\"main\",\"a\",\"b\",\"c\"],"
                        "\"levels\":[[0,20,0,0],[0,20,0,1],[0,17,5,2,0,3,3,4],[5,12,12,3]],"
                        "\"total\":20,\"max_self\":12}");
    size_t n;
    free(check_fg(&fg, &n));
    assert_int_equal(n, 5);
    /* value index 1 is all zero: the root alone */
    assert_int_equal(ps_flamegraph_build(&b->p, 1, 0, 0, &a, &fg, &err), 0);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\"],\"levels\":[[0,0,0,0]],\"total\":0,\"max_self\":0}");
    /* bad arguments */
    assert_int_equal(ps_flamegraph_build(&b->p, 2, 0, 0, &a, &fg, &err), PS_EINVAL);
    assert_non_null(strstr(err.msg, "out of range"));
    b->p.ntypes = 1;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, 0, &a, &fg, &err), PS_EINVAL);
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
    free(b);
}

static void test_nested_folded_top(void **state)
{
    pb_t *b = nested_profile();
    ps_buf_t out = PS_BUF_INIT;
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;a 5\nmain;a;b 12\nmain;c 3\n");
    ps_buf_reset(&out);
    ps_render_top(&b->p, 0, 0, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":20,\"rows\":["
                        "{\"function\":\"b\",\"file\":\"m.go\",\"line\":1,\"flat\":12,\"flat%\":60.00,\"cum\":12,\"cum%\":60.00},"
                        "{\"function\":\"a\",\"file\":\"m.go\",\"line\":1,\"flat\":5,\"flat%\":25.00,\"cum\":17,\"cum%\":85.00},"
                        "{\"function\":\"c\",\"file\":\"m.go\",\"line\":1,\"flat\":3,\"flat%\":15.00,\"cum\":3,\"cum%\":15.00},"
                        "{\"function\":\"main\",\"file\":\"m.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":20,\"cum%\":100.00}]}");
    ps_buf_reset(&out);
    ps_render_top(&b->p, 0, 2, &out);
    json_t *j = json_loads(buf_str(&out), 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 2);
    json_decref(j);
    /* bad value index */
    ps_buf_reset(&out);
    ps_render_top(&b->p, 5, 0, &out);
    assert_string_equal(buf_str(&out), "{\"total\":0,\"rows\":[]}");
    ps_buf_reset(&out);
    ps_render_folded(&b->p, 5, &out);
    assert_int_equal(out.len, 0);
    ps_buf_dispose(&out);
    free(b);
}

/* main -> location with lines {inl (innermost), mid, outer}: frames main;outer;mid;inl. */
static void test_inlined(void **state)
{
    pb_t *b = pb_new(1);
    uint32_t fmain = pb_func(b, "main", "", "main.go");
    uint32_t inl[3] = {pb_func(b, "inl", "", "x.go"), pb_func(b, "mid", "", "y.go"), pb_func(b, "outer", "", "z.go")};
    uint32_t lmain = pb_loc(b, 0, 0x10, 1, &fmain);
    uint32_t lin = pb_loc(b, 0, 0x20, 3, inl);
    uint32_t lmid = pb_loc(b, 0, 0x30, 2, inl + 1); /* {mid, outer}: a call from mid itself */
    pb_sample(b, 2, (uint32_t[]){lin, lmain}, 7, 0);
    pb_sample(b, 2, (uint32_t[]){lmid, lmain}, 3, 0);
    ps_buf_t out = PS_BUF_INIT;
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;outer;mid 3\nmain;outer;mid;inl 7\n");
    ps_buf_reset(&out);
    ps_render_top(&b->p, 0, 0, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":10,\"rows\":["
                        "{\"function\":\"inl\",\"file\":\"x.go\",\"line\":1,\"flat\":7,\"flat%\":70.00,\"cum\":7,\"cum%\":70.00},"
                        "{\"function\":\"mid\",\"file\":\"y.go\",\"line\":1,\"flat\":3,\"flat%\":30.00,\"cum\":10,\"cum%\":100.00},"
                        "{\"function\":\"main\",\"file\":\"main.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":10,\"cum%\":100.00},"
                        "{\"function\":\"outer\",\"file\":\"z.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":10,\"cum%\":100.00}]}");
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
    ps_buf_reset(&out);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"outer\",\"mid\",\"inl\"],"
                                            "\"levels\":[[0,10,0,0],[0,10,0,1],[0,10,0,2],[0,10,3,3],[3,7,7,4]],"
                                            "\"total\":10,\"max_self\":7}");
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

/* main;a;b;a: a's cum counts the sample once; the flame graph keeps both a frames. */
static void test_recursion(void **state)
{
    pb_t *b = pb_new(1);
    pb_stack(b, "main;a;b;a", 4, 0);
    pb_stack(b, "main;a", 1, 0);
    pb_stack(b, "main;a;b;a;b;a", 2, 0);
    ps_buf_t out = PS_BUF_INIT;
    ps_render_top(&b->p, 0, 0, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":7,\"rows\":["
                        "{\"function\":\"a\",\"file\":\"m.go\",\"line\":1,\"flat\":7,\"flat%\":100.00,\"cum\":7,\"cum%\":100.00},"
                        "{\"function\":\"main\",\"file\":\"m.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":7,\"cum%\":100.00},"
                        "{\"function\":\"b\",\"file\":\"m.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":6,\"cum%\":85.71}]}");
    ps_buf_reset(&out);
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;a 1\nmain;a;b;a 4\nmain;a;b;a;b;a 2\n");
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
    ps_buf_reset(&out);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"a\",\"b\"],"
                                            "\"levels\":[[0,7,0,0],[0,7,0,1],[0,7,1,2],[1,6,0,3],[1,6,4,2],[5,2,0,3],"
                                            "[5,2,2,2]],\"total\":7,\"max_self\":4}");
    size_t n;
    free(check_fg(&fg, &n));
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

static void test_diff(void **state)
{
    pb_t *b = pb_new(2);
    pb_stack(b, "main;a", 10, 4);
    pb_stack(b, "main;b", 0, 6);
    pb_stack(b, "main;a;c", 3, 0);
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    ps_buf_t out = PS_BUF_INIT;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, 0, &a, &fg, NULL), 0);
    assert_int_equal(fg.diff, 1);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"a\",\"c\",\"b\"],"
                                            "\"levels\":[[0,13,0,0,10,0,0],[0,13,0,0,10,0,1],"
                                            "[0,13,10,0,4,4,2,0,0,0,0,6,6,4],[10,3,3,4,0,0,3]],"
                                            "\"total\":23,\"max_self\":10,\"left_ticks\":13,\"right_ticks\":10}");
    size_t n;
    free(check_fg(&fg, &n));
    assert_int_equal(n, 5);

    /* negative values (a diff_base-style profile): sums stay signed, the encoding stays consistent */
    pb_stack(b, "main;b", -2, -1);
    pb_stack(b, "main;d", 0, -3);
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, 0, &a, &fg, NULL), 0);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"a\",\"c\",\"b\",\"d\"],"
                                            "\"levels\":[[0,11,0,0,6,0,0],[0,11,0,0,6,0,1],"
                                            "[0,13,10,0,4,4,2,0,-2,-2,0,5,5,4,0,0,0,0,-3,-3,5]," /* d starts at 11 / 9 */
                                            "[10,3,3,4,0,0,3]],"
                                            "\"total\":17,\"max_self\":10,\"left_ticks\":11,\"right_ticks\":6}");
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

static void test_negative_top_folded(void **state)
{
    pb_t *b = pb_new(1);
    pb_stack(b, "main;a", 10, 0);
    pb_stack(b, "main;b", -4, 0);
    pb_stack(b, "main;c", 4, 0);
    pb_stack(b, "main;c", -4, 0); /* cancels out: no folded line, no row (pprof drops 0/0 nodes) */
    ps_buf_t out = PS_BUF_INIT;
    ps_render_top(&b->p, 0, 0, &out);
    /* total = sum of |v| = 22 */
    assert_string_equal(buf_str(&out),
                        "{\"total\":22,\"rows\":["
                        "{\"function\":\"a\",\"file\":\"m.go\",\"line\":1,\"flat\":10,\"flat%\":45.45,\"cum\":10,\"cum%\":45.45},"
                        "{\"function\":\"b\",\"file\":\"m.go\",\"line\":1,\"flat\":-4,\"flat%\":-18.18,\"cum\":-4,\"cum%\":-18.18},"
                        "{\"function\":\"main\",\"file\":\"m.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":6,\"cum%\":27.27}]}");
    ps_buf_reset(&out);
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;a 10\nmain;b -4\n");
    ps_buf_dispose(&out);
    free(b);
}

/* A diff's top: rows by |flat| (the largest drop is not cut off by limit), percentages of the
 * base's total as go tool pprof -diff_base prints them. */
static void test_diff_top(void **state)
{
    (void)state;
    pb_t *b = pb_new(1);
    pb_stack(b, "main;grow", 3, 0);
    pb_stack(b, "main;drop", -40, 0);
    pb_stack(b, "main;up", 20, 0);
    pb_stack(b, "main;down", -20, 0);
    ps_buf_t out = PS_BUF_INIT;
    ps_render_top_diff(&b->p, 0, 2, 80, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":80,\"rows\":["
                        "{\"function\":\"drop\",\"file\":\"m.go\",\"line\":1,\"flat\":-40,\"flat%\":-50.00,\"cum\":-40,\"cum%\":-50.00},"
                        "{\"function\":\"down\",\"file\":\"m.go\",\"line\":1,\"flat\":-20,\"flat%\":-25.00,\"cum\":-20,\"cum%\":-25.00}]}");
    /* equal |flat|: |cum| then name decide (down before up); limit 0 = all */
    ps_buf_reset(&out);
    ps_render_top_diff(&b->p, 0, 0, 80, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":80,\"rows\":["
                        "{\"function\":\"drop\",\"file\":\"m.go\",\"line\":1,\"flat\":-40,\"flat%\":-50.00,\"cum\":-40,\"cum%\":-50.00},"
                        "{\"function\":\"down\",\"file\":\"m.go\",\"line\":1,\"flat\":-20,\"flat%\":-25.00,\"cum\":-20,\"cum%\":-25.00},"
                        "{\"function\":\"up\",\"file\":\"m.go\",\"line\":1,\"flat\":20,\"flat%\":25.00,\"cum\":20,\"cum%\":25.00},"
                        "{\"function\":\"grow\",\"file\":\"m.go\",\"line\":1,\"flat\":3,\"flat%\":3.75,\"cum\":3,\"cum%\":3.75},"
                        "{\"function\":\"main\",\"file\":\"m.go\",\"line\":1,\"flat\":0,\"flat%\":0.00,\"cum\":-37,\"cum%\":-46.25}]}");
    /* an empty base (total 0): the sum of |value| */
    ps_buf_reset(&out);
    ps_render_top_diff(&b->p, 0, 1, 0, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":83,\"rows\":["
                        "{\"function\":\"drop\",\"file\":\"m.go\",\"line\":1,\"flat\":-40,\"flat%\":-48.19,\"cum\":-40,\"cum%\":-48.19}]}");
    ps_buf_dispose(&out);
    free(b);
}

/* Frames named from addresses: no lines, no lines with a mapping, nameless functions. */
static void test_address_frames(void **state)
{
    pb_t *b = pb_new(1);
    uint32_t m = pb_mapping(b, 0x7f0000000000, 0x7f0000100000, 0x1000, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    uint32_t m_noname = pb_mapping(b, 0x400000, 0x500000, 0, "");
    uint32_t fmain = pb_func(b, "main", "", "main.go");
    uint32_t fsys = pb_func(b, "", "sys_only", "s.c");
    uint32_t fnone = pb_func(b, "", "", "");
    uint32_t lmain = pb_loc(b, 0, 0x10, 1, &fmain);
    uint32_t lbare = pb_loc(b, 0, 0x4a5f3c, 0, NULL);
    uint32_t lmap = pb_loc(b, m, 0x7f0000001234, 0, NULL);
    uint32_t lnoname = pb_loc(b, m_noname, 0x401000, 0, NULL);
    uint32_t lsys = pb_loc(b, 0, 0x50, 1, &fsys);
    uint32_t lnone = pb_loc(b, 0, 0xbeef, 1, &fnone);
    uint32_t zero = 0;
    uint32_t lfunc0 = pb_loc(b, 0, 0xcafe, 1, &zero); /* a line without function */
    pb_sample(b, 2, (uint32_t[]){lbare, lmain}, 1, 0);
    pb_sample(b, 2, (uint32_t[]){lmap, lmain}, 2, 0);
    pb_sample(b, 2, (uint32_t[]){lnoname, lmain}, 3, 0);
    pb_sample(b, 2, (uint32_t[]){lsys, lmain}, 4, 0);
    pb_sample(b, 2, (uint32_t[]){lnone, lmain}, 5, 0);
    pb_sample(b, 3, (uint32_t[]){lfunc0, lbare, lmain}, 6, 0);
    pb_sample(b, 0, NULL, 100, 0); /* no frames: counted in totals, no line, no row */
    ps_buf_t out = PS_BUF_INIT;
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;0x401000 3\n"
                                        "main;0x4a5f3c 1\n"
                                        "main;0x4a5f3c;0xcafe 6\n"
                                        "main;0xbeef 5\n"
                                        "main;libc.so.6+0x2234 2\n"
                                        "main;sys_only 4\n");
    ps_buf_reset(&out);
    ps_render_top(&b->p, 0, 3, &out);
    assert_string_equal(buf_str(&out),
                        "{\"total\":121,\"rows\":["
                        "{\"function\":\"0xcafe\",\"file\":\"\",\"line\":0,\"flat\":6,\"flat%\":4.96,\"cum\":6,\"cum%\":4.96},"
                        "{\"function\":\"0xbeef\",\"file\":\"\",\"line\":1,\"flat\":5,\"flat%\":4.13,\"cum\":5,\"cum%\":4.13},"
                        "{\"function\":\"sys_only\",\"file\":\"s.c\",\"line\":1,\"flat\":4,\"flat%\":3.31,\"cum\":4,\"cum%\":3.31}]}");
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
    assert_int_equal(fg.total, 121);
    assert_int_equal(fg.max_self, 100); /* the root's self: samples without frames */
    assert_int_equal(fg.levels[1].values[0], 100); /* main starts after the root's self */
    size_t n;
    free(check_fg(&fg, &n));
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

/* Names with JSON metacharacters and folded separators. */
static void test_escaping(void **state)
{
    pb_t *b = pb_new(1);
    uint32_t f1 = pb_func(b, "main", "", "m.go");
    uint32_t f2 = pb_func(b, "we\"ird\\name;with\nnl", "", "dir\\f.go");
    uint32_t f3 = pb_func(b, "we\"ird\\name_with_nl", "", "dir\\f.go"); /* same folded name as f2 */
    uint32_t l1 = pb_loc(b, 0, 1, 1, &f1), l2 = pb_loc(b, 0, 2, 1, &f2), l3 = pb_loc(b, 0, 3, 1, &f3);
    pb_sample(b, 2, (uint32_t[]){l2, l1}, 3, 0);
    pb_sample(b, 2, (uint32_t[]){l3, l1}, 4, 0);
    ps_buf_t out = PS_BUF_INIT;
    ps_render_folded(&b->p, 0, &out);
    assert_string_equal(buf_str(&out), "main;we\"ird\\name_with_nl 7\n");
    ps_buf_reset(&out);
    ps_render_top(&b->p, 0, 1, &out);
    assert_string_equal(buf_str(&out), "{\"total\":7,\"rows\":[{\"function\":\"we\\\"ird\\\\name_with_nl\","
                                       "\"file\":\"dir\\\\f.go\",\"line\":1,\"flat\":4,\"flat%\":57.14,\"cum\":4,\"cum%\":57.14}]}");
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
    ps_buf_reset(&out);
    json_error_t jerr;
    json_t *j = json_loads(fg_json(&fg, &out), 0, &jerr);
    assert_non_null(j);
    json_t *names = json_object_get(j, "names");
    assert_int_equal(json_array_size(names), 4);
    /* children by byte order: "we\"ird\\name;..." < "we\"ird\\name_..." (';' < '_') */
    assert_string_equal(json_string_value(json_array_get(names, 2)), "we\"ird\\name;with\nnl");
    assert_string_equal(json_string_value(json_array_get(names, 3)), "we\"ird\\name_with_nl");
    json_decref(j);
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

static pb_t *wide_profile(void)
{
    pb_t *b = pb_new(2);
    pb_stack(b, "main;a;x", 30, 1);
    pb_stack(b, "main;a;y", 20, 1);
    pb_stack(b, "main;b", 30, 1);
    pb_stack(b, "main;c", 10, 1);
    pb_stack(b, "main;d", 5, 60);
    pb_stack(b, "main;e", 5, 1);
    return b;
}

/* Counts named (not "other") nodes below the root. */
static size_t named_nodes(const ps_flamegraph_t *fg)
{
    size_t w = fg->diff ? 7 : 4, n = 0;
    for (uint32_t l = 1; l < fg->nlevels; l++)
        for (uint32_t i = 0; i < fg->levels[l].n; i += (uint32_t)w)
            if (strcmp(fg->names[fg->levels[l].values[i + w - 1]], "other") != 0)
                n++;
    return n;
}

static void test_max_nodes(void **state)
{
    pb_t *b = wide_profile();
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    ps_buf_t out = PS_BUF_INIT;
    size_t n;
    /* totals: main 100, a 50, b 30, x 30, y 20, c 10, d 5, e 5; 3 nodes: main, a, and b (b outranks x:
     * same total, shallower) */
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 3, &a, &fg, NULL), 0);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"a\",\"other\",\"b\"],"
                                            "\"levels\":[[0,100,0,0],[0,100,0,1],[0,50,0,2,0,30,30,4,0,20,20,3],"
                                            "[0,50,50,3]],\"total\":100,\"max_self\":50}");
    free(check_fg(&fg, &n));
    assert_int_equal(named_nodes(&fg), 3);
    /* 4: x as well, y goes to other */
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 4, &a, &fg, NULL), 0);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"a\",\"x\",\"other\",\"b\"],"
                                            "\"levels\":[[0,100,0,0],[0,100,0,1],[0,50,0,2,0,30,30,5,0,20,20,4],"
                                            "[0,30,30,3,0,20,20,4]],\"total\":100,\"max_self\":30}");
    free(check_fg(&fg, &n));
    assert_int_equal(named_nodes(&fg), 4);
    /* ties at the threshold broken by name: 6 = main a b x y c, then d vs e (both 5): d */
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 7, &a, &fg, NULL), 0);
    assert_int_equal(named_nodes(&fg), 7);
    ps_buf_reset(&out);
    ps_flamegraph_json(&fg, &out);
    assert_non_null(strstr(buf_str(&out), "\"d\""));
    assert_null(strstr(buf_str(&out), "\"e\""));
    free(check_fg(&fg, &n));
    /* 8 or more, or 0: everything */
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 8, &a, &fg, NULL), 0);
    assert_int_equal(named_nodes(&fg), 8);
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
    assert_int_equal(named_nodes(&fg), 8);
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 1, &a, &fg, NULL), 0);
    assert_string_equal(fg_json(&fg, &out), "{\"names\":[\"total\",\"main\",\"other\"],"
                                            "\"levels\":[[0,100,0,0],[0,100,0,1],[0,100,100,2]],"
                                            "\"total\":100,\"max_self\":100}");

    /* diff ranks by max(left, right): left 100/50/30/30/20/10/5/5, right main 65, d 60, a 2, ... so
     * with 3 nodes: main (100), d (60), a (50) */
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, 3, &a, &fg, NULL), 0);
    assert_string_equal(fg_json(&fg, &out),
                        "{\"names\":[\"total\",\"main\",\"a\",\"other\",\"d\"],"
                        "\"levels\":[[0,100,0,0,65,0,0],[0,100,0,0,65,0,1],"
                        "[0,50,0,0,2,0,2,0,5,5,0,60,60,4,0,45,45,0,3,3,3],[0,50,50,0,2,2,3]],"
                        "\"total\":165,\"max_self\":60,\"left_ticks\":100,\"right_ticks\":65}");
    free(check_fg(&fg, &n));
    assert_int_equal(named_nodes(&fg), 3);
    ps_arena_dispose(&a);
    ps_buf_dispose(&out);
    free(b);
}

/* Random small profiles: 12 functions (some nameless), locations with 0..3 lines, some with a
 * mapping, samples 0..12 deep, values in -5..20 (zero included) or 0..20. Checked: the JSON parses;
 * totals equal the value sums; for non-negative values the encoding is consistent, folded and top
 * add up, and max_nodes keeps exactly min(max_nodes, nodes) named nodes (the ranking keeps a
 * node's ancestors ranked ahead of it); the output is the same with the samples reversed. */
static void test_random_profiles(void **state)
{
    static const char *fnames[] = {"main", "a", "b", "c;d", "e\"f", "g", "h", "", "i", "j", "k", "l"};
    uint64_t rng = 42;
    ps_buf_t out = PS_BUF_INIT;
    for (int iter = 0; iter < 300; iter++) {
        pb_t *b = pb_new(2);
        bool neg = iter % 3 == 2;
        uint32_t m = pb_mapping(b, 0x1000, 0x9000, 0x100, "/lib/libx.so");
        uint32_t fn[12];
        for (int i = 0; i < 12; i++)
            fn[i] = pb_func(b, fnames[i], i == 7 && iter % 2 ? "sys7" : "", i % 2 ? "f.go" : "");
        uint32_t nlocs = 4 + (uint32_t)(rng_next(&rng) % 20), locs[32];
        for (uint32_t i = 0; i < nlocs; i++) {
            uint32_t nl = (uint32_t)(rng_next(&rng) % 4), lf[3];
            for (uint32_t k = 0; k < nl; k++)
                lf[k] = fn[rng_next(&rng) % 12];
            locs[i] = pb_loc(b, rng_next(&rng) % 2 ? m : 0, 0x1000 + rng_next(&rng) % 64, nl, lf);
        }
        uint32_t ns = 1 + (uint32_t)(rng_next(&rng) % 60);
        int64_t sum[2] = {0, 0}, stacked = 0;
        for (uint32_t i = 0; i < ns; i++) {
            uint32_t depth = (uint32_t)(rng_next(&rng) % 13), st[16];
            for (uint32_t d = 0; d < depth; d++)
                st[d] = locs[rng_next(&rng) % nlocs];
            int64_t v0 = (int64_t)(rng_next(&rng) % 26) - (neg ? 5 : 0), v1 = (int64_t)(rng_next(&rng) % 21);
            if (v0 < 0 && !neg)
                v0 = 0;
            pb_sample(b, depth, st, v0, v1);
            sum[0] += v0;
            sum[1] += v1;
            if (depth > 0)
                stacked += v0;
        }
        ps_arena_t a = PS_ARENA_INIT;
        ps_flamegraph_t fg;
        size_t nn;
        assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, NULL), 0);
        assert_int_equal(fg.total, sum[0]);
        json_t *j = json_loads(fg_json(&fg, &out), 0, NULL);
        assert_non_null(j);
        json_decref(j);
        size_t all = named_nodes(&fg);
        if (!neg) {
            free(check_fg(&fg, &nn));
            for (int64_t k = 1; k <= (int64_t)all + 1; k += 1 + (int64_t)(rng_next(&rng) % 3)) {
                assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, k, &a, &fg, NULL), 0);
                assert_int_equal(fg.total, sum[0]);
                assert_int_equal(named_nodes(&fg), (size_t)k < all ? (size_t)k : all);
                free(check_fg(&fg, &nn));
                assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, k, &a, &fg, NULL), 0);
                assert_int_equal(fg.left_ticks, sum[0]);
                assert_int_equal(fg.right_ticks, sum[1]);
                free(check_fg(&fg, &nn));
            }
        } else {
            assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, 5, &a, &fg, NULL), 0);
            assert_int_equal(fg.left_ticks, sum[0]);
            assert_int_equal(fg.right_ticks, sum[1]);
        }
        ps_buf_reset(&out);
        ps_render_folded(&b->p, 0, &out);
        size_t nlines;
        int64_t fsum = folded_sum(buf_str(&out), &nlines);
        assert_int_equal(fsum, stacked); /* also with negative values: lines are signed sums */
        ps_buf_reset(&out);
        ps_render_top(&b->p, 0, 0, &out);
        j = json_loadb((const char *)out.data, out.len, 0, NULL);
        assert_non_null(j);
        int64_t flat = 0;
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(j, "rows"), i, r)
        flat += json_integer_value(json_object_get(r, "flat"));
        assert_int_equal(flat, stacked);
        json_decref(j);

        /* the output does not depend on the order of the samples */
        char *before[4];
        int64_t k = 1 + (int64_t)(rng_next(&rng) % 8);
        for (int pass = 0; pass < 2; pass++) {
            char *got[4];
            ps_buf_reset(&out);
            assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, k, &a, &fg, NULL), 0);
            got[0] = strdup(fg_json(&fg, &out));
            assert_int_equal(ps_flamegraph_build(&b->p, 0, 1, k, &a, &fg, NULL), 0);
            got[1] = strdup(fg_json(&fg, &out));
            ps_buf_reset(&out);
            ps_render_folded(&b->p, 0, &out);
            got[2] = strdup(buf_str(&out));
            ps_buf_reset(&out);
            ps_render_top(&b->p, 0, 0, &out);
            got[3] = strdup(buf_str(&out));
            for (int q = 0; q < 4; q++) {
                if (pass == 0) {
                    before[q] = got[q];
                } else {
                    assert_string_equal(before[q], got[q]);
                    free(before[q]);
                    free(got[q]);
                }
            }
            for (uint32_t lo = 0, hi = b->p.nsamples; lo + 1 < hi; lo++, hi--) {
                ps_sample_t tmp = b->samples[lo];
                b->samples[lo] = b->samples[hi - 1];
                b->samples[hi - 1] = tmp;
            }
        }
        ps_arena_dispose(&a);
        free(b);
    }
    ps_buf_dispose(&out);
}

/* ---- the real Go CPU profile ----------------------------------------------------------------- */



static uint32_t value_index(const ps_profile_t *p, const char *type)
{
    for (uint32_t i = 0; i < p->ntypes; i++) {
        ps_str_t s = ps_profile_str(p, p->sample_types[i].type);
        if (s.len == strlen(type) && memcmp(s.ptr, type, s.len) == 0)
            return i;
    }
    fail_msg("no sample type %s", type);
    return 0;
}

static json_t *find_row(json_t *rows, const char *fn)
{
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        if (strcmp(json_string_value(json_object_get(r, "function")), fn) == 0)
            return r;
    }
    return NULL;
}

static void test_go_cpu(void **state)
{
    size_t n;
    uint8_t *raw = ps_test_read_fixture("go/cpu-01.pb.gz", &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    assert_int_equal(ps_pprof_decode(raw, n, &lim, &a, &p, &err), 0);
    uint32_t vi = value_index(&p, "cpu");
    int64_t sum = 0;
    for (uint32_t i = 0; i < p.nsamples; i++)
        sum += p.samples[i].values[vi];
    assert_int_equal(sum, 2980000000);

    /* flame graph */
    ps_arena_t fa = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    double t0 = now_ms();
    assert_int_equal(ps_flamegraph_build(&p, vi, 0, 0, &fa, &fg, &err), 0);
    double t1 = now_ms();
    ps_buf_t js = PS_BUF_INIT;
    ps_flamegraph_json(&fg, &js);
    double t2 = now_ms();
    assert_int_equal(fg.total, 2980000000);
    size_t nn;
    dnode_t *d = check_fg(&fg, &nn);
    json_error_t jerr;
    json_t *j = json_loadb((const char *)js.data, js.len, 0, &jerr);
    if (j == NULL)
        fail_msg("flamegraph JSON: %s at %d", jerr.text, jerr.position);
    assert_int_equal(json_array_size(json_object_get(j, "names")), fg.nnames);
    assert_int_equal(json_array_size(json_object_get(j, "levels")), fg.nlevels);
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2980000000);
    json_decref(j);

    /* folded */
    ps_buf_t folded = PS_BUF_INIT;
    double t3 = now_ms();
    ps_render_folded(&p, vi, &folded);
    double t4 = now_ms();
    size_t nlines;
    assert_int_equal(folded_sum(buf_str(&folded), &nlines), 2980000000);
    /* the flame graph and the folded stacks describe the same tree */
    char *rebuilt = fg_to_folded(&fg, d, nn);
    assert_string_equal(rebuilt, buf_str(&folded));
    free(rebuilt);
    free(d);
    /* identical stacks are aggregated: fewer lines than samples */
    assert_true(nlines < p.nsamples);

    /* top */
    ps_buf_t top = PS_BUF_INIT;
    double t5 = now_ms();
    ps_render_top(&p, vi, 0, &top);
    double t6 = now_ms();
    j = json_loadb((const char *)top.data, top.len, 0, &jerr);
    if (j == NULL)
        fail_msg("top JSON: %s at %d", jerr.text, jerr.position);
    assert_int_equal(json_integer_value(json_object_get(j, "total")), 2980000000);
    json_t *rows = json_object_get(j, "rows");
    int64_t flat = 0;
    size_t i;
    json_t *r;
    json_array_foreach(rows, i, r)
    {
        flat += json_integer_value(json_object_get(r, "flat"));
        assert_true(json_integer_value(json_object_get(r, "cum")) <= 2980000000);
    }
    assert_int_equal(flat, 2980000000);
    r = json_array_get(rows, 0);
    assert_string_equal(json_string_value(json_object_get(r, "function")), "compress/flate.(*compressor).findMatch");
    assert_string_equal(json_string_value(json_object_get(r, "file")), "compress/flate/deflate.go");
    assert_int_equal(json_integer_value(json_object_get(r, "flat")), 730000000);
    assert_int_equal(json_integer_value(json_object_get(r, "cum")), 890000000);
    assert_true(json_real_value(json_object_get(r, "flat%")) == 24.5);
    assert_true(json_real_value(json_object_get(r, "cum%")) == 29.87);
    r = find_row(rows, "sort.partition");
    assert_non_null(r);
    assert_int_equal(json_integer_value(json_object_get(r, "flat")), 360000000);
    assert_int_equal(json_integer_value(json_object_get(r, "cum")), 550000000);
    /* the rest of `go tool pprof -top` (cpu-01.top.txt) */
    static const struct {
        const char *fn;
        int64_t flat, cum;
    } want[] = {
        {"runtime.asyncPreempt", 240000000, 240000000},  {"runtime.memclrNoHeapPointers", 180000000, 180000000},
        {"crypto/sha256.block", 160000000, 160000000},   {"compress/flate.matchLen", 120000000, 120000000},
        {"runtime.madvise", 120000000, 120000000},       {"sort.insertionSort", 100000000, 140000000},
        {"main.kernelMatmul", 90000000, 90000000},       {"runtime.mapassign_faststr", 80000000, 100000000},
    };
    for (size_t k = 0; k < sizeof(want) / sizeof(want[0]); k++) {
        r = find_row(rows, want[k].fn);
        assert_non_null(r);
        assert_int_equal(json_integer_value(json_object_get(r, "flat")), want[k].flat);
        assert_int_equal(json_integer_value(json_object_get(r, "cum")), want[k].cum);
    }
    json_decref(j);

    /* truncated: at most 50 named nodes, same total, still consistent */
    assert_int_equal(ps_flamegraph_build(&p, vi, 0, 50, &fa, &fg, &err), 0);
    assert_int_equal(fg.total, 2980000000);
    assert_true(named_nodes(&fg) <= 50);
    free(check_fg(&fg, &nn));

    /* a diff of the two value columns (samples vs cpu ns) */
    double t7 = now_ms();
    assert_int_equal(ps_flamegraph_build(&p, 0, 1, 0, &fa, &fg, &err), 0);
    double t8 = now_ms();
    assert_int_equal(fg.left_ticks, 298);
    assert_int_equal(fg.right_ticks, 2980000000);
    assert_int_equal(fg.total, 2980000298);
    free(check_fg(&fg, &nn));
    assert_int_equal(ps_flamegraph_build(&p, 0, 1, 40, &fa, &fg, &err), 0);
    assert_true(named_nodes(&fg) <= 40);
    free(check_fg(&fg, &nn));

    printf("render: go/cpu-01 (%u samples): flamegraph %.3f ms + json %.3f ms (%zu bytes), diff %.3f ms, "
           "folded %.3f ms (%zu lines), top %.3f ms\n",
           p.nsamples, t1 - t0, t2 - t1, js.len, t8 - t7, t4 - t3, nlines, t6 - t5);
    ps_buf_dispose(&js);
    ps_buf_dispose(&folded);
    ps_buf_dispose(&top);
    ps_arena_dispose(&fa);
    ps_arena_dispose(&a);
    free(raw);
}

/* Every Go and Node fixture, every sample type: flame graph (plain, truncated, diff of the first two
 * types) consistent and totalling the values; folded lines and top flat adding up to the values of
 * the samples that have a stack (goroutine-01 and threadcreate-01 hold stackless samples, which pprof
 * counts in its total too but shows no trace for; the flame graph has them as the root's self). */
static void check_fixture(const char *rel)
{
    size_t n;
    uint8_t *raw = ps_test_read_fixture(rel, &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_arena_t a = PS_ARENA_INIT, fa = PS_ARENA_INIT;
    ps_profile_t p;
    ps_err_t err;
    if (ps_pprof_decode(raw, n, &lim, &a, &p, &err) != 0)
        fail_msg("%s: %s", rel, err.msg);
    ps_buf_t out = PS_BUF_INIT;
    for (uint32_t vi = 0; vi < p.ntypes; vi++) {
        int64_t sum = 0, stacked = 0;
        for (uint32_t i = 0; i < p.nsamples; i++) {
            assert_true(p.samples[i].values[vi] >= 0);
            sum += p.samples[i].values[vi];
            if (p.samples[i].nlocs > 0)
                stacked += p.samples[i].values[vi];
        }
        ps_flamegraph_t fg;
        size_t nn;
        assert_int_equal(ps_flamegraph_build(&p, vi, 0, 0, &fa, &fg, &err), 0);
        assert_int_equal(fg.total, sum);
        free(check_fg(&fg, &nn));
        assert_int_equal(ps_flamegraph_build(&p, vi, 0, 20, &fa, &fg, &err), 0);
        assert_int_equal(fg.total, sum);
        assert_true(named_nodes(&fg) <= 20);
        free(check_fg(&fg, &nn));
        ps_buf_reset(&out);
        ps_render_folded(&p, vi, &out);
        size_t nlines;
        assert_int_equal(folded_sum(buf_str(&out), &nlines), stacked);
        ps_buf_reset(&out);
        ps_render_top(&p, vi, 0, &out);
        json_t *j = json_loadb((const char *)out.data, out.len, 0, NULL);
        assert_non_null(j);
        assert_int_equal(json_integer_value(json_object_get(j, "total")), sum);
        int64_t flat = 0;
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(j, "rows"), i, r)
        flat += json_integer_value(json_object_get(r, "flat"));
        assert_int_equal(flat, stacked);
        if (strcmp(rel, "go/threadcreate-01.pb.gz") == 0) /* pprof: "of 9 total", one trace of 1 */
            assert_true(sum == 9 && stacked == 1);
        json_decref(j);
    }
    if (p.ntypes >= 2) {
        ps_flamegraph_t fg;
        size_t nn;
        assert_int_equal(ps_flamegraph_build(&p, 0, 1, 0, &fa, &fg, &err), 0);
        free(check_fg(&fg, &nn));
        assert_int_equal(ps_flamegraph_build(&p, 0, 1, 15, &fa, &fg, &err), 0);
        assert_true(named_nodes(&fg) <= 15);
        free(check_fg(&fg, &nn));
    }
    ps_buf_dispose(&out);
    ps_arena_dispose(&fa);
    ps_arena_dispose(&a);
    free(raw);
}

static void test_all_fixtures(void **state)
{
    static const char *dirs[] = {"go", "node"};
    size_t count = 0;
    for (size_t d = 0; d < 2; d++) {
        char path[1024];
        snprintf(path, sizeof(path), "%s/pprof/%s", ps_test_testdata(), dirs[d]);
        DIR *dir = opendir(path);
        if (dir == NULL)
            fail_msg("cannot open %s", path);
        struct dirent *e;
        while ((e = readdir(dir)) != NULL) {
            size_t len = strlen(e->d_name);
            if (len < 6 || strcmp(e->d_name + len - 6, ".pb.gz") != 0)
                continue;
            char rel[512];
            snprintf(rel, sizeof(rel), "%s/%s", dirs[d], e->d_name);
            check_fixture(rel);
            count++;
        }
        closedir(dir);
    }
    assert_true(count >= 15);
}

/* ---- a synthetic big profile ----------------------------------------------------------------- */

/*
 * 20,000 functions, 30,000 locations (one in five with an inlined second line), each location with
 * 4 callees. A stack walks from one of 16 entry points, 8 to 64 frames deep, picking callee c with
 * probability pct[c] %.
 *  - ntemplates > 0 (typical): that many stacks are drawn first; each sample takes one of them with
 *    a Zipf-like preference (template i with weight 1/(i+1)) and, three times in ten, replaces its
 *    last 1 to 3 frames by a fresh walk, so hot stacks repeat and leaves vary, as in a merged
 *    profile of many instances of a program;
 *  - ntemplates == 0 (worst case): every sample walks afresh; with an even pick almost every stack
 *    is distinct below a few levels, millions of call tree nodes.
 * Two values per sample, 1..100.
 */
static void synth_profile(ps_arena_t *a, ps_profile_t *p, uint32_t nsamples, const unsigned pct[4], uint32_t ntemplates)
{
    enum { NF = 20000, NL = 30000 };
    uint64_t rng = 0x1234567887654321ULL;
    memset(p, 0, sizeof(*p));
    p->nstrings = NF + 3;
    p->strings = ps_arena_calloc(a, p->nstrings, sizeof(ps_str_t));
    p->strings[0] = (ps_str_t){"", 0};
    p->strings[1] = (ps_str_t){"samples", 7};
    p->strings[2] = (ps_str_t){"file.go", 7};
    for (uint32_t i = 0; i < NF; i++) {
        char b[64];
        int n = snprintf(b, sizeof(b), "pkg%u.(*T%u).Method%u", i % 97, i % 1013, i);
        p->strings[3 + i] = (ps_str_t){ps_arena_strndup(a, b, (size_t)n), (uint32_t)n};
    }
    p->ntypes = 2;
    p->sample_types = ps_arena_calloc(a, 2, sizeof(ps_value_type_t));
    p->nfunctions = NF;
    p->functions = ps_arena_calloc(a, NF, sizeof(ps_function_t));
    for (uint32_t i = 0; i < NF; i++)
        p->functions[i] = (ps_function_t){3 + i, 0, 2, 1};
    p->nlocations = NL;
    p->locations = ps_arena_calloc(a, NL, sizeof(ps_location_t));
    uint32_t *callees = ps_arena_alloc(a, NL * 4 * sizeof(uint32_t));
    for (uint32_t i = 0; i < NL; i++) {
        ps_location_t *l = &p->locations[i];
        l->address = 0x400000 + 16 * (uint64_t)i;
        l->nlines = rng_next(&rng) % 5 == 0 ? 2 : 1;
        l->lines = ps_arena_calloc(a, l->nlines, sizeof(ps_line_t));
        for (uint32_t k = 0; k < l->nlines; k++)
            l->lines[k].function = 1 + (uint32_t)(rng_next(&rng) % NF);
        for (uint32_t k = 0; k < 4; k++)
            callees[4 * i + k] = (uint32_t)(rng_next(&rng) % NL);
    }
    /* stacks root first in tmpl[i * 64 ...], depth in tdepth[i] */
    uint32_t nt = ntemplates ? ntemplates : 1;
    uint32_t *tmpl = malloc((size_t)nt * 64 * sizeof(uint32_t)), *tdepth = malloc(nt * sizeof(uint32_t));
    double *cdf = malloc(nt * sizeof(double)), wsum = 0;
    for (uint32_t i = 0; i < nt; i++) {
        uint32_t depth = 8 + (uint32_t)(rng_next(&rng) % 57), loc = (uint32_t)(rng_next(&rng) % 16);
        for (uint32_t d = 0; d < depth; d++) {
            tmpl[i * 64 + d] = loc;
            uint32_t r = (uint32_t)(rng_next(&rng) % 100), c = 0;
            while (c < 3 && r >= pct[c])
                r -= pct[c++];
            loc = callees[4 * loc + c];
        }
        tdepth[i] = depth;
        wsum += 1.0 / (i + 1);
        cdf[i] = wsum;
    }
    p->nsamples = nsamples;
    p->samples = ps_arena_calloc(a, nsamples, sizeof(ps_sample_t));
    uint32_t stack[64];
    for (uint32_t s = 0; s < nsamples; s++) {
        uint32_t depth, keep;
        if (ntemplates) {
            double x = (double)(rng_next(&rng) >> 11) / 9007199254740992.0 * wsum;
            uint32_t lo = 0, hi = nt - 1;
            while (lo < hi) {
                uint32_t mid = (lo + hi) / 2;
                if (cdf[mid] < x)
                    lo = mid + 1;
                else
                    hi = mid;
            }
            depth = tdepth[lo];
            memcpy(stack, tmpl + (size_t)lo * 64, depth * sizeof(uint32_t));
            keep = rng_next(&rng) % 10 < 3 ? depth - 1 - (uint32_t)(rng_next(&rng) % 3) : depth;
        } else {
            depth = 8 + (uint32_t)(rng_next(&rng) % 57);
            stack[0] = (uint32_t)(rng_next(&rng) % 16);
            keep = 1;
        }
        for (uint32_t d = keep; d < depth; d++) {
            uint32_t r = (uint32_t)(rng_next(&rng) % 100), c = 0;
            while (c < 3 && r >= pct[c])
                r -= pct[c++];
            stack[d] = callees[4 * stack[d - 1] + c];
        }
        ps_sample_t *sm = &p->samples[s];
        sm->nlocs = depth;
        sm->locs = ps_arena_alloc(a, depth * sizeof(uint32_t));
        for (uint32_t d = 0; d < depth; d++)
            sm->locs[d] = stack[depth - 1 - d] + 1; /* leaf first, 1-based */
        sm->values = ps_arena_alloc(a, 2 * sizeof(int64_t));
        sm->values[0] = 1 + (int64_t)(rng_next(&rng) % 100);
        sm->values[1] = 1 + (int64_t)(rng_next(&rng) % 100);
    }
    free(tmpl);
    free(tdepth);
    free(cdf);
}

static void synthetic_run(const char *what, const unsigned pct[4], uint32_t ntemplates)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t p;
    synth_profile(&a, &p, 100000, pct, ntemplates);
    int64_t sum = 0;
    size_t frames = 0;
    for (uint32_t i = 0; i < p.nsamples; i++) {
        sum += p.samples[i].values[0];
        for (uint32_t k = 0; k < p.samples[i].nlocs; k++)
            frames += p.locations[p.samples[i].locs[k] - 1].nlines;
    }

    ps_arena_t fa = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    ps_buf_t out = PS_BUF_INIT;
    double t0 = now_ms();
    assert_int_equal(ps_flamegraph_build(&p, 0, 0, 0, &fa, &fg, NULL), 0);
    double t1 = now_ms();
    ps_flamegraph_json(&fg, &out);
    double t2 = now_ms();
    size_t nodes = 0;
    for (uint32_t l = 0; l < fg.nlevels; l++)
        nodes += fg.levels[l].n / 4;
    size_t json_len = out.len;
    assert_int_equal(fg.total, sum);
    size_t nn;
    free(check_fg(&fg, &nn));

    ps_arena_reset(&fa);
    double t3 = now_ms();
    assert_int_equal(ps_flamegraph_build(&p, 0, 0, 8192, &fa, &fg, NULL), 0);
    double t4 = now_ms();
    assert_true(named_nodes(&fg) <= 8192);
    free(check_fg(&fg, &nn));
    ps_arena_reset(&fa);
    double t5 = now_ms();
    assert_int_equal(ps_flamegraph_build(&p, 0, 1, 8192, &fa, &fg, NULL), 0);
    double t6 = now_ms();
    free(check_fg(&fg, &nn));

    ps_buf_reset(&out);
    double t7 = now_ms();
    ps_render_folded(&p, 0, &out);
    double t8 = now_ms();
    size_t nlines;
    assert_int_equal(folded_sum(buf_str(&out), &nlines), sum);
    size_t folded_len = out.len;

    ps_buf_reset(&out);
    double t9 = now_ms();
    ps_render_top(&p, 0, 100, &out);
    double t10 = now_ms();
    json_t *j = json_loadb((const char *)out.data, out.len, 0, NULL);
    assert_non_null(j);
    assert_int_equal(json_array_size(json_object_get(j, "rows")), 100);
    json_decref(j);

    printf("render: synthetic %s: %u samples, %zu frames, %zu tree nodes (CPU ms): flamegraph %.1f + json %.1f "
           "(%zu bytes); max_nodes=8192 %.1f; diff max_nodes=8192 %.1f; folded %.1f (%zu lines, %zu bytes); "
           "top %.1f\n",
           what, p.nsamples, frames, nodes, t1 - t0, t2 - t1, json_len, t4 - t3, t6 - t5, t8 - t7, nlines, folded_len,
           t10 - t9);
    ps_buf_dispose(&out);
    ps_arena_dispose(&fa);
    ps_arena_dispose(&a);
}

static void test_synthetic_100k(void **state)
{
    static const unsigned typical[4] = {90, 7, 2, 1};
    synthetic_run("typical", typical, 5000);
    /* almost every stack distinct (millions of nodes, seconds): only with PS_RENDER_WORST=1 */
    const char *w = getenv("PS_RENDER_WORST");
    if (w != NULL && strcmp(w, "1") == 0) {
        static const unsigned worst[4] = {60, 20, 10, 10};
        synthetic_run("worst case", worst, 0);
    }
}

/* A query budget that says stop (its client gone, or its deadline passed) stops the builders:
 * the flame graph with the budget's error, folded and top with nothing written. */
static void test_budget_stops(void **state)
{
    pb_t *b = pb_new(1);
    pb_stack(b, "main;a;b", 1, 0);
    pb_stack(b, "main;a;c", 1, 0);
    pb_stack(b, "main;d", 1, 0);
    ps_sample_t *many = calloc(3000, sizeof(ps_sample_t)); /* past the 1,024 samples between checks */
    assert_non_null(many);
    for (int i = 0; i < 3000; i++)
        many[i] = b->samples[i % 3];
    b->p.samples = many;
    b->p.nsamples = 3000;
    ps_arena_t a = PS_ARENA_INIT;
    ps_flamegraph_t fg;
    ps_err_t err;
    ps_buf_t out = PS_BUF_INIT;
    atomic_int cancel = 0;
    ps_budget_t bg;
    ps_budget_init(&bg, 0, 0, 0, &cancel);
    ps_budget_set(&bg);
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, &err), 0); /* a budget that lets it run */
    assert_int_equal(fg.total, 3000);
    cancel = 1;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, &err), PS_ECANCELED);
    assert_string_equal(err.msg, "query canceled: the client went away");
    ps_render_folded(&b->p, 0, &out);
    ps_render_top(&b->p, 0, 0, &out);
    assert_int_equal(out.len, 0);
    cancel = 0;
    bg.deadline = 1; /* long past */
    bg.timeout = 1000000000;
    assert_int_equal(ps_flamegraph_build(&b->p, 0, 0, 0, &a, &fg, &err), PS_ETIMEOUT);
    assert_string_equal(err.msg, "query timed out in query execution (the limit is 1s, the query timeout)");
    ps_budget_set(NULL);
    ps_render_top(&b->p, 0, 1, &out); /* no budget: as always */
    assert_true(out.len > 0);
    ps_buf_dispose(&out);
    ps_arena_dispose(&a);
    free(many);
    free(b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_nested_flamegraph),
        cmocka_unit_test(test_nested_folded_top),
        cmocka_unit_test(test_inlined),
        cmocka_unit_test(test_recursion),
        cmocka_unit_test(test_diff),
        cmocka_unit_test(test_negative_top_folded),
        cmocka_unit_test(test_diff_top),
        cmocka_unit_test(test_address_frames),
        cmocka_unit_test(test_escaping),
        cmocka_unit_test(test_max_nodes),
        cmocka_unit_test(test_random_profiles),
        cmocka_unit_test(test_go_cpu),
        cmocka_unit_test(test_all_fixtures),
        cmocka_unit_test(test_synthetic_100k),
        cmocka_unit_test(test_budget_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
