/*
 * The building blocks of the cost model (coll_bufpool_model.c), for the
 * models of algorithms outside the component: bench/coll_model_ompi.c
 * models Open MPI tuned's with them.  Steps between ranks d apart, trees,
 * rings, pairwise exchanges, recursive doubling and halving, chains; see
 * coll_bufpool_model.h for the method.
 */
#ifndef COLL_BUFPOOL_MODEL_COST_H
#define COLL_BUFPOOL_MODEL_COST_H

#include "coll_bufpool_model.h"

typedef struct bufpool_model_links bufpool_mc_links_t;
typedef struct bufpool_model_topo bufpool_mc_topo_t;

/* Ranks per host; ceil(log2 p); the largest power of two <= p. */
int bufpool_mc_ppn_of(const bufpool_mc_topo_t *t);
double bufpool_mc_log2ceil(int p);
int bufpool_mc_pow2_floor(int p);

/* Every rank exchanges bytes with a rank d away (by_bit: paired by xor,
 * as trees and recursive doubling pair them); xstep by shift, bstep by
 * bit. */
double bufpool_mc_step_cost(const bufpool_mc_links_t *l, const bufpool_mc_topo_t *t, int d,
                            double bytes, int by_bit);
double bufpool_mc_xstep(const bufpool_mc_links_t *l, const bufpool_mc_topo_t *t, int d,
                        double bytes);
double bufpool_mc_bstep(const bufpool_mc_links_t *l, const bufpool_mc_topo_t *t, int d,
                        double bytes);
/* The reduction cost per byte of the slower class in use; the segments of
 * bytes. */
double bufpool_mc_gam(const bufpool_mc_links_t *l, const bufpool_mc_topo_t *t);
double bufpool_mc_segments(const bufpool_mc_topo_t *t, double bytes);

/* Patterns: the time of bytes moved in the pattern's steps, gamma per
 * byte reduced per step. */
typedef double bufpool_mc_pattern_fn(const bufpool_mc_links_t *l, const bufpool_mc_topo_t *t,
                                     double bytes, double gamma);
bufpool_mc_pattern_fn bufpool_mc_binomial, bufpool_mc_ring, bufpool_mc_pairwise,
    bufpool_mc_rdoubling, bufpool_mc_rhalving, bufpool_mc_chain;

#endif
