/*
 * adhoc.c - the adhocprofiles.v1 codec (adhoc.h): protobuf-c structs of proto/pyroscope_adhoc.proto
 * to and from our own types, through pbjson.h's two codecs.
 * Example (binary), Get {id "01J0000000000000000000000A-cpu.pb.gz", max_nodes 16}:
 *
 *   0a 24 "01J0000000000000000000000A-cpu.pb.gz"   18 10
 */
#include "adhoc.h"

#include <string.h>

#include "pbjson.h"
#include "pyroscope_adhoc.pb-c.h"
#include "querier.h"

static const ProtobufCMessageDescriptor *const descs[] = {
    [PS_AH_UPLOAD] = &adhocprofiles__v1__ad_hoc_profiles_upload_request__descriptor,
    [PS_AH_GET] = &adhocprofiles__v1__ad_hoc_profiles_get_request__descriptor,
    [PS_AH_LIST] = &adhocprofiles__v1__ad_hoc_profiles_list_request__descriptor,
    [PS_AH_DIFF] = &adhocprofiles__v1__ad_hoc_profiles_diff_request__descriptor,
};

int ps_ah_decode(int codec, ps_ah_method_t m, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                 ps_ah_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *msg;
    memset(r, 0, sizeof(*r));
    r->name = r->profile = r->id = r->left_id = r->right_id = "";
    int ret = ps_pb_decode(codec == PS_QR_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n, descs[m], arena, budget, &msg, err);
    if (ret != 0)
        return ps_err_prefix(err, "%s", descs[m]->name);
    if (m == PS_AH_UPLOAD) {
        const Adhocprofiles__V1__AdHocProfilesUploadRequest *q = (const void *)msg;
        r->name = q->name;
        r->profile = q->profile;
        r->profile_len = strlen(q->profile);
        r->has_max_nodes = q->_max_nodes_case == ADHOCPROFILES__V1__AD_HOC_PROFILES_UPLOAD_REQUEST___MAX_NODES_MAX_NODES;
        r->max_nodes = r->has_max_nodes ? q->max_nodes : 0;
    } else if (m == PS_AH_GET) {
        const Adhocprofiles__V1__AdHocProfilesGetRequest *q = (const void *)msg;
        r->id = q->id;
        if (q->_profile_type_case == ADHOCPROFILES__V1__AD_HOC_PROFILES_GET_REQUEST___PROFILE_TYPE_PROFILE_TYPE)
            r->profile_type = q->profile_type;
        r->has_max_nodes = q->_max_nodes_case == ADHOCPROFILES__V1__AD_HOC_PROFILES_GET_REQUEST___MAX_NODES_MAX_NODES;
        r->max_nodes = r->has_max_nodes ? q->max_nodes : 0;
    } else if (m == PS_AH_DIFF) {
        const Adhocprofiles__V1__AdHocProfilesDiffRequest *q = (const void *)msg;
        r->left_id = q->left_id;
        r->right_id = q->right_id;
        if (q->_profile_type_case == ADHOCPROFILES__V1__AD_HOC_PROFILES_DIFF_REQUEST___PROFILE_TYPE_PROFILE_TYPE)
            r->profile_type = q->profile_type;
        r->has_max_nodes = q->_max_nodes_case == ADHOCPROFILES__V1__AD_HOC_PROFILES_DIFF_REQUEST___MAX_NODES_MAX_NODES;
        r->max_nodes = r->has_max_nodes ? q->max_nodes : 0;
    }
    return 0;
}

void ps_ah_encode_get(int codec, const ps_ah_profile_t *p, ps_buf_t *out)
{
    Adhocprofiles__V1__AdHocProfilesGetResponse res = ADHOCPROFILES__V1__AD_HOC_PROFILES_GET_RESPONSE__INIT;
    res.id = (char *)p->id;
    res.name = (char *)p->name;
    res.uploaded_at = p->uploaded_ms;
    res.profile_type = (char *)p->profile_type;
    res.n_profile_types = p->ntypes;
    res.profile_types = (char **)p->profile_types;
    res.flamebearer_profile = (char *)p->flamebearer;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_ah_encode_list(int codec, const ps_ah_profile_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Adhocprofiles__V1__AdHocProfilesListResponse res = ADHOCPROFILES__V1__AD_HOC_PROFILES_LIST_RESPONSE__INIT;
    Adhocprofiles__V1__AdHocProfilesProfileMetadata **pv = ps_arena_alloc(arena, (n + 1) * sizeof(*pv));
    Adhocprofiles__V1__AdHocProfilesProfileMetadata *mv = ps_arena_alloc(arena, (n + 1) * sizeof(*mv));
    for (size_t i = 0; i < n; i++) {
        mv[i] = (Adhocprofiles__V1__AdHocProfilesProfileMetadata)ADHOCPROFILES__V1__AD_HOC_PROFILES_PROFILE_METADATA__INIT;
        mv[i].id = (char *)v[i].id;
        mv[i].name = (char *)v[i].name;
        mv[i].uploaded_at = v[i].uploaded_ms;
        pv[i] = &mv[i];
    }
    res.n_profiles = n;
    res.profiles = pv;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_ah_encode_diff(int codec, const char *const *types, size_t ntypes, const char *flamebearer, ps_buf_t *out)
{
    Adhocprofiles__V1__AdHocProfilesDiffResponse res = ADHOCPROFILES__V1__AD_HOC_PROFILES_DIFF_RESPONSE__INIT;
    res.n_profile_types = ntypes;
    res.profile_types = (char **)types;
    res.flamebearer_profile = (char *)flamebearer;
    ps_pb_encode_api(codec, &res.base, out);
}
