/*
 * remote.c - the remote-write codec: snappy block format around prometheus.WriteRequest (1.0) or
 * io.prometheus.write.v2.Request (2.0), to and from ps_remote_write_t. Schema: proto/remote.proto
 * (docs/protocols.md, the 2.0 spec's messages). The only user of the generated profstore__remote__*
 * structs and, for remote write, of snappy.
 *
 * Body: snappy block format = uvarint(uncompressed length), then literal/copy elements (never the
 * framed format, whose stream starts ff 06 00 00 73 4e 61 50 70 59). Decoding runs in four steps:
 *
 *   1. snappy: the announced length is read (snappy_uncompressed_length) and checked against
 *      lim->max_uncompressed before the output buffer is taken from the arena; then
 *      snappy_uncompress, which fails on truncated or garbage input (PS_EINVAL "snappy: ...");
 *   1b. a 1.0 request of series alone (what Prometheus sends) is read by the direct decoder
 *      (decode_v1_direct, below), labels left in the buffer; it stands aside for anything else
 *      (metadata, exemplars, unknown fields, any error), and steps 2-4 decide;
 *   2. protobuf-c unpack, allocating from the caller's arena (pballoc.h: chunked, free is
 *      a no-op, with a budget of UNPACK_BYTES_PER_INPUT_BYTE per uncompressed byte plus 1 MiB
 *      (a backstop against amplification: 2 bytes of unknown field cost protobuf-c ~40 bytes);
 *   3. if unpacking fails, a scan of the wire format against the schema tables below says where
 *      ("timeseries[2].samples[0]: field 1 (value) has wire type 0 (varint), expected 1 (fixed64)");
 *   4. convert and validate (limits, labels, refs, metadata), copying strings NUL-terminated into
 *      the arena. A request is accepted whole or rejected whole.
 *
 * Histograms are declared as bytes in remote.proto and only counted; exemplars are unpacked and
 * counted (2.0: their symbol refs are checked). Neither is returned: the first consumer (ingest)
 * stores floats only, and reports the counts.
 *
 * Wire example: the start of remote-write-01.bin (Prometheus 2.42, 696 bytes; 2607 uncompressed),
 * the first of its 18 series, gotarget_kernel_iterations_total{env="test",instance="127.0.0.1:6060",
 * job="gotarget",kernel="fib",replica="fixture"} with one sample 0 @ 1796021924802:
 *
 *   af 14                      snappy: uvarint 2607 = uncompressed length
 *   f0 65 ...                  snappy: literal of 0x65 + 1 = 102 bytes, then copies ...
 *   -- uncompressed WriteRequest --
 *   0a 94 01                   1 timeseries, 148 bytes
 *     0a 2c                      1 labels, 44 bytes
 *       0a 08 5f 5f 6e 61 6d 65 5f 5f    1 name "__name__"
 *       12 20 67 6f 74 ... 61 6c         2 value "gotarget_kernel_iterations_total"
 *     0a 0b 0a 03 65 6e 76 12 04 74 65 73 74   labels {name "env", value "test"}
 *     0a 1a ... 0a 0f ... 0a 0d ... 0a 12 ...  labels instance, job, kernel, replica
 *     12 07                      2 samples, 7 bytes
 *       10 c2 e7 fe d9 a2 34       2 timestamp 1796021924802 (value 0.0 is proto3's default: absent)
 *   0a ...                     the next timeseries
 *
 * The same series as 2.0 (what ps_remote_write_encode writes, given metadata counter + help):
 *
 *   22 00 22 08 5f 5f ... 22 20 67 6f ...   4 symbols "", "__name__", "gotarget_kernel_iterations_total",
 *                                           "env", "test", ... (each distinct string once)
 *   2a <len>                   5 timeseries
 *     0a 0c 01 02 03 04 ...      1 labels_refs, packed: (1, 2) = __name__, (3, 4) = env="test", ...
 *     12 07 10 c2 e7 fe d9 a2 34 2 samples {timestamp 1796021924802}
 *     2a 04 08 01 18 0d          5 metadata {type 1 (COUNTER), help_ref 13}
 *
 * Deliberate strictness: empty label values and NUL bytes in names or values are rejected (the
 * spec forbids empty values; NUL cannot round-trip through our NUL-terminated strings).
 */
#include "remote.h"

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include <snappy-c.h>

#include "core/hash.h"
#include "pballoc.h"
#include "gzip.h"
#include "remote_int.h"
#include "wire.h"
#include "remote.pb-c.h"

typedef Profstore__Remote__WriteRequest pb_write_t;
typedef Profstore__Remote__TimeSeries pb_series_t;
typedef Profstore__Remote__Label pb_label_t;
typedef Profstore__Remote__Sample pb_sample_t;
typedef Profstore__Remote__MetricMetadata pb_meta_t;
typedef Profstore__Remote__V2Request pb_v2_t;
typedef Profstore__Remote__V2TimeSeries pb_v2_series_t;
typedef Profstore__Remote__V2Metadata pb_v2_meta_t;
typedef Profstore__Remote__V2Exemplar pb_v2_exemplar_t;

void ps_remote_limits_default(ps_remote_limits_t *l)
{
    l->max_uncompressed = 32u << 20;
    l->max_series = 1000000;
    l->max_samples = 10000000;
    l->max_metadata = 1000000;
    l->max_symbols = 10000000;
}

const char *ps_metric_type_name(int type)
{
    static const char *const names[] = {"unknown", "counter", "gauge", "histogram",
                                        "gaugehistogram", "summary", "info", "stateset"};
    return type >= 0 && type < 8 ? names[type] : NULL;
}

/* ---- step 3: where the wire format is wrong ------------------------------------------------- */

static const fdesc_t f_label[] = {{1, WT_LEN, false, false, "name", NULL}, {2, WT_LEN, false, false, "value", NULL}};
static const mdesc_t m_label = MD(f_label);
static const fdesc_t f_sample[] = {{1, WT_I64, false, false, "value", NULL},
                                   {2, WT_VARINT, false, false, "timestamp", NULL},
                                   {3, WT_VARINT, false, false, "start_timestamp", NULL}};
static const mdesc_t m_sample = MD(f_sample);
static const fdesc_t f_exemplar[] = {{1, WT_LEN, true, false, "labels", &m_label},
                                     {2, WT_I64, false, false, "value", NULL},
                                     {3, WT_VARINT, false, false, "timestamp", NULL}};
static const mdesc_t m_exemplar = MD(f_exemplar);
static const fdesc_t f_series[] = {{1, WT_LEN, true, false, "labels", &m_label},
                                   {2, WT_LEN, true, false, "samples", &m_sample},
                                   {3, WT_LEN, true, false, "exemplars", &m_exemplar},
                                   {4, WT_LEN, true, false, "histograms", NULL}};
