/*
 * MPI_Barrier's point-to-point form: the dissemination barrier (Hensgen,
 * Finkel and Manber, 1988).  In round k = 1, 2, 4, ... < p every rank
 * sends an empty message to rank + k and receives one from rank - k
 * (mod p): after ceil(log2 p) rounds every rank has heard, directly or
 * through others, from every rank, for any p.
 *
 * bufpool's barrier is the node algorithm (coll_bufpool_node.c); this runs
 * only in its place when the communicator's shared segment could not be
 * had (on every rank alike), so that a barrier the plan gave to bufpool is
 * never handed back to the previous module halfway.  It moves no data and
 * needs no scratch.
 */
#include "coll_bufpool_run.h"
#include "coll_bufpool_pipeline.h"

#include "ompi/mca/coll/base/coll_tags.h"

int bufpool_run_barrier(struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    const int p = ompi_comm_size(comm), me = ompi_comm_rank(comm);
    const int tag = MCA_COLL_BASE_TAG_BARRIER;
    bufpool_reqs_t reqs;
    bufpool_reqs_init(&reqs, state, comm);
    int rc = OMPI_SUCCESS;
    for (int k = 1; k < p && OMPI_SUCCESS == rc; k <<= 1) {
        rc = bufpool_reqs_recv(&reqs, NULL, 0, MPI_BYTE, (me - k + p) % p, tag);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_reqs_send(&reqs, NULL, 0, MPI_BYTE, (me + k) % p, tag);
        }
        rc = bufpool_reqs_finish(&reqs, rc);
    }
    return rc;
}
