/*
 * The pipelining toolkit shared by every bufpool collective.
 */
#include "coll_bufpool_pipeline.h"
#include "runtime/coll_bufpool_task.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/pml.h"
#include "opal/util/output.h"

uint64_t bufpool_requests_peak;

size_t bufpool_span(struct ompi_datatype_t *dtype, size_t n, ptrdiff_t *gap)
{
    return (size_t)opal_datatype_span(&dtype->super, n, gap);
}

void bufpool_segs_init(bufpool_segs_t *segs, size_t count, struct ompi_datatype_t *dtype,
                       size_t seg_bytes)
{
    ptrdiff_t lb, extent, true_lb, true_extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    bufpool_segs_cut(segs, count, dtype->super.size, extent, true_lb, true_extent, seg_bytes);
}

int bufpool_slots_get(bufpool_slots_t *slots, int n, size_t slot_span, ptrdiff_t gap)
{
    slots->n = n;
    slots->slot_span = slot_span;
    slots->gap = gap;
    slots->mem_bytes = (size_t)n * slot_span;
    slots->mem = NULL;
    if (0 == slots->mem_bytes) {
        return OMPI_SUCCESS;
    }
    slots->mem = bufpool_scratch_get(slots->mem_bytes);
    return NULL == slots->mem ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

void bufpool_slots_put(bufpool_slots_t *slots)
{
    if (NULL != slots->mem) {
        bufpool_scratch_put(slots->mem, slots->mem_bytes);
        slots->mem = NULL;
    }
}

/* ---------------------------------------------------------------------- */

/* A set in the communicator's arrays (blocking collectives, one at a time per
 * communicator) or, in a task, the task's own (tasks overlap). */
static void reqs_init(bufpool_reqs_t *reqs, bufpool_comm_state_t *state,
                      struct ompi_communicator_t *comm, bool aux)
{
    bufpool_task_t *task = bufpool_task_current();
    if (NULL != task) {
        bufpool_task_req_arrays(task, aux, &reqs->cache, &reqs->cache_cap);
    } else if (aux) {
        reqs->cache = &state->aux_req_cache;
        reqs->cache_cap = &state->aux_req_cache_cap;
    } else {
        reqs->cache = &state->req_cache;
        reqs->cache_cap = &state->req_cache_cap;
    }
    reqs->n = 0;
    reqs->max = 0;
    reqs->comm = comm;
}

void bufpool_reqs_init(bufpool_reqs_t *reqs, bufpool_comm_state_t *state,
                       struct ompi_communicator_t *comm)
{
    reqs_init(reqs, state, comm, false);
}

void bufpool_reqs_init_aux(bufpool_reqs_t *reqs, bufpool_comm_state_t *state,
                           struct ompi_communicator_t *comm)
{
    reqs_init(reqs, state, comm, true);
}

/* Room for one more request: the next free entry, growing the set's
 * array when needed (only the first calls of a communicator grow it), or,
 * bounded and full, the entry of the oldest request once it is complete. */
static ompi_request_t **reqs_next(bufpool_reqs_t *reqs, int *rc)
{
    size_t at = reqs->n;
    *rc = OMPI_SUCCESS;
    if (0 != reqs->max && reqs->n >= reqs->max) {
        at = reqs->n % reqs->max;
        *rc = bufpool_wait(&(*reqs->cache)[at]);
        return OMPI_SUCCESS == *rc ? &(*reqs->cache)[at] : NULL;
    }
    if (at == *reqs->cache_cap) {
        size_t cap = 0 == *reqs->cache_cap ? 64 : 2 * *reqs->cache_cap;
        ompi_request_t **grown = realloc(*reqs->cache, cap * sizeof(**reqs->cache));
        if (NULL == grown) {
            *rc = OMPI_ERR_OUT_OF_RESOURCE;
            return NULL;
        }
        *reqs->cache = grown;
        *reqs->cache_cap = cap;
    }
    return &(*reqs->cache)[at];
}

/* One more request posted in reqs: the high-water mark behind
 * coll_bufpool_requests_peak (a relaxed load first, so that the common
 * case is a read). */
static void reqs_count_posted(bufpool_reqs_t *reqs)
{
    reqs->n++;
    const uint64_t live = 0 != reqs->max && reqs->n > reqs->max ? reqs->max : reqs->n;
    uint64_t peak = __atomic_load_n(&bufpool_requests_peak, __ATOMIC_RELAXED);
    while (live > peak && !__atomic_compare_exchange_n(&bufpool_requests_peak, &peak, live, true,
                                                       __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
    }
}

int bufpool_reqs_send(bufpool_reqs_t *reqs, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int peer, int tag)
{
    int rc;
    ompi_request_t **req = reqs_next(reqs, &rc);
    if (NULL == req) {
        return rc;
    }
    rc = bufpool_isend(buf, count, dtype, peer, tag, reqs->comm, req);
    if (OMPI_SUCCESS == rc) {
        reqs_count_posted(reqs);
    }
    return rc;
}

int bufpool_reqs_recv(bufpool_reqs_t *reqs, void *buf, size_t count, struct ompi_datatype_t *dtype,
                      int peer, int tag)
{
    int rc;
    ompi_request_t **req = reqs_next(reqs, &rc);
    if (NULL == req) {
        return rc;
    }
    rc = bufpool_irecv(buf, count, dtype, peer, tag, reqs->comm, req);
    if (OMPI_SUCCESS == rc) {
        reqs_count_posted(reqs);
    }
    return rc;
}

int bufpool_reqs_wait(bufpool_reqs_t *reqs)
{
    int rc = OMPI_SUCCESS;
    if (reqs->n > 0) {
        /* Bounded, the entries hold the last max requests (older ones are
         * complete, and the ones waited for are MPI_REQUEST_NULL). */
        size_t live = 0 != reqs->max && reqs->n > reqs->max ? reqs->max : reqs->n;
        rc = bufpool_wait_all(live, *reqs->cache);
        reqs->n = 0;
    }
    return rc;
}

int bufpool_reqs_send_segs(bufpool_reqs_t *reqs, const void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag)
{
    for (size_t j = 0; j < segs->nseg; j++) {
        int rc = bufpool_reqs_send(reqs, (const char *)buf + bufpool_segs_offset(segs, j),
                                   bufpool_segs_count(segs, j), dtype, peer, tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int bufpool_reqs_recv_segs(bufpool_reqs_t *reqs, void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag)
{
    for (size_t j = 0; j < segs->nseg; j++) {
        int rc = bufpool_reqs_recv(reqs, (char *)buf + bufpool_segs_offset(segs, j),
                                   bufpool_segs_count(segs, j), dtype, peer, tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */

static int rwin_post(bufpool_rwin_t *w, size_t unit)
{
    bufpool_recv_unit_t u;
    size_t slot = unit % w->depth;

    w->describe(w->ctx, unit, &u);
    w->buf[slot] = NULL != u.buf ? u.buf : bufpool_slot(w->slots, (int)slot);
    int rc = bufpool_irecv(w->buf[slot], u.count, u.dtype, u.peer, w->tag, w->comm, &w->req[slot]);
    if (OMPI_SUCCESS == rc) {
        w->posted = unit + 1;
    }
    return rc;
}

void bufpool_peer_segs_describe(void *ctx, size_t unit, bufpool_recv_unit_t *out)
{
    const bufpool_peer_segs_t *s = ctx;
    out->peer = s->peer;
    out->count = bufpool_segs_count(s->segs, unit);
    out->dtype = s->dtype;
    out->buf = NULL != s->direct ? s->direct + bufpool_segs_offset(s->segs, unit) : NULL;
}

int bufpool_rwin_start(bufpool_rwin_t *w, struct ompi_communicator_t *comm, int tag,
                       const bufpool_slots_t *slots, size_t depth, size_t nunits,
                       bufpool_describe_fn describe, void *ctx)
{
    w->comm = comm;
    w->tag = tag;
    w->slots = slots;
    w->nunits = nunits;
    w->depth = depth < 1 ? 1 : (depth > BUFPOOL_MAX_DEPTH ? BUFPOOL_MAX_DEPTH : depth);
    w->posted = 0;
    w->describe = describe;
    w->ctx = ctx;
    for (size_t i = 0; i < w->depth; i++) {
        w->req[i] = MPI_REQUEST_NULL;
    }
    for (size_t unit = 0; unit < nunits && unit < w->depth; unit++) {
        int rc = rwin_post(w, unit);
        if (OMPI_SUCCESS != rc) {
            bufpool_rwin_abort(w);
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int bufpool_rwin_wait(bufpool_rwin_t *w, size_t unit, void **buf)
{
    size_t slot = unit % w->depth;
    int rc = bufpool_wait(&w->req[slot]);
    *buf = w->buf[slot];
    return rc;
}

int bufpool_rwin_release(bufpool_rwin_t *w, size_t unit)
{
    size_t next = unit + w->depth;
    if (next < w->nunits) {
        return rwin_post(w, next);
    }
    return OMPI_SUCCESS;
}

void bufpool_rwin_abort(bufpool_rwin_t *w)
{
    for (size_t i = 0; i < w->depth; i++) {
        bufpool_cancel_wait(&w->req[i]);
    }
}

/* ---------------------------------------------------------------------- */

void bufpool_reduce3(struct ompi_op_t *op, const void *left, const void *right, void *out,
                     size_t count, struct ompi_datatype_t *dtype)
{
    /* ompi_3buff_op_reduce only handles C callbacks for user operations and
     * predefined datatypes: use it for intrinsic operations only. */
    if (ompi_op_is_intrinsic(op) && ompi_datatype_is_predefined(dtype) && count <= INT32_MAX) {
        ompi_3buff_op_reduce(op, (void *)left, (void *)right, out, (int)count, dtype);
        return;
    }
    (void)bufpool_copy(out, right, count, dtype);
    bufpool_reduce(op, left, out, count, dtype);
}

int bufpool_copy(void *dst, const void *src, size_t count, struct ompi_datatype_t *dtype)
{
    if (dst == src || 0 == count) {
        return OMPI_SUCCESS;
    }
    return ompi_datatype_copy_content_same_ddt(dtype, count, dst, (char *)src);
}

/* ---------------------------------------------------------------------- */

bufpool_slots_t bufpool_slots_view(const bufpool_slots_t *all, int first, int n)
{
    bufpool_slots_t view = *all;
    view.mem = NULL == all->mem ? NULL : all->mem + (size_t)first * all->slot_span;
    view.mem_bytes = 0;
    view.n = n;
    return view;
}

int bufpool_slots_get_split(bufpool_slots_t *all, int nwin, int nring, size_t slot_span,
                            ptrdiff_t gap, bufpool_slots_t *win, bufpool_slots_t *ring)
{
    int rc = bufpool_slots_get(all, nwin + nring, slot_span, gap);
    if (OMPI_SUCCESS == rc) {
        *win = bufpool_slots_view(all, 0, nwin);
        *ring = bufpool_slots_view(all, nwin, nring);
    }
    return rc;
}

/* ---------------------------------------------------------------------- */

void bufpool_sring_init(bufpool_sring_t *ring, const bufpool_slots_t *slots)
{
    ring->slots = *slots;
    ring->slots.mem_bytes = 0;
    if (ring->slots.n > BUFPOOL_MAX_DEPTH) {
        ring->slots.n = BUFPOOL_MAX_DEPTH;
    }
    ring->next = 0;
    for (int i = 0; i < BUFPOOL_MAX_DEPTH; i++) {
        ring->req[i] = MPI_REQUEST_NULL;
    }
}

int bufpool_sring_acquire(bufpool_sring_t *ring, void **buf)
{
    int slot = (int)(ring->next % (size_t)ring->slots.n);
    int rc = OMPI_SUCCESS;
    if (MPI_REQUEST_NULL != ring->req[slot]) {
        rc = bufpool_wait(&ring->req[slot]);
    }
    *buf = bufpool_slot(&ring->slots, slot);
    ring->next++;
    return rc;
}

int bufpool_sring_send(bufpool_sring_t *ring, size_t count, struct ompi_datatype_t *dtype, int peer,
                       int tag, struct ompi_communicator_t *comm)
{
    int slot = (int)((ring->next - 1) % (size_t)ring->slots.n);
    return bufpool_isend(bufpool_slot(&ring->slots, slot), count, dtype, peer, tag, comm,
                         &ring->req[slot]);
}

int bufpool_sring_drain(bufpool_sring_t *ring)
{
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < ring->slots.n; i++) {
        if (MPI_REQUEST_NULL != ring->req[i]) {
            int wait_rc = bufpool_wait(&ring->req[i]);
            if (OMPI_SUCCESS == rc) {
                rc = wait_rc;
            }
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------- */

int bufpool_reqs_send_small_now(bufpool_reqs_t *reqs, const void *buf, size_t count,
                                struct ompi_datatype_t *dtype, size_t bytes, int peer, int tag)
{
    if (bytes <= BUFPOOL_INLINE_SEND_MAX) {
        return bufpool_send(buf, count, dtype, peer, tag, reqs->comm);
    }
    return bufpool_reqs_send(reqs, buf, count, dtype, peer, tag);
}
