/*
 * The registration engine: creating and destroying it, the helpers the
 * backends share (regpar_reg_backend.h), choosing and opening a backend, and
 * statistics.  Configuration is in regpar_reg_config.c, the parallel policy
 * and pre-faulting in regpar_reg_plan.c, registering regions in
 * regpar_reg_region.c; regpar_reg_engine.h holds what they share.
 */
#include "bufpool_config.h"

#include "regpar_reg_engine.h"
#include "regpar_size.h"

#include <dirent.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

/* ------------------------------------------------------------------------ */
/* Messages */

void regpar_reg_i_log_failure(regpar_reg_engine_t *engine, const char *backend,
                              const regpar_reg_why_t *why)
{
    regpar_sys_log_once(&engine->sys, why->key, 1,
                        "regpar: %s registration failed: %s; %s; continuing with unregistered "
                        "memory",
                        backend, why->cause, why->remedy);
}

/* VmLck of this process in bytes, or -1 when /proc is not readable. */
static long long locked_bytes(void)
{
    FILE *status = fopen("/proc/self/status", "r");
    if (!status) {
        return -1;
    }
    char line[256];
    long long kib = -1;
    while (fgets(line, sizeof(line), status)) {
        if (1 == sscanf(line, "VmLck: %lld kB", &kib)) {
            break;
        }
    }
    fclose(status);
    return kib < 0 ? -1 : kib * 1024;
}

/* ------------------------------------------------------------------------ */
/* Helpers for the backends (regpar_reg_backend.h) */

void regpar_reg_why_set(regpar_reg_why_t *why, const char *key, const char *remedy,
                        const char *cause_fmt, ...)
{
    snprintf(why->key, sizeof(why->key), "%s", key);
    snprintf(why->remedy, sizeof(why->remedy), "%s", remedy);
    va_list ap;
    va_start(ap, cause_fmt);
    vsnprintf(why->cause, sizeof(why->cause), cause_fmt, ap);
    va_end(ap);
}

void regpar_reg_explain_pinning(const char *backend, const char *what, int code, size_t len,
                                const char *remedy_other, regpar_reg_why_t *why)
{
    char chunk[32];
    regpar_format_size(len, chunk, sizeof(chunk));
    if (ENOMEM == code || EPERM == code) {
        struct rlimit limit;
        char limit_text[32] = "unknown", locked_text[32] = "unknown", key[64];
        if (0 == getrlimit(RLIMIT_MEMLOCK, &limit)) {
            if (RLIM_INFINITY == limit.rlim_cur) {
                snprintf(limit_text, sizeof(limit_text), "unlimited");
            } else {
                regpar_format_size(limit.rlim_cur, limit_text, sizeof(limit_text));
            }
        }
        long long locked = locked_bytes();
        if (locked >= 0) {
            regpar_format_size((uint64_t)locked, locked_text, sizeof(locked_text));
        }
        snprintf(key, sizeof(key), "%s:memlock", backend);
        regpar_reg_why_set(why, key,
                           "raise RLIMIT_MEMLOCK (ulimit -l, or the limits your launcher or "
                           "batch system sets) or set mpool_regpar_reg_backend=none",
                           "%s of a %s chunk failed: %s (RLIMIT_MEMLOCK is %s, %s locked "
                           "already)",
                           what, chunk, strerror(code), limit_text, locked_text);
        return;
    }
    char key[64];
    snprintf(key, sizeof(key), "%s:%s:%d", backend, what, code);
    regpar_reg_why_set(why, key, remedy_other, "%s of a %s chunk failed: %s", what, chunk,
                       strerror(code));
}

int regpar_reg_unbuilt_open(const char *backend, const char *remedy, const char *library,
                            regpar_reg_why_t *why)
{
    char key[32];
    snprintf(key, sizeof(key), "%s:notbuilt", backend);
    regpar_reg_why_set(why, key, remedy, "not built with %s", library);
    return -1;
}

int regpar_reg_unbuilt_reg(void *ctx, regpar_reg_chunk_t *chunk)
{
    (void)ctx;
    (void)chunk;
    return ENOSYS;
}

int regpar_reg_unbuilt_dereg(void *ctx, regpar_reg_chunk_t *chunk)
{
    (void)ctx;
    (void)chunk;
    return 0;
}

void regpar_reg_unbuilt_explain(void *ctx, int code, const regpar_reg_chunk_t *chunk, bool dereg,
                                regpar_reg_why_t *why)
{
    (void)ctx;
    (void)chunk;
    (void)dereg;
    regpar_reg_why_set(why, "notbuilt", "reconfigure with the backend's library",
                       "backend not built (%s)", strerror(code));
}