static const mdesc_t m_series = MD(f_series);
static const fdesc_t f_meta[] = {{1, WT_VARINT, false, false, "type", NULL},
                                 {2, WT_LEN, false, false, "metric_family_name", NULL},
                                 {4, WT_LEN, false, false, "help", NULL},
                                 {5, WT_LEN, false, false, "unit", NULL}};
static const mdesc_t m_meta = MD(f_meta);
static const fdesc_t f_write[] = {{1, WT_LEN, true, false, "timeseries", &m_series}, {3, WT_LEN, true, false, "metadata", &m_meta}};
static const mdesc_t m_write = MD(f_write);

static const fdesc_t f_v2_exemplar[] = {{1, WT_VARINT, true, true, "labels_refs", NULL},
                                        {2, WT_I64, false, false, "value", NULL},
                                        {3, WT_VARINT, false, false, "timestamp", NULL}};
static const mdesc_t m_v2_exemplar = MD(f_v2_exemplar);
static const fdesc_t f_v2_meta[] = {{1, WT_VARINT, false, false, "type", NULL},
                                    {3, WT_VARINT, false, false, "help_ref", NULL},
                                    {4, WT_VARINT, false, false, "unit_ref", NULL}};
static const mdesc_t m_v2_meta = MD(f_v2_meta);
static const fdesc_t f_v2_series[] = {{1, WT_VARINT, true, true, "labels_refs", NULL},
                                      {2, WT_LEN, true, false, "samples", &m_sample},
                                      {3, WT_LEN, true, false, "histograms", NULL},
                                      {4, WT_LEN, true, false, "exemplars", &m_v2_exemplar},
                                      {5, WT_LEN, false, false, "metadata", &m_v2_meta},
                                      {6, WT_VARINT, false, false, "created_timestamp", NULL}};
static const mdesc_t m_v2_series = MD(f_v2_series);
static const fdesc_t f_v2[] = {{4, WT_LEN, true, false, "symbols", NULL}, {5, WT_LEN, true, false, "timeseries", &m_v2_series}};
static const mdesc_t m_v2 = MD(f_v2);

static const char *wt_name(unsigned wt)
{
    switch (wt) {
    case WT_VARINT: return "varint";
    case WT_I64: return "fixed64";
    case WT_LEN: return "length-delimited";
    case 3: return "start group";
    case 4: return "end group";
    case WT_I32: return "fixed32";
    default: return "invalid";
    }
}

/* A varint of at most max bytes at *pp (< end); false when truncated or longer. */
static inline bool dv_varint(const uint8_t **pp, const uint8_t *end, unsigned max, uint64_t *v)
{
    const uint8_t *p = *pp;
    if (p < end && *p < 0x80) {
        *v = *p;
        *pp = p + 1;
        return true;
    }
    uint64_t r = 0;
    for (unsigned i = 0; i < max; i++) {
        if (p >= end)
            return false;
        uint8_t b = *p++;
        r |= (uint64_t)(b & 0x7f) << (7 * i);
        if (!(b & 0x80)) {
            *v = r;
            *pp = p;
            return true;
        }
    }
    return false;
}

/* Walks one message (wire.h); recursion is bounded by the schema's depth. */
int ps_wire_scan(const mdesc_t *md, const uint8_t *p, const uint8_t *end, const char *path, size_t base,
                const uint8_t *origin, ps_err_t *err)
{
    uint32_t counts[8] = {0}; /* element index per field of md (md->nf <= 8) */
    while (p < end) {
        size_t off = (size_t)(p - origin);
        uint64_t key, v;
        if (!dv_varint(&p, end, 10, &key))
            return ps_err_set_at(err, PS_EINVAL, base + off, "%s%sbyte %zu: truncated or overlong field key", path,
                                 path[0] ? ": " : "", off);
        unsigned wt = (unsigned)(key & 7);
        uint64_t num = key >> 3;
        const fdesc_t *fd = NULL;
        size_t fi = 0;
        for (size_t i = 0; i < md->nf; i++)
            if (md->f[i].num == num) {
                fd = &md->f[i];
                fi = i;
            }
        char here[256];
        if (fd != NULL)
            if (fd->rep && !fd->packable)
                snprintf(here, sizeof(here), "%s%s%s[%u]", path, path[0] ? "." : "", fd->name, counts[fi]);
            else
                snprintf(here, sizeof(here), "%s%s%s", path, path[0] ? "." : "", fd->name);
        else
            snprintf(here, sizeof(here), "%s%sfield %llu", path, path[0] ? "." : "", (unsigned long long)num);
        if (num == 0 || wt == 3 || wt == 4 || wt > 5)
            return ps_err_set_at(err, PS_EINVAL, base + off, "%s: field number %llu with wire type %u (%s) is not valid",
                                 here, (unsigned long long)num, wt, wt_name(wt));
        if (fd != NULL && wt != fd->wt && !(fd->packable && wt == WT_LEN))
            return ps_err_set_at(err, PS_EINVAL, base + off, "%s: field %u (%s) has wire type %u (%s), expected %u (%s)",
                                 here, fd->num, fd->name, wt, wt_name(wt), fd->wt, wt_name(fd->wt));
        switch (wt) {
        case WT_VARINT:
            if (!dv_varint(&p, end, 10, &v))
                return ps_err_set_at(err, PS_EINVAL, base + off, "%s: truncated or overlong varint", here);
            break;
        case WT_I64:
        case WT_I32:
            if ((size_t)(end - p) < (wt == WT_I64 ? 8u : 4u))
                return ps_err_set_at(err, PS_EINVAL, base + off, "%s: truncated %s", here, wt_name(wt));
            p += wt == WT_I64 ? 8 : 4;
            break;
        case WT_LEN:
            if (!dv_varint(&p, end, 10, &v) || v > (uint64_t)(end - p))
                return ps_err_set_at(err, PS_EINVAL, base + off, "%s: length runs past the end of the %s", here,
                                     path[0] ? "enclosing message" : "request");
            if (fd != NULL && fd->packable) {
                const uint8_t *q = p, *qend = p + v;
                while (q < qend)
                    if (!dv_varint(&q, qend, 10, &v))
                        return ps_err_set_at(err, PS_EINVAL, base + off, "%s: truncated varint in packed field", here);
                p = qend;
            } else {
                if (fd != NULL && fd->sub != NULL) {
                    int rc = ps_wire_scan(fd->sub, p, p + v, here, base, origin, err);
                    if (rc != 0)
                        return rc;
                }
                p += v;
            }
            break;
        }
        if (fd != NULL)
            counts[fi]++;
    }
    return 0;
}

