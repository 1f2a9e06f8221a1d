/*
 * pbjson.h - (private to proto/) the two codecs of a Connect body for any protobuf-c message:
 * binary protobuf with an allocation budget, and protojson (the canonical JSON mapping, as
 * connect-go's JSON codec writes and reads it). Used by the Pyroscope codecs (push.c, querier.c)
 * so that each message is described once, by its .proto file.
 *
 * protojson rules (docs/protocols.md, "Connect"):
 *  - field names: the lowerCamelCase JSON name (sample_type -> sampleType, profile_typeID ->
 *    profileTypeID, ID -> ID) is written; both it and the original proto name are read;
 *  - int64/uint64/fixed64 are written as JSON strings, read from strings or numbers; 32-bit
 *    integers as numbers; double/float as numbers, with "NaN", "Infinity", "-Infinity" strings;
 *  - bytes as standard base64 (padded), read from standard or URL-safe base64, padded or not;
 *  - enums written by their value name, read by name or number;
 *  - proto3 defaults (0, "", false, empty repeated, absent message) are not written; proto3
 *    `optional` fields are written when present; `null` reads as the default;
 *  - unknown fields are ignored (connect-go discards unknown fields); a wrong JSON type for a
 *    known field is an error naming the field path ("series[0].labels[2].name: ...").
 */
#ifndef PS_PROTO_PBJSON_H
#define PS_PROTO_PBJSON_H

#include <protobuf-c/protobuf-c.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/json.h"
#include "core/mem.h"

typedef enum { PS_PB_BINARY = 0, PS_PB_JSON = 1 } ps_pb_codec_t;

/**
 * Decodes data (n bytes, binary or JSON by codec) into a new message of descriptor d, every
 * allocation from arena and counted against budget bytes (past it: PS_ETOOBIG). Malformed input
 * is PS_EINVAL with a message that says what and where ("protobuf: ..." or "json: line L
 * column C: ..." / "json: <field path>: ...").
 */
int ps_pb_decode(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                 ps_arena_t *arena, size_t budget, ProtobufCMessage **out, ps_err_t *err);

/** A reader of the JSON strings of int64 fields that are not numbers (characters other than
 *  digits, sign, '.', e): 0 with *out, a negative PS_E code with err's message (it becomes
 *  "json: <field path>: <message>"), or 1 when field (its proto name) is not one it reads. */
typedef int (*ps_pb_i64_str_fn)(const char *field, const char *s, size_t n, int64_t *out, ps_err_t *err);
/** ps_pb_decode, with the JSON codec handing such strings to str_i64 first. */
int ps_pb_decode_ex(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                    ps_arena_t *arena, size_t budget, ps_pb_i64_str_fn str_i64, ProtobufCMessage **out, ps_err_t *err);

/** ps_pb_decode with OTLP's JSON rule for ids: bytes fields named trace_id, span_id and
 *  profile_id are hex strings (either case), not base64. */
int ps_pb_decode_otlp(ps_pb_codec_t codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d,
                      ps_arena_t *arena, size_t budget, ProtobufCMessage **out, ps_err_t *err);

/** Encodes m with codec, appending to out (JSON: one object, no trailing newline). */
void ps_pb_encode(ps_pb_codec_t codec, const ProtobufCMessage *m, ps_buf_t *out);

#endif
