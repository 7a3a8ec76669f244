/*
 * One description of a collective's arguments, and the one code path that
 * runs a plan on them, shared by the blocking entry points (one per family
 * file) and the nonblocking and persistent ones (coll_bufpool_nb.c): the
 * same call description goes to the same decision, and the same algorithm
 * functions run, whichever the form.
 */
#ifndef MCA_COLL_BUFPOOL_RUN_H
#define MCA_COLL_BUFPOOL_RUN_H

#include "coll_bufpool.h"

BEGIN_C_DECLS

/* The arguments of any of the eleven collectives, counts checked to fit
 * bufpool's int engines (BUFPOOL_COUNT_FITS) before they are stored. */
typedef struct bufpool_args {
    const void *sbuf;
    void *rbuf;                    /* bcast: the buffer                    */
    size_t count;                  /* reductions, scans, bcast; the block
                                      count of reduce_scatter_block        */
    int scount, rcount;            /* allgather, alltoall, gather, scatter */
    const int *rcounts;            /* reduce_scatter; NULL (Open MPI 6's
                                      size_t counts): see rcounts_any     */
    bufpool_counts_t rcounts_any;  /* reduce_scatter, as the caller gave it */
    int *owned_counts;             /* a task's copy of rcounts (freed with
                                      the task), or NULL                  */
    struct ompi_datatype_t *dtype; /* reductions, scans, bcast             */
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_op_t *op;
    int root; /* reduce, bcast, gather, scatter */
} bufpool_args_t;

/* What the decision sees of the call (bufpool_call_t), from the arguments
 * alone: the same on every rank and for every form. */
bufpool_call_t bufpool_describe(bufpool_coll_id_t id, const bufpool_args_t *a,
                                struct ompi_communicator_t *comm);

/* An empty reduction, scan or reduce_scatter (no element): done at once
 * and counted nowhere, in every form. */
bool bufpool_args_empty(bufpool_coll_id_t id, const bufpool_args_t *a,
                        struct ompi_communicator_t *comm);

/* What the size maps are keyed on, from the arguments: the bytes (and in
 * *cls the call class), exactly as the entry points' fast paths compute
 * them from theirs. */
size_t bufpool_args_key(bufpool_coll_id_t id, const bufpool_args_t *a,
                        struct ompi_communicator_t *comm, int *cls);

/* The range of the size map of form that decides a call with these
 * arguments (*bytes: its bytes). */
const bufpool_range_t *bufpool_args_range(bufpool_coll_id_t id, int form,
                                          const mca_coll_bufpool_module_t *module,
                                          const bufpool_args_t *a, struct ompi_communicator_t *comm,
                                          size_t *bytes);

/* The slow path of a blocking call: its range (a hand-back explained when
 * asked), the plan, and bufpool's algorithm.  *hand_back set (nothing run)
 * when the call goes to the previous module, which the caller then calls;
 * counted either way. */
int bufpool_serve(bufpool_coll_id_t id, const bufpool_args_t *a, struct ompi_communicator_t *comm,
                  mca_coll_bufpool_module_t *module, bool *hand_back);

/* Run plan->alg on the arguments (call: what bufpool_describe gave). */
int bufpool_run(bufpool_coll_id_t id, const bufpool_args_t *a, const bufpool_call_t *call,
                const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                mca_coll_bufpool_module_t *module);

/* reduce_scatter's counts: whether every one fits bufpool's int engines
 * (every rank passes the same counts, so every rank agrees), and a copy as
 * ints (malloc'd; NULL when memory is short), for Open MPI 6's size_t
 * counts. */
bool bufpool_counts_fit(bufpool_counts_t counts, int p);
int *bufpool_counts_int_copy(bufpool_counts_t counts, int p);

/* The call descriptions that need a family's knowledge (their files). */
bufpool_call_t bufpool_rooted_call(bool gather, const bufpool_args_t *a,
                                   struct ompi_communicator_t *comm);
bufpool_call_t bufpool_reduce_scatter_call(bufpool_coll_id_t id, const bufpool_args_t *a,
                                           struct ompi_communicator_t *comm);

/* Per family (their files). */
int bufpool_run_allreduce(const bufpool_args_t *a, const bufpool_plan_t *plan,
                          struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module);
int bufpool_run_reduce(const bufpool_args_t *a, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       mca_coll_bufpool_module_t *module);
int bufpool_run_reduce_scatter(bufpool_coll_id_t id, const bufpool_args_t *a,
                               const bufpool_call_t *call, const bufpool_plan_t *plan,
                               struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module);
int bufpool_run_scan(bool exclusive, const bufpool_args_t *a, const bufpool_plan_t *plan,
                     struct ompi_communicator_t *comm, mca_coll_bufpool_module_t *module);
int bufpool_run_bcast(const bufpool_args_t *a, const bufpool_call_t *call,
                      const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                      mca_coll_bufpool_module_t *module);
int bufpool_run_allgather(const bufpool_args_t *a, const bufpool_call_t *call,
                          const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                          mca_coll_bufpool_module_t *module);
int bufpool_run_alltoall(const bufpool_args_t *a, const bufpool_call_t *call,
                         const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                         mca_coll_bufpool_module_t *module);
int bufpool_run_rooted(bool gather, const bufpool_args_t *a, const bufpool_call_t *call,
                       const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                       mca_coll_bufpool_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_RUN_H */
