/*
 * Open MPI coll/tuned's algorithms and fixed decisions in the cost model
 * (coll_model_ompi.h), with the component's building blocks
 * (coll_bufpool_model_cost.h).
 */
#include "coll_model_ompi.h"
#include "coll_bufpool_model_cost.h"

#include <limits.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

typedef struct bufpool_model_links links_t;
typedef struct bufpool_model_topo topo_t;

/* ------------------------------------------------------------------------ */
/* tuned's algorithms (bytes as coll_bufpool_model.c counts them). */

/* Hierarchy-aware with every rank of a host on the network (not in
 * bufpool): the ranks of a host reduce-scatter over shared memory, each
 * exchanges its 1/ppn share with its peers on the other hosts (ppn streams
 * per host), then they allgather over shared memory. */
static double hier_allreduce(const links_t *l, const topo_t *t, double bytes)
{
    int ppn = bufpool_mc_ppn_of(t), h = (t->p + ppn - 1) / ppn;
    topo_t local = {ppn, 1, t->segment, ppn};
    double share = bytes / ppn, g = bufpool_mc_gam(l, t);
    const struct bufpool_link *n = &l->link[l->inter];
    double inter =
        h > 1 ? 2 * (h - 1) * (n->alpha + share / h * n->beta * ppn) + (h - 1) * share / h * g : 0;
    return bufpool_mc_pairwise(l, &local, share, g) + inter + bufpool_mc_ring(l, &local, share, 0);
}

#define T(name) static double name(const links_t *l, const topo_t *t, size_t n_)
#define N       ((double)n_)
T(ar_ring)
{
    return bufpool_mc_ring(l, t, N / t->p, bufpool_mc_gam(l, t)) +
           bufpool_mc_ring(l, t, N / t->p, 0);
}
T(ar_rab)
{
    return bufpool_mc_rhalving(l, t, N, bufpool_mc_gam(l, t)) + bufpool_mc_rhalving(l, t, N, 0);
}
T(ar_nonover)
{
    return bufpool_mc_binomial(l, t, N, bufpool_mc_gam(l, t)) + bufpool_mc_binomial(l, t, N, 0);
}
T(ar_linear)
{
    return (t->p - 1) * (bufpool_mc_xstep(l, t, t->p / 2, N) + N * bufpool_mc_gam(l, t)) +
           (t->p - 1) * bufpool_mc_xstep(l, t, t->p / 2, N);
}
T(ar_hier_rsag)
{
    return hier_allreduce(l, t, N);
}
T(re_binomial)
{
    return bufpool_mc_binomial(l, t, N, bufpool_mc_gam(l, t));
}
/* tuned's reduce under the fixed rules runs unsegmented (segsize 0). */
T(re_linear)
{
    /* The root receives and reduces p - 1 whole messages in turn. */
    return (t->p - 1) * (bufpool_mc_xstep(l, t, t->p / 2, N) + N * bufpool_mc_gam(l, t));
}
T(re_pipeline)
{
    return (t->p - 1) * (bufpool_mc_xstep(l, t, 1, N) + N * bufpool_mc_gam(l, t));
}
T(re_tchain)
{
    int heads = t->p - 1 < 4 ? t->p - 1 : 4;
    return (heads + ceil((t->p - 1) / 4.0) - 1) *
           (bufpool_mc_xstep(l, t, 1, N) + N * bufpool_mc_gam(l, t));
}
T(re_tbinary)
{
    return 2 * (bufpool_mc_log2ceil(t->p + 1) - 1) *
           (bufpool_mc_xstep(l, t, 1, N) + N * bufpool_mc_gam(l, t));
}
T(re_rab)
{
    /* Reduce-scatter by recursive halving, then a binomial gather of the
     * halves to the root. */
    return bufpool_mc_rhalving(l, t, N, bufpool_mc_gam(l, t)) + bufpool_mc_rhalving(l, t, N, 0);
}
/* tuned's segmented trees run unsegmented under the fixed rules (segsize 0). */
T(bc_pipeline)
{
    return (t->p - 1) * bufpool_mc_xstep(l, t, 1, N);
}
T(bc_tchain)
{
    int heads = t->p - 1 < 4 ? t->p - 1 : 4;
    return (heads + ceil((t->p - 1) / 4.0) - 1) * bufpool_mc_xstep(l, t, 1, N);
}
T(bc_binary)
{
    return 2 * (bufpool_mc_log2ceil(t->p + 1) - 1) * bufpool_mc_xstep(l, t, 1, N);
}
T(bc_split)
{
    return 2 * (bufpool_mc_log2ceil(t->p + 1) - 1) * bufpool_mc_xstep(l, t, 1, N / 2) +
           bufpool_mc_xstep(l, t, 1, N / 2);
}
T(bc_knomial)
{
    double levels = ceil(bufpool_mc_log2ceil(t->p) / 2.0);
    return levels * 3 * bufpool_mc_xstep(l, t, 1, N);
}
/* tuned's: Bruck (ceil(log2 p) shifts by 2^k of up to 2^k blocks), the
 * neighbour exchange (p / 2 steps of two blocks), one exchange at 2 ranks,
 * and linear (gather to rank 0, then a binomial bcast of p blocks). */
