/*
 * remote_write.c - bench_remote_write: POST /api/v1/write throughput of profstore against a
 * Prometheus 2.42 started with --web.enable-remote-write-receiver, on the same bytes.
 *
 * One generator makes realistic remote-write 1.0 requests: --series node_exporter-like series
 * (node_cpu_seconds_total by cpu and mode, node_network_* counters by device, filesystem gauges;
 * 5-7 labels plus replica) scraped every 15 s for --rounds rounds, --per-request samples a
 * request (one sample per series, as a Prometheus shard sends them). The series are split into
 * shards by request position; a shard's requests are sent in order (as Prometheus' queue manager
 * does), --conns requests in flight. --values node (the default): the series mix and values of
 * node_labels() and node_value(), one scrape in 20 a few ms off the interval; --values cpu: the
 * generator this bench had first (64% CPU seconds, exact timestamps), for comparison. The same
 * request bytes go to profstore, then to Prometheus. Prints samples/s, server CPU per sample and
 * peak RSS for both, and profstore's bytes per sample on disk after compaction (XOR chunk bytes,
 * the float databases' pages, the whole data.mdb, and where the pages go), beside Prometheus'
 * TSDB for the same samples as promtool compacts them into blocks (chunks, index).
 *
 *   bench_remote_write [--series 10000] [--rounds 120] [--per-request 2000] [--conns 4]
 *                      [--prometheus /usr/bin/prometheus | --no-prometheus] [--profstore PATH] [--keep]
 *                      [--values node | cpu]
 *
 * Nothing is asserted: the targets are printed next to the figures.
 */
#include <curl/curl.h>
#include <dirent.h>
#include <errno.h>
#include <lmdb.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "core/err.h"
#include "core/labels.h"
#include "core/mem.h"
#include "proto/remote.h"
#include "storage/store.h"
#include "util.h"

typedef struct opts {
    char profstore[4096];
    const char *prometheus;
    uint32_t series, rounds, per_request, conns;
    int keep;
    bool cpu_heavy; /* --values cpu: the generator before issue 8's density work */
} opts_t;

typedef struct body {
    uint8_t *data;
    size_t len;
    uint32_t shard;
} body_t;

static body_t *bodies;
static size_t nbodies;
static uint64_t total_samples, total_bytes;

/* ---- the generator ---- */

#define PAIR(nm, val)                                                                                      \
    do {                                                                                                   \
        p[n].name = ps_arena_strndup(a, nm, strlen(nm));                                                   \
        p[n].value = ps_arena_strndup(a, val, strlen(val));                                                \
        p[n].nlen = (uint32_t)strlen(nm);                                                                  \
        p[n].vlen = (uint32_t)strlen(val);                                                                 \
        n++;                                                                                               \
    } while (0)

static const char *const cpu_modes[] = {"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"};
static const char *const net_counters[] = {"node_network_receive_bytes_total", "node_network_receive_packets_total",
                                           "node_network_transmit_bytes_total", "node_network_transmit_packets_total"};

/* --values cpu: 128 of a host's 200 series are CPU seconds (16 cpus x 8 modes), 48 network
 * counters (12 devices), 24 filesystem gauges. */
static uint32_t cpu_heavy_labels(ps_arena_t *a, ps_label_pair_t *p, uint32_t k)
{
    char v1[32], v2[32];
    uint32_t n = 0;
    if (k < 128) { /* 16 cpus x 8 modes */
        snprintf(v1, sizeof(v1), "%u", k / 8);
        PAIR("__name__", "node_cpu_seconds_total");
        PAIR("cpu", v1);
        PAIR("mode", cpu_modes[k % 8]);
    } else if (k < 176) { /* 12 devices x 4 */
        snprintf(v1, sizeof(v1), "eth%u", (k - 128) / 4);
        PAIR("__name__", net_counters[(k - 128) % 4]);
        PAIR("device", v1);
    } else { /* filesystems */
        snprintf(v1, sizeof(v1), "/dev/nvme0n1p%u", k - 176);
        snprintf(v2, sizeof(v2), "/srv/data%u", k - 176);
        PAIR("__name__", "node_filesystem_avail_bytes");
        PAIR("device", v1);
        PAIR("fstype", "ext4");
        PAIR("mountpoint", v2);
    }
    return n;
}

/* --values node (the default): a host's 200 series in the proportions of a node_exporter on a
 * 4-CPU machine: 32 CPU seconds (4 cpus x 8 modes), 48 network counters (12 devices, 3 of them
 * busy), 40 constant gauges (mtu, up, speed, filesystem size), 40 slowly changing gauges
 * (memory, free space: pages), 30 integer counters at steady rates (disk, vmstat, netstat),
 * 10 collector durations (random floats: nothing to compress). */
