/*
 * promql_util.c - helpers of the PromQL engine that both promql_eval.c (the engine) and
 * promql_func.c (the functions) use: the name label dropped, the same-labelset checks, quantile,
 * Go's 'f' float format. It calls neither of them (promql_int.h tells the order).
 */
#include "promql_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "core/fmt.h"

ps_labels_t pq_drop_name_in(ps_arena_t *a, const ps_labels_t *ls)
{
    uint32_t i = 0;
    while (i < ls->n && strcmp(ls->pairs[i].name, "__name__") != 0)
        i++;
    if (i == ls->n)
        return ps_labels_borrow(ls);
    if (i == 0) {
        ps_labels_t out = {ls->n - 1, ls->pairs + 1, 0};
        return out;
    }
    ps_labels_t out = {ls->n - 1, ps_arena_alloc(a, ls->n * sizeof(ps_label_pair_t)), 0};
    memcpy(out.pairs, ls->pairs, i * sizeof(ps_label_pair_t));
    memcpy(out.pairs + i, ls->pairs + i + 1, (ls->n - i - 1) * sizeof(ps_label_pair_t));
    return out;
}

ps_labels_t pq_drop_name(pq_ctx_t *c, const ps_labels_t *ls)
{
    return pq_drop_name_in(&c->scratch, ls);
}

/* rangeEval's check: "vector cannot contain metrics with the same labelset". */
int pq_check_unique(pq_ctx_t *c, pq_node_t *p, const pq_vec_t *v)
{
    if (v->n < 2)
        return 0;
    ps_hmap_clear(&p->m2);
    for (uint32_t i = 0; i < v->n; i++) {
        uint64_t x;
        pq_key_all(&c->kb, &v->e[i].ls);
        if (ps_hmap_get(&p->m2, c->kb.data, c->kb.len, &x))
            return ps_err_set(c->err, PS_ELIMIT, "vector cannot contain metrics with the same labelset");
        ps_hmap_put(&p->m2, c->kb.data, c->kb.len, i);
    }
    return 0;
}

int pq_check_unique_range(pq_ctx_t *c, pq_node_t *p, const ps_labels_t *ls, uint64_t id)
{
    uint64_t x;
    pq_key_all(&c->kb, ls);
    if (!ps_hmap_get(&p->m3, c->kb.data, c->kb.len, &x)) {
        ps_hmap_put(&p->m3, c->kb.data, c->kb.len, id);
        return 0;
    }
    return x == id ? 0 : ps_err_set(c->err, PS_ELIMIT, "vector cannot contain metrics with the same labelset");
}

/* Go's sort.Sort of vectorByValueHeap: NaN first, then ascending. */
static int cmp_value_nan_first(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    if (isnan(x))
        return isnan(y) ? 0 : -1;
    if (isnan(y))
        return 1;
    return (x > y) - (x < y);
}

void ps_pq_annot_text(const ps_pq_annot_t *a, const char *query, size_t qlen, char *buf, size_t size)
{
    uint32_t line = 1, col = 1;
    for (uint32_t k = 0; k < a->pos && k < qlen; k++) {
        if (query[k] == '\n') {
            line++;
            col = 1;
        } else {
            col++;
        }
    }
    snprintf(buf, size, "%s (%u:%u)", a->msg, line, col);
}

/* quantile (promql/quantile.go); exact_rank (Prometheus 3): a rank on a value is that value, so
 * that an infinite neighbour weighted 0 does not make NaN */
double pq_quantile(double q, double *vals, uint32_t n, bool exact_rank)
{
    if (n == 0)
        return NAN;
    if (q < 0)
        return -INFINITY;
    if (q > 1)
        return INFINITY;
    if (isnan(q))
        return NAN;
    qsort(vals, n, sizeof(double), cmp_value_nan_first);
    double fn = (double)n;
    double rank = q * (fn - 1);
    double lower = pq_go_max(0, floor(rank));
    double upper = pq_go_min(fn - 1, lower + 1);
    double weight = rank - floor(rank);
    if (weight == 0 && exact_rank)
        return vals[(uint32_t)lower];
    return vals[(uint32_t)lower] * (1 - weight) + vals[(uint32_t)upper] * weight;
}

/* ---- Go's FormatFloat(v, 'f', -1, 64) ---- */

void ps_pq_format_f(double v, char *buf, size_t size)
{
    if (isnan(v) || isinf(v) || v == 0) {
        ps_fmt_float(v, buf, size);
        return;
    }
    /* the shortest digits that read back as v, then written without an exponent */
    char digits[24];
    int exp;
    size_t nd = (size_t)ps_fmt_shortest(v, digits, &exp); /* value = d1.d2d3... * 10^exp */
    bool neg = v < 0;
    ps_buf_t b = PS_BUF_INIT;
    if (neg)
        ps_buf_putc(&b, '-');
    int point = exp + 1; /* digits before the decimal point */
    if (point <= 0) {
        PS_BUF_LIT(&b, "0.");
        for (int i = 0; i < -point; i++)
            ps_buf_putc(&b, '0');
        ps_buf_append(&b, digits, nd);
    } else {
        for (int i = 0; i < point; i++)
            ps_buf_putc(&b, i < (int)nd ? (uint8_t)digits[i] : '0');
        if ((int)nd > point) {
            ps_buf_putc(&b, '.');
            ps_buf_append(&b, digits + point, nd - (size_t)point);
        }
    }
    snprintf(buf, size, "%.*s", (int)b.len, (const char *)b.data);
    ps_buf_dispose(&b);
}
