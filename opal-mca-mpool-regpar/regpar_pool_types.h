/*
 * What the pool core's files share and nobody else sees: the pool's
 * structures, its locking rules and the functions one seam offers another.
 * The public interface is regpar_pool.h; design notes in docs/pool.md.
 *
 * The seams, one file each:
 *   regpar_pool.c          configuration, create/destroy, late registration
 *   regpar_pool_map.c      the address map (addr >> 21 -> slab), read lock-free
 *   regpar_pool_slab.c     slabs: map, place, pre-fault, register, detach,
 *                          release; type-stable slab descriptors
 *   regpar_pool_bucket.c   buckets: sizes, slot tables, the alloc/free paths
 *   regpar_pool_collect.c  collection of cold slabs and the capacity cap
 *   regpar_pool_stats.c    counters, peaks and the human-readable report
 *
 * Locking
 *   - bucket->lock (a spinlock) protects the bucket's slot table and every
 *     slab of the bucket (free stack, out flags, counts).  It is held for
 *     short work only, never across a system call (the coarse clock is read
 *     from the vDSO), so spinning beats sleeping: see docs/pool.md.
 *   - bucket->grow_mutex and grow_cv only let threads sleep while another
 *     thread creates a slab they can share.
 *   - pool->grow_lock protects the address map writes, the list of live
 *     slabs and the slab descriptor free list.  Lock order: bucket, then
 *     grow_lock.
 *   - free() finds its slab through the address map without any lock.
 *     Slab descriptors are never returned to malloc before the pool is
 *     destroyed (they are recycled), so a stale or bogus pointer can always
 *     be read safely and is re-validated under the bucket lock.
 */
#ifndef REGPAR_POOL_TYPES_H
#define REGPAR_POOL_TYPES_H

#include "bufpool_cpu_relax.h"
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "regpar_pool.h"
#include "regpar_sys.h"

#define REGPAR_LIMIT_SIZE    ((size_t)1 << 40) /* bucket_max, slab_size      */
#define REGPAR_MAX_NUMA_NODE 1023
#define REGPAR_MAX_ALIGN     ((size_t)1 << 30)
/* Beyond this, buckets are so far apart that most of a buffer is waste. */
#define REGPAR_MAX_FACTOR 16.0
/* Frees between two looks at the clock for amortised collection. */
#define REGPAR_COLLECT_EVERY 64
#define REGPAR_DESC_BLOCK    64

/* Address map: two levels over addr >> 21 for 48-bit user addresses. */
#define MAP_SHIFT     21
#define MAP_ADDR_BITS 48
#define MAP_LEAF_BITS 13
#define MAP_ROOT_BITS (MAP_ADDR_BITS - MAP_SHIFT - MAP_LEAF_BITS)

struct regpar_bucket;

typedef struct regpar_slab {
    /* Read without a lock by free() before validation: atomic. */
    _Atomic(struct regpar_bucket *) bucket;
    char *base;
    size_t len; /* mapped bytes: nbufs * buf_size */
    size_t buf_size;
    unsigned buf_shift; /* log2(buf_size) when a power of two, else 0 */
    uint32_t nbufs;
    uint32_t nfree;
    uint32_t slot;        /* index in bucket->slots                     */
    uint32_t *free_stack; /* free buffer indices; top is free_stack[nfree-1] */
    uint8_t *out;         /* out[i]: buffer i is handed out             */
    uint64_t free_since;  /* when nfree last reached nbufs              */
    bool has_region;
    regpar_reg_region_t region;
    struct regpar_slab *prev, *next;  /* live slabs, or the descriptor free list */
    struct regpar_slab *release_next; /* batch of detached slabs to release */
} regpar_slab_t;

typedef struct regpar_bucket {
    _Alignas(64) atomic_int lock;
    _Atomic unsigned grow_epoch; /* bumped when a slab creation ends     */
    pthread_mutex_t grow_mutex;
    pthread_cond_t grow_cv;
    size_t buf_size;
    bool direct; /* the pseudo-bucket of direct mappings */
    regpar_slab_t **slots;
    uint64_t *avail_bits; /* slot holds a slab with a free buffer */
    uint64_t *empty_bits; /* slot holds a wholly free slab        */
    size_t nslots;        /* capacity of the three arrays above   */
    unsigned nslabs;
    unsigned growing;    /* slab creations in flight              */
    size_t grow_spare;   /* buffers they bring beyond their creators */
    size_t grow_waiters; /* threads waiting for those buffers     */
    unsigned frees_since_look;
    /* Written under lock, read by get_stats without: plain store + load. */
    _Atomic uint64_t allocs, hits, misses, frees;
    _Atomic uint64_t nempty;
} regpar_bucket_t;

typedef struct regpar_map_leaf {
    _Atomic(regpar_slab_t *) slab[1u << MAP_LEAF_BITS];
} regpar_map_leaf_t;

typedef struct regpar_desc_block {
    struct regpar_desc_block *next;
    regpar_slab_t desc[REGPAR_DESC_BLOCK];
} regpar_desc_block_t;

