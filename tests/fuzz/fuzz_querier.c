/*
 * fuzz_querier.c - libFuzzer target for the querier.v1 request decoders (proto/querier.c over
 * proto/pbjson.c, both codecs). The first input byte picks the message (bits 0-2: ProfileTypes,
 * LabelNames, LabelValues, Series, SelectMergeStacktraces, SelectMergeProfile, Diff, SelectSeries)
 * and the codec (bit 3: protojson); bit 4 picks instead: with bit 0 clear, by bits 1-2,
 * GetProfileStats and the settings.v1 requests (proto/settings.c: Get, Set, Delete); with bit 0
 * set, SelectMergeSpanProfile with bit 2 set, else by bit 1 SelectHeatmap or AnalyzeQuery; bit 5 picks instead
 * the settings.v1 recording rule messages (proto/recording.c; bits 1-2: List, Get, Upsert, Delete; with bit 0
 * the stored RecordingRuleStore value; a rule that decodes must encode and decode again). The rest is the
 * Connect body. A failure must be a clean
 * PS_EINVAL or PS_ETOOBIG with a message naming the message type; a success must hold
 * NUL-terminated strings and arrays as long as their counts (the call site's names too), and a
 * format/aggregation as sent; profile ids that scan as UUIDs write back the same bytes.
 * Built and run by build.sh / run.sh in this folder (seeds: requests as Grafana sends them).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/encode.h"
#include "core/labels.h"
#include "proto/querier.h"
#include "proto/recording.h"
#include "proto/settings.h"
#include "query/query.h"

#define PS_FUZZ_NAME "fuzz_querier"
#include "fuzzutil.h"

#define BUDGET (4u << 20)

static void check_strs(const char *const *v, uint32_t n)
{
    CHECK(n == 0 || v != NULL, "array of %u strings is NULL", n);
    for (uint32_t i = 0; i < n; i++)
        CHECK(v[i] != NULL && strlen(v[i]) < (1u << 24), "string %u", i);
}

static void check_labels(const ps_qr_labels_req_t *r)
{
    check_strs(r->matchers, r->nmatchers);
    check_strs(r->label_names, r->nlabel_names);
    CHECK(r->name == NULL || strlen(r->name) < (1u << 24), "name");
}

static void check_rule(const ps_rr_rule_t *r)
{
    CHECK(r->id != NULL && r->metric_name != NULL && r->function_name != NULL, "rule strings");
    check_strs(r->matchers, (uint32_t)r->nmatchers);
    check_strs(r->group_by, (uint32_t)r->ngroup_by);
    CHECK(r->next == 0 || r->ext != NULL, "external labels");
    for (size_t i = 0; i < r->next; i++)
        CHECK(r->ext[i].name != NULL && r->ext[i].value != NULL, "external label %zu", i);
    CHECK(r->has_function || r->function_name[0] == '\0', "function name without a filter");
}

/* the recording rule messages (bit 5) */
static int fuzz_rules(int which, int codec, bool store, const uint8_t *body, size_t n)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_err_clear(&err);
    ps_rr_rule_t r;
    const char *id = NULL;
    int rc;
    if (store)
        rc = ps_rr_store_decode(body, n, &a, &r, &err);
    else
        switch (which >> 1) {
        case 0: rc = ps_rr_decode_list(codec, body, n, &a, BUDGET, &err); break;
        case 1: rc = ps_rr_decode_id(codec, false, body, n, &a, BUDGET, &id, &err); break;
        case 2: rc = ps_rr_decode_upsert(codec, body, n, &a, BUDGET, &r, &err); break;
        default: rc = ps_rr_decode_id(codec, true, body, n, &a, BUDGET, &id, &err); break;
        }
    if (rc != 0) {
        CHECK(rc == PS_EINVAL || rc == PS_ETOOBIG || (store && rc == PS_ECORRUPT), "code %d: %s", rc, err.msg);
        CHECK(store ? strncmp(err.msg, "stored recording rule: ", 23) == 0
                    : strncmp(err.msg, "settings.v1.", 12) == 0 || strncmp(err.msg, "types.v1.", 9) == 0,
              "message without the type: %s", err.msg);
    } else if (store || which >> 1 == 2) {
        check_rule(&r);
        /* what decodes encodes, and the encoding decodes to the same rule */
        ps_buf_t b = PS_BUF_INIT;
        ps_rr_store_encode(&r, &a, &b);
        ps_rr_rule_t r2;
        CHECK(ps_rr_store_decode(b.data, b.len, &a, &r2, &err) == 0, "re-decode: %s", err.msg);
        CHECK(strcmp(r.id, r2.id) == 0 && strcmp(r.metric_name, r2.metric_name) == 0 &&
                  r.nmatchers == r2.nmatchers && r.ngroup_by == r2.ngroup_by && r.next == r2.next &&
                  r.has_function == r2.has_function && r.generation == r2.generation,
              "rule changed by a round trip");
        ps_buf_t j = PS_BUF_INIT;
        ps_rr_encode_rule(PS_QR_JSON, false, &r, &a, &j);
        ps_rr_encode_list(PS_QR_BINARY, &r, 1, &a, &j);
        ps_buf_dispose(&j);
        ps_buf_dispose(&b);
    } else if (which >> 1 != 0) {
        CHECK(id != NULL, "id");
    }
    ps_arena_dispose(&a);
    return 0;
}

