/*
 * recording.h - the settings.v1.RecordingRulesService messages (proto/pyroscope_recording.proto)
 * as our own types: requests decoded from a Connect body (binary protobuf or protojson, querier.h's
 * PS_QR_BINARY / PS_QR_JSON), answers encoded in the request's codec, and the binary
 * RecordingRuleStore value a stored rule keeps. Errors name the message
 * ("settings.v1.UpsertRecordingRuleRequest: json: ..."). Nothing here validates a rule: that is
 * src/rules/.
 */
#ifndef PS_PROTO_RECORDING_H
#define PS_PROTO_RECORDING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** A types.v1.LabelPair of a rule's external_labels. */
typedef struct ps_rr_label {
    const char *name, *value;
} ps_rr_label_t;

/** One recording rule, as the API and the store carry it (strings NUL-terminated, from the arena
 *  of the decode, or borrowed by the encoders). */
typedef struct ps_rr_rule {
    const char *id, *metric_name;
    const char *profile_type;   /* answers only (RecordingRule.profile_type) */
    const char **matchers;
    size_t nmatchers;
    const char **group_by;
    size_t ngroup_by;
    ps_rr_label_t *ext;         /* external_labels */
    size_t next;
    int64_t generation;
    bool has_function;          /* stacktrace_filter.function_name is present */
    const char *function_name;  /* its function_name ("" when absent) */
    bool provisioned;           /* answers only */
} ps_rr_rule_t;

/** GetRecordingRuleRequest or DeleteRecordingRuleRequest (del): their id. */
int ps_rr_decode_id(int codec, bool del, const void *data, size_t n, ps_arena_t *arena, size_t budget, const char **id,
                    ps_err_t *err);
/** ListRecordingRulesRequest (no fields). */
int ps_rr_decode_list(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err);
/** UpsertRecordingRuleRequest into r. */
int ps_rr_decode_upsert(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_rr_rule_t *r,
                        ps_err_t *err);

/** GetRecordingRuleResponse (get) or UpsertRecordingRuleResponse of r. */
void ps_rr_encode_rule(int codec, bool get, const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out);
/** ListRecordingRulesResponse of n rules. */
void ps_rr_encode_list(int codec, const ps_rr_rule_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out);
/** DeleteRecordingRuleResponse (empty). */
void ps_rr_encode_delete(int codec, ps_buf_t *out);

/** The stored value of r: a binary RecordingRuleStore (generation included). */
void ps_rr_store_encode(const ps_rr_rule_t *r, ps_arena_t *arena, ps_buf_t *out);
/** A stored value back into r (PS_ECORRUPT when it does not decode). */
int ps_rr_store_decode(const void *data, size_t n, ps_arena_t *arena, ps_rr_rule_t *r, ps_err_t *err);

#endif
