/*
 * coll/bufpool decisions: which algorithm serves a call, and with which
 * pipeline geometry.
 *
 * One function per collective, bufpool_decide_<coll>, all in
 * coll_bufpool_decide.c.  Each takes what the call looks like
 * (bufpool_call_t: communicator size, message bytes, commutativity, ...),
 * the tuning parameters (bufpool_tuning_t) and the algorithm the user
 * forced (or BUFPOOL_ALG_AUTO), and fills a plan: the algorithm, or
 * BUFPOOL_ALG_PREVIOUS to hand the call to the module selected before
 * bufpool, the segment size, the pipeline depth and the scratch bound, and
 * a short reason (shown at coll_bufpool_verbose >= 2).
 *
 * This header and coll_bufpool_decide.c need no Open MPI: the decisions
 * can be unit tested, and replaced by a performance model, on their own.
 * Every rank of a call must reach the same decision from the same inputs.
 */
#ifndef MCA_COLL_BUFPOOL_DECIDE_H
#define MCA_COLL_BUFPOOL_DECIDE_H

#include <stdbool.h>
#include <stddef.h>

#include "coll_bufpool_model.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The collectives bufpool implements: X(name). */
#define BUFPOOL_FOREACH_COLL(X)                                                                    \
    X(allreduce)                                                                                   \
    X(reduce)                                                                                      \
    X(bcast)                                                                                       \
    X(allgather)                                                                                   \
    X(reduce_scatter)                                                                              \
    X(reduce_scatter_block)                                                                        \
    X(alltoall)                                                                                    \
    X(gather)                                                                                      \
    X(scatter)                                                                                     \
    X(scan)                                                                                        \
    X(exscan)                                                                                      \
    X(barrier)

#define BUFPOOL_COLL_ID(name) BUFPOOL_COLL_##name,
typedef enum { BUFPOOL_FOREACH_COLL(BUFPOOL_COLL_ID) BUFPOOL_NCOLLS } bufpool_coll_id_t;
#undef BUFPOOL_COLL_ID

/* Upper bound of coll_bufpool_pipeline_depth. */
#define BUFPOOL_MAX_DEPTH 64
/* Upper bound on the algorithms of one collective, "auto" included. */
#define BUFPOOL_MAX_ALGORITHMS 8
/* Algorithm 0 of every collective is "auto". */
#define BUFPOOL_ALG_AUTO 0
/* A plan's algorithm when the call goes to the previous module. */
#define BUFPOOL_ALG_PREVIOUS (-1)

/* Algorithms of each collective; the names, in the same order, are
 * bufpool_algorithm_names. */
enum {
    BUFPOOL_ALLREDUCE_RECURSIVE_DOUBLING = 1,
    BUFPOOL_ALLREDUCE_RSAG,
    BUFPOOL_ALLREDUCE_RING,
    BUFPOOL_ALLREDUCE_HIER,
    BUFPOOL_ALLREDUCE_NODE,
    BUFPOOL_ALLREDUCE_NODE_RSAG,
    BUFPOOL_ALLREDUCE_HIER_NODE
};
enum { BUFPOOL_REDUCE_CHAIN = 1, BUFPOOL_REDUCE_BINARY, BUFPOOL_REDUCE_RSG, BUFPOOL_REDUCE_NODE };
enum {
    BUFPOOL_BCAST_BINOMIAL = 1,
    BUFPOOL_BCAST_CHAIN,
    BUFPOOL_BCAST_SCATTER_ALLGATHER,
    BUFPOOL_BCAST_LINEAR,
    BUFPOOL_BCAST_NODE,
    BUFPOOL_BCAST_NODE_CMA
};
enum {
    BUFPOOL_ALLGATHER_RING = 1,
    BUFPOOL_ALLGATHER_RECURSIVE_DOUBLING,
    BUFPOOL_ALLGATHER_DIRECT,
    BUFPOOL_ALLGATHER_NODE,
    BUFPOOL_ALLGATHER_NODE_CMA
};
enum {
    BUFPOOL_REDUCE_SCATTER_PAIRWISE = 1,
    BUFPOOL_REDUCE_SCATTER_RING,
    BUFPOOL_REDUCE_SCATTER_RHALVING,
    BUFPOOL_REDUCE_SCATTER_NODE
};
enum {
    BUFPOOL_REDUCE_SCATTER_BLOCK_PAIRWISE = 1,
    BUFPOOL_REDUCE_SCATTER_BLOCK_RING,
    BUFPOOL_REDUCE_SCATTER_BLOCK_RHALVING,
    BUFPOOL_REDUCE_SCATTER_BLOCK_NODE
};
enum { BUFPOOL_ALLTOALL_PAIRWISE = 1, BUFPOOL_ALLTOALL_LINEAR };
enum { BUFPOOL_GATHER_BINOMIAL = 1, BUFPOOL_GATHER_LINEAR, BUFPOOL_GATHER_NODE };
enum { BUFPOOL_SCATTER_BINOMIAL = 1, BUFPOOL_SCATTER_LINEAR, BUFPOOL_SCATTER_NODE };
enum { BUFPOOL_SCAN_CHAIN = 1, BUFPOOL_SCAN_RECURSIVE_DOUBLING, BUFPOOL_SCAN_NODE };
enum { BUFPOOL_EXSCAN_CHAIN = 1, BUFPOOL_EXSCAN_RECURSIVE_DOUBLING, BUFPOOL_EXSCAN_NODE };
enum { BUFPOOL_BARRIER_NODE = 1 };

