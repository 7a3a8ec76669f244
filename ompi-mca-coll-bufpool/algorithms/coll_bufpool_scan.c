/*
 * MPI_Scan and MPI_Exscan.
 *
 * chain: a pipelined chain in rank order, any operation.  Rank r receives
 *   segment j of the prefix of ranks 0 .. r-1, combines it with its own
 *   segment (prefix op mine, the order MPI prescribes) and passes the result
 *   to r + 1 while segment j + 1 is still arriving.
 *   scan: the prefix arrives in a window of pipeline_depth scratch slots,
 *     the result is formed in rbuf and sent on from there, so no slot waits
 *     for a send.  With a commutative operation (not in place) the prefix
 *     lands straight in rbuf and the input is folded into it: no scratch.
 *   exscan: the incoming prefix is itself rank r's result, so it is
 *     received straight into rbuf and the outgoing prefix is formed in a
 *     ring of scratch slots, each reused once its send completed.  In place
 *     (rbuf holds the input), the incoming prefix goes through a window of
 *     half of the slots and the ring has the other half.
 *   Rank 0 sends straight from its input; the last rank of exscan only
 *   receives.  Latency grows with p (p - 1 + nseg segment steps); each rank
 *   receives and reduces the message once.
 *   Under coll_bufpool_max_requests (plan.max_requests > 0): rank 0's
 *   sends and the last exscan rank's receives are bounded sets; an inner
 *   rank's window keeps at most half of the bound and its sends (scan: a
 *   bounded set; exscan: the slot ring) the rest.  Every stream is one
 *   neighbour's segments in order, so waiting for the oldest request
 *   waits for a segment the neighbour posts without waiting on us.
 *
 * recursive_doubling: log2(p) exchanges of the whole message with partners
 *   at distance 1, 2, 4, ..., keeping the partial of the aligned group and
 *   the prefix, each combined in rank order, so any operation works.  For
 *   small messages: scratch = two messages, used only when that fits
 *   pipeline_depth x segment_size.
 *
 * Order of blocking waits: in the chain a rank waits only for its left
 *   neighbour's segments (and, exscan, for its own sends to the right one,
 *   which that neighbour receives without waiting for anything but its
 *   left neighbour, i.e. us): rank 0 never waits, so by induction on the
 *   rank nothing cycles.  Recursive doubling pairs each rank with one
 *   partner per step in both directions (sendrecv).
 *
 * "auto", measured on the project machine (2 cores, vader with CMA single
 *   copy, p = 4 oversubscribed; medians, bufpool / Open MPI's default, whose
 *   scan and exscan are basic's unsegmented linear chain):
 *   - scan: chain from 4 KiB at p = 2 (0.46-0.79: the default also copies
 *     the input to rbuf and receives into fresh malloc'd memory) and from
 *     16 KiB at p >= 3 (0.32-1.01); below, the default's single eager
 *     message per hop is as fast: hand over.
 *   - exscan: at p = 2 the default is one transfer straight into rbuf, which
 *     segmenting can only slow down (1.06-1.19): hand over; at p >= 3 the
 *     chain from 128 KiB (0.36-0.95).
 *   - recursive doubling loses everywhere here (1.1-5x: every step waits
 *     for a partner, which costs a context switch on oversubscribed cores),
 *     so only a forced coll_bufpool_<scan|exscan>_algorithm runs it.
 */
#include "coll_bufpool_pipeline.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

