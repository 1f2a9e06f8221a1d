/*
 * rwgen.c - the node_exporter-like remote-write generator (rwgen.h).
 */
#include "rwgen.h"

#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "core/err.h"
#include "core/labels.h"

/* xorshift64*, the seed and sequence of ps_bench_rnd() (util.h), but one state per generator */
static uint64_t rnd(ps_bench_rwgen_t *g)
{
    uint64_t x = g->rng;
    x ^= x >> 12;
    x ^= x << 25;
    x ^= x >> 27;
    g->rng = x;
    return x * 0x2545f4914f6cdd1dull;
}

static void set_labels(ps_arena_t *a, ps_remote_series_t *s, uint32_t i)
{
    static const char *const modes[] = {"idle", "iowait", "irq", "nice", "softirq", "steal", "system", "user"};
    static const char *const net[] = {"node_network_receive_bytes_total", "node_network_receive_packets_total",
                                      "node_network_transmit_bytes_total", "node_network_transmit_packets_total"};
    ps_label_pair_t *p = ps_arena_alloc(a, 8 * sizeof(*p));
    char inst[32], v1[32], v2[32];
    uint32_t host = i / 200, k = i % 200, n = 0;
    snprintf(inst, sizeof(inst), "10.0.%u.%u:9100", host / 256, host % 256);
#define PAIR(nm, val)                                                                                      \
    do {                                                                                                   \
        p[n].name = ps_arena_strndup(a, nm, strlen(nm));                                                   \
        p[n].value = ps_arena_strndup(a, val, strlen(val));                                                \
        p[n].nlen = (uint32_t)strlen(nm);                                                                  \
        p[n].vlen = (uint32_t)strlen(val);                                                                 \
        n++;                                                                                               \
    } while (0)
    if (k < 128) { /* 16 cpus x 8 modes */
        snprintf(v1, sizeof(v1), "%u", k / 8);
        PAIR("__name__", "node_cpu_seconds_total");
        PAIR("cpu", v1);
        PAIR("mode", modes[k % 8]);
    } else if (k < 176) { /* 12 devices x 4 */
        snprintf(v1, sizeof(v1), "eth%u", (k - 128) / 4);
        PAIR("__name__", net[(k - 128) % 4]);
        PAIR("device", v1);
    } else { /* filesystems */
        snprintf(v1, sizeof(v1), "/dev/nvme0n1p%u", k - 176);
        snprintf(v2, sizeof(v2), "/srv/data%u", k - 176);
        PAIR("__name__", "node_filesystem_avail_bytes");
        PAIR("device", v1);
        PAIR("fstype", "ext4");
        PAIR("mountpoint", v2);
    }
    PAIR("instance", inst);
    PAIR("job", "node");
    PAIR("replica", "bench");
#undef PAIR
    ps_labels_t ls = {n, p, 0};
    ps_labels_normalize(&ls, NULL);
    s->labels = ls;
}

/* The value of series i at round r, from its previous value. Like node_exporter on a mostly idle
 * host: idle CPU seconds grow by about the interval, user and system by a little, the rarely used
 * modes (iowait, irq, nice, softirq, steal) mostly not at all; byte counters by random amounts,
 * packet counters by small ones; free bytes drift by pages now and then. */
static double next_value(ps_bench_rwgen_t *g, uint32_t i, uint32_t r, double prev)
{
    uint32_t k = i % 200;
    if (k < 128) { /* CPU seconds, in 10 ms ticks */
        uint32_t mode = k % 8; /* idle, iowait, irq, nice, softirq, steal, system, user */
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

void ps_bench_rwgen_init(ps_bench_rwgen_t *g, uint32_t series, uint32_t per_request, int64_t t0)
{
    memset(g, 0, sizeof(*g));
    g->series = series;
    g->per_request = per_request;
    g->per_round = (series + per_request - 1) / per_request;
    g->t0 = t0;
    g->rng = 0x9e3779b97f4a7c15ull;
    g->arena = (ps_arena_t)PS_ARENA_INIT;
    g->all = ps_arena_calloc(&g->arena, series, sizeof(*g->all));
    g->val = ps_xcalloc(series, sizeof(double));
    g->smp = ps_xcalloc(series, sizeof(*g->smp));
    for (uint32_t i = 0; i < series; i++)
        set_labels(&g->arena, &g->all[i], i);
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
    for (uint32_t i = 0; i < g->series; i++) {
        g->val[i] = next_value(g, i, r, g->val[i]);
        /* each target scraped at its own offset in the interval; Prometheus (since 2.35) aligns a
         * scrape's timestamp to the interval when it is within 2 ms of it, so no jitter */
        int64_t t = g->t0 + (int64_t)r * 15000 + (int64_t)(i / 200 % 15000);
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
