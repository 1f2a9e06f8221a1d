/*
 * api_recording.c - settings.v1.RecordingRulesService over Connect ("metrics from profiles" in
 * Grafana's Profiles Drilldown: ListRecordingRules, GetRecordingRule, UpsertRecordingRule,
 * DeleteRecordingRule), with Pyroscope's semantics and messages: Upsert validates (src/rules),
 * gives a rule without an id a new one, creates a rule it does not know with generation 1 and
 * replaces a known one only when the request names its stored generation (else already_exists);
 * Delete of an unknown id is not_found. Rules provisioned by the configuration file are listed
 * with provisioned=true and are read-only here (failed_precondition). Upsert and Delete run on the
 * writer thread (storage's recording rule records), which then reloads the rule set in force, so
 * the answer follows both. profstore has one tenant: every caller shares the rules.
 */
#include <string.h>

#include "connect.h"
#include "core/log.h"
#include "core/metrics.h"
#include "ingest/ingest.h"
#include "internal.h"
#include "proto/querier.h"
#include "proto/recording.h"
#include "rules/rules.h"

/* the decoding budget: a rule's strings twice and their structs, plus 64 KiB */
static size_t budget_of(const ps_connect_call_t *c)
{
    return c->body_len * 4 + ((size_t)64 << 10);
}

static const char *trim_id(const char *s, ps_arena_t *a)
{
    while (*s == ' ' || *s == '\t' || *s == '\n' || *s == '\r')
        s++;
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\n' || s[n - 1] == '\r'))
        n--;
    return ps_arena_strndup(a, s, n);
}

