/*
 * The pool's address map: which slab covers an address, at the 2 MiB
 * granularity slabs are aligned to, so that free() finds its slab in O(1)
 * without a lock (regpar_pool_types.h has the reader, map_lookup).
 * Two levels over addr >> 21 for 48-bit user addresses: a root of 2^14
 * leaf pointers allocated with the pool, leaves of 2^13 slab pointers
 * allocated on first use and kept until the pool is destroyed (a reader
 * may hold one at any time).
 */
#include "bufpool_config.h"

#include "regpar_pool_types.h"

#include <stdlib.h>

int map_init(regpar_pool_t *pool)
{
    pool->map_root = calloc((size_t)1 << MAP_ROOT_BITS, sizeof(*pool->map_root));
    return pool->map_root ? 0 : -1;
}

void map_fini(regpar_pool_t *pool)
{
    if (!pool->map_root) {
        return;
    }
    for (size_t i = 0; i < ((size_t)1 << MAP_ROOT_BITS); i++) {
        free(atomic_load_explicit(&pool->map_root[i], memory_order_relaxed));
    }
    free(pool->map_root);
    pool->map_root = NULL;
}

int map_set(regpar_pool_t *pool, const regpar_slab_t *slab, regpar_slab_t *value)
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