static int scan_chain(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                      struct ompi_op_t *op, const bufpool_plan_t *plan,
                      struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int tag = MCA_COLL_BASE_TAG_SCAN;
    const bool in_place = MPI_IN_PLACE == sbuf;
    const int next = rank + 1 < size ? rank + 1 : -1;
    bufpool_segs_t segs;
    bufpool_reqs_t reqs;
    bufpool_slots_t slots = {0};
    bufpool_rwin_t win;
    int rc = OMPI_SUCCESS;

    bufpool_segs_init(&segs, count, dtype, plan->seg_bytes);
    bufpool_reqs_init(&reqs, state, comm);

    if (0 == rank) {
        bufpool_reqs_bound(&reqs, plan->max_requests);
        rc = bufpool_reqs_send_segs(&reqs, in_place ? rbuf : sbuf, &segs, dtype, next, tag);
        if (OMPI_SUCCESS == rc && !in_place) {
            rc = bufpool_copy(rbuf, sbuf, count, dtype);
        }
        goto out;
    }

    /* A commutative operation lets the prefix land straight in rbuf and
     * this rank's input be folded into it (mine op prefix == prefix op
     * mine): no slot copy, no three-buffer reduction, no scratch, so more
     * receives can stay posted. */
    const bool direct = !in_place && ompi_op_is_commute(op);
    const int depth =
        (int)bufpool_window_bounded((size_t)(direct ? bufpool_direct_depth_for(segs.nseg)
                                                    : bufpool_depth_for(plan->depth, segs.nseg)),
                                    plan->max_requests);
    bufpool_reqs_bound(&reqs, bufpool_sends_bounded((size_t)depth, plan->max_requests));
    bufpool_peer_segs_t prefix = {
        .peer = rank - 1, .segs = &segs, .dtype = dtype, .direct = direct ? (char *)rbuf : NULL};
    rc = bufpool_slots_get(&slots, direct ? 0 : depth, segs.seg_span, segs.gap);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    rc = bufpool_rwin_start(&win, comm, tag, &slots, (size_t)depth, segs.nseg,
                            bufpool_peer_segs_describe, &prefix);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    for (size_t j = 0; j < segs.nseg; j++) {
        const bufpool_seg_t sg = bufpool_seg(&segs, j);
        char *res = (char *)rbuf + sg.off;
        void *in;
        rc = bufpool_rwin_wait(&win, j, &in);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (direct) {
            bufpool_reduce(op, (const char *)sbuf + sg.off, res, sg.n, dtype);
        } else if (in_place) {
            bufpool_reduce(op, in, res, sg.n, dtype);
        } else {
            bufpool_reduce3(op, in, (const char *)sbuf + sg.off, res, sg.n, dtype);
        }
        rc = bufpool_rwin_release(&win, j);
        if (OMPI_SUCCESS == rc && next >= 0) {
            rc = bufpool_reqs_send(&reqs, res, sg.n, dtype, next, tag);
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_rwin_abort(&win);
    }

out:
    rc = bufpool_reqs_finish(&reqs, rc);
    bufpool_slots_put(&slots);
    return rc;
}

/* Slots an inner rank of the exscan chain needs at least: one for the
 * incoming prefix (in place) and one for the outgoing one. */
#define EXSCAN_CHAIN_MIN_SLOTS 2

/* One function on purpose (about 110 lines): the chain's posts and waits,
 * in the order that keeps it free of deadlock, read top to bottom. */
static int exscan_chain(const void *sbuf, void *rbuf, size_t count, struct ompi_datatype_t *dtype,
                        struct ompi_op_t *op, const bufpool_plan_t *plan,
                        struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int tag = MCA_COLL_BASE_TAG_EXSCAN;
    const bool in_place = MPI_IN_PLACE == sbuf;
    const char *mine = in_place ? (const char *)rbuf : (const char *)sbuf;
    bufpool_segs_t segs;
    bufpool_reqs_t reqs;
    bufpool_slots_t slots = {0}, win_slots, ring_slots;
    bufpool_rwin_t win;
    bufpool_sring_t ring;
    bool ring_started = false;
    int rc = OMPI_SUCCESS;

    /* Every rank cuts alike, with room for both groups of slots. */
    bufpool_segs_init(
        &segs, count, dtype,
        bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, EXSCAN_CHAIN_MIN_SLOTS));
    bufpool_reqs_init(&reqs, state, comm);

    bufpool_reqs_bound(&reqs, plan->max_requests);
    if (0 == rank) {
        rc = bufpool_reqs_send_segs(&reqs, mine, &segs, dtype, 1, tag);
        goto out;
    }
    if (size - 1 == rank) {
        /* The last rank's input is nobody's business: receive over it. */
        rc = bufpool_reqs_recv_segs(&reqs, rbuf, &segs, dtype, rank - 1, tag);
        goto out;
    }

    int nslots = plan->depth;
    if (nslots < EXSCAN_CHAIN_MIN_SLOTS) {
        nslots = EXSCAN_CHAIN_MIN_SLOTS;
    }
    /* No use for more slots than segments. */
    const int cap = (int)(segs.nseg < BUFPOOL_MAX_DEPTH ? segs.nseg : BUFPOOL_MAX_DEPTH);
    bufpool_peer_segs_t prefix = {.peer = rank - 1, .segs = &segs, .dtype = dtype, .direct = NULL};
    int win_nslots = 0, ring_nslots = nslots;
    if (in_place) {
        win_nslots = nslots / 2;
        ring_nslots = nslots - win_nslots;
    } else {
        prefix.direct = rbuf;
    }
    win_nslots = win_nslots < cap ? win_nslots : cap;
    ring_nslots = ring_nslots < cap ? ring_nslots : cap;
    /* Under a bound the window and the ring share it. */
    const size_t win_depth =
        bufpool_window_bounded((size_t)(in_place ? win_nslots : cap), plan->max_requests);
    if (in_place) {
        win_nslots = (int)win_depth;
    }
    if (plan->max_requests > 0) {
        const int sends = bufpool_sends_bounded(win_depth, plan->max_requests);
        ring_nslots = ring_nslots < sends ? ring_nslots : sends;
    }
    rc = bufpool_slots_get_split(&slots, win_nslots, ring_nslots, segs.seg_span, segs.gap,
                                 &win_slots, &ring_slots);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    bufpool_sring_init(&ring, &ring_slots);
    ring_started = true;
    rc = bufpool_rwin_start(&win, comm, tag, in_place ? &win_slots : NULL, win_depth, segs.nseg,
                            bufpool_peer_segs_describe, &prefix);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    for (size_t j = 0; j < segs.nseg; j++) {
        const bufpool_seg_t sg = bufpool_seg(&segs, j);
        char *res = (char *)rbuf + sg.off;
        void *in, *outgoing;
        rc = bufpool_rwin_wait(&win, j, &in);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_sring_acquire(&ring, &outgoing);
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
        /* outgoing = prefix op mine; in place, mine is in rbuf until the prefix
         * replaces it. */
        bufpool_reduce3(op, in, mine + sg.off, outgoing, sg.n, dtype);
        if (in_place) {
            rc = bufpool_copy(res, in, sg.n, dtype);
        }
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_rwin_release(&win, j);
        }
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_sring_send(&ring, sg.n, dtype, rank + 1, tag, comm);
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_rwin_abort(&win);
    }

