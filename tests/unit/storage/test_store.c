/*
 * test_store.c - the store end to end through its API: every real fixture profile appended and
 * read back equal (stacks, symbols, sample labels, values, time, duration, period), from head
 * records, from chunks and after reopening; ordering, duplicates, conflicts, batches where one
 * profile fails alone, retention, schema version refusal; the compactor's idle rule across cache
 * clears, errors of the index walks and of damaged chunks, stats from the committed snapshot.
 * A few tests reach into storage/internal.h (the reader's transaction, the writer's counters) to
 * produce states the API cannot.
 */
#include <dirent.h>
#include <lmdb.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "../testutil.h"
#include "../storewriter.h"

#include "core/timeutil.h"
#include "proto/pprof.h"
#include "storage/chunk.h"
#include "storage/internal.h"
#include "storage/store.h"



static char *tmpdir(void) { return ps_test_tmpdir("/tmp/ps-test-store-XXXXXX"); }

static ps_store_t *open_store_opts(const char *dir, int64_t retention, uint64_t cache_bytes, uint32_t pending_max)
{
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    o.retention_ns = retention;
    o.nosync = true;
    o.compact_max_profiles = 120;
    if (cache_bytes)
        o.cache_bytes = cache_bytes;
    o.series_pending_max = pending_max;
    ps_store_t *s = NULL;
    ps_err_t err;
    int rc = ps_store_open(&o, &s, &err);
    if (rc)
        fail_msg("open: %s", err.msg);
    return s;
}

static ps_store_t *open_store_cache(const char *dir, int64_t retention, uint64_t cache_bytes)
{
    return open_store_opts(dir, retention, cache_bytes, 0);
}

static ps_store_t *open_store(const char *dir, int64_t retention)
{
    return open_store_cache(dir, retention, 0);
}

/* ---- canonical form of one sample type of a profile: sorted (key, value), zeros dropped ---- */

typedef struct kv {
    char *key;
    int64_t value;
} kv_t;

static void put_str(ps_buf_t *b, const ps_profile_t *p, uint32_t i)
{
    ps_str_t s = ps_profile_str(p, i);
    ps_buf_printf(b, "%u:", s.len);
    ps_buf_append(b, s.ptr, s.len);
}

static int cmp_cstr(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static char *sample_key(const ps_profile_t *p, const ps_sample_t *s)
{
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t i = 0; i < s->nlocs; i++) {
        const ps_location_t *l = &p->locations[s->locs[i] - 1];
        ps_buf_printf(&b, "[loc addr=%llx folded=%u ", (unsigned long long)l->address, l->is_folded);
        if (l->mapping) {
            const ps_mapping_t *m = &p->mappings[l->mapping - 1];
            ps_buf_printf(&b, "map(%llx,%llx,%llx,%x,", (unsigned long long)m->memory_start,
                          (unsigned long long)m->memory_limit, (unsigned long long)m->file_offset, m->flags);
            put_str(&b, p, m->filename);
            put_str(&b, p, m->build_id);
            ps_buf_putc(&b, ')');
        }
        for (uint32_t j = 0; j < l->nlines; j++) {
            const ps_line_t *ln = &l->lines[j];
            ps_buf_printf(&b, " line(%lld,%lld,", (long long)ln->line, (long long)ln->column);
            if (ln->function) {
                const ps_function_t *f = &p->functions[ln->function - 1];
                put_str(&b, p, f->name);
                put_str(&b, p, f->system_name);
                put_str(&b, p, f->filename);
                ps_buf_printf(&b, "%lld", (long long)f->start_line);
            }
            ps_buf_putc(&b, ')');
        }
        ps_buf_putc(&b, ']');
    }
    /* sample labels are a set: compare them sorted */
    ps_buf_append(&b, " labels:", 8);
    char *ls[64];
    uint32_t nl = s->nlabels < 64 ? s->nlabels : 64;
    for (uint32_t j = 0; j < nl; j++) {
        ps_buf_t lb = PS_BUF_INIT;
        put_str(&lb, p, s->labels[j].key);
        put_str(&lb, p, s->labels[j].str);
        ps_buf_printf(&lb, "%lld", (long long)s->labels[j].num);
        put_str(&lb, p, s->labels[j].num_unit);
        ps_buf_putc(&lb, 0);
        ls[j] = strdup((char *)lb.data);
        ps_buf_dispose(&lb);
    }
    qsort(ls, nl, sizeof(char *), cmp_cstr);
    for (uint32_t j = 0; j < nl; j++) {
        ps_buf_append(&b, ls[j], strlen(ls[j]));
        ps_buf_putc(&b, ';');
        free(ls[j]);
    }
    ps_buf_putc(&b, 0);
    char *r = strdup((char *)b.data);
    ps_buf_dispose(&b);
    return r;
}

static int cmp_kv(const void *a, const void *b)
{
    return strcmp(((const kv_t *)a)->key, ((const kv_t *)b)->key);
}

static kv_t *canonical(const ps_profile_t *p, uint32_t t, size_t *n)
{
    kv_t *v = calloc(p->nsamples + 1, sizeof(kv_t));
    size_t m = 0;
    for (uint32_t i = 0; i < p->nsamples; i++) {
        v[m].key = sample_key(p, &p->samples[i]);
        v[m].value = p->samples[i].values[t];
        m++;
    }
    qsort(v, m, sizeof(kv_t), cmp_kv);
    size_t k = 0;
    for (size_t i = 0; i < m; i++) {
        if (k > 0 && strcmp(v[k - 1].key, v[i].key) == 0) {
            v[k - 1].value += v[i].value;
            free(v[i].key);
        } else {
            v[k++] = v[i];
        }
    }
    size_t z = 0;
    for (size_t i = 0; i < k; i++) {
        if (v[i].value != 0)
            v[z++] = v[i];
        else
            free(v[i].key);
    }
    *n = z;
    return v;
}

static void free_kv(kv_t *v, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(v[i].key);
    free(v);
}

typedef struct got {
    int found;
    ps_stored_profile_t p;
    uint64_t *nodes;
    int64_t *values;
} got_t;

static int on_got(void *ctx, const ps_stored_profile_t *p)
{
    got_t *g = ctx;
    g->found++;
    g->p = *p;
    g->nodes = malloc((p->n + 1) * 8);
    g->values = malloc((p->n + 1) * 8);
    memcpy(g->nodes, p->nodes, p->n * 8);
    memcpy(g->values, p->values, p->n * 8);
    return 0;
}

/* Reads series sid at ts back and compares with sample type t of the original. */
static void check_series(ps_store_t *s, uint64_t sid, int64_t ts, const ps_profile_t *orig, uint32_t t, const char *what)
{
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    got_t g = {0};
    assert_int_equal(ps_reader_profiles(r, sid, ts, ts, false, on_got, &g, &err), 0);
    if (g.found != 1)
        fail_msg("%s: found %d profiles at ts", what, g.found);
    assert_int_equal(g.p.ts, ts);
    assert_int_equal(g.p.duration, orig->duration_nanos);
    assert_int_equal(g.p.period, orig->period);
    ps_str_t st = ps_profile_str(orig, orig->sample_types[t].type), su = ps_profile_str(orig, orig->sample_types[t].unit);
    char stn[128], sun[128];
    snprintf(stn, sizeof(stn), "%.*s", (int)st.len, st.ptr);
    snprintf(sun, sizeof(sun), "%.*s", (int)su.len, su.ptr);
    const char *types[2] = {stn, sun}, *pt[2] = {"x", "y"};
    ps_arena_t a = PS_ARENA_INIT;
    ps_profile_t back;
    if (ps_reader_materialize(r, g.nodes, g.values, g.p.n, 1, types, pt, &a, &back, &err) != 0)
        fail_msg("%s: materialize: %s", what, err.msg);
    /* the rebuilt profile must also survive the pprof encoder and decoder */
    ps_buf_t enc = PS_BUF_INIT;
    assert_int_equal(ps_pprof_encode(&back, 1, &enc, &err), 0);
    ps_profile_t back2;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    if (ps_pprof_decode(enc.data, enc.len, &lim, &a, &back2, &err) != 0)
        fail_msg("%s: re-decode: %s", what, err.msg);
    size_t n1, n2;
    kv_t *c1 = canonical(orig, t, &n1), *c2 = canonical(&back2, 0, &n2);
    int64_t total = 0;
    for (size_t i = 0; i < n1; i++)
        total += c1[i].value;
    assert_int_equal(g.p.total, total);
    if (n1 != n2)
        fail_msg("%s: %zu distinct stacks stored, %zu in the original", what, n2, n1);
    for (size_t i = 0; i < n1; i++) {
        if (strcmp(c1[i].key, c2[i].key) != 0)
            fail_msg("%s: stack %zu differs:\n  orig %s\n  back %s", what, i, c1[i].key, c2[i].key);
        if (c1[i].value != c2[i].value)
            fail_msg("%s: stack %zu value %lld != %lld", what, i, (long long)c2[i].value, (long long)c1[i].value);
    }
    free_kv(c1, n1);
    free_kv(c2, n2);
    ps_buf_dispose(&enc);
    ps_arena_dispose(&a);
    free(g.nodes);
    free(g.values);
    ps_reader_end(r);
}

typedef struct fixture {
    const char *file, *name;
} fixture_t;

static const fixture_t fixtures[] = {
    {"pprof/go/cpu-01.pb.gz", NULL},        {"pprof/go/cpu-01.pb", NULL},      {"pprof/go/cpu-02.pb.gz", NULL},
    {"pprof/go/cpu-seed2-01.pb.gz", NULL},  {"pprof/go/heap-01.pb.gz", NULL},  {"pprof/go/heap-gc-01.pb.gz", NULL},
    {"pprof/go/allocs-01.pb.gz", NULL},     {"pprof/go/goroutine-01.pb.gz", NULL},
    {"pprof/go/block-01.pb.gz", "block"},   {"pprof/go/mutex-01.pb.gz", "mutex"},
    {"pprof/go/threadcreate-01.pb.gz", NULL}, {"pprof/node/cpu-01.pb.gz", NULL},
    {"pprof/node/wall-01.pb.gz", NULL},     {"pprof/node/heap-01.pb.gz", NULL},
};
#define NFIX (sizeof(fixtures) / sizeof(fixtures[0]))

typedef struct pushed {
    ps_arena_t arena;
    ps_append_t app;
    uint8_t *bytes;
} pushed_t;

/* Parses the tests' own label strings: {a="b",c="d"} (no escapes, no spaces). */
static uint32_t parse_test_labels(const char *s, ps_arena_t *a, ps_label_pair_t *out, uint32_t max)
{
    uint32_t n = 0;
    assert_true(*s == '{');
    s++;
    while (*s && *s != '}') {
        const char *eq = strchr(s, '='), *q2 = strchr(eq + 2, '"');
        assert_true(n < max && eq != NULL && eq[1] == '"' && q2 != NULL);
        out[n].name = ps_arena_strndup(a, s, (size_t)(eq - s));
        out[n].nlen = (uint32_t)(eq - s);
        out[n].value = ps_arena_strndup(a, eq + 2, (size_t)(q2 - eq - 2));
        out[n].vlen = (uint32_t)(q2 - eq - 2);
        n++;
        s = q2 + 1;
        if (*s == ',')
            s++;
    }
    return n;
}

/* Decodes a fixture and builds its append the way ingest does: one series per sample type, named
 * by its profile type id NAME:type:unit:period_type:period_unit, with the given labels. */
