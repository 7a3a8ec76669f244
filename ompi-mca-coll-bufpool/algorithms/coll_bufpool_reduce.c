/*
 * MPI_Reduce.
 *
 * chain and binary run one pipelined tree engine (reduce_tree_run).  Every
 * rank knows its parent and at most two children:
 *   - a leaf posts the sends of all its segments up front, straight from its
 *     input (no scratch);
 *   - an inner rank receives segment j of each child through a receive
 *     window of scratch slots, folds its own segment j into the slot of
 *     child 0 (slot = mine op slot: child 0's partial is the one that comes
 *     right after mine in the order of combination), folds child 1 in, and
 *     sends the slot on to its parent.  The slot goes back to the window
 *     (which posts the receive of segment j + depth into it) once that send
 *     has completed, one segment later, so the reduction of segment j
 *     overlaps the transfer of j - 1 upwards and of j + 1 from below;
 *   - the top of the tree reduces into rbuf, where child 0's segments are
 *     received directly when its own input is elsewhere.
 * Scratch per rank: pipeline_depth segments (shared by its windows).
 *
 * chain: a chain in descending rank order, rank p-1 -> p-2 -> ... -> 0.
 *   Each rank prepends its contribution to the partial of the ranks above
 *   it, x_r op (x_{r+1} op ... op x_{p-1}), in place in the received slot,
 *   so any operation, commutative or not, is combined in rank order.  Rank
 *   0 then holds the result and passes it on when the root is another rank
 *   (one more hop).  For commutative operations the chain is rotated to end
 *   at the root instead.  Each rank receives and reduces the message once:
 *   the throughput-optimal choice for large messages and small p; latency
 *   grows with p.
 *
 * binary: a binary tree on virtual ranks v = (rank - root) mod p (children
 *   2v+1 and 2v+2), depth log2(p); inner ranks receive twice the message.
 *   Commutative operations only.
 *
 * rsg: the pairwise reduce-scatter stream of allreduce and reduce_scatter
 *   (bufpool_pairwise_reduce_scatter), each finished segment of block r
 *   sent to the root, which receives them straight into rbuf.  The
 *   reduction is spread over every rank and each rank receives about the
 *   message once, the root twice (p-1)/p of it.  Commutative only.
 *
 * Requests in flight under coll_bufpool_max_requests (plan.max_requests =
 *   B > 0): a leaf's sends are a bounded set of B (its parent receives them
 *   in segment order without waiting on the leaf); an inner rank's windows
 *   keep at most B/2 slots in all (at least one per child) and the sends up
 *   one per slot of child 0's window; the top's direct window at most B/2.
 *   The root's receives of the result (non-commutative chain, root != 0)
 *   are not posted up front but one per segment, segment j once the root's
 *   own part of segment j is done (a leaf root: right after sending it), in
 *   a bounded set: the oldest of them is a segment whose every
 *   contribution, the root's included, is already on its way.  rsg: the
 *   stream's sends and the root's receives of the finished blocks share
 *   the bound (see reduce_rsg).
 *
 * Order of blocking waits: a rank waits for segment j of its children, then
 *   for its send of segment j - 1 to its parent.  Leaves never wait before
 *   the end; the top of the tree only waits for its children; the parent
 *   posts the receive of segment j - 1 once its own send of j - 1 - depth
 *   has completed.  So every wait depends on a lower segment or on a rank
 *   nearer the top: no cycle.  The root's receives of the result (from rank
 *   0 in the non-commutative chain; from every rank in rsg) are all posted
 *   up front and waited for last.
 *
 * "auto" (thresholds in coll_bufpool_decide.c), measured on the project machine (2 cores, vader with CMA single
 *   copy, p = 4 oversubscribed; medians, bufpool / Open MPI's tuned):
 *   - p = 2: whatever the algorithm, the root has to pull the other rank's
 *     whole message through CMA (splitting the reduction, rsg, only changes
 *     which rank pulls it: the root still receives N), and that copy, not the
 *     reduction, is the cost; tuned's single message already does exactly
 *     that (chain 1.01-1.14, rsg 1.03-1.16): hand over.
 *   - below 4 KiB tuned's unsegmented trees win on latency: hand over;
 *   - 4 KiB .. 256 KiB: binary (0.47-0.99);
 *   - 256 KiB .. 512 KiB: every algorithm is at parity with tuned's linear
 *     (0.94-1.3, noisy): hand over;
 *   - from 512 KiB: rsg (0.34-0.71; chain 0.44-0.89);
 *   - non-commutative operations: chain from 1 MiB (0.49-0.85), hand over
 *     below (1.1-1.8: the chain has p - 1 hops, tuned's linear one).
 */