static const char *const mem_names[] = {
    "node_memory_Active_anon_bytes", "node_memory_Active_bytes", "node_memory_Active_file_bytes",
    "node_memory_AnonPages_bytes", "node_memory_Buffers_bytes", "node_memory_Cached_bytes",
    "node_memory_Committed_AS_bytes", "node_memory_Dirty_bytes", "node_memory_Inactive_anon_bytes",
    "node_memory_Inactive_bytes", "node_memory_Inactive_file_bytes", "node_memory_KReclaimable_bytes",
    "node_memory_KernelStack_bytes", "node_memory_Mapped_bytes", "node_memory_MemAvailable_bytes",
    "node_memory_MemFree_bytes", "node_memory_PageTables_bytes", "node_memory_SReclaimable_bytes",
    "node_memory_SUnreclaim_bytes", "node_memory_Shmem_bytes", "node_memory_Slab_bytes",
    "node_memory_SwapCached_bytes", "node_memory_SwapFree_bytes", "node_memory_VmallocUsed_bytes",
    "node_memory_Writeback_bytes", "node_memory_Percpu_bytes", "node_memory_Unevictable_bytes",
    "node_memory_Mlocked_bytes", "node_memory_AnonHugePages_bytes", "node_memory_NFS_Unstable_bytes",
    "node_memory_Bounce_bytes", "node_memory_WritebackTmp_bytes"};
static const char *const counter_names[] = {
    "node_disk_reads_completed_total", "node_disk_writes_completed_total", "node_disk_read_bytes_total",
    "node_disk_written_bytes_total", "node_disk_io_time_weighted_seconds_total", "node_vmstat_pgfault",
    "node_vmstat_pgmajfault", "node_vmstat_pgpgin", "node_vmstat_pgpgout", "node_vmstat_pswpin",
    "node_vmstat_pswpout", "node_vmstat_oom_kill", "node_netstat_Tcp_ActiveOpens",
    "node_netstat_Tcp_PassiveOpens", "node_netstat_Tcp_RetransSegs", "node_netstat_Tcp_InSegs",
    "node_netstat_Tcp_OutSegs", "node_netstat_Udp_InDatagrams", "node_netstat_Udp_OutDatagrams",
    "node_netstat_Icmp_InMsgs", "node_netstat_Udp_NoPorts", "node_netstat_TcpExt_ListenDrops",
    "node_context_switches_total", "node_intr_total", "node_forks_total"};
static const char *const collectors[] = {"cpu", "diskstats", "filesystem", "loadavg", "meminfo",
                                         "netdev", "netstat", "stat", "time", "vmstat"};

static uint32_t node_labels(ps_arena_t *a, ps_label_pair_t *p, uint32_t k)
{
    char v1[32], v2[32];
    uint32_t n = 0;
    if (k < 32) {
        snprintf(v1, sizeof(v1), "%u", k / 8);
        PAIR("__name__", "node_cpu_seconds_total");
        PAIR("cpu", v1);
        PAIR("mode", cpu_modes[k % 8]);
    } else if (k < 80) {
        snprintf(v1, sizeof(v1), "eth%u", (k - 32) / 4);
        PAIR("__name__", net_counters[(k - 32) % 4]);
        PAIR("device", v1);
    } else if (k < 116) { /* mtu, up, speed of 12 devices */
        static const char *const g[] = {"node_network_mtu_bytes", "node_network_up", "node_network_speed_bytes"};
        snprintf(v1, sizeof(v1), "eth%u", (k - 80) / 3);
        PAIR("__name__", g[(k - 80) % 3]);
        PAIR("device", v1);
    } else if (k < 120 || (k >= 152 && k < 160)) { /* filesystems: size (constant), avail, free */
        uint32_t j = k < 120 ? k - 116 : (k - 152) % 4;
        snprintf(v1, sizeof(v1), "/dev/nvme0n1p%u", j);
        snprintf(v2, sizeof(v2), "/srv/data%u", j);
        PAIR("__name__", k < 120 ? "node_filesystem_size_bytes" : k < 156 ? "node_filesystem_avail_bytes"
                                                                            : "node_filesystem_free_bytes");
        PAIR("device", v1);
        PAIR("fstype", "ext4");
        PAIR("mountpoint", v2);
    } else if (k < 152) {
        PAIR("__name__", mem_names[k - 120]);
    } else if (k < 190) {
        uint32_t j = k - 160;
        if (j < 10) { /* 5 disk counters x 2 disks */
            PAIR("__name__", counter_names[j % 5]);
            PAIR("device", j < 5 ? "nvme0n1" : "nvme1n1");
        } else { /* the 20 others */
            PAIR("__name__", counter_names[j - 5]);
        }
    } else {
        PAIR("__name__", "node_scrape_collector_duration_seconds");
        PAIR("collector", collectors[k - 190]);
    }
    return n;
}

