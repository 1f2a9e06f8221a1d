/*
 * promql.c - bench_promql: PromQL and remote_read end to end, profstore against Prometheus 3 and
 * Prometheus 2.42 on the same data in the same run, over HTTP, and the answers compared.
 *
 *   bench_promql [--series 10000] [--hours 24] [--step 60] [--rounds 7] [--conns 4]
 *                [--profstore PATH] [--prometheus BIN | --no-prometheus]
 *                [--prometheus3 BIN | --no-prometheus3] [--data-dir DIR] [--reload] [--query Q]
 *
 * Data: bench_remote_write's generator (bench/rwgen.c) with its default mix (--values node):
 * --series node_exporter-like series, one sample every 15 s for --hours, ending about a minute
 * before the load, sent as the same
 * remote-write 1.0 bodies (2,000 samples each, --conns in flight, a shard's bodies in order) to
 * POST /api/v1/write of a profstore (--retention 0), of a Prometheus 3 (--prometheus3, default the
 * peers cache's 3.16.0 that scripts/install-prometheus3.sh builds; left out when absent) and of a
 * Prometheus 2.42 (--web.enable-remote-write-receiver; out-of-order samples are refused there, as by
 * default). A Prometheus 3 added to a directory loaded before is loaded alone (file `loaded3`).
 * The loaded data directories are kept in --data-dir (default
 * /tmp/profstore-bench-promql-<series>x<hours>h) with a file `loaded` naming the time span and the
 * generator's mix, so a rerun skips the load; --reload loads again.
 *
 * Then both servers are restarted on their directories and timed over HTTP, --rounds times each
 * after one warm-up (median, min and max wall time; server CPU per query from /proc/PID/stat):
 *   - query_range: sum by (instance) (rate(node_cpu_seconds_total{cpu=~"[0-9]",
 *     mode=~"idle|iowait|softirq|system|user"}[5m])) (1,000 series of 10,000: 50 hosts x 4 cpus x
 *     5 of the 8 modes; cpu=~"[0-9]" takes all 4 cpus but keeps a second regex matcher, as the
 *     query had over the first generator's 16 cpus) over the whole span at --step;
 *   - the same as an instant query at the span's end;
 *   (--query Q times Q instead of that rate query, e.g. with Prometheus 3.16's anchored or smoothed;)
 *   - remote_read (SAMPLES, then STREAMED_XOR_CHUNKS) of those 1,000 series over the last hour
 *     (the number of series the selector selected is printed from profstore's answer).
 * Each Prometheus' answers are compared with profstore's series by series (JSON: by the metric's labels; remote_read: decoded,
 * streamed chunks cut to the query's range): the points that differ by more than 1e-9 relative or
 * that one side lacks are counted and printed.
 *
 * Printed, never asserted (bench/run.sh runs it; QUICK=1 there: 2,000 series x 2 h).
 */
#include <curl/curl.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "proto/remote_read.h"
#include "rwgen.h"
#include "storage/xorchunk.h"
#include "util.h"

#define INTERVAL_MS 15000

/* 5 of the 8 modes of rwgen.h's node_cpu_seconds_total: 20 series a host */
#define MODES "idle|iowait|softirq|system|user"

static const char *const QUERY =
    "sum by (instance) (rate(node_cpu_seconds_total{cpu=~\"[0-9]\",mode=~\"" MODES "\"}[5m]))";

typedef struct opts {
    char profstore[4096], dir[4096];
    const char *prometheus, *prometheus3;
    uint32_t series, hours, step_s, rounds, conns;
    int reload;
} opts_t;

/* ---- loading ---- */

static int post_body(void *ctx, const uint8_t *body, size_t len, uint32_t shard)
{
    void **c = ctx;
    ps_bench_pusher_post(c[0], shard, c[1], body, len);
    return 0;
}

