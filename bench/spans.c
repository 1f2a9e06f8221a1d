/*
 * spans.c - bench_spans: a span lookup among 24 h of one service's profiles, beside the plain 24 h
 * merge, and what the span index and client profile ids cost on disk.
 *
 * Generates (bench/gen.h) 24 h of 10 s Go CPU profiles of one service (8,640, real stacks), labels
 * their samples as pyroscope-go's otel integration does (span_id = a 16-hex span id: --spans a
 * profile, a fifth of the samples in none; and the span's trace_id, 32 hex digits), and pushes them over push.v1.PusherService/Push
 * (binary Connect, 16 profiles a request, each with its RawSample.ID, a UUID) to a profstore it
 * starts itself (--retention 0 --storage.no-sync), then POST /api/v1/admin/compact. Then times over
 * HTTP, median of --runs, server CPU per request from /proc:
 *   - SelectMergeSpanProfile of one span of the middle of the day over the 24 h (the span index,
 *     then the profiles holding it): its total is checked against the generated one;
 *   - SelectMergeStacktraces of the same 24 h without a selector (the plain merge).
 * Then stops the server, opens its store read-only and prints the bytes of the span parts
 * (spanparts), the span index (spans) and the profile ids (uuids) per profile, and of the whole store.
 *
 * usage: bench_spans [--profiles N] [--spans K] [--runs R] [--keep]    (--spans 0: no span labels:
 * the store's size without them)
 */
#include <curl/curl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core/mem.h"
#include "core/varint.h"
#include "gen.h"
#include "proto/pprof.h"
#include "storage/internal.h"
#include "storage/store.h"
#include "util.h"

#define TYPE "process_cpu:cpu:nanoseconds:cpu:nanoseconds:delta"

typedef struct run {
    uint32_t nspans;
    ps_bench_pusher_t *pusher;
    char url[256];
    ps_buf_t req;      /* the PushRequest being filled */
    ps_buf_t series;   /* its one series */
    uint32_t in_req;
    uint64_t profiles, labelled, bytes;
    int64_t want_total; /* cpu of the span looked up */
    uint32_t want_profile;
} run_t;

static uint64_t span_of(uint32_t profile, uint32_t k)
{
    return 0x9a51718300000000ull | ((uint64_t)profile << 8) | k; /* unique per (profile, k), never 0 */
}

/* protobuf: field num of wire type 2 holding n bytes */
static void put_bytes(ps_buf_t *b, uint32_t num, const void *p, size_t n)
{
    ps_put_uvarint(b, (uint64_t)num << 3 | 2);
    ps_put_uvarint(b, n);
    ps_buf_append(b, p, n);
}

static void put_label(ps_buf_t *b, const char *name, const char *value)
{
    ps_buf_t l = PS_BUF_INIT;
    put_bytes(&l, 1, name, strlen(name));
    put_bytes(&l, 2, value, strlen(value));
    put_bytes(b, 1, l.data, l.len);
    ps_buf_dispose(&l);
}

static void flush(run_t *r)
{
    if (r->in_req == 0)
        return;
    ps_buf_reset(&r->req);
    put_bytes(&r->req, 1, r->series.data, r->series.len); /* PushRequest.series */
    ps_bench_pusher_post(r->pusher, (int64_t)r->profiles, r->url, r->req.data, r->req.len);
    r->bytes += r->req.len;
    ps_buf_reset(&r->series);
    r->in_req = 0;
}

