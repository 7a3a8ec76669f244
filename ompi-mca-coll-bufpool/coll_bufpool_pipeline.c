/*
 * The pipelining toolkit shared by every bufpool collective.
 */
#include "coll_bufpool_pipeline.h"

#include <stdlib.h>
#include <string.h>

#include "ompi/mca/pml/pml.h"
#include "opal/util/output.h"

size_t bufpool_span(struct ompi_datatype_t *dtype, size_t n, ptrdiff_t *gap)
{
    return (size_t)opal_datatype_span(&dtype->super, n, gap);
}

void bufpool_segs_init(bufpool_segs_t *segs, size_t count, struct ompi_datatype_t *dtype,
                       size_t seg_bytes)
{
    ptrdiff_t lb, extent, true_lb, true_extent;

    ompi_datatype_get_extent(dtype, &lb, &extent);
    ompi_datatype_get_true_extent(dtype, &true_lb, &true_extent);
    segs->count = count;
    segs->extent = extent;
    segs->gap = true_lb;
    if (0 == count) {
        segs->seg_count = 0;
        segs->nseg = 0;
        segs->seg_span = 0;
        return;
    }
    /* span(n) = true_extent + (n - 1) * extent must fit seg_bytes. */
    size_t per = 1;
    if (extent > 0 && (size_t)true_extent < seg_bytes) {
        per = 1 + (seg_bytes - (size_t)true_extent) / (size_t)extent;
    }
    if (per > count) {
        per = count;
    }
    /* PML counts are ints. */
    if (per > (size_t)INT32_MAX) {
        per = (size_t)INT32_MAX;
    }
    segs->seg_count = per;
    segs->nseg = (count + per - 1) / per;
    segs->seg_span = (size_t)true_extent + (per - 1) * (size_t)extent;
}

int bufpool_depth_for(int depth, size_t nseg)
{
    if (nseg < (size_t)depth) {
        depth = nseg > 0 ? (int)nseg : 1;
    }
    return depth;
}

int bufpool_direct_depth_for(size_t nunits)
{
    return nunits < BUFPOOL_MAX_DEPTH ? (int)nunits : BUFPOOL_MAX_DEPTH;
}

int bufpool_slots_get(bufpool_slots_t *slots, int n, size_t slot_span, ptrdiff_t gap)
{
    slots->n = n;
    slots->slot_span = slot_span;
    slots->gap = gap;
    slots->mem_bytes = (size_t)n * slot_span;
    slots->mem = NULL;
    if (0 == slots->mem_bytes) {
        return OMPI_SUCCESS;
    }
    slots->mem = mca_coll_bufpool_scratch_get(slots->mem_bytes);
    return NULL == slots->mem ? OMPI_ERR_OUT_OF_RESOURCE : OMPI_SUCCESS;
}

void bufpool_slots_put(bufpool_slots_t *slots)
{
    if (NULL != slots->mem) {
        mca_coll_bufpool_scratch_put(slots->mem, slots->mem_bytes);
        slots->mem = NULL;
    }
}

/* ---------------------------------------------------------------------- */

void bufpool_reqs_init(bufpool_reqs_t *reqs, mca_coll_bufpool_module_t *module,
                       struct ompi_communicator_t *comm)
{
    reqs->cache = &module->req_cache;
    reqs->cache_cap = &module->req_cache_cap;
    reqs->n = 0;
    reqs->comm = comm;
}

/* Room for one more request, growing the module's array when needed (only
 * the first calls of a communicator grow it). */
static ompi_request_t **reqs_next(bufpool_reqs_t *reqs)
{
    if (reqs->n == *reqs->cache_cap) {
        size_t cap = 0 == *reqs->cache_cap ? 64 : 2 * *reqs->cache_cap;
        ompi_request_t **grown = realloc(*reqs->cache, cap * sizeof(**reqs->cache));
        if (NULL == grown) {
            return NULL;
        }
        *reqs->cache = grown;
        *reqs->cache_cap = cap;
    }
    return &(*reqs->cache)[reqs->n];
}

