/*
 * Hierarchy-aware allreduce (coll_bufpool_hier.c): node-local reduce,
 * leaders' recursive doubling (coll_bufpool_group.h), node-local bcast.
 */
#ifndef MCA_COLL_BUFPOOL_HIER_H
#define MCA_COLL_BUFPOOL_HIER_H

#include "coll_bufpool_group.h"
#include "coll_bufpool_pipeline.h"

BEGIN_C_DECLS

/* Where the ranks of a communicator run, for hier: built at its first hier
 * call, freed with the module (bufpool_hier_topo_free). */
typedef struct bufpool_hier_topo {
    bufpool_group_t local;   /* the ranks on my host, ascending; member 0 leads */
    bufpool_group_t leaders; /* every host's leader, ascending; me = -1 if I do not lead */
    /* Where every host has as many ranks (uniform): on every host, the rank
     * of my index on mine, hosts in leaders' order (me: my host's). */
    bool uniform;
    bufpool_group_t peers;
    int *ranks; /* storage of the three lists */
} bufpool_hier_topo_t;

void bufpool_hier_topo_free(bufpool_hier_topo_t *topo);

/* allreduce hier, or hier_node (plan->alg). */
int bufpool_allreduce_hier(const void *sbuf, void *rbuf, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                           bufpool_comm_state_t *state, bufpool_node_home_t *host_home);

/* hier_node: hier with its host phases through a shared segment of the
 * host's ranks (coll_bufpool_node.h).  Where every host has as many ranks
 * (uniform): in node_rsag's chunk rounds, every rank of a host reduces its
 * slice of the round, exchanges it by recursive doubling with the ranks of
 * its index on the other hosts (peers), in the segment itself where the
 * packed bytes are the layout, and every rank copies every exchanged slice
 * out (bufpool_node_host_allreduce); a host without its segments runs the
 * same rounds and exchanges with its own phases point to point.  Elsewhere:
 * the host's inputs reduced to its leader in node_rsag's chunk rounds
 * (bufpool_node_host_reduce), the leaders' exchange as hier's, the result
 * back to the host in bcast's chunk rounds (_bcast); a host without its
 * segments runs hier's own host phases, the leaders exchanging the same
 * messages either way.  A host where the rounds cannot serve (one rank,
 * fewer elements than ranks, elements above 64 KiB / ranks; the same on
 * every host where they are uniform) runs hier's.  Commutative operations
 * only. */

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_HIER_H */