int ps_connect_rules_list(ps_connect_call_t *c)
{
    ps_err_t err;
    if (ps_rr_decode_list(c->codec, c->body, c->body_len, c->arena, budget_of(c), &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    ps_rr_rule_t *v;
    size_t n;
    ps_rules_list(c->srv->rules, c->arena, &v, &n);
    ps_buf_t b = PS_BUF_INIT;
    ps_rr_encode_list(c->codec, v, n, c->arena, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

int ps_connect_rules_get(ps_connect_call_t *c)
{
    ps_err_t err;
    const char *id;
    if (ps_rr_decode_id(c->codec, false, c->body, c->body_len, c->arena, budget_of(c), &id, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    id = trim_id(id, c->arena);
    if (id[0] == '\0') {
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, "id is required");
        return 0;
    }
    ps_rr_rule_t r;
    if (ps_rules_get(c->srv->rules, id, c->arena, &r, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    ps_buf_t b = PS_BUF_INIT;
    ps_rr_encode_rule(c->codec, true, &r, c->arena, &b);
    ps_connect_reply_take(c, &b);
    return 0;
}

/* An Upsert or Delete handed to the writer. */
typedef struct put {
    ps_connect_call_t *c;
    ps_wreq_t w;
    ps_rr_rule_t r;
} put_t;

/* on the writer thread, after the change committed: the rule set in force follows it */
static void on_changed(void *ctx)
{
    ps_server_t *srv = ctx;
    ps_err_t err;
    if (ps_rules_reload(srv->rules, srv->store, &err) != 0)
        ps_log_error("recording rules reload failed", "err=%s", ps_log_q(err.msg));
}

/* on the loop, once the writer committed (or failed) */
static void on_put_finish(ps_task_t *t)
{
    put_t *p = t->finish_arg;
    ps_connect_call_t *c = p->c;
    if (p->w.status != 0) {
        ps_connect_error(c, ps_connect_code_of(p->w.status), p->w.err.msg);
        return;
    }
    ps_buf_t b = PS_BUF_INIT;
    if (p->w.rule_del) {
        ps_rr_encode_delete(c->codec, &b);
    } else {
        p->r.generation = p->w.rule_gen;
        p->r.profile_type = ps_rules_profile_type(&p->r, c->arena);
        ps_rr_encode_rule(c->codec, false, &p->r, c->arena, &b);
    }
    ps_connect_reply_take(c, &b);
}

/* PS_EINVAL naming the provisioned rule id, or 0 */
static int check_not_provisioned(ps_connect_call_t *c, const char *id)
{
    ps_rr_rule_t r;
    if (ps_rules_get(c->srv->rules, id, c->arena, &r, NULL) == 0 && r.provisioned) {
        char msg[256];
        snprintf(msg, sizeof(msg),
                 "rule with id='%.64s' is provisioned by the configuration file: it cannot be changed or deleted here",
                 id);
        ps_connect_error(c, PS_CONNECT_FAILED_PRECONDITION, msg);
        return PS_EINVAL;
    }
    return 0;
}

static int submit(ps_connect_call_t *c, put_t *p, bool del, const ps_buf_t *value)
{
    p->c = c;
    p->w.kind = PS_WREQ_RULE;
    p->w.rule = (ps_store_rule_t){.id = p->r.id, .idlen = strlen(p->r.id), .value = value ? value->data : NULL,
                                  .vlen = value ? value->len : 0, .generation = p->r.generation};
    p->w.rule_del = del;
    p->w.rule_after = on_changed;
    p->w.rule_after_ctx = c->srv;
    ps_connect_submit(c, &p->w, on_put_finish, p);
    return 0;
}

int ps_connect_rules_upsert(ps_connect_call_t *c)
{
    ps_err_t err;
    put_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    if (ps_rr_decode_upsert(c->codec, c->body, c->body_len, c->arena, budget_of(c), &p->r, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    if (ps_rules_validate(&p->r, true, c->arena, &err) != 0) {
        ps_buf_t m = PS_BUF_INIT;
        ps_buf_printf(&m, "invalid request: %s", err.msg);
        ps_buf_putc(&m, 0);
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, (const char *)m.data);
        ps_buf_dispose(&m);
        return 0;
    }
    if (check_not_provisioned(c, p->r.id) != 0)
        return 0;
    ps_buf_t *value = ps_arena_calloc(c->arena, 1, sizeof(*value));
    ps_buf_t tmp = PS_BUF_INIT;
    ps_rules_encode(&p->r, c->arena, &tmp);
    value->data = ps_arena_alloc(c->arena, tmp.len + 1);
    if (tmp.len)
        memcpy(value->data, tmp.data, tmp.len);
    value->len = tmp.len;
    ps_buf_dispose(&tmp);
    return submit(c, p, false, value);
}

int ps_connect_rules_delete(ps_connect_call_t *c)
{
    ps_err_t err;
    put_t *p = ps_arena_calloc(c->arena, 1, sizeof(*p));
    const char *id;
    if (ps_rr_decode_id(c->codec, true, c->body, c->body_len, c->arena, budget_of(c), &id, &err) != 0) {
        ps_connect_error(c, ps_connect_code_of(err.code), err.msg);
        return 0;
    }
    p->r.id = trim_id(id, c->arena);
    if (p->r.id[0] == '\0') {
        ps_connect_error(c, PS_CONNECT_INVALID_ARGUMENT, "invalid request: id is required");
        return 0;
    }
    if (strlen(p->r.id) > PS_RULE_ID_MAX) { /* none is stored */
        ps_connect_error(c, PS_CONNECT_NOT_FOUND, "no rule with ID found (the id is longer than any stored)");
        return 0;
    }
    if (check_not_provisioned(c, p->r.id) != 0)
        return 0;
    return submit(c, p, true, NULL);
}

static const ps_metric_t m_rules = {"profstore_recording_rules", PS_GAUGE,
                                    "Recording rules in force (stored and provisioned)."},
                         m_evals = {"profstore_recording_rule_evaluations_total", PS_COUNTER,
                                    "Profile series matched by a recording rule as they were written."},
                         m_samples = {"profstore_recording_rule_samples_total", PS_COUNTER,
                                      "Recorded samples handed to the store with their profiles."},
                         m_dropped = {"profstore_recording_rule_samples_dropped_total", PS_COUNTER,
                                      "Contributions dropped: their rule already records the most series there may be."};

void ps_api_rules_metrics(ps_server_t *s, ps_buf_t *b)
{
    if (s->rules == NULL)
        return;
    ps_rules_stats_t st;
    ps_rules_stats(s->rules, &st);
    ps_metric_write_u64(b, &m_rules, st.rules);
    ps_metric_write_u64(b, &m_evals, st.evaluations);
    ps_metric_write_u64(b, &m_samples, st.samples);
    ps_metric_write_u64(b, &m_dropped, st.series_dropped);
}
