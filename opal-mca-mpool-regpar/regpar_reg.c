/*
 * The registration engine: configuration, chunking, the parallel policy,
 * rollback, messages and statistics.  Backends only register one chunk at a
 * time (regpar_reg_backend.h); threads come from regpar_workers.
 *
 * Policy of reg_parallel=auto, from measurements on the project machine and
 * the references (docs/registration.md has the numbers):
 *   - nothing in parallel below reg_threshold, with one core, or for one
 *     piece of work;
 *   - pre-faulting runs in parallel: faults on disjoint ranges scale with
 *     cores (1 GiB: 272 ms on one thread, 194 ms on two);
 *   - registration runs in parallel only when the backend gains from it and
 *     the region was pre-faulted: pinning untouched memory from several
 *     threads is the Mooncake trap (5x slower), and mlock/munlock serialise
 *     on the mm lock anyway (backend pin registers on one thread);
 *   - no more threads than idle cores: with other work runnable on the
 *     cores (a loaded machine, MPI ranks polling), a second thread only
 *     competes for the same cycles (1 GiB: 12-25% slower than one thread at
 *     a load of 13 on 2 cores).
 * reg_parallel=on skips the measured conditions (not the threshold) and is
 * what the benchmark compares against.
 */
#include "bufpool_config.h"

#include "regpar_reg.h"
#include "regpar_reg_backend.h"
#include "regpar_size.h"
#include "regpar_workers.h"

#include <dirent.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

/* Pre-fault pieces are multiples of this, so that a transparent huge page
 * is never faulted by two threads. */
#define PREFAULT_GRANULE ((size_t)2 << 20)

typedef struct engine_stats {
    atomic_uint_fast64_t regions_registered;
    atomic_uint_fast64_t regions_deregistered;
    atomic_uint_fast64_t chunks_registered;
    atomic_uint_fast64_t chunks_deregistered;
    atomic_uint_fast64_t bytes_registered;
    atomic_uint_fast64_t reg_failures;
    atomic_uint_fast64_t reg_time_ns;
    atomic_uint_fast64_t prefault_time_ns;
    atomic_uint_fast64_t dereg_time_ns;
    atomic_uint_fast64_t parallel_regions;
} engine_stats_t;

/* The context of the adapter that lets an attached registrar act as a
 * backend.  serial orders the calls of a registrar that is not thread-safe
 * (two threads growing the pool at once). */
typedef struct registrar_ctx {
    const regpar_registrar_t *registrar;
    void *arg;
    pthread_mutex_t serial;
} registrar_ctx_t;

struct regpar_reg_engine {
    regpar_reg_config_t cfg; /* string members point into the copies below */
    char ofi_provider[128];
    char verbs_device[128];
    regpar_reg_backend_t backend;        /* in use: never auto */
    const regpar_reg_backend_ops_t *ops; /* NULL for none */
    void *ctx;
    regpar_reg_backend_props_t props;
    /* Registrations read ops/ctx/props under the read side; attaching or
     * detaching a registrar takes the write side, so that a slab is never
     * half registered through one backend and released through another. */
    pthread_rwlock_t backend_lock;
    registrar_ctx_t registrar; /* ctx when ops is the registrar adapter */
    regpar_workers_t *workers;
    unsigned threads; /* caller included */
    unsigned cores;
    size_t page;
    /* System calls, messages and log-once, shaped like the pool's. */
    regpar_sys_t sys;
    engine_stats_t stats;
};

typedef enum phase { PHASE_PREFAULT, PHASE_REG, PHASE_DEREG } phase_t;

/* ------------------------------------------------------------------------ */
/* Small helpers */

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void add_stat(atomic_uint_fast64_t *counter, uint64_t value)
{
    atomic_fetch_add_explicit(counter, value, memory_order_relaxed);
}

static size_t system_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

#define emitf(engine, ...) regpar_sys_log(&(engine)->sys, __VA_ARGS__)

