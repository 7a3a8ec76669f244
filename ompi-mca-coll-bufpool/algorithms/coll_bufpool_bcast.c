/*
 * MPI_Bcast.
 *
 * Ranks may describe the message with different datatypes of the same
 * signature, so every algorithm that cuts the message cuts it on
 * signature bytes (coll_bufpool_pack.h); the unsegmented ones move the
 * whole message with each rank's own datatype.
 *
 * binomial: the whole message down a binomial tree, largest subtree
 *   first.  No scratch.  For small messages on many ranks (log2(p)
 *   steps).
 * linear: the root posts one send per rank at once.  No scratch.  On
 *   shared memory each receiver copies the message itself (single-copy
 *   rendezvous), so the p - 1 copies run in parallel, and no relay has to
 *   be scheduled first: the best choice below 1 MiB on a few ranks.
 * chain: pipelined chain in vrank order.  Segment j (segment_size bytes)
 *   is received straight into the user buffer and forwarded while later
 *   segments arrive (pipeline_depth receives in flight).  Scratch only for
 *   segments that cannot be received in place (a non-contiguous datatype
 *   whose elements straddle a segment boundary): depth slots.
 * scatter_allgather: binomial scatter of p byte blocks, then a ring
 *   allgather of the blocks in vrank order without its last link (the
 *   root holds every block: nothing is sent to it, its buffer is never
 *   written), both cut into segments: each rank moves about 2 (p-1)/p of
 *   the message, for large messages on many ranks.  Scratch as for chain,
 *   shared by the send and receive sides.
 *
 * Requests in flight under coll_bufpool_max_requests (B > 0): binomial's
 *   sends to its children, linear's root and chain's forwarding are
 *   bounded sets of B; scatter_allgather keeps at most B/2 receives posted
 *   and its direct sends (to a child in the scatter, to the next rank in
 *   the ring) in a bounded set of the rest.  Each receiver takes its
 *   pieces in order from one sender at a time, so waiting for the oldest
 *   send waits for a piece its receiver has or will have posted: in the
 *   ring, a rank blocked at piece k on its send k - S (S the set's bound)
 *   needs its successor to be past piece k - S - depth, and the ring has
 *   no link back to the root: the last rank sends nothing.
 *
 * Order of blocking waits:
 *   binomial, linear: a rank waits for its parent's message, whose send
 *     depends on nothing but the parent's own receive, then for its sends.
 *   chain: rank v waits for segment j from v-1 (sent as soon as v-1 had
 *     it) and, before reusing a slot, for its send of segment j-1 to v+1,
 *     which v+1 receives into a window it keeps posted depth segments
 *     ahead; nothing waits on a later segment or on a rank further up.
 *   scatter_allgather: the scatter waits only on the parent.  In each ring
 *     step a rank posts its send of segment k before waiting for segment
 *     k, and keeps depth receives posted, so the rank furthest behind can
 *     always complete: its successor has posted at least that segment,
 *     its predecessor has sent it (the root waits for no receive, the
 *     last rank for no send).
 */
#include "coll_bufpool_pack.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

#define TAG MCA_COLL_BASE_TAG_BCAST

/* Bytes of a stream of total bytes cut in pieces of seg: piece j. */
static inline size_t piece_len(size_t total, size_t seg, size_t j)
{
    size_t left = total - j * seg;
    return left < seg ? left : seg;
}

static inline size_t pieces_of(size_t total, size_t seg)
{
    return (total + seg - 1) / seg;
}

/* ---------------------------------------------------------------------- */

