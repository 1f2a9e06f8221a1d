/*
 * routes.c - the route table: method + exact path -> handler; the handler names (route patterns)
 * that /metrics counts requests by. Every path shaped /<pkg>.<Service>/<Method> goes to the
 * Connect layer (connect.c), which answers unknown methods with Connect's unimplemented.
 */
#include "connect.h"
#include "http.h"
#include "internal.h"
#include "run.h"

/* A route: a handler on the loop (fn), or a task (run: parsed on the loop, run where its class
 * says, answered on the loop; run.c) with the error shape of its API (fail; NULL: Prometheus'). */
typedef struct route {
    const char *path;
    unsigned methods; /* bit set of M_* */
    int (*fn)(h2o_req_t *req);
    ps_task_run_fn run;
    unsigned cls;     /* PS_ROUTE_* (internal.h): the scope it needs, whether it runs on a pool */
    ps_fail_fn fail;
} route_t;

enum { M_GET = 1, M_POST = 2, M_HEAD = 4 };
#define OPEN PS_ROUTE_OPEN
#define RD PS_ROUTE_READ
#define WR PS_ROUTE_WRITE
#define ADM PS_ROUTE_ADMIN
#define POOL PS_ROUTE_POOL
#define DEC PS_ROUTE_DECODE

static const route_t routes[] = {
    {"/-/healthy", M_GET | M_HEAD, ps_api_healthy, NULL, OPEN, NULL},
    {"/-/ready", M_GET | M_HEAD, ps_api_ready, NULL, OPEN, NULL},
    {"/metrics", M_GET, ps_api_metrics, NULL, RD, NULL},
    {"/-/reload", M_POST, ps_api_reload, NULL, ADM, NULL},
    {"/api/v1/targets", M_GET, ps_api_targets, NULL, RD, NULL},
    {"/api/v1/status/buildinfo", M_GET, ps_api_buildinfo, NULL, RD, NULL},
    {"/api/v1/status/config", M_GET, ps_api_status_config, NULL, RD, NULL},
    {"/api/v1/status/flags", M_GET, ps_api_status_flags, NULL, RD, NULL},
    {"/api/v1/status/forward", M_GET, ps_api_status_forward, NULL, RD, NULL},
    {"/api/v1/status/runtimeinfo", M_GET, ps_api_status_runtimeinfo, NULL, RD, NULL},
    {"/api/v1/status/symbols", M_GET, NULL, ps_api_status_symbols, RD | POOL, NULL},
    {"/api/v1/status/tsdb", M_GET, NULL, ps_api_status_tsdb, RD | POOL, NULL},
    {"/api/v1/profiles/write", M_POST, NULL, ps_api_profiles_write, WR | DEC, NULL},
    {"/ingest", M_POST, NULL, ps_api_pyroscope_ingest, WR | DEC, NULL},
    {"/v1development/profiles", M_POST, NULL, ps_api_otlp_profiles, WR | DEC, ps_api_otlp_fail},
    {"/api/v1/read", M_POST, ps_api_read, NULL, RD, NULL},
    {"/api/v1/write", M_POST, NULL, ps_api_remote_write, WR | DEC | PS_ROUTE_SMALL_HERE, ps_api_remote_write_fail},
    {"/api/v1/query", M_GET | M_POST, NULL, ps_api_query, RD | POOL, NULL},
    {"/api/v1/query_range", M_GET | M_POST, NULL, ps_api_query_range, RD | POOL, NULL},
    {"/api/v1/format_query", M_GET | M_POST, ps_api_format_query, NULL, RD, NULL},
    {"/api/v1/series", M_GET | M_POST, NULL, ps_api_series, RD | POOL, NULL},
    {"/api/v1/labels", M_GET | M_POST, NULL, ps_api_labels, RD | POOL, NULL},
    {"/api/v1/metadata", M_GET, NULL, ps_api_metadata, RD | POOL, NULL},
    {"/api/v1/query_exemplars", M_GET | M_POST, NULL, ps_api_query_exemplars, RD, NULL},
    {"/api/v1/rules", M_GET, ps_api_rules, NULL, RD, NULL},
    {"/api/v1/alerts", M_GET, ps_api_alerts, NULL, RD, NULL},
    {"/api/v1/profiles/types", M_GET | M_POST, NULL, ps_api_profile_types, RD | POOL, NULL},
    {"/api/v1/profiles/query", M_GET | M_POST, NULL, ps_api_profile_query, RD | POOL, NULL},
    {"/api/v1/profiles/diff", M_GET | M_POST, NULL, ps_api_profile_diff, RD | POOL, NULL},
    {"/api/v1/profiles/adhoc", M_GET | M_POST, NULL, ps_api_profile_adhoc, RD | POOL, NULL},
    {"/api/v1/profiles/ids", M_GET | M_POST, NULL, ps_api_profile_ids, RD | POOL, NULL},
    {"/api/v1/profile", M_GET | M_POST, NULL, ps_api_profile_by_id, RD | POOL, NULL},
    {"/api/v1/admin/compact", M_POST, ps_api_admin_compact, NULL, ADM, NULL},
    {"/api/v1/admin/retention", M_POST, ps_api_admin_retention, NULL, ADM, NULL},
    {"/api/v1/debug/series", M_GET, NULL, ps_api_debug_series, ADM | POOL, NULL},
    {"/api/v1/debug/profile", M_GET, NULL, ps_api_debug_profile, ADM | POOL, NULL},
    {"/pyroscope/render", M_GET, NULL, ps_api_pyroscope_render, RD | POOL, ps_api_pyroscope_fail},
    {"/pyroscope/render-diff", M_GET, NULL, ps_api_pyroscope_render_diff, RD | POOL, ps_api_pyroscope_fail},
    {"/pyroscope/label-values", M_GET, NULL, ps_api_pyroscope_label_values, RD | POOL, ps_api_pyroscope_fail},
    {"/pyroscope/labels", M_GET, NULL, ps_api_pyroscope_labels, RD | POOL, ps_api_pyroscope_fail},
    /* the web UI's pages (api_ui.c): index.html, which routes itself; its files: /ui/<path> */
    {"/", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/graph", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/compare", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/upload", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/shared", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/targets", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/status", M_GET | M_HEAD, ps_api_ui_page, NULL, RD, NULL},
    {"/favicon.ico", M_GET | M_HEAD, ps_api_ui_favicon, NULL, RD, NULL},
};

