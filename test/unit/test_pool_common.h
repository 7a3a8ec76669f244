/*
 * Shared helpers of the pool unit tests: a captured log, a fake clock, a
 * failure-injecting system-call table and buffer patterns.
 */
#ifndef TEST_POOL_COMMON_H
#define TEST_POOL_COMMON_H

#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "regpar_pool.h"
#include "unit.h"

/* Every message the pool logs, concatenated, with counts per level. */
typedef struct test_log {
    char text[16384];
    size_t len;
    int count[4];
} test_log_t;

static void test_log_fn(void *arg, int level, const char *msg)
{
    test_log_t *log = arg;
    log->count[level < 3 ? level : 3]++;
    int n = snprintf(log->text + log->len, sizeof(log->text) - log->len, "[%d] %s\n", level, msg);
    if (n > 0 && log->len + (size_t)n < sizeof(log->text)) {
        log->len += (size_t)n;
    }
}

static inline void test_log_reset(test_log_t *log)
{
    memset(log, 0, sizeof(*log));
}

/* A clock that only moves when the test says so. */
static uint64_t test_clock_fn(void *arg)
{
    return *(const uint64_t *)arg;
}

/*
 * System calls that fail on demand: fail_from_call..fail_until_call (1-based
 * counts of calls to that function) return the error; the rest are real.
 */
typedef struct test_fault {
    atomic_uint calls;
    unsigned fail_from, fail_until; /* inclusive; 0 = never */
    int error;
    atomic_uint failed;
} test_fault_t;

static test_fault_t test_mmap_fault, test_munmap_fault, test_madvise_fault;
static int test_madvise_only_advice = -1; /* fail only this advice (-1 = any) */

/* Calls from..until (inclusive, 1-based) fail with error. */
static inline void test_fault_arm(test_fault_t *f, int error, unsigned from, unsigned until)
{
    f->error = error;
    f->fail_from = from;
    f->fail_until = until;
}

static bool test_fault_hit(test_fault_t *f)
{
    unsigned n = atomic_fetch_add(&f->calls, 1) + 1;
    if (f->fail_from && n >= f->fail_from && n <= f->fail_until) {
        atomic_fetch_add(&f->failed, 1);
        errno = f->error;
        return true;
    }
    return false;
}

static void *test_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    if (test_fault_hit(&test_mmap_fault)) {
        return MAP_FAILED;
    }
    return mmap(addr, len, prot, flags, fd, (off_t)off);
}

static int test_munmap(void *addr, size_t len)
{
    if (test_fault_hit(&test_munmap_fault)) {
        return -1;
    }
    return munmap(addr, len);
}

static int test_madvise(void *addr, size_t len, int advice)
{
    if ((test_madvise_only_advice < 0 || advice == test_madvise_only_advice) &&
        test_fault_hit(&test_madvise_fault)) {
        return -1;
    }
    return madvise(addr, len, advice);
}

static const regpar_sys_ops_t test_sys_ops = {test_mmap, test_munmap, test_madvise};

static inline void test_faults_reset(void)
{
    memset(&test_mmap_fault, 0, sizeof(test_mmap_fault));
    memset(&test_munmap_fault, 0, sizeof(test_munmap_fault));
    memset(&test_madvise_fault, 0, sizeof(test_madvise_fault));
    test_madvise_only_advice = -1;
}

static inline size_t test_page(void)
{
    return (size_t)sysconf(_SC_PAGESIZE);
}

/* A pool configuration small enough for tests, logging into log and
 * reading time from *clock (NULL = the real clock). */
static inline void test_pool_config(regpar_pool_config_t *cfg, test_log_t *log, uint64_t *clock)
{
    regpar_pool_config_defaults(cfg);
    cfg->bucket_min = 4096;
    cfg->bucket_max = (size_t)1 << 20;
    cfg->slab_size = (size_t)4 << 20;
    cfg->max_capacity = (size_t)64 << 20;
    cfg->hugepages = false;
    if (log) {
        cfg->log = test_log_fn;
        cfg->log_arg = log;
    }
    if (clock) {
        cfg->clock = test_clock_fn;
        cfg->clock_arg = clock;
    }
}

static inline regpar_pool_t *test_pool_create(const regpar_pool_config_t *cfg)
{
    regpar_pool_t *pool = NULL;
    char err[256] = "";
    int rc = regpar_pool_create(cfg, &pool, err, sizeof(err));
    if (rc != 0) {
        fprintf(stderr, "pool creation failed: %s\n", err);
    }
    UNIT_REQUIRE(0 == rc && pool);
    return pool;
}

/* Word i of a buffer tagged with seed: position-dependent so that a shifted
 * or overlapping buffer shows.  Buffers are page multiples, hence words. */
static inline uint64_t test_pattern_word(uint64_t seed, size_t i)
{
    uint64_t x = seed * 0x9E3779B97F4A7C15ULL + i * 0xBF58476D1CE4E5B9ULL;
    return x ^ (x >> 29);
}

static inline void test_pattern_fill(void *p, size_t len, uint64_t seed)
{
    uint64_t *w = p;
    for (size_t i = 0; i < len / 8; i++) {
        w[i] = test_pattern_word(seed, i);
    }
}

/* Byte offset of the first wrong word, or SIZE_MAX when the pattern is
 * intact. */
static inline size_t test_pattern_check(const void *p, size_t len, uint64_t seed)
{
    const uint64_t *w = p;
    for (size_t i = 0; i < len / 8; i++) {
        if (w[i] != test_pattern_word(seed, i)) {
            return 8 * i;
        }
    }
    return SIZE_MAX;
}

/* Counters that must hold whatever happened. */
static inline void test_check_consistent(const regpar_pool_t *pool)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.allocs, st.hits + st.misses + st.direct_allocs);
    UNIT_CHECK(st.slabs_mapped >= st.slabs_released);
    UNIT_CHECK(st.bytes_peak >= st.bytes_held);
    UNIT_CHECK(st.bytes_in_use_peak >= st.bytes_in_use);
    UNIT_CHECK(st.bytes_held >= st.bytes_in_use);
    UNIT_CHECK(st.allocs >= st.frees);
}

#endif /* TEST_POOL_COMMON_H */
