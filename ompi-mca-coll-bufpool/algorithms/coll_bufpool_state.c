/*
 * A communicator's state for bufpool's algorithms (coll_bufpool_state.h).
 */
#include "coll_bufpool_state.h"
#include "coll_bufpool_hier.h"
#include "coll_bufpool_node.h"

#include <stdlib.h>

void bufpool_comm_state_init(bufpool_comm_state_t *state,
                             int (*host_ids)(struct ompi_communicator_t *, int *, int *))
{
    state->req_cache = state->aux_req_cache = NULL;
    state->req_cache_cap = state->aux_req_cache_cap = 0;
    state->hier = NULL;
    state->host_ids = host_ids;
    state->node = (bufpool_node_homes_t){{0}};
    state->node_fail_rank = state->node_fail_chunk_rank = state->node_no_cma_rank = -1;
    state->node_test_l3 = -2;
}

void bufpool_comm_state_fini(bufpool_comm_state_t *state)
{
    free(state->req_cache);
    free(state->aux_req_cache);
    state->req_cache = state->aux_req_cache = NULL;
    state->req_cache_cap = state->aux_req_cache_cap = 0;
    /* (The host's segment before the map of hosts it came from.) */
    bufpool_node_free(state->node.all.node);
    bufpool_node_free(state->node.host.node);
    state->node = (bufpool_node_homes_t){{0}};
    bufpool_hier_topo_free(state->hier);
    state->hier = NULL;
}
