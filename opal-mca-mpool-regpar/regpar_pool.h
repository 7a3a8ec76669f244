/*
 * regpar_pool: a bucketed pool of page-multiple buffers carved from
 * registered slabs.  Independent of Open MPI so that it compiles, unit-tests
 * and fuzzes on its own; mpool_regpar_*.c adapt it to the mpool framework.
 *
 * Model
 *   - Buckets: sizes grow geometrically from bucket_min to bucket_max, each
 *     rounded up to a page multiple.  A request rounds up to the smallest
 *     bucket that holds it.  Requests above bucket_max get a direct mapping
 *     (a one-buffer slab) that is unmapped on free.
 *   - Slabs: each bucket carves its buffers from slabs it maps itself.  A
 *     bucket's first slab is small (one 2 MiB granule or one buffer) and each
 *     further slab doubles, up to slab_size, so that light use costs little
 *     and heavy use is served from few large slabs that register in
 *     parallel.  Slabs start on a 2 MiB boundary (a transparent huge page and
 *     the granule of the address map that lets free() find its slab in O(1)
 *     without a lock).
 *   - Capacity: max_capacity caps the bytes the pool keeps while idle.  A
 *     free that leaves the pool above the cap releases wholly free slabs
 *     until it is back under; an allocation is never refused because of the
 *     cap (it is counted as over-capacity instead).  Memory its owner maps
 *     outside the pool (coll/bufpool's node-shared segments) counts against
 *     the cap too (regpar_pool_count_outside).
 *   - Collection: a slab whose buffers have all been free for longer than
 *     gc_age goes back to the system.  Collection is amortised on the
 *     alloc/free path and can be driven from outside (regpar_pool_collect).
 *   - Threads: every bucket has its own lock; counters are atomic.  The
 *     hit path takes one uncontended bucket lock and makes no system call.
 *
 * Every function is safe to call from any thread unless noted.
 */
#ifndef REGPAR_POOL_H
#define REGPAR_POOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "regpar_reg.h"
#include "regpar_sys.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Slabs start on this boundary and the address map has this granularity. */
#define REGPAR_SLAB_ALIGN ((size_t)2 << 20)
/* Upper bound on the number of buckets (bucket_min..bucket_max). */
#define REGPAR_MAX_BUCKETS 64

typedef struct regpar_pool regpar_pool_t;

/* Monotonic clock in nanoseconds; injectable so that tests control ageing. */
typedef uint64_t (*regpar_clock_fn)(void *arg);

/* Messages (regpar_log_fn) and overridable system calls
 * (regpar_sys_ops_t, for failure injection) are shared with the
 * registration engine: regpar_sys.h. */

typedef struct regpar_pool_config {
    size_t bucket_min;     /* smallest bucket, bytes; page multiple        */
    size_t bucket_max;     /* largest bucket, bytes; page multiple         */
    double bucket_factor;  /* geometric growth between buckets, > 1.0      */
    size_t slab_size;      /* largest slab, bytes; multiple of 2 MiB       */
    size_t max_capacity;   /* bytes kept while idle                        */
    uint64_t gc_age_ns;    /* idle time before a free slab is collected; 0
                                 disables collection by age                   */
    bool hugepages;        /* madvise(MADV_HUGEPAGE) on slabs              */
    int numa_node;         /* bind slabs to this node; -1 = no binding     */
    regpar_clock_fn clock; /* NULL = CLOCK_MONOTONIC_COARSE                */
    void *clock_arg;
    regpar_log_fn log; /* NULL = stderr for errors and warnings only   */
    void *log_arg;
    int verbose;                 /* 0 quiet, 1 summary, 2 decisions, 3 slabs    */
    regpar_reg_engine_t *reg;    /* registers each slab; NULL = none (not owned) */
    const regpar_sys_ops_t *sys; /* NULL = real system calls                  */
} regpar_pool_config_t;

/* Fill in the defaults (documented in docs/pool.md). */
void regpar_pool_config_defaults(regpar_pool_config_t *cfg);

/*
 * Check a configuration.  Returns 0 when valid; otherwise -1 with a message
 * in err that names the offending field (using the MCA parameter's suffix,
 * for example "bucket_max") and its valid range.  page_size is the system
 * page size (tests pass other values).
 */
int regpar_pool_config_check(const regpar_pool_config_t *cfg, size_t page_size, char *err,
                             size_t errlen);

/* Create a pool.  Returns 0, or -1 with a message in err (invalid
 * configuration or no memory).  The pool maps nothing until first use. */
int regpar_pool_create(const regpar_pool_config_t *cfg, regpar_pool_t **pool, char *err,
                       size_t errlen);

/* Release every slab (deregistering it) and the pool itself.  Buffers still
 * out are counted in the final statistics as leaked and unmapped. */
void regpar_pool_destroy(regpar_pool_t *pool);

/*
 * A buffer of at least size bytes, page aligned, whose pages have been
 * pre-faulted (and registered when an engine is configured) before first
 * use.  size 0 is served as one page.  NULL only when the system is truly out
 * of memory (the log says why).  Never NULL because of max_capacity.
 */
void *regpar_pool_alloc(regpar_pool_t *pool, size_t size);

/* Like regpar_pool_alloc with an alignment that may exceed a page
 * (power of two). */
void *regpar_pool_alloc_aligned(regpar_pool_t *pool, size_t size, size_t align);

/* Return a buffer.  Returns 0, or -1 if addr is not a buffer this pool
 * handed out (nothing is changed then). */
int regpar_pool_free(regpar_pool_t *pool, void *addr);

/* True if addr is the start of a buffer of this pool that is out. */
bool regpar_pool_owns(regpar_pool_t *pool, const void *addr);

