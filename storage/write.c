/*
 * write.c - appending profiles: symbols and stacks interned, series created, one head record per
 * series, all in one write transaction per batch (group commit).
 */
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "core/sat.h"
#include "internal.h"

/* Per-item scratch: translation tables local index -> global id. */
typedef struct xlate {
    uint64_t *str, *map, *fn, *loc;
    ps_buf_t enc;
    ps_buf_t stacks;  /* the stack keys of the profile's samples (stack_key), one after another */
    uint64_t loc_or;  /* every location id or'ed: stack keys are narrow if it and the label set ids are below 2^31 */
    /* the label set id of each raw label list (key, str, num, num_unit string indexes as the
     * profile gives them, span labels taken out) seen in this profile: one list gives one set,
     * so a repeat skips the sort, the encoding and the look-up (Go's samples carry a few sets).
     * Open addressing over the lists themselves (compared field by field), at most half full. */
    struct lmemo {
        const ps_label_t *labels; /* NULL: a free slot */
        uint32_t n, h;            /* labels' count and lmemo_hash (to move it when the memo grows) */
        uint64_t lsid;
    } *lmemo;
    uint32_t lmask, lcount;
} xlate_t;

/* The samples of a profile in node order: an LSD radix sort of their indexes, 8 bits a pass, as
 * many passes as the largest node needs (three up to 16M nodes). Sorted once for all the
 * profile's sample types; qsort per type was a fifth of the writer's time under pushes. */
static uint32_t *sort_by_node(const uint64_t *nodes, uint32_t n, uint32_t *order, uint32_t *tmp)
{
    uint64_t bits = 0;
    for (uint32_t i = 0; i < n; i++) {
        order[i] = i;
        bits |= nodes[i];
    }
    uint32_t *src = order, *dst = tmp;
    for (unsigned shift = 0; shift < 64 && (bits >> shift) != 0; shift += 8) {
        uint32_t pos[256];
        memset(pos, 0, sizeof(pos));
        for (uint32_t i = 0; i < n; i++)
            pos[(nodes[src[i]] >> shift) & 255]++;
        uint32_t sum = 0;
        for (unsigned d = 0; d < 256; d++) {
            uint32_t c = pos[d];
            pos[d] = sum;
            sum += c;
        }
        for (uint32_t i = 0; i < n; i++)
            dst[pos[(nodes[src[i]] >> shift) & 255]++] = src[i];
        uint32_t *x = src;
        src = dst;
        dst = x;
    }
    return src;
}

/* The symbols of one kind of a profile, encoded one after another: the hashes of all are taken
 * (their cache slots prefetched) before the first is looked up, so that the cache misses of the
 * look-ups overlap (ps_hmap_prefetch) */
typedef struct symbatch {
    ps_buf_t enc;
    size_t *off; /* n + 1 */
    uint64_t *h;
} symbatch_t;

/* ps_sym_intern_h, its cache hit inline (most look-ups) */
static inline int intern_one(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t h,
                             uint64_t *id, ps_err_t *err)
{
    if (ps_hmap_get_h(&w->wc->sym_cache[kind], h, content, n, id))
        return 0;
    return ps_sym_intern_h(w, txn, kind, content, n, h, id, err);
}

static int intern_batch(ps_store_writer_t *w, ps_txn_t *txn, int kind, symbatch_t *b, uint32_t n, uint64_t *ids,
                        ps_err_t *err)
{
    for (uint32_t i = 0; i < n; i++)
        b->h[i] = ps_sym_hash(w, kind, b->enc.data + b->off[i], b->off[i + 1] - b->off[i]);
    for (uint32_t i = 0; i < n; i++) {
        int ret = intern_one(w, txn, kind, b->enc.data + b->off[i], b->off[i + 1] - b->off[i], b->h[i], &ids[i], err);
        if (ret != 0)
            return ret;
    }
    return 0;
}

/* A function's content in the symbol index, written at q (room for 4 varints); returns its end */
static inline uint8_t *encode_fn(uint8_t *q, const ps_function_t *f, const ps_profile_t *p, const xlate_t *x)
{
    q = ps_enc_uvarint(q, f->name < p->nstrings ? x->str[f->name] : 0);
    q = ps_enc_uvarint(q, f->system_name < p->nstrings ? x->str[f->system_name] : 0);
    q = ps_enc_uvarint(q, f->filename < p->nstrings ? x->str[f->filename] : 0);
    return ps_enc_uvarint(q, ps_zigzag(f->start_line));
}

/* A location's content in the symbol index, written at q (room for 4 + 3 nlines varints) */
static inline uint8_t *encode_loc(uint8_t *q, const ps_location_t *l, const ps_profile_t *p, const xlate_t *x)
{
    q = ps_enc_uvarint(q, l->mapping <= p->nmappings ? x->map[l->mapping] : 0);
    q = ps_enc_uvarint(q, l->address);
    q = ps_enc_uvarint(q, l->is_folded);
    q = ps_enc_uvarint(q, l->nlines);
    for (uint32_t j = 0; j < l->nlines; j++) {
        q = ps_enc_uvarint(q, l->lines[j].function <= p->nfunctions ? x->fn[l->lines[j].function] : 0);
        q = ps_enc_uvarint(q, ps_zigzag(l->lines[j].line));
        q = ps_enc_uvarint(q, ps_zigzag(l->lines[j].column));
    }
    return q;
}

/* A function as words (its key in wc->sym_words[0]): name | system name << 32, file name |
 * (32-bit) start line << 32. Returns their count, 0 if an id or the line does not fit. */
static inline size_t fn_words(const ps_function_t *f, const ps_profile_t *p, const xlate_t *x, uint64_t *k)
{
    uint64_t name = f->name < p->nstrings ? x->str[f->name] : 0;
    uint64_t sys = f->system_name < p->nstrings ? x->str[f->system_name] : 0;
    uint64_t file = f->filename < p->nstrings ? x->str[f->filename] : 0;
    if ((name | sys | file) >> 32 != 0 || f->start_line != (int32_t)f->start_line)
        return 0;
    k[0] = name | sys << 32;
    k[1] = file | (uint64_t)(uint32_t)f->start_line << 32;
    return 2;
}

/* A location as words (its key in wc->sym_words[1]): address, mapping | is_folded << 32, then a
 * word a line, function | (32-bit) line << 32, and when some column is not 0 (bit 31 of the first
 * line's word says so) a word a line of columns: room for 2 + 2 nlines words. The count of words
 * and that bit give nlines back, so that the words are one location's alone. Returns the count,
 * 0 if an id or a line does not fit. */
