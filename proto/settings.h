/*
 * settings.h - the settings.v1.SettingsService messages (proto/pyroscope_settings.proto) as our
 * own types: requests decoded from a Connect body (binary protobuf or protojson, querier.h's
 * PS_QR_BINARY / PS_QR_JSON), answers encoded in the request's codec. Errors name the message
 * ("settings.v1.SetSettingsRequest: json: ...").
 */
#ifndef PS_PROTO_SETTINGS_H
#define PS_PROTO_SETTINGS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** One settings.v1.Setting (strings from the arena, NUL-terminated; lengths as sent). */
typedef struct ps_st_setting {
    const char *name, *value;
    size_t nlen, vlen;
    int64_t modified_ms; /* modifiedAt */
} ps_st_setting_t;

/** GetSettingsRequest (no fields). */
int ps_st_decode_get(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err);
/** SetSettingsRequest: *has is false when its setting is absent. */
int ps_st_decode_set(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_st_setting_t *s,
                     bool *has, ps_err_t *err);
/** DeleteSettingsRequest: its name. */
int ps_st_decode_delete(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_st_setting_t *s,
                        ps_err_t *err);

/** GetSettingsResponse of n settings. */
void ps_st_encode_get(int codec, const ps_st_setting_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out);
/** SetSettingsResponse of s. */
void ps_st_encode_set(int codec, const ps_st_setting_t *s, ps_buf_t *out);
/** DeleteSettingsResponse (empty). */
void ps_st_encode_delete(int codec, ps_buf_t *out);

#endif
