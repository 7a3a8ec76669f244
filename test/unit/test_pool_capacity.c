/*
 * max_capacity (over-capacity service, release down to the cap, coldest
 * slab first, memory counted from outside the pool) and collection by age
 * with a fake clock.
 */
#include "test_pool_common.h"

#define MIB ((size_t)1 << 20)

static void test_capacity(void)
{
    uint64_t now = 1;
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, &now);
    cfg.slab_size = 2 * MIB; /* every 1M slab holds two buffers */
    cfg.max_capacity = 4 * MIB;
    cfg.gc_age_ns = 0; /* only the cap releases */
    regpar_pool_t *pool = test_pool_create(&cfg);
    regpar_pool_stats_t st;

    /* 16 buffers of 1M = 8 slabs of 2M = 16M: never refused because of a
     * 4M cap; slabs 3 to 8 each take the pool over the cap. */
    void *buf[16];
    for (int i = 0; i < 16; i++) {
        buf[i] = regpar_pool_alloc(pool, MIB);
        UNIT_REQUIRE(buf[i]);
        memset(buf[i], i, MIB);
    }
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.allocs, 16);
    UNIT_CHECK_EQ_U64(st.misses, 8);
    UNIT_CHECK_EQ_U64(st.hits, 8);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, 8);
    UNIT_CHECK_EQ_U64(st.bytes_held, 16 * MIB);
    UNIT_CHECK_EQ_U64(st.over_capacity, 6);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 0);
    for (int i = 0; i < 16; i++) {
        UNIT_CHECK(((unsigned char *)buf[i])[MIB - 1] == (unsigned char)i);
    }

    /* Freeing in order empties slab after slab: the first six go back to the
     * system, the last two stay (the pool is then exactly at the cap). */
    for (int i = 0; i < 16; i++) {
        now++;
        UNIT_CHECK(0 == regpar_pool_free(pool, buf[i]));
        regpar_pool_get_stats(pool, &st);
        uint64_t held = st.bytes_held;
        if (i < 12) {
            UNIT_CHECK_EQ_U64(held, 16 * MIB - (uint64_t)(i + 1) / 2 * 2 * MIB);
        } else {
            UNIT_CHECK_EQ_U64(held, 4 * MIB);
        }
    }
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    UNIT_CHECK(st.bytes_held <= cfg.max_capacity);
    UNIT_CHECK_EQ_U64(st.bytes_collected, 12 * MIB);
    UNIT_CHECK_EQ_U64(st.slabs_released, 6);
    UNIT_CHECK_EQ_U64(st.bytes_peak, 16 * MIB);

    /* A miss in another bucket makes room by releasing the coldest free slab
     * (the one holding buf[12..13]), so the pool stays at the cap. */
    now++;
    void *small = regpar_pool_alloc(pool, 4096);
    UNIT_REQUIRE(small);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 4 * MIB);
    UNIT_CHECK_EQ_U64(st.over_capacity, 6);
    UNIT_CHECK_EQ_U64(st.slabs_released, 7);
    /* The survivor is the slab of buf[14..15]; its last freed buffer is
     * handed out first. */
    void *again = regpar_pool_alloc(pool, MIB);
    UNIT_CHECK(again == buf[15]);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.misses, 9);

    /* A direct mapping beyond the cap is served, counted, and unmapped on
     * free. */
    void *big = regpar_pool_alloc(pool, 8 * MIB);
    UNIT_REQUIRE(big);
    memset(big, 1, 8 * MIB);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.over_capacity, 7);
    UNIT_CHECK_EQ_U64(st.direct_allocs, 1);
    UNIT_CHECK_EQ_U64(st.bytes_held, 12 * MIB);
    UNIT_CHECK(0 == regpar_pool_free(pool, big));
    UNIT_CHECK(0 == regpar_pool_free(pool, again));
    UNIT_CHECK(0 == regpar_pool_free(pool, small));
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 4 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    UNIT_CHECK_EQ_U64(st.allocs, st.frees);
    test_check_consistent(pool);

    /* Collection by age is off, so only force empties the pool. */
    now += 1000000000000ULL;
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, false), 0);
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, true), 4 * MIB);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, st.slabs_released);
    regpar_pool_destroy(pool);
}

/* A cap of a single slab still serves everything (and keeps one slab). */
static void test_tiny_capacity(void)
{
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, NULL);
    cfg.max_capacity = 2 * MIB;
    regpar_pool_t *pool = test_pool_create(&cfg);
    void *p[40];
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < 40; i++) {
            p[i] = regpar_pool_alloc(pool, (size_t)4096 << (i % 9));
            UNIT_REQUIRE(p[i]);
            memset(p[i], i, 4096);
        }
        for (int i = 0; i < 40; i++) {
            UNIT_CHECK(((char *)p[i])[4095] == (char)i);
            UNIT_CHECK(0 == regpar_pool_free(pool, p[i]));
        }
        regpar_pool_stats_t st;
        regpar_pool_get_stats(pool, &st);
        UNIT_CHECK(st.bytes_held <= cfg.max_capacity);
        UNIT_CHECK(st.over_capacity > 0);
        UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    }
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

static uint64_t held(const regpar_pool_t *pool)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    return st.bytes_held;
}

static uint64_t released(const regpar_pool_t *pool)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    return st.slabs_released;
}

