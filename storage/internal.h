/*
 * internal.h - what the storage/ files share and nothing else sees: the LMDB schema table,
 * the store struct, the writer's caches, and key helpers. Key layouts are in docs/FORMAT.md.
 */
#ifndef PS_STORAGE_INTERNAL_H
#define PS_STORAGE_INTERNAL_H

#include <lmdb.h>
#include <pthread.h>
#include <stdatomic.h>

#include "core/hash.h"
#include "core/timeutil.h"
#include "core/varint.h"
#include "store.h"
#include "txn.h"

/* Whether cursor c stands on a key sid(8 BE) x(8 BE) of series sid: the keys of the per-series
 * databases (head, chunks, float chunks and heads). */
static inline bool ps_cur_in_series(const ps_cur_t *c, uint64_t sid)
{
    return c->k.mv_size == 16 && ps_get_be64(c->k.mv_data) == sid;
}

/* Named databases. The order is the index into ps_store_t.dbi; names are on disk forever. */
enum {
    DB_INFO,        /* "schema" -> u32 BE version; "next" -> next ids */
    DB_SYM,         /* kind(1) id(8 BE) -> symbol content */
    DB_SYM_HASH,    /* kind(1) hash(8 BE) -> dup ids(8 BE) */
    DB_TREE,        /* parent(8 BE) item(8 BE) -> node(8 BE) */
    DB_NODES,       /* node(8 BE) -> parent(8 BE) item(8 BE) */
    DB_SERIES,      /* sid(8 BE) -> series record */
    DB_SERIES_HASH, /* hash(labels)(8 BE) -> dup sids(8 BE) */
    DB_POSTINGS,    /* name 0x00 value -> dup sids(8 BE) */
    DB_HEAD,        /* sid(8 BE) ts(8 BE, sign flipped) -> head record */
    DB_CHUNKS,      /* sid(8 BE) max_ts(8 BE, sign flipped) -> chunk */
    DB_FCHUNKS,     /* sid(8 BE) max_t * 1e6 (8 BE, sign flipped) -> 0x02 XOR chunk (closed), 0x03 packed chunks, 0x06 dense, 0x07 packed dense */
    DB_FHEAD,       /* sid(8 BE) -> the open chunk of a float series: 0x02 XOR chunk, or 0x04 its tail */
    DB_META,        /* metric family name -> metadata record */
    DB_FPREFIX,     /* txn id(8 BE) sid(8 BE) -> 0x05 the stable start of an open chunk whose fhead is a tail (schema 3) */
    DB_FWDLOG,      /* seq(8 BE) -> wall ns(8 BE) + the entry's bytes (made by src/forward; fwdlog.c) */
    DB_FWDCURSOR,   /* endpoint name -> seq(8 BE): the last entry that endpoint acknowledged */
    DB_SPANS,       /* hour(4 BE) span(8) sid(8 BE) ts(8, sign flipped) -> empty: the span index (schema 5; spans.c) */
    DB_UUIDS,       /* hour(4 BE) uuid(16) sid(8 BE) ts(8) -> empty: the profiles a client-given id names (schema 5) */
    DB_SPANPARTS,   /* sid(8 BE) ts(8, sign flipped) -> the span parts of that profile (schema 5; spans.c) */
    DB_ADHOC,       /* ad hoc profile id -> 0x01 uploaded ms(8 BE) + the file as uploaded (adhoc.c) */
    DB_UNSYM,       /* hour(4 BE) build id string id(8 BE) -> 0x01 counts of frames without symbols (schema 6; unsym.c) */
    DB_ROLLUPS,     /* sid(8 BE) level(1) window start(8 BE, sign flipped) -> 0x01 a window's merged profiles (schema 8; rollup.c) */
    DB_LTIMES,      /* name, or name 0x00 value -> 0x01 first(8 BE) last(8 BE): the label index's times (schema 10; ltimes.c) */
    DB_FLOG,        /* txn id(8 BE) -> 0x01 the samples that transaction logged instead of rewriting fheads (schema 12; float_log.c) */
    DB_PTIMES,      /* as DB_LTIMES, of profile series only: the Pyroscope label APIs' times (schema 15; ltimes.c) */
    DB_COUNT
};

/* Symbol kinds (key prefix of DB_SYM / DB_SYM_HASH). Fixed forever. */
enum { SYM_STRING = 1, SYM_MAPPING = 2, SYM_FUNCTION = 3, SYM_LOCATION = 4, SYM_LABELSET = 5, SYM_KINDS = 6 };

/* A tree item with this bit set is a sample label set id, not a location id. */
#define PS_ITEM_LABELSET (1ull << 63)