/* Sends all rounds of a fresh generator to srv's /api/v1/write; prints the rate. */
static int load(const opts_t *o, ps_bench_server_t *srv, const char *name, int64_t t0, uint32_t rounds)
{
    static const char *const hdrs[] = {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                                       "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: bench_promql", NULL};
    char url[160];
    snprintf(url, sizeof(url), "%s/api/v1/write", srv->url);
    ps_bench_rwgen_t g;
    ps_bench_rwgen_init(&g, o->series, 2000, t0, PS_BENCH_RW_NODE);
    ps_bench_pusher_t *p = ps_bench_pusher_new(o->conns, 1);
    ps_bench_pusher_headers(p, hdrs);
    void *ctx[2] = {p, url};
    ps_bench_proc_t p0, p1;
    ps_bench_proc_read(srv->pid, &p0);
    double w0 = ps_bench_now();
    for (uint32_t r = 0; r < rounds; r++)
        if (ps_bench_rwgen_round(&g, post_body, ctx) != 0)
            return -1;
    ps_bench_pusher_drain(p);
    double wall = ps_bench_now() - w0;
    ps_bench_proc_read(srv->pid, &p1);
    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(p);
    double n = (double)o->series * rounds;
    printf("  load %-10s %.0f samples in %.1f s: %.0f samples/s, server CPU %.2f us/sample; %llu requests ok, "
           "%llu failed%s%s\n",
           name, n, wall, n / wall, (p1.cpu_user + p1.cpu_sys - p0.cpu_user - p0.cpu_sys) / n * 1e6,
           (unsigned long long)st->ok, (unsigned long long)st->failed, st->failed ? ": " : "",
           st->failed ? st->first_error : "");
    fflush(stdout);
    int rc = st->failed ? -1 : 0;
    ps_bench_pusher_free(p);
    ps_bench_rwgen_dispose(&g);
    return rc;
}

/* A Prometheus (bin) with its data in DIR/sub, its config and log beside. */
static int start_prometheus(const opts_t *o, const char *bin, const char *sub, ps_bench_server_t *s)
{
    char cfg[4200], cfgarg[4300], darg[4300], log[4200];
    snprintf(cfg, sizeof(cfg), "%s/%s.yml", o->dir, sub);
    snprintf(log, sizeof(log), "%s/%s.log", o->dir, sub);
    FILE *f = fopen(cfg, "w");
    if (f == NULL)
        return -1;
    fputs("global:\n  scrape_interval: 15s\nscrape_configs: []\n", f);
    fclose(f);
    snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
    snprintf(darg, sizeof(darg), "--storage.tsdb.path=%s/%s", o->dir, sub);
    const char *args[] = {bin, cfgarg, darg, "--web.listen-address=127.0.0.1:{port}",
                          "--web.enable-remote-write-receiver", "--storage.tsdb.retention.time=3650d", NULL};
    return ps_bench_exec_start(s, args, log, "/-/ready");
}

static int start_profstore(const opts_t *o, ps_bench_server_t *s)
{
    char dir[4200], log[4200];
    snprintf(dir, sizeof(dir), "%s/profstore", o->dir);
    snprintf(log, sizeof(log), "%s/profstore.log", o->dir);
    static const char *const args[] = {"--retention", "0", NULL};
    return ps_bench_server_start(s, o->profstore, dir, log, args);
}

/* ---- answers: series (a key, points), compared between the two servers ---- */

typedef struct aseries {
    char *key;
    uint32_t n, cap;
    int64_t *t;
    double *v;
} aseries_t;

typedef struct answer {
    aseries_t *s;
    uint32_t n, cap;
    uint64_t points;
} answer_t;

static aseries_t *answer_add(answer_t *a, const char *key, size_t klen)
{
    if (a->n == a->cap) {
        a->cap = a->cap ? a->cap * 2 : 64;
        a->s = ps_xrealloc(a->s, a->cap * sizeof(*a->s));
    }
    aseries_t *s = &a->s[a->n++];
    memset(s, 0, sizeof(*s));
    s->key = ps_xmalloc(klen + 1);
    memcpy(s->key, key, klen);
    s->key[klen] = 0;
    return s;
}

static void point_add(answer_t *a, aseries_t *s, int64_t t, double v)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 64;
        s->t = ps_xrealloc(s->t, s->cap * sizeof(int64_t));
        s->v = ps_xrealloc(s->v, s->cap * sizeof(double));
    }
    s->t[s->n] = t;
    s->v[s->n++] = v;
    a->points++;
}

static void answer_free(answer_t *a)
{
    for (uint32_t i = 0; i < a->n; i++) {
        free(a->s[i].key);
        free(a->s[i].t);
        free(a->s[i].v);
    }
    free(a->s);
    memset(a, 0, sizeof(*a));
}

static int cmp_series(const void *x, const void *y)
{
    return strcmp(((const aseries_t *)x)->key, ((const aseries_t *)y)->key);
}

