/*
 * Hierarchy-aware allreduce (coll_bufpool_hier.c) and the group form of
 * recursive doubling it shares with allreduce (coll_bufpool_allreduce.c).
 */
#ifndef MCA_COLL_BUFPOOL_HIER_H
#define MCA_COLL_BUFPOOL_HIER_H

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

/* Where the ranks of a communicator run, for hier: built at its first hier
 * call, freed with the module (bufpool_hier_topo_free). */
typedef struct bufpool_hier_topo {
    bufpool_group_t local;   /* the ranks on my host, ascending; member 0 leads */
    bufpool_group_t leaders; /* every host's leader, ascending; me = -1 if I do not lead */
    int *ranks;              /* storage of both lists */
} bufpool_hier_topo_t;

void bufpool_hier_topo_free(bufpool_hier_topo_t *topo);

int bufpool_allreduce_hier(const void *sbuf, void *rbuf, size_t count,
                           struct ompi_datatype_t *dtype, struct ompi_op_t *op,
                           const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                           mca_coll_bufpool_module_t *module);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_HIER_H */
