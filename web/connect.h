/*
 * connect.h - the Connect protocol, unary calls over HTTP/1.1 (docs/protocols.md), for the Pyroscope
 * services (push.v1.PusherService, querier.v1.QuerierService):
 *
 *  - POST /<package>.<Service>/<Method>; the body is the bare message (no gRPC framing);
 *  - Content-Type application/proto (binary) or application/json[; charset=utf-8] (protojson);
 *    anything else is 415 with Connect error JSON; the answer uses the request's codec;
 *  - Content-Encoding: gzip request bodies are inflated with a bound, --max-inflated-size (gzip
 *    bombs: resource_exhausted, 429 by connect-go's table); identity is the default; any other
 *    encoding is unimplemented; a body over --max-body-size is h2o's own 413;
 *  - Accept-Encoding: gzip → answers of 1 KiB and more are gzipped (ps_answer_set, as every answer); every
 *    answer offers gzip (Accept-Encoding: gzip), as connect-go's do;
 *  - Connect-Timeout-Ms sets a deadline handlers may check; Connect-Protocol-Version: 1 accepted,
 *    any other value is invalid_argument;
 *  - errors: non-200 status, Content-Type application/json, {"code":"...","message":"..."} with
 *    connect-go's code → status table; an unknown method of a known service and an unknown
 *    service under a Connect-shaped path are "unimplemented" (501), never a 404 page; a method
 *    other than POST is 405 with Allow: POST (every method here is POST-only, as connect-go
 *    answers for methods without idempotency_level NO_SIDE_EFFECTS), with error JSON too.
 *
 * The method table is routes.c's (a call runs as a task, task.h, on the pool of its class); a
 * method's handler is one of web/api_*.c and only translates: decode c->body with a proto/ codec,
 * call a room, answer with ps_connect_reply.
 */
#ifndef PS_WEB_CONNECT_H
#define PS_WEB_CONNECT_H

#include <h2o.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"
#include "server.h"
#include "task.h"

struct ps_wreq; /* ingest/ingest.h: a writer request */

/** Connect's error codes (connect-go's names, in its order). */
typedef enum {
    PS_CONNECT_CANCELED = 1,
    PS_CONNECT_UNKNOWN,
    PS_CONNECT_INVALID_ARGUMENT,
    PS_CONNECT_DEADLINE_EXCEEDED,
    PS_CONNECT_NOT_FOUND,
    PS_CONNECT_ALREADY_EXISTS,
    PS_CONNECT_PERMISSION_DENIED,
    PS_CONNECT_RESOURCE_EXHAUSTED,
    PS_CONNECT_FAILED_PRECONDITION,
    PS_CONNECT_ABORTED,
    PS_CONNECT_OUT_OF_RANGE,
    PS_CONNECT_UNIMPLEMENTED,
    PS_CONNECT_INTERNAL,
    PS_CONNECT_UNAVAILABLE,
    PS_CONNECT_DATA_LOSS,
    PS_CONNECT_UNAUTHENTICATED,
} ps_connect_code_t;

/** Mirrors ps_pb_codec_t (proto/): 0 binary protobuf, 1 protojson. */
enum { PS_CONNECT_PROTO = 0, PS_CONNECT_JSON = 1 };

typedef struct ps_connect_call {
    ps_task_t *t; /* the call's task: its answer, its arena */
    ps_server_t *srv;
    int codec;              /* PS_CONNECT_PROTO or PS_CONNECT_JSON */
    const uint8_t *body;    /* the request message, inflated (from arena) */
    size_t body_len;
    int64_t deadline_ns;    /* CLOCK_MONOTONIC deadline from Connect-Timeout-Ms; 0 = none */
    ps_arena_t *arena;      /* the task's: lives until the answer is sent */
} ps_connect_call_t;

/** A method's handler: answers c with ps_connect_reply or ps_connect_error (into its task's
 *  answer), now, or from the task's finish after a hand-off (ps_task_hold). Returns 0. */
typedef int (*ps_connect_fn)(ps_connect_call_t *c);

/** A task's run for a Connect method (routes.c's table: method_path, fn): the HTTP method (405),
 *  the headers, the body inflated, then fn. */
int ps_connect_call(ps_task_t *t, const char *method_path, ps_connect_fn fn);
/** Connect's error shape (ps_fail_fn, task.h): the code of a profstore error, its status. */
void ps_connect_fail(ps_answer_t *a, int code, const char *msg);

