/*
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block.
 *
 * pairwise: the pipelined pairwise reduce-scatter stream that allreduce's
 *   rsag also runs (bufpool_pairwise_reduce_scatter): every rank posts the
 *   sends of its contribution to every other block up front, straight from
 *   its input, and reduces its own block segment by segment through
 *   pipeline_depth scratch slots as the p - 1 contributions arrive.  Each
 *   rank receives (p-1)/p of the message, the minimum, and the reduction of
 *   one segment overlaps the transfer of the next.  Blocks of any length,
 *   zero included; commutative operations only (a block is combined in the
 *   order its contributions arrive), others go to the previous module.
 *
 *   Not in place, my block is reduced straight into rbuf.  In place, the
 *   input is rbuf and the result belongs at its start, where other ranks'
 *   blocks are still being sent from: the block is reduced where it lies and
 *   moved down once every send has completed.
 *
 * ring: bufpool_ring_reduce_scatter (see coll_bufpool_rs_stream.h).
 *
 * rhalving: recursive halving in rounds of at most half the scratch bound
 *   (bufpool_rhalving_reduce_scatter), forced only: commutative operations,
 *   any block lengths, any p (the extra ranks fold into their neighbours).
 *
 * Order of blocking waits: only the receives of the stream (all matching
 *   sends are posted before anyone waits), then the sends; the final move is
 *   local.  rhalving: each exchange waits for its own two-sided set, which
 *   both partners post in the same order.
 *
 * "auto" (thresholds in coll_bufpool_decide.c), measured on the project machine (2 cores, vader with CMA single
 *   copy, p = 4 oversubscribed; medians, bufpool / Open MPI's tuned): from
 *   4 KiB at p = 2 (0.16-0.70 for reduce_scatter, 0.15-0.70 for the block
 *   variant, whose tuned algorithm above 128 KiB is a reduce then a
 *   scatterv), from 32 KiB (reduce_scatter, 0.19-0.91) and 1 KiB
 *   (reduce_scatter_block, 0.2-0.92) at p >= 3.  Below, tuned's recursive
 *   halving and ring are as fast (0.8-1.2, noise): hand over.
 */
#include "coll_bufpool_rs_stream.h"
#include "coll_bufpool_run.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* MPI_Reduce_scatter(_block). */

/* Move len elements from element from of buf down to its start, through one
 * scratch segment at a time when the layout is not contiguous (ascending
 * segments never overwrite input not yet read, as the destination lies
 * below the source). */
static int move_to_start(char *buf, size_t from, size_t len, struct ompi_datatype_t *dtype,
                         size_t seg_bytes)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    if (0 == from || 0 == len) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (from + len <= (size_t)INT32_MAX &&
        ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t)(from + len))) {
        size_t type_size;
        ompi_datatype_type_size(dtype, &type_size);
        memmove(buf + true_lb, buf + (ptrdiff_t)from * extent + true_lb, len * type_size);
        return OMPI_SUCCESS;
    }
    bufpool_segs_t segs;
    bufpool_slots_t slot;
    bufpool_segs_init(&segs, len, dtype, seg_bytes);
    int rc = bufpool_slots_get(&slot, 1, segs.seg_span, segs.gap);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    char *tmp = bufpool_slot(&slot, 0);
    for (size_t j = 0; OMPI_SUCCESS == rc && j < segs.nseg; j++) {
        size_t n = bufpool_segs_count(&segs, j);
        ptrdiff_t off = bufpool_segs_offset(&segs, j);
        rc = bufpool_copy(tmp, buf + (ptrdiff_t)from * extent + off, n, dtype);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_copy(buf + off, tmp, n, dtype);
        }
    }
    bufpool_slots_put(&slot);
    return rc;
}

