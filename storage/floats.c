/*
 * floats.c - float series (remote_write, synthetic scrape series): the records their code paths
 * share — chunk bounds, packed records, dense chunks, the open chunk's fhead/fprefix records. The
 * paths are apart: floats_append.c (appending, the writer's head cache, cutting, packing),
 * floats_compact.c (closing idle heads, retention), floats_read.c (samples, chunks, metadata).
 * The byte layouts are in docs/FORMAT.md "Float series".
 *
 *
 * A float series keeps its samples in Prometheus' XOR chunks (xorchunk.h), each stored with the
 * encoding byte PS_FLOAT_CHUNK_ENC_XOR in front:
 *   fhead    sid -> the open chunk, rewritten (once per write transaction) as samples arrive:
 *            whole while it is short, else its tail, whose stable start is in
 *   fprefix  (txn id, sid) -> bytes [2, p) of the open chunk, written anew (and the old record
 *            deleted) only in one flush of PS_FLOAT_HEAD_TURNS (by sid / 64) or once the tail
 *            outgrows PS_FLOAT_HEAD_TAIL_MAX; keyed by the writing transaction first, so that new
 *            prefixes are appended to full pages and old ones die page by page. LMDB
 *            copies every page a transaction writes, and reuses the pages it frees only two
 *            transactions later: rewriting whole open chunks, a transaction that appends to most
 *            series copies nearly all of fhead and the file holds about three copies of it;
 *            rewriting tails, it copies the tails and a sixteenth of the prefixes;
 *   fchunks  (sid, max_t * 1e6 as a ts key) -> a closed chunk: from schema 4 a dense chunk
 *            (float_dense.h, PS_FLOAT_CHUNK_ENC_DENSE) when that is shorter and gives back the same samples
 *            and XOR bytes (ps_float_closed_value), else the XOR chunk. The head is cut into fchunks
 *            before a sample that would make it hold more than PS_XOR_SAMPLES_PER_CHUNK samples
 *            or span compact_window_ns or more; the compactor closes heads idle for a window.
 *            Before a chunk is closed, the plain chunks at the series' end are packed into one
 *            record (PS_FLOAT_CHUNK_ENC_DPACKED, dense chunks with each chunk's bounds; schema 3
 *            wrote PS_FLOAT_CHUNK_ENC_PACKED of XOR chunks) when the new one would not fit beside
 *            them in a page or make them span a day (ps_float_pack_before). Reads decode dense chunks;
 *            ps_reader_xor_chunks transcodes them to the XOR chunk they were made from.
 * The series' newest sample (what out-of-order and duplicate checks compare with) is the head's
 * last one, or the last one of its newest closed chunk: nothing else is stored per series.
 *
 * The writer caches, per series written lately, the head's bytes and the appender positioned at
 * their end (ps_float_state_t), so an append does not decode the chunk again. The cache only mirrors
 * the write transaction: it is dropped with the other caches (ps_sym_caches_clear), whenever a
 * transaction fails and after compaction or retention changed heads.
 */
#include <stdlib.h>

#include "floats.h"
#include "float_log.h"

int ps_float_damaged(ps_err_t *err, uint64_t sid, const char *what, const ps_err_t *why)
{
    return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged float %s: %s", (unsigned long long)sid, what,
                      why ? why->msg : "no encoding byte");
}

/* First and last sample of a XOR chunk, validating all of it. */
int ps_float_xor_bounds(const uint8_t *b, size_t n, int64_t *min_t, int64_t *max_t, ps_float_sample_t *last,
                        ps_err_t *why)
{
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, b, n);
    uint32_t k = 0;
    while (ps_xor_iter_next(&it)) {
        if (k++ == 0)
            *min_t = it.t;
        *max_t = it.t;
        if (last) {
            last->t = it.t;
            last->v = it.v;
        }
    }
    int ret = ps_xor_iter_err(&it, why);
    if (ret == 0 && k == 0)
        ret = ps_err_set(why, PS_ECORRUPT, "xorchunk: no samples");
    return ret;
}

