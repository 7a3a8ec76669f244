/*
 * The pipelining toolkit every bufpool collective is built from:
 *
 *   bufpool_segs_t     cuts count elements of a datatype into segments
 *                      whose scratch span fits coll_bufpool_segment_size;
 *   bufpool_slots_t    pipeline_depth scratch slots, one pool buffer;
 *   bufpool_reqs_t     sends (and direct receives) posted as soon as their
 *                      data or destination is ready and completed together
 *                      at the end (requests cached in the communicator's
 *                      state, so no allocation per call);
 *   bufpool_rwin_t     an in-order stream of receives kept depth deep: the
 *                      collective waits for unit u, consumes it (reduces,
 *                      forwards, unpacks) and releases it, which posts unit
 *                      u + depth into the same slot.  The transfer of later
 *                      units overlaps the work on the current one;
 *   bufpool_sring_t    results formed in scratch slots and sent on, a slot
 *                      reused once its send has completed.
 *
 * The arithmetic (segments, depths, blocks, binomial trees) is in
 * coll_bufpool_geometry.h; the algorithms live with their families.
 *
 * Deadlock freedom: sends never wait for scratch (they read user buffers or
 * slots that stay put until the end of the step), so a rank only ever blocks
 * on a receive whose matching send is already posted or will be posted by a
 * rank that does not wait on us, or (sring) on the completion of a send whose
 * receiver does not wait on us.  Each collective documents its order.
 */
#ifndef MCA_COLL_BUFPOOL_PIPELINE_H
#define MCA_COLL_BUFPOOL_PIPELINE_H

#include "coll_bufpool_geometry.h"
#include "coll_bufpool_state.h"
#include "runtime/coll_bufpool_scratch.h"
#include "runtime/coll_bufpool_wait.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ompi/datatype/ompi_datatype.h"
#include "ompi/mca/pml/pml.h"
#include "ompi/op/op.h"
#include "ompi/request/request.h"

BEGIN_C_DECLS

/* Most requests one request set held at once, over every call of the
 * process (coll_bufpool_requests_peak). */
extern uint64_t bufpool_requests_peak;

/* ---------------------------------------------------------------------- */
/* Segmenting. */

/* Segments of at most seg_bytes of scratch (at least one element each). */
void bufpool_segs_init(bufpool_segs_t *segs, size_t count, struct ompi_datatype_t *dtype,
                       size_t seg_bytes);

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

/* ---------------------------------------------------------------------- */
/* Requests completed together at the end of a call. */

typedef struct bufpool_reqs {
    ompi_request_t ***cache; /* the request array it grows in       */
    size_t *cache_cap;
    size_t n;   /* requests posted since the last bufpool_reqs_wait     */
    size_t max; /* 0: every request stays posted until bufpool_reqs_wait;
                   else at most max in flight: posting one more first
                   waits for the oldest (the array is used as a ring)   */
    struct ompi_communicator_t *comm;
} bufpool_reqs_t;

/* An unbounded set in the communicator's (or the running task's) request
 * array. */
void bufpool_reqs_init(bufpool_reqs_t *reqs, bufpool_comm_state_t *state,
                       struct ompi_communicator_t *comm);
/* A second set, in the other array, for an algorithm that keeps
 * two sets at once (the reduce-scatter stream's own sends). */
void bufpool_reqs_init_aux(bufpool_reqs_t *reqs, bufpool_comm_state_t *state,
                           struct ompi_communicator_t *comm);
/* Keep at most max (the plan's max_requests; 0: no bound) in flight.
 *
 * Waiting for the oldest request cannot deadlock when every rank posts
 * its requests in one global order of messages that both ends share (a
 * step index: step k receives from rank - k and sends to rank + k; a
 * root's posts to its children; the segments of one stream in order):
 * the unfinished message earliest in that order has both ends posted,
 * because each end waits only on requests no later than its own oldest.
 * Algorithms whose waits do not follow one such order keep an unbounded
 * set (see each algorithm). */
static inline void bufpool_reqs_bound(bufpool_reqs_t *reqs, int max)
{
    reqs->max = max > 0 ? (size_t)max : 0;
}
/* Under a bound (max_requests > 0) a rank that keeps a receive window and
 * a bounded set of sends at once splits the bound: the window keeps at
 * most half of it (at least one receive), the set the rest (at least one
 * send), so that the two together stay within max_requests.  0: no bound
 * (the window's depth as given, the set unbounded). */
static inline size_t bufpool_window_bounded(size_t depth, int max_requests)
{
    if (max_requests <= 0) {
        return depth;
    }
    const size_t half = max_requests >= 2 ? (size_t)max_requests / 2 : 1;
    return depth < half ? depth : half;
}
static inline int bufpool_sends_bounded(size_t window, int max_requests)
{
    if (max_requests <= 0) {
        return 0;
    }
    return (size_t)max_requests > window ? max_requests - (int)window : 1;
}
int bufpool_reqs_send(bufpool_reqs_t *reqs, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int peer, int tag);
int bufpool_reqs_recv(bufpool_reqs_t *reqs, void *buf, size_t count, struct ompi_datatype_t *dtype,
                      int peer, int tag);
/* Wait for every request posted so far (then the set is empty again). */
int bufpool_reqs_wait(bufpool_reqs_t *reqs);
/* The end of a call whatever happened before: waits for every request
 * posted so far and returns rc, or the wait's error if rc was success (the
 * first error wins). */
static inline int bufpool_reqs_finish(bufpool_reqs_t *reqs, int rc)
{
    int wait_rc = bufpool_reqs_wait(reqs);
    return OMPI_SUCCESS == rc ? wait_rc : rc;
}
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
    if (OPAL_UNLIKELY(!ompi_op_is_intrinsic(op))) {
        bufpool_reduce_user(op, in, inout, count, dtype);
        return;
    }
    ompi_op_reduce(op, (void *)in, inout, count, dtype);
}

/* out = left op right, out distinct from both. */
void bufpool_reduce3(struct ompi_op_t *op, const void *left, const void *right, void *out,
                     size_t count, struct ompi_datatype_t *dtype);

/* dst = src for count elements of dtype (same layout). */
int bufpool_copy(void *dst, const void *src, size_t count, struct ompi_datatype_t *dtype);

/* ---------------------------------------------------------------------- */
/* Sharing one scratch buffer between streams. */

/* Slots first .. first + n - 1 of all, as a set of their own (never put:
 * the owner of all puts the memory back). */
bufpool_slots_t bufpool_slots_view(const bufpool_slots_t *all, int first, int n);

/* One pool buffer of nwin + nring slots of slot_span, seen as a receive
 * window's slots (the first nwin) and a send ring's (the rest), the split
 * a stream that receives, combines and sends on uses. */
int bufpool_slots_get_split(bufpool_slots_t *all, int nwin, int nring, size_t slot_span,
                            ptrdiff_t gap, bufpool_slots_t *win, bufpool_slots_t *ring);

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
