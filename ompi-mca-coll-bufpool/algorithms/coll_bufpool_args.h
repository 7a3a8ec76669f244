/*
 * One description of a collective's arguments (bufpool_args_t) and of a
 * call as the decision sees it, shared by the MCA layer's entry points and
 * every family's algorithms (coll_bufpool_args.c).
 */
#ifndef MCA_COLL_BUFPOOL_ARGS_H
#define MCA_COLL_BUFPOOL_ARGS_H

#include "ompi_config.h"

#include <stdbool.h>
#include <stddef.h>

#include "mpi.h"
#include "ompi/communicator/communicator.h"
#include "ompi/datatype/ompi_datatype.h"
#include "ompi/op/op.h"

#include "bufpool_ompi_compat.h"
#include "decide/coll_bufpool_decide.h"

BEGIN_C_DECLS

/* The arguments of any of the twelve collectives (barrier has none),
 * counts checked to fit bufpool's int engines (BUFPOOL_COUNT_FITS,
 * BUFPOOL_BYTES_FIT) before they are stored. */
typedef struct bufpool_args {
    const void *sbuf;
    void *rbuf;                    /* bcast: the buffer                    */
    size_t count;                  /* reductions, scans, bcast; the block
                                      count of reduce_scatter_block        */
    int scount, rcount;            /* allgather, alltoall, gather, scatter */
    const int *rcounts;            /* reduce_scatter; NULL (Open MPI 6's
                                      size_t counts): see rcounts_any     */
    bufpool_counts_t rcounts_any;  /* reduce_scatter, as the caller gave it */
    int *owned_counts;             /* rcounts copied as ints (freed with
                                      the call or its task), or NULL      */
    struct ompi_datatype_t *dtype; /* reductions, scans, bcast             */
    struct ompi_datatype_t *sdtype, *rdtype;
    struct ompi_op_t *op;
    int root; /* reduce, bcast, gather, scatter */
} bufpool_args_t;

/* Bytes of count elements of dtype (what the size maps are keyed on): the
 * type's size read from the datatype, no call. */
static inline size_t bufpool_bytes(const struct ompi_datatype_t *dtype, bufpool_count_t count)
{
    return count > 0 ? dtype->super.size * (size_t)count : 0;
}

/* Bytes of one block of a gather or scatter: only the significant
 * arguments (the root's for all the blocks, a non-root's own) count. */
static inline size_t bufpool_rooted_bytes(bool gather, bufpool_count_t scount,
                                          const struct ompi_datatype_t *sdtype,
                                          bufpool_count_t rcount,
                                          const struct ompi_datatype_t *rdtype, int root,
                                          struct ompi_communicator_t *comm)
{
    return (ompi_comm_rank(comm) == root) == gather ? bufpool_bytes(rdtype, rcount)
                                                    : bufpool_bytes(sdtype, scount);
}

/* Elements of a reduce_scatter's whole input (some blocks may be empty),
 * from int counts or from counts of either width. */
static inline size_t bufpool_counts_total(const int *counts, int size)
{
    size_t total = 0;
    for (int b = 0; b < size; b++) {
        total += (size_t)counts[b];
    }
    return total;
}
size_t bufpool_counts_total_any(bufpool_counts_t counts, int p);

/* reduce_scatter's counts: whether every one fits bufpool's int engines
 * (every rank passes the same counts, so every rank agrees), and a copy as
 * ints into a->owned_counts (Open MPI 6's size_t counts; false when memory
 * is short; nothing to do for int counts). */
bool bufpool_counts_fit(bufpool_counts_t counts, int p);
bool bufpool_args_own_counts(bufpool_args_t *a, int p);

/* The descriptions of a reduction or scan of count elements (in_place:
 * MPI_IN_PLACE where every rank passes it alike), and of a data movement
 * of one block of count x dtype per rank. */
bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm);
bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_ARGS_H */
