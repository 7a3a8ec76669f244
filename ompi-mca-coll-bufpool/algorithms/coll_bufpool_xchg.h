/*
 * The call of a block exchange (allgather, alltoall): both sides' buffers,
 * counts and types as the entry received them, the block strides, and the
 * plan's parameters the algorithms need.  One description, filled once by
 * bufpool_xchg_call_init, for both families.
 */
#ifndef MCA_COLL_BUFPOOL_XCHG_H
#define MCA_COLL_BUFPOOL_XCHG_H

#include "coll_bufpool_args.h"
#include "coll_bufpool_pack.h"

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

/* The linear exchange (bufpool_linear_exchange) of a block exchange call:
 * every block received into rbuf, the sent blocks from (sbuf, sstride,
 * scount, sdtype) and my own block copied from (own, own_count, own_dtype),
 * which the caller gives (allgather sends one block, alltoall one per
 * rank). */
static inline bufpool_linear_xchg_t
bufpool_xchg_linear(const bufpool_xchg_call_t *c, const char *sbuf, ptrdiff_t sstride,
                    size_t scount, struct ompi_datatype_t *sdtype, const void *own, int tag)
{
    const bufpool_linear_xchg_t x = {.rbuf = c->rbuf,
                                     .rstride = c->rblock,
                                     .rcount = (size_t)c->rcount,
                                     .rdtype = c->rdtype,
                                     .sbuf = sbuf,
                                     .sstride = sstride,
                                     .scount = scount,
                                     .sdtype = sdtype,
                                     .own = own,
                                     .own_count = (size_t)c->scount,
                                     .own_dtype = c->sdtype,
                                     .bytes = c->bytes,
                                     .seg_bytes = c->seg_bytes,
                                     .rank = c->rank,
                                     .p = c->p,
                                     .tag = tag,
                                     .max_requests = c->max_requests};
    return x;
}

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_XCHG_H */
