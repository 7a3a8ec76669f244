/*
 * The registration engine with the backends that need no network: names
 * and configuration checks, chunk geometry (multiples, remainders, one
 * chunk, unaligned starts and tails, more threads than chunks), backend pin
 * (the kernel's VmLck grows by exactly the region and returns to its
 * baseline), backend none with pre-faulting (mincore sees the pages), the
 * parallel policy and concurrent callers.
 */
#include "reg_test_util.h"

#include <pthread.h>
#include <sched.h>

#define MiB ((size_t)1 << 20)

/* What reg_parallel=auto sees of the rest of the machine: tests must not
 * depend on what else runs while they do. */
static unsigned busy_threads;

static unsigned fake_busy_threads(void)
{
    return busy_threads;
}

static const regpar_sys_ops_t fake_load = {.busy_threads_fn = fake_busy_threads};

static regpar_reg_engine_t *make_engine(regpar_reg_backend_t backend,
                                        regpar_reg_parallel_t parallel, unsigned threads,
                                        size_t chunk, size_t threshold, capture_t *cap)
{
    regpar_reg_config_t cfg;
    reg_test_config(&cfg, backend, parallel, threads, chunk, threshold, cap);
    cfg.sys = &fake_load;
    return reg_test_engine(&cfg);
}

/* ------------------------------------------------------------------------ */

static void test_names(void)
{
    regpar_reg_backend_t b;
    regpar_reg_parallel_t p;
    const char *names[] = {"auto", "none", "pin", "ofi", "verbs"};
    for (int i = 0; i < 5; i++) {
        UNIT_CHECK(0 == regpar_reg_backend_parse(names[i], &b));
        UNIT_CHECK(0 == strcmp(names[i], regpar_reg_backend_name(b)));
    }
    UNIT_CHECK(0 == regpar_reg_backend_parse("PiN", &b) && REGPAR_REG_PIN == b);
    UNIT_CHECK(0 == regpar_reg_backend_parse("Verbs", &b) && REGPAR_REG_VERBS == b);
    UNIT_CHECK(-1 == regpar_reg_backend_parse("rdma", &b));
    UNIT_CHECK(-1 == regpar_reg_backend_parse("", &b));
    UNIT_CHECK(-1 == regpar_reg_backend_parse(NULL, &b));
    UNIT_CHECK(-1 == regpar_reg_backend_parse("pin ", &b));
    UNIT_CHECK(0 == regpar_reg_parallel_parse("ON", &p) && REGPAR_PAR_ON == p);
    UNIT_CHECK(0 == regpar_reg_parallel_parse("off", &p) && REGPAR_PAR_OFF == p);
    UNIT_CHECK(0 == regpar_reg_parallel_parse("Auto", &p) && REGPAR_PAR_AUTO == p);
    UNIT_CHECK(-1 == regpar_reg_parallel_parse("yes", &p));
    UNIT_CHECK(0 == strcmp("on", regpar_reg_parallel_name(REGPAR_PAR_ON)));

    regpar_reg_config_t cfg;
    regpar_reg_config_defaults(&cfg);
    UNIT_CHECK(REGPAR_REG_AUTO == cfg.backend && REGPAR_PAR_AUTO == cfg.parallel);
    UNIT_CHECK(cfg.prefault);
    UNIT_CHECK(cfg.chunk_size > 0 && cfg.chunk_size < REGPAR_REG_MAX_SAFE_CHUNK_SIZE);
    UNIT_CHECK(0 == cfg.chunk_size % test_page_size());

    capture_t cap = {0};
    cfg.log = capture_log;
    cfg.log_arg = &cap;
    UNIT_CHECK(0 == regpar_reg_config_set_parallel(&cfg, "off") && REGPAR_PAR_OFF == cfg.parallel);
    UNIT_CHECK(-1 == regpar_reg_config_set_parallel(&cfg, "sometimes"));
    UNIT_CHECK(REGPAR_PAR_AUTO == cfg.parallel);
    UNIT_CHECK(NULL != capture_find(&cap, "'sometimes'", "mpool_regpar_reg_parallel",
                                    "auto, on or off", NULL));
    UNIT_CHECK(0 == regpar_reg_config_set_backend(&cfg, "pin") && REGPAR_REG_PIN == cfg.backend);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 1);
}

