/*
 * regpar_reg: registers memory regions with the network, in parallel where
 * that measurably helps.  Independent of Open MPI.
 *
 * A region is split into chunks of at most reg_chunk_size (disjoint address
 * ranges whose inner boundaries are page aligned, so no two chunks share a
 * page; the first and last may be shorter).  Regions at or above
 * reg_threshold are worked on by several threads.  The engine
 *   1. pre-faults the chunks in parallel, each worker on its own chunks
 *      (madvise(MADV_POPULATE_WRITE), falling back to touching one byte per
 *      page), all workers created before any starts;
 *   2. registers the chunks in parallel with the backend;
 *   3. deregisters them in parallel when the region is released.
 * Any failure rolls back the chunks already registered and reports one
 * message naming the backend, the cause and the parameter to change; the
 * caller keeps working with unregistered memory.
 *
 * Why pre-fault first: registering untouched memory from several threads
 * makes them fault the same page tables and contend on the mm lock, which
 * made parallel registration 5x slower than sequential in the Mooncake
 * measurements.  Faulting disjoint ranges runs in parallel; pinning
 * afterwards finds the pages present.
 */
#ifndef REGPAR_REG_H
#define REGPAR_REG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "regpar_sys.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef enum regpar_reg_backend {
    REGPAR_REG_AUTO = 0, /* verbs if a device exists, else ofi if a provider
                            needs local registration, else none            */
    REGPAR_REG_NONE,     /* no registration (pre-faulting still applies)   */
    REGPAR_REG_PIN,      /* mlock/munlock: real pinning, always available  */
    REGPAR_REG_OFI,      /* libfabric fi_mr_reg                            */
    REGPAR_REG_VERBS,    /* rdma-core ibv_reg_mr                           */
    /* A registrar attached with regpar_reg_engine_attach: registration in
     * the domain of whoever owns the network (the transport's own cache). */
    REGPAR_REG_REGISTRAR
} regpar_reg_backend_t;

typedef enum regpar_reg_parallel {
    REGPAR_PAR_AUTO = 0, /* parallel only where it helps (see below)       */
    REGPAR_PAR_ON,
    REGPAR_PAR_OFF
} regpar_reg_parallel_t;

#define REGPAR_REG_DEFAULT_CHUNK_SIZE ((size_t)256 << 20)
/* EFA refuses one MR above 4 GB of 4 KiB pages: chunks must stay below. */
#define REGPAR_REG_MAX_SAFE_CHUNK_SIZE ((size_t)4 << 30)
#define REGPAR_REG_DEFAULT_THRESHOLD   ((size_t)64 << 20)
/* threads = 0 means the cores this process may run on, at most this. */
#define REGPAR_REG_DEFAULT_MAX_THREADS 16
/* Largest reg_threads used (larger values are capped). */
#define REGPAR_REG_MAX_THREADS 64

typedef struct regpar_reg_config {
    regpar_reg_backend_t backend;
    regpar_reg_parallel_t parallel;
    /* Threads, caller included; 0 = the cores this process may use (at
     * most 16); above REGPAR_REG_MAX_THREADS is capped with a warning. */
    unsigned threads;
    /* Largest chunk, bytes; a page multiple. */
    size_t chunk_size;
    /* Regions below this use one thread (and are one chunk unless longer
     * than chunk_size). */
    size_t threshold;
    bool prefault;            /* pre-fault before registering        */
    bool bind_threads;        /* bind workers to cores               */
    const char *ofi_provider; /* NULL or "" = first provider found   */
    const char *verbs_device; /* NULL or "" = first device           */
    int verbs_access;         /* IBV_ACCESS_* bits; 0 = local write  */
    regpar_log_fn log;        /* NULL = stderr for levels 0 and 1    */
    void *log_arg;
    /* System calls and the registration hook, overridable for fault
     * injection (regpar_sys.h; NULL = the real calls). */
    const regpar_sys_ops_t *sys;
} regpar_reg_config_t;

/* Counters; registration time is wall time of whole regions. */
typedef struct regpar_reg_stats {
    uint64_t regions_registered;
    uint64_t regions_deregistered;
    uint64_t chunks_registered;
    uint64_t chunks_deregistered;
    uint64_t bytes_registered; /* currently registered                    */
    uint64_t reg_failures;     /* regions whose registration failed       */
    uint64_t reg_time_ns;      /* cumulative, prefault included           */
    uint64_t prefault_time_ns; /* cumulative prefault part                */
    uint64_t dereg_time_ns;    /* cumulative                              */
    uint64_t parallel_regions; /* regions done with more than one thread  */
} regpar_reg_stats_t;

typedef struct regpar_reg_engine regpar_reg_engine_t;

/* One registered chunk. */
typedef struct regpar_reg_chunk {
    void *addr;
    size_t len;
    void *handle;  /* struct fid_mr * / struct ibv_mr * / NULL */
    void *desc;    /* fi_mr_desc() / struct ibv_mr * / NULL    */
    uint64_t key;  /* fi_mr_key() / lkey / 0                   */
    uint64_t rkey; /* fi_mr_key() / rkey / 0: what peers use   */
} regpar_reg_chunk_t;

/*
 * A registrar: registration supplied by whoever owns the network domain
 * (Open MPI's BTLs, UCX context, OFI MTL), in the manner of rcache's
 * register_mem resource or UCX's mpool chunk ops.  The engine keeps it free
 * of the owner's types: it only sees chunks.  reg fills chunk->handle (and
 * desc/key/rkey if it has them); dereg undoes it.  Both return 0 or a
 * positive errno-style code.
 */
