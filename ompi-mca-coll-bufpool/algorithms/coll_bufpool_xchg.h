/*
 * The call of a block exchange (allgather, alltoall): both sides' buffers,
 * counts and types as the entry received them, the block strides, and the
 * plan's parameters the algorithms need.  One description, filled once by
 * bufpool_xchg_call_init, for both families.
 */
#ifndef MCA_COLL_BUFPOOL_XCHG_H
#define MCA_COLL_BUFPOOL_XCHG_H

#include "coll_bufpool_args.h"

BEGIN_C_DECLS

typedef struct bufpool_xchg_call {
    const char *sbuf; /* MPI_IN_PLACE: the blocks are in rbuf already */
    int scount;
    struct ompi_datatype_t *sdtype;
    ptrdiff_t sblock; /* bytes between blocks of sbuf (alltoall; 0 in place) */
    char *rbuf;
    int rcount;
    struct ompi_datatype_t *rdtype;
    ptrdiff_t rblock; /* bytes between blocks of rbuf */
    size_t bytes;     /* signature bytes of one block */
    size_t seg_bytes; /* the plan's segment (local copies) */
    int rank, p;
    int max_requests; /* the plan's */
} bufpool_xchg_call_t;

static inline void bufpool_xchg_call_init(bufpool_xchg_call_t *c, const void *sbuf, int scount,
                                          struct ompi_datatype_t *sdtype, void *rbuf, int rcount,
                                          struct ompi_datatype_t *rdtype,
                                          const bufpool_call_t *call, const bufpool_plan_t *plan,
                                          struct ompi_communicator_t *comm)
{
    ptrdiff_t lb, sext = 0, rext;
    ompi_datatype_get_extent(rdtype, &lb, &rext);
    if (MPI_IN_PLACE != sbuf) {
        ompi_datatype_get_extent(sdtype, &lb, &sext);
    }
    *c = (bufpool_xchg_call_t){.sbuf = sbuf,
                               .scount = scount,
                               .sdtype = sdtype,
                               .sblock = sext * (ptrdiff_t)scount,
                               .rbuf = rbuf,
                               .rcount = rcount,
                               .rdtype = rdtype,
                               .rblock = rext * (ptrdiff_t)rcount,
                               .bytes = call->bytes,
                               .seg_bytes = plan->seg_bytes,
                               .rank = ompi_comm_rank(comm),
                               .p = call->comm_size,
                               .max_requests = plan->max_requests};
}

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_XCHG_H */
