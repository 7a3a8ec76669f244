/*
 * The pipelining toolkit every bufpool collective is built from:
 *
 *   bufpool_segs_t     cuts count elements of a datatype into segments
 *                      whose scratch span fits coll_bufpool_segment_size;
 *   bufpool_slots_t    pipeline_depth scratch slots, one pool buffer;
 *   bufpool_reqs_t     sends (and direct receives) posted as soon as their
 *                      data or destination is ready and completed together
 *                      at the end (requests cached in the module, so no
 *                      allocation per call);
 *   bufpool_rwin_t     an in-order stream of receives kept depth deep: the
 *                      collective waits for unit u, consumes it (reduces,
 *                      forwards, unpacks) and releases it, which posts unit
 *                      u + depth into the same slot.  The transfer of later
 *                      units overlaps the work on the current one;
 *   bufpool_sring_t    results formed in scratch slots and sent on, a slot
 *                      reused once its send has completed;
 *   bufpool_pairwise_reduce_scatter
 *                      the pipelined pairwise reduce-scatter stream shared
 *                      by allreduce, reduce_scatter(_block) and reduce.
 *
 * Deadlock freedom: sends never wait for scratch (they read user buffers or
 * slots that stay put until the end of the step), so a rank only ever blocks
 * on a receive whose matching send is already posted or will be posted by a
 * rank that does not wait on us, or (sring) on the completion of a send whose
 * receiver does not wait on us.  Each collective documents its order.
 */
#ifndef MCA_COLL_BUFPOOL_PIPELINE_H
#define MCA_COLL_BUFPOOL_PIPELINE_H

#include "coll_bufpool.h"

#include <stddef.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

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

/* Segments of at most seg_bytes of scratch (at least one element each). */
void bufpool_segs_init(bufpool_segs_t *segs, size_t count, struct ompi_datatype_t *dtype,
                       size_t seg_bytes);

static inline size_t bufpool_segs_count(const bufpool_segs_t *segs, size_t j)
{
    return j + 1 < segs->nseg ? segs->seg_count : segs->count - j * segs->seg_count;
}

/* Byte offset of segment j from the message's buffer pointer. */
static inline ptrdiff_t bufpool_segs_offset(const bufpool_segs_t *segs, size_t j)
{
    return (ptrdiff_t)(j * segs->seg_count) * segs->extent;
}

/* Span in bytes of n elements (true extent of the first plus extents). */
size_t bufpool_span(struct ompi_datatype_t *dtype, size_t n, ptrdiff_t *gap);

/* ---------------------------------------------------------------------- */
/* Scratch slots. */

typedef struct bufpool_slots {
    char *mem;        /* the scratch buffer (NULL when n == 0)  */
    size_t mem_bytes; /* bytes asked for                        */
    int n;            /* slots                                  */
    size_t slot_span; /* bytes per slot                         */
    ptrdiff_t gap;    /* datatype true lower bound              */
} bufpool_slots_t;

/* n slots of slot_span bytes each for data of the given gap.  Returns
 * OMPI_SUCCESS or OMPI_ERR_OUT_OF_RESOURCE. */
int bufpool_slots_get(bufpool_slots_t *slots, int n, size_t slot_span, ptrdiff_t gap);
void bufpool_slots_put(bufpool_slots_t *slots);

/* The buffer pointer to hand to MPI for slot i (gap already applied). */
static inline void *bufpool_slot(const bufpool_slots_t *slots, int i)
{
    return slots->mem + (size_t)i * slots->slot_span - slots->gap;
}

/* Depth to use for a message of nseg segments: the plan's depth, capped
 * by what the message can use. */
int bufpool_depth_for(int depth, size_t nseg);
/* Receives to keep posted when every one lands in the user's buffer (no
 * scratch behind them): all of them, up to the window's BUFPOOL_MAX_DEPTH. */
int bufpool_direct_depth_for(size_t nunits);

/* ---------------------------------------------------------------------- */
/* Requests completed together at the end of a call. */

typedef struct bufpool_reqs {
    ompi_request_t ***cache; /* the module's request array (grows)  */
    size_t *cache_cap;
    size_t n;
    struct ompi_communicator_t *comm;
} bufpool_reqs_t;

void bufpool_reqs_init(bufpool_reqs_t *reqs, mca_coll_bufpool_module_t *module,
                       struct ompi_communicator_t *comm);
int bufpool_reqs_send(bufpool_reqs_t *reqs, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int peer, int tag);
int bufpool_reqs_recv(bufpool_reqs_t *reqs, void *buf, size_t count, struct ompi_datatype_t *dtype,
                      int peer, int tag);
