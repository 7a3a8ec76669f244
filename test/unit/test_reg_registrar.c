/*
 * An owner-supplied registrar (regpar_reg_engine_attach), as Open MPI's
 * transports supply theirs, seen from the pool:
 *   - slabs made before the registrar is attached are pre-faulted, not
 *     registered; regpar_pool_register_live registers each once;
 *   - every registration covers whole buffers (chunk boundaries on buffer
 *     boundaries) and no byte outside its slab: the guard pages on each side
 *     stay mapped and unregistered, so a neighbour's release never touches
 *     a registration's edge;
 *   - a slab is deregistered while still mapped, before it is released;
 *   - regpar_pool_deregister_live + detach leave no registration behind;
 *   - a registrar that is not thread-safe is never called concurrently,
 *     even when four threads grow the pool at once;
 *   - a registrar that refuses is reported once and the slab served
 *     unregistered;
 *   - an outside range (regpar_pool_outside_register: coll/bufpool's
 *     segment ranges) is registered once, at once or when the registrar is
 *     attached, while mapped, in one registration; deregistered with the
 *     slabs when the transport leaves and by its owner before the unmap;
 *     counted (outside_registered, outside_registrations).
 */
#include <pthread.h>
#include <stdatomic.h>
#include <sys/mman.h>
#include <unistd.h>

#include "test_pool_common.h"

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)

typedef struct fake {
    atomic_int live, made, in_call, max_in_call;
    atomic_int mapped_at_dereg_failures;
    atomic_int refuse; /* reg returns this code when non-zero */
    size_t unit_violations;
    size_t check_unit; /* buffer size every chunk must be a multiple of */
} fake_t;

static bool page_mapped(const void *p)
{
    unsigned char vec;
    return 0 == mincore((void *)((uintptr_t)p & ~(uintptr_t)(test_page() - 1)), test_page(), &vec);
}

static void enter(fake_t *f)
{
    int now = atomic_fetch_add(&f->in_call, 1) + 1;
    int max = atomic_load(&f->max_in_call);
    while (now > max && !atomic_compare_exchange_weak(&f->max_in_call, &max, now)) {
    }
    usleep(200); /* widen the window a concurrent call would hit */
}

static int fake_reg(void *arg, regpar_reg_chunk_t *chunk)
{
    fake_t *f = arg;
    enter(f);
    int rc = atomic_load(&f->refuse);
    if (0 == rc) {
        if (f->check_unit && 0 != chunk->len % f->check_unit) {
            f->unit_violations++;
        }
        chunk->handle = chunk->addr;
        atomic_fetch_add(&f->live, 1);
        atomic_fetch_add(&f->made, 1);
    }
    atomic_fetch_sub(&f->in_call, 1);
    return rc;
}

static int fake_dereg(void *arg, regpar_reg_chunk_t *chunk)
{
    fake_t *f = arg;
    enter(f);
    /* Open MPI aborts when registered memory is released: the pool must
     * deregister first. */
    if (!page_mapped(chunk->addr) || !page_mapped((char *)chunk->addr + chunk->len - 1)) {
        atomic_fetch_add(&f->mapped_at_dereg_failures, 1);
    }
    atomic_fetch_sub(&f->live, 1);
    atomic_fetch_sub(&f->in_call, 1);
    return 0;
}

static const regpar_registrar_t fake_ops = {
    .name = "fake",
    .thread_safe = false,
    .reg = fake_reg,
    .dereg = fake_dereg,
    .remedy = "set mpool_regpar_reg_backend=none",
};

static regpar_reg_engine_t *make_engine(size_t chunk)
{
    regpar_reg_config_t rcfg;
    regpar_reg_config_defaults(&rcfg);
    rcfg.backend = REGPAR_REG_NONE;
    rcfg.chunk_size = chunk;
    rcfg.threshold = chunk;
    rcfg.log = test_log_fn;
    static test_log_t log;
    rcfg.log_arg = &log;
    regpar_reg_engine_t *engine = NULL;
    char err[256];
    UNIT_REQUIRE(0 == regpar_reg_engine_create(&rcfg, &engine, err, sizeof(err)));
    return engine;
}