/* The node algorithms (allreduce "node" and "node_rsag"; reduce, bcast,
 * allgather, reduce_scatter(_block), gather, scatter, scan, exscan and
 * barrier "node"; bcast and allgather "node_cma", node with single-copy
 * reads above; coll_bufpool_node.c) serve communicators on one host, what
 * each rank posts within one shared slot of this many signature bytes: the
 * message (the whole input of reduce_scatter(_block)), allgather's and
 * gather's block, and all p blocks of scatter (the root posts them at
 * once). */
#define BUFPOOL_NODE_MAX_BYTES ((size_t)4096)
/* Above it allreduce node_rsag and reduce node serve commutative
 * operations of at least p elements only (their fallbacks when no segment
 * can be had are rsag and binary), in rounds of at least this many bytes
 * per rank (the plan's segment) through a second segment, a ring of the
 * plan's depth, so an element must be at most BUFPOOL_NODE_CHUNK / p
 * bytes.  bcast and allgather node go on through the same segment at any
 * size, in rounds of the plan's segment (at least a page), cut at any
 * byte. */
#define BUFPOOL_NODE_CHUNK ((size_t)64 << 10)

/* Whether alg is one of the node algorithms of collective id; the most
 * bytes (as the call's bytes count them) it serves on p ranks (SIZE_MAX:
 * bcast and allgather node, and allreduce node_rsag and reduce node within
 * the conditions above). */
bool bufpool_is_node_alg(int id, int alg);
size_t bufpool_node_alg_max_bytes(int id, int alg, int p);
/* bcast and allgather node_cma: above BUFPOOL_NODE_MAX_BYTES the blocks
 * are read straight from their owners (CMA) where the ranks may. */
bool bufpool_is_node_cma_alg(int id, int alg);

/* Small sends whose receiver never waits for anything but them go out
 * blocking, so that the PML may send them inline (coll_bufpool_pipeline.h,
 * bufpool_reqs_send_small_now).  The bound is vader's
 * btl_vader_max_inline_send (256); bcast's auto choice depends on it too. */
#define BUFPOOL_INLINE_SEND_MAX 256

/* Transfers that need no scratch (2-rank pairwise reduce-scatter out of
 * place) use segments this many times segment_size: fewer rendezvous
 * handshakes, the same overlap (measured 0.73-0.80x tuned at 512K-8M with
 * 1M segments against 0.89-1.14x with 128K). */
#define BUFPOOL_DIRECT_SEGMENT_FACTOR 8

/* Bounds of coll_bufpool_segment_size (and of a rules row's seg). */
#define BUFPOOL_SEGMENT_MIN ((size_t)4 << 10)
#define BUFPOOL_SEGMENT_MAX ((size_t)64 << 20)

/* Upper bound of coll_bufpool_max_requests (requests in flight per rank
 * and call); its default, and 0 = no bound. */
