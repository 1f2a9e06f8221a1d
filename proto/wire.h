/*
 * wire.h - what the remote codecs (remote.c: write, remote_read.c: read) share, private to proto/:
 * the schema tables that say where a protobuf message that protobuf-c refused is wrong, and the
 * snappy block format both ways (unpacking with its length check), and the unpack budget and
 * errors around protobuf-c.
 */
#ifndef PS_PROTO_WIRE_H
#define PS_PROTO_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "core/err.h"
#include "core/mem.h"

enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_I32 = 5 };

typedef struct mdesc mdesc_t;
typedef struct fdesc {
    uint32_t num;
    uint8_t wt;
    bool rep;      /* repeated: the path names the element index */
    bool packable; /* a repeated varint: wire type 0, or 2 (packed) */
    const char *name;
    const mdesc_t *sub;
} fdesc_t;
struct mdesc {
    const fdesc_t *f;
    size_t nf; /* at most 8 */
};

#define MD(arr) {arr, sizeof(arr) / sizeof(arr[0])}

/** Walks the message p..end against md; on the first problem writes "path: what" into err and
 *  returns PS_EINVAL. path is the location of the message ("" at the top); base + the offset from
 *  origin is the error position. */
int ps_wire_scan(const mdesc_t *md, const uint8_t *p, const uint8_t *end, const char *path, size_t base,
                 const uint8_t *origin, ps_err_t *err);

/**
 * Unpacks a snappy block-format body (never the framed format) into *out (from arena, *outlen
 * bytes). The announced length is checked against max before anything is allocated: PS_ETOOBIG
 * "snappy: the body announces N uncompressed bytes (the limit is M)"; garbage, truncation and
 * the framed format are PS_EINVAL "snappy: ...". what names the use ("remote write") in messages.
 */
int ps_wire_unsnappy(const void *body, size_t n, size_t max, const char *what, ps_arena_t *arena, char **out,
                     size_t *outlen, ps_err_t *err);

/** Appends raw (len bytes; NULL when 0) to out, snappy block-format compressed: 0, or
 *  PS_EINTERNAL "snappy: compression failed" (out unchanged). */
int ps_wire_snappy(const void *raw, size_t len, ps_buf_t *out, ps_err_t *err);

/** The allocation budget for unpacking ulen bytes with protobuf-c (pballoc.h): 48 bytes of
 *  structs a byte plus 1 MiB, at most SIZE_MAX / 2. */
size_t ps_wire_unpack_budget(size_t ulen);

/**
 * The error when protobuf-c refused the message u (ulen bytes) of schema md, named what
 * ("prometheus.WriteRequest"): over the budget PS_ETOOBIG "protobuf: what needs more than budget
 * bytes to unpack"; else where ps_wire_scan finds it wrong, "protobuf: malformed what
 * (uncompressed): path: ..."; else PS_EINVAL "protobuf: malformed what (protobuf-c cannot unpack it)".
 */
int ps_wire_unpack_error(const mdesc_t *md, const uint8_t *u, size_t ulen, bool over, size_t budget, const char *what,
                         ps_err_t *err);

#endif