/* The Connect methods (connect.h): each runs as a task, ps_connect_call then its handler; the
 * error shape is Connect's. */
typedef struct method {
    const char *path;
    ps_connect_fn fn;
    unsigned cls;
} method_t;

static const method_t methods[] = {
    {"/push.v1.PusherService/Push", ps_connect_push, WR | DEC},
    {"/querier.v1.QuerierService/ProfileTypes", ps_connect_querier_profile_types, RD | POOL},
    {"/querier.v1.QuerierService/LabelNames", ps_connect_querier_label_names, RD | POOL},
    {"/querier.v1.QuerierService/LabelValues", ps_connect_querier_label_values, RD | POOL},
    {"/querier.v1.QuerierService/Series", ps_connect_querier_series, RD | POOL},
    {"/querier.v1.QuerierService/SelectMergeStacktraces", ps_connect_querier_select_merge_stacktraces, RD | POOL},
    {"/querier.v1.QuerierService/SelectMergeSpanProfile", ps_connect_querier_select_merge_span_profile, RD | POOL},
    {"/querier.v1.QuerierService/SelectMergeProfile", ps_connect_querier_select_merge_profile, RD | POOL},
    {"/querier.v1.QuerierService/SelectSeries", ps_connect_querier_select_series, RD | POOL},
    {"/querier.v1.QuerierService/Diff", ps_connect_querier_diff, RD | POOL},
    {"/querier.v1.QuerierService/GetProfileStats", ps_connect_querier_profile_stats, RD | POOL},
    {"/settings.v1.SettingsService/Get", ps_connect_settings_get, RD | POOL},
    {"/settings.v1.SettingsService/Set", ps_connect_settings_set, WR | DEC},
    {"/settings.v1.SettingsService/Delete", ps_connect_settings_delete, WR | DEC},
    {"/settings.v1.RecordingRulesService/ListRecordingRules", ps_connect_rules_list, RD | POOL},
    {"/settings.v1.RecordingRulesService/GetRecordingRule", ps_connect_rules_get, RD | POOL},
    {"/settings.v1.RecordingRulesService/UpsertRecordingRule", ps_connect_rules_upsert, WR | DEC},
    {"/settings.v1.RecordingRulesService/DeleteRecordingRule", ps_connect_rules_delete, WR | DEC},
    {"/querier.v1.QuerierService/SelectHeatmap", ps_connect_querier_select_heatmap, RD | POOL},
    {"/querier.v1.QuerierService/AnalyzeQuery", ps_connect_querier_analyze_query, RD | POOL},
    {"/adhocprofiles.v1.AdHocProfileService/Upload", ps_connect_adhoc_upload, WR | DEC},
    {"/adhocprofiles.v1.AdHocProfileService/Get", ps_connect_adhoc_get, RD | POOL},
    {"/adhocprofiles.v1.AdHocProfileService/List", ps_connect_adhoc_list, RD | POOL},
    {"/adhocprofiles.v1.AdHocProfileService/Diff", ps_connect_adhoc_diff, RD | POOL},
    {"/debuginfo.v1alpha1.DebuginfoService/ShouldInitiateUpload", ps_connect_debuginfo_should_upload, WR | DEC},
    {"/debuginfo.v1alpha1.DebuginfoService/UploadFinished", ps_connect_debuginfo_upload_finished, WR | DEC},
    {"/debuginfo.v1alpha1.DebuginfoService/ListDebuginfo", ps_connect_debuginfo_list, RD | POOL},
    {"/debuginfo.v1alpha1.DebuginfoService/DeleteDebuginfo", ps_connect_debuginfo_delete, WR | DEC},
};

