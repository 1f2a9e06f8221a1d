/*
 * gzip.c - gzip both ways and the process-wide budget of bytes being decompressed at once
 * (gzip.h), which gunzip here and snappy (remote.c) share. Gunzip inflates each member with
 * libdeflate (whole-buffer, about 3x zlib's speed) into the growing output; anything it does not
 * take as it is (a bad or truncated stream, trailing bytes, a member with a header CRC, which
 * libdeflate skips unchecked) is inflated again from the start by zlib's streaming inflate, whose
 * answer (success or the precise error) is the one given: the two agree on every stream both
 * accept, and zlib words every error.
 */
#include "gzip.h"

#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <string.h>

#include <libdeflate.h>
#include <zlib.h>

/* ---- the budget ---------------------------------------------------------------------------- */

/* The process-wide budget of bytes being decompressed at once (ps_inflate_budget_set). */
static _Atomic uint64_t inflate_budget, inflate_reserved, inflate_refused;

void ps_inflate_budget_set(uint64_t bytes)
{
    atomic_store(&inflate_budget, bytes);
}

uint64_t ps_inflate_budget_refused(void)
{
    return atomic_load(&inflate_refused);
}

uint64_t ps_inflate_budget_reserved(void)
{
    return atomic_load(&inflate_reserved);
}

int ps_inflate_reserve(uint64_t n, uint64_t held, ps_err_t *err)
{
    uint64_t budget = atomic_load(&inflate_budget);
    uint64_t had = atomic_fetch_add(&inflate_reserved, n);
    if (budget == 0 || had + n <= budget || had <= held) /* one alone always may: its own limit bounds it */
        return 0;
    atomic_fetch_sub(&inflate_reserved, n);
    atomic_fetch_add(&inflate_refused, 1);
    return ps_err_set(err, PS_EUNAVAIL,
                      "too much is being decompressed at once (%llu of %llu bytes, %s): retry later",
                      (unsigned long long)had, (unsigned long long)budget, ps_setting_name(PS_SETTING_INFLATE_BUDGET));
}

void ps_inflate_release(uint64_t n)
{
    atomic_fetch_sub(&inflate_reserved, n);
}

/* ---- gzip ---------------------------------------------------------------------------------- */

int ps_is_gzip(const void *p, size_t n)
{
    const uint8_t *b = p;
    return n >= 2 && b[0] == 0x1f && b[1] == 0x8b;
}

/* First output buffer size: the last member's ISIZE trailer (the uncompressed size mod 2^32) when
 * it is plausible for a profile (pprof compresses 2-5:1), else 4x the input; never more than
 * max_out + 1. An implausible ISIZE (a bomb, or a lie) gets no preallocation: the buffer grows
 * geometrically as output actually arrives. */
static size_t gunzip_first_cap(const uint8_t *in, size_t n, size_t max_out)
{
    size_t cap = n < SIZE_MAX / 4 ? n * 4 : SIZE_MAX;
    if (n >= 18) {
        const uint8_t *t = in + n - 4;
        uint32_t isize = (uint32_t)t[0] | (uint32_t)t[1] << 8 | (uint32_t)t[2] << 16 | (uint32_t)t[3] << 24;
        /* ISIZE is the last member's size: one smaller than the input (less its 18-byte frame and
         * 5 bytes per 64 KiB stored block) means more members came before it, e.g. a profile with
         * a small member appended to stamp its time: then the 4x guess, not the last member */
        if (isize > 0 && (uint64_t)isize <= (uint64_t)n * 16 + 65536 && (uint64_t)isize + 18 + n / 8192 >= n)
            cap = (size_t)isize + 1; /* +1: the end of the stream is seen without a regrow */
    }
    if (cap < 256)
        cap = 256;
    if (cap > max_out + 1)
        cap = max_out + 1;
    return cap;
}

/* The next output capacity from cap: double, at most max_out + 1 (one byte more than allowed
 * detects overflow). */
static size_t gunzip_grow(size_t cap, size_t max_out)
{
    return cap > (max_out + 1) / 2 ? max_out + 1 : cap * 2;
}

#define GZIP_FHCRC 0x02 /* FLG: a CRC16 of the header follows it */