static void test_invalid_config(void)
{
    regpar_reg_config_t cfg;
    regpar_reg_engine_t *engine = (regpar_reg_engine_t *)1;
    char err[512];

    regpar_reg_config_defaults(&cfg);
    cfg.chunk_size = 0;
    UNIT_CHECK(-1 == regpar_reg_engine_create(&cfg, &engine, err, sizeof(err)));
    UNIT_CHECK(NULL == engine);
    UNIT_CHECK(NULL != strstr(err, "mpool_regpar_reg_chunk_size"));

    cfg.chunk_size = test_page_size() + 100;
    UNIT_CHECK(-1 == regpar_reg_engine_create(&cfg, &engine, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "multiple of the page size"));

    /* too many threads is not fatal: capped, with a warning */
    regpar_reg_config_defaults(&cfg);
    capture_t cap = {0};
    cfg.backend = REGPAR_REG_NONE;
    cfg.threads = REGPAR_REG_MAX_THREADS + 100;
    cfg.log = capture_log;
    cfg.log_arg = &cap;
    UNIT_CHECK(0 == regpar_reg_engine_create(&cfg, &engine, err, sizeof(err)));
    UNIT_CHECK_EQ_U64(regpar_reg_engine_threads(engine), REGPAR_REG_MAX_THREADS);
    UNIT_CHECK(NULL != capture_find(&cap, "mpool_regpar_reg_threads=164 is above 64", NULL));
    regpar_reg_engine_destroy(engine);

    regpar_reg_config_defaults(&cfg);
    cfg.backend = (regpar_reg_backend_t)42;
    UNIT_CHECK(-1 == regpar_reg_engine_create(&cfg, &engine, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "mpool_regpar_reg_backend"));

    regpar_reg_config_defaults(&cfg);
    cfg.parallel = (regpar_reg_parallel_t)42;
    UNIT_CHECK(-1 == regpar_reg_engine_create(&cfg, &engine, err, sizeof(err)));
    UNIT_CHECK(NULL != strstr(err, "mpool_regpar_reg_parallel"));
}

/* ------------------------------------------------------------------------ */
/* Chunk geometry, checked against a walk that cuts at the next multiple of
 * the chunk size counted from the page holding the start. */

static void check_chunks(const regpar_reg_region_t *region, void *addr, size_t len, size_t chunk)
{
    size_t page = test_page_size();
    uintptr_t base = (uintptr_t)addr & ~(uintptr_t)(page - 1);
    uintptr_t cursor = (uintptr_t)addr, end = (uintptr_t)addr + len;
    size_t n = 0;
    while (cursor < end) {
        uintptr_t boundary = base + ((cursor - base) / chunk + 1) * chunk;
        uintptr_t stop = boundary < end ? boundary : end;
        UNIT_REQUIRE(n < region->nchunks);
        const regpar_reg_chunk_t *c = &region->chunks[n];
        UNIT_CHECK_EQ_U64((uintptr_t)c->addr, cursor);
        UNIT_CHECK_EQ_U64(c->len, stop - cursor);
        UNIT_CHECK(c->len <= chunk);
        if (n > 0) {
            UNIT_CHECK_EQ_U64((uintptr_t)c->addr % page, 0);
        }
        /* find() agrees on the first, last and middle byte */
        UNIT_CHECK(regpar_reg_region_find(region, (void *)cursor) == c);
        UNIT_CHECK(regpar_reg_region_find(region, (void *)(stop - 1)) == c);
        UNIT_CHECK(regpar_reg_region_find(region, (void *)(cursor + (stop - cursor) / 2)) == c);
        cursor = stop;
        n++;
    }
    UNIT_CHECK_EQ_U64(region->nchunks, n);
    UNIT_CHECK(NULL == regpar_reg_region_find(region, (void *)end));
    UNIT_CHECK(NULL == regpar_reg_region_find(region, (char *)addr - 1));
}