static void prepare(pushed_t *p, const fixture_t *f, const char *labels, int64_t ts)
{
    char path[1024];
    snprintf(path, sizeof(path), "%s/%s", ps_test_testdata(), f->file);
    size_t n = 0;
    p->bytes = ps_test_read_path(path, &n);
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    ps_profile_t *prof = ps_arena_calloc(&p->arena, 1, sizeof(*prof));
    if (ps_pprof_decode(p->bytes, n, &lim, &p->arena, prof, &err) != 0)
        fail_msg("%s: %s", f->file, err.msg);
    uint32_t nt = prof->ntypes;
    ps_labels_t *series = ps_arena_calloc(&p->arena, nt, sizeof(ps_labels_t));
    uint32_t *ti = ps_arena_calloc(&p->arena, nt, sizeof(uint32_t));
    for (uint32_t i = 0; i < nt; i++) {
        ps_label_pair_t *pairs = ps_arena_calloc(&p->arena, 16, sizeof(ps_label_pair_t));
        uint32_t np = parse_test_labels(labels, &p->arena, pairs, 15);
        ps_str_t st = ps_profile_str(prof, prof->sample_types[i].type), su = ps_profile_str(prof, prof->sample_types[i].unit);
        ps_str_t pt = ps_profile_str(prof, prof->period_type.type), pu = ps_profile_str(prof, prof->period_type.unit);
        if (pt.len == 0 && pu.len == 0) {
            pt = st;
            pu = su;
        }
        char id[256];
        int idn = snprintf(id, sizeof(id), "%s:%.*s:%.*s:%.*s:%.*s", f->name ? f->name : "test", (int)st.len, st.ptr,
                           (int)su.len, su.ptr, (int)pt.len, pt.ptr, (int)pu.len, pu.ptr);
        pairs[np].name = "__name__";
        pairs[np].nlen = 8;
        pairs[np].value = ps_arena_strndup(&p->arena, id, (size_t)idn);
        pairs[np].vlen = (uint32_t)idn;
        series[i] = (ps_labels_t){np + 1, pairs};
        if (ps_labels_normalize(&series[i], &err) != 0)
            fail_msg("%s: %s", f->file, err.msg);
        ti[i] = i;
    }
    p->app.profile = prof;
    p->app.nseries = nt;
    p->app.series_labels = series;
    p->app.type_index = ti;
    p->app.ts = ts ? ts : (prof->time_nanos > 0 ? prof->time_nanos : ps_time_now());
    p->app.duration = prof->duration_nanos;
    p->app.period = prof->period;
    p->app.series_ids = ps_arena_calloc(&p->arena, nt, sizeof(uint64_t));
    p->app.series_samples = ps_arena_calloc(&p->arena, nt, sizeof(uint32_t));
}

static void release(pushed_t *p)
{
    ps_arena_dispose(&p->arena);
    free(p->bytes);
    memset(p, 0, sizeof(*p));
}

static void test_roundtrip_all_fixtures(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t ps[NFIX];
    memset(ps, 0, sizeof(ps));
    ps_append_t *items[NFIX];
    for (size_t i = 0; i < NFIX; i++) {
        char labels[128];
        snprintf(labels, sizeof(labels), "{job=\"test\",fixture=\"%zu\"}", i);
        prepare(&ps[i], &fixtures[i], labels, 0);
        items[i] = &ps[i].app;
    }
    ps_err_t err;
    if (ps_store_write_batch(ps_test_writer(s), items, NFIX, &err) != 0)
        fail_msg("write: %s", err.msg);
    for (int phase = 0; phase < 3; phase++) {
        static const char *names[] = {"head", "chunk", "reopened"};
        if (phase == 1) {
            uint32_t nchunks = 0;
            if (ps_store_compact(ps_test_writer(s), true, ps_time_now(), &nchunks, &err) != 0)
                fail_msg("compact: %s", err.msg);
            assert_true(nchunks >= NFIX);
            ps_store_stats_t st;
            assert_int_equal(ps_store_stats(s, &st, &err), 0);
            assert_int_equal(st.head_records, 0);
        }
        if (phase == 2) {
            ps_test_close_store(s);
            s = open_store(dir, 0);
        }
        for (size_t i = 0; i < NFIX; i++) {
            assert_int_equal(ps[i].app.status, 0);
            for (uint32_t k = 0; k < ps[i].app.nseries; k++) {
                char what[256];
                snprintf(what, sizeof(what), "%s type %u (%s)", fixtures[i].file, k, names[phase]);
                check_series(s, ps[i].app.series_ids[k], ps[i].app.ts, ps[i].app.profile, ps[i].app.type_index[k], what);
            }
        }
    }
    for (size_t i = 0; i < NFIX; i++)
        release(&ps[i]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static int write_one(ps_store_t *s, const fixture_t *f, const char *labels, int64_t ts, pushed_t *p)
{
    prepare(p, f, labels, ts);
    ps_append_t *it = &p->app;
    ps_err_t err;
    int rc = ps_store_write_batch(ps_test_writer(s), &it, 1, &err);
    assert_int_equal(rc, 0);
    return it->status;
}

static void test_order_duplicates_conflicts(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t p = {0};
    int64_t t0 = 1796022364000000000ll;
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0, &p), 0);
    release(&p);
    /* identical again: accepted as a duplicate */
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0, &p), 0);
    assert_true(p.app.duplicate);
    release(&p);
    /* the raw (ungzipped) form of the same profile is the same profile */
    assert_int_equal(write_one(s, &fixtures[1], "{job=\"a\"}", t0, &p), 0);
    assert_true(p.app.duplicate);
    release(&p);
    /* different content, same time: conflict */
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"a\"}", t0, &p), PS_ECONFLICT);
    assert_non_null(strstr(p.app.err.msg, "different profile"));
    release(&p);
    /* older: out of order */
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"a\"}", t0 - 1000000000, &p), PS_EOUTOFORDER);
    assert_non_null(strstr(p.app.err.msg, "out of order"));
    release(&p);
    /* newer: fine */
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"a\"}", t0 + 10000000000ll, &p), 0);
    release(&p);
    /* a batch where the middle profile fails alone */
    pushed_t b[3];
    memset(b, 0, sizeof(b));
    prepare(&b[0], &fixtures[3], "{job=\"b\"}", t0);
    prepare(&b[1], &fixtures[2], "{job=\"a\"}", t0 - 5000000000ll);
    prepare(&b[2], &fixtures[4], "{job=\"b\"}", t0);
    ps_append_t *items[3] = {&b[0].app, &b[1].app, &b[2].app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 3, &err), 0);
    assert_int_equal(b[0].app.status, 0);
    assert_int_equal(b[1].app.status, PS_EOUTOFORDER);
    assert_int_equal(b[2].app.status, 0);
    check_series(s, b[0].app.series_ids[1], t0, b[0].app.profile, 1, "batch item 0");
    check_series(s, b[2].app.series_ids[3], t0, b[2].app.profile, 3, "batch item 2");
    for (int i = 0; i < 3; i++)
        release(&b[i]);
    /* after compaction the same timestamp is still refused */
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, ps_time_now(), NULL, &err), 0);
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"a\"}", t0 + 5000000000ll, &p), PS_EOUTOFORDER);
    release(&p);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

typedef struct count_ctx {
    int n;
} count_ctx_t;

static int count_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    ((count_ctx_t *)ctx)->n++;
    return 0;
}

static int count_profiles(void *ctx, const ps_stored_profile_t *p)
{
    ((count_ctx_t *)ctx)->n++;
    return 0;
}

static void test_compaction_chunks_and_retention(void **state)
{
    char *dir = tmpdir();
    int64_t now = ps_time_now();
    ps_store_t *s = open_store(dir, 3600ll * PS_NS_PER_S); /* 1 h */
    /* 250 profiles 10 s apart from 59 min ago in series a; 5 recent ones in series b */
    ps_err_t err;
    uint64_t sid_a = 0, sid_b = 0;
    for (int i = 0; i < 250; i++) {
        pushed_t p = {0};
        int64_t ts = now - 59 * 60 * PS_NS_PER_S + i * 10 * PS_NS_PER_S; /* inside retention at write time */
        assert_int_equal(write_one(s, &fixtures[i % 3], "{job=\"a\"}", ts, &p), 0);
        sid_a = p.app.series_ids[1];
        release(&p);
    }
    for (int i = 0; i < 5; i++) {
        pushed_t p = {0};
        assert_int_equal(write_one(s, &fixtures[0], "{job=\"b\"}", now - (5 - i) * PS_NS_PER_S, &p), 0);
        sid_b = p.app.series_ids[1];
        release(&p);
    }
    uint32_t nchunks = 0;
    assert_int_equal(ps_store_compact(ps_test_writer(s), false, now, &nchunks, &err), 0);
    /* series a reached 120 twice: at least 2 chunks per sample type */
    assert_true(nchunks >= 4);
    ps_reader_t *r;
    count_ctx_t c = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_profiles(r, sid_a, INT64_MIN, INT64_MAX, true, count_profiles, &c, &err), 0);
    assert_int_equal(c.n, 250);
    c.n = 0;
    assert_int_equal(ps_reader_profiles(r, sid_b, INT64_MIN, INT64_MAX, false, count_profiles, &c, &err), 0);
    assert_int_equal(c.n, 5);
    ps_reader_end(r);
    /* retention applied now: nothing has expired (no series touched), nothing dropped */
    uint32_t dropped = 1;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now, &dropped, &err), 0);
    assert_int_equal(dropped, 0);
    /* retention 1 h applied 2 h later: a and b both gone */
    dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now + 2 * 3600ll * PS_NS_PER_S, &dropped, &err), 0);
    assert_int_equal(dropped, 4);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    c.n = 0;
    assert_int_equal(ps_reader_series_foreach(r, count_series, &c, &err), 0);
    assert_int_equal(c.n, 0);
    ps_reader_end(r);
    /* a series can be written again after it was dropped */
    pushed_t p = {0};
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", now, &p), 0);
    release(&p);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Counts the chunks of each encoding (enc[encoding byte]) in s; checks that the references (small)
 * sit in the leaf pages, and only the large chunks on overflow pages. */
static void chunk_encodings(ps_store_t *s, uint32_t enc[256])
{
    ps_reader_t *r;
    ps_err_t err;
    memset(enc, 0, 256 * sizeof(uint32_t));
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_cur_t cur;
    size_t ovpages = 0;
    assert_true(ps_cur_open(&cur, &r->txn, DB_CHUNKS, "counting chunks"));
    for (bool on = ps_cur_first(&cur); on; on = ps_cur_next(&cur)) {
        uint8_t e = ((const uint8_t *)cur.v.mv_data)[0];
        enc[e]++;
        if (e == PS_CHUNK_ENC_REF)
            assert_true(cur.v.mv_size < 1000);
        else if (cur.v.mv_size > 2500)
            ovpages += (cur.v.mv_size + 15) / 4096 + 1; /* LMDB's OVPAGES, 4 KiB pages */
        else if (cur.v.mv_size >= 1000)
            fail_msg("a chunk of %zu bytes: neither surely inline nor surely on overflow pages", cur.v.mv_size);
    }
    ps_cur_close(&cur);
    MDB_stat st;
    assert_int_equal(mdb_stat(r->txn.txn, s->dbi[DB_CHUNKS], &st), 0);
    assert_int_equal(st.ms_psize, 4096);
    assert_int_equal(st.ms_overflow_pages, ovpages);
    ps_reader_end(r);
}

static void count_damage(void *ctx, const char *msg)
{
    snprintf(ctx, 512, "%s", msg);
}

/*
 * The background compaction takes 256 series a transaction; twins are found within one, so a cut
 * between the two series of a profile would store both whole. One goroutine series first, so
 * that the CPU profiles' pairs of series ids straddle the 256th: every pair still refers.
 */
static void test_twins_across_the_cut(void **state)
{
    (void)state;
    char *dir = tmpdir();
    int64_t now = ps_time_now();
    ps_store_t *s = open_store(dir, 0);
    enum { NP = 130 };
    pushed_t *p = calloc(NP + 1, sizeof(pushed_t));
    ps_err_t err;
    for (int i = 0; i <= NP; i++) {
        char labels[64];
        snprintf(labels, sizeof(labels), "{job=\"cut\",instance=\"i%03d\"}", i);
        prepare(&p[i], &fixtures[i == 0 ? 7 : 0], labels, now - 60 * PS_NS_PER_S + i);
        assert_int_equal(p[i].app.nseries, i == 0 ? 1 : 2);
        ps_append_t *it = &p[i].app;
        assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
        assert_int_equal(it->status, 0);
    }
    assert_int_equal(p[128].app.series_ids[0] + 1, p[128].app.series_ids[1]);
    assert_int_equal(p[128].app.series_ids[0] - p[0].app.series_ids[0], 255); /* the 256th and 257th */
    uint32_t nchunks = 0, enc[256];
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, now, &nchunks, &err), 0);
    assert_int_equal(nchunks, 2 * NP + 1);
    chunk_encodings(s, enc);
    assert_int_equal(enc[PS_CHUNK_ENC_REF], NP);
    for (int i = 0; i <= NP; i++) {
        for (uint32_t k = 0; k < p[i].app.nseries; k++) {
            char labels[64];
            snprintf(labels, sizeof(labels), "{job=\"cut\",instance=\"i%03d\"}", i);
            check_series(s, p[i].app.series_ids[k], p[i].app.ts, p[i].app.profile, k, labels);
        }
        release(&p[i]);
    }
    free(p);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * A Go CPU profile's cpu/nanoseconds are its samples/count times the period: compaction stores
 * the chunk of one type as a reference to the other's (PS_CHUNK_ENC_REF), every profile reads back
 * as written (also reopened), the check finds no damage; a profile with one value off falls back
 * to packed chunks. Retention drops a chunk and its twin together; a missing twin is a precise
 * error.
 */
