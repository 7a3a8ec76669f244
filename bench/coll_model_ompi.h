/*
 * Open MPI coll/tuned in the cost model (coll_model_ompi.c), for the tools
 * that compare bufpool with it (bench/coll_model, the model's unit tests);
 * the component models only its own algorithms
 * (ompi-mca-coll-bufpool/decide/coll_bufpool_model.h).
 */
#ifndef COLL_MODEL_OMPI_H
#define COLL_MODEL_OMPI_H

#include <stddef.h>

#include "coll_bufpool_model.h"

/* Every modeled algorithm of a collective: bufpool's first (as
 * bufpool_model_algs lists them, bufpool = 1), then tuned's and
 * hierarchy-aware variants (bufpool = 0); terminated by a NULL name.  A
 * name both have (allreduce's ring) is tuned's in its last row. */
const struct bufpool_model_alg *coll_model_all_algs(enum bufpool_model_coll coll);

/* The fastest row of coll_model_all_algs, bufpool's only (only_bufpool) or
 * any; its index there, and its time in *time_out when not NULL. */
int coll_model_best(enum bufpool_model_coll coll, const struct bufpool_model_links *links,
                    const struct bufpool_model_topo *topo, size_t bytes, int only_bufpool,
                    double *time_out);

/* The algorithm name Open MPI's coll/tuned fixed decision rules pick for the
 * call (tables of ompi/mca/coll/tuned/coll_tuned_decision_fixed.c in 5.0.10,
 * the same thresholds as 4.1.4's; commutative operation; bytes as tuned
 * counts them: a rank's message for allreduce, reduce and bcast, one
 * rank's block for allgather and alltoall, the whole input for
 * reduce_scatter), or NULL where the tables are not encoded here (gather,
 * scatter, scan).  Every name is an algorithm of coll_model_all_algs(coll). */
const char *coll_model_ompi_choice(enum bufpool_model_coll coll, int p, size_t bytes);

#endif