/* Record encodings (first byte of the value). */
#define PS_SERIES_REC_V1 1    /* a profile series (schema 1 and 2) */
#define PS_SERIES_REC_FLOAT 2 /* a float series: enc, labels */
#define PS_HEAD_REC_V1 1
#define PS_FLOAT_CHUNK_ENC_XOR 2   /* float chunks and heads: this byte, then the XOR chunk (never 1: profile chunks) */
#define PS_FLOAT_CHUNK_ENC_PACKED 3 /* closed float chunks: this byte, then several XOR chunks with their bounds */
#define PS_FLOAT_CHUNK_ENC_DENSE 6  /* closed float chunk (schema 4): this byte, then a dense chunk (float_dense.h) */
#define PS_FLOAT_CHUNK_ENC_DPACKED 7 /* closed float chunks (schema 4): as PS_FLOAT_CHUNK_ENC_PACKED, dense chunks */
#define PS_FLOAT_HEAD_ENC_TAIL 4    /* fhead: this byte, p <uvarint>, txn <uvarint>, the chunk's 2 header bytes, its bytes from p on */
#define PS_FLOAT_PREFIX_ENC 5       /* fprefix: this byte, then bytes [2, p) of the open chunk */
#define PS_FLOAT_HEAD_ENC_PADDED 10 /* fhead (schema 11): this byte, p <uvarint> (0: no prefix), txn <uvarint>, len <u16 BE>,
                                     * len bytes (the chunk's 2 header bytes, its bytes from max(p, 2) on), zero bytes */
#define PS_FLOAT_HEAD_PAD_STEP 16   /* a padded fhead record grows in steps of this many bytes */
#define PS_FLOAT_HEAD_SPLIT_MIN 32  /* an open chunk of fewer bytes is stored whole in fhead (0x02) */
#define PS_FLOAT_HEAD_TAIL_MAX 128  /* a tail longer than this moves into fprefix at once */
#define PS_FLOAT_HEAD_TURNS 16      /* else a series' prefix is rewritten in one flush of 16 (by sid / 64) */
#define PS_FLOG_MAX_PAGES 256        /* a write whose samples would make flog hold more pages checkpoints (floats.c) */
#define PS_FLOAT_PACK_MAX_BYTES 4080 /* a packed value fills at most one 4 KiB LMDB overflow page (16-byte header) */
#define PS_FLOAT_PACK_MAX_SPAN_MS (24ll * 3600 * 1000) /* nor spans a day (or a tenth of the retention) */
#define PS_META_REC_V1 1
#define PS_UNSYM_REC_V1 1

/* Next ids, persisted in DB_INFO "next". */
typedef struct ps_next_ids {
    uint64_t sym[SYM_KINDS]; /* next id per symbol kind (index = kind) */
    uint64_t node;
    uint64_t series;
} ps_next_ids_t;

/* Per-series state the writer keeps (mirrors the series record). */
typedef struct ps_series_state {
    uint8_t kind;           /* ps_series_kind_t */
    int64_t last_ts;
    int64_t head_min_ts;
    uint32_t head_count;
    int64_t last_chunk_max; /* INT64_MIN if none */
} ps_series_state_t;

/* The writer's caches: what recent write transactions looked up or changed, so that an append
 * asks LMDB again for none of it. Only the writer (ps_store_writer_t, the thread that calls
 * ps_store_write and the compactor) touches them; all but the due list are dropped together (ps_sym_caches_clear)
 * whenever a transaction fails or changed records under them. */
typedef struct ps_wcache {
    ps_hmap_t sym_cache[SYM_KINDS]; /* per kind: content -> id (hashed as the index: ps_hash64(content, n,
                                     * kind)); a map per kind, so a look-up needs no key of kind + content */
    ps_hmap_t sym_words[3];         /* functions [0] and locations [1] by their ids as words (write.c,
                                     * fn_words/loc_words), not by content: a hit needs neither the
                                     * varint encoding nor its hash. Such a symbol is in these only; a
                                     * symbol whose ids do not fit is in sym_cache. [2]: a sample's
                                     * label list as words (lset_words) -> its label set's id */
    ps_hmap_t tree_cache;   /* parent(8) item(8) -> node */
    ps_hmap_t stack_cache;  /* item ids of a whole stack -> node */
    ps_hmap_t series_cache; /* label encoding -> sid */
    ps_hmap_t state_index;  /* sid(8) -> ps_series_state_t pointer */
    ps_series_state_t **states; /* every state allocated, for freeing */
    size_t nstates, capstates;
    uint64_t *due;          /* series whose head reached compact_max_profiles */
    size_t ndue, capdue;
    /* float series (floats_append.c): the open chunk and appender of each series written lately,
     * a cache of what the write transaction holds */
    ps_hmap_t float_state_index; /* sid(8) -> index in float_states */
    ps_hmap_t float_label_index; /* label encoding -> index in float_states: an append finds its
                                  * series' state in one look-up (the labels' sid, then the state, is
                                  * three); the same life as float_states */
    ps_buf_t float_key;          /* scratch: an append's label encoding */
    uint64_t float_key_hash;     /* its ps_hash64(, 0) */
    struct ps_float_state **float_states;
    size_t nfloat_states, capfloat_states;
    uint64_t float_state_bytes;
    struct ps_float_state **float_dirty; /* heads changed in the current write transaction */
    size_t nfloat_dirty, capfloat_dirty;
    struct ps_flog_pend *flog_pend; /* the samples this transaction logs (floats_append.c) */
    size_t nflog_pend, capflog_pend;
} ps_wcache_t;

struct ps_store {
    MDB_env *env;
    MDB_dbi dbi[DB_COUNT];
    uint32_t absent;        /* bit i: database i is missing (a read-only open of an older directory) */
    ps_store_opts_t opts;
    char *dir;
    int upgraded_from;      /* the schema version ps_store_open upgraded, or 0 */
    atomic_bool has_writer; /* a ps_store_writer_t is open */
    /* durability (txn.c): the environment is opened MDB_NOMETASYNC, so a commit's meta page is
     * durable only after a later sync: last_txn, the newest write transaction committed with
     * changes; durable_txn, the newest one known durable (ps_store_sync) */
    _Atomic uint64_t last_txn, durable_txn;
    /* space (env.c): the map is opened map_headroom bytes larger than opts.map_size, which only
     * writes respect (ps_store_space_check), so retention and compaction can still delete; the
     * disk reserve file is given up when the file system is full */
    uint64_t map_headroom;
    bool reserve_held;      /* <dir>/space.reserve exists with opts.disk_reserve bytes */
    /* the forwarding log (fwdlog.c): the hook that makes the entry of a write's stored float
     * samples (NULL: forwarding off) */
    _Atomic(ps_store_forward_floats_fn) fwd_floats;
    void *_Atomic fwd_ctx;
    ps_store_record_fn record;   /* ps_store_set_recorder: before the writer starts */
    void *record_ctx;
    ps_store_symbolize_fn symbolize; /* ps_store_set_symbolizer: before any reader */
    void *symbolize_ctx;
    /* series.c: the pending postings of the newest read snapshot that built them, shared by the
     * read transactions of that snapshot (pend_txn: its id), under pend_mu */
    pthread_mutex_t pend_mu;
    struct ps_pend_posts *pend_shared;
    uint64_t pend_txn;
};
/* series.c: the shared pending postings let go (at a merge's end, at close) */
void ps_pend_posts_unshare(ps_store_t *s);

/* writer.c: series id -> int64, the one value the writer keeps for every live series (when it
 * last got data): open addressing over 16-byte slots {sid, value} without a malloc per entry
 * (about 29 B a series at the table's average load, against some 65 B in a ps_hmap_t with its
 * key copies). Id 0 marks an empty slot; series ids start at 1, but id 0 has a field of its own. */
typedef struct ps_walls {
    uint64_t *slots; /* 2 * cap words: sid, value */
    size_t cap, count;
    bool has_zero;
    int64_t zero;
} ps_walls_t;
void ps_walls_set(ps_walls_t *m, uint64_t sid, int64_t v);
bool ps_walls_get(const ps_walls_t *m, uint64_t sid, int64_t *v);
/* keeps only the entries whose sid is not in drop[0..ndrop) (ascending) */
void ps_walls_drop(ps_walls_t *m, const uint64_t *drop, size_t ndrop);
/* keeps only the entries whose value is not in [from, until] */
void ps_walls_expire(ps_walls_t *m, int64_t from, int64_t until);
void ps_walls_dispose(ps_walls_t *m);

/* series.c: the writer's pending series: {hash of the label encoding, sid} in open addressing over
 * 16-byte slots (about 21 B a series, where a ps_hmap_t keeps a copy of the labels), as many sids
 * a hash as were added (a look-up checks each one's record); hash 0 marks an empty slot (a label
 * hash of 0 is kept as 1). */
typedef struct ps_pending {
    uint64_t *slots; /* 2 * cap words: hash, sid */
    size_t cap, count;
} ps_pending_t;

/* The label times records the writer noted or read lately (ltimes.c): a note whose time a record
 * already holds changes nothing, and then asks LMDB nothing. Records only widen but where a series
 * is deleted (retention, which drops the caches after): dropped with the caches (ps_sym_caches_clear),
 * so with every transaction that failed; past PS_LT_MEMO_MAX records it starts again from empty. */
typedef struct ps_lt_memo {
    ps_hmap_t map[3];    /* DB_LTIMES keys, DB_PTIMES keys, DB_PTIMES type records (prefix and type)
                          * -> index in times */
    int64_t (*times)[2]; /* a record's first and last as last seen */
    size_t n, cap;
    bool on;             /* the maps are made */
} ps_lt_memo_t;
#define PS_LT_MEMO_MAX 65536
/* The store's writer (writer.c): state of the one writing thread (ps_store_write, the compactor,
 * retention, ps_store_forward_advance), which no reader sees. */
struct ps_store_writer {
    ps_store_t *s;
    ps_wcache_t *wc;        /* the writer's caches */
    ps_next_ids_t next;     /* the ids the next write gives (saved with each write) */
    /* sid(8) -> wall clock (ns) of the last committed append in this process. Not a cache:
     * ps_sym_caches_clear keeps it (the idle rule of the compactor needs it); retention drops
     * the entries of the series it deletes, and each compaction those idle for the window (no
     * entry reads as opened_wall, which is no later: the rule's answer stays the same). */
    ps_walls_t append_wall;
    int64_t opened_wall;    /* when the writer was opened (the idle rule's start) */
    uint64_t float_flushes; /* ps_float_write_flush calls: whose turn it is to rewrite prefixes */
    bool flog_pending;      /* this writer logged float samples since its last checkpoint */
    uint64_t fwd_next;      /* the forwarding log's next sequence number (DB_INFO "fwdnext") */
    ps_buf_t fwd_mask, fwd_buf; /* scratch: the stored-sample masks, the float entry */
    ps_buf_t rec_all;       /* scratch: a write's float appends and its recorder's, one array */
    ps_buf_t append_bufs[7]; /* a profile's encodings (write.c), a series' labels and record
                              * (series.c), kept for the next (growing them anew was ten reallocs a
                              * profile); one of more than 1 MiB is let go: ps_wbuf_take/give */
    ps_buf_t ltimes_key;    /* scratch: ps_ltimes_note's keys */
    ps_lt_memo_t lt_memo;   /* ps_ltimes_note's records seen lately */
    struct ps_unsym_acc *unsym; /* unsym.c: the counts of frames without symbols the current write adds */
    bool defer_sync;        /* ps_store_writer_defer_sync */
    bool rollfill_done;     /* rollup.c: the backfill was found done (DB_INFO "rollfill" 00) */
    /* series.c: the series past the watermark series_w (DB_INFO "seriesw"), not in series_hash yet,
     * loaded at open and grown by each new series; entries of undone transactions or deleted
     * series may stay (a look-up checks the record). A merge (ps_series_index_now) sets
     * series_w_new, taken with the set emptied once its last transaction commits. */
    ps_pending_t series_pending;
    uint64_t series_w, series_w_new;
    bool series_w_merged;
};

/* txn.c: every commit up to id is known durable (a sync that started after they committed ended) */
void ps_store_durable_advance(ps_store_t *s, uint64_t id);
/* txn.c: makes every commit up to id durable (an fdatasync unless one since has); see store.h */
int ps_store_sync(ps_store_t *s, uint64_t id, ps_err_t *err);

/* reserve.c: the disk reserve. After a commit failed with PS_ENOSPACE for a full disk:
 * ps_store_space_release gives it up; ps_store_reserve_take takes it (again): true once the file
 * holds opts.disk_reserve bytes; ps_store_reserve_fit caps opts.disk_reserve at 1/16 of the disk. */
void ps_store_space_release(ps_store_t *s);
bool ps_store_reserve_take(ps_store_t *s);
void ps_store_reserve_fit(ps_store_t *s);

struct ps_reader {
    ps_store_t *store;
    ps_txn_t txn;
    /* the retention clamp: nothing older than now - --retention at ps_reader_begin is read (ns; and
     * in ms for float series, rounded up); INT64_MIN without retention */
    int64_t min_ts, min_ms;
    bool no_rollups; /* ps_reader_rollups(r, false): merges read the raw profiles only */
    /* ps_reader_has_data's cursors, opened at its first call and kept to the end: a label listing
     * over a range asks it for up to every series */
    ps_cur_t hd_chunks, hd_head;
    bool hd_open;
};

/** reserve.c: the mount point of path (the last directory up from it on the same device) into out. */
void ps_store_mount_point(const char *path, char *out, size_t size);

static inline MDB_val ps_mval(const void *p, size_t n)
{
    MDB_val v = {n, (void *)p};
    return v;
}

/* env.c: the id counters as committed in txn's snapshot (all 1 in a new store) */
int ps_store_next_read(ps_txn_t *txn, ps_next_ids_t *n, ps_err_t *err);

/* The writer's buffer i (append_bufs), emptied; ps_wbuf_give hands it back */
enum { BUF_SYMS, BUF_ENC, BUF_STACKS, BUF_REC, BUF_PREC, BUF_SERIES_ENC, BUF_SERIES_REC };
static inline ps_buf_t ps_wbuf_take(ps_store_writer_t *w, int i)
{
    ps_buf_t b = w->append_bufs[i];
    w->append_bufs[i] = (ps_buf_t)PS_BUF_INIT;
    b.len = 0;
    return b;
}

static inline void ps_wbuf_give(ps_store_writer_t *w, int i, ps_buf_t *b)
{
    if (b->cap > ((size_t)1 << 20) || w->append_bufs[i].data != NULL)
        ps_buf_dispose(b);
    else
        w->append_bufs[i] = *b;
    *b = (ps_buf_t)PS_BUF_INIT;
}

/* datafile.c: PS_ECORRUPT with the sizes if dir's data.mdb cannot be a whole store (before LMDB maps it) */
int ps_store_check_file(const char *dir, ps_err_t *err);

/* writer.c: drops the writer's caches (not append_wall) */
void ps_sym_caches_clear(ps_store_writer_t *w);
/* writer.c: drops only the series caches (labels -> sid, the series' states); between transactions */
void ps_series_caches_clear(ps_store_writer_t *w);
/* writer.c: the counters (ids, forwarding log) saved in / loaded from txn */
int ps_store_save_next(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err);
int ps_store_load_next(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err);

/* symbols.c */
int ps_sym_intern(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t *id, ps_err_t *err);
/* The hash ps_sym_intern_h takes (the symbol index's: ps_hash64(content, n, kind)), its cache slot
 * prefetched: hash a profile's symbols of a kind first, then intern them */
static inline uint64_t ps_sym_hash(ps_store_writer_t *w, int kind, const void *content, size_t n)
{
    uint64_t h = ps_hash64(content, n, (uint64_t)kind);
    ps_hmap_prefetch(&w->wc->sym_cache[kind], h);
    return h;
}
int ps_sym_intern_h(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t h,
                    uint64_t *id, ps_err_t *err);
/* ps_sym_intern_h without the kind's cache (neither asked nor filled): the id of the content in
 * the index, made if it has none (write.c caches functions and locations by their ids instead) */
int ps_sym_store(ps_store_writer_t *w, ps_txn_t *txn, int kind, const void *content, size_t n, uint64_t h,
                 uint64_t *id, ps_err_t *err);
/* The content of symbol (kind, id) into *out: true, false if there is none (or txn failed). */
bool ps_sym_get(ps_txn_t *txn, int kind, uint64_t id, MDB_val *out);
int ps_tree_child(ps_store_writer_t *w, ps_txn_t *txn, uint64_t parent, uint64_t item, uint64_t *node, ps_err_t *err);

/* series.c */
typedef struct ps_series_rec {
    uint8_t kind; /* ps_series_kind_t; a float record has no other fields: they read as empty */
    int64_t last_ts, head_min_ts, last_chunk_max;
    uint32_t head_count;
    const uint8_t *labels;
    size_t labels_len;
} ps_series_rec_t;
void ps_series_rec_encode(const ps_series_rec_t *r, ps_buf_t *out);
int ps_series_rec_decode(const void *p, size_t n, ps_series_rec_t *r);
/* create: make the series, of that kind, if missing; an existing series keeps its own kind
 * ((*st)->kind says which) */
int ps_series_get_or_create(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, bool create, ps_series_kind_t kind,
                            uint64_t *sid, ps_series_state_t **st, ps_err_t *err);
/* the same, for ls found missing earlier in txn (none since created but through the series cache):
 * the series cache is asked, the series index not */
int ps_series_create_absent(ps_store_writer_t *w, ps_txn_t *txn, const ps_labels_t *ls, ps_series_kind_t kind,
                            uint64_t *sid, ps_series_state_t **st, ps_err_t *err);
ps_series_state_t *ps_series_state(ps_store_writer_t *w, uint64_t sid);
/* whether the series record v holds the labels encoded as enc (a damaged one does not) */
bool ps_series_rec_holds(const MDB_val *v, const ps_buf_t *enc);
/* whether series sid's record in txn holds the labels encoded as enc */
bool ps_series_rec_is(ps_txn_t *txn, uint64_t sid, const ps_buf_t *enc);
/* the series index's watermark W (DB_INFO "seriesw": every series up to W is in series_hash, none
 * past it) of txn's snapshot; UINT64_MAX when there is no record (all indexed) */
int ps_series_w_read(ps_txn_t *txn, uint64_t *wm, ps_err_t *err);
int ps_series_w_write(ps_txn_t *txn, uint64_t wm, ps_err_t *err);
/* the writer's pending set and watermark from txn (at open; after ps_store_load_next) */
int ps_series_pending_load(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err);
/* the pending series' series_hash entries written, sorted, in transactions of their own (a slice of
 * the hash space each), then W raised to the last sid given and the set emptied */
int ps_series_index_now(ps_store_writer_t *w, ps_err_t *err);
/* the pending set reached opts.series_pending_max */
bool ps_series_pending_full(const ps_store_writer_t *w);
int ps_series_put_state(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, const ps_series_state_t *st, ps_err_t *err);
int ps_series_delete(ps_store_writer_t *w, ps_txn_t *txn, uint64_t sid, ps_err_t *err);

/* series.c: the postings of the series past W in a transaction's snapshot (schema 14: a merge writes
 * them late, with their series_hash entries): {key, sid}, sorted by key then sid, the keys
 * ("name 0x00 value", as DB_POSTINGS') in keys. Built once a read snapshot (txn->pend, the
 * store's pend_shared; a write transaction's its own).
 * Their sids are all past W, so past every sid DB_POSTINGS holds of the series up to W: a reader
 * appends them to a key's postings; some may be in DB_POSTINGS already (a merge cut short between
 * its transactions, a store of schema 13): those are read once. */
typedef struct ps_pend_post {
    uint64_t pfx;      /* the key's first 8 bytes, big-endian, zero-padded (most compares end here) */
    uint32_t off, len; /* the key: keys.data + off, len bytes (PS_PEND_DEAD set: its series deleted since) */
    uint64_t sid;
} ps_pend_post_t;
#define PS_PEND_DEAD 0x80000000u
typedef struct ps_pend_posts {
    atomic_uint refs; /* the transactions (and the store) holding it */
    uint64_t w; /* W of the snapshot (UINT64_MAX: no watermark, nothing pending) */
    ps_pend_post_t *e;
    size_t n;
    ps_buf_t keys;
} ps_pend_posts_t;
/* txn's pending postings (built at the first call, or those of the same read snapshot built by
 * another transaction; *out empty, n == 0, when nothing is past W) */
int ps_pend_posts(ps_txn_t *txn, const ps_pend_posts_t **out, ps_err_t *err);
/* the index of the first entry >= {key, sid} (n if none) */
size_t ps_pend_lower(const ps_pend_posts_t *p, const void *key, size_t klen, uint64_t sid);
/* the index of the first entry whose key is >= key (n if none) */
size_t ps_pend_seek(const ps_pend_posts_t *p, const void *key, size_t klen);
/* the entries [*lo, *hi) of key (empty: *lo == *hi) */
void ps_pend_range(const ps_pend_posts_t *p, const void *key, size_t klen, size_t *lo, size_t *hi);
static inline const char *ps_pend_key(const ps_pend_posts_t *p, size_t i, size_t *len)
{
    *len = p->e[i].len & ~PS_PEND_DEAD;
    return (const char *)p->keys.data + p->e[i].off;
}
static inline bool ps_pend_dead(const ps_pend_posts_t *p, size_t i)
{
    return (p->e[i].len & PS_PEND_DEAD) != 0;
}
/* the end of the entries of entry i's key */
size_t ps_pend_key_end(const ps_pend_posts_t *p, size_t i);
/* whether entries [lo, hi) (one key's) hold a live series other than sid (0: any) */
bool ps_pend_any(const ps_pend_posts_t *p, size_t lo, size_t hi, uint64_t but);

/* head.c: head record = enc(1) duration(varint) period(varint) total(varint) n(uvarint)
 * then n x (node delta uvarint, value zigzag varint) */
void ps_head_encode(int64_t duration, int64_t period, const uint64_t *nodes, const int64_t *values, uint32_t n,
                    ps_buf_t *out);
int ps_head_decode(const void *p, size_t len, ps_arena_t *arena, ps_stored_profile_t *out);

static inline void ps_key_sid_ts(uint8_t k[16], uint64_t sid, int64_t ts)
{
    ps_enc_be64(k, sid);
    ps_enc_be64(k + 8, ps_ts_key(ts));
}




/* floats*.c (the files share floats.h) */
void ps_float_state_clear(ps_wcache_t *wc);
int ps_float_write(ps_store_writer_t *w, ps_txn_t *txn, ps_float_append_t **items, size_t n, int64_t now, ps_err_t *err);
int ps_float_write_flush(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err);
void ps_meta_rec_encode(const ps_metric_meta_t *m, ps_buf_t *out);
/* One chunk of a packed fchunks value (PS_FLOAT_CHUNK_ENC_PACKED): its first and last sample's t and
 * its bytes (a XOR chunk without the encoding byte). */
typedef struct ps_float_pack_entry {
    int64_t min_t, max_t;
    const uint8_t *chunk;
    size_t len;
} ps_float_pack_entry_t;
/* The records of an open chunk c[0..n) split at p (2 <= p <= n): the fhead tail (PS_FLOAT_HEAD_ENC_TAIL,
 * naming txn, the transaction that wrote the prefix) and the fprefix value (PS_FLOAT_PREFIX_ENC),
 * appended to out. */
void ps_float_head_encode_tail(const uint8_t *c, size_t n, size_t p, uint64_t txn, ps_buf_t *out);
/* The padded fhead record (PS_FLOAT_HEAD_ENC_PADDED) of open chunk c[0..n), split at p (0: not split),
 * appended to out: *size bytes, or, when it needs more, the bytes it needs rounded up to
 * PS_FLOAT_HEAD_PAD_STEP (then *size is the new size). */
void ps_float_head_encode_padded(const uint8_t *c, size_t n, size_t p, uint64_t txn, size_t *size, ps_buf_t *out);
void ps_float_prefix_encode(const uint8_t *c, size_t p, ps_buf_t *out);
/* Appends the packed value of chunks e[0..n) (n >= 1, oldest first, each newer than the last) to out:
 * encoding enc (PS_FLOAT_CHUNK_ENC_PACKED: XOR chunks; PS_FLOAT_CHUNK_ENC_DPACKED: dense chunks written
 * with tbase = their min_t). */
void ps_float_pack_encode(uint8_t enc, const ps_float_pack_entry_t *e, size_t n, ps_buf_t *out);
int ps_meta_write(ps_store_writer_t *w, ps_txn_t *txn, const ps_metric_meta_t *m, size_t n, ps_err_t *err);
int ps_float_compact(ps_store_writer_t *w, bool force, int64_t now_ns, uint32_t *nchunks, ps_err_t *err);
int ps_float_retain(ps_store_writer_t *w, ps_txn_t *txn, int64_t cutoff_ns, uint64_t **touched, size_t *ntouched, size_t *cap,
                    ps_err_t *err);
/* floats_read.c: the samples of float series sid in [mint, maxt] (ms), as ps_reader_samples */
int ps_float_reader_samples(ps_reader_t *r, uint64_t sid, int64_t mint, int64_t maxt,
                            int (*cb)(void *ctx, const ps_float_sample_t *s, size_t n), void *ctx, ps_err_t *err);
int ps_float_reader_latest(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, int64_t *ts, ps_err_t *err);
int ps_float_reader_has_data(ps_reader_t *r, uint64_t sid, int64_t start, int64_t end, ps_err_t *err);

/* spans.c: the span index and profile ids inside a write transaction; the spans key of (span, sid, ts) */
void ps_span_key(uint8_t k[28], uint64_t span, uint64_t sid, int64_t ts);
int ps_span_put(ps_txn_t *txn, uint64_t span, uint64_t sid, int64_t ts, ps_err_t *err);
#define PS_SPANPARTS_ENC 1
void ps_span_parts_encode(const ps_span_part_t *parts, size_t n, ps_buf_t *out);
int ps_uuid_put(ps_txn_t *txn, const uint8_t uuid[16], uint64_t sid, int64_t ts, ps_err_t *err);
/* drops the spans and uuids entries of the hours ended before cutoff, and the span parts of profiles older than it */
int ps_ids_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err);
/* the hour number of a timestamp (ns), the u32 BE at the front of the spans, uuids and unsym keys */
uint32_t ps_hour_of(int64_t ts);
/* deletes, from the front of db (keys starting with such an hour), every hour before h; what names
 * the work in an LMDB error */
