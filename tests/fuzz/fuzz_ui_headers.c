/*
 * fuzz_ui_headers.c - libFuzzer target for the request headers the web UI is served by
 * (web/ui_assets.c): Accept-Encoding, If-None-Match, and the lookup of a URL path in the embedded
 * table (here a small table of its own: the generated one is not part of this build).
 *
 * Input: "<Accept-Encoding>\n<If-None-Match>\n<path>" (missing parts are empty). None may crash or
 * read out of bounds (each part is copied into a buffer of its exact size), and the answers must
 * agree with naive oracles: the lookup finds an entry iff the path equals its path; an
 * If-None-Match that is exactly the ETag (or its -gz form) matches, and one that contains neither
 * the ETag's hex digits nor "*" does not; Accept-Encoding without "gzip" and "*" is refused.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define PS_FUZZ_NAME "fuzz_ui_headers"
#include "fuzzutil.h"
#include "web/ui_assets.h"

static const unsigned char a0[] = "x", a1[] = "<html>", a2[] = "export {}";
const ps_ui_asset_t ps_ui_assets[] = {
    {"/ui/a", "text/plain; charset=utf-8", a0, 1, NULL, 0, "\"00000000000000000001\""},
    {"/ui/index.html", "text/html; charset=utf-8", a1, 6, NULL, 0, "\"0123456789abcdef0123\""},
    {"/ui/js/main.js", "text/javascript; charset=utf-8", a2, 9, NULL, 0, "\"fedcba98765432100000\""},
};
const size_t ps_ui_nassets = sizeof(ps_ui_assets) / sizeof(ps_ui_assets[0]);

/* the next part of [*p, end) up to '\n', copied to a malloc'ed buffer of exactly its size */
static char *part(const uint8_t **p, const uint8_t *end, size_t *n)
{
    const uint8_t *nl = memchr(*p, '\n', (size_t)(end - *p));
    const uint8_t *e = nl ? nl : end;
    *n = (size_t)(e - *p);
    char *b = malloc(*n ? *n : 1);
    memcpy(b, *p, *n);
    *p = nl ? nl + 1 : end;
    return b;
}

static bool contains(const char *s, size_t n, const char *needle)
{
    size_t k = strlen(needle);
    for (size_t i = 0; i + k <= n; i++)
        if (strncasecmp(s + i, needle, k) == 0)
            return true;
    return false;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const uint8_t *p = data, *end = data + size;
    size_t nae, ninm, npath;
    char *ae = part(&p, end, &nae), *inm = part(&p, end, &ninm), *path = part(&p, end, &npath);

    bool gz = ps_ui_accepts_gzip(ae, nae);
    if (!contains(ae, nae, "gzip") && !contains(ae, nae, "*"))
        CHECK(!gz, "gzip accepted from %.*s", (int)nae, ae);

    for (size_t i = 0; i < ps_ui_nassets; i++) {
        const char *etag = ps_ui_assets[i].etag;
        bool m = ps_ui_etag_matches(inm, ninm, etag);
        char g[64];
        ps_ui_etag_gz(etag, g, sizeof(g));
        if ((ninm == strlen(etag) && memcmp(inm, etag, ninm) == 0) || (ninm == strlen(g) && memcmp(inm, g, ninm) == 0))
            CHECK(m, "%s not matched by itself", etag);
        char hex[21];
        memcpy(hex, etag + 1, 20);
        hex[20] = 0;
        if (!contains(inm, ninm, hex) && !contains(inm, ninm, "*"))
            CHECK(!m, "%s matched by %.*s", etag, (int)ninm, inm);
    }

    const ps_ui_asset_t *a = ps_ui_find(path, npath);
    const ps_ui_asset_t *want = NULL;
    for (size_t i = 0; i < ps_ui_nassets; i++)
        if (strlen(ps_ui_assets[i].path) == npath && memcmp(ps_ui_assets[i].path, path, npath) == 0)
            want = &ps_ui_assets[i];
    CHECK(a == want, "lookup of %.*s", (int)npath, path);

    free(ae);
    free(inm);
    free(path);
    return 0;
}
