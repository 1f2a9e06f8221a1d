/*
 * promql_eval.c - the PromQL engine (see promql_eval.h): a plan of the tree with every selector's series
 * loaded once, then the tree evaluated at each step into an instant vector whose elements are
 * gathered into the answer's series. Each part follows the Prometheus 2.42 function named in its
 * comment (promql/engine.go unless said otherwise), in the same order of float operations.
 */
#include "promql_int.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/budget.h"
#include "core/fmt.h"
#include "core/hash.h"
#include "core/sat.h"
#include "core/timeutil.h"
#include "parser/labels.h"

#define MAX_SAMPLES_MSG "query processing would load too many samples into memory in query execution"

void ps_pq_opts_default(ps_pq_opts_t *o)
{
    memset(o, 0, sizeof(*o));
    o->lookback = 5 * 60 * 1000;
    o->max_samples = 50000000;
    o->max_points = 11000;
    o->timeout = 2 * 60 * 1000;
    o->subquery_step = 60 * 1000;
    o->compat = 3;
}

/* ---- small things ---- */

void pq_annotate(pq_ctx_t *c, bool warn, uint32_t pos, const char *fmt, ...)
{
    if (!c->open)
        return;
    char msg[512];
    int n = snprintf(msg, sizeof(msg), "PromQL %s: ", warn ? "warning" : "info");
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg + n, sizeof(msg) - (size_t)n, fmt, ap);
    va_end(ap);
    for (uint32_t i = 0; i < c->nannots; i++)
        if (strcmp(c->annots[i].msg, msg) == 0)
            return;
    if (c->nannots == PS_PQ_MAX_ANNOTS) {
        c->nannots_dropped++;
        return;
    }
    if (c->annots == NULL)
        c->annots = ps_arena_alloc(c->arena, PS_PQ_MAX_ANNOTS * sizeof(ps_pq_annot_t));
    c->annots[c->nannots++] = (ps_pq_annot_t){warn, ps_arena_strndup(c->arena, msg, strlen(msg)), pos};
}

void pq_go_quote(const char *s, char *buf, size_t size)
{
    ps_quote_string(buf, size, s, strlen(s), size > 8 ? size - 8 : 0);
}

/* Go's fmt %v of a float64 (strconv's 'g' with the shortest digits: exponent form below 1e-4 and
 * from 1e6 on): "1e+19", "123456.7", "NaN", "+Inf"; Prometheus' "Scalar value %v ..." messages. */
void pq_go_fmt_v(double v, char *b, size_t size)
{
    if (isnan(v) || isinf(v)) {
        snprintf(b, size, "%s", isnan(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf");
        return;
    }
    char e[40];
    int prec = 1;
    for (; prec < 17; prec++) {
        snprintf(e, sizeof(e), "%.*e", prec - 1, v);
        if (strtod(e, NULL) == v)
            break;
    }
    snprintf(e, sizeof(e), "%.*e", prec - 1, v);
    int exp = atoi(strchr(e, 'e') + 1);
    if (exp < -4 || exp >= 6)
        snprintf(b, size, "%s", e);
    else
        snprintf(b, size, "%.*f", prec - 1 - exp > 0 ? prec - 1 - exp : 0, v);
}

static bool is_stale(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b == PQ_STALE_BITS;
}

int pq_tick(pq_ctx_t *c)
{
    if ((++c->ticks & 255) != 0)
        return 0;
    if (c->deadline != 0 && ps_time_mono() > c->deadline)
        return ps_err_set(c->err, PS_ETIMEOUT, "query timed out in query execution (the limit is %lld s: the timeout "
                          "parameter or %s)", (long long)(c->o->timeout / 1000),
                          ps_setting_name(PS_SETTING_QUERY_TIMEOUT));
    int ret = pq_mem_check(c);
    return ret ? ret : ps_budget_check_now(c->err); /* the query pool's: the client went away, its deadline */
}

int pq_mem_check(pq_ctx_t *c)
{
    uint64_t max = c->o->max_memory;
    if (max == 0)
        return 0;
    uint64_t used = c->mem + c->mem_scratch + c->scratch.used_total;
    if (c->arena->used_total > c->arena_base)
        used += c->arena->used_total - c->arena_base;
    if (used <= max)
        return 0;
    return ps_err_set(c->err, PS_ELIMIT, "query processing would use too much memory in query execution (the limit "
                      "is %llu MiB, %s)", (unsigned long long)(max >> 20), ps_setting_name(PS_SETTING_QUERY_MAX_MEMORY));
}

static bool in_names(const char *name, const char **names, uint32_t n)
{
    for (uint32_t i = 0; i < n; i++) /* the first bytes first: this runs for every label at every step */
        if (names[i][0] == name[0] && strcmp(names[i], name) == 0)
            return true;
    return false;
}

static bool is_name_label(const ps_label_pair_t *p)
{
    return p->nlen == 8 && memcmp(p->name, "__name__", 8) == 0;
}

/* labels.HashForLabels (on) / HashWithoutLabels (not on; __name__ always left out), as bytes. */
static void key_sig(ps_buf_t *b, const ps_labels_t *ls, bool on, const char **names, uint32_t n)
{
    ps_buf_reset(b);
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        bool listed = in_names(p->name, names, n);
        if (on ? listed : !listed && !is_name_label(p))
            pq_key_pair(b, p);
    }
}

/* A new label set of ls's pairs for which keep() holds, in the scratch arena. */
static ps_labels_t labels_filter(pq_ctx_t *c, const ps_labels_t *ls, bool on, const char **names, uint32_t n,
                                 bool drop_name)
{
    ps_labels_t out = {0, ps_arena_alloc(&c->scratch, (ls->n + 1) * sizeof(ps_label_pair_t)), 0};
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        bool listed = in_names(p->name, names, n);
        if (drop_name && is_name_label(p))
            continue;
        if (on ? listed : !listed)
            out.pairs[out.n++] = *p;
    }
    out.cap = ls->n + 1;
    return out;
}

