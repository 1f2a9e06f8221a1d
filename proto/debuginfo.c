/*
 * debuginfo.c - the debuginfo.v1alpha1 codec (debuginfo.h): protobuf-c structs of
 * proto/pyroscope_debuginfo.proto to and from our own types, through pbjson.h's two codecs; the
 * list answer's JSON is written here (its timestamps have protojson's string form, which pbjson
 * does not know).
 * Example (binary), ShouldInitiateUploadRequest {file {gnu_build_id "ab12", name "prog", type
 * TYPE_EXECUTABLE_FULL}}:
 *
 *   0a 0e                        file, 14 bytes
 *      0a 04 "ab12"              gnu_build_id
 *      22 04 "prog"              name
 *      28 01                     type = TYPE_EXECUTABLE_FULL
 */
#include "debuginfo.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include "core/json.h"
#include "pbjson.h"
#include "pyroscope_debuginfo.pb-c.h"
#include "querier.h"

static const ProtobufCMessageDescriptor *const descs[] = {
    [PS_DI_SHOULD_INITIATE] = &debuginfo__v1alpha1__should_initiate_upload_request__descriptor,
    [PS_DI_UPLOAD_FINISHED] = &debuginfo__v1alpha1__upload_finished_request__descriptor,
    [PS_DI_LIST] = &debuginfo__v1alpha1__list_debuginfo_request__descriptor,
    [PS_DI_DELETE] = &debuginfo__v1alpha1__delete_debuginfo_request__descriptor,
};

static void file_of(const Debuginfo__V1alpha1__FileMetadata *f, ps_di_file_t *out)
{
    out->gnu_build_id = f->gnu_build_id;
    out->go_build_id = f->go_build_id;
    out->otel_file_id = f->otel_file_id;
    out->name = f->name;
    out->type = (int32_t)f->type;
}

int ps_di_decode(int codec, ps_di_method_t m, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                 ps_di_req_t *r, ps_err_t *err)
{
    ProtobufCMessage *msg;
    memset(r, 0, sizeof(*r));
    r->gnu_build_id = "";
    r->file = (ps_di_file_t){"", "", "", "", 0};
    int ret = ps_pb_decode(codec == PS_QR_JSON ? PS_PB_JSON : PS_PB_BINARY, data, n, descs[m], arena, budget, &msg, err);
    if (ret != 0)
        return ps_err_prefix(err, "%s", descs[m]->name);
    if (m == PS_DI_SHOULD_INITIATE) {
        const Debuginfo__V1alpha1__ShouldInitiateUploadRequest *q = (const void *)msg;
        if (q->file != NULL) {
            r->has_file = true;
            file_of(q->file, &r->file);
        }
    } else if (m == PS_DI_UPLOAD_FINISHED) {
        r->gnu_build_id = ((const Debuginfo__V1alpha1__UploadFinishedRequest *)msg)->gnu_build_id;
    } else if (m == PS_DI_DELETE) {
        r->gnu_build_id = ((const Debuginfo__V1alpha1__DeleteDebuginfoRequest *)msg)->gnu_build_id;
    }
    return 0;
}