/* What the network needs to know about a buffer. */
typedef struct regpar_buffer_info {
    void *base;      /* start of the buffer                              */
    size_t size;     /* usable bytes (the bucket size)                   */
    bool registered; /* whole buffer covered by registrations            */
    /* Registration of the chunk holding base; a buffer never straddles two
     * chunks when it is smaller than reg_chunk_size. */
    void *reg_desc;   /* fi_mr_desc() / struct ibv_mr * / NULL            */
    uint64_t reg_key; /* fi_mr_key() / lkey / 0                           */
} regpar_buffer_info_t;

/* Returns 0 and fills info, or -1 if addr is not a buffer that is out. */
int regpar_pool_buffer_info(regpar_pool_t *pool, const void *addr, regpar_buffer_info_t *info);

/* The bucket size a request of size bytes would be served with (0 for a
 * direct mapping). */
size_t regpar_pool_bucket_size(const regpar_pool_t *pool, size_t size);

/*
 * Register every live slab that has no registration yet (created while the
 * engine had no backend: the registrar is attached once the transport is
 * up, which may be after the first slabs), and every outside range
 * (regpar_pool_outside_register) likewise.  Buffers may be out.  Returns
 * the slabs now registered.  Not for the hit path: walks the slabs.
 */
size_t regpar_pool_register_live(regpar_pool_t *pool);

/*
 * Deregister every live slab and outside range (the transport that owns
 * the registrar is about to go away); they stay in use, unregistered, and
 * are not registered again unless regpar_pool_register_live is called
 * after a new attachment.  Returns the slabs deregistered.
 */
size_t regpar_pool_deregister_live(regpar_pool_t *pool);

/*
 * Collect: release slabs that have been wholly free for longer than gc_age
 * (or every wholly free slab if force), and release above-capacity slabs.
 * Returns the bytes released.  Cheap to call often: it returns at once if it
 * ran less than gc_age/4 ago, unless force.  Without force it never blocks on
 * a bucket lock held by another thread (skips that bucket instead), so that
 * it can run from a progress callback; force waits for bucket locks (they
 * are only ever held for O(1) work) so that it releases every free slab.
 */
size_t regpar_pool_collect(regpar_pool_t *pool, bool force);

/*
 * Count delta bytes (positive: mapped, negative: unmapped again) of memory
 * mapped outside the pool against max_capacity: while they are mapped the
 * pool keeps that much less idle, and a positive delta that takes it above
 * the cap releases wholly free slabs at once, coldest first.  Never
 * refuses: the cap bounds what the pool keeps, not what others map.  Every
 * decrement must match an earlier increment.
 */
void regpar_pool_count_outside(regpar_pool_t *pool, int64_t delta);

/*
 * Memory the pool's owner maps itself that a transport sends from and
 * receives into (coll/bufpool's node-shared segments, where allreduce
 * hier_node exchanges between hosts): registered as the slabs are, through
 * the pool's registration engine, so that the transport finds one
 * registration of the whole range instead of making one per sub-range it
 * meets.  Registered now when the engine has a backend, else by
 * regpar_pool_register_live once a registrar is attached; deregistered
 * with the slabs by regpar_pool_deregister_live (the transport leaving),
 * and by regpar_pool_outside_deregister, which the owner must call before
 * it unmaps any of the range (a release under a held registration aborts
 * ob1's jobs).  The owner keeps an unregistered page on either side of the
 * range, as the slabs have (a release touching a registration's edge
 * invalidates it).  Returns a handle, or NULL when the bookkeeping could
 * not be allocated (nothing registered: the transport registers on first
 * use, as without the pool).
 */
typedef struct regpar_outside regpar_outside_t;
regpar_outside_t *regpar_pool_outside_register(regpar_pool_t *pool, void *addr, size_t len);
/* Deregister and forget (NULL: nothing). */
void regpar_pool_outside_deregister(regpar_pool_t *pool, regpar_outside_t *outside);

typedef struct regpar_pool_stats {
    uint64_t allocs;            /* successful allocations                     */
    uint64_t frees;             /* successful frees                           */
    uint64_t hits;              /* allocations served from a free buffer      */
    uint64_t misses;            /* allocations that had to map a slab         */
    uint64_t direct_allocs;     /* requests above bucket_max                  */
    uint64_t over_capacity;     /* allocations that took the pool over cap    */
    uint64_t slabs_mapped;      /* slabs created                              */
    uint64_t slabs_released;    /* slabs given back (any reason)              */
    uint64_t bytes_held;        /* bytes of slabs currently mapped            */
    uint64_t bytes_in_use;      /* bytes of buffers currently out             */
    uint64_t bytes_peak;        /* high-water mark of bytes_held              */
    uint64_t bytes_in_use_peak; /* high-water mark of bytes_in_use            */
    uint64_t bytes_collected;   /* bytes released by age or capacity          */
    uint64_t bytes_outside;     /* mapped outside, counted against the cap    */
    uint64_t outside_live;      /* outside ranges registered now              */
    uint64_t outside_made;      /* outside ranges ever registered             */
    uint64_t alloc_failures;    /* requests that failed (out of memory)       */
    regpar_reg_stats_t reg;     /* registration engine counters               */
} regpar_pool_stats_t;

/* A consistent-enough snapshot (each counter is read atomically). */
void regpar_pool_get_stats(const regpar_pool_t *pool, regpar_pool_stats_t *stats);

/* Reset the peaks to the current values (benchmarks measure one phase). */
void regpar_pool_reset_peaks(regpar_pool_t *pool);

/* Write a human-readable report (counters, per-bucket occupancy) to buf;
 * returns the length it needed (like snprintf). */
int regpar_pool_report(const regpar_pool_t *pool, char *buf, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* REGPAR_POOL_H */