int regpar_reg_close_nothing(void *ctx, regpar_reg_why_t *why)
{
    (void)ctx;
    (void)why;
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Engine */

static const regpar_reg_backend_ops_t *backend_ops(regpar_reg_backend_t backend)
{
    switch (backend) {
        case REGPAR_REG_PIN:
            return &regpar_reg_backend_pin;
        case REGPAR_REG_OFI:
            return &regpar_reg_backend_ofi;
        case REGPAR_REG_VERBS:
            return &regpar_reg_backend_verbs;
        default:
            return NULL;
    }
}

static bool try_open(regpar_reg_engine_t *engine, const regpar_reg_backend_ops_t *ops, bool probing,
                     regpar_reg_why_t *why)
{
    memset(why, 0, sizeof(*why));
    memset(&engine->props, 0, sizeof(engine->props));
    if (0 != ops->open(&engine->cfg, &engine->sys, probing, &engine->ctx, &engine->props, why)) {
        engine->ctx = NULL;
        return false;
    }
    engine->ops = ops;
    engine->backend = ops->id;
    return true;
}

/*
 * Whether the machine has a network device that could need registration:
 * an RDMA device (verbs, EFA, Omni-Path all appear under
 * /sys/class/infiniband) or an HPE Slingshot NIC (/sys/class/cxi).  Without
 * one, no libfabric provider asks for local registration, and probing
 * libfabric would only cost every process its start-up (about 0.15-0.3 s
 * measured here, for nothing).
 */
static bool rdma_hardware_present(void)
{
    static const char *const classes[] = {"/sys/class/infiniband", "/sys/class/cxi"};
    for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
        DIR *dir = opendir(classes[i]);
        if (NULL == dir) {
            continue;
        }
        struct dirent *entry;
        bool found = false;
        while (!found && NULL != (entry = readdir(dir))) {
            found = '.' != entry->d_name[0];
        }
        closedir(dir);
        if (found) {
            return true;
        }
    }
    return false;
}

static void open_backend(regpar_reg_engine_t *engine)
{
    regpar_reg_why_t why;
    engine->ops = NULL;
    engine->backend = REGPAR_REG_NONE;
    if (REGPAR_REG_AUTO == engine->cfg.backend) {
        regpar_reg_why_t verbs_why, ofi_why;
        if (!rdma_hardware_present()) {
            emitf(engine, 2,
                  "regpar: reg_backend auto chose none (no device in /sys/class/infiniband or "
                  "/sys/class/cxi)");
            return;
        }
        if (try_open(engine, &regpar_reg_backend_verbs, true, &verbs_why) ||
            try_open(engine, &regpar_reg_backend_ofi, true, &ofi_why)) {
            emitf(engine, 2, "regpar: reg_backend auto chose %s", engine->ops->name);
            return;
        }
        emitf(engine, 2, "regpar: reg_backend auto chose none (verbs: %s; ofi: %s)",
              verbs_why.cause, ofi_why.cause);
        return;
    }
    const regpar_reg_backend_ops_t *ops = backend_ops(engine->cfg.backend);
    if (ops && !try_open(engine, ops, false, &why)) {
        regpar_reg_i_log_failure(engine, ops->name, &why);
    }
}

