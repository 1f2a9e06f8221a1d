/*
 * ui_assets.h - the web UI's files, embedded into the binary at build time (scripts/embed-ui.py
 * writes the table into the build directory's gen/web/ui_assets.c from web/ui/ and the vendored
 * uPlot), and the pure request-header logic that serving them needs (web/api_ui.c serves them).
 */
#ifndef PS_WEB_UI_ASSETS_H
#define PS_WEB_UI_ASSETS_H

#include <stdbool.h>
#include <stddef.h>

typedef struct ps_ui_asset {
    const char *path;         /* URL path: "/ui/index.html", "/ui/vendor/uPlot.esm.js" */
    const char *content_type; /* "text/javascript; charset=utf-8" */
    const unsigned char *data;
    size_t len;
    const unsigned char *gz; /* gzip (level 9) of data, or NULL when it would not be smaller */
    size_t gz_len;
    const char *etag; /* strong ETag of data, quoted: "\"<20 hex digits of sha256>\"" */
} ps_ui_asset_t;

/* generated: sorted by path */
extern const ps_ui_asset_t ps_ui_assets[];
extern const size_t ps_ui_nassets;

/** The asset served at path (len bytes, not NUL-terminated), or NULL. */
const ps_ui_asset_t *ps_ui_find(const char *path, size_t len);

/** True when an Accept-Encoding header value (len bytes) accepts gzip: a "gzip" or "x-gzip"
 *  coding, or "*", with a q-value above 0 (an explicit "gzip;q=0" refuses it even next to "*"). */
bool ps_ui_accepts_gzip(const char *v, size_t len);

/** True when an If-None-Match header value (len bytes) matches etag (quoted, as in ps_ui_asset_t)
 *  by weak comparison: "*", or a listed entity tag (W/ allowed) whose opaque tag is etag or etag
 *  with "-gz" before its closing quote (the ETag of the gzipped representation). */
bool ps_ui_etag_matches(const char *v, size_t len, const char *etag);

/** The ETag of the gzipped representation of etag into out (size >= strlen(etag) + 4). */
void ps_ui_etag_gz(const char *etag, char *out, size_t size);

#endif