/* ---- step 4: validation helpers ------------------------------------------------------------- */

/* s (n bytes) as it may appear in a message: at most 40 bytes, other than printable ASCII as \xNN. */
static const char *quoted(char *buf, size_t cap, const uint8_t *s, size_t n)
{
    size_t o = 0;
    buf[o++] = '"';
    for (size_t i = 0; i < n && o + 6 < cap; i++) {
        if (i == 40) {
            memcpy(buf + o, "...", 3);
            o += 3;
            break;
        }
        if (s[i] >= 0x20 && s[i] < 0x7f && s[i] != '"' && s[i] != '\\')
            buf[o++] = (char)s[i];
        else
            o += (size_t)snprintf(buf + o, cap - o, "\\x%02x", s[i]);
    }
    buf[o++] = '"';
    buf[o] = '\0';
    return buf;
}

static bool has_nul(const uint8_t *s, size_t n) { return n > 0 && memchr(s, 0, n) != NULL; }

/* Checks label j of series i (name, value as bytes), against the previous name (prev, or NULL),
 * and fills pair with NUL-terminated copies. */
static int check_label(uint32_t i, uint32_t j, const uint8_t *name, size_t nlen, const uint8_t *value, size_t vlen,
                       const ps_label_pair_t *prev, ps_arena_t *arena, ps_label_pair_t *pair, bool *is_name,
                       ps_err_t *err)
{
    char q[256], q2[256];
    *is_name = nlen == 8 && memcmp(name, "__name__", 8) == 0;
    if (nlen == 0)
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: empty label name", i, j);
    if (nlen > PS_LABEL_NAME_MAX)
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: label name %s is %zu bytes long (the limit is %d)",
                          i, j, quoted(q, sizeof(q), name, nlen), nlen, PS_LABEL_NAME_MAX);
    if (has_nul(name, nlen))
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: label name %s contains a NUL byte", i, j,
                          quoted(q, sizeof(q), name, nlen));
    if (!ps_utf8_valid((const char *)name, nlen))
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: label name %s is not valid UTF-8", i, j,
                          quoted(q, sizeof(q), name, nlen));
    if (prev != NULL) {
        size_t m = prev->nlen < nlen ? prev->nlen : nlen;
        int c = memcmp(prev->name, name, m);
        if (c == 0 && prev->nlen == nlen)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: duplicate label name %s", i, j,
                              quoted(q, sizeof(q), name, nlen));
        if (c > 0 || (c == 0 && prev->nlen > nlen))
            return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: label names not sorted: %s after %s", i, j,
                              quoted(q, sizeof(q), name, nlen),
                              quoted(q2, sizeof(q2), (const uint8_t *)prev->name, prev->nlen));
    }
    if (vlen == 0)
        return *is_name ? ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: empty __name__ (the metric name)", i, j)
                        : ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: empty value of label %s", i, j,
                                     quoted(q, sizeof(q), name, nlen));
    if (vlen > PS_LABEL_VALUE_MAX)
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: value of label %s is %zu bytes long (the limit is %d)",
                          i, j, quoted(q, sizeof(q), name, nlen), vlen, PS_LABEL_VALUE_MAX);
    if (has_nul(value, vlen))
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: value of label %s contains a NUL byte", i, j,
                          quoted(q, sizeof(q), name, nlen));
    if (!ps_utf8_valid((const char *)value, vlen))
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels[%u]: value of label %s is not valid UTF-8", i, j,
                          quoted(q, sizeof(q), name, nlen));
    pair->name = ps_arena_strndup(arena, (const char *)name, nlen);
    pair->value = ps_arena_strndup(arena, (const char *)value, vlen);
    pair->nlen = (uint32_t)nlen;
    pair->vlen = (uint32_t)vlen;
    return 0;
}

/* A metadata string: valid UTF-8 without NUL, copied. */
static int check_meta_str(const char *where, uint32_t i, const char *field, const uint8_t *s, size_t n,
                          ps_arena_t *arena, const char **out, uint32_t *outn, ps_err_t *err)
{
    if (has_nul(s, n))
        return ps_err_set(err, PS_EINVAL, "%s[%u].%s contains a NUL byte", where, i, field);
    if (!ps_utf8_valid((const char *)s, n))
        return ps_err_set(err, PS_EINVAL, "%s[%u].%s is not valid UTF-8", where, i, field);
    *out = ps_arena_strndup(arena, (const char *)s, n);
    *outn = (uint32_t)n;
    return 0;
}

static int check_type(const char *where, uint32_t i, int type, ps_err_t *err)
{
    if (type < 0 || type > 7)
        return ps_err_set(err, PS_EINVAL, "%s[%u].type: unknown metric type %d (0..7)", where, i, type);
    return 0;
}

/* Reserved or foreign fields in the top-level message: a body of the other version. */
static int check_unknown(const ProtobufCMessage *m, int version, ps_err_t *err)
{
    for (unsigned k = 0; k < m->n_unknown_fields; k++) {
        uint32_t tag = m->unknown_fields[k].tag;
        if (version == 2 && tag >= 1 && tag <= 3)
            return ps_err_set(err, PS_EINVAL,
                              "field %u is reserved in a 2.0 request (is this a 1.0 prometheus.WriteRequest?)", tag);
        if (version == 1 && (tag == 4 || tag == 5))
            return ps_err_set(err, PS_EINVAL,
                              "field %u is not part of a 1.0 request (is this a 2.0 io.prometheus.write.v2.Request?)",
                              tag);
    }
    return 0;
}

/* ---- 1.0 ------------------------------------------------------------------------------------ */

