/*
 * A rank's own block in a call bufpool hands back (gather, scatter,
 * allgather, alltoall), where Open MPI would copy it wrongly.
 *
 * Every module copies a rank's own block with Open MPI's
 * ompi_datatype_sndrcv, which, between two different datatypes, packs and
 * unpacks 64 KiB at a time and loses the last element's double when a
 * 64 KiB boundary falls inside an element (4.1.4, 5.0.10, 6.0.x;
 * docs/reliability.md).  Whether a call is at risk is one rank's own pair of
 * datatypes, which the other ranks do not see, so it cannot be a decision;
 * the rank at risk mends its own arguments instead, in a way that changes
 * nothing at the others:
 *   gather, scatter  the root copies its block itself (bufpool's views,
 *                    right for any pair) and passes MPI_IN_PLACE, which MPI
 *                    lets the root alone pass and every module handles;
 *   allgather        MPI_IN_PLACE is every rank's or none's, so the rank
 *                    copies its block into scratch laid out as its receive
 *                    datatype and sends from there with that datatype:
 *                    one datatype on both sides, which sndrcv copies
 *                    straight (the signature, all that the others and
 *                    every decision see, is the same).
 *   alltoall         MPI_IN_PLACE is every rank's or none's, and the own
 *                    block is one of the send buffer's p: the call is
 *                    handed back as it is and the rank copies its block
 *                    again once the call is over.  sndrcv's receive
 *                    convertor writes nothing but that block's data (a
 *                    wrong value, never a byte elsewhere: checked), and no
 *                    alltoall algorithm forwards a rank's own block
 *                    (linear, pairwise, two_proc and libnbc's send every
 *                    block straight from the send buffer; only Bruck's
 *                    rotations, which tuned takes for blocks of at most
 *                    200 B, copy more than the own block, never at risk).
 * The entry points (coll_bufpool_entries.h, columns own and mended)
 * describe the block; a nonblocking or persistent call that must hold
 * scratch, copy after completion or copy at every start is wrapped by
 * coll_bufpool_nb.c.
 */
#ifndef MCA_COLL_BUFPOOL_OWN_BLOCK_H
#define MCA_COLL_BUFPOOL_OWN_BLOCK_H

#include "coll_bufpool_args.h"

BEGIN_C_DECLS

typedef enum bufpool_own_kind {
    BUFPOOL_OWN_NONE = -1, /* a collective without such a block */
    BUFPOOL_OWN_SCATTER,
    BUFPOOL_OWN_GATHER,
    BUFPOOL_OWN_ALLGATHER,
    BUFPOOL_OWN_ALLTOALL
} bufpool_own_kind_t;

typedef struct bufpool_own_block {
    int kind; /* bufpool_own_kind_t */
    const void *sbuf;
    size_t scount;
    struct ompi_datatype_t *sdtype;
    void *rbuf;
    size_t rcount;
    struct ompi_datatype_t *rdtype;
    int root; /* gather's and scatter's; alltoall's: the rank itself */
    /* allgather, once prepared: the scratch and the send buffer that
     * replaces sbuf (rcount x rdtype there). */
    void *scratch;
    size_t scratch_bytes;
    void *moved;
} bufpool_own_block_t;

/* The own column of the collectives without such a block. */
#define BUFPOOL_NO_OWN_BLOCK ({.kind = BUFPOOL_OWN_NONE})

/* ompi_datatype_sndrcv's chunk between different datatypes. */
#define BUFPOOL_SNDRCV_CHUNK ((size_t)64 * 1024)

/* True when own's block goes through sndrcv's chunked path (different
 * datatypes, neither MPI_PACKED, more than one chunk): out of line. */
bool bufpool_own_block_chunked(const bufpool_own_block_t *own);

/* The entry points' inline test, the only one a hand-back pays in the
 * common case: a block between two different datatype handles (false at
 * compile time for the collectives without one). */
static inline bool bufpool_own_block_may_be_at_risk(const bufpool_own_block_t *own)
{
    return BUFPOOL_OWN_NONE != own->kind && own->sdtype != own->rdtype;
}

/* True when this rank's hand-back of own must mend its arguments: its
 * block (gather and scatter: the root's), not in place, through sndrcv's
 * chunked path. */
static inline bool bufpool_own_block_at_risk(const bufpool_own_block_t *own,
                                             struct ompi_communicator_t *comm)
{
    if (!bufpool_own_block_may_be_at_risk(own)) {
        return false;
    }
    if (BUFPOOL_OWN_ALLGATHER == own->kind || BUFPOOL_OWN_ALLTOALL == own->kind) {
        return MPI_IN_PLACE != own->sbuf && bufpool_own_block_chunked(own);
    }
    return ompi_comm_rank(comm) == own->root &&
           MPI_IN_PLACE !=
               (BUFPOOL_OWN_GATHER == own->kind ? own->sbuf : (const void *)own->rbuf) &&
           bufpool_own_block_chunked(own);
}

/* What the mended call needs before it is made: allgather's scratch
 * (own->moved); nothing for gather and scatter. */
int bufpool_own_block_prepare(bufpool_own_block_t *own);
/* Whether own's block is copied after the call (alltoall) rather than
 * before it. */
static inline bool bufpool_own_block_after(const bufpool_own_block_t *own)
{
    return BUFPOOL_OWN_ALLTOALL == own->kind;
}
/* Whether a nonblocking call must be wrapped: own holds scratch until the
 * call is over, or copies after it. */
static inline bool bufpool_own_block_holds(const bufpool_own_block_t *own)
{
    return NULL != own->scratch || bufpool_own_block_after(own);
}
/* Copy the block with bufpool's views (through a pooled segment of
 * seg_bytes at most when neither layout is contiguous): gather's and
 * scatter's root block and alltoall's own from sbuf to rbuf, allgather's
 * to own->moved. */
int bufpool_own_block_copy(const bufpool_own_block_t *own, size_t seg_bytes);
/* The scratch back (once the call is over). */
void bufpool_own_block_release(bufpool_own_block_t *own);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_OWN_BLOCK_H */