static void test_twin_chunks(void **state)
{
    char *dir = tmpdir();
    int64_t now = ps_time_now(), t0 = now - 50 * 60 * PS_NS_PER_S, t1 = now - 5 * 60 * PS_NS_PER_S;
    ps_store_t *s = open_store(dir, 3600ll * PS_NS_PER_S);
    enum { NP = 52, OFF = 50 }; /* old: 0, 1; twin: 2..49 (Go CPU profiles of 3 kinds, random counts: a
                                 * chunk on overflow pages); off: 50, 51 */
    const char *jobs[NP];
    for (int i = 0; i < NP; i++)
        jobs[i] = i < 2 ? "{job=\"old\"}" : i < OFF ? "{job=\"twin\"}" : "{job=\"off\"}";
    static const int fix[3] = {0, 2, 3}; /* cpu-01, cpu-02, cpu-seed2-01 */
    pushed_t p[NP];
    memset(p, 0, sizeof(p));
    ps_err_t err;
    for (int i = 0; i < NP; i++) {
        prepare(&p[i], &fixtures[i < OFF ? fix[i % 3] : 0], jobs[i], (i < 2 ? t0 : t1) + i * 10 * PS_NS_PER_S);
        assert_int_equal(p[i].app.nseries, 2); /* samples/count, cpu/nanoseconds */
        if (i >= 2 && i < OFF) /* random counts (big chunks), nanoseconds = count x period */
            for (uint32_t k = 0; k < p[i].app.profile->nsamples; k++) {
                int64_t *v = p[i].app.profile->samples[k].values;
                v[0] = 1 + (int64_t)(ps_test_rnd() % 1000);
                v[1] = v[0] * p[i].app.profile->period;
            }
        if (i == NP - 1) /* one nanoseconds value not count x period */
            p[i].app.profile->samples[3].values[1] += 1;
        ps_append_t *it = &p[i].app;
        assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
        assert_int_equal(it->status, 0);
    }
    uint32_t nchunks = 0, enc[256];
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, now, &nchunks, &err), 0);
    assert_int_equal(nchunks, 6);
    chunk_encodings(s, enc);
    assert_int_equal(enc[PS_CHUNK_ENC_ZSTD], 4); /* old, twin: one type each; off: both */
    assert_int_equal(enc[PS_CHUNK_ENC_REF], 2);
    for (int phase = 0; phase < 2; phase++) {
        if (phase == 1) {
            ps_test_close_store(s);
            s = open_store(dir, 3600ll * PS_NS_PER_S);
        }
        for (int i = 0; i < NP; i++)
            for (uint32_t k = 0; k < 2; k++)
                check_series(s, p[i].app.series_ids[k], p[i].app.ts, p[i].app.profile, k, jobs[i]);
        ps_check_stats_t st = {0};
        char last[512] = "";
        assert_int_equal(ps_store_check(s, count_damage, last, &st, NULL, &err), 0);
        assert_int_equal(st.damaged, 0);
        assert_int_equal(st.chunks, 6);
        assert_int_equal(st.profiles, 2 * NP);
    }
    /* retention: the old job's chunk and its reference go in the same pass (40 min from now: the
     * cutoff is 20 min ago) */
    uint32_t dropped = 0;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now + 40 * 60 * PS_NS_PER_S, &dropped, &err), 0);
    assert_int_equal(dropped, 2);
    chunk_encodings(s, enc);
    assert_int_equal(enc[PS_CHUNK_ENC_ZSTD], 3);
    assert_int_equal(enc[PS_CHUNK_ENC_REF], 1);
    for (int i = 2; i < NP; i++)
        for (uint32_t k = 0; k < 2; k++)
            check_series(s, p[i].app.series_ids[k], p[i].app.ts, p[i].app.profile, k, jobs[i]);
    /* the twin of the reference deleted behind the store's back: reading it is a precise error */
    uint64_t holder = 0, twin = 0;
    int64_t max_ts = p[OFF - 1].app.ts;
    for (uint32_t k = 0; k < 2; k++) {
        uint64_t sid = p[2].app.series_ids[k];
        ps_reader_t *r;
        assert_int_equal(ps_reader_begin(s, &r, &err), 0);
        uint8_t kb[16];
        MDB_val v;
        ps_key_sid_ts(kb, sid, max_ts);
        assert_true(ps_txn_get(&r->txn, DB_CHUNKS, kb, 16, &v, "test"));
        if (((const uint8_t *)v.mv_data)[0] == PS_CHUNK_ENC_REF) {
            holder = sid;
            assert_int_equal(ps_chunk_ref_sid(v.mv_data, v.mv_size, &twin, &err), 1);
        }
        ps_reader_end(r);
    }
    assert_true(holder != 0 && (twin == p[2].app.series_ids[0] || twin == p[2].app.series_ids[1]) && twin != holder);
    ps_txn_t t;
    uint8_t kb[16];
    ps_key_sid_ts(kb, twin, max_ts);
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "test"), 0);
    assert_true(ps_txn_del(&t, DB_CHUNKS, kb, 16, NULL, 0, "test"));
    assert_int_equal(ps_txn_commit(&t, &err, "test"), 0);
    ps_reader_t *r;
    count_ctx_t c = {0};
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_profiles(r, holder, INT64_MIN, INT64_MAX, false, count_profiles, &c, &err), PS_ECORRUPT);
    char want[256];
    snprintf(want, sizeof(want),
             "series %llu: damaged chunk (chunk up to %lld): chunk: the chunk of series %llu up to %lld it refers to "
             "is missing",
             (unsigned long long)holder, (long long)max_ts, (unsigned long long)twin, (long long)max_ts);
    assert_string_equal(err.msg, want);
    ps_sum_info_t info = {0};
    assert_int_equal(ps_reader_sum(r, holder, INT64_MIN, INT64_MAX, NULL, NULL, &info, &err), 0); /* meta only */
    assert_int_equal(info.profiles, OFF - 2);
    ps_reader_end(r);
    ps_check_stats_t st = {0};
    char last[512] = "";
    assert_int_equal(ps_store_check(s, count_damage, last, &st, NULL, &err), 0);
    assert_int_equal(st.damaged, 1);
    assert_non_null(strstr(last, "it refers to is missing"));
    for (int i = 0; i < NP; i++)
        release(&p[i]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * The idle rule (no profile for compact_window of wall time) measures from the last append in
 * this process, which must survive everything that clears the writer's caches: a same-timestamp
 * retry (mode 0), a batch past cache_bytes (1), a retention run that deletes a series (2). With
 * a `now` just short of the window after the append (but past it after the store was opened)
 * nothing is due.
 */
static void test_idle_rule_survives_cache_clear(void **state)
{
    const int64_t w = 2 * 3600ll * PS_NS_PER_S; /* the default compact_window */
    const int64_t hour = 3600ll * PS_NS_PER_S;
    for (int mode = 0; mode < 3; mode++) {
        char *dir = tmpdir();
        /* mode 1: every batch is past the budget; mode 2: 1 h retention */
        ps_store_t *s = open_store_cache(dir, mode == 2 ? hour : 0, mode == 1 ? 1 : 0);
        pushed_t p = {0};
        int64_t t0 = 1796022364000000000ll;
        if (mode == 2) { /* series that retention will drop */
            t0 = ps_time_now();
            assert_int_equal(write_one(s, &fixtures[0], "{job=\"old\"}", t0 - 50 * 60 * PS_NS_PER_S, &p), 0);
            release(&p);
        }
        usleep(2000);
        int64_t before = ps_time_now();
        assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0, &p), 0);
        assert_int_equal(p.app.nseries, 2);
        release(&p);
        int64_t after = ps_time_now();
        ps_err_t err;
        if (mode == 0) { /* an identical retry: accepted as a duplicate, caches cleared */
            assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0, &p), 0);
            assert_true(p.app.duplicate);
            release(&p);
        }
        if (mode == 2) {
            uint32_t dropped = 0;
            assert_int_equal(ps_store_retain(ps_test_writer(s), t0 + 30 * 60 * PS_NS_PER_S, &dropped, &err), 0);
            assert_int_equal(dropped, 2);
            assert_int_equal(ps_test_writer(s)->append_wall.count, 2); /* the dropped series' entries are gone */
        }
        uint32_t n = 99;
        assert_int_equal(ps_store_compact(ps_test_writer(s), false, before + w - 1, &n, &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(ps_store_compact(ps_test_writer(s), false, after + w, &n, &err), 0);
        assert_int_equal(n, 2); /* one chunk per series: both idle now */
        /* and their append times are gone with it: the table holds the series of the window */
        assert_int_equal(ps_test_writer(s)->append_wall.count, 0);
        /* written again: the series' time is back, and it is not due until a window later */
        int64_t again = ps_time_now();
        assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0 + 10 * PS_NS_PER_S, &p), 0);
        release(&p);
        assert_int_equal(ps_test_writer(s)->append_wall.count, 2);
        assert_int_equal(ps_store_compact(ps_test_writer(s), false, again + w - 1, &n, &err), 0);
        assert_int_equal(n, 0);
        assert_int_equal(ps_test_writer(s)->append_wall.count, 2);
        ps_test_close_store(s);
        ps_test_rm_rf(dir);
        free(dir);
    }
}

/* The writer's sid -> wall table (ps_walls_t): set, overwrite, get, id 0, growth, drop. */
static void test_walls_map(void **state)
{
    (void)state;
    ps_walls_t m = {0};
    int64_t v = 0;
    assert_false(ps_walls_get(&m, 7, &v));
    assert_false(ps_walls_get(&m, 0, &v));
    for (uint64_t i = 0; i < 10000; i++) /* ids 0 and every 3rd from 1; values of both signs */
        ps_walls_set(&m, i * 3, (int64_t)i * 1000003 - 5000000);
    assert_int_equal(m.count, 10000);
    ps_walls_set(&m, 3, INT64_MIN); /* overwrite */
    ps_walls_set(&m, UINT64_MAX, INT64_MAX);
    assert_int_equal(m.count, 10001);
    for (uint64_t i = 0; i < 10000; i++) {
        assert_true(ps_walls_get(&m, i * 3, &v));
        assert_true(v == (i == 1 ? INT64_MIN : (int64_t)i * 1000003 - 5000000));
        assert_false(ps_walls_get(&m, i * 3 + 1, &v));
    }
    assert_true(ps_walls_get(&m, UINT64_MAX, &v));
    assert_true(v == INT64_MAX);
    uint64_t drop[] = {0, 6, 9, 29997, 29998 /* absent */, UINT64_MAX};
    ps_walls_drop(&m, drop, sizeof(drop) / sizeof(drop[0]));
    assert_int_equal(m.count, 10001 - 5);
    assert_false(ps_walls_get(&m, 0, &v));
    assert_false(ps_walls_get(&m, 6, &v));
    assert_false(ps_walls_get(&m, UINT64_MAX, &v));
    assert_true(ps_walls_get(&m, 12, &v));
    assert_true(v == 4 * 1000003 - 5000000);
    assert_true(ps_walls_get(&m, 3, &v));
    assert_true(v == INT64_MIN);
    /* expire: the values in [from, until] go (id 0's too), the table shrinks to what stays */
    ps_walls_set(&m, 0, -5000001);
    size_t cap = m.cap;
    ps_walls_expire(&m, -5000000, 1000003ll * 9990 - 5000000);
    assert_int_equal(m.count, 1 + 8 + 1); /* id 3's INT64_MIN, ids 3 * 9991..3 * 9998, id 0's */
    assert_true(m.cap < cap);
    assert_true(ps_walls_get(&m, 3, &v));
    assert_true(v == INT64_MIN);
    assert_false(ps_walls_get(&m, 12, &v));
    assert_false(ps_walls_get(&m, 3 * 9990, &v));
    assert_true(ps_walls_get(&m, 3 * 9991, &v));
    assert_true(v == 1000003ll * 9991 - 5000000);
    assert_true(ps_walls_get(&m, 0, &v));
    ps_walls_expire(&m, INT64_MIN, INT64_MAX);
    assert_int_equal(m.count, 0);
    assert_false(ps_walls_get(&m, 0, &v));
    assert_false(ps_walls_get(&m, 3, &v));
    ps_walls_dispose(&m);
    assert_false(ps_walls_get(&m, 12, &v));
    ps_walls_dispose(&m);
}