static void set_labels(ps_arena_t *a, ps_remote_series_t *s, uint32_t i, bool cpu_heavy)
{
    ps_label_pair_t *p = ps_arena_alloc(a, 8 * sizeof(*p));
    char inst[32];
    uint32_t host = i / 200, k = i % 200;
    uint32_t n = cpu_heavy ? cpu_heavy_labels(a, p, k) : node_labels(a, p, k);
    snprintf(inst, sizeof(inst), "10.0.%u.%u:9100", host / 256, host % 256);
    PAIR("instance", inst);
    PAIR("job", "node");
    PAIR("replica", "bench");
    ps_labels_t ls = {n, p, 0};
    ps_labels_normalize(&ls, NULL);
    s->labels = ls;
}
#undef PAIR

/* The CPU seconds of a mostly idle host, in 10 ms ticks (USER_HZ): idle grows by about the
 * interval, user and system by a little, the rarely used modes mostly not at all. */
static double cpu_seconds(uint32_t mode, uint32_t r, double prev)
{
    if (r == 0)
        return (double)(ps_bench_rnd() % 10000000) / 100;
    double ticks;
    if (mode == 0)
        ticks = 1400 + (double)(ps_bench_rnd() % 100);
    else if (mode >= 6)
        ticks = (double)(ps_bench_rnd() % 60);
    else
        ticks = ps_bench_rnd() % 5 == 0 ? (double)(ps_bench_rnd() % 3) : 0;
    return prev + ticks / 100;
}

/* --values cpu: the value of series i at round r, from its previous value. CPU seconds as
 * cpu_seconds(); byte counters by random amounts, packet counters by small ones; free bytes
 * drift by pages now and then. */
static double cpu_heavy_value(uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    if (k < 128)
        return cpu_seconds(k % 8, r, prev);
    if (k < 176) { /* network: bytes, packets */
        bool bytes = (k - 128) % 2 == 0;
        if (r == 0)
            return (double)(ps_bench_rnd() % 1000000000);
        return prev + (double)(bytes ? ps_bench_rnd() % 200000 : ps_bench_rnd() % 150);
    }
    if (r == 0) /* free bytes, multiples of 4096 */
        return (double)((ps_bench_rnd() % 100000000) * 4096);
    return ps_bench_rnd() % 4 == 0 ? prev + (double)((int64_t)(ps_bench_rnd() % 64) - 32) * 4096 : prev;
}

/* a series' own fixed parameter (its rate): the same for every run */
static uint64_t series_param(uint32_t i)
{
    uint64_t x = (uint64_t)i * 0x9e3779b97f4a7c15ull + 0x632be59bd9b4e019ull;
    x ^= x >> 31;
    x *= 0xbf58476d1ce4e5b9ull;
    return x ^ (x >> 29);
}

/* an integer counter at a steady rate per scrape, +-12% noise */
static double steady(double prev, uint64_t rate)
{
    if (rate == 0)
        return prev;
    uint64_t spread = rate / 4 + 1;
    return prev + (double)(rate - rate / 8 + ps_bench_rnd() % spread);
}

/* --values node: as node_labels() lays the series out. */
static double node_value(uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    uint64_t h = series_param(i);
    if (k < 32)
        return cpu_seconds(k % 8, r, prev);
    if (k < 80) { /* devices eth0-eth2 busy; the others (bridges, idle links) unchanged */
        bool bytes = (k - 32) % 2 == 0, busy = (k - 32) / 4 < 3;
        if (r == 0)
            return (double)(h % 1000000000);
        uint64_t rate = bytes ? 15 * (1000 + h % 100000) : 15 * (1 + h % 80);
        return busy ? steady(prev, rate) : prev;
    }
    if (k < 120) { /* mtu, up, speed; filesystem size */
        static const double g[] = {1500, 1, 125000000};
        return k < 116 ? g[(k - 80) % 3] : (double)((1000000 + h % 1000000) * 4096);
    }
    if (k < 160) { /* memory, free space: whole pages, 8 of them change at every scrape */
        if (r == 0)
            return (double)((h % 4000000) * 4096);
        bool every = (k - 120) < 8;
        if (!every && ps_bench_rnd() % 4 != 0)
            return prev;
        double d = (double)((int64_t)(ps_bench_rnd() % 64) - 32) * 4096;
        return prev + d >= 0 ? prev + d : prev;
    }
    if (k < 190) { /* a third of the counters idle, the others at their own rate */
        if (r == 0)
            return (double)(h % 100000000);
        uint64_t kind = h % 3;
        return steady(prev, kind == 0 ? 0 : kind == 1 ? 1 + (h >> 8) % 20 : 100 + (h >> 8) % 10000);
    }
    return 0.0005 + ps_bench_rnd_unit() * 0.02; /* seconds, to the ns as node_exporter measures */
}