#include "coll_bufpool_rs_stream.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

typedef struct reduce_tree {
    int parent;       /* where my partial goes; -1: I am the top, the root */
    int nchildren;    /* 0, 1 or 2 */
    int child[2];     /* child[0]'s partial comes right after mine */
    int result_from;  /* at the root, when it is not the top: the top */
    int max_children; /* of any rank of the tree: slots per window */
} reduce_tree_t;

static void chain_tree(int rank, int size, int root, bool commute, reduce_tree_t *t)
{
    /* Descending order keeps non-commutative operations in rank order with
     * the partial in place; commutative ones may start anywhere. */
    const int shift = commute ? root : 0;
    const int v = (rank - shift + size) % size;
    t->nchildren = v + 1 < size ? 1 : 0;
    t->child[0] = (v + 1 + shift) % size;
    t->parent = v > 0 ? (v - 1 + shift) % size : (rank == root ? -1 : root);
    t->result_from = (!commute && rank == root && 0 != root) ? 0 : -1;
    t->max_children = 1;
}

static void binary_tree(int rank, int size, int root, reduce_tree_t *t)
{
    const int v = (rank - root + size) % size;
    t->nchildren = 0;
    for (int c = 2 * v + 1; c <= 2 * v + 2 && c < size; c++) {
        t->child[t->nchildren++] = (c + root) % size;
    }
    t->parent = v > 0 ? ((v - 1) / 2 + root) % size : -1;
    t->result_from = -1;
    t->max_children = size > 2 ? 2 : 1;
}

/* One rank's run of the tree engine: what its steps share. */
typedef struct reduce_run {
    const reduce_tree_t *t;
    const char *mine; /* my contribution */
    void *rbuf;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    struct ompi_communicator_t *comm;
    int tag;
    bool top, commute;
    bool direct0;       /* child 0 received straight into rbuf (top, input elsewhere) */
    bool results_later; /* the result's receives posted one per segment (bounded) */
    bufpool_segs_t segs;
    bufpool_reqs_t reqs;
    bufpool_slots_t slots, view[2];
    bufpool_rwin_t win[2];
    bufpool_peer_segs_t child[2];
    ompi_request_t *up[BUFPOOL_MAX_DEPTH]; /* sends to the parent, one per slot */
    int nwin, up_depth;
    size_t released; /* child 0's units handed back to its window */
    size_t lag;      /* segments a slot of child 0 waits for its send up */
} reduce_run_t;

/* A leaf sends its segments up (and, bounded, receives the result's one by
 * one after each: it is then the root of a non-commutative chain). */
static int reduce_leaf(reduce_run_t *r)
{
    const reduce_tree_t *t = r->t;
    if (!r->results_later) {
        return bufpool_reqs_send_segs(&r->reqs, r->mine, &r->segs, r->dtype, t->parent, r->tag);
    }
    int rc = OMPI_SUCCESS;
    for (size_t j = 0; j < r->segs.nseg && OMPI_SUCCESS == rc; j++) {
        const size_t n = bufpool_segs_count(&r->segs, j);
        const ptrdiff_t off = bufpool_segs_offset(&r->segs, j);
        rc = bufpool_reqs_send(&r->reqs, r->mine + off, n, r->dtype, t->parent, r->tag);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_reqs_recv(&r->reqs, (char *)r->rbuf + off, n, r->dtype, t->result_from,
                                   r->tag);
        }
    }
    return rc;
}