/* ---- packed records: several closed chunks of a series in one fchunks value ----
 *
 *   PS_FLOAT_CHUNK_ENC_PACKED | t0 <varint> | entry... (to the end of the value)
 *   entry: dmin <uvarint> | span <uvarint> | len <uvarint> | len bytes: a XOR chunk
 *
 * An entry's chunk holds samples from min_t to max_t = min_t + span; min_t is t0 + dmin for the
 * first entry (dmin = 0) and the previous entry's max_t + dmin (dmin >= 1) for the others. A
 * reader finds the chunks of a range from these bounds and decodes only those. */


void ps_float_pack_encode(uint8_t enc, const ps_float_pack_entry_t *e, size_t n, ps_buf_t *out)
{
    ps_buf_putc(out, enc);
    ps_put_varint(out, e[0].min_t);
    int64_t prev = e[0].min_t;
    for (size_t i = 0; i < n; i++) {
        ps_put_uvarint(out, (uint64_t)(e[i].min_t - prev));
        ps_put_uvarint(out, (uint64_t)(e[i].max_t - e[i].min_t));
        ps_put_uvarint(out, e[i].len);
        ps_buf_append(out, e[i].chunk, e[i].len);
        prev = e[i].max_t;
    }
}


void ps_float_unpack_init(ps_float_unpack_t *u, const uint8_t *b, size_t n)
{
    ps_dec_init(&u->d, b, n);
    u->base = ps_dec_varint(&u->d);
    u->i = 0;
}

/* 1: *e is the next entry (its bounds as the entry says; its chunk not yet read), 0: the end,
 * PS_ECORRUPT: what and where in why */
int ps_float_unpack_next(ps_float_unpack_t *u, ps_float_pack_entry_t *e, ps_err_t *why)
{
    if (u->d.err || u->base > T_MS_MAX || u->base < -T_MS_MAX)
        return ps_err_set(why, PS_ECORRUPT, "packed chunks: bad t0");
    if (ps_dec_left(&u->d) == 0)
        return u->i > 0 ? 0 : ps_err_set(why, PS_ECORRUPT, "packed chunks: none");
    uint64_t dmin = ps_dec_uvarint(&u->d), span = ps_dec_uvarint(&u->d), len = ps_dec_uvarint(&u->d);
    if (u->d.err || len > ps_dec_left(&u->d))
        return ps_err_set(why, PS_ECORRUPT, "packed chunks: entry %u truncated", u->i);
    if ((u->i == 0) != (dmin == 0) || dmin > (uint64_t)T_MS_MAX || span > (uint64_t)T_MS_MAX ||
        u->base + (int64_t)dmin > T_MS_MAX - (int64_t)span)
        return ps_err_set(why, PS_ECORRUPT, "packed chunks: entry %u: bad bounds", u->i);
    e->min_t = u->base + (int64_t)dmin;
    e->max_t = e->min_t + (int64_t)span;
    e->len = len;
    e->chunk = ps_dec_bytes(&u->d, len);
    u->base = e->max_t;
    u->i++;
    return 1;
}

/* First and last sample of a dense chunk written with tbase, validating all of it. */
static int dense_bounds(const uint8_t *b, size_t n, int64_t tbase, int64_t *min_t, int64_t *max_t,
                        ps_float_sample_t *last, ps_err_t *why)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    if (ps_float_dense_decode(b, n, tbase, &t, &v, &k, why) != 0)
        return PS_ECORRUPT;
    *min_t = t[0];
    *max_t = t[k - 1];
    if (last) {
        last->t = t[k - 1];
        last->v = bits_float(v[k - 1]);
    }
    free(t);
    free(v);
    return 0;
}

/* Validates the chunk of entry e (dense: of a PS_FLOAT_CHUNK_ENC_DPACKED value) against its bounds. */
static int pentry_check(const ps_float_pack_entry_t *e, bool dense, uint32_t i, ps_float_sample_t *last, ps_err_t *why)
{
    int64_t min_t = 0, max_t = 0;
    if (dense ? dense_bounds(e->chunk, e->len, e->min_t, &min_t, &max_t, last, why) != 0
              : ps_float_xor_bounds(e->chunk, e->len, &min_t, &max_t, last, why) != 0)
        return PS_ECORRUPT;
    if (min_t != e->min_t || max_t != e->max_t)
        return ps_err_set(why, PS_ECORRUPT, "packed chunks: entry %u holds %lld..%lld, not %lld..%lld", i - 1,
                          (long long)min_t, (long long)max_t, (long long)e->min_t, (long long)e->max_t);
    return 0;
}

