/*
 * Pipeline geometry of coll/bufpool: how a message is cut into segments,
 * how many are in flight, how a vector is split into per-rank blocks, and
 * the binomial tree over virtual ranks, the node algorithms' groups.
 * Arithmetic only: no Open MPI, so
 * that it is unit tested on its own (test/unit/test_coll_geometry.c).
 * Every rank of a call computes the same geometry from the same inputs.
 */
#ifndef MCA_COLL_BUFPOOL_GEOMETRY_H
#define MCA_COLL_BUFPOOL_GEOMETRY_H

#include <stddef.h>

#include "decide/coll_bufpool_decide.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------------- */
/* Segmenting. */

typedef struct bufpool_segs {
    size_t count;     /* elements in the whole message                   */
    size_t seg_count; /* elements per segment (the last may be shorter)  */
    size_t nseg;      /* segments (0 when count is 0)                    */
    ptrdiff_t extent; /* of one element                                  */
    ptrdiff_t gap;    /* true lower bound: scratch starts at buf + gap   */
    size_t seg_span;  /* scratch bytes for seg_count elements            */
} bufpool_segs_t;

/* Segments of at most seg_bytes of type signature (at least one element
 * each) for count elements of a datatype of the given size (signature
 * bytes of one element), extent, true lower bound and true extent.  Cut on
 * the signature, which every rank agrees on, never on the layout, which
 * each rank may describe differently (a resized or vector type of the same
 * elements): so every rank cuts a message into the same segments.  A
 * segment's scratch (seg_span) is its span in the local layout: seg_bytes
 * for a contiguous type, up to extent / size times that with gaps. */
void bufpool_segs_cut(bufpool_segs_t *segs, size_t count, size_t type_size, ptrdiff_t extent,
                      ptrdiff_t true_lb, ptrdiff_t true_extent, size_t seg_bytes);

static inline size_t bufpool_segs_count(const bufpool_segs_t *segs, size_t j)
{
    return j + 1 < segs->nseg ? segs->seg_count : segs->count - j * segs->seg_count;
}

/* Segment j of a cut message: its elements and its byte offset from the
 * message's buffer pointer. */
typedef struct bufpool_seg {
    size_t n;
    ptrdiff_t off;
} bufpool_seg_t;

/* Byte offset of segment j from the message's buffer pointer. */
static inline ptrdiff_t bufpool_segs_offset(const bufpool_segs_t *segs, size_t j)
{
    return (ptrdiff_t)(j * segs->seg_count) * segs->extent;
}

static inline bufpool_seg_t bufpool_seg(const bufpool_segs_t *segs, size_t j)
{
    const bufpool_seg_t s = {bufpool_segs_count(segs, j), bufpool_segs_offset(segs, j)};
    return s;
}

/* Depth to use for a message of nseg segments: the plan's depth, capped
 * by what the message can use. */
int bufpool_depth_for(int depth, size_t nseg);
/* Receives to keep posted when every one lands in the user's buffer (no
 * scratch behind them): all of them, up to the window's BUFPOOL_MAX_DEPTH. */
int bufpool_direct_depth_for(size_t nunits);

/* Segment bytes for an algorithm whose busiest rank needs need_slots slots
 * of one segment each: seg_bytes, shrunk when depth is below need_slots so
 * that need_slots segments still fit depth x seg_bytes.  Depends only on
 * the plan, so every rank cuts a message into the same segments. */
size_t bufpool_segment_bytes_for(size_t seg_bytes, int depth, int need_slots);

/* ---------------------------------------------------------------------- */
/* Blocks of a vector, one per rank (reduce_scatter, allreduce's rsag,
 * reduce's rsg). */

/* One block per rank. */
typedef struct bufpool_blocks {
    int n;             /* blocks (the communicator size)               */
    const int *counts; /* elements of block b, or NULL for an even split */
    size_t total;      /* even split: total elements; the first
                          total % n blocks get one more                  */
} bufpool_blocks_t;

size_t bufpool_blocks_len(const bufpool_blocks_t *blocks, int b);
/* First element of block b (O(b) with counts). */
size_t bufpool_blocks_disp(const bufpool_blocks_t *blocks, int b);

/* ---------------------------------------------------------------------- */
/* Binomial trees over virtual ranks v = (rank - root + p) % p, root 0.
 * The subtree of v is the vranks [v, v + bufpool_bmtree_size(v, p)); the
 * children of v are v + m for m = 1, 2, 4, ... while m < lowbit(v) (any m
 * for the root) and v + m < p, and their subtrees tile v's in that order,
 * so a subtree's blocks are contiguous in vrank order. */

static inline int bufpool_bmtree_size(int v, int p)
{
    if (0 == v) {
        return p;
    }
    int low = v & -v;
    return low < p - v ? low : p - v;
}

static inline int bufpool_bmtree_parent(int v)
{
    return v & (v - 1);
}

/* Children are v + m for m < this bound (and v + m < p). */
static inline int bufpool_bmtree_mask_end(int v, int p)
{
    return 0 == v ? p : (v & -v);
}

/* At most one child per bit of an int. */
#define BUFPOOL_BMTREE_MAX_KIDS 31

/* The children of v in increasing vrank order (their number).  Senders
 * that want the largest subtree first walk the list backwards. */
static inline int bufpool_bmtree_kids(int v, int p, int kids[BUFPOOL_BMTREE_MAX_KIDS])
{
    int n = 0, end = bufpool_bmtree_mask_end(v, p);
    for (int m = 1; m < end && v + m < p; m <<= 1) {
        kids[n++] = v + m;
    }
    return n;
}

static inline int bufpool_vrank_to_rank(int v, int root, int p)
{
    return (v + root) % p;
}

/* ---------------------------------------------------------------------- */
/* The node algorithms' groups (coll_bufpool_node.c's two-level fan-in and
 * fan-out among many ranks of one host). */

/* Groups of the p ranks of a node segment, as contiguous ranges of ranks,
 * so that the groups' partial reductions (each in rank order) reduced in
 * group order keep the order MPI requires of non-commutative operations:
 * group k is ranks bounds[k] .. bounds[k + 1] - 1 (bounds: p + 1 entries);
 * returns the number of groups.  Up to flat_max ranks one group: every
 * rank reads every rank's slot.  Above, groups of at most g =
 * ceil(sqrt(p)) ranks that never span a change of domain (domain[r]: the
 * last-level cache, or memory, that rank r is bound within, alike for the
 * ranks that share it; negative: not bound within one): each run of ranks
 * of one domain is cut into ceil(len / g) groups of near-equal sizes.
 * Where a domain is not known, or the runs are so short (ranks placed
 * round robin) that they would make more than 2 g groups, the domains are
 * left out and all p ranks form one run.  Every rank computes the same
 * groups from the same domains. */
int bufpool_node_groups(const long *domain, int p, int flat_max, int *bounds);

#ifdef __cplusplus
}
#endif

#endif /* MCA_COLL_BUFPOOL_GEOMETRY_H */
