/*
 * floats.c - float series (remote_write, synthetic scrape series): appending, the open chunk of
 * each series (its head), cutting, compaction and retention of float chunks, reading samples and
 * chunks back, and metric metadata. The byte layouts are in docs/FORMAT.md "Float series".
 *
 * A float series keeps its samples in Prometheus' XOR chunks (xorchunk.h), each stored with the
 * encoding byte PS_FCHUNK_ENC_XOR in front:
 *   fhead    sid -> the open chunk, rewritten (once per write transaction) as samples arrive:
 *            whole while it is short, else its tail, whose stable start is in
 *   fprefix  (txn id, sid) -> bytes [2, p) of the open chunk, written anew (and the old record
 *            deleted) only in one flush of PS_FHEAD_TURNS (by sid / 64) or once the tail
 *            outgrows PS_FHEAD_TAIL_MAX; keyed by the writing transaction first, so that new
 *            prefixes are appended to full pages and old ones die page by page. LMDB
 *            copies every page a transaction writes, and reuses the pages it frees only two
 *            transactions later: rewriting whole open chunks, a transaction that appends to most
 *            series copies nearly all of fhead and the file holds about three copies of it;
 *            rewriting tails, it copies the tails and a sixteenth of the prefixes;
 *   fchunks  (sid, max_t * 1e6 as a ts key) -> a closed chunk: from schema 4 a dense chunk
 *            (fdense.h, PS_FCHUNK_ENC_DENSE) when that is shorter and gives back the same samples
 *            and XOR bytes (closed_value), else the XOR chunk. The head is cut into fchunks
 *            before a sample that would make it hold more than PS_XOR_SAMPLES_PER_CHUNK samples
 *            or span compact_window_ns or more; the compactor closes heads idle for a window.
 *            Before a chunk is closed, the plain chunks at the series' end are packed into one
 *            record (PS_FCHUNK_ENC_DPACKED, dense chunks with each chunk's bounds; schema 3
 *            wrote PS_FCHUNK_ENC_PACKED of XOR chunks) when the new one would not fit beside
 *            them in a page or make them span a day (pack_before). Reads decode dense chunks;
 *            ps_reader_xor_chunks transcodes them to the XOR chunk they were made from.
 * The series' newest sample (what out-of-order and duplicate checks compare with) is the head's
 * last one, or the last one of its newest closed chunk: nothing else is stored per series.
 *
 * The writer caches, per series written lately, the head's bytes and the appender positioned at
 * their end (ps_fstate_t), so an append does not decode the chunk again. The cache only mirrors
 * the write transaction: it is dropped with the other caches (ps_sym_caches_clear), whenever a
 * transaction fails and after compaction or retention changed heads.
 */
#include <math.h>
#include <stdlib.h>

#include "fdense.h"
#include "internal.h"
#include "xorchunk.h"

/* t (ms) representable as a ns ts key: |t| * 1e6 fits int64 */
#define T_MS_MAX (INT64_MAX / 1000000)

typedef struct ps_fstate {
    uint64_t sid;
    ps_buf_t chunk;      /* PS_FCHUNK_ENC_XOR, then the open chunk (app.start == 1) */
    ps_xor_app_t app;
    int64_t head_min_t;  /* first sample of the head, if app.n > 0 */
    int64_t last_t;      /* the series' newest sample, if has_last */
    uint64_t last_v;
    bool has_last, dirty;
    size_t prefix_len;   /* p: the chunk's bytes [2, p) are in fprefix (0: none, fhead holds it whole) */
    uint64_t prefix_txn; /* the transaction that wrote them: fprefix key (prefix_txn, sid) */
    bool broken;         /* the stored head could not be continued: the series takes no appends */
    /* the plain chunks at the series' end in fchunks, as pack_before counts them, if run_known */
    bool run_known;
    uint32_t run_n;
    size_t run_bytes;
    int64_t run_oldest, run_max_t;
} ps_fstate_t;

static inline int64_t t_key(int64_t t_ms) { return t_ms * 1000000; }

static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

/* ns bounds [start, end] -> ms bounds of the samples whose t * 1e6 falls inside */
static void ns_to_ms(int64_t start, int64_t end, int64_t *mint, int64_t *maxt)
{
    *mint = -floor_div(-(start == INT64_MIN ? INT64_MIN + 1 : start), 1000000);
    *maxt = floor_div(end, 1000000);
}

static inline uint64_t fbits(double v)
{
    uint64_t b;
    memcpy(&b, &v, 8);
    return b;
}

static inline double bitsf(uint64_t b)
{
    double v;
    memcpy(&v, &b, 8);
    return v;
}

void ps_fstate_clear(ps_store_t *s)
{
    for (size_t i = 0; i < s->nfstates; i++) {
        ps_buf_dispose(&s->fstates[i]->chunk);
        free(s->fstates[i]);
    }
    s->nfstates = 0;
    s->nfdirty = 0;
    s->fstate_bytes = 0;
    ps_hmap_clear(&s->fstate_index);
}

static ps_fstate_t *fstate_find(ps_store_t *s, uint64_t sid)
{
    uint8_t kb[8];
    uint64_t i;
    ps_enc_be64(kb, sid);
    return ps_hmap_get(&s->fstate_index, kb, 8, &i) ? s->fstates[i] : NULL;
}

static ps_fstate_t *fstate_add(ps_store_t *s, uint64_t sid)
{
    if (s->nfstates == s->capfstates) {
        s->capfstates = s->capfstates ? s->capfstates * 2 : 1024;
        s->fstates = ps_xrealloc(s->fstates, s->capfstates * sizeof(*s->fstates));
    }
    ps_fstate_t *f = ps_xcalloc(1, sizeof(*f));
    f->sid = sid;
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    ps_hmap_put(&s->fstate_index, kb, 8, s->nfstates);
    s->fstates[s->nfstates++] = f;
    s->fstate_bytes += sizeof(*f) + 64 + 8 * 3;
    return f;
}

static void fstate_empty_head(ps_fstate_t *f)
{
    ps_buf_reset(&f->chunk);
    ps_buf_putc(&f->chunk, PS_FCHUNK_ENC_XOR);
    ps_xor_app_init(&f->app, &f->chunk);
}

static int damaged(ps_err_t *err, uint64_t sid, const char *what, const ps_err_t *why)
{
    return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged float %s: %s", (unsigned long long)sid, what,
                      why ? why->msg : "no encoding byte");
}

/* First and last sample of a XOR chunk, validating all of it. */
static int xor_bounds(const uint8_t *b, size_t n, int64_t *min_t, int64_t *max_t, ps_fsample_t *last, ps_err_t *why)
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
 *   PS_FCHUNK_ENC_PACKED | t0 <varint> | entry... (to the end of the value)
 *   entry: dmin <uvarint> | span <uvarint> | len <uvarint> | len bytes: a XOR chunk
 *
 * An entry's chunk holds samples from min_t to max_t = min_t + span; min_t is t0 + dmin for the
 * first entry (dmin = 0) and the previous entry's max_t + dmin (dmin >= 1) for the others. A
 * reader finds the chunks of a range from these bounds and decodes only those. */

typedef ps_fpack_entry_t pentry_t;

void ps_fpack_encode(uint8_t enc, const ps_fpack_entry_t *e, size_t n, ps_buf_t *out)
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

typedef struct punpack {
    ps_dec_t d;
    int64_t base;
    uint32_t i;
} punpack_t;

static void punpack_init(punpack_t *u, const uint8_t *b, size_t n)
{
    ps_dec_init(&u->d, b, n);
    u->base = ps_dec_varint(&u->d);
    u->i = 0;
}

/* 1: *e is the next entry (its bounds as the entry says; its chunk not yet read), 0: the end,
 * PS_ECORRUPT: what and where in why */
static int punpack_next(punpack_t *u, pentry_t *e, ps_err_t *why)
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
                        ps_fsample_t *last, ps_err_t *why)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    if (ps_fdense_decode(b, n, tbase, &t, &v, &k, why) != 0)
        return PS_ECORRUPT;
    *min_t = t[0];
    *max_t = t[k - 1];
    if (last) {
        last->t = t[k - 1];
        last->v = bitsf(v[k - 1]);
    }
    free(t);
    free(v);
    return 0;
}

