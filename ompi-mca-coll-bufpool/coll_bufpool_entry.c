/*
 * The entry path of every bufpool collective: the preamble they share
 * (emptiness, min_size, forced or auto algorithm, applicability, the
 * explanation and the counters), so that a collective's entry point only
 * describes its call and runs the plan it gets back.
 */
#include "coll_bufpool.h"

#include <stdio.h>
#include <string.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/coll/base/base.h"
#include "ompi/op/op.h"
#include "opal/util/output.h"

#define COMPONENT (&mca_coll_bufpool_component)

/* Collectives whose empty call still goes through selection and is counted
 * (as it always has); the others (reductions and scans) return at once. */
static const bool empty_call_counted[BUFPOOL_NCOLLS] = {
    [BUFPOOL_COLL_bcast] = true,  [BUFPOOL_COLL_allgather] = true, [BUFPOOL_COLL_alltoall] = true,
    [BUFPOOL_COLL_gather] = true, [BUFPOOL_COLL_scatter] = true,
};

static void explain(bufpool_coll_id_t id, const char *name, const bufpool_plan_t *plan,
                    size_t bytes, struct ompi_communicator_t *comm)
{
    const char *alg =
        plan->alg < 0 ? "previous module" : mca_coll_bufpool_algorithm_names[id][plan->alg];
    char forced[64];
    const char *why = plan->why;
    if (0 == strcmp(why, "forced")) {
        snprintf(forced, sizeof(forced), "forced by coll_bufpool_%s_algorithm",
                 mca_coll_bufpool_coll_names[id]);
        why = forced;
    }
    /* Framework verbosity, as the other coll components log theirs. */
    opal_output_verbose(20, ompi_coll_base_framework.framework_output,
                        "coll:bufpool: %s of %zu bytes per rank on %s (%d ranks): %s (%s)", name,
                        bytes, comm->c_name, ompi_comm_size(comm), alg, why);
    if (COMPONENT->verbose >= 2) {
        opal_output(0, "coll_bufpool: %s of %zu bytes per rank on %s (%d ranks, rank %d): %s (%s)",
                    name, bytes, comm->c_name, ompi_comm_size(comm), ompi_comm_rank(comm), alg,
                    why);
    }
}

bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm)
{
    size_t type_size;
    ptrdiff_t gap;
    ompi_datatype_type_size(dtype, &type_size);
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .count = count,
                                 .bytes = type_size * count,
                                 .span = (size_t)opal_datatype_span(&dtype->super, count, &gap),
                                 .commute = ompi_op_is_commute(op),
                                 .in_place = in_place};
    return call;
}

bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm)
{
    size_t type_size;
    ompi_datatype_type_size(dtype, &type_size);
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .bytes = type_size * (size_t)(count > 0 ? count : 0),
                                 .commute = true,
                                 .in_place = in_place};
    return call;
}

bufpool_entry_t bufpool_enter(bufpool_coll_id_t id, const mca_coll_bufpool_module_t *module,
                              const bufpool_call_t *in_call, struct ompi_communicator_t *comm,
                              bufpool_plan_t *plan)
{
    return bufpool_enter_form(id, mca_coll_bufpool_coll_names[id], COMPONENT->calls, module,
                              in_call, comm, plan);
}

bufpool_entry_t bufpool_enter_form(bufpool_coll_id_t id, const char *name, uint64_t *served,
                                   const mca_coll_bufpool_module_t *module,
                                   const bufpool_call_t *in_call, struct ompi_communicator_t *comm,
                                   bufpool_plan_t *plan)
{
    const bufpool_tuning_t *tuning = &COMPONENT->tuning;
    /* The hosts the communicator spans were counted once, when the module
     * was enabled; every decision sees them. */
    bufpool_call_t with_hosts = *in_call;
    with_hosts.hosts = module->hosts;
    with_hosts.max_ppn = module->max_ppn;
    const bufpool_call_t *call = &with_hosts;

    if (!empty_call_counted[id] && 0 == call->count) {
        return BUFPOOL_ENTRY_DONE;
    }
    if (call->bytes < tuning->min_size && !call->previous_unsafe) {
        bufpool_plan_init(plan, tuning, BUFPOOL_ALG_PREVIOUS);
        plan->why = "below coll_bufpool_min_size";
    } else {
        bufpool_decide[id](call, tuning, COMPONENT->coll[id].algorithm, plan);
    }
    explain(id, name, plan, call->bytes, comm);
    if (plan->alg < 0) {
        return BUFPOOL_ENTRY_PREVIOUS;
    }
    (void)__atomic_fetch_add(&served[id], 1, __ATOMIC_RELAXED);
    return empty_call_counted[id] && 0 == call->bytes ? BUFPOOL_ENTRY_DONE : BUFPOOL_ENTRY_RUN;
}
