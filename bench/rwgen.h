/*
 * rwgen.h - the remote-write generator of bench_remote_write and bench_promql (bench/rwgen.c, in
 * the ps_bench library): node_exporter-like series scraped every 15 s, sent as remote-write 1.0
 * requests of one sample per series, a round at a time.
 *
 * Series i belongs to host i / 200 (instance "10.0.H/256.H%256:9100", job "node", replica
 * "bench"), scraped at its own offset in the interval (i / 200 ms). A host's 200 series:
 *   - PS_BENCH_RW_NODE (the default of both benches): the mix of a node_exporter on a 4-CPU
 *     machine, 0-31 node_cpu_seconds_total{cpu="0".."3", mode} (8 modes: idle iowait irq nice
 *     softirq steal system user), 32-79 node_network_{receive,transmit}_{bytes,packets}_total
 *     {device="eth0".."eth11"} (eth0-eth2 busy), 80-115 network gauges (mtu, up, speed),
 *     116-119 and 152-159 filesystem size, avail, free, 120-151 node_memory_*_bytes, 160-189
 *     disk, vmstat, netstat counters, 190-199 node_scrape_collector_duration_seconds; one scrape
 *     in 20 (a host and round) 3-42 ms off the interval;
 *   - PS_BENCH_RW_CPU (the first generator, for comparison): 0-127 node_cpu_seconds_total{cpu=
 *     "0".."15", mode}, 128-175 the network counters of eth0-eth11, 176-199
 *     node_filesystem_avail_bytes{device, fstype, mountpoint}; exact timestamps.
 * Values as rwgen.c describes. The generator has its own random state: two generators made alike
 * produce the same bytes.
 */
#ifndef PS_BENCH_RWGEN_H
#define PS_BENCH_RWGEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"
#include "proto/remote.h"

typedef enum ps_bench_rw_values {
    PS_BENCH_RW_NODE, /* --values node */
    PS_BENCH_RW_CPU,  /* --values cpu */
} ps_bench_rw_values_t;

typedef struct ps_bench_rwgen {
    uint32_t series, per_request, per_round; /* per_round: requests a round */
    ps_bench_rw_values_t values;
    int64_t t0;     /* round 0's timestamp (ms) */
    uint32_t round; /* the next round */
    uint64_t rng;
    ps_arena_t arena;
    ps_remote_series_t *all; /* all[i].labels; after a round, all[i].samples: its one sample */
    ps_remote_sample_t *smp;
    double *val;
} ps_bench_rwgen_t;

/** series series of the values mix, per_request samples a request, round r at t0 + r * 15 s
 *  (plus the host's offset and, for PS_BENCH_RW_NODE, its jitter). */
void ps_bench_rwgen_init(ps_bench_rwgen_t *g, uint32_t series, uint32_t per_request, int64_t t0,
                         ps_bench_rw_values_t values);
void ps_bench_rwgen_dispose(ps_bench_rwgen_t *g);

/** "node" -> PS_BENCH_RW_NODE, "cpu" -> PS_BENCH_RW_CPU; -1 for anything else. */
int ps_bench_rw_values_parse(const char *s);
const char *ps_bench_rw_values_name(ps_bench_rw_values_t v);

/** The per_round requests of the next round, each through fn(ctx, body, len, shard) (shard: the
 *  request's position in the round; the body is valid during the call). Returns 0, -1 if an
 *  encoding failed (message on stderr), or fn's first non-zero answer. */
int ps_bench_rwgen_round(ps_bench_rwgen_t *g, int (*fn)(void *ctx, const uint8_t *body, size_t len, uint32_t shard),
                         void *ctx);

#endif