typedef struct geometry_case {
    const char *what;
    size_t offset; /* from a page boundary */
    size_t len;
    size_t chunk;
    unsigned threads;
} geometry_case_t;

static void test_geometry(void)
{
    size_t page = test_page_size();
    const geometry_case_t cases[] = {
        {"multiple of the chunk", 0, 32 * MiB, 8 * MiB, 2},
        {"remainder", 0, 36 * MiB + 5 * page, 8 * MiB, 2},
        {"one chunk, shorter", 0, 3 * MiB, 8 * MiB, 4},
        {"one chunk, exact", 0, 8 * MiB, 8 * MiB, 4},
        {"one page", 0, page, 8 * MiB, 2},
        {"more threads than chunks", 0, 16 * MiB, 8 * MiB, 8},
        {"unaligned start and tail", 100, 24 * MiB + 777, 8 * MiB, 3},
        {"unaligned, inside one page", 1000, 50, 8 * MiB, 2},
        {"unaligned, across one boundary", page - 8, 16, 8 * MiB, 2},
        {"page-sized chunks, odd tail", 123, 20 * page + 5, page, 4},
    };
    const regpar_reg_parallel_t modes[] = {REGPAR_PAR_OFF, REGPAR_PAR_ON, REGPAR_PAR_AUTO};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        const geometry_case_t *gc = &cases[i];
        for (int m = 0; m < 3; m++) {
            capture_t cap = {0};
            regpar_reg_engine_t *engine =
                make_engine(REGPAR_REG_PIN, modes[m], gc->threads, gc->chunk, 0, &cap);
            size_t map_len = ((gc->offset + gc->len + page - 1) / page + 1) * page;
            char *map = map_fresh(map_len);
            char *addr = map + gc->offset;
            uintptr_t first_page = (uintptr_t)addr & ~(uintptr_t)(page - 1);
            uintptr_t end_page = ((uintptr_t)addr + gc->len + page - 1) & ~(uintptr_t)(page - 1);
            long long before = vm_locked_bytes();

            regpar_reg_region_t region;
            UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, gc->len, &region));
            if (!region.registered) {
                fprintf(stderr, "case '%s' mode %d not registered\n", gc->what, m);
                capture_dump(&cap);
            }
            UNIT_CHECK(region.registered);
            UNIT_CHECK(region.prefaulted);
            check_chunks(&region, addr, gc->len, gc->chunk);
            /* mlock works on whole pages: exactly the pages the range touches */
            UNIT_CHECK_EQ_U64(vm_locked_bytes() - before, end_page - first_page);
            UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, gc->len, i * 7 + (uint64_t)m), 0);
            regpar_reg_region_deregister(engine, &region);
            UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
            UNIT_CHECK(NULL == region.chunks && 0 == region.nchunks && !region.registered);
            check_nothing_registered(engine);
            UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
            regpar_reg_engine_destroy(engine);
            munmap(map, map_len);
        }
    }
}

/* ------------------------------------------------------------------------ */