out:
    if (ring_started) {
        int drain_rc = bufpool_sring_drain(&ring);
        if (OMPI_SUCCESS == rc) {
            rc = drain_rc;
        }
    }
    rc = bufpool_reqs_finish(&reqs, rc);
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

static int scan_recursive_doubling(const void *sbuf, void *rbuf, size_t count,
                                   struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                   struct ompi_communicator_t *comm, bool exclusive)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const int tag = exclusive ? MCA_COLL_BASE_TAG_EXSCAN : MCA_COLL_BASE_TAG_SCAN;
    const bool in_place = MPI_IN_PLACE == sbuf;
    const bool commute = ompi_op_is_commute(op);
    bufpool_slots_t slots;
    ptrdiff_t gap;
    const size_t span = bufpool_span(dtype, count, &gap);

    int rc = bufpool_slots_get(&slots, 2, span, gap);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    /* partial: the reduction of my aligned group of ranks, in rank order. */
    char *partial = bufpool_slot(&slots, 0), *recv = bufpool_slot(&slots, 1);
    rc = bufpool_copy(partial, in_place ? rbuf : sbuf, count, dtype);
    if (OMPI_SUCCESS == rc && !exclusive && !in_place) {
        rc = bufpool_copy(rbuf, sbuf, count, dtype);
    }
    /* rbuf holds a prefix (scan: from the start, mine; exscan: once the
     * first group below me has arrived). */
    bool have_prefix = !exclusive;

    for (int mask = 1; OMPI_SUCCESS == rc && mask < size; mask <<= 1) {
        const int peer = rank ^ mask;
        if (peer >= size) {
            continue;
        }
        rc = bufpool_sendrecv(partial, count, dtype, peer, recv, count, dtype, peer, tag, comm);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (peer < rank) {
            /* The peer's group comes before mine. */
            if (have_prefix) {
                bufpool_reduce(op, recv, rbuf, count, dtype);
            } else {
                rc = bufpool_copy(rbuf, recv, count, dtype);
                have_prefix = true;
            }
            bufpool_reduce(op, recv, partial, count, dtype);
        } else if (commute) {
            bufpool_reduce(op, recv, partial, count, dtype);
        } else {
            /* partial op recv, formed in recv, which becomes the partial. */
            bufpool_reduce(op, partial, recv, count, dtype);
            char *swap = partial;
            partial = recv;
            recv = swap;
        }
    }
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

/* Scan and exscan share their entry (and their signature, so that the
 * previous module's function is called through one pointer type). */
int bufpool_run_scan(bool exclusive, const bufpool_args_t *a, const bufpool_plan_t *plan,
                     struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    if ((exclusive ? BUFPOOL_EXSCAN_RECURSIVE_DOUBLING : BUFPOOL_SCAN_RECURSIVE_DOUBLING) ==
        plan->alg) {
        return scan_recursive_doubling(a->sbuf, a->rbuf, a->count, a->dtype, a->op, comm,
                                       exclusive);
    }
    return (exclusive ? exscan_chain : scan_chain)(a->sbuf, a->rbuf, a->count, a->dtype, a->op,
                                                   plan, comm, state);
}