T(ag_bruck)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bufpool_mc_xstep(l, t, d, N * (d < t->p - d ? d : t->p - d));
    }
    return sum;
}
T(ag_neighbor)
{
    return (t->p % 2
                ? bufpool_mc_ring(l, t, N, 0)
                : bufpool_mc_xstep(l, t, 1, N) + (t->p / 2 - 1) * bufpool_mc_xstep(l, t, 1, 2 * N));
}
T(ag_two_proc)
{
    return bufpool_mc_xstep(l, t, 1, N);
}
T(ag_linear)
{
    /* The gather's transfers all pass the root's link, as linear alltoall's. */
    double gather = bufpool_mc_xstep(l, t, t->p / 2, 0);
    for (int k = 1; k < t->p; k++) {
        gather += bufpool_mc_xstep(l, t, k, N) - bufpool_mc_xstep(l, t, k, 0);
    }
    return gather + bufpool_mc_binomial(l, t, N * t->p, 0);
}
T(rs_halving)
{
    return bufpool_mc_rhalving(l, t, N, bufpool_mc_gam(l, t));
}
/* tuned's: the unsegmented ring, and non-overlapping (a binomial reduce of
 * the whole input to rank 0, then a linear scatter of the blocks). */
T(rs_tring)
{
    return bufpool_mc_ring(l, t, N / t->p, bufpool_mc_gam(l, t));
}
T(rs_nonover)
{
    const double block = N / t->p;
    return bufpool_mc_binomial(l, t, N, bufpool_mc_gam(l, t)) +
           (t->p - 1) * bufpool_mc_xstep(l, t, t->p / 2, block);
}
/* tuned's: one exchange at 2 ranks; the modified Bruck (ceil(log2 p)
 * shifts of about half of the p blocks each, plus a local rotation). */
T(a2a_two_proc)
{
    return bufpool_mc_xstep(l, t, 1, N);
}
T(a2a_bruck)
{
    double sum = 0;
    for (int d = 1; d < t->p; d *= 2) {
        sum += bufpool_mc_xstep(l, t, d, N * t->p / 2);
    }
    return sum + 2 * N * t->p * l->link[BUFPOOL_LINK_SHM].beta;
}
#undef N
#undef T

