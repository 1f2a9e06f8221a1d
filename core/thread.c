/*
 * thread.c - thread names and ps_par_for (thread.h). The shared state is counted: the caller and each helper spawned
 * hold a reference, and the last one out frees it, so a helper that a busy pool starts late
 * (after the caller returned) still finds valid state, sees no index left and leaves.
 */
#include "thread.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <sys/prctl.h>
#include <stdatomic.h>
#include <stdlib.h>

#include "mem.h"
#include "timeutil.h"

typedef struct state {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    atomic_size_t next;  /* the next index to hand out */
    size_t n, done;      /* done: calls returned (under mu) */
    atomic_uint slots;   /* slots handed out */
    unsigned width;
    atomic_uint refs;
    void (*fn)(void *ctx, unsigned slot, size_t i);
    void *ctx;
} state_t;

static void release(state_t *s)
{
    if (atomic_fetch_sub(&s->refs, 1) == 1) {
        pthread_mutex_destroy(&s->mu);
        pthread_cond_destroy(&s->cv);
        free(s);
    }
}

static void work(state_t *s, unsigned slot)
{
    size_t did = 0;
    for (;;) {
        size_t i = atomic_fetch_add(&s->next, 1);
        if (i >= s->n)
            break;
        s->fn(s->ctx, slot, i);
        did++;
    }
    if (did == 0)
        return;
    pthread_mutex_lock(&s->mu);
    s->done += did;
    if (s->done == s->n)
        pthread_cond_broadcast(&s->cv);
    pthread_mutex_unlock(&s->mu);
}

static void helper(void *arg)
{
    state_t *s = arg;
    if (atomic_load(&s->next) < s->n) {
        unsigned slot = atomic_fetch_add(&s->slots, 1);
        if (slot < s->width)
            work(s, slot);
    }
    release(s);
}

void ps_par_for(const ps_par_t *par, size_t n, void (*fn)(void *ctx, unsigned slot, size_t i), void *ctx)
{
    if (par == NULL || par->width <= 1 || par->spawn == NULL || n <= 1) {
        for (size_t i = 0; i < n; i++)
            fn(ctx, 0, i);
        return;
    }
    state_t *s = ps_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv, NULL);
    atomic_init(&s->next, 0);
    s->n = n;
    atomic_init(&s->slots, 1); /* slot 0: the caller */
    s->width = par->width;
    atomic_init(&s->refs, 1);
    s->fn = fn;
    s->ctx = ctx;
    size_t want = par->width - 1 < n - 1 ? par->width - 1 : n - 1;
    for (size_t k = 0; k < want; k++) {
        atomic_fetch_add(&s->refs, 1);
        if (!par->spawn(par->pool, helper, s)) {
            atomic_fetch_sub(&s->refs, 1);
            break;
        }
    }
    work(s, 0);
    pthread_mutex_lock(&s->mu);
    while (s->done < s->n)
        pthread_cond_wait(&s->cv, &s->mu);
    pthread_mutex_unlock(&s->mu);
    release(s);
}

void ps_thread_name(const char *fmt, ...)
{
    char name[16];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(name, sizeof(name), fmt, ap);
    va_end(ap);
    (void)prctl(PR_SET_NAME, name, 0, 0, 0);
}

/* ---- CPU slots ---- */

typedef struct slot_waiter {
    struct slot_waiter *next;
    pthread_cond_t cv;
    bool granted;
} slot_waiter_t;

/* A slot handed to a waiter stays counted as running and the waiter leaves the line in the same
 * critical section, and a turn hands over and queues behind in one: the counts /metrics reads never
 * show a hand-over half done (0 running and one waiter fewer while the woken thread is scheduled). */
struct ps_cpu_slots {
    pthread_mutex_t mu;
    unsigned n, free, running;
    slot_waiter_t *head, *tail; /* waiting, oldest first */
    atomic_uint waiting;
};

static _Thread_local ps_cpu_slots_t *held;
static _Thread_local int64_t held_since;

ps_cpu_slots_t *ps_cpu_slots_new(unsigned n)
{
    ps_cpu_slots_t *s = ps_xcalloc(1, sizeof(*s));
    pthread_mutex_init(&s->mu, NULL);
    s->n = s->free = n;
    atomic_init(&s->waiting, 0);
    return s;
}

void ps_cpu_slots_free(ps_cpu_slots_t *s)
{
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

/* Under s->mu: queues the caller and waits until a slot is handed to it (counted running then). */
static void wait_in_line(ps_cpu_slots_t *s)
{
    slot_waiter_t w = {NULL, PTHREAD_COND_INITIALIZER, false};
    if (s->tail != NULL)
        s->tail->next = &w;
    else
        s->head = &w;
    s->tail = &w;
    atomic_fetch_add(&s->waiting, 1);
    while (!w.granted)
        pthread_cond_wait(&w.cv, &s->mu);
    pthread_cond_destroy(&w.cv);
}

/* Under s->mu: the slot the caller holds goes to the oldest waiter, if any (it stays running). */
static bool hand_over(ps_cpu_slots_t *s)
{
    slot_waiter_t *w = s->head;
    if (w == NULL)
        return false;
    s->head = w->next;
    if (s->head == NULL)
        s->tail = NULL;
    atomic_fetch_sub(&s->waiting, 1);
    w->granted = true;
    pthread_cond_signal(&w->cv);
    return true;
}

void ps_cpu_slot_take(ps_cpu_slots_t *s)
{
    if (s == NULL || s->n == 0 || held != NULL)
        return;
    pthread_mutex_lock(&s->mu);
    if (s->free > 0 && s->head == NULL) {
        s->free--;
        s->running++;
    } else {
        wait_in_line(s);
    }
    pthread_mutex_unlock(&s->mu);
    held = s;
    held_since = ps_time_mono();
}

void ps_cpu_slot_give(void)
{
    ps_cpu_slots_t *s = held;
    if (s == NULL)
        return;
    held = NULL;
    pthread_mutex_lock(&s->mu);
    if (!hand_over(s)) { /* handed over: the slot never looks free to a newcomer meanwhile */
        s->running--;
        s->free++;
    }
    pthread_mutex_unlock(&s->mu);
}

void ps_cpu_slot_turn(void)
{
    ps_cpu_slots_t *s = held;
    if (s == NULL || atomic_load_explicit(&s->waiting, memory_order_relaxed) == 0)
        return;
    if (ps_time_mono() - held_since < PS_CPU_SLICE_NS)
        return;
    pthread_mutex_lock(&s->mu);
    if (hand_over(s))
        wait_in_line(s);
    pthread_mutex_unlock(&s->mu);
    held_since = ps_time_mono();
}

void ps_cpu_slots_stats(ps_cpu_slots_t *s, unsigned *running, unsigned *waiting)
{
    *running = *waiting = 0;
    if (s == NULL)
        return;
    pthread_mutex_lock(&s->mu);
    *running = s->running;
    *waiting = atomic_load(&s->waiting);
    pthread_mutex_unlock(&s->mu);
}
