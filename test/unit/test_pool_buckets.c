/*
 * Bucket rounding at every boundary, size 0, alignment, ownership queries,
 * rejected frees, the report, and invalid configurations.
 */
#include <math.h>

#include "test_pool_common.h"

#define KIB ((size_t)1024)
#define MIB ((size_t)1 << 20)

typedef struct bucket_case {
    const char *name;
    size_t min, max;
    double factor;
    size_t expected_kib[64]; /* bucket sizes in KiB, computed by hand */
    unsigned n;
} bucket_case_t;

static const bucket_case_t cases[] = {
    {"factor 2, 4K..64M",
     4 * KIB,
     64 * MIB,
     2.0,
     {4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536},
     15},
    /* 4K * 1.5^i rounded up to pages: 6144 -> 8K, 9216 -> 12K, 13824 -> 16K,
     * 20736 -> 24K, ..., 104976 -> 104K, ...; the last is clamped to 1M. */
    {"factor 1.5, 4K..1M",
     4 * KIB,
     MIB,
     1.5,
     {4, 8, 12, 16, 24, 32, 48, 72, 104, 156, 232, 348, 520, 780, 1024},
     15},
    /* 8K, 24K, 72K, then 216K clamped to bucket_max 200K. */
    {"factor 3, 8K..200K", 8 * KIB, 200 * KIB, 3.0, {8, 24, 72, 200}, 4},
    /* 1.1 grows by less than a page per step: every page multiple. */
    {"factor 1.1, 4K..64K",
     4 * KIB,
     64 * KIB,
     1.1,
     {4, 8, 12, 16, 20, 24, 28, 32, 36, 40, 44, 48, 52, 56, 60, 64},
     16},
};

/* The request size s must be served from expected (0 = direct), both as
 * reported by regpar_pool_bucket_size and by a real allocation. */
static void check_serves(regpar_pool_t *pool, const char *name, size_t s, size_t expected)
{
    size_t got = regpar_pool_bucket_size(pool, s);
    if (got != expected) {
        fprintf(stderr, "%s: size %zu: bucket %zu, expected %zu\n", name, s, got, expected);
        unit_failures++;
    }
    void *p = regpar_pool_alloc(pool, s);
    UNIT_REQUIRE(p);
    UNIT_CHECK(0 == (uintptr_t)p % test_page());
    regpar_buffer_info_t info;
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, p, &info));
    size_t usable = expected ? expected : (s + test_page() - 1) / test_page() * test_page();
    UNIT_CHECK_EQ_U64(info.size, usable);
    UNIT_CHECK(info.base == p);
    UNIT_CHECK(!info.registered);
    /* The whole usable size is writable. */
    memset(p, 0xA5, usable);
    UNIT_CHECK(0 == regpar_pool_free(pool, p));
}

static void test_rounding(void)
{
    size_t page = test_page();
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        const bucket_case_t *bc = &cases[c];
        regpar_pool_config_t cfg;
        test_pool_config(&cfg, NULL, NULL);
        cfg.bucket_min = bc->min;
        cfg.bucket_max = bc->max;
        cfg.bucket_factor = bc->factor;
        cfg.max_capacity = 256 * MIB;
        regpar_pool_t *pool = test_pool_create(&cfg);
        size_t first = bc->expected_kib[0] * KIB;
        for (unsigned i = 0; i < bc->n; i++) {
            size_t s = bc->expected_kib[i] * KIB;
            size_t next = i + 1 < bc->n ? bc->expected_kib[i + 1] * KIB : 0;
            check_serves(pool, bc->name, s - 1, s);
            check_serves(pool, bc->name, s, s);
            check_serves(pool, bc->name, s + 1, next);
        }
        check_serves(pool, bc->name, 0, first);
        check_serves(pool, bc->name, 1, first);
        check_serves(pool, bc->name, page - 1, first);
        check_serves(pool, bc->name, page, first);
        check_serves(pool, bc->name, page + 1, first > page ? first : bc->expected_kib[1] * KIB);
        check_serves(pool, bc->name, bc->max - 1, bc->max);
        check_serves(pool, bc->name, bc->max, bc->max);
        check_serves(pool, bc->name, bc->max + 1, 0);
        check_serves(pool, bc->name, bc->max + page + 1, 0);
        test_check_consistent(pool);
        regpar_pool_stats_t st;
        regpar_pool_get_stats(pool, &st);
        UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
        UNIT_CHECK_EQ_U64(st.allocs, st.frees);
        UNIT_CHECK_EQ_U64(st.direct_allocs, 3); /* bucket_max + 1 twice, + page + 1 */
        regpar_pool_destroy(pool);
    }
}