/* tuned's rows of each collective, after bufpool's (coll_model_all_algs). */
static const struct bufpool_model_alg tuned_algs[BUFPOOL_MODEL_COLLS][8] = {
    [BUFPOOL_MODEL_ALLREDUCE] = {{"ring", 0, ar_ring},
                                 {"segmented_ring", 0, ar_ring},
                                 {"rabenseifner", 0, ar_rab},
                                 {"nonoverlapping", 0, ar_nonover},
                                 {"basic_linear", 0, ar_linear},
                                 {"hier_rsag", 0, ar_hier_rsag},
                                 {NULL, 0, NULL}},
    [BUFPOOL_MODEL_REDUCE] = {{"binomial", 0, re_binomial},
                              {"linear", 0, re_linear},
                              {"pipeline", 0, re_pipeline},
                              {"tuned_chain", 0, re_tchain},
                              {"tuned_binary", 0, re_tbinary},
                              {"in-order_binary", 0, re_tbinary},
                              {"rabenseifner", 0, re_rab},
                              {NULL, 0, NULL}},
    [BUFPOOL_MODEL_BCAST] = {{"pipeline", 0, bc_pipeline},
                             {"tuned_chain", 0, bc_tchain},
                             {"binary_tree", 0, bc_binary},
                             {"split_binary_tree", 0, bc_split},
                             {"knomial", 0, bc_knomial},
                             {NULL, 0, NULL}},
    /* recursive_doubling: bufpool's row models both */
    [BUFPOOL_MODEL_ALLGATHER] = {{"bruck", 0, ag_bruck},
                                 {"neighbor", 0, ag_neighbor},
                                 {"two_proc", 0, ag_two_proc},
                                 {"linear", 0, ag_linear},
                                 {NULL, 0, NULL}},
    /* butterfly: modeled as halving */
    [BUFPOOL_MODEL_REDUCE_SCATTER] = {{"recursive_halving", 0, rs_halving},
                                      {"butterfly", 0, rs_halving},
                                      {"tuned_ring", 0, rs_tring},
                                      {"nonoverlapping", 0, rs_nonover},
                                      {NULL, 0, NULL}},
    /* linear_sync: linear, bounded (bufpool's linear models it) */
    [BUFPOOL_MODEL_ALLTOALL] = {{"linear_sync", 0, NULL},
                                {"two_proc", 0, a2a_two_proc},
                                {"modified_bruck", 0, a2a_bruck},
                                {NULL, 0, NULL}},
};

/* bufpool's rows then tuned's, built at the first call. */
static struct bufpool_model_alg all_algs[BUFPOOL_MODEL_COLLS][16];

const struct bufpool_model_alg *coll_model_all_algs(enum bufpool_model_coll coll)
{
    if (coll >= BUFPOOL_MODEL_COLLS) {
        return NULL;
    }
    struct bufpool_model_alg *out = all_algs[coll];
    if (NULL == out[0].name) {
        const struct bufpool_model_alg *bp = bufpool_model_algs(coll);
        size_t n = 0;
        for (size_t i = 0; NULL != bp[i].name; i++) {
            out[n++] = bp[i];
        }
        for (size_t i = 0; NULL != tuned_algs[coll][i].name; i++) {
            out[n] = tuned_algs[coll][i];
            if (NULL == out[n].time) {
                /* tuned's linear_sync: bufpool's linear row */
                for (size_t j = 0; NULL != bp[j].name; j++) {
                    if (0 == strcmp("linear", bp[j].name)) {
                        out[n].time = bp[j].time;
                    }
                }
            }
            n++;
        }
    }
    return out;
}

int coll_model_best(enum bufpool_model_coll coll, const links_t *links, const topo_t *topo,
                    size_t bytes, int only_bufpool, double *time_out)
{
    const struct bufpool_model_alg *a = coll_model_all_algs(coll);
    unsigned long skip = 0;
    for (int i = 0; NULL != a && NULL != a[i].name; i++) {
        if (only_bufpool && !a[i].bufpool) {
            skip |= 1UL << i;
        }
    }
    return bufpool_model_best_in(a, coll, links, topo, bytes, skip, time_out);
}

/* ------------------------------------------------------------------------ */
/* Open MPI coll/tuned fixed decisions (ompi_coll_tuned_*_intra_dec_fixed
 * in ompi/mca/coll/tuned/coll_tuned_decision_fixed.c of Open MPI 5.0.10,
 * commutative operations; read and re-expressed as rows, not copied).
 * Open MPI 4.1.0 introduced these tables ("Adjust default tuning
 * thresholds for many collective algorithms", NEWS); the compare
 * immediates of the six functions in Debian's 4.1.4 mca_coll_tuned.so are
 * the same thresholds (checked with objdump; the 4.1.4 source was not
 * available here).  Rows are tried in order: the first with p < p_below
 * and bytes < bytes_below gives the algorithm. */

struct rule {
    int p_below;
    size_t bytes_below;
    const char *alg;
};
#define ANY SIZE_MAX
#define ALL INT_MAX