/*
 * The series caches (labels -> sid, each series' head state) are bounded by series_cache_max:
 * past it they start again from empty after a commit, and every answer stays the same: the same
 * ids for the same labels, out-of-order and duplicate checks from the stored records.
 */
static void test_series_cache_bound(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    o.nosync = true;
    o.retention_ns = 0;
    o.series_cache_max = 3;
    ps_store_t *s = NULL;
    ps_err_t err;
    assert_int_equal(ps_store_open(&o, &s, &err), 0);
    int64_t t0 = 1796022364000000000ll;
    uint64_t ids[10][2];
    pushed_t p = {0};
    for (int round = 0; round < 2; round++)
        for (int i = 0; i < 10; i++) {
            char ls[32];
            snprintf(ls, sizeof(ls), "{job=\"a%d\"}", i);
            assert_int_equal(write_one(s, &fixtures[0], ls, t0 + round * 10000000000ll, &p), 0);
            assert_false(p.app.duplicate);
            assert_int_equal(p.app.nseries, 2);
            for (int j = 0; j < 2; j++) {
                if (round == 0)
                    ids[i][j] = p.app.series_ids[j];
                else
                    assert_int_equal(p.app.series_ids[j], ids[i][j]);
            }
            release(&p);
            /* 2 series a write: never more than the bound plus one write's after a commit */
            assert_true(ps_test_writer(s)->wc->nstates <= 3);
            assert_true(ps_test_writer(s)->wc->series_cache.count <= 3);
        }
    assert_int_equal(ps_test_writer(s)->append_wall.count, 20);
    /* the checks read the stored state: older is out of order, the same again a duplicate */
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a0\"}", t0, &p), PS_EOUTOFORDER);
    release(&p);
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a9\"}", t0 + 10000000000ll, &p), 0);
    assert_true(p.app.duplicate);
    release(&p);
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 20);
    assert_int_equal(st.head_records, 40);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * A new series is looked up once a write: check_order finds it missing and append_one creates it
 * without asking the series index again (ps_series_create_absent), but still through the series
 * cache. A batch creates each label set once: the same new labels twice in one item (two sample
 * types made one series), a later item with labels an earlier one created; after the caches are
 * dropped the stored series are found again, not created anew.
 */
static void test_new_series_looked_up_once(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    int64_t t0 = 1796022364000000000ll;
    pushed_t b[3];
    memset(b, 0, sizeof(b));
    prepare(&b[0], &fixtures[0], "{job=\"n\"}", t0);
    prepare(&b[1], &fixtures[0], "{job=\"n\"}", t0 + 10000000000ll);
    prepare(&b[2], &fixtures[0], "{job=\"m\"}", t0);
    assert_int_equal(b[2].app.nseries, 2);
    ((ps_labels_t *)b[2].app.series_labels)[1] = b[2].app.series_labels[0];
    ps_append_t *items[3] = {&b[0].app, &b[1].app, &b[2].app};
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), items, 3, &err), 0);
    for (int i = 0; i < 3; i++)
        assert_int_equal(b[i].app.status, 0);
    assert_int_equal(b[1].app.series_ids[0], b[0].app.series_ids[0]);
    assert_int_equal(b[1].app.series_ids[1], b[0].app.series_ids[1]);
    assert_int_not_equal(b[0].app.series_ids[0], b[0].app.series_ids[1]);
    assert_int_equal(b[2].app.series_ids[1], b[2].app.series_ids[0]);
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 3);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    for (int i = 0; i < 3; i += 2)
        for (uint32_t k = 0; k < 2; k++) {
            uint64_t sid = 0;
            assert_int_equal(ps_reader_series_lookup(r, &b[i].app.series_labels[k], &sid, &err), 0);
            assert_int_equal(sid, b[i].app.series_ids[k]);
        }
    ps_reader_end(r);
    /* the caches dropped: the same labels are the stored series, found in the series index */
    ps_series_caches_clear(ps_test_writer(s));
    pushed_t p = {0};
    prepare(&p, &fixtures[0], "{job=\"n\"}", t0 + 20000000000ll);
    ps_append_t *it = &p.app;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    assert_int_equal(p.app.status, 0);
    assert_int_equal(p.app.series_ids[0], b[0].app.series_ids[0]);
    assert_int_equal(p.app.series_ids[1], b[0].app.series_ids[1]);
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 3);
    check_series(s, p.app.series_ids[1], p.app.ts, p.app.profile, 1, "after the caches were dropped");
    release(&p);
    for (int i = 0; i < 3; i++)
        release(&b[i]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* A series with both expired chunks and expired head records is dropped, and counted, once. */
static void test_retention_counts_series_once(void **state)
{
    char *dir = tmpdir();
    int64_t now = ps_time_now();
    ps_store_t *s = open_store(dir, 3600ll * PS_NS_PER_S);
    pushed_t p = {0};
    ps_err_t err;
    for (int i = 0; i < 3; i++) {
        assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", now - (30 - i) * 60 * PS_NS_PER_S, &p), 0);
        release(&p);
        if (i == 1)
            assert_int_equal(ps_store_compact(ps_test_writer(s), true, now, NULL, &err), 0);
    }
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 2);
    assert_int_equal(st.chunks, 2);
    assert_int_equal(st.head_records, 2);
    uint32_t dropped = 99;
    assert_int_equal(ps_store_retain(ps_test_writer(s), now + 10 * 3600ll * PS_NS_PER_S, &dropped, &err), 0);
    assert_int_equal(dropped, 2);
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 0);
    assert_int_equal(st.chunks, 0);
    assert_int_equal(st.head_records, 0);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Callbacks that end the reader's transaction at their first call: the walk's next LMDB step
 * fails, as a real LMDB error in the middle of a walk would. */
typedef struct breaker {
    ps_reader_t *r;
    int calls;
} breaker_t;

static int break_sid(void *ctx, uint64_t sid)
{
    breaker_t *b = ctx;
    if (b->calls++ == 0)
        mdb_txn_reset(b->r->txn.txn);
    return 0;
}

static int break_str(void *ctx, const char *v, size_t n)
{
    return break_sid(ctx, 0);
}

static void test_index_walk_errors(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t p = {0};
    int64_t t0 = 1796022364000000000ll;
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0, &p), 0); /* 2 series with job="a" */
    release(&p);
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"b\"}", t0, &p), 0);
    release(&p);
    ps_err_t ierr;
    assert_int_equal(ps_series_index_now(ps_test_writer(s), &ierr), 0); /* their postings in DB_POSTINGS */
    for (int fn = 0; fn < 3; fn++) {
        ps_reader_t *r;
        ps_err_t err = {0};
        assert_int_equal(ps_reader_begin(s, &r, &err), 0);
        breaker_t b = {r, 0};
        int rc;
        if (fn == 0)
            rc = ps_reader_postings(r, "job", 3, "a", 1, break_sid, &b, &err);
        else if (fn == 1)
            rc = ps_reader_label_values(r, "job", 3, break_str, &b, &err);
        else
            rc = ps_reader_label_names(r, break_str, &b, &err);
        assert_int_equal(b.calls, 1);
        assert_int_equal(rc, PS_ESTORAGE);
        assert_int_equal(err.code, PS_ESTORAGE);
        static const char *what[] = {"reading postings: ", "reading label values: ", "reading label names: "};
        if (strncmp(err.msg, what[fn], strlen(what[fn])) != 0)
            fail_msg("walk %d: message \"%s\"", fn, err.msg);
        ps_reader_end(r);
    }
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Rewrites the first byte of the first max values of database db of the store in dir (closed)
 * to v; returns how many it rewrote. */
static int damage(const char *dir, const char *db, int max, uint8_t v)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_dbi dbi;
    MDB_cursor *cur;
    assert_int_equal(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 16);
    mdb_env_set_mapsize(env, 1ull << 30);
    assert_int_equal(mdb_env_open(env, dir, 0, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &txn), 0);
    assert_int_equal(mdb_dbi_open(txn, db, 0, &dbi), 0);
    assert_int_equal(mdb_cursor_open(txn, dbi, &cur), 0);
    MDB_val k, d;
    int n = 0;
    for (int rc = mdb_cursor_get(cur, &k, &d, MDB_FIRST); rc == 0 && n < max;
         rc = mdb_cursor_get(cur, &k, &d, MDB_NEXT)) {
        uint8_t *copy = malloc(d.mv_size);
        memcpy(copy, d.mv_data, d.mv_size);
        copy[0] = v;
        MDB_val nd = {d.mv_size, copy};
        assert_int_equal(mdb_cursor_put(cur, &k, &nd, MDB_CURRENT), 0);
        free(copy);
        n++;
    }
    mdb_cursor_close(cur);
    assert_int_equal(mdb_txn_commit(txn), 0);
    mdb_env_close(env);
    return n;
}

/* A damaged chunk is an error for ps_reader_latest as for ps_reader_profiles: same code, same message. */
static void test_latest_damaged_chunk(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t p = {0};
    int64_t t0 = 1796022364000000000ll;
    uint64_t sid = 0;
    ps_err_t err;
    for (int i = 0; i < 2; i++) {
        assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", t0 + i * 10 * PS_NS_PER_S, &p), 0);
        sid = p.app.series_ids[0];
        release(&p);
    }
    assert_int_equal(ps_store_compact(ps_test_writer(s), true, t0, NULL, &err), 0);
    ps_reader_t *r;
    int64_t ts = 0;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, INT64_MAX, &ts, &err), 0);
    assert_int_equal(ts, t0 + 10 * PS_NS_PER_S);
    ps_reader_end(r);
    ps_test_close_store(s);
    assert_int_equal(damage(dir, "chunks", 100, 0x7f), 2); /* an encoding that does not exist */
    s = open_store(dir, 0);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    ps_err_t e1 = {0}, e2 = {0};
    count_ctx_t c = {0};
    assert_int_equal(ps_reader_profiles(r, sid, INT64_MIN, INT64_MAX, true, count_profiles, &c, &e1), PS_ECORRUPT);
    assert_int_equal(c.n, 0);
    assert_int_equal(ps_reader_latest(r, sid, INT64_MIN, INT64_MAX, &ts, &e2), PS_ECORRUPT);
    assert_int_equal(e2.code, PS_ECORRUPT);
    char want[128];
    snprintf(want, sizeof(want), "series %llu: damaged chunk header (chunk up to %lld)", (unsigned long long)sid,
             (long long)(t0 + 10 * PS_NS_PER_S));
    assert_string_equal(e1.msg, want);
    assert_string_equal(e2.msg, want);
    ps_err_t e3 = {0};
    assert_int_equal(ps_reader_has_data(r, sid, INT64_MIN, INT64_MAX, &e3), PS_ECORRUPT);
    assert_string_equal(e3.msg, want);
    ps_reader_end(r);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static int on_series_count(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    ((count_ctx_t *)ctx)->n++;
    return 0;
}

static int break_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    return break_sid(ctx, sid);
}

/* A damaged series record and an LMDB error in the series walk are errors with detail. */
static void test_series_read_errors(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t p = {0};
    ps_err_t err;
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"a\"}", 1796022364000000000ll, &p), 0);
    assert_int_equal(p.app.series_ids[0], 1);
    release(&p);
    ps_reader_t *r;
    /* mid-walk */
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    breaker_t b = {r, 0};
    ps_err_t e0 = {0};
    assert_int_equal(ps_reader_series_foreach(r, break_series, &b, &e0), PS_ESTORAGE);
    assert_int_equal(b.calls, 1);
    assert_true(strncmp(e0.msg, "reading series: ", 16) == 0);
    ps_reader_end(r);
    ps_test_close_store(s);
    assert_int_equal(damage(dir, "series", 1, 0x7f), 1); /* series 1's record */
    s = open_store(dir, 0);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    count_ctx_t c = {0};
    ps_err_t e1 = {0}, e2 = {0};
    assert_int_equal(ps_reader_series_foreach(r, on_series_count, &c, &e1), PS_ECORRUPT);
    assert_int_equal(c.n, 0);
    assert_string_equal(e1.msg, "series 1: damaged record");
    ps_arena_t a = PS_ARENA_INIT;
    ps_labels_t ls;
    assert_int_equal(ps_reader_series_labels(r, 1, &a, &ls, &e2), PS_ECORRUPT);
    assert_string_equal(e2.msg, "series 1: damaged record");
    assert_int_equal(ps_reader_series_labels(r, 2, &a, &ls, &e2), 0);
    assert_int_equal(ps_reader_series_labels(r, 3, &a, &ls, &e2), PS_ENOTFOUND);
    ps_arena_dispose(&a);
    ps_reader_end(r);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* Stats describe the committed store, never the writer's counters (which run ahead of it while a
 * batch is being written, on another thread). */