/* Wait for every request posted so far (then the set is empty again). */
int bufpool_reqs_wait(bufpool_reqs_t *reqs);
/* Send, or receive, every segment of buf as its own message. */
int bufpool_reqs_send_segs(bufpool_reqs_t *reqs, const void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag);
int bufpool_reqs_recv_segs(bufpool_reqs_t *reqs, void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag);

/* ---------------------------------------------------------------------- */
/* In-order receive stream. */

typedef struct bufpool_recv_unit {
    int peer;
    size_t count;
    struct ompi_datatype_t *dtype;
    void *buf; /* NULL: receive into the unit's scratch slot */
} bufpool_recv_unit_t;

typedef void (*bufpool_describe_fn)(void *ctx, size_t unit, bufpool_recv_unit_t *out);

typedef struct bufpool_rwin {
    struct ompi_communicator_t *comm;
    int tag;
    const bufpool_slots_t *slots; /* may be NULL if every unit has buf */
    size_t nunits;
    size_t depth;
    size_t posted; /* units posted so far (0..nunits)  */
    bufpool_describe_fn describe;
    void *ctx;
    ompi_request_t *req[BUFPOOL_MAX_DEPTH];
    void *buf[BUFPOOL_MAX_DEPTH];
} bufpool_rwin_t;

/* The most common stream: one peer's segments of a message, in order, into
 * scratch slots (direct == NULL) or straight into a buffer laid out like
 * the message.  Pass bufpool_peer_segs_describe with it. */
typedef struct bufpool_peer_segs {
    int peer;
    const bufpool_segs_t *segs;
    struct ompi_datatype_t *dtype;
    char *direct;
} bufpool_peer_segs_t;

void bufpool_peer_segs_describe(void *ctx, size_t unit, bufpool_recv_unit_t *out);

/* Post the first min(depth, nunits) receives.  depth <= slots->n when
 * slots are used. */
int bufpool_rwin_start(bufpool_rwin_t *w, struct ompi_communicator_t *comm, int tag,
                       const bufpool_slots_t *slots, size_t depth, size_t nunits,
                       bufpool_describe_fn describe, void *ctx);
/* Wait for unit (units are consumed in order) and return where it landed. */
int bufpool_rwin_wait(bufpool_rwin_t *w, size_t unit, void **buf);
/* The caller is done with unit's buffer: post unit + depth into it. */
int bufpool_rwin_release(bufpool_rwin_t *w, size_t unit);
/* Error path: cancel and complete whatever is still posted. */
void bufpool_rwin_abort(bufpool_rwin_t *w);

/* ---------------------------------------------------------------------- */
/* Reductions and copies. */

/* inout = in op inout (in is the LEFT operand: earlier ranks). */
static inline void bufpool_reduce(struct ompi_op_t *op, const void *in, void *inout, size_t count,
                                  struct ompi_datatype_t *dtype)
{
    ompi_op_reduce(op, (void *)in, inout, count, dtype);
}

/* out = left op right, out distinct from both. */
void bufpool_reduce3(struct ompi_op_t *op, const void *left, const void *right, void *out,
                     size_t count, struct ompi_datatype_t *dtype);

/* dst = src for count elements of dtype (same layout). */
int bufpool_copy(void *dst, const void *src, size_t count, struct ompi_datatype_t *dtype);

/* Send count elements and receive rcount elements at once. */
int bufpool_sendrecv(const void *sbuf, size_t scount, struct ompi_datatype_t *sdtype, int dst,
                     void *rbuf, size_t rcount, struct ompi_datatype_t *rdtype, int src, int tag,
                     struct ompi_communicator_t *comm);

/* ---------------------------------------------------------------------- */
/* Sharing one scratch buffer between streams. */

/* Slots first .. first + n - 1 of all, as a set of their own (never put:
 * the owner of all puts the memory back). */
bufpool_slots_t bufpool_slots_view(const bufpool_slots_t *all, int first, int n);

/* Segment bytes for an algorithm whose busiest rank needs need_slots slots
 * of one segment each: seg_bytes, shrunk when depth is below need_slots so
 * that need_slots segments still fit depth x seg_bytes.  Depends only on
 * the plan, so every rank cuts a message into the same segments. */
size_t bufpool_segment_bytes_for(size_t seg_bytes, int depth, int need_slots);

/* ---------------------------------------------------------------------- */
/* Outbound slot ring: results computed into scratch and sent on.  A result
 * must stay in its slot until its send completes, so unit u reuses the slot
 * of unit u - n only after that send is done: at most n sends in flight. */

