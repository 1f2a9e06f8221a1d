/*
 * spans.c - bench_spans: a span lookup among 24 h of one service's profiles, beside the plain 24 h
 * merge, and what the span index and client profile ids cost on disk.
 *
 * Generates (bench/gen.h) 24 h of 10 s Go CPU profiles of one series (8,640, real stacks), labels
 * their samples as pyroscope-go's otel integration does (span_id = a 16-hex span id: 20 spans a
 * profile, a fifth of the samples in none), gives each profile a client id (a push's RawSample.ID),
 * appends them in the store's own writer (batches of 16, nosync) and compacts. Then times, from one
 * read snapshot, median of --runs:
 *   - the span merge of one span of the middle of the day over the 24 h (ps_querier_merge_spans:
 *     the span index, then the profiles holding it) and the pprof built from it,
 *   - the plain merge of the same 24 h (ps_querier_merge) and its pprof (built in the first run only),
 * and prints the pages of the span index (spans) and of the profile ids (uuids, puuid) per profile.
 * The expected span total is checked against the generated one.
 *
 * usage: bench_spans [--profiles N] [--spans K] [--runs R] [--keep]    (--spans 0: no span labels, the
 * store's size without them)
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "core/mem.h"
#include "core/timeutil.h"
#include "gen.h"
#include "ingest/ingest.h"
#include "proto/pprof.h"
#include "query/querier.h"
#include "storage/internal.h"
#include "storage/store.h"

typedef struct run {
    ps_store_writer_t *w;
    uint32_t nspans;
    ps_arena_t arena;
    ps_append_t *apps[16];
    size_t napps;
    uint64_t profiles, span_samples, labelled;
    int64_t want_total; /* cpu of the span looked up */
    uint32_t want_profile;
    uint64_t want_span;
    ps_labels_t base;
} run_t;