/* Validates the chunk of entry e (dense: of a PS_FCHUNK_ENC_DPACKED value) against its bounds. */
static int pentry_check(const pentry_t *e, bool dense, uint32_t i, ps_fsample_t *last, ps_err_t *why)
{
    int64_t min_t = 0, max_t = 0;
    if (dense ? dense_bounds(e->chunk, e->len, e->min_t, &min_t, &max_t, last, why) != 0
              : xor_bounds(e->chunk, e->len, &min_t, &max_t, last, why) != 0)
        return PS_ECORRUPT;
    if (min_t != e->min_t || max_t != e->max_t)
        return ps_err_set(why, PS_ECORRUPT, "packed chunks: entry %u holds %lld..%lld, not %lld..%lld", i - 1,
                          (long long)min_t, (long long)max_t, (long long)e->min_t, (long long)e->max_t);
    return 0;
}

/* First and last sample of a stored value (a XOR or dense chunk, packed chunks), validating all of it. */
static int chunk_bounds(const void *p, size_t n, int64_t *min_t, int64_t *max_t, ps_fsample_t *last, ps_err_t *why)
{
    const uint8_t *b = p;
    if (n >= 1 && b[0] == PS_FCHUNK_ENC_XOR)
        return xor_bounds(b + 1, n - 1, min_t, max_t, last, why);
    if (n >= 1 && b[0] == PS_FCHUNK_ENC_DENSE)
        return dense_bounds(b + 1, n - 1, 0, min_t, max_t, last, why);
    if (n < 1 || (b[0] != PS_FCHUNK_ENC_PACKED && b[0] != PS_FCHUNK_ENC_DPACKED))
        return ps_err_set(why, PS_ECORRUPT, "encoding byte %u, not %u, %u, %u or %u", n ? b[0] : 0u,
                          PS_FCHUNK_ENC_XOR, PS_FCHUNK_ENC_PACKED, PS_FCHUNK_ENC_DENSE, PS_FCHUNK_ENC_DPACKED);
    bool dense = b[0] == PS_FCHUNK_ENC_DPACKED;
    punpack_t u;
    pentry_t e;
    int r;
    punpack_init(&u, b + 1, n - 1);
    while ((r = punpack_next(&u, &e, why)) == 1) {
        if (u.i == 1)
            *min_t = e.min_t;
        *max_t = e.max_t;
        if (pentry_check(&e, dense, u.i, last, why) != 0)
            return PS_ECORRUPT;
    }
    return r;
}

static size_t uvarint_len(uint64_t v)
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
static size_t pentry_bytes(uint64_t dmin, int64_t min_t, int64_t max_t, size_t len)
{
    return uvarint_len(dmin) + uvarint_len((uint64_t)(max_t - min_t)) + uvarint_len(len) + len;
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
        (*v)[*k] = fbits(it.v);
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
    ps_fdense_encode(t, v, k, tbase, out);
    int64_t *t2;
    uint64_t *v2;
    uint32_t k2;
    ps_err_t why;
    bool ok = ps_fdense_decode(out->data + at, out->len - at, tbase, &t2, &v2, &k2, &why) == 0;
    if (ok) {
        ok = k2 == k && memcmp(t2, t, k * sizeof(*t)) == 0 && memcmp(v2, v, k * sizeof(*v)) == 0;
        free(t2);
        free(v2);
    }
    if (ok && x != NULL) { /* what ps_fdense_to_xor gives: the XOR chunk of the same samples */
        ps_buf_t b = PS_BUF_INIT;
        ps_xor_app_t a;
        ps_xor_app_init(&a, &b);
        for (uint32_t i = 0; i < k && ok; i++)
            ok = ps_xor_app_append(&a, t[i], bitsf(v[i]), &why) == 0;
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
    if (n >= 1 && c[0] == PS_FCHUNK_ENC_XOR)
        return xor_samples(c + 1, n - 1, t, v, k, why);
    if (n >= 1 && c[0] == PS_FCHUNK_ENC_DENSE)
        return ps_fdense_decode(c + 1, n - 1, 0, t, v, k, why);
    return ps_err_set(why, PS_ECORRUPT, "not a plain chunk");
}

/* Appends to out the dense chunk (tbase min_t, for a packed entry) of the closed chunk c[0..n)
 * (a fchunks value of encoding 02 or 06) if its samples span [min_t, max_t] and dense_verified;
 * else false: the chunk stays as it is. */
static bool closed_dense(const uint8_t *c, size_t n, int64_t min_t, int64_t max_t, ps_buf_t *out)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    ps_err_t why;
    if (value_samples(c, n, &t, &v, &k, &why) != 0)
        return false;
    bool ok = t[0] == min_t && t[k - 1] == max_t;
    if (ok && c[0] == PS_FCHUNK_ENC_DENSE) {
        /* the same chunk but its t0 (ps_fdense_encode of the same samples writes it so): no new
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
        ok = !d.err && ps_fdense_decode(out->data + at, out->len - at, min_t, &t2, &v2, &k2, &why) == 0;
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
static void closed_value(const uint8_t *x, size_t n, ps_buf_t *out)
{
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    ps_err_t why;
    ps_buf_reset(out);
    if (value_samples(x, n, &t, &v, &k, &why) == 0) {
        ps_buf_putc(out, PS_FCHUNK_ENC_DENSE);
        bool ok = dense_verified(t, v, k, 0, x + 1, n - 1, out) && out->len < n;
        free(t);
        free(v);
        if (ok)
            return;
        ps_buf_reset(out);
    }
    ps_buf_append(out, x, n);
}

/* Before the closed chunk [min_t, max_t] of len bytes (its encoding byte not counted) goes into
 * fchunks: packs the plain chunks of series sid at the end of fchunks (those after its newest
 * packed record) into one packed record when the new chunk would not fit beside them in
 * PS_FPACK_MAX_BYTES, or would make them span PS_FPACK_MAX_SPAN_MS (or a tenth of the retention)
 * or more. Damaged chunks are left as they are (reads report them). */
static bool pack_due(size_t n, size_t bytes, size_t eb, int64_t oldest, int64_t max_t, int64_t max_span)
{
    return n >= 2 && (bytes + eb > PS_FPACK_MAX_BYTES || max_t - oldest >= max_span);
}

/* f (may be NULL): the writer's state of the series, whose run counts spare the walk over the
 * series' chunks until they are due to be packed. */
static int pack_before(ps_store_t *s, MDB_txn *txn, ps_fstate_t *f, uint64_t sid, int64_t min_t, int64_t max_t,
                       size_t len, ps_err_t *err)
{
    int64_t max_span = PS_FPACK_MAX_SPAN_MS;
    if (s->opts.retention_ns > 0 && s->opts.retention_ns / 10000000 < max_span)
        max_span = s->opts.retention_ns / 10000000;
    if (f != NULL && f->run_known) {
        size_t eb = pentry_bytes(f->run_n > 0 ? (uint64_t)(min_t - f->run_max_t) : 0, min_t, max_t, len);
        if (!pack_due(f->run_n, f->run_bytes, eb, f->run_oldest, max_t, max_span)) {
            if (f->run_n++ == 0)
                f->run_oldest = min_t;
            f->run_bytes += eb;
            f->run_max_t = max_t;
            return 0;
        }
    }
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi[DB_FCHUNKS], &cur), ret = 0;
    if (rc)
        return ps_lmdb_err(err, rc, "opening float chunk cursor");
    uint8_t kb[16];
    ps_key_sid_ts(kb, sid + 1, INT64_MIN);
    MDB_val k = ps_mval(kb, 16), v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    rc = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_PREV) : rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST) : rc;
    /* the run, newest first: bytes bounds the packed value (t0 as 10 bytes, the oldest entry's
     * dmin as 1: it is 0 if no older one joins) */
    static const size_t cap = PS_FPACK_MAX_BYTES / 16; /* an entry takes more */
    uint8_t (*keys)[16] = NULL;
    pentry_t *run = NULL;
    size_t n = 0, bytes = 1 + 10;
    int64_t oldest = 0;
    while (rc == 0 && k.mv_size == 16 && ps_get_be64(k.mv_data) == sid && n < cap) {
        /* bounds without decoding: t0 after the sample count, max_t from the key (checked below) */
        const uint8_t *b = v.mv_data;
        if (v.mv_size < 4 || (b[0] != PS_FCHUNK_ENC_XOR && b[0] != PS_FCHUNK_ENC_DENSE))
            break;
        ps_dec_t d; /* a dense chunk: t0 after its uvarint count */
        ps_dec_init(&d, b + 1, v.mv_size - 1);
        if (b[0] == PS_FCHUNK_ENC_XOR)
            d.p += 2;
        else
            (void)ps_dec_uvarint(&d);
        int64_t cmin = ps_dec_varint(&d), cmax = floor_div(ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8)), 1000000);
        if (d.err || cmin < -T_MS_MAX || cmin > cmax || (n > 0 && cmax >= run[n - 1].min_t))
            break;
        size_t eb = pentry_bytes(0, cmin, cmax, v.mv_size - 1);
        if (n > 0) /* the next newer entry's dmin, now known */
            eb += uvarint_len((uint64_t)(run[n - 1].min_t - cmax)) - 1;
        if (bytes + eb > PS_FPACK_MAX_BYTES)
            break;
        if (n == 0) {
            keys = ps_xmalloc(cap * sizeof(*keys));
            run = ps_xmalloc(cap * sizeof(*run));
        }
        memcpy(keys[n], k.mv_data, 16);
        run[n] = (pentry_t){cmin, cmax, b, v.mv_size}; /* with the encoding byte, until packed */
        n++;
        bytes += eb;
        oldest = cmin;
        rc = mdb_cursor_get(cur, &k, &v, MDB_PREV);
    }
    if (rc != 0 && rc != MDB_NOTFOUND)
        ret = ps_lmdb_err(err, rc, "reading float chunks");
    mdb_cursor_close(cur);
    size_t eb = pentry_bytes(n > 0 ? (uint64_t)(min_t - run[0].max_t) : 0, min_t, max_t, len);
    bool pack = ret == 0 && pack_due(n, bytes, eb, oldest, max_t, max_span);
    /* the value is built before any write moves what run[] points at: dense chunks of each
     * chunk's samples (whole chunks whose bounds are right only), oldest first */
    ps_buf_t dense = PS_BUF_INIT, pv = PS_BUF_INIT;
    size_t *off = pack ? ps_xmalloc((n + 1) * sizeof(*off)) : NULL;
    for (size_t i = 0; i < n / 2 && pack; i++) {
        pentry_t t = run[i];
        run[i] = run[n - 1 - i];
        run[n - 1 - i] = t;
        uint8_t kt[16];
        memcpy(kt, keys[i], 16);
        memcpy(keys[i], keys[n - 1 - i], 16);
        memcpy(keys[n - 1 - i], kt, 16);
    }
    for (size_t i = 0; i < n && pack; i++) {
        off[i] = dense.len;
        pack = closed_dense(run[i].chunk, run[i].len, run[i].min_t, run[i].max_t, &dense);
    }
    if (pack) {
        off[n] = dense.len;
        for (size_t i = 0; i < n; i++) {
            run[i].chunk = dense.data + off[i];
            run[i].len = off[i + 1] - off[i];
        }
        ps_fpack_encode(PS_FCHUNK_ENC_DPACKED, run, n, &pv);
        /* keys[n - 1]: the newest chunk's, which the packed value takes */
        for (size_t i = 0; i + 1 < n && ret == 0; i++) {
            MDB_val dk = ps_mval(keys[i], 16);
            if ((rc = mdb_del(txn, s->dbi[DB_FCHUNKS], &dk, NULL)) != 0)
                ret = ps_lmdb_err(err, rc, "packing float chunks");
        }
        MDB_val pk = ps_mval(keys[n - 1], 16), pval = ps_mval(pv.data, pv.len);
        if (ret == 0 && (rc = mdb_put(txn, s->dbi[DB_FCHUNKS], &pk, &pval, 0)) != 0)
            ret = ps_lmdb_err(err, rc, "packing float chunks");
    }
    ps_buf_dispose(&pv);
    ps_buf_dispose(&dense);
    free(off);
    if (f != NULL && ret == 0) { /* the new chunk starts the run, or joins it */
        f->run_known = true;
        if (pack || n == 0) {
            f->run_n = 1;
            f->run_bytes = 1 + 10 + pentry_bytes(0, min_t, max_t, len);
            f->run_oldest = min_t;
        } else {
            f->run_n = (uint32_t)n + 1;
            f->run_bytes = bytes + eb;
            f->run_oldest = oldest;
        }
        f->run_max_t = max_t;
    }
    free(keys);
    free(run);
    return ret;
}

