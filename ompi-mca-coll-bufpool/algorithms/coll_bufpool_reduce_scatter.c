/*
 * MPI_Reduce_scatter and MPI_Reduce_scatter_block.
 *
 * pairwise: the pipelined pairwise reduce-scatter stream that allreduce's
 *   rsag also runs (bufpool_pairwise_reduce_scatter): every rank posts the
 *   sends of its contribution to every other block up front, straight from
 *   its input, and reduces its own block segment by segment through
 *   pipeline_depth scratch slots as the p - 1 contributions arrive.  Each
 *   rank receives (p-1)/p of the message, the minimum, and the reduction of
 *   one segment overlaps the transfer of the next.  Blocks of any length,
 *   zero included; commutative operations only (a block is combined in the
 *   order its contributions arrive), others go to the previous module.
 *
 *   Not in place, my block is reduced straight into rbuf.  In place, the
 *   input is rbuf and the result belongs at its start, where other ranks'
 *   blocks are still being sent from: the block is reduced where it lies and
 *   moved down once every send has completed.
 *
 * ring: bufpool_ring_reduce_scatter (see coll_bufpool_reduce_scatter.h).
 *
 * rhalving: recursive halving in rounds of at most half the scratch bound
 *   (bufpool_rhalving_reduce_scatter), forced only: commutative operations,
 *   any block lengths, any p (the extra ranks fold into their neighbours).
 *
 * Order of blocking waits: only the receives of the stream (all matching
 *   sends are posted before anyone waits), then the sends; the final move is
 *   local.  rhalving: each exchange waits for its own two-sided set, which
 *   both partners post in the same order.
 *
 * "auto" (thresholds in coll_bufpool_decide.c), measured on the project machine (2 cores, vader with CMA single
 *   copy, p = 4 oversubscribed; medians, bufpool / Open MPI's tuned): from
 *   4 KiB at p = 2 (0.16-0.70 for reduce_scatter, 0.15-0.70 for the block
 *   variant, whose tuned algorithm above 128 KiB is a reduce then a
 *   scatterv), from 32 KiB (reduce_scatter, 0.19-0.91) and 1 KiB
 *   (reduce_scatter_block, 0.2-0.92) at p >= 3.  Below, tuned's recursive
 *   halving and ring are as fast (0.8-1.2, noise): hand over.
 */
#include "coll_bufpool_reduce_scatter.h"
#include "coll_bufpool_run.h"

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

static size_t rs_seg_count(size_t len, size_t per, size_t j)
{
    size_t left = len - j * per;
    return left < per ? left : per;
}

/* Unit u: segment u / (p-1) of my block from the (1 + u % (p-1))-th rank to
 * my left.  Segment-major order keeps the accumulator segment in cache
 * while every source is folded into it. */
