/*
 * ui_assets.c - finding an embedded UI file by its URL path, and the two request headers that
 * decide how it is answered: Accept-Encoding (gzip or not) and If-None-Match (304 or not).
 * No h2o here: these are pure functions over bytes (tests/unit/web/test_ui_assets.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ui_assets.h"

const ps_ui_asset_t *ps_ui_find(const char *path, size_t len)
{
    size_t lo = 0, hi = ps_ui_nassets;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const char *p = ps_ui_assets[mid].path;
        size_t plen = strlen(p);
        int c = memcmp(p, path, plen < len ? plen : len);
        if (c == 0)
            c = plen < len ? -1 : plen > len ? 1 : 0;
        if (c == 0)
            return &ps_ui_assets[mid];
        if (c < 0)
            lo = mid + 1;
        else
            hi = mid;
    }
    return NULL;
}

static bool is_ows(char c)
{
    return c == ' ' || c == '\t';
}

/* [*b, *e) without surrounding whitespace */
static void trim(const char **b, const char **e)
{
    while (*b < *e && is_ows(**b))
        (*b)++;
    while (*e > *b && is_ows((*e)[-1]))
        (*e)--;
}

static bool token_is(const char *b, const char *e, const char *tok)
{
    size_t n = strlen(tok);
    if ((size_t)(e - b) != n)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = b[i];
        if (c >= 'A' && c <= 'Z')
            c = (char)(c - 'A' + 'a');
        if (c != tok[i])
            return false;
    }
    return true;
}

/* the q-value of the parameters [b, e) (";q=0.5;..."): 1 when absent; 0 for "q=0", "q=0.0", ... */
static bool q_positive(const char *b, const char *e)
{
    while (b < e) {
        const char *semi = memchr(b, ';', (size_t)(e - b));
        const char *pe = semi ? semi : e, *pb = b;
        trim(&pb, &pe);
        if (pe - pb >= 2 && (pb[0] == 'q' || pb[0] == 'Q') && pb[1] == '=') {
            for (const char *p = pb + 2; p < pe; p++)
                if (*p >= '1' && *p <= '9')
                    return true;
            return false;
        }
        b = semi ? semi + 1 : e;
    }
    return true;
}

bool ps_ui_accepts_gzip(const char *v, size_t len)
{
    const char *end = v + len;
    int gzip = -1, star = -1; /* -1 not listed, 0 refused, 1 accepted */
    while (v < end) {
        const char *comma = memchr(v, ',', (size_t)(end - v));
        const char *ie = comma ? comma : end;
        const char *semi = memchr(v, ';', (size_t)(ie - v));
        const char *tb = v, *te = semi ? semi : ie;
        trim(&tb, &te);
        int ok = q_positive(semi ? semi + 1 : ie, ie);
        if (token_is(tb, te, "gzip") || token_is(tb, te, "x-gzip"))
            gzip = gzip == 1 ? 1 : ok;
        else if (token_is(tb, te, "*"))
            star = ok;
        v = comma ? comma + 1 : end;
    }
    return gzip >= 0 ? gzip == 1 : star == 1;
}

void ps_ui_etag_gz(const char *etag, char *out, size_t size)
{
    size_t n = strlen(etag);
    snprintf(out, size, "%.*s-gz\"", (int)(n > 0 ? n - 1 : 0), etag);
}

bool ps_ui_etag_matches(const char *v, size_t len, const char *etag)
{
    char gz[64];
    ps_ui_etag_gz(etag, gz, sizeof(gz));
    size_t n = strlen(etag), ng = strlen(gz);
    const char *end = v + len;
    while (v < end) {
        const char *comma = memchr(v, ',', (size_t)(end - v));
        const char *b = v, *e = comma ? comma : end;
        trim(&b, &e);
        if (e - b == 1 && *b == '*')
            return true;
        if (e - b >= 2 && b[0] == 'W' && b[1] == '/')
            b += 2;
        if (((size_t)(e - b) == n && memcmp(b, etag, n) == 0) || ((size_t)(e - b) == ng && memcmp(b, gz, ng) == 0))
            return true;
        v = comma ? comma + 1 : end;
    }
    return false;
}
