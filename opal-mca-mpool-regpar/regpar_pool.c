/*
 * regpar_pool: segregated-fit pool of page-multiple buffers carved from
 * 2 MiB-aligned slabs.  This file: configuration, life cycle and the late
 * (de)registration of live slabs; the other seams are listed in
 * regpar_pool_types.h, with the locking rules.  Design notes and
 * measurements: docs/pool.md.
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "regpar_size.h"

const char *regpar_pool_fmt_size(uint64_t v, char *buf, size_t len)
{
    regpar_format_size(v, buf, len);
    return buf;
}

/* ------------------------------------------------------------------------ */
/* Configuration                                                             */

void regpar_pool_config_defaults(regpar_pool_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    long page = sysconf(_SC_PAGESIZE);
    cfg->bucket_min = page > 0 ? (size_t)page : 4096;
    cfg->bucket_max = (size_t)64 << 20;
    cfg->bucket_factor = 2.0;
    cfg->slab_size = (size_t)32 << 20;
    cfg->max_capacity = (size_t)256 << 20;
    cfg->gc_age_ns = 10ULL * 1000000000;
    cfg->hugepages = true;
    cfg->numa_node = -1;
}

static int check_fail(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int check_fail(char *err, size_t errlen, const char *fmt, ...)
{
    if (err && errlen) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, errlen, fmt, ap);
        va_end(ap);
    }
    return -1;
}

int regpar_pool_config_check(const regpar_pool_config_t *cfg, size_t page_size, char *err,
                             size_t errlen)
{
    char a[32], b[32], c[32];
    if (!cfg) {
        return check_fail(err, errlen, "no configuration given");
    }
    if (!is_pow2(page_size)) {
        return check_fail(err, errlen, "page size %zu is not a power of two", page_size);
    }
    regpar_pool_fmt_size(page_size, c, sizeof(c));
    regpar_pool_fmt_size(REGPAR_LIMIT_SIZE, b, sizeof(b));
    if (0 == cfg->bucket_max || cfg->bucket_max % page_size ||
        cfg->bucket_max > REGPAR_LIMIT_SIZE) {
        return check_fail(err, errlen,
                          "bucket_max %s is invalid; valid: a multiple of the page size (%s) "
                          "from bucket_min up to %s",
                          regpar_pool_fmt_size(cfg->bucket_max, a, sizeof(a)), c, b);
    }
    if (0 == cfg->bucket_min || cfg->bucket_min % page_size || cfg->bucket_min > cfg->bucket_max) {
        return check_fail(err, errlen,
                          "bucket_min %s is invalid; valid: a multiple of the page size (%s) "
                          "from %s up to bucket_max (%s)",
                          regpar_pool_fmt_size(cfg->bucket_min, a, sizeof(a)), c, c,
                          regpar_pool_fmt_size(cfg->bucket_max, b, sizeof(b)));
    }
    if (!(cfg->bucket_factor > 1.0 && cfg->bucket_factor <= REGPAR_MAX_FACTOR)) {
        return check_fail(err, errlen,
                          "bucket_factor %g is invalid; valid: a number above 1 and at most %g "
                          "(for example 2 or 1.5)",
                          cfg->bucket_factor, REGPAR_MAX_FACTOR);
    }
    unsigned n =
        bucket_series(cfg->bucket_min, cfg->bucket_max, cfg->bucket_factor, page_size, NULL);
    if (n > REGPAR_MAX_BUCKETS) {
        return check_fail(err, errlen,
                          "bucket_factor %g makes more than %d buckets between bucket_min (%s) "
                          "and bucket_max (%s); valid: a larger factor or a narrower range",
                          cfg->bucket_factor, REGPAR_MAX_BUCKETS,
                          regpar_pool_fmt_size(cfg->bucket_min, a, sizeof(a)),
                          regpar_pool_fmt_size(cfg->bucket_max, c, sizeof(c)));
    }
    if (cfg->slab_size < REGPAR_SLAB_ALIGN || cfg->slab_size % REGPAR_SLAB_ALIGN ||
        cfg->slab_size > REGPAR_LIMIT_SIZE) {
        return check_fail(err, errlen,
                          "slab_size %s is invalid; valid: a multiple of 2M from 2M up to %s",
                          regpar_pool_fmt_size(cfg->slab_size, a, sizeof(a)), b);
    }
    size_t least = first_slab_size(cfg->bucket_min);
    if (cfg->max_capacity < least) {
        return check_fail(err, errlen,
                          "max_capacity %s is below one slab of the smallest bucket; valid: "
                          "%s or more",
                          regpar_pool_fmt_size(cfg->max_capacity, a, sizeof(a)),
                          regpar_pool_fmt_size(least, c, sizeof(c)));
    }
    if (cfg->numa_node < -1 || cfg->numa_node > REGPAR_MAX_NUMA_NODE) {
        return check_fail(err, errlen,
                          "numa_node %d is invalid; valid: -1 (no binding) or a node number "
                          "from 0 to %d",
                          cfg->numa_node, REGPAR_MAX_NUMA_NODE);
    }
    return 0;
}

