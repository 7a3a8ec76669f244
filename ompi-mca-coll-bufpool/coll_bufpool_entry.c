/*
 * The entry path of every bufpool collective, in every form (MPI_<coll>,
 * MPI_I<coll>, MPI_<coll>_init).  A call's entry point reads its byte count
 * and call class, finds its range in the size map its communicator
 * resolved at enable (coll_bufpool_rules.h) and, when that range hands it
 * back, calls the previous module at once (bufpool_hands_back, inline in
 * coll_bufpool.h): no rule, string or argument is looked at.  What is left
 * is here: the plan of a call bufpool may serve, the explanation and the
 * counters.
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

void bufpool_explain(bufpool_coll_id_t id, int form, int alg, const char *why, size_t bytes,
                     struct ompi_communicator_t *comm)
{
    const char *name = alg < 0 ? "previous module" : bufpool_algorithm_names[id][alg];
    char forced[64], coll[48];
    if (0 == strcmp(why, "forced")) {
        snprintf(forced, sizeof(forced), "forced by coll_bufpool_%s_algorithm",
                 bufpool_coll_names[id]);
        why = forced;
    }
    /* The form's MPI name: iallreduce, allreduce_init. */
    snprintf(coll, sizeof(coll), "%s%s%s", BUFPOOL_FORM_NONBLOCKING == form ? "i" : "",
             bufpool_coll_names[id], BUFPOOL_FORM_PERSISTENT == form ? "_init" : "");
    /* Framework verbosity, as the other coll components log theirs. */
    opal_output_verbose(20, ompi_coll_base_framework.framework_output,
                        "coll:bufpool: %s of %zu bytes per rank on %s (%d ranks): %s (%s)", coll,
                        bytes, comm->c_name, ompi_comm_size(comm), name, why);
    if (COMPONENT->verbose >= 2) {
        opal_output(0, "coll_bufpool: %s of %zu bytes per rank on %s (%d ranks, rank %d): %s (%s)",
                    coll, bytes, comm->c_name, ompi_comm_size(comm), ompi_comm_rank(comm), name,
                    why);
    }
}

const char *bufpool_choice_why(bufpool_coll_id_t id, const bufpool_choice_t *choice)
{
    (void)id;
    switch (choice->source) {
        case BUFPOOL_SOURCE_ROW:
            return choice->rule->why;
        case BUFPOOL_SOURCE_MIN_SIZE:
            return "below coll_bufpool_min_size";
        case BUFPOOL_SOURCE_FORCED:
            return "forced";
        case BUFPOOL_SOURCE_GUARD:
            return choice->note;
        default:
            return "auto";
    }
}

bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm)
{
    /* Signature bytes, not the layout's span: ranks may describe the same
     * elements with different extents, and all must reach the same plan. */
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .count = count,
                                 .bytes = dtype->super.size * count,
                                 .commute = ompi_op_is_commute(op),
                                 .in_place = in_place};
    return call;
}

bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm)
{
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .bytes = bufpool_bytes(dtype, count),
                                 .commute = true,
                                 .in_place = in_place};
    return call;
}

bufpool_entry_t bufpool_enter(bufpool_coll_id_t id, int form, mca_coll_bufpool_module_t *module,
                              const bufpool_call_t *in_call, const bufpool_choice_t *choice,
                              struct ompi_communicator_t *comm, bufpool_plan_t *plan)
{
    /* The hosts the communicator spans were counted once, when the module
     * was enabled; every decision sees them. */
    bufpool_call_t call = *in_call;
    call.hosts = module->hosts;
    call.max_ppn = module->max_ppn;

    bufpool_plan[id](&call, &COMPONENT->tuning, choice, plan);
    if (OPAL_UNLIKELY(module->explain)) {
        bufpool_explain(id, form, plan->alg, plan->why, call.bytes, comm);
    }
    if (plan->alg < 0) {
        bufpool_module_count(&module->fallbacks[form][id]);
        return BUFPOOL_ENTRY_PREVIOUS;
    }
    bufpool_module_count(&module->calls[form][id]);
    return empty_call_counted[id] && 0 == call.bytes ? BUFPOOL_ENTRY_DONE : BUFPOOL_ENTRY_RUN;
}