/* ms of jitter of host h's scrape in round r: Prometheus aligns a timestamp to the interval when
 * it is within 2 ms; one scrape in 20 is further off than that (a busy target or host) */
static int64_t jitter(uint32_t host, uint32_t r)
{
    uint64_t x = series_param(host * 7919u + r * 104729u + 1);
    if (x % 20 != 0)
        return 0;
    int64_t ms = 3 + (int64_t)((x >> 8) % 40);
    return (x >> 16) % 2 ? ms : -ms;
}

/* name{l="v",...} of ls, for OpenMetrics text (label values here need no escaping) */
static char *om_series(const ps_labels_t *ls)
{
    ps_buf_t b = PS_BUF_INIT;
    for (uint32_t j = 0; j < ls->n; j++)
        if (ls->pairs[j].nlen == 8 && memcmp(ls->pairs[j].name, "__name__", 8) == 0)
            ps_buf_append(&b, ls->pairs[j].value, ls->pairs[j].vlen);
    ps_buf_putc(&b, '{');
    bool first = true;
    for (uint32_t j = 0; j < ls->n; j++) {
        if (ls->pairs[j].nlen == 8 && memcmp(ls->pairs[j].name, "__name__", 8) == 0)
            continue;
        if (!first)
            ps_buf_putc(&b, ',');
        first = false;
        ps_buf_append(&b, ls->pairs[j].name, ls->pairs[j].nlen);
        ps_buf_append(&b, "=\"", 2);
        ps_buf_append(&b, ls->pairs[j].value, ls->pairs[j].vlen);
        ps_buf_putc(&b, '"');
    }
    ps_buf_append(&b, "}", 2); /* with its NUL */
    return (char *)b.data;
}

/* om: when not NULL, every sample also goes there as OpenMetrics text (for promtool) */
static int generate(const opts_t *o, int64_t t0, FILE *om)
{
    ps_arena_t a = PS_ARENA_INIT;
    ps_remote_series_t *all = ps_arena_calloc(&a, o->series, sizeof(*all));
    double *val = ps_xcalloc(o->series, sizeof(double));
    char **names = ps_xcalloc(o->series, sizeof(char *));
    for (uint32_t i = 0; i < o->series; i++) {
        set_labels(&a, &all[i], i, o->cpu_heavy);
        names[i] = om ? om_series(&all[i].labels) : NULL;
    }
    uint32_t per_round = (o->series + o->per_request - 1) / o->per_request;
    nbodies = (size_t)per_round * o->rounds;
    bodies = ps_xcalloc(nbodies, sizeof(*bodies));
    ps_remote_sample_t *smp = ps_xcalloc(o->series, sizeof(*smp));
    size_t b = 0;
    for (uint32_t r = 0; r < o->rounds; r++) {
        for (uint32_t i = 0; i < o->series; i++) {
            val[i] = o->cpu_heavy ? cpu_heavy_value(i, r, val[i]) : node_value(i, r, val[i]);
            /* each target scraped at its own offset in the interval; Prometheus (since 2.35) aligns a
             * scrape's timestamp to the interval when it is within 2 ms of it: --values cpu has no
             * jitter, --values node one scrape in 20 off by 3-42 ms */
            int64_t t = t0 + (int64_t)r * 15000 + (int64_t)(i / 200 % 15000);
            if (!o->cpu_heavy && r > 0)
                t += jitter(i / 200, r);
            smp[i] = (ps_remote_sample_t){t, val[i]};
            if (om)
                fprintf(om, "%s %.17g %lld.%03lld\n", names[i], val[i], (long long)(t / 1000), (long long)(t % 1000));
            all[i].samples = &smp[i];
            all[i].nsamples = 1;
            all[i].meta = -1;
        }
        for (uint32_t q = 0; q < per_round; q++) {
            uint32_t from = q * o->per_request, to = from + o->per_request;
            if (to > o->series)
                to = o->series;
            ps_remote_write_t w = {0};
            w.version = 1;
            w.series = all + from;
            w.nseries = to - from;
            w.nsamples = to - from;
            ps_buf_t out = PS_BUF_INIT;
            ps_err_t err;
            if (ps_remote_write_encode(&w, 1, &out, &err) != 0) {
                fprintf(stderr, "bench_remote_write: encode: %s\n", err.msg);
                return -1;
            }
            bodies[b].data = out.data;
            bodies[b].len = out.len;
            bodies[b].shard = q;
            b++;
            total_samples += to - from;
            total_bytes += out.len;
        }
    }
    if (om)
        fputs("# EOF\n", om);
    for (uint32_t i = 0; i < o->series; i++)
        free(names[i]);
    free(names);
    free(smp);
    free(val);
    ps_arena_dispose(&a);
    return 0;
}