#define BUFPOOL_MAX_REQUESTS_LIMIT   65536
#define BUFPOOL_MAX_REQUESTS_DEFAULT 0

/* The names of the collectives and of their algorithms ("auto" first,
 * NULL-terminated), in the order of the enums above. */
extern const char *const bufpool_coll_names[BUFPOOL_NCOLLS];
extern const char *const *const bufpool_algorithm_names[BUFPOOL_NCOLLS];

struct bufpool_rules;
struct bufpool_choice;

/* The tuning parameters, as checked at MPI_Init (one snapshot per call). */
typedef struct bufpool_tuning {
    size_t segment_size; /* coll_bufpool_segment_size                 */
    int pipeline_depth;  /* coll_bufpool_pipeline_depth (1..MAX_DEPTH) */
    size_t min_size;     /* below: previous module                    */
    size_t small_size;   /* up to: latency-bound algorithms (auto)    */
    /* Link classes of the cost model (coll_bufpool_model_links); auto's
     * choice on communicators that span hosts comes from the model. */
    const struct bufpool_model_links *links;
    /* coll_bufpool_max_requests: point-to-point requests one rank keeps in
     * flight in one call (0: no bound). */
    int max_requests;
    /* The rows consulted before each collective's own default: the user's
     * file (coll_bufpool_rules_file), then rules/default.rules (see
     * coll_bufpool_rules.h).  NULL: none. */
    const struct bufpool_rules *rules;
} bufpool_tuning_t;

/* What a call looks like, as far as choosing goes: only what MPI requires
 * every rank of the communicator to agree on (its size and placement, the
 * collective, its form, the operation, MPI_IN_PLACE where it is all or
 * none, and the bytes of the type signature), never a datatype's layout or
 * handle, an argument that is insignificant at some ranks, or local state,
 * so that every rank reaches the same plan (docs/collectives.md,
 * "Every rank makes the same choice"). */
typedef struct bufpool_call {
    int comm_size;
    int hosts;     /* hosts the communicator spans, the same on every
                      rank (0 or 1: one host)                           */
    int max_ppn;   /* the most of its ranks on one host, the same on
                      every rank (0: not known; the model then assumes
                      blocks of ceil(comm_size / hosts))                */
    size_t count;  /* elements (reductions and scans; else 0)          */
    size_t bytes;  /* message bytes per process: bytes of the type
                      signature (per block for the gathers, scatters,
                      allgather and alltoall; the whole input of
                      reduce_scatter(_block); 0 for barrier)            */
    bool commute;  /* the operation is commutative (else true)        */
    bool in_place; /* MPI_IN_PLACE where MPI requires it on every rank
                      or none (allreduce, reduce_scatter(_block),
                      alltoall); else false                             */
} bufpool_call_t;

/* How a call runs. */
typedef struct bufpool_plan {
    int alg;              /* an algorithm, or BUFPOOL_ALG_PREVIOUS          */
    size_t seg_bytes;     /* bytes of scratch per pipeline segment          */
    int depth;            /* segments in flight per stream                  */
    size_t scratch_bound; /* segment_size x pipeline_depth: the most scratch
                             one call holds                                 */
    int max_requests;     /* requests in flight per rank (0: no bound); an
                             algorithm past it waits for its oldest request */
    const char *why;      /* reason, for coll_bufpool_verbose >= 2           */
} bufpool_plan_t;

/* The plan of a call from what its size alone decided (choice: a row, a
 * forced algorithm, or BUFPOOL_SOURCE_DEFAULT for the collective's own
 * default), finished with the call's own constraints (commutativity,
 * scratch span, counts, max_requests).  It may still hand the call over
 * (plan->alg BUFPOOL_ALG_PREVIOUS) when the algorithm cannot serve it. */
typedef void (*bufpool_plan_fn)(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                const struct bufpool_choice *choice, bufpool_plan_t *plan);

/* The whole decision at once (for tests and bench/coll_model; the
 * component resolves the rows per communicator instead, coll_bufpool_rules.h):
 * forced (or BUFPOOL_ALG_AUTO), else the first row of tuning->rules that
 * matches, then the plan. */