/** Answers 200 with an encoded message (in c's codec; gzipped when accepted). */
void ps_connect_reply(ps_connect_call_t *c, const void *msg, size_t len);
/** ps_connect_reply of msg's bytes, taking its buffer (left empty; nothing for the caller to free). */
void ps_connect_reply_take(ps_connect_call_t *c, ps_buf_t *msg);
/** Answers a Connect error. */
void ps_connect_error(ps_connect_call_t *c, ps_connect_code_t code, const char *msg);
/** Hands w (a store change: a setting, a rule, an upload) to the writer; once it is done with it,
 *  finish(c's task) runs on the loop with finish_arg = arg to answer, w->status and w->err holding
 *  the outcome (a refusal of the queue too). Sets w->on_done and w->ctx. */
void ps_connect_submit(ps_connect_call_t *c, struct ps_wreq *w, void (*finish)(ps_task_t *t), void *arg);
/** The Connect code for a profstore error code (PS_EINVAL → invalid_argument, PS_ETOOBIG →
 *  resource_exhausted, PS_EUNAVAIL → unavailable, PS_ENOSPACE → resource_exhausted, ...). */
ps_connect_code_t ps_connect_code_of(int ps_code);
/** Appends the error JSON {"code":"<name>","message":msg} to b (also Pyroscope's HTTP API's). */
void ps_connect_error_json(ps_connect_code_t code, const char *msg, ps_buf_t *b);
/** Answers an error before a call exists (e.g. from routes.c). */
void ps_connect_error_req(h2o_req_t *req, ps_connect_code_t code, const char *msg);

/** "invalid_argument", ...; and its HTTP status (connect-go's connectCodeToHTTP). */
const char *ps_connect_code_name(ps_connect_code_t code);
int ps_connect_code_status(ps_connect_code_t code);

/** Whether a path has the shape /<pkg>.<Service>/<Method> (identifiers; a dot in the first part). */
bool ps_connect_is_path(h2o_iovec_t path);
/* ---- method handlers (web/api_*.c), in routes.c's table ---- */

/** POST /push.v1.PusherService/Push (api_push.c). */
int ps_connect_push(ps_connect_call_t *c);
/* api_querier.c: querier.v1.QuerierService */
int ps_connect_querier_profile_types(ps_connect_call_t *c);
int ps_connect_querier_label_names(ps_connect_call_t *c);
int ps_connect_querier_label_values(ps_connect_call_t *c);
int ps_connect_querier_series(ps_connect_call_t *c);
int ps_connect_querier_select_merge_stacktraces(ps_connect_call_t *c);
int ps_connect_querier_select_merge_span_profile(ps_connect_call_t *c);
int ps_connect_querier_select_merge_profile(ps_connect_call_t *c);
int ps_connect_querier_select_series(ps_connect_call_t *c);
int ps_connect_querier_select_heatmap(ps_connect_call_t *c);
int ps_connect_querier_analyze_query(ps_connect_call_t *c);
int ps_connect_querier_diff(ps_connect_call_t *c);
int ps_connect_querier_profile_stats(ps_connect_call_t *c);
/* settings.v1.SettingsService (api_settings.c) */
int ps_connect_settings_get(ps_connect_call_t *c);
int ps_connect_settings_set(ps_connect_call_t *c);
int ps_connect_settings_delete(ps_connect_call_t *c);
/* adhocprofiles.v1.AdHocProfileService (api_adhoc.c) */
int ps_connect_adhoc_upload(ps_connect_call_t *c);
int ps_connect_adhoc_get(ps_connect_call_t *c);
int ps_connect_adhoc_list(ps_connect_call_t *c);
int ps_connect_adhoc_diff(ps_connect_call_t *c);
/* debuginfo.v1alpha1.DebuginfoService (api_debuginfo.c) */
int ps_connect_debuginfo_should_upload(ps_connect_call_t *c);
int ps_connect_debuginfo_upload_finished(ps_connect_call_t *c);
int ps_connect_debuginfo_list(ps_connect_call_t *c);
int ps_connect_debuginfo_delete(ps_connect_call_t *c);
/* settings.v1.RecordingRulesService (api_recording.c) */
int ps_connect_rules_list(ps_connect_call_t *c);
int ps_connect_rules_get(ps_connect_call_t *c);
int ps_connect_rules_upsert(ps_connect_call_t *c);
int ps_connect_rules_delete(ps_connect_call_t *c);

#endif