static int convert_v1(const pb_write_t *pb, const ps_remote_limits_t *lim, ps_arena_t *arena, ps_remote_write_t *w,
                      ps_err_t *err)
{
    int rc = check_unknown(&pb->base, 1, err);
    if (rc != 0)
        return rc;
    if (pb->n_timeseries > lim->max_series)
        return ps_err_set(err, PS_ETOOBIG, "%zu timeseries (the limit is %u)", pb->n_timeseries, lim->max_series);
    if (pb->n_metadata > lim->max_metadata)
        return ps_err_set(err, PS_ETOOBIG, "%zu metadata entries (the limit is %u)", pb->n_metadata, lim->max_metadata);
    uint64_t total = 0;
    for (size_t i = 0; i < pb->n_timeseries; i++)
        total += pb->timeseries[i]->n_samples;
    if (total > lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "%llu samples (the limit is %llu)", (unsigned long long)total,
                          (unsigned long long)lim->max_samples);

    w->series = ps_arena_calloc(arena, pb->n_timeseries ? pb->n_timeseries : 1, sizeof(*w->series));
    for (uint32_t i = 0; i < pb->n_timeseries; i++) {
        const pb_series_t *ts = pb->timeseries[i];
        ps_remote_series_t *s = &w->series[i];
        if (ts->n_labels > PS_LABELS_MAX)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u]: too many labels: %zu (the limit is %d)", i, ts->n_labels,
                              PS_LABELS_MAX);
        s->labels.pairs = ps_arena_alloc(arena, (ts->n_labels ? ts->n_labels : 1) * sizeof(ps_label_pair_t));
        bool have_name = false;
        for (uint32_t j = 0; j < ts->n_labels; j++) {
            const pb_label_t *l = ts->labels[j];
            bool is_name;
            rc = check_label(i, j, l->name.data, l->name.len, l->value.data, l->value.len,
                             j > 0 ? &s->labels.pairs[j - 1] : NULL, arena, &s->labels.pairs[j], &is_name, err);
            if (rc != 0)
                return rc;
            have_name |= is_name;
        }
        if (!have_name)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u]: no __name__ label (the metric name is required)", i);
        s->labels.n = (uint32_t)ts->n_labels;
        s->nsamples = (uint32_t)ts->n_samples;
        s->samples = ps_arena_alloc(arena, (ts->n_samples ? ts->n_samples : 1) * sizeof(ps_remote_sample_t));
        for (uint32_t k = 0; k < ts->n_samples; k++) {
            s->samples[k].t_ms = ts->samples[k]->timestamp;
            s->samples[k].v = ts->samples[k]->value;
        }
        s->nhistograms = (uint32_t)ts->n_histograms;
        s->nexemplars = (uint32_t)ts->n_exemplars;
        s->meta = -1;
        w->nsamples += s->nsamples;
        w->nhistograms += s->nhistograms;
        w->nexemplars += s->nexemplars;
    }
    w->nseries = (uint32_t)pb->n_timeseries;

    w->metadata = ps_arena_calloc(arena, pb->n_metadata ? pb->n_metadata : 1, sizeof(*w->metadata));
    for (uint32_t i = 0; i < pb->n_metadata; i++) {
        const pb_meta_t *m = pb->metadata[i];
        ps_remote_metadata_t *d = &w->metadata[i];
        if ((rc = check_type("metadata", i, (int)m->type, err)) != 0)
            return rc;
        d->type = (ps_metric_type_t)m->type;
        if (m->metric_family_name.len == 0)
            return ps_err_set(err, PS_EINVAL, "metadata[%u].metric_family_name is empty", i);
        if ((rc = check_meta_str("metadata", i, "metric_family_name", m->metric_family_name.data,
                                 m->metric_family_name.len, arena, &d->family, &d->family_len, err)) != 0 ||
            (rc = check_meta_str("metadata", i, "help", m->help.data, m->help.len, arena, &d->help, &d->help_len,
                                 err)) != 0 ||
            (rc = check_meta_str("metadata", i, "unit", m->unit.data, m->unit.len, arena, &d->unit, &d->unit_len,
                                 err)) != 0)
            return rc;
    }
    w->nmetadata = (uint32_t)pb->n_metadata;
    return 0;
}

/* ---- 2.0 ------------------------------------------------------------------------------------ */

static int check_ref(uint32_t ref, size_t nsym, uint32_t i, const char *what, uint32_t k, ps_err_t *err)
{
    if (ref >= nsym)
        return ps_err_set(err, PS_EINVAL, "timeseries[%u].%s[%u]: symbol ref %u out of range (%zu symbols)", i, what, k,
                          ref, nsym);
    return 0;
}

