/*
 * Failure injection through cfg->sys: every failing mmap, munmap and madvise
 * leaves the pool consistent, logs once per episode, and the pool works again
 * once the failures stop.  Also NUMA binding failures.
 */
#include "test_pool_common.h"

#define MIB ((size_t)1 << 20)

static void make_pool(regpar_pool_config_t *cfg, test_log_t *log, regpar_pool_t **pool)
{
    test_faults_reset();
    test_log_reset(log);
    test_pool_config(cfg, log, NULL);
    cfg->sys = &test_sys_ops;
    *pool = test_pool_create(cfg);
}

static void stats(const regpar_pool_t *pool, regpar_pool_stats_t *st)
{
    regpar_pool_get_stats(pool, st);
}

static void test_mmap_failure_episode(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    regpar_pool_t *pool;
    make_pool(&cfg, &log, &pool);
    regpar_pool_stats_t st;

    test_fault_arm(&test_mmap_fault, ENOMEM, 1, 1000);
    for (int i = 0; i < 10; i++) {
        UNIT_CHECK(NULL == regpar_pool_alloc(pool, 4096));
        UNIT_CHECK(NULL == regpar_pool_alloc(pool, 8 * MIB)); /* direct */
    }
    stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 20);
    UNIT_CHECK_EQ_U64(st.allocs, 0);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, 0);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(log.count[0], 1); /* one message, not twenty */
    UNIT_CHECK(NULL != strstr(log.text, "mmap"));
    UNIT_CHECK(NULL != strstr(log.text, strerror(ENOMEM)));

    /* The failures stop: everything works. */
    test_mmap_fault.fail_until = atomic_load(&test_mmap_fault.calls);
    void *a = regpar_pool_alloc(pool, 4096), *d = regpar_pool_alloc(pool, 8 * MIB);
    UNIT_REQUIRE(a && d);
    memset(a, 1, 4096);
    memset(d, 2, 8 * MIB);
    UNIT_CHECK(0 == regpar_pool_free(pool, a));
    UNIT_CHECK(0 == regpar_pool_free(pool, d));
    stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.allocs, 2);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);

    /* A new episode is reported again. */
    test_mmap_fault.fail_from = atomic_load(&test_mmap_fault.calls) + 1;
    test_mmap_fault.fail_until = test_mmap_fault.fail_from + 100;
    UNIT_CHECK(NULL == regpar_pool_alloc(pool, 16 * MIB));
    UNIT_CHECK_EQ_U64(log.count[0], 2);
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

/*
 * A fixed workload across buckets, slab growth and direct mappings.  Returns
 * the number of allocations that failed; every buffer that was served is
 * checked and freed.
 */
static int run_workload(regpar_pool_t *pool)
{
    static const size_t sizes[] = {4096,    12288,   4096,    65536,   3 * MIB, 200000,
                                   1 << 20, 4096,    5 * MIB, 1 << 20, 1 << 20, 8192,
                                   1 << 20, 1 << 20, 1,       1 << 20};
    enum { N = sizeof(sizes) / sizeof(sizes[0]) };
    void *p[3][N];
    int failed = 0;
    for (int round = 0; round < 3; round++) {
        for (int i = 0; i < N; i++) {
            p[round][i] = regpar_pool_alloc(pool, sizes[i]);
            if (!p[round][i]) {
                failed++;
                continue;
            }
            test_pattern_fill(p[round][i], 4096, (uint64_t)(round * N + i));
        }
        /* Keep round 0 out across the others, free the rest at once. */
        for (int i = 0; round > 0 && i < N; i++) {
            if (p[round][i]) {
                UNIT_CHECK(SIZE_MAX ==
                           test_pattern_check(p[round][i], 4096, (uint64_t)(round * N + i)));
                UNIT_CHECK(0 == regpar_pool_free(pool, p[round][i]));
            }
        }
        regpar_pool_collect(pool, 1 == round);
    }
    for (int i = 0; i < N; i++) {
        if (p[0][i]) {
            UNIT_CHECK(SIZE_MAX == test_pattern_check(p[0][i], 4096, (uint64_t)i));
            UNIT_CHECK(0 == regpar_pool_free(pool, p[0][i]));
        }
    }
    return failed;
}

static void check_after_workload(regpar_pool_t *pool, int failed)
{
    regpar_pool_stats_t st;
    stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.alloc_failures, failed);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    UNIT_CHECK_EQ_U64(st.allocs, st.frees);
    UNIT_CHECK(st.bytes_held <= st.bytes_peak);
    test_check_consistent(pool);
    regpar_pool_collect(pool, true);
    stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, st.slabs_released);
}

/* Fail the Nth mmap only, for every N the workload reaches. */
static void test_nth_mmap(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    regpar_pool_t *pool;
    make_pool(&cfg, &log, &pool);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    unsigned total = atomic_load(&test_mmap_fault.calls);
    regpar_pool_destroy(pool);
    UNIT_CHECK(total >= 8);
    for (unsigned n = 1; n <= total; n++) {
        make_pool(&cfg, &log, &pool);
        test_fault_arm(&test_mmap_fault, ENOMEM, n, n);
        int failed = run_workload(pool);
        /* One failed mmap is exactly one failed allocation. */
        UNIT_CHECK_EQ_U64(failed, 1);
        UNIT_CHECK_EQ_U64(atomic_load(&test_mmap_fault.failed), 1);
        UNIT_CHECK_EQ_U64(log.count[0], 1);
        check_after_workload(pool, failed);
        regpar_pool_destroy(pool);
    }
}

