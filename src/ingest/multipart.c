/*
 * multipart.c - a small, strict, bounded multipart/form-data parser (RFC 7578 over RFC 2046), for
 * the bodies Pyroscope's SDKs upload to /ingest. See ingest.h (ps_mp_*).
 *
 * What is accepted:
 *
 *   Content-Type: multipart/form-data; boundary=B       (B quoted or not, 1..70 bchars)
 *
 *   [preamble CRLF]--B[padding]CRLF
 *   Content-Disposition: form-data; name="profile"; filename="profile"CRLF
 *   Content-Type: application/octet-stream CRLF          (optional; other headers are ignored)
 *   CRLF
 *   <data>CRLF--B[padding]CRLF
 *   ... more parts ...
 *   <data>CRLF--B--[epilogue]
 *
 * Example (nodejs 0.4.13, boundary ----formdata-undici-074999895113):
 *   2d 2d 2d 2d 2d 2d 66 6f ... 0d 0a                   "------formdata-undici-074999895113\r\n"
 *   43 6f 6e 74 65 6e 74 2d 44 69 73 70 ...             "Content-Disposition: form-data; name=\"profile\"; filename=\"profile\"\r\n"
 *   ... 0d 0a 0d 0a 1f 8b 08 00 ...                      headers end, gzip'd pprof follows
 *   ... 0d 0a 2d 2d 2d 2d 2d 2d 66 6f ... 2d 2d 0d 0a    "\r\n------formdata-undici-074999895113--\r\n"
 *
 * Limits (PS_ETOOBIG past them): PS_MP_MAX_PARTS parts, PS_MP_MAX_HEADER bytes of headers per
 * part. Everything else that is not as above is PS_EINVAL with what and where (byte offset, part
 * number). Part data is not copied: it points into the body.
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "ingest.h"

static bool is_bchar(char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || strchr("'()+_,-./:=? ", c);
}

static size_t skip_ws(const char *s, size_t i, size_t n)
{
    while (i < n && (s[i] == ' ' || s[i] == '\t'))
        i++;
    return i;
}

/* A header parameter value at s[*i]: a quoted-string (with \-escapes) or a token up to ';'.
 * The value is copied into arena. */
static int param_value(const char *s, size_t n, size_t *i, ps_arena_t *arena, const char **v, size_t *vlen,
                       ps_err_t *err, const char *what)
{
    size_t j = *i;
    if (j < n && s[j] == '"') {
        char *out = ps_arena_alloc(arena, n - j + 1);
        size_t o = 0;
        for (j++; j < n && s[j] != '"'; j++) {
            if (s[j] == '\\' && j + 1 < n)
                j++;
            out[o++] = s[j];
        }
        if (j >= n)
            return ps_err_set(err, PS_EINVAL, "%s: unterminated quoted string", what);
        out[o] = 0;
        *v = out;
        *vlen = o;
        *i = j + 1;
        return 0;
    }
    size_t st = j;
    while (j < n && s[j] != ';' && s[j] != ' ' && s[j] != '\t')
        j++;
    *v = ps_arena_strndup(arena, s + st, j - st);
    *vlen = j - st;
    *i = j;
    return 0;
}

/* Calls on_param for each ";name=value" after the media type s[0..]. */
typedef int (*param_fn)(void *ctx, const char *k, size_t kl, const char *v, size_t vl, ps_err_t *err);

static int each_param(const char *s, size_t n, size_t i, ps_arena_t *arena, void *ctx, param_fn fn, ps_err_t *err,
                      const char *what)
{
    int ret;
    for (;;) {
        i = skip_ws(s, i, n);
        if (i >= n)
            return 0;
        if (s[i] != ';')
            return ps_err_set(err, PS_EINVAL, "%s: expected ';' at offset %zu, got '%c'", what, i, s[i]);
        i = skip_ws(s, i + 1, n);
        if (i >= n)
            return 0; /* a trailing ';' */
        size_t ks = i;
        while (i < n && s[i] != '=' && s[i] != ';' && s[i] != ' ' && s[i] != '\t')
            i++;
        size_t kl = i - ks;
        i = skip_ws(s, i, n);
        if (kl == 0 || i >= n || s[i] != '=')
            return ps_err_set(err, PS_EINVAL, "%s: parameter at offset %zu has no '=value'", what, ks);
        i = skip_ws(s, i + 1, n);
        const char *v = NULL;
        size_t vl = 0;
        if ((ret = param_value(s, n, &i, arena, &v, &vl, err, what)) != 0)
            return ret;
        if ((ret = fn(ctx, s + ks, kl, v, vl, err)) != 0)
            return ret;
    }
}