/* The receive windows of an inner rank or the top: child 0 straight into
 * rbuf at a top whose input is elsewhere; the others share the slots. */
static int reduce_windows_start(reduce_run_t *r, const bufpool_plan_t *plan)
{
    const reduce_tree_t *t = r->t;
    const bufpool_segs_t *segs = &r->segs;
    const int slotted = t->nchildren - (r->direct0 ? 1 : 0);
    int nslots = (int)bufpool_window_bounded((size_t)plan->depth, plan->max_requests);
    if (nslots < t->max_children) {
        nslots = t->max_children;
    }
    if ((size_t)nslots > segs->nseg * (size_t)slotted) {
        nslots = (int)(segs->nseg * (size_t)slotted);
    }
    if (slotted > 0) {
        int rc = bufpool_slots_get(&r->slots, nslots, segs->seg_span, segs->gap);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    for (int c = 0, first = 0; c < t->nchildren; c++) {
        bufpool_peer_segs_t *child = &r->child[c];
        int rc;
        *child = (bufpool_peer_segs_t){.peer = t->child[c], .segs = segs, .dtype = r->dtype};
        if (0 == c && r->direct0) {
            child->direct = r->rbuf;
            size_t depth = bufpool_window_bounded(
                segs->nseg < BUFPOOL_MAX_DEPTH ? segs->nseg : BUFPOOL_MAX_DEPTH,
                plan->max_requests);
            rc = bufpool_rwin_start(&r->win[c], r->comm, r->tag, NULL, depth, segs->nseg,
                                    bufpool_peer_segs_describe, child);
        } else {
            /* Split the slots; the first window takes the remainder. */
            int share = nslots / slotted + (first == 0 ? nslots % slotted : 0);
            r->view[c] = bufpool_slots_view(&r->slots, first, share);
            first += share;
            child->direct = NULL;
            rc = bufpool_rwin_start(&r->win[c], r->comm, r->tag, &r->view[c], (size_t)share,
                                    segs->nseg, bufpool_peer_segs_describe, child);
            if (0 == c) {
                r->up_depth = share;
            }
        }
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
        r->nwin++;
    }
    /* Child 0's slot is held until the send to the parent completes: one
     * segment later when the window has room for that, at once otherwise. */
    r->lag = r->up_depth > 1 ? 1 : 0;
    return OMPI_SUCCESS;
}

/* Segment j at an inner rank or the top: mine op child 0 op child 1, then
 * up to the parent (or into rbuf at the top). */
static int reduce_segment(reduce_run_t *r, size_t j)
{
    const reduce_tree_t *t = r->t;
    const size_t n = bufpool_segs_count(&r->segs, j);
    const ptrdiff_t off = bufpool_segs_offset(&r->segs, j);
    void *acc, *in;

    int rc = bufpool_rwin_wait(&r->win[0], j, &acc);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (r->top) {
        char *res = (char *)r->rbuf + off;
        if (r->direct0) {
            bufpool_reduce(r->op, r->mine + off, res, n, r->dtype); /* mine op child 0 */
        } else if (r->commute) {
            bufpool_reduce(r->op, acc, res, n, r->dtype); /* res holds mine */
        } else {
            bufpool_reduce(r->op, res, acc, n, r->dtype);
            rc = bufpool_copy(res, acc, n, r->dtype);
        }
        acc = res;
    } else {
        bufpool_reduce(r->op, r->mine + off, acc, n, r->dtype);
    }
    if (OMPI_SUCCESS == rc && t->nchildren > 1) {
        rc = bufpool_rwin_wait(&r->win[1], j, &in);
        if (OMPI_SUCCESS == rc) {
            bufpool_reduce(r->op, in, acc, n, r->dtype); /* commutative only */
            rc = bufpool_rwin_release(&r->win[1], j);
        }
    }
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (r->top) {
        rc = bufpool_rwin_release(&r->win[0], j);
        r->released = j + 1;
    } else {
        const size_t up_depth = (size_t)r->up_depth;
        rc = bufpool_isend(acc, n, r->dtype, t->parent, r->tag, r->comm, &r->up[j % up_depth]);
        while (OMPI_SUCCESS == rc && r->released + r->lag <= j) {
            rc = bufpool_wait(&r->up[r->released % up_depth]);
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_rwin_release(&r->win[0], r->released++);
            }
        }
    }
    if (OMPI_SUCCESS == rc && r->results_later) {
        rc =
            bufpool_reqs_recv(&r->reqs, (char *)r->rbuf + off, n, r->dtype, t->result_from, r->tag);
    }
    return rc;
}

