/*
 * remote_int.h - (private to proto/ and its tests) ps_remote_write_decode by one path alone, so
 * that the tests can hold the direct 1.0 decoder against the protobuf-c path it stands in front of.
 */
#ifndef PS_PROTO_REMOTE_INT_H
#define PS_PROTO_REMOTE_INT_H

#include "proto/remote.h"

typedef enum ps_remote_decode_path {
    PS_REMOTE_DECODE_ANY,        /* what ps_remote_write_decode does: direct, else protobuf-c */
    PS_REMOTE_DECODE_DIRECT,     /* the direct 1.0 decoder alone: PS_REMOTE_DECLINED where it stands aside */
    PS_REMOTE_DECODE_PROTOBUF_C, /* protobuf-c unpack and convert alone */
} ps_remote_decode_path_t;

/** Returned by PS_REMOTE_DECODE_DIRECT for a body it leaves to protobuf-c (err untouched). */
#define PS_REMOTE_DECLINED 1

/** ps_remote_write_decode by the given path. */
int ps_remote_write_decode_path(const void *body, size_t n, int version, const ps_remote_limits_t *lim,
                                ps_arena_t *arena, ps_remote_write_t *out, ps_remote_decode_path_t path, ps_err_t *err);

#endif