/* allreduce, commutative operation, bytes = count x type size. */
static const struct rule allreduce_rules[] = {
    {4, 8, "ring"},
    {4, 4096, "recursive_doubling"},
    {4, 8192, "ring"},
    {4, 16384, "recursive_doubling"},
    {4, 65536, "ring"},
    {4, 262144, "segmented_ring"},
    {4, ANY, "rabenseifner"},
    {8, 16, "ring"},
    {8, 8192, "recursive_doubling"},
    {8, ANY, "rabenseifner"},
    {16, 8192, "recursive_doubling"},
    {16, ANY, "rabenseifner"},
    {32, 64, "segmented_ring"},
    {32, 4096, "recursive_doubling"},
    {32, ANY, "rabenseifner"},
    {64, 128, "segmented_ring"},
    {64, ANY, "rabenseifner"},
    {128, 262144, "recursive_doubling"},
    {128, ANY, "rabenseifner"},
    {256, 131072, "nonoverlapping"},
    {256, 262144, "recursive_doubling"},
    {256, ANY, "rabenseifner"},
    {512, 4096, "nonoverlapping"},
    {512, ANY, "rabenseifner"},
    {2048, 2048, "nonoverlapping"},
    {2048, 16384, "recursive_doubling"},
    {2048, ANY, "rabenseifner"},
    {4096, 2048, "nonoverlapping"},
    {4096, 4096, "segmented_ring"},
    {4096, 16384, "recursive_doubling"},
    {4096, ANY, "rabenseifner"},
    {ALL, 2048, "nonoverlapping"},
    {ALL, 16384, "segmented_ring"},
    {ALL, 32768, "recursive_doubling"},
    {ALL, ANY, "rabenseifner"},
};

/* bcast, bytes = count x type size; chain, pipeline and the trees run
 * unsegmented (the fixed rules pass segsize 0). */
static const struct rule bcast_rules[] = {
    {4, 32, "pipeline"},
    {4, 256, "binary_tree"},
    {4, 512, "pipeline"},
    {4, 1024, "knomial"},
    {4, 32768, "linear"},
    {4, 131072, "binary_tree"},
    {4, 262144, "tuned_chain"},
    {4, 524288, "linear"},
    {4, 1048576, "binomial"},
    {4, ANY, "binary_tree"},
    {8, 64, "binary_tree"},
    {8, 128, "binomial"},
    {8, 2048, "binary_tree"},
    {8, 8192, "binomial"},
    {8, 1048576, "linear"},
    {8, ANY, "tuned_chain"},
    {16, 8, "knomial"},
    {16, 64, "binary_tree"},
    {16, 4096, "knomial"},
    {16, 16384, "binary_tree"},
    {16, 32768, "binomial"},
    {16, ANY, "linear"},
    {32, 4096, "knomial"},
    {32, 1048576, "binomial"},
    {32, ANY, "scatter_allgather"},
    {64, 2048, "binomial"},
    {64, ANY, "knomial"},
    {128, ANY, "knomial"},
    {256, 2, "binomial"},
    {256, 16384, "binary_tree"},
    {256, 32768, "linear"},
    {256, 65536, "binary_tree"},
    {256, ANY, "knomial"},
    {1024, 16384, "knomial"},
    {1024, 32768, "split_binary_tree"},
    {1024, ANY, "knomial"},
    {2048, 524288, "knomial"},
    {2048, ANY, "scatter_allgather"},
    {4096, 262144, "knomial"},
    {4096, ANY, "scatter_allgather"},
    {ALL, 8192, "knomial"},
    {ALL, 16384, "binary_tree"},
    {ALL, 262144, "knomial"},
    {ALL, ANY, "scatter_allgather"},
};

/* reduce, commutative operation, bytes = count x type size; every
 * algorithm unsegmented (the fixed rules pass segsize 0). */
static const struct rule reduce_rules[] = {
    {4, 8, "rabenseifner"},
    {4, 16, "tuned_binary"},
    {4, 32, "pipeline"},
    {4, 262144, "linear"},
    {4, 524288, "pipeline"},
    {4, 1048576, "tuned_chain"},
    {4, ANY, "pipeline"},
    {8, 4096, "tuned_binary"},
    {8, 65536, "tuned_chain"},
    {8, 262144, "binomial"},
    {8, 524288, "linear"},
    {8, 1048576, "binomial"},
    {8, ANY, "linear"},
    {16, 8192, "tuned_binary"},
    {16, ANY, "binomial"},
    {32, 4096, "tuned_binary"},
    {32, ANY, "binomial"},
    {256, ANY, "binomial"},
    {512, 8192, "binomial"},
    {512, 16384, "in-order_binary"},
    {512, ANY, "binomial"},
    {2048, ANY, "binomial"},
    {4096, 512, "binomial"},
    {4096, 1024, "in-order_binary"},
    {4096, 8192, "binomial"},
    {4096, 16384, "in-order_binary"},
    {4096, ANY, "binomial"},
    {ALL, 16, "binomial"},
    {ALL, 32, "in-order_binary"},
    {ALL, 1024, "binomial"},
    {ALL, 2048, "in-order_binary"},
    {ALL, 8192, "binomial"},
    {ALL, 16384, "in-order_binary"},
    {ALL, ANY, "binomial"},
};

