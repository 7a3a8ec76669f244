/*
 * Scratch memory of the collectives (see coll_bufpool_scratch.h).
 */
#include "coll_bufpool_scratch.h"
#include "coll_bufpool_task.h"

#include <stdlib.h>

#include "bufpool_ompi_compat.h"
#include "mpool_regpar_ext.h"
#include BUFPOOL_OPAL_MUTEX_H
#include "opal/mca/mpool/base/base.h"
#include "opal/util/output.h"

bufpool_scratch_counters_t bufpool_scratch_counters;

static struct {
    opal_mutex_t lock;
    volatile bool looked_up;
    int verbose;
    mca_mpool_base_module_t *mpool;    /* NULL: plain malloc       */
    const mca_mpool_regpar_ext_t *ext; /* NULL if mpool is not ours */
} scratch;

void bufpool_scratch_open(int verbose)
{
    OBJ_CONSTRUCT(&scratch.lock, opal_mutex_t);
    scratch.looked_up = false;
    scratch.verbose = verbose;
    scratch.mpool = NULL;
    scratch.ext = NULL;
}

void bufpool_scratch_close(void)
{
    OBJ_DESTRUCT(&scratch.lock);
    scratch.mpool = NULL;
    scratch.ext = NULL;
}

void bufpool_scratch_lookup(void)
{
    if (scratch.looked_up) {
        return;
    }
    OPAL_THREAD_LOCK(&scratch.lock);
    if (!scratch.looked_up) {
        mca_mpool_base_module_t *mpool = mca_mpool_base_module_lookup("mpool=regpar");
        const mca_mpool_regpar_ext_t *ext = mca_mpool_regpar_ext_of(mpool);
        if (NULL != ext) {
            scratch.mpool = mpool;
            scratch.ext = ext;
            if (scratch.verbose >= 2) {
                opal_output(0, "coll_bufpool: scratch memory comes from the regpar pool");
            }
        } else if (scratch.verbose >= 1) {
            /* Correct either way; only the reuse and registration are lost. */
            opal_output(0, "coll_bufpool: the regpar mpool component is not available; "
                           "scratch memory comes from malloc (check that mca_mpool_regpar.so "
                           "is in mca_base_component_path and not excluded with --mca mpool)");
        }
        opal_atomic_wmb();
        scratch.looked_up = true;
    }
    OPAL_THREAD_UNLOCK(&scratch.lock);
}

bool bufpool_scratch_from_pool(void)
{
    return NULL != scratch.mpool;
}

bool bufpool_scratch_count_outside(int64_t delta)
{
    bufpool_scratch_lookup();
    if (NULL == scratch.ext) {
        return false;
    }
    scratch.ext->count_outside(scratch.mpool, delta);
    return true;
}

void *bufpool_scratch_register(void *addr, size_t len)
{
    bufpool_scratch_lookup();
    return NULL == scratch.ext ? NULL : scratch.ext->register_outside(scratch.mpool, addr, len);
}

void bufpool_scratch_deregister(void *handle)
{
    if (NULL != handle && NULL != scratch.ext) {
        scratch.ext->deregister_outside(scratch.mpool, handle);
    }
}

/* ---------------------------------------------------------------------- */
/* Scratch kept by a persistent task between its starts: a buffer put back
 * stays with the task, a later get of at most its size takes it again.
 * task_scratch_get returns NULL when the task keeps nothing that fits (the
 * caller then takes a buffer from the pool, and its put will be kept);
 * task_scratch_put returns false when the task does not keep buf (the
 * caller then returns it to the pool). */

static void *task_scratch_get(bufpool_task_t *task, size_t bytes)
{
    if (!task->persistent) {
        return NULL;
    }
    for (int i = 0; i < BUFPOOL_TASK_SCRATCH_KEPT; i++) {
        if (NULL != task->kept[i].buf && !task->kept[i].used && task->kept[i].bytes >= bytes) {
            task->kept[i].used = true;
            return task->kept[i].buf;
        }
    }
    return NULL;
}

static bool task_scratch_put(bufpool_task_t *task, void *buf, size_t bytes)
{
    if (!task->persistent) {
        return false;
    }
    int empty = -1;
    for (int i = 0; i < BUFPOOL_TASK_SCRATCH_KEPT; i++) {
        if (buf == task->kept[i].buf) {
            task->kept[i].used = false;
            return true;
        }
        if (NULL == task->kept[i].buf && empty < 0) {
            empty = i;
        }
    }
    if (empty < 0) {
        return false;
    }
    /* A buffer from the pool, kept from now on (still counted in use). */
    task->kept[empty].buf = buf;
    task->kept[empty].bytes = bytes;
    task->kept[empty].used = false;
    return true;
}

void bufpool_scratch_drop_kept(bufpool_task_t *task)
{
    for (int i = 0; i < BUFPOOL_TASK_SCRATCH_KEPT; i++) {
        if (NULL != task->kept[i].buf) {
            task->kept[i].used = false;
            void *buf = task->kept[i].buf;
            task->kept[i].buf = NULL;
            bufpool_scratch_put(buf, task->kept[i].bytes);
        }
    }
}

/* ---------------------------------------------------------------------- */

static void count_in_use(size_t bytes)
{
    bufpool_scratch_counters_t *c = &bufpool_scratch_counters;
    uint64_t now = __atomic_add_fetch(&c->bytes_in_use, (uint64_t)bytes, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&c->bytes_peak, __ATOMIC_RELAXED);
    while (now > peak && !__atomic_compare_exchange_n(&c->bytes_peak, &peak, now, true,
                                                      __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

void *bufpool_scratch_get(size_t bytes)
{
    void *buf = NULL;

    /* A persistent collective's own buffer, kept since its last start. */
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task && NULL != (buf = task_scratch_get(task, bytes))) {
        return buf;
    }

    bufpool_scratch_lookup();
    (void)__atomic_fetch_add(&bufpool_scratch_counters.requests, 1, __ATOMIC_RELAXED);
    if (NULL != scratch.mpool) {
        buf = scratch.mpool->mpool_alloc(scratch.mpool, bytes, 0, 0);
    }
    if (NULL == buf) {
        /* No pool, or the pool is out of memory: malloc may still succeed
         * and the caller must not tell the difference. */
        (void)__atomic_fetch_add(&bufpool_scratch_counters.plain_allocs, 1, __ATOMIC_RELAXED);
        buf = malloc(bytes);
        if (NULL == buf) {
            return NULL;
        }
    }
    count_in_use(bytes);
    return buf;
}

void bufpool_scratch_put(void *buf, size_t bytes)
{
    if (NULL == buf) {
        return;
    }
    /* A persistent collective keeps it for its next start. */
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task && task_scratch_put(task, buf, bytes)) {
        return;
    }
    (void)__atomic_fetch_sub(&bufpool_scratch_counters.bytes_in_use, (uint64_t)bytes,
                             __ATOMIC_RELAXED);
    /* Until malloc has had to stand in for the pool, every scratch buffer is
     * the pool's: skip the lookup that tells them apart. */
    regpar_buffer_info_t info;
    if (NULL != scratch.mpool &&
        (0 == __atomic_load_n(&bufpool_scratch_counters.plain_allocs, __ATOMIC_RELAXED) ||
         0 == scratch.ext->buffer_info(scratch.mpool, buf, &info))) {
        scratch.mpool->mpool_free(scratch.mpool, buf);
    } else {
        free(buf);
    }
}
