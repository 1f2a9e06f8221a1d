/*
 * labels.c - label-set and string-literal parsing, and quoting a string as Go's %q (see labels.h).
 */
#include "labels.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "core/encode.h"

/* A label-set error at byte offset pos of the whole input: "1:<pos+1>: <what>". */
__attribute__((format(printf, 3, 4))) static int err_at(ps_err_t *err, size_t pos, const char *fmt, ...)
{
    char msg[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    return ps_err_set_at(err, PS_EINVAL, pos, "1:%zu: %s", pos + 1, msg);
}

/* A string-literal error: the offset in the literal, and the message without a position. */
#define str_err(err, pos, ...) ps_err_set_at((err), PS_EINVAL, (pos), __VA_ARGS__)


int ps_parse_string(const char *s, size_t n, size_t *end, ps_arena_t *arena, char **out, size_t *outlen,
                    ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    int ret = 0;
    char q = n > 0 ? s[0] : 0; /* s[0] only if there is one */
    size_t i = 1;
    if (n == 0 || (q != '"' && q != '\'' && q != '`'))
        return str_err(err, 0, "expected a string, got %s", n ? "another character" : "end of input");
    for (;;) {
        if (i >= n) {
            ret = str_err(err, i, "unterminated quoted string");
            goto Exit;
        }
        char c = s[i];
        if (c == q) {
            i++;
            break;
        }
        if (q == '`' || c != '\\') {
            if (c == '\n' && q != '`') {
                ret = str_err(err, i, "unterminated quoted string");
                goto Exit;
            }
            ps_buf_putc(&b, (uint8_t)c);
            i++;
            continue;
        }
        /* escape */
        size_t at = i;
        if (++i >= n) {
            ret = str_err(err, at, "unterminated escape sequence");
            goto Exit;
        }
        c = s[i++];
        switch (c) {
        case 'a': ps_buf_putc(&b, '\a'); break;
        case 'b': ps_buf_putc(&b, '\b'); break;
        case 'f': ps_buf_putc(&b, '\f'); break;
        case 'n': ps_buf_putc(&b, '\n'); break;
        case 'r': ps_buf_putc(&b, '\r'); break;
        case 't': ps_buf_putc(&b, '\t'); break;
        case 'v': ps_buf_putc(&b, '\v'); break;
        case '\\': ps_buf_putc(&b, '\\'); break;
        case '"':
        case '\'':
            if (c != q) {
                ret = str_err(err, at, "unknown escape sequence \\%c", c);
                goto Exit;
            }
            ps_buf_putc(&b, (uint8_t)c);
            break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            if (i + 2 > n) {
                ret = str_err(err, at, "unterminated escape sequence");
                goto Exit;
            }
            int v = c - '0';
            for (int k = 0; k < 2; k++) {
                char d = s[i++];
                if (d < '0' || d > '7') {
                    ret = str_err(err, at, "invalid octal escape");
                    goto Exit;
                }
                v = v * 8 + (d - '0');
            }
            if (v > 255) {
                ret = str_err(err, at, "octal escape value > 255");
                goto Exit;
            }
            ps_buf_putc(&b, (uint8_t)v);
            break;
        }
        case 'x':
        case 'u':
        case 'U': {
            int len = c == 'x' ? 2 : c == 'u' ? 4 : 8;
            if (i + (size_t)len > n) {
                ret = str_err(err, at, "unterminated escape sequence");
                goto Exit;
            }
            uint32_t v = 0;
            for (int k = 0; k < len; k++) {
                int h = ps_hex_digit((unsigned char)s[i++]);
                if (h < 0) {
                    ret = str_err(err, at, "invalid hex digit in escape sequence");
                    goto Exit;
                }
                v = v * 16 + (uint32_t)h;
            }
            if (c == 'x') {
                ps_buf_putc(&b, (uint8_t)v);
            } else {
                if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) {
                    ret = str_err(err, at, "escape sequence is an invalid Unicode code point");
                    goto Exit;
                }
                ps_buf_put_utf8(&b, v);
            }
            break;
        }
        default: {
            ret = str_err(err, at, "unknown escape sequence \\%c", c);
            goto Exit;
        }
        }
    }
    *end = i;
    *out = ps_arena_strndup(arena, b.len ? (const char *)b.data : "", b.len);
    *outlen = b.len;
Exit:
    ps_buf_dispose(&b);
    return ret;
}

static size_t skip_ws(const char *s, size_t n, size_t i)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
        i++;
    return i;
}

/* What to show of the input at s[i] (i < n) after "got": an operator (=~ != !~), one whole UTF-8
 * character, or else the byte escaped (\xff, \x00); written into out[16]. */
static const char *shown(char out[16], const char *s, size_t n, size_t i)
{
    unsigned char c = (unsigned char)s[i];
    size_t len = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (i + 1 < n && ((c == '=' && s[i + 1] == '~') || (c == '!' && (s[i + 1] == '=' || s[i + 1] == '~'))))
        len = 2;
    if (len == 0 || i + len > n || c < 0x20 || c == 0x7f || !ps_utf8_valid(s + i, len))
        snprintf(out, 16, "\\x%02x", c);
    else
        snprintf(out, 16, "%.*s", (int)len, s + i);
    return out;
}