/* ---- the open chunk: fhead, whole (PS_FCHUNK_ENC_XOR) or its tail (PS_FHEAD_ENC_TAIL) after
 * the stable start in fprefix ----
 *
 *   fhead tail:            04 | p <uvarint> | txn <uvarint> | the chunk's 2 header bytes | bytes [p, n)
 *   fprefix (txn, sid):    05 | bytes [2, p) of the chunk
 *
 * The XOR appender only ever changes the chunk's header and its last byte, so bytes [2, n - 1) of
 * an open chunk of n bytes stay as they are until it is cut. */

void ps_fhead_encode_tail(const uint8_t *c, size_t n, size_t p, uint64_t txn, ps_buf_t *out)
{
    ps_buf_putc(out, PS_FHEAD_ENC_TAIL);
    ps_put_uvarint(out, p);
    ps_put_uvarint(out, txn);
    ps_buf_append(out, c, 2);
    ps_buf_append(out, c + p, n - p);
}

void ps_fprefix_encode(const uint8_t *c, size_t p, ps_buf_t *out)
{
    ps_buf_putc(out, PS_FPREFIX_ENC);
    ps_buf_append(out, c + 2, p - 2);
}

static void prefix_key(uint8_t k[16], uint64_t txn, uint64_t sid)
{
    ps_enc_be64(k, txn);
    ps_enc_be64(k + 8, sid);
}

/* The open chunk of series sid from fhead value v: out = 02, then the chunk (from fhead alone or
 * with fprefix), *plen = p (0 if fhead holds it whole), *ptxn its prefix's transaction. An error:
 * what in why. */
static int head_assemble(ps_store_t *s, MDB_txn *txn, uint64_t sid, const MDB_val *v, ps_buf_t *out, size_t *plen,
                         uint64_t *ptxn, ps_err_t *why)
{
    const uint8_t *b = v->mv_data;
    *plen = 0;
    *ptxn = 0;
    if (v->mv_size >= 1 && b[0] == PS_FCHUNK_ENC_XOR) {
        ps_buf_append(out, b, v->mv_size);
        return 0;
    }
    if (v->mv_size < 1 || b[0] != PS_FHEAD_ENC_TAIL)
        return ps_err_set(why, PS_ECORRUPT, "encoding byte %u, not %u or %u", v->mv_size ? b[0] : 0u,
                          PS_FCHUNK_ENC_XOR, PS_FHEAD_ENC_TAIL);
    ps_dec_t d;
    ps_dec_init(&d, b + 1, v->mv_size - 1);
    uint64_t p = ps_dec_uvarint(&d), pt = ps_dec_uvarint(&d);
    if (d.err || p < 2 || ps_dec_left(&d) < 2)
        return ps_err_set(why, PS_ECORRUPT, "tail: bad prefix length or truncated header");
    const uint8_t *hdr = ps_dec_bytes(&d, 2);
    uint8_t kb[16];
    prefix_key(kb, pt, sid);
    MDB_val k = ps_mval(kb, 16), pv;
    int rc = mdb_get(txn, s->dbi[DB_FPREFIX], &k, &pv);
    if (rc == MDB_NOTFOUND)
        return ps_err_set(why, PS_ECORRUPT, "tail after %llu bytes, but no prefix of transaction %llu",
                          (unsigned long long)p, (unsigned long long)pt);
    if (rc)
        return ps_lmdb_err(why, rc, "reading float head prefix");
    const uint8_t *pb = pv.mv_data;
    if (pv.mv_size < 1 || pb[0] != PS_FPREFIX_ENC || pv.mv_size - 1 != p - 2)
        return ps_err_set(why, PS_ECORRUPT, "tail after %llu bytes, but a prefix of encoding %u holding %zu, not %llu",
                          (unsigned long long)p, pv.mv_size ? pb[0] : 0u, pv.mv_size ? pv.mv_size - 1 : 0,
                          (unsigned long long)(p - 2));
    ps_buf_putc(out, PS_FCHUNK_ENC_XOR);
    ps_buf_append(out, hdr, 2);
    ps_buf_append(out, pb + 1, pv.mv_size - 1);
    ps_buf_append(out, d.p, ps_dec_left(&d));
    *plen = p;
    *ptxn = pt;
    return 0;
}

/* head_read() of the fhead value v of series sid */
static int head_value(ps_store_t *s, MDB_txn *txn, uint64_t sid, const MDB_val *v, ps_buf_t *out, size_t *plen,
                      uint64_t *ptxn, int64_t *min_t, int64_t *max_t, ps_err_t *err)
{
    ps_err_t why;
    ps_err_clear(&why);
    int ret = head_assemble(s, txn, sid, v, out, plen, ptxn, &why);
    if (ret == 0 && min_t != NULL)
        ret = xor_bounds(out->data + 1, out->len - 1, min_t, max_t, NULL, &why);
    if (ret == PS_ECORRUPT)
        return damaged(err, sid, "head", &why);
    if (ret != 0 && err != NULL)
        *err = why;
    return ret;
}