/* ---- one receiver ---- */

typedef struct result {
    const char *name;
    int ok;
    double wall, cpu, hwm_mib, p50, p99;
    uint64_t ok_requests, failed;
    char first_error[512];
} result_t;

static void send_all(const opts_t *o, ps_bench_server_t *srv, const char *path, result_t *r)
{
    static const char *const hdrs[] = {"Content-Type: application/x-protobuf", "Content-Encoding: snappy",
                                       "X-Prometheus-Remote-Write-Version: 0.1.0", "User-Agent: bench_remote_write",
                                       NULL};
    ps_bench_pusher_t *p = ps_bench_pusher_new(o->conns, 0);
    ps_bench_pusher_headers(p, hdrs);
    char url[256];
    snprintf(url, sizeof(url), "%s%s", srv->url, path);
    ps_bench_proc_t pr0, pr1;
    ps_bench_proc_read(srv->pid, &pr0);
    double w0 = ps_bench_now();
    for (size_t i = 0; i < nbodies; i++)
        ps_bench_pusher_post(p, bodies[i].shard, url, bodies[i].data, bodies[i].len);
    ps_bench_pusher_drain(p);
    r->wall = ps_bench_now() - w0;
    ps_bench_proc_read(srv->pid, &pr1);
    r->cpu = (pr1.cpu_user + pr1.cpu_sys) - (pr0.cpu_user + pr0.cpu_sys);
    r->hwm_mib = (double)pr1.vm_hwm_kb / 1024;
    const ps_bench_push_stats_t *st = ps_bench_pusher_stats(p);
    r->ok_requests = st->ok;
    r->failed = st->failed;
    snprintf(r->first_error, sizeof(r->first_error), "%s", st->first_error);
    double *lat = ps_xmalloc((st->nlat + 1) * sizeof(double));
    memcpy(lat, st->lat, st->nlat * sizeof(double));
    r->p50 = ps_bench_quantile(lat, st->nlat, 0.5);
    r->p99 = ps_bench_quantile(lat, st->nlat, 0.99);
    free(lat);
    ps_bench_pusher_free(p);
    r->ok = 1;
}

static void print_result(const result_t *r)
{
    printf("\n== %s ==\n", r->name);
    if (!r->ok) {
        printf("  (did not run; see above)\n");
        return;
    }
    printf("  requests               %llu ok, %llu failed\n", (unsigned long long)r->ok_requests,
           (unsigned long long)r->failed);
    if (r->failed)
        printf("  first error            %s\n", r->first_error);
    printf("  wall time              %.3f s\n", r->wall);
    printf("  samples/s              %.0f\n", (double)total_samples / r->wall);
    printf("  server CPU             %.3f s = %.2f us/sample (%.0f%% of one CPU)\n", r->cpu,
           r->cpu / (double)total_samples * 1e6, r->cpu / r->wall * 100);
    printf("  latency                p50 %.2f ms, p99 %.2f ms\n", r->p50 * 1e3, r->p99 * 1e3);
    printf("  server peak RSS        %.1f MiB\n", r->hwm_mib);
}

typedef struct bytes_ctx {
    ps_reader_t *r;
    uint64_t chunk_bytes, chunks, samples;
} bytes_ctx_t;

static int on_chunk(void *ctx, int64_t min_t, int64_t max_t, const uint8_t *chunk, size_t n)
{
    bytes_ctx_t *c = ctx;
    (void)min_t, (void)max_t;
    c->chunk_bytes += n;
    c->chunks++;
    c->samples += (uint32_t)chunk[0] << 8 | chunk[1];
    return 0;
}

static int on_series(void *ctx, uint64_t sid, const ps_labels_t *ls)
{
    bytes_ctx_t *c = ctx;
    (void)ls;
    return ps_reader_xor_chunks(c->r, sid, INT64_MIN, INT64_MAX, on_chunk, c, NULL);
}

static uint64_t db_pages(MDB_txn *txn, const char *name, uint64_t *entries)
{
    MDB_dbi dbi;
    MDB_stat ms;
    if (mdb_dbi_open(txn, name, 0, &dbi) != 0 || mdb_stat(txn, dbi, &ms) != 0)
        return 0;
    if (entries)
        *entries = ms.ms_entries;
    return ms.ms_branch_pages + ms.ms_leaf_pages + ms.ms_overflow_pages;
}

