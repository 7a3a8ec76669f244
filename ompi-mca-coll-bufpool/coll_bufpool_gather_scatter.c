/* TEMPORARY: hands every call to the previous module until the pipelined
 * algorithms of this family land. */
#include "coll_bufpool_pipeline.h"

int mca_coll_bufpool_gather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                            void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                            struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, gather, sbuf, scount, sdtype, rbuf, rcount, rdtype, root, comm);
}

int mca_coll_bufpool_scatter(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                             void *rbuf, int rcount, struct ompi_datatype_t *rdtype, int root,
                             struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, scatter, sbuf, scount, sdtype, rbuf, rcount, rdtype, root,
                            comm);
}