static int reduce_scatter_run(const void *sbuf, void *rbuf, const bufpool_blocks_t *blocks,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op, int tag,
                              const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                              bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm);
    const bool in_place = MPI_IN_PLACE == sbuf;
    const size_t my_disp = in_place ? bufpool_blocks_disp(blocks, rank) : 0;
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bufpool_reqs_init(&reqs, state, comm);
    const bufpool_rs_stream_t stream = {
        .src = in_place ? rbuf : sbuf,
        .acc = (char *)rbuf + (ptrdiff_t)my_disp * extent,
        .acc_holds_mine = in_place,
        .blocks = blocks,
        .dtype = dtype,
        .op = op,
        .tag = tag,
        .seg_bytes = plan->seg_bytes,
        .depth = plan->depth,
        .segment_done = NULL,
        .ctx = NULL,
        .max_requests = plan->max_requests,
        .state = state,
    };
    /* ring and rhalving are algorithms 2 and 3 of both reduce_scatter and
     * reduce_scatter_block.  rhalving writes its result at the start of
     * rbuf itself, in place too. */
    if (BUFPOOL_REDUCE_SCATTER_RHALVING == plan->alg) {
        return bufpool_rhalving_reduce_scatter(&stream, rbuf, comm);
    }
    int rc = BUFPOOL_REDUCE_SCATTER_RING == plan->alg
                 ? bufpool_ring_reduce_scatter(&stream, comm)
                 : bufpool_pairwise_reduce_scatter(&stream, &reqs, comm);
    /* Every send must be done before the caller's buffers (and, in place,
     * the input below my block) may change. */
    int wait_rc = bufpool_reqs_wait(&reqs);
    if (OMPI_SUCCESS == rc) {
        rc = wait_rc;
    }
    if (OMPI_SUCCESS == rc && in_place) {
        rc = move_to_start(rbuf, my_disp, bufpool_blocks_len(blocks, rank), dtype, plan->seg_bytes);
    }
    return rc;
}

/* MPI_Reduce_scatter's blocks (a->rcounts) or MPI_Reduce_scatter_block's
 * (a->count each). */
static bufpool_blocks_t rs_blocks(bufpool_coll_id_t id, const bufpool_args_t *a,
                                  struct ompi_communicator_t *comm)
{
    const int size = ompi_comm_size(comm);
    if (BUFPOOL_COLL_reduce_scatter_block == id) {
        return (bufpool_blocks_t){.n = size, .counts = NULL, .total = a->count * (size_t)size};
    }
    return (bufpool_blocks_t){
        .n = size, .counts = a->rcounts, .total = bufpool_counts_total(a->rcounts, size)};
}

bufpool_call_t bufpool_reduce_scatter_call(bufpool_coll_id_t id, const bufpool_args_t *a,
                                           struct ompi_communicator_t *comm)
{
    /* Some blocks may be empty; only an empty message is nothing to do.
     * The counts as the caller gave them: the decision comes before they
     * are copied as ints (bufpool_args_own_counts, only for a call bufpool
     * serves), and Open MPI 6's MPI_Ireduce_scatter_c and
     * MPI_Reduce_scatter_init_c give size_t counts (a->rcounts NULL). */
    const size_t total = BUFPOOL_COLL_reduce_scatter_block == id
                             ? a->count * (size_t)ompi_comm_size(comm)
                             : bufpool_counts_total_any(a->rcounts_any, ompi_comm_size(comm));
    return bufpool_reduction_call(total, a->dtype, a->op, MPI_IN_PLACE == a->sbuf, comm);
}

int bufpool_run_reduce_scatter(bufpool_coll_id_t id, const bufpool_args_t *a,
                               const bufpool_call_t *call, const bufpool_plan_t *plan,
                               struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    (void)call;
    const bufpool_blocks_t blocks = rs_blocks(id, a, comm);
    return reduce_scatter_run(a->sbuf, a->rbuf, &blocks, a->dtype, a->op,
                              BUFPOOL_COLL_reduce_scatter_block == id
                                  ? MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK
                                  : MCA_COLL_BASE_TAG_REDUCE_SCATTER,
                              plan, comm, state);
}