static void test_pin_sizes(void)
{
    size_t page = test_page_size();
    const size_t sizes[] = {page, 1 * MiB, 8 * MiB, 64 * MiB, 200 * MiB + 3 * page};
    const regpar_reg_parallel_t modes[] = {REGPAR_PAR_OFF, REGPAR_PAR_ON, REGPAR_PAR_AUTO};
    for (int m = 0; m < 3; m++) {
        capture_t cap = {0};
        /* threshold 32M: the small regions take the sequential path */
        regpar_reg_engine_t *engine =
            make_engine(REGPAR_REG_PIN, modes[m], 4, 16 * MiB, 32 * MiB, &cap);
        UNIT_CHECK(REGPAR_REG_PIN == regpar_reg_engine_backend(engine));
        UNIT_CHECK_EQ_U64(regpar_reg_engine_threads(engine), REGPAR_PAR_OFF == modes[m] ? 1 : 4);
        uint64_t expect_regions = 0, expect_chunks = 0, expect_parallel = 0;
        for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
            size_t len = sizes[s];
            char *addr = map_fresh(len);
            long long before = vm_locked_bytes();
            long long resident_before = locked_resident_bytes();
            unsigned plan = regpar_reg_engine_plan_threads(engine, len);
            if (REGPAR_PAR_OFF == modes[m] || len < 32 * MiB) {
                UNIT_CHECK_EQ_U64(plan, 1);
            } else if (REGPAR_PAR_ON == modes[m]) {
                UNIT_CHECK(plan > 1);
            }
            regpar_reg_region_t region;
            UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
            UNIT_CHECK(region.registered && region.prefaulted);
            UNIT_CHECK_EQ_U64(region.nchunks, (len + 16 * MiB - 1) / (16 * MiB));
            UNIT_CHECK_EQ_U64(vm_locked_bytes() - before, len);
            /* every page present and locked, not just armed */
            UNIT_CHECK_EQ_U64(locked_resident_bytes() - resident_before, len);
            UNIT_CHECK_EQ_U64(resident_pages(addr, len), len / page);
            UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, len), 0);
            expect_regions++;
            expect_chunks += region.nchunks;
            expect_parallel += plan > 1;

            regpar_reg_stats_t st;
            regpar_reg_get_stats(engine, &st);
            UNIT_CHECK_EQ_U64(st.bytes_registered, len);
            UNIT_CHECK_EQ_U64(st.regions_registered, expect_regions);
            UNIT_CHECK_EQ_U64(st.chunks_registered, expect_chunks);
            UNIT_CHECK_EQ_U64(st.parallel_regions, expect_parallel);
            UNIT_CHECK(st.reg_time_ns >= st.prefault_time_ns);

            regpar_reg_region_deregister(engine, &region);
            UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
            UNIT_CHECK_EQ_U64(locked_resident_bytes(), resident_before);
            /* data survives deregistration */
            UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, ~len), 0);
            munmap(addr, len);
        }
        regpar_reg_stats_t st;
        regpar_reg_get_stats(engine, &st);
        UNIT_CHECK_EQ_U64(st.regions_deregistered, expect_regions);
        UNIT_CHECK_EQ_U64(st.reg_failures, 0);
        check_nothing_registered(engine);
        UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
        regpar_reg_engine_destroy(engine);
    }
}

/* ------------------------------------------------------------------------ */

static void test_none_and_prefault(void)
{
    size_t page = test_page_size();
    size_t len = 48 * MiB;
    for (int prefault = 0; prefault <= 1; prefault++) {
        capture_t cap = {0};
        regpar_reg_config_t cfg;
        reg_test_config(&cfg, REGPAR_REG_NONE, REGPAR_PAR_ON, 2, 8 * MiB, 0, &cap);
        cfg.prefault = prefault;
        regpar_reg_engine_t *engine = reg_test_engine(&cfg);
        UNIT_CHECK(REGPAR_REG_NONE == regpar_reg_engine_backend(engine));

        char *addr = map_fresh(len);
        long long before = vm_locked_bytes();
        regpar_reg_region_t region;
        UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, len, &region));
        UNIT_CHECK(!region.registered);
        UNIT_CHECK(0 == region.nchunks && NULL == region.chunks);
        UNIT_CHECK(region.prefaulted == (bool)prefault);
        UNIT_CHECK(NULL == regpar_reg_region_find(&region, addr));
        UNIT_CHECK_EQ_U64(resident_pages(addr, len), prefault ? len / page : 0);
        UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
        UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, len, 99), 0);
        regpar_reg_region_deregister(engine, &region);

        /* the pool's entry point for slabs under backend none */
        char *other = map_fresh(len);
        UNIT_CHECK(0 == regpar_reg_prefault(engine, other, len));
        UNIT_CHECK_EQ_U64(resident_pages(other, len), len / page);

        regpar_reg_stats_t st;
        regpar_reg_get_stats(engine, &st);
        UNIT_CHECK_EQ_U64(st.regions_registered, 0);
        UNIT_CHECK_EQ_U64(st.reg_failures, 0);
        UNIT_CHECK(st.prefault_time_ns > 0);
        UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
        regpar_reg_engine_destroy(engine);
        munmap(addr, len);
        munmap(other, len);
    }
}