static inline size_t loc_words(const ps_location_t *l, const ps_profile_t *p, const xlate_t *x, uint64_t *k)
{
    uint64_t map = l->mapping <= p->nmappings ? x->map[l->mapping] : 0;
    if (map >> 32 != 0)
        return 0;
    k[0] = l->address;
    k[1] = map | (uint64_t)l->is_folded << 32;
    uint64_t cols = 0;
    for (uint32_t j = 0; j < l->nlines; j++) {
        const ps_line_t *ln = &l->lines[j];
        uint64_t fn = ln->function <= p->nfunctions ? x->fn[ln->function] : 0;
        if (fn >> 31 != 0 || ln->line != (int32_t)ln->line)
            return 0;
        k[2 + j] = fn | (uint64_t)(uint32_t)ln->line << 32;
        cols |= (uint64_t)ln->column;
    }
    size_t n = 2 + (size_t)l->nlines;
    if (cols != 0) {
        k[2] |= 1u << 31;
        for (uint32_t j = 0; j < l->nlines; j++)
            k[n + j] = (uint64_t)l->lines[j].column;
        n += l->nlines;
    }
    return n;
}

static inline uint64_t words_hash(const uint64_t *k, size_t n)
{
    uint64_t h = n * 0x9e3779b97f4a7c15ull;
    for (size_t i = 0; i < n; i++) {
        h = (h ^ k[i]) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
    }
    return h;
}

/* ps_hmap_get_h for the words of a function or location (nw of them): compared a word at a time,
 * inline (memcmp's call was half the cost of a look-up of a location's 24 bytes) */
static inline bool words_get(const ps_hmap_t *m, uint64_t h, const uint64_t *k, size_t nw, uint64_t *id)
{
    size_t mask = m->cap - 1;
    for (size_t i = h & mask;; i = (i + 1) & mask) {
        const ps_hmap_slot_t *s = &m->slots[i];
        if (s->key == NULL)
            return false;
        if (s->hash != h || s->klen != nw * sizeof(uint64_t))
            continue;
        size_t j = 0;
        while (j < nw && ps_hash_rd64_(s->key + j * sizeof(uint64_t)) == k[j])
            j++;
        if (j == nw) {
            *id = s->value;
            return true;
        }
    }
}

/* p's functions (kind SYM_FUNCTION) or locations (SYM_LOCATION), n of them, into ids: looked up by
 * their words in wc->sym_words (all made and hashed first, their slots prefetched, as intern_batch
 * does); a miss, or a symbol whose words do not fit, is encoded (into x->enc) and interned by its
 * content. New ids are given in p's order, as intern_batch gives them. */
static int intern_words(ps_store_writer_t *w, ps_txn_t *txn, int kind, const ps_profile_t *p, xlate_t *x,
                        symbatch_t *b, uint32_t n, uint64_t *ids, ps_err_t *err)
{
    ps_hmap_t *cache = &w->wc->sym_words[kind == SYM_LOCATION];
    ps_buf_reset(&b->enc);
    for (uint32_t i = 0; i < n; i++) {
        b->off[i] = b->enc.len;
        uint64_t *k;
        size_t nw;
        if (kind == SYM_FUNCTION) {
            k = (uint64_t *)ps_buf_reserve(&b->enc, 2 * sizeof(uint64_t));
            nw = fn_words(&p->functions[i], p, x, k);
        } else {
            k = (uint64_t *)ps_buf_reserve(&b->enc, (2 + 2 * (size_t)p->locations[i].nlines) * sizeof(uint64_t));
            nw = loc_words(&p->locations[i], p, x, k);
        }
        b->enc.len += nw * sizeof(uint64_t);
        b->h[i] = words_hash(k, nw);
        ps_hmap_prefetch(cache, b->h[i]);
    }
    b->off[n] = b->enc.len;
    for (uint32_t i = 0; i < n; i++) {
        const uint8_t *k = b->enc.data + b->off[i];
        size_t klen = b->off[i + 1] - b->off[i];
        if (klen != 0 && words_get(cache, b->h[i], (const uint64_t *)k, klen / sizeof(uint64_t), &ids[i]))
            continue;
        ps_buf_reset(&x->enc);
        uint8_t *e, *q;
        if (kind == SYM_FUNCTION) {
            e = ps_buf_reserve(&x->enc, 4 * 10);
            q = encode_fn(e, &p->functions[i], p, x);
        } else {
            e = ps_buf_reserve(&x->enc, (4 + 3 * (size_t)p->locations[i].nlines) * 10);
            q = encode_loc(e, &p->locations[i], p, x);
        }
        uint64_t h = ps_hash64(e, (size_t)(q - e), (uint64_t)kind);
        int ret = klen != 0 ? ps_sym_store(w, txn, kind, e, (size_t)(q - e), h, &ids[i], err)
                            : ps_sym_intern_h(w, txn, kind, e, (size_t)(q - e), h, &ids[i], err);
        if (ret != 0)
            return ret;
        if (klen != 0)
            ps_hmap_put_h(cache, b->h[i], k, klen, ids[i]);
    }
    return 0;
}

/* skip (optional): strings not to store (x->str 0: nothing refers to them) */
static int intern_symbols(ps_store_writer_t *w, ps_txn_t *txn, const ps_profile_t *p, const uint8_t *skip, xlate_t *x,
                          ps_arena_t *a, ps_err_t *err)
{
    int ret;
    uint32_t most = p->nstrings;
    if (p->nmappings > most)
        most = p->nmappings;
    if (p->nfunctions > most)
        most = p->nfunctions;
    if (p->nlocations > most)
        most = p->nlocations;
    symbatch_t b = {ps_wbuf_take(w, BUF_SYMS), ps_arena_alloc(a, ((size_t)most + 1) * sizeof(size_t)),
                    ps_arena_alloc(a, ((size_t)most + 1) * sizeof(uint64_t))};
    x->str = ps_arena_alloc(a, (p->nstrings + 1) * sizeof(uint64_t));
    for (uint32_t i = 0; i < p->nstrings; i++)
        b.h[i] = skip == NULL || !skip[i] ? ps_sym_hash(w, SYM_STRING, p->strings[i].ptr, p->strings[i].len) : 0;
    for (uint32_t i = 0; i < p->nstrings; i++) {
        x->str[i] = 0;
        if ((skip == NULL || !skip[i]) &&
            (ret = intern_one(w, txn, SYM_STRING, p->strings[i].ptr, p->strings[i].len, b.h[i], &x->str[i], err)) != 0)
            goto Exit;
    }
#define STR(i) ((i) < p->nstrings ? x->str[(i)] : 0)
    x->map = ps_arena_alloc(a, (p->nmappings + 1) * sizeof(uint64_t));
    x->map[0] = 0;
    ps_buf_reset(&b.enc);
    /* each symbol's varints written into room reserved for all of them (ps_enc_uvarint) */
    for (uint32_t i = 0; i < p->nmappings; i++) {
        const ps_mapping_t *m = &p->mappings[i];
        b.off[i] = b.enc.len;
        uint8_t *e = ps_buf_reserve(&b.enc, 6 * 10), *q = e;
        q = ps_enc_uvarint(q, m->memory_start);
        q = ps_enc_uvarint(q, m->memory_limit);
        q = ps_enc_uvarint(q, m->file_offset);
        q = ps_enc_uvarint(q, STR(m->filename));
        q = ps_enc_uvarint(q, STR(m->build_id));
        q = ps_enc_uvarint(q, m->flags);
        b.enc.len += (size_t)(q - e);
    }
    b.off[p->nmappings] = b.enc.len;
    if ((ret = intern_batch(w, txn, SYM_MAPPING, &b, p->nmappings, x->map + 1, err)) != 0)
        goto Exit;
    x->fn = ps_arena_alloc(a, (p->nfunctions + 1) * sizeof(uint64_t));
    x->fn[0] = 0;
    if ((ret = intern_words(w, txn, SYM_FUNCTION, p, x, &b, p->nfunctions, x->fn + 1, err)) != 0)
        goto Exit;
    x->loc = ps_arena_alloc(a, (p->nlocations + 1) * sizeof(uint64_t));
    x->loc[0] = 0;
    ret = intern_words(w, txn, SYM_LOCATION, p, x, &b, p->nlocations, x->loc + 1, err);
    x->loc_or = 0;
    for (uint32_t i = 1; i <= p->nlocations; i++)
        x->loc_or |= x->loc[i];
Exit:
    ps_wbuf_give(w, BUF_SYMS, &b.enc);
    return ret;
}

