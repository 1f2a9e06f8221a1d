/*
 * rwgen.h - the remote-write generator of bench_remote_write and bench_promql (bench/rwgen.c, in
 * the ps_bench library): node_exporter-like series scraped every 15 s, sent as remote-write 1.0
 * requests of one sample per series, a round at a time.
 *
 * Series i belongs to host i / 200 (instance "10.0.H/256.H%256:9100", job "node", replica
 * "bench"); of a host's 200 series, 0-127 are node_cpu_seconds_total{cpu="0".."15", mode} (8
 * modes: idle iowait irq nice softirq steal system user), 128-175 node_network_{receive,transmit}_
 * {bytes,packets}_total{device="eth0".."eth11"}, 176-199 node_filesystem_avail_bytes{device,
 * fstype, mountpoint}. Values as next_value() in rwgen.c describes. The generator has its own
 * random state: two generators made alike produce the same bytes.
 */
#ifndef PS_BENCH_RWGEN_H
#define PS_BENCH_RWGEN_H

#include <stddef.h>
#include <stdint.h>

#include "core/mem.h"
#include "proto/remote.h"

typedef struct ps_bench_rwgen {
    uint32_t series, per_request, per_round; /* per_round: requests a round */
    int64_t t0;                              /* round 0's timestamp (ms) */
    uint32_t round;                          /* the next round */
    uint64_t rng;
    ps_arena_t arena;
    ps_remote_series_t *all;
    ps_remote_sample_t *smp;
    double *val;
} ps_bench_rwgen_t;

/** series series, per_request samples a request, round r at t0 + r * 15 s (plus the host's
 *  offset: i / 200 ms). */
void ps_bench_rwgen_init(ps_bench_rwgen_t *g, uint32_t series, uint32_t per_request, int64_t t0);
void ps_bench_rwgen_dispose(ps_bench_rwgen_t *g);

/** The per_round requests of the next round, each through fn(ctx, body, len, shard) (shard: the
 *  request's position in the round; the body is valid during the call). Returns 0, -1 if an
 *  encoding failed (message on stderr), or fn's first non-zero answer. */
int ps_bench_rwgen_round(ps_bench_rwgen_t *g, int (*fn)(void *ctx, const uint8_t *body, size_t len, uint32_t shard),
                         void *ctx);

#endif