static void test_aligned(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    regpar_pool_t *pool = test_pool_create(&cfg);
    static const size_t aligns[] = {0,         1,   4096,    8192,    64 * KIB,
                                    256 * KIB, MIB, 2 * MIB, 4 * MIB, 64 * MIB};
    static const size_t sizes[] = {1, 4096, 5000, 100 * KIB, MIB, 3 * MIB};
    for (size_t a = 0; a < sizeof(aligns) / sizeof(aligns[0]); a++) {
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            void *p = regpar_pool_alloc_aligned(pool, sizes[s], aligns[a]);
            UNIT_REQUIRE(p);
            size_t want = aligns[a] > test_page() ? aligns[a] : test_page();
            if ((uintptr_t)p % want) {
                fprintf(stderr, "align %zu size %zu: got %p\n", aligns[a], sizes[s], p);
                unit_failures++;
            }
            regpar_buffer_info_t info;
            UNIT_CHECK(0 == regpar_pool_buffer_info(pool, p, &info));
            UNIT_CHECK(info.size >= sizes[s]);
            memset(p, 1, sizes[s]);
            UNIT_CHECK(0 == regpar_pool_free(pool, p));
        }
    }
    UNIT_CHECK(0 == log.count[0]);
    /* Not a power of two, or beyond 1G: refused with a message. */
    UNIT_CHECK(NULL == regpar_pool_alloc_aligned(pool, 4096, 3 * 4096));
    UNIT_CHECK(NULL == regpar_pool_alloc_aligned(pool, 4096, (size_t)2 << 30));
    UNIT_CHECK(1 == log.count[0]);
    UNIT_CHECK(NULL != strstr(log.text, "alignment"));
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 2);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    test_check_consistent(pool);
    regpar_pool_destroy(pool);
}

