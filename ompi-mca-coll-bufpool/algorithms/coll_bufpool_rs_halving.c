/*
 * Recursive halving in rounds (coll_bufpool_rs_stream.h),
 * reduce_scatter's rhalving.
 */
#include "coll_bufpool_rs_stream.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/coll/base/coll_tags.h"

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
        cur->woff += bufpool_rs_chunk_len(len, r->k, r->c);
        cur->disp += len;
    }
    cur->b = b;
    cur->len = b < blocks->n ? bufpool_rs_chunk_len(bufpool_blocks_len(blocks, b), r->k, r->c) : 0;
}

static void rh_cursor_next(const rh_round_t *r, rh_cursor_t *cur)
{
    cur->woff += cur->len;
    cur->disp += bufpool_blocks_len(r->s->blocks, cur->b);
    cur->b++;
    cur->len = cur->b < r->s->blocks->n
                   ? bufpool_rs_chunk_len(bufpool_blocks_len(r->s->blocks, cur->b), r->k, r->c)
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

/* One function on purpose (about 105 lines): the steps' posts and waits,
 * in the order that keeps them free of deadlock, read top to bottom; the
 * cursor and reduction helpers above carry the rest. */
int bufpool_rhalving_reduce_scatter(const bufpool_rs_stream_t *s, void *result,
                                    struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), p = ompi_comm_size(comm);
    const size_t longest = bufpool_rs_blocks_longest(s->blocks);
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
