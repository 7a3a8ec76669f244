/*
 * Registering regions: the adapter that lets an attached registrar act as a
 * backend, registering and deregistering a region's chunks (in parallel
 * where the plan says so, rolled back on failure), attaching and detaching a
 * registrar, and finding the chunk that holds an address.
 */
#include "bufpool_config.h"

#include "regpar_reg_engine.h"
#include "regpar_size.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------------------ */
/* The registrar adapter: an attached registrar seen as a backend */

/* Call the registrar's reg or dereg, one call at a time unless it is
 * thread-safe. */
static int registrar_call(registrar_ctx_t *r, int (*fn)(void *arg, regpar_reg_chunk_t *chunk),
                          regpar_reg_chunk_t *chunk)
{
    if (r->registrar->thread_safe) {
        return fn(r->arg, chunk);
    }
    pthread_mutex_lock(&r->serial);
    int rc = fn(r->arg, chunk);
    pthread_mutex_unlock(&r->serial);
    return rc;
}

static int registrar_reg(void *ctx, regpar_reg_chunk_t *chunk)
{
    registrar_ctx_t *r = ctx;
    return registrar_call(r, r->registrar->reg, chunk);
}

static int registrar_dereg(void *ctx, regpar_reg_chunk_t *chunk)
{
    registrar_ctx_t *r = ctx;
    return registrar_call(r, r->registrar->dereg, chunk);
}

static void registrar_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                              regpar_reg_why_t *why)
{
    registrar_ctx_t *r = ctx;
    char key[64], size[32];
    snprintf(key, sizeof(key), "%s:%s:%d", r->registrar->name, dereg ? "dereg" : "reg", code);
    regpar_format_size(chunk->len, size, sizeof(size));
    regpar_reg_why_set(why, key,
                       r->registrar->remedy ? r->registrar->remedy
                                            : "set mpool_regpar_reg_backend=none to silence this",
                       "the %s registrar %s a %s chunk: %s", r->registrar->name,
                       dereg ? "could not deregister" : "refused", size, strerror(code));
}

static const regpar_reg_backend_ops_t registrar_backend = {
    .id = REGPAR_REG_REGISTRAR,
    .name = "registrar",
    .reg = registrar_reg,
    .dereg = registrar_dereg,
    .explain = registrar_explain,
    .close = regpar_reg_close_nothing,
};

/* The name messages use for the backend in use. */
static const char *ops_name(const regpar_reg_engine_t *engine)
{
    return &registrar_backend == engine->ops ? engine->registrar.registrar->name
                                             : engine->ops->name;
}

/* ------------------------------------------------------------------------ */
/* Registration */

typedef struct chunk_job {
    regpar_reg_engine_t *engine;
    regpar_reg_chunk_t *chunks;
    const int *only_ok; /* dereg: skip chunks whose registration status is not 0 */
} chunk_job_t;

static int reg_task(void *arg, size_t index)
{
    chunk_job_t *job = arg;
    regpar_reg_chunk_t *chunk = &job->chunks[index];
    /* Fault injection (tests): the registration fails with the hook's
     * code instead of being made, whatever the backend. */
    int rc = regpar_sys_injected_failure(&job->engine->sys, chunk->addr, chunk->len);
    return 0 != rc ? rc : job->engine->ops->reg(job->engine->ctx, chunk);
}

static int dereg_task(void *arg, size_t index)
{
    chunk_job_t *job = arg;
    if (job->only_ok && 0 != job->only_ok[index]) {
        return 0;
    }
    return job->engine->ops->dereg(job->engine->ctx, &job->chunks[index]);
}

/* Deregister chunks (those with only_ok[i] == 0 when only_ok is given);
 * returns the threads used.  A failure is logged and otherwise ignored:
 * there is nothing better to do with memory that is being given back. */
static unsigned dereg_chunks(regpar_reg_engine_t *engine, regpar_reg_chunk_t *chunks,
                             size_t nchunks, size_t len, const int *only_ok)
{
    chunk_job_t job = {.engine = engine, .chunks = chunks, .only_ok = only_ok};
    int *status = malloc(nchunks * sizeof(int));
    unsigned used = 1;
    if (status) {
        unsigned want = regpar_reg_i_phase_threads(engine, PHASE_DEREG, len, nchunks, true);
        used = regpar_workers_run(engine->workers, want, dereg_task, &job, nchunks, status, false);
    }
    for (size_t i = 0; i < nchunks; i++) {
        int rc = status ? status[i] : dereg_task(&job, i);
        if (0 != rc) {
            regpar_reg_why_t why;
            engine->ops->explain(engine->ctx, rc, &chunks[i], true, &why);
            regpar_sys_log_once(&engine->sys, why.key, 1,
                                "regpar: %s deregistration failed: %s; %s", ops_name(engine),
                                why.cause, why.remedy);
        }
    }
    free(status);
    return used;
}

/*
 * Register the chunks of region with the backend.  Returns 0 with
 * region->chunks set, 1 when the backend failed (rolled back and logged),
 * -1 when the chunk table could not be allocated (logged).
 */