/* First and last sample of a stored value (a XOR or dense chunk, packed chunks), validating all of it. */
int ps_float_chunk_bounds(const void *p, size_t n, int64_t *min_t, int64_t *max_t, ps_float_sample_t *last,
                          ps_err_t *why)
{
    const uint8_t *b = p;
    if (n >= 1 && b[0] == PS_FLOAT_CHUNK_ENC_XOR)
        return ps_float_xor_bounds(b + 1, n - 1, min_t, max_t, last, why);
    if (n >= 1 && b[0] == PS_FLOAT_CHUNK_ENC_DENSE)
        return dense_bounds(b + 1, n - 1, 0, min_t, max_t, last, why);
    if (n < 1 || (b[0] != PS_FLOAT_CHUNK_ENC_PACKED && b[0] != PS_FLOAT_CHUNK_ENC_DPACKED))
        return ps_err_set(why, PS_ECORRUPT, "encoding byte %u, not %u, %u, %u or %u", n ? b[0] : 0u,
                          PS_FLOAT_CHUNK_ENC_XOR, PS_FLOAT_CHUNK_ENC_PACKED, PS_FLOAT_CHUNK_ENC_DENSE,
                          PS_FLOAT_CHUNK_ENC_DPACKED);
    bool dense = b[0] == PS_FLOAT_CHUNK_ENC_DPACKED;
    ps_float_unpack_t u;
    ps_float_pack_entry_t e;
    int r;
    ps_float_unpack_init(&u, b + 1, n - 1);
    while ((r = ps_float_unpack_next(&u, &e, why)) == 1) {
        if (u.i == 1)
            *min_t = e.min_t;
        *max_t = e.max_t;
        if (pentry_check(&e, dense, u.i, last, why) != 0)
            return PS_ECORRUPT;
    }
    return r;
}

size_t ps_uvarint_len(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

/* The bytes of a packed entry whose chunk [min_t, max_t] has len bytes, dmin after its
 * predecessor (0: the first). */
size_t ps_float_pack_entry_bytes(uint64_t dmin, int64_t min_t, int64_t max_t, size_t len)
{
    return ps_uvarint_len(dmin) + ps_uvarint_len((uint64_t)(max_t - min_t)) + ps_uvarint_len(len) + len;
}

/* ---- dense chunks (schema 4): closed chunks in fewer bytes, the same samples ---- */

/* The samples of the XOR chunk b[0..n), validated: *k of them in new arrays t, v (free() both). */
static int xor_samples(const uint8_t *b, size_t n, int64_t **t, uint64_t **v, uint32_t *k, ps_err_t *why)
{
    uint32_t cap = ps_xor_count(b, n);
    *t = ps_xmalloc(((size_t)cap + 1) * sizeof(**t));
    *v = ps_xmalloc(((size_t)cap + 1) * sizeof(**v));
    *k = 0;
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, b, n);
    while (*k < cap && ps_xor_iter_next(&it)) {
        (*t)[*k] = it.t;
        (*v)[*k] = float_bits(it.v);
        (*k)++;
    }
    int ret = ps_xor_iter_err(&it, why);
    if (ret == 0 && (*k == 0 || *k != cap))
        ret = ps_err_set(why, PS_ECORRUPT, "xorchunk: %u samples, not %u", *k, cap);
    if (ret) {
        free(*t);
        free(*v);
    }
    return ret;
}

/* Appends the dense chunk (written with tbase) of the k samples t, v to out if it decodes to
 * the same samples and, if x is not NULL, transcodes to the XOR chunk x[0..xn) byte for byte
 * (what a streamed remote read sends); else false, out as it was. */