/* Where data.mdb's pages go: the float chunks, the open heads, the label index, the free list. */
static void lmdb_breakdown(const char *dir, double n, uint64_t chunk_bytes)
{
    MDB_env *env;
    MDB_txn *txn;
    MDB_envinfo ei;
    MDB_stat es;
    if (mdb_env_create(&env) != 0)
        return;
    mdb_env_set_maxdbs(env, 64);
    if (mdb_env_open(env, dir, MDB_RDONLY, 0644) != 0 || mdb_txn_begin(env, NULL, MDB_RDONLY, &txn) != 0) {
        mdb_env_close(env);
        return;
    }
    mdb_env_info(env, &ei);
    mdb_env_stat(env, &es);
    double ps = es.ms_psize;
    uint64_t nchunks = 0, nheads = 0, fc = db_pages(txn, "fchunks", &nchunks), fh = db_pages(txn, "fhead", &nheads);
    uint64_t idx = db_pages(txn, "series", NULL) + db_pages(txn, "series_hash", NULL) + db_pages(txn, "postings", NULL);
    uint64_t freepg = 0, freedb = 0;
    MDB_stat fs;
    if (mdb_stat(txn, 0, &fs) == 0) { /* FREE_DBI: txnid -> the pages it freed, a count first */
        freedb = fs.ms_branch_pages + fs.ms_leaf_pages + fs.ms_overflow_pages;
        MDB_cursor *cur;
        MDB_val k, v;
        if (mdb_cursor_open(txn, 0, &cur) == 0) {
            while (mdb_cursor_get(cur, &k, &v, MDB_NEXT) == 0)
                freepg += *(size_t *)v.mv_data;
            mdb_cursor_close(cur);
        }
    }
    uint64_t last = ei.me_last_pgno + 1;
    printf("  where the pages go     fchunks %llu pages (%.3f B/sample; %llu records, chunk bytes fill %.0f%%), "
           "fhead %llu (%.3f), label index %llu (%.3f: series, series_hash, postings), free list %llu + %llu free "
           "(%.3f), %llu pages in the file\n",
           (unsigned long long)fc, fc * ps / n, (unsigned long long)nchunks,
           fc ? 100.0 * (double)chunk_bytes / (fc * ps) : 0.0, (unsigned long long)fh, fh * ps / n,
           (unsigned long long)idx, idx * ps / n, (unsigned long long)freedb, (unsigned long long)freepg,
           (freedb + freepg) * ps / n, (unsigned long long)last);
    mdb_txn_abort(txn);
    mdb_env_close(env);
}

static uint64_t file_size(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 ? (uint64_t)sb.st_size : 0;
}

/* Prometheus' TSDB for the same samples after a compaction: promtool tsdb create-blocks-from
 * openmetrics writes them as blocks (what the head becomes once it is compacted); the bytes of
 * the blocks' chunks/ and index. (The receiver above keeps everything in its WAL and head: a head
 * is compacted only once it spans 3 h.) */
static void prometheus_blocks(const char *promtool, const char *om, const char *out, double n, uint64_t our_chunks)
{
    char cmd[13000];
    snprintf(cmd, sizeof(cmd), "%s tsdb create-blocks-from openmetrics %s %s >/dev/null 2>&1", promtool, om, out);
    double w0 = ps_bench_now();
    int rc = system(cmd);
    double w = ps_bench_now() - w0;
    if (rc != 0) {
        printf("  (promtool failed: %d)\n", rc);
        return;
    }
    uint64_t chunks = 0, index = 0, blocks = 0;
    DIR *d = opendir(out);
    struct dirent *e;
    while (d != NULL && (e = readdir(d)) != NULL) {
        if (e->d_name[0] == '.')
            continue;
        char p[12000];
        snprintf(p, sizeof(p), "%s/%s/index", out, e->d_name);
        index += file_size(p);
        blocks++;
        snprintf(p, sizeof(p), "%s/%s/chunks", out, e->d_name);
        DIR *cd = opendir(p);
        struct dirent *ce;
        while (cd != NULL && (ce = readdir(cd)) != NULL) {
            if (ce->d_name[0] == '.')
                continue;
            char q[12300];
            snprintf(q, sizeof(q), "%s/%s", p, ce->d_name);
            chunks += file_size(q);
        }
        if (cd)
            closedir(cd);
    }
    if (d)
        closedir(d);
    printf("\n== Prometheus 2.42 TSDB, the same samples compacted (promtool tsdb create-blocks-from openmetrics, "
           "%.1f s) ==\n", w);
    printf("  %llu block(s): chunks %.1f MB = %.3f bytes/sample (ours %.3f), index %.1f MB = %.3f, "
           "chunks + index %.3f bytes/sample\n",
           (unsigned long long)blocks, (double)chunks / 1e6, (double)chunks / n, (double)our_chunks / n,
           (double)index / 1e6, (double)index / n, (double)(chunks + index) / n);
}

