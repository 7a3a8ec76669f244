/*
 * A rank's own block in a call bufpool hands back (coll_bufpool_own_block.h).
 */
#include "coll_bufpool_own_block.h"
#include "coll_bufpool_pack.h"
#include "coll_bufpool_pipeline.h"
#include "runtime/coll_bufpool_scratch.h"

bool bufpool_own_block_chunked(const bufpool_own_block_t *own)
{
    /* sndrcv's own tests, in its order: one datatype (checked inline),
     * then MPI_PACKED on either side, copied in one piece (its test is on
     * the type's id: a duplicate of MPI_PACKED is mended too, rightly and
     * for nothing). */
    if (MPI_PACKED == own->rdtype || MPI_PACKED == own->sdtype) {
        return false;
    }
    /* The sending side's bytes: the loop runs until its convertor is done. */
    return own->sdtype->super.size * own->scount > BUFPOOL_SNDRCV_CHUNK;
}

int bufpool_own_block_prepare(bufpool_own_block_t *own)
{
    own->scratch = own->moved = NULL;
    own->scratch_bytes = 0;
    if (BUFPOOL_OWN_ALLGATHER != own->kind) {
        return OMPI_SUCCESS;
    }
    ptrdiff_t gap;
    const size_t span = bufpool_span(own->rdtype, own->rcount, &gap);
    own->scratch = bufpool_scratch_get(span);
    if (NULL == own->scratch) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    own->scratch_bytes = span;
    own->moved = (char *)own->scratch - gap;
    return OMPI_SUCCESS;
}

/* Block i of count x dtype elements in buf. */
static char *nth_block(const void *buf, ptrdiff_t i, size_t count, struct ompi_datatype_t *dtype)
{
    ptrdiff_t lb, extent;
    ompi_datatype_get_extent(dtype, &lb, &extent);
    return (char *)buf + i * (ptrdiff_t)count * extent;
}

int bufpool_own_block_copy(const bufpool_own_block_t *own, size_t seg_bytes)
{
    void *dst = own->rbuf;
    const void *src = own->sbuf;
    switch (own->kind) {
        case BUFPOOL_OWN_GATHER:
            dst = nth_block(own->rbuf, own->root, own->rcount, own->rdtype);
            break;
        case BUFPOOL_OWN_SCATTER:
            src = nth_block(own->sbuf, own->root, own->scount, own->sdtype);
            break;
        case BUFPOOL_OWN_ALLGATHER:
            dst = own->moved;
            break;
        case BUFPOOL_OWN_ALLTOALL: /* root: the rank itself */
            dst = nth_block(own->rbuf, own->root, own->rcount, own->rdtype);
            src = nth_block(own->sbuf, own->root, own->scount, own->sdtype);
            break;
        default:
            return OMPI_SUCCESS;
    }
    return bufpool_local_copy(dst, own->rcount, own->rdtype, src, own->scount, own->sdtype,
                              seg_bytes);
}

void bufpool_own_block_release(bufpool_own_block_t *own)
{
    if (NULL != own->scratch) {
        bufpool_scratch_put(own->scratch, own->scratch_bytes);
        own->scratch = own->moved = NULL;
        own->scratch_bytes = 0;
    }
}
