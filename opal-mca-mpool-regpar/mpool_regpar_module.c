/*
 * mpool/regpar module: the mpool entry points over the pool core.
 */
#include "opal_config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "opal/mca/mpool/base/base.h"
#include "opal/util/output.h"

#include "mpool_regpar.h"
#include "mpool_regpar_registrar.h"

static regpar_pool_t *pool_of(mca_mpool_base_module_t *mpool)
{
    return ((mca_mpool_regpar_module_t *)mpool)->pool;
}

static void *regpar_module_alloc(mca_mpool_base_module_t *mpool, size_t size, size_t align,
                                 uint32_t flags)
{
    (void)flags;
    /* Until the transport's registrar is resolved (the first allocation
     * after MPI_Init), one load on this path. */
    if (OPAL_UNLIKELY(mca_mpool_regpar_registrar_is_pending())) {
        mca_mpool_regpar_registrar_resolve((mca_mpool_regpar_module_t *)mpool);
    }
    return regpar_pool_alloc_aligned(pool_of(mpool), size, align);
}

static void regpar_module_free(mca_mpool_base_module_t *mpool, void *addr)
{
    if (NULL == addr) {
        return;
    }
    if (0 != regpar_pool_free(pool_of(mpool), addr)) {
        /* Freeing it with free() could corrupt the heap and keeping quiet would
         * hide a bug in the caller: say it, leak it. */
        bufpool_params_show(((mca_mpool_regpar_module_t *)mpool)->pp, "bad-free",
                            "mpool_regpar: free of %p, which is not a buffer of this pool "
                            "(double free or foreign pointer); ignored (pid %d)",
                            addr, (int)getpid());
    }
}

static void *regpar_module_realloc(mca_mpool_base_module_t *mpool, void *addr, size_t size)
{
    regpar_buffer_info_t info;
    if (NULL == addr) {
        return regpar_pool_alloc(pool_of(mpool), size);
    }
    if (0 != regpar_pool_buffer_info(pool_of(mpool), addr, &info)) {
        return NULL;
    }
    if (size <= info.size) {
        return addr;
    }
    void *bigger = regpar_pool_alloc(pool_of(mpool), size);
    if (NULL != bigger) {
        memcpy(bigger, addr, info.size);
        (void)regpar_pool_free(pool_of(mpool), addr);
    }
    return bigger;
}

static void *regpar_module_base(mca_mpool_base_module_t *mpool)
{
    (void)mpool;
    return NULL;
}

static void regpar_module_finalize(mca_mpool_base_module_t *mpool)
{
    (void)mpool; /* the component destroys the pool at close */
}

static int regpar_ext_buffer_info(mca_mpool_base_module_t *mpool, const void *addr,
                                  regpar_buffer_info_t *info)
{
    return regpar_pool_buffer_info(pool_of(mpool), addr, info);
}

static void regpar_ext_get_stats(mca_mpool_base_module_t *mpool, regpar_pool_stats_t *stats)
{
    regpar_pool_get_stats(pool_of(mpool), stats);
}

static size_t regpar_ext_bucket_size(mca_mpool_base_module_t *mpool, size_t size)
{
    return regpar_pool_bucket_size(pool_of(mpool), size);
}

static void regpar_ext_count_outside(mca_mpool_base_module_t *mpool, int64_t delta)
{
    regpar_pool_count_outside(pool_of(mpool), delta);
}

static void *regpar_ext_register_outside(mca_mpool_base_module_t *mpool, void *addr, size_t len)
{
    /* The caller's range is registered where the pool's slabs are: with
     * the transport's registrar, resolved here as on the alloc path. */
    if (OPAL_UNLIKELY(mca_mpool_regpar_registrar_is_pending())) {
        mca_mpool_regpar_registrar_resolve((mca_mpool_regpar_module_t *)mpool);
    }
    return regpar_pool_outside_register(pool_of(mpool), addr, len);
}

static void regpar_ext_deregister_outside(mca_mpool_base_module_t *mpool, void *handle)
{
    regpar_pool_outside_deregister(pool_of(mpool), handle);
}

/* True while the engine opens its backend: what it says then follows from
 * the parameters (an unknown provider or device), which every process has
 * alike, so one message per job is enough (see bad_mca_sweep.sh). */
static bool engine_opening;

/* Messages of the core and the engine (arg: the module), through Open
 * MPI's output. */