#define NMETHODS (sizeof(methods) / sizeof(methods[0]))

/* The index of the Connect method at path, or -1. */
static int method_index(const char *p, size_t n)
{
    for (uint32_t i = 0; i < NMETHODS; i++)
        if (h2o_memis(p, n, methods[i].path, strlen(methods[i].path)))
            return (int)i;
    return -1;
}

/* a Connect method's task */
static int connect_run(ps_task_t *t)
{
    int mi = method_index(t->path, t->path_len);
    return ps_connect_call(t, methods[mi].path, methods[mi].fn);
}

static unsigned method_bit(h2o_iovec_t m)
{
    if (h2o_memis(m.base, m.len, H2O_STRLIT("GET")))
        return M_GET;
    if (h2o_memis(m.base, m.len, H2O_STRLIT("POST")))
        return M_POST;
    if (h2o_memis(m.base, m.len, H2O_STRLIT("HEAD")))
        return M_HEAD;
    return 0;
}

#define NROUTES (sizeof(routes) / sizeof(routes[0]))
#define LABEL_VALUES "/api/v1/label/:name/values"
#define UI_FILES "/ui/:path"
#define DEBUGINFO_UPLOAD "/debuginfo.v1alpha1.DebuginfoService/Upload/:gnu_build_id"

/* /api/v1/label/<name>/values */
static bool is_label_values(h2o_iovec_t p)
{
    static const char lp[] = "/api/v1/label/", ls[] = "/values";
    return p.len > sizeof(lp) - 1 + sizeof(ls) - 1 && memcmp(p.base, lp, sizeof(lp) - 1) == 0 &&
           memcmp(p.base + p.len - (sizeof(ls) - 1), ls, sizeof(ls) - 1) == 0 &&
           memchr(p.base + sizeof(lp) - 1, '/', p.len - (sizeof(lp) - 1) - (sizeof(ls) - 1)) == NULL;
}

/* handlers for request accounting: the routes in table order, then label values, then the UI's
 * files, then the Connect methods (connect.c's table), then "other", then the debug file upload */
uint32_t ps_routes_nhandlers(void)
{
    return (uint32_t)NROUTES + 4 + (uint32_t)NMETHODS;
}

const char *ps_routes_handler_name(uint32_t i)
{
    if (i < NROUTES)
        return routes[i].path;
    if (i == NROUTES)
        return LABEL_VALUES;
    if (i == NROUTES + 1)
        return UI_FILES;
    if (i - NROUTES - 2 < (uint32_t)NMETHODS)
        return methods[i - NROUTES - 2].path;
    if (i == NROUTES + 3 + NMETHODS)
        return DEBUGINFO_UPLOAD;
    return "other";
}