/* ps_gunzip with libdeflate, member by member into one buffer that grows (and is reserved in the
 * budget) as ps_gunzip_zlib's does: 0 with the output, PS_EUNAVAIL when the budget refuses to
 * grow it (where zlib's would grow it too), or 1 when zlib must decide (the stream is not a plain
 * sequence of good members within max_out: its error is zlib's to word). in starts with the gzip
 * magic. */
/* The inflated bytes buf[0, len) of a buffer of cap bytes become the arena's, in *out. */
static void hand_over(ps_arena_t *arena, uint8_t *buf, size_t cap, size_t len, const uint8_t **out, size_t *outn)
{
    if (cap - len > 4096 && cap - len > len / 8) /* do not keep much more than the output */
        buf = ps_arena_big_realloc(buf, len > 0 ? len : 1);
    ps_arena_big_adopt(arena, buf, len);
    *out = buf;
    *outn = len;
}

/* A libdeflate decompressor kept per thread (its allocation and the memset of its ~11 KB were ~2%
 * of a Go CPU profile's decode); the key's destructor frees it when the thread ends. */
static pthread_once_t dd_once = PTHREAD_ONCE_INIT;
static pthread_key_t dd_key;
static bool dd_key_ok;

static void dd_free(void *d) { libdeflate_free_decompressor(d); }

static void dd_init(void)
{
    dd_key_ok = pthread_key_create(&dd_key, dd_free) == 0;
}

/* The thread's decompressor (*keep: it stays the thread's), or a new one to free after use. */
static struct libdeflate_decompressor *thread_decompressor(bool *keep)
{
    pthread_once(&dd_once, dd_init);
    struct libdeflate_decompressor *d = dd_key_ok ? pthread_getspecific(dd_key) : NULL;
    *keep = d != NULL;
    if (d != NULL)
        return d;
    d = libdeflate_alloc_decompressor();
    *keep = d != NULL && dd_key_ok && pthread_setspecific(dd_key, d) == 0;
    return d;
}

/* The output buffer a thread keeps between ps_gunzip_temp calls (an ps_arena_big_* block of
 * tb_size bytes; the key's destructor frees it when the thread ends): the next profile inflates
 * into memory still in this core's cache, not into a new block that the thread freeing the last
 * one's arena touched last. */
#define TEMP_KEEP ((size_t)256 << 10) /* bytes kept after a call (a Go CPU profile: ~25 KB); a bigger buffer is freed */
static pthread_once_t tb_once = PTHREAD_ONCE_INIT;
static pthread_key_t tb_key;
static bool tb_key_ok;
static _Thread_local uint8_t *tb_buf;
static _Thread_local size_t tb_size;

static void tb_free(void *p) { ps_arena_big_free(p); }

static void tb_init(void)
{
    tb_key_ok = pthread_key_create(&tb_key, tb_free) == 0;
}

/* The thread's buffer of at least n bytes (its contents not kept), or NULL without a key. */
static uint8_t *temp_buffer(size_t n)
{
    pthread_once(&tb_once, tb_init);
    if (!tb_key_ok)
        return NULL;
    if (tb_buf == NULL || tb_size < n) {
        ps_arena_big_free(tb_buf);
        tb_buf = ps_arena_big_alloc(n);
        tb_size = n;
        if (pthread_setspecific(tb_key, tb_buf) != 0) {
            ps_arena_big_free(tb_buf);
            tb_buf = NULL;
            tb_size = 0;
            return NULL;
        }
    }
    return tb_buf;
}

/* The thread's buffer grown to n bytes (n > tb_size; contents kept). */
static uint8_t *temp_grow(size_t n)
{
    tb_buf = ps_arena_big_realloc(tb_buf, n);
    tb_size = n;
    pthread_setspecific(tb_key, tb_buf); /* the key holds a value already: no allocation, no failure */
    return tb_buf;
}

void ps_gunzip_temp_done(void)
{
    if (tb_buf != NULL && tb_size > TEMP_KEEP) {
        pthread_setspecific(tb_key, NULL);
        ps_arena_big_free(tb_buf);
        tb_buf = NULL;
        tb_size = 0;
    }
}

/* temp: into the thread's buffer (its cap bytes are the budget's, whatever the buffer's size), else
 * into a block the arena adopts. */
