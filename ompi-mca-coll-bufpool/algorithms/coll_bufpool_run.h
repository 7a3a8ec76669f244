/*
 * The top of bufpool's algorithm layer: what the decision sees of a call
 * (bufpool_describe: bufpool_call_t, from its bufpool_args_t,
 * coll_bufpool_args.h) and the dispatch every form ends in (bufpool_run).  The MCA layer above calls these for the blocking entry
 * points and for the tasks of the nonblocking and persistent ones: the same
 * call description goes to the same decision, and the same algorithm
 * functions run, whichever the form.
 */
#ifndef MCA_COLL_BUFPOOL_RUN_H
#define MCA_COLL_BUFPOOL_RUN_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "coll_bufpool_args.h"
#include "coll_bufpool_state.h"

BEGIN_C_DECLS

/* What the decision sees of the call (bufpool_call_t), from the arguments
 * alone: the same on every rank and for every form. */
bufpool_call_t bufpool_describe(bufpool_coll_id_t id, const bufpool_args_t *a,
                                struct ompi_communicator_t *comm);
/* Run plan->alg on the arguments (call: what bufpool_describe gave).
 * homes: the node segments the call uses (NULL: the communicator's, in
 * state; a persistent request's own, see bufpool_node_run). */
int bufpool_run(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_call_t *call,
                const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                bufpool_comm_state_t *state, bufpool_node_homes_t *homes);

/* The call descriptions that need a family's knowledge (their files). */
bufpool_call_t bufpool_rooted_call(bool gather, const bufpool_args_t *a,
                                   struct ompi_communicator_t *comm);
bufpool_call_t bufpool_reduce_scatter_call(bufpool_coll_id_t id, const bufpool_args_t *a,
                                           struct ompi_communicator_t *comm);

/* Per family (their files).  host_home: allreduce hier_node's host
 * segment (bufpool_run's homes). */
int bufpool_run_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                          struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                          bufpool_node_home_t *host_home);
int bufpool_run_reduce(const bufpool_args_t *a, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state);
int bufpool_run_reduce_scatter(bufpool_coll_id_t id, const bufpool_args_t *a,
                               const bufpool_call_t *call, const bufpool_plan_t *plan,
                               struct ompi_communicator_t *comm, bufpool_comm_state_t *state);
int bufpool_run_scan(bool exclusive, const bufpool_args_t *a, const bufpool_plan_t *plan,
                     struct ompi_communicator_t *comm, bufpool_comm_state_t *state);
int bufpool_run_bcast(const bufpool_args_t *a, const bufpool_call_t *call,
                      const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                      bufpool_comm_state_t *state);
int bufpool_run_allgather(const bufpool_args_t *a, const bufpool_call_t *call,
                          const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                          bufpool_comm_state_t *state);
int bufpool_run_alltoall(const bufpool_args_t *a, const bufpool_call_t *call,
                         const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                         bufpool_comm_state_t *state);
int bufpool_run_rooted(bool gather, const bufpool_args_t *a, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       bufpool_comm_state_t *state);
/* barrier's point-to-point form, in place of the node algorithm only
 * (coll_bufpool_barrier.c). */
int bufpool_run_barrier(struct ompi_communicator_t *comm, bufpool_comm_state_t *state);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_RUN_H */
