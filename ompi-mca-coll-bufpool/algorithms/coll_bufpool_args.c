/*
 * The description of a collective's arguments and of its call
 * (coll_bufpool_args.h).
 */
#include "coll_bufpool_args.h"

#include <limits.h>
#include <stdlib.h>

bufpool_call_t bufpool_reduction_call(size_t count, struct ompi_datatype_t *dtype,
                                      struct ompi_op_t *op, bool in_place,
                                      struct ompi_communicator_t *comm)
{
    /* Signature bytes, not the layout's span: ranks may describe the same
     * elements with different extents, and all must reach the same plan. */
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .count = count,
                                 .bytes = dtype->super.size * count,
                                 .commute = ompi_op_is_commute(op),
                                 .in_place = in_place};
    return call;
}

bufpool_call_t bufpool_block_call(bufpool_count_t count, struct ompi_datatype_t *dtype,
                                  bool in_place, struct ompi_communicator_t *comm)
{
    const bufpool_call_t call = {.comm_size = ompi_comm_size(comm),
                                 .bytes = bufpool_bytes(dtype, count),
                                 .commute = true,
                                 .in_place = in_place};
    return call;
}

/* ---------------------------------------------------------------------- */
/* reduce_scatter's counts. */

size_t bufpool_counts_total_any(bufpool_counts_t counts, int p)
{
    size_t total = 0;
    for (int b = 0; b < p; b++) {
        total += BUFPOOL_COUNTS_GET(counts, b);
    }
    return total;
}

bool bufpool_counts_fit(bufpool_counts_t counts, int p)
{
    for (int b = 0; b < p; b++) {
        if (BUFPOOL_COUNTS_GET(counts, b) > (size_t)INT_MAX) {
            return false;
        }
    }
    return true;
}

bool bufpool_args_own_counts(bufpool_args_t *a, int p)
{
    if (NULL != a->rcounts || NULL != a->owned_counts || !a->rcounts_any) {
        return true; /* int counts, copied already, or not a reduce_scatter */
    }
    int *copy = malloc((size_t)(p > 0 ? p : 1) * sizeof(*copy));
    if (NULL == copy) {
        return false;
    }
    for (int b = 0; b < p; b++) {
        copy[b] = (int)BUFPOOL_COUNTS_GET(a->rcounts_any, b);
    }
    a->rcounts = a->owned_counts = copy;
    return true;
}
