/*
 * A user buffer (buf, count, datatype) seen as the byte stream of its type
 * signature, so that collectives can cut a message into pieces at byte
 * offsets that every rank agrees on, whatever datatype each rank uses:
 * MPI only promises that the type signatures match (2 x contiguous(3,int)
 * on one side, 6 x MPI_INT on the other), so segments must be defined on
 * signature bytes, not on elements of one side.
 *
 * A piece [off, off + len) of the stream travels in one of two ways:
 *   direct   the PML reads or writes the user buffer itself: the layout is
 *            contiguous (the piece is a plain byte range), or the piece
 *            starts and ends on element boundaries (the PML handles the
 *            datatype);
 *   bounced  it is packed into (or unpacked from) a pooled scratch slot
 *            with an Open MPI convertor positioned at off; the wire then
 *            carries packed bytes, which match any signature of the same
 *            length on a homogeneous system (the only kind Debian's Open
 *            MPI is built for).
 * Each rank decides direct or bounced for itself: the wire format is the
 * same either way, so peers never need to agree on it.
 */
#ifndef MCA_COLL_BUFPOOL_PACK_H
#define MCA_COLL_BUFPOOL_PACK_H

#include "coll_bufpool_pipeline.h"

#include <stdbool.h>
#include <stddef.h>

BEGIN_C_DECLS

typedef struct bufpool_view {
    char *buf; /* as the user gave it */
    size_t count;
    struct ompi_datatype_t *dtype;
    size_t type_size; /* signature bytes of one element          */
    ptrdiff_t extent;
    size_t bytes; /* signature bytes of the whole buffer     */
    char *contig; /* non-NULL: every byte lies in one block here */
} bufpool_view_t;

/* What to hand to the PML for one piece. */
typedef struct bufpool_piece {
    void *ptr;
    size_t count;
    struct ompi_datatype_t *dtype;
} bufpool_piece_t;

void bufpool_view_init(bufpool_view_t *view, const void *buf, size_t count,
                       struct ompi_datatype_t *dtype);

/* The view of elements [first, first + n) of the same buffer (blocks of
 * a gather/scatter/alltoall buffer). */
void bufpool_view_sub(bufpool_view_t *sub, const bufpool_view_t *view, size_t first, size_t n);

/* The same view of the buffer by bytes further on (the next block of a
 * gather buffer: no need to look at the datatype again). */
static inline void bufpool_view_move(bufpool_view_t *view, ptrdiff_t by)
{
    view->buf += by;
    if (NULL != view->contig) {
        view->contig += by;
    }
}

/* True when [off, off + len) can go to or from the user buffer without a
 * copy; *piece then says how. */
bool bufpool_view_direct(const bufpool_view_t *view, size_t off, size_t len,
                         bufpool_piece_t *piece);

/* True when every piece of a stream cut every seg bytes is direct. */
bool bufpool_view_all_direct(const bufpool_view_t *view, size_t seg);

/* Copy [off, off + len) of the stream out of (pack) or into (unpack) the
 * user buffer; mem holds len packed bytes.  Gaps of the layout are never
 * touched. */
int bufpool_view_pack(const bufpool_view_t *view, size_t off, size_t len, void *mem);
int bufpool_view_unpack(const bufpool_view_t *view, size_t off, size_t len, const void *mem);

/* Where to send a piece from: the user buffer when direct, else packed
 * into bounce (len bytes). */
int bufpool_view_send_piece(const bufpool_view_t *view, size_t off, size_t len, void *bounce,
                            bufpool_piece_t *piece);

/* Where to receive a piece: the user buffer when direct, else bounce
 * (then unpack it with bufpool_view_unpack once it has arrived).
 * Returns true when bounced. */
bool bufpool_view_recv_piece(const bufpool_view_t *view, size_t off, size_t len, void *bounce,
                             bufpool_piece_t *piece);

/* dst = src where the two views have the same signature length (the local
 * part of gather, scatter, allgather, alltoall).  Different layouts go
 * through one pooled segment of at most seg_bytes at a time. */
int bufpool_view_copy(const bufpool_view_t *dst, const bufpool_view_t *src, size_t seg_bytes);

/* The same for a local block given as (buf, count, datatype) on each side;
 * the common case (same datatype and count) skips the views, which is
 * measurable on the smallest collectives. */
int bufpool_local_copy(void *dst, size_t dcount, struct ompi_datatype_t *ddtype, const void *src,
                       size_t scount, struct ompi_datatype_t *sdtype, size_t seg_bytes);

/* The local block of allgather and alltoall is copied while the first
 * transfers are in flight up to this size, after them above it: measured
 * at p = 2 (shared memory), overlapping saves 1-5% up to 1 MiB and costs
 * 2-3% from 2 MiB on, where the copy and the peer's single-copy read of
 * the same lines compete for the cache. */
#define BUFPOOL_OVERLAP_COPY_MAX ((size_t)1 << 20)

/* One block from and to every other rank at once (allgather direct,
 * alltoall linear): every receive is posted, from rank - 1 down, then
 * every send, to rank + 1 up (small ones inline), and my own block is
 * copied in while they are in flight (after them above
 * BUFPOOL_OVERLAP_COPY_MAX).  Waits only once everything is posted. */
typedef struct bufpool_linear_xchg {
    char *rbuf; /* block of rank b at rbuf + b * rstride */
    ptrdiff_t rstride;
    size_t rcount;
    struct ompi_datatype_t *rdtype;
    const char *sbuf; /* block for rank b at sbuf + b * sstride (0: one block) */
    ptrdiff_t sstride;
    size_t scount;
    struct ompi_datatype_t *sdtype;
    const void *own; /* copied to my block of rbuf; NULL: already there */
    size_t own_count;
    struct ompi_datatype_t *own_dtype;
    size_t bytes;     /* signature bytes of one block */
    size_t seg_bytes; /* the plan's segment (local copy) */
    int rank, p, tag;
    int max_requests; /* the plan's; bounded, receive k and send k are
                         posted in turn (step order, see bufpool_reqs_bound) */
} bufpool_linear_xchg_t;

int bufpool_linear_exchange(const bufpool_linear_xchg_t *x, bufpool_comm_state_t *state,
                            struct ompi_communicator_t *comm);

END_C_DECLS

#endif /* MCA_COLL_BUFPOOL_PACK_H */
