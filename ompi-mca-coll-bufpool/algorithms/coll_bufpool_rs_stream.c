/*
 * The pipelined pairwise reduce-scatter stream (coll_bufpool_rs_stream.h),
 * shared by reduce_scatter's pairwise, allreduce's rsag and reduce's rsg.
 */
#include "coll_bufpool_rs_stream.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"

/* ---------------------------------------------------------------------- */
/* The stream. */

/* The blocks of the other ranks in the order the stream serves them:
 * (rank + k) % p for k = 1 .. p - 1, displacements kept as a running sum
 * so that counts cost O(p), not O(p^2). */
typedef struct rs_cursor {
    int block;
    size_t disp, len;
} rs_cursor_t;

static void rs_cursor_next(const bufpool_blocks_t *blocks, rs_cursor_t *c)
{
    c->disp += c->len;
    if (++c->block == blocks->n) {
        c->block = 0;
        c->disp = 0;
    }
    c->len = bufpool_blocks_len(blocks, c->block);
}

typedef struct rs_ctx {
    int rank, size;
    struct ompi_datatype_t *dtype;
    size_t per; /* elements per segment, in every block */
    size_t my_len;
    char *direct; /* non-NULL: the nearest left rank's contribution lands
                     here (my block's accumulator), not in a slot        */
    ptrdiff_t extent;
} rs_ctx_t;

/* Unit u: segment u / (p-1) of my block from the (1 + u % (p-1))-th rank to
 * my left.  Segment-major order keeps the accumulator segment in cache
 * while every source is folded into it. */
static void rs_describe(void *arg, size_t unit, bufpool_recv_unit_t *out)
{
    rs_ctx_t *c = arg;
    size_t j = unit / (size_t)(c->size - 1);
    int k = 1 + (int)(unit % (size_t)(c->size - 1));
    out->peer = (c->rank - k + c->size) % c->size;
    out->count = bufpool_rs_seg_count(c->my_len, c->per, j);
    out->dtype = c->dtype;
    out->buf = NULL != c->direct && 1 == k ? c->direct + (ptrdiff_t)(j * c->per) * c->extent : NULL;
}

void bufpool_rs_block_segs(const bufpool_rs_stream_t *s, size_t len, bufpool_segs_t *segs)
{
    bufpool_segs_init(segs, len, s->dtype, s->seg_bytes);
}

int bufpool_rs_recv_blocks(const bufpool_rs_stream_t *s, void *rbuf, int me, int tag,
                           bufpool_reqs_t *reqs)
{
    const bufpool_blocks_t *blocks = s->blocks;
    ptrdiff_t lb, extent;
    int rc = OMPI_SUCCESS;

    ompi_datatype_get_extent(s->dtype, &lb, &extent);
    for (int k = 1; k < blocks->n && OMPI_SUCCESS == rc; k++) {
        int peer = (me + k) % blocks->n;
        bufpool_segs_t segs;
        bufpool_rs_block_segs(s, bufpool_blocks_len(blocks, peer), &segs);
        rc = bufpool_reqs_recv_segs(
            reqs, (char *)rbuf + (ptrdiff_t)bufpool_blocks_disp(blocks, peer) * extent, &segs,
            s->dtype, peer, tag);
    }
    return rc;
}

/* The sends of my contribution to every other block, segment-major to
 * match the receivers' order (rs_describe): step g is segment g / (p-1) of
 * the block of the (1 + g % (p-1))-th rank to my right. */
typedef struct rs_sender {
    const bufpool_rs_stream_t *s;
    bufpool_reqs_t *reqs;
    rs_cursor_t start, c;
    size_t per, steps, next;
    ptrdiff_t extent;
    int size;
} rs_sender_t;

/* Post the sends of steps next .. end - 1 (those of blocks too short to
 * have segment j are skipped by both ends). */