/* One [t,"v"] pair at p; returns the byte after it, or NULL. */
static const char *json_point(const char *p, answer_t *a, aseries_t *s)
{
    if (*p != '[')
        return NULL;
    char *e;
    double t = strtod(p + 1, &e);
    const char *q = strchr(e, '"');
    if (q == NULL)
        return NULL;
    q++;
    double v = strncmp(q, "NaN", 3) == 0 ? NAN : strtod(q, &e);
    point_add(a, s, llround(t * 1000), v);
    q = strchr(q, ']');
    return q ? q + 1 : NULL;
}

/* A query or query_range answer's result: "metric":{...} then "value":[..] or "values":[[..],..]
 * (the label sets of this query hold no braces). */
static void parse_json(const char *js, answer_t *a)
{
    const char *p = js;
    while (p != NULL && (p = strstr(p, "\"metric\":{")) != NULL) {
        const char *m = p + 9, *me = strchr(m, '}');
        if (me == NULL)
            break;
        aseries_t *s = answer_add(a, m, (size_t)(me - m + 1));
        p = me + 1;
        if (strncmp(p, ",\"value\":", 9) == 0) {
            p = json_point(p + 9, a, s);
        } else if (strncmp(p, ",\"values\":[", 11) == 0) {
            p += 11;
            while (p != NULL && *p == '[') {
                p = json_point(p, a, s);
                if (p != NULL && *p == ',')
                    p++;
            }
        }
    }
    qsort(a->s, a->n, sizeof(*a->s), cmp_series);
}

static size_t labels_key(const ps_labels_t *ls, char *out, size_t n)
{
    size_t k = 0;
    for (uint32_t i = 0; i < ls->n && k < n; i++)
        k += (size_t)snprintf(out + k, n - k, "%.*s=\"%.*s\",", (int)ls->pairs[i].nlen, ls->pairs[i].name,
                              (int)ls->pairs[i].vlen, ls->pairs[i].value);
    return k < n ? k : n - 1;
}

static int parse_samples(const ps_buf_t *body, answer_t *a)
{
    ps_arena_t ar = PS_ARENA_INIT;
    ps_read_result_t *res;
    uint32_t nres;
    ps_err_t err;
    if (ps_read_response_decode(body->data, body->len, 1u << 30, &ar, &res, &nres, &err) != 0) {
        printf("  (SAMPLES answer does not decode: %s)\n", err.msg);
        ps_arena_dispose(&ar);
        return -1;
    }
    char key[1024];
    for (uint32_t q = 0; q < nres; q++)
        for (uint32_t i = 0; i < res[q].nseries; i++) {
            ps_read_series_t *rs = &res[q].series[i];
            aseries_t *s = answer_add(a, key, labels_key(&rs->labels, key, sizeof(key)));
            for (uint32_t k = 0; k < rs->nsamples; k++)
                point_add(a, s, rs->samples[k].t_ms, rs->samples[k].v);
        }
    ps_arena_dispose(&ar);
    qsort(a->s, a->n, sizeof(*a->s), cmp_series);
    return 0;
}

/* STREAMED_XOR_CHUNKS frames -> the samples of their chunks in [mint, maxt]; *nchunks counted. */
static int parse_streamed(const ps_buf_t *body, int64_t mint, int64_t maxt, answer_t *a, uint64_t *nchunks,
                          uint64_t *nbad)
{
    ps_arena_t ar = PS_ARENA_INIT;
    size_t at = 0;
    char key[1024];
    *nchunks = *nbad = 0;
    while (at < body->len) {
        ps_read_frame_t f;
        size_t used;
        ps_err_t err;
        if (ps_read_frame_decode((const uint8_t *)body->data + at, body->len - at, &used, &ar, &f, &err) != 0) {
            printf("  (STREAMED answer does not decode at byte %zu: %s)\n", at, err.msg);
            ps_arena_dispose(&ar);
            return -1;
        }
        at += used;
        for (uint32_t i = 0; i < f.nseries; i++) {
            size_t kl = labels_key(&f.series[i].labels, key, sizeof(key));
            aseries_t *s = a->n && strcmp(a->s[a->n - 1].key, key) == 0 ? &a->s[a->n - 1] : answer_add(a, key, kl);
            for (uint32_t c = 0; c < f.series[i].nchunks; c++) {
                if (f.series[i].chunks[c].type != 1) { /* not XOR: counted, not decoded */
                    printf("    (a chunk of encoding %d, %lld..%lld ms, %zu bytes: not decoded)\n",
                           f.series[i].chunks[c].type, (long long)f.series[i].chunks[c].min_t,
                           (long long)f.series[i].chunks[c].max_t, f.series[i].chunks[c].len);
                    continue;
                }
                ps_xor_iter_t it;
                ps_xor_iter_init_foreign(&it, f.series[i].chunks[c].data, f.series[i].chunks[c].len);
                (*nchunks)++;
                while (ps_xor_iter_next(&it))
                    if (it.t >= mint && it.t <= maxt)
                        point_add(a, s, it.t, it.v);
                ps_err_t xe;
                if (ps_xor_iter_err(&it, &xe) != 0 && (*nbad)++ == 0) /* our reader is strict: say so */
                    printf("    (a chunk our XOR reader refuses, the points before the fault kept: %s)\n", xe.msg);
            }
        }
        ps_arena_reset(&ar);
    }
    ps_arena_dispose(&ar);
    qsort(a->s, a->n, sizeof(*a->s), cmp_series);
    return 0;
}