int ps_drop_hours(ps_txn_t *txn, int db, uint32_t h, const char *what, ps_err_t *err);

/* unsym.c, unsymrec.c: the counts of frames without symbols (docs/FORMAT.md "Frames without symbols"). A record,
 * its string ids (build id in the key; file names, profile type ids) unresolved. */
typedef struct ps_unsym_rec {
    uint64_t profiles, samples;
    int64_t first_ts, last_ts;
    uint32_t nfiles, ntypes;
    uint64_t files[PS_UNSYM_FILES_MAX];
    uint64_t types[PS_UNSYM_TYPES_MAX];
    int64_t totals[PS_UNSYM_TYPES_MAX];
} ps_unsym_rec_t;
void ps_unsym_rec_encode(const ps_unsym_rec_t *r, ps_buf_t *out);
int ps_unsym_rec_decode(const void *p, size_t n, ps_unsym_rec_t *r, ps_err_t *err);
/* adds src's counts to dst (file names and types past the caps are not kept) */
void ps_unsym_rec_merge(ps_unsym_rec_t *dst, const ps_unsym_rec_t *src);
/* adds file name f (once; not past PS_UNSYM_FILES_MAX), v to type's total (saturating; a new type
 * not past PS_UNSYM_TYPES_MAX) */
void ps_unsym_rec_add_file(ps_unsym_rec_t *r, uint64_t f);
void ps_unsym_rec_add_total(ps_unsym_rec_t *r, uint64_t type, int64_t v);
/* an append being stored (not a duplicate): its frames without symbols counted into the writer's
 * sums of this write; strid: the profile's strings' string ids */
