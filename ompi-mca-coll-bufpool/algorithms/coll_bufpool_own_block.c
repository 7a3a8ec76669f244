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

int bufpool_own_block_copy(const bufpool_own_block_t *own, size_t seg_bytes)
{
    ptrdiff_t lb, extent;
    switch (own->kind) {
        case BUFPOOL_OWN_GATHER: {
            ompi_datatype_get_extent(own->rdtype, &lb, &extent);
            char *block =
                (char *)own->rbuf + (ptrdiff_t)own->root * (ptrdiff_t)own->rcount * extent;
            return bufpool_local_copy(block, own->rcount, own->rdtype, own->sbuf, own->scount,
                                      own->sdtype, seg_bytes);
        }
        case BUFPOOL_OWN_SCATTER: {
            ompi_datatype_get_extent(own->sdtype, &lb, &extent);
            const char *block =
                (const char *)own->sbuf + (ptrdiff_t)own->root * (ptrdiff_t)own->scount * extent;
            return bufpool_local_copy(own->rbuf, own->rcount, own->rdtype, block, own->scount,
                                      own->sdtype, seg_bytes);
        }
        case BUFPOOL_OWN_ALLGATHER:
            return bufpool_local_copy(own->moved, own->rcount, own->rdtype, own->sbuf, own->scount,
                                      own->sdtype, seg_bytes);
        case BUFPOOL_OWN_ALLTOALL: {
            ptrdiff_t slb, sextent;
            ompi_datatype_get_extent(own->rdtype, &lb, &extent);
            ompi_datatype_get_extent(own->sdtype, &slb, &sextent);
            const ptrdiff_t me = own->root; /* the rank itself (see the entry) */
            return bufpool_local_copy(
                (char *)own->rbuf + me * (ptrdiff_t)own->rcount * extent, own->rcount, own->rdtype,
                (const char *)own->sbuf + me * (ptrdiff_t)own->scount * sextent, own->scount,
                own->sdtype, seg_bytes);
        }
        default:
            return OMPI_SUCCESS;
    }
}

void bufpool_own_block_release(bufpool_own_block_t *own)
{
    if (NULL != own->scratch) {
        bufpool_scratch_put(own->scratch, own->scratch_bytes);
        own->scratch = own->moved = NULL;
        own->scratch_bytes = 0;
    }
}
