/*
 * api_ui.c - serves the built-in web UI from the files embedded at build time (ui_assets.h):
 * the UI's pages (/, /graph, /compare, /targets, /status: all index.html, the page routes itself),
 * its files under /ui/, and /favicon.ico (the UI's SVG icon). GET and HEAD; Content-Type by
 * extension; a strong ETag per file, with If-None-Match answered 304; gzip when the client accepts
 * it (Vary: Accept-Encoding).
 *
 * Caching: every answer says Cache-Control: no-cache (revalidate with the ETag before use). The
 * modules import each other by plain names (./flame.js), so a max-age could give a browser that
 * just loaded a new index.html an old module of the previous binary; a revalidation is one
 * 304 of a few hundred bytes per file.
 *
 * Every UI answer (200, 304, 404) carries a Content-Security-Policy that lets the page run
 * only its own files: scripts and styles from this origin, no inline script or style attribute
 * markup, no plugins, no <base>, no framing (clickjacking); X-Content-Type-Options: nosniff; and
 * Referrer-Policy: no-referrer (a link to a scrape target does not tell it the UI's URL). The UI
 * sets styles through the CSSOM only (el.style), which the policy allows. A header of the same
 * name from --web.config.file's http_server_config.headers is kept instead.
 */
#include <string.h>

#include "http.h"
#include "internal.h"
#include "ui_assets.h"

static void add_header(h2o_req_t *req, const h2o_token_t *tok, const char *v)
{
    h2o_add_header(&req->pool, &req->res.headers, tok, NULL, v, strlen(v));
}

#define UI_CSP                                                                                           \
    "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self'; object-src 'none'; "          \
    "base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

static void header_default(h2o_req_t *req, const char *name, const char *value)
{
    size_t nl = strlen(name);
    if (h2o_find_header_by_str(&req->res.headers, name, nl, -1) >= 0)
        return; /* the operator's (web config) */
    h2o_add_header_by_str(&req->pool, &req->res.headers, name, nl, 0, NULL, value, strlen(value));
}

static void security_headers(h2o_req_t *req)
{
    header_default(req, "content-security-policy", UI_CSP);
    header_default(req, "x-content-type-options", "nosniff");
    header_default(req, "referrer-policy", "no-referrer");
}

static bool header_value(h2o_req_t *req, const h2o_token_t *tok, h2o_iovec_t *out)
{
    ssize_t i = h2o_find_header(&req->headers, tok, -1);
    if (i < 0)
        return false;
    *out = req->headers.entries[i].value;
    return true;
}

static int send_asset(h2o_req_t *req, const ps_ui_asset_t *a)
{
    h2o_iovec_t v;
    bool gz = a->gz != NULL && header_value(req, H2O_TOKEN_ACCEPT_ENCODING, &v) && ps_ui_accepts_gzip(v.base, v.len);
    char gz_etag[64];
    ps_ui_etag_gz(a->etag, gz_etag, sizeof(gz_etag));
    add_header(req, H2O_TOKEN_ETAG, gz ? gz_etag : a->etag);
    add_header(req, H2O_TOKEN_CACHE_CONTROL, "no-cache");
    /* always: it also tells ps_http_send that the encoding is chosen here (an asset without a
     * gzipped form did not get smaller at level 9, so it is not gzipped per request either) */
    add_header(req, H2O_TOKEN_VARY, "Accept-Encoding");
    if (header_value(req, H2O_TOKEN_IF_NONE_MATCH, &v) && ps_ui_etag_matches(v.base, v.len, a->etag)) {
        ps_http_send(req, 304, a->content_type, NULL, 0);
        return 0;
    }
    if (gz)
        add_header(req, H2O_TOKEN_CONTENT_ENCODING, "gzip");
    ps_http_send(req, 200, a->content_type, gz ? a->gz : a->data, gz ? a->gz_len : a->len);
    return 0;
}

static bool method_ok(h2o_req_t *req)
{
    if (h2o_memis(req->method.base, req->method.len, H2O_STRLIT("GET")) ||
        h2o_memis(req->method.base, req->method.len, H2O_STRLIT("HEAD")))
        return true;
    add_header(req, H2O_TOKEN_ALLOW, "GET, HEAD");
    ps_http_error_status(req, 405, "method not allowed on the web UI (use GET or HEAD)");
    return false;
}

static int send_named(h2o_req_t *req, const char *path)
{
    security_headers(req);
    if (!method_ok(req))
        return 0;
    const ps_ui_asset_t *a = ps_ui_find(path, strlen(path));
    if (a == NULL) {
        char msg[200];
        snprintf(msg, sizeof(msg), "this binary was built without %s of the web UI", path);
        ps_http_error_status(req, 404, msg);
        return 0;
    }
    return send_asset(req, a);
}

int ps_api_ui_page(h2o_req_t *req)
{
    return send_named(req, "/ui/index.html");
}

int ps_api_ui_favicon(h2o_req_t *req)
{
    return send_named(req, "/ui/favicon.svg");
}

bool ps_ui_is_path(h2o_iovec_t p)
{
    return p.len > 4 && memcmp(p.base, "/ui/", 4) == 0;
}

int ps_api_ui_file(h2o_req_t *req)
{
    security_headers(req);
    if (!method_ok(req))
        return 0;
    h2o_iovec_t p = req->path_normalized;
    const ps_ui_asset_t *a = ps_ui_find(p.base, p.len);
    if (a == NULL) {
        char msg[300];
        snprintf(msg, sizeof(msg), "no such file of the web UI: %.*s", (int)(p.len > 200 ? 200 : p.len), p.base);
        ps_http_error_status(req, 404, msg);
        return 0;
    }
    return send_asset(req, a);
}