static void regpar_module_log(void *arg, int level, const char *msg)
{
    const bufpool_params_t *pp = ((const mca_mpool_regpar_module_t *)arg)->pp;
    if (engine_opening && !bufpool_params_speaks(pp)) {
        return;
    }
    if (level <= 1 || level <= *pp->verbose) {
        bufpool_params_show(pp, "core-message", "mpool_regpar: %s (pid %d)", msg, (int)getpid());
    }
}

int mca_mpool_regpar_module_init(mca_mpool_regpar_module_t *module,
                                 const mca_mpool_regpar_setup_t *setup)
{
    char err[256];
    regpar_pool_config_t pool_cfg = setup->pool;
    regpar_reg_config_t reg_cfg = setup->reg;
    const bufpool_params_t *pp = setup->pp;

    memset(module, 0, sizeof(*module));
    module->pp = pp;
    reg_cfg.log = regpar_module_log;
    reg_cfg.log_arg = module;
    /* Called once, under the component's lock (ensure_module). */
    engine_opening = true;
    int rc = regpar_reg_engine_create(&reg_cfg, &module->engine, err, sizeof(err));
    engine_opening = false;
    if (0 != rc) {
        bufpool_params_show(pp, "engine-failed",
                            "mpool_regpar: cannot start the registration engine: %s (pid %d)", err,
                            (int)getpid());
        return OPAL_ERR_OUT_OF_RESOURCE;
    }
    pool_cfg.log = regpar_module_log;
    pool_cfg.log_arg = module;
    pool_cfg.reg = module->engine;
    if (0 != regpar_pool_create(&pool_cfg, &module->pool, err, sizeof(err))) {
        bufpool_params_show(pp, "pool-failed", "mpool_regpar: cannot create the pool: %s (pid %d)",
                            err, (int)getpid());
        regpar_reg_engine_destroy(module->engine);
        module->engine = NULL;
        return OPAL_ERR_OUT_OF_RESOURCE;
    }

    mca_mpool_base_module_t *super = &module->head.super;
    super->mpool_component = setup->component;
    super->mpool_base = regpar_module_base;
    super->mpool_alloc = regpar_module_alloc;
    super->mpool_realloc = regpar_module_realloc;
    super->mpool_free = regpar_module_free;
    super->mpool_finalize = regpar_module_finalize;
    BUFPOOL_CLEAR_FT_EVENT(super->mpool_ft_event);
    super->flags = 0;
    super->mpool_allocation_unit = (size_t)sysconf(_SC_PAGESIZE);
    super->mpool_name = "regpar";

    module->head.ext.version = MCA_MPOOL_REGPAR_EXT_VERSION;
    module->head.ext.buffer_info = regpar_ext_buffer_info;
    module->head.ext.get_stats = regpar_ext_get_stats;
    module->head.ext.bucket_size = regpar_ext_bucket_size;
    module->head.ext.count_outside = regpar_ext_count_outside;
    module->head.ext.register_outside = regpar_ext_register_outside;
    module->head.ext.deregister_outside = regpar_ext_deregister_outside;

    mca_mpool_regpar_registrar_init(module);
    if (*pp->verbose >= 2) {
        opal_output(0, "mpool_regpar: pool created, registration backend %s (pid %d)",
                    regpar_reg_backend_name(regpar_reg_engine_backend(module->engine)),
                    (int)getpid());
    }
    return OPAL_SUCCESS;
}

void mca_mpool_regpar_module_fini(mca_mpool_regpar_module_t *module)
{
    if (NULL != module->pool) {
        mca_mpool_regpar_registrar_fini(module);
        regpar_pool_destroy(module->pool);
        module->pool = NULL;
    }
    if (NULL != module->engine) {
        regpar_reg_engine_destroy(module->engine);
        module->engine = NULL;
    }
}

void mca_mpool_regpar_report(mca_mpool_regpar_module_t *module)
{
    char stack_buf[4096];
    int needed = regpar_pool_report(module->pool, stack_buf, sizeof(stack_buf));
    char *text = stack_buf;
    if (needed >= (int)sizeof(stack_buf)) {
        text = malloc((size_t)needed + 1);
        if (NULL == text) {
            text = stack_buf;
        } else {
            (void)regpar_pool_report(module->pool, text, (size_t)needed + 1);
        }
    }
    opal_output(0, "mpool_regpar report (pid %d):\n%s", (int)getpid(), text);
    if (text != stack_buf) {
        free(text);
    }
}
