/*
 * floats.h - what the float series files (floats*.c) share and nothing else sees: the writer's
 * state of a series, time helpers, chunk bounds, packed records, and the open chunk's records.
 */
#ifndef PS_STORAGE_FLOATS_H
#define PS_STORAGE_FLOATS_H

#include <string.h>

#include "float_dense.h"
#include "float_log.h"
#include "internal.h"
#include "xorchunk.h"

/* t (ms) representable as a ns ts key: |t| * 1e6 fits int64 */
#define T_MS_MAX (INT64_MAX / 1000000)

typedef struct ps_float_state {
    uint64_t sid;
    ps_buf_t chunk;      /* PS_FLOAT_CHUNK_ENC_XOR, then the open chunk (app.start == 1) */
    ps_xor_app_t app;
    int64_t head_min_t;  /* first sample of the head, if app.n > 0 */
    int64_t last_t;      /* the series' newest sample, if has_last */
    uint64_t last_v;
    bool has_last, dirty;
    size_t prefix_len;   /* p: the chunk's bytes [2, p) are in fprefix (0: none, fhead holds it whole) */
    uint64_t prefix_txn; /* the transaction that wrote them: fprefix key (prefix_txn, sid) */
    size_t head_size;    /* the size of the padded fhead record the writer wrote last (0: none) */
    bool broken;         /* the stored head could not be continued: the series takes no appends */
    /* the float log: stored, an fhead record of this series is committed (or written in this
     * transaction); rewrite, this transaction writes it anyway (a cut); else the samples appended
     * in this transaction go to the log, listed from log_first (wc->flog_pend, by next) */
    bool stored, rewrite;
    uint32_t log_first, log_last;
    /* the plain chunks at the series' end in fchunks, as pack_before counts them, if run_known */
    bool run_known;
    uint32_t run_n;
    size_t run_bytes;
    int64_t run_oldest, run_max_t;
} ps_float_state_t;

static inline int64_t t_key(int64_t t_ms) { return t_ms * 1000000; }

static inline int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ns bounds [start, end] -> ms bounds of the samples whose t * 1e6 falls inside */
static inline void ns_to_ms(int64_t start, int64_t end, int64_t *mint, int64_t *maxt)
{
    *mint = -floor_div(-(start == INT64_MIN ? INT64_MIN + 1 : start), 1000000);
    *maxt = floor_div(end, 1000000);
}

static inline uint64_t float_bits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static inline double bits_float(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

/* A reader of a packed record (ps_float_unpack_init, then ps_float_unpack_next until 0). */
typedef struct ps_float_unpack {
    ps_dec_t d;
    int64_t base;
    uint32_t i;
} ps_float_unpack_t;

/* PS_ECORRUPT "series N: damaged float <what>: <why>" in err */
int ps_float_damaged(ps_err_t *err, uint64_t sid, const char *what, const ps_err_t *why);
/* First and last sample of a XOR chunk, validating all of it. */
int ps_float_xor_bounds(const uint8_t *b, size_t n, int64_t *min_t, int64_t *max_t, ps_float_sample_t *last,
                        ps_err_t *why);
void ps_float_unpack_init(ps_float_unpack_t *u, const uint8_t *b, size_t n);
/* 1: *e is the next entry (its bounds as the entry says; its chunk not yet read), 0: the end,
 * PS_ECORRUPT: what and where in why */
int ps_float_unpack_next(ps_float_unpack_t *u, ps_float_pack_entry_t *e, ps_err_t *why);
/* First and last sample of a stored value (a XOR or dense chunk, packed chunks), validating all of it. */
int ps_float_chunk_bounds(const void *p, size_t n, int64_t *min_t, int64_t *max_t, ps_float_sample_t *last,
                          ps_err_t *why);
/* bytes of v as a uvarint */
size_t ps_uvarint_len(uint64_t v);
/* The bytes of a packed entry whose chunk [min_t, max_t] has len bytes, dmin after its
 * predecessor (0: the first). */
size_t ps_float_pack_entry_bytes(uint64_t dmin, int64_t min_t, int64_t max_t, size_t len);
/* Appends to out the dense chunk (tbase min_t, for a packed entry) of the closed chunk c[0..n)
 * (a fchunks value of encoding 02 or 06) if its samples span [min_t, max_t] and dense_verified;
 * else false: the chunk stays as it is. */
bool ps_float_closed_dense(const uint8_t *c, size_t n, int64_t min_t, int64_t max_t, ps_buf_t *out);
/* The fchunks value of the closed chunk x[0..n) (02, then a XOR chunk) into out: 06 and its dense
 * chunk (tbase 0) when that is shorter and dense_verified, else x as it is. */
void ps_float_closed_value(const uint8_t *x, size_t n, ps_buf_t *out);
/* the fprefix key (txn, sid) */
void ps_float_prefix_key(uint8_t k[16], uint64_t txn, uint64_t sid);
/* ps_float_head_read() of the fhead value v of series sid */
int ps_float_head_value(ps_store_t *s, ps_txn_t *txn, uint64_t sid, const MDB_val *v, ps_buf_t *out, size_t *plen,
                        uint64_t *ptxn, int64_t *min_t, int64_t *max_t, ps_err_t *err);
/* The open chunk of series sid (see head_assemble), validated, with its bounds if min_t is not
 * NULL. PS_ENOTFOUND if there is none; PS_ECORRUPT: "series N: damaged float head: ..." in err. */
int ps_float_head_read(ps_store_t *s, ps_txn_t *txn, uint64_t sid, ps_buf_t *out, size_t *plen, uint64_t *ptxn,
                       int64_t *min_t, int64_t *max_t, ps_err_t *err);
/* ---- the float sample log (floats.c, float_log.h) ---- */
typedef struct ps_flog_index ps_flog_index_t;
/* The index of txn's float log (built once, cached on txn until it ends or ps_txn_aux_drop). */
int ps_flog_index(ps_txn_t *txn, ps_flog_index_t **out, ps_err_t *err);
size_t ps_flog_index_count(const ps_flog_index_t *x);
const ps_flog_ent_t *ps_flog_index_at(const ps_flog_index_t *x, size_t i);
/* The logged samples of sid: e[0..n) (t increasing); PS_ECORRUPT "series N: damaged float log
 * record K: ..." when a damaged record may hold some. */
int ps_flog_index_find(const ps_flog_index_t *x, uint64_t sid, const ps_flog_ent_t **e, size_t *n, ps_err_t *err);
/* Whether the record of transaction key is damaged; how many are. */
bool ps_flog_index_damaged(const ps_flog_index_t *x, uint64_t key);
size_t ps_flog_index_ndamaged(const ps_flog_index_t *x);
/* Deletes the fprefix record (ptxn, sid) (there may be none: a damaged head). */
int ps_float_prefix_del(ps_store_t *s, ps_txn_t *txn, uint64_t ptxn, uint64_t sid, ps_err_t *err);
/* f (may be NULL): the writer's state of the series, whose run counts spare the walk over the
 * series' chunks until they are due to be packed. */
int ps_float_pack_before(ps_store_writer_t *w, ps_txn_t *txn, ps_float_state_t *f, uint64_t sid, int64_t min_t, int64_t max_t,
                         size_t len, ps_err_t *err);

#endif