static void test_stats_from_snapshot(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    pushed_t p = {0};
    ps_err_t err;
    prepare(&p, &fixtures[0], "{job=\"a\"}", 1796022364000000000ll);
    /* distinct nonempty strings of the profile: what the store interns */
    const ps_profile_t *prof = p.app.profile;
    ps_hmap_t seen;
    ps_hmap_init(&seen);
    for (uint32_t i = 0; i < prof->nstrings; i++)
        if (prof->strings[i].len)
            ps_hmap_put(&seen, prof->strings[i].ptr, prof->strings[i].len, 1);
    uint64_t nstrings = seen.count;
    ps_hmap_dispose(&seen);
    ps_append_t *it = &p.app;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    assert_int_equal(it->status, 0);
    ps_store_stats_t st;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.strings, nstrings);
    assert_int_equal(st.functions, prof->nfunctions);
    assert_int_equal(st.series, 2);
    /* the writer in the middle of a batch: counters ahead of what is committed */
    ps_next_ids_t saved = ps_test_writer(s)->next;
    ps_test_writer(s)->next.sym[SYM_STRING] += 1000;
    ps_test_writer(s)->next.sym[SYM_FUNCTION] += 1000;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.strings, nstrings);
    assert_int_equal(st.functions, prof->nfunctions);
    ps_test_writer(s)->next = saved;
    release(&p);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_schema_version_refused(void **state)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    ps_test_close_store(s);
    /* rewrite the schema version behind the store's back */
    ps_test_store_downgrade(dir, 99, (const char *const[]){NULL});
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 1ull << 30;
    ps_err_t err;
    assert_int_equal(ps_store_open(&o, &s, &err), PS_EVERSION);
    assert_non_null(strstr(err.msg, "schema version 99"));
    ps_test_rm_rf(dir);
    free(dir);
}

