/*
 * rwgen.c - the remote-write generator (rwgen.h): --values node and --values cpu.
 */
#include "rwgen.h"

#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/labels.h"
#include "util.h"

/* the seed and sequence of ps_bench_rnd() (util.h), but one state per generator */
static uint64_t rnd(ps_bench_rwgen_t *g) { return ps_bench_rnd_next(&g->rng); }

/* uniform in [0, 1), as ps_bench_rnd_unit() */
static double rnd_unit(ps_bench_rwgen_t *g) { return ps_bench_rnd_to_unit(rnd(g)); }

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
static uint32_t cpu_labels(ps_arena_t *a, ps_label_pair_t *p, uint32_t k)
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
 * (memory, free space: pages), 30 counters at steady rates (disk, vmstat, netstat),
 * 10 collector durations (random floats: nothing to compress).
 *
 * Checked against what node_exporter sends (procfs): memory gauges are /proc/meminfo kB * 1024
 * and filesystem bytes blocks * 4096, here whole 4 KiB pages; network, vmstat and netstat
 * counters are integers. Two things were less real and were changed (so the bytes differ from
 * those of earlier runs): CPU seconds are now ticks / 100 computed once from integer ticks (they
 * were a float sum of each interval's ticks / 100, whose rounding errors node_exporter never
 * has), and the disk counters are what /proc/diskstats gives: bytes are sectors * 512 (they were
 * any integer) and
 * node_disk_io_time_weighted_seconds_total is milliseconds * 0.001 (it was an integer). */
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