/* The pool of these tests, registering through engine. */
static void engine_pool_config(regpar_pool_config_t *cfg, regpar_reg_engine_t *engine)
{
    test_pool_config(cfg, NULL, NULL);
    cfg->reg = engine;
}

static void test_late_attach(void)
{
    fake_t f = {0};
    /* 96K buffers in 16-buffer chunks of at most 1.5M: a chunk of 1M would
     * cut a buffer, the engine rounds down to whole buffers. */
    regpar_reg_engine_t *engine = make_engine(1 * MIB);
    regpar_pool_config_t cfg;
    engine_pool_config(&cfg, engine);
    cfg.bucket_min = 96 * KIB;
    cfg.bucket_max = 96 * KIB;
    cfg.slab_size = 8 * MIB;
    regpar_pool_t *pool = test_pool_create(&cfg);

    void *early = regpar_pool_alloc(pool, 96 * KIB);
    UNIT_REQUIRE(early);
    regpar_buffer_info_t info;
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, early, &info) && !info.registered);
    UNIT_CHECK_EQ_U64(regpar_pool_register_live(pool), 0); /* nothing attached */

    f.check_unit = 96 * KIB;
    UNIT_REQUIRE(0 == regpar_reg_engine_attach(engine, &fake_ops, &f));
    UNIT_CHECK(-1 == regpar_reg_engine_attach(engine, &fake_ops, &f)); /* only once */
    UNIT_CHECK(REGPAR_REG_REGISTRAR == regpar_reg_engine_backend(engine));
    UNIT_CHECK(0 == strcmp("fake", regpar_reg_engine_registrar_name(engine)));
    UNIT_CHECK_EQ_U64(regpar_pool_register_live(pool), 1);
    UNIT_CHECK_EQ_U64(regpar_pool_register_live(pool), 0); /* once per slab */
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, early, &info) && info.registered);
    int after_first = atomic_load(&f.made);
    UNIT_CHECK(after_first >= 1);

    /* Grow: new slabs are registered as they are made, in whole buffers. */
    void *bufs[200];
    size_t n = 0;
    for (; n < 200; n++) {
        bufs[n] = regpar_pool_alloc(pool, 96 * KIB);
        UNIT_REQUIRE(bufs[n]);
        UNIT_CHECK(0 == regpar_pool_buffer_info(pool, bufs[n], &info) && info.registered);
        /* The guard pages around every slab stay mapped (never touched). */
    }
    UNIT_CHECK_EQ_U64(f.unit_violations, 0);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.reg.regions_registered, st.slabs_mapped);
    UNIT_CHECK(st.slabs_mapped > 2);

    for (size_t i = 0; i < n; i++) {
        UNIT_CHECK(0 == regpar_pool_free(pool, bufs[i]));
    }
    /* Releasing slabs deregisters them while still mapped. */
    (void)regpar_pool_collect(pool, true);
    UNIT_CHECK_EQ_U64(atomic_load(&f.mapped_at_dereg_failures), 0);

    /* The transport leaves: everything deregistered, then detached. */
    (void)regpar_pool_deregister_live(pool);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
    regpar_reg_engine_detach(engine);
    UNIT_CHECK(REGPAR_REG_NONE == regpar_reg_engine_backend(engine));
    void *later = regpar_pool_alloc(pool, 96 * KIB);
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, later, &info) && !info.registered);
    UNIT_CHECK(0 == regpar_pool_free(pool, later));
    UNIT_CHECK(0 == regpar_pool_free(pool, early));
    UNIT_CHECK_EQ_U64(atomic_load(&f.max_in_call), 1);
    regpar_pool_destroy(pool);
    regpar_reg_engine_destroy(engine);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
}

/* A pool whose engine has the fake registrar attached from the start. */
static regpar_pool_t *attached_pool(fake_t *f, regpar_reg_engine_t **engine)
{
    *engine = make_engine(256 * MIB);
    UNIT_REQUIRE(0 == regpar_reg_engine_attach(*engine, &fake_ops, f));
    regpar_pool_config_t cfg;
    engine_pool_config(&cfg, *engine);
    return test_pool_create(&cfg);
}

