/*
 * remote_read.c - the remote-read codec (remote_read.h). Schema: the read messages of
 * proto/remote.proto (prometheus.ReadRequest and its answers, docs/protocols.md). Requests are decoded
 * by protobuf-c on an arena with a budget (pballoc.h), after the snappy length check (wire.h); a
 * request protobuf-c refuses is scanned against the tables below to say where it is wrong. The
 * answers are written by hand, without a struct per sample.
 *
 * Wire example: remote-read-01.bin (Prometheus 2.42, 115 bytes; 116 uncompressed), the read behind
 * `promtool query instant ... 'gotarget_kernel_iterations_total{kernel="matmul"}'`:
 *
 *   74                         snappy: uvarint 116 = uncompressed length, then its elements
 *   -- uncompressed ReadRequest --
 *   0a 72                      1 queries, 114 bytes
 *     08 87 d6 ff ... 34         1 start_timestamp_ms 1796021633287
 *     10 e7 c8 91 ... 34         2 end_timestamp_ms 1796021933287 (start + 5 min: the lookback)
 *     1a 10 12 06 6b 65 72 6e 65 6c 1a 06 6d 61 74 6d 75 6c
 *                                3 matchers {type EQ (0: absent), name "kernel", value "matmul"}
 *     1a 2e 12 08 5f 5f 6e ...   3 matchers {name "__name__", value "gotarget_kernel_iterations_total"}
 *     1a 14 12 07 72 65 70 ...   3 matchers {name "replica", value "fixture"} (an external label)
 *     22 0e 18 87 ... 20 e7 ...  4 hints {start_ms, end_ms}
 *   (no field 2: accepted_response_types empty, so the answer is SAMPLES)
 *
 * The SAMPLES answer Prometheus gave to it (remote-read-response-01.bin), uncompressed:
 *
 *   0a <n>                     1 results (one per query)
 *     0a <n>                     1 timeseries
 *       0a 2e 0a 08 __name__ 12 20 gotarget_kernel_iterations_total    1 labels, sorted
 *       0a 0b 0a 03 env 12 04 test  ...                                1 labels ...
 *       12 10 09 00 00 00 00 10 c4 f3 40 10 c2 e7 fe d9 a2 34          2 samples {value 80965, timestamp}
 *       12 10 ...                                                      2 samples ...
 *
 * A STREAMED_XOR_CHUNKS frame: uvarint(len) | crc32c(data) big-endian | data, where data is
 *
 *   0a <n>                     1 chunked_series (one per frame)
 *     0a <n> 0a .. 12 ..         1 labels {name, value} ...
 *     12 <n>                     2 chunks
 *       08 <t0> 10 <tN> 18 01 22 <n> <XOR chunk bytes>   {min_time_ms, max_time_ms, type XOR, data}
 *   10 <i>                     2 query_index (absent for query 0)
 */
#include "remote_read.h"

#include <stdio.h>
#include <string.h>


#include "core/crc32c.h"
#include "core/varint.h"
#include "pballoc.h"
#include "remote.pb-c.h"
#include "wire.h"

typedef Profstore__Remote__ReadRequest pb_req_t;
typedef Profstore__Remote__Query pb_query_t;
typedef Profstore__Remote__LabelMatcher pb_matcher_t;
typedef Profstore__Remote__ReadHints pb_hints_t;

void ps_read_limits_default(ps_read_limits_t *l)
{
    l->max_uncompressed = 32u << 20;
    l->max_queries = 1000;
    l->max_matchers = 1000;
}

/* ---- where a request is malformed ----------------------------------------------------------- */

static const fdesc_t f_matcher[] = {{1, WT_VARINT, false, false, "type", NULL},
                                    {2, WT_LEN, false, false, "name", NULL},
                                    {3, WT_LEN, false, false, "value", NULL}};