/* one writer per store at a time; a read-only store has none */
static void test_writer_one(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    ps_err_t err;
    ps_store_writer_t *w = NULL, *w2 = NULL;
    assert_int_equal(ps_store_writer_open(s, &w, &err), 0);
    assert_int_equal(ps_store_writer_open(s, &w2, &err), PS_EINVAL);
    char want[4200];
    snprintf(want, sizeof(want), "data directory %s has a writer already", dir);
    assert_string_equal(err.msg, want);
    assert_null(w2);
    ps_store_writer_close(w);
    assert_int_equal(ps_store_writer_open(s, &w2, &err), 0);
    ps_store_writer_close(w2);
    ps_store_close(s);
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.read_only = true;
    assert_int_equal(ps_store_open(&o, &s, &err), 0);
    assert_int_equal(ps_store_writer_open(s, &w, &err), PS_EINVAL);
    snprintf(want, sizeof(want), "data directory %s is open read-only: it has no writer", dir);
    assert_string_equal(err.msg, want);
    ps_store_close(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * Sample labels are a set: one set, whether a sample lists its labels in another order or by other
 * indexes of equal strings, is one stack; the writer remembers a set per label list as the
 * profile gives it, so a repeated list, a reordered one and one by other indexes must all still
 * come to that one stack, and a subset to another.
 */
static void test_sample_label_sets(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    static ps_str_t strs[] = {{"", 0}, {"main", 4}, {"k", 1}, {"v", 1}, {"m", 1}, {"w", 1},
                              {"k", 1}, {"v", 1}, {"cpu", 3}, {"nanoseconds", 11}};
    ps_function_t fn = {.name = 1};
    ps_line_t line = {.function = 1, .line = 3};
    ps_location_t loc = {.address = 0x10, .nlines = 1, .lines = &line};
    uint32_t locs[1] = {1};
    /* a = k:v, b = m:w, a2 = k:v by the other indexes */
    const ps_label_t a = {.key = 2, .str = 3}, b = {.key = 4, .str = 5}, a2 = {.key = 6, .str = 7};
    ps_label_t lab[][2] = {{a, b}, {b, a}, {a, b}, {a2, b}, {a, {0}}, {b, a}, {b, a2}};
    const uint32_t nlab[] = {2, 2, 2, 2, 1, 2, 2};
    int64_t vals[] = {1, 2, 4, 8, 16, 32, 64};
    enum { NS = 7 };
    ps_sample_t smp[NS];
    for (int i = 0; i < NS; i++)
        smp[i] = (ps_sample_t){.nlocs = 1, .locs = locs, .values = &vals[i], .nlabels = nlab[i], .labels = lab[i]};
    ps_value_type_t type = {8, 9};
    ps_profile_t prof = {.nstrings = 10, .strings = strs, .ntypes = 1, .sample_types = &type, .nsamples = NS,
                         .samples = smp, .nfunctions = 1, .functions = &fn, .nlocations = 1, .locations = &loc,
                         .period_type = {8, 9}, .period = 10000000, .duration_nanos = 10 * PS_NS_PER_S};
    ps_label_pair_t pairs[2] = {{.name = "__name__", .nlen = 8, .value = "test:cpu:nanoseconds:cpu:nanoseconds", .vlen = 36},
                                {.name = "job", .nlen = 3, .value = "labels", .vlen = 6}};
    ps_labels_t series = {2, pairs};
    uint32_t ti = 0, nsmp = 0;
    uint64_t sid = 0;
    const int64_t ts = 1700000000 * PS_NS_PER_S;
    ps_append_t app = {.profile = &prof, .nseries = 1, .series_labels = &series, .type_index = &ti, .ts = ts,
                       .duration = prof.duration_nanos, .period = prof.period, .series_ids = &sid,
                       .series_samples = &nsmp};
    ps_append_t *it = &app;
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    assert_int_equal(app.status, 0);
    assert_int_equal(nsmp, 2);
    ps_reader_t *r;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    got_t g = {0};
    assert_int_equal(ps_reader_profiles(r, sid, ts, ts, false, on_got, &g, &err), 0);
    ps_reader_end(r);
    assert_int_equal(g.found, 1);
    assert_int_equal(g.p.n, 2);
    /* {k:v, m:w} first (its nodes were made first), then {k:v} */
    assert_int_equal(g.values[0], 1 + 2 + 4 + 8 + 32 + 64);
    assert_int_equal(g.values[1], 16);
    free(g.nodes);
    free(g.values);
    check_series(s, sid, ts, &prof, 0, "label sets");
    ps_test_close_store(s); /* its writer too: a later store at the same address must not get it */
    ps_test_rm_rf(dir);
    free(dir);
}

/* Writes prof (one sample type) as series job=name; its sid into *sid; returns its nodes */
static uint32_t write_prof(ps_store_t *s, const ps_profile_t *prof, const char *name, int64_t ts, uint64_t *sid)
{
    ps_label_pair_t pairs[2] = {{.name = "__name__", .nlen = 8, .value = "test:cpu:nanoseconds:cpu:nanoseconds", .vlen = 36},
                                {.name = "job", .nlen = 3, .value = name, .vlen = strlen(name)}};
    ps_labels_t series = {2, pairs};
    uint32_t ti = 0, nsmp = 0;
    ps_append_t app = {.profile = prof, .nseries = 1, .series_labels = &series, .type_index = &ti, .ts = ts,
                       .duration = prof->duration_nanos, .period = prof->period, .series_ids = sid,
                       .series_samples = &nsmp};
    ps_append_t *it = &app;
    ps_err_t err;
    assert_int_equal(ps_store_write_batch(ps_test_writer(s), &it, 1, &err), 0);
    assert_int_equal(app.status, 0);
    return nsmp;
}

/*
 * The writer's memo of a profile's raw label lists (write.c, sample_lsid): 1,000 samples on one
 * stack. Five groups of 60 lists, each list differing from the others of its group in one thing
 * only (num, num_unit, key, one label more than the last group's, str), so that the memo (open
 * addressing, grown from 64 slots to 1,024) meets lists of the same group in its probes; then 700
 * repeats in fresh arrays, some in another order, some naming k0 by its other index. Each sample's
 * value must come back under its own label set: written once, again (the lists by their words,
 * lset_words), after the caches were dropped, and with new strings from 2^32 + 1 whose words cut
 * to 32 bits would be another list's. Two lists there would have the same words without the mark
 * of num_units (A: k0:v0 u1, k1:v0 u2; B: k0:v0, k1:v0, u1 = the id of u2, as ids are given in
 * the table's order from an empty store).
 */
static void test_label_list_memo(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    enum { NG = 60, NS = 1000, NSTR = 5 + 3 * NG };
    /* strings: "", main, cpu, nanoseconds, k0 again, then k<i>, v<i>, u<i> at 5 + i, 5 + NG + i,
     * 5 + 2 NG + i (ids: 1-4, k<i> 4 + i, v<i> 64 + i, u<i> 124 + i); kx, vx for the last write */
    static char names[3 * NG][8];
    static ps_str_t strs[NSTR + 2] = {{"", 0}, {"main", 4}, {"cpu", 3}, {"nanoseconds", 11}, {"k0", 2}};
    for (int i = 0; i < 3 * NG; i++) {
        snprintf(names[i], sizeof(names[i]), "%c%d", "kvu"[i / NG], i % NG);
        strs[5 + i] = (ps_str_t){names[i], strlen(names[i])};
    }
    strs[NSTR] = (ps_str_t){"kx", 2};
    strs[NSTR + 1] = (ps_str_t){"vx", 2};
#define K(i) (uint32_t)(5 + (i))
#define V(i) (uint32_t)(5 + NG + (i))
#define U(i) (uint32_t)(5 + 2 * NG + (i))
    ps_function_t fn = {.name = 1};
    ps_line_t line = {.function = 1, .line = 3};
    ps_location_t loc = {.address = 0x10, .nlines = 1, .lines = &line};
    uint32_t locs[1] = {1};
    static ps_label_t lab[NS + 6][3];
    static uint32_t nlab[NS + 6];
    static int64_t vals[NS + 6];
    static ps_sample_t smp[NS + 6];
    for (int i = 0; i < NG; i++) {
        nlab[i] = nlab[NG + i] = nlab[2 * NG + i] = nlab[4 * NG + i] = 1;
        lab[i][0] = (ps_label_t){.key = K(0), .num = i};                          /* by num */
        lab[NG + i][0] = (ps_label_t){.key = K(0), .num = 7, .num_unit = U(i)};   /* by num_unit */
        lab[2 * NG + i][0] = (ps_label_t){.key = K(i), .str = V(0)};              /* by key */
        lab[4 * NG + i][0] = (ps_label_t){.key = K(0), .str = V(i)};              /* by str (i 0: the key group's 0) */
        nlab[3 * NG + i] = 2;                                                     /* the str group's, one label more */
        lab[3 * NG + i][0] = lab[4 * NG + i][0];
        lab[3 * NG + i][1] = (ps_label_t){.key = K(1), .str = V(0)};
    }
    for (int i = 5 * NG; i < NS - 2; i++) {
        int j = (i * 7) % (5 * NG);
        nlab[i] = nlab[j];
        if (nlab[j] == 2 && i % 3 == 0) { /* the other order: the same set */
            lab[i][0] = lab[j][1];
            lab[i][1] = lab[j][0];
        } else {
            memcpy(lab[i], lab[j], sizeof(lab[j]));
        }
        if (i % 5 == 0 && lab[i][0].key == K(0))
            lab[i][0].key = 4; /* k0 by its other index: the same set, another raw list */
    }
    /* A and B */
    nlab[NS - 2] = 2;
    lab[NS - 2][0] = (ps_label_t){.key = K(0), .str = V(0), .num_unit = U(1)};
    lab[NS - 2][1] = (ps_label_t){.key = K(1), .str = V(0), .num_unit = U(2)};
    nlab[NS - 1] = 3;
    lab[NS - 1][0] = (ps_label_t){.key = K(0), .str = V(0)};
    lab[NS - 1][1] = (ps_label_t){.key = K(1), .str = V(0)};
    lab[NS - 1][2] = (ps_label_t){.key = U(1), .num = 124 + 2};
    /* the last write's: main:v1 then kx:v1, whose key's id is 2^32 + 1; main:cpu then main:vx, 2^32 + 2 */
    for (int i = NS; i < NS + 4; i++)
        nlab[i] = 1;
    lab[NS][0] = (ps_label_t){.key = 1, .str = V(1)};
    lab[NS + 1][0] = (ps_label_t){.key = NSTR, .str = V(1)};
    lab[NS + 2][0] = (ps_label_t){.key = 1, .str = 2};
    lab[NS + 3][0] = (ps_label_t){.key = 1, .str = NSTR + 1};
#undef K
#undef V
#undef U
    for (int i = 0; i < NS + 4; i++) {
        vals[i] = i + 1;
        smp[i] = (ps_sample_t){.nlocs = 1, .locs = locs, .values = &vals[i], .nlabels = nlab[i], .labels = lab[i]};
    }
    ps_value_type_t type = {2, 3};
    ps_profile_t prof = {.nstrings = NSTR, .strings = strs, .ntypes = 1, .sample_types = &type, .nsamples = NS,
                         .samples = smp, .nfunctions = 1, .functions = &fn, .nlocations = 1, .locations = &loc,
                         .period_type = {2, 3}, .period = 10000000, .duration_nanos = 10 * PS_NS_PER_S};
    const int64_t ts = 1700000000 * PS_NS_PER_S;
    uint64_t sid[4];
    /* a node a set: the str group's first is the key group's; A and B */
    assert_int_equal(write_prof(s, &prof, "memo", ts, &sid[0]), 5 * NG - 1 + 2);
    assert_int_equal(write_prof(s, &prof, "memo words", ts, &sid[1]), 5 * NG - 1 + 2);
    ps_sym_caches_clear(ps_test_writer(s));
    assert_int_equal(write_prof(s, &prof, "memo lmdb", ts, &sid[2]), 5 * NG - 1 + 2);
    ps_test_writer(s)->next.sym[SYM_STRING] = (1ull << 32) + 1;
    prof.nstrings = NSTR + 2;
    prof.nsamples = NS + 4;
    assert_int_equal(write_prof(s, &prof, "memo wide", ts, &sid[3]), 5 * NG - 1 + 2 + 4);
    static const char *what[] = {"label lists", "label lists by words", "label lists from LMDB", "label lists, wide ids"};
    for (int i = 0; i < 4; i++) {
        prof.nsamples = i < 3 ? NS : NS + 4;
        check_series(s, sid[i], ts, &prof, 0, what[i]);
    }
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * The writer caches functions and locations by their ids as words (write.c, fn_words and
 * loc_words), falling back to their content when an id or a line does not fit. Locations that
 * differ in one thing only (column, line, is_folded, mapping, lines, a line's function, address),
 * and functions whose start line does not fit, must each keep a symbol of their own, also where
 * words cut to 32 bits or without the columns' mark would be the same: written once (misses), again
 * (hits), after the caches were dropped (from LMDB), and with a new string's id from 2^32 + 1, new
 * function ids from 2^31 + 1 and a new mapping's from 2^32 + 1 (such symbols then cached by their
 * content).
 */
static void test_symbol_words(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    static ps_str_t strs[] = {{"", 0},   {"f1", 2}, {"f2", 2},     {"file", 4},   {"cpu", 3},
                              {"nanoseconds", 11}, {"f3", 2}, {"f4", 2}, {"/bin/x", 6}, {"/bin/y", 6}, {"/bin/z", 6},
                              {"f5", 2}};
    ps_mapping_t maps[] = {{.memory_start = 0x1000, .memory_limit = 0x2000, .filename = 8},
                           {.memory_start = 0x1000, .memory_limit = 0x2000, .filename = 9}};
    /* ids 1-4 at first: f1, f2, f1 with a start line of 10 past 32 bits, f1 with a negative one */
    ps_function_t fns[] = {{.name = 1, .system_name = 1, .filename = 3, .start_line = 10},
                           {.name = 2, .system_name = 2, .filename = 3, .start_line = 10},
                           {.name = 1, .system_name = 1, .filename = 3, .start_line = (1ll << 40) + 10},
                           {.name = 1, .system_name = 1, .filename = 3, .start_line = -5}};
    const int64_t w24 = 2 | 4ll << 32; /* the word of line f2:4 (f2's id 2) */
    ps_line_t l1 = {.function = 1, .line = 3}, l1c = {.function = 1, .line = 3, .column = 7},
              l14 = {.function = 1, .line = 4}, l1w = {.function = 1, .line = 3, .column = w24},
              l12[2] = {{.function = 1, .line = 3}, {.function = 2, .line = 4}},
              l12c[2] = {{.function = 1, .line = 3}, {.function = 2, .line = 4, .column = 9}},
              l12c2[2] = {{.function = 1, .line = 3, .column = 9}, {.function = 2, .line = 4}},
              l32[2] = {{.function = 3, .line = 3}, {.function = 2, .line = 4}},
              lwide = {.function = 1, .line = (1ll << 33) + 3}, lneg = {.function = 1, .line = -3},
              lf3 = {.function = 3, .line = 3}, lf4 = {.function = 4, .line = 3}, lf2 = {.function = 2, .line = 3};
    ps_location_t locs[] = {
        {.address = 0x10, .nlines = 1, .lines = &l1},
        {.address = 0x10, .nlines = 1, .lines = &l1c},              /* a column */
        {.address = 0x10, .nlines = 1, .lines = &l1w},              /* a column: f2:4's word */
        {.address = 0x10, .nlines = 1, .lines = &l14},
        {.address = 0x10, .is_folded = 1, .nlines = 1, .lines = &l1},
        {.address = 0x10, .nlines = 2, .lines = l12},               /* a line more */
        {.address = 0x10, .nlines = 2, .lines = l12c},              /* ... with columns */
        {.address = 0x10, .nlines = 2, .lines = l12c2},
        {.address = 0x10, .nlines = 2, .lines = l32},               /* f3 at 2^31 + 1 later */
        {.address = 0x10, .mapping = 1, .nlines = 1, .lines = &l1}, /* a mapping */
        {.address = 0x10, .mapping = 1, .is_folded = 1, .nlines = 1, .lines = &l1},
        {.address = 0x10, .mapping = 2, .nlines = 1, .lines = &l1}, /* at 2^32 + 1 later */
        {.address = 0x10, .nlines = 1, .lines = &lwide},            /* a line past 32 bits */
        {.address = 0x10, .nlines = 1, .lines = &lneg},
        {.address = 0x10},                                          /* no lines */
        {.address = 0x11, .nlines = 1, .lines = &l1},               /* the address */
        {.address = 0x10, .nlines = 1, .lines = &lf2},              /* the function */
        {.address = 0x10, .nlines = 1, .lines = &lf3},              /* ... whose start line does not fit */
        {.address = 0x10, .nlines = 1, .lines = &lf4},
    };
    enum { NL = sizeof(locs) / sizeof(locs[0]) };
    uint32_t sl[NL];
    int64_t vals[NL];
    ps_sample_t smp[NL];
    for (uint32_t i = 0; i < NL; i++) {
        sl[i] = i + 1;
        vals[i] = (int64_t)1 << i;
        smp[i] = (ps_sample_t){.nlocs = 1, .locs = &sl[i], .values = &vals[i]};
    }
    ps_value_type_t type = {4, 5};
    ps_profile_t prof = {.nstrings = 11, .strings = strs, .ntypes = 1, .sample_types = &type, .nsamples = NL,
                         .samples = smp, .nmappings = 2, .mappings = maps, .nfunctions = 4, .functions = fns,
                         .nlocations = NL, .locations = locs, .period_type = {4, 5}, .period = 10000000,
                         .duration_nanos = 10 * PS_NS_PER_S};
    const int64_t ts = 1700000000 * PS_NS_PER_S;
    uint64_t sid[4];
    assert_int_equal(write_prof(s, &prof, "miss", ts, &sid[0]), NL);
    assert_int_equal(write_prof(s, &prof, "hit", ts, &sid[1]), NL);
    ps_sym_caches_clear(ps_test_writer(s));
    assert_int_equal(write_prof(s, &prof, "lmdb", ts, &sid[2]), NL);
    /* f3 and f5 (a new string, at 2^32 + 1) renamed: new functions from 2^31 + 1, /bin/z a new
     * mapping at 2^32 + 1 */
    ps_test_writer(s)->next.sym[SYM_STRING] = (1ull << 32) + 1;
    ps_test_writer(s)->next.sym[SYM_FUNCTION] = (1ull << 31) + 1;
    ps_test_writer(s)->next.sym[SYM_MAPPING] = (1ull << 32) + 1;
    prof.nstrings = 12;
    fns[2].name = fns[2].system_name = 6;
    fns[3].name = fns[3].system_name = 11;
    maps[1].filename = 10;
    assert_int_equal(write_prof(s, &prof, "wide", ts, &sid[3]), NL);
    static const char *what[] = {"misses", "hits", "from LMDB", "wide ids"};
    for (int i = 0; i < 4; i++) {
        fns[2].name = fns[2].system_name = i < 3 ? 1 : 6;
        fns[3].name = fns[3].system_name = i < 3 ? 1 : 11;
        maps[1].filename = i < 3 ? 9 : 10;
        check_series(s, sid[i], ts, &prof, 0, what[i]);
    }
    ps_store_stats_t st;
    ps_err_t err;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.strings, (1ull << 32) + 1); /* counted by the last id */
    assert_int_equal(st.functions, (1ull << 31) + 2); /* two new from 2^31 + 1 */
    assert_int_equal(st.mappings, (1ull << 32) + 1);
    assert_int_equal(st.locations, NL + 4); /* the wide profile's new: those of f3 (2), f5 and /bin/z */
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/*
 * The writer's whole-stack cache keys hold 4-byte ids while every id is below 2^31, else 8-byte
 * ids behind a marker. Locations given ids from 2^32 on (the counter moved there: wide) would, cut
 * to 4 bytes, be 1, 2, ... again: the ids of the first profile's locations. Each profile must still
 * come back as written, from the cache as filled and after it was cleared, and the store hold as
 * many stack nodes as the same writes with narrow ids make. *st: the store's counts.
 */
static void write_wide_or_not(bool wide, ps_store_stats_t *st)
{
    char *dir = tmpdir();
    ps_store_t *s = open_store(dir, 0);
    const int64_t t0 = 1700000000 * PS_NS_PER_S;
    pushed_t p[6];
    memset(p, 0, sizeof(p));
    /* cpu-01 with ids 1.., then cpu-02 (other locations, some shared) */
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"w\",n=\"0\"}", t0, &p[0]), 0);
    if (wide)
        ps_test_writer(s)->next.sym[SYM_LOCATION] = (1ull << 32) + 1;
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"w\",n=\"1\"}", t0, &p[1]), 0);
    /* both again into other series: their stacks from the cache */
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"w\",n=\"2\"}", t0, &p[2]), 0);
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"w\",n=\"3\"}", t0, &p[3]), 0);
    /* and after the caches were dropped: ids from LMDB, stacks from the tree */
    ps_sym_caches_clear(ps_test_writer(s));
    assert_int_equal(write_one(s, &fixtures[2], "{job=\"w\",n=\"4\"}", t0, &p[4]), 0);
    assert_int_equal(write_one(s, &fixtures[0], "{job=\"w\",n=\"5\"}", t0, &p[5]), 0);
    for (int i = 0; i < 6; i++)
        for (uint32_t k = 0; k < p[i].app.nseries; k++) {
            char what[64];
            snprintf(what, sizeof(what), "%s: profile %d type %u", wide ? "wide" : "narrow", i, k);
            check_series(s, p[i].app.series_ids[k], t0, p[i].app.profile, p[i].app.type_index[k], what);
        }
    ps_err_t err;
    assert_int_equal(ps_store_stats(s, st, &err), 0);
    for (int i = 0; i < 6; i++)
        release(&p[i]);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

static void test_wide_stack_keys(void **state)
{
    (void)state;
    ps_store_stats_t narrow, wide;
    write_wide_or_not(false, &narrow);
    write_wide_or_not(true, &wide);
    assert_true(narrow.nodes > 0);
    assert_int_equal(wide.nodes, narrow.nodes);
    /* the locations' ids: cpu-01's 338 from 1, cpu-02's others from 2^32 + 1 */
    assert_int_equal(narrow.locations, 499);
    assert_int_equal(wide.locations, (1ull << 32) + 499 - 338);
}


/* ---- series indexed late (series.c, schema 13) ---- */

static ps_store_t *open_store_pending(const char *dir, uint32_t pending_max)
{
    return open_store_opts(dir, 0, 0, pending_max);
}

/* the series index's entries and watermark as committed */
static void expect_index(ps_store_t *s, size_t entries, uint64_t wm)
{
    ps_txn_t t;
    ps_err_t err;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    MDB_stat st;
    assert_true(ps_txn_stat(&t, DB_SERIES_HASH, &st));
    assert_int_equal(st.ms_entries, entries);
    uint64_t w = 0;
    assert_int_equal(ps_series_w_read(&t, &w, &err), 0);
    assert_int_equal(w, wm);
    ps_txn_abort(&t);
}

