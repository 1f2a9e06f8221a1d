/*
 * labels.c - label-set and string-literal parsing (see labels.h).
 */
#include "labels.h"

#include <stdio.h>

static int err_at(ps_err_t *err, size_t pos, const char *fmt, const char *what)
{
    char msg[256];
    snprintf(msg, sizeof(msg), fmt, what);
    return ps_err_set(err, PS_EINVAL, "1:%zu: %s", pos + 1, msg);
}

static int hexval(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}


int ps_parse_string(const char *s, size_t n, size_t *end, ps_arena_t *arena, char **out, size_t *outlen,
                    ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    int ret = 0;
    char q = s[0];
    size_t i = 1;
    if (n == 0 || (q != '"' && q != '\'' && q != '`'))
        return err_at(err, 0, "expected a string, got %s", n ? "another character" : "end of input");
    for (;;) {
        if (i >= n) {
            ret = err_at(err, i, "unterminated quoted string%s", "");
            goto Exit;
        }
        char c = s[i];
        if (c == q) {
            i++;
            break;
        }
        if (q == '`' || c != '\\') {
            if (c == '\n' && q != '`') {
                ret = err_at(err, i, "unterminated quoted string%s", "");
                goto Exit;
            }
            ps_buf_putc(&b, (uint8_t)c);
            i++;
            continue;
        }
        /* escape */
        size_t at = i;
        if (++i >= n) {
            ret = err_at(err, at, "unterminated escape sequence%s", "");
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
                ret = err_at(err, at, "unknown escape sequence \\%s", c == '"' ? "\"" : "'");
                goto Exit;
            }
            ps_buf_putc(&b, (uint8_t)c);
            break;
        case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': {
            if (i + 2 > n) {
                ret = err_at(err, at, "unterminated escape sequence%s", "");
                goto Exit;
            }
            int v = c - '0';
            for (int k = 0; k < 2; k++) {
                char d = s[i++];
                if (d < '0' || d > '7') {
                    ret = err_at(err, at, "invalid octal escape%s", "");
                    goto Exit;
                }
                v = v * 8 + (d - '0');
            }
            if (v > 255) {
                ret = err_at(err, at, "octal escape value > 255%s", "");
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
                ret = err_at(err, at, "unterminated escape sequence%s", "");
                goto Exit;
            }
            uint32_t v = 0;
            for (int k = 0; k < len; k++) {
                int h = hexval(s[i++]);
                if (h < 0) {
                    ret = err_at(err, at, "invalid hex digit in escape sequence%s", "");
                    goto Exit;
                }
                v = v * 16 + (uint32_t)h;
            }
            if (c == 'x') {
                ps_buf_putc(&b, (uint8_t)v);
            } else {
                if (v > 0x10ffff || (v >= 0xd800 && v < 0xe000)) {
                    ret = err_at(err, at, "escape sequence is an invalid Unicode code point%s", "");
                    goto Exit;
                }
                ps_buf_put_utf8(&b, v);
            }
            break;
        }
        default: {
            char e[3] = {'\\', c, 0};
            ret = err_at(err, at, "unknown escape sequence %s", e);
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

static int is_name_char(char c, int first)
{
    return c == '_' || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (!first && c >= '0' && c <= '9');
}

int ps_parse_labelset(const char *s, size_t n, ps_arena_t *arena, ps_labels_t *out, ps_err_t *err)
{
    size_t i = skip_ws(s, n, 0), cap = 8;
    int braced = 0;
    out->n = 0;
    out->pairs = ps_arena_alloc(arena, cap * sizeof(ps_label_pair_t));
    if (i < n && s[i] == '{') {
        braced = 1;
        i = skip_ws(s, n, i + 1);
    }
    while (i < n && s[i] != '}') {
        size_t start = i;
        if (!is_name_char(s[i], 1))
            return err_at(err, i, "expected label name, got \"%.1s\"", s + i);
        while (i < n && is_name_char(s[i], 0))
            i++;
        size_t nlen = i - start;
        i = skip_ws(s, n, i);
        if (i >= n)
            return err_at(err, i, "expected \"=\" after label name, got %s", "end of input");
        if (s[i] != '=' || (i + 1 < n && s[i + 1] == '~'))
            return err_at(err, i, "expected \"=\" after label name (label sets take only =), got \"%.1s\"", s + i);
        i = skip_ws(s, n, i + 1);
        if (i >= n)
            return err_at(err, i, "expected label value, got %s", "end of input");
        size_t used;
        char *val;
        size_t vlen;
        int ret = ps_parse_string(s + i, n - i, &used, arena, &val, &vlen, err);
        if (ret) {
            /* re-anchor the position in err to the whole input */
            ps_err_t inner = *err;
            size_t pos = 0;
            const char *colon = strchr(inner.msg + 2, ':');
            if (sscanf(inner.msg, "1:%zu", &pos) == 1 && colon)
                ps_err_set(err, ret, "1:%zu%s", pos + i, colon);
            return ret;
        }
        if (out->n == PS_LABELS_MAX)
            return ps_err_set(err, PS_EINVAL, "1:%zu: too many labels (the limit is %d)", start + 1, PS_LABELS_MAX);
        if (out->n == cap) {
            ps_label_pair_t *np = ps_arena_alloc(arena, cap * 2 * sizeof(*np));
            memcpy(np, out->pairs, cap * sizeof(*np));
            out->pairs = np;
            cap *= 2;
        }
        ps_label_pair_t *p = &out->pairs[out->n++];
        p->name = ps_arena_strndup(arena, s + start, nlen);
        p->nlen = (uint32_t)nlen;
        p->value = val;
        p->vlen = (uint32_t)vlen;
        i = skip_ws(s, n, i + used);
        if (i < n && s[i] == ',') {
            i = skip_ws(s, n, i + 1);
            continue;
        }
        if (i < n && s[i] != '}')
            return err_at(err, i, "expected \",\" or \"}\", got \"%.1s\"", s + i);
    }
    if (braced) {
        if (i >= n)
            return err_at(err, i, "expected \"}\", got %s", "end of input");
        i = skip_ws(s, n, i + 1);
    } else if (i < n) {
        return err_at(err, i, "unexpected \"%.1s\"", s + i);
    }
    if (i < n)
        return err_at(err, i, "unexpected \"%.1s\" after the label set", s + i);
    return ps_labels_normalize(out, err);
}
