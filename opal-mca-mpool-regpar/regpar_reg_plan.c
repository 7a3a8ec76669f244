/*
 * The registration engine's plan: ranges cut into pieces (spans), how many
 * threads each phase gets, and pre-faulting.  Threads come from
 * regpar_workers.
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

#include "regpar_reg_engine.h"
#include "regpar_size.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Pre-fault pieces are multiples of this, so that a transparent huge page
 * is never faulted by two threads. */
#define PREFAULT_GRANULE ((size_t)2 << 20)

/* ------------------------------------------------------------------------ */
/* Geometry (span_t and what it means: regpar_reg_engine.h) */

void regpar_reg_i_span_init(span_t *span, const void *addr, size_t len, size_t unit, size_t page)
{
    span->start = (uintptr_t)addr;
    span->end = span->start + len;
    span->base = span->start & ~(uintptr_t)(page - 1);
    span->unit = unit;
    size_t extent = (size_t)(span->end - span->base);
    span->count = len ? extent / unit + (0 != extent % unit) : 0;
}

void regpar_reg_i_span_piece(const span_t *span, size_t index, char **addr, size_t *len)
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

unsigned regpar_reg_i_phase_threads(const regpar_reg_engine_t *engine, phase_t phase, size_t len,
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
    unsigned threads = regpar_reg_i_phase_threads(engine, PHASE_PREFAULT, len, SIZE_MAX, false);
    regpar_reg_i_span_init(span, addr, len, prefault_unit(engine, len, threads), page);
    return span->count < threads ? (unsigned)span->count : threads;
}

static bool backend_will_register(const regpar_reg_engine_t *engine)
{
    return engine && engine->ops;
}

bool regpar_reg_i_will_prefault(const regpar_reg_engine_t *engine)
{
    return engine->cfg.prefault || (engine->ops && engine->props.needs_prefault);
}

unsigned regpar_reg_engine_plan_threads(const regpar_reg_engine_t *engine, size_t len)
{
    if (!engine || 0 == len) {
        return 1;
    }
    unsigned threads = 1;
    bool prefault = regpar_reg_i_will_prefault(engine);
    if (prefault) {
        span_t span;
        threads = prefault_plan(engine, NULL, len, &span);
    }
    if (backend_will_register(engine)) {
        span_t span;
        regpar_reg_i_span_init(&span, NULL, len, engine->cfg.chunk_size, engine->page);
        unsigned reg = regpar_reg_i_phase_threads(engine, PHASE_REG, len, span.count, prefault);
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
    regpar_reg_i_span_piece(&job->span, index, &addr, &len);
    return regpar_sys_prefault(job->sys, addr, len, job->page);
}

/* Pre-fault with the policy's threads; *threads_used tells how many ran.
 * Returns 0 or the first error code; the caller reports it. */
int regpar_reg_i_prefault_range(regpar_reg_engine_t *engine, void *addr, size_t len,
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

void regpar_reg_i_log_prefault_failure(regpar_reg_engine_t *engine, size_t len, int rc)
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
    int rc = regpar_reg_i_prefault_range(engine, addr, len, &used);
    if (0 != rc) {
        regpar_reg_i_log_prefault_failure(engine, len, rc);
    }
    return 0 == rc ? 0 : -1;
}
