/*
 * regpar_pool: segregated-fit pool of page-multiple buffers carved from
 * 2 MiB-aligned slabs.  Design notes and measurements: docs/pool.md.
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
#include "bufpool_config.h"

#include "regpar_pool.h"

#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "regpar_size.h"

#ifndef MADV_HUGEPAGE
#define MADV_HUGEPAGE 14
#endif
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23
#endif
/* From <numaif.h>, which we do not require (no libnuma dependency). */
#define REGPAR_MPOL_PREFERRED 1

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

enum regpar_log_cause {
    CAUSE_MMAP = 1u << 0,
    CAUSE_MUNMAP = 1u << 1,
    CAUSE_HUGEPAGE = 1u << 2,
    CAUSE_MBIND = 1u << 3,
    CAUSE_REGISTER = 1u << 4,
    CAUSE_POPULATE = 1u << 5,
    CAUSE_NOMEM = 1u << 6,
    CAUSE_TOO_LARGE = 1u << 7,
    CAUSE_ALIGN = 1u << 8,
    CAUSE_BAD_FREE = 1u << 9,
    CAUSE_ADDRESS = 1u << 10,
};

struct regpar_pool {
    regpar_pool_config_t cfg;
    regpar_sys_ops_t sys;
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
    _Atomic uint64_t last_collect;
    _Atomic unsigned logged; /* causes already reported */
};

/* ------------------------------------------------------------------------ */
/* Small helpers                                                             */

static size_t round_up(size_t v, size_t to)
{
    return (v + to - 1) / to * to;
}

static bool is_pow2(size_t v)
{
    return v && 0 == (v & (v - 1));
}

static void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Test-and-test-and-set; yields after a short spin so that a preempted
 * holder (more threads than cores) gets the processor back. */
static void spin_lock(atomic_int *lock)
{
    while (atomic_exchange_explicit(lock, 1, memory_order_acquire)) {
        for (unsigned i = 0; atomic_load_explicit(lock, memory_order_relaxed); i++) {
            if (i < 128) {
                cpu_relax();
            } else {
                sched_yield();
            }
        }
    }
}

static bool spin_trylock(atomic_int *lock)
{
    return !atomic_load_explicit(lock, memory_order_relaxed) &&
           !atomic_exchange_explicit(lock, 1, memory_order_acquire);
}

static void spin_unlock(atomic_int *lock)
{
    atomic_store_explicit(lock, 0, memory_order_release);
}

/* Counters written under a lock: no read-modify-write needed. */
static void counter_bump(_Atomic uint64_t *c, uint64_t by)
{
    atomic_store_explicit(c, atomic_load_explicit(c, memory_order_relaxed) + by,
                          memory_order_relaxed);
}

static uint64_t counter_get(const _Atomic uint64_t *c)
{
    return atomic_load_explicit((_Atomic uint64_t *)c, memory_order_relaxed);
}

static void counter_add(_Atomic uint64_t *c, uint64_t by)
{
    atomic_fetch_add_explicit(c, by, memory_order_relaxed);
}

static void peak_raise(_Atomic uint64_t *peak, uint64_t value)
{
    uint64_t cur = atomic_load_explicit(peak, memory_order_relaxed);
    while (value > cur && !atomic_compare_exchange_weak_explicit(
                              peak, &cur, value, memory_order_relaxed, memory_order_relaxed)) {
    }
}

static uint64_t pool_now(const regpar_pool_t *pool)
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

static void pool_vlog(const regpar_pool_config_t *cfg, int level, const char *fmt, va_list ap)
{
    if (level >= 2 && cfg->verbose < level) {
        return;
    }
    char msg[512];
    vsnprintf(msg, sizeof(msg), fmt, ap);
    if (cfg->log) {
        cfg->log(cfg->log_arg, level, msg);
    } else if (level <= 1) {
        fprintf(stderr, "regpar pool: %s: %s\n", 0 == level ? "error" : "warning", msg);
    }
}