uint32_t ps_routes_handler(h2o_iovec_t p)
{
    for (uint32_t i = 0; i < NROUTES; i++)
        if (h2o_memis(p.base, p.len, routes[i].path, strlen(routes[i].path)))
            return i;
    if (is_label_values(p))
        return (uint32_t)NROUTES;
    if (ps_ui_is_path(p))
        return (uint32_t)NROUTES + 1;
    if (ps_api_debuginfo_is_upload(p))
        return (uint32_t)NROUTES + 3 + (uint32_t)NMETHODS;
    int mi = method_index(p.base, p.len);
    return mi >= 0 ? (uint32_t)NROUTES + 2 + (uint32_t)mi : (uint32_t)NROUTES + 2 + (uint32_t)NMETHODS;
}

unsigned ps_routes_class(uint32_t handler)
{
    if (handler < NROUTES)
        return routes[handler].cls;
    if (handler == NROUTES) /* label values */
        return PS_ROUTE_READ | PS_ROUTE_POOL;
    if (handler == NROUTES + 1) /* the UI's files */
        return PS_ROUTE_READ;
    if (handler - NROUTES - 2 < (uint32_t)NMETHODS)
        return methods[handler - NROUTES - 2].cls;
    if (handler == NROUTES + 3 + NMETHODS) /* the debug file upload */
        return PS_ROUTE_WRITE | PS_ROUTE_DECODE | PS_ROUTE_NO_WRITER;
    return PS_ROUTE_READ; /* "other": a 404 (or Connect's unimplemented), after authentication */
}

/* The route of an authorized request. */
static int route(h2o_req_t *req)
{
    h2o_iovec_t p = req->path_normalized;
    unsigned m = method_bit(req->method);
    uint32_t handler = ps_routes_handler(p);
    /* --agent keeps no data: every route that reads the store (the query pool's, remote read) says
     * where the data is instead of answering empty */
    ps_server_t *srv = ps_http_server(req);
    if (srv->opts.agent && ((ps_routes_class(handler) & PS_ROUTE_POOL) ||
                            h2o_memis(p.base, p.len, H2O_STRLIT("/api/v1/read")))) {
        static const char msg[] = "agent mode: queries go to the engine this profstore forwards to (forward: in the config)";
        if (ps_connect_is_path(p))
            ps_connect_error_req(req, PS_CONNECT_INVALID_ARGUMENT, msg); /* 400 */
        else
            ps_http_error_status(req, 400, msg);
        return 0;
    }
    for (size_t i = 0; i < NROUTES; i++) {
        if (!h2o_memis(p.base, p.len, routes[i].path, strlen(routes[i].path)))
            continue;
        if (!(routes[i].methods & m)) {
            char allow[32] = "";
            if (routes[i].methods & M_GET)
                strcat(allow, "GET");
            if (routes[i].methods & M_POST)
                strcat(allow, allow[0] ? ", POST" : "POST");
            if (routes[i].methods & M_HEAD)
                strcat(allow, allow[0] ? ", HEAD" : "HEAD");
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, allow, strlen(allow));
            char msg[128];
            snprintf(msg, sizeof(msg), "method %.*s not allowed on %s (use %s)", (int)(req->method.len > 16 ? 16 : req->method.len),
                     req->method.base, routes[i].path, allow);
            ps_http_error_status(req, 405, msg);
            return 0;
        }
        if (routes[i].run != NULL) /* POOL routes on the query threads, DEC on the decode threads */
            return ps_run_task(req, routes[i].cls, routes[i].run, routes[i].fail);
        return routes[i].fn(req);
    }
    if (is_label_values(p)) {
        if (!(m & (M_GET | M_POST))) {
            ps_http_error_status(req, 405, "method not allowed (use GET)");
            return 0;
        }
        return ps_run_task(req, PS_ROUTE_READ | PS_ROUTE_POOL, ps_api_label_values, NULL);
    }
    if (ps_ui_is_path(p))
        return ps_api_ui_file(req);
    if (ps_api_debuginfo_is_upload(p)) {
        if (m != M_POST) {
            h2o_add_header(&req->pool, &req->res.headers, H2O_TOKEN_ALLOW, NULL, H2O_STRLIT("POST"));
            ps_http_error_status(req, 405, "method not allowed (use POST)");
            return 0;
        }
        return ps_run_task(req, PS_ROUTE_WRITE | PS_ROUTE_DECODE | PS_ROUTE_NO_WRITER, ps_api_debuginfo_upload, ps_answer_text_error);
    }
    if (ps_connect_is_path(p)) {
        int mi = method_index(p.base, p.len);
        if (mi < 0) {
            char msg[300];
            snprintf(msg, sizeof(msg), "%.*s is not implemented", (int)(p.len > 200 ? 200 : p.len), p.base);
            ps_connect_error_req(req, PS_CONNECT_UNIMPLEMENTED, msg);
            return 0;
        }
        return ps_run_task(req, methods[mi].cls, connect_run, ps_connect_fail);
    }
    char msg[300];
    snprintf(msg, sizeof(msg), "no such endpoint: %.*s", (int)(p.len > 200 ? 200 : p.len), p.base);
    ps_http_error_status(req, 404, msg);
    return 0;
}

