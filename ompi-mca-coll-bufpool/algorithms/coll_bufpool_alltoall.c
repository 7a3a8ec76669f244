/*
 * MPI_Alltoall.
 *
 * pairwise: p - 1 steps; step s sends block r+s to rank r+s and receives
 *   block r-s from rank r-s, whole, with each side's own datatype: no
 *   scratch.  With MPI_IN_PLACE the steps pair ranks symmetrically
 *   (partner = (s - r) mod p, s = 0 .. p-1, so each pair meets once and
 *   both sides are in the same step) and a block is exchanged segment by
 *   segment: my segment is packed into a pooled slot before the partner's
 *   segment is received over it (straight into the user buffer when the
 *   layout allows, else through a second slot and unpacked).  Scratch:
 *   depth segments, whatever the block size; Open MPI mallocs a whole
 *   block.
 * linear: every receive and send posted at once.  No scratch.  With
 *   MPI_IN_PLACE only while the p - 1 outgoing blocks fit the scratch
 *   bound (depth x segment_size): they are packed into one pooled buffer
 *   first.
 *
 * Under coll_bufpool_max_requests (B > 0): in place, pairwise keeps at
 * most max(1, B / 2) segments (a receive and a send each) in flight and
 * linear posts receive k and send k in turn in a bounded set (step k:
 * from r - k, to r + k, whose step k receives from r: one order both ends
 * share); not in place, linear is bufpool_linear_exchange's (bounded
 * alike) and pairwise keeps two requests per step.
 *
 * Order of blocking waits: pairwise waits for step s's receive and send;
 * the rank r+s it sends to posts that receive in step s before any wait of
 * step s.  In place, both partners post segment k's receive before its
 * send and wait only for segments already posted on both sides.  linear
 * waits only after everything is posted.
 */
#include "coll_bufpool_pack.h"
#include "coll_bufpool_xchg.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

#define TAG MCA_COLL_BASE_TAG_ALLTOALL

typedef bufpool_xchg_call_t a2a_call_t;

static int a2a_copy_own(const a2a_call_t *c)
{
    return bufpool_local_copy(c->rbuf + c->rank * c->rblock, (size_t)c->rcount, c->rdtype,
                              c->sbuf + c->rank * c->sblock, (size_t)c->scount, c->sdtype,
                              c->seg_bytes);
}

static int alltoall_pairwise(const a2a_call_t *c, bufpool_comm_state_t *state,
                             struct ompi_communicator_t *comm)
{
    /* The own block is copied while the first exchange is in flight, or
     * after the last one when large (BUFPOOL_OVERLAP_COPY_MAX). */
    const bool overlap = c->bytes <= BUFPOOL_OVERLAP_COPY_MAX;
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    bufpool_reqs_init(&reqs, state, comm);
    for (int step = 1; step < c->p && OMPI_SUCCESS == rc; step++) {
        int to = (c->rank + step) % c->p, from = (c->rank - step + c->p) % c->p;
        rc = bufpool_reqs_recv(&reqs, c->rbuf + from * c->rblock, (size_t)c->rcount, c->rdtype,
                               from, TAG);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_reqs_send(&reqs, c->sbuf + to * c->sblock, (size_t)c->scount, c->sdtype,
                                   to, TAG);
        }
        if (OMPI_SUCCESS == rc && overlap && 1 == step) {
            rc = a2a_copy_own(c);
        }
        rc = bufpool_reqs_finish(&reqs, rc);
    }
    return OMPI_SUCCESS == rc && !overlap ? a2a_copy_own(c) : rc;
}

static int alltoall_linear(const a2a_call_t *c, bufpool_comm_state_t *state,
                           struct ompi_communicator_t *comm)
{
    const bufpool_linear_xchg_t x = bufpool_xchg_linear(
        c, c->sbuf, c->sblock, (size_t)c->scount, c->sdtype, c->sbuf + c->rank * c->sblock, TAG);
    return bufpool_linear_exchange(&x, state, comm);
}

/* ---------------------------------------------------------------------- */
/* In place. */

/* Small blocks: every block but mine packed into one pooled buffer, then
 * every receive (straight into rbuf) and send (from the copy) posted at
 * once, as linear does.  Only when the p - 1 blocks fit the scratch bound;
 * one round instead of the p - 1 lock-step exchanges of pairwise, which
 * costs 4-22% over tuned on small blocks. */
static int alltoall_inplace_linear(const a2a_call_t *c, bufpool_comm_state_t *state,
                                   struct ompi_communicator_t *comm)
{
    bufpool_slots_t slots;
    bufpool_reqs_t reqs;
    int rc = bufpool_slots_get(&slots, 1, (size_t)(c->p - 1) * c->bytes, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    char *copy = bufpool_slot(&slots, 0);
    for (int k = 1; k < c->p && OMPI_SUCCESS == rc; k++) {
        bufpool_view_t block;
        bufpool_view_init(&block, c->rbuf + ((c->rank + k) % c->p) * c->rblock, (size_t)c->rcount,
                          c->rdtype);
        rc = bufpool_view_pack(&block, 0, c->bytes, copy + (size_t)(k - 1) * c->bytes);
    }
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, c->max_requests);
    /* Unbounded, every receive goes before the first send; bounded,
     * receive k and send k in turn. */
    const bool bounded = c->max_requests > 0;
    for (int k = 1; k < c->p && OMPI_SUCCESS == rc; k++) {
        int from = (c->rank - k + c->p) % c->p;
        rc = bufpool_reqs_recv(&reqs, c->rbuf + from * c->rblock, (size_t)c->rcount, c->rdtype,
                               from, TAG);
        if (OMPI_SUCCESS == rc && bounded) {
            rc = bufpool_reqs_send_small_now(&reqs, copy + (size_t)(k - 1) * c->bytes, c->bytes,
                                             MPI_BYTE, c->bytes, (c->rank + k) % c->p, TAG);
        }
    }
    for (int k = 1; k < c->p && OMPI_SUCCESS == rc && !bounded; k++) {
        rc = bufpool_reqs_send_small_now(&reqs, copy + (size_t)(k - 1) * c->bytes, c->bytes,
                                         MPI_BYTE, c->bytes, (c->rank + k) % c->p, TAG);
    }
    rc = bufpool_reqs_finish(&reqs, rc);
    bufpool_slots_put(&slots);
    return rc;
}