/* A failed munmap (trim or release) is a warning: accounting moves on. */
static void test_munmap_failures(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    regpar_pool_t *pool;
    make_pool(&cfg, &log, &pool);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    regpar_pool_collect(pool, true);
    unsigned total = atomic_load(&test_munmap_fault.calls);
    regpar_pool_destroy(pool);
    for (unsigned n = 1; n <= total; n += 3) {
        make_pool(&cfg, &log, &pool);
        test_fault_arm(&test_munmap_fault, EINVAL, n, n + 2);
        UNIT_CHECK_EQ_U64(run_workload(pool), 0);
        check_after_workload(pool, 0);
        if (atomic_load(&test_munmap_fault.failed)) {
            UNIT_CHECK_EQ_U64(log.count[1], 1);
            UNIT_CHECK(NULL != strstr(log.text, "munmap"));
        }
        UNIT_CHECK_EQ_U64(log.count[0], 0);
        regpar_pool_destroy(pool);
    }
}

static void test_madvise_failures(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    regpar_pool_t *pool;
    regpar_pool_stats_t st;

    /* Transparent huge pages refused: a warning, slabs still served. */
    test_faults_reset();
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    cfg.sys = &test_sys_ops;
    cfg.hugepages = true;
    pool = test_pool_create(&cfg);
    test_madvise_only_advice = MADV_HUGEPAGE;
    test_fault_arm(&test_madvise_fault, EINVAL, 1, 1000);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    UNIT_CHECK(atomic_load(&test_madvise_fault.failed) > 1);
    UNIT_CHECK_EQ_U64(log.count[0], 0);
    UNIT_CHECK_EQ_U64(log.count[1], 1);
    UNIT_CHECK(NULL != strstr(log.text, "MADV_HUGEPAGE"));
    check_after_workload(pool, 0);
    regpar_pool_destroy(pool);

    /* Pre-faulting out of memory: the allocation fails, nothing leaks. */
    make_pool(&cfg, &log, &pool);
    test_madvise_only_advice = MADV_POPULATE_WRITE;
    test_fault_arm(&test_madvise_fault, ENOMEM, 1, 2);
    UNIT_CHECK(NULL == regpar_pool_alloc(pool, 4096));
    UNIT_CHECK(NULL == regpar_pool_alloc(pool, 4 * MIB));
    stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, 0);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 2);
    UNIT_CHECK_EQ_U64(log.count[0], 1);
    UNIT_CHECK(NULL != strstr(log.text, "pre-faulting"));
    /* mmap'd, then unmapped on the failure: as many unmaps as maps (the
     * over-map trims count as unmaps of their own). */
    unsigned maps = atomic_load(&test_mmap_fault.calls);
    UNIT_CHECK_EQ_U64(maps, 2);
    UNIT_CHECK(atomic_load(&test_munmap_fault.calls) >= maps);
    void *p = regpar_pool_alloc(pool, 4096);
    UNIT_CHECK(p != NULL);
    UNIT_CHECK(0 == regpar_pool_free(pool, p));
    regpar_pool_destroy(pool);

    /* A kernel without MADV_POPULATE_WRITE: pages are touched instead. */
    make_pool(&cfg, &log, &pool);
    test_madvise_only_advice = MADV_POPULATE_WRITE;
    test_fault_arm(&test_madvise_fault, EINVAL, 1, 1000);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    UNIT_CHECK(atomic_load(&test_madvise_fault.failed) > 1);
    UNIT_CHECK_EQ_U64(log.count[0] + log.count[1], 0);
    check_after_workload(pool, 0);
    regpar_pool_destroy(pool);
}

static void test_numa(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    regpar_pool_t *pool;
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    cfg.numa_node = 0; /* exists everywhere; mbind may still be refused */
    pool = test_pool_create(&cfg);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    UNIT_CHECK(log.count[1] <= 1);
    UNIT_CHECK_EQ_U64(log.count[0], 0);
    regpar_pool_destroy(pool);

    test_log_reset(&log);
    cfg.numa_node = 1000; /* no such node: a warning, not an error */
    pool = test_pool_create(&cfg);
    UNIT_CHECK_EQ_U64(run_workload(pool), 0);
    UNIT_CHECK_EQ_U64(log.count[1], 1);
    UNIT_CHECK(NULL != strstr(log.text, "numa_node"));
    UNIT_CHECK_EQ_U64(log.count[0], 0);
    check_after_workload(pool, 0);
    regpar_pool_destroy(pool);
}

int main(void)
{
    test_mmap_failure_episode();
    test_nth_mmap();
    test_munmap_failures();
    test_madvise_failures();
    test_numa();
    return unit_finish("test_pool_faults");
}
