/*
 * The pool's buckets: the size series, each bucket's slot table of slabs
 * (with bitmaps of slabs that have a free buffer and slabs wholly free),
 * and the allocation and free paths that run through them.  The hit path
 * is here with everything it calls, so that it stays one uncontended lock
 * and no system call.
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

#include <stdlib.h>
#include <string.h>

/*
 * Bucket sizes follow bucket_min * factor^i rounded up to a page (the exact
 * series, so rounding does not compound), each at least one page above the
 * previous, the last one clamped to bucket_max.  Returns the count, or
 * REGPAR_MAX_BUCKETS + 1 if there would be more than REGPAR_MAX_BUCKETS.
 */
unsigned bucket_series(size_t min, size_t max, double factor, size_t page, size_t *sizes)
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

/* ------------------------------------------------------------------------ */
/* Buckets (every function here runs with b->lock held)                      */

static size_t bit_first(const uint64_t *bits, size_t nbits)
{
    for (size_t w = 0; w < nbits / 64; w++) {
        if (bits[w]) {
            return w * 64 + (size_t)__builtin_ctzll(bits[w]);
        }
    }
    return SIZE_MAX;
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

void bucket_init(regpar_bucket_t *b, size_t buf_size, bool direct)
{
    memset(b, 0, sizeof(*b));
    atomic_init(&b->lock, 0);
    atomic_init(&b->grow_epoch, 0);
    pthread_mutex_init(&b->grow_mutex, NULL);
    pthread_cond_init(&b->grow_cv, NULL);
    b->buf_size = buf_size;
    b->direct = direct;
}

void bucket_fini(regpar_bucket_t *b)
{
    pthread_mutex_destroy(&b->grow_mutex);
    pthread_cond_destroy(&b->grow_cv);
    free(b->slots);
    free(b->avail_bits);
    free(b->empty_bits);
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
        slab_detach(pool, b, slab);
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
