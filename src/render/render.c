/*
 * render.c - flame graphs (Pyroscope FlameGraph / FlameGraphDiff, docs/protocols.md), folded stacks and
 * top tables from a ps_profile_t. The output shapes are documented in render.h.
 *
 * How it works
 *
 *  1. Frames. Every location is expanded once (not once per sample) into its frame names, outermost
 *     first: lines[nlines-1] .. lines[0]. A line's name is its function's name, else the function's
 *     system_name, else the location address "0x4a5f3c" (also when the line has no function). A
 *     location without lines is "0x<address>" or, when its mapping has a file name,
 *     "<basename>+0x<address - memory_start + file_offset>" (lowercase hex, no padding). Names are
 *     interned with a ps_hmap_t into dense uint32 ids, and ranked once by byte order (memcmp, a
 *     prefix before its extensions) so that "ordered by name" is an integer compare afterwards.
 *
 *  2. Call tree. A sample walks its locations from the last (root) to the first (leaf); each frame
 *     is a child lookup keyed by (parent node, name id) in one open-addressing table (8 samples are
 *     walked interleaved, with prefetches, so that cache misses overlap).
 *     Nodes live in one growable array, so there is no allocation per sample or per frame. A sample
 *     adds its value to the self of the last node of its path; totals (self + children totals) are
 *     summed afterwards in one backward pass over the nodes, as a parent is always created before
 *     its children (parent index < child index). A diff tree carries two values per node
 *     (values[0] = left, values[1] = right). Samples whose value is 0 (diff: both values) are
 *     skipped. Cost: O(samples x frames) probes + O(nodes). Sums wrap around on int64 overflow
 *     instead of being undefined.
 *
 *  3. Children are laid out CSR-style (counting sort by parent, in the memory of the hash table,
 *     which is no longer needed) and each sibling group is sorted by name rank. Memory is kept low on
 *     purpose (8-byte nodes, values in a separate array): a fresh page costs a fault, and a tree of
 *     a big merged profile can have millions of nodes.
 *
 *  4. max_nodes (flame graphs). When the tree has more than max_nodes nodes (root excluded), nodes
 *     are ranked by total (diff: max(left total, right total)) descending, ties by depth (shallower
 *     first, so that an ancestor outranks an equal-valued descendant), then by name, then by tree
 *     position (pre-order with name-ordered children); the first max_nodes are selected with a
 *     min-heap of max_nodes values for the threshold and a sort of the nodes tied at it only (depth
 *     and pre-order are computed only then). For non-negative values a node's ancestors always rank
 *     ahead of it, so exactly max_nodes named nodes are emitted. A selected node
 *     whose parent is not kept is dropped as well (that only happens with negative values), so at
 *     most max_nodes named nodes are emitted. Unkept children of a kept node are merged into one
 *     child "other" placed after its kept siblings (as Pyroscope does), with total = self = the sum
 *     of the dropped subtrees' totals (per side for a diff); it is omitted when that sum is 0 (diff:
 *     on both sides). "other" nodes are not counted against max_nodes.
 *
 *  5. Emission: an iterative pre-order walk with name-ordered children visits each level's nodes
 *     left to right; a first pass counts the nodes per level, a second fills arrays from the
 *     caller's arena, delta-encoding x offsets per level (per side for a diff). Output name indexes
 *     are assigned in emission order, "total" first; names are de-duplicated by string, so a
 *     function literally called "other" or "total" shares that index. A function called "other"
 *     ranks after every other name (siblings and ties): so a flame graph read back from its JSON
 *     (ad hoc uploads), where the merges became frames named "other", is laid out the same.
 *
 * Folded stacks use the same tree (children order is irrelevant there): every node with a nonzero
 * self is a line. Frame names have ';', '\n' and '\r' replaced by '_' (the format has no escape);
 * stacks that become identical through that replacement are summed. Lines are sorted by the bytes
 * of the stack part (like LC_ALL=C sort). Samples without any frame are not printed.
 *
 * Top tables need no tree: rows are keyed by (function name, file name), flat is added to the
 * deepest frame of each sample (the innermost line of the leaf location), cum to every distinct row
 * of the sample (a per-row "last sample" stamp counts recursion once). total is the sum of the
 * absolute sample values, as pprof computes it; for a diff (ps_render_top_diff) it is the base's
 * total, as pprof -diff_base computes it (the sum of |value| of the base samples only). Samples
 * without frames count in total but give no row (pprof does the same). Rows only exist for
 * functions that occur in a sample with a nonzero value and whose flat or cum is nonzero (values
 * that cancel out give no row, as in pprof). Rows sort by |flat|, then |cum| (both
 * descending), then function and file name (byte order): in a diff the largest drop ranks with the
 * largest rise.
 */
#include "render.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/budget.h"
#include "core/hash.h"
#include "core/json.h"
#include "core/sat.h"

#define NONE UINT32_MAX

/* Under a query budget (core/budget.h) the loops over samples and nodes ask it every BUDGET_EVERY
 * steps (one clock read) and stop when it says so: ps_flamegraph_build with its error, the void
 * renderers with nothing written (their caller asks the budget again: its answer stays). */
#define BUDGET_EVERY 1024

static int budget_check(ps_err_t *err)
{
    ps_err_t scratch;
    return ps_budget_check_now(err != NULL ? err : &scratch);
}
#define ADDR (UINT32_MAX - 1) /* function cache: the function has no name, use the address */

/* int64 arithmetic that wraps instead of being undefined (values come from clients) */
static inline int64_t add64(int64_t a, int64_t b) { return ps_sat_add(a, b); }
static inline int64_t sub64(int64_t a, int64_t b) { return ps_sat_sub(a, b); }
static inline int64_t max64(int64_t a, int64_t b) { return a > b ? a : b; }

