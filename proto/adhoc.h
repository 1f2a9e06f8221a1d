/*
 * adhoc.h - the adhocprofiles.v1.AdHocProfileService messages (proto/pyroscope_adhoc.proto) as our
 * own types: requests decoded from a Connect body (binary protobuf or protojson, querier.h's
 * PS_QR_BINARY / PS_QR_JSON), answers encoded in the request's codec. Errors name the message
 * ("adhocprofiles.v1.AdHocProfilesGetRequest: json: ...").
 */
#ifndef PS_PROTO_ADHOC_H
#define PS_PROTO_ADHOC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** A request of any of the four methods (the fields its message has; strings NUL-terminated,
 *  from the arena, "" when absent). */
typedef struct ps_ah_req {
    const char *name, *profile; /* Upload: the name and the base64 profile (profile_len chars) */
    size_t profile_len;
    const char *id;             /* Get */
    const char *left_id, *right_id; /* Diff */
    const char *profile_type;   /* Get, Diff: NULL when absent */
    bool has_max_nodes;
    int64_t max_nodes;
} ps_ah_req_t;

/** The methods' request messages. */
typedef enum { PS_AH_UPLOAD, PS_AH_GET, PS_AH_LIST, PS_AH_DIFF } ps_ah_method_t;

/** Decodes the request of method m. */
int ps_ah_decode(int codec, ps_ah_method_t m, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                 ps_ah_req_t *r, ps_err_t *err);

/** AdHocProfilesGetResponse (Upload's answer too). */
typedef struct ps_ah_profile {
    const char *id, *name;
    int64_t uploaded_ms;
    const char *profile_type;
    const char *const *profile_types;
    size_t ntypes;
    const char *flamebearer; /* the JSON text, NUL-terminated */
} ps_ah_profile_t;

void ps_ah_encode_get(int codec, const ps_ah_profile_t *p, ps_buf_t *out);
/** AdHocProfilesListResponse of n profiles (id, name, uploaded_ms of each). */
void ps_ah_encode_list(int codec, const ps_ah_profile_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out);
/** AdHocProfilesDiffResponse. */
void ps_ah_encode_diff(int codec, const char *const *types, size_t ntypes, const char *flamebearer, ps_buf_t *out);

#endif