static void test_ownership_and_bad_frees(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    regpar_pool_t *pool = test_pool_create(&cfg);
    size_t page = test_page();
    char *a = regpar_pool_alloc(pool, 3 * page); /* bucket 4 pages */
    char *b = regpar_pool_alloc(pool, 3 * page);
    char *d = regpar_pool_alloc(pool, 3 * MIB); /* direct */
    UNIT_REQUIRE(a && b && d);
    UNIT_CHECK(regpar_pool_owns(pool, a));
    UNIT_CHECK(regpar_pool_owns(pool, d));
    UNIT_CHECK(!regpar_pool_owns(pool, a + page));
    UNIT_CHECK(!regpar_pool_owns(pool, NULL));
    regpar_pool_stats_t before, after;
    regpar_pool_get_stats(pool, &before);

    int on_stack;
    void *heap = malloc(64);
    const void *bogus[] = {a + 1,
                           a + page,
                           a - page,
                           d + page,
                           d + 1,
                           &on_stack,
                           heap,
                           (void *)(uintptr_t)1,
                           (void *)(UINTPTR_MAX & ~(uintptr_t)4095)};
    for (size_t i = 0; i < sizeof(bogus) / sizeof(bogus[0]); i++) {
        UNIT_CHECK(-1 == regpar_pool_free(pool, (void *)bogus[i]));
        regpar_buffer_info_t info;
        UNIT_CHECK(-1 == regpar_pool_buffer_info(pool, bogus[i], &info));
    }
    UNIT_CHECK(-1 == regpar_pool_free(pool, NULL));
    free(heap);
    regpar_pool_get_stats(pool, &after);
    UNIT_CHECK(0 == memcmp(&before, &after, sizeof(before)));
    UNIT_CHECK(1 == log.count[1]); /* one warning, not one per bad free */
    UNIT_CHECK(NULL != strstr(log.text, "double free or foreign pointer"));

    /* Double frees, including of a direct mapping already unmapped. */
    UNIT_CHECK(0 == regpar_pool_free(pool, a));
    UNIT_CHECK(-1 == regpar_pool_free(pool, a));
    UNIT_CHECK(!regpar_pool_owns(pool, a));
    UNIT_CHECK(0 == regpar_pool_free(pool, d));
    UNIT_CHECK(-1 == regpar_pool_free(pool, d));
    /* The surviving buffer is intact and the freed one is handed out again
     * (LIFO: the most recently freed buffer is the warmest). */
    memset(b, 7, 3 * page);
    char *a2 = regpar_pool_alloc(pool, 3 * page);
    UNIT_CHECK(a2 == a);
    UNIT_CHECK(b[0] == 7 && b[3 * page - 1] == 7);
    UNIT_CHECK(0 == regpar_pool_free(pool, a2));
    UNIT_CHECK(0 == regpar_pool_free(pool, b));

    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.allocs, 4);
    UNIT_CHECK_EQ_U64(st.frees, 4);
    UNIT_CHECK_EQ_U64(st.direct_allocs, 1);
    UNIT_CHECK_EQ_U64(st.misses, 1); /* one slab served a, b and a2 */
    UNIT_CHECK_EQ_U64(st.hits, 2);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, 0);
    UNIT_CHECK_EQ_U64(st.bytes_in_use_peak, 4 * page + 4 * page + 3 * MIB);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, 2);
    UNIT_CHECK_EQ_U64(st.slabs_released, 1); /* the direct one */
    UNIT_CHECK_EQ_U64(st.bytes_held, 2 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_peak, 2 * MIB + 3 * MIB);
    regpar_pool_reset_peaks(pool);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_peak, 2 * MIB);
    UNIT_CHECK_EQ_U64(st.bytes_in_use_peak, 0);

    char report[4096];
    int n = regpar_pool_report(pool, report, sizeof(report));
    UNIT_CHECK(n > 0 && (size_t)n < sizeof(report));
    UNIT_CHECK(NULL != strstr(report, "bucket    16K: 1 slab(s) (1 wholly free), 128 buffer(s)"));
    UNIT_CHECK(regpar_pool_report(pool, NULL, 0) == n);
    char tiny[8];
    UNIT_CHECK(regpar_pool_report(pool, tiny, sizeof(tiny)) == n);
    UNIT_CHECK(strlen(tiny) == sizeof(tiny) - 1);
    regpar_pool_destroy(pool);
}

static void test_destroy_with_leaks(void)
{
    regpar_pool_config_t cfg;
    test_log_t log;
    test_log_reset(&log);
    test_pool_config(&cfg, &log, NULL);
    cfg.verbose = 1;
    regpar_pool_t *pool = test_pool_create(&cfg);
    UNIT_REQUIRE(regpar_pool_alloc(pool, 4096));
    UNIT_REQUIRE(regpar_pool_alloc(pool, 4 * MIB));
    regpar_pool_destroy(pool);
    UNIT_CHECK(NULL != strstr(log.text, "2 buffer(s)"));
}

typedef struct bad_case {
    const char *field;
    void (*mutate)(regpar_pool_config_t *cfg);
} bad_case_t;

static void zero_min(regpar_pool_config_t *c)
{
    c->bucket_min = 0;
}
static void odd_min(regpar_pool_config_t *c)
{
    c->bucket_min = 4096 + 100;
}
static void min_above_max(regpar_pool_config_t *c)
{
    c->bucket_min = 2 * c->bucket_max;
}
static void zero_max(regpar_pool_config_t *c)
{
    c->bucket_max = 0;
}
static void odd_max(regpar_pool_config_t *c)
{
    c->bucket_max = ((size_t)1 << 20) - 1;
}
static void huge_max(regpar_pool_config_t *c)
{
    c->bucket_max = (size_t)1 << 50;
}
static void negative_as_size(regpar_pool_config_t *c)
{
    c->bucket_max = (size_t)-1; /* "-1" through an unsigned parser */
}
static void factor_one(regpar_pool_config_t *c)
{
    c->bucket_factor = 1.0;
}
static void factor_negative(regpar_pool_config_t *c)
{
    c->bucket_factor = -2.0;
}
static void factor_nan(regpar_pool_config_t *c)
{
    c->bucket_factor = NAN;
}
static void factor_too_coarse(regpar_pool_config_t *c)
{
    c->bucket_factor = 17.0;
}
static void factor_infinite(regpar_pool_config_t *c)
{
    c->bucket_factor = INFINITY;
}
static void factor_too_fine(regpar_pool_config_t *c)
{
    c->bucket_min = 4096;
    c->bucket_max = (size_t)64 << 20;
    c->bucket_factor = 1.05;
}
static void slab_zero(regpar_pool_config_t *c)
{
    c->slab_size = 0;
}
static void slab_not_2m(regpar_pool_config_t *c)
{
    c->slab_size = 3 << 20;
}
static void slab_small(regpar_pool_config_t *c)
{
    c->slab_size = 1 << 20;
}
static void cap_zero(regpar_pool_config_t *c)
{
    c->max_capacity = 0;
}
static void cap_below_slab(regpar_pool_config_t *c)
{
    c->max_capacity = (2 << 20) - 4096;
}
static void numa_bad(regpar_pool_config_t *c)
{
    c->numa_node = -2;
}
static void numa_huge(regpar_pool_config_t *c)
{
    c->numa_node = 5000;
}