void ps_di_encode_should(int codec, bool should, const char *reason, ps_buf_t *out)
{
    Debuginfo__V1alpha1__ShouldInitiateUploadResponse res = DEBUGINFO__V1ALPHA1__SHOULD_INITIATE_UPLOAD_RESPONSE__INIT;
    res.should_initiate_upload = should;
    res.reason = (char *)reason;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_di_encode_empty(int codec, ps_buf_t *out)
{
    Debuginfo__V1alpha1__UploadFinishedResponse res = DEBUGINFO__V1ALPHA1__UPLOAD_FINISHED_RESPONSE__INIT;
    ps_pb_encode_api(codec, &res.base, out);
}

/* the protobuf-c form of o, its parts from arena */
static Debuginfo__V1alpha1__ObjectMetadata *object_pb(const ps_di_object_t *o, ps_arena_t *arena)
{
    Debuginfo__V1alpha1__ObjectMetadata *m = ps_arena_alloc(arena, sizeof(*m));
    Debuginfo__V1alpha1__FileMetadata *f = ps_arena_alloc(arena, sizeof(*f));
    *m = (Debuginfo__V1alpha1__ObjectMetadata)DEBUGINFO__V1ALPHA1__OBJECT_METADATA__INIT;
    *f = (Debuginfo__V1alpha1__FileMetadata)DEBUGINFO__V1ALPHA1__FILE_METADATA__INIT;
    f->gnu_build_id = (char *)o->file.gnu_build_id;
    f->go_build_id = (char *)o->file.go_build_id;
    f->otel_file_id = (char *)o->file.otel_file_id;
    f->name = (char *)o->file.name;
    f->type = (Debuginfo__V1alpha1__FileMetadata__Type)o->file.type;
    m->file = f;
    m->state = (Debuginfo__V1alpha1__ObjectMetadata__State)o->state;
    int64_t ts[2] = {o->started_ns, o->finished_ns};
    Debuginfo__V1alpha1__Timestamp **dst[2] = {&m->started_at, &m->finished_at};
    for (int i = 0; i < 2; i++) {
        if (ts[i] == 0)
            continue;
        Debuginfo__V1alpha1__Timestamp *t = ps_arena_alloc(arena, sizeof(*t));
        *t = (Debuginfo__V1alpha1__Timestamp)DEBUGINFO__V1ALPHA1__TIMESTAMP__INIT;
        t->seconds = ts[i] / 1000000000;
        t->nanos = (int32_t)(ts[i] % 1000000000);
        *dst[i] = t;
    }
    m->size_bytes = o->size_bytes;
    return m;
}

/* protojson's Timestamp: 2026-12-05T09:00:00Z, .123Z, .123456Z or .123456789Z */
static void json_time(ps_json_t *j, int64_t ns)
{
    time_t s = (time_t)(ns / 1000000000);
    long frac = (long)(ns % 1000000000);
    struct tm tm;
    gmtime_r(&s, &tm);
    char buf[64];
    size_t n = strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%S", &tm);
    if (frac % 1000000 == 0 && frac != 0)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%03ld", frac / 1000000);
    else if (frac % 1000 == 0 && frac != 0)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%06ld", frac / 1000);
    else if (frac != 0)
        n += (size_t)snprintf(buf + n, sizeof(buf) - n, ".%09ld", frac);
    buf[n++] = 'Z';
    ps_json_str(j, buf, n);
}

static void json_nonempty(ps_json_t *j, const char *key, const char *v)
{
    if (v != NULL && *v) {
        ps_json_key(j, key);
        ps_json_cstr(j, v);
    }
}

static void json_object(ps_json_t *j, const ps_di_object_t *o)
{
    static const char *const types[] = {"TYPE_UNSPECIFIED", "TYPE_EXECUTABLE_FULL", "TYPE_EXECUTABLE_NO_TEXT"};
    static const char *const states[] = {"STATE_UPLOADING", "STATE_UPLOADED"};
    ps_json_obj(j);
    ps_json_key(j, "file"); /* present (a message), even when all its fields are defaults */
    ps_json_obj(j);
    json_nonempty(j, "gnuBuildId", o->file.gnu_build_id);
    json_nonempty(j, "goBuildId", o->file.go_build_id);
    json_nonempty(j, "otelFileId", o->file.otel_file_id);
    json_nonempty(j, "name", o->file.name);
    if (o->file.type != 0) {
        ps_json_key(j, "type");
        if (o->file.type > 0 && o->file.type < 3)
            ps_json_cstr(j, types[o->file.type]);
        else
            ps_json_int(j, o->file.type);
    }
    ps_json_end(j);
    if (o->state != 0) {
        ps_json_key(j, "state");
        if (o->state == 1)
            ps_json_cstr(j, states[1]);
        else
            ps_json_int(j, o->state);
    }
    if (o->started_ns != 0) {
        ps_json_key(j, "startedAt");
        json_time(j, o->started_ns);
    }
    if (o->finished_ns != 0) {
        ps_json_key(j, "finishedAt");
        json_time(j, o->finished_ns);
    }
    if (o->size_bytes != 0) {
        char num[32];
        ps_json_key(j, "sizeBytes");
        ps_json_str(j, num, (size_t)snprintf(num, sizeof(num), "%lld", (long long)o->size_bytes));
    }
    ps_json_end(j);
}

void ps_di_encode_list(int codec, const ps_di_object_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out)
{
    if (codec == PS_QR_JSON) {
        ps_json_t j;
        ps_json_init(&j, out);
        ps_json_obj(&j);
        if (n > 0) {
            ps_json_key(&j, "object");
            ps_json_arr(&j);
            for (size_t i = 0; i < n; i++)
                json_object(&j, &v[i]);
            ps_json_end(&j);
        }
        ps_json_end(&j);
        return;
    }
    Debuginfo__V1alpha1__ListDebuginfoResponse res = DEBUGINFO__V1ALPHA1__LIST_DEBUGINFO_RESPONSE__INIT;
    Debuginfo__V1alpha1__ObjectMetadata **pv = ps_arena_alloc(arena, (n + 1) * sizeof(*pv));
    for (size_t i = 0; i < n; i++)
        pv[i] = object_pb(&v[i], arena);
    res.n_object = n;
    res.object = pv;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_di_meta_encode(const ps_di_object_t *o, ps_buf_t *out)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_pb_encode(PS_PB_BINARY, &object_pb(o, &a)->base, out);
    ps_arena_dispose(&a);
}

/* a time in ns, 0 when out of range (years 1678 to 2262) */
static int64_t ns_of(const Debuginfo__V1alpha1__Timestamp *t)
{
    if (t->seconds < -9000000000LL || t->seconds > 9000000000LL || t->nanos < 0 || t->nanos > 999999999)
        return 0;
    return t->seconds * 1000000000 + t->nanos;
}

int ps_di_meta_decode(const void *data, size_t n, ps_arena_t *arena, ps_di_object_t *o, ps_err_t *err)
{
    ProtobufCMessage *msg;
    memset(o, 0, sizeof(*o));
    o->file = (ps_di_file_t){"", "", "", "", 0};
    if (ps_pb_decode(PS_PB_BINARY, data, n, &debuginfo__v1alpha1__object_metadata__descriptor, arena, n * 4 + 4096,
                     &msg, err) != 0)
        return ps_err_prefix(err, "debuginfo.v1alpha1.ObjectMetadata");
    const Debuginfo__V1alpha1__ObjectMetadata *m = (const void *)msg;
    if (m->file != NULL)
        file_of(m->file, &o->file);
    o->state = (int32_t)m->state;
    if (m->started_at != NULL)
        o->started_ns = ns_of(m->started_at);
    if (m->finished_at != NULL)
        o->finished_ns = ns_of(m->finished_at);
    o->size_bytes = m->size_bytes;
    return 0;
}