#define GROW(ptr, cap, need)                                                                               \
    do {                                                                                                   \
        if ((size_t)(need) > (cap)) {                                                                      \
            size_t nc_ = (cap) ? (cap) : 16;                                                               \
            while (nc_ < (size_t)(need))                                                                   \
                nc_ *= 2;                                                                                  \
            (ptr) = ps_xrealloc((ptr), nc_ * sizeof(*(ptr)));                                              \
            (cap) = nc_;                                                                                   \
        }                                                                                                  \
    } while (0)

static int str_cmp(ps_str_t a, ps_str_t b)
{
    size_t n = a.len < b.len ? a.len : b.len;
    int c = n ? memcmp(a.ptr, b.ptr, n) : 0;
    if (c != 0)
        return c;
    return (a.len > b.len) - (a.len < b.len);
}

/* ---- interned names -------------------------------------------------------------------------- */

typedef struct names {
    ps_hmap_t map;   /* bytes -> id */
    ps_arena_t text; /* NUL-terminated copies, v[id].ptr */
    ps_str_t *v;
    size_t n, cap;
    uint32_t *rank;  /* id -> position in byte order, after names_rank() */
} names_t;

static void names_init(names_t *nm)
{
    memset(nm, 0, sizeof(*nm));
    ps_hmap_init(&nm->map);
}

static void names_dispose(names_t *nm)
{
    ps_hmap_dispose(&nm->map);
    ps_arena_dispose(&nm->text);
    free(nm->v);
    free(nm->rank);
}

static uint32_t names_intern(names_t *nm, const char *s, size_t len)
{
    uint64_t id;
    if (len == 0)
        s = ""; /* never hand a NULL pointer to memcmp/memcpy */
    if (ps_hmap_get(&nm->map, s, len, &id))
        return (uint32_t)id;
    GROW(nm->v, nm->cap, nm->n + 1);
    char *c = ps_arena_strndup(&nm->text, s, len);
    nm->v[nm->n].ptr = c;
    nm->v[nm->n].len = (uint32_t)len;
    ps_hmap_put(&nm->map, c, len, nm->n);
    return (uint32_t)nm->n++;
}

static uint32_t names_intern_str(names_t *nm, ps_str_t s) { return names_intern(nm, s.ptr, s.len); }

typedef struct rank_ent {
    ps_str_t s;
    uint32_t id;
} rank_ent_t;

static bool is_other(ps_str_t s)
{
    return s.len == 5 && memcmp(s.ptr, "other", 5) == 0;
}

/* byte order, but "other" last: the merge of dropped children comes after its kept siblings, so a
 * flame graph read back (an uploaded flamebearer JSON, its merges now frames named "other") is
 * laid out as it was */
static int cmp_rank_ent(const void *a, const void *b)
{
    ps_str_t x = ((const rank_ent_t *)a)->s, y = ((const rank_ent_t *)b)->s;
    if (is_other(x) != is_other(y))
        return is_other(x) ? 1 : -1;
    return str_cmp(x, y);
}

static void names_rank(names_t *nm)
{
    rank_ent_t *e = ps_xmalloc(nm->n * sizeof(*e));
    for (size_t i = 0; i < nm->n; i++) {
        e[i].s = nm->v[i];
        e[i].id = (uint32_t)i;
    }
    qsort(e, nm->n, sizeof(*e), cmp_rank_ent);
    nm->rank = ps_xmalloc((nm->n ? nm->n : 1) * sizeof(uint32_t));
    for (size_t i = 0; i < nm->n; i++)
        nm->rank[e[i].id] = (uint32_t)i;
    free(e);
}

/* ---- frames of every location ---------------------------------------------------------------- */

typedef struct frames {
    names_t names;
    uint32_t empty;  /* id of "" */
    size_t *off;     /* location l (1-based) has frames [off[l-1], off[l]) */
    uint32_t *ids;   /* name ids, outermost (root side) first */
    uint32_t *files; /* file name ids (function filename, "" if none) */
    int64_t *starts; /* the function's start line (0 if none) */
} frames_t;

static uint32_t addr_name(names_t *nm, uint64_t addr)
{
    char b[24];
    size_t n = ps_profile_addr_name(addr, b, sizeof(b));
    return names_intern(nm, b, n);
}

/* The name of a location without lines (core/profile.h). */
static uint32_t bare_loc_name(names_t *nm, const ps_profile_t *p, const ps_location_t *loc)
{
    char stackbuf[256];
    size_t n = ps_profile_bare_name(p, loc, stackbuf, sizeof(stackbuf));
    if (n < sizeof(stackbuf))
        return names_intern(nm, stackbuf, n);
    char *b = ps_xmalloc(n + 1);
    ps_profile_bare_name(p, loc, b, n + 1);
    uint32_t id = names_intern(nm, b, n);
    free(b);
    return id;
}

static void frames_build(frames_t *f, const ps_profile_t *p)
{
    names_init(&f->names);
    f->empty = names_intern(&f->names, "", 0);
    size_t nfr = 0;
    for (uint32_t i = 0; i < p->nlocations; i++)
        nfr += p->locations[i].nlines ? p->locations[i].nlines : 1;
    f->off = ps_xmalloc(((size_t)p->nlocations + 1) * sizeof(size_t));
    f->ids = ps_xmalloc((nfr ? nfr : 1) * sizeof(uint32_t));
    f->files = ps_xmalloc((nfr ? nfr : 1) * sizeof(uint32_t));
    f->starts = ps_xmalloc((nfr ? nfr : 1) * sizeof(int64_t));
    uint32_t *fname = ps_xmalloc(((size_t)p->nfunctions + 1) * sizeof(uint32_t));
    uint32_t *ffile = ps_xmalloc(((size_t)p->nfunctions + 1) * sizeof(uint32_t));
    for (size_t i = 0; i <= p->nfunctions; i++)
        fname[i] = NONE;

    size_t k = 0;
    f->off[0] = 0;
    for (uint32_t i = 0; i < p->nlocations; i++) {
        const ps_location_t *loc = &p->locations[i];
        if (loc->nlines == 0) {
            f->ids[k] = bare_loc_name(&f->names, p, loc);
            f->starts[k] = 0;
            f->files[k++] = f->empty;
        } else {
            uint32_t addr_id = NONE;
            for (uint32_t j = loc->nlines; j-- > 0;) {
                uint32_t fn = loc->lines[j].function, id = ADDR, file = f->empty;
                int64_t start = 0;
                if (fn >= 1 && fn <= p->nfunctions) {
                    start = p->functions[fn - 1].start_line;
                    if (start <= 0) /* unknown: the line of this frame (a row takes its lowest) */
                        start = loc->lines[j].line > 0 ? loc->lines[j].line : 0;
                    if (fname[fn] == NONE) {
                        const ps_function_t *func = &p->functions[fn - 1];
                        ps_str_t s = ps_profile_str(p, func->name);
                        if (s.len == 0)
                            s = ps_profile_str(p, func->system_name);
                        fname[fn] = s.len ? names_intern_str(&f->names, s) : ADDR;
                        ffile[fn] = names_intern_str(&f->names, ps_profile_str(p, func->filename));
                    }
                    id = fname[fn];
                    file = ffile[fn];
                }
                if (id == ADDR) {
                    if (addr_id == NONE)
                        addr_id = addr_name(&f->names, loc->address);
                    id = addr_id;
                }
                f->ids[k] = id;
                f->starts[k] = start;
                f->files[k++] = file;
            }
        }
        f->off[i + 1] = k;
    }
    free(fname);
    free(ffile);
}

