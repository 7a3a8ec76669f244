/* TEMPORARY: hands every call to the previous module until the pipelined
 * algorithms of this family land. */
#include "coll_bufpool_pipeline.h"

int mca_coll_bufpool_bcast(void *buf, int count, struct ompi_datatype_t *dtype, int root,
                           struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, bcast, buf, count, dtype, root, comm);
}
