/* TEMPORARY: hands every call to the previous module until the pipelined
 * algorithms of this family land. */
#include "coll_bufpool_pipeline.h"

int mca_coll_bufpool_allgather(const void *sbuf, int scount, struct ompi_datatype_t *sdtype,
                               void *rbuf, int rcount, struct ompi_datatype_t *rdtype,
                               struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, allgather, sbuf, scount, sdtype, rbuf, rcount, rdtype, comm);
}
