/*
 * test_schedule.c - the scrape schedule (src/scrape/schedule.c): heap order, ties first in first
 * out, the hash-spread first tick and its bounds, and the next tick after missed ones.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "core/timeutil.h"
#include "scrape/schedule.h"

#define S PS_NS_PER_S

static void test_empty(void **state)
{
    ps_sched_t h = {0};
    int64_t due = 7;
    uint32_t idx = 7;
    assert_false(ps_sched_peek(&h, &due, &idx));
    assert_int_equal(due, 7);
    assert_int_equal(idx, 7);
    ps_sched_push(&h, 3, 42);
    assert_true(ps_sched_peek(&h, NULL, NULL));
    assert_int_equal(ps_sched_pop(&h), 3);
    assert_false(ps_sched_peek(&h, NULL, NULL));
    ps_sched_dispose(&h);
    ps_sched_dispose(&h); /* twice is fine */
}

/* 200 entries pushed in a scrambled order come out by due time; the heap grows past its first block. */
static void test_order(void **state)
{
    ps_sched_t h = {0};
    for (uint32_t i = 0; i < 200; i++) {
        uint32_t idx = (i * 73) % 200; /* 73 is prime to 200: a permutation */
        ps_sched_push(&h, idx, 1000 + 10 * (int64_t)idx);
    }
    assert_int_equal(h.n, 200);
    for (uint32_t i = 0; i < 200; i++) {
        int64_t due;
        uint32_t idx;
        assert_true(ps_sched_peek(&h, &due, &idx));
        assert_int_equal(idx, i);
        assert_int_equal(due, 1000 + 10 * (int64_t)i);
        assert_int_equal(ps_sched_pop(&h), i);
    }
    assert_int_equal(h.n, 0);
    ps_sched_dispose(&h);
}

/* Equal due times come out in push order, whatever else is in the heap. */
static void test_ties(void **state)
{
    ps_sched_t h = {0};
    const uint32_t idx[] = {9, 4, 7, 1, 8, 2, 6, 0, 5, 3};
    const int64_t due[] = {50, 10, 50, 30, 10, 50, 30, 10, 50, 30};
    for (int i = 0; i < 10; i++)
        ps_sched_push(&h, idx[i], due[i]);
    const uint32_t want[] = {4, 8, 0, 1, 6, 3, 9, 7, 2, 5};
    for (int i = 0; i < 10; i++)
        assert_int_equal(ps_sched_pop(&h), want[i]);
    /* cleared, the heap is empty and takes new entries */
    ps_sched_push(&h, 1, 5);
    ps_sched_push(&h, 2, 5);
    ps_sched_clear(&h);
    assert_false(ps_sched_peek(&h, NULL, NULL));
    ps_sched_push(&h, 11, 6);
    ps_sched_push(&h, 12, 6);
    assert_int_equal(ps_sched_pop(&h), 11);
    assert_int_equal(ps_sched_pop(&h), 12);
    ps_sched_dispose(&h);
}

/* The first tick: now + id mod interval, so within [now, now + interval). */
static void test_first_tick(void **state)
{
    const int64_t now = 1000 * S;
    assert_int_equal(ps_sched_first(0, 10 * S, now), now);
    assert_int_equal(ps_sched_first(10 * S - 1, 10 * S, now), now + 10 * S - 1);
    assert_int_equal(ps_sched_first(10 * S, 10 * S, now), now);
    assert_int_equal(ps_sched_first(123456789, 10 * S, now), now + 123456789);
    assert_int_equal(ps_sched_first(UINT64_MAX, 10 * S, now), now + 3709551615ll); /* 2^64-1 mod 10^10 */
    assert_int_equal(ps_sched_first(UINT64_MAX, 10 * S, -now), -now + 3709551615ll); /* mono may be anything */
    /* no interval counts as 1 s */
    assert_int_equal(ps_sched_first(1500000000, 0, now), now + 500000000);
    assert_int_equal(ps_sched_first(1500000000, -5, now), now + 500000000);
    /* bounds over many hashes, and the spread: every tenth of the interval gets some */
    uint32_t tenths[10] = {0};
    uint64_t x = 0x9e3779b97f4a7c15ull;
    for (int i = 0; i < 10000; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        int64_t t = ps_sched_first(x, 15 * S, now);
        assert_true(t >= now && t < now + 15 * S);
        assert_int_equal(ps_sched_first(x, 15 * S, now), t); /* the same target, the same offset */
        tenths[(t - now) / (15 * S / 10)]++;
    }
    for (int i = 0; i < 10; i++)
        assert_true(tenths[i] > 800 && tenths[i] < 1200);
}

/* The next tick stays on the target's grid and skips the ticks that passed. */
static void test_next_tick(void **state)
{
    assert_int_equal(ps_sched_next(100, 10, 100), 110);
    assert_int_equal(ps_sched_next(100, 10, 95), 110);  /* early: still one interval on */
    assert_int_equal(ps_sched_next(100, 10, 109), 110);
    assert_int_equal(ps_sched_next(100, 10, 110), 120); /* a tick at now has passed */
    assert_int_equal(ps_sched_next(100, 10, 155), 160); /* 110..150 missed */
    assert_int_equal(ps_sched_next(5, 10, 1000005), 1000015);
    assert_int_equal(ps_sched_next(500, 10, 100), 510);
    assert_int_equal(ps_sched_next(0, 0, 0), S);
    assert_int_equal(ps_sched_next(0, -1, 3 * S + 1), 4 * S);
}

/* The scraper's use: pop what is due, push it back at its next tick. A (every 3) and B (every 5)
 * both start at 0; at 15 both are due and B, waiting since 10, goes before A, waiting since 12. */
static void test_rescheduling(void **state)
{
    ps_sched_t h = {0};
    int64_t next[2] = {0, 0}, iv[2] = {3, 5};
    ps_sched_push(&h, 0, 0);
    ps_sched_push(&h, 1, 0);
    int64_t got_t[16];
    uint32_t got_i[16];
    int n = 0;
    for (int64_t now = 0; now <= 15; now++) {
        int64_t due;
        while (ps_sched_peek(&h, &due, NULL) && due <= now) {
            uint32_t i = ps_sched_pop(&h);
            assert_int_equal(due, next[i]);
            got_t[n] = now;
            got_i[n++] = i;
            next[i] = ps_sched_next(next[i], iv[i], now);
            ps_sched_push(&h, i, next[i]);
        }
    }
    const int64_t want_t[] = {0, 0, 3, 5, 6, 9, 10, 12, 15, 15};
    const uint32_t want_i[] = {0, 1, 0, 1, 0, 0, 1, 0, 1, 0};
    assert_int_equal(n, 10);
    for (int i = 0; i < n; i++) {
        assert_int_equal(got_t[i], want_t[i]);
        assert_int_equal(got_i[i], want_i[i]);
    }
    /* a target that could not run from 16 to 40 (a long CPU profile) skips the ticks it missed */
    assert_int_equal(ps_sched_next(18, 3, 40), 42);
    ps_sched_dispose(&h);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty),      cmocka_unit_test(test_order),     cmocka_unit_test(test_ties),
        cmocka_unit_test(test_first_tick), cmocka_unit_test(test_next_tick), cmocka_unit_test(test_rescheduling),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