/* The open chunk of series sid (see head_assemble), validated, with its bounds if min_t is not
 * NULL. PS_ENOTFOUND if there is none; PS_ECORRUPT: "series N: damaged float head: ..." in err. */
static int head_read(ps_store_t *s, MDB_txn *txn, uint64_t sid, ps_buf_t *out, size_t *plen, uint64_t *ptxn,
                     int64_t *min_t, int64_t *max_t, ps_err_t *err)
{
    uint8_t kb[8];
    ps_enc_be64(kb, sid);
    MDB_val k = ps_mval(kb, 8), v;
    int rc = mdb_get(txn, s->dbi[DB_FHEAD], &k, &v);
    if (rc == MDB_NOTFOUND)
        return PS_ENOTFOUND;
    if (rc)
        return ps_lmdb_err(err, rc, "reading float head");
    return head_value(s, txn, sid, &v, out, plen, ptxn, min_t, max_t, err);
}

/* Deletes the fprefix record (ptxn, sid) (there may be none: a damaged head). */
static int prefix_del(ps_store_t *s, MDB_txn *txn, uint64_t ptxn, uint64_t sid, ps_err_t *err)
{
    uint8_t kb[16];
    prefix_key(kb, ptxn, sid);
    MDB_val k = ps_mval(kb, 16);
    int rc = mdb_del(txn, s->dbi[DB_FPREFIX], &k, NULL);
    return rc != 0 && rc != MDB_NOTFOUND ? ps_lmdb_err(err, rc, "deleting float head prefix") : 0;
}

/* Loads the state of float series sid from what txn holds: its head, else its newest chunk. */
static int fstate_load(ps_store_t *s, MDB_txn *txn, uint64_t sid, ps_fstate_t **out, ps_err_t *err)
{
    uint8_t kb[16];
    MDB_val k, v;
    ps_err_t why;
    ps_err_clear(&why);
    ps_buf_t head = PS_BUF_INIT;
    size_t plen = 0;
    uint64_t ptxn = 0;
    int64_t min_t = 0, max_t = 0;
    int rc = head_read(s, txn, sid, &head, &plen, &ptxn, &min_t, &max_t, err);
    if (rc != 0 && rc != PS_ENOTFOUND) {
        ps_buf_dispose(&head);
        return rc;
    }
    if (rc == 0) {
        ps_fstate_t *f = fstate_add(s, sid);
        ps_buf_dispose(&f->chunk);
        f->chunk = head;
        f->prefix_len = plen;
        f->prefix_txn = ptxn;
        if (ps_xor_app_resume(&f->app, &f->chunk, 1, &why) != 0) {
            f->broken = true; /* (validated above: not expected) appends to it fail from now on */
            return damaged(err, sid, "head", &why);
        }
        f->head_min_t = min_t;
        f->last_t = f->app.t;
        f->last_v = f->app.v;
        f->has_last = true;
        s->fstate_bytes += f->chunk.cap;
        *out = f;
        return 0;
    }
    /* no head: the newest closed chunk, the last key of this series in fchunks */
    MDB_cursor *cur;
    if ((rc = mdb_cursor_open(txn, s->dbi[DB_FCHUNKS], &cur)) != 0)
        return ps_lmdb_err(err, rc, "opening float chunk cursor");
    ps_key_sid_ts(kb, sid + 1, INT64_MIN);
    k = ps_mval(kb, 16);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    rc = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_PREV) : rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST) : rc;
    int ret = 0;
    ps_fsample_t last = {0, 0};
    bool has = false;
    if (rc == 0 && k.mv_size == 16 && ps_get_be64(k.mv_data) == sid) {
        int64_t cmin, cmax;
        if (chunk_bounds(v.mv_data, v.mv_size, &cmin, &cmax, &last, &why) != 0)
            ret = damaged(err, sid, "chunk", &why);
        has = true;
    } else if (rc != 0 && rc != MDB_NOTFOUND) {
        ret = ps_lmdb_err(err, rc, "reading float chunks");
    }
    mdb_cursor_close(cur);
    if (ret)
        return ret;
    ps_fstate_t *f = fstate_add(s, sid);
    fstate_empty_head(f);
    f->has_last = has;
    f->last_t = last.t;
    f->last_v = fbits(last.v);
    *out = f;
    return 0;
}

static void mark_dirty(ps_store_t *s, ps_fstate_t *f)
{
    if (f->dirty)
        return;
    if (s->nfdirty == s->capfdirty) {
        s->capfdirty = s->capfdirty ? s->capfdirty * 2 : 1024;
        s->fdirty = ps_xrealloc(s->fdirty, s->capfdirty * sizeof(*s->fdirty));
    }
    s->fdirty[s->nfdirty++] = f;
    f->dirty = true;
}

/* Puts a record into database db, as an append (MDB_APPEND) when its key is past the last one:
 * then LMDB starts a new page where an insert would split the full last page in two halves, so
 * records written in key order (chunks closed by the compactor or of the newest series, a
 * flush's new prefixes) fill their pages. */
static int put_append(ps_store_t *s, MDB_txn *txn, int db, MDB_val *k, MDB_val *v)
{
    int rc = mdb_put(txn, s->dbi[db], k, v, MDB_APPEND);
    return rc == MDB_KEYEXIST ? mdb_put(txn, s->dbi[db], k, v, 0) : rc;
}

/* Moves the head of f (nonempty) into fchunks; f's head is empty afterwards. */
static int cut_head(ps_store_t *s, MDB_txn *txn, ps_fstate_t *f, ps_err_t *err)
{
    ps_buf_t cv = PS_BUF_INIT;
    closed_value(f->chunk.data, f->chunk.len, &cv);
    int ret = pack_before(s, txn, f, f->sid, f->head_min_t, f->app.t, cv.len - 1, err);
    if (ret) {
        ps_buf_dispose(&cv);
        return ret;
    }
    uint8_t kb[16];
    ps_key_sid_ts(kb, f->sid, t_key(f->app.t));
    MDB_val k = ps_mval(kb, 16), v = ps_mval(cv.data, cv.len);
    int rc = put_append(s, txn, DB_FCHUNKS, &k, &v);
    ps_buf_dispose(&cv);
    if (rc)
        return ps_lmdb_err(err, rc, "writing float chunk");
    if (f->prefix_len > 0) { /* the flush rewrites the head record (f is dirty) */
        if ((ret = prefix_del(s, txn, f->prefix_txn, f->sid, err)) != 0)
            return ret;
        f->prefix_len = 0;
    }
    size_t before = f->chunk.cap;
    fstate_empty_head(f);
    s->fstate_bytes += f->chunk.cap - before;
    mark_dirty(s, f); /* the flush deletes the head record if nothing follows */
    return 0;
}

static void count_reject(uint32_t *n, int64_t *first, int64_t t)
{
    if ((*n)++ == 0)
        *first = t;
}