static int reduce_tree_run(const reduce_tree_t *t, const void *sbuf, void *rbuf, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op, int root,
                           const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                           bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm);
    const bool in_place = rank == root && MPI_IN_PLACE == sbuf;
    reduce_run_t r = {
        .t = t,
        .mine = in_place ? (const char *)rbuf : (const char *)sbuf,
        .rbuf = rbuf,
        .dtype = dtype,
        .op = op,
        .comm = comm,
        .tag = MCA_COLL_BASE_TAG_REDUCE,
        .top = t->parent < 0,
        .commute = ompi_op_is_commute(op),
        .direct0 = t->parent < 0 && !in_place,
        /* Bounded, the result's receives go one per segment (see above). */
        .results_later = t->result_from >= 0 && plan->max_requests > 0,
        .up_depth = 1,
    };
    int rc = OMPI_SUCCESS;

    /* Every rank cuts the message alike, with room for a slot per child
     * at the busiest rank. */
    bufpool_segs_init(&r.segs, count, dtype,
                      bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, t->max_children));
    bufpool_reqs_init(&r.reqs, state, comm);
    bufpool_reqs_bound(&r.reqs, plan->max_requests);
    for (int i = 0; i < BUFPOOL_MAX_DEPTH; i++) {
        r.up[i] = MPI_REQUEST_NULL;
    }

    if (t->result_from >= 0 && !r.results_later) {
        rc = bufpool_reqs_recv_segs(&r.reqs, rbuf, &r.segs, dtype, t->result_from, r.tag);
    }
    if (OMPI_SUCCESS == rc && 0 == t->nchildren) {
        rc = reduce_leaf(&r);
    } else if (OMPI_SUCCESS == rc) {
        rc = reduce_windows_start(&r, plan);
        for (size_t j = 0; j < r.segs.nseg && OMPI_SUCCESS == rc; j++) {
            rc = reduce_segment(&r, j);
        }
        if (OMPI_SUCCESS != rc) {
            for (int c = 0; c < r.nwin; c++) {
                bufpool_rwin_abort(&r.win[c]);
            }
        }
        for (int i = 0; i < BUFPOOL_MAX_DEPTH; i++) {
            if (MPI_REQUEST_NULL != r.up[i]) {
                int wait_rc = bufpool_wait(&r.up[i]);
                if (OMPI_SUCCESS == rc) {
                    rc = wait_rc;
                }
            }
        }
    }
    rc = bufpool_reqs_finish(&r.reqs, rc);
    bufpool_slots_put(&r.slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

/* rsg, bounded: the root receives segment j of every other block once its
 * own segment j is final (the stream's segment_done), the segments its own
 * block lacks after the stream. */
typedef struct rsg_results {
    const bufpool_rs_stream_t *stream;
    char *rbuf;
    int root, tag;
    ptrdiff_t extent;
    size_t posted; /* segments j < posted are posted for every block */
    bufpool_reqs_t *reqs;
} rsg_results_t;

static int rsg_post_upto(rsg_results_t *r, size_t end)
{
    const bufpool_blocks_t *blocks = r->stream->blocks;
    int rc = OMPI_SUCCESS;
    for (; r->posted < end && OMPI_SUCCESS == rc; r->posted++) {
        for (int k = 1; k < blocks->n && OMPI_SUCCESS == rc; k++) {
            const int b = (r->root + k) % blocks->n;
            bufpool_segs_t segs;
            bufpool_rs_block_segs(r->stream, bufpool_blocks_len(blocks, b), &segs);
            if (r->posted < segs.nseg) {
                char *at = r->rbuf + (ptrdiff_t)bufpool_blocks_disp(blocks, b) * r->extent +
                           bufpool_segs_offset(&segs, r->posted);
                rc = bufpool_reqs_recv(r->reqs, at, bufpool_segs_count(&segs, r->posted),
                                       r->stream->dtype, b, r->tag);
            }
        }
    }
    return rc;
}

static int rsg_segment_done(void *ctx, size_t j, void *seg, size_t count)
{
    (void)seg;
    (void)count;
    return rsg_post_upto(ctx, j + 1);
}

/* rsg: the pairwise reduce-scatter stream, then each block to the root.
 * Results travel on the gather tag, apart from the contributions (the
 * root receives both from every rank).  Under a bound B the stream's sends
 * get B - B/2 and the root's result receives B/2 (at least one each). */
static int reduce_rsg(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, int root, const bufpool_plan_t *plan,
                      struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int result_tag = MCA_COLL_BASE_TAG_GATHER;
    const bool in_place = rank == root && MPI_IN_PLACE == sbuf;
    const bool bounded = plan->max_requests > 0;
    const bufpool_blocks_t blocks = {.n = size, .counts = NULL, .total = count};
    const int result_bound = plan->max_requests >= 2 ? plan->max_requests / 2 : 1;
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;
    rsg_results_t results;
    int rc = OMPI_SUCCESS;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_rs_stream_t stream = {
        .src = in_place ? rbuf : sbuf,
        .acc = rank == root ? (char *)rbuf + (ptrdiff_t)bufpool_blocks_disp(&blocks, rank) * extent
                            : NULL,
        .acc_holds_mine = in_place,
        .blocks = &blocks,
        .dtype = dtype,
        .op = op,
        .tag = MCA_COLL_BASE_TAG_REDUCE,
        /* Non-root ranks split their slots between window and ring. */
        .seg_bytes = bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, 2),
        .depth = plan->depth,
        .result_peer = root,
        .result_tag = result_tag,
        .max_requests =
            bounded ? (plan->max_requests > 1 ? plan->max_requests - result_bound : 1) : 0,
        .state = state,
    };
    results = (rsg_results_t){.stream = &stream,
                              .rbuf = rbuf,
                              .root = root,
                              .tag = result_tag,
                              .extent = extent,
                              .reqs = &reqs};
    if (rank == root && !bounded) {
        /* Every other block straight into rbuf, before any wait. */
        rc = bufpool_rs_recv_blocks(&stream, rbuf, root, result_tag, &reqs);
    } else if (rank == root) {
        bufpool_reqs_bound(&reqs, result_bound);
        stream.segment_done = rsg_segment_done;
        stream.ctx = &results;
    }
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_pairwise_reduce_scatter(&stream, &reqs, comm);
    }
    if (OMPI_SUCCESS == rc && rank == root && bounded) {
        bufpool_segs_t longest; /* block 0 is never shorter than another */
        bufpool_rs_block_segs(&stream, bufpool_blocks_len(&blocks, 0), &longest);
        rc = rsg_post_upto(&results, longest.nseg);
    }
    return bufpool_reqs_finish(&reqs, rc);
}

/* ---------------------------------------------------------------------- */

int bufpool_run_reduce(const bufpool_args_t *a, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    reduce_tree_t tree;

    if (BUFPOOL_REDUCE_RSG == plan->alg) {
        return reduce_rsg(a->sbuf, a->rbuf, a->count, a->dtype, a->op, a->root, plan, comm, state);
    }
    if (BUFPOOL_REDUCE_BINARY == plan->alg) {
        binary_tree(rank, size, a->root, &tree);
    } else {
        chain_tree(rank, size, a->root, call->commute, &tree);
    }
    return reduce_tree_run(&tree, a->sbuf, a->rbuf, a->count, a->dtype, a->op, a->root, plan, comm,
                           state);
}