static int register_chunks(regpar_reg_engine_t *engine, regpar_reg_region_t *region, size_t unit,
                           bool prefaulted, unsigned *threads_used)
{
    /* Chunk boundaries at multiples of unit (the buffer size): every buffer
     * lies inside one registration, which is what a transport's cache needs
     * to answer a lookup of the whole buffer. */
    size_t chunk = engine->cfg.chunk_size;
    if (unit > engine->page) {
        chunk = chunk >= unit ? chunk / unit * unit : unit;
    }
    span_t span;
    regpar_reg_i_span_init(&span, region->addr, region->len, chunk, engine->page);
    regpar_reg_chunk_t *chunks = calloc(span.count, sizeof(*chunks));
    int *status = malloc(span.count * sizeof(int));
    if (!chunks || !status) {
        free(chunks);
        free(status);
        emitf(engine, 0,
              "regpar: out of memory for the %zu-entry chunk table of a %zu-byte region; it "
              "stays unregistered",
              span.count, region->len);
        return -1;
    }
    for (size_t i = 0; i < span.count; i++) {
        regpar_reg_i_span_piece(&span, i, (char **)&chunks[i].addr, &chunks[i].len);
    }

    chunk_job_t job = {.engine = engine, .chunks = chunks};
    unsigned want =
        regpar_reg_i_phase_threads(engine, PHASE_REG, region->len, span.count, prefaulted);
    *threads_used =
        regpar_workers_run(engine->workers, want, reg_task, &job, span.count, status, true);

    size_t failed = span.count;
    for (size_t i = 0; i < span.count && failed == span.count; i++) {
        if (0 < status[i]) {
            failed = i;
        }
    }
    if (failed < span.count) {
        regpar_reg_why_t why;
        engine->ops->explain(engine->ctx, status[failed], &chunks[failed], false, &why);
        dereg_chunks(engine, chunks, span.count, region->len, status);
        regpar_reg_i_log_failure(engine, ops_name(engine), &why);
        free(chunks);
        free(status);
        return 1;
    }
    free(status);
    region->chunks = chunks;
    region->nchunks = span.count;
    return 0;
}

static int region_register(regpar_reg_engine_t *engine, void *addr, size_t len, size_t unit,
                           regpar_reg_region_t *region)
{
    memset(region, 0, sizeof(*region));
    region->addr = addr;
    region->len = len;
    if (!engine || 0 == len) {
        return 0;
    }
    if (!addr) {
        emitf(engine, 0, "regpar: cannot register %zu bytes at a NULL address", len);
        return -1;
    }
    uint64_t start = now_ns();
    unsigned prefault_threads = 1, reg_threads = 1;
    bool prefault = regpar_reg_i_will_prefault(engine);
    bool lock_first = prefault && engine->ops && engine->props.lock_before_prefault;
    int prefault_rc = 0, reg_rc = 1;
    bool prefault_reported = false;

    if (prefault && !lock_first) {
        prefault_rc = regpar_reg_i_prefault_range(engine, addr, len, &prefault_threads);
        region->prefaulted = 0 == prefault_rc;
    }
    if (engine->ops) {
        reg_rc = register_chunks(engine, region, unit, region->prefaulted, &reg_threads);
    }
    if (lock_first) {
        prefault_rc = regpar_reg_i_prefault_range(engine, addr, len, &prefault_threads);
        region->prefaulted = 0 == prefault_rc;
        if (0 != prefault_rc && 0 == reg_rc) {
            /* The pages the pin was armed for could not all be brought in:
             * mlock itself would have failed the same way. */
            regpar_reg_why_t why;
            char key[64], size[32];
            snprintf(key, sizeof(key), "%s:populate:%d", ops_name(engine), prefault_rc);
            regpar_format_size(len, size, sizeof(size));
            regpar_reg_why_set(&why, key,
                               "free memory, lower the pool's capacity, or set "
                               "mpool_regpar_reg_backend=none",
                               "faulting in the pages of a %s slab failed: %s", size,
                               strerror(prefault_rc));
            dereg_chunks(engine, region->chunks, region->nchunks, len, NULL);
            regpar_reg_i_log_failure(engine, ops_name(engine), &why);
            free(region->chunks);
            region->chunks = NULL;
            region->nchunks = 0;
            reg_rc = 1;
            prefault_reported = true;
        }
    }
    if (0 != prefault_rc && !prefault_reported) {
        regpar_reg_i_log_prefault_failure(engine, len, prefault_rc);
    }

    if (0 == reg_rc) {
        region->registered = true;
        add_stat(&engine->stats.regions_registered, 1);
        add_stat(&engine->stats.chunks_registered, region->nchunks);
        add_stat(&engine->stats.bytes_registered, len);
    } else if (engine->ops) {
        add_stat(&engine->stats.reg_failures, 1);
    }
    if (prefault_threads > 1 || reg_threads > 1) {
        add_stat(&engine->stats.parallel_regions, 1);
    }
    add_stat(&engine->stats.reg_time_ns, now_ns() - start);
    return reg_rc < 0 ? -1 : 0;
}