static void frames_dispose(frames_t *f)
{
    names_dispose(&f->names);
    free(f->off);
    free(f->ids);
    free(f->files);
    free(f->starts);
}

/* ---- call tree ------------------------------------------------------------------------------- */

typedef struct tnode {
    uint32_t parent, name;
} tnode_t;

typedef struct hent {
    uint32_t parent, name, node; /* node 0 = empty slot (the root is nobody's child) */
} hent_t;

/* A bound on memory (about 50 bytes a node): beyond it ps_flamegraph_build fails with PS_ETOOBIG. */
#define TREE_MAX_NODES (1u << 25)

/*
 * Nodes are 8 bytes; their values live in v, 2 * w per node: self[0..w) then total[0..w), w = 1, or 2
 * for a diff. Memory matters more than it seems: every fresh page costs a fault, and a tree of a
 * merged profile can have millions of nodes.
 */
typedef struct tree {
    tnode_t *n;      /* n[0] is the root */
    int64_t *v;
    unsigned w;
    size_t len, cap;
    hent_t *h;       /* (parent, name) -> child, until tree_finish */
    size_t hcap;     /* power of two */
    void *mem;       /* after tree_finish: the old hash table, holding cstart and child */
    uint32_t *cstart; /* children of i are child[cstart[i] .. cstart[i+1]) */
    uint32_t *child;  /* ordered by name rank */
    bool full;       /* TREE_MAX_NODES reached; samples were dropped */
} tree_t;

static inline int64_t *tself(const tree_t *t, size_t i) { return t->v + i * 2 * t->w; }
static inline int64_t *ttotal(const tree_t *t, size_t i) { return t->v + i * 2 * t->w + t->w; }

static inline size_t hslot(uint32_t parent, uint32_t name, size_t mask)
{
    uint64_t key = (uint64_t)parent << 32 | name;
    key *= 0x9e3779b97f4a7c15ULL;
    key ^= key >> 32;
    return (size_t)key & mask;
}

static void tree_init(tree_t *t, uint32_t root_name, int diff)
{
    memset(t, 0, sizeof(*t));
    t->w = diff ? 2 : 1;
    t->cap = 1024;
    t->n = ps_xmalloc(t->cap * sizeof(tnode_t));
    t->v = ps_xmalloc(t->cap * 2 * t->w * sizeof(int64_t));
    t->n[0] = (tnode_t){0, root_name};
    memset(t->v, 0, 2 * t->w * sizeof(int64_t));
    t->len = 1;
    t->hcap = 2048;
    t->h = ps_xcalloc(t->hcap, sizeof(hent_t));
}

static void tree_dispose(tree_t *t)
{
    free(t->n);
    free(t->v);
    free(t->h);
    free(t->mem);
}

static void tree_rehash(tree_t *t)
{
    size_t ncap = t->hcap * 2, mask = ncap - 1;
    hent_t *h = ps_xcalloc(ncap, sizeof(hent_t));
    for (size_t i = 0; i < t->hcap; i++) {
        const hent_t *e = &t->h[i];
        if (e->node == 0)
            continue;
        size_t j = hslot(e->parent, e->name, mask);
        while (h[j].node != 0)
            j = (j + 1) & mask;
        h[j] = *e;
    }
    free(t->h);
    t->h = h;
    t->hcap = ncap;
}

/* The child of parent named name, created if missing; NONE when the tree is full. */
static inline uint32_t tree_child(tree_t *t, uint32_t parent, uint32_t name)
{
    if (t->len * 3 >= t->hcap * 2) /* load <= 2/3 */
        tree_rehash(t);
    size_t mask = t->hcap - 1, i = hslot(parent, name, mask);
    for (;;) {
        hent_t *e = &t->h[i];
        if (e->node == 0)
            break;
        if (e->parent == parent && e->name == name)
            return e->node;
        i = (i + 1) & mask;
    }
    if (t->len >= TREE_MAX_NODES)
        return NONE;
    if (t->len == t->cap) {
        t->cap *= 2;
        t->n = ps_xrealloc(t->n, t->cap * sizeof(tnode_t));
        t->v = ps_xrealloc(t->v, t->cap * 2 * t->w * sizeof(int64_t));
    }
    uint32_t id = (uint32_t)t->len++;
    t->n[id] = (tnode_t){parent, name};
    int64_t *self = tself(t, id);
    self[0] = 0;
    if (t->w == 2)
        self[1] = 0;
    t->h[i] = (hent_t){parent, name, id};
    return id;
}

/* total = self + children totals, in one pass from the last node back: a parent is always created
 * before its children. */