static bool dense_verified(const int64_t *t, const uint64_t *v, uint32_t k, int64_t tbase, const uint8_t *x,
                           size_t xn, ps_buf_t *out)
{
    size_t at = out->len;
    ps_float_dense_encode(t, v, k, tbase, out);
    int64_t *t2;
    uint64_t *v2;
    uint32_t k2;
    ps_err_t why;
    bool ok = ps_float_dense_decode(out->data + at, out->len - at, tbase, &t2, &v2, &k2, &why) == 0;
    if (ok) {
        ok = k2 == k && memcmp(t2, t, k * sizeof(*t)) == 0 && memcmp(v2, v, k * sizeof(*v)) == 0;
        free(t2);
        free(v2);
    }
    if (ok && x != NULL) { /* what ps_float_dense_to_xor gives: the XOR chunk of the same samples */
        ps_buf_t b = PS_BUF_INIT;
        ps_xor_app_t a;
        ps_xor_app_init(&a, &b);
        for (uint32_t i = 0; i < k && ok; i++)
            ok = ps_xor_app_append(&a, t[i], bits_float(v[i]), &why) == 0;
        ok = ok && b.len == xn && memcmp(b.data, x, xn) == 0;
        ps_buf_dispose(&b);
    }
    if (!ok)
        out->len = at;
    return ok;
}

/* The samples of the fchunks value c[0..n) of encoding 02 or 06, validated (see xor_samples). */
static int value_samples(const uint8_t *c, size_t n, int64_t **t, uint64_t **v, uint32_t *k, ps_err_t *why)
{
    if (n >= 1 && c[0] == PS_FLOAT_CHUNK_ENC_XOR)
        return xor_samples(c + 1, n - 1, t, v, k, why);
    if (n >= 1 && c[0] == PS_FLOAT_CHUNK_ENC_DENSE)
        return ps_float_dense_decode(c + 1, n - 1, 0, t, v, k, why);
    return ps_err_set(why, PS_ECORRUPT, "not a plain chunk");
}

/* Appends to out the dense chunk (tbase min_t, for a packed entry) of the closed chunk c[0..n)
 * (a fchunks value of encoding 02 or 06) if its samples span [min_t, max_t] and dense_verified;
 * else false: the chunk stays as it is. */
bool ps_float_closed_dense(const uint8_t *c, size_t n, int64_t min_t, int64_t max_t, ps_buf_t *out)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    ps_err_t why;
    if (value_samples(c, n, &t, &v, &k, &why) != 0)
        return false;
    bool ok = t[0] == min_t && t[k - 1] == max_t;
    if (ok && c[0] == PS_FLOAT_CHUNK_ENC_DENSE) {
        /* the same chunk but its t0 (ps_float_dense_encode of the same samples writes it so): no new
         * encoding, checked all the same */
        ps_dec_t d;
        ps_dec_init(&d, c + 1, n - 1);
        uint64_t cnt = ps_dec_uvarint(&d);
        (void)ps_dec_varint(&d);
        size_t at = out->len;
        ps_put_uvarint(out, cnt);
        ps_put_varint(out, 0); /* t[0] - min_t */
        ps_buf_append(out, d.p, ps_dec_left(&d));
        int64_t *t2;
        uint64_t *v2;
        uint32_t k2;
        ok = !d.err && ps_float_dense_decode(out->data + at, out->len - at, min_t, &t2, &v2, &k2, &why) == 0;
        if (ok) {
            ok = k2 == k && memcmp(t2, t, k * sizeof(*t)) == 0 && memcmp(v2, v, k * sizeof(*v)) == 0;
            free(t2);
            free(v2);
        }
        if (!ok)
            out->len = at;
    } else if (ok) {
        ok = dense_verified(t, v, k, min_t, c + 1, n - 1, out);
    }
    free(t);
    free(v);
    return ok;
}

/* The fchunks value of the closed chunk x[0..n) (02, then a XOR chunk) into out: 06 and its dense
 * chunk (tbase 0) when that is shorter and dense_verified, else x as it is. */
void ps_float_closed_value(const uint8_t *x, size_t n, ps_buf_t *out)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    ps_err_t why;
    ps_buf_reset(out);
    if (value_samples(x, n, &t, &v, &k, &why) == 0) {
        ps_buf_putc(out, PS_FLOAT_CHUNK_ENC_DENSE);
        bool ok = dense_verified(t, v, k, 0, x + 1, n - 1, out) && out->len < n;
        free(t);
        free(v);
        if (ok)
            return;
        ps_buf_reset(out);
    }
    ps_buf_append(out, x, n);
}