int regpar_reg_engine_create(const regpar_reg_config_t *cfg, regpar_reg_engine_t **engine,
                             char *err, size_t errlen)
{
    *engine = NULL;
    size_t page = system_page_size();
    if (!cfg) {
        snprintf(err, errlen, "regpar: no registration configuration given");
        return -1;
    }
    if (0 != regpar_reg_i_check_config(cfg, page, err, errlen)) {
        return -1;
    }
    regpar_reg_engine_t *e = calloc(1, sizeof(*e));
    if (!e) {
        snprintf(err, errlen, "regpar: out of memory for the registration engine");
        return -1;
    }
    e->cfg = *cfg;
    e->page = page;
    snprintf(e->ofi_provider, sizeof(e->ofi_provider), "%s",
             cfg->ofi_provider ? cfg->ofi_provider : "");
    snprintf(e->verbs_device, sizeof(e->verbs_device), "%s",
             cfg->verbs_device ? cfg->verbs_device : "");
    e->cfg.ofi_provider = e->ofi_provider;
    e->cfg.verbs_device = e->verbs_device;
    /* Every message goes to the callback, which applies the verbosity. */
    regpar_sys_init(&e->sys, cfg->sys, cfg->log, cfg->log_arg, REGPAR_SYS_VERBOSE_ALL, NULL);
    e->sys.remember_unsupported = true;
    pthread_rwlock_init(&e->backend_lock, NULL);
    pthread_mutex_init(&e->registrar.serial, NULL);

    e->cores = regpar_workers_online_cores();
    e->threads = cfg->threads;
    if (0 == e->threads) {
        e->threads =
            e->cores < REGPAR_REG_DEFAULT_MAX_THREADS ? e->cores : REGPAR_REG_DEFAULT_MAX_THREADS;
    }
    if (e->threads > REGPAR_REG_MAX_THREADS) {
        emitf(e, 1,
              "regpar: mpool_regpar_reg_threads=%u is above %d; using %d (0 means one per core)",
              e->threads, REGPAR_REG_MAX_THREADS, REGPAR_REG_MAX_THREADS);
        e->threads = REGPAR_REG_MAX_THREADS;
    }
    if (REGPAR_PAR_OFF == cfg->parallel) {
        e->threads = 1;
    }
    if (e->threads > 1) {
        char why[256];
        if (0 !=
            regpar_workers_create(e->threads, cfg->bind_threads, &e->workers, why, sizeof(why))) {
            emitf(e, 1,
                  "regpar: %s; registering on one thread (set mpool_regpar_reg_threads=1 "
                  "to silence this)",
                  why);
            e->threads = 1;
        }
    }
    open_backend(e);

    char chunk[32], threshold[32];
    regpar_format_size(e->cfg.chunk_size, chunk, sizeof(chunk));
    regpar_format_size(e->cfg.threshold, threshold, sizeof(threshold));
    emitf(e, 2,
          "regpar: registration backend %s, %u thread(s) on %u core(s), chunk %s, threshold %s, "
          "parallel %s (registration %s, deregistration %s), prefault %s",
          regpar_reg_backend_name(e->backend), e->threads, e->cores, chunk, threshold,
          regpar_reg_parallel_name(e->cfg.parallel),
          e->props.parallel_reg ? "parallel-capable" : "sequential in auto",
          e->props.parallel_dereg ? "parallel-capable" : "sequential in auto",
          regpar_reg_i_will_prefault(e) ? "on" : "off");
    if (e->ops && e->cfg.chunk_size > REGPAR_REG_MAX_SAFE_CHUNK_SIZE) {
        emitf(e, 1,
              "regpar: mpool_regpar_reg_chunk_size=%s is above 4G, more than some providers "
              "(EFA) accept in one registration; lower it if registrations fail",
              chunk);
    }
    *engine = e;
    return 0;
}

void regpar_reg_engine_destroy(regpar_reg_engine_t *engine)
{
    if (!engine) {
        return;
    }
    uint64_t still = atomic_load(&engine->stats.bytes_registered);
    if (0 != still) {
        emitf(engine, 1,
              "regpar: registration engine destroyed with %llu bytes still registered (a region "
              "was not deregistered)",
              (unsigned long long)still);
    }
    regpar_reg_why_t why;
    if (engine->ops && 0 != engine->ops->close(engine->ctx, &why)) {
        emitf(engine, 1, "regpar: closing backend %s failed: %s; %s", engine->ops->name, why.cause,
              why.remedy);
    }
    regpar_workers_destroy(engine->workers);
    pthread_mutex_destroy(&engine->registrar.serial);
    pthread_rwlock_destroy(&engine->backend_lock);
    regpar_sys_fini(&engine->sys);
    free(engine);
}

regpar_reg_backend_t regpar_reg_engine_backend(const regpar_reg_engine_t *engine)
{
    return engine ? engine->backend : REGPAR_REG_NONE;
}

unsigned regpar_reg_engine_threads(const regpar_reg_engine_t *engine)
{
    return engine ? engine->threads : 1;
}

void regpar_reg_get_stats(const regpar_reg_engine_t *engine, regpar_reg_stats_t *stats)
{
    memset(stats, 0, sizeof(*stats));
    if (!engine) {
        return;
    }
    /* atomic_load takes a non-const pointer in C11. */
    engine_stats_t *s = (engine_stats_t *)&engine->stats;
    stats->regions_registered = atomic_load_explicit(&s->regions_registered, memory_order_relaxed);
    stats->regions_deregistered =
        atomic_load_explicit(&s->regions_deregistered, memory_order_relaxed);
    stats->chunks_registered = atomic_load_explicit(&s->chunks_registered, memory_order_relaxed);
    stats->chunks_deregistered =
        atomic_load_explicit(&s->chunks_deregistered, memory_order_relaxed);
    stats->bytes_registered = atomic_load_explicit(&s->bytes_registered, memory_order_relaxed);
    stats->reg_failures = atomic_load_explicit(&s->reg_failures, memory_order_relaxed);
    stats->reg_time_ns = atomic_load_explicit(&s->reg_time_ns, memory_order_relaxed);
    stats->prefault_time_ns = atomic_load_explicit(&s->prefault_time_ns, memory_order_relaxed);
    stats->dereg_time_ns = atomic_load_explicit(&s->dereg_time_ns, memory_order_relaxed);
    stats->parallel_regions = atomic_load_explicit(&s->parallel_regions, memory_order_relaxed);
}
