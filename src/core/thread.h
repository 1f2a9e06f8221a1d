/*
 * thread.h - threads: their names (what top -H, ps -L and perf show), and a parallel for:
 * fn(ctx, slot, i) for every i in [0, n), on the calling thread and on helpers a pool lends (its
 * idle threads). The caller never waits for a helper that has not
 * started: it takes the indexes left itself, and waits only for the ones other threads are
 * running. So a pool thread may call it (no deadlock when every thread is busy: it then does all
 * the work), and a helper that starts after the end finds nothing to do and touches nothing of
 * the caller's.
 */
#ifndef PS_CORE_THREAD_H
#define PS_CORE_THREAD_H

#include <stdbool.h>
#include <stddef.h>

/** Runs fn(arg) on another thread, some time later; false when it cannot (then it never runs). */
typedef bool (*ps_par_spawn_fn)(void *pool, void (*fn)(void *arg), void *arg);

typedef struct ps_par {
    ps_par_spawn_fn spawn;
    void *pool;
    unsigned width; /* threads at most, the caller included; slots are 0 .. width-1 */
} ps_par_t;

/** Calls fn(ctx, slot, i) once for each i in [0, n), indexes handed out in increasing order;
 *  slot (< width, 0 for the caller) names the thread making the call, for scratch of its own.
 *  Returns when every call has returned. par NULL or width <= 1: all on the caller, slot 0. */
void ps_par_for(const ps_par_t *par, size_t n, void (*fn)(void *ctx, unsigned slot, size_t i), void *ctx);

/** Names the calling thread (printf-style; Linux keeps 15 bytes): "writer", "http-0", ... */
void ps_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