/* first index in [lo, n) with s[i].t >= t (or, upper: > t) */
static uint32_t search_t(const ps_pq_series_t *s, uint32_t lo, int64_t t, bool upper)
{
    uint32_t hi = s->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (upper ? s->s[mid].t <= t : s->s[mid].t < t)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* search_t from *hint when the answer cannot lie before it (time went forward since): a few
 * steps forward (a step's worth of samples, mostly), else a binary search of the rest; *hint
 * gets the answer. Without a hint, or when time went back, a binary search of everything. */
static uint32_t search_t_hint(const ps_pq_series_t *s, int64_t t, bool upper, uint32_t *hint)
{
    uint32_t i = 0;
    if (hint != NULL && *hint <= s->n && (*hint == 0 || (upper ? s->s[*hint - 1].t <= t : s->s[*hint - 1].t < t))) {
        i = *hint;
        for (uint32_t k = 0; i < s->n && (upper ? s->s[i].t <= t : s->s[i].t < t); i++)
            if (++k == 16) {
                i = search_t(s, i, t, upper);
                break;
            }
    } else {
        i = search_t(s, 0, t, upper);
    }
    if (hint != NULL)
        *hint = i;
    return i;
}

/* matrixIterSlice: mint <= t <= maxt, stale markers left out. */
uint32_t pq_window(pq_ctx_t *c, const ps_pq_series_t *s, int64_t mint, int64_t maxt, uint32_t *hint,
                   const ps_float_sample_t **out)
{
    uint32_t lo = search_t_hint(s, mint, false, hint), hi = lo;
    bool stale = false;
    while (hi < s->n && s->s[hi].t <= maxt) /* the window's samples are read next anyway */
        stale |= is_stale(s->s[hi++].v);
    if (hi == lo) {
        *out = NULL;
        return 0;
    }
    if (!stale) {
        *out = s->s + lo;
        return hi - lo;
    }
    uint32_t n = 0;
    ps_float_sample_t *w = ps_arena_alloc(&c->scratch, (hi - lo) * sizeof(ps_float_sample_t));
    for (uint32_t i = lo; i < hi; i++)
        if (!is_stale(s->s[i].v))
            w[n++] = s->s[i];
    *out = w;
    return n;
}

/* ---- plan ---- */

static int cmp_series(const void *a, const void *b)
{
    return ps_labels_cmp(&((const ps_pq_series_t *)a)->labels, &((const ps_pq_series_t *)b)->labels);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

static const ps_pq_node_t *unparen(const ps_pq_node_t *n)
{
    while (n->kind == PS_PQ_PAREN)
        n = n->expr;
    return n;
}

/* A range, step or offset of the query: the node's own field, or its duration expression (Prometheus
 * 3's "x[1h / 2]", "offset step()") computed for the query's step and range. */
static int dur_ms(pq_ctx_t *c, const ps_pq_node_t *expr, int64_t given, bool allow_negative, int64_t *out)
{
    if (expr == NULL) {
        *out = given;
        return 0;
    }
    return ps_pq_duration_ms(expr, c->o->step, c->o->end - c->o->start, allow_negative, out, c->err);
}

/* offset and @ of a selector or subquery node n into s; [*lo, *hi]: the times it is evaluated at */
static int time_mods(pq_ctx_t *c, const ps_pq_node_t *n, pq_sel_t *s, int64_t *lo, int64_t *hi)
{
    const ps_pq_opts_t *o = c->o;
    int ret = dur_ms(c, n->offset_expr, n->offset_ms, true, &s->offset);
    if (ret)
        return ret;
    s->has_at = n->at != PS_PQ_AT_NONE;
    s->at = n->at == PS_PQ_AT_START ? o->start : n->at == PS_PQ_AT_END ? o->end : n->at_ms;
    if (s->has_at)
        *lo = *hi = s->at;
    return 0;
}

/* Loads a selector's series for evaluations at times in [lo, hi]. */
static int load_selector(pq_ctx_t *c, const ps_pq_node_t *vs, int64_t range, pq_sel_t *s, int64_t lo, int64_t hi)
{
    const ps_pq_opts_t *o = c->o;
    s->range = range;
    int ret = time_mods(c, vs, s, &lo, &hi);
    if (ret)
        return ret;
    int64_t mint = ps_sat_sub(ps_sat_sub(lo, s->offset), range ? range : o->lookback), maxt = ps_sat_sub(hi, s->offset);
    /* getTimeRangesForSelector: an anchored or smoothed range reaches a lookback further back, a
     * smoothed range or instant selector a lookback further forward */
    if (range && (vs->anchored || vs->smoothed))
        mint = ps_sat_sub(mint, o->lookback);
    if (vs->smoothed)
        maxt = ps_sat_add(maxt, o->lookback);
    ret = c->src->select(c->src->ctx, (ps_selector_t *)&vs->sel, mint, maxt, c->arena, &c->budget, &s->series,
                         &s->n, c->err);
    if (ret || (ret = pq_mem_check(c)) != 0)
        return ret;
    /* sorted by labels: the order of Prometheus' blocks, and of its head too when series were
     * created in exposition order (client_golang sorts); order-dependent answers (ties in topk,
     * rounding in sums) then come out as Prometheus' */
    if (s->n > 1)
        qsort(s->series, s->n, sizeof(ps_pq_series_t), cmp_series);
    s->noname = ps_arena_alloc(c->arena, (s->n + 1) * sizeof(ps_labels_t));
    s->hint = ps_arena_calloc(c->arena, s->n + 1, sizeof(uint32_t));
    for (uint32_t i = 0; i < s->n; i++)
        s->noname[i] = pq_drop_name_in(c->arena, &s->series[i].labels);
    return 0;
}

static const char **sorted_names(pq_ctx_t *c, const char **names, uint32_t n)
{
    const char **v = ps_arena_alloc(c->arena, (n + 1) * sizeof(char *));
    if (n)
        memcpy(v, names, n * sizeof(char *));
    if (n > 1)
        qsort(v, n, sizeof(char *), cmp_cstr);
    return v;
}

/* The functions Prometheus 3.16 lets take an anchored or a smoothed range (functions.go's
 * AnchoredSafeFunctions, SmoothedSafeFunctions): the others would see samples outside the range. */
static int check_extended(pq_ctx_t *c, const ps_pq_func_t *f, const ps_pq_node_t *vs)
{
    bool rate = f->id == PS_FN_RATE || f->id == PS_FN_INCREASE || f->id == PS_FN_DELTA;
    if (vs->anchored && !rate && f->id != PS_FN_RESETS && f->id != PS_FN_CHANGES)
        return ps_err_set(c->err, PS_ELIMIT,
                          "anchored modifier can only be used with: changes, delta, increase, rate, resets - "
                          "not with %s",
                          f->name);
    if (vs->smoothed && !rate)
        return ps_err_set(c->err, PS_ELIMIT,
                          "smoothed modifier can only be used with: delta, increase, rate - not with %s", f->name);
    return 0;
}

/* Plans n for evaluations at times in [lo, hi] (a subquery moves the window of what is below it). */
static int plan(pq_ctx_t *c, const ps_pq_node_t *n, pq_node_t **out, int depth, int64_t lo, int64_t hi)
{
    if (depth > 1000)
        return ps_err_set(c->err, PS_ELIMIT, "the expression is nested too deeply");
    pq_node_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    p->n = n;
    p->matrix_arg = -1;
    ps_hmap_init(&p->m1);
    ps_hmap_init(&p->m2);
    ps_hmap_init(&p->m3);
    p->next_all = c->all;
    c->all = p;
    *out = p;
    int ret = 0;
    switch (n->kind) {
    case PS_PQ_NUMBER:
    case PS_PQ_STRING:
    case PS_PQ_DURATION: /* only under range_expr, step_expr and offset_expr, never planned */
        return 0;
    case PS_PQ_VECTOR:
        return load_selector(c, n, 0, &p->sel, lo, hi);
    case PS_PQ_MATRIX: {
        int64_t range;
        if ((ret = dur_ms(c, n->range_expr, n->range_ms, false, &range)) != 0)
            return ret;
        return load_selector(c, n->expr, range, &p->sel, lo, hi);
    }
    case PS_PQ_SUBQUERY: {
        /* the inner expression runs at the multiples of the step in [lo - offset - range, hi - offset] */
        int64_t step;
        if ((ret = time_mods(c, n, &p->sel, &lo, &hi)) != 0 ||
            (ret = dur_ms(c, n->range_expr, n->range_ms, false, &p->sel.range)) != 0 ||
            (ret = dur_ms(c, n->step_expr, n->step_ms, false, &step)) != 0)
            return ret;
        p->sq_step = step > 0 ? step : c->o->subquery_step;
        p->sq_start = INT64_MIN;
        return plan(c, n->expr, &p->a, depth + 1, ps_sat_sub(ps_sat_sub(lo, p->sel.offset), p->sel.range),
                    ps_sat_sub(hi, p->sel.offset));
    }
    case PS_PQ_PAREN:
    case PS_PQ_UNARY:
        return plan(c, n->expr, &p->a, depth + 1, lo, hi);
    case PS_PQ_AGG:
        p->names = sorted_names(c, n->group, n->ngroup);
        p->nnames = n->ngroup;
        if ((ret = plan(c, n->expr, &p->a, depth + 1, lo, hi)) == 0 && n->param)
            ret = plan(c, n->param, &p->b, depth + 1, lo, hi);
        return ret;
    case PS_PQ_BINARY:
        if (n->matching) {
            p->names = sorted_names(c, n->matching->labels, n->matching->nlabels);
            p->nnames = n->matching->nlabels;
        }
        if ((ret = plan(c, n->lhs, &p->a, depth + 1, lo, hi)) == 0)
            ret = plan(c, n->rhs, &p->b, depth + 1, lo, hi);
        return ret;
    case PS_PQ_CALL:
        p->nargs = n->nargs;
        p->args = ps_arena_calloc(c->arena, n->nargs + 1, sizeof(pq_node_t *));
        if ((ret = pq_call_plan(c, p)) != 0)
            return ret;
        for (uint32_t i = 0; i < n->nargs && ret == 0; i++) {
            if (n->args[i]->type == PS_PQ_VMATRIX) {
                const ps_pq_node_t *m = unparen(n->args[i]);
                p->matrix_arg = (int)i;
                if (m->kind == PS_PQ_MATRIX && (ret = check_extended(c, n->func, m->expr)) != 0)
                    return ret;
                ret = plan(c, m, &p->args[i], depth + 1, lo, hi);
            } else {
                ret = plan(c, n->args[i], &p->args[i], depth + 1, lo, hi);
            }
        }
        return ret;
    }
    return ps_err_set(c->err, PS_EINTERNAL, "unknown node kind %d", (int)n->kind);
}

/* ---- selectors ---- */

/* smoothSeries (Prometheus 3.16), for every series: the value at ref interpolated between the samples
 * around it within a lookback either side, or the last one before it when none follows; none when no
 * sample lies at or before ref. An element's time is its last sample's at or before ref (what
 * timestamp() of the selector answers). */
static int eval_smoothed(pq_ctx_t *c, pq_node_t *p, int64_t ref, pq_val_t *out)
{
    const pq_sel_t *s = &p->sel;
    int64_t lb = c->o->lookback;
    for (uint32_t i = 0; i < s->n; i++) {
        const ps_float_sample_t *w;
        uint32_t k = pq_window(c, &s->series[i], ps_sat_add(ps_sat_sub(ref, lb), 1), ps_sat_add(ref, lb),
                               s->hint ? &s->hint[i] : NULL, &w);
        uint32_t j = 0;
        while (j < k && w[j].t < ref)
            j++;
        double v;
        int64_t t;
        if (j < k && w[j].t == ref) {
            v = w[j].v;
            t = ref;
        } else if (j > 0 && j < k) {
            v = pq_interpolate(w[j - 1], w[j], ref, false);
            t = w[j - 1].t;
        } else if (j > 0) {
            v = w[j - 1].v;
            t = w[j - 1].t;
        } else {
            continue;
        }
        out->v.e[out->v.n++] = (pq_elem_t){ps_labels_borrow(&s->series[i].labels), v, t, 0};
    }
    return 0;
}

/* vectorSelectorSingle, for every series */
static int eval_vector(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    const pq_sel_t *s = &p->sel;
    int64_t ref = ps_sat_sub(s->has_at ? s->at : ts, s->offset);
    if (p->n->smoothed) {
        out->type = PS_PQ_VVECTOR;
        out->v = pq_vec_new(c, s->n);
        return eval_smoothed(c, p, ref, out);
    }
    int64_t from = ps_sat_add(ps_sat_sub(ref, c->o->lookback), c->open); /* 3: (from - 1, ref]; 2.42: [from, ref] */
    out->type = PS_PQ_VVECTOR;
    out->v = pq_vec_new(c, s->n);
    for (uint32_t i = 0; i < s->n; i++) {
        const ps_pq_series_t *ser = &s->series[i];
        uint32_t k = search_t_hint(ser, ref, true, s->hint ? &s->hint[i] : NULL);
        if (k == 0)
            continue;
        const ps_float_sample_t *x = &ser->s[k - 1];
        if (x->t < from || is_stale(x->v))
            continue;
        out->v.e[out->v.n++] = (pq_elem_t){ps_labels_borrow(&ser->labels), x->v, x->t, 0};
    }
    return 0;
}

/* ---- binary operators ---- */

/* Go's math.Pow for integer exponents (repeated squaring on the mantissa, as Go computes it);
 * the C library's pow for the rest. */
static double go_pow(double x, double y)
{
    if (y == 0 || x == 1)
        return 1;
    if (y == 1)
        return x;
    if (isnan(x) || isnan(y))
        return NAN;
    if (x == 0 || isinf(x) || isinf(y) || y == 0.5 || y == -0.5 || fabs(y) >= 9007199254740992.0)
        return y == 0.5 ? sqrt(x) : y == -0.5 ? 1 / sqrt(x) : pow(x, y);
    double yi, yf = modf(fabs(y), &yi);
    if (yf != 0)
        return pow(x, y);
    double a1 = 1;
    int ae = 0, xe;
    double x1 = frexp(x, &xe);
    for (int64_t i = (int64_t)yi; i != 0; i >>= 1) {
        if (xe < -(1 << 12) || (1 << 12) < xe) {
            ae += xe;
            break;
        }
        if (i & 1) {
            a1 *= x1;
            ae += xe;
        }
        x1 *= x1;
        xe *= 2; /* Go's xe <<= 1; a negative xe shifted is undefined in C */
        if (x1 < .5) {
            x1 += x1;
            xe--;
        }
    }
    if (y < 0) {
        a1 = 1 / a1;
        ae = -ae;
    }
    return ldexp(a1, ae);
}

static bool is_comparison(ps_pq_binop_t op)
{
    return op >= PS_PQ_EQLC && op <= PS_PQ_GTE;
}

/* shouldDropMetricName (2.42), changesMetricSchema (Prometheus 3: atan2 too) */
static bool drops_name(const pq_ctx_t *c, ps_pq_binop_t op)
{
    return op == PS_PQ_ADD || op == PS_PQ_SUB || op == PS_PQ_MUL || op == PS_PQ_DIV || op == PS_PQ_POW ||
           op == PS_PQ_MOD || (op == PS_PQ_ATAN2 && c->open);
}

/* vectorElemBinop: the value, and whether a comparison keeps the element */
static double elem_binop(ps_pq_binop_t op, double l, double r, bool *keep)
{
    *keep = true;
    switch (op) {
    case PS_PQ_ADD: return l + r;
    case PS_PQ_SUB: return l - r;
    case PS_PQ_MUL: return l * r;
    case PS_PQ_DIV: return l / r;
    case PS_PQ_POW: return go_pow(l, r);
    case PS_PQ_MOD: return fmod(l, r);
    case PS_PQ_ATAN2: return atan2(l, r);
    case PS_PQ_EQLC: *keep = l == r; return l;
    case PS_PQ_NEQ: *keep = l != r; return l;
    case PS_PQ_GTR: *keep = l > r; return l;
    case PS_PQ_LSS: *keep = l < r; return l;
    case PS_PQ_GTE: *keep = l >= r; return l;
    case PS_PQ_LTE: *keep = l <= r; return l;
    default: *keep = false; return 0;
    }
}

/* scalarBinop */
static double scalar_binop(ps_pq_binop_t op, double l, double r)
{
    bool keep;
    double v = elem_binop(op, l, r, &keep);
    return is_comparison(op) ? (keep ? 1 : 0) : v;
}

/* VectorscalarBinop */
static void vector_scalar(pq_ctx_t *c, ps_pq_binop_t op, const pq_vec_t *lhs, double rhs, bool swap, bool rbool,
                          int64_t ts, pq_vec_t *out)
{
    *out = pq_vec_new(c, lhs->n);
    for (uint32_t i = 0; i < lhs->n; i++) {
        double lv = lhs->e[i].v, rv = rhs;
        if (swap) {
            lv = rhs;
            rv = lhs->e[i].v;
        }
        bool keep;
        double value = elem_binop(op, lv, rv, &keep);
        if (is_comparison(op) && swap)
            value = rv;
        if (rbool) {
            value = keep ? 1 : 0;
            keep = true;
        }
        if (!keep)
            continue;
        pq_elem_t e = lhs->e[i];
        e.v = value;
        e.t = ts;
        e.src = 0;
        if (drops_name(c, op) || rbool)
            e.ls = pq_drop_name(c, &e.ls);
        out->e[out->n++] = e;
    }
}

/* resultMetric */
static ps_labels_t result_metric(pq_ctx_t *c, const ps_labels_t *lhs, const ps_labels_t *rhs, ps_pq_binop_t op,
                                 const ps_pq_matching_t *m, pq_node_t *p)
{
    ps_labels_t ls;
    if (m->card == PS_PQ_ONE_TO_ONE)
        ls = labels_filter(c, lhs, m->on, p->names, p->nnames, drops_name(c, op));
    else
        ls = labels_filter(c, lhs, false, NULL, 0, drops_name(c, op));
    for (uint32_t i = 0; i < m->ninclude; i++) {
        const char *v = ps_labels_value(rhs, m->include[i]);
        if (v == NULL)
            v = "";
        ps_labels_set(&ls, &c->scratch, m->include[i], strlen(m->include[i]), v, strlen(v));
    }
    return ls;
}

static void fmt_labels(const ps_labels_t *ls, char *buf, size_t size)
{
    ps_buf_t b = PS_BUF_INIT;
    ps_labels_format(ls, &b);
    snprintf(buf, size, "%.*s", (int)b.len, b.data ? (const char *)b.data : "");
    ps_buf_dispose(&b);
}

/* VectorBinop: one-to-one, many-to-one, one-to-many */
static int vector_binop(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *lhs0, const pq_vec_t *rhs0, int64_t ts,
                        pq_vec_t *out)
{
    const ps_pq_node_t *n = p->n;
    const ps_pq_matching_t *m = n->matching;
    *out = pq_vec_new(c, lhs0->n > rhs0->n ? lhs0->n : rhs0->n);
    if (lhs0->n == 0 || rhs0->n == 0)
        return 0;
    const pq_vec_t *lhs = lhs0, *rhs = rhs0;
    if (m->card == PS_PQ_ONE_TO_MANY) {
        lhs = rhs0;
        rhs = lhs0;
    }
    ps_hmap_t *right = &p->m1, *matched = &p->m2;
    ps_hmap_clear(right);
    ps_hmap_clear(matched);
    for (uint32_t i = 0; i < rhs->n; i++) {
        uint64_t dup;
        key_sig(&c->kb, &rhs->e[i].ls, m->on, p->names, p->nnames);
        if (ps_hmap_get(right, c->kb.data, c->kb.len, &dup)) {
            char a[512], b[512], g[512];
            ps_labels_t ml = labels_filter(c, &rhs->e[i].ls, m->on, p->names, p->nnames, !m->on);
            fmt_labels(&ml, g, sizeof(g));
            fmt_labels(&rhs->e[i].ls, a, sizeof(a));
            fmt_labels(&rhs->e[dup].ls, b, sizeof(b));
            bool swap = c->open && strcmp(a, b) > 0; /* Prometheus 3: the two in order */
            return ps_err_set(c->err, PS_ELIMIT,
                              "found duplicate series for the match group %.100s on the %s hand-side of the operation: "
                              "[%.150s, %.150s];many-to-many matching not allowed: matching labels must be unique on one side",
                              g, m->card == PS_PQ_ONE_TO_MANY ? "left" : "right", swap ? b : a, swap ? a : b);
        }
        ps_hmap_put(right, c->kb.data, c->kb.len, i);
    }
    for (uint32_t i = 0; i < lhs->n; i++) {
        uint64_t ri;
        key_sig(&c->kb, &lhs->e[i].ls, m->on, p->names, p->nnames);
        if (!ps_hmap_get(right, c->kb.data, c->kb.len, &ri))
            continue;
        const pq_elem_t *ls = &lhs->e[i], *rs = &rhs->e[ri];
        double vl = ls->v, vr = rs->v;
        if (m->card == PS_PQ_ONE_TO_MANY) {
            vl = rs->v;
            vr = ls->v;
        }
        bool keep;
        double value = elem_binop(n->binop, vl, vr, &keep);
        if (n->return_bool)
            value = keep ? 1 : 0;
        else if (!keep && !c->open) /* Prometheus 3 checks the matching of what it filters out too */
            continue;
        ps_labels_t metric = result_metric(c, &ls->ls, &rs->ls, n->binop, m, p);
        if (n->return_bool)
            metric = pq_drop_name(c, &metric);
        uint64_t x;
        if (m->card == PS_PQ_ONE_TO_ONE) {
            if (ps_hmap_get(matched, c->kb.data, c->kb.len, &x))
                return ps_err_set(c->err, PS_ELIMIT,
                                  "multiple matches for labels: many-to-one matching must be explicit "
                                  "(group_left/group_right)");
            ps_hmap_put(matched, c->kb.data, c->kb.len, 1);
        } else {
            /* the signature and the result's labels together must be new */
            ps_buf_putc(&c->kb, 0xfe);
            for (uint32_t k = 0; k < metric.n; k++)
                pq_key_pair(&c->kb, &metric.pairs[k]);
            if (ps_hmap_get(matched, c->kb.data, c->kb.len, &x))
                return ps_err_set(c->err, PS_ELIMIT,
                                  "multiple matches for labels: grouping labels must ensure unique matches");
            ps_hmap_put(matched, c->kb.data, c->kb.len, 1);
        }
        if (!keep && !n->return_bool)
            continue;
        out->e[out->n++] = (pq_elem_t){metric, value, ts, 0};
    }
    return 0;
}

/* VectorAnd, VectorOr, VectorUnless */
static void vector_setop(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *lhs, const pq_vec_t *rhs, int64_t ts,
                         pq_vec_t *out)
{
    const ps_pq_node_t *n = p->n;
    bool on = n->matching ? n->matching->on : false;
    *out = pq_vec_new(c, lhs->n + rhs->n);
    ps_hmap_t *sigs = &p->m1;
    ps_hmap_clear(sigs);
    switch (n->binop) {
    case PS_PQ_AND:
        if (lhs->n == 0 || rhs->n == 0)
            return;
        for (uint32_t i = 0; i < rhs->n; i++) {
            key_sig(&c->kb, &rhs->e[i].ls, on, p->names, p->nnames);
            ps_hmap_put(sigs, c->kb.data, c->kb.len, 1);
        }
        for (uint32_t i = 0; i < lhs->n; i++) {
            uint64_t x;
            key_sig(&c->kb, &lhs->e[i].ls, on, p->names, p->nnames);
            if (ps_hmap_get(sigs, c->kb.data, c->kb.len, &x))
                out->e[out->n++] = lhs->e[i];
        }
        break;
    case PS_PQ_OR:
        for (uint32_t i = 0; i < lhs->n; i++) {
            if (rhs->n) {
                key_sig(&c->kb, &lhs->e[i].ls, on, p->names, p->nnames);
                ps_hmap_put(sigs, c->kb.data, c->kb.len, 1);
            }
            out->e[out->n++] = lhs->e[i];
        }
        for (uint32_t i = 0; i < rhs->n; i++) {
            uint64_t x;
            if (lhs->n) {
                key_sig(&c->kb, &rhs->e[i].ls, on, p->names, p->nnames);
                if (ps_hmap_get(sigs, c->kb.data, c->kb.len, &x))
                    continue;
            }
            out->e[out->n++] = rhs->e[i];
        }
        break;
    default: /* UNLESS */
        for (uint32_t i = 0; i < rhs->n && lhs->n; i++) {
            key_sig(&c->kb, &rhs->e[i].ls, on, p->names, p->nnames);
            ps_hmap_put(sigs, c->kb.data, c->kb.len, 1);
        }
        for (uint32_t i = 0; i < lhs->n; i++) {
            uint64_t x;
            if (rhs->n) {
                key_sig(&c->kb, &lhs->e[i].ls, on, p->names, p->nnames);
                if (ps_hmap_get(sigs, c->kb.data, c->kb.len, &x))
                    continue;
            }
            out->e[out->n++] = lhs->e[i];
        }
        break;
    }
    for (uint32_t i = 0; i < out->n; i++) {
        out->e[i].t = ts;
        out->e[i].src = 0;
    }
}

static int eval_binary(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    const ps_pq_node_t *n = p->n;
    pq_val_t l, r;
    int ret;
    if ((ret = pq_eval(c, p->a, ts, &l)) != 0 || (ret = pq_eval(c, p->b, ts, &r)) != 0)
        return ret;
    if (l.type == PS_PQ_VSCALAR && r.type == PS_PQ_VSCALAR) {
        out->type = PS_PQ_VSCALAR;
        out->s = scalar_binop(n->binop, l.s, r.s);
        return 0;
    }
    out->type = PS_PQ_VVECTOR;
    if (l.type == PS_PQ_VVECTOR && r.type == PS_PQ_VVECTOR) {
        if (n->matching == NULL)
            return ps_err_set(c->err, PS_EINTERNAL, "a binary operation between vectors without matching");
        if (n->binop == PS_PQ_AND || n->binop == PS_PQ_OR || n->binop == PS_PQ_UNLESS) {
            vector_setop(c, p, &l.v, &r.v, ts, &out->v);
            return 0;
        }
        if ((ret = vector_binop(c, p, &l.v, &r.v, ts, &out->v)) != 0)
            return ret;
    } else if (l.type == PS_PQ_VVECTOR) {
        vector_scalar(c, n->binop, &l.v, r.s, false, n->return_bool, ts, &out->v);
    } else {
        vector_scalar(c, n->binop, &r.v, l.s, true, n->return_bool, ts, &out->v);
    }
    return pq_check_unique(c, p, &out->v);
}

/* ---- aggregation ---- */

typedef struct group {
    ps_labels_t ls;
    double value, mean;
    double kc;       /* Prometheus 3's sum and avg: the Kahan compensation (floatKahanC) */
    bool incremental; /* Prometheus 3's avg: the running sum would overflow, the mean is kept instead */
    uint64_t count;
    pq_elem_t *heap; /* topk, bottomk */
    double *vals;    /* quantile */
    uint32_t hn, hcap;
} group_t;

/* vectorByValueHeap (topk) / vectorByReverseValueHeap (bottomk) Less */
static bool heap_less(const pq_elem_t *h, uint32_t i, uint32_t j, bool reverse)
{
    if (isnan(h[i].v))
        return true;
    return reverse ? h[i].v > h[j].v : h[i].v < h[j].v;
}

static void heap_swap(pq_elem_t *h, uint32_t i, uint32_t j)
{
    pq_elem_t t = h[i];
    h[i] = h[j];
    h[j] = t;
}

/* container/heap's up and down */
static void heap_up(pq_elem_t *h, uint32_t j, bool rev)
{
    while (j > 0) {
        uint32_t i = (j - 1) / 2;
        if (!heap_less(h, j, i, rev))
            break;
        heap_swap(h, i, j);
        j = i;
    }
}

static void heap_down(pq_elem_t *h, uint32_t i, uint32_t n, bool rev)
{
    for (;;) {
        uint32_t j1 = 2 * i + 1;
        if (j1 >= n)
            break;
        uint32_t j = j1;
        if (j1 + 1 < n && heap_less(h, j1 + 1, j1, rev))
            j = j1 + 1;
        if (!heap_less(h, j, i, rev))
            break;
        heap_swap(h, i, j);
        i = j;
    }
}

/* sort.Sort(sort.Reverse(heap)): insertion sort, as Go sorts up to 12 elements; merge beyond */
static void sort_reverse(pq_elem_t *h, uint32_t n, bool rev, pq_elem_t *tmp)
{
    if (n <= 12) {
        for (uint32_t i = 1; i < n; i++)
            for (uint32_t j = i; j > 0 && heap_less(h, j - 1, j, rev); j--)
                heap_swap(h, j, j - 1);
        return;
    }
    uint32_t mid = n / 2;
    sort_reverse(h, mid, rev, tmp);
    sort_reverse(h + mid, n - mid, rev, tmp);
    uint32_t i = 0, j = mid, k = 0;
    while (i < mid && j < n) {
        /* take the right one first only if it is strictly "greater" (Less(left, right) in heap order) */
        pq_elem_t pair[2] = {h[i], h[j]};
        if (heap_less(pair, 0, 1, rev) && !heap_less(pair, 1, 0, rev))
            tmp[k++] = h[j++];
        else
            tmp[k++] = h[i++];
    }
    while (i < mid)
        tmp[k++] = h[i++];
    while (j < n)
        tmp[k++] = h[j++];
    memcpy(h, tmp, n * sizeof(pq_elem_t));
}

static void group_key(pq_ctx_t *c, const ps_labels_t *ls, bool without, const char **g, uint32_t ng)
{
    if (without)
        key_sig(&c->kb, ls, false, g, ng);
    else if (ng == 0)
        ps_buf_reset(&c->kb);
    else
        key_sig(&c->kb, ls, true, g, ng);
}

static int eval_agg(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    const ps_pq_node_t *n = p->n;
    ps_pq_aggop_t op = n->aggop;
    pq_val_t in, par = {0};
    int ret;
    if (p->b && p->b->n->type != PS_PQ_VSTRING && (ret = pq_eval(c, p->b, ts, &par)) != 0)
        return ret;
    if ((ret = pq_eval(c, p->a, ts, &in)) != 0)
        return ret;
    const pq_vec_t *vec = &in.v;
    out->type = PS_PQ_VVECTOR;
    out->v = pq_vec_new(c, vec->n);
    int64_t k = 0;
    double q = 0;
    if ((op == PS_PQ_TOPK || op == PS_PQ_BOTTOMK) && c->open) { /* Prometheus 3's checks */
        double f = par.s;
        if (f < 1)
            return 0;
        if (isnan(f))
            return ps_err_set(c->err, PS_ELIMIT, "Parameter value is NaN");
        if (f >= 9223372036854775807.0) {
            char b[48];
            pq_go_fmt_v(f, b, sizeof(b));
            return ps_err_set(c->err, PS_ELIMIT, "Scalar value %s overflows int64", b);
        }
        k = (int64_t)f;
    } else if (op == PS_PQ_TOPK || op == PS_PQ_BOTTOMK) {
        double f = par.s;
        if (!(f <= 9223372036854775807.0 && f >= -9223372036854775808.0)) {
            char b[48];
            pq_go_fmt_v(f, b, sizeof(b));
            return ps_err_set(c->err, PS_ELIMIT, "Scalar value %s overflows int64", b);
        }
        k = f >= 9223372036854775807.0 ? INT64_MAX : (int64_t)f;
        if (k < 1)
            return 0;
    }
    if (op == PS_PQ_QUANTILE) {
        q = par.s;
        pq_check_quantile(c, q, n->param->pos);
    }
    const char **g = p->names;
    uint32_t ng = p->nnames;
    const char *value_label = NULL;
    if (op == PS_PQ_COUNT_VALUES) {
        value_label = unparen(p->b->n)->str; /* count_values(("v"), x): a parenthesised string */
        if (!pq_label_name_ok(c, value_label))
            return ps_err_set(c->err, PS_ELIMIT, "invalid label name \"%s\"", value_label);
        if (!n->without) {
            const char **g2 = ps_arena_alloc(&c->scratch, (ng + 1) * sizeof(char *));
            memcpy(g2, g, ng * sizeof(char *));
            g2[ng++] = value_label;
            g = g2;
        }
    }
    ps_hmap_t *idx = &p->m1;
    ps_hmap_clear(idx);
    group_t *groups = ps_arena_alloc(&c->scratch, (vec->n + 1) * sizeof(group_t));
    uint32_t ngroups = 0;
    int64_t cap = k > (int64_t)vec->n ? (int64_t)vec->n : k;
    for (uint32_t si = 0; si < vec->n; si++) {
        const pq_elem_t *s = &vec->e[si];
        ps_labels_t metric = s->ls;
        if (op == PS_PQ_COUNT_VALUES) {
            char b[400];
            ps_pq_format_f(s->v, b, sizeof(b));
            metric = ps_labels_borrow(&s->ls);
            ps_labels_set(&metric, &c->scratch, value_label, strlen(value_label), b, strlen(b));
        }
        group_key(c, &metric, n->without, g, ng);
        uint64_t gi;
        if (!ps_hmap_get(idx, c->kb.data, c->kb.len, &gi)) {
            gi = ngroups++;
            ps_hmap_put(idx, c->kb.data, c->kb.len, gi);
            group_t *gr = &groups[gi];
            memset(gr, 0, sizeof(*gr));
            if (n->without)
                gr->ls = labels_filter(c, &metric, false, g, ng, true);
            else if (ng > 0)
                gr->ls = labels_filter(c, &metric, true, g, ng, false);
            gr->value = s->v;
            gr->mean = s->v;
            gr->count = 1;
            switch (op) {
            case PS_PQ_STDVAR:
            case PS_PQ_STDDEV: /* Prometheus 3: NaN from a first NaN or Inf (2.42: 0) */
                gr->value = c->open && (isnan(s->v) || isinf(s->v)) ? NAN : 0;
                break;
            case PS_PQ_TOPK:
            case PS_PQ_BOTTOMK:
                gr->hcap = (uint32_t)(cap < 1 ? 1 : cap);
                gr->heap = ps_arena_alloc(&c->scratch, gr->hcap * sizeof(pq_elem_t));
                gr->heap[0] = *s;
                gr->hn = 1;
                break;
            case PS_PQ_QUANTILE:
                gr->hcap = vec->n - si;
                gr->vals = ps_arena_alloc(&c->scratch, gr->hcap * sizeof(double));
                gr->vals[0] = s->v;
                gr->hn = 1;
                break;
            case PS_PQ_GROUP:
                gr->value = 1;
                break;
            default:
                break;
            }
            continue;
        }
        group_t *gr = &groups[gi];
        switch (op) {
        case PS_PQ_SUM:
            if (c->open)
                gr->value = pq_kahan_inc(s->v, gr->value, &gr->kc);
            else
                gr->value += s->v;
            break;
        case PS_PQ_AVG:
            if (c->open) { /* Prometheus 3: a Kahan sum, the incremental mean once it would overflow */
                gr->count++;
                if (!gr->incremental) {
                    double kc = gr->kc, v = pq_kahan_inc(s->v, gr->value, &kc);
                    if (!isinf(v)) {
                        gr->value = v;
                        gr->kc = kc;
                        break;
                    }
                    gr->incremental = true;
                    gr->mean = gr->value / (double)(gr->count - 1);
                    gr->kc /= (double)(gr->count - 1);
                }
                double q = (double)(gr->count - 1) / (double)gr->count, kc = q * gr->kc;
                gr->mean = pq_kahan_inc(s->v / (double)gr->count, q * gr->mean, &kc);
                gr->kc = kc;
                break;
            }
            gr->count++;
            if (isinf(gr->mean)) {
                if (isinf(s->v) && (gr->mean > 0) == (s->v > 0))
                    break;
                if (!isinf(s->v) && !isnan(s->v))
                    break;
            }
            gr->mean += s->v / (double)gr->count - gr->mean / (double)gr->count;
            break;
        case PS_PQ_GROUP:
            break;
        case PS_PQ_MAX:
            if (gr->value < s->v || isnan(gr->value))
                gr->value = s->v;
            break;
        case PS_PQ_MIN:
            if (gr->value > s->v || isnan(gr->value))
                gr->value = s->v;
            break;
        case PS_PQ_COUNT:
        case PS_PQ_COUNT_VALUES:
            gr->count++;
            break;
        case PS_PQ_STDVAR:
        case PS_PQ_STDDEV: {
            gr->count++;
            double delta = s->v - gr->mean;
            gr->mean += delta / (double)gr->count;
            gr->value += delta * (s->v - gr->mean);
            break;
        }
        case PS_PQ_TOPK:
        case PS_PQ_BOTTOMK: {
            bool rev = op == PS_PQ_BOTTOMK;
            bool better = rev ? gr->heap[0].v > s->v : gr->heap[0].v < s->v;
            if ((int64_t)gr->hn < k || better || isnan(gr->heap[0].v)) {
                if ((int64_t)gr->hn == k) {
                    if (k == 1) {
                        gr->heap[0] = *s;
                        break;
                    }
                    /* heap.Pop */
                    heap_swap(gr->heap, 0, gr->hn - 1);
                    heap_down(gr->heap, 0, gr->hn - 1, rev);
                    gr->hn--;
                }
                gr->heap[gr->hn++] = *s;
                heap_up(gr->heap, gr->hn - 1, rev);
            }
            break;
        }
        case PS_PQ_QUANTILE:
            gr->vals[gr->hn++] = s->v;
            break;
        }
    }
    pq_elem_t *tmp = NULL;
    for (uint32_t gi = 0; gi < ngroups; gi++) {
        group_t *gr = &groups[gi];
        switch (op) {
        case PS_PQ_SUM:
            if (c->open)
                gr->value += gr->kc;
            break;
        case PS_PQ_AVG:
            if (!c->open)
                gr->value = gr->mean;
            else if (gr->incremental)
                gr->value = gr->mean + gr->kc;
            else
                gr->value = gr->value / (double)gr->count + gr->kc / (double)gr->count;
            break;
        case PS_PQ_COUNT:
        case PS_PQ_COUNT_VALUES:
            gr->value = (double)gr->count;
            break;
        case PS_PQ_STDVAR:
            gr->value = gr->value / (double)gr->count;
            break;
        case PS_PQ_STDDEV:
            gr->value = sqrt(gr->value / (double)gr->count);
            break;
        case PS_PQ_TOPK:
        case PS_PQ_BOTTOMK:
            if (gr->hn > 1) {
                if (tmp == NULL)
                    tmp = ps_arena_alloc(&c->scratch, (vec->n + 1) * sizeof(pq_elem_t));
                sort_reverse(gr->heap, gr->hn, op == PS_PQ_BOTTOMK, tmp);
            }
            for (uint32_t i = 0; i < gr->hn; i++) {
                pq_elem_t e = gr->heap[i];
                e.t = ts;
                e.src = 0;
                out->v.e[out->v.n++] = e;
            }
            continue;
        case PS_PQ_QUANTILE:
            gr->value = pq_quantile(q, gr->vals, gr->hn, c->open != 0);
            break;
        default:
            break;
        }
        out->v.e[out->v.n++] = (pq_elem_t){gr->ls, gr->value, ts, 0};
    }
    return 0;
}

static int take_budget(pq_ctx_t *c, uint64_t n);
static ps_labels_t labels_copy(ps_arena_t *a, const ps_labels_t *ls);

/* ---- subqueries ---- */

/* Whether node p can have no value at any time: a selector without series, and what only
 * passes on the elements of such an operand (an aggregation of nothing, a call mapping its
 * vector's elements, a binary operation that needs an element on an empty side). Conservative:
 * false whenever not sure (absent, vector, time, scalars, or): no answer may change by it. */
static bool always_empty(const pq_node_t *p)
{
    const ps_pq_node_t *n = p->n;
    if (n->type != PS_PQ_VVECTOR && n->type != PS_PQ_VMATRIX)
        return false;
    switch (n->kind) {
    case PS_PQ_VECTOR:
    case PS_PQ_MATRIX:
        return p->sel.n == 0;
    case PS_PQ_SUBQUERY:
    case PS_PQ_PAREN:
    case PS_PQ_UNARY:
    case PS_PQ_AGG:
        return always_empty(p->a);
    case PS_PQ_BINARY: {
        bool ea = always_empty(p->a), eb = always_empty(p->b);
        if (n->binop == PS_PQ_OR)
            return ea && eb;
        if (n->binop == PS_PQ_UNLESS)
            return ea;
        return ea || eb; /* and, arithmetic, comparison: an element needs one on each vector side */
    }
    case PS_PQ_CALL: {
        ps_pq_fn_t fn = n->func->id;
        if (fn == PS_FN_ABSENT || fn == PS_FN_ABSENT_OVER_TIME || fn == PS_FN_VECTOR)
            return false;
        for (uint32_t i = 0; i < p->nargs; i++) /* every other function maps its vector's elements */
            if ((n->args[i]->type == PS_PQ_VVECTOR || n->args[i]->type == PS_PQ_VMATRIX) && always_empty(p->args[i]))
                return true;
        return false;
    }
    default:
        return false;
    }
}

/* Evaluates subquery p's inner expression at t (a multiple of its step) in the node's own
 * scratch arena, reset afterwards, and appends each element to the column of its labels
 * (interned in p->sq_labels from the answer's arena). */
static int subquery_eval_at(pq_ctx_t *c, pq_node_t *p, int64_t t)
{
    pq_val_t v;
    pq_node_t *outer = c->sq_cur;
    ps_arena_t outer_scratch = c->scratch; /* still held: counted in mem_scratch meanwhile */
    c->mem_scratch += outer_scratch.used_total;
    c->scratch = p->sq_scratch;
    c->sq_depth++;
    c->sq_cur = p;
    int ret = pq_eval(c, p->a, t, &v);
    c->sq_depth--;
    c->sq_cur = outer;
    if (ret == 0 && v.type == PS_PQ_VSCALAR) {
        pq_elem_t *e = ps_arena_alloc(&c->scratch, sizeof(pq_elem_t));
        *e = (pq_elem_t){{0, NULL, 0}, v.s, t, 0};
        v.v.e = e;
        v.v.n = 1;
    }
    if (ret == 0)
        ret = take_budget(c, v.v.n);
    for (uint32_t i = 0; i < v.v.n && ret == 0; i++) {
        uint64_t li;
        pq_key_all(&c->kb, &v.v.e[i].ls);
        if (!ps_hmap_get(&p->m3, c->kb.data, c->kb.len, &li)) {
            if (p->sq_nlabels == p->sq_caplabels) {
                uint32_t nc = p->sq_caplabels ? p->sq_caplabels * 2 : 16;
                p->sq_labels = ps_xrealloc(p->sq_labels, nc * sizeof(ps_labels_t));
                p->sq_cols = ps_xrealloc(p->sq_cols, nc * sizeof(pq_sq_col_t));
                c->mem += (uint64_t)(nc - p->sq_caplabels) * (sizeof(ps_labels_t) + sizeof(pq_sq_col_t));
                p->sq_caplabels = nc;
            }
            li = p->sq_nlabels++;
            p->sq_labels[li] = labels_copy(c->arena, &v.v.e[i].ls);
            p->sq_cols[li] = (pq_sq_col_t){NULL, 0, 0, false};
            ps_hmap_put(&p->m3, c->kb.data, c->kb.len, li);
        }
        pq_sq_col_t *col = &p->sq_cols[li];
        if (col->n == col->cap) { /* charged before it is taken */
            if (col->cap > UINT32_MAX / 2) { /* 2^31 points of one series: only without a memory limit */
                ret = ps_err_set(c->err, PS_ELIMIT, MAX_SAMPLES_MSG " (a subquery's series has more than %u points)",
                                 col->cap);
                break;
            }
            uint32_t nc = col->cap ? col->cap * 2 : 8;
            c->mem += (uint64_t)(nc - col->cap) * sizeof(ps_float_sample_t);
            if ((ret = pq_mem_check(c)) != 0) {
                c->mem -= (uint64_t)(nc - col->cap) * sizeof(ps_float_sample_t);
                break;
            }
            col->s = ps_xrealloc(col->s, nc * sizeof(ps_float_sample_t));
            col->cap = nc;
        }
        if (col->n > 0 && col->s[col->n - 1].t > t)
            col->unsorted = true;
        col->s[col->n++] = (ps_float_sample_t){t, v.v.e[i].v};
    }
    if (ret == 0)
        ret = pq_mem_check(c); /* with this evaluation's scratch */
    ps_arena_reset(&c->scratch);
    p->sq_scratch = c->scratch;
    c->scratch = outer_scratch;
    c->mem_scratch -= outer_scratch.used_total;
    return ret;
}

/* the first of p's spans with hi >= k, or sq_nspans */
static uint32_t first_span(const pq_node_t *p, int64_t k)
{
    uint32_t lo = 0, hi = p->sq_nspans;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (p->sq_spans[mid].hi < k)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Records that p's inner expression was evaluated at the multiples k * step, lo <= k <= hi. */
static void subquery_add_span(pq_ctx_t *c, pq_node_t *p, int64_t lo, int64_t hi)
{
    uint32_t i = first_span(p, lo == INT64_MIN ? lo : lo - 1);
    uint32_t j = i; /* spans i .. j-1 touch [lo, hi]: merged into one */
    while (j < p->sq_nspans && (hi == INT64_MAX || p->sq_spans[j].lo <= hi + 1)) {
        if (p->sq_spans[j].lo < lo)
            lo = p->sq_spans[j].lo;
        if (p->sq_spans[j].hi > hi)
            hi = p->sq_spans[j].hi;
        j++;
    }
    if (i == j) {
        if (p->sq_nspans == p->sq_capspans) {
            uint32_t nc = p->sq_capspans ? p->sq_capspans * 2 : 8;
            p->sq_spans = ps_xrealloc(p->sq_spans, nc * sizeof(pq_sq_span_t));
            c->mem += (uint64_t)(nc - p->sq_capspans) * sizeof(pq_sq_span_t);
            p->sq_capspans = nc;
        }
        memmove(p->sq_spans + i + 1, p->sq_spans + i, (p->sq_nspans - i) * sizeof(pq_sq_span_t));
        p->sq_nspans++;
        j = i + 1;
    }
    p->sq_spans[i] = (pq_sq_span_t){lo, hi};
    memmove(p->sq_spans + i + 1, p->sq_spans + j, (p->sq_nspans - j) * sizeof(pq_sq_span_t));
    p->sq_nspans -= j - i - 1;
}

static int cmp_fsample_t(const void *a, const void *b)
{
    int64_t x = ((const ps_float_sample_t *)a)->t, y = ((const ps_float_sample_t *)b)->t;
    return (x > y) - (x < y);
}

/* first index of col with t >= x (upper: t > x) */
static uint32_t col_search(const pq_sq_col_t *col, int64_t x, bool upper)
{
    uint32_t lo = 0, hi = col->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (upper ? col->s[mid].t <= x : col->s[mid].t < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int64_t ceil_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a > 0) == (b > 0)) ? q + 1 : q;
}

int64_t pq_subquery_start(pq_ctx_t *c, pq_node_t *p)
{
    const pq_sel_t *s = &p->sel;
    int64_t from = ps_sat_add(ps_sat_sub(ps_sat_sub(s->has_at ? s->at : c->o->start, s->offset), s->range), c->open);
    return ceil_div(from, p->sq_step) * p->sq_step; /* engine.go: newEv.startTimestamp */
}

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int pq_subquery_window(pq_ctx_t *c, pq_node_t *p, int64_t mint, int64_t maxt, pq_sq_window_t *w)
{
    memset(w, 0, sizeof(*w));
    int64_t step = p->sq_step, k0 = ceil_div(mint, step), k1 = floor_div(maxt, step);
    if (k1 < k0)
        return 0;
    if (p->sq_empty == 0)
        p->sq_empty = always_empty(p->a) ? 1 : -1;
    /* the times in [k0, k1] not evaluated yet, in order: the gaps between the spans */
    int64_t k = k0;
    while (k <= k1) {
        uint32_t i = first_span(p, k);
        if (i < p->sq_nspans && p->sq_spans[i].lo <= k) { /* k was evaluated */
            if (p->sq_spans[i].hi >= k1)
                break;
            k = p->sq_spans[i].hi + 1;
            continue;
        }
        int64_t gap_end = i < p->sq_nspans && p->sq_spans[i].lo - 1 < k1 ? p->sq_spans[i].lo - 1 : k1;
        for (int64_t x = k; x <= gap_end && p->sq_empty < 0; x++) {
            int ret = pq_tick(c);
            if (ret == 0)
                ret = subquery_eval_at(c, p, x * step);
            if (ret) {
                if (x > k)
                    subquery_add_span(c, p, k, x - 1);
                return ret;
            }
        }
        subquery_add_span(c, p, k, gap_end);
        if (gap_end >= k1)
            break;
        k = gap_end + 1;
    }
    if (p->sq_nlabels == 0)
        return 0;
    int64_t lo = k0 * step, hi = k1 * step;
    w->s = ps_arena_alloc(&c->scratch, p->sq_nlabels * sizeof(pq_sq_series_t));
    for (uint32_t li = 0; li < p->sq_nlabels; li++) {
        pq_sq_col_t *col = &p->sq_cols[li];
        if (col->unsorted) { /* each time is in it once: sorting by time is enough */
            qsort(col->s, col->n, sizeof(ps_float_sample_t), cmp_fsample_t);
            col->unsorted = false;
        }
        uint32_t a = col_search(col, lo, false), b = col_search(col, hi, true);
        if (b > a)
            w->s[w->n++] = (pq_sq_series_t){li, b - a, col->s + a};
    }
    return 0;
}

/* ---- the tree at one step ---- */

/* ---- calls ---- */

/* engine.go's preprocessExprHelper: whether e gives the same at every step (every selector and
 * subquery in it has @, no function whose answer depends on the evaluation time) */
static bool step_invariant(const ps_pq_node_t *e)
{
    switch (e->kind) {
    case PS_PQ_NUMBER: case PS_PQ_STRING: return true;
    case PS_PQ_VECTOR: case PS_PQ_SUBQUERY: return e->at != PS_PQ_AT_NONE;
    case PS_PQ_MATRIX: case PS_PQ_PAREN: case PS_PQ_UNARY: case PS_PQ_AGG: return step_invariant(e->expr);
    case PS_PQ_BINARY: return step_invariant(e->lhs) && step_invariant(e->rhs);
    case PS_PQ_CALL:
        switch (e->func->id) {
        case PS_FN_DAYS_IN_MONTH: case PS_FN_DAY_OF_MONTH: case PS_FN_DAY_OF_WEEK: case PS_FN_DAY_OF_YEAR:
        case PS_FN_HOUR: case PS_FN_MINUTE: case PS_FN_MONTH: case PS_FN_YEAR: case PS_FN_PREDICT_LINEAR:
        case PS_FN_TIME: case PS_FN_TIMESTAMP:
            return false; /* AtModifierUnsafeFunctions */
        default: break;
        }
        for (uint32_t i = 0; i < e->nargs; i++)
            if (!step_invariant(e->args[i]))
                return false;
        return true;
    default: return false;
    }
}

/* Prometheus 3's info on rate() and increase() of a series whose name is not a counter's */
static void check_counter_name(pq_ctx_t *c, const pq_node_t *p, ps_pq_fn_t fn, const ps_labels_t *ls)
{
    if ((fn != PS_FN_RATE && fn != PS_FN_INCREASE) || !c->open)
        return;
    const char *name = ps_labels_value(ls, "__name__");
    if (name == NULL || !*name)
        return;
    static const char *const suffixes[] = {"_total", "_sum", "_count", "_bucket"};
    size_t n = strlen(name);
    for (int k = 0; k < 4; k++) {
        size_t sl = strlen(suffixes[k]);
        if (n >= sl && strcmp(name + n - sl, suffixes[k]) == 0)
            return;
    }
    char q[400];
    pq_go_quote(name, q, sizeof(q));
    pq_annotate(c, false, p->n->args[p->matrix_arg]->pos,
                "metric might not be a counter, name does not end in _total/_sum/_count/_bucket: %s", q);
}

/* last_over_time and first_over_time keep the metric name; the other range functions drop it */
static bool keeps_name(ps_pq_fn_t fn)
{
    return fn == PS_FN_LAST_OVER_TIME || fn == PS_FN_FIRST_OVER_TIME;
}

/* A call with a range vector argument (rangeEval's matrix case in eval): the other arguments
 * evaluated, then the function (promql_func.c's pq_range_fn) over each series' window. */
static int eval_range_call(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    ps_pq_fn_t fn = p->n->func->id;
    double sargs[4] = {0};
    for (uint32_t j = 0; j < p->nargs && j < 4; j++) {
        if ((int)j == p->matrix_arg)
            continue;
        pq_val_t a;
        int ret = pq_eval(c, p->args[j], ts, &a);
        if (ret)
            return ret;
        sargs[j] = a.s;
    }
    if (fn == PS_FN_HOLT_WINTERS) {
        if (sargs[1] <= 0 || sargs[1] >= 1)
            return ps_err_set(c->err, PS_ELIMIT, "invalid smoothing factor. Expected: 0 < sf < 1, got: %f", sargs[1]);
        if (sargs[2] <= 0 || sargs[2] >= 1)
            return ps_err_set(c->err, PS_ELIMIT, "invalid trend factor. Expected: 0 < tf < 1, got: %f", sargs[2]);
    }
    pq_node_t *m = p->args[p->matrix_arg];
    const pq_sel_t *s = &m->sel;
    int64_t eff = s->has_at ? s->at : ts;
    int64_t maxt = ps_sat_sub(eff, s->offset), mint = ps_sat_sub(maxt, s->range); /* @ out of range: INT64_MIN */
    /* A call that is not step invariant (predict_linear, or an argument without @) over an
     * argument with @: Prometheus evaluates it at every step ts with the argument's offset made
     * (start - @) + offset (setOffsetForAtModifier at the evaluation's start), so its window moves
     * with ts: [@ - offset - range, @ - offset] + (ts - start). A selector's samples stop at
     * @ - offset (they are all it loaded); a subquery's go on (it was evaluated over the whole
     * query). The start is the query's, or inside a subquery the subquery's own (the first time
     * its inner expression runs at); inside a subquery within a subquery, no shift (not followed).
     * That is 2.42's; Prometheus 3 fetches the window once, at the first step, and every step
     * consumes that same window (engine.go's refetch; a subquery with @ runs for its first step only). */
    if (p->invariant == 0)
        p->invariant = step_invariant(p->n) ? 1 : -1;
    int64_t shift = 0;
    if (s->has_at && p->invariant < 0 && c->sq_depth <= 1 && !c->open) {
        int64_t start = c->o->start;
        if (c->sq_depth == 1) {
            if (c->sq_cur->sq_start == INT64_MIN)
                c->sq_cur->sq_start = pq_subquery_start(c, c->sq_cur);
            start = c->sq_cur->sq_start;
        }
        shift = ts - start;
    }
    int64_t rstart = ps_sat_add(mint, shift), rend = ps_sat_add(maxt, shift);
    out->type = PS_PQ_VVECTOR;
    if (m->n->kind == PS_PQ_SUBQUERY) {
        pq_sq_window_t w;
        mint = ps_sat_add(rstart, c->open);
        maxt = rend;
        int ret = pq_subquery_window(c, m, mint, maxt, &w);
        if (ret)
            return ret;
        out->v = pq_vec_new(c, w.n);
        if (fn == PS_FN_ABSENT_OVER_TIME) {
            if (w.n == 0)
                out->v.e[out->v.n++] = (pq_elem_t){{0, NULL, 0}, 1, ts, 0}; /* a subquery: no labels */
            return 0;
        }
        for (uint32_t i = 0; i < w.n; i++) {
            double v;
            if (!pq_range_fn(c, fn, w.s[i].s, w.s[i].n, ts, rstart, rend, s->range, sargs, &v))
                continue;
            const ps_labels_t *ls = &m->sq_labels[w.s[i].li];
            check_counter_name(c, p, fn, ls);
            if (fn == PS_FN_QUANTILE_OVER_TIME)
                pq_check_quantile(c, sargs[0], p->n->args[0]->pos);
            pq_elem_t *e = &out->v.e[out->v.n++];
            *e = (pq_elem_t){keeps_name(fn) ? ps_labels_borrow(ls) : pq_drop_name(c, ls), v, ts,
                             w.s[i].li + 1};
            if ((ret = pq_check_unique_range(c, p, &e->ls, w.s[i].li)) != 0)
                return ret;
        }
        return 0;
    }
    out->v = pq_vec_new(c, s->n);
    /* Prometheus 3.16's modifiers: the window reaches a lookback further back (anchored, smoothed) and
     * forward (smoothed) */
    const ps_pq_node_t *vs = m->n->expr;
    bool extended = vs->anchored || vs->smoothed;
    int64_t wlo = rstart > mint ? rstart : mint, whi = maxt;
    if (extended)
        wlo = ps_sat_sub(wlo, c->o->lookback);
    if (vs->smoothed)
        whi = ps_sat_add(whi, c->o->lookback);
    for (uint32_t i = 0; i < s->n; i++) {
        int ret = pq_tick(c);
        if (ret)
            return ret;
        const ps_float_sample_t *w;
        uint32_t k = pq_window(c, &s->series[i], ps_sat_add(wlo, c->open), whi, s->hint ? &s->hint[i] : NULL, &w);
        double v;
        if (k == 0)
            continue;
        if (extended ? !pq_extended_fn(fn, vs->smoothed, w, k, rstart, rend, s->range, &v)
                     : !pq_range_fn(c, fn, w, k, ts, rstart, rend, s->range, sargs, &v))
            continue;
        if (fn == PS_FN_ABSENT_OVER_TIME) {
            out->v.n = 0;
            return 0; /* something is present */
        }
        ps_labels_t ls = keeps_name(fn) ? ps_labels_borrow(&s->series[i].labels)
                                                    : ps_labels_borrow(&s->noname[i]);
        out->v.e[out->v.n++] = (pq_elem_t){ls, v, ts, i + 1};
        if (p->uniq_seen == NULL)
            p->uniq_seen = ps_arena_calloc(c->arena, s->n + 1, 1);
        if (fn == PS_FN_QUANTILE_OVER_TIME)
            pq_check_quantile(c, sargs[0], p->n->args[0]->pos);
        if (!p->uniq_seen[i]) { /* a series' labels are checked once per query */
            p->uniq_seen[i] = 1;
            check_counter_name(c, p, fn, &s->series[i].labels);
            if ((ret = pq_check_unique_range(c, p, &ls, i)) != 0)
                return ret;
        }
    }
    if (fn == PS_FN_ABSENT_OVER_TIME)
        out->v.e[out->v.n++] = (pq_elem_t){pq_absent_labels(c, p->n->args[p->matrix_arg]), 1, ts, 0};
    return 0;
}

/* A call: its arguments evaluated here, in order (a string argument is read from the tree by the
 * function), then the function (promql_func.c). */
static int eval_call(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    if (p->matrix_arg >= 0)
        return eval_range_call(c, p, ts, out);
    pq_val_t a[4];
    memset(a, 0, sizeof(a));
    for (uint32_t j = 0; j < p->nargs && j < 4; j++) {
        if (p->args[j]->n->type == PS_PQ_VSTRING)
            continue;
        int ret = pq_eval(c, p->args[j], ts, &a[j]);
        if (ret)
            return ret;
    }
    return pq_call_eval(c, p, ts, a, out);
}

int pq_eval(pq_ctx_t *c, pq_node_t *p, int64_t ts, pq_val_t *out)
{
    const ps_pq_node_t *n = p->n;
    int ret;
    memset(out, 0, sizeof(*out));
    if ((ret = pq_tick(c)) != 0)
        return ret;
    switch (n->kind) {
    case PS_PQ_NUMBER:
        out->type = PS_PQ_VSCALAR;
        out->s = n->num;
        return 0;
    case PS_PQ_STRING:
        out->type = PS_PQ_VSTRING;
        out->str = n->str;
        return 0;
    case PS_PQ_PAREN:
        return pq_eval(c, p->a, ts, out);
    case PS_PQ_UNARY:
        if ((ret = pq_eval(c, p->a, ts, out)) != 0 || !n->unary_neg)
            return ret;
        if (out->type == PS_PQ_VSCALAR) {
            out->s = -out->s;
            return 0;
        }
        for (uint32_t i = 0; i < out->v.n; i++) {
            pq_elem_t *e = &out->v.e[i];
            pq_key_all(&c->kb, &e->ls);
            uint64_t id = ps_hash64(c->kb.data, c->kb.len, 0); /* the input series */
            e->ls = pq_drop_name(c, &e->ls);
            e->v = -e->v;
            e->t = ts;
            e->src = 0;
            if (!c->open && (ret = pq_check_unique_range(c, p, &e->ls, id)) != 0)
                return ret;
        }
        /* Prometheus 3 (mergeSeriesWithSameLabelset): series that lost their names into one label set
         * are one series as long as they do not meet at one time */
        return c->open ? pq_check_unique(c, p, &out->v) : 0;
    case PS_PQ_VECTOR:
        return eval_vector(c, p, ts, out);
    case PS_PQ_BINARY:
        return eval_binary(c, p, ts, out);
    case PS_PQ_AGG:
        return eval_agg(c, p, ts, out);
    case PS_PQ_CALL:
        return eval_call(c, p, ts, out);
    case PS_PQ_MATRIX:
    case PS_PQ_SUBQUERY:
    case PS_PQ_DURATION:
        break;
    }
    return ps_err_set(c->err, PS_EINTERNAL, "a range vector cannot be evaluated at one step here");
}

/* ---- the answer ---- */

typedef struct rseries {
    ps_labels_t ls;
    ps_point_t *pts;
    uint32_t n, cap;
} rseries_t;

static ps_labels_t labels_copy(ps_arena_t *a, const ps_labels_t *ls)
{
    ps_labels_t out = {ls->n, ps_arena_alloc(a, (ls->n + 1) * sizeof(ps_label_pair_t)), 0};
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        out.pairs[i] = (ps_label_pair_t){ps_arena_strndup(a, p->name, p->nlen), ps_arena_strndup(a, p->value, p->vlen),
                                         p->nlen, p->vlen};
    }
    return out;
}

static int cmp_qseries(const void *a, const void *b)
{
    return ps_labels_cmp(&((const ps_qseries_t *)a)->labels, &((const ps_qseries_t *)b)->labels);
}

static int take_budget(pq_ctx_t *c, uint64_t n)
{
    if (n > c->budget)
        return ps_err_set(c->err, PS_ELIMIT, MAX_SAMPLES_MSG " (the limit is %llu samples, %s)",
                          (unsigned long long)c->o->max_samples, ps_setting_name(PS_SETTING_QUERY_MAX_SAMPLES));
    c->budget -= n;
    return 0;
}

/* An instant query of a range selector: its samples at start, as Prometheus answers it. */
static int answer_matrix(pq_ctx_t *c, pq_node_t *p, ps_pq_result_t *out)
{
    const pq_sel_t *s = &p->sel;
    const ps_pq_node_t *vs = p->n->expr;
    int64_t maxt = ps_sat_sub(s->has_at ? s->at : c->o->start, s->offset),
            mint = ps_sat_add(ps_sat_sub(maxt, s->range), c->open);
    out->type = PS_PQ_VMATRIX;
    out->series = ps_arena_alloc(c->arena, (s->n + 1) * sizeof(ps_qseries_t));
    for (uint32_t i = 0; i < s->n; i++) {
        const ps_float_sample_t *w;
        uint32_t k;
        if (vs->anchored || vs->smoothed) { /* extendFloats: the window framed by its two ends */
            int64_t lb = c->o->lookback, lo = ps_sat_sub(maxt, s->range);
            k = pq_window(c, &s->series[i], ps_sat_add(ps_sat_sub(lo, lb), c->open),
                          vs->smoothed ? ps_sat_add(maxt, lb) : maxt, NULL, &w);
            ps_float_sample_t *x = ps_arena_alloc(c->arena, ((size_t)k + 2) * sizeof(*x));
            k = k ? pq_extend_window(w, k, lo, maxt, vs->smoothed, x) : 0;
            w = x;
        } else {
            k = pq_window(c, &s->series[i], mint, maxt, NULL, &w);
        }
        if (k == 0)
            continue;
        ps_qseries_t *q = &out->series[out->n++];
        q->labels = s->series[i].labels;
        q->n = k;
        q->points = ps_arena_alloc(c->arena, k * sizeof(ps_point_t));
        for (uint32_t j = 0; j < k; j++)
            q->points[j] = (ps_point_t){w[j].t, w[j].v};
    }
    return 0;
}

/* An instant query of a subquery: its points in [t - offset - range, t - offset]. */
static int answer_subquery(pq_ctx_t *c, pq_node_t *p, ps_pq_result_t *out)
{
    const pq_sel_t *s = &p->sel;
    int64_t maxt = ps_sat_sub(s->has_at ? s->at : c->o->start, s->offset),
            mint = ps_sat_add(ps_sat_sub(maxt, s->range), c->open);
    pq_sq_window_t w;
    int ret = pq_subquery_window(c, p, mint, maxt, &w);
    if (ret)
        return ret;
    uint64_t npts = 0; /* the copy into the answer, charged before it is made */
    for (uint32_t i = 0; i < w.n; i++)
        npts += w.s[i].n;
    c->mem += npts * sizeof(ps_point_t);
    if ((ret = pq_mem_check(c)) != 0)
        return ret;
    c->mem -= npts * sizeof(ps_point_t);
    out->type = PS_PQ_VMATRIX;
    out->n = w.n;
    out->series = ps_arena_alloc(c->arena, (w.n + 1) * sizeof(ps_qseries_t));
    for (uint32_t i = 0; i < w.n; i++) {
        ps_qseries_t *q = &out->series[i];
        q->labels = p->sq_labels[w.s[i].li];
        q->n = w.s[i].n;
        q->points = ps_arena_alloc(c->arena, (q->n + 1) * sizeof(ps_point_t));
        for (uint32_t j = 0; j < q->n; j++)
            q->points[j] = (ps_point_t){w.s[i].s[j].t, w.s[i].s[j].v};
    }
    return 0;
}

static int run(pq_ctx_t *c, pq_node_t *root, ps_pq_result_t *out)
{
    const ps_pq_opts_t *o = c->o;
    const ps_pq_node_t *rn = unparen(root->n);
    bool instant = o->step == 0;
    if (rn->kind == PS_PQ_MATRIX || rn->kind == PS_PQ_SUBQUERY) {
        if (!instant)
            return ps_err_set(c->err, PS_EINVAL,
                              "invalid expression type \"range vector\" for range query, must be Scalar or instant Vector");
        pq_node_t *p = root;
        while (p->n->kind == PS_PQ_PAREN)
            p = p->a;
        return rn->kind == PS_PQ_MATRIX ? answer_matrix(c, p, out) : answer_subquery(c, p, out);
    }
    if (root->n->type == PS_PQ_VSTRING && !instant)
        return ps_err_set(c->err, PS_EINVAL,
                          "invalid expression type \"string\" for range query, must be Scalar or instant Vector");
    int ret;
    if (instant) {
        pq_val_t v;
        if ((ret = pq_eval(c, root, o->start, &v)) != 0)
            return ret;
        out->t = o->start;
        if (v.type == PS_PQ_VSCALAR) {
            out->type = PS_PQ_VSCALAR;
            out->scalar = v.s;
            return 0;
        }
        if (v.type == PS_PQ_VSTRING) {
            out->type = PS_PQ_VSTRING;
            out->str = ps_arena_strndup(c->arena, v.str, strlen(v.str));
            return 0;
        }
        if ((ret = take_budget(c, v.v.n)) != 0)
            return ret;
        out->type = PS_PQ_VVECTOR;
        out->n = v.v.n;
        out->series = ps_arena_alloc(c->arena, (v.v.n + 1) * sizeof(ps_qseries_t));
        for (uint32_t i = 0; i < v.v.n; i++) {
            ps_qseries_t *q = &out->series[i];
            q->labels = labels_copy(c->arena, &v.v.e[i].ls);
            q->n = 1;
            q->points = ps_arena_alloc(c->arena, sizeof(ps_point_t));
            q->points[0] = (ps_point_t){o->start, v.v.e[i].v};
        }
        return 0;
    }
    /* a range query: every step, each element into the series of its labels */
    ps_hmap_t idx;
    ps_hmap_init(&idx);
    rseries_t *rs = NULL;
    uint32_t nrs = 0, caprs = 0;
    ret = 0;
    for (int64_t ts = o->start; ts <= o->end && ret == 0; ts += o->step) {
        ps_arena_reset(&c->scratch);
        pq_val_t v;
        if ((ret = pq_eval(c, root, ts, &v)) != 0)
            break;
        if (v.type == PS_PQ_VSCALAR) {
            pq_elem_t *e = ps_arena_alloc(&c->scratch, sizeof(pq_elem_t));
            *e = (pq_elem_t){{0, NULL, 0}, v.s, ts, 0};
            v.v.e = e;
            v.v.n = 1;
        }
        if ((ret = take_budget(c, v.v.n)) != 0)
            break;
        for (uint32_t i = 0; i < v.v.n; i++) {
            const pq_elem_t *e = &v.v.e[i];
            pq_key_all(&c->kb, &e->ls);
            ps_buf_append(&c->kb, &e->src, sizeof(e->src));
            uint64_t si;
            if (!ps_hmap_get(&idx, c->kb.data, c->kb.len, &si)) {
                if (nrs == caprs) {
                    uint32_t nc = caprs ? caprs * 2 : 64;
                    rs = ps_xrealloc(rs, nc * sizeof(rseries_t));
                    c->mem += (uint64_t)(nc - caprs) * sizeof(rseries_t);
                    caprs = nc;
                }
                si = nrs++;
                rs[si] = (rseries_t){labels_copy(c->arena, &e->ls), NULL, 0, 0};
                ps_hmap_put(&idx, c->kb.data, c->kb.len, si);
            }
            rseries_t *r = &rs[si];
            if (r->n == r->cap) { /* charged before it is taken */
                uint32_t nc = r->cap ? r->cap * 2 : 16;
                c->mem += (uint64_t)(nc - r->cap) * sizeof(ps_point_t);
                if ((ret = pq_mem_check(c)) != 0)
                    break;
                r->pts = ps_xrealloc(r->pts, nc * sizeof(ps_point_t));
                r->cap = nc;
            }
            r->pts[r->n++] = (ps_point_t){ts, e->v};
        }
        if (o->end - ts < o->step)
            break; /* no overflow past end */
    }
    if (ret == 0) {
        out->type = PS_PQ_VMATRIX;
        out->n = nrs;
        out->series = ps_arena_alloc(c->arena, (nrs + 1) * sizeof(ps_qseries_t));
        for (uint32_t i = 0; i < nrs; i++) {
            ps_qseries_t *q = &out->series[i];
            q->labels = rs[i].ls;
            q->n = rs[i].n;
            q->points = ps_arena_alloc(c->arena, rs[i].n * sizeof(ps_point_t));
            memcpy(q->points, rs[i].pts, rs[i].n * sizeof(ps_point_t));
        }
        if (nrs > 1)
            qsort(out->series, nrs, sizeof(ps_qseries_t), cmp_qseries);
    }
    for (uint32_t i = 0; i < nrs; i++)
        free(rs[i].pts);
    free(rs);
    ps_hmap_dispose(&idx);
    return ret;
}

int ps_pq_check_durations(const ps_pq_node_t *e, const ps_pq_opts_t *o, ps_err_t *err)
{
    int64_t ms, range = o->end - o->start;
    int ret;
    if (e == NULL)
        return 0;
    if ((e->range_expr && (ret = ps_pq_duration_ms(e->range_expr, o->step, range, false, &ms, err)) != 0) ||
        (e->step_expr && (ret = ps_pq_duration_ms(e->step_expr, o->step, range, false, &ms, err)) != 0) ||
        (e->offset_expr && (ret = ps_pq_duration_ms(e->offset_expr, o->step, range, true, &ms, err)) != 0))
        return ret;
    switch (e->kind) {
    case PS_PQ_CALL:
        for (uint32_t i = 0; i < e->nargs; i++)
            if ((ret = ps_pq_check_durations(e->args[i], o, err)) != 0)
                return ret;
        return 0;
    case PS_PQ_AGG:
        if ((ret = ps_pq_check_durations(e->param, o, err)) != 0)
            return ret;
        return ps_pq_check_durations(e->expr, o, err);
    case PS_PQ_BINARY:
        if ((ret = ps_pq_check_durations(e->lhs, o, err)) != 0)
            return ret;
        return ps_pq_check_durations(e->rhs, o, err);
    case PS_PQ_MATRIX: case PS_PQ_SUBQUERY: case PS_PQ_UNARY: case PS_PQ_PAREN:
        return ps_pq_check_durations(e->expr, o, err);
    default: return 0;
    }
}

int ps_pq_eval(const ps_pq_node_t *e, const ps_pq_source_t *src, const ps_pq_opts_t *o, ps_arena_t *arena,
               ps_pq_result_t *out, ps_err_t *err)
{
    memset(out, 0, sizeof(*out));
    if (o->step < 0 || (o->step == 0 && o->start != o->end))
        return ps_err_set(err, PS_EINVAL,
                          "zero or negative query resolution step widths are not accepted. Try a positive integer");
    if (o->end < o->start)
        return ps_err_set(err, PS_EINVAL, "end timestamp must not be before start time");
    if (o->step > 0 && (uint64_t)(o->end - o->start) / (uint64_t)o->step > o->max_points)
        return ps_err_set(err, PS_EINVAL,
                          "exceeded maximum resolution of 11,000 points per timeseries. Try decreasing the query "
                          "resolution (?step=XX)");
    pq_ctx_t c = {.src = src, .o = o, .arena = arena, .err = err, .budget = o->max_samples,
                  .arena_base = arena->used_total, .open = o->compat == 2 ? 0 : 1};
    if (o->timeout > 0)
        c.deadline = ps_time_mono() + o->timeout * 1000000;
    pq_node_t *root = NULL;
    int ret = plan(&c, e, &root, 0, o->start, o->end);
    if (ret == 0)
        ret = run(&c, root, out);
    for (pq_node_t *p = c.all; p; p = p->next_all) {
        ps_hmap_dispose(&p->m1);
        ps_hmap_dispose(&p->m2);
        ps_hmap_dispose(&p->m3);
        for (uint32_t i = 0; i < p->sq_nlabels; i++)
            free(p->sq_cols[i].s);
        free(p->sq_cols);
        free(p->sq_spans);
        free(p->sq_labels);
        ps_arena_dispose(&p->sq_scratch);
        ps_regex_free(p->re);
        ps_regex_match_free(p->md);
    }
    ps_arena_dispose(&c.scratch);
    ps_buf_dispose(&c.kb);
    if (ret)
        memset(out, 0, sizeof(*out));
    else {
        pq_mono_annotate(&c);
        out->annots = c.annots;
        out->nannots = c.nannots;
        out->nannots_dropped = c.nannots_dropped;
    }
    return ret;
}