static void log_reg_failure(regpar_reg_engine_t *engine, const char *backend,
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
/* Names and configuration */

static const struct {
    const char *name;
    regpar_reg_backend_t value;
} backend_names[] = {{"auto", REGPAR_REG_AUTO},   {"none", REGPAR_REG_NONE},
                     {"pin", REGPAR_REG_PIN},     {"ofi", REGPAR_REG_OFI},
                     {"verbs", REGPAR_REG_VERBS}, {"registrar", REGPAR_REG_REGISTRAR}};

static const struct {
    const char *name;
    regpar_reg_parallel_t value;
} parallel_names[] = {{"auto", REGPAR_PAR_AUTO}, {"on", REGPAR_PAR_ON}, {"off", REGPAR_PAR_OFF}};

#define COUNT_OF(a) (sizeof(a) / sizeof((a)[0]))

void regpar_reg_config_defaults(regpar_reg_config_t *cfg)
{
    memset(cfg, 0, sizeof(*cfg));
    cfg->backend = REGPAR_REG_AUTO;
    cfg->parallel = REGPAR_PAR_AUTO;
    cfg->threads = 0;
    cfg->chunk_size = REGPAR_REG_DEFAULT_CHUNK_SIZE;
    cfg->threshold = REGPAR_REG_DEFAULT_THRESHOLD;
    cfg->prefault = true;
    cfg->bind_threads = false;
}

int regpar_reg_backend_parse(const char *name, regpar_reg_backend_t *out)
{
    for (size_t i = 0; name && i < COUNT_OF(backend_names); i++) {
        if (0 == strcasecmp(name, backend_names[i].name)) {
            *out = backend_names[i].value;
            return 0;
        }
    }
    return -1;
}

int regpar_reg_parallel_parse(const char *name, regpar_reg_parallel_t *out)
{
    for (size_t i = 0; name && i < COUNT_OF(parallel_names); i++) {
        if (0 == strcasecmp(name, parallel_names[i].name)) {
            *out = parallel_names[i].value;
            return 0;
        }
    }
    return -1;
}

const char *regpar_reg_backend_name(regpar_reg_backend_t backend)
{
    for (size_t i = 0; i < COUNT_OF(backend_names); i++) {
        if (backend_names[i].value == backend) {
            return backend_names[i].name;
        }
    }
    return "unknown";
}

const char *regpar_reg_parallel_name(regpar_reg_parallel_t parallel)
{
    for (size_t i = 0; i < COUNT_OF(parallel_names); i++) {
        if (parallel_names[i].value == parallel) {
            return parallel_names[i].name;
        }
    }
    return "unknown";
}

int regpar_reg_config_set_backend(regpar_reg_config_t *cfg, const char *name)
{
    if (0 == regpar_reg_backend_parse(name, &cfg->backend)) {
        return 0;
    }
    char msg[512];
    snprintf(msg, sizeof(msg),
             "regpar: %s registration failed: unknown registration backend '%s'; set "
             "mpool_regpar_reg_backend to auto, ofi, verbs, pin or none; continuing with "
             "unregistered memory",
             name ? name : "(null)", name ? name : "(null)");
    regpar_sys_emit(cfg->log, cfg->log_arg, NULL, 1, msg);
    cfg->backend = REGPAR_REG_NONE;
    return -1;
}

int regpar_reg_config_set_parallel(regpar_reg_config_t *cfg, const char *name)
{
    if (0 == regpar_reg_parallel_parse(name, &cfg->parallel)) {
        return 0;
    }
    char msg[512];
    snprintf(msg, sizeof(msg),
             "regpar: unknown parallel registration mode '%s'; set mpool_regpar_reg_parallel "
             "to auto, on or off; using auto",
             name ? name : "(null)");
    regpar_sys_emit(cfg->log, cfg->log_arg, NULL, 1, msg);
    cfg->parallel = REGPAR_PAR_AUTO;
    return -1;
}

static int check_config(const regpar_reg_config_t *cfg, size_t page, char *err, size_t errlen)
{
    if (0 == strcmp("unknown", regpar_reg_backend_name(cfg->backend))) {
        snprintf(err, errlen,
                 "regpar: invalid registration backend %d; set mpool_regpar_reg_backend to "
                 "auto, ofi, verbs, pin or none",
                 (int)cfg->backend);
        return -1;
    }
    if (0 == strcmp("unknown", regpar_reg_parallel_name(cfg->parallel))) {
        snprintf(err, errlen,
                 "regpar: invalid parallel registration mode %d; set mpool_regpar_reg_parallel "
                 "to auto, on or off",
                 (int)cfg->parallel);
        return -1;
    }
    if (0 == cfg->chunk_size || 0 != cfg->chunk_size % page) {
        snprintf(err, errlen,
                 "regpar: mpool_regpar_reg_chunk_size=%zu is not a positive multiple of the page "
                 "size (%zu); use for example 256M",
                 cfg->chunk_size, page);
        return -1;
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Geometry: a range cut into pieces whose inner boundaries sit at
 * page-aligned multiples of unit from the page holding the start. */

typedef struct span {
    uintptr_t start, end, base;
    size_t unit;
    size_t count;
} span_t;

static void span_init(span_t *span, const void *addr, size_t len, size_t unit, size_t page)
{
    span->start = (uintptr_t)addr;
    span->end = span->start + len;
    span->base = span->start & ~(uintptr_t)(page - 1);
    span->unit = unit;
    size_t extent = (size_t)(span->end - span->base);
    span->count = len ? extent / unit + (0 != extent % unit) : 0;
}

static void span_piece(const span_t *span, size_t index, char **addr, size_t *len)
{
    size_t extent = (size_t)(span->end - span->base);
    size_t lo = index * span->unit;
    size_t hi = extent - lo > span->unit ? lo + span->unit : extent;
    uintptr_t from = span->base + lo < span->start ? span->start : span->base + lo;
    *addr = (char *)from;
    *len = (size_t)(span->base + hi - from);
}

/* ------------------------------------------------------------------------ */
/* Policy */

/* Cores of this process that other runnable work leaves free, at least 1.
 * The machine-wide count is scaled to our share of the online cores. */
static unsigned idle_cores(const regpar_reg_engine_t *engine)
{
    unsigned busy = regpar_sys_busy_threads(&engine->sys);
    long online = sysconf(_SC_NPROCESSORS_ONLN);
    if (online > (long)engine->cores) {
        busy = (unsigned)(((unsigned long)busy * engine->cores + (unsigned long)online - 1) /
                          (unsigned long)online);
    }
    return busy < engine->cores ? engine->cores - busy : 1;
}

static unsigned phase_threads(const regpar_reg_engine_t *engine, phase_t phase, size_t len,
                              size_t ntasks, bool prefaulted)
{
    if (!engine || REGPAR_PAR_OFF == engine->cfg.parallel || engine->threads <= 1 ||
        len < engine->cfg.threshold || ntasks < 2) {
        return 1;
    }
    unsigned threads = ntasks < engine->threads ? (unsigned)ntasks : engine->threads;
    if (REGPAR_PAR_ON == engine->cfg.parallel) {
        return threads;
    }
    bool helps = PHASE_PREFAULT == phase ||
                 (PHASE_REG == phase && engine->props.parallel_reg && prefaulted) ||
                 (PHASE_DEREG == phase && engine->props.parallel_dereg);
    if (!helps || engine->cores < 2) {
        return 1;
    }
    unsigned idle = idle_cores(engine);
    return threads <= idle ? threads : idle;
}

/* The piece size pre-faulting uses with threads threads: at most a chunk,
 * at least enough pieces for every thread, whole huge pages. */
static size_t prefault_unit(const regpar_reg_engine_t *engine, size_t len, unsigned threads)
{
    size_t chunk = engine ? engine->cfg.chunk_size : REGPAR_REG_DEFAULT_CHUNK_SIZE;
    if (threads <= 1) {
        return chunk;
    }
    size_t share = len / threads + (0 != len % threads);
    share = (share + PREFAULT_GRANULE - 1) & ~(PREFAULT_GRANULE - 1);
    return share < chunk ? share : chunk;
}

/* Threads for pre-faulting [addr, addr+len) and the pieces they take. */
static unsigned prefault_plan(const regpar_reg_engine_t *engine, const void *addr, size_t len,
                              span_t *span)
{
    size_t page = engine ? engine->page : system_page_size();
    unsigned threads = phase_threads(engine, PHASE_PREFAULT, len, SIZE_MAX, false);
    span_init(span, addr, len, prefault_unit(engine, len, threads), page);
    return span->count < threads ? (unsigned)span->count : threads;
}

static bool backend_will_register(const regpar_reg_engine_t *engine)
{
    return engine && engine->ops;
}

static bool will_prefault(const regpar_reg_engine_t *engine)
{
    return engine->cfg.prefault || (engine->ops && engine->props.needs_prefault);
}

unsigned regpar_reg_engine_plan_threads(const regpar_reg_engine_t *engine, size_t len)
{
    if (!engine || 0 == len) {
        return 1;
    }
    unsigned threads = 1;
    bool prefault = will_prefault(engine);
    if (prefault) {
        span_t span;
        threads = prefault_plan(engine, NULL, len, &span);
    }
    if (backend_will_register(engine)) {
        span_t span;
        span_init(&span, NULL, len, engine->cfg.chunk_size, engine->page);
        unsigned reg = phase_threads(engine, PHASE_REG, len, span.count, prefault);
        threads = reg > threads ? reg : threads;
    }
    return threads;
}

/* ------------------------------------------------------------------------ */
/* Pre-faulting */

typedef struct prefault_job {
    regpar_sys_t *sys; /* NULL without an engine: real calls, nothing remembered */
    span_t span;
    size_t page;
} prefault_job_t;

static int prefault_task(void *arg, size_t index)
{
    prefault_job_t *job = arg;
    char *addr;
    size_t len;
    span_piece(&job->span, index, &addr, &len);
    return regpar_sys_prefault(job->sys, addr, len, job->page);
}

/* Pre-fault with the policy's threads; *threads_used tells how many ran.
 * Returns 0 or the first error code; the caller reports it. */
static int prefault_range(regpar_reg_engine_t *engine, void *addr, size_t len,
                          unsigned *threads_used)
{
    prefault_job_t job = {.sys = engine ? &engine->sys : NULL,
                          .page = engine ? engine->page : system_page_size()};
    unsigned want = prefault_plan(engine, addr, len, &job.span);

    int local_status[8];
    int *status = job.span.count <= 8 ? local_status : malloc(job.span.count * sizeof(int));
    int rc = 0;
    uint64_t start = now_ns();
    if (status) {
        *threads_used = regpar_workers_run(engine ? engine->workers : NULL, want, prefault_task,
                                           &job, job.span.count, status, false);
        for (size_t i = 0; i < job.span.count && 0 == rc; i++) {
            rc = status[i];
        }
        if (status != local_status) {
            free(status);
        }
    } else {
        *threads_used = 1;
        for (size_t i = 0; i < job.span.count && 0 == rc; i++) {
            rc = prefault_task(&job, i);
        }
    }
    if (engine) {
        add_stat(&engine->stats.prefault_time_ns, now_ns() - start);
    }
    return rc;
}

static void log_prefault_failure(regpar_reg_engine_t *engine, size_t len, int rc)
{
    char key[64], size[32];
    snprintf(key, sizeof(key), "prefault:%d", rc);
    regpar_format_size(len, size, sizeof(size));
    if (engine) {
        regpar_sys_log_once(&engine->sys, key, 1,
                            "regpar: pre-faulting a %s slab failed: %s; its pages will be "
                            "faulted on first use (set mpool_regpar_prefault=off to skip "
                            "pre-faulting)",
                            size, strerror(rc));
    }
}

int regpar_reg_prefault(regpar_reg_engine_t *engine, void *addr, size_t len)
{
    if (0 == len) {
        return 0;
    }
    if (!addr) {
        return -1;
    }
    unsigned used;
    int rc = prefault_range(engine, addr, len, &used);
    if (0 != rc) {
        log_prefault_failure(engine, len, rc);
    }
    return 0 == rc ? 0 : -1;
}

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
        unsigned want = phase_threads(engine, PHASE_DEREG, len, nchunks, true);
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
    span_init(&span, region->addr, region->len, chunk, engine->page);
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
        span_piece(&span, i, (char **)&chunks[i].addr, &chunks[i].len);
    }

    chunk_job_t job = {.engine = engine, .chunks = chunks};
    unsigned want = phase_threads(engine, PHASE_REG, region->len, span.count, prefaulted);
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
        log_reg_failure(engine, ops_name(engine), &why);
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
    bool prefault = will_prefault(engine);
    bool lock_first = prefault && engine->ops && engine->props.lock_before_prefault;
    int prefault_rc = 0, reg_rc = 1;
    bool prefault_reported = false;

    if (prefault && !lock_first) {
        prefault_rc = prefault_range(engine, addr, len, &prefault_threads);
        region->prefaulted = 0 == prefault_rc;
    }
    if (engine->ops) {
        reg_rc = register_chunks(engine, region, unit, region->prefaulted, &reg_threads);
    }
    if (lock_first) {
        prefault_rc = prefault_range(engine, addr, len, &prefault_threads);
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
            log_reg_failure(engine, ops_name(engine), &why);
            free(region->chunks);
            region->chunks = NULL;
            region->nchunks = 0;
            reg_rc = 1;
            prefault_reported = true;
        }
    }
    if (0 != prefault_rc && !prefault_reported) {
        log_prefault_failure(engine, len, prefault_rc);
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
        log_reg_failure(engine, ops->name, &why);
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
    if (0 != check_config(cfg, page, err, errlen)) {
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
          will_prefault(e) ? "on" : "off");
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