/* Zero length, NULL engine and NULL address are not errors the caller must
 * guard against. */
static void test_degenerate_calls(void)
{
    capture_t cap = {0};
    regpar_reg_engine_t *engine = make_engine(REGPAR_REG_PIN, REGPAR_PAR_AUTO, 0, 8 * MiB, 0, &cap);
    regpar_reg_region_t region;
    char *addr = map_fresh(MiB);
    UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, 0, &region));
    UNIT_CHECK(!region.registered && 0 == region.nchunks);
    regpar_reg_region_deregister(engine, &region);
    UNIT_CHECK(0 == regpar_reg_region_register(NULL, addr, MiB, &region));
    UNIT_CHECK(!region.registered);
    regpar_reg_region_deregister(NULL, &region);
    regpar_reg_region_deregister(engine, NULL);
    UNIT_CHECK(-1 == regpar_reg_region_register(engine, NULL, MiB, &region));
    UNIT_CHECK(!region.registered);
    UNIT_CHECK(NULL != capture_find(&cap, "NULL address", NULL));
    UNIT_CHECK(0 == regpar_reg_prefault(engine, addr, 0));
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(engine, 0), 1);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(NULL, 1 << 30), 1);
    UNIT_CHECK(REGPAR_REG_NONE == regpar_reg_engine_backend(NULL));
    regpar_reg_stats_t st;
    regpar_reg_get_stats(NULL, &st);
    UNIT_CHECK_EQ_U64(st.regions_registered, 0);
    regpar_reg_engine_destroy(engine);
    regpar_reg_engine_destroy(NULL);
    munmap(addr, MiB);
}

/* ------------------------------------------------------------------------ */
/* Policy: what auto chooses, from the engine's own description. */

static void test_policy(void)
{
    capture_t cap = {0};
    size_t chunk = 8 * MiB, threshold = 32 * MiB;
    unsigned cores = 0;
    {
        cpu_set_t set;
        CPU_ZERO(&set);
        UNIT_REQUIRE(0 == sched_getaffinity(0, sizeof(set), &set));
        cores = (unsigned)CPU_COUNT(&set);
    }
    regpar_reg_engine_t *off =
        make_engine(REGPAR_REG_PIN, REGPAR_PAR_OFF, 4, chunk, threshold, &cap);
    regpar_reg_engine_t *on = make_engine(REGPAR_REG_PIN, REGPAR_PAR_ON, 4, chunk, threshold, &cap);
    regpar_reg_engine_t *autop =
        make_engine(REGPAR_REG_PIN, REGPAR_PAR_AUTO, 4, chunk, threshold, &cap);
    regpar_reg_engine_t *none_auto =
        make_engine(REGPAR_REG_NONE, REGPAR_PAR_AUTO, 4, chunk, threshold, &cap);

    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(off, 256 * MiB), 1);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(on, 256 * MiB), 4);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(on, threshold - 1), 1);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(autop, threshold - 1), 1);
    /* auto: pre-faulting is spread over at most one thread per core */
    unsigned expect = cores < 2 ? 1 : (cores < 4 ? cores : 4);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(autop, 256 * MiB), expect);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(none_auto, 256 * MiB), expect);

    /* other work on every core: auto stays on one thread, on does not care */
    busy_threads = cores;
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(autop, 256 * MiB), 1);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(none_auto, 256 * MiB), 1);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(on, 256 * MiB), 4);
    /* one busy core: what is left */
    busy_threads = 1;
    expect = cores < 3 ? 1 : (cores - 1 < 4 ? cores - 1 : 4);
    UNIT_CHECK_EQ_U64(regpar_reg_engine_plan_threads(autop, 256 * MiB), expect);
    busy_threads = 0;

    regpar_reg_engine_destroy(off);
    regpar_reg_engine_destroy(on);
    regpar_reg_engine_destroy(autop);
    regpar_reg_engine_destroy(none_auto);

    /* the verbose description names the backend and the policy */
    int verbose = 0;
    for (int i = 0; i < cap.count && i < CAPTURE_MAX; i++) {
        verbose += cap.levels[i] >= 2 && NULL != strstr(cap.msgs[i], "registration backend pin");
    }
    UNIT_CHECK_EQ_U64(verbose, 3);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
}