/* Points that differ (> 1e-9 relative, NaN only equal to NaN) or that one side lacks. */
static uint64_t compare(const answer_t *x, const answer_t *y, double *maxrel)
{
    uint64_t differ = 0;
    uint32_t i = 0, j = 0;
    *maxrel = 0;
    while (i < x->n || j < y->n) {
        int c = i == x->n ? 1 : j == y->n ? -1 : strcmp(x->s[i].key, y->s[j].key);
        if (c < 0) {
            differ += x->s[i++].n;
            continue;
        }
        if (c > 0) {
            differ += y->s[j++].n;
            continue;
        }
        const aseries_t *a = &x->s[i++], *b = &y->s[j++];
        uint32_t p = 0, q = 0;
        while (p < a->n || q < b->n) {
            if (q == b->n || (p < a->n && a->t[p] < b->t[q])) {
                differ++, p++;
                continue;
            }
            if (p == a->n || b->t[q] < a->t[p]) {
                differ++, q++;
                continue;
            }
            double u = a->v[p++], v = b->v[q++];
            if (isnan(u) || isnan(v)) {
                differ += !(isnan(u) && isnan(v));
                continue;
            }
            double rel = u == v ? 0 : fabs(u - v) / fmax(fabs(u), fabs(v));
            if (rel > *maxrel)
                *maxrel = rel;
            differ += rel > 1e-9;
        }
    }
    return differ;
}

/* ---- timing ---- */

typedef struct timing {
    double med, min, max, cpu; /* seconds; cpu: server CPU per query */
    size_t bytes;
    int ok;
} timing_t;

static int cmp_d(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static size_t to_buf(char *p, size_t size, size_t n, void *ctx)
{
    ps_buf_append(ctx, p, size * n);
    return size * n;
}

/* GET (body NULL) or a remote-read POST on the keep-alive handle h. */
static long request(CURL *h, const char *url, const ps_buf_t *body, ps_buf_t *out)
{
    struct curl_slist *hdr = curl_slist_append(NULL, "Expect:");
    if (body != NULL) {
        hdr = curl_slist_append(hdr, "Content-Encoding: snappy");
        hdr = curl_slist_append(hdr, "Content-Type: application/x-protobuf");
        hdr = curl_slist_append(hdr, "X-Prometheus-Remote-Read-Version: 0.1.0");
    }
    curl_easy_setopt(h, CURLOPT_URL, url);
    curl_easy_setopt(h, CURLOPT_WRITEFUNCTION, to_buf);
    curl_easy_setopt(h, CURLOPT_WRITEDATA, out);
    curl_easy_setopt(h, CURLOPT_HTTPHEADER, hdr);
    curl_easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
    if (body != NULL) {
        curl_easy_setopt(h, CURLOPT_POST, 1L);
        curl_easy_setopt(h, CURLOPT_POSTFIELDS, body->data);
        curl_easy_setopt(h, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)body->len);
    } else {
        curl_easy_setopt(h, CURLOPT_HTTPGET, 1L);
    }
    long code = -1;
    if (curl_easy_perform(h) == CURLE_OK)
        curl_easy_getinfo(h, CURLINFO_RESPONSE_CODE, &code);
    curl_slist_free_all(hdr);
    return code;
}

