/*
 * pyroscope.h - the codec of Pyroscope's push.v1 messages (proto/pyroscope_push.proto,
 * docs/protocols.md), binary protobuf or protojson (a Connect body, proto/pbjson.h), to and from our own C
 * structs: a PushRequest is series of labels and raw samples (each a pprof, gzipped or not).
 * The generated protobuf-c structs stay in proto/.
 */
#ifndef PS_PROTO_PYROSCOPE_H
#define PS_PROTO_PYROSCOPE_H

#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

/** Codecs: the values of ps_pb_codec_t and of web/connect.h's PS_CONNECT_PROTO / _JSON. */
enum { PS_PYRO_PROTO = 0, PS_PYRO_JSON = 1 };

typedef struct ps_pyro_label {
    const char *name, *value; /* NUL-terminated, valid UTF-8 without NUL bytes */
    size_t nlen, vlen;
} ps_pyro_label_t;

typedef struct ps_pyro_sample {
    const uint8_t *raw;       /* raw_profile: a pprof, gzipped or not */
    size_t len;
    const char *id;           /* ID (a UUID, or "") */
} ps_pyro_sample_t;

typedef struct ps_pyro_series {
    ps_pyro_label_t *labels;  /* as sent: unsorted, unvalidated */
    size_t nlabels;
    ps_pyro_sample_t *samples;
    size_t nsamples;
} ps_pyro_series_t;

typedef struct ps_pyro_push {
    ps_pyro_series_t *series;
    size_t nseries;
} ps_pyro_push_t;

/**
 * Decodes a push.v1.PushRequest (codec PS_PYRO_PROTO or PS_PYRO_JSON) into out, everything from
 * arena, at most budget bytes of it (past that PS_ETOOBIG). Malformed input is PS_EINVAL with a
 * message that says where ("protobuf: series[0].labels[1].value: ..." / "json: ..."). Annotations
 * are dropped.
 */
int ps_pyro_push_decode(int codec, const void *data, size_t n, ps_arena_t *arena, size_t budget, ps_pyro_push_t *out,
                        ps_err_t *err);

/** Encodes a PushRequest with codec, appending to out (tests, benchmarks, fuzz seeds). */
void ps_pyro_push_encode(int codec, const ps_pyro_push_t *in, ps_buf_t *out);

/** The (empty) push.v1.PushResponse in codec: no bytes, or "{}". */
void ps_pyro_push_response(int codec, ps_buf_t *out);

#endif