int regpar_reg_region_register_units(regpar_reg_engine_t *engine, void *addr, size_t len,
                                     size_t unit, regpar_reg_region_t *region)
{
    if (!engine) {
        memset(region, 0, sizeof(*region));
        region->addr = addr;
        region->len = len;
        return 0;
    }
    pthread_rwlock_rdlock(&engine->backend_lock);
    int rc = region_register(engine, addr, len, unit, region);
    pthread_rwlock_unlock(&engine->backend_lock);
    return rc;
}

int regpar_reg_region_register(regpar_reg_engine_t *engine, void *addr, size_t len,
                               regpar_reg_region_t *region)
{
    return regpar_reg_region_register_units(engine, addr, len, 0, region);
}

void regpar_reg_region_deregister(regpar_reg_engine_t *engine, regpar_reg_region_t *region)
{
    if (!region) {
        return;
    }
    if (engine) {
        pthread_rwlock_rdlock(&engine->backend_lock);
    }
    if (engine && engine->ops && region->registered && region->chunks) {
        uint64_t start = now_ns();
        dereg_chunks(engine, region->chunks, region->nchunks, region->len, NULL);
        add_stat(&engine->stats.regions_deregistered, 1);
        add_stat(&engine->stats.chunks_deregistered, region->nchunks);
        atomic_fetch_sub_explicit(&engine->stats.bytes_registered, region->len,
                                  memory_order_relaxed);
        add_stat(&engine->stats.dereg_time_ns, now_ns() - start);
    }
    if (engine) {
        pthread_rwlock_unlock(&engine->backend_lock);
    }
    free(region->chunks);
    memset(region, 0, sizeof(*region));
}

int regpar_reg_engine_attach(regpar_reg_engine_t *engine, const regpar_registrar_t *registrar,
                             void *arg)
{
    if (!engine || !registrar || !registrar->reg || !registrar->dereg) {
        return -1;
    }
    pthread_rwlock_wrlock(&engine->backend_lock);
    int rc = -1;
    if (NULL == engine->ops) {
        engine->registrar.registrar = registrar;
        engine->registrar.arg = arg;
        memset(&engine->props, 0, sizeof(engine->props));
        /* Parallel only where the registrar says concurrent calls are safe;
         * the transports want present pages (FI_MR_ALLOCATED, ODP aside). */
        engine->props.parallel_reg = registrar->thread_safe;
        engine->props.parallel_dereg = registrar->thread_safe;
        engine->props.needs_prefault = true;
        engine->ctx = &engine->registrar;
        engine->ops = &registrar_backend;
        engine->backend = REGPAR_REG_REGISTRAR;
        rc = 0;
    }
    pthread_rwlock_unlock(&engine->backend_lock);
    if (0 == rc) {
        emitf(engine, 2, "regpar: registrar %s attached (%s)", registrar->name,
              registrar->thread_safe ? "chunks registered in parallel where it helps"
                                     : "not thread-safe: one call at a time, from the thread "
                                       "that creates the slab");
    }
    return rc;
}

void regpar_reg_engine_detach(regpar_reg_engine_t *engine)
{
    if (!engine) {
        return;
    }
    pthread_rwlock_wrlock(&engine->backend_lock);
    if (&registrar_backend == engine->ops) {
        engine->ops = NULL;
        engine->ctx = NULL;
        engine->backend = REGPAR_REG_NONE;
        memset(&engine->props, 0, sizeof(engine->props));
        engine->registrar.registrar = NULL;
        engine->registrar.arg = NULL;
    }
    pthread_rwlock_unlock(&engine->backend_lock);
}

const char *regpar_reg_engine_registrar_name(const regpar_reg_engine_t *engine)
{
    if (!engine) {
        return NULL;
    }
    regpar_reg_engine_t *e = (regpar_reg_engine_t *)engine;
    pthread_rwlock_rdlock(&e->backend_lock);
    const char *name = &registrar_backend == e->ops ? e->registrar.registrar->name : NULL;
    pthread_rwlock_unlock(&e->backend_lock);
    return name;
}

const regpar_reg_chunk_t *regpar_reg_region_find(const regpar_reg_region_t *region,
                                                 const void *addr)
{
    if (!region || !region->chunks || 0 == region->nchunks) {
        return NULL;
    }
    uintptr_t where = (uintptr_t)addr;
    uintptr_t first = (uintptr_t)region->chunks[0].addr;
    const regpar_reg_chunk_t *last = &region->chunks[region->nchunks - 1];
    if (where < first || where >= (uintptr_t)last->addr + last->len) {
        return NULL;
    }
    /* Chunks after the first start at equal strides; the first may be
     * shorter (unaligned start), so search rather than divide. */
    size_t lo = 0, hi = region->nchunks;
    while (hi - lo > 1) {
        size_t mid = lo + (hi - lo) / 2;
        if ((uintptr_t)region->chunks[mid].addr <= where) {
            lo = mid;
        } else {
            hi = mid;
        }
    }
    return &region->chunks[lo];
}