static int on_profile(void *ctx, const ps_bench_gen_info_t *info)
{
    run_t *r = ctx;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pprof_limits_t lim;
    ps_pprof_limits_default(&lim);
    ps_err_t err;
    ps_profile_t p;
    if (ps_pprof_decode(info->pprof_gz, info->len, &lim, &a, &p, &err) != 0) {
        fprintf(stderr, "decode: %s\n", err.msg);
        return -1;
    }
    /* strings: + "span_id", "trace_id", the profile's span ids and their trace ids; the labels on
     * four samples of five */
    uint32_t ns = p.nstrings, key = ns, tkey = ns + 1, first = ns + 2;
    ps_str_t *strs = ps_arena_alloc(&a, (ns + 2 + 2 * r->nspans) * sizeof(ps_str_t));
    memcpy(strs, p.strings, ns * sizeof(ps_str_t));
    strs[key] = (ps_str_t){"span_id", 7};
    strs[tkey] = (ps_str_t){"trace_id", 8};
    for (uint32_t k = 0; k < r->nspans; k++) {
        char *h = ps_arena_alloc(&a, 17), *t = ps_arena_alloc(&a, 33);
        snprintf(h, 17, "%016llx", (unsigned long long)span_of(info->index, k));
        snprintf(t, 33, "4bf92f3577b34da6%016llx", (unsigned long long)span_of(info->index, k) * 0x9e3779b97f4a7c15ull);
        strs[first + 2 * k] = (ps_str_t){h, 16};
        strs[first + 2 * k + 1] = (ps_str_t){t, 32};
    }
    p.strings = strs;
    p.nstrings = first + 2 * r->nspans;
    for (uint32_t i = 0; i < p.nsamples && r->nspans > 0; i++) {
        ps_sample_t *s = &p.samples[i];
        if (i % 5 == 0)
            continue;
        uint32_t k = i % r->nspans;
        ps_label_t *l = ps_arena_alloc(&a, (s->nlabels + 2) * sizeof(ps_label_t));
        memcpy(l, s->labels, s->nlabels * sizeof(ps_label_t));
        l[s->nlabels] = (ps_label_t){.key = key, .str = first + 2 * k};
        l[s->nlabels + 1] = (ps_label_t){.key = tkey, .str = first + 2 * k + 1};
        s->labels = l;
        s->nlabels += 2;
        r->labelled++;
        if (info->index == r->want_profile && k == 3)
            r->want_total += s->values[1]; /* cpu/nanoseconds */
    }
    ps_buf_t pp = PS_BUF_INIT, smp = PS_BUF_INIT;
    if (ps_pprof_encode(&p, 1, &pp, &err) != 0) {
        fprintf(stderr, "encode: %s\n", err.msg);
        return -1;
    }
    if (r->in_req == 0) {
        put_label(&r->series, "__name__", "process_cpu");
        put_label(&r->series, "service_name", "api");
    }
    char id[40];
    snprintf(id, sizeof(id), "7c9e6679-7425-40de-944b-%012x", info->index);
    put_bytes(&smp, 1, pp.data, pp.len);     /* RawSample.raw_profile */
    put_bytes(&smp, 2, id, strlen(id));      /* RawSample.ID */
    put_bytes(&r->series, 2, smp.data, smp.len);
    ps_buf_dispose(&pp);
    ps_buf_dispose(&smp);
    ps_arena_dispose(&a);
    r->profiles++;
    if (++r->in_req == 16)
        flush(r);
    return 0;
}

static size_t to_buf(char *ptr, size_t size, size_t nmemb, void *ud)
{
    ps_buf_append(ud, ptr, size * nmemb);
    return size * nmemb;
}

/* One binary Connect call; *wall in ms. Returns the HTTP status. */
static long connect_call(const char *url, const ps_buf_t *req, ps_buf_t *out, double *wall)
{
    CURL *h = curl_easy_init();
    struct curl_slist *hdrs = curl_slist_append(NULL, "Content-Type: application/proto");
    hdrs = curl_slist_append(hdrs, "Connect-Protocol-Version: 1");
    ps_buf_reset(out);
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdrs);
    curl_easy_setopt(h, CURLOPT_POSTFIELDS, (const char *)req->data);
    curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE, (long)req->len);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(h, CURLOPT_TIMEOUT, 3600L);
    double t0 = ps_bench_now();
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    *wall = (ps_bench_now() - t0) * 1e3;
    curl_slist_free_all(hdrs);
    curl_easy_cleanup(h);
    return code;
}

/* FlameGraph.total of a SelectMergeStacktracesResponse (field 1, its field 3), or -1 */
static int64_t fg_total(const ps_buf_t *b)
{
    ps_dec_t d, g;
    ps_dec_init(&d, b->data, b->len);
    while (ps_dec_left(&d) > 0 && !d.err) {
        uint64_t tag = ps_dec_uvarint(&d);
        if (tag != (1 << 3 | 2))
            return -1;
        uint64_t n = ps_dec_uvarint(&d);
        if (d.err || n > ps_dec_left(&d))
            return -1;
        ps_dec_init(&g, d.p, n);
        d.p += n;
        while (ps_dec_left(&g) > 0 && !g.err) {
            uint64_t t = ps_dec_uvarint(&g);
            if (t == (3 << 3))
                return (int64_t)ps_dec_uvarint(&g);
            if ((t & 7) == 0)
                ps_dec_uvarint(&g);
            else if ((t & 7) == 2) {
                uint64_t m = ps_dec_uvarint(&g);
                if (m > ps_dec_left(&g))
                    return -1;
                g.p += m;
            } else
                return -1;
        }
    }
    return 0; /* no flame graph: an empty answer */
}