static int append_series(ps_store_t *s, MDB_txn *txn, ps_fappend_t *fa, int64_t now, ps_err_t *err)
{
    int64_t oldest = INT64_MIN; /* ms: samples before it are out of bounds (retention) */
    if (s->opts.retention_ns > 0)
        oldest = -floor_div(-(now - s->opts.retention_ns), 1000000);
    int64_t newest = s->opts.future_grace_ns > 0 ? (now + s->opts.future_grace_ns) / 1000000 : INT64_MAX; /* ms */
    int64_t window_ms = s->opts.compact_window_ns > 0 ? s->opts.compact_window_ns / 1000000 : 0;
    uint32_t per_chunk = s->opts.compact_max_profiles; /* the same count rule as profile heads */
    if (per_chunk == 0 || per_chunk > PS_XOR_SAMPLES_PER_CHUNK)
        per_chunk = PS_XOR_SAMPLES_PER_CHUNK;

    /* a series nothing can be stored in is not created */
    bool any = false;
    for (uint32_t i = 0; i < fa->nsamples && !any; i++)
        any = fa->samples[i].t >= oldest && fa->samples[i].t <= T_MS_MAX && fa->samples[i].t >= -T_MS_MAX &&
              fa->samples[i].t <= newest;
    uint64_t sid;
    ps_series_state_t *st;
    int ret = ps_series_get_or_create(s, txn, fa->labels, any, PS_SERIES_FLOAT, &sid, &st, err);
    if (ret == PS_ENOTFOUND) {
        for (uint32_t i = 0; i < fa->nsamples; i++)
            if (fa->samples[i].t > newest && fa->samples[i].t <= T_MS_MAX)
                count_reject(&fa->too_new, &fa->first_too_new, fa->samples[i].t);
            else
                count_reject(&fa->out_of_bounds, &fa->first_out_of_bounds, fa->samples[i].t);
        return 0;
    }
    if (ret)
        return ret;
    if (st->kind != PS_SERIES_FLOAT) {
        ps_buf_t b = PS_BUF_INIT;
        ps_labels_format(fa->labels, &b);
        ps_buf_putc(&b, 0);
        fa->status = ps_err_set(&fa->err, PS_ECONFLICT, "series %s holds profiles, not float samples",
                                (char *)b.data);
        ps_buf_dispose(&b);
        return 0;
    }
    fa->sid = sid;
    ps_fstate_t *f = fstate_find(s, sid);
    if (f != NULL && f->broken) {
        fa->status = ps_err_set(&fa->err, PS_ECORRUPT, "series %llu: damaged float head", (unsigned long long)sid);
        return 0;
    }
    if (f == NULL && (ret = fstate_load(s, txn, sid, &f, &fa->err)) != 0) {
        if (ret != PS_ECORRUPT)
            return ps_err_set(err, ret, "%s", fa->err.msg);
        fa->status = ret; /* this series alone */
        return 0;
    }
    for (uint32_t i = 0; i < fa->nsamples; i++) {
        int64_t t = fa->samples[i].t;
        uint64_t bits = fbits(fa->samples[i].v);
        if (t < oldest || t > T_MS_MAX || t < -T_MS_MAX) {
            count_reject(&fa->out_of_bounds, &fa->first_out_of_bounds, t);
            continue;
        }
        if (t > newest) {
            count_reject(&fa->too_new, &fa->first_too_new, t);
            continue;
        }
        if (f->has_last && t < f->last_t) {
            count_reject(&fa->out_of_order, &fa->first_out_of_order, t);
            continue;
        }
        if (f->has_last && t == f->last_t) {
            if (bits == f->last_v)
                fa->duplicates++;
            else
                count_reject(&fa->dup_conflicts, &fa->first_dup_conflict, t);
            continue;
        }
        if (f->app.n > 0 && (f->app.n >= per_chunk || (window_ms > 0 && t - f->head_min_t >= window_ms)))
            if ((ret = cut_head(s, txn, f, err)) != 0)
                return ret;
        size_t before = f->chunk.cap;
        ps_err_t aerr;
        if ((ret = ps_xor_app_append(&f->app, t, bitsf(bits), &aerr)) != 0)
            return ps_err_set(err, PS_EINTERNAL, "series %llu: %s", (unsigned long long)sid, aerr.msg);
        s->fstate_bytes += f->chunk.cap - before;
        if (f->app.n == 1)
            f->head_min_t = t;
        f->last_t = t;
        f->last_v = bits;
        f->has_last = true;
        fa->accepted++;
        if (fa->stored != NULL)
            ((uint8_t *)fa->stored)[i] = 1;
        mark_dirty(s, f);
    }
    return 0;
}

int ps_fwrite(ps_store_t *s, MDB_txn *txn, ps_fappend_t **items, size_t n, int64_t now, ps_err_t *err)
{
    for (size_t i = 0; i < n; i++) {
        ps_fappend_t *fa = items[i];
        fa->status = 0;
        ps_err_clear(&fa->err);
        fa->sid = 0;
        fa->accepted = fa->duplicates = fa->out_of_order = fa->dup_conflicts = fa->out_of_bounds = fa->too_new = 0;
        fa->first_out_of_order = fa->first_dup_conflict = fa->first_out_of_bounds = fa->first_too_new = 0;
        int ret = append_series(s, txn, fa, now, err);
        if (ret)
            return ret;
    }
    return 0;
}

/* Writes the open chunk of f (nonempty): whole while it has fewer than PS_FHEAD_SPLIT_MIN bytes,
 * else as a tail, after rewriting fprefix when there is none yet, when the tail would outgrow
 * PS_FHEAD_TAIL_MAX, or in the series' turn. tmp: scratch. */
static int head_put(ps_store_t *s, MDB_txn *txn, ps_fstate_t *f, ps_buf_t *tmp, ps_err_t *err)
{
    const uint8_t *c = f->chunk.data + 1;
    size_t n = f->chunk.len - 1;
    uint8_t kb[8];
    ps_enc_be64(kb, f->sid);
    MDB_val k = ps_mval(kb, 8), v = ps_mval(f->chunk.data, f->chunk.len);
    int rc;
    if (f->prefix_len == 0 && n < PS_FHEAD_SPLIT_MIN) {
        if ((rc = mdb_put(txn, s->dbi[DB_FHEAD], &k, &v, 0)) != 0)
            return ps_lmdb_err(err, rc, "writing float head");
        return 0;
    }
    bool turn = ((f->sid >> 6) + s->fflushes) % PS_FHEAD_TURNS == 0;
    if (f->prefix_len == 0 || n - f->prefix_len > PS_FHEAD_TAIL_MAX || (turn && n - 1 > f->prefix_len)) {
        int ret;
        if (f->prefix_len > 0 && (ret = prefix_del(s, txn, f->prefix_txn, f->sid, err)) != 0)
            return ret;
        uint64_t id = mdb_txn_id(txn);
        uint8_t pk[16];
        prefix_key(pk, id, f->sid);
        MDB_val pkv = ps_mval(pk, 16);
        ps_buf_reset(tmp);
        ps_fprefix_encode(c, n - 1, tmp);
        v = ps_mval(tmp->data, tmp->len);
        if ((rc = put_append(s, txn, DB_FPREFIX, &pkv, &v)) != 0)
            return ps_lmdb_err(err, rc, "writing float head prefix");
        f->prefix_len = n - 1;
        f->prefix_txn = id;
    }
    ps_buf_reset(tmp);
    ps_fhead_encode_tail(c, n, f->prefix_len, f->prefix_txn, tmp);
    v = ps_mval(tmp->data, tmp->len);
    if ((rc = mdb_put(txn, s->dbi[DB_FHEAD], &k, &v, 0)) != 0)
        return ps_lmdb_err(err, rc, "writing float head");
    return 0;
}

static int by_sid(const void *a, const void *b)
{
    uint64_t x = (*(ps_fstate_t *const *)a)->sid, y = (*(ps_fstate_t *const *)b)->sid;
    return x < y ? -1 : x > y;
}

int ps_fwrite_flush(ps_store_t *s, MDB_txn *txn, ps_err_t *err)
{
    int ret = 0;
    ps_buf_t tmp = PS_BUF_INIT;
    /* in sid order: the new prefixes of this transaction are appends, (txn id, sid) increasing */
    for (size_t i = 1; i < s->nfdirty; i++) {
        if (s->fdirty[i - 1]->sid > s->fdirty[i]->sid) {
            qsort(s->fdirty, s->nfdirty, sizeof(*s->fdirty), by_sid);
            break;
        }
    }
    for (size_t i = 0; i < s->nfdirty && ret == 0; i++) {
        ps_fstate_t *f = s->fdirty[i];
        f->dirty = false;
        if (f->app.n > 0) {
            ret = head_put(s, txn, f, &tmp, err);
            continue;
        }
        uint8_t kb[8];
        ps_enc_be64(kb, f->sid);
        MDB_val k = ps_mval(kb, 8);
        int rc = mdb_del(txn, s->dbi[DB_FHEAD], &k, NULL); /* (the cut deleted its prefix) */
        if (rc != 0 && rc != MDB_NOTFOUND)
            ret = ps_lmdb_err(err, rc, "writing float head");
    }
    ps_buf_dispose(&tmp);
    s->nfdirty = 0;
    s->fflushes++;
    return ret;
}

/* ---- metadata ---- */

/* value: enc u8 (=1) | type u8 | help_len uvarint | help | unit (to the end) */
void ps_meta_rec_encode(const ps_metric_meta_t *m, ps_buf_t *out)
{
    ps_buf_putc(out, PS_META_REC_V1);
    ps_buf_putc(out, (uint8_t)m->type);
    ps_put_uvarint(out, m->help_len);
    ps_buf_append(out, m->help, m->help_len);
    ps_buf_append(out, m->unit, m->unit_len);
}

