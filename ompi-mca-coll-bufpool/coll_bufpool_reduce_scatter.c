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
 * Order of blocking waits: only the receives of the stream (all matching
 *   sends are posted before anyone waits), then the sends; the final move is
 *   local.
 *
 * "auto", measured on the project machine (2 cores, vader with CMA single
 *   copy, p = 4 oversubscribed; medians, bufpool / Open MPI's tuned): from
 *   4 KiB at p = 2 (0.16-0.70 for reduce_scatter, 0.15-0.70 for the block
 *   variant, whose tuned algorithm above 128 KiB is a reduce then a
 *   scatterv), from 32 KiB (reduce_scatter, 0.19-0.91) and 1 KiB
 *   (reduce_scatter_block, 0.2-0.92) at p >= 3.  Below, tuned's recursive
 *   halving and ring are as fast (0.8-1.2, noise): hand over.
 */
#include "coll_bufpool_pipeline.h"

#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* "auto" hands over the calls below these sizes (the whole vector, in
 * bytes), where the default module's recursive halving and ring are as fast
 * (see the file header). */
#define RS_TWO_RANKS_MIN_BYTES  ((size_t)4 << 10)
#define RS_MIN_BYTES            ((size_t)32 << 10)
#define RSB_TWO_RANKS_MIN_BYTES ((size_t)4 << 10)
#define RSB_MIN_BYTES           ((size_t)1 << 10)

/* Move len elements from element from of buf down to its start, through one
 * scratch segment at a time when the layout is not contiguous (ascending
 * segments never overwrite input not yet read, as the destination lies
 * below the source). */
static int move_to_start(char *buf, size_t from, size_t len, struct ompi_datatype_t *dtype)
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
    bufpool_segs_init(&segs, len, dtype, COMPONENT->segment_size);
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

static int reduce_scatter_pairwise(const void *sbuf, void *rbuf, const bufpool_blocks_t *blocks,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op, int tag,
                                   struct ompi_communicator_t *comm,
                                   mca_coll_bufpool_module_t *module)
{
    const int rank = ompi_comm_rank(comm);
    const bool in_place = MPI_IN_PLACE == sbuf;
    const size_t my_disp = in_place ? bufpool_blocks_disp(blocks, rank) : 0;
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bufpool_reqs_init(&reqs, module, comm);
    const bufpool_rs_stream_t stream = {
        .src = in_place ? rbuf : sbuf,
        .acc = (char *)rbuf + (ptrdiff_t)my_disp * extent,
        .acc_holds_mine = in_place,
        .blocks = blocks,
        .dtype = dtype,
        .op = op,
        .tag = tag,
        .seg_bytes = bufpool_rs_seg_bytes_for(ompi_comm_size(comm), in_place),
        .segment_done = NULL,
        .ctx = NULL,
    };
    int rc = bufpool_pairwise_reduce_scatter(&stream, &reqs, comm);
    /* Every send must be done before the caller's buffers (and, in place,
     * the input below my block) may change. */
    int wait_rc = bufpool_reqs_wait(&reqs);
    if (OMPI_SUCCESS == rc) {
        rc = wait_rc;
    }
    if (OMPI_SUCCESS == rc && in_place) {
        rc = move_to_start(rbuf, my_disp, bufpool_blocks_len(blocks, rank), dtype);
    }
    return rc;
}

/* Whether pairwise serves a call of total elements (every rank's input);
 * if not, the caller falls back. */
static bool pairwise_serves(bufpool_coll_id_t id, size_t total, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int size)
{
    size_t type_size;
    ompi_datatype_type_size(dtype, &type_size);
    const size_t bytes = type_size * total;
    if (bytes < COMPONENT->min_size || !ompi_op_is_commute(op)) {
        return false;
    }
    if (BUFPOOL_ALG_AUTO == bufpool_forced_algorithm(id)) {
        const bool block = BUFPOOL_COLL_reduce_scatter_block == id;
        const size_t min = 2 == size ? (block ? RSB_TWO_RANKS_MIN_BYTES : RS_TWO_RANKS_MIN_BYTES)
                                     : (block ? RSB_MIN_BYTES : RS_MIN_BYTES);
        return bytes >= min;
    }
    return true;
}

int mca_coll_bufpool_reduce_scatter(const void *sbuf, void *rbuf, bufpool_counts_t rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    const int size = ompi_comm_size(comm);
    /* The engines take int counts; Open MPI 6's size_t ones go below us. */
    const int *counts = BUFPOOL_COUNTS_INT_PTR(rcounts);
    size_t total = 0;

    if (NULL == counts) {
        return BUFPOOL_FALLBACK(module, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    }
    for (int b = 0; b < size; b++) {
        total += (size_t)counts[b];
    }
    /* Some blocks may be empty; only an empty message is nothing to do. */
    if (0 == total) {
        return OMPI_SUCCESS;
    }
    if (!pairwise_serves(BUFPOOL_COLL_reduce_scatter, total, dtype, op, size)) {
        return BUFPOOL_FALLBACK(module, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
    }
    bufpool_count_call(BUFPOOL_COLL_reduce_scatter);
    const bufpool_blocks_t blocks = {.n = size, .counts = counts, .total = total};
    return reduce_scatter_pairwise(sbuf, rbuf, &blocks, dtype, op, MCA_COLL_BASE_TAG_REDUCE_SCATTER,
                                   comm, module);
}

int mca_coll_bufpool_reduce_scatter_block(const void *sbuf, void *rbuf, bufpool_count_t rcount,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    BUFPOOL_FALLBACK_UNLESS_FITS(module, reduce_scatter_block, rcount, sbuf, rbuf, rcount, dtype,
                                 op, comm);
    const int size = ompi_comm_size(comm);

    if (rcount <= 0) {
        return OMPI_SUCCESS;
    }
    const size_t total = (size_t)rcount * (size_t)size;
    if (!pairwise_serves(BUFPOOL_COLL_reduce_scatter_block, total, dtype, op, size)) {
        return BUFPOOL_FALLBACK(module, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
    }
    bufpool_count_call(BUFPOOL_COLL_reduce_scatter_block);
    const bufpool_blocks_t blocks = {.n = size, .counts = NULL, .total = total};
    return reduce_scatter_pairwise(sbuf, rbuf, &blocks, dtype, op,
                                   MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK, comm, module);
}