static int bcast_binomial(void *buf, int count, struct ompi_datatype_t *dtype, size_t bytes,
                          int root, int max_requests, struct ompi_communicator_t *comm,
                          bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const int v = (rank - root + p) % p;
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    if (0 != v) {
        int parent = bufpool_vrank_to_rank(bufpool_bmtree_parent(v), root, p);
        rc = bufpool_recv(buf, count, dtype, parent, TAG, comm);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    bufpool_reqs_init(&reqs, state, comm);
    /* Each child only waits for this message: waiting for the oldest send
     * is safe. */
    bufpool_reqs_bound(&reqs, max_requests);
    /* Largest subtree first: it has the most levels still to go. */
    int kids[BUFPOOL_BMTREE_MAX_KIDS];
    for (int k = bufpool_bmtree_kids(v, p, kids) - 1; k >= 0 && OMPI_SUCCESS == rc; k--) {
        rc = bufpool_reqs_send_small_now(&reqs, buf, (size_t)count, dtype, bytes,
                                         bufpool_vrank_to_rank(kids[k], root, p), TAG);
    }
    return bufpool_reqs_finish(&reqs, rc);
}

static int bcast_linear(void *buf, int count, struct ompi_datatype_t *dtype, size_t bytes, int root,
                        int max_requests, struct ompi_communicator_t *comm,
                        bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    if (rank != root) {
        return bufpool_recv(buf, count, dtype, root, TAG, comm);
    }
    /* Receivers wait for nothing else: waiting for the oldest send is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, max_requests);
    for (int k = 1; k < p && OMPI_SUCCESS == rc; k++) {
        rc = bufpool_reqs_send_small_now(&reqs, buf, (size_t)count, dtype, bytes, (root + k) % p,
                                         TAG);
    }
    return bufpool_reqs_finish(&reqs, rc);
}

/* ---------------------------------------------------------------------- */
/* Pieces of one view flowing through a receive window. */

typedef struct piece_stream {
    const bufpool_view_t *view;
    size_t first; /* byte offset of piece 0 in the view */
    size_t bytes; /* bytes of the stream                */
    size_t seg;
    int peer;
} piece_stream_t;

static void piece_describe(void *arg, size_t unit, bufpool_recv_unit_t *out)
{
    const piece_stream_t *s = arg;
    size_t len = piece_len(s->bytes, s->seg, unit);
    bufpool_piece_t piece;

    out->peer = s->peer;
    if (bufpool_view_recv_piece(s->view, s->first + unit * s->seg, len, NULL, &piece)) {
        out->buf = NULL; /* into the unit's slot */
        out->count = len;
        out->dtype = MPI_BYTE;
    } else {
        out->buf = piece.ptr;
        out->count = piece.count;
        out->dtype = piece.dtype;
    }
}

/* After unit's receive completed at where: unpack it if it was bounced. */
static int piece_landed(const piece_stream_t *s, size_t unit, void *where, bool *bounced)
{
    size_t off = s->first + unit * s->seg, len = piece_len(s->bytes, s->seg, unit);
    bufpool_piece_t piece;

    *bounced = !bufpool_view_direct(s->view, off, len, &piece);
    return *bounced ? bufpool_view_unpack(s->view, off, len, where) : OMPI_SUCCESS;
}

/* Send piece unit of s to peer: straight from the user buffer, or packed
 * into the ring's next slot. */
static int piece_send(const piece_stream_t *s, size_t unit, int peer, bufpool_sring_t *ring,
                      bufpool_reqs_t *reqs, struct ompi_communicator_t *comm)
{
    size_t off = s->first + unit * s->seg, len = piece_len(s->bytes, s->seg, unit);
    bufpool_piece_t piece;
    void *bounce;

    if (bufpool_view_direct(s->view, off, len, &piece)) {
        return bufpool_reqs_send(reqs, piece.ptr, piece.count, piece.dtype, peer, TAG);
    }
    int rc = bufpool_sring_acquire(ring, &bounce);
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_view_pack(s->view, off, len, bounce);
    }
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_sring_send(ring, len, MPI_BYTE, peer, TAG, comm);
    }
    return rc;
}

/* ---------------------------------------------------------------------- */

/* One function on purpose (about 105 lines): the chain's posts and waits,
 * in the order that keeps it free of deadlock, read top to bottom. */