static void rs_describe(void *arg, size_t unit, bufpool_recv_unit_t *out)
{
    rs_ctx_t *c = arg;
    size_t j = unit / (size_t)(c->size - 1);
    int k = 1 + (int)(unit % (size_t)(c->size - 1));
    out->peer = (c->rank - k + c->size) % c->size;
    out->count = rs_seg_count(c->my_len, c->per, j);
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
                                   rs_seg_count(x->c.len, x->per, j), x->s->dtype, x->c.block,
                                   x->s->tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

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
    rc = bufpool_slots_get(&slots, win_slot_count + ring_depth, full.seg_span, full.gap);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    win_slots = bufpool_slots_view(&slots, 0, win_slot_count);
    ring_slots = bufpool_slots_view(&slots, win_slot_count, ring_depth);
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
        size_t n = rs_seg_count(ctx.my_len, ctx.per, j);
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

/* ---------------------------------------------------------------------- */
/* The ring. */

/* Elements of chunk c (k elements per chunk) of a block of len. */
static size_t chunk_len(size_t len, size_t k, size_t c)
{
    return len <= c * k ? 0 : (len - c * k < k ? len - c * k : k);
}

/* A ring step's transfers: segment j received from `from` into its place
 * (straight into rdirect, laid out like the block, or slot j of rslots)
 * and sent to `to` from its place (sdirect or slot j of sslots),
 * interleaved segment by segment so that both neighbours post in the same
 * order. */
typedef struct ring_step {
    const char *sdirect;
    const bufpool_slots_t *sslots;
    size_t scount;
    char *rdirect;
    const bufpool_slots_t *rslots;
    size_t rcount;
    size_t per; /* elements per segment */
    ptrdiff_t extent;
    int to, from, tag;
} ring_step_t;

static char *ring_seg(const char *direct, const bufpool_slots_t *slots, const ring_step_t *st,
                      size_t j)
{
    return NULL != direct ? (char *)direct + (ptrdiff_t)(j * st->per) * st->extent
                          : bufpool_slot(slots, (int)j);
}

static size_t ring_nseg(const ring_step_t *st, size_t count)
{
    return (count + st->per - 1) / st->per;
}

/* Post the step: receives into rreq[j] (NULL: into reqs as well), sends
 * into reqs. */
static int ring_post(const ring_step_t *st, struct ompi_datatype_t *dtype, bufpool_reqs_t *reqs,
                     ompi_request_t **rreq)
{
    const size_t snseg = ring_nseg(st, st->scount), rnseg = ring_nseg(st, st->rcount);
    int rc = OMPI_SUCCESS;
    for (size_t j = 0; (j < snseg || j < rnseg) && OMPI_SUCCESS == rc; j++) {
        if (j < rnseg) {
            char *at = ring_seg(st->rdirect, st->rslots, st, j);
            size_t n = rs_seg_count(st->rcount, st->per, j);
            rc = NULL != rreq ? bufpool_irecv(at, n, dtype, st->from, st->tag, reqs->comm, &rreq[j])
                              : bufpool_reqs_recv(reqs, at, n, dtype, st->from, st->tag);
        }
        if (OMPI_SUCCESS == rc && j < snseg) {
            rc = bufpool_reqs_send(reqs, ring_seg(st->sdirect, st->sslots, st, j),
                                   rs_seg_count(st->scount, st->per, j), dtype, st->to, st->tag);
        }
    }
    return rc;
}

static size_t blocks_longest(const bufpool_blocks_t *blocks)
{
    size_t longest = 0;
    for (int b = 0; b < blocks->n; b++) {
        size_t len = bufpool_blocks_len(blocks, b);
        longest = len > longest ? len : longest;
    }
    return longest;
}

int bufpool_ring_reduce_scatter(const bufpool_rs_stream_t *s, struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const bufpool_blocks_t *blocks = s->blocks;
    const size_t longest = blocks_longest(blocks);
    bufpool_segs_t full;
    bufpool_slots_t slots;
    bufpool_reqs_t sends;
    ompi_request_t *rreq[BUFPOOL_MAX_DEPTH];
    int rc;

    if (0 == longest) {
        return OMPI_SUCCESS;
    }
    /* Two chunk buffers of csegs segments each within depth segments; a
     * step keeps csegs receives and at most csegs sends in flight. */
    int csegs = s->depth >= 2 ? s->depth / 2 : 1;
    if (s->max_requests > 0 && 2 * csegs > s->max_requests) {
        csegs = s->max_requests / 2 > 1 ? s->max_requests / 2 : 1;
    }
    bufpool_segs_init(&full, longest, s->dtype, s->depth >= 2 ? s->seg_bytes : s->seg_bytes / 2);
    const size_t per = full.seg_count, k = per * (size_t)csegs;
    const size_t rounds = (longest + k - 1) / k;
    /* Not in place the last step lands straight in the block's place and
     * my contribution is folded into it (mine op partial). */
    const bool last_direct = !s->acc_holds_mine;
    rc = bufpool_slots_get(&slots, 2 * csegs, full.seg_span, full.gap);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    const bufpool_slots_t part[2] = {bufpool_slots_view(&slots, 0, csegs),
                                     bufpool_slots_view(&slots, csegs, csegs)};
    bufpool_reqs_init_aux(&sends, s->state, comm);
    bufpool_reqs_bound(&sends, s->max_requests > 0 ? s->max_requests - csegs : 0);
    const char *src = s->src;

    for (size_t c = 0; c < rounds && OMPI_SUCCESS == rc; c++) {
        for (int t = 0; t < p - 1 && OMPI_SUCCESS == rc; t++) {
            const int sb = (rank - t - 1 + 2 * p) % p, rb = (rank - t - 2 + 2 * p) % p;
            const bool last = t == p - 2;
            const ptrdiff_t chunk_off = (ptrdiff_t)(c * k) * full.extent;
            const ring_step_t st = {
                .sdirect = 0 == t ? src + (ptrdiff_t)bufpool_blocks_disp(blocks, sb) * full.extent +
                                        chunk_off
                                  : NULL,
                .sslots = &part[t % 2],
                .scount = chunk_len(bufpool_blocks_len(blocks, sb), k, c),
                .rdirect = last && last_direct ? (char *)s->acc + chunk_off : NULL,
                .rslots = &part[(t + 1) % 2],
                .rcount = chunk_len(bufpool_blocks_len(blocks, rb), k, c),
                .per = per,
                .extent = full.extent,
                .to = (rank + 1) % p,
                .from = (rank - 1 + p) % p,
                .tag = s->tag,
            };
            const size_t rnseg = ring_nseg(&st, st.rcount);
            for (size_t j = 0; j < rnseg; j++) {
                rreq[j] = MPI_REQUEST_NULL;
            }
            rc = ring_post(&st, s->dtype, &sends, rreq);
            /* Fold my contribution to block rb in as each segment lands. */
            const char *mine =
                src + (ptrdiff_t)bufpool_blocks_disp(blocks, rb) * full.extent + chunk_off;
            for (size_t j = 0; j < rnseg; j++) {
                int wait_rc = bufpool_wait(&rreq[j]);
                rc = OMPI_SUCCESS != rc ? rc : wait_rc;
                if (OMPI_SUCCESS != rc) {
                    continue; /* complete the others */
                }
                const size_t n = rs_seg_count(st.rcount, per, j);
                const ptrdiff_t off = (ptrdiff_t)(j * per) * full.extent;
                char *in = ring_seg(st.rdirect, st.rslots, &st, j);
                if (last && !last_direct) {
                    /* In place: my block already holds my contribution. */
                    bufpool_reduce(s->op, in, (char *)s->acc + chunk_off + off, n, s->dtype);
                } else {
                    bufpool_reduce(s->op, mine + off, in, n, s->dtype);
                }
            }
            /* The chunk buffer sent from takes the next step's receives. */
            int wait_rc = bufpool_reqs_wait(&sends);
            rc = OMPI_SUCCESS != rc ? rc : wait_rc;
        }
    }
    bufpool_slots_put(&slots);
    return rc;
}

int bufpool_ring_allgather_blocks(const bufpool_rs_stream_t *s, void *buf, int tag,
                                  struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const bufpool_blocks_t *blocks = s->blocks;
    const size_t longest = blocks_longest(blocks);
    bufpool_segs_t full;
    bufpool_reqs_t reqs;
    int rc = OMPI_SUCCESS;

    if (0 == longest) {
        return OMPI_SUCCESS;
    }
    bufpool_segs_init(&full, longest, s->dtype, s->seg_bytes);
    bufpool_reqs_init_aux(&reqs, s->state, comm);
    bufpool_reqs_bound(&reqs, s->max_requests);
    for (int t = 0; t < p - 1 && OMPI_SUCCESS == rc; t++) {
        const int sb = (rank - t + p) % p, rb = (rank - t - 1 + p) % p;
        const ring_step_t st = {
            .sdirect = (const char *)buf + (ptrdiff_t)bufpool_blocks_disp(blocks, sb) * full.extent,
            .scount = bufpool_blocks_len(blocks, sb),
            .rdirect = (char *)buf + (ptrdiff_t)bufpool_blocks_disp(blocks, rb) * full.extent,
            .rcount = bufpool_blocks_len(blocks, rb),
            .per = full.seg_count,
            .extent = full.extent,
            .to = (rank + 1) % p,
            .from = (rank - 1 + p) % p,
            .tag = tag,
        };
        rc = ring_post(&st, s->dtype, &reqs, NULL);
        /* Block rb goes on at the next step. */
        int wait_rc = bufpool_reqs_wait(&reqs);
        rc = OMPI_SUCCESS != rc ? rc : wait_rc;
    }
    return rc;
}

/* ---------------------------------------------------------------------- */
/* Recursive halving. */

/* Where a block's chunk of the round lies: in the round's working vector
 * W (chunk c of every block, concatenated in block order: the layout of
 * the scratch buffers acc and tmp) and in the input. */
typedef struct rh_cursor {
    int b;
    size_t woff; /* elements of W before block b */
    size_t disp; /* first element of block b in the input */
    size_t len;  /* elements of block b in this round */
} rh_cursor_t;

typedef struct rh_round {
    const bufpool_rs_stream_t *s;
    size_t k, c; /* elements per chunk, round */
    ptrdiff_t extent;
    char *acc, *tmp; /* W-laid-out scratch (NULL at a folded-out rank) */
    bool have_acc;   /* acc holds my partial (else the input does) */
    bufpool_reqs_t *reqs;
} rh_round_t;

static void rh_cursor_at(const rh_round_t *r, int b, rh_cursor_t *cur)
{
    const bufpool_blocks_t *blocks = r->s->blocks;
    *cur = (rh_cursor_t){0};
    for (int i = 0; i < b; i++) {
        size_t len = bufpool_blocks_len(blocks, i);
        cur->woff += chunk_len(len, r->k, r->c);
        cur->disp += len;
    }
    cur->b = b;
    cur->len = b < blocks->n ? chunk_len(bufpool_blocks_len(blocks, b), r->k, r->c) : 0;
}

static void rh_cursor_next(const rh_round_t *r, rh_cursor_t *cur)
{
    cur->woff += cur->len;
    cur->disp += bufpool_blocks_len(r->s->blocks, cur->b);
    cur->b++;
    cur->len = cur->b < r->s->blocks->n
                   ? chunk_len(bufpool_blocks_len(r->s->blocks, cur->b), r->k, r->c)
                   : 0;
}

/* This rank's chunk of the block at cur: in acc once it holds the partial,
 * else in the input. */
static char *rh_mine(const rh_round_t *r, const rh_cursor_t *cur)
{
    return r->have_acc ? r->acc + (ptrdiff_t)cur->woff * r->extent
                       : (char *)r->s->src + (ptrdiff_t)(cur->disp + r->c * r->k) * r->extent;
}

/* One exchange with peer: my chunks of real blocks [slo, shi) go out, its
 * chunks of [rlo, rhi) come in (into acc while acc holds nothing yet, else
 * into tmp) and are folded into my partial.  One message per block chunk,
 * so that a sender whose chunks lie apart in its input and a receiver
 * whose chunks are adjacent in W cut alike.  Posting order: receive i then
 * send i, i = 0, 1, ...: the peer posts the same pairs with the roles
 * swapped (its send range is my receive range), so waiting for the oldest
 * request in a bounded set cannot deadlock (coll_bufpool_pipeline.h);
 * the exchange ends with every request complete. */
static int rh_exchange(rh_round_t *r, int peer, int slo, int shi, int rlo, int rhi)
{
    const bufpool_rs_stream_t *s = r->s;
    char *into = r->have_acc ? r->tmp : r->acc;
    rh_cursor_t sc, rcur, first;
    int rc = OMPI_SUCCESS;

    rh_cursor_at(r, slo, &sc);
    rh_cursor_at(r, rlo, &rcur);
    first = rcur;
    for (int i = 0; OMPI_SUCCESS == rc && (slo + i < shi || rlo + i < rhi); i++) {
        if (rlo + i < rhi) {
            if (rcur.len > 0) {
                rc = bufpool_reqs_recv(r->reqs, into + (ptrdiff_t)rcur.woff * r->extent, rcur.len,
                                       s->dtype, peer, s->tag);
            }
            rh_cursor_next(r, &rcur);
        }
        if (OMPI_SUCCESS == rc && slo + i < shi) {
            if (sc.len > 0) {
                rc = bufpool_reqs_send(r->reqs, rh_mine(r, &sc), sc.len, s->dtype, peer, s->tag);
            }
            rh_cursor_next(r, &sc);
        }
    }
    rc = bufpool_reqs_finish(r->reqs, rc);
    if (OMPI_SUCCESS != rc || rlo >= rhi) {
        return rc;
    }
    if (r->have_acc) {
        /* The received range is contiguous in W: one reduction. */
        const ptrdiff_t off = (ptrdiff_t)first.woff * r->extent;
        bufpool_reduce(s->op, r->tmp + off, r->acc + off, rcur.woff - first.woff, s->dtype);
        return OMPI_SUCCESS;
    }
    for (rh_cursor_t cur = first; cur.b < rhi; rh_cursor_next(r, &cur)) {
        bufpool_reduce(s->op, rh_mine(r, &cur), r->acc + (ptrdiff_t)cur.woff * r->extent, cur.len,
                       s->dtype);
    }
    r->have_acc = true;
    return OMPI_SUCCESS;
}

int bufpool_rhalving_reduce_scatter(const bufpool_rs_stream_t *s, void *result,
                                    struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const size_t longest = blocks_longest(s->blocks);
    int q = 1;
    while (2 * q <= p) {
        q *= 2;
    }
    /* Fold: ranks 2i and 2i + 1 (i < extra) act as virtual rank i, which
     * owns their two blocks; the others are virtual rank r - extra.  The
     * blocks of virtual ranks [a, b) are the real blocks [FIRST(a),
     * FIRST(b)) (FIRST(q) = q + extra = p). */
    const int extra = p - q;
    const int vrank = rank < 2 * extra ? (rank % 2 ? rank / 2 : -1) : rank - extra;
#define RH_FIRST_BLOCK(v) ((v) < extra ? 2 * (v) : (v) + extra)
#define RH_REAL_RANK(v)   ((v) < extra ? 2 * (v) + 1 : (v) + extra)
    bufpool_segs_t fit;
    bufpool_slots_t slots = {0};
    bufpool_reqs_t reqs;
    ptrdiff_t gap;
    int rc = OMPI_SUCCESS;

    if (0 == longest) {
        return OMPI_SUCCESS;
    }
    /* Rounds of k elements of every block: acc and tmp hold the round's
     * p chunks each, within the plan's bound (at least one element per
     * block, so beyond it only when p elements span more than half of
     * it). */
    bufpool_segs_init(&fit, (size_t)p * longest, s->dtype, s->seg_bytes * (size_t)s->depth / 2);
    size_t k = fit.seg_count / (size_t)p;
    k = k < 1 ? 1 : (k > longest ? longest : k);
    if (vrank >= 0) {
        const size_t span = bufpool_span(s->dtype, (size_t)p * k, &gap);
        rc = bufpool_slots_get(&slots, 2, span, gap);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    bufpool_reqs_init_aux(&reqs, s->state, comm);
    bufpool_reqs_bound(&reqs, s->max_requests);
    const ptrdiff_t extent = fit.extent;
    const size_t rounds = (longest + k - 1) / k;

    for (size_t c = 0; c < rounds && OMPI_SUCCESS == rc; c++) {
        rh_round_t r = {
            .s = s,
            .k = k,
            .c = c,
            .extent = extent,
            .acc = vrank >= 0 ? bufpool_slot(&slots, 0) : NULL,
            .tmp = vrank >= 0 ? bufpool_slot(&slots, 1) : NULL,
            .have_acc = false,
            .reqs = &reqs,
        };
        char *res = (char *)result + (ptrdiff_t)(c * k) * extent;
        rh_cursor_t me;
        rh_cursor_at(&r, rank, &me);
        if (vrank < 0) {
            /* Folded out: every chunk to rank + 1, my result back from it
             * once those sends are done (in place they read what res
             * overwrites). */
            rc = rh_exchange(&r, rank + 1, 0, p, 0, 0);
            if (OMPI_SUCCESS == rc && me.len > 0) {
                rc = bufpool_recv(res, me.len, s->dtype, rank + 1, s->tag, comm);
            }
            continue;
        }
        if (rank < 2 * extra) {
            rc = rh_exchange(&r, rank - 1, 0, 0, 0, p);
        }
        int vlo = 0, vhi = q;
        for (int d = q / 2; d >= 1 && OMPI_SUCCESS == rc; d /= 2) {
            const int mid = vlo + d, peer = RH_REAL_RANK(vrank ^ d);
            if (vrank < mid) {
                rc = rh_exchange(&r, peer, RH_FIRST_BLOCK(mid), RH_FIRST_BLOCK(vhi),
                                 RH_FIRST_BLOCK(vlo), RH_FIRST_BLOCK(mid));
                vhi = mid;
            } else {
                rc = rh_exchange(&r, peer, RH_FIRST_BLOCK(vlo), RH_FIRST_BLOCK(mid),
                                 RH_FIRST_BLOCK(mid), RH_FIRST_BLOCK(vhi));
                vlo = mid;
            }
        }
        if (OMPI_SUCCESS != rc) {
            break;
        }
        if (rank < 2 * extra) {
            /* The partner's block, then mine (a copy: in place the sends
             * above read the input that res now overwrites, and they are
             * complete). */
            rh_cursor_t other;
            rh_cursor_at(&r, rank - 1, &other);
            if (other.len > 0) {
                rc = bufpool_send(r.acc + (ptrdiff_t)other.woff * extent, other.len, s->dtype,
                                  rank - 1, s->tag, comm);
            }
        }
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_copy(res, r.acc + (ptrdiff_t)me.woff * extent, me.len, s->dtype);
        }
    }
#undef RH_FIRST_BLOCK
#undef RH_REAL_RANK
    bufpool_slots_put(&slots);
    return rc;
}

/* ---------------------------------------------------------------------- */
/* MPI_Reduce_scatter(_block). */

/* Move len elements from element from of buf down to its start, through one
 * scratch segment at a time when the layout is not contiguous (ascending
 * segments never overwrite input not yet read, as the destination lies
 * below the source). */
static int move_to_start(char *buf, size_t from, size_t len, struct ompi_datatype_t *dtype,
                         size_t seg_bytes)
{
    ptrdiff_t lb, extent, true_lb, true_extent;
    if (0 == from || 0 == len) {
        return OMPI_SUCCESS;
    }
    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    if (from + len <= (size_t)INT32_MAX &&
        ompi_datatype_is_contiguous_memory_layout(dtype, (int32_t)(from + len))) {
        size_t type_size;
        ompi_datatype_type_size(dtype, &type_size);
        memmove(buf + true_lb, buf + (ptrdiff_t)from * extent + true_lb, len * type_size);
        return OMPI_SUCCESS;
    }
    bufpool_segs_t segs;
    bufpool_slots_t slot;
    bufpool_segs_init(&segs, len, dtype, seg_bytes);
    int rc = bufpool_slots_get(&slot, 1, segs.seg_span, segs.gap);
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    char *tmp = bufpool_slot(&slot, 0);
    for (size_t j = 0; OMPI_SUCCESS == rc && j < segs.nseg; j++) {
        size_t n = bufpool_segs_count(&segs, j);
        ptrdiff_t off = bufpool_segs_offset(&segs, j);
        rc = bufpool_copy(tmp, buf + (ptrdiff_t)from * extent + off, n, dtype);
        if (OMPI_SUCCESS == rc) {
            rc = bufpool_copy(buf + off, tmp, n, dtype);
        }
    }
    bufpool_slots_put(&slot);
    return rc;
}

static int reduce_scatter_run(const void *sbuf, void *rbuf, const bufpool_blocks_t *blocks,
                              struct ompi_datatype_t *dtype, struct ompi_op_t *op, int tag,
                              const bufpool_plan_t *plan, struct ompi_communicator_t *comm,
                              bufpool_comm_state_t *state)
{
    const int rank = ompi_comm_rank(comm);
    const bool in_place = MPI_IN_PLACE == sbuf;
    const size_t my_disp = in_place ? bufpool_blocks_disp(blocks, rank) : 0;
    ptrdiff_t lb, extent;
    bufpool_reqs_t reqs;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    bufpool_reqs_init(&reqs, state, comm);
    const bufpool_rs_stream_t stream = {
        .src = in_place ? rbuf : sbuf,
        .acc = (char *)rbuf + (ptrdiff_t)my_disp * extent,
        .acc_holds_mine = in_place,
        .blocks = blocks,
        .dtype = dtype,
        .op = op,
        .tag = tag,
        .seg_bytes = plan->seg_bytes,
        .depth = plan->depth,
        .segment_done = NULL,
        .ctx = NULL,
        .max_requests = plan->max_requests,
        .state = state,
    };
    /* ring and rhalving are algorithms 2 and 3 of both reduce_scatter and
     * reduce_scatter_block.  rhalving writes its result at the start of
     * rbuf itself, in place too. */
    if (BUFPOOL_REDUCE_SCATTER_RHALVING == plan->alg) {
        return bufpool_rhalving_reduce_scatter(&stream, rbuf, comm);
    }
    int rc = BUFPOOL_REDUCE_SCATTER_RING == plan->alg
                 ? bufpool_ring_reduce_scatter(&stream, comm)
                 : bufpool_pairwise_reduce_scatter(&stream, &reqs, comm);
    /* Every send must be done before the caller's buffers (and, in place,
     * the input below my block) may change. */
    int wait_rc = bufpool_reqs_wait(&reqs);
    if (OMPI_SUCCESS == rc) {
        rc = wait_rc;
    }
    if (OMPI_SUCCESS == rc && in_place) {
        rc = move_to_start(rbuf, my_disp, bufpool_blocks_len(blocks, rank), dtype, plan->seg_bytes);
    }
    return rc;
}

/* MPI_Reduce_scatter's blocks (a->rcounts) or MPI_Reduce_scatter_block's
 * (a->count each). */
static bufpool_blocks_t rs_blocks(bufpool_coll_id_t id, const bufpool_args_t *a,
                                  struct ompi_communicator_t *comm)
{
    const int size = ompi_comm_size(comm);
    if (BUFPOOL_COLL_reduce_scatter_block == id) {
        return (bufpool_blocks_t){.n = size, .counts = NULL, .total = a->count * (size_t)size};
    }
    return (bufpool_blocks_t){
        .n = size, .counts = a->rcounts, .total = bufpool_counts_total(a->rcounts, size)};
}

bufpool_call_t bufpool_reduce_scatter_call(bufpool_coll_id_t id, const bufpool_args_t *a,
                                           struct ompi_communicator_t *comm)
{
    /* Some blocks may be empty; only an empty message is nothing to do. */
    const bufpool_blocks_t blocks = rs_blocks(id, a, comm);
    return bufpool_reduction_call(blocks.total, a->dtype, a->op, MPI_IN_PLACE == a->sbuf, comm);
}

int bufpool_run_reduce_scatter(bufpool_coll_id_t id, const bufpool_args_t *a,
                               const bufpool_call_t *call, const bufpool_plan_t *plan,
                               struct ompi_communicator_t *comm, bufpool_comm_state_t *state)
{
    (void)call;
    const bufpool_blocks_t blocks = rs_blocks(id, a, comm);
    return reduce_scatter_run(a->sbuf, a->rbuf, &blocks, a->dtype, a->op,
                              BUFPOOL_COLL_reduce_scatter_block == id
                                  ? MCA_COLL_BASE_TAG_REDUCE_SCATTER_BLOCK
                                  : MCA_COLL_BASE_TAG_REDUCE_SCATTER,
                              plan, comm, state);
}