/* One warm-up, then rounds timed requests; the last answer stays in out. */
static timing_t time_it(const opts_t *o, CURL *h, pid_t pid, const char *url, const ps_buf_t *body, ps_buf_t *out)
{
    timing_t t = {0};
    double *lat = ps_xcalloc(o->rounds + 1, sizeof(double));
    ps_bench_proc_t p0 = {0}, p1 = {0};
    for (uint32_t r = 0; r <= o->rounds; r++) {
        if (r == 1)
            ps_bench_proc_read(pid, &p0);
        ps_buf_reset(out);
        double w0 = ps_bench_now();
        long st = request(h, url, body, out);
        if (r > 0)
            lat[r - 1] = ps_bench_now() - w0;
        if (st != 200) {
            printf("  (%s: status %ld: %.300s)\n", url, st, out->data ? (const char *)out->data : "");
            free(lat);
            return t;
        }
    }
    ps_bench_proc_read(pid, &p1);
    qsort(lat, o->rounds, sizeof(double), cmp_d);
    t.med = lat[o->rounds / 2];
    t.min = lat[0];
    t.max = lat[o->rounds - 1];
    t.cpu = (p1.cpu_user + p1.cpu_sys - p0.cpu_user - p0.cpu_sys) / o->rounds;
    t.bytes = out->len;
    t.ok = 1;
    free(lat);
    return t;
}

static void print_timing(const char *server, const timing_t *t)
{
    if (!t->ok)
        return;
    printf("    %-10s median %8.2f ms  (min %8.2f, max %8.2f)  server CPU %8.2f ms/query  answer %9zu bytes\n",
           server, t->med * 1e3, t->min * 1e3, t->max * 1e3, t->cpu * 1e3, t->bytes);
}

typedef enum { K_JSON, K_SAMPLES, K_STREAMED } kind_t;

typedef struct peer {
    const char *name;
    ps_bench_server_t *srv;
    CURL *h;
} peer_t;

#define MAX_PEERS 3

/* Times one request on each peer, prints them and the comparison of each other peer's answer with
 * the first's (profstore's); returns the number of series in the first peer's answer. */
static uint32_t run_case(const opts_t *o, const char *title, kind_t kind, peer_t *peers, uint32_t npeers,
                     const char *path, const ps_buf_t *body, int64_t mint, int64_t maxt)
{
    printf("\n  %s\n", title);
    answer_t ans[MAX_PEERS] = {{0}};
    timing_t tm[MAX_PEERS] = {{0}};
    for (uint32_t k = 0; k < npeers; k++) {
        char url[8192];
        snprintf(url, sizeof(url), "%s%s", peers[k].srv->url, path);
        ps_buf_t out = PS_BUF_INIT;
        tm[k] = time_it(o, peers[k].h, peers[k].srv->pid, url, body, &out);
        print_timing(peers[k].name, &tm[k]);
        uint64_t nchunks = 0, nbad = 0;
        if (tm[k].ok && kind == K_JSON) {
            ps_buf_putc(&out, 0);
            parse_json((const char *)out.data, &ans[k]);
        } else if (tm[k].ok && kind == K_SAMPLES) {
            parse_samples(&out, &ans[k]);
        } else if (tm[k].ok) {
            parse_streamed(&out, mint, maxt, &ans[k], &nchunks, &nbad);
        }
        if (tm[k].ok)
            printf("    %-10s answer: %u series, %llu points%s", peers[k].name, ans[k].n,
                   (unsigned long long)ans[k].points, kind == K_STREAMED ? "" : "\n");
        if (tm[k].ok && kind == K_STREAMED)
            printf(" in [start, end] from %llu chunks%s\n", (unsigned long long)nchunks,
                   nbad ? " (some refused by our reader: see above)" : "");
        if (nbad)
            printf("    %-10s %llu chunks refused by our XOR reader (storage/xorchunk.c, strict about the end)\n",
                   peers[k].name, (unsigned long long)nbad);
        ps_buf_dispose(&out);
    }
    for (uint32_t k = 1; k < npeers; k++) {
        if (!tm[0].ok || !tm[k].ok)
            continue;
        double maxrel;
        uint64_t d = compare(&ans[k], &ans[0], &maxrel);
        printf("    compared with %s: %llu points differ (> 1e-9 relative or missing on one side), largest "
               "relative difference %.3g\n",
               peers[k].name, (unsigned long long)d, maxrel);
        printf("    profstore / %s: %.2fx the median wall time, %.2fx the server CPU%s\n", peers[k].name,
               tm[0].med / tm[k].med, tm[k].cpu > 0 ? tm[0].cpu / tm[k].cpu : 0.0,
               tm[0].med <= tm[k].med ? "" : "   (slower)");
    }
    uint32_t n = ans[0].n;
    for (uint32_t k = 0; k < npeers; k++)
        answer_free(&ans[k]);
    return n;
}