static void set_labels(ps_arena_t *a, ps_remote_series_t *s, uint32_t i, ps_bench_rw_values_t values)
{
    ps_label_pair_t *p = ps_arena_alloc(a, 8 * sizeof(*p));
    char inst[32];
    uint32_t host = i / 200, k = i % 200;
    uint32_t n = values == PS_BENCH_RW_CPU ? cpu_labels(a, p, k) : node_labels(a, p, k);
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
static double cpu_seconds(ps_bench_rwgen_t *g, uint32_t mode, uint32_t r, double prev)
{
    if (r == 0)
        return (double)(rnd(g) % 10000000) / 100;
    double ticks;
    if (mode == 0)
        ticks = 1400 + (double)(rnd(g) % 100);
    else if (mode >= 6)
        ticks = (double)(rnd(g) % 60);
    else
        ticks = rnd(g) % 5 == 0 ? (double)(rnd(g) % 3) : 0;
    return prev + ticks / 100;
}

/* --values cpu: the value of series i at round r, from its previous value. CPU seconds as
 * cpu_seconds(); byte counters by random amounts, packet counters by small ones; free bytes
 * drift by pages now and then. */
static double cpu_value(ps_bench_rwgen_t *g, uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    if (k < 128)
        return cpu_seconds(g, k % 8, r, prev);
    if (k < 176) { /* network: bytes, packets */
        bool bytes = (k - 128) % 2 == 0;
        if (r == 0)
            return (double)(rnd(g) % 1000000000);
        return prev + (double)(bytes ? rnd(g) % 200000 : rnd(g) % 150);
    }
    if (r == 0) /* free bytes, multiples of 4096 */
        return (double)((rnd(g) % 100000000) * 4096);
    return rnd(g) % 4 == 0 ? prev + (double)((int64_t)(rnd(g) % 64) - 32) * 4096 : prev;
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
static double steady(ps_bench_rwgen_t *g, double prev, uint64_t rate)
{
    if (rate == 0)
        return prev;
    uint64_t spread = rate / 4 + 1;
    return prev + (double)(rate - rate / 8 + rnd(g) % spread);
}

/* node_exporter's CPU seconds: procfs reads the ticks of /proc/stat and divides them by USER_HZ
 * (100) once, so a value is the double nearest to ticks / 100. (cpu_seconds() adds each
 * interval's ticks / 100 to the float before, whose rounding errors pile up in the low mantissa
 * bits: values node_exporter never sends, and XOR compresses them worse.) */
static double node_cpu_seconds(ps_bench_rwgen_t *g, uint32_t mode, uint32_t r, double prev)
{
    if (r == 0)
        return (double)(rnd(g) % 10000000) / 100;
    int64_t ticks = llround(prev * 100); /* exact: prev is ticks / 100 of fewer than 2^46 ticks */
    if (mode == 0)
        ticks += 1400 + (int64_t)(rnd(g) % 100);
    else if (mode >= 6)
        ticks += (int64_t)(rnd(g) % 60);
    else
        ticks += rnd(g) % 5 == 0 ? (int64_t)(rnd(g) % 3) : 0;
    return (double)ticks / 100;
}

/* a counter of series i (hash h) at round r: a third of them idle, the others at their own rate */
static double node_counter(ps_bench_rwgen_t *g, uint32_t r, double prev, uint64_t h)
{
    if (r == 0)
        return (double)(h % 100000000);
    uint64_t kind = h % 3;
    return steady(g, prev, kind == 0 ? 0 : kind == 1 ? 1 + (h >> 8) % 20 : 100 + (h >> 8) % 10000);
}

/* The disk counters (counter_names[0..4], j = 0..9: 5 counters x 2 disks) in the units
 * node_exporter derives from /proc/diskstats: operations as they are, bytes = sectors * 512,
 * weighted I/O time = milliseconds * 0.001 (the product it computes: secondsPerTick); the
 * sectors and milliseconds count as node_counter() counts. */
static double node_disk(ps_bench_rwgen_t *g, uint32_t j, uint32_t r, double prev, uint64_t h)
{
    uint32_t what = j % 5;
    if (what == 4) {
        double ms = node_counter(g, r, r == 0 ? 0 : (double)llround(prev * 1000), h);
        return ms * 0.001;
    }
    if (what == 2 || what == 3)
        return node_counter(g, r, prev / 512, h) * 512;
    return node_counter(g, r, prev, h);
}

/* --values node: as node_labels() lays the series out. */
static double node_value(ps_bench_rwgen_t *g, uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    uint64_t h = series_param(i);
    if (k < 32)
        return node_cpu_seconds(g, k % 8, r, prev);
    if (k < 80) { /* devices eth0-eth2 busy; the others (bridges, idle links) unchanged */
        bool bytes = (k - 32) % 2 == 0, busy = (k - 32) / 4 < 3;
        if (r == 0)
            return (double)(h % 1000000000);
        uint64_t rate = bytes ? 15 * (1000 + h % 100000) : 15 * (1 + h % 80);
        return busy ? steady(g, prev, rate) : prev;
    }
    if (k < 120) { /* mtu, up, speed; filesystem size */
        static const double g[] = {1500, 1, 125000000};
        return k < 116 ? g[(k - 80) % 3] : (double)((1000000 + h % 1000000) * 4096);
    }
    if (k < 160) { /* memory, free space: whole pages, 8 of them change at every scrape */
        if (r == 0)
            return (double)((h % 4000000) * 4096);
        bool every = (k - 120) < 8;
        if (!every && rnd(g) % 4 != 0)
            return prev;
        double d = (double)((int64_t)(rnd(g) % 64) - 32) * 4096;
        return prev + d >= 0 ? prev + d : prev;
    }
    if (k < 170) /* 5 disk counters x 2 disks */
        return node_disk(g, k - 160, r, prev, h);
    if (k < 190) /* vmstat, netstat, ... */
        return node_counter(g, r, prev, h);
    return 0.0005 + rnd_unit(g) * 0.02; /* seconds, to the ns as node_exporter measures */
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

int ps_bench_rw_values_parse(const char *s)
{
    if (strcmp(s, "node") == 0)
        return PS_BENCH_RW_NODE;
    if (strcmp(s, "cpu") == 0)
        return PS_BENCH_RW_CPU;
    return -1;
}

const char *ps_bench_rw_values_name(ps_bench_rw_values_t v) { return v == PS_BENCH_RW_CPU ? "cpu" : "node"; }

void ps_bench_rwgen_init(ps_bench_rwgen_t *g, uint32_t series, uint32_t per_request, int64_t t0,
                         ps_bench_rw_values_t values)
{
    memset(g, 0, sizeof(*g));
    g->values = values;
    g->series = series;
    g->per_request = per_request;
    g->per_round = (series + per_request - 1) / per_request;
    g->t0 = t0;
    g->rng = PS_BENCH_RND_SEED;
    g->arena = (ps_arena_t)PS_ARENA_INIT;
    g->all = ps_arena_calloc(&g->arena, series, sizeof(*g->all));
    g->val = ps_xcalloc(series, sizeof(double));
    g->smp = ps_xcalloc(series, sizeof(*g->smp));
    for (uint32_t i = 0; i < series; i++)
        set_labels(&g->arena, &g->all[i], i, values);
}

void ps_bench_rwgen_dispose(ps_bench_rwgen_t *g)
{
    free(g->smp);
    free(g->val);
    ps_arena_dispose(&g->arena);
    memset(g, 0, sizeof(*g));
}

int ps_bench_rwgen_round(ps_bench_rwgen_t *g, int (*fn)(void *ctx, const uint8_t *body, size_t len, uint32_t shard),
                         void *ctx)
{
    uint32_t r = g->round++;
    bool cpu = g->values == PS_BENCH_RW_CPU;
    for (uint32_t i = 0; i < g->series; i++) {
        g->val[i] = cpu ? cpu_value(g, i, r, g->val[i]) : node_value(g, i, r, g->val[i]);
        /* each target scraped at its own offset in the interval; Prometheus (since 2.35) aligns a
         * scrape's timestamp to the interval when it is within 2 ms of it: --values cpu has no
         * jitter, --values node one scrape in 20 off by 3-42 ms */
        int64_t t = g->t0 + (int64_t)r * 15000 + (int64_t)(i / 200 % 15000);
        if (!cpu && r > 0)
            t += jitter(i / 200, r);
        g->smp[i] = (ps_remote_sample_t){t, g->val[i]};
        g->all[i].samples = &g->smp[i];
        g->all[i].nsamples = 1;
        g->all[i].meta = -1;
    }
    ps_buf_t out = PS_BUF_INIT;
    int rc = 0;
    for (uint32_t q = 0; q < g->per_round && rc == 0; q++) {
        uint32_t from = q * g->per_request, to = from + g->per_request;
        if (to > g->series)
            to = g->series;
        ps_remote_write_t w = {0};
        w.version = 1;
        w.series = g->all + from;
        w.nseries = to - from;
        w.nsamples = to - from;
        ps_err_t err;
        ps_buf_reset(&out);
        if (ps_remote_write_encode(&w, 1, &out, &err) != 0) {
            fprintf(stderr, "rwgen: encode: %s\n", err.msg);
            rc = -1;
            break;
        }
        rc = fn(ctx, out.data, out.len, q);
    }
    ps_buf_dispose(&out);
    return rc;
}