static int gunzip_deflate(const uint8_t *in, size_t n, size_t max_out, ps_arena_t *arena, bool temp,
                          const uint8_t **out, size_t *outn, ps_err_t *err)
{
    bool keep;
    struct libdeflate_decompressor *d = thread_decompressor(&keep);
    if (d == NULL)
        return 1;
    size_t cap = gunzip_first_cap(in, n, max_out), len = 0, pos = 0, reserved = 0;
    uint8_t *buf = NULL;
    int rc = ps_inflate_reserve(cap, 0, err);
    if (rc != 0)
        goto Exit;
    reserved = cap;
    if (temp && (buf = temp_buffer(cap)) == NULL)
        temp = false;
    if (!temp)
        buf = ps_arena_big_alloc(cap);
    while (pos < n) {
        if (!ps_is_gzip(in + pos, n - pos) || n - pos < 4 || (in[pos + 3] & GZIP_FHCRC) != 0) {
            rc = 1;
            goto Exit;
        }
        size_t used = 0, got = 0;
        enum libdeflate_result r =
            libdeflate_gzip_decompress_ex(d, in + pos, n - pos, buf + len, cap - len, &used, &got);
        if (r == LIBDEFLATE_INSUFFICIENT_SPACE) {
            if (cap == max_out + 1) { /* more than max_out bytes out: zlib words it (or what it meets first) */
                rc = 1;
                goto Exit;
            }
            size_t ncap = gunzip_grow(cap, max_out);
            if ((rc = ps_inflate_reserve(ncap - cap, reserved, err)) != 0)
                goto Exit;
            reserved += ncap - cap;
            if (!temp)
                buf = ps_arena_big_realloc(buf, ncap);
            else if (ncap > tb_size)
                buf = temp_grow(ncap);
            cap = ncap;
            continue; /* this member again, with more room */
        }
        if (r != LIBDEFLATE_SUCCESS || used == 0) {
            rc = 1;
            goto Exit;
        }
        len += got;
        pos += used;
        if (len > max_out) {
            rc = 1;
            goto Exit;
        }
    }
    if (temp) {
        *out = buf;
        *outn = len;
    } else {
        hand_over(arena, buf, cap, len, out, outn);
    }
    buf = NULL;
Exit:
    if (!temp)
        ps_arena_big_free(buf);
    else if (rc != 0) /* a refused member's room is given back before its budget, as the arena's block is */
        ps_gunzip_temp_done();
    if (reserved > 0)
        ps_inflate_release(reserved);
    if (!keep)
        libdeflate_free_decompressor(d);
    return rc;
}

static int gunzip(const void *in, size_t n, size_t max_out, ps_arena_t *arena, bool temp, const uint8_t **out,
                  size_t *outn, ps_err_t *err)
{
    *out = NULL;
    *outn = 0;
    if (max_out > SIZE_MAX / 2)
        max_out = SIZE_MAX / 2;
    if (ps_is_gzip(in, n)) {
        int rc = gunzip_deflate(in, n, max_out, arena, temp, out, outn, err);
        if (rc != 1)
            return rc;
    }
    return ps_gunzip_zlib(in, n, max_out, arena, out, outn, err);
}

int ps_gunzip(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
              ps_err_t *err)
{
    return gunzip(in, n, max_out, arena, false, out, outn, err);
}

int ps_gunzip_temp(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
                   ps_err_t *err)
{
    return gunzip(in, n, max_out, arena, true, out, outn, err);
}