/* the flags as the table parses them; main puts them into opts_t */
typedef struct flagv {
    const char *profstore, *prometheus, *prometheus3, *data_dir, *query;
    uint64_t series, hours, step_s, rounds, conns;
    bool no_prometheus, no_prometheus3, reload;
} flagv_t;

#define FV(field) offsetof(flagv_t, field)

/* clang-format off */
static const ps_flag_t flags[] = {
    {.name = "series", .type = PS_FLAG_UINT, .offset = FV(series), .metavar = "N", .def = "10000", .min = 1,
     .max = UINT32_MAX, .help = "node_exporter-like series loaded (default 10000)"},
    {.name = "hours", .type = PS_FLAG_UINT, .offset = FV(hours), .metavar = "N", .def = "24", .min = 1,
     .max = UINT32_MAX, .help = "hours of samples, one every 15 s (default 24)"},
    {.name = "step", .type = PS_FLAG_UINT, .offset = FV(step_s), .metavar = "S", .def = "60", .min = 1,
     .max = UINT32_MAX, .help = "query_range step in seconds (default 60)"},
    {.name = "rounds", .type = PS_FLAG_UINT, .offset = FV(rounds), .metavar = "N", .def = "7", .min = 1,
     .max = UINT32_MAX, .help = "timed runs of each query (default 7)"},
    {.name = "conns", .type = PS_FLAG_UINT, .offset = FV(conns), .metavar = "N", .def = "4", .min = 1,
     .max = UINT32_MAX, .help = "remote-write requests in flight while loading (default 4)"},
    PS_BENCH_FLAG_PROFSTORE(FV(profstore)),
    {.name = "prometheus", .type = PS_FLAG_STRING, .offset = FV(prometheus), .metavar = "BIN",
     .def = "/usr/bin/prometheus", .help = "Prometheus 2.42 binary (default /usr/bin/prometheus)"},
    {.name = "no-prometheus", .type = PS_FLAG_BOOL, .offset = FV(no_prometheus), .help = "without Prometheus 2.42"},
    {.name = "prometheus3", .type = PS_FLAG_STRING, .offset = FV(prometheus3), .metavar = "BIN",
     .help = "Prometheus 3 binary (default the peers cache's,\n~/.cache/profstore-peers/prometheus-3.16.0/bin/prometheus)"},
    {.name = "no-prometheus3", .type = PS_FLAG_BOOL, .offset = FV(no_prometheus3), .help = "without Prometheus 3"},
    {.name = "data-dir", .type = PS_FLAG_STRING, .offset = FV(data_dir), .metavar = "DIR",
     .help = "where the loaded data is kept (default\n/tmp/profstore-bench-promql-<series>x<hours>h)"},
    {.name = "query", .type = PS_FLAG_STRING, .offset = FV(query), .metavar = "Q",
     .help = "the PromQL query timed instead of the rate one above, over the\nsame series (e.g. with anchored or smoothed)"},
    {.name = "reload", .type = PS_FLAG_BOOL, .offset = FV(reload),
     .help = "load again even if --data-dir holds a load of the same parameters"},
    {.name = "help", .short_name = 'h', .type = PS_FLAG_ACTION, .action = 1, .help = "print this help"},
};
/* clang-format on */
static const ps_flagset_t flagset = {"bench_promql", "usage: bench_promql [flags]\n", flags,
                                     sizeof(flags) / sizeof(flags[0])};

