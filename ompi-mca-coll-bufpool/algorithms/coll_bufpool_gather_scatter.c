/*
 * MPI_Gather and MPI_Scatter.
 *
 * linear: the root posts one receive (gather) or send (scatter) per rank
 *   at once, whole blocks with each side's own datatype.  No scratch.  On
 *   shared memory the root's copies are the whole cost and nothing beats
 *   doing them straight between the user buffers.
 *
 * binomial: a binomial tree over vranks (root 0).  The subtree of vrank v
 *   is [v, v + size), its blocks contiguous in vrank order, and its data
 *   flows as a stream of units toward (gather) or from (scatter) v's
 *   parent.  Open MPI's binomial tree mallocs the whole subtree's data on
 *   every relay (and the whole message on a root other than 0); here a
 *   relay streams it through pipeline_depth pooled slots of
 *   segment_size bytes, whatever the message size:
 *     gather   a relay assembles unit u in a slot (its own block packed
 *              from sbuf, its children's pieces received at their
 *              offsets) and sends it on; the slot takes unit u + depth
 *              once that send is done;
 *     scatter  a relay receives unit u into a slot, sends each child its
 *              piece from there and unpacks its own block; the slot takes
 *              unit u + depth once those sends are done.
 *   Units are cut on signature bytes by rules every rank derives from the
 *   block size alone, so any datatypes of matching signature work, and a
 *   relay only ever forwards packed bytes:
 *     block <= segment: whole blocks grouped segment / block at a time, at
 *              group boundaries fixed for the whole tree (and never across
 *              the vrank where ranks wrap past p - 1, so that a unit is
 *              contiguous in the root's buffer);
 *     block > segment: each block in segment-size pieces, except that the
 *              own block of a child of the root travels whole (its parent
 *              holds the user buffer, so nobody needs scratch for it).
 *   A unit contained in a child's subtree is exactly one unit of that
 *   child's stream, so relays forward without re-cutting.  Leaves and the
 *   root move data straight between user buffers and the wire when the
 *   layout allows, else through a slot.
 *
 * Requests in flight under coll_bufpool_max_requests (B > 0): a relay holds
 *   per unit in flight a receive per child with a part of it and a send
 *   (gather), or a receive and a send per such child (scatter), so it keeps
 *   at most max(1, B / (children + 1)) units in flight: within B, or one
 *   unit (children + 1 <= log2 p + 1 requests) when B is smaller than that.
 *   The root's bounced units (receive window, send ring) take at most half
 *   of B and its direct transfers (a bounded set) the rest.
 *
 * Order of blocking waits (binomial): every rank handles its units in
 * stream order.  A rank waits for (a) a child's piece of a unit the
 * child sends as soon as it has it, (b) its parent's unit, which the
 * parent forwards as soon as it has it, (c) the completion of its own
 * send of a unit depth positions back, which its parent (or child) has a
 * receive posted for once it is done with earlier units.  Every wait is
 * for a unit earlier in the global order than anything that waits on it,
 * and the root (scatter: the leaves) never waits on a send to a rank that
 * waits, so the earliest unfinished unit always progresses.  linear waits
 * only after everything is posted.
 */
#include "coll_bufpool_rooted.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* Linear. */

/* The root's side: userbuf holds every rank's block (count x dtype);
 * mine (mine_count x mine_dtype) is the root's own other buffer, NULL in
 * place. */