static void merge_req(ps_buf_t *b, bool span_method, const char *span, int64_t start_ms, int64_t end_ms)
{
    ps_buf_reset(b);
    put_bytes(b, 1, TYPE, strlen(TYPE));
    put_bytes(b, 2, "{service_name=\"api\"}", 20);
    if (span_method) { /* SelectMergeSpanProfileRequest: 3 span_selector, 4 start, 5 end, 6 max_nodes */
        put_bytes(b, 3, span, 16);
        ps_put_uvarint(b, 4 << 3);
        ps_put_uvarint(b, (uint64_t)start_ms);
        ps_put_uvarint(b, 5 << 3);
        ps_put_uvarint(b, (uint64_t)end_ms);
        ps_put_uvarint(b, 6 << 3);
        ps_put_uvarint(b, 16384);
    } else { /* SelectMergeStacktracesRequest: 3 start, 4 end, 5 max_nodes */
        ps_put_uvarint(b, 3 << 3);
        ps_put_uvarint(b, (uint64_t)start_ms);
        ps_put_uvarint(b, 4 << 3);
        ps_put_uvarint(b, (uint64_t)end_ms);
        ps_put_uvarint(b, 5 << 3);
        ps_put_uvarint(b, 16384);
    }
}

/* cold: one call first, not counted; returns the HTTP status (the answer's start printed if not 200) */
static long measure(const ps_bench_server_t *srv, const char *method, const ps_buf_t *req, bool cold_call, uint32_t runs,
                    double *med, double *cpu, int64_t *total)
{
    char url[256];
    snprintf(url, sizeof(url), "%s/querier.v1.QuerierService/%s", srv->url, method);
    ps_buf_t out = PS_BUF_INIT;
    double *w = ps_xcalloc(runs, sizeof(double)), c = 0, cold;
    long code = cold_call ? connect_call(url, req, &out, &cold) : 200;
    for (uint32_t i = 0; i < runs && code == 200; i++) {
        ps_bench_proc_t p0, p1;
        ps_bench_proc_read(srv->pid, &p0);
        code = connect_call(url, req, &out, &w[i]);
        ps_bench_proc_read(srv->pid, &p1);
        c += (p1.cpu_user + p1.cpu_sys) - (p0.cpu_user + p0.cpu_sys);
    }
    if (code != 200)
        printf("%s: HTTP %ld: %.*s\n", method, code, out.len > 200 ? 200 : (int)out.len, (const char *)out.data);
    *med = ps_bench_quantile(w, runs, 0.5);
    *cpu = c / runs * 1e3;
    *total = code == 200 ? fg_total(&out) : -1;
    free(w);
    ps_buf_dispose(&out);
    return code;
}