/* reduce_scatter, commutative operation, bytes = the whole input. */
static const struct rule reduce_scatter_rules[] = {
    {4, 65536, "tuned_ring"},
    {4, 131072, "butterfly"},
    {4, ANY, "tuned_ring"},
    {8, 8, "nonoverlapping"},
    {8, 262144, "recursive_halving"},
    {8, ANY, "tuned_ring"},
    {32, 262144, "recursive_halving"},
    {32, ANY, "tuned_ring"},
    {64, 64, "nonoverlapping"},
    {64, 2048, "recursive_halving"},
    {64, 524288, "butterfly"},
    {64, ANY, "tuned_ring"},
    {128, 256, "nonoverlapping"},
    {128, 512, "recursive_halving"},
    {128, 2048, "butterfly"},
    {128, 4096, "recursive_halving"},
    {128, ANY, "butterfly"},
    {256, 256, "nonoverlapping"},
    {256, 512, "recursive_halving"},
    {256, ANY, "butterfly"},
    {512, 256, "nonoverlapping"},
    {512, 1024, "recursive_halving"},
    {512, ANY, "butterfly"},
    {1024, 512, "nonoverlapping"},
    {1024, 2048, "recursive_halving"},
    {1024, 8192, "butterfly"},
    {1024, 16384, "recursive_halving"},
    {1024, ANY, "butterfly"},
    {2048, 512, "nonoverlapping"},
    {2048, 4096, "recursive_halving"},
    {2048, 16384, "butterfly"},
    {2048, 32768, "recursive_halving"},
    {2048, ANY, "butterfly"},
    {4096, 512, "nonoverlapping"},
    {4096, 4096, "recursive_halving"},
    {4096, ANY, "butterfly"},
    {ALL, 1024, "nonoverlapping"},
    {ALL, 8192, "recursive_halving"},
    {ALL, ANY, "butterfly"},
};

/* allgather, bytes = one rank's block.  tuned's recursive doubling runs
 * Bruck at sizes that are not powers of two (bufpool_model_ompi_choice),
 * and its neighbour exchange a ring at odd sizes (in ag_neighbor). */
static const struct rule allgather_rules[] = {
    {3, ANY, "two_proc"},
    {32, ANY, "recursive_doubling"},
    {64, 1024, "recursive_doubling"},
    {64, 65536, "neighbor"},
    {64, ANY, "ring"},
    {128, 512, "recursive_doubling"},
    {128, 65536, "neighbor"},
    {128, ANY, "ring"},
    {256, 512, "recursive_doubling"},
    {256, 131072, "neighbor"},
    {256, 524288, "ring"},
    {256, 1048576, "neighbor"},
    {256, ANY, "ring"},
    {512, 32, "recursive_doubling"},
    {512, 128, "bruck"},
    {512, 1024, "recursive_doubling"},
    {512, 131072, "neighbor"},
    {512, 524288, "ring"},
    {512, 1048576, "neighbor"},
    {512, ANY, "ring"},
    {1024, 64, "recursive_doubling"},
    {1024, 256, "bruck"},
    {1024, 2048, "recursive_doubling"},
    {1024, ANY, "neighbor"},
    {2048, 4, "recursive_doubling"},
    {2048, 8, "bruck"},
    {2048, 16, "recursive_doubling"},
    {2048, 32, "bruck"},
    {2048, 256, "recursive_doubling"},
    {2048, 512, "bruck"},
    {2048, 4096, "recursive_doubling"},
    {2048, ANY, "neighbor"},
    {4096, 32, "bruck"},
    {4096, 128, "recursive_doubling"},
    {4096, 512, "bruck"},
    {4096, 4096, "recursive_doubling"},
    {4096, ANY, "neighbor"},
    {ALL, 2, "recursive_doubling"},
    {ALL, 8, "bruck"},
    {ALL, 16, "recursive_doubling"},
    {ALL, 512, "bruck"},
    {ALL, 4096, "recursive_doubling"},
    {ALL, ANY, "neighbor"},
};