int regpar_pool_create(const regpar_pool_config_t *cfg, regpar_pool_t **out, char *err,
                       size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    *out = NULL;
    if (0 != regpar_pool_config_check(cfg, page > 0 ? (size_t)page : 4096, err, errlen)) {
        return -1;
    }
    regpar_pool_t *pool = calloc(1, sizeof(*pool));
    unsigned n = 0;
    if (pool) {
        pool->cfg = *cfg;
        pool->page = page > 0 ? (size_t)page : 4096;
        n = bucket_series(cfg->bucket_min, cfg->bucket_max, cfg->bucket_factor, pool->page,
                          pool->bucket_sizes);
        pool->buckets = aligned_alloc(64, round_up((n + 1) * sizeof(regpar_bucket_t), 64));
    }
    if (!pool || !pool->buckets || 0 != map_init(pool)) {
        if (pool) {
            free(pool->buckets);
            free(pool);
        }
        check_fail(err, errlen, "out of memory creating the pool");
        return -1;
    }
    pool->nbuckets = n;
    for (unsigned i = 0; i < n; i++) {
        bucket_init(&pool->buckets[i], pool->bucket_sizes[i], false);
    }
    pool->direct = &pool->buckets[n];
    bucket_init(pool->direct, 0, true);
    regpar_sys_init(&pool->sys, cfg->sys, cfg->log, cfg->log_arg, cfg->verbose, "regpar pool");
    pthread_mutex_init(&pool->grow_lock, NULL);
    pthread_mutex_init(&pool->reg_lock, NULL);
    atomic_store(&pool->last_collect, pool_now(pool));
    *out = pool;
    return 0;
}

/* Register o now if the engine has a backend (reg_lock held). */
static void outside_register_locked(regpar_pool_t *pool, regpar_outside_t *o)
{
    regpar_reg_engine_t *reg = pool->cfg.reg;
    if (o->has_region || !reg || REGPAR_REG_NONE == regpar_reg_engine_backend(reg)) {
        return;
    }
    if (0 == regpar_reg_region_register(reg, o->addr, o->len, &o->region)) {
        o->has_region = true;
        if (o->region.registered) {
            atomic_fetch_add_explicit(&pool->outside_registered, 1, memory_order_relaxed);
            atomic_fetch_add_explicit(&pool->outside_registrations, 1, memory_order_relaxed);
        }
    }
}

static void outside_deregister_locked(regpar_pool_t *pool, regpar_outside_t *o)
{
    if (!o->has_region) {
        return;
    }
    if (o->region.registered) {
        atomic_fetch_sub_explicit(&pool->outside_registered, 1, memory_order_relaxed);
    }
    regpar_reg_region_deregister(pool->cfg.reg, &o->region);
    o->has_region = false;
}

regpar_outside_t *regpar_pool_outside_register(regpar_pool_t *pool, void *addr, size_t len)
{
    regpar_outside_t *o = pool && addr && len ? calloc(1, sizeof(*o)) : NULL;
    if (!o) {
        return NULL;
    }
    o->addr = addr;
    o->len = len;
    pthread_mutex_lock(&pool->reg_lock);
    o->next = pool->outside;
    if (o->next) {
        o->next->prev = o;
    }
    pool->outside = o;
    outside_register_locked(pool, o);
    pthread_mutex_unlock(&pool->reg_lock);
    return o;
}