/* the reader finds the series of labels ls (both sample types' series of "{job=...}") as want[2] */
static void expect_found(ps_store_t *s, const char *ls, const uint64_t want[2])
{
    pushed_t p = {0};
    prepare(&p, &fixtures[0], ls, 0);
    ps_reader_t *r;
    ps_err_t err;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    for (uint32_t k = 0; k < 2; k++) {
        uint64_t sid = 0;
        int rc = ps_reader_series_lookup(r, &p.app.series_labels[k], &sid, &err);
        if (want[k] == 0) {
            assert_int_equal(rc, PS_ENOTFOUND);
        } else {
            assert_int_equal(rc, 0);
            assert_int_equal(sid, want[k]);
        }
    }
    ps_reader_end(r);
    release(&p);
}

/* writes "{job=...}" at ts: its two series' ids are want[2] */
static void write_expect(ps_store_t *s, const char *ls, int64_t ts, const uint64_t want[2])
{
    pushed_t p = {0};
    assert_int_equal(write_one(s, &fixtures[0], ls, ts, &p), 0);
    assert_false(p.app.duplicate);
    assert_int_equal(p.app.nseries, 2);
    assert_int_equal(p.app.series_ids[0], want[0]);
    assert_int_equal(p.app.series_ids[1], want[1]);
    release(&p);
}

/*
 * A new series gets its record at once and its series_hash entry late: past the watermark it is
 * found by its labels all the same (the writer through its pending set: no second series; a
 * reader through the records past W), after a reopen without a merge (a crash) too; the merge
 * (at series_pending_max, at compaction) writes the entries of all pending series, deleted ones
 * not, and the answers stay the same.
 */
static void test_series_indexed_late(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store_pending(dir, 5);
    int64_t t0 = 1796022364000000000ll, sec = PS_NS_PER_S;
    static const uint64_t a[2] = {1, 2}, b[2] = {3, 4}, c[2] = {5, 6}, d[2] = {7, 8}, e[2] = {9, 10}, none[2] = {0, 0};
    expect_index(s, 0, 0);
    write_expect(s, "{job=\"a\"}", t0, a);
    write_expect(s, "{job=\"b\"}", t0, b);
    expect_index(s, 0, 0); /* 4 pending, fewer than 5 */
    assert_int_equal(ps_test_writer(s)->series_pending.count, 4);
    expect_found(s, "{job=\"a\"}", a);
    expect_found(s, "{job=\"b\"}", b);
    expect_found(s, "{job=\"c\"}", none);
    /* the caches dropped: the pending set finds them */
    ps_series_caches_clear(ps_test_writer(s));
    write_expect(s, "{job=\"a\"}", t0 + 10 * sec, a);
    /* reopened without a merge: the set is read again from the records past W */
    ps_test_close_store(s);
    s = open_store_pending(dir, 5);
    assert_int_equal(ps_test_writer(s)->series_pending.count, 4);
    assert_int_equal(ps_test_writer(s)->series_w, 0);
    expect_found(s, "{job=\"a\"}", a);
    write_expect(s, "{job=\"b\"}", t0 + 10 * sec, b);
    write_expect(s, "{job=\"a\"}", t0 + 20 * sec, a);
    ps_store_stats_t st;
    ps_err_t err;
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 4);
    expect_index(s, 0, 0);
    /* the 5th and 6th: all 6 merged after the write's commit */
    write_expect(s, "{job=\"c\"}", t0, c);
    expect_index(s, 6, 6);
    assert_int_equal(ps_test_writer(s)->series_pending.count, 0);
    static const char *const abc[] = {"{job=\"a\"}", "{job=\"b\"}", "{job=\"c\"}"};
    const uint64_t *abc_ids[] = {a, b, c};
    ps_series_caches_clear(ps_test_writer(s));
    for (int i = 0; i < 3; i++) {
        expect_found(s, abc[i], abc_ids[i]);
        write_expect(s, abc[i], t0 + (30 + i) * sec, abc_ids[i]);
    }
    /* two more pending, one of them deleted before its merge (at compaction) */
    write_expect(s, "{job=\"d\"}", t0, d);
    write_expect(s, "{job=\"e\"}", t0, e);
    expect_index(s, 6, 6);
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "deleting"), 0);
    assert_int_equal(ps_series_delete(ps_test_writer(s), &t, 7, &err), 0);
    assert_int_equal(ps_txn_commit(&t, &err, "deleting"), 0);
    ps_sym_caches_clear(ps_test_writer(s));
    expect_found(s, "{job=\"d\"}", (const uint64_t[2]){0, 8});
    assert_int_equal(ps_store_compact(ps_test_writer(s), false, ps_time_now(), NULL, &err), 0);
    expect_index(s, 9, 10);
    expect_found(s, "{job=\"d\"}", (const uint64_t[2]){0, 8});
    expect_found(s, "{job=\"e\"}", e);
    /* the deleted one's labels: a new series (11), the other found */
    write_expect(s, "{job=\"d\"}", t0 + 10 * sec, (const uint64_t[2]){11, 8});
    write_expect(s, "{job=\"e\"}", t0 + 10 * sec, e);
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 10);
    /* f and g: 5 pending (11 to 15), merged after g's commit in 1 + 9 / 3 = 4 slices of the hash
     * space (a slice per 3 entries of the index: (5 + 1) / 2) */
    write_expect(s, "{job=\"f\"}", t0, (const uint64_t[2]){12, 13});
    write_expect(s, "{job=\"g\"}", t0, (const uint64_t[2]){14, 15});
    expect_index(s, 14, 15);
    /* h, i, j: merged in 1 + 15 / 3 = 6 slices; series 16's entry written before, as by a merge
     * cut short between its slices, stays one entry */
    write_expect(s, "{job=\"h\"}", t0, (const uint64_t[2]){16, 17});
    ps_reader_t *r;
    ps_arena_t la = PS_ARENA_INIT;
    ps_labels_t hls;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_series_labels(r, 16, &la, &hls, &err), 0);
    ps_buf_t henc = PS_BUF_INIT;
    ps_labels_encode(&hls, &henc);
    ps_reader_end(r);
    uint8_t hk[8], hv[8];
    ps_series_hash_key(&henc, hk);
    ps_enc_be64(hv, 16);
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "indexing"), 0);
    assert_true(ps_txn_put(&t, DB_SERIES_HASH, hk, 8, hv, 8, 0, "indexing"));
    assert_int_equal(ps_txn_commit(&t, &err, "indexing"), 0);
    ps_buf_dispose(&henc);
    ps_arena_dispose(&la);
    expect_index(s, 15, 15);
    write_expect(s, "{job=\"i\"}", t0, (const uint64_t[2]){18, 19});
    write_expect(s, "{job=\"j\"}", t0, (const uint64_t[2]){20, 21});
    expect_index(s, 20, 21);
    assert_int_equal(ps_test_writer(s)->series_pending.count, 0);
    static const char *const late[] = {"{job=\"f\"}", "{job=\"g\"}", "{job=\"h\"}", "{job=\"i\"}", "{job=\"j\"}"};
    ps_series_caches_clear(ps_test_writer(s));
    for (int i = 0; i < 5; i++) {
        const uint64_t want[2] = {12 + 2 * (uint64_t)i, 13 + 2 * (uint64_t)i};
        expect_found(s, late[i], want);
        write_expect(s, late[i], t0 + 10 * sec, want);
    }
    assert_int_equal(ps_store_stats(s, &st, &err), 0);
    assert_int_equal(st.series, 20);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

/* ---- postings written late (series.c, schema 14) ---- */

typedef struct answers {
    ps_buf_t *out;
    ps_reader_t *r;
} answers_t;

static int ans_sid(void *ctx, uint64_t sid)
{
    answers_t *a = ctx;
    char b[24];
    snprintf(b, sizeof(b), " %llu", (unsigned long long)sid);
    ps_buf_append(a->out, b, strlen(b));
    return 0;
}

static int ans_str(void *ctx, const char *v, size_t n)
{
    answers_t *a = ctx;
    ps_buf_putc(a->out, ' ');
    ps_buf_append(a->out, v, n);
    return 0;
}

static int ans_even(void *ctx, uint64_t sid)
{
    (void)ctx;
    return sid % 2 == 0;
}

/* the store's every postings reader's answer, as text (names, values, postings, counts, filters,
 * values with a predicate, names and values over ranges) */
static void postings_answers(ps_store_t *s, int64_t t0, ps_buf_t *out)
{
    ps_reader_t *r;
    ps_err_t err;
    ps_buf_reset(out);
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    answers_t a = {out, r};
    ps_buf_append(out, "names", 5);
    assert_int_equal(ps_reader_label_names(r, ans_str, &a, &err), 0);
    static const char *const names[] = {"__name__", "job", "zone"};
    static const int64_t ranges[][2] = {{0, 0}, {0, 1}, {600, 1200}, {3600, 3600}, {7200, 7300}};
    for (size_t k = 0; k < 5; k++) {
        int64_t from = t0 + ranges[k][0] * PS_NS_PER_S, to = t0 + ranges[k][1] * PS_NS_PER_S;
        char b[48];
        snprintf(b, sizeof(b), "\nnames in %lld-%lld", (long long)ranges[k][0], (long long)ranges[k][1]);
        ps_buf_append(out, b, strlen(b));
        assert_int_equal(ps_reader_label_names_in(r, from, to, ans_even, ans_str, &a, &err), 0);
        for (size_t i = 0; i < 3; i++) {
            snprintf(b, sizeof(b), "\n%s in %lld-%lld", names[i], (long long)ranges[k][0], (long long)ranges[k][1]);
            ps_buf_append(out, b, strlen(b));
            assert_int_equal(ps_reader_label_values_in(r, names[i], strlen(names[i]), from, to, ans_even, ans_str, &a,
                                                       &err), 0);
        }
    }
    for (size_t i = 0; i < 3; i++) {
        ps_buf_t vals = PS_BUF_INIT;
        answers_t va = {&vals, r};
        assert_int_equal(ps_reader_label_values(r, names[i], strlen(names[i]), ans_str, &va, &err), 0);
        ps_buf_printf(out, "\n%s:%.*s; even:", names[i], (int)vals.len, (const char *)vals.data);
        assert_int_equal(ps_reader_label_values_where(r, names[i], strlen(names[i]), ans_even, ans_str, &a, &err), 0);
        ps_buf_putc(&vals, 0);
        for (char *v = strtok((char *)vals.data, " "); v != NULL; v = strtok(NULL, " ")) {
            size_t n = 0;
            assert_int_equal(ps_reader_postings_count(r, names[i], strlen(names[i]), v, strlen(v), &n, &err), 0);
            ps_buf_printf(out, "\n  %s=%s (%zu):", names[i], v, n);
            assert_int_equal(ps_reader_postings(r, names[i], strlen(names[i]), v, strlen(v), ans_sid, &a, &err), 0);
            uint64_t ids[24];
            size_t nids = 24;
            for (size_t k = 0; k < nids; k++)
                ids[k] = k + 1;
            assert_int_equal(ps_reader_postings_filter(r, names[i], strlen(names[i]), v, strlen(v), ids, &nids, &err), 0);
            assert_int_equal(nids, n);
            ps_buf_append(out, " /", 2);
            for (size_t k = 0; k < nids; k++)
                ans_sid(&a, ids[k]);
        }
        ps_buf_dispose(&vals);
    }
    ps_buf_putc(out, 0);
    ps_reader_end(r);
}

static size_t db_entries(ps_store_t *s, int db)
{
    ps_txn_t t;
    ps_err_t err;
    MDB_stat st;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    assert_true(ps_txn_stat(&t, db, &st));
    ps_txn_abort(&t);
    return st.ms_entries;
}

/* the postings entries series sid would have, put into DB_POSTINGS (as a merge cut short, or a
 * store of schema 13, wrote them) */
static void put_postings(ps_store_t *s, uint64_t sid)
{
    ps_reader_t *r;
    ps_err_t err;
    ps_arena_t la = PS_ARENA_INIT;
    ps_labels_t ls;
    assert_int_equal(ps_reader_begin(s, &r, &err), 0);
    assert_int_equal(ps_reader_series_labels(r, sid, &la, &ls, &err), 0);
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "postings"), 0);
    ps_buf_t k = PS_BUF_INIT;
    uint8_t ib[8];
    ps_enc_be64(ib, sid);
    for (uint32_t i = 0; i < ls.n; i++) {
        ps_posting_key(&k, &ls.pairs[i]);
        assert_true(ps_txn_put(&t, DB_POSTINGS, k.data, k.len, ib, 8, 0, "postings"));
    }
    assert_int_equal(ps_txn_commit(&t, &err, "postings"), 0);
    ps_reader_end(r);
    ps_buf_dispose(&k);
    ps_arena_dispose(&la);
}

