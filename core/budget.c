/*
 * budget.c - see budget.h.
 */
#include "core/budget.h"

#include <stdbool.h>
#include <stdio.h>

#include "core/thread.h"
#include "core/timeutil.h"

static _Thread_local ps_budget_t *cur;

void ps_budget_init(ps_budget_t *b, int64_t timeout, uint64_t max_samples, uint64_t max_regex_steps,
                    const atomic_int *cancel)
{
    *b = (ps_budget_t){0};
    b->timeout = timeout > 0 ? timeout : 0;
    b->deadline = timeout > 0 ? ps_time_mono() + timeout : 0;
    b->cancel = cancel;
    b->max_samples = max_samples;
    b->max_regex = max_regex_steps;
    b->phase = "query execution";
    b->source = ps_setting_name(PS_SETTING_QUERY_TIMEOUT);
}

ps_budget_t *ps_budget_set(ps_budget_t *b)
{
    ps_budget_t *prev = cur;
    cur = b;
    return prev;
}

ps_budget_t *ps_budget_get(void)
{
    return cur;
}

static int check(ps_budget_t *b, bool clock, ps_err_t *err)
{
    ps_cpu_slot_turn(); /* a query's safe point is also where it lets the next one compute */
    if (b->cancel != NULL && atomic_load_explicit(b->cancel, memory_order_relaxed))
        return ps_err_set(err, PS_ECANCELED, "query canceled: the client went away");
    if (clock && b->deadline != 0 && ps_time_mono() > b->deadline) {
        char d[32];
        ps_format_duration(b->timeout, d, sizeof(d));
        return ps_err_set(err, PS_ETIMEOUT, "query timed out in %s (the limit is %s, %s)", b->phase, d, b->source);
    }
    return 0;
}

int ps_budget_check(ps_err_t *err)
{
    ps_budget_t *b = cur;
    if (b == NULL)
        return 0;
    return check(b, (++b->ticks % PS_BUDGET_CLOCK_EVERY) == 0, err);
}

int ps_budget_check_now(ps_err_t *err)
{
    ps_budget_t *b = cur;
    return b == NULL ? 0 : check(b, true, err);
}

int ps_budget_samples(uint64_t n, ps_err_t *err)
{
    ps_budget_t *b = cur;
    if (b == NULL)
        return 0;
    b->samples += n;
    if (b->max_samples != 0 && b->samples > b->max_samples)
        return ps_err_set(err, PS_ELIMIT,
                          "query processing would load too many samples into memory in %s (the limit is %llu "
                          "samples, %s)",
                          b->phase, (unsigned long long)b->max_samples, ps_setting_name(PS_SETTING_QUERY_MAX_SAMPLES));
    return ps_budget_check(err);
}

bool ps_budget_regex(uint64_t n)
{
    ps_budget_t *b = cur;
    if (b == NULL || b->max_regex == 0)
        return true;
    b->regex += n;
    return b->regex <= b->max_regex;
}

uint64_t ps_budget_regex_left(void)
{
    ps_budget_t *b = cur;
    if (b == NULL || b->max_regex == 0)
        return UINT64_MAX;
    return b->regex >= b->max_regex ? 0 : b->max_regex - b->regex;
}