typedef struct { const char *b; size_t bl; } boundary_ctx_t;

static int on_ct_param(void *ctx, const char *k, size_t kl, const char *v, size_t vl, ps_err_t *err)
{
    boundary_ctx_t *c = ctx;
    if (kl == 8 && strncasecmp(k, "boundary", 8) == 0) {
        c->b = v;
        c->bl = vl;
    }
    return 0;
}

int ps_mp_boundary(const char *ct, size_t n, ps_arena_t *arena, const char **boundary, size_t *blen, ps_err_t *err)
{
    static const char mt[] = "multipart/form-data";
    size_t i = skip_ws(ct, 0, n);
    if (n - i < sizeof(mt) - 1 || strncasecmp(ct + i, mt, sizeof(mt) - 1) != 0)
        return ps_err_set(err, PS_EINVAL, "Content-Type: expected multipart/form-data, got \"%.*s\"",
                          (int)(n > 64 ? 64 : n), ct);
    boundary_ctx_t c = {NULL, 0};
    int ret = each_param(ct, n, i + sizeof(mt) - 1, arena, &c, on_ct_param, err, "Content-Type");
    if (ret != 0)
        return ret;
    if (c.b == NULL)
        return ps_err_set(err, PS_EINVAL, "Content-Type: multipart/form-data without a boundary parameter");
    if (c.bl == 0 || c.bl > 70)
        return ps_err_set(err, PS_EINVAL, "Content-Type: the boundary must be 1 to 70 characters long, not %zu", c.bl);
    for (size_t j = 0; j < c.bl; j++)
        if (!is_bchar(c.b[j]) || (j == c.bl - 1 && c.b[j] == ' '))
            return ps_err_set(err, PS_EINVAL, "Content-Type: boundary character %zu (0x%02x) is not allowed (RFC 2046)",
                              j + 1, (unsigned char)c.b[j]);
    *boundary = c.b;
    *blen = c.bl;
    return 0;
}

static int on_disp_param(void *ctx, const char *k, size_t kl, const char *v, size_t vl, ps_err_t *err)
{
    ps_mp_part_t *part = ctx;
    if (kl == 4 && strncasecmp(k, "name", 4) == 0) {
        part->name = v;
        part->name_len = vl;
    } else if (kl == 8 && strncasecmp(k, "filename", 8) == 0) {
        part->filename = v;
        part->filename_len = vl;
    }
    return 0;
}

/* Parses the header block h[0..n) (lines ending in CRLF, the last one included) of part pi. */
static int part_headers(const char *h, size_t n, uint32_t pi, ps_arena_t *arena, ps_mp_part_t *part, ps_err_t *err)
{
    int ret;
    bool disp = false;
    size_t i = 0;
    while (i < n) {
        const char *eol = memmem(h + i, n - i, "\r\n", 2);
        size_t le = (size_t)(eol - h); /* the block ends in CRLF: eol is never NULL */
        const char *colon = memchr(h + i, ':', le - i);
        if (colon == NULL)
            return ps_err_set(err, PS_EINVAL, "multipart part %u: header line without ':' (\"%.*s\")", pi + 1,
                              (int)(le - i > 40 ? 40 : le - i), h + i);
        size_t nl = (size_t)(colon - (h + i));
        size_t vs = skip_ws(h, (size_t)(colon - h) + 1, le);
        if (nl == 19 && strncasecmp(h + i, "Content-Disposition", 19) == 0) {
            static const char fd[] = "form-data";
            if (le - vs < sizeof(fd) - 1 || strncasecmp(h + vs, fd, sizeof(fd) - 1) != 0)
                return ps_err_set(err, PS_EINVAL, "multipart part %u: Content-Disposition is not form-data", pi + 1);
            char what[64];
            snprintf(what, sizeof(what), "multipart part %u: Content-Disposition", pi + 1);
            if ((ret = each_param(h, le, vs + sizeof(fd) - 1, arena, part, on_disp_param, err, what)) != 0)
                return ret;
            disp = true;
        } else if (nl == 12 && strncasecmp(h + i, "Content-Type", 12) == 0) {
            part->content_type = h + vs;
            part->ct_len = le - vs;
        }
        i = le + 2;
    }
    if (!disp)
        return ps_err_set(err, PS_EINVAL, "multipart part %u: no Content-Disposition header", pi + 1);
    if (part->name == NULL || part->name_len == 0)
        return ps_err_set(err, PS_EINVAL, "multipart part %u: Content-Disposition has no name", pi + 1);
    return 0;
}