/* Causes the pool reports once per episode (regpar_sys_log_once). */
#define CAUSE_MMAP      "pool:mmap"
#define CAUSE_MUNMAP    "pool:munmap"
#define CAUSE_HUGEPAGE  "pool:hugepage"
#define CAUSE_MBIND     "pool:mbind"
#define CAUSE_REGISTER  "pool:register"
#define CAUSE_POPULATE  "pool:populate"
#define CAUSE_NOMEM     "pool:nomem"
#define CAUSE_TOO_LARGE "pool:too-large"
#define CAUSE_ALIGN     "pool:align"
#define CAUSE_BAD_FREE  "pool:bad-free"
#define CAUSE_ADDRESS   "pool:address"

/* A range the owner maps (regpar_pool_outside_register). */
struct regpar_outside {
    regpar_outside_t *prev, *next;
    void *addr;
    size_t len;
    regpar_reg_region_t region;
    bool has_region;
};

struct regpar_pool {
    regpar_pool_config_t cfg;
    /* System calls and messages (shared shape with the registration
     * engine): the configured hooks over the real calls. */
    regpar_sys_t sys;
    size_t page;
    unsigned nbuckets;
    size_t bucket_sizes[REGPAR_MAX_BUCKETS];
    regpar_bucket_t *buckets; /* nbuckets + 1: the last is the direct one */
    regpar_bucket_t *direct;

    pthread_mutex_t grow_lock;
    /* Orders the registration of live slabs after the fact (a registrar
     * attached late) and their deregistration before the transport leaves
     * against slab_release, which deregisters and unmaps under it: a slab
     * is never registered while, or after, it is unmapped.  Taken before
     * grow_lock. */
    pthread_mutex_t reg_lock;
    _Atomic(regpar_map_leaf_t *) *map_root;
    regpar_slab_t *live; /* every mapped slab, for destroy and report */
    regpar_slab_t *desc_free;
    regpar_desc_block_t *desc_blocks;

    _Atomic uint64_t over_capacity, slabs_mapped, slabs_released, bytes_held, bytes_in_use,
        bytes_peak, bytes_in_use_peak, bytes_collected, alloc_failures;
    /* regpar_pool_count_outside: counted with bytes_held against the cap. */
    _Atomic uint64_t bytes_outside;
    /* regpar_pool_outside_register's ranges, under reg_lock; how many of
     * them are registered now. */
    regpar_outside_t *outside;
    _Atomic uint64_t outside_registered, outside_registrations;
    _Atomic uint64_t last_collect;
};

/* ------------------------------------------------------------------------ */
/* Small helpers (inline: several are on the hit path)                       */

static inline size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

static inline bool is_pow2(size_t v)
{
    return v && 0 == (v & (v - 1));
}

/* Test-and-test-and-set; yields after a short spin so that a preempted
 * holder (more threads than cores) gets the processor back. */
static inline void spin_lock(atomic_int *lock)
{
    while (atomic_exchange_explicit(lock, 1, memory_order_acquire)) {
        for (unsigned i = 0; atomic_load_explicit(lock, memory_order_relaxed); i++) {
            if (i < 128) {
                bufpool_cpu_relax();
            } else {
                sched_yield();
            }
        }
    }
}

static inline bool spin_trylock(atomic_int *lock)
{
    return !atomic_load_explicit(lock, memory_order_relaxed) &&
           !atomic_exchange_explicit(lock, 1, memory_order_acquire);
}

static inline void spin_unlock(atomic_int *lock)
{
    atomic_store_explicit(lock, 0, memory_order_release);
}

/* Counters written under a lock: no read-modify-write needed. */
static inline void counter_bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static inline uint64_t counter_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

static inline void counter_add(_Atomic uint64_t *c, uint64_t by)
{
    atomic_fetch_add_explicit(c, by, memory_order_relaxed);
}

