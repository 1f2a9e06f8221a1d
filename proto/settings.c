/*
 * settings.c - the settings.v1 codec (settings.h): protobuf-c structs of
 * proto/pyroscope_settings.proto to and from our own types, through pbjson.h's two codecs.
 * Example (binary), Set {name "pluginSettings", value "{}", modifiedAt 1000}:
 *
 *   0a 16                 1 setting
 *     0a 0e "pluginSettings"  12 02 "{}"  18 e8 07
 */
#include "settings.h"

#include <string.h>

#include "pbjson.h"
#include "pyroscope_settings.pb-c.h"
#include "querier.h"

int ps_st_decode_get(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_err_t *err)
{
    ProtobufCMessage *m;
    return ps_pb_decode_api(codec, data, n, &settings__v1__get_settings_request__descriptor, arena, budget, &m, err);
}

int ps_st_decode_set(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_st_setting_t *s,
                     bool *has, ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(s, 0, sizeof(*s));
    *has = false;
    int ret = ps_pb_decode_api(codec, data, n, &settings__v1__set_settings_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Settings__V1__SetSettingsRequest *q = (const void *)m;
        if (q->setting != NULL) {
            *has = true;
            s->name = q->setting->name;
            s->nlen = strlen(s->name);
            s->value = q->setting->value;
            s->vlen = strlen(s->value);
            s->modified_ms = q->setting->modifiedat;
        }
    }
    return ret;
}

int ps_st_decode_delete(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_st_setting_t *s,
                        ps_err_t *err)
{
    ProtobufCMessage *m;
    memset(s, 0, sizeof(*s));
    int ret = ps_pb_decode_api(codec, data, n, &settings__v1__delete_settings_request__descriptor, arena, budget, &m, err);
    if (ret == 0) {
        const Settings__V1__DeleteSettingsRequest *q = (const void *)m;
        s->name = q->name;
        s->nlen = strlen(s->name);
    }
    return ret;
}

static void setting_of(const ps_st_setting_t *s, Settings__V1__Setting *o)
{
    *o = (Settings__V1__Setting)SETTINGS__V1__SETTING__INIT;
    o->name = (char *)s->name;
    o->value = (char *)s->value;
    o->modifiedat = s->modified_ms;
}

void ps_st_encode_get(int codec, const ps_st_setting_t *v, size_t n, ps_arena_t *arena, ps_buf_t *out)
{
    Settings__V1__GetSettingsResponse res = SETTINGS__V1__GET_SETTINGS_RESPONSE__INIT;
    Settings__V1__Setting **pv = ps_arena_alloc(arena, (n + 1) * sizeof(*pv));
    Settings__V1__Setting *sv = ps_arena_alloc(arena, (n + 1) * sizeof(*sv));
    for (size_t i = 0; i < n; i++) {
        setting_of(&v[i], &sv[i]);
        pv[i] = &sv[i];
    }
    res.n_settings = n;
    res.settings = pv;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_st_encode_set(int codec, const ps_st_setting_t *s, ps_buf_t *out)
{
    Settings__V1__Setting st;
    setting_of(s, &st);
    Settings__V1__SetSettingsResponse res = SETTINGS__V1__SET_SETTINGS_RESPONSE__INIT;
    res.setting = &st;
    ps_pb_encode_api(codec, &res.base, out);
}

void ps_st_encode_delete(int codec, ps_buf_t *out)
{
    Settings__V1__DeleteSettingsResponse res = SETTINGS__V1__DELETE_SETTINGS_RESPONSE__INIT;
    ps_pb_encode_api(codec, &res.base, out);
}
