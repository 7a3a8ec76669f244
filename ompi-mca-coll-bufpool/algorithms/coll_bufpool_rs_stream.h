/*
 * The pipelined pairwise reduce-scatter stream (coll_bufpool_rs_stream.c), the
 * ring (coll_bufpool_rs_ring.c) and recursive halving (coll_bufpool_rs_halving.c),
 * shared by reduce_scatter(_block), allreduce's rsag and reduce's rsg.
 */
#ifndef MCA_COLL_BUFPOOL_RS_STREAM_H
#define MCA_COLL_BUFPOOL_RS_STREAM_H

#include "coll_bufpool_pipeline.h"

BEGIN_C_DECLS

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
    /* 0: the sends of my contribution are all posted up front into the
     * caller's reqs.  Else at most this many are in flight, in a set of the
     * stream's own (module's second array), posted in step with the
     * receives: the send of step g = j (p-1) + k - 1 (segment j to the
     * k-th rank to my right) is posted before the receive of my unit
     * g - max_requests + 1 is waited for, and receiver and sender share g,
     * so waiting for the oldest send cannot deadlock (pipeline.h). */
    int max_requests;
    bufpool_comm_state_t *state; /* with max_requests */
} bufpool_rs_stream_t;

/* The segments the stream cuts a block of len elements into, for the
 * ranks that receive a block's results (every rank of a call cuts alike). */
void bufpool_rs_block_segs(const bufpool_rs_stream_t *stream, size_t len, bufpool_segs_t *segs);

/* Post the receives of every other rank's finished block (blocks other
 * than me's), straight into rbuf laid out like the input and cut as the
 * stream cuts them, with the results' tag: before any wait. */
int bufpool_rs_recv_blocks(const bufpool_rs_stream_t *stream, void *rbuf, int me, int tag,
                           bufpool_reqs_t *reqs);

/* Sends go into reqs: the caller completes them with bufpool_reqs_wait
 * (also after an error) before it touches src or returns. */
int bufpool_pairwise_reduce_scatter(const bufpool_rs_stream_t *stream, bufpool_reqs_t *reqs,
                                    struct ompi_communicator_t *comm);

/* Ring reduce-scatter in rounds, for large communicators: p - 1 steps per
 * round, each rank talking only to its neighbours, at most
 * pipeline_depth / 2 segments each way per step.  Round c handles chunk c
 * of every block (chunk: pipeline_depth / 2 segments, at least one): at
 * step t rank r sends its partial of block r - t - 1 to r + 1 and receives
 * the partial of block r - t - 2 from r - 1, folding its own contribution
 * in as each segment lands.  Partials alternate between two chunk
 * buffers (at most pipeline_depth segments of scratch; with depth 1 the
 * segments are halved); the last step lands in the block's place (acc,
 * which must not be NULL).  Commutative operations only.  Requests in
 * flight: the step's receives and sends, at most max_requests (a step
 * needs one of each, so the chunk shrinks to max_requests / 2 segments).
 * Blocking waits are per step, and every rank runs the same steps in the
 * same order: a rank waits only on its step's transfers with its two
 * neighbours, which post theirs in the same step. */
int bufpool_ring_reduce_scatter(const bufpool_rs_stream_t *stream,
                                struct ompi_communicator_t *comm);

/* Recursive halving (commutative operations): rounds of at most k
 * elements of every block, k such that the round's p chunks fit half the
 * plan's bound (depth x seg_bytes), since a rank keeps its partial (acc)
 * and a received half (tmp) of the round.  A round runs log2 q steps
 * (q: the largest power of two <= p); at step d = q/2, q/4, .., 1 virtual
 * rank v exchanges with v ^ d the half of its range of blocks that the
 * other keeps, one message per block chunk, and folds what it receives
 * into its half.  At non-power-of-two p, rank 2i (i < p - q) first hands
 * its whole round to 2i + 1, which then acts for both and sends 2i its
 * result at the end.  The result goes to the start of result (rbuf), in
 * place too: round c writes elements [c k, c k + k) of result, which no
 * later round reads.  Requests: each exchange is one bounded set of
 * max_requests (0: every message of the step at once), posted receive i,
 * send i by both partners, completed before its reduction. */
int bufpool_rhalving_reduce_scatter(const bufpool_rs_stream_t *stream, void *result,
                                    struct ompi_communicator_t *comm);

/* Ring allgather of the blocks of buf (laid out like the input of the
 * stream): p - 1 steps, block r - t passed to r + 1, segments of the
 * stream's size, at most max_requests in flight; no scratch. */
int bufpool_ring_allgather_blocks(const bufpool_rs_stream_t *stream, void *buf, int tag,
                                  struct ompi_communicator_t *comm);

/* Shared arithmetic of the three: elements of segment j (per elements each)
 * of len; of chunk c (k elements per chunk) of a block of len; the longest
 * block. */
static inline size_t bufpool_rs_seg_count(size_t len, size_t per, size_t j)
{
    size_t left = len - j * per;
    return left < per ? left : per;
}

/* Elements of chunk c (k elements per chunk) of a block of len. */
static inline size_t bufpool_rs_chunk_len(size_t len, size_t k, size_t c)
{
    return len <= c * k ? 0 : (len - c * k < k ? len - c * k : k);
}

static inline size_t bufpool_rs_blocks_longest(const bufpool_blocks_t *blocks)
{
    size_t longest = 0;
    for (int b = 0; b < blocks->n; b++) {
        size_t len = bufpool_blocks_len(blocks, b);
        longest = len > longest ? len : longest;
    }
    return longest;
}

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_RS_STREAM_H */
