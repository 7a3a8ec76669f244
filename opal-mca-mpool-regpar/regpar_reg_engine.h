/*
 * Private to the registration engine (regpar_reg*.c, not the backends): the
 * engine structure and the helpers its files share.  The public interface is
 * regpar_reg.h; the backends' interface is regpar_reg_backend.h.
 */
#ifndef REGPAR_REG_ENGINE_H
#define REGPAR_REG_ENGINE_H

#include "regpar_reg.h"
#include "regpar_reg_backend.h"
#include "regpar_workers.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

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

static inline uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void add_stat(atomic_uint_fast64_t *counter, uint64_t value)
{
    atomic_fetch_add_explicit(counter, value, memory_order_relaxed);
}

static inline size_t system_page_size(void)
{
    long page = sysconf(_SC_PAGESIZE);
    return page > 0 ? (size_t)page : 4096;
}

#define emitf(engine, ...) regpar_sys_log(&(engine)->sys, __VA_ARGS__)

/* Log a failed registration once per cause (regpar_reg.c). */
void regpar_reg_i_log_failure(regpar_reg_engine_t *engine, const char *backend,
                              const regpar_reg_why_t *why);

/* Configuration (regpar_reg_config.c): 0, or -1 with a message in err. */
int regpar_reg_i_check_config(const regpar_reg_config_t *cfg, size_t page, char *err,
                              size_t errlen);

/* ------------------------------------------------------------------------ */
/* Geometry: a range cut into pieces whose inner boundaries sit at
 * page-aligned multiples of unit from the page holding the start. */

typedef struct span {
    uintptr_t start, end, base;
    size_t unit;
    size_t count;
} span_t;

/* Planning and pre-faulting (regpar_reg_plan.c). */
void regpar_reg_i_span_init(span_t *span, const void *addr, size_t len, size_t unit, size_t page);
void regpar_reg_i_span_piece(const span_t *span, size_t index, char **addr, size_t *len);
unsigned regpar_reg_i_phase_threads(const regpar_reg_engine_t *engine, phase_t phase, size_t len,
                                    size_t ntasks, bool prefaulted);
bool regpar_reg_i_will_prefault(const regpar_reg_engine_t *engine);
int regpar_reg_i_prefault_range(regpar_reg_engine_t *engine, void *addr, size_t len,
                                unsigned *threads_used);
void regpar_reg_i_log_prefault_failure(regpar_reg_engine_t *engine, size_t len, int rc);

#endif /* REGPAR_REG_ENGINE_H */