static void pool_log(const regpar_pool_t *pool, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void pool_log(const regpar_pool_t *pool, int level, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    pool_vlog(&pool->cfg, level, fmt, ap);
    va_end(ap);
}

/* Report a cause once until it is re-armed (an episode, not every call);
 * repeats are still visible at verbose >= 2. */
static void pool_log_once(regpar_pool_t *pool, unsigned cause, int level, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void pool_log_once(regpar_pool_t *pool, unsigned cause, int level, const char *fmt, ...)
{
    unsigned seen = atomic_fetch_or_explicit(&pool->logged, cause, memory_order_relaxed);
    va_list ap;
    va_start(ap, fmt);
    pool_vlog(&pool->cfg, (seen & cause) ? (level < 2 ? 2 : level) : level, fmt, ap);
    va_end(ap);
}

static void pool_log_rearm(regpar_pool_t *pool, unsigned cause)
{
    if (atomic_load_explicit(&pool->logged, memory_order_relaxed) & cause) {
        atomic_fetch_and_explicit(&pool->logged, ~cause, memory_order_relaxed);
    }
}

static const char *fmt_size(uint64_t v, char *buf, size_t len)
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

/*
 * Bucket sizes follow bucket_min * factor^i rounded up to a page (the exact
 * series, so rounding does not compound), each at least one page above the
 * previous, the last one clamped to bucket_max.  Returns the count, or
 * REGPAR_MAX_BUCKETS + 1 if there would be more than REGPAR_MAX_BUCKETS.
 */
static unsigned bucket_series(size_t min, size_t max, double factor, size_t page, size_t *sizes)
{
    unsigned n = 0;
    size_t size = min;
    double exact = (double)min;
    for (;;) {
        if (n == REGPAR_MAX_BUCKETS) {
            return REGPAR_MAX_BUCKETS + 1;
        }
        if (sizes) {
            sizes[n] = size;
        }
        n++;
        if (size >= max) {
            return n;
        }
        exact *= factor;
        size_t next = max;
        if (exact < (double)max) {
            /* ceil() without libm: exact is below max, so it fits. */
            next = (size_t)exact;
            next = round_up(next + ((double)next < exact), page);
        }
        if (next < size + page) {
            next = size + page;
        }
        size = next > max ? max : next;
    }
}

/* The first slab of a bucket: one 2 MiB granule, or enough for one buffer. */
static size_t first_slab_size(size_t buf_size)
{
    return round_up(buf_size > REGPAR_SLAB_ALIGN ? buf_size : REGPAR_SLAB_ALIGN, REGPAR_SLAB_ALIGN);
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
    fmt_size(page_size, c, sizeof(c));
    fmt_size(REGPAR_LIMIT_SIZE, b, sizeof(b));
    if (0 == cfg->bucket_max || cfg->bucket_max % page_size ||
        cfg->bucket_max > REGPAR_LIMIT_SIZE) {
        return check_fail(err, errlen,
                          "bucket_max %s is invalid; valid: a multiple of the page size (%s) "
                          "from bucket_min up to %s",
                          fmt_size(cfg->bucket_max, a, sizeof(a)), c, b);
    }
    if (0 == cfg->bucket_min || cfg->bucket_min % page_size || cfg->bucket_min > cfg->bucket_max) {
        return check_fail(err, errlen,
                          "bucket_min %s is invalid; valid: a multiple of the page size (%s) "
                          "from %s up to bucket_max (%s)",
                          fmt_size(cfg->bucket_min, a, sizeof(a)), c, c,
                          fmt_size(cfg->bucket_max, b, sizeof(b)));
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
                          fmt_size(cfg->bucket_min, a, sizeof(a)),
                          fmt_size(cfg->bucket_max, c, sizeof(c)));
    }
    if (cfg->slab_size < REGPAR_SLAB_ALIGN || cfg->slab_size % REGPAR_SLAB_ALIGN ||
        cfg->slab_size > REGPAR_LIMIT_SIZE) {
        return check_fail(err, errlen,
                          "slab_size %s is invalid; valid: a multiple of 2M from 2M up to %s",
                          fmt_size(cfg->slab_size, a, sizeof(a)), b);
    }
    size_t least = first_slab_size(cfg->bucket_min);
    if (cfg->max_capacity < least) {
        return check_fail(err, errlen,
                          "max_capacity %s is below one slab of the smallest bucket; valid: "
                          "%s or more",
                          fmt_size(cfg->max_capacity, a, sizeof(a)), fmt_size(least, c, sizeof(c)));
    }
    if (cfg->numa_node < -1 || cfg->numa_node > REGPAR_MAX_NUMA_NODE) {
        return check_fail(err, errlen,
                          "numa_node %d is invalid; valid: -1 (no binding) or a node number "
                          "from 0 to %d",
                          cfg->numa_node, REGPAR_MAX_NUMA_NODE);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Address map                                                               */

static regpar_slab_t *map_lookup(const regpar_pool_t *pool, const void *addr)
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

/* Point every granule of the slab at value (the slab or NULL).  Called with
 * grow_lock held.  Returns -1 only when a leaf cannot be allocated; the map
 * is unchanged then. */
static int map_set(regpar_pool_t *pool, const regpar_slab_t *slab, regpar_slab_t *value)
{
    uintptr_t first = (uintptr_t)slab->base >> MAP_SHIFT;
    uintptr_t last = ((uintptr_t)slab->base + slab->len - 1) >> MAP_SHIFT;
    for (uintptr_t key = first; value && key <= last; key++) {
        _Atomic(regpar_map_leaf_t *) *root = &pool->map_root[key >> MAP_LEAF_BITS];
        if (!atomic_load_explicit(root, memory_order_relaxed)) {
            regpar_map_leaf_t *leaf = calloc(1, sizeof(*leaf));
            if (!leaf) {
                return -1; /* leaves already added stay: they are empty */
            }
            atomic_store_explicit(root, leaf, memory_order_release);
        }
    }
    for (uintptr_t key = first; key <= last; key++) {
        regpar_map_leaf_t *leaf =
            atomic_load_explicit(&pool->map_root[key >> MAP_LEAF_BITS], memory_order_relaxed);
        atomic_store_explicit(&leaf->slab[key & ((1u << MAP_LEAF_BITS) - 1)], value,
                              memory_order_release);
    }
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Slab descriptors (type-stable: recycled, freed only by destroy)           */

static regpar_slab_t *desc_get(regpar_pool_t *pool)
{
    if (!pool->desc_free) {
        regpar_desc_block_t *block = calloc(1, sizeof(*block));
        if (!block) {
            return NULL;
        }
        block->next = pool->desc_blocks;
        pool->desc_blocks = block;
        for (int i = REGPAR_DESC_BLOCK - 1; i >= 0; i--) {
            block->desc[i].next = pool->desc_free;
            pool->desc_free = &block->desc[i];
        }
    }
    regpar_slab_t *slab = pool->desc_free;
    pool->desc_free = slab->next;
    return slab;
}

/* ------------------------------------------------------------------------ */
/* Mapping slabs                                                             */

static void *real_mmap(void *addr, size_t len, int prot, int flags, int fd, long off)
{
    return mmap(addr, len, prot, flags, fd, (off_t)off);
}

static void *sys_mmap(regpar_pool_t *pool, size_t len)
{
    return pool->sys.mmap_fn(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
}

static void slab_unmap(regpar_pool_t *pool, void *addr, size_t len)
{
    if (0 != pool->sys.munmap_fn(addr, len)) {
        int e = errno;
        pool_log_once(pool, CAUSE_MUNMAP, 1,
                      "munmap of %zu bytes at %p failed (%s); the address range stays "
                      "reserved but the pool no longer uses it",
                      len, addr, strerror(e));
    }
}

/*
 * Map len bytes starting on an align boundary (over-map, then trim), with
 * one unregistered guard page kept mapped (never touched, so it costs no
 * memory) on each side.  A transport's registration cache drops a
 * registration when memory that merely touches its edge is released
 * (Open MPI's interval tree): the guards make sure no neighbour's munmap
 * ever touches a slab's registration, and a slab's own release only
 * touches its own guards.
 */
static char *slab_map(regpar_pool_t *pool, size_t len, size_t align)
{
    size_t guard = pool->page;
    if (len > SIZE_MAX - align - guard) {
        pool_log_once(pool, CAUSE_TOO_LARGE, 0,
                      "a slab of %zu bytes is too large to map: the allocation fails", len);
        return NULL;
    }
    size_t maplen = len + align + guard;
    char *p = sys_mmap(pool, maplen);
    if (MAP_FAILED == (void *)p) {
        int e = errno;
        pool_log_once(pool, CAUSE_MMAP, 0,
                      "mmap of %zu bytes failed (%s): the allocation fails; lower "
                      "max_capacity or the job's memory use",
                      maplen, strerror(e));
        errno = e;
        return NULL;
    }
    char *start = (char *)round_up((uintptr_t)p + guard, align);
    size_t head = (size_t)(start - guard - p), tail = maplen - head - len - 2 * guard;
    if (head) {
        slab_unmap(pool, p, head);
    }
    if (tail) {
        slab_unmap(pool, start + len + guard, tail);
    }
    if (((uintptr_t)start + len - 1) >> MAP_ADDR_BITS) {
        pool_log_once(pool, CAUSE_ADDRESS, 0,
                      "mmap returned %p, beyond the 48-bit addresses the pool can track",
                      (void *)start);
        slab_unmap(pool, start - guard, len + 2 * guard);
        return NULL;
    }
    pool_log_rearm(pool, CAUSE_MMAP);
    return start;
}

/* Unmap a slab that slab_map returned, guards included. */
static void slab_unmap_slab(regpar_pool_t *pool, char *base, size_t len)
{
    slab_unmap(pool, base - pool->page, len + 2 * pool->page);
}

static bool madvise_unsupported(int e)
{
    return EINVAL == e || ENOSYS == e || EOPNOTSUPP == e;
}

/* Fault every page in.  MADV_POPULATE_WRITE reports out-of-memory instead of
 * killing the process; touching is the fallback on kernels without it. */
static int slab_populate(regpar_pool_t *pool, char *base, size_t len)
{
    if (0 == pool->sys.madvise_fn(base, len, MADV_POPULATE_WRITE)) {
        return 0;
    }
    int e = errno;
    if (!madvise_unsupported(e)) {
        pool_log_once(pool, CAUSE_POPULATE, 0,
                      "pre-faulting %zu bytes failed (%s): the allocation fails; lower "
                      "max_capacity or the job's memory use",
                      len, strerror(e));
        return -1;
    }
    for (size_t off = 0; off < len; off += pool->page) {
        ((volatile char *)base)[off] = 0;
    }
    return 0;
}

static void slab_place(regpar_pool_t *pool, char *base, size_t len)
{
    if (pool->cfg.hugepages && len >= REGPAR_SLAB_ALIGN &&
        0 != pool->sys.madvise_fn(base, len, MADV_HUGEPAGE)) {
        int e = errno;
        pool_log_once(pool, CAUSE_HUGEPAGE, 1,
                      "madvise(MADV_HUGEPAGE) failed (%s): slabs use small pages; set "
                      "hugepages off to silence this",
                      strerror(e));
    }
    if (pool->cfg.numa_node >= 0) {
        /* Preferred, not strict: a full node spills over instead of failing. */
        unsigned long mask[REGPAR_MAX_NUMA_NODE / (8 * sizeof(unsigned long)) + 1] = {0};
        unsigned node = (unsigned)pool->cfg.numa_node;
        mask[node / (8 * sizeof(unsigned long))] |= 1UL << (node % (8 * sizeof(unsigned long)));
        if (0 != syscall(SYS_mbind, base, len, REGPAR_MPOL_PREFERRED, mask, (unsigned long)node + 2,
                         0u)) {
            int e = errno;
            pool_log_once(pool, CAUSE_MBIND, 1,
                          "mbind to NUMA node %d failed (%s): slabs are placed by the kernel; "
                          "check numa_node",
                          pool->cfg.numa_node, strerror(e));
        }
    }
}

/* Pre-fault and register.  Returns -1 only when the memory itself is not
 * available (a failed registration leaves the slab usable unregistered). */
static int slab_prepare(regpar_pool_t *pool, regpar_slab_t *slab)
{
    regpar_reg_engine_t *reg = pool->cfg.reg;
    bool faulted = false;
    if (reg && REGPAR_REG_NONE == regpar_reg_engine_backend(reg)) {
        faulted = 0 == regpar_reg_prefault(reg, slab->base, slab->len);
    } else if (reg) {
        if (0 == regpar_reg_region_register_units(reg, slab->base, slab->len, slab->buf_size,
                                                  &slab->region)) {
            slab->has_region = true;
            faulted = slab->region.prefaulted;
        } else {
            pool_log_once(pool, CAUSE_REGISTER, 1,
                          "registering a slab of %zu bytes failed (no memory for its "
                          "bookkeeping): it is used unregistered",
                          slab->len);
        }
    }
    if (faulted || 0 == slab_populate(pool, slab->base, slab->len)) {
        return 0;
    }
    if (slab->has_region) {
        regpar_reg_region_deregister(reg, &slab->region);
        slab->has_region = false;
    }
    return -1;
}

static void slab_free_meta(regpar_slab_t *slab)
{
    free(slab->free_stack);
    slab->free_stack = NULL;
    slab->out = NULL;
}

/* Give the memory back (the slab is detached: in no bucket, not in the
 * map) and recycle the descriptor. */
static void slab_release(regpar_pool_t *pool, regpar_slab_t *slab, bool collected)
{
    pthread_mutex_lock(&pool->reg_lock);
    if (slab->has_region) {
        regpar_reg_region_deregister(pool->cfg.reg, &slab->region);
        slab->has_region = false;
    }
    slab_unmap_slab(pool, slab->base, slab->len);
    pthread_mutex_unlock(&pool->reg_lock);
    atomic_fetch_sub_explicit(&pool->bytes_held, slab->len, memory_order_relaxed);
    counter_add(&pool->slabs_released, 1);
    if (collected) {
        counter_add(&pool->bytes_collected, slab->len);
    }
    pool_log(pool, 3, "released a slab of %zu bytes at %p%s", slab->len, (void *)slab->base,
             collected ? " (collected)" : "");
    slab_free_meta(slab);
    pthread_mutex_lock(&pool->grow_lock);
    if (slab->prev) {
        slab->prev->next = slab->next;
    } else {
        pool->live = slab->next;
    }
    if (slab->next) {
        slab->next->prev = slab->prev;
    }
    slab->prev = NULL;
    slab->next = pool->desc_free;
    pool->desc_free = slab;
    pthread_mutex_unlock(&pool->grow_lock);
}

static void slab_release_batch(regpar_pool_t *pool, regpar_slab_t *batch, bool collected)
{
    while (batch) {
        regpar_slab_t *next = batch->release_next;
        slab_release(pool, batch, collected);
        batch = next;
    }
}

/*
 * Create a slab of nbufs buffers of buf_size bytes for bucket b: map,
 * place, pre-fault, register, publish in the address map.  Runs without
 * any bucket lock.  Returns NULL (with a logged reason) on failure.
 */
static regpar_slab_t *slab_create(regpar_pool_t *pool, regpar_bucket_t *b, size_t buf_size,
                                  uint32_t nbufs, size_t align)
{
    size_t len = buf_size * nbufs;
    char *base = slab_map(pool, len, align);
    if (!base) {
        return NULL;
    }
    uint32_t *meta = malloc((size_t)nbufs * (sizeof(uint32_t) + 1));
    if (!meta) {
        pool_log_once(pool, CAUSE_NOMEM, 0, "out of memory for the bookkeeping of a slab");
        slab_unmap_slab(pool, base, len);
        return NULL;
    }
    slab_place(pool, base, len);

    regpar_slab_t tmp = {.base = base,
                         .len = len,
                         .buf_size = buf_size,
                         .nbufs = nbufs,
                         .nfree = nbufs,
                         .free_stack = meta,
                         .out = (uint8_t *)(meta + nbufs)};
    if (is_pow2(buf_size)) {
        tmp.buf_shift = (unsigned)__builtin_ctzll(buf_size);
    }
    /* Pop order 0, 1, 2...: the low end of a slab is reused first. */
    for (uint32_t i = 0; i < nbufs; i++) {
        tmp.free_stack[i] = nbufs - 1 - i;
    }
    memset(tmp.out, 0, nbufs);
    if (0 != slab_prepare(pool, &tmp)) {
        slab_free_meta(&tmp);
        slab_unmap_slab(pool, base, len);
        return NULL;
    }

    pthread_mutex_lock(&pool->grow_lock);
    regpar_slab_t *slab = desc_get(pool);
    if (slab) {
        atomic_store_explicit(&slab->bucket, b, memory_order_relaxed);
        slab->base = tmp.base;
        slab->len = tmp.len;
        slab->buf_size = tmp.buf_size;
        slab->buf_shift = tmp.buf_shift;
        slab->nbufs = tmp.nbufs;
        slab->nfree = tmp.nfree;
        slab->slot = UINT32_MAX;
        slab->free_stack = tmp.free_stack;
        slab->out = tmp.out;
        slab->free_since = 0;
        slab->has_region = tmp.has_region;
        slab->region = tmp.region;
        slab->release_next = NULL;
        if (0 != map_set(pool, slab, slab)) {
            slab->next = pool->desc_free;
            pool->desc_free = slab;
            slab = NULL;
        } else {
            slab->prev = NULL;
            slab->next = pool->live;
            if (pool->live) {
                pool->live->prev = slab;
            }
            pool->live = slab;
        }
    }
    pthread_mutex_unlock(&pool->grow_lock);
    if (!slab) {
        pool_log_once(pool, CAUSE_NOMEM, 0, "out of memory for the bookkeeping of a slab");
        if (tmp.has_region) {
            regpar_reg_region_deregister(pool->cfg.reg, &tmp.region);
        }
        slab_free_meta(&tmp);
        slab_unmap_slab(pool, base, len);
        return NULL;
    }
    counter_add(&pool->slabs_mapped, 1);
    uint64_t held = atomic_fetch_add_explicit(&pool->bytes_held, len, memory_order_relaxed) + len;
    peak_raise(&pool->bytes_peak, held);
    if (held > pool->cfg.max_capacity) {
        counter_add(&pool->over_capacity, 1);
    }
    pool_log(pool, 3, "mapped a slab of %zu bytes (%" PRIu32 " buffers of %zu) at %p%s", len, nbufs,
             buf_size, (void *)base,
             slab->has_region && slab->region.registered ? ", registered" : "");
    return slab;
}

/* ------------------------------------------------------------------------ */
/* Buckets (every function here runs with b->lock held)                      */

static void bit_set(uint64_t *bits, size_t i)
{
    bits[i / 64] |= 1ULL << (i % 64);
}

static void bit_clear(uint64_t *bits, size_t i)
{
    bits[i / 64] &= ~(1ULL << (i % 64));
}

static size_t bit_first(const uint64_t *bits, size_t nbits)
{
    for (size_t w = 0; w < nbits / 64; w++) {
        if (bits[w]) {
            return w * 64 + (size_t)__builtin_ctzll(bits[w]);
        }
    }
    return SIZE_MAX;
}

static void bucket_mark_empty(regpar_bucket_t *b, regpar_slab_t *slab, bool empty)
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

/* Take a buffer from slab (which has one). */
static void *slab_take(regpar_bucket_t *b, regpar_slab_t *slab)
{
    if (slab->nfree == slab->nbufs) {
        bucket_mark_empty(b, slab, false);
    }
    uint32_t idx = slab->free_stack[--slab->nfree];
    slab->out[idx] = 1;
    if (0 == slab->nfree && !b->direct) {
        bit_clear(b->avail_bits, slab->slot);
    }
    return slab->base + (size_t)idx * slab->buf_size;
}

/* Return a buffer to its slab; true if that made the slab wholly free. */
static bool slab_put(regpar_pool_t *pool, regpar_bucket_t *b, regpar_slab_t *slab, uint32_t idx)
{
    slab->out[idx] = 0;
    slab->free_stack[slab->nfree++] = idx;
    if (b->direct) {
        return false;
    }
    if (1 == slab->nfree) {
        bit_set(b->avail_bits, slab->slot);
    }
    if (slab->nfree != slab->nbufs) {
        return false;
    }
    slab->free_since = pool_now(pool);
    bucket_mark_empty(b, slab, true);
    return true;
}

/* Ensure a free slot; returns its index or SIZE_MAX (no memory). */
static size_t bucket_free_slot(regpar_bucket_t *b)
{
    for (size_t i = 0; i < b->nslots; i++) {
        if (!b->slots[i]) {
            return i;
        }
    }
    size_t n = b->nslots ? 2 * b->nslots : 64;
    regpar_slab_t **slots = realloc(b->slots, n * sizeof(*slots));
    if (!slots) {
        return SIZE_MAX;
    }
    b->slots = slots;
    uint64_t *avail = realloc(b->avail_bits, n / 8);
    if (!avail) {
        return SIZE_MAX;
    }
    b->avail_bits = avail;
    uint64_t *empty = realloc(b->empty_bits, n / 8);
    if (!empty) {
        return SIZE_MAX;
    }
    b->empty_bits = empty;
    memset(slots + b->nslots, 0, (n - b->nslots) * sizeof(*slots));
    memset((char *)avail + b->nslots / 8, 0, (n - b->nslots) / 8);
    memset((char *)empty + b->nslots / 8, 0, (n - b->nslots) / 8);
    size_t slot = b->nslots;
    b->nslots = n;
    return slot;
}

/* Add a new (wholly free) slab to the bucket. */
static int bucket_insert(regpar_bucket_t *b, regpar_slab_t *slab)
{
    if (b->direct) {
        return 0;
    }
    size_t slot = bucket_free_slot(b);
    if (SIZE_MAX == slot) {
        return -1;
    }
    slab->slot = (uint32_t)slot;
    b->slots[slot] = slab;
    b->nslabs++;
    bit_set(b->avail_bits, slot);
    bucket_mark_empty(b, slab, true);
    return 0;
}

static void slab_unpublish(regpar_pool_t *pool, regpar_slab_t *slab)
{
    pthread_mutex_lock(&pool->grow_lock);
    map_set(pool, slab, NULL);
    pthread_mutex_unlock(&pool->grow_lock);
}

/* Take the slab out of the bucket and the address map: from here on no
 * thread can reach it, and it can be released without any lock. */
static void bucket_detach(regpar_pool_t *pool, regpar_bucket_t *b, regpar_slab_t *slab)
{
    if (!b->direct) {
        if (slab->nfree == slab->nbufs) {
            bucket_mark_empty(b, slab, false);
        }
        bit_clear(b->avail_bits, slab->slot);
        b->slots[slab->slot] = NULL;
        b->nslabs--;
    }
    slab_unpublish(pool, slab);
}

/* Size of the next slab: the first is small and each further one doubles,
 * up to max(slab_size, one buffer). */
static uint32_t bucket_next_nbufs(const regpar_pool_t *pool, const regpar_bucket_t *b)
{
    size_t target = first_slab_size(b->buf_size);
    size_t limit = pool->cfg.slab_size > b->buf_size ? pool->cfg.slab_size : b->buf_size;
    for (unsigned k = b->nslabs + b->growing; k && target < limit; k--) {
        target *= 2;
    }
    if (target > limit) {
        target = limit;
    }
    size_t n = target / b->buf_size;
    return n ? (uint32_t)n : 1;
}

/* ------------------------------------------------------------------------ */
/* Capacity and collection                                                   */

/* Lock a bucket, or only try to when blocking is false. */
static bool bucket_lock(regpar_bucket_t *b, bool blocking)
{
    if (blocking) {
        spin_lock(&b->lock);
        return true;
    }
    return spin_trylock(&b->lock);
}

/* Detach the wholly free slab that has been free the longest, or return
 * NULL if there is none (or, when !blocking, none reachable right now). */
static regpar_slab_t *pool_detach_coldest(regpar_pool_t *pool, bool blocking)
{
    /* A failed attempt means another thread used or released the chosen
     * slab meanwhile; only the non-blocking mode gives up. */
    for (int attempt = 0; blocking || attempt < 4; attempt++) {
        regpar_bucket_t *best_b = NULL;
        regpar_slab_t *best = NULL;
        size_t best_slot = 0;
        uint64_t best_since = UINT64_MAX;
        for (unsigned i = 0; i < pool->nbuckets; i++) {
            regpar_bucket_t *b = &pool->buckets[i];
            if (0 == counter_get(&b->nempty) || !bucket_lock(b, blocking)) {
                continue;
            }
            for (size_t w = 0; w < b->nslots / 64; w++) {
                for (uint64_t bits = b->empty_bits[w]; bits; bits &= bits - 1) {
                    size_t slot = w * 64 + (size_t)__builtin_ctzll(bits);
                    if (b->slots[slot]->free_since < best_since) {
                        best_since = b->slots[slot]->free_since;
                        best = b->slots[slot];
                        best_slot = slot;
                        best_b = b;
                    }
                }
            }
            spin_unlock(&b->lock);
        }
        if (!best) {
            return NULL;
        }
        if (!bucket_lock(best_b, blocking)) {
            continue;
        }
        /* It may have been used or released (and its descriptor reused)
         * while no lock was held: only trust it once it is found in place. */
        bool still = best_b->slots[best_slot] == best && best->nfree == best->nbufs;
        if (still) {
            bucket_detach(pool, best_b, best);
        }
        spin_unlock(&best_b->lock);
        if (still) {
            return best;
        }
    }
    return NULL;
}

/* Release wholly free slabs, coldest first, until bytes_held + incoming fits
 * under max_capacity.  Returns the bytes released. */
static size_t pool_fit_capacity(regpar_pool_t *pool, size_t incoming, bool blocking)
{
    size_t released = 0;
    uint64_t cap = pool->cfg.max_capacity;
    while (atomic_load_explicit(&pool->bytes_held, memory_order_relaxed) + incoming > cap) {
        regpar_slab_t *victim = pool_detach_coldest(pool, blocking);
        if (!victim) {
            break;
        }
        released += victim->len;
        slab_release(pool, victim, true);
    }
    if (released) {
        pool_log(pool, 2, "released %zu bytes of free slabs to stay under max_capacity (%zu)",
                 released, pool->cfg.max_capacity);
    }
    return released;
}

size_t regpar_pool_collect(regpar_pool_t *pool, bool force)
{
    uint64_t age = pool->cfg.gc_age_ns;
    uint64_t now = pool_now(pool);
    bool by_age = force;
    if (!force && age) {
        uint64_t last = atomic_load_explicit(&pool->last_collect, memory_order_relaxed);
        /* One collector at a time; the others return at once. */
        by_age = now >= last && now - last >= age / 4 &&
                 atomic_compare_exchange_strong_explicit(
                     &pool->last_collect, &last, now, memory_order_relaxed, memory_order_relaxed);
    }
    size_t released = 0;
    for (unsigned i = 0; by_age && i < pool->nbuckets; i++) {
        regpar_bucket_t *b = &pool->buckets[i];
        if (0 == counter_get(&b->nempty) || !bucket_lock(b, force)) {
            continue;
        }
        regpar_slab_t *batch = NULL;
        for (size_t w = 0; w < b->nslots / 64; w++) {
            for (uint64_t bits = b->empty_bits[w]; bits; bits &= bits - 1) {
                regpar_slab_t *s = b->slots[w * 64 + (size_t)__builtin_ctzll(bits)];
                /* A slab emptied after now was read is young by definition. */
                if (force || (now > s->free_since && now - s->free_since > age)) {
                    bucket_detach(pool, b, s);
                    s->release_next = batch;
                    batch = s;
                    released += s->len;
                }
            }
        }
        spin_unlock(&b->lock);
        slab_release_batch(pool, batch, true);
    }
    if (by_age) {
        atomic_store_explicit(&pool->last_collect, now, memory_order_relaxed);
    }
    if (released) {
        pool_log(pool, 2, "collected %zu bytes of slabs %s", released,
                 force ? "(forced)" : "idle for longer than gc_age");
    }
    return released + pool_fit_capacity(pool, 0, force);
}

/* ------------------------------------------------------------------------ */
/* Pool                                                                      */

static void bucket_init(regpar_bucket_t *b, size_t buf_size, bool direct)
{
    memset(b, 0, sizeof(*b));
    atomic_init(&b->lock, 0);
    atomic_init(&b->grow_epoch, 0);
    pthread_mutex_init(&b->grow_mutex, NULL);
    pthread_cond_init(&b->grow_cv, NULL);
    b->buf_size = buf_size;
    b->direct = direct;
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
        pool->map_root = calloc((size_t)1 << MAP_ROOT_BITS, sizeof(*pool->map_root));
    }
    if (!pool || !pool->buckets || !pool->map_root) {
        if (pool) {
            free(pool->buckets);
            free(pool->map_root);
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
    pool->sys.mmap_fn = cfg->sys && cfg->sys->mmap_fn ? cfg->sys->mmap_fn : real_mmap;
    pool->sys.munmap_fn = cfg->sys && cfg->sys->munmap_fn ? cfg->sys->munmap_fn : munmap;
    pool->sys.madvise_fn = cfg->sys && cfg->sys->madvise_fn ? cfg->sys->madvise_fn : madvise;
    pthread_mutex_init(&pool->grow_lock, NULL);
    pthread_mutex_init(&pool->reg_lock, NULL);
    atomic_store(&pool->last_collect, pool_now(pool));
    *out = pool;
    return 0;
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
    pthread_mutex_unlock(&pool->reg_lock);
    return done;
}

void regpar_pool_destroy(regpar_pool_t *pool)
{
    if (!pool) {
        return;
    }
    uint64_t leaked = 0, leaked_bytes = 0;
    for (regpar_slab_t *s = pool->live; s; s = s->next) {
        leaked += s->nbufs - s->nfree;
        leaked_bytes += (uint64_t)(s->nbufs - s->nfree) * s->buf_size;
        if (s->has_region) {
            regpar_reg_region_deregister(pool->cfg.reg, &s->region);
        }
        slab_unmap_slab(pool, s->base, s->len);
        slab_free_meta(s);
    }
    if (leaked && pool->cfg.verbose >= 1) {
        pool_log(pool, 1,
                 "%" PRIu64 " buffer(s) (%" PRIu64 " bytes) were still out when the pool was "
                 "destroyed; they are unmapped",
                 leaked, leaked_bytes);
    }
    for (unsigned i = 0; i <= pool->nbuckets; i++) {
        regpar_bucket_t *b = &pool->buckets[i];
        pthread_mutex_destroy(&b->grow_mutex);
        pthread_cond_destroy(&b->grow_cv);
        free(b->slots);
        free(b->avail_bits);
        free(b->empty_bits);
    }
    while (pool->desc_blocks) {
        regpar_desc_block_t *next = pool->desc_blocks->next;
        free(pool->desc_blocks);
        pool->desc_blocks = next;
    }
    for (size_t i = 0; i < ((size_t)1 << MAP_ROOT_BITS); i++) {
        free(atomic_load_explicit(&pool->map_root[i], memory_order_relaxed));
    }
    free(pool->map_root);
    pthread_mutex_destroy(&pool->grow_lock);
    pthread_mutex_destroy(&pool->reg_lock);
    free(pool->buckets);
    free(pool);
}

/* Index of the smallest bucket that holds size bytes with buffers aligned to
 * align, or -1 for a direct mapping. */
static int bucket_index(const regpar_pool_t *pool, size_t size, size_t align)
{
    unsigned lo = 0, hi = pool->nbuckets;
    while (lo < hi) {
        unsigned mid = (lo + hi) / 2;
        if (pool->bucket_sizes[mid] < size) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    /* Buffers sit at multiples of their size from a 2 MiB-aligned base. */
    if (align > pool->page) {
        if (align > REGPAR_SLAB_ALIGN) {
            return -1;
        }
        while (lo < pool->nbuckets && pool->bucket_sizes[lo] % align) {
            lo++;
        }
    }
    return lo < pool->nbuckets ? (int)lo : -1;
}

size_t regpar_pool_bucket_size(const regpar_pool_t *pool, size_t size)
{
    int i = bucket_index(pool, size ? size : 1, pool->page);
    return i < 0 ? 0 : pool->bucket_sizes[i];
}

static void pool_count_in_use(regpar_pool_t *pool, size_t bytes)
{
    uint64_t now =
        atomic_fetch_add_explicit(&pool->bytes_in_use, bytes, memory_order_relaxed) + bytes;
    peak_raise(&pool->bytes_in_use_peak, now);
}

static void *pool_fail(regpar_pool_t *pool)
{
    counter_add(&pool->alloc_failures, 1);
    return NULL;
}

static void *direct_alloc(regpar_pool_t *pool, size_t size, size_t align)
{
    regpar_bucket_t *b = pool->direct;
    if (size > REGPAR_LIMIT_SIZE * 1024) {
        pool_log_once(pool, CAUSE_TOO_LARGE, 0,
                      "a request of %zu bytes is too large to map: the allocation fails", size);
        return pool_fail(pool);
    }
    size_t len = round_up(size, pool->page);
    pool_fit_capacity(pool, len, true);
    regpar_slab_t *slab =
        slab_create(pool, b, len, 1, align > REGPAR_SLAB_ALIGN ? align : REGPAR_SLAB_ALIGN);
    if (!slab) {
        return pool_fail(pool);
    }
    spin_lock(&b->lock);
    void *p = slab_take(b, slab);
    counter_bump(&b->allocs, 1);
    spin_unlock(&b->lock);
    pool_count_in_use(pool, len);
    return p;
}

/* The slow path of an allocation from bucket b, entered with b->lock held
 * and no free buffer in the bucket; returns with the lock released. */
static void *bucket_grow(regpar_pool_t *pool, regpar_bucket_t *b)
{
    uint32_t nbufs = bucket_next_nbufs(pool, b);
    b->growing++;
    b->grow_spare += nbufs - 1;
    spin_unlock(&b->lock);

    regpar_pool_collect(pool, false);
    pool_fit_capacity(pool, (size_t)nbufs * b->buf_size, true);
    regpar_slab_t *slab = slab_create(pool, b, b->buf_size, nbufs, REGPAR_SLAB_ALIGN);

    spin_lock(&b->lock);
    b->growing--;
    b->grow_spare -= nbufs - 1;
    if (slab && 0 != bucket_insert(b, slab)) {
        spin_unlock(&b->lock);
        pool_log_once(pool, CAUSE_NOMEM, 0, "out of memory for the slot table of a bucket");
        slab_unpublish(pool, slab);
        slab_release(pool, slab, false);
        spin_lock(&b->lock);
        slab = NULL;
    }
    void *p = NULL;
    if (slab) {
        p = slab_take(b, slab);
        counter_bump(&b->misses, 1);
        counter_bump(&b->allocs, 1);
    }
    bool wake = b->grow_waiters != 0;
    atomic_fetch_add_explicit(&b->grow_epoch, 1, memory_order_relaxed);
    spin_unlock(&b->lock);
    if (wake) {
        /* Taking grow_mutex orders the epoch bump before any waiter's check. */
        pthread_mutex_lock(&b->grow_mutex);
        pthread_cond_broadcast(&b->grow_cv);
        pthread_mutex_unlock(&b->grow_mutex);
    }
    if (!p) {
        return pool_fail(pool);
    }
    pool_count_in_use(pool, b->buf_size);
    return p;
}

static void *pool_alloc(regpar_pool_t *pool, size_t size, size_t align)
{
    if (0 == size) {
        size = 1; /* served as one page */
    }
    int i = bucket_index(pool, size, align);
    if (i < 0) {
        return direct_alloc(pool, size, align);
    }
    regpar_bucket_t *b = &pool->buckets[i];
    spin_lock(&b->lock);
    for (;;) {
        size_t slot = bit_first(b->avail_bits, b->nslots);
        if (SIZE_MAX != slot) {
            void *p = slab_take(b, b->slots[slot]);
            counter_bump(&b->hits, 1);
            counter_bump(&b->allocs, 1);
            spin_unlock(&b->lock);
            pool_count_in_use(pool, b->buf_size);
            return p;
        }
        /* A slab being created will have room for us: wait for it rather
         * than map (and register) another one. */
        if (b->grow_spare <= b->grow_waiters) {
            return bucket_grow(pool, b);
        }
        unsigned epoch = atomic_load_explicit(&b->grow_epoch, memory_order_relaxed);
        b->grow_waiters++;
        spin_unlock(&b->lock);
        pthread_mutex_lock(&b->grow_mutex);
        while (atomic_load_explicit(&b->grow_epoch, memory_order_relaxed) == epoch) {
            pthread_cond_wait(&b->grow_cv, &b->grow_mutex);
        }
        pthread_mutex_unlock(&b->grow_mutex);
        spin_lock(&b->lock);
        b->grow_waiters--;
    }
}

void *regpar_pool_alloc(regpar_pool_t *pool, size_t size)
{
    return pool_alloc(pool, size, pool->page);
}

void *regpar_pool_alloc_aligned(regpar_pool_t *pool, size_t size, size_t align)
{
    if (align && (!is_pow2(align) || align > REGPAR_MAX_ALIGN)) {
        pool_log_once(pool, CAUSE_ALIGN, 0,
                      "alignment %zu is invalid: it must be a power of two up to 1G", align);
        return pool_fail(pool);
    }
    return pool_alloc(pool, size, align > pool->page ? align : pool->page);
}

/*
 * Find and lock the slab holding the buffer that starts at addr and is out.
 * Returns the slab with its bucket locked (*bp), or NULL if addr is not such
 * a buffer.
 */
static regpar_slab_t *pool_find_out(const regpar_pool_t *pool, const void *addr,
                                    regpar_bucket_t **bp, uint32_t *idx)
{
    for (;;) {
        regpar_slab_t *slab = map_lookup(pool, addr);
        if (!slab) {
            return NULL;
        }
        regpar_bucket_t *b = atomic_load_explicit(&slab->bucket, memory_order_relaxed);
        if (!b) {
            return NULL;
        }
        spin_lock(&b->lock);
        /* The slab may have been released (and its descriptor reused)
         * between the lookup and the lock. */
        if (map_lookup(pool, addr) != slab ||
            atomic_load_explicit(&slab->bucket, memory_order_relaxed) != b) {
            spin_unlock(&b->lock);
            continue;
        }
        /* Unsigned: an address below the base wraps to a huge offset. */
        size_t off = (size_t)((uintptr_t)addr - (uintptr_t)slab->base);
        size_t i = slab->buf_shift ? off >> slab->buf_shift : off / slab->buf_size;
        if (i >= slab->nbufs || off != i * slab->buf_size || !slab->out[i]) {
            spin_unlock(&b->lock);
            return NULL;
        }
        *bp = b;
        *idx = (uint32_t)i;
        return slab;
    }
}

int regpar_pool_free(regpar_pool_t *pool, void *addr)
{
    regpar_bucket_t *b;
    uint32_t idx;
    regpar_slab_t *slab = addr ? pool_find_out(pool, addr, &b, &idx) : NULL;
    if (!slab) {
        if (addr) {
            pool_log_once(pool, CAUSE_BAD_FREE, 1,
                          "free of %p ignored: not a buffer of this pool that is out (double "
                          "free or foreign pointer)",
                          addr);
        }
        return -1;
    }
    size_t size = slab->buf_size;
    /* Only a free that empties a slab can make room under the cap: every
     * other wholly free slab was considered when it became so. */
    bool emptied = slab_put(pool, b, slab, idx);
    counter_bump(&b->frees, 1);
    bool look = false;
    if (b->direct) {
        bucket_detach(pool, b, slab);
    } else if (++b->frees_since_look >= REGPAR_COLLECT_EVERY) {
        b->frees_since_look = 0;
        look = pool->cfg.gc_age_ns != 0;
    }
    spin_unlock(&b->lock);
    atomic_fetch_sub_explicit(&pool->bytes_in_use, size, memory_order_relaxed);
    if (b->direct) {
        slab_release(pool, slab, false);
    }
    if (look) {
        regpar_pool_collect(pool, false);
    }
    if (emptied) {
        pool_fit_capacity(pool, 0, true);
    }
    return 0;
}

bool regpar_pool_owns(regpar_pool_t *pool, const void *addr)
{
    regpar_bucket_t *b;
    uint32_t idx;
    if (!addr || !pool_find_out(pool, addr, &b, &idx)) {
        return false;
    }
    spin_unlock(&b->lock);
    return true;
}

int regpar_pool_buffer_info(regpar_pool_t *pool, const void *addr, regpar_buffer_info_t *info)
{
    regpar_bucket_t *b;
    uint32_t idx;
    regpar_slab_t *slab = addr ? pool_find_out(pool, addr, &b, &idx) : NULL;
    if (!slab) {
        return -1;
    }
    memset(info, 0, sizeof(*info));
    info->base = (void *)addr;
    info->size = slab->buf_size;
    if (slab->has_region && slab->region.registered) {
        const regpar_reg_chunk_t *chunk = regpar_reg_region_find(&slab->region, addr);
        info->registered = chunk != NULL;
        if (chunk) {
            info->reg_desc = chunk->desc;
            info->reg_key = chunk->key;
        }
    }
    spin_unlock(&b->lock);
    return 0;
}

/* ------------------------------------------------------------------------ */
/* Statistics                                                                */

void regpar_pool_get_stats(const regpar_pool_t *pool, regpar_pool_stats_t *st)
{
    memset(st, 0, sizeof(*st));
    for (unsigned i = 0; i < pool->nbuckets; i++) {
        const regpar_bucket_t *b = &pool->buckets[i];
        st->allocs += counter_get(&b->allocs);
        st->frees += counter_get(&b->frees);
        st->hits += counter_get(&b->hits);
        st->misses += counter_get(&b->misses);
    }
    st->direct_allocs = counter_get(&pool->direct->allocs);
    st->allocs += st->direct_allocs;
    st->frees += counter_get(&pool->direct->frees);
    st->over_capacity = counter_get(&pool->over_capacity);
    st->slabs_mapped = counter_get(&pool->slabs_mapped);
    st->slabs_released = counter_get(&pool->slabs_released);
    st->bytes_held = counter_get(&pool->bytes_held);
    st->bytes_in_use = counter_get(&pool->bytes_in_use);
    st->bytes_peak = counter_get(&pool->bytes_peak);
    st->bytes_in_use_peak = counter_get(&pool->bytes_in_use_peak);
    st->bytes_collected = counter_get(&pool->bytes_collected);
    st->alloc_failures = counter_get(&pool->alloc_failures);
    if (pool->cfg.reg) {
        regpar_reg_get_stats(pool->cfg.reg, &st->reg);
    }
}

void regpar_pool_reset_peaks(regpar_pool_t *pool)
{
    atomic_store(&pool->bytes_peak, atomic_load(&pool->bytes_held));
    atomic_store(&pool->bytes_in_use_peak, atomic_load(&pool->bytes_in_use));
}

/* snprintf into buf at *pos, tracking the length that would be needed. */
static void report_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void report_add(char *buf, size_t len, size_t *pos, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(*pos < len ? buf + *pos : NULL, *pos < len ? len - *pos : 0, fmt, ap);
    va_end(ap);
    if (n > 0) {
        *pos += (size_t)n;
    }
}

int regpar_pool_report(const regpar_pool_t *pool, char *buf, size_t len)
{
    regpar_pool_stats_t st;
    regpar_pool_get_stats(pool, &st);
    size_t pos = 0;
    char s1[32], s2[32], s3[32], s4[32], s5[32], s6[32];
    if (buf && len) {
        buf[0] = '\0';
    } else {
        buf = NULL;
        len = 0;
    }
    report_add(buf, len, &pos,
               "allocs %" PRIu64 " (hits %" PRIu64 ", misses %" PRIu64 ", direct %" PRIu64
               "), frees %" PRIu64 ", failures %" PRIu64 ", over capacity %" PRIu64 "\n",
               st.allocs, st.hits, st.misses, st.direct_allocs, st.frees, st.alloc_failures,
               st.over_capacity);
    report_add(buf, len, &pos,
               "held %s (peak %s, cap %s), in use %s (peak %s), collected %s, slabs mapped "
               "%" PRIu64 " released %" PRIu64 "\n",
               fmt_size(st.bytes_held, s1, sizeof(s1)), fmt_size(st.bytes_peak, s2, sizeof(s2)),
               fmt_size(pool->cfg.max_capacity, s3, sizeof(s3)),
               fmt_size(st.bytes_in_use, s4, sizeof(s4)),
               fmt_size(st.bytes_in_use_peak, s5, sizeof(s5)),
               fmt_size(st.bytes_collected, s6, sizeof(s6)), st.slabs_mapped, st.slabs_released);
    for (unsigned i = 0; i < pool->nbuckets; i++) {
        regpar_bucket_t *b = (regpar_bucket_t *)&pool->buckets[i];
        uint64_t bufs = 0, nfree = 0, held = 0;
        spin_lock(&b->lock);
        unsigned nslabs = b->nslabs;
        for (size_t s = 0; s < b->nslots; s++) {
            if (b->slots[s]) {
                bufs += b->slots[s]->nbufs;
                nfree += b->slots[s]->nfree;
                held += b->slots[s]->len;
            }
        }
        uint64_t nempty = counter_get(&b->nempty);
        spin_unlock(&b->lock);
        if (nslabs || counter_get(&b->allocs)) {
            report_add(buf, len, &pos,
                       "  bucket %6s: %u slab(s) (%" PRIu64 " wholly free), %" PRIu64
                       " buffer(s), %" PRIu64 " out, held %s, allocs %" PRIu64 "\n",
                       fmt_size(b->buf_size, s1, sizeof(s1)), nslabs, nempty, bufs, bufs - nfree,
                       fmt_size(held, s2, sizeof(s2)), counter_get(&b->allocs));
        }
    }
    return pos > INT32_MAX ? INT32_MAX : (int)pos;
}