static int convert_v2(const pb_v2_t *pb, const ps_remote_limits_t *lim, ps_arena_t *arena, ps_remote_write_t *w,
                      ps_err_t *err)
{
    int rc = check_unknown(&pb->base, 2, err);
    if (rc != 0)
        return rc;
    if (pb->n_symbols > lim->max_symbols)
        return ps_err_set(err, PS_ETOOBIG, "%zu symbols (the limit is %u)", pb->n_symbols, lim->max_symbols);
    if (pb->n_timeseries > lim->max_series)
        return ps_err_set(err, PS_ETOOBIG, "%zu timeseries (the limit is %u)", pb->n_timeseries, lim->max_series);
    if (pb->n_symbols > 0 && pb->symbols[0].len != 0)
        return ps_err_set(err, PS_EINVAL, "symbols[0] must be the empty string (it is %zu bytes long)",
                          pb->symbols[0].len);
    uint64_t total = 0;
    size_t nmeta = 0;
    for (size_t i = 0; i < pb->n_timeseries; i++) {
        total += pb->timeseries[i]->n_samples;
        nmeta += pb->timeseries[i]->metadata != NULL;
    }
    if (total > lim->max_samples)
        return ps_err_set(err, PS_ETOOBIG, "%llu samples (the limit is %llu)", (unsigned long long)total,
                          (unsigned long long)lim->max_samples);
    if (nmeta > lim->max_metadata)
        return ps_err_set(err, PS_ETOOBIG, "%zu series with metadata (the limit is %u)", nmeta, lim->max_metadata);

    const size_t nsym = pb->n_symbols;
    const ProtobufCBinaryData *sym = pb->symbols;
    w->series = ps_arena_calloc(arena, pb->n_timeseries ? pb->n_timeseries : 1, sizeof(*w->series));
    w->metadata = ps_arena_calloc(arena, nmeta ? nmeta : 1, sizeof(*w->metadata));
    for (uint32_t i = 0; i < pb->n_timeseries; i++) {
        const pb_v2_series_t *ts = pb->timeseries[i];
        ps_remote_series_t *s = &w->series[i];
        if (ts->n_labels_refs % 2 != 0)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u].labels_refs: odd number of refs (%zu): they come in pairs",
                              i, ts->n_labels_refs);
        size_t nl = ts->n_labels_refs / 2;
        if (nl > PS_LABELS_MAX)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u]: too many labels: %zu (the limit is %d)", i, nl,
                              PS_LABELS_MAX);
        for (uint32_t k = 0; k < ts->n_labels_refs; k++)
            if ((rc = check_ref(ts->labels_refs[k], nsym, i, "labels_refs", k, err)) != 0)
                return rc;
        s->labels.pairs = ps_arena_alloc(arena, (nl ? nl : 1) * sizeof(ps_label_pair_t));
        bool have_name = false;
        const ps_label_pair_t *name_pair = NULL;
        for (uint32_t j = 0; j < nl; j++) {
            const ProtobufCBinaryData *n = &sym[ts->labels_refs[2 * j]], *v = &sym[ts->labels_refs[2 * j + 1]];
            bool is_name;
            rc = check_label(i, j, n->data, n->len, v->data, v->len, j > 0 ? &s->labels.pairs[j - 1] : NULL, arena,
                             &s->labels.pairs[j], &is_name, err);
            if (rc != 0)
                return rc;
            if (is_name) {
                have_name = true;
                name_pair = &s->labels.pairs[j];
            }
        }
        if (!have_name)
            return ps_err_set(err, PS_EINVAL, "timeseries[%u]: no __name__ label (the metric name is required)", i);
        s->labels.n = (uint32_t)nl;
        if (ts->n_samples > 0 && ts->n_histograms > 0)
            return ps_err_set(err, PS_EINVAL,
                              "timeseries[%u]: has both samples (%zu) and histograms (%zu); 2.0 wants separate series",
                              i, ts->n_samples, ts->n_histograms);
        s->nsamples = (uint32_t)ts->n_samples;
        s->samples = ps_arena_alloc(arena, (ts->n_samples ? ts->n_samples : 1) * sizeof(ps_remote_sample_t));
        for (uint32_t k = 0; k < ts->n_samples; k++) {
            s->samples[k].t_ms = ts->samples[k]->timestamp;
            s->samples[k].v = ts->samples[k]->value;
        }
        for (uint32_t e = 0; e < ts->n_exemplars; e++) {
            const pb_v2_exemplar_t *ex = ts->exemplars[e];
            for (uint32_t k = 0; k < ex->n_labels_refs; k++)
                if (ex->labels_refs[k] >= nsym)
                    return ps_err_set(err, PS_EINVAL,
                                      "timeseries[%u].exemplars[%u].labels_refs[%u]: symbol ref %u out of range (%zu "
                                      "symbols)",
                                      i, e, k, ex->labels_refs[k], nsym);
        }
        s->nhistograms = (uint32_t)ts->n_histograms;
        s->nexemplars = (uint32_t)ts->n_exemplars;
        s->created_ms = ts->created_timestamp; /* before rc.4; since, on each sample */
        for (uint32_t k = 0; k < ts->n_samples && s->created_ms == 0; k++)
            s->created_ms = ts->samples[k]->start_timestamp;
        s->meta = -1;
        if (ts->metadata != NULL) {
            const pb_v2_meta_t *m = ts->metadata;
            char where[64];
            snprintf(where, sizeof(where), "timeseries[%u].metadata", i);
            if ((int)m->type < 0 || (int)m->type > 7)
                return ps_err_set(err, PS_EINVAL, "%s.type: unknown metric type %d (0..7)", where, (int)m->type);
            if (m->help_ref >= nsym)
                return ps_err_set(err, PS_EINVAL, "%s.help_ref: symbol ref %u out of range (%zu symbols)", where,
                                  m->help_ref, nsym);
            if (m->unit_ref >= nsym)
                return ps_err_set(err, PS_EINVAL, "%s.unit_ref: symbol ref %u out of range (%zu symbols)", where,
                                  m->unit_ref, nsym);
            ps_remote_metadata_t *d = &w->metadata[w->nmetadata];
            d->type = (ps_metric_type_t)m->type;
            d->family = name_pair->value;
            d->family_len = name_pair->vlen;
            if ((rc = check_meta_str("timeseries", i, "metadata.help", sym[m->help_ref].data, sym[m->help_ref].len,
                                     arena, &d->help, &d->help_len, err)) != 0 ||
                (rc = check_meta_str("timeseries", i, "metadata.unit", sym[m->unit_ref].data, sym[m->unit_ref].len,
                                     arena, &d->unit, &d->unit_len, err)) != 0)
                return rc;
            s->meta = (int32_t)w->nmetadata++;
        }
        w->nsamples += s->nsamples;
        w->nhistograms += s->nhistograms;
        w->nexemplars += s->nexemplars;
    }
    w->nseries = (uint32_t)pb->n_timeseries;
    return 0;
}

/* ---- the direct 1.0 decoder ----------------------------------------------------------------- */

/* What Prometheus sends (1.0 series of labels and samples) is read straight from the wire bytes
 * into ps_remote_write_t, without protobuf-c's structs and without copying the strings: a label's
 * name and value point into the uncompressed buffer, NUL-terminated in place once the whole request
 * has been read (the byte after a string is a field key or length of what follows, already read,
 * or the spare byte ps_wire_unsnappy leaves after the buffer). It takes only what it is sure of:
 * anything else (metadata, exemplars, unknown fields, keys of more than one byte, any wire format
 * or validation error, a limit) declines, and the protobuf-c path below decides, so errors stay
 * theirs word for word. What it accepts, protobuf-c unpack + convert_v1 accept with the same result
 * (tests/unit/proto/test_remote.c and tests/fuzz/fuzz_remote.c compare the two on every input):
 * repeated fields in order, the last value for a singular field, varints as protobuf-c reads them
 * (at most 10 bytes, lengths at most 5 and INT_MAX). */

/* The next field's one-byte key (field 1..15) and, for wire type 2, its bytes (*sub, *sublen).
 * false for anything else (a longer key, field 0, a truncated length). */
static inline bool dv_field(const uint8_t **pp, const uint8_t *end, unsigned *num, unsigned *wt, const uint8_t **sub,
                            size_t *sublen)
{
    const uint8_t *p = *pp;
    uint8_t key = *p++;
    if (key & 0x80 || (key >> 3) == 0)
        return false;
    *num = key >> 3;
    *wt = key & 7;
    if (*wt == WT_LEN) {
        uint64_t len;
        if (!dv_varint(&p, end, 5, &len) || len > INT_MAX || len > (size_t)(end - p))
            return false;
        *sub = p;
        *sublen = (size_t)len;
        p += len;
    }
    *pp = p;
    return true;
}

/* Every byte in 1..0x7f: then it has no NUL and is valid UTF-8. Eight bytes at a time: a byte
 * 1..0x7f less 1 is 0..0x7e without a borrow, so neither it nor the byte has its top bit set;
 * 0 less 1 and 0x80..0xff do. */
static inline bool dv_ascii(const uint8_t *s, size_t n)
{
    const uint64_t ones = UINT64_C(0x0101010101010101), tops = UINT64_C(0x8080808080808080);
    uint64_t bad = 0, x;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&x, s + i, 8);
        bad |= (x - ones) | x;
    }
    if (i < n) {
        x = 0;
        memcpy(&x, s + i, n - i);
        x |= ones << (8 * (n - i)); /* the rest: 0x01 bytes (little-endian; else a decline) */
        bad |= (x - ones) | x;
    }
    return (bad & tops) == 0;
}