/* The slab's neighbours: the page before and after are mapped guards, and a
 * separate mapping placed right after a slab's guard can be released
 * without the slab's registration noticing (no shared edge). */
static void test_guards(void)
{
    fake_t f = {0};
    regpar_reg_engine_t *engine;
    regpar_pool_t *pool = attached_pool(&f, &engine);
    void *b = regpar_pool_alloc(pool, 2 * MIB); /* one buffer, one slab */
    UNIT_REQUIRE(b);
    regpar_buffer_info_t info;
    UNIT_REQUIRE(0 == regpar_pool_buffer_info(pool, b, &info) && info.registered);
    size_t page = test_page();
    UNIT_CHECK(page_mapped((char *)info.base - page));
    UNIT_CHECK(page_mapped((char *)info.base + info.size));
    UNIT_CHECK(0 == regpar_pool_free(pool, b));
    regpar_pool_destroy(pool);
    /* Destroy unmapped guards and slab together. */
    UNIT_CHECK(!page_mapped((char *)info.base - page));
    UNIT_CHECK(!page_mapped((char *)info.base + info.size));
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
    UNIT_CHECK_EQ_U64(atomic_load(&f.mapped_at_dereg_failures), 0);
    regpar_reg_engine_destroy(engine);
}

typedef struct grow_arg {
    regpar_pool_t *pool;
    int failures;
} grow_arg_t;

static void *grow(void *p)
{
    grow_arg_t *a = p;
    void *bufs[64];
    for (int i = 0; i < 64; i++) {
        bufs[i] = regpar_pool_alloc(a->pool, 64 * KIB << (i % 4));
        regpar_buffer_info_t info;
        if (!bufs[i] || 0 != regpar_pool_buffer_info(a->pool, bufs[i], &info) || !info.registered) {
            a->failures++;
        }
    }
    for (int i = 0; i < 64; i++) {
        a->failures += 0 != regpar_pool_free(a->pool, bufs[i]);
    }
    return NULL;
}

/* THREAD_MULTIPLE: four threads growing the pool call the registrar one at
 * a time, each slab registered exactly once. */
static void test_threads(void)
{
    fake_t f = {0};
    regpar_reg_engine_t *engine;
    regpar_pool_t *pool = attached_pool(&f, &engine);
    pthread_t t[4];
    grow_arg_t a[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (grow_arg_t){.pool = pool};
        UNIT_REQUIRE(0 == pthread_create(&t[i], NULL, grow, &a[i]));
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(t[i], NULL);
        UNIT_CHECK_EQ_U64(a[i].failures, 0);
    }
    UNIT_CHECK_EQ_U64(atomic_load(&f.max_in_call), 1);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64((uint64_t)atomic_load(&f.made), st.slabs_mapped);
    regpar_pool_destroy(pool);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
    regpar_reg_engine_destroy(engine);
}

/* A refusing registrar (memlock limit, provider refusal): one message, the
 * slab served unregistered, nothing held. */
static void test_refusal(void)
{
    fake_t f = {0};
    atomic_store(&f.refuse, ENOMEM);
    test_log_t log;
    regpar_reg_config_t rcfg;
    regpar_reg_config_defaults(&rcfg);
    rcfg.backend = REGPAR_REG_NONE;
    rcfg.log = test_log_fn;
    rcfg.log_arg = &log;
    test_log_reset(&log);
    regpar_reg_engine_t *engine = NULL;
    char err[256];
    UNIT_REQUIRE(0 == regpar_reg_engine_create(&rcfg, &engine, err, sizeof(err)));
    UNIT_REQUIRE(0 == regpar_reg_engine_attach(engine, &fake_ops, &f));
    regpar_pool_config_t cfg;
    engine_pool_config(&cfg, engine);
    regpar_pool_t *pool = test_pool_create(&cfg);
    test_log_reset(&log);
    void *a = regpar_pool_alloc(pool, 4096), *b = regpar_pool_alloc(pool, 1 * MIB);
    UNIT_REQUIRE(a && b);
    memset(a, 1, 4096);
    memset(b, 2, MIB);
    regpar_buffer_info_t info;
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, a, &info) && !info.registered);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.reg.reg_failures, 2);
    UNIT_CHECK_EQ_U64(log.count[0] + log.count[1], 1); /* one message per cause */
    UNIT_CHECK(NULL != strstr(log.text, "fake") && NULL != strstr(log.text, "mpool_regpar"));
    UNIT_CHECK(0 == regpar_pool_free(pool, a) && 0 == regpar_pool_free(pool, b));
    regpar_pool_destroy(pool);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
    regpar_reg_engine_destroy(engine);
}

