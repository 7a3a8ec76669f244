/*
 * The description of a call and the dispatch to its family's algorithms,
 * shared by every form of every collective (coll_bufpool_run.h).
 */
#include "coll_bufpool_run.h"

#include "ompi/op/op.h"

bufpool_call_t bufpool_describe(bufpool_coll_id_t id, const bufpool_args_t *a,
                                struct ompi_communicator_t *comm)
{
    const bool in_place = MPI_IN_PLACE == a->sbuf;
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            return bufpool_reduction_call(a->count, a->dtype, a->op, in_place, comm);
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
            /* MPI_IN_PLACE is each rank's own choice for scan and exscan
             * (MPI requires it of all ranks only for allreduce,
             * reduce_scatter(_block), allgather and alltoall): not part of
             * the decision. */
            return bufpool_reduction_call(a->count, a->dtype, a->op, false, comm);
        case BUFPOOL_COLL_reduce:
            /* MPI_IN_PLACE is the root's alone: not part of the decision. */
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
        case BUFPOOL_COLL_gather:
        case BUFPOOL_COLL_scatter:
        default:
            return bufpool_rooted_call(BUFPOOL_COLL_gather == id, a, comm);
    }
}

int bufpool_run(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_call_t *call,
                const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                mca_coll_bufpool_module_t *module)
{
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            return bufpool_run_allreduce(a, plan, comm, module);
        case BUFPOOL_COLL_reduce:
            return bufpool_run_reduce(a, call, plan, comm, module);
        case BUFPOOL_COLL_reduce_scatter:
        case BUFPOOL_COLL_reduce_scatter_block:
            return bufpool_run_reduce_scatter(id, a, call, plan, comm, module);
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
            return bufpool_run_scan(BUFPOOL_COLL_exscan == id, a, plan, comm, module);
        case BUFPOOL_COLL_bcast:
            return bufpool_run_bcast(a, call, plan, comm, module);
        case BUFPOOL_COLL_allgather:
            return bufpool_run_allgather(a, call, plan, comm, module);
        case BUFPOOL_COLL_alltoall:
            return bufpool_run_alltoall(a, call, plan, comm, module);
        case BUFPOOL_COLL_gather:
        case BUFPOOL_COLL_scatter:
        default:
            return bufpool_run_rooted(BUFPOOL_COLL_gather == id, a, call, plan, comm, module);
    }
}

bool bufpool_args_empty(bufpool_coll_id_t id, const bufpool_args_t *a,
                        struct ompi_communicator_t *comm)
{
    switch (id) {
        case BUFPOOL_COLL_allreduce:
        case BUFPOOL_COLL_reduce:
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
        case BUFPOOL_COLL_reduce_scatter_block:
            return 0 == a->count;
        case BUFPOOL_COLL_reduce_scatter:
            return 0 == bufpool_counts_total(a->rcounts, ompi_comm_size(comm));
        default:
            return false; /* an empty data movement is served (and counted) */
    }
}

size_t bufpool_args_key(bufpool_coll_id_t id, const bufpool_args_t *a,
                        struct ompi_communicator_t *comm, int *cls)
{
    const bool in_place = MPI_IN_PLACE == a->sbuf;
    switch (id) {
        case BUFPOOL_COLL_allreduce:
            *cls = BUFPOOL_CLASS(ompi_op_is_commute(a->op), in_place);
            return a->dtype->super.size * a->count;
        case BUFPOOL_COLL_scan:
        case BUFPOOL_COLL_exscan:
        case BUFPOOL_COLL_reduce:
            /* MPI_IN_PLACE is the root's alone (reduce) or each rank's own
             * (scan, exscan): not part of the decision. */
            *cls = BUFPOOL_CLASS(ompi_op_is_commute(a->op), false);
            return a->dtype->super.size * a->count;
        case BUFPOOL_COLL_reduce_scatter:
            *cls = BUFPOOL_CLASS(ompi_op_is_commute(a->op), in_place);
            return a->dtype->super.size * bufpool_counts_total(a->rcounts, ompi_comm_size(comm));
        case BUFPOOL_COLL_reduce_scatter_block:
            *cls = BUFPOOL_CLASS(ompi_op_is_commute(a->op), in_place);
            return a->dtype->super.size * a->count * (size_t)ompi_comm_size(comm);
        case BUFPOOL_COLL_bcast:
            *cls = BUFPOOL_CLASS(true, false);
            return a->dtype->super.size * a->count;
        case BUFPOOL_COLL_allgather:
            *cls = BUFPOOL_CLASS(true, false);
            return bufpool_bytes(a->rdtype, a->rcount);
        case BUFPOOL_COLL_alltoall:
            *cls = BUFPOOL_CLASS(true, in_place);
            return bufpool_bytes(a->rdtype, a->rcount);
        case BUFPOOL_COLL_gather:
        case BUFPOOL_COLL_scatter:
        default:
            *cls = BUFPOOL_CLASS(true, false);
            return bufpool_rooted_bytes(BUFPOOL_COLL_gather == id, a->scount, a->sdtype, a->rcount,
                                        a->rdtype, a->root, comm);
    }
}

const bufpool_range_t *bufpool_args_range(bufpool_coll_id_t id, int form,
                                          const mca_coll_bufpool_module_t *module,
                                          const bufpool_args_t *a, struct ompi_communicator_t *comm,
                                          size_t *bytes)
{
    int cls;
    *bytes = bufpool_args_key(id, a, comm, &cls);
    return bufpool_range(module, form, id, cls, *bytes);
}

int bufpool_serve(bufpool_coll_id_t id, const bufpool_args_t *a, struct ompi_communicator_t *comm,
                  mca_coll_bufpool_module_t *module, bool *hand_back)
{
    const int form = BUFPOOL_FORM_BLOCKING;
    size_t bytes;
    const bufpool_range_t *range = bufpool_args_range(id, form, module, a, comm, &bytes);
    *hand_back = bufpool_hands_back(module, form, id, range, bytes, comm);
    if (*hand_back) {
        return OMPI_SUCCESS;
    }
    const bufpool_call_t call = bufpool_describe(id, a, comm);
    bufpool_plan_t plan;
    switch (bufpool_enter(id, form, module, &call, &range->choice, comm, &plan)) {
        case BUFPOOL_ENTRY_PREVIOUS:
            *hand_back = true;
            return OMPI_SUCCESS;
        case BUFPOOL_ENTRY_DONE:
            return OMPI_SUCCESS;
        default:
            return bufpool_run(id, a, &call, &plan, comm, module);
    }
}
