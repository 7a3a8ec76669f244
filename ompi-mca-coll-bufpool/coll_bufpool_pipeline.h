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
 *                      units overlaps the work on the current one.
 *
 * Deadlock freedom: sends never wait for scratch (they read user buffers or
 * slots that stay put until the end of the step), so a rank only ever blocks
 * on a receive whose matching send is already posted or will be posted by a
 * rank that does not wait on us.  Each collective documents its order.
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

/* Depth to use for a message of nseg segments: the parameter, capped by
 * what the message can use. */
int bufpool_depth_for(size_t nseg);

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

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_PIPELINE_H */