int ps_meta_write(ps_store_t *s, MDB_txn *txn, const ps_metric_meta_t *m, size_t n, ps_err_t *err)
{
    ps_buf_t b = PS_BUF_INIT;
    int ret = 0;
    for (size_t i = 0; i < n && ret == 0; i++) {
        if (m[i].family_len == 0 || m[i].family_len > PS_META_FAMILY_MAX || m[i].type < 0 || m[i].type > 255)
            continue;
        ps_buf_reset(&b);
        ps_meta_rec_encode(&m[i], &b);
        MDB_val k = ps_mval(m[i].family, m[i].family_len), v;
        int rc = mdb_get(txn, s->dbi[DB_META], &k, &v);
        if (rc == 0 && v.mv_size == b.len && memcmp(v.mv_data, b.data, b.len) == 0)
            continue; /* Prometheus resends all metadata every minute: no page written for it */
        if (rc != 0 && rc != MDB_NOTFOUND) {
            ret = ps_lmdb_err(err, rc, "reading metadata");
            break;
        }
        v = ps_mval(b.data, b.len);
        if ((rc = mdb_put(txn, s->dbi[DB_META], &k, &v, 0)) != 0)
            ret = ps_lmdb_err(err, rc, "writing metadata");
    }
    ps_buf_dispose(&b);
    return ret;
}

static int meta_decode(const MDB_val *k, const MDB_val *v, ps_metric_meta_t *m)
{
    ps_dec_t d;
    ps_dec_init(&d, v->mv_data, v->mv_size);
    if (ps_dec_u8(&d) != PS_META_REC_V1)
        return PS_ECORRUPT;
    m->type = ps_dec_u8(&d);
    uint64_t hl = ps_dec_uvarint(&d);
    if (d.err || hl > ps_dec_left(&d))
        return PS_ECORRUPT;
    m->family = k->mv_data;
    m->family_len = k->mv_size;
    m->help = (const char *)ps_dec_bytes(&d, hl);
    m->help_len = hl;
    m->unit = (const char *)d.p;
    m->unit_len = ps_dec_left(&d);
    return 0;
}