int ps_gunzip_zlib(const void *in, size_t n, size_t max_out, ps_arena_t *arena, const uint8_t **out, size_t *outn,
                   ps_err_t *err)
{
    const uint8_t *src = in;
    z_stream zs;
    bool inited = false;
    uint8_t *buf = NULL;
    size_t cap = 0, len = 0, in_left = n, reserved = 0;
    int rc = 0;

    *out = NULL;
    *outn = 0;
    if (max_out > SIZE_MAX / 2)
        max_out = SIZE_MAX / 2;
    if (!ps_is_gzip(in, n)) {
        rc = ps_err_set(err, PS_EINVAL, "gzip: %s", n == 0 ? "empty input" : "not a gzip stream (bad magic)");
        goto Exit;
    }
    memset(&zs, 0, sizeof(zs));
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK) {
        rc = ps_err_set(err, PS_ENOMEM, "gzip: cannot initialise zlib");
        goto Exit;
    }
    inited = true;
    cap = gunzip_first_cap(src, n, max_out);
    /* the output grows in place (ps_arena_big_realloc), reserved in the process-wide budget as it
     * grows, and joins the arena when done: a refused bomb is freed at once */
    if ((rc = ps_inflate_reserve(cap, 0, err)) != 0)
        goto Exit;
    reserved = cap;
    buf = ps_arena_big_alloc(cap);
    zs.next_in = (Bytef *)src;
    for (;;) {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        if (len == cap) {
            size_t ncap = gunzip_grow(cap, max_out);
            if ((rc = ps_inflate_reserve(ncap - cap, reserved, err)) != 0)
                goto Exit;
            reserved += ncap - cap;
            buf = ps_arena_big_realloc(buf, ncap);
            cap = ncap;
        }
        size_t room = cap - len;
        zs.next_out = buf + len;
        zs.avail_out = room > UINT_MAX ? UINT_MAX : (uInt)room;
        uInt before = zs.avail_out;
        /* Z_FINISH once all input is there: zlib then keeps no 32 KiB window copy of the output */
        int zrc = inflate(&zs, in_left > 0 ? Z_NO_FLUSH : Z_FINISH);
        len += before - zs.avail_out;
        if (len > max_out) {
            rc = ps_err_set(err, PS_ETOOBIG, "decompressed body exceeds %zu bytes", max_out);
            goto Exit;
        }
        if (zrc == Z_STREAM_END) {
            size_t rest = zs.avail_in + in_left; /* contiguous from zs.next_in */
            if (rest == 0)
                break;
            if (!ps_is_gzip(zs.next_in, rest)) {
                rc = ps_err_set(err, PS_EINVAL, "gzip: %zu bytes of trailing garbage after the last member", rest);
                goto Exit;
            }
            inflateReset(&zs); /* another member follows (concatenated gzip) */
            continue;
        }
        if (zrc == Z_OK)
            continue;
        if (zrc == Z_BUF_ERROR && (zs.avail_out == 0 || (zs.avail_in == 0 && in_left > 0)))
            continue; /* needs more room, or the next piece of a > 4 GiB input */
        if (zrc == Z_BUF_ERROR) {
            rc = ps_err_set(err, PS_EINVAL, "gzip: unexpected end of data (truncated stream after %zu bytes out)", len);
            goto Exit;
        }
        if (zrc == Z_MEM_ERROR) {
            rc = ps_err_set(err, PS_ENOMEM, "gzip: out of memory");
            goto Exit;
        }
        rc = ps_err_set(err, PS_EINVAL, "gzip: %s", zs.msg != NULL ? zs.msg : "corrupt stream");
        goto Exit;
    }
    hand_over(arena, buf, cap, len, out, outn);
    buf = NULL;
Exit:
    ps_arena_big_free(buf);
    if (reserved > 0)
        ps_inflate_release(reserved);
    if (inited)
        inflateEnd(&zs);
    return rc;
}

int ps_gzip(const void *in, size_t n, int level, ps_buf_t *out, ps_err_t *err)
{
    const uint8_t *src = in;
    z_stream zs;
    int rc = 0;
    bool inited = false;

    memset(&zs, 0, sizeof(zs));
    if (deflateInit2(&zs, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK) {
        rc = ps_err_set(err, PS_ENOMEM, "gzip: cannot initialise zlib");
        goto Exit;
    }
    inited = true;
    zs.next_in = (Bytef *)src;
    size_t in_left = n;
    int zrc;
    do {
        if (zs.avail_in == 0 && in_left > 0) {
            zs.avail_in = in_left > UINT_MAX ? UINT_MAX : (uInt)in_left;
            in_left -= zs.avail_in;
        }
        size_t want = deflateBound(&zs, zs.avail_in) + 64;
        if (want > UINT_MAX)
            want = UINT_MAX;
        zs.next_out = ps_buf_reserve(out, want);
        zs.avail_out = (uInt)want;
        zrc = deflate(&zs, in_left > 0 ? Z_NO_FLUSH : Z_FINISH);
        out->len += want - zs.avail_out;
        if (zrc == Z_STREAM_ERROR) {
            rc = ps_err_set(err, PS_EINTERNAL, "gzip: deflate failed");
            goto Exit;
        }
    } while (zrc != Z_STREAM_END);
Exit:
    if (inited)
        deflateEnd(&zs);
    return rc;
}