static inline bool dv_text(const uint8_t *s, size_t n)
{
    return dv_ascii(s, n) || (!has_nul(s, n) && ps_utf8_valid((const char *)s, n));
}

/* One Label message into pair (pointing into the buffer), checked as check_label checks it. */
static bool dv_label(const uint8_t *p, size_t n, const ps_label_pair_t *prev, ps_label_pair_t *pair, bool *is_name)
{
    const uint8_t *end = p + n, *name = NULL, *value = NULL;
    size_t nlen = 0, vlen = 0;
    while (p < end) {
        unsigned num = 0, wt = 0;
        const uint8_t *s = NULL;
        size_t sn = 0;
        if (!dv_field(&p, end, &num, &wt, &s, &sn) || wt != WT_LEN || num > 2)
            return false;
        if (num == 1)
            name = s, nlen = sn;
        else
            value = s, vlen = sn;
    }
    if (nlen == 0 || nlen > PS_LABEL_NAME_MAX || vlen == 0 || vlen > PS_LABEL_VALUE_MAX || !dv_text(name, nlen) ||
        !dv_text(value, vlen))
        return false;
    if (prev != NULL) {
        size_t m = prev->nlen < nlen ? prev->nlen : nlen;
        int c = memcmp(prev->name, name, m);
        if (c > 0 || (c == 0 && prev->nlen >= nlen))
            return false;
    }
    *is_name = nlen == 8 && memcmp(name, "__name__", 8) == 0;
    pair->name = (const char *)name;
    pair->value = (const char *)value;
    pair->nlen = (uint32_t)nlen;
    pair->vlen = (uint32_t)vlen;
    return true;
}

/* One Sample message: value (fixed64), timestamp and start_timestamp (varints; 1.0 keeps no start). */
static bool dv_sample(const uint8_t *p, size_t n, ps_remote_sample_t *out)
{
    const uint8_t *end = p + n;
    uint64_t bits = 0, t = 0, v;
    while (p < end) {
        uint8_t key = *p++;
        if (key == (1 << 3 | WT_I64)) {
            if (end - p < 8)
                return false;
            memcpy(&bits, p, 8); /* little-endian hosts only, as protobuf-c */
            p += 8;
        } else if (key == (2 << 3 | WT_VARINT)) {
            if (!dv_varint(&p, end, 10, &t))
                return false;
        } else if (key == (3 << 3 | WT_VARINT)) {
            if (!dv_varint(&p, end, 10, &v))
                return false;
        } else {
            return false;
        }
    }
    out->t_ms = (int64_t)t;
    memcpy(&out->v, &bits, 8);
    return true;
}

/* One TimeSeries of labels, samples and histograms (counted) into s; false to decline. */
static bool dv_series(const uint8_t *p, size_t n, ps_arena_t *arena, ps_remote_series_t *s, uint64_t *total,
                      uint64_t max_samples)
{
    const uint8_t *end = p + n, *q = p;
    size_t nl = 0, ns = 0, nh = 0;
    while (q < end) {
        unsigned num = 0, wt = 0;
        const uint8_t *sub = NULL;
        size_t sn = 0;
        if (!dv_field(&q, end, &num, &wt, &sub, &sn) || wt != WT_LEN)
            return false;
        if (num == 1)
            nl++;
        else if (num == 2)
            ns++;
        else if (num == 4)
            nh++;
        else
            return false; /* exemplars (3) and unknown fields: protobuf-c's */
    }
    *total += ns;
    if (nl > PS_LABELS_MAX || *total > max_samples)
        return false;
    s->labels.pairs = ps_arena_alloc(arena, (nl ? nl : 1) * sizeof(ps_label_pair_t));
    s->samples = ps_arena_alloc(arena, (ns ? ns : 1) * sizeof(ps_remote_sample_t));
    uint32_t jl = 0, js = 0;
    bool have_name = false;
    while (p < end) {
        unsigned num = 0, wt = 0;
        const uint8_t *sub = NULL;
        size_t sn = 0;
        dv_field(&p, end, &num, &wt, &sub, &sn); /* read once above */
        if (num == 1) {
            bool is_name = false;
            if (!dv_label(sub, sn, jl > 0 ? &s->labels.pairs[jl - 1] : NULL, &s->labels.pairs[jl], &is_name))
                return false;
            have_name |= is_name;
            jl++;
        } else if (num == 2) {
            if (!dv_sample(sub, sn, &s->samples[js++]))
                return false;
        }
    }
    if (!have_name)
        return false;
    s->labels.n = (uint32_t)nl;
    s->nsamples = (uint32_t)ns;
    s->nhistograms = (uint32_t)nh;
    s->meta = -1;
    return true;
}

/* raw (ulen bytes, with a spare byte after) as a 1.0 WriteRequest into *w: 0, or 1 = declined
 * (nothing in *w is valid; the protobuf-c path decides). raw is left as it was when declined. */
static int decode_v1_direct(char *raw, size_t ulen, const ps_remote_limits_t *lim, ps_arena_t *arena,
                            ps_remote_write_t *w)
{
    const uint8_t *u = (const uint8_t *)raw, *end = u + ulen, *p = u;
    size_t nts = 0;
    while (p < end) {
        unsigned num = 0, wt = 0;
        const uint8_t *sub = NULL;
        size_t sn = 0;
        if (!dv_field(&p, end, &num, &wt, &sub, &sn) || num != 1 || wt != WT_LEN)
            return 1; /* metadata (3), the other version's fields, unknown fields: protobuf-c's */
        nts++;
    }
    if (nts > lim->max_series)
        return 1;
    w->series = ps_arena_calloc(arena, nts ? nts : 1, sizeof(*w->series));
    uint64_t total = 0, nh = 0;
    p = u;
    for (size_t i = 0; i < nts; i++) {
        unsigned num = 0, wt = 0;
        const uint8_t *sub = NULL;
        size_t sn = 0;
        dv_field(&p, end, &num, &wt, &sub, &sn);
        if (!dv_series(sub, sn, arena, &w->series[i], &total, lim->max_samples))
            return 1;
        nh += w->series[i].nhistograms;
    }
    /* accepted: terminate every string in place */
    for (size_t i = 0; i < nts; i++) {
        const ps_labels_t *ls = &w->series[i].labels;
        for (uint32_t j = 0; j < ls->n; j++) {
            ((char *)ls->pairs[j].name)[ls->pairs[j].nlen] = '\0';
            ((char *)ls->pairs[j].value)[ls->pairs[j].vlen] = '\0';
        }
    }
    w->version = 1;
    w->nseries = (uint32_t)nts;
    w->nsamples = total;
    w->nhistograms = nh;
    w->metadata = ps_arena_calloc(arena, 1, sizeof(*w->metadata));
    return 0;
}