static void test_collect_by_age(void)
{
    const uint64_t age = 1000;
    uint64_t now = 0;
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, &now);
    cfg.gc_age_ns = age;
    regpar_pool_t *pool = test_pool_create(&cfg);

    now = 100;
    void *a = regpar_pool_alloc(pool, 4096); /* slab S1, 2M */
    void *b = regpar_pool_alloc(pool, MIB);  /* slab S2, 2M, stays in use */
    UNIT_REQUIRE(a && b);
    now = 200;
    UNIT_CHECK(0 == regpar_pool_free(pool, a)); /* S1 wholly free since 200 */

    /* Idle for exactly gc_age: not older than gc_age, kept. */
    now = 200 + age;
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, false), 0);
    UNIT_CHECK_EQ_U64(held(pool), 4 * MIB);
    /* Older now, but the last collection ran less than gc_age/4 ago. */
    now = 200 + age + 1;
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, false), 0);
    UNIT_CHECK_EQ_U64(held(pool), 4 * MIB);
    now = 200 + age + age / 4;
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, false), 2 * MIB);
    UNIT_CHECK_EQ_U64(held(pool), 2 * MIB);

    /* A slab with a buffer out is never collected, forced or not. */
    now += 1000 * age;
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, false), 0);
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, true), 0);
    UNIT_CHECK_EQ_U64(held(pool), 2 * MIB);
    memset(b, 3, MIB);
    UNIT_CHECK(0 == regpar_pool_free(pool, b));
    /* Force takes a slab freed this very instant. */
    UNIT_CHECK_EQ_U64(regpar_pool_collect(pool, true), 2 * MIB);
    UNIT_CHECK_EQ_U64(held(pool), 0);

    /* Amortised collection on the free path: a cold slab of the 8K bucket
     * goes while another bucket is busy, without calling collect. */
    now += 10 * age;
    void *c = regpar_pool_alloc(pool, 8192);
    UNIT_REQUIRE(c);
    UNIT_CHECK(0 == regpar_pool_free(pool, c));
    uint64_t cold_since = now, before = released(pool);
    now = cold_since + age; /* not old enough yet */
    for (int i = 0; i < 200; i++) {
        void *p = regpar_pool_alloc(pool, 4096);
        UNIT_REQUIRE(p);
        UNIT_CHECK(0 == regpar_pool_free(pool, p));
    }
    UNIT_CHECK_EQ_U64(released(pool), before);
    now = cold_since + 2 * age;
    int frees = 0;
    while (released(pool) == before && frees < 64) {
        void *p = regpar_pool_alloc(pool, 4096);
        UNIT_REQUIRE(p);
        UNIT_CHECK(0 == regpar_pool_free(pool, p));
        frees++;
    }
    UNIT_CHECK_EQ_U64(released(pool), before + 1);
    /* Only the cold slab: the 4K slab was emptied just now. */
    UNIT_CHECK_EQ_U64(held(pool), 2 * MIB);
    UNIT_CHECK(regpar_pool_bucket_size(pool, 4096) == 4096);
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

/* Memory mapped outside the pool (coll/bufpool's node segments) counts
 * against the cap: the pool keeps that much less idle, releases at once
 * what no longer fits, and counts a slab mapped past the shared cap as
 * over capacity; given back, the cap is whole again. */
static void test_count_outside(void)
{
    uint64_t now = 1;
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, &now);
    cfg.slab_size = 2 * MIB;
    cfg.max_capacity = 4 * MIB;
    cfg.gc_age_ns = 0;
    regpar_pool_t *pool = test_pool_create(&cfg);
    regpar_pool_stats_t st;
    void *buf[4];
    for (int i = 0; i < 4; i++) {
        now++;
        buf[i] = regpar_pool_alloc(pool, MIB);
        UNIT_REQUIRE(buf[i]);
    }
    for (int i = 0; i < 4; i++) {
        now++;
        UNIT_CHECK(0 == regpar_pool_free(pool, buf[i]));
    }
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 4 * MIB);
    UNIT_CHECK_EQ_U64(st.over_capacity, 0);

    regpar_pool_count_outside(pool, 2 * (int64_t)MIB);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_outside, 2 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_held, 2 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_collected, 2 * MIB);
    regpar_pool_count_outside(pool, 3 * (int64_t)MIB);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_outside, 5 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);

    /* Still served; the slab takes the pool (with what is outside) over
     * the cap, and goes when freed. */
    void *again = regpar_pool_alloc(pool, MIB);
    UNIT_REQUIRE(again);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.over_capacity, 1);
    UNIT_CHECK(0 == regpar_pool_free(pool, again));
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);

    /* Unmapped again: the pool keeps up to the whole cap once more. */
    regpar_pool_count_outside(pool, -5 * (int64_t)MIB);
    for (int i = 0; i < 4; i++) {
        now++;
        buf[i] = regpar_pool_alloc(pool, MIB);
        UNIT_REQUIRE(buf[i]);
    }
    for (int i = 0; i < 4; i++) {
        UNIT_CHECK(0 == regpar_pool_free(pool, buf[i]));
    }
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_outside, 0);
    UNIT_CHECK_EQ_U64(st.bytes_held, 4 * MIB);
    UNIT_CHECK_EQ_U64(st.over_capacity, 1);
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

int main(void)
{
    test_capacity();
    test_tiny_capacity();
    test_collect_by_age();
    test_count_outside();
    return unit_finish("test_pool_capacity");
}