/* After the server stopped: the XOR chunk bytes, from the store itself. */
static uint64_t disk_chunk_bytes;

static void disk_figures(const char *dir)
{
    ps_store_opts_t so;
    ps_store_opts_default(&so);
    so.dir = dir;
    so.retention_ns = 0;
    ps_store_t *s;
    ps_err_t err;
    if (ps_store_open(&so, &s, &err) != 0) {
        printf("  (cannot open %s: %s)\n", dir, err.msg);
        return;
    }
    ps_store_stats_t st;
    ps_reader_t *r;
    bytes_ctx_t c = {0};
    if (ps_store_stats(s, &st, &err) == 0 && ps_reader_begin(s, &r, &err) == 0) {
        c.r = r;
        ps_reader_series_foreach(r, on_series, &c, &err);
        ps_reader_end(r);
        double n = (double)c.samples;
        printf("  on disk after compaction: %llu samples in %llu XOR chunks (%llu series, %llu open heads)\n",
               (unsigned long long)c.samples, (unsigned long long)c.chunks, (unsigned long long)st.series,
               (unsigned long long)st.float_heads);
        printf("  XOR chunk bytes        %.1f MB = %.3f bytes/sample   (target <= 1.5; Gorilla 1.37, Prometheus docs 1-2)\n",
               (double)c.chunk_bytes / 1e6, (double)c.chunk_bytes / n);
        printf("  LMDB pages in use      %.1f MB = %.3f bytes/sample (chunks, series, postings, free pages)\n",
               (double)st.used_bytes / 1e6, (double)st.used_bytes / n);
        printf("  data.mdb on disk       %.1f MB = %.3f bytes/sample\n", (double)st.file_bytes / 1e6,
               (double)st.file_bytes / n);
    }
    ps_store_close(s);
    disk_chunk_bytes = c.chunk_bytes;
    lmdb_breakdown(dir, (double)c.samples, c.chunk_bytes);
}

static void usage(void)
{
    fputs("usage: bench_remote_write [--series N] [--rounds N] [--per-request N] [--conns N]\n"
          "                          [--prometheus PATH | --no-prometheus] [--profstore PATH] [--keep]\n"
          "                          [--values node | cpu]\n",
          stderr);
}