int ps_mp_parse(const void *body, size_t n, const char *boundary, size_t blen, ps_arena_t *arena, ps_mp_part_t **parts,
                uint32_t *nparts, ps_err_t *err)
{
    const char *b = body;
    int ret;
    /* the delimiter with its leading CRLF: "\r\n--" boundary */
    size_t dl = blen + 4;
    char *delim = ps_arena_alloc(arena, dl);
    memcpy(delim, "\r\n--", 4);
    memcpy(delim + 4, boundary, blen);

    size_t i;
    if (n >= dl - 2 && memcmp(b, delim + 2, dl - 2) == 0) {
        i = dl - 2;
    } else { /* a preamble */
        const char *d = memmem(b, n, delim, dl);
        if (d == NULL)
            return ps_err_set(err, PS_EINVAL, "multipart body: the boundary \"%.*s\" does not occur in it", (int)blen,
                              boundary);
        i = (size_t)(d - b) + dl;
    }
    ps_mp_part_t *out = ps_arena_calloc(arena, PS_MP_MAX_PARTS, sizeof(*out));
    uint32_t np = 0;
    for (;;) {
        /* just after a delimiter: "--" ends the body, else padding and CRLF start a part */
        if (n - i >= 2 && b[i] == '-' && b[i + 1] == '-')
            break;
        while (i < n && (b[i] == ' ' || b[i] == '\t'))
            i++;
        if (n - i < 2 || b[i] != '\r' || b[i + 1] != '\n')
            return ps_err_set(err, PS_EINVAL, "multipart body: expected CRLF after the boundary at offset %zu%s", i,
                              i >= n ? " (the body ends there: truncated)" : "");
        i += 2;
        if (np == PS_MP_MAX_PARTS)
            return ps_err_set(err, PS_ETOOBIG, "multipart body: more than %d parts", PS_MP_MAX_PARTS);
        ps_mp_part_t *p = &out[np];
        /* headers: up to an empty line, at most PS_MP_MAX_HEADER bytes */
        if (n - i >= 2 && b[i] == '\r' && b[i + 1] == '\n')
            return ps_err_set(err, PS_EINVAL, "multipart part %u: no Content-Disposition header", np + 1);
        size_t lim = n - i < PS_MP_MAX_HEADER + 4 ? n - i : PS_MP_MAX_HEADER + 4;
        const char *e = memmem(b + i, lim, "\r\n\r\n", 4);
        if (e == NULL) {
            if (lim == PS_MP_MAX_HEADER + 4)
                return ps_err_set(err, PS_ETOOBIG, "multipart part %u: headers longer than %d bytes", np + 1,
                                  PS_MP_MAX_HEADER);
            return ps_err_set(err, PS_EINVAL, "multipart part %u: headers not ended by an empty line (truncated)",
                              np + 1);
        }
        size_t hn = (size_t)(e - (b + i)) + 2;
        if (hn > PS_MP_MAX_HEADER)
            return ps_err_set(err, PS_ETOOBIG, "multipart part %u: headers longer than %d bytes", np + 1,
                              PS_MP_MAX_HEADER);
        if ((ret = part_headers(b + i, hn, np, arena, p, err)) != 0)
            return ret;
        /* the empty line's CRLF may be the delimiter's own (a part without a body, RFC 2046 5.1.1) */
        i += hn;
        const char *d = memmem(b + i, n - i, delim, dl);
        if (d == NULL)
            return ps_err_set(err, PS_EINVAL, "multipart part %u: not ended by the boundary (truncated body)", np + 1);
        size_t ds = d == b + i ? i : i + 2;
        p->data = (const uint8_t *)b + ds;
        p->len = (size_t)(d - (b + ds));
        np++;
        i = (size_t)(d - b) + dl;
    }
    if (np == 0)
        return ps_err_set(err, PS_EINVAL, "multipart body: no parts");
    *parts = out;
    *nparts = np;
    return 0;
}

const ps_mp_part_t *ps_mp_find(const ps_mp_part_t *parts, uint32_t n, const char *name)
{
    size_t l = strlen(name);
    for (uint32_t i = 0; i < n; i++)
        if (parts[i].name_len == l && memcmp(parts[i].name, name, l) == 0)
            return &parts[i];
    return NULL;
}
