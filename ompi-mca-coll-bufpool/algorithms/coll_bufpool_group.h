/*
 * Groups of ranks and the recursive doubling over them
 * (coll_bufpool_group.c), shared by allreduce's recursive doubling over the
 * whole communicator and hier's over the hosts' leaders.
 */
#ifndef MCA_COLL_BUFPOOL_GROUP_H
#define MCA_COLL_BUFPOOL_GROUP_H

#include "coll_bufpool_pipeline.h"

BEGIN_C_DECLS

/* Some ranks of a communicator: member i is rank ranks[i] (NULL: rank i),
 * this process is member me. */
typedef struct bufpool_group {
    int n;
    int me;
    const int *ranks;
} bufpool_group_t;

static inline int bufpool_group_rank(const bufpool_group_t *g, int i)
{
    return NULL != g->ranks ? g->ranks[i] : i;
}

/* The vector of a recursive doubling, in n parts (at most
 * BUFPOOL_MAX_DEPTH): part i is count[i] elements at buf[i], with a scratch
 * buffer tmp[i] laid out alike. */
typedef struct bufpool_rd_parts {
    int n;
    char *const *buf;
    char *const *tmp;
    const size_t *count;
} bufpool_rd_parts_t;

/* Recursive doubling allreduce of every part among the members of g
 * (every member passes the same counts).  Each step moves all parts at
 * once.  Lower members are the left operand, so any operation is combined
 * in member order and every member ends with the same bits. */
int bufpool_allreduce_rd_group(const bufpool_rd_parts_t *parts, struct ompi_datatype_t *dtype,
                               struct ompi_op_t *op, const bufpool_group_t *g, int tag,
                               struct ompi_communicator_t *comm);

/* The same recursive doubling run alongside other work (allreduce
 * hier_node's exchange of one batch of slices while the host reduces the
 * next): bufpool_rd_start posts the first stage's transfers; each
 * bufpool_rd_test reduces and posts what the completed transfers allow,
 * without blocking, and says whether the run is over; bufpool_rd_wait
 * completes it, returning the first error.  The same operations in the
 * same order as bufpool_allreduce_rd_group, so the same bits; the parts'
 * arrays (and their buffers) stay the caller's until the run is over. */
typedef struct bufpool_rd {
    bufpool_rd_parts_t parts;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    const bufpool_group_t *group;
    int tag;
    struct ompi_communicator_t *comm;
    int pof2, extra, newrank; /* the power of two, the members folded, mine in it */
    int stage, mask, peer;    /* where the run is, and the member of that exchange */
    int nreq;
    ompi_request_t *req[2 * BUFPOOL_MAX_DEPTH];
    int rc;
} bufpool_rd_t;
int bufpool_rd_start(bufpool_rd_t *r, const bufpool_rd_parts_t *parts,
                     struct ompi_datatype_t *dtype, struct ompi_op_t *op, const bufpool_group_t *g,
                     int tag, struct ompi_communicator_t *comm);
bool bufpool_rd_test(bufpool_rd_t *r);
int bufpool_rd_wait(bufpool_rd_t *r);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_GROUP_H */