int main(int argc, char **argv)
{
    opts_t o = {0};
    flagv_t fv = {0};
    ps_bench_flags(&flagset, argc, argv, &fv);
    ps_bench_profstore_path(o.profstore, sizeof(o.profstore), fv.profstore);
    if (fv.data_dir != NULL)
        snprintf(o.dir, sizeof(o.dir), "%s", fv.data_dir);
    o.prometheus = fv.no_prometheus ? NULL : fv.prometheus;
    char p3[4200];
    ps_bench_prometheus3_default(p3, sizeof(p3));
    o.prometheus3 = fv.no_prometheus3 ? NULL : fv.prometheus3 != NULL ? fv.prometheus3 : p3;
    o.series = (uint32_t)fv.series;
    o.hours = (uint32_t)fv.hours;
    o.step_s = (uint32_t)fv.step_s;
    o.rounds = (uint32_t)fv.rounds;
    o.conns = (uint32_t)fv.conns;
    o.reload = fv.reload;
    if (o.prometheus != NULL && access(o.prometheus, X_OK) != 0) {
        printf("bench_promql: %s not executable: without Prometheus 2.42\n", o.prometheus);
        o.prometheus = NULL;
    }
    if (o.prometheus3 != NULL && access(o.prometheus3, X_OK) != 0) {
        printf("bench_promql: %s not executable: without Prometheus 3 (scripts/install-prometheus3.sh)\n",
               o.prometheus3);
        o.prometheus3 = NULL;
    }
    if (o.dir[0] == 0)
        snprintf(o.dir, sizeof(o.dir), "/tmp/profstore-bench-promql-%ux%uh", o.series, o.hours);
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);

    /* the data: loaded before (the file `loaded` says when, and into which servers) or now */
    uint32_t rounds = o.hours * 3600 / 15;
    int64_t t0 = 0;
    int with_prom = 0;
    char marker[4200];
    snprintf(marker, sizeof(marker), "%s/loaded", o.dir);
    FILE *f = o.reload ? NULL : fopen(marker, "r");
    long long mt0 = 0;
    unsigned mr = 0, ms = 0;
    int mp = 0;
    char mgen[16] = "";
    if (f != NULL &&
        fscanf(f, "t0=%lld rounds=%u series=%u prometheus=%d values=%15s", &mt0, &mr, &ms, &mp, mgen) == 5 &&
        mr == rounds && ms == o.series && (mp || o.prometheus == NULL) && strcmp(mgen, "node") == 0) {
        t0 = mt0;
        with_prom = mp;
        printf("bench_promql: data loaded before in %s (%u series x %u samples from %lld ms)\n", o.dir, o.series,
               rounds, mt0);
    }
    if (f != NULL)
        fclose(f);
    if (t0 == 0) {
        ps_bench_rmrf(o.dir);
        ps_bench_mkdirs(o.dir);
        int64_t now = (int64_t)time(NULL) * 1000;
        int64_t end = now - 60000 - now % INTERVAL_MS;
        t0 = end - (int64_t)(rounds - 1) * INTERVAL_MS;
        printf("bench_promql: loading %u series x %u samples (15 s apart, %u h) = %llu samples through POST "
               "/api/v1/write, %u in flight, into %s\n",
               o.series, rounds, o.hours, (unsigned long long)o.series * rounds, o.conns, o.dir);
        fflush(stdout);
        ps_bench_server_t ps, pm;
        if (start_profstore(&o, &ps) != 0)
            return 1;
        int rc = load(&o, &ps, "profstore", t0, rounds);
        char u[128];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", ps.url);
        double c0 = ps_bench_now();
        long code = ps_bench_http("POST", u, "", 0, NULL);
        printf("  profstore POST /api/v1/admin/compact: HTTP %ld in %.1f s\n", code, ps_bench_now() - c0);
        ps_bench_server_stop(&ps);
        if (rc != 0)
            return 1;
        if (o.prometheus != NULL) {
            if (start_prometheus(&o, o.prometheus, "prometheus", &pm) != 0)
                return 1;
            rc = load(&o, &pm, "prom 2.42", t0, rounds);
            ps_bench_server_stop(&pm);
            if (rc != 0)
                return 1;
            with_prom = 1;
        }
        f = fopen(marker, "w");
        if (f != NULL) {
            fprintf(f, "t0=%lld rounds=%u series=%u prometheus=%d values=node\n", (long long)t0, rounds, o.series,
                    with_prom);
            fclose(f);
        }
    }
    /* Prometheus 3: loaded alone into a directory loaded before, the same bodies */
    int with_prom3 = 0;
    char marker3[4200];
    snprintf(marker3, sizeof(marker3), "%s/loaded3", o.dir);
    if (o.prometheus3 != NULL && access(marker3, R_OK) == 0) {
        with_prom3 = 1;
    } else if (o.prometheus3 != NULL) {
        ps_bench_server_t p3s;
        if (start_prometheus(&o, o.prometheus3, "prometheus3", &p3s) != 0)
            return 1;
        int rc = load(&o, &p3s, "prom 3", t0, rounds);
        ps_bench_server_stop(&p3s);
        if (rc != 0)
            return 1;
        f = fopen(marker3, "w");
        if (f != NULL) {
            fprintf(f, "%s\n", o.prometheus3);
            fclose(f);
        }
        with_prom3 = 1;
    }
    int64_t tend = t0 + (int64_t)(rounds - 1) * INTERVAL_MS + 50; /* the last host's offset is < 50 ms */

    /* the servers, on the loaded directories */
    ps_bench_server_t ps, pm, pm3;
    if (start_profstore(&o, &ps) != 0)
        return 1;
    peer_t peers[MAX_PEERS] = {{"profstore", &ps, curl_easy_init()}};
    uint32_t npeers = 1;
    if (with_prom3) {
        if (start_prometheus(&o, o.prometheus3, "prometheus3", &pm3) != 0) {
            ps_bench_server_stop(&ps);
            return 1;
        }
        peers[npeers++] = (peer_t){"prom 3", &pm3, curl_easy_init()};
    }
    if (with_prom && o.prometheus != NULL) {
        if (start_prometheus(&o, o.prometheus, "prometheus", &pm) != 0) {
            for (uint32_t k = 0; k < npeers; k++)
                ps_bench_server_stop(peers[k].srv);
            return 1;
        }
        peers[npeers++] = (peer_t){"prom 2.42", &pm, curl_easy_init()};
    }

    int64_t step = (int64_t)o.step_s * 1000;
    int64_t qs = (t0 + step - 1) / step * step, qe = tend / step * step;
    const char *query = fv.query != NULL ? fv.query : QUERY;
    if (strlen(query) > 600)
        ps_bench_flags_fail(&flagset, "--query: at most 600 bytes");
    char enc[2048], path[4096];
    ps_bench_urlencode(query, enc, sizeof(enc));
    printf("\n== %s ==\n", query);
    snprintf(path, sizeof(path), "/api/v1/query_range?query=%s&start=%lld.%03lld&end=%lld.%03lld&step=%u", enc,
             (long long)(qs / 1000), (long long)(qs % 1000), (long long)(qe / 1000), (long long)(qe % 1000),
             o.step_s);
    char title[256];
    snprintf(title, sizeof(title), "query_range over %.1f h at %u s step (%lld steps), %u rounds after a warm-up",
             (double)(qe - qs) / 3.6e6, o.step_s, (long long)((qe - qs) / step + 1), o.rounds);
    run_case(&o, title, K_JSON, peers, npeers, path, NULL, 0, 0);
    snprintf(path, sizeof(path), "/api/v1/query?query=%s&time=%lld.%03lld", enc, (long long)(qe / 1000),
             (long long)(qe % 1000));
    run_case(&o, "instant query at the end", K_JSON, peers, npeers, path, NULL, 0, 0);

    /* remote_read of the same 1,000 series over the last hour */
    ps_read_matcher_t m[3] = {{PS_READ_EQ, "__name__", "node_cpu_seconds_total", 8, 22},
                              {PS_READ_RE, "cpu", "[0-9]", 3, 5},
                              {PS_READ_RE, "mode", MODES, 4, sizeof(MODES) - 1}};
    ps_read_query_t q = {tend - 3600000, tend, 3, m, {0}};
    q.hints.func = "";
    int tsamples = PS_READ_SAMPLES, tstreamed = PS_READ_STREAMED_XOR_CHUNKS;
    ps_read_request_t rs = {1, &q, 1, &tsamples}, rx = {1, &q, 1, &tstreamed};
    ps_buf_t reqs = PS_BUF_INIT, reqx = PS_BUF_INIT;
    ps_read_request_encode(&rs, &reqs);
    ps_read_request_encode(&rx, &reqx);
    printf("\n== remote_read {__name__=\"node_cpu_seconds_total\",cpu=~\"[0-9]\",mode=~\"" MODES "\"}, last hour ==\n");
    uint32_t selected =
        run_case(&o, "SAMPLES", K_SAMPLES, peers, npeers, "/api/v1/read", &reqs, q.start_ms, q.end_ms);
    printf("    the selector selected %u series of %u (profstore's answer; 20 of each host's 200)\n", selected, o.series);
    run_case(&o, "STREAMED_XOR_CHUNKS", K_STREAMED, peers, npeers, "/api/v1/read", &reqx, q.start_ms, q.end_ms);

    for (uint32_t k = 0; k < npeers; k++) {
        curl_easy_cleanup(peers[k].h);
        ps_bench_server_stop(peers[k].srv);
    }
    printf("\n(data kept in %s; --reload loads it again)\n", o.dir);
    ps_buf_dispose(&reqs);
    ps_buf_dispose(&reqx);
    curl_global_cleanup();
    return 0;
}