static void test_invalid_configs(void)
{
    static const bad_case_t bad[] = {
        {"bucket_min", zero_min},
        {"bucket_min", odd_min},
        {"bucket_min", min_above_max},
        {"bucket_max", zero_max},
        {"bucket_max", odd_max},
        {"bucket_max", huge_max},
        {"bucket_max", negative_as_size},
        {"bucket_factor", factor_one},
        {"bucket_factor", factor_negative},
        {"bucket_factor", factor_nan},
        {"bucket_factor", factor_too_fine},
        {"bucket_factor", factor_too_coarse},
        {"bucket_factor", factor_infinite},
        {"slab_size", slab_zero},
        {"slab_size", slab_not_2m},
        {"slab_size", slab_small},
        {"max_capacity", cap_zero},
        {"max_capacity", cap_below_slab},
        {"numa_node", numa_bad},
        {"numa_node", numa_huge},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        regpar_pool_config_t cfg;
        test_pool_config(&cfg, NULL, NULL);
        bad[i].mutate(&cfg);
        char err[256] = "";
        int rc = regpar_pool_config_check(&cfg, 4096, err, sizeof(err));
        bool named = NULL != strstr(err, bad[i].field) && NULL != strstr(err, "valid");
        if (rc != -1 || !named) {
            fprintf(stderr, "case %zu (%s): rc %d, message '%s'\n", i, bad[i].field, rc, err);
            unit_failures++;
        }
        regpar_pool_t *pool = (regpar_pool_t *)&cfg; /* must be overwritten */
        err[0] = '\0';
        UNIT_CHECK(-1 == regpar_pool_create(&cfg, &pool, err, sizeof(err)));
        UNIT_CHECK(NULL == pool);
        UNIT_CHECK(NULL != strstr(err, bad[i].field));
    }
    /* The defaults and the boundary values are valid. */
    regpar_pool_config_t cfg;
    char err[256];
    regpar_pool_config_defaults(&cfg);
    UNIT_CHECK(0 == regpar_pool_config_check(&cfg, 4096, err, sizeof(err)));
    cfg.bucket_min = cfg.bucket_max = 4096;
    cfg.slab_size = 2 << 20;
    cfg.max_capacity = 2 << 20;
    cfg.numa_node = 0;
    cfg.bucket_factor = 1.0000001;
    UNIT_CHECK(0 == regpar_pool_config_check(&cfg, 4096, err, sizeof(err)));
    cfg.bucket_factor = 16.0;
    UNIT_CHECK(0 == regpar_pool_config_check(&cfg, 4096, err, sizeof(err)));
    /* Page size is a parameter: 64K pages make 4K buckets invalid. */
    regpar_pool_config_defaults(&cfg);
    cfg.bucket_min = 4096;
    UNIT_CHECK(-1 == regpar_pool_config_check(&cfg, 65536, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "bucket_min") && NULL != strstr(err, "64K"));
    cfg.bucket_min = 65536;
    UNIT_CHECK(0 == regpar_pool_config_check(&cfg, 65536, err, sizeof(err)));
    UNIT_CHECK(-1 == regpar_pool_config_check(&cfg, 3000, err, sizeof(err)));
}

int main(void)
{
    test_rounding();
    test_aligned();
    test_ownership_and_bad_frees();
    test_destroy_with_leaks();
    test_invalid_configs();
    return unit_finish("test_pool_buckets");
}