static inline void peak_raise(_Atomic uint64_t *peak, uint64_t value)
{
    uint64_t cur = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > cur && !atomic_compare_exchange_weak_explicit(
                              peak, &cur, value, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static inline uint64_t pool_now(const regpar_pool_t *pool)
{
    if (pool->cfg.clock) {
        return pool->cfg.clock(pool->cfg.clock_arg);
    }
    /* Coarse: read from the vDSO page without touching the hardware clock,
     * and milliseconds are plenty for ages of seconds. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC_COARSE, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Messages through the shared context (regpar_sys.h). */
#define pool_log(pool, ...)             regpar_sys_log(&(pool)->sys, __VA_ARGS__)
#define pool_log_once(pool, cause, ...) regpar_sys_log_once(&(pool)->sys, cause, __VA_ARGS__)
#define pool_log_rearm(pool, cause)     regpar_sys_log_rearm(&(pool)->sys, cause)

/* regpar_format_size into buf, returning buf (for printf arguments). */
const char *regpar_pool_fmt_size(uint64_t v, char *buf, size_t len);

/* ------------------------------------------------------------------------ */
/* Address map (regpar_pool_map.c)                                           */

/* The slab whose 2 MiB granules cover addr, or NULL.  Lock-free. */
static inline regpar_slab_t *map_lookup(const regpar_pool_t *pool, const void *addr)
{
    uintptr_t key = (uintptr_t)addr >> MAP_SHIFT;
    if (key >> (MAP_ROOT_BITS + MAP_LEAF_BITS)) {
        return NULL;
    }
    regpar_map_leaf_t *leaf =
        atomic_load_explicit(&pool->map_root[key >> MAP_LEAF_BITS], memory_order_acquire);
    if (!leaf) {
        return NULL;
    }
    return atomic_load_explicit(&leaf->slab[key & ((1u << MAP_LEAF_BITS) - 1)],
                                memory_order_acquire);
}

/* Allocate an empty map; -1 when out of memory. */
int map_init(regpar_pool_t *pool);
/* Free the map and its leaves. */
void map_fini(regpar_pool_t *pool);
/* Point every granule of the slab at value (the slab or NULL).  Called with
 * grow_lock held.  Returns -1 only when a leaf cannot be allocated; the map
 * is unchanged then. */
int map_set(regpar_pool_t *pool, const regpar_slab_t *slab, regpar_slab_t *value);

/* ------------------------------------------------------------------------ */
/* Slabs (regpar_pool_slab.c)                                                */

/* Create a slab of nbufs buffers of buf_size bytes for bucket b: map,
 * place, pre-fault, register, publish in the address map.  Runs without
 * any bucket lock.  Returns NULL (with a logged reason) on failure. */
regpar_slab_t *slab_create(regpar_pool_t *pool, regpar_bucket_t *b, size_t buf_size, uint32_t nbufs,
                           size_t align);
/* Take the slab out of the address map (under grow_lock). */
void slab_unpublish(regpar_pool_t *pool, regpar_slab_t *slab);
/* Take the slab out of its bucket and the address map (b->lock held):
 * the buckets' alloc/free paths and collection both do. */
void slab_detach(regpar_pool_t *pool, regpar_bucket_t *b, regpar_slab_t *slab);
/* Give the memory back (the slab is detached: in no bucket, not in the
 * map) and recycle the descriptor. */
void slab_release(regpar_pool_t *pool, regpar_slab_t *slab, bool collected);
/* slab_release for a list linked through release_next. */
void slab_release_batch(regpar_pool_t *pool, regpar_slab_t *batch, bool collected);
/* Unmap every live slab (destroy); returns the buffers still out and their
 * bytes in *leaked_bytes. */
uint64_t slab_release_all(regpar_pool_t *pool, uint64_t *leaked_bytes);
/* Free the descriptor blocks (destroy). */
void slab_desc_fini(regpar_pool_t *pool);

/* ------------------------------------------------------------------------ */
/* Buckets (regpar_pool_bucket.c)                                            */

/* The first slab of a bucket: one 2 MiB granule, or enough for one buffer. */
static inline size_t first_slab_size(size_t buf_size)
{
    return round_up(buf_size > REGPAR_SLAB_ALIGN ? buf_size : REGPAR_SLAB_ALIGN, REGPAR_SLAB_ALIGN);
}

/* Bucket sizes from min to max by factor (sizes may be NULL); returns the
 * count, or REGPAR_MAX_BUCKETS + 1 if there would be more. */
unsigned bucket_series(size_t min, size_t max, double factor, size_t page, size_t *sizes);
void bucket_init(regpar_bucket_t *b, size_t buf_size, bool direct);
void bucket_fini(regpar_bucket_t *b);

/* A bucket's bitmaps of slots (b->lock held): slabs with a free buffer
 * (avail_bits) and slabs wholly free (empty_bits).  Here, not in
 * regpar_pool_bucket.c, because a slab leaving its bucket
 * (regpar_pool_slab.c) clears them too. */
static inline void bit_set(uint64_t *bits, size_t i)
{
    bits[i / 64] |= 1ULL << (i % 64);
}

static inline void bit_clear(uint64_t *bits, size_t i)
{
    bits[i / 64] &= ~(1ULL << (i % 64));
}

static inline void bucket_mark_empty(regpar_bucket_t *b, regpar_slab_t *slab, bool empty)
{
    if (b->direct) {
        return;
    }
    if (empty) {
        bit_set(b->empty_bits, slab->slot);
        counter_bump(&b->nempty, 1);
    } else {
        bit_clear(b->empty_bits, slab->slot);
        counter_bump(&b->nempty, (uint64_t)-1);
    }
}

/* ------------------------------------------------------------------------ */
/* Collection (regpar_pool_collect.c)                                        */

/* Release wholly free slabs, coldest first, until bytes_held + incoming fits
 * under max_capacity.  Returns the bytes released. */
size_t pool_fit_capacity(regpar_pool_t *pool, size_t incoming, bool blocking);

#endif /* REGPAR_POOL_TYPES_H */
