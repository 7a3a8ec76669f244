/*
 * The description of a call and the dispatch to its family's algorithms,
 * shared by every form of every collective (coll_bufpool_run.h).
 */
#include "coll_bufpool_run.h"
#include "coll_bufpool_node.h"

bufpool_call_t bufpool_describe(bufpool_coll_id_t id, const bufpool_args_t *a,
                                struct ompi_communicator_t *comm)
{
    const bool in_place = MPI_IN_PLACE == a->sbuf;
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            return bufpool_reduction_call(a->count, a->dtype, a->op, in_place, comm);
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
        case BUFPOOL_COLL_reduce:
            /* MPI_IN_PLACE is each rank's own choice for scan and exscan,
             * and the root's alone for reduce (MPI requires it of all ranks
             * only for allreduce, reduce_scatter(_block), allgather and
             * alltoall): not part of the decision. */
            return bufpool_reduction_call(a->count, a->dtype, a->op, false, comm);
        case BUFPOOL_COLL_reduce_scatter:
        case BUFPOOL_COLL_reduce_scatter_block:
            return bufpool_reduce_scatter_call(id, a, comm);
        case BUFPOOL_COLL_bcast:
            return bufpool_block_call((bufpool_count_t)a->count, a->dtype, false, comm);
        case BUFPOOL_COLL_allgather:
            return bufpool_block_call(a->rcount, a->rdtype, false, comm);
        case BUFPOOL_COLL_alltoall:
            /* MPI_IN_PLACE is all or none for alltoall. */
            return bufpool_block_call(a->rcount, a->rdtype, in_place, comm);
        case BUFPOOL_COLL_barrier:
            return (bufpool_call_t){.comm_size = ompi_comm_size(comm), .commute = true};
        case BUFPOOL_COLL_gather:
        case BUFPOOL_COLL_scatter:
        default:
            return bufpool_rooted_call(BUFPOOL_COLL_gather == id, a, comm);
    }
}

int bufpool_run(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_call_t *call,
                const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                bufpool_comm_state_t *state, bufpool_node_homes_t *homes)
{
    if (NULL == homes) {
        homes = &state->node;
    }
    bufpool_plan_t fallback;
    if (OPAL_UNLIKELY(bufpool_is_node_alg(id, plan->alg))) {
        int rc = bufpool_node_run(id, plan, a, comm, state, &homes->all);
        if (BUFPOOL_NODE_UNAVAILABLE != rc) {
            return rc;
        }
        /* No segment on this communicator (on every rank alike). */
        fallback = *plan;
        fallback.alg = bufpool_node_fallback(id, call, plan);
        plan = &fallback;
    }
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            return bufpool_run_allreduce(a, plan, comm, state, &homes->host);
        case BUFPOOL_COLL_reduce:
            return bufpool_run_reduce(a, call, plan, comm, state);
        case BUFPOOL_COLL_reduce_scatter:
        case BUFPOOL_COLL_reduce_scatter_block:
            return bufpool_run_reduce_scatter(id, a, call, plan, comm, state);
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
            return bufpool_run_scan(BUFPOOL_COLL_exscan == id, a, plan, comm, state);
        case BUFPOOL_COLL_bcast:
            return bufpool_run_bcast(a, call, plan, comm, state);
        case BUFPOOL_COLL_allgather:
            return bufpool_run_allgather(a, call, plan, comm, state);
        case BUFPOOL_COLL_alltoall:
            return bufpool_run_alltoall(a, call, plan, comm, state);
        case BUFPOOL_COLL_barrier:
            return bufpool_run_barrier(comm, state);
        case BUFPOOL_COLL_gather:
        case BUFPOOL_COLL_scatter:
        default:
            return bufpool_run_rooted(BUFPOOL_COLL_gather == id, a, call, plan, comm, state);
    }
}