/* ---- snappy (wire.h) ------------------------------------------------------------------------ */

int ps_wire_unsnappy(const void *body, size_t n, size_t max, const char *what, ps_arena_t *arena, char **out,
                     size_t *outlen, ps_err_t *err)
{
    size_t ulen = 0;
    if (n == 0)
        return ps_err_set(err, PS_EINVAL, "snappy: empty body (expected snappy block format)");
    if (n >= 10 && memcmp(body, "\xff\x06\x00\x00sNaPpY", 10) == 0)
        return ps_err_set(err, PS_EINVAL, "snappy: framed (stream) format; %s uses the block format", what);
    if (snappy_uncompressed_length(body, n, &ulen) != SNAPPY_OK)
        return ps_err_set(err, PS_EINVAL, "snappy: corrupt input (bad uncompressed-length header)");
    if (ulen > max)
        return ps_err_set(err, PS_ETOOBIG, "snappy: the body announces %zu uncompressed bytes (the limit is %zu)", ulen,
                          max);
    int rc = ps_inflate_reserve(ulen, 0, err); /* the process-wide budget of bytes being decompressed */
    if (rc != 0)
        return rc;
    char *raw = ps_arena_alloc(arena, ulen + 1); /* a spare byte: decode_v1_direct's last NUL */
    size_t got = ulen;
    rc = snappy_uncompress(body, n, raw, &got) != SNAPPY_OK || got != ulen;
    ps_inflate_release(ulen);
    if (rc)
        return ps_err_set(err, PS_EINVAL, "snappy: corrupt or truncated input (%zu bytes, announcing %zu uncompressed)",
                          n, ulen);
    *out = raw;
    *outlen = ulen;
    return 0;
}

int ps_wire_snappy(const void *raw, size_t len, ps_buf_t *out, ps_err_t *err)
{
    size_t max = snappy_max_compressed_length(len);
    char *dst = (char *)ps_buf_reserve(out, max);
    size_t clen = max;
    if (snappy_compress(raw ? (const char *)raw : "", len, dst, &clen) != SNAPPY_OK)
        return ps_err_set(err, PS_EINTERNAL, "snappy: compression failed");
    out->len += clen;
    return 0;
}

/* ---- protobuf-c unpacking (wire.h) ---------------------------------------------------------- */

#define UNPACK_BYTES_PER_INPUT_BYTE 48

size_t ps_wire_unpack_budget(size_t ulen)
{
    return ulen < (SIZE_MAX / 2 - (1u << 20)) / UNPACK_BYTES_PER_INPUT_BYTE ? ulen * UNPACK_BYTES_PER_INPUT_BYTE + (1u << 20)
                                                                           : SIZE_MAX / 2;
}

int ps_wire_unpack_error(const mdesc_t *md, const uint8_t *u, size_t ulen, bool over, size_t budget, const char *what,
                         ps_err_t *err)
{
    if (over)
        return ps_err_set(err, PS_ETOOBIG, "protobuf: %s needs more than %zu bytes to unpack", what, budget);
    if (ps_wire_scan(md, u, u + ulen, "", 0, u, err) != 0)
        return ps_err_prefix(err, "protobuf: malformed %s (uncompressed)", what);
    return ps_err_set(err, PS_EINVAL, "protobuf: malformed %s (protobuf-c cannot unpack it)", what);
}

/* ---- decode --------------------------------------------------------------------------------- */

int ps_remote_write_decode(const void *body, size_t n, int version, const ps_remote_limits_t *lim,
                           ps_arena_t *arena, ps_remote_write_t *out, ps_err_t *err)
{
    return ps_remote_write_decode_path(body, n, version, lim, arena, out, PS_REMOTE_DECODE_ANY, err);
}

int ps_remote_write_decode_path(const void *body, size_t n, int version, const ps_remote_limits_t *lim,
                                ps_arena_t *arena, ps_remote_write_t *out, ps_remote_decode_path_t path, ps_err_t *err)
{
    ps_remote_limits_t def;
    size_t ulen = 0;
    int rc;

    memset(out, 0, sizeof(*out));
    if (lim == NULL) {
        ps_remote_limits_default(&def);
        lim = &def;
    }
    if (version != 1 && version != 2)
        return ps_err_set(err, PS_EUNSUPPORTED, "remote-write version %d is not supported (1 or 2)", version);
    char *raw;
    if ((rc = ps_wire_unsnappy(body, n, lim->max_uncompressed, "remote write", arena, &raw, &ulen, err)) != 0)
        return rc;

    if (version == 1 && path != PS_REMOTE_DECODE_PROTOBUF_C) {
        if (decode_v1_direct(raw, ulen, lim, arena, out) == 0)
            return 0;
        memset(out, 0, sizeof(*out));
        if (path == PS_REMOTE_DECODE_DIRECT)
            return PS_REMOTE_DECLINED;
    }
    ps_pb_arena_t pa;
    ps_pb_arena_init(&pa, arena, ps_wire_unpack_budget(ulen));
    const uint8_t *u = (const uint8_t *)raw;
    ProtobufCMessage *msg = version == 1
                                ? (ProtobufCMessage *)profstore__remote__write_request__unpack(&pa.base, ulen, u)
                                : (ProtobufCMessage *)profstore__remote__v2_request__unpack(&pa.base, ulen, u);
    if (msg == NULL)
        return ps_wire_unpack_error(version == 1 ? &m_write : &m_v2, u, ulen, pa.over, pa.budget,
                                    version == 1 ? "prometheus.WriteRequest" : "io.prometheus.write.v2.Request", err);
    out->version = version;
    rc = version == 1 ? convert_v1((const pb_write_t *)msg, lim, arena, out, err)
                      : convert_v2((const pb_v2_t *)msg, lim, arena, out, err);
    if (rc != 0)
        memset(out, 0, sizeof(*out));
    return rc;
}

/* ---- encode --------------------------------------------------------------------------------- */

static ProtobufCBinaryData bin(const char *s, size_t n)
{
    ProtobufCBinaryData b = {n, (uint8_t *)s};
    return b;
}

static pb_sample_t **enc_samples(const ps_remote_series_t *s, ps_arena_t *a)
{
    pb_sample_t **v = ps_arena_alloc(a, (s->nsamples ? s->nsamples : 1) * sizeof(*v));
    pb_sample_t *e = ps_arena_alloc(a, (s->nsamples ? s->nsamples : 1) * sizeof(*e));
    for (uint32_t k = 0; k < s->nsamples; k++) {
        profstore__remote__sample__init(&e[k]);
        e[k].value = s->samples[k].v;
        e[k].timestamp = s->samples[k].t_ms;
        v[k] = &e[k];
    }
    return v;
}