/* alltoall, bytes = the block for one peer. */
static const struct rule alltoall_rules[] = {
    {3, 2, "pairwise"},
    {3, 4, "two_proc"},
    {3, 16, "pairwise"},
    {3, 64, "two_proc"},
    {3, 256, "pairwise"},
    {3, 4096, "two_proc"},
    {3, 32768, "pairwise"},
    {3, 262144, "linear_sync"},
    {3, 1048576, "two_proc"},
    {3, ANY, "pairwise"},
    {8, 8192, "linear_sync"},
    {8, 16384, "linear"},
    {8, 65536, "linear_sync"},
    {8, 524288, "linear"},
    {8, 1048576, "pairwise"},
    {8, ANY, "linear"},
    {16, 262144, "linear_sync"},
    {16, ANY, "linear"},
    {32, 4, "linear_sync"},
    {32, 512, "modified_bruck"},
    {32, 8192, "linear_sync"},
    {32, 32768, "linear"},
    {32, 262144, "linear_sync"},
    {32, 524288, "linear"},
    {32, ANY, "linear_sync"},
    {64, 512, "modified_bruck"},
    {64, 524288, "linear"},
    {64, ANY, "linear_sync"},
    {128, 1024, "modified_bruck"},
    {128, 2048, "linear"},
    {128, 4096, "linear_sync"},
    {128, 262144, "linear"},
    {128, ANY, "pairwise"},
    {256, 1024, "modified_bruck"},
    {256, 2048, "linear_sync"},
    {256, 262144, "linear"},
    {256, ANY, "pairwise"},
    {512, 1024, "modified_bruck"},
    {512, 8192, "linear_sync"},
    {512, 32768, "linear"},
    {512, ANY, "pairwise"},
    {1024, 512, "modified_bruck"},
    {1024, 8192, "linear_sync"},
    {1024, 16384, "linear"},
    {1024, 131072, "linear_sync"},
    {1024, 262144, "linear"},
    {1024, ANY, "pairwise"},
    {2048, 512, "modified_bruck"},
    {2048, 1024, "linear_sync"},
    {2048, 2048, "linear"},
    {2048, 16384, "linear_sync"},
    {2048, 262144, "linear"},
    {2048, ANY, "linear_sync"},
    {4096, 1024, "modified_bruck"},
    {4096, 4096, "linear_sync"},
    {4096, 8192, "linear"},
    {4096, 131072, "linear_sync"},
    {4096, ANY, "linear"},
    {ALL, 2048, "modified_bruck"},
    {ALL, 8192, "linear_sync"},
    {ALL, 16384, "linear"},
    {ALL, 32768, "linear_sync"},
    {ALL, 65536, "linear"},
    {ALL, ANY, "linear_sync"},
};

static const char *lookup(const struct rule *r, size_t n, int p, size_t bytes)
{
    for (size_t i = 0; i < n; i++) {
        if (p < r[i].p_below && bytes < r[i].bytes_below) {
            return r[i].alg;
        }
    }
    return NULL;
}

#define RULES(r) (r), sizeof(r) / sizeof(*(r))

const char *coll_model_ompi_choice(enum bufpool_model_coll coll, int p, size_t bytes)
{
    const char *alg;
    switch (coll) {
        case BUFPOOL_MODEL_ALLREDUCE:
            return lookup(RULES(allreduce_rules), p, bytes);
        case BUFPOOL_MODEL_BCAST:
            return lookup(RULES(bcast_rules), p, bytes);
        case BUFPOOL_MODEL_REDUCE:
            return lookup(RULES(reduce_rules), p, bytes);
        case BUFPOOL_MODEL_REDUCE_SCATTER:
            return lookup(RULES(reduce_scatter_rules), p, bytes);
        case BUFPOOL_MODEL_ALLTOALL:
            return lookup(RULES(alltoall_rules), p, bytes);
        case BUFPOOL_MODEL_ALLGATHER:
            alg = lookup(RULES(allgather_rules), p, bytes);
            /* tuned's recursive doubling hands sizes that are not powers
             * of two to Bruck. */
            return alg && 0 == strcmp(alg, "recursive_doubling") && (p & (p - 1)) ? "bruck" : alg;
        default:
            return NULL;
    }
}

#undef RULES