int ps_unsym_count(ps_store_writer_t *w, ps_txn_t *txn, const ps_append_t *it, const uint64_t *strid, ps_arena_t *a,
                   ps_err_t *err);
/* the sums of this write added to the stored records, in txn; then forgotten */
int ps_unsym_flush(ps_store_writer_t *w, ps_txn_t *txn, ps_err_t *err);
/* forgets the sums of this write (it failed) */
void ps_unsym_reset(ps_store_writer_t *w);
void ps_unsym_free(ps_store_writer_t *w);
/* drops the records of the hours ended before cutoff */
int ps_unsym_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err);

/* read.c: ps_reader_sum and ps_reader_profiles without rollups, in any transaction, with the
 * retention clamp min_ts (INT64_MIN: none) */
int ps_sum_raw(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end,
               void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info, ps_err_t *err);
int ps_profiles_raw(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end, bool meta_only,
                    int (*cb)(void *ctx, const ps_stored_profile_t *p), void *ctx, ps_err_t *err);

/* read.c: *ref, the chunk that chunk p (of DB_CHUNKS) refers to when it is a PS_CHUNK_ENC_REF chunk,
 * looked up in txn (valid as long as LMDB values are); {0, NULL} for the other encodings and when
 * that chunk is missing (the _ref decoders of chunk.h then say so). PS_ECORRUPT or a txn error. */