typedef void (*bufpool_decide_fn)(const bufpool_call_t *call, const bufpool_tuning_t *tuning,
                                  int forced, bufpool_plan_t *plan);

/* The plan every decision starts from: alg, the tuning's segment size and
 * depth, their product as the bound, no reason yet. */
void bufpool_plan_init(bufpool_plan_t *plan, const bufpool_tuning_t *tuning, int alg);

/* A forced algorithm as it applies to a communicator: allreduce's hier on
 * one host, or under max_requests (which it does not honour), is auto, and
 * *note (when not NULL) then says why; else *note is NULL. */
int bufpool_forced_for(bufpool_coll_id_t id, int forced, int hosts, const bufpool_tuning_t *tuning,
                       const char **note);

#define BUFPOOL_DECIDE_DECL(name)                                                                  \
    void bufpool_plan_##name(const bufpool_call_t *call, const bufpool_tuning_t *tuning,           \
                             const struct bufpool_choice *choice, bufpool_plan_t *plan);           \
    void bufpool_decide_##name(const bufpool_call_t *call, const bufpool_tuning_t *tuning,         \
                               int forced, bufpool_plan_t *plan);
BUFPOOL_FOREACH_COLL(BUFPOOL_DECIDE_DECL)
#undef BUFPOOL_DECIDE_DECL

/* Requests allreduce rsag keeps in its main (unbounded) set for a call cut
 * in segments of seg_bytes: 2 (p - 1) per segment of a block. */
size_t bufpool_rsag_requests(const bufpool_call_t *call, size_t seg_bytes);

/* ---------------------------------------------------------------------- */
/* Correctness guards of the size maps. */

struct bufpool_range;

/* The largest block (signature bytes, inclusive) for which tuned's fixed
 * decision of Open MPI 4.1 and 5.0 takes the modified Bruck alltoall on a
 * communicator of p ranks; 0 where it never does (below 16 ranks). */
size_t bufpool_bruck_alltoall_max_bytes(int p);

/* A range of byte counts, both ends included. */
typedef struct bufpool_bytes_span {
    size_t min, max;
} bufpool_bytes_span_t;

#define BUFPOOL_RING_ALLREDUCE_SPANS_MAX 3

/* The spans of signature bytes in which tuned's fixed decision of Open MPI
 * 4.1 to 6.0.x takes its ring or segmented ring allreduce for a commutative
 * operation on a communicator of p ranks (at most
 * BUFPOOL_RING_ALLREDUCE_SPANS_MAX, in increasing order, into spans);
 * returns how many. */
size_t bufpool_ring_allreduce_spans(int p, bufpool_bytes_span_t *spans);

/* Serve what a size map hands back up to bytes_max: every range of map
 * (n ranges, the last ending at SIZE_MAX) whose choice is the previous
 * module from a rules row or min_size takes serve instead, up to
 * bytes_max (a range across it is split); a "previous" the user forced
 * (coll_bufpool_<coll>_algorithm, the info key) stays theirs.  map has room
 * for n + 1 ranges.  Returns the new number of ranges. */
size_t bufpool_sizemap_serve_upto(struct bufpool_range *map, size_t n, size_t bytes_max,
                                  const struct bufpool_choice *serve);

/* The same from bytes_min up to bytes_max: a handed-back range across
 * bytes_min is split there too, so map needs room for n + 2 ranges. */
size_t bufpool_sizemap_serve_range(struct bufpool_range *map, size_t n, size_t bytes_min,
                                   size_t bytes_max, const struct bufpool_choice *serve);

/* Mark every choice of map from bytes_min to bytes_max guarded (never
 * handed back: bufpool_choice_t), splitting the ranges across either
 * bound (room for n + 2 ranges).  Returns the new number of ranges. */
size_t bufpool_sizemap_guard(struct bufpool_range *map, size_t n, size_t bytes_min,
                             size_t bytes_max);

/* bufpool_plan_<coll> and bufpool_decide_<coll> indexed by
 * bufpool_coll_id_t. */
extern const bufpool_plan_fn bufpool_plan[BUFPOOL_NCOLLS];
extern const bufpool_decide_fn bufpool_decide[BUFPOOL_NCOLLS];

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_DECIDE_H */