static void test_auto_backend(void)
{
    capture_t cap = {0};
    regpar_reg_engine_t *engine =
        make_engine(REGPAR_REG_AUTO, REGPAR_PAR_AUTO, 0, 8 * MiB, 0, &cap);
    regpar_reg_backend_t chosen = regpar_reg_engine_backend(engine);
    /* auto never picks pin and never complains: it is the quiet default */
    UNIT_CHECK(REGPAR_REG_NONE == chosen || REGPAR_REG_VERBS == chosen || REGPAR_REG_OFI == chosen);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
    UNIT_CHECK(NULL != strstr(cap.msgs[0], "reg_backend auto chose"));
    if (access("/sys/class/infiniband", F_OK) != 0) {
        UNIT_CHECK(REGPAR_REG_VERBS != chosen);
    }
    char *addr = map_fresh(16 * MiB);
    regpar_reg_region_t region;
    UNIT_CHECK(0 == regpar_reg_region_register(engine, addr, 16 * MiB, &region));
    UNIT_CHECK_EQ_U64(pattern_roundtrip(addr, 16 * MiB, 5), 0);
    regpar_reg_region_deregister(engine, &region);
    check_nothing_registered(engine);
    regpar_reg_engine_destroy(engine);
    munmap(addr, 16 * MiB);
}

/* ------------------------------------------------------------------------ */
/* Several application threads registering at once share one worker pool:
 * the one that finds it busy works alone; nothing is lost either way. */

typedef struct concurrent_args {
    regpar_reg_engine_t *engine;
    int rounds;
    size_t len;
    int failures;
} concurrent_args_t;

static void *concurrent_worker(void *arg)
{
    concurrent_args_t *a = arg;
    for (int r = 0; r < a->rounds; r++) {
        char *addr = map_fresh(a->len);
        regpar_reg_region_t region;
        if (0 != regpar_reg_region_register(a->engine, addr, a->len, &region) ||
            !region.registered || 0 != pattern_roundtrip(addr, a->len, (uint64_t)r)) {
            a->failures++;
        }
        regpar_reg_region_deregister(a->engine, &region);
        munmap(addr, a->len);
    }
    return NULL;
}

static void test_concurrent_callers(void)
{
    capture_t cap = {0};
    regpar_reg_engine_t *engine = make_engine(REGPAR_REG_PIN, REGPAR_PAR_ON, 2, 4 * MiB, 0, &cap);
    long long before = vm_locked_bytes();
    pthread_t threads[4];
    concurrent_args_t args[4];
    for (int t = 0; t < 4; t++) {
        args[t] =
            (concurrent_args_t){.engine = engine, .rounds = 10, .len = (size_t)(t + 1) * 5 * MiB};
        UNIT_REQUIRE(0 == pthread_create(&threads[t], NULL, concurrent_worker, &args[t]));
    }
    for (int t = 0; t < 4; t++) {
        pthread_join(threads[t], NULL);
        UNIT_CHECK_EQ_U64(args[t].failures, 0);
    }
    regpar_reg_stats_t st;
    regpar_reg_get_stats(engine, &st);
    UNIT_CHECK_EQ_U64(st.regions_registered, 40);
    UNIT_CHECK_EQ_U64(st.regions_deregistered, 40);
    check_nothing_registered(engine);
    UNIT_CHECK_EQ_U64(vm_locked_bytes(), before);
    UNIT_CHECK_EQ_U64(capture_warnings(&cap), 0);
    regpar_reg_engine_destroy(engine);
}

int main(void)
{
    test_names();
    test_invalid_config();
    test_geometry();
    test_pin_sizes();
    test_none_and_prefault();
    test_degenerate_calls();
    test_policy();
    test_auto_backend();
    test_concurrent_callers();
    return unit_finish("test_reg_engine");
}
