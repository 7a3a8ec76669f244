/*
 * Alpha-beta-gamma cost model of the collectives, free of Open MPI types so
 * that the component, the bench/coll_model tool and the unit tests share it.
 *
 * A step that moves b bytes over link class c costs alpha_c + b * beta_c
 * (beta = 1 / bandwidth), and reducing b bytes costs b * gamma_c (gamma =
 * 1 / reduction rate).  Ranks are placed in blocks of ppn per host (Open
 * MPI's default --map-by slot); a step between ranks d apart crosses hosts
 * when the pair straddles a host boundary, and then the ranks of one host
 * that cross at the same time share that host's link (bandwidth / flows).
 * This is the Hockney model with the contention term of Thakur, Rabenseifner
 * and Gropp, "Optimization of Collective Communication Operations in MPICH",
 * IJHPCA 19(1), 2005, extended by link class.  See docs/multihost.md.
 */
#ifndef COLL_BUFPOOL_MODEL_H
#define COLL_BUFPOOL_MODEL_H

#include <stddef.h>

enum bufpool_link_class {
    BUFPOOL_LINK_SHM, /* inside a host: shared memory (vader)          */
    BUFPOOL_LINK_TCP, /* between hosts over TCP (the emulated cluster) */
    BUFPOOL_LINK_IB,  /* InfiniBand HDR (documented values)            */
    BUFPOOL_LINK_EFA, /* AWS EFA (documented values)                   */
    BUFPOOL_LINK_CLASSES
};

struct bufpool_link {
    double alpha; /* seconds per message                         */
    double beta;  /* seconds per byte (1 / bandwidth)            */
    double gamma; /* seconds per byte reduced (1 / reduction rate) */
};

/* The link classes in force: intra for ranks of one host, inter between hosts. */
struct bufpool_model_links {
    struct bufpool_link link[BUFPOOL_LINK_CLASSES];
    int inter; /* the class used between hosts */
};

struct bufpool_model_topo {
    int p;          /* communicator size          */
    int hosts;      /* hosts it spans             */
    size_t segment; /* pipeline segment, bytes */
    /* Most ranks on one host (counted by the component); 0: blocks of
     * ceil(p / hosts).  An uneven placement (3 + 1) is modeled as blocks of
     * this many ranks: the fullest host's link is the bottleneck. */
    int ppn;
};

enum bufpool_model_coll {
    BUFPOOL_MODEL_ALLREDUCE,
    BUFPOOL_MODEL_REDUCE,
    BUFPOOL_MODEL_BCAST,
    BUFPOOL_MODEL_ALLGATHER,
    BUFPOOL_MODEL_REDUCE_SCATTER,
    BUFPOOL_MODEL_ALLTOALL,
    BUFPOOL_MODEL_GATHER,
    BUFPOOL_MODEL_SCATTER,
    BUFPOOL_MODEL_SCAN,
    BUFPOOL_MODEL_COLLS
};

/* One modeled algorithm.  bufpool says whether coll/bufpool implements it
 * (and then name is its coll_bufpool_<coll>_algorithm value); bench's
 * tables add Open MPI tuned's algorithms, modeled so that the tools can
 * compare (bench/coll_model_ompi.h). */
struct bufpool_model_alg {
    const char *name;
    int bufpool;
    double (*time)(const struct bufpool_model_links *, const struct bufpool_model_topo *,
                   size_t bytes);
};

/* bufpool's algorithms of a collective, in the order of the enums of
 * coll_bufpool_decide.h, terminated by a NULL name. */
const struct bufpool_model_alg *bufpool_model_algs(enum bufpool_model_coll coll);
const char *bufpool_model_coll_name(enum bufpool_model_coll coll);
const char *bufpool_model_link_name(enum bufpool_link_class c);

/* Defaults: shm and tcp measured on the emulated cluster, ib and efa from
 * published figures (sources in coll_bufpool_model.c and docs/multihost.md). */
void bufpool_model_links_default(struct bufpool_model_links *links);

/* Overrides "class:alpha_us,bandwidth_GBps,reduce_GBps" separated by ';' or
 * newlines ('#' starts a comment; an empty field keeps the value), and
 * "inter=class".  Returns 0, or -1 with a message naming the bad field in
 * err. */
int bufpool_model_links_parse(struct bufpool_model_links *links, const char *text, char *err,
                              size_t errlen);

/* The fastest algorithm of table a (terminated by a NULL name) for bytes of
 * coll on topo, leaving out the rows of skip_mask (bit i: row i) and those
 * that cannot serve the communicator; its index, and its time in *time_out
 * when not NULL. */
int bufpool_model_best_in(const struct bufpool_model_alg *a, enum bufpool_model_coll coll,
                          const struct bufpool_model_links *links,
                          const struct bufpool_model_topo *topo, size_t bytes,
                          unsigned long skip_mask, double *time_out);

/* The fastest of bufpool's algorithms (bufpool_model_algs). */
int bufpool_model_best(enum bufpool_model_coll coll, const struct bufpool_model_links *links,
                       const struct bufpool_model_topo *topo, size_t bytes, double *time_out);

/* What bufpool's auto takes from the model: the fastest bufpool algorithm,
 * except the rings of allreduce and reduce_scatter below 8 ranks and
 * reduce_scatter's rhalving (forced only; see coll_bufpool_model.c).  Its
 * index, as bufpool_model_best. */
int bufpool_model_auto(enum bufpool_model_coll coll, const struct bufpool_model_links *links,
                       const struct bufpool_model_topo *topo, size_t bytes, double *time_out);

#endif
