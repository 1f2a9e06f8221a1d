/*
 * json.c - the JSON writer (see json.h).
 */
#include "json.h"

#include <assert.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "fmt.h"

void ps_json_init(ps_json_t *j, ps_buf_t *out)
{
    memset(j, 0, sizeof(*j));
    j->out = out;
}

void ps_json_envelope(ps_json_t *j, ps_buf_t *out)
{
    ps_json_init(j, out);
    ps_json_obj(j);
    ps_json_key(j, "status");
    ps_json_cstr(j, "success");
    ps_json_key(j, "data");
}

void ps_json_envelope_close(ps_json_t *j)
{
    ps_json_end(j);
    ps_buf_putc(j->out, '\n');
}

/* Before any value or key: the comma that separates it from the previous item of its level. */
static inline void sep(ps_json_t *j)
{
    if (j->after_key) {
        j->after_key = false;
        return;
    }
    if (j->has_items[j->depth])
        ps_buf_putc(j->out, ',');
    j->has_items[j->depth] = true;
}

static void open_level(ps_json_t *j, char c, char closer)
{
    sep(j);
    assert(j->depth < PS_JSON_MAX_DEPTH);
    ps_buf_putc(j->out, (uint8_t)c);
    j->depth++;
    j->has_items[j->depth] = false;
    j->closers[j->depth] = closer;
}

void ps_json_obj(ps_json_t *j)
{
    open_level(j, '{', '}');
}

void ps_json_arr(ps_json_t *j)
{
    open_level(j, '[', ']');
}

void ps_json_end(ps_json_t *j)
{
    assert(j->depth > 0);
    ps_buf_putc(j->out, (uint8_t)j->closers[j->depth]);
    j->depth--;
    j->after_key = false;
}

void ps_json_keyn(ps_json_t *j, const char *k, size_t n)
{
    sep(j);
    ps_buf_json_str(j->out, k, n);
    ps_buf_putc(j->out, ':');
    j->after_key = true;
}

void ps_json_key(ps_json_t *j, const char *k)
{
    ps_json_keyn(j, k, strlen(k));
}

void ps_json_str(ps_json_t *j, const char *s, size_t n)
{
    sep(j);
    ps_buf_json_str(j->out, s, n);
}

void ps_json_cstr(ps_json_t *j, const char *s)
{
    if (s == NULL)
        ps_json_null(j);
    else
        ps_json_str(j, s, strlen(s));
}

/* Decimal digits without printf: flame graphs write millions of integers. */
static void put_u64(ps_buf_t *b, uint64_t u, bool neg)
{
    char tmp[24];
    size_t i = sizeof(tmp);
    do {
        tmp[--i] = (char)('0' + u % 10);
        u /= 10;
    } while (u != 0);
    if (neg)
        tmp[--i] = '-';
    ps_buf_append(b, tmp + i, sizeof(tmp) - i);
}

void ps_buf_put_i64(ps_buf_t *b, int64_t v)
{
    put_u64(b, v < 0 ? 0 - (uint64_t)v : (uint64_t)v, v < 0);
}

void ps_json_int(ps_json_t *j, int64_t v)
{
    sep(j);
    ps_buf_put_i64(j->out, v);
}

void ps_json_uint(ps_json_t *j, uint64_t v)
{
    sep(j);
    put_u64(j->out, v, false);
}

void ps_json_double(ps_json_t *j, double v)
{
    char b[48];
    ps_fmt_float(v, b, sizeof(b));
    sep(j);
    if (isfinite(v))
        ps_buf_append(j->out, b, strlen(b));
    else
        ps_buf_json_str(j->out, b, strlen(b));
}

void ps_json_fixed(ps_json_t *j, double v, int decimals)
{
    if (!isfinite(v)) {
        ps_json_double(j, v);
        return;
    }
    sep(j);
    char b[64];
    int n = snprintf(b, sizeof(b), "%.*f", decimals, v);
    if (n > 1 && b[0] == '-' && strspn(b + 1, "0.") == (size_t)(n - 1))
        memmove(b, b + 1, (size_t)n); /* no "-0.00" */
    ps_buf_append(j->out, b, strlen(b));
}

void ps_json_double_str(ps_json_t *j, double v)
{
    char b[48];
    ps_fmt_float(v, b, sizeof(b));
    ps_json_str(j, b, strlen(b));
}

void ps_json_bool(ps_json_t *j, bool v)
{
    sep(j);
    ps_buf_append(j->out, v ? "true" : "false", v ? 4 : 5);
}

void ps_json_null(ps_json_t *j)
{
    sep(j);
    ps_buf_append(j->out, "null", 4);
}

void ps_json_raw(ps_json_t *j, const char *s, size_t n)
{
    sep(j);
    ps_buf_append(j->out, s, n);
}

int ps_json_prescan(const char *s, size_t n, const char *what, size_t max_depth, size_t *values, bool *neg_zero,
                    ps_err_t *err)
{
    size_t depth = 0, line = 1, col = 0;
    bool in_str = false, esc = false;
    *values = 1;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        col++;
        if (in_str) {
            if (esc)
                esc = false;
            else if (c == '\\')
                esc = true;
            else if (c == '"')
                in_str = false;
            continue;
        }
        switch (c) {
        case '"': in_str = true; break;
        case '[': case '{':
            (*values)++;
            if (++depth > max_depth)
                return ps_err_set_at(err, PS_EINVAL, i, "%s: line %zu column %zu: nesting deeper than %zu", what, line,
                                     col, max_depth);
            break;
        case ']': case '}': if (depth > 0) depth--; break;
        case ',': case ':': (*values)++; break;
        case '\n': line++; col = 0; break;
        case '-':
            if (neg_zero != NULL && i + 1 < n && s[i + 1] == '0' &&
                (i + 2 == n || !(s[i + 2] == '.' || s[i + 2] == 'e' || s[i + 2] == 'E' || (s[i + 2] >= '0' && s[i + 2] <= '9'))))
                *neg_zero = true;
            break;
        default: break;
        }
    }
    return 0;
}