static void tree_totals(tree_t *t)
{
    for (size_t i = 0; i < t->len; i++)
        for (unsigned k = 0; k < t->w; k++)
            ttotal(t, i)[k] = tself(t, i)[k];
    for (size_t i = t->len; i-- > 1;) {
        int64_t *pt = ttotal(t, t->n[i].parent), *ct = ttotal(t, i);
        for (unsigned k = 0; k < t->w; k++)
            pt[k] = add64(pt[k], ct[k]);
    }
}

/*
 * A sample being walked. Each frame costs a probe that depends on the previous one (the parent is
 * the result of the last lookup), so a single walk waits on one cache miss at a time; LANES samples
 * are walked in turn instead, and the slot of each lane's next probe is prefetched while the other
 * lanes are served. The tree does not depend on the interleaving: node ids do, but nothing that
 * is output depends on node ids.
 */
enum { LANES = 8 };

typedef struct lane {
    const ps_sample_t *s;
    uint32_t j;     /* the location being walked is s->locs[j] */
    size_t k, kend; /* its frames f->ids[k .. kend) */
    uint32_t cur;   /* node of the frames walked so far */
    int64_t v[2];
} lane_t;

/* Moves l to its next frame f->ids[l->k]; false when the sample has no more frames. */
static bool lane_advance(lane_t *l, const frames_t *f, const ps_profile_t *p)
{
    if (++l->k < l->kend)
        return true;
    while (l->j-- > 0) {
        uint32_t loc = l->s->locs[l->j];
        if (loc == 0 || loc > p->nlocations)
            continue;
        l->k = f->off[loc - 1];
        l->kend = f->off[loc];
        if (l->k < l->kend)
            return true;
    }
    return false;
}

/* Builds the tree of values[vi] (diff: values[0] and values[1]): 0, or the budget's error (the
 * tree is then incomplete). */
static int tree_build(tree_t *t, const frames_t *f, const ps_profile_t *p, uint32_t vi, ps_err_t *err)
{
    lane_t lanes[LANES];
    unsigned nl = 0;
    uint32_t next = 0;
    int rc;
    for (;;) {
        /* fill idle lanes with samples that have a value; a sample without frames is done at once */
        while (nl < LANES && next < p->nsamples) {
            if (next % BUDGET_EVERY == BUDGET_EVERY - 1 && (rc = budget_check(err)) != 0)
                return rc;
            const ps_sample_t *s = &p->samples[next++];
            lane_t *l = &lanes[nl];
            l->v[0] = t->w == 2 ? s->values[0] : s->values[vi];
            l->v[1] = t->w == 2 ? s->values[1] : 0;
            if (l->v[0] == 0 && l->v[1] == 0)
                continue;
            l->s = s;
            l->j = s->nlocs;
            l->k = l->kend = 0;
            l->cur = 0;
            if (lane_advance(l, f, p)) {
                __builtin_prefetch(&t->h[hslot(0, f->ids[l->k], t->hcap - 1)]);
                nl++;
            } else {
                int64_t *self = tself(t, 0);
                for (unsigned k = 0; k < t->w; k++)
                    self[k] = add64(self[k], l->v[k]);
            }
        }
        if (nl == 0)
            break;
        for (unsigned i = 0; i < nl;) {
            lane_t *l = &lanes[i];
            uint32_t c = tree_child(t, l->cur, f->ids[l->k]);
            if (c == NONE) { /* drop the sample */
                t->full = true;
                lanes[i] = lanes[--nl];
                continue;
            }
            l->cur = c;
            if (lane_advance(l, f, p)) {
                __builtin_prefetch(&t->h[hslot(c, f->ids[l->k], t->hcap - 1)]);
                i++;
                continue;
            }
            int64_t *self = tself(t, c);
            for (unsigned k = 0; k < t->w; k++)
                self[k] = add64(self[k], l->v[k]);
            lanes[i] = lanes[--nl]; /* done; the lane is refilled on the next round */
        }
    }
    tree_totals(t);
    return 0;
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* Lays out children per parent, ordered by rank[name] (rank NULL: in creation order). The hash
 * table is done with: its memory (>= 12 * 1.5 bytes per node) holds the 8 bytes per node needed. */
static void tree_finish(tree_t *t, const uint32_t *rank)
{
    size_t n = t->len;
    t->mem = t->h;
    t->h = NULL;
    t->cstart = t->mem;
    t->child = t->cstart + n + 1;
    memset(t->cstart, 0, (n + 1) * sizeof(uint32_t));
    for (size_t i = 1; i < n; i++)
        t->cstart[t->n[i].parent]++;
    for (size_t i = 1; i < n; i++) /* cstart[i] = end of i's children */
        t->cstart[i] += t->cstart[i - 1];
    t->cstart[n] = (uint32_t)(n - 1);
    for (size_t i = n; i-- > 1;) /* leaves cstart[i] = start of i's children */
        t->child[--t->cstart[t->n[i].parent]] = (uint32_t)i;
    if (rank == NULL)
        return;

    uint64_t *keys = NULL;
    size_t kcap = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t *c = t->child + t->cstart[i];
        size_t m = t->cstart[i + 1] - t->cstart[i];
        if (m < 2)
            continue;
        if (m <= 16) { /* insertion sort */
            for (size_t a = 1; a < m; a++) {
                uint32_t x = c[a], rx = rank[t->n[x].name];
                size_t b = a;
                while (b > 0 && rank[t->n[c[b - 1]].name] > rx) {
                    c[b] = c[b - 1];
                    b--;
                }
                c[b] = x;
            }
        } else {
            GROW(keys, kcap, m);
            for (size_t a = 0; a < m; a++)
                keys[a] = (uint64_t)rank[t->n[c[a]].name] << 32 | c[a];
            qsort(keys, m, sizeof(uint64_t), cmp_u64);
            for (size_t a = 0; a < m; a++)
                c[a] = (uint32_t)keys[a];
        }
    }
    free(keys);
}

/* ---- max_nodes selection --------------------------------------------------------------------- */

static inline int64_t rank_value(const tree_t *t, size_t i)
{
    const int64_t *tot = ttotal(t, i);
    return t->w == 2 ? max64(tot[0], tot[1]) : tot[0];
}

