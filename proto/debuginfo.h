/*
 * debuginfo.h - the debuginfo.v1alpha1.DebuginfoService messages (proto/pyroscope_debuginfo.proto)
 * as our own types: requests decoded from a Connect body (binary protobuf or protojson, querier.h's
 * PS_QR_BINARY / PS_QR_JSON), answers encoded in the request's codec, and the ObjectMetadata kept
 * beside each uploaded debug file (binary protobuf). Errors name the message
 * ("debuginfo.v1alpha1.UploadFinishedRequest: json: ...").
 */
#ifndef PS_PROTO_DEBUGINFO_H
#define PS_PROTO_DEBUGINFO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** FileMetadata.Type's values. */
enum { PS_DI_TYPE_UNSPECIFIED = 0, PS_DI_TYPE_EXECUTABLE_FULL = 1, PS_DI_TYPE_EXECUTABLE_NO_TEXT = 2 };
/** ObjectMetadata.State's values. */
enum { PS_DI_STATE_UPLOADING = 0, PS_DI_STATE_UPLOADED = 1 };

/** A FileMetadata (strings NUL-terminated, "" when absent). */
typedef struct ps_di_file {
    const char *gnu_build_id, *go_build_id, *otel_file_id, *name;
    int32_t type; /* PS_DI_TYPE_*, or any other number as sent */
} ps_di_file_t;

/** The four methods' request messages. */
typedef enum { PS_DI_SHOULD_INITIATE, PS_DI_UPLOAD_FINISHED, PS_DI_LIST, PS_DI_DELETE } ps_di_method_t;

/** A request of any method: ShouldInitiateUpload's file (has_file false: absent), the
 *  gnu_build_id of UploadFinished and DeleteDebuginfo ("" when absent). */
typedef struct ps_di_req {
    bool has_file;
    ps_di_file_t file;
    const char *gnu_build_id;
} ps_di_req_t;

/** Decodes the request of method m (allocations from arena, at most budget bytes). */
int ps_di_decode(int codec, ps_di_method_t m, const void *data, size_t n, ps_arena_t *arena, size_t budget,
                 ps_di_req_t *r, ps_err_t *err);

/** An ObjectMetadata: times in ns since the epoch, 0 when absent. */
typedef struct ps_di_object {
    ps_di_file_t file;
    int32_t state; /* PS_DI_STATE_* */
    int64_t started_ns, finished_ns;
    int64_t size_bytes;
} ps_di_object_t;

/** ShouldInitiateUploadResponse. */
void ps_di_encode_should(int codec, bool should, const char *reason, ps_buf_t *out);
/** UploadFinishedResponse and DeleteDebuginfoResponse (no fields). */
void ps_di_encode_empty(int codec, ps_buf_t *out);
/** ListDebuginfoResponse of n objects. JSON as protojson writes it: enums by name, int64 as
 *  strings, timestamps as RFC 3339 strings in UTC with 0, 3, 6 or 9 fractional digits. */
void ps_di_encode_list(int codec, const ps_di_object_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out);

/** The ObjectMetadata kept beside an uploaded file: binary protobuf. */
void ps_di_meta_encode(const ps_di_object_t *o, ps_buf_t *out);
/** Reads it back (strings from arena); PS_EINVAL when the bytes are not one. */
int ps_di_meta_decode(const void *data, size_t n, ps_arena_t *arena, ps_di_object_t *o, ps_err_t *err);

#endif
