/*
 * coll/bufpool's nonblocking (MPI_I<coll>) and persistent (MPI_<coll>_init,
 * MPIX_<coll>_init on Open MPI 4.1) collectives: coll_bufpool_nb.c.
 *
 * Each runs the blocking collective's own algorithm (bufpool_run) as a
 * task on a fiber of its own (runtime/coll_bufpool_task.h); their entry
 * points are declared in coll_bufpool.h.  See docs/collectives.md,
 * "Nonblocking and persistent collectives".
 */
#ifndef MCA_COLL_BUFPOOL_NB_H
#define MCA_COLL_BUFPOOL_NB_H

#include "coll_bufpool.h"

BEGIN_C_DECLS

/* The module's part (coll_bufpool_module.c calls these): at comm_query,
 * offer the entry points the parameters enable; at enable, save (and
 * retain) the previous module's nonblocking and persistent functions, or
 * leave ours out where there is none to hand calls back to (and on Open
 * MPI 6 install ours); at disable (Open MPI 6) put the saved ones back; at
 * destruction release them. */
void bufpool_nb_module_query(mca_coll_bufpool_module_t *module);
void bufpool_nb_module_enable(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm);
void bufpool_nb_module_disable(mca_coll_bufpool_module_t *module, struct ompi_communicator_t *comm);
void bufpool_nb_module_destruct(mca_coll_bufpool_module_t *module);

/* The component's part (coll_bufpool_component.c): MPI_T variables of the
 * tasks' stacks, the finalize report, and what is cached at close. */
void bufpool_nb_open(void);
void bufpool_nb_register_pvars(void);
void bufpool_nb_report(void);
void bufpool_nb_close(void);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_NB_H */