/* A sample's span (0: none), the indexes of its span and trace_id labels (UINT32_MAX: none) */
typedef struct sample_span {
    uint64_t span;
    uint32_t jspan, jtrace;
    uint8_t flags; /* PS_SPAN_F_* */
} sample_span_t;

/* Sample labels are a set: sorted (key, str, num, unit by content) so that the order a producer
 * wrote them in (Go's is random) does not split one stack in two. */
static int cmp_label(const void *a, const void *b, void *ctx)
{
    const ps_profile_t *p = ctx;
    const ps_label_t *x = a, *y = b;
    const uint32_t xs[3] = {x->key, x->str, x->num_unit}, ys[3] = {y->key, y->str, y->num_unit};
    for (int i = 0; i < 3; i++) {
        if (i == 2 && x->num != y->num)
            return x->num < y->num ? -1 : 1;
        ps_str_t sx = ps_profile_str(p, xs[i]), sy = ps_profile_str(p, ys[i]);
        size_t n = sx.len < sy.len ? sx.len : sy.len;
        int c = memcmp(sx.ptr, sy.ptr, n);
        if (c == 0)
            c = (sx.len > sy.len) - (sx.len < sy.len);
        if (c != 0)
            return c;
    }
    return 0;
}

/* Appends the whole-stack cache key of a sample (its label set id lsid, 0: none, then its location
 * ids, leaf first) to keys. narrow (every id below 2^31): the ids as 4-byte words (half the bytes
 * to hash, compare and keep), else 0xffffffff and then 8-byte words (no narrow key starts so). */
static void stack_key(const ps_sample_t *smp, const xlate_t *x, uint64_t lsid, bool narrow, ps_buf_t *keys)
{
    if (narrow) {
        uint32_t *restrict k = (uint32_t *)ps_buf_reserve(keys, (smp->nlocs + 1) * 4);
        const uint32_t *restrict l = smp->locs;
        const uint64_t *restrict ids = x->loc;
        uint32_t n = smp->nlocs, j = 0;
        k[0] = (uint32_t)lsid;
        for (; j + 4 <= n; j += 4) { /* four at a time: the loads need not wait for the stores */
            uint32_t a = (uint32_t)ids[l[j]], b = (uint32_t)ids[l[j + 1]], c = (uint32_t)ids[l[j + 2]],
                     d = (uint32_t)ids[l[j + 3]];
            k[j + 1] = a;
            k[j + 2] = b;
            k[j + 3] = c;
            k[j + 4] = d;
        }
        for (; j < n; j++)
            k[j + 1] = (uint32_t)ids[l[j]];
        keys->len += (smp->nlocs + 1) * 4;
        return;
    }
    uint8_t *b = ps_buf_reserve(keys, 4 + (smp->nlocs + 1) * 8);
    memset(b, 0xff, 4);
    memcpy(b + 4, &lsid, 8);
    for (uint32_t j = 0; j < smp->nlocs; j++)
        memcpy(b + 12 + 8 * j, &x->loc[smp->locs[j]], 8);
    keys->len += 4 + (smp->nlocs + 1) * 8;
}

/* The memo's hash of a raw label list: one multiply a label, its fields as they are */
static inline uint32_t lmemo_hash(const ps_label_t *l, uint32_t n)
{
    uint64_t h = n;
    for (uint32_t j = 0; j < n; j++) {
        h = (h ^ ((uint64_t)l[j].key | (uint64_t)l[j].str << 32)) * 0x9e3779b97f4a7c15ull;
        h = (h ^ (uint64_t)l[j].num ^ ((uint64_t)l[j].num_unit << 32 | h >> 32)) * 0xff51afd7ed558ccdull;
    }
    return (uint32_t)(h ^ h >> 32);
}

/* x's memo with room for one more list (cap slots from the arena, the lists moved over) */
static void lmemo_room(xlate_t *x, ps_arena_t *a)
{
    if (x->lmemo != NULL && 2 * (x->lcount + 1) <= x->lmask + 1)
        return;
    uint32_t cap = x->lmemo == NULL ? 64 : 2 * (x->lmask + 1);
    struct lmemo *old = x->lmemo, *t = ps_arena_calloc(a, cap, sizeof(*t));
    for (uint32_t i = 0; old != NULL && i <= x->lmask; i++) {
        if (old[i].labels == NULL)
            continue;
        uint32_t j = old[i].h & (cap - 1);
        while (t[j].labels != NULL)
            j = (j + 1) & (cap - 1);
        t[j] = old[i];
    }
    x->lmemo = t;
    x->lmask = cap - 1;
}

static inline bool lmemo_same(const ps_label_t *a, const ps_label_t *b, uint32_t n)
{
    for (uint32_t j = 0; j < n; j++)
        if (a[j].key != b[j].key || a[j].str != b[j].str || a[j].num != b[j].num || a[j].num_unit != b[j].num_unit)
            return false;
    return true;
}

/* A label list as words of ids (its key in wc->sym_words[2]): key | str << 32 and num a label,
 * then, when some num_unit is not 0 (bit 63 of the first word says so), a word a label of them:
 * room for 3 n words. The count and that bit give n back. Returns the count, 0 if an id does not
 * fit (a key's below 2^32, a str's below 2^31). One list's words are one label set's. */
static inline size_t lset_words(const ps_label_t *l, uint32_t n, const ps_profile_t *p, const xlate_t *x, uint64_t *k)
{
    uint64_t units = 0;
    for (uint32_t j = 0; j < n; j++) {
        uint64_t key = l[j].key < p->nstrings ? x->str[l[j].key] : 0;
        uint64_t str = l[j].str < p->nstrings ? x->str[l[j].str] : 0;
        if (key >> 32 != 0 || str >> 31 != 0)
            return 0;
        k[2 * j] = key | str << 32;
        k[2 * j + 1] = (uint64_t)l[j].num;
        units |= l[j].num_unit < p->nstrings ? x->str[l[j].num_unit] : 0;
    }
    size_t nw = 2 * (size_t)n;
    if (units != 0) {
        k[0] |= 1ull << 63;
        for (uint32_t j = 0; j < n; j++)
            k[nw + j] = l[j].num_unit < p->nstrings ? x->str[l[j].num_unit] : 0;
        nw += n;
    }
    return nw;
}