/* ---- the open chunk: fhead, whole (PS_FLOAT_CHUNK_ENC_XOR) or its tail (PS_FLOAT_HEAD_ENC_TAIL) after
 * the stable start in fprefix ----
 *
 *   fhead tail:            04 | p <uvarint> | txn <uvarint> | the chunk's 2 header bytes | bytes [p, n)
 *   fprefix (txn, sid):    05 | bytes [2, p) of the chunk
 *
 * The XOR appender only ever changes the chunk's header and its last byte, so bytes [2, n - 1) of
 * an open chunk of n bytes stay as they are until it is cut. */

void ps_float_head_encode_tail(const uint8_t *c, size_t n, size_t p, uint64_t txn, ps_buf_t *out)
{
    ps_buf_putc(out, PS_FLOAT_HEAD_ENC_TAIL);
    ps_put_uvarint(out, p);
    ps_put_uvarint(out, txn);
    ps_buf_append(out, c, 2);
    ps_buf_append(out, c + p, n - p);
}

void ps_float_head_encode_padded(const uint8_t *c, size_t n, size_t p, uint64_t txn, size_t *size, ps_buf_t *out)
{
    size_t from = p > 2 ? p : 2, len = 2 + n - from, at = out->len;
    ps_buf_putc(out, PS_FLOAT_HEAD_ENC_PADDED);
    ps_put_uvarint(out, p);
    ps_put_uvarint(out, txn);
    uint8_t lb[2] = {(uint8_t)(len >> 8), (uint8_t)len};
    ps_buf_append(out, lb, 2);
    ps_buf_append(out, c, 2);
    ps_buf_append(out, c + from, n - from);
    size_t need = out->len - at;
    if (need > *size)
        *size = (need + PS_FLOAT_HEAD_PAD_STEP - 1) / PS_FLOAT_HEAD_PAD_STEP * PS_FLOAT_HEAD_PAD_STEP;
    if (out->len - at < *size) {
        size_t pad = *size - (out->len - at);
        memset(ps_buf_reserve(out, pad), 0, pad);
        out->len += pad;
    }
}

void ps_float_prefix_encode(const uint8_t *c, size_t p, ps_buf_t *out)
{
    ps_buf_putc(out, PS_FLOAT_PREFIX_ENC);
    ps_buf_append(out, c + 2, p - 2);
}

void ps_float_prefix_key(uint8_t k[16], uint64_t txn, uint64_t sid)
{
    ps_enc_be64(k, txn);
    ps_enc_be64(k + 8, sid);
}

/* The open chunk of series sid from fhead value v: out = 02, then the chunk (from fhead alone or
 * with fprefix), *plen = p (0 if fhead holds it whole), *ptxn its prefix's transaction. An error:
 * what in why. */
