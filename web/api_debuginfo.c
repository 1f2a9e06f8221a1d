/*
 * api_debuginfo.c - Pyroscope's debuginfo.v1alpha1.DebuginfoService (what Grafana Alloy's
 * pyroscope.ebpf and profilecli upload native debug info with), handlers that only translate to
 * src/debuginfo/ (debuginfo.h has the protocol and the storage):
 *  - ShouldInitiateUpload, UploadFinished, ListDebuginfo, DeleteDebuginfo over Connect (both
 *    codecs), with Pyroscope's codes: invalid_argument, not_found, failed_precondition; a full
 *    store is resource_exhausted;
 *  - POST /debuginfo.v1alpha1.DebuginfoService/Upload/{gnu_build_id}: the raw file as the body,
 *    answered as Pyroscope's http.Error does (text/plain "message\n"): 200 stored (durably), 400
 *    a bad build id or a file that is not a whole ELF file of that build id, 412 no pending upload
 *    for it, 409 another request is writing it, 413 over --debuginfo.max-file-bytes, 507 the
 *    store or the disk full.
 * profstore has one tenant: X-Scope-OrgID is not read.
 */
#include <string.h>

#include "connect.h"
#include "core/metrics.h"
#include "core/timeutil.h"
#include "debuginfo/debuginfo.h"
#include "internal.h"
#include "proto/debuginfo.h"

#define UPLOAD_PREFIX "/debuginfo.v1alpha1.DebuginfoService/Upload/"

static size_t budget_of(const ps_connect_call_t *c)
{
    return c->body_len * 4 + ((size_t)64 << 10);
}

/* Pyroscope's Connect codes for the room's errors */
static ps_connect_code_t code_of(int code)
{
    switch (code) {
    case PS_ENOTFOUND: return PS_CONNECT_NOT_FOUND;
    case PS_ECONFLICT: return PS_CONNECT_FAILED_PRECONDITION;
    default: return ps_connect_code_of(code);
    }
}

static int decode(ps_connect_call_t *c, ps_di_method_t m, ps_di_req_t *r)
{
    ps_err_t err;
    if (ps_di_decode(c->codec, m, c->body, c->body_len, c->arena, budget_of(c), r, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return -1;
    }
    return 0;
}

#define AGENT_MSG                                                                                          \
    "agent mode: debug files are not kept (native frames are symbolized where profiles are read: upload them to " \
    "the engine this profstore forwards to)"

int ps_connect_debuginfo_should_upload(ps_connect_call_t *c)
{
    ps_di_req_t r;
    ps_err_t err;
    bool should;
    const char *reason;
    if (c->srv->opts.agent) { /* routes.c refuses the reads: nothing here would read the file */
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, AGENT_MSG);
        return 0;
    }
    if (decode(c, PS_DI_SHOULD_INITIATE, &r) != 0)
        return 0;
    if (ps_debuginfo_should_upload(c->srv->debuginfo, r.has_file ? &r.file : NULL, ps_time_now(), &should, &reason,
                                   &err) != 0) {
        ps_connect_error(c, code_of(err.code), err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_di_encode_should(c->codec, should, reason, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

/* A call naming one build id whose answer is empty: UploadFinished, DeleteDebuginfo. */
static int build_id_call(ps_connect_call_t *c, ps_di_method_t kind,
                         int (*fn)(ps_debuginfo_t *d, const char *gnu_build_id, ps_err_t *err))
{
    ps_di_req_t r;
    ps_err_t err;
    if (decode(c, kind, &r) != 0)
        return 0;
    if (fn(c->srv->debuginfo, r.gnu_build_id, &err) != 0) {
        ps_connect_error(c, code_of(err.code), err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_di_encode_empty(c->codec, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

int ps_connect_debuginfo_upload_finished(ps_connect_call_t *c)
{
    return build_id_call(c, PS_DI_UPLOAD_FINISHED, ps_debuginfo_finished);
}

int ps_connect_debuginfo_list(ps_connect_call_t *c)
{
    ps_di_req_t r;
    ps_err_t err;
    ps_di_object_t *v;
    size_t n;
    if (decode(c, PS_DI_LIST, &r) != 0)
        return 0;
    if (ps_debuginfo_list(c->srv->debuginfo, c->arena, &v, &n, &err) != 0) {
        ps_connect_error(c, code_of(err.code), err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_di_encode_list(c->codec, v, n, c->arena, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

int ps_connect_debuginfo_delete(ps_connect_call_t *c)
{
    return build_id_call(c, PS_DI_DELETE, ps_debuginfo_delete);
}

bool ps_api_debuginfo_is_upload(h2o_iovec_t path)
{
    return path.len > sizeof(UPLOAD_PREFIX) - 1 && memcmp(path.base, UPLOAD_PREFIX, sizeof(UPLOAD_PREFIX) - 1) == 0;
}

int ps_api_debuginfo_upload(ps_task_t *t)
{
    ps_err_t err;
    const char *id = t->path + sizeof(UPLOAD_PREFIX) - 1;
    if (t->srv->opts.agent) {
        ps_task_send(t, 400, "text/plain; charset=utf-8", AGENT_MSG "\n", sizeof(AGENT_MSG "\n") - 1);
        return 0;
    }
    int ret = ps_debuginfo_upload(t->srv->debuginfo, id, t->body != NULL ? t->body : "", t->body_len, ps_time_now(),
                                  &err);
    if (ret == 0) {
        ps_task_send(t, 200, "text/plain; charset=utf-8", "", 0);
        return 0;
    }
    int status = ret == PS_ENOTFOUND ? 412 : ps_err_http_status(ret); /* 412: Pyroscope's PreconditionFailed */
    ps_buf_t b = PS_BUF_INIT;
    ps_buf_printf(&b, "%s\n", err.msg);
    ps_task_send(t, status, "text/plain; charset=utf-8", b.data, b.len);
    ps_buf_dispose(&b);
    return 0;
}

static const ps_metric_t m_bytes = {"profstore_debuginfo_bytes", PS_GAUGE,
                                    "Bytes of the uploaded debug files kept, with their metadata (--debuginfo.max-bytes)."},
                         m_files = {"profstore_debuginfo_files", PS_GAUGE, "Uploaded debug files kept."},
                         m_pending = {"profstore_debuginfo_uploads_pending", PS_GAUGE,
                                      "Debug file uploads initiated and not finished."};

void ps_api_debuginfo_metrics(ps_server_t *s, ps_buf_t *b)
{
    if (s->debuginfo == NULL)
        return;
    uint64_t bytes, files, pending;
    ps_debuginfo_usage(s->debuginfo, &bytes, &files, &pending);
    ps_metric_write_u64(b, &m_bytes, bytes);
    ps_metric_write_u64(b, &m_files, files);
    ps_metric_write_u64(b, &m_pending, pending);
}