/* The k-th largest rank value of nodes 1..len-1 (1 <= k < len - 1). A min-heap of the k largest so
 * far: k * 8 bytes, O(n log k), and most nodes fail the first compare. */
static int64_t kth_largest(const tree_t *t, size_t k)
{
    int64_t *h = ps_xmalloc(k * sizeof(int64_t));
    size_t n = 0;
    for (size_t i = 1; i < t->len; i++) {
        int64_t v = rank_value(t, i);
        if (n < k) { /* sift up */
            size_t c = n++;
            while (c > 0 && h[(c - 1) / 2] > v) {
                h[c] = h[(c - 1) / 2];
                c = (c - 1) / 2;
            }
            h[c] = v;
        } else if (v > h[0]) { /* replace the minimum, sift down */
            size_t c = 0;
            for (;;) {
                size_t l = 2 * c + 1, m = c;
                int64_t mv = v;
                if (l < k && h[l] < mv)
                    m = l, mv = h[l];
                if (l + 1 < k && h[l + 1] < mv)
                    m = l + 1, mv = h[l + 1];
                if (m == c)
                    break;
                h[c] = h[m];
                c = m;
            }
            h[c] = v;
        }
    }
    int64_t r = h[0];
    free(h);
    return r;
}

typedef struct tie {
    uint32_t depth, rank, pre, node;
} tie_t;

static int cmp_tie(const void *a, const void *b)
{
    const tie_t *x = a, *y = b;
    if (x->depth != y->depth)
        return x->depth < y->depth ? -1 : 1;
    if (x->rank != y->rank)
        return x->rank < y->rank ? -1 : 1;
    return (x->pre > y->pre) - (x->pre < y->pre);
}

/* Returns the kept flags (malloc'ed, one per node) or NULL when everything is kept. */
static uint8_t *select_kept(const tree_t *t, const uint32_t *rank, int64_t max_nodes)
{
    size_t n = t->len - 1; /* root excluded */
    if (max_nodes <= 0 || n <= (uint64_t)max_nodes)
        return NULL;
    size_t k = (size_t)max_nodes;
    int64_t thr = kth_largest(t, k);

    uint8_t *kept = ps_xcalloc(t->len, 1);
    size_t above = 0, nties = 0;
    for (size_t i = 1; i < t->len; i++) {
        int64_t v = rank_value(t, i);
        if (v > thr) {
            kept[i] = 1;
            above++;
        } else if (v == thr) {
            nties++;
        }
    }
    size_t want = k - above; /* >= 1: thr is the k-th largest */
    if (nties <= want) {
        for (size_t i = 1; i < t->len; i++)
            if (rank_value(t, i) == thr)
                kept[i] = 1;
    } else {
        /* depth and pre-order position (with name-ordered children) for a deterministic choice */
        uint32_t *depth = ps_xmalloc(t->len * sizeof(uint32_t));
        uint32_t *pre = ps_xmalloc(t->len * sizeof(uint32_t));
        uint32_t *stack = ps_xmalloc(t->len * sizeof(uint32_t));
        size_t sp = 0;
        uint32_t counter = 0;
        depth[0] = 0;
        stack[sp++] = 0;
        while (sp > 0) {
            uint32_t x = stack[--sp];
            pre[x] = counter++;
            for (size_t c = t->cstart[x + 1]; c-- > t->cstart[x];) { /* reversed: first child on top */
                depth[t->child[c]] = depth[x] + 1;
                stack[sp++] = t->child[c];
            }
        }
        free(stack);
        tie_t *ties = ps_xmalloc(nties * sizeof(tie_t));
        size_t m = 0;
        for (size_t i = 1; i < t->len; i++)
            if (rank_value(t, i) == thr)
                ties[m++] = (tie_t){depth[i], rank[t->n[i].name], pre[i], (uint32_t)i};
        free(depth);
        free(pre);
        qsort(ties, m, sizeof(tie_t), cmp_tie);
        for (size_t i = 0; i < want; i++)
            kept[ties[i].node] = 1;
        free(ties);
    }
    kept[0] = 1;
    for (size_t i = 1; i < t->len; i++) /* parents come before children */
        if (!kept[t->n[i].parent])
            kept[i] = 0;
    return kept;
}

/* ---- flame graph emission -------------------------------------------------------------------- */

typedef struct emit {
    const tree_t *t;
    const uint8_t *kept; /* NULL = all */
    uint32_t other_name;
    bool fill;
    /* pass 1 */
    size_t *lcount;
    size_t nlevels, lcap;
    /* pass 2 */
    ps_fg_level_t *levels;
    size_t *lfill;
    int64_t *prev;     /* 2 per level: end of the previous node, per side */
    uint32_t *outname; /* name id -> output index, NONE = not yet */
    uint32_t *order;   /* output index -> name id */
    uint32_t norder;
    int64_t max_self;
} emit_t;

/* start, total and self have w values each. */
static void emit_node(emit_t *e, uint32_t level, uint32_t name, const int64_t *start, const int64_t *total,
                      const int64_t *self)
{
    if (!e->fill) {
        GROW(e->lcount, e->lcap, (size_t)level + 1);
        while (e->nlevels <= level)
            e->lcount[e->nlevels++] = 0;
        e->lcount[level]++;
        return;
    }
    if (e->outname[name] == NONE) {
        e->outname[name] = e->norder;
        e->order[e->norder++] = name;
    }
    unsigned w = e->t->w;
    int64_t *v = e->levels[level].values + e->lfill[level];
    int64_t *prev = e->prev + 2 * (size_t)level;
    for (unsigned s = 0; s < w; s++) {
        v[3 * s] = sub64(start[s], prev[s]);
        v[3 * s + 1] = total[s];
        v[3 * s + 2] = self[s];
        prev[s] = add64(start[s], total[s]);
        e->max_self = max64(e->max_self, self[s]);
    }
    v[3 * w] = e->outname[name];
    e->lfill[level] += 3 * w + 1;
}