/* The label set id of sample smp (0: no labels but the span's) into *lsid. a: the profile's arena
 * (the memo's lists live there or in the profile). */
static int sample_lsid(ps_store_writer_t *w, ps_txn_t *txn, const ps_profile_t *p, const ps_sample_t *smp,
                       const sample_span_t *sp, xlate_t *x, ps_arena_t *a, uint64_t *lsid, ps_err_t *err)
{
    int ret;
    *lsid = 0;
    /* the labels without the span's span_id/profile_id and trace_id (kept in the span parts) */
    uint32_t nl = smp->nlabels;
    const ps_label_t *labels = smp->labels;
    if (sp->span != 0) {
        ps_label_t *kept = ps_arena_alloc(a, (size_t)nl * sizeof(ps_label_t) + 1);
        uint32_t m = 0;
        for (uint32_t j = 0; j < smp->nlabels; j++)
            if (j != sp->jspan && j != sp->jtrace)
                kept[m++] = smp->labels[j];
        nl = m;
        labels = kept;
    }
    if (nl == 0)
        return 0;
    lmemo_room(x, a);
    uint32_t h = lmemo_hash(labels, nl);
    struct lmemo *slot;
    for (uint32_t i = h & x->lmask;; i = (i + 1) & x->lmask) {
        slot = &x->lmemo[i];
        if (slot->labels == NULL)
            break;
        if (slot->n == nl && lmemo_same(slot->labels, labels, nl)) {
            *lsid = slot->lsid;
            return 0;
        }
    }
    /* a list met in an earlier profile: its set by its words */
    uint64_t kw[nl > 64 ? 1 : 3 * nl], wh = 0;
    size_t nw = nl <= 64 ? lset_words(labels, nl, p, x, kw) : 0;
    if (nw != 0) {
        wh = words_hash(kw, nw);
        if (words_get(&w->wc->sym_words[2], wh, kw, nw, lsid)) {
            *slot = (struct lmemo){labels, nl, h, *lsid};
            x->lcount++;
            return 0;
        }
    }
    ps_label_t sorted[nl > 64 ? 1 : nl];
    const ps_label_t *set = labels;
    if (nl > 1 && nl <= 64) {
        memcpy(sorted, labels, nl * sizeof(ps_label_t));
        if (nl <= 8) { /* insertion sort: qsort_r's set-up was most of a sort of Go's 2-4 labels */
            for (uint32_t j = 1; j < nl; j++) {
                ps_label_t l = sorted[j];
                uint32_t k = j;
                for (; k > 0 && cmp_label(&sorted[k - 1], &l, (void *)p) > 0; k--)
                    sorted[k] = sorted[k - 1];
                sorted[k] = l;
            }
        } else {
            qsort_r(sorted, nl, sizeof(ps_label_t), cmp_label, (void *)p);
        }
        set = sorted;
    }
    ps_buf_reset(&x->enc);
    ps_put_uvarint(&x->enc, nl);
    for (uint32_t j = 0; j < nl; j++) {
        const ps_label_t *l = &set[j];
        ps_put_uvarint(&x->enc, STR(l->key));
        ps_put_uvarint(&x->enc, STR(l->str));
        ps_put_varint(&x->enc, l->num);
        ps_put_uvarint(&x->enc, STR(l->num_unit));
    }
    if ((ret = ps_sym_intern(w, txn, SYM_LABELSET, x->enc.data, x->enc.len, lsid, err)) != 0)
        return ret;
    if (nw != 0)
        ps_hmap_put_h(&w->wc->sym_words[2], wh, kw, nw * sizeof(uint64_t), *lsid);
    *slot = (struct lmemo){labels, nl, h, *lsid};
    x->lcount++;
    return 0;
}

/* The stack node of sample smp: [label set item lsid] then locations root first. k, klen: its
 * stack key (stack_key), h: that key's hash (its cache slot prefetched). */
static int sample_node(ps_store_writer_t *w, ps_txn_t *txn, const ps_sample_t *smp, const xlate_t *x, uint64_t lsid,
                       const uint8_t *k, size_t klen, uint64_t h, uint64_t *node, ps_err_t *err)
{
    int ret;
    uint64_t v;
    if (ps_hmap_get_h(&w->wc->stack_cache, h, k, klen, &v)) {
        *node = v;
        return 0;
    }
    uint64_t n = 0;
    if (lsid && (ret = ps_tree_child(w, txn, n, lsid | PS_ITEM_LABELSET, &n, err)) != 0)
        return ret;
    for (uint32_t j = smp->nlocs; j > 0; j--)
        if ((ret = ps_tree_child(w, txn, n, x->loc[smp->locs[j - 1]], &n, err)) != 0)
            return ret;
    ps_hmap_put_h(&w->wc->stack_cache, h, k, klen, n);
    *node = n;
    return 0;
}
#undef STR

/* The span of each sample (span 0: none; see store.h "span index") into spans; false if no sample has
 * one. A sample's trace is its first trace_id label (counted only with a span). */
static bool sample_spans(const ps_profile_t *p, sample_span_t *spans)
{
    uint32_t k1 = 0, k2 = 0, k3 = 0; /* string indexes of span_id, profile_id and trace_id (0: absent) */
    for (uint32_t i = 1; i < p->nstrings; i++) {
        if (p->strings[i].len == 7 && memcmp(p->strings[i].ptr, "span_id", 7) == 0 && k1 == 0)
            k1 = i;
        else if (p->strings[i].len == 10 && memcmp(p->strings[i].ptr, "profile_id", 10) == 0 && k2 == 0)
            k2 = i;
        else if (p->strings[i].len == 8 && memcmp(p->strings[i].ptr, "trace_id", 8) == 0 && k3 == 0)
            k3 = i;
    }
    if (k1 == 0 && k2 == 0)
        return false;
    bool any = false;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *smp = &p->samples[i];
        sample_span_t *sp = &spans[i];
        *sp = (sample_span_t){0, UINT32_MAX, UINT32_MAX, 0};
        for (uint32_t j = 0; j < smp->nlabels; j++) {
            uint32_t key = smp->labels[j].key;
            if (key == 0 || (key != k1 && key != k2))
                continue;
            ps_str_t v = ps_profile_str(p, smp->labels[j].str);
            if (ps_span_parse(v.ptr, v.len, &sp->span)) {
                sp->jspan = j;
                bool upper = false;
                for (size_t c = 0; c < v.len; c++)
                    upper |= v.ptr[c] >= 'A' && v.ptr[c] <= 'F';
                sp->flags = (uint8_t)((key == k2 ? PS_SPAN_F_PROFILE_ID : 0) | (upper ? PS_SPAN_F_UPPER : 0));
                any = true;
                break;
            }
        }
        for (uint32_t j = 0; sp->span != 0 && k3 != 0 && j < smp->nlabels; j++)
            if (smp->labels[j].key == k3 && smp->labels[j].str != 0 && smp->labels[j].num == 0 &&
                smp->labels[j].num_unit == 0) {
                sp->jtrace = j;
                break;
            }
    }
    return any;
}

