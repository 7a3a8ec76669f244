/*
 * Random alloc/free sequences checked against a reference table of live
 * buffers.  Every buffer is written over its whole usable size with a
 * pattern of its own and verified before it is freed (and all live ones
 * periodically), so an overlap or a buffer handed out twice shows at once.
 * REGPAR_TEST_SEED picks another sequence; REGPAR_TEST_OPS a longer one.
 */
#include "test_pool_common.h"

#define MAX_LIVE 128

typedef struct live {
    char *p;
    size_t usable;
    uint64_t seed;
} live_t;

typedef struct model {
    regpar_pool_t *pool;
    size_t page, bucket_max;
    live_t live[MAX_LIVE];
    unsigned nlive;
    uint64_t allocs, frees, direct, in_use, next_seed, rng;
    uint64_t clock;
} model_t;

static uint64_t rnd(model_t *m)
{
    m->rng ^= m->rng << 13;
    m->rng ^= m->rng >> 7;
    m->rng ^= m->rng << 17;
    return m->rng;
}

static size_t rnd_below(model_t *m, size_t n)
{
    return n ? (size_t)(rnd(m) % n) : 0;
}

static size_t pick_size(model_t *m)
{
    unsigned r = (unsigned)rnd_below(m, 100);
    if (r < 55) {
        return rnd_below(m, 64 * 1024 + 1);
    }
    if (r < 80) {
        return rnd_below(m, m->bucket_max + 1);
    }
    if (r < 95) { /* next to a bucket boundary */
        size_t s = regpar_pool_bucket_size(m->pool, rnd_below(m, m->bucket_max) + 1);
        return s + rnd_below(m, 3) - 1;
    }
    return m->bucket_max + 1 + rnd_below(m, 3 * m->bucket_max);
}

static void check_stats(model_t *m)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(m->pool, &st);
    UNIT_CHECK_EQ_U64(st.allocs, m->allocs);
    UNIT_CHECK_EQ_U64(st.frees, m->frees);
    UNIT_CHECK_EQ_U64(st.direct_allocs, m->direct);
    UNIT_CHECK_EQ_U64(st.bytes_in_use, m->in_use);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 0);
    test_check_consistent(m->pool);
}

static void do_alloc(model_t *m)
{
    size_t size = pick_size(m);
    size_t align = 0;
    bool aligned = rnd_below(m, 8) == 0;
    if (aligned) {
        align = (size_t)1 << rnd_below(m, 23); /* up to 4M */
    }
    char *p = aligned ? regpar_pool_alloc_aligned(m->pool, size, align)
                      : regpar_pool_alloc(m->pool, size);
    UNIT_REQUIRE(p);
    size_t want_align = align > m->page ? align : m->page;
    UNIT_CHECK(0 == (uintptr_t)p % want_align);
    regpar_buffer_info_t info;
    UNIT_REQUIRE(0 == regpar_pool_buffer_info(m->pool, p, &info));
    size_t usable = info.size;
    /* Buffers sit at multiples of their size from 2M-aligned slabs: an
     * alignment is served by the first bucket whose size it divides, and
     * above 2M only by a direct mapping. */
    size_t expected = want_align > REGPAR_SLAB_ALIGN ? 0 : regpar_pool_bucket_size(m->pool, size);
    while (expected && expected % want_align) {
        expected = regpar_pool_bucket_size(m->pool, expected + 1);
    }
    bool direct = 0 == expected;
    UNIT_CHECK_EQ_U64(usable,
                      direct ? ((size ? size : 1) + m->page - 1) / m->page * m->page : expected);
    UNIT_CHECK(usable >= size && usable % m->page == 0);
    for (unsigned i = 0; i < m->nlive; i++) {
        const live_t *l = &m->live[i];
        if (p < l->p + l->usable && l->p < p + usable) {
            fprintf(stderr, "overlap: new %p+%zu with live %p+%zu\n", (void *)p, usable,
                    (void *)l->p, l->usable);
            unit_failures++;
        }
    }
    live_t *l = &m->live[m->nlive++];
    l->p = p;
    l->usable = usable;
    l->seed = ++m->next_seed;
    test_pattern_fill(p, usable, l->seed);
    m->allocs++;
    m->direct += direct;
    m->in_use += usable;
}

static void verify(const live_t *l)
{
    size_t bad = test_pattern_check(l->p, l->usable, l->seed);
    if (bad != SIZE_MAX) {
        fprintf(stderr, "buffer %p+%zu corrupted at offset %zu\n", (void *)l->p, l->usable, bad);
        unit_failures++;
    }
}

static void do_free(model_t *m)
{
    unsigned i = (unsigned)rnd_below(m, m->nlive);
    live_t l = m->live[i];
    m->live[i] = m->live[--m->nlive];
    verify(&l);
    UNIT_CHECK(0 == regpar_pool_free(m->pool, l.p));
    UNIT_CHECK(!regpar_pool_owns(m->pool, l.p));
    m->frees++;
    m->in_use -= l.usable;
    if (rnd_below(m, 4) == 0) {
        UNIT_CHECK(-1 == regpar_pool_free(m->pool, l.p)); /* double free */
    }
}

