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

/* ---- CPU slots: at most n threads compute at once, taking turns ----
 * A thread takes a slot before its work and gives it back after; while it holds one it calls
 * ps_cpu_slot_turn at safe points (the query budget's checks do), which hands the slot to the
 * oldest waiter once the holder has had it for PS_CPU_SLICE_NS. Waiters sleep (no CPU), in
 * arrival order. The query pool uses it so that queries leave a CPU to the loops, the decoders
 * and the writer: a woken loop thread then finds a CPU free instead of waiting behind a query
 * thread (which the kernel, measured here, did not always preempt at once). */
#define PS_CPU_SLICE_NS 5000000 /* 5 ms */
typedef struct ps_cpu_slots ps_cpu_slots_t;
/** n slots (0: none is ever waited for: take and turn do nothing). */
ps_cpu_slots_t *ps_cpu_slots_new(unsigned n);
void ps_cpu_slots_free(ps_cpu_slots_t *s);
/** Takes a slot for the calling thread (waiting for one), which then holds it. NULL: no-op. */
void ps_cpu_slot_take(ps_cpu_slots_t *s);
/** Gives the calling thread's slot back (to the oldest waiter, if any). */
void ps_cpu_slot_give(void);
/** At a safe point: if the calling thread holds a slot, has had it for a slice and others wait,
 *  it goes to the back of the line (gives it, then waits its turn). Cheap when nobody waits. */
void ps_cpu_slot_turn(void);
/** Threads holding a slot, and waiting for one (for /metrics). */
void ps_cpu_slots_stats(ps_cpu_slots_t *s, unsigned *running, unsigned *waiting);

/** Names the calling thread (printf-style; Linux keeps 15 bytes): "writer", "http-0", ... */
void ps_thread_name(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#endif