static uint64_t db_bytes(ps_txn_t *t, int db, uint64_t *entries)
{
    MDB_stat ms, es;
    mdb_env_stat(t->s->env, &es);
    if (!ps_txn_stat(t, db, &ms))
        return 0;
    *entries = ms.ms_entries;
    return (ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages) * es.ms_psize;
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
    char dir[] = "/tmp/profstore-spans-XXXXXX", data[300], log[300], bin[4096];
    if (mkdtemp(dir) == NULL)
        return 1;
    snprintf(data, sizeof(data), "%s/data", dir);
    snprintf(log, sizeof(log), "%s/profstore.log", dir);
    ps_bench_default_profstore(bin, sizeof(bin));
    const char *args[] = {"--retention", "0", "--storage.no-sync", "--web.enable-admin-api", "--query.timeout", "10m", NULL};
    ps_bench_server_t srv = {0};
    if (ps_bench_server_start(&srv, bin, data, log, args) != 0)
        return 1;
    snprintf(r.url, sizeof(r.url), "%s/push.v1.PusherService/Push", srv.url);
    r.pusher = ps_bench_pusher_new(1, 1); /* one connection: the requests of one series stay in time order */
    static const char *const hdrs[] = {"Content-Type: application/proto", "Connect-Protocol-Version: 1", NULL};
    ps_bench_pusher_headers(r.pusher, hdrs);
    r.want_profile = pps / 2;
    double t0 = ps_bench_now();
    if (ps_bench_gen_ex(1, pps, 1, on_profile, &r) != 0)
        return 1;
    flush(&r);
    ps_bench_pusher_drain(r.pusher);
    const ps_bench_push_stats_t *ps = ps_bench_pusher_stats(r.pusher);
    if (ps->failed > 0) {
        fprintf(stderr, "push failed: %s\n", ps->first_error);
        return 1;
    }
    char u[300];
    snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
    ps_buf_t body = PS_BUF_INIT;
    long code = ps_bench_http("POST", u, "", 0, &body);
    double t1 = ps_bench_now();
    printf("bench_spans: %llu profiles of one service (24 h of 10 s; 2 series: cpu and samples), %u spans a profile "
           "(%llu labelled samples), pushed in %llu requests (%.1f MB) and compacted (HTTP %ld) in %.1f s\n",
           (unsigned long long)r.profiles, r.nspans, (unsigned long long)r.labelled, (unsigned long long)ps->ok,
           r.bytes / 1e6, code, t1 - t0);

    int64_t lo = PS_BENCH_GEN_T0_NS / 1000000, hi = lo + (int64_t)pps * (PS_BENCH_GEN_STEP_NS / 1000000);
    ps_buf_t req = PS_BUF_INIT;
    double smed = 0, scpu = 0, pmed, pcpu;
    int64_t stotal = 0, ptotal;
    if (r.nspans > 0) {
        char span[17];
        snprintf(span, sizeof(span), "%016llx", (unsigned long long)span_of(r.want_profile, 3));
        merge_req(&req, true, span, lo, hi);
        measure(&srv, "SelectMergeSpanProfile", &req, true, runs, &smed, &scpu, &stotal);
    }
    /* the plain merge: the span labels are kept beside the stacks (span parts), so it costs what it
     * costs without them */
    merge_req(&req, false, NULL, lo, hi);
    measure(&srv, "SelectMergeStacktraces", &req, true, runs, &pmed, &pcpu, &ptotal);
    if (r.nspans > 0)
        printf("SelectMergeSpanProfile, 1 span, 24 h:  median %8.2f ms (server CPU %7.2f ms), total %lld ns (generated: "
               "%lld)%s   target < 50 ms\n",
               smed, scpu, (long long)stotal, (long long)r.want_total, stotal == r.want_total ? "" : "  MISMATCH");
    printf("SelectMergeStacktraces, 24 h (plain):  median %8.2f ms (server CPU %7.2f ms), total %lld ns\n", pmed, pcpu,
           (long long)ptotal);
    fflush(stdout);
    ps_bench_pusher_free(r.pusher);
    ps_bench_server_stop(&srv);

    ps_store_opts_t o;
    ps_store_opts_default(&o);
    o.dir = data;
    o.map_size = 64ull << 30;
    o.read_only = true;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&o, &s, &err) != 0) {
        fprintf(stderr, "open: %s\n", err.msg);
        return 1;
    }
    ps_txn_t t;
    ps_store_stats_t st;
    uint64_t ns = 0, nu = 0, np = 0;
    if (ps_txn_begin(&t, s, PS_TXN_READ, &err, "stat") != 0 || ps_store_stats(s, &st, &err) != 0)
        return 1;
    uint64_t sb = db_bytes(&t, DB_SPANS, &ns), ub = db_bytes(&t, DB_UUIDS, &nu), pb = db_bytes(&t, DB_SPANPARTS, &np);
    ps_txn_abort(&t);
    ps_store_close(s);
    double n = (double)r.profiles;
    printf("span index (spans): %llu entries (%.1f a profile), %llu bytes: %.0f bytes a profile\n",
           (unsigned long long)ns, ns / n, (unsigned long long)sb, sb / n);
    printf("span parts (spanparts): %llu records, %llu bytes: %.0f bytes a profile\n", (unsigned long long)np,
           (unsigned long long)pb, pb / n);
    printf("profile ids (uuids): %llu entries, %llu bytes: %.0f bytes a profile\n", (unsigned long long)nu,
           (unsigned long long)ub, ub / n);
    printf("the whole store: %llu bytes in use: %.0f bytes a profile\n", (unsigned long long)st.used_bytes,
           st.used_bytes / n);
    if (keep)
        printf("kept %s\n", dir);
    else
        ps_bench_rmrf(dir);
    ps_buf_dispose(&req);
    ps_buf_dispose(&body);
    ps_buf_dispose(&r.req);
    ps_buf_dispose(&r.series);
    return r.nspans == 0 || stotal == r.want_total ? 0 : 1;
}