int ps_chunk_ref_lookup(ps_txn_t *txn, const void *p, size_t n, MDB_val *ref, ps_err_t *err);

/* rollup.c: per series, the profiles of each closed window of an hour and of a day merged into one
 * record (docs/FORMAT.md "Rollups"). */
#define PS_ROLLUP_LEVELS 2
#define PS_ROLLUP_REC_V1 1
extern const int64_t ps_rollup_window[PS_ROLLUP_LEVELS]; /* ns: an hour, a day */
/* A decoded rollup record: the sum of its window's profiles, node by node. */
typedef struct ps_rollup {
    uint64_t profiles;          /* >= 1 */
    int64_t min_ts, max_ts;     /* the oldest and the newest profile, inside the window */
    int64_t duration, total;    /* summed (saturated), >= 0 */
    int64_t period;             /* the largest */
    uint32_t n;
    uint64_t *nodes;            /* n, ascending */
    int64_t *values;            /* n, each >= 1 */
} ps_rollup_t;
void ps_rollup_encode(const ps_rollup_t *r, ps_buf_t *out);
/* r's record of the window [ws, ws + len) (arrays from arena): PS_ECORRUPT naming what is wrong */
int ps_rollup_decode(const void *p, size_t n, int64_t ws, int64_t len, ps_arena_t *arena, ps_rollup_t *out,
                     ps_err_t *err);