/* The strings only the span parts use (the values of the span and trace_id labels taken out of
 * the samples): not stored as symbols, nothing else refers to them. */
static const uint8_t *span_only_strings(const ps_profile_t *p, const sample_span_t *spans, ps_arena_t *a)
{
    uint8_t *skip = ps_arena_calloc(a, p->nstrings + 1, 1);
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *smp = &p->samples[i];
        if (spans[i].span != 0 && smp->labels[spans[i].jspan].str < p->nstrings)
            skip[smp->labels[spans[i].jspan].str] = 1;
        if (spans[i].span != 0 && spans[i].jtrace != UINT32_MAX && smp->labels[spans[i].jtrace].str < p->nstrings)
            skip[smp->labels[spans[i].jtrace].str] = 1;
    }
    /* ... unless something that is stored uses them too */
#define USE(i) do { if ((i) < p->nstrings) skip[(i)] = 0; } while (0)
    for (uint32_t i = 0; i < p->nsamples; i++) {
        const ps_sample_t *smp = &p->samples[i];
        for (uint32_t j = 0; j < smp->nlabels; j++) {
            USE(smp->labels[j].key);
            USE(smp->labels[j].num_unit);
            if (spans[i].span == 0 || (j != spans[i].jspan && j != spans[i].jtrace))
                USE(smp->labels[j].str);
        }
    }
    for (uint32_t i = 0; i < p->nmappings; i++) {
        USE(p->mappings[i].filename);
        USE(p->mappings[i].build_id);
    }
    for (uint32_t i = 0; i < p->nfunctions; i++) {
        USE(p->functions[i].name);
        USE(p->functions[i].system_name);
        USE(p->functions[i].filename);
    }
#undef USE
    return skip;
}

/* span parts by span, then how it was written (flags, trace id), then node */
static int cmp_part(const void *a, const void *b)
{
    const ps_span_part_t *x = a, *y = b;
    if (x->span != y->span)
        return x->span < y->span ? -1 : 1;
    if (x->flags != y->flags)
        return x->flags < y->flags ? -1 : 1;
    if (x->trace_len != y->trace_len)
        return x->trace_len < y->trace_len ? -1 : 1;
    int c = x->trace_len ? memcmp(x->trace, y->trace, x->trace_len) : 0;
    if (c != 0)
        return c;
    return (x->node > y->node) - (x->node < y->node);
}

/* Checks order against what each series holds. Returns 1 if some series already has ts (a
 * possible duplicate), 0 if all is new, <0 on error. absent[i]: series i is not in the store
 * (so that append_one creates it without looking for it again). */
static int check_order(ps_store_writer_t *w, ps_txn_t *txn, ps_append_t *it, bool *absent, ps_err_t *err)
{
    int dup = 0;
    for (uint32_t i = 0; i < it->nseries; i++) {
        uint64_t sid;
        ps_series_state_t *st;
        int ret = ps_series_get_or_create(w, txn, &it->series_labels[i], false, PS_SERIES_PROFILE, &sid, &st, err);
        absent[i] = ret == PS_ENOTFOUND;
        if (ret == PS_ENOTFOUND)
            continue;
        if (ret)
            return ret;
        if (st->kind != PS_SERIES_PROFILE) {
            ps_buf_t b = PS_BUF_INIT;
            ps_labels_format(&it->series_labels[i], &b);
            ps_buf_putc(&b, 0);
            ret = ps_err_set(&it->err, PS_ECONFLICT, "series %s holds float samples (remote_write), not profiles",
                             (char *)b.data);
            ps_buf_dispose(&b);
            return ret;
        }
        if (it->ts < st->last_ts) {
            ps_buf_t b = PS_BUF_INIT;
            ps_labels_format(&it->series_labels[i], &b);
            ps_buf_putc(&b, 0);
            ret = ps_err_set(&it->err, PS_EOUTOFORDER,
                             "out of order: series %s already has a profile at %lld ns, newer than this one at %lld ns",
                             (char *)b.data, (long long)st->last_ts, (long long)it->ts);
            ps_buf_dispose(&b);
            return ret;
        }
        if (it->ts == st->last_ts)
            dup = 1;
    }
    return dup;
}

/* Writes (or, in check mode, compares) the head records of one item. absent (or NULL): which of
 * its series check_order found missing in this transaction (none created since but by this item). */