static int is_name_char(char c, int first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

int ps_parse_labelset(const char *s, size_t n, ps_arena_t *arena, ps_labels_t *out, ps_err_t *err)
{
    size_t i = skip_ws(s, n, 0), cap = 8;
    int braced = 0;
    char got[16];
    out->n = 0;
    out->pairs = ps_arena_alloc(arena, cap * sizeof(ps_label_pair_t));
    if (i < n && s[i] == '{') {
        braced = 1;
        i = skip_ws(s, n, i + 1);
    }
    while (i < n && s[i] != '}') {
        size_t start = i, nlen;
        const char *name = s + start;
        if (s[i] == '"' || s[i] == '\'' || s[i] == '`') {
            /* a quoted UTF-8 name, as Prometheus 3 writes one: {"service.name"="x"} */
            size_t used;
            char *qn;
            ps_err_t inner;
            if (ps_parse_string(s + i, n - i, &used, arena, &qn, &nlen, &inner) != 0)
                return err_at(err, i + (size_t)inner.pos, "%s", inner.msg);
            name = qn;
            i += used;
        } else {
            if (!is_name_char(s[i], 1))
                return err_at(err, i, "expected label name, got \"%s\"", shown(got, s, n, i));
            while (i < n && is_name_char(s[i], 0))
                i++;
            nlen = i - start;
        }
        i = skip_ws(s, n, i);
        if (i >= n)
            return err_at(err, i, "expected \"=\" after label name, got %s", "end of input");
        if (s[i] != '=' || (i + 1 < n && s[i + 1] == '~'))
            return err_at(err, i, "expected \"=\" after label name (label sets take only =), got \"%s\"",
                          shown(got, s, n, i));
        i = skip_ws(s, n, i + 1);
        if (i >= n)
            return err_at(err, i, "expected label value, got %s", "end of input");
        size_t used;
        char *val;
        size_t vlen;
        ps_err_t inner;
        int ret = ps_parse_string(s + i, n - i, &used, arena, &val, &vlen, &inner);
        if (ret)
            return err_at(err, i + (size_t)inner.pos, "%s", inner.msg); /* the offset in the whole input */
        if (out->n == PS_LABELS_MAX)
            return err_at(err, start, "too many labels (the limit is %d)", PS_LABELS_MAX);
        if (out->n == cap) {
            ps_label_pair_t *np = ps_arena_alloc(arena, cap * 2 * sizeof(*np));
            memcpy(np, out->pairs, cap * sizeof(*np));
            out->pairs = np;
            cap *= 2;
        }
        ps_label_pair_t *p = &out->pairs[out->n++];
        p->name = ps_arena_strndup(arena, name, nlen);
        p->nlen = (uint32_t)nlen;
        p->value = val;
        p->vlen = (uint32_t)vlen;
        i = skip_ws(s, n, i + used);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        if (i < n && s[i] != '}')
            return err_at(err, i, "expected \",\" or \"}\", got \"%s\"", shown(got, s, n, i));
    }
    if (braced) {
        if (i >= n)
            return err_at(err, i, "expected \"}\", got %s", "end of input");
        i = skip_ws(s, n, i + 1);
    } else if (i < n) {
        return err_at(err, i, "unexpected \"%s\"", shown(got, s, n, i));
    }
    if (i < n)
        return err_at(err, i, "unexpected \"%s\" after the label set", shown(got, s, n, i));
    return ps_labels_normalize(out, err);
}

/* ---- quoting (Go's %q) ---- */

static size_t utf8_len(unsigned char c)
{
    return c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
}

void ps_quote_string(char *out, size_t size, const char *s, size_t n, size_t max)
{
    size_t o = 0, lim = n;
    bool cut = false;
    char esc[8];

    if (size == 0)
        return;
    if (n > max) {
        lim = max;
        while (lim > 0 && ((unsigned char)s[lim] & 0xc0) == 0x80)
            lim--;
        cut = true;
    }
#define PUT(str, len)                                                                                                  \
    do {                                                                                                               \
        size_t l_ = (len);                                                                                             \
        if (o + l_ >= size)                                                                                            \
            goto Full;                                                                                                 \
        memcpy(out + o, (str), l_);                                                                                    \
        o += l_;                                                                                                       \
    } while (0)
    PUT("\"", 1);
    for (size_t i = 0; i < lim;) {
        unsigned char c = (unsigned char)s[i];
        size_t cl = utf8_len(c);
        if (cl > 1 && i + cl <= lim && ps_utf8_valid(s + i, cl)) {
            PUT(s + i, cl);
            i += cl;
            continue;
        }
        i++;
        switch (c) {
        case '\a': PUT("\\a", 2); continue;
        case '\b': PUT("\\b", 2); continue;
        case '\f': PUT("\\f", 2); continue;
        case '\n': PUT("\\n", 2); continue;
        case '\r': PUT("\\r", 2); continue;
        case '\t': PUT("\\t", 2); continue;
        case '\v': PUT("\\v", 2); continue;
        case '\\': PUT("\\\\", 2); continue;
        case '"': PUT("\\\"", 2); continue;
        }
        if (c < 0x20 || c >= 0x7f) {
            snprintf(esc, sizeof(esc), "\\x%02x", c);
            PUT(esc, 4);
        } else {
            PUT((const char *)&c, 1);
        }
    }
    PUT("\"", 1);
    if (cut)
        PUT("...", 3);
#undef PUT
Full:
    out[o] = '\0';
}
