/* TEMPORARY: hands every call to the previous module until the pipelined
 * algorithms of this family land. */
#include "coll_bufpool_pipeline.h"

int mca_coll_bufpool_reduce_scatter(const void *sbuf, void *rbuf, const int *rcounts,
                                    struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                    struct ompi_communicator_t *comm, mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, reduce_scatter, sbuf, rbuf, rcounts, dtype, op, comm);
}

int mca_coll_bufpool_reduce_scatter_block(const void *sbuf, void *rbuf, int rcount,
                                          struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                                          struct ompi_communicator_t *comm,
                                          mca_coll_base_module_t *base)
{
    mca_coll_bufpool_module_t *module = (mca_coll_bufpool_module_t *)base;
    return BUFPOOL_FALLBACK(module, reduce_scatter_block, sbuf, rbuf, rcount, dtype, op, comm);
}