static int head_assemble(ps_store_t *s, ps_txn_t *txn, uint64_t sid, const MDB_val *v, ps_buf_t *out, size_t *plen,
                         uint64_t *ptxn, ps_err_t *why)
{
    const uint8_t *b = v->mv_data;
    *plen = 0;
    *ptxn = 0;
    if (v->mv_size >= 1 && b[0] == PS_FLOAT_CHUNK_ENC_XOR) {
        ps_buf_append(out, b, v->mv_size);
        return 0;
    }
    if (v->mv_size < 1 || (b[0] != PS_FLOAT_HEAD_ENC_TAIL && b[0] != PS_FLOAT_HEAD_ENC_PADDED))
        return ps_err_set(why, PS_ECORRUPT, "encoding byte %u, not %u, %u or %u", v->mv_size ? b[0] : 0u,
                          PS_FLOAT_CHUNK_ENC_XOR, PS_FLOAT_HEAD_ENC_TAIL, PS_FLOAT_HEAD_ENC_PADDED);
    ps_dec_t d;
    ps_dec_init(&d, b + 1, v->mv_size - 1);
    uint64_t p = ps_dec_uvarint(&d), pt = ps_dec_uvarint(&d);
    size_t left = ps_dec_left(&d); /* the tail's bytes: to the end (04), or len of them (0a) */
    if (!d.err && b[0] == PS_FLOAT_HEAD_ENC_PADDED) {
        if (left < 2)
            return ps_err_set(why, PS_ECORRUPT, "padded: truncated length");
        const uint8_t *lb = ps_dec_bytes(&d, 2);
        size_t len = (size_t)lb[0] << 8 | lb[1];
        if (len < 2 || len > left - 2)
            return ps_err_set(why, PS_ECORRUPT, "padded: length %zu, but %zu bytes follow", len, left - 2);
        for (size_t i = len; i < left - 2; i++)
            if (d.p[i] != 0)
                return ps_err_set(why, PS_ECORRUPT, "padded: byte %zu of the padding is not zero", i - len);
        left = len;
        if (p == 0 && pt == 0) { /* not split: the whole chunk */
            ps_buf_putc(out, PS_FLOAT_CHUNK_ENC_XOR);
            ps_buf_append(out, d.p, len);
            return 0;
        }
    }
    if (d.err || p < 2 || left < 2)
        return ps_err_set(why, PS_ECORRUPT, "tail: bad prefix length or truncated header");
    const uint8_t *hdr = ps_dec_bytes(&d, 2);
    uint8_t kb[16];
    ps_float_prefix_key(kb, pt, sid);
    MDB_val pv;
    if (!ps_txn_get(txn, DB_FPREFIX, kb, 16, &pv, "reading float head prefix")) {
        if (txn->ret)
            return ps_txn_error(txn, why);
        return ps_err_set(why, PS_ECORRUPT, "tail after %llu bytes, but no prefix of transaction %llu",
                          (unsigned long long)p, (unsigned long long)pt);
    }
    const uint8_t *pb = pv.mv_data;
    if (pv.mv_size < 1 || pb[0] != PS_FLOAT_PREFIX_ENC || pv.mv_size - 1 != p - 2)
        return ps_err_set(why, PS_ECORRUPT, "tail after %llu bytes, but a prefix of encoding %u holding %zu, not %llu",
                          (unsigned long long)p, pv.mv_size ? pb[0] : 0u, pv.mv_size ? pv.mv_size - 1 : 0,
                          (unsigned long long)(p - 2));
    ps_buf_putc(out, PS_FLOAT_CHUNK_ENC_XOR);
    ps_buf_append(out, hdr, 2);
    ps_buf_append(out, pb + 1, pv.mv_size - 1);
    ps_buf_append(out, d.p, left - 2);
    *plen = p;
    *ptxn = pt;
    return 0;
}

/* ---- the float sample log (flog, schema 12) ----
 *
 * A read transaction builds the log's index once (ps_flog_index, cached on the ps_txn_t): every
 * logged sample sorted by (sid, t), and the sid ranges damaged records may hold. */

typedef struct flog_bad {
    uint64_t from, to, key; /* the sids [from, to] of the damaged record of transaction key */
    ps_err_t why;
} flog_bad_t;

struct ps_flog_index {
    ps_flog_ent_t *e; /* sorted by sid, then t */
    size_t n;
    flog_bad_t *bad;
    size_t nbad;
};

static void flog_index_free(void *p)
{
    ps_flog_index_t *x = p;
    free(x->e);
    free(x->bad);
    free(x);
}

/* Merges the sorted runs a[off[i] .. off[i + 1]) (by sid; stable: a sid's samples stay in record
 * order, which is t order) into one, in a (tmp: scratch of as many). */
static void flog_merge(ps_flog_ent_t *a, ps_flog_ent_t *tmp, size_t *off, size_t nruns)
{
    while (nruns > 1) {
        size_t k = 0;
        for (size_t i = 0; i < nruns; i += 2) {
            size_t lo = off[i], mid = off[i + 1], hi = i + 2 <= nruns ? off[i + 2] : mid;
            if (i + 1 < nruns) {
                size_t x = lo, y = mid, o = lo;
                while (x < mid && y < hi)
                    tmp[o++] = a[y].sid < a[x].sid ? a[y++] : a[x++];
                while (x < mid)
                    tmp[o++] = a[x++];
                while (y < hi)
                    tmp[o++] = a[y++];
                memcpy(a + lo, tmp + lo, (hi - lo) * sizeof(*a));
            }
            off[k++] = lo;
        }
        off[k] = off[nruns];
        nruns = k;
    }
}