static const mdesc_t m_matcher = MD(f_matcher);
static const fdesc_t f_hints[] = {{1, WT_VARINT, false, false, "step_ms", NULL},
                                  {2, WT_LEN, false, false, "func", NULL},
                                  {3, WT_VARINT, false, false, "start_ms", NULL},
                                  {4, WT_VARINT, false, false, "end_ms", NULL},
                                  {5, WT_LEN, true, false, "grouping", NULL},
                                  {6, WT_VARINT, false, false, "by", NULL},
                                  {7, WT_VARINT, false, false, "range_ms", NULL}};
static const mdesc_t m_hints = MD(f_hints);
static const fdesc_t f_query[] = {{1, WT_VARINT, false, false, "start_timestamp_ms", NULL},
                                  {2, WT_VARINT, false, false, "end_timestamp_ms", NULL},
                                  {3, WT_LEN, true, false, "matchers", &m_matcher},
                                  {4, WT_LEN, false, false, "hints", &m_hints}};
static const mdesc_t m_query = MD(f_query);
static const fdesc_t f_read[] = {{1, WT_LEN, true, false, "queries", &m_query},
                                 {2, WT_VARINT, true, true, "accepted_response_types", NULL}};
static const mdesc_t m_read = MD(f_read);

/* ---- decoding the request ------------------------------------------------------------------- */

/* A string field: valid UTF-8 without NUL, copied NUL-terminated. */
static int copy_str(const ProtobufCBinaryData *b, const char *where, uint32_t i, uint32_t j, const char *field,
                    ps_arena_t *arena, const char **out, uint32_t *len, ps_err_t *err)
{
    if (b->len > 0 && memchr(b->data, 0, b->len) != NULL)
        return ps_err_set(err, PS_EINVAL, "queries[%u].%s[%u].%s contains a NUL byte", i, where, j, field);
    if (!ps_utf8_valid((const char *)b->data, b->len))
        return ps_err_set(err, PS_EINVAL, "queries[%u].%s[%u].%s is not valid UTF-8", i, where, j, field);
    if (b->len > UINT32_MAX / 2)
        return ps_err_set(err, PS_ETOOBIG, "queries[%u].%s[%u].%s is too long", i, where, j, field);
    *out = ps_arena_strndup(arena, (const char *)b->data, b->len);
    if (len != NULL)
        *len = (uint32_t)b->len;
    return 0;
}

static int convert(const pb_req_t *pb, const ps_read_limits_t *lim, ps_arena_t *arena, ps_read_request_t *out,
                   ps_err_t *err)
{
    int rc;
    if (pb->n_queries > lim->max_queries)
        return ps_err_set(err, PS_ETOOBIG, "%zu queries in one read request (the limit is %u)", pb->n_queries,
                          lim->max_queries);
    out->queries = ps_arena_calloc(arena, pb->n_queries ? pb->n_queries : 1, sizeof(*out->queries));
    for (uint32_t i = 0; i < pb->n_queries; i++) {
        const pb_query_t *q = pb->queries[i];
        ps_read_query_t *d = &out->queries[i];
        d->start_ms = q->start_timestamp_ms;
        d->end_ms = q->end_timestamp_ms;
        if (q->n_matchers > lim->max_matchers)
            return ps_err_set(err, PS_ETOOBIG, "queries[%u]: %zu matchers (the limit is %u)", i, q->n_matchers,
                              lim->max_matchers);
        d->matchers = ps_arena_calloc(arena, q->n_matchers ? q->n_matchers : 1, sizeof(*d->matchers));
        for (uint32_t j = 0; j < q->n_matchers; j++) {
            const pb_matcher_t *m = q->matchers[j];
            ps_read_matcher_t *dm = &d->matchers[j];
            if ((int)m->type < PS_READ_EQ || (int)m->type > PS_READ_NRE)
                return ps_err_set(err, PS_EINVAL, "queries[%u].matchers[%u].type: unknown matcher type %d (EQ=0, NEQ=1, "
                                  "RE=2, NRE=3)", i, j, (int)m->type);
            dm->type = (int)m->type;
            if (m->name.len == 0)
                return ps_err_set(err, PS_EINVAL, "queries[%u].matchers[%u].name: empty label name", i, j);
            if ((rc = copy_str(&m->name, "matchers", i, j, "name", arena, &dm->name, &dm->nlen, err)) != 0 ||
                (rc = copy_str(&m->value, "matchers", i, j, "value", arena, &dm->value, &dm->vlen, err)) != 0)
                return rc;
        }
        d->nmatchers = (uint32_t)q->n_matchers;
        d->hints.func = "";
        if (q->hints != NULL) {
            const pb_hints_t *h = q->hints;
            d->hints.present = true;
            d->hints.step_ms = h->step_ms;
            d->hints.start_ms = h->start_ms;
            d->hints.end_ms = h->end_ms;
            d->hints.range_ms = h->range_ms;
            d->hints.by = h->by;
            if ((rc = copy_str(&h->func, "hints", i, 0, "func", arena, &d->hints.func, NULL, err)) != 0)
                return rc;
            d->hints.grouping = ps_arena_alloc(arena, (h->n_grouping ? h->n_grouping : 1) * sizeof(char *));
            for (uint32_t k = 0; k < h->n_grouping; k++)
                if ((rc = copy_str(&h->grouping[k], "hints", i, 0, "grouping", arena, &d->hints.grouping[k], NULL,
                                   err)) != 0)
                    return rc;
            d->hints.ngrouping = (uint32_t)h->n_grouping;
        }
    }
    out->nqueries = (uint32_t)pb->n_queries;
    out->accepted = ps_arena_alloc(arena, (pb->n_accepted_response_types ? pb->n_accepted_response_types : 1) * sizeof(int));
    for (size_t k = 0; k < pb->n_accepted_response_types; k++)
        out->accepted[k] = (int)pb->accepted_response_types[k];
    out->naccepted = (uint32_t)pb->n_accepted_response_types;
    return 0;
}