int main(int argc, char **argv)
{
    opts_t o = {0};
    ps_bench_default_profstore(o.profstore, sizeof(o.profstore));
    o.prometheus = "/usr/bin/prometheus";
    o.series = 10000;
    o.rounds = 120; /* one full chunk (120 samples) per series */
    o.per_request = 2000;
    o.conns = 4;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--series") && v)
            o.series = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--rounds") && v)
            o.rounds = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--per-request") && v)
            o.per_request = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--conns") && v)
            o.conns = (uint32_t)ps_bench_num_arg("bench_remote_write", a, argv[++i]);
        else if (!strcmp(a, "--prometheus") && v)
            o.prometheus = argv[++i];
        else if (!strcmp(a, "--no-prometheus"))
            o.prometheus = NULL;
        else if (!strcmp(a, "--profstore") && v)
            snprintf(o.profstore, sizeof(o.profstore), "%s", argv[++i]);
        else if (!strcmp(a, "--keep"))
            o.keep = 1;
        else if (!strcmp(a, "--values") && v && (!strcmp(v, "node") || !strcmp(v, "cpu")))
            o.cpu_heavy = !strcmp(argv[++i], "cpu");
        else {
            usage();
            return 2;
        }
    }
    if (o.series == 0 || o.rounds == 0 || o.per_request == 0 || o.conns == 0) {
        usage();
        return 2;
    }
    ps_bench_malloc_tune();
    curl_global_init(CURL_GLOBAL_DEFAULT);
    /* the newest round 1 minute ago; Prometheus' head takes anything for an empty TSDB */
    int64_t t0 = ((int64_t)time(NULL) - 60 - (int64_t)o.rounds * 15) * 1000;
    char base[] = "/tmp/profstore-bench-rw-XXXXXX";
    if (mkdtemp(base) == NULL) {
        perror("mkdtemp");
        return 1;
    }
    const char *promtool = "/usr/bin/promtool";
    char om_path[4200];
    snprintf(om_path, sizeof(om_path), "%s/samples.om", base);
    FILE *om = o.prometheus != NULL && access(promtool, X_OK) == 0 ? fopen(om_path, "w") : NULL;
    if (generate(&o, t0, om) != 0)
        return 1;
    if (om)
        fclose(om);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    printf("bench_remote_write: --values %s: %u series x %u rounds (15 s apart) = %llu samples in %zu requests of <= %u samples "
           "(%.1f MB of snappy bodies, %.1f bytes/sample on the wire), %u in flight; %ld CPUs shared by the "
           "servers and this generator; data in %s\n",
           o.cpu_heavy ? "cpu" : "node", o.series, o.rounds, (unsigned long long)total_samples, nbodies, o.per_request, (double)total_bytes / 1e6,
           (double)total_bytes / (double)total_samples, o.conns, ncpu, base);
    fflush(stdout);

    result_t rp = {"profstore", 0}, rq = {"Prometheus 2.42 --web.enable-remote-write-receiver", 0};
    char dir[4200], log[4200];
    snprintf(dir, sizeof(dir), "%s/profstore", base);
    snprintf(log, sizeof(log), "%s/profstore.log", base);
    static const char *const pargs[] = {"--retention", "0", NULL};
    ps_bench_server_t srv;
    if (ps_bench_server_start(&srv, o.profstore, dir, log, pargs) == 0) {
        send_all(&o, &srv, "/api/v1/write", &rp);
        char u[128];
        snprintf(u, sizeof(u), "%s/api/v1/admin/compact", srv.url);
        ps_bench_proc_t c0, c1;
        ps_bench_proc_read(srv.pid, &c0);
        double w0 = ps_bench_now();
        long code = ps_bench_http("POST", u, "", 0, NULL);
        double cw = ps_bench_now() - w0;
        ps_bench_proc_read(srv.pid, &c1);
        print_result(&rp);
        printf("  POST /admin/compact    HTTP %ld, %.3f s wall, %.3f s server CPU\n", code, cw,
               (c1.cpu_user + c1.cpu_sys) - (c0.cpu_user + c0.cpu_sys));
        ps_bench_server_stop(&srv);
        disk_figures(dir);
    } else {
        print_result(&rp);
    }
    fflush(stdout);

    if (o.prometheus != NULL && access(o.prometheus, X_OK) == 0) {
        char cfg[4200], pdir[4200], plog[4200], cfgarg[4300], darg[4300];
        snprintf(cfg, sizeof(cfg), "%s/prometheus.yml", base);
        snprintf(pdir, sizeof(pdir), "%s/prometheus", base);
        snprintf(plog, sizeof(plog), "%s/prometheus.log", base);
        FILE *f = fopen(cfg, "w");
        if (f != NULL) {
            fputs("global:\n  scrape_interval: 15s\nscrape_configs: []\n", f);
            fclose(f);
        }
        snprintf(cfgarg, sizeof(cfgarg), "--config.file=%s", cfg);
        snprintf(darg, sizeof(darg), "--storage.tsdb.path=%s", pdir);
        const char *args[] = {o.prometheus, cfgarg, darg, "--web.listen-address=127.0.0.1:{port}",
                              "--web.enable-remote-write-receiver", NULL};
        ps_bench_server_t prom;
        if (ps_bench_exec_start(&prom, args, plog, "/-/ready") == 0) {
            send_all(&o, &prom, "/api/v1/write", &rq);
            print_result(&rq);
            ps_bench_server_stop(&prom);
        } else {
            print_result(&rq);
        }
        if (om) {
            char blocks[4200];
            snprintf(blocks, sizeof(blocks), "%s/promtool-blocks", base);
            prometheus_blocks(promtool, om_path, blocks, (double)total_samples, disk_chunk_bytes);
            unlink(om_path);
        }
    } else {
        printf("\n(Prometheus not run: %s)\n", o.prometheus ? "not executable" : "--no-prometheus");
    }
    if (rp.ok && rq.ok) {
        printf("\n== profstore / Prometheus ==\n");
        printf("  samples/s              %.0f vs %.0f: %.2fx   (target >= 1x: %s)\n", total_samples / rp.wall,
               total_samples / rq.wall, rq.wall / rp.wall, rq.wall / rp.wall >= 1 ? "met" : "NOT met");
        printf("  server CPU per sample  %.2f us vs %.2f us: %.2fx\n", rp.cpu / total_samples * 1e6,
               rq.cpu / total_samples * 1e6, rp.cpu / rq.cpu);
    }
    if (!o.keep)
        ps_bench_rmrf(base);
    else
        printf("\n  data kept in %s\n", base);
    for (size_t i = 0; i < nbodies; i++)
        free(bodies[i].data);
    free(bodies);
    curl_global_cleanup();
    return 0;
}
