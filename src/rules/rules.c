/*
 * rules.c - recording rules (rules.h): validation, the set in force, evaluation and recording.
 *
 * A contribution (ps_rules_eval, carried by the write request to ps_rules_record) is, repeated:
 *   klen (u32, host order) | the recorded series' labels, ps_labels_encode'd (klen bytes)
 *   | h (u64, the labels' ps_hash64 of seed 0, as the store's maps hash them) | t (i64 ms) | v (f64)
 * made and read by this process only (never stored).
 */
#include "rules.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "core/hash.h"
#include "core/labels.h"
#include "core/log.h"
#include "core/timeutil.h"
#include "parser/labels.h"
#include "parser/selector.h"

#define PREFIX "profiles_recorded_"
#define LABEL_RE "^[a-zA-Z_][a-zA-Z0-9_]*$"
#define RULE_ID_LABEL "pyroscope_rule_id"
#define ID_LEN 10
static const char alphabet[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ";

static char *sdup(ps_arena_t *a, const char *s)
{
    return ps_arena_strndup(a, s, strlen(s));
}

/* ---- validation ---- */

static void line(ps_buf_t *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void line(ps_buf_t *b, const char *fmt, ...)
{
    char tmp[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(tmp, sizeof(tmp), fmt, ap);
    va_end(ap);
    if (b->len > 0)
        ps_buf_putc(b, '\n');
    ps_buf_append(b, tmp, strlen(tmp));
}

/* Go's %q of s (cut at 200 bytes) */
static const char *q(char *out, size_t size, const char *s)
{
    ps_quote_string(out, size, s, strlen(s), 200);
    return out;
}

static bool letters(const char *s)
{
    if (*s == '\0')
        return false;
    for (; *s; s++)
        if (!((*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}

static const char *trim(const char *s, ps_arena_t *arena)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r' || *s == '\v' || *s == '\f')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r' ||
                     s[n - 1] == '\v' || s[n - 1] == '\f'))
        n--;
    return ps_arena_strndup(arena, s, n);
}

static void random_id(char *out)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    static _Atomic uint64_t counter;
    uint64_t seed = (uint64_t)ts.tv_nsec ^ ((uint64_t)ts.tv_sec << 32) ^ atomic_fetch_add(&counter, 1) * 0x9e3779b97f4a7c15ull;
    uint64_t h = ps_hash64(&seed, sizeof(seed), 0x7265636f72646564ull);
    for (int i = 0; i < ID_LEN; i++) {
        if (i == 6)
            h = ps_hash64(&h, sizeof(h), seed);
        out[i] = alphabet[h % 52];
        h /= 52;
    }
    out[ID_LEN] = '\0';
}

/* parses matcher string s; every matcher's regex is freed again */
static int parse_matcher(const char *s, ps_arena_t *arena, ps_selector_t *sel, ps_err_t *err)
{
    return ps_selector_parse_labels(s, strlen(s), arena, sel, err);
}

int ps_rules_validate(ps_rr_rule_t *r, bool upsert, ps_arena_t *arena, ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    char q1[512];
    if (r->id == NULL)
        r->id = "";
    if (r->metric_name == NULL)
        r->metric_name = "";
    if (r->function_name == NULL)
        r->function_name = "";
    if (upsert) {
        if (r->id[0] == '\0') {
            char *id = ps_arena_alloc(arena, ID_LEN + 1);
            random_id(id);
            r->id = id;
            r->generation = 1;
        }
        r->metric_name = trim(r->metric_name, arena);
    }
    if (!letters(r->id))
        line(&b, "id %s must match ^[a-zA-Z]+$", q(q1, sizeof(q1), r->id));
    else if (strlen(r->id) > PS_RULE_ID_MAX)
        line(&b, "id: %zu bytes, more than %d", strlen(r->id), PS_RULE_ID_MAX);
    size_t mlen = strlen(r->metric_name);
    if (mlen == 0)
        line(&b, "metric_name is required");
    else if (!ps_metric_name_valid(r->metric_name, mlen))
        line(&b, "metric_name %s is invalid: invalid metric name: %s", q(q1, sizeof(q1), r->metric_name),
             r->metric_name);
    else if (strncmp(r->metric_name, PREFIX, sizeof(PREFIX) - 1) != 0)
        line(&b, "metric_name %s is invalid: metric name must start with " PREFIX, q(q1, sizeof(q1), r->metric_name));
    else if (mlen > PS_RULE_NAME_MAX)
        line(&b, "metric_name: %zu bytes, more than %d", mlen, PS_RULE_NAME_MAX);
    int types = 0;
    if (r->nmatchers > PS_RULE_MATCHERS_MAX) {
        line(&b, "matchers: %zu, more than %d", r->nmatchers, PS_RULE_MATCHERS_MAX);
        types = 1; /* not also "must contain" */
    } else {
        for (size_t i = 0; i < r->nmatchers; i++) {
            ps_selector_t sel;
            ps_err_t perr;
            if (parse_matcher(r->matchers[i], arena, &sel, &perr) != 0) {
                line(&b, "matcher %s is invalid: %s", q(q1, sizeof(q1), r->matchers[i]), perr.msg);
                continue;
            }
            for (uint32_t j = 0; j < sel.n; j++) {
                if (strcmp(sel.m[j].name, "__profile_type__") != 0)
                    continue;
                if (sel.m[j].op != PS_MATCH_EQ)
                    line(&b, "matcher \"__profile_type__\" must have type \"=\"");
                types++;
            }
            ps_selector_dispose(&sel);
        }
    }
    if (types != 1)
        line(&b, "matchers must contain a \"__profile_type__\" matcher");
    if (r->ngroup_by > PS_RULE_GROUP_BY_MAX)
        line(&b, "group_by: %zu labels, more than %d", r->ngroup_by, PS_RULE_GROUP_BY_MAX);
    else
        for (size_t i = 0; i < r->ngroup_by; i++)
            if (!ps_label_name_valid(r->group_by[i], strlen(r->group_by[i])))
                line(&b, "group_by label %s must match " LABEL_RE, q(q1, sizeof(q1), r->group_by[i]));
    if (r->next > PS_RULE_EXTERNAL_MAX)
        line(&b, "external_labels: %zu labels, more than %d", r->next, PS_RULE_EXTERNAL_MAX);
    else
        for (size_t i = 0; i < r->next; i++) {
            const char *nm = r->ext[i].name ? r->ext[i].name : "", *v = r->ext[i].value ? r->ext[i].value : "";
            if (!ps_label_name_valid(nm, strlen(nm)))
                line(&b, "external_labels name %s must match " LABEL_RE, q(q1, sizeof(q1), nm));
            if (!ps_utf8_valid(v, strlen(v)))
                line(&b, "external_labels value %s must be a valid utf-8 string", q(q1, sizeof(q1), v));
            else if (strlen(v) > PS_LABEL_VALUE_MAX)
                line(&b, "external_labels value of %s: %zu bytes, more than %d", q(q1, sizeof(q1), nm), strlen(v),
                     PS_LABEL_VALUE_MAX);
        }
    if (r->generation < 0)
        line(&b, "generation must be positive");
    if (strlen(r->function_name) > PS_RULE_FUNCTION_MAX)
        line(&b, "stacktrace_filter.function_name: %zu bytes, more than %d", strlen(r->function_name),
             PS_RULE_FUNCTION_MAX);
    int ret = 0;
    if (b.len > 0) {
        ps_buf_putc(&b, 0);
        ret = ps_err_set(err, PS_EINVAL, "%s", (char *)b.data);
    }
    ps_buf_dispose(&b);
    return ret;
}

const char *ps_rules_profile_type(const ps_rr_rule_t *r, ps_arena_t *arena)
{
    for (size_t i = 0; i < r->nmatchers; i++) {
        ps_selector_t sel;
        ps_err_t perr;
        if (parse_matcher(r->matchers[i], arena, &sel, &perr) != 0)
            continue;
        const char *v = NULL;
        for (uint32_t j = 0; j < sel.n && v == NULL; j++)
            if (strcmp(sel.m[j].name, "__profile_type__") == 0 && sel.m[j].op == PS_MATCH_EQ)
                v = sel.m[j].value;
        ps_selector_dispose(&sel);
        if (v != NULL)
            return v;
    }
    return "unknown";
}

/* ---- the set in force ---- */

/* A set of 64-bit hashes, open addressing in one array (one cache line a probe, no key
 * elsewhere): 0 marks an empty slot, the hash 0 itself is has0. At most PS_RULE_SERIES_MAX. */
typedef struct seen {
    uint64_t *slot;
    uint32_t cap, n;         /* cap a power of two (0: none yet); n counts has0 too */
    bool has0;
} seen_t;

static bool seen_has(const seen_t *st, uint64_t h)
{
    if (h == 0)
        return st->has0;
    if (st->cap == 0)
        return false;
    for (uint32_t i = (uint32_t)(h ^ (h >> 32)) & (st->cap - 1);; i = (i + 1) & (st->cap - 1)) {
        if (st->slot[i] == h)
            return true;
        if (st->slot[i] == 0)
            return false;
    }
}

static void seen_add_slot(uint64_t *slot, uint32_t cap, uint64_t h)
{
    uint32_t i = (uint32_t)(h ^ (h >> 32)) & (cap - 1);
    while (slot[i] != 0)
        i = (i + 1) & (cap - 1);
    slot[i] = h;
}

/* h not in st */
static void seen_add(seen_t *st, uint64_t h)
{
    st->n++;
    if (h == 0) {
        st->has0 = true;
        return;
    }
    if ((uint64_t)st->n * 4 > (uint64_t)st->cap * 3) {
        uint32_t nc = st->cap ? st->cap * 2 : 64;
        uint64_t *ns = ps_xcalloc(nc, sizeof(*ns));
        for (uint32_t i = 0; i < st->cap; i++)
            if (st->slot[i] != 0)
                seen_add_slot(ns, nc, st->slot[i]);
        free(st->slot);
        st->slot = ns;
        st->cap = nc;
    }
    seen_add_slot(st->slot, st->cap, h);
}

typedef struct crule {
    ps_rr_rule_t r;          /* a copy, with profile_type and provisioned */
    ps_selector_t sel;       /* every matcher of every string; __profile_type__ renamed __name__ */
    ps_labels_t base;        /* __name__, pyroscope_rule_id, external labels */
    size_t fnlen;
    bool has_re;             /* a regex matcher: matching takes mu (its match data) */
    pthread_mutex_t mu;      /* the matchers' match data and seen */
    seen_t seen;             /* hashes of the recorded series' labels */
    bool dropped_logged;
} crule_t;

/* The evaluation's memory of the profile series it met (one per set, shared by the evaluating
 * threads): by a series' labels (ps_labels_encode'd), what the rules make of that series, as one
 * entry (below) copied out under mu. What it holds depends only on the labels and the set: which
 * rules match, the recorded series' labels and their hash, and whether the rule dropped that
 * recorded series (a decision that never changes: seen only grows, and a rule at
 * PS_RULE_SERIES_MAX stays there). A profile of a series met before is then evaluated without
 * matching, building labels, encoding, hashing or taking a rule's lock; only its totals are its
 * own. Dropped whole past EVAL_CACHE_BYTES. */
#define EVAL_CACHE_BYTES (16u << 20)

/* an entry: ecount_t, then n econtrib_t, then the recorded series' labels they point at by offset */
typedef struct ecount {
    uint32_t n, bytes;
} ecount_t;

typedef struct econtrib {
    uint32_t rule;     /* index in the set */
    uint32_t klen;     /* the recorded series' labels, ps_labels_encode'd */
    uint32_t koff;     /* their offset in the entry */
    uint32_t drop;     /* 1: the rule had PS_RULE_SERIES_MAX series without this one */
    uint64_t h;        /* their hash (ps_hash64, seed 0) */
} econtrib_t;

typedef struct ecache {
    pthread_mutex_t mu;
    ps_hmap_t index;   /* series labels -> entry (a pointer into arena) */
    ps_arena_t arena;
} ecache_t;

typedef struct ruleset {
    ps_arena_t arena;
    crule_t *v;
    size_t n;
    uint32_t nprov;
    ecache_t cache;
} ruleset_t;

struct ps_rules {
    pthread_rwlock_t lock;   /* set: read by the evaluations, written by a swap */
    ruleset_t *set;
    pthread_mutex_t mu;      /* the sources below and the rebuilds */
    ps_arena_t prov_arena, stored_arena;
    ps_rr_rule_t *prov, *stored;
    size_t nprov, nstored;
    /* the recorder's scratch (the writer thread) */
    ps_arena_t rec_arena;
    _Atomic uint64_t evaluations, samples, dropped;
};

static void copy_rule(const ps_rr_rule_t *s, ps_arena_t *a, ps_rr_rule_t *d)
{
    *d = *s;
    d->id = sdup(a, s->id);
    d->metric_name = sdup(a, s->metric_name);
    d->profile_type = s->profile_type ? sdup(a, s->profile_type) : NULL;
    d->function_name = sdup(a, s->function_name ? s->function_name : "");
    d->matchers = ps_arena_alloc(a, (s->nmatchers + 1) * sizeof(char *));
    for (size_t i = 0; i < s->nmatchers; i++)
        d->matchers[i] = sdup(a, s->matchers[i]);
    d->group_by = ps_arena_alloc(a, (s->ngroup_by + 1) * sizeof(char *));
    for (size_t i = 0; i < s->ngroup_by; i++)
        d->group_by[i] = sdup(a, s->group_by[i]);
    d->ext = ps_arena_alloc(a, (s->next + 1) * sizeof(*d->ext));
    for (size_t i = 0; i < s->next; i++)
        d->ext[i] = (ps_rr_label_t){sdup(a, s->ext[i].name), sdup(a, s->ext[i].value)};
}

static void set_free(ruleset_t *set)
{
    if (set == NULL)
        return;
    for (size_t i = 0; i < set->n; i++) {
        ps_selector_dispose(&set->v[i].sel);
        free(set->v[i].seen.slot);
        pthread_mutex_destroy(&set->v[i].mu);
    }
    pthread_mutex_destroy(&set->cache.mu);
    ps_hmap_dispose(&set->cache.index);
    ps_arena_dispose(&set->cache.arena);
    ps_arena_dispose(&set->arena);
    free(set);
}

static void compile(const ps_rr_rule_t *src, bool provisioned, ruleset_t *set, crule_t *c)
{
    ps_arena_t *a = &set->arena;
    memset(c, 0, sizeof(*c));
    copy_rule(src, a, &c->r);
    c->r.provisioned = provisioned;
    c->r.profile_type = sdup(a, ps_rules_profile_type(src, a));
    c->fnlen = c->r.has_function ? strlen(c->r.function_name) : 0;
    uint32_t total = 0;
    ps_selector_t *parts = ps_arena_alloc(a, (src->nmatchers + 1) * sizeof(*parts));
    for (size_t i = 0; i < src->nmatchers; i++) {
        if (parse_matcher(src->matchers[i], a, &parts[i], NULL) != 0)
            parts[i] = (ps_selector_t){0, NULL}; /* validated before: not expected */
        total += parts[i].n;
    }
    c->sel.n = total;
    c->sel.m = ps_arena_alloc(a, (total + 1) * sizeof(ps_matcher_t));
    for (size_t i = 0, k = 0; i < src->nmatchers; i++)
        for (uint32_t j = 0; j < parts[i].n; j++, k++) {
            c->sel.m[k] = parts[i].m[j];
            if (c->sel.m[k].op == PS_MATCH_RE || c->sel.m[k].op == PS_MATCH_NRE)
                c->has_re = true;
            if (strcmp(c->sel.m[k].name, "__profile_type__") == 0) {
                c->sel.m[k].name = "__name__";
                c->sel.m[k].nlen = 8;
            }
        }
    /* Pyroscope's exported labels: the rule's external labels but __name__ and pyroscope_rule_id,
     * which are the metric name and the rule's id */
    c->base = (ps_labels_t){0, NULL, 0};
    for (size_t i = 0; i < src->next; i++) {
        const char *nm = src->ext[i].name;
        if (strcmp(nm, "__name__") == 0 || strcmp(nm, RULE_ID_LABEL) == 0)
            continue;
        ps_labels_set(&c->base, a, nm, strlen(nm), src->ext[i].value, strlen(src->ext[i].value));
    }
    ps_labels_set(&c->base, a, "__name__", 8, c->r.metric_name, strlen(c->r.metric_name));
    ps_labels_set(&c->base, a, RULE_ID_LABEL, sizeof(RULE_ID_LABEL) - 1, c->r.id, strlen(c->r.id));
    pthread_mutex_init(&c->mu, NULL);
    c->seen = (seen_t){NULL, 0, 0, false};
}

/* with rs->mu held: builds the set of rs->prov and rs->stored and swaps it in */
static void rebuild(ps_rules_t *rs)
{
    ruleset_t *set = ps_xcalloc(1, sizeof(*set));
    set->arena = (ps_arena_t)PS_ARENA_INIT;
    pthread_mutex_init(&set->cache.mu, NULL);
    ps_hmap_init(&set->cache.index);
    set->cache.arena = (ps_arena_t)PS_ARENA_INIT;
    set->v = ps_arena_alloc(&set->arena, (rs->nprov + rs->nstored + 1) * sizeof(crule_t));
    for (size_t i = 0; i < rs->nprov; i++)
        compile(&rs->prov[i], true, set, &set->v[set->n++]);
    set->nprov = (uint32_t)rs->nprov;
    for (size_t i = 0; i < rs->nstored; i++) {
        bool shadowed = false;
        for (size_t j = 0; j < rs->nprov && !shadowed; j++)
            shadowed = strcmp(rs->prov[j].id, rs->stored[i].id) == 0;
        if (!shadowed)
            compile(&rs->stored[i], false, set, &set->v[set->n++]);
    }
    /* a stored rule that did not change keeps the series it counted (its bound goes on) */
    for (size_t i = set->nprov; rs->set != NULL && i < set->n; i++)
        for (size_t j = rs->set->nprov; j < rs->set->n; j++) {
            crule_t *o = &rs->set->v[j], *c = &set->v[i];
            if (strcmp(o->r.id, c->r.id) != 0 || o->r.generation != c->r.generation)
                continue;
            pthread_mutex_lock(&o->mu);
            seen_t t = c->seen;
            c->seen = o->seen;
            o->seen = t;
            c->dropped_logged = o->dropped_logged;
            pthread_mutex_unlock(&o->mu);
            break;
        }
    pthread_rwlock_wrlock(&rs->lock);
    ruleset_t *old = rs->set;
    rs->set = set;
    pthread_rwlock_unlock(&rs->lock);
    set_free(old);
}

ps_rules_t *ps_rules_new(void)
{
    ps_rules_t *rs = ps_xcalloc(1, sizeof(*rs));
    pthread_rwlock_init(&rs->lock, NULL);
    pthread_mutex_init(&rs->mu, NULL);
    rs->prov_arena = rs->stored_arena = rs->rec_arena = (ps_arena_t)PS_ARENA_INIT;
    pthread_mutex_lock(&rs->mu);
    rebuild(rs);
    pthread_mutex_unlock(&rs->mu);
    return rs;
}

void ps_rules_free(ps_rules_t *rs)
{
    if (rs == NULL)
        return;
    set_free(rs->set);
    ps_arena_dispose(&rs->prov_arena);
    ps_arena_dispose(&rs->stored_arena);
    ps_arena_dispose(&rs->rec_arena);
    pthread_rwlock_destroy(&rs->lock);
    pthread_mutex_destroy(&rs->mu);
    free(rs);
}

/* an id from the rule's content (a provisioned rule without one): the same rule, the same id */
static void content_id(const ps_rr_rule_t *r, char *out)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_append(&b, r->metric_name, strlen(r->metric_name) + 1);
    for (size_t i = 0; i < r->nmatchers; i++)
        ps_buf_append(&b, r->matchers[i], strlen(r->matchers[i]) + 1);
    for (size_t i = 0; i < r->ngroup_by; i++)
        ps_buf_append(&b, r->group_by[i], strlen(r->group_by[i]) + 1);
    for (size_t i = 0; i < r->next; i++) {
        ps_buf_append(&b, r->ext[i].name, strlen(r->ext[i].name) + 1);
        ps_buf_append(&b, r->ext[i].value, strlen(r->ext[i].value) + 1);
    }
    if (r->has_function)
        ps_buf_append(&b, r->function_name, strlen(r->function_name) + 1);
    uint64_t h1 = ps_hash64(b.data, b.len, 1), h2 = ps_hash64(b.data, b.len, 2);
    ps_buf_dispose(&b);
    for (int i = 0; i < ID_LEN; i++) {
        uint64_t *h = i < 6 ? &h1 : &h2;
        out[i] = alphabet[*h % 52];
        *h /= 52;
    }
    out[ID_LEN] = '\0';
}

int ps_rules_set_provisioned(ps_rules_t *rs, const ps_rr_rule_t *v, size_t n, ps_err_t *err)
{
    if (n > PS_RULES_MAX)
        return ps_err_set(err, PS_EINVAL, "recording_rules: %zu rules, more than %d", n, PS_RULES_MAX);
    ps_arena_t a = PS_ARENA_INIT;
    ps_rr_rule_t *nv = ps_arena_alloc(&a, (n + 1) * sizeof(*nv));
    for (size_t i = 0; i < n; i++) {
        copy_rule(&v[i], &a, &nv[i]);
        if (nv[i].id[0] == '\0') {
            char *id = ps_arena_alloc(&a, ID_LEN + 1);
            content_id(&nv[i], id);
            nv[i].id = id;
        }
        int ret = ps_rules_validate(&nv[i], false, &a, err);
        for (size_t j = 0; ret == 0 && j < i; j++)
            if (strcmp(nv[j].id, nv[i].id) == 0)
                ret = ps_err_set(err, PS_EINVAL, "id \"%s\" is also the id of recording_rules[%zu]", nv[i].id, j);
        if (ret != 0) {
            ps_arena_dispose(&a);
            return ps_err_prefix(err, "recording_rules[%zu]", i);
        }
    }
    pthread_mutex_lock(&rs->mu);
    ps_arena_dispose(&rs->prov_arena);
    rs->prov_arena = a;
    rs->prov = nv;
    rs->nprov = n;
    rebuild(rs);
    pthread_mutex_unlock(&rs->mu);
    return 0;
}

typedef struct load_ctx {
    ps_arena_t *a;
    ps_rr_rule_t *v;
    size_t n, cap;
} load_ctx_t;

static int on_stored(void *ctx, const ps_store_rule_t *sr)
{
    load_ctx_t *l = ctx;
    ps_rr_rule_t r;
    ps_err_t err;
    char *id = ps_arena_strndup(l->a, sr->id, sr->idlen);
    if (ps_rr_store_decode(sr->value, sr->vlen, l->a, &r, &err) != 0) {
        ps_log_warn("stored recording rule skipped", "id=%s err=%s", ps_log_q(id), ps_log_q(err.msg));
        return 0;
    }
    r.id = id;
    r.generation = sr->generation;
    if (ps_rules_validate(&r, false, l->a, &err) != 0) {
        ps_log_warn("stored recording rule skipped", "id=%s err=%s", ps_log_q(id), ps_log_q(err.msg));
        return 0;
    }
    if (l->n == l->cap) {
        l->cap = l->cap ? l->cap * 2 : 16;
        ps_rr_rule_t *nv = ps_arena_alloc(l->a, l->cap * sizeof(*nv));
        if (l->n)
            memcpy(nv, l->v, l->n * sizeof(*nv));
        l->v = nv;
    }
    l->v[l->n++] = r;
    return 0;
}

int ps_rules_reload(ps_rules_t *rs, ps_store_t *store, ps_err_t *err)
{
    ps_arena_t a = PS_ARENA_INIT;
    load_ctx_t l = {.a = &a};
    int ret = ps_store_rules(store, on_stored, &l, err);
    if (ret != 0) {
        ps_arena_dispose(&a);
        return ret;
    }
    pthread_mutex_lock(&rs->mu);
    ps_arena_dispose(&rs->stored_arena);
    rs->stored_arena = a;
    rs->stored = l.v;
    rs->nstored = l.n;
    rebuild(rs);
    pthread_mutex_unlock(&rs->mu);
    return 0;
}

void ps_rules_list(ps_rules_t *rs, ps_arena_t *arena, ps_rr_rule_t **v, size_t *n)
{
    pthread_rwlock_rdlock(&rs->lock);
    ruleset_t *set = rs->set;
    *v = ps_arena_alloc(arena, (set->n + 1) * sizeof(**v));
    for (size_t i = 0; i < set->n; i++)
        copy_rule(&set->v[i].r, arena, &(*v)[i]);
    *n = set->n;
    pthread_rwlock_unlock(&rs->lock);
}

int ps_rules_get(ps_rules_t *rs, const char *id, ps_arena_t *arena, ps_rr_rule_t *out, ps_err_t *err)
{
    int ret = PS_ENOTFOUND;
    pthread_rwlock_rdlock(&rs->lock);
    ruleset_t *set = rs->set;
    for (size_t i = 0; i < set->n && ret != 0; i++)
        if (strcmp(set->v[i].r.id, id) == 0) {
            copy_rule(&set->v[i].r, arena, out);
            ret = 0;
        }
    pthread_rwlock_unlock(&rs->lock);
    if (ret != 0) {
        char q1[512];
        ps_quote_string(q1, sizeof(q1), id, strlen(id), 200);
        ps_err_set(err, PS_ENOTFOUND, "no rule with id='%s' found", id);
    }
    return ret;
}

void ps_rules_encode(const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out)
{
    ps_rr_store_encode(r, arena, out);
}

void ps_rules_stats(ps_rules_t *rs, ps_rules_stats_t *st)
{
    pthread_rwlock_rdlock(&rs->lock);
    st->rules = (uint32_t)rs->set->n;
    st->provisioned = rs->set->nprov;
    pthread_rwlock_unlock(&rs->lock);
    st->evaluations = atomic_load(&rs->evaluations);
    st->samples = atomic_load(&rs->samples);
    st->series_dropped = atomic_load(&rs->dropped);
}

/* ---- evaluation (submitting threads) ---- */

/* the totals of every sample type of p into sum[ntypes]: each the sum of its samples' values in
 * sample order (the same double as a sum of that type alone) */
static void totals_of(const ps_profile_t *p, double *sum)
{
    for (uint32_t t = 0; t < p->ntypes; t++)
        sum[t] = 0;
    for (uint32_t i = 0; i < p->nsamples; i++)
        for (uint32_t t = 0; t < p->ntypes; t++)
            sum[t] += (double)p->samples[i].values[t];
}

/* the totals of every sample type (sum[ntypes]) of the samples whose stack holds a frame of
 * function fn, each sample counted once however often fn appears in it */
static void function_totals(const ps_profile_t *p, const char *fn, size_t fnlen, double *sum)
{
    for (uint32_t t = 0; t < p->ntypes; t++)
        sum[t] = 0;
    /* the marks on the stack when they fit (a profile has some hundreds of each) */
    enum { ON_STACK = 2048 };
    uint8_t fbuf[ON_STACK], lbuf[ON_STACK];
    bool fheap = p->nfunctions + 1 > ON_STACK, lheap = p->nlocations + 1 > ON_STACK;
    uint8_t *fhit = fheap ? calloc(p->nfunctions + 1, 1) : memset(fbuf, 0, p->nfunctions + 1);
    bool any = false;
    for (uint32_t f = 0; f < p->nfunctions; f++) {
        ps_str_t nm = ps_profile_str(p, p->functions[f].name);
        if (nm.len == fnlen && memcmp(nm.ptr, fn, fnlen) == 0) {
            fhit[f + 1] = 1;
            any = true;
        }
    }
    if (any) {
        uint8_t *lhit = lheap ? calloc(p->nlocations + 1, 1) : memset(lbuf, 0, p->nlocations + 1);
        for (uint32_t l = 0; l < p->nlocations; l++)
            for (uint32_t k = 0; k < p->locations[l].nlines; k++) {
                uint32_t f = p->locations[l].lines[k].function;
                if (f <= p->nfunctions && fhit[f])
                    lhit[l + 1] = 1;
            }
        for (uint32_t i = 0; i < p->nsamples; i++) {
            const ps_sample_t *s = &p->samples[i];
            for (uint32_t k = 0; k < s->nlocs; k++)
                if (s->locs[k] <= p->nlocations && lhit[s->locs[k]]) {
                    for (uint32_t t = 0; t < p->ntypes; t++)
                        sum[t] += (double)s->values[t];
                    break;
                }
        }
        if (lheap)
            free(lhit);
    }
    if (fheap)
        free(fhit);
}

static bool matches(crule_t *c, const ps_labels_t *ls)
{
    for (uint32_t i = 0; i < c->sel.n; i++) {
        ps_matcher_t *m = &c->sel.m[i];
        const ps_label_pair_t *p = ps_labels_get(ls, m->name);
        const char *v = p ? p->value : "";
        size_t vn = p ? p->vlen : 0;
        bool ok;
        if (m->op == PS_MATCH_EQ)
            ok = vn == m->vlen && memcmp(v, m->value, vn) == 0;
        else if (m->op == PS_MATCH_NEQ)
            ok = !(vn == m->vlen && memcmp(v, m->value, vn) == 0);
        else
            ok = ps_matcher_match(m, v, vn);
        if (!ok)
            return false;
    }
    return true;
}

/* a profile's totals, each computed when a rule first needs it: the plain one and, by name, those
 * of the rules' functions (rules that filter by the same function share one); every sample type
 * in one pass */
typedef struct totals {
    const ps_profile_t *prof;
    ps_arena_t *a;
    double inline_v[32]; /* the first totals' room (a profile has a few sample types) */
    uint32_t used;
    double *total;
    struct {
        const char *fn;
        double *v;
    } fc[8];
    uint32_t nfc;
} totals_t;

/* room for one set of totals (ntypes doubles) */
static double *totals_room(totals_t *tt)
{
    uint32_t n = tt->prof->ntypes;
    if (tt->used + n <= sizeof(tt->inline_v) / sizeof(tt->inline_v[0])) {
        tt->used += n;
        return tt->inline_v + tt->used - n;
    }
    return ps_arena_alloc(tt->a, (n + 1) * sizeof(double));
}

static double value_of(totals_t *tt, const crule_t *c, uint32_t ti)
{
    const ps_profile_t *prof = tt->prof;
    if (!c->r.has_function) {
        if (tt->total == NULL) {
            tt->total = totals_room(tt);
            totals_of(prof, tt->total);
        }
        return tt->total[ti];
    }
    for (uint32_t k = 0; k < tt->nfc; k++)
        if (strcmp(tt->fc[k].fn, c->r.function_name) == 0)
            return tt->fc[k].v[ti];
    double *fv = totals_room(tt);
    function_totals(prof, c->r.function_name, c->fnlen, fv);
    if (tt->nfc < 8) {
        tt->fc[tt->nfc].fn = c->r.function_name;
        tt->fc[tt->nfc++].v = fv;
    }
    return fv[ti];
}

/* The cache entry of a profile series of labels ls under set, into e: the rules that match it and
 * their recorded series, each entered in its rule's seen set (or dropped, the rule being full) as
 * the first contribution to it did before the cache. */
static void series_entry(ruleset_t *set, const ps_labels_t *ls, ps_arena_t *a, ps_buf_t *e)
{
    ps_buf_t keys = PS_BUF_INIT;
    ps_buf_reset(e);
    ps_buf_reserve(e, sizeof(ecount_t));
    e->len = sizeof(ecount_t);
    uint32_t n = 0;
    for (size_t i = 0; i < set->n; i++) {
        crule_t *c = &set->v[i];
        bool ok;
        if (c->has_re) {
            pthread_mutex_lock(&c->mu);
            ok = matches(c, ls);
            pthread_mutex_unlock(&c->mu);
        } else {
            ok = matches(c, ls);
        }
        if (!ok)
            continue;
        ps_labels_t o = ps_labels_borrow(&c->base);
        for (size_t g = 0; g < c->r.ngroup_by; g++) {
            const char *gn = c->r.group_by[g];
            if (strcmp(gn, "__name__") == 0 || strcmp(gn, RULE_ID_LABEL) == 0)
                continue;
            const ps_label_pair_t *p = ps_labels_get(ls, strcmp(gn, "__profile_type__") == 0 ? "__name__" : gn);
            if (p != NULL)
                ps_labels_set(&o, a, gn, strlen(gn), p->value, p->vlen);
        }
        size_t at = keys.len;
        ps_labels_encode(&o, &keys);
        uint32_t klen = (uint32_t)(keys.len - at);
        uint64_t h = ps_hash64(keys.data + at, klen, 0);
        bool drop = false;
        pthread_mutex_lock(&c->mu);
        if (!seen_has(&c->seen, h)) {
            if (c->seen.n >= PS_RULE_SERIES_MAX) {
                drop = true;
                if (!c->dropped_logged)
                    ps_log_warn("recording rule has the most series there may be: contributions to new ones are dropped",
                                "id=%s series=%d", ps_log_q(c->r.id), PS_RULE_SERIES_MAX);
                c->dropped_logged = true;
            } else {
                seen_add(&c->seen, h);
            }
        }
        pthread_mutex_unlock(&c->mu);
        econtrib_t ec = {(uint32_t)i, klen, (uint32_t)at, drop, h};
        ps_buf_append(e, &ec, sizeof(ec));
        n++;
    }
    uint32_t base = (uint32_t)e->len;
    for (uint32_t k = 0; k < n; k++) {
        econtrib_t *ec = (econtrib_t *)(e->data + sizeof(ecount_t)) + k;
        ec->koff += base;
    }
    ps_buf_append(e, keys.data, keys.len);
    ecount_t hd = {n, (uint32_t)e->len};
    memcpy(e->data, &hd, sizeof(hd));
    ps_buf_dispose(&keys);
}

/* ls's entry from set's cache into e; false if it has none */
static bool cache_get(ecache_t *ec, const ps_buf_t *key, ps_buf_t *e)
{
    uint64_t v;
    pthread_mutex_lock(&ec->mu);
    bool found = ps_hmap_get(&ec->index, key->data, key->len, &v);
    if (found) {
        const uint8_t *ent = (const uint8_t *)(uintptr_t)v;
        ecount_t hd;
        memcpy(&hd, ent, sizeof(hd));
        ps_buf_reset(e);
        ps_buf_append(e, ent, hd.bytes);
    }
    pthread_mutex_unlock(&ec->mu);
    return found;
}

static void cache_put(ecache_t *ec, const ps_buf_t *key, const ps_buf_t *e)
{
    pthread_mutex_lock(&ec->mu);
    if (ps_hmap_bytes(&ec->index) + ec->arena.used_total + key->len + e->len > EVAL_CACHE_BYTES) {
        ps_hmap_clear(&ec->index);
        ps_arena_dispose(&ec->arena);
    }
    uint8_t *ent = ps_arena_alloc(&ec->arena, e->len);
    memcpy(ent, e->data, e->len);
    ps_hmap_put(&ec->index, key->data, key->len, (uint64_t)(uintptr_t)ent);
    pthread_mutex_unlock(&ec->mu);
}

void ps_rules_eval(ps_rules_t *rs, const ps_append_t *app, ps_buf_t *out)
{
    if (app->profile == NULL)
        return;
    pthread_rwlock_rdlock(&rs->lock);
    ruleset_t *set = rs->set;
    if (set->n == 0) {
        pthread_rwlock_unlock(&rs->lock);
        return;
    }
    ps_arena_t a = PS_ARENA_INIT;
    ps_buf_t key = PS_BUF_INIT, e = PS_BUF_INIT;
    int64_t t = ps_ns_to_ms_floor(app->ts);
    uint64_t nmatched = 0, ndropped = 0;
    totals_t tt = {.prof = app->profile, .a = &a};
    for (uint32_t j = 0; j < app->nseries; j++) {
        const ps_labels_t *ls = &app->series_labels[j];
        uint32_t ti = app->type_index[j];
        if (ti >= app->profile->ntypes)
            continue;
        ps_buf_reset(&key);
        ps_labels_encode(ls, &key);
        if (!cache_get(&set->cache, &key, &e)) {
            series_entry(set, ls, &a, &e);
            cache_put(&set->cache, &key, &e);
        }
        ecount_t hd;
        memcpy(&hd, e.data, sizeof(hd));
        nmatched += hd.n;
        for (uint32_t k = 0; k < hd.n; k++) {
            econtrib_t ec;
            memcpy(&ec, e.data + sizeof(ecount_t) + k * sizeof(econtrib_t), sizeof(ec));
            if (ec.drop) {
                ndropped++;
                continue;
            }
            double v = value_of(&tt, &set->v[ec.rule], ti);
            /* the contribution: klen | labels | h | t | v */
            uint8_t *q = ps_buf_reserve(out, sizeof(uint32_t) + ec.klen + 24);
            memcpy(q, &ec.klen, sizeof(uint32_t));
            memcpy(q + sizeof(uint32_t), e.data + ec.koff, ec.klen);
            q += sizeof(uint32_t) + ec.klen;
            memcpy(q, &ec.h, 8);
            memcpy(q + 8, &t, 8);
            memcpy(q + 16, &v, 8);
            out->len += sizeof(uint32_t) + ec.klen + 24;
        }
    }
    pthread_rwlock_unlock(&rs->lock);
    if (nmatched)
        atomic_fetch_add(&rs->evaluations, nmatched);
    if (ndropped)
        atomic_fetch_add(&rs->dropped, ndropped);
    ps_buf_dispose(&key);
    ps_buf_dispose(&e);
    ps_arena_dispose(&a);
}

/* ---- recording (the writer thread, inside the write's transaction) ---- */

typedef struct group {
    const uint8_t *key;
    uint32_t klen;
    uint64_t h;
    ps_float_sample_t *s;
    uint32_t n, cap;
} group_t;

static int by_t(const void *a, const void *b)
{
    const ps_float_sample_t *x = a, *y = b;
    return x->t < y->t ? -1 : x->t > y->t;
}

void ps_rules_record(void *ctx, ps_append_t *const *items, size_t n, ps_float_append_t ***out, size_t *nout)
{
    ps_rules_t *rs = ctx;
    ps_arena_t *a = &rs->rec_arena;
    ps_arena_reset(a);
    *out = NULL;
    *nout = 0;
    /* the groups by the labels' hash (made by ps_rules_eval), the labels compared: slot = group
     * index + 1, 0 empty */
    uint32_t *idx = NULL, capi = 0;
    group_t *g = NULL;
    size_t ng = 0, capg = 0;
    for (size_t i = 0; i < n; i++) {
        const ps_append_t *it = items[i];
        if (it->status != 0 || it->duplicate || it->rec_len == 0)
            continue;
        const uint8_t *p = it->rec, *end = it->rec + it->rec_len;
        while ((size_t)(end - p) >= sizeof(uint32_t)) {
            uint32_t klen;
            memcpy(&klen, p, sizeof(klen));
            p += sizeof(klen);
            if ((size_t)(end - p) < (size_t)klen + 24)
                break; /* made by ps_rules_eval: not expected */
            const uint8_t *key = p;
            p += klen;
            uint64_t h;
            ps_float_sample_t s;
            memcpy(&h, p, 8);
            memcpy(&s.t, p + 8, 8);
            memcpy(&s.v, p + 16, 8);
            p += 24;
            if ((ng + 1) * 2 > capi) { /* at most half full */
                uint32_t nc = capi ? capi * 2 : 64;
                uint32_t *ni = ps_xcalloc(nc, sizeof(*ni));
                for (size_t k = 0; k < ng; k++) {
                    uint32_t j = (uint32_t)g[k].h & (nc - 1);
                    while (ni[j] != 0)
                        j = (j + 1) & (nc - 1);
                    ni[j] = (uint32_t)k + 1;
                }
                free(idx);
                idx = ni;
                capi = nc;
            }
            uint32_t j = (uint32_t)h & (capi - 1);
            while (idx[j] != 0 && !(g[idx[j] - 1].h == h && g[idx[j] - 1].klen == klen &&
                                    memcmp(g[idx[j] - 1].key, key, klen) == 0))
                j = (j + 1) & (capi - 1);
            if (idx[j] == 0) {
                if (ng == capg) {
                    capg = capg ? capg * 2 : 16;
                    g = ps_xrealloc(g, capg * sizeof(*g));
                }
                g[ng] = (group_t){key, klen, h, NULL, 0, 0};
                idx[j] = (uint32_t)++ng;
            }
            group_t *gr = &g[idx[j] - 1];
            if (gr->n == gr->cap) {
                uint32_t nc = gr->cap ? gr->cap * 2 : 4;
                ps_float_sample_t *ns = ps_arena_alloc(a, nc * sizeof(*ns));
                if (gr->n)
                    memcpy(ns, gr->s, gr->n * sizeof(*ns));
                gr->s = ns;
                gr->cap = nc;
            }
            gr->s[gr->n++] = s;
        }
    }
    if (ng > 0) {
        ps_float_append_t **pv = ps_arena_alloc(a, ng * sizeof(*pv));
        ps_float_append_t *fv = ps_arena_alloc(a, ng * sizeof(*fv)); /* each made below (not its err's text) */
        size_t nf = 0;
        uint64_t nsamples = 0;
        for (size_t k = 0; k < ng; k++) {
            group_t *gr = &g[k];
            ps_labels_t *ls = ps_arena_alloc(a, sizeof(*ls));
            if (ps_labels_decode(gr->key, gr->klen, a, ls) != 0)
                continue;
            qsort(gr->s, gr->n, sizeof(*gr->s), by_t);
            uint32_t m = 0; /* contributions at the same ms: one sample */
            for (uint32_t j = 0; j < gr->n; j++) {
                if (m > 0 && gr->s[m - 1].t == gr->s[j].t)
                    gr->s[m - 1].v += gr->s[j].v;
                else
                    gr->s[m++] = gr->s[j];
            }
            ps_float_append_t *fa = &fv[nf];
            memset(fa, 0, offsetof(ps_float_append_t, err));
            ps_err_clear(&fa->err);
            memset(&fa->sid, 0, sizeof(*fa) - offsetof(ps_float_append_t, sid));
            fa->labels = ls;
            fa->samples = gr->s;
            fa->nsamples = m;
            fa->counter = true;
            fa->key = gr->key;
            fa->klen = gr->klen;
            fa->key_hash = gr->h;
            pv[nf] = &fv[nf];
            nf++;
            nsamples += m;
        }
        *out = pv;
        *nout = nf;
        atomic_fetch_add(&rs->samples, nsamples);
    }
    free(g);
    free(idx);
}