static void expect_answers(ps_store_t *s, int64_t t0, const char *want)
{
    ps_buf_t got = PS_BUF_INIT;
    postings_answers(s, t0, &got);
    if (strcmp((const char *)got.data, want) != 0) {
        const char *g = (const char *)got.data, *w = want;
        size_t at = 0;
        while (g[at] == w[at])
            at++;
        fail_msg("answers differ at byte %zu: \"%.60s\", wanted \"%.60s\"", at, g + at, w + at);
    }
    ps_buf_dispose(&got);
}

/* text with its lines edits[2i] replaced by edits[2i + 1] (NULL: removed), up to a NULL old line
 * (malloc'd) */
static char *answers_edit(const char *text, const char *const *edits)
{
    ps_buf_t b = PS_BUF_INIT;
    for (const char *line = text; *line != 0;) {
        const char *nl = strchr(line, '\n');
        size_t n = nl ? (size_t)(nl - line) : strlen(line);
        const char *const *e = edits;
        while (*e != NULL && (strlen(*e) != n || memcmp(*e, line, n) != 0))
            e += 2;
        const char *put = *e != NULL ? e[1] : NULL;
        if (*e == NULL)
            ps_buf_append(&b, line, n);
        else if (put != NULL)
            ps_buf_append(&b, put, strlen(put));
        if (*e == NULL || put != NULL)
            ps_buf_putc(&b, '\n');
        line += n + (nl != NULL);
    }
    if (b.len > 0)
        b.len--; /* the last line's newline */
    ps_buf_putc(&b, 0);
    return (char *)b.data;
}

/*
 * A new series' postings are written late, by the merge with its series_hash entry: before it,
 * every postings reader (names, values with and without a predicate or a range, postings, counts,
 * filters) answers as after it, with the series past W read from their records, after a reopen
 * without a merge (a crash) too; a pending series deleted leaves them (and its label times go
 * with its last value); postings written in part (a merge cut short) or all (a store of schema 13,
 * upgraded in place: W stays) are read once, and the merge leaves them as they are.
 */
static void test_postings_late(void **state)
{
    (void)state;
    char *dir = tmpdir();
    ps_store_t *s = open_store_pending(dir, 1000);
    int64_t t0 = 1796022364000000000ll, sec = PS_NS_PER_S;
    ps_err_t err;
    write_expect(s, "{job=\"a\"}", t0, (const uint64_t[2]){1, 2});
    write_expect(s, "{job=\"b\",zone=\"z\"}", t0, (const uint64_t[2]){3, 4});
    assert_int_equal(ps_series_index_now(ps_test_writer(s), &err), 0);
    size_t indexed = db_entries(s, DB_POSTINGS);
    assert_int_equal(indexed, 2 * 2 + 2 * 3); /* a: __name__ and job a series, b: and zone */
    write_expect(s, "{job=\"a\",zone=\"y\"}", t0, (const uint64_t[2]){5, 6});
    write_expect(s, "{job=\"a\",zone=\"y\"}", t0 + 3600 * sec, (const uint64_t[2]){5, 6});
    write_expect(s, "{job=\"c\"}", t0 + 3600 * sec, (const uint64_t[2]){7, 8});
    write_expect(s, "{job=\"b\",zone=\"z\"}", t0 + 7200 * sec, (const uint64_t[2]){3, 4});
    assert_int_equal(db_entries(s, DB_POSTINGS), indexed); /* none written for 5 to 8 */
    expect_index(s, 4, 4);
    static const char all[] =
        "names __name__ job zone"
        "\nnames in 0-0 __name__ job zone"
        "\n__name__ in 0-0 test:cpu:nanoseconds:cpu:nanoseconds test:samples:count:cpu:nanoseconds"
        "\njob in 0-0 a b"
        "\nzone in 0-0 y z"
        "\nnames in 0-1 __name__ job zone"
        "\n__name__ in 0-1 test:cpu:nanoseconds:cpu:nanoseconds test:samples:count:cpu:nanoseconds"
        "\njob in 0-1 a b"
        "\nzone in 0-1 y z"
        "\nnames in 600-1200 __name__ job zone"
        "\n__name__ in 600-1200 test:cpu:nanoseconds:cpu:nanoseconds"
        "\njob in 600-1200 a b"
        "\nzone in 600-1200 y z"
        "\nnames in 3600-3600 __name__ job zone"
        "\n__name__ in 3600-3600 test:cpu:nanoseconds:cpu:nanoseconds"
        "\njob in 3600-3600 a b c"
        "\nzone in 3600-3600 y z"
        "\nnames in 7200-7300 __name__ job zone"
        "\n__name__ in 7200-7300 test:cpu:nanoseconds:cpu:nanoseconds test:samples:count:cpu:nanoseconds"
        "\njob in 7200-7300 b"
        "\nzone in 7200-7300 z"
        "\n__name__: test:cpu:nanoseconds:cpu:nanoseconds test:samples:count:cpu:nanoseconds; even: test:cpu:nanoseconds:cpu:nanoseconds"
        "\n  __name__=test:cpu:nanoseconds:cpu:nanoseconds (4): 2 4 6 8 / 2 4 6 8"
        "\n  __name__=test:samples:count:cpu:nanoseconds (4): 1 3 5 7 / 1 3 5 7"
        "\njob: a b c; even: a b c"
        "\n  job=a (4): 1 2 5 6 / 1 2 5 6"
        "\n  job=b (2): 3 4 / 3 4"
        "\n  job=c (2): 7 8 / 7 8"
        "\nzone: y z; even: y z"
        "\n  zone=y (2): 5 6 / 5 6"
        "\n  zone=z (2): 3 4 / 3 4";
    expect_answers(s, t0, all);
    /* reopened without a merge (a crash): the same */
    ps_test_close_store(s);
    s = open_store_pending(dir, 1000);
    assert_int_equal(ps_test_writer(s)->series_pending.count, 4);
    expect_answers(s, t0, all);
    /* series 5's postings written, as by a merge cut short: read once */
    put_postings(s, 5);
    assert_int_equal(db_entries(s, DB_POSTINGS), indexed + 3);
    expect_answers(s, t0, all);
    /* job="c" (7 and 8, pending) deleted: their values and label times go */
    ps_txn_t t;
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_WRITE, &err, "deleting"), 0);
    assert_int_equal(ps_series_delete(ps_test_writer(s), &t, 7, &err), 0);
    assert_int_equal(ps_series_delete(ps_test_writer(s), &t, 8, &err), 0);
    assert_int_equal(ps_txn_commit(&t, &err, "deleting"), 0);
    ps_sym_caches_clear(ps_test_writer(s));
    static const char *const deleted_edits[] = {
        "job in 3600-3600 a b c", "job in 3600-3600 a b",
        "  __name__=test:cpu:nanoseconds:cpu:nanoseconds (4): 2 4 6 8 / 2 4 6 8",
        "  __name__=test:cpu:nanoseconds:cpu:nanoseconds (3): 2 4 6 / 2 4 6",
        "  __name__=test:samples:count:cpu:nanoseconds (4): 1 3 5 7 / 1 3 5 7",
        "  __name__=test:samples:count:cpu:nanoseconds (3): 1 3 5 / 1 3 5",
        "job: a b c; even: a b c", "job: a b; even: a b",
        "  job=c (2): 7 8 / 7 8", NULL,
        NULL};
    char *deleted = answers_edit(all, deleted_edits);
    expect_answers(s, t0, deleted);
    assert_int_equal(ps_txn_begin(&t, s, PS_TXN_READ, &err, "reading"), 0);
    MDB_val v;
    assert_false(ps_txn_get(&t, DB_LTIMES, "job\0c", 5, &v, "reading"));
    assert_true(ps_txn_get(&t, DB_LTIMES, "job\0a", 5, &v, "reading"));
    ps_txn_abort(&t);
    /* the merge (at compaction): 6's postings written, 5's left as they were */
    assert_int_equal(ps_store_compact(ps_test_writer(s), false, ps_time_now(), NULL, &err), 0);
    expect_index(s, 6, 8);
    assert_int_equal(db_entries(s, DB_POSTINGS), indexed + 3 + 3);
    expect_answers(s, t0, deleted);
    /* a store of schema 13: the postings of its series past W written with them; upgraded in
     * place, W stays, they are read once, the merge writes none again */
    write_expect(s, "{job=\"d\",zone=\"y\"}", t0 + 7200 * sec, (const uint64_t[2]){9, 10});
    put_postings(s, 9);
    put_postings(s, 10);
    static const char *const with_d_edits[] = {
        "job in 7200-7300 b", "job in 7200-7300 b d",
        "zone in 7200-7300 z", "zone in 7200-7300 y z",
        "  __name__=test:cpu:nanoseconds:cpu:nanoseconds (3): 2 4 6 / 2 4 6",
        "  __name__=test:cpu:nanoseconds:cpu:nanoseconds (4): 2 4 6 10 / 2 4 6 10",
        "  __name__=test:samples:count:cpu:nanoseconds (3): 1 3 5 / 1 3 5",
        "  __name__=test:samples:count:cpu:nanoseconds (4): 1 3 5 9 / 1 3 5 9",
        "job: a b; even: a b", "job: a b d; even: a b d",
        "  job=b (2): 3 4 / 3 4", "  job=b (2): 3 4 / 3 4\n  job=d (2): 9 10 / 9 10",
        "  zone=y (2): 5 6 / 5 6", "  zone=y (4): 5 6 9 10 / 5 6 9 10",
        NULL};
    char *with_d = answers_edit(deleted, with_d_edits);
    expect_answers(s, t0, with_d);
    ps_test_close_store(s);
    MDB_env *env;
    MDB_txn *mt;
    MDB_dbi dbi;
    assert_int_equal(mdb_env_create(&env), 0);
    mdb_env_set_maxdbs(env, 64);
    assert_int_equal(mdb_env_open(env, dir, 0, 0644), 0);
    assert_int_equal(mdb_txn_begin(env, NULL, 0, &mt), 0);
    assert_int_equal(mdb_dbi_open(mt, "info", 0, &dbi), 0);
    uint8_t v13[4] = {0, 0, 0, 13};
    MDB_val sk = {6, "schema"}, sv = {4, v13};
    assert_int_equal(mdb_put(mt, dbi, &sk, &sv, 0), 0);
    assert_int_equal(mdb_txn_commit(mt), 0);
    mdb_env_close(env);
    s = open_store_pending(dir, 1000);
    assert_int_equal(ps_test_writer(s)->series_pending.count, 2);
    expect_index(s, 6, 8);
    assert_int_equal(db_entries(s, DB_POSTINGS), indexed + 3 + 3 + 2 * 3);
    expect_answers(s, t0, with_d);
    assert_int_equal(ps_series_index_now(ps_test_writer(s), &err), 0);
    expect_index(s, 8, 10);
    assert_int_equal(db_entries(s, DB_POSTINGS), indexed + 3 + 3 + 2 * 3);
    expect_answers(s, t0, with_d);
    free(deleted);
    free(with_d);
    ps_test_close_store(s);
    ps_test_rm_rf(dir);
    free(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_roundtrip_all_fixtures),
        cmocka_unit_test(test_order_duplicates_conflicts),
        cmocka_unit_test(test_compaction_chunks_and_retention),
        cmocka_unit_test(test_schema_version_refused),
        cmocka_unit_test(test_twin_chunks),
        cmocka_unit_test(test_twins_across_the_cut),
        cmocka_unit_test(test_idle_rule_survives_cache_clear),
        cmocka_unit_test(test_walls_map),
        cmocka_unit_test(test_series_cache_bound),
        cmocka_unit_test(test_new_series_looked_up_once),
        cmocka_unit_test(test_retention_counts_series_once),
        cmocka_unit_test(test_index_walk_errors),
        cmocka_unit_test(test_latest_damaged_chunk),
        cmocka_unit_test(test_series_read_errors),
        cmocka_unit_test(test_stats_from_snapshot),
        cmocka_unit_test(test_writer_one),
        cmocka_unit_test(test_sample_label_sets),
        cmocka_unit_test(test_label_list_memo),
        cmocka_unit_test(test_symbol_words),
        cmocka_unit_test(test_wide_stack_keys),
        cmocka_unit_test(test_series_indexed_late),
        cmocka_unit_test(test_postings_late),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