/* ps_reader_sum through the rollups of the windows wholly inside [max(start, min_ts), end] */
int ps_rollup_sum(ps_txn_t *txn, int64_t min_ts, uint64_t sid, int64_t start, int64_t end,
                  void (*on_node)(void *ctx, uint64_t node, int64_t value), void *ctx, ps_sum_info_t *info, ps_err_t *err);
/* compaction: the rollups of sid's windows that overlap [from, last_ts] and are closed (end at or
 * before last_ts: no later write can fall into them), where they are missing and the window holds
 * at least opts.rollup_min_profiles profiles */
int ps_rollup_update(ps_txn_t *txn, uint64_t sid, int64_t from, int64_t last_ts, ps_err_t *err);
/* the writer's background step (ps_store_compact): the missing rollups of the windows compacted
 * before rollups existed (schema 7 and older, or the option no_rollups), a bounded part per call in
 * one transaction, its cursor in DB_INFO "rollfill"; *more: not done yet */
int ps_rollup_backfill(ps_store_writer_t *w, int64_t now_ns, bool *more, ps_err_t *err);
/* a store made with rollups starts with nothing to backfill (env.c) */
bool ps_rollup_backfill_done(ps_txn_t *txn);
/* retention: drops the rollups of windows starting before cutoff */
int ps_rollup_retain(ps_txn_t *txn, int64_t cutoff, ps_err_t *err);

