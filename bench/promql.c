/*
 * promql.c - bench_promql: PromQL evaluation speed, profstore's evaluator against Prometheus 2.42 on
 * the same data in the same run, and the two answers compared.
 *
 *   bench_promql [--series 1000] [--hours 6] [--step 60] [--rounds 3]
 *                [--prometheus /usr/bin/prometheus] [--promtool /usr/bin/promtool] [--no-prometheus]
 *
 * Data: --series node_exporter-like counters (node_cpu_seconds_total{instance, cpu, mode, job}),
 * one sample every 15 s for --hours, ending a minute ago, the same values (xorshift, fixed seed)
 * for both. The query is a dashboard's: sum by (instance) (rate(node_cpu_seconds_total[5m])) over
 * the whole span at --step.
 *
 * profstore: the evaluator (src/query/promql.h) over an in-memory sample source, so the figure is
 * the evaluator's own (selection, windows, rate, aggregation, the answer's series), without LMDB;
 * float series are read from the store through the same API once they are stored.
 * Prometheus: the same samples as OpenMetrics text, turned into TSDB blocks by `promtool tsdb
 * create-blocks-from openmetrics`, served by `prometheus` on a free loopback port; the query is an
 * HTTP query_range, so its figure includes JSON encoding and the loopback round trip (a few ms).
 * Both: best of --rounds wall times, and CPU seconds of the evaluating process. The answers are
 * compared point by point (relative difference; both sort series by labels).
 *
 * Printed, never asserted (bench/run.sh runs it; QUICK=1 there: 200 series x 2 h).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <netinet/in.h>
#include <unistd.h>

#include "core/timeutil.h"
#include "parser/promql.h"
#include "query/promql.h"
#include "util.h"

static const char *modes[] = {"idle", "user", "system", "iowait"};

typedef struct mem_series {
    ps_labels_t labels;
    ps_fsample_t *s;
    uint32_t n;
} mem_series_t;

typedef struct mem_src {
    mem_series_t *v;
    uint32_t n;
} mem_src_t;

static bool matches(ps_selector_t *sel, const ps_labels_t *ls)
{
    for (uint32_t i = 0; i < sel->n; i++) {
        const char *v = ps_labels_value(ls, sel->m[i].name);
        if (!ps_matcher_match(&sel->m[i], v ? v : "", v ? strlen(v) : 0))
            return false;
    }
    return true;
}

static int mem_select(void *ctx, ps_selector_t *sel, int64_t mint, int64_t maxt, ps_arena_t *arena, uint64_t *budget,
                      ps_pq_series_t **out, uint32_t *nout, ps_err_t *err)
{
    mem_src_t *m = ctx;
    ps_pq_series_t *v = ps_arena_alloc(arena, (m->n + 1) * sizeof(*v));
    uint32_t n = 0;
    for (uint32_t i = 0; i < m->n; i++) {
        mem_series_t *s = &m->v[i];
        if (!matches(sel, &s->labels))
            continue;
        uint32_t lo = 0, hi = s->n;
        while (lo < s->n && s->s[lo].t < mint)
            lo++;
        while (hi > lo && s->s[hi - 1].t > maxt)
            hi--;
        if (hi == lo)
            continue;
        if (hi - lo > *budget)
            return ps_err_set(err, PS_ELIMIT, "too many samples");
        *budget -= hi - lo;
        v[n++] = (ps_pq_series_t){s->labels, hi - lo, s->s + lo};
    }
    *out = v;
    *nout = n;
    return 0;
}

static ps_labels_t make_labels(ps_arena_t *a, uint32_t i)
{
    char inst[32], cpu[8];
    snprintf(inst, sizeof(inst), "host-%03u:9100", i / 8);
    snprintf(cpu, sizeof(cpu), "%u", (i / 4) % 2);
    const char *names[] = {"__name__", "cpu", "instance", "job", "mode"};
    const char *vals[] = {"node_cpu_seconds_total", cpu, inst, "node", modes[i % 4]};
    ps_labels_t ls = {5, ps_arena_alloc(a, 5 * sizeof(ps_label_pair_t)), 0};
    for (int k = 0; k < 5; k++)
        ls.pairs[k] = (ps_label_pair_t){ps_arena_strndup(a, names[k], strlen(names[k])),
                                        ps_arena_strndup(a, vals[k], strlen(vals[k])), (uint32_t)strlen(names[k]),
                                        (uint32_t)strlen(vals[k])};
    return ls;
}

static int free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in sa = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t l = sizeof(sa);
    if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) != 0 || getsockname(fd, (struct sockaddr *)&sa, &l))
        return -1;
    int p = ntohs(sa.sin_port);
    close(fd);
    return p;
}

static int run_cmd(char *const argv[], const char *log)
{
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *f = freopen(log, "a", stdout);
        (void)f;
        dup2(1, 2);
        execv(argv[0], argv);
        _exit(127);
    }
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* Prometheus' matrix JSON -> points in order (labels skipped: both sides sort series by labels). */
static size_t parse_values(const char *js, double **vals, int64_t **ts, uint32_t *nseries)
{
    size_t n = 0, cap = 1024;
    *vals = malloc(cap * sizeof(double));
    *ts = malloc(cap * sizeof(int64_t));
    *nseries = 0;
    const char *p = js;
    while ((p = strstr(p, "\"values\":[")) != NULL) {
        (*nseries)++;
        p += 10;
        while (*p == '[') {
            char *e;
            double t = strtod(p + 1, &e);
            const char *q = strchr(e, '"') + 1;
            double v = strtod(q, &e);
            if (strncmp(q, "NaN", 3) == 0)
                v = NAN;
            if (n == cap) {
                cap *= 2;
                *vals = realloc(*vals, cap * sizeof(double));
                *ts = realloc(*ts, cap * sizeof(int64_t));
            }
            (*vals)[n] = v;
            (*ts)[n++] = llround(t * 1000);
            p = strchr(q, ']') + 1;
            if (*p == ',')
                p++;
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    uint64_t nseries = 1000, hours = 6, step_s = 60, rounds = 3;
    const char *prom = "/usr/bin/prometheus", *promtool = "/usr/bin/promtool";
    int use_prom = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : "";
        if (strcmp(a, "--series") == 0)
            nseries = ps_bench_num_arg("bench_promql", a, v), i++;
        else if (strcmp(a, "--hours") == 0)
            hours = ps_bench_num_arg("bench_promql", a, v), i++;
        else if (strcmp(a, "--step") == 0)
            step_s = ps_bench_num_arg("bench_promql", a, v), i++;
        else if (strcmp(a, "--rounds") == 0)
            rounds = ps_bench_num_arg("bench_promql", a, v), i++;
        else if (strcmp(a, "--prometheus") == 0)
            prom = v, i++;
        else if (strcmp(a, "--promtool") == 0)
            promtool = v, i++;
        else if (strcmp(a, "--no-prometheus") == 0)
            use_prom = 0;
        else {
            fprintf(stderr, "bench_promql: unknown flag %s\n", a);
            return 2;
        }
    }
    if (use_prom && (access(prom, X_OK) != 0 || access(promtool, X_OK) != 0)) {
        printf("bench_promql: %s or %s missing: profstore only\n", prom, promtool);
        use_prom = 0;
    }
    ps_bench_malloc_tune();
    const int64_t interval = 15000;
    int64_t now = ps_time_now() / 1000000;
    int64_t end = now - 60000 - now % interval;
    uint32_t per = (uint32_t)(hours * 3600000 / interval);
    int64_t start = end - (int64_t)(per - 1) * interval;

    /* the data */
    ps_arena_t la = PS_ARENA_INIT;
    mem_src_t m = {calloc(nseries, sizeof(mem_series_t)), (uint32_t)nseries};
    for (uint32_t i = 0; i < nseries; i++) {
        mem_series_t *s = &m.v[i];
        s->labels = make_labels(&la, i);
        s->s = malloc(per * sizeof(ps_fsample_t));
        s->n = per;
        double v = floor(ps_bench_rnd_unit() * 100000) / 100;
        for (uint32_t k = 0; k < per; k++) {
            if (i % 97 == 0 && k == per / 2)
                v = 0; /* a restart: a counter reset in a few series */
            v += floor(ps_bench_rnd_unit() * 1500) / 100;
            s->s[k] = (ps_fsample_t){start + (int64_t)k * interval, v};
        }
    }
    /* sorted by labels, as Prometheus' blocks give series to the query */
    for (uint32_t i = 1; i < m.n; i++)
        for (uint32_t j = i; j > 0 && ps_labels_cmp(&m.v[j].labels, &m.v[j - 1].labels) < 0; j--) {
            mem_series_t t = m.v[j];
            m.v[j] = m.v[j - 1];
            m.v[j - 1] = t;
        }
    uint64_t nsamples = nseries * (uint64_t)per;
    const char *query = "sum by (instance) (rate(node_cpu_seconds_total[5m]))";
    int64_t qstart = start + 300000, qend = end, qstep = (int64_t)step_s * 1000;
    uint64_t steps = (uint64_t)((qend - qstart) / qstep) + 1;
    printf("data: %llu series x %u samples (15 s, %llu h) = %llu samples\n", (unsigned long long)nseries, per,
           (unsigned long long)hours, (unsigned long long)nsamples);
    printf("query: %s, %llu steps of %llu s\n", query, (unsigned long long)steps, (unsigned long long)step_s);

    /* profstore */
    ps_pq_source_t src = {mem_select, &m};
    ps_pq_opts_t o;
    ps_pq_opts_default(&o);
    o.start = qstart;
    o.end = qend;
    o.step = qstep;
    double best = 1e9, cpu_best = 1e9;
    ps_arena_t a = PS_ARENA_INIT;
    ps_pq_result_t res;
    size_t npoints = 0;
    for (uint64_t r = 0; r < rounds; r++) {
        ps_arena_reset(&a);
        ps_err_t err;
        ps_pq_node_t *e;
        double t0 = ps_bench_now(), c0 = ps_bench_self_cpu();
        if (ps_pq_parse(query, strlen(query), NULL, &a, &e, &err) != 0 || ps_pq_eval(e, &src, &o, &a, &res, &err) != 0) {
            fprintf(stderr, "bench_promql: %s\n", err.msg);
            return 1;
        }
        double dt = ps_bench_now() - t0, dc = ps_bench_self_cpu() - c0;
        ps_pq_dispose(e);
        if (dt < best)
            best = dt;
        if (dc < cpu_best)
            cpu_best = dc;
    }
    for (uint32_t i = 0; i < res.n; i++)
        npoints += res.series[i].n;
    printf("profstore evaluator: %.1f ms (best of %llu), %.1f ms CPU, answer %u series x %zu points, %.1f M "
           "samples/s (samples selected / wall time)\n",
           best * 1e3, (unsigned long long)rounds, cpu_best * 1e3, res.n, res.n ? npoints / res.n : 0,
           (double)nsamples / best / 1e6);
    if (!use_prom)
        return 0;

    /* Prometheus: OpenMetrics -> blocks -> a server */
    char dir[] = "/tmp/bench-promql-XXXXXX";
    if (mkdtemp(dir) == NULL)
        return 1;
    char om[512], data[512], log[512];
    snprintf(om, sizeof(om), "%s/data.om", dir);
    snprintf(data, sizeof(data), "%s/tsdb", dir);
    snprintf(log, sizeof(log), "%s/prometheus.log", dir);
    FILE *f = fopen(om, "w");
    fprintf(f, "# TYPE node_cpu_seconds counter\n");
    for (uint32_t i = 0; i < m.n; i++) {
        ps_buf_t b = PS_BUF_INIT;
        const ps_labels_t *ls = &m.v[i].labels; /* OpenMetrics: {a="b",c="d"}, no spaces; __name__ apart */
        ps_buf_putc(&b, '{');
        for (uint32_t k = 1; k < ls->n; k++)
            ps_buf_printf(&b, "%s%s=\"%s\"", k > 1 ? "," : "", ls->pairs[k].name, ls->pairs[k].value);
        ps_buf_putc(&b, '}');
        for (uint32_t k = 0; k < m.v[i].n; k++)
            fprintf(f, "node_cpu_seconds_total%.*s %.17g %lld.%03lld\n", (int)b.len, (const char *)b.data,
                    m.v[i].s[k].v, (long long)(m.v[i].s[k].t / 1000), (long long)(m.v[i].s[k].t % 1000));
        ps_buf_dispose(&b);
    }
    fprintf(f, "# EOF\n");
    fclose(f);
    double t0 = ps_bench_now();
    char *cb[] = {(char *)promtool, "tsdb", "create-blocks-from", "openmetrics", om, data, NULL};
    if (run_cmd(cb, log) != 0) {
        fprintf(stderr, "bench_promql: promtool create-blocks-from failed, see %s\n", log);
        return 1;
    }
    printf("prometheus: blocks made in %.1f s\n", ps_bench_now() - t0);
    unlink(om);
    char cfg[512], listen[64], path[600], url[160];
    snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", dir);
    f = fopen(cfg, "w");
    fprintf(f, "global: {scrape_interval: 15s}\n");
    fclose(f);
    int port = free_port();
    fflush(stdout);
    snprintf(listen, sizeof(listen), "--web.listen-address=127.0.0.1:%d", port);
    snprintf(path, sizeof(path), "--storage.tsdb.path=%s", data);
    char cfgflag[600];
    snprintf(cfgflag, sizeof(cfgflag), "--config.file=%s", cfg);
    pid_t pid = fork();
    if (pid == 0) {
        FILE *lf = freopen(log, "a", stdout);
        (void)lf;
        dup2(1, 2);
        execl(prom, prom, cfgflag, path, listen, "--storage.tsdb.retention.time=30d", (char *)NULL);
        _exit(127);
    }
    snprintf(url, sizeof(url), "http://127.0.0.1:%d/-/ready", port);
    int ready = 0;
    for (int i = 0; i < 600 && !ready; i++) {
        ready = ps_bench_http("GET", url, NULL, 0, NULL) == 200;
        if (!ready)
            usleep(100000);
    }
    if (!ready) {
        fprintf(stderr, "bench_promql: prometheus did not get ready, see %s\n", log);
        kill(pid, SIGTERM);
        return 1;
    }
    char enc[256], qurl[600];
    ps_bench_urlencode(query, enc, sizeof(enc));
    snprintf(qurl, sizeof(qurl), "http://127.0.0.1:%d/api/v1/query_range?query=%s&start=%lld.%03lld&end=%lld.%03lld&step=%llu",
             port, enc, (long long)(qstart / 1000), (long long)(qstart % 1000), (long long)(qend / 1000),
             (long long)(qend % 1000), (unsigned long long)step_s);
    double pbest = 1e9, pcpu = 1e9;
    ps_buf_t body = PS_BUF_INIT;
    for (uint64_t r = 0; r < rounds + 1; r++) { /* one more: the first warms the block reader */
        ps_buf_reset(&body);
        ps_bench_proc_t p0, p1;
        ps_bench_proc_read(pid, &p0);
        double q0 = ps_bench_now();
        long st = ps_bench_http("GET", qurl, NULL, 0, &body);
        double dt = ps_bench_now() - q0;
        ps_bench_proc_read(pid, &p1);
        if (st != 200) {
            fprintf(stderr, "bench_promql: prometheus answered %ld: %.300s\n", st, body.data ? (char *)body.data : "");
            kill(pid, SIGTERM);
            return 1;
        }
        double dc = p1.cpu_user + p1.cpu_sys - p0.cpu_user - p0.cpu_sys;
        if (r > 0 && dt < pbest)
            pbest = dt;
        if (r > 0 && dc < pcpu)
            pcpu = dc;
    }
    ps_buf_putc(&body, 0);
    printf("prometheus 2.42 query_range: %.1f ms (best of %llu, HTTP and JSON included), %.0f ms CPU (/proc, 10 ms "
           "ticks)\n",
           pbest * 1e3, (unsigned long long)rounds, pcpu * 1e3);
    /* the answers */
    double *pv;
    int64_t *pt;
    uint32_t pseries;
    size_t pn = parse_values((const char *)body.data, &pv, &pt, &pseries);
    size_t k = 0, differ = 0;
    double maxrel = 0;
    for (uint32_t i = 0; i < res.n; i++)
        for (uint32_t j = 0; j < res.series[i].n; j++, k++) {
            if (k >= pn || pt[k] != res.series[i].points[j].t) {
                differ++;
                continue;
            }
            double x = res.series[i].points[j].v, y = pv[k];
            double rel = x == y ? 0 : fabs(x - y) / fmax(fabs(x), fabs(y));
            if (rel > maxrel)
                maxrel = rel;
            if (rel > 1e-9)
                differ++;
        }
    printf("answers: profstore %u series / %zu points, prometheus %u series / %zu points; %zu points differ "
           "(> 1e-9 relative or missing), largest relative difference %.3g\n",
           res.n, npoints, pseries, pn, differ + (pn > k ? pn - k : 0), maxrel);
    printf("ratio: profstore %.2fx Prometheus' wall time for the same query\n", best / pbest);
    kill(pid, SIGTERM);
    waitpid(pid, NULL, 0);
    ps_bench_rmrf(dir);
    ps_buf_dispose(&body);
    free(pv);
    free(pt);
    for (uint32_t i = 0; i < m.n; i++)
        free(m.v[i].s);
    free(m.v);
    ps_arena_dispose(&a);
    ps_arena_dispose(&la);
    return 0;
}
