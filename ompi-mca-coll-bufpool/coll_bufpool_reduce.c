/* TEMPORARY: hands every call to the previous module until the pipelined
 * algorithms of this family land. */
#include "coll_bufpool_pipeline.h"

int mca_coll_bufpool_reduce(const void *sbuf, void *rbuf, int count, struct ompi_datatype_t *dtype,
                            struct ompi_op_t *op, int root, struct ompi_communicator_t *comm,
                            mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, reduce, sbuf, rbuf, count, dtype, op, root, comm);
}