/* ltimes.c: the label index's times (docs/FORMAT.md "Label times"). The writer notes a series'
 * time ts (ns; a float sample's t * 10^6) at its first data and then whenever ts falls in another
 * granule (ps_ltimes_granule) than its previous data: key is scratch. */
extern const int64_t ps_ltimes_granule;
/** b = the postings (and label times) key of a pair: name, 00, value. */
void ps_posting_key(ps_buf_t *b, const ps_label_pair_t *p);
/* The series hash index's key of a label set encoded as enc (ps_labels_encode). */
void ps_series_hash_key(const ps_buf_t *enc, uint8_t hk[8]);
bool ps_ltimes_same_granule(int64_t a, int64_t b);
void ps_ltimes_rec_encode(int64_t first, int64_t last, ps_buf_t *out);
/* a record's times: false when it is damaged (not 17 bytes of encoding 1, first > last) */
bool ps_ltimes_rec_decode(const MDB_val *v, int64_t *first, int64_t *last);
void ps_lt_memo_clear(ps_lt_memo_t *m);
/* ls's pairs (and names) noted at ts in DB_LTIMES; key: scratch; memo: the writer's (NULL: none) */
int ps_ltimes_note(ps_txn_t *txn, const ps_labels_t *ls, int64_t ts, ps_buf_t *key, ps_lt_memo_t *memo, ps_err_t *err);
/* the same note into the profile series' times (DB_PTIMES, schema 15): a profile series' data */
int ps_ptimes_note(ps_txn_t *txn, const ps_labels_t *ls, int64_t ts, ps_buf_t *key, ps_lt_memo_t *memo, ps_err_t *err);
/* a series deleted: the record of its value key[0..n) (name nlen bytes) goes when no series has
 * that value any more, the name's with its last value */