int ps_read_request_decode(const void *body, size_t n, const ps_read_limits_t *lim, ps_arena_t *arena,
                           ps_read_request_t *out, ps_err_t *err)
{
    ps_read_limits_t def;
    char *raw;
    size_t ulen;
    int rc;

    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        ps_read_limits_default(&def);
        lim = &def;
    }
    if ((rc = ps_wire_unsnappy(body, n, lim->max_uncompressed, "remote read", arena, &raw, &ulen, err)) != 0)
        return rc;
    ps_pb_arena_t pa;
    ps_pb_arena_init(&pa, arena, ps_wire_unpack_budget(ulen));
    const uint8_t *u = (const uint8_t *)raw;
    pb_req_t *pb = profstore__remote__read_request__unpack(&pa.base, ulen, u);
    if (pb == NULL)
        return ps_wire_unpack_error(&m_read, u, ulen, pa.over, pa.budget, "prometheus.ReadRequest", err);
    rc = convert(pb, lim, arena, out, err);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

int ps_read_negotiate(const ps_read_request_t *req, ps_read_type_t *out, ps_err_t *err)
{
    if (req->naccepted == 0) {
        *out = PS_READ_SAMPLES;
        return 0;
    }
    for (uint32_t i = 0; i < req->naccepted; i++)
        if (req->accepted[i] == PS_READ_SAMPLES || req->accepted[i] == PS_READ_STREAMED_XOR_CHUNKS) {
            *out = (ps_read_type_t)req->accepted[i];
            return 0;
        }
    char list[200];
    size_t o = 0;
    for (uint32_t i = 0; i < req->naccepted && o + 16 < sizeof(list); i++)
        o += (size_t)snprintf(list + o, sizeof(list) - o, "%s%d", i ? " " : "", req->accepted[i]);
    list[o] = '\0';
    return ps_err_set(err, PS_EINVAL,
                      "server does not support any of the requested response types: [%s]; supported: [SAMPLES "
                      "STREAMED_XOR_CHUNKS]",
                      list);
}

/* ---- hand-written wire format --------------------------------------------------------------- */

static size_t uvlen(uint64_t v)
{
    size_t n = 1;
    while (v >= 0x80) {
        v >>= 7;
        n++;
    }
    return n;
}

