/*
 * api_format.c - GET|POST /api/v1/format_query?query=EXPR: the expression in Prometheus' canonical
 * form, as Prometheus 2.42 answers it (web/api/v1/api.go formatQuery: parser.ParseExpr, then
 * expr.Pretty(0), i.e. String() when it fits in 100 bytes, else indented lines):
 *   {"status":"success","data":"sum by (job) (rate(x[5m]))"}
 * A query that does not parse is a 400 bad_data with Prometheus' message,
 *   "invalid parameter \"query\": 1:6: parse error: expected type range vector in call to ..."
 * Nothing is read from storage.
 */
#include "core/json.h"
#include "http.h"
#include "internal.h"
#include "parser/promql.h"

int ps_api_format_query(h2o_req_t *req)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_params_t params;
    ps_pq_node_t *e;
    ps_err_t err;

    if (ps_http_params(req, true, &a, &params, &err) != 0) {
        ps_http_error(req, err.code, err.msg);
        ps_arena_dispose(&a);
        return 0;
    }
    const ps_param_t *q = ps_params_get(&params, "query");
    const ps_server_t *srv = ps_http_server(req);
    ps_pq_limits_t lim; /* the language the server speaks (--promql.compat, --enable-feature) */
    ps_pq_limits_default(&lim);
    lim.compat = srv->opts.promql_compat == 2 ? 2 : 3;
    lim.experimental = srv->opts.promql_experimental;
    if (ps_pq_parse(q ? q->value : "", q ? q->vlen : 0, &lim, &a, &e, &err) != 0) {
        ps_err_prefix(&err, "invalid parameter \"query\"");
        ps_http_error(req, err.code, err.msg);
        ps_arena_dispose(&a);
        return 0;
    }
    ps_buf_t text = PS_BUF_INIT, b = PS_BUF_INIT;
    ps_json_t j;
    ps_pq_pretty(e, 0, &text);
    ps_pq_dispose(e);
    ps_json_envelope(&j, &b);
    ps_json_str(&j, (const char *)text.data, text.len);
    ps_http_send_envelope(req, 200, &j, &b);
    ps_buf_dispose(&text);
    ps_arena_dispose(&a);
    return 0;
}