int ps_ltimes_forget(ps_txn_t *txn, const void *key, size_t n, size_t nlen, uint64_t sid, ps_err_t *err);
/* the same for DB_PTIMES (a profile series of type type, its __name__ or NULL, deleted): the
 * records of the pair and of the pair in that type go with the value's last series of any kind (a
 * value left to other series keeps them: their times then hold deleted data only) */
int ps_ptimes_forget(ps_txn_t *txn, const ps_label_pair_t *type, const void *key, size_t n, size_t nlen, uint64_t sid,
                     ps_err_t *err);
/* retention deleted the data before cutoff: DB_INFO "ltcut" raised to it */
int ps_ltimes_cut(ps_txn_t *txn, int64_t cutoff, ps_err_t *err);
/* the upgrade to schema 10: every series' first and last time noted */
int ps_ltimes_build(ps_store_t *s, ps_txn_t *txn, ps_err_t *err);
/* the upgrade to schema 15: every profile series' first and last time noted in DB_PTIMES */
int ps_ptimes_build(ps_store_t *s, ps_txn_t *txn, ps_err_t *err);

/* fwdlog.c: the forwarding log inside a write transaction */
int ps_forward_log_put(ps_store_writer_t *w, ps_txn_t *txn, int64_t wall, const void *data, size_t len, ps_err_t *err);
/* the next sequence number as committed in txn's snapshot (1 in a new store) */
int ps_forward_log_load_next(ps_txn_t *txn, uint64_t *next, ps_err_t *err);
#endif
