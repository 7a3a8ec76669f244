/*
 * Scratch memory of the collectives: from the regpar pool when it is loaded
 * (already faulted in and registered, reused call after call), else from
 * malloc.  Every byte is counted for the MPI_T variables so that users (and
 * the tests) can see that scratch stays bounded.
 */
#include "coll_bufpool.h"
#include "coll_bufpool_task.h"

#include <stdlib.h>

#include "opal/mca/mpool/base/base.h"
#include "opal/util/output.h"

#define COMPONENT (&mca_coll_bufpool_component)

void mca_coll_bufpool_pool_lookup(void)
{
    if (COMPONENT->pool_looked_up) {
        return;
    }
    OPAL_THREAD_LOCK(&COMPONENT->pool_lock);
    if (!COMPONENT->pool_looked_up) {
        mca_mpool_base_module_t *mpool = mca_mpool_base_module_lookup("mpool=regpar");
        const mca_mpool_regpar_ext_t *ext = mca_mpool_regpar_ext_of(mpool);
        if (NULL != ext) {
            COMPONENT->mpool = mpool;
            COMPONENT->ext = ext;
            if (COMPONENT->verbose >= 2) {
                opal_output(0, "coll_bufpool: scratch memory comes from the regpar pool");
            }
        } else if (COMPONENT->verbose >= 1) {
            /* Correct either way; only the reuse and registration are lost. */
            opal_output(0, "coll_bufpool: the regpar mpool component is not available; "
                           "scratch memory comes from malloc (check that mca_mpool_regpar.so "
                           "is in mca_base_component_path and not excluded with --mca mpool)");
        }
        opal_atomic_wmb();
        COMPONENT->pool_looked_up = true;
    }
    OPAL_THREAD_UNLOCK(&COMPONENT->pool_lock);
}

static void count_in_use(size_t bytes)
{
    uint64_t now =
        __atomic_add_fetch(&COMPONENT->scratch_bytes_in_use, (uint64_t)bytes, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&COMPONENT->scratch_bytes_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&COMPONENT->scratch_bytes_peak, &peak, now,
                                                      true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void *mca_coll_bufpool_scratch_get(size_t bytes)
{
    void *buf = NULL;

    /* A persistent collective's own buffer, kept since its last start. */
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task && NULL != (buf = bufpool_task_scratch_get(task, bytes))) {
        return buf;
    }

    mca_coll_bufpool_pool_lookup();
    (void)__atomic_fetch_add(&COMPONENT->scratch_requests, 1, __ATOMIC_RELAXED);
    if (NULL != COMPONENT->mpool) {
        buf = COMPONENT->mpool->mpool_alloc(COMPONENT->mpool, bytes, 0, 0);
    }
    if (NULL == buf) {
        /* No pool, or the pool is out of memory: malloc may still succeed
         * and the caller must not tell the difference. */
        (void)__atomic_fetch_add(&COMPONENT->scratch_plain_allocs, 1, __ATOMIC_RELAXED);
        buf = malloc(bytes);
        if (NULL == buf) {
            return NULL;
        }
    }
    count_in_use(bytes);
    return buf;
}

void mca_coll_bufpool_scratch_put(void *buf, size_t bytes)
{
    if (NULL == buf) {
        return;
    }
    /* A persistent collective keeps it for its next start. */
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task && bufpool_task_scratch_put(task, buf, bytes)) {
        return;
    }
    (void)__atomic_fetch_sub(&COMPONENT->scratch_bytes_in_use, (uint64_t)bytes, __ATOMIC_RELAXED);
    /* Until malloc has had to stand in for the pool, every scratch buffer is
     * the pool's: skip the lookup that tells them apart. */
    regpar_buffer_info_t info;
    if (NULL != COMPONENT->mpool &&
        (0 == __atomic_load_n(&COMPONENT->scratch_plain_allocs, __ATOMIC_RELAXED) ||
         0 == COMPONENT->ext->buffer_info(COMPONENT->mpool, buf, &info))) {
        COMPONENT->mpool->mpool_free(COMPONENT->mpool, buf);
    } else {
        free(buf);
    }
}