static int append_one(ps_store_writer_t *w, ps_txn_t *txn, ps_append_t *it, bool check, bool *all_same,
                      const bool *absent, ps_arena_t *a, ps_err_t *err)
{
    const ps_profile_t *p = it->profile;
    xlate_t x = {0};
    int ret = 0;
    x.enc = ps_wbuf_take(w, BUF_ENC);
    x.stacks = ps_wbuf_take(w, BUF_STACKS);
    ps_buf_t rec = ps_wbuf_take(w, BUF_REC), prec = ps_wbuf_take(w, BUF_PREC);
    uint64_t *nodes = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint64_t));

    sample_span_t *spans = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(sample_span_t));
    bool has_spans = sample_spans(p, spans);
    if ((ret = intern_symbols(w, txn, p, has_spans ? span_only_strings(p, spans, a) : NULL, &x, a, err)) != 0)
        goto Exit;
    static const sample_span_t nospan = {0, UINT32_MAX, UINT32_MAX, 0};
    /* the samples' label sets, then all their stack keys built and hashed, the cache slots
     * prefetched (as intern_batch does for the symbols), then the look-ups (ids of each kind are
     * given in sample order, as when each sample was done whole) */
    uint64_t *lsids = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint64_t));
    uint64_t wide = x.loc_or;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        lsids[i] = 0;
        if (p->samples[i].nlabels > 0 &&
            (ret = sample_lsid(w, txn, p, &p->samples[i], has_spans ? &spans[i] : &nospan, &x, a, &lsids[i], err)) != 0)
            goto Exit;
        wide |= lsids[i];
    }
    uint64_t *sh = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint64_t));
    size_t *koff = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(size_t));
    for (uint32_t i = 0; i < p->nsamples; i++) {
        koff[i] = x.stacks.len;
        stack_key(&p->samples[i], &x, lsids[i], wide >> 31 == 0, &x.stacks);
        sh[i] = ps_hash64(x.stacks.data + koff[i], x.stacks.len - koff[i], 0);
        ps_hmap_prefetch(&w->wc->stack_cache, sh[i]);
    }
    koff[p->nsamples] = x.stacks.len;
    for (uint32_t i = 0; i < p->nsamples; i++)
        if ((ret = sample_node(w, txn, &p->samples[i], &x, lsids[i], x.stacks.data + koff[i], koff[i + 1] - koff[i],
                               sh[i], &nodes[i], err)) != 0)
            goto Exit;
    uint32_t *order = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint32_t));
    uint32_t *tmp = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint32_t));
    order = sort_by_node(nodes, p->nsamples, order, tmp);
    uint64_t *pn = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(uint64_t));
    int64_t *pv = ps_arena_alloc(a, (p->nsamples + 1) * sizeof(int64_t));
    ps_span_part_t *parts = has_spans ? ps_arena_alloc(a, (p->nsamples + 1) * sizeof(ps_span_part_t)) : NULL;
    for (uint32_t si = 0; si < it->nseries; si++) {
        uint32_t t = it->type_index[si];
        /* identical stacks (pprof allows repeats) are summed, as pprof does when it loads a profile */
        uint32_t m = 0;
        for (uint32_t k = 0; k < p->nsamples; k++) {
            uint32_t i = order[k];
            int64_t v = p->samples[i].values[t];
            if (v == 0)
                continue;
            if (m > 0 && pn[m - 1] == nodes[i]) {
                pv[m - 1] = ps_sat_add(pv[m - 1], v);
                if (pv[m - 1] == 0)
                    m--;
            } else {
                pn[m] = nodes[i];
                pv[m] = v;
                m++;
            }
        }
        ps_buf_reset(&rec);
        ps_head_encode(it->duration, it->period, pn, pv, m, &rec);
        uint64_t sid;
        ps_series_state_t *st;
        ret = absent != NULL && absent[si]
                  ? ps_series_create_absent(w, txn, &it->series_labels[si], PS_SERIES_PROFILE, &sid, &st, err)
                  : ps_series_get_or_create(w, txn, &it->series_labels[si], true, PS_SERIES_PROFILE, &sid, &st, err);
        if (ret != 0)
            goto Exit;
        /* the span parts of this series: (span, flags, trace id, node) -> value, summed, none 0 */
        size_t np = 0;
        for (uint32_t i = 0; has_spans && i < p->nsamples; i++)
            if (spans[i].span != 0 && p->samples[i].values[t] != 0) {
                const ps_sample_t *smp = &p->samples[i];
                ps_str_t tr = spans[i].jtrace != UINT32_MAX ? ps_profile_str(p, smp->labels[spans[i].jtrace].str)
                                                           : (ps_str_t){NULL, 0};
                parts[np++] = (ps_span_part_t){.span = spans[i].span, .node = nodes[i], .value = smp->values[t],
                                               .trace = tr.ptr, .trace_len = (uint32_t)tr.len, .flags = spans[i].flags};
            }
        if (np > 1) {
            qsort(parts, np, sizeof(ps_span_part_t), cmp_part);
            size_t q = 0;
            for (size_t k = 0; k < np; k++) {
                if (q > 0 && cmp_part(&parts[q - 1], &parts[k]) == 0) {
                    parts[q - 1].value = ps_sat_add(parts[q - 1].value, parts[k].value);
                    continue;
                }
                if (q > 0 && parts[q - 1].value == 0)
                    q--;
                parts[q++] = parts[k];
            }
            if (q > 0 && parts[q - 1].value == 0)
                q--;
            np = q;
        }
        ps_buf_reset(&prec);
        if (np > 0)
            ps_span_parts_encode(parts, np, &prec);
        uint8_t kb[16];
        ps_key_sid_ts(kb, sid, it->ts);
        MDB_val v;
        if (check && st->last_ts == it->ts) {
            bool found = ps_txn_get(txn, DB_HEAD, kb, 16, &v, "reading head record");
            if (found && (v.mv_size != rec.len || memcmp(v.mv_data, rec.data, rec.len) != 0))
                found = false;
            if (found && !txn->ret) {
                bool pf = ps_txn_get(txn, DB_SPANPARTS, kb, 16, &v, "reading span parts");
                found = pf ? v.mv_size == prec.len && memcmp(v.mv_data, prec.data, prec.len) == 0 : prec.len == 0;
            }
            if (txn->ret) {
                ret = ps_txn_error(txn, err);
                goto Exit;
            }
            if (!found)
                *all_same = false;
        } else {
            if (check)
                *all_same = false;
            if (!ps_txn_put(txn, DB_HEAD, kb, 16, rec.data, rec.len, 0, "writing head record")) {
                ret = ps_txn_error(txn, err);
                goto Exit;
            }
            /* the label times: at the series' first profile and its first of each granule
             * (profiles come in order: last_ts is its newest) */
            if ((st->last_ts == INT64_MIN || !ps_ltimes_same_granule(st->last_ts, it->ts)) &&
                ((ret = ps_ltimes_note(txn, &it->series_labels[si], it->ts, &w->ltimes_key, &w->lt_memo, err)) != 0 ||
                 (ret = ps_ptimes_note(txn, &it->series_labels[si], it->ts, &w->ltimes_key, &w->lt_memo, err)) != 0))
                goto Exit;
            if (st->head_count == 0)
                st->head_min_ts = it->ts;
            st->head_count++;
            st->last_ts = it->ts;
            if (st->head_count == w->s->opts.compact_max_profiles && !check) {
                if (w->wc->ndue == w->wc->capdue) {
                    w->wc->capdue = w->wc->capdue ? w->wc->capdue * 2 : 64;
                    w->wc->due = ps_xrealloc(w->wc->due, w->wc->capdue * sizeof(uint64_t));
                }
                w->wc->due[w->wc->ndue++] = sid;
            }
            if ((ret = ps_series_put_state(w, txn, sid, st, err)) != 0)
                goto Exit;
            /* the span parts and the span index: each span with a value in this series, once */
            if (np > 0 && !ps_txn_put(txn, DB_SPANPARTS, kb, 16, prec.data, prec.len, 0, "writing span parts")) {
                ret = ps_txn_error(txn, err);
                goto Exit;
            }
            for (size_t k = 0; k < np; k++)
                if ((k == 0 || parts[k].span != parts[k - 1].span) &&
                    (ret = ps_span_put(txn, parts[k].span, sid, it->ts, err)) != 0)
                    goto Exit;
            if (it->uuid != NULL && (ret = ps_uuid_put(txn, it->uuid, sid, it->ts, err)) != 0)
                goto Exit;
        }
        it->series_ids[si] = sid;
        it->series_samples[si] = m;
    }
    /* frames without symbols, counted for the profile now stored (not in the duplicate check) */
    if (!check)
        ret = ps_unsym_count(w, txn, it, x.str, a, err);
Exit:
    ps_wbuf_give(w, BUF_PREC, &prec);
    ps_wbuf_give(w, BUF_REC, &rec);
    ps_wbuf_give(w, BUF_ENC, &x.enc);
    ps_wbuf_give(w, BUF_STACKS, &x.stacks);
    return ret;
}