static int rs_send_upto(rs_sender_t *x, size_t end)
{
    const size_t others = (size_t)(x->size - 1);
    end = end < x->steps ? end : x->steps;
    for (; x->next < end; x->next++) {
        const size_t j = x->next / others;
        if (0 == x->next % others) {
            x->c = x->start;
        }
        rs_cursor_next(x->s->blocks, &x->c);
        if (j * x->per >= x->c.len) {
            continue;
        }
        ptrdiff_t off = (ptrdiff_t)(x->c.disp + j * x->per) * x->extent;
        int rc = bufpool_reqs_send(x->reqs, (const char *)x->s->src + off,
                                   bufpool_rs_seg_count(x->c.len, x->per, j), x->s->dtype,
                                   x->c.block, x->s->tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* One function on purpose (about 120 lines): the order in which it posts
 * and waits, read top to bottom, is the argument that the stream cannot
 * deadlock (this file's header); pieces of it would hide that order. */
static int rs_reduce_stream(const bufpool_rs_stream_t *s, rs_ctx_t *ctx, const bufpool_segs_t *full,
                            rs_sender_t *sender, struct ompi_communicator_t *comm);

int bufpool_pairwise_reduce_scatter(const bufpool_rs_stream_t *s, bufpool_reqs_t *reqs,
                                    struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const bufpool_blocks_t *blocks = s->blocks;
    rs_ctx_t ctx = {.rank = rank, .size = size, .dtype = s->dtype};
    bufpool_segs_t full;
    const bool bounded = s->max_requests > 0 && NULL != s->state;
    bufpool_reqs_t own;
    int rc;

    /* One segment length for every block, so that sender and receiver cut
     * each block alike (a block shorter than a segment is one segment, as
     * bufpool_rs_block_segs cuts it). */
    size_t longest = 0;
    for (int b = 0; b < size; b++) {
        size_t len = bufpool_blocks_len(blocks, b);
        longest = len > longest ? len : longest;
    }
    bufpool_segs_init(&full, longest, s->dtype, s->seg_bytes);
    if (0 == longest) {
        return OMPI_SUCCESS;
    }
    ctx.per = full.seg_count;
    ctx.my_len = bufpool_blocks_len(blocks, rank);
    ctx.extent = full.extent;
    const size_t max_nseg = (longest + ctx.per - 1) / ctx.per;

    if (bounded) {
        bufpool_reqs_init_aux(&own, s->state, comm);
        bufpool_reqs_bound(&own, s->max_requests);
    }
    rs_sender_t sender = {
        .s = s,
        .reqs = bounded ? &own : reqs,
        .start = {.block = rank, .disp = bufpool_blocks_disp(blocks, rank), .len = ctx.my_len},
        .per = ctx.per,
        .steps = max_nseg * (size_t)(size - 1),
        .next = 0,
        .extent = full.extent,
        .size = size,
    };
    /* Unbounded, every send is posted before anything is waited for. */
    rc = rs_send_upto(&sender, bounded ? 0 : sender.steps);
    if (OMPI_SUCCESS == rc) {
        rc = rs_reduce_stream(s, &ctx, &full, bounded ? &sender : NULL, comm);
    }
    if (bounded) {
        /* My sends of blocks longer than mine, then every send done. */
        if (OMPI_SUCCESS == rc) {
            rc = rs_send_upto(&sender, sender.steps);
        }
        int wait_rc = bufpool_reqs_wait(&own);
        rc = OMPI_SUCCESS != rc ? rc : wait_rc;
    }
    return rc;
}

/* Reduce my block segment by segment as the contributions stream in; with
 * a sender (bounded), post its sends up to the receive waited for plus the
 * bound first. */
static int rs_reduce_stream(const bufpool_rs_stream_t *s, rs_ctx_t *ctx_,
                            const bufpool_segs_t *full_, rs_sender_t *sender,
                            struct ompi_communicator_t *comm)
{
    rs_ctx_t ctx = *ctx_;
    const bufpool_segs_t full = *full_;
    const int size = ctx.size;
    bufpool_slots_t slots = {0}, win_slots, ring_slots;
    bufpool_rwin_t win;
    bufpool_sring_t ring;
    const bool in_ring = NULL == s->acc;
    /* With a place for the block that does not hold my contribution yet,
     * the first contribution of each segment is received straight into it
     * and my own folded in place (mine op in: commutative operations only,
     * as everywhere in this stream).  That saves a slot's copy and the
     * three-buffer reduction, and at 2 ranks every unit is direct: the
     * stream needs no scratch at all. */
    const bool direct_first = !in_ring && !s->acc_holds_mine;
    const ptrdiff_t extent = full.extent;
    const char *src = s->src;
    const rs_cursor_t start = {.disp = bufpool_blocks_disp(s->blocks, ctx.rank)};
    int rc = OMPI_SUCCESS;

    ctx.direct = direct_first ? s->acc : NULL;

    /* Reduce my block segment by segment as contributions stream in. */
    const size_t my_nseg = (ctx.my_len + ctx.per - 1) / ctx.per;
    const size_t nunits = my_nseg * (size_t)(size - 1);
    if (0 == nunits) {
        return OMPI_SUCCESS;
    }
    int win_depth = bufpool_depth_for(s->depth, nunits), ring_depth = 0, win_slot_count;
    if (in_ring) {
        /* Half of the slots (at least one) hold finished segments until
         * result_peer has them. */
        int nslots = s->depth;
        nslots = nslots < 2 ? 2 : nslots;
        ring_depth = nslots / 2;
        win_depth = nslots - ring_depth;
        win_depth = (size_t)win_depth > nunits ? (int)nunits : win_depth;
        ring_depth = (size_t)ring_depth > my_nseg ? (int)my_nseg : ring_depth;
    }
    win_slot_count = win_depth;
    if (direct_first && 2 == size) {
        /* No slot in use: keep more receives posted (bounded by the
         * window's size, not by scratch) so that every arriving segment
         * finds its receive. */
        win_depth = bufpool_direct_depth_for(nunits);
        win_slot_count = 0;
    }
    /* Under a bound the window keeps at most half of it. */
    win_depth = (int)bufpool_window_bounded((size_t)win_depth, s->max_requests);
    win_slot_count = win_slot_count < win_depth ? win_slot_count : win_depth;
    rc = bufpool_slots_get_split(&slots, win_slot_count, ring_depth, full.seg_span, full.gap,
                                 &win_slots, &ring_slots);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    if (in_ring) {
        bufpool_sring_init(&ring, &ring_slots);
    }
    rc = bufpool_rwin_start(&win, comm, s->tag, &win_slots, (size_t)win_depth, nunits, rs_describe,
                            &ctx);
    if (OMPI_SUCCESS != rc) {
        goto out;
    }
    const char *mine = src + (ptrdiff_t)start.disp * extent;
    for (size_t j = 0; j < my_nseg; j++) {
        size_t n = bufpool_rs_seg_count(ctx.my_len, ctx.per, j);
        ptrdiff_t off = (ptrdiff_t)(j * ctx.per) * extent;
        void *acc_seg;
        if (in_ring) {
            rc = bufpool_sring_acquire(&ring, &acc_seg);
            if (OMPI_SUCCESS != rc) {
                goto abort;
            }
        } else {
            acc_seg = (char *)s->acc + off;
        }
        for (int k = 1; k < size; k++) {
            size_t unit = j * (size_t)(size - 1) + (size_t)(k - 1);
            void *in;
            if (NULL != sender) {
                rc = rs_send_upto(sender, unit + (size_t)s->max_requests);
                if (OMPI_SUCCESS != rc) {
                    goto abort;
                }
            }
            rc = bufpool_rwin_wait(&win, unit, &in);
            if (OMPI_SUCCESS != rc) {
                goto abort;
            }
            if (1 == k && direct_first) {
                bufpool_reduce(s->op, mine + off, acc_seg, n, s->dtype);
            } else if (1 == k && !s->acc_holds_mine) {
                bufpool_reduce3(s->op, in, mine + off, acc_seg, n, s->dtype);
            } else {
                bufpool_reduce(s->op, in, acc_seg, n, s->dtype);
            }
            rc = bufpool_rwin_release(&win, unit);
            if (OMPI_SUCCESS != rc) {
                goto abort;
            }
        }
        if (in_ring) {
            rc = bufpool_sring_send(&ring, n, s->dtype, s->result_peer, s->result_tag, comm);
        } else if (NULL != s->segment_done) {
            rc = s->segment_done(s->ctx, j, acc_seg, n);
        }
        if (OMPI_SUCCESS != rc) {
            goto abort;
        }
    }
    goto out;
abort:
    bufpool_rwin_abort(&win);
out:
    if (in_ring) {
        int drain_rc = bufpool_sring_drain(&ring);
        if (OMPI_SUCCESS == rc) {
            rc = drain_rc;
        }
    }
    bufpool_slots_put(&slots);
    return rc;
}