typedef struct regpar_registrar {
    const char *name; /* in messages and statistics: "btl", "ucx", ... */
    /* reg/dereg may run concurrently from several threads on disjoint
     * chunks (verbs, mlock).  When false (a UCX context, an FI_THREAD_DOMAIN
     * domain, grdma without threads), the engine makes every call from the
     * thread that creates or releases the slab, one at a time. */
    bool thread_safe;
    int (*reg)(void *arg, regpar_reg_chunk_t *chunk);
    int (*dereg)(void *arg, regpar_reg_chunk_t *chunk);
    /* What the user can do when reg fails (names the MCA parameter). */
    const char *remedy;
} regpar_registrar_t;

/* A registered region: the chunks that cover it. */
typedef struct regpar_reg_region {
    void *addr;
    size_t len;
    size_t nchunks;
    regpar_reg_chunk_t *chunks; /* owned by the region */
    bool registered;            /* false if the backend is none or it failed */
    bool prefaulted;
} regpar_reg_region_t;

void regpar_reg_config_defaults(regpar_reg_config_t *cfg);

/* Parse "auto|none|pin|ofi|verbs" and "auto|on|off" (case-insensitive).
 * Return 0, or -1 for an unknown name. */
int regpar_reg_backend_parse(const char *name, regpar_reg_backend_t *out);
int regpar_reg_parallel_parse(const char *name, regpar_reg_parallel_t *out);
const char *regpar_reg_backend_name(regpar_reg_backend_t backend);
const char *regpar_reg_parallel_name(regpar_reg_parallel_t parallel);

/*
 * Set cfg->backend / cfg->parallel from what the user typed.  An unknown
 * name is reported through cfg->log (naming the value, the MCA parameter and
 * the valid names) and falls back to backend none / parallel auto; these
 * return -1 then, 0 otherwise.  Set cfg->log before calling.
 */
int regpar_reg_config_set_backend(regpar_reg_config_t *cfg, const char *name);
int regpar_reg_config_set_parallel(regpar_reg_config_t *cfg, const char *name);

/*
 * Open the backend and start the workers.  Never fails for a usable
 * configuration: when the backend cannot be opened (no device, unknown
 * provider, library missing) it logs one message naming the backend, the
 * cause and the parameter to change, and the engine runs as backend none.
 * Returns -1 (with err) only for an invalid configuration or no memory.
 */
int regpar_reg_engine_create(const regpar_reg_config_t *cfg, regpar_reg_engine_t **engine,
                             char *err, size_t errlen);
void regpar_reg_engine_destroy(regpar_reg_engine_t *engine);

/* The backend actually in use (after auto and fallbacks). */
regpar_reg_backend_t regpar_reg_engine_backend(const regpar_reg_engine_t *engine);

/* Threads the engine may use (caller included; 1 when not parallel). */
unsigned regpar_reg_engine_threads(const regpar_reg_engine_t *engine);

/*
 * Pre-fault and register [addr, addr+len) (any alignment; the pool's slabs
 * are page aligned, and a range sharing a page with another registered
 * region shares that page's pin under backend pin).  Returns 0 with
 * region->registered telling whether the backend registered it, or -1 when
 * even the bookkeeping could not be allocated.  A registration failure is
 * not an error for the caller: it is logged once per cause, rolled back,
 * counted, and the region comes back unregistered (but pre-faulted).
 */
int regpar_reg_region_register(regpar_reg_engine_t *engine, void *addr, size_t len,
                               regpar_reg_region_t *region);

/* Deregister (in parallel where it helps) and free the chunk table.  Every
 * region must be deregistered before regpar_reg_engine_destroy. */
void regpar_reg_region_deregister(regpar_reg_engine_t *engine, regpar_reg_region_t *region);

/*
 * Like regpar_reg_region_register, with chunk boundaries at multiples of
 * unit from addr (unit: a page multiple, the pool's buffer size), so that
 * no buffer straddles two registrations.
 */
int regpar_reg_region_register_units(regpar_reg_engine_t *engine, void *addr, size_t len,
                                     size_t unit, regpar_reg_region_t *region);

/*
 * Attach a registrar to an engine whose backend is none (the usual case:
 * the engine is created before the transport is up, and the owner attaches
 * its registrar once it is).  From then on regions are registered through
 * it.  registrar and arg must outlive the attachment.  Returns 0, or -1 if
 * the engine already has a backend.  Safe against concurrent registrations
 * (they finish with the old backend first).
 */
int regpar_reg_engine_attach(regpar_reg_engine_t *engine, const regpar_registrar_t *registrar,
                             void *arg);

/*
 * Detach the registrar (the transport is going away).  Every region it
 * registered must have been deregistered before; later regions are not
 * registered.
 */
void regpar_reg_engine_detach(regpar_reg_engine_t *engine);

/* The attached registrar's name, or NULL. */
const char *regpar_reg_engine_registrar_name(const regpar_reg_engine_t *engine);

/* The chunk of region holding addr, or NULL. */
const regpar_reg_chunk_t *regpar_reg_region_find(const regpar_reg_region_t *region,
                                                 const void *addr);

/* Whether a region of len bytes would be done in parallel right now, and
 * with how many threads (1 = sequential). */
unsigned regpar_reg_engine_plan_threads(const regpar_reg_engine_t *engine, size_t len);

void regpar_reg_get_stats(const regpar_reg_engine_t *engine, regpar_reg_stats_t *stats);

/* Pre-fault [addr, addr+len) with the engine's workers without registering
 * (the pool uses it for slabs when the backend is none).  Returns 0, or -1
 * when the pages could not be populated (logged once per cause; they will
 * be faulted on first use). */
int regpar_reg_prefault(regpar_reg_engine_t *engine, void *addr, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_REG_H */