void regpar_pool_outside_deregister(regpar_pool_t *pool, regpar_outside_t *o)
{
    if (!pool || !o) {
        return;
    }
    pthread_mutex_lock(&pool->reg_lock);
    outside_deregister_locked(pool, o);
    if (o->prev) {
        o->prev->next = o->next;
    } else {
        pool->outside = o->next;
    }
    if (o->next) {
        o->next->prev = o->prev;
    }
    pthread_mutex_unlock(&pool->reg_lock);
    free(o);
}

size_t regpar_pool_register_live(regpar_pool_t *pool)
{
    size_t done = 0;
    regpar_reg_engine_t *reg = pool ? pool->cfg.reg : NULL;
    if (!reg || REGPAR_REG_NONE == regpar_reg_engine_backend(reg)) {
        return 0;
    }
    pthread_mutex_lock(&pool->reg_lock);
    pthread_mutex_lock(&pool->grow_lock);
    for (regpar_slab_t *s = pool->live; s; s = s->next) {
        if (s->has_region) {
            continue;
        }
        /* The pages are present already (pre-faulted at creation); buffers
         * may be out and in use: registering does not move them. */
        if (0 == regpar_reg_region_register_units(reg, s->base, s->len, s->buf_size, &s->region)) {
            s->has_region = true;
            done += s->region.registered;
        }
    }
    pthread_mutex_unlock(&pool->grow_lock);
    for (regpar_outside_t *o = pool->outside; o; o = o->next) {
        outside_register_locked(pool, o);
    }
    pthread_mutex_unlock(&pool->reg_lock);
    if (done) {
        pool_log(pool, 2, "registered %zu slab(s) created before the registrar was attached", done);
    }
    return done;
}

size_t regpar_pool_deregister_live(regpar_pool_t *pool)
{
    size_t done = 0;
    if (!pool || !pool->cfg.reg) {
        return 0;
    }
    pthread_mutex_lock(&pool->reg_lock);
    pthread_mutex_lock(&pool->grow_lock);
    for (regpar_slab_t *s = pool->live; s; s = s->next) {
        if (s->has_region) {
            done += s->region.registered;
            regpar_reg_region_deregister(pool->cfg.reg, &s->region);
            s->has_region = false;
        }
    }
    pthread_mutex_unlock(&pool->grow_lock);
    for (regpar_outside_t *o = pool->outside; o; o = o->next) {
        outside_deregister_locked(pool, o);
    }
    pthread_mutex_unlock(&pool->reg_lock);
    return done;
}

void regpar_pool_destroy(regpar_pool_t *pool)
{
    if (!pool) {
        return;
    }
    uint64_t leaked_bytes = 0, leaked = slab_release_all(pool, &leaked_bytes);
    if (leaked && pool->cfg.verbose >= 1) {
        pool_log(pool, 1,
                 "%" PRIu64 " buffer(s) (%" PRIu64 " bytes) were still out when the pool was "
                 "destroyed; they are unmapped",
                 leaked, leaked_bytes);
    }
    /* The owner deregisters a range before it unmaps it, and frees its
     * communicators before the mpool framework closes; a range still here
     * belongs to what the application never freed (a persistent request),
     * deregistered already by the finalize hook where a registrar had it. */
    while (pool->outside) {
        regpar_outside_t *o = pool->outside;
        pool->outside = o->next;
        pool_log(pool, 2, "an outside range of %zu bytes (%s) forgotten with the pool", o->len,
                 o->has_region ? "deregistered now" : "not registered");
        outside_deregister_locked(pool, o);
        free(o);
    }
    for (unsigned i = 0; i <= pool->nbuckets; i++) {
        bucket_fini(&pool->buckets[i]);
    }
    slab_desc_fini(pool);
    map_fini(pool);
    regpar_sys_fini(&pool->sys);
    pthread_mutex_destroy(&pool->grow_lock);
    pthread_mutex_destroy(&pool->reg_lock);
    free(pool->buckets);
    free(pool);
}
