/*
 * budget.h - what one query may spend, and whether it should stop: a deadline (--query.timeout),
 * a cancel flag (the client went away), a sample budget (--query.max-samples) and a regex step
 * budget (--query.max-regex-steps), for the query running on this thread.
 *
 * The query worker pool (web/qpool.c) installs a budget on its thread for the length of one query
 * (ps_budget_set); code deep below (selector matching in parser/matcher.c, selection and merges in
 * src/query, PromQL's evaluation) asks the current one (ps_budget_get, NULL: no query budget, as in
 * unit tests and on the event loops) at points where stopping is safe, and turns a refusal into
 * the query's error:
 *
 *   PS_ETIMEOUT   "query timed out in <phase>"                 503 errorType "timeout"
 *   PS_ECANCELED  "query canceled: the client went away"       nobody reads it (499 is counted)
 *   PS_ELIMIT     "query processing would load too many samples into memory in <phase> ..."  422
 *                 "regex matcher <m>: ... regex budget ..."                                   422
 *
 * The cancel flag costs one relaxed atomic load per check; the clock is read every
 * PS_BUDGET_CLOCK_EVERY checks (ps_budget_check) or every time (ps_budget_check_now, for checks
 * between steps that are expensive themselves, such as one regex match).
 *
 * Thread safety: a budget belongs to the thread it is set on; only *cancel is written by another
 * thread (the request's event loop).
 */
#ifndef PS_CORE_BUDGET_H
#define PS_CORE_BUDGET_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "core/err.h"

#define PS_BUDGET_CLOCK_EVERY 64

typedef struct ps_budget {
    int64_t deadline;          /* ps_time_mono() ns after which the query stops; 0: none */
    int64_t timeout;           /* ns, for messages (--query.timeout) */
    const atomic_int *cancel;  /* nonzero once the client went away; NULL: never */
    uint64_t max_samples, samples; /* the limit (0: none) and what was taken so far */
    uint64_t max_regex, regex;     /* regex steps: the limit (0: none) and what was charged so far */
    const char *phase;         /* where the query is, for "timed out in <phase>" */
    const char *source;        /* what set the deadline, for messages (ps_setting_name) */
    uint32_t ticks;
} ps_budget_t;

/** A budget of timeout ns from now (0: none), max_samples and max_regex_steps (0: none), with
 *  the cancel flag (may be NULL); phase "query execution". */
void ps_budget_init(ps_budget_t *b, int64_t timeout, uint64_t max_samples, uint64_t max_regex_steps,
                    const atomic_int *cancel);
/** Makes b the current thread's budget (NULL: none); returns the previous one. */
ps_budget_t *ps_budget_set(ps_budget_t *b);
/** The current thread's budget, or NULL. */
ps_budget_t *ps_budget_get(void);

/** 0 to go on, PS_ECANCELED or PS_ETIMEOUT (with err's message) to stop: the cancel flag at every
 *  call, the clock at every PS_BUDGET_CLOCK_EVERY-th. No budget: 0. */
int ps_budget_check(ps_err_t *err);
/** The same, reading the clock now. */
int ps_budget_check_now(ps_err_t *err);
/** Takes n samples from the budget: 0, or PS_ELIMIT with Prometheus' message (and the check of
 *  ps_budget_check). No budget: 0. */
int ps_budget_samples(uint64_t n, ps_err_t *err);
/** Charges n regex steps; true while the total stays within max_regex (or there is no budget or
 *  limit). The caller words the error (it knows the matcher). */
bool ps_budget_regex(uint64_t n);
/** The regex steps still allowed (UINT64_MAX without a budget or limit). */
uint64_t ps_budget_regex_left(void);

#endif