static void put_key(ps_buf_t *b, unsigned num, unsigned wt) { ps_put_uvarint(b, (uint64_t)num << 3 | wt); }
static void put_len(ps_buf_t *b, unsigned num, size_t n)
{
    put_key(b, num, WT_LEN);
    ps_put_uvarint(b, n);
}
/* proto3: a zero int64 is not written; negative ones take 10 bytes (two's complement). */
static void put_int(ps_buf_t *b, unsigned num, int64_t v)
{
    if (v == 0)
        return;
    put_key(b, num, WT_VARINT);
    ps_put_uvarint(b, (uint64_t)v);
}
static size_t int_size(int64_t v) { return v == 0 ? 0 : 1 + uvlen((uint64_t)v); }
static void put_bytes(ps_buf_t *b, unsigned num, const void *p, size_t n)
{
    if (n == 0)
        return;
    put_len(b, num, n);
    ps_buf_append(b, p, n);
}
static size_t bytes_size(size_t n) { return n == 0 ? 0 : 1 + uvlen(n) + n; }
/* a length-delimited field of a message of n bytes (written even when empty: repeated elements) */
static size_t msg_size(size_t n) { return 1 + uvlen(n) + n; }

static size_t label_size(const ps_label_pair_t *p) { return bytes_size(p->nlen) + bytes_size(p->vlen); }
static void put_label(ps_buf_t *b, unsigned num, const ps_label_pair_t *p)
{
    put_len(b, num, label_size(p));
    put_bytes(b, 1, p->name, p->nlen);
    put_bytes(b, 2, p->value, p->vlen);
}

/* Sample {1 value double (absent when == 0, -0.0 too, as gogo-protobuf's `!= 0`), 2 timestamp} */
static size_t sample_size(const ps_remote_sample_t *s) { return (s->v != 0 ? 9 : 0) + int_size(s->t_ms); }
static void put_sample(ps_buf_t *b, const ps_remote_sample_t *s)
{
    size_t n = sample_size(s);
    put_len(b, 2, n);
    if (s->v != 0) {
        uint64_t u;
        memcpy(&u, &s->v, 8);
        uint8_t *p = ps_buf_reserve(b, 9);
        p[0] = 1 << 3 | WT_I64;
        for (int i = 0; i < 8; i++)
            p[1 + i] = (uint8_t)(u >> (8 * i));
        b->len += 9;
    }
    put_int(b, 2, s->t_ms);
}

/* ---- the request, for tests ----------------------------------------------------------------- */

static size_t matcher_size(const ps_read_matcher_t *m)
{
    return int_size(m->type) + bytes_size(m->nlen) + bytes_size(m->vlen);
}

static size_t hints_size(const ps_read_hints_t *h)
{
    size_t n = int_size(h->step_ms) + bytes_size(strlen(h->func)) + int_size(h->start_ms) + int_size(h->end_ms) +
               (h->by ? 2 : 0) + int_size(h->range_ms);
    for (uint32_t k = 0; k < h->ngrouping; k++)
        n += msg_size(strlen(h->grouping[k]));
    return n;
}

static size_t query_size(const ps_read_query_t *q)
{
    size_t n = int_size(q->start_ms) + int_size(q->end_ms);
    for (uint32_t j = 0; j < q->nmatchers; j++)
        n += msg_size(matcher_size(&q->matchers[j]));
    if (q->hints.present)
        n += msg_size(hints_size(&q->hints));
    return n;
}