int ps_store_future_error(int64_t ts, int64_t now, int64_t grace_ns, ps_err_t *err)
{
    char when[48], ahead[48], grace[48];
    ps_format_time_go(ts, when, sizeof(when));
    ps_format_duration(grace_ns, grace, sizeof(grace));
    int64_t d = ts - now;
    const int64_t year = 365ll * 24 * 3600 * PS_NS_PER_S;
    if (d >= 2 * year)
        snprintf(ahead, sizeof(ahead), "%lld years", (long long)(d / year));
    else
        ps_format_duration(d - d % PS_NS_PER_S, ahead, sizeof(ahead));
    return ps_err_set(err, PS_EINVAL, "timestamp %s is %s in the future (more than %s=%s)", when, ahead,
                      ps_setting_name(PS_SETTING_FUTURE_GRACE), grace);
}

/* --agent: a write stores only its log entries. Nothing is checked against stored data (there is
 * none): every profile is taken (status 0, no series ids), every float sample counts as stored.
 * The receiver applies its own order and duplicate rules. */
static int write_log_only(ps_store_writer_t *w, ps_append_t **items, size_t n, ps_float_append_t **floats, size_t nf,
                          const ps_metric_meta_t *meta, size_t nm, ps_err_t *err)
{
    ps_txn_t t = {0}, *txn = &t;
    int64_t now = ps_time_now();
    int ret;
    if ((ret = ps_store_space_check(w->s, err)) != 0)
        goto Fail;
    if ((ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting write transaction")) != 0)
        goto Fail;
    for (size_t i = 0; i < n; i++) {
        ps_append_t *it = items[i];
        it->status = 0;
        it->duplicate = false;
        ps_err_clear(&it->err);
        for (uint32_t j = 0; j < it->nseries; j++) {
            it->series_ids[j] = 0;
            it->series_samples[j] = 0;
        }
        if (it->fwd_len > 0 && (ret = ps_forward_log_put(w, txn, now, it->fwd, it->fwd_len, err)) != 0)
            goto Fail;
    }
    ps_store_forward_floats_fn fn = nf > 0 || nm > 0 ? atomic_load(&w->s->fwd_floats) : NULL;
    size_t total = 0;
    for (size_t i = 0; i < nf; i++)
        total += floats[i]->nsamples;
    ps_buf_reset(&w->fwd_mask);
    uint8_t *m = ps_buf_reserve(&w->fwd_mask, total + 1);
    memset(m, 1, total + 1);
    for (size_t i = 0, off = 0; i < nf; off += floats[i]->nsamples, i++) {
        ps_float_append_t *fa = floats[i];
        fa->status = 0;
        ps_err_clear(&fa->err);
        fa->sid = 0;
        fa->accepted = fa->nsamples;
        fa->duplicates = fa->out_of_order = fa->dup_conflicts = fa->out_of_bounds = fa->too_new = 0;
        fa->stored = fn != NULL ? m + off : NULL;
    }
    if (fn != NULL) {
        ps_buf_reset(&w->fwd_buf);
        fn(atomic_load(&w->s->fwd_ctx), floats, nf, meta, nm, &w->fwd_buf);
        if (w->fwd_buf.len > 0 && (ret = ps_forward_log_put(w, txn, now, w->fwd_buf.data, w->fwd_buf.len, err)) != 0)
            goto Fail;
    }
    if ((ret = ps_txn_commit(txn, err, "committing")) != 0)
        goto Fail;
    return 0;
Fail:
    ps_txn_abort(txn);
    ps_txn_t rt;
    if (ps_txn_begin(&rt, w->s, PS_TXN_READ, NULL, "starting read transaction") == 0) {
        ps_forward_log_load_next(&rt, &w->fwd_next, NULL);
        ps_txn_abort(&rt);
    }
    for (size_t i = 0; i < n; i++) {
        items[i]->status = ret;
        ps_err_set(&items[i]->err, ret, "%s", err ? err->msg : ps_strerror(ret));
    }
    for (size_t i = 0; i < nf; i++) {
        floats[i]->status = ret;
        floats[i]->accepted = 0;
        ps_err_set(&floats[i]->err, ret, "%s", err ? err->msg : ps_strerror(ret));
    }
    return ret;
}

void ps_store_writer_defer_sync(ps_store_writer_t *w, bool on)
{
    w->defer_sync = on;
}

uint64_t ps_store_writer_last_txn(const ps_store_writer_t *w)
{
    return atomic_load(&w->s->last_txn);
}

int ps_store_writer_sync(ps_store_writer_t *w, uint64_t txn, ps_err_t *err)
{
    return ps_store_sync(w->s, txn, err);
}

int ps_store_write_batch(ps_store_writer_t *w, ps_append_t **items, size_t n, ps_err_t *err)
{
    return ps_store_write(w, items, n, NULL, 0, NULL, 0, err);
}

int ps_store_write(ps_store_writer_t *w, ps_append_t **items, size_t n, ps_float_append_t **floats, size_t nf,
                   const ps_metric_meta_t *meta, size_t nm, ps_err_t *err)
{
    ps_txn_t t = {0}, *txn = &t;
    int ret = 0;
    ps_arena_t a = PS_ARENA_INIT;
    int64_t now = ps_time_now();

    if (w->s->opts.log_only)
        return write_log_only(w, items, n, floats, nf, meta, nm, err);
    if ((ret = ps_store_space_check(w->s, err)) != 0) { /* full: refused before anything is tried */
        ps_err_prefix(err, "writing");
        goto Fail;
    }
    if ((ret = ps_txn_begin(txn, w->s, PS_TXN_WRITE, err, "starting write transaction")) != 0)
        goto Fail;
    for (size_t i = 0; i < n; i++) {
        ps_append_t *it = items[i];
        it->status = 0;
        it->duplicate = false;
        ps_err_clear(&it->err);
        ps_arena_reset(&a);
        if (w->s->opts.retention_ns > 0 && it->ts < now - w->s->opts.retention_ns) {
            it->status = ps_err_set(&it->err, PS_EINVAL,
                                    "profile time %lld ns is older than the retention period (now - %lld s)",
                                    (long long)it->ts, (long long)(w->s->opts.retention_ns / 1000000000));
            continue;
        }
        if (w->s->opts.future_grace_ns > 0 && it->ts > now + w->s->opts.future_grace_ns) {
            it->status = ps_store_future_error(it->ts, now, w->s->opts.future_grace_ns, &it->err);
            continue;
        }
        bool *absent = ps_arena_alloc(&a, (it->nseries + 1) * sizeof(bool));
        int order = check_order(w, txn, it, absent, &it->err);
        if (order < 0) {
            it->status = order;
            if (order != PS_EOUTOFORDER && order != PS_EINVAL && order != PS_ECONFLICT) {
                ret = order;
                ps_err_set(err, order, "%s", it->err.msg);
                goto Fail;
            }
            continue;
        }
        if (order == 0) {
            if ((ret = append_one(w, txn, it, false, NULL, absent, &a, err)) != 0)
                goto Fail;
            continue;
        }
        /* same timestamp as the newest profile of some series: an identical retry is accepted
         * (nothing written), anything else is a conflict. Checked in a nested transaction. */
        ps_txn_t child;
        ps_next_ids_t saved = w->next;
        if ((ret = ps_txn_begin_nested(&child, txn, err, "starting nested transaction")) != 0)
            goto Fail;
        bool same = true;
        ret = append_one(w, &child, it, true, &same, NULL, &a, err);
        ps_txn_abort(&child);
        if (memcmp(&saved, &w->next, sizeof(saved)) != 0 || ret != 0)
            w->next = saved;
        ps_sym_caches_clear(w); /* the child's ids and series states are gone with it */
        if (ret)
            goto Fail;
        if (same) {
            it->duplicate = true;
        } else {
            it->status = ps_err_set(&it->err, PS_ECONFLICT,
                                    "a different profile is already stored for this series at %lld ns",
                                    (long long)it->ts);
        }
    }
    /* the forwarding log: each profile stored now, in batch order (so in order per series) */
    for (size_t i = 0; i < n; i++)
        if (items[i]->status == 0 && !items[i]->duplicate && items[i]->fwd_len > 0 &&
            (ret = ps_forward_log_put(w, txn, now, items[i]->fwd, items[i]->fwd_len, err)) != 0)
            goto Fail;
    /* recording rules: float samples made from the profiles stored now, written with the others */
    if (w->s->record != NULL && n > 0) {
        ps_float_append_t **rec = NULL;
        size_t nrec = 0;
        w->s->record(w->s->record_ctx, items, n, &rec, &nrec);
        if (nrec > 0) {
            ps_buf_reset(&w->rec_all);
            ps_float_append_t **all = (ps_float_append_t **)ps_buf_reserve(&w->rec_all, (nf + nrec) * sizeof(*all));
            if (nf > 0)
                memcpy(all, floats, nf * sizeof(*all));
            memcpy(all + nf, rec, nrec * sizeof(*all));
            floats = all;
            nf += nrec;
        }
    }
    /* floats after the profiles: the nested transactions above drop the writer caches, and the
     * float heads changed here stay in the cache until ps_float_write_flush writes them */
    ps_store_forward_floats_fn fwd_floats = nf > 0 || nm > 0 ? atomic_load(&w->s->fwd_floats) : NULL;
    if (fwd_floats != NULL) { /* which samples are stored: for their entry, below */
        size_t total = 0;
        for (size_t i = 0; i < nf; i++)
            total += floats[i]->nsamples;
        ps_buf_reset(&w->fwd_mask);
        uint8_t *m = ps_buf_reserve(&w->fwd_mask, total + 1);
        memset(m, 0, total + 1);
        for (size_t i = 0, off = 0; i < nf; off += floats[i]->nsamples, i++)
            floats[i]->stored = m + off;
    } else {
        for (size_t i = 0; i < nf; i++)
            floats[i]->stored = NULL;
    }
    if (nf > 0 && (ret = ps_float_write(w, txn, floats, nf, now, err)) != 0)
        goto Fail;
    if (fwd_floats != NULL) {
        ps_buf_reset(&w->fwd_buf);
        fwd_floats(atomic_load(&w->s->fwd_ctx), floats, nf, meta, nm, &w->fwd_buf);
        if (w->fwd_buf.len > 0 && (ret = ps_forward_log_put(w, txn, now, w->fwd_buf.data, w->fwd_buf.len, err)) != 0)
            goto Fail;
    }
    if (nm > 0 && (ret = ps_meta_write(w, txn, meta, nm, err)) != 0)
        goto Fail;
    if ((ret = ps_float_write_flush(w, txn, err)) != 0)
        goto Fail;
    if ((ret = ps_unsym_flush(w, txn, err)) != 0)
        goto Fail;
    if ((ret = ps_store_save_next(w, txn, err)) != 0)
        goto Fail;
    txn->defer_sync = w->defer_sync;
    if ((ret = ps_txn_commit(txn, err, "committing")) != 0)
        goto Fail;
    ps_arena_dispose(&a);
    /* the new series' hash index entries (series.c), once enough wait: a failure leaves them
     * waiting for the next compaction's, which reports it */
    ps_err_t ierr;
    if (ps_series_pending_full(w))
        ps_series_index_now(w, &ierr);
    /* what the compactor's idle rule measures from: the series that got a profile now */
    for (size_t i = 0; i < n; i++) {
        if (items[i]->status != 0 || items[i]->duplicate)
            continue;
        for (uint32_t j = 0; j < items[i]->nseries; j++)
            ps_walls_set(&w->append_wall, items[i]->series_ids[j], now);
    }
    for (size_t i = 0; i < nf; i++) {
        if (floats[i]->status != 0 || floats[i]->accepted == 0)
            continue;
        ps_walls_set(&w->append_wall, floats[i]->sid, now);
    }
    /* the caches only save LMDB lookups: past their budget they start again from empty */
    size_t sym_bytes = 0;
    for (int k = 1; k < SYM_KINDS; k++)
        sym_bytes += ps_hmap_bytes(&w->wc->sym_cache[k]);
    for (int k = 0; k < 3; k++)
        sym_bytes += ps_hmap_bytes(&w->wc->sym_words[k]);
    if (w->s->opts.cache_bytes && sym_bytes + ps_hmap_bytes(&w->wc->tree_cache) +
                                       ps_hmap_bytes(&w->wc->stack_cache) + ps_hmap_bytes(&w->wc->series_cache) +
                                       w->wc->float_state_bytes >
                                   w->s->opts.cache_bytes)
        ps_sym_caches_clear(w);
    /* one entry per series written lately: past their count bound the series caches start again
     * from empty (series written once each would keep them growing with every new series) */
    else if (w->s->opts.series_cache_max &&
             (w->wc->series_cache.count > w->s->opts.series_cache_max || w->wc->nstates > w->s->opts.series_cache_max))
        ps_series_caches_clear(w);
    return 0;
Fail:
    ps_txn_abort(txn);
    ps_arena_dispose(&a);
    /* nothing of this batch is stored: forget cached ids, reload counters */
    ps_sym_caches_clear(w);
    ps_unsym_reset(w);
    ps_txn_t rt;
    if (ps_txn_begin(&rt, w->s, PS_TXN_READ, NULL, "starting read transaction") == 0) {
        ps_store_load_next(w, &rt, NULL);
        ps_txn_abort(&rt);
    }
    for (size_t i = 0; i < n; i++) {
        if (items[i]->status == 0 || items[i]->status == PS_ESTORAGE) {
            items[i]->status = ret;
            items[i]->duplicate = false;
            ps_err_set(&items[i]->err, ret, "%s", err ? err->msg : ps_strerror(ret));
        }
    }
    for (size_t i = 0; i < nf; i++) {
        ps_float_append_t *f = floats[i];
        f->status = ret;
        f->accepted = f->duplicates = 0;
        ps_err_set(&f->err, ret, "%s", err ? err->msg : ps_strerror(ret));
    }
    return ret;
}