/* An owner's ranges: one made before the registrar is attached, one after;
 * both registered whole, once, and deregistered while mapped. */
static void test_outside(void)
{
    fake_t f = {0};
    regpar_reg_engine_t *engine = make_engine(256 * MIB);
    regpar_pool_config_t cfg;
    engine_pool_config(&cfg, engine);
    regpar_pool_t *pool = test_pool_create(&cfg);
    const size_t len = 3 * MIB;
    char *early = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    char *later = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    UNIT_REQUIRE(MAP_FAILED != early && MAP_FAILED != later);
    UNIT_CHECK(NULL == regpar_pool_outside_register(pool, NULL, len));
    UNIT_CHECK(NULL == regpar_pool_outside_register(pool, early, 0));

    regpar_outside_t *a = regpar_pool_outside_register(pool, early, len);
    UNIT_REQUIRE(a);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.outside_live, 0); /* no registrar yet */
    UNIT_CHECK_EQ_U64(atomic_load(&f.made), 0);

    UNIT_REQUIRE(0 == regpar_reg_engine_attach(engine, &fake_ops, &f));
    (void)regpar_pool_register_live(pool);
    (void)regpar_pool_register_live(pool); /* once */
    UNIT_CHECK_EQ_U64(atomic_load(&f.made), 1);
    regpar_outside_t *b = regpar_pool_outside_register(pool, later, len); /* at once */
    UNIT_REQUIRE(b);
    UNIT_CHECK_EQ_U64(atomic_load(&f.made), 2);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 2);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.outside_live, 2);
    UNIT_CHECK_EQ_U64(st.outside_made, 2);

    /* Its owner unmaps b: deregistered first, while mapped. */
    regpar_pool_outside_deregister(pool, b);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 1);
    UNIT_CHECK(0 == munmap(later, len));
    regpar_pool_outside_deregister(pool, NULL); /* nothing */

    /* The transport leaves before the owner unmaps a: deregistered then,
     * and the owner's deregistration later only forgets it. */
    (void)regpar_pool_deregister_live(pool);
    UNIT_CHECK_EQ_U64(atomic_load(&f.live), 0);
    regpar_reg_engine_detach(engine);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.outside_live, 0);
    UNIT_CHECK_EQ_U64(st.outside_made, 2);
    regpar_pool_outside_deregister(pool, a);
    UNIT_CHECK(0 == munmap(early, len));
    UNIT_CHECK_EQ_U64(atomic_load(&f.mapped_at_dereg_failures), 0);
    UNIT_CHECK_EQ_U64(atomic_load(&f.made), 2);

    /* A range its owner leaves registered is deregistered with the pool. */
    fake_t g = {0};
    regpar_reg_engine_t *engine2;
    regpar_pool_t *pool2 = attached_pool(&g, &engine2);
    char *left = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    UNIT_REQUIRE(MAP_FAILED != left);
    UNIT_CHECK(NULL != regpar_pool_outside_register(pool2, left, len));
    UNIT_CHECK_EQ_U64(atomic_load(&g.live), 1);
    regpar_pool_destroy(pool2);
    UNIT_CHECK_EQ_U64(atomic_load(&g.live), 0);
    UNIT_CHECK(0 == munmap(left, len));
    regpar_reg_engine_destroy(engine2);

    regpar_pool_destroy(pool);
    regpar_reg_engine_destroy(engine);
}

int main(void)
{
    test_late_attach();
    test_guards();
    test_threads();
    test_refusal();
    test_outside();
    return unit_finish("test_reg_registrar");
}