/*
 * Cross-origin protection for writes and admin requests, as Go's net/http CrossOriginProtection
 * (what Grafana's and Prometheus' Go servers get): a browser that sends Sec-Fetch-Site tells
 * whether the request comes from another site (anything but "same-origin" or "none" is refused);
 * an older one's Origin must name this server's host (:authority / Host); a request with
 * neither comes from a program (Prometheus, SDKs, curl) and passes. Without it any web page the
 * operator opens could POST to /ingest, the admin endpoints or /-/reload, with or without
 * authentication (a browser sends cached basic-auth credentials along). Safe methods (GET, HEAD)
 * and read routes are never refused. A refusal is 403 naming the header.
 */
static const char *cross_origin(h2o_req_t *req)
{
    h2o_iovec_t site = ps_http_header(req, "sec-fetch-site");
    if (site.base != NULL)
        return h2o_memis(site.base, site.len, H2O_STRLIT("same-origin")) || h2o_memis(site.base, site.len, H2O_STRLIT("none"))
                   ? NULL
                   : "cross-origin request refused: Sec-Fetch-Site is not same-origin (a page of another site "
                     "sent it; writes and admin requests come from programs or profstore's own pages)";
    h2o_iovec_t origin = ps_http_header(req, "origin");
    if (origin.base == NULL)
        return NULL;
    const char *sep = memmem(origin.base, origin.len, "://", 3);
    if (sep != NULL) {
        const char *host = sep + 3;
        size_t n = origin.len - (size_t)(host - origin.base);
        if (n == req->authority.len && n > 0 && h2o_lcstris(host, n, req->authority.base, req->authority.len))
            return NULL;
    }
    return "cross-origin request refused: Origin does not match Host (a page of another site sent it; writes "
           "and admin requests come from programs or profstore's own pages)";
}

int ps_routes_dispatch(h2o_handler_t *self, h2o_req_t *req)
{
    /* h2o reads bodies up to the debug file limit when that is the larger: connguard.c refuses the
     * others past theirs while they arrive; this catches what it let through (one socket read) */
    ps_server_t *srv = ps_http_server(req);
    if (req->entity.base != NULL && req->entity.len > srv->opts.max_body &&
        !ps_api_debuginfo_is_upload(req->path_normalized)) {
        char msg[160];
        ps_http_body_limit_msg(msg, sizeof(msg), req->entity.len, true, srv->opts.max_body);
        ps_http_error_status(req, 413, msg);
        return 0;
    }
    unsigned m = method_bit(req->method), cls = ps_routes_class(ps_routes_handler(req->path_normalized));
    const char *why = !(m & (M_GET | M_HEAD)) && (cls & (PS_ROUTE_WRITE | PS_ROUTE_ADMIN)) ? cross_origin(req) : NULL;
    if (why != NULL) {
        if (ps_connect_is_path(req->path_normalized))
            ps_connect_error_req(req, PS_CONNECT_PERMISSION_DENIED, why);
        else
            ps_http_error_status(req, 403, why);
        return 0;
    }
    /* access.c: 401, 403, 503; or route() later, once a bcrypt off the loop has passed the credentials */
    if (ps_web_authorize(req, cls, route) != 0)
        return 0;
    return route(req);
}