int bufpool_reqs_send(bufpool_reqs_t *reqs, const void *buf, size_t count,
                      struct ompi_datatype_t *dtype, int peer, int tag)
{
    ompi_request_t **req = reqs_next(reqs);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = MCA_PML_CALL(
        isend(buf, count, dtype, peer, tag, MCA_PML_BASE_SEND_STANDARD, reqs->comm, req));
    if (OMPI_SUCCESS == rc) {
        reqs->n++;
    }
    return rc;
}

int bufpool_reqs_recv(bufpool_reqs_t *reqs, void *buf, size_t count, struct ompi_datatype_t *dtype,
                      int peer, int tag)
{
    ompi_request_t **req = reqs_next(reqs);
    if (NULL == req) {
        return OMPI_ERR_OUT_OF_RESOURCE;
    }
    int rc = MCA_PML_CALL(irecv(buf, count, dtype, peer, tag, reqs->comm, req));
    if (OMPI_SUCCESS == rc) {
        reqs->n++;
    }
    return rc;
}

int bufpool_reqs_wait(bufpool_reqs_t *reqs)
{
    int rc = OMPI_SUCCESS;
    if (reqs->n > 0) {
        rc = ompi_request_wait_all(reqs->n, *reqs->cache, MPI_STATUSES_IGNORE);
        reqs->n = 0;
    }
    return rc;
}