void ps_read_request_encode(const ps_read_request_t *req, ps_buf_t *out)
{
    ps_buf_t raw = PS_BUF_INIT;
    for (uint32_t i = 0; i < req->nqueries; i++) {
        const ps_read_query_t *q = &req->queries[i];
        put_len(&raw, 1, query_size(q));
        put_int(&raw, 1, q->start_ms);
        put_int(&raw, 2, q->end_ms);
        for (uint32_t j = 0; j < q->nmatchers; j++) {
            const ps_read_matcher_t *m = &q->matchers[j];
            put_len(&raw, 3, matcher_size(m));
            put_int(&raw, 1, m->type);
            put_bytes(&raw, 2, m->name, m->nlen);
            put_bytes(&raw, 3, m->value, m->vlen);
        }
        if (q->hints.present) {
            const ps_read_hints_t *h = &q->hints;
            put_len(&raw, 4, hints_size(h));
            put_int(&raw, 1, h->step_ms);
            put_bytes(&raw, 2, h->func, strlen(h->func));
            put_int(&raw, 3, h->start_ms);
            put_int(&raw, 4, h->end_ms);
            for (uint32_t k = 0; k < h->ngrouping; k++) {
                put_len(&raw, 5, strlen(h->grouping[k]));
                ps_buf_append(&raw, h->grouping[k], strlen(h->grouping[k]));
            }
            put_int(&raw, 6, h->by);
            put_int(&raw, 7, h->range_ms);
        }
    }
    if (req->naccepted > 0) { /* packed, as Go's gogo-protobuf writes it */
        size_t n = 0;
        for (uint32_t k = 0; k < req->naccepted; k++)
            n += uvlen((uint64_t)(int64_t)req->accepted[k]);
        put_len(&raw, 2, n);
        for (uint32_t k = 0; k < req->naccepted; k++)
            ps_put_uvarint(&raw, (uint64_t)(int64_t)req->accepted[k]);
    }
    ps_err_t err;
    (void)ps_wire_snappy(raw.data, raw.len, out, &err); /* this encoder returns nothing: a failure appends nothing */
    ps_buf_dispose(&raw);
}

/* ---- SAMPLES -------------------------------------------------------------------------------- */

#define RESULT_HDR 6 /* room for the tag and a 5-byte length of an open QueryResult */

void ps_read_resp_init(ps_read_resp_t *r)
{
    memset(r, 0, sizeof(*r));
}

void ps_read_resp_dispose(ps_read_resp_t *r)
{
    ps_buf_dispose(&r->raw);
}

void ps_read_resp_begin_result(ps_read_resp_t *r)
{
    ps_buf_reserve(&r->raw, RESULT_HDR);
    r->raw.len += RESULT_HDR;
    r->result_at = r->raw.len;
    r->open = true;
}

void ps_read_resp_add_series(ps_read_resp_t *r, const ps_labels_t *ls, const ps_remote_sample_t *s, size_t n)
{
    size_t body = 0;
    for (uint32_t k = 0; k < ls->n; k++)
        body += msg_size(label_size(&ls->pairs[k]));
    for (size_t k = 0; k < n; k++)
        body += msg_size(sample_size(&s[k]));
    ps_buf_reserve(&r->raw, msg_size(body));
    put_len(&r->raw, 1, body);
    for (uint32_t k = 0; k < ls->n; k++)
        put_label(&r->raw, 1, &ls->pairs[k]);
    for (size_t k = 0; k < n; k++)
        put_sample(&r->raw, &s[k]);
}

