/*
 * pbjson.h - (private to proto/) the two codecs of a Connect body for any protobuf-c message:
 * binary protobuf with an allocation budget, and protojson (the canonical JSON mapping, as
 * connect-go's JSON codec writes and reads it). Used by the Pyroscope codecs (push.c, querier.c)
 * so that each message is described once, by its .proto file.
 *
 * protojson rules (docs/protocols.md, "Connect"), reading as connect-go's JSON codec does
 * (protojson.UnmarshalOptions{DiscardUnknown: true}, google.golang.org/protobuf 1.36):
 *  - field names: the lowerCamelCase JSON name (sample_type -> sampleType, profile_typeID ->
 *    profileTypeID, ID -> ID) is written; both it and the original proto name are read; a field
 *    given twice (by one name or by both, null included) is an error ("duplicate field");
 *  - int64/uint64/fixed64 are written as JSON strings, 32-bit integers and doubles as numbers
 *    (NaN, Infinity, -Infinity as strings); every numeric field reads a number or a string, the
 *    string holding one JSON number token without white space around it ("1e3", "1.50e2" are
 *    whole numbers; "0x10", "+1", "007", " 1" are not numbers); limits: a JSON number (not a
 *    string) past int64 is read through a double (a uint64 past int64 must be a string), and a
 *    whole number written with a fraction or exponent from 2^53 on is refused, not rounded;
 *  - bytes as standard base64 (padded); read from the URL alphabet when the string has '-' or
 *    '_', else the standard one, padded when its length is a multiple of 4 and unpadded
 *    otherwise, '\r' and '\n' skipped;
 *  - enums written by their value name, read by name or number; a name the enum does not have is
 *    left out (the field unset, no element in a list);
 *  - proto3 defaults (0, "", false, empty repeated, absent message) are not written; proto3
 *    `optional` fields are written when present; `null` reads as the default (not in a list);
 *  - unknown fields are ignored, whatever their value (duplicate keys inside it too); a wrong JSON
 *    type for a known field is an error naming the field path ("series[0].labels[2].name: ...");
 *    an empty body is "zero-length payload is not a valid JSON object" (connect-go's words);
 *    strings with \u0000 are refused (protobuf-c's strings end at NUL; protojson takes them).
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

/** The Connect codecs as the APIs name them (PS_QR_BINARY 0, PS_QR_JSON 1 in querier.h: the values
 *  of ps_pb_codec_t): ps_pb_decode with the message type's name before the error
 *  ("settings.v1.GetSettingsRequest: ..."), and ps_pb_encode. */
int ps_pb_decode_api(int codec, const void *data, size_t n, const ProtobufCMessageDescriptor *d, ps_arena_t *arena,
                     size_t budget, ProtobufCMessage **out, ps_err_t *err);
void ps_pb_encode_api(int codec, const ProtobufCMessage *m, ps_buf_t *out);

#endif