int ps_reader_metadata(ps_reader_t *r, const char *metric, size_t mlen,
                       int (*cb)(void *ctx, const ps_metric_meta_t *m), void *ctx, ps_err_t *err)
{
    MDB_val k, v;
    ps_metric_meta_t m;
    if (metric != NULL) {
        if (mlen == 0 || mlen > PS_META_FAMILY_MAX)
            return 0;
        k = ps_mval(metric, mlen);
        int rc = mdb_get(r->txn, r->store->dbi[DB_META], &k, &v);
        if (rc == MDB_NOTFOUND)
            return 0;
        if (rc)
            return ps_lmdb_err(err, rc, "reading metadata");
        if (meta_decode(&k, &v, &m) != 0)
            return ps_err_set(err, PS_ECORRUPT, "metadata of %.*s: damaged record", (int)mlen, metric);
        return cb(ctx, &m);
    }
    MDB_cursor *cur;
    int rc = mdb_cursor_open(r->txn, r->store->dbi[DB_META], &cur), ret = 0;
    if (rc)
        return ps_lmdb_err(err, rc, "opening metadata cursor");
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    while (rc == 0) {
        if (meta_decode(&k, &v, &m) != 0) {
            ret = ps_err_set(err, PS_ECORRUPT, "metadata of %.*s: damaged record", (int)k.mv_size,
                             (const char *)k.mv_data);
            break;
        }
        if ((ret = cb(ctx, &m)) != 0)
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (ret == 0 && rc != 0 && rc != MDB_NOTFOUND)
        ret = ps_lmdb_err(err, rc, "reading metadata");
    return ret;
}

/* ---- compaction and retention ---- */

#define FCOMPACT_PER_TXN 1024

/* Closes the heads due: all when force, else those of series idle (no append in this process)
 * for compact_window_ns of wall time, measured as for profile heads. */
int ps_fcompact(ps_store_t *s, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err)
{
    int64_t w = s->opts.compact_window_ns;
    if (!force && w <= 0)
        return 0;
    uint8_t from[8] = {0};
    for (;;) {
        MDB_txn *txn;
        int rc = mdb_txn_begin(s->env, NULL, 0, &txn), ret = 0;
        if (rc)
            return ps_lmdb_err(err, rc, "starting compaction transaction");
        MDB_cursor *cur;
        if ((rc = mdb_cursor_open(txn, s->dbi[DB_FHEAD], &cur)) != 0) {
            mdb_txn_abort(txn);
            return ps_lmdb_err(err, rc, "opening float head cursor");
        }
        uint64_t due[FCOMPACT_PER_TXN];
        size_t ndue = 0;
        bool more = false;
        MDB_val k = ps_mval(from, 8), v;
        rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
        while (rc == 0) {
            if (k.mv_size == 8) {
                uint64_t sid = ps_get_be64(k.mv_data), wall;
                int64_t last = ps_hmap_get(&s->append_wall, k.mv_data, 8, &wall) ? (int64_t)wall : s->opened_wall;
                if (force || now_ns - last >= w) {
                    if (ndue == FCOMPACT_PER_TXN) {
                        more = true;
                        ps_enc_be64(from, sid);
                        break;
                    }
                    due[ndue++] = sid;
                }
            }
            rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
        }
        mdb_cursor_close(cur);
        if (rc != 0 && rc != MDB_NOTFOUND && !more) {
            mdb_txn_abort(txn);
            return ps_lmdb_err(err, rc, "reading float heads");
        }
        for (size_t i = 0; i < ndue && ret == 0; i++) {
            uint8_t kb[16];
            MDB_val hk;
            int64_t min_t, max_t;
            size_t plen = 0;
            uint64_t ptxn = 0;
            ps_buf_t copy = PS_BUF_INIT; /* the chunk, assembled (not pointing into the map) */
            if ((ret = head_read(s, txn, due[i], &copy, &plen, &ptxn, &min_t, &max_t, err)) != 0) {
                if (ret == PS_ENOTFOUND)
                    ret = ps_err_set(err, PS_EINTERNAL, "series %llu: float head vanished", (unsigned long long)due[i]);
                ps_buf_dispose(&copy);
                break;
            }
            ps_buf_t closed = PS_BUF_INIT;
            closed_value(copy.data, copy.len, &closed);
            ps_buf_dispose(&copy);
            if ((ret = pack_before(s, txn, NULL, due[i], min_t, max_t, closed.len - 1, err)) != 0) {
                ps_buf_dispose(&closed);
                break;
            }
            ps_key_sid_ts(kb, due[i], t_key(max_t));
            MDB_val ck = ps_mval(kb, 16), cv = ps_mval(closed.data, closed.len);
            rc = put_append(s, txn, DB_FCHUNKS, &ck, &cv);
            ps_buf_dispose(&closed);
            if (rc) {
                ret = ps_lmdb_err(err, rc, "writing float chunk");
                break;
            }
            ps_enc_be64(kb, due[i]);
            hk = ps_mval(kb, 8);
            if ((rc = mdb_del(txn, s->dbi[DB_FHEAD], &hk, NULL)) != 0)
                ret = ps_lmdb_err(err, rc, "deleting float head");
            else if (plen > 0)
                ret = prefix_del(s, txn, ptxn, due[i], err);
        }
        if (ret == 0 && ndue > 0 && (rc = mdb_txn_commit(txn)) != 0)
            ret = ps_lmdb_commit_err(s, err, rc, "committing compaction");
        else if (ret != 0 || ndue == 0)
            mdb_txn_abort(txn);
        if (ndue > 0 || ret)
            ps_fstate_clear(s); /* the cached heads are gone (or not: reload either way) */
        if (ret)
            return ret;
        *nchunks += (uint32_t)ndue;
        if (!more)
            return 0;
    }
}

static void touch(uint64_t **touched, size_t *n, size_t *cap, uint64_t sid)
{
    if (*n == *cap) {
        *cap = *cap ? *cap * 2 : 64;
        *touched = ps_xrealloc(*touched, *cap * sizeof(uint64_t));
    }
    (*touched)[(*n)++] = sid;
}

/* Deletes the float heads whose newest sample is older than cutoff (ns) and adds their series
 * to touched. (Closed float chunks are dropped with the profile chunks, by key.) */
int ps_fretain(ps_store_t *s, MDB_txn *txn, int64_t cutoff_ns, uint64_t **touched, size_t *ntouched, size_t *cap,
               ps_err_t *err)
{
    MDB_cursor *cur;
    int rc = mdb_cursor_open(txn, s->dbi[DB_FHEAD], &cur), ret = 0;
    if (rc)
        return ps_lmdb_err(err, rc, "opening float head cursor");
    uint64_t *del = NULL, *dtxn = NULL; /* the series, and the transactions of their prefixes */
    size_t ndel = 0, capdel = 0, ntxn = 0, captxn = 0;
    MDB_val k, v;
    rc = mdb_cursor_get(cur, &k, &v, MDB_FIRST);
    ps_buf_t head = PS_BUF_INIT;
    while (rc == 0) {
        int64_t min_t, max_t;
        size_t plen;
        uint64_t ptxn;
        if (k.mv_size == 8) {
            uint64_t sid = ps_get_be64(k.mv_data);
            ps_buf_reset(&head);
            if ((ret = head_value(s, txn, sid, &v, &head, &plen, &ptxn, &min_t, &max_t, err)) != 0)
                break;
            if (max_t < floor_div(cutoff_ns, 1000000) || (max_t == floor_div(cutoff_ns, 1000000) &&
                                                           t_key(max_t) < cutoff_ns)) {
                touch(&del, &ndel, &capdel, sid);
                touch(&dtxn, &ntxn, &captxn, plen > 0 ? ptxn : 0);
            }
        }
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    ps_buf_dispose(&head);
    if (ret == 0 && rc != MDB_NOTFOUND)
        ret = ps_lmdb_err(err, rc, "applying retention to float heads");
    for (size_t i = 0; i < ndel && ret == 0; i++) {
        uint8_t kb[8];
        ps_enc_be64(kb, del[i]);
        MDB_val dk = ps_mval(kb, 8);
        if ((rc = mdb_del(txn, s->dbi[DB_FHEAD], &dk, NULL)) != 0)
            ret = ps_lmdb_err(err, rc, "applying retention to float heads");
        else if (dtxn[i] == 0 || (ret = prefix_del(s, txn, dtxn[i], del[i], err)) == 0)
            touch(touched, ntouched, cap, del[i]);
    }
    free(dtxn);
    free(del);
    return ret;
}

/* ---- reading ---- */

typedef struct fwalk {
    ps_reader_t *r;
    uint64_t sid;
    int64_t mint, maxt;
    ps_err_t *err;
    /* one of: */
    int (*on_samples)(void *ctx, const ps_fsample_t *s, size_t n);
    int (*on_chunk)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n);
    void *ctx;
    bool past;              /* a chunk starting after maxt was met: the walk is over */
    ps_buf_t xor;           /* on_chunk: a dense chunk transcoded (fwalk_run disposes of it) */
    ps_fsample_t buf[128];
} fwalk_t;

/* damaged() "packed chunks: a chunk holds first..last, not min_t..max_t" when a packed entry's
 * chunk is not within the bounds the entry gives (check), else 0 */
static int fwalk_bounds(fwalk_t *w, bool check, int64_t first, int64_t last, int64_t min_t, int64_t max_t,
                        const char *what)
{
    if (!check || (first == min_t && last == max_t))
        return 0;
    ps_err_t why;
    ps_err_set(&why, PS_ECORRUPT, "packed chunks: a chunk holds %lld..%lld, not %lld..%lld", (long long)first,
               (long long)last, (long long)min_t, (long long)max_t);
    return damaged(w->err, w->sid, what, &why);
}

/* Visits one XOR chunk; check: its first and last sample must be [min_t, max_t]. 0 to go on (or
 * w->past set: stop), else what a callback returned or an error. */
static int fwalk_chunk(fwalk_t *w, const uint8_t *b, size_t len, bool check, int64_t min_t, int64_t max_t,
                       const char *what)
{
    ps_err_t why;
    if (w->on_chunk) {
        int64_t cmin = 0, cmax = 0;
        if (xor_bounds(b, len, &cmin, &cmax, NULL, &why) != 0)
            return damaged(w->err, w->sid, what, &why);
        if (fwalk_bounds(w, check, cmin, cmax, min_t, max_t, what) != 0)
            return PS_ECORRUPT;
        if (cmin > w->maxt) {
            w->past = true;
            return 0;
        }
        if (cmax < w->mint)
            return 0;
        return w->on_chunk(w->ctx, cmin, cmax, b, len);
    }
    ps_xor_iter_t it;
    ps_xor_iter_init(&it, b, len);
    size_t n = 0, k = 0;
    int64_t first = 0, last = 0;
    int ret = 0;
    while (ps_xor_iter_next(&it)) {
        if (k++ == 0) {
            first = it.t;
            if (it.t > w->maxt)
                w->past = true; /* the rest is still validated */
        }
        last = it.t;
        if (w->past || it.t < w->mint || it.t > w->maxt)
            continue;
        w->buf[n].t = it.t;
        w->buf[n].v = it.v;
        if (++n == sizeof(w->buf) / sizeof(w->buf[0])) {
            if ((ret = w->on_samples(w->ctx, w->buf, n)) != 0)
                return ret;
            n = 0;
        }
    }
    if (ps_xor_iter_err(&it, &why) != 0)
        return damaged(w->err, w->sid, what, &why);
    if (k == 0) {
        ps_err_set(&why, PS_ECORRUPT, "xorchunk: no samples");
        return damaged(w->err, w->sid, what, &why);
    }
    if (fwalk_bounds(w, check, first, last, min_t, max_t, what) != 0)
        return PS_ECORRUPT;
    return n > 0 ? w->on_samples(w->ctx, w->buf, n) : 0;
}

/* Visits one dense chunk written with tbase, as fwalk_chunk: its samples, or for on_chunk the XOR
 * chunk it transcodes to (the bytes of the XOR chunk it was made from). */
static int fwalk_dense(fwalk_t *w, const uint8_t *b, size_t len, int64_t tbase, bool check, int64_t min_t,
                       int64_t max_t, const char *what)
{
    ps_err_t why;
    int64_t *t;
    uint64_t *v;
    uint32_t k;
    if (ps_fdense_decode(b, len, tbase, &t, &v, &k, &why) != 0)
        return damaged(w->err, w->sid, what, &why);
    int ret = fwalk_bounds(w, check, t[0], t[k - 1], min_t, max_t, what);
    if (ret == 0 && t[0] > w->maxt) {
        w->past = true;
    } else if (ret == 0 && t[k - 1] >= w->mint && w->on_chunk) {
        ps_buf_reset(&w->xor);
        ps_xor_app_t a;
        ps_xor_app_init(&a, &w->xor);
        for (uint32_t i = 0; i < k && ret == 0; i++)
            if (ps_xor_app_append(&a, t[i], bitsf(v[i]), &why) != 0)
                ret = damaged(w->err, w->sid, what, &why);
        if (ret == 0)
            ret = w->on_chunk(w->ctx, t[0], t[k - 1], w->xor.data, w->xor.len);
    } else if (ret == 0 && t[k - 1] >= w->mint) {
        size_t n = 0;
        for (uint32_t i = 0; i < k && ret == 0; i++) {
            if (t[i] < w->mint)
                continue;
            if (t[i] > w->maxt) {
                w->past = true;
                break;
            }
            w->buf[n].t = t[i];
            w->buf[n].v = bitsf(v[i]);
            if (++n == sizeof(w->buf) / sizeof(w->buf[0])) {
                ret = w->on_samples(w->ctx, w->buf, n);
                n = 0;
            }
        }
        if (ret == 0 && n > 0)
            ret = w->on_samples(w->ctx, w->buf, n);
    }
    free(t);
    free(v);
    return ret;
}

/* Visits one stored value (a closed chunk, packed chunks, or the head), validating what it
 * reads: of packed chunks, the bounds of all and the chunks of the range. 0 to go on (or w->past
 * set: stop), else what a callback returned or an error. */
static int fwalk_one(fwalk_t *w, const MDB_val *v, const char *what)
{
    const uint8_t *b = v->mv_data;
    if (v->mv_size >= 1 && b[0] == PS_FCHUNK_ENC_XOR)
        return fwalk_chunk(w, b + 1, v->mv_size - 1, false, 0, 0, what);
    bool head = strcmp(what, "head") == 0;
    if (v->mv_size >= 1 && b[0] == PS_FCHUNK_ENC_DENSE && !head)
        return fwalk_dense(w, b + 1, v->mv_size - 1, 0, false, 0, 0, what);
    if (v->mv_size < 1 || (b[0] != PS_FCHUNK_ENC_PACKED && b[0] != PS_FCHUNK_ENC_DPACKED) || head)
        return damaged(w->err, w->sid, what, NULL);
    bool dense = b[0] == PS_FCHUNK_ENC_DPACKED;
    punpack_t u;
    pentry_t e;
    ps_err_t why;
    int r, ret = 0;
    punpack_init(&u, b + 1, v->mv_size - 1);
    while ((r = punpack_next(&u, &e, &why)) == 1) {
        if (w->past || e.max_t < w->mint)
            continue; /* the bounds of the rest are still validated */
        if (e.min_t > w->maxt) {
            w->past = true;
            continue;
        }
        if ((ret = dense ? fwalk_dense(w, e.chunk, e.len, e.min_t, true, e.min_t, e.max_t, what)
                         : fwalk_chunk(w, e.chunk, e.len, true, e.min_t, e.max_t, what)) != 0)
            return ret;
    }
    return r < 0 ? damaged(w->err, w->sid, what, &why) : 0;
}

static int fwalk_run_(fwalk_t *w);

/* Closed chunks from the first whose max_t >= mint, then the head (newer than every chunk). */
static int fwalk_run(fwalk_t *w)
{
    int ret = fwalk_run_(w);
    ps_buf_dispose(&w->xor);
    return ret;
}

static int fwalk_run_(fwalk_t *w)
{
    if (w->mint < w->r->min_ms)
        w->mint = w->r->min_ms; /* the retention clamp (internal.h) */
    if (w->mint > w->maxt)
        return 0;
    MDB_cursor *cur;
    uint8_t kb[16];
    MDB_val k, v;
    int ret = 0, rc = mdb_cursor_open(w->r->txn, w->r->store->dbi[DB_FCHUNKS], &cur);
    if (rc)
        return ps_lmdb_err(w->err, rc, "opening float chunk cursor");
    int64_t from = w->mint <= -T_MS_MAX ? INT64_MIN : w->mint > T_MS_MAX ? INT64_MAX : t_key(w->mint);
    ps_key_sid_ts(kb, w->sid, from);
    k = ps_mval(kb, 16);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    while (rc == 0 && k.mv_size == 16 && ps_get_be64(k.mv_data) == w->sid) {
        if ((ret = fwalk_one(w, &v, "chunk")) != 0 || w->past)
            break;
        rc = mdb_cursor_get(cur, &k, &v, MDB_NEXT);
    }
    mdb_cursor_close(cur);
    if (ret != 0 || w->past)
        return ret;
    if (rc != 0 && rc != MDB_NOTFOUND)
        return ps_lmdb_err(w->err, rc, "reading float chunks");
    ps_buf_t head = PS_BUF_INIT;
    size_t plen;
    uint64_t ptxn;
    ret = head_read(w->r->store, w->r->txn, w->sid, &head, &plen, &ptxn, NULL, NULL, w->err);
    if (ret == PS_ENOTFOUND) {
        ret = 0; /* no head */
    } else if (ret == 0) {
        v = ps_mval(head.data, head.len);
        ret = fwalk_one(w, &v, "head");
    }
    ps_buf_dispose(&head);
    return ret;
}

int ps_reader_series_kind(ps_reader_t *r, uint64_t sid, ps_series_kind_t *kind, ps_err_t *err)
{
    uint8_t k[8];
    ps_enc_be64(k, sid);
    MDB_val key = ps_mval(k, 8), val;
    int rc = mdb_get(r->txn, r->store->dbi[DB_SERIES], &key, &val);
    if (rc == MDB_NOTFOUND)
        return PS_ENOTFOUND;
    if (rc != 0)
        return ps_lmdb_err(err, rc, "series");
    ps_series_rec_t rec;
    if (ps_series_rec_decode(val.mv_data, val.mv_size, &rec) != 0)
        return ps_err_set(err, PS_ECORRUPT, "series %llu: damaged record", (unsigned long long)sid);
    *kind = rec.kind;
    return 0;
}

typedef struct totals_ctx {
    int (*cb)(void *ctx, const ps_fsample_t *s, size_t n);
    void *ctx;
} totals_ctx_t;

static int on_profile(void *ctx, const ps_stored_profile_t *p)
{
    totals_ctx_t *c = ctx;
    ps_fsample_t s = {floor_div(p->ts, 1000000), (double)p->total};
    return c->cb(c->ctx, &s, 1);
}

int ps_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                      int (*cb)(void *ctx, const ps_fsample_t *s, size_t n), void *ctx, ps_err_t *err)
{
    if (mint > maxt)
        return 0;
    ps_series_kind_t kind;
    int ret = ps_reader_series_kind(r, sid, &kind, err);
    if (ret == PS_ENOTFOUND)
        return 0;
    if (ret)
        return ret;
    if (kind == PS_SERIES_FLOAT) {
        fwalk_t *w = ps_xcalloc(1, sizeof(*w));
        w->r = r, w->sid = sid, w->mint = mint, w->maxt = maxt, w->err = err, w->on_samples = cb, w->ctx = ctx;
        ret = fwalk_run(w);
        free(w);
        return ret;
    }
    /* ms -> ns bounds, saturating: profile ts in [mint*1e6, maxt*1e6 + 999999] has floor(ts/1e6) in range */
    int64_t lo = mint <= -T_MS_MAX ? INT64_MIN : mint >= T_MS_MAX ? INT64_MAX : mint * 1000000;
    int64_t hi = maxt >= T_MS_MAX ? INT64_MAX : maxt <= -T_MS_MAX ? INT64_MIN : maxt * 1000000 + 999999;
    totals_ctx_t c = {cb, ctx};
    return ps_reader_profiles(r, sid, lo, hi, true, on_profile, &c, err);
}