typedef struct bufpool_sring {
    bufpool_slots_t slots; /* a view: the ring never puts it */
    size_t next;           /* units acquired so far */
    ompi_request_t *req[BUFPOOL_MAX_DEPTH];
} bufpool_sring_t;

/* A ring over slots->n (at most BUFPOOL_MAX_DEPTH) slots. */
void bufpool_sring_init(bufpool_sring_t *ring, const bufpool_slots_t *slots);
/* The slot of the next unit, once the send that used it last is complete. */
int bufpool_sring_acquire(bufpool_sring_t *ring, void **buf);
/* Send the unit acquired last, from its slot. */
int bufpool_sring_send(bufpool_sring_t *ring, size_t count, struct ompi_datatype_t *dtype, int peer,
                       int tag, struct ompi_communicator_t *comm);
/* Complete every send still in flight (on error paths too). */
int bufpool_sring_drain(bufpool_sring_t *ring);

/* ---------------------------------------------------------------------- */
/* Pipelined pairwise reduce-scatter: the stream behind allreduce (rsag),
 * reduce_scatter and reduce_scatter_block.
 *
 * Rank r owns block r.  Every rank posts, before it waits for anything,
 * the sends of its contribution to every other block (segment-major, read
 * from the input, so no scratch), then streams the p - 1 contributions to
 * its own block through pipeline_depth scratch slots, reducing segment j
 * of one source while later ones are still arriving.  segment_done is
 * called as soon as segment j of the block is final (allreduce starts its
 * allgather there).  Each block is reduced once, by its owner, in a fixed
 * order: commutative operations only.
 *
 * Without a place for the block (acc NULL: a reduce's non-root ranks), each
 * segment is reduced into a ring of scratch slots and sent to result_peer
 * as soon as it is final; the slots are then split between the receive
 * window and the ring (callers cut segments with
 * bufpool_segment_bytes_for(2) so that both get one).
 *
 * Blocking waits: on the receives of the stream, whose sends were all
 * posted before anyone waits, and (acc NULL) on a send to result_peer that
 * peer receives without waiting for anything; the other sends complete at
 * the caller's bufpool_reqs_wait. */

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

typedef int (*bufpool_segment_done_fn)(void *ctx, size_t j, void *seg, size_t count);

typedef struct bufpool_rs_stream {
    const void *src;     /* this rank's input: every block, block layout  */
    void *acc;           /* where my block is reduced (its first element),
                            or NULL: in scratch, sent to result_peer      */
    bool acc_holds_mine; /* in place: acc already holds my contribution   */
    const bufpool_blocks_t *blocks;
    struct ompi_datatype_t *dtype;
    struct ompi_op_t *op;
    int tag;
    size_t seg_bytes;                     /* bytes per segment (the plan's) */
    int depth;                            /* scratch slots (the plan's)     */
    bufpool_segment_done_fn segment_done; /* NULL: nothing to do        */
    void *ctx;
    int result_peer; /* acc NULL: where the block goes, with result_tag */
    int result_tag;
} bufpool_rs_stream_t;

/* The segments the stream cuts a block of len elements into, for the
 * ranks that receive a block's results (every rank of a call cuts alike). */
void bufpool_rs_block_segs(const bufpool_rs_stream_t *stream, size_t len, bufpool_segs_t *segs);

/* Sends go into reqs: the caller completes them with bufpool_reqs_wait
 * (also after an error) before it touches src or returns. */
int bufpool_pairwise_reduce_scatter(const bufpool_rs_stream_t *stream, bufpool_reqs_t *reqs,
                                    struct ompi_communicator_t *comm);

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

static inline int bufpool_vrank_to_rank(int v, int root, int p)
{
    return (v + root) % p;
}

/* ---------------------------------------------------------------------- */
/* Small sends whose receiver never waits for anything but them (or has
 * its receive posted already): a blocking send lets the PML send a small
 * message inline, without a request, which is a few percent of the
 * latency of a small collective at p = 2.  Larger ones are posted into
 * reqs so that they overlap the rest of the call.  The bound,
 * BUFPOOL_INLINE_SEND_MAX (coll_bufpool_decide.h), is vader's
 * btl_vader_max_inline_send (256): above it a blocking send returns only
 * once the receiver has taken the fragment, and on an oversubscribed node
 * that costs a scheduling round per send (bcast and alltoall of 1 KiB at
 * p = 4 were 1.6-2.4 x slower with 1024 here). */
int bufpool_reqs_send_small_now(bufpool_reqs_t *reqs, const void *buf, size_t count,
                                struct ompi_datatype_t *dtype, size_t bytes, int peer, int tag);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_PIPELINE_H */