int bufpool_reqs_send_segs(bufpool_reqs_t *reqs, const void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag)
{
    for (size_t j = 0; j < segs->nseg; j++) {
        int rc = bufpool_reqs_send(reqs, (const char *)buf + bufpool_segs_offset(segs, j),
                                   bufpool_segs_count(segs, j), dtype, peer, tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int bufpool_reqs_recv_segs(bufpool_reqs_t *reqs, void *buf, const bufpool_segs_t *segs,
                           struct ompi_datatype_t *dtype, int peer, int tag)
{
    for (size_t j = 0; j < segs->nseg; j++) {
        int rc = bufpool_reqs_recv(reqs, (char *)buf + bufpool_segs_offset(segs, j),
                                   bufpool_segs_count(segs, j), dtype, peer, tag);
        if (OMPI_SUCCESS != rc) {
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

/* ---------------------------------------------------------------------- */

static int rwin_post(bufpool_rwin_t *w, size_t unit)
{
    bufpool_recv_unit_t u;
    size_t slot = unit % w->depth;

    w->describe(w->ctx, unit, &u);
    w->buf[slot] = NULL != u.buf ? u.buf : bufpool_slot(w->slots, (int)slot);
    int rc =
        MCA_PML_CALL(irecv(w->buf[slot], u.count, u.dtype, u.peer, w->tag, w->comm, &w->req[slot]));
    if (OMPI_SUCCESS == rc) {
        w->posted = unit + 1;
    }
    return rc;
}

void bufpool_peer_segs_describe(void *ctx, size_t unit, bufpool_recv_unit_t *out)
{
    const bufpool_peer_segs_t *s = ctx;
    out->peer = s->peer;
    out->count = bufpool_segs_count(s->segs, unit);
    out->dtype = s->dtype;
    out->buf = NULL != s->direct ? s->direct + bufpool_segs_offset(s->segs, unit) : NULL;
}

int bufpool_rwin_start(bufpool_rwin_t *w, struct ompi_communicator_t *comm, int tag,
                       const bufpool_slots_t *slots, size_t depth, size_t nunits,
                       bufpool_describe_fn describe, void *ctx)
{
    w->comm = comm;
    w->tag = tag;
    w->slots = slots;
    w->nunits = nunits;
    w->depth = depth < 1 ? 1 : (depth > BUFPOOL_MAX_DEPTH ? BUFPOOL_MAX_DEPTH : depth);
    w->posted = 0;
    w->describe = describe;
    w->ctx = ctx;
    for (size_t i = 0; i < w->depth; i++) {
        w->req[i] = MPI_REQUEST_NULL;
    }
    for (size_t unit = 0; unit < nunits && unit < w->depth; unit++) {
        int rc = rwin_post(w, unit);
        if (OMPI_SUCCESS != rc) {
            bufpool_rwin_abort(w);
            return rc;
        }
    }
    return OMPI_SUCCESS;
}

int bufpool_rwin_wait(bufpool_rwin_t *w, size_t unit, void **buf)
{
    size_t slot = unit % w->depth;
    int rc = ompi_request_wait(&w->req[slot], MPI_STATUS_IGNORE);
    *buf = w->buf[slot];
    return rc;
}

int bufpool_rwin_release(bufpool_rwin_t *w, size_t unit)
{
    size_t next = unit + w->depth;
    if (next < w->nunits) {
        return rwin_post(w, next);
    }
    return OMPI_SUCCESS;
}

void bufpool_rwin_abort(bufpool_rwin_t *w)
{
    for (size_t i = 0; i < w->depth; i++) {
        if (MPI_REQUEST_NULL != w->req[i]) {
            (void)ompi_request_cancel(w->req[i]);
            (void)ompi_request_wait(&w->req[i], MPI_STATUS_IGNORE);
        }
    }
}

/* ---------------------------------------------------------------------- */

void bufpool_reduce3(struct ompi_op_t *op, const void *left, const void *right, void *out,
                     size_t count, struct ompi_datatype_t *dtype)
{
    /* ompi_3buff_op_reduce only handles C callbacks for user operations and
     * predefined datatypes: use it for intrinsic operations only. */
    if (ompi_op_is_intrinsic(op) && ompi_datatype_is_predefined(dtype) && count <= INT32_MAX) {
        ompi_3buff_op_reduce(op, (void *)left, (void *)right, out, (int)count, dtype);
        return;
    }
    (void)bufpool_copy(out, right, count, dtype);
    ompi_op_reduce(op, (void *)left, out, count, dtype);
}

int bufpool_copy(void *dst, const void *src, size_t count, struct ompi_datatype_t *dtype)
{
    if (dst == src || 0 == count) {
        return OMPI_SUCCESS;
    }
    return ompi_datatype_copy_content_same_ddt(dtype, count, dst, (char *)src);
}

int bufpool_sendrecv(const void *sbuf, size_t scount, struct ompi_datatype_t *sdtype, int dst,
                     void *rbuf, size_t rcount, struct ompi_datatype_t *rdtype, int src, int tag,
                     struct ompi_communicator_t *comm)
{
    ompi_request_t *req = MPI_REQUEST_NULL;
    int rc = MCA_PML_CALL(irecv(rbuf, rcount, rdtype, src, tag, comm, &req));
    if (OMPI_SUCCESS != rc) {
        return rc;
    }
    rc = MCA_PML_CALL(send(sbuf, scount, sdtype, dst, tag, MCA_PML_BASE_SEND_STANDARD, comm));
    if (OMPI_SUCCESS != rc) {
        (void)ompi_request_cancel(req);
        (void)ompi_request_wait(&req, MPI_STATUS_IGNORE);
        return rc;
    }
    return ompi_request_wait(&req, MPI_STATUS_IGNORE);
}

/* ---------------------------------------------------------------------- */

bufpool_slots_t bufpool_slots_view(const bufpool_slots_t *all, int first, int n)
{
    bufpool_slots_t view = *all;
    view.mem = NULL == all->mem ? NULL : all->mem + (size_t)first * all->slot_span;
    view.mem_bytes = 0;
    view.n = n;
    return view;
}

size_t bufpool_segment_bytes_for(size_t seg, int depth, int need_slots)
{
    if (need_slots <= depth) {
        return seg;
    }
    size_t shrunk = seg * (size_t)depth / (size_t)need_slots;
    return shrunk > 0 ? shrunk : 1;
}

/* ---------------------------------------------------------------------- */

void bufpool_sring_init(bufpool_sring_t *ring, const bufpool_slots_t *slots)
{
    ring->slots = *slots;
    ring->slots.mem_bytes = 0;
    if (ring->slots.n > BUFPOOL_MAX_DEPTH) {
        ring->slots.n = BUFPOOL_MAX_DEPTH;
    }
    ring->next = 0;
    for (int i = 0; i < BUFPOOL_MAX_DEPTH; i++) {
        ring->req[i] = MPI_REQUEST_NULL;
    }
}

int bufpool_sring_acquire(bufpool_sring_t *ring, void **buf)
{
    int slot = (int)(ring->next % (size_t)ring->slots.n);
    int rc = OMPI_SUCCESS;
    if (MPI_REQUEST_NULL != ring->req[slot]) {
        rc = ompi_request_wait(&ring->req[slot], MPI_STATUS_IGNORE);
    }
    *buf = bufpool_slot(&ring->slots, slot);
    ring->next++;
    return rc;
}

int bufpool_sring_send(bufpool_sring_t *ring, size_t count, struct ompi_datatype_t *dtype, int peer,
                       int tag, struct ompi_communicator_t *comm)
{
    int slot = (int)((ring->next - 1) % (size_t)ring->slots.n);
    return MCA_PML_CALL(isend(bufpool_slot(&ring->slots, slot), count, dtype, peer, tag,
                              MCA_PML_BASE_SEND_STANDARD, comm, &ring->req[slot]));
}

int bufpool_sring_drain(bufpool_sring_t *ring)
{
    int rc = OMPI_SUCCESS;
    for (int i = 0; i < ring->slots.n; i++) {
        if (MPI_REQUEST_NULL != ring->req[i]) {
            int wait_rc = ompi_request_wait(&ring->req[i], MPI_STATUS_IGNORE);
            if (OMPI_SUCCESS == rc) {
                rc = wait_rc;
            }
        }
    }
    return rc;
}

/* ---------------------------------------------------------------------- */

size_t bufpool_blocks_len(const bufpool_blocks_t *blocks, int b)
{
    if (NULL != blocks->counts) {
        return (size_t)blocks->counts[b];
    }
    size_t n = (size_t)blocks->n;
    return blocks->total / n + ((size_t)b < blocks->total % n ? 1 : 0);
}

size_t bufpool_blocks_disp(const bufpool_blocks_t *blocks, int b)
{
    if (NULL != blocks->counts) {
        size_t disp = 0;
        for (int i = 0; i < b; i++) {
            disp += (size_t)blocks->counts[i];
        }
        return disp;
    }
    size_t n = (size_t)blocks->n, base = blocks->total / n, rem = blocks->total % n;
    return (size_t)b * base + ((size_t)b < rem ? (size_t)b : rem);
}

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

int bufpool_pairwise_reduce_scatter(const bufpool_rs_stream_t *s, bufpool_reqs_t *reqs,
                                    struct ompi_communicator_t *comm)
{
    const int rank = ompi_comm_rank(comm), size = ompi_comm_size(comm);
    const bufpool_blocks_t *blocks = s->blocks;
    rs_ctx_t ctx = {.rank = rank, .size = size, .dtype = s->dtype};
    bufpool_segs_t full;
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
    int rc = OMPI_SUCCESS;

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
    const ptrdiff_t extent = full.extent;
    ctx.extent = extent;
    ctx.direct = direct_first ? s->acc : NULL;
    const size_t max_nseg = (longest + ctx.per - 1) / ctx.per;
    const char *src = s->src;

    /* My contribution to every other block, segment-major to match the
     * receivers' order (rs_describe). */
    rs_cursor_t start = {
        .block = rank, .disp = bufpool_blocks_disp(blocks, rank), .len = ctx.my_len};
    for (size_t j = 0; j < max_nseg; j++) {
        rs_cursor_t c = start;
        for (int k = 1; k < size; k++) {
            rs_cursor_next(blocks, &c);
            if (j * ctx.per >= c.len) {
                continue;
            }
            ptrdiff_t off = (ptrdiff_t)(c.disp + j * ctx.per) * extent;
            rc = bufpool_reqs_send(reqs, src + off, rs_seg_count(c.len, ctx.per, j), s->dtype,
                                   c.block, s->tag);
            if (OMPI_SUCCESS != rc) {
                return rc;
            }
        }
    }

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

int bufpool_reqs_send_small_now(bufpool_reqs_t *reqs, const void *buf, size_t count,
                                struct ompi_datatype_t *dtype, size_t bytes, int peer, int tag)
{
    if (bytes <= BUFPOOL_INLINE_SEND_MAX) {
        return MCA_PML_CALL(
            send(buf, count, dtype, peer, tag, MCA_PML_BASE_SEND_STANDARD, reqs->comm));
    }
    return bufpool_reqs_send(reqs, buf, count, dtype, peer, tag);
}
