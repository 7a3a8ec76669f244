/*
 * The pool's slabs: mapping (2 MiB-aligned, with guard pages), placement
 * (huge pages, NUMA), pre-faulting and registration, publication in the
 * address map, detachment from its bucket, and release.  Slab descriptors are type-stable: recycled
 * through a free list and freed only by destroy, so that free() may read a
 * stale one safely (regpar_pool_types.h).
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* From <numaif.h>, which we do not require (no libnuma dependency). */
#define REGPAR_MPOL_PREFERRED 1

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

static void slab_unmap(regpar_pool_t *pool, void *addr, size_t len)
{
    if (0 != regpar_sys_munmap(&pool->sys, addr, len)) {
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
    char *p = regpar_sys_map(&pool->sys, maplen);
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

/* Fault every page in.  MADV_POPULATE_WRITE reports out-of-memory instead of
 * killing the process; touching is the fallback on kernels without it. */
static int slab_populate(regpar_pool_t *pool, char *base, size_t len)
{
    int e = regpar_sys_prefault(&pool->sys, base, len, pool->page);
    if (0 != e) {
        pool_log_once(pool, CAUSE_POPULATE, 0,
                      "pre-faulting %zu bytes failed (%s): the allocation fails; lower "
                      "max_capacity or the job's memory use",
                      len, strerror(e));
        return -1;
    }
    return 0;
}

static void slab_place(regpar_pool_t *pool, char *base, size_t len)
{
    int e;
    if (pool->cfg.hugepages && len >= REGPAR_SLAB_ALIGN &&
        0 != (e = regpar_sys_madvise(&pool->sys, base, len, MADV_HUGEPAGE))) {
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
            e = errno;
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
void slab_release(regpar_pool_t *pool, regpar_slab_t *slab, bool collected)
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

void slab_release_batch(regpar_pool_t *pool, regpar_slab_t *batch, bool collected)
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
regpar_slab_t *slab_create(regpar_pool_t *pool, regpar_bucket_t *b, size_t buf_size, uint32_t nbufs,
                           size_t align)
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
    if (held + atomic_load_explicit(&pool->bytes_outside, memory_order_relaxed) >
        pool->cfg.max_capacity) {
        counter_add(&pool->over_capacity, 1);
    }
    pool_log(pool, 3, "mapped a slab of %zu bytes (%" PRIu32 " buffers of %zu) at %p%s", len, nbufs,
             buf_size, (void *)base,
             slab->has_region && slab->region.registered ? ", registered" : "");
    return slab;
}

void slab_unpublish(regpar_pool_t *pool, regpar_slab_t *slab)
{
    pthread_mutex_lock(&pool->grow_lock);
    map_set(pool, slab, NULL);
    pthread_mutex_unlock(&pool->grow_lock);
}

/* Take the slab out of the bucket and the address map: from here on no
 * thread can reach it, and it can be released without any lock. */
void slab_detach(regpar_pool_t *pool, regpar_bucket_t *b, regpar_slab_t *slab)
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

uint64_t slab_release_all(regpar_pool_t *pool, uint64_t *leaked_bytes)
{
    uint64_t leaked = 0;
    *leaked_bytes = 0;
    for (regpar_slab_t *s = pool->live; s; s = s->next) {
        leaked += s->nbufs - s->nfree;
        *leaked_bytes += (uint64_t)(s->nbufs - s->nfree) * s->buf_size;
        if (s->has_region) {
            regpar_reg_region_deregister(pool->cfg.reg, &s->region);
        }
        slab_unmap_slab(pool, s->base, s->len);
        slab_free_meta(s);
    }
    return leaked;
}

void slab_desc_fini(regpar_pool_t *pool)
{
    while (pool->desc_blocks) {
        regpar_desc_block_t *next = pool->desc_blocks->next;
        free(pool->desc_blocks);
        pool->desc_blocks = next;
    }
}