int ps_flog_index(ps_txn_t *txn, ps_flog_index_t **out, ps_err_t *err)
{
    *out = txn->aux;
    if (txn->aux != NULL && txn->aux_free == flog_index_free)
        return 0;
    ps_txn_aux_drop(txn);
    ps_flog_index_t *x = ps_xcalloc(1, sizeof(*x));
    ps_cur_t cur;
    if (!ps_cur_open(&cur, txn, DB_FLOG, "reading the float log")) {
        free(x);
        return ps_txn_error(txn, err);
    }
    ps_buf_t b = PS_BUF_INIT;
    size_t *off = NULL, noff = 0, capoff = 0;
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        if (noff + 2 > capoff) {
            capoff = capoff ? capoff * 2 : 64;
            off = ps_xrealloc(off, capoff * sizeof(*off));
        }
        off[noff++] = b.len / sizeof(ps_flog_ent_t);
        uint64_t from, to;
        ps_err_t why;
        if (ps_flog_decode(cur.v.mv_data, cur.v.mv_size, &b, &from, &to, &why) != 0) {
            x->bad = ps_xrealloc(x->bad, (x->nbad + 1) * sizeof(*x->bad));
            uint64_t key = cur.k.mv_size == 8 ? ps_get_be64(cur.k.mv_data) : 0;
            x->bad[x->nbad++] = (flog_bad_t){from, to, key, why};
        }
    }
    ps_cur_close(&cur);
    int ret = ps_txn_error(txn, err);
    if (ret != 0) {
        ps_buf_dispose(&b);
        free(off);
        free(x->bad);
        free(x);
        return ret;
    }
    x->n = b.len / sizeof(ps_flog_ent_t);
    x->e = (ps_flog_ent_t *)b.data; /* (NULL when empty) */
    if (noff > 1) {
        off[noff] = x->n;
        ps_flog_ent_t *tmp = ps_xmalloc(x->n * sizeof(*tmp) + 1);
        uint64_t lo = UINT64_MAX, hi = 0;
        for (size_t i = 0; i < noff; i++) /* each record's runs are in sid order */
            if (off[i] < off[i + 1]) {
                lo = x->e[off[i]].sid < lo ? x->e[off[i]].sid : lo;
                hi = x->e[off[i + 1] - 1].sid > hi ? x->e[off[i + 1] - 1].sid : hi;
            }
        if (hi - lo < 4 * (uint64_t)x->n + 65536) { /* sids are dense: a counting sort (stable) */
            uint32_t *cnt = ps_xcalloc(hi - lo + 2, sizeof(*cnt));
            for (size_t i = 0; i < x->n; i++)
                cnt[x->e[i].sid - lo + 1]++;
            for (uint64_t i = 1; i <= hi - lo + 1; i++)
                cnt[i] += cnt[i - 1];
            for (size_t i = 0; i < x->n; i++)
                tmp[cnt[x->e[i].sid - lo]++] = x->e[i];
            free(cnt);
            free(x->e);
            x->e = tmp;
        } else {
            flog_merge(x->e, tmp, off, noff);
            free(tmp);
        }
    }
    free(off);
    txn->aux = x;
    txn->aux_free = flog_index_free;
    *out = x;
    return 0;
}

size_t ps_flog_index_count(const ps_flog_index_t *x) { return x->n; }

const ps_flog_ent_t *ps_flog_index_at(const ps_flog_index_t *x, size_t i) { return &x->e[i]; }

int ps_flog_index_find(const ps_flog_index_t *x, uint64_t sid, const ps_flog_ent_t **e, size_t *n, ps_err_t *err)
{
    for (size_t i = 0; i < x->nbad; i++)
        if (sid >= x->bad[i].from && sid <= x->bad[i].to)
            return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged float log record %llu: %s", (unsigned long long)sid,
                              (unsigned long long)x->bad[i].key, x->bad[i].why.msg);
    size_t lo = 0, hi = x->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (x->e[mid].sid < sid)
            lo = mid + 1;
        else
            hi = mid;
    }
    size_t end = lo;
    while (end < x->n && x->e[end].sid == sid)
        end++;
    *e = x->e + lo;
    *n = end - lo;
    return 0;
}

