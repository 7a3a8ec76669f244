/*
 * MPI_Allgather.
 *
 * Every block moves whole, as one message described with the sender's and
 * the receiver's own datatypes (their signatures match by the standard),
 * so no algorithm here needs scratch or segmenting, whatever the layout:
 * the PML handles non-contiguous datatypes itself.  The own block is
 * copied locally (sdtype to rdtype) while the first transfers are in
 * flight, or after them when large (BUFPOOL_OVERLAP_COPY_MAX), unless
 * MPI_IN_PLACE.
 *
 * ring: p-1 steps; step s passes block r-s to r+1 and takes block r-s-1
 *   from r-1.  Bandwidth-optimal on any p.
 * recursive_doubling: log2(p) steps exchanging 1, 2, 4, ... blocks with
 *   rank r ^ 2^k (power-of-two sizes only).
 * direct: every rank posts all its receives and sends at once; the
 *   transfers run in parallel (on shared memory each receiver copies).
 *
 * Order of blocking waits: ring and recursive_doubling wait only on a
 * sendrecv whose receive was posted before the send, with a partner that
 * is in the same step (recursive doubling) or that sends its step-s block
 * without waiting for anything of step s (ring); direct posts everything
 * before it waits.
 */
#include "coll_bufpool_pack.h"
#include "coll_bufpool_xchg.h"
#include "coll_bufpool_run.h"

#include "ompi/mca/coll/base/coll_tags.h"

#define TAG MCA_COLL_BASE_TAG_ALLGATHER

typedef bufpool_xchg_call_t ag_call_t;

static inline char *ag_block(const ag_call_t *c, int b)
{
    return c->rbuf + (ptrdiff_t)b * c->rblock;
}

static int ag_copy_own(const ag_call_t *c)
{
    if (MPI_IN_PLACE == c->sbuf) {
        return OMPI_SUCCESS;
    }
    return bufpool_local_copy(ag_block(c, c->rank), (size_t)c->rcount, c->rdtype, c->sbuf,
                              (size_t)c->scount, c->sdtype, c->seg_bytes);
}

/* The first step of ring and recursive doubling: my block goes to `to`
 * straight from sbuf while the block of `from` arrives, and my block is
 * copied into rbuf meanwhile (or after, when large).  Copying first and
 * then sending from rbuf costs up to 30% at p = 2 for 4 KiB - 1 MiB (the
 * peer then reads lines this core has just written). */
static int ag_first_step(const ag_call_t *c, struct ompi_communicator_t *comm, int to, int from)
{
    const bool in_place = MPI_IN_PLACE == c->sbuf;
    const void *own = in_place ? ag_block(c, c->rank) : c->sbuf;
    const size_t own_count = (size_t)(in_place ? c->rcount : c->scount);
    struct ompi_datatype_t *own_dtype = in_place ? c->rdtype : c->sdtype;
    ompi_request_t *rreq = MPI_REQUEST_NULL, *sreq = MPI_REQUEST_NULL;
    int rc;

    rc = bufpool_irecv(ag_block(c, from), (size_t)c->rcount, c->rdtype, from, TAG, comm, &rreq);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (c->bytes <= BUFPOOL_INLINE_SEND_MAX) {
        rc = bufpool_send(own, own_count, own_dtype, to, TAG, comm);
    } else {
        rc = bufpool_isend(own, own_count, own_dtype, to, TAG, comm, &sreq);
    }
    const bool overlap = c->bytes <= BUFPOOL_OVERLAP_COPY_MAX;
    if (OMPI_SUCCESS == rc && overlap) {
        rc = ag_copy_own(c);
    }
    int recv_rc = bufpool_wait(&rreq);
    int send_rc = bufpool_wait(&sreq);
    if (OMPI_SUCCESS == rc && !overlap) {
        rc = ag_copy_own(c);
    }
    return OMPI_SUCCESS != rc ? rc : (OMPI_SUCCESS != recv_rc ? recv_rc : send_rc);
}

static int allgather_ring(const ag_call_t *c, struct ompi_communicator_t *comm)
{
    const int next = (c->rank + 1) % c->p, prev = (c->rank - 1 + c->p) % c->p;
    int rc = ag_first_step(c, comm, next, prev);

    for (int step = 1; step < c->p - 1 && OMPI_SUCCESS == rc; step++) {
        int sb = (c->rank - step + c->p) % c->p, rb = (c->rank - step - 1 + c->p) % c->p;
        rc = bufpool_sendrecv(ag_block(c, sb), (size_t)c->rcount, c->rdtype, next, ag_block(c, rb),
                              (size_t)c->rcount, c->rdtype, prev, TAG, comm);
    }
    return rc;
}

static int allgather_recursive_doubling(const ag_call_t *c, struct ompi_communicator_t *comm)
{
    const int partner = c->rank ^ 1;
    int rc = ag_first_step(c, comm, partner, partner);

    for (int mask = 2; mask < c->p && OMPI_SUCCESS == rc; mask <<= 1) {
        int peer = c->rank ^ mask;
        int mine = c->rank & ~(mask - 1), theirs = peer & ~(mask - 1);
        size_t n = (size_t)mask * (size_t)c->rcount;
        rc = bufpool_sendrecv(ag_block(c, mine), n, c->rdtype, peer, ag_block(c, theirs), n,
                              c->rdtype, peer, TAG, comm);
    }
    return rc;
}

static int allgather_direct(const ag_call_t *c, bufpool_comm_state_t *state,
                            struct ompi_communicator_t *comm)
{
    /* My block goes out from sbuf, so that the local copy is not on the
     * critical path, or from rbuf in place. */
    const bool in_place = MPI_IN_PLACE == c->sbuf;
    const bufpool_linear_xchg_t x = bufpool_xchg_linear(
        c, in_place ? ag_block(c, c->rank) : c->sbuf, 0, (size_t)(in_place ? c->rcount : c->scount),
        in_place ? c->rdtype : c->sdtype, in_place ? NULL : c->sbuf, TAG);
    return bufpool_linear_exchange(&x, state, comm);
}

int bufpool_run_allgather(const bufpool_args_t *a, const bufpool_call_t *call,
                          const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                          bufpool_comm_state_t *state)
{
    ag_call_t c;
    bufpool_xchg_call_init(&c, a->sbuf, a->scount, a->sdtype, a->rbuf, a->rcount, a->rdtype, call,
                           plan, comm);
    if (BUFPOOL_ALLGATHER_RECURSIVE_DOUBLING == plan->alg) {
        return allgather_recursive_doubling(&c, comm);
    }
    return BUFPOOL_ALLGATHER_DIRECT == plan->alg ? allgather_direct(&c, state, comm)
                                                 : allgather_ring(&c, comm);
}
