/*
 * MPI_Allreduce.
 *
 * recursive_doubling: log2(p) exchanges of the whole message, for small
 *   messages (latency-bound).  Scratch = one message (only chosen below
 *   small_size, so within the bound).  Combines in rank order, so it also
 *   serves non-commutative operations.  Its core
 *   (bufpool_allreduce_rd_group) runs over any group of ranks: hier's
 *   leaders use it for one segment at a time.
 *
 * hier (coll_bufpool_hier.c): node-local reduce, leaders' allreduce, node-
 *   local bcast, segment by segment, on communicators across hosts.
 *
 * rsag: pipelined pairwise reduce-scatter (bufpool_pairwise_reduce_scatter,
 *   shared with reduce_scatter) then allgather, for everything else.  Rank
 *   r owns block r of the result.  Every rank posts, up front,
 *   the sends of its contribution to every other block (read from sbuf, so
 *   no scratch), and streams the contributions to its own block through
 *   pipeline_depth scratch slots, reducing segment j of one source while
 *   later segments are still arriving.  As soon as segment j of its block is
 *   complete it is sent to every other rank, so the allgather overlaps the
 *   reduce-scatter.  Scratch = depth segments, whatever the message size;
 *   each rank moves 2 (p-1)/p of the message, the minimum.  The result is
 *   bitwise identical on every rank because each block is reduced once, by
 *   its owner, in a fixed order.
 *
 * Order of blocking waits: a rank blocks only on receives of the
 *   reduce-scatter, whose sends were all posted before anyone waits, and at
 *   the end on the allgather, whose sends depend only on those receives.
 */
#include "coll_bufpool_hier.h"
#include "coll_bufpool_rs_stream.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

/* Largest scratch recursive doubling keeps on the stack. */
#define RD_STACK_SCRATCH 1024

static int allreduce_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                        struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                        struct ompi_communicator_t *comm)
{
    ptrdiff_t gap;
    size_t span = bufpool_span(dtype, count, &gap);
    int rc;

    if (MPI_IN_PLACE != sbuf) {
        rc = bufpool_copy(rbuf, sbuf, count, dtype);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    /* A tiny message's scratch lives on the stack: even the pool's hit
     * path (about 50 ns) is a measurable share of a sub-microsecond call. */
    _Alignas(64) char on_stack[RD_STACK_SCRATCH];
    char *mem = span <= sizeof(on_stack) ? on_stack : bufpool_scratch_get(span);
    if (NULL == mem) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    const bufpool_group_t all = {.n = ompi_comm_size(comm), .me = ompi_comm_rank(comm)};
    char *buf = rbuf, *tmp = mem - gap;
    const bufpool_rd_parts_t whole = {.n = 1, .buf = &buf, .tmp = &tmp, .count = &count};
    rc = bufpool_allreduce_rd_group(&whole, dtype, op, &all, MCA_COLL_BASE_TAG_ALLREDUCE, comm);
    if (mem != on_stack) {
        bufpool_scratch_put(mem, span);
    }
    return rc;
}

/* ---------------------------------------------------------------------- */

typedef struct rsag_ctx {
    bufpool_reqs_t *reqs;
    int rank, size;
    struct ompi_datatype_t *dtype;
} rsag_ctx_t;

/* Segment j of my block is final: start its allgather now. */
static int rsag_segment_done(void *arg, size_t j, void *seg, size_t count)
{
    rsag_ctx_t *c = arg;
    (void)j;
    for (int k = 1; k < c->size; k++) {
        int rc = bufpool_reqs_send(c->reqs, seg, count, c->dtype, (c->rank + k) % c->size,
                                   MCA_COLL_BASE_TAG_ALLGATHER);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

static int allreduce_rsag(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                          struct ompi_op_t *op, const bufpool_plan_t *plan,
                          struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const bool in_place = MPI_IN_PLACE == sbuf;
    const bufpool_blocks_t blocks = {.n = size, .counts = NULL, .total = count};
    bufpool_reqs_t reqs;
    ptrdiff_t lb, extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bufpool_reqs_init(&reqs, state, comm);
    rsag_ctx_t ctx = {.reqs = &reqs, .rank = rank, .size = size, .dtype = dtype};

    bufpool_rs_stream_t stream = {
        .src = in_place ? rbuf : sbuf,
        .acc = (char *)rbuf + (ptrdiff_t)bufpool_blocks_disp(&blocks, rank) * extent,
        .acc_holds_mine = in_place,
        .blocks = &blocks,
        .dtype = dtype,
        .op = op,
        .tag = MCA_COLL_BASE_TAG_ALLREDUCE,
        .seg_bytes = plan->seg_bytes,
        .depth = plan->depth,
        .segment_done = rsag_segment_done,
        .ctx = &ctx,
        .max_requests = plan->max_requests,
        .state = state,
    };
    if (BUFPOOL_ALLREDUCE_RSAG == plan->alg && plan->max_requests > 0) {
        /* The stream's own sends get what the allgather half leaves of the
         * bound (the decision keeps rsag only while something is left). */
        const bufpool_call_t call = {
            .comm_size = size, .count = count, .bytes = dtype->super.size * count};
        size_t main_set = bufpool_rsag_requests(&call, plan->seg_bytes);
        stream.max_requests =
            main_set < (size_t)plan->max_requests ? plan->max_requests - (int)main_set : 1;
    }
    if (BUFPOOL_ALLREDUCE_RING == plan->alg) {
        /* Ring reduce-scatter into my block of rbuf, then a ring allgather
         * of the blocks: every step with the two neighbours only. */
        int rc = bufpool_ring_reduce_scatter(&stream, comm);
        return OMPI_SUCCESS == rc
                   ? bufpool_ring_allgather_blocks(&stream, rbuf, MCA_COLL_BASE_TAG_ALLGATHER, comm)
                   : rc;
    }
    /* Allgather receives straight into rbuf, posted before any wait. */
    int rc = bufpool_rs_recv_blocks(&stream, rbuf, rank, MCA_COLL_BASE_TAG_ALLGATHER, &reqs);
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_pairwise_reduce_scatter(&stream, &reqs, comm);
    }
    /* Complete everything posted, even on error, before the scratch and the
     * user's buffers go away. */
    return bufpool_reqs_finish(&reqs, rc);
}

/* ---------------------------------------------------------------------- */

int bufpool_run_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                          struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                          bufpool_node_home_t *host_home)
{
    if (BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING == plan->alg) {
        return allreduce_recursive_doubling(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm);
    }
    if (BUFPOOL_ALLREDUCE_HIER == plan->alg || BUFPOOL_ALLREDUCE_HIER_NODE == plan->alg) {
        return bufpool_allreduce_hier(a->sbuf, a->rbuf, a->count, a->dtype, a->op, plan, comm,
                                      state, host_home);
    }
    /* rsag and ring share the reduce-scatter stream's description. */
    return allreduce_rsag(a->sbuf, a->rbuf, a->count, a->dtype, a->op, plan, comm, state);
}