typedef struct inplace_seg {
    ompi_request_t *recv, *send;
    bool bounced;
} inplace_seg_t;

/* Complete segment k of the exchange: its receive (unpacked if it landed
 * in a slot) and its send (whose slot is then free). */
static int inplace_finish(const bufpool_view_t *block, inplace_seg_t *s, size_t off, size_t len,
                          void *recv_slot)
{
    int rc = bufpool_wait(&s->recv);
    int send_rc = bufpool_wait(&s->send);
    if (OMPI_SUCCESS == rc && s->bounced) {
        rc = bufpool_view_unpack(block, off, len, recv_slot);
    }
    return OMPI_SUCCESS != rc ? rc : send_rc;
}

static int alltoall_inplace(const a2a_call_t *c, const bufpool_plan_t *plan,
                            struct ompi_communicator_t *comm)
{
    /* Each segment in flight needs a send slot and maybe a receive slot:
     * the segment shrinks when depth is 1 so that two fit the bound.  It
     * depends only on the plan, so both partners cut alike. */
    const size_t seg = bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, 2);
    bufpool_view_t whole;
    bufpool_slots_t slots = {0};
    int rc;

    bufpool_view_init(&whole, c->rbuf, (size_t)c->rcount, c->rdtype);
    const size_t bytes = whole.bytes;
    const size_t nseg = (bytes + seg - 1) / seg;
    const bool direct = bufpool_view_all_direct(&whole, seg);
    const int depth = plan->depth;
    /* Slots per segment in flight, and segments in flight. */
    const int per = direct ? 1 : 2;
    int window = depth / per > 0 ? depth / per : 1;
    if ((size_t)window > nseg) {
        window = (int)nseg;
    }
    /* A segment in flight is a receive and a send. */
    window = (int)bufpool_window_bounded((size_t)window, plan->max_requests);
    rc = bufpool_slots_get(&slots, window * per, seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    inplace_seg_t segs[BUFPOOL_MAX_DEPTH];

    for (int step = 0; step < c->p && OMPI_SUCCESS == rc; step++) {
        const int peer = (step - c->rank + c->p) % c->p;
        if (peer == c->rank) {
            continue;
        }
        bufpool_view_t block;
        bufpool_view_init(&block, c->rbuf + peer * c->rblock, (size_t)c->rcount, c->rdtype);
        size_t started = 0, finished = 0;

        while (finished < nseg && OMPI_SUCCESS == rc) {
            if (started < nseg && started - finished < (size_t)window) {
                /* Pack my segment before the partner's lands on it. */
                size_t k = started, off = k * seg, len = bytes - off < seg ? bytes - off : seg;
                int w = (int)(k % (size_t)window);
                void *out = bufpool_slot(&slots, w * per);
                void *in = direct ? NULL : bufpool_slot(&slots, w * per + 1);
                inplace_seg_t *s = &segs[w];
                bufpool_piece_t piece;

                rc = bufpool_view_pack(&block, off, len, out);
                if (OMPI_SUCCESS != rc) {
                    break;
                }
                s->bounced = bufpool_view_recv_piece(&block, off, len, in, &piece);
                s->send = MPI_REQUEST_NULL;
                rc = bufpool_irecv(piece.ptr, piece.count, piece.dtype, peer, TAG, comm, &s->recv);
                if (OMPI_SUCCESS != rc) {
                    break;
                }
                started++;
                rc = bufpool_isend(out, len, MPI_BYTE, peer, TAG, comm, &s->send);
                continue;
            }
            size_t k = finished, off = k * seg, len = bytes - off < seg ? bytes - off : seg;
            int w = (int)(k % (size_t)window);
            rc = inplace_finish(&block, &segs[w], off, len,
                                direct ? NULL : bufpool_slot(&slots, w * per + 1));
            finished++;
        }
        /* After an error, complete what is still in flight before the
         * slots go back. */
        for (; finished < started; finished++) {
            inplace_seg_t *s = &segs[finished % (size_t)window];
            (void)bufpool_wait(&s->recv);
            (void)bufpool_wait(&s->send);
        }
    }
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

int bufpool_run_alltoall(const bufpool_args_t *a, const bufpool_call_t *call,
                         const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                         bufpool_comm_state_t *state)
{
    const bool in_place = MPI_IN_PLACE == a->sbuf;
    a2a_call_t c;
    bufpool_xchg_call_init(&c, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, call,
                           plan, comm);
    if (BUFPOOL_ALLTOALL_LINEAR == plan->alg) {
        return in_place ? alltoall_inplace_linear(&c, state, comm)
                        : alltoall_linear(&c, state, comm);
    }
    return in_place ? alltoall_inplace(&c, plan, comm) : alltoall_pairwise(&c, state, comm);
}
