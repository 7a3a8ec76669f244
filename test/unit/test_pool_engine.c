/*
 * The pool with a registration engine: every slab is handed to the engine
 * (pre-fault for backend none, registration for pin), deregistered when it
 * is released, and buffer_info reports the registration of the buffer.
 */
#include "test_pool_common.h"

#define MIB ((size_t)1 << 20)

static void run_with_backend(regpar_reg_backend_t backend)
{
    regpar_reg_config_t rcfg;
    regpar_reg_config_defaults(&rcfg);
    rcfg.backend = backend;
    regpar_reg_engine_t *engine = NULL;
    char err[256] = "";
    UNIT_REQUIRE(0 == regpar_reg_engine_create(&rcfg, &engine, err, sizeof(err)));
    /* An engine may fall back to none (no pinning allowed, stub engine). */
    bool registers = REGPAR_REG_NONE != regpar_reg_engine_backend(engine);

    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, NULL);
    cfg.reg = engine;
    regpar_pool_t *pool = test_pool_create(&cfg);
    void *small = regpar_pool_alloc(pool, 4096);
    void *mid = regpar_pool_alloc(pool, 300000);
    void *direct = regpar_pool_alloc(pool, 3 * MIB);
    UNIT_REQUIRE(small && mid && direct);
    void *bufs[] = {small, mid, direct};
    for (int i = 0; i < 3; i++) {
        regpar_buffer_info_t info;
        UNIT_CHECK(0 == regpar_pool_buffer_info(pool, bufs[i], &info));
        UNIT_CHECK(info.registered == registers);
        if (!registers) {
            UNIT_CHECK(NULL == info.reg_desc && 0 == info.reg_key);
        }
        memset(bufs[i], i, info.size);
    }
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    if (registers) {
        UNIT_CHECK_EQ_U64(st.reg.regions_registered, st.slabs_mapped);
        UNIT_CHECK_EQ_U64(st.reg.bytes_registered, st.bytes_held);
    } else {
        UNIT_CHECK_EQ_U64(st.reg.regions_registered, 0);
    }
    for (int i = 0; i < 3; i++) {
        UNIT_CHECK(0 == regpar_pool_free(pool, bufs[i]));
    }
    regpar_pool_collect(pool, true);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    if (registers) {
        UNIT_CHECK_EQ_U64(st.reg.regions_deregistered, st.reg.regions_registered);
        UNIT_CHECK_EQ_U64(st.reg.bytes_registered, 0);
    }
    printf("backend %s (asked %s): %s\n",
           regpar_reg_backend_name(regpar_reg_engine_backend(engine)),
           regpar_reg_backend_name(backend), registers ? "registered" : "not registered");
    regpar_pool_destroy(pool);
    regpar_reg_engine_destroy(engine);
}

static bool fail_registration;

static int reg_fail(void *arg, const void *addr, size_t len)
{
    (void)arg;
    (void)addr;
    (void)len;
    return fail_registration ? EPERM : 0;
}

/* A registration that fails leaves the slab usable, unregistered; the next
 * slab registers again once the cause is gone. */
static void test_registration_failure(void)
{
    static const regpar_sys_ops_t sys = {.reg_fail_fn = reg_fail};
    regpar_reg_config_t rcfg;
    regpar_reg_config_defaults(&rcfg);
    rcfg.backend = REGPAR_REG_PIN;
    rcfg.sys = &sys;
    test_log_t log;
    test_log_reset(&log);
    rcfg.log = test_log_fn;
    rcfg.log_arg = &log;
    regpar_reg_engine_t *engine = NULL;
    char err[256] = "";
    UNIT_REQUIRE(0 == regpar_reg_engine_create(&rcfg, &engine, err, sizeof(err)));
    if (REGPAR_REG_PIN != regpar_reg_engine_backend(engine)) {
        printf("registration failure: pin backend unavailable, skipped\n");
        regpar_reg_engine_destroy(engine);
        return;
    }
    regpar_pool_config_t cfg;
    test_pool_config(&cfg, NULL, NULL);
    cfg.reg = engine;
    regpar_pool_t *pool = test_pool_create(&cfg);
    fail_registration = true;
    char *a = regpar_pool_alloc(pool, 4096);
    UNIT_REQUIRE(a);
    memset(a, 1, 4096);
    regpar_buffer_info_t info;
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, a, &info));
    UNIT_CHECK(!info.registered);
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK(st.reg.reg_failures >= 1);
    UNIT_CHECK_EQ_U64(st.reg.regions_registered, 0);
    UNIT_CHECK_EQ_U64(st.alloc_failures, 0);
    fail_registration = false;
    char *b = regpar_pool_alloc(pool, 8192); /* another bucket, a new slab */
    UNIT_REQUIRE(b);
    UNIT_CHECK(0 == regpar_pool_buffer_info(pool, b, &info));
    UNIT_CHECK(info.registered);
    UNIT_CHECK(0 == regpar_pool_free(pool, a));
    UNIT_CHECK(0 == regpar_pool_free(pool, b));
    regpar_pool_collect(pool, true);
    regpar_pool_get_stats(pool, &st);
    UNIT_CHECK_EQ_U64(st.reg.regions_registered, 1);
    UNIT_CHECK_EQ_U64(st.reg.regions_deregistered, 1);
    UNIT_CHECK_EQ_U64(st.bytes_held, 0);
    regpar_pool_destroy(pool);
    regpar_reg_engine_destroy(engine);
}

int main(void)
{
    run_with_backend(REGPAR_REG_NONE);
    run_with_backend(REGPAR_REG_PIN);
    test_registration_failure();
    return unit_finish("test_pool_engine");
}