static size_t pack_v1(const ps_remote_write_t *w, ps_arena_t *a, uint8_t **buf)
{
    pb_write_t req;
    profstore__remote__write_request__init(&req);
    req.n_timeseries = w->nseries;
    req.timeseries = ps_arena_alloc(a, (w->nseries ? w->nseries : 1) * sizeof(pb_series_t *));
    for (uint32_t i = 0; i < w->nseries; i++) {
        const ps_remote_series_t *s = &w->series[i];
        pb_series_t *ts = ps_arena_alloc(a, sizeof(*ts));
        profstore__remote__time_series__init(ts);
        ts->n_labels = s->labels.n;
        ts->labels = ps_arena_alloc(a, (s->labels.n ? s->labels.n : 1) * sizeof(pb_label_t *));
        pb_label_t *ls = ps_arena_alloc(a, (s->labels.n ? s->labels.n : 1) * sizeof(pb_label_t));
        for (uint32_t j = 0; j < s->labels.n; j++) {
            profstore__remote__label__init(&ls[j]);
            ls[j].name = bin(s->labels.pairs[j].name, s->labels.pairs[j].nlen);
            ls[j].value = bin(s->labels.pairs[j].value, s->labels.pairs[j].vlen);
            ts->labels[j] = &ls[j];
        }
        ts->n_samples = s->nsamples;
        ts->samples = enc_samples(s, a);
        req.timeseries[i] = ts;
    }
    req.n_metadata = w->nmetadata;
    req.metadata = ps_arena_alloc(a, (w->nmetadata ? w->nmetadata : 1) * sizeof(pb_meta_t *));
    for (uint32_t i = 0; i < w->nmetadata; i++) {
        const ps_remote_metadata_t *d = &w->metadata[i];
        pb_meta_t *m = ps_arena_alloc(a, sizeof(*m));
        profstore__remote__metric_metadata__init(m);
        m->type = (Profstore__Remote__MetricMetadata__MetricType)d->type;
        m->metric_family_name = bin(d->family, d->family_len);
        m->help = bin(d->help, d->help_len);
        m->unit = bin(d->unit, d->unit_len);
        req.metadata[i] = m;
    }
    size_t len = profstore__remote__write_request__get_packed_size(&req);
    *buf = ps_arena_alloc(a, len ? len : 1);
    return profstore__remote__write_request__pack(&req, *buf);
}

/* The symbol index of s (added when new). */
static uint32_t intern(ps_hmap_t *m, ProtobufCBinaryData **syms, size_t *nsym, size_t *cap, ps_arena_t *a,
                       const char *s, size_t n)
{
    uint64_t v;
    if (ps_hmap_get(m, s, n, &v))
        return (uint32_t)v;
    if (*nsym == *cap) {
        size_t ncap = *cap ? *cap * 2 : 64;
        ProtobufCBinaryData *ns = ps_arena_alloc(a, ncap * sizeof(*ns));
        if (*nsym)
            memcpy(ns, *syms, *nsym * sizeof(*ns));
        *syms = ns;
        *cap = ncap;
    }
    (*syms)[*nsym] = bin(s, n);
    ps_hmap_put(m, s, n, *nsym);
    return (uint32_t)(*nsym)++;
}

static size_t pack_v2(const ps_remote_write_t *w, ps_arena_t *a, uint8_t **buf)
{
    pb_v2_t req;
    ps_hmap_t m;
    size_t nsym = 0, cap = 0;
    ProtobufCBinaryData *syms = NULL;

    ps_hmap_init(&m);
    profstore__remote__v2_request__init(&req);
    intern(&m, &syms, &nsym, &cap, a, "", 0);
    req.n_timeseries = w->nseries;
    req.timeseries = ps_arena_alloc(a, (w->nseries ? w->nseries : 1) * sizeof(pb_v2_series_t *));
    for (uint32_t i = 0; i < w->nseries; i++) {
        const ps_remote_series_t *s = &w->series[i];
        pb_v2_series_t *ts = ps_arena_alloc(a, sizeof(*ts));
        profstore__remote__v2_time_series__init(ts);
        ts->n_labels_refs = 2 * (size_t)s->labels.n;
        ts->labels_refs = ps_arena_alloc(a, (ts->n_labels_refs ? ts->n_labels_refs : 1) * sizeof(uint32_t));
        for (uint32_t j = 0; j < s->labels.n; j++) {
            const ps_label_pair_t *p = &s->labels.pairs[j];
            ts->labels_refs[2 * j] = intern(&m, &syms, &nsym, &cap, a, p->name, p->nlen);
            ts->labels_refs[2 * j + 1] = intern(&m, &syms, &nsym, &cap, a, p->value, p->vlen);
        }
        ts->n_samples = s->nsamples;
        ts->samples = enc_samples(s, a);
        ts->created_timestamp = s->created_ms;
        if (s->meta >= 0 && (uint32_t)s->meta < w->nmetadata) {
            const ps_remote_metadata_t *d = &w->metadata[s->meta];
            pb_v2_meta_t *md = ps_arena_alloc(a, sizeof(*md));
            profstore__remote__v2_metadata__init(md);
            md->type = (Profstore__Remote__MetricMetadata__MetricType)d->type;
            md->help_ref = intern(&m, &syms, &nsym, &cap, a, d->help, d->help_len);
            md->unit_ref = intern(&m, &syms, &nsym, &cap, a, d->unit, d->unit_len);
            ts->metadata = md;
        }
        req.timeseries[i] = ts;
    }
    req.n_symbols = nsym;
    req.symbols = syms;
    size_t len = profstore__remote__v2_request__get_packed_size(&req);
    *buf = ps_arena_alloc(a, len ? len : 1);
    len = profstore__remote__v2_request__pack(&req, *buf);
    ps_hmap_dispose(&m);
    return len;
}

int ps_remote_write_encode(const ps_remote_write_t *w, int version, ps_buf_t *out, ps_err_t *err)
{
    ps_arena_t a = PS_ARENA_INIT;
    uint8_t *raw;
    int rc = 0;

    if (version != 1 && version != 2)
        return ps_err_set(err, PS_EUNSUPPORTED, "remote-write version %d is not supported (1 or 2)", version);
    size_t len = version == 1 ? pack_v1(w, &a, &raw) : pack_v2(w, &a, &raw);
    rc = ps_wire_snappy(raw, len, out, err);
    ps_arena_dispose(&a);
    return rc;
}