static int bcast_chain(void *buf, size_t count, struct ompi_datatype_t *dtype, int root,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const int v = (rank - root + p) % p;
    const int prev = v > 0 ? bufpool_vrank_to_rank(v - 1, root, p) : MPI_PROC_NULL;
    const int next = v + 1 < p ? bufpool_vrank_to_rank(v + 1, root, p) : MPI_PROC_NULL;
    const size_t seg = plan->seg_bytes;
    bufpool_view_t view;
    bufpool_slots_t slots = {0};
    bufpool_sring_t ring;
    bufpool_reqs_t reqs;
    bufpool_rwin_t win;
    bool win_open = false;
    int rc;

    bufpool_view_init(&view, buf, count, dtype);
    piece_stream_t s = {.view = &view, .first = 0, .bytes = view.bytes, .seg = seg, .peer = prev};
    const size_t n = pieces_of(view.bytes, seg);
    const int depth = bufpool_depth_for(plan->depth, n);
    rc = bufpool_slots_get(&slots, bufpool_view_all_direct(&view, seg) ? 0 : depth, seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    bufpool_sring_init(&ring, &slots);
    /* Pieces go down the chain in order and a rank waits only for pieces
     * from upstream: waiting for the oldest forward is safe. */
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, plan->max_requests);

    if (0 == v) {
        for (size_t j = 0; j < n && OMPI_SUCCESS == rc; j++) {
            rc = piece_send(&s, j, next, &ring, &reqs, comm);
        }
        goto out;
    }

    rc = bufpool_rwin_start(&win, comm, TAG, &slots, (size_t)depth, n, piece_describe, &s);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    win_open = true;
    /* slot_send[i]: the forward of the bounced piece that sits in slot i. */
    ompi_request_t *slot_send[BUFPOOL_MAX_DEPTH];
    for (int i = 0; i < depth; i++) {
        slot_send[i] = MPI_REQUEST_NULL;
    }
    for (size_t j = 0; j < n; j++) {
        void *where;
        bool bounced;

        if (j > 0) {
            /* Piece j-1 is forwarded: its slot takes piece j-1+depth. */
            ompi_request_t **prior = &slot_send[(j - 1) % (size_t)depth];
            if (MPI_REQUEST_NULL != *prior) {
                rc = bufpool_wait(prior);
            }
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_rwin_release(&win, j - 1);
            }
            if (OMPI_SUCCESS != rc) {
                break;
            }
        }
        rc = bufpool_rwin_wait(&win, j, &where);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        rc = piece_landed(&s, j, where, &bounced);
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (MPI_PROC_NULL == next) {
            continue;
        }
        /* Forward from where it landed: packed bytes from the slot, or
         * the user buffer itself. */
        if (bounced) {
            rc = bufpool_isend(where, piece_len(view.bytes, seg, j), MPI_BYTE, next, TAG, comm,
                               &slot_send[j % (size_t)depth]);
        } else {
            rc = piece_send(&s, j, next, &ring, &reqs, comm);
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
    }
    for (int i = 0; i < depth; i++) {
        if (MPI_REQUEST_NULL != slot_send[i]) {
            int wait_rc = bufpool_wait(&slot_send[i]);
            rc = OMPI_SUCCESS != rc ? rc : wait_rc;
        }
    }

out:
    if (win_open && OMPI_SUCCESS != rc) {
        bufpool_rwin_abort(&win);
    }
    {
        int ring_rc = bufpool_sring_drain(&ring);
        int wait_rc = bufpool_reqs_wait(&reqs);
        rc = OMPI_SUCCESS != rc ? rc : (OMPI_SUCCESS != ring_rc ? ring_rc : wait_rc);
    }
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* scatter_allgather. */

/* Where the blocks of vranks a, a+1, ... start in a message of total bytes
 * cut in blocks of block bytes (the last ones may be short or empty). */
static inline size_t span_off(size_t total, size_t block, int a)
{
    size_t off = (size_t)a * block;
    return off < total ? off : total;
}

static inline size_t span_len(size_t total, size_t block, int a, int b)
{
    return span_off(total, block, b) - span_off(total, block, a);
}

typedef struct sag {
    struct ompi_communicator_t *comm;
    const bufpool_view_t *view;
    size_t seg;
    int depth;                              /* receives in flight without slots */
    bufpool_slots_t send_slots, recv_slots; /* views of one scratch buffer */
    bufpool_reqs_t *reqs;
} sag_t;

/* Send [soff, soff + slen) to dst and receive [roff, roff + rlen) from src
 * (MPI_PROC_NULL: that side is idle), piece by piece. */
static int sag_sendrecv(sag_t *g, size_t soff, size_t slen, int dst, size_t roff, size_t rlen,
                        int src)
{
    piece_stream_t out = {.view = g->view, .first = soff, .bytes = slen, .seg = g->seg};
    piece_stream_t in = {.view = g->view, .first = roff, .bytes = rlen, .seg = g->seg, .peer = src};
    const size_t nout = MPI_PROC_NULL == dst ? 0 : pieces_of(slen, g->seg);
    const size_t nin = MPI_PROC_NULL == src ? 0 : pieces_of(rlen, g->seg);
    const size_t depth = (size_t)(g->recv_slots.n > 0 ? g->recv_slots.n : g->depth);
    bufpool_sring_t ring;
    bufpool_rwin_t win;
    int rc;

    bufpool_sring_init(&ring, &g->send_slots);
    rc = bufpool_rwin_start(&win, g->comm, TAG, &g->recv_slots, depth, nin, piece_describe, &in);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    for (size_t k = 0; k < nout || k < nin; k++) {
        if (k < nout) {
            rc = piece_send(&out, k, dst, &ring, g->reqs, g->comm);
            if (OMPI_SUCCESS != rc) {
                break;
            }
        }
        if (k < nin) {
            void *where;
            bool bounced;
            rc = bufpool_rwin_wait(&win, k, &where);
            if (OMPI_SUCCESS == rc) {
                rc = piece_landed(&in, k, where, &bounced);
            }
            if (OMPI_SUCCESS == rc) {
                rc = bufpool_rwin_release(&win, k);
            }
            if (OMPI_SUCCESS != rc) {
                break;
            }
        }
    }
    if (OMPI_SUCCESS != rc) {
        bufpool_rwin_abort(&win);
    }
    /* Bounced sends leave the slots free for the next step. */
    int ring_rc = bufpool_sring_drain(&ring);
    return OMPI_SUCCESS != rc ? rc : ring_rc;
}

static int bcast_scatter_allgather(void *buf, size_t count, struct ompi_datatype_t *dtype, int root,
                                   const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                                   bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const int v = (rank - root + p) % p;
    /* Send and receive sides each need a slot: with a depth of 1 the
     * segment shrinks so that both fit the bound. */
    const size_t seg = bufpool_segment_bytes_for(plan->seg_bytes, plan->depth, 2);
    /* Receives posted per step: within half of a bound. */
    const int depth = (int)bufpool_window_bounded((size_t)plan->depth, plan->max_requests);
    bufpool_view_t view;
    bufpool_slots_t slots = {0};
    bufpool_reqs_t reqs;
    int rc;

    bufpool_view_init(&view, buf, count, dtype);
    const size_t total = view.bytes;
    const size_t block = (total + (size_t)p - 1) / (size_t)p;
    /* Pieces start at multiples of block plus multiples of seg. */
    const bool direct =
        bufpool_view_all_direct(&view, seg) && bufpool_view_all_direct(&view, block);
    const int nslots = direct ? 0 : (depth < 2 ? 2 : depth);
    rc = bufpool_slots_get(&slots, nslots, seg, 0);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    bufpool_reqs_init(&reqs, state, comm);
    bufpool_reqs_bound(&reqs, bufpool_sends_bounded((size_t)depth, plan->max_requests));
    sag_t g = {.comm = comm, .view = &view, .seg = seg, .depth = depth, .reqs = &reqs};
    g.send_slots = bufpool_slots_view(&slots, 0, nslots / 2);
    g.recv_slots = bufpool_slots_view(&slots, nslots / 2, nslots - nslots / 2);

    /* Scatter: my subtree's blocks from my parent, then each child's. */
    const int sz = bufpool_bmtree_size(v, p);
    if (0 != v) {
        int parent = bufpool_vrank_to_rank(bufpool_bmtree_parent(v), root, p);
        rc = sag_sendrecv(&g, 0, 0, MPI_PROC_NULL, span_off(total, block, v),
                          span_len(total, block, v, v + sz), parent);
    }
    int kids[BUFPOOL_BMTREE_MAX_KIDS];
    for (int k = bufpool_bmtree_kids(v, p, kids) - 1; k >= 0 && OMPI_SUCCESS == rc; k--) {
        int c = kids[k], csz = bufpool_bmtree_size(c, p);
        rc = sag_sendrecv(&g, span_off(total, block, c), span_len(total, block, c, c + csz),
                          bufpool_vrank_to_rank(c, root, p), 0, 0, MPI_PROC_NULL);
    }
    if (OMPI_SUCCESS == rc) {
        rc = bufpool_reqs_wait(&reqs);
    }

    /* Ring allgather: step s passes block v-s on and takes block v-s-1.
     * The root has every block already: nothing goes to it (its buffer is
     * never written, and at 2 ranks the ring's second direction, half the
     * message sent for nothing, would double the step). */
    const int next = v + 1 < p ? bufpool_vrank_to_rank(v + 1, root, p) : MPI_PROC_NULL;
    const int prev = 0 != v ? bufpool_vrank_to_rank(v - 1, root, p) : MPI_PROC_NULL;
    for (int step = 0; step < p - 1 && OMPI_SUCCESS == rc; step++) {
        int sb = (v - step + p) % p, rb = (v - step - 1 + 2 * p) % p;
        rc = sag_sendrecv(&g, span_off(total, block, sb), span_len(total, block, sb, sb + 1), next,
                          span_off(total, block, rb), span_len(total, block, rb, rb + 1), prev);
    }

    rc = bufpool_reqs_finish(&reqs, rc);
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */

int bufpool_run_bcast(const bufpool_args_t *a, const bufpool_call_t *call,
                      const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                      bufpool_comm_state_t *state)
{
    void *buf = a->rbuf;
    switch (plan->alg) {
        case BUFPOOL_BCAST_BINOMIAL:
            return bcast_binomial(buf, (int)a->count, a->dtype, call->bytes, a->root,
                                  plan->max_requests, comm, state);
        case BUFPOOL_BCAST_LINEAR:
            return bcast_linear(buf, (int)a->count, a->dtype, call->bytes, a->root,
                                plan->max_requests, comm, state);
        case BUFPOOL_BCAST_CHAIN:
            return bcast_chain(buf, a->count, a->dtype, a->root, plan, comm, state);
        default:
            return bcast_scatter_allgather(buf, a->count, a->dtype, a->root, plan, comm, state);
    }
}
