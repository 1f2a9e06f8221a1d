/*
 * otlp.h - the codec of OTLP profiles (opentelemetry-proto v1.10.0, package
 * opentelemetry.proto.collector.profiles.v1development; proto/otlp_*.proto, docs/protocols.md
 * "OTLP profiles"), binary protobuf or OTLP JSON, to and from our own C structs. The request is
 * read as sent: indexes are copied, not checked (src/ingest/otlp.c checks every one of them).
 * The generated protobuf-c structs stay in proto/.
 */
#ifndef PS_PROTO_OTLP_H
#define PS_PROTO_OTLP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** Codecs: the values of ps_pb_codec_t. */
enum { PS_OTLP_PROTO = 0, PS_OTLP_JSON = 1 };

/** What an attribute value is, as profstore reads it (Pyroscope's rule: strings and integers
 *  become label values, an array of one value counts as that value, everything else is kept
 *  out of labels). */
typedef enum {
    PS_OTLP_NONE = 0, /* absent, or a kind that is not read (bool, double, bytes, kvlist, longer arrays) */
    PS_OTLP_STR,      /* s, len */
    PS_OTLP_INT,      /* i */
    PS_OTLP_STRINDEX, /* i: an index into the dictionary's string_table */
} ps_otlp_kind_t;

typedef struct ps_otlp_value {
    ps_otlp_kind_t kind;
    const char *s;
    size_t len;
    int64_t i;
} ps_otlp_value_t;

/** A resource or scope attribute: key (may be empty), or key_strindex into the string table. */
typedef struct ps_otlp_kv {
    const char *key;
    size_t klen;
    int32_t key_strindex;
    ps_otlp_value_t v;
} ps_otlp_kv_t;

/** An entry of the dictionary's attribute_table. */
typedef struct ps_otlp_attr {
    int32_t key; /* key_strindex */
    ps_otlp_value_t v;
} ps_otlp_attr_t;

typedef struct ps_otlp_mapping {
    uint64_t memory_start, memory_limit, file_offset;
    int32_t filename;
    const int32_t *attrs;
    size_t nattrs;
} ps_otlp_mapping_t;

typedef struct ps_otlp_line {
    int32_t function;
    int64_t line, column;
} ps_otlp_line_t;

typedef struct ps_otlp_location {
    int32_t mapping;
    uint64_t address;
    ps_otlp_line_t *lines;
    size_t nlines;
} ps_otlp_location_t;

typedef struct ps_otlp_function {
    int32_t name, system_name, filename;
    int64_t start_line;
} ps_otlp_function_t;

typedef struct ps_otlp_link {
    const uint8_t *trace_id, *span_id;
    size_t trace_len, span_len;
} ps_otlp_link_t;

typedef struct ps_otlp_stack {
    const int32_t *locs;
    size_t n;
} ps_otlp_stack_t;

typedef struct ps_otlp_sample {
    int32_t stack;
    int32_t link;
    const int32_t *attrs;
    size_t nattrs;
    const int64_t *values;
    size_t nvalues;
    size_t ntimestamps;
} ps_otlp_sample_t;

typedef struct ps_otlp_profile {
    bool has_sample_type, has_period_type;
    int32_t type, unit;   /* sample_type */
    int32_t ptype, punit; /* period_type */
    int64_t period;
    uint64_t time_unix_nano, duration_nano;
    ps_otlp_sample_t *samples;
    size_t nsamples;
    const int32_t *attrs;
    size_t nattrs;
} ps_otlp_profile_t;

typedef struct ps_otlp_scope {
    ps_otlp_kv_t *attrs;
    size_t nattrs;
    ps_otlp_profile_t *profiles;
    size_t nprofiles;
} ps_otlp_scope_t;

typedef struct ps_otlp_resource {
    ps_otlp_kv_t *attrs;
    size_t nattrs;
    ps_otlp_scope_t *scopes;
    size_t nscopes;
} ps_otlp_resource_t;

/** An ExportProfilesServiceRequest. Strings are NUL-terminated (protobuf-c's), from the arena. */
typedef struct ps_otlp_request {
    bool has_dictionary;
    ps_otlp_mapping_t *mappings;
    size_t nmappings;
    ps_otlp_location_t *locations;
    size_t nlocations;
    ps_otlp_function_t *functions;
    size_t nfunctions;
    ps_otlp_link_t *links;
    size_t nlinks;
    const char *const *strings;
    size_t nstrings;
    ps_otlp_attr_t *attrs;
    size_t nattrs;
    ps_otlp_stack_t *stacks;
    size_t nstacks;
    ps_otlp_resource_t *resources;
    size_t nresources;
} ps_otlp_request_t;

/**
 * Decodes an ExportProfilesServiceRequest (codec PS_OTLP_PROTO or PS_OTLP_JSON) into out,
 * everything from arena, at most budget bytes of the decoded message (past that PS_ETOOBIG).
 * Malformed input is PS_EINVAL with a message that says where ("protobuf: ..." / "json: ...").
 * OTLP JSON: lowerCamelCase names (original names read too), trace_id/span_id/profile_id as hex,
 * 64-bit integers as strings or numbers, enums as numbers.
 */
int ps_otlp_decode(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_otlp_request_t *out,
                   ps_err_t *err);

/** Encodes an ExportProfilesServiceResponse with codec, appending to out: no partial_success when
 *  rejected is 0 and msg is NULL, else {rejected_profiles, error_message}. */
void ps_otlp_response(int codec, int64_t rejected, const char *msg, ps_buf_t *out);

/** Encodes the error body of OTLP/HTTP, a google.rpc.Status {code (a gRPC code), message}. */
void ps_otlp_status(int codec, int32_t grpc_code, const char *msg, ps_buf_t *out);

#endif
