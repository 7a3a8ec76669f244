/*
 * What bufpool's algorithms keep per communicator (bufpool_comm_state_t):
 * owned by the communicator's module, handed down to every algorithm in
 * place of the module, so that the algorithms need nothing of the MCA
 * layer above them.
 */
#ifndef MCA_COLL_BUFPOOL_STATE_H
#define MCA_COLL_BUFPOOL_STATE_H

#include "ompi_config.h"

#include <stddef.h>
#include <stdint.h>

#include "ompi/communicator/communicator.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

struct bufpool_hier_topo;
struct bufpool_params;

/* Where a node segment lives in the state (coll_bufpool_node_segment.c): the
 * segment, NULL until set up or when it could not be; the phase of its
 * set-up; the sequence number of the last call that took one. */
typedef struct bufpool_node_home {
    struct bufpool_node *node;
    uint64_t phase;
    uint64_t seq;
    /* A persistent request's bytes per rank (its call's: the same at every
     * start and on every rank), to which its chunk segment is cut; 0 for
     * the communicator's, which calls of every size share. */
    size_t fit_bytes;
} bufpool_node_home_t;

/* The node segments one call uses: of its whole communicator (the node
 * algorithms, coll_bufpool_node_segment.c), and of the ranks of its host
 * (allreduce hier_node: hier->local).  The communicator's state holds one
 * pair for its blocking and nonblocking calls; a persistent request has a
 * pair of its own (bufpool_node_run says why). */
typedef struct bufpool_node_homes {
    bufpool_node_home_t all;
    bufpool_node_home_t host;
} bufpool_node_homes_t;

typedef struct bufpool_comm_state {
    /* Requests of one blocking call.  MPI forbids two blocking collectives
     * at once on one communicator, so they are kept from call to call
     * instead of allocated per call (a task has its own). */
    ompi_request_t **req_cache;
    size_t req_cache_cap;
    /* A second array, for a stream that keeps its own bounded set while
     * the call's main set is in use (bufpool_reqs_init_aux). */
    ompi_request_t **aux_req_cache;
    size_t aux_req_cache_cap;
    /* Where its ranks run, for allreduce hier (coll_bufpool_hier.c): built
     * at the first hier call, published with a compare-and-swap. */
    struct bufpool_hier_topo *hier;
    /* Host index of every rank of comm, the same on every rank (supplied by
     * the component: the launch's host names, or its test map); returns the
     * number of hosts (0: not known, -1: out of memory) and the most ranks
     * on one host. */
    int (*host_ids)(struct ompi_communicator_t *comm, int *host, int *max_ppn);
    /* The node segments of its blocking and nonblocking calls. */
    bufpool_node_homes_t node;
    /* coll_bufpool_node_max_bytes and _node_cold_calls (see there). */
    size_t node_max_bytes;
    uint64_t node_cold_calls;
    /* coll_bufpool_node_flat_max: above it the small reductions and the
     * barrier go through groups (rank 0's value decides, coll_bufpool_node_segment.c). */
    int node_flat_max;
    /* Testing (coll_bufpool_test_node_l3): the L3 this process says it is
     * bound within, instead of sysfs's (-1: none); below -1: sysfs's. */
    long node_test_l3;
    /* Testing (coll_bufpool_test_node_fail): this rank of the communicator
     * fails to have the segment; -1: none. */
    int node_fail_rank;
    int node_fail_chunk_rank; /* the same for the chunk segment */
    /* coll_bufpool_node_cma, and for testing the rank whose single-copy
     * probe fails (coll_bufpool_test_node_no_cma; -1: none). */
    bool node_cma;
    int node_no_cma_rank;
    /* coll_bufpool_node_proc_link, and for testing the rank of each
     * segment's ranks that refuses rank 0's link
     * (coll_bufpool_test_node_refuse_link; -1: none). */
    bool node_proc_link;
    int node_refuse_link_rank;
    /* The component's parameters, for its messages (bufpool_params_show:
     * its help file on every Open MPI, 6.0 included). */
    const struct bufpool_params *params;
} bufpool_comm_state_t;

void bufpool_comm_state_init(bufpool_comm_state_t *state,
                             int (*host_ids)(struct ompi_communicator_t *, int *, int *));
void bufpool_comm_state_fini(bufpool_comm_state_t *state);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_STATE_H */