typedef struct estate {
    uint32_t node, level;
    size_t ci;        /* next child */
    int64_t cx[2];    /* start of the next child, per side */
    int64_t other[2]; /* totals of dropped children */
} estate_t;

static void emit_tree(emit_t *e)
{
    const tree_t *t = e->t;
    unsigned w = t->w;
    estate_t *st = NULL;
    size_t sp = 0, scap = 0;
    static const int64_t zero[2] = {0, 0};
    emit_node(e, 0, t->n[0].name, zero, ttotal(t, 0), tself(t, 0));
    GROW(st, scap, 1);
    st[sp] = (estate_t){0, 0, t->cstart[0], {0, 0}, {0, 0}};
    memcpy(st[sp++].cx, tself(t, 0), w * sizeof(int64_t));
    while (sp > 0) {
        estate_t *s = &st[sp - 1];
        if (s->ci < t->cstart[s->node + 1]) {
            uint32_t c = t->child[s->ci++];
            const int64_t *ctot = ttotal(t, c), *cself = tself(t, c);
            if (e->kept == NULL || e->kept[c]) {
                uint32_t level = s->level + 1;
                estate_t ns = {c, level, t->cstart[c], {0, 0}, {0, 0}};
                emit_node(e, level, t->n[c].name, s->cx, ctot, cself);
                for (unsigned k = 0; k < w; k++) {
                    ns.cx[k] = add64(s->cx[k], cself[k]);
                    s->cx[k] = add64(s->cx[k], ctot[k]);
                }
                GROW(st, scap, sp + 1);
                st[sp++] = ns;
            } else {
                for (unsigned k = 0; k < w; k++)
                    s->other[k] = add64(s->other[k], ctot[k]);
            }
        } else {
            if (s->other[0] != 0 || s->other[1] != 0)
                emit_node(e, s->level + 1, e->other_name, s->cx, s->other, s->other);
            sp--;
        }
    }
    free(st);
}

int ps_flamegraph_build(const ps_profile_t *p, uint32_t vi, int diff, int64_t max_nodes, ps_arena_t *arena,
                        ps_flamegraph_t *out, ps_err_t *err)
{
    if (p == NULL || arena == NULL || out == NULL)
        return ps_err_set(err, PS_EINVAL, "flamegraph: missing argument");
    if (diff && p->ntypes < 2)
        return ps_err_set(err, PS_EINVAL, "flamegraph: a diff needs 2 values per sample, the profile has %" PRIu32,
                          p->ntypes);
    if (!diff && vi >= p->ntypes)
        return ps_err_set(err, PS_EINVAL, "flamegraph: value index %" PRIu32 " out of range (%" PRIu32 " types)", vi,
                          p->ntypes);
    memset(out, 0, sizeof(*out));
    diff = diff ? 1 : 0;

    frames_t f;
    frames_build(&f, p);
    uint32_t total_name = names_intern(&f.names, "total", 5);
    uint32_t other_name = names_intern(&f.names, "other", 5);
    names_rank(&f.names);

    tree_t t;
    tree_init(&t, total_name, diff);
    int rc = tree_build(&t, &f, p, vi, err);
    if (rc != 0)
        goto Exit;
    if (t.full) {
        rc = ps_err_set(err, PS_ETOOBIG, "flamegraph: more than %u call tree nodes", (unsigned)TREE_MAX_NODES);
        goto Exit;
    }
    tree_finish(&t, f.names.rank);
    if ((rc = budget_check(err)) != 0) /* between the passes over the tree: each is O(nodes) or so */
        goto Exit;
    uint8_t *kept = select_kept(&t, f.names.rank, max_nodes);

    emit_t e;
    memset(&e, 0, sizeof(e));
    e.t = &t;
    e.kept = kept;
    e.other_name = other_name;
    emit_tree(&e); /* pass 1: count nodes per level */
    if ((rc = budget_check(err)) != 0) {
        free(e.lcount);
        free(kept);
        goto Exit;
    }

    size_t width = diff ? 7 : 4;
    out->nlevels = (uint32_t)e.nlevels;
    out->levels = ps_arena_calloc(arena, e.nlevels, sizeof(ps_fg_level_t));
    for (size_t l = 0; l < e.nlevels; l++) {
        out->levels[l].n = (uint32_t)(e.lcount[l] * width);
        out->levels[l].values = ps_arena_alloc(arena, e.lcount[l] * width * sizeof(int64_t));
    }
    e.fill = true;
    e.levels = out->levels;
    e.lfill = ps_xcalloc(e.nlevels, sizeof(size_t));
    e.prev = ps_xcalloc(2 * e.nlevels, sizeof(int64_t));
    e.outname = ps_xmalloc(f.names.n * sizeof(uint32_t));
    for (size_t i = 0; i < f.names.n; i++)
        e.outname[i] = NONE;
    e.order = ps_xmalloc(f.names.n * sizeof(uint32_t));
    emit_tree(&e); /* pass 2: fill */

    out->nnames = e.norder;
    out->names = ps_arena_alloc(arena, (size_t)e.norder * sizeof(char *));
    out->names[0] = "total";
    for (uint32_t i = 1; i < e.norder; i++) {
        ps_str_t s = f.names.v[e.order[i]];
        out->names[i] = ps_arena_strndup(arena, s.ptr, s.len);
    }
    out->diff = diff;
    out->max_self = e.max_self;
    if (diff) {
        out->left_ticks = ttotal(&t, 0)[0];
        out->right_ticks = ttotal(&t, 0)[1];
        out->total = add64(out->left_ticks, out->right_ticks);
    } else {
        out->total = ttotal(&t, 0)[0];
    }
    free(e.lcount);
    free(e.lfill);
    free(e.prev);
    free(e.outname);
    free(e.order);
    free(kept);
Exit:
    tree_dispose(&t);
    frames_dispose(&f);
    return rc;
}

/* ---- JSON ------------------------------------------------------------------------------------ */

