/*
 * What other components (coll/bufpool first) include to reach the features of
 * the regpar pool that the mpool interface has no slot for: the registration
 * of a buffer, the pool's counters and the bucket a request would get.
 *
 * Usage:
 *   mca_mpool_base_module_t *m = mca_mpool_base_module_lookup("mpool=regpar");
 *   const mca_mpool_regpar_ext_t *ext = mca_mpool_regpar_ext_of(m);
 *   if (ext) { ... ext->buffer_info(m, buf, &info) ... }
 *
 * Only header-level types are shared (no link-time dependency between the
 * two components), so either may be absent at run time.
 */
#ifndef MCA_MPOOL_REGPAR_EXT_H
#define MCA_MPOOL_REGPAR_EXT_H

#include <string.h>

#include "opal/mca/mpool/mpool.h"

#include "regpar_pool.h"

/* Bumped whenever mca_mpool_regpar_ext_t changes incompatibly (2:
 * count_outside; 3: register_outside, deregister_outside). */
#define MCA_MPOOL_REGPAR_EXT_VERSION 3

typedef struct mca_mpool_regpar_ext {
    uint32_t version;
    /* Registration and size of a buffer the pool handed out; -1 if addr is
     * not one. */
    int (*buffer_info)(mca_mpool_base_module_t *mpool, const void *addr,
                       regpar_buffer_info_t *info);
    /* Counters of the pool (see regpar_pool_stats_t). */
    void (*get_stats)(mca_mpool_base_module_t *mpool, regpar_pool_stats_t *stats);
    /* Bytes a request of size would really occupy (0 = direct mapping). */
    size_t (*bucket_size)(mca_mpool_base_module_t *mpool, size_t size);
    /* Count memory the caller maps outside the pool (coll/bufpool's node
     * segments) against max_capacity: delta bytes mapped (> 0) or unmapped
     * again (< 0); regpar_pool_count_outside. */
    void (*count_outside)(mca_mpool_base_module_t *mpool, int64_t delta);
    /* Register [addr, addr + len), memory the caller maps and a transport
     * sends from (coll/bufpool's chunk segments of allreduce hier_node),
     * with the transport's registrar, as a slab is (now, or once the
     * registrar is attached), until deregister_outside(handle), which must
     * come before any of it is unmapped; the caller keeps an unregistered
     * page on either side.  NULL: nothing registered (no memory for the
     * bookkeeping); regpar_pool_outside_register. */
    void *(*register_outside)(mca_mpool_base_module_t *mpool, void *addr, size_t len);
    void (*deregister_outside)(mca_mpool_base_module_t *mpool, void *handle);
} mca_mpool_regpar_ext_t;

/* The first members of the regpar module; the rest is private. */
typedef struct mca_mpool_regpar_module_head {
    mca_mpool_base_module_t super;
    mca_mpool_regpar_ext_t ext;
} mca_mpool_regpar_module_head_t;

/* The extension of a module if it is a regpar module of a compatible
 * version, else NULL. */
static inline const mca_mpool_regpar_ext_t *mca_mpool_regpar_ext_of(mca_mpool_base_module_t *m)
{
    if (NULL == m || NULL == m->mpool_component ||
        0 != strcmp(m->mpool_component->mpool_version.mca_component_name, "regpar")) {
        return NULL;
    }
    const mca_mpool_regpar_ext_t *ext = &((mca_mpool_regpar_module_head_t *)m)->ext;
    return MCA_MPOOL_REGPAR_EXT_VERSION == ext->version ? ext : NULL;
}

#endif /* MCA_MPOOL_REGPAR_EXT_H */
