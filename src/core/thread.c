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