static void note_json(ps_json_t *j, const ps_render_note_t *note)
{
    if (note == NULL)
        return;
    if (note->aggregation) {
        ps_json_key(j, "aggregation");
        ps_json_cstr(j, note->aggregation);
    }
    if (note->normalize) {
        ps_json_key(j, "normalize");
        ps_json_cstr(j, note->normalize);
        ps_json_key(j, "base_profiled_seconds");
        ps_json_double(j, note->base_seconds);
        ps_json_key(j, "compare_profiled_seconds");
        ps_json_double(j, note->compare_seconds);
    }
}

void ps_flamegraph_json(const ps_flamegraph_t *fg, ps_buf_t *out)
{
    ps_flamegraph_json_note(fg, NULL, out);
}

void ps_flamegraph_json_note(const ps_flamegraph_t *fg, const ps_render_note_t *note, ps_buf_t *out)
{
    ps_json_t j;
    ps_json_init(&j, out);
    ps_json_obj(&j);
    ps_json_key(&j, "names");
    ps_json_arr(&j);
    for (uint32_t i = 0; i < fg->nnames; i++)
        ps_json_cstr(&j, fg->names[i]);
    ps_json_end(&j);
    ps_json_key(&j, "levels");
    ps_json_arr(&j);
    for (uint32_t l = 0; l < fg->nlevels; l++) {
        ps_json_arr(&j);
        const ps_fg_level_t *lv = &fg->levels[l];
        for (uint32_t i = 0; i < lv->n; i++)
            ps_json_int(&j, lv->values[i]);
        ps_json_end(&j);
    }
    ps_json_end(&j);
    ps_json_key(&j, "total");
    ps_json_int(&j, fg->total);
    ps_json_key(&j, "max_self");
    ps_json_int(&j, fg->max_self);
    if (fg->diff) {
        ps_json_key(&j, "left_ticks");
        ps_json_int(&j, fg->left_ticks);
        ps_json_key(&j, "right_ticks");
        ps_json_int(&j, fg->right_ticks);
    }
    note_json(&j, note);
    ps_json_end(&j);
}

/* ---- folded stacks --------------------------------------------------------------------------- */

typedef struct fline {
    const char *s; /* the stack, not terminated */
    size_t len;
    int64_t v;
} fline_t;

static int cmp_fline(const void *a, const void *b)
{
    const fline_t *x = a, *y = b;
    size_t n = x->len < y->len ? x->len : y->len;
    int c = n ? memcmp(x->s, y->s, n) : 0;
    if (c != 0)
        return c;
    return (x->len > y->len) - (x->len < y->len);
}

void ps_render_folded(const ps_profile_t *p, uint32_t vi, ps_buf_t *out)
{
    if (p == NULL || vi >= p->ntypes)
        return;
    frames_t f;
    frames_build(&f, p);
    tree_t t;
    tree_init(&t, f.empty, 0);
    /* past TREE_MAX_NODES, samples needing new nodes are left out; stopped by the budget: nothing */
    if (tree_build(&t, &f, p, vi, NULL) != 0) {
        tree_dispose(&t);
        frames_dispose(&f);
        return;
    }

    /* every node with a nonzero self: its stack into text; offsets first, pointers once text is final */
    ps_buf_t text = PS_BUF_INIT;
    size_t nlines = 0;
    for (size_t i = 1; i < t.len; i++)
        if (tself(&t, i)[0] != 0)
            nlines++;
    fline_t *lines = ps_xmalloc((nlines ? nlines : 1) * sizeof(fline_t));
    size_t *offs = ps_xmalloc((nlines ? nlines : 1) * sizeof(size_t));
    uint32_t *path = NULL;
    size_t pcap = 0, m = 0;
    bool stopped = false;
    for (size_t i = 1; i < t.len && !stopped; i++) {
        if (i % BUDGET_EVERY == 0 && budget_check(NULL) != 0)
            stopped = true;
        if (tself(&t, i)[0] == 0)
            continue;
        size_t depth = 0;
        for (uint32_t x = (uint32_t)i; x != 0; x = t.n[x].parent) {
            GROW(path, pcap, depth + 1);
            path[depth++] = t.n[x].name;
        }
        offs[m] = text.len;
        for (size_t d = depth; d-- > 0;) {
            ps_str_t s = f.names.v[path[d]];
            uint8_t *w = ps_buf_reserve(&text, (size_t)s.len + 1);
            for (uint32_t c = 0; c < s.len; c++) {
                char ch = s.ptr[c];
                *w++ = (uint8_t)(ch == ';' || ch == '\n' || ch == '\r' ? '_' : ch);
            }
            if (d > 0)
                *w = ';';
            text.len += (size_t)s.len + (d > 0);
        }
        lines[m].len = text.len - offs[m];
        lines[m].v = tself(&t, i)[0];
        m++;
    }
    if (stopped)
        m = 0;
    for (size_t i = 0; i < m; i++)
        lines[i].s = (const char *)text.data + offs[i];
    qsort(lines, m, sizeof(fline_t), cmp_fline);
    for (size_t i = 0; i < m;) {
        int64_t v = lines[i].v;
        size_t j = i + 1;
        while (j < m && cmp_fline(&lines[i], &lines[j]) == 0)
            v = add64(v, lines[j++].v);
        if (v != 0) {
            ps_buf_append(out, lines[i].s, lines[i].len);
            ps_buf_putc(out, ' ');
            ps_buf_put_i64(out, v);
            ps_buf_putc(out, '\n');
        }
        i = j;
    }
    free(path);
    free(offs);
    free(lines);
    ps_buf_dispose(&text);
    tree_dispose(&t);
    frames_dispose(&f);
}

/* ---- top table ------------------------------------------------------------------------------- */

typedef struct trow {
    int64_t flat, cum;
    uint32_t name, file;           /* name ids */
    uint32_t name_rank, file_rank; /* for sorting */
    uint32_t stamp;                /* last sample (index + 1) that counted cum */
    int64_t line;                  /* the function's start line, else the lowest line of its frames, 0 if none */
} trow_t;