static int linear_root(const void *userbuf, int count, struct ompi_datatype_t *dtype,
                       const void *mine, int mine_count, struct ompi_datatype_t *mine_dtype,
                       bool gather, int tag, int root, const bufpool_plan_t *plan,
                       bufpool_comm_state_t *state, struct ompi_communicator_t *comm)
{
    const int p = ompi_comm_size(comm);
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    size_t type_size;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_type_size(dtype, &type_size);
    const ptrdiff_t stride = extent * (ptrdiff_t)count;
    const size_t bytes = type_size * (size_t)count;
    const size_t seg_bytes = plan->seg_bytes;
    /* The other ranks wait only for the root: waiting for its oldest
     * transfer is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, plan->max_requests);
    for (int k = 1; k < p && OMPI_SUCCESS == rc; k++) {
        int peer = (root + k) % p;
        char *at = (char *)userbuf + peer * stride;
        rc = gather
                 ? bufpool_reqs_recv(&reqs, at, (size_t)count, dtype, peer, tag)
                 : bufpool_reqs_send_small_now(&reqs, at, (size_t)count, dtype, bytes, peer, tag);
    }
    if (OMPI_SUCCESS == rc && NULL != mine) {
        char *own = (char *)userbuf + root * stride;
        rc = gather ? bufpool_local_copy(own, (size_t)count, dtype, mine, (size_t)mine_count,
                                         mine_dtype, seg_bytes)
                    : bufpool_local_copy((void *)mine, (size_t)mine_count, mine_dtype, own,
                                         (size_t)count, dtype, seg_bytes);
    }
    return bufpool_reqs_finish(&reqs, rc);
}

/* ---------------------------------------------------------------------- */

/* Gather and scatter mirror each other: the root's buffer of every block
 * ("all": gather's receive, scatter's send arguments) and each rank's own
 * block ("mine": the other side). */
typedef struct rooted_args {
    const void *all;
    int all_count;
    struct ompi_datatype_t *all_dtype;
    void *mine; /* MPI_IN_PLACE at the root: none */
    int mine_count;
    struct ompi_datatype_t *mine_dtype;
} rooted_args_t;

static rooted_args_t rooted_args(bool gather, const bufpool_args_t *a)
{
    return gather ? (rooted_args_t){a->rbuf,         a->rcount, a->rdtype,
                                    (void *)a->sbuf, a->scount, a->sdtype}
                  : (rooted_args_t){a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype};
}

bufpool_call_t bufpool_rooted_call(bool gather, const bufpool_args_t *a,
                                   struct ompi_communicator_t *comm)
{
    const rooted_args_t r = rooted_args(gather, a);
    /* Only the root's arguments for all are significant. */
    const bool is_root = ompi_comm_rank(comm) == a->root;
    return bufpool_block_call(is_root ? r.all_count : r.mine_count,
                              is_root ? r.all_dtype : r.mine_dtype, false, comm);
}

int bufpool_run_rooted(bool gather, const bufpool_args_t *args, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state)
{
    const rooted_args_t r = rooted_args(gather, args), *a = &r;
    const size_t bytes = call->bytes;
    const int root = args->root;
    const int tag = gather ? MCA_COLL_BASE_TAG_GATHER : MCA_COLL_BASE_TAG_SCATTER;
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const bool is_root = rank == root;
    const bool have_mine = !(is_root && MPI_IN_PLACE == a->mine);

    if ((gather ? BUFPOOL_GATHER_LINEAR : BUFPOOL_SCATTER_LINEAR) == plan->alg) {
        if (is_root) {
            return linear_root(a->all, a->all_count, a->all_dtype, have_mine ? a->mine : NULL,
                               a->mine_count, a->mine_dtype, gather, tag, root, plan, state, comm);
        }
        return gather ? bufpool_send(a->mine, a->mine_count, a->mine_dtype, root, tag, comm)
                      : bufpool_recv(a->mine, a->mine_count, a->mine_dtype, root, tag, comm);
    }
    bufpool_view_t mine;
    if (have_mine) {
        bufpool_view_init(&mine, a->mine, (size_t)a->mine_count, a->mine_dtype);
    }
    tree_t t;
    tree_init(&t, p, root, rank, bytes, plan);
    if (!is_root) {
        return gather ? bufpool_gather_up(&t, &mine, comm) : bufpool_scatter_down(&t, &mine, comm);
    }
    root_buf_t rb = {.per = (size_t)a->all_count};
    bufpool_view_init(&rb.all, a->all, (size_t)a->all_count * (size_t)p, a->all_dtype);
    return gather ? bufpool_gather_root(&t, have_mine ? &mine : NULL, &rb, state, comm)
                  : bufpool_scatter_root(&t, have_mine ? &mine : NULL, &rb, state, comm);
}