void ps_read_resp_end_result(ps_read_resp_t *r)
{
    size_t body = r->raw.len - r->result_at;
    uint8_t hdr[16];
    hdr[0] = 1 << 3 | WT_LEN;
    size_t hl = 1;
    uint64_t v = body;
    while (v >= 0x80) {
        hdr[hl++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    hdr[hl++] = (uint8_t)v;
    size_t hstart = r->result_at - RESULT_HDR;
    if (hl > RESULT_HDR) /* a QueryResult of 4 GiB or more: cannot happen under the limits */
        hl = RESULT_HDR;
    memmove(r->raw.data + hstart + hl, r->raw.data + r->result_at, body);
    memcpy(r->raw.data + hstart, hdr, hl);
    r->raw.len = hstart + hl + body;
    r->open = false;
}

int ps_read_resp_finish(ps_read_resp_t *r, ps_buf_t *out, ps_err_t *err)
{
    return ps_wire_snappy(r->raw.data, r->raw.len, out, err);
}

/* ---- STREAMED_XOR_CHUNKS -------------------------------------------------------------------- */

void ps_read_stream_init(ps_read_stream_t *s, ps_buf_t *out, size_t max_frame_bytes)
{
    memset(s, 0, sizeof(*s));
    s->out = out;
    s->max_frame = max_frame_bytes;
}

void ps_read_stream_dispose(ps_read_stream_t *s)
{
    ps_buf_dispose(&s->labels);
    ps_buf_dispose(&s->chunks);
    ps_buf_dispose(&s->frame);
}

/* Sends the pending chunks of the open series as one frame. */
static void send_frame(ps_read_stream_t *s)
{
    if (s->chunks.len == 0)
        return;
    size_t series = s->labels.len + s->chunks.len;
    ps_buf_reset(&s->frame);
    put_len(&s->frame, 1, series);
    ps_buf_append(&s->frame, s->labels.data, s->labels.len);
    ps_buf_append(&s->frame, s->chunks.data, s->chunks.len);
    put_int(&s->frame, 2, s->query_index);
    ps_put_uvarint(s->out, s->frame.len);
    ps_put_be32(s->out, ps_crc32c(0, s->frame.data, s->frame.len));
    ps_buf_append(s->out, s->frame.data, s->frame.len);
    ps_buf_reset(&s->chunks);
    s->left = s->budget;
    s->nframes++;
}

void ps_read_stream_series(ps_read_stream_t *s, int64_t query_index, const ps_labels_t *ls)
{
    send_frame(s);
    ps_buf_reset(&s->labels);
    s->query_index = query_index;
    s->budget = (int64_t)s->max_frame;
    for (uint32_t k = 0; k < ls->n; k++) {
        put_label(&s->labels, 1, &ls->pairs[k]);
        s->budget -= (int64_t)label_size(&ls->pairs[k]);
    }
    s->left = s->budget;
}

void ps_read_stream_chunk(ps_read_stream_t *s, int64_t min_t, int64_t max_t, const uint8_t *data, size_t n)
{
    size_t body = int_size(min_t) + int_size(max_t) + int_size(PS_READ_CHUNK_XOR) + bytes_size(n);
    put_len(&s->chunks, 2, body);
    put_int(&s->chunks, 1, min_t);
    put_int(&s->chunks, 2, max_t);
    put_int(&s->chunks, 3, PS_READ_CHUNK_XOR);
    put_bytes(&s->chunks, 4, data, n);
    s->left -= (int64_t)body;
    if (s->left <= 0)
        send_frame(s);
}

void ps_read_stream_flush(ps_read_stream_t *s)
{
    send_frame(s);
}

/* ---- decoding the answers ------------------------------------------------------------------- */

static void copy_labels(Profstore__Remote__Label **in, size_t n, ps_arena_t *arena, ps_labels_t *out)
{
    out->n = (uint32_t)n;
    out->cap = 0;
    out->pairs = ps_arena_alloc(arena, (n ? n : 1) * sizeof(ps_label_pair_t));
    for (size_t k = 0; k < n; k++) {
        ps_label_pair_t *p = &out->pairs[k];
        p->name = ps_arena_strndup(arena, (const char *)in[k]->name.data, in[k]->name.len);
        p->value = ps_arena_strndup(arena, (const char *)in[k]->value.data, in[k]->value.len);
        p->nlen = (uint32_t)in[k]->name.len;
        p->vlen = (uint32_t)in[k]->value.len;
    }
}

int ps_read_response_decode(const void *body, size_t n, size_t max_uncompressed, ps_arena_t *arena,
                            ps_read_result_t **results, uint32_t *nresults, ps_err_t *err)
{
    char *raw;
    size_t ulen;
    int rc;
    *results = NULL;
    *nresults = 0;
    if ((rc = ps_wire_unsnappy(body, n, max_uncompressed, "remote read", arena, &raw, &ulen, err)) != 0)
        return rc;
    ps_pb_arena_t pa;
    ps_pb_arena_init(&pa, arena, SIZE_MAX / 2);
    Profstore__Remote__ReadResponse *pb = profstore__remote__read_response__unpack(&pa.base, ulen, (const uint8_t *)raw);
    if (pb == NULL)
        return ps_err_set(err, PS_EINVAL, "protobuf: malformed prometheus.ReadResponse");
    ps_read_result_t *res = ps_arena_calloc(arena, pb->n_results ? pb->n_results : 1, sizeof(*res));
    for (size_t i = 0; i < pb->n_results; i++) {
        const Profstore__Remote__QueryResult *qr = pb->results[i];
        res[i].nseries = (uint32_t)qr->n_timeseries;
        res[i].series = ps_arena_calloc(arena, qr->n_timeseries ? qr->n_timeseries : 1, sizeof(ps_read_series_t));
        for (size_t j = 0; j < qr->n_timeseries; j++) {
            const Profstore__Remote__TimeSeries *ts = qr->timeseries[j];
            ps_read_series_t *d = &res[i].series[j];
            copy_labels(ts->labels, ts->n_labels, arena, &d->labels);
            d->nsamples = (uint32_t)ts->n_samples;
            d->samples = ps_arena_alloc(arena, (ts->n_samples ? ts->n_samples : 1) * sizeof(ps_remote_sample_t));
            for (size_t k = 0; k < ts->n_samples; k++) {
                d->samples[k].t_ms = ts->samples[k]->timestamp;
                d->samples[k].v = ts->samples[k]->value;
            }
        }
    }
    *results = res;
    *nresults = (uint32_t)pb->n_results;
    return 0;
}

int ps_read_frame_decode(const void *p, size_t n, size_t *used, ps_arena_t *arena, ps_read_frame_t *out,
                         ps_err_t *err)
{
    const uint8_t *b = p, *q = p, *end = b + n;
    uint64_t len = 0;
    int shift = 0;
    memset(out, 0, sizeof(*out));
    for (;;) {
        if (q == end || shift > 63)
            return ps_err_set(err, PS_EINVAL, "frame: truncated or overlong length");
        uint8_t c = *q++;
        len |= (uint64_t)(c & 0x7f) << shift;
        shift += 7;
        if (!(c & 0x80))
            break;
    }
    if ((size_t)(end - q) < 4 || len > (uint64_t)(end - q - 4))
        return ps_err_set(err, PS_EINVAL, "frame: %llu bytes announced, %zu left", (unsigned long long)len,
                          (size_t)(end - q) < 4 ? 0 : (size_t)(end - q - 4));
    uint32_t want = ps_get_be32(q), got = ps_crc32c(0, q + 4, (size_t)len);
    if (want != got)
        return ps_err_set(err, PS_EINVAL, "frame: CRC32C 0x%08x does not match the data's 0x%08x", want, got);
    ps_pb_arena_t pa;
    ps_pb_arena_init(&pa, arena, SIZE_MAX / 2);
    Profstore__Remote__ChunkedReadResponse *pb =
        profstore__remote__chunked_read_response__unpack(&pa.base, (size_t)len, q + 4);
    if (pb == NULL)
        return ps_err_set(err, PS_EINVAL, "frame: malformed prometheus.ChunkedReadResponse");
    out->query_index = pb->query_index;
    out->nseries = (uint32_t)pb->n_chunked_series;
    out->series = ps_arena_calloc(arena, pb->n_chunked_series ? pb->n_chunked_series : 1, sizeof(*out->series));
    for (size_t i = 0; i < pb->n_chunked_series; i++) {
        const Profstore__Remote__ChunkedSeries *cs = pb->chunked_series[i];
        copy_labels(cs->labels, cs->n_labels, arena, &out->series[i].labels);
        out->series[i].nchunks = (uint32_t)cs->n_chunks;
        out->series[i].chunks = ps_arena_calloc(arena, cs->n_chunks ? cs->n_chunks : 1, sizeof(ps_read_chunk_t));
        for (size_t k = 0; k < cs->n_chunks; k++) {
            ps_read_chunk_t *c = &out->series[i].chunks[k];
            c->min_t = cs->chunks[k]->min_time_ms;
            c->max_t = cs->chunks[k]->max_time_ms;
            c->type = (int)cs->chunks[k]->type;
            c->len = cs->chunks[k]->data.len;
            c->data = ps_arena_alloc(arena, c->len ? c->len : 1);
            if (c->len)
                memcpy((uint8_t *)c->data, cs->chunks[k]->data.data, c->len);
        }
    }
    *used = (size_t)(q + 4 - b) + (size_t)len;
    return 0;
}