static double now_ms(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

static uint64_t span_of(uint32_t profile, uint32_t k)
{
    return 0x9a51718300000000ull | ((uint64_t)profile << 8) | k; /* unique per (profile, k), never 0 */
}

static int flush(run_t *r)
{
    ps_err_t err;
    if (r->napps == 0)
        return 0;
    if (ps_store_write_batch(r->w, r->apps, r->napps, &err) != 0) {
        fprintf(stderr, "write: %s\n", err.msg);
        return -1;
    }
    for (size_t i = 0; i < r->napps; i++)
        if (r->apps[i]->status != 0) {
            fprintf(stderr, "append: %s\n", r->apps[i]->err.msg);
            return -1;
        }
    r->napps = 0;
    ps_arena_reset(&r->arena);
    return 0;
}

static int on_profile(void *ctx, const ps_bench_gen_info_t *info)
{
    run_t *r = ctx;
    ps_arena_t *a = &r->arena;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    ps_profile_t *p = ps_arena_calloc(a, 1, sizeof(*p));
    if (ps_pprof_decode(info->pprof_gz, info->len, &lim, a, p, &err) != 0) {
        fprintf(stderr, "decode: %s\n", err.msg);
        return -1;
    }
    /* strings: + "span_id" and the profile's span ids */
    uint32_t ns = p->nstrings, key = ns;
    ps_str_t *strs = ps_arena_alloc(a, (ns + 1 + r->nspans) * sizeof(ps_str_t));
    memcpy(strs, p->strings, ns * sizeof(ps_str_t));
    strs[key] = (ps_str_t){"span_id", 7};
    for (uint32_t k = 0; k < r->nspans; k++) {
        char *h = ps_arena_alloc(a, 17);
        snprintf(h, 17, "%016llx", (unsigned long long)span_of(info->index, k));
        strs[ns + 1 + k] = (ps_str_t){h, 16};
    }
    p->strings = strs;
    p->nstrings = ns + 1 + r->nspans;
    for (uint32_t i = 0; i < p->nsamples && r->nspans > 0; i++) {
        ps_sample_t *s = &p->samples[i];
        if (i % 5 == 0)
            continue;
        uint32_t k = i % r->nspans;
        ps_label_t *l = ps_arena_alloc(a, (s->nlabels + 1) * sizeof(ps_label_t));
        memcpy(l, s->labels, s->nlabels * sizeof(ps_label_t));
        l[s->nlabels] = (ps_label_t){.key = key, .str = ns + 1 + k};
        s->labels = l;
        s->nlabels++;
        r->labelled++;
        if (info->index == r->want_profile && k == 3)
            r->want_total += s->values[1]; /* cpu/nanoseconds */
    }
    ps_append_t *app = ps_arena_calloc(a, 1, sizeof(*app));
    if (ps_ingest_build(p, "process_cpu", 11, &r->base, info->ts_ns, NULL, true, a, app, &err) != 0) {
        fprintf(stderr, "build: %s\n", err.msg);
        return -1;
    }
    uint8_t *u = ps_arena_alloc(a, 16);
    for (int i = 0; i < 16; i++)
        u[i] = (uint8_t)(info->index * 131 + i * 7 + (i == 0 ? info->index >> 8 : 0));
    memcpy(u + 8, &info->index, 4); /* unique */
    app->uuid = u;
    r->apps[r->napps++] = app;
    r->profiles++;
    return r->napps == 16 ? flush(r) : 0;
}

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static uint64_t db_bytes(ps_store_t *s, int db)
{
    ps_txn_t t;
    MDB_stat ms, es;
    mdb_env_stat(s->env, &es);
    if (ps_txn_begin(&t, s, PS_TXN_READ, NULL, "stat") != 0)
        return 0;
    uint64_t b = ps_txn_stat(&t, db, &ms) ? (ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages) * es.ms_psize : 0;
    ps_txn_abort(&t);
    return b;
}

static uint64_t db_entries(ps_store_t *s, int db)
{
    ps_txn_t t;
    MDB_stat ms;
    if (ps_txn_begin(&t, s, PS_TXN_READ, NULL, "stat") != 0)
        return 0;
    uint64_t n = ps_txn_stat(&t, db, &ms) ? ms.ms_entries : 0;
    ps_txn_abort(&t);
    return n;
}

int main(int argc, char **argv)
{
    uint32_t pps = 8640, runs = 20;
    run_t r = {.nspans = 20};
    int keep = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--profiles") && i + 1 < argc)
            pps = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--spans") && i + 1 < argc)
            r.nspans = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--runs") && i + 1 < argc)
            runs = (uint32_t)atoi(argv[++i]);
        else if (!strcmp(argv[i], "--keep"))
            keep = 1;
        else {
            fprintf(stderr, "usage: bench_spans [--profiles N] [--spans K] [--runs R] [--keep]\n");
            return 2;
        }
    }
    if ((r.nspans != 0 && r.nspans < 4) || r.nspans > 255 || pps < 2 || runs < 1) {
        fprintf(stderr, "bench_spans: --spans 0 (no span labels) or 4..255, --profiles >= 2, --runs >= 1\n");
        return 2;
    }
    char dir[] = "/tmp/profstore-spans-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = dir;
    o.map_size = 8ull << 30;
    o.retention_ns = 0;
    o.nosync = true;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0 || ps_store_writer_open(s, &r.w, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    ps_label_pair_t base[1] = {{.name = "service_name", .nlen = 12, .value = "api", .vlen = 3}};
    r.base = (ps_labels_t){1, base};
    r.want_profile = pps / 2;
    r.want_span = span_of(r.want_profile, 3);
    double t0 = now_ms();
    if (ps_bench_gen_ex(1, pps, 1, on_profile, &r) != 0 || flush(&r) != 0)
        return 1;
    uint32_t nchunks = 0;
    if (ps_store_compact(r.w, true, ps_time_now(), &nchunks, &err) != 0) {
        fprintf(stderr, "compact: %s\n", err.msg);
        return 1;
    }
    double t1 = now_ms();
    printf("bench_spans: %llu profiles (24 h of 10 s, one series per sample type: 2), %u spans a profile, "
           "%llu labelled samples; written and compacted (%u chunks) in %.1f s\n",
           (unsigned long long)r.profiles, r.nspans, (unsigned long long)r.labelled, nchunks, (t1 - t0) / 1e3);

    const char *type = "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta";
    double *ts = calloc(runs, sizeof(double)), *tp = calloc(runs, sizeof(double));
    double *bs = calloc(runs, sizeof(double)), *bp = calloc(runs, sizeof(double));
    int64_t got_span = 0, got_plain = 0;
    int64_t lo = PS_BENCH_GEN_T0_NS, hi = PS_BENCH_GEN_T0_NS + (int64_t)pps * PS_BENCH_GEN_STEP_NS;
    for (uint32_t k = 0; k < runs; k++) {
        for (int plain = 0; plain < 2; plain++) {
            ps_arena_t a = PS_ARENA_INIT;
            ps_reader_t *rd;
            ps_selector_t sel = {0};
            ps_profile_sel_t ps = {0};
            ps_profile_t prof;
            double a0 = now_ms();
            if (ps_reader_begin(s, &rd, &err) != 0 ||
                ps_querier_selector(type, "{service_name=\"api\"}", "label_selector", &a, &sel, &err) != 0)
                return 1;
            int rc = plain ? ps_querier_merge(rd, &sel, lo, hi, 1000, &a, &ps, &err)
                           : ps_querier_merge_spans(rd, &sel, lo, hi, &r.want_span, 1, 1000, &a, &ps, &err);
            double a1 = now_ms();
            /* the plain merge's pprof of every labelled stack is slow: built in the first run only */
            if (rc == 0 && (!plain || k == 0))
                rc = ps_query_profile_build(rd, &ps, NULL, PS_PROFILE_ONE, &a, &prof, &err);
            double a2 = now_ms();
            if (rc != 0) {
                fprintf(stderr, "merge: %s\n", err.msg);
                return 1;
            }
            (plain ? tp : ts)[k] = a1 - a0;
            (plain ? bp : bs)[k] = plain && k > 0 ? bp[0] : a2 - a0;
            *(plain ? &got_plain : &got_span) = ps.totals[0];
            ps_selector_dispose(&sel);
            ps_profile_sel_dispose(&ps);
            ps_reader_end(rd);
            ps_arena_dispose(&a);
        }
    }
    qsort(ts, runs, sizeof(double), cmp_d);
    qsort(tp, runs, sizeof(double), cmp_d);
    qsort(bs, runs, sizeof(double), cmp_d);
    qsort(bp, runs, sizeof(double), cmp_d);
    printf("span merge, 1 span over 24 h:  %8.3f ms (with the pprof built %8.3f ms), total %lld ns (want %lld)%s\n",
           ts[runs / 2], bs[runs / 2], (long long)got_span, (long long)r.want_total,
           got_span == r.want_total ? "" : "  MISMATCH");
    printf("plain merge, 24 h:             %8.3f ms (with the pprof built %8.3f ms), total %lld ns\n", tp[runs / 2],
           bp[runs / 2], (long long)got_plain);
    printf("target: span lookup < 50 ms\n");
    uint64_t sb = db_bytes(s, DB_SPANS), ub = db_bytes(s, DB_UUIDS), pb = db_bytes(s, DB_PUUID);
    uint64_t stored = r.profiles * 2; /* (series, ts) pairs: one per sample type */
    printf("span index: %llu entries (%.1f per profile per series), %llu bytes = %.0f bytes per profile "
           "(%.1f per stored (series, ts))\n",
           (unsigned long long)db_entries(s, DB_SPANS), (double)db_entries(s, DB_SPANS) / stored,
           (unsigned long long)sb, (double)sb / r.profiles, (double)sb / stored);
    printf("profile ids: uuids %llu + puuid %llu bytes = %.1f bytes per profile (%.1f per stored (series, ts))\n",
           (unsigned long long)ub, (unsigned long long)pb, (double)(ub + pb) / r.profiles, (double)(ub + pb) / stored);
    ps_store_stats_t st;
    if (ps_store_stats(s, &st, &err) == 0)
        printf("the whole store: %llu bytes in use, %.0f bytes per profile\n", (unsigned long long)st.used_bytes,
               (double)st.used_bytes / r.profiles);
    ps_store_writer_close(r.w);
    ps_store_close(s);
    if (!keep) {
        char cmd[256];
        snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
        if (system(cmd) != 0)
            fprintf(stderr, "could not remove %s\n", dir);
    } else {
        printf("kept %s\n", dir);
    }
    ps_arena_dispose(&r.arena);
    free(ts);
    free(tp);
    free(bs);
    free(bp);
    return got_span == r.want_total || r.nspans == 0 ? 0 : 1;
}
