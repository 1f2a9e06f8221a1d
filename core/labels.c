#include "labels.h"
#include "json.h"

#include <stdlib.h>
#include <string.h>

#include "varint.h"

bool ps_label_name_valid(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            continue;
        if (i > 0 && c >= '0' && c <= '9')
            continue;
        return false;
    }
    return true;
}

bool ps_metric_name_valid(const char *s, size_t n)
{
    if (n == 0)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = s[i];
        if (c == '_' || c == ':' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'))
            continue;
        if (i > 0 && c >= '0' && c <= '9')
            continue;
        return false;
    }
    return true;
}

bool ps_label_name_utf8_valid(const char *s, size_t n)
{
    return n > 0 && memchr(s, 0, n) == NULL && ps_utf8_valid(s, n);
}

bool ps_utf8_valid(const char *str, size_t n)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) {
            i++;
            continue;
        }
        size_t len;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) {
            len = 2;
            cp = c & 0x1f;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3;
            cp = c & 0x0f;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4;
            cp = c & 0x07;
        } else {
            return false;
        }
        if (i + len > n)
            return false;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                return false;
            cp = (cp << 6) | (s[i + k] & 0x3f);
        }
        if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
            cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            return false;
        i += len;
    }
    return true;
}

/* Label names in their sort order: bytes, then a prefix first. */
static int cmp_name(const char *a, size_t an, const char *b, size_t bn)
{
    size_t n = an < bn ? an : bn;
    int r = n > 0 ? memcmp(a, b, n) : 0;
    return r != 0 ? r : (an > bn) - (an < bn);
}

static int cmp_pair(const void *a, const void *b)
{
    const ps_label_pair_t *x = a, *y = b;
    return cmp_name(x->name, x->nlen, y->name, y->nlen);
}

int ps_labels_normalize(ps_labels_t *ls, ps_err_t *err)
{
    if (ls->n > PS_LABELS_MAX)
        return ps_err_set(err, PS_EINVAL, "too many labels: %u (the limit is %d)", ls->n, PS_LABELS_MAX);
    for (uint32_t i = 0; i < ls->n; i++) {
        const ps_label_pair_t *p = &ls->pairs[i];
        if (p->nlen > PS_LABEL_NAME_MAX)
            return ps_err_set(err, PS_EINVAL, "label name \"%.32s...\" is %u bytes long (the limit is %d)", p->name,
                              p->nlen, PS_LABEL_NAME_MAX);
        bool is_name = p->nlen == 8 && memcmp(p->name, "__name__", 8) == 0;
        if (!ps_label_name_utf8_valid(p->name, p->nlen))
            return ps_err_set(err, PS_EINVAL, "invalid label name \"%.*s\": %s", (int)p->nlen, p->name,
                              p->nlen == 0 ? "empty" : memchr(p->name, 0, p->nlen) ? "contains a NUL byte"
                                                                                  : "not valid UTF-8");
        if (p->vlen > PS_LABEL_VALUE_MAX)
            return ps_err_set(err, PS_EINVAL, "value of label %.*s is %u bytes long (the limit is %d)", (int)p->nlen,
                              p->name, p->vlen, PS_LABEL_VALUE_MAX);
        if (!ps_utf8_valid(p->value, p->vlen))
            return ps_err_set(err, PS_EINVAL, "value of label %.*s is not valid UTF-8", (int)p->nlen, p->name);
        if (is_name && !ps_label_name_utf8_valid(p->value, p->vlen))
            return ps_err_set(err, PS_EINVAL, "invalid metric name \"%.*s\": %s", (int)p->vlen, p->value,
                              p->vlen == 0 ? "empty" : "contains a NUL byte");
    }
    if (ls->n > 1)
        qsort(ls->pairs, ls->n, sizeof(*ls->pairs), cmp_pair);
    for (uint32_t i = 1; i < ls->n; i++)
        if (cmp_pair(&ls->pairs[i - 1], &ls->pairs[i]) == 0)
            return ps_err_set(err, PS_EINVAL, "duplicate label name \"%.*s\"", (int)ls->pairs[i].nlen,
                              ls->pairs[i].name);
    return 0;
}