int ps_reader_xor_chunks(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                         int (*cb)(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n),
                         void *ctx, ps_err_t *err)
{
    fwalk_t w = {.r = r, .sid = sid, .mint = mint, .maxt = maxt, .err = err, .on_chunk = cb, .ctx = ctx};
    return fwalk_run(&w); /* a profile series has neither fchunks nor an fhead */
}

typedef struct last_ctx {
    int64_t t;
    bool found;
} last_ctx_t;

static int on_last(void *ctx, const ps_fsample_t *s, size_t n)
{
    last_ctx_t *c = ctx;
    c->t = s[n - 1].t;
    c->found = true;
    return 0;
}

#define STOP_FOUND 1

static int on_any(void *ctx, const ps_fsample_t *s, size_t n)
{
    (void)s, (void)n;
    *(bool *)ctx = true;
    return STOP_FOUND;
}

/* The newest sample in [start, end] (ns): the head if it has one there, else the newest chunk
 * that does (the chunks after the first one with max_t >= maxt all start past maxt). */
int ps_freader_latest(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, int64_t *ts, ps_err_t *err)
{
    int64_t mint, maxt;
    ns_to_ms(start, end, &mint, &maxt);
    if (mint > maxt)
        return PS_ENOTFOUND;
    fwalk_t *w = ps_xcalloc(1, sizeof(*w));
    last_ctx_t c = {0, false};
    w->r = r, w->sid = sid, w->err = err, w->on_samples = on_last, w->ctx = &c;
    /* narrow the walk to the chunk holding maxt's neighbourhood: from the newest chunk whose
     * max_t < maxt (its max_t is a sample <= maxt) onwards */
    MDB_cursor *cur;
    uint8_t kb[16];
    MDB_val k, v;
    int ret = 0, rc = mdb_cursor_open(r->txn, r->store->dbi[DB_FCHUNKS], &cur);
    if (rc) {
        free(w);
        return ps_lmdb_err(err, rc, "opening float chunk cursor");
    }
    int64_t at = maxt > T_MS_MAX ? INT64_MAX : maxt < -T_MS_MAX ? INT64_MIN : t_key(maxt);
    ps_key_sid_ts(kb, sid, at);
    k = ps_mval(kb, 16);
    rc = mdb_cursor_get(cur, &k, &v, MDB_SET_RANGE);
    rc = rc == 0 ? mdb_cursor_get(cur, &k, &v, MDB_PREV) : rc == MDB_NOTFOUND ? mdb_cursor_get(cur, &k, &v, MDB_LAST) : rc;
    int64_t from = mint;
    if (rc == 0 && k.mv_size == 16 && ps_get_be64(k.mv_data) == sid) {
        int64_t prev_max = floor_div(ps_ts_unkey(ps_get_be64((const uint8_t *)k.mv_data + 8)), 1000000);
        if (prev_max > from)
            from = prev_max;
    } else if (rc != 0 && rc != MDB_NOTFOUND) {
        ret = ps_lmdb_err(err, rc, "reading float chunks");
    }
    mdb_cursor_close(cur);
    if (ret == 0) {
        w->mint = from;
        w->maxt = maxt;
        ret = fwalk_run(w);
    }
    free(w);
    if (ret)
        return ret;
    if (!c.found)
        return PS_ENOTFOUND;
    *ts = c.t * 1000000;
    return 0;
}

int ps_freader_has_data(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err)
{
    int64_t mint, maxt;
    ns_to_ms(start, end, &mint, &maxt);
    if (mint > maxt)
        return 0;
    bool any = false;
    fwalk_t *w = ps_xcalloc(1, sizeof(*w));
    w->r = r, w->sid = sid, w->mint = mint, w->maxt = maxt, w->err = err, w->on_samples = on_any, w->ctx = &any;
    int ret = fwalk_run(w);
    free(w);
    if (ret != 0 && !(ret == STOP_FOUND && any))
        return ret;
    return any ? 1 : 0;
}
