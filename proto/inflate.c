/*
 * inflate.c - the process-wide budget of bytes being decompressed at once (pprof.h:
 * ps_inflate_budget_set, ps_inflate_reserve), shared by gunzip (pprof.c) and snappy (remote.c).
 */
#include <stdatomic.h>
#include <stdint.h>

#include "core/err.h"
#include "proto/pprof.h"

/* The process-wide budget of bytes being decompressed at once (ps_inflate_budget_set). */
static _Atomic uint64_t inflate_budget, inflate_reserved, inflate_refused;

void ps_inflate_budget_set(uint64_t bytes)
{
    atomic_store(&inflate_budget, bytes);
}

uint64_t ps_inflate_budget_refused(void)
{
    return atomic_load(&inflate_refused);
}

uint64_t ps_inflate_budget_reserved(void)
{
    return atomic_load(&inflate_reserved);
}

int ps_inflate_reserve(uint64_t n, uint64_t held, ps_err_t *err)
{
    uint64_t budget = atomic_load(&inflate_budget);
    uint64_t had = atomic_fetch_add(&inflate_reserved, n);
    if (budget == 0 || had + n <= budget || had <= held) /* one alone always may: its own limit bounds it */
        return 0;
    atomic_fetch_sub(&inflate_reserved, n);
    atomic_fetch_add(&inflate_refused, 1);
    return ps_err_set(err, PS_EUNAVAIL,
                      "too much is being decompressed at once (%llu of %llu bytes, --max-inflated-total): retry later",
                      (unsigned long long)had, (unsigned long long)budget);
}

void ps_inflate_release(uint64_t n)
{
    atomic_fetch_sub(&inflate_reserved, n);
}