bool ps_flog_index_damaged(const ps_flog_index_t *x, uint64_t key)
{
    for (size_t i = 0; i < x->nbad; i++)
        if (x->bad[i].key == key)
            return true;
    return false;
}

size_t ps_flog_index_ndamaged(const ps_flog_index_t *x) { return x->nbad; }

/* The logged samples of series sid after its stored head's last one, appended to the open chunk
 * at out->data[at] (02, then the chunk): the chunk the writer holds. */
static int head_apply_log(ps_txn_t *txn, uint64_t sid, ps_buf_t *out, size_t at, ps_err_t *err)
{
    ps_flog_index_t *x; /* built once a transaction (an empty log: an empty index) */
    int ret = ps_flog_index(txn, &x, err);
    if (ret != 0)
        return ret;
    const ps_flog_ent_t *e;
    size_t n;
    ret = ps_flog_index_find(x, sid, &e, &n, err);
    if (ret != 0 || n == 0)
        return ret;
    ps_xor_app_t a;
    ps_err_t why;
    if (ps_xor_app_resume(&a, out, at + 1, &why) != 0)
        return ps_float_damaged(err, sid, "head", &why);
    for (size_t i = 0; i < n; i++) {
        if (a.n > 0 && e[i].t <= a.t)
            continue; /* a cut or the stored head took it */
        if (ps_xor_app_append(&a, e[i].t, bits_float(e[i].v), &why) != 0)
            return ps_float_damaged(err, sid, "log", &why);
    }
    return 0;
}

/* ps_float_head_read() of the fhead value v of series sid */
int ps_float_head_value(ps_store_t *s, ps_txn_t *txn, uint64_t sid, const MDB_val *v, ps_buf_t *out, size_t *plen,
                        uint64_t *ptxn, int64_t *min_t, int64_t *max_t, ps_err_t *err)
{
    ps_err_t why;
    ps_err_clear(&why);
    size_t at = out->len;
    int ret = head_assemble(s, txn, sid, v, out, plen, ptxn, &why);
    if (ret == 0 && (ret = head_apply_log(txn, sid, out, at, err)) != 0)
        return ret;
    if (ret == 0 && min_t != NULL)
        ret = ps_float_xor_bounds(out->data + at + 1, out->len - at - 1, min_t, max_t, NULL, &why);
    if (ret == PS_ECORRUPT)
        return ps_float_damaged(err, sid, "head", &why);
    if (ret != 0 && err != NULL)
        *err = why;
    return ret;
}

/* The open chunk of series sid (see head_assemble), validated, with its bounds if min_t is not
 * NULL. PS_ENOTFOUND if there is none; PS_ECORRUPT: "series N: damaged float head: ..." in err. */
int ps_float_head_read(ps_store_t *s, ps_txn_t *txn, uint64_t sid, ps_buf_t *out, size_t *plen, uint64_t *ptxn,
                       int64_t *min_t, int64_t *max_t, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val v;
    if (!ps_txn_get(txn, DB_FHEAD, kb, 8, &v, "reading float head"))
        return txn->ret ? ps_txn_error(txn, err) : PS_ENOTFOUND;
    return ps_float_head_value(s, txn, sid, &v, out, plen, ptxn, min_t, max_t, err);
}

/* Deletes the fprefix record (ptxn, sid) (there may be none: a damaged head). */
int ps_float_prefix_del(ps_store_t *s, ps_txn_t *txn, uint64_t ptxn, uint64_t sid, ps_err_t *err)
{
    uint8_t kb[16];
    ps_float_prefix_key(kb, ptxn, sid);
    ps_txn_del(txn, DB_FPREFIX, kb, 16, NULL, 0, "deleting float head prefix");
    return ps_txn_error(txn, err);
}

/* Loads the state of float series sid from what txn holds: its head, else its newest chunk. */
