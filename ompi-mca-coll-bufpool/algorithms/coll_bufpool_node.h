/*
 * Node-level collectives (coll_bufpool_node.c): on a communicator whose
 * ranks all run on one host, small messages go through one shared segment
 * per communicator (runtime/coll_bufpool_shm.h) with per-rank sequence
 * words, and no point-to-point message at all once it is set up.
 *
 * The segment is set up by the first call that a plan gives the node
 * algorithm (every rank reaches that plan at the same call): rank 0
 * creates it and sends its name, every rank maps it and reports, rank 0
 * unlinks it and sends the verdict, so that every rank learns alike whether
 * it is there.  When it is not (no /dev/shm, too small, ranks on different
 * hosts after all), every node call of the communicator returns
 * BUFPOOL_NODE_UNAVAILABLE and runs the point-to-point algorithm its
 * collective names as the fallback (bufpool_node_fallback).
 */
#ifndef MCA_COLL_BUFPOOL_NODE_H
#define MCA_COLL_BUFPOOL_NODE_H

#include "coll_bufpool_args.h"
#include "coll_bufpool_state.h"

BEGIN_C_DECLS

/* Not an Open MPI error code: the node segment is not there (on every rank
 * of the communicator alike). */
#define BUFPOOL_NODE_UNAVAILABLE 1

/* What the component publishes of the node algorithms (MPI_T, finalize
 * report). */
typedef struct bufpool_node_counters {
    uint64_t calls;         /* calls that ran over a shared segment        */
    uint64_t fallbacks;     /* node calls run point-to-point: no segment   */
    uint64_t segments;      /* segments mapped now (one per communicator,
                               and per persistent request, that ran one) */
    uint64_t segment_bytes; /* bytes of them                               */
    uint64_t cold_releases; /* chunk segments unmapped when cold           */
    uint64_t single_copy;   /* bcast/allgather calls read straight (CMA)   */
    uint64_t tree_calls;    /* calls that ran in groups (two-level)        */
    uint64_t links_refused; /* set-ups that fell back to a named segment   */
} bufpool_node_counters_t;

extern bufpool_node_counters_t bufpool_node_counters;

/* The point-to-point algorithm that serves in its place. */
int bufpool_node_fallback(bufpool_coll_id_t id, const bufpool_call_t *call,
                          const bufpool_plan_t *plan);

/* Run the node algorithm plan->alg of id (allreduce node_rsag and reduce,
 * bcast, allgather, scan and exscan node above BUFPOOL_NODE_MAX_BYTES:
 * rounds of the plan's segment size through a ring of its depth): OMPI_SUCCESS, an
 * error, or BUFPOOL_NODE_UNAVAILABLE (nothing was done).  home: where
 * the segment lives (the communicator's, state->node.all, or a persistent
 * request's own).  Calls number themselves in the order they start, which
 * MPI makes the same on every rank for blocking and nonblocking calls, not
 * for persistent ones: ranks may start persistent requests in any order
 * (MPI 4.0, "Persistent Collective Operations"), so each persistent request
 * has homes of its own (bufpool_node_homes_t: zeroed at its init, set up
 * by its first start with its own tags, bufpool_node_free'd with it),
 * whose calls are its starts, in order on every rank. */
int bufpool_node_run(bufpool_coll_id_t id, const bufpool_plan_t *plan, const bufpool_args_t *a,
                     struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                     bufpool_node_home_t *home);

/* allreduce hier_node's phases over a segment of the ranks of one host
 * (host: their group, member 0 leading; coll_bufpool_hier.c).  A call
 * reserves two sequence numbers of that segment before anything can wait
 * (bufpool_node_host_reserve: s and s + 1), so that nonblocking calls in
 * flight together number alike on every member whatever order their
 * phases run in.  With s the leader gets the reduction of the members'
 * inputs (a, an allreduce's: in place a member's input is its rbuf) in its
 * rbuf, by node_rsag's chunk rounds (commutative operations, at least
 * host->n elements of at most BUFPOOL_NODE_CHUNK / host->n bytes); with
 * s + 1 the leader's buf goes to every member in bcast's chunk rounds,
 * where a leader's root_error makes every member return that error too.
 * OMPI_SUCCESS, an error, or BUFPOOL_NODE_UNAVAILABLE (nothing done, on
 * every member alike; the reduce then ends s + 1 too).  home: where the
 * host's segment lives (the communicator's state->node.host, or a
 * persistent request's own). */
struct bufpool_group;
uint64_t bufpool_node_host_reserve(bufpool_node_home_t *home);
int bufpool_node_host_reduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                             const struct bufpool_group *host, uint64_t s,
                             struct ompi_communicator_t *comm, bufpool_comm_state_t *state,
                             bufpool_node_home_t *home);
int bufpool_node_host_bcast(void *buf, size_t elems, struct ompi_datatype_t *dtype,
                            const bufpool_plan_t *plan, const struct bufpool_group *host,
                            uint64_t s, int root_error, struct ompi_communicator_t *comm,
                            bufpool_comm_state_t *state, bufpool_node_home_t *home);

/* allreduce hier_node on hosts of one size (coll_bufpool_hier.c): with the
 * call's first number s (bufpool_node_host_reserve; it ends both), the
 * host's inputs in node_rsag's chunk rounds of bufpool_node_round_elems
 * elements, each rank of the host reducing its slice of a round
 * (bufpool_node_slice of the round's elements among host->n), then
 * exchanging the slices of a batch of bufpool_node_exchange_batch rounds
 * at once through x (in the shared segment where the packed bytes are the
 * layout, else in its rbuf) while it reduces the next batch, then copying
 * every rank's exchanged slices out into its rbuf.  x->start is called
 * once per batch on every rank whatever failed, with n slices of typed
 * elements (a count may be 0; the arrays stay valid until x->wait
 * returns; alone: nothing runs beside it, so it may run to the end at
 * once), then x->test any number of times (whether the exchange is over,
 * without blocking; it moves the exchange along), then x->wait (until it
 * is over: the first error); one exchange at a time.
 * OMPI_SUCCESS, an error, or BUFPOOL_NODE_UNAVAILABLE (nothing done,
 * before the first exchange, on every member alike). */
typedef struct bufpool_node_exchange {
    int (*start)(int n, char *const *slices, const size_t *counts, struct ompi_datatype_t *dtype,
                 bool alone, void *ctx);
    bool (*test)(void *ctx);
    int (*wait)(void *ctx);
    void *ctx;
} bufpool_node_exchange_t;
int bufpool_node_host_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                                const struct bufpool_group *host, uint64_t s,
                                const bufpool_node_exchange_t *x, struct ompi_communicator_t *comm,
                                bufpool_comm_state_t *state, bufpool_node_home_t *home);
int bufpool_node_exchange_batch(const bufpool_plan_t *plan);

/* The elements of a round of the chunk rounds of the reductions for a plan
 * (the same on every rank: the plan and the element's size), and elements
 * [*first, *first + result) of count, the slice of member r of p. */
size_t bufpool_node_round_elems(const bufpool_plan_t *plan, size_t type_size);
size_t bufpool_node_slice(size_t count, int p, int r, size_t *first);

/* The communicator's segment, when it goes. */
void bufpool_node_free(struct bufpool_node *node);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_NODE_H */