const ps_label_pair_t *ps_labels_get(const ps_labels_t *ls, const char *name)
{
    size_t n = strlen(name);
    for (uint32_t i = 0; i < ls->n; i++)
        if (ls->pairs[i].nlen == n && memcmp(ls->pairs[i].name, name, n) == 0)
            return &ls->pairs[i];
    return NULL;
}

static uint8_t *put_len_bytes(uint8_t *p, const char *s, uint32_t n)
{
    uint32_t v = n;
    while (v >= 0x80) {
        *p++ = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    *p++ = (uint8_t)v;
    if (n)
        memcpy(p, s, n);
    return p + n;
}

size_t ps_labels_encoded_max(const ps_labels_t *ls)
{
    size_t n = 0;
    for (uint32_t i = 0; i < ls->n; i++)
        n += (size_t)ls->pairs[i].nlen + ls->pairs[i].vlen + 10; /* two uvarints of 32 bits */
    return n;
}

size_t ps_labels_encode_to(const ps_labels_t *ls, uint8_t *dst)
{
    uint8_t *p = dst;
    for (uint32_t i = 0; i < ls->n; i++) {
        p = put_len_bytes(p, ls->pairs[i].name, ls->pairs[i].nlen);
        p = put_len_bytes(p, ls->pairs[i].value, ls->pairs[i].vlen);
    }
    return (size_t)(p - dst);
}

void ps_labels_encode(const ps_labels_t *ls, ps_buf_t *out)
{
    uint8_t *p = ps_buf_reserve(out, ps_labels_encoded_max(ls));
    out->len += ps_labels_encode_to(ls, p);
}

int ps_labels_decode(const void *p, size_t n, ps_arena_t *arena, ps_labels_t *out)
{
    ps_dec_t d;
    uint32_t count = 0;
    ps_dec_init(&d, p, n);
    while (ps_dec_left(&d) > 0 && !d.err) {
        uint64_t l = ps_dec_uvarint(&d);
        ps_dec_bytes(&d, l);
        l = ps_dec_uvarint(&d);
        ps_dec_bytes(&d, l);
        count++;
    }
    if (d.err || count > PS_LABELS_MAX * 4)
        return PS_ECORRUPT;
    out->n = count;
    out->pairs = ps_arena_calloc(arena, count ? count : 1, sizeof(ps_label_pair_t));
    ps_dec_init(&d, p, n);
    for (uint32_t i = 0; i < count; i++) {
        uint64_t l = ps_dec_uvarint(&d);
        const uint8_t *s = ps_dec_bytes(&d, l);
        out->pairs[i].name = ps_arena_strndup(arena, (const char *)s, l);
        out->pairs[i].nlen = (uint32_t)l;
        l = ps_dec_uvarint(&d);
        s = ps_dec_bytes(&d, l);
        out->pairs[i].value = ps_arena_strndup(arena, (const char *)s, l);
        out->pairs[i].vlen = (uint32_t)l;
    }
    return d.err ? PS_ECORRUPT : 0;
}

void ps_labels_format(const ps_labels_t *ls, ps_buf_t *out)
{
    ps_buf_putc(out, '{');
    for (uint32_t i = 0; i < ls->n; i++) {
        if (i)
            ps_buf_append(out, ", ", 2);
        if (ps_label_name_valid(ls->pairs[i].name, ls->pairs[i].nlen))
            ps_buf_append(out, ls->pairs[i].name, ls->pairs[i].nlen);
        else /* a UTF-8 name, quoted as Prometheus 3 prints it: {"service.name"="x"} */
            ps_buf_json_str(out, ls->pairs[i].name, ls->pairs[i].nlen);
        ps_buf_putc(out, '=');
        ps_buf_json_str(out, ls->pairs[i].value, ls->pairs[i].vlen);
    }
    ps_buf_putc(out, '}');
}

void ps_labels_json(const ps_labels_t *ls, ps_json_t *j)
{
    ps_json_obj(j);
    for (uint32_t i = 0; i < ls->n; i++) {
        ps_json_keyn(j, ls->pairs[i].name, ls->pairs[i].nlen);
        ps_json_str(j, ls->pairs[i].value, ls->pairs[i].vlen);
    }
    ps_json_end(j);
}

int ps_labels_cmp(const ps_labels_t *x, const ps_labels_t *y)
{
    for (uint32_t i = 0; i < x->n && i < y->n; i++) {
        int c = strcmp(x->pairs[i].name, y->pairs[i].name);
        if (c)
            return c;
        c = strcmp(x->pairs[i].value, y->pairs[i].value);
        if (c)
            return c;
    }
    return (x->n > y->n) - (x->n < y->n);
}

/* ---- editing ---- */

/* Index of name, or where it would go; *found tells which. */
static uint32_t lower_bound(const ps_labels_t *ls, const char *name, size_t nlen, bool *found)
{
    uint32_t lo = 0, hi = ls->n;
    while (lo < hi) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (cmp_name(ls->pairs[mid].name, ls->pairs[mid].nlen, name, nlen) < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    *found = lo < ls->n && cmp_name(ls->pairs[lo].name, ls->pairs[lo].nlen, name, nlen) == 0;
    return lo;
}

/* Makes the pair array ours (from arena) with room for need pairs. */
static void reserve(ps_labels_t *ls, ps_arena_t *arena, uint32_t need)
{
    if (ls->cap > 0 && ls->cap >= need)
        return;
    uint32_t cap = ls->cap * 2 > need ? ls->cap * 2 : need;
    if (cap < 16)
        cap = 16;
    ps_label_pair_t *p = ps_arena_alloc(arena, cap * sizeof(ps_label_pair_t));
    if (ls->n > 0)
        memcpy(p, ls->pairs, ls->n * sizeof(ps_label_pair_t));
    ls->pairs = p;
    ls->cap = cap;
}

static void remove_at(ps_labels_t *ls, ps_arena_t *arena, uint32_t i)
{
    reserve(ls, arena, ls->n);
    memmove(&ls->pairs[i], &ls->pairs[i + 1], (ls->n - i - 1) * sizeof(ps_label_pair_t));
    ls->n--;
}

void ps_labels_set(ps_labels_t *ls, ps_arena_t *arena, const char *name, size_t nlen, const char *value,
                   size_t vlen)
{
    bool found;
    uint32_t i = lower_bound(ls, name, nlen, &found);
    if (vlen == 0) {
        if (found)
            remove_at(ls, arena, i);
        return;
    }
    reserve(ls, arena, found ? ls->n : ls->n + 1);
    char *v = ps_arena_strndup(arena, value, vlen);
    if (found) {
        ls->pairs[i].value = v;
        ls->pairs[i].vlen = (uint32_t)vlen;
        return;
    }
    memmove(&ls->pairs[i + 1], &ls->pairs[i], (ls->n - i) * sizeof(ps_label_pair_t));
    ls->pairs[i].name = ps_arena_strndup(arena, name, nlen);
    ls->pairs[i].nlen = (uint32_t)nlen;
    ls->pairs[i].value = v;
    ls->pairs[i].vlen = (uint32_t)vlen;
    ls->n++;
}

void ps_labels_del(ps_labels_t *ls, ps_arena_t *arena, const char *name, size_t nlen)
{
    bool found;
    uint32_t i = lower_bound(ls, name, nlen, &found);
    if (found)
        remove_at(ls, arena, i);
}

const char *ps_labels_value(const ps_labels_t *ls, const char *name)
{
    bool found;
    uint32_t i = lower_bound(ls, name, strlen(name), &found);
    return found ? ls->pairs[i].value : NULL;
}