static inline uint64_t abs64(int64_t v)
{
    return v < 0 ? 0 - (uint64_t)v : (uint64_t)v;
}

static int cmp_trow(const void *a, const void *b)
{
    const trow_t *x = a, *y = b;
    uint64_t xf = abs64(x->flat), yf = abs64(y->flat), xc = abs64(x->cum), yc = abs64(y->cum);
    if (xf != yf)
        return xf > yf ? -1 : 1;
    if (xc != yc)
        return xc > yc ? -1 : 1;
    if (x->name_rank != y->name_rank)
        return x->name_rank < y->name_rank ? -1 : 1;
    return (x->file_rank > y->file_rank) - (x->file_rank < y->file_rank);
}

static double pct(int64_t v, uint64_t total)
{
    return total ? (double)v * 100.0 / (double)total : 0.0;
}

void ps_render_top(const ps_profile_t *p, uint32_t vi, uint32_t limit, ps_buf_t *out)
{
    ps_render_top_diff(p, vi, limit, 0, out);
}

void ps_render_top_diff(const ps_profile_t *p, uint32_t vi, uint32_t limit, int64_t base_total, ps_buf_t *out)
{
    ps_render_top_note(p, vi, limit, base_total, NULL, out);
}

void ps_render_top_note(const ps_profile_t *p, uint32_t vi, uint32_t limit, int64_t base_total,
                        const ps_render_note_t *note, ps_buf_t *out)
{
    ps_json_t j;
    ps_json_init(&j, out);
    if (p == NULL || vi >= p->ntypes) {
        ps_json_obj(&j);
        ps_json_key(&j, "total");
        ps_json_int(&j, 0);
        ps_json_key(&j, "rows");
        ps_json_arr(&j);
        ps_json_end(&j);
        note_json(&j, note);
        ps_json_end(&j);
        return;
    }
    frames_t f;
    frames_build(&f, p);
    names_rank(&f.names);

    /* one row per distinct (name, file); row ids per frame of every location */
    size_t nfr = f.off[p->nlocations];
    uint32_t *rowid = ps_xmalloc((nfr ? nfr : 1) * sizeof(uint32_t));
    trow_t *rows = NULL;
    size_t nrows = 0, rcap = 0;
    ps_hmap_t rmap;
    ps_hmap_init(&rmap);
    for (size_t k = 0; k < nfr; k++) {
        uint32_t key[2] = {f.ids[k], f.files[k]};
        uint64_t r;
        if (!ps_hmap_get(&rmap, key, sizeof(key), &r)) {
            GROW(rows, rcap, nrows + 1);
            rows[nrows] = (trow_t){0, 0, key[0], key[1], f.names.rank[key[0]], f.names.rank[key[1]], 0, f.starts[k]};
            r = nrows++;
            ps_hmap_put(&rmap, key, sizeof(key), r);
        } else if (f.starts[k] > 0 && (rows[r].line == 0 || f.starts[k] < rows[r].line)) {
            rows[r].line = f.starts[k];
        }
        rowid[k] = (uint32_t)r;
    }
    ps_hmap_dispose(&rmap);

    uint64_t total = 0; /* sum of |value| */
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *s = &p->samples[i];
        if (i % BUDGET_EVERY == BUDGET_EVERY - 1 && budget_check(NULL) != 0) {
            free(rows);
            free(rowid);
            frames_dispose(&f);
            return; /* stopped by the budget: nothing (the caller asks the budget) */
        }
        int64_t v = s->values[vi];
        if (v == 0)
            continue;
        total = ps_sat_addu(total, abs64(v));
        uint32_t leaf = NONE, stamp = i + 1;
        for (uint32_t j = s->nlocs; j-- > 0;) {
            uint32_t loc = s->locs[j];
            if (loc == 0 || loc > p->nlocations)
                continue;
            for (size_t k = f.off[loc - 1]; k < f.off[loc]; k++) {
                trow_t *r = &rows[rowid[k]];
                if (r->stamp != stamp) {
                    r->stamp = stamp;
                    r->cum = add64(r->cum, v);
                }
                leaf = rowid[k];
            }
        }
        if (leaf != NONE)
            rows[leaf].flat = add64(rows[leaf].flat, v);
    }

    if (base_total > 0) /* a diff: percentages of the base, like go tool pprof -diff_base */
        total = (uint64_t)base_total;
    size_t m = 0; /* keep rows some sample counted, unless everything cancelled out */
    for (size_t i = 0; i < nrows; i++)
        if (rows[i].stamp != 0 && (rows[i].flat != 0 || rows[i].cum != 0)) /* pprof drops 0/0 nodes too */
            rows[m++] = rows[i];
    if (m > 1)
        qsort(rows, m, sizeof(trow_t), cmp_trow);
    if (limit != 0 && m > limit)
        m = limit;

    ps_json_obj(&j);
    ps_json_key(&j, "total");
    ps_json_uint(&j, total);
    ps_json_key(&j, "rows");
    ps_json_arr(&j);
    for (size_t i = 0; i < m; i++) {
        const trow_t *r = &rows[i];
        ps_json_obj(&j);
        ps_json_key(&j, "function");
        ps_json_str(&j, f.names.v[r->name].ptr, f.names.v[r->name].len);
        ps_json_key(&j, "file");
        ps_json_str(&j, f.names.v[r->file].ptr, f.names.v[r->file].len);
        ps_json_key(&j, "line");
        ps_json_int(&j, r->line);
        ps_json_key(&j, "flat");
        ps_json_int(&j, r->flat);
        ps_json_key(&j, "flat%");
        ps_json_fixed(&j, pct(r->flat, total), 2);
        ps_json_key(&j, "cum");
        ps_json_int(&j, r->cum);
        ps_json_key(&j, "cum%");
        ps_json_fixed(&j, pct(r->cum, total), 2);
        ps_json_end(&j);
    }
    ps_json_end(&j);
    note_json(&j, note);
    ps_json_end(&j);
    free(rows);
    free(rowid);
    frames_dispose(&f);
}