static bool is_live_start(const model_t *m, const char *p)
{
    for (unsigned i = 0; i < m->nlive; i++) {
        if (m->live[i].p == p) {
            return true;
        }
    }
    return false;
}

/* Frees of addresses that are not buffers out change nothing. */
static void do_bogus_free(model_t *m)
{
    const live_t *l = &m->live[rnd_below(m, m->nlive)];
    char *inside = l->p + 1 + rnd_below(m, l->usable - 1);
    /* Often a free buffer of the same slab, or the next slab. */
    char *beyond = l->p + l->usable * (1 + rnd_below(m, 4));
    regpar_pool_stats_t before, after;
    regpar_pool_get_stats(m->pool, &before);
    UNIT_CHECK(-1 == regpar_pool_free(m->pool, inside));
    if (!is_live_start(m, beyond)) {
        UNIT_CHECK(-1 == regpar_pool_free(m->pool, beyond));
    }
    regpar_pool_get_stats(m->pool, &after);
    UNIT_CHECK(0 == memcmp(&before, &after, sizeof(before)));
}

static void run_model(const char *name, regpar_pool_config_t *cfg, uint64_t seed, long ops)
{
    static model_t m; /* large: keep it off the stack */
    memset(&m, 0, sizeof(m));
    m.rng = seed | 1;
    m.page = test_page();
    m.bucket_max = cfg->bucket_max;
    cfg->clock = test_clock_fn;
    cfg->clock_arg = &m.clock;
    test_log_t log;
    test_log_reset(&log);
    cfg->log = test_log_fn;
    cfg->log_arg = &log;
    m.pool = test_pool_create(cfg);
    for (long op = 0; op < ops; op++) {
        unsigned r = (unsigned)rnd_below(&m, 100);
        if (r < 50 && m.nlive < MAX_LIVE) {
            do_alloc(&m);
        } else if (r < 92 && m.nlive) {
            do_free(&m);
        } else if (r < 95 && m.nlive) {
            do_bogus_free(&m);
        } else if (r < 99) {
            m.clock += rnd_below(&m, cfg->gc_age_ns);
            regpar_pool_collect(m.pool, false);
        } else {
            regpar_pool_collect(m.pool, true);
        }
        if (op % 128 == 0) {
            check_stats(&m);
        }
        if (op % 2048 == 0) {
            for (unsigned i = 0; i < m.nlive; i++) {
                verify(&m.live[i]);
            }
        }
    }
    while (m.nlive) {
        do_free(&m);
    }
    check_stats(&m);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(m.pool, &st);
    UNIT_CHECK(st.bytes_held <= cfg->max_capacity);
    UNIT_CHECK_EQ_U64(log.count[0], 0);
    regpar_pool_collect(m.pool, true);
    regpar_pool_get_stats(m.pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    UNIT_CHECK_EQ_U64(st.slabs_mapped, st.slabs_released);
    printf("%s: %" PRIu64 " allocs (%" PRIu64 " hits, %" PRIu64 " misses, %" PRIu64
           " direct), %" PRIu64 " slabs, %" PRIu64 " over capacity, %" PRIu64 " bytes collected\n",
           name, st.allocs, st.hits, st.misses, st.direct_allocs, st.slabs_mapped, st.over_capacity,
           st.bytes_collected);
    regpar_pool_destroy(m.pool);
}

int main(void)
{
    const char *env = getenv("REGPAR_TEST_SEED");
    uint64_t seed = env ? strtoull(env, NULL, 0) : 0x5eed2024;
    env = getenv("REGPAR_TEST_OPS");
    long ops = env ? atol(env) : 20000;
    printf("test_pool_model: seed %" PRIu64 " (REGPAR_TEST_SEED), %ld ops per config\n", seed, ops);

    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, NULL);
    cfg.bucket_max = (size_t)256 << 10;
    cfg.slab_size = (size_t)2 << 20;
    cfg.max_capacity = (size_t)8 << 20;
    cfg.gc_age_ns = 1000;
    run_model("factor 2, cap 8M", &cfg, seed, ops);

    test_pool_config(&cfg, NULL, NULL);
    cfg.bucket_factor = 1.5;
    cfg.max_capacity = (size_t)32 << 20;
    cfg.gc_age_ns = 100000;
    run_model("factor 1.5, cap 32M", &cfg, seed + 1, ops);

    test_pool_config(&cfg, NULL, NULL);
    cfg.bucket_min = 8192;
    cfg.bucket_max = (size_t)200 << 10;
    cfg.bucket_factor = 3.0;
    cfg.slab_size = (size_t)2 << 20;
    cfg.max_capacity = (size_t)2 << 20;
    cfg.gc_age_ns = 0;
    run_model("factor 3, cap 2M", &cfg, seed + 2, ops);
    return unit_finish("test_pool_model");
}