/* a profile id as the merges read it (src/query/profile_uuid.c): text that scans writes back the
 * same bytes; a derived id's series and time make it again */
static void check_profile_id(const char *s)
{
    uint8_t u[16], v[16];
    char t[PS_PROFILE_ID_LEN + 1];
    if (ps_uuid_scan(s, strlen(s), u) != 0)
        return;
    ps_profile_uuid_text(u, t);
    CHECK(strlen(t) == PS_PROFILE_ID_LEN && ps_uuid_scan(t, PS_PROFILE_ID_LEN, v) == 0 &&
              memcmp(u, v, 16) == 0, "profile id text round trip");
    uint64_t sid;
    int64_t ts;
    if (ps_profile_uuid_split(u, &sid, &ts))
        CHECK(ps_profile_uuid_make(sid, ts, v) && memcmp(u, v, 16) == 0, "derived profile id round trip");
}

static void check_merge(const ps_qr_merge_req_t *m)
{
    CHECK(m->type_id != NULL && m->label_selector != NULL, "merge strings");
    CHECK(m->format != 0, "format UNSPECIFIED not read as FLAMEGRAPH");
    CHECK(m->has_max_nodes || m->max_nodes == 0, "max_nodes without presence");
    check_strs(m->call_site, m->ncall_site);
    check_strs(m->profile_ids, m->nprofile_ids);
    for (uint32_t i = 0; i < m->nprofile_ids; i++)
        check_profile_id(m->profile_ids[i]);
    CHECK(m->has_stack_trace_selector || (m->ncall_site == 0 && !m->has_go_pgo), "call site without a selector");
    check_strs(m->span_ids, m->nspan_ids);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int which = data[0] & 7, codec = data[0] & 8 ? PS_QR_JSON : PS_QR_BINARY;
    const uint8_t *body = data + 1;
    size_t n = size - 1;
    ps_arena_t a = PS_ARENA_INIT;
    ps_err_t err;
    ps_err_clear(&err);
    ps_qr_labels_req_t lr;
    ps_qr_merge_req_t m, m2;
    ps_qr_series_req_t sr;
    ps_qr_heatmap_req_t hr;
    ps_qr_analyze_req_t ar;
    int rc;
    if (data[0] & 32)
        return fuzz_rules(which, codec, data[0] & 1, body, n);
    if ((data[0] & 16) && !(data[0] & 1)) {
        ps_st_setting_t st;
        bool has = false;
        switch (which >> 1) {
        case 0: rc = ps_qr_decode_profile_stats(codec, body, n, &a, BUDGET, &err); break;
        case 1: rc = ps_st_decode_get(codec, body, n, &a, BUDGET, &err); break;
        case 2: rc = ps_st_decode_set(codec, body, n, &a, BUDGET, &st, &has, &err); break;
        default: rc = ps_st_decode_delete(codec, body, n, &a, BUDGET, &st, &err); has = true; break;
        }
        if (rc != 0) {
            ps_fuzz_check_decode_error(rc, &err);
            CHECK(strncmp(err.msg, "settings.v1.", 12) == 0 || strncmp(err.msg, "types.v1.", 9) == 0,
                  "message without the type: %s", err.msg);
        } else if ((which >> 1) >= 2 && has) {
            CHECK(st.name != NULL && strlen(st.name) == st.nlen, "setting name");
            CHECK(which >> 1 == 3 || (st.value != NULL && strlen(st.value) == st.vlen), "setting value");
        }
        ps_arena_dispose(&a);
        return 0;
    }
    if (data[0] & 16)
        which = data[0] & 4 ? 10 : data[0] & 2 ? 9 : 8;
    switch (which) {
    case 0: rc = ps_qr_decode_profile_types(codec, body, n, &a, BUDGET, &lr, &err); break;
    case 1: rc = ps_qr_decode_label_names(codec, body, n, &a, BUDGET, &lr, &err); break;
    case 2: rc = ps_qr_decode_label_values(codec, body, n, &a, BUDGET, &lr, &err); break;
    case 3: rc = ps_qr_decode_series(codec, body, n, &a, BUDGET, &lr, &err); break;
    case 4: rc = ps_qr_decode_merge_stacktraces(codec, body, n, &a, BUDGET, &m, &err); break;
    case 5: rc = ps_qr_decode_merge_profile(codec, body, n, &a, BUDGET, &m, &err); break;
    case 6: rc = ps_qr_decode_diff(codec, body, n, &a, BUDGET, &m, &m2, &err); break;
    case 7: rc = ps_qr_decode_select_series(codec, body, n, &a, BUDGET, &sr, &err); break;
    case 8: rc = ps_qr_decode_heatmap(codec, body, n, &a, BUDGET, &hr, &err); break;
    case 10: rc = ps_qr_decode_merge_span(codec, body, n, &a, BUDGET, &m, &err); break;
    default: rc = ps_qr_decode_analyze(codec, body, n, &a, BUDGET, &ar, &err); break;
    }
    if (rc != 0) {
        ps_fuzz_check_decode_error(rc, &err);
        CHECK(strncmp(err.msg, "querier.v1.", 11) == 0 || strncmp(err.msg, "types.v1.", 9) == 0,
              "message without the type: %s", err.msg);
    } else if (which <= 3) {
        check_labels(&lr);
    } else if (which <= 5) {
        check_merge(&m);
    } else if (which == 6) {
        check_merge(&m);
        check_merge(&m2);
    } else if (which == 8) {
        CHECK(hr.type_id != NULL && hr.label_selector != NULL, "heatmap strings");
        check_strs(hr.group_by, hr.ngroup_by);
        CHECK(hr.has_limit || hr.limit == 0, "limit without presence");
    } else if (which == 10) {
        check_merge(&m);
        CHECK(!m.has_stack_trace_selector && m.nprofile_ids == 0, "span request with other selectors");
    } else if (which == 9) {
        CHECK(ar.query != NULL && strlen(ar.query) < (1u << 24), "analyze query");
    } else {
        CHECK(sr.type_id != NULL && sr.label_selector != NULL, "series strings");
        check_strs(sr.group_by, sr.ngroup_by);
        CHECK(sr.average == (sr.aggregation == 1), "average %d aggregation %d", sr.average, sr.aggregation);
        check_strs(sr.call_site, sr.ncall_site);
        CHECK(sr.has_stack_trace_selector || sr.ncall_site == 0, "call site without a selector");
    }
    ps_arena_dispose(&a);
    return 0;
}
